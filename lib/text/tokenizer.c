/* tokenizer.c: the exact Hugging Face tokenizer's pipeline (see
 * tokenizer.h): encoding, decoding and the lookups.  tokjson.c fills it
 * from a tokenizer.json, tokbuild.c from GGUF's arrays; tokenizer_int.h
 * holds what they share, hash.h the tables.
 *
 * Every stage follows the Rust `tokenizers` crate step for step, since
 * exactness is the point: added tokens are cut out of the raw text first
 * (leftmost-longest, like its Aho-Corasick automaton), each remaining piece
 * is normalized, cut again on the "normalized" added tokens, split by the
 * pre-tokenizers, and each final piece ("word") goes through BPE.  BPE is
 * the crate's merge_all: a doubly linked list of symbols and a binary heap
 * of candidate merges ordered by (rank, position), stale entries skipped
 * when popped, so a word of n characters costs O(n log n).  Words are
 * cached.  Regexes are PCRE2 with UTF and UCP (the crate uses Oniguruma;
 * the patterns in use mean the same in both); Unicode normalization and
 * character classes come from utf8proc.
 *
 * Strings inside one piece list live in one growable buffer and are
 * addressed by offset, so that growing it never leaves a dangling pointer. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer_int.h"

#define CACHE_MAX_WORD 256        /* longer words are not cached */
#define CACHE_MAX_ENTRIES 16384   /* the cache is emptied when it reaches this */

/* Rust's char::is_whitespace (the White_Space property). */
static int
is_space(uint32_t c)
{
	return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	    (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* Rust's char::is_numeric: general categories Nd, Nl, No. */
static int
is_numeric(uint32_t c)
{
	if (c < 0x80)
		return c >= '0' && c <= '9';
	utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
	return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

/* A word character as Unicode regexes mean \w (UTS #18: Alphabetic, marks,
 * decimal digits, connector punctuation, joiners); Alphabetic is taken as
 * letters, letter numbers and the circled and squared Latin letters. */
static int
is_word(uint32_t c)
{
	if (c < 0x80)
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
	if (c == 0x200c || c == 0x200d || (c >= 0x24b6 && c <= 0x24e9) || (c >= 0x1f130 && c <= 0x1f149) ||
	    (c >= 0x1f150 && c <= 0x1f169) || (c >= 0x1f170 && c <= 0x1f189))
		return 1;
	switch (utf8proc_category((utf8proc_int32_t)c)) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC:
	case UTF8PROC_CATEGORY_ME:
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_PC:
		return 1;
	default:
		return 0;
	}
}

/* ---- the GPT-2 byte-level map ---- */

static uint32_t byte_char[256];
static int16_t char_byte[324]; /* code points below 324 only */

static void
bytelevel_init(void)
{
	if (byte_char['!'])
		return;
	uint32_t n = 0;
	for (int i = 0; i < 324; i++)
		char_byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
		uint32_t c = printable ? (uint32_t)b : 256 + n++;
		byte_char[b] = c;
		char_byte[c] = (int16_t)b;
	}
}

uint32_t
llm_bytelevel_char(uint8_t b)
{
	bytelevel_init();
	return byte_char[b];
}

int
llm_bytelevel_byte(uint32_t cp)
{
	bytelevel_init();
	return cp < 324 ? char_byte[cp] : -1;
}

/* ---- growable vectors ---- */

static inline void
ivec_push(struct ivec *a, int32_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = llm_xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	a->v[a->n++] = x;
}

static inline void
mvec_push(struct mvec *a, size_t s, size_t e, int m)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = llm_xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	a->v[a->n++] = (struct mat){s, e, m};
}

static void
pl_reset(struct plist *p)
{
	p->b.len = 0;
	p->n = 0;
}

static void
pl_add(struct plist *p, const char *s, size_t len, int32_t id, int start)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->v = llm_xreallocarray(p->v, p->cap, sizeof(*p->v));
	}
	p->v[p->n++] = (struct span){p->b.len, len, id, start, 0};
	llm_buf_add(&p->b, len ? s : "", len); /* s may be NULL when len is 0 */
}

static void
pl_free(struct plist *p)
{
	llm_buf_free(&p->b);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/* ---- patterns ---- */

/* The escapes that Oniguruma (the crate's regex engine, Ruby syntax) and
 * PCRE2 10.42 with UCP read differently, spelled out as Oniguruma has them:
 * \s is 0009-000D, 0085 and Z (PCRE2 adds U+180E), \w is is_word() above
 * (PCRE2 has L, N and '_'), \h is a hexadecimal digit and \v the vertical
 * tab (PCRE2: horizontal and vertical space). */
#define ONIG_SPACE "\\t-\\r\\x{85}\\p{Z}"
#define ONIG_WORD "\\p{L}\\p{M}\\p{Nd}\\p{Nl}\\p{Pc}\\x{200c}\\x{200d}\\x{24b6}-\\x{24e9}" \
	"\\x{1f130}-\\x{1f149}\\x{1f150}-\\x{1f169}\\x{1f170}-\\x{1f189}"

#define ONIG_HEX "0-9a-fA-F"

/* Rewrite \s, \S, \w, \W, \h, \H, \v of a pattern into those classes.
 * Inside a bracket class the negated ones cannot be rewritten (PCRE2 has no
 * class subtraction) and stay as they are. */
static void
onig_classes(const char *p, size_t n, struct llm_buf *out)
{
	int in_class = 0;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c == '\\' && i + 1 < n) {
			char e = p[++i];
			const char *cls = e == 's' || e == 'S' ? ONIG_SPACE :
			    e == 'w' || e == 'W'               ? ONIG_WORD :
			    e == 'h' || e == 'H'               ? ONIG_HEX :
			    e == 'v'                           ? "\\x{0b}" :
								 NULL;
			if (cls && in_class && (e == 's' || e == 'w' || e == 'h' || e == 'v')) {
				llm_buf_puts(out, cls);
			} else if (cls && !in_class) {
				llm_buf_puts(out, e == 'S' || e == 'W' || e == 'H' ? "[^" : "[");
				llm_buf_puts(out, cls);
				llm_buf_puts(out, "]");
			} else {
				llm_buf_add(out, p + i - 1, 2);
			}
			continue;
		}
		if (!in_class && c == '[') {
			in_class = 1;
			llm_buf_add(out, p + i, 1);
			if (i + 1 < n && p[i + 1] == '^')
				llm_buf_add(out, p + ++i, 1);
			if (i + 1 < n && p[i + 1] == ']') /* a leading ']' is literal */
				llm_buf_add(out, p + ++i, 1);
			continue;
		}
		if (in_class && c == '[' && i + 1 < n && p[i + 1] == ':') { /* [:alpha:] */
			const char *e = memmem(p + i + 2, n - i - 2, ":]", 2);
			size_t end = e ? (size_t)(e - p) + 2 : n;
			llm_buf_add(out, p + i, end - i);
			i = end - 1;
			continue;
		}
		if (in_class && c == ']')
			in_class = 0;
		llm_buf_add(out, p + i, 1);
	}
}

int
llm_tok_re_compile(struct regex *r, const char *pat0, size_t len0, const char *name)
{
	int err;
	PCRE2_SIZE at;
	struct llm_buf b = {0};
	onig_classes(pat0, len0, &b);
	llm_buf_add(&b, "", 1);
	const char *pat = b.p;
	size_t len = b.len - 1;
	r->code = pcre2_compile((PCRE2_SPTR)pat, len, PCRE2_UTF | PCRE2_UCP, &err, &at, NULL);
	llm_buf_free(&b);
	if (!r->code) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(err, msg, sizeof(msg));
		return llm_seterr("%s: regex '%.*s': %s", name, (int)len0, pat0, (char *)msg);
	}
	pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE); /* the interpreter serves if JIT fails */
	r->md = pcre2_match_data_create_from_pattern(r->code, NULL);
	return 0;
}

