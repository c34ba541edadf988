/* Unit tests for lib/formats/quant.c and lib/formats/quantize.c: block layouts decoded by
 * hand-built blocks whose values are known, and quantized values that come
 * back exactly or within their bits (tests/quant.bats checks every type
 * against ggml's own decoder and quantizer byte for byte). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/dtype.h"
#include "../../lib/formats/gguf.h"
#include "../../lib/formats/quant.h"
#include "../../lib/base/util.h"
#include "t.h"

#define F16_ONE 0x3c00  /* 1.0 */
#define F16_HALF 0x3800 /* 0.5 */
#define F16_TWO 0x4000  /* 2.0 */

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

T_TEST(supported_types_and_names)
{
	T_CHECK(llm_quant_supported(LLM_GGML_Q4_0) && llm_quant_supported(LLM_GGML_Q8_0) &&
	    llm_quant_supported(LLM_GGML_Q4_K) && llm_quant_supported(LLM_GGML_Q6_K));
	T_CHECK(!llm_quant_supported(LLM_GGML_F32) && !llm_quant_supported(LLM_GGML_Q8_1) &&
	    !llm_quant_supported(LLM_GGML_IQ4_NL) && !llm_quant_supported(LLM_GGML_Q8_K) && !llm_quant_supported(9999));
	T_CHECK(strcmp(llm_quant_supported_names(), "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K") == 0);
}

T_TEST(q8_0_and_q4_0)
{
	uint8_t b[2 * 34];
	float y[64];

	put16(b, F16_HALF);
	for (int j = 0; j < 32; j++)
		b[2 + j] = (uint8_t)(int8_t)(j - 16);
	put16(b + 34, F16_TWO);
	for (int j = 0; j < 32; j++)
		b[36 + j] = (uint8_t)(j % 2 ? 127 : -128);
	llm_dequantize(LLM_GGML_Q8_0, b, y, 64);
	for (int j = 0; j < 32; j++)
		T_CHECKF(y[j] == 0.5f * (float)(j - 16), "%d: %g", j, y[j]);
	T_CHECK(y[32] == -256.0f && y[33] == 254.0f);

	/* Q4_0: element j in the low nibble of byte j, j+16 in the high one. */
	uint8_t q[18];
	put16(q, F16_ONE);
	for (int j = 0; j < 16; j++)
		q[2 + j] = (uint8_t)(j | (15 - j) << 4);
	llm_dequantize(LLM_GGML_Q4_0, q, y, 32);
	for (int j = 0; j < 16; j++)
		T_CHECK(y[j] == (float)(j - 8) && y[j + 16] == (float)(7 - j));
}

T_TEST(q5_0_fifth_bits)
{
	uint8_t b[22] = {0};
	float y[32];

	put16(b, F16_ONE);
	/* qh bit j: element j; bit j+16: element j+16.  Set bits 0 and 16. */
	b[2] = 1;
	b[4] = 1;
	llm_dequantize(LLM_GGML_Q5_0, b, y, 32);
	T_CHECK(y[0] == 0.0f && y[16] == 0.0f); /* 16 - 16 */
	T_CHECK(y[1] == -16.0f && y[17] == -16.0f && y[31] == -16.0f);
}

