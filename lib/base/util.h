/* util.h: errors, checked allocation, atomic output and small helpers
 * shared by every llm-* program.
 *
 * Errors follow one format for every tool: "prog: file: message".  A
 * message whose format ends in ':' gets ": strerror(errno)" appended.
 * Library functions that can fail on bad input do not exit: they return -1
 * and leave a message (already naming the file) for llm_errmsg(). */
#ifndef LLM_UTIL_H
#define LLM_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes of every program (documented in each man page). */
#define LLM_EXIT_OK    0 /* success */
#define LLM_EXIT_FAIL  1 /* bad input data or failed processing */
#define LLM_EXIT_USAGE 2 /* usage error, or trouble (llm-verify-partition) */

#define LLM_NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define LLM_ALIGN_UP(x, a) (((x) + ((a) - 1)) / (a) * (a))

extern const char *llm_prog;

/* --help and --version, in every program's getopt_long table, and -h in
 * its short options: llm_std_option(ch, usage, options) answers the three
 * (-h the usage, --help the usage then the options, one a line, --version
 * llm_print_version) and exits 0 (1 on a write error); for any other ch
 * it returns. */
#define LLM_OPT_HELP 0x4801
#define LLM_OPT_VERSION 0x4802
#define LLM_STD_LONGOPTS {"help", 0, NULL, LLM_OPT_HELP}, {"version", 0, NULL, LLM_OPT_VERSION}
_Noreturn void llm_help(const char *options);
_Noreturn void llm_print_version(void);
void llm_std_option(int ch, const char *usage, const char *options);

const char *llm_setprog(const char *argv0);
void llm_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void llm_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Library error channel: llm_seterr formats (same ':' rule; a message is
 * one line, its control characters written as C escapes) and returns -1;
 * llm_errmsg returns the last message. */
int llm_seterr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *llm_errmsg(void);
/* The bytes of "prefix: " that message s[0, n) starts with (0: none), so
 * that a message said by another (a tool, dlerror) loses the prefix ours
 * gives again: one prefix, said once. */
size_t llm_prefix_len(const char *s, size_t n, const char *prefix);

void *llm_xmalloc(size_t n);
void *llm_xcalloc(size_t n, size_t size);
void *llm_xrealloc(void *p, size_t n);
void *llm_xreallocarray(void *p, size_t n, size_t size);
char *llm_xstrdup(const char *s);
char *llm_xstrndup(const char *s, size_t n);

/* Little-endian integers of n bytes (1 to 8) in a byte buffer. */
uint64_t llm_get_le(const void *p, int n);
void llm_put_le(void *p, uint64_t v, int n);
char *llm_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Numbers from option arguments: the whole string must parse and lie in
 * [min, max]; returns 0, or -1 with llm_errmsg set. */
int llm_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int llm_parse_f64(const char *s, double *out);

