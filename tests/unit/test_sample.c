/* Unit tests for lib/runtime/sample.c: each filter on small hand-made logits, the
 * filters against a brute-force sorted reference on a large vocabulary,
 * the draw's distribution, and seed determinism. */
#include <math.h>

#include "../../lib/runtime/sample.h"
#include "../../lib/base/util.h"
#include "t.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static struct llm_sampler *
mk(double temp, int64_t top_k, double top_p, double min_p, double pen, int64_t last_n, uint64_t seed, int64_t v)
{
	struct llm_sampler_params p = {temp, top_k, top_p, min_p, pen, last_n, seed, 0, 0};
	return llm_sampler_new(&p, v);
}

/* logits whose softmax is exactly probs (up to rounding). */
static void
logits_of(const double *probs, float *l, int n)
{
	for (int i = 0; i < n; i++)
		l[i] = (float)log(probs[i]);
}

T_TEST(greedy_takes_the_largest_logit_lowest_id_on_ties)
{
	float l[5] = {1, 3, NAN, 3, -2};
	struct llm_sampler *s = mk(0, 0, 1, 0, 1, 64, 1, 5);
	T_CHECK(llm_sampler_sample(s, l, NULL, 0) == 1);
	llm_sampler_free(s);
	/* top-k 1 is greedy at any temperature. */
	s = mk(5, 1, 1, 0, 1, 64, 1, 5);
	for (int i = 0; i < 50; i++)
		T_CHECK(llm_sampler_sample(s, l, NULL, 0) == 1);
	struct llm_candidate c[5];
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 1 && c[0].id == 1 && c[0].p == 1.0);
	llm_sampler_free(s);
	float nan3[3] = {NAN, NAN, -1};
	s = mk(0, 0, 1, 0, 1, 64, 1, 3);
	T_CHECK(llm_sampler_sample(s, nan3, NULL, 0) == 2);
	llm_sampler_free(s);
}

T_TEST(temperature_alone_is_the_softmax_of_the_scaled_logits_in_id_order)
{
	float l[4] = {1, 2, 0, -1};
	struct llm_candidate c[4];
	for (double t = 0.5; t <= 2.0; t += 0.75) {
		struct llm_sampler *s = mk(t, 0, 1, 0, 1, 64, 7, 4);
		double z = 0;
		for (int i = 0; i < 4; i++)
			z += exp(l[i] / t);
		T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 4);
		for (int i = 0; i < 4; i++)
			T_CHECKF(c[i].id == i && NEAR(c[i].p, exp(l[i] / t) / z), "t %g i %d p %g", t, i, c[i].p);
		llm_sampler_free(s);
	}
}

T_TEST(top_k_keeps_the_k_best_renormalised_in_rank_order)
{
	float l[6] = {0.5f, 2, 1, 2, -1, 1.5f};
	struct llm_candidate c[6];
	struct llm_sampler *s = mk(1, 3, 1, 0, 1, 64, 7, 6);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 3);
	/* Ties (ids 1 and 3) by id. */
	T_CHECK(c[0].id == 1 && c[1].id == 3 && c[2].id == 5);
	double z = 2 * exp(2.0) + exp(1.5);
	T_CHECK(NEAR(c[0].p, exp(2.0) / z) && NEAR(c[2].p, exp(1.5) / z));
	llm_sampler_free(s);
	/* k >= V: no filter. */
	s = mk(1, 6, 1, 0, 1, 64, 7, 6);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 6);
	llm_sampler_free(s);
}

T_TEST(top_p_keeps_the_smallest_nucleus_reaching_p)
{
	/* Id 5 has no mass, so that top-k 5 (the sorted path) leaves the
	 * distribution as it is. */
	double probs[5] = {0.125, 0.5, 0.0625, 0.25, 0.0625};
	float l[6];
	struct llm_candidate c[6];
	logits_of(probs, l, 5);
	l[5] = -INFINITY;
	struct {
		double p;
		size_t n;
	} cases[] = {{0.0, 1}, {0.4, 1}, {0.5, 1}, {0.6, 2}, {0.75, 2}, {0.8, 3}, {0.875, 3}, {0.9, 4}, {0.99, 5}};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		/* Unsorted (heap) path, then the sorted path after top-k. */
		for (int k = 0; k <= 5; k += 5) {
			struct llm_sampler *s = mk(1, k, cases[i].p, 0, 1, 64, 7, 6);
			size_t n = llm_sampler_candidates(s, l, NULL, 0, c);
			T_CHECKF(n == cases[i].n, "top_p %g k %d: %zu candidates", cases[i].p, k, n);
			T_CHECK(c[0].id == 1);
			if (n >= 2)
				T_CHECK(c[1].id == 3);
			if (n >= 3)
				T_CHECK(c[2].id == 0);
			double sum = 0;
			for (size_t j = 0; j < n; j++)
				sum += c[j].p;
			T_CHECK(NEAR(sum, 1.0));
			if (n == 2)
				T_CHECK(NEAR(c[0].p, 2.0 / 3));
			llm_sampler_free(s);
		}
	}
}

