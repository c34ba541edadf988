/* hfconfig.c: see hfconfig.h.
 *
 * Defaults follow transformers' Qwen2Config and LlamaConfig, so a config.json
 * that omits a key means what it means to Hugging Face.  The five sizes
 * without which no checkpoint makes sense are required, although
 * transformers has defaults for them: a config.json without them is broken,
 * and guessing a 7B shape would only move the error to the weights.
 * Anything that changes the model's arithmetic in a way llm-* does not
 * implement (RoPE scaling, sliding windows, MLP biases, other activations)
 * is rejected here rather than silently computed wrong later. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hfconfig.h"
#include "../base/json.h"
#include "../base/util.h"

/* Sizes beyond this are corrupt, and would overflow products later. */
#define MAX_SIZE INT32_MAX

static int
size_key(const json_t *j, const char *key, const char *ctx, int required, int64_t *out)
{
	int rc = required ? llm_json_int(j, key, ctx, out) : llm_json_int_opt(j, key, ctx, out);
	if (rc < 0)
		return -1;
	if (rc == 0 && !required)
		return 0; /* absent: the caller's default stands */
	if (*out <= 0)
		return llm_seterr("%s: %s must be positive (got %lld)", ctx, key, (long long)*out);
	if (*out > MAX_SIZE)
		return llm_seterr("%s: %s %lld is too large", ctx, key, (long long)*out);
	return 0;
}

static int
positive_num(const json_t *j, const char *key, const char *ctx, double *out)
{
	if (llm_json_num_opt(j, key, ctx, out) < 0)
		return -1;
	if (!(*out > 0) || !isfinite(*out))
		return llm_seterr("%s: %s must be positive (got %g)", ctx, key, *out);
	return 0;
}

#define FIELD(f) offsetof(struct llm_hfconfig, f)
#define SIZE LLM_CONFIG_SIZE
#define REAL LLM_CONFIG_REAL
#define JREQ LLM_CONFIG_JSON_REQUIRED
#define GREQ LLM_CONFIG_GGUF_REQUIRED

/* one key a row (hfconfig.h); head_dim and max_position_embeddings
 * default to the family spec's in config.json, rotary_dim to head_dim x
 * partial_rotary_factor (llm_config_check) */
/* clang-format off */
const struct llm_config_key llm_config_keys[] = {
	{FIELD(hidden_size), SIZE, -1, "hidden_size", "embedding_length", JREQ | GREQ, 0, 0},
	{FIELD(n_layers), SIZE, -1, "num_hidden_layers", "block_count", JREQ | GREQ, 0, 0},
	{FIELD(n_heads), SIZE, -1, "num_attention_heads", "attention.head_count", JREQ | GREQ, 0, 0},
	{FIELD(intermediate_size), SIZE, -1, "intermediate_size", "feed_forward_length", JREQ | GREQ, 0, 0},
	{FIELD(vocab_size), SIZE, -1, "vocab_size", NULL, JREQ, 0, 0},
	{FIELD(n_kv_heads), SIZE, -1, "num_key_value_heads", "attention.head_count_kv", 0, 0, FIELD(n_heads)},
	{FIELD(head_dim), SIZE, -1, "head_dim", "attention.key_length", 0, 0, 0},
	{FIELD(max_position_embeddings), SIZE, -1, "max_position_embeddings", "context_length", GREQ, 0, 0},
	{FIELD(rms_norm_eps), REAL, -1, "rms_norm_eps", "attention.layer_norm_rms_epsilon", GREQ, 1e-6, 0},
	{FIELD(rope_theta), REAL, -1, "rope_theta", "rope.freq_base", 0, 10000, 0},
	{FIELD(partial_rotary_factor), REAL, -1, "partial_rotary_factor", NULL, 0, 1, 0},
	{FIELD(rotary_dim), SIZE, -1, NULL, "rope.dimension_count", 0, 0, 0},
	{FIELD(sliding_window), SIZE, LLM_WINDOW_ALL_LAYERS, "sliding_window", "attention.sliding_window",
	    LLM_CONFIG_GGUF_ZERO, 0, 0},
	/* Gemma3TextConfig's and llama.cpp's gemma3 */
	{FIELD(sliding_window), SIZE, LLM_WINDOW_LOCAL_LAYERS, "sliding_window", "attention.sliding_window",
	    JREQ | LLM_CONFIG_GGUF_ZERO, 0, 0},
	{FIELD(window_pattern), SIZE, LLM_WINDOW_LOCAL_LAYERS, "sliding_window_pattern",
	    "attention.sliding_window_pattern", JREQ, 6, 0},
	{FIELD(rope_local_theta), REAL, LLM_WINDOW_LOCAL_LAYERS, "rope_local_base_freq", "rope.freq_base_swa",
	    LLM_CONFIG_GGUF_F32, 10000, 0},
};
/* clang-format on */
const size_t llm_config_nkeys = LLM_NELEM(llm_config_keys);

