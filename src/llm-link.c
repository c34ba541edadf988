/* llm-link: link a lowered model into a shared library and a bundle.
 *
 * Reads a build directory after llm-lower: model.json, weights.bin, the
 * tokenizer files and the objects: those named, else those of the
 * partition set in parts/, else every one under obj/ (any depth, sorted).
 * Links the objects with the system compiler driver into libmodel.so
 * (with libomp and libm) and checks that it exports, for every phase of
 * model.json, the entry and <entry>_fingerprint, returning the plan
 * fingerprint of model.json and weights.bin.  Then writes model.llm, the
 * single-file bundle llm-run reads (share/doc/llm/formats.txt section 4):
 * model.json, the tokenizer files, target.json (the objects' target, from
 * their .llm.target sections: one for all), libmodel.so and weights.bin in
 * an uncompressed tar, weights.bin aligned to 64 KiB so that it maps in
 * place.  The step between llm-lower and llm-run. */
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/formats/bundle.h"
#include "../lib/base/json.h"
#include "../lib/formats/model.h"
#include "../lib/base/spawn.h"
#include "../lib/formats/target.h"
#include "../lib/base/util.h"
#include "../lib/formats/phase.h"

#include "../lib/formats/weights.h"

#define TIMEOUT 600.0

static const char usage_text[] = "usage: llm-link [-v] [-o bundle] [--sysroot dir] outdir [object ...]\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

/* The objects, sorted. */
static char **objs;
static size_t nobjs;

/* Objects are the regular files named *.o; hidden files and directories
 * (llm-lower's kept intermediates, temporaries) are skipped. */
static int
collect(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t n = strlen(path);
	if (ftw->level > 0 && path[ftw->base] == '.')
		return type == FTW_D ? FTW_SKIP_SUBTREE : FTW_CONTINUE;
	if (type == FTW_F && S_ISREG(st->st_mode) && n > 2 && strcmp(path + n - 2, ".o") == 0) {
		objs = llm_xreallocarray(objs, nobjs + 1, sizeof(*objs));
		objs[nobjs++] = llm_xstrdup(path);
	}
	return FTW_CONTINUE;
}

static void
add_obj(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		llm_fatal("%s:", path);
	if (!S_ISREG(st.st_mode))
		llm_fatal("%s: not a regular file", path);
	objs = llm_xreallocarray(objs, nobjs + 1, sizeof(*objs));
	objs[nobjs++] = llm_xstrdup(path);
}

/* The objects of the partition set in outdir/parts (llm-split's
 * partition.json): obj/<module>.o for each kernel and each phase's glue,
 * as pipelines/model.mk and llm(7) lower parts/<module>.mlir.  Objects of
 * an earlier split (another strategy) under obj/ are not taken. */
static void
partition_objs(const char *ppath, const char *objdir)
{
	json_t *p = llm_json_load(ppath), *a, *x;
	size_t i;
	if (!p)
		llm_fatal("%s", llm_errmsg());
	if (!json_is_string(json_object_get(p, "format")) ||
	    strcmp(json_string_value(json_object_get(p, "format")), LLM_PARTITION_FORMAT) != 0)
		llm_fatal("%s: not a partition set (format %s)", ppath, LLM_PARTITION_FORMAT);
	for (int k = 0; k < 2; k++) {
		a = json_object_get(p, k == 0 ? "kernels" : "phases");
		json_array_foreach (a, i, x) {
			const char *f = json_string_value(json_object_get(x, k == 0 ? "file" : "glue"));
			size_t n = f ? strlen(f) : 0;
			if (n < 6 || strcmp(f + n - 5, ".mlir") != 0 || !llm_path_inside(f))
				llm_fatal("%s: %s[%zu]: a module path in parts/ (x/y.mlir) expected", ppath,
				    k == 0 ? "kernels" : "phases", i);
			char *o = llm_xasprintf("%s/%.*s.o", objdir, (int)(n - 5), f);
			add_obj(o);
			free(o);
		}
	}
	json_decref(p);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
run(char **argv, int verbose)
{
	struct llm_spawn_opts so = {.timeout = TIMEOUT, .verbose = verbose};
	if (llm_spawn(argv, &so, NULL) < 0)
		llm_fatal("%s", llm_errmsg());
}

/* Check the exports and the plan of every phase, in the library loaded. */
static void
check_loaded(const char *path, const char *label, const struct llm_model *m, const char *mpath)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		llm_fatal("%s: %s", label, dlerror());
	char want[17], got[17];
	llm_hex64(m->fingerprint, want);
	for (int i = 0; i < m->nphases; i++) {
		const struct llm_phase *ph = &m->phases[i];
		char *sym = llm_xasprintf("_mlir_ciface_%s", ph->entry);
		char *fsym = llm_xasprintf("_mlir_ciface_%s_fingerprint", ph->entry);
		int64_t (*fp)(void);
		if (!dlsym(h, sym))
			llm_fatal("%s: missing symbol '%s' (phase '%s' of %s)", label, sym, ph->name, mpath);
		if (!(fp = (int64_t (*)(void))dlsym(h, fsym)))
			llm_fatal("%s: missing symbol '%s' (phase '%s' of %s)", label, fsym, ph->name, mpath);
		if ((uint64_t)fp() != m->fingerprint) {
			llm_hex64((uint64_t)fp(), got);
			llm_fatal("%s: phase '%s' (%s) built for plan %s, %s is plan %s", label, ph->name, ph->file,
			    got, mpath, want);
		}
		free(sym);
		free(fsym);
	}
	dlclose(h);
}

