/* family.c: the family specs.  Qwen2, Llama, Qwen3, Mistral and Phi-3
 * share the Hugging Face tensor names and the GGUF ones, but for Phi-3's
 * fused projections (qkv_proj, gate_up_proj: roles that name one tensor
 * split its rows in role order); they differ in the q/k/v biases (always
 * present in Qwen2, config attention_bias in the others), in Qwen3's
 * per-head norms of q and k, in the config's defaults and switches
 * (Qwen2's sliding window, refused; Mistral's and Phi-3's, on every layer;
 * Llama's mlp_bias) and in the GGUF row order of q and k (permuted in
 * Llama files). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "family.h"

/* q, k, v, gate, up: the names of the projections under a layer;
 * ffn_norm the MLP's input norm's (Gemma 3 names its attention's output
 * norm post_attention_layernorm, which is that of the others) */
#define HF_NAMES_OF(q, k, v, gate, up, ffn_norm) { \
	[LLM_ROLE_EMBED] = "model.embed_tokens.weight", \
	[LLM_ROLE_ATTN_NORM] = "model.layers.%d.input_layernorm.weight", \
	[LLM_ROLE_WQ] = "model.layers.%d." q ".weight", \
	[LLM_ROLE_WK] = "model.layers.%d." k ".weight", \
	[LLM_ROLE_WV] = "model.layers.%d." v ".weight", \
	[LLM_ROLE_BQ] = "model.layers.%d." q ".bias", \
	[LLM_ROLE_BK] = "model.layers.%d." k ".bias", \
	[LLM_ROLE_BV] = "model.layers.%d." v ".bias", \
	[LLM_ROLE_QNORM] = "model.layers.%d.self_attn.q_norm.weight", \
	[LLM_ROLE_KNORM] = "model.layers.%d.self_attn.k_norm.weight", \
	[LLM_ROLE_WO] = "model.layers.%d.self_attn.o_proj.weight", \
	[LLM_ROLE_ATTN_POST_NORM] = "model.layers.%d.post_attention_layernorm.weight", \
	[LLM_ROLE_FFN_NORM] = "model.layers.%d." ffn_norm ".weight", \
	[LLM_ROLE_WGATE] = "model.layers.%d." gate ".weight", \
	[LLM_ROLE_WUP] = "model.layers.%d." up ".weight", \
	[LLM_ROLE_WDOWN] = "model.layers.%d.mlp.down_proj.weight", \
	[LLM_ROLE_FFN_POST_NORM] = "model.layers.%d.post_feedforward_layernorm.weight", \
	[LLM_ROLE_FINAL_NORM] = "model.norm.weight", \
	[LLM_ROLE_LM_HEAD] = "lm_head.weight", \
}
#define HF_NAMES \
	HF_NAMES_OF("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj", "mlp.up_proj", \
	    "post_attention_layernorm")

/* llama.cpp's tensor names (gguf-py constants.py, MODEL_TENSOR). */
#define GGUF_NAMES_OF(q, k, v, gate, up) { \
	[LLM_ROLE_EMBED] = "token_embd.weight", \
	[LLM_ROLE_ATTN_NORM] = "blk.%d.attn_norm.weight", \
	[LLM_ROLE_WQ] = "blk.%d." q ".weight", \
	[LLM_ROLE_WK] = "blk.%d." k ".weight", \
	[LLM_ROLE_WV] = "blk.%d." v ".weight", \
	[LLM_ROLE_BQ] = "blk.%d." q ".bias", \
	[LLM_ROLE_BK] = "blk.%d." k ".bias", \
	[LLM_ROLE_BV] = "blk.%d." v ".bias", \
	[LLM_ROLE_QNORM] = "blk.%d.attn_q_norm.weight", \
	[LLM_ROLE_KNORM] = "blk.%d.attn_k_norm.weight", \
	[LLM_ROLE_WO] = "blk.%d.attn_output.weight", \
	[LLM_ROLE_ATTN_POST_NORM] = "blk.%d.post_attention_norm.weight", \
	[LLM_ROLE_FFN_NORM] = "blk.%d.ffn_norm.weight", \
	[LLM_ROLE_WGATE] = "blk.%d." gate ".weight", \
	[LLM_ROLE_WUP] = "blk.%d." up ".weight", \
	[LLM_ROLE_WDOWN] = "blk.%d.ffn_down.weight", \
	[LLM_ROLE_FFN_POST_NORM] = "blk.%d.post_ffw_norm.weight", \
	[LLM_ROLE_FINAL_NORM] = "output_norm.weight", \
	[LLM_ROLE_LM_HEAD] = "output.weight", \
}
#define GGUF_NAMES GGUF_NAMES_OF("attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up")

