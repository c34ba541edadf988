/* emit.c: writes one phase of a decoder-only transformer as MLIR on tensors.
 *
 * The module is text, written op by op in program order, one layer after
 * the other, with named values.  Every top-level op gets llm.id (program
 * order), llm.layer and llm.stage; every linalg op gets llm.sched, the
 * schedule class llm-lower tiles by (share/doc/llm/ir.txt).  Weights and
 * the KV cache are views of the rank-1 byte buffers of the ABI at the
 * plan's offsets.  Activations are f32 [R, width]: R is 1 in decode and
 * the dynamic n_tokens in prefill and prefill_kv, so a short prompt costs
 * a short prompt's work.  Attention reads the cache rows [0, pos + R): its
 * cost follows the current length, not the context size.
 *
 * This is the emitter's top floor (emit_int.h): the graph alone, in
 * llm_emit_phase's pieces (prologue, embedding, layers, head, the
 * module's tail), on the products of emit_int8.c and emit_bf16.c and the
 * text primitives of emit_ir.c. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"
#include "../formats/family.h"

/* v as an MLIR float literal: "%.17g" (round-trips a double), with
 * ".0" where that prints an integer (MLIR reads "8" as no float). */
static const char *
em_real(double v)
{
	const char *s = em_fmt("%.17g", v);
	return strpbrk(s, ".eEn") ? s : em_fmt("%s.0", s);
}

static const char *
wview(struct em *e, const char *name, const char **elt)
{
	return em_wview_as(e, name, NULL, elt);
}

/* The plan's name of role r (family.h) in layer l. */
static const char *
wname(int l, enum llm_role r)
{
	return em_fmt(llm_role_runtime(r), l);
}

/* RMSNorm over rows r of x [r, d]: x * rsqrt(mean(x^2) + eps) * w. */
static const char *
rmsnorm_of(struct em *e, const char *x, struct rows r, int64_t d, const char *w_name)
{
	const char *wt, *w = wview(e, w_name, &wt);
	const char *xt = em_tensor2(r, d, "f32");
	const char *st = em_fmt("tensor<%sxf32>", r.t);
	const char *z, *ss, *wn;
	const char *wcode = em_widen("%a2", wt, "%wf", &wn);

	z = em_generic(e,
	    &(struct gspec){.sched = "fill",
		    .hint = "zss",
		    .otype = st,
		    .odyn = r.dyn,
		    .omap = "d0",
		    .nd = 1,
		    .iters = "parallel",
		    .body = "      %r = arith.constant 0.0 : f32\n"});
	ss = em_generic(e,
	    &(struct gspec){.sched = "rowsum",
		    .hint = "ss",
		    INS({x, xt, "d0, d1", "f32"}),
		    .init = z,
		    .otype = st,
		    .omap = "d0",
		    .nd = 2,
		    .iters = "parallel, reduction",
		    .body = "      %m = arith.mulf %a0, %a0 : f32\n"
			    "      %r = arith.addf %o, %m : f32\n"});
	return em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "nrm",
		    INS({x, xt, "d0, d1", "f32"}, {ss, st, "d0", "f32"},
			{w, em_fmt("tensor<%" PRId64 "x%s>", d, wt), "d1", wt}),
		    .otype = xt,
		    .odyn = r.dyn,
		    .omap = "d0, d1",
		    .nd = 2,
		    .iters = "parallel, parallel",
		    .body = em_fmt("      %%n = arith.constant %s : f32\n"
				   "      %%eps = arith.constant %s : f32\n"
				   "      %%ms = arith.mulf %%a1, %%n : f32\n"
				   "      %%me = arith.addf %%ms, %%eps : f32\n"
				   "      %%iv = math.rsqrt %%me : f32\n"
				   "      %%y = arith.mulf %%a0, %%iv : f32\n"
				   "%s"
				   "      %%r = arith.mulf %%y, %s : f32\n",
			em_real(1.0 / (double)d), em_real(e->c->rms_norm_eps), wcode, wn)});
}

static const char *
rmsnorm(struct em *e, const char *x, struct rows r, const char *w_name)
{
	return rmsnorm_of(e, x, r, e->c->hidden_size, w_name);
}

/* RMSNorm of each of the nh heads of x [R, nh * HD] over its HD values,
 * with the weights [HD] (qwen3's q_norm and k_norm): x as [R * nh, HD]. */
static const char *
headnorm(struct em *e, const char *x, int64_t nh, const char *w_name)
{
	int64_t hd = e->c->head_dim;
	const char *t3 = em_fmt("tensor<%sx%" PRId64 "x%" PRId64 "xf32>", e->R.t, nh, hd);
	struct rows rh = {e->R.dyn[0] ? "?" : em_fmt("%" PRId64, nh), ""};
	if (e->R.dyn[0]) {
		const char *n = em_cindex(e, "c", nh);
		rh.dyn = em_val(e, "rh");
		em_top(e, rh.dyn, em_fmt("arith.muli %%R, %s", n), ": index");
	}
	const char *x3 = em_val(e, "hn"), *x2 = em_val(e, "hn"), *y3 = em_val(e, "hn"), *y = em_val(e, "hn");
	em_top(e, x3,
	    em_fmt("tensor.expand_shape %s [[0], [1, 2]] output_shape [%s, %" PRId64 ", %" PRId64 "]", x,
		e->R.dyn[0] ? "%R" : "1", nh, hd),
	    em_fmt(": %s into %s", em_tensor2(e->R, nh * hd, "f32"), t3));
	em_top(e, x2, em_fmt("tensor.collapse_shape %s [[0, 1], [2]]", x3),
	    em_fmt(": %s into %s", t3, em_tensor2(rh, hd, "f32")));
	const char *n2 = rmsnorm_of(e, x2, rh, hd, w_name);
	em_top(e, y3,
	    em_fmt("tensor.expand_shape %s [[0, 1], [2]] output_shape [%s, %" PRId64 ", %" PRId64 "]", n2,
		e->R.dyn[0] ? "%R" : "1", nh, hd),
	    em_fmt(": %s into %s", em_tensor2(rh, hd, "f32"), t3));
	em_top(e, y, em_fmt("tensor.collapse_shape %s [[0], [1, 2]]", y3),
	    em_fmt(": %s into %s", t3, em_tensor2(e->R, nh * hd, "f32")));
	return y;
}

/* The body of a product: o + x * widened W (%a0 = x, %a1 = W). */
static const char *
product_body(const char *wt)
{
	const char *wn, *wcode = em_widen("%a1", wt, "%wf", &wn);
	return em_fmt("%s"
		      "      %%p = arith.mulf %%a0, %s fastmath<contract> : f32\n"
		      "      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n",
	    wcode, wn);
}

/* y [1, n] = x [1, k] . W[n, k]^T (+ bias[n]) for a single row (decode, and
 * the LM head): a matrix-vector product bound by reading W.  W is viewed
 * as [n/64, 8, 8, k] (chunk c, stream j, row h of the stream; row
 * 64c + 8j + h) and the product iterates (r, c, h, j, k), so that a tile of
 * rows j = 0..7 at one h reads 8 streams that each run on through 8
 * consecutive rows of W (24 KiB of bf16 at k = 1536) instead of ending
 * with every row: the hardware prefetchers keep up with long streams
 * only (a bf16 GEMV read 17 GB/s with one row a stream, 24 GB/s with 8,
 * side by side; share/doc/llm/ir.txt).  Each row's sum is computed as in
 * linear(): the results are the same bits. */