T_TEST(q4_k_scales_and_minimums)
{
	uint8_t b[144] = {0};
	float y[256];

	put16(b, F16_ONE);      /* d */
	put16(b + 2, F16_HALF); /* dmin */
	/* Sub-blocks 0..3: scale j+1, minimum 2 (6 bits in bytes j, j+4);
	 * 4..7: scale 40 + j (low 4 bits in byte j+4, top 2 bits in the top
	 * of byte j-4), minimum 0. */
	for (int j = 0; j < 4; j++) {
		int sc = 40 + j + 4;
		b[4 + j] = (uint8_t)((j + 1) | (sc >> 4) << 6);
		b[4 + j + 4] = 2;
		b[4 + j + 8] = (uint8_t)(sc & 15);
	}
	/* codes: low nibble 3, high nibble 5 everywhere */
	memset(b + 16, 0x53, 128);
	llm_dequantize(LLM_GGML_Q4_K, b, y, 256);
	/* sub-block j: even j takes the low nibbles, odd j the high ones */
	T_CHECK(y[0] == 1.0f * 3 - 1.0f);  /* sc 1, min 2 * 0.5 */
	T_CHECK(y[32] == 2.0f * 5 - 1.0f); /* sc 2 */
	T_CHECK(y[64] == 3.0f * 3 - 1.0f && y[96] == 4.0f * 5 - 1.0f);
	T_CHECKF(y[128] == 44.0f * 3 && y[255] == 47.0f * 5, "%g %g", y[128], y[255]);
}

T_TEST(q6_k_layout)
{
	uint8_t b[210] = {0};
	float y[256];

	/* all codes 32 + 1 (low nibble 1, high bits 2 -> 33): x = d * scale */
	memset(b, 0x11, 128);
	memset(b + 128, 0xaa, 64);
	for (int k = 0; k < 16; k++)
		b[192 + k] = (uint8_t)(int8_t)(k - 8);
	put16(b + 208, F16_TWO);
	llm_dequantize(LLM_GGML_Q6_K, b, y, 256);
	/* element 128h + 32s + l has scale 8h + 2s + l/16 */
	for (int e = 0; e < 256; e++) {
		int h = e / 128, s = e % 128 / 32, l = e % 32;
		T_CHECKF(y[e] == 2.0f * (float)(8 * h + 2 * s + l / 16 - 8), "%d: %g", e, y[e]);
	}
}

T_TEST(nan_and_inf_scales_propagate)
{
	uint8_t b[34] = {0};
	float y[32];

	put16(b, 0x7c00); /* +inf */
	b[2] = 1;
	llm_dequantize(LLM_GGML_Q8_0, b, y, 32);
	T_CHECK(isinf(y[0]) && isnan(y[1])); /* inf * 1, inf * 0 */
}

