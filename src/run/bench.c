/* bench.c: llm-run --bench, llama-bench's tests on the public API.
 *
 * Random tokens, no sampling and no tokenizer.  The spec is llama-bench's
 * -p/-n/-d/-r (lists of counts; default pp512, tg128, 5 repetitions) or
 * pp=N,tg=N,depth=N,reps=N.  pp: a prefill of N tokens at position depth
 * (through prefill_kv when depth > 0); tg: N decode steps after depth
 * tokens, or after one prompt token when depth is 0.  Each test runs reps
 * times after one warm-up run; the rate is the mean over the runs with
 * its sample standard deviation.  The depth tokens are evaluated once per
 * depth, untimed, and every run rewinds the sequence to them: the phases
 * write positions [pos, pos + n) only, so the first depth positions stay
 * as they were. */
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/util.h"
#include "run.h"

/* What llama-bench's columns say of the model. */
struct bench_model {
	const char *type; /* "qwen2 1.8B BF16", as llama_model_desc */
	uint64_t size;    /* bytes of weights */
	uint64_t params;  /* elements of the checkpoint's tensors */
	int threads;
	const char *cpu; /* the target's CPU */
};

static void
bench_model_init(struct bench_model *bm, const struct llm *m, int threads)
{
	bm->type = llm_model_desc(m);
	bm->size = llm_model_size(m);
	bm->params = llm_model_n_params(m);
	bm->cpu = llm_target_cpu(m);
	/* OpenMP's default: the CPUs this process may run on */
	const char *env = getenv("OMP_NUM_THREADS");
	cpu_set_t set;
	bm->threads = threads > 0                        ? threads :
	    env && atoi(env) > 0                         ? atoi(env) :
	    sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) :
							   1;
}

/* llama-bench's markdown: its columns, widths and alignment. */
/* a table, one line */
/* clang-format off */
static const struct {
	const char *name;
	int width; /* < 0: left-aligned */
} bench_cols[] = {
	{"model", -30}, {"size", 10}, {"params", 10}, {"backend", -10}, {"threads", 7}, {"test", 15}, {"t/s", 20},
};
/* clang-format on */

static void
bench_header(void)
{
	putchar('|');
	for (size_t i = 0; i < LLM_NELEM(bench_cols); i++)
		printf(" %*s |", bench_cols[i].width, bench_cols[i].name);
	printf("\n|");
	for (size_t i = 0; i < LLM_NELEM(bench_cols); i++) {
		int w = abs(bench_cols[i].width);
		printf(" %.*s%c |", w - 1, "------------------------------", bench_cols[i].width > 0 ? ':' : '-');
	}
	putchar('\n');
}

static void
bench_row(const struct bench_model *bm, const char *test, double mean, double sd)
{
	char size[32], params[32], ts[64], threads[16];
	if (bm->size < 1024ull * 1024 * 1024)
		snprintf(size, sizeof(size), "%.2f MiB", (double)bm->size / 1024.0 / 1024.0);
	else
		snprintf(size, sizeof(size), "%.2f GiB", (double)bm->size / 1024.0 / 1024.0 / 1024.0);
	if (bm->params < 1000000000)
		snprintf(params, sizeof(params), "%.2f M", (double)bm->params / 1e6);
	else
		snprintf(params, sizeof(params), "%.2f B", (double)bm->params / 1e9);
	snprintf(ts, sizeof(ts), "%.2f ± %.2f", mean, sd);
	snprintf(threads, sizeof(threads), "%d", bm->threads);
	const char *v[] = {bm->type, size, params, "CPU", threads, test, ts};
	putchar('|');
	for (size_t i = 0; i < LLM_NELEM(bench_cols); i++)
		printf(" %*s |", bench_cols[i].width + (i == LLM_NELEM(bench_cols) - 1), v[i]); /* ± is 2 bytes */
	putchar('\n');
}