static void
pattern_free(struct pattern *p)
{
	free(p->s);
	if (p->re.md)
		pcre2_match_data_free(p->re.md);
	if (p->re.code)
		pcre2_code_free(p->re.code);
	memset(p, 0, sizeof(*p));
}

/* The matches of a pattern in s and the gaps between them, covering s in
 * order (the crate's Pattern::find_matches). */
static void
find_matches(struct pattern *p, const char *s, size_t n, struct mvec *out)
{
	out->n = 0;
	if (n == 0) {
		mvec_push(out, 0, 0, 0);
		return;
	}
	size_t prev = 0;
	switch (p->kind) {
	case PAT_STRING:
		if (p->len == 0) {
			mvec_push(out, 0, n, 0);
			return;
		}
		for (size_t i = 0; i + p->len <= n;) {
			const char *f = memmem(s + i, n - i, p->s, p->len);
			if (!f)
				break;
			size_t a = (size_t)(f - s);
			if (a > prev)
				mvec_push(out, prev, a, 0);
			mvec_push(out, a, a + p->len, 1);
			prev = i = a + p->len;
		}
		break;
	case PAT_REGEX:
		for (size_t pos = 0; pos <= n;) {
			int rc = pcre2_match(p->re.code, (PCRE2_SPTR)s, n, pos, PCRE2_NO_UTF_CHECK, p->re.md, NULL);
			if (rc < 0) {
				if (rc != PCRE2_ERROR_NOMATCH && !p->re.err)
					p->re.err = rc;
				break;
			}
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->re.md);
			size_t a = ov[0], b = ov[1];
			if (a > prev)
				mvec_push(out, prev, a, 0);
			mvec_push(out, a, b, 1);
			prev = b;
			if (b > a)
				pos = b;
			else if (a < n)
				pos = a + llm_tok_charlen(s + a);
			else
				break;
		}
		break;
	default: /* one match per character that satisfies a predicate */
		for (size_t i = 0; i < n;) {
			uint32_t c;
			size_t l = llm_tok_dec(s + i, &c);
			int hit = p->kind == PAT_CHAR ? c == p->ch :
			    p->kind == PAT_NUMERIC    ? is_numeric(c) :
							is_space(c);
			if (hit) {
				if (i > prev)
					mvec_push(out, prev, i, 0);
				mvec_push(out, i, i + l, 1);
				prev = i + l;
			}
			i += l;
		}
		break;
	}
	if (prev < n)
		mvec_push(out, prev, n, 0);
}

/* Turn matches into pieces by a split behaviour (NormalizedString::split);
 * afterwards m means "remove". */
static void
apply_behavior(struct mvec *mv, int behavior)
{
	size_t k = 0;
	int prev = 0;
	switch (behavior) {
	case B_REMOVED:
		return;
	case B_ISOLATED:
		for (size_t i = 0; i < mv->n; i++)
			mv->v[i].m = 0;
		return;
	case B_CONTIGUOUS:
		for (size_t i = 0; i < mv->n; i++) {
			struct mat x = mv->v[i];
			if (x.m == prev && k > 0)
				mv->v[k - 1].b = x.b;
			else
				mv->v[k++] = (struct mat){x.a, x.b, 0};
			prev = x.m;
		}
		break;
	case B_MERGED_PREV:
		for (size_t i = 0; i < mv->n; i++) {
			struct mat x = mv->v[i];
			if (x.m && !prev && k > 0)
				mv->v[k - 1].b = x.b;
			else
				mv->v[k++] = (struct mat){x.a, x.b, 0};
			prev = x.m;
		}
		break;
	case B_MERGED_NEXT: {
		/* Walk backwards, merging each match into the piece after it. */
		size_t top = mv->n; /* pieces are built at the end, from the right */
		for (size_t i = mv->n; i-- > 0;) {
			struct mat x = mv->v[i];
			if (x.m && !prev && top < mv->n)
				mv->v[top].a = x.a;
			else
				mv->v[--top] = (struct mat){x.a, x.b, 0};
			prev = x.m;
		}
		memmove(mv->v, mv->v + top, (mv->n - top) * sizeof(*mv->v));
		k = mv->n - top;
		break;
	}
	}
	mv->n = k;
}

/* ---- the tokenizer ---- */

struct llm_tokenizer *
llm_tok_new(const char *name)
{
	struct llm_tokenizer *t = llm_xcalloc(1, sizeof(*t));
	t->name = llm_xstrdup(name);
	t->unk_id = -1;
	t->bos = t->eos = -1;
	for (int i = 0; i < 256; i++)
		t->byte_tok[i] = -1;
	bytelevel_init();
	return t;
}

static void
steps_free(struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pattern_free(&s[i].pat);
		free(s[i].s);
	}
	free(s);
}

void
llm_tokenizer_free(struct llm_tokenizer *t)
{
	if (!t)
		return;
	free(t->name);
	free(t->warning);
	llm_buf_free(&t->pool);
	free(t->tok_off);
	free(t->tok_len);
	llm_smap_free(&t->vocab);
	llm_pairmap_free(&t->merges);
	free(t->prefix);
	free(t->suffix);
	for (size_t i = 0; i < t->n_added; i++) {
		free(t->added[i].s);
		free(t->added[i].ns);
	}
	free(t->added);
	llm_buf_free(&t->apool);
	llm_smap_free(&t->amap);
	free(t->added_of_id);
	free(t->special);
	free(t->raw_trie.v);
	free(t->norm_trie.v);
	steps_free(t->norm, t->n_norm);
	steps_free(t->pre, t->n_pre);
	steps_free(t->dec, t->n_dec);
	free(t->post_pre);
	free(t->post_post);
	pl_free(&t->pl[0]);
	pl_free(&t->pl[1]);
	llm_buf_free(&t->nb[0]);
	llm_buf_free(&t->nb[1]);
	free(t->mv.v);
	free(t->word.v);
	free(t->syms);
	free(t->heap);
	llm_smap_free(&t->cache);
	llm_buf_free(&t->ckeys);
	free(t->cids.v);
	free(t->cent);
	free(t);
}

