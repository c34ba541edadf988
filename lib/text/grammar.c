/* grammar.c: GBNF parsed into rules, and the matcher over them; see
 * grammar.h.
 *
 * Rules are kept as llama.cpp keeps them: each rule a run of elements,
 * its alternatives each ended by an END element; an element is a
 * character class or a reference to a rule.  Groups and repetitions
 * become rules of their own while parsing: x* is r ::= x r | (right
 * recursive, so the matcher's tail call below keeps the stack flat),
 * x+ is x x*, x? is r ::= x |, and x{m,n} is m copies of x, then n - m
 * nested optionals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "../base/hash.h"
#include "../base/utf8.h"
#include "../base/util.h"

enum { E_END, E_CHAR, E_REF };

/* E_CHAR: the class's ranges are ranges[a .. a + 2b) as (lo, hi) pairs,
 * neg inverts it; E_REF: a is the rule. */
struct elem {
	uint8_t type, neg;
	uint32_t a, b;
};

enum { R_NAMED, R_GROUP, R_REPEAT };

struct rule {
	char *name;
	int defined, kind;
	size_t at;      /* where it is defined (a group or repetition: where it is written) */
	size_t ref_at;  /* its first reference */
	struct elem *e; /* while parsing: the alternatives, each ended by E_END */
	size_t n, cap;
	uint32_t first; /* after linking: its first alternative in g->alts */
	uint32_t nalts;
};

/* A stack frame: a position in the elements and the frame below (0:
 * none).  Frame 0 stands for the empty stack. */
struct frame {
	uint32_t pos, parent;
	uint32_t cl, ncl; /* its stacks in g->pool (ncl UINT32_MAX: not worked out yet) */
	uint32_t after;   /* the frame after its class (UINT32_MAX: not made yet) */
};

/* A set of stacks being built: the ids in v, and past 16 of them a hash
 * of them (id + 1, 0 empty), so that adding stays O(1) when an ambiguous
 * grammar makes thousands. */
struct set {
	uint32_t *v;
	size_t n, cap;
	uint32_t *h;
	size_t hcap;
};

static void
set_free(struct set *s)
{
	free(s->v);
	free(s->h);
}

struct llm_grammar {
	struct rule *rules;
	size_t nrules;
	uint32_t *ranges;
	size_t nranges, rcap;
	struct elem *elems; /* linked: every rule's alternatives */
	size_t nelems;
	uint32_t *alts; /* each alternative's first element */
	size_t nalts;
	uint32_t root;
	struct frame *f;
	size_t nf, fcap;
	uint32_t *htab; /* frame ids by (pos, parent), open addressing; 0 empty */
	size_t hcap;
	uint32_t *pool; /* the memoised follow sets */
	size_t npool, pcap;
	struct set tmp[2];
	struct elem *xs; /* repeat's copy of the repeated elements */
	size_t xcap;
	/* the mask's states by depth */
	struct llm_grammar_state *depth;
	size_t ndepth;
	int over; /* the matcher passed MAX_STACKS or MAX_FRAMES: it refuses from then on */
};

/* Too large a grammar (after repetitions are unrolled) is refused. */
#define MAX_ELEMS (1u << 20)
#define MAX_REPEAT 10000
/* What the matcher follows at most: stacks a state (the ways to read the
 * text so far) and frames made (each 20 bytes, with their memoised stacks
 * in the pool): an ambiguous grammar's stacks can double with every byte
 * (fuzz_grammar found one that took 4 GB in 30 bytes).  Past either the
 * grammar is too ambiguous to follow, and the matcher says so and stops. */
#define MAX_STACKS (1u << 16)
#define MAX_FRAMES (1u << 22)

struct parser {
	struct llm_grammar *g;
	const char *text, *p, *end;
	size_t total; /* elements so far */
	/* the named rules by name (keys in pool): a grammar of many rules
	 * (a wide JSON schema's) is parsed in linear time */
	struct llm_smap named;
	struct llm_buf pool;
	jmp_buf jb;
};

