/* jinja.c: see jinja.h.  A template is preprocessed (the whitespace
 * options), cut into tokens, parsed into a tree, and the tree is
 * evaluated into text.  Every value and node lives in an arena: the
 * template's for the tree, one per rendering for the values, so that an
 * error can leave by longjmp and free everything at once. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utf8proc.h>

#include "jinja.h"
#include "../base/utf8.h"
#include "../base/util.h"

/* ---- arenas ---- */

struct block {
	struct block *next;
	size_t used, cap;
	max_align_t data[];
};

struct arena {
	struct block *head;
};

static void *
aalloc(struct arena *a, size_t n)
{
	n = LLM_ALIGN_UP(n ? n : 1, sizeof(max_align_t));
	struct block *b = a->head;
	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		b = llm_xmalloc(sizeof(*b) + cap);
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

static void *
azalloc(struct arena *a, size_t n)
{
	return memset(aalloc(a, n), 0, n);
}

static void
arena_free(struct arena *a)
{
	while (a->head) {
		struct block *b = a->head;
		a->head = b->next;
		free(b);
	}
}

/* ---- JavaScript's text rules ---- */

/* WhiteSpace and LineTerminator of ECMA-262: \s, trim(). */
static int
js_space(uint32_t c)
{
	return c == 9 || c == 10 || c == 11 || c == 12 || c == 13 || c == 32 || c == 0xa0 || c == 0x1680 ||
	    (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000 ||
	    c == 0xfeff;
}

/* The code point at s[i] (n bytes) and its length; invalid bytes count as
 * one byte each, never white space. */
static size_t
cp_at(const char *s, size_t n, size_t i, uint32_t *cp)
{
	size_t k = llm_utf8_decode(s + i, n - i, cp);
	if (!k) {
		*cp = 0xfffd;
		k = 1;
	}
	return k;
}

/* The length of the white space run at s[i]. */
static size_t
space_at(const char *s, size_t n, size_t i)
{
	uint32_t c;
	size_t k = i < n ? cp_at(s, n, i, &c) : 0;
	return k && js_space(c) ? k : 0;
}

/* The start of the white space run ending at s[e]. */
static size_t
space_before(const char *s, size_t e)
{
	while (e > 0) {
		size_t b = e - 1;
		while (b > 0 && ((unsigned char)s[b] & 0xc0) == 0x80 && e - b < 4)
			b--;
		uint32_t c;
		if (cp_at(s, e, b, &c) != e - b || !js_space(c))
			break;
		e = b;
	}
	return e;
}

static int
is_word(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* Number.prototype.toString: the shortest digits that read back, in fixed
 * notation from 1e-7 to 1e21, else exponential. */
static void
js_number(double d, struct llm_buf *out)
{
	char buf[40], dig[24];
	if (isnan(d)) {
		llm_buf_puts(out, "NaN");
		return;
	}
	if (isinf(d)) {
		llm_buf_puts(out, d < 0 ? "-Infinity" : "Infinity");
		return;
	}
	if (d == 0) {
		llm_buf_puts(out, "0");
		return;
	}
	if (d < 0) {
		llm_buf_puts(out, "-");
		d = -d;
	}
	int p;
	for (p = 1; p < 17; p++) {
		snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	snprintf(buf, sizeof(buf), "%.*e", p - 1, d);
	int k = 0, e;
	char *q = buf;
	for (; *q && *q != 'e'; q++)
		if (is_digit(*q))
			dig[k++] = *q;
	e = atoi(q + 1);
	while (k > 1 && dig[k - 1] == '0')
		k--;
	dig[k] = 0;
	int n = e + 1;
	if (k <= n && n <= 21) {
		llm_buf_puts(out, dig);
		for (int i = k; i < n; i++)
			llm_buf_puts(out, "0");
	} else if (0 < n && n <= 21) {
		llm_buf_add(out, dig, (size_t)n);
		llm_buf_puts(out, ".");
		llm_buf_puts(out, dig + n);
	} else if (-6 < n && n <= 0) {
		llm_buf_puts(out, "0.");
		for (int i = 0; i < -n; i++)
			llm_buf_puts(out, "0");
		llm_buf_puts(out, dig);
	} else {
		llm_buf_add(out, dig, 1);
		if (k > 1) {
			llm_buf_puts(out, ".");
			llm_buf_puts(out, dig + 1);
		}
		llm_buf_printf(out, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
	}
}

/* Number(s) for a string (ECMA-262 StringToNumber): NaN when it is not a
 * numeric literal. */
static double
js_to_number(const char *s, size_t n)
{
	size_t b = 0, e = n;
	while (b < e && space_at(s, e, b))
		b += space_at(s, e, b);
	e = space_before(s, e);
	if (e <= b)
		return 0;
	char *t = llm_xstrndup(s + b, e - b), *end;
	double v = NAN;
	size_t len = e - b;
	if (len > 2 && t[0] == '0' && strchr("xXoObB", t[1])) {
		int base = t[1] == 'x' || t[1] == 'X' ? 16 : t[1] == 'o' || t[1] == 'O' ? 8 : 2;
		v = 0;
		for (size_t i = 2; i < len; i++) {
			int c = t[i],
			    d = is_digit(c)      ? c - '0' :
			    c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			    c >= 'A' && c <= 'F' ? c - 'A' + 10 :
						   99;
			if (d >= base) {
				v = NAN;
				break;
			}
			v = v * base + d;
		}
	} else {
		const char *u = t[0] == '+' || t[0] == '-' ? t + 1 : t;
		if (strcmp(u, "Infinity") == 0)
			v = t[0] == '-' ? -INFINITY : INFINITY;
		else {
			/* a StrDecimalLiteral: digits, '.', an exponent; no hex, inf or nan */
			int ok = 1, digits = 0;
			const char *c = u;
			while (is_digit(*c))
				c++, digits++;
			if (*c == '.')
				for (c++; is_digit(*c); c++)
					digits++;
			if (!digits)
				ok = 0;
			if (ok && (*c == 'e' || *c == 'E')) {
				c++;
				if (*c == '+' || *c == '-')
					c++;
				if (!is_digit(*c))
					ok = 0;
				while (is_digit(*c))
					c++;
			}
			if (ok && !*c)
				v = strtod(t, &end);
		}
	}
	free(t);
	return v;
}

/* ---- the template ---- */

enum tok {
	T_TEXT,
	T_NUM,
	T_STR,
	T_ID,
	T_EQUALS,
	T_LPAREN,
	T_RPAREN,
	T_OPEN_STMT,
	T_CLOSE_STMT,
	T_OPEN_EXPR,
	T_CLOSE_EXPR,
	T_LBRACKET,
	T_RBRACKET,
	T_LBRACE,
	T_RBRACE,
	T_COMMA,
	T_DOT,
	T_COLON,
	T_PIPE,
	T_ADD, /* + - ~ */
	T_MUL, /* * / // % */
	T_POW, /* ** */
	T_CMP, /* < > <= >= == != */
	T_UNARY,
	T_COMMENT,
};

struct token {
	enum tok t;
	char *s; /* NUL-terminated */
	size_t n;
	size_t pos; /* in the text as written */
};

struct list {
	struct node **v;
	size_t n;
};

struct llm_jinja {
	struct arena a;
	char *name, *text; /* the text as written */
	size_t len;
	struct list body;
};

/* An error at an offset of the text: "name:LINE:COL: what". */
static char *
where(const struct llm_jinja *t, size_t pos, const char *what)
{
	size_t line = 1, col = 1;
	for (size_t i = 0; i < pos && i < t->len; i++) {
		if (t->text[i] == '\n')
			line++, col = 1;
		else if (((unsigned char)t->text[i] & 0xc0) != 0x80)
			col++;
	}
	return llm_xasprintf("%s:%zu:%zu: %s", t->name, line, col, what);
}

struct lexer {
	struct llm_jinja *t;
	char *s;     /* the preprocessed text */
	size_t *map; /* its offsets in the text as written */
	size_t n, i;
	struct token *v;
	size_t nv, cap;
	struct llm_buf b; /* a string literal's text */
	jmp_buf fail;
	char *err;
};

static _Noreturn void
lex_fail(struct lexer *l, size_t i, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	l->err = where(l->t, i < l->n ? l->map[i] : l->t->len, what);
	longjmp(l->fail, 1);
}

/* Drop the bytes of l->s marked in del, keeping the map in step. */
static void
squeeze(struct lexer *l, const char *del)
{
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++)
		if (!del[i]) {
			l->s[k] = l->s[i];
			l->map[k++] = l->map[i];
		}
	l->n = k;
	l->s[k] = 0;
}

static int
starts(const struct lexer *l, size_t i, const char *p)
{
	size_t k = strlen(p);
	return i + k <= l->n && memcmp(l->s + i, p, k) == 0;
}

/* The Template options: the last newline goes; lstrip_blocks
 * (/^[ \t]*({[#%-])/gm); trim_blocks (/([#%-]})\n/g); and the generation
 * tags (/(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs, the white
 * space around them kept unless a '-' says otherwise). */
static void
preprocess(struct lexer *l)
{
	char *del = llm_xcalloc(l->n + 1, 1);
	if (l->n && l->s[l->n - 1] == '\n')
		del[l->n - 1] = 1;
	squeeze(l, del);

	memset(del, 0, l->n);
	for (size_t i = 0; i < l->n;) {
		/* a line starts at 0 or after \n, \r, U+2028 or U+2029 */
		size_t j = i;
		while (j < l->n && (l->s[j] == ' ' || l->s[j] == '\t'))
			j++;
		if (j + 1 < l->n && l->s[j] == '{' && strchr("#%-", l->s[j + 1]) && l->s[j + 1])
			memset(del + i, 1, j - i);
		while (i < l->n && l->s[i] != '\n' && l->s[i] != '\r' && !starts(l, i, "\xe2\x80\xa8") &&
		       !starts(l, i, "\xe2\x80\xa9"))
			i++;
		i += i < l->n ? (l->s[i] == '\n' || l->s[i] == '\r' ? 1 : 3) : 0;
	}
	squeeze(l, del);

	memset(del, 0, l->n);
	for (size_t i = 0; i + 2 < l->n;) {
		if (strchr("#%-", l->s[i]) && l->s[i] && l->s[i + 1] == '}' && l->s[i + 2] == '\n') {
			del[i + 2] = 1;
			i += 3;
		} else
			i++;
	}
	squeeze(l, del);

	memset(del, 0, l->n);
	size_t last = 0; /* where the previous match ended */
	for (size_t q = 0; q + 1 < l->n; q++) {
		if (l->s[q] != '{' || l->s[q + 1] != '%')
			continue;
		size_t j = q + 2, lstrip = 0, rstrip = 0;
		if (j < l->n && l->s[j] == '-')
			j++, lstrip = 1;
		while (space_at(l->s, l->n, j))
			j += space_at(l->s, l->n, j);
		if (starts(l, j, "end"))
			j += 3;
		if (!starts(l, j, "generation"))
			continue;
		j += 10;
		while (space_at(l->s, l->n, j))
			j += space_at(l->s, l->n, j);
		if (j < l->n && l->s[j] == '-')
			j++, rstrip = 1;
		if (!starts(l, j, "%}"))
			continue;
		j += 2;
		size_t b = space_before(l->s, q), e = j;
		if (b < last)
			b = last;
		while (space_at(l->s, l->n, e))
			e += space_at(l->s, l->n, e);
		memset(del + q, 1, j - q);
		if (lstrip)
			memset(del + b, 1, q - b);
		if (rstrip)
			memset(del + j, 1, e - j);
		last = e;
		q = e - 1;
	}
	squeeze(l, del);
	free(del);
}

static struct token *
push(struct lexer *l, enum tok t, const char *s, size_t n, size_t i)
{
	if (l->nv == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = llm_xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	struct token *k = &l->v[l->nv++];
	k->t = t;
	k->s = aalloc(&l->t->a, n + 1);
	memcpy(k->s, s, n);
	k->s[n] = 0;
	k->n = n;
	k->pos = i < l->n ? l->map[i] : l->t->len;
	return k;
}

static int
last_is(const struct lexer *l, enum tok t)
{
	return l->nv && l->v[l->nv - 1].t == t;
}

/* {%- {{- {#-: the text token before loses its trailing white space. */
static void
strip_trailing(struct lexer *l)
{
	if (!last_is(l, T_TEXT))
		return;
	struct token *k = &l->v[l->nv - 1];
	k->n = space_before(k->s, k->n);
	k->s[k->n] = 0;
	if (!k->n)
		l->nv--;
}

static void
skip_space(struct lexer *l)
{
	while (space_at(l->s, l->n, l->i))
		l->i += space_at(l->s, l->n, l->i);
}

/* A string literal's body up to the quote q, its escapes decoded. */
static void
string_body(struct lexer *l, char q, struct llm_buf *b)
{
	while (1) {
		if (l->i >= l->n)
			lex_fail(l, l->i, "Unexpected end of input");
		char c = l->s[l->i];
		if (c == q)
			return;
		if (c == '\\') {
			size_t at = l->i++;
			if (l->i >= l->n)
				lex_fail(l, at, "Unexpected end of input");
			char e = l->s[l->i++];
			if (e == 'x' || e == 'u') {
				size_t k = e == 'x' ? 2 : 4;
				uint32_t cp = 0;
				for (size_t j = 0; j < k; j++) {
					int h = l->i + j < l->n ? l->s[l->i + j] : 0;
					int d = is_digit(h)      ? h - '0' :
					    h >= 'a' && h <= 'f' ? h - 'a' + 10 :
					    h >= 'A' && h <= 'F' ? h - 'A' + 10 :
								   -1;
					if (d < 0)
						lex_fail(l, at, "Invalid hexadecimal escape sequence: \\%c%.*s", e,
						    (int)(l->i + k <= l->n ? k : l->n - l->i), l->s + l->i);
					cp = cp * 16 + (uint32_t)d;
				}
				if (cp >= 0xd800 && cp <= 0xdfff)
					lex_fail(l, at, "a surrogate escape (\\u%04x) is not supported", cp);
				char u[4];
				llm_buf_add(b, u, llm_utf8_encode(cp, u));
				l->i += k;
				continue;
			}
			static const char from[] = "ntrbfv'\"\\", to[] = "\n\t\r\b\f\v'\"\\";
			const char *p = e ? strchr(from, e) : NULL;
			if (!p)
				lex_fail(l, at, "Unexpected escaped character: %c", e);
			llm_buf_add(b, &to[p - from], 1);
			continue;
		}
		llm_buf_add(b, &c, 1);
		l->i++;
		if (l->i >= l->n)
			lex_fail(l, l->i, "Unexpected end of input");
	}
}

static void
lex(struct lexer *l)
{
	static const struct {
		const char *s;
		enum tok t;
	} table[] = {{"{%", T_OPEN_STMT}, {"%}", T_CLOSE_STMT}, {"{{", T_OPEN_EXPR}, {"}}", T_CLOSE_EXPR},
		{"(", T_LPAREN}, {")", T_RPAREN}, {"{", T_LBRACE}, {"}", T_RBRACE}, {"[", T_LBRACKET},
		{"]", T_RBRACKET}, {",", T_COMMA}, {".", T_DOT}, {":", T_COLON}, {"|", T_PIPE}, {"<=", T_CMP},
		{">=", T_CMP}, {"==", T_CMP}, {"!=", T_CMP}, {"<", T_CMP}, {">", T_CMP}, {"+", T_ADD}, {"-", T_ADD},
		{"~", T_ADD}, {"**", T_POW}, {"*", T_MUL}, {"//", T_MUL}, {"/", T_MUL}, {"%", T_MUL}, {"=", T_EQUALS}};
	int depth = 0; /* of { inside an expression */
	struct llm_buf *b = &l->b;

	while (l->i < l->n) {
		if (!l->nv || last_is(l, T_CLOSE_STMT) || last_is(l, T_CLOSE_EXPR) || last_is(l, T_COMMENT)) {
			size_t s = l->i;
			while (l->i < l->n &&
			    !(l->s[l->i] == '{' && l->i + 1 < l->n && strchr("%{#", l->s[l->i + 1]) && l->s[l->i + 1]))
				l->i++;
			if (l->i > s) {
				push(l, T_TEXT, l->s + s, l->i - s, s);
				continue;
			}
		}
		if (starts(l, l->i, "{#")) {
			size_t s = l->i;
			l->i += 2;
			int before = l->i < l->n && l->s[l->i] == '-';
			l->i += before;
			size_t c = l->i;
			while (!starts(l, l->i, "#}")) {
				if (l->i + 2 >= l->n)
					lex_fail(l, s, "Missing end of comment tag");
				l->i++;
			}
			size_t e = l->i;
			int after = e > c && l->s[e - 1] == '-';
			if (before)
				strip_trailing(l);
			push(l, T_COMMENT, l->s + c, e - c - (size_t)after, s);
			l->i += 2;
			if (after)
				skip_space(l);
			continue;
		}
		if (starts(l, l->i, "{%-") || starts(l, l->i, "{{-")) {
			strip_trailing(l);
			int stmt = l->s[l->i + 1] == '%';
			push(l, stmt ? T_OPEN_STMT : T_OPEN_EXPR, stmt ? "{%" : "{{", 2, l->i);
			if (!stmt)
				depth = 0;
			l->i += 3;
			continue;
		}
		skip_space(l);
		if (starts(l, l->i, "-%}") || starts(l, l->i, "-}}")) {
			int stmt = l->s[l->i + 1] == '%';
			push(l, stmt ? T_CLOSE_STMT : T_CLOSE_EXPR, stmt ? "%}" : "}}", 2, l->i);
			l->i += 3;
			skip_space(l);
			continue;
		}
		if (l->i >= l->n)
			break;
		char c = l->s[l->i];
		if ((c == '-' || c == '+') && l->nv) {
			enum tok lt = l->v[l->nv - 1].t;
			if (lt == T_TEXT)
				lex_fail(l, l->i, "Unexpected character: %c", c);
			if (lt != T_ID && lt != T_NUM && lt != T_STR && lt != T_RPAREN && lt != T_RBRACKET) {
				size_t s = l->i++;
				size_t d = l->i;
				while (l->i < l->n && is_digit(l->s[l->i]))
					l->i++;
				if (l->i > d && l->i + 1 < l->n && l->s[l->i] == '.' && is_digit(l->s[l->i + 1])) {
					l->i++;
					while (l->i < l->n && is_digit(l->s[l->i]))
						l->i++;
				}
				if (l->i > d && l->i >= l->n)
					lex_fail(l, l->i, "Unexpected end of input");
				push(l, l->i > d ? T_NUM : T_UNARY, l->s + s, l->i - s, s);
				continue;
			}
		} else if ((c == '-' || c == '+') && !l->nv)
			lex_fail(l, l->i, "Unexpected character: %c", c);
		size_t k;
		for (k = 0; k < LLM_NELEM(table); k++) {
			if (table[k].t == T_CLOSE_EXPR && depth > 0)
				continue;
			if (starts(l, l->i, table[k].s))
				break;
		}
		if (k < LLM_NELEM(table)) {
			push(l, table[k].t, table[k].s, strlen(table[k].s), l->i);
			if (table[k].t == T_OPEN_EXPR)
				depth = 0;
			else if (table[k].t == T_LBRACE)
				depth++;
			else if (table[k].t == T_RBRACE)
				depth--;
			l->i += strlen(table[k].s);
			continue;
		}
		if (c == '\'' || c == '"') {
			size_t s = l->i++;
			b->len = 0;
			string_body(l, c, b);
			push(l, T_STR, b->p ? b->p : "", b->len, s);
			l->i++;
			continue;
		}
		if (is_digit(c)) {
			size_t s = l->i;
			while (l->i < l->n && is_digit(l->s[l->i]))
				l->i++;
			if (!last_is(l, T_DOT) && l->i + 1 < l->n && l->s[l->i] == '.' && is_digit(l->s[l->i + 1])) {
				l->i++;
				while (l->i < l->n && is_digit(l->s[l->i]))
					l->i++;
			}
			if (l->i >= l->n)
				lex_fail(l, l->i, "Unexpected end of input");
			push(l, T_NUM, l->s + s, l->i - s, s);
			continue;
		}
		if (is_word(c)) {
			size_t s = l->i;
			while (l->i < l->n && is_word(l->s[l->i]))
				l->i++;
			if (l->i >= l->n)
				lex_fail(l, l->i, "Unexpected end of input");
			push(l, T_ID, l->s + s, l->i - s, s);
			continue;
		}
		uint32_t cp;
		size_t len = cp_at(l->s, l->n, l->i, &cp);
		lex_fail(l, l->i, "Unexpected character: %.*s", (int)len, l->s + l->i);
	}
}

/* ---- the tree ---- */

enum nk {
	N_TEXT, /* s: text or string literal */
	N_INT,  /* f */
	N_FLOAT,
	N_ID,          /* s */
	N_ARRAY,       /* l */
	N_TUPLE,       /* l */
	N_OBJECT,      /* l: key, value, key, value, ... */
	N_MEMBER,      /* a.b, a[b] (flag: computed) */
	N_SLICE,       /* a:b:c, each may be NULL */
	N_CALL,        /* a(l) */
	N_KWARG,       /* s=a */
	N_SPREAD,      /* *a */
	N_KWSPREAD,    /* **a */
	N_UNARY,       /* s a */
	N_BINARY,      /* a s b */
	N_FILTER,      /* a | b (b: N_ID or N_CALL) */
	N_TEST,        /* a is [not] s (flag: not) */
	N_SELECT,      /* a if b */
	N_TERNARY,     /* b if a else c */
	N_SET,         /* {% set a = b %}, or {% set a %}l{% endset %} when b is NULL */
	N_IF,          /* a: test, l: body, m: else */
	N_FOR,         /* a: target, b: iterable, l: body, m: else */
	N_MACRO,       /* s: name, l: parameters, m: body, flag: uses kwargs (1) / varargs (2) */
	N_CALLBLOCK,   /* a: the call, l: caller's parameters, m: body, flag as N_MACRO */
	N_FILTERBLOCK, /* a: filter, l: body */
	N_BREAK,
	N_CONTINUE,
	N_COMMENT,
};

struct node {
	enum nk k;
	int flag;
	size_t pos;
	const char *s;
	size_t n;
	double f;
	struct node *a, *b, *c;
	struct list l, m;
};

struct parser {
	struct llm_jinja *t;
	struct token *v;
	size_t nv, i;
	jmp_buf fail;
	char *err;
};

static _Noreturn void
parse_fail(struct parser *p, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	p->err = where(p->t, p->i < p->nv ? p->v[p->i].pos : p->t->len, what);
	longjmp(p->fail, 1);
}

static const char *const tok_names[] = {"Text", "NumericLiteral", "StringLiteral", "Identifier", "Equals", "OpenParen",
	"CloseParen", "OpenStatement", "CloseStatement", "OpenExpression", "CloseExpression", "OpenSquareBracket",
	"CloseSquareBracket", "OpenCurlyBracket", "CloseCurlyBracket", "Comma", "Dot", "Colon", "Pipe",
	"AdditiveBinaryOperator", "MultiplicativeBinaryOperator", "ExponentiationBinaryOperator",
	"ComparisonBinaryOperator", "UnaryOperator", "Comment"};

static struct token *
peek(struct parser *p, size_t k)
{
	return p->i + k < p->nv ? &p->v[p->i + k] : NULL;
}

static struct token *
next(struct parser *p)
{
	if (p->i >= p->nv)
		parse_fail(p, "unexpected end of template");
	return &p->v[p->i++];
}

static int
is(struct parser *p, enum tok t)
{
	struct token *k = peek(p, 0);
	return k && k->t == t;
}

static int
is_id(struct parser *p, size_t k, const char *name)
{
	struct token *x = peek(p, k);
	return x && x->t == T_ID && strcmp(x->s, name) == 0;
}

/* {% NAME ...: one of the names (a NULL-terminated list) */
static int
is_stmt(struct parser *p, const char *const *names)
{
	if (!is(p, T_OPEN_STMT))
		return 0;
	for (; *names; names++)
		if (is_id(p, 1, *names))
			return 1;
	return 0;
}

static struct token *
expect(struct parser *p, enum tok t, const char *what)
{
	if (p->i >= p->nv)
		parse_fail(p, "%s, got the end of the template", what);
	if (p->v[p->i].t != t)
		parse_fail(p, "Parser Error: %s. %s !== %s.", what, tok_names[p->v[p->i].t], tok_names[t]);
	return &p->v[p->i++];
}

static void
expect_id(struct parser *p, const char *name)
{
	if (!is_id(p, 0, name))
		parse_fail(p, "Expected %s", name);
	p->i++;
}

static struct node *
mk(struct parser *p, enum nk k, size_t pos)
{
	struct node *n = azalloc(&p->t->a, sizeof(*n));
	n->k = k;
	n->pos = pos;
	return n;
}

static void
add(struct parser *p, struct list *l, struct node *n)
{
	/* doubling in the arena: what is left behind is garbage until the end */
	if ((l->n & (l->n - 1)) == 0) {
		struct node **v = aalloc(&p->t->a, (l->n ? 2 * l->n : 1) * sizeof(*v));
		if (l->n)
			memcpy(v, l->v, l->n * sizeof(*v));
		l->v = v;
	}
	l->v[l->n++] = n;
}

static struct node *expression(struct parser *p);
static struct node *primary(struct parser *p);
static struct node *any(struct parser *p);

/* Statements until {% one of names %} (not consumed). */
static void
body_until(struct parser *p, struct list *l, const char *const *names)
{
	while (!is_stmt(p, names)) {
		if (p->i >= p->nv)
			parse_fail(p, "Expected {%% %s %%}, got the end of the template", names[0]);
		add(p, l, any(p));
	}
}

/* {% endNAME %} */
static void
end_tag(struct parser *p, const char *name)
{
	expect(p, T_OPEN_STMT, "Expected {% token");
	expect_id(p, name);
	expect(p, T_CLOSE_STMT, "Expected %} token");
}

static struct node *
sequence(struct parser *p, int prim)
{
	size_t pos = peek(p, 0) ? peek(p, 0)->pos : p->t->len;
	struct node *first = prim ? primary(p) : expression(p);
	if (!is(p, T_COMMA))
		return first;
	struct node *t = mk(p, N_TUPLE, pos);
	add(p, &t->l, first);
	while (is(p, T_COMMA)) {
		p->i++;
		add(p, &t->l, prim ? primary(p) : expression(p));
	}
	return t;
}

/* Arguments: call (1) or parameters (0). */
static void
args(struct parser *p, struct list *l, int call)
{
	int kw = 0, spread = 0;
	expect(p, T_LPAREN, "Expected opening parenthesis for arguments list");
	while (!is(p, T_RPAREN)) {
		if (p->i >= p->nv)
			parse_fail(p, "Expected closing parenthesis for arguments list");
		size_t pos = p->v[p->i].pos;
		int kws = is(p, T_POW), ps = is(p, T_MUL) && strcmp(p->v[p->i].s, "*") == 0;
		if (!call && (kws || ps))
			parse_fail(p, "Argument unpacking is not allowed in parameter declarations");
		if (kws) {
			p->i++;
			struct node *n = mk(p, N_KWSPREAD, pos);
			n->a = expression(p);
			add(p, l, n);
			if (is(p, T_COMMA))
				p->i++;
			if (!is(p, T_RPAREN))
				parse_fail(p,
				    "Expected closing parenthesis: `**` must be applied to the final argument");
			break;
		}
		struct node *a;
		if (ps) {
			if (spread)
				parse_fail(p, "Only one `*` argument unpacking is allowed");
			spread = 1;
			p->i++;
			a = mk(p, N_SPREAD, pos);
			a->a = expression(p);
		} else {
			a = expression(p);
			if (is(p, T_EQUALS)) {
				p->i++;
				if (a->k != N_ID)
					parse_fail(p,
					    call ? "Expected identifier for keyword argument" :
						   "Expected identifier for parameter declaration");
				struct node *k = mk(p, N_KWARG, a->pos);
				k->s = a->s;
				k->n = a->n;
				k->a = expression(p);
				a = k;
			}
			if (!call) {
				if (a->k != N_ID && a->k != N_KWARG)
					parse_fail(p, "Expected identifier for parameter declaration");
				for (size_t j = 0; j < l->n; j++)
					if (strcmp(l->v[j]->s, a->s) == 0)
						parse_fail(p, "Duplicate parameter name: %s", a->s);
			}
			if (a->k == N_KWARG)
				kw = 1;
			else if (kw)
				parse_fail(p,
				    call ? "Positional arguments must come before keyword arguments" :
					   "Non-default argument follows default argument");
			else if (spread)
				parse_fail(p, "Positional arguments must not follow `*` argument unpacking");
		}
		add(p, l, a);
		if (is(p, T_COMMA))
			p->i++;
	}
	p->i++;
}

static struct node *
member(struct parser *p, struct node *obj)
{
	while (is(p, T_DOT) || is(p, T_LBRACKET)) {
		struct token *op = next(p);
		struct node *m = mk(p, N_MEMBER, op->pos), *prop;
		if (op->t == T_LBRACKET) {
			struct node *parts[4] = {0};
			int nparts = 0, slice = 0;
			m->flag = 1;
			while (!is(p, T_RBRACKET)) {
				if (p->i >= p->nv)
					parse_fail(p, "Expected closing square bracket");
				if (nparts == 4)
					parse_fail(p, "Expected 0-3 arguments for slice expression");
				if (is(p, T_COLON)) {
					parts[nparts++] = NULL;
					p->i++;
					slice = 1;
				} else {
					parts[nparts++] = expression(p);
					if (is(p, T_COLON)) {
						p->i++;
						slice = 1;
					}
				}
			}
			if (!nparts)
				parse_fail(p, "Expected at least one argument for member/slice expression");
			if (slice) {
				if (nparts > 3)
					parse_fail(p, "Expected 0-3 arguments for slice expression");
				prop = mk(p, N_SLICE, op->pos);
				prop->a = parts[0];
				prop->b = parts[1];
				prop->c = parts[2];
			} else
				prop = parts[0];
			expect(p, T_RBRACKET, "Expected closing square bracket");
		} else {
			prop = primary(p);
			if (prop->k != N_ID && prop->k != N_INT)
				parse_fail(p, "Expected identifier or integer following dot operator");
		}
		m->a = obj;
		m->b = prop;
		obj = m;
	}
	return obj;
}

static struct node *
call(struct parser *p, struct node *callee)
{
	struct node *c = mk(p, N_CALL, callee->pos);
	c->a = callee;
	args(p, &c->l, 1);
	struct node *e = member(p, c);
	return is(p, T_LPAREN) ? call(p, e) : e;
}

static struct node *
primary(struct parser *p)
{
	struct token *k = next(p);
	struct node *n;
	switch (k->t) {
	case T_NUM:
		n = mk(p, strchr(k->s, '.') ? N_FLOAT : N_INT, k->pos);
		n->f = strtod(k->s, NULL);
		return n;
	case T_STR: {
		n = mk(p, N_TEXT, k->pos);
		n->s = k->s;
		n->n = k->n;
		if (is(p, T_STR)) {
			struct llm_buf b = {0};
			llm_buf_add(&b, k->s, k->n);
			while (is(p, T_STR)) {
				k = next(p);
				llm_buf_add(&b, k->s, k->n);
			}
			char *s = aalloc(&p->t->a, b.len + 1);
			memcpy(s, b.p, b.len);
			s[b.len] = 0;
			n->s = s;
			n->n = b.len;
			llm_buf_free(&b);
		}
		return n;
	}
	case T_ID:
		n = mk(p, N_ID, k->pos);
		n->s = k->s;
		n->n = k->n;
		return n;
	case T_LPAREN:
		n = sequence(p, 0);
		expect(p, T_RPAREN, "Expected closing parenthesis, got ${tokens[current].type} instead.");
		return n;
	case T_LBRACKET:
		n = mk(p, N_ARRAY, k->pos);
		while (!is(p, T_RBRACKET)) {
			add(p, &n->l, expression(p));
			if (is(p, T_COMMA))
				p->i++;
		}
		p->i++;
		return n;
	case T_LBRACE:
		n = mk(p, N_OBJECT, k->pos);
		while (!is(p, T_RBRACE)) {
			add(p, &n->l, expression(p));
			expect(p, T_COLON, "Expected colon between key and value in object literal");
			add(p, &n->l, expression(p));
			if (is(p, T_COMMA))
				p->i++;
		}
		p->i++;
		return n;
	default:
		p->i--;
		parse_fail(p, "Unexpected token: %s", tok_names[k->t]);
	}
}

static struct node *
binary(struct parser *p, struct token *op, struct node *a, struct node *b)
{
	struct node *n = mk(p, N_BINARY, op->pos);
	n->s = op->s;
	n->a = a;
	n->b = b;
	return n;
}

static struct node *
unary_sign(struct parser *p)
{
	struct token *k = peek(p, 0);
	if (k && (k->t == T_UNARY || k->t == T_ADD) && (strcmp(k->s, "-") == 0 || strcmp(k->s, "+") == 0)) {
		p->i++;
		struct node *n = mk(p, N_UNARY, k->pos);
		n->s = k->s;
		n->a = unary_sign(p);
		return n;
	}
	struct node *m = member(p, primary(p));
	return is(p, T_LPAREN) ? call(p, m) : m;
}

static struct node *
filter_expr(struct parser *p)
{
	struct node *e = unary_sign(p);
	while (is(p, T_PIPE)) {
		struct token *op = next(p);
		struct node *f = primary(p);
		if (f->k != N_ID)
			parse_fail(p, "Expected identifier for the filter");
		if (is(p, T_LPAREN))
			f = call(p, f);
		struct node *n = mk(p, N_FILTER, op->pos);
		n->a = e;
		n->b = f;
		e = n;
	}
	return e;
}

static struct node *
test_expr(struct parser *p)
{
	struct node *e = filter_expr(p);
	while (is_id(p, 0, "is")) {
		size_t pos = next(p)->pos;
		int neg = is_id(p, 0, "not");
		p->i += neg;
		struct node *t = primary(p);
		if (t->k != N_ID)
			parse_fail(p, "Expected identifier for the test");
		struct node *n = mk(p, N_TEST, pos);
		n->a = e;
		n->flag = neg;
		n->s = t->s;
		n->n = t->n;
		e = n;
	}
	return e;
}

/* Left-associative operators of one token class over the next level. */
static struct node *
left_assoc(struct parser *p, enum tok t, struct node *(*sub)(struct parser *))
{
	struct node *e = sub(p);
	while (is(p, t)) {
		struct token *op = next(p);
		e = binary(p, op, e, sub(p));
	}
	return e;
}

static struct node *
power(struct parser *p)
{
	return left_assoc(p, T_POW, test_expr);
}

static struct node *
multiplicative(struct parser *p)
{
	return left_assoc(p, T_MUL, power);
}

static struct node *
additive(struct parser *p)
{
	return left_assoc(p, T_ADD, multiplicative);
}

static struct node *
comparison(struct parser *p)
{
	static struct token not_in = {T_ID, "not in", 6, 0};
	struct node *e = additive(p);
	while (1) {
		struct token *op;
		if (is_id(p, 0, "not") && is_id(p, 1, "in")) {
			op = &not_in;
			not_in.pos = p->v[p->i].pos;
			p->i += 2;
		} else if (is_id(p, 0, "in") || is(p, T_CMP))
			op = next(p);
		else
			break;
		struct node *r = additive(p);
		e = binary(p, op, e, r);
		if (op == &not_in)
			e->s = "not in";
	}
	return e;
}

static struct node *
negation(struct parser *p)
{
	if (is_id(p, 0, "not")) {
		struct node *n = mk(p, N_UNARY, next(p)->pos);
		n->s = "not";
		n->a = negation(p);
		return n;
	}
	return comparison(p);
}

static struct node *
logical(struct parser *p, int or)
{
	struct node *e = or ? logical(p, 0) : negation(p);
	while (is_id(p, 0, or ? "or" : "and")) {
		struct token *op = next(p);
		e = binary(p, op, e, or ? logical(p, 0) : negation(p));
	}
	return e;
}

static struct node *
expression(struct parser *p)
{
	struct node *a = logical(p, 1);
	if (!is_id(p, 0, "if"))
		return a;
	size_t pos = next(p)->pos;
	struct node *test = logical(p, 1);
	struct node *n;
	if (is_id(p, 0, "else")) {
		p->i++;
		n = mk(p, N_TERNARY, pos);
		n->a = test;
		n->b = a;
		n->c = expression(p);
	} else {
		n = mk(p, N_SELECT, pos);
		n->a = a;
		n->b = test;
	}
	return n;
}

/* Which of kwargs (1) and varargs (2) a macro's body reads without
 * declaring them, as the engine decides whether to collect them. */
static void special_walk(struct node *n, int *declared, int *used);

static void
special_name(const char *s, int *set)
{
	if (strcmp(s, "kwargs") == 0)
		*set |= 1;
	else if (strcmp(s, "varargs") == 0)
		*set |= 2;
}

static void
special_target(struct node *n, int *declared)
{
	if (n->k == N_ID)
		special_name(n->s, declared);
	else if (n->k == N_TUPLE)
		for (size_t i = 0; i < n->l.n; i++)
			special_target(n->l.v[i], declared);
}

static void
special_params(struct list *l, int *declared, int *used)
{
	for (size_t i = 0; i < l->n; i++)
		special_name(l->v[i]->s, declared);
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i]->k == N_KWARG)
			special_walk(l->v[i]->a, declared, used);
}

static void
special_list(struct list *l, int *declared, int *used)
{
	for (size_t i = 0; i < l->n; i++)
		special_walk(l->v[i], declared, used);
}

static void
special_walk(struct node *n, int *declared, int *used)
{
	if (!n)
		return;
	switch (n->k) {
	case N_FOR:
		special_target(n->a, declared);
		special_walk(n->b, declared, used);
		special_list(&n->l, declared, used);
		special_list(&n->m, declared, used);
		return;
	case N_SET:
		special_target(n->a, declared);
		special_walk(n->b, declared, used);
		special_list(&n->l, declared, used);
		return;
	case N_MACRO:
		special_params(&n->l, declared, used);
		special_list(&n->m, declared, used);
		return;
	case N_CALLBLOCK:
		special_walk(n->a, declared, used);
		special_params(&n->l, declared, used);
		special_list(&n->m, declared, used);
		return;
	case N_ID: {
		int s = 0;
		special_name(n->s, &s);
		*used |= s & ~*declared;
		return;
	}
	case N_MEMBER:
		special_walk(n->a, declared, used);
		if (n->flag)
			special_walk(n->b, declared, used);
		return;
	case N_FILTER:
	case N_FILTERBLOCK:
		special_walk(n->a, declared, used);
		if (n->k == N_FILTER && n->b->k == N_CALL)
			special_list(&n->b->l, declared, used);
		if (n->k == N_FILTERBLOCK && n->a->k == N_CALL)
			special_list(&n->a->l, declared, used);
		special_list(&n->l, declared, used);
		return;
	case N_TEST:
	case N_KWARG:
	case N_SPREAD:
	case N_KWSPREAD:
	case N_UNARY:
		special_walk(n->a, declared, used);
		return;
	default:
		special_walk(n->a, declared, used);
		special_walk(n->b, declared, used);
		special_walk(n->c, declared, used);
		special_list(&n->l, declared, used);
		special_list(&n->m, declared, used);
	}
}

static int
special_args(struct list *params, struct list *body)
{
	int declared = 0, used = 0;
	for (size_t i = 0; i < params->n; i++)
		special_name(params->v[i]->s, &declared);
	special_params(params, &declared, &used);
	special_list(body, &declared, &used);
	return used;
}

/* An if's test, body and else (an elif: an if in the else), up to its
 * {% endif %}, which is the outermost if's to consume. */
static struct node *
if_rest(struct parser *p, size_t pos)
{
	static const char *const elses[] = {"elif", "else", "endif", NULL}, *const endif[] = {"endif", NULL};
	struct node *n = mk(p, N_IF, pos);
	n->a = expression(p);
	expect(p, T_CLOSE_STMT, "Expected closing statement token");
	body_until(p, &n->l, elses);
	if (is_stmt(p, elses)) {
		if (is_id(p, 1, "elif")) {
			size_t q = p->v[p->i].pos;
			p->i += 2;
			add(p, &n->m, if_rest(p, q));
		} else if (is_id(p, 1, "else")) {
			p->i += 2;
			expect(p, T_CLOSE_STMT, "Expected closing statement token");
			body_until(p, &n->m, endif);
		}
	}
	return n;
}

static struct node *
statement(struct parser *p)
{
	static const char *const endset[] = {"endset", NULL}, *const endmacro[] = {"endmacro", NULL},
				 *const forend[] = {"endfor", "else", NULL}, *const endfor[] = {"endfor", NULL},
				 *const endcall[] = {"endcall", NULL}, *const endfilter[] = {"endfilter", NULL};
	struct token *open = expect(p, T_OPEN_STMT, "Expected opening statement token");
	if (!is(p, T_ID))
		parse_fail(p, "Unknown statement, got %s", p->i < p->nv ? tok_names[p->v[p->i].t] : "the end");
	struct token *kw = next(p);
	const char *name = kw->s;
	struct node *n;
	size_t pos = open->pos;

	if (strcmp(name, "set") == 0) {
		n = mk(p, N_SET, pos);
		n->a = sequence(p, 0);
		if (is(p, T_EQUALS)) {
			p->i++;
			n->b = sequence(p, 0);
		} else {
			expect(p, T_CLOSE_STMT, "Expected %} token");
			body_until(p, &n->l, endset);
			expect(p, T_OPEN_STMT, "Expected {% token");
			expect_id(p, "endset");
		}
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
	} else if (strcmp(name, "if") == 0) {
		n = if_rest(p, pos);
		end_tag(p, "endif");
	} else if (strcmp(name, "macro") == 0) {
		n = mk(p, N_MACRO, pos);
		struct node *id = primary(p);
		if (id->k != N_ID)
			parse_fail(p, "Expected identifier following macro statement");
		n->s = id->s;
		n->n = id->n;
		args(p, &n->l, 0);
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
		body_until(p, &n->m, endmacro);
		end_tag(p, "endmacro");
		n->flag = special_args(&n->l, &n->m);
	} else if (strcmp(name, "for") == 0) {
		n = mk(p, N_FOR, pos);
		n->a = sequence(p, 1);
		if (n->a->k != N_ID && n->a->k != N_TUPLE)
			parse_fail(p, "Expected identifier/tuple for the loop variable");
		if (!is_id(p, 0, "in"))
			parse_fail(p, "Expected `in` keyword following loop variable");
		p->i++;
		n->b = expression(p);
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
		body_until(p, &n->l, forend);
		if (is_stmt(p, (const char *const[]){"else", NULL})) {
			p->i += 2;
			expect(p, T_CLOSE_STMT, "Expected closing statement token");
			body_until(p, &n->m, endfor);
		}
		end_tag(p, "endfor");
	} else if (strcmp(name, "call") == 0) {
		n = mk(p, N_CALLBLOCK, pos);
		if (is(p, T_LPAREN))
			args(p, &n->l, 0);
		struct node *callee = primary(p);
		if (callee->k != N_ID)
			parse_fail(p, "Expected identifier following call statement");
		n->a = mk(p, N_CALL, callee->pos);
		n->a->a = callee;
		args(p, &n->a->l, 1);
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
		body_until(p, &n->m, endcall);
		expect(p, T_OPEN_STMT, "Expected '{%'");
		expect_id(p, "endcall");
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
		n->flag = special_args(&n->l, &n->m);
	} else if (strcmp(name, "break") == 0 || strcmp(name, "continue") == 0) {
		n = mk(p, name[0] == 'b' ? N_BREAK : N_CONTINUE, pos);
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
	} else if (strcmp(name, "filter") == 0) {
		n = mk(p, N_FILTERBLOCK, pos);
		n->a = primary(p);
		if (n->a->k == N_ID && is(p, T_LPAREN))
			n->a = call(p, n->a);
		expect(p, T_CLOSE_STMT, "Expected closing statement token");
		body_until(p, &n->l, endfilter);
		expect(p, T_OPEN_STMT, "Expected '{%'");
		expect_id(p, "endfilter");
		expect(p, T_CLOSE_STMT, "Expected '%}'");
	} else {
		p->i--;
		parse_fail(p, "Unknown statement type: %s", name);
	}
	return n;
}

static struct node *
any(struct parser *p)
{
	struct token *k = peek(p, 0);
	struct node *n;
	switch (k->t) {
	case T_COMMENT:
		p->i++;
		return mk(p, N_COMMENT, k->pos);
	case T_TEXT:
		p->i++;
		n = mk(p, N_TEXT, k->pos);
		n->s = k->s;
		n->n = k->n;
		return n;
	case T_OPEN_STMT:
		return statement(p);
	case T_OPEN_EXPR:
		p->i++;
		n = expression(p);
		expect(p, T_CLOSE_EXPR, "Expected closing expression token");
		return n;
	default:
		parse_fail(p, "Unexpected token type: %s", tok_names[k->t]);
	}
}

struct llm_jinja *
llm_jinja_parse(const char *text, size_t len, const char *name)
{
	struct llm_jinja *t = llm_xcalloc(1, sizeof(*t));
	t->name = llm_xstrdup(name);
	t->text = llm_xmalloc(len + 1);
	memcpy(t->text, text, len);
	t->text[len] = 0;
	t->len = len;

	struct lexer l = {.t = t, .n = len};
	l.s = llm_xmalloc(len + 1);
	memcpy(l.s, text, len);
	l.s[len] = 0;
	l.map = llm_xmalloc((len + 1) * sizeof(*l.map));
	for (size_t i = 0; i < len; i++)
		l.map[i] = i;
	struct parser p = {.t = t};
	char *err = NULL;
	if (setjmp(l.fail)) {
		err = l.err;
		goto done;
	}
	preprocess(&l);
	lex(&l);
	p.v = l.v;
	p.nv = l.nv;
	if (setjmp(p.fail)) {
		err = p.err;
		goto done;
	}
	while (p.i < p.nv)
		add(&p, &t->body, any(&p));
done:
	free(l.s);
	free(l.map);
	free(l.v);
	llm_buf_free(&l.b);
	if (err) {
		llm_seterr("%s", err);
		free(err);
		llm_jinja_free(t);
		return NULL;
	}
	return t;
}

void
llm_jinja_free(struct llm_jinja *t)
{
	if (!t)
		return;
	arena_free(&t->a);
	free(t->name);
	free(t->text);
	free(t);
}

/* ---- values ---- */

enum vt { V_UNDEF, V_NULL, V_BOOL, V_INT, V_FLOAT, V_STR, V_ARRAY, V_OBJECT, V_FUNC };
enum { O_PLAIN, O_KWARGS, O_NS };

struct str {
	const char *p;
	size_t n;
	size_t (*sp)[2]; /* the data ranges */
	size_t nsp;
};

struct val;

struct arr {
	struct val *v;
	size_t n;
	int tuple;
};

struct obj {
	struct str **k;
	struct val *v;
	size_t n, cap;
	int kind;
};

struct fn;

struct val {
	enum vt t;
	union {
		int b;
		double d;
		struct str *s;
		struct arr *a;
		struct obj *o;
		struct fn *fn;
	};
};

struct env {
	struct env *parent;
	struct obj vars;
};

struct rt {
	struct arena a;
	const struct llm_jinja *t;
	jmp_buf fail;
	char *err;
	int ctl; /* 1: a break, 2: a continue on its way to the loop */
	int depth;
};

typedef struct val (
    *builtin)(struct rt *r, struct val self, struct val *args, size_t n, struct env *env, const struct node *at);

struct fn {
	builtin f;
	struct val self;
	const struct node *macro; /* N_MACRO or N_CALLBLOCK */
	struct env *env;          /* a call block's */
};

static const struct val undef = {.t = V_UNDEF}, null_val = {.t = V_NULL};

static _Noreturn void
rt_fail(struct rt *r, const struct node *at, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	r->err = where(r->t, at ? at->pos : 0, what);
	longjmp(r->fail, 1);
}

static const char *
type_name(struct val v)
{
	switch (v.t) {
	case V_UNDEF:
		return "UndefinedValue";
	case V_NULL:
		return "NullValue";
	case V_BOOL:
		return "BooleanValue";
	case V_INT:
		return "IntegerValue";
	case V_FLOAT:
		return "FloatValue";
	case V_STR:
		return "StringValue";
	case V_ARRAY:
		return v.a->tuple ? "TupleValue" : "ArrayValue";
	case V_OBJECT:
		return v.o->kind == O_NS  ? "NamespaceValue" :
		    v.o->kind == O_KWARGS ? "KeywordArgumentsValue" :
					    "ObjectValue";
	case V_FUNC:
		return "FunctionValue";
	}
	return "?";
}

static struct val
num(enum vt t, double d)
{
	return (struct val){.t = t, .d = d};
}

static struct val
boolean(int b)
{
	return (struct val){.t = V_BOOL, .b = !!b};
}

static int
is_num(struct val v)
{
	return v.t == V_INT || v.t == V_FLOAT;
}

/* IntegerValue, FloatValue or BooleanValue as a number */
static int
numeric_like(struct val v, double *d)
{
	if (v.t == V_BOOL)
		*d = v.b;
	else if (is_num(v))
		*d = v.d;
	else
		return 0;
	return 1;
}

static struct str *
mkstr(struct rt *r, const char *p, size_t n, int data)
{
	struct str *s = aalloc(&r->a, sizeof(*s));
	s->p = p;
	s->n = n;
	s->nsp = data && n ? 1 : 0;
	s->sp = NULL;
	if (s->nsp) {
		s->sp = aalloc(&r->a, sizeof(*s->sp));
		s->sp[0][0] = 0;
		s->sp[0][1] = n;
	}
	return s;
}

static struct val
sval(struct str *s)
{
	return (struct val){.t = V_STR, .s = s};
}

static struct val
cstr(struct rt *r, const char *p)
{
	return sval(mkstr(r, p, strlen(p), 0));
}

/* s[b, e) with its data ranges. */
static struct str *
substr(struct rt *r, const struct str *s, size_t b, size_t e)
{
	struct str *t = mkstr(r, s->p + b, e - b, 0);
	for (size_t i = 0; i < s->nsp; i++)
		if (s->sp[i][1] > b && s->sp[i][0] < e) {
			if (!t->sp)
				t->sp = aalloc(&r->a, s->nsp * sizeof(*t->sp));
			t->sp[t->nsp][0] = (s->sp[i][0] > b ? s->sp[i][0] : b) - b;
			t->sp[t->nsp][1] = (s->sp[i][1] < e ? s->sp[i][1] : e) - b;
			t->nsp++;
		}
	return t;
}

/* A string being built, in the arena. */
struct sb {
	char *p;
	size_t n, cap;
	size_t (*sp)[2];
	size_t nsp, spcap;
};

static void
sb_add(struct rt *r, struct sb *b, const char *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		while (cap < b->n + n)
			cap *= 2;
		char *q = aalloc(&r->a, cap);
		if (b->n)
			memcpy(q, b->p, b->n);
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void
sb_puts(struct rt *r, struct sb *b, const char *s)
{
	sb_add(r, b, s, strlen(s));
}

/* Mark [from, to) of b as data. */
static void
sb_mark(struct rt *r, struct sb *b, size_t from, size_t to)
{
	if (from >= to)
		return;
	if (b->nsp && b->sp[b->nsp - 1][1] >= from) {
		if (b->sp[b->nsp - 1][1] < to)
			b->sp[b->nsp - 1][1] = to;
		return;
	}
	if (b->nsp == b->spcap) {
		size_t cap = b->spcap ? 2 * b->spcap : 4;
		size_t (*q)[2] = aalloc(&r->a, cap * sizeof(*q));
		if (b->nsp)
			memcpy(q, b->sp, b->nsp * sizeof(*q));
		b->sp = q;
		b->spcap = cap;
	}
	b->sp[b->nsp][0] = from;
	b->sp[b->nsp][1] = to;
	b->nsp++;
}

static void
sb_str(struct rt *r, struct sb *b, const struct str *s)
{
	size_t at = b->n;
	sb_add(r, b, s->p, s->n);
	for (size_t i = 0; i < s->nsp; i++)
		sb_mark(r, b, at + s->sp[i][0], at + s->sp[i][1]);
}

static struct str *
sb_done(struct rt *r, struct sb *b)
{
	struct str *s = mkstr(r, b->p ? b->p : "", b->n, 0);
	s->sp = b->sp;
	s->nsp = b->nsp;
	return s;
}

static void
sb_buf(struct rt *r, struct sb *b, struct llm_buf *x)
{
	sb_add(r, b, x->p ? x->p : "", x->len);
	llm_buf_free(x);
}

static void
sb_number(struct rt *r, struct sb *b, double d)
{
	struct llm_buf x = {0};
	js_number(d, &x);
	sb_buf(r, b, &x);
}

static struct arr *
mkarr(struct rt *r, size_t n)
{
	struct arr *a = aalloc(&r->a, sizeof(*a));
	a->v = aalloc(&r->a, (n ? n : 1) * sizeof(*a->v));
	a->n = n;
	a->tuple = 0;
	return a;
}

static struct val
aval(struct arr *a)
{
	return (struct val){.t = V_ARRAY, .a = a};
}

static struct obj *
mkobj(struct rt *r, int kind)
{
	struct obj *o = azalloc(&r->a, sizeof(*o));
	o->kind = kind;
	return o;
}

static struct val
oval(struct obj *o)
{
	return (struct val){.t = V_OBJECT, .o = o};
}

static int
str_eq(const struct str *s, const char *p, size_t n)
{
	return s->n == n && memcmp(s->p, p, n) == 0;
}

static struct val *
obj_find(const struct obj *o, const char *k, size_t n)
{
	for (size_t i = 0; i < o->n; i++)
		if (str_eq(o->k[i], k, n))
			return &o->v[i];
	return NULL;
}

static void
obj_set(struct rt *r, struct obj *o, struct str *k, struct val v)
{
	struct val *x = obj_find(o, k->p, k->n);
	if (x) {
		*x = v;
		return;
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 4;
		struct str **nk = aalloc(&r->a, cap * sizeof(*nk));
		struct val *nv = aalloc(&r->a, cap * sizeof(*nv));
		if (o->n) {
			memcpy(nk, o->k, o->n * sizeof(*nk));
			memcpy(nv, o->v, o->n * sizeof(*nv));
		}
		o->k = nk;
		o->v = nv;
		o->cap = cap;
	}
	o->k[o->n] = k;
	o->v[o->n++] = v;
}

static void
obj_del(struct obj *o, const struct str *k)
{
	for (size_t i = 0; i < o->n; i++)
		if (str_eq(o->k[i], k->p, k->n)) {
			memmove(o->k + i, o->k + i + 1, (o->n - i - 1) * sizeof(*o->k));
			memmove(o->v + i, o->v + i + 1, (o->n - i - 1) * sizeof(*o->v));
			o->n--;
			return;
		}
}

static struct val
fnval(struct rt *r, builtin f, struct val self)
{
	struct fn *fn = azalloc(&r->a, sizeof(*fn));
	fn->f = f;
	fn->self = self;
	struct val v = {.t = V_FUNC};
	v.fn = fn;
	return v;
}

static int
truthy(struct val v)
{
	switch (v.t) {
	case V_UNDEF:
	case V_NULL:
		return 0;
	case V_BOOL:
		return v.b;
	case V_INT:
	case V_FLOAT:
		return v.d != 0 && !isnan(v.d);
	case V_STR:
		return v.s->n > 0;
	case V_ARRAY:
		return v.a->n > 0;
	case V_OBJECT:
		return v.o->kind == O_NS || v.o->n > 0;
	case V_FUNC:
		return 1;
	}
	return 0;
}

/* A canonical array index, "0" to "4294967294". */
static int
array_index(const char *k)
{
	size_t n = strlen(k);
	if (!n || n > 10 || (n > 1 && k[0] == '0'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!is_digit(k[i]))
			return 0;
	return strtod(k, NULL) <= 4294967294.0;
}

static struct val
from_json(struct rt *r, const json_t *j, int data)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		/* JavaScript's property order: array-index keys first, ascending */
		struct obj *o = mkobj(r, O_PLAIN);
		const char *k;
		json_t *x;
		for (int pass = 0; pass < 2; pass++) {
			json_object_foreach ((json_t *)j, k, x) {
				if (array_index(k) != (pass == 0))
					continue;
				size_t at = o->n;
				obj_set(r, o, mkstr(r, k, strlen(k), data), from_json(r, x, data));
				if (pass == 0)
					while (at > 0 && strtod(o->k[at - 1]->p, NULL) > strtod(k, NULL)) {
						struct str *tk = o->k[at];
						struct val tv = o->v[at];
						o->k[at] = o->k[at - 1];
						o->v[at] = o->v[at - 1];
						o->k[at - 1] = tk;
						o->v[at - 1] = tv;
						at--;
					}
			}
		}
		return oval(o);
	}
	case JSON_ARRAY: {
		struct arr *a = mkarr(r, json_array_size(j));
		for (size_t i = 0; i < a->n; i++)
			a->v[i] = from_json(r, json_array_get(j, i), data);
		return aval(a);
	}
	case JSON_STRING:
		return sval(mkstr(r, json_string_value(j), json_string_length(j), data));
	case JSON_INTEGER:
		return num(V_INT, (double)json_integer_value(j));
	case JSON_REAL: {
		double d = json_real_value(j);
		return num(d == floor(d) && isfinite(d) ? V_INT : V_FLOAT, d);
	}
	case JSON_TRUE:
		return boolean(1);
	case JSON_FALSE:
		return boolean(0);
	default:
		return null_val;
	}
}

/* ---- text of values ---- */

static void display(struct rt *r, struct sb *b, struct val v, const struct node *at);

struct json_opts {
	int indent; /* 0: none */
	int ascii, sort;
	const struct str *item_sep, *key_sep;
};

/* JSON.stringify of a string, the whole literal marked when any of it is
 * data. */
static void
json_lit(struct rt *r, struct sb *b, const struct str *s, int ascii)
{
	size_t at = b->n;
	sb_add(r, b, "\"", 1);
	for (size_t i = 0; i < s->n;) {
		unsigned char c = (unsigned char)s->p[i];
		char e[16];
		if (c == '"' || c == '\\') {
			e[0] = '\\';
			e[1] = (char)c;
			sb_add(r, b, e, 2);
			i++;
		} else if (c < 0x20) {
			const char *named = c == '\b' ? "\\b" :
			    c == '\f'                 ? "\\f" :
			    c == '\n'                 ? "\\n" :
			    c == '\r'                 ? "\\r" :
			    c == '\t'                 ? "\\t" :
							NULL;
			if (named)
				sb_puts(r, b, named);
			else {
				snprintf(e, sizeof(e), "\\u%04x", c);
				sb_puts(r, b, e);
			}
			i++;
		} else if (ascii && c >= 0x7f) {
			uint32_t cp;
			i += cp_at(s->p, s->n, i, &cp);
			if (cp >= 0x10000) {
				snprintf(e, sizeof(e), "\\u%04x\\u%04x", 0xd800 + ((cp - 0x10000) >> 10),
				    0xdc00 + ((cp - 0x10000) & 0x3ff));
			} else
				snprintf(e, sizeof(e), "\\u%04x", cp);
			sb_puts(r, b, e);
		} else {
			sb_add(r, b, s->p + i, 1);
			i++;
		}
	}
	sb_add(r, b, "\"", 1);
	if (s->nsp)
		sb_mark(r, b, at, b->n);
}

/* The root collation's order (ICU, as localeCompare uses it) for ASCII:
 * white space, then punctuation and symbols in this order, digits, and
 * letters without case first; case (lower first) decides a tie; other
 * control characters are ignored.  Beyond ASCII, code point order after
 * the letters. */
static unsigned
collation_weight(uint32_t c)
{
	static const char punct[] = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";
	const char *p;
	if (c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r')
		return c - '\t' + 1;
	if (c == ' ')
		return 6;
	if (c < 0x20 || c == 0x7f)
		return 0;
	if (c < 0x80 && (p = strchr(punct, (int)c)))
		return 10 + (unsigned)(p - punct);
	if (is_digit((int)c))
		return 100 + c - '0';
	if (c >= 'a' && c <= 'z')
		return 200 + 2 * (c - 'a');
	if (c >= 'A' && c <= 'Z')
		return 200 + 2 * (c - 'A');
	return 1000 + c;
}

static int
collate(const struct str *a, const struct str *b)
{
	for (int level = 0; level < 2; level++) {
		size_t i = 0, j = 0;
		while (1) {
			uint32_t c = 0, d = 0;
			unsigned x = 0, y = 0;
			while (i < a->n && !x) {
				i += cp_at(a->p, a->n, i, &c);
				x = collation_weight(c);
			}
			while (j < b->n && !y) {
				j += cp_at(b->p, b->n, j, &d);
				y = collation_weight(d);
			}
			if (!x || !y) {
				if (x || y)
					return x ? 1 : -1;
				break;
			}
			if (level == 1) {
				x = c >= 'A' && c <= 'Z';
				y = d >= 'A' && d <= 'Z';
			}
			if (x != y)
				return x < y ? -1 : 1;
		}
	}
	int d = memcmp(a->p, b->p, a->n < b->n ? a->n : b->n);
	return d ? d : (a->n > b->n) - (a->n < b->n);
}

static int
key_order(const void *x, const void *y)
{
	return collate(**(struct str *const *const *)x, **(struct str *const *const *)y);
}

static void
pad(struct rt *r, struct sb *b, int indent, int depth)
{
	sb_add(r, b, "\n", 1);
	for (int i = 0; i < indent * depth; i++)
		sb_add(r, b, " ", 1);
}

/* Before item i of an array or object: the separator, and the indent. */
static void
json_item(struct rt *r, struct sb *b, const struct json_opts *o, size_t i, int depth)
{
	if (i) {
		if (o->item_sep)
			sb_str(r, b, o->item_sep);
		else
			sb_puts(r, b, o->indent ? "," : ", ");
	}
	if (o->indent)
		pad(r, b, o->indent, depth + 1);
}

static void
to_json(struct rt *r, struct sb *b, struct val v, const struct json_opts *o, int depth, int undef_null,
    const struct node *at)
{
	switch (v.t) {
	case V_NULL:
		sb_puts(r, b, "null");
		return;
	case V_UNDEF:
		sb_puts(r, b, undef_null ? "null" : "undefined");
		return;
	case V_BOOL:
		sb_puts(r, b, v.b ? "true" : "false");
		return;
	case V_INT:
	case V_FLOAT:
		if (isfinite(v.d))
			sb_number(r, b, v.d);
		else
			sb_puts(r, b, "null");
		return;
	case V_STR:
		json_lit(r, b, v.s, o->ascii);
		return;
	case V_ARRAY:
		if (v.a->tuple)
			break;
		sb_add(r, b, "[", 1);
		for (size_t i = 0; i < v.a->n; i++) {
			json_item(r, b, o, i, depth);
			to_json(r, b, v.a->v[i], o, depth + 1, undef_null, at);
		}
		if (o->indent && v.a->n)
			pad(r, b, o->indent, depth);
		sb_add(r, b, "]", 1);
		return;
	case V_OBJECT: {
		if (v.o->kind == O_KWARGS)
			break;
		size_t n = v.o->n;
		struct str ***keys = aalloc(&r->a, (n ? n : 1) * sizeof(*keys));
		for (size_t i = 0; i < n; i++)
			keys[i] = &v.o->k[i];
		if (o->sort)
			qsort(keys, n, sizeof(*keys), key_order);
		sb_add(r, b, "{", 1);
		for (size_t i = 0; i < n; i++) {
			json_item(r, b, o, i, depth);
			json_lit(r, b, *keys[i], o->ascii);
			if (o->key_sep)
				sb_str(r, b, o->key_sep);
			else
				sb_puts(r, b, ": ");
			to_json(r, b, v.o->v[keys[i] - v.o->k], o, depth + 1, undef_null, at);
		}
		if (o->indent && n)
			pad(r, b, o->indent, depth);
		sb_add(r, b, "}", 1);
		return;
	}
	default:
		break;
	}
	rt_fail(r, at, "Cannot convert to JSON: %s", type_name(v));
}

/* RuntimeValue.toString(): what {{ }} writes. */
static void
display(struct rt *r, struct sb *b, struct val v, const struct node *at)
{
	static const struct json_opts plain = {0};
	switch (v.t) {
	case V_UNDEF:
		sb_puts(r, b, "undefined");
		return;
	case V_NULL:
		sb_puts(r, b, "null");
		return;
	case V_BOOL:
		sb_puts(r, b, v.b ? "true" : "false");
		return;
	case V_INT:
		sb_number(r, b, v.d);
		return;
	case V_FLOAT:
		if (v.d == 0 && signbit(v.d))
			sb_puts(r, b, "-0.0");
		else if (isfinite(v.d) && v.d == floor(v.d) && fabs(v.d) < 1e21) {
			char e[40];
			snprintf(e, sizeof(e), "%.1f", v.d);
			sb_puts(r, b, e);
		} else
			sb_number(r, b, v.d);
		return;
	case V_STR:
		sb_str(r, b, v.s);
		return;
	case V_ARRAY:
	case V_OBJECT:
		to_json(r, b, v, &plain, 0, 0, at);
		return;
	case V_FUNC:
		rt_fail(r, at, "a function cannot be written out");
	}
}

/* The JavaScript value's toString(): what +, ~ and join make of it. */
static void
js_string(struct rt *r, struct sb *b, struct val v, const struct node *at)
{
	switch (v.t) {
	case V_INT:
	case V_FLOAT:
		sb_number(r, b, v.d);
		return;
	case V_ARRAY:
		for (size_t i = 0; i < v.a->n; i++) {
			if (i)
				sb_add(r, b, ",", 1);
			display(r, b, v.a->v[i], at);
		}
		return;
	case V_OBJECT:
		sb_puts(r, b, "[object Map]");
		return;
	default:
		display(r, b, v, at);
	}
}

/* JavaScript's == between the engine's values. */
static int
loose_eq(struct rt *r, struct val a, struct val b, const struct node *at)
{
	int an = a.t == V_NULL || a.t == V_UNDEF, bn = b.t == V_NULL || b.t == V_UNDEF;
	if (an || bn)
		return an && bn;
	if (a.t == V_FUNC || b.t == V_FUNC)
		return a.t == b.t && a.fn == b.fn;
	if (a.t == V_ARRAY && b.t == V_ARRAY)
		return a.a == b.a;
	if (a.t == V_OBJECT && b.t == V_OBJECT)
		return a.o == b.o;
	/* an array or a map against a primitive: its string */
	if (a.t == V_ARRAY || a.t == V_OBJECT || b.t == V_ARRAY || b.t == V_OBJECT) {
		struct val *c = a.t == V_ARRAY || a.t == V_OBJECT ? &a : &b;
		struct sb s = {0};
		js_string(r, &s, *c, at);
		*c = sval(sb_done(r, &s));
	}
	double x = 0, y = 0;
	if (a.t == V_STR && b.t == V_STR)
		return a.s->n == b.s->n && memcmp(a.s->p, b.s->p, a.s->n) == 0;
	if (a.t == V_STR)
		x = js_to_number(a.s->p, a.s->n);
	else
		numeric_like(a, &x);
	if (b.t == V_STR)
		y = js_to_number(b.s->p, b.s->n);
	else
		numeric_like(b, &y);
	return x == y;
}

/* JavaScript's === between the values' .value (for `in`). */
static int
strict_eq(struct val a, struct val b)
{
	if (is_num(a) && is_num(b))
		return a.d == b.d;
	if (a.t != b.t)
		return 0;
	switch (a.t) {
	case V_UNDEF:
	case V_NULL:
		return 1;
	case V_BOOL:
		return a.b == b.b;
	case V_STR:
		return a.s->n == b.s->n && memcmp(a.s->p, b.s->p, a.s->n) == 0;
	case V_ARRAY:
		return a.a == b.a;
	case V_OBJECT:
		return a.o == b.o;
	case V_FUNC:
		return a.fn == b.fn;
	default:
		return 0;
	}
}

static size_t
utf16_length(const struct str *s)
{
	size_t n = 0;
	for (size_t i = 0; i < s->n;) {
		uint32_t cp;
		i += cp_at(s->p, s->n, i, &cp);
		n += cp >= 0x10000 ? 2 : 1;
	}
	return n;
}

/* The byte offsets of s's code points (n + 1 of them, the last s->n). */
static size_t *
code_points(struct rt *r, const struct str *s, size_t *n)
{
	size_t *o = aalloc(&r->a, (s->n + 1) * sizeof(*o)), k = 0;
	for (size_t i = 0; i < s->n;) {
		uint32_t cp;
		o[k++] = i;
		i += cp_at(s->p, s->n, i, &cp);
	}
	o[k] = s->n;
	*n = k;
	return o;
}

/* ---- string methods ---- */

static struct str *
trim(struct rt *r, const struct str *s, int left, int right)
{
	size_t b = 0, e = s->n;
	if (left)
		while (b < e && space_at(s->p, e, b))
			b += space_at(s->p, e, b);
	if (right)
		e = space_before(s->p, e);
	if (e < b)
		e = b;
	return substr(r, s, b, e);
}

/* Case mapping as JavaScript's toUpperCase / toLowerCase: utf8proc's
 * simple mappings, SpecialCasing's unconditional ones outside the Greek
 * extended block, and the final sigma; title (after an ASCII word
 * boundary, as /\b\w/ finds it) and capitalize (the first character) map
 * to upper case and leave the rest.  A character that came from data
 * stays data. */
static const struct {
	uint32_t cp, to[3];
} upper_special[] = {{0xdf, {0x53, 0x53}}, {0x149, {0x2bc, 0x4e}}, {0x1f0, {0x4a, 0x30c}},
	{0x390, {0x399, 0x308, 0x301}}, {0x3b0, {0x3a5, 0x308, 0x301}}, {0x587, {0x535, 0x552}},
	{0x1e96, {0x48, 0x331}}, {0x1e97, {0x54, 0x308}}, {0x1e98, {0x57, 0x30a}}, {0x1e99, {0x59, 0x30a}},
	{0x1e9a, {0x41, 0x2be}}, {0xfb00, {0x46, 0x46}}, {0xfb01, {0x46, 0x49}}, {0xfb02, {0x46, 0x4c}},
	{0xfb03, {0x46, 0x46, 0x49}}, {0xfb04, {0x46, 0x46, 0x4c}}, {0xfb05, {0x53, 0x54}}, {0xfb06, {0x53, 0x54}},
	{0xfb13, {0x544, 0x546}}, {0xfb14, {0x544, 0x535}}, {0xfb15, {0x544, 0x53b}}, {0xfb16, {0x54e, 0x546}},
	{0xfb17, {0x544, 0x53d}}};

static int
cased(uint32_t c)
{
	utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
	return k == UTF8PROC_CATEGORY_LU || k == UTF8PROC_CATEGORY_LL || k == UTF8PROC_CATEGORY_LT;
}

static int
case_ignorable(uint32_t c)
{
	utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
	return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_ME || k == UTF8PROC_CATEGORY_CF ||
	    k == UTF8PROC_CATEGORY_LM || k == UTF8PROC_CATEGORY_SK || c == '\'' || c == '.' || c == ':' || c == '^' ||
	    c == '`' || c == 0xb7 || c == 0x2019;
}

/* Whether the sigma at s[i] ends a word: a cased letter before it and
 * none after it (case-ignorable ones skipped). */
static int
final_sigma(const char *s, size_t n, size_t i, size_t k)
{
	int before = 0, after = 0;
	size_t j = i;
	while (j > 0) {
		size_t b = j - 1;
		while (b > 0 && ((unsigned char)s[b] & 0xc0) == 0x80)
			b--;
		uint32_t c;
		cp_at(s, n, b, &c);
		j = b;
		if (case_ignorable(c))
			continue;
		before = cased(c);
		break;
	}
	for (j = i + k; j < n;) {
		uint32_t c;
		j += cp_at(s, n, j, &c);
		if (case_ignorable(c))
			continue;
		after = cased(c);
		break;
	}
	return before && !after;
}

static void
sb_cp(struct rt *r, struct sb *b, uint32_t cp)
{
	char u[4];
	sb_add(r, b, u, llm_utf8_encode(cp, u));
}

/* how: 0 lower, 1 upper, 2 title, 3 capitalize */
static struct str *
recase(struct rt *r, const struct str *s, int how)
{
	struct sb b = {0};
	int word = 0;
	size_t sp = 0;
	for (size_t i = 0; i < s->n;) {
		uint32_t c;
		size_t k = llm_utf8_decode(s->p + i, s->n - i, &c), at = b.n;
		if (!k) {
			sb_add(r, &b, s->p + i, 1);
			k = 1;
		} else if (how == 0) {
			if (c == 0x130) {
				sb_cp(r, &b, 'i');
				sb_cp(r, &b, 0x307);
			} else if (c == 0x3a3 && final_sigma(s->p, s->n, i, k))
				sb_cp(r, &b, 0x3c2);
			else
				sb_cp(r, &b, (uint32_t)utf8proc_tolower((utf8proc_int32_t)c));
		} else if (how == 1 || (how == 3 && i == 0 && c < 0x10000) ||
		    (how == 2 && !word && c < 0x80 && is_word((int)c))) {
			size_t x;
			for (x = 0; x < LLM_NELEM(upper_special) && upper_special[x].cp != c; x++)
				;
			if (x < LLM_NELEM(upper_special))
				for (int y = 0; y < 3 && upper_special[x].to[y]; y++)
					sb_cp(r, &b, upper_special[x].to[y]);
			else
				sb_cp(r, &b, (uint32_t)utf8proc_toupper((utf8proc_int32_t)c));
		} else
			sb_add(r, &b, s->p + i, k);
		word = k == 1 && is_word((unsigned char)s->p[i]);
		while (sp < s->nsp && s->sp[sp][1] <= i)
			sp++;
		if (sp < s->nsp && s->sp[sp][0] <= i)
			sb_mark(r, &b, at, b.n);
		i += k;
	}
	return sb_done(r, &b);
}

static int
has_prefix(const struct str *s, const struct str *x, int end)
{
	return x->n <= s->n && memcmp(s->p + (end ? s->n - x->n : 0), x->p, x->n) == 0;
}

/* The string methods without arguments (as in JavaScript, any given are
 * ignored). */
#define STRING_METHOD(name, expr)                                                                            \
	static struct val name(struct rt *r, struct val s, struct val *a, size_t n, struct env *env,           \
	    const struct node *at)                                                                             \
	{                                                                                                      \
		(void)a, (void)n, (void)env, (void)at;                                                         \
		return sval(expr);                                                                             \
	}
STRING_METHOD(m_upper, recase(r, s.s, 1))
STRING_METHOD(m_lower, recase(r, s.s, 0))
STRING_METHOD(m_title, recase(r, s.s, 2))
STRING_METHOD(m_capitalize, recase(r, s.s, 3))
STRING_METHOD(m_strip, trim(r, s.s, 1, 1))
STRING_METHOD(m_lstrip, trim(r, s.s, 1, 0))
STRING_METHOD(m_rstrip, trim(r, s.s, 0, 1))

static struct val
affix(struct rt *r, struct val s, struct val *a, size_t n, const struct node *at, int end)
{
	const char *name = end ? "endswith" : "startswith";
	if (!n)
		rt_fail(r, at, "%s() requires at least one argument", name);
	if (a[0].t == V_STR)
		return boolean(has_prefix(s.s, a[0].s, end));
	if (a[0].t == V_ARRAY) {
		for (size_t i = 0; i < a[0].a->n; i++) {
			if (a[0].a->v[i].t != V_STR)
				rt_fail(r, at, "%s() tuple elements must be strings", name);
			if (has_prefix(s.s, a[0].a->v[i].s, end))
				return boolean(1);
		}
		return boolean(0);
	}
	rt_fail(r, at, "%s() argument must be a string or tuple of strings", name);
}

static struct val
m_startswith(struct rt *r, struct val s, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)env;
	return affix(r, s, a, n, at, 0);
}

static struct val
m_endswith(struct rt *r, struct val s, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)env;
	return affix(r, s, a, n, at, 1);
}

static const char *
find(const char *h, size_t hn, const char *x, size_t xn)
{
	if (!xn)
		return h;
	for (size_t i = 0; i + xn <= hn; i++)
		if (h[i] == x[0] && memcmp(h + i, x, xn) == 0)
			return h + i;
	return NULL;
}

static struct val
m_split(struct rt *r, struct val s, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)env;
	struct val sep = n > 0 ? a[0] : null_val, maxv = n > 1 ? a[1] : num(V_INT, -1);
	if (sep.t != V_STR && sep.t != V_NULL)
		rt_fail(r, at, "sep argument must be a string or null");
	if (maxv.t != V_INT)
		rt_fail(r, at, "maxsplit argument must be a number");
	double max = maxv.d;
	struct str *t = s.s;
	struct arr *out = mkarr(r, 0);
	size_t cap = 0;
#define PUSH(x)                                                                   \
	do {                                                                      \
		if (out->n == cap) {                                              \
			cap = cap ? 2 * cap : 8;                                  \
			struct val *nv = aalloc(&r->a, cap * sizeof(*nv));        \
			if (out->n)                                               \
				memcpy(nv, out->v, out->n * sizeof(*nv));         \
			out->v = nv;                                              \
		}                                                                 \
		out->v[out->n++] = (x);                                           \
	} while (0)
	if (sep.t == V_NULL) {
		t = trim(r, t, 1, 0);
		size_t i = 0;
		while (i < t->n) {
			size_t b = i;
			while (i < t->n && !space_at(t->p, t->n, i)) {
				uint32_t cp;
				i += cp_at(t->p, t->n, i, &cp);
			}
			if (max != -1 && (double)out->n >= max) {
				PUSH(sval(substr(r, t, b, t->n)));
				break;
			}
			PUSH(sval(substr(r, t, b, i)));
			while (i < t->n && space_at(t->p, t->n, i))
				i += space_at(t->p, t->n, i);
		}
	} else {
		if (!sep.s->n)
			rt_fail(r, at, "empty separator");
		size_t b = 0;
		const char *q;
		while ((q = find(t->p + b, t->n - b, sep.s->p, sep.s->n))) {
			if (max != -1 && (double)out->n >= max)
				break;
			size_t e = (size_t)(q - t->p);
			PUSH(sval(substr(r, t, b, e)));
			b = e + sep.s->n;
		}
		PUSH(sval(substr(r, t, b, t->n)));
	}
#undef PUSH
	return aval(out);
}

