/* bundle.c: see bundle.h.
 *
 * The reader walks the tar headers itself (ustar, plus the pax 'x'
 * records "path" and "size" that libarchive's pax-restricted writer emits
 * for long names and members over 8 GiB): it needs exact data offsets to
 * map weights.bin in place, and it refuses everything that is not a plain
 * regular file.  The writer uses libarchive. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "../base/util.h"

#define BLOCK 512
#define MAX_MEMBERS 4096
#define MAX_NAME 4096

/* ---- reading ---- */

static int
pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

/* An octal field (digits, then NUL or space padding) or a base-256 one
 * (high bit of the first byte set, positive only). */
static int
tar_number(const uint8_t *f, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -1;
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return -1;
			v = v << 8 | f[i];
		}
		*out = v;
		return 0;
	}
	while (i < n && f[i] == ' ')
		i++;
	if (i == n || f[i] < '0' || f[i] > '7')
		return -1;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 61)
			return -1;
		v = v << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -1;
	*out = v;
	return 0;
}

static int
tar_checksum_ok(const uint8_t *h)
{
	uint64_t want, u = 0;
	int64_t s = 0;

	if (tar_number(h + 148, 8, &want) < 0)
		return 0;
	for (int i = 0; i < BLOCK; i++) {
		int c = i >= 148 && i < 156 ? ' ' : h[i];
		u += (unsigned)c;
		s += (signed char)c;
	}
	return want == u || (int64_t)want == s;
}

static int
all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* A member name must be relative and stay inside the bundle. */
static int
check_name(const char *bpath, const char *name)
{
	const char *s = name;

	if (!*name)
		return llm_seterr("%s: member with an empty name", bpath);
	if (*name == '/')
		return llm_seterr("%s: member '%s': absolute path", bpath, name);
	while (*s) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);
		if (n == 0 || (n == 1 && s[0] == '.'))
			return llm_seterr("%s: member '%s': empty or '.' path component", bpath, name);
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return llm_seterr("%s: member '%s': '..' in path", bpath, name);
		s += n;
		/* a '/' at the end leaves an empty last component */
		if (*s && !*++s)
			return llm_seterr("%s: member '%s': empty or '.' path component", bpath, name);
	}
	return 0;
}

/* Parse the records "LEN key=value\n" of a pax extended header; keep
 * "path" and "size". */
static int
pax_parse(const char *bpath, uint64_t hoff, const char *d, size_t n, char **path, uint64_t *size, int *has_size)
{
	size_t i = 0;

	while (i < n) {
		size_t len = 0, j = i;
		while (j < n && d[j] >= '0' && d[j] <= '9' && len < MAX_NAME * 4)
			len = len * 10 + (size_t)(d[j++] - '0');
		if (j == i || j >= n || d[j] != ' ' || len <= j - i + 1 || len > n - i || d[i + len - 1] != '\n')
			return llm_seterr("%s: bad pax record in the header at offset %" PRIu64, bpath, hoff);
		const char *kv = d + j + 1, *end = d + i + len - 1;
		const char *eq = memchr(kv, '=', (size_t)(end - kv));
		if (!eq)
			return llm_seterr("%s: bad pax record in the header at offset %" PRIu64, bpath, hoff);
		size_t klen = (size_t)(eq - kv), vlen = (size_t)(end - eq - 1);
		if (klen == 4 && memcmp(kv, "path", 4) == 0) {
			if (vlen == 0 || vlen > MAX_NAME || memchr(eq + 1, 0, vlen))
				return llm_seterr("%s: bad pax path at offset %" PRIu64, bpath, hoff);
			free(*path);
			*path = llm_xmalloc(vlen + 1);
			memcpy(*path, eq + 1, vlen);
			(*path)[vlen] = 0;
		} else if (klen == 4 && memcmp(kv, "size", 4) == 0) {
			uint64_t v = 0;
			if (vlen == 0 || vlen > 19)
				return llm_seterr("%s: bad pax size at offset %" PRIu64, bpath, hoff);
			for (size_t k = 0; k < vlen; k++) {
				if (eq[1 + k] < '0' || eq[1 + k] > '9')
					return llm_seterr("%s: bad pax size at offset %" PRIu64, bpath, hoff);
				v = v * 10 + (uint64_t)(eq[1 + k] - '0');
			}
			*size = v;
			*has_size = 1;
		} else if ((klen == 8 && memcmp(kv, "linkpath", 8) == 0)) {
			return llm_seterr("%s: pax linkpath at offset %" PRIu64 ": links are not allowed", bpath, hoff);
		}
		i += len;
	}
	return 0;
}

