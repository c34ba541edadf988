/* gguf_config.c: see gguf_config.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "gguf_config.h"
#include "../base/json.h"
#include "../base/util.h"

#define NO_ID 0xffffffffu /* llama.cpp's "none" for token ids */

int
llm_gguf_token_id(const struct llm_gguf *g, const char *key, uint64_t n, int64_t *out)
{
	uint64_t v;
	int rc;

	*out = -1;
	if ((rc = llm_gguf_get_u64(g, key, &v)) < 0)
		return -1;
	if (rc == 1 || v == NO_ID)
		return 0;
	if (v >= n)
		return llm_seterr("%s: key '%s': token id %" PRIu64 " is outside the vocabulary of %" PRIu64 " tokens",
		    g->path, key, v, n);
	*out = (int64_t)v;
	return 0;
}

void
llm_gguf_add_stop_id(int64_t *ids, int *n, int64_t id)
{
	if (id < 0)
		return;
	for (int i = 0; i < *n; i++)
		if (ids[i] == id)
			return;
	if (*n < LLM_MAX_EOS)
		ids[(*n)++] = id;
}

#define MAX_SIZE (INT64_C(1) << 24) /* a sanity bound for sizes and counts */

/* ---- hyperparameters ---- */

/* A positive integer A.key (def when absent and def > 0; required when def
 * is 0) of at most MAX_SIZE. */
static int
get_size(const struct llm_gguf *g, const char *arch, const char *key, int64_t def, int64_t *out)
{
	char k[160];
	uint64_t v;
	int rc;

	snprintf(k, sizeof(k), "%s.%s", arch, key);
	if ((rc = llm_gguf_get_u64(g, k, &v)) < 0)
		return -1;
	if (rc == 1) {
		if (!def)
			return -1; /* "missing key" is set */
		*out = def;
		return 0;
	}
	if (v == 0 || v > (uint64_t)MAX_SIZE)
		return llm_seterr("%s: key '%s': %" PRIu64 " is out of range (1 to %" PRId64 ")", g->path, k, v,
		    MAX_SIZE);
	*out = (int64_t)v;
	return 0;
}

/* A float A.key: 1 when absent; an F32 value becomes the shortest decimal
 * that reads back as the same f32. */
static int
get_real(const struct llm_gguf *g, const char *arch, const char *key, double *out)
{
	char k[160], buf[64];
	const struct llm_gguf_kv *kv;
	double v;
	int rc;

	snprintf(k, sizeof(k), "%s.%s", arch, key);
	if ((rc = llm_gguf_get_f64(g, k, &v)) != 0)
		return rc;
	if (!isfinite(v))
		return llm_seterr("%s: key '%s': %g is not a finite number", g->path, k, v);
	kv = llm_gguf_find_kv(g, k);
	if (kv->value.type == LLM_GGUF_F32) {
		for (int p = 1; p <= 9; p++) {
			snprintf(buf, sizeof(buf), "%.*g", p, v);
			if ((float)strtod(buf, NULL) == (float)v) {
				v = strtod(buf, NULL);
				break;
			}
		}
	}
	*out = v;
	return 0;
}

/* llama.cpp's gemma3 (src/models/gemma3.cpp): A.attention.sliding_window
 * (absent or 0: none) on the layers A.attention.sliding_window_pattern
 * (default 6) makes local, whose RoPE base is A.rope.freq_base_swa
 * (default 10000); the scores scaled by 1/sqrt(head_dim) (1/sqrt(hidden /
 * heads) for the 62 layers of 27B), the embedding by sqrt(hidden); the
 * norms' weights are 1 + w already (the converter adds 1); no soft-capping. */