static const char *
gemv(struct em *e, const char *x, int64_t n, int64_t k, const char *w_name, const char *b_name)
{
	int64_t nc = n / GEMV_CHUNK, ns = GEMV_CHUNK / GEMV_STREAM;
	const char *shape = em_fmt("%" PRId64 "x%" PRId64 "x%dx", nc, ns, GEMV_STREAM);
	const char *wt, *w = em_wview_as(e, w_name, em_fmt("%s%" PRId64 "x", shape, k), &wt);
	const char *yt = em_fmt("tensor<1x%sf32>", shape);
	const char *iters = "parallel, parallel, parallel, parallel";
	const char *init = em_product_init(e, b_name, shape, "d1, d2, d3", yt, "", "d0, d1, d2, d3", 4, iters);
	const char *y = em_generic(e,
	    &(struct gspec){.sched = "gemv",
		    .hint = "mv",
		    INS({x, em_fmt("tensor<1x%" PRId64 "xf32>", k), "d0, d4", "f32"},
			{w, em_fmt("tensor<%s%" PRId64 "x%s>", shape, k, wt), "d1, d3, d2, d4", wt}),
		    .init = init,
		    .otype = yt,
		    .omap = "d0, d1, d3, d2",
		    .nd = 5,
		    .iters = "parallel, parallel, parallel, parallel, reduction",
		    .body = product_body(wt)});
	const char *yc = em_val(e, "mvc");
	em_top(e, yc, em_fmt("tensor.collapse_shape %s [[0], [1, 2, 3]]", y),
	    em_fmt(": %s into tensor<1x%" PRId64 "xf32>", yt, n));
	return yc;
}

/* W's entry in the weight plan, with k columns. */
static const struct llm_plan_tensor *
weight(struct em *e, const char *w_name, int64_t k)
{
	const struct llm_plan_tensor *pt = llm_model_tensor(e->m, w_name);
	if (!pt)
		llm_fatal("%s: no tensor '%s' in the weight plan", e->m->path, w_name);
	if (pt->shape[1] != k)
		llm_fatal("%s: tensor '%s' has %" PRId64 " columns, expected %" PRId64, e->m->path, w_name,
		    pt->shape[1], k);
	if (pt->layout && e->m->act_q8 && k % 32)
		llm_fatal("%s: tensor '%s' has %" PRId64 " columns, not blocks of 32 for q8 activations", e->m->path,
		    w_name, k);
	return pt;
}

/* y [r, n] = x [r, k] . W[n, k]^T (+ bias[n]); a single row goes to gemv()
 * when W's rows come in whole chunks, or to em_qgemv() when W is quantized
 * (prefill decodes a quantized W first: em_qdequant()). */
static const char *
linear(struct em *e, const char *x, struct rows r, int64_t k, const char *w_name, const char *b_name, const char *sched)
{
	const struct llm_plan_tensor *pt = weight(e, w_name, k);
	int64_t n = pt->shape[0];
	if (pt->layout && e->m->act_q8) {
		if (em_qa8(pt)) {
			const char *y;
			em_qdot(e, x, r, 1, &pt, &b_name, &y);
			return y;
		}
		x = em_qround(e, x, r, k);
	}
	if (e->m->act_bf16 && !pt->layout && pt->dtype == LLM_DT_BF16) {
		if (em_bd16(pt)) {
			const char *y;
			em_bdot(e, x, r, 1, &pt, &b_name, &y);
			return y;
		}
		x = em_bwiden(e, x, r, k);
	}
	if (pt->layout && strcmp(r.t, "1") == 0)
		return em_qgemv(e, x, pt, b_name);
	if (strcmp(r.t, "1") == 0 && n % GEMV_CHUNK == 0 && !pt->layout)
		return gemv(e, x, n, k, w_name, b_name);
	const char *wt = "f32", *w = pt->layout ? em_qdequant(e, pt) : wview(e, w_name, &wt);
	const char *yt = em_tensor2(r, n, "f32");
	const char *init = em_product_init(e, b_name, em_fmt("%" PRId64 "x", n), "d1", yt, r.dyn, "d0, d1", 2,
	    "parallel, parallel");
	return em_generic(e,
	    &(struct gspec){.sched = sched,
		    .hint = "mm",
		    INS({x, em_tensor2(r, k, "f32"), "d0, d2", "f32"},
			{w, em_fmt("tensor<%" PRId64 "x%" PRId64 "x%s>", n, k, wt), "d1, d2", wt}),
		    .init = init,
		    .otype = yt,
		    .omap = "d0, d1",
		    .nd = 3,
		    .iters = "parallel, parallel, reduction",
		    .body = product_body(wt)});
}

/* y_i = linear(x, W_i, bias_i), i < nw (at most 3), the products of the
 * same x: in one em_qdot() where the int8 kernels read every W_i, in one
 * em_bdot() where the bf16 kernel takes every W_i, else one linear() each. */
static void
linears(struct em *e, const char *x, struct rows r, int64_t k, int nw, const char *const *w_name,
    const char *const *b_name, const char **y)
{
	const struct llm_plan_tensor *pt[3];
	int fuse = e->m->act_q8 && nw <= 3;
	for (int i = 0; i < nw && fuse; i++) {
		pt[i] = weight(e, w_name[i], k);
		fuse = pt[i]->layout && em_qa8(pt[i]);
	}
	if (fuse) {
		em_qdot(e, x, r, nw, pt, b_name, y);
		return;
	}
	fuse = e->m->act_bf16 && nw <= 3;
	for (int i = 0; i < nw && fuse; i++) {
		pt[i] = weight(e, w_name[i], k);
		fuse = em_bd16(pt[i]);
	}
	if (fuse) {
		em_bdot(e, x, r, nw, pt, b_name, y);
		return;
	}
	for (int i = 0; i < nw; i++)
		y[i] = linear(e, x, r, k, w_name[i], b_name[i], "matmul");
}

static const char *
add(struct em *e, const char *a, const char *b, struct rows r, int64_t n)
{
	const char *t = em_tensor2(r, n, "f32");
	return em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "res",
		    INS({a, t, "d0, d1", "f32"}, {b, t, "d0, d1", "f32"}),
		    .otype = t,
		    .odyn = r.dyn,
		    .omap = "d0, d1",
		    .nd = 2,
		    .iters = "parallel, parallel",
		    .body = "      %r = arith.addf %a0, %a1 : f32\n"});
}

/* Rotate-half RoPE of xp [R, nh*HD] with cos/sin rows pos..pos+R-1.
 * q (nh = H): out [KVH, G, R, HD] f32 (query head = h*G + g).
 * k (nh = KVH): out [KVH, 2, HD/2, R] in the cache element type: keys are
 * cached transposed, positions last, so that attention scores are outer
 * products with the keys in vector lanes. */
