/* ppl.c: see ppl.h.
 *
 * A sequence gives the logits of the last token of an evaluation only
 * (include/llm.h), so a chunk's context half goes through one prefill
 * (its last position gives the first scored distribution) and each
 * further scored position is one decode step. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppl.h"
#include "../runtime/runtime.h"
#include "../base/util.h"

#define KLD_MAGIC "LLMKLD01"
#define KLD_HEADER 24
#define U32(p) ((uint32_t)llm_get_le((p), 4))

/* log(sum exp(x)), in double, shifted by the maximum. */
static double
log_sum_exp(const float *x, int64_t n)
{
	double max = x[0], sum = 0;
	for (int64_t i = 1; i < n; i++)
		if (x[i] > max)
			max = x[i];
	for (int64_t i = 0; i < n; i++)
		sum += exp((double)x[i] - max);
	return max + log(sum);
}

/* KL(p || q) from the logits and their log-sum-exps. */
static double
kl_lse(const float *base, double lb, const float *q, double lq, int64_t n)
{
	double kl = 0;
	for (int64_t i = 0; i < n; i++) {
		double pb = (double)base[i] - lb, pq = (double)q[i] - lq;
		kl += exp(pb) * (pb - pq);
	}
	return kl > 0 ? kl : 0;
}

double
llm_nll(const float *logits, int64_t n, int64_t tok)
{
	return log_sum_exp(logits, n) - (double)logits[tok];
}

