/* emit_tile.c: prefill's products with int8 activations in blocks of 8
 * rows of W by 16 rows of x, on the tile kernel @llm_qtile_i8 (ir.txt
 * "Kernels"; AMX's tdpbssd where the target has it).  em_qdot() offers
 * them beside its row passes, the tuning table's prefill.int8_tiles
 * choosing (tune.h). */
#include <inttypes.h>
#include <string.h>

#include "emit_int.h"

/* 1 if the tile products read pt's layout: tiles of 8 rows, groups of 32
 * int8 or 4-bit codes (the int8 kernels' other layouts, groups of 16,
 * stay on the row passes). */
int
em_qtile_ok(const struct llm_plan_tensor *pt)
{
	return pt->ql.rows == 8 && pt->ql.group == 32 && em_qa8(pt);
}

/* What a W's tiles read. */
struct tw {
	struct qparts q;       /* codes [nt, ng, 8 * B] */
	int64_t t0;            /* its first tile among the product's */
	const char *bias, *bt; /* view and element type, or NULL */
	int64_t n;
};

struct tctx {
	struct tw *w;
	const char *st;            /* a tile's y: tensor<?x8xf32> */
	const char *xb, *xbt;      /* x's codes in quads [R16, nb, 512] */
	const char *dx, *xs, *dxt; /* its scales and sums of x^ [nb, 16 R16], their type */
};

/* The tile %_t of W_i: for each block of 16 rows of x, 8 accumulators
 * (the tile's rows, the block's rows in lanes) over the groups, then
 * turned to rows of y, the bias added, and written where the block's
 * rows are rows of x. */
