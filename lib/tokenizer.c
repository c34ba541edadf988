/* tokenizer.c: the exact Hugging Face tokenizer (see tokenizer.h).
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
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <utf8proc.h>

#include "json.h"
#include "tokenizer.h"
#include "util.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581, SentencePiece's space */
#define CACHE_MAX_WORD 256        /* longer words are not cached */
#define CACHE_MAX_ENTRIES 16384   /* the cache is emptied when it reaches this */

/* ---- UTF-8 ---- */

/* One step of UTF-8 decoding at s (n > 0 bytes).  Returns the length of a
 * valid sequence (code point in *cp), or minus the length of the maximal
 * invalid subpart (the bytes a lossy decoder replaces by one U+FFFD). */
static int
utf8_step(const uint8_t *p, size_t n, uint32_t *cp)
{
	uint8_t b = p[0], lo = 0x80, hi = 0xbf;
	uint32_t c;
	size_t len;

	if (b < 0x80) {
		*cp = b;
		return 1;
	}
	if (b >= 0xc2 && b <= 0xdf) {
		len = 2;
		c = b & 0x1f;
	} else if (b >= 0xe0 && b <= 0xef) {
		len = 3;
		c = b & 0x0f;
		if (b == 0xe0)
			lo = 0xa0;
		else if (b == 0xed)
			hi = 0x9f;
	} else if (b >= 0xf0 && b <= 0xf4) {
		len = 4;
		c = b & 0x07;
		if (b == 0xf0)
			lo = 0x90;
		else if (b == 0xf4)
			hi = 0x8f;
	} else {
		return -1;
	}
	for (size_t i = 1; i < len; i++) {
		if (i >= n || p[i] < lo || p[i] > hi)
			return -(int)i;
		lo = 0x80;
		hi = 0xbf;
		c = c << 6 | (p[i] & 0x3f);
	}
	*cp = c;
	return (int)len;
}

size_t
llm_utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	int r = utf8_step((const uint8_t *)s, n, cp);
	return r > 0 ? (size_t)r : 0;
}

size_t
llm_utf8_encode(uint32_t cp, char *out)
{
	uint8_t *o = (uint8_t *)out;
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | cp >> 6);
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | cp >> 12);
		o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | cp >> 18);
	o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

int
llm_utf8_valid(const char *s, size_t n)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;
	uint32_t cp;

	while (i < n) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		int r = utf8_step(p + i, n - i, &cp);
		if (r < 0)
			return 0;
		i += (size_t)r;
	}
	return 1;
}

void
llm_utf8_lossy(const char *s, size_t n, struct llm_buf *out)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0, run = 0;
	uint32_t cp;

	if (!n)
		return;
	while (i < n) {
		int r = p[i] < 0x80 ? 1 : utf8_step(p + i, n - i, &cp);
		if (r > 0) {
			i += (size_t)r;
			continue;
		}
		llm_buf_add(out, s + run, i - run);
		llm_buf_add(out, "\xef\xbf\xbd", 3);
		i += (size_t)-r;
		run = i;
	}
	llm_buf_add(out, s + run, n - run);
}

/* Decode one code point of text known to be valid. */
static inline size_t
dec(const char *s, uint32_t *cp)
{
	const uint8_t *p = (const uint8_t *)s;
	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] < 0xe0) {
		*cp = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
		return 2;
	}
	if (p[0] < 0xf0) {
		*cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		return 3;
	}
	*cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
		(uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
	return 4;
}

static inline size_t
charlen(const char *s)
{
	uint8_t b = (uint8_t)s[0];
	return b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
}

/* Rust's char::is_whitespace (the White_Space property). */
static int
is_space(uint32_t c)
{
	return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xa0 || c == 0x1680 ||
		(c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
		c == 0x205f || c == 0x3000;
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
	case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME: case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC:
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

/* ---- hashing and maps ---- */

static inline uint64_t
hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
		s += 8;
		n -= 8;
	}
	/* The last n < 8 bytes as a little-endian number, from two
	 * overlapping loads (or three bytes): a byte-wise copy to the stack
	 * and a wide load back costs a store-forwarding stall per key. */
	uint64_t v = 0;
	if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, s, 4);
		memcpy(&hi, s + n - 4, 4);
		v = lo | (uint64_t)hi << (n - 4) * 8;
	} else if (n) {
		v = s[0] | (uint64_t)s[n / 2] << n / 2 * 8 | (uint64_t)s[n - 1] << (n - 1) * 8;
	}
	h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 29;
	return h;
}

/* Memory for a hash table.  One of 2 MiB or more (a large vocabulary's,
 * or its merges') is aligned to and asked to be backed by huge pages:
 * filling and probing it is a cache miss per key anyway, and with 4 KiB
 * pages a TLB miss and, the first time, a page fault as well. */
static void *
table_alloc(size_t n)
{
	size_t huge = (size_t)2 << 20;
	if (n < huge)
		return llm_xmalloc(n);
	n = LLM_ALIGN_UP(n, huge);
	void *p = aligned_alloc(huge, n);
	if (!p)
		llm_fatal("out of memory allocating %zu bytes", n);
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE); /* only a hint: THP may be off */
#endif
	return p;
}

/* String -> int32 map whose keys live in a pool (below 4 GiB) addressed by
 * offset.  Entries are 16 bytes, to keep a 150k-token vocabulary's table
 * small in the cache. */
struct smap {
	struct sment {
		uint32_t h, off, len;
		int32_t val;
	} *e; /* off == UINT32_MAX: empty slot */
	size_t cap, n;
};

static void
smap_init(struct smap *m, size_t want)
{
	size_t cap = 64;
	while (cap < want * 2)
		cap *= 2;
	m->e = table_alloc(cap * sizeof(*m->e));
	for (size_t i = 0; i < cap; i++)
		m->e[i].off = UINT32_MAX;
	m->cap = cap;
	m->n = 0;
}

static void
smap_free(struct smap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

static int32_t
smap_get(const struct smap *m, const char *pool, const char *s, size_t len, uint64_t h64)
{
	if (!m->cap)
		return -1;
	uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		const struct sment *e = &m->e[i];
		if (e->off == UINT32_MAX)
			return -1;
		if (e->h == h && e->len == len && memcmp(pool + e->off, s, len) == 0)
			return e->val;
	}
}

/* Insert (or replace the value of) the key at pool + off; 1 when the key
 * was there already. */
static int
smap_put(struct smap *m, const char *pool, size_t off, size_t len, uint64_t h64, int32_t val)
{
	uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
	if ((m->n + 1) * 2 > m->cap) {
		struct smap g;
		smap_init(&g, m->n + 1);
		for (size_t i = 0; i < m->cap; i++) {
			struct sment *e = &m->e[i];
			if (e->off == UINT32_MAX)
				continue;
			size_t j = e->h & (g.cap - 1);
			while (g.e[j].off != UINT32_MAX)
				j = (j + 1) & (g.cap - 1);
			g.e[j] = *e;
		}
		g.n = m->n;
		free(m->e);
		*m = g;
	}
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct sment *e = &m->e[i];
		if (e->off == UINT32_MAX) {
			e->h = h;
			e->off = (uint32_t)off;
			e->len = (uint32_t)len;
			e->val = val;
			m->n++;
			return 0;
		}
		if (e->h == h && e->len == len && memcmp(pool + e->off, pool + off, len) == 0) {
			e->val = val;
			return 1;
		}
	}
}

/* Start fetching the slot where a lookup of hash h64 begins: bulk loads
 * issue these some keys ahead, so that the cache misses of a large table
 * overlap instead of following one another. */
static inline void
smap_prefetch(const struct smap *m, uint64_t h64)
{
	uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
	__builtin_prefetch(&m->e[h & (m->cap - 1)]);
}

/* (left id, right id) -> (rank, merged id), one 16-byte entry per pair. */
struct pairmap {
	struct pent {
		uint64_t key; /* UINT64_MAX: empty */
		uint32_t rank;
		int32_t id;
	} *e;
	size_t cap, n;
};

static inline uint64_t
pair_hash(uint64_t k)
{
	k *= 0x9e3779b97f4a7c15ULL;
	return k ^ (k >> 31);
}

static void
pairmap_init(struct pairmap *m, size_t want)
{
	size_t cap = 64;
	while (cap < want * 2)
		cap *= 2;
	m->e = table_alloc(cap * sizeof(*m->e));
	for (size_t i = 0; i < cap; i++)
		m->e[i].key = UINT64_MAX;
	m->cap = cap;
	m->n = 0;
}

static void
pairmap_free(struct pairmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* Later entries replace earlier ones, as collecting into a HashMap does. */
static void
pairmap_put(struct pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct pairmap g;
		pairmap_init(&g, m->n + 1);
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].key != UINT64_MAX)
				pairmap_put(&g, (int32_t)(m->e[i].key >> 32), (int32_t)(uint32_t)m->e[i].key,
					m->e[i].rank, m->e[i].id);
		pairmap_free(m);
		*m = g;
	}
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	for (size_t i = pair_hash(k) & mask;; i = (i + 1) & mask) {
		struct pent *e = &m->e[i];
		if (e->key == UINT64_MAX) {
			e->key = k;
			m->n++;
		} else if (e->key != k) {
			continue;
		}
		e->rank = rank;
		e->id = id;
		return;
	}
}

