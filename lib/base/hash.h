/* hash.h: the hash tables of the library, all open addressing with linear
 * probing and at most half full: a string -> int32 map whose keys live in
 * a caller's pool (the tokenizer's vocabulary, added tokens and word
 * cache; the GGUF tokenizer's token lookup), a pair -> (rank, id) map (BPE
 * merges) and a pointer -> pointer map (llm-split's and
 * llm-verify-partition's IR walks).
 *
 * The lookups are inline: they sit on the tokenizer's hot paths. */
#ifndef LLM_HASH_H
#define LLM_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A fast 64-bit hash of n bytes (not FNV: see llm_fnv1a in util.h for
 * fingerprints). */
static inline uint64_t
llm_hash_bytes(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL);
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
		s += 8;
		n -= 8;
	}
	/* The last n < 8 bytes as a little-endian number, from two
	 * overlapping loads (or three bytes): a byte-wise copy to the stack
	 * and a wide load back costs a store-forwarding stall per key. */
	uint64_t v = 0;
	if (n >= 4) {
		uint32_t lo, hi;
		memcpy(&lo, s, 4);
		memcpy(&hi, s + n - 4, 4);
		v = lo | (uint64_t)hi << (n - 4) * 8;
	} else if (n) {
		v = s[0] | (uint64_t)s[n / 2] << n / 2 * 8 | (uint64_t)s[n - 1] << (n - 1) * 8;
	}
	h = (h ^ v) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 29;
	return h;
}

/* String -> int32 map whose keys live in a pool (below 4 GiB) addressed by
 * offset; h64 is llm_hash_bytes of the key.  Entries are 16 bytes, to keep
 * a 150k-token vocabulary's table small in the cache.  Tables of 2 MiB or
 * more are asked to be backed by huge pages. */
struct llm_smap {
	struct llm_smap_ent {
		uint32_t h, off, len;
		int32_t val;
	} *e; /* off == UINT32_MAX: empty slot */
	size_t cap, n;
};

/* Room for want keys without growing. */
void llm_smap_init(struct llm_smap *m, size_t want);
void llm_smap_free(struct llm_smap *m);
/* Insert (or replace the value of) the key at pool + off; 1 when the key
 * was there already. */
int llm_smap_put(struct llm_smap *m, const char *pool, size_t off, size_t len, uint64_t h64, int32_t val);

/* The value of key s, or -1. */
static inline int32_t
llm_smap_get(const struct llm_smap *m, const char *pool, const char *s, size_t len, uint64_t h64)
{
	if (!m->cap)
		return -1;
	uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
	size_t mask = m->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		const struct llm_smap_ent *e = &m->e[i];
		if (e->off == UINT32_MAX)
			return -1;
		if (e->h == h && e->len == len && memcmp(pool + e->off, s, len) == 0)
			return e->val;
	}
}

/* Start fetching the slot where a lookup of hash h64 begins: bulk loads
 * issue these some keys ahead, so that the cache misses of a large table
 * overlap instead of following one another. */
static inline void
llm_smap_prefetch(const struct llm_smap *m, uint64_t h64)
{
	uint32_t h = (uint32_t)(h64 ^ h64 >> 32);
	__builtin_prefetch(&m->e[h & (m->cap - 1)]);
}

/* (left id, right id) -> (rank, merged id), one 16-byte entry per pair. */
struct llm_pairmap {
	struct llm_pairmap_ent {
		uint64_t key; /* UINT64_MAX: empty */
		uint32_t rank;
		int32_t id;
	} *e;
	size_t cap, n;
};

void llm_pairmap_init(struct llm_pairmap *m, size_t want);
void llm_pairmap_free(struct llm_pairmap *m);
/* Later entries replace earlier ones, as collecting into a HashMap does:
 * 1 when (a, b) was there already, else 0. */
int llm_pairmap_put(struct llm_pairmap *m, int32_t a, int32_t b, uint32_t rank, int32_t id);

static inline uint64_t
llm_pair_hash(uint64_t k)
{
	k *= 0x9e3779b97f4a7c15ULL;
	return k ^ (k >> 31);
}

static inline void
llm_pairmap_prefetch(const struct llm_pairmap *m, int32_t a, int32_t b)
{
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	__builtin_prefetch(&m->e[llm_pair_hash(k) & (m->cap - 1)]);
}

/* 1 and *rank, *id when (a, b) is present, else 0. */
static inline int
llm_pairmap_get(const struct llm_pairmap *m, int32_t a, int32_t b, uint32_t *rank, int32_t *id)
{
	if (!m->cap)
		return 0;
	uint64_t k = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
	size_t mask = m->cap - 1;
	for (size_t i = llm_pair_hash(k) & mask;; i = (i + 1) & mask) {
		const struct llm_pairmap_ent *e = &m->e[i];
		if (e->key == k) {
			*rank = e->rank;
			*id = e->id;
			return 1;
		}
		if (e->key == UINT64_MAX)
			return 0;
	}
}

/* A map from pointers (MlirValue.ptr, MlirOperation.ptr, ...) to
 * pointers or small integers.  Keys must not be NULL.  A zeroed struct is
 * an empty map. */
struct llm_ptrmap {
	const void **keys;
	const void **vals;
	size_t n, cap;
};
void llm_ptrmap_put(struct llm_ptrmap *m, const void *key, const void *val);
/* 1 and *val when present, else 0. */
int llm_ptrmap_get(const struct llm_ptrmap *m, const void *key, const void **val);
void llm_ptrmap_free(struct llm_ptrmap *m);

#endif
