/* fuzz_gguf.c: libFuzzer target for lib/formats/gguf.c.
 *
 * Each input is parsed from memory by llm_gguf_open_mem, the code path
 * llm_gguf_open uses after mapping a file.  A successful open must hand
 * out only values and tensors inside the input (every byte is read, so
 * ASan catches an escape) and satisfy the invariants gguf.h promises; a
 * failed one must leave a one-line message naming the input.  Nothing is
 * written.  Tensors of a block type lib/formats/quant.c decodes have their first
 * blocks decoded.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/formats/gguf.h"
#include "../../lib/formats/quant.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static unsigned sink;

static void
touch_value(const struct llm_gguf_value *v, const uint8_t *lo, const uint8_t *hi)
{
	struct llm_gguf_value e;

	if (v->type == LLM_GGUF_STRING) {
		CHECK((const uint8_t *)v->str >= lo && v->len <= (uint64_t)(hi - (const uint8_t *)v->str));
		for (uint64_t i = 0; i < v->len; i++)
			sink += (unsigned char)v->str[i];
	}
	if (v->type != LLM_GGUF_ARRAY)
		return;
	for (uint64_t i = 0; i < v->len; i++) {
		CHECK(llm_gguf_arr_elem(v, i, &e) == 0);
		sink += (unsigned)e.num.u;
		touch_value(&e, lo, hi);
	}
	CHECK(llm_gguf_arr_elem(v, v->len, &e) == -1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_gguf g;
	const struct llm_gguf_value *a;
	uint32_t u32;
	char *s;

	if (llm_gguf_open_mem(&g, data, size, "fuzz.gguf") < 0) {
		const char *m = llm_errmsg();
		CHECK(strncmp(m, "fuzz.gguf: ", 11) == 0 && !strchr(m, '\n'));
		CHECK(!g.kvs && !g.tensors && !g.path);
		return 0;
	}
	CHECK(g.version == 2 || g.version == 3);
	CHECK(g.alignment && !(g.alignment & (g.alignment - 1)));
	CHECK(g.header_end <= size && g.size == size);
	for (size_t i = 0; i < g.nkv; i++) {
		CHECK(llm_gguf_find_kv(&g, g.kvs[i].key) == &g.kvs[i]);
		touch_value(&g.kvs[i].value, data, data + size);
	}
	for (size_t i = 0; i < g.ntensors; i++) {
		const struct llm_gguf_tensor *t = &g.tensors[i];
		uint32_t blck, bsize;
		CHECK(llm_gguf_find_tensor(&g, t->name) == t);
		CHECK(llm_ggml_type_block(t->ggml_type, &blck, &bsize));
		CHECK(t->nelem % blck == 0 && t->nelem / blck * bsize == t->nbytes);
		CHECK(t->offset <= size && t->nbytes <= size - t->offset);
		CHECK((const uint8_t *)t->data == data + t->offset);
		CHECK(t->rel_offset % g.alignment == 0);
		for (size_t j = 0; j < t->nbytes; j++)
			sink += ((const uint8_t *)t->data)[j];
		if (i) {
			/* Sorted name index: neighbours strictly ordered. */
			CHECK(strcmp(g.tensor_sorted[i - 1]->name, g.tensor_sorted[i]->name) < 0);
		}
		if (llm_gguf_tensor_loadable(&g, t) == 0 && llm_quant_supported(t->ggml_type)) {
			/* The first blocks (at most 1024 elements) decode
			 * inside the tensor's bytes. */
			float out[1024];
			uint64_t n = t->nelem < 1024 ? t->nelem : 1024 / blck * blck;
			llm_dequantize(t->ggml_type, t->data, out, (size_t)n);
			for (uint64_t j = 0; j < n; j++)
				sink += out[j] == out[j];
		}
	}
	/* Every typed getter on every key: each either converts or refuses
	 * with a message naming the input and the key. */
	for (size_t i = 0; i < g.nkv; i++) {
		const char *key = g.kvs[i].key;
		int32_t i32;
		uint64_t u64;
		int64_t i64;
		float f32;
		double f64;
		int b;
		const char *p;
		size_t len;
		int rc[] = {
			llm_gguf_get_u32(&g, key, &u32),
			llm_gguf_get_i32(&g, key, &i32),
			llm_gguf_get_u64(&g, key, &u64),
			llm_gguf_get_i64(&g, key, &i64),
			llm_gguf_get_f32(&g, key, &f32),
			llm_gguf_get_f64(&g, key, &f64),
			llm_gguf_get_bool(&g, key, &b),
			llm_gguf_get_str(&g, key, &p, &len),
			llm_gguf_get_arr(&g, key, LLM_GGUF_NTYPES, &a),
		};
		for (size_t k = 0; k < sizeof(rc) / sizeof(rc[0]); k++)
			CHECK(rc[k] == 0 || rc[k] == -1);
		if (llm_gguf_get_strdup(&g, key, &s) == 0) {
			CHECK(strlen(s) == g.kvs[i].value.len);
			free(s);
		}
		if (llm_gguf_get_arr(&g, key, LLM_GGUF_STRING, &a) == 0)
			for (uint64_t j = 0; j < a->len; j++) {
				p = llm_gguf_arr_str(a, j, &len);
				CHECK(p && (const uint8_t *)p >= data &&
				    len <= (size_t)(data + size - (const uint8_t *)p));
			}
	}
	CHECK(llm_gguf_get_u32(&g, "", &u32) == 1);
	llm_gguf_close(&g);
	return 0;
}