static inline void
pairmap_prefetch(const struct pairmap *m, int32_t a, int32_t b)
{
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	__builtin_prefetch(&m->e[pair_hash(k) & (m->cap - 1)]);
}

static inline int
pairmap_get(const struct pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *id)
{
	if (!m->cap)
		return 0;
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	for (size_t i = pair_hash(k) & mask;; i = (i + 1) & mask) {
		const struct pent *e = &m->e[i];
		if (e->key == k) {
			*rank = e->rank;
			*id = e->id;
			return 1;
		}
		if (e->key == UINT64_MAX)
			return 0;
	}
}

/* ---- growable vectors ---- */

struct ivec {
	int32_t *v;
	size_t n, cap;
};

static inline void
ivec_push(struct ivec *a, int32_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = llm_xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	a->v[a->n++] = x;
}

/* A match or gap of a pattern over a string: bytes [a, b). */
struct mat {
	size_t a, b;
	int m; /* is a match (or, after a split behaviour, is to be removed) */
};

struct mvec {
	struct mat *v;
	size_t n, cap;
};

static inline void
mvec_push(struct mvec *a, size_t s, size_t e, int m)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = llm_xreallocarray(a->v, a->cap, sizeof(*a->v));
	}
	a->v[a->n++] = (struct mat){s, e, m};
}

/* A list of pieces of text.  id >= 0: an added token, kept as is; start:
 * the piece begins at offset 0 of the original text (Metaspace "first"). */
struct span {
	size_t off, len;
	int32_t id;
	int start;
};

struct plist {
	struct llm_buf b;
	struct span *v;
	size_t n, cap;
};

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
	p->v[p->n++] = (struct span){p->b.len, len, id, start};
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

struct regex {
	pcre2_code *code;
	pcre2_match_data *md;
	int err; /* a matching error (match limit...), reported by encode */
};

enum { PAT_STRING, PAT_REGEX, PAT_CHAR, PAT_NUMERIC, PAT_SPACE };

struct pattern {
	int kind;
	char *s; /* PAT_STRING */
	size_t len;
	uint32_t ch; /* PAT_CHAR */
	struct regex re;
};

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
			const char *cls = e == 's' || e == 'S' ? ONIG_SPACE : e == 'w' || e == 'W' ? ONIG_WORD :
				e == 'h' || e == 'H' ? ONIG_HEX : e == 'v' ? "\\x{0b}" : NULL;
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

static int
re_compile(struct regex *r, const char *pat0, size_t len0, const char *name)
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
				pos = a + charlen(s + a);
			else
				break;
		}
		break;
	default: /* one match per character that satisfies a predicate */
		for (size_t i = 0; i < n;) {
			uint32_t c;
			size_t l = dec(s + i, &c);
			int hit = p->kind == PAT_CHAR ? c == p->ch : p->kind == PAT_NUMERIC ? is_numeric(c) : is_space(c);
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

enum { B_REMOVED, B_ISOLATED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS };

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

enum { N_NFC, N_NFD, N_NFKC, N_NFKD, N_LOWER, N_PREPEND, N_REPLACE, N_STRIP, N_STRIP_ACCENTS };
enum { P_SPLIT, P_BYTELEVEL, P_METASPACE, P_DIGITS, P_WHITESPACE, P_WSSPLIT };
enum { D_BYTELEVEL, D_METASPACE, D_REPLACE, D_BYTEFALLBACK, D_FUSE, D_STRIP };
enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER };

struct step {
	int kind;
	struct pattern pat;
	char *s; /* Prepend/Replace content, Metaspace replacement */
	size_t len;
	uint32_t ch;    /* Metaspace replacement, Strip content */
	int behavior;   /* Split */
	int invert;     /* Split */
	int prefix;     /* ByteLevel add_prefix_space; Metaspace prepend scheme */
	int use_regex;  /* ByteLevel; Metaspace split; Digits individual */
	int left, right; /* Strip */
};

struct added {
	char *s; /* content */
	size_t len;
	char *ns; /* content after the normalizer (normalized tokens) */
	size_t nlen;
	int32_t id;
	int special, lstrip, rstrip, single_word, normalized;
};

/* Byte trie of added-token strings for leftmost-longest matching. */
struct trie {
	struct tnode {
		int32_t child, sibling, term;
		uint8_t byte;
	} *v;
	size_t n, cap;
	uint8_t first[256];
};

struct centry {
	size_t ids;
	uint32_t n;
};

struct llm_tokenizer {
	char *name;
	int64_t n_vocab;

	/* The BPE model. */
	size_t n_model;     /* model ids are 0 .. n_model-1 */
	struct llm_buf pool; /* model token strings */
	size_t *tok_off;    /* (n_model), SIZE_MAX: no token */
	uint32_t *tok_len;
	struct smap vocab;
	struct pairmap merges;
	int byte_fallback, fuse_unk, ignore_merges;
	int32_t unk_id;
	char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix (NULL: none) */
	int32_t byte_tok[256]; /* <0xNN> tokens for byte fallback */
	int32_t small[2048];   /* single characters below U+0800 -> id (-1: none) */

	/* Added tokens. */
	struct added *added;
	size_t n_added;
	struct llm_buf apool;
	struct smap amap; /* content -> index into added */
	int32_t *added_of_id; /* (n_vocab) index into added, or -1 */
	uint8_t *special;     /* (n_vocab) */
	struct trie raw_trie, norm_trie;

	struct step *norm, *pre, *dec;
	size_t n_norm, n_pre, n_dec;
	int has_bytelevel_dec, has_bytefallback_dec;

	int64_t *post_pre, *post_post; /* ids around the text when add_special */
	size_t n_post_pre, n_post_post;
	int64_t bos, eos;

	/* Scratch, and the word cache. */
	struct plist pl[2];
	struct llm_buf nb[2];
	struct mvec mv;
	struct ivec word;
	struct sym {
		int32_t id, prev, next;
		uint32_t len;
	} *syms;
	size_t syms_cap;
	struct hent {
		uint32_t rank, pos;
		int32_t id;
	} *heap;
	size_t heap_cap;
	struct smap cache;
	struct llm_buf ckeys;
	struct ivec cids;
	struct centry *cent;
	size_t n_cent, cap_cent;
};

static struct llm_tokenizer *
tok_new(const char *name)
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
	llm_buf_free(&t->pool);
	free(t->tok_off);
	free(t->tok_len);
	smap_free(&t->vocab);
	pairmap_free(&t->merges);
	free(t->prefix);
	free(t->suffix);
	for (size_t i = 0; i < t->n_added; i++) {
		free(t->added[i].s);
		free(t->added[i].ns);
	}
	free(t->added);
	llm_buf_free(&t->apool);
	smap_free(&t->amap);
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
	smap_free(&t->cache);
	llm_buf_free(&t->ckeys);
	free(t->cids.v);
	free(t->cent);
	free(t);
}

static struct step *
add_step(struct step **v, size_t *n, int kind)
{
	*v = llm_xreallocarray(*v, *n + 1, sizeof(**v));
	struct step *s = &(*v)[(*n)++];
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	return s;
}

/* ---- model construction ---- */

static int32_t
model_find(const struct llm_tokenizer *t, const char *s, size_t len)
{
	return smap_get(&t->vocab, t->pool.p, s, len, hash_bytes(s, len));
}

/* Give the model n ids, all empty. */
static void
model_alloc(struct llm_tokenizer *t, size_t n)
{
	t->n_model = n;
	t->tok_off = llm_xmalloc((n ? n : 1) * sizeof(*t->tok_off));
	t->tok_len = llm_xcalloc(n ? n : 1, sizeof(*t->tok_len));
	for (size_t i = 0; i < n; i++)
		t->tok_off[i] = SIZE_MAX;
	smap_init(&t->vocab, n);
}

static void
model_set(struct llm_tokenizer *t, int32_t id, const char *s, size_t len)
{
	size_t off = t->pool.len;
	llm_buf_add(&t->pool, s, len);
	llm_buf_add(&t->pool, "", 1); /* NUL-terminate for token_text */
	t->tok_off[id] = off;
	t->tok_len[id] = (uint32_t)len;
	smap_put(&t->vocab, t->pool.p, off, len, hash_bytes(s, len), id);
}

/* Add merge "left right" of rank r; the parts and their concatenation must
 * be tokens. */
static int
model_merge(struct llm_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, uint32_t r)
{
	int32_t ia = model_find(t, a, alen), ib = model_find(t, b, blen);
	if (ia < 0 || ib < 0)
		return llm_seterr("%s: merge %u: token '%.*s' not in the vocabulary", t->name, r,
			ia < 0 ? (int)alen : (int)blen, ia < 0 ? a : b);
	char small[256];
	size_t n = alen + blen;
	char *cat = n <= sizeof(small) ? small : llm_xmalloc(n);
	memcpy(cat, a, alen);
	memcpy(cat + alen, b, blen);
	int32_t id = model_find(t, cat, n);
	if (id < 0)
		llm_seterr("%s: merge %u: '%.*s' not in the vocabulary", t->name, r, (int)n, cat);
	else
		pairmap_put(&t->merges, ia, ib, r, id);
	if (cat != small)
		free(cat);
	return id < 0 ? -1 : 0;
}

