/* emit_int8.c: the products with block-quantized weights (emit_int.h),
 * on the views of emit_weights.c: a token's row of a quantized embedding,
 * the f32-activation GEMV and prefill's dequantized panels, and, under
 * dtypes.activations "q8", x rounded to int8 blocks and the products on
 * the int8 kernels (ir.txt "Kernels", "Activations"). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* t's views, the codes as [n/8, k/G, 8, B] (em_qview_as). */
static struct qparts
qview(struct em *e, const struct llm_plan_tensor *t)
{
	return em_qview_as(e, t, 0);
}

/* The same for the products on decoded weights (qgemv, qdequant), which
 * read f32 or f16 scales: model.c allows "-sub8" layouts with int8
 * activations only, where qdot reads every one of them. */
static struct qparts
qview_float(struct em *e, const struct llm_plan_tensor *t)
{
	if (t->ql.sub)
		llm_fatal("%s: tensor '%s': layout %s is read by the int8 kernels only", e->m->path, t->name,
		    t->layout);
	return em_qview_as(e, t, 0);
}

/* The weight value `res` of a code in a body: s * sitofp(q) (+ m), with
 * code, sc and mn the names of the code byte, scale and offset (mn NULL:
 * none); each operation rounded, as ggml decodes (lib/formats/quant.c): the
 * weights are exactly the decoded ones.  Codes of 4 bits take the low
 * nibble where the index value `half` is 0 and the high one where it is 1
 * (minus 8 for i4 codes). */
static const char *
qvalue(const struct qparts *q, const char *code, const char *sc, const char *mn, const char *half, const char *res)
{
	const char *pre = "";
	if (strcmp(q->se, "f16") == 0) {
		/* f16 scales and offsets widen exactly */
		pre = em_fmt("      %%sw = arith.extf %s : f16 to f32\n%s", sc,
		    mn ? em_fmt("      %%mw = arith.extf %s : f16 to f32\n", mn) : "");
		sc = "%sw";
		mn = mn ? "%mw" : NULL;
	}
	if (q->four) {
		pre = em_fmt("%s      %%h0 = arith.constant 0 : index\n"
			     "      %%lo0 = arith.cmpi eq, %s, %%h0 : index\n"
			     "      %%c15 = arith.constant 15 : i8\n"
			     "      %%c4 = arith.constant 4 : i8\n"
			     "      %%nlo = arith.andi %s, %%c15 : i8\n"
			     "      %%nhi = arith.shrui %s, %%c4 : i8\n"
			     "      %%nb = arith.select %%lo0, %%nlo, %%nhi : i8\n"
			     "%s",
		    pre, half, code, code,
		    q->code == LLM_QCODE_I4 ?
			"      %c8 = arith.constant 8 : i8\n      %cq = arith.subi %nb, %c8 : i8\n" :
			"");
		code = q->code == LLM_QCODE_I4 ? "%cq" : "%nb";
	}
	if (!mn)
		return em_fmt("%s      %%qf = arith.sitofp %s : i8 to f32\n"
			      "      %s = arith.mulf %s, %%qf : f32\n",
		    pre, code, res, sc);
	return em_fmt("%s      %%qf = arith.sitofp %s : i8 to f32\n"
		      "      %%qs = arith.mulf %s, %%qf : f32\n"
		      "      %s = arith.addf %%qs, %s : f32\n",
	    pre, code, sc, res, mn);
}

/* The same for a generic whose operands %aQ, %aS, %aM (am < 0: none) are
 * the code, scale and offset, dimension `half` the nibble. */
static const char *
qvalue_body(const struct qparts *q, int aq, int as, int am, int half, const char *res)
{
	return em_fmt("%s%s", q->four ? em_fmt("      %%hf = linalg.index %d : index\n", half) : "",
	    qvalue(q, em_fmt("%%a%d", aq), em_fmt("%%a%d", as), am >= 0 ? em_fmt("%%a%d", am) : NULL, "%hf", res));
}

/* In a body at tile %t, group %g, row %h: the scale (or offset) `res` of
 * the part `part` (with "-sub8", the product of the block's f16 factor in
 * sd and the group's integer, in f32, as ggml rounds it). */
static const char *
qfactor(const struct qparts *q, const char *part, const char *sd, const char *res)
{
	if (!q->sub)
		return em_fmt("      %s = tensor.extract %s[%%t, %%g, %%h] : %s\n", res, part, q->st);
	return em_fmt("      %s_i = tensor.extract %s[%%t, %%g, %%h] : %s\n"
		      "      %s_n = arith.constant %" PRId64 " : index\n"
		      "      %s_b = arith.divui %%g, %s_n : index\n"
		      "      %s_h = tensor.extract %s[%%t, %s_b, %%h] : %s\n"
		      "      %s_d = arith.extf %s_h : f16 to f32\n"
		      "      %s_f = arith.sitofp %s_i : i8 to f32\n"
		      "      %s = arith.mulf %s_d, %s_f : f32\n",
	    res, part, q->st, res, q->gpb, res, res, res, sd, res, q->dt, res, res, res, res, res, res, res);
}

/* In a body at tile %t, group %g, row %h, lane %j: the int8 code `res` of
 * that element from the 5- or 6-bit pieces (quant.h): its nibble, the
 * bits of its planes above it, less the zero. */
static const char *
packed_code(const struct qparts *q, const char *res)
{
	struct llm_buf b = {0};
	int bits = llm_qcode_bits(q->code), zero = llm_qcode_zero(q->code);
	llm_buf_printf(&b,
	    "      %%pG = arith.constant %" PRId64 " : index\n"
	    "      %%pc64 = arith.constant 64 : index\n"
	    "      %%pc32 = arith.constant 32 : index\n"
	    "      %%pc8 = arith.constant 8 : index\n"
	    "      %%phG = arith.muli %%h, %%pG : index\n"
	    "      %%pi = arith.addi %%phG, %%j : index\n"
	    "      %%pp = arith.divui %%pi, %%pc64 : index\n"
	    "      %%po = arith.remui %%pi, %%pc64 : index\n"
	    "      %%pj = arith.remui %%po, %%pc32 : index\n"
	    "      %%phi = arith.cmpi uge, %%po, %%pc32 : index\n"
	    "      %%pn = tensor.extract %s[%%t, %%g, %%pp, %%pj] : %s\n"
	    "      %%p15 = arith.constant 15 : i8\n"
	    "      %%p4 = arith.constant 4 : i8\n"
	    "      %%pnl = arith.andi %%pn, %%p15 : i8\n"
	    "      %%pnh = arith.shrui %%pn, %%p4 : i8\n"
	    "      %%pv4 = arith.select %%phi, %%pnh, %%pnl : i8\n"
	    "      %%pw = arith.divui %%po, %%pc8 : index\n"
	    "      %%pbi = arith.remui %%po, %%pc8 : index\n"
	    "      %%pbc = arith.index_cast %%pbi : index to i8\n"
	    "      %%p1 = arith.constant 1 : i8\n",
	    q->G, q->codes, q->ct);
	for (int k = 4; k < bits; k++)
		llm_buf_printf(&b,
		    "      %%pa%d = arith.constant %d : index\n"
		    "      %%px%d = arith.addi %%pw, %%pa%d : index\n"
		    "      %%pb%d = tensor.extract %s[%%t, %%g, %%pp, %%px%d] : %s\n"
		    "      %%ps%d = arith.shrui %%pb%d, %%pbc : i8\n"
		    "      %%pt%d = arith.andi %%ps%d, %%p1 : i8\n"
		    "      %%pk%d = arith.constant %d : i8\n"
		    "      %%pu%d = arith.shli %%pt%d, %%pk%d : i8\n"
		    "      %%pv%d = arith.ori %%pv%d, %%pu%d : i8\n",
		    k, 32 + 8 * (k - 4), k, k, k, q->codes, k, q->ct, k, k, k, k, k, k, k, k, k, k + 1, k, k);
	/* (less 0 for u5: folded) */
	llm_buf_printf(&b,
	    "      %%pz = arith.constant %d : i8\n"
	    "      %s = arith.subi %%pv%d, %%pz : i8\n",
	    zero, res, bits);
	return em_keep(b.p);
}