/* The same for a library of another architecture, read, not loaded: its
 * ELF machine, and the exports of every phase (llm-run checks the plan
 * fingerprints when it loads the library on the target). */
static void
check_foreign(const char *path, const char *label, const char *triple, const struct llm_model *m, const char *mpath)
{
	struct llm_map lm;
	if (llm_map_file(&lm, path) < 0)
		llm_fatal("%s", llm_errmsg());
	int em = llm_elf_machine(lm.p, lm.len);
	if (em < 0)
		llm_fatal("%s: %s", label, llm_errmsg());
	if ((unsigned)em != llm_target_elf_machine(triple))
		llm_fatal("%s: ELF machine %d, where %s code is machine %u", label, em, triple,
		    llm_target_elf_machine(triple));
	for (int i = 0; i < m->nphases; i++)
		for (int f = 0; f < 2; f++) {
			const struct llm_phase *ph = &m->phases[i];
			char *sym = llm_xasprintf("_mlir_ciface_%s%s", ph->entry, f ? "_fingerprint" : "");
			int r = llm_elf_dynsym(lm.p, lm.len, sym);
			if (r < 0)
				llm_fatal("%s: %s", label, llm_errmsg());
			if (r == 0)
				llm_fatal("%s: missing symbol '%s' (phase '%s' of %s)", label, sym, ph->name, mpath);
			free(sym);
		}
	llm_unmap(&lm);
}

/* The link's arguments for a shared object out of the objects. */
static void
shared_of_objects(struct llm_argv *l, const char *out)
{
	llm_argv_add(l, "-shared");
	llm_argv_add(l, "-o");
	llm_argv_add(l, out);
	for (size_t i = 0; i < nobjs; i++)
		llm_argv_add(l, objs[i]);
}

/* The first file of the sysroot matching one of the patterns (NULL-ended,
 * relative to root), or NULL. */
static char *
sysroot_find(const char *root, const char *const *pat)
{
	for (; *pat; pat++) {
		char *p = llm_path_join(root, *pat), *r = NULL;
		glob_t g;
		if (glob(p, 0, NULL, &g) == 0 && g.gl_pathc > 0)
			r = llm_xstrdup(g.gl_pathv[g.gl_pathc - 1]); /* the newest LLVM of several */
		globfree(&g);
		free(p);
		if (r)
			return r;
	}
	return NULL;
}

/* The link of a cross target: clang (LLVM's, beside llm-lower's tools)
 * for triple (a Linux one: "riscv64" is riscv64-linux-gnu) with lld,
 * the sysroot's C library, libgcc and LLVM OpenMP runtime (libomp.so, of
 * any LLVM release: the objects call five __kmpc entry points). */
