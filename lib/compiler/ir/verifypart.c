/* verifypart.c: see verifypart.h.
 *
 * The original phases and every part are parsed into one MLIR context, so
 * that types and attributes compare by identity.  Values of the parts are
 * mapped to values of the original as the walk pairs ops: glue arguments
 * to the original arguments, kernel arguments to whatever the call
 * passes, results to the results of the original op they stand for.  An
 * op then matches when it is the same op reading the same original
 * values; copies of allowlisted constants match any equal constant. */
#include <inttypes.h>
#include <mlir-c/BuiltinAttributes.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/json.h"
#include "../../formats/model.h"
#include "../../formats/phase.h"
#include "../../base/util.h"
#include "ir.h"
#include "verifypart.h"

enum { OWN_NONE = -1, OWN_GLUE = -2, OWN_REMAT = -3 };

/* A value named in partition.json: {"arg": n} or {"op": id, "result": r}. */
struct vref {
	int arg;
	int64_t n, result;
	const char *type; /* borrowed from the JSON */
	MlirValue v;      /* resolved in the original, or null */
};

struct vpart {
	const char *kernel, *file, *hash; /* borrowed from the JSON */
	size_t *ops, nops;                /* positions of its ops (known ids only) */
	struct vref *in, *out;
	size_t nin, nout;
	struct llm_ptrmap member; /* position + 1 -> present */
};

struct kfile {
	char *rel;
	MlirModule mod; /* null when it could not be read */
};

/* A kernel as the partitions use it: from which phases' kind, how often. */
struct kuse {
	const char *name, *file, *hash; /* borrowed from the JSON */
	char kind[32];
	size_t n;
};

struct vctx {
	const char *path;
	char *dir;
	struct kuse *uses;
	size_t nuses;
	MlirContext ctx;
	json_t *violations;
	struct kfile *kfiles;
	size_t nkfiles;
	size_t nphases, nparts, ncalls, nops, npart_ops, nglue, nremat;
	json_t *phase_counts;
	unsigned char *source_ok; /* (phases) 1: its source is the model's phase file (check_model) */
	size_t nsource_ok;
};

struct vphase {
	struct vctx *v;
	const char *name, *entry;
	char *source, *gluepath;
	MlirModule orig;
	MlirOperation func;
	MlirBlock body;
	MlirOperation *ops;
	int64_t *ids;
	size_t nops;
	struct llm_ptrmap pos, byid;
	int *owner, *claims;
	struct vpart *parts;
	size_t nparts;
	size_t nviol;
};

/* A violation: of a phase (its partition and op, or -1), or, phase NULL,
 * of the file as a whole (the kernel index, the model). */
static void
add_violation(struct vctx *v, const char *phase, ptrdiff_t part, int64_t op, const char *kind, const char *fmt,
    va_list ap)
{
	struct llm_buf b = {0};
	json_t *o = json_object();

	llm_buf_vprintf(&b, fmt, ap);
	json_object_set_new(o, "phase", phase ? json_string(phase) : json_null());
	json_object_set_new(o, "partition", part >= 0 ? json_integer(part) : json_null());
	json_object_set_new(o, "op", op >= 0 ? json_integer(op) : json_null());
	json_object_set_new(o, "kind", json_string(kind));
	json_object_set_new(o, "message", json_string(b.p));
	json_array_append_new(v->violations, o);
	llm_buf_free(&b);
}

static void
violation(struct vphase *p, ptrdiff_t part, int64_t op, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_violation(p->v, p->name, part, op, kind, fmt, ap);
	va_end(ap);
	p->nviol++;
}

static void
index_violation(struct vctx *v, const char *kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add_violation(v, NULL, -1, -1, kind, fmt, ap);
	va_end(ap);
}

static size_t
pos_of(const struct vphase *p, MlirOperation op)
{
	const void *v;
	return llm_ptrmap_get(&p->pos, op.ptr, &v) ? (size_t)(uintptr_t)v - 1 : (size_t)-1;
}

/* Position of the op with llm.id id, or -1. */
static ptrdiff_t
pos_of_id(const struct vphase *p, int64_t id)
{
	const void *v;
	if (id < 0 || !llm_ptrmap_get(&p->byid, (const void *)(uintptr_t)(id + 1), &v))
		return -1;
	return (ptrdiff_t)(uintptr_t)v - 1;
}

static char *
op_name(MlirOperation op)
{
	MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
	return llm_xasprintf("%.*s", (int)n.length, n.data);
}

/* "op 12 ('linalg.generic')" */
static char *
desc(const struct vphase *p, size_t i)
{
	char *n = op_name(p->ops[i]), *d = llm_xasprintf("op %lld ('%s')", (long long)p->ids[i], n);
	free(n);
	return d;
}

/* "arg 3" or "op 12 result 0" for a value of the original. */
static char *
value_desc(const struct vphase *p, MlirValue v)
{
	MlirOperation op;
	intptr_t idx;
	if (mlirValueIsNull(v))
		return llm_xstrdup("nothing");
	switch (llm_ir_def_in(p->body, v, &op, &idx)) {
	case LLM_IR_ARG:
		return llm_xasprintf("arg %lld", (long long)idx);
	case LLM_IR_TOP:
		return llm_xasprintf("op %lld result %lld", (long long)p->ids[pos_of(p, op)], (long long)idx);
	default:
		return llm_xstrdup("a value local to a region");
	}
}

/* ---- partition.json ---- */

static int
get_ids(json_t *a, const char *ctx, int64_t **ids, size_t *n)
{
	size_t i;
	json_t *x;

	if (!json_is_array(a))
		return llm_seterr("%s: not an array", ctx);
	*n = json_array_size(a);
	*ids = llm_xcalloc(*n + 1, sizeof(**ids));
	json_array_foreach (a, i, x) {
		if (!json_is_integer(x))
			return llm_seterr("%s: element %zu is not an integer", ctx, i);
		(*ids)[i] = json_integer_value(x);
	}
	return 0;
}

