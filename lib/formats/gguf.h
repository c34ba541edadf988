/* gguf.h: an mmap'ed reader for GGUF files, llama.cpp's model format
 * (versions 2 and 3; version 1, with 32-bit counts, is rejected).
 *
 * File format, all little-endian (big-endian GGUF files are rejected; the
 * reader itself only runs on little-endian hosts, which x86-64 and riscv64
 * are, because tensor data is handed out in place):
 *
 *	u32 magic "GGUF", u32 version, u64 tensor_count, u64 kv_count
 *	kv_count x { string key, u32 value_type, value }
 *	tensor_count x { string name, u32 n_dims, u64 ne[n_dims],
 *	                 u32 ggml_type, u64 offset }
 *	padding to `general.alignment` (a u32 power of two, default 32)
 *	tensor data: each tensor at data_start + offset, offset a multiple of
 *	the alignment
 *
 * A string is u64 length + bytes (no NUL).  A value is one of the 13 types
 * of enum llm_gguf_type; an array is u32 element type + u64 count + the
 * elements, and may hold any type including strings and arrays (the spec
 * allows nesting, which llama.cpp's own reader refuses; it is supported
 * here to a depth of LLM_GGUF_MAX_DEPTH).  Tensor dims are in ggml
 * order: ne[0] varies fastest, so a Hugging Face weight of shape (out, in)
 * has ne = {in, out}.
 *
 * Everything is validated before the first value is handed out: magic,
 * version, counts against the file size (before any allocation), string
 * and array lengths, value and tensor types, bool bytes (0 or 1), keys
 * (non-empty, at most 65535 bytes, no NUL) and tensor names (non-empty,
 * at most 64 bytes, no NUL) and their uniqueness, alignment, dims (1..4
 * of them, non-zero, no overflow, rows of whole blocks), offsets (aligned,
 * data inside the file, no two tensors sharing a byte).  Failures give
 * one line naming the file.  All strings and tensor data point into the
 * mapping: they live until llm_gguf_close. */
#ifndef LLM_GGUF_H
#define LLM_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "../base/dtype.h"
#include "../base/util.h"

#define LLM_GGUF_MAX_DIMS 4
#define LLM_GGUF_MAX_DEPTH 8          /* array nesting: array of array = 2 */
#define LLM_GGUF_MAX_NAME 64           /* tensor name bytes, as the spec says */
#define LLM_GGUF_DEFAULT_ALIGNMENT 32

/* Metadata value types, numbered as in the file. */
enum llm_gguf_type {
	LLM_GGUF_U8 = 0,
	LLM_GGUF_I8 = 1,
	LLM_GGUF_U16 = 2,
	LLM_GGUF_I16 = 3,
	LLM_GGUF_U32 = 4,
	LLM_GGUF_I32 = 5,
	LLM_GGUF_F32 = 6,
	LLM_GGUF_BOOL = 7,
	LLM_GGUF_STRING = 8,
	LLM_GGUF_ARRAY = 9,
	LLM_GGUF_U64 = 10,
	LLM_GGUF_I64 = 11,
	LLM_GGUF_F64 = 12,
	LLM_GGUF_NTYPES
};

/* ggml tensor types that appear in GGUF files (ggml.h numbering; ids 4, 5
 * and 31..33, 36..38 were retired and are rejected). */