static _Noreturn void perr(struct parser *ps, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static _Noreturn void
perr(struct parser *ps, const char *at, const char *fmt, ...)
{
	va_list ap;
	struct llm_buf b = {0};
	size_t line = 1, col = 1;
	for (const char *q = ps->text; q < at && q < ps->end; q++) {
		if (*q == '\n')
			line++, col = 1;
		else if (((unsigned char)*q & 0xC0) != 0x80)
			col++;
	}
	llm_buf_printf(&b, "line %zu, column %zu: ", line, col);
	va_start(ap, fmt);
	llm_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	llm_seterr("%s", b.p);
	llm_buf_free(&b);
	longjmp(ps->jb, 1);
}

static int
word_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Spaces, tabs and comments; newlines too when nl. */
static void
skip(struct parser *ps, int nl)
{
	while (ps->p < ps->end) {
		char c = *ps->p;
		if (c == ' ' || c == '\t' || c == '\r' || (nl && c == '\n'))
			ps->p++;
		else if (c == '#')
			while (ps->p < ps->end && *ps->p != '\n')
				ps->p++;
		else
			break;
	}
}

static uint32_t
new_rule(struct parser *ps, const char *name, size_t namelen, int kind, const char *at)
{
	struct llm_grammar *g = ps->g;
	g->rules = llm_xreallocarray(g->rules, g->nrules + 1, sizeof(*g->rules));
	struct rule *r = &g->rules[g->nrules];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->at = (size_t)(at - ps->text);
	r->ref_at = (size_t)-1;
	if (name)
		r->name = llm_xstrndup(name, namelen);
	else
		r->name = llm_xasprintf("%s-%zu", kind == R_GROUP ? "group" : "repeat", g->nrules);
	r->defined = kind != R_NAMED;
	return (uint32_t)g->nrules++;
}

static uint32_t
rule_named(struct parser *ps, const char *name, size_t len, const char *at)
{
	uint64_t h = llm_hash_bytes(name, len);
	int32_t i = llm_smap_get(&ps->named, ps->pool.p, name, len, h);
	if (i >= 0)
		return (uint32_t)i;
	uint32_t r = new_rule(ps, name, len, R_NAMED, at);
	size_t off = ps->pool.len;
	llm_buf_add(&ps->pool, name, len);
	llm_smap_put(&ps->named, ps->pool.p, off, len, h, (int32_t)r);
	return r;
}

static void
emit(struct parser *ps, uint32_t r, struct elem e)
{
	struct rule *ru = &ps->g->rules[r];
	ps->total++;
	if (ru->n == ru->cap) {
		ru->cap = ru->cap ? 2 * ru->cap : 8;
		ru->e = llm_xreallocarray(ru->e, ru->cap, sizeof(*ru->e));
	}
	ru->e[ru->n++] = e;
}

static void
emit_slice(struct parser *ps, uint32_t r, const struct elem *x, size_t k, const char *at)
{
	if (ps->total + k > MAX_ELEMS)
		perr(ps, at, "the grammar is too large (over %u elements once repetitions are unrolled)", MAX_ELEMS);
	for (size_t i = 0; i < k; i++)
		emit(ps, r, x[i]);
}

static uint32_t
hexval(struct parser *ps, int digits)
{
	uint32_t v = 0;
	for (int i = 0; i < digits; i++) {
		char c = ps->p < ps->end ? *ps->p : 0;
		int d = c >= '0' && c <= '9' ? c - '0' :
		    c >= 'a' && c <= 'f'     ? c - 'a' + 10 :
		    c >= 'A' && c <= 'F'     ? c - 'A' + 10 :
					       -1;
		if (d < 0)
			perr(ps, ps->p, "expected %d hexadecimal digits", digits);
		v = v * 16 + (uint32_t)d;
		ps->p++;
	}
	return v;
}

/* One character of a literal or class, an escape or a UTF-8 sequence. */
static uint32_t
parse_char(struct parser *ps, const char *what)
{
	const char *at = ps->p;
	uint32_t cp;
	if (ps->p >= ps->end || *ps->p == '\n')
		perr(ps, ps->p, "unterminated %s", what);
	if (*ps->p == '\\') {
		ps->p++;
		char c = ps->p < ps->end ? *ps->p : 0;
		ps->p++;
		switch (c) {
		case 'n':
			return '\n';
		case 't':
			return '\t';
		case 'r':
			return '\r';
		case '\\':
		case '"':
		case '\'':
		case '[':
		case ']':
		case '-':
		case '/':
		case '^':
			return (uint32_t)c;
		case 'x':
			return hexval(ps, 2);
		case 'u':
			cp = hexval(ps, 4);
			break;
		case 'U':
			cp = hexval(ps, 8);
			break;
		default:
			if (!c)
				perr(ps, at, "unterminated %s", what);
			if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7F) /* a byte that is no character alone */
				perr(ps, at, "unknown escape '\\' then byte %#x", (unsigned char)c);
			perr(ps, at, "unknown escape '\\%c'", c);
		}
		if (cp > 0x10FFFF)
			perr(ps, at, "code point %#x is outside Unicode", cp);
		return cp;
	}
	size_t k = llm_utf8_decode(ps->p, (size_t)(ps->end - ps->p), &cp);
	if (!k)
		perr(ps, at, "invalid UTF-8");
	ps->p += k;
	return cp;
}

static uint32_t
add_ranges(struct llm_grammar *g, const uint32_t *r, size_t n)
{
	if (g->nranges + n > g->rcap) {
		g->rcap = 2 * (g->nranges + n) + 16;
		g->ranges = llm_xreallocarray(g->ranges, g->rcap, sizeof(*g->ranges));
	}
	if (n)
		memcpy(g->ranges + g->nranges, r, n * sizeof(*r));
	g->nranges += n;
	return (uint32_t)(g->nranges - n);
}

static void parse_alts(struct parser *ps, uint32_t r, int nested);

static unsigned long
parse_count(struct parser *ps)
{
	const char *at = ps->p;
	unsigned long v = 0;
	if (ps->p >= ps->end || *ps->p < '0' || *ps->p > '9')
		perr(ps, at, "expected a number in the repetition");
	while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
		v = v * 10 + (unsigned long)(*ps->p++ - '0');
		if (v > MAX_REPEAT)
			perr(ps, at, "repetition count over %d", MAX_REPEAT);
	}
	return v;
}

/* A rule for x* (its body x, then itself; or nothing). */
static uint32_t
star_rule(struct parser *ps, const struct elem *x, size_t k, const char *at)
{
	uint32_t s = new_rule(ps, NULL, 0, R_REPEAT, at);
	emit_slice(ps, s, x, k, at);
	emit(ps, s, (struct elem){E_REF, 0, s, 0});
	emit(ps, s, (struct elem){E_END, 0, 0, 0});
	emit(ps, s, (struct elem){E_END, 0, 0, 0});
	return s;
}