/* The plan's names (model.json weights.tensors[].name): the same in every
 * family; llm-import writes them, emit.c reads them. */
/* one role a line: plan name, rows, columns, present when, norm, rotary, heads,
 * tensor-parallel split (struct llm_role_info, family.h) */
/* clang-format off */
#define R(x) LLM_ROLE_##x
#define D(x) LLM_DIM_##x
#define W(x) LLM_WHEN_##x
#define H(x) LLM_HEADS_##x
#define S(x) LLM_TP_##x
static const struct llm_role_info roles[LLM_ROLE_COUNT] = {
	[R(EMBED)]          = {"embed",                    D(VOCAB),  D(HIDDEN), W(ALWAYS),     0, 0, H(NONE), S(NONE)},
	[R(ATTN_NORM)]      = {"layers.%d.attn_norm",      D(HIDDEN), D(NONE),   W(ALWAYS),     1, 0, H(NONE), S(NONE)},
	[R(WQ)]             = {"layers.%d.wq",             D(Q),      D(HIDDEN), W(ALWAYS),     0, 1, H(Q),    S(ROWS)},
	[R(WK)]             = {"layers.%d.wk",             D(KV),     D(HIDDEN), W(ALWAYS),     0, 1, H(KV),   S(ROWS)},
	[R(WV)]             = {"layers.%d.wv",             D(KV),     D(HIDDEN), W(ALWAYS),     0, 0, H(KV),   S(ROWS)},
	[R(BQ)]             = {"layers.%d.bq",             D(Q),      D(NONE),   W(BIAS),       0, 1, H(Q),    S(ROWS)},
	[R(BK)]             = {"layers.%d.bk",             D(KV),     D(NONE),   W(BIAS),       0, 1, H(KV),   S(ROWS)},
	[R(BV)]             = {"layers.%d.bv",             D(KV),     D(NONE),   W(BIAS),       0, 0, H(KV),   S(ROWS)},
	[R(QNORM)]          = {"layers.%d.q_norm",         D(HEAD),   D(NONE),   W(QK_NORM),    1, 1, H(ONE),  S(NONE)},
	[R(KNORM)]          = {"layers.%d.k_norm",         D(HEAD),   D(NONE),   W(QK_NORM),    1, 1, H(ONE),  S(NONE)},
	[R(WO)]             = {"layers.%d.wo",             D(HIDDEN), D(Q),      W(ALWAYS),     0, 0, H(NONE), S(COLS)},
	[R(ATTN_POST_NORM)] = {"layers.%d.attn_post_norm", D(HIDDEN), D(NONE),   W(POSTNORMS), 1, 0, H(NONE), S(NONE)},
	[R(FFN_NORM)]       = {"layers.%d.ffn_norm",       D(HIDDEN), D(NONE),   W(ALWAYS),     1, 0, H(NONE), S(NONE)},
	[R(WGATE)]          = {"layers.%d.wgate",          D(FFN),    D(HIDDEN), W(ALWAYS),     0, 0, H(NONE), S(ROWS)},
	[R(WUP)]            = {"layers.%d.wup",            D(FFN),    D(HIDDEN), W(ALWAYS),     0, 0, H(NONE), S(ROWS)},
	[R(WDOWN)]          = {"layers.%d.wdown",          D(HIDDEN), D(FFN),    W(ALWAYS),     0, 0, H(NONE), S(COLS)},
	[R(FFN_POST_NORM)]  = {"layers.%d.ffn_post_norm",  D(HIDDEN), D(NONE),   W(POSTNORMS), 1, 0, H(NONE), S(NONE)},
	[R(FINAL_NORM)]     = {"final_norm",               D(HIDDEN), D(NONE),   W(ALWAYS),     1, 0, H(NONE), S(NONE)},
	[R(LM_HEAD)]        = {"lm_head",                  D(VOCAB),  D(HIDDEN), W(UNTIED),     0, 0, H(NONE), S(NONE)},
};
#undef R
#undef D
#undef W
#undef H
#undef S
/* clang-format on */

