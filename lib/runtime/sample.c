/* sample.c: see sample.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sample.h"
#include "../base/util.h"

/* A candidate while filtering: the (penalised, tempered) logit. */
struct cand {
	double l, p;
	int64_t id;
};

struct llm_sampler {
	struct llm_sampler_params p;
	int64_t n_vocab;
	struct llm_rng rng;
	float *work;    /* (n_vocab) logits after the penalty */
	int32_t *seen;  /* (n_vocab) times each id is in the penalty window */
	struct cand *c; /* (n_vocab) candidates */
};

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
llm_rng_seed(struct llm_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
llm_rng_next(struct llm_rng *r)
{
	uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return out;
}

double
llm_rng_uniform(struct llm_rng *r)
{
	return (double)(llm_rng_next(r) >> 11) * 0x1.0p-53;
}

struct llm_sampler *
llm_sampler_new(const struct llm_sampler_params *p, int64_t n_vocab)
{
	struct llm_sampler *s;

	if (n_vocab <= 0 || n_vocab > INT32_MAX)
		return llm_seterr("sampler: bad vocabulary size %lld", (long long)n_vocab), NULL;
	if (p->top_k < 0)
		return llm_seterr("sampler: top-k %lld is negative", (long long)p->top_k), NULL;
	if (!(p->top_p >= 0 && p->top_p <= 1))
		return llm_seterr("sampler: top-p %g is outside [0, 1]", p->top_p), NULL;
	if (!(p->min_p >= 0 && p->min_p <= 1))
		return llm_seterr("sampler: min-p %g is outside [0, 1]", p->min_p), NULL;
	if (!(p->repeat_penalty > 0) || isinf(p->repeat_penalty))
		return llm_seterr("sampler: repeat penalty %g is not a positive number", p->repeat_penalty), NULL;
	if (p->repeat_last_n < -1)
		return llm_seterr("sampler: repeat window %lld is below -1", (long long)p->repeat_last_n), NULL;
	if (!isfinite(p->presence_penalty) || !isfinite(p->frequency_penalty))
		return llm_seterr("sampler: presence penalty %g or frequency penalty %g is not a number",
			   p->presence_penalty, p->frequency_penalty),
		       NULL;
	if (isnan(p->temp) || isinf(p->temp))
		return llm_seterr("sampler: temperature %g is not a number", p->temp), NULL;
	s = llm_xcalloc(1, sizeof(*s));
	s->p = *p;
	s->n_vocab = n_vocab;
	llm_rng_seed(&s->rng, p->seed);
	s->work = llm_xreallocarray(NULL, (size_t)n_vocab, sizeof(*s->work));
	s->seen = llm_xcalloc((size_t)n_vocab, sizeof(*s->seen));
	s->c = llm_xreallocarray(NULL, (size_t)n_vocab, sizeof(*s->c));
	return s;
}

void
llm_sampler_free(struct llm_sampler *s)
{
	if (!s)
		return;
	free(s->work);
	free(s->seen);
	free(s->c);
	free(s);
}

/* a ranks before b: larger logit, then lower id. */
static int
before(const struct cand *a, const struct cand *b)
{
	return a->l > b->l || (a->l == b->l && a->id < b->id);
}

/* Heaps over c[0, n): "top" is the entry that ranks first (max) or last
 * (min). */
static void
sift_down(struct cand *c, size_t n, size_t i, int max)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && (max ? before(&c[l], &c[m]) : before(&c[m], &c[l])))
			m = l;
		if (r < n && (max ? before(&c[r], &c[m]) : before(&c[m], &c[r])))
			m = r;
		if (m == i)
			return;
		struct cand t = c[i];
		c[i] = c[m];
		c[m] = t;
		i = m;
	}
}

static void
heapify(struct cand *c, size_t n, int max)
{
	for (size_t i = n / 2; i-- > 0;)
		sift_down(c, n, i, max);
}

/* The logits after the penalties, into s->work: each distinct id of the
 * last repeat_last_n history tokens once, divided by the repetition
 * penalty when positive, multiplied when not (Hugging Face and llama.cpp),
 * then less the presence penalty and the frequency penalty times its count
 * (llama.cpp's penalties sampler, OpenAI's). */
static const float *
penalised(struct llm_sampler *s, const float *logits, const int64_t *hist, size_t nhist)
{
	size_t w = s->p.repeat_last_n < 0 ? nhist : (size_t)s->p.repeat_last_n;
	float pen = (float)s->p.repeat_penalty, pres = (float)s->p.presence_penalty,
	      freq = (float)s->p.frequency_penalty;

	if ((pen == 1.0f && pres == 0.0f && freq == 0.0f) || w == 0 || nhist == 0)
		return logits;
	if (w > nhist)
		w = nhist;
	memcpy(s->work, logits, (size_t)s->n_vocab * sizeof(*logits));
	for (size_t i = nhist - w; i < nhist; i++)
		if (hist[i] >= 0 && hist[i] < s->n_vocab)
			s->seen[hist[i]]++;
	for (size_t i = nhist - w; i < nhist; i++) {
		int64_t t = hist[i];
		if (t < 0 || t >= s->n_vocab || !s->seen[t])
			continue;
		float x = s->work[t];
		x = x > 0 ? x / pen : x * pen;
		s->work[t] = x - (float)s->seen[t] * freq - pres;
		s->seen[t] = 0; /* once per id */
	}
	return s->work;
}

/* NaN never wins: it ranks as -inf. */
static double
logit_of(float x)
{
	return x == x ? (double)x : -INFINITY;
}

