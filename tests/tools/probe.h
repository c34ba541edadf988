/* probe.h: what bwprobe and fmaprobe share: their options (-t threads,
 * -r repeats, and -m MiB for bwprobe) and their report of the best and
 * median of the repeats.  Header only: each probe is one C file. */
#ifndef LLM_PROBE_H
#define LLM_PROBE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../lib/base/util.h"

struct probe_opts {
	int64_t threads, reps, mib; /* mib: < 0 when the probe takes no -m */
};

/* Parses argv into o (defaults set by the caller); exits 0 after -h and
 * 2 on a usage error, with `usage` on stdout or stderr. */
static inline void
probe_options(int argc, char **argv, const char *usage, struct probe_opts *o)
{
	int c;

	llm_setprog(argv[0]);
	while ((c = getopt(argc, argv, o->mib < 0 ? "hr:t:" : "hm:r:t:")) != -1) {
		switch (c) {
		case 'h':
			printf("%s\n", usage);
			exit(0);
		case 'm':
			if (llm_parse_i64(optarg, 16, 1 << 20, &o->mib) < 0)
				llm_fatal("-m: %s", llm_errmsg());
			break;
		case 'r':
			if (llm_parse_i64(optarg, 1, 1000, &o->reps) < 0)
				llm_fatal("-r: %s", llm_errmsg());
			break;
		case 't':
			if (llm_parse_i64(optarg, 1, 256, &o->threads) < 0)
				llm_fatal("-t: %s", llm_errmsg());
			break;
		default:
			fprintf(stderr, "%s\n", usage);
			exit(2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s\n", usage);
		exit(2);
	}
}

static inline int
probe_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts the n figures v and prints "NAME <best> <median> threads <t>"
 * (without a newline: the caller ends the line). */
static inline void
probe_report(const char *name, double *v, int64_t n, int64_t threads)
{
	qsort(v, (size_t)n, sizeof(double), probe_cmp);
	printf("%s %.1f %.1f threads %lld", name, v[n - 1], v[n / 2], (long long)threads);
}

#endif