/* The repetition at ps->p applied to rule r's elements from start. */
static void
repeat(struct parser *ps, uint32_t r, size_t start)
{
	const char *at = ps->p;
	char op = *ps->p++;
	unsigned long lo, hi; /* hi ULONG_MAX: no bound */
	size_t k = ps->g->rules[r].n - start;
	struct llm_grammar *g = ps->g;
	if (k + 1 > g->xcap) {
		g->xcap = 2 * k + 16;
		g->xs = llm_xreallocarray(g->xs, g->xcap, sizeof(*g->xs));
	}
	struct elem *x = g->xs; /* the grammar's: freed with it when an error jumps out */
	if (k)                  /* none: a repetition of "" */
		memcpy(x, g->rules[r].e + start, k * sizeof(*x));
	if (op == '*')
		lo = 0, hi = (unsigned long)-1;
	else if (op == '+')
		lo = 1, hi = (unsigned long)-1;
	else if (op == '?')
		lo = 0, hi = 1;
	else {
		skip(ps, 0);
		lo = ps->p < ps->end && *ps->p == ',' ? 0 : parse_count(ps);
		skip(ps, 0);
		hi = lo;
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			skip(ps, 0);
			hi = ps->p < ps->end && *ps->p == '}' ? (unsigned long)-1 : parse_count(ps);
			skip(ps, 0);
		}
		if (ps->p >= ps->end || *ps->p != '}')
			perr(ps, ps->p, "expected '}' to end the repetition");
		ps->p++;
		if (hi < lo)
			perr(ps, at, "repetition {%lu,%lu}: the most is below the least", lo, hi);
	}
	ps->g->rules[r].n = start;
	for (unsigned long i = 0; i < lo; i++)
		emit_slice(ps, r, x, k, at);
	if (hi == (unsigned long)-1) {
		uint32_t s = star_rule(ps, x, k, at);
		emit(ps, r, (struct elem){E_REF, 0, s, 0});
	} else if (hi > lo) {
		/* opt_1 ::= x | ; opt_j ::= x opt_(j-1) | */
		uint32_t prev = 0;
		for (unsigned long j = 1; j <= hi - lo; j++) {
			uint32_t o = new_rule(ps, NULL, 0, R_REPEAT, at);
			emit_slice(ps, o, x, k, at);
			if (j > 1)
				emit(ps, o, (struct elem){E_REF, 0, prev, 0});
			emit(ps, o, (struct elem){E_END, 0, 0, 0});
			emit(ps, o, (struct elem){E_END, 0, 0, 0});
			prev = o;
		}
		emit(ps, r, (struct elem){E_REF, 0, prev, 0});
	}
}

static void
parse_primary(struct parser *ps, uint32_t r)
{
	struct llm_grammar *g = ps->g;
	const char *at = ps->p;
	char c = *ps->p;
	if (c == '"') {
		ps->p++;
		while (ps->p >= ps->end || *ps->p != '"') {
			uint32_t cp = parse_char(ps, "string");
			uint32_t rg[2] = {cp, cp};
			emit(ps, r, (struct elem){E_CHAR, 0, add_ranges(g, rg, 2), 1});
		}
		ps->p++;
	} else if (c == '[') {
		struct set *rg = &g->tmp[1]; /* the grammar's: freed with it when an error jumps out */
		int neg = 0;
		rg->n = 0;
		ps->p++;
		if (ps->p < ps->end && *ps->p == '^')
			neg = 1, ps->p++;
		while (ps->p >= ps->end || *ps->p != ']') {
			const char *cat = ps->p;
			uint32_t a = parse_char(ps, "character class"), b = a;
			if (ps->p + 1 < ps->end && *ps->p == '-' && ps->p[1] != ']') {
				ps->p++;
				b = parse_char(ps, "character class");
				if (b < a)
					perr(ps, cat, "range %#x-%#x is reversed", a, b);
			}
			if (rg->n + 2 > rg->cap) {
				rg->cap = 2 * rg->cap + 16;
				rg->v = llm_xreallocarray(rg->v, rg->cap, sizeof(*rg->v));
			}
			rg->v[rg->n++] = a;
			rg->v[rg->n++] = b;
		}
		ps->p++;
		emit(ps, r, (struct elem){E_CHAR, (uint8_t)neg, add_ranges(g, rg->v, rg->n), (uint32_t)(rg->n / 2)});
	} else if (c == '.') {
		ps->p++;
		emit(ps, r, (struct elem){E_CHAR, 1, 0, 0});
	} else if (c == '(') {
		ps->p++;
		uint32_t sub = new_rule(ps, NULL, 0, R_GROUP, at);
		skip(ps, 1);
		parse_alts(ps, sub, 1);
		if (ps->p >= ps->end)
			perr(ps, at, "'(' is not closed");
		if (*ps->p != ')')
			perr(ps, ps->p, "expected ')'");
		ps->p++;
		emit(ps, r, (struct elem){E_REF, 0, sub, 0});
	} else if (word_char((unsigned char)c)) {
		const char *s = ps->p;
		while (ps->p < ps->end && word_char((unsigned char)*ps->p))
			ps->p++;
		uint32_t ref = rule_named(ps, s, (size_t)(ps->p - s), s);
		if (g->rules[ref].ref_at == (size_t)-1)
			g->rules[ref].ref_at = (size_t)(s - ps->text);
		emit(ps, r, (struct elem){E_REF, 0, ref, 0});
	} else if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) {
		perr(ps, at, "unexpected character %#x", (unsigned char)c);
	} else {
		perr(ps, at, "unexpected '%c'", c);
	}
}

/* One alternative: items up to '|', ')', the end, or (not nested) the
 * end of the line. */
