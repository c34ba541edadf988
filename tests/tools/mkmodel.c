/* mkmodel: write a Hugging Face checkpoint directory with seeded random
 * weights, the test model of every later stage (llm-import, refmodel, the
 * runtime).  No network, no real weights: the shapes, names, dtypes and
 * configuration files are those of real Qwen2 / Llama checkpoints, the
 * values are normal random numbers (std 0.02; norm weights near 1).
 *
 * Output DIR holds config.json, generation_config.json, model.safetensors,
 * tokenizer.json, tokenizer_config.json and, when the tokenizer source has
 * it, chat_template.jinja.  Everything is written into a sibling
 * DIR.tmp.XXXXXX first and renamed into place at the end (file by file when
 * DIR already exists, keeping its other files), so a failure or a signal
 * leaves nothing behind.  The same arguments give the same bytes.
 *
 * model.safetensors is written like the safetensors Python package writes
 * it: u64 header length, compact JSON header with "__metadata__" first and
 * the tensors in data order, padded with spaces to a multiple of 8 bytes,
 * then the data, tensors sorted by name.  Offsets are computed first and
 * every tensor is generated and written in chunks, so memory stays
 * O(chunk) whatever the model size.
 *
 * Each tensor has its own random stream, seeded from (seed, tensor name):
 * a tensor's values do not depend on which other tensors exist, so layer 0
 * of a 1-layer model equals layer 0 of a 28-layer one. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/base/dtype.h"
#include "../../lib/base/util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mkmodel writes the host's floats: little-endian hosts only"
#endif

#define CHUNK (256 * 1024) /* elements generated per write: 1 MiB of f32 */
#define TOKENIZER_SUBDIR "ds-r1-distill-qwen"

/* A preset: the sizes and the configuration text of a real model.  Floats
 * are kept as the JSON spelling of the real config.json. */
struct preset {
	const char *name;
	int64_t hidden, layers, heads, kv_heads, ffn, vocab, max_pos;
	int tied;
	const char *rms_eps, *rope_theta;
	int64_t bos, eos; /* config.json */
	int64_t max_window_layers, sliding_window;
	const char *tf_version; /* transformers_version */
	const char *genconfig;  /* generation_config.json, verbatim */
	int64_t head_dim;       /* 0: hidden / heads */
	const char *family;     /* what -f defaults to */
};

/* The DeepSeek-R1-Distill generation_config.json: BOS 151646 (the
 * tokenizer's <｜begin▁of▁sentence｜>), EOS 151643. */
#define DS_GENCONFIG \
	"{\n" \
	"  \"_from_model_config\": true,\n" \
	"  \"bos_token_id\": 151646,\n" \
	"  \"eos_token_id\": 151643,\n" \
	"  \"do_sample\": true,\n" \
	"  \"temperature\": 0.6,\n" \
	"  \"top_p\": 0.95,\n" \
	"  \"transformers_version\": \"4.39.3\"\n" \
	"}\n"

/* a table */
/* clang-format off */
static const struct preset presets[] = {
	/* A small model with the real vocabulary and tokenizer. */
	{"tiny", 64, 2, 4, 2, 128, 151936, 4096, 0, "1e-06", "10000.0",
	 151643, 151643, 2, 4096, "4.44.0", DS_GENCONFIG, 0, "qwen2"},
	/* tiny with rows of 256 (hidden 256, FFN 512): what llama.cpp's
	 * k-quants need, so that a Q4_K_M of it holds Q4_K and Q6_K. */
	{"tiny-k", 256, 2, 4, 2, 512, 151936, 4096, 0, "1e-06", "10000.0",
	 151643, 151643, 2, 4096, "4.44.0", DS_GENCONFIG, 0, "qwen2"},
	/* Qwen/Qwen2.5-0.5B. */
	{"qwen2.5-0.5b", 896, 24, 14, 2, 4864, 151936, 32768, 1, "1e-06", "1000000.0",
	 151643, 151643, 24, 32768, "4.40.1",
	 "{\n"
	 "  \"bos_token_id\": 151643,\n"
	 "  \"do_sample\": false,\n"
	 "  \"eos_token_id\": 151643,\n"
	 "  \"max_new_tokens\": 2048,\n"
	 "  \"transformers_version\": \"4.37.0\"\n"
	 "}\n", 0, "qwen2"},
	/* deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B. */
	{"ds-r1-distill-qwen-1.5b", 1536, 28, 12, 2, 8960, 151936, 131072, 0, "1e-06", "10000",
	 151643, 151643, 21, 4096, "4.44.0", DS_GENCONFIG, 0, "qwen2"},
	/* Qwen/Qwen3-0.6B (with --family qwen3): head_dim 128, so q is 2048
	 * wide on a hidden size of 1024. */
	{"qwen3-0.6b", 1024, 28, 16, 8, 3072, 151936, 40960, 1, "1e-06", "1000000",
	 151643, 151645, 28, 0, "4.51.0",
	 "{\n"
	 "  \"bos_token_id\": 151643,\n"
	 "  \"do_sample\": true,\n"
	 "  \"eos_token_id\": [\n"
	 "    151645,\n"
	 "    151643\n"
	 "  ],\n"
	 "  \"pad_token_id\": 151643,\n"
	 "  \"temperature\": 0.6,\n"
	 "  \"top_k\": 20,\n"
	 "  \"top_p\": 0.95,\n"
	 "  \"transformers_version\": \"4.51.0\"\n"
	 "}\n", 128, "qwen3"},
	/* microsoft/Phi-4-mini-instruct (with --family phi3): 200064 tokens,
	 * tied embeddings (the tokenizer is the default one: its ids are a
	 * part of the vocabulary). */
	{"phi-4-mini", 3072, 32, 24, 8, 8192, 200064, 131072, 1, "1e-05", "10000.0",
	 199999, 199999, 32, 0, "4.45.0",
	 "{\n"
	 "  \"_from_model_config\": true,\n"
	 "  \"bos_token_id\": 199999,\n"
	 "  \"eos_token_id\": [\n"
	 "    200020,\n"
	 "    199999\n"
	 "  ],\n"
	 "  \"pad_token_id\": 199999,\n"
	 "  \"transformers_version\": \"4.45.0\"\n"
	 "}\n", 0, "phi3"},
	/* google/gemma-3-1b-it (with --family gemma3): head_dim 256 on 4
	 * heads of hidden 1152, one kv head, 262144 tokens. */
	{"gemma-3-1b", 1152, 26, 4, 1, 6912, 262144, 32768, 1, "1e-06", "1000000",
	 2, 1, 26, 0, "4.50.0.dev0",
	 "{\n"
	 "  \"bos_token_id\": 2,\n"
	 "  \"cache_implementation\": \"hybrid\",\n"
	 "  \"do_sample\": true,\n"
	 "  \"eos_token_id\": [\n"
	 "    1,\n"
	 "    106\n"
	 "  ],\n"
	 "  \"pad_token_id\": 0,\n"
	 "  \"top_k\": 64,\n"
	 "  \"top_p\": 0.95,\n"
	 "  \"transformers_version\": \"4.50.0.dev0\"\n"
	 "}\n", 256, "gemma3"},
	/* meta-llama/Llama-3.2-1B-Instruct (with --family llama; its RoPE
	 * scaling: --rope-llama3 8192). */
	{"llama-3.2-1b", 2048, 16, 32, 8, 8192, 128256, 131072, 1, "1e-05", "500000.0",
	 128000, 128009, 16, 0, "4.45.0.dev0",
	 "{\n"
	 "  \"bos_token_id\": 128000,\n"
	 "  \"do_sample\": true,\n"
	 "  \"eos_token_id\": [\n"
	 "    128001,\n"
	 "    128008,\n"
	 "    128009\n"
	 "  ],\n"
	 "  \"temperature\": 0.6,\n"
	 "  \"top_p\": 0.9,\n"
	 "  \"transformers_version\": \"4.45.0.dev0\"\n"
	 "}\n", 64, "llama"},
	/* mistralai/Mistral-7B-Instruct-v0.3 (with --family mistral). */
	{"mistral-7b", 4096, 32, 32, 8, 14336, 32768, 32768, 0, "1e-05", "1000000.0",
	 1, 2, 32, 0, "4.42.0.dev0",
	 "{\n"
	 "  \"bos_token_id\": 1,\n"
	 "  \"eos_token_id\": 2,\n"
	 "  \"transformers_version\": \"4.42.0.dev0\"\n"
	 "}\n", 128, "mistral"},
};
/* clang-format on */

