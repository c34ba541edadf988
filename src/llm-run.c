/* llm-run: run a compiled model: generate text, chat, benchmark, and the
 * scriptable tokenizer and chat-template modes.
 *
 * Models run through the public API (include/llm.h, libllm) alone:
 * llm_open maps a bundle (model.llm, from llm-link) or a build directory
 * in place and checks the model library against the weights' plan; a
 * sequence (llm_seq_new) holds the KV cache of -c positions.  A prompt
 * (text through the tokenizer, or ids) is evaluated in prefill chunks,
 * then each token is drawn by llm_seq_sample (greedy unless --temp) and
 * fed back, until -n tokens, an end-of-sequence id, a stop string, a full
 * context or Ctrl-C.  The text streams to stdout in whole UTF-8
 * characters (llm_token_piece through lib/runtime/stream.c); time to first token
 * and the prefill and decode rates go to stderr, or everything to stdout
 * as one JSON object with --json.
 *
 * -i chats: each line of stdin is a user message; llm_seq_chat renders
 * the conversation with the model's chat template and gives the tokens
 * the sequence lacks.  Modules in src/run/: --bench measures prefill and
 * decode rates on random tokens (bench.c); --perplexity measures a text's
 * perplexity (and, against a base run, the KL divergence) as
 * llama-perplexity does (perplexity.c, lib/api/ppl.c).  --tokenize,
 * --detokenize and --render run no model: they expose the tokenizer
 * (lib/runtime/toklines.c) and the templates (lib/runtime/chat.c) to scripts and golden
 * tests, and --verify reads the weights against weights.json.  The last
 * step of the pipeline: llm-import, llm-pack-weights, llm-lower,
 * llm-link, llm-run. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/runtime/chat.h"
#include "../lib/base/util.h"
#include "run/run.h"

static const char usage_text[] =
    "usage: llm-run [-ev] [--json] [--logits file] [-n count] [-c n] [-t threads] [--seed n]\n"
    "               [--temp t] [--top-k k] [--top-p p] [--min-p p] [--repeat-penalty r]\n"
    "               [--presence-penalty p] [--frequency-penalty f] [--repeat-last-n n]\n"
    "               [--ignore-eos] [--grammar text | --grammar-file file | -j schema |\n"
    "               -jf file] [--stop text] [--tokenizer path]\n"
    "               [--chat-template name|file] [--system text] [--no-special-in-input]\n"
    "               [--no-display-prompt] [--no-cache] [--cache-dir dir]\n"
    "               [--import-flags options] -m model\n"
    "               -i | --single-turn | -f file | -p text | --tokens ids\n"
    "       llm-run [-v] [--json] [-t threads] [--seed n] [-p counts] [-n counts] [-d counts]\n"
    "               [-r n] [--pg pp,tg] [-o format] [--no-warmup] -m model --bench [spec]\n"
    "       llm-run [-v] [--json] [-t threads] [--ppl-context n] [--chunks n]\n"
    "               [--kl-divergence-base file | --kl-divergence file] -m model --perplexity file\n"
    "       llm-run -m model | --tokenizer path --tokenize [--add-special] [--raw]\n"
    "               [--no-special-in-input]\n"
    "       llm-run -m model | --tokenizer path --detokenize [--skip-special]\n"
    "       llm-run [-m model | --tokenizer path] [--chat-template name|file] --render file\n"
    "               [--no-gen-prompt]\n"
    "       llm-run [-m model | --tokenizer path] [--chat-template name|file] --parse-reply file\n"
    "       llm-run -m model --verify\n"
    "       llm-run [--cache-dir dir] --list-cache | --prune-cache\n";

static const char help_text[] =
    "  -m model             the bundle (model.llm) or build directory; or a GGUF file or a\n"
    "                       Hugging Face checkpoint directory, compiled once into the cache\n"
    "  --no-cache           compile a GGUF file or checkpoint for this run only\n"
    "  --cache-dir dir      the cache (default: $LLM_CACHE_DIR, else $XDG_CACHE_HOME/llm, else\n"
    "                       ~/.cache/llm); --list-cache lists it, --prune-cache empties it\n"
    "  --import-flags options\n"
    "                       llm-import's options for a GGUF file's or checkpoint's build, as\n"
    "                       words (\"--dtype q8_0 --activations f32\"): a build of its own in the\n"
    "                       cache, as -c past 32768 (--max-context) and -ctk/-ctv (--kv-dtype) make\n"
    "  -p text, -f file     the prompt (file - : standard input), echoed on standard output\n"
    "                       before the text it is continued with\n"
    "  --no-display-prompt  print only the generated text\n"
    "  --tokens ids         the prompt as token ids, e.g. 1,2,3\n"
    "  -i, --chat           chat: one user message a line of standard input\n"
    "  --single-turn, -st   one exchange of a chat: the message of -p, else a line of standard input\n"
    "  --multiline-input, -mli\n"
    "                       a chat message goes on until a line ends with / or \\ (as llama-cli)\n"
    "  llama-cli's spellings work too: --model, --prompt, --file, --threads, --n-predict,\n"
    "  --ctx-size, --conversation (-cnv), --system-prompt (-sys), --escape; -ngl is refused\n"
    "  -n count             tokens to generate at most (default 128; -1: until an end of sequence\n"
    "                       or a full context)\n"
    "  -c n                 positions of the context, the KV cache allocated for them (default:\n"
    "                       4096, or the build's --max-context if smaller; at most that; 0: that)\n"
    "  -e                   process the escapes \\n \\r \\t \\' \\\" \\\\ in -p (--no-escape: do not)\n"
    "  -t threads           OpenMP threads, -1 every core (default: the OpenMP default)\n"
    "  --temp t             sampling temperature; 0 (default): greedy\n"
    "  --top-k k, --top-p p, --min-p p\n"
    "                       sampling filters (default off)\n"
    "  --repeat-penalty r   penalty of the last --repeat-last-n tokens (default 1: off; n 64)\n"
    "  --presence-penalty p, --frequency-penalty f\n"
    "                       less p for a token in that window, f per time it is there (default 0)\n"
    "  --ignore-eos         never an end-of-sequence or end-of-turn token (as llama-cli)\n"
    "  --grammar text, --grammar-file file\n"
    "                       hold the reply to a GBNF grammar (llama.cpp's notation; root starts)\n"
    "  -j, --json-schema schema, -jf, --json-schema-file file\n"
    "                       hold the reply to JSON that follows a JSON schema\n"
    "  -s, --seed n         sampler and benchmark seed (default: from the clock)\n"
    "  --stop text          stop at this text (repeatable; -r, --reverse-prompt outside --bench)\n"
    "  --cache-type-k t, --cache-type-v t (-ctk, -ctv)\n"
    "                       the KV cache's type, checked: the build's (llm-import --kv-dtype)\n"
    "  --logits file        write the logits of every step (f32 rows)\n"
    "  --json               one JSON object on standard output instead of text and stderr rates\n"
    "  --system text        the system message of a chat\n"
    "  --no-special-in-input\n"
    "                       the text of special tokens (<|im_end|>) in -p, -f, chat messages and\n"
    "                       --tokenize lines is text, not the token (default: the token, as in\n"
    "                       Hugging Face); the chat template's own tokens stay\n"
    "  --chat-template name|file  a Jinja file, or deepseek-r1, qwen2, qwen3, llama3, llama2 (default: the model's)\n"
    "  --tokenizer path     tokenizer.json, a bundle or a directory (default: the model's)\n"
    "  --bench [spec]       prefill and decode rates like llama-bench: with it, -p, -n and -d are\n"
    "                       lists of prefill, decode and depth counts (default 512, 128, 0), -r\n"
    "                       the runs (default 5), --pg pp,tg (-pg) a prompt then generation, -t a list\n"
    "                       of threads, -o md|json|jsonl|csv|sql the output, --no-warmup no run\n"
    "                       before the timed ones; or spec pp=n,tg=n,depth=n,reps=n\n"
    "  --perplexity file    the text's perplexity, as llama-perplexity measures it\n"
    "  --ppl-context n      tokens a chunk (default 512, or the model's context when smaller)\n"
    "  --chunks n           the first n chunks only\n"
    "  --kl-divergence-base file, --kl-divergence file\n"
    "                       save a base run's logits, or compare with them (KL divergence)\n"
    "  --tokenize [--add-special] [--raw]\n"
    "                       JSON lines of text to ids (with the special tokens the model adds;\n"
    "                       --raw: plain lines, each line's bytes as they are)\n"
    "  --detokenize [--skip-special]\n"
    "                       JSON lines of ids to text (without the special tokens)\n"
    "  --verify             check every tensor of the weights against weights.json (a full read;\n"
    "                       loading checks a sample of them), and exit\n"
    "  --render file [--no-gen-prompt]\n"
    "                       the prompt a conversation (JSON) becomes (without the assistant's start)\n"
    "  --parse-reply file   a reply as generated, as llm-serve's message in JSON: content,\n"
    "                       reasoning_content and tool_calls, by the chat template's format\n"
    "  -v                   report loading and each phase call on standard error\n"
    "  -h                   print the usage\n"
    "  --help, --version    print this help, or the version\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

static _Noreturn void
usage_msg(const char *msg)
{
	llm_warn("%s", msg);
	usage();
}

/* When main started: the origin of the time to first token from the
 * start of the process. */
