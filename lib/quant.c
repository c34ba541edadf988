/* quant.c: see quant.h.
 *
 * One decoder per block type, each taking one block's bytes.  Every value
 * is computed with the f32 operations ggml uses, in its order: a product
 * of an f16 scale and a small integer is exact or rounded once, a k-quant
 * sub-block scale d*sc is rounded before it multiplies the code, and a
 * minimum is subtracted (or added) after the product is rounded.  The
 * compiler must not fuse a product and a sum into an FMA (one rounding
 * instead of two): the Makefile builds with -std=c11, where gcc does not
 * contract, and the pragma below says the same to clang. */
#include <stdio.h>
#include <string.h>

#include "dtype.h"
#include "gguf.h"
#include "quant.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define QK 32    /* elements per block of Q4_0 .. Q8_0 */
#define QK_K 256 /* elements per super-block of the k-quants */

static float
half(const uint8_t *p)
{
	return llm_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* Q4_0, 18 bytes: f16 d, 16 bytes of 4-bit codes q (element j in the low
 * nibble of byte j, element j+16 in its high nibble); x = (q - 8) * d. */
static void
dq_q4_0(const uint8_t *b, float *y)
{
	float d = half(b);
	const uint8_t *qs = b + 2;
	for (int j = 0; j < QK / 2; j++) {
		y[j] = (float)((qs[j] & 15) - 8) * d;
		y[j + QK / 2] = (float)((qs[j] >> 4) - 8) * d;
	}
}

/* Q4_1, 20 bytes: f16 d, f16 m, codes as Q4_0; x = q * d + m. */
static void
dq_q4_1(const uint8_t *b, float *y)
{
	float d = half(b), m = half(b + 2);
	const uint8_t *qs = b + 4;
	for (int j = 0; j < QK / 2; j++) {
		y[j] = (float)(qs[j] & 15) * d + m;
		y[j + QK / 2] = (float)(qs[j] >> 4) * d + m;
	}
}

/* The fifth bits of Q5_0/Q5_1: bit j of the little-endian u32 qh belongs
 * to element j, bit j+16 to element j+16. */
static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Q5_0, 22 bytes: f16 d, u32 qh, 16 bytes of low nibbles; x = (q - 16) * d. */
static void
dq_q5_0(const uint8_t *b, float *y)
{
	float d = half(b);
	uint32_t qh = le32(b + 2);
	const uint8_t *qs = b + 6;
	for (int j = 0; j < QK / 2; j++) {
		int lo = (int)((qs[j] & 15) | ((qh >> j) & 1) << 4);
		int hi = (int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
		y[j] = (float)(lo - 16) * d;
		y[j + QK / 2] = (float)(hi - 16) * d;
	}
}

/* Q5_1, 24 bytes: f16 d, f16 m, u32 qh, low nibbles; x = q * d + m. */
static void
dq_q5_1(const uint8_t *b, float *y)
{
	float d = half(b), m = half(b + 2);
	uint32_t qh = le32(b + 4);
	const uint8_t *qs = b + 8;
	for (int j = 0; j < QK / 2; j++) {
		int lo = (int)((qs[j] & 15) | ((qh >> j) & 1) << 4);
		int hi = (int)((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
		y[j] = (float)lo * d + m;
		y[j + QK / 2] = (float)hi * d + m;
	}
}

/* Q8_0, 34 bytes: f16 d, 32 int8 codes; x = q * d. */
static void
dq_q8_0(const uint8_t *b, float *y)
{
	float d = half(b);
	for (int j = 0; j < QK; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* Q2_K, 84 bytes: 16 bytes of sub-block scale (low nibble) and minimum
 * (high nibble), 64 bytes of 2-bit codes, f16 d, f16 dmin.  Element
 * 128h + 32s + l (h < 2, s < 4, l < 32) is bits 2s..2s+1 of code byte
 * 32h + l; its sub-block (16 elements) is 8h + 2s + l/16;
 * x = (d * sc) * q - dmin * m. */
static void
dq_q2_k(const uint8_t *b, float *y)
{
	const uint8_t *sc = b, *qs = b + 16;
	float d = half(b + 80), dmin = half(b + 82);
	for (int h = 0; h < 2; h++)
		for (int s = 0; s < 4; s++)
			for (int l = 0; l < 32; l++) {
				uint8_t c = sc[8 * h + 2 * s + l / 16];
				float dl = d * (float)(c & 15), ml = dmin * (float)(c >> 4);
				int q = (qs[32 * h + l] >> (2 * s)) & 3;
				y[128 * h + 32 * s + l] = dl * (float)q - ml;
			}
}

/* Q3_K, 110 bytes: 32 bytes of high bits (hmask), 64 bytes of 2-bit codes,
 * 12 bytes holding 16 6-bit scales, f16 d.  Element 128h + 32s + l has
 * low bits as in Q2_K and its high bit in bit 4h + s of hmask[l]; the code
 * is low - (high ? 0 : 4).  Scale k: low 4 bits from byte k (k < 8, low
 * nibble) or byte k-8 (high nibble), high 2 bits from byte 8 + k%4 at bit
 * 2(k/4); x = (d * (scale - 32)) * code. */
static void
dq_q3_k(const uint8_t *b, float *y)
{
	const uint8_t *hm = b, *qs = b + 32, *ps = b + 96;
	float d = half(b + 108);
	float dl[16];
	for (int k = 0; k < 16; k++) {
		int lo = k < 8 ? ps[k] & 15 : ps[k - 8] >> 4;
		int hi = (ps[8 + k % 4] >> (2 * (k / 4))) & 3;
		dl[k] = d * (float)((lo | hi << 4) - 32);
	}
	for (int h = 0; h < 2; h++)
		for (int s = 0; s < 4; s++)
			for (int l = 0; l < 32; l++) {
				int q = (qs[32 * h + l] >> (2 * s)) & 3;
				if (!(hm[l] & (1 << (4 * h + s))))
					q -= 4;
				y[128 * h + 32 * s + l] = dl[8 * h + 2 * s + l / 16] * (float)q;
			}
}

/* The 6-bit scale and minimum of sub-block j (0..7) of Q4_K/Q5_K from
 * their 12 packed bytes: j < 4 in the low 6 bits of bytes j and j+4;
 * otherwise 4 bits from byte j+4 (scale: low nibble, minimum: high)
 * and 2 from the top of byte j-4 (scale) or byte j (minimum). */
static void
scale_min_k4(const uint8_t *q, int j, int *sc, int *m)
{
	if (j < 4) {
		*sc = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*sc = (q[j + 4] & 15) | (q[j - 4] >> 6) << 4;
		*m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
	}
}

/* Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of scales and minimums, 128
 * bytes of codes.  Sub-block j (32 elements) takes the low nibbles
 * (j even) or high nibbles (j odd) of code bytes 32(j/2)..;
 * x = (d * sc) * q - dmin * m. */
static void
dq_q4_k(const uint8_t *b, float *y)
{
	float d = half(b), dmin = half(b + 2);
	const uint8_t *ps = b + 4, *qs = b + 16;
	for (int j = 0; j < 8; j++) {
		int sc, m;
		scale_min_k4(ps, j, &sc, &m);
		float dl = d * (float)sc, ml = dmin * (float)m;
		const uint8_t *q = qs + 32 * (j / 2);
		for (int l = 0; l < 32; l++)
			y[32 * j + l] = dl * (float)(j & 1 ? q[l] >> 4 : q[l] & 15) - ml;
	}
}

/* Q5_K, 176 bytes: as Q4_K, with 32 bytes of fifth bits (qh) before the
 * codes: element l of sub-block j has its fifth bit in bit j of qh[l]. */
static void
dq_q5_k(const uint8_t *b, float *y)
{
	float d = half(b), dmin = half(b + 2);
	const uint8_t *ps = b + 4, *qh = b + 16, *qs = b + 48;
	for (int j = 0; j < 8; j++) {
		int sc, m;
		scale_min_k4(ps, j, &sc, &m);
		float dl = d * (float)sc, ml = dmin * (float)m;
		const uint8_t *q = qs + 32 * (j / 2);
		for (int l = 0; l < 32; l++) {
			int v = (j & 1 ? q[l] >> 4 : q[l] & 15) + (qh[l] >> j & 1) * 16;
			y[32 * j + l] = dl * (float)v - ml;
		}
	}
}

/* Q6_K, 210 bytes: 128 bytes of low nibbles (ql), 64 bytes of high 2-bit
 * pairs (qh), 16 int8 scales, f16 d.  In half h (128 elements), element
 * 32s + l (s < 4, l < 32) takes the low (s even) or high (s odd) nibble
 * of ql[64h + 32(s%2) + l] and bits 2s..2s+1 of qh[32h + l]; its scale is
 * 8h + 2s + l/16; x = (d * scale) * (code - 32). */
static void
dq_q6_k(const uint8_t *b, float *y)
{
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	float d = half(b + 208);
	for (int h = 0; h < 2; h++)
		for (int s = 0; s < 4; s++)
			for (int l = 0; l < 32; l++) {
				uint8_t lo = ql[64 * h + 32 * (s % 2) + l];
				int q = (s < 2 ? lo & 15 : lo >> 4) | ((qh[32 * h + l] >> (2 * s)) & 3) << 4;
				float dl = d * (float)sc[8 * h + 2 * s + l / 16];
				y[128 * h + 32 * s + l] = dl * (float)(q - 32);
			}
}

static const struct {
	uint32_t type;
	void (*block)(const uint8_t *, float *);
} decoders[] = {
	{LLM_GGML_Q4_0, dq_q4_0}, {LLM_GGML_Q4_1, dq_q4_1}, {LLM_GGML_Q5_0, dq_q5_0},
	{LLM_GGML_Q5_1, dq_q5_1}, {LLM_GGML_Q8_0, dq_q8_0}, {LLM_GGML_Q2_K, dq_q2_k},
	{LLM_GGML_Q3_K, dq_q3_k}, {LLM_GGML_Q4_K, dq_q4_k}, {LLM_GGML_Q5_K, dq_q5_k},
	{LLM_GGML_Q6_K, dq_q6_k},
};
#define NDECODERS (sizeof(decoders) / sizeof(decoders[0]))

int
llm_quant_supported(uint32_t t)
{
	for (size_t i = 0; i < NDECODERS; i++)
		if (decoders[i].type == t)
			return 1;
	return 0;
}

const char *
llm_quant_supported_names(void)
{
	static char names[128];
	if (!names[0])
		for (size_t i = 0, l = 0; i < NDECODERS && l < sizeof(names); i++)
			l += (size_t)snprintf(names + l, sizeof(names) - l, "%s%s", i ? ", " : "",
			    llm_ggml_type_name(decoders[i].type));
	return names;
}

void
llm_dequantize(uint32_t t, const void *src, float *dst, size_t n)
{
	uint32_t blck = 1, size = 0;
	size_t i = 0;

	while (i < NDECODERS && decoders[i].type != t)
		i++;
	if (i == NDECODERS || !llm_ggml_type_block(t, &blck, &size))
		return;
	const uint8_t *p = src;
	for (size_t e = 0; e + blck <= n; e += blck, p += size)
		decoders[i].block(p, dst + e);
}
