/* Unit tests for lib/formats/gguf.c: hand-built GGUF files with every metadata
 * type, every validation, truncations and random corruption (which must
 * fail cleanly or yield only in-bounds tensors, never crash), the
 * smallest headers, and the stories260K model from ../shared/fixtures
 * when it is there. */
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/formats/gguf.h"
#include "../../lib/formats/source.h"
#include "t.h"

#define STORIES "../shared/fixtures/stories260K/stories260K.gguf"

static int nfile;

/* Little-endian writers. */
static void
put_le(struct llm_buf *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		uint8_t c = (uint8_t)(v >> (8 * i));
		llm_buf_add(b, &c, 1);
	}
}

/* one-line helpers */
/* clang-format off */
static void put_u8(struct llm_buf *b, uint64_t v) { put_le(b, v, 1); }
static void put_u16(struct llm_buf *b, uint64_t v) { put_le(b, v, 2); }
static void put_u32(struct llm_buf *b, uint64_t v) { put_le(b, v, 4); }
static void put_u64(struct llm_buf *b, uint64_t v) { put_le(b, v, 8); }
/* clang-format on */

static void
put_f32(struct llm_buf *b, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	put_u32(b, u);
}

static void
put_f64(struct llm_buf *b, double f)
{
	uint64_t u;
	memcpy(&u, &f, 8);
	put_u64(b, u);
}

static void
put_strn(struct llm_buf *b, const char *s, size_t n)
{
	put_u64(b, n);
	llm_buf_add(b, s, n);
}

static void
put_str(struct llm_buf *b, const char *s)
{
	put_strn(b, s, strlen(s));
}

static void
header(struct llm_buf *b, uint32_t version, uint64_t nt, uint64_t nkv)
{
	llm_buf_add(b, "GGUF", 4);
	put_u32(b, version);
	put_u64(b, nt);
	put_u64(b, nkv);
}

/* A key and its value type; the caller writes the value. */
static void
kv(struct llm_buf *b, const char *key, uint32_t type)
{
	put_str(b, key);
	put_u32(b, type);
}

static void
arr(struct llm_buf *b, uint32_t etype, uint64_t n)
{
	put_u32(b, etype);
	put_u64(b, n);
}

static void
tinfo(struct llm_buf *b, const char *name, uint32_t nd, const uint64_t *ne, uint32_t type, uint64_t off)
{
	put_str(b, name);
	put_u32(b, nd);
	for (uint32_t i = 0; i < nd; i++)
		put_u64(b, ne[i]);
	put_u32(b, type);
	put_u64(b, off);
}

static void
pad_to(struct llm_buf *b, size_t align)
{
	while (b->len % align)
		put_u8(b, 0);
}

/* n data bytes with a pattern that depends on the file position. */
static void
data(struct llm_buf *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_u8(b, (uint8_t)((b->len * 7 + 1) & 0xff));
}

static uint8_t
pattern_at(size_t pos)
{
	return (uint8_t)((pos * 7 + 1) & 0xff);
}

static char *
write_raw(const char *name, const void *p, size_t n)
{
	char *path = llm_path_join(t_tmpdir(), name);
	FILE *fp;
	/* Plain stdio, not llm_write_file: its fsync makes the loops slow. */
	unlink(path);
	if (!(fp = fopen(path, "wb")) || (n && fwrite(p, 1, n, fp) != n) || fclose(fp) != 0) {
		perror(path);
		exit(2);
	}
	return path;
}

/* A hand-built file in t_tmpdir(); with LLM_GGUF_SEEDS=dir set, also a
 * copy in dir: `make fuzz` seeds the fuzzer with them. */
static char *
write_buf(const struct llm_buf *b)
{
	const char *seeds = getenv("LLM_GGUF_SEEDS");
	char name[64];
	snprintf(name, sizeof(name), "f%d.gguf", nfile++);
	if (seeds && *seeds) {
		char *p = llm_path_join(seeds, name);
		if (llm_write_file(p, b->p ? b->p : "", b->len) < 0) {
			fprintf(stderr, "%s\n", llm_errmsg());
			exit(2);
		}
		free(p);
	}
	return write_raw(name, b->p, b->len);
}

/* What a caller may rely on after a successful open: tensors inside the
 * file, aligned, sizes consistent with the type, shapes reversed, both
 * indexes sorted, lookups finding every entry. */
static int
invariants(const struct llm_gguf *g)
{
	if (g->version != 2 && g->version != 3)
		return 0;
	if (!g->alignment || (g->alignment & (g->alignment - 1)))
		return 0;
	if (g->header_end > g->size || g->data_start < g->header_end || g->data_start % g->alignment)
		return 0;
	for (size_t i = 0; i < g->nkv; i++) {
		if (llm_gguf_find_kv(g, g->kvs[i].key) != &g->kvs[i])
			return 0;
		if (i && strcmp(g->kv_sorted[i - 1]->key, g->kv_sorted[i]->key) >= 0)
			return 0;
	}
	for (size_t i = 0; i < g->ntensors; i++) {
		const struct llm_gguf_tensor *t = &g->tensors[i];
		uint32_t blck, size;
		uint64_t n = 1;
		if (llm_gguf_find_tensor(g, t->name) != t)
			return 0;
		if (i && strcmp(g->tensor_sorted[i - 1]->name, g->tensor_sorted[i]->name) >= 0)
			return 0;
		if (t->n_dims < 1 || t->n_dims > LLM_GGUF_MAX_DIMS)
			return 0;
		for (int d = 0; d < t->n_dims; d++) {
			if (!t->ne[d] || t->shape[t->n_dims - 1 - d] != (int64_t)t->ne[d])
				return 0;
			n *= t->ne[d];
		}
		if (n != t->nelem || !llm_ggml_type_block(t->ggml_type, &blck, &size))
			return 0;
		if (t->nelem % blck || t->nelem / blck * size != t->nbytes)
			return 0;
		if (t->offset != g->data_start + t->rel_offset || t->rel_offset % g->alignment)
			return 0;
		if (t->offset > g->size || t->nbytes > g->size - t->offset)
			return 0;
		if ((const uint8_t *)t->data != g->map.p + t->offset)
			return 0;
		for (size_t j = 0; j < g->ntensors; j++) {
			const struct llm_gguf_tensor *u = &g->tensors[j];
			if (j != i && t->offset < u->offset + u->nbytes && u->offset < t->offset + t->nbytes)
				return 0;
		}
	}
	return 1;
}

/* Opening fails cleanly with a one-line message that names the file and
 * contains `want`; *g is left empty. */
static int
open_fails(const char *path, const char *want)
{
	struct llm_gguf g;
	if (llm_gguf_open(&g, path) == 0) {
		fprintf(stderr, "  %s: opened, wanted '%s'\n", path, want);
		llm_gguf_close(&g);
		return 0;
	}
	const char *m = llm_errmsg();
	if (g.nkv || g.kvs || g.ntensors || g.tensors || g.path || g.map.p || strncmp(m, path, strlen(path)) != 0 ||
	    strncmp(m + strlen(path), ": ", 2) != 0 || strchr(m, '\n') || !strstr(m, want)) {
		fprintf(stderr, "  message: '%s'\n  wanted:  '%s'\n", m, want);
		return 0;
	}
	return 1;
}

