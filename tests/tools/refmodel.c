/* refmodel: the reference forward pass, the numeric oracle of the tests.
 *
 * Reads a Hugging Face checkpoint directory (config.json and the
 * safetensors weights), runs the decoder on a list of token ids at
 * positions 0..n-1 and writes the logits of the last position (of every
 * position with --all, their mean with --mean) as little-endian float32
 * rows of vocab_size; with --hidden the hidden states after the final
 * norm instead (the LM head's input, rows of hidden_size: what the phase
 * embed computes, llm_embed's oracle).
 *
 * Semantics are those of transformers' modeling_qwen2.py,
 * modeling_llama.py and modeling_phi3.py: RMSNorm x * rsqrt(mean(x^2) +
 * eps) * w; rotate-half RoPE on the first rotary_dim dims of a head (all
 * but under partial_rotary_factor) with inv_freq[i] = theta^(-2i/rotary_dim)
 * (with rope_scaling llama3 and longrope: modeling_rope_utils.py's
 * _compute_llama3_parameters and _compute_longrope_parameters, the long
 * factors for a sequence past the original context); grouped-query attention
 * (query head h reads kv head h / (n_heads / n_kv_heads)) with scale
 * 1/sqrt(head_dim) and a causal softmax (qwen3: q and k first RMSNormed
 * per head, modeling_qwen3.py's q_norm and k_norm); the SiLU-gated MLP
 * down(silu(gate(x)) * up(x)); q/k/v biases for qwen2 (and q/k/v/o biases
 * for llama with attention_bias); phi3's qkv_proj and gate_up_proj split
 * by rows; lm_head tied to embed_tokens when
 * tie_word_embeddings is set or lm_head.weight is absent.
 *
 * Plain loops, no MLIR, every activation and accumulation in double.  The
 * weights stay in the mmap'ed checkpoint and are converted one row at a
 * time, so a 1.5B-parameter model runs in a few hundred MB for a few
 * tokens.  Cost: one pass over all weights per call (each row is converted
 * once and applied to every position).  With --q8-activations every
 * product takes its x rounded to int8 blocks of 32 as llm-import
 * --activations q8 defines it (the rounding in float, the product in
 * double), the oracle of the int8 kernels; with --bf16-activations every
 * product with bf16 weights takes its x rounded to bf16 (to f32, then to
 * nearest bf16, ties to even), as llm-import --activations bf16 defines
 * it, the oracle of the bf16 kernels. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/dtype.h"
#include "../../lib/formats/hfconfig.h"
#include "../../lib/formats/safetensors.h"
#include "../../lib/base/util.h"

static const char usage_text[] =
    "usage: refmodel [--all | --mean] [--hidden] [--q8-activations | --bf16-activations] [-o output] --tokens ids "
    "dir\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

/* A weight matrix [rows, cols] (or a vector: rows 1) in the checkpoint:
 * the tensor's rows first .. first + rows - 1 (first 0 but for a part of
 * Phi-3's qkv_proj or gate_up_proj). */
struct w {
	const struct llm_st_tensor *t;
	int64_t rows, cols, first;
};

struct layer {
	struct w attn_norm, wq, wk, wv, wo, bq, bk, bv, bo, q_norm, k_norm;
	struct w ffn_norm, wgate, wup, wdown;
	struct w attn_post_norm, ffn_post_norm; /* gemma3 */
	int has_qkv_bias, has_o_bias;
};

/* Gemma3RMSNorm scales by 1 + g: norm_offset 1 (gemma3), else 0. */
static double norm_offset;

struct model {
	struct llm_hfconfig c;
	struct llm_safetensors st;
	const char *dir;
	struct w embed, final_norm, lm_head;
	struct layer *layers;
};

/* Look up a tensor and check its shape: [rows, cols], or [cols] when rows
 * is 0. */
/* The tensor name of a multimodal checkpoint's text model: with its
 * prefix ("language_model."). */
static const struct llm_st_tensor *
find(struct model *m, const char *name)
{
	char full[320];
	snprintf(full, sizeof(full), "%s%s", m->c.tensor_prefix, name);
	return llm_st_find(&m->st, full);
}

