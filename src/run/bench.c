/* bench.c: llm-run --bench, llama-bench's tests on the public API.
 *
 * Random tokens, no sampling and no tokenizer.  The spec is llama-bench's
 * -p/-n/-pg/-d/-r/-t (lists of counts; default pp512, tg128, 5 repetitions) or
 * pp=N,tg=N,depth=N,reps=N.  pp: a prefill of N tokens at position depth
 * (through prefill_kv when depth > 0); tg: N decode steps after depth
 * tokens, or after one prompt token when depth is 0; pg: a prefill, then
 * decode steps, the rate their tokens over the whole time.  With a list
 * of threads every test runs on each, in that order.  Each test runs reps
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
#include <time.h>

#include "../../lib/base/util.h"
#include "run.h"

/* What llama-bench's columns say of the model (threads: of the test). */
struct bench_model {
	const char *type; /* "qwen2 1.5B BF16", as llama_model_desc */
	uint64_t size;    /* bytes of weights */
	uint64_t params;  /* elements of the checkpoint's tensors */
	int threads;
	const char *cpu;      /* the target's CPU */
	const char *file;     /* -m as given */
	char cpu_info[128];   /* the host's CPU, as /proc/cpuinfo names it */
	const char *kv, *act; /* the KV cache's type, the activations' */
	int64_t chunk;        /* the prefill chunk: llama-bench's n_batch and n_ubatch */
};

static void
bench_model_init(struct bench_model *bm, const struct llm *m, const char *model, int threads)
{
	bm->type = llm_model_desc(m);
	bm->size = llm_model_size(m);
	bm->params = llm_model_n_params(m);
	bm->cpu = llm_target_cpu(m);
	bm->file = model;
	bm->kv = llm_kv_type(m);
	bm->act = llm_activations(m);
	bm->chunk = llm_prefill_chunk(m);
	/* OpenMP's default: the CPUs this process may run on */
	const char *env = getenv("OMP_NUM_THREADS");
	cpu_set_t set;
	bm->threads = threads > 0                        ? threads :
	    env && atoi(env) > 0                         ? atoi(env) :
	    sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) :
							   1;
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];
	bm->cpu_info[0] = 0;
	while (f && fgets(line, sizeof(line), f) && !bm->cpu_info[0])
		if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
			const char *v = strchr(line, ':') + 1;
			v += strspn(v, " \t");
			snprintf(bm->cpu_info, sizeof(bm->cpu_info), "%.*s", (int)strcspn(v, "\n"), v);
		}
	if (f)
		fclose(f);
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

/* One test, reps times after a warm-up: the rates (a prefill of npp
 * tokens, then ntg decode steps; the tokens of both over the time of
 * both). */