/* utils.replace: count null or negative for all; an empty old inserts
 * between code points. */
static struct str *
replace(struct rt *r, const struct str *s, const struct str *old, const struct str *new, double count)
{
	if (count == 0)
		return substr(r, s, 0, s->n);
	double left = count < 0 || isnan(count) ? INFINITY : count;
	struct sb b = {0};
	size_t i = 0;
	if (!old->n) {
		size_t ncp, *cp = code_points(r, s, &ncp);
		for (size_t k = 0; k <= ncp; k++) {
			if (left > 0) {
				sb_str(r, &b, new);
				left--;
			}
			if (k < ncp)
				sb_str(r, &b, substr(r, s, cp[k], cp[k + 1]));
		}
		return sb_done(r, &b);
	}
	const char *q;
	while (left > 0 && (q = find(s->p + i, s->n - i, old->p, old->n))) {
		size_t e = (size_t)(q - s->p);
		sb_str(r, &b, substr(r, s, i, e));
		sb_str(r, &b, new);
		i = e + old->n;
		left--;
	}
	sb_str(r, &b, substr(r, s, i, s->n));
	return sb_done(r, &b);
}

static struct val
m_replace(struct rt *r, struct val s, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)env;
	if (n < 2)
		rt_fail(r, at, "replace() requires at least two arguments");
	if (a[0].t != V_STR || a[1].t != V_STR)
		rt_fail(r, at, "replace() arguments must be strings");
	struct val count = null_val;
	if (n > 2) {
		if (a[2].t == V_OBJECT && a[2].o->kind == O_KWARGS) {
			struct val *c = obj_find(a[2].o, "count", 5);
			count = c ? *c : null_val;
		} else
			count = a[2];
	}
	if (count.t != V_INT && count.t != V_NULL)
		rt_fail(r, at, "replace() count argument must be a number or null");
	return sval(replace(r, s.s, a[0].s, a[1].s, count.t == V_NULL ? -1 : count.d));
}

