/* options.c: llm-run's command line as one table: each option's names,
 * its argument, what it sets (a field of struct run_args, or a small
 * handler), the mode it chooses, the modes it goes with and its entry of
 * --help.  getopt_long's options and short-option string, the --help
 * text and the "goes with" checks are made from the table; the usage
 * (the man page's SYNOPSIS, word for word) is written out. */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/base/util.h"
#include "../../lib/text/chat.h"
#include "run.h"

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

_Noreturn void
run_usage_msg(const char *msg)
{
	llm_warn("%s", msg);
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

static int64_t
parse_int(const char *opt, const char *s, int64_t min, int64_t max)
{
	int64_t v;
	if (llm_parse_i64(s, min, max, &v) < 0)
		run_usage_line(llm_xasprintf("%s: %s", opt, llm_errmsg()));
	return v;
}

static double
parse_num(const char *opt, const char *s, double min, double max)
{
	double v;
	if (llm_parse_f64(s, &v) < 0 || !(v >= min && v <= max))
		run_usage_msg(llm_xasprintf("%s: '%s' is not a number in [%g, %g]", opt, s, min, max));
	return v;
}

/* "1,,2" and "1," are errors, as is an id outside the vocabulary later. */
void
run_parse_ids(const char *s, int64_t **ids, size_t *n)
{
	const char *p = s;

	if (!*s)
		run_usage_msg("--tokens: no ids");
	for (;;) {
		size_t len = strcspn(p, ",");
		char *t = llm_xstrndup(p, len);
		int64_t v;
		if (!len)
			run_usage_msg(llm_xasprintf("--tokens: an empty id in '%s'", s));
		if (llm_parse_i64(t, 0, INT64_MAX, &v) < 0)
			run_usage_msg(llm_xasprintf("--tokens: %s", llm_errmsg()));
		free(t);
		*ids = llm_xreallocarray(*ids, *n + 1, sizeof(**ids));
		(*ids)[(*n)++] = v;
		if (!p[len])
			break;
		p += len + 1;
	}
}

/* --bench's spec (src/run/bench.c runs it).  "512" or "128,256,512" (llama-bench's lists); what names the option. */
static void
parse_bench_list(const char *what, const char *s, struct bench_list *l)
{
	char *copy = llm_xstrdup(s), *save = NULL;
	l->n = 0;
	if (!*s || s[strlen(s) - 1] == ',')
		run_usage_msg(llm_xasprintf("%s: '%s' is not a list of counts", what, s));
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (l->n == BENCH_MAX)
			run_usage_msg(llm_xasprintf("%s: at most %d values", what, BENCH_MAX));
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
			run_usage_msg(llm_xasprintf("--bench: '%s' is not pp=N, tg=N, depth=N or reps=N", t));
		dst->n = 1;
		dst->v[0] = parse_int("--bench", t + k + 1, 0, 1 << 24);
	}
	free(copy);
}

static void
set_mode(enum run_mode *m, enum run_mode to)
{
	if (*m != M_NONE && *m != to)
		run_usage_msg("give one of -i, -f, -p, --tokens, --bench, --perplexity, --tokenize, --detokenize, "
			      "--render, --parse-reply and --verify");
	*m = to;
}

/* ---- the table -------------------------------------------------------- */

/* What an option's argument does to its field. */
enum kind {
	K_NONE, /* nothing (an option that only chooses a mode) */
	K_ON,   /* int field = 1 */
	K_OFF,  /* int field = 0 */
	K_STR,  /* const char *field = the argument */
	K_INT,  /* int64_t field = the argument, in [min, max] */
	K_NUM,  /* double field = the argument, in [lo, hi] */
	K_FN,   /* fn(a, o, argument) */
};

struct opt {
	const char *name;  /* --name (getopt_long's), or NULL */
	char letter;       /* -x, or 0 (neither: a line of --help only) */
	char arg;          /* no_argument, required_argument, optional_argument */
	char kind;         /* enum kind */
	size_t field;      /* offsetof(struct run_args, ...) */
	const char *alias; /* a second --name, llama-cli's */
	int64_t min, max;  /* K_INT */
	double lo, hi;     /* K_NUM */
	/* K_FN: the handler */
	void (*fn)(struct run_args *a, const struct opt *o, const char *arg);
	enum run_mode mode; /* the mode it chooses (M_NONE: none) */
	unsigned modes;     /* the modes it goes with (bits 1 << mode; 0: every one) */
	const char *goes;   /* its message outside them (NULL: "--name goes with" their options) */
	int line;           /* that message is one line, without the usage */
	const char *help;   /* its entry of --help, or NULL: told in another's */
};