static void
bench_test(struct llm_seq *s, const char *model, struct drand48_data *rng, int64_t vocab, int64_t *tokens, int64_t npp,
    int64_t ntg, int64_t d, int64_t reps, int warmup, double *rates)
{
	for (int64_t rep = warmup ? -1 : 0; rep < reps; rep++) {
		int64_t first = 0;
		bench_tokens(rng, vocab, tokens, npp + ntg + 1);
		if (llm_seq_rewind(s, d) != LLM_OK)
			llm_fatal("%s: %s", model, llm_errmsg());
		if (!npp && d == 0) {
			/* a decode step needs a token of context: untimed */
			eval(s, model, tokens, 1);
			first = 1;
		}
		double t0 = llm_now();
		if (npp)
			eval(s, model, tokens, (size_t)npp);
		for (int64_t i = 0; i < ntg; i++)
			eval(s, model, &tokens[first + npp + i], 1);
		double secs = llm_now() - t0;
		if (rep >= 0) /* not the warm-up */
			rates[rep] = run_rate((double)(npp + ntg), secs);
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

/* The positions a test at depth d takes: its depth, then the prompt, or
 * one token and the generated ones (tg needs a token of context before
 * its first decode step, which the depth gives when there is one), or a
 * pg's prompt and generation. */
static int64_t
bench_most(const struct bench_spec *b, int64_t d)
{
	int64_t most = d + bench_list_max(&b->pp), t = (d > 0 ? d : 1) + bench_list_max(&b->tg);
	most = t > most ? t : most;
	for (int i = 0; i < b->npg; i++)
		if (d + b->pg[i][0] + b->pg[i][1] > most)
			most = d + b->pg[i][0] + b->pg[i][1];
	return most;
}

int64_t
bench_need(const struct bench_spec *b)
{
	int64_t need = 0;
	for (int i = 0; i < b->depth.n; i++)
		if (bench_most(b, b->depth.v[i]) > need)
			need = bench_most(b, b->depth.v[i]);
	return need;
}

/* One test as llama-bench's -o json writes it: its fields, in its order
 * (what has no meaning here as llama-bench says it of a CPU run: no GPU
 * layers, layer split, mapped weights), then ours, then the samples. */
static json_t *
test_json(const struct bench_model *bm, const char *name, int64_t npp, int64_t ntg, int64_t d, const double *rates,
    int64_t reps, double mean, double sd, const char *when)
{
	json_t *ns = json_array(), *ts = json_array();
	double nsum = 0, nsum2 = 0;
	for (int64_t r = 0; r < reps; r++) {
		double n = (double)(npp + ntg) / rates[r] * 1e9;
		json_array_append_new(ns, json_integer((json_int_t)n));
		json_array_append_new(ts, json_real(rates[r]));
		nsum += n;
		nsum2 += n * n;
	}
	double nmean = nsum / (double)reps, nvar = reps > 1 ? (nsum2 - nsum * nmean) / (double)(reps - 1) : 0;
	json_t *t = json_object();
	/* llama-bench's */
	json_object_set_new(t, "build_commit", json_string(LLM_VERSION));
	json_object_set_new(t, "build_number", json_integer(0));
	json_object_set_new(t, "cpu_info", json_string(bm->cpu_info));
	json_object_set_new(t, "gpu_info", json_string(""));
	json_object_set_new(t, "backends", json_string("CPU"));
	json_object_set_new(t, "model_filename", json_string(bm->file));
	json_object_set_new(t, "model_type", json_string(bm->type));
	json_object_set_new(t, "model_size", json_integer((json_int_t)bm->size));
	json_object_set_new(t, "model_n_params", json_integer((json_int_t)bm->params));
	json_object_set_new(t, "n_batch", json_integer(bm->chunk));
	json_object_set_new(t, "n_ubatch", json_integer(bm->chunk));
	json_object_set_new(t, "n_threads", json_integer(bm->threads));
	json_object_set_new(t, "cpu_mask", json_string("0x0"));
	json_object_set_new(t, "cpu_strict", json_false());
	json_object_set_new(t, "poll", json_integer(50));
	json_object_set_new(t, "type_k", json_string(bm->kv));
	json_object_set_new(t, "type_v", json_string(bm->kv));
	json_object_set_new(t, "n_gpu_layers", json_integer(0));
	json_object_set_new(t, "n_cpu_moe", json_integer(0));
	json_object_set_new(t, "split_mode", json_string("layer"));
	json_object_set_new(t, "main_gpu", json_integer(0));
	json_object_set_new(t, "no_kv_offload", json_false());
	json_object_set_new(t, "flash_attn", json_integer(0));
	json_object_set_new(t, "devices", json_string("auto"));
	json_object_set_new(t, "tensor_split", json_string("0.00"));
	json_object_set_new(t, "tensor_buft_overrides", json_string("none"));
	json_object_set_new(t, "load_mode", json_string("mmap"));
	json_object_set_new(t, "lazy_mode", json_string("off"));
	json_object_set_new(t, "embeddings", json_false());
	json_object_set_new(t, "no_op_offload", json_integer(0));
	json_object_set_new(t, "no_host", json_false());
	json_object_set_new(t, "fit_target", json_integer(0));
	json_object_set_new(t, "fit_min_ctx", json_integer(0));
	json_object_set_new(t, "n_prompt", json_integer(npp));
	json_object_set_new(t, "n_gen", json_integer(ntg));
	json_object_set_new(t, "n_depth", json_integer(d));
	json_object_set_new(t, "test_time", json_string(when));
	json_object_set_new(t, "avg_ns", json_integer((json_int_t)nmean));
	json_object_set_new(t, "stddev_ns", json_integer((json_int_t)(nvar > 0 ? sqrt(nvar) : 0)));
	json_object_set_new(t, "avg_ts", json_real(mean));
	json_object_set_new(t, "stddev_ts", json_real(sd));
	/* ours */
	json_object_set_new(t, "test", json_string(name));
	json_object_set_new(t, "depth", json_integer(d));
	json_object_set_new(t, "tokens_per_s", json_real(mean));
	json_object_set_new(t, "stddev", json_real(sd));
	if (bm->cpu)
		json_object_set_new(t, "cpu", json_string(bm->cpu));
	json_object_set_new(t, "activations", json_string(bm->act));
	json_object_set_new(t, "samples_ns", ns);
	json_object_set_new(t, "samples_ts", ts);
	return t;
}

/* The keys of llama-bench's fields: those before "test", ours (test_json). */
static int
llama_bench_key(json_t *t, const char *key)
{
	const char *k;
	json_t *v;
	json_object_foreach (t, k, v) {
		if (!strcmp(k, "test"))
			return 0;
		if (!strcmp(k, key))
			return 1;
	}
	return 0;
}

/* A CSV field (RFC 4180): quoted when it holds a comma, a quote or a
 * line end, its quotes doubled; a boolean as llama-bench writes it, 0 or
 * 1. */
static void
csv_field(struct llm_buf *b, json_t *v)
{
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!s[strcspn(s, ",\"\r\n")]) {
			llm_buf_puts(b, s);
			return;
		}
		llm_buf_puts(b, "\"");
		for (; *s; s++)
			llm_buf_printf(b, "%s%c", *s == '"' ? "\"" : "", *s);
		llm_buf_puts(b, "\"");
	} else if (json_is_boolean(v))
		llm_buf_puts(b, json_is_true(v) ? "1" : "0");
	else if (json_is_integer(v))
		llm_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else if (json_is_real(v))
		llm_buf_printf(b, "%.6f", json_real_value(v));
	/* null (no CPU recorded): an empty field */
}

