/* split.c: see split.h.
 *
 * The work is done on the IR through the MLIR C API only: parse, walk the
 * top-level ops of the phase function, clone them into new functions,
 * rewrite the operands that refer to values outside the clone, verify and
 * print.  Every clone is remapped before the source module is destroyed
 * (an unremapped clone would point into freed memory), and all use-def
 * analysis is done on the source before any clone adds uses to it. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "../../base/json.h"
#include "../../formats/model.h"
#include "../../formats/phase.h"
#include "../../base/util.h"
#include "ir.h"
#include "split.h"
#include "verifypart.h"

enum op_class {
	C_PART,  /* belongs to a partition */
	C_GLUE,  /* stays in the glue: weight and cache views, the return */
	C_REMAT, /* copied into every partition (and the glue) that uses it */
};

struct part {
	int64_t layer;
	MlirStringRef stage;
	size_t first, last;  /* positions of its first and last op */
	size_t *ops, nops;   /* positions of its ops, in order */
	MlirValue *in, *out; /* values of the source that cross its bounds */
	size_t nin, nout, cap_in, cap_out;
	size_t kernel; /* index into split.kernels */
};

struct kernel {
	char *kind;    /* pipeline kind: prefill or decode */
	char *name;    /* symbol */
	char *file;    /* relative to the parts directory */
	char *generic; /* generic form with sym_name "k": the identity */
	char *text;    /* the module as written */
	uint64_t hash;
	size_t uses;
};

struct outfile {
	char *rel; /* relative to the parts directory */
	char *text;
};

struct split {
	const struct llm_model *m;
	const struct llm_split_opts *o;
	MlirContext ctx;
	char *absparts; /* realpath of the parts directory */
	struct kernel *kernels;
	size_t nkernels;
	struct outfile *files;
	size_t nfiles;
	struct llm_buf phases_json;
};

struct phase {
	struct split *s;
	const struct llm_phase *ph;
	char *path; /* the phase's MLIR file */
	char kind[32];
	MlirModule mod;
	MlirOperation func;
	MlirBlock body;
	MlirOperation *ops; /* top-level ops of the entry function, in order */
	size_t nops;
	int64_t *ids, *layers;
	MlirStringRef *stages;
	enum op_class *cls;
	size_t *part;          /* partition of a C_PART op */
	struct llm_ptrmap pos; /* op -> position + 1 */
	struct part *parts;
	size_t nparts;
};

#define NOPART ((size_t)-1)

const char *
llm_split_strategy_name(enum llm_split_strategy s)
{
	switch (s) {
	case LLM_SPLIT_NONE:
		return "none";
	case LLM_SPLIT_LAYER:
		return "layer";
	case LLM_SPLIT_STAGE:
		return "stage";
	}
	return "?";
}

int
llm_split_strategy_parse(const char *name, enum llm_split_strategy *out)
{
	for (int s = LLM_SPLIT_NONE; s <= LLM_SPLIT_STAGE; s++)
		if (strcmp(name, llm_split_strategy_name(s)) == 0) {
			*out = s;
			return 0;
		}
	return llm_seterr("unknown strategy '%s' (none, layer or stage)", name);
}

/* ---- small helpers ---- */

/* The path of `to` relative to the directory `from` (both absolute). */
static char *
relpath(const char *from, const char *to)
{
	struct llm_buf b = {0};
	size_t i = 0, common = 0;

	/* The longest common prefix that ends at a component boundary. */
	while (from[i] && to[i] && from[i] == to[i]) {
		if (from[i] == '/')
			common = i + 1;
		i++;
	}
	if (!from[i] && (to[i] == '/' || !to[i]))
		common = i + (to[i] == '/');
	for (const char *p = from + common; *p; p++)
		if (p == from + common || p[-1] == '/')
			if (*p != '/')
				llm_buf_puts(&b, "../");
	llm_buf_puts(&b, to + common);
	return b.p;
}

static char *
abspath(const char *path)
{
	char buf[PATH_MAX];
	if (!realpath(path, buf)) {
		llm_seterr("%s:", path);
		return NULL;
	}
	return llm_xstrdup(buf);
}

static size_t
pos_of(const struct phase *p, MlirOperation op)
{
	const void *v;
	if (!llm_ptrmap_get(&p->pos, op.ptr, &v))
		return NOPART;
	return (size_t)(uintptr_t)v - 1;
}

/* Where a source value comes from.  Returns -1 for an argument of the
 * entry function (*idx: its number), the position of a top-level op (*idx:
 * the result number), or -2 for a value defined inside some op's region
 * (or outside the function). */
static ptrdiff_t
def_pos(const struct phase *p, MlirValue v, intptr_t *idx)
{
	MlirOperation op;
	switch (llm_ir_def_in(p->body, v, &op, idx)) {
	case LLM_IR_ARG:
		return -1;
	case LLM_IR_TOP:
		return (ptrdiff_t)pos_of(p, op);
	default:
		return -2;
	}
}

/* The position of the top-level op that contains op (maybe op itself). */
static size_t
top_pos(const struct phase *p, MlirOperation op)
{
	MlirOperation t = llm_ir_ancestor_in(p->body, op);
	return mlirOperationIsNull(t) ? NOPART : pos_of(p, t);
}

/* The top-level op holding a value defined in a nested region. */
static size_t
nested_owner(const struct phase *p, MlirValue v)
{
	MlirOperation op;
	intptr_t idx;
	if (llm_ir_def_in(p->body, v, &op, &idx) != LLM_IR_NESTED)
		return NOPART;
	return pos_of(p, op);
}

/* "'op.name' (llm.id N, line L)" for messages. */
static char *
op_desc(const struct phase *p, size_t i)
{
	MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(p->ops[i]));
	return llm_xasprintf("'%.*s' (llm.id %lld, line %d)", (int)n.length, n.data, (long long)p->ids[i],
	    llm_ir_line(p->ops[i]));
}

static int
phase_err(const struct phase *p, size_t i, const char *what)
{
	char *d = op_desc(p, i);
	llm_seterr("%s: op %s %s", p->path, d, what);
	free(d);
	return -1;
}

/* ---- reading and classifying the phase function ---- */