static int
get_refs(json_t *a, const char *ctx, struct vref **refs, size_t *n)
{
	size_t i;
	json_t *x;

	if (!json_is_array(a))
		return llm_seterr("%s: not an array", ctx);
	*n = json_array_size(a);
	*refs = llm_xcalloc(*n + 1, sizeof(**refs));
	json_array_foreach (a, i, x) {
		struct vref *r = &(*refs)[i];
		char *c = llm_xasprintf("%s[%zu]", ctx, i);
		int rc = 0;
		if (!json_is_object(x))
			rc = llm_seterr("%s: not an object", c);
		else if (json_object_get(x, "arg")) {
			r->arg = 1;
			rc = llm_json_int(x, "arg", c, &r->n);
		} else if (llm_json_int(x, "op", c, &r->n) < 0 || llm_json_int(x, "result", c, &r->result) < 0)
			rc = -1;
		if (rc == 0)
			rc = llm_json_str(x, "type", c, &r->type);
		free(c);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* ---- the original phase ---- */

static int
load_original(struct vphase *p)
{
	size_t cap = 0;

	if (llm_ir_parse(p->v->ctx, p->source, &p->orig) < 0)
		return -1;
	p->func = llm_ir_find_func(p->orig, p->entry);
	if (mlirOperationIsNull(p->func))
		return llm_seterr("%s: no func.func '@%s'", p->source, p->entry);
	p->body = llm_ir_func_body(p->func);
	if (mlirBlockIsNull(p->body) || !mlirBlockIsNull(mlirBlockGetNextInRegion(p->body)))
		return llm_seterr("%s: '@%s' is not a function of one block", p->source, p->entry);
	for (MlirOperation op = mlirBlockGetFirstOperation(p->body); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op)) {
		if (p->nops == cap) {
			cap = cap ? 2 * cap : 256;
			p->ops = llm_xreallocarray(p->ops, cap, sizeof(*p->ops));
			p->ids = llm_xreallocarray(p->ids, cap, sizeof(*p->ids));
		}
		size_t i = p->nops++;
		p->ops[i] = op;
		llm_ptrmap_put(&p->pos, op.ptr, (const void *)(uintptr_t)(i + 1));
		if (llm_ir_attr_i64(op, "llm.id", &p->ids[i]) != 1 || p->ids[i] < 0)
			return llm_seterr("%s:%d: op without llm.id", p->source, llm_ir_line(op));
		const void *key = (const void *)(uintptr_t)(p->ids[i] + 1);
		if (llm_ptrmap_get(&p->byid, key, NULL))
			return llm_seterr("%s:%d: llm.id %lld repeated", p->source, llm_ir_line(op),
			    (long long)p->ids[i]);
		llm_ptrmap_put(&p->byid, key, (const void *)(uintptr_t)(i + 1));
	}
	if (p->nops == 0)
		return llm_seterr("%s: '@%s' is empty", p->source, p->entry);
	return 0;
}

/* Resolves a reference to a value of the original; reports a bad one. */
static void
resolve(struct vphase *p, size_t pi, struct vref *r, const char *what)
{
	r->v = (MlirValue){NULL};
	if (r->arg) {
		if (r->n < 0 || r->n >= mlirBlockGetNumArguments(p->body)) {
			violation(p, (ptrdiff_t)pi, -1, "bad-reference", "%s names arg %lld, which does not exist",
			    what, (long long)r->n);
			return;
		}
		r->v = mlirBlockGetArgument(p->body, (intptr_t)r->n);
	} else {
		ptrdiff_t i = pos_of_id(p, r->n);
		if (i < 0 || r->result < 0 || r->result >= mlirOperationGetNumResults(p->ops[i])) {
			violation(p, (ptrdiff_t)pi, r->n, "bad-reference",
			    "%s names op %lld result %lld, which does not exist", what, (long long)r->n,
			    (long long)r->result);
			return;
		}
		r->v = mlirOperationGetResult(p->ops[i], (intptr_t)r->result);
	}
	char *t = llm_ir_type_str(mlirValueGetType(r->v));
	if (strcmp(t, r->type) != 0) {
		char *d = value_desc(p, r->v);
		violation(p, (ptrdiff_t)pi, r->arg ? -1 : r->n, "type-mismatch", "%s (%s) has type '%s', not '%s'",
		    what, d, t, r->type);
		free(d);
	}
	free(t);
}

/* ---- check 1: the claims, against the original ---- */

struct need {
	struct vphase *p;
	size_t pi, top;
	MlirValue *vals;
	size_t n, cap;
	struct llm_ptrmap seen;
};

static void
need_add(struct need *nd, MlirValue v)
{
	if (llm_ptrmap_get(&nd->seen, v.ptr, NULL))
		return;
	llm_ptrmap_put(&nd->seen, v.ptr, NULL);
	if (nd->n == nd->cap) {
		nd->cap = nd->cap ? 2 * nd->cap : 16;
		nd->vals = llm_xreallocarray(nd->vals, nd->cap, sizeof(*nd->vals));
	}
	nd->vals[nd->n++] = v;
}

static MlirWalkResult
need_inputs(MlirOperation op, void *user)
{
	struct need *nd = user;
	struct vphase *p = nd->p;
	struct vpart *pt = &p->parts[nd->pi];

	for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); k++) {
		MlirValue v = mlirOperationGetOperand(op, k);
		MlirOperation d;
		intptr_t idx;
		switch (llm_ir_def_in(p->body, v, &d, &idx)) {
		case LLM_IR_ARG:
			need_add(nd, v);
			break;
		case LLM_IR_TOP: {
			size_t i = pos_of(p, d);
			if (llm_ptrmap_get(&pt->member, (const void *)(uintptr_t)(i + 1), NULL) ||
			    p->owner[i] == OWN_REMAT)
				break;
			if (p->owner[i] >= 0 && (size_t)p->owner[i] > nd->pi) {
				char *a = desc(p, i), *b = desc(p, nd->top);
				violation(p, (ptrdiff_t)nd->pi, p->ids[nd->top], "producer-after-consumer",
				    "%s, in partition %d, produces a value that %s, in the earlier partition %zu, uses",
				    a, p->owner[i], b, nd->pi);
				free(a);
				free(b);
			}
			need_add(nd, v);
			break;
		}
		default:
			break;
		}
	}
	return MlirWalkResultAdvance;
}

/* Compares the values a partition needs (or gives) with those it
 * declares.  kind: "input" or "output". */
