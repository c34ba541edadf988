/* runtime.c: see runtime.h. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../base/json.h"
#include "runtime.h"
#include "../formats/target.h"
#include "../base/util.h"
#include "../formats/weights.h"

struct llm_runtime {
	struct llm_bundle bundle;
	struct llm_model model;
	struct llm_bundle_map wmap; /* weights.bin, in place */
	const uint8_t *weights;     /* its data area (data_bytes) */
	void *lib;                  /* the model library */
	const char *lib_label;      /* for messages */
	llm_phase_fn *phase[LLM_PH_COUNT];
	int64_t phase_tokens[LLM_PH_COUNT]; /* rows per call (S, S, 1, S) */
	int64_t phase_out[LLM_PH_COUNT];    /* floats of each one's output (llm_phase_out_floats) */
	uint64_t lib_fingerprint;
	int64_t vocab, tokens_cap; /* tokens_cap: phase_tokens max */
	int verbose;
	pthread_t prefault; /* joined by llm_runtime_close */
	int prefaulting;
	atomic_int stop_prefault;
	char *target_cpu; /* target.json's cpu; NULL: none */
	uint64_t wbytes;  /* the weights the phases get: data_bytes, or
	                   * one rank's image of them */
	/* Split over MPI ranks (limits.tp or limits.pp > 1): this process
	 * is rank rank of llm_model_ranks, through the library's entry points
	 * (emit.c). */
	struct {
		int64_t (*init)(void);
		void (*finalize)(void);
		void (*reduce[3])(struct llm_memref1 *); /* sum, min, max */
		int started, failed;
		int64_t rank;
		atomic_int nctx; /* live contexts: at most one */
		/* The command header (HDR_TOKENS + tokens_cap): rank 0 fills it
		 * before each phase call and at close, the others receive it in
		 * llm_runtime_follow.  Runtime state, not a context's: it is the
		 * ranks' message buffer, which the quit at close and a follower
		 * before its first call need when no context exists; the one
		 * context a split runtime allows (nctx) is the only writer on
		 * rank 0. */
		int64_t *hdr;
	} mpi;
};

enum { MPI_SUM_, MPI_MIN_, MPI_MAX_ };
/* What rank 0 tells the others before each phase call: the command, then
 * the phase, position, tokens and context, then the token ids. */
enum { HDR_CMD, HDR_PHASE, HDR_POS, HDR_N, HDR_CONTEXT, HDR_TOKENS };
enum { CMD_QUIT, CMD_CALL };

struct llm_ctx {
	const struct llm_runtime *rt;
	uint8_t *kv; /* kv_bytes, zeroed, page aligned */
	size_t kv_map;
	uint64_t kv_bytes;   /* what the phases get as %kv */
	int64_t *tokens;     /* the tokens argument: tokens_cap */
	float *logits;       /* vocab_size: the last call's logits */
	float *hidden;       /* phase_out of embed, made at its first call: its rows */
	int64_t max_context; /* positions the cache holds */
	int64_t pos;         /* positions filled in the cache */
};

/* model.json of a build directory, or the member of a bundle: the
 * messages name the member ("model.llm: model.json"). */
static int
load_model(struct llm_runtime *rt)
{
	struct llm_bundle *b = &rt->bundle;
	const struct llm_member *mb = llm_bundle_get(b, "model.json");
	char *text;
	size_t len;
	json_t *root;

	if (!mb)
		return -1;
	if (b->is_dir)
		return llm_model_load(&rt->model, mb->label);
	if (llm_bundle_read(b, mb, &text, &len) < 0)
		return -1;
	root = llm_json_loadb(text, len, mb->label);
	free(text);
	if (!root || llm_model_parse(&rt->model, root, mb->label) < 0)
		return -1;
	free(rt->model.dir);
	rt->model.dir = llm_xstrdup(b->path);
	return 0;
}

/* weights.bin against weights.json, when the bundle or directory has it
 * (llm-link puts it in): the cheap check, a few hundred KiB of reads
 * (weights.h), so that another checkpoint's weights of the same plan or a
 * damaged header are refused before the first token.  llm-run --verify
 * reads everything. */
