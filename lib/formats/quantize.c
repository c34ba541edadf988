/* quantize.c: f32 rows to ggml blocks (quant.h: llm_quantize), as
 * llama-quantize writes them without an importance matrix: ggml's
 * reference quantizers (quantize_row_*_ref in ggml-quants.c), the same
 * algorithm and the same f32 operations in the same order, so the blocks
 * are byte-identical to llama.cpp's (tests/quant.bats compares them with
 * the libggml llama.cpp ships).  As in quant.c, no product may be fused
 * with a sum into an FMA: -std=c11 keeps gcc from contracting, the pragma
 * keeps clang from it.
 *
 * Q4_0 .. Q8_0 take one scale from the block's largest magnitude (or its
 * range, for the types with a minimum).  The k-quants search: every
 * sub-block gets the scale (and minimum) that minimises a weighted squared
 * error over a few candidate scales (make_qkx2 for Q4_K/Q5_K, make_qx for
 * Q6_K), the sub-block scales are then quantized to 6 or 8 bits against
 * the super-block's f16 scale, and the codes are recomputed from the
 * rounded scales. */
#include <math.h>
#include <string.h>

#include "../base/dtype.h"
#include "gguf.h"
#include "quant.h"
#include "../base/util.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define QK 32
#define QK_K 256
#define GROUP_MAX_EPS 1e-15f

