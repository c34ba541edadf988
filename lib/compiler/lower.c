/* lower.c: see lower.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lower.h"
#include "../formats/phase.h"
#include "../base/spawn.h"
#include "../formats/target.h"
#include "kernels.h"
#include "tune.h"

/* The temporary directory of the running lowering, removed by a signal's
 * cleanup (llm_atsignal) unless it is to be kept.  Paths are built before
 * any tool runs, so the cleanup only calls unlink and rmdir. */
#define NTMPFILE 8
static char *volatile tmpdir;
static char *volatile tmpfiles[NTMPFILE];

static void
remove_tmp(void)
{
	for (int i = 0; i < NTMPFILE; i++)
		if (tmpfiles[i])
			unlink(tmpfiles[i]);
	if (tmpdir)
		rmdir(tmpdir);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void
rm_tree(const char *path)
{
	nftw(path, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* The kind named by the leading word of a file or directory name: a
 * phase's kind, or the kind of the phase so named (phase.h: embed is a
 * prefill), or llm-split's glue. */
static const char *
kind_of_name(const char *name)
{
	for (int i = 0; i <= LLM_PH_COUNT; i++) {
		const char *k = i < LLM_PH_COUNT ? llm_phase_specs[i].kind : "glue";
		const char *words[2] = {k, i < LLM_PH_COUNT ? llm_phase_specs[i].name : k};
		for (int w = 0; w < 2; w++) {
			size_t n = strlen(words[w]);
			if (strncmp(name, words[w], n) == 0 && !isalpha((unsigned char)name[n]))
				return k;
		}
	}
	return NULL;
}

/* The value of llm.kind = "..." in the attribute dictionary of the first
 * module op (the printer writes it on the `module attributes {` line). */
static char *
kind_of_text(const char *text)
{
	for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL) {
		const char *p = s;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "module", 6) != 0 || (p[6] != ' ' && p[6] != '@'))
			continue;
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *line = llm_xasprintf("%.*s", (int)len, p);
		char *k = strstr(line, "llm.kind = \""), *v = NULL;
		if (k) {
			k += strlen("llm.kind = \"");
			char *q = strchr(k, '"');
			if (q)
				v = llm_xasprintf("%.*s", (int)(q - k), k);
		}
		free(line);
		return v;
	}
	return NULL;
}

char *
llm_lower_guess_kind(const char *path, const char *text)
{
	char *k = text ? kind_of_text(text) : NULL;
	if (k)
		return k;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	const char *kind = kind_of_name(base);
	if (!kind && base != path) {
		/* llm-split writes parts/<phase>/<partition>.mlir */
		const char *end = base - 1, *dir = end;
		while (dir > path && dir[-1] != '/')
			dir--;
		char *d = llm_xasprintf("%.*s", (int)(end - dir), dir);
		kind = kind_of_name(d);
		free(d);
	}
	return kind ? llm_xstrdup(kind) : NULL;
}

int
llm_pipeline_read(const char *path, const char *share, const char *transforms, const char *bf16_expand,
    const char *mpi_to_llvm, struct llm_argv *argv)
{
	const struct {
		const char *name, *value;
	} vars[] = {{"@share@", share}, {"@transforms@", transforms}, {"@bf16-expand@", bf16_expand},
		{"@mpi-to-llvm@", mpi_to_llvm}};
	char *data;
	size_t len;
	int n = 0;

	if (llm_read_file(path, &data, &len) < 0)
		return -1;
	for (char *line = data, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		while (*line == ' ' || *line == '\t')
			line++;
		char *e = line + strlen(line);
		while (e > line && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = 0;
		if (!*line || *line == '#')
			continue;
		struct llm_buf b = {0};
		for (const char *s = line; *s;) {
			/* the first of the names, and its value */
			const char *at = NULL, *val = NULL;
			size_t nl = 0;
			for (size_t i = 0; i < LLM_NELEM(vars); i++) {
				const char *a = strstr(s, vars[i].name);
				if (a && (!at || a < at)) {
					at = a;
					val = vars[i].value;
					nl = strlen(vars[i].name);
				}
			}
			if (!at) {
				llm_buf_puts(&b, s);
				break;
			}
			llm_buf_add(&b, s, (size_t)(at - s));
			llm_buf_puts(&b, val);
			s = at + nl;
		}
		if (b.len) {
			llm_argv_add(argv, b.p);
			n++;
		}
		llm_buf_free(&b);
	}
	free(data);
	if (n == 0)
		return llm_seterr("%s: empty pass list", path);
	return n;
}

char *
llm_share_dir(const char *fallback)
{
	const char *env = getenv("LLM_SHARE");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && *env)
		return llm_xstrdup(env);
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			/* bin/llm-lower -> share/llm; bin/san/llm-lower as well */
			for (int up = 1; up <= 2; up++) {
				struct llm_buf b = {0};
				llm_buf_puts(&b, exe);
				for (int i = 0; i < up; i++)
					llm_buf_puts(&b, "/..");
				llm_buf_puts(&b, "/share/llm/pipelines");
				int ok = access(b.p, R_OK | X_OK) == 0;
				if (ok) {
					b.len -= strlen("/pipelines");
					b.p[b.len] = 0;
					char *r = realpath(b.p, NULL);
					llm_buf_free(&b);
					return r ? r : llm_xstrdup(fallback);
				}
				llm_buf_free(&b);
			}
		}
	}
	return llm_xstrdup(fallback);
}