/* n random tokens below the vocabulary. */
static void
bench_tokens(struct drand48_data *rng, int64_t vocab, int64_t *tokens, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		long r;
		lrand48_r(rng, &r);
		tokens[i] = (int64_t)((uint64_t)r % (uint64_t)vocab);
	}
}

static void
eval(struct llm_seq *s, const char *model, const int64_t *ids, size_t n)
{
	if (llm_seq_eval(s, ids, n) != LLM_OK)
		llm_fatal("%s: %s", model, llm_errmsg());
}

/* One test, reps times after a warm-up: the rates. */
static void
bench_test(struct llm_seq *s, const char *model, struct drand48_data *rng, int64_t vocab, int64_t *tokens, int64_t npp,
    int64_t ntg, int64_t d, int64_t reps, double *rates)
{
	int64_t n = npp > ntg + 1 ? npp : ntg + 1;
	for (int64_t rep = -1; rep < reps; rep++) {
		double t0, secs;
		int64_t first = 0;
		bench_tokens(rng, vocab, tokens, n);
		if (llm_seq_rewind(s, d) != LLM_OK)
			llm_fatal("%s: %s", model, llm_errmsg());
		if (npp) {
			t0 = llm_now();
			eval(s, model, tokens, (size_t)npp);
			secs = llm_now() - t0;
		} else {
			if (d == 0) {
				eval(s, model, tokens, 1);
				first = 1;
			}
			t0 = llm_now();
			for (int64_t i = 0; i < ntg; i++)
				eval(s, model, &tokens[first + i], 1);
			secs = llm_now() - t0;
		}
		if (rep >= 0) /* not the warm-up */
			rates[rep] = run_rate((double)(npp ? npp : ntg), secs);
	}
}

int64_t
bench_list_max(const struct bench_list *l)
{
	int64_t m = 0;
	for (int i = 0; i < l->n; i++)
		m = l->v[i] > m ? l->v[i] : m;
	return m;
}

/* Its depth, then the prompt, or one token and the generated ones (tg
 * needs a token of context before its first decode step). */
int64_t
bench_need(const struct bench_spec *b)
{
	int64_t pmax = bench_list_max(&b->pp), tmax = bench_list_max(&b->tg), need = 0;
	for (int i = 0; i < b->depth.n; i++) {
		int64_t d = b->depth.v[i], p = d + pmax, t = (d > 0 ? d : 1) + tmax;
		if (p > need)
			need = p;
		if (t > need)
			need = t;
	}
	return need;
}

/* One test's line of llama-bench's -o json, with ours before its fields. */
static json_t *
test_json(const struct bench_model *bm, const char *name, int64_t npp, int64_t ntg, int64_t d, const double *rates,
    int64_t reps, double mean, double sd)
{
	json_t *samples = json_array();
	for (int64_t r = 0; r < reps; r++)
		json_array_append_new(samples, json_real(rates[r]));
	return json_pack("{s:s,s:I,s:f,s:f,s:s,s:I,s:I,s:s,s:s*,s:i,s:I,s:I,s:I,s:f,s:f,s:o}", "test", name, "depth",
	    (json_int_t)d, "tokens_per_s", mean, "stddev", sd, "model_type", bm->type, "model_size",
	    (json_int_t)bm->size, "model_n_params", (json_int_t)bm->params, "backends", "CPU", "cpu", bm->cpu,
	    "n_threads", bm->threads, "n_prompt", (json_int_t)npp, "n_gen", (json_int_t)ntg, "n_depth", (json_int_t)d,
	    "avg_ts", mean, "stddev_ts", sd, "samples_ts", samples);
}