/* The embedding rows of the tokens %tok (ttt, R rows) from a tiled layout:
 * class "gather" over [R, K/G, G] (4-bit: [R, K/G, 2, G/2]), each value
 * decoded from its tile (token v: tile v/8, row v%8), collapsed to [R, K]. */
const char *
em_qgather(struct em *e, const struct llm_plan_tensor *pt, const char *ttt)
{
	int64_t k = pt->shape[1];
	struct qparts q = qview(e, pt), qf = q;
	const char *lanes = q.four ? em_fmt("2x%" PRId64, q.B) : em_fmt("%" PRId64, q.G);
	const char *ot = em_fmt("tensor<%sx%" PRId64 "x%sxf32>", e->R.t, q.ng, lanes);
	if (q.sub)
		qf.se = "f32"; /* qfactor computes them in f32 */
	const char *body = em_fmt("      %%si = linalg.index 0 : index\n"
				  "      %%g = linalg.index 1 : index\n"
				  "      %%j = linalg.index %d : index\n"
				  "%s"
				  "      %%id = tensor.extract %%tok[%%si] : %s\n"
				  "      %%ii = arith.index_cast %%id : i64 to index\n"
				  "      %%c8i = arith.constant 8 : index\n"
				  "      %%t = arith.divui %%ii, %%c8i : index\n"
				  "      %%h = arith.remui %%ii, %%c8i : index\n"
				  "%s"
				  "%s"
				  "%s"
				  "%s",
	    q.four ? 3 : 2, q.four ? "      %hf = linalg.index 2 : index\n" : "", ttt,
	    q.pk ? packed_code(&q, "%wb") :
		   em_fmt("      %%wb = tensor.extract %s[%%t, %%g, %%h, %%j] : %s\n", q.codes, q.ct),
	    qfactor(&q, q.scales, q.sd, "%ws"), q.mins ? qfactor(&q, q.mins, q.md, "%wm") : "",
	    qvalue(&qf, "%wb", "%ws", q.mins ? "%wm" : NULL, "%hf", "%r"));
	const char *x = em_generic(e,
	    &(struct gspec){.sched = "gather",
		    .hint = "x",
		    .otype = ot,
		    .odyn = e->R.dyn,
		    .omap = q.four ? "d0, d1, d2, d3" : "d0, d1, d2",
		    .nd = q.four ? 4 : 3,
		    .iters = q.four ? "parallel, parallel, parallel, parallel" : "parallel, parallel, parallel",
		    .body = body});
	const char *xc = em_val(e, "xc");
	em_top(e, xc, em_fmt("tensor.collapse_shape %s [[0], [1, 2%s]]", x, q.four ? ", 3" : ""),
	    em_fmt(": %s into %s", ot, em_tensor2(e->R, k, "f32")));
	return xc;
}

/* y [1, n] = x [1, k] . W[n, k]^T (+ bias[n]) for one row, W in a tiled
 * layout: class "qmv" accumulates a lane per element of a group,
 * acc[0, t, h, l] = sum_g x[0, g, l] * w[t, g, h, l] (iterators r, t, g,
 * h, l = parallel x2, reduction, parallel x2; with 4-bit codes the lanes
 * l are (half, j), l = half*G/2 + j, the code of j and of j + G/2 sharing
 * a byte), then class "qsum" adds the G lanes of each row (onto the
 * bias).  A register tile is one tile's group, 8 groups of codes in one
 * piece: the tiles are one stream (share/doc/llm/ir.txt). */