T_TEST(min_p_drops_what_is_below_min_p_times_the_best)
{
	double probs[4] = {0.5, 0.25, 0.125, 0.125};
	float l[4];
	struct llm_candidate c[4];
	logits_of(probs, l, 4);
	struct llm_sampler *s = mk(1, 0, 1, 0.3, 1, 64, 7, 4);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 2);
	T_CHECK(c[0].id == 0 && c[1].id == 1 && NEAR(c[0].p, 2.0 / 3));
	llm_sampler_free(s);
	s = mk(1, 0, 1, 0.24, 1, 64, 7, 4);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 4);
	llm_sampler_free(s);
	s = mk(1, 0, 1, 1.0, 1, 64, 7, 4);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 1 && c[0].id == 0);
	llm_sampler_free(s);
}

T_TEST(temperature_comes_before_top_p_and_min_p)
{
	float l[3] = {2, 1, 0};
	struct llm_candidate c[3];
	/* At t = 0.25 the best token has 98% of the mass, at t = 4 only 42%. */
	struct llm_sampler *s = mk(0.25, 0, 0.9, 0, 1, 64, 7, 3);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 1);
	llm_sampler_free(s);
	s = mk(4, 0, 0.9, 0, 1, 64, 7, 3);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 3);
	llm_sampler_free(s);
	/* min-p 0.5: e^-1 = 0.37 < 0.5 at t = 1, e^-0.25 = 0.78 at t = 4. */
	s = mk(1, 0, 1, 0.5, 1, 64, 7, 3);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 1);
	llm_sampler_free(s);
	s = mk(4, 0, 1, 0.5, 1, 64, 7, 3);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 3);
	llm_sampler_free(s);
}

T_TEST(repeat_penalty_divides_positive_and_multiplies_negative_logits_once_per_id)
{
	float l[4] = {2, -1, 1.5f, 0.5f};
	int64_t hist[5] = {3, 0, 0, 0, 1};
	struct llm_candidate c[4];
	/* Window 64 covers all: 0 -> 1, 1 -> -2, 3 -> 0.25; 2 untouched wins. */
	struct llm_sampler *s = mk(0, 0, 1, 0, 2, 64, 7, 4);
	T_CHECK(llm_sampler_sample(s, l, hist, 5) == 2);
	llm_sampler_free(s);
	s = mk(1, 0, 1, 0, 2, 64, 7, 4);
	T_CHECK(llm_sampler_candidates(s, l, hist, 5, c) == 4);
	double z = exp(1.0) + exp(-2.0) + exp(1.5) + exp(0.25);
	T_CHECK(NEAR(c[0].p, exp(1.0) / z) && NEAR(c[1].p, exp(-2.0) / z) && NEAR(c[3].p, exp(0.25) / z));
	/* The logits are not modified, and the next call starts afresh. */
	T_CHECK(l[0] == 2 && l[1] == -1);
	T_CHECK(llm_sampler_candidates(s, l, NULL, 0, c) == 4);
	z = exp(2.0) + exp(-1.0) + exp(1.5) + exp(0.5);
	T_CHECK(NEAR(c[0].p, exp(2.0) / z));
	llm_sampler_free(s);
	/* Window 1: only the last token (1) is penalised; 0 keeps 2 and wins. */
	s = mk(0, 0, 1, 0, 2, 1, 7, 4);
	T_CHECK(llm_sampler_sample(s, l, hist, 5) == 0);
	llm_sampler_free(s);
	/* Window 0: off.  Window -1: the whole history. */
	s = mk(0, 0, 1, 0, 100, 0, 7, 4);
	T_CHECK(llm_sampler_sample(s, l, hist, 5) == 0);
	llm_sampler_free(s);
	s = mk(0, 0, 1, 0, 2, -1, 7, 4);
	T_CHECK(llm_sampler_sample(s, l, hist, 5) == 2);
	llm_sampler_free(s);
}

/* llama.cpp's penalties: after the repetition penalty, less presence for
 * an id in the window and frequency per time it is there. */