static int
check_weights(struct llm_runtime *rt, const struct llm_member *wm)
{
	const struct llm_member *jm = llm_bundle_find(&rt->bundle, LLM_WEIGHTS_JSON);
	struct llm_weights_manifest j;
	char *text;
	size_t len;
	int rc;

	if (!jm)
		return 0;
	if (llm_bundle_read(&rt->bundle, jm, &text, &len) < 0)
		return -1;
	rc = llm_weights_manifest_loadb(&j, text, len, jm->label);
	free(text);
	if (rc < 0)
		return -1;
	rc = llm_weights_check(rt->wmap.p, wm->size, wm->label, &j);
	llm_weights_manifest_free(&j);
	return rc;
}

/* weights.bin in place, its header checked against the plan. */
static int
map_weights(struct llm_runtime *rt)
{
	const struct llm_model *m = &rt->model;
	const struct llm_member *mb;
	struct llm_weights_header h;
	char a[17], b[17];

	if (strchr(m->weights_file, '/') || !(mb = llm_bundle_get(&rt->bundle, m->weights_file)))
		return strchr(m->weights_file, '/') ?
		    llm_seterr("%s: weights.file '%s' is not a plain name", m->path, m->weights_file) :
		    -1;
	if (mb->size < LLM_WEIGHTS_HEADER_BYTES)
		return llm_seterr("%s: truncated header (%" PRIu64 " bytes)", mb->label, mb->size);
	if (llm_bundle_map(&rt->bundle, mb, &rt->wmap) < 0)
		return -1;
	if (llm_weights_header_decode(rt->wmap.p, rt->wmap.len, mb->label, &h) < 0)
		return -1;
	if (h.fingerprint != m->fingerprint) {
		llm_hex64(h.fingerprint, a);
		llm_hex64(m->fingerprint, b);
		return llm_seterr("%s: weights are plan %s, model.json is plan %s", mb->label, a, b);
	}
	if (h.header_bytes != m->header_bytes || h.data_bytes != m->data_bytes)
		return llm_seterr("%s: layout (header %" PRIu32 ", data %" PRIu64 " bytes) differs from "
				  "model.json (header %" PRIu64 ", data %" PRIu64 ")",
		    mb->label, h.header_bytes, h.data_bytes, m->header_bytes, m->data_bytes);
	if (mb->size != h.header_bytes + h.data_bytes)
		return llm_seterr("%s: size %" PRIu64 " bytes, header says %" PRIu64 " (truncated?)", mb->label,
		    mb->size, h.header_bytes + h.data_bytes);
	rt->weights = rt->wmap.p + h.header_bytes;
	rt->wbytes = m->data_bytes;
	if ((uintptr_t)rt->weights % LLM_WEIGHTS_ALIGN)
		return llm_seterr("%s: data area is not %d-byte aligned in %s", mb->label, LLM_WEIGHTS_ALIGN,
		    rt->bundle.path);
	return check_weights(rt, mb);
}

/* The weights' pages, mapped before the first phase needs them: the
 * first prefill of a fresh process would otherwise take a page fault per
 * 64 KiB of weights (0.15 s for 3.5 GB here).  Runs beside the tokenizer
 * load; a read per page, the kernel's fault-around maps the rest. */
static void *
prefault_main(void *arg)
{
	struct llm_runtime *rt = arg;
	const volatile uint8_t *p = rt->weights;
	size_t n = (size_t)rt->wbytes, step = (size_t)sysconf(_SC_PAGESIZE);
	unsigned sum = 0;

	for (size_t i = 0; i < n; i += step) {
		if ((i & ((1u << 24) - 1)) == 0 && atomic_load_explicit(&rt->stop_prefault, memory_order_relaxed))
			break;
		sum += p[i];
	}
	return (void *)(uintptr_t)sum;
}