static void
add_member(struct llm_bundle *b, char *name, uint64_t off, uint64_t size)
{
	struct llm_member *m;

	b->members = llm_xreallocarray(b->members, b->n + 1, sizeof(*b->members));
	m = &b->members[b->n++];
	m->name = name;
	m->offset = off;
	m->size = size;
	m->file = NULL;
	m->fsize = 0;
	if (b->is_dir) {
		m->label = llm_path_join(b->path, name);
		m->file = llm_xstrdup(m->label);
		m->fsize = size;
	} else
		m->label = llm_xasprintf("%s: %s", b->path, name);
}

/* The name of a build directory's bundle, whose aligned member stands in
 * for the directory's missing weights (bundle.h). */
#define DIR_BUNDLE "model.llm"

static int
open_tar(struct llm_bundle *b)
{
	uint8_t h[BLOCK];
	uint64_t off = 0;
	char *pax_path = NULL;
	uint64_t pax_size = 0;
	int has_pax = 0, has_pax_size = 0;
	const char *p = b->path;

	for (;;) {
		if (off + BLOCK > b->size) {
			if (off == 0)
				return llm_seterr("%s: not a model bundle (too short for a tar header)", p);
			goto truncated;
		}
		if (pread_full(b->fd, h, BLOCK, off) < 0) {
			free(pax_path);
			return llm_seterr("%s: read:", p);
		}
		if (all_zero(h, BLOCK)) {
			/* The end: a second zero block must follow. */
			if (off + 2 * BLOCK > b->size)
				goto truncated;
			free(pax_path); /* a pax header without a member is an error below */
			if (pread_full(b->fd, h, BLOCK, off + BLOCK) < 0)
				return llm_seterr("%s: read:", p);
			if (!all_zero(h, BLOCK))
				return llm_seterr("%s: damaged end-of-archive marker at offset %" PRIu64, p, off);
			if (has_pax)
				return llm_seterr("%s: pax header without a member at the end", p);
			break;
		}
		if (memcmp(h + 257, "ustar", 5) != 0) {
			free(pax_path);
			if (off == 0)
				return llm_seterr("%s: not a model bundle (no ustar header)", p);
			return llm_seterr("%s: bad tar header at offset %" PRIu64 " (damaged?)", p, off);
		}
		if (!tar_checksum_ok(h)) {
			free(pax_path);
			return llm_seterr("%s: bad tar header checksum at offset %" PRIu64 " (damaged?)", p, off);
		}
		uint64_t size;
		if (tar_number(h + 124, 12, &size) < 0) {
			free(pax_path);
			return llm_seterr("%s: bad member size in the header at offset %" PRIu64, p, off);
		}
		int type = h[156];
		uint64_t hoff = off, data = off + BLOCK;
		if (type == 'x') {
			char *d;
			if (size > b->size || data > b->size - size)
				goto truncated; /* which frees pax_path */
			off = data + LLM_ALIGN_UP(size, BLOCK);
			if (has_pax || size > 1 << 20) {
				free(pax_path);
				return llm_seterr("%s: unexpected pax header at offset %" PRIu64, p, hoff);
			}
			d = llm_xmalloc((size_t)size + 1);
			if (pread_full(b->fd, d, (size_t)size, data) < 0) {
				free(d);
				free(pax_path);
				return llm_seterr("%s: read:", p);
			}
			int rc = pax_parse(p, hoff, d, (size_t)size, &pax_path, &pax_size, &has_pax_size);
			free(d);
			if (rc < 0) {
				free(pax_path);
				return -1;
			}
			has_pax = 1;
			continue;
		}

		/* The member's name: pax path, else prefix/name. */
		char *name;
		if (pax_path) {
			name = pax_path;
			pax_path = NULL;
		} else {
			char nm[101], pre[156];
			memcpy(nm, h, 100);
			nm[100] = 0;
			/* POSIX ustar has a name prefix there; GNU tar's
			 * "ustar  " header has other fields. */
			memcpy(pre, h + 345, 155);
			pre[memcmp(h + 257, "ustar", 6) == 0 ? 155 : 0] = 0;
			name = *pre ? llm_xasprintf("%s/%s", pre, nm) : llm_xstrdup(nm);
		}
		if (has_pax_size)
			size = pax_size;
		has_pax = has_pax_size = 0;
		if (type != '0' && type != 0) {
			const char *what = type == '1' || type == '2' ? "a link" :
			    type == '3' || type == '4'                ? "a device" :
			    type == '5'                               ? "a directory" :
			    type == '6'                               ? "a FIFO" :
									"not a regular file";
			llm_seterr("%s: member '%s' is %s (only regular files are allowed)", p, name, what);
			free(name);
			return -1;
		}
		if (check_name(p, name) < 0) {
			free(name);
			return -1;
		}
		if (llm_bundle_find(b, name)) {
			llm_seterr("%s: duplicate member '%s'", p, name);
			free(name);
			return -1;
		}
		if (size > b->size || data > b->size - size) {
			llm_seterr("%s: member '%s' extends past the end of the file (truncated?)", p, name);
			free(name);
			return -1;
		}
		off = data + LLM_ALIGN_UP(size, BLOCK);
		if (b->n >= MAX_MEMBERS) {
			free(name);
			return llm_seterr("%s: more than %d members", p, MAX_MEMBERS);
		}
		add_member(b, name, data, size);
	}
	return 0;
truncated:
	free(pax_path);
	return llm_seterr("%s: truncated (no end-of-archive marker)", p);
}