T_TEST(presence_and_frequency_penalties_subtract_per_id_and_per_count)
{
	float l[4] = {2, -1, 1.5f, 0.5f};
	int64_t hist[5] = {3, 0, 0, 0, 1};
	struct llm_candidate c[4];
	struct llm_sampler_params p = {1, 0, 1, 0, 2, 64, 7, 0.25, 0.5};
	struct llm_sampler *s = llm_sampler_new(&p, 4);
	T_CHECK(s && llm_sampler_candidates(s, l, hist, 5, c) == 4);
	/* 0: 2 / 2 - 3 * 0.5 - 0.25 = -0.75; 1: -1 * 2 - 0.5 - 0.25 = -2.75;
	 * 2: 1.5; 3: 0.5 / 2 - 0.5 - 0.25 = -0.5 */
	double z = exp(-0.75) + exp(-2.75) + exp(1.5) + exp(-0.5);
	T_CHECK(NEAR(c[0].p, exp(-0.75) / z) && NEAR(c[1].p, exp(-2.75) / z) && NEAR(c[2].p, exp(1.5) / z) &&
	    NEAR(c[3].p, exp(-0.5) / z));
	llm_sampler_free(s);
	/* alone (repetition penalty 1), and a negative one favours repeats */
	struct llm_sampler_params q = {0, 0, 1, 0, 1, 64, 7, 0, -1};
	s = llm_sampler_new(&q, 4);
	T_CHECK(s && llm_sampler_sample(s, l, hist, 5) == 0); /* 2 + 3 */
	llm_sampler_free(s);
	struct llm_sampler_params bad = {0, 0, 1, 0, 1, 64, 7, NAN, 0};
	T_CHECK(!llm_sampler_new(&bad, 4) && strstr(llm_errmsg(), "presence penalty"));
}

T_TEST(draws_follow_the_distribution)
{
	double probs[3] = {0.5, 0.3, 0.2};
	float l[3];
	int count[3] = {0};
	int n = 200000;
	logits_of(probs, l, 3);
	struct llm_sampler *s = mk(1, 0, 1, 0, 1, 64, 12345, 3);
	for (int i = 0; i < n; i++)
		count[llm_sampler_sample(s, l, NULL, 0)]++;
	for (int i = 0; i < 3; i++)
		T_CHECKF(fabs((double)count[i] / n - probs[i]) < 0.006, "id %d: %d of %d", i, count[i], n);
	llm_sampler_free(s);
	/* Filtered draws never leave the candidates. */
	s = mk(1, 2, 1, 0, 1, 64, 99, 3);
	for (int i = 0; i < 1000; i++)
		T_CHECK(llm_sampler_sample(s, l, NULL, 0) != 2);
	llm_sampler_free(s);
}

T_TEST(a_seed_gives_the_same_tokens_another_seed_others)
{
	enum { V = 1000 };
	static float l[V];
	struct llm_rng r;
	llm_rng_seed(&r, 5);
	for (int i = 0; i < V; i++)
		l[i] = (float)(llm_rng_uniform(&r) * 4);
	struct llm_sampler *a = mk(0.8, 50, 0.95, 0.01, 1.1, 16, 42, V);
	struct llm_sampler *b = mk(0.8, 50, 0.95, 0.01, 1.1, 16, 42, V);
	struct llm_sampler *c = mk(0.8, 50, 0.95, 0.01, 1.1, 16, 43, V);
	int64_t hist[300];
	int same = 1;
	for (int i = 0; i < 300; i++) {
		int64_t x = llm_sampler_sample(a, l, hist, (size_t)i), y = llm_sampler_sample(b, l, hist, (size_t)i);
		int64_t z = llm_sampler_sample(c, l, hist, (size_t)i);
		T_CHECK(x == y);
		same &= x == z;
		hist[i] = x;
	}
	T_CHECK(!same);
	llm_sampler_free(a);
	llm_sampler_free(b);
	llm_sampler_free(c);
	/* The generator itself: fixed values for seed 0 (regression). */
	struct llm_rng r1, r2;
	llm_rng_seed(&r1, 0);
	llm_rng_seed(&r2, 0);
	for (int i = 0; i < 100; i++)
		T_CHECK(llm_rng_next(&r1) == llm_rng_next(&r2));
	double u = llm_rng_uniform(&r1);
	T_CHECK(u >= 0 && u < 1);
}

/* Reference: sort all (logit desc, id asc), then the same filters. */
static int
cmp_ref(const void *a, const void *b)
{
	const struct llm_candidate *x = a, *y = b;
	/* p holds the logit here. */
	if (x->p != y->p)
		return x->p > y->p ? -1 : 1;
	return x->id < y->id ? -1 : 1;
}

