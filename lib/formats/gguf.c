/* gguf.c: see gguf.h.
 *
 * The parser reads through a bounds-checked cursor over the mapping, so a
 * truncated or hostile file gives a one-line error naming the file and the
 * byte offset, never a read outside the mapping.  Counts come from the
 * file and are checked against the bytes left before anything is
 * allocated: every key, string, array element and tensor info takes a
 * known minimum number of bytes, so the memory used is bounded by a small
 * multiple of the file size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "gguf.h"
#include "quant.h"

/* Tensor data is handed out in place, as little-endian bytes. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "lib/formats/gguf.c supports little-endian hosts only");

#define MIN_KV_BYTES 14     /* u64 key length, 1-byte key, u32 type, 1-byte value */
#define MIN_TENSOR_BYTES 33 /* u64 name length, 1-byte name, u32 n_dims, u64 ne,
                             * u32 type, u64 offset */
#define MAX_KEY 65535       /* the spec's limit on key length */

/* ggml types: name, elements per block, bytes per block. */
static const struct {
	const char *name;
	uint32_t blck, size;
} ggml_types[LLM_GGML_NTYPES] = {
	[LLM_GGML_F32] = {"F32", 1, 4},
	[LLM_GGML_F16] = {"F16", 1, 2},
	[LLM_GGML_Q4_0] = {"Q4_0", 32, 18},
	[LLM_GGML_Q4_1] = {"Q4_1", 32, 20},
	[LLM_GGML_Q5_0] = {"Q5_0", 32, 22},
	[LLM_GGML_Q5_1] = {"Q5_1", 32, 24},
	[LLM_GGML_Q8_0] = {"Q8_0", 32, 34},
	[LLM_GGML_Q8_1] = {"Q8_1", 32, 36},
	[LLM_GGML_Q2_K] = {"Q2_K", 256, 84},
	[LLM_GGML_Q3_K] = {"Q3_K", 256, 110},
	[LLM_GGML_Q4_K] = {"Q4_K", 256, 144},
	[LLM_GGML_Q5_K] = {"Q5_K", 256, 176},
	[LLM_GGML_Q6_K] = {"Q6_K", 256, 210},
	[LLM_GGML_Q8_K] = {"Q8_K", 256, 292},
	[LLM_GGML_IQ2_XXS] = {"IQ2_XXS", 256, 66},
	[LLM_GGML_IQ2_XS] = {"IQ2_XS", 256, 74},
	[LLM_GGML_IQ3_XXS] = {"IQ3_XXS", 256, 98},
	[LLM_GGML_IQ1_S] = {"IQ1_S", 256, 50},
	[LLM_GGML_IQ4_NL] = {"IQ4_NL", 32, 18},
	[LLM_GGML_IQ3_S] = {"IQ3_S", 256, 110},
	[LLM_GGML_IQ2_S] = {"IQ2_S", 256, 82},
	[LLM_GGML_IQ4_XS] = {"IQ4_XS", 256, 136},
	[LLM_GGML_I8] = {"I8", 1, 1},
	[LLM_GGML_I16] = {"I16", 1, 2},
	[LLM_GGML_I32] = {"I32", 1, 4},
	[LLM_GGML_I64] = {"I64", 1, 8},
	[LLM_GGML_F64] = {"F64", 1, 8},
	[LLM_GGML_IQ1_M] = {"IQ1_M", 256, 56},
	[LLM_GGML_BF16] = {"BF16", 1, 2},
	[LLM_GGML_TQ1_0] = {"TQ1_0", 256, 54},
	[LLM_GGML_TQ2_0] = {"TQ2_0", 256, 66},
	[LLM_GGML_MXFP4] = {"MXFP4", 32, 17},
	[LLM_GGML_NVFP4] = {"NVFP4", 64, 36},
	[LLM_GGML_Q1_0] = {"Q1_0", 128, 18},
	[LLM_GGML_Q2_0] = {"Q2_0", 64, 18},
};

/* Metadata value types: name and size (0: variable). */
static const struct {
	const char *name;
	size_t size;
} value_types[LLM_GGUF_NTYPES] = {
	[LLM_GGUF_U8] = {"u8", 1},
	[LLM_GGUF_I8] = {"i8", 1},
	[LLM_GGUF_U16] = {"u16", 2},
	[LLM_GGUF_I16] = {"i16", 2},
	[LLM_GGUF_U32] = {"u32", 4},
	[LLM_GGUF_I32] = {"i32", 4},
	[LLM_GGUF_F32] = {"f32", 4},
	[LLM_GGUF_BOOL] = {"bool", 1},
	[LLM_GGUF_STRING] = {"string", 0},
	[LLM_GGUF_ARRAY] = {"array", 0},
	[LLM_GGUF_U64] = {"u64", 8},
	[LLM_GGUF_I64] = {"i64", 8},
	[LLM_GGUF_F64] = {"f64", 8},
};