static void
cross_link(struct llm_argv *l, const char *triple, const char *sysroot, const char *out)
{
	struct stat st;
	if (stat(sysroot, &st) < 0)
		llm_fatal("%s: sysroot of %s:", sysroot, triple);
	if (!S_ISDIR(st.st_mode))
		llm_fatal("%s: sysroot of %s: not a directory", sysroot, triple);
	int al = (int)strcspn(triple, "-");
	char *multi = llm_xasprintf("usr/lib/%.*s-linux-gnu/libomp.so", al, triple);
	const char *const omp_pat[] = {multi, "usr/lib/llvm-*/lib/libomp.so", "usr/lib/libomp.so", NULL};
	char *omp = sysroot_find(sysroot, omp_pat);
	if (!omp)
		llm_fatal("%s: no libomp.so for %s (LLVM's OpenMP runtime, Debian's libomp-dev of that "
			  "architecture): ./configure --target %.*s puts one there",
		    sysroot, triple, al, triple);
	char *clang = llm_path_join(llm_llvm_bindir(), "clang");
	llm_argv_add(l, clang);
	if (strstr(triple, "linux"))
		llm_argv_addf(l, "--target=%s", triple);
	else
		llm_argv_addf(l, "--target=%.*s-linux-gnu", al, triple);
	llm_argv_addf(l, "--sysroot=%s", sysroot);
	llm_argv_add(l, "-fuse-ld=lld");
	shared_of_objects(l, out);
	*strrchr(omp, '/') = 0;
	llm_argv_addf(l, "-L%s", omp);
	llm_argv_add(l, "-Wl,-z,defs");
	llm_argv_add(l, "-lomp");
	llm_argv_add(l, "-lm");
	free(omp);
	free(multi);
	free(clang);
}

static const char help_text[] = "  -o bundle            write the bundle there (default: outdir/model.llm)\n"
				"  object ...           the objects to link (default: every .o under outdir/obj)\n"
				"  --sysroot dir        the target's root, for objects of another architecture\n"
				"                       (default: $LLM_SYSROOT, else ./configure --target's)\n"
				"  -v                   echo the link command\n"
				"  -h                   print the usage\n"
				"  --help, --version    print this help, or the version\n";

/* One link: the build directory, what it is checked to hold, the
 * objects and their target, the outputs. */
struct link {
	const char *outdir, *bundle, *sysroot;
	int verbose;
	struct llm_model m;
	char *mpath, *jpath, *objdir;
	struct llm_bundle db;
	const struct llm_member *wm; /* weights.bin, in outdir or its bundle */
	struct llm_bundle_src *src;  /* the bundle's members */
	size_t ns;
	char *tjson, *triple; /* the objects' target (NULL: none recorded) */
	const char *tfrom;    /* the object it was read from */
	int foreign;          /* objects of another architecture */
	char *bpath, *bdir, *tpath, *libpath, *liblabel;
	const char *bbase;
	struct llm_out tout, lib;
};

/* The weights must be of the same plan, the tokenizer files there:
 * checked first, so that nothing is written for a bad directory.  They
 * are the directory's weights.bin, or, once pipelines/model.mk has moved
 * it into the bundle, the bundle's (bundle.h); and what weights.json says
 * they are: every tensor's checksum (a full read), so that the bundle
 * carries checked weights. */
static void
check_build(struct link *k)
{
	struct llm_model *m = &k->m;
	struct llm_bundle_map wmap;
	struct llm_weights w;
	struct llm_weights_manifest wj;

	k->mpath = llm_path_join(k->outdir, "model.json");
	if (llm_model_load(m, k->mpath) < 0)
		llm_fatal("%s", llm_errmsg());
	if (strchr(m->weights_file, '/'))
		llm_fatal("%s: weights.file '%s' is not a plain name", k->mpath, m->weights_file);
	if (llm_bundle_open(&k->db, k->outdir) < 0 || !(k->wm = llm_bundle_get(&k->db, m->weights_file)) ||
	    llm_bundle_map(&k->db, k->wm, &wmap) < 0 || llm_weights_view(&w, wmap.p, wmap.len, k->wm->label, m) < 0)
		llm_fatal("%s", llm_errmsg());
	k->jpath = llm_path_join(k->outdir, LLM_WEIGHTS_JSON);
	if (llm_weights_manifest_load(&wj, k->jpath) < 0 || llm_weights_verify(&w, &wj) < 0)
		llm_fatal("%s", llm_errmsg());
	llm_weights_manifest_free(&wj);
	llm_weights_close(&w);
	llm_bundle_unmap(&wmap);
	k->src = llm_xcalloc(m->ntokenizer_files + 5, sizeof(*k->src));
	k->src[k->ns++] = (struct llm_bundle_src){"model.json", k->mpath, 0, 0, 0};
	for (size_t i = 0; i < m->ntokenizer_files; i++) {
		const char *t = m->tokenizer_files[i];
		struct stat st;
		if (strchr(t, '/') || strcmp(t, "model.json") == 0 || strcmp(t, "libmodel.so") == 0 ||
		    strcmp(t, m->weights_file) == 0 || strcmp(t, LLM_WEIGHTS_JSON) == 0 || t[0] == '.')
			llm_fatal("%s: tokenizer file '%s' is not a plain name", k->mpath, t);
		k->src[k->ns] = (struct llm_bundle_src){t, llm_path_join(k->outdir, t), 0, 0, 0};
		if (stat(k->src[k->ns].path, &st) < 0)
			llm_fatal("%s:", k->src[k->ns].path);
		if (!S_ISREG(st.st_mode))
			llm_fatal("%s: not a regular file", k->src[k->ns].path);
		k->ns++;
	}
}