static const char *
rope(struct em *e, const char *xp, const char *cs, const char *sn, int is_q)
{
	const struct llm_model_config *c = e->c;
	int64_t kvh = c->n_kv_heads, g = c->n_heads / c->n_kv_heads, hd = c->head_dim, h2 = hd / 2;
	int64_t nh = is_q ? c->n_heads : kvh;
	const char *R = e->R.t, *x4 = em_val(e, is_q ? "q5" : "k4"), *x1 = em_val(e, "x1"), *x2 = em_val(e, "x2");
	const char *sh4, *sh3, *osh, *ot, *res;
	const char *elt = is_q ? "f32" : e->kvt;

	/* Split the halves of each head: [R, KVH, (G,) 2, HD/2]. */
	if (is_q) {
		sh4 = em_fmt("tensor<%sx%" PRId64 "x%" PRId64 "x2x%" PRId64 "xf32>", R, kvh, g, h2);
		sh3 = em_fmt("tensor<%sx%" PRId64 "x%" PRId64 "x%" PRId64 "xf32>", R, kvh, g, h2);
		em_top(e, x4,
		    em_fmt("tensor.expand_shape %s [[0], [1, 2, 3, 4]] output_shape [%s, %" PRId64 ", %" PRId64
			   ", 2, %" PRId64 "]",
			xp, e->R.dyn[0] ? e->R.dyn : "1", kvh, g, h2),
		    em_fmt(": %s into %s", em_tensor2(e->R, nh * hd, "f32"), sh4));
		em_top(e, x1,
		    em_fmt("tensor.extract_slice %s[0, 0, 0, 0, 0] [%s, %" PRId64 ", %" PRId64 ", 1, %" PRId64
			   "] [1, 1, 1, 1, 1]",
			x4, e->R.dyn[0] ? e->R.dyn : "1", kvh, g, h2),
		    em_fmt(": %s to %s", sh4, sh3));
		em_top(e, x2,
		    em_fmt("tensor.extract_slice %s[0, 0, 0, 1, 0] [%s, %" PRId64 ", %" PRId64 ", 1, %" PRId64
			   "] [1, 1, 1, 1, 1]",
			x4, e->R.dyn[0] ? e->R.dyn : "1", kvh, g, h2),
		    em_fmt(": %s to %s", sh4, sh3));
		osh = em_fmt("tensor<%" PRId64 "x%" PRId64 "x%sx2x%" PRId64 "x%s>", kvh, g, R, h2, elt);
	} else {
		sh4 = em_fmt("tensor<%sx%" PRId64 "x2x%" PRId64 "xf32>", R, kvh, h2);
		sh3 = em_fmt("tensor<%sx%" PRId64 "x%" PRId64 "xf32>", R, kvh, h2);
		em_top(e, x4,
		    em_fmt("tensor.expand_shape %s [[0], [1, 2, 3]] output_shape [%s, %" PRId64 ", 2, %" PRId64 "]", xp,
			e->R.dyn[0] ? e->R.dyn : "1", kvh, h2),
		    em_fmt(": %s into %s", em_tensor2(e->R, nh * hd, "f32"), sh4));
		em_top(e, x1,
		    em_fmt("tensor.extract_slice %s[0, 0, 0, 0] [%s, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", x4,
			e->R.dyn[0] ? e->R.dyn : "1", kvh, h2),
		    em_fmt(": %s to %s", sh4, sh3));
		em_top(e, x2,
		    em_fmt("tensor.extract_slice %s[0, 0, 1, 0] [%s, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", x4,
			e->R.dyn[0] ? e->R.dyn : "1", kvh, h2),
		    em_fmt(": %s to %s", sh4, sh3));
		osh = em_fmt("tensor<%" PRId64 "x2x%" PRId64 "x%sx%s>", kvh, h2, R, elt);
	}
	const char *ct = em_fmt("tensor<%sx%" PRId64 "xf32>", R, h2);
	/* out = c == 0 ? x1*cos - x2*sin : x2*cos + x1*sin */
	const char *body = em_fmt("      %%ci = linalg.index %d : index\n"
				  "      %%c0i = arith.constant 0 : index\n"
				  "      %%is0 = arith.cmpi eq, %%ci, %%c0i : index\n"
				  "      %%p1 = arith.mulf %%a0, %%a2 : f32\n"
				  "      %%p2 = arith.mulf %%a1, %%a3 : f32\n"
				  "      %%r0 = arith.subf %%p1, %%p2 : f32\n"
				  "      %%p3 = arith.mulf %%a1, %%a2 : f32\n"
				  "      %%p4 = arith.mulf %%a0, %%a3 : f32\n"
				  "      %%r1 = arith.addf %%p3, %%p4 : f32\n"
				  "%s",
	    is_q ? 3 : 1,
	    strcmp(elt, "f32") == 0 ? "      %r = arith.select %is0, %r0, %r1 : f32\n" :
				      em_fmt("      %%rs = arith.select %%is0, %%r0, %%r1 : f32\n"
					     "      %%r = arith.truncf %%rs : f32 to %s\n",
					  elt));
	if (is_q) {
		/* dims (h, g, s, c, j) */
		ot = em_generic(e,
		    &(struct gspec){.sched = "rope",
			    .hint = "qr",
			    INS({x1, sh3, "d2, d0, d1, d4", "f32"}, {x2, sh3, "d2, d0, d1, d4", "f32"},
				{cs, ct, "d2, d4", "f32"}, {sn, ct, "d2, d4", "f32"}),
			    .otype = osh,
			    .odyn = e->R.dyn,
			    .omap = "d0, d1, d2, d3, d4",
			    .nd = 5,
			    .iters = "parallel, parallel, parallel, parallel, parallel",
			    .body = body});
		res = em_val(e, "q");
		em_top(e, res, em_fmt("tensor.collapse_shape %s [[0], [1], [2], [3, 4]]", ot),
		    em_fmt(": %s into tensor<%" PRId64 "x%" PRId64 "x%sx%" PRId64 "xf32>", osh, kvh, g, R, hd));
	} else {
		/* dims (h, c, j, s) */
		ot = em_generic(e,
		    &(struct gspec){.sched = "rope",
			    .hint = "kr",
			    INS({x1, sh3, "d3, d0, d2", "f32"}, {x2, sh3, "d3, d0, d2", "f32"},
				{cs, ct, "d3, d2", "f32"}, {sn, ct, "d3, d2", "f32"}),
			    .otype = osh,
			    .odyn = e->R.dyn,
			    .omap = "d0, d1, d2, d3",
			    .nd = 4,
			    .iters = "parallel, parallel, parallel, parallel",
			    .body = /* the body's output element type is the cache's */
			    body});
		/* [KVH, 2, HD/2, R]: inserted as is into the cache viewed with
		 * the same split, so no copy is needed. */
		res = ot;
	}
	return res;
}

/* A fresh tensor filled with a constant. */
static const char *
fill(struct em *e, const char *type, const char *dyn, int nd, const char *value)
{
	struct llm_buf map = {0}, its = {0};
	for (int i = 0; i < nd; i++) {
		llm_buf_printf(&map, "%sd%d", i ? ", " : "", i);
		llm_buf_printf(&its, "%sparallel", i ? ", " : "");
	}
	const char *r = em_generic(e,
	    &(struct gspec){.sched = "fill",
		    .hint = "fill",
		    .otype = type,
		    .odyn = dyn,
		    .omap = map.p,
		    .nd = nd,
		    .iters = its.p,
		    .body = em_fmt("      %%r = arith.constant %s : f32\n", value)});
	llm_buf_free(&map);
	llm_buf_free(&its);
	return r;
}

/* Grouped-query attention of q [KVH, G, R, HD] over the cache positions
 * [0, L) of kc [KVH, HD, C] and vc [KVH, C, HD]; row s of the chunk sees
 * keys t <= pos + s (and t > pos + s - W with a sliding window W).
 * Returns [R, H*HD] with query head h*G + g at columns of block h*G + g. */
