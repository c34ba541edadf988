/* runtime.h: a compiled model opened for inference, the core of llm-run.
 *
 * Opens a bundle (model.llm) or a build directory: model.json, weights.bin
 * mapped in place (header checked against the plan), the model library
 * (dlopen; its plan fingerprint must equal the weights'), the KV cache
 * (kv_cache.bytes of zeros), and calls the three phases through the ABI of
 * share/doc/llm/formats.txt.  Nothing here knows a model's shapes beyond
 * model.json: vocab_size, max_context and the phases' token counts. */
#ifndef LLM_RUNTIME_H
#define LLM_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bundle.h"
#include "model.h"

/* A rank-1 memref descriptor, as llvm.emit_c_interface passes it. */
struct llm_memref1 {
	void *allocated, *aligned;
	int64_t offset, size, stride;
};

/* _mlir_ciface_<entry> of every phase: the arguments of llm_phase_args
 * (phase.h), in its order. */
typedef void llm_phase_fn(struct llm_memref1 *weights, struct llm_memref1 *kv,
    struct llm_memref1 *tokens, int64_t pos, int64_t n_tokens, struct llm_memref1 *logits);

struct llm_runtime_opts {
	int threads;            /* OpenMP threads; 0: the OpenMP default */
	int verbose;            /* each phase call on stderr */
	int prefault;           /* map the weights' pages in a background thread */
};

struct llm_runtime {
	struct llm_bundle bundle;
	struct llm_model model;
	struct llm_bundle_map wmap;     /* weights.bin, in place */
	const uint8_t *weights;         /* its data area (data_bytes) */
	void *lib;                      /* the model library */
	const char *lib_label;          /* for messages */
	llm_phase_fn *phase[LLM_PH_COUNT];
	int64_t phase_tokens[LLM_PH_COUNT]; /* rows per call (S, S, 1) */
	uint64_t lib_fingerprint;
	uint8_t *kv;                    /* kv_cache.bytes, zeroed, page aligned */
	size_t kv_map;
	int64_t *tokens;                /* the tokens argument: phase_tokens max */
	float *logits;                  /* vocab_size: the last call's logits */
	int64_t vocab, max_context;
	int64_t pos;                    /* positions filled in the cache */
	int64_t calls[LLM_PH_COUNT];
	int verbose;
	pthread_t prefault;             /* joined by llm_runtime_close */
	int prefaulting;
	atomic_int stop_prefault;
};

/* 0, or -1 with llm_errmsg naming the file at fault. */
int llm_runtime_open(struct llm_runtime *rt, const char *path, const struct llm_runtime_opts *o);
void llm_runtime_close(struct llm_runtime *rt);

/* Append n prompt tokens at rt->pos: prefill for a chunk at position 0,
 * prefill_kv for chunks after it, each of at most its phase's tokens.
 * rt->logits then holds the logits of the last token.  -1 with llm_errmsg
 * for an id outside the vocabulary or a context overflow. */
int llm_runtime_prefill(struct llm_runtime *rt, const int64_t *tokens, int64_t n);
/* Append one token at rt->pos > 0 through decode. */
int llm_runtime_decode(struct llm_runtime *rt, int64_t token);
/* Forget the context: the next prefill starts at position 0.  The cache
 * is not cleared: attention reads [0, pos + n_tokens) only. */
void llm_runtime_reset(struct llm_runtime *rt);
/* Keep the first pos positions of the context (pos <= rt->pos): the next
 * tokens overwrite the cache from there.  rt->logits are stale until the
 * next prefill or decode.  -1 with llm_errmsg for pos out of range. */
int llm_runtime_rewind(struct llm_runtime *rt, int64_t pos);

/* Index of the largest element (the first on ties; NaN never wins). */
int64_t llm_argmax(const float *x, int64_t n);

#endif