/* ---- object methods ---- */

static struct val
pair(struct rt *r, struct str *k, struct val v)
{
	struct arr *a = mkarr(r, 2);
	a->v[0] = sval(k);
	a->v[1] = v;
	return aval(a);
}

/* An object's entries as an array: [key, value] pairs (0), keys (1) or
 * values (2), in its order. */
static struct val
entries(struct rt *r, struct val o, int what)
{
	struct arr *x = mkarr(r, o.o->n);
	for (size_t i = 0; i < o.o->n; i++)
		x->v[i] = what == 0 ? pair(r, o.o->k[i], o.o->v[i]) : what == 1 ? sval(o.o->k[i]) : o.o->v[i];
	return aval(x);
}

#define OBJECT_METHOD(name, what)                                                                            \
	static struct val name(struct rt *r, struct val o, struct val *a, size_t n, struct env *env,           \
	    const struct node *at)                                                                             \
	{                                                                                                      \
		(void)a, (void)n, (void)env, (void)at;                                                         \
		return entries(r, o, what);                                                                    \
	}
OBJECT_METHOD(m_items, 0)
OBJECT_METHOD(m_keys, 1)
OBJECT_METHOD(m_values, 2)

static struct val
m_get(struct rt *r, struct val o, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)env;
	if (!n || a[0].t != V_STR)
		rt_fail(r, at, "Object key must be a string: got %s", n ? type_name(a[0]) : "UndefinedValue");
	struct val *v = obj_find(o.o, a[0].s->p, a[0].s->n);
	return v ? *v : n > 1 ? a[1] : null_val;
}