void *
llm_config_key_field(const struct llm_config_key *k, const struct llm_family_spec *fs, struct llm_hfconfig *c)
{
	char *p = (char *)c + k->field;

	if (k->window >= 0 && k->window != (int)fs->window)
		return NULL;
	if (k->from)
		memcpy(p, (char *)c + k->from, sizeof(int64_t));
	else if (k->def && k->type == LLM_CONFIG_SIZE)
		*(int64_t *)(void *)p = (int64_t)k->def;
	else if (k->def)
		*(double *)(void *)p = k->def;
	return p;
}

int
llm_config_check(struct llm_hfconfig *c, const char *ctx, const char *arch)
{
	int64_t r, h;

	if (c->n_heads % c->n_kv_heads != 0)
		return arch ?
		    llm_seterr("%s: key '%s.attention.head_count' %" PRId64 " is not a multiple of "
			       "'%s.attention.head_count_kv' %" PRId64,
			ctx, arch, c->n_heads, arch, c->n_kv_heads) :
		    llm_seterr("%s: num_attention_heads %" PRId64 " is not a multiple of num_key_value_heads %" PRId64,
			ctx, c->n_heads, c->n_kv_heads);
	if (!c->head_dim) {
		if (c->hidden_size % c->n_heads != 0)
			return arch ?
			    llm_seterr("%s: key '%s.embedding_length' %" PRId64 " is not a multiple of "
				       "'%s.attention.head_count' %" PRId64
				       " and there is no '%s.attention.key_length'",
				ctx, arch, c->hidden_size, arch, c->n_heads, arch) :
			    llm_seterr("%s: hidden_size %" PRId64 " is not divisible by num_attention_heads %" PRId64,
				ctx, c->hidden_size, c->n_heads);
		c->head_dim = c->hidden_size / c->n_heads;
	}
	if (c->head_dim % 2 != 0)
		return arch ?
		    llm_seterr("%s: head_dim %" PRId64 " is odd: rotary embedding needs an even head_dim", ctx,
			c->head_dim) :
		    llm_seterr("%s: head_dim %" PRId64 " is odd (rotary embeddings need pairs)", ctx, c->head_dim);
	/* transformers: dim = int(head_dim * partial_rotary_factor) */
	if (!c->rotary_dim)
		c->rotary_dim = (int64_t)((double)c->head_dim * c->partial_rotary_factor);
	r = c->rotary_dim;
	h = c->head_dim;
	if (c->partial_rotary_factor > 1 || r < 2 || r > h || r % 2 || (h - r) % 2)
		return arch ? llm_seterr("%s: key '%s.rope.dimension_count' %" PRId64 " is not an even number up to "
					 "head_dim %" PRId64 " that leaves an even rest",
				  ctx, arch, r, h) :
			      llm_seterr("%s: partial_rotary_factor %g of head_dim %" PRId64 " gives %" PRId64
					 " rotated dims, not an even number of 2 to head_dim that leaves an even rest",
				  ctx, c->partial_rotary_factor, h, r);
	return 0;
}