static size_t
reference(const float *l, int v, double t, int k, double top_p, double min_p, struct llm_candidate *out)
{
	size_t n = (size_t)v;
	for (int i = 0; i < v; i++)
		out[i] = (struct llm_candidate){i, l[i]};
	qsort(out, n, sizeof(*out), cmp_ref);
	if (k > 0 && k < v)
		n = (size_t)k;
	double mx = out[0].p / t, z = 0;
	for (size_t i = 0; i < n; i++)
		z += out[i].p = exp(out[i].p / t - mx);
	for (size_t i = 0; i < n; i++)
		out[i].p /= z;
	if (top_p < 1) {
		double mass = 0;
		size_t m = 0;
		while (m < n && (m == 0 || mass < top_p))
			mass += out[m++].p;
		n = m;
		for (size_t i = 0; i < n; i++)
			out[i].p /= mass;
	}
	if (min_p > 0) {
		double thr = min_p * out[0].p, mass = 0;
		size_t m = 0;
		for (size_t i = 0; i < n; i++)
			if (out[i].p >= thr)
				mass += out[m++].p;
		n = m;
		for (size_t i = 0; i < n; i++)
			out[i].p /= mass;
	}
	return n;
}

T_TEST(filters_on_a_large_vocabulary_equal_a_full_sort)
{
	enum { V = 5003 };
	static float l[V];
	static struct llm_candidate got[V], want[V];
	struct llm_rng r;
	llm_rng_seed(&r, 77);
	for (int i = 0; i < V; i++)
		l[i] = (float)(llm_rng_uniform(&r) * 8 - 4);
	l[17] = l[4000]; /* a tie */
	struct {
		double t;
		int k;
		double p, m;
	} cases[] = {{1, 0, 0.9, 0}, {0.7, 0, 0.5, 0}, {1.3, 40, 0.95, 0}, {1, 0, 0.3, 0.2}, {1, 100, 1, 0.5},
		{2, 0, 0.999, 0}, {1, 0, 1, 0.9}};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		struct llm_sampler *s = mk(cases[i].t, cases[i].k, cases[i].p, cases[i].m, 1, 64, 1, V);
		size_t n = llm_sampler_candidates(s, l, NULL, 0, got);
		size_t m = reference(l, V, cases[i].t, cases[i].k, cases[i].p, cases[i].m, want);
		T_CHECKF(n == m, "case %zu: %zu candidates, reference %zu", i, n, m);
		if (cases[i].k || cases[i].p < 1) {
			for (size_t j = 0; j < n; j++)
				T_CHECKF(got[j].id == want[j].id && fabs(got[j].p - want[j].p) < 1e-9,
				    "case %zu rank %zu: id %lld p %g, reference id %lld p %g", i, j,
				    (long long)got[j].id, got[j].p, (long long)want[j].id, want[j].p);
		}
		llm_sampler_free(s);
	}
}

T_TEST(bad_parameters_are_refused)
{
	T_CHECK(!mk(1, -1, 1, 0, 1, 64, 0, 10));
	T_CHECK(strstr(llm_errmsg(), "top-k"));
	T_CHECK(!mk(1, 0, 1.5, 0, 1, 64, 0, 10));
	T_CHECK(!mk(1, 0, 1, -0.1, 1, 64, 0, 10));
	T_CHECK(!mk(1, 0, 1, 0, 0, 64, 0, 10));
	T_CHECK(!mk(1, 0, 1, 0, 1, -2, 0, 10));
	T_CHECK(!mk(NAN, 0, 1, 0, 1, 64, 0, 10));
	T_CHECK(!mk(1, 0, 1, 0, 1, 64, 0, 0));
}

int
main(void)
{
	T_RUN(greedy_takes_the_largest_logit_lowest_id_on_ties);
	T_RUN(temperature_alone_is_the_softmax_of_the_scaled_logits_in_id_order);
	T_RUN(top_k_keeps_the_k_best_renormalised_in_rank_order);
	T_RUN(top_p_keeps_the_smallest_nucleus_reaching_p);
	T_RUN(min_p_drops_what_is_below_min_p_times_the_best);
	T_RUN(temperature_comes_before_top_p_and_min_p);
	T_RUN(repeat_penalty_divides_positive_and_multiplies_negative_logits_once_per_id);
	T_RUN(presence_and_frequency_penalties_subtract_per_id_and_per_count);
	T_RUN(draws_follow_the_distribution);
	T_RUN(a_seed_gives_the_same_tokens_another_seed_others);
	T_RUN(filters_on_a_large_vocabulary_equal_a_full_sort);
	T_RUN(bad_parameters_are_refused);
	return T_DONE();
}