/* compareRuntimeValues */
static int
compare(struct rt *r, struct val a, struct val b, int case_sensitive, const struct node *at)
{
	double x, y;
	if (a.t == V_NULL && b.t == V_NULL)
		return 0;
	if (a.t == V_NULL || b.t == V_NULL || (a.t == V_UNDEF) != (b.t == V_UNDEF))
		rt_fail(r, at, "Cannot compare %s with %s", type_name(a), type_name(b));
	if (a.t == V_UNDEF)
		return 0;
	if (numeric_like(a, &x) && numeric_like(b, &y))
		return x < y ? -1 : x > y;
	if (a.t != b.t || (a.t == V_ARRAY && a.a->tuple != b.a->tuple) || (a.t == V_OBJECT && a.o->kind != b.o->kind))
		rt_fail(r, at, "Cannot compare different types: %s and %s", type_name(a), type_name(b));
	if (a.t != V_STR)
		rt_fail(r, at, "Cannot compare type: %s", type_name(a));
	struct str *s = a.s, *t = b.s;
	if (!case_sensitive) {
		s = recase(r, s, 0);
		t = recase(r, t, 0);
	}
	/* JavaScript compares UTF-16 units: UTF-8 byte order, except that
	 * astral characters sort below U+E000..U+FFFF */
	size_t i = 0, j = 0;
	while (i < s->n && j < t->n) {
		uint32_t c, d;
		i += cp_at(s->p, s->n, i, &c);
		j += cp_at(t->p, t->n, j, &d);
		uint32_t c16 = c >= 0x10000 ? 0xd800 + ((c - 0x10000) >> 10) : c;
		uint32_t d16 = d >= 0x10000 ? 0xd800 + ((d - 0x10000) >> 10) : d;
		if (c16 != d16)
			return c16 < d16 ? -1 : 1;
		if (c != d)
			return c < d ? -1 : 1;
	}
	return (i < s->n) - (j < t->n);
}