/* config.json's keys of the table (a family's) into c. */
static int
read_keys(struct llm_hfconfig *c, const json_t *j, const char *ctx, const struct llm_family_spec *fs)
{
	for (size_t i = 0; i < llm_config_nkeys; i++) {
		const struct llm_config_key *k = &llm_config_keys[i];
		void *p = llm_config_key_field(k, fs, c);
		if (!p || !k->json)
			continue;
		if (k->type == LLM_CONFIG_SIZE ? size_key(j, k->json, ctx, k->flags & JREQ, p) < 0 :
						 positive_num(j, k->json, ctx, p) < 0)
			return -1;
	}
	return 0;
}

/* A token id key: absent or null (0 ids), an integer, or an array of them. */
static int
token_ids(const json_t *j, const char *key, const char *ctx, int64_t vocab, int64_t *ids, int *n, int max)
{
	const json_t *v = json_object_get(j, key); /* borrowed */
	size_t count = 0;

	*n = 0;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_array(v))
		count = json_array_size(v);
	else if (json_is_integer(v))
		count = 1;
	else
		return llm_seterr("%s: key '%s': expected an integer or an array of integers", ctx, key);
	if (count > (size_t)max)
		return llm_seterr("%s: %s has %zu ids (at most %d supported)", ctx, key, count, max);
	for (size_t i = 0; i < count; i++) {
		const json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
		if (!json_is_integer(e))
			return llm_seterr("%s: key '%s': expected an integer or an array of integers", ctx, key);
		int64_t id = json_integer_value(e);
		if (id < 0 || id >= vocab)
			return llm_seterr("%s: %s %lld is outside the vocabulary [0, %lld)", ctx, key, (long long)id,
			    (long long)vocab);
		ids[(*n)++] = id;
	}
	return 0;
}

static int
add_eos(struct llm_hfconfig *c, const int64_t *ids, int n, const char *ctx)
{
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < c->n_eos; k++)
			seen |= c->eos_ids[k] == ids[i];
		if (seen)
			continue;
		if (c->n_eos == LLM_MAX_EOS)
			return llm_seterr("%s: more than %d distinct eos ids", ctx, LLM_MAX_EOS);
		c->eos_ids[c->n_eos++] = ids[i];
	}
	return 0;
}

/* The families' architectures ("Qwen2ForCausalLM, LlamaForCausalLM") or,
 * model_types 1, their model types ("qwen2, llama"), for a message. */
static const char *
supported(int model_types, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
	for (int f = LLM_FAMILY_NONE + 1; f < LLM_FAMILY_COUNT; f++) {
		const struct llm_family_spec *fs = llm_family_spec(f);
		for (size_t i = 0; i < LLM_NELEM(fs->architectures) && fs->architectures[i]; i++) {
			len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? ", " : "",
			    model_types ? llm_family_model_type(fs) : fs->architectures[i]);
			if (model_types)
				break;
		}
	}
	return buf;
}

static int
decide_family(struct llm_hfconfig *c, const json_t *j, const char *ctx, const struct llm_family_spec **out)
{
	const json_t *archs = json_object_get(j, "architectures"); /* borrowed */
	const char *arch = NULL, *mt = NULL;
	const struct llm_family_spec *fs = NULL;
	char list[256];

	if (archs && !json_is_null(archs)) {
		if (!json_is_array(archs) || (json_array_size(archs) > 0 && !json_is_string(json_array_get(archs, 0))))
			return llm_seterr("%s: key 'architectures': expected an array of strings", ctx);
		if (json_array_size(archs) > 0)
			arch = json_string_value(json_array_get(archs, 0));
	}
	if (llm_json_str_opt(j, "model_type", ctx, &mt) < 0)
		return -1;
	if (arch) {
		for (int f = LLM_FAMILY_NONE + 1; f < LLM_FAMILY_COUNT && !fs; f++) {
			const struct llm_family_spec *s = llm_family_spec(f);
			for (size_t i = 0; i < LLM_NELEM(s->architectures) && s->architectures[i]; i++)
				if (strcmp(arch, s->architectures[i]) == 0)
					fs = s;
		}
		if (!fs)
			return llm_seterr("%s: unsupported architecture '%s' (supported: %s)", ctx,
			    llm_json_shown(arch), supported(0, list, sizeof(list)));
		if (mt && strcmp(mt, llm_family_model_type(fs)) != 0)
			return llm_seterr("%s: model_type '%s' does not match architecture '%s'", ctx,
			    llm_json_shown(mt), arch);
	} else if (mt) {
		fs = llm_family_spec(llm_family_by_model_type(mt));
		if (!fs)
			return llm_seterr("%s: unsupported model_type '%s' (supported: %s)", ctx, llm_json_shown(mt),
			    supported(1, list, sizeof(list)));
	} else
		return llm_seterr("%s: neither 'architectures' nor 'model_type' given", ctx);
	c->family = fs->family;
	snprintf(c->family_name, sizeof(c->family_name), "%s", fs->name);
	snprintf(c->architecture, sizeof(c->architecture), "%s", arch ? arch : fs->architectures[0]);
	c->max_position_embeddings = fs->max_position_embeddings;
	*out = fs;
	return 0;
}

