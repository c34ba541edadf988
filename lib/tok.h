/* tok.h: the tokenizer interface of llm-run, over a Hugging Face
 * tokenizer.json.
 *
 * This implementation is deliberately simple: decoding is exact (GPT-2
 * byte-level tokens through the reversed bytes_to_unicode map;
 * SentencePiece-style tokens with '\xe2\x96\x81' as space and <0xNN> byte
 * tokens), but encoding is a greedy longest match over the vocabulary after
 * splitting out added tokens, not the BPE merges: good enough to drive a
 * model by hand, not equal to the Hugging Face ids.  The exact tokenizer
 * replaces it behind the same functions. */
#ifndef LLM_TOK_H
#define LLM_TOK_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct llm_tok;

/* Load from the text of tokenizer.json; name is used in messages.  NULL
 * with llm_errmsg on failure. */
struct llm_tok *llm_tok_load(const char *json, size_t len, const char *name);
void llm_tok_free(struct llm_tok *t);

/* Number of ids the tokenizer knows (the largest id + 1). */
int64_t llm_tok_size(const struct llm_tok *t);

/* Encode text (no BOS added) and append the ids to *ids (grown with
 * llm_xrealloc, *n updated).  0, or -1 with llm_errmsg. */
int llm_tok_encode(const struct llm_tok *t, const char *text, size_t len, int64_t **ids, size_t *n);

/* Append the bytes of token id to out.  first: the token starts the text
 * (SentencePiece-style decoders drop its leading space).  An id the
 * tokenizer does not know adds nothing. */
void llm_tok_decode(const struct llm_tok *t, int64_t id, int first, struct llm_buf *out);

/* Whether id is an added token marked special (BOS, EOS, ...). */
int llm_tok_is_special(const struct llm_tok *t, int64_t id);

/* Copy bytes to out as valid UTF-8, invalid sequences replaced by U+FFFD. */
void llm_utf8_sanitize(const char *s, size_t n, struct llm_buf *out);

#endif