static void
compare_refs(struct vphase *p, size_t pi, const char *kind, MlirValue *need, size_t nneed, struct vref *decl,
    size_t ndecl)
{
	for (size_t i = 0; i < nneed; i++) {
		size_t j;
		for (j = 0; j < ndecl; j++)
			if (mlirValueEqual(decl[j].v, need[i]))
				break;
		if (j == ndecl) {
			char *d = value_desc(p, need[i]), *k = llm_xasprintf("undeclared-%s", kind);
			MlirOperation op;
			intptr_t idx;
			int64_t id = llm_ir_def_in(p->body, need[i], &op, &idx) == LLM_IR_TOP ? p->ids[pos_of(p, op)] :
												-1;
			violation(p, (ptrdiff_t)pi, id, k,
			    "%s crosses the bounds of partition %zu but is not one of its %ss", d, pi, kind);
			free(d);
			free(k);
		}
	}
	for (size_t j = 0; j < ndecl; j++) {
		size_t i;
		if (mlirValueIsNull(decl[j].v))
			continue;
		for (i = 0; i < nneed; i++)
			if (mlirValueEqual(decl[j].v, need[i]))
				break;
		for (size_t k = 0; k < j; k++)
			if (mlirValueEqual(decl[k].v, decl[j].v))
				i = nneed;
		if (i == nneed) {
			char *d = value_desc(p, decl[j].v), *k = llm_xasprintf("extra-%s", kind);
			violation(p, (ptrdiff_t)pi, decl[j].arg ? -1 : decl[j].n, k,
			    "%s %zu (%s) of partition %zu does not cross its bounds (or is repeated)", kind, j, d, pi);
			free(d);
			free(k);
		}
	}
}

static void
check_claims(struct vphase *p, const int64_t *glue_ids, size_t nglue, const int64_t *remat_ids, size_t nremat)
{
	/* Every op exactly once. */
	for (size_t k = 0; k < nglue; k++) {
		ptrdiff_t i = pos_of_id(p, glue_ids[k]);
		if (i < 0) {
			violation(p, -1, glue_ids[k], "unknown-op",
			    "glue_ops names op %lld, which the original does not have", (long long)glue_ids[k]);
			continue;
		}
		if (p->claims[i]++ == 0)
			p->owner[i] = OWN_GLUE;
	}
	for (size_t k = 0; k < nremat; k++) {
		ptrdiff_t i = pos_of_id(p, remat_ids[k]);
		if (i < 0) {
			violation(p, -1, remat_ids[k], "unknown-op",
			    "remat_ops names op %lld, which the original does not have", (long long)remat_ids[k]);
			continue;
		}
		if (p->claims[i]++ == 0)
			p->owner[i] = OWN_REMAT;
		if (!llm_ir_is_remat(p->ops[i])) {
			char *d = desc(p, i);
			violation(p, -1, p->ids[i], "bad-remat", "%s is in remat_ops but is not a copyable constant",
			    d);
			free(d);
		}
	}
	for (size_t pi = 0; pi < p->nparts; pi++) {
		struct vpart *pt = &p->parts[pi];
		for (size_t k = 0; k < pt->nops; k++) {
			size_t i = pt->ops[k];
			if (p->claims[i]++ == 0)
				p->owner[i] = (int)pi;
		}
	}
	for (size_t i = 0; i < p->nops; i++) {
		char *d = desc(p, i);
		if (p->claims[i] == 0)
			violation(p, -1, p->ids[i], "missing-op",
			    "%s is in no partition, not in the glue and not copied", d);
		else if (p->claims[i] > 1)
			violation(p, -1, p->ids[i], "duplicate-op", "%s is claimed %d times", d, p->claims[i]);
		free(d);
	}
	if (p->owner[p->nops - 1] >= 0) {
		char *d = desc(p, p->nops - 1);
		violation(p, p->owner[p->nops - 1], p->ids[p->nops - 1], "misplaced-op",
		    "%s ends the function and must stay in the glue", d);
		free(d);
	}

	/* Program order: the partitions' ops, in partition order, are the
	 * original's in its order. */
	size_t last = 0;
	int have = 0;
	for (size_t pi = 0; pi < p->nparts; pi++) {
		struct vpart *pt = &p->parts[pi];
		for (size_t k = 0; k < pt->nops; k++) {
			if (have && pt->ops[k] <= last) {
				char *a = desc(p, pt->ops[k]), *b = desc(p, last);
				violation(p, (ptrdiff_t)pi, p->ids[pt->ops[k]], "order",
				    "%s of partition %zu comes after %s, which follows it in the original", a, pi, b);
				free(a);
				free(b);
				break;
			}
			last = pt->ops[k];
			have = 1;
		}
	}

	/* What crosses each partition's bounds. */
	for (size_t pi = 0; pi < p->nparts; pi++) {
		struct vpart *pt = &p->parts[pi];
		struct need in = {p, pi, 0, NULL, 0, 0, {0}}, out = {p, pi, 0, NULL, 0, 0, {0}};
		for (size_t k = 0; k < pt->nops; k++) {
			in.top = pt->ops[k];
			mlirOperationWalk(p->ops[in.top], need_inputs, &in, MlirWalkPreOrder);
		}
		for (size_t k = 0; k < pt->nops; k++) {
			MlirOperation op = p->ops[pt->ops[k]];
			for (intptr_t r = 0; r < mlirOperationGetNumResults(op); r++) {
				MlirValue v = mlirOperationGetResult(op, r);
				for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
				    u = mlirOpOperandGetNextUse(u)) {
					MlirOperation t = llm_ir_ancestor_in(p->body, mlirOpOperandGetOwner(u));
					if (mlirOperationIsNull(t))
						continue;
					if (!llm_ptrmap_get(&pt->member, (const void *)(uintptr_t)(pos_of(p, t) + 1),
						NULL))
						need_add(&out, v);
				}
			}
		}
		compare_refs(p, pi, "input", in.vals, in.n, pt->in, pt->nin);
		compare_refs(p, pi, "output", out.vals, out.n, pt->out, pt->nout);
		free(in.vals);
		free(out.vals);
		llm_ptrmap_free(&in.seen);
		llm_ptrmap_free(&out.seen);
	}
}

/* ---- check 2: the parts' IR reproduces the original ---- */

/* An operand of a part not yet mapped may be a copy of an allowlisted
 * constant (no operands): it stands for any equal constant. */
static int
remat_cb(MlirValue a, MlirValue b, void *user)
{
	(void)user;
	if (!mlirValueIsAOpResult(a) || !mlirValueIsAOpResult(b))
		return 0;
	MlirOperation oa = mlirOpResultGetOwner(a), ob = mlirOpResultGetOwner(b);
	if (!llm_ir_is_remat(oa) || !llm_ir_is_remat(ob) ||
	    mlirOpResultGetResultNumber(a) != mlirOpResultGetResultNumber(b))
		return 0;
	struct llm_ptrmap tmp = {0};
	int eq = llm_ir_op_equal(oa, ob, &tmp, NULL, NULL);
	llm_ptrmap_free(&tmp);
	return eq;
}