/* transformers' _compute_longrope_parameters: with a top-level
 * original_max_position_embeddings (Phi-3), factor is max_position_embeddings
 * over it; else the threshold is max_position_embeddings and factor
 * rope_scaling's.  The attention factor, when not given, is
 * sqrt(1 + ln factor / ln original) for a factor above 1, else 1. */
static int
longrope(struct llm_hfconfig *c, const json_t *j, const char *ctx)
{
	struct llm_rope_scaling *s = &c->rope_scaling;
	int64_t orig = 0;

	if (size_key(j, "original_max_position_embeddings", ctx, 0, &orig) < 0)
		return -1;
	if (s->nfactors != c->rotary_dim / 2)
		return llm_seterr("%s: rope_scaling: %d short_factor values, not rotary_dim / 2 = %lld", ctx,
		    s->nfactors, (long long)(c->rotary_dim / 2));
	if (orig) {
		s->original_max_position_embeddings = (double)orig;
		s->factor = (double)c->max_position_embeddings / (double)orig;
	} else {
		s->original_max_position_embeddings = (double)c->max_position_embeddings;
		if (!s->factor && !s->attention_factor)
			return llm_seterr(
			    "%s: rope_scaling 'longrope' needs 'factor', 'attention_factor' or a top-level "
			    "'original_max_position_embeddings'",
			    ctx);
	}
	if (!s->attention_factor)
		s->attention_factor = s->factor <= 1 ?
		    1 :
		    sqrt(1 + log(s->factor) / log(s->original_max_position_embeddings));
	/* transformers holds the factors as a float32 tensor and scales the
	 * float32 cos and sin by the factor as a float32 (as llama.cpp's
	 * converter stores them): the values taken are those */
	s->attention_factor = (float)s->attention_factor;
	for (int i = 0; i < s->nfactors; i++) {
		s->factors[i] = (float)s->factors[i];
		s->long_factors[i] = (float)s->long_factors[i];
	}
	return 0;
}

/* Gemma3TextConfig's keys but the table's (their defaults are the family
 * spec's, merged in): hidden_activation, query_pre_attn_scalar,
 * layer_types in place of sliding_window_pattern; no soft-capping. */