char *
llm_lower_pipeline(const char *share, const char *kind)
{
	char name[64];

	if (llm_phase_kind(kind, name, sizeof(name)) < 0)
		return NULL;
	/* llm-split's glue only carves weight views and calls the partitions:
	 * no arithmetic to schedule, so it takes the generic pass list. */
	if (strcmp(name, "glue") == 0)
		snprintf(name, sizeof(name), "generic");
	char *file = llm_xasprintf("pipelines/%s.txt", name);
	char *path = llm_path_join(share, file);
	free(file);
	if (!llm_file_exists(path)) {
		llm_seterr("unknown kind '%s': no pass list %s", kind, path);
		free(path);
		return NULL;
	}
	return path;
}

/* Copies stdin to path. */
static int
save_stdin(const char *path)
{
	FILE *f = fopen(path, "wb");
	char buf[65536];
	size_t n;

	if (!f)
		return llm_seterr("%s:", path);
	while ((n = fread(buf, 1, sizeof(buf), stdin)) > 0)
		if (fwrite(buf, 1, n, f) != n)
			break;
	if (ferror(stdin)) {
		fclose(f);
		return llm_seterr("stdin: read error:");
	}
	if (fclose(f) != 0)
		return llm_seterr("%s: write error:", path);
	return 0;
}

/* The line of a tool's stderr that says what is wrong: the first with
 * "error", else the first that is not empty (NULL: none); its length in
 * *n.  MLIR's diagnostic follows it with the source line and a caret,
 * which may be any bytes of the input: not repeated. */
static const char *
first_error(const struct llm_buf *err, size_t *n)
{
	const char *first = NULL;
	size_t fn = 0;
	for (size_t i = 0; i < err->len;) {
		const char *p = err->p + i, *nl = memchr(p, '\n', err->len - i);
		size_t len = nl ? (size_t)(nl - p) : err->len - i;
		if (len && !first) {
			first = p;
			fn = len;
		}
		if (memmem(p, len, "error", 5)) {
			*n = len;
			return p;
		}
		i += len + 1;
	}
	*n = fn;
	return first;
}

/* Runs one stage.  A failure is one line, the stage and the tool's own
 * error line (its whole stderr goes to dir/<stage>.log, and with -v to our
 * stderr, as it does on success). */