static int
cmp_members(const void *a, const void *b)
{
	return strcmp(((const struct llm_member *)a)->name, ((const struct llm_member *)b)->name);
}

static int
open_dir(struct llm_bundle *b)
{
	DIR *d;
	struct dirent *e;

	if (!(d = opendir(b->path)))
		return llm_seterr("%s:", b->path);
	while ((e = readdir(d))) {
		struct stat st;
		char *path;
		if (e->d_name[0] == '.')
			continue;
		path = llm_path_join(b->path, e->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			add_member(b, llm_xstrdup(e->d_name), 0, (uint64_t)st.st_size);
		free(path);
	}
	closedir(d);
	/* the weights moved into model.llm (model.mk): its aligned member */
	struct llm_bundle inner;
	char *bpath = llm_path_join(b->path, DIR_BUNDLE);
	if (llm_bundle_find(b, DIR_BUNDLE) && llm_bundle_open(&inner, bpath) == 0) {
		for (size_t i = 0; i < inner.n; i++) {
			const struct llm_member *im = &inner.members[i];
			if (im->offset % LLM_BUNDLE_ALIGN || strcmp(im->name, LLM_BUNDLE_PAD) == 0 ||
			    llm_bundle_find(b, im->name))
				continue;
			add_member(b, llm_xstrdup(im->name), im->offset, im->size);
			struct llm_member *m = &b->members[b->n - 1];
			free(m->label);
			free(m->file);
			m->label = llm_xasprintf("%s: %s", bpath, im->name);
			m->file = llm_xstrdup(bpath);
			m->fsize = inner.size;
		}
		llm_bundle_close(&inner);
	}
	free(bpath);
	qsort(b->members, b->n, sizeof(*b->members), cmp_members);
	return 0;
}

int
llm_bundle_open(struct llm_bundle *b, const char *path)
{
	struct stat st;

	memset(b, 0, sizeof(*b));
	b->fd = -1;
	b->path = llm_xstrdup(path);
	if (stat(path, &st) < 0) {
		llm_seterr("%s:", path);
		goto fail;
	}
	if (S_ISDIR(st.st_mode)) {
		b->is_dir = 1;
		if (open_dir(b) < 0)
			goto fail;
		return 0;
	}
	/* before open: a FIFO would block it */
	if (!S_ISREG(st.st_mode)) {
		llm_seterr("%s: not a regular file or directory", path);
		goto fail;
	}
	if ((b->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0) {
		llm_seterr("%s:", path);
		goto fail;
	}
	if (fstat(b->fd, &st) < 0) {
		llm_seterr("%s:", path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		llm_seterr("%s: not a regular file or directory", path);
		goto fail;
	}
	b->size = (uint64_t)st.st_size;
	if (open_tar(b) < 0)
		goto fail;
	return 0;
fail:
	llm_bundle_close(b);
	return -1;
}

void
llm_bundle_close(struct llm_bundle *b)
{
	for (size_t i = 0; i < b->n; i++) {
		free(b->members[i].name);
		free(b->members[i].label);
		free(b->members[i].file);
	}
	free(b->members);
	if (b->fd >= 0)
		close(b->fd);
	free(b->path);
	memset(b, 0, sizeof(*b));
	b->fd = -1;
}

const struct llm_member *
llm_bundle_find(const struct llm_bundle *b, const char *name)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->members[i].name, name) == 0)
			return &b->members[i];
	return NULL;
}

