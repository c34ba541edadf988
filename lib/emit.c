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
 * cost follows the current length, not the context size. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "family.h"

/* Layer numbers for ops outside the decoder layers. */
#define LAYER_PRE (-1)
#define LAYER_POST (-2)

struct rows {
	const char *t;   /* in a type: "?" or "1" */
	const char *dyn; /* operand of tensor.empty for it: "%R" or "" */
};

struct qact {
	const char *x, *xq, *xs4, *dx, *xsum; /* x, and what qact() made of it */
	const char *xk;                       /* with em.xk: -8 * the sums of the codes a 4-bit piece's lanes meet */
};

struct em {
	struct llm_buf *b;
	const struct llm_model *m;
	const struct llm_model_config *c;
	struct rows R; /* rows of the chunk */
	int64_t id;    /* next llm.id */
	int layer;
	const char *stage;
	int nval;
	const char *wt;       /* weight element type */
	const char *kvt;      /* KV cache element type */
	struct qact qa;       /* the activations last quantized (qact) */
	int xk;               /* the plan has i4 codes in groups of 32 (Q4_0): qact makes qa.xk */
	int qdot;             /* the int8 kernels are called */
	const char *bx, *bxr; /* the activations last rounded to bf16, and
	                       * the rounding (bround) */
	int bdot;             /* the bf16 kernel is called */
};

/* The strings of one module (value names, types, op text) live in a
 * pool freed when the module is written. */
static char **pool;
static size_t npool, cappool;

static const char *
keep(char *p)
{
	if (npool == cappool) {
		cappool = cappool ? 2 * cappool : 1024;
		pool = llm_xreallocarray(pool, cappool, sizeof(*pool));
	}
	return pool[npool++] = p;
}

static void
pool_free(void)
{
	for (size_t i = 0; i < npool; i++)
		free(pool[i]);
	free(pool);
	pool = NULL;
	npool = cappool = 0;
}

static const char *
fmt(const char *f, ...)
{
	struct llm_buf b = {0};
	va_list ap;

	va_start(ap, f);
	llm_buf_vprintf(&b, f, ap);
	va_end(ap);
	return keep(b.p);
}

/* A fresh value name: the hint and a number, with a "_" between them
 * when the hint ends in a digit ("q5" + 72 must not be "q" + 572). */
static const char *
val(struct em *e, const char *hint)
{
	size_t n = strlen(hint);
	return fmt("%%%s%s%d", hint, n && hint[n - 1] >= '0' && hint[n - 1] <= '9' ? "_" : "", e->nval++);
}

static const char *
attrs(struct em *e)
{
	return fmt("llm.id = %" PRId64 " : i64, llm.layer = %d : i64, llm.stage = \"%s\"", e->id++, e->layer, e->stage);
}

/* A top-level op: "lhs = pre {attrs} post". */
static void
top(struct em *e, const char *lhs, const char *pre, const char *post)
{
	llm_buf_printf(e->b, "    %s%s%s {%s} %s\n", lhs ? lhs : "", lhs ? " = " : "", pre, attrs(e), post);
}

static const char *
cindex(struct em *e, const char *hint, int64_t v)
{
	const char *r = val(e, hint);
	top(e, r, "arith.constant", fmt("%" PRId64 " : index", v));
	return r;
}

static const char *
tensor2(struct rows r, int64_t n, const char *t)
{
	return fmt("tensor<%sx%" PRId64 "x%s>", r.t, n, t);
}

static const char *
elt_of(enum llm_dtype t)
{
	return llm_dtype_name(t);
}

/* Code widening a value of element type t to f32 inside a body; *name
 * receives the f32 value (v itself when t is f32: no code). */
static const char *
widen(const char *v, const char *t, const char *res, const char **name)
{
	if (strcmp(t, "f32") == 0) {
		*name = v;
		return "";
	}
	*name = res;
	return fmt("      %s = arith.extf %s : %s to f32\n", res, v, t);
}

/* The element type of a tensor type: what follows the last 'x'. */
static const char *
elt_of_type(const char *type)
{
	const char *x = strrchr(type, 'x');
	size_t n = strlen(x + 1);
	return fmt("%.*s", (int)(n - 1), x + 1);
}

struct gin {
	const char *v, *type, *map, *elt;
};

static const char *
affine(int nd, const char *res)
{
	struct llm_buf b = {0};
	llm_buf_puts(&b, "affine_map<(");
	for (int i = 0; i < nd; i++)
		llm_buf_printf(&b, "%sd%d", i ? ", " : "", i);
	llm_buf_printf(&b, ") -> (%s)>", res);
	return keep(b.p);
}

/* A linalg.generic: nin inputs in[] (INS() gives both), into init, the
 * out operand, or, when NULL, a fresh tensor.empty(odyn) of type otype;
 * omap the out operand's map over nd loops; iters their comma-separated
 * "parallel" / "reduction"; body lines defining %r from %a0.. and %o;
 * sched the llm.sched class (ir.txt) and hint the result's name. */
struct gspec {
	const char *sched, *hint;
	int nin;
	const struct gin *in;
	const char *init, *otype, *odyn, *omap;
	int nd;
	const char *iters, *body;
};
#define INS(...) .in = (const struct gin[]){__VA_ARGS__}, \
	.nin = (int)(sizeof((const struct gin[]){__VA_ARGS__}) / sizeof(struct gin))

/* generic is in WhitespaceSensitiveMacros (.clang-format): clang-format would join the next two lines */
/* clang-format off */
static const char *
generic(struct em *e, const struct gspec *g)
/* clang-format on */
{
	struct llm_buf b = {0};
	const char *r = val(e, g->hint), *init = g->init;

	if (!init) {
		init = val(e, "init");
		top(e, init, fmt("tensor.empty(%s)", g->odyn), fmt(": %s", g->otype));
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
	llm_buf_printf(e->b, "    %s = %s attrs = {%s, llm.sched = \"%s\"} {\n    ^bb0(", r, b.p, attrs(e), g->sched);
	for (int i = 0; i < g->nin; i++)
		llm_buf_printf(e->b, "%%a%d: %s, ", i, g->in[i].elt);
	llm_buf_printf(e->b, "%%o: %s):\n%s      linalg.yield %%r : %s\n    } -> %s\n", elt_of_type(g->otype), g->body,
	    elt_of_type(g->otype), g->otype);
	llm_buf_free(&b);
	return r;
}

/* A memref of type ty ("memref<8x32xi8>") viewing the weights at byte
 * offset off of the data area. */
static const char *
mview_at(struct em *e, uint64_t off, const char *ty)
{
	const char *o = cindex(e, "off", (int64_t)off), *mv = val(e, "wm");
	top(e, mv, fmt("memref.view %%weights[%s][]", o), fmt(": memref<?xi8> to %s", ty));
	return mv;
}

/* A tensor of type ty (shape and element: "8x32xi8") viewing the weights
 * at byte offset off of the data area. */
static const char *
view_at(struct em *e, uint64_t off, const char *ty)
{
	const char *mv = mview_at(e, off, fmt("memref<%s>", ty)), *tv = val(e, "w");
	top(e, tv, fmt("bufferization.to_tensor %s restrict", mv), fmt(": memref<%s> to tensor<%s>", ty, ty));
	return tv;
}

/* A typed view of the weights at the plan offset of tensor `name`, of its
 * own shape, or of `shape` ("AxBx...x", the same elements) when not NULL. */
static const char *
wview_as(struct em *e, const char *name, const char *shape_as, const char **elt)
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
	ty = fmt("%s%s", shape.p, elt_of(t->dtype));
	llm_buf_free(&shape);
	if (elt)
		*elt = elt_of(t->dtype);
	return view_at(e, t->offset, ty);
}

static const char *
wview(struct em *e, const char *name, const char **elt)
{
	return wview_as(e, name, NULL, elt);
}

/* The plan's name of role r (family.h) in layer l. */
static const char *
wname(int l, enum llm_role r)
{
	return fmt(llm_role_runtime(r), l);
}

/* RMSNorm over rows r of x [r, d]: x * rsqrt(mean(x^2) + eps) * w. */
static const char *
rmsnorm_of(struct em *e, const char *x, struct rows r, int64_t d, const char *w_name)
{
	const char *wt, *w = wview(e, w_name, &wt);
	const char *xt = tensor2(r, d, "f32");
	const char *st = fmt("tensor<%sxf32>", r.t);
	const char *z, *ss, *wn;
	const char *wcode = widen("%a2", wt, "%wf", &wn);

	z = generic(e, &(struct gspec){.sched = "fill", .hint = "zss", .otype = st, .odyn = r.dyn, .omap = "d0",
	    .nd = 1, .iters = "parallel", .body = "      %r = arith.constant 0.0 : f32\n"});
	ss = generic(e, &(struct gspec){.sched = "rowsum", .hint = "ss", INS({x, xt, "d0, d1", "f32"}), .init = z,
	    .otype = st, .omap = "d0", .nd = 2, .iters = "parallel, reduction",
	    .body = "      %m = arith.mulf %a0, %a0 : f32\n"
	    "      %r = arith.addf %o, %m : f32\n"});
	return generic(e, &(struct gspec){.sched = "eltwise", .hint = "nrm",
	    INS({x, xt, "d0, d1", "f32"}, {ss, st, "d0", "f32"},
	        {w, fmt("tensor<%" PRId64 "x%s>", d, wt), "d1", wt}), .otype = xt, .odyn = r.dyn, .omap = "d0, d1",
	    .nd = 2, .iters = "parallel, parallel",
	    .body = fmt("      %%n = arith.constant %.17g : f32\n"
		"      %%eps = arith.constant %.17g : f32\n"
		"      %%ms = arith.mulf %%a1, %%n : f32\n"
		"      %%me = arith.addf %%ms, %%eps : f32\n"
		"      %%iv = math.rsqrt %%me : f32\n"
		"      %%y = arith.mulf %%a0, %%iv : f32\n"
		"%s"
		"      %%r = arith.mulf %%y, %s : f32\n",
		1.0 / (double)d, e->c->rms_norm_eps, wcode, wn)});
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
	const char *t3 = fmt("tensor<%sx%" PRId64 "x%" PRId64 "xf32>", e->R.t, nh, hd);
	struct rows rh = {e->R.dyn[0] ? "?" : fmt("%" PRId64, nh), ""};
	if (e->R.dyn[0]) {
		const char *n = cindex(e, "c", nh);
		rh.dyn = val(e, "rh");
		top(e, rh.dyn, fmt("arith.muli %%R, %s", n), ": index");
	}
	const char *x3 = val(e, "hn"), *x2 = val(e, "hn"), *y3 = val(e, "hn"), *y = val(e, "hn");
	top(e, x3,
	    fmt("tensor.expand_shape %s [[0], [1, 2]] output_shape [%s, %" PRId64 ", %" PRId64 "]", x,
		e->R.dyn[0] ? "%R" : "1", nh, hd),
	    fmt(": %s into %s", tensor2(e->R, nh * hd, "f32"), t3));
	top(e, x2, fmt("tensor.collapse_shape %s [[0, 1], [2]]", x3), fmt(": %s into %s", t3, tensor2(rh, hd, "f32")));
	const char *n2 = rmsnorm_of(e, x2, rh, hd, w_name);
	top(e, y3,
	    fmt("tensor.expand_shape %s [[0, 1], [2]] output_shape [%s, %" PRId64 ", %" PRId64 "]", n2,
		e->R.dyn[0] ? "%R" : "1", nh, hd),
	    fmt(": %s into %s", tensor2(rh, hd, "f32"), t3));
	top(e, y, fmt("tensor.collapse_shape %s [[0], [1, 2]]", y3),
	    fmt(": %s into %s", t3, tensor2(e->R, nh * hd, "f32")));
	return y;
}

/* The output initialiser of a product: zeros, or the bias `b_name`
 * viewed as `bshape` ("AxBx...x") and broadcast by `bmap`.  yt, dyn, omap,
 * nd and iters as for generic(). */
static const char *
product_init(struct em *e, const char *b_name, const char *bshape, const char *bmap, const char *yt, const char *dyn,
    const char *omap, int nd, const char *iters)
{
	if (!b_name)
		return generic(e, &(struct gspec){.sched = "fill", .hint = "zero", .otype = yt, .odyn = dyn,
		    .omap = omap, .nd = nd, .iters = iters, .body = "      %r = arith.constant 0.0 : f32\n"});
	const char *bt, *bv = wview_as(e, b_name, bshape, &bt), *bn;
	const char *code = widen("%a0", bt, "%r", &bn);
	/* x + -0.0 == x for every x: the body forwards the bias. */
	return generic(e, &(struct gspec){.sched = "fill", .hint = "bias",
	    INS({bv, fmt("tensor<%s%s>", bshape, bt), bmap, bt}), .otype = yt, .odyn = dyn, .omap = omap, .nd = nd,
	    .iters = iters,
	    .body = *code ? code : "      %zb = arith.constant -0.0 : f32\n      %r = arith.addf %a0, %zb : f32\n"});
}

/* The body of a product: o + x * widened W (%a0 = x, %a1 = W). */
static const char *
product_body(const char *wt)
{
	const char *wn, *wcode = widen("%a1", wt, "%wf", &wn);
	return fmt("%s"
		   "      %%p = arith.mulf %%a0, %s fastmath<contract> : f32\n"
		   "      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n",
	    wcode, wn);
}

/* Rows of W per GEMV chunk and per stream (see gemv).  The chunk, one
 * scf.forall iteration, is share/llm/transforms/mkscript.py's GV_NC (the
 * chunk of the other single-row products, classes matmul and head), and
 * its GV_NR divides the stream: tests/llm-lower.bats fails when they
 * disagree, or when the scripts are not what mkscript.py writes. */
