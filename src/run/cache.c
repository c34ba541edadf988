/* cache.c: -m on a GGUF file or a Hugging Face checkpoint directory, for
 * llm-run and llm-serve (cache.h).  The source is compiled once, through
 * the same programs and pipelines/model.mk that a user runs by hand, into
 * an entry of the cache (--cache-dir, $LLM_CACHE_DIR, $XDG_CACHE_HOME/llm
 * or ~/.cache/llm): models/KEY/model.llm, KEY a hash of what decides the
 * build (below).  Later runs, of either program, open the entry at once.
 *
 * The key hashes the source's content and size (a GGUF file, or the
 * checkpoint's config, weights and tokenizer files; a file up to 256 MiB
 * whole, a larger one its first and last MiB and 64 KiB every 4 MiB),
 * the toolchain's version and the CPU (its model name and flags: the
 * build is for the CPU it runs on).  Not the path: a copy of a file
 * shares the entry.
 *
 * A build runs under an exclusive lock of models/KEY.lock, so concurrent
 * first runs build once (the others wait, then open the entry), into
 * models/KEY.tmp.PID, renamed to models/KEY when the bundle is whole.  A
 * build that fails, or is interrupted by SIGINT, SIGTERM or SIGHUP,
 * removes its directories and the lock file as it ends, and one that
 * succeeds its lock file: nothing is left but entries.  (What a SIGKILL
 * leaves goes with the next build of that key, or --prune-cache.) */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/base/dtype.h"
#include "../../lib/base/hash.h"
#include "../../lib/base/spawn.h"
#include "../../lib/formats/model.h"
#include "../../lib/formats/target.h"
#include "../../lib/base/util.h"
#include "cache.h"

#define WHOLE (UINT64_C(256) << 20)   /* files up to this size are hashed whole */
#define EDGE (UINT64_C(1) << 20)      /* else their first and last MiB */
#define STRIDE (UINT64_C(4) << 20)    /* and a sample every 4 MiB */
#define SAMPLE (UINT64_C(64) << 10)   /* of 64 KiB */

/* The cache's root as given: the option, else the environment's. */
static char *
cache_root_of(const struct run_cache *c)
{
	char *r = c->dir ? llm_xstrdup(c->dir) : llm_cache_root();
	if (!r)
		llm_fatal("%s, or give --cache-dir (or --no-cache)", llm_errmsg());
	return r;
}

/* The cache's root: the option, else the environment's; absolute (the
 * paths --list-cache prints and the lines say are). */
static char *
cache_root(const struct run_cache *c)
{
	char *r = cache_root_of(c), cwd[PATH_MAX];
	if (r[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return r;
	char *a = llm_path_join(cwd, r);
	free(r);
	return a;
}

/* 1 for a GGUF file, 2 for a checkpoint directory (config.json, no
 * model.json), 0 for anything else (a bundle or a build directory, opened
 * as it is). */
static int
source_kind(const char *path)
{
	struct stat sb;
	char magic[4];
	int kind = 0;

	if (stat(path, &sb) < 0)
		return 0;
	if (S_ISREG(sb.st_mode)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && read(fd, magic, 4) == 4 && memcmp(magic, "GGUF", 4) == 0)
			kind = 1;
		if (fd >= 0)
			close(fd);
	} else if (S_ISDIR(sb.st_mode)) {
		char *cfg = llm_path_join(path, "config.json"), *mj = llm_path_join(path, "model.json");
		int has_cfg = llm_file_exists(cfg), has_mj = llm_file_exists(mj);
		free(cfg);
		free(mj);
		if (!has_cfg && !has_mj)
			llm_fatal("%s: a directory that is neither a build (model.json) nor a Hugging Face checkpoint "
				  "(config.json)",
			    path);
		kind = has_cfg && !has_mj ? 2 : 0;
	}
	return kind;
}

/* The hash of a file's size and content (whole, or sampled: see the top). */
static uint64_t
hash_file(uint64_t h, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) < 0)
		llm_fatal("%s:", path);
	uint64_t size = (uint64_t)sb.st_size;
	h = llm_fnv1a(h, &size, sizeof(size));
	char *buf = llm_xmalloc(SAMPLE);
	for (uint64_t off = 0; off < size;) {
		uint64_t n = size - off < SAMPLE ? size - off : SAMPLE;
		ssize_t got = pread(fd, buf, (size_t)n, (off_t)off);
		if (got <= 0)
			llm_fatal("%s: read error:", path);
		/* each block by the word-wide hash, chained: a byte-wise FNV
		 * would cost every run a second per GiB read */
		uint64_t bh = llm_hash_bytes(buf, (size_t)got);
		h = llm_fnv1a(h, &bh, sizeof(bh));
		off += (uint64_t)got;
		if (size > WHOLE && off >= EDGE && off < size - EDGE) {
			/* the next sample, or the last MiB */
			uint64_t next = (off - (off % STRIDE)) + STRIDE;
			off = next < size - EDGE ? next : size - EDGE;
		}
	}
	free(buf);
	close(fd);
	return h;
}

