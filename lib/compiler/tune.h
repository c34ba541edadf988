/* tune.h: kernel parameters measured per CPU, as data.
 *
 * The numbers a kernel was tuned with on one CPU (how far ahead decode
 * prefetches the weights, ...) are not written into the generated code by
 * llm-import.  The code names them: a tunable constant is an index
 * constant with the attribute llm.tune,
 *
 *   %d = arith.constant {llm.tune = "NAME", llm.tune_unit = U : i64} 0 : index
 *
 * and llm-lower sets its value from the tuning table
 * (share/llm/tuning.json, llm-lower --tuning): the value of NAME in the
 * entry of the target's CPU (llc's name: "znver5", "sapphirerapids"),
 * else of "generic", divided by U (a parameter in bytes taken in units
 * of U bytes, rounded down).  The table (format "llm-tuning/1"):
 *
 *   {"format": "llm-tuning/1",
 *    "cpus": {"generic": {"params": {NAME: value, ...}},
 *             "znver5": {"measured": "how and where", "params": {...}}}}
 *
 * Every entry gives every parameter of llm_tune_params (generic) or some
 * of them (a CPU's; the rest are generic's).  llm-tune measures an entry
 * for the machine at hand. */
#ifndef LLM_TUNE_H
#define LLM_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/util.h"

#define LLM_TUNE_FORMAT "llm-tuning/1"
#define LLM_TUNE_FILE "tuning.json"

/* The parameters: name and the range a value may take. */
struct llm_tune_param {
	const char *name;
	int64_t min, max;
};
extern const struct llm_tune_param llm_tune_params[];
extern const size_t llm_tune_nparams;

/* The values for one CPU. */
struct llm_tune {
	char *entry;     /* the entry used: the CPU's name, or "generic" */
	int64_t *values; /* llm_tune_nparams of them */
};

/* Load the table at path and resolve cpu's values (cpu NULL: generic's).
 * 0, or -1 with llm_errmsg "PATH: ..." (a bad format, an unknown or
 * missing parameter, a value out of range). */
int llm_tune_load(const char *path, const char *cpu, struct llm_tune *t);
void llm_tune_free(struct llm_tune *t);

/* Set the values the table leaves to the target (-1) from tg's
 * features: prefill.int8_tiles and prefill.bf16_tiles are 1 where the
 * tile kernels are AMX's, prefill.three_rows where the target has 32
 * vector registers. */
struct llm_target;
void llm_tune_settle(struct llm_tune *t, const struct llm_target *tg);

/* The values as "NAME=V NAME=V", a new string. */
char *llm_tune_describe(const struct llm_tune *t);

/* Copy text to out with every tunable constant set from t; *n counts
 * them.  0, or -1 with llm_errmsg "LABEL: ..." for a malformed one or an
 * unknown name. */
int llm_tune_apply(const struct llm_tune *t, const char *text, size_t len, struct llm_buf *out, size_t *n,
    const char *label);

#endif