#define GEMV_CHUNK 64
#define GEMV_STREAM 8

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
	const char *shape = fmt("%" PRId64 "x%" PRId64 "x%dx", nc, ns, GEMV_STREAM);
	const char *wt, *w = wview_as(e, w_name, fmt("%s%" PRId64 "x", shape, k), &wt);
	const char *yt = fmt("tensor<1x%sf32>", shape);
	const char *iters = "parallel, parallel, parallel, parallel";
	const char *init = product_init(e, b_name, shape, "d1, d2, d3", yt, "", "d0, d1, d2, d3", 4, iters);
	const char *y = generic(e, &(struct gspec){.sched = "gemv", .hint = "mv",
	    INS({x, fmt("tensor<1x%" PRId64 "xf32>", k), "d0, d4", "f32"},
	        {w, fmt("tensor<%s%" PRId64 "x%s>", shape, k, wt), "d1, d3, d2, d4", wt}), .init = init, .otype = yt,
	    .omap = "d0, d1, d3, d2", .nd = 5, .iters = "parallel, parallel, parallel, parallel, reduction",
	    .body = product_body(wt)});
	const char *yc = val(e, "mvc");
	top(e, yc, fmt("tensor.collapse_shape %s [[0], [1, 2, 3]]", y),
	    fmt(": %s into tensor<1x%" PRId64 "xf32>", yt, n));
	return yc;
}

/* The three parts of a matrix in a tiled layout (quant.h) as tensors:
 * codes [n/8, k/G, 8, G] i8 (4-bit codes: [n/8, k/G, 8, G/2], two a
 * byte), scales and (with minimums) offsets [n/8, k/G, 8] f32, at their
 * offsets inside the tensor's bytes.  B is the bytes of a group's codes
 * (G or G/2), four says the codes are nibbles. */
struct qparts {
	const char *codes, *scales, *mins;
	const char *ct, *st;             /* their tensor types */
	const char *se;                  /* the scales' and offsets' element type: f32, f16, or i8 ("-sub8") */
	const char *sd, *md, *dt;        /* "-sub8": the blocks' d and -dmin [n/8, k/256, 8] f16, their type */
	const char *pc, *pct, *ps, *pst; /* prefetch: codes [nt*ng, pieces*64] and scales [nt*ng, R] memrefs, types */
	int64_t nt, ng, R, G, B, gpb;    /* gpb: "-sub8" groups a block */
	int four, code, sub;
};

/* The facts of t's layout, without the views. */
static struct qparts
qinfo(const struct llm_plan_tensor *t)
{
	struct qparts q = {0};
	q.R = t->ql.rows;
	q.G = t->ql.group;
	q.code = t->ql.code;
	q.four = q.code != LLM_QCODE_I8;
	q.B = q.four ? q.G / 2 : q.G;
	q.nt = t->shape[0] / q.R;
	q.ng = t->shape[1] / q.G;
	q.sub = t->ql.sub;
	q.gpb = LLM_QSUPER / q.G;
	q.se = t->ql.sub ? "i8" : t->ql.half ? "f16" : "f32";
	return q;
}

/* The views of t's parts; with pieces > 0 the codes are viewed as
 * [n/8, k/G, pieces, 64] (64-byte pieces of the same bytes). */
static struct qparts
qview_as(struct em *e, const struct llm_plan_tensor *t, int pieces)
{
	struct qparts q = qinfo(t);
	int64_t n = t->shape[0], k = t->shape[1];
	const char *cs = pieces ? fmt("%" PRId64 "x%" PRId64 "x%dx64xi8", q.nt, q.ng, pieces) :
				  fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 "xi8", q.nt, q.ng, q.R, q.B);
	const char *ss = fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "x%s", q.nt, q.ng, q.R, q.se);
	q.ct = fmt("tensor<%s>", cs);
	q.st = fmt("tensor<%s>", ss);
	q.codes = view_at(e, t->offset, cs);
	q.scales = view_at(e, t->offset + llm_qlayout_scales_at(&t->ql, n, k), ss);
	if (pieces) {
		q.pct = fmt("memref<%" PRId64 "x%dxi8>", q.nt * q.ng, pieces * 64);
		q.pst = fmt("memref<%" PRId64 "x%" PRId64 "x%s>", q.nt * q.ng, q.R, q.se);
		q.pc = mview_at(e, t->offset, q.pct);
		q.ps = mview_at(e, t->offset + llm_qlayout_scales_at(&t->ql, n, k), q.pst);
	}
	q.mins = t->ql.mins ? view_at(e, t->offset + llm_qlayout_mins_at(&t->ql, n, k), ss) : NULL;
	if (q.sub) {
		uint64_t sup = llm_qlayout_super_at(&t->ql, n, k);
		const char *ds = fmt("%" PRId64 "x%" PRId64 "x%" PRId64 "xf16", q.nt, k / LLM_QSUPER, q.R);
		q.dt = fmt("tensor<%s>", ds);
		q.sd = view_at(e, t->offset + llm_qlayout_scales_at(&t->ql, n, k) + sup, ds);
		q.md = t->ql.mins ? view_at(e, t->offset + llm_qlayout_mins_at(&t->ql, n, k) + sup, ds) : NULL;
	}
	return q;
}

static struct qparts
qview(struct em *e, const struct llm_plan_tensor *t)
{
	return qview_as(e, t, 0);
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
	return qview_as(e, t, 0);
}

/* The weight value `res` of a code in a body: s * sitofp(q) (+ m), with
 * code, sc and mn the names of the code byte, scale and offset (mn NULL:
 * none); each operation rounded, as ggml decodes (lib/quant.c): the
 * weights are exactly the decoded ones.  Codes of 4 bits take the low
 * nibble where the index value `half` is 0 and the high one where it is 1
 * (minus 8 for i4 codes). */