static int
stage(const struct llm_lower *l, char **argv, const char *name, const char *log)
{
	struct llm_spawn_opts so = {.timeout = l->timeout, .verbose = l->verbose};
	struct llm_buf err = {0};
	double t0 = llm_now();
	int rc = llm_spawn(argv, &so, &err);

	if (err.len && l->verbose) {
		fwrite(err.p, 1, err.len, stderr);
		if (err.p[err.len - 1] != '\n')
			fputc('\n', stderr);
	}
	if (rc < 0) {
		/* Name the stage, whatever the tool's file is called. */
		const char *m = llm_errmsg(), *tool = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
		size_t en;
		m += llm_prefix_len(m, strlen(m), tool);
		const char *e = first_error(&err, &en);
		/* the tool's line, without the tool's own prefix (its file's
		 * name, or the stage's) */
		for (int k = 0; k < 2 && e; k++) {
			size_t pn = llm_prefix_len(e, en, k ? name : tool);
			e += pn;
			en -= pn;
		}
		char *msg = e ? llm_xasprintf("%s: %.*s (%s)", name, (int)en, e, m) : llm_xasprintf("%s: %s", name, m);
		FILE *f = fopen(log, "w");
		if (f) {
			fprintf(f, "%s\n", msg);
			if (err.len)
				fwrite(err.p, 1, err.len, f);
			fclose(f);
		}
		llm_seterr("%s", msg);
		free(msg);
	} else if (l->verbose)
		fprintf(stderr, "%s: %s: %.2f s\n", llm_prog, name, llm_now() - t0);
	llm_buf_free(&err);
	return rc;
}

/* Feeds a file's bytes into the two hashes of a cache key. */
static void
key_file(uint64_t h[2], const char *path)
{
	struct llm_map m;
	if (llm_map_file(&m, path) < 0)
		return;
	h[0] = llm_fnv1a(h[0], m.p, m.len);
	h[1] = llm_fnv1a(h[1], m.p, m.len);
	llm_unmap(&m);
}

static void
key_str(uint64_t h[2], const char *s)
{
	size_t n = strlen(s) + 1; /* with the NUL, so "ab","c" != "a","bc" */
	h[0] = llm_fnv1a(h[0], s, n);
	h[1] = llm_fnv1a(h[1], s, n);
}

/* A tool's identity: its resolved path, size and mtime. */
static void
key_tool(uint64_t h[2], const char *tool)
{
	char *path = llm_which(tool);
	struct stat st;

	key_str(h, path ? path : tool);
	if (path && stat(path, &st) == 0) {
		char buf[64];
		snprintf(buf, sizeof(buf), "%lld %lld", (long long)st.st_size, (long long)st.st_mtime);
		key_str(h, buf);
	}
	free(path);
}

static int
copy_file(const char *from, const char *to)
{
	struct llm_map m;
	int rc;
	if (llm_map_file(&m, from) < 0)
		return -1;
	rc = strcmp(to, "-") == 0 ?
	    (fwrite(m.p, 1, m.len, stdout) == m.len && fflush(stdout) == 0 ? 0 : llm_seterr("stdout: write error:")) :
	    llm_write_file(to, m.p, m.len);
	llm_unmap(&m);
	return rc;
}

/* A tool given by path must be there before anything is created. */
static int
check_tools(const struct llm_lower *l)
{
	const char *tools[][2] = {{"mlir-opt", l->mlir_opt}, {"mlir-translate", l->mlir_translate}, {"llc", l->llc}};
	for (size_t i = 0; i < LLM_NELEM(tools); i++)
		if (strchr(tools[i][1], '/') && access(tools[i][1], X_OK) != 0)
			return llm_seterr("%s: cannot run %s:", tools[i][0], tools[i][1]);
	return 0;
}

/* The tuning table: --tuning's, or share's. */
static char *
tuning_path(const struct llm_lower *l)
{
	return l->tuning ? llm_xstrdup(l->tuning) : llm_path_join(l->share, LLM_TUNE_FILE);
}

/* The cache key (see lower.h) as the cached object's path. */
static char *
cache_path(const struct llm_lower *l, const struct llm_argv *passes)
{
	uint64_t h[2] = {LLM_FNV_INIT, LLM_FNV_INIT ^ 0x9e3779b97f4a7c15ULL};
	char id[16384];
	key_str(h, "llm-lower cache 2"); /* 2: objects carry .llm.target */
	key_file(h, l->input);
	for (size_t i = 0; i < passes->n; i++) {
		key_str(h, passes->v[i]);
		const char *eq = strrchr(passes->v[i], '=');
		if (eq && eq[1] == '/')
			key_file(h, eq + 1);
	}
	for (size_t i = 0; i < llm_target_nforms; i++) {
		if (llm_target_forms[i].kind >= LLM_FORM_NKERNEL)
			continue;
		char *k = llm_xasprintf("%s/kernels/%s.mlir", l->share, llm_target_forms[i].name);
		key_file(h, k);
		free(k);
	}
	char *tuning = tuning_path(l);
	key_file(h, tuning);
	free(tuning);
	key_str(h, l->triple ? l->triple : "host");
	key_str(h, l->cpu ? l->cpu : "native");
	key_str(h, l->features ? l->features : "");
	if (!l->triple && !l->cpu)
		key_str(h, llm_host_id(id, sizeof(id)));
	key_tool(h, l->mlir_opt);
	key_tool(h, l->mlir_translate);
	key_tool(h, l->llc);
	key_tool(h, l->objcopy);
	key_tool(h, l->clang);
	return llm_xasprintf("%s/%016llx%016llx.o", l->cache, (unsigned long long)h[0], (unsigned long long)h[1]);
}