static int
load_phase(struct phase *p)
{
	struct split *s = p->s;
	size_t n = 0, cap = 0;

	if (llm_phase_kind(p->ph->name, p->kind, sizeof(p->kind)) < 0)
		return llm_seterr("%s: phase '%s': %s", s->m->path, p->ph->name, llm_errmsg());
	if (llm_ir_parse(s->ctx, p->path, &p->mod) < 0)
		return -1;
	p->func = llm_ir_find_func(p->mod, p->ph->entry);
	if (mlirOperationIsNull(p->func))
		return llm_seterr("%s: no func.func '@%s' (the entry of phase '%s' in %s)", p->path, p->ph->entry,
		    p->ph->name, s->m->path);
	MlirRegion r = mlirOperationGetRegion(p->func, 0);
	p->body = mlirRegionGetFirstBlock(r);
	if (mlirBlockIsNull(p->body))
		return llm_seterr("%s: '@%s' has no body", p->path, p->ph->entry);
	if (!mlirBlockIsNull(mlirBlockGetNextInRegion(p->body)))
		return llm_seterr("%s: '@%s' has more than one block; llm-split cuts straight-line functions only",
		    p->path, p->ph->entry);

	for (MlirOperation op = mlirBlockGetFirstOperation(p->body); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			p->ops = llm_xreallocarray(p->ops, cap, sizeof(*p->ops));
			p->ids = llm_xreallocarray(p->ids, cap, sizeof(*p->ids));
			p->layers = llm_xreallocarray(p->layers, cap, sizeof(*p->layers));
			p->stages = llm_xreallocarray(p->stages, cap, sizeof(*p->stages));
		}
		p->ops[n] = op;
		llm_ptrmap_put(&p->pos, op.ptr, (void *)(uintptr_t)(n + 1));
		n++;
	}
	p->nops = n;
	if (n == 0 || !llm_ir_is(p->ops[n - 1], "func.return"))
		return llm_seterr("%s: '@%s' does not end in func.return", p->path, p->ph->entry);

	struct llm_ptrmap seen = {0};
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		MlirOperation op = p->ops[i];
		MlirStringRef nm = mlirIdentifierStr(mlirOperationGetName(op));
		const void *prev, *key;
		if (llm_ir_attr_i64(op, "llm.id", &p->ids[i]) != 1 || p->ids[i] < 0) {
			rc = llm_seterr("%s:%d: op '%.*s' has no llm.id (an i64 >= 0)", p->path, llm_ir_line(op),
			    (int)nm.length, nm.data);
			break;
		}
		if (llm_ir_attr_i64(op, "llm.layer", &p->layers[i]) != 1)
			rc = phase_err(p, i, "has no llm.layer (an i64)");
		else if (llm_ir_attr_str(op, "llm.stage", &p->stages[i]) != 1)
			rc = phase_err(p, i, "has no llm.stage (a string)");
		else if (mlirOperationGetNumSuccessors(op) > 0)
			rc = phase_err(p, i, "has successors; llm-split cuts straight-line functions only");
		else if (llm_ptrmap_get(&seen, key = (const void *)(uintptr_t)(p->ids[i] + 1), &prev)) {
			char *d = op_desc(p, i);
			rc = llm_seterr("%s: op %s repeats the llm.id of line %d", p->path, d,
			    llm_ir_line(p->ops[(size_t)(uintptr_t)prev - 1]));
			free(d);
		} else
			llm_ptrmap_put(&seen, key, (const void *)(uintptr_t)(i + 1));
	}
	llm_ptrmap_free(&seen);
	return rc;
}

/* A memref.view goes to the glue when all its operands are there too
 * (function arguments, copied constants, the index arithmetic below): the
 * partitions then receive the view, not its offset, and the layers become
 * structurally equal.  So does the index arithmetic of view offsets and
 * sizes: memref.dim of an argument, and arith.muli / divui on values of
 * the glue and constants, at least one of the glue (the KV cache's run-time
 * positions and the layers' offsets from them). */
static int
hoistable(const struct phase *p, size_t i)
{
	MlirOperation op = p->ops[i];
	int view = llm_ir_is(op, "memref.view"), dim = llm_ir_is(op, "memref.dim");
	int arith = llm_ir_is(op, "arith.muli") || llm_ir_is(op, "arith.divui");
	int glue = 0;
	if (!view && !dim && !arith)
		return 0;
	for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); k++) {
		intptr_t idx;
		ptrdiff_t d = def_pos(p, mlirOperationGetOperand(op, k), &idx);
		if (d == -1) {
			if (arith)
				return 0;
			continue;
		}
		if (d < 0 || (p->cls[d] != C_REMAT && p->cls[d] != C_GLUE))
			return 0;
		if (dim && k == 0)
			return 0;
		glue |= p->cls[d] == C_GLUE;
	}
	return !arith || glue;
}

static int
same_key(const struct phase *p, const struct part *pt, size_t i)
{
	switch (p->s->o->strategy) {
	case LLM_SPLIT_NONE:
		return 1;
	case LLM_SPLIT_LAYER:
		return pt->layer == p->layers[i];
	case LLM_SPLIT_STAGE:
		return pt->layer == p->layers[i] && mlirStringRefEqual(pt->stage, p->stages[i]);
	}
	return 0;
}

static void
classify(struct phase *p)
{
	p->cls = llm_xcalloc(p->nops, sizeof(*p->cls));
	p->part = llm_xcalloc(p->nops, sizeof(*p->part));
	for (size_t i = 0; i < p->nops; i++) {
		p->part[i] = NOPART;
		if (i == p->nops - 1)
			p->cls[i] = C_GLUE;
		else if (llm_ir_is_remat(p->ops[i]))
			p->cls[i] = C_REMAT;
		else if (p->s->o->strategy != LLM_SPLIT_NONE && hoistable(p, i))
			p->cls[i] = C_GLUE;
		else
			p->cls[i] = C_PART;
	}
	for (size_t i = 0; i < p->nops; i++) {
		if (p->cls[i] != C_PART)
			continue;
		struct part *pt = p->nparts ? &p->parts[p->nparts - 1] : NULL;
		if (!pt || !same_key(p, pt, i)) {
			p->parts = llm_xreallocarray(p->parts, p->nparts + 1, sizeof(*p->parts));
			pt = &p->parts[p->nparts++];
			memset(pt, 0, sizeof(*pt));
			pt->layer = p->layers[i];
			pt->stage = p->stages[i];
			pt->first = i;
		}
		pt->ops = llm_xreallocarray(pt->ops, pt->nops + 1, sizeof(*pt->ops));
		pt->ops[pt->nops++] = i;
		pt->last = i;
		p->part[i] = (size_t)(pt - p->parts);
	}
}