static int
gemma3(struct llm_hfconfig *c, const json_t *j, const char *ctx)
{
	const char *s = NULL;
	double qpas = 0;
	const json_t *lt = json_object_get(j, "layer_types"); /* borrowed */
	static const char *const capped[] = {"final_logit_softcapping", "attn_logit_softcapping"};

	if (llm_json_str(j, "hidden_activation", ctx, &s) < 0)
		return -1;
	if (strcmp(s, "gelu_pytorch_tanh") != 0)
		return llm_seterr("%s: hidden_activation '%s' is not supported (only 'gelu_pytorch_tanh')", ctx,
		    llm_json_shown(s));
	c->act = LLM_ACT_GELU_TANH;
	for (size_t i = 0; i < LLM_NELEM(capped); i++) {
		const json_t *v = json_object_get(j, capped[i]); /* borrowed */
		if (v && !json_is_null(v))
			return llm_seterr("%s: %s is not supported (Gemma 3 has none)", ctx, capped[i]);
	}
	if (positive_num(j, "query_pre_attn_scalar", ctx, &qpas) < 0)
		return -1;
	if (lt && !json_is_null(lt)) {
		/* a repeating pattern: local layers, then one global */
		size_t n = json_array_size(lt), first = n;
		for (size_t i = 0; i < n && first == n; i++)
			if (json_is_string(json_array_get(lt, i)) &&
			    strcmp(json_string_value(json_array_get(lt, i)), "full_attention") == 0)
				first = i;
		if (!json_is_array(lt) || n != (size_t)c->n_layers)
			return llm_seterr("%s: layer_types: expected an array of %lld strings", ctx,
			    (long long)c->n_layers);
		c->window_pattern = first == n ? 0 : (int64_t)first + 1;
		for (size_t i = 0; i < n; i++) {
			const char *t = json_string_value(json_array_get(lt, i));
			int local = llm_layer_local(&(struct llm_model_config){.window_pattern = c->window_pattern},
			    (int64_t)i);
			if (!t || strcmp(t, local ? "sliding_attention" : "full_attention") != 0)
				return llm_seterr(
				    "%s: layer_types[%zu]: '%s', where the pattern of %lld layers has '%s' "
				    "(only a repeating pattern is supported)",
				    ctx, i, t ? llm_json_shown(t) : "(not a string)", (long long)c->window_pattern,
				    local ? "sliding_attention" : "full_attention");
		}
	}
	c->attn_scale = 1 / sqrt(qpas);
	/* Gemma3TextScaledWordEmbedding: embed_scale, a float32 tensor */
	c->embed_scale = (float)sqrt((double)c->hidden_size);
	c->post_norms = 1;
	return 0;
}

/* The config to read, a new reference: a multimodal config's text model
 * (the family's wrapper_config, with the top's token ids and dtype where
 * it lacks them, and the family's architecture), then the family's
 * defaults for the keys it lacks; NULL with llm_errmsg. */
static json_t *
text_config(struct llm_hfconfig *c, const json_t *j, const char *ctx)
{
	const json_t *archs = json_object_get(j, "architectures"), *a0 = json_array_get(archs, 0); /* borrowed */
	const struct llm_family_spec *fs = NULL;
	json_t *t;

	for (int f = LLM_FAMILY_NONE + 1; f < LLM_FAMILY_COUNT && json_is_string(a0); f++) {
		const struct llm_family_spec *s = llm_family_spec(f);
		if (s->wrapper_arch && strcmp(json_string_value(a0), s->wrapper_arch) == 0)
			fs = s;
	}
	if (fs) {
		static const char *const top[] = {"bos_token_id", "eos_token_id", "torch_dtype", "dtype",
			"tie_word_embeddings"};
		const json_t *sub = json_object_get(j, fs->wrapper_config); /* borrowed */
		if (!json_is_object(sub))
			return llm_seterr("%s: %s without an object '%s'", ctx, fs->wrapper_arch, fs->wrapper_config),
			       NULL;
		t = json_deep_copy(sub);
		for (size_t i = 0; i < LLM_NELEM(top); i++)
			if (!json_object_get(t, top[i]) && json_object_get(j, top[i]))
				json_object_set(t, top[i], json_object_get(j, top[i]));
		json_object_set_new(t, "architectures", json_pack("[s]", fs->architectures[0]));
		json_object_set_new(t, "model_type", json_string(llm_family_model_type(fs)));
		snprintf(c->tensor_prefix, sizeof(c->tensor_prefix), "%s", fs->wrapper_prefix);
	} else
		t = json_deep_copy(j);
	return t;
}

/* Keys of the family's config class that the config lacks take its
 * defaults (family.h). */
