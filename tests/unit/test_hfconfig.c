/* Unit tests for lib/formats/hfconfig.c: Qwen2, Llama and Mistral config.json files,
 * transformers' defaults, every rejection, and the generation_config.json
 * merge of special token ids. */
#include <ftw.h>
#include <math.h>
#include <unistd.h>

#include "../../lib/formats/hfconfig.h"
#include "../../lib/base/util.h"
#include "t.h"

static int ndir;

/* A fresh checkpoint directory with config.json = cfg and, unless NULL,
 * generation_config.json = gen. */
static char *
mkckpt(const char *cfg, const char *gen)
{
	char name[32];
	snprintf(name, sizeof(name), "m%d", ndir++);
	char *dir = llm_path_join(t_tmpdir(), name);
	const char *names[2] = {"config.json", "generation_config.json"}, *texts[2] = {cfg, gen};
	if (llm_mkdirs(dir) < 0) {
		fprintf(stderr, "%s\n", llm_errmsg());
		exit(2);
	}
	for (int i = 0; i < 2 && texts[i]; i++) {
		char *path = llm_path_join(dir, names[i]);
		FILE *fp = fopen(path, "w");
		if (!fp || fputs(texts[i], fp) < 0 || fclose(fp) != 0) {
			perror(path);
			exit(2);
		}
		free(path);
	}
	return dir;
}

/* Qwen2.5-0.5B-Instruct's config.json. */
static const char qwen25[] =
    "{\"architectures\": [\"Qwen2ForCausalLM\"], \"attention_dropout\": 0.0,"
    " \"bos_token_id\": 151643, \"eos_token_id\": 151645, \"hidden_act\": \"silu\","
    " \"hidden_size\": 896, \"initializer_range\": 0.02, \"intermediate_size\": 4864,"
    " \"max_position_embeddings\": 32768, \"max_window_layers\": 21, \"model_type\": \"qwen2\","
    " \"num_attention_heads\": 14, \"num_hidden_layers\": 24, \"num_key_value_heads\": 2,"
    " \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, \"sliding_window\": 32768,"
    " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.43.1\","
    " \"use_cache\": true, \"use_sliding_window\": false, \"vocab_size\": 151936}";

/* A Llama 3 style config.json without RoPE scaling. */
static const char llama3[] = "{\"architectures\": [\"LlamaForCausalLM\"], \"attention_bias\": false,"
			     " \"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009],"
			     " \"head_dim\": 64, \"hidden_act\": \"silu\", \"hidden_size\": 2048,"
			     " \"intermediate_size\": 8192, \"max_position_embeddings\": 131072, \"mlp_bias\": false,"
			     " \"model_type\": \"llama\", \"num_attention_heads\": 32, \"num_hidden_layers\": 16,"
			     " \"num_key_value_heads\": 8, \"pretraining_tp\": 1, \"rms_norm_eps\": 1e-05,"
			     " \"rope_scaling\": null, \"rope_theta\": 500000.0, \"tie_word_embeddings\": true,"
			     " \"torch_dtype\": \"float32\", \"vocab_size\": 128256}";

#define REQ "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4," \
	" \"intermediate_size\": 128, \"vocab_size\": 1000"
#define QWEN "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", " REQ
#define LLAMA "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", " REQ
#define MISTRAL "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", " REQ
#define PHI3 "{\"architectures\": [\"Phi3ForCausalLM\"], \"model_type\": \"phi3\", " REQ
#define GEMMA3 "{\"architectures\": [\"Gemma3ForCausalLM\"], \"model_type\": \"gemma3_text\"," \
	" \"hidden_size\": 64, \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"intermediate_size\": 128," \
	" \"vocab_size\": 1000"
/* longrope factors of a rotary_dim of 16 (the REQ head) */
#define LR8 "[1, 1, 1, 1, 1, 1, 1, 1]"