/* the field a row sets */
#define F(f) .field = offsetof(struct run_args, f)
#define IN(m) (1u << (m))

static void
opt_usage(struct run_args *a, const struct opt *o, const char *arg)
{
	fputs(usage_text, stdout);
	exit(LLM_EXIT_OK);
}

static void opt_help(struct run_args *a, const struct opt *o, const char *arg);

static void
opt_version(struct run_args *a, const struct opt *o, const char *arg)
{
	llm_print_version();
}

static void
opt_cache_action(struct run_args *a, const struct opt *o, const char *arg)
{
	if (a->cache_action)
		run_usage_msg("give one of --list-cache and --prune-cache");
	a->cache_action = strcmp(o->name, "list-cache") == 0 ? 1 : 2;
}

/* -c 0, as llama-cli: the model's own context */
static void
opt_context(struct run_args *a, const struct opt *o, const char *arg)
{
	a->ctx_cap = parse_int("-c", arg, 0, INT64_MAX);
	a->ctx_model = a->ctx_cap == 0;
}

static void
opt_threads(struct run_args *a, const struct opt *o, const char *arg)
{
	if (strchr(arg, ',')) {
		a->t_list = arg; /* --bench's list: checked with the mode */
		return;
	}
	/* -1, as llama-cli: every core (OpenMP's default) */
	a->threads = parse_int("-t", arg, -1, 4096);
	if (a->threads == 0)
		run_usage_line("-t: '0' is not a number of threads (-1: every core)");
	if (a->threads < 0)
		a->threads = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
}

static void
opt_ignore_eos(struct run_args *a, const struct opt *o, const char *arg)
{
	a->sp.ignore_eos = 1;
}

static void
opt_grammar(struct run_args *a, const struct opt *o, const char *arg)
{
	if (a->gram_arg)
		run_usage_msg("give one of --grammar, --grammar-file, --json-schema and --json-schema-file");
	a->gram_arg = arg;
	a->gram_opt = llm_xasprintf("--%s", o->name);
}

static void
opt_seed(struct run_args *a, const struct opt *o, const char *arg)
{
	a->sp.seed = (uint64_t)parse_int("--seed", arg, 0, INT64_MAX);
	a->seeded = 1;
}

static void
add_stop(struct run_args *a, const char *text)
{
	a->stop = llm_xreallocarray(a->stop, a->nstop + 1, sizeof(*a->stop));
	a->stop[a->nstop++] = (char *)text;
}

static void
opt_stop(struct run_args *a, const struct opt *o, const char *arg)
{
	if (!*arg)
		run_usage_msg("--stop: empty string");
	add_stop(a, arg);
}

static void
opt_chat_template(struct run_args *a, const struct opt *o, const char *arg)
{
	a->template_name = arg;
	if (!llm_chat_spec_known(arg))
		run_usage_line(llm_xasprintf("--chat-template: %s", llm_errmsg()));
}

/* llama-bench's -pg pp,tg (repeatable) */
static void
opt_pg(struct run_args *a, const struct opt *o, const char *arg)
{
	struct bench_list l;
	parse_bench_list("-pg", arg, &l);
	if (l.n != 2 || (l.v[0] == 0 && l.v[1] == 0))
		run_usage_line(llm_xasprintf("-pg: '%s' is not a prompt and a generation count, as 512,128", arg));
	if (a->bench.npg == BENCH_MAX)
		run_usage_line(llm_xasprintf("-pg: at most %d pairs", BENCH_MAX));
	a->bench.pg[a->bench.npg][0] = l.v[0];
	a->bench.pg[a->bench.npg++][1] = l.v[1];
}

static const char ppl_goes[] = "--ppl-context, --chunks, --kl-divergence and --kl-divergence-base go with --perplexity";

/* In --help's order.  -p, -n, -d, -r, -t and -o are llama-bench's with
 * --bench (their arguments are kept as given until the mode is known).
 * A row an option, its --help entry under it: laid out by hand. */