static void
add_defaults(json_t *t, const struct llm_family_spec *fs)
{
	json_t *d = fs->defaults ? json_loads(fs->defaults, 0, NULL) : NULL, *v;
	const char *k;

	json_object_foreach (d, k, v) {
		if (!json_object_get(t, k))
			json_object_set(t, k, v);
	}
	json_decref(d);
}

static int parse_body(struct llm_hfconfig *c, const json_t *j, const char *ctx, const struct llm_family_spec *fs);

static int
parse_config(struct llm_hfconfig *c, const json_t *j0, const char *ctx)
{
	const struct llm_family_spec *fs = NULL;
	json_t *j;
	int rc;

	if (!json_is_object(j0))
		return llm_seterr("%s: not a JSON object", ctx);
	if (!(j = text_config(c, j0, ctx)))
		return -1;
	rc = decide_family(c, j, ctx, &fs);
	if (rc == 0 && c->tensor_prefix[0])
		snprintf(c->architecture, sizeof(c->architecture), "%s", fs->wrapper_arch);
	if (rc == 0) {
		add_defaults(j, fs);
		rc = parse_body(c, j, ctx, fs);
	}
	json_decref(j);
	return rc;
}

static int
parse_body(struct llm_hfconfig *c, const json_t *j, const char *ctx, const struct llm_family_spec *fs)
{
	const char *s;
	int b;

	c->head_dim = fs->head_dim;
	c->qk_norm = fs->qk_norm;
	if (read_keys(c, j, ctx, fs) < 0 || llm_config_check(c, ctx, NULL) < 0)
		return -1;
	if (llm_json_bool_opt(j, "tie_word_embeddings", ctx, &c->tie_word_embeddings) < 0)
		return -1;
	if (llm_rope_scaling_load(json_object_get(j, "rope_scaling"), ctx, &c->rope_scaling) < 0)
		return -1;
	if (c->rope_scaling.nfactors && !c->rope_scaling.longrope)
		return llm_seterr("%s: rope_scaling 'freq_factors' is not supported (only 'default', 'linear', "
				  "'llama3' and 'longrope')",
		    ctx);
	if (c->rope_scaling.longrope && longrope(c, j, ctx) < 0)
		return -1;
	if (c->rope_scaling.linear) {
		/* _compute_linear_scaling_rope_parameters: inv_freq / factor,
		 * as freq_factors of the one factor */
		struct llm_rope_scaling *r = &c->rope_scaling;
		r->nfactors = (int)(c->rotary_dim / 2);
		if (r->nfactors > LLM_MAX_ROPE_FACTORS)
			return llm_seterr("%s: rope_scaling 'linear': rotary_dim %lld is too large", ctx,
			    (long long)c->rotary_dim);
		for (int i = 0; i < r->nfactors; i++)
			r->factors[i] = r->factor;
		r->linear = 0;
	}
	if (fs->window == LLM_WINDOW_LOCAL_LAYERS) {
		if (gemma3(c, j, ctx) < 0)
			return -1;
	} else {
		s = "silu";
		if (llm_json_str_opt(j, "hidden_act", ctx, &s) < 0)
			return -1;
		if (strcmp(s, "silu") != 0)
			return llm_seterr("%s: hidden_act '%s' is not supported (only 'silu')", ctx, llm_json_shown(s));
	}

	if (fs->qkv_bias) {
		/* Qwen2Attention has q/k/v biases whatever the config says. */
		c->attention_bias = 1;
	} else {
		if (llm_json_bool_opt(j, "attention_bias", ctx, &c->attention_bias) < 0 ||
		    llm_json_bool_opt(j, "mlp_bias", ctx, &c->mlp_bias) < 0)
			return -1;
		if (c->mlp_bias)
			return llm_seterr("%s: mlp_bias true is not supported", ctx);
	}
	if (fs->window == LLM_WINDOW_REFUSED) {
		b = 0;
		if (llm_json_bool_opt(j, "use_sliding_window", ctx, &b) < 0)
			return -1;
		if (b)
			return llm_seterr("%s: use_sliding_window true is not supported", ctx);
	}

	/* Newer transformers write "dtype", older ones "torch_dtype". */
	s = NULL;
	if (llm_json_str_opt(j, "torch_dtype", ctx, &s) < 0)
		return -1;
	if (!s && llm_json_str_opt(j, "dtype", ctx, &s) < 0)
		return -1;
	if (s) {
		if (strcmp(s, "float32") == 0)
			c->torch_dtype = LLM_DT_F32;
		else if (strcmp(s, "float16") == 0)
			c->torch_dtype = LLM_DT_F16;
		else if (strcmp(s, "bfloat16") == 0)
			c->torch_dtype = LLM_DT_BF16;
		else
			return llm_seterr("%s: torch_dtype '%s' is not supported "
					  "(float32, float16, bfloat16)",
			    ctx, llm_json_shown(s));
	}
	return 0;
}