static const char *
attention(struct em *e, const char *q, const char *kc, const char *vc, int64_t window)
{
	const struct llm_model_config *c = e->c;
	int64_t kvh = c->n_kv_heads, g = c->n_heads / c->n_kv_heads, hd = c->head_dim;
	const char *R = e->R.t, *kvt = e->kvt;
	const char *lt = em_fmt("tensor<%" PRId64 "x?x%" PRId64 "x%s>", kvh, hd, kvt), *ct = lt;
	const char *lkt = em_fmt("tensor<%" PRId64 "x%" PRId64 "x?x%s>", kvh, hd, kvt), *ckt = lkt;
	const char *qt = em_fmt("tensor<%" PRId64 "x%" PRId64 "x%sx%" PRId64 "xf32>", kvh, g, R, hd);
	const char *st = em_fmt("tensor<%" PRId64 "x%" PRId64 "x%sx?xf32>", kvh, g, R);
	const char *rt = em_fmt("tensor<%" PRId64 "x%" PRId64 "x%sxf32>", kvh, g, R);
	const char *sdyn = e->R.dyn[0] ? "%R, %L" : "%L";
	const char *kt = em_val(e, "keys"), *vt = em_val(e, "vals");
	const char *kn, *vn;
	const char *kw = em_widen("%a1", kvt, "%kf", &kn), *vw = em_widen("%a1", kvt, "%vf", &vn);
	/* lim: the position of row s; t: the key's */
	const char *rowkey = "      %si = linalg.index 2 : index\n"
			     "      %ti = linalg.index 3 : index\n"
			     "      %lim = arith.addi %si, %pos : index\n";
	const char *mask = em_fmt("%s      %%ok = arith.cmpi ule, %%ti, %%lim : index\n", rowkey);

	em_top(e, kt, em_fmt("tensor.extract_slice %s[0, 0, 0] [%" PRId64 ", %" PRId64 ", %%L] [1, 1, 1]", kc, kvh, hd),
	    em_fmt(": %s to %s", ckt, lkt));
	em_top(e, vt, em_fmt("tensor.extract_slice %s[0, 0, 0] [%" PRId64 ", %%L, %" PRId64 "] [1, 1, 1]", vc, kvh, hd),
	    em_fmt(": %s to %s", ct, lt));
	/* scores (h, g, s, t) = sum_d q(h, g, s, d) k(h, d, t) */
	const char *z = fill(e, st, sdyn, 4, "0.0");
	const char *sc = em_generic(e,
	    &(struct gspec){.sched = "attn",
		    .hint = "scores",
		    INS({q, qt, "d0, d1, d2, d4", "f32"}, {kt, lkt, "d0, d4, d3", kvt}),
		    .init = z,
		    .otype = st,
		    .omap = "d0, d1, d2, d3",
		    .nd = 5,
		    .iters = "parallel, parallel, parallel, parallel, reduction",
		    .body = em_fmt("%s      %%p = arith.mulf %%a0, %s fastmath<contract> : f32\n"
				   "      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n",
			kw, kn)});
	/* Softmax over t of the scaled scores, keys t > pos + s masked: the
	 * scale and the mask are applied where the scores are read (rowmax,
	 * probs), not in a pass of their own; class "softmax" shares the
	 * heads out over the threads. */
	/* A sliding window W: the query at lim sees keys t > lim - W too, so
	 * lim - t (unsigned: t > lim wraps past W) is below W.  That mask is
	 * applied in a pass of its own, as -1e30 in the scaled scores:
	 * tile_reduction_using_for leaves a reduction's linalg.index
	 * unshifted by its tile (the rowmax below sees lane numbers, not
	 * positions), harmless for the causal mask (any shift at least the
	 * row's maximum gives the same softmax) but not for a window. */
	if (window)
		mask = em_fmt("%s      %%back = arith.subi %%lim, %%ti : index\n"
			      "      %%win = arith.constant %" PRId64 " : index\n"
			      "      %%ok = arith.cmpi ult, %%back, %%win : index\n",
		    rowkey, window);
	const char *scaled = em_fmt("%s      %%scale = arith.constant %s : f32\n"
				    "      %%x = arith.mulf %%a0, %%scale : f32\n",
	    mask, em_real(c->attn_scale ? c->attn_scale : 1.0 / sqrt((double)hd)));
	const char *neg = "      %neg = arith.constant -1.0e30 : f32\n", *rmax, *pbody;
	if (window) {
		sc = em_generic(e,
		    &(struct gspec){.sched = "softmax",
			    .hint = "window",
			    INS({sc, st, "d0, d1, d2, d3", "f32"}),
			    .otype = st,
			    .odyn = sdyn,
			    .omap = "d0, d1, d2, d3",
			    .nd = 4,
			    .iters = "parallel, parallel, parallel, parallel",
			    .body = em_fmt("%s%s      %%r = arith.select %%ok, %%x, %%neg : f32\n", scaled, neg)});
		rmax = "      %r = arith.maximumf %a0, %o : f32\n";
		pbody = "      %dd = arith.subf %a0, %a1 : f32\n"
			"      %r = math.exp %dd : f32\n";
	} else {
		rmax = em_fmt("%s%s      %%xm = arith.select %%ok, %%x, %%neg : f32\n"
			      "      %%r = arith.maximumf %%xm, %%o : f32\n",
		    scaled, neg);
		pbody = em_fmt("%s      %%dd = arith.subf %%x, %%a1 : f32\n"
			       "      %%ex = math.exp %%dd : f32\n"
			       "      %%zf = arith.constant 0.0 : f32\n"
			       "      %%r = arith.select %%ok, %%ex, %%zf : f32\n",
		    scaled);
	}
	const char *m0 = fill(e, rt, e->R.dyn, 3, "-1.0e30");
	const char *mx = em_generic(e,
	    &(struct gspec){.sched = "softmax",
		    .hint = "rowmax",
		    INS({sc, st, "d0, d1, d2, d3", "f32"}),
		    .init = m0,
		    .otype = rt,
		    .omap = "d0, d1, d2",
		    .nd = 4,
		    .iters = "parallel, parallel, parallel, reduction",
		    .body = rmax});
	const char *p = em_generic(e,
	    &(struct gspec){.sched = "softmax",
		    .hint = "probs",
		    INS({sc, st, "d0, d1, d2, d3", "f32"}, {mx, rt, "d0, d1, d2", "f32"}),
		    .otype = st,
		    .odyn = sdyn,
		    .omap = "d0, d1, d2, d3",
		    .nd = 4,
		    .iters = "parallel, parallel, parallel, parallel",
		    .body = pbody});
	const char *l0 = fill(e, rt, e->R.dyn, 3, "0.0");
	const char *l = em_generic(e,
	    &(struct gspec){.sched = "softmax",
		    .hint = "rowsum",
		    INS({p, st, "d0, d1, d2, d3", "f32"}),
		    .init = l0,
		    .otype = rt,
		    .omap = "d0, d1, d2",
		    .nd = 4,
		    .iters = "parallel, parallel, parallel, reduction",
		    .body = "      %r = arith.addf %o, %a0 : f32\n"});
	/* out (h, g, s, d) = sum_t p(h, g, s, t) v(h, t, d) */
	const char *a0 = fill(e, qt, e->R.dyn, 4, "0.0");
	const char *pv = em_generic(e,
	    &(struct gspec){.sched = "attn",
		    .hint = "pv",
		    INS({p, st, "d0, d1, d2, d4", "f32"}, {vt, lt, "d0, d4, d3", kvt}),
		    .init = a0,
		    .otype = qt,
		    .omap = "d0, d1, d2, d3",
		    .nd = 5,
		    .iters = "parallel, parallel, parallel, parallel, reduction",
		    .body = em_fmt("%s      %%p = arith.mulf %%a0, %s fastmath<contract> : f32\n"
				   "      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n",
			vw, vn)});
	/* normalise, back to rows: (s, h, g, d) */
	const char *ot = em_fmt("tensor<%sx%" PRId64 "x%" PRId64 "x%" PRId64 "xf32>", R, kvh, g, hd);
	const char *o = em_generic(e,
	    &(struct gspec){.sched = "attn",
		    .hint = "attn",
		    INS({pv, qt, "d1, d2, d0, d3", "f32"}, {l, rt, "d1, d2, d0", "f32"}),
		    .otype = ot,
		    .odyn = e->R.dyn,
		    .omap = "d0, d1, d2, d3",
		    .nd = 4,
		    .iters = "parallel, parallel, parallel, parallel",
		    .body = "      %r = arith.divf %a0, %a1 : f32\n"});
	const char *res = em_val(e, "att");
	em_top(e, res, em_fmt("tensor.collapse_shape %s [[0], [1, 2, 3]]", o),
	    em_fmt(": %s into %s", ot, em_tensor2(e->R, c->n_heads * hd, "f32")));
	return res;
}