enum family { QWEN2, LLAMA, QWEN3, MISTRAL, PHI3, GEMMA3 };
static const char *const family_names[] = {"qwen2", "llama", "qwen3", "mistral", "phi3", "gemma3"};
static const char *const model_types[] = {"qwen2", "llama", "qwen3", "mistral", "phi3", "gemma3_text"};
static const char *const architectures[] = {"Qwen2ForCausalLM", "LlamaForCausalLM", "Qwen3ForCausalLM",
	"MistralForCausalLM", "Phi3ForCausalLM", "Gemma3ForCausalLM"};
enum init { MATRIX, NORM, BIAS };

/* A family by its name (family_names), or -1. */
static int
family_of(const char *name)
{
	for (size_t i = 0; i < LLM_NELEM(family_names); i++)
		if (strcmp(name, family_names[i]) == 0)
			return (int)i;
	return -1;
}

struct tensor {
	char *name;
	int ndim;
	int64_t shape[2];
	enum init init;
	uint64_t begin, end; /* data offsets, relative to the end of the header */
};

struct model {
	const struct preset *p;
	enum family family;
	enum llm_dtype dtype;
	int64_t layers, vocab, head_dim;
	int64_t rope_llama3; /* llama3 rope_scaling's original context; 0: none */
	int64_t window;      /* mistral's and phi3's sliding_window; 0: null */
	const char *partial; /* phi3's partial_rotary_factor, as JSON spells it */
	int64_t longrope;    /* phi3: rope_scaling longrope and this original context; 0: null */
	int64_t pattern;     /* gemma3's sliding_window_pattern */
	const char *linear;  /* gemma3: rope_scaling linear of this factor (JSON) */
	int wrap;            /* gemma3: as Gemma3ForConditionalGeneration (4B and
	                      * up): text_config, tensors under language_model. */
	uint64_t seed;
	struct tensor *t;
	size_t nt, cap;
};

static int verbose;

/* Output state, for the cleanup on failure (atexit) and on signals. */
static char *stage;          /* DIR.tmp.XXXXXX, until renamed */
static char *stage_files[8]; /* files that may exist in it */
static int nstage_files;
static char *made_dirs[64]; /* parents created, outermost first */
static int nmade_dirs;
static volatile sig_atomic_t cleaning;

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: mkmodel [-hv] [-d dtype] [-f family] [-L layers] [-p preset] "
	    "[--head-dim n] [--longrope n] [--partial-rotary f] [--rope-llama3 n] [--sliding-window n] [-s seed] "
	    "[-t tokenizer-dir] [--multimodal] [--rope-linear f] [--vocab n] [--window-pattern n] -o dir\n");
}

