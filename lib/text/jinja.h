/* jinja.h: chat templates (Jinja text) rendered as transformers.js's
 * engine, @huggingface/jinja, renders them: the oracle the golden tests
 * compare with (tests/jinja.bats).  The Template class of that engine is
 * followed: trim_blocks and lstrip_blocks are on, a trailing newline of the
 * text is dropped, transformers' {% generation %} tags are removed, and
 * the globals are raise_exception, range, namespace, strftime_now, true,
 * false, none and their Python spellings.
 *
 * Its semantics are JavaScript's where the engine's are: numbers are
 * doubles (an integer is a number flagged integral), `==` is JavaScript's
 * loose equality, strip() and trim() remove JavaScript white space, a
 * string's length counts UTF-16 units, and `break` and `continue` drop
 * what the loop's body wrote in that iteration.  Known differences,
 * outside what chat templates use: upper(), lower(), title() and
 * capitalize() change ASCII letters only; a string is indexed and sliced by
 * code points; tojson's sort_keys orders keys by bytes, not by the locale;
 * strftime_now formats with English month names in the local time zone
 * (or at $SOURCE_DATE_EPOCH when it is set).
 *
 * Spans.  The strings of the variables a caller names as data (the
 * messages and tools of a chat) are followed through the rendering: the
 * byte ranges of the output that come from them are reported, so that the
 * tokenizer can keep a message's text from becoming special tokens.
 * Substrings keep their origin, as do concatenation, replace, upper/lower
 * and friends; tojson marks each string literal it writes from data. */
#ifndef LLM_JINJA_H
#define LLM_JINJA_H

#include <jansson.h>
#include <stddef.h>

#include "../base/util.h"

/* Sorted, non-overlapping byte ranges [r[i][0], r[i][1]) of a text. */
struct llm_spans {
	size_t (*r)[2];
	size_t n, cap;
};
void llm_spans_free(struct llm_spans *s);

struct llm_jinja;

/* Parse a template.  NULL, with llm_errmsg "name:LINE:COL: what", when the
 * text is not a template this engine can render (a syntax error, or a
 * statement it does not know). */
struct llm_jinja *llm_jinja_parse(const char *text, size_t len, const char *name);
void llm_jinja_free(struct llm_jinja *t);

/* Render with the members of the JSON object vars as variables.  The
 * strings inside the members named in data (a NULL-terminated list, or
 * NULL) are data for spans.  Appends to out, and sets spans (offsets from
 * out's end on entry) when it is not NULL.  0, or -1 with llm_errmsg
 * "name:LINE:COL: what", or "name: message" when the template called
 * raise_exception(message), out and spans then unchanged. */
int llm_jinja_render(const struct llm_jinja *t, const json_t *vars, const char *const *data, struct llm_buf *out,
    struct llm_spans *spans);

#endif