/* The files of a checkpoint that decide its build, sorted. */
static int
keep_name(const char *n)
{
	static const char *const exact[] = {"config.json", "generation_config.json", "model.safetensors.index.json",
		"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json"};
	size_t l = strlen(n);
	for (size_t i = 0; i < LLM_NELEM(exact); i++)
		if (strcmp(n, exact[i]) == 0)
			return 1;
	return l > 12 && strcmp(n + l - 12, ".safetensors") == 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t
source_key(const char *path, int kind, const char *flags)
{
	/* (the text names llm-run, the first user: a new text would orphan
	 * every entry) */
	uint64_t h = llm_fnv1a(LLM_FNV_INIT, "llm-run cache 1 " LLM_VERSION, strlen("llm-run cache 1 " LLM_VERSION));
	char id[16384];
	llm_host_id(id, sizeof(id));
	h = llm_fnv1a(h, id, strlen(id));
	if (flags && *flags) /* a variant (the default build's key has none) */
		h = llm_fnv1a(h, flags, strlen(flags) + 1);
	if (kind == 1)
		return hash_file(h, path);
	DIR *d = opendir(path);
	if (!d)
		llm_fatal("%s:", path);
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		if (keep_name(e->d_name)) {
			names = llm_xreallocarray(names, n + 1, sizeof(*names));
			names[n++] = llm_xstrdup(e->d_name);
		}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		char *p = llm_path_join(path, names[i]);
		h = llm_fnv1a(h, names[i], strlen(names[i]) + 1);
		h = hash_file(h, p);
		free(p);
		free(names[i]);
	}
	free(names);
	return h;
}

static int
rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

static void
rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The directory this program runs from, and model.mk beside the
 * programs: $LLM_MODEL_MK, bin/../pipelines/model.mk (a source tree) or
 * bin/../share/llm/model.mk (installed). */
static char *
self_dir(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		llm_fatal("/proc/self/exe:");
	exe[n] = 0;
	*strrchr(exe, '/') = 0;
	return llm_xstrdup(exe);
}

static char *
find_model_mk(const char *bindir)
{
	const char *e = getenv("LLM_MODEL_MK");
	if (e && *e)
		return llm_xstrdup(e);
	static const char *const rel[] = {"/../pipelines/model.mk", "/../../pipelines/model.mk",
		"/../share/llm/model.mk"};
	for (size_t i = 0; i < LLM_NELEM(rel); i++) {
		char *p = llm_xasprintf("%s%s", bindir, rel[i]);
		if (llm_file_exists(p))
			return p;
		free(p);
	}
	llm_fatal("%s: no pipelines/model.mk beside the programs (set LLM_MODEL_MK)", bindir);
}

