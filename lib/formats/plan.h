/* plan.h: the weight plan, model.json's "weights" (formats.txt): which
 * tensors weights.bin holds, each from which checkpoint tensor (or
 * computed), by which transform, in which dtype and layout, at which
 * offset.  llm-import builds it from a config and a source's tensor list;
 * llm-pack-weights checks it against the source files before it writes a
 * byte. */
#ifndef LLM_PLAN_H
#define LLM_PLAN_H

#include <stdint.h>

#include "../base/dtype.h"
#include "hfconfig.h"
#include "model.h"
#include "source.h"

/* How the plan stores the weights (llm-import's --dtype). */
struct llm_plan_opts {
	enum llm_dtype wdt; /* the matrices' and the embedding's dtype */
	int keep_quant;     /* --dtype auto: block-quantized matrices keep
	                     * their blocks (tiled when the shape allows) */
	int mix;            /* a --dtype mix (qmix.h) float matrices are
	                     * quantized to, else -1 */
	int64_t max_ctx;    /* the rows of the RoPE tables */
};

/* m's plan (m->tensors, ntensors, data_bytes) for config c and the
 * tensors of source src, m's cfg, tp, pp and act_q8 being set; dir names
 * the source in messages.  Every tensor of a GGUF source must have its
 * place in the plan.  0, or -1 with llm_errmsg set and no plan. */
int llm_plan_build(struct llm_model *m, const struct llm_hfconfig *c, const struct llm_source *src, const char *dir,
    const struct llm_plan_opts *o);
/* Free a plan llm_plan_build made (its names, sources and layouts). */
void llm_plan_free(struct llm_model *m);

/* What llm_plan_check found of each plan tensor (arrays of m->ntensors). */
struct llm_plan_sources {
	const struct llm_source_tensor **src; /* its source tensor; NULL: computed */
	int64_t *heads;                       /* unpermute_qk or rotary_halves: the
	                                       * heads of its rows, else 0 */
	unsigned char *rotary;                /* 1 for rotary_halves */
	int *qtype;                           /* the block type of its values (the
	                                       * source's, or the one a float source
	                                       * is quantized to), else -1 */
};
/* Check every tensor of m's plan against source s (the files model.json
 * names): transforms, shapes, the rows and columns a part takes, block
 * types and layouts.  0 with ps filled, or -1 with llm_errmsg set. */
int llm_plan_check(const struct llm_model *m, const struct llm_source *s, struct llm_plan_sources *ps);
void llm_plan_sources_free(struct llm_plan_sources *ps);

#endif