/* The KV cache of layer l, half which (0 keys, 1 values), as a memref view
 * and a writable tensor of it.  Its rows hold %P positions, the run-time
 * capacity the prologue derives from the size of %kv. */
static void
cache_view(struct em *e, int l, int which, const char **mem, const char **ten)
{
	const struct llm_model_config *c = e->c;
	int64_t plane = c->n_kv_heads * c->head_dim * (int64_t)llm_dtype_size(e->m->kv_dtype);
	/* Keys are transposed, [KVH, HD, P], and viewed with the head dim
	 * split in the halves RoPE writes; values plain, [KVH, P, HD]. */
	const char *ty = which ? em_fmt("%" PRId64 "x?x%" PRId64 "x%s", c->n_kv_heads, c->head_dim, e->kvt) :
				 em_fmt("%" PRId64 "x2x%" PRId64 "x?x%s", c->n_kv_heads, c->head_dim / 2, e->kvt);
	const char *k = em_cindex(e, which ? "vplane" : "kplane", ((int64_t)l * 2 + which) * plane);
	const char *o = em_val(e, which ? "voff" : "koff");
	em_top(e, o, em_fmt("arith.muli %%P, %s", k), ": index");

	*mem = em_val(e, which ? "vm" : "km");
	em_top(e, *mem, em_fmt("memref.view %%kv[%s][%%P]", o), em_fmt(": memref<?xi8> to memref<%s>", ty));
	*ten = em_val(e, which ? "vc" : "kc");
	em_top(e, *ten, em_fmt("bufferization.to_tensor %s restrict writable", *mem),
	    em_fmt(": memref<%s> to tensor<%s>", ty, ty));
}

/* The gated MLP's act(gate) * up, gate %a0 and up %a1: SiLU, x / (1 +
 * exp(-x)); GELU-tanh (gelu_pytorch_tanh), 0.5 x (1 + tanh(y)) with
 * y = sqrt(2/pi) (x + 0.044715 x^3), as x / (1 + exp(-2y)), the same
 * function, on the exp the pipelines make a vectorisable polynomial. */
static const char silu_body[] = "      %ng = arith.negf %a0 : f32\n"
				"      %eg = math.exp %ng : f32\n"
				"      %one = arith.constant 1.0 : f32\n"
				"      %den = arith.addf %one, %eg : f32\n"
				"      %sg = arith.divf %a0, %den : f32\n"
				"      %r = arith.mulf %sg, %a1 : f32\n";
static const char gelu_tanh_body[] = "      %k = arith.constant -1.5957691216057308 : f32\n"
				     "      %c = arith.constant 0.044715 : f32\n"
				     "      %x2 = arith.mulf %a0, %a0 : f32\n"
				     "      %x3 = arith.mulf %x2, %a0 : f32\n"
				     "      %cx3 = arith.mulf %x3, %c : f32\n"
				     "      %in = arith.addf %a0, %cx3 : f32\n"
				     "      %ny = arith.mulf %in, %k : f32\n"
				     "      %eg = math.exp %ny : f32\n"
				     "      %one = arith.constant 1.0 : f32\n"
				     "      %den = arith.addf %one, %eg : f32\n"
				     "      %sg = arith.divf %a0, %den : f32\n"
				     "      %r = arith.mulf %sg, %a1 : f32\n";

/* Rows x [R, d] in a buffer of their own, one-dimensional, for an mpi op
 * (freed by the pipelines' buffer deallocation); *mt and *ft its memref
 * and tensor types.  rows_back reads them back as [R, d]. */
static const char *
rows_buffer(struct em *e, const char *x, int64_t d, const char **mt, const char **ft)
{
	int dyn = e->R.dyn[0] != 0;
	const char *xt = em_tensor2(e->R, d, "f32"), *flat = em_val(e, "rowf"), *buf = em_val(e, "rowb");
	const char *n = dyn ? em_val(e, "rown") : "", *len = dyn ? "?" : em_fmt("%" PRId64, d);
	*ft = em_fmt("tensor<%sxf32>", len);
	*mt = em_fmt("memref<%sxf32>", len);
	if (dyn)
		em_top(e, n, em_fmt("arith.muli %%R, %s", em_cindex(e, "d", d)), ": index");
	em_top(e, flat, em_fmt("tensor.collapse_shape %s [[0, 1]]", x), em_fmt(": %s into %s", xt, *ft));
	em_top(e, buf, em_fmt("memref.alloc(%s)", n), em_fmt(": %s", *mt));
	em_top(e, NULL, em_fmt("bufferization.materialize_in_destination %s in restrict writable %s", flat, buf),
	    em_fmt(": (%s, %s) -> ()", *ft, *mt));
	return buf;
}

static const char *
rows_back(struct em *e, const char *buf, const char *mt, const char *ft, int64_t d)
{
	const char *t = em_val(e, "rowt"), *x = em_val(e, "rowx");
	em_top(e, t, em_fmt("bufferization.to_tensor %s restrict", buf), em_fmt(": %s to %s", mt, ft));
	em_top(e, x,
	    em_fmt("tensor.expand_shape %s [[0, 1]] output_shape [%s, %" PRId64 "]", t, e->R.dyn[0] ? "%R" : "1", d),
	    em_fmt(": %s into %s", ft, em_tensor2(e->R, d, "f32")));
	return x;
}

/* Tensor parallelism (m->tp ranks): the partial sums [R, d] of o's or
 * down's product on every rank added up, the same sum on all of them
 * (MPI_Allreduce in place, through the mpi dialect; ir.txt "Tensor
 * parallel"). */
static const char *
allreduce(struct em *e, const char *x, int64_t d)
{
	if (e->m->tp < 2)
		return x;
	const char *mt, *ft, *buf = rows_buffer(e, x, d, &mt, &ft), *comm = em_val(e, "comm");
	em_top(e, comm, "mpi.comm_world", ": !mpi.comm");
	em_top(e, NULL, em_fmt("mpi.allreduce(%s, %s, MPI_SUM, %s)", buf, buf, comm), em_fmt(": %s, %s", mt, mt));
	return rows_back(e, buf, mt, ft, d);
}

/* Pipeline parallelism (m->pp ranks, each its range of the layers): a
 * message between ranks, buffer buf of type mt, inside an scf.if on this
 * rank's number (a top-level op whose region's ops carry no llm.id).
 * op "recv" from peer, or "send" to it, where the rank compares with
 * than by pred; peer is the rank plus delta, or peer_abs when delta is 0. */
static void
pp_message(struct em *e, const char *op, const char *buf, const char *mt, const char *pred, int64_t than, int delta,
    int64_t peer_abs)
{
	const char *comm = em_val(e, "comm"), *rank = em_val(e, "rank"), *k = em_val(e, "rk"), *c = em_val(e, "is");
	em_top(e, comm, "mpi.comm_world", ": !mpi.comm");
	em_top(e, rank, em_fmt("mpi.comm_rank(%s)", comm), ": i32");
	em_top(e, k, "arith.constant", em_fmt("%" PRId64 " : i32", than));
	em_top(e, c, em_fmt("arith.cmpi %s, %s, %s", pred, rank, k), ": i32");
	const char *peer = delta ? em_fmt("      %%d = arith.constant %d : i32\n"
					  "      %%peer = arith.addi %s, %%d : i32\n",
				       delta, rank) :
				   em_fmt("      %%peer = arith.constant %" PRId64 " : i32\n", peer_abs);
	llm_buf_printf(e->b,
	    "    scf.if %s {\n"
	    "      %%tag = arith.constant 0 : i32\n"
	    "%s"
	    "      mpi.%s(%s, %%tag, %%peer, %s) : %s, i32, i32\n"
	    "    } {%s}\n",
	    c, peer, op, buf, comm, mt, em_attrs(e));
}

