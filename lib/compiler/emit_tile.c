/* emit_tile.c: prefill's products on the tile kernels (ir.txt "Kernels";
 * AMX where the target has it): with int8 activations in blocks of 8 rows
 * of W by 16 rows of x (@llm_qtile_i8, tdpbssd), with bf16 weights and
 * activations in blocks of 16 by 16 (@llm_qtile_bf16, tdpbf16ps).
 * em_qdot() and em_bdot() offer them beside their row passes, the tuning
 * table's prefill.int8_tiles and prefill.bf16_tiles choosing (tune.h). */
#include <inttypes.h>
#include <string.h>

#include "emit_int.h"

/* The tile form's scf.forall over nt tiles of w columns of y (type yt,
 * from init), each tile's y (type st: [R, w]) made by body through
 * em_tile_chain; first the tile-wide constants pre (may be NULL). */
static void
tile_forall(struct llm_buf *b, int64_t nt, int w, const char *init, const char *yt, const char *st, int nw,
    const int64_t *first, const char *pre, void (*body)(struct llm_buf *, int, void *), void *arg)
{
	em_ln(b, 6, "%%_ty = scf.forall (%%_tg) in (%" PRId64 ") shared_outs(%%_o = %s) -> (%s) {", nt, init, yt);
	if (pre)
		llm_buf_puts(b, pre);
	em_ln(b, 8, "%%_tgw = arith.muli %%_tg, %%_c%d : index", w);
	em_ln(b, 8, "%%_os = tensor.extract_slice %%_o[0, %%_tgw] [%%R, %d] [1, 1] : %s to %s", w, yt, st);
	const char *yo = em_tile_chain(b, "%_tg", nw, first, st, body, arg);
	em_ln(b, 8, "scf.forall.in_parallel {");
	em_ln(b, 10, "tensor.parallel_insert_slice %s into %%_o[0, %%_tgw] [%%R, %d] [1, 1] : %s into %s", yo, w, st,
	    yt);
	em_ln(b, 8, "}");
	em_ln(b, 6, "}");
	em_ln(b, 6, "scf.yield %%_ty : %s", yt);
}

/* 1 if the tile products read pt's layout: tiles of 8 rows, groups of 32
 * int8 or 4-bit codes (the int8 kernels' other layouts, groups of 16,
 * stay on the row passes). */
int
em_qtile_ok(const struct llm_plan_tensor *pt)
{
	return pt->ql.rows == 8 && pt->ql.group == 32 && em_qa8(pt);
}

/* The bias of a tile's rows (row0 on, rows of them; of n, element type
 * bt) as a vector<rowsxf32>, named. */
