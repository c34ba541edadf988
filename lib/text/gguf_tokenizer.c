/* gguf_tokenizer.c: see gguf_tokenizer.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_tokenizer.h"
#include "../base/hash.h"
#include "../base/json.h"
#include "../base/util.h"

/* ---- the arrays ---- */

/* String -> first id over the token strings: hash.h's map, its keys
 * copied into one pool. */
struct strmap {
	struct llm_smap m;
	struct llm_buf pool;
};

static void
strmap_init(struct strmap *m, char **s, size_t *len, size_t n)
{
	memset(m, 0, sizeof(*m));
	llm_smap_init(&m->m, n);
	for (size_t i = 0; i < n; i++) {
		uint64_t h = llm_hash_bytes(s[i], len[i]);
		size_t off = m->pool.len;
		llm_buf_add(&m->pool, s[i], len[i]);
		if (llm_smap_get(&m->m, m->pool.p, s[i], len[i], h) < 0) /* a duplicate: the first id stays */
			llm_smap_put(&m->m, m->pool.p, off, len[i], h, (int32_t)i);
	}
}

static int32_t
strmap_get(const struct strmap *m, const char *s, size_t n)
{
	return llm_smap_get(&m->m, m->pool.p, s, n, llm_hash_bytes(s, n));
}

static void
strmap_free(struct strmap *m)
{
	llm_smap_free(&m->m);
	llm_buf_free(&m->pool);
}

/* The pre-tokenizers of tokenizer.ggml.pre, as the real tokenizer.json
 * files of these models have them. */
static const struct pre {
	const char *name;
	const char *re;
	int nfc, ignore_merges, add_bos, llama3;
} pres[] = {
	{"qwen2", LLM_TOKENIZER_RE_QWEN2, 1, 0, 0, 0},
	{"deepseek-r1-qwen", LLM_TOKENIZER_RE_QWEN2, 1, 0, 0, 0},
	{"llama-bpe", LLM_TOKENIZER_RE_LLAMA3, 0, 1, 1, 1},
	{"gpt-4o", LLM_TOKENIZER_RE_O200K, 0, 0, 0, 0},
};

static const struct pre *
find_pre(const char *name)
{
	for (size_t i = 0; name && i < LLM_NELEM(pres); i++)
		if (strcmp(pres[i].name, name) == 0)
			return &pres[i];
	return NULL;
}

/* tokenizer.ggml.model, and tokenizer.ggml.pre for a byte-level BPE: 0,
 * 1 when there is no tokenizer (the key absent, or "none"), or -1. */
static int
load_kind(struct llm_gguf_tokenizer *t, const struct llm_gguf *g, const struct pre **pre)
{
	char *model = NULL;
	int rc;

	if ((rc = llm_gguf_get_strdup(g, "tokenizer.ggml.model", &model)) < 0)
		return -1;
	if (rc == 1 || strcmp(model, "none") == 0) {
		free(model);
		return 1;
	}
	if (strcmp(model, "llama") == 0) {
		t->model = "llama";
	} else if (strcmp(model, "gpt2") == 0) {
		t->model = "gpt2";
	} else {
		llm_seterr("%s: key 'tokenizer.ggml.model': tokenizer '%s' is not supported (llama and gpt2 are)",
		    g->path, model);
		free(model);
		return -1;
	}
	free(model);
	if (strcmp(t->model, "llama") != 0) {
		if ((rc = llm_gguf_get_strdup(g, "tokenizer.ggml.pre", &t->pre)) != 0)
			return -1;
		if (!(*pre = find_pre(t->pre))) {
			char list[128] = "";
			size_t len = 0;
			for (size_t i = 0; i < LLM_NELEM(pres); i++)
				len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
				    i ? ", " : "", pres[i].name);
			llm_seterr("%s: key 'tokenizer.ggml.pre': pre-tokenizer '%s' is not supported (supported: %s)",
			    g->path, t->pre, list);
			return -1;
		}
		t->nfc = (*pre)->nfc;
		t->ignore_merges = (*pre)->ignore_merges;
	}
	return 0;
}

/* Tokens: every one valid UTF-8 without NUL bytes; *np gets their
 * number. */
