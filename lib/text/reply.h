/* reply.h: a generated reply split as an OpenAI assistant message carries
 * it (content, reasoning_content, tool_calls), by the reply format of its
 * chat template's family.
 *
 * The formats are rows of one table (reply.c): the markers that bracket a
 * thought, the forms a tool call takes (the markers that open and close
 * it, and the shape of what is between), and the markers by which a
 * template text is recognised as the format's.  Harmony (gpt-oss) is a row
 * too, with channels instead of brackets.
 *
 * A reply is parsed whole, or as it grows (LLM_REPLY_PARTIAL): then what
 * may still become a marker or a call is held back, so that parsing the
 * text at each token gives content and reasoning that only grow, and calls
 * that only come whole: a server streams the differences. */
#ifndef LLM_REPLY_H
#define LLM_REPLY_H

#include <jansson.h>
#include <stddef.h>

#include "../base/util.h"

struct llm_reply_format;

enum llm_reply_flags {
	LLM_REPLY_PARTIAL = 1,   /* the text may stop anywhere: hold back what may still change */
	LLM_REPLY_THINKING = 2,  /* the prompt left the reply inside a thought (it ended with its opening marker) */
	LLM_REPLY_TOOLS = 4,     /* parse tool calls (else they stay text) */
	LLM_REPLY_REASONING = 8, /* thoughts go to reasoning (else they stay in content as they are) */
};

struct llm_reply {
	struct llm_buf content, reasoning;
	json_t *calls; /* [{"name": s, "arguments": s (JSON text)}], the whole calls in order */
};

/* The format of a template text (its markers), or the plain one, which
 * has no thought and no call, for NULL or a text of no known format. */
const struct llm_reply_format *llm_reply_format_of(const char *template_text);
/* A format by name ("hermes", "llama3", "mistral", "deepseek-r1", "phi4",
 * "harmony", "plain"); NULL for another name. */
const struct llm_reply_format *llm_reply_format_named(const char *name);
const char *llm_reply_format_name(const struct llm_reply_format *f);
/* The names in order: NULL past the last. */
const char *llm_reply_format_list(size_t i);

/* 1 when the text of a special token (n bytes) is one of f's markers, so
 * that a reply's text keeps it for the parser; else 0. */
int llm_reply_marker(const struct llm_reply_format *f, const char *s, size_t n);
/* 1 when a prompt (n bytes) ends inside a thought of f's: its last
 * marker, trailing white space aside, is the opening one. */
int llm_reply_prompt_thinking(const struct llm_reply_format *f, const char *prompt, size_t n);

/* Split text (len bytes) into r (emptied first). */
void llm_reply_parse(const struct llm_reply_format *f, const char *text, size_t len, int flags, struct llm_reply *r);
void llm_reply_free(struct llm_reply *r);
/* r as an OpenAI assistant message (new): {"role": "assistant",
 * "content": s, or null when empty and there are calls,
 * "reasoning_content": s (when there is some), "tool_calls": [{"id":
 * "call_N", "type": "function", "function": {"name", "arguments"}}]
 * (when there are some; N from 0)}. */
json_t *llm_reply_message(const struct llm_reply *r);

/* For a reply held to tool calls (tool_choice "required" or a function):
 * *prefix, the text the prompt is given after the generation prompt so
 * that the reply starts inside a call (a format's opening marker, which
 * may be a special token a grammar cannot draw), and the GBNF the rest is
 * held to: one call (or, with parallel, one or more) of the tools (an
 * OpenAI "tools" array; only the function named only, when not NULL),
 * each call's arguments held to its function's "parameters" schema.
 * With thinking (the prompt ends inside a thought), the prefix closes the
 * thought first.  Both new strings; NULL with llm_errmsg for a format without calls, a
 * tool that is not {"type": "function", "function": {"name", ...}}, a
 * name of no tool, or a schema refused (json_schema.c). */
/* 1 when f has a way to write calls that llm_reply_tool_grammar holds a reply to. */
int llm_reply_writes_calls(const struct llm_reply_format *f);
char *llm_reply_tool_grammar(const struct llm_reply_format *f, const json_t *tools, const char *only, int parallel,
    int thinking, char **prefix);

#endif
