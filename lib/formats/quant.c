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
#include <stdlib.h>
#include <string.h>

#include "../base/dtype.h"
#include "gguf.h"
#include "quant.h"
#include "../base/util.h"

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

/* Each splitter takes one block's bytes and writes its codes q (one per
 * element, as small integers), the scale s of every group of G elements
 * (G: the table below) and, for the types with minimums, the offset m of
 * every group; the value of element e of group g is then
 *
 *	x = s[g] * q[e]        or        x = s[g] * q[e] + m[g]
 *
 * rounded after the product and after the sum, which is ggml's formula
 * for every type (a minimum ggml subtracts is stored negated: x - m and
 * x + (-m) are the same IEEE operation). */

/* Q4_0, 18 bytes: f16 d, 16 bytes of 4-bit codes q (element j in the low
 * nibble of byte j, element j+16 in its high nibble); x = (q - 8) * d. */
static void
sp_q4_0(const uint8_t *b, int8_t *q, float *s, float *m)
{
	(void)m;
	s[0] = half(b);
	const uint8_t *qs = b + 2;
	for (int j = 0; j < QK / 2; j++) {
		q[j] = (int8_t)((qs[j] & 15) - 8);
		q[j + QK / 2] = (int8_t)((qs[j] >> 4) - 8);
	}
}

/* Q4_1, 20 bytes: f16 d, f16 m, codes as Q4_0; x = q * d + m. */
static void
sp_q4_1(const uint8_t *b, int8_t *q, float *s, float *m)
{
	s[0] = half(b);
	m[0] = half(b + 2);
	const uint8_t *qs = b + 4;
	for (int j = 0; j < QK / 2; j++) {
		q[j] = (int8_t)(qs[j] & 15);
		q[j + QK / 2] = (int8_t)(qs[j] >> 4);
	}
}

/* The fifth bits of Q5_0/Q5_1: bit j of the little-endian u32 qh belongs
 * to element j, bit j+16 to element j+16. */
static void
five_bits(const uint8_t *qs, uint32_t qh, int bias, int8_t *q)
{
	for (int j = 0; j < QK / 2; j++) {
		q[j] = (int8_t)(((qs[j] & 15) | ((qh >> j) & 1) << 4) - bias);
		q[j + QK / 2] = (int8_t)(((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - bias);
	}
}

/* Q5_0, 22 bytes: f16 d, u32 qh, 16 bytes of low nibbles; x = (q - 16) * d. */
static void
sp_q5_0(const uint8_t *b, int8_t *q, float *s, float *m)
{
	(void)m;
	s[0] = half(b);
	five_bits(b + 6, (uint32_t)llm_get_le(b + 2, 4), 16, q);
}

/* Q5_1, 24 bytes: f16 d, f16 m, u32 qh, low nibbles; x = q * d + m. */
static void
sp_q5_1(const uint8_t *b, int8_t *q, float *s, float *m)
{
	s[0] = half(b);
	m[0] = half(b + 2);
	five_bits(b + 8, (uint32_t)llm_get_le(b + 4, 4), 0, q);
}

/* Q8_0, 34 bytes: f16 d, 32 int8 codes; x = q * d. */
static void
sp_q8_0(const uint8_t *b, int8_t *q, float *s, float *m)
{
	(void)m;
	s[0] = half(b);
	memcpy(q, b + 2, QK);
}

/* Q2_K, 84 bytes: 16 bytes of sub-block scale (low nibble) and minimum
 * (high nibble), 64 bytes of 2-bit codes, f16 d, f16 dmin.  Element
 * 128h + 32s + l (h < 2, s < 4, l < 32) is bits 2s..2s+1 of code byte
 * 32h + l; its sub-block (16 elements, the group) is 8h + 2s + l/16;
 * x = (d * sc) * q - dmin * m. */
static void
sp_q2_k(const uint8_t *b, int8_t *q, float *s, float *m)
{
	const uint8_t *sc = b, *qs = b + 16;
	float d = half(b + 80), dmin = half(b + 82);
	for (int g = 0; g < 16; g++) {
		s[g] = d * (float)(sc[g] & 15);
		m[g] = -(dmin * (float)(sc[g] >> 4));
	}
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++)
				q[128 * h + 32 * j + l] = (int8_t)((qs[32 * h + l] >> (2 * j)) & 3);
}

/* Q3_K, 110 bytes: 32 bytes of high bits (hmask), 64 bytes of 2-bit codes,
 * 12 bytes holding 16 6-bit scales, f16 d.  Element 128h + 32s + l has
 * low bits as in Q2_K and its high bit in bit 4h + s of hmask[l]; the code
 * is low - (high ? 0 : 4).  Scale k: low 4 bits from byte k (k < 8, low
 * nibble) or byte k-8 (high nibble), high 2 bits from byte 8 + k%4 at bit
 * 2(k/4); x = (d * (scale - 32)) * code. */
static void
sp_q3_k(const uint8_t *b, int8_t *q, float *s, float *m)
{
	(void)m;
	const uint8_t *hm = b, *qs = b + 32, *ps = b + 96;
	float d = half(b + 108);
	for (int k = 0; k < 16; k++) {
		int lo = k < 8 ? ps[k] & 15 : ps[k - 8] >> 4;
		int hi = (ps[8 + k % 4] >> (2 * (k / 4))) & 3;
		s[k] = d * (float)((lo | hi << 4) - 32);
	}
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++) {
				int c = (qs[32 * h + l] >> (2 * j)) & 3;
				if (!(hm[l] & (1 << (4 * h + j))))
					c -= 4;
				q[128 * h + 32 * j + l] = (int8_t)c;
			}
}