/* One lowering's files, in a temporary directory beside the output. */
struct work {
	char *dir, *in, *kin, *llvm, *ll, *obj, *log[3];
	int prepared; /* the input read, tuned and spliced: a later failure is a tool's */
};
enum { LOG_OPT, LOG_TRANSLATE, LOG_LLC };

/* Creates the directory beside the output, so that the final copy stays
 * on one file system, names every file in it, and registers them for the
 * signal cleanup. */
static int
work_open(const struct llm_lower *l, struct work *w)
{
	const char *named = strcmp(l->output, "-") == 0 ? l->input : l->output;
	const char *base = strrchr(named, '/') ? strrchr(named, '/') + 1 : named;
	if (strcmp(base, "-") == 0)
		base = "stdin";
	char *odir = strcmp(l->output, "-") == 0 || !strrchr(l->output, '/') ?
	    llm_xstrdup(".") :
	    llm_xasprintf("%.*s", (int)(strrchr(l->output, '/') - l->output), l->output);
	if (!*odir) {
		free(odir);
		odir = llm_xstrdup("/");
	}
	char *dir = llm_xasprintf("%s/.%s.lower.XXXXXX", odir, base);
	free(odir);
	if (!mkdtemp(dir)) {
		free(dir);
		/* name the output, not the hidden directory beside it */
		return llm_seterr("%s:", l->output);
	}
	w->dir = dir;

	char *stem = llm_xstrdup(base);
	char *dot = strrchr(stem, '.');
	if (dot && dot != stem)
		*dot = 0;
	w->in = strcmp(l->input, "-") == 0 ? llm_xasprintf("%s/%s.mlir", dir, stem) : llm_xstrdup(l->input);
	w->kin = llm_xasprintf("%s/%s.kernels.mlir", dir, stem);
	w->llvm = llm_xasprintf("%s/%s.llvm.mlir", dir, stem);
	w->ll = llm_xasprintf("%s/%s.ll", dir, stem);
	w->obj = llm_xasprintf("%s/%s.o", dir, stem);
	w->log[LOG_OPT] = llm_xasprintf("%s/mlir-opt.log", dir);
	w->log[LOG_TRANSLATE] = llm_xasprintf("%s/mlir-translate.log", dir);
	w->log[LOG_LLC] = llm_xasprintf("%s/llc.log", dir);
	free(stem);
	char *files[NTMPFILE] = {w->llvm, w->ll, w->obj, w->log[0], w->log[1], w->log[2],
		strcmp(l->input, "-") == 0 ? w->in : NULL, w->kin};
	for (int i = 0; i < NTMPFILE; i++)
		tmpfiles[i] = files[i];
	tmpdir = dir;
	llm_atsignal(remove_tmp);
	return 0;
}

static void
work_free(struct work *w)
{
	tmpdir = NULL;
	for (int i = 0; i < NTMPFILE; i++)
		tmpfiles[i] = NULL;
	free(w->dir);
	free(w->in);
	free(w->kin);
	free(w->llvm);
	free(w->ll);
	free(w->obj);
	for (int i = 0; i < 3; i++)
		free(w->log[i]);
}

/* llc's -mattr list (to free), or NULL: the user's, after a cross
 * target's defaults (target.h) where it has some, so that "+zvfbfmin"
 * adds to RISC-V's "+m,+a,+f,+d,+c,+v" and "-v" takes from it. */