/* clang-format off */
static const struct opt opts[] = {
	{"model", 'm', required_argument, K_STR, F(model), .help =
	    "  -m model             the bundle (model.llm) or build directory; or a GGUF file or a\n"
	    "                       Hugging Face checkpoint directory, compiled once into the cache\n"},
	{"no-cache", 0, no_argument, K_ON, F(cache.off), .help =
	    "  --no-cache           compile a GGUF file or checkpoint for this run only\n"},
	{"cache-dir", 0, required_argument, K_STR, F(cache.dir), .help =
	    "  --cache-dir dir      the cache (default: $LLM_CACHE_DIR, else $XDG_CACHE_HOME/llm, else\n"
	    "                       ~/.cache/llm); --list-cache lists it, --prune-cache empties it\n"},
	{"list-cache", 0, no_argument, K_FN, .fn = opt_cache_action},
	{"prune-cache", 0, no_argument, K_FN, .fn = opt_cache_action},
	{"import-flags", 0, required_argument, K_STR, F(cache.user_flags), .help =
	    "  --import-flags options\n"
	    "                       llm-import's options for a GGUF file's or checkpoint's build, as\n"
	    "                       words (\"--dtype q8_0 --activations f32\"): a build of its own in the\n"
	    "                       cache, as -c past 32768 (--max-context) and -ctk/-ctv (--kv-dtype) make\n"},
	{"prompt", 'p', required_argument, K_STR, F(prompt), .help =
	    "  -p text, -f file     the prompt (file - : standard input), echoed on standard output\n"
	    "                       before the text it is continued with\n"},
	{"file", 'f', required_argument, K_STR, F(prompt_file), .mode = M_RUN},
	{"no-display-prompt", 0, no_argument, K_ON, F(no_echo), .modes = IN(M_RUN) | IN(M_CHAT), .help =
	    "  --no-display-prompt  print only the generated text\n"},
	{"tokens", 0, required_argument, K_STR, F(tokens_arg), .mode = M_RUN, .help =
	    "  --tokens ids         the prompt as token ids, e.g. 1,2,3\n"},
	{"chat", 'i', no_argument, K_NONE, .alias = "conversation", .mode = M_CHAT, .help =
	    "  -i, --chat           chat: one user message a line of standard input\n"},
	{"single-turn", 0, no_argument, K_ON, F(single_turn), .mode = M_CHAT, .help =
	    "  --single-turn, -st   one exchange of a chat: the message of -p, else a line of standard input\n"},
	{"multiline-input", 0, no_argument, K_ON, F(multiline), .modes = IN(M_CHAT), .line = 1,
	    .goes = "--multiline-input (-mli) goes with -i (a chat)", .help =
	    "  --multiline-input, -mli\n"
	    "                       a chat message goes on until a line ends with / or \\ (as llama-cli)\n"},
	{NULL, 0, 0, K_NONE, .help =
	    "  llama-cli's spellings work too: --model, --prompt, --file, --threads, --n-predict,\n"
	    "  --ctx-size, --conversation (-cnv), --system-prompt (-sys), --escape; -ngl is refused\n"},
	{"n-predict", 'n', required_argument, K_STR, F(n_arg), .help =
	    "  -n count             tokens to generate at most (default 128; -1: until an end of sequence\n"
	    "                       or a full context)\n"},
	{"ctx-size", 'c', required_argument, K_FN, .fn = opt_context, .help =
	    "  -c n                 positions of the context, the KV cache allocated for them (default:\n"
	    "                       4096, or the build's --max-context if smaller; at most that; 0: that)\n"},
	{"escape", 'e', no_argument, K_ON, F(escape), .help =
	    "  -e                   process the escapes \\n \\r \\t \\' \\\" \\\\ in -p (--no-escape: do not)\n"},
	{"no-escape", 0, no_argument, K_OFF, F(escape)},
	{"threads", 't', required_argument, K_FN, .fn = opt_threads, .help =
	    "  -t threads           OpenMP threads, -1 every core (default: the OpenMP default)\n"},
	{"temp", 0, required_argument, K_NUM, F(sp.temperature), .lo = 0, .hi = 1e6, .help =
	    "  --temp t             sampling temperature; 0 (default): greedy\n"},
	{"top-k", 0, required_argument, K_INT, F(sp.top_k), .min = 0, .max = INT32_MAX, .help =
	    "  --top-k k, --top-p p, --min-p p\n"
	    "                       sampling filters (default off)\n"},
	{"top-p", 0, required_argument, K_NUM, F(sp.top_p), .lo = 0, .hi = 1},
	{"min-p", 0, required_argument, K_NUM, F(sp.min_p), .lo = 0, .hi = 1},
	{"repeat-penalty", 0, required_argument, K_NUM, F(sp.repeat_penalty), .lo = 1e-6, .hi = 1e6, .help =
	    "  --repeat-penalty r   penalty of the last --repeat-last-n tokens (default 1: off; n 64)\n"},
	{"repeat-last-n", 0, required_argument, K_INT, F(sp.repeat_last_n), .min = -1, .max = INT64_MAX},
	{"presence-penalty", 0, required_argument, K_NUM, F(sp.presence_penalty), .lo = -1e6, .hi = 1e6, .help =
	    "  --presence-penalty p, --frequency-penalty f\n"
	    "                       less p for a token in that window, f per time it is there (default 0)\n"},
	{"frequency-penalty", 0, required_argument, K_NUM, F(sp.frequency_penalty), .lo = -1e6,
	    .hi = 1e6},
	{"ignore-eos", 0, no_argument, K_FN, .fn = opt_ignore_eos, .help =
	    "  --ignore-eos         never an end-of-sequence or end-of-turn token (as llama-cli)\n"},
	{"grammar", 0, required_argument, K_FN, .fn = opt_grammar, .modes = IN(M_RUN) | IN(M_CHAT), .help =
	    "  --grammar text, --grammar-file file\n"
	    "                       hold the reply to a GBNF grammar (llama.cpp's notation; root starts)\n"},
	{"grammar-file", 0, required_argument, K_FN, .fn = opt_grammar, .modes = IN(M_RUN) | IN(M_CHAT)},
	{"json-schema", 0, required_argument, K_FN, .fn = opt_grammar, .modes = IN(M_RUN) | IN(M_CHAT), .help =
	    "  -j, --json-schema schema, -jf, --json-schema-file file\n"
	    "                       hold the reply to JSON that follows a JSON schema\n"},
	{"json-schema-file", 0, required_argument, K_FN, .fn = opt_grammar,
	    .modes = IN(M_RUN) | IN(M_CHAT)},
	{"seed", 's', required_argument, K_FN, .fn = opt_seed, .help =
	    "  -s, --seed n         sampler and benchmark seed (default: from the clock)\n"},
	{"stop", 0, required_argument, K_FN, .fn = opt_stop, .help =
	    "  --stop text          stop at this text (repeatable; -r, --reverse-prompt outside --bench)\n"},
	{"cache-type-k", 0, required_argument, K_STR, F(kv_type[0]), .help =
	    "  --cache-type-k t, --cache-type-v t (-ctk, -ctv)\n"
	    "                       the KV cache's type, checked: the build's (llm-import --kv-dtype)\n"},
	{"cache-type-v", 0, required_argument, K_STR, F(kv_type[1])},
	{"logits", 0, required_argument, K_STR, F(logits_path), .modes = IN(M_RUN), .help =
	    "  --logits file        write the logits of every step (f32 rows)\n"},
	{"json", 0, no_argument, K_ON, F(json), .help =
	    "  --json               one JSON object on standard output instead of text and stderr rates\n"},
	{"system", 0, required_argument, K_STR, F(system), .alias = "system-prompt", .modes = IN(M_CHAT), .help =
	    "  --system text        the system message of a chat\n"},
	{"no-special-in-input", 0, no_argument, K_ON, F(plain_input),
	    .modes = IN(M_RUN) | IN(M_CHAT) | IN(M_TOKENIZE),
	    .goes = "--no-special-in-input goes with -i, -f, -p or --tokenize", .help =
	    "  --no-special-in-input\n"
	    "                       the text of special tokens (<|im_end|>) in -p, -f, chat messages and\n"
	    "                       --tokenize lines is text, not the token (default: the token, as in\n"
	    "                       Hugging Face); the chat template's own tokens stay\n"},
	{"chat-template", 0, required_argument, K_FN, .fn = opt_chat_template, .help =
	    "  --chat-template name|file  a Jinja file, or deepseek-r1, qwen2, qwen3, llama3, llama2 "
	    "(default: the model's)\n"},
	{"tokenizer", 0, required_argument, K_STR, F(tokenizer_path), .help =
	    "  --tokenizer path     tokenizer.json, a bundle or a directory (default: the model's)\n"},
	{"bench", 0, optional_argument, K_STR, F(bench_arg), .mode = M_BENCH, .help =
	    "  --bench [spec]       prefill and decode rates like llama-bench: with it, -p, -n and -d are\n"
	    "                       lists of prefill, decode and depth counts (default 512, 128, 0), -r\n"
	    "                       the runs (default 5), --pg pp,tg (-pg) a prompt then generation, -t a list\n"
	    "                       of threads, -o md|json|jsonl|csv|sql the output, --no-warmup no run\n"
	    "                       before the timed ones; or spec pp=n,tg=n,depth=n,reps=n\n"},
	{NULL, 'd', required_argument, K_STR, F(d_arg), .modes = IN(M_BENCH)},
	{NULL, 'r', required_argument, K_STR, F(r_arg)},
	{"pg", 0, required_argument, K_FN, .fn = opt_pg, .modes = IN(M_BENCH), .line = 1,
	    .goes = "-pg goes with --bench"},
	{"output", 'o', required_argument, K_STR, F(out_arg), .modes = IN(M_BENCH), .line = 1,
	    .goes = "-o goes with --bench (llama-bench's output format)"},
	{"no-warmup", 0, no_argument, K_ON, F(bench.no_warmup)},
	{"perplexity", 0, required_argument, K_STR, F(ppl.path), .mode = M_PPL, .help =
	    "  --perplexity file    the text's perplexity, as llama-perplexity measures it\n"},
	{"ppl-context", 0, required_argument, K_INT, F(ppl.n_ctx), .min = 4, .max = INT32_MAX,
	    .modes = IN(M_PPL), .goes = ppl_goes, .help =
	    "  --ppl-context n      tokens a chunk (default 512, or the model's context when smaller)\n"},
	{"chunks", 0, required_argument, K_INT, F(ppl.max_chunks), .min = 1, .max = INT32_MAX,
	    .modes = IN(M_PPL), .goes = ppl_goes, .help =
	    "  --chunks n           the first n chunks only\n"},
	{"kl-divergence-base", 0, required_argument, K_STR, F(ppl.save_base), .modes = IN(M_PPL),
	    .goes = ppl_goes, .help =
	    "  --kl-divergence-base file, --kl-divergence file\n"
	    "                       save a base run's logits, or compare with them (KL divergence)\n"},
	{"kl-divergence", 0, required_argument, K_STR, F(ppl.base), .modes = IN(M_PPL), .goes = ppl_goes},
	{"tokenize", 0, no_argument, K_NONE, .mode = M_TOKENIZE, .help =
	    "  --tokenize [--add-special] [--raw]\n"
	    "                       JSON lines of text to ids (with the special tokens the model adds;\n"
	    "                       --raw: plain lines, each line's bytes as they are)\n"},
	{"add-special", 0, no_argument, K_ON, F(add_special), .modes = IN(M_TOKENIZE)},
	{"raw", 0, no_argument, K_ON, F(raw), .modes = IN(M_TOKENIZE)},
	{"detokenize", 0, no_argument, K_NONE, .mode = M_DETOKENIZE, .help =
	    "  --detokenize [--skip-special]\n"
	    "                       JSON lines of ids to text (without the special tokens)\n"},
	{"skip-special", 0, no_argument, K_ON, F(skip_special), .modes = IN(M_DETOKENIZE)},
	{"verify", 0, no_argument, K_NONE, .mode = M_VERIFY, .help =
	    "  --verify             check every tensor of the weights against weights.json (a full read;\n"
	    "                       loading checks a sample of them), and exit\n"},
	{"render", 0, required_argument, K_STR, F(render_path), .mode = M_RENDER, .help =
	    "  --render file [--no-gen-prompt]\n"
	    "                       the prompt a conversation (JSON) becomes (without the assistant's start)\n"},
	{"no-gen-prompt", 0, no_argument, K_ON, F(no_gen), .modes = IN(M_RENDER)},
	{"parse-reply", 0, required_argument, K_STR, F(render_path), .mode = M_PARSE, .help =
	    "  --parse-reply file   a reply as generated, as llm-serve's message in JSON: content,\n"
	    "                       reasoning_content and tool_calls, by the chat template's format\n"},
	{NULL, 'v', no_argument, K_ON, F(verbose), .help =
	    "  -v                   report loading and each phase call on standard error\n"},
	{NULL, 'h', no_argument, K_FN, .fn = opt_usage, .help =
	    "  -h                   print the usage\n"},
	{"help", 0, no_argument, K_FN, .fn = opt_help, .help =
	    "  --help, --version    print this help, or the version\n"},
	{"version", 0, no_argument, K_FN, .fn = opt_version},
};
/* clang-format on */