static MlirModule
kernel_module(struct vphase *p, size_t pi, const char *rel)
{
	struct vctx *v = p->v;
	for (size_t i = 0; i < v->nkfiles; i++)
		if (strcmp(v->kfiles[i].rel, rel) == 0)
			return v->kfiles[i].mod;
	struct kfile kf = {llm_xstrdup(rel), {NULL}};
	char *path = llm_path_join(v->dir, rel);
	if (llm_ir_parse(v->ctx, path, &kf.mod) < 0) {
		violation(p, (ptrdiff_t)pi, -1, "bad-part", "%s", llm_errmsg());
		kf.mod = (MlirModule){NULL};
	} else if (llm_ir_verify(v->ctx, mlirModuleGetOperation(kf.mod), path) < 0) {
		violation(p, (ptrdiff_t)pi, -1, "bad-part", "%s", llm_errmsg());
		mlirModuleDestroy(kf.mod);
		kf.mod = (MlirModule){NULL};
	}
	free(path);
	v->kfiles = llm_xreallocarray(v->kfiles, v->nkfiles + 1, sizeof(*v->kfiles));
	v->kfiles[v->nkfiles++] = kf;
	return kf.mod;
}

static int
func_type_equal(MlirOperation a, MlirOperation b)
{
	MlirAttribute ta = mlirOperationGetInherentAttributeByName(a, LLM_SREF("function_type"));
	MlirAttribute tb = mlirOperationGetInherentAttributeByName(b, LLM_SREF("function_type"));
	return !mlirAttributeIsNull(ta) && mlirAttributeEqual(ta, tb);
}

/* Pairs the ops of kernel function kf, called with the original values
 * args[], with the ops of partition pi.  On success fills ret[] (the
 * original values the kernel returns, nret of them) and returns 0. */
static int
check_kernel(struct vphase *p, size_t pi, MlirOperation kf, const MlirValue *args, size_t nargs, MlirValue **ret,
    size_t *nret)
{
	struct vpart *pt = &p->parts[pi];
	MlirBlock kb = llm_ir_func_body(kf);
	struct llm_ptrmap km = {0};
	size_t next = 0;
	int rc = -1;

	if (mlirBlockIsNull(kb) || mlirBlockGetNumArguments(kb) != (intptr_t)nargs) {
		violation(p, (ptrdiff_t)pi, -1, "kernel-mismatch",
		    "kernel '%s' takes %lld arguments, the call passes %zu", pt->kernel,
		    mlirBlockIsNull(kb) ? 0LL : (long long)mlirBlockGetNumArguments(kb), nargs);
		return -1;
	}
	for (size_t i = 0; i < nargs; i++)
		if (!mlirValueIsNull(args[i]))
			llm_ptrmap_put(&km, mlirBlockGetArgument(kb, (intptr_t)i).ptr, args[i].ptr);
	for (MlirOperation op = mlirBlockGetFirstOperation(kb); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op)) {
		if (llm_ir_is(op, "func.return")) {
			if (next < pt->nops) {
				char *d = desc(p, pt->ops[next]);
				violation(p, (ptrdiff_t)pi, p->ids[pt->ops[next]], "missing-op",
				    "%s of partition %zu is not in kernel '%s'%s", d, pi, pt->kernel,
				    pt->nops - next > 1 ? " (nor are the ops after it)" : "");
				free(d);
				goto out;
			}
			*nret = (size_t)mlirOperationGetNumOperands(op);
			*ret = llm_xcalloc(*nret + 1, sizeof(**ret));
			for (size_t i = 0; i < *nret; i++) {
				const void *a = NULL;
				MlirValue kv = mlirOperationGetOperand(op, (intptr_t)i);
				if (!llm_ptrmap_get(&km, kv.ptr, &a)) {
					violation(p, (ptrdiff_t)pi, -1, "kernel-mismatch",
					    "kernel '%s' returns, as result %zu, a value that stands for no value of "
					    "the original",
					    pt->kernel, i);
					goto out;
				}
				(*ret)[i] = (MlirValue){a};
			}
			rc = 0;
			goto out;
		}
		if (next < pt->nops && llm_ir_op_equal(p->ops[pt->ops[next]], op, &km, remat_cb, NULL)) {
			next++;
			continue;
		}
		if (llm_ir_is_remat(op))
			continue; /* a copied constant; checked where it is used */
		/* Name what went wrong: ops left out before one that matches,
		 * or an op repeated. */
		size_t skip;
		for (skip = next + 1; skip < pt->nops; skip++)
			if (llm_ir_op_equal(p->ops[pt->ops[skip]], op, &km, remat_cb, NULL))
				break;
		if (skip < pt->nops) {
			for (size_t k = next; k < skip; k++) {
				char *d = desc(p, pt->ops[k]);
				violation(p, (ptrdiff_t)pi, p->ids[pt->ops[k]], "missing-op",
				    "%s of partition %zu is not in kernel '%s'", d, pi, pt->kernel);
				free(d);
			}
			next = skip + 1;
			continue;
		}
		if (next > 0 && llm_ir_op_equal(p->ops[pt->ops[next - 1]], op, &km, remat_cb, NULL)) {
			char *d = desc(p, pt->ops[next - 1]);
			violation(p, (ptrdiff_t)pi, p->ids[pt->ops[next - 1]], "duplicate-op",
			    "%s of partition %zu is in kernel '%s' twice", d, pi, pt->kernel);
			free(d);
			continue;
		}
		char *n = op_name(op);
		if (next < pt->nops) {
			char *d = desc(p, pt->ops[next]);
			violation(p, (ptrdiff_t)pi, p->ids[pt->ops[next]], "kernel-mismatch",
			    "kernel '%s' has '%s' where partition %zu has %s (or it reads other values)", pt->kernel, n,
			    pi, d);
			free(d);
		} else
			violation(p, (ptrdiff_t)pi, -1, "kernel-mismatch",
			    "kernel '%s' has '%s' after the last op of partition %zu", pt->kernel, n, pi);
		free(n);
		goto out;
	}
	violation(p, (ptrdiff_t)pi, -1, "kernel-mismatch", "kernel '%s' does not end in func.return", pt->kernel);
out:
	llm_ptrmap_free(&km);
	return rc;
}