T_TEST(qwen2_config_is_read)
{
	char *dir = mkckpt(qwen25, NULL);
	struct llm_hfconfig c;
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_QWEN2 && strcmp(c.family_name, "qwen2") == 0);
	T_CHECK(strcmp(c.architecture, "Qwen2ForCausalLM") == 0);
	T_CHECK(c.hidden_size == 896 && c.n_layers == 24 && c.n_heads == 14 && c.n_kv_heads == 2);
	T_CHECK(c.head_dim == 64 && c.intermediate_size == 4864 && c.vocab_size == 151936);
	T_CHECK(c.max_position_embeddings == 32768);
	T_CHECK(c.rms_norm_eps == 1e-6 && c.rope_theta == 1e6);
	T_CHECK(c.tie_word_embeddings == 1 && c.attention_bias == 1 && c.mlp_bias == 0);
	T_CHECK(c.torch_dtype == LLM_DT_BF16);
	T_CHECK(c.bos_id == 151643 && c.n_eos == 1 && c.eos_ids[0] == 151645);
	T_CHECK(strcmp(llm_family_name(c.family), "qwen2") == 0);
	free(dir);
}

T_TEST(llama_config_is_read)
{
	char *dir = mkckpt(llama3, NULL);
	char *cfg = llm_path_join(dir, "config.json");
	struct llm_hfconfig c;
	/* The directory or config.json itself. */
	const char *paths[2] = {dir, cfg};
	for (int k = 0; k < 2; k++) {
		T_CHECKF(llm_hfconfig_load(&c, paths[k]) == 0, "%s", llm_errmsg());
		T_CHECK(c.family == LLM_FAMILY_LLAMA && strcmp(c.family_name, "llama") == 0);
		T_CHECK(strcmp(c.architecture, "LlamaForCausalLM") == 0);
		T_CHECK(c.hidden_size == 2048 && c.n_layers == 16 && c.n_heads == 32 && c.n_kv_heads == 8);
		T_CHECK(c.head_dim == 64 && c.max_position_embeddings == 131072);
		T_CHECK(c.rms_norm_eps == 1e-5 && c.rope_theta == 500000);
		T_CHECK(c.tie_word_embeddings == 1 && c.attention_bias == 0 && c.torch_dtype == LLM_DT_F32);
		T_CHECK(c.bos_id == 128000 && c.n_eos == 3);
		T_CHECK(c.eos_ids[0] == 128001 && c.eos_ids[1] == 128008 && c.eos_ids[2] == 128009);
		T_CHECK(!c.rope_scaling.llama3);
	}
	T_CHECK(strcmp(llm_family_name(LLM_FAMILY_LLAMA), "llama") == 0);
	T_CHECK(strcmp(llm_family_name(LLM_FAMILY_NONE), "") == 0);
	free(cfg);
	free(dir);
}

/* Mistral-7B-v0.1's config.json: a sliding window of 4096 on every
 * layer, Llama's tensors. */
static const char mistral7b[] =
    "{\"architectures\": [\"MistralForCausalLM\"], \"bos_token_id\": 1, \"eos_token_id\": 2,"
    " \"hidden_act\": \"silu\", \"hidden_size\": 4096, \"initializer_range\": 0.02,"
    " \"intermediate_size\": 14336, \"max_position_embeddings\": 32768, \"model_type\": \"mistral\","
    " \"num_attention_heads\": 32, \"num_hidden_layers\": 32, \"num_key_value_heads\": 8,"
    " \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"sliding_window\": 4096,"
    " \"tie_word_embeddings\": false, \"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.34.0.dev0\","
    " \"use_cache\": true, \"vocab_size\": 32000}";

T_TEST(mistral_config_is_read)
{
	char *dir = mkckpt(mistral7b, NULL);
	struct llm_hfconfig c;
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_MISTRAL && strcmp(c.family_name, "mistral") == 0);
	T_CHECK(c.sliding_window == 4096 && c.head_dim == 128 && c.n_kv_heads == 8 && c.attention_bias == 0);
	T_CHECK(llm_family_spec(LLM_FAMILY_MISTRAL)->gguf_permuted_qk);
	free(dir);
	/* null: no window (Mistral-7B-v0.2 and later) */
	dir = mkckpt("{\"architectures\": [\"MistralForCausalLM\"], " REQ ", \"sliding_window\": null}", NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.sliding_window == 0 && c.max_position_embeddings == 131072);
	free(dir);
	/* a window is Mistral's only: Llama and Qwen2 take none from it */
	dir = mkckpt("{\"architectures\": [\"LlamaForCausalLM\"], " REQ ", \"sliding_window\": 16}", NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.sliding_window == 0);
	free(dir);
}

