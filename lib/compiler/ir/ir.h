/* ir.h: small helpers over the MLIR C API (mlir-c/IR.h), shared by
 * llm-split and llm-verify-partition.  Only these two programs link the
 * MLIR libraries; nothing outside lib/compiler/ir/ includes this header.
 *
 * Handles returned by the C API are non-owning unless a comment says
 * otherwise.  Strings from the C API (MlirStringRef) are not
 * NUL-terminated: print them with "%.*s".  Every MlirType and
 * MlirAttribute belongs to the context, so modules that are compared
 * (an original and its parts) must be parsed into the same one. */
#ifndef LLM_IR_H
#define LLM_IR_H

#include <mlir-c/IR.h>
#include <stdint.h>

#include "../../base/hash.h"
#include "../../base/util.h"

/* A context with every upstream dialect registered and a diagnostic
 * handler that keeps the first error (with its location) for the next
 * llm_ir_parse or llm_ir_verify, instead of printing it. */
MlirContext llm_ir_context(void);
void llm_ir_context_free(MlirContext ctx);

/* Parses a file into a new module (the caller destroys it): 0, or -1
 * with llm_errmsg "path:line:col: error: message", MLIR's first error in
 * one line ("path: file:line:col: ..." when an op's location is in
 * another file, "path: error: ..." when it has none). */
int llm_ir_parse(MlirContext ctx, const char *path, MlirModule *out);
/* Verifies op and everything nested: 0, or -1 with llm_errmsg
 * "what: file:line:col: error: message" (what is left out when it is
 * that file; "what: error: message" without a file location). */
int llm_ir_verify(MlirContext ctx, MlirOperation op, const char *what);

/* The op's name equals name. */
int llm_ir_is(MlirOperation op, const char *name);
/* The line of the op's file location, or 0. */
int llm_ir_line(MlirOperation op);

/* Discardable attributes (llm.*): 1 and *out when present with the right
 * type, 0 when absent, -1 when present with another type. */
int llm_ir_attr_i64(MlirOperation op, const char *name, int64_t *out);
int llm_ir_attr_str(MlirOperation op, const char *name, MlirStringRef *out);

/* Removes llm.id, llm.layer and llm.stage from op and every nested op:
 * what is left (llm.sched included) is what lowering sees. */
void llm_ir_strip_placement(MlirOperation op);
/* The attribute names llm_ir_strip_placement removes. */
int llm_ir_is_placement_attr(MlirStringRef name);

/* Ops that a cut copies into each partition that uses them instead of
 * passing their value (an explicit allowlist: no operands, no effects):
 * arith.constant, and tensor.empty with static shape. */
int llm_ir_is_remat(MlirOperation op);

/* The func.func named name at the top level of module m, or a null op. */
MlirOperation llm_ir_find_func(MlirModule m, const char *name);
MlirOperation llm_ir_find_func_ref(MlirModule m, MlirStringRef name);
/* The sym_name of a func.func. */
MlirStringRef llm_ir_sym_name(MlirOperation func);
/* The body block of a func.func (its first block). */
MlirBlock llm_ir_func_body(MlirOperation func);

/* Where a value comes from, seen from the block body of a function:
 * LLM_IR_ARG, an argument of body (*idx: its number); LLM_IR_TOP, a
 * result of an op of body (*op, *idx: the result number); LLM_IR_NESTED,
 * defined inside a region of an op of body (*op: that op of body);
 * LLM_IR_OUTSIDE, anything else. */
enum llm_ir_def { LLM_IR_ARG, LLM_IR_TOP, LLM_IR_NESTED, LLM_IR_OUTSIDE };
enum llm_ir_def llm_ir_def_in(MlirBlock body, MlirValue v, MlirOperation *op, intptr_t *idx);
/* The op of body that is op or contains it, or a null op. */
MlirOperation llm_ir_ancestor_in(MlirBlock body, MlirOperation op);

/* Printing into a buffer (appended, NUL-terminated).  generic: the
 * generic op form; otherwise the custom form.  Call only on verified ops. */
void llm_ir_print(MlirOperation op, int generic, struct llm_buf *b);
void llm_ir_print_type(MlirType t, struct llm_buf *b);
/* A new string holding the printed type. */
char *llm_ir_type_str(MlirType t);

/* The structural hash of a func.func: a clone with sym_name "k" and
 * without placement attributes, printed in generic form (SSA names are
 * then numbered by position), FNV-1a 64 over that text.  The text is
 * appended to *text when text is not NULL (for a full comparison, which
 * rules out collisions). */
uint64_t llm_ir_func_hash(MlirOperation func, struct llm_buf *text);

/* Structural equality of two ops up to placement attributes and a value
 * mapping.  map(b value) must give the a value for every operand of b
 * defined outside b; values defined inside b (results of nested ops,
 * block arguments of nested blocks) are added to the map as the walk
 * pairs them.  Returns 1 when equal (names, attributes other than
 * placement, result types, operand values through the map, regions, op
 * by op), else 0.  cb, when set, decides operands that are not in the
 * map: it returns 1 if b's operand value may stand for a's.  (struct
 * llm_ptrmap is in hash.h.) */
typedef int (*llm_ir_operand_cb)(MlirValue a, MlirValue b, void *user);
int llm_ir_op_equal(MlirOperation a, MlirOperation b, struct llm_ptrmap *map, llm_ir_operand_cb cb, void *user);

/* An MlirStringRef for a C string. */
#define LLM_SREF(s) mlirStringRefCreateFromCString(s)

#endif