static void
help(void)
{
	usage(stdout);
	printf("\n"
	       "Write a Hugging Face checkpoint directory with seeded random weights.\n"
	       "\n"
	       "  -d, --dtype f32|f16|bf16    weight dtype (default f32)\n"
	       "  -f, --family qwen2|llama|qwen3|mistral|phi3|gemma3\n"
	       "                              architecture (default: the preset's; llama: no q/k/v biases;\n"
	       "                              qwen3: no biases, q_norm and k_norm; mistral: llama's\n"
	       "                              layers, MistralConfig; phi3: llama's layers with\n"
	       "                              qkv_proj and gate_up_proj fused, Phi3Config; gemma3:\n"
	       "                              four norms a layer, q/k norms, Gemma3TextConfig)\n"
	       "  -h, --help                  print this help\n"
	       "      --head-dim N            head_dim (llama, qwen3, mistral; default hidden / heads)\n"
	       "  -L, --layers N              number of decoder layers (default: the preset's)\n"
	       "      --multimodal            gemma3: as Gemma3ForConditionalGeneration (4B and up):\n"
	       "                              the config in text_config, the tensors under\n"
	       "                              language_model. (the same values), a vision tensor\n"
	       "      --longrope N            phi3: rope_scaling longrope (short and long factors\n"
	       "                              made from the seed) and original_max_position_embeddings N\n"
	       "  -o, --output DIR            output directory (created; replaced files are\n"
	       "                              renamed into an existing one)\n"
	       "      --partial-rotary F      phi3: partial_rotary_factor F (default 0.75, Phi-4-mini's)\n"
	       "  -p, --preset NAME           tiny (default), tiny-k, qwen2.5-0.5b,\n"
	       "                              ds-r1-distill-qwen-1.5b, qwen3-0.6b, phi-4-mini,\n"
	       "                              gemma-3-1b, llama-3.2-1b, mistral-7b\n"
	       "      --rope-llama3 N         llama: rope_scaling llama3 with Llama 3.2's factor 32,\n"
	       "                              low_freq_factor 1, high_freq_factor 4 and\n"
	       "                              original_max_position_embeddings N (8192 in Llama 3.2)\n"
	       "      --rope-linear F         gemma3: rope_scaling linear of factor F (4B: 8.0)\n"
	       "  -s, --seed N                random seed, 0 .. 2^63-1 (default 0)\n"
	       "      --sliding-window N      mistral, phi3: sliding_window N (default null);\n"
	       "                              gemma3: of the local layers (default 512)\n"
	       "  -t, --tokenizer-dir DIR     tokenizer.json, tokenizer_config.json and\n"
	       "                              chat_template.jinja to copy (default: $LLM_TOKENIZER_DIR,\n"
	       "                              else ../shared/fixtures/tokenizers/" TOKENIZER_SUBDIR "\n"
	       "                              of the project, else the cache filled by\n"
	       "                              tests/tools/fetch-tokenizer)\n"
	       "  -v, --verbose               say which tokenizer was used and what was written\n"
	       "      --vocab N               vocab_size N (default: the preset's)\n"
	       "      --window-pattern N      gemma3: sliding_window_pattern N (default 6: every\n"
	       "                              6th layer global)\n");
}

/* Random numbers: xoshiro256** seeded through splitmix64, the pair that
 * xoshiro's authors recommend; normals by the ziggurat method in Doornik's
 * form (ZIGNOR: 128 blocks, the block index and the uniform from disjoint
 * bits of one 64-bit draw), twice as fast here as Marsaglia's polar method
 * (9 vs 18 ns a number), which matters at 1.8 G numbers a model. */
struct rng {
	uint64_t s[4];
};

#define ZIG_N 128
#define ZIG_R 3.442619855899        /* start of the tail */
#define ZIG_V 9.91256303526217e-3   /* area of each block */
static double zig_x[ZIG_N + 1], zig_ratio[ZIG_N];