static int
buf_fails(const struct llm_buf *b, const char *want)
{
	char *path = write_buf(b);
	int ok = open_fails(path, want);
	free(path);
	return ok;
}

/* A file with a value of every type, arrays of every type (strings,
 * nested arrays, empty), alignment 64 and tensors of several types whose
 * data offsets are not in file order.  The last tensor ends the file. */
static void
rich_file(struct llm_buf *b, uint32_t version)
{
	static const uint64_t ne_f32[] = {3, 2}, ne_f16[] = {5}, ne_bf16[] = {2, 2, 2}, ne_q8[] = {32, 2},
			      ne_q4k[] = {256}, ne_4d[] = {1, 2, 1, 2};

	header(b, version, 6, 28);
	/* a key and its value a line */
	/* clang-format off */
	kv(b, "general.architecture", LLM_GGUF_STRING); put_str(b, "llama");
	kv(b, "general.alignment", LLM_GGUF_U32); put_u32(b, 64);
	kv(b, "t.u8", LLM_GGUF_U8); put_u8(b, 200);
	kv(b, "t.i8", LLM_GGUF_I8); put_u8(b, (uint8_t)-5);
	kv(b, "t.u16", LLM_GGUF_U16); put_u16(b, 60000);
	kv(b, "t.i16", LLM_GGUF_I16); put_u16(b, (uint16_t)-30000);
	kv(b, "t.u32", LLM_GGUF_U32); put_u32(b, 4000000000u);
	kv(b, "t.i32", LLM_GGUF_I32); put_u32(b, (uint32_t)-2000000000);
	kv(b, "t.f32", LLM_GGUF_F32); put_f32(b, 1.5f);
	kv(b, "t.bool", LLM_GGUF_BOOL); put_u8(b, 1);
	kv(b, "t.str", LLM_GGUF_STRING); put_str(b, "h\xc3\xa9llo");
	kv(b, "t.u64", LLM_GGUF_U64); put_u64(b, (1ull << 40) + 3);
	kv(b, "t.i64", LLM_GGUF_I64); put_u64(b, (uint64_t)-(1ll << 40));
	kv(b, "t.f64", LLM_GGUF_F64); put_f64(b, -2.25);
	kv(b, "a.u8", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_U8, 3);
	put_u8(b, 1); put_u8(b, 2); put_u8(b, 255);
	kv(b, "a.i8", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_I8, 2); put_u8(b, 0xff); put_u8(b, 127);
	kv(b, "a.u16", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_U16, 1); put_u16(b, 65535);
	kv(b, "a.i16", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_I16, 2); put_u16(b, 0x8000); put_u16(b, 7);
	kv(b, "a.u32", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_U32, 2); put_u32(b, 0); put_u32(b, 0xffffffff);
	kv(b, "a.i32", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_I32, 2); put_u32(b, (uint32_t)-7); put_u32(b, 9);
	kv(b, "a.f32", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_F32, 2); put_f32(b, 0.5f); put_f32(b, -1e30f);
	kv(b, "a.bool", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_BOOL, 3); put_u8(b, 1); put_u8(b, 0); put_u8(b, 1);
	kv(b, "a.str", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_STRING, 3);
	put_str(b, ""); put_str(b, "x"); put_strn(b, "nul\0in", 6);
	kv(b, "a.u64", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_U64, 1); put_u64(b, UINT64_MAX);
	kv(b, "a.i64", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_I64, 1); put_u64(b, (uint64_t)INT64_MIN);
	kv(b, "a.f64", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_F64, 1); put_f64(b, 1e300);
	kv(b, "a.empty", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_STRING, 0);
	/* [[1, 2], ["p"], [[]]]: arrays of different element types. */
	kv(b, "a.nested", LLM_GGUF_ARRAY); arr(b, LLM_GGUF_ARRAY, 3);
	arr(b, LLM_GGUF_U32, 2); put_u32(b, 1); put_u32(b, 2);
	arr(b, LLM_GGUF_STRING, 1); put_str(b, "p");
	arr(b, LLM_GGUF_ARRAY, 1); arr(b, LLM_GGUF_I8, 0);
	/* clang-format on */

	tinfo(b, "w.q4k", 1, ne_q4k, LLM_GGML_Q4_K, 320);   /* 144 bytes */
	tinfo(b, "w.f32", 2, ne_f32, LLM_GGML_F32, 0);      /* 24 */
	tinfo(b, "w.f16", 1, ne_f16, LLM_GGML_F16, 64);     /* 10 */
	tinfo(b, "w.4d", 4, ne_4d, LLM_GGML_F32, 512);      /* 16, ends the file */
	tinfo(b, "w.bf16", 3, ne_bf16, LLM_GGML_BF16, 128); /* 16 */
	tinfo(b, "w.q8", 2, ne_q8, LLM_GGML_Q8_0, 192);     /* 68 */
	pad_to(b, 64);
	data(b, 512 + 16);
}

