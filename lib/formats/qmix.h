/* qmix.h: llama-quantize's file types ("mixes": Q4_K_M, Q8_0, ...) and its
 * rules for which block type each matrix of a mix gets, for llm-import
 * --dtype q4_k_m etc.  The rules are llama.cpp's llama_tensor_get_type
 * (src/llama-quant.cpp) for the tensors llm has, without an importance
 * matrix, as this table (L layers, layer i; "more bits": i < L/8 or
 * i >= 7L/8 or (i - L/8) % 3 == 2):
 *
 *	mix      base  lm_head (and a tied embedding)  v_proj           down_proj
 *	q8_0     Q8_0  Q8_0                            Q8_0             Q8_0
 *	q4_0     Q4_0  Q6_K                            Q4_0             Q4_0
 *	q4_1     Q4_1  Q6_K                            Q4_1             Q4_1
 *	q5_0     Q5_0  Q6_K                            Q5_0             Q5_0
 *	q5_1     Q5_1  Q6_K                            Q5_1             Q5_1
 *	q4_k_s   Q4_K  Q6_K                            Q5_K if i < 4    Q5_K if i < L/8
 *	q4_k_m   Q4_K  Q6_K                            Q6_K, more bits  Q6_K, more bits
 *	q5_k_s   Q5_K  Q6_K                            Q5_K             Q5_K
 *	q5_k_m   Q5_K  Q6_K                            Q6_K, more bits  Q6_K, more bits
 *	q6_k     Q6_K  Q6_K                            Q6_K             Q6_K
 *
 * Every other matrix (the embedding when not tied, q, k, o, gate, up)
 * takes the base type; the parts of a fused qkv matrix (phi3) take
 * v_proj's (llama-quantize counts attn_qkv as an attn_v).  The head takes Q8_0 when its rows are not whole
 * blocks of the base type; a Llama with 80 layers (llama.cpp's "70B")
 * gets Q5_K for a Q4_K v_proj.  Last, a matrix whose rows are not whole
 * blocks of its type falls back: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K ->
 * Q8_0, and to F16 when the rows are not whole blocks of 32 either.
 * Norms and biases are never quantized. */
#ifndef LLM_QMIX_H
#define LLM_QMIX_H

#include <stdint.h>

#include "family.h"

enum {
	LLM_QMIX_Q8_0,
	LLM_QMIX_Q4_0,
	LLM_QMIX_Q4_1,
	LLM_QMIX_Q5_0,
	LLM_QMIX_Q5_1,
	LLM_QMIX_Q4_K_S,
	LLM_QMIX_Q4_K_M,
	LLM_QMIX_Q5_K_S,
	LLM_QMIX_Q5_K_M,
	LLM_QMIX_Q6_K,
	LLM_QMIX_COUNT
};

/* The mix called s ("q4_k_m", case ignored), or -1. */
int llm_qmix_parse(const char *s);
const char *llm_qmix_name(int mix);
/* The mix's llama_ftype (general.file_type: Q4_K_M is 15). */
uint32_t llm_qmix_ftype(int mix);
/* llama.cpp's name of the mix's file type ("Q4_K - Medium"), as
 * llama_model_ftype_name gives it. */
const char *llm_qmix_label(int mix);
/* llama.cpp's name of general.file_type ftype (llama_ftype), or NULL for
 * one of no quantized type (all F32, F16, BF16) or unknown. */
const char *llm_ftype_label(uint32_t ftype);
/* "q8_0, q4_0, ...", for messages. */
const char *llm_qmix_names(void);

/* A matrix of the model: its role (the embedding, a projection or the
 * head), layer, its row length; and the model: its family, number of
 * layers and of query and kv heads, whether the embedding is tied to the
 * head. */
struct llm_qmix_tensor {
	enum llm_role role;
	int layer;
	int64_t cols;
	enum llm_family family;
	int n_layers;
	int64_t n_heads, n_kv_heads;
	int tied;
	int qkv; /* q, k or v as a part of one fused matrix (phi3's
	          * attn_qkv): llama-quantize types the whole as an attn_v */
};

/* Whether llama-quantize quantizes a tensor of that name and number of
 * dimensions (tensor_allows_quantization, with its default parameters):
 * a matrix whose name ends in "weight", but norms, MoE gates and the
 * small tensors of other architectures llama.cpp names. */
int llm_qmix_quantizes(const char *name, int n_dims);

/* The ggml type (enum llm_ggml_type: a block type, or LLM_GGML_F16) that
 * the mix gives the matrix. */
uint32_t llm_qmix_type(int mix, const struct llm_qmix_tensor *t);

#endif
