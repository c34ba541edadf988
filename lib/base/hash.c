/* hash.c: the hash tables of the library (see hash.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hash.h"
#include "util.h"

/* Memory for a hash table.  One of 2 MiB or more (a large vocabulary's,
 * or its merges') is aligned to and asked to be backed by huge pages:
 * filling and probing it is a cache miss per key anyway, and with 4 KiB
 * pages a TLB miss and, the first time, a page fault as well. */
static void *
table_alloc(size_t n)
{
	size_t huge = (size_t)2 << 20;
	if (n < huge)
		return llm_xmalloc(n);
	n = LLM_ALIGN_UP(n, huge);
	void *p = aligned_alloc(huge, n);
	if (!p)
		llm_fatal("out of memory allocating %zu bytes", n);
#ifdef MADV_HUGEPAGE
	madvise(p, n, MADV_HUGEPAGE); /* only a hint: THP may be off */
#endif
	return p;
}

/* ---- string -> int32 ---- */

void
llm_smap_init(struct llm_smap *m, size_t want)
{
	size_t cap = 64;
	while (cap < want * 2)
		cap *= 2;
	m->e = table_alloc(cap * sizeof(*m->e));
	for (size_t i = 0; i < cap; i++)
		m->e[i].off = UINT32_MAX;
	m->cap = cap;
	m->n = 0;
}

void
llm_smap_free(struct llm_smap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

int
llm_smap_put(struct llm_smap *m, const char *pool, size_t off, size_t len, uint64_t h64, int32_t val)
{
	uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
	if ((m->n + 1) * 2 > m->cap) {
		struct llm_smap g;
		llm_smap_init(&g, m->n + 1);
		for (size_t i = 0; i < m->cap; i++) {
			struct llm_smap_ent *e = &m->e[i];
			if (e->off == UINT32_MAX)
				continue;
			size_t j = e->h & (g.cap - 1);
			while (g.e[j].off != UINT32_MAX)
				j = (j + 1) & (g.cap - 1);
			g.e[j] = *e;
		}
		g.n = m->n;
		free(m->e);
		*m = g;
	}
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		struct llm_smap_ent *e = &m->e[i];
		if (e->off == UINT32_MAX) {
			e->h = h;
			e->off = (uint32_t)off;
			e->len = (uint32_t)len;
			e->val = val;
			m->n++;
			return 0;
		}
		if (e->h == h && e->len == len && memcmp(pool + e->off, pool + off, len) == 0) {
			e->val = val;
			return 1;
		}
	}
}

/* ---- (int32, int32) -> (rank, id) ---- */

void
llm_pairmap_init(struct llm_pairmap *m, size_t want)
{
	size_t cap = 64;
	while (cap < want * 2)
		cap *= 2;
	m->e = table_alloc(cap * sizeof(*m->e));
	for (size_t i = 0; i < cap; i++)
		m->e[i].key = UINT64_MAX;
	m->cap = cap;
	m->n = 0;
}

void
llm_pairmap_free(struct llm_pairmap *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

int
llm_pairmap_put(struct llm_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t id)
{
	if ((m->n + 1) * 2 > m->cap) {
		struct llm_pairmap g;
		llm_pairmap_init(&g, m->n + 1);
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].key != UINT64_MAX)
				llm_pairmap_put(&g, (int32_t)(m->e[i].key >> 32), (int32_t)(uint32_t)m->e[i].key,
				    m->e[i].rank, m->e[i].id);
		llm_pairmap_free(m);
		*m = g;
	}
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	for (size_t i = llm_pair_hash(k) & mask;; i = (i + 1) & mask) {
		struct llm_pairmap_ent *e = &m->e[i];
		int again = e->key == k;
		if (e->key == UINT64_MAX) {
			e->key = k;
			m->n++;
		} else if (!again) {
			continue;
		}
		e->rank = rank;
		e->id = id;
		return again;
	}
}

/* ---- pointer -> pointer ---- */

static size_t
slot(const void *key, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)key;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (size_t)h & (cap - 1);
}

void
llm_ptrmap_put(struct llm_ptrmap *m, const void *key, const void *val)
{
	if (2 * (m->n + 1) > m->cap) {
		struct llm_ptrmap g = {0};
		g.cap = m->cap ? 2 * m->cap : 64;
		g.keys = llm_xcalloc(g.cap, sizeof(*g.keys));
		g.vals = llm_xcalloc(g.cap, sizeof(*g.vals));
		for (size_t i = 0; i < m->cap; i++)
			if (m->keys[i])
				llm_ptrmap_put(&g, m->keys[i], m->vals[i]);
		free(m->keys);
		free(m->vals);
		*m = g;
	}
	size_t i = slot(key, m->cap);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (!m->keys[i])
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
}

int
llm_ptrmap_get(const struct llm_ptrmap *m, const void *key, const void **val)
{
	if (!m->cap)
		return 0;
	for (size_t i = slot(key, m->cap); m->keys[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key) {
			if (val)
				*val = m->vals[i];
			return 1;
		}
	return 0;
}

void
llm_ptrmap_free(struct llm_ptrmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}