T_TEST(every_metadata_type_reads_back)
{
	struct llm_buf b = {0};
	struct llm_gguf g;
	struct llm_gguf_value v;
	const struct llm_gguf_value *a;
	uint32_t u32;
	int32_t i32;
	uint64_t u64;
	int64_t i64;
	float f32;
	double f64;
	int bl;
	const char *s;
	size_t len;
	char *dup;

	rich_file(&b, 3);
	char *path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(g.version == 3 && g.nkv == 28 && g.ntensors == 6 && g.alignment == 64);
	T_CHECK(invariants(&g));
	/* Iteration is in file order. */
	T_CHECK(strcmp(g.kvs[0].key, "general.architecture") == 0);
	T_CHECK(strcmp(g.kvs[27].key, "a.nested") == 0);

	T_CHECK(llm_gguf_get_u32(&g, "t.u8", &u32) == 0 && u32 == 200);
	T_CHECK(llm_gguf_get_i32(&g, "t.i8", &i32) == 0 && i32 == -5);
	T_CHECK(llm_gguf_get_u32(&g, "t.u16", &u32) == 0 && u32 == 60000);
	T_CHECK(llm_gguf_get_i32(&g, "t.i16", &i32) == 0 && i32 == -30000);
	T_CHECK(llm_gguf_get_u32(&g, "t.u32", &u32) == 0 && u32 == 4000000000u);
	T_CHECK(llm_gguf_get_i32(&g, "t.i32", &i32) == 0 && i32 == -2000000000);
	T_CHECK(llm_gguf_get_f32(&g, "t.f32", &f32) == 0 && f32 == 1.5f);
	T_CHECK(llm_gguf_get_bool(&g, "t.bool", &bl) == 0 && bl == 1);
	T_CHECK(llm_gguf_get_str(&g, "t.str", &s, &len) == 0 && len == 6 && memcmp(s, "h\xc3\xa9llo", 6) == 0);
	T_CHECK(llm_gguf_get_strdup(&g, "t.str", &dup) == 0 && strcmp(dup, "h\xc3\xa9llo") == 0);
	free(dup);
	T_CHECK(llm_gguf_get_u64(&g, "t.u64", &u64) == 0 && u64 == (1ull << 40) + 3);
	T_CHECK(llm_gguf_get_i64(&g, "t.i64", &i64) == 0 && i64 == -(1ll << 40));
	T_CHECK(llm_gguf_get_f64(&g, "t.f64", &f64) == 0 && f64 == -2.25);
	T_CHECK(llm_gguf_get_f64(&g, "t.f32", &f64) == 0 && f64 == 1.5);
	T_CHECK(llm_gguf_get_f32(&g, "t.f64", &f32) == 0 && f32 == -2.25f);
	T_CHECK(llm_gguf_get_i64(&g, "t.u32", &i64) == 0 && i64 == 4000000000);
	T_CHECK(llm_gguf_get_u64(&g, "t.u8", &u64) == 0 && u64 == 200);
	T_CHECK(g.kvs[3].value.type == LLM_GGUF_I8 && g.kvs[3].value.num.i == -5);

	/* Conversions that do not fit are errors naming file and key. */
	u32 = 12345;
	T_CHECK(llm_gguf_get_u32(&g, "t.i8", &u32) == -1 && u32 == 12345);
	T_CHECK(strncmp(llm_errmsg(), path, strlen(path)) == 0 &&
	    strstr(llm_errmsg(), "key 't.i8': i8 value -5 is negative"));
	T_CHECK(llm_gguf_get_u32(&g, "t.u64", &u32) == -1 && strstr(llm_errmsg(), "out of range for u32"));
	T_CHECK(llm_gguf_get_i32(&g, "t.u32", &i32) == -1 && strstr(llm_errmsg(), "out of range for i32"));
	T_CHECK(llm_gguf_get_u32(&g, "t.str", &u32) == -1 && strstr(llm_errmsg(), "string, not an integer"));
	T_CHECK(llm_gguf_get_u32(&g, "t.bool", &u32) == -1);
	T_CHECK(llm_gguf_get_f32(&g, "t.u32", &f32) == -1 && strstr(llm_errmsg(), "not a float"));
	T_CHECK(llm_gguf_get_bool(&g, "t.u8", &bl) == -1 && strstr(llm_errmsg(), "not a bool"));
	T_CHECK(llm_gguf_get_str(&g, "t.u8", &s, &len) == -1 && strstr(llm_errmsg(), "not a string"));
	T_CHECK(llm_gguf_get_arr(&g, "t.u8", LLM_GGUF_NTYPES, &a) == -1 && strstr(llm_errmsg(), "not an array"));
	T_CHECK(llm_gguf_get_arr(&g, "a.u8", LLM_GGUF_STRING, &a) == -1 &&
	    strstr(llm_errmsg(), "array of u8, not of string"));
	/* Missing keys: 1, out untouched, message ready for required keys. */
	T_CHECK(llm_gguf_get_u32(&g, "no.such", &u32) == 1 && u32 == 12345);
	T_CHECK(strstr(llm_errmsg(), "missing key 'no.such'") && strncmp(llm_errmsg(), path, strlen(path)) == 0);
	T_CHECK(llm_gguf_get_str(&g, "no.such", &s, &len) == 1);
	T_CHECK(llm_gguf_find_kv(&g, "no.such") == NULL && llm_gguf_find_kv(&g, "") == NULL);

	/* Arrays of every element type. */
	T_CHECK(llm_gguf_get_arr(&g, "a.u8", LLM_GGUF_U8, &a) == 0 && a->len == 3 && a->elem_size == 1);
	T_CHECK(llm_gguf_arr_elem(a, 2, &v) == 0 && v.type == LLM_GGUF_U8 && v.num.u == 255);
	T_CHECK(llm_gguf_arr_elem(a, 3, &v) == -1);
	T_CHECK(llm_gguf_get_arr(&g, "a.i8", LLM_GGUF_I8, &a) == 0 && a->len == 2);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.i == -1);
	T_CHECK(llm_gguf_arr_elem(a, 1, &v) == 0 && v.num.i == 127);
	T_CHECK(llm_gguf_get_arr(&g, "a.u16", LLM_GGUF_U16, &a) == 0 && a->len == 1);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.u == 65535);
	T_CHECK(llm_gguf_get_arr(&g, "a.i16", LLM_GGUF_I16, &a) == 0);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.i == -32768);
	T_CHECK(llm_gguf_arr_elem(a, 1, &v) == 0 && v.num.i == 7);
	T_CHECK(llm_gguf_get_arr(&g, "a.u32", LLM_GGUF_U32, &a) == 0);
	T_CHECK(llm_gguf_arr_elem(a, 1, &v) == 0 && v.num.u == 0xffffffff);
	T_CHECK(llm_gguf_val_u64(&v, &u64) == 0 && u64 == 0xffffffff);
	T_CHECK(llm_gguf_get_arr(&g, "a.i32", LLM_GGUF_I32, &a) == 0);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.i == -7);
	T_CHECK(llm_gguf_val_u64(&v, &u64) == -1 && llm_gguf_val_i64(&v, &i64) == 0 && i64 == -7);
	T_CHECK(llm_gguf_get_arr(&g, "a.f32", LLM_GGUF_F32, &a) == 0 && a->elem_size == 4);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.f == 0.5);
	T_CHECK(llm_gguf_arr_elem(a, 1, &v) == 0 && (float)v.num.f == -1e30f);
	T_CHECK(llm_gguf_val_f64(&v, &f64) == 0 && (float)f64 == -1e30f);
	T_CHECK(llm_gguf_get_arr(&g, "a.bool", LLM_GGUF_BOOL, &a) == 0 && a->len == 3);
	T_CHECK(llm_gguf_arr_elem(a, 1, &v) == 0 && v.type == LLM_GGUF_BOOL && v.num.u == 0);
	T_CHECK(llm_gguf_arr_elem(a, 2, &v) == 0 && v.num.u == 1);
	T_CHECK(llm_gguf_get_arr(&g, "a.str", LLM_GGUF_STRING, &a) == 0 && a->len == 3);
	T_CHECK((s = llm_gguf_arr_str(a, 0, &len)) && len == 0);
	T_CHECK((s = llm_gguf_arr_str(a, 1, &len)) && len == 1 && s[0] == 'x');
	T_CHECK((s = llm_gguf_arr_str(a, 2, &len)) && len == 6 && memcmp(s, "nul\0in", 6) == 0);
	T_CHECK(llm_gguf_arr_str(a, 3, &len) == NULL);
	T_CHECK(llm_gguf_arr_elem(a, 1, &v) == 0 && v.type == LLM_GGUF_STRING && v.len == 1 && v.str[0] == 'x');
	T_CHECK(llm_gguf_get_arr(&g, "a.u64", LLM_GGUF_U64, &a) == 0);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.u == UINT64_MAX);
	T_CHECK(llm_gguf_val_i64(&v, &i64) == -1 && strstr(llm_errmsg(), "out of range for i64"));
	T_CHECK(llm_gguf_get_arr(&g, "a.i64", LLM_GGUF_I64, &a) == 0);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.i == INT64_MIN);
	T_CHECK(llm_gguf_get_arr(&g, "a.f64", LLM_GGUF_F64, &a) == 0);
	T_CHECK(llm_gguf_arr_elem(a, 0, &v) == 0 && v.num.f == 1e300);
	T_CHECK(llm_gguf_get_arr(&g, "a.empty", LLM_GGUF_NTYPES, &a) == 0 && a->len == 0 &&
	    a->elem_type == LLM_GGUF_STRING && llm_gguf_arr_str(a, 0, &len) == NULL);
	T_CHECK(llm_gguf_arr_str(&g.kvs[0].value, 0, &len) == NULL); /* not an array */

	/* Nested arrays. */
	T_CHECK(llm_gguf_get_arr(&g, "a.nested", LLM_GGUF_ARRAY, &a) == 0 && a->len == 3);
	struct llm_gguf_value in, in2;
	T_CHECK(llm_gguf_arr_elem(a, 0, &in) == 0 && in.type == LLM_GGUF_ARRAY && in.elem_type == LLM_GGUF_U32 &&
	    in.len == 2);
	T_CHECK(llm_gguf_arr_elem(&in, 1, &v) == 0 && v.num.u == 2);
	T_CHECK(llm_gguf_arr_elem(a, 1, &in) == 0 && in.elem_type == LLM_GGUF_STRING && in.len == 1);
	T_CHECK((s = llm_gguf_arr_str(&in, 0, &len)) && len == 1 && s[0] == 'p');
	T_CHECK(llm_gguf_arr_elem(a, 2, &in) == 0 && in.elem_type == LLM_GGUF_ARRAY && in.len == 1);
	T_CHECK(llm_gguf_arr_elem(&in, 0, &in2) == 0 && in2.elem_type == LLM_GGUF_I8 && in2.len == 0);
	T_CHECK(llm_gguf_arr_elem(&in2, 0, &v) == -1);
	T_CHECK(llm_gguf_arr_elem(a, 3, &in) == -1);

	T_CHECK(strcmp(llm_gguf_type_name(LLM_GGUF_F64), "f64") == 0);
	T_CHECK(strcmp(llm_gguf_type_name((enum llm_gguf_type)13), "?") == 0);
	llm_gguf_close(&g);
	T_CHECK(g.kvs == NULL && g.nkv == 0 && g.path == NULL);
	llm_gguf_close(&g); /* twice is harmless */
	llm_buf_free(&b);
	free(path);
}

