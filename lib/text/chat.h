/* chat.h: conversations and the chat templates that render them.
 *
 * A template is the Jinja text of a model (tokenizer_config.json's
 * chat_template or chat_template.jinja, or a GGUF file's
 * tokenizer.chat_template), rendered by jinja.h as @huggingface/jinja (the
 * engine of transformers.js) renders it, with the variables transformers
 * passes: messages, tools when there are some, add_generation_prompt, and
 * the special tokens of tokenizer_config.json (bos_token, eos_token, ...).
 *
 * Built-in templates, by name, for rendering without a model's own text
 * (llm-run --chat-template NAME): the texts of lib/text/templates/, each
 * with the bos and eos tokens of its family's tokenizer_config.json:
 *   deepseek-r1  DeepSeek-R1-Distill's chat_template.jinja
 *   qwen2        Qwen2-Instruct's ChatML template (a default system prompt)
 *   qwen3        Qwen3's template
 *   llama3       Meta-Llama-3-Instruct's template (the generation prompt
 *                under add_generation_prompt, as upstream has it now)
 *   llama2       Llama-2-chat's template (roles must alternate)
 * The texts the golden files were rendered from: tests/tools/make-chat-golden
 * names their sources. */
#ifndef LLM_CHAT_H
#define LLM_CHAT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/util.h"
#include "jinja.h"
#include "reply.h"

/* A conversation as the template sees it: the messages, in order (a JSON
 * array of objects; NULL: none yet), and the tools offered (a JSON array,
 * or NULL). */
struct llm_chat {
	json_t *messages;
	json_t *tools;
	json_t *kwargs; /* more variables of the template (chat_template_kwargs: enable_thinking, ...), or NULL */
};

/* Append a message {"role": role, "content": content} (copied). */
void llm_chat_add(struct llm_chat *c, const char *role, const char *content, size_t len);
void llm_chat_free(struct llm_chat *c);
/* Append the messages of a JSON array of message objects, or of an object
 * {"messages": [...], "tools": [...], "chat_template_kwargs": {...}} as
 * an OpenAI chat request carries them (llama-server's chat_template_kwargs:
 * more variables for the template, but for messages, tools,
 * add_generation_prompt and the special tokens).  A message has a string "role"; its "content" is a string, an
 * array of OpenAI's text parts ([{"type": "text", "text": ...}], joined into
 * one string, as llm-serve reads them), null, or absent (an assistant's
 * tool_calls); its other keys (tool_calls, name, tool_call_id,
 * reasoning_content, ...) go to the template as they are.  The array may
 * be empty (the template renders no message).  0, or -1 with llm_errmsg
 * "name: ..." (not JSON, no messages, a message that is not one), c then
 * as it was. */
int llm_chat_parse(struct llm_chat *c, const char *text, size_t len, const char *name);
/* The text of an array of OpenAI's content parts ({"type": "text", "text":
 * string} each; any other refused), joined: 0 and *text (free), or -1 and
 * *part, the first part refused. */
int llm_chat_content_text(const json_t *content, char **text, size_t *part);

struct llm_chat_template {
	struct llm_jinja *jinja;
	json_t *tokens; /* the special tokens to render with: {"bos_token": "<s>", ...} */
	char *name;     /* the built-in's name, or the family the text is recognised as; NULL: neither */
	const struct llm_reply_format *reply; /* how its replies are split (reply.h); NULL: none */
	char *text;                           /* its Jinja text */
};

#define LLM_CHAT_TEMPLATE_INIT {NULL, NULL, NULL, NULL, NULL}

/* The built-in names in order: NULL past the last. */
const char *llm_chat_builtin(size_t i);
/* A built-in template by name; -1 with llm_errmsg for an unknown name. */
int llm_chat_template_builtin(struct llm_chat_template *t, const char *name);
/* A template as --chat-template names it: a built-in name (which wins),
 * else a file of Jinja text.  spec_known says whether there is such a
 * template (0 with llm_errmsg "'spec' is neither a built-in template (...)
 * nor a file" when not) without reading it. */
int llm_chat_template_spec(struct llm_chat_template *t, const char *spec);
int llm_chat_spec_known(const char *spec);
/* A template from its Jinja text; label names it in messages.  -1 with
 * llm_errmsg "label:LINE:COL: what" for a text the engine cannot render. */
int llm_chat_template_text(struct llm_chat_template *t, const char *text, size_t len, const char *label);
/* The special tokens of a tokenizer_config.json object (bos_token,
 * eos_token, unk_token, sep_token, pad_token, cls_token, mask_token as
 * strings, an AddedToken object as its content; additional_special_tokens
 * as an array of strings) replace t's where the config has them; -1 with
 * llm_errmsg (label: the file) for a config llm_chat_config_check refuses. */
int llm_chat_template_tokens(struct llm_chat_template *t, const json_t *config, const char *label);
/* The special-token keys of a tokenizer_config.json object, as
 * transformers takes them: a string, an object with a string "content",
 * or null; additional_special_tokens an array of such.  0, or -1 with
 * llm_errmsg "label: key: ...". */
int llm_chat_config_check(const json_t *config, const char *label);
void llm_chat_template_free(struct llm_chat_template *t);
/* The template text of a tokenizer_config.json object: its chat_template
 * string, or from a list of {"name", "template"} the one named
 * "default"; NULL when there is none (borrowed from config). */
const char *llm_chat_config_template(const json_t *config);
/* The family a template text looks like (its markers: "deepseek-r1",
 * "llama3", "qwen3", "qwen2", "llama2"), or NULL.  A label only: the text
 * itself is what renders. */
const char *llm_chat_recognise(const char *jinja);

/* Append the rendered conversation to out; spans, when not NULL, gets the
 * ranges of out that come from the messages' and the tools' strings.  0,
 * or -1 with llm_errmsg (the template raised an error, or failed), out and
 * spans then unchanged. */
int llm_chat_render(const struct llm_chat_template *t, const struct llm_chat *c, int add_generation_prompt,
    struct llm_buf *out, struct llm_spans *spans);
/* What the template writes after an assistant's reply that ends a
 * conversation (its end-of-turn marker and what follows), found by
 * rendering a short conversation; NULL when that fails.  Freed by the
 * caller. */
char *llm_chat_after_reply(const struct llm_chat_template *t);

#endif