static int
load_tokens(struct llm_gguf_tokenizer *t, const struct llm_gguf *g, size_t *np)
{
	const struct llm_gguf_value *a;
	size_t n;

	if (llm_gguf_get_arr(g, "tokenizer.ggml.tokens", LLM_GGUF_STRING, &a) != 0)
		return -1;
	n = (size_t)a->len;
	if (n == 0 || n >= INT32_MAX) {
		llm_seterr("%s: key 'tokenizer.ggml.tokens': %zu tokens", g->path, n);
		return -1;
	}
	t->tokens = llm_xcalloc(n, sizeof(*t->tokens));
	t->lens = llm_xcalloc(n, sizeof(*t->lens));
	t->v.n_tokens = n; /* the unfilled entries are NULL: free works */
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *s = llm_gguf_arr_str(a, i, &len);
		if (!s || memchr(s, 0, len) || !llm_utf8_valid(s, len)) {
			llm_seterr("%s: key 'tokenizer.ggml.tokens': token %zu is %s", g->path, i,
			    !s ? "missing" :
				memchr(s, 0, len) ? "holds a NUL byte" :
						    "not valid UTF-8");
			return -1;
		}
		t->tokens[i] = llm_xmalloc(len + 1);
		memcpy(t->tokens[i], s, len);
		t->tokens[i][len] = 0;
		t->lens[i] = len;
	}
	*np = n;
	return 0;
}

/* Types: optional, normal when absent. */
static int
load_types(struct llm_gguf_tokenizer *t, const struct llm_gguf *g, size_t n)
{
	const struct llm_gguf_value *a;
	int rc;

	if ((rc = llm_gguf_get_arr(g, "tokenizer.ggml.token_type", LLM_GGUF_NTYPES, &a)) < 0)
		return -1;
	if (rc == 0) {
		if (a->len != n) {
			llm_seterr("%s: key 'tokenizer.ggml.token_type': %" PRIu64 " entries for %zu tokens", g->path,
			    a->len, n);
			return -1;
		}
		t->types = llm_xcalloc(n, sizeof(*t->types));
		for (size_t i = 0; i < n; i++) {
			struct llm_gguf_value e;
			int64_t ty;
			if (llm_gguf_arr_elem(a, i, &e) < 0 || llm_gguf_val_i64(&e, &ty) < 0 || ty < 1 || ty > 6) {
				llm_seterr("%s: key 'tokenizer.ggml.token_type': entry %zu is not a token type "
					   "(1 to 6)",
				    g->path, i);
				return -1;
			}
			t->types[i] = (int32_t)ty;
		}
	}
	return 0;
}

/* Scores: SentencePiece derives its merges from them. */
static int
load_scores(struct llm_gguf_tokenizer *t, const struct llm_gguf *g, size_t n, int spm)
{
	const struct llm_gguf_value *a;
	int rc;

	if ((rc = llm_gguf_get_arr(g, "tokenizer.ggml.scores", LLM_GGUF_F32, &a)) < 0)
		return -1;
	if (rc == 1 && spm) {
		llm_seterr("%s: missing key 'tokenizer.ggml.scores' (a SentencePiece vocabulary needs them)", g->path);
		return -1;
	}
	if (rc == 0) {
		if (a->len != n) {
			llm_seterr("%s: key 'tokenizer.ggml.scores': %" PRIu64 " entries for %zu tokens", g->path,
			    a->len, n);
			return -1;
		}
		t->scores = llm_xcalloc(n, sizeof(*t->scores));
		for (size_t i = 0; i < n; i++) {
			memcpy(&t->scores[i], a->data + i * 4, 4);
			if (isnan(t->scores[i])) {
				llm_seterr("%s: key 'tokenizer.ggml.scores': entry %zu is NaN", g->path, i);
				return -1;
			}
		}
	}
	return 0;
}

/* Merges, of a byte-level BPE: "left right" with both sides and their
 * concatenation in the vocabulary. */
