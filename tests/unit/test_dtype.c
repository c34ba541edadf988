/* Unit tests for lib/base/dtype.c: dtype names and sizes, and the f16/bf16 <->
 * f32 conversions.
 *
 * The conversions are checked three ways: exhaustively over all 65,536
 * bit patterns of each narrow type (decode against an independent decoder,
 * round trip through f32); for f32 -> narrow against a reference that
 * finds the neighbouring narrow values by binary search over a table and
 * compares with their exact midpoint in long double (no bit tricks shared
 * with the code under test), over every f32 near every halfway point plus
 * a strided sweep of all 2^32 patterns; and against the compiler's own
 * _Float16 conversions where gcc provides them. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../../lib/base/dtype.h"
#include "../../lib/base/util.h"
#include "t.h"

_Static_assert(LDBL_MANT_DIG >= 64, "the reference needs x87 long double");

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

/* Exact values of every non-negative finite pattern, plus the pattern of
 * +inf standing for the next value up (2^16 for f16, 2^128 for bf16): a
 * value at or beyond the midpoint to it overflows to inf, as IEEE 754
 * rounding with an unbounded exponent then saturating says. */
#define F16_INF 0x7c00
#define BF16_INF 0x7f80
static long double val16[F16_INF + 1], valbf[BF16_INF + 1];

static void
init_tables(void)
{
	for (int p = 0; p <= F16_INF; p++) {
		int e = p >> 10, m = p & 0x3ff;
		val16[p] = e ? ldexpl(1024 + m, e - 25) : ldexpl(m, -24);
	}
	for (int p = 0; p <= BF16_INF; p++) {
		int e = p >> 7, m = p & 0x7f;
		valbf[p] = e ? ldexpl(128 + m, e - 134) : ldexpl(m, -133);
	}
}

/* Nearest narrow value to x (not NaN), ties to even. */
static uint16_t
ref_narrow(long double x, const long double *val, int inf)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	long double a = fabsl(x);
	int lo = 0, hi = inf;

	if (a >= val[inf])
		return sign | (uint16_t)inf;
	while (hi - lo > 1) {
		int mid = (lo + hi) / 2;
		if (val[mid] <= a)
			lo = mid;
		else
			hi = mid;
	}
	/* val[lo] <= a < val[hi]: the midpoint is exact in long double. */
	long double m = (val[lo] + val[hi]) / 2;
	if (a < m)
		return sign | (uint16_t)lo;
	if (a > m)
		return sign | (uint16_t)hi;
	return sign | (uint16_t)(lo & 1 ? hi : lo);
}

