/* tokenizer_int.h: the inside of struct llm_tokenizer, shared by the
 * files that build one (tokenizer.c, the pipeline; tokjson.c, the
 * tokenizer.json reader; tokbuild.c, the builder from GGUF arrays) and by
 * tests/unit/test_tokjson.c.  Nothing else includes it: the rest of the
 * toolchain sees tokenizer.h only. */
#ifndef LLM_TOKENIZER_INT_H
#define LLM_TOKENIZER_INT_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/hash.h"
#include "tokenizer.h"
#include "../base/util.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581, SentencePiece's space */
/* Token ids are below 2^24: the largest real vocabularies have about
 * 262,000 ids, and the id tables are sized by the largest id, so a larger
 * one (a damaged file) would ask for gigabytes. */
#define LLM_TOK_MAX_ID (1 << 24)

/* ---- growable vectors and piece lists ---- */

struct ivec {
	int32_t *v;
	size_t n, cap;
};

/* A match or gap of a pattern over a string: bytes [a, b). */
struct mat {
	size_t a, b;
	int m; /* is a match (or, after a split behaviour, is to be removed) */
};

struct mvec {
	struct mat *v;
	size_t n, cap;
};

/* A list of pieces of text.  id >= 0: an added token, kept as is; start:
 * the piece begins at offset 0 of the original text (Metaspace "first"). */
struct span {
	size_t off, len;
	int32_t id;
	int start;
	size_t raw; /* pieces of the raw text: the offset in it */
};

struct plist {
	struct llm_buf b;
	struct span *v;
	size_t n, cap;
};

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

enum { B_REMOVED, B_ISOLATED, B_MERGED_PREV, B_MERGED_NEXT, B_CONTIGUOUS };

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
	uint32_t ch;     /* Metaspace replacement, Strip content */
	int behavior;    /* Split */
	int invert;      /* Split */
	int prefix;      /* ByteLevel add_prefix_space; Metaspace prepend scheme */
	int use_regex;   /* ByteLevel; Metaspace split; Digits individual */
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
	size_t dup_merges; /* merges given twice (the later rank kept) */
	char *warning;     /* what loading accepted but found odd, or NULL */

	/* The BPE model. */
	size_t n_model;      /* model ids are 0 .. n_model-1 */
	struct llm_buf pool; /* model token strings */
	size_t *tok_off;     /* (n_model), SIZE_MAX: no token */
	uint32_t *tok_len;
	struct llm_smap vocab;
	struct llm_pairmap merges;
	int byte_fallback, fuse_unk, ignore_merges;
	int32_t unk_id;
	char *prefix, *suffix; /* continuing_subword_prefix, end_of_word_suffix (NULL: none) */
	int32_t byte_tok[256]; /* <0xNN> tokens for byte fallback */
	int32_t small[2048];   /* single characters below U+0800 -> id (-1: none) */

	/* Added tokens. */
	struct added *added;
	size_t n_added;
	struct llm_buf apool;
	struct llm_smap amap; /* content -> index into added */
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
	struct llm_smap cache;
	struct llm_buf ckeys;
	struct ivec cids;
	struct centry *cent;
	size_t n_cent, cap_cent;
};

/* ---- helpers of the builders ---- */

/* Decode one code point of text known to be valid. */
static inline size_t
llm_tok_dec(const char *s, uint32_t *cp)
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
	*cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 |
	    (p[3] & 0x3f);
	return 4;
}

static inline size_t
llm_tok_charlen(const char *s)
{
	uint8_t b = (uint8_t)s[0];
	return b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
}

/* The model id of token s, or -1. */
static inline int32_t
llm_tok_model_find(const struct llm_tokenizer *t, const char *s, size_t len)
{
	return llm_smap_get(&t->vocab, t->pool.p, s, len, llm_hash_bytes(s, len));
}

/* A tokenizer with nothing in it yet (no vocabulary, no steps). */
struct llm_tokenizer *llm_tok_new(const char *name);
/* Append a zeroed step of the given kind (N_*, P_* or D_*) to *v. */
struct step *llm_tok_add_step(struct step **v, size_t *n, int kind);
/* Append nx ids to the list *v of *n (the post-processor's ids). */
void llm_tok_append_ids(int64_t **v, size_t *n, const int64_t *x, size_t nx);
/* Compile a tokenizer.json regex (Oniguruma's classes rewritten for
 * PCRE2); 0, or -1 with llm_errmsg naming name. */
int llm_tok_re_compile(struct regex *r, const char *pat0, size_t len0, const char *name);
/* Code points that NFC may change in context: those with a nonzero
 * combining class, those NFC maps to something else, and those that can be
 * the second of a composed pair (the last of some decomposition).  Text
 * without any of them is already NFC.  A bit per code point below
 * NFC_TABLE_MAX; above it everything counts as unsafe.  llm_tok_nfc_init
 * fills the table once (shared by every tokenizer). */
#define NFC_TABLE_MAX 0x30000
extern uint8_t *llm_tok_nfc_unsafe;
void llm_tok_nfc_init(void);

/* Model construction: n empty ids, then each set, then the merges (rank
 * r: the parts and their concatenation must be tokens; 0, or -1 with
 * llm_errmsg), then model_finish derives the tables of single characters
 * and <0xNN> tokens. */
void llm_tok_model_alloc(struct llm_tokenizer *t, size_t n);
/* Token id's text; -1 with llm_errmsg when id has one already (two
 * vocabulary entries with one id: which one decodes it is undefined). */
int llm_tok_model_set(struct llm_tokenizer *t, int32_t id, const char *s, size_t len);
/* 0, 1 when the merge was given before (counted in t->dup_merges: the
 * later rank replaces the earlier, as in Hugging Face's tokenizers), or -1. */
int llm_tok_model_merge(struct llm_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, uint32_t r);
void llm_tok_model_finish(struct llm_tokenizer *t);

/* Added tokens: the one of content s, or NULL; add one (or update the
 * flags of the one with the same content). */
struct added *llm_tok_find_added(const struct llm_tokenizer *t, const char *s, size_t len);
void llm_tok_add_added(struct llm_tokenizer *t, const char *s, size_t len, int32_t id, int special, int lstrip,
    int rstrip, int single_word, int normalized);
/* Index the added tokens once the model and the normalizer are known;
 * 0, or -1 with llm_errmsg. */
int llm_tok_finish(struct llm_tokenizer *t);

/* tokjson.c: load a tokenizer.json document, reading model.vocab and
 * model.merges straight from the text when fast (NULL, nothing said, if
 * that declines) or all of it through jansson. */
struct llm_tokenizer *llm_tok_load_doc(const char *text, size_t len, const char *name, int fast);

#endif
