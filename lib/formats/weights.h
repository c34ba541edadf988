/* weights.h: weights.bin, the runtime weight blob, and weights.json, its
 * manifest (share/doc/llm/formats.txt sections 2 and 3).
 *
 * weights.bin is a 4096-byte header followed by the data area of
 * model.json weights.data_bytes; every tensor lies at header_bytes + its
 * plan offset.  llm-pack-weights writes both files; llm-run maps
 * weights.bin with llm_weights_open and hands the data area to the
 * generated code. */
#ifndef LLM_WEIGHTS_H
#define LLM_WEIGHTS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/dtype.h"
#include "model.h"
#include "../base/util.h"

#define LLM_WEIGHTS_MAGIC "LLMWGHT"   /* 8 bytes with its NUL */
#define LLM_WEIGHTS_VERSION 1
#define LLM_WEIGHTS_FORMAT "llm-weights/2"
#define LLM_WEIGHTS_JSON "weights.json"

/* The header, all integers little-endian:
 *   0  magic[8]  "LLMWGHT\0"
 *   8  u32       version
 *  12  u32       header_bytes
 *  16  u64       fingerprint (the plan's)
 *  24  u64       data_bytes
 *  32  zero up to header_bytes */
struct llm_weights_header {
	uint32_t version, header_bytes;
	uint64_t fingerprint, data_bytes;
};

/* Encode a version-1 header of LLM_WEIGHTS_HEADER_BYTES bytes into out. */
void llm_weights_header_encode(uint8_t out[LLM_WEIGHTS_HEADER_BYTES], uint64_t fingerprint, uint64_t data_bytes);
/* Decode and check magic, version and header_bytes from the first len
 * bytes of file `path`.  0, or -1 with llm_errmsg naming path. */
int llm_weights_header_decode(const uint8_t *p, size_t len, const char *path, struct llm_weights_header *h);

/* A mapped weights.bin. */
struct llm_weights {
	char *path;
	struct llm_map map;
	struct llm_weights_header hdr;
	const uint8_t *data; /* map.p + header_bytes: the data area (4096-byte aligned) */
	uint64_t data_bytes;
	int owned; /* llm_weights_open mapped it (llm_weights_view: the caller's bytes) */
};

/* Map path read-only (no read of the data) and check the header: magic,
 * version, header_bytes, and a file size of exactly header_bytes +
 * data_bytes.  When m is not NULL the header's fingerprint and data_bytes
 * must also equal the plan's (m->fingerprint, m->data_bytes, and
 * m->header_bytes).  0, or -1 with llm_errmsg "path: what is wrong". */
int llm_weights_open(struct llm_weights *w, const char *path, const struct llm_model *m);
/* The same checks on bytes mapped by the caller (a bundle member, label
 * naming it), which stay the caller's. */
int llm_weights_view(struct llm_weights *w, const uint8_t *p, size_t len, const char *label, const struct llm_model *m);
void llm_weights_close(struct llm_weights *w);

/* weights.json.  Strings borrow from root. */
struct llm_weights_source {
	const char *path;
	uint64_t size;
	int64_t mtime_ns;
	uint64_t header_hash;
};

struct llm_weights_entry {
	const char *name;
	enum llm_dtype dtype;
	int ndim;
	int64_t shape[4];
	uint64_t offset, bytes;
	uint64_t checksum; /* FNV-1a 64 of the bytes as written */
};

struct llm_weights_manifest {
	json_t *root; /* owned */
	const char *file;
	uint64_t fingerprint, header_bytes, data_bytes;
	uint64_t digest, sample; /* llm_weights_digest, llm_weights_sample */
	size_t nsources;
	struct llm_weights_source *sources;
	size_t ntensors;
	struct llm_weights_entry *tensors;
};

/* Load and check types and the format version.  0, or -1 with
 * llm_errmsg "path: ...". */
int llm_weights_manifest_load(struct llm_weights_manifest *w, const char *path);
/* The same from a buffer (a bundle member); path names it in messages. */
int llm_weights_manifest_loadb(struct llm_weights_manifest *w, const char *buf, size_t len, const char *path);
void llm_weights_manifest_free(struct llm_weights_manifest *w);

/* The integrity digests weights.json records (formats.txt section 3).
 * digest: FNV-1a 64 over each tensor's offset, bytes and checksum, as u64
 * little-endian, in order (llm_weights_digest_step from LLM_FNV_INIT): the
 * whole content, through the checksums.  sample: FNV-1a 64 of the file
 * size, the header and LLM_WEIGHTS_SAMPLE_BLOCKS blocks of 4096 bytes
 * spread evenly over the data area of the mapped file p: what a check can
 * afford every time (a few hundred KiB of reads), which tells another
 * checkpoint's weights of the same plan, or a damaged header, from the
 * right ones, but not a change outside the sampled blocks. */
#define LLM_WEIGHTS_SAMPLE_BLOCKS 64
uint64_t llm_weights_digest_step(uint64_t h, uint64_t offset, uint64_t bytes, uint64_t checksum);
uint64_t llm_weights_manifest_digest(const struct llm_weights_manifest *j);
uint64_t llm_weights_sample(const uint8_t *p, uint64_t size);

/* The cheap check of the mapped weights.bin p (size bytes; label names it)
 * against its manifest: fingerprint and sizes, the digest of the
 * manifest's checksums, the sampled blocks.  0, or -1 with llm_errmsg. */
int llm_weights_check(const uint8_t *p, uint64_t size, const char *label, const struct llm_weights_manifest *j);

/* Recompute every tensor checksum of a mapped weights.bin against its
 * manifest (and the manifest against the header).  0, or -1 with
 * llm_errmsg naming the first tensor that differs.  Reads the whole
 * data area. */
int llm_weights_verify(const struct llm_weights *w, const struct llm_weights_manifest *j);
/* The same on a mapped file p of size bytes (a bundle member, label). */
int llm_weights_verify_map(const uint8_t *p, uint64_t size, const char *label, const struct llm_weights_manifest *j);

#endif