static struct w
need(struct model *m, const char *name, int64_t rows, int64_t cols)
{
	const struct llm_st_tensor *t = find(m, name);
	struct w w;

	if (!t)
		llm_fatal("%s: missing tensor '%s'", m->dir, name);
	if (!llm_dtype_is_float_weight(t->dtype))
		llm_fatal("%s: tensor '%s' has dtype '%s', expected F32, F16 or BF16", m->dir, name,
		    llm_dtype_st_name(t->dtype));
	if (rows == 0 ? t->ndim != 1 || t->shape[0] != cols :
			t->ndim != 2 || t->shape[0] != rows || t->shape[1] != cols) {
		if (rows == 0)
			llm_fatal("%s: tensor '%s' has the wrong shape, expected [%lld]", m->dir, name,
			    (long long)cols);
		llm_fatal("%s: tensor '%s' has the wrong shape, expected [%lld, %lld]", m->dir, name, (long long)rows,
		    (long long)cols);
	}
	w.t = t;
	w.rows = rows ? rows : 1;
	w.cols = cols;
	w.first = 0;
	return w;
}

/* Rows first .. first + rows - 1 of the fused matrix whole. */
static struct w
part(struct w whole, int64_t first, int64_t rows)
{
	whole.first = first;
	whole.rows = rows;
	return whole;
}

static struct w
need_layer(struct model *m, int64_t i, const char *what, int64_t rows, int64_t cols)
{
	char name[256];

	snprintf(name, sizeof(name), "model.layers.%lld.%s", (long long)i, what);
	return need(m, name, rows, cols);
}

static int
has_layer(struct model *m, int64_t i, const char *what)
{
	char name[256];

	snprintf(name, sizeof(name), "model.layers.%lld.%s", (long long)i, what);
	return find(m, name) != NULL;
}

