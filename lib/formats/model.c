/* model.c: see model.h. */
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "model.h"
#include "../base/util.h"

void
llm_hex64(uint64_t v, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, v);
}

int
llm_parse_hex64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (strlen(s) != 16)
		return -1;
	for (int i = 0; i < 16; i++) {
		int c = s[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* kv_cache.layout: the one the kernels index (ir.txt) */
#define KV_LAYOUT "layer,kv,kv_head,(k: head_dim,position | v: position,head_dim)"

uint64_t
llm_plan_fingerprint(json_t *dtypes, json_t *config, json_t *limits, json_t *tensors)
{
	json_t *o = json_object();
	json_object_set(o, "dtypes", dtypes);
	json_object_set(o, "config", config);
	json_object_set(o, "limits", limits);
	json_object_set(o, "tensors", tensors);
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	if (!s)
		llm_fatal("out of memory serialising JSON");
	uint64_t h = llm_fnv1a(LLM_FNV_INIT, s, strlen(s));
	free(s);
	json_decref(o);
	return h;
}

static int
get_obj(json_t *o, const char *key, const char *ctx, json_t **out)
{
	*out = json_object_get(o, key); /* borrowed */
	if (!json_is_object(*out))
		return llm_seterr("%s: key '%s': expected an object", ctx, key);
	return 0;
}

static int
get_arr(json_t *o, const char *key, const char *ctx, json_t **out)
{
	*out = json_object_get(o, key); /* borrowed */
	if (!json_is_array(*out))
		return llm_seterr("%s: key '%s': expected an array", ctx, key);
	return 0;
}

/* A float dtype, or (codes, int8 = 1) i8. */
static int
get_dtype_of(json_t *o, const char *key, const char *ctx, int int8, enum llm_dtype *out)
{
	const char *s;
	if (llm_json_str(o, key, ctx, &s) < 0)
		return -1;
	*out = llm_dtype_from_name(s);
	if (*out != LLM_DT_F32 && *out != LLM_DT_F16 && *out != LLM_DT_BF16 && !(int8 && *out == LLM_DT_I8))
		return llm_seterr("%s: key '%s': unsupported dtype '%s'", ctx, key, s);
	return 0;
}

static int
get_dtype(json_t *o, const char *key, const char *ctx, enum llm_dtype *out)
{
	return get_dtype_of(o, key, ctx, 0, out);
}

/* dtypes.activations: "f32", "q8" (f32, quantized to int8 for the
 * products with quantized weights: model.h) or "bf16" (f32, rounded to
 * bf16 for the products with bf16 weights). */
static int
get_activations(json_t *o, const char *ctx, struct llm_model *m)
{
	const char *s;
	if (llm_json_str(o, "activations", ctx, &s) < 0)
		return -1;
	m->act_dtype = LLM_DT_F32;
	m->act_q8 = strcmp(s, "q8") == 0;
	m->act_bf16 = strcmp(s, "bf16") == 0;
	if (!m->act_q8 && !m->act_bf16 && strcmp(s, "f32") != 0)
		return llm_seterr("%s: key 'activations': '%s' is not f32, q8 or bf16", ctx, s);
	return 0;
}

static int
get_pos(json_t *o, const char *key, const char *ctx, int64_t *out)
{
	if (llm_json_int(o, key, ctx, out) < 0)
		return -1;
	if (*out <= 0)
		return llm_seterr("%s: key '%s': must be positive", ctx, key);
	return 0;
}

static int
str_array(json_t *a, const char *ctx, const char *key, const char ***out, size_t *n)
{
	*n = json_array_size(a);
	*out = llm_xcalloc(*n, sizeof(**out));
	for (size_t i = 0; i < *n; i++) {
		json_t *s = json_array_get(a, i);
		if (!json_is_string(s))
			return llm_seterr("%s: '%s'[%zu]: expected a string", ctx, key, i);
		(*out)[i] = json_string_value(s);
	}
	return 0;
}

/* rs[key]: an array of 1 to LLM_MAX_ROPE_FACTORS positive numbers. */
static int
factors_of(const json_t *rs, const char *key, const char *c, double *out, int *n)
{
	const json_t *f = json_object_get(rs, key); /* borrowed */
	size_t len = json_array_size(f);

	if (!json_is_array(f) || len == 0 || len > LLM_MAX_ROPE_FACTORS)
		return llm_seterr("%s: '%s': expected an array of 1 to %d numbers", c, key, LLM_MAX_ROPE_FACTORS);
	for (size_t i = 0; i < len; i++) {
		const json_t *v = json_array_get(f, i);
		out[i] = json_is_number(v) ? json_number_value(v) : 0;
		if (!(out[i] > 0 && isfinite(out[i])))
			return llm_seterr("%s: %s[%zu]: expected a positive number", c, key, i);
	}
	*n = (int)len;
	return 0;
}

/* rs.attention_factor: absent or null (0), or a positive number. */
static int
attention_factor_of(const json_t *rs, const char *c, double *out)
{
	const json_t *a = json_object_get(rs, "attention_factor"); /* borrowed */

	*out = 0;
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_number(a) || !(json_number_value(a) > 0 && isfinite(json_number_value(a))))
		return llm_seterr("%s: 'attention_factor': expected a positive number", c);
	*out = json_number_value(a);
	return 0;
}

int
llm_rope_scaling_load(const json_t *rs, const char *ctx, struct llm_rope_scaling *s)
{
	const char *type = NULL;
	char c[512];

	*s = (struct llm_rope_scaling){0};
	if (!rs || json_is_null(rs))
		return 0;
	if (!json_is_object(rs))
		return llm_seterr("%s: key 'rope_scaling': expected an object or null", ctx);
	/* transformers reads "rope_type", and "type" from older configs. */
	if (llm_json_str_opt(rs, "rope_type", ctx, &type) < 0)
		return -1;
	if (!type && llm_json_str_opt(rs, "type", ctx, &type) < 0)
		return -1;
	if (!type)
		return llm_seterr("%s: rope_scaling without 'rope_type' is not supported", ctx);
	if (strcmp(type, "default") == 0)
		return 0;
	snprintf(c, sizeof(c), "%s: rope_scaling", ctx);
	if (strcmp(type, "freq_factors") == 0)
		return factors_of(rs, "factors", c, s->factors, &s->nfactors) < 0 ||
			attention_factor_of(rs, c, &s->attention_factor) < 0 ?
		    -1 :
		    0;
	if (strcmp(type, "longrope") == 0) {
		/* transformers' _compute_longrope_parameters; the caller
		 * (hfconfig.c) resolves the threshold and the attention
		 * factor it leaves at 0, which need config.json's top level */
		int nlong;
		if (factors_of(rs, "short_factor", c, s->factors, &s->nfactors) < 0 ||
		    factors_of(rs, "long_factor", c, s->long_factors, &nlong) < 0 ||
		    attention_factor_of(rs, c, &s->attention_factor) < 0)
			return -1;
		if (nlong != s->nfactors)
			return llm_seterr("%s: %d long_factor and %d short_factor values", c, nlong, s->nfactors);
		const json_t *f = json_object_get(rs, "factor"); /* borrowed */
		if (f && !json_is_null(f) && !(json_is_number(f) && json_number_value(f) > 0))
			return llm_seterr("%s: 'factor': expected a positive number", c);
		s->factor = f && json_is_number(f) ? json_number_value(f) : 0;
		s->longrope = 1;
		return 0;
	}
	if (strcmp(type, "linear") == 0) {
		if (llm_json_num(rs, "factor", c, &s->factor) < 0)
			return -1;
		if (!(s->factor > 0 && isfinite(s->factor)))
			return llm_seterr("%s: 'factor': expected a positive number", c);
		s->linear = 1;
		return 0;
	}
	if (strcmp(type, "llama3") != 0)
		return llm_seterr("%s: rope_scaling '%.64s' is not supported (only 'default', 'linear', 'llama3' and "
				  "'longrope')",
		    ctx, llm_json_shown(type));
	if (llm_json_num(rs, "factor", c, &s->factor) < 0 ||
	    llm_json_num(rs, "low_freq_factor", c, &s->low_freq_factor) < 0 ||
	    llm_json_num(rs, "high_freq_factor", c, &s->high_freq_factor) < 0 ||
	    llm_json_num(rs, "original_max_position_embeddings", c, &s->original_max_position_embeddings) < 0)
		return -1;
	/* transformers' own checks (_validate_llama3_parameters), and a
	 * context that is a whole number of positions */
	if (!(s->factor > 0 && s->low_freq_factor > 0 && s->high_freq_factor > s->low_freq_factor))
		return llm_seterr("%s: llama3 needs factor > 0 and 0 < low_freq_factor < high_freq_factor", c);
	if (!(s->original_max_position_embeddings >= 1 && s->original_max_position_embeddings <= (double)INT32_MAX &&
		s->original_max_position_embeddings == floor(s->original_max_position_embeddings)))
		return llm_seterr("%s: original_max_position_embeddings %g is not a positive whole number", c,
		    s->original_max_position_embeddings);
	s->llama3 = 1;
	return 0;
}

json_t *
llm_rope_scaling_json(const struct llm_rope_scaling *s)
{
	if (!s->llama3 && !s->nfactors)
		return json_null();
	json_t *o = json_object();
	if (s->nfactors) {
		json_t *f = json_array();
		for (int i = 0; i < s->nfactors; i++)
			json_array_append_new(f, json_real(s->factors[i]));
		json_object_set_new(o, "rope_type", json_string("freq_factors"));
		json_object_set_new(o, "factors", f);
		if (s->attention_factor && s->attention_factor != 1)
			json_object_set_new(o, "attention_factor", json_real(s->attention_factor));
		return o;
	}
	json_object_set_new(o, "rope_type", json_string("llama3"));
	json_object_set_new(o, "factor", json_real(s->factor));
	json_object_set_new(o, "low_freq_factor", json_real(s->low_freq_factor));
	json_object_set_new(o, "high_freq_factor", json_real(s->high_freq_factor));
	json_object_set_new(o, "original_max_position_embeddings",
	    json_integer((json_int_t)s->original_max_position_embeddings));
	return o;
}

int
llm_rope_scaling_for_context(struct llm_rope_scaling *s, int64_t max_context)
{
	int lng = s->longrope && (double)max_context > s->original_max_position_embeddings;

	if (lng)
		memcpy(s->factors, s->long_factors, (size_t)s->nfactors * sizeof(*s->factors));
	s->longrope = 0;
	return lng;
}

static const char *const act_names[] = {[LLM_ACT_SILU] = "silu", [LLM_ACT_GELU_TANH] = "gelu_tanh"};

/* config.hidden_act: absent (silu) or one of act_names. */
static int
get_act(const json_t *c, const char *ctx, int *out)
{
	const char *s = NULL;

	*out = LLM_ACT_SILU;
	if (llm_json_str_opt(c, "hidden_act", ctx, &s) < 0)
		return -1;
	for (int i = 0; s && i < (int)LLM_NELEM(act_names); i++)
		if (strcmp(s, act_names[i]) == 0) {
			*out = i;
			return 0;
		}
	if (s)
		return llm_seterr("%s: hidden_act '%s' is not silu or gelu_tanh", ctx, llm_json_shown(s));
	return 0;
}

int
llm_layer_local(const struct llm_model_config *c, int64_t l)
{
	return !c->window_pattern || (l + 1) % c->window_pattern != 0;
}

static int
load_config(struct llm_model *m, json_t *c, const char *ctx)
{
	struct llm_model_config *k = &m->cfg;
	if (get_pos(c, "hidden_size", ctx, &k->hidden_size) < 0 || get_pos(c, "n_layers", ctx, &k->n_layers) < 0 ||
	    get_pos(c, "n_heads", ctx, &k->n_heads) < 0 || get_pos(c, "n_kv_heads", ctx, &k->n_kv_heads) < 0 ||
	    get_pos(c, "head_dim", ctx, &k->head_dim) < 0 ||
	    get_pos(c, "intermediate_size", ctx, &k->intermediate_size) < 0 ||
	    get_pos(c, "vocab_size", ctx, &k->vocab_size) < 0 ||
	    get_pos(c, "max_position_embeddings", ctx, &k->max_position_embeddings) < 0 ||
	    llm_json_num(c, "rms_norm_eps", ctx, &k->rms_norm_eps) < 0 ||
	    llm_json_num(c, "rope_theta", ctx, &k->rope_theta) < 0 ||
	    llm_json_bool(c, "tie_word_embeddings", ctx, &k->tie_word_embeddings) < 0 ||
	    llm_json_bool(c, "attention_bias", ctx, &k->attention_bias) < 0 ||
	    llm_json_bool_opt(c, "qk_norm", ctx, &k->qk_norm) < 0 ||
	    llm_json_int_opt(c, "sliding_window", ctx, &k->sliding_window) < 0 ||
	    llm_json_int_opt(c, "rotary_dim", ctx, &k->rotary_dim) < 0 ||
	    llm_json_bool_opt(c, "post_norms", ctx, &k->post_norms) < 0 ||
	    llm_json_num_opt(c, "embed_scale", ctx, &k->embed_scale) < 0 ||
	    llm_json_num_opt(c, "attn_scale", ctx, &k->attn_scale) < 0 ||
	    llm_json_int_opt(c, "window_pattern", ctx, &k->window_pattern) < 0 ||
	    llm_json_num_opt(c, "rope_local_theta", ctx, &k->rope_local_theta) < 0 || get_act(c, ctx, &k->act) < 0 ||
	    llm_rope_scaling_load(json_object_get(c, "rope_scaling"), ctx, &k->rope_scaling) < 0)
		return -1;
	if (k->n_heads % k->n_kv_heads)
		return llm_seterr("%s: n_heads %" PRId64 " is not a multiple of n_kv_heads %" PRId64, ctx, k->n_heads,
		    k->n_kv_heads);
	if (k->head_dim % 2)
		return llm_seterr("%s: head_dim %" PRId64 " is odd", ctx, k->head_dim);
	if (k->sliding_window < 0)
		return llm_seterr("%s: sliding_window %" PRId64 " is negative", ctx, k->sliding_window);
	if (!json_object_get(c, "rotary_dim"))
		k->rotary_dim = k->head_dim;
	if (k->embed_scale < 0 || k->attn_scale < 0 || k->rope_local_theta < 0 || k->window_pattern < 0 ||
	    !isfinite(k->embed_scale) || !isfinite(k->attn_scale) || !isfinite(k->rope_local_theta))
		return llm_seterr("%s: embed_scale, attn_scale, rope_local_theta and window_pattern must be positive",
		    ctx);
	if (k->rotary_dim < 2 || k->rotary_dim > k->head_dim || k->rotary_dim % 2 || (k->head_dim - k->rotary_dim) % 2)
		return llm_seterr("%s: rotary_dim %" PRId64 " is not an even number of 2 to head_dim %" PRId64
				  " that leaves an even rest",
		    ctx, k->rotary_dim, k->head_dim);
	if (k->rope_scaling.longrope || k->rope_scaling.linear)
		return llm_seterr("%s: rope_scaling 'longrope' and 'linear' are freq_factors in model.json", ctx);
	if (k->rope_scaling.nfactors && k->rope_scaling.nfactors != k->rotary_dim / 2)
		return llm_seterr("%s: rope_scaling: %d factors, not rotary_dim / 2 = %" PRId64, ctx,
		    k->rope_scaling.nfactors, k->rotary_dim / 2);
	return 0;
}

static int
load_tensor(struct llm_model *m, json_t *t, size_t i, const char *ctx)
{
	struct llm_plan_tensor *p = &m->tensors[i];
	json_t *src, *shape;
	char c[512];

	snprintf(c, sizeof(c), "%s: weights.tensors[%zu]", ctx, i);
	if (llm_json_str(t, "name", c, &p->name) < 0)
		return -1;
	snprintf(c, sizeof(c), "%s: tensor '%s'", ctx, p->name);
	if (get_arr(t, "source", c, &src) < 0 || get_arr(t, "shape", c, &shape) < 0 ||
	    llm_json_str(t, "transform", c, &p->transform) < 0 || get_dtype_of(t, "dtype", c, 1, &p->dtype) < 0 ||
	    llm_json_u64(t, "offset", c, &p->offset) < 0 || llm_json_u64(t, "bytes", c, &p->bytes) < 0)
		return -1;
	if (json_array_size(src) > LLM_MAX_SOURCES)
		return llm_seterr("%s: too many sources", c);
	json_t *qt = json_object_get(t, "quant");
	if (qt && (!json_is_string(qt) || json_array_size(src) != 1))
		return llm_seterr("%s: 'quant' must be a string, on a tensor with one source", c);
	p->quant = qt ? json_string_value(qt) : NULL;
	json_t *lt = json_object_get(t, "layout");
	if (lt && (!json_is_string(lt) || llm_qlayout_parse(json_string_value(lt), &p->ql) < 0))
		return llm_seterr("%s: 'layout' must be a tiled layout name such as \"i4-r8-g32\"", c);
	p->layout = lt ? json_string_value(lt) : NULL;
	json_t *ht = json_object_get(t, "heads"); /* borrowed; checked by llm-pack-weights */
	p->heads = json_is_integer(ht) ? json_integer_value(ht) : 0;
	json_t *fr = json_object_get(t, "first_row"); /* borrowed */
	if (fr && (!json_is_integer(fr) || json_integer_value(fr) < 0 || json_array_size(src) != 1))
		return llm_seterr("%s: 'first_row' must be an integer >= 0, on a tensor with one source", c);
	p->part = fr != NULL;
	p->first_row = fr ? json_integer_value(fr) : 0;
	json_t *fc = json_object_get(t, "first_col"); /* borrowed */
	if (fc &&
	    (!json_is_integer(fc) || json_integer_value(fc) < 0 || json_array_size(src) != 1 ||
		json_array_size(json_object_get(t, "shape")) != 2))
		return llm_seterr("%s: 'first_col' must be an integer >= 0, on a matrix with one source", c);
	p->cpart = fc != NULL;
	p->first_col = fc ? json_integer_value(fc) : 0;
	p->nsource = (int)json_array_size(src);
	for (int j = 0; j < p->nsource; j++) {
		json_t *s = json_array_get(src, (size_t)j);
		if (!json_is_string(s))
			return llm_seterr("%s: source[%d]: expected a string", c, j);
		p->source[j] = json_string_value(s);
	}
	if (json_array_size(shape) < 1 || json_array_size(shape) > 4)
		return llm_seterr("%s: shape must have 1 to 4 dimensions", c);
	p->ndim = (int)json_array_size(shape);
	uint64_t n = llm_dtype_size(p->dtype);
	for (int j = 0; j < p->ndim; j++) {
		json_t *d = json_array_get(shape, (size_t)j);
		if (!json_is_integer(d) || json_integer_value(d) <= 0 || json_integer_value(d) > (1LL << 40))
			return llm_seterr("%s: shape[%d]: expected a positive integer", c, j);
		p->shape[j] = json_integer_value(d);
		if (n > UINT64_MAX / (uint64_t)p->shape[j])
			return llm_seterr("%s: size overflows", c);
		n *= (uint64_t)p->shape[j];
	}
	if (p->layout) {
		if (p->dtype != LLM_DT_I8 || p->ndim != 2 || !p->quant ||
		    !llm_qlayout_fits(&p->ql, p->shape[0], p->shape[1]))
			return llm_seterr("%s: layout %s needs a quantized source, dtype i8 (the codes) and a "
					  "matrix of whole %d-row tiles and %d-column groups",
			    c, p->layout, p->ql.rows, p->ql.group);
		int bits = llm_qcode_bits(p->ql.code);
		if ((p->ql.sub || bits == 5 || bits == 6) && !m->act_q8)
			return llm_seterr("%s: layout %s is read by the int8 kernels only: it needs dtypes.activations "
					  "\"q8\"",
			    c, p->layout);
		if (n > UINT64_MAX / 2)
			return llm_seterr("%s: size overflows", c);
		n = llm_qlayout_bytes(&p->ql, p->shape[0], p->shape[1]);
		if (n != p->bytes)
			return llm_seterr("%s: bytes %" PRIu64 " != the size of layout %s, %" PRIu64, c, p->bytes,
			    p->layout, n);
	} else if (p->dtype == LLM_DT_I8)
		return llm_seterr("%s: dtype i8 needs a 'layout'", c);
	else if (n != p->bytes)
		return llm_seterr("%s: bytes %" PRIu64 " != shape x dtype size %" PRIu64, c, p->bytes, n);
	if (p->offset % m->alignment)
		return llm_seterr("%s: offset %" PRIu64 " is not %" PRIu64 "-byte aligned", c, p->offset, m->alignment);
	if (p->offset > m->data_bytes || p->bytes > m->data_bytes - p->offset)
		return llm_seterr("%s: extends past data_bytes", c);
	if (i > 0) {
		const struct llm_plan_tensor *q = &m->tensors[i - 1];
		if (p->offset < q->offset + q->bytes)
			return llm_seterr("%s: overlaps '%s' or is out of offset order", c, q->name);
	}
	return 0;
}

/* A plan split over ranks (tp or pp) is one image a rank, of one layout
 * (model.h "tp"). */
static int
rank_images(const struct llm_model *m, const char *path)
{
	int64_t n = llm_model_ranks(m);
	uint64_t stride = m->data_bytes / (uint64_t)n;
	size_t n0 = m->ntensors / (size_t)n;
	if (m->ntensors % (size_t)n || m->data_bytes % (uint64_t)n || stride % LLM_TP_ALIGN)
		return llm_seterr("%s: %" PRId64 " ranks (limits.tp, limits.pp): the plan is not %" PRId64
				  " images of one layout, each a multiple of %d bytes",
		    path, n, n, LLM_TP_ALIGN);
	for (size_t i = 0; i < m->ntensors; i++) {
		const struct llm_plan_tensor *t = &m->tensors[i], *t0 = &m->tensors[i % n0];
		size_t r = i / n0;
		char want[256];
		if (r)
			snprintf(want, sizeof(want), "%s@%zu", t0->name, r);
		if ((r ? strcmp(t->name, want) != 0 : strchr(t->name, '@') != NULL) || t->dtype != t0->dtype ||
		    t->ndim != t0->ndim || memcmp(t->shape, t0->shape, sizeof(t->shape)) != 0 ||
		    (t->layout != NULL) != (t0->layout != NULL) || (t->layout && strcmp(t->layout, t0->layout) != 0) ||
		    t->offset != t0->offset + r * stride || t0->offset + t0->bytes > stride)
			return llm_seterr("%s: tensor '%s': rank %zu's image does not repeat rank 0's (name %s@%zu, "
					  "its dtype, shape and layout, offset + %zu x %" PRIu64 ")",
			    path, t->name, r, t0->name, r, r, stride);
	}
	return 0;
}

void
llm_model_rank_config(const struct llm_model *m, struct llm_model_config *out)
{
	*out = m->cfg;
	if (m->tp > 1) {
		out->n_heads /= m->tp;
		out->n_kv_heads = out->n_kv_heads >= m->tp ? out->n_kv_heads / m->tp : 1;
		out->intermediate_size /= m->tp;
	}
	out->n_layers /= m->pp;
}

int64_t
llm_model_ranks(const struct llm_model *m)
{
	return m->tp * m->pp;
}

int
llm_model_split_check(const struct llm_model_config *c, int64_t tp, int64_t pp, const char *ctx)
{
	if (tp > 1 && pp > 1)
		return llm_seterr("%s: --tp and --pp together are not supported yet", ctx);
	if (pp > 1 && c->n_layers % pp)
		return llm_seterr("%s: %" PRId64 " layers do not split over %" PRId64 " ranks (--pp must divide them)",
		    ctx, c->n_layers, pp);
	if (tp > 1 && (c->n_heads % tp || (c->n_kv_heads % tp && tp % c->n_kv_heads) || c->intermediate_size % tp))
		return llm_seterr("%s: %" PRId64 " heads, %" PRId64 " KV heads and intermediate_size %" PRId64
				  " do not split over %" PRId64 " ranks (heads and intermediate_size must divide, KV "
				  "heads divide or be a divisor of the ranks)",
		    ctx, c->n_heads, c->n_kv_heads, c->intermediate_size, tp);
	return 0;
}

/* kv_cache.bytes of a config: layers x (k, v) x KV heads x positions x
 * head_dim elements of dt.  In double, so that an edited config that
 * overflows int64 is told apart (exact below 2^53). */
static double
kv_cache_bytes(const struct llm_model_config *c, int64_t max_context, enum llm_dtype dt)
{
	return (double)c->n_layers * 2 * (double)c->n_kv_heads * (double)llm_kv_positions(max_context) *
	    (double)c->head_dim * (double)llm_dtype_size(dt);
}

/* model.json from a struct llm_model, in the order of formats.txt: what
 * llm_model_parse reads back. */

static json_t *
str_array_json(const char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *
tensor_json(const struct llm_plan_tensor *p)
{
	json_t *t = json_object();
	json_object_set_new(t, "name", json_string(p->name));
	json_object_set_new(t, "source", str_array_json(p->source, (size_t)p->nsource));
	if (p->quant)
		json_object_set_new(t, "quant", json_string(p->quant));
	json_object_set_new(t, "transform", json_string(p->transform));
	if (p->heads)
		json_object_set_new(t, "heads", json_integer(p->heads));
	if (p->part)
		json_object_set_new(t, "first_row", json_integer(p->first_row));
	if (p->cpart)
		json_object_set_new(t, "first_col", json_integer(p->first_col));
	if (p->layout)
		json_object_set_new(t, "layout", json_string(p->layout));
	json_object_set_new(t, "dtype", json_string(llm_dtype_name(p->dtype)));
	json_object_set_new(t, "shape", llm_json_i64_array(p->shape, (size_t)(p->ndim)));
	json_object_set_new(t, "offset", json_integer((json_int_t)p->offset));
	json_object_set_new(t, "bytes", json_integer((json_int_t)p->bytes));
	return t;
}

static json_t *
config_json(const struct llm_model_config *c)
{
	json_t *o = json_object();
	json_object_set_new(o, "hidden_size", json_integer(c->hidden_size));
	json_object_set_new(o, "n_layers", json_integer(c->n_layers));
	json_object_set_new(o, "n_heads", json_integer(c->n_heads));
	json_object_set_new(o, "n_kv_heads", json_integer(c->n_kv_heads));
	json_object_set_new(o, "head_dim", json_integer(c->head_dim));
	json_object_set_new(o, "intermediate_size", json_integer(c->intermediate_size));
	json_object_set_new(o, "vocab_size", json_integer(c->vocab_size));
	json_object_set_new(o, "rms_norm_eps", json_real(c->rms_norm_eps));
	json_object_set_new(o, "rope_theta", json_real(c->rope_theta));
	json_object_set_new(o, "rope_scaling", llm_rope_scaling_json(&c->rope_scaling));
	json_object_set_new(o, "tie_word_embeddings", json_boolean(c->tie_word_embeddings));
	json_object_set_new(o, "attention_bias", json_boolean(c->attention_bias));
	json_object_set_new(o, "qk_norm", json_boolean(c->qk_norm));
	if (c->sliding_window)
		json_object_set_new(o, "sliding_window", json_integer(c->sliding_window));
	if (c->rotary_dim && c->rotary_dim != c->head_dim)
		json_object_set_new(o, "rotary_dim", json_integer(c->rotary_dim));
	if (c->post_norms)
		json_object_set_new(o, "post_norms", json_true());
	if (c->act != LLM_ACT_SILU)
		json_object_set_new(o, "hidden_act", json_string(act_names[c->act]));
	if (c->embed_scale)
		json_object_set_new(o, "embed_scale", json_real(c->embed_scale));
	if (c->attn_scale)
		json_object_set_new(o, "attn_scale", json_real(c->attn_scale));
	if (c->window_pattern)
		json_object_set_new(o, "window_pattern", json_integer(c->window_pattern));
	if (c->rope_local_theta)
		json_object_set_new(o, "rope_local_theta", json_real(c->rope_local_theta));
	json_object_set_new(o, "max_position_embeddings", json_integer(c->max_position_embeddings));
	return o;
}

static json_t *
tokenizer_json(const struct llm_model *m)
{
	json_t *t = json_object();

	json_object_set_new(t, "files", str_array_json(m->tokenizer_files, m->ntokenizer_files));
	json_object_set_new(t, "bos_id", m->bos_id >= 0 ? json_integer(m->bos_id) : json_null());
	json_object_set_new(t, "eos_ids", llm_json_i64_array(m->eos_ids, (size_t)m->n_eos));
	json_object_set_new(t, "add_bos", json_boolean(m->add_bos && m->bos_id >= 0));
	json_object_set_new(t, "chat_template", m->chat_template ? json_string(m->chat_template) : json_null());
	return t;
}

/* The phases of phase.h, each with the argument list of the ABI. */
static json_t *
phases_json(int64_t chunk)
{
	json_t *phases = json_array();

	for (int i = 0; i < LLM_PH_COUNT; i++) {
		const struct llm_phase_spec *s = &llm_phase_specs[i];
		json_t *p = json_object(), *args = json_array();
		for (int j = 0; j < LLM_PHASE_NARGS; j++) {
			json_t *a = json_object();
			json_object_set_new(a, "name", json_string(llm_phase_args[j].name));
			json_object_set_new(a, "type", json_string(llm_phase_args[j].type));
			json_array_append_new(args, a);
		}
		json_object_set_new(p, "name", json_string(s->name));
		json_object_set_new(p, "entry", json_string(s->entry));
		char *file = llm_xasprintf("%s.mlir", s->name);
		json_object_set_new(p, "file", json_string(file));
		free(file);
		json_object_set_new(p, "tokens", json_integer(llm_phase_tokens(s, chunk)));
		json_object_set_new(p, "args", args);
		json_array_append_new(phases, p);
	}
	return phases;
}

/* A loaded phase p against the one phases_json derives from the spec and
 * limits.prefill_chunk (ctx names it): its entry, tokens and arguments
 * are what the code is compiled for. */
static int
check_phase(json_t *p, int64_t chunk, const char *ctx)
{
	json_t *want = phases_json(chunk), *w = NULL, *e;
	size_t i;
	const char *name = json_string_value(json_object_get(p, "name"));
	int rc = 0;
	json_array_foreach (want, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
			w = e;
	if (!w) {
		char names[256] = "";
		for (int ph = 0; ph < LLM_PH_COUNT; ph++)
			snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", ph ? ", " : "",
			    llm_phase_specs[ph].name);
		rc = llm_seterr("%s: name '%s' is not a phase (%s)", ctx, name, names);
	} else {
		static const char *const keys[] = {"entry", "tokens", "args"};
		for (size_t k = 0; k < LLM_NELEM(keys) && rc == 0; k++)
			if (!json_equal(json_object_get(p, keys[k]), json_object_get(w, keys[k]))) {
				char *v = json_dumps(json_object_get(w, keys[k]), JSON_COMPACT | JSON_ENCODE_ANY);
				char by[64] = "";
				if (k == 1)
					snprintf(by, sizeof(by), ", by limits.prefill_chunk %" PRId64, chunk);
				rc = llm_seterr("%s: %s must be %s for phase '%s'%s (edited by hand?)", ctx, keys[k],
				    v ? v : "?", name, by);
				free(v);
			}
	}
	json_decref(want);
	return rc;
}

void
llm_model_init(struct llm_model *m)
{
	memset(m, 0, sizeof(*m));
	m->weights_file = "weights.bin";
	m->header_bytes = LLM_WEIGHTS_HEADER_BYTES;
	m->alignment = LLM_WEIGHTS_ALIGN;
	m->act_dtype = LLM_DT_F32;
	m->bos_id = -1;
	m->tp = m->pp = 1;
}

json_t *
llm_model_build(const struct llm_model *m)
{
	const struct llm_model_config *c = &m->cfg;
	json_t *root = json_object(), *src = json_object(), *dtypes = json_object(), *limits = json_object();
	json_t *kvc = json_object(), *weights = json_object(), *tensors = json_array(), *config = config_json(c);
	char fph[17];

	json_object_set_new(src, "kind", json_string(m->source_kind));
	json_object_set_new(src, "dir", json_string(m->source_dir));
	json_object_set_new(src, "files", str_array_json(m->source_files, m->nsource_files));
	json_object_set_new(dtypes, "weights", json_string(llm_dtype_name(m->weight_dtype)));
	const char *act = m->act_q8 ? "q8" : m->act_bf16 ? "bf16" : llm_dtype_name(m->act_dtype);
	json_object_set_new(dtypes, "activations", json_string(act));
	json_object_set_new(dtypes, "kv", json_string(llm_dtype_name(m->kv_dtype)));
	if (m->file_type)
		json_object_set_new(dtypes, "file_type", json_string(m->file_type));
	json_object_set_new(limits, "max_context", json_integer(m->max_context));
	json_object_set_new(limits, "prefill_chunk", json_integer(m->prefill_chunk));
	if (m->tp > 1)
		json_object_set_new(limits, "tp", json_integer(m->tp));
	if (m->pp > 1)
		json_object_set_new(limits, "pp", json_integer(m->pp));
	for (size_t i = 0; i < m->ntensors; i++)
		json_array_append_new(tensors, tensor_json(&m->tensors[i]));
	llm_hex64(llm_plan_fingerprint(dtypes, config, limits, tensors), fph);

	json_object_set_new(kvc, "layout", json_string(KV_LAYOUT));
	json_object_set_new(kvc, "dtype", json_string(llm_dtype_name(m->kv_dtype)));
	json_object_set_new(kvc, "positions", json_integer(llm_kv_positions(m->max_context)));
	struct llm_model_config rc;
	llm_model_rank_config(m, &rc);
	json_object_set_new(kvc, "bytes", json_integer((json_int_t)kv_cache_bytes(&rc, m->max_context, m->kv_dtype)));
	json_object_set_new(weights, "file", json_string(m->weights_file));
	json_object_set_new(weights, "header_bytes", json_integer((json_int_t)m->header_bytes));
	json_object_set_new(weights, "alignment", json_integer((json_int_t)m->alignment));
	json_object_set_new(weights, "data_bytes", json_integer((json_int_t)m->data_bytes));
	json_object_set_new(weights, "fingerprint", json_string(fph));
	json_object_set_new(weights, "tensors", tensors);

	json_object_set_new(root, "format", json_string(LLM_MODEL_FORMAT));
	json_object_set_new(root, "family", json_string(m->family));
	json_object_set_new(root, "architecture", json_string(m->architecture));
	json_object_set_new(root, "source", src);
	json_object_set_new(root, "config", config);
	json_object_set_new(root, "dtypes", dtypes);
	json_object_set_new(root, "limits", limits);
	json_object_set_new(root, "tokenizer", tokenizer_json(m));
	json_object_set_new(root, "kv_cache", kvc);
	json_object_set_new(root, "weights", weights);
	json_object_set_new(root, "phases", phases_json(m->prefill_chunk));
	return root;
}

int
llm_model_load(struct llm_model *m, const char *path)
{
	json_t *r;

	memset(m, 0, sizeof(*m));
	if (!(r = llm_json_load(path)))
		return -1;
	return llm_model_parse(m, r, path);
}

/* The sections of model.json in the order llm_model_parse reads and checks
 * them, a load_ function each: 0, or -1 with the error set (the caller
 * frees m). */

/* "format", "family", "architecture" and "source" */
static int
load_header(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o, *a;
	const char *fmt;

	if (llm_json_str(r, "format", path, &fmt) < 0)
		return -1;
	if (strncmp(fmt, "llm-model/", 10) != 0)
		return llm_seterr("%s: not a model manifest (format '%s')", path, fmt);
	if (strcmp(fmt, LLM_MODEL_FORMAT) != 0)
		return llm_seterr("%s: unsupported format version '%s' (this program reads %s; build the model again)",
		    path, fmt, LLM_MODEL_FORMAT);
	if (llm_json_str(r, "family", path, &m->family) < 0 ||
	    llm_json_str(r, "architecture", path, &m->architecture) < 0)
		return -1;
	if (get_obj(r, "source", path, &o) < 0 || llm_json_str(o, "kind", path, &m->source_kind) < 0 ||
	    llm_json_str(o, "dir", path, &m->source_dir) < 0 || get_arr(o, "files", path, &a) < 0 ||
	    str_array(a, path, "source.files", &m->source_files, &m->nsource_files) < 0)
		return -1;
	return 0;
}

static int
load_dtypes(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o;

	if (get_obj(r, "dtypes", path, &o) < 0 || get_dtype(o, "weights", path, &m->weight_dtype) < 0 ||
	    get_activations(o, path, m) < 0 || get_dtype(o, "kv", path, &m->kv_dtype) < 0 ||
	    llm_json_str_opt(o, "file_type", path, &m->file_type) < 0)
		return -1;
	return 0;
}

/* "limits", after the config: the ranks must split it. */
static int
load_limits(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o;

	if (get_obj(r, "limits", path, &o) < 0 || get_pos(o, "max_context", path, &m->max_context) < 0 ||
	    get_pos(o, "prefill_chunk", path, &m->prefill_chunk) < 0)
		return -1;
	m->tp = m->pp = 1;
	if (llm_json_int_opt(o, "tp", path, &m->tp) < 0 || llm_json_int_opt(o, "pp", path, &m->pp) < 0)
		return -1;
	if (m->tp < 1 || m->pp < 1 || m->tp * m->pp > LLM_MAX_TP)
		return llm_seterr("%s: limits.tp and limits.pp must be 1 to %d", path, LLM_MAX_TP);
	return llm_model_split_check(&m->cfg, m->tp, m->pp, path);
}

/* "tokenizer", after the config: its token ids must be in the vocabulary. */
static int
load_tokenizer(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o, *a;

	if (get_obj(r, "tokenizer", path, &o) < 0 || get_arr(o, "files", path, &a) < 0 ||
	    str_array(a, path, "tokenizer.files", &m->tokenizer_files, &m->ntokenizer_files) < 0 ||
	    llm_json_int_opt(o, "bos_id", path, &m->bos_id) < 0 || llm_json_bool(o, "add_bos", path, &m->add_bos) < 0 ||
	    llm_json_str_opt(o, "chat_template", path, &m->chat_template) < 0 || get_arr(o, "eos_ids", path, &a) < 0)
		return -1;
	for (size_t i = 0; i < m->ntokenizer_files; i++)
		if (!llm_path_inside(m->tokenizer_files[i]))
			return llm_seterr("%s: tokenizer.files[%zu] '%s' is outside the build directory", path, i,
			    m->tokenizer_files[i]);
	if (json_array_size(a) > LLM_NELEM(m->eos_ids))
		return llm_seterr("%s: too many eos_ids", path);
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *e = json_array_get(a, i);
		if (!json_is_integer(e))
			return llm_seterr("%s: eos_ids[%zu]: expected an integer", path, i);
		if (json_integer_value(e) < 0 || json_integer_value(e) >= m->cfg.vocab_size)
			return llm_seterr("%s: eos_ids[%zu]: %" PRId64 " is outside the vocabulary [0, %" PRId64 ")",
			    path, i, (int64_t)json_integer_value(e), m->cfg.vocab_size);
		m->eos_ids[m->n_eos++] = json_integer_value(e);
	}
	if (m->bos_id >= m->cfg.vocab_size || m->bos_id < -1)
		return llm_seterr("%s: bos_id %" PRId64 " is outside the vocabulary [0, %" PRId64 ")", path, m->bos_id,
		    m->cfg.vocab_size);
	return 0;
}

/* "kv_cache": the runtime allocates and the kernels index the cache by the
 * config (not covered by the fingerprint: derived, so checked). */
static int
load_kv_cache(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o;
	struct llm_model_config c;

	if (get_obj(r, "kv_cache", path, &o) < 0 || llm_json_u64(o, "bytes", path, &m->kv_bytes) < 0)
		return -1;
	llm_model_rank_config(m, &c);
	double want = kv_cache_bytes(&c, m->max_context, m->kv_dtype);
	json_t *pos = json_object_get(o, "positions"); /* borrowed */
	if ((double)m->kv_bytes != want)
		return llm_seterr("%s: kv_cache.bytes %" PRIu64 ", the config implies %.0f (edited by hand?)", path,
		    m->kv_bytes, want);
	if (pos && (!json_is_integer(pos) || json_integer_value(pos) != llm_kv_positions(m->max_context)))
		return llm_seterr("%s: kv_cache.positions must be %" PRId64 " for max_context %" PRId64, path,
		    llm_kv_positions(m->max_context), m->max_context);
	/* the rest of it is derived too: what the code was compiled for */
	json_t *dt = json_object_get(o, "dtype"), *lay = json_object_get(o, "layout");
	if (dt && (!json_is_string(dt) || strcmp(json_string_value(dt), llm_dtype_name(m->kv_dtype)) != 0))
		return llm_seterr("%s: kv_cache.dtype must be dtypes.kv, %s (edited by hand?)", path,
		    llm_dtype_name(m->kv_dtype));
	if (lay && (!json_is_string(lay) || strcmp(json_string_value(lay), KV_LAYOUT) != 0))
		return llm_seterr("%s: kv_cache.layout must be \"%s\" (edited by hand?)", path, KV_LAYOUT);
	return 0;
}

/* "weights": the file's header facts, then the plan's tensors, which with
 * dtypes, config and limits make the fingerprint. */
static int
load_weights(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o, *a;
	const char *fp;

	if (get_obj(r, "weights", path, &o) < 0 || llm_json_str(o, "file", path, &m->weights_file) < 0 ||
	    llm_json_u64(o, "header_bytes", path, &m->header_bytes) < 0 ||
	    llm_json_u64(o, "alignment", path, &m->alignment) < 0 ||
	    llm_json_u64(o, "data_bytes", path, &m->data_bytes) < 0 || llm_json_str(o, "fingerprint", path, &fp) < 0 ||
	    get_arr(o, "tensors", path, &a) < 0)
		return -1;
	if (!llm_path_inside(m->weights_file))
		return llm_seterr("%s: weights.file '%s' is outside the build directory", path, m->weights_file);
	if (m->alignment == 0 || (m->alignment & (m->alignment - 1)))
		return llm_seterr("%s: weights.alignment must be a power of two", path);
	if (llm_parse_hex64(fp, &m->fingerprint) < 0)
		return llm_seterr("%s: weights.fingerprint: expected 16 hex digits", path);
	m->ntensors = json_array_size(a);
	m->tensors = llm_xcalloc(m->ntensors, sizeof(*m->tensors));
	for (size_t i = 0; i < m->ntensors; i++) {
		json_t *t = json_array_get(a, i);
		if (!json_is_object(t))
			return llm_seterr("%s: weights.tensors[%zu]: expected an object", path, i);
		if (load_tensor(m, t, i, path) < 0)
			return -1;
		for (size_t j = 0; j < i; j++)
			if (strcmp(m->tensors[j].name, m->tensors[i].name) == 0)
				return llm_seterr("%s: tensor '%s' appears twice in the plan", path,
				    m->tensors[i].name);
	}
	if (llm_model_ranks(m) > 1 && rank_images(m, path) < 0)
		return -1;
	uint64_t want = llm_plan_fingerprint(json_object_get(r, "dtypes"), json_object_get(r, "config"),
	    json_object_get(r, "limits"), a);
	if (want != m->fingerprint)
		return llm_seterr("%s: weights.fingerprint does not match the plan (edited by hand?)", path);
	return 0;
}

/* "phases", after limits: prefill_chunk sets their tokens. */
static int
load_phases(struct llm_model *m, json_t *r, const char *path)
{
	json_t *a;

	if (get_arr(r, "phases", path, &a) < 0)
		return -1;
	if (json_array_size(a) > LLM_MAX_PHASES)
		return llm_seterr("%s: too many phases", path);
	for (size_t i = 0; i < json_array_size(a); i++) {
		struct llm_phase *ph = &m->phases[m->nphases++];
		json_t *p = json_array_get(a, i);
		char c[256];
		snprintf(c, sizeof(c), "%s: phases[%zu]", path, i);
		if (!json_is_object(p))
			return llm_seterr("%s: expected an object", c);
		if (llm_json_str(p, "name", c, &ph->name) < 0 || llm_json_str(p, "entry", c, &ph->entry) < 0 ||
		    llm_json_str(p, "file", c, &ph->file) < 0 || get_pos(p, "tokens", c, &ph->tokens) < 0)
			return -1;
		if (!llm_path_inside(ph->file))
			return llm_seterr("%s: file '%s' is outside the build directory", c, ph->file);
		if (check_phase(p, m->prefill_chunk, c) < 0)
			return -1;
	}
	return 0;
}

int
llm_model_parse(struct llm_model *m, json_t *r, const char *path)
{
	json_t *o;
	char *tmp;

	memset(m, 0, sizeof(*m));
	m->bos_id = -1;
	m->root = r;
	m->path = llm_xstrdup(path);
	tmp = llm_xstrdup(path);
	m->dir = llm_xstrdup(dirname(tmp));
	free(tmp);

	if (!json_is_object(r)) {
		llm_seterr("%s: expected a JSON object", path);
		goto fail;
	}
	if (load_header(m, r, path) < 0 || get_obj(r, "config", path, &o) < 0 || load_config(m, o, path) < 0 ||
	    load_dtypes(m, r, path) < 0 || load_limits(m, r, path) < 0 || load_tokenizer(m, r, path) < 0 ||
	    load_kv_cache(m, r, path) < 0 || load_weights(m, r, path) < 0 || load_phases(m, r, path) < 0)
		goto fail;
	return 0;

fail:
	llm_model_free(m);
	return -1;
}

int64_t
llm_kv_positions(int64_t max_context)
{
	return (max_context + 15) / 16 * 16 + 16;
}

uint64_t
llm_kv_bytes(const struct llm_model *m, int64_t context)
{
	return m->kv_bytes / (uint64_t)llm_kv_positions(m->max_context) * (uint64_t)llm_kv_positions(context);
}

void
llm_model_free(struct llm_model *m)
{
	free(m->source_files);
	free(m->tokenizer_files);
	free(m->tensors);
	free(m->path);
	free(m->dir);
	json_decref(m->root);
	memset(m, 0, sizeof(*m));
}

const struct llm_plan_tensor *
llm_model_tensor(const struct llm_model *m, const char *name)
{
	for (size_t i = 0; i < m->ntensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	return NULL;
}

const struct llm_phase *
llm_model_phase(const struct llm_model *m, const char *name)
{
	for (int i = 0; i < m->nphases; i++)
		if (strcmp(m->phases[i].name, name) == 0)
			return &m->phases[i];
	return NULL;
}