static int
load_merges(struct llm_gguf_tokenizer *t, const struct llm_gguf *g, size_t n)
{
	const struct llm_gguf_value *a;
	struct strmap sm;

	if (llm_gguf_get_arr(g, "tokenizer.ggml.merges", LLM_GGUF_STRING, &a) != 0)
		return -1;
	t->merges = llm_xcalloc(a->len ? (size_t)a->len : 1, sizeof(*t->merges));
	t->v.n_merges = (size_t)a->len;
	strmap_init(&sm, t->tokens, t->lens, n);
	for (size_t i = 0; i < a->len; i++) {
		size_t len;
		const char *s = llm_gguf_arr_str(a, i, &len), *sp = s ? memchr(s, ' ', len) : NULL;
		if (!sp || memchr(s, 0, len) || strmap_get(&sm, s, (size_t)(sp - s)) < 0 ||
		    strmap_get(&sm, sp + 1, len - (size_t)(sp - s) - 1) < 0) {
			strmap_free(&sm);
			llm_seterr("%s: key 'tokenizer.ggml.merges': merge %zu is not two tokens", g->path, i);
			return -1;
		}
		t->merges[i] = llm_xmalloc(len + 1);
		memcpy(t->merges[i], s, len);
		t->merges[i][len] = 0;
		char *cat = llm_xmalloc(len);
		memcpy(cat, s, (size_t)(sp - s));
		memcpy(cat + (sp - s), sp + 1, len - (size_t)(sp - s) - 1);
		int32_t id = strmap_get(&sm, cat, len - 1);
		free(cat);
		if (id < 0) {
			strmap_free(&sm);
			llm_seterr("%s: key 'tokenizer.ggml.merges': merge %zu ('%s') does not make a token", g->path,
			    i, t->merges[i]);
			return -1;
		}
	}
	strmap_free(&sm);
	return 0;
}

/* Special ids and flags. */
static int
load_ids(struct llm_gguf_tokenizer *t, const struct llm_gguf *g, size_t n, int spm, const struct pre *pre)
{
	int64_t id;
	int b;

	if (llm_gguf_token_id(g, "tokenizer.ggml.bos_token_id", n, &t->v.bos_id) < 0 ||
	    llm_gguf_token_id(g, "tokenizer.ggml.eos_token_id", n, &t->v.eos_id) < 0 ||
	    llm_gguf_token_id(g, "tokenizer.ggml.unknown_token_id", n, &t->v.unk_id) < 0 ||
	    llm_gguf_token_id(g, "tokenizer.ggml.padding_token_id", n, &t->pad_id) < 0)
		return -1;
	llm_gguf_add_stop_id(t->eos_ids, &t->n_eos, t->v.eos_id);
	if (llm_gguf_token_id(g, "tokenizer.ggml.eot_token_id", n, &id) < 0)
		return -1;
	llm_gguf_add_stop_id(t->eos_ids, &t->n_eos, id);
	if (llm_gguf_token_id(g, "tokenizer.ggml.eom_token_id", n, &id) < 0)
		return -1;
	llm_gguf_add_stop_id(t->eos_ids, &t->n_eos, id);
	b = spm || (pre && pre->add_bos);
	if (llm_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) < 0)
		return -1;
	t->v.add_bos = b && t->v.bos_id >= 0;
	b = 0;
	if (llm_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b) < 0)
		return -1;
	t->v.add_eos = b && t->v.eos_id >= 0;
	b = 1;
	if (spm && llm_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b) < 0)
		return -1;
	t->v.add_space_prefix = spm && b;
	if (llm_gguf_get_strdup(g, "tokenizer.chat_template", &t->chat_template) < 0)
		return -1;
	return 0;
}
int
llm_gguf_tokenizer_load(struct llm_gguf_tokenizer *t, const struct llm_gguf *g)
{
	const struct pre *pre = NULL;
	size_t n;
	int rc, spm;

	memset(t, 0, sizeof(*t));
	t->pad_id = -1;
	t->name = llm_xstrdup(g->path);
	if ((rc = load_kind(t, g, &pre)) != 0) {
		llm_gguf_tokenizer_free(t);
		return rc;
	}
	spm = strcmp(t->model, "llama") == 0;
	if (load_tokens(t, g, &n) < 0 || load_types(t, g, n) < 0 || load_scores(t, g, n, spm) < 0 ||
	    (!spm && load_merges(t, g, n) < 0) || load_ids(t, g, n, spm, pre) < 0) {
		llm_gguf_tokenizer_free(t);
		return -1;
	}
	t->v.kind = spm ? LLM_TOKENIZER_SPM_BPE : LLM_TOKENIZER_BYTE_BPE;
	t->v.tokens = (const char *const *)t->tokens;
	t->v.lens = t->lens;
	t->v.scores = t->scores;
	t->v.types = t->types;
	t->v.merges = spm ? NULL : (const char *const *)t->merges;
	t->v.pattern = pre ? pre->re : NULL;
	return 0;
}

void
llm_gguf_tokenizer_free(struct llm_gguf_tokenizer *t)
{
	for (size_t i = 0; t->tokens && i < t->v.n_tokens; i++)
		free(t->tokens[i]);
	for (size_t i = 0; t->merges && i < t->v.n_merges; i++)
		free(t->merges[i]);
	free(t->tokens);
	free(t->lens);
	free(t->scores);
	free(t->types);
	free(t->merges);
	free(t->pre);
	free(t->chat_template);
	free(t->name);
	memset(t, 0, sizeof(*t));
}