static char *
llc_features(const struct llm_lower *l)
{
	const char *d = l->triple ? llm_target_default_mattr(l->triple) : NULL;
	if (d && l->features)
		return llm_xasprintf("%s,%s", d, l->features);
	return d ? llm_xstrdup(d) : l->features ? llm_xstrdup(l->features) : NULL;
}

/* The target's features (target.h), resolved once a lowering, when first
 * needed: clang runs only for the object's section, or earlier for a
 * module that declares the int8 kernels. */
struct tgt {
	struct llm_target t;
	int have;
};

static int
target_of(const struct llm_lower *l, struct tgt *tg)
{
	char *mattr = tg->have ? NULL : llc_features(l);
	int rc = tg->have ? 0 : llm_target_resolve(l->clang, l->llc, l->triple, l->cpu, mattr, &tg->t);
	free(mattr);
	if (rc < 0)
		return llm_seterr("%s: cannot tell the target's features: %s", l->input, llm_errmsg());
	tg->have = 1;
	return 0;
}

/* The module as mlir-opt is to read it, in w->kin (w->in then names it;
 * a module that needs neither step is read as it is):
 * - its tunable constants (tune.h) set from the tuning table's entry for
 *   the target's CPU;
 * - the kernels it declares (lines that start with a family's prefix of
 *   kernels.h, "llvm.func @llm_qdot_...(...)" and the others, without a
 *   body: ir.txt "Kernels") defined in the target's form of each family,
 *   share/llm/kernels/<form>.mlir (the family's form function of
 *   kernels.h): the declarations are dropped and the forms' definitions go
 *   in before the module's closing brace, in the families' order. */
static int
prepare_input(const struct llm_lower *l, struct work *w, struct tgt *tg)
{
	char *text = NULL, *end;
	struct llm_buf b = {0}, tuned = {0};
	size_t n, ndecl[LLM_NKFAMILY] = {0}, nall = 0, ntuned = 0;
	int rc = -1;
	if (llm_read_file(w->in, &text, &n) < 0)
		return -1;
	if (memmem(text, n, "{llm.tune = ", 12)) {
		struct llm_tune t;
		char *path = tuning_path(l);
		int r = target_of(l, tg) < 0 ? -1 : llm_tune_load(path, tg->t.cpu, &t);
		if (r == 0) {
			llm_tune_settle(&t, &tg->t);
			r = llm_tune_apply(&t, text, n, &tuned, &ntuned, l->input);
			if (r == 0 && l->verbose) {
				char *d = llm_tune_describe(&t);
				fprintf(stderr, "%s: %s: %zu tuned constants, %s's entry of %s: %s\n", llm_prog,
				    l->input, ntuned, t.entry, path, d);
				free(d);
			}
			llm_tune_free(&t);
		}
		free(path);
		if (r < 0)
			goto out;
		n = tuned.len;
		llm_buf_add(&tuned, "", 1); /* may move tuned.p: taken after */
		free(text);
		text = tuned.p;
		tuned = (struct llm_buf){0};
	}
	/* the module without the declarations */
	if ((end = memrchr(text, '}', n)))
		for (char *line = text, *next; line < end; line = next) {
			next = memchr(line, '\n', (size_t)(end - line));
			next = next ? next + 1 : end;
			const char *p = line + strspn(line, " \t");
			size_t f = 0;
			while (f < LLM_NKFAMILY &&
			    strncmp(p, llm_kernel_families[f].decl, strlen(llm_kernel_families[f].decl)) != 0)
				f++;
			if (f < LLM_NKFAMILY && !memchr(p, '{', (size_t)(next - p))) {
				ndecl[f]++;
				nall++;
			} else {
				llm_buf_printf(&b, "%.*s", (int)(next - line), line);
			}
		}
	if (!nall && !ntuned) {
		rc = 0;
		goto out;
	}
	if (nall && target_of(l, tg) < 0)
		goto out;
	for (size_t f = 0; f < LLM_NKFAMILY; f++) {
		if (!ndecl[f])
			continue;
		const char *form = llm_kernel_families[f].form(&tg->t);
		char *ktext = NULL, *kpath = llm_xasprintf("%s/kernels/%s.mlir", l->share, form);
		int r = llm_read_file(kpath, &ktext, NULL);
		if (r == 0)
			llm_buf_printf(&b, "// %s\n%s", kpath, ktext);
		free(ktext);
		free(kpath);
		if (r < 0)
			goto out;
	}
	if (end)
		llm_buf_add(&b, end, n - (size_t)(end - text));
	if ((rc = llm_write_file(w->kin, b.p, b.len)) == 0) {
		free(w->in);
		w->in = llm_xstrdup(w->kin);
	}
out:
	llm_buf_free(&b);
	llm_buf_free(&tuned);
	free(text);
	return rc;
}

