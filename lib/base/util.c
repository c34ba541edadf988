/* util.c: see util.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

const char *llm_prog = "llm";
static _Thread_local char errmsg[1024]; /* per thread: runtime contexts run in threads */

/* Temporaries of open atomic outputs, removed on fatal errors and signals. */
#define MAXTMP 64
static char *volatile tmps[MAXTMP];

/* Directories llm_mkdirs made, removed after the temporaries when empty
 * (a failed program leaves no empty output folder). */
#define MAXMADE 16
static char *volatile made[MAXMADE];

static void
cleanup_tmps(void)
{
	for (int i = 0; i < MAXTMP; i++)
		if (tmps[i])
			unlink(tmps[i]);
	for (int i = MAXMADE - 1; i >= 0; i--)
		if (made[i])
			rmdir(made[i]);
}

/* Cleanups run on SIGINT, SIGTERM and SIGHUP, then the default action:
 * one handler for the process, so that no module's cleanup replaces
 * another's (spawn.c's forwarding handler chains to this one). */
#define MAXCLEANUP 8
static void (*volatile cleanups[MAXCLEANUP])(void);

static void
on_signal(int sig)
{
	for (int i = 0; i < MAXCLEANUP; i++)
		if (cleanups[i])
			cleanups[i]();
	signal(sig, SIG_DFL);
	raise(sig);
}

void
llm_atsignal(void (*fn)(void))
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	int i = 0;
	for (; i < MAXCLEANUP && cleanups[i]; i++)
		if (cleanups[i] == fn)
			return;
	if (i == MAXCLEANUP)
		llm_fatal("too many signal cleanups");
	if (i == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t j = 0; j < LLM_NELEM(sigs); j++)
			sigaction(sigs[j], &sa, NULL);
	}
	cleanups[i] = fn;
}

/* The signals cleanups run on, held from the creation of a temporary (or
 * folder) until it is recorded: one delivered in between would find the
 * file made and not yet known, and leave it. */
static void
hold_signals(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

static void
release_signals(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void
track_tmp(char *path)
{
	for (int i = 0; i < MAXTMP; i++)
		if (!tmps[i]) {
			tmps[i] = path;
			return;
		}
	llm_fatal("too many open outputs");
}

static void
untrack_tmp(const char *path)
{
	for (int i = 0; i < MAXTMP; i++)
		if (tmps[i] == path)
			tmps[i] = NULL;
}

void
llm_tmp_track(char *path)
{
	llm_atsignal(cleanup_tmps);
	track_tmp(path);
}

void
llm_tmp_untrack(const char *path)
{
	untrack_tmp(path);
}

size_t
llm_prefix_len(const char *s, size_t n, const char *prefix)
{
	size_t pn = strlen(prefix);
	return n > pn + 2 && strncmp(s, prefix, pn) == 0 && s[pn] == ':' && s[pn + 1] == ' ' ? pn + 2 : 0;
}

const char *
llm_setprog(const char *argv0)
{
	const char *s = strrchr(argv0, '/');
	llm_prog = s ? s + 1 : argv0;
	return llm_prog;
}

#ifndef LLM_VERSION
#define LLM_VERSION "unknown"
#endif
#ifndef LLM_LLVM_VERSION
#define LLM_LLVM_VERSION "unknown"
#endif

static _Noreturn void
exit_stdout(void)
{
	exit(fflush(stdout) != 0 || ferror(stdout) ? LLM_EXIT_FAIL : LLM_EXIT_OK);
}

void
llm_help(const char *options)
{
	printf("\n%s", options);
	exit_stdout();
}

void
llm_print_version(void)
{
	printf("%s (llm) %s, built with MLIR/LLVM %s\n", llm_prog, LLM_VERSION, LLM_LLVM_VERSION);
	exit_stdout();
}

void
llm_std_option(int ch, const char *usage, const char *options)
{
	if (ch == 'h' || ch == LLM_OPT_HELP)
		fputs(usage, stdout);
	if (ch == 'h')
		exit_stdout();
	if (ch == LLM_OPT_HELP)
		llm_help(options);
	if (ch == LLM_OPT_VERSION)
		llm_print_version();
}
/* A message is one line: the control characters in it (of a file name,
 * or of input a parser quotes) are written as C escapes. */
static void
one_line(char *buf, size_t n)
{
	char tmp[2048];
	size_t j = 0;

	for (size_t i = 0; buf[i] && j + 5 < sizeof(tmp); i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c >= 0x20 && c != 0x7f)
			tmp[j++] = (char)c;
		else if (c == '\n' || c == '\t' || c == '\r') {
			tmp[j++] = '\\';
			tmp[j++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
		} else
			j += (size_t)snprintf(tmp + j, sizeof(tmp) - j, "\\x%02x", c);
	}
	tmp[j] = 0;
	snprintf(buf, n, "%s", tmp);
}

static void
vformat(char *buf, size_t n, const char *fmt, va_list ap, int err)
{
	size_t len;

	vsnprintf(buf, n, fmt, ap);
	len = strlen(fmt);
	if (len > 0 && fmt[len - 1] == ':') {
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, " %s", strerror(err));
	}
	one_line(buf, n);
}

static void
vwarn(const char *fmt, va_list ap, int err)
{
	char buf[2048];

	vformat(buf, sizeof(buf), fmt, ap, err);
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", llm_prog, buf);
}

void
llm_warn(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap, err);
	va_end(ap);
}