static int
is_nan16(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

static int
is_nanbf(uint16_t h)
{
	return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}

static long double
exact16(uint16_t h)
{
	long double v = (h & 0x7fff) == F16_INF ? INFINITY : val16[h & 0x7fff];
	return h & 0x8000 ? -v : v;
}

T_TEST(dtype_names_and_sizes)
{
	/* a table */
	/* clang-format off */
	static const struct { enum llm_dtype t; const char *st, *name; size_t size; } want[] = {
		{LLM_DT_F32, "F32", "f32", 4}, {LLM_DT_F16, "F16", "f16", 2},
		{LLM_DT_BF16, "BF16", "bf16", 2}, {LLM_DT_F64, "F64", "f64", 8},
		{LLM_DT_I8, "I8", "i8", 1}, {LLM_DT_U8, "U8", "u8", 1},
		{LLM_DT_I16, "I16", "i16", 2}, {LLM_DT_U16, "U16", "u16", 2},
		{LLM_DT_I32, "I32", "i32", 4}, {LLM_DT_U32, "U32", "u32", 4},
		{LLM_DT_I64, "I64", "i64", 8}, {LLM_DT_U64, "U64", "u64", 8},
		{LLM_DT_BOOL, "BOOL", "bool", 1}, {LLM_DT_F8_E4M3, "F8_E4M3", "f8e4m3", 1},
		{LLM_DT_F8_E5M2, "F8_E5M2", "f8e5m2", 1},
	};
	/* clang-format on */
	T_CHECK(LLM_NELEM(want) == LLM_DT_COUNT - 1);
	for (size_t i = 0; i < LLM_NELEM(want); i++) {
		T_CHECKF(llm_dtype_size(want[i].t) == want[i].size, "%s", want[i].st);
		T_CHECKF(strcmp(llm_dtype_st_name(want[i].t), want[i].st) == 0, "%s", want[i].st);
		T_CHECKF(strcmp(llm_dtype_name(want[i].t), want[i].name) == 0, "%s", want[i].st);
		T_CHECKF(llm_dtype_from_st_name(want[i].st) == want[i].t, "%s", want[i].st);
		T_CHECKF(llm_dtype_from_name(want[i].name) == want[i].t, "%s", want[i].st);
	}
	T_CHECK(llm_dtype_size(LLM_DT_NONE) == 0);
	T_CHECK(llm_dtype_size(LLM_DT_COUNT) == 0);
	T_CHECK(llm_dtype_from_st_name("f32") == LLM_DT_NONE); /* case matters */
	T_CHECK(llm_dtype_from_st_name("Q4_0") == LLM_DT_NONE);
	T_CHECK(llm_dtype_from_st_name("") == LLM_DT_NONE);
	T_CHECK(llm_dtype_from_name("F32") == LLM_DT_NONE);
	T_CHECK(llm_dtype_is_float_weight(LLM_DT_F32) && llm_dtype_is_float_weight(LLM_DT_F16) &&
	    llm_dtype_is_float_weight(LLM_DT_BF16));
	T_CHECK(!llm_dtype_is_float_weight(LLM_DT_F64) && !llm_dtype_is_float_weight(LLM_DT_I8));
}

/* Every f16 pattern: exact value, round trip, NaN kept with its sign. */
T_TEST(f16_all_patterns_decode_exactly_and_round_trip)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float f = llm_f16_to_f32((uint16_t)h);
		uint16_t back = llm_f32_to_f16(f);
		if (is_nan16((uint16_t)h)) {
			T_CHECKF(isnan(f), "%04x", h);
			T_CHECKF(!!signbit(f) == !!(h & 0x8000), "%04x", h);
			T_CHECKF(is_nan16(back) && (back & 0x8000) == (h & 0x8000), "%04x -> %04x", h, back);
			continue;
		}
		T_CHECKF((long double)f == exact16((uint16_t)h), "%04x -> %a", h, f);
		T_CHECKF(!!signbit(f) == !!(h & 0x8000), "%04x", h); /* -0 stays -0 */
		T_CHECKF(back == h, "%04x -> %a -> %04x", h, f, back);
	}
}

T_TEST(bf16_all_patterns_decode_exactly_and_round_trip)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float f = llm_bf16_to_f32((uint16_t)h);
		uint16_t back = llm_f32_to_bf16(f);
		if (is_nanbf((uint16_t)h)) {
			T_CHECKF(isnan(f), "%04x", h);
			T_CHECKF(!!signbit(f) == !!(h & 0x8000), "%04x", h);
			T_CHECKF(is_nanbf(back) && (back & 0x8000) == (h & 0x8000), "%04x -> %04x", h, back);
			continue;
		}
		long double v = (h & 0x7fff) == BF16_INF ? INFINITY : valbf[h & 0x7fff];
		if (h & 0x8000)
			v = -v;
		T_CHECKF((long double)f == v, "%04x -> %a", h, f);
		T_CHECKF(!!signbit(f) == !!(h & 0x8000), "%04x", h);
		T_CHECKF(back == h, "%04x -> %a -> %04x", h, f, back);
	}
}

/* Check one f32 value against the reference (and _Float16). */
static int nchecked;