static int
gemma3(struct llm_hfconfig *c, const struct llm_gguf *g, const char *arch)
{
	char k[160];
	uint64_t w = 0, pat = 6;
	int rc;

	snprintf(k, sizeof(k), "%s.final_logit_softcapping", arch);
	if (llm_gguf_find_kv(g, k))
		return llm_seterr("%s: key '%s': soft-capping is not supported", g->path, k);
	snprintf(k, sizeof(k), "%s.attention.sliding_window", arch);
	if (llm_gguf_get_u64(g, k, &w) < 0)
		return -1;
	snprintf(k, sizeof(k), "%s.attention.sliding_window_pattern", arch);
	if (llm_gguf_get_u64(g, k, &pat) < 0)
		return -1;
	if (w > (uint64_t)MAX_SIZE || pat == 0 || pat > (uint64_t)MAX_SIZE)
		return llm_seterr("%s: keys '%s.attention.sliding_window' %" PRIu64 " and '%s' %" PRIu64
				  " are out of range",
		    g->path, arch, w, k, pat);
	if (w) {
		float base = 10000;
		snprintf(k, sizeof(k), "%s.rope.freq_base_swa", arch);
		if ((rc = llm_gguf_get_f32(g, k, &base)) < 0)
			return -1;
		if (!(base > 0 && isfinite(base)))
			return llm_seterr("%s: key '%s': %g is not positive", g->path, k, (double)base);
		c->sliding_window = (int64_t)w;
		c->window_pattern = (int64_t)pat;
		c->rope_local_theta = base;
	}
	c->act = LLM_ACT_GELU_TANH;
	c->post_norms = 1;
	c->embed_scale = (float)sqrt((double)c->hidden_size);
	c->attn_scale = 1 / sqrt(c->n_layers == 62 ? (double)(c->hidden_size / c->n_heads) : (double)c->head_dim);
	return 0;
}

/* The RoPE factors tensor name, if present: f32 [rotary_dim / 2] of
 * positive numbers into out, *n of them (0 when absent). */
static int
factors(const struct llm_gguf *g, const char *name, int64_t rotary_dim, double *out, int *n)
{
	const struct llm_gguf_tensor *rf = llm_gguf_find_tensor(g, name);

	*n = 0;
	if (!rf)
		return 0;
	if (rf->ggml_type != LLM_GGML_F32 || rf->n_dims != 1 || rf->shape[0] != rotary_dim / 2 ||
	    rf->shape[0] > LLM_MAX_ROPE_FACTORS)
		return llm_seterr("%s: tensor '%s' is not f32 [%" PRId64 "] (rotary_dim / 2)", g->path, rf->name,
		    rotary_dim / 2);
	for (int64_t i = 0; i < rf->shape[0]; i++) {
		float f;
		memcpy(&f, (const char *)rf->data + 4 * i, 4);
		if (!(f > 0 && isfinite(f)))
			return llm_seterr("%s: tensor '%s': factor %" PRId64 " is %g, not a positive number", g->path,
			    rf->name, i, (double)f);
		out[i] = f;
	}
	*n = (int)rf->shape[0];
	return 0;
}

