/* tokbuild.c: llm_tokenizer_build of tokenizer.h, a tokenizer made from
 * arrays (GGUF's tokenizer.ggml.* keys, as gguf_tokenizer.c reads them)
 * rather than from a tokenizer.json: the pipeline steps of a SentencePiece
 * BPE (merges derived from the scores) or a byte-level BPE vocabulary. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_int.h"

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
	llm_pairmap_init(&t->merges, n);
	for (size_t id = 0; id < n; id++) {
		int32_t ty = types ? types[id] : LLM_TOKEN_NORMAL;
		if (ty == LLM_TOKEN_CONTROL || ty == LLM_TOKEN_UNKNOWN || ty == LLM_TOKEN_BYTE)
			continue;
		const char *s = t->pool.p + t->tok_off[id];
		size_t len = t->tok_len[id];
		if (llm_tok_model_find(t, s, len) != (int32_t)id) /* a duplicate string */
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
		for (size_t k = llm_tok_charlen(s); k < len; k += llm_tok_charlen(s + k)) {
			int32_t a = llm_tok_model_find(t, s, k), b = llm_tok_model_find(t, s + k, len - k);
			if (a >= 0 && b >= 0)
				llm_pairmap_put(&t->merges, a, b, (uint32_t)lo, (int32_t)id);
		}
	}
	free(d);
}

struct llm_tokenizer *
llm_tokenizer_build(const struct llm_tokenizer_vocab *v, const char *name)
{
	struct llm_tokenizer *t = llm_tok_new(name);
	int spm = v->kind == LLM_TOKENIZER_SPM_BPE;

	if (v->kind != LLM_TOKENIZER_BYTE_BPE && !spm) {
		llm_seterr("%s: unknown tokenizer kind %d", name, v->kind);
		goto fail;
	}
	if (v->n_tokens >= INT32_MAX) {
		llm_seterr("%s: too many tokens", name);
		goto fail;
	}
	llm_tok_model_alloc(t, v->n_tokens);
	for (size_t i = 0; i < v->n_tokens; i++) {
		const char *s = v->tokens[i];
		size_t len = v->lens ? v->lens[i] : strlen(s);
		int32_t ty = v->types ? v->types[i] : LLM_TOKEN_NORMAL;
		if (!llm_utf8_valid(s, len)) {
			llm_seterr("%s: token %zu is not valid UTF-8", name, i);
			goto fail;
		}
		if (llm_tok_model_find(t, s, len) < 0) {
			if (llm_tok_model_set(t, (int32_t)i, s, len) < 0)
				goto fail; /* (ids are the positions: not twice) */
		} else {                   /* a duplicate string decodes, but encoding gives the first id */
			t->tok_off[i] = t->pool.len;
			t->tok_len[i] = (uint32_t)len;
			llm_buf_add(&t->pool, s, len);
			llm_buf_add(&t->pool, "", 1);
		}
		if (ty == LLM_TOKEN_CONTROL || ty == LLM_TOKEN_USER_DEFINED)
			llm_tok_add_added(t, s, len, (int32_t)i, ty == LLM_TOKEN_CONTROL, 0, 0, 0, 0);
	}
	if (v->merges) {
		llm_pairmap_init(&t->merges, v->n_merges);
		for (size_t i = 0; i < v->n_merges; i++) {
			const char *m = v->merges[i], *sp = strchr(m, ' ');
			if (!sp) {
				llm_seterr("%s: merge %zu: '%s' is not two tokens", name, i, m);
				goto fail;
			}
			if (llm_tok_model_merge(t, m, (size_t)(sp - m), sp + 1, strlen(sp + 1), (uint32_t)i) < 0)
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
			st = llm_tok_add_step(&t->norm, &t->n_norm, N_PREPEND);
			st->s = llm_xstrdup(SPACE_MARK);
			st->len = 3;
		}
		st = llm_tok_add_step(&t->norm, &t->n_norm, N_REPLACE);
		st->s = llm_xstrdup(SPACE_MARK);
		st->len = 3;
		st->pat.kind = PAT_STRING;
		st->pat.s = llm_xstrdup(" ");
		st->pat.len = 1;
		st = llm_tok_add_step(&t->dec, &t->n_dec, D_REPLACE);
		st->s = llm_xstrdup(" ");
		st->len = 1;
		st->pat.kind = PAT_STRING;
		st->pat.s = llm_xstrdup(SPACE_MARK);
		st->pat.len = 3;
		llm_tok_add_step(&t->dec, &t->n_dec, D_BYTEFALLBACK);
		llm_tok_add_step(&t->dec, &t->n_dec, D_FUSE);
		if (v->add_space_prefix) {
			st = llm_tok_add_step(&t->dec, &t->n_dec, D_STRIP);
			st->ch = ' ';
			st->left = 1;
		}
	} else {
		const char *re = v->pattern ? v->pattern : LLM_TOKENIZER_RE_GPT2;
		st = llm_tok_add_step(&t->pre, &t->n_pre, P_SPLIT);
		st->behavior = B_ISOLATED;
		st->pat.kind = PAT_REGEX;
		if (llm_tok_re_compile(&st->pat.re, re, strlen(re), name) < 0)
			goto fail;
		llm_tok_add_step(&t->pre, &t->n_pre, P_BYTELEVEL);
		llm_tok_add_step(&t->dec, &t->n_dec, D_BYTELEVEL);
	}
	llm_tok_model_finish(t);
	if (v->add_bos && v->bos_id >= 0)
		llm_tok_append_ids(&t->post_pre, &t->n_post_pre, &v->bos_id, 1);
	if (v->add_eos && v->eos_id >= 0)
		llm_tok_append_ids(&t->post_post, &t->n_post_post, &v->eos_id, 1);
	if (llm_tok_finish(t) < 0)
		goto fail;
	t->bos = v->bos_id;
	t->eos = v->eos_id;
	return t;
fail:
	llm_tokenizer_free(t);
	return NULL;
}