/* microsoft/Phi-4-mini-instruct's config.json, but for the 48 longrope
 * factors of each kind (made here): partial rotary 0.75 of head_dim 128,
 * longrope with the original context at the top level, a window longer
 * than the context. */
T_TEST(phi4_mini_config_is_read)
{
	struct llm_buf b = {0};
	llm_buf_puts(&b,
	    "{\"architectures\": [\"Phi3ForCausalLM\"], \"attention_bias\": false,"
	    " \"bos_token_id\": 199999, \"eos_token_id\": 199999, \"hidden_act\": \"silu\","
	    " \"hidden_size\": 3072, \"intermediate_size\": 8192, \"max_position_embeddings\": 131072,"
	    " \"model_type\": \"phi3\", \"num_attention_heads\": 24, \"num_hidden_layers\": 32,"
	    " \"num_key_value_heads\": 8, \"original_max_position_embeddings\": 4096,"
	    " \"partial_rotary_factor\": 0.75, \"rms_norm_eps\": 1e-05, \"rope_scaling\": {");
	for (int k = 0; k < 2; k++) {
		llm_buf_printf(&b, "\"%s_factor\": [", k ? "short" : "long");
		for (int i = 0; i < 48; i++)
			llm_buf_printf(&b, "%s%g", i ? ", " : "", k ? 1.0 + i / 100.0 : 1.0 + i);
		llm_buf_puts(&b, "], ");
	}
	llm_buf_puts(&b,
	    "\"type\": \"longrope\"}, \"rope_theta\": 10000.0, \"sliding_window\": 262144,"
	    " \"tie_word_embeddings\": true, \"torch_dtype\": \"bfloat16\", \"vocab_size\": 200064}");
	char *dir = mkckpt(b.p, NULL);
	struct llm_hfconfig c;
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_PHI3 && c.head_dim == 128 && c.rotary_dim == 96 && c.tie_word_embeddings);
	const struct llm_rope_scaling *r = &c.rope_scaling;
	/* the factors as float32, as transformers' tensor holds them */
	T_CHECK(r->longrope && r->nfactors == 48 && r->factors[1] == (float)1.01 && r->long_factors[47] == 48);
	/* factor 131072 / 4096 = 32: sqrt(1 + ln 32 / ln 4096), a float32 */
	T_CHECK(r->original_max_position_embeddings == 4096 && r->attention_factor == (float)sqrt(1 + 5.0 / 12));
	T_CHECK(c.sliding_window == 262144);
	/* a context within the original takes the short factors; past it the long ones */
	struct llm_rope_scaling s = *r;
	T_CHECK(llm_rope_scaling_for_context(&s, 4096) == 0 && !s.longrope && s.factors[1] == (float)1.01);
	s = *r;
	T_CHECK(llm_rope_scaling_for_context(&s, 4097) == 1 && s.factors[1] == 2);
	free(dir);
	llm_buf_free(&b);
	/* Phi-3-mini-4k: no rope_scaling, no partial rotary */
	dir = mkckpt(PHI3 ", \"rope_scaling\": null, \"sliding_window\": 2047}", NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.rotary_dim == 16 && c.sliding_window == 2047 && c.max_position_embeddings == 4096);
	free(dir);
}

/* google/gemma-3-1b-it's config.json. */
static const char gemma3_1b[] =
    "{\"architectures\": [\"Gemma3ForCausalLM\"], \"attention_bias\": false, \"attention_dropout\": 0.0,"
    " \"attn_logit_softcapping\": null, \"bos_token_id\": 2, \"cache_implementation\": \"hybrid\","
    " \"eos_token_id\": [1, 106], \"final_logit_softcapping\": null, \"head_dim\": 256,"
    " \"hidden_activation\": \"gelu_pytorch_tanh\", \"hidden_size\": 1152, \"initializer_range\": 0.02,"
    " \"intermediate_size\": 6912, \"max_position_embeddings\": 32768, \"model_type\": \"gemma3_text\","
    " \"num_attention_heads\": 4, \"num_hidden_layers\": 26, \"num_key_value_heads\": 1, \"pad_token_id\": 0,"
    " \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, \"rope_local_base_freq\": 10000,"
    " \"rope_scaling\": null, \"rope_theta\": 1000000, \"sliding_window\": 512, \"sliding_window_pattern\": 6,"
    " \"torch_dtype\": \"bfloat16\", \"transformers_version\": \"4.50.0.dev0\", \"use_cache\": true,"
    " \"vocab_size\": 262144}";