/* Tables derived from the vocabulary once it is complete. */
static void
model_finish(struct llm_tokenizer *t)
{
	char buf[8];
	for (uint32_t c = 0; c < LLM_NELEM(t->small); c++) {
		size_t l = llm_utf8_encode(c, buf);
		t->small[c] = model_find(t, buf, l);
	}
	for (int b = 0; b < 256; b++) {
		snprintf(buf, sizeof(buf), "<0x%02X>", b);
		t->byte_tok[b] = model_find(t, buf, 6);
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
	dec(s + i, &c);
	return is_word(c);
}

/* Cut the added tokens of trie out of s into out (AddedVocabulary::
 * find_matches); start: s begins the original text. */
static void
split_added(struct llm_tokenizer *t, const struct trie *tr, const char *s, size_t n, int start,
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
			if (a->single_word) {
				uint32_t c = 0;
				int before = ms > 0 && ends_with_word(s, ms);
				int after = me < n && (dec(s + me, &c), is_word(c));
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
					dec(s + j, &c);
					if (!is_space(c))
						break;
					ns = j;
				}
				ms = ns > done ? ns : done;
			}
			if (a->rstrip) {
				uint32_t c;
				while (me < n && (dec(s + me, &c), is_space(c)))
					me += charlen(s + me);
			}
			if (done < ms)
				pl_add(out, s + done, ms - done, -1, start && done == 0);
			pl_add(out, s + ms, me - ms, a->id, 0);
			done = me;
		}
	}
	if (done < n || n == 0)
		pl_add(out, s + done, n - done, -1, start && done == 0);
}

/* ---- normalizers ---- */

/* Code points that NFC may change in context: those with a nonzero
 * combining class, those NFC maps to something else, and those that can be
 * the second of a composed pair (the last of some decomposition).  Text
 * without any of them is already NFC.  A bit per code point below
 * NFC_TABLE_MAX; above it everything counts as unsafe. */
#define NFC_TABLE_MAX 0x30000
static uint8_t *nfc_unsafe;