const struct llm_member *
llm_bundle_get(const struct llm_bundle *b, const char *name)
{
	const struct llm_member *m = llm_bundle_find(b, name);
	if (!m) {
		if (b->is_dir)
			llm_seterr("%s/%s: no such file", b->path, name);
		else
			llm_seterr("%s: no member '%s'", b->path, name);
	}
	return m;
}

/* Open a directory member and check that it is still the size it had. */
static int
open_member_file(const struct llm_bundle *b, const struct llm_member *mb)
{
	struct stat st;
	int fd = open(mb->file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return llm_seterr("%s:", mb->file);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != mb->fsize) {
		close(fd);
		return llm_seterr("%s: changed while in use", mb->label);
	}
	return fd;
}

int
llm_bundle_read(const struct llm_bundle *b, const struct llm_member *mb, char **data, size_t *len)
{
	int fd = b->fd;
	uint64_t off = mb->offset;
	char *p;

	if (mb->size >= SIZE_MAX)
		return llm_seterr("%s: too large", mb->label);
	if (b->is_dir && (fd = open_member_file(b, mb)) < 0)
		return -1;
	p = llm_xmalloc((size_t)mb->size + 1);
	if (pread_full(fd, p, (size_t)mb->size, off) < 0) {
		free(p);
		if (b->is_dir)
			close(fd);
		return llm_seterr("%s: read error (truncated?)", mb->label);
	}
	if (b->is_dir)
		close(fd);
	p[mb->size] = 0;
	*data = p;
	if (len)
		*len = (size_t)mb->size;
	return 0;
}

