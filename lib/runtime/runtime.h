/* runtime.h: a compiled model opened for inference, the core of llm-run.
 *
 * Opens a bundle (model.llm) or a build directory: model.json, weights.bin
 * mapped in place (header checked against the plan), the model library
 * (dlopen; its plan fingerprint must equal the weights'), and calls the
 * phases through the ABI of share/doc/llm/formats.txt on a sequence's
 * state, an llm_ctx, which holds the KV cache (zeros, for the context
 * asked for: llm_kv_bytes); open allocates none.  Nothing here knows a
 * model's shapes beyond model.json: vocab_size, max_context and the
 * phases' token counts. */
#ifndef LLM_RUNTIME_H
#define LLM_RUNTIME_H

#include <stdint.h>
#include <stdio.h>

#include "../formats/bundle.h"
#include "../formats/model.h"

/* A rank-1 memref descriptor, as llvm.emit_c_interface passes it. */
struct llm_memref1 {
	void *allocated, *aligned;
	int64_t offset, size, stride;
};

/* _mlir_ciface_<entry> of every phase: the arguments of llm_phase_args
 * (phase.h), in its order. */
typedef void llm_phase_fn(struct llm_memref1 *weights, struct llm_memref1 *kv, struct llm_memref1 *tokens, int64_t pos,
    int64_t n_tokens, struct llm_memref1 *logits);

struct llm_runtime_opts {
	int threads;   /* OpenMP threads; 0: the OpenMP default */
	int verbose;   /* each phase call on stderr */
	int prefault;  /* map the weights' pages in a background thread */
	int *refused;  /* not NULL: set to 1 when open fails because this CPU cannot run the bundle's target */
	int *mpi_rank; /* not NULL: set to this process's MPI rank once a tensor-parallel model has started MPI
	                * (its errors after that are every rank's: rank 0 says them) */
};

/* Opaque: read through the accessors below (an embedding program needs
 * nothing else). */
struct llm_runtime;

/* The runtime of a bundle or build directory, or NULL with llm_errmsg
 * naming the file at fault. */
struct llm_runtime *llm_runtime_open(const char *path, const struct llm_runtime_opts *o);
/* Frees it (NULL: nothing). */
void llm_runtime_close(struct llm_runtime *rt);

/* The manifest, the bundle (its members: tokenizer files, target.json)
 * and the library's plan fingerprint. */
const struct llm_model *llm_runtime_model(const struct llm_runtime *rt);
const struct llm_bundle *llm_runtime_bundle(const struct llm_runtime *rt);
uint64_t llm_runtime_fingerprint(const struct llm_runtime *rt);
int64_t llm_runtime_vocab(const struct llm_runtime *rt);
/* target.json's CPU name, or NULL for a bundle without one. */
const char *llm_runtime_target_cpu(const struct llm_runtime *rt);
/* OpenMP threads for the phases the calling thread runs from now on. */
void llm_runtime_set_threads(struct llm_runtime *rt, int threads);

/* A sequence's state on a runtime: its KV cache, its position and its
 * last logits; the runtime has none of its own.  The phases read the
 * runtime and write only their context, so several contexts of one
 * runtime run in different threads at once (each context in one thread at
 * a time; the runtime outlives them).  Errors (llm_errmsg) are per
 * thread. */
struct llm_ctx;
/* A context of n positions (0: LLM_DEFAULT_CONTEXT, or the build's
 * max_context if smaller), or NULL with llm_errmsg; for a model split over
 * ranks, NULL while another context of rt lives. */
struct llm_ctx *llm_ctx_new(const struct llm_runtime *rt, int64_t n);
void llm_ctx_free(struct llm_ctx *c);
/* Positions c may hold: what its KV cache was allocated for. */
int64_t llm_ctx_context(const struct llm_ctx *c);
/* A new KV cache for n positions (1 <= n <= the build's max_context), in
 * place of the old; the context is forgotten (position 0).  -1 with
 * llm_errmsg otherwise, the old cache kept. */
int llm_ctx_set_context(struct llm_ctx *c, int64_t n);
/* Positions filled. */
int64_t llm_ctx_pos(const struct llm_ctx *c);
/* The logits of the last token of the last prefill or decode
 * (llm_runtime_vocab of them). */
const float *llm_ctx_logits(const struct llm_ctx *c);
/* Append n prompt tokens after those of the context: prefill for a
 * chunk at position 0, prefill_kv for chunks after it, each of at most its
 * phase's tokens; llm_ctx_logits are then the last token's.  -1 with
 * llm_errmsg for an id outside the vocabulary or a context overflow. */
int llm_ctx_prefill(struct llm_ctx *c, const int64_t *tokens, int64_t n);
/* Append one token through decode (prefill at position 0). */
int llm_ctx_decode(struct llm_ctx *c, int64_t token);
/* Forget the context: the next prefill starts at position 0.  The cache
 * is not cleared: attention reads [0, pos + n_tokens) only. */
void llm_ctx_reset(struct llm_ctx *c);
/* Back to position pos (0 <= pos <= llm_ctx_pos), or -1 with
 * llm_errmsg. */
int llm_ctx_rewind(struct llm_ctx *c, int64_t pos);
/* Append n tokens through embed (phase.h), a chunk of at most its
 * tokens a call, as llm_ctx_prefill does: after each chunk of k
 * tokens, rows(arg, hidden, k) with their hidden states after the final
 * norm (k rows of llm_runtime_hidden_size floats, live during the call).
 * The logits are not computed (llm_ctx_logits keeps the last ones).  -1
 * with llm_errmsg for a model without the phase (built before it), an id
 * outside the vocabulary or a context overflow. */
int llm_ctx_embed(struct llm_ctx *c, const int64_t *tokens, int64_t n,
    void (*rows)(void *arg, const float *hidden, int64_t k), void *arg);
/* The hidden size (the rows llm_ctx_embed gives), and whether the library
 * has phase ph (an index of phase.h; the optional ones may be missing). */
int64_t llm_runtime_hidden_size(const struct llm_runtime *rt);
int llm_runtime_has_phase(const struct llm_runtime *rt, int ph);
/* The KV entries of positions [0, llm_ctx_pos) to f, in a form that does
 * not depend on the context's size (per layer, keys then values, per KV
 * head: the keys' head_dim runs of pos elements, the values' pos rows of
 * head_dim); -1 on a write error (errno).  And back into c: pos
 * positions of that form from f, and the logits (vocab floats) of the
 * last token.  -1 with llm_errmsg for pos past c's context or a short
 * file (c's state then undefined: rewind it to 0). */
int llm_ctx_write_kv(const struct llm_ctx *c, FILE *f);
int llm_ctx_read_kv(struct llm_ctx *c, int64_t pos, const float *logits, FILE *f);

/* Split over ranks (limits.tp or limits.pp > 1, run under mpirun -np
 * ranks): open starts MPI.  Rank 0 is the one the program drives: each
 * phase call it makes on its context is told to the others first.  The
 * others call llm_runtime_follow, which makes the same calls on a context
 * of their own, on their part of the weights, and returns 0 when rank 0
 * closes its runtime (-1 with llm_errmsg on a call it cannot make).  One
 * context at a time (llm_ctx_new).  A model of one process is rank 0. */
int llm_runtime_rank(const struct llm_runtime *rt);
int llm_runtime_follow(struct llm_runtime *rt);

/* Index of the largest element (the first on ties; NaN never wins). */
int64_t llm_argmax(const float *x, int64_t n);

#endif