/* ---- use-def analysis: what crosses the bounds of each partition ---- */

struct scan {
	struct phase *p;
	struct part *pt;
	size_t pi, top; /* partition index, position of the walked op */
	struct llm_ptrmap *seen;
	int err;
};

static void
add_value(MlirValue **vals, size_t *n, size_t *cap, MlirValue v)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 8;
		*vals = llm_xreallocarray(*vals, *cap, sizeof(**vals));
	}
	(*vals)[(*n)++] = v;
}

static MlirWalkResult
scan_inputs(MlirOperation op, void *user)
{
	struct scan *sc = user;
	struct phase *p = sc->p;

	for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); k++) {
		MlirValue v = mlirOperationGetOperand(op, k);
		intptr_t idx;
		ptrdiff_t d = def_pos(p, v, &idx);
		if (d == -2) {
			/* Defined in a region: it must be one of the walked op's own. */
			if (nested_owner(p, v) != sc->top) {
				phase_err(p, sc->top, "uses a value defined inside the region of another op");
				sc->err = 1;
				return MlirWalkResultInterrupt;
			}
			continue;
		}
		if (d >= 0 && (p->cls[d] == C_REMAT || p->part[d] == sc->pi))
			continue;
		if (d >= 0 && p->cls[d] == C_PART && p->part[d] > sc->pi) {
			phase_err(p, sc->top, "uses a value produced by a later partition");
			sc->err = 1;
			return MlirWalkResultInterrupt;
		}
		if (!llm_ptrmap_get(sc->seen, v.ptr, NULL)) {
			llm_ptrmap_put(sc->seen, v.ptr, NULL);
			add_value(&sc->pt->in, &sc->pt->nin, &sc->pt->cap_in, v);
		}
	}
	return MlirWalkResultAdvance;
}

/* Follows v back through ops whose result is (a view of, or written in
 * place into) one of their operands.  1 when that chain reaches a value
 * from outside partition pi: returning v would then return (part of) an
 * argument's buffer, which bufferization may drop from the signature or
 * copy, breaking the call's ABI or the in-place writes. */
static int
aliases_input(const struct phase *p, size_t pi, MlirValue v)
{
	static const char *const views[] = {
		"tensor.expand_shape",
		"tensor.collapse_shape",
		"tensor.cast",
		"tensor.extract_slice",
		"tensor.reshape",
		"bufferization.to_tensor",
		"memref.view",
		"memref.subview",
		"memref.cast",
		"memref.expand_shape",
		"memref.collapse_shape",
		"memref.reinterpret_cast",
	};
	for (;;) {
		intptr_t idx;
		ptrdiff_t d = def_pos(p, v, &idx);
		if (d == -1 || (d >= 0 && p->cls[d] == C_GLUE) || (d >= 0 && p->part[d] != pi && p->cls[d] == C_PART))
			return 1;
		if (d < 0 || p->cls[d] == C_REMAT)
			return 0;
		MlirOperation op = p->ops[d];
		MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
		int next = -1;
		for (size_t i = 0; i < LLM_NELEM(views); i++)
			if (llm_ir_is(op, views[i]))
				next = 0;
		if (llm_ir_is(op, "tensor.insert_slice"))
			next = 1;
		else if (n.length > 7 && strncmp(n.data, "linalg.", 7) == 0 && mlirOperationGetNumResults(op) > 0)
			/* Destination style: result idx is written into its init,
			 * the operands after the inputs. */
			next = (int)(mlirOperationGetNumOperands(op) - mlirOperationGetNumResults(op) + idx);
		if (next < 0 || next >= mlirOperationGetNumOperands(op))
			return 0;
		v = mlirOperationGetOperand(op, next);
	}
}

static int
scan_part(struct phase *p, size_t pi)
{
	struct part *pt = &p->parts[pi];
	struct llm_ptrmap seen = {0};
	struct scan sc = {p, pt, pi, 0, &seen, 0};

	for (size_t k = 0; k < pt->nops; k++) {
		sc.top = pt->ops[k];
		mlirOperationWalk(p->ops[sc.top], scan_inputs, &sc, MlirWalkPreOrder);
		if (sc.err) {
			llm_ptrmap_free(&seen);
			return -1;
		}
	}
	llm_ptrmap_free(&seen);

	/* Outputs: results used by an op outside the partition. */
	for (size_t k = 0; k < pt->nops; k++) {
		size_t i = pt->ops[k];
		MlirOperation op = p->ops[i];
		for (intptr_t r = 0; r < mlirOperationGetNumResults(op); r++) {
			MlirValue v = mlirOperationGetResult(op, r);
			int out = 0;
			for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
			    u = mlirOpOperandGetNextUse(u)) {
				size_t t = top_pos(p, mlirOpOperandGetOwner(u));
				if (t == NOPART)
					return phase_err(p, i, "has a use outside the entry function");
				if (p->cls[t] != C_PART || p->part[t] != pi)
					out = 1;
			}
			if (!out)
				continue;
			if (mlirTypeIsAMemRef(mlirValueGetType(v)))
				return phase_err(p, i,
				    "yields a memref used outside its partition; "
				    "the cut would pass a buffer between kernels (keep its producer and users "
				    "together)");
			if (aliases_input(p, pi, v))
				return phase_err(p, i,
				    "yields a value used outside its partition that aliases "
				    "a buffer from outside it (in-place update or view across the cut)");
			add_value(&pt->out, &pt->nout, &pt->cap_out, v);
		}
	}
	return 0;
}

/* ---- building functions ---- */

static MlirNamedAttribute
named(MlirContext ctx, const char *name, MlirAttribute a)
{
	return mlirNamedAttributeGet(mlirIdentifierGet(ctx, LLM_SREF(name)), a);
}

static MlirType *
value_types(const MlirValue *v, size_t n)
{
	MlirType *t = llm_xcalloc(n, sizeof(*t));
	for (size_t i = 0; i < n; i++)
		t[i] = mlirValueGetType(v[i]);
	return t;
}