static const struct llm_family_spec specs[] = {
	{
		.family = LLM_FAMILY_QWEN2,
		.name = "qwen2",
		.architectures = {"Qwen2ForCausalLM"},
		.max_position_embeddings = 32768,
		.qkv_bias = 1,
		.window = LLM_WINDOW_REFUSED,
		.hf = HF_NAMES,
		.gguf = GGUF_NAMES,
		.gguf_permuted_qk = 0,
	},
	{
		.family = LLM_FAMILY_LLAMA,
		.name = "llama",
		.architectures = {"LlamaForCausalLM"},
		.max_position_embeddings = 2048,
		.qkv_bias = 0,
		.window = LLM_WINDOW_NONE,
		.hf = HF_NAMES,
		.gguf = GGUF_NAMES,
		.gguf_permuted_qk = 1,
	},
	{
		/* Qwen3Config: head_dim 128 by default, q_norm and k_norm */
		.family = LLM_FAMILY_QWEN3,
		.name = "qwen3",
		.architectures = {"Qwen3ForCausalLM"},
		.max_position_embeddings = 32768,
		.qkv_bias = 0,
		.window = LLM_WINDOW_REFUSED,
		.qk_norm = 1,
		.head_dim = 128,
		.hf = HF_NAMES,
		.gguf = GGUF_NAMES,
		.gguf_permuted_qk = 0,
	},
	{
		/* MistralConfig: Llama's layers; sliding_window (an int, or
		 * null) on every layer */
		.family = LLM_FAMILY_MISTRAL,
		.name = "mistral",
		.architectures = {"MistralForCausalLM"},
		.max_position_embeddings = 131072,
		.qkv_bias = 0,
		.window = LLM_WINDOW_ALL_LAYERS,
		.hf = HF_NAMES,
		.gguf = GGUF_NAMES,
		.gguf_permuted_qk = 1,
		.no_gguf_arch = 1,
	},
	{
		/* Phi3Config (Phi-3, Phi-3.5, Phi-4-mini): Llama's layers with
		 * q, k and v in one qkv_proj and gate and up in one
		 * gate_up_proj; partial_rotary_factor, longrope and
		 * sliding_window from the config */
		.family = LLM_FAMILY_PHI3,
		.name = "phi3",
		.architectures = {"Phi3ForCausalLM"},
		.max_position_embeddings = 4096,
		.qkv_bias = 0,
		.window = LLM_WINDOW_ALL_LAYERS,
		.hf = HF_NAMES_OF("self_attn.qkv_proj", "self_attn.qkv_proj", "self_attn.qkv_proj", "mlp.gate_up_proj",
		    "mlp.gate_up_proj", "post_attention_layernorm"),
		.gguf = GGUF_NAMES_OF("attn_qkv", "attn_qkv", "attn_qkv", "ffn_up", "ffn_up"),
		.gguf_permuted_qk = 0,
	},
	{
		/* Gemma3TextConfig (Gemma 3 1B; the text of the larger ones):
		 * four norms a layer, each scaling by 1 + w, q/k norms,
		 * GELU-tanh, the embedding times sqrt(hidden), sliding-window
		 * local layers with their own RoPE base, 1 global layer in
		 * sliding_window_pattern, query_pre_attn_scalar */
		.family = LLM_FAMILY_GEMMA3,
		.name = "gemma3",
		.model_type = "gemma3_text",
		.architectures = {"Gemma3ForCausalLM"},
		/* Gemma3TextConfig's (4B's text_config leaves out the sizes) */
		.defaults =
		    "{\"vocab_size\": 262208, \"hidden_size\": 2304, \"intermediate_size\": 9216,"
		    " \"num_hidden_layers\": 26, \"num_attention_heads\": 8, \"num_key_value_heads\": 4,"
		    " \"rope_theta\": 1000000, \"tie_word_embeddings\": true,"
		    " \"hidden_activation\": \"gelu_pytorch_tanh\", \"query_pre_attn_scalar\": 256,"
		    " \"sliding_window\": 4096, \"sliding_window_pattern\": 6, \"rope_local_base_freq\": 10000}",
		.wrapper_arch = "Gemma3ForConditionalGeneration",
		.wrapper_config = "text_config",
		.wrapper_prefix = "language_model.",
		.max_position_embeddings = 131072,
		.qkv_bias = 0,
		.window = LLM_WINDOW_LOCAL_LAYERS,
		.qk_norm = 1,
		.head_dim = 256,
		.post_norms = 1,
		.norm_plus_one = 1,
		.embed_scale = 1,
		.hf = HF_NAMES_OF("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj",
		    "mlp.up_proj", "pre_feedforward_layernorm"),
		.gguf = GGUF_NAMES,
		.gguf_permuted_qk = 0,
	},
};

