/* safetensors.h: an mmap'ed reader for Hugging Face safetensors checkpoints,
 * a single model.safetensors or shards listed by model.safetensors.index.json.
 *
 * File format: u64 little-endian header length N, N bytes of JSON
 * {"name": {"dtype": "BF16", "shape": [..], "data_offsets": [begin, end]},
 *  "__metadata__": {...}}, then the data; offsets are relative to the end
 * of the header.  The reader validates everything before handing out a
 * pointer: header length within the file, JSON well formed, known dtype,
 * offsets inside the data area, begin <= end, no two tensors overlapping,
 * shape product x dtype size == end - begin, without integer overflow. */
#ifndef LLM_SAFETENSORS_H
#define LLM_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../base/dtype.h"
#include "../base/util.h"

#define LLM_MAX_DIMS 8

struct llm_st_tensor {
	char *name;
	enum llm_dtype dtype;
	int ndim;
	int64_t shape[LLM_MAX_DIMS];
	int64_t nelem;
	const void *data; /* inside the mapping of its file; aligned only as
	                    * far as the writer padded the header */
	size_t nbytes;
	int file;        /* index into llm_st.files */
	uint64_t offset; /* byte offset of the data in its file */
};

struct llm_st_file {
	char *path;
	struct llm_map map;
	uint64_t size; /* source identity: size, mtime, header hash */
	int64_t mtime_ns;
	uint64_t header_hash; /* FNV-1a 64 of the 8 length bytes + JSON header */
};

struct llm_safetensors {
	int nfiles;
	struct llm_st_file *files;
	size_t ntensors;
	struct llm_st_tensor *tensors; /* sorted by name */
};

/* Open PATH: a .safetensors file, a *.json index, or a directory holding
 * model.safetensors.index.json or model.safetensors (the index wins).  An
 * index and its shards must agree exactly: every tensor in a shard is
 * listed, and in the shard the index names; shards are files beside the
 * index (no absolute paths or '..'); files[] is in shard name order.
 * 0, or -1 with llm_errmsg naming the file at fault; on failure *st is
 * left empty (llm_st_close is then optional). */
int llm_st_open(struct llm_safetensors *st, const char *path);
/* Tensor by name, or NULL. */
const struct llm_st_tensor *llm_st_find(const struct llm_safetensors *st, const char *name);
void llm_st_close(struct llm_safetensors *st);

#endif
