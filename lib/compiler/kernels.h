/* kernels.h: the kernels a phase's module calls and declares without a
 * body (ir.txt "Kernels"), one table for both ends: the emitter writes the
 * declarations of those it called (emit.c), llm-lower recognises them by
 * their family and puts in the family's form for the target (lower.c,
 * share/llm/kernels/<form>.mlir). */
#ifndef LLM_KERNELS_H
#define LLM_KERNELS_H

#include "../formats/target.h"

/* The families, in the order llm-lower puts their forms in. */
enum llm_kernel_family {
	LLM_KFAMILY_QDOT, /* the int8 dot products */
	LLM_KFAMILY_BDOT, /* the bf16 one */
	LLM_KFAMILY_TILE, /* the tile products, int8 and bf16 */
	LLM_NKFAMILY
};

/* The kernels, in the order the emitter declares them. */
enum llm_kernel {
	LLM_KERNEL_QDOT_I8,
	LLM_KERNEL_QDOT_U7,
	LLM_KERNEL_QTILE_I8,
	LLM_KERNEL_QTILE_BF16,
	LLM_KERNEL_BDOT,
	LLM_NKERNEL
};

struct llm_kernel_family_info {
	const char *decl;                               /* what a declaration's line starts with */
	const char *(*form)(const struct llm_target *); /* the target's form (target.h) */
};

struct llm_kernel_info {
	const char *name;              /* the symbol */
	const char *type;              /* "(arguments) -> result", as llvm.func writes it */
	enum llm_kernel_family family; /* its decl is a prefix of the declaration */
};

extern const struct llm_kernel_family_info llm_kernel_families[LLM_NKFAMILY];
extern const struct llm_kernel_info llm_kernels[LLM_NKERNEL];

#endif