int
llm_gguf_config(struct llm_hfconfig *c, const struct llm_gguf *g)
{
	char *arch = NULL, *scaling = NULL, k[160];
	const struct llm_family_spec *fs;
	const struct llm_gguf_tensor *e;
	int64_t v, vocab;
	uint64_t nt = 0;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->bos_id = -1;
	if (llm_gguf_get_strdup(g, "general.architecture", &arch) != 0)
		goto out;
	c->family = llm_family_by_name(arch);
	if (c->family == LLM_FAMILY_NONE || llm_family_spec(c->family)->no_gguf_arch) {
		char list[128] = "";
		size_t len = 0;
		for (int f = LLM_FAMILY_NONE + 1; f < LLM_FAMILY_COUNT; f++)
			if (!llm_family_spec(f)->no_gguf_arch)
				len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
				    len ? ", " : "", llm_family_name(f));
		llm_seterr("%s: unsupported architecture '%s' (supported: %s)", g->path, arch, list);
		goto out;
	}
	fs = llm_family_spec(c->family);
	snprintf(c->family_name, sizeof(c->family_name), "%s", fs->name);
	snprintf(c->architecture, sizeof(c->architecture), "%s", fs->architectures[0]);
	c->qk_norm = fs->qk_norm;

	if (get_size(g, arch, "block_count", 0, &c->n_layers) < 0 ||
	    get_size(g, arch, "embedding_length", 0, &c->hidden_size) < 0 ||
	    get_size(g, arch, "feed_forward_length", 0, &c->intermediate_size) < 0 ||
	    get_size(g, arch, "attention.head_count", 0, &c->n_heads) < 0 ||
	    get_size(g, arch, "attention.head_count_kv", c->n_heads, &c->n_kv_heads) < 0 ||
	    get_size(g, arch, "context_length", 0, &c->max_position_embeddings) < 0)
		goto out;
	if (get_real(g, arch, "attention.layer_norm_rms_epsilon", &c->rms_norm_eps) != 0)
		goto out;
	if (c->rms_norm_eps <= 0) {
		llm_seterr("%s: key '%s.attention.layer_norm_rms_epsilon': %g is not positive", g->path, arch,
		    c->rms_norm_eps);
		goto out;
	}
	c->rope_theta = 10000.0;
	if (get_real(g, arch, "rope.freq_base", &c->rope_theta) < 0)
		goto out;
	if (c->rope_theta <= 0) {
		llm_seterr("%s: key '%s.rope.freq_base': %g is not positive", g->path, arch, c->rope_theta);
		goto out;
	}
	if (c->n_heads % c->n_kv_heads) {
		llm_seterr("%s: key '%s.attention.head_count' %" PRId64 " is not a multiple of "
			   "'%s.attention.head_count_kv' %" PRId64,
		    g->path, arch, c->n_heads, arch, c->n_kv_heads);
		goto out;
	}
	if (c->hidden_size % c->n_heads == 0)
		c->head_dim = c->hidden_size / c->n_heads;
	if (get_size(g, arch, "attention.key_length", c->head_dim ? c->head_dim : 0, &c->head_dim) < 0) {
		if (!c->head_dim)
			llm_seterr("%s: key '%s.embedding_length' %" PRId64 " is not a multiple of "
				   "'%s.attention.head_count' %" PRId64 " and there is no '%s.attention.key_length'",
			    g->path, arch, c->hidden_size, arch, c->n_heads, arch);
		goto out;
	}
	if (get_size(g, arch, "attention.value_length", c->head_dim, &v) < 0)
		goto out;
	if (v != c->head_dim) {
		llm_seterr("%s: key '%s.attention.value_length' %" PRId64 " differs from the key length %" PRId64
			   " (not supported)",
		    g->path, arch, v, c->head_dim);
		goto out;
	}
	if (c->head_dim % 2) {
		llm_seterr("%s: head_dim %" PRId64 " is odd: rotary embedding needs an even head_dim", g->path,
		    c->head_dim);
		goto out;
	}
	if (get_size(g, arch, "rope.dimension_count", c->head_dim, &c->rotary_dim) < 0)
		goto out;
	if (c->rotary_dim > c->head_dim || c->rotary_dim % 2 || (c->head_dim - c->rotary_dim) % 2) {
		llm_seterr("%s: key '%s.rope.dimension_count' %" PRId64 " is not an even number up to head_dim %" PRId64
			   " that leaves an even rest",
		    g->path, arch, c->rotary_dim, c->head_dim);
		goto out;
	}
	if (fs->window == LLM_WINDOW_LOCAL_LAYERS && gemma3(c, g, arch) < 0)
		goto out;
	if (fs->window == LLM_WINDOW_ALL_LAYERS) {
		/* 0: none (llama.cpp's converter writes 0 for a null window) */
		uint64_t w = 0;
		snprintf(k, sizeof(k), "%s.attention.sliding_window", arch);
		if (llm_gguf_get_u64(g, k, &w) < 0)
			goto out;
		if (w > (uint64_t)MAX_SIZE) {
			llm_seterr("%s: key '%s': %" PRIu64 " is out of range (0 to %" PRId64 ")", g->path, k, w,
			    MAX_SIZE);
			goto out;
		}
		c->sliding_window = (int64_t)w;
	}
	snprintf(k, sizeof(k), "%s.rope.scaling.type", arch);
	if ((rc = llm_gguf_get_strdup(g, k, &scaling)) < 0)
		goto out;
	rc = -1;
	if (scaling && strcmp(scaling, "linear") == 0) {
		/* every inv_freq / A.rope.scaling.factor (gemma3: the global
		 * layers'), as freq_factors of that one factor */
		double f = 0;
		if ((rc = get_real(g, arch, "rope.scaling.factor", &f)) != 0) {
			if (rc == 1)
				llm_seterr("%s: key '%s' 'linear' without '%s.rope.scaling.factor'", g->path, k, arch);
			rc = -1;
			goto out;
		}
		rc = -1;
		if (!(f > 0) || c->rotary_dim / 2 > LLM_MAX_ROPE_FACTORS) {
			llm_seterr("%s: key '%s.rope.scaling.factor': %g is not a positive number", g->path, arch, f);
			goto out;
		}
		c->rope_scaling.nfactors = (int)(c->rotary_dim / 2);
		for (int i = 0; i < c->rope_scaling.nfactors; i++)
			c->rope_scaling.factors[i] = f;
	} else if (scaling && strcmp(scaling, "none") != 0) {
		llm_seterr("%s: key '%s': rope scaling '%s' is not supported", g->path, k, scaling);
		goto out;
	}
	/* llama.cpp's converter writes rope_scaling llama3 as the factors
	 * that divide each inv_freq, f32 [rotary_dim / 2]; longrope (phi3)
	 * as the long and the short ones, with the original context and the
	 * attention factor in the metadata */
	if (llm_gguf_find_tensor(g, LLM_GGUF_ROPE_FREQS) && c->rope_scaling.nfactors) {
		llm_seterr("%s: tensor '%s' and a linear rope scaling", g->path, LLM_GGUF_ROPE_FREQS);
		goto out;
	}
	if (!c->rope_scaling.nfactors &&
	    factors(g, LLM_GGUF_ROPE_FREQS, c->rotary_dim, c->rope_scaling.factors, &c->rope_scaling.nfactors) < 0)
		goto out;
	int nlong = 0, nshort = 0;
	if (factors(g, LLM_GGUF_ROPE_LONG, c->rotary_dim, c->rope_scaling.long_factors, &nlong) < 0 ||
	    (nlong && factors(g, LLM_GGUF_ROPE_SHORT, c->rotary_dim, c->rope_scaling.factors, &nshort) < 0))
		goto out;
	if (nlong) {
		struct llm_rope_scaling *r = &c->rope_scaling;
		int64_t orig;
		if (!nshort || r->nfactors) {
			llm_seterr("%s: tensor '%s' needs '%s' and no '%s'", g->path, LLM_GGUF_ROPE_LONG,
			    LLM_GGUF_ROPE_SHORT, LLM_GGUF_ROPE_FREQS);
			goto out;
		}
		float af;
		snprintf(k, sizeof(k), "%s.rope.scaling.attn_factor", arch);
		if (get_size(g, arch, "rope.scaling.original_context_length", 0, &orig) < 0 ||
		    (rc = llm_gguf_get_f32(g, k, &af)) < 0)
			goto out;
		/* the f32 as it is (hfconfig.c takes transformers' f32 too);
		 * absent: transformers' default for the context's factor */
		double f = (double)c->max_position_embeddings / (double)orig;
		r->attention_factor = rc == 1 ? (float)(f <= 1 ? 1 : sqrt(1 + log(f) / log((double)orig))) : af;
		rc = -1;
		if (!(r->attention_factor > 0 && isfinite(r->attention_factor))) {
			llm_seterr("%s: key '%s': %g is not a positive number", g->path, k, r->attention_factor);
			goto out;
		}
		r->nfactors = nshort;
		r->original_max_position_embeddings = (double)orig;
		r->longrope = 1;
	} else if (llm_gguf_find_tensor(g, LLM_GGUF_ROPE_SHORT)) {
		llm_seterr("%s: tensor '%s' without '%s'", g->path, LLM_GGUF_ROPE_SHORT, LLM_GGUF_ROPE_LONG);
		goto out;
	}
	snprintf(k, sizeof(k), "%s.expert_count", arch);
	if (llm_gguf_get_u64(g, k, &nt) < 0)
		goto out;
	if (nt > 0) {
		llm_seterr("%s: key '%s': mixture-of-experts models are not supported", g->path, k);
		goto out;
	}

	/* The vocabulary is what the embedding has rows for. */
	e = llm_gguf_find_tensor(g, fs->gguf[LLM_ROLE_EMBED]);
	if (!e) {
		llm_seterr("%s: missing tensor '%s'", g->path, fs->gguf[LLM_ROLE_EMBED]);
		goto out;
	}
	if (e->n_dims != 2 || e->shape[1] != c->hidden_size) {
		llm_seterr("%s: tensor '%s' is not [vocab, %" PRId64 "] ('%s.embedding_length')", g->path, e->name,
		    c->hidden_size, arch);
		goto out;
	}
	c->vocab_size = e->shape[0];
	if (get_size(g, arch, "vocab_size", c->vocab_size, &vocab) < 0)
		goto out;
	if (vocab != c->vocab_size) {
		llm_seterr("%s: key '%s.vocab_size' %" PRId64 " differs from the %" PRId64 " rows of '%s'", g->path,
		    arch, vocab, c->vocab_size, e->name);
		goto out;
	}
	const struct llm_gguf_kv *tk = llm_gguf_find_kv(g, "tokenizer.ggml.tokens");
	if (tk && tk->value.type == LLM_GGUF_ARRAY && tk->value.len > (uint64_t)c->vocab_size) {
		llm_seterr("%s: key 'tokenizer.ggml.tokens': %" PRIu64 " tokens, more than the %" PRId64
			   " rows of '%s'",
		    g->path, tk->value.len, c->vocab_size, e->name);
		goto out;
	}
	c->torch_dtype = llm_dtype_is_float_weight(e->dtype) ? e->dtype : LLM_DT_NONE;
	if (llm_gguf_get_u32(g, "general.file_type", &c->file_type) < 0)
		goto out;
	c->tie_word_embeddings = !llm_gguf_find_tensor(g, fs->gguf[LLM_ROLE_LM_HEAD]);
	snprintf(k, sizeof(k), fs->gguf[LLM_ROLE_BQ], 0);
	c->attention_bias = fs->qkv_bias || llm_gguf_find_tensor(g, k) != NULL;

	int64_t id;
	if (llm_gguf_token_id(g, "tokenizer.ggml.bos_token_id", (uint64_t)c->vocab_size, &c->bos_id) < 0)
		goto out;
	static const char *const eos_keys[] = {
		"tokenizer.ggml.eos_token_id",
		"tokenizer.ggml.eot_token_id",
		"tokenizer.ggml.eom_token_id",
	};
	for (size_t i = 0; i < LLM_NELEM(eos_keys); i++) {
		if (llm_gguf_token_id(g, eos_keys[i], (uint64_t)c->vocab_size, &id) < 0)
			goto out;
		llm_gguf_add_stop_id(c->eos_ids, &c->n_eos, id);
	}
	rc = 0;
out:
	free(arch);
	free(scaling);
	return rc;
}
