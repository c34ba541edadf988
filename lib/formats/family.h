/* family.h: what differs between the supported model families, in one
 * place: the family's names (config.json model_type and architectures,
 * GGUF general.architecture), its config defaults and rules, and where
 * each runtime tensor comes from in a checkpoint, a Hugging Face one or a
 * GGUF file.  Also what the families share: the runtime tensor names of
 * the plan and the shape of each role.  Everything else (sizes, biases,
 * tying, RoPE base) comes from the config (config.json or the GGUF
 * metadata). */
#ifndef LLM_FAMILY_H
#define LLM_FAMILY_H

#include <stdint.h>

#include "model.h"

/* one family a line */
/* clang-format off */
enum llm_family {
	LLM_FAMILY_NONE = 0,
	LLM_FAMILY_QWEN2,
	LLM_FAMILY_LLAMA,
	LLM_FAMILY_QWEN3,
	LLM_FAMILY_MISTRAL,
	LLM_FAMILY_PHI3,
	LLM_FAMILY_GEMMA3,
	LLM_FAMILY_COUNT
};
/* clang-format on */

/* A family's sliding window: what its config's window keys mean. */
enum llm_window {
	LLM_WINDOW_NONE,         /* none (Llama) */
	LLM_WINDOW_REFUSED,      /* Qwen2's use_sliding_window: refused when true */
	LLM_WINDOW_ALL_LAYERS,   /* Mistral's and Phi-3's sliding_window (null or
	                          * absent: none), on every layer */
	LLM_WINDOW_LOCAL_LAYERS, /* Gemma 3's, on the local layers
	                          * (sliding_window_pattern or layer_types), which
	                          * have their own RoPE base (rope_local_base_freq) */
};

/* Runtime tensor roles, in weights.bin order within a layer (the roles of
 * a layer: LLM_ROLE_ATTN_NORM .. LLM_ROLE_LAYER_LAST). */
enum llm_role {
	LLM_ROLE_EMBED,
	LLM_ROLE_ATTN_NORM,
	LLM_ROLE_WQ,
	LLM_ROLE_WK,
	LLM_ROLE_WV,
	LLM_ROLE_BQ,
	LLM_ROLE_BK,
	LLM_ROLE_BV,
	LLM_ROLE_QNORM,
	LLM_ROLE_KNORM,
	LLM_ROLE_WO,
	LLM_ROLE_ATTN_POST_NORM,
	LLM_ROLE_FFN_NORM,
	LLM_ROLE_WGATE,
	LLM_ROLE_WUP,
	LLM_ROLE_WDOWN,
	LLM_ROLE_FFN_POST_NORM,
	LLM_ROLE_FINAL_NORM,
	LLM_ROLE_LM_HEAD,
	LLM_ROLE_COUNT,
	LLM_ROLE_LAYER_LAST = LLM_ROLE_FFN_POST_NORM
};

/* The RoPE tables of the plan (transforms rope_cos, rope_sin): computed,
 * not taken from the checkpoint, [max_context, head_dim / 2] f32. */
#define LLM_TENSOR_ROPE_COS "rope.cos"
#define LLM_TENSOR_ROPE_SIN "rope.sin"
/* The local (sliding-window) layers' tables, where their RoPE base is
 * their own (gemma3: transforms rope_local_cos, rope_local_sin). */
#define LLM_TENSOR_ROPE_LOCAL_COS "rope.local.cos"
#define LLM_TENSOR_ROPE_LOCAL_SIN "rope.local.sin"
/* The GGUF tensor of llama.cpp's converter for rope_scaling llama3: the
 * factors that divide each inv_freq (read into the config's rope_scaling). */
#define LLM_GGUF_ROPE_FREQS "rope_freqs.weight"
/* phi3's rope_scaling longrope: the long and the short factors. */
#define LLM_GGUF_ROPE_LONG "rope_factors_long.weight"
#define LLM_GGUF_ROPE_SHORT "rope_factors_short.weight"

struct llm_family_spec {
	enum llm_family family;
	const char *name;                /* "qwen2": config.json model_type, GGUF
	                                         * general.architecture, model.json family */
	const char *model_type;          /* config.json's model_type, where it is not
	                                         * name ("gemma3_text") */
	const char *architectures[4];    /* config.json architectures[0] */
	int64_t max_position_embeddings; /* config.json's default (transformers') */
	int qkv_bias;                    /* always has q/k/v biases; else config.json's
	                                         * attention_bias says, and mlp_bias is refused */
	enum llm_window window;          /* which sliding window config.json and the
	                                         * GGUF metadata may give */
	int qk_norm;                     /* RMSNorm of each head of q and k (weights
	                                         * [head_dim]) before RoPE */
	int64_t head_dim;                /* config.json's default head_dim; 0:
	                                         * hidden_size / num_attention_heads */
	int post_norms;                  /* RMSNorms of the attention's and the MLP's
	                                         * outputs (gemma3) */
	int norm_plus_one;               /* a checkpoint's norm weights w scale by 1 + w
	                                         * (gemma3; GGUF files hold 1 + w) */
	int embed_scale;                 /* the embedding rows times sqrt(hidden_size) */
	/* config.json keys the family's config class defaults (a JSON
	 * object: a key the config lacks takes its value), or NULL */
	const char *defaults;
	/* A multimodal model whose text model is this family's
	 * (Gemma3ForConditionalGeneration): its architecture, the config key
	 * of the text model's config, the keys the text config takes from
	 * the top when it lacks them, and the prefix of the text model's
	 * tensor names in the checkpoint. */
	const char *wrapper_arch, *wrapper_config, *wrapper_prefix;
	/* Checkpoint names per role; "%d" is the layer.  Roles of a layer
	 * that name one tensor (Phi-3's qkv_proj) take consecutive parts of
	 * its rows, in role order (llm_role_part). */
	const char *hf[LLM_ROLE_COUNT];
	const char *gguf[LLM_ROLE_COUNT]; /* llama.cpp's names */
	/* GGUF stores the q and k projections (and biases) with the rows of
	 * each head permuted for llama.cpp's RoPE (llama only): the plan
	 * undoes it with the transform "unpermute_qk". */
	int gguf_permuted_qk;
	/* llama.cpp writes no file of this general.architecture (its Mistral
	 * models are "llama", without the window): such a GGUF is refused. */
	int no_gguf_arch;
};