static void
load(struct model *m, const char *dir)
{
	struct llm_hfconfig *c = &m->c;
	int64_t d, q, kv, f, v;

	m->dir = dir;
	if (llm_hfconfig_load(c, dir) < 0)
		llm_fatal("%s", llm_errmsg());
	norm_offset = llm_family_spec(c->family)->norm_plus_one;
	if (c->n_kv_heads <= 0 || c->n_heads % c->n_kv_heads != 0)
		llm_fatal("%s: num_attention_heads %lld is not a multiple of num_key_value_heads %lld", dir,
		    (long long)c->n_heads, (long long)c->n_kv_heads);
	if (c->head_dim % 2 != 0)
		llm_fatal("%s: head_dim %lld is odd: rotate-half RoPE needs an even one", dir, (long long)c->head_dim);
	if (c->mlp_bias)
		llm_fatal("%s: mlp_bias is not supported", dir);
	if (llm_st_open(&m->st, dir) < 0)
		llm_fatal("%s", llm_errmsg());

	d = c->hidden_size;
	q = c->n_heads * c->head_dim;
	kv = c->n_kv_heads * c->head_dim;
	f = c->intermediate_size;
	v = c->vocab_size;
	m->embed = need(m, "model.embed_tokens.weight", v, d);
	m->final_norm = need(m, "model.norm.weight", 0, d);
	if (c->tie_word_embeddings || !find(m, "lm_head.weight"))
		m->lm_head = m->embed;
	else
		m->lm_head = need(m, "lm_head.weight", v, d);

	m->layers = llm_xcalloc((size_t)c->n_layers, sizeof(*m->layers));
	for (int64_t i = 0; i < c->n_layers; i++) {
		struct layer *l = &m->layers[i];

		l->attn_norm = need_layer(m, i, "input_layernorm.weight", 0, d);
		if (c->family == LLM_FAMILY_PHI3) {
			/* modeling_phi3.py: qkv[..., :q], [q : q + kv], [q + kv :] */
			struct w qkv = need_layer(m, i, "self_attn.qkv_proj.weight", q + 2 * kv, d);
			l->wq = part(qkv, 0, q);
			l->wk = part(qkv, q, kv);
			l->wv = part(qkv, q + kv, kv);
		} else {
			l->wq = need_layer(m, i, "self_attn.q_proj.weight", q, d);
			l->wk = need_layer(m, i, "self_attn.k_proj.weight", kv, d);
			l->wv = need_layer(m, i, "self_attn.v_proj.weight", kv, d);
		}
		l->wo = need_layer(m, i, "self_attn.o_proj.weight", d, q);
		/* Qwen2 always has q/k/v biases and never an o_proj bias; Llama
		 * and Qwen3 have all four when attention_bias is set. */
		l->has_qkv_bias = c->family == LLM_FAMILY_QWEN2 || c->attention_bias;
		l->has_o_bias = c->family != LLM_FAMILY_QWEN2 && c->attention_bias;
		if (c->qk_norm) {
			l->q_norm = need_layer(m, i, "self_attn.q_norm.weight", 0, c->head_dim);
			l->k_norm = need_layer(m, i, "self_attn.k_norm.weight", 0, c->head_dim);
		}
		if (l->has_qkv_bias) {
			l->bq = need_layer(m, i, "self_attn.q_proj.bias", 0, q);
			l->bk = need_layer(m, i, "self_attn.k_proj.bias", 0, kv);
			l->bv = need_layer(m, i, "self_attn.v_proj.bias", 0, kv);
		} else if (has_layer(m, i, "self_attn.q_proj.bias")) {
			llm_fatal("%s: tensor 'model.layers.%lld.self_attn.q_proj.bias' is present "
				  "but config.json does not set attention_bias",
			    dir, (long long)i);
		}
		if (l->has_o_bias)
			l->bo = need_layer(m, i, "self_attn.o_proj.bias", 0, d);
		if (c->post_norms) {
			/* Gemma3DecoderLayer: post_attention_layernorm is the
			 * attention output's; the MLP's input norm is
			 * pre_feedforward_layernorm */
			l->attn_post_norm = need_layer(m, i, "post_attention_layernorm.weight", 0, d);
			l->ffn_norm = need_layer(m, i, "pre_feedforward_layernorm.weight", 0, d);
			l->ffn_post_norm = need_layer(m, i, "post_feedforward_layernorm.weight", 0, d);
		} else {
			l->ffn_norm = need_layer(m, i, "post_attention_layernorm.weight", 0, d);
		}
		if (c->family == LLM_FAMILY_PHI3) {
			/* gate, up = gate_up_proj(x).chunk(2, dim=-1) */
			struct w gu = need_layer(m, i, "mlp.gate_up_proj.weight", 2 * f, d);
			l->wgate = part(gu, 0, f);
			l->wup = part(gu, f, f);
		} else {
			l->wgate = need_layer(m, i, "mlp.gate_proj.weight", f, d);
			l->wup = need_layer(m, i, "mlp.up_proj.weight", f, d);
		}
		l->wdown = need_layer(m, i, "mlp.down_proj.weight", d, f);
	}
}

/* Row r of w converted to double.  Safetensors data is little-endian and
 * need not be aligned, so elements are assembled byte by byte. */
static void
row(const struct w *w, int64_t r, double *out)
{
	const uint8_t *p = (const uint8_t *)w->t->data;
	int64_t n = w->cols;

	r += w->first;
	switch (w->t->dtype) {
	case LLM_DT_F32:
		p += (size_t)(r * n) * 4;
		for (int64_t i = 0; i < n; i++, p += 4) {
			uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
			float f;
			memcpy(&f, &u, 4);
			out[i] = f;
		}
		break;
	case LLM_DT_F16:
		p += (size_t)(r * n) * 2;
		for (int64_t i = 0; i < n; i++, p += 2)
			out[i] = llm_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
		break;
	case LLM_DT_BF16:
		p += (size_t)(r * n) * 2;
		for (int64_t i = 0; i < n; i++, p += 2)
			out[i] = llm_bf16_to_f32((uint16_t)(p[0] | p[1] << 8));
		break;
	default:
		llm_fatal("unreachable dtype");
	}
}

/* --q8-activations: the products take x rounded to int8 blocks of 32 as
 * llm-import --activations q8 defines it (share/doc/llm/ir.txt
 * "Activations"), in float as there: d = max|x| / 127, q = roundeven(x *
 * (127 / max|x|)), x^ = d * q; the product itself in double. */
static int q8_activations;