const char *
em_qgemv(struct em *e, const char *x, const struct llm_plan_tensor *pt, const char *b_name)
{
	int64_t n = pt->shape[0], k = pt->shape[1];
	struct qparts q = qview_float(e, pt);
	const char *xe = em_val(e, "qx");
	/* lanes: "G" or "2xG/2" */
	const char *lanes = q.four ? em_fmt("2x%" PRId64, q.B) : em_fmt("%" PRId64, q.G);
	const char *xt = em_fmt("tensor<1x%" PRId64 "x%sxf32>", q.ng, lanes);
	em_top(e, xe,
	    em_fmt("tensor.expand_shape %s [[0], [1, 2%s]] output_shape [1, %" PRId64 ", %s]", x, q.four ? ", 3" : "",
		q.ng, q.four ? em_fmt("2, %" PRId64, q.B) : em_fmt("%" PRId64, q.G)),
	    em_fmt(": tensor<1x%" PRId64 "xf32> into %s", k, xt));
	/* With 4-bit codes the halves of x's groups are two operands, each
	 * read as one vector of G/2 (a [2, G/2] read of the expanded x is
	 * folded wrongly back onto the [1, K] buffer by MLIR 22's
	 * fold_memref_alias_ops, which reads two rows of it). */
	const char *xlo = NULL, *xhi = NULL, *xht = em_fmt("tensor<1x%" PRId64 "x%" PRId64 "xf32>", q.ng, q.B);
	if (q.four) {
		xlo = em_val(e, "qxl");
		xhi = em_val(e, "qxh");
		em_top(e, xlo,
		    em_fmt("tensor.extract_slice %s[0, 0, 0, 0] [1, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", xe,
			q.ng, q.B),
		    em_fmt(": %s to %s", xt, xht));
		em_top(e, xhi,
		    em_fmt("tensor.extract_slice %s[0, 0, 1, 0] [1, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", xe,
			q.ng, q.B),
		    em_fmt(": %s to %s", xt, xht));
	}
	const char *at = em_fmt("tensor<1x%" PRId64 "x%" PRId64 "x%sxf32>", q.nt, q.R, lanes);
	int nd = q.four ? 6 : 5;
	const char *az = em_generic(e,
	    &(struct gspec){.sched = "qfill",
		    .hint = "qz",
		    .otype = at,
		    .odyn = "",
		    .omap = q.four ? "d0, d1, d2, d3, d4" : "d0, d1, d2, d3",
		    .nd = nd - 1,
		    .iters = q.four ? "parallel, parallel, parallel, parallel, parallel" :
				      "parallel, parallel, parallel, parallel",
		    .body = "      %r = arith.constant 0.0 : f32\n"});
	/* dims: r, t, g, h, l  or  r, t, g, h, half, j */
	struct gin in8[4] = {
		{xe, xt, "d0, d2, d4", "f32"},
		{q.codes, q.ct, "d1, d2, d3, d4", "i8"},
		{q.scales, q.st, "d1, d2, d3", q.se},
		{q.mins, q.st, "d1, d2, d3", q.se},
	};
	struct gin in4[5] = {
		{xlo, xht, "d0, d2, d5", "f32"},
		{xhi, xht, "d0, d2, d5", "f32"},
		{q.codes, q.ct, "d1, d2, d3, d5", "i8"},
		{q.scales, q.st, "d1, d2, d3", q.se},
		{q.mins, q.st, "d1, d2, d3", q.se},
	};
	int c0 = q.four ? 2 : 1; /* the codes' operand */
	const char *acc = em_generic(e,
	    &(struct gspec){.sched = "qmv",
		    .hint = "qa",
		    .nin = c0 + (q.mins ? 3 : 2),
		    .in = q.four ? in4 : in8,
		    .init = az,
		    .otype = at,
		    .omap = q.four ? "d0, d1, d3, d4, d5" : "d0, d1, d3, d4",
		    .nd = nd,
		    .iters = q.four ? "parallel, parallel, reduction, parallel, parallel, parallel" :
				      "parallel, parallel, reduction, parallel, parallel",
		    .body = em_fmt("%s%s      %%p = arith.mulf %s, %%wq fastmath<contract> : f32\n"
				   "      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n",
			qvalue_body(&q, c0, c0 + 1, q.mins ? c0 + 2 : -1, 4, "%wq"),
			q.four ? "      %xv = arith.select %lo0, %a0, %a1 : f32\n" : "", q.four ? "%xv" : "%a0")});
	const char *shape = em_fmt("%" PRId64 "x%" PRId64 "x", q.nt, q.R);
	const char *yt = em_fmt("tensor<1x%sf32>", shape);
	const char *init = em_product_init(e, b_name, shape, "d1, d2", yt, "", "d0, d1, d2", 3,
	    "parallel, parallel, parallel");
	const char *y = em_generic(e,
	    &(struct gspec){.sched = "qsum",
		    .hint = "qy",
		    INS({acc, at, q.four ? "d0, d1, d2, d3, d4" : "d0, d1, d2, d3", "f32"}),
		    .init = init,
		    .otype = yt,
		    .omap = "d0, d1, d2",
		    .nd = nd - 1,
		    .iters = q.four ? "parallel, parallel, parallel, reduction, reduction" :
				      "parallel, parallel, parallel, reduction",
		    .body = "      %r = arith.addf %o, %a0 : f32\n"});
	const char *yc = em_val(e, "qyc");
	em_top(e, yc, em_fmt("tensor.collapse_shape %s [[0], [1, 2]]", y),
	    em_fmt(": %s into tensor<1x%" PRId64 "xf32>", yt, n));
	return yc;
}

/* Activations quantized for the products with quantized weights (the
 * plan's dtypes.activations "q8", as llama.cpp quantizes them to Q8_0,
 * with an f32 scale): each block of 32 of a row of x becomes
 * x^ = d * q, d = max|x| / 127, q = roundeven(x * (127 / max|x|)) (0
 * where max|x| is 0), and the product is W . x^ (ir.txt "Activations").
 * For the int8 kernels, em_qact() gives the codes q of x [1, k], the sums of
 * each 4 consecutive codes (xs4, for the kernels that multiply unsigned
 * bytes), d, and each block's sum of x^ (xsum = d * sum q, for the
 * weights' offsets), in one scf.for over the blocks; a product of the
 * same x reuses them.  em_qround() gives x^ itself, in f32, for the other
 * products (prefill's, and layouts the kernels do not read). */