static void
parse_seq(struct parser *ps, uint32_t r, int nested)
{
	for (;;) {
		skip(ps, nested);
		if (ps->p >= ps->end)
			break;
		char c = *ps->p;
		if (c == '|' || c == ')' || c == '\n')
			break;
		size_t start = ps->g->rules[r].n;
		parse_primary(ps, r);
		for (;;) {
			skip(ps, 0);
			if (ps->p < ps->end && (*ps->p == '*' || *ps->p == '+' || *ps->p == '?' || *ps->p == '{'))
				repeat(ps, r, start);
			else
				break;
		}
	}
	emit(ps, r, (struct elem){E_END, 0, 0, 0});
}

static void
parse_alts(struct parser *ps, uint32_t r, int nested)
{
	parse_seq(ps, r, nested);
	for (;;) {
		if (!nested) {
			/* a following line that starts with '|' goes on */
			const char *save = ps->p;
			skip(ps, 1);
			if (ps->p >= ps->end || *ps->p != '|') {
				ps->p = save;
				return;
			}
		}
		if (ps->p >= ps->end || *ps->p != '|')
			return;
		ps->p++;
		skip(ps, 1);
		parse_seq(ps, r, nested);
	}
}

static void
parse_rule(struct parser *ps)
{
	const char *s = ps->p;
	while (ps->p < ps->end && word_char((unsigned char)*ps->p))
		ps->p++;
	if (ps->p == s) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			perr(ps, s, "expected a rule name, not the character %#x", (unsigned char)*s);
		perr(ps, s, "expected a rule name, not '%c'", *s);
	}
	uint32_t r = rule_named(ps, s, (size_t)(ps->p - s), s);
	if (ps->g->rules[r].defined)
		perr(ps, s, "rule '%s' is defined twice", ps->g->rules[r].name);
	ps->g->rules[r].defined = 1;
	ps->g->rules[r].at = (size_t)(s - ps->text);
	skip(ps, 0);
	if (ps->end - ps->p < 3 || memcmp(ps->p, "::=", 3) != 0)
		perr(ps, ps->p, "expected '::=' after the rule name '%s'", ps->g->rules[r].name);
	ps->p += 3;
	skip(ps, 1);
	parse_alts(ps, r, 0);
	skip(ps, 0);
	if (ps->p < ps->end && *ps->p == ')')
		perr(ps, ps->p, "unexpected ')'");
	if (ps->p < ps->end && *ps->p != '\n')
		perr(ps, ps->p, "expected the end of the line");
}

static const char *
rule_desc(const struct rule *r, char *buf, size_t n)
{
	if (r->kind == R_NAMED)
		snprintf(buf, n, "rule '%s'", r->name);
	else
		snprintf(buf, n, "this %s", r->kind == R_GROUP ? "group" : "repetition");
	return buf;
}

/* Nullable and productive rules, then left recursion (a rule that can
 * start with itself: the matcher would expand it forever). */
static void
check_rules(struct parser *ps)
{
	struct llm_grammar *g = ps->g;
	size_t n = g->nrules;
	char *nullable = llm_xcalloc(n, 1), *prod = llm_xcalloc(n, 1), *color = llm_xcalloc(n, 1);
	uint32_t *stack = llm_xreallocarray(NULL, n + 1, sizeof(*stack));
	size_t *edge = llm_xcalloc(n + 1, sizeof(*edge));
	char desc[160];
	int changed = 1;
	for (int pass = 0; changed; pass++) {
		changed = 0;
		/* passes in turn from the last rule and from the first: a chain of
		 * rules, each referring to the next (made after it, where it is
		 * first named: a wide schema's) or to the one before (a deep
		 * schema's), settles in a pass or two, not a pass a link */
		for (size_t k = 0; k < n; k++) {
			size_t i = pass % 2 ? k : n - 1 - k;
			struct rule *r = &g->rules[i];
			int all_null = 1, all_prod = 1;
			for (size_t j = 0; j < r->n; j++) {
				struct elem *e = &r->e[j];
				if (e->type == E_END) {
					if (all_null && !nullable[i])
						nullable[i] = 1, changed = 1;
					if (all_prod && !prod[i])
						prod[i] = 1, changed = 1;
					all_null = all_prod = 1;
				} else if (e->type == E_CHAR) {
					all_null = 0;
					if (!e->neg && e->b == 0)
						all_prod = 0; /* [] matches nothing */
				} else {
					all_null &= nullable[e->a];
					all_prod &= prod[e->a];
				}
			}
		}
	}
	size_t bad = SIZE_MAX, endless = SIZE_MAX;
	for (size_t i = 0; i < n && endless == SIZE_MAX; i++)
		if (!prod[i])
			endless = i;
	/* What each rule can start with, then depth first over that: color 1
	 * on the path, 2 done. */
	uint32_t **firsts = llm_xcalloc(n, sizeof(*firsts));
	size_t *nfirst = llm_xcalloc(n, sizeof(*nfirst));
	for (size_t i = 0; i < n; i++) {
		struct rule *r = &g->rules[i];
		int at_start = 1;
		for (size_t j = 0; j < r->n; j++) {
			struct elem *e = &r->e[j];
			if (e->type == E_END) {
				at_start = 1;
			} else if (e->type == E_CHAR) {
				at_start = 0;
			} else if (at_start) {
				firsts[i] = llm_xreallocarray(firsts[i], nfirst[i] + 1, sizeof(**firsts));
				firsts[i][nfirst[i]++] = e->a;
				at_start = nullable[e->a];
			}
		}
	}
	for (size_t s = 0; s < n && bad == SIZE_MAX && endless == SIZE_MAX; s++) {
		if (color[s])
			continue;
		size_t sp = 0;
		stack[0] = (uint32_t)s;
		edge[0] = 0;
		color[s] = 1;
		for (;;) {
			uint32_t top = stack[sp];
			if (edge[sp] == nfirst[top]) {
				color[top] = 2;
				if (sp == 0)
					break;
				sp--;
				continue;
			}
			uint32_t next = firsts[top][edge[sp]++];
			if (color[next] == 1) {
				bad = next;
				break;
			}
			if (color[next] == 0) {
				color[next] = 1;
				stack[++sp] = next;
				edge[sp] = 0;
			}
		}
	}
	for (size_t i = 0; i < n; i++)
		free(firsts[i]);
	free(firsts);
	free(nfirst);
	free(nullable);
	free(prod);
	free(color);
	free(stack);
	free(edge);
	if (endless != SIZE_MAX)
		perr(ps, ps->text + g->rules[endless].at, "%s can never end",
		    rule_desc(&g->rules[endless], desc, sizeof(desc)));
	if (bad != SIZE_MAX)
		perr(ps, ps->text + g->rules[bad].at, "%s can start with itself (left recursion)%s",
		    rule_desc(&g->rules[bad], desc, sizeof(desc)),
		    g->rules[bad].kind == R_REPEAT ? ": it repeats something that can be empty" : "");
}