static void
tile_body(struct llm_buf *b, int i, void *arg)
{
	struct tctx *c = arg;
	const struct tw *w = &c->w[i];
	const struct qparts *q = &w->q;
	const char *v16 = "vector<16xf32>", *v8 = "vector<8xf32>";
	em_ln(b, 6, "%%_ts = arith.constant %" PRId64 " : index", w->t0);
	em_ln(b, 6, "%%_t = arith.subi %%_tg, %%_ts : index");
	em_ln(b, 6, "%%_t8 = arith.muli %%_t, %%_c8 : index");
	em_ln(b, 6, "%%_ng = arith.constant %" PRId64 " : index", q->ng);
	const char *bias = NULL;
	if (w->bias) {
		em_ln(b, 6, "%%_bz = arith.constant 0.0 : %s", w->bt);
		em_rd(b, 6, "%_bv", w->bias, "%_t8", "%_bz", em_fmt("tensor<%" PRId64 "x%s>", w->n, w->bt),
		    em_fmt("vector<8x%s>", w->bt));
		bias = "%_bv";
		if (strcmp(w->bt, "f32") != 0) {
			em_ln(b, 6, "%%_bf = arith.extf %%_bv : vector<8x%s> to %s", w->bt, v8);
			bias = "%_bf";
		}
	}
	em_ln(b, 6, "%%_ow = scf.for %%_rb = %%_c0 to %%_r16 step %%_c1 iter_args(%%_ot = %%_os) -> (%s) {", c->st);
	em_ln(b, 8, "%%_r0 = arith.muli %%_rb, %%_c16 : index");
	em_ln(b, 8,
	    "%%_ac:8 = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%%_a0 = %%_zw, %%_a1 = %%_zw, %%_a2 = %%_zw, "
	    "%%_a3 = %%_zw, %%_a4 = %%_zw, %%_a5 = %%_zw, %%_a6 = %%_zw, %%_a7 = %%_zw) "
	    "-> (%s, %s, %s, %s, %s, %s, %s, %s) {",
	    v16, v16, v16, v16, v16, v16, v16, v16);
	em_qscales(b, q, 10);
	if (!q->four)
		em_rd(b, 10, "%_w", q->codes, "%_t, %_g, %_c0", "%_i0", q->ct, "vector<256xi8>");
	else {
		/* byte j of a row's 16 holds code j (low nibble) and j + 16
		 * (high): the row's 32 codes, i4 less 8 */
		const char *b128 = "vector<128xi8>";
		struct llm_buf sh = {0};
		for (int m = 0; m < 8; m++)
			for (int j = 0; j < 32; j++)
				llm_buf_printf(&sh, "%s%d", m || j ? ", " : "",
				    j < 16 ? 16 * m + j : 128 + 16 * m + j - 16);
		em_rd(b, 10, "%_wp", q->codes, "%_t, %_g, %_c0", "%_i0", q->ct, b128);
		em_ln(b, 10, "%%_wl = arith.andi %%_wp, %%_m15 : %s", b128);
		em_ln(b, 10, "%%_wh = arith.shrui %%_wp, %%_s4 : %s", b128);
		int i4 = q->code == LLM_QCODE_I4;
		em_ln(b, 10, "%s = vector.shuffle %%_wl, %%_wh [%s] : %s, %s", i4 ? "%_wu" : "%_w", sh.p, b128, b128);
		llm_buf_free(&sh);
		if (i4)
			em_ln(b, 10, "%%_w = arith.subi %%_wu, %%_m8 : vector<256xi8>");
	}
	em_rd(b, 10, "%_xg", c->xb, "%_rb, %_g, %_c0", "%_i0", c->xbt, "vector<512xi8>");
	em_rd(b, 10, "%_dv", c->dx, "%_g, %_r0", "%_f0", c->dxt, v16);
	if (q->mins)
		em_rd(b, 10, "%_xv", c->xs, "%_g, %_r0", "%_f0", c->dxt, v16);
	em_ln(b, 10,
	    "%%_cc = llvm.call @llm_qtile_i8(%%_w, %%_xg) : (vector<256xi8>, vector<512xi8>) -> vector<128xi32>");
	for (int h = 0; h < 8; h++) {
		/* row h of the tile: s_h * dx per row of x, times the sums */
		em_ln(b, 10,
		    "%%_ci%d = vector.extract_strided_slice %%_cc {offsets = [%d], sizes = [16], strides = [1]} : "
		    "vector<128xi32> to vector<16xi32>",
		    h, 16 * h);
		em_ln(b, 10, "%%_cf%d = arith.sitofp %%_ci%d : vector<16xi32> to %s", h, h, v16);
		em_ln(b, 10, "%%_sw%d = vector.extract %%_sv[%d] : f32 from %s", h, h, v8);
		em_ln(b, 10, "%%_sb%d = vector.broadcast %%_sw%d : f32 to %s", h, h, v16);
		em_ln(b, 10, "%%_sc%d = arith.mulf %%_sb%d, %%_dv : %s", h, h, v16);
		em_ln(b, 10, "%%_n%d = vector.fma %%_cf%d, %%_sc%d, %%_a%d : %s", h, h, h, h, v16);
		if (q->mins) {
			em_ln(b, 10, "%%_mw%d = vector.extract %%_mv[%d] : f32 from %s", h, h, v8);
			em_ln(b, 10, "%%_mb%d = vector.broadcast %%_mw%d : f32 to %s", h, h, v16);
			em_ln(b, 10, "%%_nm%d = vector.fma %%_mb%d, %%_xv, %%_n%d : %s", h, h, h, v16);
		}
	}
	const char *n = q->mins ? "%_nm" : "%_n";
	em_ln(b, 10, "scf.yield %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7 : %s, %s, %s, %s, %s, %s, %s, %s", n, n, n, n, n,
	    n, n, n, v16, v16, v16, v16, v16, v16, v16, v16);
	em_ln(b, 8, "}");
	/* [8 rows of W, 16 of x] to [16, 8]: rows of y */
	em_ln(b, 8, "%%_y0 = arith.constant dense<0.0> : vector<8x16xf32>");
	for (int h = 0; h < 8; h++)
		em_ln(b, 8, "%%_y%d = vector.insert %%_ac#%d, %%_y%d [%d] : %s into vector<8x16xf32>", h + 1, h, h, h,
		    v16);
	em_ln(b, 8, "%%_yt = vector.transpose %%_y8, [1, 0] : vector<8x16xf32> to vector<16x8xf32>");
	const char *y = "%_yt";
	if (bias) {
		em_ln(b, 8, "%%_yb = vector.broadcast %s : %s to vector<16x8xf32>", bias, v8);
		em_ln(b, 8, "%%_ya = arith.addf %%_yt, %%_yb : vector<16x8xf32>");
		y = "%_ya";
	}
	em_ln(b, 8,
	    "%%_ot2 = vector.transfer_write %s, %%_ot[%%_r0, %%_c0] {in_bounds = [false, true]} : "
	    "vector<16x8xf32>, %s",
	    y, c->st);
	em_ln(b, 8, "scf.yield %%_ot2 : %s", c->st);
	em_ln(b, 6, "}");
}