/* Checks one call of the glue against partition pi; maps its results. */
static void
check_call(struct vphase *p, size_t pi, MlirModule glue, MlirOperation call, struct llm_ptrmap *gm)
{
	struct vctx *v = p->v;
	struct vpart *pt = &p->parts[pi];
	MlirAttribute ca = mlirOperationGetInherentAttributeByName(call, LLM_SREF("callee"));
	MlirStringRef callee = mlirFlatSymbolRefAttrGetValue(ca);
	size_t nargs = (size_t)mlirOperationGetNumOperands(call), nret = 0;
	MlirValue *args = llm_xcalloc(nargs + 1, sizeof(*args)), *ret = NULL;
	int ok = 1;

	v->ncalls++;
	if (!mlirStringRefEqual(callee, LLM_SREF(pt->kernel)))
		violation(p, (ptrdiff_t)pi, -1, "call-mismatch",
		    "call %zu of the glue calls '%.*s', partition %zu uses '%s'", pi, (int)callee.length, callee.data,
		    pi, pt->kernel);
	if (nargs != pt->nin) {
		violation(p, (ptrdiff_t)pi, -1, "input-mismatch",
		    "call %zu passes %zu values, partition %zu declares %zu inputs", pi, nargs, pi, pt->nin);
		ok = 0;
	}
	for (size_t i = 0; i < nargs; i++) {
		const void *a = NULL;
		if (llm_ptrmap_get(gm, mlirOperationGetOperand(call, (intptr_t)i).ptr, &a))
			args[i] = (MlirValue){a};
		if (i < pt->nin && ok && !mlirValueEqual(args[i], pt->in[i].v)) {
			char *x = value_desc(p, args[i]), *y = value_desc(p, pt->in[i].v);
			violation(p, (ptrdiff_t)pi, pt->in[i].arg ? -1 : pt->in[i].n, "input-mismatch",
			    "call %zu passes %s as input %zu, partition %zu declares %s", pi, x, i, pi, y);
			free(x);
			free(y);
		}
	}

	MlirModule km = pt->file ? kernel_module(p, pi, pt->file) : (MlirModule){NULL};
	MlirOperation kf = mlirModuleIsNull(km) ? (MlirOperation){NULL} : llm_ir_find_func_ref(km, callee);
	MlirOperation decl = llm_ir_find_func_ref(glue, callee);
	if (!mlirModuleIsNull(km) && mlirOperationIsNull(kf))
		violation(p, (ptrdiff_t)pi, -1, "call-mismatch", "%s has no function '%.*s'", pt->file,
		    (int)callee.length, callee.data);
	if (!mlirOperationIsNull(kf)) {
		if (mlirOperationIsNull(decl) || !func_type_equal(kf, decl))
			violation(p, (ptrdiff_t)pi, -1, "decl-mismatch",
			    "the glue declares '%.*s' with another type than %s defines", (int)callee.length,
			    callee.data, pt->file);
		char hx[17];
		llm_hex64(llm_ir_func_hash(kf, NULL), hx);
		if (strcmp(hx, pt->hash) != 0)
			violation(p, (ptrdiff_t)pi, -1, "hash-mismatch",
			    "kernel '%.*s' hashes to %s, partition.json says %s", (int)callee.length, callee.data, hx,
			    pt->hash);
		if (check_kernel(p, pi, kf, args, nargs, &ret, &nret) == 0) {
			if (nret != pt->nout)
				violation(p, (ptrdiff_t)pi, -1, "output-mismatch",
				    "kernel '%s' returns %zu values, partition %zu declares %zu outputs", pt->kernel,
				    nret, pi, pt->nout);
			for (size_t i = 0; i < nret && i < pt->nout; i++)
				if (!mlirValueEqual(ret[i], pt->out[i].v)) {
					char *x = value_desc(p, ret[i]), *y = value_desc(p, pt->out[i].v);
					violation(p, (ptrdiff_t)pi, pt->out[i].arg ? -1 : pt->out[i].n,
					    "output-mismatch",
					    "kernel '%s' returns %s as result %zu, partition %zu declares %s",
					    pt->kernel, x, i, pi, y);
					free(x);
					free(y);
				}
		}
	}
	/* Map the call's results: to what the kernel really returns when it
	 * could be paired, else to what partition.json declares. */
	for (intptr_t r = 0; r < mlirOperationGetNumResults(call); r++) {
		MlirValue o = {NULL};
		if (ret && (size_t)r < nret)
			o = ret[r];
		else if (!ret && (size_t)r < pt->nout)
			o = pt->out[r].v;
		if (!mlirValueIsNull(o))
			llm_ptrmap_put(gm, mlirOperationGetResult(call, r).ptr, o.ptr);
	}
	free(args);
	free(ret);
}

/* Compares two func.func ops' attributes (name, type, argument and
 * result attributes, llvm.emit_c_interface, visibility). */
static void
check_signature(struct vphase *p, MlirOperation orig, MlirOperation glue)
{
	intptr_t na = mlirOperationGetNumAttributes(orig), nb = mlirOperationGetNumAttributes(glue);
	for (intptr_t i = 0; i < na; i++) {
		MlirNamedAttribute a = mlirOperationGetAttribute(orig, i);
		MlirAttribute b = mlirOperationGetAttributeByName(glue, mlirIdentifierStr(a.name));
		MlirStringRef n = mlirIdentifierStr(a.name);
		if (mlirAttributeIsNull(b) || !mlirAttributeEqual(a.attribute, b))
			violation(p, -1, -1, "glue-signature", "'@%s' of the glue differs from the original in '%.*s'",
			    p->entry, (int)n.length, n.data);
	}
	for (intptr_t i = 0; i < nb; i++) {
		MlirNamedAttribute b = mlirOperationGetAttribute(glue, i);
		MlirStringRef n = mlirIdentifierStr(b.name);
		if (mlirAttributeIsNull(mlirOperationGetAttributeByName(orig, n)))
			violation(p, -1, -1, "glue-signature", "'@%s' of the glue has '%.*s', the original does not",
			    p->entry, (int)n.length, n.data);
	}
}