T_TEST(layout_names_and_sizes)
{
	struct llm_qlayout l;
	char name[LLM_QLAYOUT_NAME];
	/* a table */
	/* clang-format off */
	static const struct {
		uint32_t t;
		const char *name;
		int sub;
	} want[] = {
		{LLM_GGML_Q8_0, "i8-r8-g32-f16", 0}, {LLM_GGML_Q4_0, "i4-r8-g32-f16", 0},
		{LLM_GGML_Q4_1, "u4-r8-g32-min-f16", 0}, {LLM_GGML_Q5_0, "i8-r8-g32-f16", 0},
		{LLM_GGML_Q5_1, "i8-r8-g32-min-f16", 0}, {LLM_GGML_Q2_K, "u4-r8-g16-min", 0},
		{LLM_GGML_Q3_K, "i4-r8-g16", 0}, {LLM_GGML_Q4_K, "u4-r8-g32-min", 0},
		{LLM_GGML_Q5_K, "i8-r8-g32-min", 0}, {LLM_GGML_Q6_K, "i8-r8-g16", 0},
		/* int8 activations: the "-sub8" forms, where a type has one,
		 * and 5- and 6-bit codes */
		{LLM_GGML_Q8_0, "i8-r8-g32-f16", 1}, {LLM_GGML_Q3_K, "i4-r8-g16", 1},
		{LLM_GGML_Q4_K, "u4-r8-g32-min-sub8", 1}, {LLM_GGML_Q5_K, "u5-r8-g32-min-sub8", 1},
		{LLM_GGML_Q6_K, "i6-r8-g16-sub8", 1}, {LLM_GGML_Q5_0, "i5-r8-g32-f16", 1},
		{LLM_GGML_Q5_1, "u5-r8-g32-min-f16", 1},
	};
	/* clang-format on */
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		T_CHECK(llm_qlayout_of(want[i].t, want[i].sub, &l) == 0);
		llm_qlayout_name(&l, name);
		T_CHECKF(strcmp(name, want[i].name) == 0, "%s", name);
		struct llm_qlayout back;
		T_CHECK(llm_qlayout_parse(name, &back) == 0 && back.rows == l.rows && back.group == l.group &&
		    back.mins == l.mins && back.code == l.code && back.half == l.half && back.sub == l.sub);
	}
	T_CHECK(llm_qlayout_of(LLM_GGML_F32, 0, &l) < 0);
	const char *bad[] = {"", "i8", "i8-r8-g32-", "i8-r4-g32", "i8-r8-g64", "u8-r8-g32", "i8-r8-g32-max",
		"i8-r8-g32-min-min", "i4-r8-g32 ", "I8-r8-g32", "i8-r8-g32-f16-min", "i8-r8-g32-f32",
		"i8-r8-g32-f16-f16", "i8-r8-g16-sub8-f16", "i8-r8-g16-f16-sub8", "i8-r8-g16-sub"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		T_CHECKF(llm_qlayout_parse(bad[i], &l) < 0, "'%s'", bad[i]);
	/* 64 x 256: codes, then scales (and offsets) of 64 * 8 groups */
	llm_qlayout_parse("i8-r8-g32", &l);
	T_CHECK(llm_qlayout_scales_at(&l, 64, 256) == 16384 && llm_qlayout_bytes(&l, 64, 256) == 16384 + 2048);
	llm_qlayout_parse("u4-r8-g16-min", &l);
	T_CHECK(llm_qlayout_scales_at(&l, 64, 256) == 8192 && llm_qlayout_mins_at(&l, 64, 256) == 8192 + 4096 &&
	    llm_qlayout_bytes(&l, 64, 256) == 8192 + 8192);
	T_CHECK(llm_qlayout_fits(&l, 64, 256) && !llm_qlayout_fits(&l, 60, 256) && !llm_qlayout_fits(&l, 64, 40));
	/* f16 scales and offsets: 2 bytes each */
	llm_qlayout_parse("u4-r8-g32-min-f16", &l);
	T_CHECK(l.half && llm_qlayout_scale_bytes(&l) == 2 && llm_qlayout_scales_at(&l, 64, 256) == 8192 &&
	    llm_qlayout_mins_at(&l, 64, 256) == 8192 + 1024 && llm_qlayout_bytes(&l, 64, 256) == 8192 + 2048);
	/* "-sub8": a byte a group, then an f16 a row and block of 256 */
	llm_qlayout_parse("u4-r8-g32-min-sub8", &l);
	T_CHECK(l.sub && llm_qlayout_scale_bytes(&l) == 1 && llm_qlayout_part_bytes(&l, 64, 512) == 1024 + 256 &&
	    llm_qlayout_super_at(&l, 64, 512) == 1024 && llm_qlayout_scales_at(&l, 64, 512) == 16384 &&
	    llm_qlayout_mins_at(&l, 64, 512) == 16384 + 1280 && llm_qlayout_bytes(&l, 64, 512) == 16384 + 2560);
	T_CHECK(llm_qlayout_fits(&l, 64, 512) && !llm_qlayout_fits(&l, 64, 224));
	/* 5- and 6-bit codes: 5 or 6 bits a code, f16 scales (Q5_0: 0.6875
	 * bytes a weight, as in the file), sub-scales (Q6_K: 0.82) */
	llm_qlayout_parse("i5-r8-g32-f16", &l);
	T_CHECK(llm_qlayout_scales_at(&l, 64, 256) == 64 * 256 * 5 / 8 &&
	    llm_qlayout_bytes(&l, 64, 256) == 64 * 256 * 11 / 16);
	llm_qlayout_parse("i6-r8-g16-sub8", &l);
	T_CHECK(llm_qlayout_scales_at(&l, 64, 256) == 64 * 256 * 6 / 8 &&
	    llm_qlayout_bytes(&l, 64, 256) == 64 * 256 * 6 / 8 + 64 * 16 + 64 * 2);
	T_CHECK(llm_qcode_bits(l.code) == 6 && llm_qcode_zero(l.code) == 32);
}