/* The rules' elements into one array, each alternative's start noted. */
static void
link_rules(struct llm_grammar *g)
{
	size_t ne = 0, na = 0;
	for (size_t i = 0; i < g->nrules; i++)
		for (size_t j = 0; j < g->rules[i].n; j++)
			ne++, na += g->rules[i].e[j].type == E_END;
	g->elems = llm_xreallocarray(NULL, ne + 1, sizeof(*g->elems));
	g->alts = llm_xreallocarray(NULL, na + 1, sizeof(*g->alts));
	for (size_t i = 0; i < g->nrules; i++) {
		struct rule *r = &g->rules[i];
		r->first = (uint32_t)g->nalts;
		int start = 1;
		for (size_t j = 0; j < r->n; j++) {
			if (start)
				g->alts[g->nalts++] = (uint32_t)g->nelems, r->nalts++;
			start = r->e[j].type == E_END;
			g->elems[g->nelems++] = r->e[j];
		}
		free(r->e);
		r->e = NULL;
	}
}

struct llm_grammar *
llm_grammar_parse(const char *text, size_t len)
{
	struct llm_grammar *g = llm_xcalloc(1, sizeof(*g));
	struct parser ps = {.g = g, .text = text, .p = text, .end = text + len};
	if (setjmp(ps.jb)) {
		llm_smap_free(&ps.named);
		llm_buf_free(&ps.pool);
		llm_grammar_free(g);
		return NULL;
	}
	for (;;) {
		skip(&ps, 1);
		if (ps.p >= ps.end)
			break;
		parse_rule(&ps);
	}
	for (size_t i = 0; i < g->nrules; i++)
		if (!g->rules[i].defined)
			perr(&ps, text + g->rules[i].ref_at, "undefined rule '%s'", g->rules[i].name);
	int32_t root = llm_smap_get(&ps.named, ps.pool.p, "root", 4, llm_hash_bytes("root", 4));
	if (root < 0)
		perr(&ps, text, "no rule 'root' (where the text starts)");
	g->root = (uint32_t)root;
	check_rules(&ps);
	link_rules(g);
	g->nf = 1; /* frame 0: the empty stack */
	g->fcap = 64;
	g->f = llm_xcalloc(g->fcap, sizeof(*g->f));
	g->hcap = 128;
	g->htab = llm_xcalloc(g->hcap, sizeof(*g->htab));
	llm_smap_free(&ps.named);
	llm_buf_free(&ps.pool);
	return g;
}

void
llm_grammar_free(struct llm_grammar *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->nrules; i++) {
		free(g->rules[i].name);
		free(g->rules[i].e);
	}
	free(g->rules);
	free(g->ranges);
	free(g->elems);
	free(g->alts);
	free(g->f);
	free(g->htab);
	free(g->pool);
	set_free(&g->tmp[0]);
	set_free(&g->tmp[1]);
	free(g->xs);
	for (size_t i = 0; i < g->ndepth; i++)
		llm_grammar_state_free(&g->depth[i]);
	free(g->depth);
	free(g);
}

/* ---- the matcher ------------------------------------------------------ */

static void
set_reset(struct set *s)
{
	s->n = 0;
	if (s->hcap)
		memset(s->h, 0, s->hcap * sizeof(*s->h));
}

static uint32_t
hash2(uint32_t a, uint32_t b)
{
	uint64_t h = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ULL;
	return (uint32_t)(h >> 32);
}

/* The frame (pos, parent), made once. */
static uint32_t
intern(struct llm_grammar *g, uint32_t pos, uint32_t parent)
{
	size_t mask = g->hcap - 1, i = hash2(pos, parent) & mask;
	for (; g->htab[i]; i = (i + 1) & mask) {
		struct frame *f = &g->f[g->htab[i]];
		if (f->pos == pos && f->parent == parent)
			return g->htab[i];
	}
	if (g->nf >= MAX_FRAMES) {
		g->over = 1;
		return 0;
	}
	if (g->nf == g->fcap) {
		g->fcap *= 2;
		g->f = llm_xreallocarray(g->f, g->fcap, sizeof(*g->f));
	}
	uint32_t id = (uint32_t)g->nf++;
	g->f[id] = (struct frame){pos, parent, 0, UINT32_MAX, UINT32_MAX};
	g->htab[i] = id;
	if (2 * g->nf > g->hcap) {
		g->hcap *= 2;
		free(g->htab);
		g->htab = llm_xcalloc(g->hcap, sizeof(*g->htab));
		mask = g->hcap - 1;
		for (uint32_t k = 1; k < g->nf; k++) {
			size_t j = hash2(g->f[k].pos, g->f[k].parent) & mask;
			while (g->htab[j])
				j = (j + 1) & mask;
			g->htab[j] = k;
		}
	}
	return id;
}