static void
nfc_init(void)
{
	if (nfc_unsafe)
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
	nfc_unsafe = u;
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
		i += dec(s + i, &c);
		if (c >= NFC_TABLE_MAX || nfc_unsafe[c >> 3] >> (c & 7) & 1)
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
	case N_NFC: case N_NFD: case N_NFKC: case N_NFKD: {
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
			i += dec(s + i, &c);
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
			size_t l = dec(s + i, &c);
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
			while (a < n && (dec(s + a, &c), is_space(c)))
				a += charlen(s + a);
		if (st->right)
			while (b > a) {
				size_t j = b - 1;
				while (j > a && ((uint8_t)s[j] & 0xc0) == 0x80)
					j--;
				dec(s + j, &c);
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
split_piece(struct llm_tokenizer *t, struct pattern *pat, int behavior, int invert, const char *s, size_t n,
	int start, struct plist *out)
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
		if (c + 1 < *n && (h[c + 1].rank < h[c].rank || (h[c + 1].rank == h[c].rank && h[c + 1].pos < h[c].pos)))
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
		if (l <= 2 && (dec(s, &c), c < LLM_NELEM(t->small)))
			return t->small[c];
		return model_find(t, s, l);
	}
	struct llm_buf *b = &t->nb[1];
	b->len = 0;
	if (!first && t->prefix)
		llm_buf_puts(b, t->prefix);
	llm_buf_add(b, s, l);
	if (last && t->suffix)
		llm_buf_puts(b, t->suffix);
	return model_find(t, b->p, b->len);
}

/* BPE of one word into t->word (Model::tokenize of the BPE model). */
static void
bpe(struct llm_tokenizer *t, const char *w, size_t n)
{
	t->word.n = 0;
	if (!n)
		return;
	if (t->ignore_merges) {
		int32_t id = model_find(t, w, n);
		if (id >= 0) {
			ivec_push(&t->word, id);
			return;
		}
	}
	size_t ns = 0;
	int32_t unk = -1;
	uint32_t unk_len = 0;
	for (size_t i = 0; i < n;) {
		size_t l = charlen(w + i);
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
		if (pairmap_get(&t->merges, t->syms[i].id, t->syms[i + 1].id, &r, &id))
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
		if (!pairmap_get(&t->merges, cur->id, right.id, &r, &id) || id != top.id)
			continue;
		sy[cur->next].len = 0;
		cur->id = top.id;
		cur->len += right.len;
		cur->next = right.next;
		if (right.next >= 0)
			sy[right.next].prev = (int32_t)top.pos;
		if (cur->prev >= 0 && pairmap_get(&t->merges, sy[cur->prev].id, cur->id, &r, &id))
			heap_push(t, &nh, (struct hent){r, (uint32_t)cur->prev, id});
		if (cur->next >= 0 && pairmap_get(&t->merges, cur->id, sy[cur->next].id, &r, &id))
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
		h = hash_bytes(w, n);
		k = smap_get(&t->cache, t->ckeys.p, w, n, h);
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
				smap_free(&t->cache);
				smap_init(&t->cache, CACHE_MAX_ENTRIES);
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
			smap_put(&t->cache, t->ckeys.p, off, n, h, (int32_t)t->n_cent);
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

int
llm_tokenizer_encode(struct llm_tokenizer *t, const char *text, size_t len, int add_special, int64_t **ids,
	size_t *n)
{
	if (!llm_utf8_valid(text, len))
		return llm_seterr("%s: text is not valid UTF-8", t->name);
	size_t n0 = *n, cap = *n; /* the capacity is unknown: grow from the count */
	struct plist *a = &t->pl[0], *b = &t->pl[1];

	if (add_special)
		push_ids(ids, n, &cap, t->post_pre, t->n_post_pre);

	/* Added tokens in the raw text, then the normalizer on the rest, then
	 * the added tokens that match normalized text. */
	pl_reset(a);
	split_added(t, &t->raw_trie, text, len, 1, a);
	pl_reset(b);
	for (size_t i = 0; i < a->n; i++) {
		struct span sp = a->v[i];
		if (sp.id >= 0) {
			pl_add(b, a->b.p + sp.off, sp.len, sp.id, 0);
			continue;
		}
		struct llm_buf *nb = normalize(t, a->b.p + sp.off, sp.len, &sp.start);
		if (t->norm_trie.n > 1) {
			/* split_added reads nb while writing b: copy it first. */
			struct llm_buf *o = nb == &t->nb[0] ? &t->nb[1] : &t->nb[0];
			o->len = 0;
			llm_buf_add(o, nb->p, nb->len);
			split_added(t, &t->norm_trie, o->p, o->len, sp.start, b);
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
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
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
		i += dec(s + i, &c);
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
				size_t cl = dec(s + a, &c);
				if (c != st->ch)
					break;
				a += cl;
			}
			for (int k = 0; k < st->right && e > a; k++) {
				size_t j = e - 1;
				while (j > a && ((uint8_t)s[j] & 0xc0) == 0x80)
					j--;
				dec(s + j, &c);
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
				size_t cl = dec(s + k, &c);
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
llm_tokenizer_decode(struct llm_tokenizer *t, const int64_t *ids, size_t n, int skip_special,
	struct llm_buf *out)
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
		} else if (t->dec[k].kind == D_REPLACE && t->dec[k].pat.kind == PAT_STRING &&
		    t->dec[k].len == 1 && t->dec[k].s[0] == ' ') {
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

int64_t
llm_tokenizer_n_vocab(const struct llm_tokenizer *t)
{
	return t->n_vocab;
}

int64_t
llm_tokenizer_find(const struct llm_tokenizer *t, const char *s, size_t len)
{
	int32_t k = smap_get(&t->amap, t->apool.p, s, len, hash_bytes(s, len));
	if (k >= 0)
		return t->added[k].id;
	return model_find(t, s, len);
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
static struct added *
find_added(const struct llm_tokenizer *t, const char *s, size_t len)
{
	int32_t k = smap_get(&t->amap, t->apool.p, s, len, hash_bytes(s, len));
	return k >= 0 ? &t->added[k] : NULL;
}

/* Add a token, or update the flags of the one with the same content. */
static void
add_added(struct llm_tokenizer *t, const char *s, size_t len, int32_t id, int special, int lstrip, int rstrip,
	int single_word, int normalized)
{
	struct added *a = find_added(t, s, len);
	if (a) {
		special |= a->special;
	} else {
		if (!t->amap.cap)
			smap_init(&t->amap, 64);
		t->added = llm_xreallocarray(t->added, t->n_added + 1, sizeof(*t->added));
		a = &t->added[t->n_added];
		memset(a, 0, sizeof(*a));
		a->s = llm_xmalloc(len + 1);
		memcpy(a->s, s, len);
		a->s[len] = 0;
		a->len = len;
		size_t off = t->apool.len;
		llm_buf_add(&t->apool, s, len);
		smap_put(&t->amap, t->apool.p, off, len, hash_bytes(s, len), (int32_t)t->n_added);
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
static int
finish(struct llm_tokenizer *t)
{
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
		int32_t m = model_find(t, a->s, a->len);
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

/* ---- tokenizer.json ---- */

static int
get_bool(const json_t *o, const char *key, int def)
{
	const json_t *v = json_object_get(o, key); /* borrowed */
	return json_is_boolean(v) ? json_is_true(v) : def;
}

static int
get_str(const json_t *o, const char *key, const char **s, size_t *len)
{
	const json_t *v = json_object_get(o, key); /* borrowed */
	if (!json_is_string(v))
		return -1;
	*s = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

/* A pattern {"String": s} or {"Regex": r}. */
static int
load_pattern(struct llm_tokenizer *t, const json_t *o, struct pattern *p, const char *what)
{
	const json_t *pat = json_object_get(o, "pattern"); /* borrowed */
	const char *s;
	size_t len;
	if (json_is_object(pat) && get_str(pat, "String", &s, &len) == 0) {
		p->kind = PAT_STRING;
		p->s = llm_xmalloc(len + 1);
		memcpy(p->s, s, len + 1);
		p->len = len;
		return 0;
	}
	if (json_is_object(pat) && get_str(pat, "Regex", &s, &len) == 0) {
		p->kind = PAT_REGEX;
		return re_compile(&p->re, s, len, t->name);
	}
	return llm_seterr("%s: %s: 'pattern' is not {\"String\": ...} or {\"Regex\": ...}", t->name, what);
}

static int
load_char(struct llm_tokenizer *t, const json_t *o, const char *key, uint32_t *ch, const char *what)
{
	const char *s;
	size_t len;
	if (get_str(o, key, &s, &len) < 0 || llm_utf8_decode(s, len, ch) != len || !len)
		return llm_seterr("%s: %s: '%s' is not one character", t->name, what, key);
	return 0;
}

static int
load_prepend_scheme(struct llm_tokenizer *t, const json_t *o, int *scheme, const char *what)
{
	const char *s;
	size_t len;
	*scheme = PREPEND_ALWAYS;
	if (get_str(o, "prepend_scheme", &s, &len) == 0) {
		if (strcmp(s, "always") == 0)
			*scheme = PREPEND_ALWAYS;
		else if (strcmp(s, "first") == 0)
			*scheme = PREPEND_FIRST;
		else if (strcmp(s, "never") == 0)
			*scheme = PREPEND_NEVER;
		else
			return llm_seterr("%s: %s: unknown prepend_scheme '%s'", t->name, what, s);
	} else if (!get_bool(o, "add_prefix_space", 1)) {
		*scheme = PREPEND_NEVER;
	}
	return 0;
}

static const char *
type_of(const json_t *o)
{
	const json_t *v = json_object_get(o, "type"); /* borrowed */
	return json_is_string(v) ? json_string_value(v) : "";
}

static int
load_normalizer(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'normalizer' is not an object", t->name);
	const char *type = type_of(o);
	static const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
	for (size_t i = 0; i < LLM_NELEM(forms); i++)
		if (strcmp(type, forms[i]) == 0) {
			add_step(&t->norm, &t->n_norm, N_NFC + (int)i);
			if (i == 0)
				nfc_init();
			return 0;
		}
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "normalizers"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: normalizer Sequence: no 'normalizers' array", t->name);
		json_array_foreach(v, i, x)
			if (load_normalizer(t, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "Lowercase") == 0) {
		add_step(&t->norm, &t->n_norm, N_LOWER);
		return 0;
	}
	if (strcmp(type, "StripAccents") == 0) {
		add_step(&t->norm, &t->n_norm, N_STRIP_ACCENTS);
		return 0;
	}
	if (strcmp(type, "Strip") == 0) {
		struct step *s = add_step(&t->norm, &t->n_norm, N_STRIP);
		s->left = get_bool(o, "strip_left", 1);
		s->right = get_bool(o, "strip_right", 1);
		return 0;
	}
	if (strcmp(type, "Prepend") == 0 || strcmp(type, "Replace") == 0) {
		int prepend = type[1] == 'r' && type[2] == 'e' && type[3] == 'p';
		const char *c;
		size_t len;
		if (get_str(o, prepend ? "prepend" : "content", &c, &len) < 0)
			return llm_seterr("%s: normalizer %s: no '%s' string", t->name, type,
				prepend ? "prepend" : "content");
		struct step *s = add_step(&t->norm, &t->n_norm, prepend ? N_PREPEND : N_REPLACE);
		s->s = llm_xmalloc(len + 1);
		memcpy(s->s, c, len + 1);
		s->len = len;
		if (!prepend && load_pattern(t, o, &s->pat, "normalizer Replace") < 0)
			return -1;
		return 0;
	}
	return llm_seterr("%s: unsupported normalizer '%s'", t->name, type);
}

static int
load_pretokenizer(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'pre_tokenizer' is not an object", t->name);
	const char *type = type_of(o);
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "pretokenizers"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: pre_tokenizer Sequence: no 'pretokenizers' array", t->name);
		json_array_foreach(v, i, x)
			if (load_pretokenizer(t, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "Split") == 0) {
		static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
			"Contiguous"};
		struct step *s = add_step(&t->pre, &t->n_pre, P_SPLIT);
		const char *b;
		size_t len;
		if (load_pattern(t, o, &s->pat, "pre_tokenizer Split") < 0)
			return -1;
		if (get_str(o, "behavior", &b, &len) < 0)
			return llm_seterr("%s: pre_tokenizer Split: no 'behavior'", t->name);
		s->behavior = -1;
		for (size_t i = 0; i < LLM_NELEM(names); i++)
			if (strcmp(b, names[i]) == 0)
				s->behavior = (int)i;
		if (s->behavior < 0)
			return llm_seterr("%s: pre_tokenizer Split: unknown behavior '%s'", t->name, b);
		s->invert = get_bool(o, "invert", 0);
		return 0;
	}
	if (strcmp(type, "ByteLevel") == 0) {
		struct step *s = add_step(&t->pre, &t->n_pre, P_BYTELEVEL);
		s->prefix = get_bool(o, "add_prefix_space", 1);
		s->use_regex = get_bool(o, "use_regex", 1);
		s->pat.kind = PAT_REGEX;
		if (s->use_regex)
			return re_compile(&s->pat.re, LLM_TOKENIZER_RE_GPT2, strlen(LLM_TOKENIZER_RE_GPT2), t->name);
		return 0;
	}
	if (strcmp(type, "Metaspace") == 0) {
		struct step *s = add_step(&t->pre, &t->n_pre, P_METASPACE);
		char buf[4];
		if (load_char(t, o, "replacement", &s->ch, "pre_tokenizer Metaspace") < 0 ||
		    load_prepend_scheme(t, o, &s->prefix, "pre_tokenizer Metaspace") < 0)
			return -1;
		s->len = llm_utf8_encode(s->ch, buf);
		s->s = llm_xmalloc(s->len + 1);
		memcpy(s->s, buf, s->len);
		s->s[s->len] = 0;
		s->use_regex = get_bool(o, "split", 1);
		s->pat.kind = PAT_CHAR;
		s->pat.ch = s->ch;
		return 0;
	}
	if (strcmp(type, "Digits") == 0) {
		struct step *s = add_step(&t->pre, &t->n_pre, P_DIGITS);
		s->use_regex = get_bool(o, "individual_digits", 0);
		s->pat.kind = PAT_NUMERIC;
		return 0;
	}
	if (strcmp(type, "WhitespaceSplit") == 0) {
		struct step *s = add_step(&t->pre, &t->n_pre, P_WSSPLIT);
		s->pat.kind = PAT_SPACE;
		return 0;
	}
	if (strcmp(type, "Whitespace") == 0) {
		static const char re[] = "\\w+|[^\\w\\s]+";
		struct step *s = add_step(&t->pre, &t->n_pre, P_WHITESPACE);
		s->pat.kind = PAT_REGEX;
		return re_compile(&s->pat.re, re, sizeof(re) - 1, t->name);
	}
	return llm_seterr("%s: unsupported pre_tokenizer '%s'", t->name, type);
}

static int
load_decoder(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'decoder' is not an object", t->name);
	const char *type = type_of(o);
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "decoders"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: decoder Sequence: no 'decoders' array", t->name);
		json_array_foreach(v, i, x)
			if (load_decoder(t, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "ByteLevel") == 0) {
		add_step(&t->dec, &t->n_dec, D_BYTELEVEL);
		return 0;
	}
	if (strcmp(type, "ByteFallback") == 0) {
		add_step(&t->dec, &t->n_dec, D_BYTEFALLBACK);
		return 0;
	}
	if (strcmp(type, "Fuse") == 0) {
		add_step(&t->dec, &t->n_dec, D_FUSE);
		return 0;
	}
	if (strcmp(type, "Strip") == 0) {
		struct step *s = add_step(&t->dec, &t->n_dec, D_STRIP);
		json_int_t a = json_integer_value(json_object_get(o, "start"));
		json_int_t b = json_integer_value(json_object_get(o, "stop"));
		if (load_char(t, o, "content", &s->ch, "decoder Strip") < 0)
			return -1;
		s->left = (int)(a < 0 ? 0 : a > 1 << 20 ? 1 << 20 : a);
		s->right = (int)(b < 0 ? 0 : b > 1 << 20 ? 1 << 20 : b);
		return 0;
	}
	if (strcmp(type, "Replace") == 0) {
		struct step *s = add_step(&t->dec, &t->n_dec, D_REPLACE);
		const char *c;
		size_t len;
		if (get_str(o, "content", &c, &len) < 0)
			return llm_seterr("%s: decoder Replace: no 'content' string", t->name);
		s->s = llm_xmalloc(len + 1);
		memcpy(s->s, c, len + 1);
		s->len = len;
		return load_pattern(t, o, &s->pat, "decoder Replace");
	}
	if (strcmp(type, "Metaspace") == 0) {
		struct step *s = add_step(&t->dec, &t->n_dec, D_METASPACE);
		if (load_char(t, o, "replacement", &s->ch, "decoder Metaspace") < 0)
			return -1;
		return load_prepend_scheme(t, o, &s->prefix, "decoder Metaspace");
	}
	return llm_seterr("%s: unsupported decoder '%s'", t->name, type);
}

static void
append_ids(int64_t **v, size_t *n, const int64_t *x, size_t nx)
{
	*v = llm_xreallocarray(*v, *n + nx + 1, sizeof(**v));
	if (nx)
		memcpy(*v + *n, x, nx * sizeof(*x));
	*n += nx;
}

/* Post-processors, as the ids they put before and after the text. */
static int
load_post(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'post_processor' is not an object", t->name);
	const char *type = type_of(o);
	if (strcmp(type, "ByteLevel") == 0)
		return 0; /* offsets only */
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "processors"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: post_processor Sequence: no 'processors' array", t->name);
		json_array_foreach(v, i, x)
			if (load_post(t, x) < 0)
				return -1;
		return 0;
	}
	int64_t *pre = NULL, *post = NULL;
	size_t npre = 0, npost = 0;
	if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
		const json_t *cls = json_object_get(o, "cls"), *sep = json_object_get(o, "sep"); /* borrowed */
		if (!json_is_integer(json_array_get(cls, 1)) || !json_is_integer(json_array_get(sep, 1)))
			return llm_seterr("%s: post_processor %s: bad 'cls' or 'sep'", t->name, type);
		int64_t c = json_integer_value(json_array_get(cls, 1)), s = json_integer_value(json_array_get(sep, 1));
		append_ids(&pre, &npre, &c, 1);
		append_ids(&post, &npost, &s, 1);
	} else if (strcmp(type, "TemplateProcessing") == 0) {
		const json_t *single = json_object_get(o, "single"); /* borrowed */
		const json_t *specials = json_object_get(o, "special_tokens"); /* borrowed */
		const json_t *x;
		size_t i;
		int seen = 0;
		if (!json_is_array(single))
			return llm_seterr("%s: post_processor TemplateProcessing: no 'single' array", t->name);
		json_array_foreach(single, i, x) {
			const json_t *sp = json_object_get(x, "SpecialToken"); /* borrowed */
			if (json_object_get(x, "Sequence")) {
				if (seen++) {
					free(pre);
					free(post);
					return llm_seterr("%s: post_processor TemplateProcessing: the text appears twice",
						t->name);
				}
				continue;
			}
			const char *name;
			size_t len;
			const json_t *ids, *idv;
			size_t k;
			if (!sp || get_str(sp, "id", &name, &len) < 0 ||
			    !json_is_array(ids = json_object_get(json_object_get(specials, name), "ids"))) {
				free(pre);
				free(post);
				return llm_seterr("%s: post_processor TemplateProcessing: bad item %zu of 'single'",
					t->name, i);
			}
			json_array_foreach(ids, k, idv) {
				int64_t id = json_integer_value(idv);
				if (seen)
					append_ids(&post, &npost, &id, 1);
				else
					append_ids(&pre, &npre, &id, 1);
			}
		}
	} else {
		return llm_seterr("%s: unsupported post_processor '%s'", t->name, type);
	}
	/* A later processor wraps what the earlier ones produced. */
	append_ids(&pre, &npre, t->post_pre, t->n_post_pre);
	append_ids(&t->post_post, &t->n_post_post, post, npost);
	free(t->post_pre);
	free(post);
	t->post_pre = pre;
	t->n_post_pre = npre;
	return 0;
}

/* model.vocab and model.merges from the jansson tree (see also the fast
 * reader below, which must mean the same). */
static int
load_vocab(struct llm_tokenizer *t, const json_t *vocab)
{
	const char *k;
	const json_t *v;
	json_int_t maxid = -1;
	json_object_foreach((json_t *)vocab, k, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= INT32_MAX)
			return llm_seterr("%s: model: vocab entry '%s' has no valid id", t->name, k);
		if (json_integer_value(v) > maxid)
			maxid = json_integer_value(v);
	}
	model_alloc(t, (size_t)(maxid + 1));
	/* jansson keys are NUL-terminated: a key with an embedded NUL cannot
	 * occur in a vocabulary it parsed. */
	json_object_foreach((json_t *)vocab, k, v)
		model_set(t, (int32_t)json_integer_value(v), k, strlen(k));
	return 0;
}

static int
load_merges(struct llm_tokenizer *t, const json_t *merges)
{
	size_t i;
	const json_t *x;
	pairmap_init(&t->merges, json_array_size(merges));
	json_array_foreach(merges, i, x) {
		const char *a, *b;
		size_t alen, blen;
		if (json_is_string(x)) {
			const char *s = json_string_value(x), *sp = strchr(s, ' ');
			if (!sp || strchr(sp + 1, ' '))
				return llm_seterr("%s: merge %zu: '%s' is not two tokens", t->name, i, s);
			a = s;
			alen = (size_t)(sp - s);
			b = sp + 1;
			blen = strlen(b);
		} else if (json_is_array(x) && json_array_size(x) == 2 && json_is_string(json_array_get(x, 0)) &&
		    json_is_string(json_array_get(x, 1))) {
			a = json_string_value(json_array_get(x, 0));
			alen = json_string_length(json_array_get(x, 0));
			b = json_string_value(json_array_get(x, 1));
			blen = json_string_length(json_array_get(x, 1));
		} else {
			return llm_seterr("%s: merge %zu is not a string or a pair of strings", t->name, i);
		}
		if (model_merge(t, a, alen, b, blen, (uint32_t)i) < 0)
			return -1;
	}
	return 0;
}

/* The model; its vocab and merges unless have_vocab (read from the text
 * already: the ones in m are then the empty stand-ins). */
static int
load_model(struct llm_tokenizer *t, const json_t *m, int have_vocab)
{
	const char *type = type_of(m);
	const json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges"); /* borrowed */
	if (!json_is_object(m))
		return llm_seterr("%s: no 'model' object", t->name);
	if (*type && strcmp(type, "BPE") != 0)
		return llm_seterr("%s: unsupported model '%s' (only BPE)", t->name, type);
	if (!json_is_object(vocab) || !json_is_array(merges))
		return llm_seterr("%s: model: no 'vocab' object or 'merges' array", t->name);
	const json_t *drop = json_object_get(m, "dropout"); /* borrowed */
	if (json_is_number(drop) && json_number_value(drop) > 0)
		return llm_seterr("%s: model: BPE dropout is not supported", t->name);

	if (!have_vocab && (load_vocab(t, vocab) < 0 || load_merges(t, merges) < 0))
		return -1;

	const char *s;
	size_t len;
	if (get_str(m, "unk_token", &s, &len) == 0) {
		t->unk_id = model_find(t, s, len);
		if (t->unk_id < 0)
			return llm_seterr("%s: model: unk_token '%s' not in the vocabulary", t->name, s);
	}
	if (get_str(m, "continuing_subword_prefix", &s, &len) == 0 && len)
		t->prefix = llm_xstrdup(s);
	if (get_str(m, "end_of_word_suffix", &s, &len) == 0 && len)
		t->suffix = llm_xstrdup(s);
	t->byte_fallback = get_bool(m, "byte_fallback", 0);
	t->fuse_unk = get_bool(m, "fuse_unk", 0);
	t->ignore_merges = get_bool(m, "ignore_merges", 0);
	model_finish(t);
	return 0;
}

static int
load_added(struct llm_tokenizer *t, const json_t *a)
{
	size_t i;
	const json_t *x;
	if (json_is_null(a) || !a)
		return 0;
	if (!json_is_array(a))
		return llm_seterr("%s: 'added_tokens' is not an array", t->name);
	json_array_foreach(a, i, x) {
		const char *s;
		size_t len;
		const json_t *id = json_object_get(x, "id"); /* borrowed */
		if (get_str(x, "content", &s, &len) < 0 || !json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) >= INT32_MAX)
			return llm_seterr("%s: added token %zu: no 'content' string or valid 'id'", t->name, i);
		if (!len)
			continue; /* the crate ignores empty tokens */
		/* The crate does not take the ids from the file: it adds the
		 * tokens in order, each getting the id its content already has
		 * (an earlier added token, or the model's), else the next free
		 * one after the model's vocabulary.  The file's ids agree unless
		 * the file was edited by hand. */
		int32_t nid;
		const struct added *old = find_added(t, s, len);
		if (old) {
			nid = old->id;
		} else if ((nid = model_find(t, s, len)) < 0) {
			int64_t size = (int64_t)t->vocab.n, max = -1;
			for (size_t k = 0; k < t->n_added; k++)
				if (t->added[k].id > max)
					max = t->added[k].id;
			nid = (int32_t)(max < 0 ? size : max >= size || size == 0 ? max + 1 : size);
		}
		int special = get_bool(x, "special", 0);
		add_added(t, s, len, nid, special, get_bool(x, "lstrip", 0), get_bool(x, "rstrip", 0),
			get_bool(x, "single_word", 0), get_bool(x, "normalized", !special));
	}
	return 0;
}

/* ---- model.vocab and model.merges straight from the text ----
 *
 * The vocabulary and the merges are nearly all of a tokenizer.json (11 MB
 * for a 151k-token vocabulary), and a jansson tree of them, with a malloc'd
 * node per string, costs more than all the rest of loading together.  So
 * the loader first walks the text itself: it reads those two values
 * straight into the model's tables and hands jansson the rest of the
 * document, with them replaced by {} and [].  This reader accepts a subset
 * of what jansson accepts and means the same by it: strings of valid UTF-8
 * without control characters, escapes with paired surrogates (never
 * \u0000, which jansson refuses in keys, and in strings without
 * JSON_ALLOW_NUL), ids written as plain integers, no duplicate keys.  As
 * the rest is valid JSON with a value where each of the two stood, the
 * whole document is valid JSON too.  Whenever the reader declines (bad
 * JSON, or anything load_vocab or load_merges would refuse) the document
 * is loaded again the general way, so that every error message is the one
 * jansson or the loaders give, word for word. */

#define AHEAD 16 /* table lookups in flight while loading */

static inline const char *
jws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static int
hex4(const char *p, uint32_t *v)
{
	uint32_t x = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		x = x << 4 | (uint32_t)d;
	}
	*v = x;
	return 0;
}

/* Decode the JSON string whose opening quote is at *pp, append it to out
 * and leave *pp after the closing quote; -1 for a string that jansson
 * refuses, and for \u0000. */
static int
jstring(const char **pp, const char *e, struct llm_buf *out)
{
	const char *p = *pp + 1;
	for (;;) {
		const char *run = p;
		unsigned high = 0;
		while (p < e && (uint8_t)*p >= 0x20 && *p != '"' && *p != '\\')
			high |= (uint8_t)*p++;
		if (p == e)
			return -1;
		if ((high & 0x80) && !llm_utf8_valid(run, (size_t)(p - run)))
			return -1;
		llm_buf_add(out, run, (size_t)(p - run));
		if (*p == '"') {
			*pp = p + 1;
			return 0;
		}
		if (*p != '\\' || e - p < 2)
			return -1; /* a control character, or the text ends */
		char c[4];
		size_t n = 1;
		switch (p[1]) {
		case '"': case '\\': case '/': c[0] = p[1]; break;
		case 'b': c[0] = '\b'; break;
		case 'f': c[0] = '\f'; break;
		case 'n': c[0] = '\n'; break;
		case 'r': c[0] = '\r'; break;
		case 't': c[0] = '\t'; break;
		case 'u': {
			uint32_t cp, lo;
			if (e - p < 6 || hex4(p + 2, &cp) < 0)
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (e - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, &lo) < 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (cp == 0 || (cp >= 0xdc00 && cp <= 0xdfff)) {
				return -1;
			}
			n = llm_utf8_encode(cp, c);
			p += 4;
			break;
		}
		default:
			return -1;
		}
		llm_buf_add(out, c, n);
		p += 2;
	}
}

/* The end of the JSON value at p, found by following strings and nesting
 * only (jansson checks the rest); NULL if the text ends first. */
static const char *
jskip(const char *p, const char *e)
{
	size_t depth = 0;
	do {
		if (p == e)
			return NULL;
		switch (*p) {
		case '"':
			for (p++; p < e && *p != '"'; p++)
				if (*p == '\\' && ++p == e)
					return NULL;
			if (p == e)
				return NULL;
			p++;
			break;
		case '{': case '[':
			depth++;
			p++;
			break;
		case '}': case ']':
			if (depth == 0)
				return NULL;
			depth--;
			p++;
			break;
		default:
			if (depth == 0) { /* a number, true, false or null */
				const char *q = p;
				while (p < e && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
				    *p == '-' || *p == '+' || *p == '.' || *p == 'E'))
					p++;
				return p > q ? p : NULL;
			}
			p++;
		}
	} while (depth > 0);
	return p;
}

/* The key of an object member at p (after '{' or ',' and white space),
 * decoded into key; returns the start of the member's value, or NULL. */
static const char *
jkey(const char *p, const char *e, struct llm_buf *key)
{
	key->len = 0;
	if (p == e || *p != '"' || jstring(&p, e, key) < 0)
		return NULL;
	p = jws(p, e);
	if (p == e || *p != ':')
		return NULL;
	return jws(p + 1, e);
}

/* After a value inside an object or array closed by close: 1 and *pp at
 * the next one, 0 and *pp after the close, or -1. */
static int
jnext(const char **pp, const char *e, char close)
{
	const char *p = jws(*pp, e);
	if (p < e && *p == ',') {
		*pp = jws(p + 1, e);
		return 1;
	}
	if (p < e && *p == close) {
		*pp = p + 1;
		return 0;
	}
	return -1;
}

/* The first step into an object or array at p: 1 and *pp at its first
 * element, or 0 and *pp after it when it is empty. */
static int
jopen(const char **pp, const char *e, char close)
{
	const char *p = jws(*pp + 1, e);
	if (p < e && *p == close) {
		*pp = p + 1;
		return 0;
	}
	*pp = p;
	return 1;
}

static inline int
key_is(const struct llm_buf *key, const char *s)
{
	size_t n = strlen(s);
	return key->len == n && memcmp(key->p, s, n) == 0;
}

/* model.vocab at p ('{'): as load_vocab, or NULL.  Returns the end.  The
 * keys go to the pool as they come; the table, which needs the largest id
 * for its size, is filled once they are all read, AHEAD keys at a time. */
static const char *
read_vocab(struct llm_tokenizer *t, const char *p, const char *e)
{
	struct vent {
		uint32_t len; /* the key's; keys follow each other in the pool */
		int32_t id;
	} *v = NULL;
	size_t n = 0, cap = 0, base = t->pool.len;
	int32_t maxid = -1;
	int more = jopen(&p, e, '}');

	while (more) {
		if (p == e || *p != '"')
			goto fail;
		size_t off = t->pool.len;
		if (jstring(&p, e, &t->pool) < 0)
			goto fail;
		size_t len = t->pool.len - off;
		llm_buf_add(&t->pool, "", 1); /* NUL-terminated, as model_set does */
		p = jws(p, e);
		if (p == e || *p != ':')
			goto fail;
		p = jws(p + 1, e);
		/* An id as jansson reads a valid one: 0 or [1-9][0-9]*.  Signs,
		 * fractions and exponents are left to load_vocab. */
		const char *q = p;
		int64_t id = 0;
		while (p < e && *p >= '0' && *p <= '9' && p - q < 10)
			id = id * 10 + (*p++ - '0');
		if (p == q || (*q == '0' && p - q > 1) || id >= INT32_MAX)
			goto fail;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = llm_xreallocarray(v, cap, sizeof(*v));
		}
		v[n++] = (struct vent){(uint32_t)len, (int32_t)id};
		if (id > maxid)
			maxid = (int32_t)id;
		if ((more = jnext(&p, e, '}')) < 0)
			goto fail;
	}
	model_alloc(t, (size_t)maxid + 1);
	uint64_t h[AHEAD];
	size_t off = base, ahead = base; /* pool offsets of keys i - AHEAD and i */
	for (size_t i = 0; i < n + AHEAD; i++) {
		uint64_t *hi = &h[i % AHEAD]; /* key i - AHEAD's hash, then key i's */
		if (i >= AHEAD) {
			const struct vent *x = &v[i - AHEAD];
			t->tok_off[x->id] = off;
			t->tok_len[x->id] = x->len;
			if (smap_put(&t->vocab, t->pool.p, off, x->len, *hi, x->id))
				goto fail; /* a duplicate key */
			off += x->len + 1;
		}
		if (i < n) {
			*hi = hash_bytes(t->pool.p + ahead, v[i].len);
			smap_prefetch(&t->vocab, *hi);
			ahead += v[i].len + 1;
		}
	}
	free(v);
	return p;
fail:
	free(v);
	return NULL;
}

/* A merge read and waiting for its lookups: left and right back to back,
 * and the hashes of left, right and the two together. */
struct pending {
	struct llm_buf s;
	size_t alen;
	uint64_t h[3];
};

static int
merge_ids(const struct llm_tokenizer *t, const struct pending *q, int32_t *r)
{
	r[0] = smap_get(&t->vocab, t->pool.p, q->s.p, q->alen, q->h[0]);
	r[1] = smap_get(&t->vocab, t->pool.p, q->s.p + q->alen, q->s.len - q->alen, q->h[1]);
	r[2] = smap_get(&t->vocab, t->pool.p, q->s.p, q->s.len, q->h[2]);
	return r[0] < 0 || r[1] < 0 || r[2] < 0 ? -1 : 0;
}

/* model.merges at p ('['): as load_merges, or NULL.  Returns the end.
 * Each merge is looked up when the one AHEAD after it has been read. */
static const char *
read_merges(struct llm_tokenizer *t, const char *p, const char *e)
{
	int32_t (*v)[3] = NULL; /* (n, 3): left, right and merged id */
	size_t n = 0, cap = 0;
	struct pending ring[AHEAD];
	int more = jopen(&p, e, ']');

	memset(ring, 0, sizeof(ring));
	for (; more; n++) {
		struct pending *q = &ring[n % AHEAD];
		if (n >= AHEAD && merge_ids(t, q, v[n - AHEAD]) < 0)
			goto fail;
		q->s.len = 0;
		if (p < e && *p == '"') { /* "left right" */
			if (jstring(&p, e, &q->s) < 0)
				goto fail;
			char *sp = memchr(q->s.p, ' ', q->s.len);
			if (!sp || memchr(sp + 1, ' ', q->s.len - (size_t)(sp + 1 - q->s.p)))
				goto fail;
			q->alen = (size_t)(sp - q->s.p);
			memmove(sp, sp + 1, q->s.len - q->alen - 1);
			q->s.len--;
		} else if (p < e && *p == '[') { /* ["left", "right"] */
			p = jws(p + 1, e);
			if (p == e || *p != '"' || jstring(&p, e, &q->s) < 0)
				goto fail;
			q->alen = q->s.len;
			p = jws(p, e);
			if (p == e || *p != ',')
				goto fail;
			p = jws(p + 1, e);
			if (p == e || *p != '"' || jstring(&p, e, &q->s) < 0)
				goto fail;
			p = jws(p, e);
			if (p == e || *p != ']')
				goto fail;
			p++;
		} else {
			goto fail;
		}
		q->h[0] = hash_bytes(q->s.p, q->alen);
		q->h[1] = hash_bytes(q->s.p + q->alen, q->s.len - q->alen);
		q->h[2] = hash_bytes(q->s.p, q->s.len);
		for (int k = 0; k < 3; k++)
			smap_prefetch(&t->vocab, q->h[k]);
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = llm_xreallocarray(v, cap, sizeof(*v));
		}
		if ((more = jnext(&p, e, ']')) < 0)
			goto fail;
	}
	for (size_t i = n > AHEAD ? n - AHEAD : 0; i < n; i++)
		if (merge_ids(t, &ring[i % AHEAD], v[i]) < 0)
			goto fail;
	pairmap_init(&t->merges, n);
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n)
			pairmap_prefetch(&t->merges, v[i + AHEAD][0], v[i + AHEAD][1]);
		pairmap_put(&t->merges, v[i][0], v[i][1], (uint32_t)i, v[i][2]);
	}
	for (int k = 0; k < AHEAD; k++)
		llm_buf_free(&ring[k].s);
	free(v);
	return p;
fail:
	for (int k = 0; k < AHEAD; k++)
		llm_buf_free(&ring[k].s);
	free(v);
	return NULL;
}

