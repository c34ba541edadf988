/* hfconfig.h: the facts llm-* needs from a Hugging Face config.json (and
 * generation_config.json beside it), for the families it supports.
 *
 * Family is decided by model_type / architectures, as the family specs
 * (family.h, the one list of the families) name them.  Anything else is
 * rejected with a clear error. */
#ifndef LLM_HFCONFIG_H
#define LLM_HFCONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "../base/dtype.h"
#include "family.h"

#define LLM_MAX_EOS 8

struct llm_hfconfig {
	enum llm_family family;
	char family_name[16];   /* a family spec's name (family.h): "qwen2" ... */
	char architecture[64];  /* architectures[0] */
	char tensor_prefix[32]; /* of the text model's tensor names in a
	                         * multimodal checkpoint ("language_model."),
	                         * else "" */
	int64_t hidden_size;    /* d */
	int64_t n_layers;       /* num_hidden_layers */
	int64_t n_heads;        /* num_attention_heads */
	int64_t n_kv_heads;     /* num_key_value_heads (default n_heads) */
	int64_t head_dim;       /* head_dim, default hidden_size / n_heads */
	int64_t intermediate_size;
	int64_t vocab_size;
	int64_t max_position_embeddings;
	double rms_norm_eps;
	double rope_theta;
	struct llm_rope_scaling rope_scaling;
	int tie_word_embeddings; /* default: false */
	int attention_bias;      /* q/k/v biases: always for a family with qkv_bias,
	                           * else config.json attention_bias */
	int mlp_bias;            /* llama mlp_bias (rejected if true for now) */
	int qk_norm;             /* the family's q_norm and k_norm (qwen3) */
	int64_t sliding_window;  /* mistral's sliding_window; 0: null or absent */
	int64_t rotary_dim;      /* head_dim x partial_rotary_factor (default 1) */
	double partial_rotary_factor;
	/* gemma3's (model.h) */
	int post_norms, act;
	double embed_scale, attn_scale, rope_local_theta;
	int64_t window_pattern;
	uint32_t file_type;         /* a GGUF's general.file_type (llama_ftype); 0 else */
	enum llm_dtype torch_dtype; /* LLM_DT_NONE if absent */
	int64_t bos_id;             /* -1 if none; generation_config wins */
	int n_eos;                  /* union of config and generation_config eos ids */
	int64_t eos_ids[LLM_MAX_EOS];
};

/* The plain numeric keys of both readers, config.json's (hfconfig.c) and
 * the GGUF metadata's (gguf_config.c), in the order they are read: a
 * field of struct llm_hfconfig, its config.json key and its GGUF key after
 * "<arch>." (NULL: the reader has none), and what an absent key means. */
enum llm_config_type { LLM_CONFIG_SIZE, LLM_CONFIG_REAL }; /* int64_t, double */
enum {
	LLM_CONFIG_JSON_REQUIRED = 1, /* config.json must have it */
	LLM_CONFIG_GGUF_REQUIRED = 2, /* the GGUF file must have it */
	LLM_CONFIG_GGUF_ZERO = 4,     /* a GGUF size of 0 means none */
	LLM_CONFIG_GGUF_F32 = 8,      /* a GGUF real read as its f32 (not its
	                               * shortest decimal) */
};
struct llm_config_key {
	size_t field; /* offsetof(struct llm_hfconfig, ...) */
	enum llm_config_type type;
	int window; /* -1: every family's key; else only of a
	                            * family of that enum llm_window */
	const char *json, *gguf;
	unsigned flags; /* LLM_CONFIG_* */
	double def;     /* absent: this (0: what the reader set
	                            * before, or field from's) */
	size_t from;    /* 0, or the field whose value is the default */
};
extern const struct llm_config_key llm_config_keys[];
extern const size_t llm_config_nkeys;
/* Where key k goes in c, holding the default its absence leaves; NULL
 * when k is not one of family fs's keys. */
void *llm_config_key_field(const struct llm_config_key *k, const struct llm_family_spec *fs, struct llm_hfconfig *c);
/* The invariants of a config the table's keys were read into, checked
 * once for both readers: heads a multiple of the KV heads, head_dim
 * (hidden_size / n_heads where no key gave it) even, rotary_dim (head_dim
 * x partial_rotary_factor where no key gave it) an even number of 2 to
 * head_dim that leaves an even rest.  Messages start "ctx: " and name
 * config.json's keys, or with arch the GGUF keys "<arch>....".  0, or -1
 * with llm_errmsg. */
int llm_config_check(struct llm_hfconfig *c, const char *ctx, const char *arch);

/* Read DIR/config.json and, when present, DIR/generation_config.json.
 * PATH may also name config.json itself.  0, or -1 with llm_errmsg (and *c
 * zeroed, bos_id -1).  Defaults are transformers': max_position_embeddings
 * 32768 (qwen2) or 2048 (llama), rms_norm_eps 1e-6, rope_theta 10000.
 * (the family spec's for max_position_embeddings).
 * Rejected: a missing or non-positive size, heads not a multiple of KV
 * heads, an odd head_dim, rope_scaling other than "default", "llama3" and
 * "longrope", a partial_rotary_factor that leaves an odd part, mlp_bias,
 * hidden_act other than silu, use_sliding_window, torch_dtype other than
 * float32/float16/bfloat16, token ids outside [0, vocab_size). */
int llm_hfconfig_load(struct llm_hfconfig *c, const char *path);
/* model.json's config (model.h) of config c. */
void llm_hfconfig_model_config(const struct llm_hfconfig *c, struct llm_model_config *out);

#endif