static void
set_hash_put(struct set *s, uint32_t id)
{
	size_t mask = s->hcap - 1, i = (id * 0x9E3779B1u) & mask;
	while (s->h[i])
		i = (i + 1) & mask;
	s->h[i] = id + 1;
}

static void
set_add(struct set *s, uint32_t id)
{
	if (s->n < 16 && !s->hcap) {
		for (size_t i = 0; i < s->n; i++)
			if (s->v[i] == id)
				return;
	} else {
		if (4 * (s->n + 1) > s->hcap) {
			free(s->h);
			s->hcap = s->hcap ? 2 * s->hcap : 128;
			while (4 * (s->n + 1) > s->hcap)
				s->hcap *= 2;
			s->h = llm_xcalloc(s->hcap, sizeof(*s->h));
			for (size_t i = 0; i < s->n; i++)
				set_hash_put(s, s->v[i]);
		}
		size_t mask = s->hcap - 1;
		for (size_t i = (id * 0x9E3779B1u) & mask; s->h[i]; i = (i + 1) & mask)
			if (s->h[i] == id + 1)
				return;
		set_hash_put(s, id);
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = llm_xreallocarray(s->v, s->cap, sizeof(*s->v));
	}
	s->v[s->n++] = id;
}

/* The frame to return to after the element at pos - 1: none to make
 * when only the end of the alternative is left (a tail call). */
static uint32_t
return_frame(struct llm_grammar *g, uint32_t pos, uint32_t parent)
{
	if (g->elems[pos].type == E_END)
		return parent;
	return intern(g, pos, parent);
}

static const uint32_t *closure_of(struct llm_grammar *g, uint32_t id, uint32_t *n);

/* The stacks of frame (pos, parent) added to out. */
static void
closure_into(struct llm_grammar *g, uint32_t pos, uint32_t parent, struct set *out)
{
	uint32_t n;
	const uint32_t *v = closure_of(g, intern(g, pos, parent), &n);
	for (uint32_t i = 0; i < n; i++)
		set_add(out, v[i]);
}

/* Every stack that frame id stands for, with a class on top (or empty),
 * memoised: the frame itself when a class is at its position; its
 * parent's when its alternative ends there; each alternative's of the
 * rule referred to, pushed on the frame to return to. */
static const uint32_t *
closure_of(struct llm_grammar *g, uint32_t id, uint32_t *n)
{
	if (g->over) { /* what follows is thrown away */
		*n = 0;
		return g->pool;
	}
	if (g->f[id].ncl == UINT32_MAX) {
		struct set s = {0};
		uint32_t pos = g->f[id].pos, parent = g->f[id].parent;
		struct elem e = g->elems[pos];
		if (e.type == E_CHAR) {
			set_add(&s, id);
		} else if (e.type == E_END) {
			if (!parent)
				set_add(&s, 0);
			else
				closure_into(g, g->f[parent].pos, g->f[parent].parent, &s);
		} else {
			uint32_t ret = return_frame(g, pos + 1, parent);
			uint32_t first = g->rules[e.a].first, nalts = g->rules[e.a].nalts;
			for (uint32_t i = 0; i < nalts; i++)
				closure_into(g, g->alts[first + i], ret, &s);
		}
		if (s.n > MAX_STACKS || g->npool + s.n > MAX_FRAMES) {
			g->over = 1;
			s.n = 0;
		}
		if (g->npool + s.n > g->pcap) {
			g->pcap = 2 * (g->npool + s.n) + 64;
			g->pool = llm_xreallocarray(g->pool, g->pcap, sizeof(*g->pool));
		}
		if (s.n)
			memcpy(g->pool + g->npool, s.v, s.n * sizeof(*s.v));
		g->f[id].cl = (uint32_t)g->npool;
		g->f[id].ncl = (uint32_t)s.n;
		g->npool += s.n;
		set_free(&s);
	}
	*n = g->f[id].ncl;
	return g->pool + g->f[id].cl;
}

/* The stacks after frame id's class has matched. */
static const uint32_t *
follow(struct llm_grammar *g, uint32_t id, uint32_t *n)
{
	if (g->f[id].after == UINT32_MAX) {
		uint32_t a = intern(g, g->f[id].pos + 1, g->f[id].parent);
		g->f[id].after = a;
	}
	return closure_of(g, g->f[id].after, n);
}

static int
class_has(const struct llm_grammar *g, const struct elem *e, uint32_t c)
{
	const uint32_t *r = g->ranges + e->a;
	int in = 0;
	for (uint32_t i = 0; i < e->b && !in; i++)
		in = c >= r[2 * i] && c <= r[2 * i + 1];
	return in != e->neg;
}

/* 1 if the class admits some code point in [lo, hi]. */
static int
class_meets(const struct llm_grammar *g, const struct elem *e, uint32_t lo, uint32_t hi)
{
	const uint32_t *r = g->ranges + e->a;
	if (!e->neg) {
		for (uint32_t i = 0; i < e->b; i++)
			if (r[2 * i] <= hi && r[2 * i + 1] >= lo)
				return 1;
		return 0;
	}
	/* negated: some point of [lo, hi] outside every range */
	uint64_t x = lo;
	while (x <= hi) {
		uint32_t i = 0;
		while (i < e->b && !(r[2 * i] <= x && r[2 * i + 1] >= x))
			i++;
		if (i == e->b)
			return 1;
		x = (uint64_t)r[2 * i + 1] + 1;
	}
	return 0;
}

