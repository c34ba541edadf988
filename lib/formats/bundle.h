/* bundle.h: model.llm, the single-file bundle llm-link writes (an
 * uncompressed tar, share/doc/llm/formats.txt section 4), and build
 * directories, read in place.
 *
 * A bundle is opened read-only and its tar headers are walked once: every
 * member must be a regular file with a relative name, no "..", no
 * duplicates, lying inside the file.  Members are then read whole (small
 * files), mapped in place (weights.bin: no copy), or loaded as a shared
 * library through a memfd.  A build directory gives the same interface:
 * its members are the regular files at its top level, and the aligned
 * member of its model.llm (weights.bin) when the directory lacks that
 * file: pipelines/model.mk removes it once llm-link has put it in the
 * bundle, so that a build holds the weights once. */
#ifndef LLM_BUNDLE_H
#define LLM_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

/* The data of the aligned member (weights.bin) starts at a multiple of
 * this offset in model.llm, so that it can be mapped in place on systems
 * with pages of up to 64 KiB. */
#define LLM_BUNDLE_ALIGN 65536
#define LLM_BUNDLE_PAD ".pad"

struct llm_member {
	char *name;      /* relative name, e.g. "weights.bin" */
	char *label;     /* for messages: "model.llm: weights.bin" or "out/weights.bin" */
	uint64_t offset; /* of the data in the bundle file (or in file) */
	uint64_t size;
	char *file;     /* a directory's member: the file that holds it (dir/name, or dir/model.llm) */
	uint64_t fsize; /* that file's size when the directory was read */
};

struct llm_bundle {
	char *path; /* as given */
	int is_dir;
	int fd;        /* the bundle file; -1 for a directory */
	uint64_t size; /* of the bundle file */
	size_t n;
	struct llm_member *members; /* in archive order (a directory: sorted by name) */
};

/* Open a bundle file or a build directory.  0, or -1 with llm_errmsg
 * naming the file ("model.llm: member 'x': extends past the end of the
 * file (truncated?)"). */
int llm_bundle_open(struct llm_bundle *b, const char *path);
void llm_bundle_close(struct llm_bundle *b);

/* The member called name, or NULL. */
const struct llm_member *llm_bundle_find(const struct llm_bundle *b, const char *name);
/* As llm_bundle_find, but a missing member is an error naming the bundle. */
const struct llm_member *llm_bundle_get(const struct llm_bundle *b, const char *name);

/* Read a member whole into a new NUL-terminated buffer. */
int llm_bundle_read(const struct llm_bundle *b, const struct llm_member *mb, char **data, size_t *len);

/* A member mapped read-only in place.  p is the member's first byte; base
 * and base_len describe the page-aligned mapping that holds it. */
struct llm_bundle_map {
	const uint8_t *p;
	size_t len;
	void *base;
	size_t base_len;
};
int llm_bundle_map(const struct llm_bundle *b, const struct llm_member *mb, struct llm_bundle_map *m);
void llm_bundle_unmap(struct llm_bundle_map *m);

/* A new file descriptor holding a copy of the member: a memfd, or when
 * memfd_create fails an unlinked temporary file in $TMPDIR.  Its contents
 * are reachable as /proc/self/fd/N. */
int llm_bundle_memfd(const struct llm_bundle *b, const struct llm_member *mb);

/* dlopen a shared library member: in a directory the file itself, in a
 * bundle a memfd copy.  NULL with llm_errmsg on failure. */
void *llm_bundle_dlopen(const struct llm_bundle *b, const struct llm_member *mb, int flags);

/* Writing.  The members in the given order, each from a file; before the
 * one with align set, a LLM_BUNDLE_PAD member of zeros makes its data
 * start at a multiple of LLM_BUNDLE_ALIGN.  Headers are deterministic
 * (pax restricted: plain ustar unless a size or name needs pax records;
 * mtime 0, uid and gid 0, no owner names, mode 0644).  Written atomically
 * to out ("-": stdout) and read back with llm_bundle_open before the
 * rename.  0, or -1 with llm_errmsg. */
struct llm_bundle_src {
	const char *name; /* member name */
	const char *path; /* file to copy */
	int align;
	uint64_t offset, size; /* size > 0: only bytes [offset, offset + size) of it (a member of a bundle) */
};
int llm_bundle_write(const char *out, const struct llm_bundle_src *src, size_t n);

#endif
