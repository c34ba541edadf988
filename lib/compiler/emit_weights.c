/* emit_weights.c: the emitter's ground floor, beside emit_ir.c
 * (emit_int.h): the weights as the kernels read them.  The facts and
 * views of a tiled layout (quant.h), the scales and the 5- and 6-bit
 * codes of a tile's group as vectors, and which weights each kernel
 * takes (em_qa8: the int8 kernels, em_bd16: the bf16 one).  It calls
 * emit_ir.c only. */
#include <inttypes.h>
#include <string.h>

#include "emit_int.h"

/* The facts of t's layout, without the views. */
struct qparts
em_qinfo(const struct llm_plan_tensor *t)
{
	struct qparts q = {0};
	q.R = t->ql.rows;
	q.G = t->ql.group;
	q.code = t->ql.code;
	int bits = llm_qcode_bits(q.code);
	q.four = bits == 4;
	q.pk = bits == 5 || bits == 6;
	q.B = q.G * bits / 8;
	q.np = q.pk ? (int)(q.R * q.G / LLM_QPIECE) : 0;
	q.pb = q.pk ? LLM_QPIECE / 8 * bits : 0;
	q.nt = t->shape[0] / q.R;
	q.ng = t->shape[1] / q.G;
	q.sub = t->ql.sub;
	q.gpb = LLM_QSUPER / q.G;
	q.se = t->ql.sub ? "i8" : t->ql.half ? "f16" : "f32";
	return q;
}

/* The views of t's parts; with pieces > 0 the codes are viewed as
 * [n/8, k/G, pieces, 64] (64-byte pieces of the same bytes), with pieces
 * < 0 as [n/8, k/G, 8 * B] (a tile's group in one).  5- and 6-bit codes
 * are always [n/8, k/G, np, pb], their pieces. */
struct qparts
em_qview_as(struct em *e, const struct llm_plan_tensor *t, int pieces)
{
	struct qparts q = em_qinfo(t);
	int64_t n = t->shape[0], k = t->shape[1];
	int pw = 64; /* bytes a piece */
	if (q.pk) {
		pieces = q.np;
		pw = q.pb;
	}
	const char *cs = pieces > 0 ? em_fmt("%" PRId64 "x%" PRId64 "x%dx%dxi8", q.nt, q.ng, pieces, pw) :
	    pieces < 0 ? em_fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "xi8", q.nt, q.ng, q.R * q.B) :
			 em_fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 "xi8", q.nt, q.ng, q.R, q.B);
	const char *ss = em_fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "x%s", q.nt, q.ng, q.R, q.se);
	q.ct = em_fmt("tensor<%s>", cs);
	q.st = em_fmt("tensor<%s>", ss);
	q.codes = em_view_at(e, t->offset, cs);
	q.scales = em_view_at(e, t->offset + llm_qlayout_scales_at(&t->ql, n, k), ss);
	if (pieces > 0) {
		q.pct = em_fmt("memref<%" PRId64 "x%dxi8>", q.nt * q.ng, pieces * pw);
		q.pst = em_fmt("memref<%" PRId64 "x%" PRId64 "x%s>", q.nt * q.ng, q.R, q.se);
		q.pc = em_mview_at(e, t->offset, q.pct);
		q.ps = em_mview_at(e, t->offset + llm_qlayout_scales_at(&t->ql, n, k), q.pst);
	}
	q.mins = t->ql.mins ? em_view_at(e, t->offset + llm_qlayout_mins_at(&t->ql, n, k), ss) : NULL;
	if (q.sub) {
		uint64_t sup = llm_qlayout_super_at(&t->ql, n, k);
		const char *ds = em_fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "xf16", q.nt, k / LLM_QSUPER, q.R);
		q.dt = em_fmt("tensor<%s>", ds);
		q.sd = em_view_at(e, t->offset + llm_qlayout_scales_at(&t->ql, n, k) + sup, ds);
		q.md = t->ql.mins ? em_view_at(e, t->offset + llm_qlayout_mins_at(&t->ql, n, k) + sup, ds) : NULL;
	}
	return q;
}