/* A func.func with an empty region (a declaration when private). */
static MlirOperation
make_func(MlirContext ctx, const char *name, const struct part *pt, int private)
{
	MlirOperationState st = mlirOperationStateGet(LLM_SREF("func.func"), mlirLocationUnknownGet(ctx));
	MlirType *in = value_types(pt->in, pt->nin), *out = value_types(pt->out, pt->nout);
	MlirType ft = mlirFunctionTypeGet(ctx, (intptr_t)pt->nin, in, (intptr_t)pt->nout, out);
	MlirNamedAttribute attrs[3] = {
		named(ctx, "sym_name", mlirStringAttrGet(ctx, LLM_SREF(name))),
		named(ctx, "function_type", mlirTypeAttrGet(ft)),
		named(ctx, "sym_visibility", mlirStringAttrGet(ctx, LLM_SREF("private"))),
	};
	MlirRegion r = mlirRegionCreate();

	mlirOperationStateAddAttributes(&st, private ? 3 : 2, attrs);
	mlirOperationStateAddOwnedRegions(&st, 1, &r);
	free(in);
	free(out);
	return mlirOperationCreate(&st);
}

/* Rewrites the operands of a fresh clone (top, already in block) that
 * still refer to top-level values of the source: through map, or to a
 * copy of an allowlisted constant made just before top. */
struct remap {
	struct phase *p;
	struct llm_ptrmap *map;
	MlirBlock block;
	MlirOperation top;
	size_t src; /* position of the source op */
	int err;
};

static MlirWalkResult
remap_cb(MlirOperation op, void *user)
{
	struct remap *rm = user;
	struct phase *p = rm->p;

	for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); k++) {
		MlirValue v = mlirOperationGetOperand(op, k);
		const void *nv;
		intptr_t idx;
		if (llm_ptrmap_get(rm->map, v.ptr, &nv)) {
			mlirOperationSetOperand(op, k, (MlirValue){nv});
			continue;
		}
		ptrdiff_t d = def_pos(p, v, &idx);
		if (d == -2)
			continue; /* defined inside the clone: cloning renamed it */
		if (d >= 0 && p->cls[d] == C_REMAT) {
			MlirOperation c = mlirOperationClone(p->ops[d]);
			llm_ir_strip_placement(c);
			mlirBlockInsertOwnedOperationBefore(rm->block, rm->top, c);
			for (intptr_t r = 0; r < mlirOperationGetNumResults(c); r++)
				llm_ptrmap_put(rm->map, mlirOperationGetResult(p->ops[d], r).ptr,
				    mlirOperationGetResult(c, r).ptr);
			mlirOperationSetOperand(op, k, mlirOperationGetResult(c, idx));
			continue;
		}
		phase_err(p, rm->src, "uses a value that is not available where it is placed");
		rm->err = 1;
		return MlirWalkResultInterrupt;
	}
	return MlirWalkResultAdvance;
}

struct callee {
	MlirStringRef name;
	int found;
};

static MlirWalkResult
callee_cb(MlirOperation op, void *user)
{
	struct callee *c = user;
	if (!llm_ir_is(op, "llvm.call"))
		return MlirWalkResultAdvance;
	MlirAttribute a = mlirOperationGetInherentAttributeByName(op, LLM_SREF("callee"));
	if (!mlirAttributeIsNull(a) && mlirAttributeIsAFlatSymbolRef(a) &&
	    mlirStringRefEqual(mlirFlatSymbolRefAttrGetValue(a), c->name)) {
		c->found = 1;
		return MlirWalkResultInterrupt;
	}
	return MlirWalkResultAdvance;
}

/* 1 if op holds an llvm.call of the function name. */
static int
calls(MlirOperation op, MlirStringRef name)
{
	struct callee c = {name, 0};
	mlirOperationWalk(op, callee_cb, &c, MlirWalkPreOrder);
	return c.found;
}

/* Clones source op i to the end of block, remapping its operands and
 * recording its results in map.  strip: drop placement attributes. */
static int
clone_into(struct phase *p, size_t i, MlirBlock block, struct llm_ptrmap *map, int strip)
{
	MlirOperation c = mlirOperationClone(p->ops[i]);
	struct remap rm = {p, map, block, c, i, 0};

	mlirBlockAppendOwnedOperation(block, c);
	mlirOperationWalk(c, remap_cb, &rm, MlirWalkPreOrder);
	if (rm.err)
		return -1;
	if (strip)
		llm_ir_strip_placement(c);
	for (intptr_t r = 0; r < mlirOperationGetNumResults(c); r++)
		llm_ptrmap_put(map, mlirOperationGetResult(p->ops[i], r).ptr, mlirOperationGetResult(c, r).ptr);
	return 0;
}

static MlirOperation
make_op(MlirContext ctx, const char *name, const MlirValue *operands, size_t n, const MlirType *results, size_t nres,
    const MlirNamedAttribute *attrs, size_t nattrs)
{
	MlirOperationState st = mlirOperationStateGet(LLM_SREF(name), mlirLocationUnknownGet(ctx));
	mlirOperationStateAddOperands(&st, (intptr_t)n, operands);
	mlirOperationStateAddResults(&st, (intptr_t)nres, results);
	mlirOperationStateAddAttributes(&st, (intptr_t)nattrs, attrs);
	return mlirOperationCreate(&st);
}