static void
opt_help(struct run_args *a, const struct opt *o, const char *arg)
{
	struct llm_buf b = {0};
	for (size_t i = 0; i < LLM_NELEM(opts); i++)
		if (opts[i].help)
			llm_buf_puts(&b, opts[i].help);
	fputs(usage_text, stdout);
	llm_help(b.p);
}

/* getopt_long's options and short-option string, from the table: an
 * option's value is 256 + its row (a letter alone: the letter). */
static void
getopt_lists(struct option *longs, char *shorts)
{
	size_t n = 0;
	for (size_t i = 0; i < LLM_NELEM(opts); i++) {
		const struct opt *o = &opts[i];
		int val = o->name ? 256 + (int)i : o->letter;
		/* the alias first: getopt names the first of a prefix's matches */
		if (o->alias)
			longs[n++] = (struct option){o->alias, o->arg, NULL, val};
		if (o->name)
			longs[n++] = (struct option){o->name, o->arg, NULL, val};
		if (o->letter) {
			*shorts++ = o->letter;
			if (o->arg == required_argument)
				*shorts++ = ':';
		}
	}
	longs[n] = (struct option){0};
	*shorts = 0;
}

/* The row of getopt_long's value ch, or NULL. */
static const struct opt *
find_opt(int ch)
{
	if (ch >= 256 && ch - 256 < (int)LLM_NELEM(opts))
		return &opts[ch - 256];
	for (size_t i = 0; ch > 0 && i < LLM_NELEM(opts); i++)
		if (opts[i].letter == ch)
			return &opts[i];
	return NULL;
}

