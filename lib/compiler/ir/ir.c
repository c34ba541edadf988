/* ir.c: see ir.h. */
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/RegisterEverything.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

/* The first error diagnostic since the last llm_ir_parse/llm_ir_verify:
 * its message, and the file, line and column of its location (diag_file
 * empty when it has none).  The message is MLIR's alone: no source line
 * echoed, no notes; a newline in it (the input's own bytes, quoted from a
 * string literal) stays in it, for llm_seterr to write as "\n". */
static struct llm_buf diag;
static struct llm_buf diag_file;
static int diag_line, diag_col, diag_seen;

static void
buf_cb(MlirStringRef s, void *user)
{
	llm_buf_add(user, s.data, s.length);
}

/* The file location inside loc: itself, a name's child, a call site's
 * callee (where the op is) or a fused location's first; 0 when none. */
static int
file_loc(MlirLocation loc, int depth)
{
	if (depth > 16 || mlirLocationIsNull(loc))
		return 0;
	if (mlirLocationIsAFileLineColRange(loc)) {
		MlirStringRef f = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
		llm_buf_add(&diag_file, f.data, f.length);
		diag_line = mlirLocationFileLineColRangeGetStartLine(loc);
		diag_col = mlirLocationFileLineColRangeGetStartColumn(loc);
		return 1;
	}
	if (mlirLocationIsAName(loc))
		return file_loc(mlirLocationNameGetChildLoc(loc), depth + 1);
	if (mlirLocationIsACallSite(loc))
		return file_loc(mlirLocationCallSiteGetCallee(loc), depth + 1);
	if (mlirLocationIsAFused(loc)) {
		intptr_t n = mlirLocationFusedGetNumLocations(loc);
		MlirLocation *l = llm_xcalloc((size_t)n + 1, sizeof(*l));
		int found = 0;
		mlirLocationFusedGetLocations(loc, l);
		for (intptr_t i = 0; i < n && !found; i++)
			found = file_loc(l[i], depth + 1);
		free(l);
		return found;
	}
	return 0;
}

static MlirLogicalResult
on_diagnostic(MlirDiagnostic d, void *user)
{
	(void)user;
	if (mlirDiagnosticGetSeverity(d) != MlirDiagnosticError || diag_seen)
		return mlirLogicalResultSuccess();
	diag_seen = 1;
	file_loc(mlirDiagnosticGetLocation(d), 0);
	mlirDiagnosticPrint(d, buf_cb, &diag);
	return mlirLogicalResultSuccess();
}

/* The error of what name reads: "name:line:col: error: message" when
 * the location is in name, "name: file:line:col: error: message" when
 * it is in another file (an op's loc(...)), "name: error: message"
 * without one; dflt is the message when MLIR gave none. */
static int
diag_err(const char *name, const char *dflt)
{
	const char *msg = diag_seen && diag.len ? diag.p : dflt;
	if (!diag_file.len)
		return llm_seterr("%s: error: %s", name, msg);
	if (strcmp(diag_file.p, name) == 0)
		return llm_seterr("%s:%d:%d: error: %s", name, diag_line, diag_col, msg);
	return llm_seterr("%s: %s:%d:%d: error: %s", name, diag_file.p, diag_line, diag_col, msg);
}

static void
diag_reset(void)
{
	diag.len = diag_file.len = 0;
	diag_line = diag_col = diag_seen = 0;
}

MlirContext
llm_ir_context(void)
{
	MlirContext ctx = mlirContextCreate();
	MlirDialectRegistry reg = mlirDialectRegistryCreate();

	mlirRegisterAllDialects(reg);
	mlirContextAppendDialectRegistry(ctx, reg);
	mlirDialectRegistryDestroy(reg);
	mlirContextAttachDiagnosticHandler(ctx, on_diagnostic, NULL, NULL);
	return ctx;
}

void
llm_ir_context_free(MlirContext ctx)
{
	mlirContextDestroy(ctx);
	llm_buf_free(&diag);
	llm_buf_free(&diag_file);
}