/* Builds the function of partition pi, finds or adds its kernel. */
static int
build_kernel(struct phase *p, size_t pi)
{
	struct split *s = p->s;
	struct part *pt = &p->parts[pi];
	MlirContext ctx = s->ctx;
	MlirOperation f = make_func(ctx, "k", pt, 0);
	MlirType *in = value_types(pt->in, pt->nin);
	MlirLocation *locs = llm_xcalloc(pt->nin + 1, sizeof(*locs));
	MlirValue *ret = llm_xcalloc(pt->nout + 1, sizeof(*ret));
	struct llm_ptrmap map = {0};
	struct llm_buf gen = {0}, text = {0};
	struct kernel kn = {0};
	MlirModule km = {NULL};
	char *what = NULL;
	int rc = -1;

	for (size_t i = 0; i < pt->nin; i++)
		locs[i] = mlirLocationUnknownGet(ctx);
	MlirBlock b = mlirBlockCreate((intptr_t)pt->nin, in, locs);
	mlirRegionAppendOwnedBlock(mlirOperationGetRegion(f, 0), b);
	for (size_t i = 0; i < pt->nin; i++)
		llm_ptrmap_put(&map, pt->in[i].ptr, mlirBlockGetArgument(b, (intptr_t)i).ptr);
	for (size_t k = 0; k < pt->nops; k++)
		if (clone_into(p, pt->ops[k], b, &map, 1) < 0)
			goto out;
	for (size_t i = 0; i < pt->nout; i++) {
		const void *nv = NULL;
		llm_ptrmap_get(&map, pt->out[i].ptr, &nv);
		ret[i] = (MlirValue){nv};
	}
	mlirBlockAppendOwnedOperation(b, make_op(ctx, "func.return", ret, pt->nout, NULL, 0, NULL, 0));

	/* The identity: the generic form with sym_name "k", as built. */
	llm_ir_print(f, 1, &gen);
	uint64_t h = llm_fnv1a(LLM_FNV_INIT, gen.p, gen.len);
	size_t same_hash = 0;
	for (size_t k = 0; k < s->nkernels; k++) {
		struct kernel *o = &s->kernels[k];
		if (o->hash != h || strcmp(o->kind, p->kind) != 0)
			continue;
		if (strcmp(o->generic, gen.p) == 0) {
			pt->kernel = k;
			o->uses++;
			rc = 0;
			goto out;
		}
		same_hash++; /* a collision: equal hash, other text */
	}

	char hx[17];
	llm_hex64(h, hx);
	if (same_hash) {
		kn.name = llm_xasprintf("llm_%s_k%s_%zu", p->kind, hx, same_hash + 1);
		kn.file = llm_xasprintf("%s/k%s_%zu.mlir", p->kind, hx, same_hash + 1);
	} else {
		kn.name = llm_xasprintf("llm_%s_k%s", p->kind, hx);
		kn.file = llm_xasprintf("%s/k%s.mlir", p->kind, hx);
	}
	mlirOperationSetInherentAttributeByName(f, LLM_SREF("sym_name"), mlirStringAttrGet(ctx, LLM_SREF(kn.name)));
	km = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
	MlirOperation kmo = mlirModuleGetOperation(km), srcmo = mlirModuleGetOperation(p->mod);
	/* the source module's attributes (the MPI implementation of a
	 * tensor-parallel model's mpi ops: emit.c) */
	for (intptr_t i = 0; i < mlirOperationGetNumDiscardableAttributes(srcmo); i++) {
		MlirNamedAttribute a = mlirOperationGetDiscardableAttribute(srcmo, i);
		mlirOperationSetDiscardableAttributeByName(kmo, mlirIdentifierStr(a.name), a.attribute);
	}
	mlirOperationSetDiscardableAttributeByName(kmo, LLM_SREF("llm.kind"),
	    mlirStringAttrGet(ctx, LLM_SREF(p->kind)));
	mlirBlockAppendOwnedOperation(mlirModuleGetBody(km), f);
	f = (MlirOperation){NULL}; /* owned by km now */
	/* The declarations of the kernels the ops call (llvm.func, defined
	 * by llm-lower for the target: ir.txt "Kernels"); a module that
	 * calls none of a family's gets none of its code. */
	for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(p->mod)); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op))
		if (llm_ir_is(op, "llvm.func") && calls(mlirModuleGetOperation(km), llm_ir_sym_name(op)))
			mlirBlockAppendOwnedOperation(mlirModuleGetBody(km), mlirOperationClone(op));
	what = llm_xasprintf("%s: partition %zu (kernel '%s')", p->path, pi, kn.name);
	if (llm_ir_verify(ctx, kmo, what) < 0)
		goto out;
	llm_buf_printf(&text, "// %s: a %s kernel written by llm-split; see partition.json\n", kn.name, p->kind);
	llm_ir_print(kmo, 0, &text);
	llm_buf_puts(&text, "\n");
	kn.kind = llm_xstrdup(p->kind);
	kn.hash = h;
	kn.uses = 1;
	kn.generic = gen.p;
	kn.text = text.p;
	gen.p = text.p = NULL;
	s->kernels = llm_xreallocarray(s->kernels, s->nkernels + 1, sizeof(*s->kernels));
	pt->kernel = s->nkernels;
	s->kernels[s->nkernels++] = kn;
	kn.name = kn.file = NULL;
	rc = 0;
out:
	/* Both are destroyed before the source module, as they must be. */
	if (!mlirOperationIsNull(f))
		mlirOperationDestroy(f);
	if (!mlirModuleIsNull(km))
		mlirModuleDestroy(km);
	free(kn.name);
	free(kn.file);
	free(what);
	llm_buf_free(&gen);
	llm_buf_free(&text);
	llm_ptrmap_free(&map);
	free(in);
	free(locs);
	free(ret);
	return rc;
}

/* The glue module of a phase: declarations of the kernels it calls, the
 * entry function with its original signature and attributes whose body
 * keeps the glue ops and calls the partitions in order, and every other
 * top-level op of the source module but the dot-product kernels'
 * declarations (the fingerprint function). */