static void
check_glue(struct vphase *p)
{
	struct vctx *v = p->v;
	MlirModule g;
	struct llm_ptrmap gm = {0};
	int *seen = llm_xcalloc(p->nops, sizeof(*seen));
	size_t call = 0;

	if (llm_ir_parse(v->ctx, p->gluepath, &g) < 0) {
		violation(p, -1, -1, "bad-part", "%s", llm_errmsg());
		free(seen);
		return;
	}
	if (llm_ir_verify(v->ctx, mlirModuleGetOperation(g), p->gluepath) < 0) {
		violation(p, -1, -1, "bad-part", "%s", llm_errmsg());
		goto out;
	}

	/* Every other function of the original module, unchanged. */
	for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(p->orig)); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op)) {
		if (!llm_ir_is(op, "func.func") || mlirOperationEqual(op, p->func))
			continue;
		MlirStringRef n = llm_ir_sym_name(op);
		MlirOperation o = llm_ir_find_func_ref(g, n);
		struct llm_ptrmap m = {0};
		if (mlirOperationIsNull(o) || !llm_ir_op_equal(op, o, &m, NULL, NULL))
			violation(p, -1, -1, "glue-function", "the glue lacks '@%.*s' of the original, or changes it",
			    (int)n.length, n.data);
		llm_ptrmap_free(&m);
	}

	MlirOperation gf = llm_ir_find_func(g, p->entry);
	if (mlirOperationIsNull(gf)) {
		violation(p, -1, -1, "glue-signature", "%s has no function '@%s'", p->gluepath, p->entry);
		goto out;
	}
	check_signature(p, p->func, gf);
	MlirBlock gb = llm_ir_func_body(gf);
	if (mlirBlockIsNull(gb) || mlirBlockGetNumArguments(gb) != mlirBlockGetNumArguments(p->body)) {
		violation(p, -1, -1, "glue-signature", "'@%s' of the glue has another number of arguments", p->entry);
		goto out;
	}
	for (intptr_t i = 0; i < mlirBlockGetNumArguments(gb); i++)
		llm_ptrmap_put(&gm, mlirBlockGetArgument(gb, i).ptr, mlirBlockGetArgument(p->body, i).ptr);

	for (MlirOperation op = mlirBlockGetFirstOperation(gb); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op)) {
		int64_t id;
		if (llm_ir_is(op, "func.call")) {
			if (call < p->nparts)
				check_call(p, call, g, op, &gm);
			else
				violation(p, -1, -1, "extra-call", "the glue makes more calls than the %zu partitions",
				    p->nparts);
			call++;
			continue;
		}
		if (llm_ir_attr_i64(op, "llm.id", &id) != 1) {
			if (llm_ir_is_remat(op))
				continue; /* a copied constant */
			char *n = op_name(op);
			violation(p, -1, -1, "glue-mismatch",
			    "the glue has '%s' (line %d), which stands for no op of the original", n, llm_ir_line(op));
			free(n);
			continue;
		}
		ptrdiff_t i = pos_of_id(p, id);
		if (i < 0) {
			violation(p, -1, id, "unknown-op", "the glue has op %lld, which the original does not have",
			    (long long)id);
			continue;
		}
		char *d = desc(p, (size_t)i);
		if (seen[i]++)
			violation(p, -1, id, "duplicate-op", "%s is in the glue twice", d);
		else if (p->owner[i] != OWN_GLUE)
			violation(p, p->owner[i] >= 0 ? p->owner[i] : -1, id, "misplaced-op",
			    "%s is in the glue but not in glue_ops", d);
		if (!llm_ir_op_equal(p->ops[i], op, &gm, remat_cb, NULL))
			violation(p, -1, id, "glue-mismatch",
			    "%s differs in the glue from the original (or reads other values)", d);
		free(d);
	}
	if (call < p->nparts)
		violation(p, (ptrdiff_t)call, -1, "missing-call", "the glue calls %zu of the %zu partitions", call,
		    p->nparts);
	for (size_t i = 0; i < p->nops; i++)
		if (p->owner[i] == OWN_GLUE && p->claims[i] == 1 && !seen[i]) {
			char *d = desc(p, i);
			violation(p, -1, p->ids[i], "missing-op", "%s is in glue_ops but not in the glue", d);
			free(d);
		}
out:
	mlirModuleDestroy(g);
	llm_ptrmap_free(&gm);
	free(seen);
}

/* ---- driver ---- */

static void
free_phase(struct vphase *p)
{
	for (size_t i = 0; i < p->nparts; i++) {
		free(p->parts[i].ops);
		free(p->parts[i].in);
		free(p->parts[i].out);
		llm_ptrmap_free(&p->parts[i].member);
	}
	free(p->parts);
	free(p->ops);
	free(p->ids);
	free(p->owner);
	free(p->claims);
	llm_ptrmap_free(&p->pos);
	llm_ptrmap_free(&p->byid);
	if (!mlirModuleIsNull(p->orig))
		mlirModuleDestroy(p->orig);
	free(p->source);
	free(p->gluepath);
}

static void
record_use(struct vctx *v, const struct vphase *p, const struct vpart *pt)
{
	char kind[32];
	if (llm_phase_kind(p->name, kind, sizeof(kind)) < 0)
		snprintf(kind, sizeof(kind), "%s", p->name);
	for (size_t i = 0; i < v->nuses; i++) {
		struct kuse *u = &v->uses[i];
		if (strcmp(u->name, pt->kernel) == 0 && strcmp(u->file, pt->file ? pt->file : "") == 0 &&
		    strcmp(u->hash, pt->hash) == 0 && strcmp(u->kind, kind) == 0) {
			u->n++;
			return;
		}
	}
	v->uses = llm_xreallocarray(v->uses, v->nuses + 1, sizeof(*v->uses));
	struct kuse *u = &v->uses[v->nuses++];
	u->name = pt->kernel;
	u->file = pt->file ? pt->file : "";
	u->hash = pt->hash;
	snprintf(u->kind, sizeof(u->kind), "%s", kind);
	u->n = 1;
}

/* The kernel index: every kernel the partitions call once, with their
 * file, hash, kind and use count, and nothing else. */
static int
check_kernels(struct vctx *v, json_t *root)
{
	json_t *ks = json_object_get(root, "kernels");
	if (!json_is_array(ks))
		return llm_seterr("%s: no array 'kernels'", v->path);
	unsigned char *seen = llm_xcalloc(v->nuses + 1, 1);
	for (size_t i = 0; i < json_array_size(ks); i++) {
		json_t *k = json_array_get(ks, i);
		char *c = llm_xasprintf("%s: kernels[%zu]", v->path, i);
		const char *name, *file, *kind, *hash;
		int64_t n;
		int bad = !json_is_object(k) ? llm_seterr("%s: not an object", c) :
					       llm_json_str(k, "name", c, &name) < 0 ||
			llm_json_str(k, "file", c, &file) < 0 || llm_json_str(k, "kind", c, &kind) < 0 ||
			llm_json_str(k, "hash", c, &hash) < 0 || llm_json_int(k, "partitions", c, &n) < 0;
		free(c);
		if (bad) {
			free(seen);
			return -1;
		}
		size_t u = 0;
		while (u < v->nuses && strcmp(v->uses[u].name, name) != 0)
			u++;
		if (!llm_path_inside(file))
			index_violation(v, "bad-path", "kernels[%zu]: file '%s' is outside %s", i, file, v->dir);
		else if (u == v->nuses)
			index_violation(v, "index-mismatch", "kernels[%zu]: '%s' is called by no partition", i, name);
		else if (seen[u]++)
			index_violation(v, "index-mismatch", "kernels[%zu]: '%s' is listed twice", i, name);
		else if (strcmp(v->uses[u].file, file) != 0 || strcmp(v->uses[u].hash, hash) != 0 ||
		    strcmp(v->uses[u].kind, kind) != 0)
			index_violation(v, "index-mismatch",
			    "kernels[%zu]: '%s' is %s, %s, hash %s; its partitions say "
			    "%s, %s, hash %s",
			    i, name, kind, file, hash, v->uses[u].kind, v->uses[u].file, v->uses[u].hash);
		else if ((size_t)n != v->uses[u].n)
			index_violation(v, "index-mismatch",
			    "kernels[%zu]: '%s' is used by %" PRId64 " partitions, the "
			    "phases call it %zu times",
			    i, name, n, v->uses[u].n);
	}
	for (size_t u = 0; u < v->nuses; u++)
		if (!seen[u] && *v->uses[u].file)
			index_violation(v, "index-mismatch", "kernel '%s' (%s) is called but not in 'kernels'",
			    v->uses[u].name, v->uses[u].file);
	free(seen);
	return 0;
}