struct step *
llm_tok_add_step(struct step **v, size_t *n, int kind)
{
	*v = llm_xreallocarray(*v, *n + 1, sizeof(**v));
	struct step *s = &(*v)[(*n)++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

/* Append nx ids to the list *v of *n (the post-processor's ids). */
void
llm_tok_append_ids(int64_t **v, size_t *n, const int64_t *x, size_t nx)
{
	*v = llm_xreallocarray(*v, *n + nx + 1, sizeof(**v));
	if (nx)
		memcpy(*v + *n, x, nx * sizeof(*x));
	*n += nx;
}

/* ---- model construction ---- */

/* Give the model n ids, all empty. */
void
llm_tok_model_alloc(struct llm_tokenizer *t, size_t n)
{
	t->n_model = n;
	t->tok_off = llm_xmalloc((n ? n : 1) * sizeof(*t->tok_off));
	t->tok_len = llm_xcalloc(n ? n : 1, sizeof(*t->tok_len));
	for (size_t i = 0; i < n; i++)
		t->tok_off[i] = SIZE_MAX;
	llm_smap_init(&t->vocab, n);
}

int
llm_tok_model_set(struct llm_tokenizer *t, int32_t id, const char *s, size_t len)
{
	if (t->tok_off[id] != SIZE_MAX)
		return llm_seterr("%s: model.vocab: '%.*s' and '%s' both have id %d", t->name, (int)len, s,
		    t->pool.p + t->tok_off[id], id);
	size_t off = t->pool.len;
	llm_buf_add(&t->pool, s, len);
	llm_buf_add(&t->pool, "", 1); /* NUL-terminate for token_text */
	t->tok_off[id] = off;
	t->tok_len[id] = (uint32_t)len;
	llm_smap_put(&t->vocab, t->pool.p, off, len, llm_hash_bytes(s, len), id);
	return 0;
}

/* Add merge "left right" of rank r; the parts and their concatenation must
 * be tokens. */
int
llm_tok_model_merge(struct llm_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, uint32_t r)
{
	int32_t ia = llm_tok_model_find(t, a, alen), ib = llm_tok_model_find(t, b, blen);
	if (ia < 0 || ib < 0)
		return llm_seterr("%s: merge %u: token '%.*s' not in the vocabulary", t->name, r,
		    ia < 0 ? (int)alen : (int)blen, ia < 0 ? a : b);
	char small[256];
	size_t n = alen + blen;
	char *cat = n <= sizeof(small) ? small : llm_xmalloc(n);
	memcpy(cat, a, alen);
	memcpy(cat + alen, b, blen);
	int32_t id = llm_tok_model_find(t, cat, n);
	int again = 0;
	if (id < 0)
		llm_seterr("%s: merge %u: '%.*s' not in the vocabulary", t->name, r, (int)n, cat);
	else if ((again = llm_pairmap_put(&t->merges, ia, ib, r, id)))
		t->dup_merges++;
	if (cat != small)
		free(cat);
	return id < 0 ? -1 : again;
}

/* Tables derived from the vocabulary once it is complete. */
void
llm_tok_model_finish(struct llm_tokenizer *t)
{
	char buf[8];
	for (uint32_t c = 0; c < LLM_NELEM(t->small); c++) {
		size_t l = llm_utf8_encode(c, buf);
		t->small[c] = llm_tok_model_find(t, buf, l);
	}
	for (int b = 0; b < 256; b++) {
		snprintf(buf, sizeof(buf), "<0x%02X>", b);
		t->byte_tok[b] = llm_tok_model_find(t, buf, 6);
	}
}

/* ---- added tokens ---- */

static void
trie_add(struct trie *tr, const char *s, size_t len, int32_t term)
{
	if (!tr->n) {
		tr->cap = 64;
		tr->v = llm_xmalloc(tr->cap * sizeof(*tr->v));
		tr->v[0] = (struct tnode){-1, -1, -1, 0};
		tr->n = 1;
	}
	if (!len)
		return;
	tr->first[(uint8_t)s[0]] = 1;
	int32_t node = 0;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)s[i];
		int32_t ch = tr->v[node].child;
		while (ch >= 0 && tr->v[ch].byte != c)
			ch = tr->v[ch].sibling;
		if (ch < 0) {
			if (tr->n == tr->cap) {
				tr->cap *= 2;
				tr->v = llm_xreallocarray(tr->v, tr->cap, sizeof(*tr->v));
			}
			ch = (int32_t)tr->n++;
			tr->v[ch] = (struct tnode){-1, tr->v[node].child, -1, c};
			tr->v[node].child = ch;
		}
		node = ch;
	}
	if (tr->v[node].term < 0) /* the first of equal patterns wins */
		tr->v[node].term = term;
}

/* The longest added token starting at s: its index, length in *len. */
static int32_t
trie_match(const struct trie *tr, const char *s, size_t n, size_t *len)
{
	int32_t node = 0, best = -1;
	for (size_t i = 0; i < n; i++) {
		uint8_t c = (uint8_t)s[i];
		int32_t ch = tr->v[node].child;
		while (ch >= 0 && tr->v[ch].byte != c)
			ch = tr->v[ch].sibling;
		if (ch < 0)
			break;
		node = ch;
		if (tr->v[node].term >= 0) {
			best = tr->v[node].term;
			*len = i + 1;
		}
	}
	return best;
}

static int
ends_with_word(const char *s, size_t n)
{
	if (!n)
		return 0;
	size_t i = n - 1;
	while (i > 0 && ((uint8_t)s[i] & 0xc0) == 0x80)
		i--;
	uint32_t c;
	llm_tok_dec(s + i, &c);
	return is_word(c);
}

/* The text ranges in which special added tokens are not recognized (see
 * llm_tokenizer_encode_plain): all of s, or the ranges plain[0..n) of the
 * raw text, s being the raw text itself. */
struct plain {
	int all;
	const size_t (*r)[2];
	size_t n;
};

static int
overlaps(const struct plain *pl, size_t b, size_t e)
{
	if (!pl)
		return 0;
	if (pl->all)
		return 1;
	for (size_t i = 0; i < pl->n && pl->r[i][0] < e; i++)
		if (pl->r[i][1] > b)
			return 1;
	return 0;
}

/* Cut the added tokens of trie out of s into out (AddedVocabulary::
 * find_matches); start: s begins the original text.  A special token
 * whose match overlaps pl is skipped, as encode_special_tokens does.
 * Pieces of text record their offset in s (their raw offset in the raw
 * pass). */
static void
split_added(struct llm_tokenizer *t, const struct trie *tr, const char *s, size_t n, int start, const struct plain *pl,
    struct plist *out)
{
	size_t done = 0; /* end of the last piece emitted */
	if (tr->n > 1) {
		for (size_t i = 0; i < n;) {
			size_t len = 0;
			int32_t k = tr->first[(uint8_t)s[i]] ? trie_match(tr, s + i, n - i, &len) : -1;
			if (k < 0) {
				i++;
				continue;
			}
			const struct added *a = &t->added[k];
			size_t ms = i, me = i + len;
			i = me;
			if (a->special && overlaps(pl, ms, me))
				continue;
			if (a->single_word) {
				uint32_t c = 0;
				int before = ms > 0 && ends_with_word(s, ms);
				int after = me < n && (llm_tok_dec(s + me, &c), is_word(c));
				if (before || after)
					continue;
			}
			if (a->lstrip) {
				size_t ns = ms;
				while (ns > 0) {
					size_t j = ns - 1;
					uint32_t c;
					while (j > 0 && ((uint8_t)s[j] & 0xc0) == 0x80)
						j--;
					llm_tok_dec(s + j, &c);
					if (!is_space(c))
						break;
					ns = j;
				}
				ms = ns > done ? ns : done;
			}
			if (a->rstrip) {
				uint32_t c;
				while (me < n && (llm_tok_dec(s + me, &c), is_space(c)))
					me += llm_tok_charlen(s + me);
			}
			if (done < ms) {
				pl_add(out, s + done, ms - done, -1, start && done == 0);
				out->v[out->n - 1].raw = done;
			}
			pl_add(out, s + ms, me - ms, a->id, 0);
			done = me;
		}
	}
	if (done < n || n == 0) {
		pl_add(out, s + done, n - done, -1, start && done == 0);
		out->v[out->n - 1].raw = done;
	}
}

/* ---- normalizers ---- */

/* Code points NFC may change in context (see tokenizer_int.h). */
uint8_t *llm_tok_nfc_unsafe;