struct sort_ctx {
	struct rt *r;
	const struct node *at;
	int case_sensitive, reverse, index; /* index: -1 the item, else of a pair */
	const struct str *attr;
};

static struct val attribute(struct val item, const struct str *path);

static struct val
sort_key(const struct sort_ctx *c, struct val v)
{
	if (c->index >= 0)
		return v.a->v[c->index];
	return c->attr ? attribute(v, c->attr) : v;
}

static int
sort_cmp(const struct sort_ctx *c, struct val a, struct val b)
{
	int d = compare(c->r, sort_key(c, a), sort_key(c, b), c->case_sensitive, c->at);
	return c->reverse ? -d : d;
}

/* Array.prototype.sort, stable: V8's binary insertion sort (the order in
 * which it compares decides which error a mixed array gives), a merge
 * sort for long arrays. */
static void
msort(const struct sort_ctx *c, struct val *v, struct val *tmp, size_t n)
{
	if (n <= 22) {
		for (size_t i = 1; i < n; i++) {
			struct val pivot = v[i];
			size_t lo = 0, hi = i;
			while (lo < hi) {
				size_t mid = lo + ((hi - lo) >> 1);
				if (sort_cmp(c, pivot, v[mid]) < 0)
					hi = mid;
				else
					lo = mid + 1;
			}
			memmove(v + lo + 1, v + lo, (i - lo) * sizeof(*v));
			v[lo] = pivot;
		}
		return;
	}
	size_t h = n / 2;
	msort(c, v, tmp, h);
	msort(c, v + h, tmp, n - h);
	size_t i = 0, j = h, k = 0;
	while (i < h && j < n)
		tmp[k++] = sort_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof(*v));
}

static struct val
sorted(struct sort_ctx *c, struct val *v, size_t n)
{
	struct arr *a = mkarr(c->r, n);
	if (n)
		memcpy(a->v, v, n * sizeof(*v));
	msort(c, a->v, aalloc(&c->r->a, (n ? n : 1) * sizeof(*v)), n);
	return aval(a);
}

/* Positional arguments, and the keyword ones when the last is those. */
static struct obj *
kwargs_of(struct val *a, size_t *n)
{
	if (*n && a[*n - 1].t == V_OBJECT && a[*n - 1].o->kind == O_KWARGS)
		return a[--*n].o;
	return NULL;
}

static struct val
arg(struct val *a, size_t n, size_t i, struct obj *kw, const char *name, struct val dflt)
{
	if (i < n)
		return a[i];
	struct val *v = kw ? obj_find(kw, name, strlen(name)) : NULL;
	return v ? *v : dflt;
}

static struct val
m_dictsort(struct rt *r, struct val o, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)env;
	struct obj *kw = kwargs_of(a, &n);
	struct val cs = arg(a, n, 0, kw, "case_sensitive", boolean(0));
	if (cs.t != V_BOOL)
		rt_fail(r, at, "case_sensitive must be a boolean");
	struct val by = arg(a, n, 1, kw, "by", cstr(r, "key"));
	if (by.t != V_STR)
		rt_fail(r, at, "by must be a string");
	if (!str_eq(by.s, "key", 3) && !str_eq(by.s, "value", 5))
		rt_fail(r, at, "by must be either 'key' or 'value'");
	struct val rev = arg(a, n, 2, kw, "reverse", boolean(0));
	if (rev.t != V_BOOL)
		rt_fail(r, at, "reverse must be a boolean");
	struct val items = m_items(r, o, NULL, 0, env, at);
	struct sort_ctx c = {r, at, cs.b, rev.b, str_eq(by.s, "key", 3) ? 0 : 1, NULL};
	return sorted(&c, items.a->v, items.a->n);
}

/* A string's or an object's method or property by name. */
static struct val
builtin_of(struct rt *r, struct val v, const struct str *name)
{
	static const struct {
		const char *name;
		builtin f;
	} strs[] = {{"upper", m_upper}, {"lower", m_lower}, {"strip", m_strip}, {"title", m_title},
		{"capitalize", m_capitalize}, {"rstrip", m_rstrip}, {"lstrip", m_lstrip}, {"startswith", m_startswith},
		{"endswith", m_endswith}, {"split", m_split}, {"replace", m_replace}},
	  objs[] = {{"get", m_get}, {"items", m_items}, {"keys", m_keys}, {"values", m_values},
		  {"dictsort", m_dictsort}};
	if (v.t == V_STR) {
		if (str_eq(name, "length", 6))
			return num(V_INT, (double)utf16_length(v.s));
		for (size_t i = 0; i < LLM_NELEM(strs); i++)
			if (str_eq(name, strs[i].name, strlen(strs[i].name)))
				return fnval(r, strs[i].f, v);
	} else if (v.t == V_ARRAY) {
		if (str_eq(name, "length", 6))
			return num(V_INT, (double)v.a->n);
	} else if (v.t == V_OBJECT && v.o->kind != O_NS) {
		for (size_t i = 0; i < LLM_NELEM(objs); i++)
			if (str_eq(name, objs[i].name, strlen(objs[i].name)))
				return fnval(r, objs[i].f, v);
	}
	return undef;
}

