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
 * characters (llm_token_piece through lib/stream.c); time to first token
 * and the prefill and decode rates go to stderr, or everything to stdout
 * as one JSON object with --json.
 *
 * -i chats: each line of stdin is a user message; llm_seq_chat renders
 * the conversation with the model's chat template and gives the tokens
 * the sequence lacks.  Modules in src/run/: --bench measures prefill and
 * decode rates on random tokens (bench.c); --perplexity measures a text's
 * perplexity (and, against a base run, the KL divergence) as
 * llama-perplexity does (perplexity.c, lib/ppl.c).  --tokenize,
 * --detokenize and --render run no model: they expose the tokenizer
 * (lib/toklines.c) and the templates (lib/chat.c) to scripts and golden
 * tests, and --verify reads the weights against weights.json.  The last
 * step of the pipeline: llm-import, llm-pack-weights, llm-lower,
 * llm-link, llm-run. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/bundle.h"
#include "../lib/chat.h"
#include "../lib/chatsrc.h"
#include "../lib/json.h"
#include "../lib/stream.h"
#include "../lib/tokenizer.h"
#include "../lib/toklines.h"
#include "../lib/util.h"
#include "../lib/weights.h"
#include "run/run.h"

static const char usage_text[] =
    "usage: llm-run [-ev] [--json] [--logits file] [-n count] [-c n] [-t threads] [--seed n]\n"
    "               [--temp t] [--top-k k] [--top-p p] [--min-p p] [--repeat-penalty r]\n"
    "               [--repeat-last-n n] [--stop text] [--tokenizer path]\n"
    "               [--chat-template name] [--system text] [--no-special-in-input]\n"
    "               [--no-display-prompt] -m model\n"
    "               -i | -f file | -p text | --tokens ids\n"
    "       llm-run [-v] [--json] [-t threads] [--seed n] [-p counts] [-n counts] [-d counts]\n"
    "               [-r n] -m model --bench [spec]\n"
    "       llm-run [-v] [--json] [-t threads] [--ppl-context n] [--chunks n]\n"
    "               [--kl-divergence-base file | --kl-divergence file] -m model --perplexity file\n"
    "       llm-run -m model | --tokenizer path --tokenize [--add-special] [--raw]\n"
    "               [--no-special-in-input]\n"
    "       llm-run -m model | --tokenizer path --detokenize [--skip-special]\n"
    "       llm-run [-m model | --tokenizer path] [--chat-template name] --render file\n"
    "               [--no-gen-prompt]\n"
    "       llm-run -m model --verify\n";

static const char help_text[] =
    "  -m model             the bundle (model.llm) or build directory\n"
    "  -p text, -f file     the prompt (file - : standard input), echoed on standard output\n"
    "                       before the text it is continued with\n"
    "  --no-display-prompt  print only the generated text\n"
    "  --tokens ids         the prompt as token ids, e.g. 1,2,3\n"
    "  -i, --chat           chat: one user message a line of standard input\n"
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
    "  --chat-template name deepseek-r1, qwen2, qwen3, llama3 or llama2 (default: the model's)\n"
    "  --tokenizer path     tokenizer.json, a bundle or a directory (default: the model's)\n"
    "  --bench [spec]       prefill and decode rates like llama-bench: with it, -p, -n and -d are\n"
    "                       lists of prefill, decode and depth counts (default 512, 128, 0), -r\n"
    "                       the runs (default 5); or spec pp=n,tg=n,depth=n,reps=n\n"
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

/* Ctrl-C: generation stops after the current step. */
static volatile sig_atomic_t interrupted;

static void
on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* No SA_RESTART: a read of stdin waiting for a chat line returns EINTR. */
static void
catch_sigint(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}

/* "1,2,3" -> ids. */
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

/* The tokenizer and chat template of path (--tokenizer, or the model
 * for --render and the text modes), or of the opened bundle b; a warning
 * printed, an error fatal. */
static void
load_chatsrc(struct llm_chatsrc *s, const char *path, const struct llm_bundle *b)
{
	int rc = b ? llm_chatsrc_bundle(s, b) : llm_chatsrc_path(s, path);
	if (s->warning)
		llm_warn("%s", s->warning);
	if (rc < 0)
		llm_fatal("%s", llm_errmsg());
}

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
	int echo_end; /* the last byte of the prompt printed, or -1 */
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

static void
write_logits(struct gen *g, const struct llm_seq *s)
{
	size_t v = (size_t)llm_vocab_size(g->m);
	if (g->logits && fwrite(llm_seq_logits(s), sizeof(float), v, g->logits->fp) != v)
		llm_fatal("%s: write error:", g->logits->path);
}

/* Print released text (unless --json). */
static void
emit(const struct gen *g, struct llm_buf *out)
{
	if (!g->json && out->len) {
		run_write(out->p, out->len);
		if (fflush(stdout) != 0)
			llm_fatal("stdout: write error:");
	}
	out->len = 0;
}

/* The bytes token id adds to the reply (the n-th token of it, after a
 * context of pos tokens): its piece, without the space SentencePiece
 * decoding strips from the first token of a document; its id without a
 * tokenizer. */
