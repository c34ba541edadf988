/* generate.c: llm-run's generation (-p, -f, --tokens) on the public
 * API: the prompt evaluated on a sequence, then tokens drawn and fed back
 * until a stop, the text streamed as it comes (lib/text/stream.c).
 * generate() is also each turn's of -i (chat.c), which llm-run.c runs
 * itself: this file does not call the chat. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/json.h"
#include "../../lib/text/stream.h"
#include "../../lib/base/util.h"
#include "run.h"

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
void
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
			if (run_interrupted) {
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
				/* said, not only in --json's stop: a reply cut short */
				r->stop = "context";
				fflush(stdout);
				llm_warn("%s: the context is full (%" PRId64 " positions, -c): the reply stops here",
				    g->model, llm_seq_context(s));
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

void
result_free(struct result *r)
{
	free(r->ids);
	llm_stream_free(&r->stream);
}

const char *
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
json_t *
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
		llm_fatal("%s: the prompt is empty", g->model);
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

	run_catch_sigint();
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
		    timings_json(t_load, t0 + r.t_first - g->t_start, &r, (int64_t)nids, t_prefill));
		run_print_json(o);
	} else {
		end_line(g, &r);
		run_finish_stdout();
		print_rates(r.t_first, (int64_t)nids, t_prefill, r.ndecode, r.t_decode);
	}
	run_finish_stdout();
	result_free(&r);
}

/* -p, -f, --tokens: one generation on a sequence of ctx positions. */
void
run_generate(struct llm *m, const char *model, int64_t ctx, double t_load, const struct gen_opts *a)
{
	struct gen g;
	struct llm_seq *s = run_gen_start(&g, m, model, ctx, t_load, a);
	int64_t *ids = NULL, *text_ids;
	size_t nids = 0, ntext, len = 0;
	char *ptext = NULL;
	struct llm_out lo;

	if (a->ids) {
		ids = llm_xreallocarray(NULL, a->nids, sizeof(*ids));
		memcpy(ids, a->ids, a->nids * sizeof(*ids));
		nids = a->nids;
	} else {
		ptext = a->prompt ? llm_xstrdup(a->prompt) : run_read_input(a->prompt_file, &len);
		if (a->prompt && a->escape)
			run_unescape(ptext);
		if (a->prompt)
			len = strlen(ptext);
		if (!g.tok)
			llm_fatal("%s: no tokenizer.json: give the prompt as --tokens", model);
		const char *what = a->prompt ? "-p" : strcmp(a->prompt_file, "-") == 0 ? "<stdin>" : a->prompt_file;
		if (run_text_check(what, ptext, len) < 0)
			llm_fatal("%s", llm_errmsg());
		if (llm_tokenize(m, ptext, len, a->plain_input ? LLM_TOKENIZE_PLAIN : 0, &text_ids, &ntext) != LLM_OK)
			llm_fatal("%s: %s", what, llm_errmsg());
		ids = llm_xreallocarray(NULL, ntext + 1, sizeof(*ids));
		if (llm_token_add_bos(m))
			ids[nids++] = llm_token_bos(m);
		if (ntext) /* an empty prompt has no ids (NULL) */
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
	llm_seq_free(&s);
}