/* llc's argv: the host CPU unless cross-compiling; a cross target's
 * default features and ABI are the target spec's (target.h). */
static void
llc_argv(const struct llm_lower *l, const struct work *w, struct llm_argv *a)
{
	char *features = llc_features(l);
	llm_argv_add(a, l->llc);
	llm_argv_add(a, "-O3");
	llm_argv_add(a, "-relocation-model=pic");
	llm_argv_add(a, "-filetype=obj");
	if (l->triple) {
		llm_argv_addf(a, "-mtriple=%s", l->triple);
		if (llm_target_abi(l->triple))
			llm_argv_addf(a, "-target-abi=%s", llm_target_abi(l->triple));
	}
	if (l->cpu || !l->triple)
		llm_argv_addf(a, "-mcpu=%s", l->cpu ? l->cpu : "native");
	if (features)
		llm_argv_addf(a, "-mattr=%s", features);
	free(features);
	llm_argv_add(a, w->ll);
	llm_argv_add(a, "-o");
	llm_argv_add(a, w->obj);
}

/* The target the object is for, as data (target.h), in its section
 * .llm.target; only the entry points stay global. */
static int
seal_object(const struct llm_lower *l, const struct work *w, struct tgt *tg)
{
	if (target_of(l, tg) < 0)
		return -1;
	char *tjson = llm_target_json(&tg->t), *tpath = llm_path_join(w->dir, "target.json");
	int rc = llm_write_file(tpath, tjson, strlen(tjson));
	if (rc == 0) {
		struct llm_argv oc = {0};
		llm_argv_add(&oc, l->objcopy);
		llm_argv_add(&oc, "--wildcard");
		llm_argv_add(&oc, "--keep-global-symbol=llm_*");
		llm_argv_add(&oc, "--keep-global-symbol=_mlir_ciface_*");
		llm_argv_addf(&oc, "--add-section=" LLM_TARGET_SECTION "=%s", tpath);
		llm_argv_add(&oc, w->obj);
		rc = stage(l, oc.v, "llvm-objcopy", w->log[LOG_LLC]);
		llm_argv_free(&oc);
	}
	free(tjson);
	free(tpath);
	return rc;
}

/* What the pass list `pipeline` names as @transforms@, the folder of the
 * transform scripts: the target's form (llm_target_transforms), or the
 * top level; and as @bf16-expand@, whether arith-expand turns bf16
 * conversions into integer shifts: "false" where the target converts
 * bf16 itself (llm_target_bf16_convert), else "true".  The target is
 * resolved only for a list that names one of them; one that cannot be
 * resolved takes the defaults, and llc, which runs later, says what is
 * wrong with it. */
static char *
pipeline_vars(const struct llm_lower *l, const char *pipeline, struct tgt *tg, const char **bf16_expand)
{
	char *text = NULL;
	const char *form = NULL;
	*bf16_expand = "true";
	if (llm_read_file(pipeline, &text, NULL) == 0 &&
	    (strstr(text, "@transforms@") || strstr(text, "@bf16-expand@")) && target_of(l, tg) == 0) {
		form = llm_target_transforms(&tg->t);
		if (llm_target_bf16_convert(&tg->t))
			*bf16_expand = "false";
	}
	free(text);
	return form ? llm_xasprintf("%s/transforms/%s", l->share, form) : llm_xasprintf("%s/transforms", l->share);
}