static const char *
tile_bias(struct llm_buf *b, const char *bias, const char *bt, int64_t n, const char *row0, int rows)
{
	em_ln(b, 6, "%%_bp = arith.constant 0.0 : %s", bt);
	em_rd(b, 6, "%_bv", bias, row0, "%_bp", em_fmt("tensor<%" PRId64 "x%s>", n, bt),
	    em_fmt("vector<%dx%s>", rows, bt));
	if (strcmp(bt, "f32") == 0)
		return "%_bv";
	em_ln(b, 6, "%%_bf = arith.extf %%_bv : vector<%dx%s> to vector<%dxf32>", rows, bt, rows);
	return "%_bf";
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
	const char *bias = w->bias ? tile_bias(b, w->bias, w->bt, w->n, "%_t8", 8) : NULL;
	/* "-sub8" scales are computed: once a tile, not once a block of x */
	const char *sx = NULL, *mx = NULL, *sxt = q->sub ? em_qscales_once(b, q, &sx, &mx) : NULL;
	em_ln(b, 6, "%%_ow = scf.for %%_rb = %%_c0 to %%_r16 step %%_c1 iter_args(%%_ot = %%_os) -> (%s) {", c->st);
	em_ln(b, 8, "%%_r0 = arith.muli %%_rb, %%_c16 : index");
	em_ln(b, 8,
	    "%%_ac:8 = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%%_a0 = %%_zw, %%_a1 = %%_zw, %%_a2 = %%_zw, "
	    "%%_a3 = %%_zw, %%_a4 = %%_zw, %%_a5 = %%_zw, %%_a6 = %%_zw, %%_a7 = %%_zw) "
	    "-> (%s, %s, %s, %s, %s, %s, %s, %s) {",
	    v16, v16, v16, v16, v16, v16, v16, v16);
	if (sx) {
		em_rd(b, 10, "%_sv", sx, "%_g, %_c0", "%_f0", sxt, v8);
		if (mx)
			em_rd(b, 10, "%_mv", mx, "%_g, %_c0", "%_f0", sxt, v8);
	} else
		em_qscales(b, q, 10);
	if (q->pk) {
		/* the group's pieces of 64 codes, in order: 4 in a group of 32
		 * (em_qtile_ok), joined two by two */
		if (q->np != 4)
			llm_fatal("qtile: %d pieces a group, 4 expected", q->np);
		for (int p = 0; p < q->np; p++) {
			em_ln(b, 10, "%%_pq%d = arith.constant %d : index", p, p);
			em_qpiece(b, 10, q, em_fmt("%%_pq%d", p), em_fmt("%%_wq%d", p));
		}
		const char *b64 = "vector<64xi8>", *b128 = "vector<128xi8>";
		em_ln(b, 10, "%%_wa = vector.shuffle %%_wq0, %%_wq1 [%s] : %s, %s", em_lanes(128, 1), b64, b64);
		em_ln(b, 10, "%%_wb = vector.shuffle %%_wq2, %%_wq3 [%s] : %s, %s", em_lanes(128, 1), b64, b64);
		em_ln(b, 10, "%%_w = vector.shuffle %%_wa, %%_wb [%s] : %s, %s", em_lanes(256, 1), b128, b128);
	} else if (!q->four)
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
 * 16 R16], zero past row R: each block of 16 rows by 32 codes read at
 * once, its quads transposed (as btile_x does pairs). */
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
	    "%%_px:%d = scf.for %%_prb = %%_c0 to %%_r16 step %%_c1 "
	    "iter_args(%%_pa = %%_pxe, %%_pb = %%_pde%s) -> (%s) {",
	    mins ? 3 : 2, mins ? ", %_pm = %_pme" : "", tys);
	em_ln(b, 8, "%%_pr0 = arith.muli %%_prb, %%_c16 : index");
	em_ln(b, 8,
	    "%%_pg:%d = scf.for %%_pgi = %%_c0 to %%_pnb step %%_c1 "
	    "iter_args(%%_qa = %%_pa, %%_qb = %%_pb%s) -> (%s) {",
	    mins ? 3 : 2, mins ? ", %_qm = %_pm" : "", tys);
	em_ln(b, 10, "%%_po = arith.muli %%_pgi, %%_c32 : index");
	em_ln(b, 10,
	    "%%_pv = vector.transfer_read %s[%%_pr0, %%_po], %%_i0 {in_bounds = [false, true]} : %s, vector<16x32xi8>",
	    a->xq, tq);
	em_ln(b, 10, "%%_pvi = vector.bitcast %%_pv : vector<16x32xi8> to vector<16x8xi32>");
	em_ln(b, 10, "%%_pvt = vector.transpose %%_pvi, [1, 0] : vector<16x8xi32> to vector<8x16xi32>");
	em_ln(b, 10, "%%_pvb = vector.bitcast %%_pvt : vector<8x16xi32> to vector<8x64xi8>");
	em_ln(b, 10, "%%_pvf = vector.shape_cast %%_pvb : vector<8x64xi8> to vector<512xi8>");
	em_ln(b, 10, "%%_pw = vector.transfer_write %%_pvf, %%_qa[%%_prb, %%_pgi, %%_c0] {in_bounds = [true]} : %s, %s",
	    "vector<512xi8>", c->xbt);
	for (int p = 0; p < (mins ? 2 : 1); p++) {
		/* the block's 16 rows of a column of [R, k/32], into a row */
		em_ln(b, 10,
		    "%%_pd%d = vector.transfer_read %s[%%_pr0, %%_pgi], %%_f0 {in_bounds = [false], "
		    "permutation_map = affine_map<(d0, d1) -> (d0)>} : %s, vector<16xf32>",
		    p, p ? a->xsum : a->dx, tb);
		em_ln(b, 10,
		    "%%_pf%d = vector.transfer_write %%_pd%d, %s[%%_pgi, %%_pr0] {in_bounds = [true]} : "
		    "vector<16xf32>, %s",
		    p, p, p ? "%_qm" : "%_qb", c->dxt);
	}
	em_ln(b, 10, "scf.yield %%_pw, %%_pf0%s : %s", mins ? ", %_pf1" : "", tys);
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
	e->kernels |= 1u << LLM_KERNEL_QTILE_I8;
	struct tctx c = {.w = w, .st = em_fmt("tensor<%sx8xf32>", rw.t)};
	struct llm_buf b = {0};
	static const int consts[] = {0, 1, 4, 8, 16, 32};
	for (size_t i = 0; i < LLM_NELEM(consts); i++)
		em_ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[i], consts[i]);
	em_ln(&b, 6, "%%_i0 = arith.constant 0 : i8");
	em_ln(&b, 6, "%%_f0 = arith.constant 0.0 : f32");
	tile_x(&b, a, rw, k, mins, &c);
	struct llm_buf pre = {0};
	em_ln(&pre, 8, "%%_h0f = arith.constant 0.0 : f16");
	em_ln(&pre, 8, "%%_zw = arith.constant dense<0.0> : vector<16xf32>");
	em_ln(&pre, 8, "%%_m15 = arith.constant dense<15> : vector<128xi8>");
	em_ln(&pre, 8, "%%_s4 = arith.constant dense<4> : vector<128xi8>");
	em_ln(&pre, 8, "%%_m8 = arith.constant dense<8> : vector<256xi8>");
	tile_forall(&b, nt, 8, init, yt, c.st, nw, first, pre.p, tile_body, &c);
	llm_buf_free(&pre);
	return em_keep(b.p);
}