static void
state_reserve(struct llm_grammar_state *st, size_t n)
{
	if (n > st->cap) {
		st->cap = n + 16;
		st->set = llm_xreallocarray(st->set, st->cap, sizeof(*st->set));
	}
}

/* -1, with the message, once the matcher has passed its bounds. */
static int
too_ambiguous(const struct llm_grammar *g)
{
	if (!g->over)
		return 0;
	return llm_seterr("the grammar is too ambiguous to follow: the text so far reads in over %u ways, or "
			  "they take over %u frames",
	    MAX_STACKS, MAX_FRAMES);
}

int
llm_grammar_start(struct llm_grammar *g, struct llm_grammar_state *st)
{
	struct set s = {0};
	uint32_t first = g->rules[g->root].first, nalts = g->rules[g->root].nalts;
	for (uint32_t i = 0; i < nalts && !g->over; i++)
		closure_into(g, g->alts[first + i], 0, &s);
	if (s.n > MAX_STACKS)
		g->over = 1;
	if (g->over) {
		set_free(&s);
		st->n = 0;
		st->need = 0;
		return too_ambiguous(g);
	}
	state_reserve(st, s.n);
	memcpy(st->set, s.v, s.n * sizeof(*s.v));
	st->n = s.n;
	st->cp = 0;
	st->need = 0;
	set_free(&s);
	return 0;
}

void
llm_grammar_state_copy(struct llm_grammar_state *dst, const struct llm_grammar_state *src)
{
	state_reserve(dst, src->n);
	if (src->n)
		memcpy(dst->set, src->set, src->n * sizeof(*src->set));
	dst->n = src->n;
	dst->cp = src->cp;
	dst->need = src->need;
	dst->len = src->len;
}

void
llm_grammar_state_free(struct llm_grammar_state *st)
{
	free(st->set);
	memset(st, 0, sizeof(*st));
}

/* One byte from in into out (a different state): 0 if no stack can take
 * it, -1 if following it passes the matcher's bounds (g->over). */
static int
step_byte(struct llm_grammar *g, const struct llm_grammar_state *in, unsigned char b, struct llm_grammar_state *out)
{
	uint32_t cp;
	int need;
	int len;
	if (in->need == 0) {
		if (b < 0x80)
			cp = b, need = 0, len = 1;
		else if (b >= 0xC2 && b <= 0xDF)
			cp = b & 0x1F, need = 1, len = 2;
		else if (b >= 0xE0 && b <= 0xEF)
			cp = b & 0x0F, need = 2, len = 3;
		else if (b >= 0xF0 && b <= 0xF4)
			cp = b & 0x07, need = 3, len = 4;
		else
			return 0;
	} else {
		if ((b & 0xC0) != 0x80)
			return 0;
		cp = in->cp << 6 | (b & 0x3F);
		need = in->need - 1;
		len = in->len;
	}
	/* the least code point a sequence of len bytes encodes (no overlong forms) */
	static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
	if (need) {
		/* a code point begun: some class must admit one that starts so */
		uint32_t lo = cp << (6 * need), hi = lo | ((1u << (6 * need)) - 1);
		if (hi < least[len] || lo > 0x10FFFF)
			return 0;
		if (lo < least[len])
			lo = least[len];
		if (hi > 0x10FFFF)
			hi = 0x10FFFF;
		/* and one that is not a surrogate (0xED 0xA0..0xBF starts only those): a class
		 * that admits them would take a start no byte can finish */
		uint32_t lo2 = lo > 0xE000 ? lo : 0xE000, hi1 = hi < 0xD7FF ? hi : 0xD7FF;
		int any = 0;
		for (size_t i = 0; i < in->n && !any; i++)
			if (in->set[i]) {
				const struct elem *c = &g->elems[g->f[in->set[i]].pos];
				any = (lo <= hi1 && class_meets(g, c, lo, hi1)) ||
				    (lo2 <= hi && class_meets(g, c, lo2, hi));
			}
		if (!any)
			return 0;
		llm_grammar_state_copy(out, in);
		out->cp = cp;
		out->need = need;
		out->len = len;
		return 1;
	}
	if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF || cp < least[len])
		return 0;
	struct set *s = &g->tmp[0];
	set_reset(s);
	for (size_t i = 0; i < in->n; i++) {
		uint32_t id = in->set[i], nf;
		if (!id || !class_has(g, &g->elems[g->f[id].pos], cp))
			continue;
		const uint32_t *fl = follow(g, id, &nf);
		for (uint32_t k = 0; k < nf; k++)
			set_add(s, fl[k]);
		if (s->n > MAX_STACKS)
			g->over = 1;
		if (g->over)
			return -1;
	}
	if (!s->n)
		return 0;
	state_reserve(out, s->n);
	memcpy(out->set, s->v, s->n * sizeof(*s->v));
	out->n = s->n;
	out->cp = 0;
	out->need = 0;
	return 1;
}

int
llm_grammar_accept(struct llm_grammar *g, struct llm_grammar_state *st, const char *p, size_t n)
{
	struct llm_grammar_state a = {0}, b = {0};
	int ok = 1;
	if (g->over)
		return too_ambiguous(g);
	llm_grammar_state_copy(&a, st);
	for (size_t i = 0; i < n && ok > 0; i++) {
		ok = step_byte(g, &a, (unsigned char)p[i], &b);
		struct llm_grammar_state t = a;
		a = b;
		b = t;
	}
	if (ok > 0) {
		struct llm_grammar_state t = *st;
		*st = a;
		a = t;
	}
	llm_grammar_state_free(&a);
	llm_grammar_state_free(&b);
	return ok < 0 ? too_ambiguous(g) : ok;
}