/* Read the top-level model.vocab and model.merges of the document into t
 * and append the rest of it to rest, with {} and [] in their place; -1
 * (nothing said) to have the document loaded the general way. */
static int
read_model_text(struct llm_tokenizer *t, const char *text, size_t len, struct llm_buf *rest)
{
	const char *e = text + len, *p = jws(text, e), *copied = text;
	const char *merges = NULL, *merges_end = NULL;
	struct llm_buf key = {0};
	int have_model = 0, have_vocab = 0, rc = -1, more, more_m;

	if (p == e || *p != '{')
		goto out;
	more = jopen(&p, e, '}');
	while (more) {
		if (!(p = jkey(p, e, &key)))
			goto out;
		if (!key_is(&key, "model") || p == e || *p != '{') {
			if (!(p = jskip(p, e)))
				goto out;
		} else if (have_model++) {
			goto out;
		} else {
			more_m = jopen(&p, e, '}');
			while (more_m) {
				if (!(p = jkey(p, e, &key)))
					goto out;
				if (key_is(&key, "vocab")) {
					if (have_vocab++ || p == e || *p != '{')
						goto out;
					llm_buf_add(rest, copied, (size_t)(p - copied));
					llm_buf_add(rest, "{}", 2);
					if (!(p = read_vocab(t, p, e)))
						goto out;
					copied = p;
				} else if (key_is(&key, "merges")) {
					if (merges || p == e || *p != '[')
						goto out;
					llm_buf_add(rest, copied, (size_t)(p - copied));
					llm_buf_add(rest, "[]", 2);
					merges = p;
					/* Merges need the vocabulary: read them now if it
					 * came first, else once the object is done. */
					if (!(p = have_vocab ? read_merges(t, p, e) : jskip(p, e)))
						goto out;
					merges_end = have_vocab ? NULL : p;
					copied = p;
				} else if (!(p = jskip(p, e))) {
					goto out;
				}
				if ((more_m = jnext(&p, e, '}')) < 0)
					goto out;
			}
		}
		if ((more = jnext(&p, e, '}')) < 0)
			goto out;
	}
	if (!have_vocab || !merges || (merges_end && read_merges(t, merges, merges_end) != merges_end))
		goto out;
	llm_buf_add(rest, copied, (size_t)(e - copied));
	rc = 0;
out:
	llm_buf_free(&key);
	return rc;
}

