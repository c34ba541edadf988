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
#include <unistd.h>

#include "../../lib/util.h"

struct part {
	const float *p;
	size_t n;
	double sum;
};

static void *
reader(void *arg)
{
	struct part *w = arg;
	/* 32 independent accumulators (four vectors' worth, whatever the
	 * vector width), so that the loop is bound by loads, not by the
	 * latency of the additions. */
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

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	int64_t threads = 2, mib = 1024, reps = 5;
	int c;

	llm_setprog(argv[0]);
	while ((c = getopt(argc, argv, "hm:r:t:")) != -1) {
		switch (c) {
		case 'h':
			printf("usage: bwprobe [-t threads] [-m MiB] [-r repeats]\n");
			return 0;
		case 'm':
			if (llm_parse_i64(optarg, 16, 1 << 20, &mib) < 0)
				llm_fatal("-m: %s", llm_errmsg());
			break;
		case 'r':
			if (llm_parse_i64(optarg, 1, 1000, &reps) < 0)
				llm_fatal("-r: %s", llm_errmsg());
			break;
		case 't':
			if (llm_parse_i64(optarg, 1, 256, &threads) < 0)
				llm_fatal("-t: %s", llm_errmsg());
			break;
		default:
			fprintf(stderr, "usage: bwprobe [-t threads] [-m MiB] [-r repeats]\n");
			return 2;
		}
	}
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
	qsort(gbps, (size_t)reps, sizeof(double), cmp_d);
	printf("read_GBps %.1f %.1f threads %lld MiB %lld%s\n", gbps[reps - 1], gbps[reps / 2],
	    (long long)threads, (long long)mib, check == 0 ? " (check 0?)" : "");
	return 0;
}
