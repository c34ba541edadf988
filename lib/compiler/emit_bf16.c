/* emit_bf16.c: the products with bf16 weights under dtypes.activations
 * "bf16" (emit_int.h): x rounded to bf16 and the products on the bf16
 * kernel (ir.txt "Kernels", "Activations"). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* x [R, k] rounded to bf16 (to nearest, ties to even: arith.truncf), the
 * activations of the products with bf16 weights under dtypes.activations
 * "bf16" (ir.txt "Activations"); a product of the same x reuses it. */
static const char *
bround(struct em *e, const char *x, struct rows r, int64_t k)
{
	if (e->bx && strcmp(e->bx, x) == 0)
		return e->bxr;
	e->bx = x;
	e->bxr = em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "xb",
		    INS({x, em_tensor2(r, k, "f32"), "d0, d1", "f32"}),
		    .otype = em_tensor2(r, k, "bf16"),
		    .odyn = r.dyn,
		    .omap = "d0, d1",
		    .nd = 2,
		    .iters = "parallel, parallel",
		    .body = "      %r = arith.truncf %a0 : f32 to bf16\n"});
	return e->bxr;
}

/* x rounded to bf16 and widened back, in f32: what the products that
 * em_bdot() does not take multiply with their bf16 weights. */
const char *
em_bwiden(struct em *e, const char *x, struct rows r, int64_t k)
{
	const char *t = em_tensor2(r, k, "f32");
	return em_generic(e,
	    &(struct gspec){.sched = "eltwise",
		    .hint = "xbf",
		    INS({x, t, "d0, d1", "f32"}),
		    .otype = t,
		    .odyn = r.dyn,
		    .omap = "d0, d1",
		    .nd = 2,
		    .iters = "parallel, parallel",
		    .body = "      %t = arith.truncf %a0 : f32 to bf16\n      %r = arith.extf %t : bf16 to f32\n"});
}

/* One W of em_bdot() */
struct bd {
	int64_t n, c0;         /* rows, first chunk */
	const char *w, *wt;    /* W as [n/64, 8, 8, k] bf16 */
	const char *bias, *bt; /* the bias as [n/64, 8, 8], its element type */
	const char *xb, *xt;   /* x in bf16, its type */
	const char *st;        /* the chunk's y: tensor<Rx8x8xf32> (stream, row) */
};

/* The sums of the 16 lanes of each of the 8 accumulators acc[s] as one
 * vector<8xf32> (lane s), in a tree of shuffles: pairs of vectors that
 * hold p accumulators in groups of g lanes become one that holds 2p in
 * groups of g/2 (the first halves of the groups plus the second halves),
 * then the last vector's even lanes plus its odd lanes. */
static const char *
bsum(struct llm_buf *b, int j, const char *const *acc)
{
	const char *cur[8], *v16 = "vector<16xf32>";
	int n = 8, g = 16, lv = 0;
	for (int s = 0; s < 8; s++)
		cur[s] = acc[s];
	for (; n > 1; n /= 2, g /= 2, lv++) {
		struct llm_buf m[2] = {{0}, {0}};
		for (int half = 0; half < 2; half++)
			for (int side = 0; side < 2; side++)
				for (int grp = 0; grp < 16 / g; grp++)
					for (int l = 0; l < g / 2; l++)
						llm_buf_printf(&m[half], "%s%d", m[half].len ? ", " : "",
						    16 * side + grp * g + half * g / 2 + l);
		for (int i = 0; i < n / 2; i++) {
			const char *u = cur[2 * i], *v = cur[2 * i + 1];
			for (int half = 0; half < 2; half++)
				em_ln(b, 8, "%%_q%d_%d_%d_%d = vector.shuffle %s, %s [%s] : %s, %s", j, lv, i, half, u,
				    v, m[half].p, v16, v16);
			em_ln(b, 8, "%%_u%d_%d_%d = arith.addf %%_q%d_%d_%d_0, %%_q%d_%d_%d_1 : %s", j, lv, i, j, lv, i,
			    j, lv, i, v16);
			cur[i] = em_fmt("%%_u%d_%d_%d", j, lv, i);
		}
		llm_buf_free(&m[0]);
		llm_buf_free(&m[1]);
	}
	em_ln(b, 8, "%%_ye%d = vector.shuffle %s, %s [0, 2, 4, 6, 8, 10, 12, 14] : %s, %s", j, cur[0], cur[0], v16,
	    v16);
	em_ln(b, 8, "%%_yo%d = vector.shuffle %s, %s [1, 3, 5, 7, 9, 11, 13, 15] : %s, %s", j, cur[0], cur[0], v16,
	    v16);
	em_ln(b, 8, "%%_yv%d = arith.addf %%_ye%d, %%_yo%d : vector<8xf32>", j, j, j);
	return em_fmt("%%_yv%d", j);
}