/* Load a document, reading the vocabulary and merges from the text when
 * fast (NULL, nothing said, if that declines) or through jansson. */
static struct llm_tokenizer *
load_doc(const char *text, size_t len, const char *name, int fast)
{
	struct llm_tokenizer *t = tok_new(name);
	struct llm_buf rest = {0};
	json_t *j = NULL;
	if (fast) {
		if (read_model_text(t, text, len, &rest) < 0)
			goto fail;
		j = llm_json_loadb(rest.p, rest.len, name);
	} else {
		j = llm_json_loadb(text, len, name);
	}
	if (!j)
		goto fail;
	if (!json_is_object(j)) {
		llm_seterr("%s: not a JSON object", name);
		goto fail;
	}
	if (load_model(t, json_object_get(j, "model"), fast) < 0 ||
	    load_normalizer(t, json_object_get(j, "normalizer")) < 0 ||
	    load_pretokenizer(t, json_object_get(j, "pre_tokenizer")) < 0 ||
	    load_decoder(t, json_object_get(j, "decoder")) < 0 ||
	    load_post(t, json_object_get(j, "post_processor")) < 0 ||
	    load_added(t, json_object_get(j, "added_tokens")) < 0 || finish(t) < 0)
		goto fail;
	json_decref(j);
	llm_buf_free(&rest);
	return t;
fail:
	json_decref(j);
	llm_buf_free(&rest);
	llm_tokenizer_free(t);
	return NULL;
}