static int
load_library(struct llm_runtime *rt, const struct llm_runtime_opts *o)
{
	const struct llm_member *mb = llm_bundle_get(&rt->bundle, "libmodel.so");
	int64_t (*fp)(void);
	char a[17], b[17];

	if (!mb)
		return -1;
	rt->lib_label = rt->bundle.is_dir ? mb->label : rt->bundle.path;
	/* The machine the code is for (target.h): checked before it is loaded,
	 * so that a bundle of another ISA is refused, not killed by SIGILL. */
	const struct llm_member *tm = llm_bundle_find(&rt->bundle, LLM_TARGET_MEMBER);
	if (tm) {
		char *text;
		size_t len;
		struct llm_target t;
		if (llm_bundle_read(&rt->bundle, tm, &text, &len) < 0)
			return -1;
		int rc = llm_target_parse(text, len, tm->label, &t);
		free(text);
		if (rc < 0)
			return -1;
		rc = llm_target_check_host(&t, rt->bundle.is_dir ? tm->label : rt->bundle.path);
		if (rc == 0)
			rt->target_cpu = llm_xstrdup(t.cpu);
		llm_target_free(&t);
		if (rc < 0) {
			if (o->refused)
				*o->refused = 1;
			return -1;
		}
	}
	if (o->threads > 0) {
		/* libomp reads it when it starts; set before it is loaded. */
		char n[32];
		snprintf(n, sizeof(n), "%d", o->threads);
		setenv("OMP_NUM_THREADS", n, 1);
	}
	if (!(rt->lib = llm_bundle_dlopen(&rt->bundle, mb, RTLD_NOW | RTLD_LOCAL)))
		return -1;
	if (o->threads > 0)
		llm_runtime_set_threads(rt, o->threads);
	for (int i = 0; i < LLM_PH_COUNT; i++) {
		const struct llm_phase_spec *ps = &llm_phase_specs[i];
		const struct llm_phase *ph = llm_model_phase(&rt->model, ps->name);
		char sym[256], fsym[256];
		if (!ph) {
			if (ps->optional)
				continue;
			return llm_seterr("%s: no phase '%s'", rt->model.path, ps->name);
		}
		if (ps->single && ph->tokens != 1)
			return llm_seterr("%s: phase '%s' takes %" PRId64 " tokens, expected 1", rt->model.path,
			    ps->name, ph->tokens);
		snprintf(sym, sizeof(sym), "_mlir_ciface_%s", ph->entry);
		snprintf(fsym, sizeof(fsym), "_mlir_ciface_%s_fingerprint", ph->entry);
		if (!(rt->phase[i] = (llm_phase_fn *)dlsym(rt->lib, sym)))
			return llm_seterr("%s: missing symbol '%s' (phase '%s')", mb->label, sym, ph->name);
		if (!(fp = (int64_t (*)(void))dlsym(rt->lib, fsym)))
			return llm_seterr("%s: missing symbol '%s' (phase '%s')", mb->label, fsym, ph->name);
		rt->phase_tokens[i] = ph->tokens;
		rt->phase_out[i] = llm_phase_out_floats(ps, ph->tokens, rt->vocab, rt->model.cfg.hidden_size);
		/* Every phase carries the plan it was generated for. */
		rt->lib_fingerprint = (uint64_t)fp();
		if (rt->lib_fingerprint != rt->model.fingerprint) {
			llm_hex64(rt->lib_fingerprint, a);
			llm_hex64(rt->model.fingerprint, b);
			return llm_seterr("%s: library built for plan %s, weights are plan %s", rt->lib_label, a, b);
		}
	}
	return 0;
}

/* An in-place reduction of n int64 over the ranks. */
static void
mpi_reduce(const struct llm_runtime *rt, int op, int64_t *v, int64_t n)
{
	struct llm_memref1 d = {v, v, 0, n, 1};
	rt->mpi.reduce[op](&d);
}

/* Tensor parallel: MPI started through the library, this rank's image of
 * the weights, and the ranks' agreement: as many as the plan's, one plan
 * (fingerprint), one phase shape and vocabulary.  The checks are
 * collective: every rank reaches the same verdict, rank 0 says it. */
