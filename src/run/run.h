/* run.h: llm-run's modules (src/run/), which run models through the
 * public API (include/llm.h) alone: generation and the chat, the bench,
 * the perplexity; the text modes, which run none; the command line (the
 * options' table); and the helpers src/llm-run.c shares with them. */
#ifndef LLM_RUN_H
#define LLM_RUN_H

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "../../include/llm.h"
#include "../../lib/text/stream.h"
#include "../../lib/base/util.h"
#include "cache.h" /* -m: a GGUF file or a checkpoint, compiled once (shared with llm-serve) */

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
/* llm-run -v's line on the model and its sequence, loaded in t_load seconds. */
void run_describe(const char *model, const struct llm *m, const struct llm_seq *s, double t_load);
/* A whole file, or stdin for "-" (NUL-terminated; fatal on an error). */
char *run_read_input(const char *path, size_t *len);
/* The one check of text that comes in (-p, -f, a chat's messages,
 * --perplexity's text): UTF-8, without NUL bytes.  0, or -1 with
 * llm_errmsg "what: ..." naming the byte. */
int run_text_check(const char *what, const char *text, size_t len);

/* Ctrl-C: set by the handler run_catch_sigint installs (no SA_RESTART:
 * a read of stdin waiting for a chat line returns EINTR); a generation
 * stops after the current step. */
extern volatile sig_atomic_t run_interrupted;
void run_catch_sigint(void);

/* ---- -p, -f, --tokens (generate.c) and -i (chat.c) -------------------- */

struct gen_opts {
	const char *prompt, *prompt_file; /* -p, -f (or ids) */
	int escape;                       /* -e: llama-cli's escapes in -p */
	const int64_t *ids;               /* --tokens */
	size_t nids;
	const char *system; /* -i's system prompt, or NULL */
	const char *logits_path;
	struct llm_sampling sp;
	int64_t max_new;
	char **stop;
	size_t nstop;
	int json, verbose, plain_input, no_echo;
	double t_start; /* when the process started */
	int single;     /* chat: one exchange, its message -p's (prompt) or a line of standard input */
	int multiline;  /* chat: -mli, llama-cli's multi-line input */
};
/* One generation (generate.c), or the chat (chat.c), on a sequence of m
 * of ctx positions (0: the default). */
void run_generate(struct llm *m, const char *model, int64_t ctx, double t_load, const struct gen_opts *o);
void run_chat(struct llm *m, const char *model, int64_t ctx, double t_load, const struct gen_opts *o);

/* Everything a generation needs besides the sequence. */
struct gen {
	struct llm *m;
	const char *model; /* -m, for messages */
	int tok;           /* the model has a tokenizer (else: print ids) */
	struct llm_sampling sp;
	int64_t max_new;
	char **stop;
	size_t nstop;
	int json, verbose;
	int plain_input;        /* --no-special-in-input */
	struct llm_out *logits; /* --logits, or NULL */
	const char *echo;       /* the prompt text to print before the reply, or NULL */
	size_t echo_len;
	int echo_end;   /* the last byte of the prompt printed, or -1 */
	double t_start; /* when the process started (the time to first token from it) */
	int multiline;  /* chat: lines go on until one ends with / or \ (-mli) */
};

/* The result of one generation. */
struct result {
	int64_t *ids;
	size_t n;
	struct llm_stream stream;
	const char *stop;
	double t_first, t_decode;
	int64_t ndecode;
};

/* Generate from the logits of s's last token until a stop (generate.c);
 * t0 is when the prompt started. */
void generate(struct gen *g, struct llm_seq *s, double t0, struct result *r);
void result_free(struct result *r);
const char *result_text(const struct result *r, size_t *len);
/* load < 0: no load time (a chat turn); from_start < 0: no time to
 * first token from the start of the process. */
json_t *timings_json(double load, double from_start, const struct result *r, int64_t nprefill, double t_prefill);
/* What -p, -f, --tokens and -i share (common.c): g from o for m, and a
 * new sequence of ctx positions (described on stderr with -v). */
struct llm_seq *run_gen_start(struct gen *g, struct llm *m, const char *model, int64_t ctx, double t_load,
    const struct gen_opts *o);
/* -e: llama-cli's escapes \n \r \t \' \" \\ in s, in place (common.c). */
void run_unescape(char *s);

/* ---- --tokenize, --detokenize, --render, --verify (text.c) ------------ */

enum text_mode { TEXT_TOKENIZE, TEXT_DETOKENIZE, TEXT_RENDER, TEXT_PARSE };
struct text_opts {
	enum text_mode mode;
	const char *model, *tokenizer_path;      /* one of them (--render: neither is needed) */
	const char *template_name, *render_path; /* render_path: --render's or --parse-reply's file */
	int add_special, raw, plain_input, skip_special, no_gen;
	const char *label; /* -m as given, for messages (model: its cache entry's bundle, for a GGUF file) */
};
void run_text(const struct text_opts *o);
/* Every tensor of the weights against weights.json, and both against model.json's plan. */
void run_verify(const char *model);

