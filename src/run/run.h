/* run.h: llm-run's modules (src/run/): the bench and the perplexity run
 * on the public API (include/llm.h), and the output helpers the command
 * line (src/llm-run.c) shares with them. */
#ifndef LLM_RUN_H
#define LLM_RUN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../../include/llm.h"

/* ---- output (common.c) ------------------------------------------------ */

/* n bytes to stdout; flushed and checked at the end (a write error is fatal). */
void run_write(const void *p, size_t n);
void run_finish_stdout(void);
/* One compact JSON value and a newline on stdout, flushed (consumes j). */
void run_print_json(json_t *j);
/* n / secs, 0 for no time. */
double run_rate(double n, double secs);
/* Resident set size in KiB. */
long run_rss_kb(void);
/* A whole file, or stdin for "-" (NUL-terminated; fatal on an error). */
char *run_read_input(const char *path, size_t *len);

/* ---- --bench (bench.c) ------------------------------------------------ */

#define BENCH_MAX 16
struct bench_list {
	int n;
	int64_t v[BENCH_MAX];
};
struct bench_spec {
	struct bench_list pp, tg, depth;
	int64_t reps;
};
/* The largest count of a list (0 for none). */
int64_t bench_list_max(const struct bench_list *l);
/* The context the largest test needs. */
int64_t bench_need(const struct bench_spec *b);
/* Run the tests on a sequence of m of context positions (0: the default,
 * or what the tests need when that is more, up to the model's limit);
 * print llama-bench's table (or JSON). */
void run_bench(struct llm *m, const char *model, int64_t context, const struct bench_spec *b, int threads,
    uint64_t seed, int json);

/* ---- --perplexity (perplexity.c) -------------------------------------- */

struct ppl_args {
	const char *path;      /* the text, "-" for stdin */
	int64_t n_ctx;         /* tokens a chunk; 0: 512, or the context when smaller */
	int64_t max_chunks;    /* 0: all */
	const char *save_base; /* --kl-divergence-base */
	const char *base;      /* --kl-divergence */
	int json, verbose;
};
/* On a sequence of m of context positions (0: the default). */
void run_perplexity(struct llm *m, const char *model, int64_t context, const struct ppl_args *a);

#endif
