/* emit_int.h: what the parts of the phases' emitter share.  Not a public
 * interface: llm_emit_phase (emit.h) is.  The parts stand in floors, each
 * calling only those below it:
 *   top     emit.c          the graph: prologue, embedding, layers, head,
 *                           the module's tail
 *   middle  emit_int8.c     the products with block-quantized weights and
 *                           the int8 kernels' products
 *           emit_bf16.c     the products with bf16 activations
 *           emit_tile.c     prefill's products on the tile kernels (int8
 *                           and bf16), the alternative branch that
 *                           em_qdot and em_bdot open: they call it
 *   ground  emit_weights.c  the weights as the kernels read them
 *           emit_ir.c       the MLIR text primitives, the row and tile
 *                           machinery */
#ifndef LLM_EMIT_INT_H
#define LLM_EMIT_INT_H

#include <stdint.h>

#include "emit.h"
#include "kernels.h"

/* Rows of W per GEMV chunk and per stream (see em_gemv).  The chunk, one
 * scf.forall iteration, is share/llm/transforms/mkscript.py's GV_NC (the
 * chunk of the other single-row products, classes matmul and head), and
 * its GV_NR divides the stream: tests/llm-lower.bats fails when they
 * disagree, or when the scripts are not what mkscript.py writes. */
#define GEMV_CHUNK 64
#define GEMV_STREAM 8

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
	const char *bx, *bxr; /* the activations last rounded to bf16, and
	                       * the rounding (bround) */
	unsigned kernels;     /* the kernels called (kernels.h): bit 1 << enum llm_kernel */
};

/* The three parts of a matrix in a tiled layout (quant.h) as tensors:
 * codes [n/8, k/G, 8, G] i8 (4-bit codes: [n/8, k/G, 8, G/2], two a
 * byte), scales and (with minimums) offsets [n/8, k/G, 8] f32, at their
 * offsets inside the tensor's bytes.  B is the bytes of a group's codes
 * (G or G/2; 5- and 6-bit codes: G * bits / 8 on average, their pieces
 * spanning rows), four says the codes are nibbles, pk that they are 5 or
 * 6 bits in pieces (quant.h; em_qpiece reads them as int8). */
struct qparts {
	const char *codes, *scales, *mins;
	const char *ct, *st;             /* their tensor types */
	const char *se;                  /* the scales' and offsets' element type: f32, f16, or i8 ("-sub8") */
	const char *sd, *md, *dt;        /* "-sub8": the blocks' d and -dmin [n/8, k/256, 8] f16, their type */
	const char *pc, *pct, *ps, *pst; /* prefetch: codes [nt*ng, pieces*64] and scales [nt*ng, R] memrefs, types */
	int64_t nt, ng, R, G, B, gpb;    /* gpb: "-sub8" groups a block */
	int four, code, sub;
	int pk, np, pb; /* 5- or 6-bit codes: codes [n/8, k/G, np, pb], np pieces of pb bytes a group */
};

struct gin {
	const char *v, *type, *map, *elt;
};

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

/* emit_ir.c: the MLIR text primitives */
const char *em_attrs(struct em *e);
const char *em_cindex(struct em *e, const char *hint, int64_t v);
const char *em_fmt(const char *f, ...);
const char *em_generic(struct em *e, const struct gspec *g);
const char *em_keep(char *p);
const char *em_mview_at(struct em *e, uint64_t off, const char *ty);
void em_pool_free(void);
const char *em_product_init(struct em *e, const char *b_name, const char *bshape, const char *bmap, const char *yt,
    const char *dyn, const char *omap, int nd, const char *iters);
const char *em_tensor2(struct rows r, int64_t n, const char *t);
void em_top(struct em *e, const char *lhs, const char *pre, const char *post);
const char *em_val(struct em *e, const char *hint);
const char *em_view_at(struct em *e, uint64_t off, const char *ty);
const char *em_widen(const char *v, const char *t, const char *res, const char **name);
const char *em_wview_as(struct em *e, const char *name, const char *shape_as, const char **elt);

/* emit_ir.c: the row and tile machinery */
const char *em_lanes(int n, int times);
void em_ln(struct llm_buf *b, int ind, const char *f, ...);
void em_rd(struct llm_buf *b, int ind, const char *res, const char *src, const char *idx, const char *pad,
    const char *st, const char *vt);
void em_row_passes(struct llm_buf *b, int ind, struct rows rw, const char *init, const char *st, const char *res, int n,
    void (*pass)(struct llm_buf *, const void *, int), const void *arg);
void em_split_y(struct em *e, const char *ya, const char *yt, struct rows rw, int nw, const int64_t *n, const char **y);
const char *em_tile_chain(struct llm_buf *b, const char *iv, int nw, const int64_t *first, const char *st,
    void (*body)(struct llm_buf *, int, void *), void *arg);
void em_tiles_close(struct em *e, struct llm_buf *b, const char *rows, const char *ty);
void em_tiles_open(struct llm_buf *b, const char *res, const char *ty, const char *param, const char *tt);

/* emit_weights.c */
int em_bd16(const struct llm_plan_tensor *pt);
int em_qa8(const struct llm_plan_tensor *pt);
struct qparts em_qinfo(const struct llm_plan_tensor *t);
void em_qpiece(struct llm_buf *b, int ind, const struct qparts *q, const char *piece, const char *res);
void em_qscales(struct llm_buf *b, const struct qparts *q, int ind);
const char *em_qscales_once(struct llm_buf *b, const struct qparts *q, const char **sx, const char **mx);
struct qparts em_qview_as(struct em *e, const struct llm_plan_tensor *t, int pieces);

/* emit_tile.c */
const char *em_btile(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char *init, const char *yt);
int em_btile_ok(const struct llm_plan_tensor *pt);
const char *em_qtile(struct em *e, const struct qact *a, struct rows rw, int nw,
    const struct llm_plan_tensor *const *pt, const char *const *b_name, const int64_t *first, int64_t nt,
    const char *init, const char *yt);
int em_qtile_ok(const struct llm_plan_tensor *pt);

/* emit_int8.c */
struct qact em_qact(struct em *e, const char *x, struct rows rw, int64_t k);
const char *em_qdequant(struct em *e, const struct llm_plan_tensor *pt);
void em_qdot(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char **y);
const char *em_qgather(struct em *e, const struct llm_plan_tensor *pt, const char *ttt);
const char *em_qgemv(struct em *e, const char *x, const struct llm_plan_tensor *pt, const char *b_name);
const char *em_qround(struct em *e, const char *x, struct rows r, int64_t k);

/* emit_bf16.c */
void em_bdot(struct em *e, const char *x, struct rows rw, int nw, const struct llm_plan_tensor *const *pt,
    const char *const *b_name, const char **y);
const char *em_bwiden(struct em *e, const char *x, struct rows r, int64_t k);

#endif