static void
apply(struct run_args *a, const struct opt *o, const char *arg)
{
	char *f = (char *)a + o->field, name[64];

	snprintf(name, sizeof(name), "--%s", o->name ? o->name : ""); /* K_INT and K_NUM have one */
	switch (o->kind) {
	case K_ON:
		*(int *)f = 1;
		break;
	case K_OFF:
		*(int *)f = 0;
		break;
	case K_STR:
		*(const char **)f = arg;
		break;
	case K_INT:
		*(int64_t *)f = parse_int(name, arg, o->min, o->max);
		break;
	case K_NUM:
		*(double *)f = parse_num(name, arg, o->lo, o->hi);
		break;
	case K_FN:
		o->fn(a, o, arg);
		break;
	}
	if (o->mode != M_NONE)
		set_mode(&a->mode, o->mode);
}

/* The modes' options, for "goes with". */
static const char *const mode_opts[][3] = {
	[M_RUN] = {"-f", "-p", "--tokens"},
	[M_CHAT] = {"-i"},
	[M_BENCH] = {"--bench"},
	[M_PPL] = {"--perplexity"},
	[M_TOKENIZE] = {"--tokenize"},
	[M_DETOKENIZE] = {"--detokenize"},
	[M_RENDER] = {"--render"},
	[M_PARSE] = {"--parse-reply"},
	[M_VERIFY] = {"--verify"},
};