static void
zig_init(void)
{
	double f = exp(-0.5 * ZIG_R * ZIG_R);

	zig_x[0] = ZIG_V / f;
	zig_x[1] = ZIG_R;
	zig_x[ZIG_N] = 0;
	for (int i = 2; i < ZIG_N; i++) {
		zig_x[i] = sqrt(-2 * log(ZIG_V / zig_x[i - 1] + f));
		f = exp(-0.5 * zig_x[i] * zig_x[i]);
	}
	for (int i = 0; i < ZIG_N; i++)
		zig_ratio[i] = zig_x[i + 1] / zig_x[i];
}

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t
xoshiro(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

static void
rng_init(struct rng *r, uint64_t seed, const char *name)
{
	uint64_t x = seed ^ llm_fnv1a(LLM_FNV_INIT, name, strlen(name));

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

/* Uniform in the open interval (0, 1). */
static double
uniform(struct rng *r)
{
	return ((double)(xoshiro(r) >> 11) + 0.5) * 0x1p-53;
}

static double
normal(struct rng *r)
{
	for (;;) {
		uint64_t b = xoshiro(r);
		int i = (int)(b & (ZIG_N - 1));
		double u = (double)(b >> 11) * 0x1p-52 - 1.0; /* [-1, 1) */
		double x, f0, f1;

		if (fabs(u) < zig_ratio[i])
			return u * zig_x[i];
		if (i == 0) {
			/* The tail beyond R, by Marsaglia's method. */
			double y;
			do {
				x = log(uniform(r)) / ZIG_R;
				y = log(uniform(r));
			} while (-2 * y < x * x);
			return u < 0 ? x - ZIG_R : ZIG_R - x;
		}
		x = u * zig_x[i];
		f0 = exp(-0.5 * (zig_x[i] * zig_x[i] - x * x));
		f1 = exp(-0.5 * (zig_x[i + 1] * zig_x[i + 1] - x * x));
		if (f1 + uniform(r) * (f0 - f1) < 1.0)
			return x;
	}
}

static void add(struct model *m, enum init init, int64_t d0, int64_t d1, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void
add(struct model *m, enum init init, int64_t d0, int64_t d1, const char *fmt, ...)
{
	struct llm_buf b = {0};
	struct tensor *t;
	va_list ap;

	if (m->nt == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 64;
		m->t = llm_xreallocarray(m->t, m->cap, sizeof(*m->t));
	}
	t = &m->t[m->nt++];
	va_start(ap, fmt);
	llm_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	t->name = m->wrap ? llm_xasprintf("language_model.%s", b.p) : llm_xstrdup(b.p);
	llm_buf_free(&b);
	t->init = init;
	t->ndim = d1 ? 2 : 1;
	t->shape[0] = d0;
	t->shape[1] = d1;
}

static int
cmp_tensor(const void *a, const void *b)
{
	return strcmp(((const struct tensor *)a)->name, ((const struct tensor *)b)->name);
}

/* The tensors of the model, with Hugging Face names and [out, in] shapes,
 * sorted by name with their data offsets. */
static void
plan(struct model *m)
{
	const struct preset *p = m->p;
	int64_t d = p->hidden, q = p->heads * m->head_dim, kv = p->kv_heads * m->head_dim;
	uint64_t off = 0, esz = llm_dtype_size(m->dtype);

	add(m, MATRIX, m->vocab, d, "model.embed_tokens.weight");
	for (int64_t i = 0; i < m->layers; i++) {
		const char *l = "model.layers";
		add(m, NORM, d, 0, "%s.%lld.input_layernorm.weight", l, (long long)i);
		if (m->family == PHI3) {
			add(m, MATRIX, q + 2 * kv, d, "%s.%lld.self_attn.qkv_proj.weight", l, (long long)i);
		} else {
			add(m, MATRIX, q, d, "%s.%lld.self_attn.q_proj.weight", l, (long long)i);
			add(m, MATRIX, kv, d, "%s.%lld.self_attn.k_proj.weight", l, (long long)i);
			add(m, MATRIX, kv, d, "%s.%lld.self_attn.v_proj.weight", l, (long long)i);
		}
		if (m->family == QWEN2) {
			add(m, BIAS, q, 0, "%s.%lld.self_attn.q_proj.bias", l, (long long)i);
			add(m, BIAS, kv, 0, "%s.%lld.self_attn.k_proj.bias", l, (long long)i);
			add(m, BIAS, kv, 0, "%s.%lld.self_attn.v_proj.bias", l, (long long)i);
		}
		if (m->family == QWEN3 || m->family == GEMMA3) {
			add(m, NORM, m->head_dim, 0, "%s.%lld.self_attn.q_norm.weight", l, (long long)i);
			add(m, NORM, m->head_dim, 0, "%s.%lld.self_attn.k_norm.weight", l, (long long)i);
		}
		add(m, MATRIX, d, q, "%s.%lld.self_attn.o_proj.weight", l, (long long)i);
		add(m, NORM, d, 0, "%s.%lld.post_attention_layernorm.weight", l, (long long)i);
		if (m->family == GEMMA3) {
			add(m, NORM, d, 0, "%s.%lld.pre_feedforward_layernorm.weight", l, (long long)i);
			add(m, NORM, d, 0, "%s.%lld.post_feedforward_layernorm.weight", l, (long long)i);
		}
		if (m->family == PHI3) {
			add(m, MATRIX, 2 * p->ffn, d, "%s.%lld.mlp.gate_up_proj.weight", l, (long long)i);
		} else {
			add(m, MATRIX, p->ffn, d, "%s.%lld.mlp.gate_proj.weight", l, (long long)i);
			add(m, MATRIX, p->ffn, d, "%s.%lld.mlp.up_proj.weight", l, (long long)i);
		}
		add(m, MATRIX, d, p->ffn, "%s.%lld.mlp.down_proj.weight", l, (long long)i);
	}
	add(m, NORM, d, 0, "model.norm.weight");
	if (!p->tied)
		add(m, MATRIX, m->vocab, d, "lm_head.weight");
	if (m->wrap) {
		/* a tensor of the vision tower, which the text model ignores */
		add(m, NORM, 8, 0, "vision");
		free(m->t[m->nt - 1].name);
		m->t[m->nt - 1].name = llm_xstrdup("vision_tower.vision_model.post_layernorm.weight");
	}
	qsort(m->t, m->nt, sizeof(*m->t), cmp_tensor);
	for (size_t i = 0; i < m->nt; i++) {
		struct tensor *t = &m->t[i];
		uint64_t n = (uint64_t)t->shape[0] * (uint64_t)(t->ndim == 2 ? t->shape[1] : 1);
		t->begin = off;
		off += n * esz;
		t->end = off;
	}
}

/* The safetensors header: JSON padded with spaces to a multiple of 8. */
static void
header(const struct model *m, struct llm_buf *h)
{
	const char *dt = llm_dtype_st_name(m->dtype);

	llm_buf_puts(h, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (size_t i = 0; i < m->nt; i++) {
		const struct tensor *t = &m->t[i];
		llm_buf_printf(h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%lld", t->name, dt, (long long)t->shape[0]);
		if (t->ndim == 2)
			llm_buf_printf(h, ",%lld", (long long)t->shape[1]);
		llm_buf_printf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)t->begin,
		    (unsigned long long)t->end);
	}
	llm_buf_puts(h, "}");
	while (h->len % 8)
		llm_buf_puts(h, " ");
}

/* Phi-4-mini's rope_scaling form: "long_factor", "short_factor" (one a
 * pair of rotated dims, made from the seed: the short ones near 1, the
 * long ones growing to about 40 as Phi-4-mini's do), "type". */
static void
longrope_json(const struct model *m, struct llm_buf *b)
{
	int64_t rd = (int64_t)(strtod(m->partial, NULL) * (double)m->head_dim), n = rd / 2;
	struct rng r;

	rng_init(&r, m->seed, "rope_scaling");
	for (int k = 0; k < 2; k++) {
		llm_buf_printf(b, k ? "    \"short_factor\": [\n" : "  \"rope_scaling\": {\n    \"long_factor\": [\n");
		for (int64_t i = 0; i < n; i++) {
			double u = uniform(&r), t = n > 1 ? (double)i / (double)(n - 1) : 0;
			double f = k ? 1.0 + 0.1 * u : 1.0 + 39.0 * t * t + u;
			llm_buf_printf(b, "      %.4f%s\n", f, i + 1 < n ? "," : "");
		}
		llm_buf_puts(b, "    ],\n");
	}
	llm_buf_puts(b, "    \"type\": \"longrope\"\n  },\n");
}

static void
config_json(const struct model *m, struct llm_buf *b)
{
	const struct preset *p = m->p;
	const char *torch_dtype = m->dtype == LLM_DT_F32 ? "float32" : m->dtype == LLM_DT_F16 ? "float16" : "bfloat16";
	int64_t mwl = p->max_window_layers < m->layers ? p->max_window_layers : m->layers;

	/* Keys sorted, as transformers writes them. */
	llm_buf_printf(b, "{\n  \"architectures\": [\n    \"%s\"\n  ],\n", architectures[m->family]);
	if (m->family == LLAMA || m->family == QWEN3 || m->family == GEMMA3)
		llm_buf_puts(b, "  \"attention_bias\": false,\n");
	llm_buf_puts(b, "  \"attention_dropout\": 0.0,\n");
	if (m->family == GEMMA3)
		llm_buf_puts(b, "  \"attn_logit_softcapping\": null,\n");
	llm_buf_printf(b,
	    "  \"bos_token_id\": %lld,\n"
	    "  \"eos_token_id\": %lld,\n",
	    (long long)p->bos, (long long)p->eos);
	if (m->family == GEMMA3)
		llm_buf_puts(b, "  \"final_logit_softcapping\": null,\n");
	if (m->family != QWEN2 && m->family != PHI3)
		llm_buf_printf(b, "  \"head_dim\": %lld,\n", (long long)m->head_dim);
	llm_buf_printf(b,
	    m->family == GEMMA3 ? "  \"hidden_activation\": \"gelu_pytorch_tanh\",\n" :
				  "  \"hidden_act\": \"silu\",\n");
	llm_buf_printf(b,
	    "  \"hidden_size\": %lld,\n"
	    "  \"initializer_range\": 0.02,\n"
	    "  \"intermediate_size\": %lld,\n"
	    "  \"max_position_embeddings\": %lld,\n",
	    (long long)p->hidden, (long long)p->ffn, (long long)p->max_pos);
	if (m->family == QWEN2 || m->family == QWEN3)
		llm_buf_printf(b, "  \"max_window_layers\": %lld,\n", (long long)mwl);
	else if (m->family == LLAMA)
		llm_buf_puts(b, "  \"mlp_bias\": false,\n");
	llm_buf_printf(b,
	    "  \"model_type\": \"%s\",\n"
	    "  \"num_attention_heads\": %lld,\n"
	    "  \"num_hidden_layers\": %lld,\n"
	    "  \"num_key_value_heads\": %lld,\n",
	    model_types[m->family], (long long)p->heads, (long long)m->layers, (long long)p->kv_heads);
	if (m->family == PHI3 && m->longrope)
		llm_buf_printf(b, "  \"original_max_position_embeddings\": %lld,\n", (long long)m->longrope);
	if (m->family == PHI3)
		llm_buf_printf(b, "  \"partial_rotary_factor\": %s,\n", m->partial);
	if (m->family == LLAMA)
		llm_buf_puts(b, "  \"pretraining_tp\": 1,\n");
	if (m->family == GEMMA3)
		/* head_dim, as in Gemma 3 1B, 4B and 12B (and llama.cpp's rule) */
		llm_buf_printf(b, "  \"query_pre_attn_scalar\": %lld,\n", (long long)m->head_dim);
	llm_buf_printf(b, "  \"rms_norm_eps\": %s,\n", p->rms_eps);
	if (m->family == LLAMA && m->rope_llama3)
		llm_buf_printf(b,
		    "  \"rope_scaling\": {\n"
		    "    \"factor\": 32.0,\n"
		    "    \"high_freq_factor\": 4.0,\n"
		    "    \"low_freq_factor\": 1.0,\n"
		    "    \"original_max_position_embeddings\": %lld,\n"
		    "    \"rope_type\": \"llama3\"\n"
		    "  },\n",
		    (long long)m->rope_llama3);
	else if (m->family == PHI3 && m->longrope)
		longrope_json(m, b);
	if (m->family == GEMMA3)
		llm_buf_puts(b, "  \"rope_local_base_freq\": 10000.0,\n");
	if (m->family == GEMMA3 && m->linear)
		llm_buf_printf(b, "  \"rope_scaling\": {\n    \"factor\": %s,\n    \"rope_type\": \"linear\"\n  },\n",
		    m->linear);
	if (m->family == LLAMA || m->family == QWEN3 || m->family == PHI3 || m->family == GEMMA3)
		if (!(m->family == LLAMA && m->rope_llama3) && !(m->family == PHI3 && m->longrope) &&
		    !(m->family == GEMMA3 && m->linear))
			llm_buf_puts(b, "  \"rope_scaling\": null,\n");
	/* Gemma 3's global layers: 1000000, local ones 10000 */
	llm_buf_printf(b, "  \"rope_theta\": %s,\n", m->family == GEMMA3 ? "1000000.0" : p->rope_theta);
	if (m->family == QWEN2)
		llm_buf_printf(b, "  \"sliding_window\": %lld,\n", (long long)p->sliding_window);
	else if (m->family == QWEN3 || ((m->family == MISTRAL || m->family == PHI3) && !m->window))
		llm_buf_puts(b, "  \"sliding_window\": null,\n");
	else if (m->family == MISTRAL || m->family == PHI3)
		llm_buf_printf(b, "  \"sliding_window\": %lld,\n", (long long)m->window);
	else if (m->family == GEMMA3)
		llm_buf_printf(b, "  \"sliding_window\": %lld,\n  \"sliding_window_pattern\": %lld,\n",
		    (long long)(m->window ? m->window : 512), (long long)m->pattern);
	llm_buf_printf(b,
	    "  \"tie_word_embeddings\": %s,\n"
	    "  \"torch_dtype\": \"%s\",\n"
	    "  \"transformers_version\": \"%s\",\n"
	    "  \"use_cache\": true,\n",
	    p->tied ? "true" : "false", torch_dtype, p->tf_version);
	if (m->family == QWEN2)
		llm_buf_puts(b, "  \"use_mrope\": false,\n");
	if (m->family == QWEN2 || m->family == QWEN3)
		llm_buf_puts(b, "  \"use_sliding_window\": false,\n");
	llm_buf_printf(b, "  \"vocab_size\": %lld\n}\n", (long long)m->vocab);
}

/* Remove what a failed run created: the staging directory's files, the
 * directory itself and the parents made for it.  Called from atexit (after
 * llm_fatal) and from signal handlers, so it only uses unlink and rmdir. */
static void
cleanup(void)
{
	if (cleaning)
		return;
	cleaning = 1;
	if (stage) {
		for (int i = 0; i < nstage_files; i++)
			unlink(stage_files[i]);
		rmdir(stage);
	}
	for (int i = nmade_dirs - 1; i >= 0; i--)
		rmdir(made_dirs[i]);
}

/* Register a file in the staging directory for cleanup; returns its path. */
static char *
stage_file(const char *name)
{
	char *path = llm_path_join(stage, name);

	if (nstage_files == (int)LLM_NELEM(stage_files))
		llm_fatal("too many output files");
	stage_files[nstage_files++] = path;
	return path;
}

/* Create the parents of DIR that are missing, remembering them for
 * cleanup, then the staging directory DIR.tmp.XXXXXX beside DIR. */
static void
make_stage(const char *dir)
{
	char *parent = llm_xstrdup(dir), *s;
	struct stat st;
	mode_t mask;

	if ((s = strrchr(parent, '/')) && s != parent) {
		*s = 0;
		/* Collect the missing ancestors, innermost first, then record
		 * them outermost first. */
		char *miss[LLM_NELEM(made_dirs)];
		int n = 0;
		char *a = llm_xstrdup(parent);
		while (stat(a, &st) != 0 && errno == ENOENT && n < (int)LLM_NELEM(miss)) {
			miss[n++] = llm_xstrdup(a);
			char *sl = strrchr(a, '/');
			if (!sl || sl == a)
				break;
			*sl = 0;
		}
		free(a);
		for (int i = n - 1; i >= 0; i--)
			made_dirs[nmade_dirs++] = miss[i];
		if (llm_mkdirs(parent) < 0)
			llm_fatal("%s", llm_errmsg());
	}
	free(parent);
	stage = llm_xasprintf("%s.tmp.XXXXXX", dir);
	if (!mkdtemp(stage)) {
		int err = errno;
		free(stage);
		stage = NULL;
		errno = err;
		llm_fatal("%s:", dir);
	}
	mask = umask(0);
	umask(mask);
	chmod(stage, 0777 & ~mask);
}

/* Files in the staging directory.  They need no temporaries of their own:
 * the directory is renamed into place only when all of them are complete,
 * and cleanup() removes them otherwise.  There is no fsync: the output is
 * test data that can be made again, the staging directory already covers
 * failures and signals, and flushing to disk made every run disk-bound
 * (tiny: 1.0 s instead of 0.3 s; the bats suite three times slower). */
static FILE *
create(const char *name, char **path)
{
	FILE *fp;

	*path = stage_file(name);
	if (!(fp = fopen(*path, "wbx")))
		llm_fatal("%s:", *path);
	return fp;
}

static void
finish(FILE *fp, const char *path)
{
	if (fflush(fp) != 0 || ferror(fp))
		llm_fatal("%s: write error:", path);
	if (fclose(fp) != 0)
		llm_fatal("%s: close:", path);
}

static void
put_file(const char *name, const char *text)
{
	char *path;
	FILE *fp = create(name, &path);
	size_t n = strlen(text);

	if (fwrite(text, 1, n, fp) != n)
		llm_fatal("%s: write error:", path);
	finish(fp, path);
}

static void
copy_file(const char *src, const char *name, char *buf, size_t bufsz)
{
	char *path;
	FILE *in, *fp;
	size_t n;

	if (!(in = fopen(src, "rb")))
		llm_fatal("%s:", src);
	fp = create(name, &path);
	while ((n = fread(buf, 1, bufsz, in)) > 0)
		if (fwrite(buf, 1, n, fp) != n)
			llm_fatal("%s: write error:", path);
	if (ferror(in))
		llm_fatal("%s: read error:", src);
	fclose(in);
	finish(fp, path);
}

static void
write_safetensors(const struct model *m, float *f32, uint16_t *h16)
{
	struct llm_buf h = {0};
	uint8_t len[8];
	char *path;
	FILE *fp;

	header(m, &h);
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)h.len >> (8 * i));
	fp = create("model.safetensors", &path);
	if (fwrite(len, 1, 8, fp) != 8 || fwrite(h.p, 1, h.len, fp) != h.len)
		llm_fatal("%s: write error:", path);
	llm_buf_free(&h);
	for (size_t i = 0; i < m->nt; i++) {
		const struct tensor *t = &m->t[i];
		uint64_t n = (t->end - t->begin) / llm_dtype_size(m->dtype);
		double base = t->init == NORM ? 1.0 : 0.0;
		struct rng r;

		/* seeded by the text model's name: a wrapped model holds the
		 * same weights */
		rng_init(&r, m->seed,
		    t->name + (strncmp(t->name, "language_model.", 15) == 0 ? strlen("language_model.") : 0));
		while (n > 0) {
			size_t k = n < CHUNK ? (size_t)n : CHUNK;
			const void *out = f32;
			size_t bytes = 4 * k;

			/* Generated in double, rounded to f32, then to the
			 * narrow type (round to nearest even). */
			for (size_t j = 0; j < k; j++)
				f32[j] = (float)(base + 0.02 * normal(&r));
			if (m->dtype == LLM_DT_BF16) {
				for (size_t j = 0; j < k; j++)
					h16[j] = llm_f32_to_bf16(f32[j]);
				out = h16, bytes = 2 * k;
			} else if (m->dtype == LLM_DT_F16) {
				for (size_t j = 0; j < k; j++)
					h16[j] = llm_f32_to_f16(f32[j]);
				out = h16, bytes = 2 * k;
			}
			if (fwrite(out, 1, bytes, fp) != bytes)
				llm_fatal("%s: write error:", path);
			n -= k;
		}
	}
	finish(fp, path);
}

/* Move the finished staging directory to DIR: one rename when DIR does not
 * exist (or is empty), else one rename per file into the existing DIR. */
static void
commit(const char *dir)
{
	struct stat st;

	if (rename(stage, dir) == 0)
		goto done;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		llm_fatal("%s: rename:", dir);
	for (int i = 0; i < nstage_files; i++) {
		const char *name = strrchr(stage_files[i], '/') + 1;
		char *dst = llm_path_join(dir, name);
		if (rename(stage_files[i], dst) != 0)
			llm_fatal("%s:", dst);
		free(dst);
	}
	if (rmdir(stage) != 0)
		llm_fatal("%s:", stage);
done:
	free(stage);
	stage = NULL;
	for (int i = 0; i < nstage_files; i++)
		free(stage_files[i]);
	nstage_files = 0;
	for (int i = 0; i < nmade_dirs; i++)
		free(made_dirs[i]);
	nmade_dirs = 0;
}

/* The directory of the running program's project: the nearest ancestor
 * of the executable holding tests/tools/fetch-tokenizer, or NULL. */
static char *
project_root(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *s;

	if (n <= 0)
		return NULL;
	exe[n] = 0;
	while ((s = strrchr(exe, '/')) && s != exe) {
		*s = 0;
		char *probe = llm_xasprintf("%s/tests/tools/fetch-tokenizer", exe);
		int ok = llm_file_exists(probe);
		free(probe);
		if (ok)
			return llm_xstrdup(exe);
	}
	return NULL;
}

static int
has_tokenizer(const char *dir)
{
	char *p = llm_path_join(dir, "tokenizer.json");
	int ok = llm_file_exists(p);
	free(p);
	return ok;
}

/* Where the tokenizer files come from: -t, $LLM_TOKENIZER_DIR, the shared
 * fixture, the npm cache; `how` says which. */
static char *
find_tokenizer(const char *opt, const char **how)
{
	const char *env = getenv("LLM_TOKENIZER_DIR");
	char *root, *fixture, *cache;

	if (opt || (env && *env)) {
		const char *dir = opt ? opt : env;
		*how = opt ? "--tokenizer-dir" : "LLM_TOKENIZER_DIR";
		if (!has_tokenizer(dir)) {
			char *p = llm_path_join(dir, "tokenizer.json");
			llm_fatal("%s:", p);
		}
		return llm_xstrdup(dir);
	}
	if (!(root = project_root()))
		llm_fatal("no tokenizer: cannot locate the project directory from the "
			  "executable; give --tokenizer-dir or LLM_TOKENIZER_DIR");
	fixture = llm_xasprintf("%s/../shared/fixtures/tokenizers/" TOKENIZER_SUBDIR, root);
	cache = llm_xasprintf("%s/tests/npm/node_modules/.cache/" TOKENIZER_SUBDIR, root);
	if (has_tokenizer(fixture)) {
		char *real = realpath(fixture, NULL);
		*how = "shared fixture";
		if (real) {
			free(fixture);
			fixture = real;
		}
		free(cache);
		free(root);
		return fixture;
	}
	if (has_tokenizer(cache)) {
		*how = "npm cache (tests/tools/fetch-tokenizer)";
		free(fixture);
		free(root);
		return cache;
	}
	llm_fatal("no tokenizer: neither '%s' nor '%s' has tokenizer.json; run "
		  "%s/tests/tools/fetch-tokenizer (needs node and npm) or give --tokenizer-dir",
	    fixture, cache, root);
}

static void
bad_usage(const char *fmt, const char *arg, const char *why)
{
	fprintf(stderr, "%s: ", llm_prog);
	fprintf(stderr, fmt, arg);
	if (why)
		fprintf(stderr, ": %s", why);
	fputc('\n', stderr);
	usage(stderr);
	exit(LLM_EXIT_USAGE);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dtype", required_argument, NULL, 'd'},
		{"family", required_argument, NULL, 'f'},
		{"head-dim", required_argument, NULL, 'H'},
		{"longrope", required_argument, NULL, 'G'},
		{"partial-rotary", required_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{"layers", required_argument, NULL, 'L'},
		{"output", required_argument, NULL, 'o'},
		{"preset", required_argument, NULL, 'p'},
		{"rope-llama3", required_argument, NULL, 'R'},
		{"seed", required_argument, NULL, 's'},
		{"sliding-window", required_argument, NULL, 'W'},
		{"tokenizer-dir", required_argument, NULL, 't'},
		{"verbose", no_argument, NULL, 'v'},
		{"vocab", required_argument, NULL, 'V'},
		{"window-pattern", required_argument, NULL, 'w'},
		{"multimodal", no_argument, NULL, 'M'},
		{"rope-linear", required_argument, NULL, 'N'},
		{NULL, 0, NULL, 0},
	};
	struct model m = {.p = &presets[0], .family = QWEN2, .dtype = LLM_DT_F32, .layers = -1};
	const char *tokdir_opt = NULL, *how;
	char *out = NULL, *tokdir;
	int fam, family_set = 0;
	int64_t v;
	int c;
	double t0 = llm_now();

	llm_setprog(argv[0]);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:f:hL:o:p:s:t:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			m.dtype = llm_dtype_from_name(optarg);
			if (!llm_dtype_is_float_weight(m.dtype))
				bad_usage("unknown dtype '%s'", optarg, "f32, f16 or bf16");
			break;
		case 'f':
			if ((fam = family_of(optarg)) < 0)
				bad_usage("unknown family '%s'", optarg,
				    "qwen2, llama, qwen3, mistral, phi3 or gemma3");
			m.family = (enum family)fam;
			family_set = 1;
			break;
		case 'h':
			help();
			return LLM_EXIT_OK;
		case 'L':
			if (llm_parse_i64(optarg, 1, 1000, &v) < 0)
				bad_usage("--layers: %s", llm_errmsg(), NULL);
			m.layers = v;
			break;
		case 'o':
			out = optarg;
			break;
		case 'p':
			m.p = NULL;
			for (size_t i = 0; i < LLM_NELEM(presets); i++)
				if (strcmp(optarg, presets[i].name) == 0)
					m.p = &presets[i];
			if (!m.p)
				bad_usage("unknown preset '%s'", optarg,
				    "tiny, tiny-k, qwen2.5-0.5b, ds-r1-distill-qwen-1.5b, qwen3-0.6b, phi-4-mini, "
				    "gemma-3-1b, llama-3.2-1b or mistral-7b");
			break;
		case 'H':
			if (llm_parse_i64(optarg, 2, 1024, &v) < 0 || v % 2)
				bad_usage("--head-dim: %s", v % 2 ? "not even" : llm_errmsg(), NULL);
			m.head_dim = v;
			break;
		case 'W':
			if (llm_parse_i64(optarg, 1, INT32_MAX, &v) < 0)
				bad_usage("--sliding-window: %s", llm_errmsg(), NULL);
			m.window = v;
			break;
		case 'R':
			if (llm_parse_i64(optarg, 1, INT32_MAX, &v) < 0)
				bad_usage("--rope-llama3: %s", llm_errmsg(), NULL);
			m.rope_llama3 = v;
			break;
		case 'G':
			if (llm_parse_i64(optarg, 2, INT32_MAX, &v) < 0)
				bad_usage("--longrope: %s", llm_errmsg(), NULL);
			m.longrope = v;
			break;
		case 'P': {
			char *end;
			double f = strtod(optarg, &end);
			if (end == optarg || *end || !(f > 0 && f <= 1))
				bad_usage("--partial-rotary: '%s' is not a number in (0, 1]", optarg, NULL);
			m.partial = optarg;
			break;
		}
		case 's':
			if (llm_parse_i64(optarg, 0, INT64_MAX, &v) < 0)
				bad_usage("--seed: %s", llm_errmsg(), NULL);
			m.seed = (uint64_t)v;
			break;
		case 't':
			tokdir_opt = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'M':
			m.wrap = 1;
			break;
		case 'N': {
			char *end;
			double f = strtod(optarg, &end);
			if (end == optarg || *end || !(f >= 1))
				bad_usage("--rope-linear: '%s' is not a number of at least 1", optarg, NULL);
			m.linear = optarg;
			break;
		}
		case 'w':
			if (llm_parse_i64(optarg, 1, 1000, &v) < 0)
				bad_usage("--window-pattern: %s", llm_errmsg(), NULL);
			m.pattern = v;
			break;
		case 'V':
			if (llm_parse_i64(optarg, 1, INT32_MAX, &v) < 0)
				bad_usage("--vocab: %s", llm_errmsg(), NULL);
			m.vocab = v;
			break;
		case ':':
			bad_usage("option '%s' needs an argument", argv[optind - 1], NULL);
			break;
		default:
			if (optopt) {
				char opt[3] = {'-', (char)optopt, 0};
				bad_usage("unknown option '%s'", opt, NULL);
			}
			bad_usage("unknown option '%s'", argv[optind - 1], NULL);
		}
	}
	if (optind != argc)
		bad_usage("unexpected argument '%s'", argv[optind], NULL);
	if (!out || !*out)
		bad_usage("%s", "no output directory (-o)", NULL);
	if (!family_set)
		m.family = (enum family)family_of(m.p->family); /* the preset's own */
	if (m.rope_llama3 && m.family != LLAMA)
		bad_usage("%s", "--rope-llama3 needs --family llama", NULL);
	if (m.window && m.family != MISTRAL && m.family != PHI3 && m.family != GEMMA3)
		bad_usage("%s", "--sliding-window needs --family mistral, phi3 or gemma3", NULL);
	if ((m.pattern || m.wrap || m.linear) && m.family != GEMMA3)
		bad_usage("%s",
		    m.pattern  ? "--window-pattern needs --family gemma3" :
			m.wrap ? "--multimodal needs --family gemma3" :
				 "--rope-linear needs --family gemma3",
		    NULL);
	if (!m.pattern)
		m.pattern = 6;
	if ((m.longrope || m.partial) && m.family != PHI3)
		bad_usage("%s", m.longrope ? "--longrope needs --family phi3" : "--partial-rotary needs --family phi3",
		    NULL);
	if (!m.partial)
		m.partial = "0.75";
	if (m.layers < 0)
		m.layers = m.p->layers;
	if (!m.vocab)
		m.vocab = m.p->vocab;
	if (m.head_dim && (m.family == QWEN2 || m.family == PHI3))
		bad_usage("%s", "--head-dim needs --family llama, qwen3, mistral or gemma3", NULL);
	if (m.p->head_dim && m.family == QWEN2)
		bad_usage("preset %s needs --family llama or qwen3 (its head_dim is not hidden / heads)", m.p->name,
		    NULL);
	if (!m.head_dim)
		m.head_dim = m.p->head_dim ? m.p->head_dim : m.p->hidden / m.p->heads;
	if (m.family == PHI3) {
		int64_t rd = (int64_t)(strtod(m.partial, NULL) * (double)m.head_dim);
		if (rd < 2 || rd % 2 || (m.head_dim - rd) % 2)
			bad_usage("%s",
			    llm_xasprintf("--partial-rotary %s of head_dim %lld does not split a head into even parts",
				m.partial, (long long)m.head_dim),
			    NULL);
	}

	/* Strip trailing slashes so that DIR.tmp.XXXXXX is a sibling. */
	out = llm_xstrdup(out);
	for (size_t n = strlen(out); n > 1 && out[n - 1] == '/'; n--)
		out[n - 1] = 0;
	struct stat st;
	if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode))
		llm_fatal("%s: not a directory", out);

	tokdir = find_tokenizer(tokdir_opt, &how);
	if (verbose)
		llm_warn("tokenizer from %s: %s", how, tokdir);

	/* Writes fail with EFBIG instead of killing us past RLIMIT_FSIZE, so
	 * that the cleanup runs. */
	zig_init();
	signal(SIGXFSZ, SIG_IGN);
	atexit(cleanup);
	/* the project's one signal handler (util.h), which also runs the
	 * library's cleanups: a handler of our own would replace it, or be
	 * replaced by it */
	llm_atsignal(cleanup);
	make_stage(out);

	size_t bufsz = 4 * (size_t)CHUNK;
	float *f32 = llm_xmalloc(bufsz);
	uint16_t *h16 = llm_xmalloc(2 * (size_t)CHUNK);
	struct llm_buf cfg = {0};

	plan(&m);
	config_json(&m, &cfg);
	if (m.wrap) {
		/* Gemma3ForConditionalGeneration: the text model's config as
		 * text_config */
		struct llm_buf w = {0};
		llm_buf_printf(&w,
		    "{\n  \"architectures\": [\n    \"Gemma3ForConditionalGeneration\"\n  ],\n"
		    "  \"boi_token_index\": 255999,\n  \"eoi_token_index\": 256000,\n  \"eos_token_id\": %lld,\n"
		    "  \"image_token_index\": 262144,\n  \"model_type\": \"gemma3\",\n  \"text_config\": ",
		    (long long)m.p->eos);
		for (const char *q = cfg.p; *q; q++) {
			if (q[1] == 0 && *q == '\n')
				break;
			llm_buf_printf(&w, "%c", *q);
			if (*q == '\n')
				llm_buf_puts(&w, "  ");
		}
		llm_buf_printf(&w,
		    ",\n  \"torch_dtype\": \"%s\",\n  \"vision_config\": {\n"
		    "    \"model_type\": \"siglip_vision_model\"\n  }\n}\n",
		    m.dtype == LLM_DT_F32     ? "float32" :
			m.dtype == LLM_DT_F16 ? "float16" :
						"bfloat16");
		llm_buf_free(&cfg);
		cfg = w;
	}
	put_file("config.json", cfg.p);
	put_file("generation_config.json", m.p->genconfig);
	static const char *tokfiles[] = {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"};
	for (size_t i = 0; i < LLM_NELEM(tokfiles); i++) {
		char *src = llm_path_join(tokdir, tokfiles[i]);
		/* chat_template.jinja is optional; the other two are not. */
		if (i < 2 || llm_file_exists(src))
			copy_file(src, tokfiles[i], (char *)f32, bufsz);
		free(src);
	}
	write_safetensors(&m, f32, h16);
	commit(out);

	if (verbose) {
		uint64_t bytes = m.nt ? m.t[m.nt - 1].end : 0;
		double dt = llm_now() - t0;
		llm_warn("%s: %s %s %s, %lld layers, %zu tensors, %.1f MB in %.1f s (%.0f MB/s)", out, m.p->name,
		    family_names[m.family], llm_dtype_name(m.dtype), (long long)m.layers, m.nt, bytes / 1e6, dt,
		    dt > 0 ? bytes / 1e6 / dt : 0.0);
	}
	for (size_t i = 0; i < m.nt; i++)
		free(m.t[i].name);
	free(m.t);
	llm_buf_free(&cfg);
	free(f32);
	free(h16);
	free(tokdir);
	free(out);
	return LLM_EXIT_OK;
}