/* nr rows of x from %_r at row %_h of each stream of chunk %_t: the k
 * loop of 8 * nr accumulators of the bf16 kernel, then each row's 8
 * sums (+ the bias) written into %_ot at [row, 0..7, %_h]. */
static void
bdot_pass(struct llm_buf *b, const struct bd *d, int nr)
{
	const char *v16 = "vector<16xf32>", *b32 = "vector<32xbf16>";
	const char *kty = em_fmt("(%s, %s, %s) -> %s", v16, b32, b32, v16);
	struct llm_buf accs = {0}, tys = {0}, outs = {0};
	for (int j = 0; j < nr; j++) {
		em_ln(b, 8, "%%_cr%d = arith.constant %d : index", j, j);
		em_ln(b, 8, "%%_r%d = arith.addi %%_r, %%_cr%d : index", j, j);
		for (int s = 0; s < 8; s++) {
			llm_buf_printf(&accs, "%s%%_a%d_%d = %%_zf", accs.len ? ", " : "", j, s);
			llm_buf_printf(&tys, "%s%s", tys.len ? ", " : "", v16);
			llm_buf_printf(&outs, "%s%%_n%d_%d", outs.len ? ", " : "", j, s);
		}
	}
	em_ln(b, 8, "%%_res:%d = scf.for %%_kk = %%_c0 to %%_k step %%_c32 iter_args(%s) -> (%s) {", 8 * nr, accs.p,
	    tys.p);
	for (int j = 0; j < nr; j++)
		em_rd(b, 10, em_fmt("%%_x%d", j), d->xb, em_fmt("%%_r%d, %%_kk", j), "%_bz", d->xt, b32);
	for (int s = 0; s < 8; s++) {
		em_rd(b, 10, em_fmt("%%_w%d", s), d->w, em_fmt("%%_t, %%_s%d, %%_h, %%_kk", s), "%_bz", d->wt, b32);
		for (int j = 0; j < nr; j++)
			em_ln(b, 10, "%%_n%d_%d = llvm.call @llm_bdot(%%_a%d_%d, %%_w%d, %%_x%d) : %s", j, s, j, s, s,
			    j, kty);
	}
	em_ln(b, 10, "scf.yield %s : %s", outs.p, tys.p);
	em_ln(b, 8, "}");
	const char *ot = "%_ot";
	for (int j = 0; j < nr; j++) {
		const char *acc[8];
		for (int s = 0; s < 8; s++)
			acc[s] = em_fmt("%%_res#%d", 8 * j + s);
		const char *yv = bsum(b, j, acc);
		if (d->bias) {
			em_ln(b, 8, "%%_yb%d = arith.addf %s, %%_bf : vector<8xf32>", j, yv);
			yv = em_fmt("%%_yb%d", j);
		}
		em_ln(b, 8,
		    "%%_ot_%d = vector.transfer_write %s, %s[%%_r%d, %%_c0, %%_h] {in_bounds = [true], "
		    "permutation_map = affine_map<(d0, d1, d2) -> (d1)>} : vector<8xf32>, %s",
		    j, yv, ot, j, d->st);
		ot = em_fmt("%%_ot_%d", j);
	}
	em_ln(b, 8, "scf.yield %s : %s", ot, d->st);
	llm_buf_free(&accs);
	llm_buf_free(&tys);
	llm_buf_free(&outs);
}