/* Each option given outside the modes it goes with: "--logits goes with
 * -f, -p or --tokens", or the row's own message. */
static void
check_modes(const struct run_args *a, const unsigned char *given)
{
	for (size_t i = 0; i < LLM_NELEM(opts); i++) {
		const struct opt *o = &opts[i];
		if (!given[i] || !o->modes || (o->modes & IN(a->mode)))
			continue;
		if (o->line)
			run_usage_line(o->goes);
		if (o->goes)
			run_usage_msg(o->goes);
		const char *w[16];
		int n = 0;
		for (size_t m = 0; m < LLM_NELEM(mode_opts); m++)
			for (int k = 0; k < 3 && (o->modes & IN(m)) && mode_opts[m][k]; k++)
				w[n++] = mode_opts[m][k];
		struct llm_buf b = {0};
		if (o->name)
			llm_buf_printf(&b, "--%s goes with", o->name);
		else
			llm_buf_printf(&b, "-%c goes with", o->letter);
		for (int k = 0; k < n; k++)
			llm_buf_printf(&b, "%s %s", k == 0 ? "" : k == n - 1 ? " or" : ",", w[k]);
		run_usage_msg(b.p);
	}
}

/* With --bench, -p, -n, -d, -r, -t and -o are llama-bench's. */
static void
bench_args(struct run_args *a)
{
	if (a->bench_arg && (a->prompt || a->n_arg || a->d_arg || a->r_arg))
		run_usage_msg("give the --bench spec or llama-bench's -p, -n, -d and -r, not both");
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
				run_usage_line(
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
			run_usage_line(llm_xasprintf("-o: '%s' is not md, json, jsonl, csv or sql", a->out_arg));
		if (a->json && o != BENCH_JSON)
			run_usage_line(llm_xasprintf("--json and -o %s: give one", a->out_arg));
		a->bench.out = o;
	}
	a->prompt = NULL;
}

