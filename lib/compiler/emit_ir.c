/* emit_ir.c: the emitter's ground floor (emit_int.h): the MLIR text
 * primitives (the string pool, value names, top-level ops with their
 * llm.* attributes, linalg.generic, views of the weights, a product's
 * initialiser) and the row and tile machinery of the kernels' products
 * (region lines, scf.forall bodies over tiles, row passes, the tuning
 * switch between tiles and rows).  It calls nothing of the floors above. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit_int.h"

/* The strings of one module (value names, types, op text) live in a
 * pool freed when the module is written. */
static char **pool;
static size_t npool, cappool;

const char *
em_keep(char *p)
{
	if (npool == cappool) {
		cappool = cappool ? 2 * cappool : 1024;
		pool = llm_xreallocarray(pool, cappool, sizeof(*pool));
	}
	return pool[npool++] = p;
}

void
em_pool_free(void)
{
	for (size_t i = 0; i < npool; i++)
		free(pool[i]);
	free(pool);
	pool = NULL;
	npool = cappool = 0;
}

const char *
em_fmt(const char *f, ...)
{
	struct llm_buf b = {0};
	va_list ap;

	va_start(ap, f);
	llm_buf_vprintf(&b, f, ap);
	va_end(ap);
	return em_keep(b.p);
}

/* A fresh value name: the hint and a number, with a "_" between them
 * when the hint ends in a digit ("q5" + 72 must not be "q" + 572). */
const char *
em_val(struct em *e, const char *hint)
{
	size_t n = strlen(hint);
	return em_fmt("%%%s%s%d", hint, n && hint[n - 1] >= '0' && hint[n - 1] <= '9' ? "_" : "", e->nval++);
}

const char *
em_attrs(struct em *e)
{
	return em_fmt("llm.id = %" PRId64 " : i64, llm.layer = %d : i64, llm.stage = \"%s\"", e->id++, e->layer,
	    e->stage);
}

/* A top-level op: "lhs = pre {attrs} post". */
void
em_top(struct em *e, const char *lhs, const char *pre, const char *post)
{
	llm_buf_printf(e->b, "    %s%s%s {%s} %s\n", lhs ? lhs : "", lhs ? " = " : "", pre, em_attrs(e), post);
}

const char *
em_cindex(struct em *e, const char *hint, int64_t v)
{
	const char *r = em_val(e, hint);
	em_top(e, r, "arith.constant", em_fmt("%" PRId64 " : index", v));
	return r;
}

const char *
em_tensor2(struct rows r, int64_t n, const char *t)
{
	return em_fmt("tensor<%sx%" PRId64 "x%s>", r.t, n, t);
}

static const char *
elt_of(enum llm_dtype t)
{
	return llm_dtype_name(t);
}

/* Code widening a value of element type t to f32 inside a body; *name
 * receives the f32 value (v itself when t is f32: no code). */
const char *
em_widen(const char *v, const char *t, const char *res, const char **name)
{
	if (strcmp(t, "f32") == 0) {
		*name = v;
		return "";
	}
	*name = res;
	return em_fmt("      %s = arith.extf %s : %s to f32\n", res, v, t);
}

/* The element type of a tensor type: what follows the last 'x'. */
static const char *
elt_of_type(const char *type)
{
	const char *x = strrchr(type, 'x');
	size_t n = strlen(x + 1);
	return em_fmt("%.*s", (int)(n - 1), x + 1);
}

static const char *
affine(int nd, const char *res)
{
	struct llm_buf b = {0};
	llm_buf_puts(&b, "affine_map<(");
	for (int i = 0; i < nd; i++)
		llm_buf_printf(&b, "%sd%d", i ? ", " : "", i);
	llm_buf_printf(&b, ") -> (%s)>", res);
	return em_keep(b.p);
}