const char *
llm_gguf_type_name(enum llm_gguf_type t)
{
	return (unsigned)t < LLM_GGUF_NTYPES ? value_types[t].name : "?";
}

const char *
llm_ggml_type_name(uint32_t t)
{
	return t < LLM_GGML_NTYPES && ggml_types[t].name ? ggml_types[t].name : "?";
}

int64_t
llm_ggml_type_by_name(const char *s)
{
	for (uint32_t t = 0; t < LLM_GGML_NTYPES; t++)
		if (ggml_types[t].name && strcasecmp(ggml_types[t].name, s) == 0)
			return t;
	return -1;
}

int
llm_ggml_type_block(uint32_t t, uint32_t *blck, uint32_t *size)
{
	if (t >= LLM_GGML_NTYPES || !ggml_types[t].name)
		return 0;
	*blck = ggml_types[t].blck;
	*size = ggml_types[t].size;
	return 1;
}

static enum llm_dtype
dtype_of(uint32_t t)
{
	/* one case a line */
	/* clang-format off */
	switch (t) {
	case LLM_GGML_F32: return LLM_DT_F32;
	case LLM_GGML_F16: return LLM_DT_F16;
	case LLM_GGML_BF16: return LLM_DT_BF16;
	case LLM_GGML_F64: return LLM_DT_F64;
	case LLM_GGML_I8: return LLM_DT_I8;
	case LLM_GGML_I16: return LLM_DT_I16;
	case LLM_GGML_I32: return LLM_DT_I32;
	case LLM_GGML_I64: return LLM_DT_I64;
	default: return LLM_DT_NONE;
	}
	/* clang-format on */
}

/* A name from the file, fit for a one-line message: control bytes,
 * quotes and backslashes escaped, long names cut. */
static const char *
shown(char *buf, size_t n, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 8 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (i == 64) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\')
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return buf;
}

/* The parse state: a cursor over the file and the context of the item
 * being read, for messages ("key 'x'", "tensor 'y'"). */
struct rd {
	const uint8_t *p;
	uint64_t len, pos;
	const char *path;
	char ctx[200];
};

static uint64_t
left(const struct rd *r)
{
	return r->len - r->pos;
}

/* n more bytes must be there for `what`. */
static int
need(struct rd *r, uint64_t n, const char *what)
{
	if (n <= left(r))
		return 0;
	return llm_seterr("%s: %s: truncated: %s at offset %llu needs %llu bytes, "
			  "the file has %llu left",
	    r->path, r->ctx, what, (unsigned long long)r->pos, (unsigned long long)n, (unsigned long long)left(r));
}

static int
rd_u32(struct rd *r, uint32_t *v, const char *what)
{
	if (need(r, 4, what) < 0)
		return -1;
	*v = (uint32_t)llm_get_le(r->p + r->pos, 4);
	r->pos += 4;
	return 0;
}

static int
rd_u64(struct rd *r, uint64_t *v, const char *what)
{
	if (need(r, 8, what) < 0)
		return -1;
	*v = llm_get_le(r->p + r->pos, 8);
	r->pos += 8;
	return 0;
}

/* A string: u64 length, then that many bytes. */
static int
rd_str(struct rd *r, const char **s, uint64_t *len, const char *what)
{
	uint64_t at = r->pos;

	if (rd_u64(r, len, what) < 0)
		return -1;
	if (*len > left(r))
		return llm_seterr("%s: %s: %s at offset %llu is %llu bytes long, "
				  "the file has %llu left",
		    r->path, r->ctx, what, (unsigned long long)at, (unsigned long long)*len,
		    (unsigned long long)left(r));
	*s = (const char *)r->p + r->pos;
	r->pos += *len;
	return 0;
}