/* The model the partitions come from: "model" names the model.json whose
 * phases are the originals, one by one. */
static int
check_model(struct vctx *v, json_t *root)
{
	const char *rel;
	struct llm_model m;
	if (llm_json_str(root, "model", v->path, &rel) < 0)
		return -1;
	char *path = llm_path_join(v->dir, rel);
	if (llm_model_load(&m, path) < 0) {
		index_violation(v, "model-mismatch", "model '%s': %s", rel, llm_errmsg());
		free(path);
		return 0;
	}
	json_t *phases = json_object_get(root, "phases");
	v->nsource_ok = json_array_size(phases);
	v->source_ok = llm_xcalloc(v->nsource_ok + 1, 1);
	if ((size_t)m.nphases != json_array_size(phases))
		index_violation(v, "model-mismatch", "model '%s' has %d phases, the partitions %zu", rel, m.nphases,
		    json_array_size(phases));
	for (size_t i = 0; i < json_array_size(phases) && i < (size_t)m.nphases; i++) {
		json_t *jp = json_array_get(phases, i);
		const char *name = json_string_value(json_object_get(jp, "name"));
		const char *entry = json_string_value(json_object_get(jp, "entry"));
		const char *src = json_string_value(json_object_get(jp, "source"));
		const struct llm_phase *ph = &m.phases[i];
		char *want = llm_path_join(m.dir, ph->file), *got = src ? llm_path_join(v->dir, src) : NULL;
		char *rw = realpath(want, NULL), *rg = rw && got ? realpath(got, NULL) : NULL;
		if (!rw) { /* trouble, as a missing file read would be */
			llm_seterr("%s: %s", want, strerror(errno));
			free(rw);
			free(want);
			free(got);
			llm_model_free(&m);
			free(path);
			return -1;
		}
		if (!name || strcmp(name, ph->name) != 0 || !entry || strcmp(entry, ph->entry) != 0)
			index_violation(v, "model-mismatch", "phases[%zu] is '%s' (%s), model '%s' has '%s' (%s)", i,
			    name ? name : "?", entry ? entry : "?", rel, ph->name, ph->entry);
		else if (!rw || !rg || strcmp(rw, rg) != 0)
			index_violation(v, "model-mismatch", "phases[%zu]: source '%s' is not %s of model '%s'", i,
			    src ? src : "?", ph->file, rel);
		else
			v->source_ok[i] = 1;
		free(rw);
		free(rg);
		free(want);
		free(got);
	}
	llm_model_free(&m);
	free(path);
	return 0;
}

static int
verify_phase(struct vctx *v, json_t *jp, size_t n)
{
	struct vphase p = {0};
	char *ctx = llm_xasprintf("%s: phases[%zu]", v->path, n);
	const char *src, *glue;
	int64_t *glue_ids = NULL, *remat_ids = NULL;
	size_t nglue = 0, nremat = 0;
	json_t *parts;
	int rc = -1;

	p.v = v;
	if (!json_is_object(jp)) {
		llm_seterr("%s: not an object", ctx);
		goto out;
	}
	if (llm_json_str(jp, "name", ctx, &p.name) < 0 || llm_json_str(jp, "entry", ctx, &p.entry) < 0 ||
	    llm_json_str(jp, "source", ctx, &src) < 0 || llm_json_str(jp, "glue", ctx, &glue) < 0)
		goto out;
	char *c2 = llm_xasprintf("%s.glue_ops", ctx), *c3 = llm_xasprintf("%s.remat_ops", ctx);
	int bad = get_ids(json_object_get(jp, "glue_ops"), c2, &glue_ids, &nglue) < 0 ||
	    get_ids(json_object_get(jp, "remat_ops"), c3, &remat_ids, &nremat) < 0;
	free(c2);
	free(c3);
	if (bad)
		goto out;
	parts = json_object_get(jp, "partitions");
	if (!json_is_array(parts)) {
		llm_seterr("%s: no array 'partitions'", ctx);
		goto out;
	}
	/* Nothing outside the build is opened: a source that is not the
	 * model's phase file (check_model said so) and a glue module outside
	 * parts/ are not read. */
	if (n >= v->nsource_ok || !v->source_ok[n]) {
		rc = 0;
		goto out;
	}
	if (!llm_path_inside(glue)) {
		index_violation(v, "bad-path", "phases[%zu]: glue '%s' is outside %s", n, glue, v->dir);
		rc = 0;
		goto out;
	}
	p.source = llm_path_join(v->dir, src);
	p.gluepath = llm_path_join(v->dir, glue);
	if (load_original(&p) < 0)
		goto out;
	p.owner = llm_xcalloc(p.nops, sizeof(*p.owner));
	p.claims = llm_xcalloc(p.nops, sizeof(*p.claims));
	for (size_t i = 0; i < p.nops; i++)
		p.owner[i] = OWN_NONE;

	/* The partitions as declared. */
	p.nparts = json_array_size(parts);
	p.parts = llm_xcalloc(p.nparts + 1, sizeof(*p.parts));
	for (size_t pi = 0; pi < p.nparts; pi++) {
		json_t *jt = json_array_get(parts, pi);
		struct vpart *pt = &p.parts[pi];
		char *c = llm_xasprintf("%s.partitions[%zu]", ctx, pi), *ci = llm_xasprintf("%s.inputs", c),
		     *co = llm_xasprintf("%s.outputs", c), *cops = llm_xasprintf("%s.ops", c);
		int64_t *ids = NULL;
		size_t nids = 0;
		if (!json_is_object(jt))
			bad = llm_seterr("%s: not an object", c);
		else
			bad = llm_json_str(jt, "kernel", c, &pt->kernel) < 0 ||
			    llm_json_str(jt, "file", c, &pt->file) < 0 || llm_json_str(jt, "hash", c, &pt->hash) < 0 ||
			    get_ids(json_object_get(jt, "ops"), cops, &ids, &nids) < 0 ||
			    get_refs(json_object_get(jt, "inputs"), ci, &pt->in, &pt->nin) < 0 ||
			    get_refs(json_object_get(jt, "outputs"), co, &pt->out, &pt->nout) < 0;
		free(c);
		free(ci);
		free(co);
		free(cops);
		if (bad) {
			free(ids);
			goto out;
		}
		if (!llm_path_inside(pt->file)) {
			violation(&p, (ptrdiff_t)pi, -1, "bad-path", "kernel file '%s' is outside %s", pt->file,
			    v->dir);
			pt->file = NULL;
		}
		record_use(v, &p, pt);
		pt->ops = llm_xcalloc(nids + 1, sizeof(*pt->ops));
		for (size_t k = 0; k < nids; k++) {
			ptrdiff_t i = pos_of_id(&p, ids[k]);
			if (i < 0) {
				violation(&p, (ptrdiff_t)pi, ids[k], "unknown-op",
				    "partition %zu names op %lld, which the original does not have", pi,
				    (long long)ids[k]);
				continue;
			}
			pt->ops[pt->nops++] = (size_t)i;
			llm_ptrmap_put(&pt->member, (const void *)(uintptr_t)(i + 1), NULL);
		}
		free(ids);
		for (size_t k = 0; k < pt->nin; k++) {
			char *w = llm_xasprintf("input %zu of partition %zu", k, pi);
			resolve(&p, pi, &pt->in[k], w);
			free(w);
		}
		for (size_t k = 0; k < pt->nout; k++) {
			char *w = llm_xasprintf("output %zu of partition %zu", k, pi);
			resolve(&p, pi, &pt->out[k], w);
			free(w);
		}
		v->npart_ops += pt->nops;
	}

	check_claims(&p, glue_ids, nglue, remat_ids, nremat);
	check_glue(&p);

	v->nphases++;
	v->nparts += p.nparts;
	v->nops += p.nops;
	v->nglue += nglue;
	v->nremat += nremat;
	json_t *pc = json_object();
	json_object_set_new(pc, "name", json_string(p.name));
	json_object_set_new(pc, "ops", json_integer((json_int_t)p.nops));
	json_object_set_new(pc, "partitions", json_integer((json_int_t)p.nparts));
	json_object_set_new(pc, "violations", json_integer((json_int_t)p.nviol));
	json_array_append_new(v->phase_counts, pc);
	rc = 0;
out:
	free(glue_ids);
	free(remat_ids);
	free(ctx);
	free_phase(&p);
	return rc;
}