static int
check_f32(float x)
{
	uint16_t h = llm_f32_to_f16(x), b = llm_f32_to_bf16(x);
	nchecked++;
	if (isnan(x)) {
		if (!is_nan16(h) || !is_nanbf(b) || !(h & 0x0200) || !(b & 0x0040) || !!(h & 0x8000) != !!signbit(x) ||
		    !!(b & 0x8000) != !!signbit(x)) {
			fprintf(stderr, "NaN %08x -> f16 %04x bf16 %04x\n", f2u(x), h, b);
			return 0;
		}
		return 1;
	}
	uint16_t rh = ref_narrow(x, val16, F16_INF), rb = ref_narrow(x, valbf, BF16_INF);
	if (h != rh || b != rb) {
		fprintf(stderr, "%08x (%a): f16 %04x want %04x, bf16 %04x want %04x\n", f2u(x), x, h, rh, b, rb);
		return 0;
	}
#ifdef __FLT16_MAX__
	_Float16 c = (_Float16)x;
	uint16_t ch;
	memcpy(&ch, &c, 2);
	if (ch != h) {
		fprintf(stderr, "%08x (%a): f16 %04x, _Float16 says %04x\n", f2u(x), x, h, ch);
		return 0;
	}
#endif
	return 1;
}

static int
check_both_signs(float x)
{
	return check_f32(x) && check_f32(-x);
}

/* Every f32 within 2 ulps of each f16 value and of each halfway point
 * between neighbouring f16 values (incl. subnormals and 65520, the
 * threshold of overflow). */
T_TEST(f32_to_f16_around_every_halfway_point)
{
	for (int p = 0; p < F16_INF; p++) {
		float v = (float)val16[p];
		float mid = (float)((val16[p] + val16[p + 1]) / 2);
		T_CHECKF((long double)mid == (val16[p] + val16[p + 1]) / 2, "%04x", p);
		for (int k = -2; k <= 2; k++) {
			uint32_t um = f2u(mid) + (uint32_t)k, uv = f2u(v) + (uint32_t)k;
			T_CHECKF(check_both_signs(u2f(um)), "mid %04x %+d", p, k);
			if (p || k >= 0)
				T_CHECKF(check_both_signs(u2f(uv)), "val %04x %+d", p, k);
		}
	}
}

/* Every f32 whose low 16 bits lie within 2 of 0, 0x8000 (the bf16
 * halfway point) or 0xffff, for every high half: all of bf16's rounding
 * cases, subnormals included. */
T_TEST(f32_to_bf16_around_every_halfway_point)
{
	static const uint32_t lows[] = {0, 1, 2, 0x7ffe, 0x7fff, 0x8000, 0x8001, 0x8002, 0xfffe, 0xffff};
	for (uint32_t hi = 0; hi < BF16_INF; hi++)
		for (size_t i = 0; i < LLM_NELEM(lows); i++)
			T_CHECKF(check_both_signs(u2f(hi << 16 | lows[i])), "%08x", hi << 16 | lows[i]);
}

/* A strided walk over all 2^32 patterns: NaNs, infinities, f32
 * subnormals, huge values. */
T_TEST(f32_to_narrow_strided_sweep_of_all_patterns)
{
	for (uint64_t u = 12345; u < (1ull << 32); u += 1021)
		T_CHECKF(check_f32(u2f((uint32_t)u)), "%08llx", (unsigned long long)u);
}