T_TEST(tensor_infos_and_data)
{
	struct llm_buf b = {0};
	struct llm_gguf g;
	struct stat sb;
	const struct llm_gguf_tensor *t;

	rich_file(&b, 3);
	char *path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(invariants(&g));
	T_CHECK(g.data_start % 64 == 0 && g.data_start >= g.header_end && g.data_start - g.header_end < 64);
	T_CHECK(g.data_start + 512 + 16 == b.len && g.size == b.len);
	/* File order. */
	T_CHECK(strcmp(g.tensors[0].name, "w.q4k") == 0 && strcmp(g.tensors[5].name, "w.q8") == 0);

	T_CHECK((t = llm_gguf_find_tensor(&g, "w.f32")) != NULL);
	T_CHECK(t->ggml_type == LLM_GGML_F32 && t->dtype == LLM_DT_F32 && t->n_dims == 2);
	T_CHECK(t->ne[0] == 3 && t->ne[1] == 2 && t->ne[2] == 1 && t->ne[3] == 1);
	T_CHECK(t->shape[0] == 2 && t->shape[1] == 3);
	T_CHECK(t->nelem == 6 && t->nbytes == 24 && t->rel_offset == 0 && t->offset == g.data_start);
	T_CHECK(llm_gguf_tensor_loadable(&g, t) == 0);
	for (size_t i = 0; i < t->nbytes; i++)
		T_CHECK(((const uint8_t *)t->data)[i] == pattern_at(t->offset + i));
	T_CHECK(((uintptr_t)t->data % 64) == 0); /* mmap'ed: page-aligned base */

	T_CHECK((t = llm_gguf_find_tensor(&g, "w.f16")) && t->dtype == LLM_DT_F16 && t->nbytes == 10 &&
	    t->shape[0] == 5 && t->offset == g.data_start + 64);
	T_CHECK(llm_gguf_tensor_loadable(&g, t) == 0);
	T_CHECK((t = llm_gguf_find_tensor(&g, "w.bf16")) && t->dtype == LLM_DT_BF16 && t->nbytes == 16 &&
	    t->n_dims == 3 && t->nelem == 8);
	T_CHECK(llm_gguf_tensor_loadable(&g, t) == 0);
	T_CHECK((t = llm_gguf_find_tensor(&g, "w.4d")) && t->n_dims == 4 && t->nbytes == 16 && t->ne[0] == 1 &&
	    t->ne[1] == 2 && t->ne[2] == 1 && t->ne[3] == 2);
	T_CHECK(t->shape[0] == 2 && t->shape[1] == 1 && t->shape[2] == 2 && t->shape[3] == 1);
	for (size_t i = 0; i < t->nbytes; i++)
		T_CHECK(((const uint8_t *)t->data)[i] == pattern_at(t->offset + i));

	/* Block types: recognised, sized, loadable when quant.h decodes them;
	 * the others refused by name. */
	T_CHECK((t = llm_gguf_find_tensor(&g, "w.q8")) && t->ggml_type == LLM_GGML_Q8_0 && t->dtype == LLM_DT_NONE &&
	    t->nelem == 64 && t->nbytes == 68);
	T_CHECK(llm_gguf_tensor_loadable(&g, t) == 0);
	T_CHECK((t = llm_gguf_find_tensor(&g, "w.q4k")) && t->nbytes == 144 && t->rel_offset == 320);
	T_CHECK(llm_gguf_tensor_loadable(&g, t) == 0);
	struct llm_gguf_tensor iq = *t;
	iq.ggml_type = LLM_GGML_IQ2_XS;
	llm_setprog("llm-import");
	T_CHECK(llm_gguf_tensor_loadable(&g, &iq) == -1);
	T_CHECKF(strcmp(llm_errmsg() + strlen(path),
		     ": tensor 'w.q4k' has type IQ2_XS, which llm-import does not support (it reads "
		     "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)") == 0,
	    "%s", llm_errmsg());
	T_CHECK(llm_gguf_find_tensor(&g, "w") == NULL && llm_gguf_find_tensor(&g, "") == NULL);

	/* Source identity. */
	T_CHECK(stat(path, &sb) == 0 && g.size == (uint64_t)sb.st_size);
	T_CHECK(g.mtime_ns == (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec);
	T_CHECK(g.header_hash == llm_fnv1a(LLM_FNV_INIT, b.p, (size_t)g.header_end));
	uint64_t h = g.header_hash;
	llm_gguf_close(&g);

	/* One metadata byte changed: another hash; a data byte: the same. */
	b.p[40] ^= 1;
	free(path);
	path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(g.header_hash != h);
	llm_gguf_close(&g);
	b.p[40] ^= 1;
	b.p[b.len - 1] ^= 1;
	free(path);
	path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(g.header_hash == h);
	llm_gguf_close(&g);
	llm_buf_free(&b);
	free(path);
}

T_TEST(version_2_and_memory_open_agree)
{
	struct llm_buf b = {0};
	struct llm_gguf g, m;
	uint32_t u32;

	rich_file(&b, 2);
	char *path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECKF(llm_gguf_open_mem(&m, b.p, b.len, "mem.gguf") == 0, "%s", llm_errmsg());
	T_CHECK(g.version == 2 && m.version == 2 && invariants(&m));
	T_CHECK(strcmp(m.path, "mem.gguf") == 0 && m.mtime_ns == 0 && m.size == b.len);
	T_CHECK(m.header_hash == g.header_hash && m.data_start == g.data_start);
	T_CHECK(m.nkv == g.nkv && m.ntensors == g.ntensors);
	for (size_t i = 0; i < g.ntensors; i++) {
		T_CHECK(strcmp(m.tensors[i].name, g.tensors[i].name) == 0);
		T_CHECK(m.tensors[i].offset == g.tensors[i].offset && m.tensors[i].nbytes == g.tensors[i].nbytes);
		T_CHECK((const uint8_t *)m.tensors[i].data == (const uint8_t *)b.p + m.tensors[i].offset);
	}
	T_CHECK(llm_gguf_get_u32(&m, "t.u32", &u32) == 0 && u32 == 4000000000u);
	llm_gguf_close(&m);
	llm_gguf_close(&g);
	/* Errors from memory name the given name. */
	b.p[0] = 'X';
	T_CHECK(llm_gguf_open_mem(&m, b.p, b.len, "mem.gguf") == -1);
	T_CHECK(strncmp(llm_errmsg(), "mem.gguf: not a GGUF file", 25) == 0);
	T_CHECK(llm_gguf_open_mem(&m, NULL, 0, "none") == -1 && strstr(llm_errmsg(), "none: not a GGUF file"));
	llm_buf_free(&b);
	free(path);
}

T_TEST(default_alignment_is_32_and_no_tensors_is_fine)
{
	static const uint64_t ne[] = {4};
	struct llm_buf b = {0};
	struct llm_gguf g;

	header(&b, 3, 1, 1);
	kv(&b, "general.architecture", LLM_GGUF_STRING);
	put_str(&b, "qwen2");
	tinfo(&b, "x", 1, ne, LLM_GGML_F32, 32);
	pad_to(&b, 32);
	data(&b, 48);
	char *path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(g.alignment == 32 && g.data_start % 32 == 0 && invariants(&g));
	T_CHECK(g.tensors[0].offset == g.data_start + 32 && g.tensors[0].nbytes == 16);
	llm_gguf_close(&g);
	free(path);

	/* Metadata only (a vocabulary file): no data section needed. */
	llm_buf_free(&b);
	memset(&b, 0, sizeof(b));
	header(&b, 3, 0, 1);
	kv(&b, "tokenizer.ggml.model", LLM_GGUF_STRING);
	put_str(&b, "gpt2");
	path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(g.ntensors == 0 && g.header_end == b.len && invariants(&g));
	llm_gguf_close(&g);
	free(path);

	/* An empty file. */
	llm_buf_free(&b);
	memset(&b, 0, sizeof(b));
	path = write_buf(&b);
	T_CHECK(open_fails(path, "not a GGUF file (0 bytes)"));
	free(path);
	T_CHECK(open_fails("/nonexistent/x.gguf", "No such file"));
}

/* The standard small valid file, with one mutation named by `mut`
 * ("" for none): 3 keys, tensors "a" F32 (4, 2) and "b" F16 (8). */
static void
std_file(struct llm_buf *b, const char *mut)
{
#define M(s) (strcmp(mut, s) == 0)
	uint64_t ne_a[5] = {4, 2, 1, 1, 1}, ne_b[1] = {8};
	uint32_t nd_a = 2, type_a = LLM_GGML_F32;
	uint64_t off_b = 32, align = 32;
	const char *name_b = "b";

	if (M("magic"))
		llm_buf_add(b, "GGUX", 4);
	else
		llm_buf_add(b, "GGUF", 4);
	if (M("be"))
		put_u32(b, 0x03000000);
	else
		put_u32(b, M("v1") ? 1 : M("v4") ? 4 : M("v0") ? 0 : 3);
	put_u64(b, M("nt_lie") ? 1ull << 40 : M("nt_plus") ? 3 : M("nt_max") ? UINT64_MAX : M("nkv_plus") ? 0 : 2);
	put_u64(b, M("nkv_lie") ? 1ull << 40 : M("nkv_plus") ? 4 : M("nkv_max") ? UINT64_MAX : 3);

	if (M("key_long"))
		put_u64(b, 1ull << 62);
	else if (M("key_empty"))
		put_u64(b, 0);
	else if (M("key_nul"))
		put_strn(b, "gen\0ral", 7);
	else
		put_str(b, "general.architecture");
	put_u32(b, LLM_GGUF_STRING);
	if (M("str_long"))
		put_u64(b, 1000);
	else
		put_str(b, "llama");

	put_str(b, M("dup_key") ? "general.architecture" : "general.alignment");
	if (M("align_str")) {
		put_u32(b, LLM_GGUF_STRING);
		put_str(b, "32");
	} else if (M("align_big")) {
		put_u32(b, LLM_GGUF_U64);
		put_u64(b, 1ull << 40);
	} else if (M("align_neg")) {
		put_u32(b, LLM_GGUF_I32);
		put_u32(b, (uint32_t)-32);
	} else {
		put_u32(b, LLM_GGUF_U32);
		put_u32(b, M("align48") ? 48 : M("align0") ? 0 : (uint32_t)align);
	}

	put_str(b, "test.x");
	if (M("vtype13") || M("vtype_max")) {
		put_u32(b, M("vtype13") ? 13 : UINT32_MAX);
		put_u32(b, 7);
	} else if (M("bool2")) {
		put_u32(b, LLM_GGUF_BOOL);
		put_u8(b, 2);
	} else if (M("arr_bool2")) {
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, LLM_GGUF_BOOL, 3);
		put_u8(b, 1);
		put_u8(b, 0);
		put_u8(b, 255);
	} else if (M("arr_etype")) {
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, 13, 1);
		put_u32(b, 0);
	} else if (M("arr_lie")) {
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, LLM_GGUF_U32, 1ull << 61);
	} else if (M("arr_u64_wrap")) {
		/* count x 8 wraps to 0 in 64 bits */
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, LLM_GGUF_U64, 1ull << 61);
	} else if (M("arr_str_lie")) {
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, LLM_GGUF_STRING, 1ull << 59);
	} else if (M("arr_str_long")) {
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, LLM_GGUF_STRING, 2);
		put_str(b, "ok");
		put_u64(b, 1ull << 50);
	} else if (M("arr_arr_lie")) {
		put_u32(b, LLM_GGUF_ARRAY);
		arr(b, LLM_GGUF_ARRAY, 1ull << 58);
	} else if (M("nested_deep") || M("nested_max")) {
		int depth = M("nested_deep") ? LLM_GGUF_MAX_DEPTH + 1 : LLM_GGUF_MAX_DEPTH;
		put_u32(b, LLM_GGUF_ARRAY);
		for (int i = 1; i < depth; i++)
			arr(b, LLM_GGUF_ARRAY, 1);
		arr(b, LLM_GGUF_U8, 1);
		put_u8(b, 9);
	} else {
		put_u32(b, LLM_GGUF_U32);
		put_u32(b, 7);
	}
	if (M("nkv_plus"))
		return;

	if (M("ndims5"))
		nd_a = 5;
	if (M("ndims0"))
		nd_a = 0;
	if (M("ndims_max"))
		nd_a = UINT32_MAX;
	if (M("dim0"))
		ne_a[1] = 0;
	if (M("dim_overflow"))
		ne_a[0] = ne_a[1] = 1ull << 32;
	if (M("dim_huge"))
		ne_a[0] = UINT64_MAX;
	if (M("bytes_overflow"))
		ne_a[0] = ne_a[1] = 1ull << 31;
	if (M("ttype99"))
		type_a = 99;
	if (M("ttype4"))
		type_a = 4;
	if (M("ttype31"))
		type_a = 31;
	if (M("q8_row"))
		type_a = LLM_GGML_Q8_0;
	if (M("overlap"))
		off_b = 0;
	if (M("off_unaligned"))
		off_b = 48;
	if (M("off_outside"))
		off_b = 1ull << 40;
	if (M("off_wrap"))
		off_b = UINT64_MAX - 31;
	if (M("dup_name"))
		name_b = "a";
	if (M("name_long"))
		put_str(b, "a234567890123456789012345678901234567890123456789012345678901234X");
	else if (M("name_empty"))
		put_u64(b, 0);
	else if (M("name_nul"))
		put_strn(b, "a\0", 2);
	else
		put_str(b, "a");
	put_u32(b, nd_a);
	for (uint32_t i = 0; i < nd_a && i < 5; i++)
		put_u64(b, ne_a[i]);
	put_u32(b, type_a);
	put_u64(b, 0);
	tinfo(b, name_b, 1, ne_b, LLM_GGML_F16, off_b);
	if (M("no_data") || M("nt_plus"))
		return;
	pad_to(b, 32);
	data(b, M("data_short") ? 47 : 48);