int
llm_ir_parse(MlirContext ctx, const char *path, MlirModule *out)
{
	FILE *fp;

	/* The parser's own message for a missing file is less clear. */
	if (!(fp = fopen(path, "r")))
		return llm_seterr("%s:", path);
	fclose(fp);
	diag_reset();
	*out = mlirModuleCreateParseFromFile(ctx, LLM_SREF(path));
	if (mlirModuleIsNull(*out))
		return diag_err(path, "cannot parse");
	return 0;
}

int
llm_ir_verify(MlirContext ctx, MlirOperation op, const char *what)
{
	(void)ctx;
	diag_reset();
	if (mlirOperationVerify(op))
		return 0;
	return diag_err(what, "does not verify");
}

int
llm_ir_is(MlirOperation op, const char *name)
{
	return mlirStringRefEqual(mlirIdentifierStr(mlirOperationGetName(op)), LLM_SREF(name));
}

int
llm_ir_line(MlirOperation op)
{
	MlirLocation loc = mlirOperationGetLocation(op);
	return mlirLocationIsAFileLineColRange(loc) ? mlirLocationFileLineColRangeGetStartLine(loc) : 0;
}

int
llm_ir_attr_i64(MlirOperation op, const char *name, int64_t *out)
{
	MlirAttribute a = mlirOperationGetDiscardableAttributeByName(op, LLM_SREF(name));
	if (mlirAttributeIsNull(a))
		return 0;
	if (!mlirAttributeIsAInteger(a))
		return -1;
	*out = mlirIntegerAttrGetValueInt(a);
	return 1;
}

int
llm_ir_attr_str(MlirOperation op, const char *name, MlirStringRef *out)
{
	MlirAttribute a = mlirOperationGetDiscardableAttributeByName(op, LLM_SREF(name));
	if (mlirAttributeIsNull(a))
		return 0;
	if (!mlirAttributeIsAString(a))
		return -1;
	*out = mlirStringAttrGetValue(a);
	return 1;
}

static const char *const placement_attrs[] = {"llm.id", "llm.layer", "llm.stage"};

int
llm_ir_is_placement_attr(MlirStringRef name)
{
	for (size_t i = 0; i < LLM_NELEM(placement_attrs); i++)
		if (mlirStringRefEqual(name, LLM_SREF(placement_attrs[i])))
			return 1;
	return 0;
}

static MlirWalkResult
strip_cb(MlirOperation op, void *user)
{
	(void)user;
	for (size_t i = 0; i < LLM_NELEM(placement_attrs); i++)
		mlirOperationRemoveDiscardableAttributeByName(op, LLM_SREF(placement_attrs[i]));
	return MlirWalkResultAdvance;
}

void
llm_ir_strip_placement(MlirOperation op)
{
	mlirOperationWalk(op, strip_cb, NULL, MlirWalkPreOrder);
}

int
llm_ir_is_remat(MlirOperation op)
{
	if (llm_ir_is(op, "arith.constant"))
		return 1;
	if (llm_ir_is(op, "tensor.empty"))
		return mlirOperationGetNumOperands(op) == 0;
	return 0;
}

MlirStringRef
llm_ir_sym_name(MlirOperation func)
{
	MlirAttribute a = mlirOperationGetInherentAttributeByName(func, LLM_SREF("sym_name"));
	if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
		return mlirStringRefCreate(NULL, 0);
	return mlirStringAttrGetValue(a);
}

MlirOperation
llm_ir_find_func_ref(MlirModule m, MlirStringRef name)
{
	for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m)); !mlirOperationIsNull(op);
	    op = mlirOperationGetNextInBlock(op))
		if (llm_ir_is(op, "func.func") && mlirStringRefEqual(llm_ir_sym_name(op), name))
			return op;
	return (MlirOperation){NULL};
}

MlirOperation
llm_ir_find_func(MlirModule m, const char *name)
{
	return llm_ir_find_func_ref(m, LLM_SREF(name));
}

MlirBlock
llm_ir_func_body(MlirOperation func)
{
	return mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
}