static double t_start;

/* --tokens: ids separated by single commas, nothing empty ("1,,2" and
 * "1," are errors, as is an id outside the vocabulary later). */
static void
parse_ids(const char *s, int64_t **ids, size_t *n)
{
	const char *p = s;

	if (!*s)
		usage_msg("--tokens: no ids");
	for (;;) {
		size_t len = strcspn(p, ",");
		char *t = llm_xstrndup(p, len);
		int64_t v;
		if (!len)
			usage_msg(llm_xasprintf("--tokens: an empty id in '%s'", s));
		if (llm_parse_i64(t, 0, INT64_MAX, &v) < 0)
			usage_msg(llm_xasprintf("--tokens: %s", llm_errmsg()));
		free(t);
		*ids = llm_xreallocarray(*ids, *n + 1, sizeof(**ids));
		(*ids)[(*n)++] = v;
		if (!p[len])
			break;
		p += len + 1;
	}
}

static double
parse_num(const char *opt, const char *s, double min, double max)
{
	double v;
	if (llm_parse_f64(s, &v) < 0 || !(v >= min && v <= max))
		usage_msg(llm_xasprintf("%s: '%s' is not a number in [%g, %g]", opt, s, min, max));
	return v;
}

/* A usage error that is one line: a value out of range, an option that
 * has no meaning here.  (usage_msg adds the usage, for options that do
 * not go together.) */
static _Noreturn void
usage_line(const char *msg)
{
	llm_warn("%s", msg);
	exit(LLM_EXIT_USAGE);
}

static int64_t
parse_int(const char *opt, const char *s, int64_t min, int64_t max)
{
	int64_t v;
	if (llm_parse_i64(s, min, max, &v) < 0)
		usage_line(llm_xasprintf("%s: %s", opt, llm_errmsg()));
	return v;
}

/* --bench's spec (src/run/bench.c runs it).  "512" or "128,256,512" (llama-bench's lists); what names the option. */
static void
parse_bench_list(const char *what, const char *s, struct bench_list *l)
{
	char *copy = llm_xstrdup(s), *save = NULL;
	l->n = 0;
	if (!*s || s[strlen(s) - 1] == ',')
		usage_msg(llm_xasprintf("%s: '%s' is not a list of counts", what, s));
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (l->n == BENCH_MAX)
			usage_msg(llm_xasprintf("%s: at most %d values", what, BENCH_MAX));
		l->v[l->n++] = parse_int(what, t, 0, 1 << 24);
	}
	free(copy);
}