struct qact
em_qact(struct em *e, const char *x, struct rows rw, int64_t k)
{
	if (e->qa.x && strcmp(e->qa.x, x) == 0)
		return e->qa;
	int64_t nb = k / 32;
	const char *tq = em_tensor2(rw, k, "i8"), *ts = em_tensor2(rw, k / 4, "i32"), *tb = em_tensor2(rw, nb, "f32");
	const char *eq = em_val(e, "qe"), *es = em_val(e, "qe"), *ed = em_val(e, "qe"), *em = em_val(e, "qe");
	const char *ek = e->xk ? em_val(e, "qe") : NULL;
	const char *empty = em_fmt("tensor.empty(%s)", rw.dyn);
	em_top(e, eq, empty, em_fmt(": %s", tq));
	em_top(e, es, empty, em_fmt(": %s", ts));
	em_top(e, ed, empty, em_fmt(": %s", tb));
	em_top(e, em, empty, em_fmt(": %s", tb));
	if (ek)
		em_top(e, ek, empty, em_fmt(": %s", ts));
	const char *lo = em_cindex(e, "c", 0), *hi = em_cindex(e, "c", nb), *r = em_val(e, "qa");
	int no = ek ? 5 : 4;
	const char *tys = ek ? em_fmt("%s, %s, %s, %s, %s", tq, ts, tb, tb, ts) :
			       em_fmt("%s, %s, %s, %s", tq, ts, tb, tb);
	struct llm_buf b = {0};
	/* rows %_r, then blocks %_g */
	em_ln(&b, 4,
	    "%s:%d = scf.for %%_r = %s to %s step %%c1 iter_args(%%_bq = %s, %%_bs = %s, %%_bd = %s, "
	    "%%_bm = %s%s) -> (%s) {",
	    r, no, lo, rw.dyn[0] ? "%R" : "%c1", eq, es, ed, em, ek ? em_fmt(", %%_bk = %s", ek) : "", tys);
	em_ln(&b, 4,
	    "%%_in:%d = scf.for %%_g = %s to %s step %%c1 iter_args(%%_aq = %%_bq, %%_as = %%_bs, %%_ad = %%_bd, "
	    "%%_am = %%_bm%s) -> (%s) {",
	    no, lo, hi, ek ? ", %_ak = %_bk" : "", tys);
	em_ln(&b, 6, "%%_c8 = arith.constant 8 : index");
	em_ln(&b, 6, "%%_c32 = arith.constant 32 : index");
	em_ln(&b, 6, "%%_f0 = arith.constant 0.0 : f32");
	em_ln(&b, 6, "%%_f127 = arith.constant 127.0 : f32");
	em_ln(&b, 6, "%%_o = arith.muli %%_g, %%_c32 : index");
	em_ln(&b, 6, "%%_o4 = arith.muli %%_g, %%_c8 : index");
	em_rd(&b, 6, "%_v", x, "%_r, %_o", "%_f0", em_tensor2(rw, k, "f32"), "vector<32xf32>");
	em_ln(&b, 6, "%%_a = math.absf %%_v : vector<32xf32>");
	em_ln(&b, 6, "%%_m = vector.reduction <maxnumf>, %%_a : vector<32xf32> into f32");
	em_ln(&b, 6, "%%_d = arith.divf %%_m, %%_f127 : f32");
	em_ln(&b, 6, "%%_z = arith.cmpf oeq, %%_m, %%_f0 : f32");
	em_ln(&b, 6, "%%_id0 = arith.divf %%_f127, %%_m : f32");
	em_ln(&b, 6, "%%_id = arith.select %%_z, %%_f0, %%_id0 : f32");
	em_ln(&b, 6, "%%_idv = vector.broadcast %%_id : f32 to vector<32xf32>");
	em_ln(&b, 6, "%%_p = arith.mulf %%_v, %%_idv : vector<32xf32>");
	em_ln(&b, 6, "%%_re = math.roundeven %%_p : vector<32xf32>");
	em_ln(&b, 6, "%%_qi = arith.fptosi %%_re : vector<32xf32> to vector<32xi32>");
	em_ln(&b, 6, "%%_q = arith.trunci %%_qi : vector<32xi32> to vector<32xi8>");
	em_ln(&b, 6, "%%_aq2 = vector.transfer_write %%_q, %%_aq[%%_r, %%_o] {in_bounds = [true]} : vector<32xi8>, %s",
	    tq);
	for (int j = 0; j < 4; j++)
		em_ln(&b, 6,
		    "%%_e%d = vector.shuffle %%_qi, %%_qi [%d, %d, %d, %d, %d, %d, %d, %d] : vector<32xi32>, "
		    "vector<32xi32>",
		    j, j, j + 4, j + 8, j + 12, j + 16, j + 20, j + 24, j + 28);
	em_ln(&b, 6, "%%_s01 = arith.addi %%_e0, %%_e1 : vector<8xi32>");
	em_ln(&b, 6, "%%_s23 = arith.addi %%_e2, %%_e3 : vector<8xi32>");
	em_ln(&b, 6, "%%_s4 = arith.addi %%_s01, %%_s23 : vector<8xi32>");
	em_ln(&b, 6,
	    "%%_as2 = vector.transfer_write %%_s4, %%_as[%%_r, %%_o4] {in_bounds = [true]} : vector<8xi32>, %s", ts);
	em_ln(&b, 6, "%%_ad2 = tensor.insert %%_d into %%_ad[%%_r, %%_g] : %s", tb);
	em_ln(&b, 6, "%%_sq = vector.reduction <add>, %%_qi : vector<32xi32> into i32");
	em_ln(&b, 6, "%%_sf = arith.sitofp %%_sq : i32 to f32");
	em_ln(&b, 6, "%%_xs = arith.mulf %%_sf, %%_d : f32");
	em_ln(&b, 6, "%%_am2 = tensor.insert %%_xs into %%_am[%%_r, %%_g] : %s", tb);
	if (ek) {
		/* a piece of 4-bit codes of 32 holds element j (low nibble)
		 * and j + 16 (high) in byte j: lane l of the kernel meets the
		 * codes of x at 4(l%4) .. and 16 + 4(l%4) ..; i4 codes are the
		 * nibble - 8, so the lane's dot product takes -8 * their sum */
		const char *v8i = "vector<8xi32>";
		em_ln(&b, 6, "%%_kl = vector.shuffle %%_s4, %%_s4 [0, 1, 2, 3, 0, 1, 2, 3] : %s, %s", v8i, v8i);
		em_ln(&b, 6, "%%_kh = vector.shuffle %%_s4, %%_s4 [4, 5, 6, 7, 4, 5, 6, 7] : %s, %s", v8i, v8i);
		em_ln(&b, 6, "%%_kt = arith.addi %%_kl, %%_kh : vector<8xi32>");
		em_ln(&b, 6, "%%_km8 = arith.constant dense<-8> : vector<8xi32>");
		em_ln(&b, 6, "%%_kk = arith.muli %%_kt, %%_km8 : vector<8xi32>");
		em_ln(&b, 6, "%%_ak2 = vector.transfer_write %%_kk, %%_ak[%%_r, %%_o4] {in_bounds = [true]} : %s, %s",
		    v8i, ts);
	}
	em_ln(&b, 6, "scf.yield %%_aq2, %%_as2, %%_ad2, %%_am2%s : %s", ek ? ", %_ak2" : "", tys);
	em_ln(&b, 4, "}");
	em_ln(&b, 4, "scf.yield %%_in#0, %%_in#1, %%_in#2, %%_in#3%s : %s", ek ? ", %_in#4" : "", tys);
	em_ln(&b, 4, "} {%s}", em_attrs(e));
	llm_buf_puts(e->b, b.p);
	llm_buf_free(&b);
	e->qa = (struct qact){x, em_fmt("%s#0", r), em_fmt("%s#1", r), em_fmt("%s#2", r), em_fmt("%s#3", r),
		ek ? em_fmt("%s#4", r) : NULL};
	return e->qa;
}

const char *
em_qround(struct em *e, const char *x, struct rows r, int64_t k)
{
	int64_t nb = k / 32;
	const char *R = strcmp(r.t, "1") == 0 ? "1" : "%R";
	const char *M = r.dyn[0] ? "?" : em_fmt("%" PRId64, nb);
	const char *mt = em_fmt("tensor<%sx32xf32>", M), *at = em_fmt("tensor<%sxf32>", M);
	const char *t3 = em_fmt("tensor<%sx%" PRId64 "x32xf32>", r.t, nb);
	const char *x3 = em_val(e, "xr"), *xm = em_val(e, "xr");
	em_top(e, x3, em_fmt("tensor.expand_shape %s [[0], [1, 2]] output_shape [%s, %" PRId64 ", 32]", x, R, nb),
	    em_fmt(": %s into %s", em_tensor2(r, k, "f32"), t3));
	em_top(e, xm, em_fmt("tensor.collapse_shape %s [[0, 1], [2]]", x3), em_fmt(": %s into %s", t3, mt));
	const char *mdyn = "";
	if (r.dyn[0]) {
		const char *cb = em_cindex(e, "c", nb);
		mdyn = em_val(e, "nm");
		em_top(e, mdyn, em_fmt("arith.muli %%R, %s", cb), ": index");
	}
	const char *z = em_generic(e,
	    &(struct gspec){.sched = "fill",
		    .hint = "zam",
		    .otype = at,
		    .odyn = mdyn,
		    .omap = "d0",
		    .nd = 1,
		    .iters = "parallel",
		    .body = "      %r = arith.constant 0.0 : f32\n"});
	const char *am = em_generic(e,
	    &(struct gspec){.sched = "rowsum",
		    .hint = "am",
		    INS({xm, mt, "d0, d1", "f32"}),
		    .init = z,
		    .otype = at,
		    .omap = "d0",
		    .nd = 2,
		    .iters = "parallel, reduction",
		    .body = "      %ab = math.absf %a0 : f32\n"
			    "      %r = arith.maxnumf %o, %ab : f32\n"});
	const char *xh = em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "xh",
		    INS({xm, mt, "d0, d1", "f32"}, {am, at, "d0", "f32"}),
		    .otype = mt,
		    .odyn = mdyn,
		    .omap = "d0, d1",
		    .nd = 2,
		    .iters = "parallel, parallel",
		    .body = "      %f0 = arith.constant 0.0 : f32\n"
			    "      %f127 = arith.constant 127.0 : f32\n"
			    "      %d = arith.divf %a1, %f127 : f32\n"
			    "      %z = arith.cmpf oeq, %a1, %f0 : f32\n"
			    "      %id0 = arith.divf %f127, %a1 : f32\n"
			    "      %id = arith.select %z, %f0, %id0 : f32\n"
			    "      %p = arith.mulf %a0, %id : f32\n"
			    "      %q = math.roundeven %p : f32\n"
			    "      %r = arith.mulf %q, %d : f32\n"});
	const char *h3 = em_val(e, "xr"), *h2 = em_val(e, "xr");
	em_top(e, h3, em_fmt("tensor.expand_shape %s [[0, 1], [2]] output_shape [%s, %" PRId64 ", 32]", xh, R, nb),
	    em_fmt(": %s into %s", mt, t3));
	em_top(e, h2, em_fmt("tensor.collapse_shape %s [[0], [1, 2]]", h3),
	    em_fmt(": %s into %s", t3, em_tensor2(r, k, "f32")));
	return h2;
}