MlirOperation
llm_ir_ancestor_in(MlirBlock body, MlirOperation op)
{
	for (;;) {
		MlirBlock b = mlirOperationGetBlock(op);
		if (mlirBlockIsNull(b))
			return (MlirOperation){NULL};
		if (mlirBlockEqual(b, body))
			return op;
		op = mlirBlockGetParentOperation(b);
		if (mlirOperationIsNull(op))
			return op;
	}
}

enum llm_ir_def
llm_ir_def_in(MlirBlock body, MlirValue v, MlirOperation *op, intptr_t *idx)
{
	MlirOperation o;

	if (mlirValueIsABlockArgument(v)) {
		MlirBlock b = mlirBlockArgumentGetOwner(v);
		if (mlirBlockEqual(b, body)) {
			*idx = mlirBlockArgumentGetArgNumber(v);
			return LLM_IR_ARG;
		}
		o = mlirBlockGetParentOperation(b);
	} else {
		o = mlirOpResultGetOwner(v);
		if (mlirBlockEqual(mlirOperationGetBlock(o), body)) {
			*op = o;
			*idx = mlirOpResultGetResultNumber(v);
			return LLM_IR_TOP;
		}
	}
	if (mlirOperationIsNull(o) || mlirOperationIsNull(o = llm_ir_ancestor_in(body, o)))
		return LLM_IR_OUTSIDE;
	*op = o;
	return LLM_IR_NESTED;
}

void
llm_ir_print(MlirOperation op, int generic, struct llm_buf *b)
{
	MlirOpPrintingFlags f = mlirOpPrintingFlagsCreate();

	mlirOpPrintingFlagsAssumeVerified(f);
	if (generic)
		mlirOpPrintingFlagsPrintGenericOpForm(f);
	mlirOperationPrintWithFlags(op, f, buf_cb, b);
	mlirOpPrintingFlagsDestroy(f);
	llm_buf_puts(b, "");
}

void
llm_ir_print_type(MlirType t, struct llm_buf *b)
{
	mlirTypePrint(t, buf_cb, b);
	llm_buf_puts(b, "");
}

char *
llm_ir_type_str(MlirType t)
{
	struct llm_buf b = {0};
	llm_ir_print_type(t, &b);
	return b.p;
}

uint64_t
llm_ir_func_hash(MlirOperation func, struct llm_buf *text)
{
	struct llm_buf local = {0}, *b = text ? text : &local;
	size_t start = b->len;
	MlirOperation c = mlirOperationClone(func);
	MlirContext ctx = mlirOperationGetContext(func);
	uint64_t h;

	mlirOperationSetInherentAttributeByName(c, LLM_SREF("sym_name"), mlirStringAttrGet(ctx, LLM_SREF("k")));
	llm_ir_strip_placement(c);
	llm_ir_print(c, 1, b);
	mlirOperationDestroy(c);
	h = llm_fnv1a(LLM_FNV_INIT, b->p + start, b->len - start);
	llm_buf_free(&local);
	return h;
}

/* The i-th attribute of op that is not a placement attribute, from *pos
 * on; advances *pos.  0 at the end. */
static int
next_attr(MlirOperation op, intptr_t *pos, MlirNamedAttribute *out)
{
	intptr_t n = mlirOperationGetNumAttributes(op);
	while (*pos < n) {
		MlirNamedAttribute a = mlirOperationGetAttribute(op, (*pos)++);
		if (!llm_ir_is_placement_attr(mlirIdentifierStr(a.name))) {
			*out = a;
			return 1;
		}
	}
	return 0;
}

static int
operand_equal(MlirValue a, MlirValue b, struct llm_ptrmap *map, llm_ir_operand_cb cb, void *user)
{
	const void *v;
	if (llm_ptrmap_get(map, b.ptr, &v))
		return v == a.ptr;
	return cb ? cb(a, b, user) : 0;
}