/* The 5- and 6-bit pieces (quant.h) of a tile of Q5_0 and Q6_K blocks:
 * each code, read back from its nibble and planes, is the code
 * llm_quant_split gives. */
static void
packed_tile(void)
{
	static const uint32_t types[] = {LLM_GGML_Q5_0, LLM_GGML_Q6_K, LLM_GGML_Q5_K};
	uint32_t x = 7;
	for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		uint32_t t = types[ti], blck, size;
		struct llm_qlayout l;
		const int64_t rows = 8, cols = 512;
		T_CHECK(llm_ggml_type_block(t, &blck, &size) && llm_qlayout_of(t, 1, &l) == 0);
		size_t rb = (size_t)(cols / blck) * size;
		uint8_t *src = malloc(rb * rows), *out = calloc(1, llm_qlayout_bytes(&l, rows, cols));
		for (size_t i = 0; i < rb * rows; i++)
			src[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
		if (t != LLM_GGML_Q6_K)
			for (int64_t b = 0; b < rows * cols / blck; b++)
				memset(src + b * size, 0x3c, 2); /* finite d (and dmin) */
		else
			for (int64_t b = 0; b < rows * cols / blck; b++)
				memset(src + b * size + size - 2, 0x3c, 2);
		T_CHECK(llm_qlayout_tile(&l, t, src, rows, cols, 0, out, out + llm_qlayout_scales_at(&l, rows, cols),
			    out + llm_qlayout_mins_at(&l, rows, cols)) == 0);
		int8_t q[512];
		float s[32], m[32];
		int bits = llm_qcode_bits(l.code), G = l.group, bad = 0;
		for (int64_t h = 0; h < rows; h++) {
			llm_quant_split(t, src + h * rb, (size_t)cols, q, s, m);
			for (int64_t c = 0; c < cols; c++) {
				int64_t g = c / G, i = h * G + c % G, o = i % 64;
				const uint8_t *p = out + g * (G * bits) + i / 64 * (8 * bits);
				int v = (o < 32 ? p[o] & 15 : p[o - 32] >> 4);
				for (int k = 4; k < bits; k++)
					v |= ((p[32 + 8 * (k - 4) + o / 8] >> (o % 8)) & 1) << k;
				bad += v - llm_qcode_zero(l.code) != q[c];
			}
		}
		T_CHECKF(bad == 0, "%s: %d codes differ", llm_ggml_type_name(t), bad);
		free(src);
		free(out);
	}
}

/* A tile of 8 Q4_0 rows of 64: row r's block b has d = r + 1 and codes
 * q[j] = (j + b + r) % 16 (nibble), value (q - 8) * d. */
T_TEST(tile_of_q4_0)
{
	uint8_t src[8 * 2 * 18], codes[8 * 64 / 2], sc[8 * 2 * 2], mn[8 * 2 * 2];
	struct llm_qlayout l;

	for (int r = 0; r < 8; r++)
		for (int b = 0; b < 2; b++) {
			uint8_t *p = src + (r * 2 + b) * 18;
			put16(p, llm_f32_to_f16((float)(r + 1)));
			for (int j = 0; j < 16; j++)
				p[2 + j] = (uint8_t)((j + b + r) % 16 | ((j + 16 + b + r) % 16) << 4);
		}
	T_CHECK(llm_qlayout_of(LLM_GGML_Q4_0, 1, &l) == 0 && l.half && !l.sub);
	T_CHECK(llm_qlayout_tile(&l, LLM_GGML_Q4_0, src, 8, 64, 0, codes, sc, mn) == 0);
	for (int g = 0; g < 2; g++)
		for (int r = 0; r < 8; r++) {
			T_CHECK(llm_f16_to_f32((uint16_t)(sc[2 * (g * 8 + r)] | sc[2 * (g * 8 + r) + 1] << 8)) ==
			    (float)(r + 1));
			for (int j = 0; j < 32; j++) {
				uint8_t byte = codes[(g * 8 + r) * 16 + j % 16];
				int code = (j < 16 ? byte & 15 : byte >> 4) - 8;
				T_CHECKF(code == (j + g + r) % 16 - 8, "g %d r %d j %d: %d", g, r, j, code);
			}
		}
}