enum llm_ggml_type {
	LLM_GGML_F32 = 0,
	LLM_GGML_F16 = 1,
	LLM_GGML_Q4_0 = 2,
	LLM_GGML_Q4_1 = 3,
	LLM_GGML_Q5_0 = 6,
	LLM_GGML_Q5_1 = 7,
	LLM_GGML_Q8_0 = 8,
	LLM_GGML_Q8_1 = 9,
	LLM_GGML_Q2_K = 10,
	LLM_GGML_Q3_K = 11,
	LLM_GGML_Q4_K = 12,
	LLM_GGML_Q5_K = 13,
	LLM_GGML_Q6_K = 14,
	LLM_GGML_Q8_K = 15,
	LLM_GGML_IQ2_XXS = 16,
	LLM_GGML_IQ2_XS = 17,
	LLM_GGML_IQ3_XXS = 18,
	LLM_GGML_IQ1_S = 19,
	LLM_GGML_IQ4_NL = 20,
	LLM_GGML_IQ3_S = 21,
	LLM_GGML_IQ2_S = 22,
	LLM_GGML_IQ4_XS = 23,
	LLM_GGML_I8 = 24,
	LLM_GGML_I16 = 25,
	LLM_GGML_I32 = 26,
	LLM_GGML_I64 = 27,
	LLM_GGML_F64 = 28,
	LLM_GGML_IQ1_M = 29,
	LLM_GGML_BF16 = 30,
	LLM_GGML_TQ1_0 = 34,
	LLM_GGML_TQ2_0 = 35,
	LLM_GGML_MXFP4 = 39,
	LLM_GGML_NVFP4 = 40,
	LLM_GGML_Q1_0 = 41,
	LLM_GGML_Q2_0 = 42,
	LLM_GGML_NTYPES
};

/* One metadata value: a scalar (decoded), a string or an array. */
struct llm_gguf_value {
	enum llm_gguf_type type;
	union {
		uint64_t u; /* U8, U16, U32, U64; BOOL as 0 or 1 */
		int64_t i;  /* I8, I16, I32, I64 */
		double f;   /* F32 (exactly widened), F64 */
	} num;
	/* STRING: str[0..len) in the mapping; not NUL-terminated, may hold
	 * NUL bytes.  ARRAY: len elements of type elem_type. */
	const char *str;
	uint64_t len;
	enum llm_gguf_type elem_type;
	/* ARRAY: the first element's bytes in the mapping (little-endian,
	 * unaligned); elements of fixed size are elem_size bytes apart. */
	const uint8_t *data;
	size_t elem_size;             /* 0 for strings and arrays */
	const uint8_t **strs;         /* array of strings: where each
	                                  * element (u64 length, bytes) is */
	struct llm_gguf_value *elems; /* array of arrays: len decoded
	                                  * elements */
};

struct llm_gguf_kv {
	char *key; /* NUL-terminated copy */
	struct llm_gguf_value value;
	uint64_t pos; /* file offset of the key */
};

struct llm_gguf_tensor {
	char *name;                       /* NUL-terminated copy */
	uint32_t ggml_type;               /* enum llm_ggml_type */
	enum llm_dtype dtype;             /* the same element type, if llm has
	                                  * one (F32, F16, BF16, F64, I8..I64);
	                                  * LLM_DT_NONE for block types */
	int n_dims;                       /* 1..LLM_GGUF_MAX_DIMS */
	uint64_t ne[LLM_GGUF_MAX_DIMS];   /* ggml order, ne[0] fastest; 1 past
	                                  * n_dims */
	int64_t shape[LLM_GGUF_MAX_DIMS]; /* row-major ("HF order"):
	                                  * shape[i] = ne[n_dims - 1 - i] */
	uint64_t nelem;
	uint64_t rel_offset; /* as stored: from data_start */
	uint64_t offset;     /* from the start of the file */
	size_t nbytes;       /* nelem / block size x block bytes */
	const void *data;    /* in the mapping; when mmap'ed,
	                                  * aligned to the file's alignment
	                                  * (up to the page size) */
};

struct llm_gguf {
	char *path;         /* the file, or the name given to
	                                  * llm_gguf_open_mem */
	struct llm_map map; /* the file (or the borrowed memory) */
	int owns_map;
	uint32_t version;    /* 2 or 3 */
	uint32_t alignment;  /* general.alignment or 32 */
	uint64_t header_end; /* end of the tensor infos */
	uint64_t data_start; /* header_end rounded up to alignment */
	/* Source identity, for reuse checks: file size, mtime (0 for memory)
	 * and FNV-1a 64 of bytes [0, header_end). */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t header_hash;
	size_t nkv;
	struct llm_gguf_kv *kvs; /* file order */
	size_t ntensors;
	struct llm_gguf_tensor *tensors;        /* file order */
	struct llm_gguf_kv **kv_sorted;         /* by key, for lookups */
	struct llm_gguf_tensor **tensor_sorted; /* by name */
};