/* What a bf16 W's tiles read. */
struct bw {
	const char *w, *wt;    /* W [n, k] bf16, its type */
	const char *bias, *bt; /* the bias [n], its element type, or NULL */
	int64_t t0, n;         /* its first block of 16 rows among the product's, its rows */
};

struct bctx {
	const struct bw *w;
	int64_t ng;           /* k / 32 */
	const char *st;       /* a block's y: tensor<?x16xf32> */
	const char *xb, *xbt; /* x in pairs [R32, k/32, 512] bf16, its type */
	const char *pt;       /* a panel: tensor<k/32 x 512 x bf16> */
};

/* One call of the bf16 tile kernel: the group g of the panel %_pn and
 * of the blocks %_rb and %_rb1 of x, onto a0 and a1, giving out0 and
 * out1. */
static void
btile_step(struct llm_buf *b, int ind, const struct bctx *c, const char *g, const char *a0, const char *a1,
    const char *out)
{
	const char *v512 = "vector<512xbf16>", *acc = "vector<256xf32>";
	const char *sty = "!llvm.struct<(vector<256xf32>, vector<256xf32>)>";
	em_rd(b, ind, em_fmt("%s_w", out), "%_pn", em_fmt("%s, %%_c0", g), "%_bz", c->pt, v512);
	for (int h = 0; h < 2; h++)
		em_rd(b, ind, em_fmt("%s_x%d", out, h), c->xb, em_fmt("%s, %s, %%_c0", h ? "%_rb1" : "%_rb", g), "%_bz",
		    c->xbt, v512);
	em_ln(b, ind, "%s_s = llvm.call @llm_qtile_bf16(%s, %s, %s_w, %s_x0, %s_x1) : (%s, %s, %s, %s, %s) -> %s", out,
	    a0, a1, out, out, out, acc, acc, v512, v512, v512, sty);
	for (int h = 0; h < 2; h++)
		em_ln(b, ind, "%s%d = llvm.extractvalue %s_s[%d] : %s", out, h, out, h, sty);
}

/* The block %_t of 16 rows of W_i: its rows copied into a panel of
 * tiles (16 rows by 32 values, 1 KB each, in k's order), then for each
 * two blocks of 16 rows of x, two accumulators over the panel (the W tile
 * read once for both), each turned to rows of y, the bias added, and
 * written where its rows are rows of x. */