T_TEST(f32_to_narrow_special_values)
{
	static const uint32_t nans[] = {0x7f800001, 0x7fbfffff, 0x7fc00000, 0x7fffffff, 0xff800001, 0xffc00000,
		0xffffffff, 0x7f802000};
	for (size_t i = 0; i < LLM_NELEM(nans); i++)
		T_CHECKF(check_f32(u2f(nans[i])), "%08x", nans[i]);
	T_CHECK(llm_f32_to_f16(0.0f) == 0x0000 && llm_f32_to_f16(-0.0f) == 0x8000);
	T_CHECK(llm_f32_to_bf16(0.0f) == 0x0000 && llm_f32_to_bf16(-0.0f) == 0x8000);
	T_CHECK(llm_f32_to_f16(INFINITY) == 0x7c00 && llm_f32_to_f16(-INFINITY) == 0xfc00);
	T_CHECK(llm_f32_to_bf16(INFINITY) == 0x7f80 && llm_f32_to_bf16(-INFINITY) == 0xff80);
	/* Overflow: 65504 is the largest f16; 65520 is halfway to 2^16. */
	T_CHECK(llm_f32_to_f16(65504.0f) == 0x7bff);
	T_CHECK(llm_f32_to_f16(nextafterf(65520.0f, 0)) == 0x7bff);
	T_CHECK(llm_f32_to_f16(65520.0f) == 0x7c00);
	T_CHECK(llm_f32_to_f16(-1e10f) == 0xfc00);
	T_CHECK(llm_f32_to_f16(FLT_MAX) == 0x7c00 && llm_f32_to_bf16(FLT_MAX) == 0x7f80);
	/* Subnormals: 2^-24 is the smallest f16; 2^-25 ties to 0, above it to 2^-24. */
	T_CHECK(llm_f32_to_f16(ldexpf(1, -24)) == 0x0001);
	T_CHECK(llm_f32_to_f16(ldexpf(1, -25)) == 0x0000);
	T_CHECK(llm_f32_to_f16(nextafterf(ldexpf(1, -25), 1)) == 0x0001);
	T_CHECK(llm_f32_to_f16(ldexpf(3, -25)) == 0x0002); /* 1.5 ulp: tie to even 2 */
	T_CHECK(llm_f32_to_f16(-ldexpf(1, -30)) == 0x8000);
	T_CHECK(llm_f32_to_bf16(u2f(0x00000001)) == 0x0000);
	T_CHECK(llm_f32_to_bf16(u2f(0x00008001)) == 0x0001);
	/* Ties to even in normal range. */
	T_CHECK(llm_f32_to_f16(1.0f + ldexpf(1, -11)) == 0x3c00);
	T_CHECK(llm_f32_to_f16(1.0f + ldexpf(3, -11)) == 0x3c02);
	T_CHECK(llm_f32_to_bf16(u2f(0x3f808000)) == 0x3f80);
	T_CHECK(llm_f32_to_bf16(u2f(0x3f818000)) == 0x3f82);
}

#ifdef __FLT16_MAX__
/* The compiler's _Float16 decode agrees on every pattern. */
T_TEST(f16_decode_agrees_with_compiler_float16)
{
	for (uint32_t h = 0; h < 65536; h++) {
		_Float16 c;
		uint16_t hh = (uint16_t)h;
		memcpy(&c, &hh, 2);
		float want = (float)c, got = llm_f16_to_f32(hh);
		if (isnan(want))
			T_CHECKF(isnan(got), "%04x", h);
		else
			T_CHECKF(f2u(got) == f2u(want), "%04x: %a vs %a", h, got, want);
	}
}
#endif

/* A reference for f64 sources: the same search, with the double itself. */
T_TEST(convert_f64_rounds_once)
{
	/* Just above a halfway point by less than an f32 ulp: rounding through
	 * f32 first would land on the tie and go to even (down). */
	double d16 = 1.0 + ldexp(1, -11) + ldexp(1, -40);
	double dbf = 1.0 + ldexp(1, -8) + ldexp(1, -30);
	uint16_t h;
	T_CHECK(llm_convert(&h, LLM_DT_F16, &d16, LLM_DT_F64, 1) == 0);
	T_CHECKF(h == 0x3c01, "%04x", h);
	T_CHECK(llm_convert(&h, LLM_DT_BF16, &dbf, LLM_DT_F64, 1) == 0);
	T_CHECKF(h == 0x3f81, "%04x", h);
	/* Every f16 and bf16 halfway point, nudged by one double ulp each way. */
	for (int p = 0; p < F16_INF; p++) {
		double mid = (double)((val16[p] + val16[p + 1]) / 2);
		double ds[4] = {nextafter(mid, 0), nextafter(mid, INFINITY), -nextafter(mid, 0), mid};
		for (int k = 0; k < 4; k++) {
			T_CHECK(llm_convert(&h, LLM_DT_F16, &ds[k], LLM_DT_F64, 1) == 0);
			uint16_t want = ref_narrow(ds[k], val16, F16_INF);
			T_CHECKF(h == want, "%a: %04x want %04x", ds[k], h, want);
		}
	}
	for (int p = 0; p < BF16_INF; p++) {
		double mid = (double)((valbf[p] + valbf[p + 1]) / 2);
		double ds[3] = {nextafter(mid, 0), nextafter(mid, INFINITY), -nextafter(mid, INFINITY)};
		for (int k = 0; k < 3; k++) {
			T_CHECK(llm_convert(&h, LLM_DT_BF16, &ds[k], LLM_DT_F64, 1) == 0);
			uint16_t want = ref_narrow(ds[k], valbf, BF16_INF);
			T_CHECKF(h == want, "%a: %04x want %04x", ds[k], h, want);
		}
	}
	/* Beyond f32's range and below it. */
	double big = 1e300, tiny = 1e-300, nan = NAN;
	T_CHECK(llm_convert(&h, LLM_DT_F16, &big, LLM_DT_F64, 1) == 0 && h == 0x7c00);
	T_CHECK(llm_convert(&h, LLM_DT_BF16, &big, LLM_DT_F64, 1) == 0 && h == 0x7f80);
	T_CHECK(llm_convert(&h, LLM_DT_BF16, &tiny, LLM_DT_F64, 1) == 0 && h == 0x0000);
	T_CHECK(llm_convert(&h, LLM_DT_F16, &nan, LLM_DT_F64, 1) == 0 && is_nan16(h));
	float f;
	double third = 1.0 / 3;
	T_CHECK(llm_convert(&f, LLM_DT_F32, &third, LLM_DT_F64, 1) == 0 && f == (float)third);
}