/* ---- tokenizer.json ---- */

/* Code points in s[0..n). */
static size_t
nchars(const char *s, size_t n)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

struct spm_merge {
	int32_t l, r;
	float score;
	uint32_t llen, rlen; /* in code points */
	size_t seq;          /* position before sorting: Python's sort is stable */
};

static int
cmp_local(const void *a, const void *b)
{
	const struct spm_merge *x = a, *y = b;
	if (x->l != y->l)
		return x->l < y->l ? -1 : 1;
	return x->r < y->r ? -1 : x->r > y->r;
}

/* sorted(merges, key=(score, len(l), len(r)), reverse=True), stable. */
static int
cmp_merge(const void *a, const void *b)
{
	const struct spm_merge *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->llen != y->llen)
		return x->llen > y->llen ? -1 : 1;
	if (x->rlen != y->rlen)
		return x->rlen > y->rlen ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The id of a piece in the Hugging Face vocabulary (unused tokens are not
 * in it), or -1. */
static int32_t
vocab_id(const struct llm_gguf_tokenizer *t, const struct strmap *sm, const char *s, size_t n)
{
	int32_t id = strmap_get(sm, s, n);
	return id >= 0 && t->types && t->types[id] == LLM_TOKEN_UNUSED ? -1 : id;
}

/* transformers' generate_merges (convert_slow_tokenizer.py) over the
 * SentencePiece vocabulary: for each piece in id order, every split into
 * two pieces of the vocabulary, sorted by the ids of the parts; then all of
 * them by the piece's score, the left part's length and the right part's
 * length, descending, ties in that order. */
static json_t *
spm_merges(const struct llm_gguf_tokenizer *t, const struct strmap *sm)
{
	struct spm_merge *all = NULL;
	size_t n = 0, cap = 0;
	json_t *out = json_array();

	for (size_t id = 0; id < t->v.n_tokens; id++) {
		const char *s = t->tokens[id];
		size_t len = t->lens[id], n0 = n;
		if (vocab_id(t, sm, s, len) != (int32_t)id)
			continue; /* a duplicate or unused piece */
		for (size_t k = 1; k < len; k++) {
			if (((unsigned char)s[k] & 0xc0) == 0x80)
				continue;
			int32_t l = vocab_id(t, sm, s, k), r = vocab_id(t, sm, s + k, len - k);
			if (l < 0 || r < 0)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 1024;
				all = llm_xreallocarray(all, cap, sizeof(*all));
			}
			all[n++] = (struct spm_merge){l, r, t->scores[id], (uint32_t)nchars(s, k),
				(uint32_t)nchars(s + k, len - k), 0};
		}
		if (n - n0 > 1)
			qsort(all + n0, n - n0, sizeof(*all), cmp_local);
	}
	for (size_t i = 0; i < n; i++)
		all[i].seq = i;
	if (n)
		qsort(all, n, sizeof(*all), cmp_merge);
	for (size_t i = 0; i < n; i++) {
		json_t *p = json_array();
		json_array_append_new(p, json_stringn(t->tokens[all[i].l], t->lens[all[i].l]));
		json_array_append_new(p, json_stringn(t->tokens[all[i].r], t->lens[all[i].r]));
		json_array_append_new(out, p);
	}
	free(all);
	return out;
}

/* The merges of a byte-level vocabulary as pairs. */
static json_t *
bpe_merges(const struct llm_gguf_tokenizer *t)
{
	json_t *out = json_array();
	for (size_t i = 0; i < t->v.n_merges; i++) {
		const char *s = t->merges[i], *sp = strchr(s, ' ');
		json_t *p = json_array();
		json_array_append_new(p, json_stringn(s, (size_t)(sp - s)));
		json_array_append_new(p, json_string(sp + 1));
		json_array_append_new(out, p);
	}
	return out;
}

static json_t *
obj_type(const char *type)
{
	json_t *o = json_object();
	json_object_set_new(o, "type", json_string(type));
	return o;
}

static json_t *
byte_level(int add_prefix_space, int trim_offsets, int use_regex)
{
	json_t *o = obj_type("ByteLevel");
	json_object_set_new(o, "add_prefix_space", json_boolean(add_prefix_space));
	json_object_set_new(o, "trim_offsets", json_boolean(trim_offsets));
	json_object_set_new(o, "use_regex", json_boolean(use_regex));
	return o;
}