static void
piece_of(const struct gen *g, int64_t id, size_t n, int64_t pos, struct llm_buf *out)
{
	char *p;
	size_t len;
	out->len = 0;
	if (!g->tok) {
		llm_buf_printf(out, "%s%" PRId64, n > 1 ? " " : "", id);
		return;
	}
	if (llm_token_piece(g->m, id, n == 1 && pos == 1 ? LLM_PIECE_FIRST : 0, &p, &len) != LLM_OK)
		llm_fatal("%s: %s", g->model, llm_errmsg());
	llm_buf_add(out, p, len);
	llm_free(p);
}

/* Generate from the logits of s's last token until a stop; every token
 * fed back joins s (its tokens are the repetition penalty's history).
 * t0 is when the prompt started, for the time to first token. */
static void
generate(struct gen *g, struct llm_seq *s, double t0, struct result *r)
{
	struct llm_buf piece = {0}, out = {0};
	int64_t next;

	memset(r, 0, sizeof(*r));
	llm_stream_init(&r->stream, g->stop, g->nstop);
	r->stop = "length";
	r->t_first = llm_now() - t0;
	if (g->max_new > 0) {
		if (llm_seq_sample(s, &g->sp, &next) != LLM_OK)
			llm_fatal("%s: %s", g->model, llm_errmsg());
		r->t_first = llm_now() - t0;
		for (;;) {
			if (interrupted) {
				r->stop = "interrupt";
				break;
			}
			if (llm_token_is_eos(g->m, next)) {
				r->stop = "eos";
				break;
			}
			r->ids = llm_xreallocarray(r->ids, r->n + 1, sizeof(*r->ids));
			r->ids[r->n++] = next;
			piece_of(g, next, r->n, llm_seq_pos(s), &piece);
			int stopped = llm_stream_push(&r->stream, piece.p, piece.len, &out);
			emit(g, &out);
			if (stopped) {
				r->stop = "stop";
				break;
			}
			if ((int64_t)r->n == g->max_new)
				break;
			if (llm_seq_pos(s) >= llm_seq_context(s)) {
				r->stop = "context";
				break;
			}
			double td = llm_now();
			if (llm_seq_eval(s, &next, 1) != LLM_OK)
				llm_fatal("%s: %s", g->model, llm_errmsg());
			r->t_decode += llm_now() - td;
			r->ndecode++;
			write_logits(g, s);
			if (llm_seq_sample(s, &g->sp, &next) != LLM_OK)
				llm_fatal("%s: %s", g->model, llm_errmsg());
		}
	}
	llm_stream_finish(&r->stream, &out);
	emit(g, &out);
	llm_buf_free(&piece);
	llm_buf_free(&out);
}

static void
result_free(struct result *r)
{
	free(r->ids);
	llm_stream_free(&r->stream);
}

static const char *
result_text(const struct result *r, size_t *len)
{
	*len = r->stream.text.len;
	return r->stream.text.p ? r->stream.text.p : "";
}

/* End the printed text (the echoed prompt and what follows) with a
 * newline when it has none. */
static void
end_line(const struct gen *g, const struct result *r)
{
	size_t len;
	const char *t = result_text(r, &len);
	int last = len ? (unsigned char)t[len - 1] : g->echo_end;
	if (!g->json && last >= 0 && last != '\n')
		run_write("\n", 1);
}

/* load < 0: no load time (a chat turn); from_start < 0: no time to
 * first token from the start of the process. */
static json_t *
timings_json(double load, double from_start, const struct result *r, int64_t nprefill, double t_prefill)
{
	json_t *tm = json_object();
	if (load >= 0)
		json_object_set_new(tm, "load_ms", json_real(load * 1e3));
	json_object_set_new(tm, "ttft_ms", json_real(r->t_first * 1e3));
	if (from_start >= 0)
		json_object_set_new(tm, "ttft_from_start_ms", json_real(from_start * 1e3));
	json_object_set_new(tm, "prefill_tokens", json_integer(nprefill));
	json_object_set_new(tm, "prefill_ms", json_real(t_prefill * 1e3));
	json_object_set_new(tm, "prefill_tps", json_real(run_rate((double)nprefill, t_prefill)));
	json_object_set_new(tm, "decode_tokens", json_integer(r->ndecode));
	json_object_set_new(tm, "decode_ms", json_real(r->t_decode * 1e3));
	json_object_set_new(tm, "decode_tps", json_real(run_rate((double)r->ndecode, r->t_decode)));
	json_object_set_new(tm, "rss_kb", json_integer(run_rss_kb()));
	return tm;
}

static void
print_rates(double t_first, int64_t nprefill, double t_prefill, int64_t ndecode, double t_decode)
{
	fprintf(stderr, "%s: time to first token %.2f ms\n", llm_prog, t_first * 1e3);
	fprintf(stderr, "%s: prefill %" PRId64 " tokens in %.2f ms, %.2f t/s\n", llm_prog, nprefill, t_prefill * 1e3,
	    run_rate((double)nprefill, t_prefill));
	fprintf(stderr, "%s: decode %" PRId64 " tokens in %.2f ms, %.2f t/s\n", llm_prog, ndecode, t_decode * 1e3,
	    run_rate((double)ndecode, t_decode));
}