/* x's codes (qact: a.xq [R, k] i8) in the tile kernel's B layout, xb[rb,
 * g, 64j + 4n + i] = code 32g + 4j + i of row 16rb + n, and the block
 * scales and sums of x^ (a.dx, a.xsum [R, k/32]) transposed, [k/32,
 * 16 R16], zero past row R. */
static void
tile_x(struct llm_buf *b, const struct qact *a, struct rows rw, int64_t k, int mins, struct tctx *c)
{
	int64_t nb = k / 32;
	const char *tq = em_tensor2(rw, k, "i8"), *tb = em_tensor2(rw, nb, "f32");
	c->xbt = em_fmt("tensor<?x%" PRId64 "x512xi8>", nb);
	c->dxt = em_fmt("tensor<%" PRId64 "x?xf32>", nb);
	const char *tys = mins ? em_fmt("%s, %s, %s", c->xbt, c->dxt, c->dxt) : em_fmt("%s, %s", c->xbt, c->dxt);
	em_ln(b, 6, "%%_p15 = arith.constant 15 : index");
	em_ln(b, 6, "%%_pnb = arith.constant %" PRId64 " : index", nb);
	em_ln(b, 6, "%%_pr15 = arith.addi %%R, %%_p15 : index");
	em_ln(b, 6, "%%_r16 = arith.divui %%_pr15, %%_c16 : index");
	em_ln(b, 6, "%%_prp = arith.muli %%_r16, %%_c16 : index");
	em_ln(b, 6, "%%_pxe = tensor.empty(%%_r16) : %s", c->xbt);
	em_ln(b, 6, "%%_pde = tensor.empty(%%_prp) : %s", c->dxt);
	if (mins)
		em_ln(b, 6, "%%_pme = tensor.empty(%%_prp) : %s", c->dxt);
	em_ln(b, 6,
	    "%%_px:%d = scf.for %%_pr = %%_c0 to %%_prp step %%_c1 "
	    "iter_args(%%_pa = %%_pxe, %%_pb = %%_pde%s) -> (%s) {",
	    mins ? 3 : 2, mins ? ", %_pm = %_pme" : "", tys);
	em_ln(b, 8, "%%_pin = arith.cmpi ult, %%_pr, %%R : index");
	em_ln(b, 8, "%%_prb = arith.divui %%_pr, %%_c16 : index");
	em_ln(b, 8, "%%_pn = arith.remui %%_pr, %%_c16 : index");
	em_ln(b, 8, "%%_pn4 = arith.muli %%_pn, %%_c4 : index");
	em_ln(b, 8,
	    "%%_pg:%d = scf.for %%_pgi = %%_c0 to %%_pnb step %%_c1 "
	    "iter_args(%%_qa = %%_pa, %%_qb = %%_pb%s) -> (%s) {",
	    mins ? 3 : 2, mins ? ", %_qm = %_pm" : "", tys);
	em_ln(b, 10, "%%_po = arith.muli %%_pgi, %%_c32 : index");
	em_ln(b, 10, "%%_pv = scf.if %%_pin -> (vector<32xi8>) {");
	em_rd(b, 12, "%_pvr", a->xq, "%_pr, %_po", "%_i0", tq, "vector<32xi8>");
	em_ln(b, 12, "scf.yield %%_pvr : vector<32xi8>");
	em_ln(b, 10, "} else {");
	em_ln(b, 12, "%%_pvz = arith.constant dense<0> : vector<32xi8>");
	em_ln(b, 12, "scf.yield %%_pvz : vector<32xi8>");
	em_ln(b, 10, "}");
	const char *acc = "%_qa";
	for (int j = 0; j < 8; j++) {
		em_ln(b, 10,
		    "%%_pq%d = vector.extract_strided_slice %%_pv {offsets = [%d], sizes = [4], strides = [1]} : "
		    "vector<32xi8> to vector<4xi8>",
		    j, 4 * j);
		em_ln(b, 10, "%%_pj%d = arith.constant %d : index", j, 64 * j);
		em_ln(b, 10, "%%_pk%d = arith.addi %%_pn4, %%_pj%d : index", j, j);
		em_ln(b, 10,
		    "%%_pw%d = vector.transfer_write %%_pq%d, %s[%%_prb, %%_pgi, %%_pk%d] {in_bounds = [true]} : "
		    "vector<4xi8>, %s",
		    j, j, acc, j, c->xbt);
		acc = em_fmt("%%_pw%d", j);
	}
	for (int p = 0; p < (mins ? 2 : 1); p++) {
		const char *src = p ? a->xsum : a->dx, *in = p ? "%_qm" : "%_qb";
		em_ln(b, 10, "%%_pd%d = scf.if %%_pin -> (f32) {", p);
		em_ln(b, 12, "%%_pe%d = tensor.extract %s[%%_pr, %%_pgi] : %s", p, src, tb);
		em_ln(b, 12, "scf.yield %%_pe%d : f32", p);
		em_ln(b, 10, "} else {");
		em_ln(b, 12, "scf.yield %%_f0 : f32");
		em_ln(b, 10, "}");
		em_ln(b, 10, "%%_pf%d = tensor.insert %%_pd%d into %s[%%_pgi, %%_pr] : %s", p, p, in, c->dxt);
	}
	em_ln(b, 10, "scf.yield %s, %%_pf0%s : %s", acc, mins ? ", %_pf1" : "", tys);
	em_ln(b, 8, "}");
	em_ln(b, 8, "scf.yield %%_pg#0, %%_pg#1%s : %s", mins ? ", %_pg#2" : "", tys);
	em_ln(b, 6, "}");
	c->xb = "%_px#0";
	c->dx = "%_px#1";
	c->xs = mins ? "%_px#2" : NULL;
}