/* getAttributeValue: "a.b.0" */
static struct val
attribute(struct val item, const struct str *path)
{
	size_t b = 0;
	while (1) {
		const char *dot = memchr(path->p + b, '.', path->n - b);
		size_t e = dot ? (size_t)(dot - path->p) : path->n;
		if (item.t == V_OBJECT && item.o->kind != O_KWARGS) {
			struct val *v = obj_find(item.o, path->p + b, e - b);
			item = v ? *v : undef;
		} else if (item.t == V_OBJECT) {
			struct val *v = obj_find(item.o, path->p + b, e - b);
			item = v ? *v : undef;
		} else if (item.t == V_ARRAY) {
			/* parseInt: leading digits */
			size_t k = b;
			double i = 0;
			if (k < e && path->p[k] == '-')
				return undef;
			if (k < e && path->p[k] == '+')
				k++;
			if (k >= e || !is_digit(path->p[k]))
				return undef;
			while (k < e && is_digit(path->p[k]))
				i = i * 10 + (path->p[k++] - '0');
			if (i >= (double)item.a->n)
				return undef;
			item = item.a->v[(size_t)i];
		} else
			return undef;
		if (!dot)
			return item;
		b = e + 1;
	}
}

/* ---- environments ---- */

static struct env *
env_new(struct rt *r, struct env *parent)
{
	struct env *e = azalloc(&r->a, sizeof(*e));
	e->parent = parent;
	e->vars.kind = O_PLAIN;
	return e;
}

static struct val
lookup(struct env *e, const char *name, size_t n)
{
	for (; e; e = e->parent) {
		struct val *v = obj_find(&e->vars, name, n);
		if (v)
			return *v;
	}
	return undef;
}

static void
setvar(struct rt *r, struct env *e, const char *name, size_t n, struct val v)
{
	obj_set(r, &e->vars, mkstr(r, name, n, 0), v);
}

/* ---- evaluation ---- */

static struct val eval(struct rt *r, const struct node *n, struct env *env);
static struct str *block(struct rt *r, const struct list *l, struct env *env);

/* Arguments: the positional ones, then one KeywordArgumentsValue when
 * there are keyword ones (always, when kw_always). */
static struct val *
eval_args(struct rt *r, const struct list *l, struct env *env, size_t *n, int kw_always)
{
	size_t cap = l->n + 1, k = 0;
	struct val *v = aalloc(&r->a, cap * sizeof(*v));
	struct obj *kw = mkobj(r, O_KWARGS);
	for (size_t i = 0; i < l->n; i++) {
		const struct node *a = l->v[i];
		if (a->k == N_SPREAD) {
			struct val x = eval(r, a->a, env);
			if (x.t != V_ARRAY)
				rt_fail(r, a, "Cannot unpack non-iterable type: %s", type_name(x));
			if (k + x.a->n + 1 > cap) {
				cap = k + x.a->n + l->n + 1;
				struct val *nv = aalloc(&r->a, cap * sizeof(*nv));
				memcpy(nv, v, k * sizeof(*v));
				v = nv;
			}
			for (size_t j = 0; j < x.a->n; j++)
				v[k++] = x.a->v[j];
		} else if (a->k != N_KWARG && a->k != N_KWSPREAD)
			v[k++] = eval(r, a, env);
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct node *a = l->v[i];
		if (a->k == N_KWARG) {
			if (obj_find(kw, a->s, a->n))
				rt_fail(r, a, "Got multiple values for keyword argument '%s'", a->s);
			obj_set(r, kw, mkstr(r, a->s, a->n, 0), eval(r, a->a, env));
		} else if (a->k == N_KWSPREAD) {
			struct val x = eval(r, a->a, env);
			if (x.t != V_OBJECT || x.o->kind == O_NS)
				rt_fail(r, a, "Argument after ** must be a mapping, not %s", type_name(x));
			for (size_t j = 0; j < x.o->n; j++) {
				if (obj_find(kw, x.o->k[j]->p, x.o->k[j]->n))
					rt_fail(r, a, "Got multiple values for keyword argument '%.*s'",
					    (int)x.o->k[j]->n, x.o->k[j]->p);
				obj_set(r, kw, x.o->k[j], x.o->v[j]);
			}
		}
	}
	if (kw->n || kw_always)
		v[k++] = oval(kw);
	*n = k;
	return v;
}

/* bindMacroArguments */
static void
bind(struct rt *r, const char *name, const struct list *params, int special, struct val *args, size_t n,
    struct env *scope, const struct node *at)
{
	struct obj *kw0 = kwargs_of(args, &n), *kw = mkobj(r, O_PLAIN);
	for (size_t i = 0; kw0 && i < kw0->n; i++)
		obj_set(r, kw, kw0->k[i], kw0->v[i]);
	const struct node **pending = aalloc(&r->a, (params->n + 1) * sizeof(*pending));
	size_t npending = 0;
	for (size_t i = 0; i < params->n; i++) {
		const struct node *p = params->v[i];
		struct val v = undef;
		int have = 0;
		if (i < n)
			v = args[i], have = 1;
		if (!have) {
			struct val *x = obj_find(kw, p->s, p->n);
			if (x) {
				v = *x, have = 1;
				obj_del(kw, mkstr(r, p->s, p->n, 0));
			}
		}
		if (!have && p->k == N_KWARG)
			pending[npending++] = p;
		setvar(r, scope, p->s, p->n, v);
	}
	if (special & 1)
		setvar(r, scope, "kwargs", 6, oval(kw));
	else if (kw->n)
		rt_fail(r, at, "macro %s takes no keyword argument '%.*s'", name, (int)kw->k[0]->n, kw->k[0]->p);
	if (special & 2) {
		struct arr *va = mkarr(r, n > params->n ? n - params->n : 0);
		for (size_t i = 0; i < va->n; i++)
			va->v[i] = args[params->n + i];
		setvar(r, scope, "varargs", 7, aval(va));
	} else if (n > params->n)
		rt_fail(r, at, "macro %s takes not more than %zu argument(s)", name, params->n);
	for (size_t i = 0; i < npending; i++)
		setvar(r, scope, pending[i]->s, pending[i]->n, eval(r, pending[i]->a, scope));
}

static struct val
call_fn(struct rt *r, struct val f, struct val *args, size_t n, struct env *env, const struct node *at)
{
	if (f.t != V_FUNC)
		rt_fail(r, at, "Cannot call something that is not a function: got %s", type_name(f));
	if (++r->depth > 200)
		rt_fail(r, at, "calls nested deeper than 200");
	struct val v;
	if (f.fn->f)
		v = f.fn->f(r, f.fn->self, args, n, env, at);
	else {
		const struct node *m = f.fn->macro;
		struct env *scope = env_new(r, m->k == N_MACRO ? env : f.fn->env);
		char name[80];
		if (m->k == N_MACRO)
			snprintf(name, sizeof(name), "'%.60s'", m->s);
		else
			snprintf(name, sizeof(name), "None");
		bind(r, name, &m->l, m->flag, args, n, scope, at);
		v = sval(block(r, &m->m, scope));
	}
	r->depth--;
	return v;
}

/* ---- filters ---- */

static struct val
filter_join(struct rt *r, struct val v, const struct str *sep, const struct node *at)
{
	struct sb b = {0};
	if (v.t == V_STR) {
		size_t n, *cp = code_points(r, v.s, &n);
		for (size_t i = 0; i < n; i++) {
			if (i)
				sb_str(r, &b, sep);
			sb_str(r, &b, substr(r, v.s, cp[i], cp[i + 1]));
		}
	} else {
		for (size_t i = 0; i < v.a->n; i++) {
			if (i)
				sb_str(r, &b, sep);
			if (v.a->v[i].t != V_NULL && v.a->v[i].t != V_UNDEF)
				js_string(r, &b, v.a->v[i], at);
		}
	}
	return sval(sb_done(r, &b));
}

static struct val
filter_indent(struct rt *r, const struct str *s, size_t width, int first, int blank)
{
	struct sb b = {0};
	size_t i = 0, line = 0;
	while (1) {
		const char *nl = memchr(s->p + i, '\n', s->n - i);
		size_t e = nl ? (size_t)(nl - s->p) : s->n;
		if (!((!first && line == 0) || (!blank && e == i)))
			for (size_t k = 0; k < width; k++)
				sb_add(r, &b, " ", 1);
		sb_str(r, &b, substr(r, s, i, e));
		if (!nl)
			break;
		sb_add(r, &b, "\n", 1);
		i = e + 1;
		line++;
	}
	return sval(sb_done(r, &b));
}

/* parseInt(s, 10) / parseFloat(s): NaN when no number starts s. */
static double
parse_number(const struct str *s, int integer)
{
	size_t i = 0;
	while (i < s->n && space_at(s->p, s->n, i))
		i += space_at(s->p, s->n, i);
	char *t = llm_xstrndup(s->p + i, s->n - i), *end;
	double v = NAN;
	const char *c = t;
	int neg = 0;
	if (*c == '+' || *c == '-')
		neg = *c++ == '-';
	if (integer) {
		if (is_digit(*c)) {
			v = 0;
			while (is_digit(*c))
				v = v * 10 + (*c++ - '0');
			v = neg ? -v : v;
		}
	} else if (strncmp(c, "Infinity", 8) == 0)
		v = neg ? -INFINITY : INFINITY;
	else if (is_digit(*c) || (*c == '.' && is_digit(c[1]))) {
		/* the longest StrDecimalLiteral prefix */
		const char *e = c;
		while (is_digit(*e))
			e++;
		if (*e == '.')
			for (e++; is_digit(*e); e++)
				;
		if (*e == 'e' || *e == 'E') {
			const char *x = e + 1;
			if (*x == '+' || *x == '-')
				x++;
			if (is_digit(*x)) {
				while (is_digit(*x))
					x++;
				e = x;
			}
		}
		char *u = llm_xstrndup(c, (size_t)(e - c));
		v = strtod(u, &end);
		free(u);
		v = neg ? -v : v;
	}
	free(t);
	return v;
}

static struct val
tojson_filter(struct rt *r, struct val v, struct obj *kw, const struct node *at)
{
	struct json_opts o = {0};
	struct val *x;
	if (kw && (x = obj_find(kw, "indent", 6)) && x->t != V_NULL) {
		if (x->t != V_INT)
			rt_fail(r, at, "If set, indent must be a number");
		o.indent = x->d > 0 ? (int)(x->d > 10 ? 10 : x->d) : 0;
	}
	if (kw && (x = obj_find(kw, "ensure_ascii", 12))) {
		if (x->t != V_BOOL)
			rt_fail(r, at, "If set, ensure_ascii must be a boolean");
		o.ascii = x->b;
	}
	if (kw && (x = obj_find(kw, "sort_keys", 9))) {
		if (x->t != V_BOOL)
			rt_fail(r, at, "If set, sort_keys must be a boolean");
		o.sort = x->b;
	}
	if (kw && (x = obj_find(kw, "separators", 10)) && x->t != V_NULL) {
		if (x->t != V_ARRAY)
			rt_fail(r, at, "If set, separators must be a tuple of two strings");
		if (x->a->n != 2 || x->a->v[0].t != V_STR || x->a->v[1].t != V_STR)
			rt_fail(r, at, "separators must be a tuple of two strings");
		o.item_sep = x->a->v[0].s;
		o.key_sep = x->a->v[1].s;
	}
	struct sb b = {0};
	to_json(r, &b, v, &o, 0, 1, at);
	return sval(sb_done(r, &b));
}

static int run_test(struct rt *r, const char *name, struct val v, struct val arg2, int nargs, const struct node *at);

/* The arguments of a called filter, f->l evaluated, with the keyword ones in *kw. */
static struct val *
filter_args(struct rt *r, const struct node *f, struct env *env, size_t *n, struct obj **kw)
{
	struct val *a = eval_args(r, &f->l, env, n, 0);
	*kw = kwargs_of(a, n);
	return a;
}

/* v | name: f is the filter's N_ID. Each takes only the value types its row in filters[] names. */

static struct val
f_same(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return v;
}

static struct val
f_tojson(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return tojson_filter(r, v, NULL, f);
}

static struct val
f_first(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return v.a->n ? v.a->v[0] : undef;
}

static struct val
f_last(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return v.a->n ? v.a->v[v.a->n - 1] : undef;
}

static struct val
f_length(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	if (v.t == V_ARRAY)
		return num(V_INT, (double)v.a->n);
	if (v.t == V_STR)
		return num(V_INT, (double)utf16_length(v.s));
	return num(V_INT, (double)v.o->n);
}

static struct val
f_reverse(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	struct arr *a = v.a, *x = mkarr(r, a->n);
	for (size_t i = 0; i < a->n; i++)
		x->v[i] = a->v[a->n - 1 - i];
	return aval(x);
}

static struct val
f_sort(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	struct sort_ctx c = {r, f, 0, 0, -1, NULL};
	return sorted(&c, v.a->v, v.a->n);
}

static struct val
f_join(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return v.t == V_STR ? v : filter_join(r, v, mkstr(r, "", 0, 0), f);
}

static struct val
f_string(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	static const struct json_opts plain = {0};
	struct sb b = {0};
	if (v.t == V_STR)
		return v;
	if (v.t == V_BOOL)
		return cstr(r, v.b ? "true" : "false");
	if (v.t == V_ARRAY)
		to_json(r, &b, v, &plain, 0, 0, f);
	else
		display(r, &b, v, f);
	return sval(sb_done(r, &b));
}

static struct val
f_unique(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	struct arr *a = v.a, *x = mkarr(r, a->n);
	x->n = 0;
	for (size_t i = 0; i < a->n; i++) {
		int seen = 0;
		for (size_t j = 0; j < x->n && !seen; j++)
			seen = strict_eq(x->v[j], a->v[i]) ||
			    (is_num(x->v[j]) && is_num(a->v[i]) && isnan(x->v[j].d) && isnan(a->v[i].d));
		if (!seen)
			x->v[x->n++] = a->v[i];
	}
	return aval(x);
}

/* how: 0 lower, 1 upper, 2 title, 3 capitalize */
static struct val
f_recase(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return sval(recase(r, v.s, how));
}

static struct val
f_trim(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return sval(trim(r, v.s, 1, 1));
}

static struct val
f_indent(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return filter_indent(r, v.s, 4, 0, 0);
}

/* how: 1 int, 0 float. A string that holds no number makes 0. */
static struct val
f_number(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	enum vt t = how ? V_INT : V_FLOAT;
	if (v.t == V_STR) {
		double d = parse_number(v.s, how);
		return num(t, isnan(d) ? 0 : d);
	}
	if (v.t == V_BOOL)
		return num(t, v.b);
	return num(t, how ? floor(v.d) : v.d);
}

static struct val
f_abs(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return num(v.t, fabs(v.d));
}

static struct val
f_items(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	return m_items(r, v, NULL, 0, env, f);
}

/* v | name(args): f is the N_CALL, f->a its N_ID and f->l its arguments, evaluated here and not before. */

static struct val
fc_tojson(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	size_t n;
	struct obj *kw;
	filter_args(r, f, env, &n, &kw);
	return tojson_filter(r, v, kw, f);
}

/* The value's type is checked before the arguments are evaluated. */
static struct val
fc_join(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	if (v.t != V_STR && v.t != V_ARRAY)
		rt_fail(r, f, "Cannot apply filter \"%s\" to type: %s", f->a->s, type_name(v));
	size_t n;
	struct obj *kw;
	struct val *a = filter_args(r, f, env, &n, &kw);
	struct val sep = arg(a, n, 0, kw, "separator", cstr(r, ""));
	if (sep.t != V_STR)
		rt_fail(r, f, "separator must be a string");
	return filter_join(r, v, sep.s, f);
}

/* int(default) and float(default), how 1 and 0: the default for a string that holds no number. */
static struct val
fc_number(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	enum vt t = how ? V_INT : V_FLOAT;
	size_t n;
	struct obj *kw;
	struct val *a = filter_args(r, f, env, &n, &kw);
	struct val dflt = arg(a, n, 0, kw, "default", num(t, 0));
	if (v.t == V_STR) {
		double d = parse_number(v.s, how);
		return isnan(d) ? dflt : num(t, d);
	}
	if (is_num(v))
		return v;
	if (v.t == V_BOOL)
		return num(t, v.b);
	rt_fail(r, f, "Cannot apply filter \"%s\" to type: %s", f->a->s, type_name(v));
}

static struct val
fc_default(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	size_t n;
	struct obj *kw;
	struct val *a = filter_args(r, f, env, &n, &kw);
	struct val dflt = n > 0 ? a[0] : cstr(r, "");
	struct val b = arg(a, n, 1, kw, "boolean", boolean(0));
	if (b.t != V_BOOL)
		rt_fail(r, f, "`default` filter flag must be a boolean");
	return v.t == V_UNDEF || (b.b && !truthy(v)) ? dflt : v;
}

static struct val
fc_sort(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	size_t n;
	struct obj *kw;
	struct val *a = filter_args(r, f, env, &n, &kw);
	struct val rev = arg(a, n, 0, kw, "reverse", boolean(0));
	if (rev.t != V_BOOL)
		rt_fail(r, f, "reverse must be a boolean");
	struct val cs = arg(a, n, 1, kw, "case_sensitive", boolean(0));
	if (cs.t != V_BOOL)
		rt_fail(r, f, "case_sensitive must be a boolean");
	struct val attr = arg(a, n, 2, kw, "attribute", null_val);
	if (attr.t != V_STR && attr.t != V_INT && attr.t != V_NULL)
		rt_fail(r, f, "attribute must be a string, integer, or null");
	struct sort_ctx c = {r, f, cs.b, rev.b, -1, NULL};
	if (attr.t == V_STR)
		c.attr = attr.s;
	else if (attr.t == V_INT) {
		struct sb b = {0};
		sb_number(r, &b, attr.d);
		c.attr = sb_done(r, &b);
	}
	return sorted(&c, v.a->v, v.a->n);
}