/* The three stages and the sealing, in w. */
static int
run_stages(struct llm_lower *l, struct work *w, const struct llm_argv *passes, struct tgt *tg)
{
	int rc = -1;
	if ((strcmp(l->input, "-") == 0 && save_stdin(w->in) < 0) || prepare_input(l, w, tg) < 0)
		goto out;
	w->prepared = 1;

	struct llm_argv a = {0};
	llm_argv_add(&a, l->mlir_opt);
	llm_argv_add(&a, w->in);
	for (size_t i = 0; i < passes->n; i++)
		llm_argv_add(&a, passes->v[i]);
	llm_argv_add(&a, "-o");
	llm_argv_add(&a, w->llvm);
	rc = stage(l, a.v, "mlir-opt", w->log[LOG_OPT]);
	llm_argv_free(&a);
	if (rc < 0)
		goto out;

	char *tr[] = {(char *)l->mlir_translate, "--mlir-to-llvmir", w->llvm, "-o", w->ll, NULL};
	if ((rc = stage(l, tr, "mlir-translate", w->log[LOG_TRANSLATE])) < 0)
		goto out;

	llc_argv(l, w, &a);
	rc = stage(l, a.v, "llc", w->log[LOG_LLC]);
	llm_argv_free(&a);
	if (rc == 0)
		rc = seal_object(l, w, tg);
out:
	return rc;
}

int
llm_lower_run(struct llm_lower *l)
{
	struct llm_argv passes = {0};
	struct work w = {0};
	struct tgt tg = {0};
	char *pipeline = NULL, *cached = NULL, *tdir = NULL;
	int rc = -1;

	l->kept = NULL;
	l->cache_hit = 0;
	if (!(pipeline = llm_lower_pipeline(l->share, l->kind)))
		return -1;
	if (check_tools(l) < 0)
		goto out;
	/* A target named on the command line is checked before any work. */
	if ((l->cpu || l->triple) && target_of(l, &tg) < 0)
		goto out;
	const char *bf16_expand;
	tdir = pipeline_vars(l, pipeline, &tg, &bf16_expand);
	/* the mpi dialect's pass for a module with its ops (a tensor-parallel
	 * layer, emit.c; in custom or generic form): the pass fails on a
	 * module without them */
	char *text = NULL;
	int mpi = strcmp(l->input, "-") != 0 && llm_read_file(l->input, &text, NULL) == 0 &&
	    (strstr(text, " mpi.") || strstr(text, "\"mpi."));
	free(text);
	if (llm_pipeline_read(pipeline, l->share, tdir, bf16_expand, mpi ? "--convert-to-llvm=filter-dialects=mpi" : "",
		&passes) < 0)
		goto out;

	if (l->cache && strcmp(l->input, "-") != 0) {
		cached = cache_path(l, &passes);
		if (llm_file_exists(cached)) {
			if (l->verbose)
				fprintf(stderr, "%s: cache hit %s\n", llm_prog, cached);
			if (copy_file(cached, l->output) == 0) {
				l->cache_hit = 1;
				rc = 0;
			}
			goto out;
		}
	}

	if (work_open(l, &w) < 0)
		goto out;
	if (run_stages(l, &w, &passes, &tg) < 0) {
		if (!w.prepared) {
			/* the input, the tuning table or a kernel file is
			 * wrong: no tool ran, nothing to look at */
			rm_tree(w.dir);
			goto out;
		}
		/* Keep what there is, except a partial object, when asked
		 * (-s, -v); else the message says what the tool said. */
		unlink(w.obj);
		if (l->keep || l->verbose) {
			l->kept = w.dir;
			w.dir = NULL;
		} else
			rm_tree(w.dir);
		goto out;
	}

	/* Into the cache first (a failure there only costs a later rebuild). */
	if (cached && (llm_mkdirs(l->cache) < 0 || copy_file(w.obj, cached) < 0))
		llm_warn("%s (object not cached)", llm_errmsg());

	/* Copied, not renamed: an output that is a device, a FIFO or a
	 * symbolic link is written as llm_out writes it (util.h); with -k
	 * the object stays beside the .ll. */
	if (copy_file(w.obj, l->output) < 0) {
		l->kept = w.dir;
		w.dir = NULL;
		goto out;
	}
	if (l->keep) {
		l->kept = w.dir;
		w.dir = NULL;
	} else
		rm_tree(w.dir);
	rc = 0;
out:
	if (tg.have)
		llm_target_free(&tg.t);
	work_free(&w);
	llm_argv_free(&passes);
	free(pipeline);
	free(cached);
	free(tdir);
	return rc;
}