/* The rows x [R, d] through a buffer of their own: received from the
 * rank before (every rank but the first), or sent to the rank after
 * (every rank but the last). */
static const char *
pp_rows(struct em *e, const char *x, int64_t d, int send)
{
	const char *mt, *ft, *buf = rows_buffer(e, x, d, &mt, &ft);
	if (send) {
		pp_message(e, "send", buf, mt, "slt", e->m->pp - 1, 1, 0);
		return x;
	}
	pp_message(e, "recv", buf, mt, "sgt", 0, -1, 0);
	return rows_back(e, buf, mt, ft, d);
}

static const char *
layer(struct em *e, const char *x, int l)
{
	const struct llm_model_config *c = e->c;
	int64_t d = c->hidden_size, hd = c->head_dim, h2 = hd / 2, kvh = c->n_kv_heads, C = e->m->max_context;
	const char *R = e->R.t, *Rd = e->R.dyn[0] ? "%R" : "1";

	e->layer = l;
	e->stage = "attn";
	const char *h = rmsnorm(e, x, e->R, wname(l, LLM_ROLE_ATTN_NORM));
	int bias = llm_role_present(LLM_ROLE_BQ, c);
	const char *qkv[3];
	linears(e, h, e->R, d, 3, (const char *[]){wname(l, LLM_ROLE_WQ), wname(l, LLM_ROLE_WK), wname(l, LLM_ROLE_WV)},
	    (const char *[]){bias ? wname(l, LLM_ROLE_BQ) : NULL, bias ? wname(l, LLM_ROLE_BK) : NULL,
		    bias ? wname(l, LLM_ROLE_BV) : NULL},
	    qkv);
	const char *q = qkv[0], *k = qkv[1], *v = qkv[2];
	if (c->qk_norm) {
		q = headnorm(e, q, c->n_heads, wname(l, LLM_ROLE_QNORM));
		k = headnorm(e, k, kvh, wname(l, LLM_ROLE_KNORM));
	}

	/* RoPE rows pos .. pos+R-1 of the tables */
	const char *tt = em_fmt("tensor<%" PRId64 "x%" PRId64 "xf32>", C, h2);
	const char *st = em_fmt("tensor<%sx%" PRId64 "xf32>", R, h2);
	/* a local layer (gemma3) has its own RoPE base, and the window */
	int local = llm_layer_local(c, l), own = local && c->rope_local_theta;
	const char *cosT = wview(e, own ? LLM_TENSOR_ROPE_LOCAL_COS : LLM_TENSOR_ROPE_COS, NULL),
		   *sinT = wview(e, own ? LLM_TENSOR_ROPE_LOCAL_SIN : LLM_TENSOR_ROPE_SIN, NULL);
	const char *cs = em_val(e, "cos"), *sn = em_val(e, "sin");
	em_top(e, cs, em_fmt("tensor.extract_slice %s[%%pos, 0] [%s, %" PRId64 "] [1, 1]", cosT, Rd, h2),
	    em_fmt(": %s to %s", tt, st));
	em_top(e, sn, em_fmt("tensor.extract_slice %s[%%pos, 0] [%s, %" PRId64 "] [1, 1]", sinT, Rd, h2),
	    em_fmt(": %s to %s", tt, st));
	/* The cache views come first, so that the ops producing the new
	 * rows can write straight into the cache (eliminate-empty-tensors). */
	const char *km, *kc, *vm, *vc;
	cache_view(e, l, 0, &km, &kc);
	cache_view(e, l, 1, &vm, &vc);
	const char *qr = rope(e, q, cs, sn, 1);
	const char *kr = rope(e, k, cs, sn, 0);

	/* v [R, KVH*HD] -> [KVH, R, HD] in the cache type */
	const char *v3 = em_val(e, "v3"), *v3t = em_fmt("tensor<%sx%" PRId64 "x%" PRId64 "xf32>", R, kvh, hd);
	em_top(e, v3,
	    em_fmt("tensor.expand_shape %s [[0], [1, 2]] output_shape [%s, %" PRId64 ", %" PRId64 "]", v, Rd, kvh, hd),
	    em_fmt(": %s into %s", em_tensor2(e->R, kvh * hd, "f32"), v3t));
	const char *vtt = em_fmt("tensor<%" PRId64 "x%sx%" PRId64 "x%s>", kvh, R, hd, e->kvt);
	const char *vr = em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "vt",
		    INS({v3, v3t, "d1, d0, d2", "f32"}),
		    .otype = vtt,
		    .odyn = e->R.dyn,
		    .omap = "d0, d1, d2",
		    .nd = 3,
		    .iters = "parallel, parallel, parallel",
		    .body = strcmp(e->kvt, "f32") == 0 ?
			"      %zb = arith.constant -0.0 : f32\n      %r = arith.addf %a0, %zb : f32\n" :
			em_fmt("      %%r = arith.truncf %%a0 : f32 to %s\n", e->kvt)});

	/* Write the chunk's keys and values into the cache in place. */
	const char *ct = em_fmt("tensor<%" PRId64 "x?x%" PRId64 "x%s>", kvh, hd, e->kvt);
	const char *ctk = em_fmt("tensor<%" PRId64 "x%" PRId64 "x?x%s>", kvh, hd, e->kvt);
	const char *ct4 = em_fmt("tensor<%" PRId64 "x2x%" PRId64 "x?x%s>", kvh, h2, e->kvt);
	const char *ktt = em_fmt("tensor<%" PRId64 "x2x%" PRId64 "x%sx%s>", kvh, h2, R, e->kvt);
	const char *kc2 = em_val(e, "kc"), *vc2 = em_val(e, "vc"), *kall = em_val(e, "kall");
	em_top(e, kc2,
	    em_fmt("tensor.insert_slice %s into %s[0, 0, 0, %%pos] [%" PRId64 ", 2, %" PRId64 ", %s] [1, 1, 1, 1]", kr,
		kc, kvh, h2, Rd),
	    em_fmt(": %s into %s", ktt, ct4));
	em_top(e, vc2,
	    em_fmt("tensor.insert_slice %s into %s[0, %%pos, 0] [%" PRId64 ", %s, %" PRId64 "] [1, 1, 1]", vr, vc, kvh,
		Rd, hd),
	    em_fmt(": %s into %s", vtt, ct));
	em_top(e, kall, em_fmt("tensor.collapse_shape %s [[0], [1, 2], [3]]", kc2), em_fmt(": %s into %s", ct4, ctk));
	const char *att = attention(e, qr, kall, vc2, local ? c->sliding_window : 0);
	em_top(e, NULL, em_fmt("bufferization.materialize_in_destination %s in restrict writable %s", kc2, km),
	    em_fmt(": (%s, memref<%s) -> ()", ct4, ct4 + strlen("tensor<")));
	em_top(e, NULL, em_fmt("bufferization.materialize_in_destination %s in restrict writable %s", vc2, vm),
	    em_fmt(": (%s, memref<%s) -> ()", ct, ct + strlen("tensor<")));
	const char *o = allreduce(e, linear(e, att, e->R, c->n_heads * hd, wname(l, LLM_ROLE_WO), NULL, "matmul"), d);
	if (c->post_norms)
		o = rmsnorm(e, o, e->R, wname(l, LLM_ROLE_ATTN_POST_NORM));
	x = add(e, x, o, e->R, d);

	e->stage = "mlp";
	int64_t f = c->intermediate_size;
	const char *h2n = rmsnorm(e, x, e->R, wname(l, LLM_ROLE_FFN_NORM));
	const char *gu[2];
	linears(e, h2n, e->R, d, 2, (const char *[]){wname(l, LLM_ROLE_WGATE), wname(l, LLM_ROLE_WUP)},
	    (const char *[]){NULL, NULL}, gu);
	const char *gt = gu[0], *up = gu[1];
	const char *ft = em_tensor2(e->R, f, "f32");
	const char *act = em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "swiglu",
		    INS({gt, ft, "d0, d1", "f32"}, {up, ft, "d0, d1", "f32"}),
		    .otype = ft,
		    .odyn = e->R.dyn,
		    .omap = "d0, d1",
		    .nd = 2,
		    .iters = "parallel, parallel",
		    .body = c->act == LLM_ACT_GELU_TANH ? gelu_tanh_body : silu_body});
	const char *dn = allreduce(e, linear(e, act, e->R, f, wname(l, LLM_ROLE_WDOWN), NULL, "matmul"), d);
	if (c->post_norms)
		dn = rmsnorm(e, dn, e->R, wname(l, LLM_ROLE_FFN_POST_NORM));
	return add(e, x, dn, e->R, d);
}