static int
mpi_start(struct llm_runtime *rt, const struct llm_runtime_opts *o)
{
	static const char *const names[] = {"sum", "min", "max"};
	const struct llm_model *m = &rt->model;
	char sym[64];

	if (!(rt->mpi.init = (int64_t (*)(void))dlsym(rt->lib, "_mlir_ciface_llm_mpi_init")) ||
	    !(rt->mpi.finalize = (void (*)(void))dlsym(rt->lib, "_mlir_ciface_llm_mpi_finalize")))
		return llm_seterr("%s: %" PRId64
				  " ranks (limits.tp, limits.pp), but the library has no MPI entry points",
		    rt->lib_label, llm_model_ranks(m));
	for (int i = 0; i < 3; i++) {
		snprintf(sym, sizeof(sym), "_mlir_ciface_llm_mpi_%s", names[i]);
		if (!(rt->mpi.reduce[i] = (void (*)(struct llm_memref1 *))dlsym(rt->lib, sym)))
			return llm_seterr("%s: missing symbol '%s'", rt->lib_label, sym);
	}
	rt->mpi.rank = rt->mpi.init();
	rt->mpi.started = 1;
	rt->mpi.hdr = llm_xcalloc((size_t)(HDR_TOKENS + rt->tokens_cap), sizeof(int64_t));
	if (o->mpi_rank)
		*o->mpi_rank = (int)rt->mpi.rank;
	int64_t size = 1, lo[4] = {(int64_t)m->fingerprint, llm_model_ranks(m), rt->tokens_cap, rt->vocab}, hi[4];
	memcpy(hi, lo, sizeof(hi));
	mpi_reduce(rt, MPI_SUM_, &size, 1);
	mpi_reduce(rt, MPI_MIN_, lo, 4);
	mpi_reduce(rt, MPI_MAX_, hi, 4);
	if (memcmp(lo, hi, sizeof(lo)) != 0) {
		rt->mpi.failed = 1;
		return llm_seterr("%s: the %" PRId64
				  " ranks do not run one model: their bundles' plans (fingerprints), "
				  "--tp, --pp or phases differ",
		    m->path, size);
	}
	if (size != llm_model_ranks(m)) {
		rt->mpi.failed = 1;
		return llm_seterr("%s: built for %" PRId64 " ranks (llm-import --%s), run as %" PRId64 " (mpirun -np)",
		    m->path, llm_model_ranks(m), m->pp > 1 ? "pp" : "tp", size);
	}
	uint64_t stride = m->data_bytes / (uint64_t)llm_model_ranks(m);
	rt->weights += (uint64_t)rt->mpi.rank * stride;
	rt->wbytes = stride;
	return 0;
}

/* A KV cache of zeros for n positions (anonymous pages, touched only as
 * used), in place of the one there was: the phases take the positions of
 * its rows from the size of %kv. */
static int
alloc_kv(struct llm_ctx *c, int64_t n)
{
	const struct llm_model *m = &c->rt->model;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (n < 1 || n > m->max_context)
		return llm_seterr("%s: a context of %" PRId64
				  " positions exceeds the one this model was built for, %" PRId64
				  " (llm-import --max-context sets it)",
		    m->path, n, m->max_context);
	uint64_t bytes = llm_kv_bytes(m, n);
	if (bytes == 0 || bytes > SIZE_MAX - page || bytes > INT64_MAX)
		return llm_seterr("%s: bad kv_cache.bytes", m->path);
	size_t len = (size_t)LLM_ALIGN_UP(bytes, page);
	void *kv = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (kv == MAP_FAILED)
		return llm_seterr("%s: cannot allocate the KV cache of %" PRIu64 " bytes (%" PRId64 " positions):",
		    m->path, bytes, n);
#ifdef MADV_HUGEPAGE
	/* Only a hint (THP may be off).  A tile of the transposed keys reads
	 * HD rows a cache row apart (16 KiB at f32, 4096 positions): with 4 KiB
	 * pages each row is a page of its own, more than the L1 TLB holds
	 * (prefill at depth 1.04x with huge pages: BENCHMARKS.md).  But a 2 MB
	 * page holds the same stretch of many rows, so the first token touches
	 * the whole cache: up to the default context that is taken (it is
	 * what llama.cpp allocates too); past it, the cache is touched as its
	 * positions fill, so that memory and the first token's time follow
	 * the length, not the capacity. */
	madvise(kv, len, n <= LLM_DEFAULT_CONTEXT ? MADV_HUGEPAGE : MADV_NOHUGEPAGE); /* (THP "always" too) */
#endif
	if (c->kv)
		munmap(c->kv, c->kv_map);
	c->kv = kv;
	c->kv_map = len;
	c->kv_bytes = bytes;
	c->max_context = n;
	c->pos = 0;
	return 0;
}

/* Split over ranks, one context at a time (the ranks follow rank 0's
 * calls on one cache each): a context counts from llm_ctx_new to
 * llm_ctx_free. */
static void
count_ctx(const struct llm_runtime *rt, int d)
{
	if (llm_model_ranks(&rt->model) > 1)
		atomic_fetch_add(&((struct llm_runtime *)rt)->mpi.nctx, d);
}

struct llm_ctx *
llm_ctx_new(const struct llm_runtime *rt, int64_t n)
{
	if (llm_model_ranks(&rt->model) > 1 && atomic_fetch_add(&((struct llm_runtime *)rt)->mpi.nctx, 1) > 0) {
		count_ctx(rt, -1);
		llm_seterr("%s: a tensor-parallel model evaluates one sequence at a time", rt->model.path);
		return NULL;
	}
	struct llm_ctx *c = llm_xcalloc(1, sizeof(*c));
	c->rt = rt;
	if (n == 0)
		n = rt->model.max_context < LLM_DEFAULT_CONTEXT ? rt->model.max_context : LLM_DEFAULT_CONTEXT;
	if (alloc_kv(c, n) < 0) {
		count_ctx(rt, -1);
		free(c);
		return NULL;
	}
	c->tokens = aligned_alloc(64, LLM_ALIGN_UP((size_t)rt->tokens_cap * sizeof(int64_t), 64));
	c->logits = aligned_alloc(64, LLM_ALIGN_UP((size_t)rt->vocab * sizeof(float), 64));
	if (!c->tokens || !c->logits)
		llm_fatal("out of memory");
	return c;
}