T_TEST(gemma3_config_is_read)
{
	char *dir = mkckpt(gemma3_1b, NULL);
	struct llm_hfconfig c;
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_GEMMA3 && strcmp(c.family_name, "gemma3") == 0);
	T_CHECK(c.head_dim == 256 && c.n_kv_heads == 1 && c.qk_norm && c.post_norms && c.act == LLM_ACT_GELU_TANH);
	T_CHECK(
	    c.sliding_window == 512 && c.window_pattern == 6 && c.rope_local_theta == 10000 && c.rope_theta == 1000000);
	T_CHECK(c.attn_scale == 1.0 / 16 && c.embed_scale == (float)sqrt(1152.0) && c.tie_word_embeddings);
	T_CHECK(c.n_eos == 2 && c.bos_id == 2);
	free(dir);
	/* the defaults (Gemma3TextConfig's); layer_types in place of the pattern */
	dir = mkckpt(GEMMA3 ", \"query_pre_attn_scalar\": 64, \"layer_types\": [\"sliding_attention\","
			    " \"full_attention\", \"sliding_attention\"]}",
	    NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.head_dim == 256 && c.sliding_window == 4096 && c.window_pattern == 2 && c.attn_scale == 0.125 &&
	    c.rope_theta == 1000000 && c.max_position_embeddings == 131072 && c.tie_word_embeddings);
	free(dir);
	/* google/gemma-3-4b-it: Gemma3ForConditionalGeneration, the text
	 * config without the keys that keep Gemma3TextConfig's defaults,
	 * linear scaling (the global layers'), tensors under language_model. */
	dir = mkckpt("{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"eos_token_id\": [1, 106],"
		     " \"model_type\": \"gemma3\", \"text_config\": {\"hidden_size\": 2560,"
		     " \"intermediate_size\": 10240, \"model_type\": \"gemma3_text\", \"num_hidden_layers\": 34,"
		     " \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, \"sliding_window\": 1024},"
		     " \"torch_dtype\": \"bfloat16\", \"vision_config\": {\"model_type\": \"siglip_vision_model\"}}",
	    NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_GEMMA3 && strcmp(c.architecture, "Gemma3ForConditionalGeneration") == 0 &&
	    strcmp(c.tensor_prefix, "language_model.") == 0);
	T_CHECK(c.hidden_size == 2560 && c.n_layers == 34 && c.n_heads == 8 && c.n_kv_heads == 4 &&
	    c.vocab_size == 262208 && c.head_dim == 256 && c.sliding_window == 1024 && c.n_eos == 2 &&
	    c.torch_dtype == LLM_DT_BF16);
	T_CHECK(c.rope_scaling.nfactors == 128 && c.rope_scaling.factors[0] == 8 && c.rope_scaling.factors[127] == 8);
	free(dir);
}

T_TEST(defaults_follow_transformers)
{
	struct llm_hfconfig c;
	char *dir = mkckpt(QWEN "}", NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.n_kv_heads == 4 && c.head_dim == 16);
	T_CHECK(c.tie_word_embeddings == 0 && c.rope_theta == 10000 && c.rms_norm_eps == 1e-6);
	T_CHECK(c.max_position_embeddings == 32768 && c.attention_bias == 1);
	T_CHECK(c.torch_dtype == LLM_DT_NONE && c.bos_id == -1 && c.n_eos == 0);
	free(dir);
	dir = mkckpt(LLAMA "}", NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.n_kv_heads == 4 && c.head_dim == 16 && c.tie_word_embeddings == 0);
	T_CHECK(c.max_position_embeddings == 2048 && c.attention_bias == 0 && c.mlp_bias == 0);
	T_CHECK(c.rope_theta == 10000 && c.rms_norm_eps == 1e-6);
	free(dir);
}