/* em_row_passes' pass for bdot */
static void
bdot_rows(struct llm_buf *b, const void *arg, int nr)
{
	bdot_pass(b, arg, nr);
}

/* The chunk %_t = %_c - c0 of one W of bdot: from %_os, the chunk's y as
 * %_ow, row h of every stream at a time; in each, the rows of x two or
 * three at a time (prefill.three_rows; three: 24 accumulators, 11 loads a
 * step, BENCHMARKS.md "Three rows of x a pass"), then one. */
static void
bdot_chunk(struct llm_buf *b, const struct bd *d, struct rows rw)
{
	em_ln(b, 6, "%%_ts = arith.constant %" PRId64 " : index", d->c0);
	em_ln(b, 6, "%%_t = arith.subi %%_c, %%_ts : index");
	em_ln(b, 6, "%%_ow = scf.for %%_h = %%_c0 to %%_c8 step %%_c1 iter_args(%%_oh = %%_os) -> (%s) {", d->st);
	if (d->bias) {
		/* the 8 streams' biases at row h, as f32 in %_bf */
		int wide = strcmp(d->bt, "f32") != 0;
		em_ln(b, 8, "%%_bpad = arith.constant 0.0 : %s", d->bt);
		em_ln(b, 8,
		    "%s = vector.transfer_read %s[%%_t, %%_c0, %%_h], %%_bpad {in_bounds = [true], "
		    "permutation_map = affine_map<(d0, d1, d2) -> (d1)>} : tensor<%" PRId64 "x8x8x%s>, vector<8x%s>",
		    wide ? "%_bv" : "%_bf", d->bias, d->n / GEMV_CHUNK, d->bt, d->bt);
		if (wide)
			em_ln(b, 8, "%%_bf = arith.extf %%_bv : vector<8x%s> to vector<8xf32>", d->bt);
	}
	em_row_passes(b, 8, rw, "%_oh", d->st, "%_ow1", 0, bdot_rows, d);
	em_ln(b, 8, "scf.yield %%_ow1 : %s", d->st);
	em_ln(b, 6, "}");
}

/* tile_chain's body for bdot: W_i's chunk */
struct bchunks {
	const struct bd *d;
	struct rows rw;
};

static void
bdot_chunks(struct llm_buf *b, int i, void *arg)
{
	struct bchunks *c = arg;
	bdot_chunk(b, &c->d[i], c->rw);
}

/* y_i [R, n_i] = x [R, k] . W_i[n_i, k]^T (+ bias_i[n_i]), i < nw, with
 * bf16 weights and activations (dtypes.activations "bf16"): x rounded to
 * bf16 (bround), and products of pairs summed in f32 by the target's
 * kernel (llm_bdot, ir.txt "Kernels": vdpbf16ps on AVX512-BF16).  One
 * scf.forall over the chunks of 64 rows of all the W_i (one barrier for
 * the products of the same x), each W viewed as emit.c's gemv() views it, [n/64,
 * 8, 8, k] (chunk, stream, row of the stream): row h of the 8 streams at
 * a time, so that each stream runs on through the chunk's rows, and per
 * row of x 8 accumulators of 16 lanes over k, summed in a tree (bsum).
 * With R = 1 (decode) a chunk streams through its W once; with more rows
 * (prefill) the 8 rows of W at one h (8 * 2k bytes) stay in the cache for
 * every three rows of x.  Each y_i is the slice of the whole y that
 * its chunks wrote. */