/* Open and validate PATH.  0, or -1 with llm_errmsg naming the file; on
 * failure *g is left empty (llm_gguf_close is then optional). */
int llm_gguf_open(struct llm_gguf *g, const char *path);
/* The same parser over LEN bytes at DATA (borrowed: they must outlive g);
 * NAME stands for the file in messages. */
int llm_gguf_open_mem(struct llm_gguf *g, const void *data, size_t len, const char *name);
void llm_gguf_close(struct llm_gguf *g);

/* Metadata by key, or NULL. */
const struct llm_gguf_kv *llm_gguf_find_kv(const struct llm_gguf *g, const char *key);

/* Typed getters by key: 0 and *out set; 1 if the key is absent (*out
 * untouched, llm_errmsg says "missing key"); -1 with llm_errmsg ("file:
 * key 'k': ...") for a value of another type or out of range.  Integer
 * getters take any integer type whose value fits; float getters take F32
 * or F64 (get_f32 rounds an F64); bool takes only BOOL; string only STRING
 * (*p and *len point into the mapping, no NUL). */
int llm_gguf_get_u32(const struct llm_gguf *g, const char *key, uint32_t *out);
int llm_gguf_get_i32(const struct llm_gguf *g, const char *key, int32_t *out);
int llm_gguf_get_u64(const struct llm_gguf *g, const char *key, uint64_t *out);
int llm_gguf_get_i64(const struct llm_gguf *g, const char *key, int64_t *out);
int llm_gguf_get_f32(const struct llm_gguf *g, const char *key, float *out);
int llm_gguf_get_f64(const struct llm_gguf *g, const char *key, double *out);
int llm_gguf_get_bool(const struct llm_gguf *g, const char *key, int *out);
int llm_gguf_get_str(const struct llm_gguf *g, const char *key, const char **p, size_t *len);
/* A NUL-terminated copy of a string value (caller frees); -1 if it holds
 * a NUL byte. */
int llm_gguf_get_strdup(const struct llm_gguf *g, const char *key, char **out);
/* An array; elem_type LLM_GGUF_NTYPES accepts any element type, otherwise
 * it must match.  *out points into g. */
int llm_gguf_get_arr(const struct llm_gguf *g, const char *key, enum llm_gguf_type elem_type,
    const struct llm_gguf_value **out);

/* Element i of array a, decoded into *out (a string element points into
 * the mapping; a nested array element is a copy of its node, sharing its
 * storage with g); -1 (no message) if a is not an array or i is out of
 * range. */
int llm_gguf_arr_elem(const struct llm_gguf_value *a, uint64_t i, struct llm_gguf_value *out);
/* String element i of an array of strings, or NULL. */
const char *llm_gguf_arr_str(const struct llm_gguf_value *a, uint64_t i, size_t *len);

/* Conversions of one value with the getters' rules: 0, or -1 with a
 * message that does not name the file (the caller adds the context). */
int llm_gguf_val_u64(const struct llm_gguf_value *v, uint64_t *out);
int llm_gguf_val_i64(const struct llm_gguf_value *v, int64_t *out);
int llm_gguf_val_f64(const struct llm_gguf_value *v, double *out);

/* Tensor by name, or NULL. */
const struct llm_gguf_tensor *llm_gguf_find_tensor(const struct llm_gguf *g, const char *name);
/* A name from the file fit for a one-line message (control bytes, quotes
 * and backslashes escaped, long names cut), in buf of n >= 80 bytes. */
const char *llm_gguf_shown(char *buf, size_t n, const char *name);

/* Names for messages: "u8" .. "f64", "string", "array"; "F32", "Q4_K" ..;
 * "?" for unknown values. */
const char *llm_gguf_type_name(enum llm_gguf_type t);
const char *llm_ggml_type_name(uint32_t t);
/* The ggml type called s ("Q4_K", case ignored), or -1. */
int64_t llm_ggml_type_by_name(const char *s);
/* Elements per block and bytes per block of a ggml type: 1, or 0 if the
 * type is unknown or retired. */
int llm_ggml_type_block(uint32_t t, uint32_t *blck, uint32_t *size);

#endif