T_TEST(explicit_values_override_defaults)
{
	struct llm_hfconfig c;
	/* head_dim need not be hidden / heads; then hidden need not divide. */
	char *dir = mkckpt("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 66,"
			   " \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"head_dim\": 32,"
			   " \"num_key_value_heads\": 1, \"intermediate_size\": 10, \"vocab_size\": 10,"
			   " \"attention_bias\": true, \"rope_theta\": 1e4, \"max_position_embeddings\": 64.0,"
			   " \"rope_scaling\": {\"rope_type\": \"default\"}, \"dtype\": \"float16\"}",
	    NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.head_dim == 32 && c.n_kv_heads == 1 && c.attention_bias == 1);
	T_CHECK(c.max_position_embeddings == 64 && c.torch_dtype == LLM_DT_F16);
	free(dir);
	/* Old-style "type": "default", and the family from model_type alone. */
	dir = mkckpt("{\"model_type\": \"qwen2\", " REQ ", \"rope_scaling\": {\"type\": \"default\"},"
		     " \"attention_bias\": false}",
	    NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_QWEN2 && strcmp(c.architecture, "Qwen2ForCausalLM") == 0);
	T_CHECK(c.attention_bias == 1); /* Qwen2 always has q/k/v biases */
	free(dir);
	dir = mkckpt("{\"architectures\": [\"LlamaForCausalLM\"], " REQ "}", NULL);
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_LLAMA);
	free(dir);
}