#undef M
}

T_TEST(standard_file_is_valid)
{
	struct llm_buf b = {0};
	struct llm_gguf g;
	char *arch;

	std_file(&b, "");
	char *path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(invariants(&g) && g.ntensors == 2 && g.nkv == 3);
	T_CHECK(llm_gguf_get_strdup(&g, "general.architecture", &arch) == 0 && strcmp(arch, "llama") == 0);
	T_CHECK(g.data_start + 48 == b.len);
	free(arch);
	llm_gguf_close(&g);
	free(path);
	llm_buf_free(&b);
	/* The mutations that are still valid files. */
	memset(&b, 0, sizeof(b));
	std_file(&b, "nested_max");
	path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(invariants(&g));
	llm_gguf_close(&g);
	free(path);
	llm_buf_free(&b);
}

T_TEST(every_bad_file_is_rejected)
{
	static const struct {
		const char *mut, *want;
	} cases[] = {
		{"magic", "not a GGUF file (magic 47 47 55 58, want 'GGUF')"},
		{"v1", "GGUF version 1 is not supported (versions 2 and 3 are)"},
		{"v0", "unsupported GGUF version 0"},
		{"v4", "unsupported GGUF version 4"},
		{"be", "big-endian GGUF file (version 3): only little-endian files are supported"},
		{"nt_lie", "header claims 3 metadata entries and 1099511627776 tensors, more than the"},
		{"nt_max", "and 18446744073709551615 tensors, more than the"},
		{"nkv_lie", "header claims 1099511627776 metadata entries"},
		{"nkv_max", "header claims 18446744073709551615 metadata entries"},
		{"nkv_plus", "metadata entry 3: truncated: key"},
		{"nt_plus", "header claims 3 tensors, more than the 74 bytes after the metadata can hold"},
		{"key_long", "metadata entry 0: key at offset 24 is 4611686018427387904 bytes long"},
		{"key_empty", "metadata entry 0: empty key at offset 24"},
		{"key_nul", "metadata entry 0: key 'gen\\x00ral' at offset 24 holds a NUL byte"},
		{"str_long", "key 'general.architecture': string at offset 56 is 1000 bytes long, the file has"},
		{"dup_key", "duplicate key 'general.architecture' at offsets 24 and"},
		{"vtype13", "key 'test.x': unknown value type 13 at offset"},
		{"vtype_max", "key 'test.x': unknown value type 4294967295"},
		{"bool2", "key 'test.x': bool at offset"},
		{"arr_bool2", "is 255, neither 0 nor 1"},
		{"arr_etype", "key 'test.x': array at offset"},
		{"arr_lie", "of 2305843009213693952 u32 elements needs more than the"},
		{"arr_u64_wrap", "of 2305843009213693952 u64 elements needs more than the"},
		{"arr_str_lie", "of 576460752303423488 strings needs more than the"},
		{"arr_str_long", "array string at offset"},
		{"arr_arr_lie", "of 288230376151711744 arrays needs more than the"},
		{"nested_deep", "nested deeper than 8 levels"},
		{"align48", "key 'general.alignment': 48 is not a power of two"},
		{"align0", "key 'general.alignment': 0 is not a power of two"},
		{"align_big", "key 'general.alignment': 1099511627776 is not a power of two that fits in u32"},
		{"align_str", "key 'general.alignment': value is a string, not an integer"},
		{"align_neg", "key 'general.alignment': i32 value -32 is negative"},
		{"ndims5", "tensor 'a': 5 dimensions at offset"},
		{"ndims0", "tensor 'a': 0 dimensions at offset"},
		{"ndims_max", "tensor 'a': 4294967295 dimensions"},
		{"dim0", "tensor 'a': dimension 1 at offset"},
		{"dim_overflow", "tensor 'a': element count overflows at dimension 1"},
		{"dim_huge", "tensor 'a': element count overflows at dimension 0"},
		{"bytes_overflow", "tensor 'a': byte size overflows"},
		{"ttype99", "tensor 'a': unknown ggml type 99 at offset"},
		{"ttype4", "tensor 'a': unknown ggml type 4"},
		{"ttype31", "tensor 'a': unknown ggml type 31"},
		{"q8_row", "tensor 'a': rows of 4 elements are not whole Q8_0 blocks of 32"},
		{"off_unaligned", "tensor 'b': data offset 48 (at offset"},
		{"off_outside", "tensor 'b': data [1099511627776, +16) lies outside the data section (48 bytes"},
		{"off_wrap", "tensor 'b': data [18446744073709551584, +16) lies outside"},
		{"data_short", "tensor 'b': data [32, +16) lies outside the data section (47 bytes"},
		{"overlap", "tensors 'b' and 'a' overlap"},
		{"dup_name", "duplicate tensor name 'a'"},
		{"name_long", "is 65 bytes long (at most 64 allowed)"},
		{"name_empty", "tensor info 0: empty tensor name at offset"},
		{"name_nul", "tensor info 0: tensor name 'a\\x00' at offset"},
		{"no_data", "the data section would start at offset"},
	};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		struct llm_buf b = {0};
		std_file(&b, cases[i].mut);
		T_CHECKF(buf_fails(&b, cases[i].want), "mutation '%s'", cases[i].mut);
		llm_buf_free(&b);
	}
}