/* selectattr("attr", "test", value), how 1, and rejectattr, how 0: the attribute and the test are string
 * literals. */
static struct val
fc_select(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	const char *name = f->a->s;
	for (size_t i = 0; i < v.a->n; i++)
		if (v.a->v[i].t != V_OBJECT)
			rt_fail(r, f, "`%s` can only be applied to array of objects", name);
	for (size_t i = 0; i < f->l.n; i++)
		if (f->l.v[i]->k != N_TEXT)
			rt_fail(r, f, "arguments of `%s` must be strings", name);
	if (!f->l.n)
		rt_fail(r, f, "`%s` needs an attribute", name);
	const struct node *attr = f->l.v[0], *test = f->l.n > 1 ? f->l.v[1] : NULL;
	struct val val2 = f->l.n > 2 ? eval(r, f->l.v[2], env) : undef;
	struct arr *x = mkarr(r, v.a->n);
	x->n = 0;
	for (size_t i = 0; i < v.a->n; i++) {
		struct val *m = obj_find(v.a->v[i].o, attr->s, attr->n);
		int res = m ? (test ? run_test(r, test->s, *m, val2, 2, test) : truthy(*m)) : 0;
		if (res == how)
			x->v[x->n++] = v.a->v[i];
	}
	return aval(x);
}

static struct val
fc_map(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	size_t n;
	struct obj *kw;
	filter_args(r, f, env, &n, &kw);
	struct val *attr = kw ? obj_find(kw, "attribute", 9) : NULL;
	if (!attr)
		rt_fail(r, f, "`map` expressions without `attribute` set are not currently supported.");
	if (attr->t != V_STR)
		rt_fail(r, f, "attribute must be a string");
	struct val *dflt = obj_find(kw, "default", 7);
	struct arr *x = mkarr(r, v.a->n);
	for (size_t i = 0; i < v.a->n; i++) {
		if (v.a->v[i].t != V_OBJECT)
			rt_fail(r, f, "items in map must be an object");
		struct val m = attribute(v.a->v[i], attr->s);
		x->v[i] = m.t == V_UNDEF && dflt ? *dflt : m;
	}
	return aval(x);
}

static struct val
fc_indent(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	size_t n;
	struct obj *kw;
	struct val *a = filter_args(r, f, env, &n, &kw);
	struct val w = arg(a, n, 0, kw, "width", num(V_INT, 4));
	if (w.t != V_INT)
		rt_fail(r, f, "width must be a number");
	struct val first = arg(a, n, 1, kw, "first", boolean(0));
	struct val blank = arg(a, n, 2, kw, "blank", boolean(0));
	return filter_indent(r, v.s, w.d > 0 ? (size_t)w.d : 0, truthy(first), truthy(blank));
}

/* The keyword arguments stay an object at the end, as the method wants them. */
static struct val
fc_replace(struct rt *r, struct val v, const struct node *f, struct env *env, int how)
{
	size_t n;
	struct val *a = eval_args(r, &f->l, env, &n, 1);
	return m_replace(r, v, a, n, env, f);
}

/* The value types a filter takes, one bit each; an object here is any but a namespace. */
enum {
	FT_ARRAY = 1,
	FT_STR = 2,
	FT_NUM = 4,
	FT_OBJ = 8,
	FT_BOOL = 16,
	FT_OTHER = 32,
	FT_ANY = 63,
};

/* Every filter, as @huggingface/jinja has them: a name, whether it is called with arguments, the value types it
 * takes (it is unknown to the others) and the function that applies it. */
static const struct {
	const char *name;
	int called;     /* 0: v | name, 1: v | name(args) */
	unsigned types; /* FT_ bits */
	struct val (*apply)(struct rt *r, struct val v, const struct node *f, struct env *env, int how);
	int how; /* which of the filters apply serves */
} filters[] = {
	{"safe", 0, FT_ANY, f_same, 0},
	{"tojson", 0, FT_ANY, f_tojson, 0},
	{"list", 0, FT_ARRAY, f_same, 0},
	{"first", 0, FT_ARRAY, f_first, 0},
	{"last", 0, FT_ARRAY, f_last, 0},
	{"length", 0, FT_ARRAY | FT_STR | FT_OBJ, f_length, 0},
	{"reverse", 0, FT_ARRAY, f_reverse, 0},
	{"sort", 0, FT_ARRAY, f_sort, 0},
	{"join", 0, FT_ARRAY | FT_STR, f_join, 0},
	{"string", 0, FT_ARRAY | FT_STR | FT_NUM | FT_BOOL, f_string, 0},
	{"unique", 0, FT_ARRAY, f_unique, 0},
	{"upper", 0, FT_STR, f_recase, 1},
	{"lower", 0, FT_STR, f_recase, 0},
	{"title", 0, FT_STR, f_recase, 2},
	{"capitalize", 0, FT_STR, f_recase, 3},
	{"trim", 0, FT_STR, f_trim, 0},
	{"indent", 0, FT_STR, f_indent, 0},
	{"int", 0, FT_STR | FT_NUM | FT_BOOL, f_number, 1},
	{"float", 0, FT_STR | FT_NUM | FT_BOOL, f_number, 0},
	{"abs", 0, FT_NUM, f_abs, 0},
	{"items", 0, FT_OBJ, f_items, 0},
	{"bool", 0, FT_BOOL, f_same, 0},
	{"tojson", 1, FT_ANY, fc_tojson, 0},
	{"join", 1, FT_ANY, fc_join, 0},
	{"int", 1, FT_ANY, fc_number, 1},
	{"float", 1, FT_ANY, fc_number, 0},
	{"default", 1, FT_ANY, fc_default, 0},
	{"sort", 1, FT_ARRAY, fc_sort, 0},
	{"selectattr", 1, FT_ARRAY, fc_select, 1},
	{"rejectattr", 1, FT_ARRAY, fc_select, 0},
	{"map", 1, FT_ARRAY, fc_map, 0},
	{"indent", 1, FT_STR, fc_indent, 0},
	{"replace", 1, FT_STR, fc_replace, 0},
};

static unsigned
filter_type(struct val v)
{
	if (v.t == V_ARRAY)
		return FT_ARRAY;
	if (v.t == V_STR)
		return FT_STR;
	if (is_num(v))
		return FT_NUM;
	if (v.t == V_OBJECT && v.o->kind != O_NS)
		return FT_OBJ;
	return v.t == V_BOOL ? FT_BOOL : FT_OTHER;
}

/* The name an unknown filter's message gives a type with filters of its own, or NULL for a type with none
 * of this form, to which no filter but the FT_ANY ones applies. An object's methods are filters too. */
static const char *
filter_owner(unsigned type, int called)
{
	static const char *const names[] = {"ArrayValue", "StringValue", "NumericValue", "ObjectValue", "BooleanValue"};
	int own = type == FT_OBJ;
	for (size_t i = 0; i < LLM_NELEM(filters); i++)
		own |= filters[i].called == called && filters[i].types != FT_ANY && (filters[i].types & type);
	for (size_t i = 0; own && i < LLM_NELEM(names); i++)
		if (type == 1u << i)
			return names[i];
	return NULL;
}

/* v | f: the row of filters[] for f's name and form and v's type, else an object's method of that name. */
static struct val
apply_filter(struct rt *r, struct val v, const struct node *f, struct env *env)
{
	int called = f->k != N_ID;
	if (called && f->a->k != N_ID)
		rt_fail(r, f, "Unknown filter");
	const char *name = called ? f->a->s : f->s, *owner;
	unsigned type = filter_type(v);
	for (size_t i = 0; i < LLM_NELEM(filters); i++)
		if (filters[i].called == called && (filters[i].types & type) && strcmp(filters[i].name, name) == 0)
			return filters[i].apply(r, v, f, env, filters[i].how);
	if (type == FT_OBJ) {
		struct val b = builtin_of(r, v, mkstr(r, name, strlen(name), 0));
		if (b.t == V_FUNC) {
			size_t n = 0;
			struct val *a = called ? eval_args(r, &f->l, env, &n, 0) : NULL;
			return call_fn(r, b, a, n, env, f);
		}
	}
	if ((owner = filter_owner(type, called)))
		rt_fail(r, f, "Unknown %s filter: %s", owner, name);
	rt_fail(r, f, "Cannot apply filter \"%s\" to type: %s", name, type_name(v));
}

/* ---- tests ---- */

static int
run_test(struct rt *r, const char *name, struct val v, struct val b, int nargs, const struct node *at)
{
#define IS(x) (strcmp(name, x) == 0)
	if (IS("boolean"))
		return v.t == V_BOOL;
	if (IS("callable"))
		return v.t == V_FUNC;
	if (IS("odd") || IS("even")) {
		if (v.t != V_INT)
			rt_fail(r, at, "cannot %s on %s", name, type_name(v));
		return (fmod(v.d, 2) != 0) == IS("odd");
	}
	if (IS("false"))
		return v.t == V_BOOL && !v.b;
	if (IS("true"))
		return v.t == V_BOOL && v.b;
	if (IS("none"))
		return v.t == V_NULL;
	if (IS("string"))
		return v.t == V_STR;
	if (IS("number"))
		return is_num(v);
	if (IS("integer"))
		return v.t == V_INT;
	if (IS("iterable"))
		return (v.t == V_ARRAY && !v.a->tuple) || v.t == V_STR;
	if (IS("mapping"))
		return v.t == V_OBJECT && v.o->kind != O_NS;
	if (IS("sequence"))
		return v.t == V_ARRAY || (v.t == V_OBJECT && v.o->kind != O_NS) || v.t == V_STR;
	if (IS("lower") || IS("upper")) {
		if (v.t != V_STR)
			return 0;
		struct str *c = recase(r, v.s, IS("upper"));
		return memcmp(c->p, v.s->p, v.s->n) == 0;
	}
	if (IS("defined"))
		return v.t != V_UNDEF;
	if (IS("undefined"))
		return v.t == V_UNDEF;
	if (IS("equalto") || IS("eq")) {
		/* a.value === b.value */
		if (nargs < 2)
			b = undef;
		return strict_eq(v, b) && !(is_num(v) && isnan(v.d));
	}
	rt_fail(r, at, "Unknown test: %s", name);
#undef IS
}

/* ---- expressions ---- */

static struct val
slice(struct rt *r, struct val obj, const struct node *s, struct env *env)
{
	if (obj.t != V_ARRAY && obj.t != V_STR)
		rt_fail(r, s, "Slice object must be an array or string");
	struct val v[3];
	const struct node *parts[3] = {s->a, s->b, s->c};
	const char *names[3] = {"start", "stop", "step"};
	for (int i = 0; i < 3; i++) {
		v[i] = parts[i] ? eval(r, parts[i], env) : undef;
		if (v[i].t != V_INT && v[i].t != V_UNDEF)
			rt_fail(r, s, "Slice %s must be numeric or undefined", names[i]);
	}
	size_t len, *cp = NULL;
	if (obj.t == V_STR)
		cp = code_points(r, obj.s, &len);
	else
		len = obj.a->n;
	double n = (double)len, step = v[2].t == V_INT ? v[2].d : 1, start, stop;
	int dir = step > 0 ? 1 : step < 0 ? -1 : 0;
	if (dir >= 0) {
		start = v[0].t == V_INT ? v[0].d : 0;
		stop = v[1].t == V_INT ? v[1].d : n;
		start = start < 0 ? fmax(n + start, 0) : fmin(start, n);
		stop = stop < 0 ? fmax(n + stop, 0) : fmin(stop, n);
	} else {
		start = v[0].t == V_INT ? v[0].d : n - 1;
		stop = v[1].t == V_INT ? v[1].d : -1;
		start = start < 0 ? fmax(n + start, -1) : fmin(start, n - 1);
		stop = stop < -1 ? fmax(n + stop, -1) : fmin(stop, n - 1);
	}
	size_t count = 0;
	for (double i = start; dir && dir * i < dir * stop; i += step)
		count++;
	if (obj.t == V_ARRAY) {
		struct arr *a = mkarr(r, count);
		size_t k = 0;
		for (double i = start; dir && dir * i < dir * stop; i += step)
			a->v[k++] = obj.a->v[(size_t)i];
		return aval(a);
	}
	struct sb b = {0};
	for (double i = start; dir && dir * i < dir * stop; i += step)
		sb_str(r, &b, substr(r, obj.s, cp[(size_t)i], cp[(size_t)i + 1]));
	return sval(sb_done(r, &b));
}

static struct val
member_of(struct rt *r, const struct node *n, struct env *env)
{
	struct val obj = eval(r, n->a, env), prop;
	if (n->flag) {
		if (n->b->k == N_SLICE)
			return slice(r, obj, n->b, env);
		prop = eval(r, n->b, env);
	} else if (n->b->k == N_INT)
		prop = num(V_INT, n->b->f);
	else
		prop = sval(mkstr(r, n->b->s, n->b->n, 0));

	struct val *v;
	if (obj.t == V_OBJECT) {
		if (prop.t != V_STR)
			rt_fail(r, n, "Cannot access property with non-string: got %s", type_name(prop));
		if ((v = obj_find(obj.o, prop.s->p, prop.s->n)))
			return *v;
		return builtin_of(r, obj, prop.s);
	}
	if (obj.t == V_ARRAY || obj.t == V_STR) {
		if (prop.t == V_INT) {
			double i = prop.d;
			if (obj.t == V_ARRAY) {
				double len = (double)obj.a->n;
				if (i < 0)
					i += len;
				return i >= 0 && i < len ? obj.a->v[(size_t)i] : undef;
			}
			/* String.prototype.at: UTF-16 units; half of a pair is
			 * a lone surrogate, written out as U+FFFD */
			if (i < 0)
				i += (double)utf16_length(obj.s);
			if (i < 0)
				return undef;
			for (size_t b = 0, u = 0; b < obj.s->n; u++) {
				uint32_t c;
				size_t k = cp_at(obj.s->p, obj.s->n, b, &c);
				if (c >= 0x10000 && (double)u + 1 >= i && (double)u <= i)
					return cstr(r, "\xef\xbf\xbd");
				if ((double)u == i)
					return sval(substr(r, obj.s, b, b + k));
				u += c >= 0x10000;
				b += k;
			}
			return undef;
		}
		if (prop.t == V_STR)
			return builtin_of(r, obj, prop.s);
		rt_fail(r, n, "Cannot access property with non-string/non-number: got %s", type_name(prop));
	}
	if (prop.t != V_STR)
		rt_fail(r, n, "Cannot access property with non-string: got %s", type_name(prop));
	return undef;
}

static struct val
binary_op(struct rt *r, const struct node *n, struct env *env)
{
	const char *op = n->s;
	struct val a = eval(r, n->a, env), b;
	if (strcmp(op, "and") == 0)
		return truthy(a) ? eval(r, n->b, env) : a;
	if (strcmp(op, "or") == 0)
		return truthy(a) ? a : eval(r, n->b, env);
	b = eval(r, n->b, env);
	if (strcmp(op, "==") == 0)
		return boolean(loose_eq(r, a, b, n));
	if (strcmp(op, "!=") == 0)
		return boolean(!loose_eq(r, a, b, n));
	int in = strcmp(op, "in") == 0, not_in = strcmp(op, "not in") == 0;
	if (a.t == V_UNDEF || b.t == V_UNDEF) {
		if (b.t == V_UNDEF && (in || not_in))
			return boolean(not_in);
		rt_fail(r, n, "Cannot perform operation %s on undefined values", op);
	}
	if (a.t == V_NULL || b.t == V_NULL)
		rt_fail(r, n, "Cannot perform operation on null values");
	if (strcmp(op, "~") == 0) {
		struct sb s = {0};
		js_string(r, &s, a, n);
		js_string(r, &s, b, n);
		return sval(sb_done(r, &s));
	}
	double x, y;
	if (strcmp(op, "**") == 0 && numeric_like(a, &x) && numeric_like(b, &y)) {
		if (x == 0 && y < 0)
			rt_fail(r, n, "0.0 cannot be raised to a negative power");
		double p = pow(x, y);
		if (!isfinite(p))
			rt_fail(r, n, "Exponentiation result is not a finite real number");
		return num(a.t == V_FLOAT || b.t == V_FLOAT || y < 0 ? V_FLOAT : V_INT, p);
	}
	if (is_num(a) && is_num(b)) {
		x = a.d, y = b.d;
		enum vt t = a.t == V_FLOAT || b.t == V_FLOAT ? V_FLOAT : V_INT;
		if (strcmp(op, "+") == 0)
			return num(t, x + y);
		if (strcmp(op, "-") == 0)
			return num(t, x - y);
		if (strcmp(op, "*") == 0)
			return num(t, x * y);
		if (strcmp(op, "/") == 0)
			return num(V_FLOAT, x / y);
		if (strcmp(op, "//") == 0)
			return num(t, floor(x / y));
		if (strcmp(op, "%") == 0)
			return num(t, fmod(x, y));
		if (strcmp(op, "<") == 0)
			return boolean(x < y);
		if (strcmp(op, ">") == 0)
			return boolean(x > y);
		if (strcmp(op, ">=") == 0)
			return boolean(x >= y);
		if (strcmp(op, "<=") == 0)
			return boolean(x <= y);
	} else if (a.t == V_ARRAY && b.t == V_ARRAY) {
		if (strcmp(op, "+") == 0) {
			struct arr *c = mkarr(r, a.a->n + b.a->n);
			if (a.a->n)
				memcpy(c->v, a.a->v, a.a->n * sizeof(*c->v));
			if (b.a->n)
				memcpy(c->v + a.a->n, b.a->v, b.a->n * sizeof(*c->v));
			return aval(c);
		}
	} else if (b.t == V_ARRAY && (in || not_in)) {
		int found = 0;
		for (size_t i = 0; i < b.a->n && !found; i++)
			found = strict_eq(b.a->v[i], a);
		return boolean(in ? found : !found);
	}
	if ((a.t == V_STR || b.t == V_STR) && strcmp(op, "+") == 0) {
		struct sb s = {0};
		js_string(r, &s, a, n);
		js_string(r, &s, b, n);
		return sval(sb_done(r, &s));
	}
	if (a.t == V_STR && b.t == V_STR && (in || not_in)) {
		int found = find(b.s->p, b.s->n, a.s->p, a.s->n) != NULL;
		return boolean(in ? found : !found);
	}
	if (a.t == V_STR && b.t == V_OBJECT && b.o->kind != O_NS && (in || not_in)) {
		int found = obj_find(b.o, a.s->p, a.s->n) != NULL;
		return boolean(in ? found : !found);
	}
	rt_fail(r, n, "Unknown operator \"%s\" between %s and %s", op, type_name(a), type_name(b));
}