void
llm_ctx_free(struct llm_ctx *c)
{
	if (!c)
		return;
	if (c->kv)
		munmap(c->kv, c->kv_map);
	count_ctx(c->rt, -1);
	free(c->tokens);
	free(c->logits);
	free(c->hidden);
	free(c);
}

struct llm_runtime *
llm_runtime_open(const char *path, const struct llm_runtime_opts *o)
{
	static const struct llm_runtime_opts none;
	const struct llm_model *m;
	struct llm_runtime *rt = llm_xcalloc(1, sizeof(*rt));

	if (!o)
		o = &none;
#ifdef M_MMAP_MAX
	/* The generated code allocates its temporaries with malloc at every
	 * call, some of them tens of megabytes (a prefill decodes each
	 * quantized matrix to f32).  glibc would map each one afresh and
	 * unmap it on free, so every call page-faulted its temporaries in
	 * again (4.8 million faults for 128 tokens of a 1.5B Q8_0 model):
	 * take them from the heap, and keep the heap's free memory for the
	 * next call. */
	mallopt(M_MMAP_MAX, 0);
	mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
	rt->verbose = o->verbose;
	if (llm_bundle_open(&rt->bundle, path) < 0) {
		free(rt);
		return NULL;
	}
	if (load_model(rt) < 0)
		goto fail;
	m = &rt->model;
	rt->vocab = m->cfg.vocab_size;
	if (map_weights(rt) < 0 || load_library(rt, o) < 0)
		goto fail;
	rt->tokens_cap = 1;
	for (int i = 0; i < LLM_PH_COUNT; i++)
		if (rt->phase_tokens[i] > rt->tokens_cap)
			rt->tokens_cap = rt->phase_tokens[i];
	if (llm_model_ranks(m) > 1 && mpi_start(rt, o) < 0)
		goto fail;
	if (llm_model_ranks(m) == 1) {
		/* one of several ranks (MPICH's launcher, Open MPI's): the
		 * others wait for this one in vain */
		const char *n = getenv("PMI_SIZE") ? getenv("PMI_SIZE") : getenv("OMPI_COMM_WORLD_SIZE");
		if (n && strcmp(n, "1") != 0) {
			llm_seterr("%s: not a tensor-parallel model (llm-import --tp), but run as one of %s ranks "
				   "(mpirun -np)",
			    m->path, n);
			/* The others wait in MPI_Init for this rank; the launcher
			 * ends them when a rank that started MPI exits with a
			 * failure, not one that never did. */
			void *h = dlopen(LLM_MPI_SONAME, RTLD_NOW | RTLD_LOCAL);
			int (*init)(int *, char ***) = h ? (int (*)(int *, char ***))dlsym(h, "MPI_Init") : NULL;
			if (init)
				init(NULL, NULL);
			goto fail;
		}
	}
	/* Best effort: without the thread the first phase faults them in. */
	if (o->prefault && pthread_create(&rt->prefault, NULL, prefault_main, rt) == 0)
		rt->prefaulting = 1;
	return rt;
fail:
	llm_runtime_close(rt);
	return NULL;
}

void
llm_runtime_close(struct llm_runtime *rt)
{
	if (!rt)
		return;
	if (rt->prefaulting) {
		atomic_store(&rt->stop_prefault, 1);
		pthread_join(rt->prefault, NULL);
	}
	if (rt->mpi.started) {
		/* rank 0 lets the others' llm_runtime_follow return; then all
		 * of them end MPI together */
		if (rt->mpi.rank == 0 && !rt->mpi.failed) {
			memset(rt->mpi.hdr, 0, (size_t)(HDR_TOKENS + rt->tokens_cap) * sizeof(int64_t));
			rt->mpi.hdr[HDR_CMD] = CMD_QUIT;
			mpi_reduce(rt, MPI_SUM_, rt->mpi.hdr, HDR_TOKENS + rt->tokens_cap);
		}
		rt->mpi.finalize();
	}
	free(rt->mpi.hdr);
	/* Stop libomp's worker threads (OpenMP 5 omp_pause_hard = 2), so
	 * that nothing runs past this point; the library stays loaded. */
	if (rt->lib) {
		int (*pause)(int) = (int (*)(int))dlsym(rt->lib, "omp_pause_resource_all");
		if (pause)
			pause(2);
	}
	llm_bundle_unmap(&rt->wmap);
	if (rt->model.root)
		llm_model_free(&rt->model);
	llm_bundle_close(&rt->bundle);
	free(rt->target_cpu);
	free(rt);
}