void
llm_fatal(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

#ifdef LLM_LIBRARY
	/* libllm (include/llm.h) never prints nor exits: only a failed
	 * allocation comes here from its code, and it aborts, as glib does */
	(void)err;
	(void)ap;
	(void)fmt;
	abort();
#else
	va_start(ap, fmt);
	vwarn(fmt, ap, err);
	va_end(ap);
	cleanup_tmps();
	exit(LLM_EXIT_FAIL);
#endif
}

int
llm_seterr(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	/* Formatted aside first: an argument may be llm_errmsg() itself
	 * ("%s: %s", where, llm_errmsg()), which formatting in place would
	 * overwrite while reading it. */
	char tmp[sizeof(errmsg)];
	va_start(ap, fmt);
	vformat(tmp, sizeof(tmp), fmt, ap, err);
	va_end(ap);
	memcpy(errmsg, tmp, sizeof(errmsg));
	return -1;
}

const char *
llm_errmsg(void)
{
	return errmsg;
}

void *
llm_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		llm_fatal("out of memory allocating %zu bytes", n);
	return p;
}

void *
llm_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		llm_fatal("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

void *
llm_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		llm_fatal("out of memory allocating %zu bytes", n);
	return p;
}

void *
llm_xreallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		llm_fatal("out of memory: %zu x %zu bytes overflows", n, size);
	return llm_xrealloc(p, n * size);
}

char *
llm_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(llm_xmalloc(n), s, n);
}

uint64_t
llm_get_le(const void *p, int n)
{
	const uint8_t *b = p;
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

void
llm_put_le(void *p, uint64_t v, int n)
{
	uint8_t *b = p;
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> 8 * i);
}

/* The first n bytes of s (which holds at least n), terminated. */
char *
llm_xstrndup(const char *s, size_t n)
{
	char *p = llm_xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *
llm_xasprintf(const char *fmt, ...)
{
	struct llm_buf b = {0};
	va_list ap;

	va_start(ap, fmt);
	llm_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	return b.p;
}

int
llm_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno == ERANGE)
		return llm_seterr("'%s' is not an integer", s);
	if (v < min || v > max)
		return llm_seterr("'%s' is out of range [%lld, %lld]", s, (long long)min, (long long)max);
	*out = v;
	return 0;
}

int
llm_parse_f64(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno == ERANGE || !isfinite(v))
		return llm_seterr("'%s' is not a finite number", s);
	*out = v;
	return 0;
}

void
llm_buf_add(struct llm_buf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		b->p = llm_xrealloc(b->p, cap);
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = 0;
}

void
llm_buf_puts(struct llm_buf *b, const char *s)
{
	llm_buf_add(b, s, strlen(s));
}

