/* model.h: model.json (format llm-model/2, see share/doc/llm/formats.txt),
 * the manifest llm-import writes and every later program reads. */
#ifndef LLM_MODEL_H
#define LLM_MODEL_H

#include <jansson.h>
#include <stdint.h>

#include "../base/dtype.h"
#include "phase.h"
#include "quant.h"

#define LLM_MODEL_FORMAT "llm-model/2"
#define LLM_WEIGHTS_HEADER_BYTES 4096
#define LLM_WEIGHTS_ALIGN 64
#define LLM_MAX_SOURCES 4
#define LLM_MAX_PHASES LLM_PH_COUNT

#define LLM_MAX_ROPE_FACTORS 512 /* head_dim / 2 */
#define LLM_MAX_TP 64              /* limits.tp: ranks of a tensor-parallel model */
#define LLM_TP_ALIGN 65536         /* a rank's image of the weights starts at a multiple */
/* The MPI library a tensor-parallel model's mpi ops are lowered for (the
 * module's DLTI "MPI:Implementation", emit.c) and linked with (llm-link):
 * MPICH's ABI, which Intel MPI, MVAPICH and Cray MPICH share. */
#define LLM_MPI_IMPLEMENTATION "MPICH"
#define LLM_MPI_SONAME "libmpich.so.12" /* Debian: libmpich12 */
#define LLM_MPI_LIB "-l:" LLM_MPI_SONAME

/* The RoPE scaling of a config (transformers' rope_scaling, in config.json
 * and model.json alike): none (null, absent or rope_type "default"), or
 * rope_type "llama3" (Llama 3.1/3.2) with its four numbers; in model.json
 * only, rope_type "freq_factors" with the factors that divide each
 * inv_freq (what llama.cpp's GGUF files hold for llama3: rope_freqs.weight,
 * and what longrope becomes for one context) and the attention factor
 * that scales cos and sin; in config.json (and GGUF phi3 files) only,
 * rope_type "longrope" (Phi-3.5, Phi-4-mini): short and long factors, the
 * long ones for sequences past original_max_position_embeddings
 * (llm_rope_scaling_for_context picks).  llm_rope_inv_freq() applies them. */
struct llm_rope_scaling {
	int llama3;
	double factor, low_freq_factor, high_freq_factor, original_max_position_embeddings;
	int nfactors; /* freq_factors: rotary_dim / 2 of them (longrope: the
	               * short factors); else 0 */
	double factors[LLM_MAX_ROPE_FACTORS];
	double attention_factor; /* cos and sin times it; 0 reads as 1 */
	int longrope;            /* long_factors (nfactors of them) past
	                          * original_max_position_embeddings */
	int linear;              /* config.json's linear: every inv_freq / factor
	                          * (hfconfig.c makes it freq_factors) */
	double long_factors[LLM_MAX_ROPE_FACTORS];
};

/* The MLP's gate activation. */
enum llm_act { LLM_ACT_SILU, LLM_ACT_GELU_TANH };

struct llm_model_config {
	int64_t hidden_size, n_layers, n_heads, n_kv_heads, head_dim;
	int64_t intermediate_size, vocab_size, max_position_embeddings;
	double rms_norm_eps, rope_theta;
	int tie_word_embeddings, attention_bias;
	int qk_norm;            /* q and k normed per head (qwen3; absent: false) */
	int64_t sliding_window; /* a query at p sees keys t > p - W only (mistral); 0: all t <= p */
	struct llm_rope_scaling rope_scaling;
	int64_t rotary_dim; /* the leading dims of a head that RoPE rotates (the
	                     * rest pass through): head_dim, or fewer under
	                     * partial_rotary_factor (phi3); absent: head_dim */
	/* Gemma 3's (model.json keys of the same names; absent: the values
	 * that change nothing) */
	int post_norms;          /* RMSNorms of the attention's and the MLP's
	                          * outputs before the residual adds */
	int act;                 /* enum llm_act ("hidden_act": "silu",
	                          * "gelu_tanh") */
	double embed_scale;      /* the embedding rows times it; 0: 1 */
	double attn_scale;       /* the scores times it; 0: 1/sqrt(head_dim) */
	int64_t window_pattern;  /* layer l is global when l + 1 is a multiple
	                          * of it, else local (the sliding window, and
	                          * rope_local_theta); 0: every layer local */
	double rope_local_theta; /* the local layers' RoPE base (tables
	                          * rope.local.*, unscaled); 0: the global
	                          * tables */
};