void
llm_tok_nfc_init(void)
{
	if (llm_tok_nfc_unsafe)
		return;
	uint8_t *u = llm_xcalloc(NFC_TABLE_MAX / 8, 1);
#define SET_UNSAFE(c) (u[(c) >> 3] |= (uint8_t)(1u << ((c) & 7)))
	for (utf8proc_int32_t c = 0x80; c < NFC_TABLE_MAX; c++) {
		const utf8proc_property_t *pr = utf8proc_get_property(c);
		if (pr->combining_class) {
			SET_UNSAFE(c);
			continue;
		}
		/* No canonical decomposition (none, or a compatibility one, and
		 * not a Hangul syllable): utf8proc_decompose_char would give c
		 * itself.  Most code points; skipping them saves most of the
		 * time. */
		if ((pr->decomp_seqindex == UINT16_MAX || pr->decomp_type) && !(c >= 0xac00 && c <= 0xd7a3))
			continue;
		utf8proc_int32_t buf[16];
		int last = 0;
		utf8proc_ssize_t n = utf8proc_decompose_char(c, buf, 16, UTF8PROC_DECOMPOSE, &last);
		if (n == 1 && buf[0] == c)
			continue;
		if (n < 1 || n > 16) {
			SET_UNSAFE(c);
			continue;
		}
		if (buf[n - 1] < NFC_TABLE_MAX)
			SET_UNSAFE(buf[n - 1]);
		n = utf8proc_normalize_utf32(buf, n, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
		if (n != 1 || buf[0] != c)
			SET_UNSAFE(c);
	}
#undef SET_UNSAFE
	llm_tok_nfc_unsafe = u;
}

/* Whether s is certainly in NFC already. */
static int
nfc_quick(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		if ((uint8_t)s[i] < 0x80) {
			i++;
			continue;
		}
		uint32_t c;
		i += llm_tok_dec(s + i, &c);
		if (c >= NFC_TABLE_MAX || llm_tok_nfc_unsafe[c >> 3] >> (c & 7) & 1)
			return 0;
	}
	return 1;
}

/* One normalizer step from s into out.  Returns 1 if the output no longer
 * begins where s began (leading characters removed), 0 otherwise: the
 * crate's Metaspace "first" looks at original offsets. */
static int
normalize_step(const struct step *st, struct pattern *pat, const char *s, size_t n, struct llm_buf *out,
    struct mvec *mv)
{
	int lost = 0;
	out->len = 0;
	switch (st->kind) {
	case N_NFC:
	case N_NFD:
	case N_NFKC:
	case N_NFKD: {
		size_t i = 0;
		while (i < n && (uint8_t)s[i] < 0x80)
			i++;
		if (i == n || (st->kind == N_NFC && nfc_quick(s + i, n - i))) { /* ASCII is in every form */
			llm_buf_add(out, s, n);
			return 0;
		}
		int opt = UTF8PROC_STABLE;
		opt |= st->kind == N_NFC || st->kind == N_NFKC ? UTF8PROC_COMPOSE : UTF8PROC_DECOMPOSE;
		if (st->kind == N_NFKC || st->kind == N_NFKD)
			opt |= UTF8PROC_COMPAT;
		utf8proc_uint8_t *r = NULL;
		utf8proc_ssize_t rl = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &r,
		    (utf8proc_option_t)opt);
		if (rl < 0) /* cannot happen on valid UTF-8; keep the text */
			llm_buf_add(out, s, n);
		else
			llm_buf_add(out, r, (size_t)rl);
		free(r);
		return 0;
	}
	case N_LOWER:
		for (size_t i = 0; i < n;) {
			uint32_t c;
			char buf[4];
			i += llm_tok_dec(s + i, &c);
			if (c == 0x130) { /* the one full lowercase mapping of two characters */
				llm_buf_add(out, "i\xcc\x87", 3);
				continue;
			}
			c = (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
			llm_buf_add(out, buf, llm_utf8_encode(c, buf));
		}
		return 0;
	case N_STRIP_ACCENTS:
		for (size_t i = 0; i < n;) {
			uint32_t c;
			size_t l = llm_tok_dec(s + i, &c);
			utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
			if (k != UTF8PROC_CATEGORY_MN && k != UTF8PROC_CATEGORY_MC && k != UTF8PROC_CATEGORY_ME)
				llm_buf_add(out, s + i, l);
			else if (out->len == 0)
				lost = 1;
			i += l;
		}
		return lost;
	case N_PREPEND:
		if (n)
			llm_buf_add(out, st->s, st->len);
		llm_buf_add(out, s, n);
		return 0;
	case N_STRIP: {
		size_t a = 0, b = n;
		uint32_t c;
		if (st->left)
			while (a < n && (llm_tok_dec(s + a, &c), is_space(c)))
				a += llm_tok_charlen(s + a);
		if (st->right)
			while (b > a) {
				size_t j = b - 1;
				while (j > a && ((uint8_t)s[j] & 0xc0) == 0x80)
					j--;
				llm_tok_dec(s + j, &c);
				if (!is_space(c))
					break;
				b = j;
			}
		llm_buf_add(out, s + a, b - a);
		return a > 0;
	}
	case N_REPLACE:
		find_matches(pat, s, n, mv);
		for (size_t i = 0; i < mv->n; i++) {
			if (mv->v[i].m)
				llm_buf_add(out, st->s, st->len);
			else
				llm_buf_add(out, s + mv->v[i].a, mv->v[i].b - mv->v[i].a);
		}
		return mv->n && mv->v[0].m && st->len == 0;
	}
	return 0;
}

/* Run the normalizer over s; the result is in one of t->nb.  *start is
 * cleared when the result no longer begins at the start of s. */
static struct llm_buf *
normalize(struct llm_tokenizer *t, const char *s, size_t n, int *start)
{
	struct llm_buf *cur = NULL;
	for (size_t i = 0; i < t->n_norm; i++) {
		struct llm_buf *o = cur == &t->nb[0] ? &t->nb[1] : &t->nb[0];
		const char *in = cur ? (cur->p ? cur->p : "") : s; /* a step may leave an unallocated buffer */
		if (normalize_step(&t->norm[i], &t->norm[i].pat, in, cur ? cur->len : n, o, &t->mv))
			*start = 0;
		cur = o;
	}
	if (!cur) {
		cur = &t->nb[0];
		cur->len = 0;
		llm_buf_add(cur, s, n);
	}
	return cur;
}

/* ---- pre-tokenizers ---- */

/* Split piece s by pattern and behaviour into out (empty pieces dropped). */
static void
split_piece(struct llm_tokenizer *t, struct pattern *pat, int behavior, int invert, const char *s, size_t n, int start,
    struct plist *out)
{
	find_matches(pat, s, n, &t->mv);
	if (invert)
		for (size_t i = 0; i < t->mv.n; i++)
			t->mv.v[i].m = !t->mv.v[i].m;
	apply_behavior(&t->mv, behavior);
	for (size_t i = 0; i < t->mv.n; i++) {
		struct mat x = t->mv.v[i];
		if (!x.m && x.b > x.a)
			pl_add(out, s + x.a, x.b - x.a, -1, start && x.a == 0);
	}
}