void
llm_runtime_set_threads(struct llm_runtime *rt, int threads)
{
	/* libomp, loaded with the model library; a library without it (no
	 * parallel loop) runs on the calling thread alone */
	void (*set)(int) = (void (*)(int))dlsym(rt->lib, "omp_set_num_threads");
	if (set)
		set(threads);
}

const char *
llm_runtime_target_cpu(const struct llm_runtime *rt)
{
	return rt->target_cpu;
}

const struct llm_model *
llm_runtime_model(const struct llm_runtime *rt)
{
	return &rt->model;
}

const struct llm_bundle *
llm_runtime_bundle(const struct llm_runtime *rt)
{
	return &rt->bundle;
}

uint64_t
llm_runtime_fingerprint(const struct llm_runtime *rt)
{
	return rt->lib_fingerprint;
}

int64_t
llm_runtime_vocab(const struct llm_runtime *rt)
{
	return rt->vocab;
}

int64_t
llm_ctx_context(const struct llm_ctx *c)
{
	return c->max_context;
}

int
llm_ctx_set_context(struct llm_ctx *c, int64_t n)
{
	return alloc_kv(c, n);
}

int64_t
llm_ctx_pos(const struct llm_ctx *c)
{
	return c->pos;
}

const float *
llm_ctx_logits(const struct llm_ctx *c)
{
	return c->logits;
}

static int
check_ids(const struct llm_ctx *c, const int64_t *tokens, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		if (tokens[i] < 0 || tokens[i] >= c->rt->vocab)
			return llm_seterr("token id %" PRId64 " is out of range [0, %" PRId64 ")", tokens[i],
			    c->rt->vocab);
	if (n > c->max_context - c->pos)
		return llm_seterr("%" PRId64 " more tokens do not fit in the context: %" PRId64 " of %" PRId64
				  " positions used (-c)",
		    n, c->pos, c->max_context);
	return 0;
}

/* One phase call on c: reads only the runtime (the weights, the library),
 * writes only c, so that contexts of one runtime run in different threads
 * at once. */
static void
run_phase(struct llm_ctx *c, int ph, const int64_t *tokens, int64_t n)
{
	const struct llm_runtime *rt = c->rt;
	int64_t cap = rt->phase_tokens[ph];
	struct llm_memref1 w = {(void *)rt->weights, (void *)rt->weights, 0, (int64_t)rt->wbytes, 1};
	struct llm_memref1 kv = {c->kv, c->kv, 0, (int64_t)c->kv_bytes, 1};
	struct llm_memref1 tk = {c->tokens, c->tokens, 0, cap, 1};
	float *out = c->logits;

	if (llm_phase_specs[ph].out == LLM_OUT_HIDDEN) {
		if (!c->hidden &&
		    !(c->hidden = aligned_alloc(64, LLM_ALIGN_UP((size_t)rt->phase_out[ph] * sizeof(float), 64))))
			llm_fatal("out of memory");
		out = c->hidden;
	}
	struct llm_memref1 lg = {out, out, 0, rt->phase_out[ph], 1};

	/* Rows past n are valid ids (0), so code that reads all S is safe. */
	memcpy(c->tokens, tokens, (size_t)n * sizeof(*tokens));
	memset(c->tokens + n, 0, (size_t)(cap - n) * sizeof(*tokens));
	if (rt->verbose)
		fprintf(stderr, "%s: %s pos %" PRId64 " n_tokens %" PRId64 "\n", llm_prog, llm_phase_specs[ph].name,
		    c->pos, n);
	rt->phase[ph](&w, &kv, &tk, c->pos, n, &lg);
	c->pos += n;
}

/* A phase call; on rank 0 of a tensor-parallel model, told to the other
 * ranks first (they run it in llm_runtime_follow). */