static void
btile_body(struct llm_buf *b, int i, void *arg)
{
	const struct bctx *c = arg;
	const struct bw *w = &c->w[i];
	const char *v512 = "vector<512xbf16>", *acc = "vector<256xf32>", *v16 = "vector<16xf32>";
	em_ln(b, 6, "%%_ts = arith.constant %" PRId64 " : index", w->t0);
	em_ln(b, 6, "%%_t = arith.subi %%_tg, %%_ts : index");
	em_ln(b, 6, "%%_t16 = arith.muli %%_t, %%_c16 : index");
	em_ln(b, 6, "%%_pe = tensor.empty() : %s", c->pt);
	em_ln(b, 6, "%%_pn = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%%_pa = %%_pe) -> (%s) {", c->pt);
	em_ln(b, 8, "%%_k0 = arith.muli %%_g, %%_c32 : index");
	em_ln(b, 8,
	    "%%_wv = vector.transfer_read %s[%%_t16, %%_k0], %%_bz {in_bounds = [true, true]} : %s, "
	    "vector<16x32xbf16>",
	    w->w, w->wt);
	em_ln(b, 8, "%%_wf = vector.shape_cast %%_wv : vector<16x32xbf16> to %s", v512);
	em_ln(b, 8, "%%_pw = vector.transfer_write %%_wf, %%_pa[%%_g, %%_c0] {in_bounds = [true]} : %s, %s", v512,
	    c->pt);
	em_ln(b, 8, "scf.yield %%_pw : %s", c->pt);
	em_ln(b, 6, "}");
	const char *bias = NULL;
	if (w->bias) {
		bias = tile_bias(b, w->bias, w->bt, w->n, "%_t16", 16);
		em_ln(b, 6, "%%_bb = vector.broadcast %s : %s to vector<16x16xf32>", bias, v16);
	}
	em_ln(b, 6, "%%_ow = scf.for %%_rb = %%_c0 to %%_r32 step %%_c2 iter_args(%%_ot = %%_os) -> (%s) {", c->st);
	em_ln(b, 8, "%%_rb1 = arith.addi %%_rb, %%_c1 : index");
	/* the groups but the last, then the last: the accumulators' only
	 * users are the kernel's (amx.mlir) */
	em_ln(b, 8,
	    "%%_ac:2 = scf.for %%_g = %%_c0 to %%_ng1 step %%_c1 iter_args(%%_a0 = %%_zt, %%_a1 = %%_zt) -> (%s, %s) {",
	    acc, acc);
	btile_step(b, 10, c, "%_g", "%_a0", "%_a1", "%_n");
	em_ln(b, 10, "scf.yield %%_n0, %%_n1 : %s, %s", acc, acc);
	em_ln(b, 8, "}");
	btile_step(b, 8, c, "%_ng1", "%_ac#0", "%_ac#1", "%_f");
	const char *ot = "%_ot";
	for (int h = 0; h < 2; h++) {
		/* c[16m + n]: m the row of W, n the row of x */
		em_ln(b, 8, "%%_y%d = vector.shape_cast %%_f%d : %s to vector<16x16xf32>", h, h, acc);
		em_ln(b, 8, "%%_yt%d = vector.transpose %%_y%d, [1, 0] : vector<16x16xf32> to vector<16x16xf32>", h, h);
		const char *y = em_fmt("%%_yt%d", h);
		if (bias) {
			em_ln(b, 8, "%%_ya%d = arith.addf %%_yt%d, %%_bb : vector<16x16xf32>", h, h);
			y = em_fmt("%%_ya%d", h);
		}
		em_ln(b, 8, "%%_rr%d = arith.muli %s, %%_c16 : index", h, h ? "%_rb1" : "%_rb");
		em_ln(b, 8,
		    "%%_ot%d = vector.transfer_write %s, %s[%%_rr%d, %%_c0] {in_bounds = [false, true]} : "
		    "vector<16x16xf32>, %s",
		    h, y, ot, h, c->st);
		ot = em_fmt("%%_ot%d", h);
	}
	em_ln(b, 8, "scf.yield %s : %s", ot, c->st);
	em_ln(b, 6, "}");
}

/* x [R, k] bf16 in the tile kernel's B layout, xb[rb, g, 32q + 2n + i] =
 * value 32g + 2q + i of row 16rb + n, zero past row R, for R32 = 2 *
 * ceil(R / 32) blocks (the blocks go two at a time): each block of 16
 * rows by 32 values read at once, its pairs transposed. */
