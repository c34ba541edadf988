/* fmaprobe: the floating-point peak of this machine, measured the way a
 * GEMM register tile runs: threads each keeping twelve independent 8-lane
 * f32 fused multiply-add chains busy, best of several passes.  Benchmarks
 * print it beside every prefill figure, as bwprobe is printed beside every
 * decode figure: prefill is bound by it.
 *
 *   fmaprobe [-t threads] [-r repeats]
 *
 * Prints "fma_GFLOPs <best> <median> threads <t>".  x86-64 with AVX2 and
 * FMA only (the machines the tuned pipelines are for); elsewhere it says
 * so and exits 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/base/util.h"
#include "probe.h"

#define ITERS 20000000L
#define CHAINS 12

struct part {
	float out;
};

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static void *
chains(void *arg)
{
	struct part *w = arg;
	__m256 b = _mm256_set1_ps(1.0000001f), c = _mm256_set1_ps(1e-7f);
	/* Twelve named accumulators: an array may be kept in memory. */
	__m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2), a3 = _mm256_set1_ps(3);
	__m256 a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5), a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7);
	__m256 a8 = _mm256_set1_ps(8), a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
	for (long n = 0; n < ITERS; n++) {
		a0 = _mm256_fmadd_ps(a0, b, c);
		a1 = _mm256_fmadd_ps(a1, b, c);
		a2 = _mm256_fmadd_ps(a2, b, c);
		a3 = _mm256_fmadd_ps(a3, b, c);
		a4 = _mm256_fmadd_ps(a4, b, c);
		a5 = _mm256_fmadd_ps(a5, b, c);
		a6 = _mm256_fmadd_ps(a6, b, c);
		a7 = _mm256_fmadd_ps(a7, b, c);
		a8 = _mm256_fmadd_ps(a8, b, c);
		a9 = _mm256_fmadd_ps(a9, b, c);
		a10 = _mm256_fmadd_ps(a10, b, c);
		a11 = _mm256_fmadd_ps(a11, b, c);
	}
	__m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
	    _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
	s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
	w->out = _mm256_cvtss_f32(s);
	return NULL;
}

static int
supported(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static void *
chains(void *arg)
{
	return arg;
}

static int
supported(void)
{
	return 0;
}
#endif

int
main(int argc, char **argv)
{
	struct probe_opts o = {2, 5, -1};
	probe_options(argc, argv, "usage: fmaprobe [-t threads] [-r repeats]", &o);
	int64_t threads = o.threads, reps = o.reps;
	if (!supported())
		llm_fatal("this CPU has no AVX2 and FMA: no probe for it");
	double *gf = llm_xcalloc((size_t)reps, sizeof(double)), check = 0;
	pthread_t *tid = llm_xcalloc((size_t)threads, sizeof(*tid));
	struct part *w = llm_xcalloc((size_t)threads, sizeof(*w));
	for (int64_t r = 0; r < reps; r++) {
		double t0 = llm_now();
		for (int64_t t = 0; t < threads; t++)
			pthread_create(&tid[t], NULL, chains, &w[t]);
		for (int64_t t = 0; t < threads; t++) {
			pthread_join(tid[t], NULL);
			check += w[t].out;
		}
		/* 2 flops per lane, 8 lanes, CHAINS chains, ITERS steps, threads */
		gf[r] = 16.0 * CHAINS * (double)ITERS * (double)threads / (llm_now() - t0) / 1e9;
	}
	probe_report("fma_GFLOPs", gf, reps, threads);
	printf("%s\n", check == 0 ? " (check 0?)" : "");
	free(gf);
	free(tid);
	free(w);
	return 0;
}