/* 1 if the int8 kernels read pt's layout (with activations "q8"): 8-, 5-
 * or 6-bit codes in groups of 32 or 16, 4-bit codes in groups of 32,
 * offsets only with groups of 32. */
int
em_qa8(const struct llm_plan_tensor *pt)
{
	int G = pt->ql.group;
	if (llm_qcode_bits(pt->ql.code) == 4 || pt->ql.mins)
		return G == 32;
	return G == 32 || G == 16;
}

/* The scales (%_sv) and offsets (%_mv) of the 8 rows of tile %_t, group
 * %_g, as vector<8xf32>: read, widened from f16, or ("-sub8") computed. */
void
em_qscales(struct llm_buf *b, const struct qparts *q, int ind)
{
	const char *v8 = "vector<8xf32>";
	if (q->sub) {
		/* s = d * sc (m = -dmin * min) in f32, ggml's own products */
		em_ln(b, ind, "%%_gpb = arith.constant %" PRId64 " : index", q->gpb);
		em_ln(b, ind, "%%_gb = arith.divui %%_g, %%_gpb : index");
		for (int p = 0; p < (q->mins ? 2 : 1); p++) {
			const char *v = p ? "%_mv" : "%_sv", *c = p ? "m" : "s";
			em_rd(b, ind, em_fmt("%%_%sq", c), p ? q->mins : q->scales, "%_t, %_g, %_c0", "%_i0", q->st,
			    "vector<8xi8>");
			em_ln(b, ind, "%%_%sf = arith.sitofp %%_%sq : vector<8xi8> to %s", c, c, v8);
			em_rd(b, ind, em_fmt("%%_%sh", c), p ? q->md : q->sd, "%_t, %_gb, %_c0", "%_h0f", q->dt,
			    "vector<8xf16>");
			em_ln(b, ind, "%%_%sd = arith.extf %%_%sh : vector<8xf16> to %s", c, c, v8);
			em_ln(b, ind, "%s = arith.mulf %%_%sd, %%_%sf : %s", v, c, c, v8);
		}
	} else if (strcmp(q->se, "f16") == 0) {
		/* f16 scales and offsets widen exactly */
		em_rd(b, ind, "%_sh", q->scales, "%_t, %_g, %_c0", "%_h0f", q->st, "vector<8xf16>");
		em_ln(b, ind, "%%_sv = arith.extf %%_sh : vector<8xf16> to %s", v8);
		if (q->mins) {
			em_rd(b, ind, "%_mh", q->mins, "%_t, %_g, %_c0", "%_h0f", q->st, "vector<8xf16>");
			em_ln(b, ind, "%%_mv = arith.extf %%_mh : vector<8xf16> to %s", v8);
		}
	} else {
		em_rd(b, ind, "%_sv", q->scales, "%_t, %_g, %_c0", "%_f0", q->st, v8);
		if (q->mins)
			em_rd(b, ind, "%_mv", q->mins, "%_t, %_g, %_c0", "%_f0", q->st, v8);
	}
}

/* The 64 codes of piece `piece` (an index value) of tile %_t's group
 * %_g in the 5- or 6-bit form (quant.h) as the int8 codes res, a
 * vector<64xi8>: the 32 bytes' low nibbles then high ones, each plane's
 * 64 bits (a bitcast to vector<64xi1>) selecting its bit above them, less
 * the zero. */