int
llm_bundle_map(const struct llm_bundle *b, const struct llm_member *mb, struct llm_bundle_map *m)
{
	static const uint8_t empty[1];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t base = mb->offset / page * page, delta = mb->offset - base;
	int fd = b->fd;
	void *p;

	memset(m, 0, sizeof(*m));
	if (mb->size == 0) {
		m->p = empty;
		return 0;
	}
	if (mb->size + delta > SIZE_MAX)
		return llm_seterr("%s: too large to map", mb->label);
	if (b->is_dir && (fd = open_member_file(b, mb)) < 0)
		return -1;
	p = mmap(NULL, (size_t)(mb->size + delta), PROT_READ, MAP_PRIVATE, fd, (off_t)base);
	if (b->is_dir)
		close(fd);
	if (p == MAP_FAILED)
		return llm_seterr("%s: mmap:", mb->label);
	m->base = p;
	m->base_len = (size_t)(mb->size + delta);
	m->p = (const uint8_t *)p + delta;
	m->len = (size_t)mb->size;
	return 0;
}

void
llm_bundle_unmap(struct llm_bundle_map *m)
{
	if (m->base)
		munmap(m->base, m->base_len);
	memset(m, 0, sizeof(*m));
}

int
llm_bundle_memfd(const struct llm_bundle *b, const struct llm_member *mb)
{
	const char *base = strrchr(mb->name, '/') ? strrchr(mb->name, '/') + 1 : mb->name;
	int fd = memfd_create(base, MFD_CLOEXEC), src = b->fd;
	char buf[1 << 16];
	uint64_t done = 0;

	if (fd < 0) {
		const char *dir = getenv("TMPDIR");
		char *tmp = llm_xasprintf("%s/llm-XXXXXX", dir && *dir ? dir : "/tmp");
		if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
			llm_seterr("%s: memfd_create and %s both failed:", mb->label, tmp);
			free(tmp);
			return -1;
		}
		unlink(tmp);
		free(tmp);
	}
	if (b->is_dir && (src = open_member_file(b, mb)) < 0) {
		close(fd);
		return -1;
	}
	while (done < mb->size) {
		size_t n = mb->size - done < sizeof(buf) ? (size_t)(mb->size - done) : sizeof(buf);
		if (pread_full(src, buf, n, mb->offset + done) < 0) {
			llm_seterr("%s: read error (truncated?)", mb->label);
			goto fail;
		}
		for (size_t w = 0; w < n;) {
			ssize_t r = write(fd, buf + w, n - w);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				llm_seterr("%s: copy to a memory file:", mb->label);
				goto fail;
			}
			w += (size_t)r;
		}
		done += n;
	}
	if (b->is_dir)
		close(src);
	return fd;
fail:
	if (b->is_dir)
		close(src);
	close(fd);
	return -1;
}

/* dlopen's failure, said once: dlerror() names the path it was given
 * ("x/libmodel.so: ..." or "/proc/self/fd/N: ..."), which the member's
 * label replaces. */
static void
dl_failed(const struct llm_member *mb, const char *path)
{
	const char *e = dlerror();
	if (!e)
		e = "dlopen failed";
	llm_seterr("%s: %s", mb->label, e + llm_prefix_len(e, strlen(e), path));
}

void *
llm_bundle_dlopen(const struct llm_bundle *b, const struct llm_member *mb, int flags)
{
	void *h;

	if (b->is_dir) {
		/* A path with a slash, so that dlopen does not search. */
		char *path = strchr(mb->file, '/') ? llm_xstrdup(mb->file) : llm_xasprintf("./%s", mb->file);
		h = dlopen(path, flags);
		if (!h)
			dl_failed(mb, path);
		free(path);
		return h;
	}
	int fd = llm_bundle_memfd(b, mb);
	if (fd < 0)
		return NULL;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	h = dlopen(path, flags);
	if (!h)
		dl_failed(mb, path);
	close(fd);
	return h;
}

/* ---- writing ---- */

struct wctx {
	FILE *fp;        /* NULL: count only */
	uint64_t n;      /* bytes written so far */
	const char *out; /* the bundle, for messages */
	int err;         /* errno of a failed write */
	struct llm_progress *pr;
	uint64_t total; /* the members' bytes, for the progress line */
};