/* generic is in WhitespaceSensitiveMacros (.clang-format): clang-format would join the next two lines */
/* clang-format off */
const char *
em_generic(struct em *e, const struct gspec *g)
/* clang-format on */
{
	struct llm_buf b = {0};
	const char *r = em_val(e, g->hint), *init = g->init;

	if (!init) {
		init = em_val(e, "init");
		em_top(e, init, em_fmt("tensor.empty(%s)", g->odyn), em_fmt(": %s", g->otype));
	}
	llm_buf_puts(&b, "linalg.generic {indexing_maps = [");
	for (int i = 0; i < g->nin; i++)
		llm_buf_printf(&b, "%s, ", affine(g->nd, g->in[i].map));
	llm_buf_printf(&b, "%s], iterator_types = [", affine(g->nd, g->omap));
	/* Quote each iterator type. */
	char *its = llm_xstrdup(g->iters), *save = NULL;
	int first = 1;
	for (char *t = strtok_r(its, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		llm_buf_printf(&b, "%s\"%s\"", first ? "" : ", ", t);
		first = 0;
	}
	free(its);
	llm_buf_puts(&b, "]}");
	if (g->nin) {
		llm_buf_puts(&b, " ins(");
		for (int i = 0; i < g->nin; i++)
			llm_buf_printf(&b, "%s%s", i ? ", " : "", g->in[i].v);
		llm_buf_puts(&b, " : ");
		for (int i = 0; i < g->nin; i++)
			llm_buf_printf(&b, "%s%s", i ? ", " : "", g->in[i].type);
		llm_buf_puts(&b, ")");
	}
	llm_buf_printf(&b, " outs(%s : %s)", init, g->otype);
	llm_buf_printf(e->b, "    %s = %s attrs = {%s, llm.sched = \"%s\"} {\n    ^bb0(", r, b.p, em_attrs(e),
	    g->sched);
	for (int i = 0; i < g->nin; i++)
		llm_buf_printf(e->b, "%%a%d: %s, ", i, g->in[i].elt);
	llm_buf_printf(e->b, "%%o: %s):\n%s      linalg.yield %%r : %s\n    } -> %s\n", elt_of_type(g->otype), g->body,
	    elt_of_type(g->otype), g->otype);
	llm_buf_free(&b);
	return r;
}

/* A memref of type ty ("memref<8x32xi8>") viewing the weights at byte
 * offset off of the data area. */
const char *
em_mview_at(struct em *e, uint64_t off, const char *ty)
{
	const char *o = em_cindex(e, "off", (int64_t)off), *mv = em_val(e, "wm");
	em_top(e, mv, em_fmt("memref.view %%weights[%s][]", o), em_fmt(": memref<?xi8> to %s", ty));
	return mv;
}

/* A tensor of type ty (shape and element: "8x32xi8") viewing the weights
 * at byte offset off of the data area. */
const char *
em_view_at(struct em *e, uint64_t off, const char *ty)
{
	const char *mv = em_mview_at(e, off, em_fmt("memref<%s>", ty)), *tv = em_val(e, "w");
	em_top(e, tv, em_fmt("bufferization.to_tensor %s restrict", mv), em_fmt(": memref<%s> to tensor<%s>", ty, ty));
	return tv;
}

/* A typed view of the weights at the plan offset of tensor `name`, of its
 * own shape, or of `shape` ("AxBx...x", the same elements) when not NULL. */
const char *
em_wview_as(struct em *e, const char *name, const char *shape_as, const char **elt)
{
	const struct llm_plan_tensor *t = llm_model_tensor(e->m, name);
	struct llm_buf shape = {0};
	const char *ty;

	if (!t)
		llm_fatal("%s: no tensor '%s' in the weight plan", e->m->path, name);
	if (t->layout)
		llm_fatal("%s: tensor '%s' is in the tiled layout %s, not dense", e->m->path, name, t->layout);
	if (shape_as)
		llm_buf_puts(&shape, shape_as);
	else
		for (int i = 0; i < t->ndim; i++)
			llm_buf_printf(&shape, "%" PRId64 "x", t->shape[i]);
	ty = em_fmt("%s%s", shape.p, elt_of(t->dtype));
	llm_buf_free(&shape);
	if (elt)
		*elt = elt_of(t->dtype);
	return em_view_at(e, t->offset, ty);
}

/* The output initialiser of a product: zeros, or the bias `b_name`
 * viewed as `bshape` ("AxBx...x") and broadcast by `bmap`.  yt, dyn, omap,
 * nd and iters as for em_generic(). */
const char *
em_product_init(struct em *e, const char *b_name, const char *bshape, const char *bmap, const char *yt, const char *dyn,
    const char *omap, int nd, const char *iters)
{
	if (!b_name)
		return em_generic(e,
		    &(struct gspec){.sched = "fill",
			    .hint = "zero",
			    .otype = yt,
			    .odyn = dyn,
			    .omap = omap,
			    .nd = nd,
			    .iters = iters,
			    .body = "      %r = arith.constant 0.0 : f32\n"});
	const char *bt, *bv = em_wview_as(e, b_name, bshape, &bt), *bn;
	const char *code = em_widen("%a0", bt, "%r", &bn);
	/* x + -0.0 == x for every x: the body forwards the bias. */
	return em_generic(e,
	    &(struct gspec){.sched = "fill",
		    .hint = "bias",
		    INS({bv, em_fmt("tensor<%s%s>", bshape, bt), bmap, bt}),
		    .otype = yt,
		    .odyn = dyn,
		    .omap = omap,
		    .nd = nd,
		    .iters = iters,
		    .body = *code ? code :
				    "      %zb = arith.constant -0.0 : f32\n      %r = arith.addf %a0, %zb : f32\n"});
}
/* One line of a region's text: `ind` spaces, then the format. */
/* ln is in WhitespaceSensitiveMacros (.clang-format): clang-format would join the next two lines */
/* clang-format off */
void
em_ln(struct llm_buf *b, int ind, const char *f, ...)
/* clang-format on */
{
	va_list ap;

	llm_buf_printf(b, "%*s", ind, "");
	va_start(ap, f);
	llm_buf_vprintf(b, f, ap);
	va_end(ap);
	llm_buf_puts(b, "\n");
}

/* A vector read "res = vector.transfer_read src[idx], pad" of vt from
 * the tensor of type st, in bounds. */
void
em_rd(struct llm_buf *b, int ind, const char *res, const char *src, const char *idx, const char *pad, const char *st,
    const char *vt)
{
	em_ln(b, ind, "%s = vector.transfer_read %s[%s], %s {in_bounds = [true]} : %s, %s", res, src, idx, pad, st, vt);
}

/* The lane indices 0 .. n - 1, `times` times over: a shuffle that repeats
 * an n-element vector into n * times. */
const char *
em_lanes(int n, int times)
{
	struct llm_buf b = {0};
	for (int i = 0; i < n * times; i++)
		llm_buf_printf(&b, "%s%d", i ? ", " : "", i % n);
	return em_keep(b.p);
}

/* The row passes of a product's tile or chunk over the rows [0, R) of x
 * (rw; one row where it is static), each pass(b, arg, n) reading %_r
 * and %_ot (type st) and yielding %_ot with rows %_r .. %_r + n - 1
 * added: n rows a pass, then one at a time, from init into res.  n 0:
 * two or three, as the tunable prefill.three_rows says (an
 * scf.index_switch that llm-lower's constant folds away). */
void
em_row_passes(struct llm_buf *b, int ind, struct rows rw, const char *init, const char *st, const char *res, int n,
    void (*pass)(struct llm_buf *, const void *, int), const void *arg)
{
	if (!rw.dyn[0]) {
		em_ln(b, ind, "%s = scf.for %%_r = %%_c0 to %%_c1 step %%_c1 iter_args(%%_ot = %s) -> (%s) {", res,
		    init, st);
		pass(b, arg, 1);
		em_ln(b, ind, "}");
		return;
	}
	if (n == 0) {
		em_ln(b, ind,
		    "%%_nr3 = arith.constant {llm.tune = \"prefill.three_rows\", llm.tune_unit = 1 : i64} 0 : index");
		em_ln(b, ind, "%s = scf.index_switch %%_nr3 -> %s", res, st);
		for (int c = 1; c >= 0; c--) {
			em_ln(b, ind, c ? "case 1 {" : "default {");
			em_row_passes(b, ind + 2, rw, init, st, "%_owc", c ? 3 : 2, pass, arg);
			em_ln(b, ind + 2, "scf.yield %%_owc : %s", st);
			em_ln(b, ind, "}");
		}
		return;
	}
	em_ln(b, ind, "%%_rh = arith.divui %%R, %%_c%d : index", n);
	em_ln(b, ind, "%%_rp = arith.muli %%_rh, %%_c%d : index", n);
	em_ln(b, ind, "%%_owm = scf.for %%_r = %%_c0 to %%_rp step %%_c%d iter_args(%%_ot = %s) -> (%s) {", n, init,
	    st);
	pass(b, arg, n);
	em_ln(b, ind, "}");
	em_ln(b, ind, "%s = scf.for %%_r = %%_rp to %%R step %%_c1 iter_args(%%_ot = %%_owm) -> (%s) {", res, st);
	pass(b, arg, 1);
	em_ln(b, ind, "}");
}

/* The body of a product over the tiles (or chunks) of nw W_i in one
 * scf.forall: an scf.if chain on the tile index iv that runs W_i's body
 * (body(b, i, arg), which leaves the tile's y in %_ow of type st) for the
 * tiles below W_{i+1}'s first, first[i + 1].  The tile's y is %_yi0, or
 * %_ow for one W. */
const char *
em_tile_chain(struct llm_buf *b, const char *iv, int nw, const int64_t *first, const char *st,
    void (*body)(struct llm_buf *, int, void *), void *arg)
{
	for (int i = 0; i < nw; i++) {
		if (i + 1 < nw) {
			em_ln(b, 6, "%%_te%d = arith.constant %" PRId64 " : index", i, first[i + 1]);
			em_ln(b, 6, "%%_in%d = arith.cmpi ult, %s, %%_te%d : index", i, iv, i);
			em_ln(b, 6, "%%_yi%d = scf.if %%_in%d -> (%s) {", i, i, st);
		}
		body(b, i, arg);
		if (i + 1 < nw) {
			em_ln(b, 6, "scf.yield %%_ow : %s", st);
			em_ln(b, 6, "} else {");
		}
	}
	for (int i = nw - 2; i >= 0; i--) {
		em_ln(b, 6, "scf.yield %s : %s", i == nw - 2 ? "%_ow" : em_fmt("%%_yi%d", i + 1), st);
		em_ln(b, 6, "}");
	}
	return nw > 1 ? "%_yi0" : "%_ow";
}

/* y_i, i < nw: the slices of n[i] columns of the products' y [R, N] (of
 * type yt), one after the other; y itself for one. */
void
em_split_y(struct em *e, const char *ya, const char *yt, struct rows rw, int nw, const int64_t *n, const char **y)
{
	int64_t off = 0;
	for (int i = 0; i < nw; off += n[i], i++) {
		if (nw == 1) {
			y[i] = ya;
			break;
		}
		y[i] = em_val(e, "ys");
		em_top(e, y[i],
		    em_fmt("tensor.extract_slice %s[0, %" PRId64 "] [%s, %" PRId64 "] [1, 1]", ya, off,
			rw.dyn[0] ? "%R" : "1", n[i]),
		    em_fmt(": %s to %s", yt, em_tensor2(rw, n[i], "f32")));
	}
}
/* The choice between a product's tile form (text tt, which yields the
 * result) and its row passes, which the caller writes next, yielding
 * their result (em_tiles_close): an scf.execute_region res of type ty
 * holding the tunable constant param (tune.h) and an scf.index_switch on
 * it, which the lowering folds. */
void
em_tiles_open(struct llm_buf *b, const char *res, const char *ty, const char *param, const char *tt)
{
	em_ln(b, 4, "%s = scf.execute_region -> (%s) {", res, ty);
	em_ln(b, 6, "%%_tiles = arith.constant {llm.tune = \"%s\", llm.tune_unit = 1 : i64} 0 : index", param);
	em_ln(b, 6, "%%_sw = scf.index_switch %%_tiles -> %s", ty);
	em_ln(b, 6, "case 1 {");
	llm_buf_puts(b, tt);
	em_ln(b, 6, "}");
	em_ln(b, 6, "default {");
}

/* The row passes' result rows yielded, and the region closed with the
 * product's attributes. */
void
em_tiles_close(struct em *e, struct llm_buf *b, const char *rows, const char *ty)
{
	em_ln(b, 6, "scf.yield %s : %s", rows, ty);
	em_ln(b, 6, "}");
	em_ln(b, 6, "scf.yield %%_sw : %s", ty);
	em_ln(b, 4, "} {%s}", em_attrs(e));
}