/* Without --bench: -n is a count, -r a stop string, -p a prompt. */
static void
gen_args(struct run_args *a)
{
	if (a->t_list)
		run_usage_line(llm_xasprintf("-t: '%s': a list of threads goes with --bench", a->t_list));
	if (a->r_arg) {
		/* llama-cli's reverse prompt: a stop string here */
		if (!*a->r_arg)
			run_usage_line("-r: empty string");
		add_stop(a, a->r_arg);
	}
	/* -st's message may come with -p */
	if (a->prompt && !a->single_turn)
		set_mode(&a->mode, M_RUN);
	if (a->single_turn && (a->prompt_file || a->tokens_arg))
		run_usage_msg("--single-turn takes its message with -p or on standard input");
	if (a->n_arg) {
		/* -1, as llama-cli: until an end of sequence or a full context */
		a->max_new = parse_int("-n", a->n_arg, -1, INT64_MAX);
		if (a->max_new < 0)
			a->max_new = INT64_MAX;
	}
}

void
run_parse_args(int argc, char **argv, struct run_args *a)
{
	static struct option longs[2 * LLM_NELEM(opts) + 1];
	static char shorts[2 * LLM_NELEM(opts) + 1];
	static unsigned char given[LLM_NELEM(opts)];
	int ch;

	*a = (struct run_args){
		.sp = LLM_SAMPLING_GREEDY,
		.bench = {.pp = {1, {512}}, .tg = {1, {128}}, .depth = {1, {0}}, .reps = 5},
		.max_new = 128,
		.mode = M_NONE,
	};
	argv = run_llama_spellings(&argc, argv);
	getopt_lists(longs, shorts);
	while ((ch = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		const struct opt *o = find_opt(ch);
		if (!o) /* getopt said which option: its usage is 20 lines */
			run_usage_line("see llm-run -h (the usage) or --help");
		given[o - opts] = 1;
		apply(a, o, optarg);
	}
	/* --bench takes its spec as --bench=spec or as the next argument. */
	if (a->mode == M_BENCH && !a->bench_arg && optind + 1 == argc)
		a->bench_arg = argv[optind++];
	if (optind != argc)
		run_usage_msg(llm_xasprintf("unexpected argument '%s'", argv[optind]));
	if (a->mode == M_BENCH)
		bench_args(a);
	else
		gen_args(a);
	check_modes(a, given);
	if ((a->prompt != NULL) + (a->prompt_file != NULL) + (a->tokens_arg != NULL) > 1)
		run_usage_msg("give one of -i, -f, -p, --tokens, --bench, --tokenize, --detokenize and --render");
	if (a->bench_arg)
		parse_bench(a->bench_arg, &a->bench);
	if (a->mode == M_BENCH && bench_list_max(&a->bench.pp) == 0 && bench_list_max(&a->bench.tg) == 0 &&
	    a->bench.npg == 0) {
		/* one line: an empty table would say nothing */
		run_usage_line("--bench: nothing to measure: every prompt (pp, -p) and generation (tg, -n) count is 0");
	}
	if (a->plain_input && a->tokens_arg)
		run_usage_msg("--no-special-in-input goes with text, not --tokens");
	if (a->ppl.base && a->ppl.save_base)
		run_usage_msg("give one of --kl-divergence and --kl-divergence-base");
}