static la_ssize_t
write_cb(struct archive *a, void *cd, const void *buf, size_t len)
{
	struct wctx *w = cd;
	if (w->fp && fwrite(buf, 1, len, w->fp) != len) {
		w->err = errno ? errno : EIO;
		archive_set_error(a, w->err, "write error");
		return -1;
	}
	w->n += len;
	if (w->fp && w->pr)
		llm_progress_show(w->pr, w->out, w->n, w->total, "writing ");
	return (la_ssize_t)len;
}

static struct archive *
new_writer(struct wctx *w)
{
	struct archive *a = archive_write_new();
	if (!a)
		llm_fatal("out of memory");
	/* pax restricted: plain ustar headers unless a member needs pax
	 * records; no blocking, so that every byte reaches write_cb at once
	 * and w->n is the exact position. */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(a) != ARCHIVE_OK || archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK ||
	    archive_write_open(a, w, NULL, write_cb, NULL) != ARCHIVE_OK)
		llm_fatal("libarchive: %s", archive_error_string(a));
	return a;
}

static struct archive_entry *
new_entry(const char *name, uint64_t size)
{
	struct archive_entry *e = archive_entry_new();
	if (!e)
		llm_fatal("out of memory");
	archive_entry_set_pathname(e, name);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_mtime(e, 0, 0);
	archive_entry_set_uid(e, 0);
	archive_entry_set_gid(e, 0);
	return e;
}

/* The bytes of the header(s) libarchive writes before a member's data.
 * They depend on the size only through the pax "size" record of members
 * of 8 GiB or more (the ustar field holds 11 octal digits); below that a
 * size 0 entry is measured, so that the scratch archive closes cleanly
 * (libarchive leaks a little on archive_write_fail). */
static uint64_t
header_bytes(const char *name, uint64_t size)
{
	int big = size >= (uint64_t)1 << 33;
	struct wctx w = {NULL, 0, name, 0, NULL, 0};
	struct archive *a = new_writer(&w);
	struct archive_entry *e = new_entry(name, big ? size : 0);
	uint64_t n;

	if (archive_write_header(a, e) != ARCHIVE_OK)
		llm_fatal("libarchive: %s: %s", name, archive_error_string(a));
	n = w.n;
	archive_entry_free(e);
	if (big)
		archive_write_fail(a); /* do not pad out the data on free */
	archive_write_free(a);
	return n;
}

/* A failed archive write: the output and errno when the file refused the
 * bytes (a full disk), else libarchive's reason. */
static int
write_failed(struct archive *a, const struct wctx *w)
{
	if (w->err) {
		errno = w->err;
		return llm_seterr("%s: write error:", w->out);
	}
	return llm_seterr("%s: %s", w->out, archive_error_string(a));
}

/* Copy a member from fd (label names it in read errors; fd -1: zeros). */
static int
write_member(struct archive *a, const struct wctx *w, const char *label, const char *name, int fd, uint64_t size)
{
	static char buf[1 << 20];
	struct archive_entry *e = new_entry(name, size);
	uint64_t done = 0;

	if (archive_write_header(a, e) != ARCHIVE_OK) {
		archive_entry_free(e);
		return write_failed(a, w);
	}
	archive_entry_free(e);
	while (done < size) {
		size_t n = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
		if (fd < 0)
			memset(buf, 0, n);
		else {
			ssize_t r = read(fd, buf, n);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return llm_seterr("%s: read:", label);
			if (r == 0)
				return llm_seterr("%s: shrank while being copied", label);
			n = (size_t)r;
		}
		if (archive_write_data(a, buf, n) != (la_ssize_t)n)
			return write_failed(a, w);
		done += n;
	}
	return 0;
}