static void
pretok_piece(struct llm_tokenizer *t, struct step *st, const char *s, size_t n, int start, struct plist *out)
{
	struct llm_buf *tmp = &t->nb[0];
	switch (st->kind) {
	case P_SPLIT:
		split_piece(t, &st->pat, st->behavior, st->invert, s, n, start, out);
		return;
	case P_DIGITS:
		split_piece(t, &st->pat, st->use_regex ? B_ISOLATED : B_CONTIGUOUS, 0, s, n, start, out);
		return;
	case P_WHITESPACE:
		split_piece(t, &st->pat, B_REMOVED, 1, s, n, start, out);
		return;
	case P_WSSPLIT:
		split_piece(t, &st->pat, B_REMOVED, 0, s, n, start, out);
		return;
	case P_METASPACE: {
		tmp->len = 0;
		if (n && s[0] != ' ' && (st->prefix == PREPEND_ALWAYS || (st->prefix == PREPEND_FIRST && start)) &&
		    !(n >= st->len && memcmp(s, st->s, st->len) == 0))
			llm_buf_add(tmp, st->s, st->len);
		for (size_t i = 0; i < n; i++) {
			if (s[i] == ' ')
				llm_buf_add(tmp, st->s, st->len);
			else
				llm_buf_add(tmp, s + i, 1);
		}
		if (st->use_regex) {
			split_piece(t, &st->pat, B_MERGED_NEXT, 0, tmp->p, tmp->len, start, out);
		} else if (tmp->len) {
			pl_add(out, tmp->p, tmp->len, -1, start);
		}
		return;
	}
	case P_BYTELEVEL: {
		/* Prefix space, optional GPT-2 split, then bytes to characters. */
		tmp->len = 0;
		if (st->prefix && n && s[0] != ' ')
			llm_buf_add(tmp, " ", 1);
		llm_buf_add(tmp, s, n);
		size_t first = out->n;
		if (st->use_regex)
			split_piece(t, &st->pat, B_ISOLATED, 0, tmp->p, tmp->len, start, out);
		else if (tmp->len)
			pl_add(out, tmp->p, tmp->len, -1, start);
		/* Rewrite the new pieces in place at the end of the buffer. */
		for (size_t k = first; k < out->n; k++) {
			struct span *sp = &out->v[k];
			size_t off = out->b.len;
			for (size_t i = 0; i < sp->len; i++) {
				char buf[2];
				uint32_t c = byte_char[(uint8_t)out->b.p[sp->off + i]];
				llm_buf_add(&out->b, buf, llm_utf8_encode(c, buf));
			}
			sp->len = out->b.len - off;
			sp->off = off;
		}
		return;
	}
	}
}

/* ---- BPE ---- */

static void
heap_push(struct llm_tokenizer *t, size_t *n, struct hent e)
{
	if (*n == t->heap_cap) {
		t->heap_cap = t->heap_cap ? t->heap_cap * 2 : 256;
		t->heap = llm_xreallocarray(t->heap, t->heap_cap, sizeof(*t->heap));
	}
	struct hent *h = t->heap;
	size_t i = (*n)++;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (h[p].rank < e.rank || (h[p].rank == e.rank && h[p].pos < e.pos))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = e;
}

static struct hent
heap_pop(struct llm_tokenizer *t, size_t *n)
{
	struct hent *h = t->heap, top = h[0], last = h[--(*n)];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n &&
		    (h[c + 1].rank < h[c].rank || (h[c + 1].rank == h[c].rank && h[c + 1].pos < h[c].pos)))
			c++;
		if (last.rank < h[c].rank || (last.rank == h[c].rank && last.pos < h[c].pos))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

static void
sym_add(struct llm_tokenizer *t, size_t *n, int32_t id, uint32_t len)
{
	if (*n == t->syms_cap) {
		t->syms_cap = t->syms_cap ? t->syms_cap * 2 : 256;
		t->syms = llm_xreallocarray(t->syms, t->syms_cap, sizeof(*t->syms));
	}
	int32_t i = (int32_t)*n;
	t->syms[i] = (struct sym){id, i - 1, i + 1, len};
	(*n)++;
}

/* Character lookup with the continuing-subword prefix / end-of-word suffix. */
static int32_t
char_id(struct llm_tokenizer *t, const char *s, size_t l, int first, int last)
{
	if (!t->prefix && !t->suffix) {
		uint32_t c;
		if (l <= 2 && (llm_tok_dec(s, &c), c < LLM_NELEM(t->small)))
			return t->small[c];
		return llm_tok_model_find(t, s, l);
	}
	struct llm_buf *b = &t->nb[1];
	b->len = 0;
	if (!first && t->prefix)
		llm_buf_puts(b, t->prefix);
	llm_buf_add(b, s, l);
	if (last && t->suffix)
		llm_buf_puts(b, t->suffix);
	return llm_tok_model_find(t, b->p, b->len);
}

/* BPE of one word into t->word (Model::tokenize of the BPE model). */
static void
bpe(struct llm_tokenizer *t, const char *w, size_t n)
{
	t->word.n = 0;
	if (!n)
		return;
	if (t->ignore_merges) {
		int32_t id = llm_tok_model_find(t, w, n);
		if (id >= 0) {
			ivec_push(&t->word, id);
			return;
		}
	}
	size_t ns = 0;
	int32_t unk = -1;
	uint32_t unk_len = 0;
	for (size_t i = 0; i < n;) {
		size_t l = llm_tok_charlen(w + i);
		int32_t id = char_id(t, w + i, l, i == 0, i + l == n);
		if (id >= 0) {
			if (unk >= 0) {
				sym_add(t, &ns, unk, unk_len);
				unk = -1;
			}
			sym_add(t, &ns, id, (uint32_t)l);
			i += l;
			continue;
		}
		if (t->byte_fallback) {
			/* The crate looks up the bytes of the (prefixed) string. */
			struct llm_buf *b = &t->nb[1];
			const char *bs = w + i;
			size_t bl = l;
			if ((i > 0 && t->prefix) || (i + l == n && t->suffix)) {
				b->len = 0;
				if (i > 0 && t->prefix)
					llm_buf_puts(b, t->prefix);
				llm_buf_add(b, w + i, l);
				if (i + l == n && t->suffix)
					llm_buf_puts(b, t->suffix);
				bs = b->p;
				bl = b->len;
			}
			size_t k = 0;
			while (k < bl && t->byte_tok[(uint8_t)bs[k]] >= 0)
				k++;
			if (k == bl) {
				for (k = 0; k < bl; k++)
					sym_add(t, &ns, t->byte_tok[(uint8_t)bs[k]], 1);
				i += l;
				continue;
			}
		}
		if (t->unk_id >= 0) {
			if (unk >= 0 && t->fuse_unk) {
				unk_len += (uint32_t)l;
			} else {
				if (unk >= 0)
					sym_add(t, &ns, unk, unk_len);
				unk = t->unk_id;
				unk_len = (uint32_t)l;
			}
		}
		i += l;
	}
	if (unk >= 0)
		sym_add(t, &ns, unk, unk_len);
	if (!ns)
		return;
	t->syms[ns - 1].next = -1;

	/* merge_all */
	struct sym *sy;
	size_t nh = 0;
	for (size_t i = 0; i + 1 < ns; i++) {
		uint32_t r;
		int32_t id;
		if (llm_pairmap_get(&t->merges, t->syms[i].id, t->syms[i + 1].id, &r, &id))
			heap_push(t, &nh, (struct hent){r, (uint32_t)i, id});
	}
	sy = t->syms;
	while (nh) {
		struct hent top = heap_pop(t, &nh);
		struct sym *cur = &sy[top.pos];
		if (cur->len == 0 || cur->next < 0)
			continue;
		struct sym right = sy[cur->next];
		uint32_t r;
		int32_t id;
		if (!llm_pairmap_get(&t->merges, cur->id, right.id, &r, &id) || id != top.id)
			continue;
		sy[cur->next].len = 0;
		cur->id = top.id;
		cur->len += right.len;
		cur->next = right.next;
		if (right.next >= 0)
			sy[right.next].prev = (int32_t)top.pos;
		if (cur->prev >= 0 && llm_pairmap_get(&t->merges, sy[cur->prev].id, cur->id, &r, &id))
			heap_push(t, &nh, (struct hent){r, (uint32_t)cur->prev, id});
		if (cur->next >= 0 && llm_pairmap_get(&t->merges, cur->id, sy[cur->next].id, &r, &id))
			heap_push(t, &nh, (struct hent){r, top.pos, id});
	}
	for (int32_t i = 0; i >= 0; i = sy[i].next)
		ivec_push(&t->word, sy[i].id);
}

