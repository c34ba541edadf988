/* text.c: llm-run's modes that run no model: --tokenize, --detokenize
 * and --render expose the tokenizer (lib/text/toklines.c) and the chat
 * templates (lib/text/chat.c, jinja.c) to scripts and golden tests; --verify reads the
 * weights against weights.json. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/formats/bundle.h"
#include "../../lib/text/chat.h"
#include "../../lib/text/chatsrc.h"
#include "../../lib/text/reply.h"
#include "../../lib/base/json.h"
#include "../../lib/formats/model.h"
#include "../../lib/text/toklines.h"
#include "../../lib/base/util.h"
#include "../../lib/formats/weights.h"
#include "run.h"

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

/* --verify: every tensor of weights.bin against weights.json, and both
 * against model.json's plan; no model library. */
void
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

/* --parse-reply: the reply in a->render_path as llm-serve's message, by
 * the template's reply format; in a thought from the start when the
 * template's generation prompt opens one. */
static void
parse_reply(struct llm_chatsrc *src, const struct text_opts *a, struct llm_buf *out)
{
	size_t len;
	const char *label = strcmp(a->render_path, "-") == 0 ? "<stdin>" : a->render_path;
	if (a->template_name && llm_chatsrc_template(src, a->template_name) < 0)
		llm_fatal("%s", llm_errmsg());
	int flags = LLM_REPLY_TOOLS | LLM_REPLY_REASONING;
	if (src->tmpl.jinja) {
		struct llm_chat conv = {0};
		struct llm_buf prompt = {0};
		llm_chat_add(&conv, "user", "Hi", 2);
		if (llm_chat_render(&src->tmpl, &conv, 1, &prompt, NULL) == 0 &&
		    llm_reply_prompt_thinking(src->tmpl.reply, prompt.p, prompt.len))
			flags |= LLM_REPLY_THINKING;
		llm_buf_free(&prompt);
		llm_chat_free(&conv);
	}
	char *text = run_read_input(a->render_path, &len);
	if (run_text_check(label, text, len) < 0)
		llm_fatal("%s", llm_errmsg());
	struct llm_reply r = {0};
	llm_reply_parse(src->tmpl.jinja ? src->tmpl.reply : NULL, text, len, flags, &r);
	json_t *msg = llm_reply_message(&r);
	char *j = json_dumps(msg, JSON_COMPACT);
	llm_buf_printf(out, "%s\n", j);
	free(j);
	json_decref(msg);
	llm_reply_free(&r);
	free(text);
}

/* --tokenize, --detokenize, --render and --parse-reply: no model library. */
void
run_text(const struct text_opts *a)
{
	struct llm_chatsrc src = LLM_CHATSRC_INIT;
	struct llm_buf out = {0};
	size_t len;
	if (a->tokenizer_path || a->model)
		load_chatsrc(&src, a->tokenizer_path ? a->tokenizer_path : a->model, NULL);
	if (a->mode != TEXT_RENDER && a->mode != TEXT_PARSE && !src.tok)
		llm_fatal("%s: no tokenizer.json", a->tokenizer_path ? a->tokenizer_path : a->label);
	if (a->mode == TEXT_RENDER) {
		struct llm_chat conv = {0};
		const char *label = strcmp(a->render_path, "-") == 0 ? "<stdin>" : a->render_path;
		if (a->template_name && llm_chatsrc_template(&src, a->template_name) < 0)
			llm_fatal("%s", llm_errmsg());
		if (!src.tmpl.jinja)
			llm_fatal("%s: no chat template recognised: give --chat-template",
			    a->tokenizer_path ? a->tokenizer_path :
				a->model      ? a->label :
						label);
		char *text = run_read_input(a->render_path, &len);
		if (llm_chat_parse(&conv, text, len, label) < 0)
			llm_fatal("%s", llm_errmsg());
		if (llm_chat_render(&src.tmpl, &conv, !a->no_gen, &out, NULL) < 0)
			llm_fatal("%s: %s", label, llm_errmsg());
		free(text);
		llm_chat_free(&conv);
	} else if (a->mode == TEXT_PARSE) {
		parse_reply(&src, a, &out);
	} else {
		char *text = run_read_input("-", &len);
		int rc = a->mode == TEXT_TOKENIZE ?
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