static const char *
qvalue(const struct qparts *q, const char *code, const char *sc, const char *mn, const char *half, const char *res)
{
	const char *pre = "";
	if (strcmp(q->se, "f16") == 0) {
		/* f16 scales and offsets widen exactly */
		pre = fmt("      %%sw = arith.extf %s : f16 to f32\n%s", sc,
		    mn ? fmt("      %%mw = arith.extf %s : f16 to f32\n", mn) : "");
		sc = "%sw";
		mn = mn ? "%mw" : NULL;
	}
	if (q->four) {
		pre = fmt("%s      %%h0 = arith.constant 0 : index\n"
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
		return fmt("%s      %%qf = arith.sitofp %s : i8 to f32\n"
			   "      %s = arith.mulf %s, %%qf : f32\n",
		    pre, code, res, sc);
	return fmt("%s      %%qf = arith.sitofp %s : i8 to f32\n"
		   "      %%qs = arith.mulf %s, %%qf : f32\n"
		   "      %s = arith.addf %%qs, %s : f32\n",
	    pre, code, sc, res, mn);
}

/* The same for a generic whose operands %aQ, %aS, %aM (am < 0: none) are
 * the code, scale and offset, dimension `half` the nibble. */
static const char *
qvalue_body(const struct qparts *q, int aq, int as, int am, int half, const char *res)
{
	return fmt("%s%s", q->four ? fmt("      %%hf = linalg.index %d : index\n", half) : "",
	    qvalue(q, fmt("%%a%d", aq), fmt("%%a%d", as), am >= 0 ? fmt("%%a%d", am) : NULL, "%hf", res));
}

/* In a body at tile %t, group %g, row %h: the scale (or offset) `res` of
 * the part `part` (with "-sub8", the product of the block's f16 factor in
 * sd and the group's integer, in f32, as ggml rounds it). */
static const char *
qfactor(const struct qparts *q, const char *part, const char *sd, const char *res)
{
	if (!q->sub)
		return fmt("      %s = tensor.extract %s[%%t, %%g, %%h] : %s\n", res, part, q->st);
	return fmt("      %s_i = tensor.extract %s[%%t, %%g, %%h] : %s\n"
		   "      %s_n = arith.constant %" PRId64 " : index\n"
		   "      %s_b = arith.divui %%g, %s_n : index\n"
		   "      %s_h = tensor.extract %s[%%t, %s_b, %%h] : %s\n"
		   "      %s_d = arith.extf %s_h : f16 to f32\n"
		   "      %s_f = arith.sitofp %s_i : i8 to f32\n"
		   "      %s = arith.mulf %s_d, %s_f : f32\n",
	    res, part, q->st, res, q->gpb, res, res, res, sd, res, q->dt, res, res, res, res, res, res, res);
}

/* The embedding rows of the tokens %tok (ttt, R rows) from a tiled layout:
 * class "gather" over [R, K/G, G] (4-bit: [R, K/G, 2, G/2]), each value
 * decoded from its tile (token v: tile v/8, row v%8), collapsed to [R, K]. */
static const char *
qgather(struct em *e, const struct llm_plan_tensor *pt, const char *ttt)
{
	int64_t k = pt->shape[1];
	struct qparts q = qview(e, pt), qf = q;
	const char *lanes = q.four ? fmt("2x%" PRId64, q.B) : fmt("%" PRId64, q.G);
	const char *ot = fmt("tensor<%sx%" PRId64 "x%sxf32>", e->R.t, q.ng, lanes);
	if (q.sub)
		qf.se = "f32"; /* qfactor computes them in f32 */
	const char *body = fmt("      %%si = linalg.index 0 : index\n"
			       "      %%g = linalg.index 1 : index\n"
			       "      %%j = linalg.index %d : index\n"
			       "%s"
			       "      %%id = tensor.extract %%tok[%%si] : %s\n"
			       "      %%ii = arith.index_cast %%id : i64 to index\n"
			       "      %%c8i = arith.constant 8 : index\n"
			       "      %%t = arith.divui %%ii, %%c8i : index\n"
			       "      %%h = arith.remui %%ii, %%c8i : index\n"
			       "      %%wb = tensor.extract %s[%%t, %%g, %%h, %%j] : %s\n"
			       "%s"
			       "%s"
			       "%s",
	    q.four ? 3 : 2, q.four ? "      %hf = linalg.index 2 : index\n" : "", ttt, q.codes, q.ct,
	    qfactor(&q, q.scales, q.sd, "%ws"), q.mins ? qfactor(&q, q.mins, q.md, "%wm") : "",
	    qvalue(&qf, "%wb", "%ws", q.mins ? "%wm" : NULL, "%hf", "%r"));
	const char *x = generic(e, &(struct gspec){.sched = "gather", .hint = "x", .otype = ot, .odyn = e->R.dyn,
	    .omap = q.four ? "d0, d1, d2, d3" : "d0, d1, d2", .nd = q.four ? 4 : 3,
	    .iters = q.four ? "parallel, parallel, parallel, parallel" : "parallel, parallel, parallel",
	    .body = body});
	const char *xc = val(e, "xc");
	top(e, xc, fmt("tensor.collapse_shape %s [[0], [1, 2%s]]", x, q.four ? ", 3" : ""),
	    fmt(": %s into %s", ot, tensor2(e->R, k, "f32")));
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
static const char *
qgemv(struct em *e, const char *x, const struct llm_plan_tensor *pt, const char *b_name)
{
	int64_t n = pt->shape[0], k = pt->shape[1];
	struct qparts q = qview_float(e, pt);
	const char *xe = val(e, "qx");
	/* lanes: "G" or "2xG/2" */
	const char *lanes = q.four ? fmt("2x%" PRId64, q.B) : fmt("%" PRId64, q.G);
	const char *xt = fmt("tensor<1x%" PRId64 "x%sxf32>", q.ng, lanes);
	top(e, xe,
	    fmt("tensor.expand_shape %s [[0], [1, 2%s]] output_shape [1, %" PRId64 ", %s]", x, q.four ? ", 3" : "",
		q.ng, q.four ? fmt("2, %" PRId64, q.B) : fmt("%" PRId64, q.G)),
	    fmt(": tensor<1x%" PRId64 "xf32> into %s", k, xt));
	/* With 4-bit codes the halves of x's groups are two operands, each
	 * read as one vector of G/2 (a [2, G/2] read of the expanded x is
	 * folded wrongly back onto the [1, K] buffer by MLIR 22's
	 * fold_memref_alias_ops, which reads two rows of it). */
	const char *xlo = NULL, *xhi = NULL, *xht = fmt("tensor<1x%" PRId64 "x%" PRId64 "xf32>", q.ng, q.B);
	if (q.four) {
		xlo = val(e, "qxl");
		xhi = val(e, "qxh");
		top(e, xlo,
		    fmt("tensor.extract_slice %s[0, 0, 0, 0] [1, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", xe, q.ng,
			q.B),
		    fmt(": %s to %s", xt, xht));
		top(e, xhi,
		    fmt("tensor.extract_slice %s[0, 0, 1, 0] [1, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", xe, q.ng,
			q.B),
		    fmt(": %s to %s", xt, xht));
	}
	const char *at = fmt("tensor<1x%" PRId64 "x%" PRId64 "x%sxf32>", q.nt, q.R, lanes);
	int nd = q.four ? 6 : 5;
	const char *az = generic(e, &(struct gspec){.sched = "qfill", .hint = "qz", .otype = at, .odyn = "",
	    .omap = q.four ? "d0, d1, d2, d3, d4" : "d0, d1, d2, d3", .nd = nd - 1,
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
	const char *acc = generic(e, &(struct gspec){.sched = "qmv", .hint = "qa",
	    .nin = c0 + (q.mins ? 3 : 2), .in = q.four ? in4 : in8, .init = az, .otype = at,
	    .omap = q.four ? "d0, d1, d3, d4, d5" : "d0, d1, d3, d4", .nd = nd,
	    .iters = q.four ? "parallel, parallel, reduction, parallel, parallel, parallel" :
		     "parallel, parallel, reduction, parallel, parallel",
	    .body = fmt("%s%s      %%p = arith.mulf %s, %%wq fastmath<contract> : f32\n"
		"      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n",
		qvalue_body(&q, c0, c0 + 1, q.mins ? c0 + 2 : -1, 4, "%wq"),
		q.four ? "      %xv = arith.select %lo0, %a0, %a1 : f32\n" : "", q.four ? "%xv" : "%a0")});
	const char *shape = fmt("%" PRId64 "x%" PRId64 "x", q.nt, q.R);
	const char *yt = fmt("tensor<1x%sf32>", shape);
	const char *init = product_init(e, b_name, shape, "d1, d2", yt, "", "d0, d1, d2", 3,
	    "parallel, parallel, parallel");
	const char *y = generic(e, &(struct gspec){.sched = "qsum", .hint = "qy",
	    INS({acc, at, q.four ? "d0, d1, d2, d3, d4" : "d0, d1, d2, d3", "f32"}), .init = init, .otype = yt,
	    .omap = "d0, d1, d2", .nd = nd - 1,
	    .iters = q.four ? "parallel, parallel, parallel, reduction, reduction" :
		"parallel, parallel, parallel, reduction",
	    .body = "      %r = arith.addf %o, %a0 : f32\n"});
	const char *yc = val(e, "qyc");
	top(e, yc, fmt("tensor.collapse_shape %s [[0], [1, 2]]", y), fmt(": %s into tensor<1x%" PRId64 "xf32>", yt, n));
	return yc;
}

/* One line of a region's text: `ind` spaces, then the format. */
/* ln is in WhitespaceSensitiveMacros (.clang-format): clang-format would join the next two lines */
/* clang-format off */
static void
ln(struct llm_buf *b, int ind, const char *f, ...)
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
static void
rd(struct llm_buf *b, int ind, const char *res, const char *src, const char *idx, const char *pad, const char *st,
    const char *vt)
{
	ln(b, ind, "%s = vector.transfer_read %s[%s], %s {in_bounds = [true]} : %s, %s", res, src, idx, pad, st, vt);
}

/* Activations quantized for the products with quantized weights (the
 * plan's dtypes.activations "q8", as llama.cpp quantizes them to Q8_0,
 * with an f32 scale): each block of 32 of a row of x becomes
 * x^ = d * q, d = max|x| / 127, q = roundeven(x * (127 / max|x|)) (0
 * where max|x| is 0), and the product is W . x^ (ir.txt "Activations").
 * For the int8 kernels, qact() gives the codes q of x [1, k], the sums of
 * each 4 consecutive codes (xs4, for the kernels that multiply unsigned
 * bytes), d, and each block's sum of x^ (xsum = d * sum q, for the
 * weights' offsets), in one scf.for over the blocks; a product of the
 * same x reuses them.  qround() gives x^ itself, in f32, for the other
 * products (prefill's, and layouts the kernels do not read). */
static struct qact
qact(struct em *e, const char *x, struct rows rw, int64_t k)
{
	if (e->qa.x && strcmp(e->qa.x, x) == 0)
		return e->qa;
	int64_t nb = k / 32;
	const char *tq = tensor2(rw, k, "i8"), *ts = tensor2(rw, k / 4, "i32"), *tb = tensor2(rw, nb, "f32");
	const char *eq = val(e, "qe"), *es = val(e, "qe"), *ed = val(e, "qe"), *em = val(e, "qe");
	const char *ek = e->xk ? val(e, "qe") : NULL;
	const char *empty = fmt("tensor.empty(%s)", rw.dyn);
	top(e, eq, empty, fmt(": %s", tq));
	top(e, es, empty, fmt(": %s", ts));
	top(e, ed, empty, fmt(": %s", tb));
	top(e, em, empty, fmt(": %s", tb));
	if (ek)
		top(e, ek, empty, fmt(": %s", ts));
	const char *lo = cindex(e, "c", 0), *hi = cindex(e, "c", nb), *r = val(e, "qa");
	int no = ek ? 5 : 4;
	const char *tys = ek ? fmt("%s, %s, %s, %s, %s", tq, ts, tb, tb, ts) : fmt("%s, %s, %s, %s", tq, ts, tb, tb);
	struct llm_buf b = {0};
	/* rows %_r, then blocks %_g */
	ln(&b, 4, "%s:%d = scf.for %%_r = %s to %s step %%c1 iter_args(%%_bq = %s, %%_bs = %s, %%_bd = %s, "
	    "%%_bm = %s%s) -> (%s) {", r, no, lo, rw.dyn[0] ? "%R" : "%c1", eq, es, ed, em,
	    ek ? fmt(", %%_bk = %s", ek) : "", tys);
	ln(&b, 4, "%%_in:%d = scf.for %%_g = %s to %s step %%c1 iter_args(%%_aq = %%_bq, %%_as = %%_bs, %%_ad = %%_bd, "
	    "%%_am = %%_bm%s) -> (%s) {", no, lo, hi, ek ? ", %_ak = %_bk" : "", tys);
	ln(&b, 6, "%%_c8 = arith.constant 8 : index");
	ln(&b, 6, "%%_c32 = arith.constant 32 : index");
	ln(&b, 6, "%%_f0 = arith.constant 0.0 : f32");
	ln(&b, 6, "%%_f127 = arith.constant 127.0 : f32");
	ln(&b, 6, "%%_o = arith.muli %%_g, %%_c32 : index");
	ln(&b, 6, "%%_o4 = arith.muli %%_g, %%_c8 : index");
	rd(&b, 6, "%_v", x, "%_r, %_o", "%_f0", tensor2(rw, k, "f32"), "vector<32xf32>");
	ln(&b, 6, "%%_a = math.absf %%_v : vector<32xf32>");
	ln(&b, 6, "%%_m = vector.reduction <maxnumf>, %%_a : vector<32xf32> into f32");
	ln(&b, 6, "%%_d = arith.divf %%_m, %%_f127 : f32");
	ln(&b, 6, "%%_z = arith.cmpf oeq, %%_m, %%_f0 : f32");
	ln(&b, 6, "%%_id0 = arith.divf %%_f127, %%_m : f32");
	ln(&b, 6, "%%_id = arith.select %%_z, %%_f0, %%_id0 : f32");
	ln(&b, 6, "%%_idv = vector.broadcast %%_id : f32 to vector<32xf32>");
	ln(&b, 6, "%%_p = arith.mulf %%_v, %%_idv : vector<32xf32>");
	ln(&b, 6, "%%_re = math.roundeven %%_p : vector<32xf32>");
	ln(&b, 6, "%%_qi = arith.fptosi %%_re : vector<32xf32> to vector<32xi32>");
	ln(&b, 6, "%%_q = arith.trunci %%_qi : vector<32xi32> to vector<32xi8>");
	ln(&b, 6, "%%_aq2 = vector.transfer_write %%_q, %%_aq[%%_r, %%_o] {in_bounds = [true]} : vector<32xi8>, %s",
	    tq);
	for (int j = 0; j < 4; j++)
		ln(&b, 6, "%%_e%d = vector.shuffle %%_qi, %%_qi [%d, %d, %d, %d, %d, %d, %d, %d] : vector<32xi32>, "
		    "vector<32xi32>", j, j, j + 4, j + 8, j + 12, j + 16, j + 20, j + 24, j + 28);
	ln(&b, 6, "%%_s01 = arith.addi %%_e0, %%_e1 : vector<8xi32>");
	ln(&b, 6, "%%_s23 = arith.addi %%_e2, %%_e3 : vector<8xi32>");
	ln(&b, 6, "%%_s4 = arith.addi %%_s01, %%_s23 : vector<8xi32>");
	ln(&b, 6, "%%_as2 = vector.transfer_write %%_s4, %%_as[%%_r, %%_o4] {in_bounds = [true]} : vector<8xi32>, %s",
	    ts);
	ln(&b, 6, "%%_ad2 = tensor.insert %%_d into %%_ad[%%_r, %%_g] : %s", tb);
	ln(&b, 6, "%%_sq = vector.reduction <add>, %%_qi : vector<32xi32> into i32");
	ln(&b, 6, "%%_sf = arith.sitofp %%_sq : i32 to f32");
	ln(&b, 6, "%%_xs = arith.mulf %%_sf, %%_d : f32");
	ln(&b, 6, "%%_am2 = tensor.insert %%_xs into %%_am[%%_r, %%_g] : %s", tb);
	if (ek) {
		/* a piece of 4-bit codes of 32 holds element j (low nibble)
		 * and j + 16 (high) in byte j: lane l of the kernel meets the
		 * codes of x at 4(l%4) .. and 16 + 4(l%4) ..; i4 codes are the
		 * nibble - 8, so the lane's dot product takes -8 * their sum */
		const char *v8i = "vector<8xi32>";
		ln(&b, 6, "%%_kl = vector.shuffle %%_s4, %%_s4 [0, 1, 2, 3, 0, 1, 2, 3] : %s, %s", v8i, v8i);
		ln(&b, 6, "%%_kh = vector.shuffle %%_s4, %%_s4 [4, 5, 6, 7, 4, 5, 6, 7] : %s, %s", v8i, v8i);
		ln(&b, 6, "%%_kt = arith.addi %%_kl, %%_kh : vector<8xi32>");
		ln(&b, 6, "%%_km8 = arith.constant dense<-8> : vector<8xi32>");
		ln(&b, 6, "%%_kk = arith.muli %%_kt, %%_km8 : vector<8xi32>");
		ln(&b, 6, "%%_ak2 = vector.transfer_write %%_kk, %%_ak[%%_r, %%_o4] {in_bounds = [true]} : %s, %s", v8i,
		    ts);
	}
	ln(&b, 6, "scf.yield %%_aq2, %%_as2, %%_ad2, %%_am2%s : %s", ek ? ", %_ak2" : "", tys);
	ln(&b, 4, "}");
	ln(&b, 4, "scf.yield %%_in#0, %%_in#1, %%_in#2, %%_in#3%s : %s", ek ? ", %_in#4" : "", tys);
	ln(&b, 4, "} {%s}", attrs(e));
	llm_buf_puts(e->b, b.p);
	llm_buf_free(&b);
	e->qa = (struct qact){x, fmt("%s#0", r), fmt("%s#1", r), fmt("%s#2", r), fmt("%s#3", r),
		ek ? fmt("%s#4", r) : NULL};
	return e->qa;
}

/* 1 if the int8 kernels read pt's layout (with activations "q8"): int8
 * codes in groups of 32 or 16, 4-bit codes in groups of 32, offsets only
 * with groups of 32. */
static int
qa8(const struct llm_plan_tensor *pt)
{
	int G = pt->ql.group;
	if (pt->ql.code != LLM_QCODE_I8 || pt->ql.mins)
		return G == 32;
	return G == 32 || G == 16;
}

static const char *
qround(struct em *e, const char *x, struct rows r, int64_t k)
{
	int64_t nb = k / 32;
	const char *R = strcmp(r.t, "1") == 0 ? "1" : "%R";
	const char *M = r.dyn[0] ? "?" : fmt("%" PRId64, nb);
	const char *mt = fmt("tensor<%sx32xf32>", M), *at = fmt("tensor<%sxf32>", M);
	const char *t3 = fmt("tensor<%sx%" PRId64 "x32xf32>", r.t, nb);
	const char *x3 = val(e, "xr"), *xm = val(e, "xr");
	top(e, x3, fmt("tensor.expand_shape %s [[0], [1, 2]] output_shape [%s, %" PRId64 ", 32]", x, R, nb),
	    fmt(": %s into %s", tensor2(r, k, "f32"), t3));
	top(e, xm, fmt("tensor.collapse_shape %s [[0, 1], [2]]", x3), fmt(": %s into %s", t3, mt));
	const char *mdyn = "";
	if (r.dyn[0]) {
		const char *cb = cindex(e, "c", nb);
		mdyn = val(e, "nm");
		top(e, mdyn, fmt("arith.muli %%R, %s", cb), ": index");
	}
	const char *z = generic(e, &(struct gspec){.sched = "fill", .hint = "zam", .otype = at, .odyn = mdyn,
	    .omap = "d0", .nd = 1, .iters = "parallel", .body = "      %r = arith.constant 0.0 : f32\n"});
	const char *am = generic(e, &(struct gspec){.sched = "rowsum", .hint = "am", INS({xm, mt, "d0, d1", "f32"}),
	    .init = z, .otype = at, .omap = "d0", .nd = 2, .iters = "parallel, reduction",
	    .body = "      %ab = math.absf %a0 : f32\n"
	    "      %r = arith.maxnumf %o, %ab : f32\n"});
	const char *xh = generic(e, &(struct gspec){.sched = "eltwise", .hint = "xh",
	    INS({xm, mt, "d0, d1", "f32"}, {am, at, "d0", "f32"}), .otype = mt, .odyn = mdyn, .omap = "d0, d1",
	    .nd = 2, .iters = "parallel, parallel",
	    .body = "      %f0 = arith.constant 0.0 : f32\n"
	    "      %f127 = arith.constant 127.0 : f32\n"
	    "      %d = arith.divf %a1, %f127 : f32\n"
	    "      %z = arith.cmpf oeq, %a1, %f0 : f32\n"
	    "      %id0 = arith.divf %f127, %a1 : f32\n"
	    "      %id = arith.select %z, %f0, %id0 : f32\n"
	    "      %p = arith.mulf %a0, %id : f32\n"
	    "      %q = math.roundeven %p : f32\n"
	    "      %r = arith.mulf %q, %d : f32\n"});
	const char *h3 = val(e, "xr"), *h2 = val(e, "xr");
	top(e, h3, fmt("tensor.expand_shape %s [[0, 1], [2]] output_shape [%s, %" PRId64 ", 32]", xh, R, nb),
	    fmt(": %s into %s", mt, t3));
	top(e, h2, fmt("tensor.collapse_shape %s [[0], [1, 2]]", h3), fmt(": %s into %s", t3, tensor2(r, k, "f32")));
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
};

/* The scales (%_sv) and offsets (%_mv) of the 8 rows of tile %_t, group
 * %_g, as vector<8xf32>: read, widened from f16, or ("-sub8") computed. */
static void
qscale_vectors(struct llm_buf *b, const struct qparts *q, int ind)
{
	const char *v8 = "vector<8xf32>";
	if (q->sub) {
		/* s = d * sc (m = -dmin * min) in f32, ggml's own products */
		ln(b, ind, "%%_gpb = arith.constant %" PRId64 " : index", q->gpb);
		ln(b, ind, "%%_gb = arith.divui %%_g, %%_gpb : index");
		for (int p = 0; p < (q->mins ? 2 : 1); p++) {
			const char *v = p ? "%_mv" : "%_sv", *c = p ? "m" : "s";
			rd(b, ind, fmt("%%_%sq", c), p ? q->mins : q->scales, "%_t, %_g, %_c0", "%_i0", q->st,
			    "vector<8xi8>");
			ln(b, ind, "%%_%sf = arith.sitofp %%_%sq : vector<8xi8> to %s", c, c, v8);
			rd(b, ind, fmt("%%_%sh", c), p ? q->md : q->sd, "%_t, %_gb, %_c0", "%_h0f", q->dt,
			    "vector<8xf16>");
			ln(b, ind, "%%_%sd = arith.extf %%_%sh : vector<8xf16> to %s", c, c, v8);
			ln(b, ind, "%s = arith.mulf %%_%sd, %%_%sf : %s", v, c, c, v8);
		}
	} else if (strcmp(q->se, "f16") == 0) {
		/* f16 scales and offsets widen exactly */
		rd(b, ind, "%_sh", q->scales, "%_t, %_g, %_c0", "%_h0f", q->st, "vector<8xf16>");
		ln(b, ind, "%%_sv = arith.extf %%_sh : vector<8xf16> to %s", v8);
		if (q->mins) {
			rd(b, ind, "%_mh", q->mins, "%_t, %_g, %_c0", "%_h0f", q->st, "vector<8xf16>");
			ln(b, ind, "%%_mv = arith.extf %%_mh : vector<8xf16> to %s", v8);
		}
	} else {
		rd(b, ind, "%_sv", q->scales, "%_t, %_g, %_c0", "%_f0", q->st, v8);
		if (q->mins)
			rd(b, ind, "%_mv", q->mins, "%_t, %_g, %_c0", "%_f0", q->st, v8);
	}
}

/* The lane indices 0 .. n - 1, `times` times over: a shuffle that repeats
 * an n-element vector into n * times. */
static const char *
lanes_repeated(int n, int times)
{
	struct llm_buf b = {0};
	for (int i = 0; i < n * times; i++)
		llm_buf_printf(&b, "%s%d", i ? ", " : "", i % n);
	return keep(b.p);
}

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
	const char *kty = fmt("(%s, %s, %s) -> %s", i16, b64, b64, i16);
	const char *kty8 = fmt("(%s, %s, %s, %s) -> %s", i16, b64, b64, i16, i16);
	int nw = d->na / 2;        /* 64-byte pieces a group */
	int rp = d->pairs ? 4 : 2; /* rows of W a 64-byte piece holds */
	int nacc = nw + (q->mins ? 1 : 0);
	struct llm_buf accs = {0}, tys = {0}, outs = {0};

	for (int j = 0; j < nr; j++) {
		ln(b, 8, "%%_cr%d = arith.constant %d : index", j, j);
		ln(b, 8, "%%_r%d = arith.addi %%_r, %%_cr%d : index", j, j);
		for (int h = 0; h < nacc; h++) {
			llm_buf_printf(&accs, "%s%%_a%d_%d = %s", accs.len ? ", " : "", j, h, h < nw ? "%_zw" : "%_zf");
			llm_buf_printf(&tys, "%s%s", tys.len ? ", " : "", h < nw ? v16 : v8);
			llm_buf_printf(&outs, "%s%%_n%d_%d", outs.len ? ", " : "", j, h);
		}
	}
	ln(b, 8, "%%_res:%d = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%s) -> (%s) {", nr * nacc, accs.p,
	    tys.p);
	/* each row's block of activations as the kernels take them, once
	 * for each 32-byte piece of a 64-byte one: %_xJ (32 bytes twice;
	 * 4-bit codes: the halves %_xlJ, %_xhJ, four times), %_xsJ (their
	 * sums of 4), the block's scale %_dxJ, and %_scJ = s * dx */
	if (d->sx) {
		/* computed once for the tile's rows (qdot_tile) */
		rd(b, 10, "%_sv", d->sx, "%_g, %_c0", "%_f0", d->xt, v8);
		if (q->mins)
			rd(b, 10, "%_mv", d->mx, "%_g, %_c0", "%_f0", d->xt, v8);
	} else
		qscale_vectors(b, q, 10);
	ln(b, 10, "%%_xo = arith.muli %%_g, %s : index", d->pairs && !q->four ? "%_c16" : "%_c32");
	ln(b, 10, "%%_xo2 = arith.addi %%_xo, %%_c16 : index");
	ln(b, 10, "%%_so = arith.muli %%_g, %s : index", d->pairs && !q->four ? "%_c4" : "%_c8");
	ln(b, 10, "%%_bk = arith.divui %%_g, %s : index", d->pairs && !q->four ? "%_c2" : "%_c1");
	for (int j = 0; j < nr; j++) {
		if (!q->four) {
			/* int8 codes: the group's bytes of x (groups of 16: block
			 * g / 2) and their sums of 4, repeated to 64 bytes */
			int xn = d->pairs ? 16 : 32, rep = 64 / xn;
			const char *xt = fmt("vector<%dxi8>", xn), *st = fmt("vector<%dxi32>", xn / 4);
			rd(b, 10, fmt("%%_x1_%d", j), d->a.xq, fmt("%%_r%d, %%_xo", j), "%_i0", d->tq, xt);
			ln(b, 10, "%%_x%d = vector.shuffle %%_x1_%d, %%_x1_%d [%s] : %s, %s", j, j, j,
			    lanes_repeated(xn, rep), xt, xt);
			rd(b, 10, fmt("%%_xs1_%d", j), d->a.xs4, fmt("%%_r%d, %%_so", j), "%_i32", d->ts, st);
			ln(b, 10, "%%_xs%d = vector.shuffle %%_xs1_%d, %%_xs1_%d [%s] : %s, %s", j, j, j,
			    lanes_repeated(xn / 4, rep), st, st);
		} else {
			/* 4-bit codes of 32: byte j holds element j (low nibble)
			 * and j + 16 (high); each half of x four times, and what
			 * codes less 8 take off (i4: -8 * the sums of 4) */
			rd(b, 10, fmt("%%_xa%d", j), d->a.xq, fmt("%%_r%d, %%_xo", j), "%_i0", d->tq, b16);
			rd(b, 10, fmt("%%_xb%d", j), d->a.xq, fmt("%%_r%d, %%_xo2", j), "%_i0", d->tq, b16);
			ln(b, 10, "%%_xl%d = vector.shuffle %%_xa%d, %%_xa%d [%s] : %s, %s", j, j, j,
			    lanes_repeated(16, 4), b16, b16);
			ln(b, 10, "%%_xh%d = vector.shuffle %%_xb%d, %%_xb%d [%s] : %s, %s", j, j, j,
			    lanes_repeated(16, 4), b16, b16);
			if (q->code == LLM_QCODE_I4) {
				if (!d->a.xk)
					llm_fatal("qdot: i4 codes without qact's sums (em.xk)");
				rd(b, 10, fmt("%%_k1_%d", j), d->a.xk, fmt("%%_r%d, %%_so", j), "%_i32", d->ts, i8);
				ln(b, 10, "%%_k%d = vector.shuffle %%_k1_%d, %%_k1_%d [%s] : %s, %s", j, j, j,
				    lanes_repeated(8, 2), i8, i8);
			}
		}
		ln(b, 10, "%%_dx%d = tensor.extract %s[%%_r%d, %%_bk] : %s", j, d->a.dx, j, d->tb);
		ln(b, 10, "%%_dxb%d = vector.broadcast %%_dx%d : f32 to %s", j, j, v8);
		ln(b, 10, "%%_sc%d = arith.mulf %%_sv, %%_dxb%d : %s", j, j, v8);
	}
	if (nr == 1) {
		/* One row of x streams W from memory (decode): prefetch the
		 * codes a distance ahead, past the ends of the 4 KB pages where
		 * the hardware's prefetchers stop, non-temporal (W is read once
		 * a token), and the scales at the same group.  The distance in
		 * bytes is measured per CPU: llm-lower sets it, in groups, from
		 * the tuning table (tune.h; BENCHMARKS.md "Prefetching W in
		 * decode").  The last tile's prefetches stay on its last
		 * group. */
		ln(b, 10,
		    "%%_pfd = arith.constant {llm.tune = \"decode.prefetch_bytes.g%d\", llm.tune_unit = %d : i64} 0"
		    " : index",
		    nw * 64, nw * 64);
		ln(b, 10, "%%_pfm = arith.constant %" PRId64 " : index", q->nt * q->ng - 1);
		ln(b, 10, "%%_pft = arith.muli %%_t, %%_ng : index");
		ln(b, 10, "%%_pfa = arith.addi %%_pft, %%_g : index");
		ln(b, 10, "%%_pfb = arith.addi %%_pfa, %%_pfd : index");
		ln(b, 10, "%%_pfg = arith.minui %%_pfb, %%_pfm : index");
		for (int h = 0; h < nw; h++) {
			ln(b, 10, "%%_pfo%d = arith.constant %d : index", h, 64 * h);
			ln(b, 10, "memref.prefetch %s[%%_pfg, %%_pfo%d], read, locality<0>, data : %s", q->pc, h,
			    q->pct);
		}
		ln(b, 10, "memref.prefetch %s[%%_pfg, %%_c0], read, locality<3>, data : %s", q->ps, q->pst);
	}
	for (int h = 0; h < nw; h++) {
		rd(b, 10, fmt("%%_w%d", h), q->codes, fmt("%%_t, %%_g, %%_h%d, %%_c0", h), "%_i0", q->ct, b64);
		if (q->four) {
			ln(b, 10, "%%_lo%d = arith.andi %%_w%d, %%_m15 : %s", h, h, b64);
			ln(b, 10, "%%_hi%d = arith.shrui %%_w%d, %%_s4 : %s", h, h, b64);
		}
		/* the lanes' scales: those of the rows the lanes hold */
		struct llm_buf sh = {0};
		for (int l = 0; l < 16; l++)
			llm_buf_printf(&sh, "%s%d", l ? ", " : "", rp * h + l / (16 / rp));
		for (int j = 0; j < nr; j++) {
			if (!q->four)
				ln(b, 10, "%%_d%d_%d = llvm.call @llm_qdot_i8(%%_zi, %%_w%d, %%_x%d, %%_xs%d) : %s", j,
				    h, h, j, j, kty8);
			else {
				ln(b, 10, "%%_e%d_%d = llvm.call @llm_qdot_u7(%s, %%_lo%d, %%_xl%d) : %s", j, h,
				    q->code == LLM_QCODE_I4 ? fmt("%%_k%d", j) : "%_zi", h, j, kty);
				ln(b, 10, "%%_d%d_%d = llvm.call @llm_qdot_u7(%%_e%d_%d, %%_hi%d, %%_xh%d) : %s", j, h,
				    j, h, h, j, kty);
			}
			ln(b, 10, "%%_df%d_%d = arith.sitofp %%_d%d_%d : %s to %s", j, h, j, h, i16, v16);
			ln(b, 10, "%%_sb%d_%d = vector.shuffle %%_sc%d, %%_sc%d [%s] : %s, %s", j, h, j, j, sh.p, v8,
			    v8);
			ln(b, 10, "%%_n%d_%d = vector.fma %%_df%d_%d, %%_sb%d_%d, %%_a%d_%d : %s", j, h, j, h, j, h, j,
			    h, v16);
		}
		llm_buf_free(&sh);
	}
	for (int j = 0; q->mins && j < nr; j++) {
		ln(b, 10, "%%_xsum%d = tensor.extract %s[%%_r%d, %%_g] : %s", j, d->a.xsum, j, d->tb);
		ln(b, 10, "%%_xsb%d = vector.broadcast %%_xsum%d : f32 to %s", j, j, v8);
		ln(b, 10, "%%_n%d_%d = vector.fma %%_mv, %%_xsb%d, %%_a%d_%d : %s", j, nw, j, j, nw, v8);
	}
	ln(b, 10, "scf.yield %s : %s", outs.p, tys.p);
	ln(b, 8, "}");

	/* each row's sums of lanes, the offsets' terms and the bias */
	const char *ot = "%_ot";
	int lp = 16 / rp; /* lanes a row */
	for (int j = 0; j < nr; j++) {
		for (int h = 0; h < nw; h++)
			for (int p = 0; p < rp; p++) {
				ln(b, 8, "%%_p%d_%d_%d = vector.extract_strided_slice %%_res#%d {offsets = [%d], "
				    "sizes = [%d], strides = [1]} : %s to vector<%dxf32>", j, h, p, j * nacc + h,
				    lp * p, lp, v16, lp);
				ln(b, 8, "%%_y%d_%d = vector.reduction <add>, %%_p%d_%d_%d : vector<%dxf32> into f32",
				    j, rp * h + p, j, h, p, lp);
			}
		ln(b, 8, "%%_yv%d = vector.from_elements %%_y%d_0, %%_y%d_1, %%_y%d_2, %%_y%d_3, %%_y%d_4, %%_y%d_5, "
		    "%%_y%d_6, %%_y%d_7 : %s", j, j, j, j, j, j, j, j, j, v8);
		const char *yv = fmt("%%_yv%d", j);
		if (q->mins) {
			ln(b, 8, "%%_ym%d = arith.addf %s, %%_res#%d : %s", j, yv, j * nacc + nw, v8);
			yv = fmt("%%_ym%d", j);
		}
		if (d->bias) {
			ln(b, 8, "%%_yb%d = arith.addf %s, %s : %s", j, yv, d->bias, v8);
			yv = fmt("%%_yb%d", j);
		}
		ln(b, 8, "%%_ot_%d = vector.transfer_write %s, %s[%%_r%d, %%_c0] {in_bounds = [true]} : %s, %s", j, yv,
		    ot, j, v8, d->st);
		ot = fmt("%%_ot_%d", j);
	}
	ln(b, 8, "scf.yield %s : %s", ot, d->st);
	llm_buf_free(&accs);
	llm_buf_free(&tys);
	llm_buf_free(&outs);
}

/* The tile %_t = %_tg - t0 of one W of qdot: from %_os, the tile's 8
 * columns of y as %_ow; rows two at a time (one load of a piece of W
 * serves both), then one at a time. */
static void
qdot_tile(struct llm_buf *b, struct qd *d, struct rows rw)
{
	ln(b, 6, "%%_ts = arith.constant %" PRId64 " : index", d->t0);
	ln(b, 6, "%%_t = arith.subi %%_tg, %%_ts : index");
	ln(b, 6, "%%_ng = arith.constant %" PRId64 " : index", d->q.ng);
	ln(b, 6, "%%_t8 = arith.muli %%_t, %%_c8 : index");
	struct qd dt = *d;
	if (d->bias) {
		ln(b, 6, "%%_bz = arith.constant 0.0 : %s", d->bt);
		rd(b, 6, "%_bv", d->bias, "%_t8", "%_bz", fmt("tensor<%" PRId64 "x%s>", d->n, d->bt),
		    fmt("vector<8x%s>", d->bt));
		if (strcmp(d->bt, "f32") != 0)
			ln(b, 6, "%%_bf = arith.extf %%_bv : vector<8x%s> to vector<8xf32>", d->bt);
		dt.bias = strcmp(d->bt, "f32") != 0 ? "%_bf" : "%_bv"; /* the bias's vector */
	}
	if (rw.dyn[0] && d->q.sub) {
		/* the scales (and offsets) computed once for all the rows */
		const struct qparts *q = &d->q;
		int np = q->mins ? 2 : 1;
		dt.xt = fmt("tensor<%" PRId64 "x8xf32>", q->ng);
		for (int p = 0; p < np; p++)
			ln(b, 6, "%%_se%d = tensor.empty() : %s", p, dt.xt);
		ln(b, 6, "%%_sx:%d = scf.for %%_g = %%_c0 to %%_ng step %%_c1 iter_args(%s) -> (%s) {", np,
		    np == 2 ? "%_sa0 = %_se0, %_sa1 = %_se1" : "%_sa0 = %_se0", np == 2 ? fmt("%s, %s", dt.xt, dt.xt) :
		    dt.xt);
		qscale_vectors(b, q, 8);
		for (int p = 0; p < np; p++)
			ln(b, 8, "%%_sw%d = vector.transfer_write %s, %%_sa%d[%%_g, %%_c0] {in_bounds = [true]} : "
			    "vector<8xf32>, %s", p, p ? "%_mv" : "%_sv", p, dt.xt);
		ln(b, 8, "scf.yield %s : %s", np == 2 ? "%_sw0, %_sw1" : "%_sw0",
		    np == 2 ? fmt("%s, %s", dt.xt, dt.xt) : dt.xt);
		ln(b, 6, "}");
		dt.sx = "%_sx#0";
		dt.mx = q->mins ? "%_sx#1" : NULL;
	}
	const char *from = "%_c0", *acc = "%_os";
	if (rw.dyn[0]) {
		ln(b, 6, "%%_rh = arith.divui %%R, %%_c2 : index");
		ln(b, 6, "%%_rp = arith.muli %%_rh, %%_c2 : index");
		ln(b, 6, "%%_ow2 = scf.for %%_r = %%_c0 to %%_rp step %%_c2 iter_args(%%_ot = %%_os) -> (%s) {", d->st);
		qdot_pass(b, &dt, 2);
		ln(b, 6, "}");
		from = "%_rp";
		acc = "%_ow2";
	}
	ln(b, 6, "%%_ow = scf.for %%_r = %s to %s step %%_c1 iter_args(%%_ot = %s) -> (%s) {", from,
	    rw.dyn[0] ? "%R" : "%_c1", acc, d->st);
	qdot_pass(b, &dt, 1);
	ln(b, 6, "}");
}

/* The body of a product over the tiles (or chunks) of nw W_i in one
 * scf.forall: an scf.if chain on the tile index iv that runs W_i's body
 * (body(b, i, arg), which leaves the tile's y in %_ow of type st) for the
 * tiles below W_{i+1}'s first, first[i + 1].  The tile's y is %_yi0, or
 * %_ow for one W. */
static const char *
tile_chain(struct llm_buf *b, const char *iv, int nw, const int64_t *first, const char *st,
    void (*body)(struct llm_buf *, int, void *), void *arg)
{
	for (int i = 0; i < nw; i++) {
		if (i + 1 < nw) {
			ln(b, 6, "%%_te%d = arith.constant %" PRId64 " : index", i, first[i + 1]);
			ln(b, 6, "%%_in%d = arith.cmpi ult, %s, %%_te%d : index", i, iv, i);
			ln(b, 6, "%%_yi%d = scf.if %%_in%d -> (%s) {", i, i, st);
		}
		body(b, i, arg);
		if (i + 1 < nw) {
			ln(b, 6, "scf.yield %%_ow : %s", st);
			ln(b, 6, "} else {");
		}
	}
	for (int i = nw - 2; i >= 0; i--) {
		ln(b, 6, "scf.yield %s : %s", i == nw - 2 ? "%_ow" : fmt("%%_yi%d", i + 1), st);
		ln(b, 6, "}");
	}
	return nw > 1 ? "%_yi0" : "%_ow";
}

/* y_i, i < nw: the slices of n[i] columns of the products' y [R, N] (of
 * type yt), one after the other; y itself for one. */
static void
split_y(struct em *e, const char *ya, const char *yt, struct rows rw, int nw, const int64_t *n, const char **y)
{
	int64_t off = 0;
	for (int i = 0; i < nw; off += n[i], i++) {
		if (nw == 1) {
			y[i] = ya;
			break;
		}
		y[i] = val(e, "ys");
		top(e, y[i],
		    fmt("tensor.extract_slice %s[0, %" PRId64 "] [%s, %" PRId64 "] [1, 1]", ya, off,
			rw.dyn[0] ? "%R" : "1", n[i]),
		    fmt(": %s to %s", yt, tensor2(rw, n[i], "f32")));
	}
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
static void
qdot(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char **y)
{
	int64_t k = pt[0]->shape[1], nt = 0, nall = 0;
	struct qd *d = llm_xreallocarray(NULL, (size_t)nw, sizeof(*d));
	int64_t first[3], n[3];
	struct qact a = qact(e, x, rw, k);
	const char *st = fmt("tensor<%sx8xf32>", rw.t);
	for (int i = 0; i < nw; i++) {
		d[i] = (struct qd){.a = a,
			.n = pt[i]->shape[0],
			.t0 = nt,
			.tq = tensor2(rw, k, "i8"),
			.ts = tensor2(rw, k / 4, "i32"),
			.tb = tensor2(rw, k / 32, "f32"),
			.st = st};
		struct qparts qi = qinfo(pt[i]);
		d[i].pairs = qi.G == 16 || qi.four;
		d[i].na = d[i].pairs ? 4 : 8;
		/* the codes as 64-byte pieces: [nt, ng, na / 2, 64] */
		d[i].q = qview_as(e, pt[i], d[i].na / 2);
		d[i].bias = b_name[i] ? wview_as(e, b_name[i], fmt("%" PRId64 "x", d[i].n), &d[i].bt) : NULL;
		first[i] = nt;
		n[i] = d[i].n;
		nt += d[i].q.nt;
		nall += d[i].n;
	}
	const char *yt = tensor2(rw, nall, "f32"), *init = val(e, "qi"), *ya = val(e, "qd");
	const char *R = rw.dyn[0] ? "%R" : "1", *v8 = "vector<8xf32>", *i16 = "vector<16xi32>", *b64 = "vector<64xi8>";
	top(e, init, fmt("tensor.empty(%s)", rw.dyn), fmt(": %s", yt));
	e->qdot = 1;

	struct llm_buf b = {0};
	ln(&b, 4, "%s = scf.forall (%%_tg) in (%" PRId64 ") shared_outs(%%_o = %s) -> (%s) {", ya, nt, init, yt);
	static const int consts[] = {0, 1, 2, 4, 8, 16, 32};
	for (size_t c = 0; c < LLM_NELEM(consts); c++)
		ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[c], consts[c]);
	ln(&b, 6, "%%_i0 = arith.constant 0 : i8");
	ln(&b, 6, "%%_i32 = arith.constant 0 : i32");
	ln(&b, 6, "%%_f0 = arith.constant 0.0 : f32");
	ln(&b, 6, "%%_h0f = arith.constant 0.0 : f16");
	ln(&b, 6, "%%_zf = arith.constant dense<0.0> : %s", v8);
	ln(&b, 6, "%%_zw = arith.constant dense<0.0> : vector<16xf32>");
	ln(&b, 6, "%%_zi = arith.constant dense<0> : %s", i16);
	ln(&b, 6, "%%_m15 = arith.constant dense<15> : %s", b64);
	ln(&b, 6, "%%_s4 = arith.constant dense<4> : %s", b64);
	for (int h = 0; h < 8; h++)
		ln(&b, 6, "%%_h%d = arith.constant %d : index", h, h);
	ln(&b, 6, "%%_tg8 = arith.muli %%_tg, %%_c8 : index");
	ln(&b, 6, "%%_os = tensor.extract_slice %%_o[0, %%_tg8] [%s, 8] [1, 1] : %s to %s", R, yt, st);
	struct qtiles qt = {d, rw};
	const char *yo = tile_chain(&b, "%_tg", nw, first, st, qdot_tiles, &qt);
	ln(&b, 6, "scf.forall.in_parallel {");
	ln(&b, 8, "tensor.parallel_insert_slice %s into %%_o[0, %%_tg8] [%s, 8] [1, 1] : %s into %s", yo, R, st, yt);
	ln(&b, 6, "}");
	ln(&b, 4, "} {%s}", attrs(e));
	llm_buf_puts(e->b, b.p);
	llm_buf_free(&b);
	split_y(e, ya, yt, rw, nw, n, y);
	free(d);
}

/* x [R, k] rounded to bf16 (to nearest, ties to even: arith.truncf), the
 * activations of the products with bf16 weights under dtypes.activations
 * "bf16" (ir.txt "Activations"); a product of the same x reuses it. */
static const char *
bround(struct em *e, const char *x, struct rows r, int64_t k)
{
	if (e->bx && strcmp(e->bx, x) == 0)
		return e->bxr;
	e->bx = x;
	e->bxr = generic(e, &(struct gspec){.sched = "eltwise", .hint = "xb", INS({x, tensor2(r, k, "f32"), "d0, d1",
	    "f32"}), .otype = tensor2(r, k, "bf16"), .odyn = r.dyn, .omap = "d0, d1", .nd = 2,
	    .iters = "parallel, parallel", .body = "      %r = arith.truncf %a0 : f32 to bf16\n"});
	return e->bxr;
}

/* x rounded to bf16 and widened back, in f32: what the products that
 * bdot() does not take multiply with their bf16 weights. */
static const char *
bwiden(struct em *e, const char *x, struct rows r, int64_t k)
{
	const char *t = tensor2(r, k, "f32");
	return generic(e, &(struct gspec){.sched = "eltwise", .hint = "xbf", INS({x, t, "d0, d1", "f32"}), .otype = t,
	    .odyn = r.dyn, .omap = "d0, d1", .nd = 2, .iters = "parallel, parallel",
	    .body = "      %t = arith.truncf %a0 : f32 to bf16\n      %r = arith.extf %t : bf16 to f32\n"});
}

/* 1 if bdot() takes W: dense bf16, its rows in whole chunks of 64, k a
 * multiple of 32 (a call of the kernel). */
static int
bd16(const struct llm_plan_tensor *pt)
{
	return !pt->layout && pt->dtype == LLM_DT_BF16 && pt->ndim == 2 && pt->shape[0] % GEMV_CHUNK == 0 &&
	    pt->shape[1] % 32 == 0;
}

/* One W of bdot() */
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
				ln(b, 8, "%%_q%d_%d_%d_%d = vector.shuffle %s, %s [%s] : %s, %s", j, lv, i, half, u, v,
				    m[half].p, v16, v16);
			ln(b, 8, "%%_u%d_%d_%d = arith.addf %%_q%d_%d_%d_0, %%_q%d_%d_%d_1 : %s", j, lv, i, j, lv, i, j,
			    lv, i, v16);
			cur[i] = fmt("%%_u%d_%d_%d", j, lv, i);
		}
		llm_buf_free(&m[0]);
		llm_buf_free(&m[1]);
	}
	ln(b, 8, "%%_ye%d = vector.shuffle %s, %s [0, 2, 4, 6, 8, 10, 12, 14] : %s, %s", j, cur[0], cur[0], v16, v16);
	ln(b, 8, "%%_yo%d = vector.shuffle %s, %s [1, 3, 5, 7, 9, 11, 13, 15] : %s, %s", j, cur[0], cur[0], v16, v16);
	ln(b, 8, "%%_yv%d = arith.addf %%_ye%d, %%_yo%d : vector<8xf32>", j, j, j);
	return fmt("%%_yv%d", j);
}

/* nr rows of x from %_r at row %_h of each stream of chunk %_t: the k
 * loop of 8 * nr accumulators of the bf16 kernel, then each row's 8
 * sums (+ the bias) written into %_ot at [row, 0..7, %_h]. */
static void
bdot_pass(struct llm_buf *b, const struct bd *d, int nr)
{
	const char *v16 = "vector<16xf32>", *b32 = "vector<32xbf16>";
	const char *kty = fmt("(%s, %s, %s) -> %s", v16, b32, b32, v16);
	struct llm_buf accs = {0}, tys = {0}, outs = {0};
	for (int j = 0; j < nr; j++) {
		ln(b, 8, "%%_cr%d = arith.constant %d : index", j, j);
		ln(b, 8, "%%_r%d = arith.addi %%_r, %%_cr%d : index", j, j);
		for (int s = 0; s < 8; s++) {
			llm_buf_printf(&accs, "%s%%_a%d_%d = %%_zf", accs.len ? ", " : "", j, s);
			llm_buf_printf(&tys, "%s%s", tys.len ? ", " : "", v16);
			llm_buf_printf(&outs, "%s%%_n%d_%d", outs.len ? ", " : "", j, s);
		}
	}
	ln(b, 8, "%%_res:%d = scf.for %%_kk = %%_c0 to %%_k step %%_c32 iter_args(%s) -> (%s) {", 8 * nr, accs.p,
	    tys.p);
	for (int j = 0; j < nr; j++)
		rd(b, 10, fmt("%%_x%d", j), d->xb, fmt("%%_r%d, %%_kk", j), "%_bz", d->xt, b32);
	for (int s = 0; s < 8; s++) {
		rd(b, 10, fmt("%%_w%d", s), d->w, fmt("%%_t, %%_s%d, %%_h, %%_kk", s), "%_bz", d->wt, b32);
		for (int j = 0; j < nr; j++)
			ln(b, 10, "%%_n%d_%d = llvm.call @llm_bdot(%%_a%d_%d, %%_w%d, %%_x%d) : %s", j, s, j, s, s, j,
			    kty);
	}
	ln(b, 10, "scf.yield %s : %s", outs.p, tys.p);
	ln(b, 8, "}");
	const char *ot = "%_ot";
	for (int j = 0; j < nr; j++) {
		const char *acc[8];
		for (int s = 0; s < 8; s++)
			acc[s] = fmt("%%_res#%d", 8 * j + s);
		const char *yv = bsum(b, j, acc);
		if (d->bias) {
			ln(b, 8, "%%_yb%d = arith.addf %s, %%_bf : vector<8xf32>", j, yv);
			yv = fmt("%%_yb%d", j);
		}
		ln(b, 8, "%%_ot_%d = vector.transfer_write %s, %s[%%_r%d, %%_c0, %%_h] {in_bounds = [true], "
		    "permutation_map = affine_map<(d0, d1, d2) -> (d1)>} : vector<8xf32>, %s", j, yv, ot, j, d->st);
		ot = fmt("%%_ot_%d", j);
	}
	ln(b, 8, "scf.yield %s : %s", ot, d->st);
	llm_buf_free(&accs);
	llm_buf_free(&tys);
	llm_buf_free(&outs);
}

/* The chunk %_t = %_c - c0 of one W of bdot: from %_os, the chunk's y as
 * %_ow, row h of every stream at a time; in each, the rows of x two at a
 * time, then one. */
static void
bdot_chunk(struct llm_buf *b, const struct bd *d, struct rows rw)
{
	ln(b, 6, "%%_ts = arith.constant %" PRId64 " : index", d->c0);
	ln(b, 6, "%%_t = arith.subi %%_c, %%_ts : index");
	ln(b, 6, "%%_ow = scf.for %%_h = %%_c0 to %%_c8 step %%_c1 iter_args(%%_oh = %%_os) -> (%s) {", d->st);
	if (d->bias) {
		/* the 8 streams' biases at row h, as f32 in %_bf */
		int wide = strcmp(d->bt, "f32") != 0;
		ln(b, 8, "%%_bpad = arith.constant 0.0 : %s", d->bt);
		ln(b, 8, "%s = vector.transfer_read %s[%%_t, %%_c0, %%_h], %%_bpad {in_bounds = [true], "
		    "permutation_map = affine_map<(d0, d1, d2) -> (d1)>} : tensor<%" PRId64 "x8x8x%s>, vector<8x%s>",
		    wide ? "%_bv" : "%_bf", d->bias, d->n / GEMV_CHUNK, d->bt, d->bt);
		if (wide)
			ln(b, 8, "%%_bf = arith.extf %%_bv : vector<8x%s> to vector<8xf32>", d->bt);
	}
	const char *from = "%_c0", *acc = "%_oh";
	if (rw.dyn[0]) {
		ln(b, 8, "%%_rh = arith.divui %%R, %%_c2 : index");
		ln(b, 8, "%%_rp = arith.muli %%_rh, %%_c2 : index");
		ln(b, 8, "%%_ow2 = scf.for %%_r = %%_c0 to %%_rp step %%_c2 iter_args(%%_ot = %%_oh) -> (%s) {", d->st);
		bdot_pass(b, d, 2);
		ln(b, 8, "}");
		from = "%_rp";
		acc = "%_ow2";
	}
	ln(b, 8, "%%_ow1 = scf.for %%_r = %s to %s step %%_c1 iter_args(%%_ot = %s) -> (%s) {", from,
	    rw.dyn[0] ? "%R" : "%_c1", acc, d->st);
	bdot_pass(b, d, 1);
	ln(b, 8, "}");
	ln(b, 8, "scf.yield %%_ow1 : %s", d->st);
	ln(b, 6, "}");
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
 * the products of the same x), each W viewed as gemv() views it, [n/64,
 * 8, 8, k] (chunk, stream, row of the stream): row h of the 8 streams at
 * a time, so that each stream runs on through the chunk's rows, and per
 * row of x 8 accumulators of 16 lanes over k, summed in a tree (bsum).
 * With R = 1 (decode) a chunk streams through its W once; with more rows
 * (prefill) the 8 rows of W at one h (8 * 2k bytes) stay in the cache for
 * every pair of rows of x.  Each y_i is the slice of the whole y that
 * its chunks wrote. */
static void
bdot(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char **y)
{
	int64_t k = pt[0]->shape[1], nc = 0, first[3], n[3];
	struct bd d[3];
	const char *xb = bround(e, x, rw, k), *R = rw.dyn[0] ? "%R" : "1";
	const char *st = fmt("tensor<%sx8x8xf32>", rw.t);
	for (int i = 0; i < nw; i++) {
		int64_t c = pt[i]->shape[0] / GEMV_CHUNK;
		const char *wt;
		d[i] = (struct bd){.n = pt[i]->shape[0], .c0 = nc, .xb = xb, .xt = tensor2(rw, k, "bf16"), .st = st};
		d[i].w = wview_as(e, pt[i]->name, fmt("%" PRId64 "x8x8x%" PRId64 "x", c, k), &wt);
		d[i].wt = fmt("tensor<%" PRId64 "x8x8x%" PRId64 "xbf16>", c, k);
		d[i].bias = b_name[i] ? wview_as(e, b_name[i], fmt("%" PRId64 "x8x8x", c), &d[i].bt) : NULL;
		first[i] = nc;
		n[i] = d[i].n;
		nc += c;
	}
	const char *yt = fmt("tensor<%sx%" PRId64 "x8x8xf32>", rw.t, nc), *init = val(e, "bi"), *ya = val(e, "bd");
	top(e, init, fmt("tensor.empty(%s)", rw.dyn), fmt(": %s", yt));
	e->bdot = 1;

	struct llm_buf b = {0};
	ln(&b, 4, "%s = scf.forall (%%_c) in (%" PRId64 ") shared_outs(%%_o = %s) -> (%s) {", ya, nc, init, yt);
	static const int consts[] = {0, 1, 2, 8, 32};
	for (size_t c = 0; c < LLM_NELEM(consts); c++)
		ln(&b, 6, "%%_c%d = arith.constant %d : index", consts[c], consts[c]);
	for (int s = 0; s < 8; s++)
		ln(&b, 6, "%%_s%d = arith.constant %d : index", s, s);
	ln(&b, 6, "%%_k = arith.constant %" PRId64 " : index", k);
	ln(&b, 6, "%%_bz = arith.constant 0.0 : bf16");
	ln(&b, 6, "%%_zf = arith.constant dense<0.0> : vector<16xf32>");
	ln(&b, 6, "%%_os = tensor.extract_slice %%_o[0, %%_c, 0, 0] [%s, 1, 8, 8] [1, 1, 1, 1] : %s to %s", R, yt, st);
	struct bchunks bc = {d, rw};
	const char *yo = tile_chain(&b, "%_c", nw, first, st, bdot_chunks, &bc);
	ln(&b, 6, "scf.forall.in_parallel {");
	ln(&b, 8, "tensor.parallel_insert_slice %s into %%_o[0, %%_c, 0, 0] [%s, 1, 8, 8] [1, 1, 1, 1] : %s into %s",
	    yo, R, st, yt);
	ln(&b, 6, "}");
	ln(&b, 4, "} {%s}", attrs(e));
	llm_buf_puts(e->b, b.p);
	llm_buf_free(&b);
	const char *yc = val(e, "bdc"), *yct = tensor2(rw, nc * GEMV_CHUNK, "f32");
	top(e, yc, fmt("tensor.collapse_shape %s [[0], [1, 2, 3]]", ya), fmt(": %s into %s", yt, yct));
	split_y(e, yc, yct, rw, nw, n, y);
}

/* W [n, k] f32 decoded from a tiled layout, for the products of many
 * rows (prefill): class "dequant", w[t, h, g, l] = s * q (+ m) (with
 * 4-bit codes w[t, h, g, half, j]) read in the tile order, collapsed to
 * [n, k].  The values are the decoded weights exactly, so a prefill
 * computes what it computes on them. */
static const char *
qdequant(struct em *e, const struct llm_plan_tensor *pt)
{
	int64_t n = pt->shape[0], k = pt->shape[1];
	struct qparts q = qview_float(e, pt);
	const char *wt = q.four ?
	    fmt("tensor<%" PRId64 "x%" PRId64 "x%" PRId64 "x2x%" PRId64 "xf32>", q.nt, q.R, q.ng, q.B) :
	    fmt("tensor<%" PRId64 "x%" PRId64 "x%" PRId64 "x%" PRId64 "xf32>", q.nt, q.R, q.ng, q.G);
	/* dims: t, h, g, l  or  t, h, g, half, j */
	struct gin in[3] = {
		{q.codes, q.ct, q.four ? "d0, d2, d1, d4" : "d0, d2, d1, d3", "i8"},
		{q.scales, q.st, "d0, d2, d1", q.se},
		{q.mins, q.st, "d0, d2, d1", q.se},
	};
	const char *w = generic(e, &(struct gspec){.sched = "dequant", .hint = "dq", .nin = q.mins ? 3 : 2, .in = in,
	    .otype = wt, .odyn = "", .omap = q.four ? "d0, d1, d2, d3, d4" : "d0, d1, d2, d3", .nd = q.four ? 5 : 4,
	    .iters = q.four ? "parallel, parallel, parallel, parallel, parallel" :
		"parallel, parallel, parallel, parallel",
	    .body = qvalue_body(&q, 0, 1, q.mins ? 2 : -1, 3, "%r")});
	const char *wc = val(e, "dqc");
	top(e, wc, fmt("tensor.collapse_shape %s [[0, 1], [2, 3%s]]", w, q.four ? ", 4" : ""),
	    fmt(": %s into tensor<%" PRId64 "x%" PRId64 "xf32>", wt, n, k));
	return wc;
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
 * when W's rows come in whole chunks, or to qgemv() when W is quantized
 * (prefill decodes a quantized W first: qdequant()). */
static const char *
linear(struct em *e, const char *x, struct rows r, int64_t k, const char *w_name, const char *b_name, const char *sched)
{
	const struct llm_plan_tensor *pt = weight(e, w_name, k);
	int64_t n = pt->shape[0];
	if (pt->layout && e->m->act_q8) {
		if (qa8(pt)) {
			const char *y;
			qdot(e, x, r, 1, &pt, &b_name, &y);
			return y;
		}
		x = qround(e, x, r, k);
	}
	if (e->m->act_bf16 && !pt->layout && pt->dtype == LLM_DT_BF16) {
		if (bd16(pt)) {
			const char *y;
			bdot(e, x, r, 1, &pt, &b_name, &y);
			return y;
		}
		x = bwiden(e, x, r, k);
	}
	if (pt->layout && strcmp(r.t, "1") == 0)
		return qgemv(e, x, pt, b_name);
	if (strcmp(r.t, "1") == 0 && n % GEMV_CHUNK == 0 && !pt->layout)
		return gemv(e, x, n, k, w_name, b_name);
	const char *wt = "f32", *w = pt->layout ? qdequant(e, pt) : wview(e, w_name, &wt);
	const char *yt = tensor2(r, n, "f32");
	const char *init = product_init(e, b_name, fmt("%" PRId64 "x", n), "d1", yt, r.dyn, "d0, d1", 2,
	    "parallel, parallel");
	return generic(e, &(struct gspec){.sched = sched, .hint = "mm",
	    INS({x, tensor2(r, k, "f32"), "d0, d2", "f32"},
	        {w, fmt("tensor<%" PRId64 "x%" PRId64 "x%s>", n, k, wt), "d1, d2", wt}), .init = init, .otype = yt,
	    .omap = "d0, d1", .nd = 3, .iters = "parallel, parallel, reduction", .body = product_body(wt)});
}

/* y_i = linear(x, W_i, bias_i), i < nw (at most 3), the products of the
 * same x: in one qdot() where the int8 kernels read every W_i, in one
 * bdot() where the bf16 kernel takes every W_i, else one linear() each. */
static void
linears(struct em *e, const char *x, struct rows r, int64_t k, int nw, const char *const *w_name,
    const char *const *b_name, const char **y)
{
	const struct llm_plan_tensor *pt[3];
	int fuse = e->m->act_q8 && nw <= 3;
	for (int i = 0; i < nw && fuse; i++) {
		pt[i] = weight(e, w_name[i], k);
		fuse = pt[i]->layout && qa8(pt[i]);
	}
	if (fuse) {
		qdot(e, x, r, nw, pt, b_name, y);
		return;
	}
	fuse = e->m->act_bf16 && nw <= 3;
	for (int i = 0; i < nw && fuse; i++) {
		pt[i] = weight(e, w_name[i], k);
		fuse = bd16(pt[i]);
	}
	if (fuse) {
		bdot(e, x, r, nw, pt, b_name, y);
		return;
	}
	for (int i = 0; i < nw; i++)
		y[i] = linear(e, x, r, k, w_name[i], b_name[i], "matmul");
}

static const char *
add(struct em *e, const char *a, const char *b, struct rows r, int64_t n)
{
	const char *t = tensor2(r, n, "f32");
	return generic(e, &(struct gspec){.sched = "eltwise", .hint = "res",
	    INS({a, t, "d0, d1", "f32"}, {b, t, "d0, d1", "f32"}), .otype = t, .odyn = r.dyn, .omap = "d0, d1",
	    .nd = 2, .iters = "parallel, parallel", .body = "      %r = arith.addf %a0, %a1 : f32\n"});
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
	const char *R = e->R.t, *x4 = val(e, is_q ? "q5" : "k4"), *x1 = val(e, "x1"), *x2 = val(e, "x2");
	const char *sh4, *sh3, *osh, *ot, *res;
	const char *elt = is_q ? "f32" : e->kvt;

	/* Split the halves of each head: [R, KVH, (G,) 2, HD/2]. */
	if (is_q) {
		sh4 = fmt("tensor<%sx%" PRId64 "x%" PRId64 "x2x%" PRId64 "xf32>", R, kvh, g, h2);
		sh3 = fmt("tensor<%sx%" PRId64 "x%" PRId64 "x%" PRId64 "xf32>", R, kvh, g, h2);
		top(e, x4,
		    fmt("tensor.expand_shape %s [[0], [1, 2, 3, 4]] output_shape [%s, %" PRId64 ", %" PRId64
			", 2, %" PRId64 "]",
			xp, e->R.dyn[0] ? e->R.dyn : "1", kvh, g, h2),
		    fmt(": %s into %s", tensor2(e->R, nh * hd, "f32"), sh4));
		top(e, x1,
		    fmt("tensor.extract_slice %s[0, 0, 0, 0, 0] [%s, %" PRId64 ", %" PRId64 ", 1, %" PRId64
			"] [1, 1, 1, 1, 1]",
			x4, e->R.dyn[0] ? e->R.dyn : "1", kvh, g, h2),
		    fmt(": %s to %s", sh4, sh3));
		top(e, x2,
		    fmt("tensor.extract_slice %s[0, 0, 0, 1, 0] [%s, %" PRId64 ", %" PRId64 ", 1, %" PRId64
			"] [1, 1, 1, 1, 1]",
			x4, e->R.dyn[0] ? e->R.dyn : "1", kvh, g, h2),
		    fmt(": %s to %s", sh4, sh3));
		osh = fmt("tensor<%" PRId64 "x%" PRId64 "x%sx2x%" PRId64 "x%s>", kvh, g, R, h2, elt);
	} else {
		sh4 = fmt("tensor<%sx%" PRId64 "x2x%" PRId64 "xf32>", R, kvh, h2);
		sh3 = fmt("tensor<%sx%" PRId64 "x%" PRId64 "xf32>", R, kvh, h2);
		top(e, x4,
		    fmt("tensor.expand_shape %s [[0], [1, 2, 3]] output_shape [%s, %" PRId64 ", 2, %" PRId64 "]", xp,
			e->R.dyn[0] ? e->R.dyn : "1", kvh, h2),
		    fmt(": %s into %s", tensor2(e->R, nh * hd, "f32"), sh4));
		top(e, x1,
		    fmt("tensor.extract_slice %s[0, 0, 0, 0] [%s, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", x4,
			e->R.dyn[0] ? e->R.dyn : "1", kvh, h2),
		    fmt(": %s to %s", sh4, sh3));
		top(e, x2,
		    fmt("tensor.extract_slice %s[0, 0, 1, 0] [%s, %" PRId64 ", 1, %" PRId64 "] [1, 1, 1, 1]", x4,
			e->R.dyn[0] ? e->R.dyn : "1", kvh, h2),
		    fmt(": %s to %s", sh4, sh3));
		osh = fmt("tensor<%" PRId64 "x2x%" PRId64 "x%sx%s>", kvh, h2, R, elt);
	}
	const char *ct = fmt("tensor<%sx%" PRId64 "xf32>", R, h2);
	/* out = c == 0 ? x1*cos - x2*sin : x2*cos + x1*sin */
	const char *body = fmt("      %%ci = linalg.index %d : index\n"
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
				      fmt("      %%rs = arith.select %%is0, %%r0, %%r1 : f32\n"
					  "      %%r = arith.truncf %%rs : f32 to %s\n",
					  elt));
	if (is_q) {
		/* dims (h, g, s, c, j) */
		ot = generic(e, &(struct gspec){.sched = "rope", .hint = "qr",
		    INS({x1, sh3, "d2, d0, d1, d4", "f32"}, {x2, sh3, "d2, d0, d1, d4", "f32"},
		        {cs, ct, "d2, d4", "f32"}, {sn, ct, "d2, d4", "f32"}), .otype = osh, .odyn = e->R.dyn,
		    .omap = "d0, d1, d2, d3, d4", .nd = 5,
		    .iters = "parallel, parallel, parallel, parallel, parallel", .body = body});
		res = val(e, "q");
		top(e, res, fmt("tensor.collapse_shape %s [[0], [1], [2], [3, 4]]", ot),
		    fmt(": %s into tensor<%" PRId64 "x%" PRId64 "x%sx%" PRId64 "xf32>", osh, kvh, g, R, hd));
	} else {
		/* dims (h, c, j, s) */
		ot = generic(e, &(struct gspec){.sched = "rope", .hint = "kr",
		    INS({x1, sh3, "d3, d0, d2", "f32"}, {x2, sh3, "d3, d0, d2", "f32"},
		        {cs, ct, "d3, d2", "f32"}, {sn, ct, "d3, d2", "f32"}), .otype = osh, .odyn = e->R.dyn,
		    .omap = "d0, d1, d2, d3", .nd = 4, .iters = "parallel, parallel, parallel, parallel",
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
	const char *r = generic(e, &(struct gspec){.sched = "fill", .hint = "fill", .otype = type, .odyn = dyn,
	    .omap = map.p, .nd = nd, .iters = its.p, .body = fmt("      %%r = arith.constant %s : f32\n", value)});
	llm_buf_free(&map);
	llm_buf_free(&its);
	return r;
}

/* Grouped-query attention of q [KVH, G, R, HD] over the cache positions
 * [0, L) of kc [KVH, HD, C] and vc [KVH, C, HD]; row s of the chunk sees
 * keys t <= pos + s.
 * Returns [R, H*HD] with query head h*G + g at columns of block h*G + g. */
static const char *
attention(struct em *e, const char *q, const char *kc, const char *vc)
{
	const struct llm_model_config *c = e->c;
	int64_t kvh = c->n_kv_heads, g = c->n_heads / c->n_kv_heads, hd = c->head_dim;
	const char *R = e->R.t, *kvt = e->kvt;
	const char *lt = fmt("tensor<%" PRId64 "x?x%" PRId64 "x%s>", kvh, hd, kvt), *ct = lt;
	const char *lkt = fmt("tensor<%" PRId64 "x%" PRId64 "x?x%s>", kvh, hd, kvt), *ckt = lkt;
	const char *qt = fmt("tensor<%" PRId64 "x%" PRId64 "x%sx%" PRId64 "xf32>", kvh, g, R, hd);
	const char *st = fmt("tensor<%" PRId64 "x%" PRId64 "x%sx?xf32>", kvh, g, R);
	const char *rt = fmt("tensor<%" PRId64 "x%" PRId64 "x%sxf32>", kvh, g, R);
	const char *sdyn = e->R.dyn[0] ? "%R, %L" : "%L";
	const char *kt = val(e, "keys"), *vt = val(e, "vals");
	const char *kn, *vn;
	const char *kw = widen("%a1", kvt, "%kf", &kn), *vw = widen("%a1", kvt, "%vf", &vn);
	const char *mask = "      %si = linalg.index 2 : index\n"
			   "      %ti = linalg.index 3 : index\n"
			   "      %lim = arith.addi %si, %pos : index\n"
			   "      %ok = arith.cmpi ule, %ti, %lim : index\n";

	top(e, kt, fmt("tensor.extract_slice %s[0, 0, 0] [%" PRId64 ", %" PRId64 ", %%L] [1, 1, 1]", kc, kvh, hd),
	    fmt(": %s to %s", ckt, lkt));
	top(e, vt, fmt("tensor.extract_slice %s[0, 0, 0] [%" PRId64 ", %%L, %" PRId64 "] [1, 1, 1]", vc, kvh, hd),
	    fmt(": %s to %s", ct, lt));
	/* scores (h, g, s, t) = sum_d q(h, g, s, d) k(h, d, t) */
	const char *z = fill(e, st, sdyn, 4, "0.0");
	const char *sc = generic(e, &(struct gspec){.sched = "attn", .hint = "scores",
	    INS({q, qt, "d0, d1, d2, d4", "f32"}, {kt, lkt, "d0, d4, d3", kvt}), .init = z, .otype = st,
	    .omap = "d0, d1, d2, d3", .nd = 5, .iters = "parallel, parallel, parallel, parallel, reduction",
	    .body = fmt("%s      %%p = arith.mulf %%a0, %s fastmath<contract> : f32\n"
		"      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n", kw, kn)});
	/* Softmax over t of the scaled scores, keys t > pos + s masked: the
	 * scale and the mask are applied where the scores are read (rowmax,
	 * probs), not in a pass of their own; class "softmax" shares the
	 * heads out over the threads. */
	const char *scaled = fmt("%s      %%scale = arith.constant %.17g : f32\n"
				 "      %%x = arith.mulf %%a0, %%scale : f32\n",
	    mask, 1.0 / sqrt((double)hd));
	const char *m0 = fill(e, rt, e->R.dyn, 3, "-1.0e30");
	const char *mx = generic(e, &(struct gspec){.sched = "softmax", .hint = "rowmax",
	    INS({sc, st, "d0, d1, d2, d3", "f32"}), .init = m0, .otype = rt, .omap = "d0, d1, d2", .nd = 4,
	    .iters = "parallel, parallel, parallel, reduction",
	    .body = fmt("%s      %%neg = arith.constant -1.0e30 : f32\n"
		"      %%xm = arith.select %%ok, %%x, %%neg : f32\n"
		"      %%r = arith.maximumf %%xm, %%o : f32\n", scaled)});
	const char *p = generic(e, &(struct gspec){.sched = "softmax", .hint = "probs",
	    INS({sc, st, "d0, d1, d2, d3", "f32"}, {mx, rt, "d0, d1, d2", "f32"}), .otype = st, .odyn = sdyn,
	    .omap = "d0, d1, d2, d3", .nd = 4, .iters = "parallel, parallel, parallel, parallel",
	    .body = fmt("%s      %%dd = arith.subf %%x, %%a1 : f32\n"
		"      %%ex = math.exp %%dd : f32\n"
		"      %%zf = arith.constant 0.0 : f32\n"
		"      %%r = arith.select %%ok, %%ex, %%zf : f32\n", scaled)});
	const char *l0 = fill(e, rt, e->R.dyn, 3, "0.0");
	const char *l = generic(e, &(struct gspec){.sched = "softmax", .hint = "rowsum",
	    INS({p, st, "d0, d1, d2, d3", "f32"}), .init = l0, .otype = rt, .omap = "d0, d1, d2", .nd = 4,
	    .iters = "parallel, parallel, parallel, reduction", .body = "      %r = arith.addf %o, %a0 : f32\n"});
	/* out (h, g, s, d) = sum_t p(h, g, s, t) v(h, t, d) */
	const char *a0 = fill(e, qt, e->R.dyn, 4, "0.0");
	const char *pv = generic(e, &(struct gspec){.sched = "attn", .hint = "pv",
	    INS({p, st, "d0, d1, d2, d4", "f32"}, {vt, lt, "d0, d4, d3", kvt}), .init = a0, .otype = qt,
	    .omap = "d0, d1, d2, d3", .nd = 5, .iters = "parallel, parallel, parallel, parallel, reduction",
	    .body = fmt("%s      %%p = arith.mulf %%a0, %s fastmath<contract> : f32\n"
		"      %%r = arith.addf %%o, %%p fastmath<contract> : f32\n", vw, vn)});
	/* normalise, back to rows: (s, h, g, d) */
	const char *ot = fmt("tensor<%sx%" PRId64 "x%" PRId64 "x%" PRId64 "xf32>", R, kvh, g, hd);
	const char *o = generic(e, &(struct gspec){.sched = "attn", .hint = "attn",
	    INS({pv, qt, "d1, d2, d0, d3", "f32"}, {l, rt, "d1, d2, d0", "f32"}), .otype = ot, .odyn = e->R.dyn,
	    .omap = "d0, d1, d2, d3", .nd = 4, .iters = "parallel, parallel, parallel, parallel",
	    .body = "      %r = arith.divf %a0, %a1 : f32\n"});
	const char *res = val(e, "att");
	top(e, res, fmt("tensor.collapse_shape %s [[0], [1, 2, 3]]", o),
	    fmt(": %s into %s", ot, tensor2(e->R, c->n_heads * hd, "f32")));
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
	const char *ty = which ? fmt("%" PRId64 "x?x%" PRId64 "x%s", c->n_kv_heads, c->head_dim, e->kvt) :
				 fmt("%" PRId64 "x2x%" PRId64 "x?x%s", c->n_kv_heads, c->head_dim / 2, e->kvt);
	const char *k = cindex(e, which ? "vplane" : "kplane", ((int64_t)l * 2 + which) * plane);
	const char *o = val(e, which ? "voff" : "koff");
	top(e, o, fmt("arith.muli %%P, %s", k), ": index");

	*mem = val(e, which ? "vm" : "km");
	top(e, *mem, fmt("memref.view %%kv[%s][%%P]", o), fmt(": memref<?xi8> to memref<%s>", ty));
	*ten = val(e, which ? "vc" : "kc");
	top(e, *ten, fmt("bufferization.to_tensor %s restrict writable", *mem),
	    fmt(": memref<%s> to tensor<%s>", ty, ty));
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
	const char *tt = fmt("tensor<%" PRId64 "x%" PRId64 "xf32>", C, h2);
	const char *st = fmt("tensor<%sx%" PRId64 "xf32>", R, h2);
	const char *cosT = wview(e, LLM_TENSOR_ROPE_COS, NULL), *sinT = wview(e, LLM_TENSOR_ROPE_SIN, NULL);
	const char *cs = val(e, "cos"), *sn = val(e, "sin");
	top(e, cs, fmt("tensor.extract_slice %s[%%pos, 0] [%s, %" PRId64 "] [1, 1]", cosT, Rd, h2),
	    fmt(": %s to %s", tt, st));
	top(e, sn, fmt("tensor.extract_slice %s[%%pos, 0] [%s, %" PRId64 "] [1, 1]", sinT, Rd, h2),
	    fmt(": %s to %s", tt, st));
	/* The cache views come first, so that the ops producing the new
	 * rows can write straight into the cache (eliminate-empty-tensors). */
	const char *km, *kc, *vm, *vc;
	cache_view(e, l, 0, &km, &kc);
	cache_view(e, l, 1, &vm, &vc);
	const char *qr = rope(e, q, cs, sn, 1);
	const char *kr = rope(e, k, cs, sn, 0);

	/* v [R, KVH*HD] -> [KVH, R, HD] in the cache type */
	const char *v3 = val(e, "v3"), *v3t = fmt("tensor<%sx%" PRId64 "x%" PRId64 "xf32>", R, kvh, hd);
	top(e, v3,
	    fmt("tensor.expand_shape %s [[0], [1, 2]] output_shape [%s, %" PRId64 ", %" PRId64 "]", v, Rd, kvh, hd),
	    fmt(": %s into %s", tensor2(e->R, kvh * hd, "f32"), v3t));
	const char *vtt = fmt("tensor<%" PRId64 "x%sx%" PRId64 "x%s>", kvh, R, hd, e->kvt);
	const char *vr = generic(e, &(struct gspec){.sched = "eltwise", .hint = "vt",
	    INS({v3, v3t, "d1, d0, d2", "f32"}), .otype = vtt, .odyn = e->R.dyn, .omap = "d0, d1, d2", .nd = 3,
	    .iters = "parallel, parallel, parallel",
	    .body = strcmp(e->kvt, "f32") == 0
	    ? "      %zb = arith.constant -0.0 : f32\n      %r = arith.addf %a0, %zb : f32\n"
	    : fmt("      %%r = arith.truncf %%a0 : f32 to %s\n", e->kvt)});

	/* Write the chunk's keys and values into the cache in place. */
	const char *ct = fmt("tensor<%" PRId64 "x?x%" PRId64 "x%s>", kvh, hd, e->kvt);
	const char *ctk = fmt("tensor<%" PRId64 "x%" PRId64 "x?x%s>", kvh, hd, e->kvt);
	const char *ct4 = fmt("tensor<%" PRId64 "x2x%" PRId64 "x?x%s>", kvh, h2, e->kvt);
	const char *ktt = fmt("tensor<%" PRId64 "x2x%" PRId64 "x%sx%s>", kvh, h2, R, e->kvt);
	const char *kc2 = val(e, "kc"), *vc2 = val(e, "vc"), *kall = val(e, "kall");
	top(e, kc2,
	    fmt("tensor.insert_slice %s into %s[0, 0, 0, %%pos] [%" PRId64 ", 2, %" PRId64 ", %s] [1, 1, 1, 1]", kr, kc,
		kvh, h2, Rd),
	    fmt(": %s into %s", ktt, ct4));
	top(e, vc2,
	    fmt("tensor.insert_slice %s into %s[0, %%pos, 0] [%" PRId64 ", %s, %" PRId64 "] [1, 1, 1]", vr, vc, kvh, Rd,
		hd),
	    fmt(": %s into %s", vtt, ct));
	top(e, kall, fmt("tensor.collapse_shape %s [[0], [1, 2], [3]]", kc2), fmt(": %s into %s", ct4, ctk));
	const char *att = attention(e, qr, kall, vc2);
	top(e, NULL, fmt("bufferization.materialize_in_destination %s in restrict writable %s", kc2, km),
	    fmt(": (%s, memref<%s) -> ()", ct4, ct4 + strlen("tensor<")));
	top(e, NULL, fmt("bufferization.materialize_in_destination %s in restrict writable %s", vc2, vm),
	    fmt(": (%s, memref<%s) -> ()", ct, ct + strlen("tensor<")));
	const char *o = linear(e, att, e->R, c->n_heads * hd, wname(l, LLM_ROLE_WO), NULL, "matmul");
	x = add(e, x, o, e->R, d);

	e->stage = "mlp";
	int64_t f = c->intermediate_size;
	const char *h2n = rmsnorm(e, x, e->R, wname(l, LLM_ROLE_FFN_NORM));
	const char *gu[2];
	linears(e, h2n, e->R, d, 2, (const char *[]){wname(l, LLM_ROLE_WGATE), wname(l, LLM_ROLE_WUP)},
	    (const char *[]){NULL, NULL}, gu);
	const char *gt = gu[0], *up = gu[1];
	const char *ft = tensor2(e->R, f, "f32");
	const char *act = generic(e, &(struct gspec){.sched = "eltwise", .hint = "swiglu",
	    INS({gt, ft, "d0, d1", "f32"}, {up, ft, "d0, d1", "f32"}), .otype = ft, .odyn = e->R.dyn,
	    .omap = "d0, d1", .nd = 2, .iters = "parallel, parallel",
	    .body = "      %ng = arith.negf %a0 : f32\n"
	    "      %eg = math.exp %ng : f32\n"
	    "      %one = arith.constant 1.0 : f32\n"
	    "      %den = arith.addf %one, %eg : f32\n"
	    "      %sg = arith.divf %a0, %den : f32\n"
	    "      %r = arith.mulf %sg, %a1 : f32\n"});
	const char *dn = linear(e, act, e->R, f, wname(l, LLM_ROLE_WDOWN), NULL, "matmul");
	return add(e, x, dn, e->R, d);
}

int
llm_emit_phase(struct llm_buf *b, const struct llm_model *m, const struct llm_phase *ph)
{
	struct em e = {0};
	const struct llm_model_config *c = &m->cfg;
	const struct llm_phase_spec *ps = llm_phase_spec_by_name(ph->name);
	int decode = ph->tokens == 1 && ps && ps->single;
	int64_t d = c->hidden_size, V = c->vocab_size;

	e.b = b;
	e.m = m;
	e.c = c;
	e.R = decode ? (struct rows){"1", ""} : (struct rows){"?", "%R"};
	e.wt = elt_of(m->weight_dtype);
	e.kvt = elt_of(m->kv_dtype);
	e.layer = LAYER_PRE;
	for (size_t i = 0; i < m->ntensors; i++) /* i4 codes the int8 kernels read (Q4_0) */
		e.xk |= m->tensors[i].layout && m->tensors[i].ql.code == LLM_QCODE_I4 && qa8(&m->tensors[i]);
	e.stage = "embed";

	llm_buf_printf(b, "// %s of a %s model (%s): generated by llm-import; see share/doc/llm/ir.txt\n", ph->name,
	    m->family, m->architecture);
	llm_buf_printf(b, "module {\n  func.func @%s(", ph->entry);
	for (int i = 0; i < LLM_PHASE_NARGS; i++)
		llm_buf_printf(b, "%s%%%s: %s", i ? ", " : "", llm_phase_args[i].ssa, llm_phase_args[i].type);
	llm_buf_puts(b, ") attributes {llvm.emit_c_interface} {\n");

	/* Prologue: positions and the embedding gather. */
	top(&e, "%c1", "arith.constant", "1 : index");
	top(&e, "%pos", "arith.index_cast %pos_i", ": i64 to index");
	if (decode)
		top(&e, "%R", "arith.constant", "1 : index");
	else
		top(&e, "%R", "arith.index_cast %n_tokens", ": i64 to index");
	top(&e, "%L", "arith.addi %pos, %R", ": index");
	/* The positions a row of the cache holds, P: %kv is 2 L KVH HD P
	 * elements of the kv dtype (the caller's -c; the RoPE tables cover
	 * max_context, the bound of P). */
	top(&e, "%c0", "arith.constant", "0 : index");
	top(&e, "%kvbytes", "memref.dim", "%kv, %c0 : memref<?xi8>"); /* attr-dict first */
	const char *row = cindex(&e, "kvrow",
	    2 * (int64_t)c->n_layers * c->n_kv_heads * c->head_dim * (int64_t)llm_dtype_size(m->kv_dtype));
	top(&e, "%P", fmt("arith.divui %%kvbytes, %s", row), ": index");
	const char *tmt = fmt("memref<%sxi64>", e.R.t), *ttt = fmt("tensor<%sxi64>", e.R.t);
	top(&e, "%tokm", fmt("memref.subview %%tokens[0] [%s] [1]", decode ? "1" : "%R"),
	    fmt(": memref<?xi64> to %s", tmt));
	top(&e, "%tok", "bufferization.to_tensor %tokm restrict", fmt(": %s to %s", tmt, ttt));
	const struct llm_plan_tensor *pe = llm_model_tensor(m, llm_role_runtime(LLM_ROLE_EMBED));
	const char *x;
	if (pe && pe->layout)
		x = qgather(&e, pe, ttt);
	else {
		const char *et, *emb = wview(&e, llm_role_runtime(LLM_ROLE_EMBED), &et);
		const char *en, *ew = widen("%wb", et, "%r", &en);
		x = generic(&e, &(struct gspec){.sched = "gather", .hint = "x", .otype = tensor2(e.R, d, "f32"),
		    .odyn = e.R.dyn, .omap = "d0, d1", .nd = 2, .iters = "parallel, parallel",
		    .body = fmt("      %%si = linalg.index 0 : index\n"
			"      %%j = linalg.index 1 : index\n"
			"      %%id = tensor.extract %%tok[%%si] : %s\n"
			"      %%ii = arith.index_cast %%id : i64 to index\n"
			"      %%wb = tensor.extract %s[%%ii, %%j] : tensor<%" PRId64 "x%" PRId64 "x%s>\n"
			"%s%s",
			ttt, emb, V, d, et, ew,
			*ew ? "" : "      %zb = arith.constant -0.0 : f32\n      %r = arith.addf %wb, %zb : f32\n")});
	}

	for (int l = 0; l < c->n_layers; l++)
		x = layer(&e, x, l);

	/* Head: final norm and LM head on the last valid row only. */
	e.layer = LAYER_POST;
	e.stage = "head";
	struct rows one = {"1", ""};
	top(&e, "%last", "arith.subi %R, %c1", ": index");
	const char *xl = val(&e, "xlast");
	top(&e, xl, fmt("tensor.extract_slice %s[%%last, 0] [1, %" PRId64 "] [1, 1]", x, d),
	    fmt(": %s to tensor<1x%" PRId64 "xf32>", tensor2(e.R, d, "f32"), d));
	const char *hn = rmsnorm(&e, xl, one, llm_role_runtime(LLM_ROLE_FINAL_NORM));
	enum llm_role head = llm_role_present(LLM_ROLE_LM_HEAD, c) ? LLM_ROLE_LM_HEAD : LLM_ROLE_EMBED;
	const char *lg = linear(&e, hn, one, d, llm_role_runtime(head), NULL, "head");
	const char *lc = val(&e, "lg");
	top(&e, lc, fmt("tensor.collapse_shape %s [[0, 1]]", lg),
	    fmt(": tensor<1x%" PRId64 "xf32> into tensor<%" PRId64 "xf32>", V, V));
	top(&e, "%lgm", fmt("memref.subview %%logits[0] [%" PRId64 "] [1]", V),
	    fmt(": memref<?xf32> to memref<%" PRId64 "xf32>", V));
	top(&e, NULL, fmt("bufferization.materialize_in_destination %s in restrict writable %%lgm", lc),
	    fmt(": (tensor<%" PRId64 "xf32>, memref<%" PRId64 "xf32>) -> ()", V, V));
	top(&e, NULL, "func.return", "");
	llm_buf_puts(b, "  }\n");
	/* The int8 kernels, defined by llm-lower for the target. */
	if (e.qdot)
		llm_buf_puts(b,
		    "  llvm.func @llm_qdot_i8(vector<16xi32>, vector<64xi8>, vector<64xi8>, vector<16xi32>)"
		    " -> vector<16xi32>\n"
		    "  llvm.func @llm_qdot_u7(vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>\n");
	/* The bf16 kernel, likewise. */
	if (e.bdot)
		llm_buf_puts(b,
		    "  llvm.func @llm_bdot(vector<16xf32>, vector<32xbf16>, vector<32xbf16>)"
		    " -> vector<16xf32>\n");

	/* The plan fingerprint, so the runtime can refuse other weights. */
	llm_buf_printf(b,
	    "  func.func @%s_fingerprint() -> i64 attributes {llvm.emit_c_interface} {\n"
	    "    %%f = arith.constant %" PRId64 " : i64\n"
	    "    func.return %%f : i64\n  }\n}\n",
	    ph->entry, (int64_t)m->fingerprint);
	pool_free();
	return 0;
}