/* BPE through the word cache, appending to out. */
static void
bpe_cached(struct llm_tokenizer *t, const char *w, size_t n, int64_t **ids, size_t *nids, size_t *cap)
{
	uint64_t h = 0;
	const int32_t *v;
	size_t nv;
	int32_t k = -1;

	if (n <= CACHE_MAX_WORD) {
		h = llm_hash_bytes(w, n);
		k = llm_smap_get(&t->cache, t->ckeys.p, w, n, h);
	}
	if (k >= 0) {
		v = t->cids.v + t->cent[k].ids;
		nv = t->cent[k].n;
	} else {
		bpe(t, w, n);
		v = t->word.v;
		nv = t->word.n;
		if (n <= CACHE_MAX_WORD) {
			if (t->n_cent >= CACHE_MAX_ENTRIES || !t->cache.cap) {
				llm_smap_free(&t->cache);
				llm_smap_init(&t->cache, CACHE_MAX_ENTRIES);
				t->ckeys.len = 0;
				t->cids.n = 0;
				t->n_cent = 0;
			}
			if (t->n_cent == t->cap_cent) {
				t->cap_cent = t->cap_cent ? t->cap_cent * 2 : 1024;
				t->cent = llm_xreallocarray(t->cent, t->cap_cent, sizeof(*t->cent));
			}
			size_t off = t->ckeys.len;
			llm_buf_add(&t->ckeys, w, n);
			t->cent[t->n_cent] = (struct centry){t->cids.n, (uint32_t)nv};
			for (size_t i = 0; i < nv; i++)
				ivec_push(&t->cids, v[i]);
			llm_smap_put(&t->cache, t->ckeys.p, off, n, h, (int32_t)t->n_cent);
			t->n_cent++;
			v = t->word.v;
		}
	}
	if (*nids + nv > *cap) {
		while (*nids + nv > *cap)
			*cap = *cap ? *cap * 2 : 64;
		*ids = llm_xreallocarray(*ids, *cap, sizeof(**ids));
	}
	for (size_t i = 0; i < nv; i++)
		(*ids)[(*nids)++] = v[i];
}

/* ---- encoding ---- */

static void
push_ids(int64_t **ids, size_t *n, size_t *cap, const int64_t *v, size_t nv)
{
	if (!nv)
		return;
	if (*n + nv > *cap) {
		while (*n + nv > *cap)
			*cap = *cap ? *cap * 2 : 64;
		*ids = llm_xreallocarray(*ids, *cap, sizeof(**ids));
	}
	memcpy(*ids + *n, v, nv * sizeof(*v));
	*n += nv;
}

/* Whether a regex failed to match (rather than found no match) since the
 * last call; the message names the error. */
static int
regex_failed(struct llm_tokenizer *t)
{
	struct regex *bad = NULL;
	for (size_t k = 0; k < t->n_norm; k++)
		if (t->norm[k].pat.re.err)
			bad = &t->norm[k].pat.re;
	for (size_t k = 0; k < t->n_pre; k++)
		if (t->pre[k].pat.re.err)
			bad = &t->pre[k].pat.re;
	if (!bad)
		return 0;
	PCRE2_UCHAR msg[256];
	pcre2_get_error_message(bad->err, msg, sizeof(msg));
	llm_seterr("%s: regex matching failed: %s", t->name, (char *)msg);
	for (size_t k = 0; k < t->n_norm; k++)
		t->norm[k].pat.re.err = 0;
	for (size_t k = 0; k < t->n_pre; k++)
		t->pre[k].pat.re.err = 0;
	return 1;
}

/* The normalized pass over a piece of raw text that overlaps plain
 * ranges: each part inside or outside them is normalized and cut on its
 * own, special tokens skipped inside, and the text on the two sides of a
 * part boundary joined again, so that the pre-tokenizers see what they
 * would see without the ranges (exact for normalizers that work character
 * by character, as the Replace, Prepend and Lowercase of SentencePiece
 * tokenizers do). */
static void
norm_plain(struct llm_tokenizer *t, const char *text, struct span sp, const struct plain *pl, struct plist *b)
{
	static const struct plain all = {1, NULL, 0};
	size_t x = sp.raw, end = sp.raw + sp.len, piece0 = b->n;

	while (x < end) {
		size_t y = end;
		int in = 0;
		for (size_t r = 0; r < pl->n; r++) {
			if (pl->r[r][1] <= x)
				continue;
			in = pl->r[r][0] <= x;
			y = in ? pl->r[r][1] : pl->r[r][0];
			if (y > end)
				y = end;
			break;
		}
		int start = sp.start && x == sp.raw;
		struct llm_buf *nb = normalize(t, text + x, y - x, &start);
		struct llm_buf *o = nb == &t->nb[0] ? &t->nb[1] : &t->nb[0];
		o->len = 0;
		llm_buf_add(o, nb->p ? nb->p : "", nb->len);
		size_t first = b->n;
		split_added(t, &t->norm_trie, o->p ? o->p : "", o->len, start, in ? &all : NULL, b);
		if (first > piece0 && first < b->n && b->v[first - 1].id < 0 && b->v[first].id < 0) {
			/* the two pieces of text are adjacent in b->b */
			b->v[first - 1].len += b->v[first].len;
			memmove(&b->v[first], &b->v[first + 1], (b->n - first - 1) * sizeof(*b->v));
			b->n--;
		}
		x = y;
	}
}

int
llm_tokenizer_encode(struct llm_tokenizer *t, const char *text, size_t len, int add_special, int64_t **ids, size_t *n)
{
	return llm_tokenizer_encode_plain(t, text, len, add_special, NULL, 0, ids, n);
}

int
llm_tokenizer_encode_plain(struct llm_tokenizer *t, const char *text, size_t len, int add_special,
    const size_t (*plain)[2], size_t nplain, int64_t **ids, size_t *n)
{
	const struct plain pr = {0, plain, nplain}, *pl = nplain ? &pr : NULL;

	if (!llm_utf8_valid(text, len))
		return llm_seterr("%s: text is not valid UTF-8", t->name);
	size_t n0 = *n, cap = *n; /* the capacity is unknown: grow from the count */
	struct plist *a = &t->pl[0], *b = &t->pl[1];

	if (add_special)
		push_ids(ids, n, &cap, t->post_pre, t->n_post_pre);

	/* Added tokens in the raw text, then the normalizer on the rest, then
	 * the added tokens that match normalized text. */
	pl_reset(a);
	split_added(t, &t->raw_trie, text, len, 1, pl, a);
	pl_reset(b);
	for (size_t i = 0; i < a->n; i++) {
		struct span sp = a->v[i];
		if (sp.id >= 0) {
			pl_add(b, a->b.p + sp.off, sp.len, sp.id, 0);
			continue;
		}
		if (t->norm_trie.n > 1 && overlaps(pl, sp.raw, sp.raw + sp.len)) {
			norm_plain(t, text, sp, pl, b);
			continue;
		}
		struct llm_buf *nb = normalize(t, a->b.p + sp.off, sp.len, &sp.start);
		if (t->norm_trie.n > 1) {
			/* split_added reads nb while writing b: copy it first. */
			struct llm_buf *o = nb == &t->nb[0] ? &t->nb[1] : &t->nb[0];
			o->len = 0;
			llm_buf_add(o, nb->p, nb->len);
			split_added(t, &t->norm_trie, o->p, o->len, sp.start, NULL, b);
		} else {
			pl_add(b, nb->p, nb->len, -1, sp.start);
		}
	}

	/* Pre-tokenizers, each from one list into the other. */
	for (size_t k = 0; k < t->n_pre; k++) {
		struct plist *in = b, *out = a;
		pl_reset(out);
		for (size_t i = 0; i < in->n; i++) {
			struct span sp = in->v[i];
			if (sp.id >= 0)
				pl_add(out, in->b.p + sp.off, sp.len, sp.id, 0);
			else
				pretok_piece(t, &t->pre[k], in->b.p + sp.off, sp.len, sp.start, out);
		}
		a = in;
		b = out;
	}

	if (regex_failed(t)) {
		*n = n0;
		return -1;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct span sp = b->v[i];
		if (sp.id >= 0) {
			int64_t id = sp.id;
			push_ids(ids, n, &cap, &id, 1);
		} else {
			bpe_cached(t, b->b.p + sp.off, sp.len, ids, n, &cap);
		}
	}
	if (add_special)
		push_ids(ids, n, &cap, t->post_post, t->n_post_post);
	return 0;
}