const struct llm_family_spec *
llm_family_spec(enum llm_family f)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (specs[i].family == f)
			return &specs[i];
	return NULL;
}

enum llm_family
llm_family_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (strcmp(specs[i].name, name) == 0)
			return specs[i].family;
	return LLM_FAMILY_NONE;
}

const char *
llm_family_model_type(const struct llm_family_spec *fs)
{
	return fs->model_type ? fs->model_type : fs->name;
}

enum llm_family
llm_family_by_model_type(const char *mt)
{
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		if (strcmp(llm_family_model_type(&specs[i]), mt) == 0)
			return specs[i].family;
	return LLM_FAMILY_NONE;
}

const char *
llm_family_name(enum llm_family f)
{
	const struct llm_family_spec *fs = llm_family_spec(f);
	return fs ? fs->name : "";
}

const struct llm_role_info *
llm_role_info(enum llm_role r)
{
	return &roles[r];
}

const char *
llm_role_runtime(enum llm_role r)
{
	return roles[r].runtime;
}

int
llm_role_present(enum llm_role r, const struct llm_model_config *c)
{
	switch (roles[r].when) {
	case LLM_WHEN_BIAS:
		return c->attention_bias;
	case LLM_WHEN_UNTIED:
		return !c->tie_word_embeddings;
	case LLM_WHEN_QK_NORM:
		return c->qk_norm;
	case LLM_WHEN_POSTNORMS:
		return c->post_norms;
	case LLM_WHEN_ALWAYS:
		break;
	}
	return 1;
}

static int64_t
dim_of(enum llm_dim d, const struct llm_model_config *c)
{
	switch (d) {
	case LLM_DIM_VOCAB:
		return c->vocab_size;
	case LLM_DIM_HIDDEN:
		return c->hidden_size;
	case LLM_DIM_Q:
		return c->n_heads * c->head_dim;
	case LLM_DIM_KV:
		return c->n_kv_heads * c->head_dim;
	case LLM_DIM_HEAD:
		return c->head_dim;
	case LLM_DIM_FFN:
		return c->intermediate_size;
	case LLM_DIM_NONE:
		break;
	}
	return 0;
}

int
llm_role_shape(enum llm_role r, const struct llm_model_config *c, int64_t shape[2])
{
	shape[0] = dim_of(roles[r].rows, c);
	shape[1] = dim_of(roles[r].cols, c);
	return shape[1] ? 2 : 1;
}