/* Tile 1 of a 16-row Q6_K matrix of 256 columns in "-sub8": row r's
 * block has d = (r + 1) / 8 and scales sc[g] = g - 8 + r; the part holds
 * the integers, then the d, and d * sc is the splitter's scale. */
T_TEST(tile_of_q6_k_sub8)
{
	uint8_t src[8 * 210] = {0}, codes[8 * 256], sc[16 * 16 + 16 * 2];
	int8_t q[256];
	float s[16], m[16];
	struct llm_qlayout l;

	for (int r = 0; r < 8; r++) {
		uint8_t *p = src + r * 210;
		for (int g = 0; g < 16; g++)
			p[192 + g] = (uint8_t)(int8_t)(g - 8 + r);
		put16(p + 208, llm_f32_to_f16((float)(r + 1) / 8));
	}
	T_CHECK(llm_qlayout_of(LLM_GGML_Q6_K, 1, &l) == 0 && l.sub && l.group == 16);
	memset(sc, 0xee, sizeof(sc));
	T_CHECK(llm_qlayout_tile(&l, LLM_GGML_Q6_K, src, 16, 256, 1, codes, sc, NULL) == 0);
	for (int r = 0; r < 8; r++) {
		llm_quant_split(LLM_GGML_Q6_K, src + r * 210, 256, q, s, m);
		/* tile 1's entries: groups after tile 0's 16 * 8, d after tile 0's 8 */
		const uint8_t *d = sc + 16 * 16 + 2 * (8 + r);
		float dv = llm_f16_to_f32((uint16_t)(d[0] | d[1] << 8));
		T_CHECK(dv == (float)(r + 1) / 8 && sc[16 * 16 + 2 * r] == 0xee);
		for (int g = 0; g < 16; g++) {
			int8_t v = (int8_t)sc[(16 + g) * 8 + r];
			T_CHECKF(v == g - 8 + r && dv * (float)v == s[g], "r %d g %d: %d", r, g, v);
			T_CHECK(sc[g * 8 + r] == 0xee);
		}
	}
}

/* Quantizing (quantize.c): values on a type's grid come back exactly;
 * an all-zero block is zeros; other values come back within the error the
 * type's bits allow; odd sizes and unknown types are refused. */
static void
round_trip(uint32_t t, const float *x, size_t n, float *y)
{
	uint8_t b[4096];
	T_CHECK(llm_quantize(t, x, n, b) == 0);
	llm_dequantize(t, b, y, n);
}