/* {"type": "Replace", "pattern": {"String": from}, "content": to} */
static json_t *
replace(const char *from, const char *to)
{
	json_t *o = obj_type("Replace"), *p = json_object();
	json_object_set_new(p, "String", json_string(from));
	json_object_set_new(o, "pattern", p);
	json_object_set_new(o, "content", json_string(to));
	return o;
}

static json_t *
template_piece(const char *kind, const char *id, int type_id)
{
	json_t *o = json_object(), *p = json_object();
	json_object_set_new(p, "id", json_string(id));
	json_object_set_new(p, "type_id", json_integer(type_id));
	json_object_set_new(o, kind, p);
	return o;
}

/* TemplateProcessing that puts BOS before and/or EOS after each sequence. */
static json_t *
template_processing(const struct llm_gguf_tokenizer *t)
{
	json_t *o = obj_type("TemplateProcessing"), *single = json_array(), *pair = json_array();
	json_t *sp = json_object();
	const char *bos = t->v.add_bos ? t->tokens[t->v.bos_id] : NULL;
	const char *eos = t->v.add_eos ? t->tokens[t->v.eos_id] : NULL;

	for (int seq = 0; seq < 2; seq++) {
		if (bos) {
			json_array_append_new(pair, template_piece("SpecialToken", bos, seq));
			if (!seq)
				json_array_append_new(single, template_piece("SpecialToken", bos, 0));
		}
		json_array_append_new(pair, template_piece("Sequence", seq ? "B" : "A", seq));
		if (!seq)
			json_array_append_new(single, template_piece("Sequence", "A", 0));
		if (eos) {
			json_array_append_new(pair, template_piece("SpecialToken", eos, seq));
			if (!seq)
				json_array_append_new(single, template_piece("SpecialToken", eos, 0));
		}
	}
	for (int k = 0; k < 2; k++) {
		const char *s = k ? eos : bos;
		int64_t id = k ? t->v.eos_id : t->v.bos_id;
		if (!s || json_object_get(sp, s))
			continue;
		json_t *e = json_object(), *ids = json_array(), *toks = json_array();
		json_array_append_new(ids, json_integer(id));
		json_array_append_new(toks, json_string(s));
		json_object_set_new(e, "id", json_string(s));
		json_object_set_new(e, "ids", ids);
		json_object_set_new(e, "tokens", toks);
		json_object_set_new(sp, s, e);
	}
	json_object_set_new(o, "single", single);
	json_object_set_new(o, "pair", pair);
	json_object_set_new(o, "special_tokens", sp);
	return o;
}