/* Each config must be rejected with a message naming config.json. */
/* a table */
/* clang-format off */
static const struct {
	const char *cfg, *want;
} bad[] = {
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"num_hidden_layers\": 2, \"num_attention_heads\": 4,"
	  " \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "missing key 'hidden_size'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_attention_heads\": 4,"
	  " \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "missing key 'num_hidden_layers'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
	  " \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "missing key 'num_attention_heads'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"vocab_size\": 1000}",
	    "missing key 'intermediate_size'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128}",
	    "missing key 'vocab_size'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": null, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "missing key 'hidden_size'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": \"64\", \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "key 'hidden_size': expected an integer" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64.5, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "key 'hidden_size': expected an integer" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 0, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "hidden_size must be positive (got 0)" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": -2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "num_hidden_layers must be positive (got -2)" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 0, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "num_attention_heads must be positive" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 0, \"vocab_size\": 1000}",
	    "intermediate_size must be positive" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": -1}",
	    "vocab_size must be positive" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 1e12, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "hidden_size 1000000000000 is too large" },
	{ QWEN ", \"num_key_value_heads\": 0}", "num_key_value_heads must be positive" },
	{ QWEN ", \"num_key_value_heads\": 3}", "num_attention_heads 4 is not a multiple of num_key_value_heads 3" },
	{ QWEN ", \"num_key_value_heads\": 8}", "num_attention_heads 4 is not a multiple of num_key_value_heads 8" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 66, \"num_hidden_layers\": 2,"
	  " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 1000}",
	    "hidden_size 66 is not divisible by num_attention_heads 4" },
	{ QWEN ", \"head_dim\": 0}", "head_dim must be positive" },
	{ QWEN ", \"head_dim\": 15}", "head_dim 15 is odd" },
	{ QWEN ", \"max_position_embeddings\": 0}", "max_position_embeddings must be positive" },
	{ QWEN ", \"rms_norm_eps\": 0}", "rms_norm_eps must be positive" },
	{ QWEN ", \"rms_norm_eps\": \"1e-6\"}", "key 'rms_norm_eps': expected a number" },
	{ QWEN ", \"rope_theta\": -1}", "rope_theta must be positive" },
	{ QWEN ", \"tie_word_embeddings\": 1}", "key 'tie_word_embeddings': expected true or false" },
	{ LLAMA ", \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0,"
	        " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}",
	    "rope_scaling: missing key 'low_freq_factor'" },
	{ LLAMA ", \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 1.0, \"low_freq_factor\": 1.0,"
	        " \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}",
	    "llama3 needs factor > 0 and 0 < low_freq_factor < high_freq_factor" },
	{ LLAMA ", \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0,"
	        " \"original_max_position_embeddings\": 8192.5, \"rope_type\": \"llama3\"}}",
	    "original_max_position_embeddings 8192.5 is not a positive whole number" },
	{ LLAMA ", \"rope_scaling\": {\"type\": \"linear\"}}", "rope_scaling: missing key 'factor'" },
	{ LLAMA ", \"rope_scaling\": {\"type\": \"linear\", \"factor\": -2}}",
	    "rope_scaling: 'factor': expected a positive number" },
	{ LLAMA ", \"rope_scaling\": {\"type\": \"dynamic\", \"factor\": 2.0}}",
	    "rope_scaling 'dynamic' is not supported (only 'default', 'linear', 'llama3' and 'longrope')" },
	{ QWEN ", \"rope_scaling\": {\"type\": \"yarn\", \"factor\": 4.0}}", "rope_scaling 'yarn' is not supported" },
	{ LLAMA ", \"rope_scaling\": {\"factor\": 2.0}}", "rope_scaling without 'rope_type' is not supported" },
	{ LLAMA ", \"rope_scaling\": \"linear\"}", "key 'rope_scaling': expected an object or null" },
	{ LLAMA ", \"rope_scaling\": {\"rope_type\": 3}}", "key 'rope_type': expected a string" },
	{ LLAMA ", \"rope_scaling\": {\"rope_type\": \"a\\nb\"}}",
	    "rope_scaling '(text with control characters)' is not supported" },
	{ LLAMA ", \"mlp_bias\": true}", "mlp_bias true is not supported" },
	{ LLAMA ", \"attention_bias\": \"no\"}", "key 'attention_bias': expected true or false" },
	{ LLAMA ", \"hidden_act\": \"gelu\"}", "hidden_act 'gelu' is not supported (only 'silu')" },
	{ QWEN ", \"use_sliding_window\": true}", "use_sliding_window true is not supported" },
	{ MISTRAL ", \"sliding_window\": 0}", "sliding_window must be positive" },
	{ MISTRAL ", \"sliding_window\": \"4096\"}", "sliding_window" },
	{ QWEN ", \"torch_dtype\": \"float8_e4m3fn\"}", "torch_dtype 'float8_e4m3fn' is not supported" },
	{ PHI3 ", \"partial_rotary_factor\": 0.7}",
	    "partial_rotary_factor 0.7 of head_dim 16 gives 11 rotated dims, not an even number" },
	{ PHI3 ", \"partial_rotary_factor\": 1.5}", "partial_rotary_factor 1.5 of head_dim 16 gives 24" },
	{ PHI3 ", \"original_max_position_embeddings\": 64, \"rope_scaling\": {\"type\": \"longrope\","
	       " \"short_factor\": [1, 1], \"long_factor\": [1, 1]}}",
	    "rope_scaling: 2 short_factor values, not rotary_dim / 2 = 8" },
	{ PHI3 ", \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": " LR8 ", \"long_factor\": [1]}}",
	    "rope_scaling: 1 long_factor and 8 short_factor values" },
	{ PHI3 ", \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": " LR8 ", \"long_factor\": " LR8 "}}",
	    "rope_scaling 'longrope' needs 'factor', 'attention_factor' or a top-level "
	    "'original_max_position_embeddings'" },
	{ PHI3 ", \"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1, 0, 1, 1, 1, 1, 1, 1],"
	       " \"long_factor\": " LR8 ", \"factor\": 2}}",
	    "rope_scaling: short_factor[1]: expected a positive number" },
	{ "{\"architectures\": [\"Gemma2ForCausalLM\"], " REQ "}",
	    "unsupported architecture 'Gemma2ForCausalLM' (supported: Qwen2ForCausalLM, LlamaForCausalLM, "
	    "Qwen3ForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Gemma3ForCausalLM)" },
	{ "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], " REQ "}",
	    "Gemma3ForConditionalGeneration without an object 'text_config'" },
	{ "{\"architectures\": [\"Gemma3ForConditionalGeneration\"], \"text_config\": {\"hidden_size\": 64,"
	  " \"num_attention_heads\": 3}}",
	    "num_attention_heads 3 is not a multiple of num_key_value_heads 4" },
	{ GEMMA3 ", \"hidden_activation\": \"gelu\"}", "hidden_activation 'gelu' is not supported" },
	{ GEMMA3 ", \"final_logit_softcapping\": 30.0}", "final_logit_softcapping is not supported" },
	{ GEMMA3 ", \"layer_types\": [\"sliding_attention\", \"sliding_attention\"]}",
	    "layer_types: expected an array of 3 strings" },
	{ GEMMA3 ", \"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\"]}",
	    "layer_types[1]: 'sliding_attention', where the pattern of 1 layers has 'full_attention'" },
	{ "{\"model_type\": \"gemma3\", " REQ "}", "unsupported model_type 'gemma3'" },
	{ "{\"architectures\": [\"Qwen2ForSequenceClassification\"], \"model_type\": \"qwen2\", " REQ "}",
	    "unsupported architecture 'Qwen2ForSequenceClassification'" },
	{ "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"llama\", " REQ "}",
	    "model_type 'llama' does not match architecture 'Qwen2ForCausalLM'" },
	{ "{\"model_type\": \"gemma\", " REQ "}",
	    "unsupported model_type 'gemma' (supported: qwen2, llama, qwen3, mistral, phi3, gemma3_text)" },
	{ "{" REQ "}", "neither 'architectures' nor 'model_type' given" },
	{ "{\"architectures\": \"LlamaForCausalLM\", " REQ "}", "key 'architectures': expected an array of strings" },
	{ "{\"architectures\": [7], " REQ "}", "key 'architectures': expected an array of strings" },
	{ "{\"architectures\": [], " REQ "}", "neither 'architectures' nor 'model_type' given" },
	{ QWEN ", \"eos_token_id\": 1000}", "eos_token_id 1000 is outside the vocabulary [0, 1000)" },
	{ QWEN ", \"bos_token_id\": -1}", "bos_token_id -1 is outside the vocabulary" },
	{ QWEN ", \"eos_token_id\": [1, \"2\"]}", "key 'eos_token_id': expected an integer or an array of integers" },
	{ QWEN ", \"eos_token_id\": \"2\"}", "key 'eos_token_id': expected an integer or an array" },
	{ QWEN ", \"bos_token_id\": [1, 2]}", "bos_token_id has 2 ids (at most 1 supported)" },
	{ QWEN ", \"eos_token_id\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}", "eos_token_id has 9 ids (at most 8 supported)" },
	{ "{\"architectures\": [\"Evil\\nArch\"], " REQ "}",
	    "unsupported architecture '(text with control characters)'" },
	{ "[1, 2]", "not a JSON object" },
	{ "{\"hidden_size\": 64,\n \"x\": }", "config.json:2:" },
	{ "", "config.json:1:" },
};
/* clang-format on */