int
llm_grammar_complete(const struct llm_grammar_state *st)
{
	if (st->need)
		return 0;
	for (size_t i = 0; i < st->n; i++)
		if (!st->set[i])
			return 1;
	return 0;
}

int
llm_grammar_done(const struct llm_grammar_state *st)
{
	return st->need == 0 && st->n == 1 && st->set[0] == 0;
}

/* ---- the vocabulary and the mask -------------------------------------- */

struct llm_grammar_vocab {
	size_t n;        /* tokens */
	size_t nsorted;  /* of them text, not empty */
	uint32_t *order; /* (nsorted) ids by their bytes */
	uint32_t *lcp;   /* (nsorted) bytes shared with the one before */
	size_t *off;     /* (n + 1) token i's bytes: text[off[i] .. off[i + 1]) */
	char *text;
	size_t maxlen;
};

static const struct llm_grammar_vocab *sort_vocab;

static int
cmp_tok(const void *a, const void *b)
{
	const struct llm_grammar_vocab *v = sort_vocab;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	size_t lx = v->off[x + 1] - v->off[x], ly = v->off[y + 1] - v->off[y];
	int c = memcmp(v->text + v->off[x], v->text + v->off[y], lx < ly ? lx : ly);
	if (c)
		return c;
	return lx < ly ? -1 : lx > ly;
}

struct llm_grammar_vocab *
llm_grammar_vocab_new(size_t n, const char *const *bytes, const size_t *lens)
{
	struct llm_grammar_vocab *v = llm_xcalloc(1, sizeof(*v));
	size_t total = 0;
	v->n = n;
	v->off = llm_xcalloc(n + 1, sizeof(*v->off));
	for (size_t i = 0; i < n; i++)
		total += bytes[i] ? lens[i] : 0;
	v->text = llm_xmalloc(total + 1);
	v->order = llm_xreallocarray(NULL, n + 1, sizeof(*v->order));
	v->lcp = llm_xreallocarray(NULL, n + 1, sizeof(*v->lcp));
	total = 0;
	for (size_t i = 0; i < n; i++) {
		v->off[i] = total;
		if (bytes[i] && lens[i]) {
			memcpy(v->text + total, bytes[i], lens[i]);
			total += lens[i];
			v->order[v->nsorted++] = (uint32_t)i;
			if (lens[i] > v->maxlen)
				v->maxlen = lens[i];
		}
	}
	v->off[n] = total;
	/* qsort has no context argument in C11: a static, under the caller's lock */
	sort_vocab = v;
	qsort(v->order, v->nsorted, sizeof(*v->order), cmp_tok);
	sort_vocab = NULL;
	for (size_t k = 0; k < v->nsorted; k++) {
		uint32_t l = 0;
		if (k > 0) {
			uint32_t x = v->order[k - 1], y = v->order[k];
			size_t lx = v->off[x + 1] - v->off[x], ly = v->off[y + 1] - v->off[y];
			while (l < lx && l < ly && v->text[v->off[x] + l] == v->text[v->off[y] + l])
				l++;
		}
		v->lcp[k] = l;
	}
	return v;
}

void
llm_grammar_vocab_free(struct llm_grammar_vocab *v)
{
	if (!v)
		return;
	free(v->order);
	free(v->lcp);
	free(v->off);
	free(v->text);
	free(v);
}

const char *
llm_grammar_vocab_token(const struct llm_grammar_vocab *v, size_t id, size_t *len)
{
	if (id >= v->n || v->off[id + 1] == v->off[id])
		return NULL;
	*len = v->off[id + 1] - v->off[id];
	return v->text + v->off[id];
}

/* The tokens in byte order: each keeps the states of the prefix it shares
 * with the one before, so a prefix is followed once, and a prefix that
 * failed fails every token that starts with it at no cost. */
int64_t
llm_grammar_mask(struct llm_grammar *g, const struct llm_grammar_state *st, const struct llm_grammar_vocab *v,
    uint8_t *allowed)
{
	size_t valid = 0, dead = SIZE_MAX;
	int64_t count = 0;
	if (g->over)
		return too_ambiguous(g);
	if (g->ndepth < v->maxlen + 1) {
		g->depth = llm_xreallocarray(g->depth, v->maxlen + 1, sizeof(*g->depth));
		memset(g->depth + g->ndepth, 0, (v->maxlen + 1 - g->ndepth) * sizeof(*g->depth));
		g->ndepth = v->maxlen + 1;
	}
	memset(allowed, 0, v->n);
	llm_grammar_state_copy(&g->depth[0], st);
	for (size_t k = 0; k < v->nsorted; k++) {
		uint32_t t = v->order[k];
		size_t l = v->lcp[k], len = v->off[t + 1] - v->off[t];
		const unsigned char *p = (const unsigned char *)v->text + v->off[t];
		if (dead != SIZE_MAX && l >= dead)
			continue;
		dead = SIZE_MAX;
		size_t d = valid < l ? valid : l;
		while (d < len) {
			int r = step_byte(g, &g->depth[d], p[d], &g->depth[d + 1]);
			if (r < 0)
				return too_ambiguous(g);
			if (!r) {
				dead = d + 1;
				break;
			}
			d++;
		}
		valid = d;
		if (dead == SIZE_MAX) {
			allowed[t] = 1;
			count++;
		}
	}
	return count;
}