static void
call(struct llm_ctx *c, int ph, const int64_t *tokens, int64_t n)
{
	const struct llm_runtime *rt = c->rt;
	if (llm_model_ranks(&rt->model) > 1) {
		int64_t *h = rt->mpi.hdr;
		memset(h, 0, (size_t)(HDR_TOKENS + rt->tokens_cap) * sizeof(int64_t));
		h[HDR_CMD] = CMD_CALL;
		h[HDR_PHASE] = ph;
		h[HDR_POS] = c->pos;
		h[HDR_N] = n;
		h[HDR_CONTEXT] = c->max_context;
		memcpy(h + HDR_TOKENS, tokens, (size_t)n * sizeof(*tokens));
		mpi_reduce(rt, MPI_SUM_, h, HDR_TOKENS + rt->tokens_cap);
	}
	run_phase(c, ph, tokens, n);
}

int
llm_runtime_rank(const struct llm_runtime *rt)
{
	return rt->mpi.started ? (int)rt->mpi.rank : 0;
}

/* The follower's context is made at the first call, for the positions
 * rank 0's context has (HDR_CONTEXT), and made anew when they change. */
int
llm_runtime_follow(struct llm_runtime *rt)
{
	struct llm_ctx *c = NULL;
	int64_t nh = HDR_TOKENS + rt->tokens_cap;
	int rc = -1;
	if (!rt->mpi.started || rt->mpi.rank == 0)
		return llm_seterr("%s: only ranks other than 0 of a tensor-parallel model follow", rt->model.path);
	for (;;) {
		const int64_t *h = rt->mpi.hdr;
		memset(rt->mpi.hdr, 0, (size_t)nh * sizeof(int64_t));
		mpi_reduce(rt, MPI_SUM_, rt->mpi.hdr, nh);
		if (h[HDR_CMD] == CMD_QUIT) {
			rc = 0;
			break;
		}
		if (h[HDR_CMD] != CMD_CALL || h[HDR_PHASE] < 0 || h[HDR_PHASE] >= LLM_PH_COUNT ||
		    !rt->phase[h[HDR_PHASE]] || h[HDR_N] < 1 || h[HDR_N] > rt->phase_tokens[h[HDR_PHASE]] ||
		    h[HDR_POS] < 0) {
			llm_seterr("%s: rank %" PRId64 ": rank 0 sent a call this rank cannot make", rt->model.path,
			    rt->mpi.rank);
			break;
		}
		if (!c && !(c = llm_ctx_new(rt, h[HDR_CONTEXT])))
			break;
		if (h[HDR_CONTEXT] != c->max_context && alloc_kv(c, h[HDR_CONTEXT]) < 0)
			break;
		if (h[HDR_POS] + h[HDR_N] > c->max_context) {
			llm_seterr("%s: rank %" PRId64 ": a call past the context", rt->model.path, rt->mpi.rank);
			break;
		}
		c->pos = h[HDR_POS];
		run_phase(c, (int)h[HDR_PHASE], h + HDR_TOKENS, h[HDR_N]);
	}
	llm_ctx_free(c);
	return rc;
}

int
llm_ctx_prefill(struct llm_ctx *c, const int64_t *tokens, int64_t n)
{
	const struct llm_runtime *rt = c->rt;
	if (n <= 0)
		return llm_seterr("no tokens to prefill");
	if (check_ids(c, tokens, n) < 0)
		return -1;
	while (n > 0) {
		int ph = c->pos == 0 ? LLM_PH_PREFILL : LLM_PH_PREFILL_KV;
		if (!rt->phase[ph])
			return llm_seterr("%s: no phase '%s' for %" PRId64 " more tokens at position %" PRId64,
			    rt->model.path, llm_phase_specs[ph].name, n, c->pos);
		int64_t k = n < rt->phase_tokens[ph] ? n : rt->phase_tokens[ph];
		call(c, ph, tokens, k);
		tokens += k;
		n -= k;
	}
	return 0;
}

int
llm_ctx_embed(struct llm_ctx *c, const int64_t *tokens, int64_t n,
    void (*rows)(void *arg, const float *hidden, int64_t k), void *arg)
{
	const struct llm_runtime *rt = c->rt;
	if (!rt->phase[LLM_PH_EMBED])
		return llm_seterr("%s: no phase '%s' (the model was compiled before embeddings: compile it again)",
		    rt->model.path, llm_phase_specs[LLM_PH_EMBED].name);
	if (n <= 0)
		return llm_seterr("no tokens to embed");
	if (check_ids(c, tokens, n) < 0)
		return -1;
	while (n > 0) {
		int64_t k = n < rt->phase_tokens[LLM_PH_EMBED] ? n : rt->phase_tokens[LLM_PH_EMBED];
		call(c, LLM_PH_EMBED, tokens, k);
		rows(arg, c->hidden, k);
		tokens += k;
		n -= k;
	}
	return 0;
}

