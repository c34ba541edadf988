/* bwprobe: the memory read bandwidth of this machine, measured the way a
 * decode step reads its weights: threads streaming disjoint parts of a
 * large buffer (summing floats), best of several passes.  Benchmarks print
 * it beside every decode figure, since the bandwidth of a shared machine
 * moves from minute to minute.
 *
 *   bwprobe [-t threads] [-m MiB] [-r repeats]
 *
 * Prints "read_GBps <best> <median> threads <t> MiB <m>". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/util.h"
#include "probe.h"

struct part {
	const float *p;
	size_t n;
	double sum;
};

#if defined(__x86_64__)
#include <immintrin.h>

/* Eight 8-lane accumulators, 64 floats a step: loads, not the latency of
 * the additions nor the issue width, bound the loop.  (The portable loop
 * below, compiled for SSE2, reads 35-45% less than this on the
 * development machine: the probe must not be slower than the kernels it
 * is held against.) */
__attribute__((target("avx2"))) static int
reader_avx2(struct part *w)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2"))
		return -1;
	__m256 a[8];
	for (int k = 0; k < 8; k++)
		a[k] = _mm256_setzero_ps();
	size_t i;
	for (i = 0; i + 64 <= w->n; i += 64) {
		a[0] = _mm256_add_ps(a[0], _mm256_loadu_ps(w->p + i));
		a[1] = _mm256_add_ps(a[1], _mm256_loadu_ps(w->p + i + 8));
		a[2] = _mm256_add_ps(a[2], _mm256_loadu_ps(w->p + i + 16));
		a[3] = _mm256_add_ps(a[3], _mm256_loadu_ps(w->p + i + 24));
		a[4] = _mm256_add_ps(a[4], _mm256_loadu_ps(w->p + i + 32));
		a[5] = _mm256_add_ps(a[5], _mm256_loadu_ps(w->p + i + 40));
		a[6] = _mm256_add_ps(a[6], _mm256_loadu_ps(w->p + i + 48));
		a[7] = _mm256_add_ps(a[7], _mm256_loadu_ps(w->p + i + 56));
	}
	__m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3])),
	    _mm256_add_ps(_mm256_add_ps(a[4], a[5]), _mm256_add_ps(a[6], a[7])));
	float o[8];
	_mm256_storeu_ps(o, s);
	w->sum = 0;
	for (int k = 0; k < 8; k++)
		w->sum += o[k];
	for (; i < w->n; i++)
		w->sum += w->p[i];
	return 0;
}
#else
static int
reader_avx2(struct part *w)
{
	(void)w;
	return -1;
}
#endif

static void *
reader(void *arg)
{
	struct part *w = arg;
	if (reader_avx2(w) == 0)
		return NULL;
	/* 32 independent accumulators, so that the loop is bound by loads,
	 * not by the latency of the additions. */
	float s[32] = {0};
	size_t i;
	for (i = 0; i + 32 <= w->n; i += 32)
		for (int k = 0; k < 32; k++)
			s[k] += w->p[i + k];
	for (; i < w->n; i++)
		s[0] += w->p[i];
	w->sum = 0;
	for (int k = 0; k < 32; k++)
		w->sum += s[k];
	return NULL;
}

int
main(int argc, char **argv)
{
	struct probe_opts o = {2, 5, 1024};
	probe_options(argc, argv, "usage: bwprobe [-t threads] [-m MiB] [-r repeats]", &o);
	int64_t threads = o.threads, reps = o.reps, mib = o.mib;
	size_t n = (size_t)mib << 18; /* floats */
	float *buf = llm_xmalloc(n * sizeof(float));
	for (size_t i = 0; i < n; i++)
		buf[i] = (float)(i & 1023);
	double *gbps = llm_xcalloc((size_t)reps, sizeof(double)), check = 0;
	pthread_t *tid = llm_xcalloc((size_t)threads, sizeof(*tid));
	struct part *w = llm_xcalloc((size_t)threads, sizeof(*w));
	for (int64_t r = 0; r < reps; r++) {
		double t0 = llm_now();
		for (int64_t t = 0; t < threads; t++) {
			w[t].p = buf + n / (size_t)threads * (size_t)t;
			w[t].n = t == threads - 1 ? n - n / (size_t)threads * (size_t)t : n / (size_t)threads;
			pthread_create(&tid[t], NULL, reader, &w[t]);
		}
		for (int64_t t = 0; t < threads; t++) {
			pthread_join(tid[t], NULL);
			check += w[t].sum;
		}
		gbps[r] = (double)(n * sizeof(float)) / (llm_now() - t0) / 1e9;
	}
	probe_report("read_GBps", gbps, reps, threads);
	printf(" MiB %lld%s\n", (long long)mib, check == 0 ? " (check 0?)" : "");
	return 0;
}