double
llm_kl_logits(const float *base, const float *q, int64_t n)
{
	return kl_lse(base, log_sum_exp(base, n), q, log_sum_exp(q, n), n);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The value of rank ceil(q n) of the sorted v[n]. */
static double
quantile(const double *v, size_t n, double q)
{
	size_t k = (size_t)ceil(q * (double)n);
	return v[k ? k - 1 : 0];
}

/* Mean and its standard error of a sum and a sum of squares of n values. */
static void
mean_err(double s, double s2, int64_t n, double *mean, double *err)
{
	*mean = s / (double)n;
	double var = s2 / (double)n - *mean * *mean;
	*err = var > 0 && n > 1 ? sqrt(var / (double)(n - 1)) : 0;
}

/* The base file's header and tokens against this run's. */
static int
check_base(const struct llm_map *m, const char *path, int64_t vocab, int64_t n_ctx, int64_t n_chunks,
    const int64_t *tokens, int64_t per_chunk)
{
	const uint8_t *p = m->p;
	if (m->len < KLD_HEADER || memcmp(p, KLD_MAGIC, 8) != 0)
		return llm_seterr("%s: not a base file of llm-run --kl-divergence-base", path);
	if (U32(p + 8) != 1)
		return llm_seterr("%s: version %" PRIu32 " (this program reads 1)", path, U32(p + 8));
	if (U32(p + 12) != (uint32_t)vocab)
		return llm_seterr("%s: a vocabulary of %" PRIu32 ", this model's has %" PRId64, path, U32(p + 12),
		    vocab);
	if (U32(p + 16) != (uint32_t)n_ctx || U32(p + 20) != (uint32_t)n_chunks)
		return llm_seterr("%s: %" PRIu32 " chunks of %" PRIu32 " tokens, this run has %" PRId64 " of %" PRId64
				  " (the same text, --ppl-context and --chunks are needed)",
		    path, U32(p + 20), U32(p + 16), n_chunks, n_ctx);
	uint64_t nt = (uint64_t)(n_chunks * n_ctx);
	uint64_t want = KLD_HEADER + 4 * nt + (uint64_t)(n_chunks * per_chunk) * (uint64_t)vocab * 4;
	if (m->len != want)
		return llm_seterr("%s: %zu bytes, its header implies %" PRIu64 " (truncated?)", path, m->len, want);
	for (uint64_t i = 0; i < nt; i++)
		if ((int64_t)(int32_t)U32(p + KLD_HEADER + 4 * i) != tokens[i])
			return llm_seterr("%s: token %" PRIu64 " differs: the base was run on another text or with "
					  "another tokenizer",
			    path, i);
	return 0;
}

int
llm_perplexity(struct llm_seq *s, int64_t vocab, const int64_t *tokens, size_t n, const struct llm_ppl_opts *o,
    struct llm_ppl_result *r)
{
	const float *lg;
	int64_t n_ctx = o->n_ctx, first = n_ctx / 2, per = n_ctx - 1 - first;
	struct llm_map base = {0};
	struct llm_out out = {.fd = -1};
	int64_t *buf = NULL;
	double *kls = NULL, nll = 0, nll2 = 0, bnll = 0, bnll2 = 0, kl = 0, kl2 = 0;
	int64_t same = 0;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	if (n_ctx < 4 || n_ctx > llm_seq_context(s))
		return llm_seterr("a context of %" PRId64 " tokens: the model takes 4 to %" PRId64, n_ctx,
		    llm_seq_context(s));
	if ((int64_t)n < 2 * n_ctx)
		return llm_seterr("the text is %zu tokens; a context of %" PRId64 " needs at least %" PRId64, n, n_ctx,
		    2 * n_ctx);
	r->n_chunks = (int64_t)n / n_ctx;
	if (o->max_chunks > 0 && o->max_chunks < r->n_chunks)
		r->n_chunks = o->max_chunks;
	if (o->base) {
		if (llm_map_file(&base, o->base) < 0)
			return -1;
		if (check_base(&base, o->base, vocab, n_ctx, r->n_chunks, tokens, per) < 0)
			goto out;
		kls = llm_xmalloc((size_t)(r->n_chunks * per) * sizeof(double));
		r->has_base = 1;
	}
	if (o->save_base) {
		uint8_t h[KLD_HEADER];
		memcpy(h, KLD_MAGIC, 8);
		llm_put_le(h + 8, 1, 4);
		llm_put_le(h + 12, (uint32_t)vocab, 4);
		llm_put_le(h + 16, (uint32_t)n_ctx, 4);
		llm_put_le(h + 20, (uint32_t)r->n_chunks, 4);
		if (llm_out_open(&out, o->save_base) < 0)
			goto out;
		int ok = fwrite(h, 1, sizeof(h), out.fp) == sizeof(h);
		for (int64_t i = 0; ok && i < r->n_chunks * n_ctx; i++) {
			uint8_t t[4];
			llm_put_le(t, (uint32_t)(int32_t)tokens[i], 4);
			ok = fwrite(t, 1, 4, out.fp) == 4;
		}
		if (!ok) {
			llm_seterr("%s: write error:", o->save_base);
			goto out;
		}
	}
	buf = llm_xmalloc((size_t)n_ctx * sizeof(*buf));
	const float *blog = base.p ?
	    (const float *)((const uint8_t *)base.p + KLD_HEADER + 4 * (size_t)(r->n_chunks * n_ctx)) :
	    NULL;
	double t0 = llm_now();
	for (int64_t c = 0; c < r->n_chunks; c++) {
		memcpy(buf, tokens + c * n_ctx, (size_t)n_ctx * sizeof(*buf));
		if (o->bos >= 0)
			buf[0] = o->bos;
		if (llm_seq_rewind(s, 0) != LLM_OK || llm_seq_eval(s, buf, (size_t)first + 1) != LLM_OK)
			goto out;
		for (int64_t j = first; j <= n_ctx - 2; j++) {
			if (j > first && llm_seq_eval(s, &buf[j], 1) != LLM_OK)
				goto out;
			lg = llm_seq_logits(s);
			/* each distribution's log-sum-exp once, for its NLL and the KL */
			double lq = log_sum_exp(lg, vocab), v = lq - (double)lg[buf[j + 1]];
			nll += v;
			nll2 += v * v;
			if (out.fp && fwrite(lg, sizeof(float), (size_t)vocab, out.fp) != (size_t)vocab) {
				llm_seterr("%s: write error:", o->save_base);
				goto out;
			}
			if (blog) {
				const float *b = blog + (size_t)r->n_scored * (size_t)vocab;
				double lb = log_sum_exp(b, vocab), bv = lb - (double)b[buf[j + 1]];
				double k = kl_lse(b, lb, lg, lq, vocab);
				bnll += bv;
				bnll2 += bv * bv;
				kl += k;
				kl2 += k * k;
				kls[r->n_scored] = k;
				same += llm_argmax(b, vocab) == llm_argmax(lg, vocab);
			}
			r->n_scored++;
		}
		r->n_eval += n_ctx - 1;
		if (o->progress)
			o->progress(o->arg, c, r->n_chunks, exp(nll / (double)r->n_scored), llm_now() - t0);
	}
	r->seconds = llm_now() - t0;
	double m, e;
	mean_err(nll, nll2, r->n_scored, &m, &e);
	r->ppl = exp(m);
	r->ppl_err = e * r->ppl;
	if (blog) {
		mean_err(bnll, bnll2, r->n_scored, &m, &e);
		r->base_ppl = exp(m);
		r->base_ppl_err = e * r->base_ppl;
		mean_err(kl, kl2, r->n_scored, &r->kl_mean, &r->kl_err);
		qsort(kls, (size_t)r->n_scored, sizeof(double), cmp_double);
		r->kl_median = quantile(kls, (size_t)r->n_scored, 0.5);
		r->kl_p99 = quantile(kls, (size_t)r->n_scored, 0.99);
		r->kl_max = kls[r->n_scored - 1];
		r->same_top = (double)same / (double)r->n_scored;
	}
	if (out.fp && llm_out_commit(&out) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0 && out.fp)
		llm_out_abort(&out);
	if (base.p)
		llm_unmap(&base);
	free(buf);
	free(kls);
	return rc;
}
