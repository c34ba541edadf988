/* ppl.h: a model's quality on a text, measured as llama-perplexity
 * measures it (llm-run --perplexity): perplexity over windows of the
 * text, and the KL divergence of its next-token distributions from a base
 * model's, saved by an earlier run (--kl-divergence-base) in a file of
 * this module's format.
 *
 * Method (llama.cpp's tools/perplexity, without a stride): the tokens are
 * cut into chunks of n_ctx (the tail that fills no chunk is left out);
 * each chunk is evaluated from an empty cache, its first token replaced
 * by BOS when the model adds one; the logits at positions n_ctx/2 ..
 * n_ctx - 2 score the tokens that follow them (the first half only gives
 * context).  PPL = exp(mean NLL), its error PPL * sqrt(var(NLL) / (N - 1)).
 * KL(base || model) is computed in double from the two sets of logits at
 * every scored position.
 *
 * The base file ("LLMKLD01", little endian): magic[8], u32 version 1, u32
 * n_vocab, u32 n_ctx, u32 n_chunks, then i32 tokens[n_chunks * n_ctx] (the
 * chunks' tokens, before any BOS replacement), then f32 logits[n_vocab] of
 * each scored position in order (n_ctx - 1 - n_ctx/2 a chunk). */
#ifndef LLM_PPL_H
#define LLM_PPL_H

#include <stddef.h>
#include <stdint.h>

#include "../../include/llm.h"

/* -log softmax(logits)[tok], in double. */
double llm_nll(const float *logits, int64_t n, int64_t tok);

/* KL(p || q) of the softmaxes of base and q, in double (natural log). */
double llm_kl_logits(const float *base, const float *q, int64_t n);

struct llm_ppl_opts {
	int64_t n_ctx;         /* window; 2 * n_ctx tokens at least */
	int64_t max_chunks;    /* 0: every whole chunk */
	int64_t bos;           /* put at the start of every chunk, or -1 */
	const char *save_base; /* write the base file here, or NULL */
	const char *base;      /* compare with this base file, or NULL */
	/* After each chunk, if set: its index, the chunks in all, the running
	 * PPL, the seconds so far. */
	void (*progress)(void *arg, int64_t chunk, int64_t n_chunks, double ppl, double seconds);
	void *arg;
};

struct llm_ppl_result {
	int64_t n_chunks, n_scored, n_eval; /* chunks, tokens scored, tokens evaluated */
	double ppl, ppl_err, seconds;
	/* with a base file */
	int has_base;
	double base_ppl, base_ppl_err;
	double kl_mean, kl_err, kl_median, kl_p99, kl_max;
	double same_top; /* fraction of positions of equal argmax */
};

/* Evaluate tokens[n] on s (rewound to 0), a sequence of a model of vocab
 * ids, as above.  0, or -1 with
 * llm_errmsg (too few tokens, a base file that does not match: another
 * text, tokenizer, vocabulary or n_ctx; an unwritable save file). */
int llm_perplexity(struct llm_seq *s, int64_t vocab, const int64_t *tokens, size_t n, const struct llm_ppl_opts *o,
    struct llm_ppl_result *r);

#endif
