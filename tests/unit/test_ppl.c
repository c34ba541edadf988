/* Unit tests for lib/api/ppl.c: the negative log-likelihood and the KL
 * divergence of logits against closed forms (tests/quant.bats compares
 * whole perplexities with llama.cpp's). */
#include <math.h>
#include <stdint.h>

#include "../../lib/api/ppl.h"
#include "t.h"

T_TEST(nll_of_known_distributions)
{
	float u[1000], l[3] = {0, 0, (float)log(2.0)};
	for (int i = 0; i < 1000; i++)
		u[i] = 7.5f;
	T_CHECK(fabs(llm_nll(u, 1000, 123) - log(1000.0)) < 1e-12);
	/* softmax(0, 0, ln 2) = (1/4, 1/4, 1/2) */
	T_CHECK(fabs(llm_nll(l, 3, 0) - log(4.0)) < 1e-7 && fabs(llm_nll(l, 3, 2) - log(2.0)) < 1e-7);
	/* large logits do not overflow */
	float big[2] = {1000, 1000};
	T_CHECK(fabs(llm_nll(big, 2, 1) - log(2.0)) < 1e-12);
}

T_TEST(kl_of_known_distributions)
{
	float a[3] = {1, 2, 3}, b[3] = {101, 102, 103}, p[2] = {0, 0}, q[2] = {0, (float)log(3.0)};
	T_CHECK(llm_kl_logits(a, a, 3) == 0);
	T_CHECK(llm_kl_logits(a, b, 3) < 1e-12); /* softmax is shift-invariant */
	/* KL((1/2, 1/2) || (1/4, 3/4)) = 1/2 ln 2 + 1/2 ln(2/3) */
	double want = 0.5 * log(2.0) + 0.5 * log(2.0 / 3.0);
	T_CHECKF(fabs(llm_kl_logits(p, q, 2) - want) < 1e-7, "%.9g vs %.9g", llm_kl_logits(p, q, 2), want);
	T_CHECK(llm_kl_logits(q, p, 2) > 0);
}

int
main(void)
{
	T_RUN(nll_of_known_distributions);
	T_RUN(kl_of_known_distributions);
	return T_DONE();
}