/* The objects named on the command line (a build that knows them, such
 * as pipelines/model.mk), else those of the partition set in parts/,
 * else every one under obj/ (phases lowered whole). */
static void
gather_objects(struct link *k, char **names, int n)
{
	char *ppath = llm_path_join(k->outdir, "parts/partition.json");
	k->objdir = llm_path_join(k->outdir, "obj");
	for (int i = 0; i < n; i++)
		add_obj(names[i]);
	if (n == 0 && llm_file_exists(ppath))
		partition_objs(ppath, k->objdir);
	else if (n == 0 && nftw(k->objdir, collect, 16, FTW_PHYS | FTW_ACTIONRETVAL) != 0)
		llm_fatal("%s:", k->objdir);
	free(ppath);
	if (nobjs == 0)
		llm_fatal("%s: no object files", k->objdir);
	qsort(objs, nobjs, sizeof(*objs), cmp_str);
}

/* The target of the objects (llm-lower's section .llm.target): one for
 * all, recorded in the bundle for llm-run to check (target.h).  Objects
 * without it (not from llm-lower) give a bundle without. */
static void
objects_target(struct link *k)
{
	size_t nwithout = 0;
	struct llm_target tfirst = {0};
	for (size_t i = 0; i < nobjs; i++) {
		struct llm_map om;
		const void *sec;
		size_t slen;
		int found;
		if (llm_map_file(&om, objs[i]) < 0)
			llm_fatal("%s", llm_errmsg());
		if ((found = llm_elf_section(om.p, om.len, LLM_TARGET_SECTION, &sec, &slen)) < 0)
			llm_fatal("%s: %s", objs[i], llm_errmsg());
		if (!found) {
			nwithout++;
			if (k->tfrom)
				llm_fatal("%s: no %s section (not from llm-lower?), where %s is for %s (%s)", objs[i],
				    LLM_TARGET_SECTION, k->tfrom, tfirst.cpu, tfirst.triple);
		} else {
			struct llm_target t;
			if (llm_target_parse(sec, slen, objs[i], &t) < 0)
				llm_fatal("%s", llm_errmsg());
			if (nwithout)
				llm_fatal("%s: for %s (%s), where other objects have no %s section", objs[i], t.cpu,
				    t.triple, LLM_TARGET_SECTION);
			if (!k->tfrom) {
				tfirst = t;
				k->tfrom = objs[i];
				k->tjson = llm_xstrndup(sec, slen);
			} else {
				if (!llm_target_equal(&t, &tfirst))
					llm_fatal("%s: built for %s (%s), %s for %s (%s): lower them for one target",
					    objs[i], t.cpu, t.triple, k->tfrom, tfirst.cpu, tfirst.triple);
				llm_target_free(&t);
			}
		}
		llm_unmap(&om);
	}
	if (k->tfrom)
		k->triple = llm_xstrdup(tfirst.triple);
	llm_target_free(&tfirst);
}

/* Objects of another architecture (a cross target) are linked by clang
 * and lld against the target's sysroot, and checked by reading the
 * library (they cannot be loaded here). */