void
llm_buf_vprintf(struct llm_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		llm_fatal("bad format '%s'", fmt);
	llm_buf_add(b, "", 0);
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		b->p = llm_xrealloc(b->p, cap);
		b->cap = cap;
	}
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void
llm_buf_printf(struct llm_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	llm_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void
llm_buf_free(struct llm_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int
llm_read_file(const char *path, char **data, size_t *len)
{
	struct llm_buf b = {0};
	char chunk[65536];
	size_t n;
	FILE *fp;

	if (!(fp = fopen(path, "rb")))
		return llm_seterr("%s:", path);
	while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
		llm_buf_add(&b, chunk, n);
	if (ferror(fp)) {
		fclose(fp);
		llm_buf_free(&b);
		return llm_seterr("%s: read error:", path);
	}
	fclose(fp);
	llm_buf_add(&b, "", 0);
	*data = b.p;
	if (len)
		*len = b.len;
	return 0;
}

int
llm_map_file(struct llm_map *m, const char *path)
{
	static const uint8_t empty[1];
	struct stat st;
	void *p;
	int fd;

	/* O_NONBLOCK: a FIFO is refused below instead of waiting for a writer */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return llm_seterr("%s:", path);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return llm_seterr("%s:", path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return llm_seterr("%s: not a regular file", path);
	}
	m->len = (size_t)st.st_size;
	if (m->len == 0) {
		m->p = empty;
		close(fd);
		return 0;
	}
	p = mmap(NULL, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return llm_seterr("%s: mmap:", path);
	m->p = p;
	return 0;
}

void
llm_unmap(struct llm_map *m)
{
	if (m->p && m->len)
		munmap((void *)m->p, m->len);
	m->p = NULL;
	m->len = 0;
}

/* The file a path names after its symbolic links: path itself, or the
 * end of the chain (which may not exist), as a new string; NULL with
 * llm_errmsg for a loop. */
static char *
follow_links(const char *path)
{
	char *p = llm_xstrdup(path);
	struct stat st;

	for (int hops = 0; lstat(p, &st) == 0 && S_ISLNK(st.st_mode); hops++) {
		char buf[PATH_MAX];
		ssize_t n;
		if (hops == 40 || (n = readlink(p, buf, sizeof(buf) - 1)) < 0) {
			errno = hops == 40 ? ELOOP : errno;
			llm_seterr("%s:", path);
			free(p);
			return NULL;
		}
		buf[n] = 0;
		char *slash = strrchr(p, '/'), *next;
		if (buf[0] == '/' || !slash)
			next = llm_xstrdup(buf);
		else
			next = llm_xasprintf("%.*s/%s", (int)(slash - p), p, buf);
		free(p);
		p = next;
	}
	return p;
}

int
llm_out_open(struct llm_out *o, const char *path)
{
	struct stat st;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	if (strcmp(path, "-") == 0) {
		o->path = llm_xstrdup(path);
		o->fp = stdout;
		o->fd = 1;
		return 0;
	}
	if (!(o->path = follow_links(path)))
		return -1;
	if (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)) {
			llm_seterr("%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" : "is a socket");
			free(o->path);
			o->path = NULL;
			return -1;
		}
		/* a device or a FIFO: written in place */
		if ((o->fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC)) < 0 || !(o->fp = fdopen(o->fd, "wb"))) {
			llm_seterr("%s:", path);
			if (o->fd >= 0)
				close(o->fd);
			free(o->path);
			memset(o, 0, sizeof(*o));
			o->fd = -1;
			return -1;
		}
		o->inplace = 1;
		return 0;
	}
	o->tmp = llm_xasprintf("%s.tmp.XXXXXX", o->path);
	llm_atsignal(cleanup_tmps);
	sigset_t old;
	hold_signals(&old);
	if ((o->fd = mkstemp(o->tmp)) >= 0)
		track_tmp(o->tmp);
	release_signals(&old);
	if (o->fd < 0) {
		int err = errno;
		free(o->tmp);
		free(o->path);
		o->tmp = o->path = NULL;
		errno = err;
		return llm_seterr("%s:", path);
	}
	fchmod(o->fd, 0644 & ~umask(umask(0)));
	if (!(o->fp = fdopen(o->fd, "wb"))) {
		llm_seterr("%s:", path);
		llm_out_abort(o);
		return -1;
	}
	return 0;
}

int
llm_out_commit(struct llm_out *o)
{
	int rc = 0;

	if (fflush(o->fp) != 0 || ferror(o->fp))
		rc = llm_seterr("%s: write error:", o->path);
	if (o->inplace) {
		if (fclose(o->fp) != 0 && rc == 0)
			rc = llm_seterr("%s: close:", o->path);
		free(o->path);
		memset(o, 0, sizeof(*o));
		o->fd = -1;
		return rc;
	}
	if (!o->tmp) {
		free(o->path);
		o->path = NULL;
		return rc;
	}
	if (rc == 0 && fsync(o->fd) != 0 && errno != EINVAL)
		rc = llm_seterr("%s: fsync:", o->path);
	if (fclose(o->fp) != 0 && rc == 0)
		rc = llm_seterr("%s: close:", o->path);
	o->fp = NULL;
	if (rc == 0 && rename(o->tmp, o->path) != 0)
		rc = llm_seterr("%s: rename:", o->path);
	if (rc != 0)
		unlink(o->tmp);
	untrack_tmp(o->tmp);
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return rc;
}