/* ---- decoding ---- */

const char *
llm_tokenizer_token_text(const struct llm_tokenizer *t, int64_t id, size_t *len)
{
	if (id < 0 || id >= t->n_vocab)
		return NULL;
	int32_t k = t->added_of_id[id];
	if (k >= 0) { /* the crate keeps normalized tokens' content normalized here */
		const struct added *a = &t->added[k];
		if (len)
			*len = a->ns ? a->nlen : a->len;
		return a->ns ? a->ns : a->s;
	}
	if ((size_t)id >= t->n_model || t->tok_off[id] == SIZE_MAX)
		return NULL;
	if (len)
		*len = t->tok_len[id];
	return t->pool.p + t->tok_off[id];
}

/* Whether s is "<0xNN>" (ByteFallback's test); the byte in *b. */
static int
byte_token(const char *s, size_t n, uint8_t *b)
{
	if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
		return 0;
	int v = 0;
	for (int i = 3; i < 5; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' :
		    c >= 'a' && c <= 'f'     ? c - 'a' + 10 :
		    c >= 'A' && c <= 'F'     ? c - 'A' + 10 :
					       -1;
		if (d < 0)
			return 0;
		v = v * 16 + d;
	}
	*b = (uint8_t)v;
	return 1;
}

/* Byte-level characters back to bytes; 0 if some character is not one. */
static int
unbytelevel(const char *s, size_t n, struct llm_buf *out)
{
	size_t start = out->len;
	for (size_t i = 0; i < n;) {
		uint32_t c;
		i += llm_tok_dec(s + i, &c);
		if (c >= 324 || char_byte[c] < 0) {
			out->len = start;
			return 0;
		}
		char b = (char)char_byte[c];
		llm_buf_add(out, &b, 1);
	}
	return 1;
}

static void
decode_step(struct llm_tokenizer *t, struct step *st, struct plist *in, struct plist *out)
{
	struct llm_buf *tmp = &t->nb[0];
	pl_reset(out);
	switch (st->kind) {
	case D_BYTELEVEL:
		tmp->len = 0;
		for (size_t i = 0; i < in->n; i++) {
			const char *s = in->b.p + in->v[i].off;
			if (!unbytelevel(s, in->v[i].len, tmp))
				llm_buf_add(tmp, s, in->v[i].len);
		}
		struct llm_buf *o = &t->nb[1];
		o->len = 0;
		llm_utf8_lossy(tmp->p, tmp->len, o);
		pl_add(out, o->p, o->len, -1, 0);
		return;
	case D_FUSE:
		tmp->len = 0;
		for (size_t i = 0; i < in->n; i++)
			llm_buf_add(tmp, in->b.p + in->v[i].off, in->v[i].len);
		pl_add(out, tmp->p, tmp->len, -1, 0);
		return;
	case D_BYTEFALLBACK: {
		struct llm_buf *bytes = &t->nb[1];
		bytes->len = 0;
		for (size_t i = 0; i <= in->n; i++) {
			uint8_t by;
			const char *s = i < in->n ? in->b.p + in->v[i].off : NULL;
			size_t l = i < in->n ? in->v[i].len : 0;
			if (s && byte_token(s, l, &by)) {
				llm_buf_add(bytes, &by, 1);
				continue;
			}
			if (bytes->len) {
				if (llm_utf8_valid(bytes->p, bytes->len))
					pl_add(out, bytes->p, bytes->len, -1, 0);
				else
					for (size_t k = 0; k < bytes->len; k++)
						pl_add(out, "\xef\xbf\xbd", 3, -1, 0);
				bytes->len = 0;
			}
			if (s)
				pl_add(out, s, l, -1, 0);
		}
		return;
	}
	case D_REPLACE:
		for (size_t i = 0; i < in->n; i++) {
			const char *s = in->b.p + in->v[i].off;
			size_t l = in->v[i].len;
			find_matches(&st->pat, s, l, &t->mv);
			tmp->len = 0;
			for (size_t k = 0; k < t->mv.n; k++) {
				struct mat x = t->mv.v[k];
				if (x.m)
					llm_buf_add(tmp, st->s, st->len);
				else
					llm_buf_add(tmp, s + x.a, x.b - x.a);
			}
			pl_add(out, tmp->p, tmp->len, -1, 0);
		}
		return;
	case D_STRIP:
		for (size_t i = 0; i < in->n; i++) {
			const char *s = in->b.p + in->v[i].off;
			size_t l = in->v[i].len, a = 0, e = l;
			uint32_t c;
			for (int k = 0; k < st->left && a < l; k++) {
				size_t cl = llm_tok_dec(s + a, &c);
				if (c != st->ch)
					break;
				a += cl;
			}
			for (int k = 0; k < st->right && e > a; k++) {
				size_t j = e - 1;
				while (j > a && ((uint8_t)s[j] & 0xc0) == 0x80)
					j--;
				llm_tok_dec(s + j, &c);
				if (c != st->ch)
					break;
				e = j;
			}
			pl_add(out, s + a, e - a, -1, 0);
		}
		return;
	case D_METASPACE:
		for (size_t i = 0; i < in->n; i++) {
			const char *s = in->b.p + in->v[i].off;
			size_t l = in->v[i].len;
			tmp->len = 0;
			for (size_t k = 0; k < l;) {
				uint32_t c;
				size_t cl = llm_tok_dec(s + k, &c);
				if (c != st->ch)
					llm_buf_add(tmp, s + k, cl);
				else if (!(i == 0 && st->prefix != PREPEND_NEVER)) /* the crate drops them all */
					llm_buf_add(tmp, " ", 1);
				k += cl;
			}
			pl_add(out, tmp->p, tmp->len, -1, 0);
		}
		return;
	}
}

void
llm_tokenizer_decode(struct llm_tokenizer *t, const int64_t *ids, size_t n, int skip_special, struct llm_buf *out)
{
	struct plist *a = &t->pl[0], *b = &t->pl[1];
	pl_reset(a);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *s = llm_tokenizer_token_text(t, ids[i], &len);
		if (!s || (skip_special && t->special[ids[i]]))
			continue;
		pl_add(a, s, len, -1, 0);
	}
	if (!t->n_dec) {
		struct llm_buf *j = &t->nb[0];
		j->len = 0;
		for (size_t i = 0; i < a->n; i++) {
			if (i)
				llm_buf_add(j, " ", 1);
			llm_buf_add(j, a->b.p + a->v[i].off, a->v[i].len);
		}
		llm_utf8_lossy(j->p, j->len, out);
		return;
	}
	for (size_t k = 0; k < t->n_dec; k++) {
		decode_step(t, &t->dec[k], a, b);
		struct plist *x = a;
		a = b;
		b = x;
	}
	struct llm_buf *j = &t->nb[0];
	j->len = 0;
	for (size_t i = 0; i < a->n; i++)
		llm_buf_add(j, a->b.p + a->v[i].off, a->v[i].len);
	llm_utf8_lossy(j->p, j->len, out); /* only GGUF strings can be invalid here */
}

