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

/* A size A.key of at most MAX_SIZE, positive unless flags has
 * LLM_CONFIG_GGUF_ZERO; when absent, *out stands unless flags has
 * LLM_CONFIG_GGUF_REQUIRED. */
static int
get_size(const struct llm_gguf *g, const char *arch, const char *key, unsigned flags, int64_t *out)
{
	char k[160];
	uint64_t v;
	int rc, lo = flags & LLM_CONFIG_GGUF_ZERO ? 0 : 1;

	snprintf(k, sizeof(k), "%s.%s", arch, key);
	if ((rc = llm_gguf_get_u64(g, k, &v)) < 0)
		return -1;
	if (rc == 1)
		return flags & LLM_CONFIG_GGUF_REQUIRED ? -1 : 0; /* "missing key" is set */
	if (v < (uint64_t)lo || v > (uint64_t)MAX_SIZE)
		return llm_seterr("%s: key '%s': %" PRIu64 " is out of range (%d to %" PRId64 ")", g->path, k, v, lo,
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

/* A positive real A.key, by flags (hfconfig.h) as get_size. */
static int
get_positive(const struct llm_gguf *g, const char *arch, const char *key, unsigned flags, double *out)
{
	char k[160];
	float f = (float)*out;
	int rc;

	snprintf(k, sizeof(k), "%s.%s", arch, key);
	if (flags & LLM_CONFIG_GGUF_F32) {
		if ((rc = llm_gguf_get_f32(g, k, &f)) < 0)
			return -1;
		if (rc == 0)
			*out = f;
	} else if ((rc = get_real(g, arch, key, out)) < 0)
		return -1;
	if (rc == 1 && (flags & LLM_CONFIG_GGUF_REQUIRED))
		return -1; /* "missing key" is set */
	if (!(*out > 0 && isfinite(*out)))
		return llm_seterr("%s: key '%s': %g is not positive", g->path, k, *out);
	return 0;
}

/* The table's GGUF keys (hfconfig.h; a family's) into c. */
static int
read_keys(struct llm_hfconfig *c, const struct llm_gguf *g, const char *arch, const struct llm_family_spec *fs)
{
	for (size_t i = 0; i < llm_config_nkeys; i++) {
		const struct llm_config_key *k = &llm_config_keys[i];
		void *p = llm_config_key_field(k, fs, c);
		if (!p || !k->gguf)
			continue;
		if (k->type == LLM_CONFIG_SIZE ? get_size(g, arch, k->gguf, k->flags, p) < 0 :
						 get_positive(g, arch, k->gguf, k->flags, p) < 0)
			return -1;
	}
	return 0;
}

/* llama.cpp's gemma3 (src/models/gemma3.cpp): A.attention.sliding_window
 * (absent or 0: none) on the layers A.attention.sliding_window_pattern
 * (default 6) makes local, whose RoPE base is A.rope.freq_base_swa
 * (default 10000), the table's keys; the scores scaled by
 * 1/sqrt(head_dim) (1/sqrt(hidden / heads) for the 62 layers of 27B), the
 * embedding by sqrt(hidden); the norms' weights are 1 + w already (the
 * converter adds 1); no soft-capping. */
static int
gemma3(struct llm_hfconfig *c, const struct llm_gguf *g, const char *arch)
{
	char k[160];

	snprintf(k, sizeof(k), "%s.final_logit_softcapping", arch);
	if (llm_gguf_find_kv(g, k))
		return llm_seterr("%s: key '%s': soft-capping is not supported", g->path, k);
	if (!c->sliding_window)
		c->window_pattern = 0, c->rope_local_theta = 0;
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

/* The family of general.architecture (a new string into *arch) into c,
 * its spec into *fs. */
static int
gguf_family(struct llm_hfconfig *c, const struct llm_gguf *g, char **arch, const struct llm_family_spec **fs)
{
	if (llm_gguf_get_strdup(g, "general.architecture", arch) != 0)
		return -1;
	c->family = llm_family_by_name(*arch);
	if (c->family == LLM_FAMILY_NONE || llm_family_spec(c->family)->no_gguf_arch) {
		char list[128] = "";
		size_t len = 0;
		for (int f = LLM_FAMILY_NONE + 1; f < LLM_FAMILY_COUNT; f++)
			if (!llm_family_spec(f)->no_gguf_arch)
				len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
				    len ? ", " : "", llm_family_name(f));
		return llm_seterr("%s: unsupported architecture '%s' (supported: %s)", g->path, *arch, list);
	}
	*fs = llm_family_spec(c->family);
	snprintf(c->family_name, sizeof(c->family_name), "%s", (*fs)->name);
	snprintf(c->architecture, sizeof(c->architecture), "%s", (*fs)->architectures[0]);
	c->qk_norm = (*fs)->qk_norm;
	return 0;
}

/* A.rope.scaling.type: none, or linear (every inv_freq /
 * A.rope.scaling.factor; gemma3: the global layers'), as freq_factors of
 * that one factor. */
static int
linear_scaling(struct llm_hfconfig *c, const struct llm_gguf *g, const char *arch)
{
	char *scaling = NULL, k[160];
	double f = 0;
	int rc;

	snprintf(k, sizeof(k), "%s.rope.scaling.type", arch);
	if (llm_gguf_get_strdup(g, k, &scaling) < 0)
		return -1;
	rc = -1;
	if (scaling && strcmp(scaling, "linear") == 0) {
		if ((rc = get_real(g, arch, "rope.scaling.factor", &f)) != 0) {
			if (rc == 1)
				llm_seterr("%s: key '%s' 'linear' without '%s.rope.scaling.factor'", g->path, k, arch);
			rc = -1;
		} else if (!(f > 0) || c->rotary_dim / 2 > LLM_MAX_ROPE_FACTORS) {
			llm_seterr("%s: key '%s.rope.scaling.factor': %g is not a positive number", g->path, arch, f);
			rc = -1;
		} else {
			c->rope_scaling.nfactors = (int)(c->rotary_dim / 2);
			for (int i = 0; i < c->rope_scaling.nfactors; i++)
				c->rope_scaling.factors[i] = f;
		}
	} else if (scaling && strcmp(scaling, "none") != 0)
		llm_seterr("%s: key '%s': rope scaling '%s' is not supported", g->path, k, scaling);
	else
		rc = 0;
	free(scaling);
	return rc;
}

/* llama.cpp's converter writes rope_scaling llama3 as the factors that
 * divide each inv_freq, f32 [rotary_dim / 2]; longrope (phi3) as the long
 * and the short ones, with the original context and the attention factor
 * in the metadata. */
static int
rope_factors(struct llm_hfconfig *c, const struct llm_gguf *g, const char *arch)
{
	struct llm_rope_scaling *r = &c->rope_scaling;
	int nlong = 0, nshort = 0, rc;
	char k[160];
	int64_t orig = 0;
	float af;

	if (llm_gguf_find_tensor(g, LLM_GGUF_ROPE_FREQS) && r->nfactors)
		return llm_seterr("%s: tensor '%s' and a linear rope scaling", g->path, LLM_GGUF_ROPE_FREQS);
	if (!r->nfactors && factors(g, LLM_GGUF_ROPE_FREQS, c->rotary_dim, r->factors, &r->nfactors) < 0)
		return -1;
	if (factors(g, LLM_GGUF_ROPE_LONG, c->rotary_dim, r->long_factors, &nlong) < 0 ||
	    (nlong && factors(g, LLM_GGUF_ROPE_SHORT, c->rotary_dim, r->factors, &nshort) < 0))
		return -1;
	if (!nlong) {
		if (llm_gguf_find_tensor(g, LLM_GGUF_ROPE_SHORT))
			return llm_seterr("%s: tensor '%s' without '%s'", g->path, LLM_GGUF_ROPE_SHORT,
			    LLM_GGUF_ROPE_LONG);
		return 0;
	}
	if (!nshort || r->nfactors)
		return llm_seterr("%s: tensor '%s' needs '%s' and no '%s'", g->path, LLM_GGUF_ROPE_LONG,
		    LLM_GGUF_ROPE_SHORT, LLM_GGUF_ROPE_FREQS);
	snprintf(k, sizeof(k), "%s.rope.scaling.attn_factor", arch);
	if (get_size(g, arch, "rope.scaling.original_context_length", LLM_CONFIG_GGUF_REQUIRED, &orig) < 0 ||
	    (rc = llm_gguf_get_f32(g, k, &af)) < 0)
		return -1;
	/* the f32 as it is (hfconfig.c takes transformers' f32 too); absent:
	 * transformers' default for the context's factor */
	double f = (double)c->max_position_embeddings / (double)orig;
	r->attention_factor = rc == 1 ? (float)(f <= 1 ? 1 : sqrt(1 + log(f) / log((double)orig))) : af;
	if (!(r->attention_factor > 0 && isfinite(r->attention_factor)))
		return llm_seterr("%s: key '%s': %g is not a positive number", g->path, k, r->attention_factor);
	r->nfactors = nshort;
	r->original_max_position_embeddings = (double)orig;
	r->longrope = 1;
	return 0;
}

/* The vocabulary (what the embedding has rows for), the dtype, the tying
 * and the biases (what tensors there are), the special token ids. */
static int
gguf_vocab(struct llm_hfconfig *c, const struct llm_gguf *g, const char *arch, const struct llm_family_spec *fs)
{
	static const char *const eos_keys[] = {
		"tokenizer.ggml.eos_token_id",
		"tokenizer.ggml.eot_token_id",
		"tokenizer.ggml.eom_token_id",
	};
	const struct llm_gguf_tensor *e = llm_gguf_find_tensor(g, fs->gguf[LLM_ROLE_EMBED]);
	const struct llm_gguf_kv *tk = llm_gguf_find_kv(g, "tokenizer.ggml.tokens");
	int64_t vocab, id;
	char k[160];

	if (!e)
		return llm_seterr("%s: missing tensor '%s'", g->path, fs->gguf[LLM_ROLE_EMBED]);
	if (e->n_dims != 2 || e->shape[1] != c->hidden_size)
		return llm_seterr("%s: tensor '%s' is not [vocab, %" PRId64 "] ('%s.embedding_length')", g->path,
		    e->name, c->hidden_size, arch);
	c->vocab_size = vocab = e->shape[0];
	if (get_size(g, arch, "vocab_size", 0, &vocab) < 0)
		return -1;
	if (vocab != c->vocab_size)
		return llm_seterr("%s: key '%s.vocab_size' %" PRId64 " differs from the %" PRId64 " rows of '%s'",
		    g->path, arch, vocab, c->vocab_size, e->name);
	if (tk && tk->value.type == LLM_GGUF_ARRAY && tk->value.len > (uint64_t)c->vocab_size)
		return llm_seterr("%s: key 'tokenizer.ggml.tokens': %" PRIu64 " tokens, more than the %" PRId64
				  " rows of '%s'",
		    g->path, tk->value.len, c->vocab_size, e->name);
	c->torch_dtype = llm_dtype_is_float_weight(e->dtype) ? e->dtype : LLM_DT_NONE;
	if (llm_gguf_get_u32(g, "general.file_type", &c->file_type) < 0)
		return -1;
	c->tie_word_embeddings = !llm_gguf_find_tensor(g, fs->gguf[LLM_ROLE_LM_HEAD]);
	snprintf(k, sizeof(k), fs->gguf[LLM_ROLE_BQ], 0);
	c->attention_bias = fs->qkv_bias || llm_gguf_find_tensor(g, k) != NULL;
	if (llm_gguf_token_id(g, "tokenizer.ggml.bos_token_id", (uint64_t)c->vocab_size, &c->bos_id) < 0)
		return -1;
	for (size_t i = 0; i < LLM_NELEM(eos_keys); i++) {
		if (llm_gguf_token_id(g, eos_keys[i], (uint64_t)c->vocab_size, &id) < 0)
			return -1;
		llm_gguf_add_stop_id(c->eos_ids, &c->n_eos, id);
	}
	return 0;
}

int
llm_gguf_config(struct llm_hfconfig *c, const struct llm_gguf *g)
{
	const struct llm_family_spec *fs = NULL;
	char *arch = NULL, k[160];
	int64_t v;
	uint64_t nt = 0;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->bos_id = -1;
	if (gguf_family(c, g, &arch, &fs) < 0 || read_keys(c, g, arch, fs) < 0 ||
	    llm_config_check(c, g->path, arch) < 0)
		goto out;
	v = c->head_dim;
	if (get_size(g, arch, "attention.value_length", 0, &v) < 0)
		goto out;
	if (v != c->head_dim) {
		llm_seterr("%s: key '%s.attention.value_length' %" PRId64 " differs from the key length %" PRId64
			   " (not supported)",
		    g->path, arch, v, c->head_dim);
		goto out;
	}
	if (fs->window == LLM_WINDOW_LOCAL_LAYERS && gemma3(c, g, arch) < 0)
		goto out;
	if (linear_scaling(c, g, arch) < 0 || rope_factors(c, g, arch) < 0)
		goto out;
	snprintf(k, sizeof(k), "%s.expert_count", arch);
	if (llm_gguf_get_u64(g, k, &nt) < 0)
		goto out;
	if (nt > 0) {
		llm_seterr("%s: key '%s': mixture-of-experts models are not supported", g->path, k);
		goto out;
	}
	if (gguf_vocab(c, g, arch, fs) < 0)
		goto out;
	rc = 0;
out:
	free(arch);
	return rc;
}