void
em_qpiece(struct llm_buf *b, int ind, const struct qparts *q, const char *piece, const char *res)
{
	const char *b32 = "vector<32xi8>", *b64 = "vector<64xi8>";
	int bits = llm_qcode_bits(q->code);
	em_ln(b, ind, "%s_z = arith.constant 0 : i8", res);
	em_ln(b, ind, "%s_o0 = arith.constant 0 : index", res);
	em_ln(b, ind, "%s_m = arith.constant dense<15> : %s", res, b32);
	em_ln(b, ind, "%s_s = arith.constant dense<4> : %s", res, b32);
	em_ln(b, ind, "%s_k0 = arith.constant dense<0> : %s", res, b64);
	em_rd(b, ind, em_fmt("%s_n", res), q->codes, em_fmt("%%_t, %%_g, %s, %s_o0", piece, res), em_fmt("%s_z", res),
	    q->ct, b32);
	em_ln(b, ind, "%s_l = arith.andi %s_n, %s_m : %s", res, res, res, b32);
	em_ln(b, ind, "%s_h = arith.shrui %s_n, %s_s : %s", res, res, res, b32);
	em_ln(b, ind, "%s_v4 = vector.shuffle %s_l, %s_h [%s] : %s, %s", res, res, res, em_lanes(64, 1), b32, b32);
	for (int k = 4; k < bits; k++) {
		em_ln(b, ind, "%s_o%d = arith.constant %d : index", res, k, 32 + 8 * (k - 4));
		em_rd(b, ind, em_fmt("%s_b%d", res, k), q->codes, em_fmt("%%_t, %%_g, %s, %s_o%d", piece, res, k),
		    em_fmt("%s_z", res), q->ct, "vector<8xi8>");
		em_ln(b, ind, "%s_i%d = vector.bitcast %s_b%d : vector<8xi8> to vector<64xi1>", res, k, res, k);
		em_ln(b, ind, "%s_k%d = arith.constant dense<%d> : %s", res, k, 1 << k, b64);
		em_ln(b, ind, "%s_e%d = arith.select %s_i%d, %s_k%d, %s_k0 : vector<64xi1>, %s", res, k, res, k, res, k,
		    res, b64);
		em_ln(b, ind, "%s_v%d = arith.ori %s_v%d, %s_e%d : %s", res, k + 1, res, k, res, k, b64);
	}
	em_ln(b, ind, "%s_zz = arith.constant dense<%d> : %s", res, llm_qcode_zero(q->code), b64);
	em_ln(b, ind, "%s = arith.subi %s_v%d, %s_zz : %s", res, res, bits, res, b64);
}

/* "-sub8" layouts in prefill: the scales (and offsets) of the tile %_t
 * computed once for all the rows of x, [ng, 8] f32 each (in *sx, *mx);
 * returns their type.  A group's are then read as %_sv, %_mv. */
const char *
em_qscales_once(struct llm_buf *b, const struct qparts *q, const char **sx, const char **mx)
{
	int np = q->mins ? 2 : 1;
	const char *xt = em_fmt("tensor<%" PRId64 "x8xf32>", q->ng);
	for (int p = 0; p < np; p++)
		em_ln(b, 6, "%%_se%d = tensor.empty() : %s", p, xt);
	em_ln(b, 6, "%%_sx:%d = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%s) -> (%s) {", np,
	    np == 2 ? "%_sa0 = %_se0, %_sa1 = %_se1" : "%_sa0 = %_se0", np == 2 ? em_fmt("%s, %s", xt, xt) : xt);
	em_qscales(b, q, 8);
	for (int p = 0; p < np; p++)
		em_ln(b, 8,
		    "%%_sw%d = vector.transfer_write %s, %%_sa%d[%%_g, %%_c0] {in_bounds = [true]} : "
		    "vector<8xf32>, %s",
		    p, p ? "%_mv" : "%_sv", p, xt);
	em_ln(b, 8, "scf.yield %s : %s", np == 2 ? "%_sw0, %_sw1" : "%_sw0", np == 2 ? em_fmt("%s, %s", xt, xt) : xt);
	em_ln(b, 6, "}");
	*sx = "%_sx#0";
	*mx = q->mins ? "%_sx#1" : NULL;
	return xt;
}
/* 1 if em_bdot() takes W: dense bf16, its rows in whole chunks of 64, k a
 * multiple of 32 (a call of the kernel). */
int
em_bd16(const struct llm_plan_tensor *pt)
{
	return !pt->layout && pt->dtype == LLM_DT_BF16 && pt->ndim == 2 && pt->shape[0] % GEMV_CHUNK == 0 &&
	    pt->shape[1] % 32 == 0;
}