int
llm_tokenizer_token_bytes(const struct llm_tokenizer *t, int64_t id, struct llm_buf *out)
{
	size_t len;
	const char *s = llm_tokenizer_token_text(t, id, &len);
	if (!s)
		return -1;
	if (t->added_of_id[id] >= 0) {
		llm_buf_add(out, s, len);
		return 0;
	}
	uint8_t by;
	if (t->has_bytelevel_dec && unbytelevel(s, len, out))
		return 0;
	if (t->has_bytefallback_dec && byte_token(s, len, &by)) {
		llm_buf_add(out, &by, 1);
		return 0;
	}
	/* '\xe2\x96\x81' (or a Metaspace decoder's replacement) becomes a space. */
	uint32_t mark = 0x2581;
	int spm = 0;
	for (size_t k = 0; k < t->n_dec; k++) {
		if (t->dec[k].kind == D_METASPACE) {
			mark = t->dec[k].ch;
			spm = 1;
		} else if (t->dec[k].kind == D_REPLACE && t->dec[k].pat.kind == PAT_STRING && t->dec[k].len == 1 &&
		    t->dec[k].s[0] == ' ') {
			uint32_t c;
			if (llm_utf8_decode(t->dec[k].pat.s, t->dec[k].pat.len, &c) == t->dec[k].pat.len) {
				mark = c;
				spm = 1;
			}
		}
	}
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t l = llm_utf8_decode(s + i, len - i, &c);
		if (!l) {
			llm_buf_add(out, s + i, 1);
			i++;
			continue;
		}
		if (spm && c == mark)
			llm_buf_add(out, " ", 1);
		else
			llm_buf_add(out, s + i, l);
		i += l;
	}
	return 0;
}

/* ---- lookups ---- */

const char *
llm_tokenizer_warning(const struct llm_tokenizer *t)
{
	return t->warning;
}

int64_t
llm_tokenizer_n_vocab(const struct llm_tokenizer *t)
{
	return t->n_vocab;
}

int64_t
llm_tokenizer_find(const struct llm_tokenizer *t, const char *s, size_t len)
{
	int32_t k = llm_smap_get(&t->amap, t->apool.p, s, len, llm_hash_bytes(s, len));
	if (k >= 0)
		return t->added[k].id;
	return llm_tok_model_find(t, s, len);
}

size_t
llm_tokenizer_n_added(const struct llm_tokenizer *t)
{
	return t->n_added;
}

int64_t
llm_tokenizer_added_id(const struct llm_tokenizer *t, size_t i)
{
	return i < t->n_added ? t->added[i].id : -1;
}

int
llm_tokenizer_is_special(const struct llm_tokenizer *t, int64_t id)
{
	return id >= 0 && id < t->n_vocab && t->special[id];
}

int64_t
llm_tokenizer_bos(const struct llm_tokenizer *t)
{
	return t->bos;
}

int64_t
llm_tokenizer_eos(const struct llm_tokenizer *t)
{
	return t->eos;
}

/* ---- assembling the pieces ---- */

/* The added token of content s, or NULL. */
struct added *
llm_tok_find_added(const struct llm_tokenizer *t, const char *s, size_t len)
{
	int32_t k = llm_smap_get(&t->amap, t->apool.p, s, len, llm_hash_bytes(s, len));
	return k >= 0 ? &t->added[k] : NULL;
}

/* Add a token, or update the flags of the one with the same content. */
void
llm_tok_add_added(struct llm_tokenizer *t, const char *s, size_t len, int32_t id, int special, int lstrip, int rstrip,
    int single_word, int normalized)
{
	struct added *a = llm_tok_find_added(t, s, len);
	if (a) {
		special |= a->special;
	} else {
		if (!t->amap.cap)
			llm_smap_init(&t->amap, 64);
		t->added = llm_xreallocarray(t->added, t->n_added + 1, sizeof(*t->added));
		a = &t->added[t->n_added];
		memset(a, 0, sizeof(*a));
		a->s = llm_xmalloc(len + 1);
		memcpy(a->s, s, len);
		a->s[len] = 0;
		a->len = len;
		size_t off = t->apool.len;
		llm_buf_add(&t->apool, s, len);
		llm_smap_put(&t->amap, t->apool.p, off, len, llm_hash_bytes(s, len), (int32_t)t->n_added);
		t->n_added++;
	}
	a->id = id;
	a->special = special;
	a->lstrip = lstrip;
	a->rstrip = rstrip;
	a->single_word = single_word;
	a->normalized = normalized;
}

/* Index the added tokens once the model and the normalizer are known. */
int
llm_tok_finish(struct llm_tokenizer *t)
{
	if (t->dup_merges)
		t->warning = llm_xasprintf("%s: model.merges: %zu merges given twice (the later rank counts, as in "
					   "Hugging Face's tokenizers)",
		    t->name, t->dup_merges);
	int64_t nv = (int64_t)t->n_model;
	for (size_t i = 0; i < t->n_added; i++)
		if (t->added[i].id + 1 > nv)
			nv = t->added[i].id + 1;
	t->n_vocab = nv;
	t->added_of_id = llm_xmalloc((size_t)(nv ? nv : 1) * sizeof(*t->added_of_id));
	t->special = llm_xcalloc((size_t)(nv ? nv : 1), 1);
	for (int64_t i = 0; i < nv; i++)
		t->added_of_id[i] = -1;
	trie_add(&t->raw_trie, "", 0, -1);
	trie_add(&t->norm_trie, "", 0, -1);
	/* The crate's trie lists special tokens first, then the others. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->n_added; i++) {
			struct added *a = &t->added[i];
			if (a->special != !pass || a->len == 0)
				continue;
			if (a->normalized) {
				int start = 1;
				struct llm_buf *nb = normalize(t, a->s, a->len, &start);
				a->ns = llm_xmalloc(nb->len + 1);
				memcpy(a->ns, nb->p, nb->len);
				a->ns[nb->len] = 0;
				a->nlen = nb->len;
				trie_add(&t->norm_trie, a->ns, a->nlen, (int32_t)i);
			} else {
				trie_add(&t->raw_trie, a->s, a->len, (int32_t)i);
			}
		}
	}
	for (size_t i = 0; i < t->n_added; i++) {
		struct added *a = &t->added[i];
		t->added_of_id[a->id] = (int32_t)i;
	}
	/* Decoding skips the ids whose text is a special token's content. */
	for (size_t i = 0; i < t->n_added; i++) {
		struct added *a = &t->added[i];
		if (!a->special)
			continue;
		int32_t m = llm_tok_model_find(t, a->s, a->len);
		if (m >= 0 && t->added_of_id[m] < 0)
			t->special[m] = 1;
		for (size_t k = 0; k < t->n_added; k++) {
			size_t len;
			const char *s = llm_tokenizer_token_text(t, t->added[k].id, &len);
			if (len == a->len && memcmp(s, a->s, len) == 0)
				t->special[t->added[k].id] = 1;
		}
	}
	for (size_t k = 0; k < t->n_dec; k++) {
		if (t->dec[k].kind == D_BYTELEVEL)
			t->has_bytelevel_dec = 1;
		if (t->dec[k].kind == D_BYTEFALLBACK)
			t->has_bytefallback_dec = 1;
	}
	if (t->n_post_pre)
		t->bos = t->post_pre[t->n_post_pre - 1];
	if (t->n_post_post)
		t->eos = t->post_post[0];
	return 0;
}