/* What qdot's row passes share. */
struct qd {
	struct qact a;
	struct qparts q;               /* W's views */
	int64_t n, t0;                 /* W's rows; its first tile among the product's */
	int pairs, na;                 /* 32-byte pieces a group: 8, or 4 (two rows each) */
	const char *tq, *ts, *tb, *st; /* x codes, sums of 4, per-block; the tile's y */
	const char *bias, *bt;         /* the bias (its view, then its f32 vector), its element type */
	const char *sx, *mx, *xt;      /* prefill, "-sub8": the tile's scales, offsets [ng, 8] f32, their type */
	const char *cx, *cxt;          /* prefill, 5- and 6-bit codes: the tile's int8 codes [ng, np, 64], type */
};

/* One pass of qdot over the rows %_r + j, j < nr, of the tile %_t: the
 * group loop with an accumulator per row and 64-byte piece (and per row
 * for the offsets' terms), then each row's 8 values of y written into
 * %_ot.  A 64-byte piece is two of the layout's 32-byte pieces: lanes
 * 0-7 the first, 8-15 the second. */
static void
qdot_pass(struct llm_buf *b, const struct qd *d, int nr)
{
	const struct qparts *q = &d->q;
	const char *v8 = "vector<8xf32>", *v16 = "vector<16xf32>", *i8 = "vector<8xi32>", *i16 = "vector<16xi32>";
	const char *b16 = "vector<16xi8>", *b64 = "vector<64xi8>";
	const char *kty = em_fmt("(%s, %s, %s) -> %s", i16, b64, b64, i16);
	const char *kty8 = em_fmt("(%s, %s, %s, %s) -> %s", i16, b64, b64, i16, i16);
	int nw = d->na / 2;        /* 64-byte pieces a group */
	int rp = d->pairs ? 4 : 2; /* rows of W a 64-byte piece holds */
	int nacc = nw + (q->mins ? 1 : 0);
	struct llm_buf accs = {0}, tys = {0}, outs = {0};

	for (int j = 0; j < nr; j++) {
		em_ln(b, 8, "%%_cr%d = arith.constant %d : index", j, j);
		em_ln(b, 8, "%%_r%d = arith.addi %%_r, %%_cr%d : index", j, j);
		for (int h = 0; h < nacc; h++) {
			llm_buf_printf(&accs, "%s%%_a%d_%d = %s", accs.len ? ", " : "", j, h, h < nw ? "%_zw" : "%_zf");
			llm_buf_printf(&tys, "%s%s", tys.len ? ", " : "", h < nw ? v16 : v8);
			llm_buf_printf(&outs, "%s%%_n%d_%d", outs.len ? ", " : "", j, h);
		}
	}
	em_ln(b, 8, "%%_res:%d = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%s) -> (%s) {", nr * nacc, accs.p,
	    tys.p);
	/* each row's block of activations as the kernels take them, once
	 * for each 32-byte piece of a 64-byte one: %_xJ (32 bytes twice;
	 * 4-bit codes: the halves %_xlJ, %_xhJ, four times), %_xsJ (their
	 * sums of 4), the block's scale %_dxJ, and %_scJ = s * dx */
	if (d->sx) {
		/* computed once for the tile's rows (qdot_tile) */
		em_rd(b, 10, "%_sv", d->sx, "%_g, %_c0", "%_f0", d->xt, v8);
		if (q->mins)
			em_rd(b, 10, "%_mv", d->mx, "%_g, %_c0", "%_f0", d->xt, v8);
	} else
		em_qscales(b, q, 10);
	em_ln(b, 10, "%%_xo = arith.muli %%_g, %s : index", d->pairs && !q->four ? "%_c16" : "%_c32");
	em_ln(b, 10, "%%_xo2 = arith.addi %%_xo, %%_c16 : index");
	em_ln(b, 10, "%%_so = arith.muli %%_g, %s : index", d->pairs && !q->four ? "%_c4" : "%_c8");
	em_ln(b, 10, "%%_bk = arith.divui %%_g, %s : index", d->pairs && !q->four ? "%_c2" : "%_c1");
	for (int j = 0; j < nr; j++) {
		if (!q->four) {
			/* int8 codes: the group's bytes of x (groups of 16: block
			 * g / 2) and their sums of 4, repeated to 64 bytes */
			int xn = d->pairs ? 16 : 32, rep = 64 / xn;
			const char *xt = em_fmt("vector<%dxi8>", xn), *st = em_fmt("vector<%dxi32>", xn / 4);
			em_rd(b, 10, em_fmt("%%_x1_%d", j), d->a.xq, em_fmt("%%_r%d, %%_xo", j), "%_i0", d->tq, xt);
			em_ln(b, 10, "%%_x%d = vector.shuffle %%_x1_%d, %%_x1_%d [%s] : %s, %s", j, j, j,
			    em_lanes(xn, rep), xt, xt);
			em_rd(b, 10, em_fmt("%%_xs1_%d", j), d->a.xs4, em_fmt("%%_r%d, %%_so", j), "%_i32", d->ts, st);
			em_ln(b, 10, "%%_xs%d = vector.shuffle %%_xs1_%d, %%_xs1_%d [%s] : %s, %s", j, j, j,
			    em_lanes(xn / 4, rep), st, st);
		} else {
			/* 4-bit codes of 32: byte j holds element j (low nibble)
			 * and j + 16 (high); each half of x four times, and what
			 * codes less 8 take off (i4: -8 * the sums of 4) */
			em_rd(b, 10, em_fmt("%%_xa%d", j), d->a.xq, em_fmt("%%_r%d, %%_xo", j), "%_i0", d->tq, b16);
			em_rd(b, 10, em_fmt("%%_xb%d", j), d->a.xq, em_fmt("%%_r%d, %%_xo2", j), "%_i0", d->tq, b16);
			em_ln(b, 10, "%%_xl%d = vector.shuffle %%_xa%d, %%_xa%d [%s] : %s, %s", j, j, j,
			    em_lanes(16, 4), b16, b16);
			em_ln(b, 10, "%%_xh%d = vector.shuffle %%_xb%d, %%_xb%d [%s] : %s, %s", j, j, j,
			    em_lanes(16, 4), b16, b16);
			if (q->code == LLM_QCODE_I4) {
				if (!d->a.xk)
					llm_fatal("qdot: i4 codes without qact's sums (em.xk)");
				em_rd(b, 10, em_fmt("%%_k1_%d", j), d->a.xk, em_fmt("%%_r%d, %%_so", j), "%_i32", d->ts,
				    i8);
				em_ln(b, 10, "%%_k%d = vector.shuffle %%_k1_%d, %%_k1_%d [%s] : %s, %s", j, j, j,
				    em_lanes(8, 2), i8, i8);
			}
		}
		em_ln(b, 10, "%%_dx%d = tensor.extract %s[%%_r%d, %%_bk] : %s", j, d->a.dx, j, d->tb);
		em_ln(b, 10, "%%_dxb%d = vector.broadcast %%_dx%d : f32 to %s", j, j, v8);
		em_ln(b, 10, "%%_sc%d = arith.mulf %%_sv, %%_dxb%d : %s", j, j, v8);
	}
	if (nr == 1) {
		/* One row of x streams W from memory (decode): prefetch the
		 * codes a distance ahead, past the ends of the 4 KB pages where
		 * the hardware's prefetchers stop, non-temporal (W is read once
		 * a token), and the scales at the same group.  The distance in
		 * bytes is measured per CPU: llm-lower sets it, in groups, from
		 * the tuning table (tune.h; BENCHMARKS.md "Prefetching W in
		 * decode"; the 5- and 6-bit forms take the distance of the
		 * int8 codes they stand for).  The last tile's prefetches stay
		 * on its last group. */
		int gbytes = q->pk ? q->np * q->pb : nw * 64;
		em_ln(b, 10,
		    "%%_pfd = arith.constant {llm.tune = \"decode.prefetch_bytes.g%d\", llm.tune_unit = %d : i64} 0"
		    " : index",
		    nw * 64, gbytes);
		em_ln(b, 10, "%%_pfm = arith.constant %" PRId64 " : index", q->nt * q->ng - 1);
		em_ln(b, 10, "%%_pft = arith.muli %%_t, %%_ng : index");
		em_ln(b, 10, "%%_pfa = arith.addi %%_pft, %%_g : index");
		em_ln(b, 10, "%%_pfb = arith.addi %%_pfa, %%_pfd : index");
		em_ln(b, 10, "%%_pfg = arith.minui %%_pfb, %%_pfm : index");
		for (int h = 0; 64 * h < gbytes; h++) {
			em_ln(b, 10, "%%_pfo%d = arith.constant %d : index", h, 64 * h);
			em_ln(b, 10, "memref.prefetch %s[%%_pfg, %%_pfo%d], read, locality<0>, data : %s", q->pc, h,
			    q->pct);
		}
		em_ln(b, 10, "memref.prefetch %s[%%_pfg, %%_c0], read, locality<3>, data : %s", q->ps, q->pst);
	}
	for (int h = 0; h < nw; h++) {
		if (d->cx)
			em_rd(b, 10, em_fmt("%%_w%d", h), d->cx, em_fmt("%%_g, %%_h%d, %%_c0", h), "%_i0", d->cxt, b64);
		else if (q->pk)
			em_qpiece(b, 10, q, em_fmt("%%_h%d", h), em_fmt("%%_w%d", h));
		else
			em_rd(b, 10, em_fmt("%%_w%d", h), q->codes, em_fmt("%%_t, %%_g, %%_h%d, %%_c0", h), "%_i0",
			    q->ct, b64);
		if (q->four) {
			em_ln(b, 10, "%%_lo%d = arith.andi %%_w%d, %%_m15 : %s", h, h, b64);
			em_ln(b, 10, "%%_hi%d = arith.shrui %%_w%d, %%_s4 : %s", h, h, b64);
		}
		/* the lanes' scales: those of the rows the lanes hold */
		struct llm_buf sh = {0};
		for (int l = 0; l < 16; l++)
			llm_buf_printf(&sh, "%s%d", l ? ", " : "", rp * h + l / (16 / rp));
		for (int j = 0; j < nr; j++) {
			if (!q->four)
				em_ln(b, 10, "%%_d%d_%d = llvm.call @llm_qdot_i8(%%_zi, %%_w%d, %%_x%d, %%_xs%d) : %s",
				    j, h, h, j, j, kty8);
			else {
				em_ln(b, 10, "%%_e%d_%d = llvm.call @llm_qdot_u7(%s, %%_lo%d, %%_xl%d) : %s", j, h,
				    q->code == LLM_QCODE_I4 ? em_fmt("%%_k%d", j) : "%_zi", h, j, kty);
				em_ln(b, 10, "%%_d%d_%d = llvm.call @llm_qdot_u7(%%_e%d_%d, %%_hi%d, %%_xh%d) : %s", j,
				    h, j, h, h, j, kty);
			}
			em_ln(b, 10, "%%_df%d_%d = arith.sitofp %%_d%d_%d : %s to %s", j, h, j, h, i16, v16);
			em_ln(b, 10, "%%_sb%d_%d = vector.shuffle %%_sc%d, %%_sc%d [%s] : %s, %s", j, h, j, j, sh.p, v8,
			    v8);
			em_ln(b, 10, "%%_n%d_%d = vector.fma %%_df%d_%d, %%_sb%d_%d, %%_a%d_%d : %s", j, h, j, h, j, h,
			    j, h, v16);
		}
		llm_buf_free(&sh);
	}
	for (int j = 0; q->mins && j < nr; j++) {
		em_ln(b, 10, "%%_xsum%d = tensor.extract %s[%%_r%d, %%_g] : %s", j, d->a.xsum, j, d->tb);
		em_ln(b, 10, "%%_xsb%d = vector.broadcast %%_xsum%d : f32 to %s", j, j, v8);
		em_ln(b, 10, "%%_n%d_%d = vector.fma %%_mv, %%_xsb%d, %%_a%d_%d : %s", j, nw, j, j, nw, v8);
	}
	em_ln(b, 10, "scf.yield %s : %s", outs.p, tys.p);
	em_ln(b, 8, "}");

	/* each row's sums of lanes, the offsets' terms and the bias */
	const char *ot = "%_ot";
	int lp = 16 / rp; /* lanes a row */
	for (int j = 0; j < nr; j++) {
		for (int h = 0; h < nw; h++)
			for (int p = 0; p < rp; p++) {
				em_ln(b, 8,
				    "%%_p%d_%d_%d = vector.extract_strided_slice %%_res#%d {offsets = [%d], "
				    "sizes = [%d], strides = [1]} : %s to vector<%dxf32>",
				    j, h, p, j * nacc + h, lp * p, lp, v16, lp);
				em_ln(b, 8,
				    "%%_y%d_%d = vector.reduction <add>, %%_p%d_%d_%d : vector<%dxf32> into f32", j,
				    rp * h + p, j, h, p, lp);
			}
		em_ln(b, 8,
		    "%%_yv%d = vector.from_elements %%_y%d_0, %%_y%d_1, %%_y%d_2, %%_y%d_3, %%_y%d_4, %%_y%d_5, "
		    "%%_y%d_6, %%_y%d_7 : %s",
		    j, j, j, j, j, j, j, j, j, v8);
		const char *yv = em_fmt("%%_yv%d", j);
		if (q->mins) {
			em_ln(b, 8, "%%_ym%d = arith.addf %s, %%_res#%d : %s", j, yv, j * nacc + nw, v8);
			yv = em_fmt("%%_ym%d", j);
		}
		if (d->bias) {
			em_ln(b, 8, "%%_yb%d = arith.addf %s, %s : %s", j, yv, d->bias, v8);
			yv = em_fmt("%%_yb%d", j);
		}
		em_ln(b, 8, "%%_ot_%d = vector.transfer_write %s, %s[%%_r%d, %%_c0] {in_bounds = [true]} : %s, %s", j,
		    yv, ot, j, v8, d->st);
		ot = em_fmt("%%_ot_%d", j);
	}
	em_ln(b, 8, "scf.yield %s : %s", ot, d->st);
	llm_buf_free(&accs);
	llm_buf_free(&tys);
	llm_buf_free(&outs);
}

