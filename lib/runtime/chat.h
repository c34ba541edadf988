/* chat.h: conversations for llm-run: the messages and the chat templates
 * it knows, rendered by C code.  The text stream of a generation is in
 * stream.h, the record of what the KV cache holds in chatcache.h.
 *
 * Templates.  Each renders exactly what @huggingface/jinja (the engine of
 * transformers.js) renders from the real template text with the same
 * messages, add_generation_prompt, bos_token and eos_token: the texts are
 * named in tests/tools/make-chat-golden, which writes the golden files the
 * tests compare with.  That includes the engine's JavaScript semantics:
 * trim() and strip() remove JavaScript white space (not U+0085, but
 * U+FEFF), and llama2's `system_message != false` is JavaScript's loose
 * comparison (a system prompt of "" or "0" counts as none).  Only string
 * contents are supported (no tool_calls).
 *   deepseek-r1  DeepSeek-R1-Distill: bos_token and the last system prompt
 *                first; assistant history keeps only what follows its last
 *                '</think>'; the generation prompt is
 *                '<｜Assistant｜><think>\n'
 *   qwen2        Qwen2-Instruct ChatML: '<|im_start|>ROLE\n...<|im_end|>\n',
 *                with "You are a helpful assistant." when the first message
 *                is not a system prompt
 *   qwen3        Qwen3 (its tokenizer_config.json, without tools): ChatML
 *                with no default system prompt; an assistant message's
 *                reasoning ('<think>...</think>') dropped before the last
 *                user query and kept after it; tool messages as user turns
 *                of <tool_response> blocks
 *   llama3       Llama 3 Instruct: headers, trimmed contents, '<|eot_id|>'
 *   llama2       Llama 2 chat: [INST] ... [/INST], the system prompt in
 *                <<SYS>> inside the first user message; roles must
 *                alternate user/assistant (an error otherwise) */
#ifndef LLM_CHAT_H
#define LLM_CHAT_H

#include <stddef.h>
#include <stdint.h>

#include "../base/util.h"

enum llm_chat_template {
	LLM_CHAT_DEEPSEEK_R1,
	LLM_CHAT_QWEN2,
	LLM_CHAT_LLAMA3,
	LLM_CHAT_LLAMA2,
	LLM_CHAT_QWEN3,
	LLM_CHAT_COUNT
};

/* "deepseek-r1", ...; and back, -1 for an unknown name. */
const char *llm_chat_name(int tmpl);
int llm_chat_find(const char *name);
/* The template a Jinja chat template text (tokenizer_config.json
 * chat_template or chat_template.jinja) belongs to, by the markers of
 * its family; -1 when none. */
int llm_chat_recognise(const char *jinja);
/* bos_token and eos_token as the family's tokenizer_config.json names
 * them, for rendering without one; and the text of the token that ends an
 * assistant turn (generation stops there in a chat). */
const char *llm_chat_default_bos(int tmpl);
const char *llm_chat_default_eos(int tmpl);
const char *llm_chat_end_of_turn(int tmpl);

struct llm_chat_msg {
	char *role;
	char *content; /* valid UTF-8, NUL-terminated */
	size_t len;    /* of content */
};

/* A conversation, in order. */
struct llm_chat {
	struct llm_chat_msg *msgs;
	size_t n, cap;
};

/* Append a message (copied). */
void llm_chat_add(struct llm_chat *c, const char *role, const char *content, size_t len);
/* Remove msgs[i, i+count). */
void llm_chat_remove(struct llm_chat *c, size_t i, size_t count);
void llm_chat_free(struct llm_chat *c);
/* Append the messages of a JSON array of {"role": string, "content":
 * string} objects (other keys are ignored).  0, or -1 with llm_errmsg
 * "name: ..." (not JSON, not such an array, no messages), c then as it
 * was. */
int llm_chat_parse(struct llm_chat *c, const char *text, size_t len, const char *name);

/* The byte ranges [r[i][0], r[i][1]) of a rendered conversation that come
 * from its messages (contents and roles), sorted and not overlapping: the
 * text that llm_tokenizer_encode_plain keeps from becoming special tokens. */
struct llm_chat_spans {
	size_t (*r)[2];
	size_t n, cap;
};
void llm_chat_spans_free(struct llm_chat_spans *s);

/* Append the rendered conversation to out.  bos and eos are the bos_token
 * and eos_token strings.  When spans is not NULL it is set to the ranges
 * of out (offsets from out's start) that come from the messages.  0, or
 * -1 with llm_errmsg when the template raises an error (llama2's role
 * order), out and spans unchanged then. */
int llm_chat_render(int tmpl, const struct llm_chat *c, int add_generation_prompt, const char *bos, const char *eos,
    struct llm_buf *out, struct llm_chat_spans *spans);

#endif