int64_t
llm_runtime_hidden_size(const struct llm_runtime *rt)
{
	return rt->model.cfg.hidden_size;
}

int
llm_runtime_has_phase(const struct llm_runtime *rt, int ph)
{
	return ph >= 0 && ph < LLM_PH_COUNT && rt->phase[ph] != NULL;
}

int
llm_ctx_decode(struct llm_ctx *c, int64_t token)
{
	if (c->pos == 0)
		return llm_ctx_prefill(c, &token, 1);
	if (check_ids(c, &token, 1) < 0)
		return -1;
	call(c, LLM_PH_DECODE, &token, 1);
	return 0;
}

void
llm_ctx_reset(struct llm_ctx *c)
{
	c->pos = 0;
}

int
llm_ctx_rewind(struct llm_ctx *c, int64_t pos)
{
	if (pos < 0 || pos > c->pos)
		return llm_seterr("cannot rewind the context to position %" PRId64 " of %" PRId64, pos, c->pos);
	c->pos = pos;
	return 0;
}

/* The KV cache's blocks (layer, k/v, KV head; formats.txt "kv_cache"):
 * their number, KV heads, head_dim, element size and positions a row. */
struct kv_rows {
	int64_t nrows, kvh, hd, esz, P;
};

static struct kv_rows
kv_rows(const struct llm_ctx *c)
{
	const struct llm_model *m = &c->rt->model;
	struct kv_rows r = {m->cfg.n_layers * 2 * m->cfg.n_kv_heads, m->cfg.n_kv_heads, m->cfg.head_dim,
		(int64_t)llm_dtype_size(m->kv_dtype), llm_kv_positions(c->max_context)};
	return r;
}

/* Each block (layer, k/v, head) is HD rows of P positions for the keys
 * (k: even blocks), P rows of HD for the values: the first pos positions
 * of keys are HD runs of pos elements, of values one run of pos * HD. */
int
llm_ctx_write_kv(const struct llm_ctx *c, FILE *f)
{
	struct kv_rows r = kv_rows(c);
	size_t block = (size_t)(r.hd * r.P * r.esz);
	for (int64_t b = 0; b < r.nrows; b++) {
		const uint8_t *p = c->kv + (size_t)b * block;
		int keys = (b / r.kvh) % 2 == 0;
		if (keys) {
			for (int64_t d = 0; d < r.hd; d++)
				if (fwrite(p + (size_t)(d * r.P * r.esz), (size_t)r.esz, (size_t)c->pos, f) !=
				    (size_t)c->pos)
					return -1;
		} else if (fwrite(p, (size_t)(r.hd * r.esz), (size_t)c->pos, f) != (size_t)c->pos)
			return -1;
	}
	return 0;
}

int
llm_ctx_read_kv(struct llm_ctx *c, int64_t pos, const float *logits, FILE *f)
{
	if (pos < 0 || pos > c->max_context)
		return llm_seterr("%" PRId64 " positions do not fit in a context of %" PRId64, pos, c->max_context);
	struct kv_rows r = kv_rows(c);
	size_t block = (size_t)(r.hd * r.P * r.esz);
	for (int64_t b = 0; b < r.nrows; b++) {
		uint8_t *p = c->kv + (size_t)b * block;
		int keys = (b / r.kvh) % 2 == 0;
		if (keys) {
			for (int64_t d = 0; d < r.hd; d++)
				if (fread(p + (size_t)(d * r.P * r.esz), (size_t)r.esz, (size_t)pos, f) != (size_t)pos)
					return llm_seterr("truncated");
		} else if (fread(p, (size_t)(r.hd * r.esz), (size_t)pos, f) != (size_t)pos)
			return llm_seterr("truncated");
	}
	memcpy(c->logits, logits, (size_t)c->rt->vocab * sizeof(float));
	c->pos = pos;
	return 0;
}

int64_t
llm_argmax(const float *x, int64_t n)
{
	int64_t best = 0;
	for (int64_t i = 1; i < n; i++)
		if (x[i] > x[best] || (x[best] != x[best] && x[i] == x[i]))
			best = i;
	return best;
}