/* -f, -p or --tokens: one generation on s. */
static void
run_once(struct gen *g, struct llm_seq *s, double t_load, int64_t *ids, size_t nids)
{
	struct result r;

	if (nids == 0)
		llm_fatal("%s: empty prompt", g->model);
	for (size_t i = 0; i < nids; i++)
		if (ids[i] < 0 || ids[i] >= llm_vocab_size(g->m))
			llm_fatal("%s: token id %" PRId64 " is out of range [0, %" PRId64 ")", g->model, ids[i],
			    llm_vocab_size(g->m));
	if ((int64_t)nids > llm_seq_context(s))
		llm_fatal("%s: prompt of %zu tokens does not fit the context of %" PRId64 " positions (-c)", g->model,
		    nids, llm_seq_context(s));
	/* as llama-cli: the text, then what continues it */
	if (g->echo) {
		run_write(g->echo, g->echo_len);
		run_finish_stdout();
		if (g->echo_len)
			g->echo_end = (unsigned char)g->echo[g->echo_len - 1];
	}

	catch_sigint();
	double t0 = llm_now();
	if (llm_seq_eval(s, ids, nids) != LLM_OK)
		llm_fatal("%s: %s", g->model, llm_errmsg());
	double t_prefill = llm_now() - t0;
	write_logits(g, s);
	generate(g, s, t0, &r);
	if (g->logits && llm_out_commit(g->logits) < 0)
		llm_fatal("%s", llm_errmsg());

	if (g->json) {
		size_t len;
		const char *text = result_text(&r, &len);
		json_t *o = json_object();
		json_object_set_new(o, "model", json_string(g->model));
		json_object_set_new(o, "prompt_tokens", llm_json_i64_array(ids, nids));
		json_object_set_new(o, "generated_tokens", llm_json_i64_array(r.ids, r.n));
		json_object_set_new(o, "text", json_stringn(text, len));
		json_object_set_new(o, "stop", json_string(r.stop));
		json_object_set_new(o, "timings",
		    timings_json(t_load, t0 + r.t_first - t_start, &r, (int64_t)nids, t_prefill));
		run_print_json(o);
	} else {
		end_line(g, &r);
		run_finish_stdout();
		print_rates(r.t_first, (int64_t)nids, t_prefill, r.ndecode, r.t_decode);
	}
	run_finish_stdout();
	result_free(&r);
}

/* The chat. */
struct chat {
	struct gen *g;
	struct llm_seq *s;
	struct llm_message *msgs; /* the conversation (role and content owned) */
	size_t n, cap;
	size_t nsystem;  /* leading system messages, kept on /reset */
	int64_t reserve; /* positions kept free for the reply */
	int turns;
	int64_t prefill_tokens, decode_tokens;
	double prefill_s, decode_s;
};

static void
chat_add(struct chat *c, const char *role, const char *content, size_t len)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->msgs = llm_xreallocarray(c->msgs, c->cap, sizeof(*c->msgs));
	}
	c->msgs[c->n].role = llm_xstrdup(role);
	c->msgs[c->n].content = llm_xstrndup(content, len);
	c->n++;
}

/* Remove messages [i, i + k). */
static void
chat_remove(struct chat *c, size_t i, size_t k)
{
	for (size_t j = i; j < i + k; j++) {
		free((char *)c->msgs[j].role);
		free((char *)c->msgs[j].content);
	}
	memmove(c->msgs + i, c->msgs + i + k, (c->n - i - k) * sizeof(*c->msgs));
	c->n -= k;
}

/* The totals of the chat so far, on standard error. */
static void
chat_stats(const struct chat *c)
{
	fprintf(stderr,
	    "%s: chat: %d turn%s, prefill %" PRId64 " tokens in %.2f ms, %.2f t/s, "
	    "decode %" PRId64 " tokens in %.2f ms, %.2f t/s",
	    llm_prog, c->turns, c->turns == 1 ? "" : "s", c->prefill_tokens, c->prefill_s * 1e3,
	    run_rate((double)c->prefill_tokens, c->prefill_s), c->decode_tokens, c->decode_s * 1e3,
	    run_rate((double)c->decode_tokens, c->decode_s));
}

/* A line that is one of the chat's commands: 1 when it was one (done),
 * -1 for /exit and /quit, 0 for a message.  Their output goes to standard
 * error, so that standard output stays the replies (or --json's lines). */
static int
chat_command(struct chat *c, const char *line, size_t len)
{
	static const char *const cmds[] = {"/help", "/exit", "/quit", "/reset", "/stats"};
	size_t i = 0;
	while (i < LLM_NELEM(cmds) && (strlen(cmds[i]) != len || memcmp(line, cmds[i], len) != 0))
		i++;
	switch (i) {
	case 0:
		fprintf(stderr,
		    "/help    this list\n/exit, /quit  end the chat (as the end of the input does)\n"
		    "/reset   forget the conversation (not the system prompt) and the cache\n"
		    "/stats   the tokens and rates so far, and how much of the context is used\n"
		    "any other line is a message (a line ending in \\ goes on)\n");
		return 1;
	case 1:
	case 2:
		return -1;
	case 3:
		chat_remove(c, c->nsystem, c->n - c->nsystem);
		if (llm_seq_rewind(c->s, 0) != LLM_OK)
			llm_fatal("%s: %s", c->g->model, llm_errmsg());
		return 1;
	case 4:
		chat_stats(c);
		fprintf(stderr, ", context %" PRId64 " of %" PRId64 " positions\n", llm_seq_pos(c->s),
		    llm_seq_context(c->s));
		return 1;
	}
	return 0;
}