/* The head of embed: the final norm of every row, [R * d] into %logits
 * (phase.h LLM_OUT_HIDDEN). */
static void
head_hidden(struct em *e, const char *x)
{
	int64_t d = e->c->hidden_size;
	const char *hn = rmsnorm(e, x, e->R, llm_role_runtime(LLM_ROLE_FINAL_NORM));
	const char *hc = em_val(e, "hid"), *nd = em_val(e, "hidn");
	em_top(e, hc, em_fmt("tensor.collapse_shape %s [[0, 1]]", hn),
	    em_fmt(": %s into tensor<?xf32>", em_tensor2(e->R, d, "f32")));
	em_top(e, nd, em_fmt("arith.muli %%R, %s", em_cindex(e, "d", d)), ": index");
	em_top(e, "%hidm", em_fmt("memref.subview %%logits[0] [%s] [1]", nd), ": memref<?xf32> to memref<?xf32>");
	em_top(e, NULL, em_fmt("bufferization.materialize_in_destination %s in restrict writable %%hidm", hc),
	    ": (tensor<?xf32>, memref<?xf32>) -> ()");
	if (e->m->pp > 1) {
		/* the last rank's rows are rank 0's, as the logits are */
		pp_message(e, "send", "%hidm", "memref<?xf32>", "eq", e->m->pp - 1, 0, 0);
		pp_message(e, "recv", "%hidm", "memref<?xf32>", "eq", 0, 0, e->m->pp - 1);
	}
}

/* The head of the other phases: final norm and LM head on the last valid
 * row only, V logits into %logits. */
static void
head_logits(struct em *e, const char *x)
{
	const struct llm_model_config *c = e->c;
	int64_t d = c->hidden_size, V = c->vocab_size;
	struct rows one = {"1", ""};
	em_top(e, "%last", "arith.subi %R, %c1", ": index");
	const char *xl = em_val(e, "xlast");
	em_top(e, xl, em_fmt("tensor.extract_slice %s[%%last, 0] [1, %" PRId64 "] [1, 1]", x, d),
	    em_fmt(": %s to tensor<1x%" PRId64 "xf32>", em_tensor2(e->R, d, "f32"), d));
	const char *hn = rmsnorm(e, xl, one, llm_role_runtime(LLM_ROLE_FINAL_NORM));
	enum llm_role head = llm_role_present(LLM_ROLE_LM_HEAD, c) ? LLM_ROLE_LM_HEAD : LLM_ROLE_EMBED;
	const char *lg = linear(e, hn, one, d, llm_role_runtime(head), NULL, "head");
	const char *lc = em_val(e, "lg");
	em_top(e, lc, em_fmt("tensor.collapse_shape %s [[0, 1]]", lg),
	    em_fmt(": tensor<1x%" PRId64 "xf32> into tensor<%" PRId64 "xf32>", V, V));
	em_top(e, "%lgm", em_fmt("memref.subview %%logits[0] [%" PRId64 "] [1]", V),
	    em_fmt(": memref<?xf32> to memref<%" PRId64 "xf32>", V));
	em_top(e, NULL, em_fmt("bufferization.materialize_in_destination %s in restrict writable %%lgm", lc),
	    em_fmt(": (tensor<%" PRId64 "xf32>, memref<%" PRId64 "xf32>) -> ()", V, V));
	if (e->m->pp > 1) {
		/* the last rank's logits are rank 0's (every rank computes the
		 * head; only the last one's input is the model's last layer's) */
		const char *lt = em_fmt("memref<%" PRId64 "xf32>", V);
		pp_message(e, "send", "%lgm", lt, "eq", e->m->pp - 1, 0, 0);
		pp_message(e, "recv", "%lgm", lt, "eq", 0, 0, e->m->pp - 1);
	}
}

/* The module's opening and the entry's signature (the phase ABI), then
 * the prologue: positions, the rows R, the cache's positions P and the
 * tokens as a tensor (its type in *ttt). */
static void
prologue(struct em *e, const struct llm_phase *ph, int decode, const char **ttt)
{
	struct llm_buf *b = e->b;
	const struct llm_model *m = e->m;
	const struct llm_model_config *c = e->c;

	llm_buf_printf(b, "// %s of a %s model (%s): generated by llm-import; see share/doc/llm/ir.txt\n", ph->name,
	    m->family, m->architecture);
	/* the MPI library's ABI the mpi dialect's ops lower to (model.h) */
	llm_buf_printf(b, "module%s {\n  func.func @%s(",
	    llm_model_ranks(m) > 1 ?
		" attributes {dlti.map = #dlti.map<\"MPI:Implementation\" = \"" LLM_MPI_IMPLEMENTATION "\">}" :
		"",
	    ph->entry);
	for (int i = 0; i < LLM_PHASE_NARGS; i++)
		llm_buf_printf(b, "%s%%%s: %s", i ? ", " : "", llm_phase_args[i].ssa, llm_phase_args[i].type);
	llm_buf_puts(b, ") attributes {llvm.emit_c_interface} {\n");

	em_top(e, "%c1", "arith.constant", "1 : index");
	em_top(e, "%pos", "arith.index_cast %pos_i", ": i64 to index");
	if (decode)
		em_top(e, "%R", "arith.constant", "1 : index");
	else
		em_top(e, "%R", "arith.index_cast %n_tokens", ": i64 to index");
	em_top(e, "%L", "arith.addi %pos, %R", ": index");
	/* The positions a row of the cache holds, P: %kv is 2 L KVH HD P
	 * elements of the kv dtype (the caller's -c; the RoPE tables cover
	 * max_context, the bound of P). */
	em_top(e, "%c0", "arith.constant", "0 : index");
	em_top(e, "%kvbytes", "memref.dim", "%kv, %c0 : memref<?xi8>"); /* attr-dict first */
	const char *row = em_cindex(e, "kvrow",
	    2 * (int64_t)c->n_layers * c->n_kv_heads * c->head_dim * (int64_t)llm_dtype_size(m->kv_dtype));
	em_top(e, "%P", em_fmt("arith.divui %%kvbytes, %s", row), ": index");
	const char *tmt = em_fmt("memref<%sxi64>", e->R.t);
	*ttt = em_fmt("tensor<%sxi64>", e->R.t);
	em_top(e, "%tokm", em_fmt("memref.subview %%tokens[0] [%s] [1]", decode ? "1" : "%R"),
	    em_fmt(": memref<?xi64> to %s", tmt));
	em_top(e, "%tok", "bufferization.to_tensor %tokm restrict", em_fmt(": %s to %s", tmt, *ttt));
}