static void
resolve_sysroot(struct link *k)
{
	const char *triple = k->triple;
	k->foreign = triple && llm_target_foreign(triple);
	if (k->foreign && llm_model_ranks(&k->m) > 1)
		llm_fatal("%s: %" PRId64 " ranks: a model split over MPI ranks is linked for this machine only (the "
			  "sysroot of %s has no MPI library)",
		    k->mpath, llm_model_ranks(&k->m), triple);
	if (!k->foreign && k->sysroot)
		llm_fatal("%s: --sysroot: the objects are for this machine (%s)", k->sysroot,
		    triple ? triple : "no target");
	if (k->foreign && !k->sysroot && !((k->sysroot = getenv("LLM_SYSROOT")) && *k->sysroot) &&
	    !(k->sysroot = llm_target_sysroot(triple)))
		llm_fatal("%s: built for %s: linking it needs that target's sysroot: --sysroot dir "
			  "(./configure --target %.*s makes one)",
		    k->tfrom, triple, (int)strcspn(triple, "-"), triple);
}

/* With -o, libmodel.so and target.json exist only inside the bundle:
 * temporaries beside it, named bundle(member) in messages, and outdir is
 * not written.  Else they are outdir's files too. */
static void
place_outputs(struct link *k)
{
	k->bpath = k->bundle ? llm_xstrdup(k->bundle) : llm_path_join(k->outdir, "model.llm");
	/* its directory, with a slash: dlopen takes a name without one from
	 * its search path */
	k->bbase = strrchr(k->bpath, '/') ? strrchr(k->bpath, '/') + 1 : k->bpath;
	k->bdir = k->bbase > k->bpath ? llm_xstrndup(k->bpath, (size_t)(k->bbase - k->bpath)) : llm_xstrdup("./");
	k->tpath = k->bundle ? llm_xasprintf("%s.%s.target.json", k->bdir, k->bbase) :
			       llm_path_join(k->outdir, LLM_TARGET_MEMBER);
	if (k->tjson && k->bundle) {
		if (llm_out_open(&k->tout, k->tpath) < 0 || fputs(k->tjson, k->tout.fp) == EOF ||
		    fflush(k->tout.fp) != 0)
			llm_fatal("%s:", k->tpath);
		k->src[k->ns++] = (struct llm_bundle_src){LLM_TARGET_MEMBER, k->tout.tmp, 0, 0, 0};
	} else if (k->tjson) {
		if (llm_write_file(k->tpath, k->tjson, strlen(k->tjson)) < 0)
			llm_fatal("%s", llm_errmsg());
		k->src[k->ns++] = (struct llm_bundle_src){LLM_TARGET_MEMBER, k->tpath, 0, 0, 0};
	} else if (!k->bundle && unlink(k->tpath) < 0 && errno != ENOENT)
		llm_fatal("%s:", k->tpath);
	k->libpath = k->bundle ? llm_xasprintf("%s.%s.libmodel.so", k->bdir, k->bbase) :
				 llm_path_join(k->outdir, "libmodel.so");
	k->liblabel = k->bundle ? llm_xasprintf("%s(libmodel.so)", k->bpath) : llm_xstrdup(k->libpath);
}

/* The link of this machine: cc, LLVM's OpenMP runtime and MLIR's C
 * runner utilities beside its tools, MPI for a model split over ranks,
 * and LLVM's own runtime helpers (bf16 truncation __truncsfbf2, which
 * libgcc 12 lacks, for a bf16 KV cache): a static archive, linked last so
 * that only what the objects call is taken. */
static void
native_link(struct llm_argv *l, const struct llm_model *m, const char *out)
{
	const char *cc = getenv("CC");
	char *libdir = llm_llvm_libdir(), *runner = llm_path_join(libdir, "libmlir_c_runner_utils.so");
	const char *rt = llm_target_builtins(NULL);
	char *builtins = rt ? llm_llvm_builtins(libdir, rt) : NULL;

	llm_argv_words(l, cc && *cc ? cc : "cc");
	shared_of_objects(l, out);
	llm_argv_addf(l, "-L%s", libdir);
	llm_argv_addf(l, "-Wl,-rpath,%s", libdir);
	llm_argv_add(l, "-Wl,-z,defs");
	if (llm_file_exists(runner)) {
		/* memref.copy of strided memrefs calls memrefCopy. */
		llm_argv_add(l, "-Wl,--as-needed");
		llm_argv_add(l, "-lmlir_c_runner_utils");
		llm_argv_add(l, "-Wl,--no-as-needed");
	}
	llm_argv_add(l, "-lomp");
	llm_argv_add(l, "-lm");
	if (llm_model_ranks(m) > 1) /* the mpi ops of a model split over ranks */
		llm_argv_add(l, LLM_MPI_LIB);
	if (builtins && llm_file_exists(builtins))
		llm_argv_add(l, builtins);
	free(builtins);
	free(runner);
	free(libdir);
}