static int64_t
argmax(const float *x, int64_t n)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (logit_of(x[i]) > logit_of(x[best]))
			best = i;
	return best;
}

/* Probabilities of c[0, n) from their logits; returns the largest. */
static double
softmax(struct cand *c, size_t n)
{
	double mx = -INFINITY, sum = 0, pmax = 0;

	for (size_t i = 0; i < n; i++)
		if (c[i].l > mx)
			mx = c[i].l;
	if (mx == -INFINITY) {
		/* Every logit -inf: uniform over the candidates. */
		for (size_t i = 0; i < n; i++)
			c[i].p = 1.0 / (double)n;
		return 1.0 / (double)n;
	}
	for (size_t i = 0; i < n; i++)
		sum += c[i].p = exp(c[i].l - mx);
	for (size_t i = 0; i < n; i++) {
		c[i].p /= sum;
		if (c[i].p > pmax)
			pmax = c[i].p;
	}
	return pmax;
}

/* The filters; the survivors are left in s->c[0, return). *sorted tells
 * whether they are in rank order. */
static size_t
filter(struct llm_sampler *s, const float *x, int *sorted)
{
	const struct llm_sampler_params *p = &s->p;
	struct cand *c = s->c;
	size_t n = (size_t)s->n_vocab;
	double inv_t = 1.0 / p->temp;

	*sorted = 0;
	if (p->top_k > 0 && (uint64_t)p->top_k < n) {
		/* A min-heap of the k best so far: O(V log k). */
		size_t k = (size_t)p->top_k;
		for (size_t i = 0; i < k; i++)
			c[i] = (struct cand){logit_of(x[i]), 0, (int64_t)i};
		heapify(c, k, 0);
		for (size_t i = k; i < n; i++) {
			struct cand e = {logit_of(x[i]), 0, (int64_t)i};
			if (before(&e, &c[0])) {
				c[0] = e;
				sift_down(c, k, 0, 0);
			}
		}
		/* Heap sort: popping the worst to the end leaves rank order. */
		for (size_t m = k; m > 1; m--) {
			struct cand t = c[0];
			c[0] = c[m - 1];
			c[m - 1] = t;
			sift_down(c, m - 1, 0, 0);
		}
		n = k;
		*sorted = 1;
	} else {
		for (size_t i = 0; i < n; i++)
			c[i] = (struct cand){logit_of(x[i]), 0, (int64_t)i};
	}
	for (size_t i = 0; i < n; i++)
		c[i].l *= inv_t;
	softmax(c, n);

	if (p->top_p < 1.0) {
		/* Keep each candidate whose better-ranked mass is below top_p:
		 * in rank order until the mass reaches it.  Unsorted, pop a
		 * max-heap (built in O(V)) to the end of the array, so that the
		 * nucleus comes out in rank order at its tail. */
		double mass = 0;
		size_t m = 0;
		if (*sorted) {
			while (m < n && (m == 0 || mass < p->top_p))
				mass += c[m++].p;
		} else {
			size_t h = n;
			heapify(c, h, 1);
			while (h > 0 && (m == 0 || mass < p->top_p)) {
				struct cand t = c[0];
				c[0] = c[h - 1];
				c[h - 1] = t;
				mass += t.p;
				h--;
				m++;
				sift_down(c, h, 0, 1);
			}
			/* c[h, n) holds the nucleus, best last: reverse it and
			 * move it to the front. */
			for (size_t i = h, j = n - 1; i < j; i++, j--) {
				struct cand t = c[i];
				c[i] = c[j];
				c[j] = t;
			}
			memmove(c, c + h, m * sizeof(*c));
			*sorted = 1;
		}
		n = m;
		softmax(c, n);
	}

	if (p->min_p > 0) {
		double pmax = 0, thr;
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (c[i].p > pmax)
				pmax = c[i].p;
		thr = p->min_p * pmax;
		for (size_t i = 0; i < n; i++)
			if (c[i].p >= thr)
				c[m++] = c[i];
		n = m;
		softmax(c, n);
	}
	return n;
}

static int
greedy(const struct llm_sampler *s)
{
	return s->p.temp <= 0 || s->p.top_k == 1;
}

size_t
llm_sampler_candidates(struct llm_sampler *s, const float *logits, const int64_t *hist, size_t nhist,
    struct llm_candidate *out)
{
	const float *x = penalised(s, logits, hist, nhist);
	int sorted;
	size_t n;

	if (greedy(s)) {
		out[0] = (struct llm_candidate){argmax(x, s->n_vocab), 1.0};
		return 1;
	}
	n = filter(s, x, &sorted);
	for (size_t i = 0; i < n; i++)
		out[i] = (struct llm_candidate){s->c[i].id, s->c[i].p};
	return n;
}

int64_t
llm_sampler_sample(struct llm_sampler *s, const float *logits, const int64_t *hist, size_t nhist)
{
	const float *x = penalised(s, logits, hist, nhist);
	double u, acc = 0;
	int sorted;
	size_t n;

	if (greedy(s))
		return argmax(x, s->n_vocab);
	n = filter(s, x, &sorted);
	u = llm_rng_uniform(&s->rng);
	for (size_t i = 0; i < n; i++) {
		acc += s->c[i].p;
		if (u < acc)
			return s->c[i].id;
	}
	/* Rounding left u above the total: the last candidate with mass. */
	for (size_t i = n; i-- > 0;)
		if (s->c[i].p > 0)
			return s->c[i].id;
	return s->c[0].id;
}