T_TEST(names_in_messages_are_escaped_and_cut)
{
	struct llm_buf b = {0};
	char key[200];

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	key[3] = '\n';
	key[4] = '\'';
	header(&b, 3, 0, 1);
	kv(&b, key, 13);
	put_u8(&b, 0);
	T_CHECK(buf_fails(&b, "key 'kkk\\x0a\\x27kkk"));
	T_CHECK(strstr(llm_errmsg(), "kkk...': unknown value type 13"));
	llm_buf_free(&b);
}

T_TEST(every_truncation_fails_cleanly)
{
	struct llm_buf b = {0};

	rich_file(&b, 3);
	for (size_t n = 0; n < b.len; n++) {
		char *path = write_raw("trunc.gguf", b.p, n);
		struct llm_gguf g;
		int rc = llm_gguf_open(&g, path);
		if (rc == 0)
			llm_gguf_close(&g);
		T_CHECKF(rc == -1, "%zu of %zu bytes opened", n, b.len);
		T_CHECKF(strncmp(llm_errmsg(), path, strlen(path)) == 0 && !strchr(llm_errmsg(), '\n'), "%s",
		    llm_errmsg());
		free(path);
	}
	llm_buf_free(&b);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Walk every value the way a caller would, touching every byte the reader
 * hands out (ASan checks the bounds in SANITIZE=1 builds). */
static unsigned
touch_value(const struct llm_gguf_value *v)
{
	unsigned sum = 0;
	struct llm_gguf_value e;

	if (v->type == LLM_GGUF_STRING)
		for (uint64_t i = 0; i < v->len; i++)
			sum += (unsigned char)v->str[i];
	if (v->type == LLM_GGUF_ARRAY)
		for (uint64_t i = 0; i < v->len; i++)
			if (llm_gguf_arr_elem(v, i, &e) == 0)
				sum += touch_value(&e) + (unsigned)e.num.u;
	return sum;
}

T_TEST(random_corruption_never_escapes_the_file)
{
	struct llm_buf b = {0};
	int opened = 0, failed = 0;
	unsigned sum = 0;

	rich_file(&b, 3);
	for (int iter = 0; iter < 20000; iter++) {
		struct llm_gguf g;
		/* Exactly len bytes, so that ASan sees any read past them. */
		size_t len = next_rand() % 8 == 0 ? (size_t)(next_rand() % b.len) : b.len;
		uint8_t *copy = llm_xmalloc(len);
		memcpy(copy, b.p, len);
		int nflip = len ? 1 + (int)(next_rand() % 4) : 0;
		for (int k = 0; k < nflip; k++) {
			size_t at = (size_t)(next_rand() % len);
			/* Mostly small integers and 0xff runs: lengths and counts. */
			/* one case a line */
			/* clang-format off */
			switch (next_rand() % 3) {
			case 0: copy[at] = (uint8_t)next_rand(); break;
			case 1: copy[at] ^= (uint8_t)(1u << (next_rand() % 8)); break;
			default: copy[at] = 0xff; break;
			}
			/* clang-format on */
		}
		if (llm_gguf_open_mem(&g, copy, len, "corrupt.gguf") == 0) {
			opened++;
			T_CHECKF(invariants(&g), "iteration %d", iter);
			for (size_t i = 0; i < g.nkv; i++)
				sum += touch_value(&g.kvs[i].value);
			for (size_t i = 0; i < g.ntensors; i++)
				for (size_t j = 0; j < g.tensors[i].nbytes; j++)
					sum += ((const uint8_t *)g.tensors[i].data)[j];
			llm_gguf_close(&g);
		} else {
			failed++;
			T_CHECKF(strncmp(llm_errmsg(), "corrupt.gguf: ", 14) == 0 && !strchr(llm_errmsg(), '\n'), "%s",
			    llm_errmsg());
		}
		free(copy);
	}
	/* Both outcomes happen: the corruption is neither too weak nor too
	 * strong to test anything. */
	T_CHECKF(opened > 100 && failed > 100, "opened %d, failed %d (sum %u)", opened, failed, sum);
	llm_buf_free(&b);
}

T_TEST(many_keys_and_tensors_are_found_by_binary_search)
{
	struct llm_buf b = {0};
	struct llm_gguf g;
	enum { N = 300 };
	uint64_t ne[] = {8};
	char name[32];

	header(&b, 3, N, N);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "k.%d", (i * 7919) % N);
		kv(&b, name, LLM_GGUF_I32);
		put_u32(&b, (uint32_t)((i * 7919) % N));
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "t.%d", (i * 104729) % N);
		tinfo(&b, name, 1, ne, LLM_GGML_F32, (uint64_t)(N - 1 - i) * 32);
	}
	pad_to(&b, 32);
	data(&b, N * 32);
	char *path = write_buf(&b);
	T_CHECKF(llm_gguf_open(&g, path) == 0, "%s", llm_errmsg());
	T_CHECK(invariants(&g));
	for (int i = 0; i < N; i++) {
		int32_t v;
		snprintf(name, sizeof(name), "k.%d", i);
		T_CHECK(llm_gguf_get_i32(&g, name, &v) == 0 && v == i);
		snprintf(name, sizeof(name), "t.%d", i);
		T_CHECK(llm_gguf_find_tensor(&g, name) != NULL);
	}
	llm_gguf_close(&g);
	llm_buf_free(&b);
	free(path);
}