/* libmodel.so, linked and checked: its exports and plan. */
static void
link_library(struct link *k)
{
	struct llm_argv l = {0};
	if (llm_out_open(&k->lib, k->libpath) < 0)
		llm_fatal("%s", llm_errmsg());
	if (!k->lib.tmp)
		llm_fatal("%s: not a regular file (the linker writes a new one)", k->libpath);
	if (k->foreign)
		cross_link(&l, k->triple, k->sysroot, k->lib.tmp);
	else
		native_link(&l, &k->m, k->lib.tmp);
	run(l.v, k->verbose);
	llm_argv_free(&l);
	if (k->foreign)
		check_foreign(k->lib.tmp, k->liblabel, k->triple, &k->m, k->mpath);
	else
		check_loaded(k->lib.tmp, k->liblabel, &k->m, k->mpath);
	if (!k->bundle && llm_out_commit(&k->lib) < 0)
		llm_fatal("%s", llm_errmsg());
}

/* The bundle: small members first, weights.bin last and aligned. */
static void
write_bundle(struct link *k)
{
	k->src[k->ns++] = (struct llm_bundle_src){LLM_WEIGHTS_JSON, k->jpath, 0, 0, 0};
	k->src[k->ns++] = (struct llm_bundle_src){"libmodel.so", k->bundle ? k->lib.tmp : k->libpath, 0, 0, 0};
	k->src[k->ns++] = (struct llm_bundle_src){k->m.weights_file, k->wm->file, 1, k->wm->offset, k->wm->size};
	if (llm_bundle_write(k->bpath, k->src, k->ns) < 0)
		llm_fatal("%s", llm_errmsg());
	if (k->bundle) {
		llm_out_abort(&k->lib);
		if (k->tout.fp)
			llm_out_abort(&k->tout);
	}
	if (k->verbose)
		fprintf(stderr, "%s: %zu objects -> %s, %s\n", llm_prog, nobjs, k->liblabel, k->bpath);
}

static void
link_free(struct link *k)
{
	for (size_t i = 1; i <= k->m.ntokenizer_files; i++)
		free((char *)k->src[i].path);
	free(k->src);
	for (size_t i = 0; i < nobjs; i++)
		free(objs[i]);
	free(objs);
	free(k->tpath);
	free(k->bdir);
	free(k->liblabel);
	free(k->tjson);
	free(k->triple);
	free(k->objdir);
	free(k->libpath);
	free(k->bpath);
	llm_bundle_close(&k->db);
	free(k->jpath);
	free(k->mpath);
	llm_model_free(&k->m);
}

int
main(int argc, char **argv)
{
	enum { OPT_SYSROOT = 256 };
	static const struct option longopts[] = {LLM_STD_LONGOPTS, {"sysroot", required_argument, NULL, OPT_SYSROOT},
		{NULL, 0, NULL, 0}};
	struct link k = {0};
	int ch;

	argv[0] = (char *)llm_setprog(argv[0]);
	while ((ch = getopt_long(argc, argv, "ho:v", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			k.bundle = optarg;
			break;
		case 'v':
			k.verbose = 1;
			break;
		case OPT_SYSROOT:
			k.sysroot = optarg;
			break;
		default:
			llm_std_option(ch, usage_text, help_text);
			usage();
		}
	}
	if (argc - optind < 1)
		usage();
	k.outdir = argv[optind];
	check_build(&k);
	gather_objects(&k, argv + optind + 1, argc - optind - 1);
	objects_target(&k);
	resolve_sysroot(&k);
	place_outputs(&k);
	link_library(&k);
	write_bundle(&k);
	link_free(&k);
	return LLM_EXIT_OK;
}