int64_t
llm_role_heads(enum llm_role r, const struct llm_model_config *c)
{
	switch (roles[r].heads) {
	case LLM_HEADS_Q:
		return c->n_heads;
	case LLM_HEADS_KV:
		return c->n_kv_heads;
	case LLM_HEADS_ONE:
		return 1;
	case LLM_HEADS_NONE:
		break;
	}
	return 0;
}

int64_t
llm_role_permuted_heads(const struct llm_family_spec *fs, enum llm_role r, const struct llm_model_config *c)
{
	if (!fs->gguf_permuted_qk || !roles[r].rotary || roles[r].heads == LLM_HEADS_ONE)
		return 0;
	return llm_role_heads(r, c);
}

int
llm_role_part(const char *const *names, enum llm_role r, const struct llm_model_config *c, int64_t *first,
    int64_t *rows)
{
	int64_t shape[2];
	int n = 0;

	*first = *rows = 0;
	if (r < LLM_ROLE_ATTN_NORM || r > LLM_ROLE_LAYER_LAST)
		return 0;
	for (int o = LLM_ROLE_ATTN_NORM; o <= LLM_ROLE_LAYER_LAST; o++) {
		if (!llm_role_present(o, c) || strcmp(names[o], names[r]) != 0)
			continue;
		llm_role_shape(o, c, shape);
		if (o < (int)r)
			*first += shape[0];
		*rows += shape[0];
		n++;
	}
	return n > 1;
}

enum llm_role
llm_family_gguf_role(enum llm_family f, const char *name, int layer)
{
	const struct llm_family_spec *fs = llm_family_spec(f);
	for (int r = 0; fs && r < LLM_ROLE_COUNT; r++) {
		char want[96];
		if (!fs->gguf[r])
			continue;
		snprintf(want, sizeof(want), fs->gguf[r], layer);
		if (strcmp(want, name) == 0)
			return (enum llm_role)r;
	}
	return LLM_ROLE_COUNT;
}

const char *
llm_family_size_class(enum llm_family f, int64_t l, int64_t e, int64_t heads, int64_t kv_heads, int64_t vocab)
{
	/* llama.cpp's load_arch_hparams of each (src/models/<arch>.cpp); its
	 * Mistral files are llama's */
	if (f == LLM_FAMILY_QWEN2)
		return l == 24 ? (e == 1024 ? "0.5B" : "1B") :
		    l == 28    ? (e == 1536 ? "1.5B" : "7B") :
		    l == 32    ? "7B" :
		    l == 36    ? "3B" :
		    l == 40    ? (heads == 20 ? "4B" : "13B") :
		    l == 48    ? "14B" :
		    l == 64    ? "32B" :
		    l == 80    ? "70B" :
				 "?B";
	if (f == LLM_FAMILY_LLAMA || f == LLM_FAMILY_MISTRAL)
		return l == 16 || l == 22 ? "1B" :
		    l == 26 || l == 28    ? "3B" :
		    l == 30               ? "256M" :
		    l == 32               ? (vocab == 49152       ? "3B" :
						    vocab < 40000 ? "7B" :
								    "8B") :
		    l == 36               ? "8B" :
		    l == 40               ? "13B" :
		    l == 48               ? "34B" :
		    l == 60               ? "30B" :
		    l == 80               ? (heads == kv_heads ? "65B" : "70B") :
					    "?B";
	if (f == LLM_FAMILY_QWEN3)
		return l == 28 ? (e == 1024 ? "0.6B" : "1.7B") :
		    l == 36    ? (e == 2560 ? "4B" : "8B") :
		    l == 40    ? "14B" :
		    l == 64    ? "32B" :
				 "?B";
	if (f == LLM_FAMILY_PHI3)
		return l == 24 ? "1B" : l == 32 ? "3B" : l == 40 ? "14B" : "?B";
	if (f == LLM_FAMILY_GEMMA3)
		return l == 18 ? "270M" :
		    l == 26    ? "1B" :
		    l == 32    ? "8B" :
		    l == 34    ? "4B" :
		    l == 48    ? "12B" :
		    l == 62    ? "27B" :
				 "?B";
	return "?B";
}