/* A test's line of CSV (after the header of its keys, with the first):
 * every field but the samples, which llama-bench's CSV has not. */
static void
test_csv(json_t *t, int header)
{
	struct llm_buf b = {0};
	const char *key;
	json_t *v;
	for (int pass = !header; pass < 2; pass++) {
		int first = 1;
		json_object_foreach (t, key, v) {
			if (json_is_array(v))
				continue;
			llm_buf_puts(&b, first ? "" : ",");
			if (pass == 0)
				llm_buf_puts(&b, key);
			else
				csv_field(&b, v);
			first = 0;
		}
		llm_buf_puts(&b, "\n");
	}
	run_write(b.p, b.len);
	llm_buf_free(&b);
}

/* llama-bench's -o sql: a CREATE TABLE of its fields (before the first
 * test), then an INSERT of each test, its values quoted as it quotes them. */
static void
test_sql(json_t *t, int header)
{
	struct llm_buf b = {0}, keys = {0};
	const char *key;
	json_t *v;
	int n = 0;
	json_object_foreach (t, key, v)
		if (llama_bench_key(t, key))
			llm_buf_printf(&keys, "%s%s", n++ ? ", " : "", key);
	if (header) {
		llm_buf_puts(&b, "CREATE TABLE IF NOT EXISTS llama_bench (\n");
		int i = 0;
		json_object_foreach (t, key, v)
			if (llama_bench_key(t, key))
				llm_buf_printf(&b, "  %s %s%s\n", key,
				    json_is_string(v)   ? "TEXT" :
					json_is_real(v) ? "REAL" :
							  "INTEGER",
				    ++i < n ? "," : "");
		llm_buf_puts(&b, ");\n\n");
	}
	llm_buf_printf(&b, "INSERT INTO llama_bench (%s) VALUES (", keys.p);
	int i = 0;
	json_object_foreach (t, key, v) {
		if (!llama_bench_key(t, key))
			continue;
		llm_buf_puts(&b, i++ ? ", '" : "'");
		if (json_is_string(v))
			for (const char *s = json_string_value(v); *s; s++)
				llm_buf_printf(&b, "%s%c", *s == '\'' ? "'" : "", *s);
		else if (json_is_boolean(v))
			llm_buf_puts(&b, json_is_true(v) ? "1" : "0");
		else if (json_is_integer(v))
			llm_buf_printf(&b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else
			llm_buf_printf(&b, "%.6f", json_real_value(v));
		llm_buf_puts(&b, "'");
	}
	llm_buf_puts(&b, ");\n");
	run_write(b.p, b.len);
	llm_buf_free(&b);
	llm_buf_free(&keys);
}

/* One test's figures, written as b->out says (JSON: kept in arr for the
 * end); the first says whether a header goes before it. */
static void
test_out(const struct bench_spec *b, const struct bench_model *bm, json_t *arr, int first, const char *name,
    int64_t npp, int64_t ntg, int64_t d, const double *rates)
{
	double sum = 0, sum2 = 0;
	for (int64_t r = 0; r < b->reps; r++) {
		sum += rates[r];
		sum2 += rates[r] * rates[r];
	}
	double mean = sum / (double)b->reps;
	double var = b->reps > 1 ? (sum2 - sum * mean) / (double)(b->reps - 1) : 0;
	double sd = var > 0 ? sqrt(var) : 0;
	if (b->out == BENCH_MD) {
		bench_row(bm, name, mean, sd);
	} else {
		char when[32];
		time_t now = time(NULL);
		strftime(when, sizeof(when), "%FT%TZ", gmtime(&now));
		json_t *t = test_json(bm, name, npp, ntg, d, rates, b->reps, mean, sd, when);
		if (b->out == BENCH_JSON)
			json_array_append_new(arr, t);
		else if (b->out == BENCH_JSONL)
			run_print_json(t); /* one line, written now */
		else {
			(b->out == BENCH_SQL ? test_sql : test_csv)(t, first);
			json_decref(t);
		}
	}
	/* a loaded machine: say so rather than print a wide spread silently */
	if (sd > 0.1 * mean)
		llm_warn("%s: the runs spread by %.0f%% of the mean (another process running?): more "
			 "reps, or a quiet machine",
		    name, 100 * sd / mean);
	if (fflush(stdout) != 0)
		llm_fatal("stdout: write error:");
}

void
run_bench(struct llm *m, const char *model, int64_t context, const struct bench_spec *b, int threads, uint64_t seed,
    int verbose, double t_load)
{
	struct drand48_data rng;
	struct bench_model bm;
	struct llm_seq *s;
	int64_t dmax = bench_list_max(&b->depth), vocab = llm_vocab_size(m);
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
		/* the spec, as pp=N,tg=N, of the largest counts */
		char spec[160];
		int len = snprintf(spec, sizeof(spec), "pp=%" PRId64 ",tg=%" PRId64, bench_list_max(&b->pp),
		    bench_list_max(&b->tg));
		for (int i = 0; i < b->npg && len < (int)sizeof(spec); i++)
			len += snprintf(spec + len, sizeof(spec) - (size_t)len, ",pg=%" PRId64 "+%" PRId64, b->pg[i][0],
			    b->pg[i][1]);
		if (dmax > 0 && len < (int)sizeof(spec))
			snprintf(spec + len, sizeof(spec) - (size_t)len, ",depth=%" PRId64, dmax);
		llm_fatal("%s: --bench %s does not fit the context of %" PRId64 " positions (-c)", model, spec,
		    context);
	}
	int64_t n = bench_most(b, 0) + 1;
	int64_t *tokens = llm_xreallocarray(NULL, (size_t)(n > dmax ? n : dmax), sizeof(*tokens));
	double *rates = llm_xreallocarray(NULL, (size_t)b->reps, sizeof(*rates));
	bench_model_init(&bm, m, model, threads);
	srand48_r((long)seed, &rng);
	if (b->out == BENCH_MD)
		bench_header();
	int first = 1, nth = b->threads.n ? b->threads.n : 1;
	for (int ti = 0; ti < nth; ti++) {
		if (b->threads.n) {
			bm.threads = (int)b->threads.v[ti];
			if (llm_set_threads(m, bm.threads) != LLM_OK)
				llm_fatal("%s: %s", model, llm_errmsg());
		}
		for (int i = 0; i < b->depth.n; i++) {
			int64_t d = b->depth.v[i];
			if (d > 0) {
				bench_tokens(&rng, vocab, tokens, d);
				if (llm_seq_rewind(s, 0) != LLM_OK)
					llm_fatal("%s: %s", model, llm_errmsg());
				eval(s, model, tokens, (size_t)d);
			}
			/* llama-bench's order: the prompts, the generations, then the pairs */
			for (int t = 0; t < b->pp.n + b->tg.n + b->npg; t++) {
				int64_t npp = t < b->pp.n  ? b->pp.v[t] :
				    t >= b->pp.n + b->tg.n ? b->pg[t - b->pp.n - b->tg.n][0] :
							     0;
				int64_t ntg = t < b->pp.n ? 0 :
				    t < b->pp.n + b->tg.n ? b->tg.v[t - b->pp.n] :
							    b->pg[t - b->pp.n - b->tg.n][1];
				if (npp == 0 && ntg == 0)
					continue;
				bench_test(s, model, &rng, vocab, tokens, npp, ntg, d, b->reps, !b->no_warmup, rates);
				char name[96];
				int len = t >= b->pp.n + b->tg.n ?
				    snprintf(name, sizeof(name), "pp%" PRId64 "+tg%" PRId64, npp, ntg) :
				    snprintf(name, sizeof(name), "%s%" PRId64, npp ? "pp" : "tg", npp ? npp : ntg);
				if (d > 0)
					snprintf(name + len, sizeof(name) - (size_t)len, " @ d%" PRId64, d);
				test_out(b, &bm, arr, first, name, npp, ntg, d, rates);
				first = 0;
			}
		}
	}
	if (b->out == BENCH_JSON)
		run_print_json(arr);
	else {
		json_decref(arr);
		if (b->out == BENCH_MD)
			printf("\nbuild: llm-run %s, LLVM %s%s%s, %s activations\n", LLM_VERSION, LLM_LLVM_VERSION,
			    bm.cpu ? ", code for " : "", bm.cpu ? bm.cpu : "", bm.act);
	}
	run_finish_stdout();
	llm_seq_free(&s);
	free(rates);
	free(tokens);
}