struct llm_tokenizer *
llm_tokenizer_load_json(const char *text, size_t len, const char *name)
{
	struct llm_tokenizer *t = load_doc(text, len, name, 1);
	return t ? t : load_doc(text, len, name, 0);
}

struct llm_tokenizer *
llm_tokenizer_load(const char *path)
{
	/* Mapped rather than read: no copy, and the pages are the page
	 * cache's.  A file that cannot be mapped is read, for the message. */
	struct llm_map m;
	if (llm_map_file(&m, path) == 0) {
		struct llm_tokenizer *t = llm_tokenizer_load_json((const char *)m.p, m.len, path);
		llm_unmap(&m);
		return t;
	}
	char *text;
	size_t len;
	if (llm_read_file(path, &text, &len) < 0)
		return NULL;
	struct llm_tokenizer *t = llm_tokenizer_load_json(text, len, path);
	free(text);
	return t;
}

/* ---- the line protocol of --tokenize / --detokenize ---- */

void
llm_tokenizer_json_string(struct llm_buf *out, const char *s, size_t n)
{
	llm_buf_add(out, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = NULL;
		char u[8];
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		default:
			if (c < 0x20) {
				snprintf(u, sizeof(u), "\\u%04x", c);
				e = u;
			}
		}
		if (!e)
			continue;
		llm_buf_add(out, s + run, i - run);
		llm_buf_puts(out, e);
		run = i + 1;
	}
	llm_buf_add(out, s + run, n - run);
	llm_buf_add(out, "\"", 1);
}