/* Special token ids: config.json's, then generation_config.json's, whose
 * bos wins and whose eos ids come first (transformers' generate() uses
 * generation_config). */
static int
parse_tokens(struct llm_hfconfig *c, const json_t *j, const char *ctx, const json_t *g, const char *gctx)
{
	int64_t ids[LLM_MAX_EOS];
	int n;

	c->bos_id = -1;
	c->n_eos = 0;
	if (g) {
		if (!json_is_object(g))
			return llm_seterr("%s: not a JSON object", gctx);
		if (token_ids(g, "bos_token_id", gctx, c->vocab_size, ids, &n, 1) < 0)
			return -1;
		if (n)
			c->bos_id = ids[0];
		if (token_ids(g, "eos_token_id", gctx, c->vocab_size, ids, &n, LLM_MAX_EOS) < 0 ||
		    add_eos(c, ids, n, gctx) < 0)
			return -1;
	}
	if (token_ids(j, "bos_token_id", ctx, c->vocab_size, ids, &n, 1) < 0)
		return -1;
	if (n && c->bos_id < 0)
		c->bos_id = ids[0];
	if (token_ids(j, "eos_token_id", ctx, c->vocab_size, ids, &n, LLM_MAX_EOS) < 0 || add_eos(c, ids, n, ctx) < 0)
		return -1;
	return 0;
}

int
llm_hfconfig_load(struct llm_hfconfig *c, const char *path)
{
	struct stat sb;
	char *cpath, *gpath, *dir;
	json_t *j = NULL, *g = NULL; /* owned */
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->bos_id = -1;
	if (stat(path, &sb) < 0)
		return llm_seterr("%s:", path);
	if (S_ISDIR(sb.st_mode)) {
		dir = llm_xstrdup(path);
		cpath = llm_path_join(path, "config.json");
	} else {
		const char *slash = strrchr(path, '/');
		dir = slash ? llm_xasprintf("%.*s", (int)(slash - path + 1), path) : llm_xstrdup(".");
		cpath = llm_xstrdup(path);
	}
	gpath = llm_path_join(dir, "generation_config.json");
	if (!(j = llm_json_load(cpath)) || parse_config(c, j, cpath) < 0)
		goto out;
	if (llm_file_exists(gpath) && !(g = llm_json_load(gpath)))
		goto out;
	if (parse_tokens(c, j, cpath, g, gpath) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0) {
		memset(c, 0, sizeof(*c));
		c->bos_id = -1;
	}
	json_decref(j);
	json_decref(g);
	free(cpath);
	free(gpath);
	free(dir);
	return rc;
}

void
llm_hfconfig_model_config(const struct llm_hfconfig *c, struct llm_model_config *out)
{
	*out = (struct llm_model_config){c->hidden_size, c->n_layers, c->n_heads, c->n_kv_heads, c->head_dim,
		c->intermediate_size, c->vocab_size, c->max_position_embeddings, c->rms_norm_eps, c->rope_theta,
		c->tie_word_embeddings, c->attention_bias, c->qk_norm, c->sliding_window, c->rope_scaling,
		c->rotary_dim ? c->rotary_dim : c->head_dim, c->post_norms, c->act, c->embed_scale, c->attn_scale,
		c->window_pattern, c->rope_local_theta};
}