/* 5- and 6-bit codes in prefill: the int8 codes of the tile %_t, rebuilt
 * once for all the rows of x (not once a pass), [ng, np, 64] in *cx;
 * returns its type.  The passes then read them as i8 codes. */
static const char *
qcodes_once(struct llm_buf *b, const struct qparts *q, const char **cx)
{
	const char *ct = em_fmt("tensor<%" PRId64 "x%dx64xi8>", q->ng, q->np);
	em_ln(b, 6, "%%_ce = tensor.empty() : %s", ct);
	em_ln(b, 6, "%%_cx = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%%_ca = %%_ce) -> (%s) {", ct);
	const char *at = "%_ca";
	for (int p = 0; p < q->np; p++) {
		em_ln(b, 8, "%%_cp%d = arith.constant %d : index", p, p);
		em_qpiece(b, 8, q, em_fmt("%%_cp%d", p), em_fmt("%%_cu%d", p));
		em_ln(b, 8,
		    "%%_cw%d = vector.transfer_write %%_cu%d, %s[%%_g, %%_cp%d, %%_c0] {in_bounds = [true]} : "
		    "vector<64xi8>, %s",
		    p, p, at, p, ct);
		at = em_fmt("%%_cw%d", p);
	}
	em_ln(b, 8, "scf.yield %s : %s", at, ct);
	em_ln(b, 6, "}");
	*cx = "%_cx";
	return ct;
}