const char *
em_qtile(struct em *e, const struct qact *a, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const int64_t *first, int64_t nt, const char *init, const char *yt)
{
	int64_t k = pt[0]->shape[1];
	int mins = 0;
	struct tw w[3];
	for (int i = 0; i < nw; i++) {
		w[i] = (struct tw){.q = em_qview_as(e, pt[i], -1), .t0 = first[i], .n = pt[i]->shape[0]};
		w[i].bias = b_name[i] ? em_wview_as(e, b_name[i], em_fmt("%" PRId64 "x", w[i].n), &w[i].bt) : NULL;
		mins |= w[i].q.mins != NULL;
	}
	e->qtile = 1;
	struct tctx c = {.w = w, .st = em_fmt("tensor<%sx8xf32>", rw.t)};
	struct llm_buf b = {0};
	static const int consts[] = {0, 1, 4, 8, 16, 32};
	for (size_t i = 0; i < LLM_NELEM(consts); i++)
		em_ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[i], consts[i]);
	em_ln(&b, 6, "%%_i0 = arith.constant 0 : i8");
	em_ln(&b, 6, "%%_f0 = arith.constant 0.0 : f32");
	tile_x(&b, a, rw, k, mins, &c);
	em_ln(&b, 6, "%%_ty = scf.forall (%%_tg) in (%" PRId64 ") shared_outs(%%_o = %s) -> (%s) {", nt, init, yt);
	em_ln(&b, 8, "%%_h0f = arith.constant 0.0 : f16");
	em_ln(&b, 8, "%%_zw = arith.constant dense<0.0> : vector<16xf32>");
	em_ln(&b, 8, "%%_m15 = arith.constant dense<15> : vector<128xi8>");
	em_ln(&b, 8, "%%_s4 = arith.constant dense<4> : vector<128xi8>");
	em_ln(&b, 8, "%%_m8 = arith.constant dense<8> : vector<256xi8>");
	em_ln(&b, 8, "%%_tg8 = arith.muli %%_tg, %%_c8 : index");
	em_ln(&b, 8, "%%_os = tensor.extract_slice %%_o[0, %%_tg8] [%%R, 8] [1, 1] : %s to %s", yt, c.st);
	const char *yo = em_tile_chain(&b, "%_tg", nw, first, c.st, tile_body, &c);
	em_ln(&b, 8, "scf.forall.in_parallel {");
	em_ln(&b, 10, "tensor.parallel_insert_slice %s into %%_o[0, %%_tg8] [%%R, 8] [1, 1] : %s into %s", yo, c.st,
	    yt);
	em_ln(&b, 8, "}");
	em_ln(&b, 6, "}");
	em_ln(&b, 6, "scf.yield %%_ty : %s", yt);
	return em_keep(b.p);
}