static void
put_half(uint8_t *p, float f)
{
	uint16_t h = llm_f32_to_f16(f);
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

/* The f32 value of an f16 just stored. */
static float
get_half(const uint8_t *p)
{
	return llm_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static int
imin(int a, int b)
{
	return a < b ? a : b;
}

static int
imax(int a, int b)
{
	return a > b ? a : b;
}

/* Round to nearest, ties to even, by adding 1.5 * 2^23 (exact for
 * |f| < 2^22, which every caller's argument is): ggml's nearest_int. */
static int
nearest(float f)
{
	float v = f + 12582912.f;
	int32_t i;
	memcpy(&i, &v, sizeof(i));
	return (i & 0x007fffff) - 0x00400000;
}

/* The element of largest magnitude (the first of equal ones), signed. */
static float
signed_absmax(const float *x, int n)
{
	float amax = 0, max = 0;
	for (int j = 0; j < n; j++)
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	return max;
}

static void
range(const float *x, int n, float *lo, float *hi)
{
	*lo = INFINITY;
	*hi = -INFINITY;
	for (int j = 0; j < n; j++) {
		if (x[j] < *lo)
			*lo = x[j];
		if (x[j] > *hi)
			*hi = x[j];
	}
}

/* Q8_0: d = absmax / 127, q = round(x / d) (halves away from zero). */
static void
q_q8_0(const float *x, uint8_t *b)
{
	float amax = 0;
	for (int j = 0; j < QK; j++)
		amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
	float d = amax / 127, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	for (int j = 0; j < QK; j++)
		b[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
}

/* Q4_0: d = -max / 8 (max the signed element of largest magnitude), so
 * that it is code 0; q = min(15, trunc(x / d + 8.5)). */
static void
q_q4_0(const float *x, uint8_t *b)
{
	float d = signed_absmax(x, QK) / -8, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	for (int j = 0; j < QK / 2; j++) {
		int lo = imin(15, (int)(x[j] * id + 8.5f)), hi = imin(15, (int)(x[j + QK / 2] * id + 8.5f));
		b[2 + j] = (uint8_t)(lo | hi << 4);
	}
}

/* Q4_1: d = (max - min) / 15, m = min, q = min(15, trunc((x - m) / d + 0.5)). */
static void
q_q4_1(const float *x, uint8_t *b)
{
	float lo, hi;
	range(x, QK, &lo, &hi);
	float d = (hi - lo) / 15, id = d ? 1.0f / d : 0.0f;
	put_half(b, d);
	put_half(b + 2, lo);
	for (int j = 0; j < QK / 2; j++) {
		int a = imin(15, (int)((x[j] - lo) * id + 0.5f)), c = imin(15, (int)((x[j + QK / 2] - lo) * id + 0.5f));
		b[4 + j] = (uint8_t)(a | c << 4);
	}
}

/* The 5-bit codes of Q5_0/Q5_1: low nibbles as Q4_0, the fifth bits in a
 * little-endian u32 (bit j: element j). */
static void
five_bit_codes(const int *c, uint8_t *qh, uint8_t *qs)
{
	uint32_t h = 0;
	for (int j = 0; j < QK / 2; j++) {
		qs[j] = (uint8_t)((c[j] & 15) | (c[j + QK / 2] & 15) << 4);
		h |= (uint32_t)(c[j] >> 4 & 1) << j | (uint32_t)(c[j + QK / 2] >> 4 & 1) << (j + QK / 2);
	}
	llm_put_le(qh, h, 4);
}

/* Q5_0: d = -max / 16, q = min(31, trunc(x / d + 16.5)). */
static void
q_q5_0(const float *x, uint8_t *b)
{
	float d = signed_absmax(x, QK) / -16, id = d ? 1.0f / d : 0.0f;
	int c[QK];
	put_half(b, d);
	for (int j = 0; j < QK; j++)
		c[j] = imin(31, (int)(x[j] * id + 16.5f));
	five_bit_codes(c, b + 2, b + 6);
}

/* Q5_1: d = (max - min) / 31, m = min, q = trunc((x - m) / d + 0.5). */
static void
q_q5_1(const float *x, uint8_t *b)
{
	float lo, hi;
	range(x, QK, &lo, &hi);
	float d = (hi - lo) / 31, id = d ? 1.0f / d : 0.0f;
	int c[QK];
	put_half(b, d);
	put_half(b + 2, lo);
	for (int j = 0; j < QK; j++)
		c[j] = (uint8_t)((x[j] - lo) * id + 0.5f);
	five_bit_codes(c, b + 4, b + 8);
}

/* A scale and minimum for n elements with codes 0 .. nmax, x ~ scale * L
 * - min (*neg_min = min >= 0): from the range, then nstep + 1 candidate
 * inverse scales (rmin + rdelta * is + nmax) / range, each fitted by
 * weighted least squares on its codes; the one of least weighted squared
 * error wins (ggml's make_qkx2_quants, without the absolute-error
 * option). */
static float
fit_scale_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min, float rmin, float rdelta,
    int nstep)
{
	uint8_t Laux[QK];
	float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];

	for (int i = 1; i < n; i++) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		sum_w += w[i];
		sum_x += w[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, (size_t)n);
		*neg_min = -min;
		return 0.f;
	}
	float iscale = nmax / (max - min), scale = 1 / iscale, best = 0;
	for (int i = 0; i < n; i++) {
		L[i] = (uint8_t)imax(0, imin(nmax, nearest(iscale * (x[i] - min))));
		float diff = scale * L[i] + min - x[i];
		best += w[i] * (diff * diff);
	}
	for (int is = 0; is <= nstep; is++) {
		iscale = (rmin + rdelta * is + nmax) / (max - min);
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;
		for (int i = 0; i < n; i++) {
			int l = imax(0, imin(nmax, nearest(iscale * (x[i] - min))));
			Laux[i] = (uint8_t)l;
			sum_l += w[i] * l;
			sum_l2 += w[i] * l * l;
			sum_xl += w[i] * l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		if (!(D > 0))
			continue;
		float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
		float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
		if (this_min > 0) {
			this_min = 0;
			this_scale = sum_xl / sum_l2;
		}
		float err = 0;
		for (int i = 0; i < n; i++) {
			float diff = this_scale * Laux[i] + this_min - x[i];
			err += w[i] * (diff * diff);
		}
		if (err < best) {
			memcpy(L, Laux, (size_t)n);
			best = err;
			scale = this_scale;
			min = this_min;
		}
	}
	*neg_min = -min;
	return scale;
}

/* Q4_K / Q5_K (nmax 15 / 31): eight sub-blocks of 32, each fitted with
 * weights sqrt(mean x^2) + |x|; their scales and minimums quantized to 6
 * bits against d = max scale / 63 and dmin = max min / 63 (packed as
 * quant.c's scales_k4 reads them), and the codes recomputed from the
 * rounded values.  Returns the codes in L[256] for the caller to pack. */
static void
q_k_super(const float *x, uint8_t *b, int nmax, float rmin, int nstep, uint8_t *L)
{
	float scales[QK_K / 32], mins[QK_K / 32], w[32], max_scale = 0, max_min = 0;
	uint8_t *sc = b + 4;

	for (int j = 0; j < QK_K / 32; j++) {
		const float *xs = x + 32 * j;
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += xs[l] * xs[l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			w[l] = av_x + fabsf(xs[l]);
		scales[j] = fit_scale_min(32, nmax, xs, w, L + 32 * j, &mins[j], rmin, 0.1f, nstep);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f, inv_min = max_min > 0 ? 63.f / max_min : 0.f;
	uint8_t ls[8], lm[8];
	for (int j = 0; j < QK_K / 32; j++) {
		ls[j] = (uint8_t)imin(63, (uint8_t)nearest(inv_scale * scales[j]));
		lm[j] = (uint8_t)imin(63, (uint8_t)nearest(inv_min * mins[j]));
	}
	for (int j = 0; j < 4; j++) {
		sc[j] = (uint8_t)(ls[j] | (ls[j + 4] >> 4) << 6);
		sc[j + 4] = (uint8_t)(lm[j] | (lm[j + 4] >> 4) << 6);
		sc[j + 8] = (uint8_t)((ls[j + 4] & 15) | (lm[j + 4] & 15) << 4);
	}
	put_half(b, max_scale / 63.f);
	put_half(b + 2, max_min / 63.f);
	float d0 = get_half(b), m0 = get_half(b + 2);
	for (int j = 0; j < QK_K / 32; j++) {
		float d = d0 * ls[j];
		if (!d)
			continue;
		float dm = m0 * lm[j];
		for (int i = 0; i < 32; i++)
			L[32 * j + i] = (uint8_t)imax(0, imin(nmax, nearest((x[32 * j + i] + dm) / d)));
	}
}

/* Q4_K, 144 bytes: d, dmin, 12 bytes of scales, 128 bytes of nibbles
 * (chunk c of 64 elements: byte 32c + l holds element 64c + l low and
 * 64c + 32 + l high). */
static void
q_q4_k(const float *x, uint8_t *b)
{
	uint8_t L[QK_K], *q = b + 16;
	q_k_super(x, b, 15, -1.f, 20, L);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++)
			q[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + 32 + l] << 4);
}

/* Q5_K, 176 bytes: as Q4_K with 32 bytes of fifth bits before the
 * nibbles (bit 2c of qh[l]: element 64c + l; bit 2c + 1: 64c + 32 + l). */
static void
q_q5_k(const float *x, uint8_t *b)
{
	uint8_t L[QK_K], *qh = b + 16, *q = b + 48;
	q_k_super(x, b, 31, -0.5f, 15, L);
	memset(qh, 0, 32);
	for (int c = 0; c < 4; c++)
		for (int l = 0; l < 32; l++) {
			int a = L[64 * c + l], e = L[64 * c + 32 + l];
			qh[l] |= (uint8_t)((a >> 4) << 2 * c | (e >> 4) << (2 * c + 1));
			q[32 * c + l] = (uint8_t)((a & 15) | (e & 15) << 4);
		}
}

/* The scale of 16 elements with signed codes -nmax .. nmax - 1 (stored
 * + nmax in L), weights x^2: the scale from the largest magnitude, then
 * 18 nearby inverse scales, each fitted by least squares; the best fit
 * wins (ggml's make_qx_quants, rmse_type 1, no importance weights). */
static float
fit_scale(int n, int nmax, const float *x, int8_t *L)
{
	float max = 0, amax = 0;
	for (int i = 0; i < n; i++)
		if (fabsf(x[i]) > amax) {
			amax = fabsf(x[i]);
			max = x[i];
		}
	if (amax < GROUP_MAX_EPS) {
		memset(L, 0, (size_t)n);
		return 0.f;
	}
	float iscale = -nmax / max, sumlx = 0, suml2 = 0;
	for (int i = 0; i < n; i++) {
		int l = imax(-nmax, imin(nmax - 1, nearest(iscale * x[i])));
		L[i] = (int8_t)(l + nmax);
		float w = x[i] * x[i];
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	float scale = suml2 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		if (is == 0)
			continue;
		iscale = -(nmax + 0.1f * is) / max;
		sumlx = suml2 = 0;
		for (int i = 0; i < n; i++) {
			int l = imax(-nmax, imin(nmax - 1, nearest(iscale * x[i])));
			float w = x[i] * x[i];
			sumlx += w * x[i] * l;
			suml2 += w * l * l;
		}
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (int i = 0; i < n; i++)
				L[i] = (int8_t)(nmax + imax(-nmax, imin(nmax - 1, nearest(iscale * x[i]))));
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

/* Q6_K, 210 bytes: ql[128], qh[64], 16 int8 scales, d.  Sixteen groups of
 * 16 fitted with signed 6-bit codes; the scales quantized to int8
 * against d = -max scale / 128 (max: the signed one of largest magnitude),
 * the codes recomputed from the rounded scales, then packed as quant.c's
 * sp_q6_k reads them. */
static void
q_q6_k(const float *x, uint8_t *b)
{
	int8_t L[QK_K];
	float scales[QK_K / 16], max_scale = 0, max_abs = 0;
	uint8_t *ql = b, *qh = b + 128;
	int8_t *sc = (int8_t *)(b + 192);

	for (int g = 0; g < QK_K / 16; g++) {
		scales[g] = fit_scale(16, 32, x + 16 * g, L + 16 * g);
		if (fabsf(scales[g]) > max_abs) {
			max_abs = fabsf(scales[g]);
			max_scale = scales[g];
		}
	}
	if (max_abs < GROUP_MAX_EPS) {
		memset(b, 0, 210);
		return;
	}
	float iscale = -128.f / max_scale;
	put_half(b + 208, 1 / iscale);
	float d0 = get_half(b + 208);
	for (int g = 0; g < QK_K / 16; g++)
		sc[g] = (int8_t)imin(127, nearest(iscale * scales[g]));
	for (int g = 0; g < QK_K / 16; g++) {
		float d = d0 * sc[g];
		if (!d)
			continue;
		for (int i = 0; i < 16; i++)
			L[16 * g + i] = (int8_t)(imax(-32, imin(31, nearest(x[16 * g + i] / d))) + 32);
	}
	for (int h = 0; h < 2; h++) {
		const int8_t *c = L + 128 * h;
		for (int l = 0; l < 32; l++) {
			ql[64 * h + l] = (uint8_t)((c[l] & 15) | (c[l + 64] & 15) << 4);
			ql[64 * h + 32 + l] = (uint8_t)((c[l + 32] & 15) | (c[l + 96] & 15) << 4);
			qh[32 * h + l] = (uint8_t)(c[l] >> 4 | (c[l + 32] >> 4) << 2 | (c[l + 64] >> 4) << 4 |
			    (c[l + 96] >> 4) << 6);
		}
	}
}

/* a table */
/* clang-format off */
static const struct {
	uint32_t type;
	int blck, bytes;
	void (*quantize)(const float *, uint8_t *);
} quantizers[] = {
	{LLM_GGML_Q8_0, QK, 34, q_q8_0}, {LLM_GGML_Q4_0, QK, 18, q_q4_0},
	{LLM_GGML_Q4_1, QK, 20, q_q4_1}, {LLM_GGML_Q5_0, QK, 22, q_q5_0},
	{LLM_GGML_Q5_1, QK, 24, q_q5_1}, {LLM_GGML_Q4_K, QK_K, 144, q_q4_k},
	{LLM_GGML_Q5_K, QK_K, 176, q_q5_k}, {LLM_GGML_Q6_K, QK_K, 210, q_q6_k},
};
/* clang-format on */

int
llm_quantize_supported(uint32_t t)
{
	for (size_t i = 0; i < sizeof(quantizers) / sizeof(quantizers[0]); i++)
		if (quantizers[i].type == t)
			return 1;
	return 0;
}

int
llm_quantize(uint32_t t, const float *src, size_t n, void *dst)
{
	for (size_t i = 0; i < sizeof(quantizers) / sizeof(quantizers[0]); i++) {
		if (quantizers[i].type != t)
			continue;
		size_t bl = (size_t)quantizers[i].blck;
		if (n % bl)
			return -1;
		for (size_t k = 0; k < n / bl; k++)
			quantizers[i].quantize(src + k * bl, (uint8_t *)dst + k * (size_t)quantizers[i].bytes);
		return 0;
	}
	return -1;
}