json_t *
llm_gguf_tokenizer_json(const struct llm_gguf_tokenizer *t)
{
	int spm = t->v.kind == LLM_TOKENIZER_SPM_BPE;
	const struct pre *pre = find_pre(t->pre);
	json_t *root = json_object(), *added = json_array(), *vocab = json_object(), *model = obj_type("BPE");
	json_t *norm, *pretok, *post, *dec;
	struct strmap sm;
	size_t n = t->v.n_tokens;

	strmap_init(&sm, t->tokens, t->lens, n);
	for (size_t i = 0; i < n; i++) {
		int32_t ty = t->types ? t->types[i] : LLM_TOKEN_NORMAL;
		/* Unused tokens ("[PAD151665]" where convert_hf_to_gguf.py filled
		 * the vocabulary up to the embedding's rows) are not in the Hugging
		 * Face vocabulary: the ids decode to nothing, as there. */
		if (ty != LLM_TOKEN_UNUSED && strmap_get(&sm, t->tokens[i], t->lens[i]) == (int32_t)i)
			json_object_set_new(vocab, t->tokens[i], json_integer((json_int_t)i));
		if (ty != LLM_TOKEN_CONTROL && ty != LLM_TOKEN_USER_DEFINED)
			continue;
		json_t *a = json_object();
		json_object_set_new(a, "id", json_integer((json_int_t)i));
		json_object_set_new(a, "content", json_string(t->tokens[i]));
		json_object_set_new(a, "single_word", json_false());
		json_object_set_new(a, "lstrip", json_false());
		json_object_set_new(a, "rstrip", json_false());
		json_object_set_new(a, "normalized", json_false());
		json_object_set_new(a, "special", json_boolean(ty == LLM_TOKEN_CONTROL));
		json_array_append_new(added, a);
	}

	if (spm) {
		json_t *seq = json_array();
		norm = obj_type("Sequence");
		if (t->v.add_space_prefix) {
			json_t *p = obj_type("Prepend");
			json_object_set_new(p, "prepend", json_string("\xe2\x96\x81"));
			json_array_append_new(seq, p);
		}
		json_array_append_new(seq, replace(" ", "\xe2\x96\x81"));
		json_object_set_new(norm, "normalizers", seq);
		pretok = json_null();
		post = t->v.add_bos || t->v.add_eos ? template_processing(t) : json_null();
		dec = obj_type("Sequence");
		seq = json_array();
		json_array_append_new(seq, replace("\xe2\x96\x81", " "));
		json_array_append_new(seq, obj_type("ByteFallback"));
		json_array_append_new(seq, obj_type("Fuse"));
		if (t->v.add_space_prefix) {
			json_t *s = obj_type("Strip");
			json_object_set_new(s, "content", json_string(" "));
			json_object_set_new(s, "start", json_integer(1));
			json_object_set_new(s, "stop", json_integer(0));
			json_array_append_new(seq, s);
		}
		json_object_set_new(dec, "decoders", seq);
	} else {
		json_t *seq = json_array(), *split = obj_type("Split"), *pat = json_object();
		norm = pre->nfc ? obj_type("NFC") : json_null();
		pretok = obj_type("Sequence");
		json_object_set_new(pat, "Regex", json_string(pre->re));
		json_object_set_new(split, "pattern", pat);
		json_object_set_new(split, "behavior", json_string("Isolated"));
		json_object_set_new(split, "invert", json_false());
		json_array_append_new(seq, split);
		json_array_append_new(seq, byte_level(0, pre->llama3, 0));
		json_object_set_new(pretok, "pretokenizers", seq);
		post = t->v.add_bos || t->v.add_eos ? template_processing(t) :
		    pre->llama3                     ? byte_level(1, 0, 1) :
						      byte_level(0, 0, 0);
		dec = pre->llama3 ? byte_level(1, 1, 1) : byte_level(0, 0, 0);
	}

	json_object_set_new(model, "dropout", json_null());
	json_object_set_new(model, "unk_token",
	    spm && t->v.unk_id >= 0 ? json_string(t->tokens[t->v.unk_id]) : json_null());
	json_object_set_new(model, "continuing_subword_prefix", spm || pre->llama3 ? json_null() : json_string(""));
	json_object_set_new(model, "end_of_word_suffix", spm || pre->llama3 ? json_null() : json_string(""));
	json_object_set_new(model, "fuse_unk", json_boolean(spm));
	json_object_set_new(model, "byte_fallback", json_boolean(spm));
	json_object_set_new(model, "ignore_merges", json_boolean(t->ignore_merges));
	json_object_set_new(model, "vocab", vocab);
	json_object_set_new(model, "merges", spm ? spm_merges(t, &sm) : bpe_merges(t));
	strmap_free(&sm);

	json_object_set_new(root, "version", json_string("1.0"));
	json_object_set_new(root, "truncation", json_null());
	json_object_set_new(root, "padding", json_null());
	json_object_set_new(root, "added_tokens", added);
	json_object_set_new(root, "normalizer", norm);
	json_object_set_new(root, "pre_tokenizer", pretok);
	json_object_set_new(root, "post_processor", post);
	json_object_set_new(root, "decoder", dec);
	json_object_set_new(root, "model", model);
	return root;
}

static json_t *
token_or_null(const struct llm_gguf_tokenizer *t, int64_t id)
{
	return id >= 0 ? json_string(t->tokens[id]) : json_null();
}

json_t *
llm_gguf_tokenizer_config(const struct llm_gguf_tokenizer *t)
{
	json_t *c = json_object();

	json_object_set_new(c, "add_bos_token", json_boolean(t->v.add_bos));
	json_object_set_new(c, "add_eos_token", json_boolean(t->v.add_eos));
	json_object_set_new(c, "bos_token", token_or_null(t, t->v.bos_id));
	json_object_set_new(c, "eos_token", token_or_null(t, t->v.eos_id));
	json_object_set_new(c, "unk_token", token_or_null(t, t->v.unk_id));
	json_object_set_new(c, "pad_token", token_or_null(t, t->pad_id));
	json_object_set_new(c, "clean_up_tokenization_spaces", json_false());
	json_object_set_new(c, "tokenizer_class", json_string("PreTrainedTokenizerFast"));
	if (t->chat_template)
		json_object_set_new(c, "chat_template", json_string(t->chat_template));
	return c;
}