static double *
q8_round(const double *x, int n, int64_t cols)
{
	double *r = llm_xcalloc((size_t)n * (size_t)cols, sizeof(double));
	for (size_t b = 0; b < (size_t)n * (size_t)cols; b += 32) {
		float m = 0;
		for (int i = 0; i < 32; i++)
			m = fmaxf(m, fabsf((float)x[b + i]));
		float d = m / 127.0f, id = m == 0 ? 0 : 127.0f / m;
		for (int i = 0; i < 32; i++)
			r[b + i] = (double)(nearbyintf((float)x[b + i] * id) * d);
	}
	return r;
}

/* --bf16-activations: the products with bf16 weights take x rounded to
 * bf16 (ir.txt "Activations"); the product itself in double. */
static int bf16_activations;

static double *
bf16_round(const double *x, int n, int64_t cols)
{
	double *r = llm_xcalloc((size_t)n * (size_t)cols, sizeof(double));
	for (size_t i = 0; i < (size_t)n * (size_t)cols; i++)
		r[i] = llm_bf16_to_f32(llm_f32_to_bf16((float)x[i]));
	return r;
}

/* y[t][o] = sum_i x[t][i] * w[o][i] (+ b[o]) for n positions.  x is
 * [n, w->cols], y is [n, w->rows]; buf holds one row of w. */
static void
linear(double *y, const double *x, int n, const struct w *w, const struct w *b, double *buf)
{
	double *bias = NULL, *xr = NULL;

	if (q8_activations) {
		if (w->cols % 32)
			llm_fatal("--q8-activations: a product of %lld columns, not blocks of 32", (long long)w->cols);
		x = xr = q8_round(x, n, w->cols);
	} else if (bf16_activations && w->t->dtype == LLM_DT_BF16) {
		x = xr = bf16_round(x, n, w->cols);
	}

	if (b) {
		bias = llm_xmalloc((size_t)b->cols * sizeof(double));
		row(b, 0, bias);
	}
	for (int64_t o = 0; o < w->rows; o++) {
		row(w, o, buf);
		for (int t = 0; t < n; t++) {
			const double *xt = x + (size_t)t * w->cols;
			double s = 0;
			for (int64_t i = 0; i < w->cols; i++)
				s += xt[i] * buf[i];
			y[(size_t)t * w->rows + o] = s + (bias ? bias[o] : 0);
		}
	}
	free(bias);
	free(xr);
}

/* out[t] = x[t] * rsqrt(mean(x^2) + eps) * (norm_offset + g), for n rows
 * of d (out may be x). */
static void
rmsnorm(double *out, const double *x, int n, int64_t d, const struct w *g, double eps, double *buf)
{
	row(g, 0, buf);
	for (int64_t i = 0; i < d; i++)
		buf[i] += norm_offset;
	for (int t = 0; t < n; t++) {
		const double *xt = x + (size_t)t * d;
		double ss = 0, r;
		for (int64_t i = 0; i < d; i++)
			ss += xt[i] * xt[i];
		r = 1.0 / sqrt(ss / (double)d + eps);
		for (int64_t i = 0; i < d; i++)
			out[(size_t)t * d + i] = xt[i] * r * buf[i];
	}
}

/* inv_freq[i] of dim rotated dims, as transformers computes it for a
 * sequence of n positions; a local layer (gemma3's rotary_emb_local):
 * rope_local_base_freq, unscaled. */