T_TEST(convert_arrays_between_float_types)
{
	float src[6] = {1.0f, -2.5f, 65504.0f, 1e-8f, INFINITY, 0.1f}, f[6];
	uint16_t h[6], b[6], h2[6];
	T_CHECK(llm_convert(h, LLM_DT_F16, src, LLM_DT_F32, 6) == 0);
	T_CHECK(llm_convert(b, LLM_DT_BF16, src, LLM_DT_F32, 6) == 0);
	for (int i = 0; i < 6; i++) {
		T_CHECK(h[i] == llm_f32_to_f16(src[i]));
		T_CHECK(b[i] == llm_f32_to_bf16(src[i]));
	}
	T_CHECK(llm_convert(f, LLM_DT_F32, h, LLM_DT_F16, 6) == 0);
	for (int i = 0; i < 6; i++)
		T_CHECK(f2u(f[i]) == f2u(llm_f16_to_f32(h[i])));
	/* bf16 -> f16 goes through the exact f32 value. */
	T_CHECK(llm_convert(h2, LLM_DT_F16, b, LLM_DT_BF16, 6) == 0);
	for (int i = 0; i < 6; i++)
		T_CHECK(h2[i] == llm_f32_to_f16(llm_bf16_to_f32(b[i])));
	/* Same type: a copy, for any type. */
	int32_t is[3] = {1, -2, 3}, id[3];
	T_CHECK(llm_convert(id, LLM_DT_I32, is, LLM_DT_I32, 3) == 0 && memcmp(id, is, 12) == 0);
	/* Unsupported pairs fail before writing anything, even for n = 0. */
	int8_t i8[2] = {7, 7};
	T_CHECK(llm_convert(i8, LLM_DT_I8, src, LLM_DT_F32, 2) == -1);
	T_CHECK(i8[0] == 7 && i8[1] == 7);
	T_CHECK(llm_convert(f, LLM_DT_F32, i8, LLM_DT_I8, 2) == -1);
	T_CHECK(llm_convert(i8, LLM_DT_I8, src, LLM_DT_F32, 0) == -1);
	double d[2];
	T_CHECK(llm_convert(d, LLM_DT_F64, src, LLM_DT_F32, 2) == -1);
}

int
main(void)
{
	init_tables();
	T_RUN(dtype_names_and_sizes);
	T_RUN(f16_all_patterns_decode_exactly_and_round_trip);
	T_RUN(bf16_all_patterns_decode_exactly_and_round_trip);
	T_RUN(f32_to_f16_around_every_halfway_point);
	T_RUN(f32_to_bf16_around_every_halfway_point);
	T_RUN(f32_to_narrow_strided_sweep_of_all_patterns);
	T_RUN(f32_to_narrow_special_values);
#ifdef __FLT16_MAX__
	T_RUN(f16_decode_agrees_with_compiler_float16);
#endif
	T_RUN(convert_f64_rounds_once);
	T_RUN(convert_arrays_between_float_types);
	fprintf(stderr, "%d f32 values checked against the reference\n", nchecked);
	return T_DONE();
}