/* em_row_passes' pass for qdot */
static void
qdot_rows(struct llm_buf *b, const void *arg, int nr)
{
	qdot_pass(b, arg, nr);
}

/* The tile %_t = %_tg - t0 of one W of qdot: from %_os, the tile's 8
 * columns of y as %_ow; rows two or three at a time (one load of a piece
 * of W serves them all), then one at a time. */
static void
qdot_tile(struct llm_buf *b, struct qd *d, struct rows rw)
{
	em_ln(b, 6, "%%_ts = arith.constant %" PRId64 " : index", d->t0);
	em_ln(b, 6, "%%_t = arith.subi %%_tg, %%_ts : index");
	em_ln(b, 6, "%%_ng = arith.constant %" PRId64 " : index", d->q.ng);
	em_ln(b, 6, "%%_t8 = arith.muli %%_t, %%_c8 : index");
	struct qd dt = *d;
	if (d->bias) {
		em_ln(b, 6, "%%_bz = arith.constant 0.0 : %s", d->bt);
		em_rd(b, 6, "%_bv", d->bias, "%_t8", "%_bz", em_fmt("tensor<%" PRId64 "x%s>", d->n, d->bt),
		    em_fmt("vector<8x%s>", d->bt));
		if (strcmp(d->bt, "f32") != 0)
			em_ln(b, 6, "%%_bf = arith.extf %%_bv : vector<8x%s> to vector<8xf32>", d->bt);
		dt.bias = strcmp(d->bt, "f32") != 0 ? "%_bf" : "%_bv"; /* the bias's vector */
	}
	if (rw.dyn[0] && d->q.sub)
		dt.xt = em_qscales_once(b, &d->q, &dt.sx, &dt.mx);
	if (rw.dyn[0] && d->q.pk)
		dt.cxt = qcodes_once(b, &d->q, &dt.cx);
	/* rows of x a pass: two or three (prefill.three_rows) for 4-bit
	 * codes without offsets (Q4_0: pp512 +4-7% with three on a Zen 5,
	 * BENCHMARKS.md "Three rows of x a pass in the int8 products"), two
	 * for the others (Q8_0 the same, Q4_K_M no better with three) */
	em_row_passes(b, 6, rw, "%_os", d->st, "%_ow", d->q.four && !d->q.mins ? 0 : 2, qdot_rows, &dt);
}

/* tile_chain's body for qdot: W_i's tile */
struct qtiles {
	struct qd *d;
	struct rows rw;
};

static void
qdot_tiles(struct llm_buf *b, int i, void *arg)
{
	struct qtiles *q = arg;
	qdot_tile(b, &q->d[i], q->rw);
}

/* y_i [R, n_i] = x [R, k] . W_i[n_i, k]^T (+ bias_i[n_i]), i < nw, with
 * each W_i in a tiled layout and the activations quantized (qact), in
 * integers: one scf.forall over the tiles of 8 rows of all the W_i (one
 * parallel loop, one barrier, for the products of the same x), the tile's
 * W chosen by its index.  In a tile, the rows of x, two at a time (so
 * that one load of W serves both), then one; per row a loop over the groups, and per group the int8
 * dot products of the target's kernel (llm_qdot_i8 / llm_qdot_u7, ir.txt
 * "Kernels") scaled by the weights' and the block's scales into f32
 * lanes, added once per row at the end with the offsets' terms (m * the
 * block's sum of x^) and the bias.  A 32-byte piece holds one row's group
 * of 32 int8 codes (lanes: that row), or two rows' groups of 16 int8 or
 * of 32 4-bit codes (lanes 0-3 the first row, 4-7 the second).  With R = 1
 * (decode) a tile streams through its W once.  Each y_i is the slice of
 * the whole y that its tiles wrote. */
