/* chatcache.h: the record llm-run keeps of what the KV cache holds, so
 * that a new turn of a chat sends only the tokens the cache lacks: the
 * tokens at positions [0, n), the text they stand for, and where the
 * cache may be cut.  A cut after token i is
 * allowed when the text up to end[i] is exactly what tokens [0, i] stand
 * for and the text after it can be encoded on its own: after a generated
 * token, after the last token of an encoded piece, and after an added
 * token inside a piece whose token bytes spell its text. */
#ifndef LLM_CHATCACHE_H
#define LLM_CHATCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/util.h"

struct llm_chat_cache {
	int64_t *ids;
	size_t *end;        /* (n) end of token i's text in text */
	unsigned char *cut; /* (n) 1: the cache may be cut after token i */
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
