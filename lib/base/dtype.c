/* dtype.c: see dtype.h.  Conversions work on bit patterns, so they do not
 * depend on the compiler's _Float16 support or the FPU rounding mode. */
#include <math.h>
#include <string.h>

#include "dtype.h"

static const struct {
	const char *st, *name;
	size_t size;
} info[LLM_DT_COUNT] = {
	[LLM_DT_NONE] = {"", "", 0},
	[LLM_DT_F32] = {"F32", "f32", 4},
	[LLM_DT_F16] = {"F16", "f16", 2},
	[LLM_DT_BF16] = {"BF16", "bf16", 2},
	[LLM_DT_F64] = {"F64", "f64", 8},
	[LLM_DT_I8] = {"I8", "i8", 1},
	[LLM_DT_U8] = {"U8", "u8", 1},
	[LLM_DT_I16] = {"I16", "i16", 2},
	[LLM_DT_U16] = {"U16", "u16", 2},
	[LLM_DT_I32] = {"I32", "i32", 4},
	[LLM_DT_U32] = {"U32", "u32", 4},
	[LLM_DT_I64] = {"I64", "i64", 8},
	[LLM_DT_U64] = {"U64", "u64", 8},
	[LLM_DT_BOOL] = {"BOOL", "bool", 1},
	[LLM_DT_F8_E4M3] = {"F8_E4M3", "f8e4m3", 1},
	[LLM_DT_F8_E5M2] = {"F8_E5M2", "f8e5m2", 1},
};

size_t
llm_dtype_size(enum llm_dtype t)
{
	return (unsigned)t < LLM_DT_COUNT ? info[t].size : 0;
}

const char *
llm_dtype_st_name(enum llm_dtype t)
{
	return (unsigned)t < LLM_DT_COUNT ? info[t].st : "";
}

const char *
llm_dtype_name(enum llm_dtype t)
{
	return (unsigned)t < LLM_DT_COUNT ? info[t].name : "";
}

enum llm_dtype
llm_dtype_from_st_name(const char *s)
{
	for (int t = 1; t < LLM_DT_COUNT; t++)
		if (strcmp(s, info[t].st) == 0)
			return (enum llm_dtype)t;
	return LLM_DT_NONE;
}

enum llm_dtype
llm_dtype_from_name(const char *s)
{
	for (int t = 1; t < LLM_DT_COUNT; t++)
		if (strcmp(s, info[t].name) == 0)
			return (enum llm_dtype)t;
	return LLM_DT_NONE;
}

int
llm_dtype_is_float_weight(enum llm_dtype t)
{
	return t == LLM_DT_F32 || t == LLM_DT_F16 || t == LLM_DT_BF16;
}

static uint32_t
f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float
u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

float
llm_bf16_to_f32(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}