static int
build_glue(struct phase *p, char **text)
{
	struct split *s = p->s;
	MlirContext ctx = s->ctx;
	MlirModule gm = mlirModuleCreateEmpty(mlirLocationUnknownGet(ctx));
	MlirOperation gmo = mlirModuleGetOperation(gm), srcmo = mlirModuleGetOperation(p->mod);
	MlirBlock gbody = mlirModuleGetBody(gm);
	struct llm_ptrmap map = {0};
	char *what;
	int rc = -1;

	for (intptr_t i = 0; i < mlirOperationGetNumDiscardableAttributes(srcmo); i++) {
		MlirNamedAttribute a = mlirOperationGetDiscardableAttribute(srcmo, i);
		mlirOperationSetDiscardableAttributeByName(gmo, mlirIdentifierStr(a.name), a.attribute);
	}
	mlirOperationSetDiscardableAttributeByName(gmo, LLM_SREF("llm.kind"), mlirStringAttrGet(ctx, LLM_SREF("glue")));

	/* Declarations, in order of first call. */
	struct llm_ptrmap declared = {0};
	for (size_t pi = 0; pi < p->nparts; pi++) {
		struct kernel *kn = &s->kernels[p->parts[pi].kernel];
		if (llm_ptrmap_get(&declared, kn, NULL))
			continue;
		llm_ptrmap_put(&declared, kn, NULL);
		mlirBlockAppendOwnedOperation(gbody, make_func(ctx, kn->name, &p->parts[pi], 1));
	}
	llm_ptrmap_free(&declared);

	/* The entry: a clone keeps name, type, argument and function
	 * attributes; its body is replaced. */
	MlirOperation g = mlirOperationClone(p->func);
	MlirRegion gr = mlirOperationGetRegion(g, 0);
	MlirBlock old = mlirRegionGetFirstBlock(gr);
	intptr_t nargs = mlirBlockGetNumArguments(p->body);
	MlirType *types = llm_xcalloc((size_t)nargs + 1, sizeof(*types));
	MlirLocation *locs = llm_xcalloc((size_t)nargs + 1, sizeof(*locs));
	for (intptr_t i = 0; i < nargs; i++) {
		MlirValue a = mlirBlockGetArgument(p->body, i);
		types[i] = mlirValueGetType(a);
		locs[i] = mlirValueGetLocation(a);
	}
	MlirBlock b = mlirBlockCreate(nargs, types, locs);
	free(types);
	free(locs);
	mlirRegionInsertOwnedBlockBefore(gr, old, b);
	mlirBlockDetach(old);
	mlirBlockDestroy(old);
	for (intptr_t i = 0; i < nargs; i++)
		llm_ptrmap_put(&map, mlirBlockGetArgument(p->body, i).ptr, mlirBlockGetArgument(b, i).ptr);

	for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(p->mod)); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op))
		if (mlirOperationEqual(op, p->func))
			mlirBlockAppendOwnedOperation(gbody, g);
		else if (!llm_ir_is(op, "llvm.func")) /* the kernels': the glue calls none */
			mlirBlockAppendOwnedOperation(gbody, mlirOperationClone(op));

	for (size_t i = 0; i < p->nops; i++) {
		if (p->cls[i] == C_GLUE) {
			if (clone_into(p, i, b, &map, 0) < 0)
				goto out;
			continue;
		}
		if (p->cls[i] != C_PART || p->parts[p->part[i]].last != i)
			continue;
		/* The call of a partition sits where its last op was: every
		 * glue op it needs is already there. */
		struct part *pt = &p->parts[p->part[i]];
		struct kernel *kn = &s->kernels[pt->kernel];
		MlirValue *args = llm_xcalloc(pt->nin + 1, sizeof(*args));
		MlirType *res = value_types(pt->out, pt->nout);
		for (size_t k = 0; k < pt->nin; k++) {
			const void *nv;
			if (!llm_ptrmap_get(&map, pt->in[k].ptr, &nv)) {
				free(args);
				free(res);
				phase_err(p, pt->first,
				    "starts a partition that needs a value the glue computes after it");
				goto out;
			}
			args[k] = (MlirValue){nv};
		}
		MlirNamedAttribute callee = named(ctx, "callee", mlirFlatSymbolRefAttrGet(ctx, LLM_SREF(kn->name)));
		MlirOperation call = make_op(ctx, "func.call", args, pt->nin, res, pt->nout, &callee, 1);
		mlirBlockAppendOwnedOperation(b, call);
		for (size_t k = 0; k < pt->nout; k++)
			llm_ptrmap_put(&map, pt->out[k].ptr, mlirOperationGetResult(call, (intptr_t)k).ptr);
		free(args);
		free(res);
	}

	what = llm_xasprintf("%s: glue of phase '%s'", p->path, p->ph->name);
	if (llm_ir_verify(ctx, gmo, what) < 0) {
		free(what);
		goto out;
	}
	free(what);
	struct llm_buf t = {0};
	llm_buf_printf(&t, "// glue of phase %s: written by llm-split; see partition.json\n", p->ph->name);
	llm_ir_print(gmo, 0, &t);
	llm_buf_puts(&t, "\n");
	*text = t.p;
	rc = 0;
out:
	mlirModuleDestroy(gm);
	llm_ptrmap_free(&map);
	return rc;
}

/* ---- partition.json ---- */

static void
json_ids(struct llm_buf *b, const struct phase *p, enum op_class c)
{
	int first = 1;
	llm_buf_puts(b, "[");
	for (size_t i = 0; i < p->nops; i++)
		if (p->cls[i] == c) {
			llm_buf_printf(b, "%s%lld", first ? "" : ", ", (long long)p->ids[i]);
			first = 0;
		}
	llm_buf_puts(b, "]");
}

static void
json_values(struct llm_buf *b, const struct phase *p, const MlirValue *v, size_t n)
{
	llm_buf_puts(b, "[");
	for (size_t i = 0; i < n; i++) {
		intptr_t idx;
		ptrdiff_t d = def_pos(p, v[i], &idx);
		char *t = llm_ir_type_str(mlirValueGetType(v[i]));
		llm_buf_puts(b, i ? ",\n            " : "\n            ");
		if (d == -1)
			llm_buf_printf(b, "{\"arg\": %lld, \"type\": ", (long long)idx);
		else
			llm_buf_printf(b, "{\"op\": %lld, \"result\": %lld, \"type\": ", (long long)p->ids[d],
			    (long long)idx);
		llm_json_quote(b, t, strlen(t));
		llm_buf_puts(b, "}");
		free(t);
	}
	llm_buf_puts(b, n ? "\n          ]" : "]");
}

static void
phase_json(struct phase *p, const char *glue_rel)
{
	struct split *s = p->s;
	struct llm_buf *b = &s->phases_json;
	char *abs = abspath(p->path), *src = abs ? relpath(s->absparts, abs) : llm_xstrdup(p->path);

	llm_buf_puts(b, b->len ? ",\n    {\n" : "\n    {\n");
	llm_buf_puts(b, "      \"name\": ");
	llm_json_quote(b, p->ph->name, strlen(p->ph->name));
	llm_buf_puts(b, ",\n      \"entry\": ");
	llm_json_quote(b, p->ph->entry, strlen(p->ph->entry));
	llm_buf_puts(b, ",\n      \"source\": ");
	llm_json_quote(b, src, strlen(src));
	llm_buf_puts(b, ",\n      \"glue\": ");
	llm_json_quote(b, glue_rel, strlen(glue_rel));
	llm_buf_printf(b, ",\n      \"ops\": %zu,\n      \"glue_ops\": ", p->nops);
	json_ids(b, p, C_GLUE);
	llm_buf_puts(b, ",\n      \"remat_ops\": ");
	json_ids(b, p, C_REMAT);
	llm_buf_puts(b, ",\n      \"partitions\": [");
	for (size_t pi = 0; pi < p->nparts; pi++) {
		struct part *pt = &p->parts[pi];
		struct kernel *kn = &s->kernels[pt->kernel];
		char hx[17];
		llm_hex64(kn->hash, hx);
		llm_buf_printf(b, "%s\n        {\n          \"index\": %zu,\n          \"layer\": ", pi ? "," : "", pi);
		if (s->o->strategy == LLM_SPLIT_NONE)
			llm_buf_puts(b, "null");
		else
			llm_buf_printf(b, "%lld", (long long)pt->layer);
		llm_buf_puts(b, ",\n          \"stage\": ");
		if (s->o->strategy == LLM_SPLIT_STAGE)
			llm_json_quote(b, pt->stage.data, pt->stage.length);
		else
			llm_buf_puts(b, "null");
		llm_buf_puts(b, ",\n          \"kernel\": ");
		llm_json_quote(b, kn->name, strlen(kn->name));
		llm_buf_puts(b, ",\n          \"file\": ");
		llm_json_quote(b, kn->file, strlen(kn->file));
		llm_buf_printf(b, ",\n          \"hash\": \"%s\",\n          \"ops\": [", hx);
		for (size_t k = 0; k < pt->nops; k++)
			llm_buf_printf(b, "%s%lld", k ? ", " : "", (long long)p->ids[pt->ops[k]]);
		llm_buf_puts(b, "],\n          \"inputs\": ");
		json_values(b, p, pt->in, pt->nin);
		llm_buf_puts(b, ",\n          \"outputs\": ");
		json_values(b, p, pt->out, pt->nout);
		llm_buf_puts(b, "\n        }");
	}
	llm_buf_puts(b, p->nparts ? "\n      ]\n    }" : "]\n    }");
	free(abs);
	free(src);
}