static double
f32_at(const uint8_t *p)
{
	uint32_t u = (uint32_t)llm_get_le(p, 4);
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static double
f64_at(const uint8_t *p)
{
	uint64_t u = llm_get_le(p, 8);
	double f;
	memcpy(&f, &u, 8);
	return f;
}

/* Decode a scalar of type t at p into v (no bounds check: the caller made
 * sure of the bytes). */
static void
scalar_at(struct llm_gguf_value *v, enum llm_gguf_type t, const uint8_t *p)
{
	memset(v, 0, sizeof(*v));
	v->type = t;
	/* one case a line */
	/* clang-format off */
	switch (t) {
	case LLM_GGUF_U8: case LLM_GGUF_BOOL: v->num.u = p[0]; break;
	case LLM_GGUF_I8: v->num.i = (int8_t)p[0]; break;
	case LLM_GGUF_U16: v->num.u = llm_get_le(p, 2); break;
	case LLM_GGUF_I16: v->num.i = (int16_t)llm_get_le(p, 2); break;
	case LLM_GGUF_U32: v->num.u = llm_get_le(p, 4); break;
	case LLM_GGUF_I32: v->num.i = (int32_t)llm_get_le(p, 4); break;
	case LLM_GGUF_U64: v->num.u = llm_get_le(p, 8); break;
	case LLM_GGUF_I64: v->num.i = (int64_t)llm_get_le(p, 8); break;
	case LLM_GGUF_F32: v->num.f = f32_at(p); break;
	case LLM_GGUF_F64: v->num.f = f64_at(p); break;
	default: break;
	}
	/* clang-format on */
}

static void
free_value(struct llm_gguf_value *v)
{
	if (v->elems)
		for (uint64_t i = 0; i < v->len; i++)
			free_value(&v->elems[i]);
	free(v->elems);
	free(v->strs);
	v->elems = NULL;
	v->strs = NULL;
}

static int read_value(struct rd *r, enum llm_gguf_type t, struct llm_gguf_value *v, int depth);

static int
bad_bool(struct rd *r, uint64_t at, unsigned b)
{
	return llm_seterr("%s: %s: bool at offset %llu is %u, neither 0 nor 1", r->path, r->ctx, (unsigned long long)at,
	    b);
}

/* An array's body: u32 element type, u64 count, the elements.  depth is
 * the nesting level of this array (1 for a top-level array). */
static int
read_array(struct rd *r, struct llm_gguf_value *v, int depth)
{
	uint64_t at = r->pos, n;
	uint32_t et;

	if (rd_u32(r, &et, "array element type") < 0 || rd_u64(r, &n, "array length") < 0)
		return -1;
	if (et >= LLM_GGUF_NTYPES)
		return llm_seterr("%s: %s: array at offset %llu has unknown element type %u", r->path, r->ctx,
		    (unsigned long long)at, et);
	v->elem_type = et;
	v->data = r->p + r->pos;
	if (value_types[et].size) {
		size_t sz = value_types[et].size;
		if (n > left(r) / sz)
			return llm_seterr("%s: %s: array at offset %llu of %llu %s elements "
					  "needs more than the %llu bytes left in the file",
			    r->path, r->ctx, (unsigned long long)at, (unsigned long long)n, value_types[et].name,
			    (unsigned long long)left(r));
		if (et == LLM_GGUF_BOOL)
			for (uint64_t i = 0; i < n; i++)
				if (r->p[r->pos + i] > 1)
					return bad_bool(r, r->pos + i, r->p[r->pos + i]);
		v->elem_size = sz;
		v->len = n;
		r->pos += n * sz;
		return 0;
	}
	if (et == LLM_GGUF_STRING) {
		/* Each string takes at least its 8-byte length. */
		if (n > left(r) / 8)
			return llm_seterr("%s: %s: array at offset %llu of %llu strings needs "
					  "more than the %llu bytes left in the file",
			    r->path, r->ctx, (unsigned long long)at, (unsigned long long)n,
			    (unsigned long long)left(r));
		v->strs = llm_xreallocarray(NULL, n ? n : 1, sizeof(*v->strs));
		v->len = n;
		for (uint64_t i = 0; i < n; i++) {
			const char *s;
			uint64_t len;
			v->strs[i] = r->p + r->pos;
			if (rd_str(r, &s, &len, "array string") < 0)
				return -1;
		}
		return 0;
	}
	/* An array of arrays: each takes at least 12 bytes (type, count). */
	if (depth >= LLM_GGUF_MAX_DEPTH)
		return llm_seterr("%s: %s: arrays at offset %llu nested deeper than %d levels", r->path, r->ctx,
		    (unsigned long long)at, LLM_GGUF_MAX_DEPTH);
	if (n > left(r) / 12)
		return llm_seterr("%s: %s: array at offset %llu of %llu arrays needs more "
				  "than the %llu bytes left in the file",
		    r->path, r->ctx, (unsigned long long)at, (unsigned long long)n, (unsigned long long)left(r));
	v->elems = llm_xcalloc(n ? n : 1, sizeof(*v->elems));
	v->len = n;
	for (uint64_t i = 0; i < n; i++)
		if (read_value(r, LLM_GGUF_ARRAY, &v->elems[i], depth + 1) < 0)
			return -1;
	return 0;
}

/* A value of type t (already read).  On failure v may hold allocations:
 * the caller frees it. */
static int
read_value(struct rd *r, enum llm_gguf_type t, struct llm_gguf_value *v, int depth)
{
	uint64_t at = r->pos;

	memset(v, 0, sizeof(*v));
	v->type = t;
	if (t == LLM_GGUF_STRING)
		return rd_str(r, &v->str, &v->len, "string");
	if (t == LLM_GGUF_ARRAY)
		return read_array(r, v, depth);
	if (need(r, value_types[t].size, value_types[t].name) < 0)
		return -1;
	scalar_at(v, t, r->p + r->pos);
	r->pos += value_types[t].size;
	if (t == LLM_GGUF_BOOL && v->num.u > 1)
		return bad_bool(r, at, (unsigned)v->num.u);
	return 0;
}

static int
cmp_kv(const void *a, const void *b)
{
	return strcmp((*(struct llm_gguf_kv *const *)a)->key, (*(struct llm_gguf_kv *const *)b)->key);
}

static int
cmp_tensor_name(const void *a, const void *b)
{
	return strcmp((*(struct llm_gguf_tensor *const *)a)->name, (*(struct llm_gguf_tensor *const *)b)->name);
}

static int
cmp_tensor_offset(const void *a, const void *b)
{
	const struct llm_gguf_tensor *x = *(struct llm_gguf_tensor *const *)a;
	const struct llm_gguf_tensor *y = *(struct llm_gguf_tensor *const *)b;
	if (x->rel_offset != y->rel_offset)
		return x->rel_offset < y->rel_offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* A key or tensor name: non-empty, at most max bytes, no NUL; returns a
 * NUL-terminated copy in *out. */
static int
rd_name(struct rd *r, char **out, size_t max, const char *what)
{
	uint64_t at = r->pos, len;
	const char *s;
	char b[300];

	if (rd_str(r, &s, &len, what) < 0)
		return -1;
	if (len == 0)
		return llm_seterr("%s: %s: empty %s at offset %llu", r->path, r->ctx, what, (unsigned long long)at);
	if (len > max)
		return llm_seterr("%s: %s: %s '%s' at offset %llu is %llu bytes long "
				  "(at most %zu allowed)",
		    r->path, r->ctx, what, shown(b, sizeof(b), s, (size_t)len), (unsigned long long)at,
		    (unsigned long long)len, max);
	if (memchr(s, 0, (size_t)len))
		return llm_seterr("%s: %s: %s '%s' at offset %llu holds a NUL byte", r->path, r->ctx, what,
		    shown(b, sizeof(b), s, (size_t)len), (unsigned long long)at);
	*out = llm_xmalloc((size_t)len + 1);
	memcpy(*out, s, (size_t)len);
	(*out)[len] = 0;
	return 0;
}

static int
read_kvs(struct llm_gguf *g, struct rd *r)
{
	char b[300];

	for (size_t i = 0; i < g->nkv; i++) {
		struct llm_gguf_kv *kv = &g->kvs[i];
		uint32_t t;

		kv->pos = r->pos;
		snprintf(r->ctx, sizeof(r->ctx), "metadata entry %zu", i);
		if (rd_name(r, &kv->key, MAX_KEY, "key") < 0)
			return -1;
		snprintf(r->ctx, sizeof(r->ctx), "key '%s'", shown(b, sizeof(b), kv->key, strlen(kv->key)));
		if (rd_u32(r, &t, "value type") < 0)
			return -1;
		if (t >= LLM_GGUF_NTYPES)
			return llm_seterr("%s: %s: unknown value type %u at offset %llu", r->path, r->ctx, t,
			    (unsigned long long)(r->pos - 4));
		if (read_value(r, t, &kv->value, 1) < 0)
			return -1;
	}
	g->kv_sorted = llm_xreallocarray(NULL, g->nkv ? g->nkv : 1, sizeof(*g->kv_sorted));
	for (size_t i = 0; i < g->nkv; i++)
		g->kv_sorted[i] = &g->kvs[i];
	qsort(g->kv_sorted, g->nkv, sizeof(*g->kv_sorted), cmp_kv);
	for (size_t i = 1; i < g->nkv; i++)
		if (strcmp(g->kv_sorted[i]->key, g->kv_sorted[i - 1]->key) == 0) {
			const struct llm_gguf_kv *a = g->kv_sorted[i - 1], *c = g->kv_sorted[i];
			if (a->pos > c->pos) {
				const struct llm_gguf_kv *x = a;
				a = c;
				c = x;
			}
			return llm_seterr("%s: duplicate key '%s' at offsets %llu and %llu", r->path,
			    shown(b, sizeof(b), a->key, strlen(a->key)), (unsigned long long)a->pos,
			    (unsigned long long)c->pos);
		}
	return 0;
}

static int key_err(const struct llm_gguf *g, const char *key);

/* general.alignment: an integer power of two that fits in u32. */
static int
read_alignment(struct llm_gguf *g, const char *path)
{
	const struct llm_gguf_kv *kv = llm_gguf_find_kv(g, "general.alignment");
	uint64_t a;

	g->alignment = LLM_GGUF_DEFAULT_ALIGNMENT;
	if (!kv)
		return 0;
	if (llm_gguf_val_u64(&kv->value, &a) < 0)
		return key_err(g, "general.alignment");
	if (a == 0 || a > UINT32_MAX || (a & (a - 1)))
		return llm_seterr("%s: key 'general.alignment': %llu is not a power of two "
				  "that fits in u32",
		    path, (unsigned long long)a);
	g->alignment = (uint32_t)a;
	return 0;
}

static int
read_tensor_info(struct llm_gguf *g, struct rd *r, struct llm_gguf_tensor *t, size_t i)
{
	uint32_t nd, blck, bsize;
	uint64_t at, nblocks, nbytes;
	char b[300];

	snprintf(r->ctx, sizeof(r->ctx), "tensor info %zu", i);
	if (rd_name(r, &t->name, LLM_GGUF_MAX_NAME, "tensor name") < 0)
		return -1;
	snprintf(r->ctx, sizeof(r->ctx), "tensor '%s'", shown(b, sizeof(b), t->name, strlen(t->name)));
	at = r->pos;
	if (rd_u32(r, &nd, "n_dims") < 0)
		return -1;
	if (nd < 1 || nd > LLM_GGUF_MAX_DIMS)
		return llm_seterr("%s: %s: %u dimensions at offset %llu (1 to %d supported)", r->path, r->ctx, nd,
		    (unsigned long long)at, LLM_GGUF_MAX_DIMS);
	t->n_dims = (int)nd;
	t->nelem = 1;
	for (int d = 0; d < LLM_GGUF_MAX_DIMS; d++)
		t->ne[d] = 1;
	for (int d = 0; d < t->n_dims; d++) {
		at = r->pos;
		if (rd_u64(r, &t->ne[d], "dimension") < 0)
			return -1;
		if (t->ne[d] == 0)
			return llm_seterr("%s: %s: dimension %d at offset %llu is 0", r->path, r->ctx, d,
			    (unsigned long long)at);
		if (__builtin_mul_overflow(t->nelem, t->ne[d], &t->nelem) || t->nelem > INT64_MAX)
			return llm_seterr("%s: %s: element count overflows at dimension %d "
					  "(offset %llu)",
			    r->path, r->ctx, d, (unsigned long long)at);
	}
	for (int d = 0; d < t->n_dims; d++)
		t->shape[d] = (int64_t)t->ne[t->n_dims - 1 - d];
	at = r->pos;
	if (rd_u32(r, &t->ggml_type, "tensor type") < 0)
		return -1;
	if (!llm_ggml_type_block(t->ggml_type, &blck, &bsize))
		return llm_seterr("%s: %s: unknown ggml type %u at offset %llu", r->path, r->ctx, t->ggml_type,
		    (unsigned long long)at);
	t->dtype = dtype_of(t->ggml_type);
	if (t->ne[0] % blck)
		return llm_seterr("%s: %s: rows of %llu elements are not whole %s blocks of %u", r->path, r->ctx,
		    (unsigned long long)t->ne[0], llm_ggml_type_name(t->ggml_type), blck);
	nblocks = t->nelem / blck;
	if (__builtin_mul_overflow(nblocks, (uint64_t)bsize, &nbytes) || nbytes > SIZE_MAX)
		return llm_seterr("%s: %s: byte size overflows", r->path, r->ctx);
	t->nbytes = (size_t)nbytes;
	at = r->pos;
	if (rd_u64(r, &t->rel_offset, "tensor offset") < 0)
		return -1;
	if (t->rel_offset % g->alignment)
		return llm_seterr("%s: %s: data offset %llu (at offset %llu) is not a multiple "
				  "of the alignment %u",
		    r->path, r->ctx, (unsigned long long)t->rel_offset, (unsigned long long)at, g->alignment);
	return 0;
}

/* Place the tensors in the data section and check that no two overlap
 * and that names are unique. */
static int
place_tensors(struct llm_gguf *g, const char *path)
{
	struct llm_gguf_tensor **s;
	uint64_t datalen = g->size - g->data_start;
	char b1[300], b2[300];
	int rc = 0;

	for (size_t i = 0; i < g->ntensors; i++) {
		struct llm_gguf_tensor *t = &g->tensors[i];
		if (t->rel_offset > datalen || t->nbytes > datalen - t->rel_offset)
			return llm_seterr("%s: tensor '%s': data [%llu, +%zu) lies outside the "
					  "data section (%llu bytes from offset %llu)",
			    path, shown(b1, sizeof(b1), t->name, strlen(t->name)), (unsigned long long)t->rel_offset,
			    t->nbytes, (unsigned long long)datalen, (unsigned long long)g->data_start);
		t->offset = g->data_start + t->rel_offset;
		t->data = g->map.p + t->offset;
	}
	g->tensor_sorted = llm_xreallocarray(NULL, g->ntensors ? g->ntensors : 1, sizeof(*g->tensor_sorted));
	s = g->tensor_sorted;
	for (size_t i = 0; i < g->ntensors; i++)
		s[i] = &g->tensors[i];
	qsort(s, g->ntensors, sizeof(*s), cmp_tensor_name);
	for (size_t i = 1; i < g->ntensors; i++)
		if (strcmp(s[i]->name, s[i - 1]->name) == 0)
			return llm_seterr("%s: duplicate tensor name '%s'", path,
			    shown(b1, sizeof(b1), s[i]->name, strlen(s[i]->name)));
	qsort(s, g->ntensors, sizeof(*s), cmp_tensor_offset);
	for (size_t i = 1; i < g->ntensors; i++)
		if (s[i]->rel_offset < s[i - 1]->rel_offset + s[i - 1]->nbytes) {
			rc = llm_seterr("%s: tensors '%s' and '%s' overlap", path,
			    shown(b1, sizeof(b1), s[i - 1]->name, strlen(s[i - 1]->name)),
			    shown(b2, sizeof(b2), s[i]->name, strlen(s[i]->name)));
			break;
		}
	/* Leave the index sorted by name, for lookups. */
	qsort(s, g->ntensors, sizeof(*s), cmp_tensor_name);
	return rc;
}

static int
parse(struct llm_gguf *g)
{
	struct rd r = {.p = g->map.p, .len = g->map.len, .path = g->path};
	uint64_t nt, nkv;
	uint32_t v;

	snprintf(r.ctx, sizeof(r.ctx), "header");
	if (g->map.len < 4 || memcmp(g->map.p, "GGUF", 4) != 0) {
		if (g->map.len < 4)
			return llm_seterr("%s: not a GGUF file (%zu bytes)", g->path, g->map.len);
		return llm_seterr("%s: not a GGUF file (magic %02x %02x %02x %02x, want 'GGUF')", g->path, g->map.p[0],
		    g->map.p[1], g->map.p[2], g->map.p[3]);
	}
	r.pos = 4;
	if (rd_u32(&r, &v, "version") < 0)
		return -1;
	if (v != 2 && v != 3) {
		if (v == 1)
			return llm_seterr("%s: GGUF version 1 is not supported (versions 2 and 3 "
					  "are)",
			    g->path);
		if ((v & 0xffff) == 0 && (v >> 24 == 2 || v >> 24 == 3))
			return llm_seterr("%s: big-endian GGUF file (version %u): only "
					  "little-endian files are supported",
			    g->path, v >> 24);
		return llm_seterr("%s: unsupported GGUF version %u (versions 2 and 3 are "
				  "supported)",
		    g->path, v);
	}
	g->version = v;
	if (rd_u64(&r, &nt, "tensor count") < 0 || rd_u64(&r, &nkv, "metadata count") < 0)
		return -1;
	/* Counts that the rest of the file cannot hold are lies: refuse them
	 * before allocating. */
	if (nkv > left(&r) / MIN_KV_BYTES || nt > left(&r) / MIN_TENSOR_BYTES ||
	    nkv * MIN_KV_BYTES + nt * MIN_TENSOR_BYTES > left(&r))
		return llm_seterr("%s: header claims %llu metadata entries and %llu tensors, "
				  "more than the %zu-byte file can hold",
		    g->path, (unsigned long long)nkv, (unsigned long long)nt, g->map.len);
	g->nkv = (size_t)nkv;
	g->kvs = llm_xcalloc(g->nkv ? g->nkv : 1, sizeof(*g->kvs));
	if (read_kvs(g, &r) < 0 || read_alignment(g, g->path) < 0)
		return -1;
	/* The tensor infos left in the file bound the count again. */
	if (nt > left(&r) / MIN_TENSOR_BYTES)
		return llm_seterr("%s: header claims %llu tensors, more than the %llu bytes "
				  "after the metadata can hold",
		    g->path, (unsigned long long)nt, (unsigned long long)left(&r));
	g->ntensors = (size_t)nt;
	g->tensors = llm_xcalloc(g->ntensors ? g->ntensors : 1, sizeof(*g->tensors));
	for (size_t i = 0; i < g->ntensors; i++)
		if (read_tensor_info(g, &r, &g->tensors[i], i) < 0)
			return -1;
	g->header_end = r.pos;
	g->header_hash = llm_fnv1a(LLM_FNV_INIT, g->map.p, (size_t)g->header_end);
	/* header_end <= size < 2^63 in practice; the sum cannot wrap. */
	g->data_start = LLM_ALIGN_UP(g->header_end, (uint64_t)g->alignment);
	if (g->ntensors == 0)
		return 0;
	if (g->data_start > g->size)
		return llm_seterr("%s: the data section would start at offset %llu, past the "
				  "end of the file (%llu bytes)",
		    g->path, (unsigned long long)g->data_start, (unsigned long long)g->size);
	return place_tensors(g, g->path);
}

static int
finish_open(struct llm_gguf *g)
{
	g->size = g->map.len;
	if (parse(g) < 0) {
		llm_gguf_close(g);
		return -1;
	}
	return 0;
}

int
llm_gguf_open(struct llm_gguf *g, const char *path)
{
	struct stat sb;

	memset(g, 0, sizeof(*g));
	if (llm_map_file(&g->map, path) < 0)
		return -1;
	g->owns_map = 1;
	g->path = llm_xstrdup(path);
	if (stat(path, &sb) < 0) {
		llm_seterr("%s:", path);
		llm_gguf_close(g);
		return -1;
	}
	g->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	return finish_open(g);
}

int
llm_gguf_open_mem(struct llm_gguf *g, const void *data, size_t len, const char *name)
{
	static const uint8_t empty[1];

	memset(g, 0, sizeof(*g));
	g->map.p = data ? data : empty;
	g->map.len = data ? len : 0;
	g->path = llm_xstrdup(name);
	return finish_open(g);
}

void
llm_gguf_close(struct llm_gguf *g)
{
	for (size_t i = 0; i < g->nkv; i++) {
		free(g->kvs[i].key);
		free_value(&g->kvs[i].value);
	}
	free(g->kvs);
	for (size_t i = 0; i < g->ntensors; i++)
		free(g->tensors[i].name);
	free(g->tensors);
	free(g->kv_sorted);
	free(g->tensor_sorted);
	if (g->owns_map)
		llm_unmap(&g->map);
	free(g->path);
	memset(g, 0, sizeof(*g));
}

const struct llm_gguf_kv *
llm_gguf_find_kv(const struct llm_gguf *g, const char *key)
{
	size_t lo = 0, hi = g->kv_sorted ? g->nkv : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(key, g->kv_sorted[mid]->key);
		if (c == 0)
			return g->kv_sorted[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct llm_gguf_tensor *
llm_gguf_find_tensor(const struct llm_gguf *g, const char *name)
{
	size_t lo = 0, hi = g->tensor_sorted ? g->ntensors : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, g->tensor_sorted[mid]->name);
		if (c == 0)
			return g->tensor_sorted[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

static int
is_unsigned(enum llm_gguf_type t)
{
	return t == LLM_GGUF_U8 || t == LLM_GGUF_U16 || t == LLM_GGUF_U32 || t == LLM_GGUF_U64;
}

static int
is_signed(enum llm_gguf_type t)
{
	return t == LLM_GGUF_I8 || t == LLM_GGUF_I16 || t == LLM_GGUF_I32 || t == LLM_GGUF_I64;
}

int
llm_gguf_val_u64(const struct llm_gguf_value *v, uint64_t *out)
{
	if (is_unsigned(v->type)) {
		*out = v->num.u;
		return 0;
	}
	if (is_signed(v->type)) {
		if (v->num.i < 0)
			return llm_seterr("%s value %lld is negative", llm_gguf_type_name(v->type),
			    (long long)v->num.i);
		*out = (uint64_t)v->num.i;
		return 0;
	}
	return llm_seterr("value is a %s, not an integer", llm_gguf_type_name(v->type));
}

int
llm_gguf_val_i64(const struct llm_gguf_value *v, int64_t *out)
{
	if (is_signed(v->type)) {
		*out = v->num.i;
		return 0;
	}
	if (is_unsigned(v->type)) {
		if (v->num.u > INT64_MAX)
			return llm_seterr("%s value %llu is out of range for i64", llm_gguf_type_name(v->type),
			    (unsigned long long)v->num.u);
		*out = (int64_t)v->num.u;
		return 0;
	}
	return llm_seterr("value is a %s, not an integer", llm_gguf_type_name(v->type));
}

int
llm_gguf_val_f64(const struct llm_gguf_value *v, double *out)
{
	if (v->type != LLM_GGUF_F32 && v->type != LLM_GGUF_F64)
		return llm_seterr("value is a %s, not a float", llm_gguf_type_name(v->type));
	*out = v->num.f;
	return 0;
}

/* The value of key, or NULL with "missing key" set. */
static const struct llm_gguf_value *
lookup(const struct llm_gguf *g, const char *key)
{
	const struct llm_gguf_kv *kv = llm_gguf_find_kv(g, key);
	if (!kv) {
		llm_seterr("%s: missing key '%s'", g->path, key);
		return NULL;
	}
	return &kv->value;
}

/* Prefix the message that a llm_gguf_val_* call left with file and key. */
static int
key_err(const struct llm_gguf *g, const char *key)
{
	char msg[1024];
	snprintf(msg, sizeof(msg), "%s", llm_errmsg());
	return llm_seterr("%s: key '%s': %s", g->path, key, msg);
}

int
llm_gguf_get_u64(const struct llm_gguf *g, const char *key, uint64_t *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	if (!v)
		return 1;
	return llm_gguf_val_u64(v, out) < 0 ? key_err(g, key) : 0;
}

int
llm_gguf_get_i64(const struct llm_gguf *g, const char *key, int64_t *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	if (!v)
		return 1;
	return llm_gguf_val_i64(v, out) < 0 ? key_err(g, key) : 0;
}

int
llm_gguf_get_u32(const struct llm_gguf *g, const char *key, uint32_t *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	uint64_t u;

	if (!v)
		return 1;
	if (llm_gguf_val_u64(v, &u) < 0)
		return key_err(g, key);
	if (u > UINT32_MAX)
		return llm_seterr("%s: key '%s': %s value %llu is out of range for u32", g->path, key,
		    llm_gguf_type_name(v->type), (unsigned long long)u);
	*out = (uint32_t)u;
	return 0;
}

int
llm_gguf_get_i32(const struct llm_gguf *g, const char *key, int32_t *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	int64_t i;

	if (!v)
		return 1;
	if (llm_gguf_val_i64(v, &i) < 0)
		return key_err(g, key);
	if (i < INT32_MIN || i > INT32_MAX)
		return llm_seterr("%s: key '%s': %s value %lld is out of range for i32", g->path, key,
		    llm_gguf_type_name(v->type), (long long)i);
	*out = (int32_t)i;
	return 0;
}

int
llm_gguf_get_f64(const struct llm_gguf *g, const char *key, double *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	if (!v)
		return 1;
	return llm_gguf_val_f64(v, out) < 0 ? key_err(g, key) : 0;
}

int
llm_gguf_get_f32(const struct llm_gguf *g, const char *key, float *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	double d = 0;

	if (!v)
		return 1;
	if (llm_gguf_val_f64(v, &d) < 0)
		return key_err(g, key);
	if (isfinite(d) && !isfinite((float)d))
		return llm_seterr("%s: key '%s': f64 value %g is out of range for f32", g->path, key, d);
	*out = (float)d;
	return 0;
}

int
llm_gguf_get_bool(const struct llm_gguf *g, const char *key, int *out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	if (!v)
		return 1;
	if (v->type != LLM_GGUF_BOOL)
		return llm_seterr("%s: key '%s': value is a %s, not a bool", g->path, key, llm_gguf_type_name(v->type));
	*out = (int)v->num.u;
	return 0;
}

int
llm_gguf_get_str(const struct llm_gguf *g, const char *key, const char **p, size_t *len)
{
	const struct llm_gguf_value *v = lookup(g, key);
	if (!v)
		return 1;
	if (v->type != LLM_GGUF_STRING)
		return llm_seterr("%s: key '%s': value is a %s, not a string", g->path, key,
		    llm_gguf_type_name(v->type));
	*p = v->str;
	*len = (size_t)v->len;
	return 0;
}

int
llm_gguf_get_strdup(const struct llm_gguf *g, const char *key, char **out)
{
	const char *p;
	size_t len;
	int rc = llm_gguf_get_str(g, key, &p, &len);

	if (rc)
		return rc;
	if (memchr(p, 0, len))
		return llm_seterr("%s: key '%s': string holds a NUL byte", g->path, key);
	*out = llm_xmalloc(len + 1);
	memcpy(*out, p, len);
	(*out)[len] = 0;
	return 0;
}

int
llm_gguf_get_arr(const struct llm_gguf *g, const char *key, enum llm_gguf_type elem_type,
    const struct llm_gguf_value **out)
{
	const struct llm_gguf_value *v = lookup(g, key);
	if (!v)
		return 1;
	if (v->type != LLM_GGUF_ARRAY)
		return llm_seterr("%s: key '%s': value is a %s, not an array", g->path, key,
		    llm_gguf_type_name(v->type));
	if (elem_type != LLM_GGUF_NTYPES && v->elem_type != elem_type)
		return llm_seterr("%s: key '%s': array of %s, not of %s", g->path, key,
		    llm_gguf_type_name(v->elem_type), llm_gguf_type_name(elem_type));
	*out = v;
	return 0;
}

int
llm_gguf_arr_elem(const struct llm_gguf_value *a, uint64_t i, struct llm_gguf_value *out)
{
	if (a->type != LLM_GGUF_ARRAY || i >= a->len)
		return -1;
	if (a->elem_type == LLM_GGUF_ARRAY) {
		*out = a->elems[i];
		return 0;
	}
	if (a->elem_type == LLM_GGUF_STRING) {
		memset(out, 0, sizeof(*out));
		out->type = LLM_GGUF_STRING;
		out->len = llm_get_le(a->strs[i], 8);
		out->str = (const char *)a->strs[i] + 8;
		return 0;
	}
	scalar_at(out, a->elem_type, a->data + i * a->elem_size);
	return 0;
}

const char *
llm_gguf_arr_str(const struct llm_gguf_value *a, uint64_t i, size_t *len)
{
	if (a->type != LLM_GGUF_ARRAY || a->elem_type != LLM_GGUF_STRING || i >= a->len)
		return NULL;
	*len = (size_t)llm_get_le(a->strs[i], 8);
	return (const char *)a->strs[i] + 8;
}

const char *
llm_gguf_shown(char *buf, size_t n, const char *name)
{
	return shown(buf, n, name, strlen(name));
}