void
llm_out_abort(struct llm_out *o)
{
	if (o->inplace && o->fp)
		fclose(o->fp);
	if (o->tmp) {
		if (o->fp)
			fclose(o->fp);
		else if (o->fd >= 0)
			close(o->fd);
		unlink(o->tmp);
		untrack_tmp(o->tmp);
		free(o->tmp);
	}
	free(o->path);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

int
llm_write_file(const char *path, const void *p, size_t n)
{
	struct llm_out o;

	if (llm_out_open(&o, path) < 0)
		return -1;
	if (n && fwrite(p, 1, n, o.fp) != n) {
		llm_seterr("%s: write error:", path);
		llm_out_abort(&o);
		return -1;
	}
	return llm_out_commit(&o);
}

int
llm_mkdirs(const char *path)
{
	char *p;

	if (!*path)
		return llm_seterr("empty directory name");
	p = llm_xstrdup(path);
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == 0) {
			char c = *s;
			*s = 0;
			llm_atsignal(cleanup_tmps);
			sigset_t old;
			hold_signals(&old);
			int rc = mkdir(p, 0777), err = errno;
			if (rc == 0)
				for (int i = 0; i < MAXMADE; i++)
					if (!made[i]) {
						made[i] = llm_xstrdup(p);
						break;
					}
			release_signals(&old);
			errno = err;
			if (rc != 0 && errno != EEXIST) {
				llm_seterr("%s:", p);
				free(p);
				return -1;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
		llm_seterr("%s: not a directory", p);
		free(p);
		return -1;
	}
	free(p);
	return 0;
}

int
llm_path_inside(const char *rel)
{
	if (!*rel || rel[0] == '/')
		return 0;
	for (const char *p = rel; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		p += *p == '/';
	}
	return 1;
}

char *
llm_path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir);

	if (n == 0 || name[0] == '/')
		return llm_xstrdup(name);
	return llm_xasprintf("%s%s%s", dir, dir[n - 1] == '/' ? "" : "/", name);
}

int
llm_file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

uint64_t
llm_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

double
llm_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void
llm_progress_begin(struct llm_progress *p)
{
	const char *e = getenv("LLM_PROGRESS");
	int force = e && strcmp(e, "1") == 0;

	p->on = force || ((!e || strcmp(e, "0") != 0) && isatty(2));
	p->drawn = 0;
	p->t0 = llm_now();
	p->tlast = p->t0 - 1;
	p->delay = force ? 0 : 1.0;
}

void
llm_progress_show(struct llm_progress *p, const char *label, uint64_t done, uint64_t total, const char *fmt, ...)
{
	va_list ap;
	double t;

	if (!p->on)
		return;
	t = llm_now();
	if (t - p->t0 < p->delay || t - p->tlast < 0.25)
		return;
	p->tlast = t;
	if (done > total) /* a writer's total that leaves out its framing */
		done = total;
	fprintf(stderr, "\r%s: %s: ", llm_prog, label);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	double u = total >= 1000000000 ? 1e9 : 1e6;
	fprintf(stderr, "%.2f/%.2f %s (%.0f%%), %.0f MB/s\033[K", (double)done / u, (double)total / u,
	    u > 1e6 ? "GB" : "MB", 100.0 * (double)done / (double)(total ? total : 1),
	    (double)done / 1e6 / (t - p->t0 > 1e-3 ? t - p->t0 : 1e-3));
	p->drawn = 1;
}

void
llm_progress_end(struct llm_progress *p)
{
	if (p->drawn)
		fputs("\r\033[K", stderr);
	p->drawn = 0;
}

char *
llm_cache_root(void)
{
	const char *e;
	if ((e = getenv("LLM_CACHE_DIR")) && *e)
		return llm_xstrdup(e);
	if ((e = getenv("XDG_CACHE_HOME")) && *e)
		return llm_path_join(e, "llm");
	if ((e = getenv("HOME")) && *e)
		return llm_xasprintf("%s/.cache/llm", e);
	llm_seterr("no cache directory: set HOME, XDG_CACHE_HOME or LLM_CACHE_DIR");
	return NULL;
}
