/* phase.h: the phases of a compiled model and their ABI, in one place.
 *
 * llm-import writes the table into model.json ("phases", with each
 * phase's argument list) and emits one MLIR function per phase; llm-lower
 * and llm-split take a module's pass list from its phase's kind; llm-run
 * calls the phases through the argument list below (its C type,
 * llm_phase_fn in runtime.h, spells the same list). */
#ifndef LLM_PHASE_H
#define LLM_PHASE_H

#include <stddef.h>
#include <stdint.h>

/* Indices into llm_phase_specs, in model.json order (a phase added
 * later goes at the end, optional, so that older builds still load). */
enum { LLM_PH_PREFILL, LLM_PH_PREFILL_KV, LLM_PH_DECODE, LLM_PH_EMBED, LLM_PH_COUNT };

/* What a phase writes into its last argument (%logits). */
enum llm_phase_out {
	LLM_OUT_LOGITS, /* vocab_size floats: the last row's logits */
	LLM_OUT_HIDDEN, /* tokens * hidden_size floats: each row's hidden state after the final norm
	                 * (the head's input), n_tokens of them, row-major */
};

struct llm_phase_spec {
	const char *name;  /* model.json phases[].name; the MLIR is <name>.mlir */
	const char *entry; /* the function's symbol (_mlir_ciface_<entry> in the library) */
	const char *kind;  /* the pass list (share/llm/pipelines/<kind>.txt) */
	int single;        /* takes one token a call; else limits.prefill_chunk */
	int optional;      /* a model may lack it: built before it existed (prefill_kv: llm-run then
	                    * prefills at position 0 only; embed: no embeddings) */
	int out;           /* enum llm_phase_out */
};

extern const struct llm_phase_spec llm_phase_specs[LLM_PH_COUNT];

/* The arguments of every phase's function, in order: name (model.json
 * args[].name), MLIR type, and the name of the SSA argument in the
 * emitted function. */
struct llm_phase_arg {
	const char *name, *type, *ssa;
};

#define LLM_PHASE_NARGS 6
extern const struct llm_phase_arg llm_phase_args[LLM_PHASE_NARGS];

/* The spec of the phase called name, or NULL. */
const struct llm_phase_spec *llm_phase_spec_by_name(const char *name);
/* Rows a call of phase s takes for a prefill chunk of chunk tokens. */
int64_t llm_phase_tokens(const struct llm_phase_spec *s, int64_t chunk);
/* Floats of its output (%logits) for calls of up to tokens rows. */
int64_t llm_phase_out_floats(const struct llm_phase_spec *s, int64_t tokens, int64_t vocab, int64_t hidden);

/* The pipeline kind of a module called kind: a phase's kind for a phase
 * name ("prefill_kv" -> "prefill"), else kind itself ("glue"); -1 with
 * llm_errmsg when the name is not a plain word. */
int llm_phase_kind(const char *kind, char *buf, size_t n);

/* The format of a partition set (parts/partition.json: formats.txt),
 * which llm-split writes and llm-verify-partition and llm-link read. */
#define LLM_PARTITION_FORMAT "llm-partition/1"

#endif