static void
btile_x(struct llm_buf *b, const char *x, struct rows rw, int64_t k, struct bctx *c)
{
	c->xbt = em_fmt("tensor<?x%" PRId64 "x512xbf16>", c->ng);
	em_ln(b, 6, "%%_p31 = arith.constant 31 : index");
	em_ln(b, 6, "%%_pr31 = arith.addi %%R, %%_p31 : index");
	em_ln(b, 6, "%%_pr32 = arith.divui %%_pr31, %%_c32 : index");
	em_ln(b, 6, "%%_r32 = arith.muli %%_pr32, %%_c2 : index");
	em_ln(b, 6, "%%_pxe = tensor.empty(%%_r32) : %s", c->xbt);
	em_ln(b, 6, "%%_px = scf.for %%_pr = %%_c0 to %%_r32 step %%_c1 iter_args(%%_pa = %%_pxe) -> (%s) {", c->xbt);
	em_ln(b, 8, "%%_pr0 = arith.muli %%_pr, %%_c16 : index");
	em_ln(b, 8, "%%_pg = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%%_qa = %%_pa) -> (%s) {", c->xbt);
	em_ln(b, 10, "%%_k0 = arith.muli %%_g, %%_c32 : index");
	em_ln(b, 10,
	    "%%_xv = vector.transfer_read %s[%%_pr0, %%_k0], %%_bz {in_bounds = [false, true]} : %s, "
	    "vector<16x32xbf16>",
	    x, em_tensor2(rw, k, "bf16"));
	em_ln(b, 10, "%%_xi = vector.bitcast %%_xv : vector<16x32xbf16> to vector<16x16xi32>");
	em_ln(b, 10, "%%_xt = vector.transpose %%_xi, [1, 0] : vector<16x16xi32> to vector<16x16xi32>");
	em_ln(b, 10, "%%_xp = vector.bitcast %%_xt : vector<16x16xi32> to vector<16x32xbf16>");
	em_ln(b, 10, "%%_xf = vector.shape_cast %%_xp : vector<16x32xbf16> to vector<512xbf16>");
	em_ln(b, 10, "%%_xw = vector.transfer_write %%_xf, %%_qa[%%_pr, %%_g, %%_c0] {in_bounds = [true]} : %s, %s",
	    "vector<512xbf16>", c->xbt);
	em_ln(b, 10, "scf.yield %%_xw : %s", c->xbt);
	em_ln(b, 8, "}");
	em_ln(b, 8, "scf.yield %%_pg : %s", c->xbt);
	em_ln(b, 6, "}");
	c->xb = "%_px";
}

int
em_btile_ok(const struct llm_plan_tensor *pt)
{
	return em_bd16(pt) && pt->shape[0] % 16 == 0;
}

const char *
em_btile(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char *init, const char *yt)
{
	int64_t k = pt[0]->shape[1], first[3], nt = 0;
	struct bw w[3];
	for (int i = 0; i < nw; i++) {
		int64_t n = pt[i]->shape[0];
		const char *elt;
		w[i] = (struct bw){.t0 = nt, .n = n};
		w[i].w = em_wview_as(e, pt[i]->name, em_fmt("%" PRId64 "x%" PRId64 "x", n, k), &elt);
		w[i].wt = em_fmt("tensor<%" PRId64 "x%" PRId64 "xbf16>", n, k);
		w[i].bias = b_name[i] ? em_wview_as(e, b_name[i], em_fmt("%" PRId64 "x", n), &w[i].bt) : NULL;
		first[i] = nt;
		nt += n / 16;
	}
	e->kernels |= 1u << LLM_KERNEL_QTILE_BF16;
	struct bctx c = {.w = w,
		.ng = k / 32,
		.st = em_fmt("tensor<%sx16xf32>", rw.t),
		.pt = em_fmt("tensor<%" PRId64 "x512xbf16>", k / 32)};
	struct llm_buf b = {0};
	static const int consts[] = {0, 1, 2, 16, 32};
	for (size_t i = 0; i < LLM_NELEM(consts); i++)
		em_ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[i], consts[i]);
	em_ln(&b, 6, "%%_ng = arith.constant %" PRId64 " : index", c.ng);
	em_ln(&b, 6, "%%_ng1 = arith.constant %" PRId64 " : index", c.ng - 1);
	em_ln(&b, 6, "%%_bz = arith.constant 0.0 : bf16");
	btile_x(&b, x, rw, k, &c);
	tile_forall(&b, nt, 16, init, yt, c.st, nw, first,
	    "        %_zt = arith.constant dense<0.0> : vector<256xf32>\n", btile_body, &c);
	return em_keep(b.p);
}