void
em_qdot(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char **y)
{
	int64_t k = pt[0]->shape[1], nt = 0, nall = 0;
	struct qd *d = llm_xreallocarray(NULL, (size_t)nw, sizeof(*d));
	int64_t first[3], n[3];
	struct qact a = em_qact(e, x, rw, k);
	const char *st = em_fmt("tensor<%sx8xf32>", rw.t);
	for (int i = 0; i < nw; i++) {
		d[i] = (struct qd){.a = a,
			.n = pt[i]->shape[0],
			.t0 = nt,
			.tq = em_tensor2(rw, k, "i8"),
			.ts = em_tensor2(rw, k / 4, "i32"),
			.tb = em_tensor2(rw, k / 32, "f32"),
			.st = st};
		struct qparts qi = em_qinfo(pt[i]);
		d[i].pairs = qi.G == 16 || qi.four;
		d[i].na = d[i].pairs ? 4 : 8;
		/* the codes as 64-byte pieces: [nt, ng, na / 2, 64] */
		d[i].q = em_qview_as(e, pt[i], d[i].na / 2);
		d[i].bias = b_name[i] ? em_wview_as(e, b_name[i], em_fmt("%" PRId64 "x", d[i].n), &d[i].bt) : NULL;
		first[i] = nt;
		n[i] = d[i].n;
		nt += d[i].q.nt;
		nall += d[i].n;
	}
	const char *yt = em_tensor2(rw, nall, "f32"), *init = em_val(e, "qi"), *ya = em_val(e, "qd");
	const char *R = rw.dyn[0] ? "%R" : "1", *v8 = "vector<8xf32>", *i16 = "vector<16xi32>", *b64 = "vector<64xi8>";
	em_top(e, init, em_fmt("tensor.empty(%s)", rw.dyn), em_fmt(": %s", yt));
	e->kernels |= 1u << LLM_KERNEL_QDOT_I8 | 1u << LLM_KERNEL_QDOT_U7;

	/* prefill: beside the row passes, the tile products, the tuning
	 * table choosing (a tunable constant that llm-lower sets, and the
	 * switch on it that the lowering folds) */
	int tiles = rw.dyn[0] != 0;
	for (int i = 0; i < nw; i++)
		tiles &= em_qtile_ok(pt[i]);
	const char *tt = tiles ? em_qtile(e, &a, rw, nw, pt, b_name, first, nt, init, yt) : NULL;
	struct llm_buf b = {0};
	if (tiles)
		em_tiles_open(&b, ya, yt, "prefill.int8_tiles", tt);
	em_ln(&b, 4, "%s = scf.forall (%%_tg) in (%" PRId64 ") shared_outs(%%_o = %s) -> (%s) {", tiles ? "%_qy" : ya,
	    nt, init, yt);
	static const int consts[] = {0, 1, 2, 3, 4, 8, 16, 32};
	for (size_t c = 0; c < LLM_NELEM(consts); c++)
		em_ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[c], consts[c]);
	em_ln(&b, 6, "%%_i0 = arith.constant 0 : i8");
	em_ln(&b, 6, "%%_i32 = arith.constant 0 : i32");
	em_ln(&b, 6, "%%_f0 = arith.constant 0.0 : f32");
	em_ln(&b, 6, "%%_h0f = arith.constant 0.0 : f16");
	em_ln(&b, 6, "%%_zf = arith.constant dense<0.0> : %s", v8);
	em_ln(&b, 6, "%%_zw = arith.constant dense<0.0> : vector<16xf32>");
	em_ln(&b, 6, "%%_zi = arith.constant dense<0> : %s", i16);
	em_ln(&b, 6, "%%_m15 = arith.constant dense<15> : %s", b64);
	em_ln(&b, 6, "%%_s4 = arith.constant dense<4> : %s", b64);
	for (int h = 0; h < 8; h++)
		em_ln(&b, 6, "%%_h%d = arith.constant %d : index", h, h);
	em_ln(&b, 6, "%%_tg8 = arith.muli %%_tg, %%_c8 : index");
	em_ln(&b, 6, "%%_os = tensor.extract_slice %%_o[0, %%_tg8] [%s, 8] [1, 1] : %s to %s", R, yt, st);
	struct qtiles qt = {d, rw};
	const char *yo = em_tile_chain(&b, "%_tg", nw, first, st, qdot_tiles, &qt);
	em_ln(&b, 6, "scf.forall.in_parallel {");
	em_ln(&b, 8, "tensor.parallel_insert_slice %s into %%_o[0, %%_tg8] [%s, 8] [1, 1] : %s into %s", yo, R, st, yt);
	em_ln(&b, 6, "}");
	if (tiles) {
		em_ln(&b, 4, "}");
		em_tiles_close(e, &b, "%_qy", yt);
	} else
		em_ln(&b, 4, "} {%s}", em_attrs(e));
	llm_buf_puts(e->b, b.p);
	llm_buf_free(&b);
	em_split_y(e, ya, yt, rw, nw, n, y);
	free(d);
}

/* W [n, k] f32 decoded from a tiled layout, for the products of many
 * rows (prefill): class "dequant", w[t, h, g, l] = s * q (+ m) (with
 * 4-bit codes w[t, h, g, half, j]) read in the tile order, collapsed to
 * [n, k].  The values are the decoded weights exactly, so a prefill
 * computes what it computes on them. */
const char *
em_qdequant(struct em *e, const struct llm_plan_tensor *pt)
{
	int64_t n = pt->shape[0], k = pt->shape[1];
	struct qparts q = qview_float(e, pt);
	const char *wt = q.four ?
	    em_fmt("tensor<%" PRId64 "x%" PRId64 "x%" PRId64 "x2x%" PRId64 "xf32>", q.nt, q.R, q.ng, q.B) :
	    em_fmt("tensor<%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 "xf32>", q.nt, q.R, q.ng, q.G);
	/* dims: t, h, g, l  or  t, h, g, half, j */
	struct gin in[3] = {
		{q.codes, q.ct, q.four ? "d0, d2, d1, d4" : "d0, d2, d1, d3", "i8"},
		{q.scales, q.st, "d0, d2, d1", q.se},
		{q.mins, q.st, "d0, d2, d1", q.se},
	};
	const char *w = em_generic(e,
	    &(struct gspec){.sched = "dequant",
		    .hint = "dq",
		    .nin = q.mins ? 3 : 2,
		    .in = in,
		    .otype = wt,
		    .odyn = "",
		    .omap = q.four ? "d0, d1, d2, d3, d4" : "d0, d1, d2, d3",
		    .nd = q.four ? 5 : 4,
		    .iters = q.four ? "parallel, parallel, parallel, parallel, parallel" :
				      "parallel, parallel, parallel, parallel",
		    .body = qvalue_body(&q, 0, 1, q.mins ? 2 : -1, 3, "%r")});
	const char *wc = em_val(e, "dqc");
	em_top(e, wc, em_fmt("tensor.collapse_shape %s [[0, 1], [2, 3%s]]", w, q.four ? ", 4" : ""),
	    em_fmt(": %s into tensor<%" PRId64 "x%" PRId64 "xf32>", wt, n, k));
	return wc;
}