void
em_bdot(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char **y)
{
	int64_t k = pt[0]->shape[1], nc = 0, first[3], n[3];
	struct bd d[3];
	const char *xb = bround(e, x, rw, k), *R = rw.dyn[0] ? "%R" : "1";
	const char *st = em_fmt("tensor<%sx8x8xf32>", rw.t);
	for (int i = 0; i < nw; i++) {
		int64_t c = pt[i]->shape[0] / GEMV_CHUNK;
		const char *wt;
		d[i] = (struct bd){.n = pt[i]->shape[0], .c0 = nc, .xb = xb, .xt = em_tensor2(rw, k, "bf16"), .st = st};
		d[i].w = em_wview_as(e, pt[i]->name, em_fmt("%" PRId64 "x8x8x%" PRId64 "x", c, k), &wt);
		d[i].wt = em_fmt("tensor<%" PRId64 "x8x8x%" PRId64 "xbf16>", c, k);
		d[i].bias = b_name[i] ? em_wview_as(e, b_name[i], em_fmt("%" PRId64 "x8x8x", c), &d[i].bt) : NULL;
		first[i] = nc;
		n[i] = d[i].n;
		nc += c;
	}
	const char *yt = em_fmt("tensor<%sx%" PRId64 "x8x8xf32>", rw.t, nc), *init = em_val(e, "bi"),
		   *ya = em_val(e, "bd");
	const char *yc = em_val(e, "bdc"), *yct = em_tensor2(rw, nc * GEMV_CHUNK, "f32");
	em_top(e, init, em_fmt("tensor.empty(%s)", rw.dyn), em_fmt(": %s", yt));
	e->kernels |= 1u << LLM_KERNEL_BDOT;

	/* prefill: beside the row passes, the tile products, the tuning
	 * table choosing (as em_qdot does) */
	int tiles = rw.dyn[0] != 0;
	for (int i = 0; i < nw; i++)
		tiles &= em_btile_ok(pt[i]);
	const char *tt = NULL;
	if (tiles) {
		const char *init2 = em_val(e, "bti");
		em_top(e, init2, "tensor.empty(%R)", em_fmt(": %s", yct));
		tt = em_btile(e, xb, rw, nw, pt, b_name, init2, yct);
	}
	struct llm_buf b = {0};
	if (tiles)
		em_tiles_open(&b, yc, yct, "prefill.bf16_tiles", tt);
	em_ln(&b, 4, "%s = scf.forall (%%_c) in (%" PRId64 ") shared_outs(%%_o = %s) -> (%s) {", ya, nc, init, yt);
	static const int consts[] = {0, 1, 2, 3, 8, 32};
	for (size_t c = 0; c < LLM_NELEM(consts); c++)
		em_ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[c], consts[c]);
	for (int s = 0; s < 8; s++)
		em_ln(&b, 6, "%%_s%d = arith.constant %d : index", s, s);
	em_ln(&b, 6, "%%_k = arith.constant %" PRId64 " : index", k);
	em_ln(&b, 6, "%%_bz = arith.constant 0.0 : bf16");
	em_ln(&b, 6, "%%_zf = arith.constant dense<0.0> : vector<16xf32>");
	em_ln(&b, 6, "%%_os = tensor.extract_slice %%_o[0, %%_c, 0, 0] [%s, 1, 8, 8] [1, 1, 1, 1] : %s to %s", R, yt,
	    st);
	struct bchunks bc = {d, rw};
	const char *yo = em_tile_chain(&b, "%_c", nw, first, st, bdot_chunks, &bc);
	em_ln(&b, 6, "scf.forall.in_parallel {");
	em_ln(&b, 8, "tensor.parallel_insert_slice %s into %%_o[0, %%_c, 0, 0] [%s, 1, 8, 8] [1, 1, 1, 1] : %s into %s",
	    yo, R, st, yt);
	em_ln(&b, 6, "}");
	if (tiles) {
		em_ln(&b, 4, "}");
		em_ln(&b, 6, "%%_bc = tensor.collapse_shape %s [[0], [1, 2, 3]] : %s into %s", ya, yt, yct);
		em_tiles_close(e, &b, "%_bc", yct);
	} else
		em_ln(&b, 4, "} {%s}", em_attrs(e));
	llm_buf_puts(e->b, b.p);
	llm_buf_free(&b);
	if (!tiles)
		em_top(e, yc, em_fmt("tensor.collapse_shape %s [[0], [1, 2, 3]]", ya), em_fmt(": %s into %s", yt, yct));
	em_split_y(e, yc, yct, rw, nw, n, y);
}