/* ---- statements ---- */

static void
assign(struct rt *r, const struct node *target, struct val v, struct env *env, const struct node *at)
{
	if (target->k == N_ID) {
		setvar(r, env, target->s, target->n, v);
		return;
	}
	if (target->k == N_TUPLE) {
		if (v.t != V_ARRAY)
			rt_fail(r, at, "Cannot unpack non-iterable type in set: %s", type_name(v));
		if (v.a->n != target->l.n)
			rt_fail(r, at, "Too %s items to unpack in set", target->l.n > v.a->n ? "few" : "many");
		for (size_t i = 0; i < target->l.n; i++) {
			if (target->l.v[i]->k != N_ID)
				rt_fail(r, at, "Cannot unpack to non-identifier in set");
			setvar(r, env, target->l.v[i]->s, target->l.v[i]->n, v.a->v[i]);
		}
		return;
	}
	if (target->k == N_MEMBER) {
		struct val o = eval(r, target->a, env);
		if (o.t != V_OBJECT || o.o->kind != O_NS)
			rt_fail(r, at, "cannot assign attribute on non-namespace object");
		if (target->b->k != N_ID || target->flag)
			rt_fail(r, at, "Cannot assign to member with non-identifier property");
		obj_set(r, o.o, mkstr(r, target->b->s, target->b->n, 0), v);
		return;
	}
	rt_fail(r, at, "Invalid LHS inside assignment expression");
}

/* The loop variable(s) for one item. */
static void
bind_loop(struct rt *r, const struct node *target, struct val v, struct env *env, const struct node *at)
{
	if (target->k == N_ID) {
		setvar(r, env, target->s, target->n, v);
		return;
	}
	if (v.t != V_ARRAY || v.a->tuple)
		rt_fail(r, at, "Cannot unpack non-iterable type: %s", type_name(v));
	if (target->l.n != v.a->n)
		rt_fail(r, at, "Too %s items to unpack", target->l.n > v.a->n ? "few" : "many");
	for (size_t i = 0; i < target->l.n; i++) {
		if (target->l.v[i]->k != N_ID)
			rt_fail(r, at, "Cannot unpack non-identifier type");
		setvar(r, env, target->l.v[i]->s, target->l.v[i]->n, v.a->v[i]);
	}
}

static struct val
for_loop(struct rt *r, const struct node *n, struct env *env)
{
	struct env *scope = env_new(r, env);
	const struct node *test = NULL;
	struct val it;
	if (n->b->k == N_SELECT) {
		it = eval(r, n->b->a, scope);
		test = n->b->b;
	} else
		it = eval(r, n->b, scope);
	if (it.t == V_OBJECT && it.o->kind != O_NS)
		it = m_keys(r, it, NULL, 0, env, n);
	else if (it.t != V_ARRAY)
		rt_fail(r, n, "Expected iterable or object type in for loop: got %s", type_name(it));

	struct arr *items = mkarr(r, it.a->n);
	items->n = 0;
	for (size_t i = 0; i < it.a->n; i++) {
		struct val cur = it.a->v[i];
		if (n->a->k == N_TUPLE && (cur.t != V_ARRAY || cur.a->tuple))
			rt_fail(r, n, "Cannot unpack non-iterable type: %s", type_name(cur));
		if (n->a->k == N_TUPLE && cur.a->n != n->a->l.n)
			rt_fail(r, n, "Too %s items to unpack", n->a->l.n > cur.a->n ? "few" : "many");
		if (test) {
			struct env *ls = env_new(r, scope);
			bind_loop(r, n->a, cur, ls, n);
			if (!truthy(eval(r, test, ls)))
				continue;
		}
		items->v[items->n++] = cur;
	}

	struct sb out = {0};
	int none = 1;
	static const char *const keys[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length",
		"previtem", "nextitem"};
	for (size_t i = 0; i < items->n; i++) {
		size_t len = items->n;
		struct obj *loop = mkobj(r, O_PLAIN);
		struct val vals[9] = {num(V_INT, (double)i + 1), num(V_INT, (double)i), num(V_INT, (double)(len - i)),
			num(V_INT, (double)(len - i - 1)), boolean(i == 0), boolean(i == len - 1),
			num(V_INT, (double)len), i > 0 ? items->v[i - 1] : undef,
			i + 1 < len ? items->v[i + 1] : undef};
		for (size_t k = 0; k < 9; k++)
			obj_set(r, loop, mkstr(r, keys[k], strlen(keys[k]), 0), vals[k]);
		setvar(r, scope, "loop", 4, oval(loop));
		bind_loop(r, n->a, items->v[i], scope, n);
		struct str *s = block(r, &n->l, scope);
		if (r->ctl) {
			int brk = r->ctl == 1;
			r->ctl = 0;
			if (brk)
				break;
			continue;
		}
		sb_str(r, &out, s);
		none = 0;
	}
	if (none)
		sb_str(r, &out, block(r, &n->m, scope));
	return sval(sb_done(r, &out));
}

/* ---- globals ---- */

static struct val
g_raise(struct rt *r, struct val self, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)self, (void)env;
	struct sb b = {0};
	if (n && a[0].t != V_UNDEF)
		js_string(r, &b, a[0], at);
	struct str *s = sb_done(r, &b);
	/* the template's own verdict on its input: no line and column */
	r->err = llm_xasprintf("%s: %.*s", r->t->name, (int)s->n, s->p);
	longjmp(r->fail, 1);
}

static struct val
g_range(struct rt *r, struct val self, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)self, (void)env;
	double v[3] = {0, 0, 1};
	for (size_t i = 0; i < n && i < 3; i++)
		if (!is_num(a[i]))
			rt_fail(r, at, "range() takes numbers, not %s", type_name(a[i]));
	if (n == 0)
		rt_fail(r, at, "range() needs an argument");
	if (n == 1)
		v[1] = a[0].d;
	else {
		v[0] = a[0].d;
		v[1] = a[1].d;
		if (n > 2)
			v[2] = a[2].d;
	}
	if (v[2] == 0)
		rt_fail(r, at, "range() step must not be zero");
	double count = v[2] > 0 ? ceil((v[1] - v[0]) / v[2]) : ceil((v[0] - v[1]) / -v[2]);
	if (count > 1e7)
		rt_fail(r, at, "range() of %.0f numbers is too long", count);
	struct arr *x = mkarr(r, count > 0 ? (size_t)count : 0);
	size_t k = 0;
	for (double i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2])
		if (k < x->n)
			x->v[k++] = num(i == floor(i) ? V_INT : V_FLOAT, i);
	x->n = k;
	return aval(x);
}

static struct val
g_strftime_now(struct rt *r, struct val self, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)self, (void)env;
	static const char *const months[] = {"January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"};
	if (!n || a[0].t != V_STR)
		rt_fail(r, at, "strftime_now() takes a format string");
	const char *sde = getenv("SOURCE_DATE_EPOCH");
	time_t now = sde && *sde ? (time_t)strtoll(sde, NULL, 10) : time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	struct sb b = {0};
	const struct str *f = a[0].s;
	for (size_t i = 0; i < f->n; i++) {
		char e[16];
		if (f->p[i] != '%' || i + 1 >= f->n || !strchr("YmdbBHM%", f->p[i + 1]) || !f->p[i + 1]) {
			sb_add(r, &b, f->p + i, 1);
			continue;
		}
		switch (f->p[++i]) {
		case 'Y':
			snprintf(e, sizeof(e), "%d", tm.tm_year + 1900);
			break;
		case 'm':
			snprintf(e, sizeof(e), "%02d", tm.tm_mon + 1);
			break;
		case 'd':
			snprintf(e, sizeof(e), "%02d", tm.tm_mday);
			break;
		case 'b':
			snprintf(e, sizeof(e), "%.3s", months[tm.tm_mon]);
			break;
		case 'B':
			snprintf(e, sizeof(e), "%s", months[tm.tm_mon]);
			break;
		case 'H':
			snprintf(e, sizeof(e), "%02d", tm.tm_hour);
			break;
		case 'M':
			snprintf(e, sizeof(e), "%02d", tm.tm_min);
			break;
		default:
			snprintf(e, sizeof(e), "%%");
		}
		sb_puts(r, &b, e);
	}
	return sval(sb_done(r, &b));
}

static struct val
g_namespace(struct rt *r, struct val self, struct val *a, size_t n, struct env *env, const struct node *at)
{
	(void)self, (void)env;
	static const char not_pairs[] = "namespace expected an object or an iterable of [key, value] pairs";
	struct obj *kw = kwargs_of(a, &n), *ns = mkobj(r, O_NS);
	if (n > 1)
		rt_fail(r, at, "namespace expected at most 1 argument, got %zu", n);
	if (n == 1) {
		struct val src = a[0];
		if (src.t == V_OBJECT && src.o->kind != O_NS) {
			for (size_t i = 0; i < src.o->n; i++)
				obj_set(r, ns, src.o->k[i], src.o->v[i]);
		} else if (src.t == V_ARRAY) {
			for (size_t i = 0; i < src.a->n; i++) {
				struct val p = src.a->v[i];
				struct val k, v;
				if (p.t == V_ARRAY && p.a->n == 2) {
					k = p.a->v[0];
					v = p.a->v[1];
				} else if (p.t == V_STR) {
					size_t nc, *cp = code_points(r, p.s, &nc);
					if (nc != 2)
						rt_fail(r, at, "%s", not_pairs);
					k = sval(substr(r, p.s, cp[0], cp[1]));
					v = sval(substr(r, p.s, cp[1], cp[2]));
				} else
					rt_fail(r, at,
					    "namespace expected an object or an iterable of [key, value] pairs");
				if (k.t != V_STR)
					rt_fail(r, at, "namespace keys must be strings");
				obj_set(r, ns, k.s, v);
			}
		} else
			rt_fail(r, at, "'%s' object is not iterable", type_name(src));
	}
	for (size_t i = 0; kw && i < kw->n; i++)
		obj_set(r, ns, kw->k[i], kw->v[i]);
	return oval(ns);
}

/* ---- the evaluator ---- */

static struct val
eval(struct rt *r, const struct node *n, struct env *env)
{
	if (!n)
		return undef;
	switch (n->k) {
	case N_TEXT:
		return sval(mkstr(r, n->s, n->n, 0));
	case N_INT:
		return num(V_INT, n->f);
	case N_FLOAT:
		return num(V_FLOAT, n->f);
	case N_ID:
		return lookup(env, n->s, n->n);
	case N_ARRAY:
	case N_TUPLE: {
		struct arr *a = mkarr(r, n->l.n);
		for (size_t i = 0; i < n->l.n; i++)
			a->v[i] = eval(r, n->l.v[i], env);
		a->tuple = n->k == N_TUPLE;
		return aval(a);
	}
	case N_OBJECT: {
		struct obj *o = mkobj(r, O_PLAIN);
		for (size_t i = 0; i + 1 < n->l.n; i += 2) {
			struct val k = eval(r, n->l.v[i], env);
			if (k.t != V_STR)
				rt_fail(r, n->l.v[i], "Object keys must be strings: got %s", type_name(k));
			obj_set(r, o, k.s, eval(r, n->l.v[i + 1], env));
		}
		return oval(o);
	}
	case N_MEMBER:
		return member_of(r, n, env);
	case N_CALL: {
		size_t k;
		struct val *a = eval_args(r, &n->l, env, &k, 0);
		struct val f = eval(r, n->a, env);
		return call_fn(r, f, a, k, env, n);
	}
	case N_UNARY: {
		struct val a = eval(r, n->a, env);
		if (strcmp(n->s, "not") == 0)
			return boolean(!truthy(a));
		double d;
		if (!numeric_like(a, &d))
			rt_fail(r, n, "Unknown operator \"%s\" for %s", n->s, type_name(a));
		return num(a.t == V_FLOAT ? V_FLOAT : V_INT, n->s[0] == '-' ? -d : d);
	}
	case N_BINARY:
		return binary_op(r, n, env);
	case N_FILTER:
		return apply_filter(r, eval(r, n->a, env), n->b, env);
	case N_TEST: {
		struct val a = eval(r, n->a, env);
		int t = run_test(r, n->s, a, undef, 1, n);
		return boolean(n->flag ? !t : t);
	}
	case N_SELECT:
		return truthy(eval(r, n->b, env)) ? eval(r, n->a, env) : undef;
	case N_TERNARY:
		return truthy(eval(r, n->a, env)) ? eval(r, n->b, env) : eval(r, n->c, env);
	case N_SET: {
		struct val v = n->b ? eval(r, n->b, env) : sval(block(r, &n->l, env));
		assign(r, n->a, v, env, n);
		return null_val;
	}
	case N_IF:
		return sval(block(r, truthy(eval(r, n->a, env)) ? &n->l : &n->m, env));
	case N_FOR:
		return for_loop(r, n, env);
	case N_MACRO: {
		struct fn *f = azalloc(&r->a, sizeof(*f));
		f->macro = n;
		struct val v = {.t = V_FUNC};
		v.fn = f;
		setvar(r, env, n->s, n->n, v);
		return null_val;
	}
	case N_CALLBLOCK: {
		struct fn *f = azalloc(&r->a, sizeof(*f));
		f->macro = n;
		f->env = env;
		struct val caller = {.t = V_FUNC};
		caller.fn = f;
		size_t k;
		struct val *a = eval_args(r, &n->a->l, env, &k, 1);
		struct val callee = eval(r, n->a->a, env);
		if (callee.t != V_FUNC)
			rt_fail(r, n, "Cannot call something that is not a function: got %s", type_name(callee));
		struct env *e = env_new(r, env);
		setvar(r, e, "caller", 6, caller);
		return call_fn(r, callee, a, k, e, n);
	}
	case N_FILTERBLOCK:
		return apply_filter(r, sval(block(r, &n->l, env)), n->a, env);
	case N_BREAK:
	case N_CONTINUE:
		r->ctl = n->k == N_BREAK ? 1 : 2;
		return undef;
	case N_COMMENT:
		return null_val;
	default:
		rt_fail(r, n, "Unknown node type");
	}
}

/* evaluateBlock: what each statement gives, null and undefined aside;
 * a break or continue ends it early. */
static struct str *
block(struct rt *r, const struct list *l, struct env *env)
{
	struct sb b = {0};
	for (size_t i = 0; i < l->n; i++) {
		struct val v = eval(r, l->v[i], env);
		if (r->ctl)
			break;
		if (v.t != V_NULL && v.t != V_UNDEF)
			display(r, &b, v, l->v[i]);
	}
	return sb_done(r, &b);
}

void
llm_spans_free(struct llm_spans *s)
{
	free(s->r);
	*s = (struct llm_spans){0};
}

int
llm_jinja_render(const struct llm_jinja *t, const json_t *vars, const char *const *data, struct llm_buf *out,
    struct llm_spans *spans)
{
	static const struct {
		const char *name;
		builtin f;
	} fns[] = {{"namespace", g_namespace}, {"raise_exception", g_raise}, {"range", g_range},
		{"strftime_now", g_strftime_now}};
	struct rt r = {.t = t};
	volatile int rc = 0;
	if (setjmp(r.fail)) {
		llm_seterr("%s", r.err);
		free(r.err);
		rc = -1;
		goto done;
	}
	struct env *g = env_new(&r, NULL);
	for (size_t i = 0; i < LLM_NELEM(fns); i++)
		setvar(&r, g, fns[i].name, strlen(fns[i].name), fnval(&r, fns[i].f, undef));
	setvar(&r, g, "true", 4, boolean(1));
	setvar(&r, g, "false", 5, boolean(0));
	setvar(&r, g, "none", 4, null_val);
	setvar(&r, g, "True", 4, boolean(1));
	setvar(&r, g, "False", 5, boolean(0));
	setvar(&r, g, "None", 4, null_val);
	const char *k;
	json_t *x;
	json_object_foreach ((json_t *)vars, k, x) {
		int is_data = 0;
		for (const char *const *d = data; d && *d; d++)
			is_data |= strcmp(*d, k) == 0;
		if (obj_find(&g->vars, k, strlen(k)))
			rt_fail(&r, NULL, "Variable already declared: %s", k);
		setvar(&r, g, k, strlen(k), from_json(&r, x, is_data));
	}
	struct str *s = block(&r, &t->body, g);
	if (r.ctl)
		rt_fail(&r, NULL, "%s outside a loop", r.ctl == 1 ? "break" : "continue");
	if (spans)
		for (size_t i = 0; i < s->nsp; i++) {
			if (spans->n == spans->cap) {
				spans->cap = spans->cap ? 2 * spans->cap : 8;
				spans->r = llm_xreallocarray(spans->r, spans->cap, sizeof(*spans->r));
			}
			spans->r[spans->n][0] = out->len + s->sp[i][0];
			spans->r[spans->n][1] = out->len + s->sp[i][1];
			spans->n++;
		}
	llm_buf_add(out, s->p, s->n);
done:
	arena_free(&r.a);
	return rc;
}
