/* family.h: what differs between the supported model families, in one
 * place: where each runtime tensor comes from in a checkpoint, a Hugging
 * Face one or a GGUF file.  Everything else (sizes, biases, tying, RoPE
 * base) comes from the config (config.json or the GGUF metadata). */
#ifndef LLM_FAMILY_H
#define LLM_FAMILY_H

#include "hfconfig.h"

/* Runtime tensor roles, in weights.bin order within a layer. */
enum llm_role {
	LLM_ROLE_EMBED,
	LLM_ROLE_ATTN_NORM,
	LLM_ROLE_WQ,
	LLM_ROLE_WK,
	LLM_ROLE_WV,
	LLM_ROLE_BQ,
	LLM_ROLE_BK,
	LLM_ROLE_BV,
	LLM_ROLE_WO,
	LLM_ROLE_FFN_NORM,
	LLM_ROLE_WGATE,
	LLM_ROLE_WUP,
	LLM_ROLE_WDOWN,
	LLM_ROLE_FINAL_NORM,
	LLM_ROLE_LM_HEAD,
	LLM_ROLE_COUNT
};

struct llm_family_spec {
	const char *name;                       /* "qwen2"; also GGUF's general.architecture */
	const char *architectures[4];           /* config.json architectures[0] */
	int qkv_bias;                           /* always has q/k/v biases */
	/* Runtime name and checkpoint names per role; "%d" is the layer. */
	const char *runtime[LLM_ROLE_COUNT];
	const char *hf[LLM_ROLE_COUNT];
	const char *gguf[LLM_ROLE_COUNT];       /* llama.cpp's names */
	/* GGUF stores the q and k projections (and biases) with the rows of
	 * each head permuted for llama.cpp's RoPE (llama only): the plan
	 * undoes it with the transform "unpermute_qk". */
	int gguf_permuted_qk;
};

const struct llm_family_spec *llm_family_spec(enum llm_family f);
/* The family whose spec is called name ("llama", "qwen2"), or
 * LLM_FAMILY_NONE. */
enum llm_family llm_family_by_name(const char *name);

#endif