/* Compile src (kind) into out with model.mk; its lines on stderr. */
static void
build(const char *src, const char *out, const struct run_cache *c)
{
	char *bindir = self_dir(), *mk = find_model_mk(bindir), *abs = realpath(src, NULL);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct llm_argv av = {0};

	if (!abs)
		llm_fatal("%s:", src);
	llm_argv_add(&av, "make");
	llm_argv_add(&av, "--no-print-directory");
	llm_argv_addf(&av, "-j%ld", ncpu > 0 ? ncpu : 1);
	llm_argv_add(&av, "-f");
	llm_argv_add(&av, mk);
	llm_argv_addf(&av, "LLM=%s/", bindir);
	llm_argv_addf(&av, "MODEL=%s", abs);
	llm_argv_addf(&av, "OUT=%s", out);
	if (c->import_flags && *c->import_flags)
		llm_argv_addf(&av, "IMPORT_FLAGS=%s", c->import_flags);
	/* llm-lower's objects beside the models, in --cache-dir's objects/
	 * (an empty LLM_CACHE_DIR, no object cache, stays so) */
	const char *e = getenv("LLM_CACHE_DIR");
	if (c->dir && (!e || *e)) {
		char *root = cache_root(c);
		setenv("LLM_CACHE_DIR", root, 1);
		free(root);
	}
	/* a make of its own, not of a make this run may be part of */
	unsetenv("MAKEFLAGS");
	unsetenv("MFLAGS");
	unsetenv("MAKELEVEL");
	/* the step lines are progress: on stderr, stdout being the text */
	struct llm_spawn_opts so = {.stdout_to_stderr = 1, .verbose = c->verbose};
	if (llm_spawn(av.v, &so, NULL) < 0) {
		char *why = llm_xstrdup(llm_errmsg());
		rm_tree(out);
		llm_fatal("%s: compiling it failed: %s", src, why);
	}
	llm_argv_free(&av);
	free(abs);
	free(mk);
	free(bindir);
}

/* What a build in hand has made, removed when it ends otherwise than
 * whole (a failure, llm_fatal's exit, SIGINT, SIGTERM, SIGHUP): its
 * directories and its lock file, or --no-cache's directory. */
static struct {
	char *dirs[2]; /* models/KEY.tmp.PID and .keep, or --no-cache's */
	char *lock;    /* models/KEY.lock, held */
} live;

static void
remove_live(void)
{
	for (size_t i = 0; i < LLM_NELEM(live.dirs); i++)
		if (live.dirs[i])
			rm_tree(live.dirs[i]);
	if (live.lock)
		unlink(live.lock); /* a waiter sees its file go and locks a new one (lock_entry) */
}

/* The same on a signal, with what a handler may call: rm -rf for the
 * directories (nftw allocates). */