/* ---- --bench (bench.c) ------------------------------------------------ */

#define BENCH_MAX 16
struct bench_list {
	int n;
	int64_t v[BENCH_MAX];
};
/* llama-bench's -o */
enum { BENCH_MD, BENCH_JSON, BENCH_JSONL, BENCH_CSV, BENCH_SQL };
struct bench_spec {
	struct bench_list pp, tg, depth;
	struct bench_list threads; /* -t 1,2: each test on each (none: the -t or OpenMP default) */
	int npg;                   /* -pg pp,tg: a prompt then generation, timed together */
	int64_t pg[BENCH_MAX][2];
	int64_t reps;
	int out;       /* BENCH_MD ... */
	int no_warmup; /* --no-warmup: no run before the timed ones */
};
/* The largest count of a list (0 for none). */
int64_t bench_list_max(const struct bench_list *l);
/* The context the largest test needs. */
int64_t bench_need(const struct bench_spec *b);
/* Run the tests on a sequence of m of context positions (0: the default,
 * or what the tests need when that is more, up to the model's limit);
 * print llama-bench's table, JSON, JSON lines or CSV (b->out). */
void run_bench(struct llm *m, const char *model, int64_t context, const struct bench_spec *b, int threads,
    uint64_t seed, int verbose, double t_load);

/* ---- --perplexity (perplexity.c) -------------------------------------- */

struct ppl_args {
	const char *path;      /* the text, "-" for stdin */
	int64_t n_ctx;         /* tokens a chunk; 0: 512, or the context when smaller */
	int64_t max_chunks;    /* 0: all */
	const char *save_base; /* --kl-divergence-base */
	const char *base;      /* --kl-divergence */
	int json, verbose;
	double t_load; /* seconds the model took to open (-v) */
};
/* On a sequence of m of context positions (0: the default). */
void run_perplexity(struct llm *m, const char *model, int64_t context, const struct ppl_args *a);

/* ---- the command line (options.c, spellings.c) ------------------------ */

/* What a run does: the one mode its options choose. */
enum run_mode { M_NONE, M_RUN, M_CHAT, M_BENCH, M_PPL, M_TOKENIZE, M_DETOKENIZE, M_RENDER, M_PARSE, M_VERIFY };

/* The command line, as options.c's table reads it into its fields. */
struct run_args {
	const char *model, *prompt, *prompt_file, *tokens_arg;
	const char *logits_path, *tokenizer_path, *template_name, *system;
	const char *render_path, *bench_arg;
	const char *n_arg, *d_arg, *r_arg; /* -n, -d, -r as given */
	const char *t_list, *out_arg;      /* -t 1,2 and -o: --bench's */
	struct ppl_args ppl;
	struct llm_sampling sp;
	struct bench_spec bench;
	char **stop;
	size_t nstop;
	int64_t max_new, threads, ctx_cap;
	int json, verbose, seeded, add_special, raw, skip_special, no_gen, escape;
	const char *kv_type[2]; /* -ctk, -ctv: must be the build's KV cache type */
	int ctx_model;          /* -c 0: the build's max_context */
	int plain_input;        /* --no-special-in-input */
	int no_echo;            /* --no-display-prompt */
	enum run_mode mode;
	int single_turn; /* -st: one exchange (-p or a line of standard input) */
	int multiline;   /* -mli: a chat message goes on until a line ends with / or \ */
	struct run_cache cache;
	int cache_action; /* --list-cache 1, --prune-cache 2 */
	/* --grammar, --grammar-file, --json-schema, --json-schema-file: the
	 * one given (its option in gram_opt) */
	const char *gram_arg, *gram_opt;
};

/* Reads the options into a (its defaults first) and checks that they go
 * together: -h, --help and --version print and exit 0, a usage error
 * exits 2.  argv may be rewritten (llama-cli's spellings). */
void run_parse_args(int argc, char **argv, struct run_args *a);
/* A usage error: msg, then the usage, on stderr; exits 2. */
_Noreturn void run_usage_msg(const char *msg);
/* A usage error that is one line: a value out of range, an option that
 * has no meaning here (run_usage_msg adds the usage, for options that do
 * not go together). */
_Noreturn void run_usage_line(const char *msg);
/* --tokens: ids separated by single commas into *ids (*n of them). */
void run_parse_ids(const char *s, int64_t **ids, size_t *n);
/* llama-cli's spellings of options (spellings.c): those of one dash and
 * several letters made ours, those with no meaning here dropped (with a
 * note) or refused.  Returns the new argv (argc in *argc). */
char **run_llama_spellings(int *argc, char **argv);

#endif