/* ---- one phase ---- */

static void
add_file(struct split *s, char *rel, char *text)
{
	s->files = llm_xreallocarray(s->files, s->nfiles + 1, sizeof(*s->files));
	s->files[s->nfiles].rel = rel;
	s->files[s->nfiles].text = text;
	s->nfiles++;
}

static void
free_phase(struct phase *p)
{
	for (size_t i = 0; i < p->nparts; i++) {
		free(p->parts[i].ops);
		free(p->parts[i].in);
		free(p->parts[i].out);
	}
	free(p->parts);
	free(p->ops);
	free(p->ids);
	free(p->layers);
	free(p->stages);
	free(p->cls);
	free(p->part);
	llm_ptrmap_free(&p->pos);
	if (!mlirModuleIsNull(p->mod))
		mlirModuleDestroy(p->mod);
	free(p->path);
}

static int
split_phase(struct split *s, const struct llm_phase *ph, struct llm_split_phase_stats *ps)
{
	struct phase p = {0};
	char *glue_text = NULL;
	int rc = -1;

	p.s = s;
	p.ph = ph;
	p.path = llm_path_join(s->m->dir, ph->file);
	if (load_phase(&p) < 0)
		goto out;
	classify(&p);
	for (size_t pi = 0; pi < p.nparts; pi++)
		if (scan_part(&p, pi) < 0)
			goto out;
	for (size_t pi = 0; pi < p.nparts; pi++)
		if (build_kernel(&p, pi) < 0)
			goto out;
	if (build_glue(&p, &glue_text) < 0)
		goto out;
	char *glue_rel = llm_xasprintf("%s/glue.mlir", ph->name);
	phase_json(&p, glue_rel);
	add_file(s, glue_rel, glue_text);

	/* Kernels this phase uses (new or shared with an earlier phase). */
	struct llm_ptrmap used = {0};
	for (size_t pi = 0; pi < p.nparts; pi++)
		llm_ptrmap_put(&used, (void *)(uintptr_t)(p.parts[pi].kernel + 1), NULL);
	ps->name = ph->name;
	ps->partitions = p.nparts;
	ps->kernels = used.n;
	ps->ops = p.nops;
	llm_ptrmap_free(&used);
	rc = 0;
out:
	free_phase(&p);
	return rc;
}

/* ---- output ---- */

/* Writes path unless it already holds exactly text. */
static int
write_if_changed(const char *path, const char *text, size_t *written)
{
	char *old;
	size_t len, n = strlen(text);

	if (llm_read_file(path, &old, &len) == 0) {
		int same = len == n && memcmp(old, text, n) == 0;
		free(old);
		if (same)
			return 0;
	}
	(*written)++;
	return llm_write_file(path, text, n);
}

/* A kernel file name: k<16 hex digits>[_<n>].mlir. */
static int
is_kernel_name(const char *n)
{
	size_t i;
	if (n[0] != 'k')
		return 0;
	for (i = 1; i <= 16; i++)
		if (!n[i] || !strchr("0123456789abcdef", n[i]))
			return 0;
	if (n[i] == '_') {
		i++;
		if (n[i] < '0' || n[i] > '9')
			return 0;
		while (n[i] >= '0' && n[i] <= '9')
			i++;
	}
	return strcmp(n + i, ".mlir") == 0;
}

/* Removes kernel files in dir (relative to the parts directory) that this
 * split did not write: kernels of an earlier split. */
static void
remove_stale(struct split *s, const char *dir)
{
	char *path = llm_path_join(s->o->partsdir, dir);
	DIR *d = opendir(path);
	struct dirent *e;

	if (!d) {
		free(path);
		return;
	}
	while ((e = readdir(d))) {
		if (!is_kernel_name(e->d_name))
			continue;
		char *rel = llm_xasprintf("%s/%s", dir, e->d_name);
		int keep = 0;
		for (size_t i = 0; i < s->nfiles; i++)
			if (strcmp(s->files[i].rel, rel) == 0)
				keep = 1;
		if (!keep) {
			char *f = llm_path_join(path, e->d_name);
			if (unlink(f) < 0 && errno != ENOENT)
				llm_warn("remove %s:", f);
			free(f);
		}
		free(rel);
	}
	closedir(d);
	free(path);
}

