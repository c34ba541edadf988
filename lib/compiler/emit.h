/* emit.h: the MLIR of a phase (prefill, prefill_kv, decode) for a model
 * described by model.json.  See share/doc/llm/ir.txt for the contract. */
#ifndef LLM_EMIT_H
#define LLM_EMIT_H

#include "../formats/model.h"
#include "../base/util.h"

/* Append the module text of phase ph to b.  0, or -1 with llm_errmsg. */
int llm_emit_phase(struct llm_buf *b, const struct llm_model *m, const struct llm_phase *ph);

#endif
