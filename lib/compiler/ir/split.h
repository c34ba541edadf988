/* split.h: cut the phase functions of a model into partitions, the work
 * of llm-split (see man/llm-split.1 and share/doc/llm/formats.txt,
 * "partition.json").
 *
 * Each phase function (straight-line, one block; see
 * share/doc/llm/ir.txt) is cut into runs of equal llm.layer, or of equal
 * (llm.layer, llm.stage), or not at all.  Every value that crosses a cut
 * becomes an argument or a result of the partition's function; constants
 * on an allowlist are copied instead; memref.view ops of the weights and
 * the KV cache stay in the glue, so that the decoder layers differ only
 * in the views they receive and share one kernel.  Structurally equal
 * partitions of the same kind share one kernel, across phases too. */
#ifndef LLM_SPLIT_H
#define LLM_SPLIT_H

#include <stddef.h>

#include "../../formats/model.h"

enum llm_split_strategy {
	LLM_SPLIT_NONE,  /* one partition per phase */
	LLM_SPLIT_LAYER, /* runs of equal llm.layer */
	LLM_SPLIT_STAGE, /* runs of equal (llm.layer, llm.stage) */
};

struct llm_split_opts {
	enum llm_split_strategy strategy;
	const char *partsdir; /* output directory, created if needed */
	int verbose;          /* timings on stderr */
};

struct llm_split_phase_stats {
	const char *name; /* borrowed from the model */
	size_t partitions, kernels, ops;
};

struct llm_split_stats {
	int nphases;
	struct llm_split_phase_stats phase[LLM_MAX_PHASES];
	size_t partitions; /* over all phases */
	size_t kernels;    /* distinct kernels over all phases */
	size_t written;    /* files written (the others were unchanged) */
};

/* Name of a strategy, and back (-1 for an unknown name). */
const char *llm_split_strategy_name(enum llm_split_strategy s);
int llm_split_strategy_parse(const char *name, enum llm_split_strategy *out);

/* Splits every phase of m and writes partsdir: partition.json, parts.mk,
 * <kind>/k<hash>.mlir per kernel and <phase>/glue.mlir per phase.  Files
 * whose content is unchanged are not rewritten (make sees no change), and
 * kernels of an earlier split that are no longer used are removed.
 * Nothing is written unless every phase was split and every module
 * verified.  0, or -1 with llm_errmsg naming the file at fault. */
int llm_split(const struct llm_model *m, const struct llm_split_opts *o, struct llm_split_stats *st);

#endif