/* The embedding: the rows of the tokens %tok (of type ttt), dense or
 * from a tiled layout, times embed_scale where it is not 1. */
static const char *
embedding(struct em *e, const char *ttt)
{
	const struct llm_model *m = e->m;
	const struct llm_model_config *c = e->c;
	int64_t d = c->hidden_size, V = c->vocab_size;

	const struct llm_plan_tensor *pe = llm_model_tensor(m, llm_role_runtime(LLM_ROLE_EMBED));
	const char *x;
	if (pe && pe->layout)
		x = em_qgather(e, pe, ttt);
	else {
		const char *et, *emb = wview(e, llm_role_runtime(LLM_ROLE_EMBED), &et);
		const char *en, *ew = em_widen("%wb", et, "%r", &en);
		x = em_generic(e,
		    &(struct gspec){.sched = "gather",
			    .hint = "x",
			    .otype = em_tensor2(e->R, d, "f32"),
			    .odyn = e->R.dyn,
			    .omap = "d0, d1",
			    .nd = 2,
			    .iters = "parallel, parallel",
			    .body = em_fmt("      %%si = linalg.index 0 : index\n"
					   "      %%j = linalg.index 1 : index\n"
					   "      %%id = tensor.extract %%tok[%%si] : %s\n"
					   "      %%ii = arith.index_cast %%id : i64 to index\n"
					   "      %%wb = tensor.extract %s[%%ii, %%j] : tensor<%" PRId64 "x%" PRId64
					   "x%s>\n"
					   "%s%s",
				ttt, emb, V, d, et, ew,
				*ew ?
				    "" :
				    "      %zb = arith.constant -0.0 : f32\n      %r = arith.addf %wb, %zb : f32\n")});
	}

	if (c->embed_scale && c->embed_scale != 1)
		/* gemma3: the rows times sqrt(hidden) */
		x = em_generic(e,
		    &(struct gspec){.sched = "eltwise",
			    .hint = "xs",
			    INS({x, em_tensor2(e->R, d, "f32"), "d0, d1", "f32"}),
			    .otype = em_tensor2(e->R, d, "f32"),
			    .odyn = e->R.dyn,
			    .omap = "d0, d1",
			    .nd = 2,
			    .iters = "parallel, parallel",
			    .body = em_fmt("      %%s = arith.constant %s : f32\n"
					   "      %%r = arith.mulf %%a0, %%s : f32\n",
				em_real(c->embed_scale))});
	return x;
}

/* The decoder layers over the rows x, between the pipeline's messages
 * (the rows from the rank before, to the rank after). */
static const char *
layers(struct em *e, const char *x)
{
	int64_t d = e->c->hidden_size;

	if (e->m->pp > 1) /* the rows the rank before computed */
		x = pp_rows(e, x, d, 0);
	for (int l = 0; l < e->c->n_layers; l++)
		x = layer(e, x, l);
	if (e->m->pp > 1) /* to the rank after */
		x = pp_rows(e, x, d, 1);
	return x;
}

/* The head: the final norm and the logits of the last row, or every
 * row's hidden state (ps->out), then the entry's return. */
static void
head(struct em *e, const char *x, const struct llm_phase_spec *ps)
{
	e->layer = LAYER_POST;
	e->stage = "head";
	if (ps && ps->out == LLM_OUT_HIDDEN)
		head_hidden(e, x);
	else
		head_logits(e, x);
	em_top(e, NULL, "func.return", "");
	llm_buf_puts(e->b, "  }\n");
}

/* The module's tail: the kernels the products call, declared (llm-lower
 * defines them for the target), the runtime's MPI functions in decode's
 * module, and the plan fingerprint. */
static void
module_tail(struct em *e, const struct llm_phase *ph, int decode)
{
	struct llm_buf *b = e->b;
	const struct llm_model *m = e->m;

	/* The kernels, defined by llm-lower for the target (kernels.h). */
	for (int k = 0; k < LLM_NKERNEL; k++)
		if (e->kernels & 1u << k)
			llm_buf_printf(b, "  llvm.func @%s%s\n", llm_kernels[k].name, llm_kernels[k].type);

	/* The runtime's side of MPI (runtime.c), in decode's module: start
	 * it (this rank's number; MPI_Comm_size has no lowering in MLIR 22,
	 * the ranks are the sum of ones), and in-place reductions of i64
	 * vectors (a broadcast from rank 0 is a sum with zeros elsewhere;
	 * the ranks' bundles and plans agree when min equals max). */
	if (llm_model_ranks(m) > 1 && decode) {
		llm_buf_puts(b,
		    "  func.func @llm_mpi_init() -> i64 attributes {llvm.emit_c_interface} {\n"
		    "    %e = mpi.init : !mpi.retval\n"
		    "    %w = mpi.comm_world : !mpi.comm\n"
		    "    %r = mpi.comm_rank(%w) : i32\n"
		    "    %r64 = arith.extsi %r : i32 to i64\n"
		    "    func.return %r64 : i64\n  }\n"
		    "  func.func @llm_mpi_finalize() attributes {llvm.emit_c_interface} {\n"
		    "    %e = mpi.finalize : !mpi.retval\n"
		    "    func.return\n  }\n");
		static const char *const ops[][2] = {{"sum", "MPI_SUM"}, {"min", "MPI_MIN"}, {"max", "MPI_MAX"}};
		for (size_t i = 0; i < LLM_NELEM(ops); i++)
			llm_buf_printf(b,
			    "  func.func @llm_mpi_%s(%%v: memref<?xi64>) attributes {llvm.emit_c_interface} {\n"
			    "    %%w = mpi.comm_world : !mpi.comm\n"
			    "    mpi.allreduce(%%v, %%v, %s, %%w) : memref<?xi64>, memref<?xi64>\n"
			    "    func.return\n  }\n",
			    ops[i][0], ops[i][1]);
	}

	/* The plan fingerprint, so the runtime can refuse other weights. */
	llm_buf_printf(b,
	    "  func.func @%s_fingerprint() -> i64 attributes {llvm.emit_c_interface} {\n"
	    "    %%f = arith.constant %" PRId64 " : i64\n"
	    "    func.return %%f : i64\n  }\n}\n",
	    ph->entry, (int64_t)m->fingerprint);
}

int
llm_emit_phase(struct llm_buf *b, const struct llm_model *m, const struct llm_phase *ph)
{
	struct em e = {0};
	struct llm_model_config rc; /* one rank's (llm_model_rank_config) */
	llm_model_rank_config(m, &rc);
	const struct llm_model_config *c = &rc;
	const struct llm_phase_spec *ps = llm_phase_spec_by_name(ph->name);
	int decode = ph->tokens == 1 && ps && ps->single;

	e.b = b;
	e.m = m;
	e.c = c;
	e.R = decode ? (struct rows){"1", ""} : (struct rows){"?", "%R"};
	e.wt = llm_dtype_name(m->weight_dtype);
	e.kvt = llm_dtype_name(m->kv_dtype);
	e.layer = LAYER_PRE;
	for (size_t i = 0; i < m->ntensors; i++) /* i4 codes the int8 kernels read (Q4_0) */
		e.xk |= m->tensors[i].layout && m->tensors[i].ql.code == LLM_QCODE_I4 && em_qa8(&m->tensors[i]);
	e.stage = "embed";

	const char *ttt;
	prologue(&e, ph, decode, &ttt);
	const char *x = embedding(&e, ttt);
	x = layers(&e, x);
	head(&e, x, ps);
	module_tail(&e, ph, decode);
	em_pool_free();
	return 0;
}
