/* toklines.h: the scriptable line protocol of `llm-run --tokenizer PATH
 * --tokenize` and `--detokenize` (and tests/tools/tokcheck), over a
 * tokenizer of tokenizer.h.
 *
 * in holds one JSON value per line (a final newline is optional; name,
 * e.g. "<stdin>", is used in messages).  tokenize_lines reads JSON strings
 * (with LLM_TOK_RAW: each line's bytes as they are, without the newline)
 * and appends, per line, a JSON array of ids ("[1,2,3]\n", special tokens
 * added only with LLM_TOK_ADD_SPECIAL; with LLM_TOK_PLAIN the text of a
 * special token is encoded as text, as llm_tokenizer_encode_plain does);
 * detokenize_lines reads JSON arrays of ids and appends JSON
 * strings.  Strings are escaped as JavaScript's JSON.stringify escapes them
 * (only '"', '\\' and control characters), so the output compares byte for
 * byte with goldens written by node (llm_json_quote of json.h).  0, or -1 with llm_errmsg
 * "name:LINE: message"; out then holds a partial result, to be discarded
 * (no half-written output). */
#ifndef LLM_TOKLINES_H
#define LLM_TOKLINES_H

#include <stddef.h>

#include "tokenizer.h"
#include "../base/util.h"

#define LLM_TOK_ADD_SPECIAL 1
#define LLM_TOK_RAW 2
#define LLM_TOK_PLAIN 4
int llm_tokenizer_tokenize_lines(struct llm_tokenizer *t, const char *in, size_t len, const char *name, int flags,
    struct llm_buf *out);
/* flags: LLM_DETOK_SKIP_SPECIAL (leave the special tokens out), and
 * LLM_DETOK_STRICT (an id outside the vocabulary is an error, as llm-run's
 * --detokenize has it; without it such ids decode to nothing, as Hugging
 * Face's decode does). */
#define LLM_DETOK_SKIP_SPECIAL 1
#define LLM_DETOK_STRICT 2
int llm_tokenizer_detokenize_lines(struct llm_tokenizer *t, const char *in, size_t len, const char *name, int flags,
    struct llm_buf *out);

#endif