/* Drop the oldest exchange after the system prompt: its first message up
 * to the next user message.  0 when only the new message is left. */
static size_t
drop_oldest(struct chat *c)
{
	size_t s = c->nsystem, u;
	if (s + 1 >= c->n)
		return 0;
	for (u = s + 1; u < c->n && strcmp(c->msgs[u].role, "user") != 0; u++)
		;
	if (u >= c->n)
		return 0;
	chat_remove(c, s, u - s);
	return u - s;
}

static void
chat_turn(struct chat *c, const char *line, size_t len)
{
	struct gen *g = c->g;
	struct llm_seq *s = c->s;
	int64_t *ids = NULL, keep, ctx = llm_seq_context(s);
	size_t nids = 0, dropped = 0;
	int flags = LLM_CHAT_GENERATION_PROMPT | (g->plain_input ? 0 : LLM_CHAT_SPECIAL_IN_CONTENT);

	chat_add(c, "user", line, len);
	for (;;) {
		/* what the sequence keeps of the rendered conversation (at least
		 * one token is new, for its logits), and the rest */
		if (llm_seq_chat(s, c->msgs, c->n, flags, &keep, &ids, &nids) != LLM_OK) {
			llm_warn("%s: %s", g->model, llm_errmsg());
			chat_remove(c, c->n - 1, 1);
			return;
		}
		/* Once something must go, the prompt goes down to half the
		 * context, so that the next turns fit again without another
		 * re-prefill. */
		int64_t prompt = keep + (int64_t)nids;
		int fits = nids > 0 && prompt + c->reserve <= ctx;
		if (fits && (!dropped || prompt <= ctx / 2))
			break;
		size_t d = drop_oldest(c);
		if (d == 0 && fits)
			break;
		if (d == 0) {
			llm_warn("%s: the message does not fit in the context: %" PRId64 " prompt tokens and %" PRId64
				 " for the reply, a context of %" PRId64 " positions (-c)",
			    g->model, prompt, c->reserve, ctx);
			chat_remove(c, c->n - 1, 1);
			llm_free(ids);
			return;
		}
		dropped += d;
		llm_free(ids);
	}

	/* Rewind to what is kept and send the rest. */
	double t0 = llm_now();
	if (llm_seq_rewind(s, keep) != LLM_OK || llm_seq_eval(s, ids, nids) != LLM_OK)
		llm_fatal("%s: %s", g->model, llm_errmsg());
	double t_prefill = llm_now() - t0;

	struct result r;
	generate(g, s, t0, &r);
	/* A Ctrl-C that stopped the reply does not end the chat. */
	interrupted = 0;
	size_t rlen;
	const char *reply = result_text(&r, &rlen);
	chat_add(c, "assistant", reply, rlen);
	c->turns++;
	c->prefill_tokens += (int64_t)nids;
	c->prefill_s += t_prefill;
	c->decode_tokens += r.ndecode;
	c->decode_s += r.t_decode;
	if (g->json) {
		json_t *o = json_object();
		json_object_set_new(o, "turn", json_integer(c->turns));
		json_object_set_new(o, "reused_tokens", json_integer((json_int_t)keep));
		json_object_set_new(o, "dropped_messages", json_integer((json_int_t)dropped));
		json_object_set_new(o, "prompt_tokens", llm_json_i64_array(ids, nids));
		json_object_set_new(o, "generated_tokens", llm_json_i64_array(r.ids, r.n));
		json_object_set_new(o, "text", json_stringn(reply, rlen));
		json_object_set_new(o, "stop", json_string(r.stop));
		json_object_set_new(o, "context_tokens", json_integer(llm_seq_pos(s)));
		json_object_set_new(o, "timings", timings_json(-1, -1, &r, (int64_t)nids, t_prefill));
		run_print_json(o);
	} else {
		if (!rlen || reply[rlen - 1] != '\n')
			run_write("\n", 1);
		if (fflush(stdout) != 0)
			llm_fatal("stdout: write error:");
	}
	if (g->verbose)
		fprintf(stderr,
		    "%s: turn %d: reused %" PRId64 " tokens, dropped %zu messages, prefill %zu tokens in %.2f ms, "
		    "decode %" PRId64 " tokens in %.2f ms, stop %s, context %" PRId64 "\n",
		    llm_prog, c->turns, keep, dropped, nids, t_prefill * 1e3, r.ndecode, r.t_decode * 1e3, r.stop,
		    llm_seq_pos(s));
	result_free(&r);
	llm_free(ids);
}

/* Standard input of a chat, read without stdio so that Ctrl-C is never
 * lost: SIGINT is blocked except inside ppoll, which returns at once when
 * it comes. */
static struct {
	char buf[65536];
	size_t start, end;
	int eof;
} in;

/* Append the next line of stdin (without its newline) to line: 1, or 0 at
 * the end of the input, -1 on Ctrl-C. */