/* A growable byte buffer. */
struct llm_buf {
	char *p;
	size_t len, cap;
};
void llm_buf_add(struct llm_buf *b, const void *p, size_t n);
void llm_buf_puts(struct llm_buf *b, const char *s);
void llm_buf_printf(struct llm_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void llm_buf_vprintf(struct llm_buf *b, const char *fmt, va_list ap);
void llm_buf_free(struct llm_buf *b);

/* Whole-file read (NUL-terminated); -1 with llm_errmsg on failure. */
int llm_read_file(const char *path, char **data, size_t *len);

/* Read-only mapping of a whole file; -1 with llm_errmsg on failure.  An
 * empty file maps to a non-NULL zero-length region. */
struct llm_map {
	const uint8_t *p;
	size_t len;
};
int llm_map_file(struct llm_map *m, const char *path);
void llm_unmap(struct llm_map *m);

/* Registers fn (async-signal-safe: unlink, rmdir) to run on SIGINT,
 * SIGTERM and SIGHUP, before the signal's default action ends the
 * process.  Every registered cleanup runs, in order; registering one
 * twice registers it once.  spawn.c's handler, which kills a running
 * tool, chains to these. */
void llm_atsignal(void (*fn)(void));
/* A temporary file path (kept by the caller until untracked) removed by
 * llm_fatal and the signal cleanups; untracked when it is removed or
 * renamed by the program itself.  (llm_out does this for its own.) */
void llm_tmp_track(char *path);
void llm_tmp_untrack(const char *path);

/* Atomic output: data goes to "path.tmp.XXXXXX" in the same directory and
 * is renamed to path by llm_out_commit, after fflush, ferror and fsync.  Until
 * then the temporary is registered so that llm_fatal and SIGINT/SIGTERM
 * remove it: no half-written output survives a failure.  path "-" means
 * stdout (commit then only flushes and checks for errors).  A symbolic
 * link is written through: the temporary goes beside the file it names
 * (followed to the end of a chain, created if missing) and replaces that
 * file, the link stays.  An existing file that is not a regular one (a
 * device, a FIFO) is written in place, as cc and cp write it, never
 * replaced; a directory or a socket is refused. */
struct llm_out {
	char *path; /* the file written: path, or a link's target */
	char *tmp;
	FILE *fp;
	int fd;
	int inplace; /* writing into an existing non-regular file */
};
int llm_out_open(struct llm_out *o, const char *path);
int llm_out_commit(struct llm_out *o);
void llm_out_abort(struct llm_out *o);
/* Write a whole buffer atomically. */
int llm_write_file(const char *path, const void *p, size_t n);

/* mkdir -p; -1 with llm_errmsg on failure.  The directories it makes are
 * removed again, when empty, by llm_fatal and the signal cleanups. */
int llm_mkdirs(const char *path);
/* Join a directory and a name into a new string. */
char *llm_path_join(const char *dir, const char *name);
/* 1 when rel stays inside the directory it is relative to: not empty,
 * not absolute, no ".." component.  Every path a build's files name
 * (model.json's phases, partition.json's kernels, partitions and glue) is
 * checked so where it is read, so that no file outside the build is
 * opened for one. */
int llm_path_inside(const char *rel);
int llm_file_exists(const char *path);

/* Little-endian integers in file headers, whatever the host order. */
static inline uint32_t
llm_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t
llm_le64(const uint8_t *p)
{
	return (uint64_t)llm_le32(p) | (uint64_t)llm_le32(p + 4) << 32;
}

/* FNV-1a 64-bit, for fingerprints and identity hashes. */
#define LLM_FNV_INIT 0xcbf29ce484222325ULL
uint64_t llm_fnv1a(uint64_t h, const void *p, size_t n);

/* Monotonic clock in seconds. */
double llm_now(void);

/* A progress line on standard error for a long step, drawn only when
 * standard error is a terminal: first after a second, then at most four
 * times a second, each over the last; llm_progress_end erases it.  The
 * environment's LLM_PROGRESS=0 turns it off, LLM_PROGRESS=1 draws it from
 * the start whatever standard error is (for scripts and the tests). */
struct llm_progress {
	int on, drawn;
	double t0, tlast, delay;
};
void llm_progress_begin(struct llm_progress *p);
/* "prog: label: <what>d.dd/t.tt GB (P%), R MB/s" (MB below a GB), what
 * from fmt. */
void llm_progress_show(struct llm_progress *p, const char *label, uint64_t done, uint64_t total, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void llm_progress_end(struct llm_progress *p);

/* The toolchain's cache directory: $LLM_CACHE_DIR (set and not empty),
 * else $XDG_CACHE_HOME/llm, else ~/.cache/llm.  It holds models/
 * (llm-run's and llm-serve's compiled models) and objects/ (llm-lower's
 * objects).  A new string, or NULL with llm_errmsg when there is none. */
char *llm_cache_root(void);
#define LLM_CACHE_MODELS "models"
#define LLM_CACHE_OBJECTS "objects"

#endif
