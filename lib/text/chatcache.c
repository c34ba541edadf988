/* chatcache.c: the record of what the KV cache holds (see chatcache.h). */
#include <stdlib.h>
#include <string.h>

#include "chatcache.h"

void
llm_chat_cache_push(struct llm_chat_cache *c, int64_t id, const char *bytes, size_t len, int cut)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->ids = llm_xreallocarray(c->ids, c->cap, sizeof(*c->ids));
		c->end = llm_xreallocarray(c->end, c->cap, sizeof(*c->end));
		c->cut = llm_xreallocarray(c->cut, c->cap, sizeof(*c->cut));
	}
	if (len)
		llm_buf_add(&c->text, bytes, len);
	c->ids[c->n] = id;
	c->end[c->n] = c->text.len;
	c->cut[c->n] = (unsigned char)(cut != 0);
	c->n++;
}

size_t
llm_chat_cache_reuse(const struct llm_chat_cache *c, const char *text, size_t len)
{
	size_t l = 0, k;

	while (l < len && l < c->text.len && text[l] == c->text.p[l])
		l++;
	for (k = c->n; k > 0; k--)
		if (c->cut[k - 1] && c->end[k - 1] <= l)
			break;
	return k;
}

size_t
llm_chat_cache_prev_cut(const struct llm_chat_cache *c, size_t keep)
{
	size_t k = keep;
	while (k > 0 && !(k < keep && c->cut[k - 1]))
		k--;
	return k;
}

void
llm_chat_cache_truncate(struct llm_chat_cache *c, size_t n)
{
	if (n >= c->n)
		return;
	c->n = n;
	c->text.len = n ? c->end[n - 1] : 0;
}

void
llm_chat_cache_free(struct llm_chat_cache *c)
{
	free(c->ids);
	free(c->end);
	free(c->cut);
	llm_buf_free(&c->text);
	memset(c, 0, sizeof(*c));
}