static int
read_line(struct llm_buf *line)
{
	sigset_t block, old;
	size_t len0 = line->len;
	int rc;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (;;) {
		char *p = in.buf + in.start, *nl = memchr(p, '\n', in.end - in.start);
		if (nl) {
			llm_buf_add(line, p, (size_t)(nl - p));
			in.start += (size_t)(nl - p) + 1;
			rc = 1;
			break;
		}
		llm_buf_add(line, p, in.end - in.start);
		in.start = in.end = 0;
		if (in.eof) {
			rc = line->len > len0;
			break;
		}
		if (interrupted) {
			rc = -1;
			break;
		}
		struct pollfd pf = {0, POLLIN, 0};
		if (ppoll(&pf, 1, NULL, &old) < 0) {
			if (errno == EINTR)
				continue;
			llm_fatal("stdin: poll:");
		}
		ssize_t n = read(0, in.buf, sizeof(in.buf));
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			llm_fatal("stdin: read error:");
		if (n == 0)
			in.eof = 1;
		in.end = n > 0 ? (size_t)n : 0;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/* One message: a line, continued on the next one while it ends with a
 * backslash.  -1 at the end of the input or on Ctrl-C. */
static int
read_message(struct llm_buf *msg)
{
	msg->len = 0;
	for (;;) {
		size_t start = msg->len;
		int rc = read_line(msg);
		if (rc < 0 || (rc == 0 && msg->len == 0))
			return -1;
		if (rc == 0)
			return 0;
		if (msg->len > start && msg->p[msg->len - 1] == '\\') {
			msg->p[msg->len - 1] = '\n';
			continue;
		}
		return 0;
	}
}

static void
run_chat(struct gen *g, struct llm_seq *s, const char *system)
{
	struct chat c = {0};
	struct llm_buf msg = {0}, clean = {0};
	int tty = isatty(0) && !g->json;

	c.g = g;
	c.s = s;
	c.reserve = g->max_new < llm_seq_context(s) / 2 ? g->max_new : llm_seq_context(s) / 2;
	if (system) {
		chat_add(&c, "system", system, strlen(system));
		c.nsystem = 1;
	}
	catch_sigint();
	for (;;) {
		if (tty) {
			run_write("> ", 2);
			fflush(stdout);
		}
		if (read_message(&msg) < 0)
			break;
		int cmd = chat_command(&c, msg.p, msg.len);
		if (cmd < 0)
			break;
		if (cmd > 0 || msg.len == 0)
			continue;
		if (memchr(msg.p, '\0', msg.len)) {
			llm_warn("<stdin>: a message with a NUL byte: not sent");
			continue;
		}
		/* Templates work on text: invalid UTF-8 becomes U+FFFD. */
		clean.len = 0;
		llm_utf8_lossy(msg.p, msg.len, &clean);
		chat_turn(&c, clean.p, clean.len);
	}
	if (tty)
		run_write("\n", 1);
	run_finish_stdout();
	if (!g->json) {
		chat_stats(&c);
		fputc('\n', stderr);
	}
	llm_buf_free(&msg);
	llm_buf_free(&clean);
	chat_remove(&c, 0, c.n);
	free(c.msgs);
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

/* -e: the escapes llama-cli processes in a prompt: \n \r \t \' \" \\. */
static void
unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (*s != '\\' || !s[1]) {
			*o++ = *s;
			continue;
		}
		/* one escape a line */
		/* clang-format off */
		switch (*++s) {
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case '\'': case '"': case '\\': *o++ = *s; break;
		default: *o++ = '\\'; *o++ = *s; break;
		}
		/* clang-format on */
	}
	*o = 0;
}

enum mode { M_NONE, M_RUN, M_CHAT, M_BENCH, M_PPL, M_TOKENIZE, M_DETOKENIZE, M_RENDER, M_VERIFY };

static void
set_mode(enum mode *m, enum mode to)
{
	if (*m != M_NONE && *m != to)
		usage_msg("give one of -i, -f, -p, --tokens, --bench, --perplexity, --tokenize, --detokenize, "
			  "--render and --verify");
	*m = to;
}

/* The command line. */
struct args {
	const char *model, *prompt, *prompt_file, *tokens_arg;
	const char *logits_path, *tokenizer_path, *template_name, *system;
	const char *render_path, *bench_arg;
	const char *n_arg, *d_arg, *r_arg; /* -n, -d, -r as given */
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
};

/* the options, packed */
/* clang-format off */
enum {
	OPT_JSON = 256, OPT_LOGITS, OPT_TOKENS, OPT_SEED, OPT_TEMP, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P,
	OPT_REPEAT_PENALTY, OPT_REPEAT_LAST_N, OPT_STOP, OPT_TOKENIZER, OPT_CHAT_TEMPLATE, OPT_SYSTEM,
	OPT_BENCH, OPT_TOKENIZE, OPT_DETOKENIZE, OPT_ADD_SPECIAL, OPT_RAW, OPT_SKIP_SPECIAL, OPT_RENDER,
	OPT_NO_GEN_PROMPT, OPT_PERPLEXITY, OPT_PPL_CONTEXT, OPT_CHUNKS, OPT_KLD_BASE, OPT_KLD, OPT_ESCAPE,
	OPT_NO_ESCAPE, OPT_NO_SPECIAL_IN_INPUT, OPT_VERIFY, OPT_NO_DISPLAY_PROMPT, OPT_CACHE_TYPE_K,
	OPT_CACHE_TYPE_V,
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
	{"file", required_argument, NULL, 'f'},
	{"model", required_argument, NULL, 'm'},
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
	{"ppl-context", required_argument, NULL, OPT_PPL_CONTEXT},
	{"raw", no_argument, NULL, OPT_RAW},
	{"render", required_argument, NULL, OPT_RENDER},
	{"repeat-last-n", required_argument, NULL, OPT_REPEAT_LAST_N},
	{"repeat-penalty", required_argument, NULL, OPT_REPEAT_PENALTY},
	{"seed", required_argument, NULL, OPT_SEED},
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
 * would read as clustered short options ("-no-cnv" as -n o-cnv): those
 * that mean something here become our options, those that do not are
 * refused by name in one line.  Returns the new argv (argc in *argc);
 * "--" ends the options. */
static char **
llama_cli_spellings(int *argc, char **argv)
{
	static const struct {
		const char *name;
		int arg;         /* takes a value */
		const char *to;  /* our option, "" to drop, NULL to refuse */
		const char *why; /* for a refusal; NULL: the line before's */
	} sp[] = {
		{"-cnv", 0, "--conversation", NULL},
		{"-sys", 1, "--system-prompt", NULL},
		{"-no-cnv", 0, "", NULL}, /* plain completion is the default here */
		{"-ctk", 1, "--cache-type-k", NULL},
		{"-ctv", 1, "--cache-type-v", NULL},
		{"-fa", 0, NULL,
			"flash attention is not a switch here: the attention is compiled into the model "
			"(share/doc/llm/ir.txt)"},
		{"--flash-attn", 0, NULL, NULL},
		{"-ngl", 1, NULL, "there are no GPU layers: llm-run runs the model on the CPU"},
		{"--n-gpu-layers", 1, NULL, NULL},
		{"--gpu-layers", 1, NULL, NULL},
		{"-hf", 1, NULL,
			"nothing is downloaded: fetch the GGUF file or the checkpoint yourself, then -m FILE "
			"(or compile it with pipelines/model.mk)"},
		{"--hf-repo", 1, NULL, NULL},
		{"-st", 0, NULL, "single-turn conversations are not supported yet: -i with one line of input"},
		{"-mli", 0, NULL, "multi-line input is not supported yet: -i reads a line a message"},
		{"--reverse-prompt", 1, "--stop", NULL},
	};
	char **out = llm_xcalloc((size_t)*argc + 1, sizeof(*out));
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
		if (!sp[j].to) {
			size_t k = j;
			while (!sp[k].why)
				k--;
			usage_line(llm_xasprintf("%s: %s", sp[j].name, sp[k].why));
		}
		if (strchr(argv[i], '=')) {
			/* --name=value: ours takes the value the same way */
			out[n++] = *sp[j].to ? llm_xasprintf("%s%s", sp[j].to, strchr(argv[i], '=')) : argv[i];
			continue;
		}
		if (*sp[j].to)
			out[n++] = (char *)sp[j].to;
		if (sp[j].arg && i + 1 < *argc)
			out[n++] = argv[++i];
	}
	*argc = n;
	return out;
}

/* Reads the options into a and checks that they go together. */
static void
parse_args(int argc, char **argv, struct args *a)
{
	int ch;

	while ((ch = getopt_long(argc, argv, "c:d:ef:him:n:p:r:s:t:v", longopts, NULL)) != -1) {
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
		case 't':
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
			if (llm_chat_find(optarg) < 0)
				usage_msg(llm_xasprintf("--chat-template: unknown template '%s' (deepseek-r1, qwen2, "
							"qwen3, llama3, llama2)",
				    optarg));
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
		case OPT_VERIFY:
			set_mode(&a->mode, M_VERIFY);
			break;
		case OPT_REPEAT_LAST_N:
			a->sp.repeat_last_n = parse_int("--repeat-last-n", optarg, -1, INT64_MAX);
			break;
		case OPT_REPEAT_PENALTY:
			a->sp.repeat_penalty = parse_num("--repeat-penalty", optarg, 1e-6, 1e6);
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
		default:
			usage();
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
		a->prompt = NULL;
	} else {
		if (a->d_arg)
			usage_msg("-d goes with --bench");
		if (a->r_arg) {
			/* llama-cli's reverse prompt: a stop string here */
			if (!*a->r_arg)
				usage_line("-r: empty string");
			a->stop = llm_xreallocarray(a->stop, a->nstop + 1, sizeof(*a->stop));
			a->stop[a->nstop++] = (char *)a->r_arg;
		}
		if (a->prompt)
			set_mode(&a->mode, M_RUN);
		if (a->n_arg) {
			/* -1, as llama-cli: until an end of sequence or a full context */
			a->max_new = parse_int("-n", a->n_arg, -1, INT64_MAX);
			if (a->max_new < 0)
				a->max_new = INT64_MAX;
		}
	}
	if ((a->prompt != NULL) + (a->prompt_file != NULL) + (a->tokens_arg != NULL) > 1)
		usage_msg("give one of -i, -f, -p, --tokens, --bench, --tokenize, --detokenize and --render");
	if (a->bench_arg)
		parse_bench(a->bench_arg, &a->bench);
	if (a->mode == M_BENCH && bench_list_max(&a->bench.pp) == 0 && bench_list_max(&a->bench.tg) == 0) {
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
}

/* --verify: every tensor of weights.bin against weights.json, and both
 * against model.json's plan; no model library. */
static void
run_verify(const char *model)
{
	struct llm_bundle b;
	struct llm_bundle_map wm;
	struct llm_weights_manifest j;
	struct llm_model m;
	const struct llm_member *jm, *mm, *wmb;
	char *text;
	size_t len;
	json_t *root;

	if (llm_bundle_open(&b, model) < 0 || !(mm = llm_bundle_get(&b, "model.json")) ||
	    llm_bundle_read(&b, mm, &text, &len) < 0)
		llm_fatal("%s", llm_errmsg());
	if (!(root = llm_json_loadb(text, len, mm->label)) || llm_model_parse(&m, root, mm->label) < 0)
		llm_fatal("%s", llm_errmsg());
	free(text);
	if (!(jm = llm_bundle_get(&b, LLM_WEIGHTS_JSON)) || llm_bundle_read(&b, jm, &text, &len) < 0 ||
	    llm_weights_manifest_loadb(&j, text, len, jm->label) < 0)
		llm_fatal("%s", llm_errmsg());
	free(text);
	if (j.fingerprint != m.fingerprint || strcmp(j.file, m.weights_file) != 0)
		llm_fatal("%s: not the weights of %s's plan", jm->label, mm->label);
	if (!(wmb = llm_bundle_get(&b, m.weights_file)) || llm_bundle_map(&b, wmb, &wm) < 0 ||
	    llm_weights_verify_map(wm.p, wmb->size, wmb->label, &j) < 0)
		llm_fatal("%s", llm_errmsg());
	printf("%s: %zu tensors, %" PRIu64 " bytes, as %s records\n", wmb->label, j.ntensors, wmb->size, jm->label);
	run_finish_stdout();
	llm_bundle_unmap(&wm);
	llm_weights_manifest_free(&j);
	llm_model_free(&m);
	llm_bundle_close(&b);
}

/* --tokenize, --detokenize and --render: no model library. */
static void
run_text_mode(const struct args *a)
{
	struct llm_chatsrc src = LLM_CHATSRC_INIT;
	struct llm_buf out = {0};
	size_t len;
	if (a->model && a->tokenizer_path)
		usage_msg("give one of -m and --tokenizer");
	if (a->mode != M_RENDER && !a->model && !a->tokenizer_path)
		usage_msg("no tokenizer (-m model or --tokenizer path)");
	if (a->tokenizer_path || a->model)
		load_chatsrc(&src, a->tokenizer_path ? a->tokenizer_path : a->model, NULL);
	if (a->mode != M_RENDER && !src.tok)
		llm_fatal("%s: no tokenizer.json", a->tokenizer_path ? a->tokenizer_path : a->model);
	if (a->mode == M_RENDER) {
		struct llm_chat conv = {0};
		int tmpl = a->template_name ? llm_chat_find(a->template_name) : src.tmpl;
		const char *label = strcmp(a->render_path, "-") == 0 ? "<stdin>" : a->render_path;
		if (tmpl < 0)
			llm_fatal("%s: no chat template recognised: give --chat-template",
			    a->tokenizer_path ? a->tokenizer_path :
				a->model      ? a->model :
						label);
		char *text = run_read_input(a->render_path, &len);
		if (llm_chat_parse(&conv, text, len, label) < 0)
			llm_fatal("%s", llm_errmsg());
		if (llm_chat_render(tmpl, &conv, !a->no_gen, llm_chatsrc_bos(&src, tmpl), llm_chatsrc_eos(&src, tmpl),
			&out, NULL) < 0)
			llm_fatal("%s: %s", label, llm_errmsg());
		free(text);
		llm_chat_free(&conv);
	} else {
		char *text = run_read_input("-", &len);
		int rc = a->mode == M_TOKENIZE ?
		    llm_tokenizer_tokenize_lines(src.tok, text, len, "<stdin>",
			(a->add_special ? LLM_TOK_ADD_SPECIAL : 0) | (a->raw ? LLM_TOK_RAW : 0) |
			    (a->plain_input ? LLM_TOK_PLAIN : 0),
			&out) :
		    llm_tokenizer_detokenize_lines(src.tok, text, len, "<stdin>",
			(a->skip_special ? LLM_DETOK_SKIP_SPECIAL : 0) | LLM_DETOK_STRICT, &out);
		if (rc < 0)
			llm_fatal("%s", llm_errmsg());
		free(text);
	}
	run_write(out.p, out.len);
	run_finish_stdout();
	llm_buf_free(&out);
	llm_chatsrc_free(&src);
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
	double t = llm_now();
	if (llm_open(a->model, &o, &m) != LLM_OK)
		llm_fatal("%s", llm_errmsg());
	if (llm_model_warning(m))
		llm_warn("%s", llm_model_warning(m));
	*ctx = choose_context(a, llm_context_limit(m), llm_kv_type(m));
	*t_load = llm_now() - t;
	if (a->verbose)
		fprintf(stderr,
		    "%s: %s: %s, vocab %" PRId64 ", max_context %" PRId64 ", %" PRIu64
		    " bytes of weights mapped in place, code for %s, loaded in %.1f ms\n",
		    llm_prog, a->model, llm_model_desc(m), llm_vocab_size(m), llm_context_limit(m), llm_model_size(m),
		    llm_target_cpu(m) ? llm_target_cpu(m) : "this CPU", *t_load * 1e3);
	return m;
}

/* -p, -f, --tokens and -i: generation on a sequence of ctx positions. */
static void
run_generate(const struct args *a, struct llm *m, int64_t ctx, double t_load)
{
	struct gen g = {0};
	struct llm_seq *s;
	int64_t *probe = NULL;
	size_t nprobe;

	g.m = m;
	g.model = a->model;
	g.tok = llm_tokenize(m, "", 0, 0, &probe, &nprobe) != LLM_ERR_UNSUPPORTED;
	llm_free(probe);
	g.sp = a->sp;
	g.max_new = a->max_new;
	g.stop = a->stop;
	g.nstop = a->nstop;
	g.json = a->json;
	g.echo_end = -1;
	g.verbose = a->verbose;
	g.plain_input = a->plain_input;
	if (llm_seq_new(m, ctx, &s) != LLM_OK)
		llm_fatal("%s: %s", a->model, llm_errmsg());
	if (a->verbose)
		fprintf(stderr, "%s: %s: context %" PRId64 " of max_context %" PRId64 " positions\n", llm_prog,
		    a->model, llm_seq_context(s), llm_context_limit(m));

	if (a->mode == M_CHAT) {
		if (!g.tok)
			llm_fatal("%s: no tokenizer.json: a chat needs the tokenizer", a->model);
		if (!llm_chat_template_name(m))
			llm_fatal("%s: no chat template recognised: give --chat-template", a->model);
		run_chat(&g, s, a->system);
	} else {
		int64_t *ids = NULL, *text_ids;
		size_t nids = 0, ntext, len = 0;
		char *ptext = NULL;
		struct llm_out lo;
		if (a->tokens_arg)
			parse_ids(a->tokens_arg, &ids, &nids);
		else {
			ptext = a->prompt ? llm_xstrdup(a->prompt) : run_read_input(a->prompt_file, &len);
			if (a->prompt && a->escape)
				unescape(ptext);
			if (a->prompt)
				len = strlen(ptext);
			if (!g.tok)
				llm_fatal("%s: no tokenizer.json: give the prompt as --tokens", a->model);
			if (llm_tokenize(m, ptext, len, a->plain_input ? LLM_TOKENIZE_PLAIN : 0, &text_ids, &ntext) !=
			    LLM_OK)
				llm_fatal("%s: %s", a->prompt ? "-p" : a->prompt_file, llm_errmsg());
			ids = llm_xreallocarray(NULL, ntext + 1, sizeof(*ids));
			if (llm_token_add_bos(m))
				ids[nids++] = llm_token_bos(m);
			memcpy(ids + nids, text_ids, ntext * sizeof(*ids));
			nids += ntext;
			llm_free(text_ids);
		}
		if (a->logits_path) {
			if (llm_out_open(&lo, a->logits_path) < 0)
				llm_fatal("%s", llm_errmsg());
			g.logits = &lo;
		}
		if (ptext && !a->json && !a->no_echo)
			g.echo = ptext, g.echo_len = len;
		run_once(&g, s, t_load, ids, nids);
		free(ptext);
		free(ids);
	}
	llm_seq_free(&s);
}

int
main(int argc, char **argv)
{
	struct args a = {
		.sp = LLM_SAMPLING_GREEDY,
		.bench = {{1, {512}}, {1, {128}}, {1, {0}}, 5},
		.max_new = 128,
		.mode = M_NONE,
	};

	t_start = llm_now();
	argv[0] = (char *)llm_setprog(argv[0]);
	argv = llama_cli_spellings(&argc, argv);
	parse_args(argc, argv, &a);
	if (a.mode == M_TOKENIZE || a.mode == M_DETOKENIZE || a.mode == M_RENDER) {
		run_text_mode(&a);
		return LLM_EXIT_OK;
	}
	if (a.mode == M_VERIFY) {
		if (!a.model)
			usage_msg("--verify needs -m model");
		run_verify(a.model);
		return LLM_EXIT_OK;
	}

	int64_t ctx;
	double t_load;
	struct llm *m = open_model(&a, &ctx, &t_load);
	if (a.mode == M_BENCH)
		run_bench(m, a.model, ctx, &a.bench, (int)a.threads, a.sp.seed, a.json);
	else if (a.mode == M_PPL) {
		a.ppl.json = a.json;
		a.ppl.verbose = a.verbose;
		run_perplexity(m, a.model, ctx, &a.ppl);
	} else
		run_generate(&a, m, ctx, t_load);
	if (llm_close(&m) != LLM_OK)
		llm_fatal("%s: %s", a.model, llm_errmsg());
	free(a.stop);
	return LLM_EXIT_OK;
}