T_TEST(quantize_grid_values_exactly)
{
	float x[256], y[256];
	/* Q8_0: codes -127 .. 127 (max 127) times 1/16: d = 1/16 exactly */
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j == 0 ? 127 : 8 * j - 130) / 16;
	round_trip(LLM_GGML_Q8_0, x, 32, y);
	T_CHECK(memcmp(x, y, 32 * sizeof(float)) == 0);
	/* Q4_0: the largest magnitude is code 0 (-8 d); d = 0.25 */
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j % 16 - 8) * 0.25f;
	round_trip(LLM_GGML_Q4_0, x, 32, y);
	T_CHECK(memcmp(x, y, 32 * sizeof(float)) == 0);
	/* Q5_0: -16 d .. 15 d, d = 0.5 */
	for (int j = 0; j < 32; j++)
		x[j] = (float)(j - 16) * 0.5f;
	round_trip(LLM_GGML_Q5_0, x, 32, y);
	T_CHECK(memcmp(x, y, 32 * sizeof(float)) == 0);
	/* Q4_1: min -3, d = 0.5, codes 0 .. 15 */
	for (int j = 0; j < 32; j++)
		x[j] = -3 + (float)(j % 16) * 0.5f;
	round_trip(LLM_GGML_Q4_1, x, 32, y);
	T_CHECK(memcmp(x, y, 32 * sizeof(float)) == 0);
	/* zeros stay zeros in every type */
	static const uint32_t all[] = {LLM_GGML_Q8_0, LLM_GGML_Q4_0, LLM_GGML_Q4_1, LLM_GGML_Q5_0, LLM_GGML_Q5_1,
		LLM_GGML_Q4_K, LLM_GGML_Q5_K, LLM_GGML_Q6_K};
	memset(x, 0, sizeof(x));
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		T_CHECK(llm_quantize_supported(all[i]));
		memset(y, 0xff, sizeof(y));
		round_trip(all[i], x, 256, y);
		for (int j = 0; j < 256; j++)
			T_CHECKF(y[j] == 0, "%s: %g", llm_ggml_type_name(all[i]), y[j]);
	}
}

T_TEST(quantize_error_within_the_bits)
{
	/* a table */
	/* clang-format off */
	static const struct {
		uint32_t t;
		double rel;  /* RMS error / RMS value, a uniform row */
	} want[] = {
		{LLM_GGML_Q8_0, 0.005}, {LLM_GGML_Q4_0, 0.08}, {LLM_GGML_Q4_1, 0.08}, {LLM_GGML_Q5_0, 0.04},
		{LLM_GGML_Q5_1, 0.037}, {LLM_GGML_Q4_K, 0.07}, {LLM_GGML_Q5_K, 0.035}, {LLM_GGML_Q6_K, 0.017},
	};
	/* clang-format on */
	float x[1024], y[1024];
	uint64_t r = 12345;
	for (int j = 0; j < 1024; j++) {
		r = r * 6364136223846793005u + 1442695040888963407u;
		x[j] = (float)((double)(r >> 11) / 9007199254740992.0 * 2 - 1);
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		double e = 0, v = 0;
		round_trip(want[i].t, x, 1024, y);
		for (int j = 0; j < 1024; j++) {
			e += (double)(y[j] - x[j]) * (y[j] - x[j]);
			v += (double)x[j] * x[j];
		}
		T_CHECKF(sqrt(e / v) < want[i].rel, "%s: %g", llm_ggml_type_name(want[i].t), sqrt(e / v));
	}
	uint8_t b[1024];
	T_CHECK(llm_quantize(LLM_GGML_Q4_K, x, 128, b) < 0); /* not whole super-blocks */
	T_CHECK(llm_quantize(LLM_GGML_Q8_0, x, 40, b) < 0);
	T_CHECK(llm_quantize(LLM_GGML_Q2_K, x, 256, b) < 0 && !llm_quantize_supported(LLM_GGML_Q2_K));
	T_CHECK(!llm_quantize_supported(LLM_GGML_F16));
}

int
main(void)
{
	T_RUN(supported_types_and_names);
	T_RUN(q8_0_and_q4_0);
	T_RUN(q5_0_fifth_bits);
	T_RUN(q4_k_scales_and_minimums);
	T_RUN(q6_k_layout);
	T_RUN(nan_and_inf_scales_propagate);
	T_RUN(layout_names_and_sizes);
	T_RUN(tile_of_q4_0);
	T_RUN(tile_of_q6_k_sub8);
	T_RUN(packed_tile);
	T_RUN(quantize_grid_values_exactly);
	T_RUN(quantize_error_within_the_bits);
	return T_DONE();
}