static void
remove_live_on_signal(void)
{
	for (size_t i = 0; i < LLM_NELEM(live.dirs); i++) {
		pid_t p;
		if (!live.dirs[i] || (p = fork()) < 0)
			continue;
		if (p == 0) {
			execl("/bin/rm", "rm", "-rf", "--", live.dirs[i], (char *)NULL);
			_exit(127);
		}
		while (waitpid(p, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (live.lock)
		unlink(live.lock);
}

static void
track_live(void)
{
	static int once;
	if (!once++) {
		atexit(remove_live);
		llm_atsignal(remove_live_on_signal);
	}
}

/* An exclusive lock of the entry's lock file (waiting, with a line, while
 * another run holds it): its descriptor.  A holder removes the file when
 * it is done, so a lock on a file no longer at lockp is taken again. */
static int
lock_entry(const char *lockp, const char *src)
{
	for (int said = 0;;) {
		int fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			llm_fatal("%s:", lockp);
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (!said++)
				fprintf(stderr, "%s: %s is being compiled by another run: waiting\n", llm_prog, src);
			if (flock(fd, LOCK_EX) < 0)
				llm_fatal("%s:", lockp);
		}
		struct stat a, b;
		if (fstat(fd, &a) == 0 && stat(lockp, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return fd;
		close(fd);
	}
}

char *
run_cache_model(const char *src, const struct run_cache *c)
{
	int kind = source_kind(src);
	if (!kind && c->user_flags)
		llm_fatal("%s: --import-flags: a bundle or a build directory is compiled already", src);
	if (!kind)
		return NULL;
	track_live();
	/* the variant's options, said once: "compiling X (--kv-dtype f16) into ..." */
	char *how = c->import_flags && *c->import_flags ? llm_xasprintf(" (%s)", c->import_flags) : llm_xstrdup("");
	if (c->off) {
		const char *t = getenv("TMPDIR");
		char *dir = llm_xasprintf("%s/%s.XXXXXX", t && *t ? t : "/tmp", llm_prog);
		if (!mkdtemp(dir))
			llm_fatal("%s:", dir);
		live.dirs[0] = dir; /* removed at exit */
		fprintf(stderr, "%s: compiling %s%s (--no-cache: for this run only)\n", llm_prog, src, how);
		free(how);
		char *out = llm_path_join(dir, "build");
		build(src, out, c);
		char *bundle = llm_path_join(out, "model.llm");
		free(out);
		return bundle;
	}
	char *root = cache_root(c), *models = llm_path_join(root, LLM_CACHE_MODELS), hex[17];
	llm_hex64(source_key(src, kind, c->import_flags), hex);
	char *entry = llm_path_join(models, hex), *bundle = llm_path_join(entry, "model.llm");
	if (llm_file_exists(bundle))
		goto done;
	if (llm_mkdirs(models) < 0)
		llm_fatal("%s", llm_errmsg());
	char *lockp = llm_xasprintf("%s.lock", entry);
	int lfd = lock_entry(lockp, src);
	live.lock = lockp;
	if (!llm_file_exists(bundle)) {
		/* an interrupted build's leftovers of this key go */
		char *pat = llm_xasprintf("%s.tmp.", hex);
		DIR *d = opendir(models);
		for (struct dirent *e; d && (e = readdir(d));)
			if (strncmp(e->d_name, pat, strlen(pat)) == 0) {
				char *p = llm_path_join(models, e->d_name);
				rm_tree(p);
				free(p);
			}
		if (d)
			closedir(d);
		free(pat);
		char *tmp = llm_xasprintf("%s.tmp.%ld", entry, (long)getpid());
		char *keep = llm_xasprintf("%s.tmp.%ld.keep", entry, (long)getpid());
		live.dirs[0] = tmp;
		live.dirs[1] = keep;
		fprintf(stderr, "%s: compiling %s%s into %s: once, later runs start at once\n", llm_prog, src, how,
		    entry);
		build(src, tmp, c);
		/* keep the bundle (all a run needs) and what it came from, by its absolute path */
		char *tb = llm_path_join(tmp, "model.llm"), *kb = llm_path_join(keep, "model.llm");
		char *info = llm_path_join(keep, "source"), *abs = realpath(src, NULL);
		if (mkdir(keep, 0755) < 0 || rename(tb, kb) < 0)
			llm_fatal("%s:", keep);
		/* the source's path, then the variant's llm-import options (if any) */
		FILE *f = fopen(info, "w");
		if (!f || fprintf(f, "%s\n%s\n", abs ? abs : src, c->import_flags ? c->import_flags : "") < 0 ||
		    fclose(f) != 0)
			llm_fatal("%s:", info);
		rm_tree(tmp);
		if (rename(keep, entry) < 0)
			llm_fatal("%s:", entry);
		live.dirs[0] = live.dirs[1] = NULL;
		free(tb), free(kb), free(info), free(keep), free(tmp), free(abs);
	}
	/* done: the lock file goes (remove_live at exit would too), then the lock */
	unlink(lockp);
	live.lock = NULL;
	close(lfd);
	free(lockp);
done:
	free(how);
	free(entry);
	free(models);
	free(root);
	return bundle;
}

static _Noreturn void usage_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void
usage_fail(const char *fmt, ...)
{
	char m[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	llm_warn("%s", m);
	exit(LLM_EXIT_USAGE);
}

void
run_cache_variant(struct run_cache *c, int64_t ctx, const char *ctk, const char *ctv)
{
	struct llm_buf f = {0};
	if (c->user_flags && *c->user_flags)
		llm_buf_puts(&f, c->user_flags);
	if (ctx > LLM_DEFAULT_MAX_CONTEXT)
		llm_buf_printf(&f, "%s--max-context %" PRId64, f.len ? " " : "", ctx);
	if (ctk && ctv && strcmp(ctk, ctv) != 0)
		usage_fail("-ctk %s -ctv %s: the KV cache has one type here (llm-import --kv-dtype)", ctk, ctv);
	const char *kv = ctk ? ctk : ctv;
	if (kv && !llm_dtype_is_float_weight(llm_dtype_from_name(kv)))
		usage_fail("%s %s: the KV cache's types are f32, f16 and bf16", ctk ? "-ctk" : "-ctv", kv);
	if (kv && strcmp(kv, "f32") != 0)
		llm_buf_printf(&f, "%s--kv-dtype %s", f.len ? " " : "", kv);
	free(c->import_flags);
	c->import_flags = f.p;
}

/* The size of a tree's files. */
static uint64_t tree_bytes;

static int
add_size(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)p, (void)ftw;
	if (flag == FTW_F)
		tree_bytes += (uint64_t)sb->st_size;
	return 0;
}

/* --prune-cache's part of llm-lower's object cache: every object (one
 * being written then fails to be cached, which only costs a later
 * lowering). */
static void
prune_objects(const char *root)
{
	char *dir = llm_path_join(root, LLM_CACHE_OBJECTS);
	DIR *d = opendir(dir);
	int n = 0;
	for (struct dirent *e; d && (e = readdir(d));) {
		char *p = llm_path_join(dir, e->d_name);
		n += unlink(p) == 0; /* (not ".", "..": directories) */
		free(p);
	}
	if (d)
		closedir(d);
	fprintf(stderr, "%s: %s: %d removed\n", llm_prog, dir, n);
	free(dir);
}

void
run_cache_list(const struct run_cache *c, int prune)
{
	char *root = cache_root(c), *models = llm_path_join(root, LLM_CACHE_MODELS);
	DIR *d = opendir(models);
	int n = 0;

	for (struct dirent *e; d && (e = readdir(d));) {
		const char *name = e->d_name;
		size_t l = strlen(name);
		if (name[0] == '.' || (l > 5 && strcmp(name + l - 5, ".lock") == 0))
			continue;
		char *p = llm_path_join(models, name);
		if (prune) {
			/* an entry being built (locked) stays */
			char *base = llm_xstrdup(name), *dot = strchr(base, '.');
			if (dot)
				*dot = 0;
			char *lockp = llm_xasprintf("%s/%s.lock", models, base);
			int lfd = open(lockp, O_RDWR | O_CLOEXEC);
			if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) == 0) {
				rm_tree(p);
				if (!dot)
					unlink(lockp);
				n++;
			}
			if (lfd >= 0)
				close(lfd);
			free(lockp);
			free(base);
		} else if (!strchr(name, '.')) {
			char *info = llm_path_join(p, "source"), src[PATH_MAX] = "?", flags[1024] = "";
			FILE *f = fopen(info, "r");
			if (f && fgets(src, sizeof(src), f))
				src[strcspn(src, "\n")] = 0;
			if (f && fgets(flags, sizeof(flags), f))
				flags[strcspn(flags, "\n")] = 0;
			if (f)
				fclose(f);
			struct stat sb;
			char when[32] = "?";
			if (stat(p, &sb) == 0)
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M", localtime(&sb.st_mtime));
			tree_bytes = 0;
			nftw(p, add_size, 16, FTW_PHYS);
			/* tab-separated columns (llm-run(1)): the key, the size, the
			 * date, the source, the bundle, for -m, then the build's
			 * llm-import options (empty for the default build) */
			printf("%s\t%8.1f MiB\t%s\t%s\t%s/model.llm\t%s\n", name, (double)tree_bytes / (1 << 20), when,
			    src, p, flags);
			free(info);
			n++;
		}
		free(p);
	}
	if (d)
		closedir(d);
	if (prune) {
		fprintf(stderr, "%s: %s: %d removed\n", llm_prog, models, n);
		prune_objects(root);
	} else if (!n)
		fprintf(stderr, "%s: %s: no compiled models\n", llm_prog, models);
	free(models);
	free(root);
}