T_TEST(bad_configs_are_rejected)
{
	for (size_t i = 0; i < LLM_NELEM(bad); i++) {
		char *dir = mkckpt(bad[i].cfg, NULL);
		char *cfg = llm_path_join(dir, "config.json");
		struct llm_hfconfig c;
		int rc = llm_hfconfig_load(&c, dir);
		const char *m = llm_errmsg();
		T_CHECKF(rc == -1, "case %zu accepted: %s", i, bad[i].cfg);
		T_CHECKF(strncmp(m, cfg, strlen(cfg)) == 0 && m[strlen(cfg)] == ':' && strstr(m, bad[i].want) &&
			!strchr(m, '\n'),
		    "case %zu\n  message: '%s'\n  wanted:  '%s'", i, m, bad[i].want);
		/* Nothing half-filled survives a failure. */
		T_CHECK(c.family == LLM_FAMILY_NONE && c.hidden_size == 0 && c.bos_id == -1 && c.n_eos == 0);
		free(cfg);
		free(dir);
	}
}

T_TEST(missing_config_is_an_error)
{
	char *dir = llm_path_join(t_tmpdir(), "empty");
	char *want = llm_path_join(dir, "config.json: No such file or directory");
	struct llm_hfconfig c;
	T_CHECK(llm_mkdirs(dir) == 0);
	T_CHECK(llm_hfconfig_load(&c, dir) == -1);
	T_CHECKF(strcmp(llm_errmsg(), want) == 0, "%s", llm_errmsg());
	free(want);
	want = llm_path_join(dir, "nope: No such file or directory");
	char *nope = llm_path_join(dir, "nope");
	T_CHECK(llm_hfconfig_load(&c, nope) == -1);
	T_CHECKF(strcmp(llm_errmsg(), want) == 0, "%s", llm_errmsg());
	free(nope);
	free(want);
	free(dir);
}