static void
parse_bench(const char *s, struct bench_spec *b)
{
	char *copy = llm_xstrdup(s), *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t k = strcspn(t, "=");
		struct bench_list *dst = NULL;
		if (t[k] == '=')
			dst = k == 2 && strncmp(t, "pp", 2) == 0  ? &b->pp :
			    k == 2 && strncmp(t, "tg", 2) == 0    ? &b->tg :
			    k == 5 && strncmp(t, "depth", 5) == 0 ? &b->depth :
								    NULL;
		if (t[k] == '=' && k == 4 && strncmp(t, "reps", 4) == 0) {
			b->reps = parse_int("--bench", t + k + 1, 1, 1 << 24);
			continue;
		}
		if (!dst)
			usage_msg(llm_xasprintf("--bench: '%s' is not pp=N, tg=N, depth=N or reps=N", t));
		dst->n = 1;
		dst->v[0] = parse_int("--bench", t + k + 1, 0, 1 << 24);
	}
	free(copy);
}

enum mode { M_NONE, M_RUN, M_CHAT, M_BENCH, M_PPL, M_TOKENIZE, M_DETOKENIZE, M_RENDER, M_PARSE, M_VERIFY };

static void
set_mode(enum mode *m, enum mode to)
{
	if (*m != M_NONE && *m != to)
		usage_msg("give one of -i, -f, -p, --tokens, --bench, --perplexity, --tokenize, --detokenize, "
			  "--render, --parse-reply and --verify");
	*m = to;
}

/* The command line. */
struct args {
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
	enum mode mode;
	int single_turn; /* -st: one exchange (-p or a line of standard input) */
	int multiline;   /* -mli: a chat message goes on until a line ends with / or \ */
	struct run_cache cache;
	int cache_action; /* --list-cache 1, --prune-cache 2 */
	/* --grammar, --grammar-file, --json-schema, --json-schema-file: the
	 * one given (its option in gram_opt) */
	const char *gram_arg, *gram_opt;
};