/* The spec of family f, or NULL for LLM_FAMILY_NONE. */
const struct llm_family_spec *llm_family_spec(enum llm_family f);
/* The family whose spec is called name ("llama", "qwen2"), or
 * LLM_FAMILY_NONE. */
enum llm_family llm_family_by_name(const char *name);
/* config.json's model_type of spec fs, and the family of a model_type
 * (or LLM_FAMILY_NONE). */
const char *llm_family_model_type(const struct llm_family_spec *fs);
enum llm_family llm_family_by_model_type(const char *mt);
/* The role of GGUF tensor name (layer: its "blk.N.", or -1) by family
 * f's llama.cpp names, or LLM_ROLE_COUNT for none. */
enum llm_role llm_family_gguf_role(enum llm_family f, const char *name, int layer);
/* llama.cpp's size class of a model of family f and that shape (its
 * "llm_type": "1.5B" for Qwen2 of 28 layers of 1536, "8B" for Llama of
 * 32 layers and a vocabulary of 128256), as llama_model_desc and
 * llama-bench print it; "?B" where llama.cpp has none. */
const char *llm_family_size_class(enum llm_family f, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
    int64_t vocab);
/* Its name, or "" for LLM_FAMILY_NONE. */
const char *llm_family_name(enum llm_family f);

/* What the plan needs of a role, the same in every family: one row a
 * role (family.c's roles[]). */
enum llm_dim { LLM_DIM_NONE, LLM_DIM_VOCAB, LLM_DIM_HIDDEN, LLM_DIM_Q, LLM_DIM_KV, LLM_DIM_HEAD, LLM_DIM_FFN };
enum llm_role_when { LLM_WHEN_ALWAYS, LLM_WHEN_BIAS, LLM_WHEN_UNTIED, LLM_WHEN_QK_NORM, LLM_WHEN_POSTNORMS };
enum llm_role_heads { LLM_HEADS_NONE, LLM_HEADS_Q, LLM_HEADS_KV, LLM_HEADS_ONE };
enum llm_tp_split { LLM_TP_NONE, LLM_TP_ROWS, LLM_TP_COLS };
struct llm_role_info {
	const char *runtime;       /* the plan's name ("layers.%d.wq": "%d" is the layer) */
	enum llm_dim rows, cols;   /* its shape in the config's sizes (cols NONE: a
	                            * vector) */
	enum llm_role_when when;   /* which models have it (llm_role_present) */
	int norm;                  /* an RMSNorm's weight */
	int rotary;                /* its rows carry RoPE's dimensions (q, k, their
	                            * biases and norms) */
	enum llm_role_heads heads; /* the heads its rows fall into (q's, the KV
	                            * heads, or one) */
	enum llm_tp_split tp;      /* how tensor parallelism splits it (Megatron's:
	                            * by output rows before, by input columns
	                            * before an all-reduce) */
};
const struct llm_role_info *llm_role_info(enum llm_role r);

/* The plan's name of role r ("layers.%d.wq": "%d" is the layer), the same
 * in every family. */
const char *llm_role_runtime(enum llm_role r);
/* Whether a model of config c has role r: the biases with
 * attention_bias, the LM head when it is not tied to the embedding. */
int llm_role_present(enum llm_role r, const struct llm_model_config *c);
/* The shape of role r (row-major, outermost first): its ndim, 1 or 2. */
int llm_role_shape(enum llm_role r, const struct llm_model_config *c, int64_t shape[2]);
/* The number of heads role r's rows fall into under config c (0: none). */
int64_t llm_role_heads(enum llm_role r, const struct llm_model_config *c);
/* Where role r's rows lie in its source tensor, names being the family's
 * hf or gguf names: 0 when the tensor is the role's alone; else 1, with
 * *first its first row and *rows the rows of the whole fused tensor (the
 * roles of the layer present in c that share its name, in role order). */
int llm_role_part(const char *const *names, enum llm_role r, const struct llm_model_config *c, int64_t *first,
    int64_t *rows);
/* The heads of the rows of role r for a family whose GGUF files store q
 * and k permuted (gguf_permuted_qk): n_heads for q, n_kv_heads for k (and
 * their biases); else 0. */
int64_t llm_role_permuted_heads(const struct llm_family_spec *fs, enum llm_role r, const struct llm_model_config *c);

#endif