/* The smallest headers.  (The fuzzer, tests/fuzz/README, has found no
 * crash so far; an input that ever crashes it goes here.) */
T_TEST(tiny_headers)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *want; /* NULL: opens */
	} cases[] = {
		{"GGU", 3, "fz: not a GGUF file (3 bytes)"},
		{"GGUF", 4, "fz: header: truncated: version at offset 4 needs 4 bytes, the file has 0 left"},
		{"GGUF\3\0\0\0", 8, "fz: header: truncated: tensor count at offset 8"},
		{"GGUF\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16, "fz: header: truncated: metadata count"},
		{"GGUF\2\0\0\0\0\0\0\0\0\0\0\0\1\0\0\0\0\0\0\0", 24,
			"fz: header claims 1 metadata entries and 0 tensors, more than the 24-byte file can hold"},
		{"GGUF\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 24, NULL},
	};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		struct llm_gguf g;
		int rc = llm_gguf_open_mem(&g, cases[i].bytes, cases[i].len, "fz");
		if (!cases[i].want) {
			T_CHECKF(rc == 0, "%s", llm_errmsg());
			T_CHECK(g.nkv == 0 && g.ntensors == 0 && g.alignment == 32 && g.header_end == 24);
			T_CHECK(llm_gguf_find_kv(&g, "x") == NULL && llm_gguf_find_tensor(&g, "x") == NULL);
			llm_gguf_close(&g);
			continue;
		}
		T_CHECK(rc == -1);
		T_CHECKF(strncmp(llm_errmsg(), cases[i].want, strlen(cases[i].want)) == 0, "%s", llm_errmsg());
	}
}