uint16_t
llm_f32_to_bf16(float f)
{
	uint32_t u = f2u(f);

	if ((u & 0x7fffffff) > 0x7f800000) /* NaN: keep sign, force quiet */
		return (uint16_t)((u >> 16) | 0x0040);
	/* Round to nearest even; overflow carries into the exponent and gives
	 * inf, as it should. */
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float
llm_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;

	if (exp == 0x1f) /* inf or NaN */
		return u2f(sign | 0x7f800000 | (man << 13));
	if (exp == 0) {
		if (man == 0)
			return u2f(sign);
		/* Subnormal: man * 2^-24, exact in f32. */
		float v = (float)man * u2f(0x33800000); /* 2^-24 */
		return u2f(sign | f2u(v));
	}
	return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t
llm_f32_to_f16(float f)
{
	uint32_t u = f2u(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t a = u & 0x7fffffff;

	if (a > 0x7f800000) /* NaN: keep the top payload bits, force quiet */
		return sign | 0x7e00 | (uint16_t)((a >> 13) & 0x1ff);
	if (a >= 0x477ff000) /* rounds to >= 65520: inf */
		return sign | 0x7c00;
	if (a < 0x38800000) {
		/* Result is subnormal or zero: value = a * 2^24 in units of
		 * the f16 subnormal step; round to nearest even. */
		if (a < 0x33000000) /* < 2^-25: rounds to zero (2^-25 ties to 0) */
			return sign;
		uint32_t e = a >> 23;
		uint32_t m = (a & 0x7fffff) | 0x800000;
		uint32_t shift = 126 - e; /* 14..24 */
		uint32_t r = m >> shift;
		uint32_t rem = m & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rem > half || (rem == half && (r & 1)))
			r++;
		return sign | (uint16_t)r;
	}
	/* Normal: rebias exponent and round the 13 dropped bits to nearest
	 * even; a carry into the exponent is correct rounding. */
	a -= 112u << 23;
	a += 0xfff + ((a >> 13) & 1);
	return sign | (uint16_t)(a >> 13);
}

/* f64 -> f32 rounding to odd: truncate, and set the last bit when the
 * result is inexact.  A second rounding of that f32 to nearest even in a
 * format at least two bits narrower (f16, bf16) then equals rounding the
 * double once; plain (float)d first would turn a value just above an f16
 * halfway point into the tie itself, and ties-to-even could go the wrong
 * way. */
static float
f64_to_f32_odd(double d)
{
	float f = (float)d;
	uint32_t u;

	if (d != d || (double)f == d)
		return f;
	u = f2u(f);
	if (fabs((double)f) > fabs(d)) /* rounded away from zero (maybe to inf) */
		u -= 1;
	return u2f(u | 1);
}

static int
is_src(enum llm_dtype t)
{
	return t == LLM_DT_F32 || t == LLM_DT_F16 || t == LLM_DT_BF16 || t == LLM_DT_F64;
}

int
llm_convert(void *dst, enum llm_dtype dt, const void *src, enum llm_dtype st, size_t n)
{
	if (dt == st) {
		memcpy(dst, src, n * llm_dtype_size(dt));
		return 0;
	}
	if (!is_src(st) || !llm_dtype_is_float_weight(dt))
		return -1;
	/* One loop per pair, so the conversions inline and the loops
	 * vectorise: llm-pack-weights spends its CPU time here. */
	const uint8_t *s8 = src;
	uint8_t *d8 = dst;
#define LOAD_F32(i) ({ float v_; memcpy(&v_, s8 + 4 * (i), 4); v_; })
#define LOAD_F16(i) ({ uint16_t h_; memcpy(&h_, s8 + 2 * (i), 2); llm_f16_to_f32(h_); })
#define LOAD_BF16(i) ({ uint16_t h_; memcpy(&h_, s8 + 2 * (i), 2); llm_bf16_to_f32(h_); })
#define LOAD_F64(i) ({ double d_; memcpy(&d_, s8 + 8 * (i), 8); dt == LLM_DT_F32 ? (float)d_ : f64_to_f32_odd(d_); })
#define STORE_F32(i, v) do { float w_ = (v); memcpy(d8 + 4 * (i), &w_, 4); } while (0)
#define STORE_F16(i, v) do { uint16_t w_ = llm_f32_to_f16(v); memcpy(d8 + 2 * (i), &w_, 2); } while (0)
#define STORE_BF16(i, v) do { uint16_t w_ = llm_f32_to_bf16(v); memcpy(d8 + 2 * (i), &w_, 2); } while (0)
#define LOOP(LOAD, STORE) for (size_t i = 0; i < n; i++) STORE(i, LOAD(i))
#define TO(LOAD) do { switch (dt) { \
	case LLM_DT_F32: LOOP(LOAD, STORE_F32); break; \
	case LLM_DT_F16: LOOP(LOAD, STORE_F16); break; \
	default: LOOP(LOAD, STORE_BF16); break; } } while (0)
	/* one case a line */
	/* clang-format off */
	switch (st) {
	case LLM_DT_F32: TO(LOAD_F32); break;
	case LLM_DT_F16: TO(LOAD_F16); break;
	case LLM_DT_BF16: TO(LOAD_BF16); break;
	default: TO(LOAD_F64); break;
	}
	/* clang-format on */
#undef LOAD_F32
#undef LOAD_F16
#undef LOAD_BF16
#undef LOAD_F64
#undef STORE_F32
#undef STORE_F16
#undef STORE_BF16
#undef LOOP
#undef TO
	return 0;
}
