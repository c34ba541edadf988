/* source.h: the tensors of a checkpoint, whatever its format: a Hugging
 * Face safetensors file set (one file, or the shards of an index) or one
 * GGUF file.  llm-import checks the weight plan against it and
 * llm-pack-weights reads the plan's source tensors through it.
 *
 * A source hands out, per tensor name, the element type, the shape in
 * row-major order (outermost dimension first, so a Hugging Face weight
 * [out, in] and the GGUF tensor with ne = {in, out} both read [out, in]),
 * and the bytes in the read-only mapping of their file; and, per file, the
 * identity (size, mtime, header hash) that llm-pack-weights records to
 * decide whether weights.bin is still up to date.  Everything is validated
 * by the format's reader (safetensors.h, gguf.h) before it is handed out. */
#ifndef LLM_SOURCE_H
#define LLM_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/dtype.h"
#include "gguf.h"
#include "safetensors.h"

#define LLM_SOURCE_MAX_DIMS 8

enum llm_source_kind {
	LLM_SOURCE_SAFETENSORS = 1,
	LLM_SOURCE_GGUF = 2,
};

struct llm_source_tensor {
	const char *name;      /* borrowed from the reader */
	enum llm_dtype dtype;  /* LLM_DT_NONE: a type llm cannot read
	                            * (a GGUF block type; type_name says which) */
	const char *type_name; /* as the format spells it: "BF16", "Q4_K" */
	int32_t quant;         /* a ggml block type llm decodes (quant.h),
	                            * when dtype is LLM_DT_NONE; else -1 */
	uint32_t blck, bsize;  /* elements and bytes per block: 1 and the
	                            * element size, or quant's block */
	int ndim;
	int64_t shape[LLM_SOURCE_MAX_DIMS]; /* row-major, outermost first */
	uint64_t nelem;
	const void *data; /* in the mapping; alignment not guaranteed */
	size_t nbytes;
	size_t file; /* index into files */
};

struct llm_source_file {
	const char *path; /* borrowed from the reader */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t header_hash; /* FNV-1a 64 of the header (format-specific) */
};

struct llm_source {
	enum llm_source_kind kind;
	char *name; /* the directory or file, for messages */
	size_t nfiles;
	struct llm_source_file *files;
	size_t ntensors;
	struct llm_source_tensor *tensors; /* sorted by name (stable: file order
	                                    * among equal names) */
	/* The readers the entries point into. */
	size_t nst;
	struct llm_safetensors *st;
	struct llm_gguf *gguf;
};

/* The kind named "safetensors" or "gguf" (model.json source.kind), or 0. */
enum llm_source_kind llm_source_kind_from_name(const char *s);
const char *llm_source_kind_name(enum llm_source_kind k);

/* Open the files of model.json's source: kind "safetensors" (each file one
 * .safetensors) or "gguf" (exactly one file); names are relative to dir.
 * 0, or -1 with llm_errmsg naming the file at fault; on failure *s is left
 * empty (llm_source_close is then optional). */
int llm_source_open(struct llm_source *s, const char *kind, const char *dir, const char *const *files, size_t nfiles);
/* Open what llm-import is given: a directory (its safetensors index or
 * model.safetensors, see llm_st_open) or a GGUF file. */
int llm_source_open_path(struct llm_source *s, const char *path);
void llm_source_close(struct llm_source *s);

/* 1 if t's elements can be read as floats: f32, f16, bf16 or f64, or a
 * block type that quant.h decodes. */
int llm_source_tensor_readable(const struct llm_source_tensor *t);
/* Convert n elements stored as t stores them (whole blocks of t->blck, at
 * src: a part of t->data, or rows of it gathered elsewhere) into dst as dt
 * (a float weight type).  A block type is decoded to f32 as ggml does,
 * into dst when dt is f32, else into stage (n floats), then converted.
 * 0, or -1 for a pair llm_convert cannot do. */
int llm_source_read(const struct llm_source_tensor *t, const void *src, size_t n, enum llm_dtype dt, void *dst,
    float *stage);

/* The tensor called name, or NULL when there is none (*err 0, no message);
 * a name found in two files is an error (NULL, *err -1, llm_errmsg set). */
const struct llm_source_tensor *llm_source_find(const struct llm_source *s, const char *name, int *err);

/* 0 if t is F32, F16, BF16 or a block type that quant.h decodes; else -1
 * with "file: tensor 'x' has type IQ2_XS, which <prog> does not support
 * (it reads ...)". */
int llm_gguf_tensor_loadable(const struct llm_gguf *g, const struct llm_gguf_tensor *t);

#endif