void
run_bench(struct llm *m, const char *model, int64_t context, const struct bench_spec *b, int threads, uint64_t seed,
    int json, int verbose, double t_load)
{
	struct drand48_data rng;
	struct bench_model bm;
	struct llm_seq *s;
	int64_t pmax = bench_list_max(&b->pp), tmax = bench_list_max(&b->tg), dmax = bench_list_max(&b->depth);
	int64_t n = pmax > tmax + 1 ? pmax : tmax + 1, vocab = llm_vocab_size(m);
	json_t *arr = json_array();

	if (llm_seq_new(m, context, &s) != LLM_OK)
		llm_fatal("%s: %s", model, llm_errmsg());
	if (!context && bench_need(b) > llm_seq_context(s) && bench_need(b) <= llm_context_limit(m)) {
		llm_seq_free(&s);
		if (llm_seq_new(m, bench_need(b), &s) != LLM_OK)
			llm_fatal("%s: %s", model, llm_errmsg());
	}
	context = llm_seq_context(s);
	if (verbose)
		run_describe(model, m, s, t_load);
	if (bench_need(b) > context) {
		char depth[32] = "";
		if (dmax > 0)
			snprintf(depth, sizeof(depth), ",depth=%" PRId64, dmax);
		llm_fatal("%s: --bench pp=%" PRId64 ",tg=%" PRId64 "%s does not fit the context of %" PRId64
			  " positions (-c)",
		    model, pmax, tmax, depth, context);
	}
	int64_t *tokens = llm_xreallocarray(NULL, (size_t)(n > dmax ? n : dmax), sizeof(*tokens));
	double *rates = llm_xreallocarray(NULL, (size_t)b->reps, sizeof(*rates));
	bench_model_init(&bm, m, threads);
	srand48_r((long)seed, &rng);
	if (!json)
		bench_header();
	for (int i = 0; i < b->depth.n; i++) {
		int64_t d = b->depth.v[i];
		if (d > 0 && (pmax > 0 || tmax > 0)) {
			bench_tokens(&rng, vocab, tokens, d);
			if (llm_seq_rewind(s, 0) != LLM_OK)
				llm_fatal("%s: %s", model, llm_errmsg());
			eval(s, model, tokens, (size_t)d);
		}
		for (int t = 0; t < b->pp.n + b->tg.n; t++) {
			int64_t npp = t < b->pp.n ? b->pp.v[t] : 0, ntg = t < b->pp.n ? 0 : b->tg.v[t - b->pp.n];
			if (npp == 0 && ntg == 0)
				continue;
			bench_test(s, model, &rng, vocab, tokens, npp, ntg, d, b->reps, rates);
			double sum = 0, sum2 = 0;
			for (int64_t r = 0; r < b->reps; r++) {
				sum += rates[r];
				sum2 += rates[r] * rates[r];
			}
			double mean = sum / (double)b->reps;
			double var = b->reps > 1 ? (sum2 - sum * mean) / (double)(b->reps - 1) : 0;
			double sd = var > 0 ? sqrt(var) : 0;
			char name[64];
			int len = snprintf(name, sizeof(name), "%s%" PRId64, npp ? "pp" : "tg", npp ? npp : ntg);
			if (d > 0)
				snprintf(name + len, sizeof(name) - (size_t)len, " @ d%" PRId64, d);
			if (json)
				json_array_append_new(arr, test_json(&bm, name, npp, ntg, d, rates, b->reps, mean, sd));
			else
				bench_row(&bm, name, mean, sd);
			/* a loaded machine: say so rather than print a wide spread silently */
			if (sd > 0.1 * mean)
				llm_warn("%s: the runs spread by %.0f%% of the mean (another process running?): more "
					 "reps, or a quiet machine",
				    name, 100 * sd / mean);
		}
	}
	if (json)
		run_print_json(arr);
	else {
		json_decref(arr);
		printf("\nbuild: llm-run %s, LLVM %s%s%s\n", LLM_VERSION, LLM_LLVM_VERSION, bm.cpu ? ", code for " : "",
		    bm.cpu ? bm.cpu : "");
	}
	run_finish_stdout();
	llm_seq_free(&s);
	free(rates);
	free(tokens);
}