T_TEST(generation_config_bos_wins_and_eos_is_a_union)
{
	struct llm_hfconfig c;
	/* DeepSeek-R1-Distill-Qwen-1.5B's pair. */
	char *dir = mkckpt("{\"architectures\": [\"Qwen2ForCausalLM\"], \"hidden_size\": 64, \"num_hidden_layers\": 2,"
			   " \"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 151936,"
			   " \"bos_token_id\": 151643, \"eos_token_id\": 151643}",
	    "{\"_from_model_config\": true, \"bos_token_id\": 151646, \"eos_token_id\": 151643,"
	    " \"do_sample\": true, \"temperature\": 0.6, \"top_p\": 0.95}");
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.bos_id == 151646 && c.n_eos == 1 && c.eos_ids[0] == 151643);
	free(dir);
	/* Union, generation_config's first, no repeats. */
	dir = mkckpt(QWEN ", \"bos_token_id\": 1, \"eos_token_id\": [5, 6, 7]}", "{\"eos_token_id\": [7, 9, 5]}");
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.bos_id == 1 && c.n_eos == 4);
	T_CHECK(c.eos_ids[0] == 7 && c.eos_ids[1] == 9 && c.eos_ids[2] == 5 && c.eos_ids[3] == 6);
	free(dir);
	/* A null bos in generation_config does not erase config's. */
	dir = mkckpt(QWEN ", \"bos_token_id\": 3}", "{\"bos_token_id\": null, \"eos_token_id\": 4}");
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.bos_id == 3 && c.n_eos == 1 && c.eos_ids[0] == 4);
	free(dir);
	/* Only generation_config has ids; and reading config.json by path
	 * still finds generation_config.json beside it. */
	dir = mkckpt(QWEN "}", "{\"bos_token_id\": 0, \"eos_token_id\": [2]}");
	char *cfg = llm_path_join(dir, "config.json");
	T_CHECKF(llm_hfconfig_load(&c, cfg) == 0, "%s", llm_errmsg());
	T_CHECK(c.bos_id == 0 && c.n_eos == 1 && c.eos_ids[0] == 2);
	free(cfg);
	free(dir);
	/* More than LLM_MAX_EOS distinct ids together. */
	dir = mkckpt(QWEN ", \"eos_token_id\": [1, 2, 3, 4, 5]}", "{\"eos_token_id\": [6, 7, 8, 9]}");
	T_CHECK(llm_hfconfig_load(&c, dir) == -1);
	T_CHECKF(strstr(llm_errmsg(), "more than 8 distinct eos ids") != NULL, "%s", llm_errmsg());
	free(dir);
	dir = mkckpt(QWEN ", \"eos_token_id\": [1, 2, 3, 4, 5]}", "{\"eos_token_id\": [5, 4, 3, 2, 1, 6, 7, 8]}");
	T_CHECKF(llm_hfconfig_load(&c, dir) == 0, "%s", llm_errmsg());
	T_CHECK(c.n_eos == 8 && c.eos_ids[0] == 5 && c.eos_ids[7] == 8);
	free(dir);
}

T_TEST(bad_generation_config_is_rejected)
{
	static const struct {
		const char *gen, *want;
	} cases[] = {
		{"{\"eos_token_id\": ", "generation_config.json:1:"},
		{"[]", "generation_config.json: not a JSON object"},
		{"{\"eos_token_id\": 5000}", "generation_config.json: eos_token_id 5000 is outside the vocabulary"},
		{"{\"bos_token_id\": true}", "generation_config.json: key 'bos_token_id': expected an integer"},
	};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		char *dir = mkckpt(QWEN "}", cases[i].gen);
		struct llm_hfconfig c;
		T_CHECKF(llm_hfconfig_load(&c, dir) == -1, "case %zu", i);
		T_CHECKF(strncmp(llm_errmsg(), dir, strlen(dir)) == 0 && strstr(llm_errmsg(), cases[i].want),
		    "case %zu: %s", i, llm_errmsg());
		T_CHECK(c.family == LLM_FAMILY_NONE && c.bos_id == -1);
		free(dir);
	}
}

int
main(void)
{
	T_RUN(qwen2_config_is_read);
	T_RUN(llama_config_is_read);
	T_RUN(mistral_config_is_read);
	T_RUN(phi4_mini_config_is_read);
	T_RUN(gemma3_config_is_read);
	T_RUN(defaults_follow_transformers);
	T_RUN(explicit_values_override_defaults);
	T_RUN(bad_configs_are_rejected);
	T_RUN(missing_config_is_an_error);
	T_RUN(generation_config_bos_wins_and_eos_is_a_union);
	T_RUN(bad_generation_config_is_rejected);
	return T_DONE();
}