/* Run one line of the protocol; 0, or -1 with llm_errmsg. */
static int
protocol_line(struct llm_tokenizer *t, int decode, int flag, const char *line, size_t len, const char *where,
	int64_t **ids, size_t *cap, struct llm_buf *out)
{
	json_error_t err;
	json_t *j = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	size_t n = 0;
	int rc = 0;

	if (!j)
		return llm_seterr("%s: %s", where, err.text);
	if (!decode) {
		if (!json_is_string(j)) {
			rc = llm_seterr("%s: expected a JSON string", where);
		} else if (llm_tokenizer_encode(t, json_string_value(j), json_string_length(j), flag, ids, &n) < 0) {
			rc = llm_seterr("%s: %s", where, llm_errmsg());
		} else {
			llm_buf_add(out, "[", 1);
			for (size_t i = 0; i < n; i++)
				llm_buf_printf(out, i ? ",%lld" : "%lld", (long long)(*ids)[i]);
			llm_buf_add(out, "]\n", 2);
		}
		json_decref(j);
		return rc;
	}
	size_t i;
	json_t *v;
	if (!json_is_array(j)) {
		json_decref(j);
		return llm_seterr("%s: expected a JSON array of token ids", where);
	}
	if (json_array_size(j) > *cap) {
		*cap = json_array_size(j);
		*ids = llm_xreallocarray(*ids, *cap, sizeof(**ids));
	}
	json_array_foreach(j, i, v) {
		if (!json_is_integer(v)) {
			json_decref(j);
			return llm_seterr("%s: item %zu is not an integer", where, i);
		}
		/* strict: one rule for ids everywhere, 0 <= id < n_vocab */
		json_int_t id = json_integer_value(v);
		if ((flag & LLM_DETOK_STRICT) && (id < 0 || id >= llm_tokenizer_n_vocab(t))) {
			json_decref(j);
			return llm_seterr("%s: item %zu: token id %lld is out of range [0, %lld)", where, i, (long long)id,
			    (long long)llm_tokenizer_n_vocab(t));
		}
		(*ids)[n++] = json_integer_value(v);
	}
	json_decref(j);
	size_t start = out->len;
	llm_tokenizer_decode(t, *ids, n, flag & LLM_DETOK_SKIP_SPECIAL, out);
	/* Escape the decoded text in place: move it aside first. */
	size_t tl = out->len - start;
	char *text = llm_xmalloc(tl + 1);
	if (tl) /* out->p may still be NULL when nothing was decoded */
		memcpy(text, out->p + start, tl);
	out->len = start;
	llm_tokenizer_json_string(out, text, tl);
	llm_buf_add(out, "\n", 1);
	free(text);
	return 0;
}

static int
protocol(struct llm_tokenizer *t, int decode, const char *in, size_t len, const char *name, int flag,
	struct llm_buf *out)
{
	int64_t *ids = NULL;
	size_t cap = 0, lineno = 0;
	int rc = 0;
	for (size_t i = 0; i < len && rc == 0;) {
		const char *nl = memchr(in + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - in) : len;
		char *where = llm_xasprintf("%s:%zu", name, ++lineno);
		rc = protocol_line(t, decode, flag, in + i, e - i, where, &ids, &cap, out);
		free(where);
		i = e + 1;
	}
	free(ids);
	return rc;
}

int
llm_tokenizer_tokenize_lines(struct llm_tokenizer *t, const char *in, size_t len, const char *name,
	int add_special, struct llm_buf *out)
{
	return protocol(t, 0, in, len, name, add_special, out);
}

int
llm_tokenizer_detokenize_lines(struct llm_tokenizer *t, const char *in, size_t len, const char *name,
	int flags, struct llm_buf *out)
{
	return protocol(t, 1, in, len, name, flags, out);
}

/* ---- building from arrays (GGUF) ---- */

static int
cmp_desc(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return x > y ? -1 : x < y ? 1 : 0;
}

/* SentencePiece vocabularies without merges: every way to cut a token into
 * two tokens is a merge, ranked by the token's score (higher first; equal
 * scores rank equal, so that the leftmost pair goes first, as in
 * llama.cpp's SentencePiece tokenizer). */
static void
spm_merges_from_scores(struct llm_tokenizer *t, const float *scores, const int32_t *types)
{
	size_t n = t->n_model, nd = 0;
	float *d = llm_xmalloc((n ? n : 1) * sizeof(*d));
	memcpy(d, scores, n * sizeof(*d));
	qsort(d, n, sizeof(*d), cmp_desc);
	for (size_t i = 0; i < n; i++)
		if (nd == 0 || d[nd - 1] != d[i])
			d[nd++] = d[i];
	pairmap_init(&t->merges, n);
	for (size_t id = 0; id < n; id++) {
		int32_t ty = types ? types[id] : LLM_TOKEN_NORMAL;
		if (ty == LLM_TOKEN_CONTROL || ty == LLM_TOKEN_UNKNOWN || ty == LLM_TOKEN_BYTE)
			continue;
		const char *s = t->pool.p + t->tok_off[id];
		size_t len = t->tok_len[id];
		if (model_find(t, s, len) != (int32_t)id) /* a duplicate string */
			continue;
		/* Binary search for the rank of this score. */
		size_t lo = 0, hi = nd;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (d[mid] > scores[id])
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = charlen(s); k < len; k += charlen(s + k)) {
			int32_t a = model_find(t, s, k), b = model_find(t, s + k, len - k);
			if (a >= 0 && b >= 0)
				pairmap_put(&t->merges, a, b, (uint32_t)lo, (int32_t)id);
		}
	}
	free(d);
}

struct llm_tokenizer *
llm_tokenizer_build(const struct llm_tokenizer_vocab *v, const char *name)
{
	struct llm_tokenizer *t = tok_new(name);
	int spm = v->kind == LLM_TOKENIZER_SPM_BPE;

	if (v->kind != LLM_TOKENIZER_BYTE_BPE && !spm) {
		llm_seterr("%s: unknown tokenizer kind %d", name, v->kind);
		goto fail;
	}
	if (v->n_tokens >= INT32_MAX) {
		llm_seterr("%s: too many tokens", name);
		goto fail;
	}
	model_alloc(t, v->n_tokens);
	for (size_t i = 0; i < v->n_tokens; i++) {
		const char *s = v->tokens[i];
		size_t len = v->lens ? v->lens[i] : strlen(s);
		int32_t ty = v->types ? v->types[i] : LLM_TOKEN_NORMAL;
		if (!llm_utf8_valid(s, len)) {
			llm_seterr("%s: token %zu is not valid UTF-8", name, i);
			goto fail;
		}
		if (model_find(t, s, len) < 0) {
			model_set(t, (int32_t)i, s, len);
		} else { /* a duplicate string decodes, but encoding gives the first id */
			t->tok_off[i] = t->pool.len;
			t->tok_len[i] = (uint32_t)len;
			llm_buf_add(&t->pool, s, len);
			llm_buf_add(&t->pool, "", 1);
		}
		if (ty == LLM_TOKEN_CONTROL || ty == LLM_TOKEN_USER_DEFINED)
			add_added(t, s, len, (int32_t)i, ty == LLM_TOKEN_CONTROL, 0, 0, 0, 0);
	}
	if (v->merges) {
		pairmap_init(&t->merges, v->n_merges);
		for (size_t i = 0; i < v->n_merges; i++) {
			const char *m = v->merges[i], *sp = strchr(m, ' ');
			if (!sp) {
				llm_seterr("%s: merge %zu: '%s' is not two tokens", name, i, m);
				goto fail;
			}
			if (model_merge(t, m, (size_t)(sp - m), sp + 1, strlen(sp + 1), (uint32_t)i) < 0)
				goto fail;
		}
	} else if (spm && v->scores) {
		spm_merges_from_scores(t, v->scores, v->types);
	} else {
		llm_seterr("%s: neither merges nor (SentencePiece) scores", name);
		goto fail;
	}

	struct step *st;
	if (spm) {
		if (v->unk_id >= 0 && (size_t)v->unk_id < v->n_tokens)
			t->unk_id = (int32_t)v->unk_id;
		t->byte_fallback = 1;
		t->fuse_unk = 1;
		if (v->add_space_prefix) {
			st = add_step(&t->norm, &t->n_norm, N_PREPEND);
			st->s = llm_xstrdup(SPACE_MARK);
			st->len = 3;
		}
		st = add_step(&t->norm, &t->n_norm, N_REPLACE);
		st->s = llm_xstrdup(SPACE_MARK);
		st->len = 3;
		st->pat.kind = PAT_STRING;
		st->pat.s = llm_xstrdup(" ");
		st->pat.len = 1;
		st = add_step(&t->dec, &t->n_dec, D_REPLACE);
		st->s = llm_xstrdup(" ");
		st->len = 1;
		st->pat.kind = PAT_STRING;
		st->pat.s = llm_xstrdup(SPACE_MARK);
		st->pat.len = 3;
		add_step(&t->dec, &t->n_dec, D_BYTEFALLBACK);
		add_step(&t->dec, &t->n_dec, D_FUSE);
		if (v->add_space_prefix) {
			st = add_step(&t->dec, &t->n_dec, D_STRIP);
			st->ch = ' ';
			st->left = 1;
		}
	} else {
		const char *re = v->pattern ? v->pattern : LLM_TOKENIZER_RE_GPT2;
		st = add_step(&t->pre, &t->n_pre, P_SPLIT);
		st->behavior = B_ISOLATED;
		st->pat.kind = PAT_REGEX;
		if (re_compile(&st->pat.re, re, strlen(re), name) < 0)
			goto fail;
		add_step(&t->pre, &t->n_pre, P_BYTELEVEL);
		add_step(&t->dec, &t->n_dec, D_BYTELEVEL);
	}
	model_finish(t);
	if (v->add_bos && v->bos_id >= 0)
		append_ids(&t->post_pre, &t->n_post_pre, &v->bos_id, 1);
	if (v->add_eos && v->eos_id >= 0)
		append_ids(&t->post_post, &t->n_post_post, &v->eos_id, 1);
	if (finish(t) < 0)
		goto fail;
	t->bos = v->bos_id;
	t->eos = v->eos_id;
	return t;
fail:
	llm_tokenizer_free(t);
	return NULL;
}
