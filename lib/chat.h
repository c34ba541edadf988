/* chat.h: conversations for llm-run: the chat templates it knows, rendered
 * by C code; the text stream of a generation (UTF-8 characters and stop
 * strings); and the record of what the KV cache holds, so that a new turn
 * sends only the tokens the cache lacks.
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
 *   llama3       Llama 3 Instruct: headers, trimmed contents, '<|eot_id|>'
 *   llama2       Llama 2 chat: [INST] ... [/INST], the system prompt in
 *                <<SYS>> inside the first user message; roles must
 *                alternate user/assistant (an error otherwise) */
#ifndef LLM_CHAT_H
#define LLM_CHAT_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum llm_chat_template {
	LLM_CHAT_DEEPSEEK_R1,
	LLM_CHAT_QWEN2,
	LLM_CHAT_LLAMA3,
	LLM_CHAT_LLAMA2,
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
	char *content;          /* valid UTF-8, NUL-terminated */
	size_t len;             /* of content */
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
 * "name: ..." (not JSON, not such an array, no messages). */
int llm_chat_parse(struct llm_chat *c, const char *text, size_t len, const char *name);

/* Append the rendered conversation to out.  bos and eos are the bos_token
 * and eos_token strings.  0, or -1 with llm_errmsg when the template
 * raises an error (llama2's role order), out unchanged then. */
int llm_chat_render(int tmpl, const struct llm_chat *c, int add_generation_prompt, const char *bos,
	const char *eos, struct llm_buf *out);

/* The text of one generation as it streams.  Token bytes go in; text
 * comes out that never ends inside a UTF-8 character (each invalid
 * sequence becomes one U+FFFD, as Hugging Face decoding gives it) and
 * never holds the start of a stop string that may still complete, so
 * that a stop string split across tokens is never printed.  When one
 * completes, the text before it comes out and the stream stops. */
struct llm_stream {
	char **stop;            /* stop strings (borrowed) */
	size_t nstop, maxstop;
	struct llm_buf raw;     /* every byte pushed */
	size_t done;            /* raw bytes already turned into text */
	struct llm_buf text;    /* all text released so far (valid UTF-8) */
	int stopped;            /* a stop string completed */
};
void llm_stream_init(struct llm_stream *s, char **stop, size_t nstop);
/* Push the bytes of a token; the text released by it is appended to out
 * (and to s->text).  Returns 1 when a stop string completed (nothing
 * after it is released; later pushes are ignored), else 0. */
int llm_stream_push(struct llm_stream *s, const char *p, size_t n, struct llm_buf *out);
/* The generation ended: release what was held back (an incomplete
 * character as U+FFFD, the start of a stop string as text). */
void llm_stream_finish(struct llm_stream *s, struct llm_buf *out);
void llm_stream_free(struct llm_stream *s);

/* What the KV cache holds: the tokens at positions [0, n), the text they
 * stand for, and where the cache may be cut.  A cut after token i is
 * allowed when the text up to end[i] is exactly what tokens [0, i] stand
 * for and the text after it can be encoded on its own: after a generated
 * token, after the last token of an encoded piece, and after an added
 * token inside a piece whose token bytes spell its text. */
struct llm_chat_cache {
	int64_t *ids;
	size_t *end;            /* (n) end of token i's text in text */
	unsigned char *cut;     /* (n) 1: the cache may be cut after token i */
	size_t n, cap;
	struct llm_buf text;
};
void llm_chat_cache_push(struct llm_chat_cache *c, int64_t id, const char *bytes, size_t len, int cut);
/* The number of tokens to keep for a context whose text is text[0, len):
 * the last cut point whose text is a prefix of it (0: none). */
size_t llm_chat_cache_reuse(const struct llm_chat_cache *c, const char *text, size_t len);
/* The last cut point before keep tokens (0: none). */
size_t llm_chat_cache_prev_cut(const struct llm_chat_cache *c, size_t keep);
/* Keep the first n tokens. */
void llm_chat_cache_truncate(struct llm_chat_cache *c, size_t n);
void llm_chat_cache_free(struct llm_chat_cache *c);

#endif