/* The 6-bit scale and minimum of sub-block j (0..7) of Q4_K/Q5_K from
 * their 12 packed bytes ps: j < 4 in the low 6 bits of bytes j and j+4;
 * otherwise 4 bits from byte j+4 (scale: low nibble, minimum: high)
 * and 2 from the top of byte j-4 (scale) or byte j (minimum). */
static void
scale_min_k4(const uint8_t *ps, int j, int *sc, int *mn)
{
	if (j < 4) {
		*sc = ps[j] & 63;
		*mn = ps[j + 4] & 63;
	} else {
		*sc = (ps[j + 4] & 15) | (ps[j - 4] >> 6) << 4;
		*mn = (ps[j + 4] >> 4) | (ps[j] >> 6) << 4;
	}
}

/* The group of 32 elements j of Q4_K/Q5_K has s = d * sc and
 * m = -(dmin * min). */
static void
scales_k4(const uint8_t *b, float *s, float *m)
{
	float d = half(b), dmin = half(b + 2);
	for (int j = 0; j < 8; j++) {
		int sc, mn;
		scale_min_k4(b + 4, j, &sc, &mn);
		s[j] = d * (float)sc;
		m[j] = -(dmin * (float)mn);
	}
}

/* The sub-scales of a k-quant block as the "-sub8" layouts keep them
 * (quant.h): its f16 d and the integer scale of each group, and (Q4_K,
 * Q5_K) its f16 dmin negated and the integer minimum of each group, so
 * that s = d * sc and m = (-dmin) * min are the splitters' values (a
 * product negated is the product of one factor negated). */
static void
subs_k4(const uint8_t *b, int8_t *sc, int8_t *mn, uint16_t *d, uint16_t *dm)
{
	*d = (uint16_t)(b[0] | b[1] << 8);
	*dm = (uint16_t)((b[2] | b[3] << 8) ^ 0x8000);
	for (int j = 0; j < 8; j++) {
		int s, m;
		scale_min_k4(b + 4, j, &s, &m);
		sc[j] = (int8_t)s;
		mn[j] = (int8_t)m;
	}
}

static void
subs_q6_k(const uint8_t *b, int8_t *sc, int8_t *mn, uint16_t *d, uint16_t *dm)
{
	(void)mn;
	(void)dm;
	memcpy(sc, b + 192, 16);
	*d = (uint16_t)(b[208] | b[209] << 8);
}

/* Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of scales and minimums, 128
 * bytes of codes.  Sub-block j (32 elements) takes the low nibbles
 * (j even) or high nibbles (j odd) of code bytes 32(j/2)..;
 * x = (d * sc) * q - dmin * m. */
static void
sp_q4_k(const uint8_t *b, int8_t *q, float *s, float *m)
{
	scales_k4(b, s, m);
	const uint8_t *qs = b + 16;
	for (int j = 0; j < 8; j++)
		for (int l = 0; l < 32; l++) {
			uint8_t c = qs[32 * (j / 2) + l];
			q[32 * j + l] = (int8_t)(j & 1 ? c >> 4 : c & 15);
		}
}

/* Q5_K, 176 bytes: as Q4_K, with 32 bytes of fifth bits (qh) before the
 * codes: element l of sub-block j has its fifth bit in bit j of qh[l]. */
static void
sp_q5_k(const uint8_t *b, int8_t *q, float *s, float *m)
{
	scales_k4(b, s, m);
	const uint8_t *qh = b + 16, *qs = b + 48;
	for (int j = 0; j < 8; j++)
		for (int l = 0; l < 32; l++) {
			uint8_t c = qs[32 * (j / 2) + l];
			q[32 * j + l] = (int8_t)((j & 1 ? c >> 4 : c & 15) + (qh[l] >> j & 1) * 16);
		}
}

/* Q6_K, 210 bytes: 128 bytes of low nibbles (ql), 64 bytes of high 2-bit
 * pairs (qh), 16 int8 scales, f16 d.  In half h (128 elements), element
 * 32s + l (s < 4, l < 32) takes the low (s even) or high (s odd) nibble
 * of ql[64h + 32(s%2) + l] and bits 2s..2s+1 of qh[32h + l]; its scale
 * (group of 16) is 8h + 2s + l/16; x = (d * scale) * (code - 32). */
static void
sp_q6_k(const uint8_t *b, int8_t *q, float *s, float *m)
{
	(void)m;
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	float d = half(b + 208);
	for (int g = 0; g < 16; g++)
		s[g] = d * (float)sc[g];
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < 4; j++)
			for (int l = 0; l < 32; l++) {
				uint8_t lo = ql[64 * h + 32 * (j % 2) + l];
				int c = (j < 2 ? lo & 15 : lo >> 4) | ((qh[32 * h + l] >> (2 * j)) & 3) << 4;
				q[128 * h + 32 * j + l] = (int8_t)(c - 32);
			}
}

/* code: the tiled layout's codes (quant.h): LLM_QCODE_I8, or for codes of
 * 4 bits LLM_QCODE_I4 (-8 .. 7) or LLM_QCODE_U4 (0 .. 15); qcode: those
 * of plans with int8 activations, whose kernels read 5- and 6-bit codes
 * (LLM_QCODE_I5, U5, I6) for the types whose values have that many bits,
 * else code.  half: the
 * scales and offsets are the block's f16 d and m themselves, so the
 * layout keeps them in f16, exactly (the k-quants' d * sc are not f16
 * values). */