static char *
parts_mk(struct split *s)
{
	struct llm_buf b = {0};
	llm_buf_printf(&b,
	    "# parts.mk: written by llm-split (strategy %s); the modules to lower.\n"
	    "# Names are relative to this file's directory: NAME.mlir lowers to\n"
	    "# NAME.o.  Kernels are the distinct partition functions (shared by\n"
	    "# every partition with the same structure); each glue module calls\n"
	    "# them in the order of its phase.  See partition.json.\n",
	    llm_split_strategy_name(s->o->strategy));
	llm_buf_printf(&b, "LLM_PARTS_STRATEGY = %s\n", llm_split_strategy_name(s->o->strategy));
	const char *vars[] = {"LLM_PARTS_KERNELS", "LLM_PARTS_GLUE"};
	for (int v = 0; v < 2; v++) {
		llm_buf_printf(&b, "%s =", vars[v]);
		for (size_t i = 0; i < s->nfiles; i++) {
			const char *r = s->files[i].rel;
			size_t n = strlen(r);
			int glue = n > 10 && strcmp(r + n - 10, "/glue.mlir") == 0;
			if (n < 5 || strcmp(r + n - 5, ".mlir") != 0 || glue != v)
				continue;
			llm_buf_printf(&b, " \\\n\t%.*s", (int)(n - 5), r);
		}
		llm_buf_puts(&b, "\n");
	}
	llm_buf_puts(&b, "LLM_PARTS = $(LLM_PARTS_KERNELS) $(LLM_PARTS_GLUE)\n");
	const char *exts[] = {"MLIR", "OBJ"}, *sfx[] = {".mlir", ".o"};
	for (int v = 0; v < 2; v++) {
		llm_buf_printf(&b, "LLM_PARTS_%s =", exts[v]);
		for (int g = 0; g < 2; g++)
			for (size_t i = 0; i < s->nfiles; i++) {
				const char *r = s->files[i].rel;
				size_t n = strlen(r);
				int glue = n > 10 && strcmp(r + n - 10, "/glue.mlir") == 0;
				if (n < 5 || strcmp(r + n - 5, ".mlir") != 0 || glue != g)
					continue;
				llm_buf_printf(&b, " \\\n\t%.*s%s", (int)(n - 5), r, sfx[v]);
			}
		llm_buf_puts(&b, "\n");
	}
	return b.p;
}

static char *
partition_json(struct split *s, size_t nparts)
{
	struct llm_buf b = {0};
	char *abs = abspath(s->m->path), *model = abs ? relpath(s->absparts, abs) : llm_xstrdup(s->m->path);

	llm_buf_puts(&b, "{\n  \"format\": \"" LLM_PARTITION_FORMAT "\",\n  \"strategy\": ");
	const char *strategy = llm_split_strategy_name(s->o->strategy);
	llm_json_quote(&b, strategy, strlen(strategy));
	llm_buf_puts(&b, ",\n  \"model\": ");
	llm_json_quote(&b, model, strlen(model));
	llm_buf_printf(&b, ",\n  \"partitions\": %zu,\n  \"kernels\": [", nparts);
	for (size_t k = 0; k < s->nkernels; k++) {
		struct kernel *kn = &s->kernels[k];
		char hx[17];
		llm_hex64(kn->hash, hx);
		llm_buf_puts(&b, k ? ",\n    {\"name\": " : "\n    {\"name\": ");
		llm_json_quote(&b, kn->name, strlen(kn->name));
		llm_buf_puts(&b, ", \"file\": ");
		llm_json_quote(&b, kn->file, strlen(kn->file));
		llm_buf_puts(&b, ", \"kind\": ");
		llm_json_quote(&b, kn->kind, strlen(kn->kind));
		llm_buf_printf(&b, ", \"hash\": \"%s\", \"partitions\": %zu}", hx, kn->uses);
	}
	llm_buf_puts(&b, s->nkernels ? "\n  ],\n  \"phases\": [" : "],\n  \"phases\": [");
	llm_buf_add(&b, s->phases_json.p, s->phases_json.len);
	llm_buf_puts(&b, "\n  ]\n}\n");
	free(abs);
	free(model);
	return b.p;
}

int
llm_split(const struct llm_model *m, const struct llm_split_opts *o, struct llm_split_stats *st)
{
	struct split s = {0};
	double t0 = llm_now(), t1;
	int rc = -1, created;

	memset(st, 0, sizeof(*st));
	s.m = m;
	s.o = o;
	if (m->nphases == 0)
		return llm_seterr("%s: no phases", m->path);
	created = access(o->partsdir, F_OK) != 0;
	if (llm_mkdirs(o->partsdir) < 0)
		return -1;
	if (!(s.absparts = abspath(o->partsdir))) {
		if (created)
			rmdir(o->partsdir);
		return -1;
	}
	llm_buf_puts(&s.phases_json, "");
	s.ctx = llm_ir_context();
	for (int i = 0; i < m->nphases; i++) {
		if (split_phase(&s, &m->phases[i], &st->phase[i]) < 0)
			goto out;
		st->partitions += st->phase[i].partitions;
		st->nphases++;
	}
	st->kernels = s.nkernels;
	t1 = llm_now();

	/* Everything is built and verified: write. */
	for (size_t k = 0; k < s.nkernels; k++)
		add_file(&s, llm_xstrdup(s.kernels[k].file), llm_xstrdup(s.kernels[k].text));
	for (size_t i = 0; i < s.nfiles; i++) {
		char *path = llm_path_join(o->partsdir, s.files[i].rel);
		char *dir = llm_xstrdup(path);
		*strrchr(dir, '/') = 0;
		int bad = llm_mkdirs(dir) < 0 || write_if_changed(path, s.files[i].text, &st->written) < 0;
		free(dir);
		free(path);
		if (bad)
			goto out;
	}
	for (size_t k = 0; k < s.nkernels; k++) {
		int dup = 0;
		for (size_t j = 0; j < k; j++)
			dup |= strcmp(s.kernels[j].kind, s.kernels[k].kind) == 0;
		if (!dup)
			remove_stale(&s, s.kernels[k].kind);
	}
	char *mk = parts_mk(&s), *js = partition_json(&s, st->partitions);
	char *mkpath = llm_path_join(o->partsdir, "parts.mk"), *jspath = llm_path_join(o->partsdir, "partition.json");
	int bad = write_if_changed(mkpath, mk, &st->written) < 0 || write_if_changed(jspath, js, &st->written) < 0;
	free(mk);
	free(js);
	free(mkpath);
	free(jspath);
	if (bad)
		goto out;
	if (o->verbose)
		llm_warn("%s: split in %.3f s, written in %.3f s (%zu files changed)", m->path, t1 - t0, llm_now() - t1,
		    st->written);
	rc = 0;
out:
	for (size_t k = 0; k < s.nkernels; k++) {
		free(s.kernels[k].kind);
		free(s.kernels[k].name);
		free(s.kernels[k].file);
		free(s.kernels[k].generic);
		free(s.kernels[k].text);
	}
	free(s.kernels);
	for (size_t i = 0; i < s.nfiles; i++) {
		free(s.files[i].rel);
		free(s.files[i].text);
	}
	free(s.files);
	llm_buf_free(&s.phases_json);
	free(s.absparts);
	llm_ir_context_free(s.ctx);
	/* A directory made for a split that failed goes again (if empty). */
	if (rc < 0 && created)
		rmdir(o->partsdir);
	return rc;
}