int
llm_verify_partition(const char *path, json_t **report)
{
	struct vctx v = {0};
	json_t *root, *phases;
	const char *fmt;
	int rc = -1;

	*report = NULL;
	if (!(root = llm_json_load(path)))
		return -1;
	if (!json_is_object(root) || llm_json_str(root, "format", path, &fmt) < 0)
		goto out;
	if (strncmp(fmt, "llm-partition/", 14) != 0) {
		llm_seterr("%s: format '%s' is not an llm-partition", path, fmt);
		goto out;
	}
	if (strcmp(fmt, LLM_PARTITION_FORMAT) != 0) {
		llm_seterr("%s: unsupported version '%s' (this program reads %s)", path, fmt, LLM_PARTITION_FORMAT);
		goto out;
	}
	phases = json_object_get(root, "phases");
	if (!json_is_array(phases) || json_array_size(phases) == 0) {
		llm_seterr("%s: no phases", path);
		goto out;
	}
	v.path = path;
	v.dir = llm_xstrdup(path);
	char *slash = strrchr(v.dir, '/');
	if (slash)
		slash[1] = 0;
	else
		strcpy(v.dir, ".");
	v.violations = json_array();
	v.phase_counts = json_array();
	v.ctx = llm_ir_context();
	/* the model first: a phase whose source is not the model's is not read */
	if (check_model(&v, root) < 0)
		goto out;
	for (size_t i = 0; i < json_array_size(phases); i++)
		if (verify_phase(&v, json_array_get(phases, i), i) < 0)
			goto out;
	if (check_kernels(&v, root) < 0)
		goto out;

	size_t nk = 0;
	for (size_t i = 0; i < v.nkfiles; i++)
		nk += !mlirModuleIsNull(v.kfiles[i].mod);
	size_t nviol = json_array_size(v.violations);
	json_t *r = json_object(), *c = json_object();
	json_object_set_new(r, "format", json_string(LLM_PARTITION_REPORT_FORMAT));
	json_object_set_new(r, "partition", json_string(path));
	json_object_set_new(r, "valid", json_boolean(nviol == 0));
	json_object_set_new(c, "phases", json_integer((json_int_t)v.nphases));
	json_object_set_new(c, "partitions", json_integer((json_int_t)v.nparts));
	json_object_set_new(c, "kernel_files", json_integer((json_int_t)nk));
	json_object_set_new(c, "calls", json_integer((json_int_t)v.ncalls));
	json_object_set_new(c, "ops", json_integer((json_int_t)v.nops));
	json_object_set_new(c, "partition_ops", json_integer((json_int_t)v.npart_ops));
	json_object_set_new(c, "glue_ops", json_integer((json_int_t)v.nglue));
	json_object_set_new(c, "remat_ops", json_integer((json_int_t)v.nremat));
	json_object_set_new(c, "violations", json_integer((json_int_t)nviol));
	json_object_set_new(r, "counts", c);
	json_object_set_new(r, "phases", v.phase_counts);
	json_object_set_new(r, "violations", v.violations);
	v.phase_counts = v.violations = NULL;
	*report = r;
	rc = nviol ? 1 : 0;
out:
	for (size_t i = 0; i < v.nkfiles; i++) {
		if (!mlirModuleIsNull(v.kfiles[i].mod))
			mlirModuleDestroy(v.kfiles[i].mod);
		free(v.kfiles[i].rel);
	}
	free(v.kfiles);
	free(v.uses);
	free(v.source_ok);
	if (v.ctx.ptr)
		llm_ir_context_free(v.ctx);
	json_decref(v.violations);
	json_decref(v.phase_counts);
	free(v.dir);
	json_decref(root);
	return rc;
}