static const struct {
	uint32_t type;
	int group; /* elements per scale */
	int mins;  /* 1: groups have an offset */
	int code, qcode;
	int half;
	void (*split)(const uint8_t *, int8_t *, float *, float *);
	void (*subs)(const uint8_t *, int8_t *, int8_t *, uint16_t *, uint16_t *); /* "-sub8" */
} types[] = {
	{LLM_GGML_Q4_0, 32, 0, LLM_QCODE_I4, LLM_QCODE_I4, 1, sp_q4_0, NULL},
	{LLM_GGML_Q4_1, 32, 1, LLM_QCODE_U4, LLM_QCODE_U4, 1, sp_q4_1, NULL},
	{LLM_GGML_Q5_0, 32, 0, LLM_QCODE_I8, LLM_QCODE_I5, 1, sp_q5_0, NULL},
	{LLM_GGML_Q5_1, 32, 1, LLM_QCODE_I8, LLM_QCODE_U5, 1, sp_q5_1, NULL},
	{LLM_GGML_Q8_0, 32, 0, LLM_QCODE_I8, LLM_QCODE_I8, 1, sp_q8_0, NULL},
	{LLM_GGML_Q2_K, 16, 1, LLM_QCODE_U4, LLM_QCODE_U4, 0, sp_q2_k, NULL},
	{LLM_GGML_Q3_K, 16, 0, LLM_QCODE_I4, LLM_QCODE_I4, 0, sp_q3_k, NULL},
	{LLM_GGML_Q4_K, 32, 1, LLM_QCODE_U4, LLM_QCODE_U4, 0, sp_q4_k, subs_k4},
	{LLM_GGML_Q5_K, 32, 1, LLM_QCODE_I8, LLM_QCODE_U5, 0, sp_q5_k, subs_k4},
	{LLM_GGML_Q6_K, 16, 0, LLM_QCODE_I8, LLM_QCODE_I6, 0, sp_q6_k, subs_q6_k},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static int
find(uint32_t t)
{
	for (size_t i = 0; i < NTYPES; i++)
		if (types[i].type == t)
			return (int)i;
	return -1;
}

int
llm_quant_supported(uint32_t t)
{
	return find(t) >= 0;
}

const char *
llm_quant_supported_names(void)
{
	static char names[128];
	if (!names[0])
		for (size_t i = 0, l = 0; i < NTYPES && l < sizeof(names); i++)
			l += (size_t)snprintf(names + l, sizeof(names) - l, "%s%s", i ? ", " : "",
			    llm_ggml_type_name(types[i].type));
	return names;
}

int
llm_quant_split(uint32_t t, const void *src, size_t n, int8_t *q, float *s, float *m)
{
	uint32_t blck = 1, size = 0;
	float none[QK_K / 16];
	int ti = find(t);

	if (ti < 0 || !llm_ggml_type_block(t, &blck, &size))
		return -1;
	const uint8_t *p = src;
	size_t G = (size_t)types[ti].group;
	for (size_t e = 0; e + blck <= n; e += blck, p += size)
		types[ti].split(p, q + e, s + e / G, types[ti].mins ? m + e / G : none);
	return 0;
}

void
llm_dequantize(uint32_t t, const void *src, float *dst, size_t n)
{
	int8_t q[QK_K];
	float s[QK_K / 16], m[QK_K / 16];
	uint32_t blck = 1, size = 0;
	int ti = find(t);

	if (ti < 0 || !llm_ggml_type_block(t, &blck, &size))
		return;
	const uint8_t *p = src;
	size_t G = (size_t)types[ti].group;
	for (size_t e = 0; e + blck <= n; e += blck, p += size) {
		types[ti].split(p, q, s, m);
		for (size_t j = 0; j < blck; j++)
			dst[e + j] = types[ti].mins ? s[j / G] * (float)q[j] + m[j / G] : s[j / G] * (float)q[j];
	}
}

/* ---- the tiled int8 layout ---- */

static const char *const code_names[] = {[LLM_QCODE_I8] = "i8",
	[LLM_QCODE_I4] = "i4",
	[LLM_QCODE_U4] = "u4",
	[LLM_QCODE_I5] = "i5",
	[LLM_QCODE_U5] = "u5",
	[LLM_QCODE_I6] = "i6"};

int
llm_qcode_bits(int code)
{
	static const int bits[] = {[LLM_QCODE_I8] = 8,
		[LLM_QCODE_I4] = 4,
		[LLM_QCODE_U4] = 4,
		[LLM_QCODE_I5] = 5,
		[LLM_QCODE_U5] = 5,
		[LLM_QCODE_I6] = 6};
	return bits[code];
}

int
llm_qcode_zero(int code)
{
	return code == LLM_QCODE_I4 ? 8 : code == LLM_QCODE_I5 ? 16 : code == LLM_QCODE_I6 ? 32 : 0;
}

int
llm_qlayout_of(uint32_t t, int sub, struct llm_qlayout *l)
{
	int ti = find(t);
	if (ti < 0)
		return -1;
	l->rows = LLM_QTILE_ROWS;
	l->group = types[ti].group;
	l->mins = types[ti].mins;
	l->code = sub ? types[ti].qcode : types[ti].code;
	l->half = types[ti].half;
	l->sub = sub && types[ti].subs;
	return 0;
}

void
llm_qlayout_name(const struct llm_qlayout *l, char out[LLM_QLAYOUT_NAME])
{
	snprintf(out, LLM_QLAYOUT_NAME, "%s-r%d-g%d%s%s", code_names[l->code], l->rows, l->group, l->mins ? "-min" : "",
	    l->half    ? "-f16" :
		l->sub ? "-sub8" :
			 "");
}

int
llm_qlayout_parse(const char *s, struct llm_qlayout *l)
{
	char again[LLM_QLAYOUT_NAME];
	int r, g, n = 0;

	l->code = -1;
	for (int c = 0; c < (int)(sizeof(code_names) / sizeof(code_names[0])); c++)
		if (strncmp(s, code_names[c], 2) == 0)
			l->code = c;
	if (l->code < 0 || sscanf(s + 2, "-r%d-g%d%n", &r, &g, &n) != 2 || r != LLM_QTILE_ROWS || (g != 16 && g != 32))
		return -1;
	l->rows = r;
	l->group = g;
	l->mins = strncmp(s + 2 + n, "-min", 4) == 0;
	const char *rest = s + 2 + n + (l->mins ? 4 : 0);
	l->half = strcmp(rest, "-f16") == 0;
	l->sub = strcmp(rest, "-sub8") == 0;
	llm_qlayout_name(l, again);
	return strcmp(again, s) == 0 ? 0 : -1;
}

int
llm_qlayout_fits(const struct llm_qlayout *l, int64_t rows, int64_t cols)
{
	return rows > 0 && cols > 0 && rows % l->rows == 0 && cols % (l->sub ? LLM_QSUPER : l->group) == 0;
}

/* Bytes of the codes of one group of one row (of 5- and 6-bit codes, an
 * eighth of the tile's group, whose pieces span rows). */
static int64_t
group_bytes(const struct llm_qlayout *l)
{
	return l->group * llm_qcode_bits(l->code) / 8;
}

/* The tile's group of R * G codes v (0 .. 2^bits - 1, in the i8 order) as
 * pieces of 64: 32 bytes of nibbles, then the planes of the bits above
 * the fourth (quant.h). */
static void
pack_pieces(const uint8_t *v, int64_t n, int bits, uint8_t *out)
{
	for (int64_t p = 0; p < n / LLM_QPIECE; p++, v += LLM_QPIECE) {
		for (int j = 0; j < LLM_QPIECE / 2; j++)
			*out++ = (uint8_t)((v[j] & 15) | (v[j + LLM_QPIECE / 2] & 15) << 4);
		for (int b = 4; b < bits; b++)
			for (int j = 0; j < LLM_QPIECE / 8; j++) {
				uint8_t w = 0;
				for (int i = 0; i < 8; i++)
					w |= (uint8_t)(((v[8 * j + i] >> b) & 1) << i);
				*out++ = w;
			}
	}
}

size_t
llm_qlayout_scale_bytes(const struct llm_qlayout *l)
{
	return l->sub ? 1 : l->half ? 2 : sizeof(float);
}

uint64_t
llm_qlayout_part_bytes(const struct llm_qlayout *l, int64_t rows, int64_t cols)
{
	return (uint64_t)rows * (uint64_t)(cols / l->group) * llm_qlayout_scale_bytes(l) +
	    (l->sub ? (uint64_t)rows * (uint64_t)(cols / LLM_QSUPER) * 2 : 0);
}

uint64_t
llm_qlayout_super_at(const struct llm_qlayout *l, int64_t rows, int64_t cols)
{
	return (uint64_t)rows * (uint64_t)(cols / l->group);
}

uint64_t
llm_qlayout_scales_at(const struct llm_qlayout *l, int64_t rows, int64_t cols)
{
	return (uint64_t)rows * (uint64_t)(cols / l->group) * (uint64_t)group_bytes(l);
}

uint64_t
llm_qlayout_mins_at(const struct llm_qlayout *l, int64_t rows, int64_t cols)
{
	return llm_qlayout_scales_at(l, rows, cols) + llm_qlayout_part_bytes(l, rows, cols);
}

uint64_t
llm_qlayout_bytes(const struct llm_qlayout *l, int64_t rows, int64_t cols)
{
	return llm_qlayout_mins_at(l, rows, cols) + (l->mins ? llm_qlayout_part_bytes(l, rows, cols) : 0);
}

/* Entry i of a part of scales or offsets (f32, or f16, exactly). */
static void
put_scale(const struct llm_qlayout *l, uint8_t *part, uint64_t i, float v)
{
	if (l->half) {
		uint16_t h = llm_f32_to_f16(v);
		memcpy(part + 2 * i, &h, 2);
	} else
		memcpy(part + 4 * i, &v, 4);
}

int
llm_qlayout_tile(const struct llm_qlayout *l, uint32_t t, const void *src, int64_t rows, int64_t cols, int64_t tile,
    uint8_t *codes, uint8_t *scales, uint8_t *mins)
{
	uint32_t blck = 1, size = 0;
	int64_t G = l->group, ng = cols / G, R = l->rows, gb = group_bytes(l), nb = cols / QK_K;
	int zero = llm_qcode_zero(l->code), bits = llm_qcode_bits(l->code), ti = find(t);
	uint64_t sup = llm_qlayout_super_at(l, rows, cols);

	if (ti < 0 || (l->sub && !types[ti].subs) || !llm_ggml_type_block(t, &blck, &size) || cols % blck)
		return -1;
	size_t rowbytes = (size_t)(cols / blck) * size;
	int8_t *q = llm_xmalloc((size_t)cols), isc[QK_K / 16], imn[QK_K / 16]; /* a block's groups: 8 or 16 */
	/* 5- and 6-bit codes: the tile's values v, [ng][R][G], packed at the end */
	uint8_t *v = bits == 5 || bits == 6 ? llm_xmalloc((size_t)(cols * R)) : NULL;
	float *s = llm_xmalloc((size_t)ng * sizeof(float)), *m = llm_xmalloc((size_t)ng * sizeof(float));
	for (int64_t r = 0; r < R; r++) {
		const uint8_t *row = (const uint8_t *)src + (size_t)r * rowbytes;
		llm_quant_split(t, row, (size_t)cols, q, s, m);
		for (int64_t g = 0; g < ng; g++) {
			uint8_t *c = codes + (g * R + r) * gb;
			const int8_t *qg = q + g * G;
			if (v)
				for (int64_t j = 0; j < G; j++)
					v[(g * R + r) * G + j] = (uint8_t)(qg[j] + zero);
			else if (bits == 8)
				memcpy(c, qg, (size_t)G);
			else
				for (int64_t j = 0; j < G / 2; j++)
					c[j] = (uint8_t)(((qg[j] + zero) & 15) | ((qg[j + G / 2] + zero) & 15) << 4);
			uint64_t at = (uint64_t)((tile * ng + g) * R + r);
			if (!l->sub) {
				put_scale(l, scales, at, s[g]);
				if (l->mins)
					put_scale(l, mins, at, m[g]);
			}
		}
		for (int64_t b = 0; l->sub && b < nb; b++) {
			/* the block's d (and -dmin), then its groups' integers */
			uint16_t d, dm;
			int64_t gpb = QK_K / G;
			types[ti].subs(row + (size_t)b * size, isc, imn, &d, &dm);
			uint64_t at = sup + 2 * (uint64_t)((tile * nb + b) * R + r);
			memcpy(scales + at, &d, 2);
			if (l->mins)
				memcpy(mins + at, &dm, 2);
			for (int64_t j = 0; j < gpb; j++) {
				uint64_t gi = (uint64_t)((tile * ng + b * gpb + j) * R + r);
				scales[gi] = (uint8_t)isc[j];
				if (l->mins)
					mins[gi] = (uint8_t)imn[j];
			}
		}
	}
	for (int64_t g = 0; v && g < ng; g++)
		pack_pieces(v + g * R * G, R * G, bits, codes + g * R * gb);
	free(v);
	free(q);
	free(s);
	free(m);
	return 0;
}