static double
inv_freq_of(const struct llm_hfconfig *c, int64_t i, int64_t dim, int n, int local)
{
	const struct llm_rope_scaling none = {0}, *s = local ? &none : &c->rope_scaling;
	double f = pow(local ? c->rope_local_theta : c->rope_theta, -(double)(2 * i) / (double)dim);
	/* longrope: 1 / (ext * base^(2i/dim)), the long factors for a
	 * sequence past the original context */
	if (s->longrope)
		return f / (n > s->original_max_position_embeddings ? s->long_factors[i] : s->factors[i]);
	/* linear (hfconfig.c gives its factor as factors): inv_freq / factor */
	if (s->nfactors)
		return f / s->factors[i];
	if (!s->llama3)
		return f;
	/* llama3: torch.where(wavelen > low_wavelen, f / factor, f), then the
	 * medium band (neither below high_wavelen nor above low_wavelen)
	 * blended by smooth_factor */
	double old = s->original_max_position_embeddings, wavelen = 2 * M_PI / f;
	double low_wavelen = old / s->low_freq_factor, high_wavelen = old / s->high_freq_factor;
	double scaled = wavelen > low_wavelen ? f / s->factor : f;
	double smooth = (old / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
	if (!(wavelen < high_wavelen) && !(wavelen > low_wavelen))
		return (1 - smooth) * scaled / s->factor + smooth * scaled;
	return scaled;
}

/* Rotate-half RoPE in place on nh heads of hd at position pos of a
 * sequence of n: the first rotary_dim dims of each head (the rest pass,
 * as partial_rotary_factor has it), x' = x * cos + rotate_half(x) * sin,
 * where rotate_half(x) = (-x2, x1) and both halves share the angles
 * pos * inv_freq[i]; cos and sin times the attention factor (longrope). */
static void
rope(double *x, int64_t nh, int64_t hd, int pos, int n, const struct llm_hfconfig *cf, int local)
{
	int64_t rd = cf->rotary_dim, half = rd / 2;
	double af = cf->rope_scaling.attention_factor && !local ? cf->rope_scaling.attention_factor : 1;

	for (int64_t i = 0; i < half; i++) {
		double inv_freq = inv_freq_of(cf, i, rd, n, local);
		double a = (double)pos * inv_freq, c = cos(a) * af, s = sin(a) * af;
		for (int64_t h = 0; h < nh; h++) {
			double *xh = x + h * hd;
			double x1 = xh[i], x2 = xh[i + half];
			xh[i] = x1 * c - x2 * s;
			xh[i + half] = x2 * c + x1 * s;
		}
	}
}

/* Logits for tokens[0..n-1] at positions 0..n-1: rows first..n-1 of
 * [n, vocab] go to logits (row 0 of logits = position first). */
/* The logits of positions first .. n-1 into logits; with hidden, their
 * hidden states after the final norm (the head's input, hidden_size a
 * row) into logits instead. */
static void
forward(struct model *m, const int64_t *tokens, int n, int first, int hidden, double *logits)
{
	const struct llm_hfconfig *c = &m->c;
	int64_t d = c->hidden_size, hd = c->head_dim, nh = c->n_heads, nkv = c->n_kv_heads;
	int64_t q_dim = nh * hd, kv_dim = nkv * hd, f = c->intermediate_size;
	int64_t group = nh / nkv, widest = d;
	double scale = c->attn_scale ? c->attn_scale : 1.0 / sqrt((double)hd);
	double *x, *h, *q, *k, *v, *att, *o, *g, *u, *buf, *p;

	if (f > widest)
		widest = f;
	if (q_dim > widest)
		widest = q_dim;
	x = llm_xcalloc((size_t)n * d, sizeof(double));      /* residual stream [n, d] */
	h = llm_xcalloc((size_t)n * d, sizeof(double));      /* normed stream [n, d] */
	q = llm_xcalloc((size_t)n * q_dim, sizeof(double));  /* [n, nh, hd] */
	k = llm_xcalloc((size_t)n * kv_dim, sizeof(double)); /* [n, nkv, hd] */
	v = llm_xcalloc((size_t)n * kv_dim, sizeof(double));
	att = llm_xcalloc((size_t)n * q_dim, sizeof(double)); /* attention output */
	o = llm_xcalloc((size_t)n * d, sizeof(double));
	g = llm_xcalloc((size_t)n * f, sizeof(double));
	u = llm_xcalloc((size_t)n * f, sizeof(double));
	buf = llm_xcalloc((size_t)widest, sizeof(double)); /* one weight row */
	p = llm_xcalloc((size_t)n, sizeof(double));

	for (int t = 0; t < n; t++)
		row(&m->embed, tokens[t], x + (size_t)t * d);
	/* Gemma3TextScaledWordEmbedding: times embed_scale */
	for (size_t i = 0; c->embed_scale && i < (size_t)n * d; i++)
		x[i] *= c->embed_scale;

	for (int64_t li = 0; li < c->n_layers; li++) {
		const struct layer *l = &m->layers[li];
		/* gemma3: a local layer (not a multiple of the pattern) has
		 * the window and its own RoPE base; else every layer has
		 * the window (mistral) */
		int local = !c->window_pattern || (li + 1) % c->window_pattern != 0;
		int64_t win = local ? c->sliding_window : 0;
		int own = local && c->rope_local_theta;

		rmsnorm(h, x, n, d, &l->attn_norm, c->rms_norm_eps, buf);
		linear(q, h, n, &l->wq, l->has_qkv_bias ? &l->bq : NULL, buf);
		linear(k, h, n, &l->wk, l->has_qkv_bias ? &l->bk : NULL, buf);
		linear(v, h, n, &l->wv, l->has_qkv_bias ? &l->bv : NULL, buf);
		/* Qwen3Attention: q_norm and k_norm, RMSNorm over each head */
		if (c->qk_norm) {
			rmsnorm(q, q, n * (int)nh, hd, &l->q_norm, c->rms_norm_eps, buf);
			rmsnorm(k, k, n * (int)nkv, hd, &l->k_norm, c->rms_norm_eps, buf);
		}
		for (int t = 0; t < n; t++) {
			rope(q + (size_t)t * q_dim, nh, hd, t, n, c, own);
			rope(k + (size_t)t * kv_dim, nkv, hd, t, n, c, own);
		}
		/* Causal attention: position t sees positions 0..t, or with
		 * Mistral's sliding window W the last W of them (t - W < j). */
		for (int t = 0; t < n; t++)
			for (int64_t hh = 0; hh < nh; hh++) {
				const double *qh = q + (size_t)t * q_dim + hh * hd;
				int64_t kh = hh / group;
				double max = -INFINITY, sum = 0;
				double *out = att + (size_t)t * q_dim + hh * hd;
				int j0 = win && t >= win ? t - (int)win + 1 : 0;

				for (int j = j0; j <= t; j++) {
					const double *kj = k + (size_t)j * kv_dim + kh * hd;
					double s = 0;
					for (int64_t i = 0; i < hd; i++)
						s += qh[i] * kj[i];
					p[j] = s * scale;
					if (p[j] > max)
						max = p[j];
				}
				for (int j = j0; j <= t; j++) {
					p[j] = exp(p[j] - max);
					sum += p[j];
				}
				for (int64_t i = 0; i < hd; i++)
					out[i] = 0;
				for (int j = j0; j <= t; j++) {
					const double *vj = v + (size_t)j * kv_dim + kh * hd;
					double w = p[j] / sum;
					for (int64_t i = 0; i < hd; i++)
						out[i] += w * vj[i];
				}
			}
		linear(o, att, n, &l->wo, l->has_o_bias ? &l->bo : NULL, buf);
		if (c->post_norms)
			rmsnorm(o, o, n, d, &l->attn_post_norm, c->rms_norm_eps, buf);
		for (size_t i = 0; i < (size_t)n * d; i++)
			x[i] += o[i];

		rmsnorm(h, x, n, d, &l->ffn_norm, c->rms_norm_eps, buf);
		linear(g, h, n, &l->wgate, NULL, buf);
		linear(u, h, n, &l->wup, NULL, buf);
		for (size_t i = 0; i < (size_t)n * f; i++) {
			double a = g[i];
			/* SiLU, or gelu_pytorch_tanh: 0.5 a (1 + tanh(sqrt(2/pi) (a + 0.044715 a^3))) */
			g[i] = c->act == LLM_ACT_GELU_TANH ?
			    0.5 * a * (1 + tanh(sqrt(2 / M_PI) * (a + 0.044715 * a * a * a))) * u[i] :
			    a / (1.0 + exp(-a)) * u[i];
		}
		linear(o, g, n, &l->wdown, NULL, buf);
		if (c->post_norms)
			rmsnorm(o, o, n, d, &l->ffn_post_norm, c->rms_norm_eps, buf);
		for (size_t i = 0; i < (size_t)n * d; i++)
			x[i] += o[i];
	}

	/* Final norm and the LM head, on the requested positions only. */
	rmsnorm(h, x + (size_t)first * d, n - first, d, &m->final_norm, c->rms_norm_eps, buf);
	if (hidden)
		memcpy(logits, h, (size_t)(n - first) * d * sizeof(double));
	else
		linear(logits, h, n - first, &m->lm_head, NULL, buf);

	free(x), free(h), free(q), free(k), free(v), free(att);
	free(o), free(g), free(u), free(buf), free(p);
}

/* "1,2,3" -> ids; a usage error on anything else. */
static int64_t *
parse_tokens(const char *s, int *n)
{
	int64_t *ids = NULL;
	char *copy = llm_xstrdup(s), *tok, *save = NULL;
	int cap = 0;

	*n = 0;
	if (!*s || s[strlen(s) - 1] == ',' || *s == ',' || strstr(s, ",,")) {
		llm_warn("--tokens '%s': expected comma-separated token ids like 1,2,3", s);
		usage();
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int64_t id;
		if (tok[0] < '0' || tok[0] > '9' || llm_parse_i64(tok, 0, INT32_MAX, &id) < 0) {
			llm_warn("--tokens '%s': '%s' is not a token id (a non-negative integer)", s, tok);
			usage();
		}
		if (*n == cap) {
			cap = cap ? 2 * cap : 16;
			ids = llm_xreallocarray(ids, (size_t)cap, sizeof(*ids));
		}
		ids[(*n)++] = id;
	}
	free(copy);
	return ids;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"all", no_argument, NULL, 'a'},
		{"hidden", no_argument, NULL, 'H'},
		{"mean", no_argument, NULL, 'M'},
		{"q8-activations", no_argument, NULL, 'Q'},
		{"bf16-activations", no_argument, NULL, 'B'},
		{"help", no_argument, NULL, 'h'},
		{"tokens", required_argument, NULL, 't'},
		{0},
	};
	const char *out_path = "-", *token_arg = NULL;
	struct llm_out out;
	struct model m = {0};
	int64_t *tokens;
	double *logits;
	int all = 0, hidden = 0, mean = 0, n, first, ch;

	llm_setprog(argv[0]);
	argv[0] = (char *)llm_prog; /* getopt's messages start with "prog:" */
	while ((ch = getopt_long(argc, argv, "aho:t:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a':
			all = 1;
			break;
		case 'H':
			hidden = 1;
			break;
		case 'M':
			mean = 1;
			break;
		case 'Q':
			q8_activations = 1;
			break;
		case 'B':
			bf16_activations = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return LLM_EXIT_OK;
		case 'o':
			out_path = optarg;
			break;
		case 't':
			token_arg = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || !token_arg || (q8_activations && bf16_activations) || (all && mean))
		usage();
	tokens = parse_tokens(token_arg, &n);

	load(&m, argv[optind]);
	for (int i = 0; i < n; i++)
		if (tokens[i] >= m.c.vocab_size)
			llm_fatal("%s: token id %lld is out of range: vocab_size is %lld", argv[optind],
			    (long long)tokens[i], (long long)m.c.vocab_size);

	first = all || mean ? 0 : n - 1;
	int64_t width = hidden ? m.c.hidden_size : m.c.vocab_size;
	logits = llm_xcalloc((size_t)(n - first) * width, sizeof(double));
	forward(&m, tokens, n, first, hidden, logits);
	size_t rows = (size_t)(n - first);
	if (mean) {
		/* the rows' mean, in row 0 */
		for (int64_t j = 0; j < width; j++) {
			double sum = 0;
			for (size_t r = 0; r < rows; r++)
				sum += logits[r * width + j];
			logits[j] = sum / (double)rows;
		}
		rows = 1;
	}

	if (llm_out_open(&out, out_path) < 0)
		llm_fatal("%s", llm_errmsg());
	for (size_t i = 0; i < rows * width; i++) {
		float f = (float)logits[i];
		uint32_t u;
		uint8_t b[4];
		memcpy(&u, &f, 4);
		b[0] = (uint8_t)u, b[1] = (uint8_t)(u >> 8), b[2] = (uint8_t)(u >> 16), b[3] = (uint8_t)(u >> 24);
		fwrite(b, 1, 4, out.fp);
	}
	if (llm_out_commit(&out) < 0)
		llm_fatal("%s", llm_errmsg());

	free(logits);
	free(tokens);
	free(m.layers);
	llm_st_close(&m.st);
	return LLM_EXIT_OK;
}
