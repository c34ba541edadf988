/* family.c: the family specs.  Qwen2 and Llama share the Hugging Face
 * tensor names and the GGUF ones; they differ in the q/k/v biases (always
 * present in Qwen2, config attention_bias in Llama) and in the GGUF row
 * order of q and k (permuted in Llama files only). */
#include <stddef.h>
#include <string.h>

#include "family.h"

#define HF_NAMES { \
	[LLM_ROLE_EMBED] = "model.embed_tokens.weight", \
	[LLM_ROLE_ATTN_NORM] = "model.layers.%d.input_layernorm.weight", \
	[LLM_ROLE_WQ] = "model.layers.%d.self_attn.q_proj.weight", \
	[LLM_ROLE_WK] = "model.layers.%d.self_attn.k_proj.weight", \
	[LLM_ROLE_WV] = "model.layers.%d.self_attn.v_proj.weight", \
	[LLM_ROLE_BQ] = "model.layers.%d.self_attn.q_proj.bias", \
	[LLM_ROLE_BK] = "model.layers.%d.self_attn.k_proj.bias", \
	[LLM_ROLE_BV] = "model.layers.%d.self_attn.v_proj.bias", \
	[LLM_ROLE_WO] = "model.layers.%d.self_attn.o_proj.weight", \
	[LLM_ROLE_FFN_NORM] = "model.layers.%d.post_attention_layernorm.weight", \
	[LLM_ROLE_WGATE] = "model.layers.%d.mlp.gate_proj.weight", \
	[LLM_ROLE_WUP] = "model.layers.%d.mlp.up_proj.weight", \
	[LLM_ROLE_WDOWN] = "model.layers.%d.mlp.down_proj.weight", \
	[LLM_ROLE_FINAL_NORM] = "model.norm.weight", \
	[LLM_ROLE_LM_HEAD] = "lm_head.weight", \
}

/* llama.cpp's tensor names (gguf-py constants.py, MODEL_TENSOR). */
#define GGUF_NAMES { \
	[LLM_ROLE_EMBED] = "token_embd.weight", \
	[LLM_ROLE_ATTN_NORM] = "blk.%d.attn_norm.weight", \
	[LLM_ROLE_WQ] = "blk.%d.attn_q.weight", \
	[LLM_ROLE_WK] = "blk.%d.attn_k.weight", \
	[LLM_ROLE_WV] = "blk.%d.attn_v.weight", \
	[LLM_ROLE_BQ] = "blk.%d.attn_q.bias", \
	[LLM_ROLE_BK] = "blk.%d.attn_k.bias", \
	[LLM_ROLE_BV] = "blk.%d.attn_v.bias", \
	[LLM_ROLE_WO] = "blk.%d.attn_output.weight", \
	[LLM_ROLE_FFN_NORM] = "blk.%d.ffn_norm.weight", \
	[LLM_ROLE_WGATE] = "blk.%d.ffn_gate.weight", \
	[LLM_ROLE_WUP] = "blk.%d.ffn_up.weight", \
	[LLM_ROLE_WDOWN] = "blk.%d.ffn_down.weight", \
	[LLM_ROLE_FINAL_NORM] = "output_norm.weight", \
	[LLM_ROLE_LM_HEAD] = "output.weight", \
}

#define RUNTIME_NAMES { \
	[LLM_ROLE_EMBED] = "embed", \
	[LLM_ROLE_ATTN_NORM] = "layers.%d.attn_norm", \
	[LLM_ROLE_WQ] = "layers.%d.wq", \
	[LLM_ROLE_WK] = "layers.%d.wk", \
	[LLM_ROLE_WV] = "layers.%d.wv", \
	[LLM_ROLE_BQ] = "layers.%d.bq", \
	[LLM_ROLE_BK] = "layers.%d.bk", \
	[LLM_ROLE_BV] = "layers.%d.bv", \
	[LLM_ROLE_WO] = "layers.%d.wo", \
	[LLM_ROLE_FFN_NORM] = "layers.%d.ffn_norm", \
	[LLM_ROLE_WGATE] = "layers.%d.wgate", \
	[LLM_ROLE_WUP] = "layers.%d.wup", \
	[LLM_ROLE_WDOWN] = "layers.%d.wdown", \
	[LLM_ROLE_FINAL_NORM] = "final_norm", \
	[LLM_ROLE_LM_HEAD] = "lm_head", \
}

static const struct llm_family_spec specs[] = {
	{"qwen2", {"Qwen2ForCausalLM"}, 1, RUNTIME_NAMES, HF_NAMES, GGUF_NAMES, 0},
	{"llama", {"LlamaForCausalLM"}, 0, RUNTIME_NAMES, HF_NAMES, GGUF_NAMES, 1},
};

const struct llm_family_spec *
llm_family_spec(enum llm_family f)
{
	switch (f) {
	case LLM_FAMILY_QWEN2: return &specs[0];
	case LLM_FAMILY_LLAMA: return &specs[1];
	default: return NULL;
	}
}

enum llm_family
llm_family_by_name(const char *name)
{
	static const enum llm_family fam[] = {LLM_FAMILY_QWEN2, LLM_FAMILY_LLAMA};
	for (size_t i = 0; i < sizeof(fam) / sizeof(fam[0]); i++)
		if (strcmp(llm_family_spec(fam[i])->name, name) == 0)
			return fam[i];
	return LLM_FAMILY_NONE;
}