/* the options, packed */
/* clang-format off */
enum {
	OPT_JSON = 256, OPT_LOGITS, OPT_TOKENS, OPT_SEED, OPT_TEMP, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P,
	OPT_REPEAT_PENALTY, OPT_REPEAT_LAST_N, OPT_STOP, OPT_TOKENIZER, OPT_CHAT_TEMPLATE, OPT_SYSTEM,
	OPT_BENCH, OPT_TOKENIZE, OPT_DETOKENIZE, OPT_ADD_SPECIAL, OPT_RAW, OPT_SKIP_SPECIAL, OPT_RENDER,
	OPT_PARSE_REPLY, OPT_NO_GEN_PROMPT, OPT_PERPLEXITY, OPT_PPL_CONTEXT, OPT_CHUNKS, OPT_KLD_BASE, OPT_KLD,
	OPT_ESCAPE,	OPT_NO_ESCAPE, OPT_NO_SPECIAL_IN_INPUT, OPT_VERIFY, OPT_NO_DISPLAY_PROMPT, OPT_CACHE_TYPE_K,
	OPT_CACHE_TYPE_V, OPT_PRESENCE_PENALTY, OPT_FREQUENCY_PENALTY, OPT_IGNORE_EOS, OPT_SINGLE_TURN, OPT_MULTILINE,
	OPT_NO_CACHE, OPT_CACHE_DIR, OPT_IMPORT_FLAGS, OPT_LIST_CACHE, OPT_PRUNE_CACHE, OPT_GRAMMAR, OPT_GRAMMAR_FILE,
	OPT_PG, OPT_JSON_SCHEMA, OPT_JSON_SCHEMA_FILE, OPT_NO_WARMUP,
};
/* clang-format on */
static const struct option longopts[] = {
	{"add-special", no_argument, NULL, OPT_ADD_SPECIAL},
	{"bench", optional_argument, NULL, OPT_BENCH},
	{"cache-type-k", required_argument, NULL, OPT_CACHE_TYPE_K},
	{"cache-type-v", required_argument, NULL, OPT_CACHE_TYPE_V},
	{"chat", no_argument, NULL, 'i'},
	{"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE},
	{"chunks", required_argument, NULL, OPT_CHUNKS},
	{"conversation", no_argument, NULL, 'i'},
	{"ctx-size", required_argument, NULL, 'c'},
	{"escape", no_argument, NULL, OPT_ESCAPE},
	{"no-cache", no_argument, NULL, OPT_NO_CACHE},
	{"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
	{"import-flags", required_argument, NULL, OPT_IMPORT_FLAGS},
	{"list-cache", no_argument, NULL, OPT_LIST_CACHE},
	{"prune-cache", no_argument, NULL, OPT_PRUNE_CACHE},
	{"file", required_argument, NULL, 'f'},
	{"frequency-penalty", required_argument, NULL, OPT_FREQUENCY_PENALTY},
	{"grammar", required_argument, NULL, OPT_GRAMMAR},
	{"grammar-file", required_argument, NULL, OPT_GRAMMAR_FILE},
	{"json-schema", required_argument, NULL, OPT_JSON_SCHEMA},
	{"json-schema-file", required_argument, NULL, OPT_JSON_SCHEMA_FILE},
	{"ignore-eos", no_argument, NULL, OPT_IGNORE_EOS},
	{"model", required_argument, NULL, 'm'},
	{"output", required_argument, NULL, 'o'},
	{"pg", required_argument, NULL, OPT_PG},
	{"no-warmup", no_argument, NULL, OPT_NO_WARMUP},
	{"n-predict", required_argument, NULL, 'n'},
	{"no-escape", no_argument, NULL, OPT_NO_ESCAPE},
	{"prompt", required_argument, NULL, 'p'},
	{"system-prompt", required_argument, NULL, OPT_SYSTEM},
	{"threads", required_argument, NULL, 't'},
	{"detokenize", no_argument, NULL, OPT_DETOKENIZE},
	{"json", no_argument, NULL, OPT_JSON},
	{"kl-divergence", required_argument, NULL, OPT_KLD},
	{"kl-divergence-base", required_argument, NULL, OPT_KLD_BASE},
	{"logits", required_argument, NULL, OPT_LOGITS},
	{"min-p", required_argument, NULL, OPT_MIN_P},
	{"no-display-prompt", no_argument, NULL, OPT_NO_DISPLAY_PROMPT},
	{"no-gen-prompt", no_argument, NULL, OPT_NO_GEN_PROMPT},
	{"no-special-in-input", no_argument, NULL, OPT_NO_SPECIAL_IN_INPUT},
	{"perplexity", required_argument, NULL, OPT_PERPLEXITY},
	{"presence-penalty", required_argument, NULL, OPT_PRESENCE_PENALTY},
	{"ppl-context", required_argument, NULL, OPT_PPL_CONTEXT},
	{"raw", no_argument, NULL, OPT_RAW},
	{"parse-reply", required_argument, NULL, OPT_PARSE_REPLY},
	{"render", required_argument, NULL, OPT_RENDER},
	{"repeat-last-n", required_argument, NULL, OPT_REPEAT_LAST_N},
	{"repeat-penalty", required_argument, NULL, OPT_REPEAT_PENALTY},
	{"seed", required_argument, NULL, OPT_SEED},
	{"single-turn", no_argument, NULL, OPT_SINGLE_TURN},
	{"multiline-input", no_argument, NULL, OPT_MULTILINE},
	{"skip-special", no_argument, NULL, OPT_SKIP_SPECIAL},
	{"stop", required_argument, NULL, OPT_STOP},
	{"system", required_argument, NULL, OPT_SYSTEM},
	{"temp", required_argument, NULL, OPT_TEMP},
	{"tokenize", no_argument, NULL, OPT_TOKENIZE},
	{"tokenizer", required_argument, NULL, OPT_TOKENIZER},
	{"tokens", required_argument, NULL, OPT_TOKENS},
	{"top-k", required_argument, NULL, OPT_TOP_K},
	{"top-p", required_argument, NULL, OPT_TOP_P},
	{"verify", no_argument, NULL, OPT_VERIFY},
	LLM_STD_LONGOPTS,
	{NULL, 0, NULL, 0},
};

/* llama-cli's spellings of one dash and several letters, which getopt
 * would read as clustered short options ("-no-cnv" as -n o-cnv), and its
 * options that have no meaning here: those that mean something become
 * our options; those that change nothing here (the GPU, the memory
 * mapping, the batch sizes, colours) are dropped, named in one note on
 * stderr; those that would change the result and cannot be honoured
 * are refused by name in one line.  Returns the new argv (argc in
 * *argc); "--" ends the options. */
enum { NOARG, ARG, OPTARG }; /* OPTARG: a value taken when it is one of on, off, auto, 0, 1 */
static char **
llama_cli_spellings(int *argc, char **argv)
{
	static const struct {
		const char *name;
		int arg;
		const char *to;  /* our option; "" to drop; NULL to refuse */
		const char *why; /* for a refusal, or a dropped option's note ("" none); NULL: the line before's */
		int zero;        /* dropped when its value is 0, refused otherwise */
	} sp[] = {
		{"-cnv", NOARG, "--conversation", "", 0},
		{"-sys", ARG, "--system-prompt", "", 0},
		{"-no-cnv", NOARG, "", "", 0}, /* plain completion is the default here */
		{"-ctk", ARG, "--cache-type-k", "", 0},
		{"-ctv", ARG, "--cache-type-v", "", 0},
		{"-st", NOARG, "--single-turn", "", 0},
		{"-pg", ARG, "--pg", "", 0},
		{"-mli", NOARG, "--multiline-input", "", 0},
		{"--reverse-prompt", ARG, "--stop", "", 0},
		{"-j", ARG, "--json-schema", "", 0},
		{"-jf", ARG, "--json-schema-file", "", 0},
		{"-fa", OPTARG, "", "the attention is compiled into the model", 0},
		{"--flash-attn", OPTARG, "", NULL, 0},
		{"-ngl", ARG, "", "there are no GPU layers: llm-run runs the model on the CPU", 1},
		{"--n-gpu-layers", ARG, "", NULL, 1},
		{"--gpu-layers", ARG, "", NULL, 1},
		{"-sm", ARG, "", "nothing is split across GPUs", 0},
		{"--split-mode", ARG, "", NULL, 0},
		{"-mg", ARG, "", NULL, 0},
		{"--main-gpu", ARG, "", NULL, 0},
		{"--mlock", NOARG, "", "the weights are mapped from the bundle, read-only", 0},
		{"--no-mmap", NOARG, "", NULL, 0},
		{"--numa", ARG, "", "the threads are OpenMP's (OMP_PLACES, OMP_PROC_BIND)", 0},
		{"-b", ARG, "", "the prefill chunk is compiled into the model (llm-import --prefill-chunk)", 0},
		{"--batch-size", ARG, "", NULL, 0},
		{"-ub", ARG, "", NULL, 0},
		{"--ubatch-size", ARG, "", NULL, 0},
		{"-co", OPTARG, "", "the output is plain text", 0},
		{"--color", OPTARG, "", NULL, 0},
		{"-hf", ARG, NULL,
			"nothing is downloaded: fetch the GGUF file or the checkpoint yourself and give it to -m", 0},
		{"--hf-repo", ARG, NULL, NULL, 0},
	};
	static const char *const optvals[] = {"on", "off", "auto", "0", "1", "true", "false"};
	char **out = llm_xcalloc((size_t)*argc + 1, sizeof(*out));
	struct llm_buf dropped = {0};
	int n = 0;
	out[n++] = argv[0];
	for (int i = 1; i < *argc; i++) {
		size_t j = 0;
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				out[n++] = argv[i++];
			break;
		}
		/* the long ones also as --name=value */
		size_t len = 0;
		while (j < LLM_NELEM(sp) &&
		    !(strcmp(argv[i], sp[j].name) == 0 ||
			(sp[j].name[1] == '-' && strncmp(argv[i], sp[j].name, len = strlen(sp[j].name)) == 0 &&
			    argv[i][len] == '=')))
			j++;
		if (j == LLM_NELEM(sp)) {
			out[n++] = argv[i];
			continue;
		}
		size_t k = j;
		while (!sp[k].why)
			k--;
		const char *val = strchr(argv[i], '='), *opt = argv[i];
		if (val)
			val++;
		else if (sp[j].arg == ARG && i + 1 < *argc)
			val = argv[++i];
		else if (sp[j].arg == OPTARG && i + 1 < *argc) {
			size_t v = 0;
			while (v < LLM_NELEM(optvals) && strcmp(argv[i + 1], optvals[v]) != 0)
				v++;
			if (v < LLM_NELEM(optvals))
				val = argv[++i];
		}
		if (sp[j].arg == ARG && !val)
			usage_line(llm_xasprintf("%s needs a value", sp[j].name));
		if (!sp[j].to || (sp[j].zero && strcmp(val, "0") != 0))
			usage_line(llm_xasprintf("%s%s%s: %s", sp[j].name, val ? " " : "", val ? val : "", sp[k].why));
		if (*sp[j].to) {
			/* ours takes the value the same way */
			if (strchr(opt, '='))
				out[n++] = llm_xasprintf("%s%s", sp[j].to, strchr(opt, '='));
			else {
				out[n++] = (char *)sp[j].to;
				if (val)
					out[n++] = (char *)val;
			}
			continue;
		}
		if (*sp[k].why) /* dropped, with a note */
			llm_buf_printf(&dropped, "%s%s%s%s", dropped.len ? ", " : "", sp[j].name, val ? " " : "",
			    val ? val : "");
	}
	if (dropped.len)
		llm_warn("ignored, no meaning here (llm-run(1), Options): %s", dropped.p);
	llm_buf_free(&dropped);
	*argc = n;
	return out;
}

/* Reads the options into a and checks that they go together. */
static void
parse_args(int argc, char **argv, struct args *a)
{
	int ch;

	while ((ch = getopt_long(argc, argv, "c:d:ef:him:n:o:p:r:s:t:v", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			a->prompt_file = optarg;
			set_mode(&a->mode, M_RUN);
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(LLM_EXIT_OK);
		case LLM_OPT_HELP:
			fputs(usage_text, stdout);
			llm_help(help_text);
		case LLM_OPT_VERSION:
			llm_print_version();
		case 'i':
			set_mode(&a->mode, M_CHAT);
			break;
		case 'm':
			a->model = optarg;
			break;
		case 'n':
			a->n_arg = optarg; /* a count, or --bench's list of tg tests */
			break;
		case 'd':
			a->d_arg = optarg;
			break;
		case 'r':
			a->r_arg = optarg;
			break;
		case 'c':
			/* 0, as llama-cli: the model's own context */
			a->ctx_cap = parse_int("-c", optarg, 0, INT64_MAX);
			a->ctx_model = a->ctx_cap == 0;
			break;
		case OPT_CACHE_TYPE_K:
		case OPT_CACHE_TYPE_V:
			a->kv_type[ch == OPT_CACHE_TYPE_V] = optarg;
			break;
		case OPT_NO_CACHE:
			a->cache.off = 1;
			break;
		case OPT_CACHE_DIR:
			a->cache.dir = optarg;
			break;
		case OPT_IMPORT_FLAGS:
			a->cache.user_flags = optarg;
			break;
		case OPT_LIST_CACHE:
		case OPT_PRUNE_CACHE:
			if (a->cache_action)
				usage_msg("give one of --list-cache and --prune-cache");
			a->cache_action = ch == OPT_LIST_CACHE ? 1 : 2;
			break;
		case 'e':
		case OPT_ESCAPE:
			a->escape = 1;
			break;
		case OPT_NO_ESCAPE:
			a->escape = 0;
			break;
		case 'p':
			a->prompt = optarg; /* a prompt, or --bench's list of pp tests */
			break;
		case 'o':
			a->out_arg = optarg;
			break;
		case OPT_NO_WARMUP:
			a->bench.no_warmup = 1;
			break;
		case OPT_PG: {
			/* llama-bench's -pg pp,tg (repeatable) */
			struct bench_list l;
			parse_bench_list("-pg", optarg, &l);
			if (l.n != 2 || (l.v[0] == 0 && l.v[1] == 0))
				usage_line(llm_xasprintf("-pg: '%s' is not a prompt and a generation count, as 512,128",
				    optarg));
			if (a->bench.npg == BENCH_MAX)
				usage_line(llm_xasprintf("-pg: at most %d pairs", BENCH_MAX));
			a->bench.pg[a->bench.npg][0] = l.v[0];
			a->bench.pg[a->bench.npg++][1] = l.v[1];
			break;
		}
		case 't':
			if (strchr(optarg, ',')) {
				a->t_list = optarg; /* --bench's list: checked with the mode */
				break;
			}
			/* -1, as llama-cli: every core (OpenMP's default) */
			a->threads = parse_int("-t", optarg, -1, 4096);
			if (a->threads == 0)
				usage_line("-t: '0' is not a number of threads (-1: every core)");
			if (a->threads < 0)
				a->threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
			break;
		case 'v':
			a->verbose = 1;
			break;
		case OPT_ADD_SPECIAL:
			a->add_special = 1;
			break;
		case OPT_RAW:
			a->raw = 1;
			break;
		case OPT_NO_SPECIAL_IN_INPUT:
			a->plain_input = 1;
			break;
		case OPT_NO_DISPLAY_PROMPT:
			a->no_echo = 1;
			break;
		case OPT_BENCH:
			set_mode(&a->mode, M_BENCH);
			a->bench_arg = optarg;
			break;
		case OPT_CHUNKS:
			a->ppl.max_chunks = parse_int("--chunks", optarg, 1, INT32_MAX);
			break;
		case OPT_KLD:
			a->ppl.base = optarg;
			break;
		case OPT_KLD_BASE:
			a->ppl.save_base = optarg;
			break;
		case OPT_PERPLEXITY:
			a->ppl.path = optarg;
			set_mode(&a->mode, M_PPL);
			break;
		case OPT_PPL_CONTEXT:
			a->ppl.n_ctx = parse_int("--ppl-context", optarg, 4, INT32_MAX);
			break;
		case OPT_CHAT_TEMPLATE:
			a->template_name = optarg;
			if (!llm_chat_spec_known(optarg))
				usage_line(llm_xasprintf("--chat-template: %s", llm_errmsg()));
			break;
		case OPT_DETOKENIZE:
			set_mode(&a->mode, M_DETOKENIZE);
			break;
		case OPT_JSON:
			a->json = 1;
			break;
		case OPT_LOGITS:
			a->logits_path = optarg;
			break;
		case OPT_MIN_P:
			a->sp.min_p = parse_num("--min-p", optarg, 0, 1);
			break;
		case OPT_NO_GEN_PROMPT:
			a->no_gen = 1;
			break;
		case OPT_RENDER:
			set_mode(&a->mode, M_RENDER);
			a->render_path = optarg;
			break;
		case OPT_PARSE_REPLY:
			set_mode(&a->mode, M_PARSE);
			a->render_path = optarg;
			break;
		case OPT_VERIFY:
			set_mode(&a->mode, M_VERIFY);
			break;
		case OPT_REPEAT_LAST_N:
			a->sp.repeat_last_n = parse_int("--repeat-last-n", optarg, -1, INT64_MAX);
			break;
		case OPT_REPEAT_PENALTY:
			a->sp.repeat_penalty = parse_num("--repeat-penalty", optarg, 1e-6, 1e6);
			break;
		case OPT_PRESENCE_PENALTY:
			a->sp.presence_penalty = parse_num("--presence-penalty", optarg, -1e6, 1e6);
			break;
		case OPT_FREQUENCY_PENALTY:
			a->sp.frequency_penalty = parse_num("--frequency-penalty", optarg, -1e6, 1e6);
			break;
		case OPT_IGNORE_EOS:
			a->sp.ignore_eos = 1;
			break;
		case OPT_GRAMMAR:
		case OPT_GRAMMAR_FILE:
		case OPT_JSON_SCHEMA:
		case OPT_JSON_SCHEMA_FILE:
			if (a->gram_arg)
				usage_msg(
				    "give one of --grammar, --grammar-file, --json-schema and --json-schema-file");
			a->gram_arg = optarg;
			a->gram_opt = ch == OPT_GRAMMAR ? "--grammar" :
			    ch == OPT_GRAMMAR_FILE      ? "--grammar-file" :
			    ch == OPT_JSON_SCHEMA       ? "--json-schema" :
							  "--json-schema-file";
			break;
		case OPT_SINGLE_TURN:
			set_mode(&a->mode, M_CHAT);
			a->single_turn = 1;
			break;
		case OPT_MULTILINE:
			a->multiline = 1;
			break;
		case 's':
		case OPT_SEED:
			a->sp.seed = (uint64_t)parse_int("--seed", optarg, 0, INT64_MAX);
			a->seeded = 1;
			break;
		case OPT_SKIP_SPECIAL:
			a->skip_special = 1;
			break;
		case OPT_STOP:
			if (!*optarg)
				usage_msg("--stop: empty string");
			a->stop = llm_xreallocarray(a->stop, a->nstop + 1, sizeof(*a->stop));
			a->stop[a->nstop++] = optarg;
			break;
		case OPT_SYSTEM:
			a->system = optarg;
			break;
		case OPT_TEMP:
			a->sp.temperature = parse_num("--temp", optarg, 0, 1e6);
			break;
		case OPT_TOKENIZE:
			set_mode(&a->mode, M_TOKENIZE);
			break;
		case OPT_TOKENIZER:
			a->tokenizer_path = optarg;
			break;
		case OPT_TOKENS:
			a->tokens_arg = optarg;
			set_mode(&a->mode, M_RUN);
			break;
		case OPT_TOP_K:
			a->sp.top_k = parse_int("--top-k", optarg, 0, INT32_MAX);
			break;
		case OPT_TOP_P:
			a->sp.top_p = parse_num("--top-p", optarg, 0, 1);
			break;
		default: /* getopt said which option: its usage is 20 lines */
			usage_line("see llm-run -h (the usage) or --help");
		}
	}
	/* --bench takes its spec as --bench=spec or as the next argument. */
	if (a->mode == M_BENCH && !a->bench_arg && optind + 1 == argc)
		a->bench_arg = argv[optind++];
	if (optind != argc)
		usage_msg(llm_xasprintf("unexpected argument '%s'", argv[optind]));
	/* With --bench, -p, -n, -d and -r are llama-bench's. */
	if (a->mode == M_BENCH) {
		if (a->bench_arg && (a->prompt || a->n_arg || a->d_arg || a->r_arg))
			usage_msg("give the --bench spec or llama-bench's -p, -n, -d and -r, not both");
		if (a->prompt)
			parse_bench_list("-p", a->prompt, &a->bench.pp);
		if (a->n_arg)
			parse_bench_list("-n", a->n_arg, &a->bench.tg);
		if (a->d_arg)
			parse_bench_list("-d", a->d_arg, &a->bench.depth);
		if (a->r_arg)
			a->bench.reps = parse_int("-r", a->r_arg, 1, 1 << 24);
		if (a->t_list) {
			parse_bench_list("-t", a->t_list, &a->bench.threads);
			for (int i = 0; i < a->bench.threads.n; i++)
				if (a->bench.threads.v[i] < 1 || a->bench.threads.v[i] > 4096)
					usage_line(
					    llm_xasprintf("-t: '%s': each count of threads is 1 to 4096", a->t_list));
			a->threads = a->bench.threads.v[0];
		}
		/* llama-bench's -o; --json is -o json */
		static const char *const outs[] = {[BENCH_MD] = "md",
			[BENCH_JSON] = "json",
			[BENCH_JSONL] = "jsonl",
			[BENCH_CSV] = "csv",
			[BENCH_SQL] = "sql"};
		a->bench.out = a->json ? BENCH_JSON : BENCH_MD;
		if (a->out_arg) {
			int o = 0;
			while (o < (int)LLM_NELEM(outs) && strcmp(a->out_arg, outs[o]) != 0)
				o++;
			if (o == (int)LLM_NELEM(outs))
				usage_line(llm_xasprintf("-o: '%s' is not md, json, jsonl, csv or sql", a->out_arg));
			if (a->json && o != BENCH_JSON)
				usage_line(llm_xasprintf("--json and -o %s: give one", a->out_arg));
			a->bench.out = o;
		}
		a->prompt = NULL;
	} else {
		if (a->t_list)
			usage_line(llm_xasprintf("-t: '%s': a list of threads goes with --bench", a->t_list));
		if (a->out_arg)
			usage_line("-o goes with --bench (llama-bench's output format)");
		if (a->bench.npg)
			usage_line("-pg goes with --bench");
		if (a->d_arg)
			usage_msg("-d goes with --bench");
		if (a->r_arg) {
			/* llama-cli's reverse prompt: a stop string here */
			if (!*a->r_arg)
				usage_line("-r: empty string");
			a->stop = llm_xreallocarray(a->stop, a->nstop + 1, sizeof(*a->stop));
			a->stop[a->nstop++] = (char *)a->r_arg;
		}
		/* -st's message may come with -p */
		if (a->prompt && !a->single_turn)
			set_mode(&a->mode, M_RUN);
		if (a->single_turn && (a->prompt_file || a->tokens_arg))
			usage_msg("--single-turn takes its message with -p or on standard input");
		if (a->n_arg) {
			/* -1, as llama-cli: until an end of sequence or a full context */
			a->max_new = parse_int("-n", a->n_arg, -1, INT64_MAX);
			if (a->max_new < 0)
				a->max_new = INT64_MAX;
		}
	}
	if (a->multiline && a->mode != M_CHAT)
		usage_line("--multiline-input (-mli) goes with -i (a chat)");
	if ((a->prompt != NULL) + (a->prompt_file != NULL) + (a->tokens_arg != NULL) > 1)
		usage_msg("give one of -i, -f, -p, --tokens, --bench, --tokenize, --detokenize and --render");
	if (a->bench_arg)
		parse_bench(a->bench_arg, &a->bench);
	if (a->mode == M_BENCH && bench_list_max(&a->bench.pp) == 0 && bench_list_max(&a->bench.tg) == 0 &&
	    a->bench.npg == 0) {
		/* one line: an empty table would say nothing */
		usage_line("--bench: nothing to measure: every prompt (pp, -p) and generation (tg, -n) count is 0");
	}
	if (a->add_special && a->mode != M_TOKENIZE)
		usage_msg("--add-special goes with --tokenize");
	if (a->raw && a->mode != M_TOKENIZE)
		usage_msg("--raw goes with --tokenize");
	if (a->plain_input && a->mode != M_RUN && a->mode != M_CHAT && a->mode != M_TOKENIZE)
		usage_msg("--no-special-in-input goes with -i, -f, -p or --tokenize");
	if (a->plain_input && a->tokens_arg)
		usage_msg("--no-special-in-input goes with text, not --tokens");
	if (a->no_echo && a->mode != M_RUN && a->mode != M_CHAT)
		usage_msg("--no-display-prompt goes with -f, -p, --tokens or -i");
	if (a->skip_special && a->mode != M_DETOKENIZE)
		usage_msg("--skip-special goes with --detokenize");
	if (a->no_gen && a->mode != M_RENDER)
		usage_msg("--no-gen-prompt goes with --render");
	if (a->logits_path && a->mode != M_RUN)
		usage_msg("--logits goes with -f, -p or --tokens");
	if (a->system && a->mode != M_CHAT)
		usage_msg("--system goes with -i");
	if ((a->ppl.n_ctx || a->ppl.max_chunks || a->ppl.base || a->ppl.save_base) && a->mode != M_PPL)
		usage_msg("--ppl-context, --chunks, --kl-divergence and --kl-divergence-base go with --perplexity");
	if (a->ppl.base && a->ppl.save_base)
		usage_msg("give one of --kl-divergence and --kl-divergence-base");
	if (a->gram_arg && a->mode != M_RUN && a->mode != M_CHAT)
		usage_msg(llm_xasprintf("%s goes with -f, -p, --tokens or -i", a->gram_opt));
}

/* The grammar of --grammar, --grammar-file, --json-schema or
 * --json-schema-file into a->sp, checked before the model loads: a bad
 * one is one line naming the file (or the option) with its line and
 * column. */
static void
load_grammar(struct args *a)
{
	const char *opt = a->gram_opt, *where = a->gram_arg;
	char *text;
	size_t len;
	if (!a->gram_arg)
		return;
	int file = strcmp(opt, "--grammar-file") == 0 || strcmp(opt, "--json-schema-file") == 0;
	if (file) {
		text = run_read_input(a->gram_arg, &len);
	} else {
		text = llm_xstrdup(a->gram_arg);
		len = strlen(text);
		where = opt;
	}
	if (opt[2] == 'j') {
		char *g;
		if (llm_json_schema_to_grammar(text, len, &g) != LLM_OK)
			llm_fatal("%s: %s", where, llm_errmsg());
		free(text);
		text = g;
	} else if (strlen(text) != len) {
		llm_fatal("%s: a NUL byte in the grammar", where);
	}
	if (llm_grammar_check(text) != LLM_OK)
		llm_fatal("%s: %s", where, llm_errmsg());
	a->sp.grammar = text;
}

/* What every run of a model needs given, and a seed when none was. */
static void
check_run_args(struct args *a)
{
	if (!a->model)
		usage_msg("no model (-m bundle or build directory)");
	if (a->mode == M_NONE)
		usage_msg("no prompt (-i, -f, -p, --tokens, --bench or --perplexity)");
	if (!a->seeded)
		a->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

/* -c: the positions of a sequence, up to the build's max_context (maxc:
 * llm-import --max-context sets it); 0: the default.  -ctk, -ctv: the
 * cache's type is the build's (kv: llm-import --kv-dtype); a different
 * one asked for is refused. */
static int64_t
choose_context(const struct args *a, int64_t maxc, const char *kv)
{
	int64_t ctx = a->ctx_model ? maxc : a->ctx_cap;
	for (int i = 0; i < 2; i++)
		if (a->kv_type[i] && strcmp(a->kv_type[i], kv) != 0)
			llm_fatal("%s: %s %s: the KV cache of this build is %s, chosen at import (llm-import "
				  "--kv-dtype)",
			    a->model, i ? "-ctv" : "-ctk", a->kv_type[i], kv);
	if (ctx > maxc)
		llm_fatal("%s: -c %" PRId64 " exceeds the context this model was built for, %" PRId64
			  " (llm-import --max-context sets it)",
		    a->model, ctx, maxc);
	return ctx;
}

/* Opens the model through the API; *ctx: -c's positions, 0 for the
 * default; *t_load: the seconds it took. */
static struct llm *
open_model(struct args *a, int64_t *ctx, double *t_load)
{
	struct llm *m;
	struct llm_options o = {.threads = (int)a->threads,
		.verbose = a->verbose,
		.tokenizer = a->tokenizer_path,
		.chat_template = a->template_name};
	check_run_args(a);
	/* a GGUF file or a checkpoint: its compiled bundle */
	char *bundle = run_cache_model(a->model, &a->cache);
	double t = llm_now();
	int rc = llm_open(bundle ? bundle : a->model, &o, &m);
	if (rc == LLM_ERR_RANKS && !*llm_errmsg())
		exit(LLM_EXIT_FAIL); /* rank 0 says why */
	if (rc != LLM_OK)
		llm_fatal("%s", llm_errmsg());
	free(bundle);
	if (llm_rank(m) > 0) {
		/* a tensor-parallel model's other ranks: rank 0's calls, on their
		 * part of the weights, until it closes the model */
		if (llm_follow(m) != LLM_OK)
			llm_fatal("%s", llm_errmsg());
		llm_close(&m);
		exit(LLM_EXIT_OK);
	}
	if (llm_model_warning(m))
		llm_warn("%s", llm_model_warning(m));
	*ctx = choose_context(a, llm_context_limit(m), llm_kv_type(m));
	*t_load = llm_now() - t;
	return m;
}

int
main(int argc, char **argv)
{
	struct args a = {
		.sp = LLM_SAMPLING_GREEDY,
		.bench = {.pp = {1, {512}}, .tg = {1, {128}}, .depth = {1, {0}}, .reps = 5},
		.max_new = 128,
		.mode = M_NONE,
	};

	t_start = llm_now();
	argv[0] = (char *)llm_setprog(argv[0]);
	argv = llama_cli_spellings(&argc, argv);
	parse_args(argc, argv, &a);
	if (a.cache_action) {
		if (a.model || a.mode != M_NONE || a.cache.off)
			usage_msg("--list-cache and --prune-cache go alone (with --cache-dir)");
		run_cache_list(&a.cache, a.cache_action == 2);
		return LLM_EXIT_OK;
	}
	if (a.cache.off && a.cache.dir)
		usage_msg("give one of --no-cache and --cache-dir");
	a.cache.verbose = a.verbose;
	/* the build -c, -ctk/-ctv and --import-flags ask for, of a GGUF file or a checkpoint */
	run_cache_variant(&a.cache, a.ctx_cap, a.kv_type[0], a.kv_type[1]);
	if (a.mode == M_TOKENIZE || a.mode == M_DETOKENIZE || a.mode == M_RENDER || a.mode == M_PARSE) {
		if (a.model && a.tokenizer_path)
			usage_msg("give one of -m and --tokenizer");
		if (a.mode != M_RENDER && a.mode != M_PARSE && !a.model && !a.tokenizer_path)
			usage_msg("no tokenizer (-m model or --tokenizer path)");
		/* a GGUF file or a checkpoint: the tokenizer and template of
		 * its compiled bundle, those generation uses */
		char *bundle = a.model ? run_cache_model(a.model, &a.cache) : NULL;
		struct text_opts t = {a.mode == M_TOKENIZE ? TEXT_TOKENIZE :
			    a.mode == M_DETOKENIZE         ? TEXT_DETOKENIZE :
			    a.mode == M_PARSE              ? TEXT_PARSE :
							     TEXT_RENDER,
			bundle ? bundle : a.model, a.tokenizer_path, a.template_name, a.render_path, a.add_special,
			a.raw, a.plain_input, a.skip_special, a.no_gen, a.model};
		run_text(&t);
		free(bundle);
		return LLM_EXIT_OK;
	}
	if (a.mode == M_VERIFY) {
		if (!a.model)
			usage_msg("--verify needs -m model");
		char *bundle = run_cache_model(a.model, &a.cache);
		run_verify(bundle ? bundle : a.model);
		free(bundle);
		return LLM_EXIT_OK;
	}

	int64_t ctx;
	double t_load;
	load_grammar(&a);
	struct llm *m = open_model(&a, &ctx, &t_load);
	if (a.mode == M_BENCH)
		run_bench(m, a.model, ctx, &a.bench, (int)a.threads, a.sp.seed, a.verbose, t_load);
	else if (a.mode == M_PPL) {
		a.ppl.json = a.json;
		a.ppl.verbose = a.verbose;
		a.ppl.t_load = t_load;
		run_perplexity(m, a.model, ctx, &a.ppl);
	} else {
		int64_t *ids = NULL;
		size_t nids = 0;
		if (a.tokens_arg)
			parse_ids(a.tokens_arg, &ids, &nids);
		struct gen_opts g = {a.prompt, a.prompt_file, a.escape, ids, nids, a.system, a.logits_path, a.sp,
			a.max_new, a.stop, a.nstop, a.json, a.verbose, a.plain_input, a.no_echo, t_start, a.single_turn,
			a.multiline};
		if (a.mode == M_CHAT)
			run_chat(m, a.model, ctx, t_load, &g);
		else
			run_generate(m, a.model, ctx, t_load, &g);
		free(ids);
	}
	if (llm_close(&m) != LLM_OK)
		llm_fatal("%s: %s", a.model, llm_errmsg());
	free(a.stop);
	return LLM_EXIT_OK;
}