int
llm_ir_op_equal(MlirOperation a, MlirOperation b, struct llm_ptrmap *map, llm_ir_operand_cb cb, void *user)
{
	intptr_t n, pa = 0, pb = 0;
	MlirNamedAttribute x, y;

	if (!mlirIdentifierEqual(mlirOperationGetName(a), mlirOperationGetName(b)))
		return 0;
	if ((n = mlirOperationGetNumOperands(a)) != mlirOperationGetNumOperands(b) ||
	    mlirOperationGetNumResults(a) != mlirOperationGetNumResults(b) ||
	    mlirOperationGetNumRegions(a) != mlirOperationGetNumRegions(b) ||
	    mlirOperationGetNumSuccessors(a) != mlirOperationGetNumSuccessors(b))
		return 0;
	for (;;) {
		int ha = next_attr(a, &pa, &x), hb = next_attr(b, &pb, &y);
		if (ha != hb)
			return 0;
		if (!ha)
			break;
		if (!mlirIdentifierEqual(x.name, y.name) || !mlirAttributeEqual(x.attribute, y.attribute))
			return 0;
	}
	for (intptr_t i = 0; i < mlirOperationGetNumResults(a); i++)
		if (!mlirTypeEqual(mlirValueGetType(mlirOperationGetResult(a, i)),
			mlirValueGetType(mlirOperationGetResult(b, i))))
			return 0;
	for (intptr_t i = 0; i < n; i++)
		if (!operand_equal(mlirOperationGetOperand(a, i), mlirOperationGetOperand(b, i), map, cb, user))
			return 0;
	for (intptr_t i = 0; i < mlirOperationGetNumSuccessors(a); i++) {
		const void *v;
		if (!llm_ptrmap_get(map, mlirOperationGetSuccessor(b, i).ptr, &v) ||
		    v != mlirOperationGetSuccessor(a, i).ptr)
			return 0;
	}
	for (intptr_t r = 0; r < mlirOperationGetNumRegions(a); r++) {
		MlirRegion ra = mlirOperationGetRegion(a, r), rb = mlirOperationGetRegion(b, r);
		MlirBlock ba = mlirRegionGetFirstBlock(ra), bb = mlirRegionGetFirstBlock(rb);
		/* Map every block first: branches may go forward. */
		for (; !mlirBlockIsNull(ba) && !mlirBlockIsNull(bb);
		    ba = mlirBlockGetNextInRegion(ba), bb = mlirBlockGetNextInRegion(bb)) {
			intptr_t na = mlirBlockGetNumArguments(ba);
			if (na != mlirBlockGetNumArguments(bb))
				return 0;
			llm_ptrmap_put(map, bb.ptr, ba.ptr);
			for (intptr_t i = 0; i < na; i++) {
				MlirValue va = mlirBlockGetArgument(ba, i), vb = mlirBlockGetArgument(bb, i);
				if (!mlirTypeEqual(mlirValueGetType(va), mlirValueGetType(vb)))
					return 0;
				llm_ptrmap_put(map, vb.ptr, va.ptr);
			}
		}
		if (!mlirBlockIsNull(ba) || !mlirBlockIsNull(bb))
			return 0;
		for (ba = mlirRegionGetFirstBlock(ra), bb = mlirRegionGetFirstBlock(rb); !mlirBlockIsNull(ba);
		    ba = mlirBlockGetNextInRegion(ba), bb = mlirBlockGetNextInRegion(bb)) {
			MlirOperation oa = mlirBlockGetFirstOperation(ba), ob = mlirBlockGetFirstOperation(bb);
			for (; !mlirOperationIsNull(oa) && !mlirOperationIsNull(ob);
			    oa = mlirOperationGetNextInBlock(oa), ob = mlirOperationGetNextInBlock(ob))
				if (!llm_ir_op_equal(oa, ob, map, cb, user))
					return 0;
			if (!mlirOperationIsNull(oa) || !mlirOperationIsNull(ob))
				return 0;
		}
	}
	for (intptr_t i = 0; i < mlirOperationGetNumResults(a); i++)
		llm_ptrmap_put(map, mlirOperationGetResult(b, i).ptr, mlirOperationGetResult(a, i).ptr);
	return 1;
}