int
llm_bundle_write(const char *out, const struct llm_bundle_src *src, size_t n)
{
	struct llm_out o;
	struct llm_progress pr;
	struct wctx w = {NULL, 0, out, 0, &pr, 0};
	struct archive *a;
	uint64_t *offs = llm_xcalloc(n, sizeof(*offs));
	int rc = -1;

	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (src[i].size)
			w.total += src[i].size;
		else if (stat(src[i].path, &st) == 0)
			w.total += (uint64_t)st.st_size;
	}
	llm_progress_begin(&pr);

	for (size_t i = 0; i < n; i++)
		if (strcmp(src[i].name, LLM_BUNDLE_PAD) == 0 || check_name(out, src[i].name) < 0) {
			free(offs);
			return llm_seterr("%s: bad member name '%s'", out, src[i].name);
		}
	if (llm_out_open(&o, out) < 0) {
		free(offs);
		return -1;
	}
	w.fp = o.fp;
	a = new_writer(&w);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		int fd = open(src[i].path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			llm_seterr("%s:", src[i].path);
			if (fd >= 0)
				close(fd);
			goto done;
		}
		if (!S_ISREG(st.st_mode)) {
			llm_seterr("%s: not a regular file", src[i].path);
			close(fd);
			goto done;
		}
		uint64_t size = (uint64_t)st.st_size;
		if (src[i].size) {
			/* a member of another bundle: its bytes */
			if (src[i].offset > size || src[i].size > size - src[i].offset ||
			    lseek(fd, (off_t)src[i].offset, SEEK_SET) < 0) {
				llm_seterr("%s: shorter than the member it holds", src[i].path);
				close(fd);
				goto done;
			}
			size = src[i].size;
		}
		if (src[i].align) {
			/* .pad's header, its data (a multiple of 512), then the
			 * member's header(s): the data lands on the boundary. */
			uint64_t ph = header_bytes(LLM_BUNDLE_PAD, 0), mh = header_bytes(src[i].name, size);
			uint64_t at = LLM_ALIGN_UP(w.n, BLOCK) + ph + mh,
				 pad = (LLM_BUNDLE_ALIGN - at % LLM_BUNDLE_ALIGN) % LLM_BUNDLE_ALIGN;
			if (header_bytes(LLM_BUNDLE_PAD, pad) != ph) {
				llm_seterr("%s: cannot pad to alignment", out);
				close(fd);
				goto done;
			}
			if (write_member(a, &w, out, LLM_BUNDLE_PAD, -1, pad) < 0) {
				close(fd);
				goto done;
			}
		}
		/* The previous member's padding is written with this header. */
		offs[i] = LLM_ALIGN_UP(w.n, BLOCK) + header_bytes(src[i].name, size);
		if (write_member(a, &w, src[i].path, src[i].name, fd, size) < 0) {
			close(fd);
			goto done;
		}
		close(fd);
		if (src[i].align && offs[i] % LLM_BUNDLE_ALIGN) {
			llm_seterr("%s: internal error: '%s' not aligned", out, src[i].name);
			goto done;
		}
	}
	if (archive_write_close(a) != ARCHIVE_OK) {
		write_failed(a, &w);
		goto done;
	}
	if (fflush(o.fp) != 0) {
		llm_seterr("%s: write error:", out);
		goto done;
	}

	/* Read the result back: every member where it was written. */
	if (o.tmp) {
		struct llm_bundle b;
		if (llm_bundle_open(&b, o.tmp) < 0) {
			llm_seterr("%s: written bundle does not read back: %s", out, llm_errmsg());
			goto done;
		}
		for (size_t i = 0; i < n; i++) {
			const struct llm_member *m = llm_bundle_find(&b, src[i].name);
			if (!m || m->offset != offs[i]) {
				llm_bundle_close(&b);
				llm_seterr("%s: internal error: member '%s' not where it was written", out,
				    src[i].name);
				goto done;
			}
		}
		llm_bundle_close(&b);
	}
	rc = 0;
done:
	if (rc != 0)
		archive_write_fail(a); /* do not pad out a half-written member */
	archive_write_free(a);
	llm_progress_end(&pr);
	free(offs);
	if (rc == 0)
		return llm_out_commit(&o);
	llm_out_abort(&o);
	return -1;
}