/* Whether layer l of c is a local one: the sliding window (when c has
 * one) and the local RoPE tables (when c has them) hold there. */
int llm_layer_local(const struct llm_model_config *c, int64_t l);

/* rope_scaling rs (borrowed; NULL for absent) into *s: 0, or -1 with
 * llm_errmsg naming ctx and a rope type it does not support. */
int llm_rope_scaling_load(const json_t *rs, const char *ctx, struct llm_rope_scaling *s);
/* s as model.json's config.rope_scaling: null, or the object. */
json_t *llm_rope_scaling_json(const struct llm_rope_scaling *s);
/* Fix a longrope s for a context of max_context positions, as transformers
 * picks per sequence: the short factors when max_context is at most
 * original_max_position_embeddings, else the long ones (llama.cpp's rule
 * for its context); s becomes freq_factors.  1 when the long ones were
 * taken, else 0. */
int llm_rope_scaling_for_context(struct llm_rope_scaling *s, int64_t max_context);

struct llm_plan_tensor {
	const char *name; /* borrowed from root */
	int nsource;
	const char *source[LLM_MAX_SOURCES];
	const char *transform; /* "copy", "unpermute_qk", "rotary_halves",
	                         * "rope_cos", "rope_sin" */
	int64_t heads;         /* unpermute_qk, rotary_halves: the heads of the
	                         * rows; else 0 (llm-pack-weights reads and
	                         * checks it) */
	int part;              /* 0: the source whole; 1: its rows first_row ..
	                         * first_row + shape[0] - 1 (a part of a fused
	                         * qkv or gate_up matrix; model.json "first_row") */
	int64_t first_row;
	int cpart; /* 0: every column; 1: the columns first_col
	                         * .. first_col + shape[1] - 1 of a matrix
	                         * (model.json "first_col"; a tensor-parallel
	                         * rank's part of o or down) */
	int64_t first_col;
	const char *quant;     /* the source's ggml block type ("Q4_K"), when
	                         * it is block-quantized; else NULL */
	const char *layout;    /* NULL: dense, dtype elements in row-major
	                         * order; else the tiled layout (quant.h,
	                         * "i8-r8-g32"), dtype i8, ndim 2 */
	struct llm_qlayout ql; /* the layout parsed (when layout is set) */
	enum llm_dtype dtype;
	int ndim;
	int64_t shape[4];
	uint64_t offset, bytes; /* offset into the data area */
};

struct llm_phase {
	const char *name, *entry, *file;
	int64_t tokens; /* rows per call: S, or 1 for decode */
};

struct llm_model {
	json_t *root; /* owned; the strings below borrow from it */
	char *path;   /* model.json as given */
	char *dir;    /* its directory */
	const char *family, *architecture;
	const char *source_kind, *source_dir;
	size_t nsource_files;
	const char **source_files;
	struct llm_model_config cfg;
	enum llm_dtype weight_dtype, act_dtype, kv_dtype;
	int act_q8;            /* dtypes.activations "q8": the products with
	                         * quantized weights quantize x to int8 in blocks
	                         * of 32 (as llama.cpp does) and run on the int8
	                         * kernels (ir.txt "Kernels"); else f32 */
	int act_bf16;          /* dtypes.activations "bf16": the products with
	                         * bf16 weights round x to bf16 and sum the
	                         * products in f32 (vdpbf16ps where the target
	                         * has it: ir.txt "Kernels") */
	const char *file_type; /* dtypes.file_type: llama.cpp's name of the
	                        * quantized file type the weights are
	                        * ("Q4_K - Medium": the --dtype mix, or a
	                        * GGUF's general.file_type whose blocks the
	                        * build keeps); NULL: none */
	int64_t max_context, prefill_chunk;
	int64_t pp; /* limits.pp: the ranks the layers are split over
	             * (pipeline parallel: rank r holds layers r x n_layers /
	             * pp on, the plan's images as under tp); 1: one process */
	int64_t tp; /* limits.tp: the ranks the weights are split over
	             * (tensor parallel, MPI); 1: one process.  The plan is
	             * then tp images of data_bytes / tp (a multiple of
	             * LLM_TP_ALIGN) with the same layout: rank 0's tensors,
	             * then rank r's, each named "<name>@<r>" (r >= 1) */
	size_t ntokenizer_files;
	const char **tokenizer_files;
	int64_t bos_id; /* -1: none */
	int n_eos;
	int64_t eos_ids[8];
	int add_bos;
	const char *chat_template; /* NULL: none */
	uint64_t kv_bytes;
	const char *weights_file;
	uint64_t header_bytes, alignment, data_bytes, fingerprint;
	size_t ntensors;
	struct llm_plan_tensor *tensors;
	int nphases;
	struct llm_phase phases[LLM_MAX_PHASES];
};

