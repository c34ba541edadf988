/* chat.c: llm-run -i on the public API: each line of stdin is a user
 * message; llm_seq_chat renders the conversation with the model's chat
 * template and gives what the sequence lacks of it; a full context drops
 * the oldest exchanges (the system prompt stays).  A model without a chat
 * template gets llama-cli's interactive mode instead: each line continues
 * the text. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/base/json.h"
#include "../../lib/base/util.h"
#include "run.h"

/* The chat. */
struct chat {
	struct gen *g;
	struct llm_seq *s;
	struct llm_message *msgs; /* the conversation (role and content owned) */
	size_t n, cap;
	size_t nsystem;  /* leading system messages, kept on /reset */
	int64_t reserve; /* positions kept free for the reply */
	int turns;
	int said_dropping; /* the first drop of old exchanges was reported */
	int plain;         /* no chat template: the lines continue a text (plain_turn) */
	int64_t pending;   /* plain: the reply's last token, printed but not evaluated; -1 none */
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

/* Remove messages [i, i + k).  (No messages at all, as -i without a
 * template's /reset: msgs is NULL, which memmove may not be given even
 * for 0 bytes.) */
static void
chat_remove(struct chat *c, size_t i, size_t k)
{
	if (k == 0)
		return;
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
		c->pending = -1;
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

/* The totals, and the turn's line of --json (keep and dropped -1: a plain
 * turn, which has neither) or the reply's last newline. */
static void
report(struct chat *c, const struct result *r, const int64_t *ids, size_t nids, double t_prefill, int64_t keep,
    int64_t dropped)
{
	struct gen *g = c->g;
	size_t rlen;
	const char *reply = result_text(r, &rlen);
	c->turns++;
	c->prefill_tokens += (int64_t)nids;
	c->prefill_s += t_prefill;
	c->decode_tokens += r->ndecode;
	c->decode_s += r->t_decode;
	if (g->json) {
		json_t *o = json_object();
		json_object_set_new(o, "turn", json_integer(c->turns));
		if (keep >= 0) {
			json_object_set_new(o, "reused_tokens", json_integer((json_int_t)keep));
			json_object_set_new(o, "dropped_messages", json_integer((json_int_t)dropped));
		}
		json_object_set_new(o, "prompt_tokens", llm_json_i64_array(ids, nids));
		json_object_set_new(o, "generated_tokens", llm_json_i64_array(r->ids, r->n));
		json_object_set_new(o, "text", json_stringn(reply, rlen));
		json_object_set_new(o, "stop", json_string(r->stop));
		json_object_set_new(o, "context_tokens", json_integer(llm_seq_pos(c->s)));
		json_object_set_new(o, "timings", timings_json(-1, -1, r, (int64_t)nids, t_prefill));
		run_print_json(o);
	} else {
		if (!rlen || reply[rlen - 1] != '\n')
			run_write("\n", 1);
		if (fflush(stdout) != 0)
			llm_fatal("stdout: write error:");
	}
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
		if (!c->said_dropping) {
			/* once a chat: every later turn may drop some more */
			llm_warn("%s: the context is full (%" PRId64 " positions, -c): the oldest exchanges are "
				 "dropped (the system prompt stays)",
			    g->model, ctx);
			c->said_dropping = 1;
		}
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
	run_interrupted = 0;
	size_t rlen;
	const char *reply = result_text(&r, &rlen);
	chat_add(c, "assistant", reply, rlen);
	report(c, &r, ids, nids, t_prefill, keep, (int64_t)dropped);
	if (g->verbose)
		fprintf(stderr,
		    "%s: turn %d: reused %" PRId64 " tokens, dropped %zu messages, prefill %zu tokens in %.2f ms, "
		    "decode %" PRId64 " tokens in %.2f ms, stop %s, context %" PRId64 "\n",
		    llm_prog, c->turns, keep, dropped, nids, t_prefill * 1e3, r.ndecode, r.t_decode * 1e3, r.stop,
		    llm_seq_pos(s));
	result_free(&r);
	llm_free(ids);
}

/* A turn of -i on a model without a chat template, as llama-cli's
 * interactive mode: the line and a newline are appended to the text and
 * continued.  The reply's last token, unless it ends the sequence, is
 * evaluated first, so that the text goes on from all that was printed. */
static void
plain_turn(struct chat *c, const char *line, size_t len)
{
	struct gen *g = c->g;
	struct llm_seq *s = c->s;
	int64_t *ids = NULL, ctx = llm_seq_context(s);
	size_t nids = 0;
	char *text = llm_xmalloc(len + 1);
	memcpy(text, line, len);
	text[len] = '\n';
	int flags = (g->plain_input ? LLM_TOKENIZE_PLAIN : 0) |
	    (llm_seq_pos(s) == 0 && llm_token_add_bos(g->m) ? LLM_TOKENIZE_SPECIAL : 0);
	if (llm_tokenize(g->m, text, len + 1, flags, &ids, &nids) != LLM_OK)
		llm_fatal("%s: %s", g->model, llm_errmsg());
	free(text);
	double t0 = llm_now();
	int64_t need = (c->pending >= 0) + (int64_t)nids;
	if (llm_seq_pos(s) + need + c->reserve > ctx) {
		llm_warn("%s: the context is full (%" PRId64 " positions, -c): the text does not go on (/reset "
			 "starts it again)",
		    g->model, ctx);
		llm_free(ids);
		return;
	}
	if ((c->pending >= 0 && llm_seq_eval(s, &c->pending, 1) != LLM_OK) || llm_seq_eval(s, ids, nids) != LLM_OK)
		llm_fatal("%s: %s", g->model, llm_errmsg());
	double t_prefill = llm_now() - t0;
	struct result r;
	generate(g, s, t0, &r);
	run_interrupted = 0;
	c->pending = r.n && strcmp(r.stop, "eos") != 0 ? r.ids[r.n - 1] : -1;
	report(c, &r, ids, nids, t_prefill, -1, -1);
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
		if (run_interrupted) {
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

/* One message, as llama-cli reads one: a line, continued on the next one
 * while it ends with a backslash (dropped); with multiline (-mli) lines
 * go on until one ends with a slash or a backslash (dropped).  The lines
 * are joined by newlines.  -1 at the end of the input or on Ctrl-C. */
static int
read_message(struct llm_buf *msg, int multiline)
{
	msg->len = 0;
	for (;;) {
		size_t start = msg->len;
		int rc = read_line(msg);
		if (rc < 0 || (rc == 0 && msg->len == 0))
			return -1;
		if (rc == 0)
			return 0;
		char last = msg->len > start ? msg->p[msg->len - 1] : 0;
		int more = multiline;
		if (last == '\\' || (multiline && last == '/')) {
			msg->len--;
			more = last == '\\' && !multiline;
		}
		if (!more)
			return 0;
		llm_buf_add(msg, "\n", 1);
	}
}

/* The chat on s: first (or NULL) is the first message, given; single
 * ends it after one exchange. */
static void
chat_loop(struct gen *g, struct llm_seq *s, const char *system, const char *first, int single)
{
	struct chat c = {0};
	struct llm_buf msg = {0};
	int tty = isatty(0) && !g->json;

	c.g = g;
	c.s = s;
	c.plain = !llm_chat_template_name(g->m);
	c.pending = -1;
	c.reserve = g->max_new < llm_seq_context(s) / 2 ? g->max_new : llm_seq_context(s) / 2;
	if (system) {
		chat_add(&c, "system", system, strlen(system));
		c.nsystem = 1;
	}
	run_catch_sigint();
	if (tty && !single) {
		/* a banner and the keys, on the terminal only */
		const char *desc = llm_model_desc(g->m);
		if (c.plain)
			fprintf(stderr,
			    "%s: %s, no chat template: each line you type is appended to the text, which "
			    "goes on from there.\n",
			    llm_prog, desc);
		else
			fprintf(stderr, "%s: chat with %s (template %s).\n", llm_prog, desc,
			    llm_chat_template_name(g->m));
		fputs(g->multiline ?
			"Enter starts a new line; a line ending with / or \\ sends; Ctrl-C stops a reply; "
			"Ctrl-D, /exit or /quit ends; /help lists the commands.\n" :
			"Enter sends a line (end it with \\ to go on); Ctrl-C stops a reply; Ctrl-D, /exit or "
			"/quit ends; /help lists the commands.\n",
		    stderr);
	}
	for (int turn = 0;; turn++) {
		if (single && turn == 1)
			break;
		if (first && turn == 0) {
			msg.len = 0;
			llm_buf_add(&msg, first, strlen(first));
		} else {
			if (tty) {
				run_write("> ", 2);
				fflush(stdout);
			}
			if (read_message(&msg, g->multiline) < 0)
				break;
		}
		int cmd = chat_command(&c, msg.p, msg.len);
		if (cmd < 0)
			break;
		if (cmd > 0 || msg.len == 0)
			continue;
		/* as -p and -f are checked; a chat goes on without the message */
		if (run_text_check(first && turn == 0 ? "-p" : "<stdin>", msg.p, msg.len) < 0) {
			llm_warn("%s: the message is not sent", llm_errmsg());
			continue;
		}
		if (c.plain)
			plain_turn(&c, msg.p, msg.len);
		else
			chat_turn(&c, msg.p, msg.len);
	}
	if (tty)
		run_write("\n", 1);
	run_finish_stdout();
	if (!g->json) {
		chat_stats(&c);
		fputc('\n', stderr);
	}
	llm_buf_free(&msg);
	chat_remove(&c, 0, c.n);
	free(c.msgs);
}

/* -i: the chat on a sequence of ctx positions. */
void
run_chat(struct llm *m, const char *model, int64_t ctx, double t_load, const struct gen_opts *a)
{
	struct gen g;
	struct llm_seq *s = run_gen_start(&g, m, model, ctx, t_load, a);

	if (!g.tok)
		llm_fatal("%s: no tokenizer.json: a chat needs the tokenizer", model);
	if (!llm_chat_template_name(m) && a->system)
		llm_fatal("%s: no chat template recognised: --system needs one (--chat-template)", model);
	char *first = a->prompt ? llm_xstrdup(a->prompt) : NULL;
	if (first && a->escape)
		run_unescape(first);
	chat_loop(&g, s, a->system, first, a->single);
	free(first);
	llm_seq_free(&s);
}