/* The real stories260K model (see ../shared/fixtures/README.md). */
T_TEST(stories260k)
{
	static const char *per_layer[] = {
		"attn_q",
		"attn_k",
		"attn_v",
		"attn_output",
		"attn_norm",
		"ffn_gate",
		"ffn_down",
		"ffn_up",
		"ffn_norm",
	};
	/* a table */
	/* clang-format off */
	static const int64_t shapes[][2] = {
		{64, 64}, {32, 64}, {32, 64}, {64, 64}, {64, 0},
		{172, 64}, {64, 172}, {172, 64}, {64, 0},
	};
	/* clang-format on */
	struct llm_gguf g;
	const struct llm_gguf_value *a;
	const struct llm_gguf_tensor *t;
	uint32_t u;
	float f;
	char *s;
	const char *p;
	size_t len;
	uint64_t total = 0;

	if (access(STORIES, R_OK) != 0) {
		printf("test_gguf: skipped stories260k: %s not found\n", STORIES);
		return;
	}
	T_CHECKF(llm_gguf_open(&g, STORIES) == 0, "%s", llm_errmsg());
	T_CHECK(g.version == 3 && g.alignment == 32 && g.ntensors == 48 && g.nkv == 19);
	T_CHECK(invariants(&g));
	T_CHECK(llm_gguf_get_strdup(&g, "general.architecture", &s) == 0 && strcmp(s, "llama") == 0);
	free(s);
	T_CHECK(llm_gguf_get_u32(&g, "llama.block_count", &u) == 0 && u == 5);
	T_CHECK(llm_gguf_get_u32(&g, "llama.embedding_length", &u) == 0 && u == 64);
	T_CHECK(llm_gguf_get_u32(&g, "llama.feed_forward_length", &u) == 0 && u == 172);
	T_CHECK(llm_gguf_get_u32(&g, "llama.attention.head_count", &u) == 0 && u == 8);
	T_CHECK(llm_gguf_get_u32(&g, "llama.attention.head_count_kv", &u) == 0 && u == 4);
	T_CHECK(llm_gguf_get_u32(&g, "llama.context_length", &u) == 0 && u == 2048);
	T_CHECK(llm_gguf_get_f32(&g, "llama.attention.layer_norm_rms_epsilon", &f) == 0 && f == 1e-5f);
	T_CHECK(llm_gguf_get_f32(&g, "llama.rope.freq_base", &f) == 1); /* absent: 10000 */
	T_CHECK(llm_gguf_get_str(&g, "tokenizer.ggml.model", &p, &len) == 0 && len == 5 && memcmp(p, "llama", 5) == 0);
	T_CHECK(llm_gguf_get_u32(&g, "tokenizer.ggml.bos_token_id", &u) == 0 && u == 1);
	T_CHECK(llm_gguf_get_u32(&g, "tokenizer.ggml.eos_token_id", &u) == 0 && u == 2);
	T_CHECK(llm_gguf_get_arr(&g, "tokenizer.ggml.tokens", LLM_GGUF_STRING, &a) == 0 && a->len == 512);
	T_CHECK((p = llm_gguf_arr_str(a, 1, &len)) && len == 3 && memcmp(p, "<s>", 3) == 0);
	T_CHECK((p = llm_gguf_arr_str(a, 2, &len)) && len == 4 && memcmp(p, "</s>", 4) == 0);
	/* Byte tokens at ids 3..258. */
	T_CHECK((p = llm_gguf_arr_str(a, 3, &len)) && len == 6 && memcmp(p, "<0x00>", 6) == 0);
	T_CHECK((p = llm_gguf_arr_str(a, 258, &len)) && len == 6 && memcmp(p, "<0xFF>", 6) == 0);
	T_CHECK(llm_gguf_get_arr(&g, "tokenizer.ggml.scores", LLM_GGUF_F32, &a) == 0 && a->len == 512);
	T_CHECK(llm_gguf_get_arr(&g, "tokenizer.ggml.token_type", LLM_GGUF_I32, &a) == 0 && a->len == 512);

	T_CHECK((t = llm_gguf_find_tensor(&g, "token_embd.weight")) && t->n_dims == 2 && t->shape[0] == 512 &&
	    t->shape[1] == 64 && t->ne[0] == 64);
	T_CHECK((t = llm_gguf_find_tensor(&g, "output_norm.weight")) && t->n_dims == 1 && t->shape[0] == 64);
	T_CHECK((t = llm_gguf_find_tensor(&g, "output.weight")) && t->shape[0] == 512 && t->shape[1] == 64);
	for (int l = 0; l < 5; l++)
		for (size_t k = 0; k < LLM_NELEM(per_layer); k++) {
			char name[64];
			snprintf(name, sizeof(name), "blk.%d.%s.weight", l, per_layer[k]);
			t = llm_gguf_find_tensor(&g, name);
			T_CHECKF(t, "no tensor %s", name);
			T_CHECKF(t->n_dims == (shapes[k][1] ? 2 : 1) && t->shape[0] == shapes[k][0] &&
				(!shapes[k][1] || t->shape[1] == shapes[k][1]),
			    "%s", name);
		}
	for (size_t i = 0; i < g.ntensors; i++) {
		t = &g.tensors[i];
		T_CHECKF(t->ggml_type == LLM_GGML_F32 && t->dtype == LLM_DT_F32, "%s", t->name);
		T_CHECK(llm_gguf_tensor_loadable(&g, t) == 0);
		T_CHECK((uintptr_t)t->data % 32 == 0);
		const float *w = t->data;
		for (uint64_t j = 0; j < t->nelem; j++)
			T_CHECKF(isfinite(w[j]), "%s[%llu]", t->name, (unsigned long long)j);
		total += t->nbytes;
	}
	/* The tensors tile the data section exactly. */
	T_CHECK(g.data_start + total == g.size);
	llm_gguf_close(&g);
}

int
main(void)
{
	T_RUN(every_metadata_type_reads_back);
	T_RUN(tensor_infos_and_data);
	T_RUN(version_2_and_memory_open_agree);
	T_RUN(default_alignment_is_32_and_no_tensors_is_fine);
	T_RUN(standard_file_is_valid);
	T_RUN(every_bad_file_is_rejected);
	T_RUN(names_in_messages_are_escaped_and_cut);
	T_RUN(every_truncation_fails_cleanly);
	T_RUN(random_corruption_never_escapes_the_file);
	T_RUN(many_keys_and_tensors_are_found_by_binary_search);
	T_RUN(tiny_headers);
	T_RUN(stories260k);
	return T_DONE();
}