/* Positions in a row of the KV cache for max_context C: C rounded up to
 * 16 and 16 more, so that the rows of a head (HD of them for the
 * transposed keys) are not a power of two apart and a tile of keys read
 * down the head dim does not fall into one set of the caches. */
int64_t llm_kv_positions(int64_t max_context);
/* The bytes of a KV cache whose rows hold llm_kv_positions(context)
 * positions (context <= m->max_context; m->kv_bytes is the one for
 * max_context): what the runtime allocates and passes as %kv. */
uint64_t llm_kv_bytes(const struct llm_model *m, int64_t context);
/* The context llm-run allocates when not told: llama.cpp's default, or
 * the build's max_context when that is smaller. */
#define LLM_DEFAULT_CONTEXT 4096
/* The most RoPE rows (and the largest KV cache llm-run -c may ask for)
 * llm-import gives a build by default, when the model was trained for
 * more (--max-context): 16 MiB of tables at head_dim 128. */
#define LLM_DEFAULT_MAX_CONTEXT 32768

/* The config one rank computes (m->cfg for one process): under tp,
 * heads, KV heads and intermediate_size divided by tp, a KV head shared by
 * tp / n_kv_heads ranks when there are fewer than ranks; under pp, the
 * layers divided by pp. */
void llm_model_rank_config(const struct llm_model *m, struct llm_model_config *out);
/* Whether config c splits over tp ranks by tensors or pp ranks by layers
 * (one of them 1): 0, or -1 with llm_errmsg saying what does not divide
 * (ctx names the model). */
int llm_model_split_check(const struct llm_model_config *c, int64_t tp, int64_t pp, const char *ctx);
/* The MPI ranks m runs as: tp x pp (one of them 1). */
int64_t llm_model_ranks(const struct llm_model *m);
/* A model to be described by llm_model_build: zeroed but for the fixed
 * facts of the format (weights.bin, its header size and alignment, f32
 * activations, no bos). */
void llm_model_init(struct llm_model *m);
/* model.json for m, as llm_model_parse reads it.  Written from m: the
 * top, source, config, dtypes, limits, tokenizer (add_bos only with a
 * bos) and weights (the tensors in plan order, offsets and bytes as
 * given).  Derived: kv_cache, the fingerprint and the phases (phase.h,
 * tokens from prefill_chunk).  Not read: root, path, dir, the tensors'
 * ql, kv_bytes, fingerprint, nphases and phases.  A new reference. */
json_t *llm_model_build(const struct llm_model *m);

/* Load and validate (format, types, offsets aligned, inside data_bytes and
 * not overlapping, byte sizes equal shape x dtype, fingerprint equal to
 * the recomputed one).  0, or -1 with llm_errmsg "path: ...". */
int llm_model_load(struct llm_model *m, const char *path);
/* The same from a parsed document; takes the reference to root (freed by
 * llm_model_free, or on failure); path names it in messages. */
int llm_model_parse(struct llm_model *m, json_t *root, const char *path);
void llm_model_free(struct llm_model *m);
const struct llm_plan_tensor *llm_model_tensor(const struct llm_model *m, const char *name);
const struct llm_phase *llm_model_phase(const struct llm_model *m, const char *name);

/* The plan fingerprint (formats.txt): FNV-1a 64 over the compact JSON of
 * {"dtypes", "config", "limits", "tensors"}.  The arguments are borrowed. */
uint64_t llm_plan_fingerprint(json_t *dtypes, json_t *config, json_t *limits, json_t *tensors);
/* 16 lowercase hex digits, and back (-1 on a malformed string). */
void llm_hex64(uint64_t v, char out[17]);
int llm_parse_hex64(const char *s, uint64_t *out);

#endif
