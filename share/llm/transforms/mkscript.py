#!/usr/bin/env python3
"""mkscript.py KIND [PARAM=VALUE ...] > KIND.mlir: the transform script of llm-lower
for a phase kind: decode (R = 1: GEMV) or prefill (R = n_tokens, dynamic: GEMM with
peeled rows).  The scripts are generated because the transform dialect has no
parameters: one tiling recipe is instantiated per rank and per tile size.

Parameters (measured on the 2-vCPU Zen3, AVX2, 16 ymm registers; see the
comments of each sequence):
  GV_NC, GV_NR, GV_KV  GEMV: W rows per scf.forall chunk, W rows per register
                       tile, k lanes (vector accumulators kept over the whole row);
                       class gemv has its chunks of GV_NC rows (8 streams of 8)
                       in its IR: GV_NC is lib/compiler/emit_int.h's GEMV_CHUNK and GV_NR
                       must divide its GEMV_STREAM, which tests/llm-lower.bats
                       checks (with the scripts being this program's output)
  GM_NC, GM_NR, GM_MR, GM_KV, GM_KC  GEMM: W rows per chunk, W rows and x rows
                       per register tile, k lanes, k block (0: no k blocking)
  QV_NT                quantized GEMV (classes qmv, qsum): 8-row tiles of W per
                       scf.forall iteration
  EW                   last-dim tile of elementwise ops
  RKV                  lanes of last-dim reductions (norm sums, softmax max/sum)
  AT_MR, AT_NT, AT_DT  attention: query rows and keys (in vector lanes) per
                       scores tile, head_dim tile of P.V
  AT_DB                decode scores: head_dim block (rows of the transposed keys
                       read together)
  AT_VB                decode P.V: positions per block (0: none)
  AT_PB, AT_PR         prefill P.V: positions per block, query rows per tile

ISA=NAME (first of the parameters) starts from the parameters of that ISA's form
in the table ISA below; llm-lower reads share/llm/transforms/<form>/KIND.mlir
for a target of that form (lib/formats/target.c's table of forms, whose transform
rows name these ISAs, as the Makefile's TRANSFORM_ISAS does: tests/unit/test_target.c
checks them) and the top-level scripts (AVX2's) for every other target."""
import sys
kind = sys.argv[1]
# What each ISA's form changes: AVX-512's 32 registers of 16 lanes take
# k in 16 lanes (zmm accumulators) in the GEMM register tiles (the GEMV
# stays at 8: in 16 it decoded slower on a Xeon, BENCHMARKS.md).  RISC-V
# V's 32 registers of VLEN bits (128 at the least, where LLVM's fixed
# vectors assume it: vector<8xf32> is an LMUL-2 group, 16 of them) take
# 4 rows of x in the GEMM register tiles (6 spilled whole groups) and
# elementwise tiles of 32 (64 is an LMUL-8 group, two at once spill):
# fewer guest instructions under qemu (BENCHMARKS.md, "RISC-V V").
ISA = {"avx2": {}, "avx512": dict(GM_KV=16), "rvv": dict(GM_MR=4, EW=32)}
P = dict(GV_NC=64, GV_NR=8, GV_KV=8,          # GEMV: rows of W per forall chunk, per tile, k lanes
         QV_NT=1,                             # quantized GEMV: 8-row tiles of W per forall iteration
         GM_NC=64, GM_NR=2, GM_MR=6, GM_KV=8, GM_KC=512,  # GEMM: W rows per chunk / per tile, x rows per tile, k lanes
         EW=64, RKV=8, AT_MR=6, AT_NT=16, AT_DT=16, AT_DB=8, AT_VB=64, AT_PB=64, AT_PR=4)                         # last-dim tile of elementwise ops, lanes of row reductions
args = sys.argv[2:]
isa = "avx2"
if args and args[0].startswith("ISA="):
    isa = args.pop(0)[4:]
    P.update(ISA[isa])
for a in args:
    k, v = a.split("="); P[k] = int(v)
A = "!transform.any_op"
out = []
def e(s=""): out.append(s)

def ones(n): return ", ".join(["1"] * n)
def zeros(n): return ", ".join(["0"] * n)
def res(n): return "(" + ", ".join([A] * n) + ")"

e(f"// {kind}.mlir: the transform script of llm-lower for {kind} modules (share/doc/llm/ir.txt).")
if isa == "avx2":
    e(f"// Written by mkscript.py in this directory (python3 mkscript.py {kind} > {kind}.mlir);")
else:
    e(f"// Written by mkscript.py (python3 mkscript.py {kind} ISA={isa} > {isa}/{kind}.mlir): the {isa} form;")
e("// edit that, not this.  Parameters: " + " ".join(f"{k}={v}" for k, v in P.items()) + ".")
e("// Every linalg op is tiled by its llm.sched class to tiles of static shape,")
e("// which vectorise; the partial tiles of dynamic or ragged dimensions are")
e("// peeled off and left to scalar loops, so the result is correct for any")
e("// shape and fast for the usual ones.")
e("module attributes {transform.with_named_sequence} {")

# ---- helpers ----
e(f"""  // Splits off the last, partial iteration of a loop; a silenceable
  // failure (suppressed by the callers) when the step divides the trip count.
  transform.named_sequence @peel(%l: {A} {{transform.readonly}}) {{
    %lf = transform.cast %l : {A} to !transform.op<"scf.for">
    %main, %rest = transform.loop.peel %lf : (!transform.op<"scf.for">) -> ({A}, {A})
    transform.yield
  }}""")
# k split for rank-n ops whose last dim is the reduction
def ksplit(name, n, kv):
    e(f"""  // Reduction over the last dim of a rank-{n} tile in {kv} lanes: a vector
  // accumulator lives in registers over the whole loop and is reduced once
  // at the end.  Ragged last columns, if any, are peeled and done one at a
  // time (short bf16 vectors would need a truncation routine at run time).
  transform.named_sequence @{name}(%t: {A} {{transform.consumed}}) {{
    %i, %s, %c, %lk = transform.structured.tile_reduction_using_for %t by tile_sizes = [{zeros(n-1)}, {kv}] : ({A}) -> {res(4)}
    transform.annotate %lk "llm.kloop" : {A}
    %rest = transform.sequence %lk : ({A}) -> {A} failures(suppress) {{
    ^bb0(%l: {A}):
      %lf = transform.cast %l : {A} to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> ({A}, {A})
      transform.yield %r : {A}
    }}
    transform.foreach %rest : {A} {{
    ^bb0(%r: {A}):
      %rk = transform.structured.match ops{{["linalg.generic"]}} in %r : ({A}) -> {A}
      %rk2, %rkl = transform.structured.tile_using_for %rk tile_sizes [{zeros(n-1)}, 1] : ({A}) -> ({A}, {A})
    }}
    transform.yield
  }}""")
ksplit("ksplit_gemv", 3, P["GV_KV"])
ksplit("ksplit_gemv5", 5, P["GV_KV"])
if P["GM_KV"] != P["GV_KV"]:
    ksplit("ksplit_gemm", 3, P["GM_KV"])
for n in (2, 3, 4):
    ksplit(f"ksplit_red{n}", n, P["RKV"])

# ---- GEMV: matmul with R = 1 and head ----
e(f"""  // y[1, n] = sum_k x[1, k] * W[n, k] (W in its [N, K] layout): chunks of
  // {P['GV_NC']} rows of W per scf.forall iteration (OpenMP threads), {P['GV_NR']} rows per register
  // tile, k in {P['GV_KV']} lanes; the output initialiser is fused into the chunk.
  transform.named_sequence @gemv(%mm: {A} {{transform.consumed}}) {{
    %fill = transform.get_producer_of_operand %mm[2] : ({A}) -> {A}
    %t1, %forall = transform.structured.tile_using_forall %mm tile_sizes [0, {P['GV_NC']}] : ({A}) -> ({A}, {A})
    %f1, %forall2 = transform.structured.fuse_into_containing_op %fill into %forall : ({A}, {A}) -> ({A}, {A})
    %t2, %ln = transform.structured.tile_using_for %t1 tile_sizes [0, {P['GV_NR']}] : ({A}) -> ({A}, {A})
    transform.include @peel failures(suppress) (%ln) : ({A}) -> ()
    %tiles = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "matmul"}} in %forall2 : ({A}) -> {A}
    %tiles2 = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "head"}} in %forall2 : ({A}) -> {A}
    %all = transform.merge_handles %tiles, %tiles2 : {A}
    transform.foreach %all : {A} {{
    ^bb0(%x: {A}):
      transform.include @ksplit_gemv failures(propagate) (%x) : ({A}) -> ()
    }}
    transform.yield
  }}""")

e(f"""  // The single-row products in streams (class gemv, share/doc/llm/ir.txt):
  // y[0, c, j, h] = sum_k x[0, k] * W[c, j, h, k], iterated (r, c, h, j, k).  One
  // chunk c ({P['GV_NC']} rows of W) per scf.forall iteration, then for each row h of
  // the streams a register tile of {P['GV_NR']} streams j (rows 8 apart) with k in
  // {P['GV_KV']} lanes: the {P['GV_NR']} rows a tile reads run on into the next h, so the
  // hardware prefetchers see long streams.
  transform.named_sequence @gemv_s(%mm: {A} {{transform.consumed}}) {{
    %fill = transform.get_producer_of_operand %mm[2] : ({A}) -> {A}
    %t1, %forall = transform.structured.tile_using_forall %mm tile_sizes [0, 1] : ({A}) -> ({A}, {A})
    %f1, %forall2 = transform.structured.fuse_into_containing_op %fill into %forall : ({A}, {A}) -> ({A}, {A})
    %t2, %lh, %lj = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 1, {P['GV_NR']}] : ({A}) -> ({A}, {A}, {A})
    %tiles = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "gemv"}} in %forall2 : ({A}) -> {A}
    transform.foreach %tiles : {A} {{
    ^bb0(%x: {A}):
      transform.include @ksplit_gemv5 failures(propagate) (%x) : ({A}) -> ()
    }}
    transform.yield
  }}""")

e(f"""  transform.named_sequence @m_is_qmv(%c: {A} {{transform.readonly}}) {{
    transform.match.operation_name %c ["linalg.generic"] : {A}
    %m = transform.structured.match attributes{{llm.sched = "qmv"}} in %c : ({A}) -> {A}
    %one = transform.param.constant 1 : i64 -> !transform.param<i64>
    %nm = transform.num_associations %m : ({A}) -> !transform.param<i64>
    transform.match.param.cmpi eq %nm, %one : !transform.param<i64>
    transform.yield
  }}""")
for n in (3, 4, 5):
    e(f"""  // The qmv op of a quantized single-row product with {n} inputs (x or its
  // two halves, codes, scales, offsets if any), fused into a forall: operand
  // {n} is a slice of its zero fill.
  transform.named_sequence @m_qmv{n}(%c: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_is_qmv failures(propagate) (%c) : ({A}) -> ()
    transform.match.structured %c : {A} {{
    ^bb0(%s: {A}):
      %n = transform.match.structured.num_inputs %s : ({A}) -> !transform.param<i64>
      %want = transform.param.constant {n} : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %n, %want : !transform.param<i64>
      transform.match.structured.yield
    }}
    transform.yield %c : {A}
  }}
  transform.named_sequence @qmv_tile{n}(%mm: {A} {{transform.consumed}}) {{
    %zs = transform.get_producer_of_operand %mm[{n}] : ({A}) -> {A}
    %z = transform.get_producer_of_operand %zs[0] : ({A}) -> {A}
    %fa = transform.get_parent_op %mm {{op_name = "scf.forall"}} : ({A}) -> {A}
    %z1, %fa2 = transform.structured.fuse_into_containing_op %z into %fa : ({A}, {A}) -> ({A}, {A})
    %t, %lg = transform.structured.tile_using_for %mm tile_sizes [0, 0, 1] : ({A}) -> ({A}, {A})
    transform.annotate %lg "llm.kloop" : {A}
    // Unit dims folded in the whole forall body, so that the zero fill of
    // the accumulator and its read in the group loop have one shape and
    // fold to a constant (no buffer a tile).
    transform.apply_patterns to %fa2 {{
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices
      transform.apply_patterns.canonicalization
    }} : {A}
    transform.yield
  }}""")
e(f"""  // The single-row products of a quantized W (classes qfill, qmv, qsum;
  // share/doc/llm/ir.txt): acc[0, t, h, l] = sum_g x[0, g, l] * w[t, g, h, l]
  // in G lanes, then y[0, t, h] = sum_l acc[0, t, h, l].  {P['QV_NT']} tile(s) of 8 rows
  // of W per scf.forall iteration (OpenMP threads), the lane sum's
  // initialiser, the qmv op and its zero fill fused into it; the groups g
  // become a loop carrying the [8, G] accumulator (a tile's group of codes
  // is 8 x G contiguous bytes, so the tiles are one stream), with the unit
  // dims folded away so that the body vectorises to elementwise FMAs and
  // no contraction is formed.
  transform.named_sequence @qgemv(%ys: {A} {{transform.consumed}}) {{
    %acc = transform.get_producer_of_operand %ys[0] : ({A}) -> {A}
    %init = transform.get_producer_of_operand %ys[1] : ({A}) -> {A}
    %t1, %forall = transform.structured.tile_using_forall %ys tile_sizes [0, {P['QV_NT']}] : ({A}) -> ({A}, {A})
    %i1, %f2 = transform.structured.fuse_into_containing_op %init into %forall : ({A}, {A}) -> ({A}, {A})
    %a1, %f3 = transform.structured.fuse_into_containing_op %acc into %f2 : ({A}, {A}) -> ({A}, {A})
    %r = transform.foreach_match in %f3 @m_qmv3 -> @qmv_tile3, @m_qmv4 -> @qmv_tile4, @m_qmv5 -> @qmv_tile5 : ({A}) -> {A}
    transform.yield
  }}
  // A quantized W decoded to f32 for the products of many rows (class
  // dequant): one tile of 8 rows per scf.forall iteration, a group of G
  // values at a time.
  transform.named_sequence @dequant(%d: {A} {{transform.consumed}}) {{
    %t1, %forall = transform.structured.tile_using_forall %d tile_sizes [1] : ({A}) -> ({A}, {A})
    %t2, %l:2 = transform.structured.tile_using_for %t1 tile_sizes [0, 1, 1] : ({A}) -> {res(3)}
    transform.yield
  }}""")

NTILE_KC0 = f"""    %t2, %ln = transform.structured.tile_using_for %t1 tile_sizes [0, {P['GM_NR']}] : ({A}) -> ({A}, {A})
    transform.include @peel failures(suppress) (%ln) : ({A}) -> ()"""
NTILE_KC = f"""    // k blocks of {P['GM_KC']} outermost in the chunk, then rows, then W rows:
    // the x tile stays in L1 and the W block in L2 while it is reused.
    %t2, %l1, %l2, %l3 = transform.structured.tile_using_for %t1 tile_sizes [{P['GM_MR']}, {P['GM_NR']}, {P['GM_KC']}] interchange = [2, 0, 1] : ({A}) -> ({A}, {A}, {A}, {A})
    %ln = transform.get_parent_op %t2 {{op_name = "scf.for"}} : ({A}) -> {A}
    %lr = transform.get_parent_op %ln {{op_name = "scf.for"}} : ({A}) -> {A}
    %scope = transform.get_parent_op %lr : ({A}) -> {A}
    transform.include @peel failures(suppress) (%ln) : ({A}) -> ()
    %full = transform.param.constant "full" -> !transform.any_param
    %part = transform.param.constant "rest" -> !transform.any_param
    %all = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "matmul"}} in %lr : ({A}) -> {A}
    transform.annotate %all "llm.rows" = %full : {A}, !transform.any_param
    %rest = transform.sequence %lr : ({A}) -> {A} failures(suppress) {{
    ^bb0(%l: {A}):
      %lcf = transform.cast %l : {A} to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lcf : (!transform.op<"scf.for">) -> ({A}, {A})
      transform.yield %r : {A}
    }}
    transform.foreach %rest : {A} {{
    ^bb0(%r: {A}):
      %ro = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.rows = "full"}} in %r : ({A}) -> {A}
      transform.annotate %ro "llm.rows" = %part : {A}, !transform.any_param
    }}
    %mf = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.rows = "full"}} in %scope : ({A}) -> {A}
    transform.foreach %mf : {A} {{
    ^bb0(%x: {A}):
      transform.include @KSPLIT failures(propagate) (%x) : ({A}) -> ()
    }}
    %mr = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.rows = "rest"}} in %scope : ({A}) -> {A}
    transform.foreach %mr : {A} {{
    ^bb0(%x: {A}):
      %t3, %l4 = transform.structured.tile_using_for %x tile_sizes [1] : ({A}) -> ({A}, {A})
      transform.include @KSPLIT failures(propagate) (%t3) : ({A}) -> ()
    }}
    transform.yield
  }}"""
NTILE_KC0 += f"""
    %tiles = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "matmul"}} in %forall2 : ({A}) -> {A}
    transform.foreach %tiles : {A} {{
    ^bb0(%x: {A}):
      transform.include @rows failures(propagate) (%x) : ({A}) -> ()
    }}
    transform.yield
  }}"""
NTILE = NTILE_KC if P['GM_KC'] else NTILE_KC0
if kind == "prefill":
    KG = "ksplit_gemm" if P["GM_KV"] != P["GV_KV"] else "ksplit_gemv"
    NTILE = NTILE.replace("@KSPLIT", "@" + KG)
    e(f"""  // Rows of a GEMM tile: {P['GM_MR']} at a time, then the R mod {P['GM_MR']} last ones one by one,
  // so that every tile has a static shape.
  transform.named_sequence @rows(%t: {A} {{transform.consumed}}) {{
    %t2, %lr = transform.structured.tile_using_for %t tile_sizes [{P['GM_MR']}] : ({A}) -> ({A}, {A})
    %scope = transform.get_parent_op %lr : ({A}) -> {A}
    %full = transform.param.constant "full" -> !transform.any_param
    %part = transform.param.constant "rest" -> !transform.any_param
    transform.annotate %t2 "llm.rows" = %full : {A}, !transform.any_param
    %rest = transform.sequence %lr : ({A}) -> {A} failures(suppress) {{
    ^bb0(%l: {A}):
      %lf = transform.cast %l : {A} to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> ({A}, {A})
      transform.yield %r : {A}
    }}
    transform.foreach %rest : {A} {{
    ^bb0(%r: {A}):
      %ro = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.rows = "full"}} in %r : ({A}) -> {A}
      transform.annotate %ro "llm.rows" = %part : {A}, !transform.any_param
    }}
    %mf = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.rows = "full"}} in %scope : ({A}) -> {A}
    transform.foreach %mf : {A} {{
    ^bb0(%x: {A}):
      transform.include @{KG} failures(propagate) (%x) : ({A}) -> ()
    }}
    %mr = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.rows = "rest"}} in %scope : ({A}) -> {A}
    transform.foreach %mr : {A} {{
    ^bb0(%x: {A}):
      %t3, %l3 = transform.structured.tile_using_for %x tile_sizes [1] : ({A}) -> ({A}, {A})
      transform.include @{KG} failures(propagate) (%t3) : ({A}) -> ()
    }}
    transform.yield
  }}
  // y[r, n] = sum_k x[r, k] * W[n, k], R rows (dynamic): chunks of {P['GM_NC']} rows of
  // W per scf.forall iteration; in a chunk, register tiles of {P['GM_NR']} rows of W
  // by {P['GM_MR']} rows of x, loops n then r, so that the W tile stays in L1 while
  // the rows of x stream past it.
  transform.named_sequence @gemm(%mm: {A} {{transform.consumed}}) {{
    %fill = transform.get_producer_of_operand %mm[2] : ({A}) -> {A}
    %t1, %forall = transform.structured.tile_using_forall %mm tile_sizes [0, {P['GM_NC']}] : ({A}) -> ({A}, {A})
    %f1, %forall2 = transform.structured.fuse_into_containing_op %fill into %forall : ({A}, {A}) -> ({A}, {A})
    %f2, %lf = transform.structured.tile_using_for %f1 tile_sizes [1] : ({A}) -> ({A}, {A})
{NTILE}""")

# ---- elementwise and reductions by rank ----
e(f"""  // Matcher prologue: a linalg.generic of the classes scheduled by rank
  // (marked llm.ew at the start; tiles of matmul and head ops are not).
  transform.named_sequence @m_other(%c0: {A} {{transform.readonly}}) {{
    transform.match.operation_name %c0 ["linalg.generic"] : {A}
    %one = transform.param.constant 1 : i64 -> !transform.param<i64>
    %m = transform.structured.match attributes{{llm.ew}} in %c0 : ({A}) -> {A}
    %n = transform.num_associations %m : ({A}) -> !transform.param<i64>
    transform.match.param.cmpi eq %n, %one : !transform.param<i64>
    transform.yield
  }}""")
for n in range(1, 6):
    ew = P["EW"]
    tiles = ", ".join(["1"] * (n - 1) + [str(ew)])
    e(f"""  // Elementwise rank {n}: one row at a time, the last dim in {ew}-wide pieces.
  transform.named_sequence @ew{n}(%t: {A} {{transform.consumed}}) {{
    %t2, %l:{n} = transform.structured.tile_using_for %t tile_sizes [{tiles}] : ({A}) -> {res(n + 1)}
    transform.include @peel failures(suppress) (%l#{n-1}) : ({A}) -> ()
    transform.yield
  }}
  transform.named_sequence @m_par{n}(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_other failures(propagate) (%c0) : ({A}) -> ()
    transform.match.structured %c0 : {A} {{
    ^bb0(%c: {A}):
      %rank = transform.match.structured.rank %c : ({A}) -> !transform.param<i64>
      %n = transform.param.constant {n} : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[all] {{parallel}} : {A}
      transform.match.structured.yield
    }}
    transform.yield %c0 : {A}
  }}""")
for n in range(2, 5):
    lead = f"%t2, %l:{n-1} = transform.structured.tile_using_for %t tile_sizes [{ones(n-1)}] : ({A}) -> {res(n)}"
    e(f"""  // Reduction over the last dim, rank {n}: one output element at a time.
  transform.named_sequence @red{n}(%t: {A} {{transform.consumed}}) {{
    {lead}
    transform.include @ksplit_red{n} failures(propagate) (%t2) : ({A}) -> ()
    transform.yield
  }}
  transform.named_sequence @m_red{n}(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_other failures(propagate) (%c0) : ({A}) -> ()
    transform.match.structured %c0 : {A} {{
    ^bb0(%c: {A}):
      %rank = transform.match.structured.rank %c : ({A}) -> !transform.param<i64>
      %n = transform.param.constant {n} : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[{", ".join(str(i) for i in range(n-1))}] {{parallel}} : {A}
      transform.match.structured.dim %c[-1] {{reduction}} : {A}
      transform.match.structured.yield
    }}
    transform.yield %c0 : {A}
  }}""")
if kind == "prefill":
    e(f"""  // Softmax of prefill attention (class softmax, rank 4 [h, g, r, t]): the
  // heads (h, g) shared out over the threads, then tiled as any rank-4 op.
  // Decode's are a few thousand elements a head: left on one thread there.
  transform.named_sequence @m_soft(%c0: {A} {{transform.readonly}}) {{
    transform.include @m_other failures(propagate) (%c0) : ({A}) -> ()
    %one = transform.param.constant 1 : i64 -> !transform.param<i64>
    %m = transform.structured.match attributes{{llm.sched = "softmax"}} in %c0 : ({A}) -> {A}
    %n = transform.num_associations %m : ({A}) -> !transform.param<i64>
    transform.match.param.cmpi eq %n, %one : !transform.param<i64>
    transform.yield
  }}
  transform.named_sequence @m_soft_par(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_soft failures(propagate) (%c0) : ({A}) -> ()
    %c = transform.include @m_par4 failures(propagate) (%c0) : ({A}) -> {A}
    transform.yield %c : {A}
  }}
  transform.named_sequence @m_soft_red(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_soft failures(propagate) (%c0) : ({A}) -> ()
    %c = transform.include @m_red4 failures(propagate) (%c0) : ({A}) -> {A}
    transform.yield %c : {A}
  }}
  transform.named_sequence @soft_par(%t: {A} {{transform.consumed}}) {{
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1, 1] : ({A}) -> ({A}, {A})
    transform.include @ew4 failures(propagate) (%t1) : ({A}) -> ()
    transform.yield
  }}
  transform.named_sequence @soft_red(%t: {A} {{transform.consumed}}) {{
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1, 1] : ({A}) -> ({A}, {A})
    transform.include @red4 failures(propagate) (%t1) : ({A}) -> ()
    transform.yield
  }}""")
# attention contractions (rank 5, reduction last): scores reduce over head_dim (static),
# pv over the positions (dynamic)
e(f"""  transform.named_sequence @m_red5_static(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_other failures(propagate) (%c0) : ({A}) -> ()
    transform.match.structured %c0 : {A} {{
    ^bb0(%c: {A}):
      %rank = transform.match.structured.rank %c : ({A}) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0, 1, 2, 3] {{parallel}} : {A}
      transform.match.structured.dim %c[-1] {{reduction}} : {A}
      %d = transform.match.structured.dim %c[-1] : ({A}) -> !transform.param<i64>
      %z = transform.param.constant 0 : i64 -> !transform.param<i64>
      transform.match.param.cmpi gt %d, %z : !transform.param<i64>
      transform.match.structured.yield
    }}
    transform.yield %c0 : {A}
  }}
  transform.named_sequence @m_red5(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.include @m_other failures(propagate) (%c0) : ({A}) -> ()
    transform.match.structured %c0 : {A} {{
    ^bb0(%c: {A}):
      %rank = transform.match.structured.rank %c : ({A}) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0, 1, 2, 3] {{parallel}} : {A}
      transform.match.structured.dim %c[-1] {{reduction}} : {A}
      transform.match.structured.yield
    }}
    transform.yield %c0 : {A}
  }}
  transform.named_sequence @m_att_static(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.match.operation_name %c0 ["linalg.generic"] : {A}
    transform.match.structured %c0 : {A} {{
    ^bb0(%c: {A}):
      %rank = transform.match.structured.rank %c : ({A}) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      %z = transform.param.constant 0 : i64 -> !transform.param<i64>
      %d2 = transform.match.structured.dim %c[2] : ({A}) -> !transform.param<i64>
      transform.match.param.cmpi gt %d2, %z : !transform.param<i64>
      %d3 = transform.match.structured.dim %c[3] : ({A}) -> !transform.param<i64>
      transform.match.param.cmpi gt %d3, %z : !transform.param<i64>
      transform.match.structured.yield
    }}
    transform.yield %c0 : {A}
  }}
  transform.named_sequence @m_att_keys(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.match.operation_name %c0 ["linalg.generic"] : {A}
    transform.match.structured %c0 : {A} {{
    ^bb0(%c: {A}):
      %rank = transform.match.structured.rank %c : ({A}) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      %z = transform.param.constant 0 : i64 -> !transform.param<i64>
      %d3 = transform.match.structured.dim %c[3] : ({A}) -> !transform.param<i64>
      transform.match.param.cmpi gt %d3, %z : !transform.param<i64>
      transform.match.structured.yield
    }}
    transform.yield %c0 : {A}
  }}
  transform.named_sequence @m_att_any(%c0: {A} {{transform.readonly}}) -> {A} {{
    transform.match.operation_name %c0 ["linalg.generic"] : {A}
    transform.yield %c0 : {A}
  }}
  // Partial tiles of scores: the last rows of a chunk one at a time with
  // full tiles of keys; the last keys one row and one key at a time.
  transform.named_sequence @att_rows(%t: {A} {{transform.consumed}}) {{
    %t2, %l = transform.structured.tile_using_for %t tile_sizes [0, 0, 1] : ({A}) -> {res(2)}
    transform.yield
  }}
  transform.named_sequence @att_rest(%t: {A} {{transform.consumed}}) {{
    %t2, %l:2 = transform.structured.tile_using_for %t tile_sizes [0, 0, 1, 1] : ({A}) -> {res(3)}
    transform.yield
  }}
  transform.named_sequence @pv_rest(%t: {A} {{transform.consumed}}) {{
    %t2, %l = transform.structured.tile_using_for %t tile_sizes [0, 0, 1] : ({A}) -> {res(2)}
    transform.yield
  }}
  transform.named_sequence @nothing(%t: {A} {{transform.readonly}}) {{
    transform.yield
  }}""")
if P["AT_VB"]:
    VB_NOTE = (f", in blocks of {P['AT_VB']} positions: the d tiles of a block\n"
               f"  // re-read its rows of v ({P['AT_VB']} x 512 B at HD = 128) from L1/L2, not from memory")
    VB_TILE = (f"    %t1b, %lb = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, 0, {P['AT_VB']}] "
               f": ({A}) -> ({A}, {A})\n")
else:
    VB_NOTE = ""
    VB_TILE = ""
PV_IN = "%t1b" if P["AT_VB"] else "%t1"
if kind == "prefill":
    e(f"""  // Attention scores s[h, g, r, t] = sum_d q[h, g, r, d] k[h, d, t] (keys
  // cached transposed), a small GEMM per head, the heads (h, g) shared out
  // over the threads: outer products over d into register tiles of
  // {P['AT_MR']} rows by {P['AT_NT']} keys (the keys in vector lanes), loops keys then
  // rows, so that a tile of keys (HD x {P['AT_NT']}) stays in L1 while all the rows of
  // the chunk pass it (rows of the cache are not a power of two apart:
  // kv_cache.positions).  Rows and keys are dynamic: partial tiles are peeled.
  transform.named_sequence @scores(%t: {A} {{transform.consumed}}) {{
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1, 1] : ({A}) -> ({A}, {A})
    %t2, %lt = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, {P['AT_NT']}] : ({A}) -> ({A}, {A})
    %t3, %lr = transform.structured.tile_using_for %t2 tile_sizes [0, 0, {P['AT_MR']}] : ({A}) -> ({A}, {A})
    %t4, %ld = transform.structured.tile_using_for %t3 tile_sizes [0, 0, 0, 0, 1] : ({A}) -> ({A}, {A})
    transform.annotate %ld "llm.kloop" : {A}
    transform.include @peel failures(suppress) (%lr) : ({A}) -> ()
    transform.include @peel failures(suppress) (%lt) : ({A}) -> ()
    transform.apply_patterns to %fa {{
      transform.apply_patterns.canonicalization
    }} : {A}
    %r = transform.foreach_match in %fa
        @m_att_static -> @nothing, @m_att_keys -> @att_rows, @m_att_any -> @att_rest : ({A}) -> {A}
    transform.yield
  }}
  // o[h, g, r, d] = sum_t p[h, g, r, t] v[h, t, d], the heads shared out over
  // the threads: positions in blocks of {P['AT_PB']}, and in a block outer products, a
  // {P['AT_PR']} x {P['AT_DT']} tile of o in registers, one position t at a time: a block of
  // v ({P['AT_PB']} x HD) stays in L1/L2 while every row tile of the chunk passes it.
  transform.named_sequence @pv(%t: {A} {{transform.consumed}}) {{
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1, 1] : ({A}) -> ({A}, {A})
    %t2, %lb = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, 0, {P['AT_PB']}] : ({A}) -> ({A}, {A})
    %t3, %l:3 = transform.structured.tile_using_for %t2 tile_sizes [0, 0, {P['AT_PR']}, {P['AT_DT']}, 1] : ({A}) -> {res(4)}
    transform.annotate %l#2 "llm.kloop" : {A}
    transform.include @peel failures(suppress) (%l#0) : ({A}) -> ()
    transform.apply_patterns to %fa {{
      transform.apply_patterns.canonicalization
    }} : {A}
    %r = transform.foreach_match in %fa
        @m_att_static -> @nothing, @m_att_any -> @pv_rest : ({A}) -> {A}
    transform.yield
  }}""")
else:
    e(f"""  // Attention scores s[h, g, 0, t] = sum_d q[h, g, 0, d] k[h, d, t] (keys
  // cached transposed), the KV heads (h) shared out over the threads: outer
  // products over d into register tiles of all query heads of a KV head
  // ({{g}}) by {P['AT_NT']} keys (in vector lanes), in blocks of {P['AT_DB']} of d: a tile reads
  // {P['AT_DB']} rows of the transposed keys at a time, streams the hardware prefetchers
  // follow (all 128 rows at once, 16 KiB apart, they do not: -10% at context
  // 2048).  A partial last tile of keys is peeled and done one key at a time.
  transform.named_sequence @scores(%t: {A} {{transform.consumed}}) {{
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1] : ({A}) -> ({A}, {A})
    %t1b, %ld = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, 0, {P['AT_DB']}] : ({A}) -> ({A}, {A})
    %t2, %l:3 = transform.structured.tile_using_for %t1b tile_sizes [0, 0, 1, {P['AT_NT']}, 1] : ({A}) -> {res(4)}
    transform.annotate %l#2 "llm.kloop" : {A}
    transform.include @peel failures(suppress) (%l#1) : ({A}) -> ()
    transform.apply_patterns to %fa {{
      transform.apply_patterns.canonicalization
    }} : {A}
    %r = transform.foreach_match in %fa
        @m_att_static -> @nothing, @m_att_any -> @att_rest : ({A}) -> {A}
    transform.yield
  }}
  // o[h, g, 0, d] = sum_t p[h, g, 0, t] v[h, t, d], the KV heads shared out
  // over the threads: outer products, all query heads of a KV head by {P['AT_DT']}
  // of d in registers, one position t at a time{VB_NOTE}.
  transform.named_sequence @pv(%t: {A} {{transform.consumed}}) {{
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1] : ({A}) -> ({A}, {A})
{VB_TILE}    %t2, %l:3 = transform.structured.tile_using_for {PV_IN} tile_sizes [0, 0, 1, {P['AT_DT']}, 1] : ({A}) -> {res(4)}
    transform.annotate %l#2 "llm.kloop" : {A}
    transform.yield
  }}""")

# ---- main ----
classes = ["gather", "fill", "eltwise", "rowsum", "rope", "attn", "softmax"]
e(f"""  transform.named_sequence @__transform_main(%root: {A} {{transform.consumed}}) {{""")
for c in classes:
    e(f"""    %{c}_ew = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "{c}"}} in %root : ({A}) -> {A}
    transform.annotate %{c}_ew "llm.ew" : {A}""")
if kind == "prefill":
    e(f"""    %mm = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "matmul"}} in %root : ({A}) -> {A}
    transform.foreach %mm : {A} {{
    ^bb0(%m: {A}):
      transform.include @gemm failures(propagate) (%m) : ({A}) -> ()
    }}""")
    gv = ["head"]
else:
    gv = ["matmul", "head"]
for c in gv:
    e(f"""    %{c} = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "{c}"}} in %root : ({A}) -> {A}
    transform.foreach %{c} : {A} {{
    ^bb0(%m: {A}):
      transform.include @gemv failures(propagate) (%m) : ({A}) -> ()
    }}""")
e(f"""    %qsum = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "qsum"}} in %root : ({A}) -> {A}
    transform.foreach %qsum : {A} {{
    ^bb0(%m: {A}):
      transform.include @qgemv failures(propagate) (%m) : ({A}) -> ()
    }}
    %dq = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "dequant"}} in %root : ({A}) -> {A}
    transform.foreach %dq : {A} {{
    ^bb0(%m: {A}):
      transform.include @dequant failures(propagate) (%m) : ({A}) -> ()
    }}""")
e(f"""    %gemv = transform.structured.match ops{{["linalg.generic"]}} attributes{{llm.sched = "gemv"}} in %root : ({A}) -> {A}
    transform.foreach %gemv : {A} {{
    ^bb0(%m: {A}):
      transform.include @gemv_s failures(propagate) (%m) : ({A}) -> ()
    }}""")
soft = "@m_soft_par -> @soft_par, @m_soft_red -> @soft_red,\n        " if kind == "prefill" else ""
e(f"""    %r = transform.foreach_match in %root
        {soft}@m_par1 -> @ew1, @m_par2 -> @ew2, @m_par3 -> @ew3, @m_par4 -> @ew4, @m_par5 -> @ew5,
        @m_red2 -> @red2, @m_red3 -> @red3, @m_red4 -> @red4,
        @m_red5_static -> @scores, @m_red5 -> @pv : ({A}) -> {A}""")
e(f"""    %fv = transform.structured.match ops{{["func.func"]}} in %r : ({A}) -> {A}
    transform.foreach %fv : {A} {{
    ^bb0(%f: {A}):
      transform.apply_patterns to %f {{
        transform.apply_patterns.canonicalization
      }} : {A}
      %f2 = transform.structured.vectorize_children_and_apply_patterns %f {{vectorize_nd_extract}} : ({A}) -> {A}
    }}
    // Keep the reduction accumulators in registers across the k loops.
    %loops = transform.structured.match ops{{["scf.for"]}} attributes{{llm.kloop}} in %r : ({A}) -> {A}
    transform.foreach %loops : {A} {{
    ^bb0(%lp: {A}):
      transform.loop.hoist_loop_invariant_subsets %lp : {A}
    }}
    %fv3 = transform.structured.match ops{{["func.func"]}} in %r : ({A}) -> {A}
    transform.foreach %fv3 : {A} {{
    ^bb0(%f: {A}):
      transform.apply_patterns to %f {{
        transform.apply_patterns.canonicalization
      }} : {A}
      transform.bufferization.eliminate_empty_tensors %f : {A}
    }}
    %b = transform.bufferization.one_shot_bufferize %r {{bufferize_function_boundaries = true, function_boundary_type_conversion = 1 : i32, memcpy_op = "linalg.copy"}} : ({A}) -> {A}
    %fb = transform.structured.match ops{{["func.func"]}} in %b : ({A}) -> {A}
    transform.foreach %fb : {A} {{
    ^bb0(%f: {A}):
      transform.apply_cse to %f : {A}
      transform.apply_patterns to %f {{
        transform.apply_patterns.canonicalization
      }} : {A}
    }}
    // memref.fold_memref_alias_ops hangs on whole functions in MLIR 22:
    // apply it inside the foralls only.
    %fa = transform.structured.match ops{{["scf.forall"]}} in %b : ({A}) -> {A}
    transform.foreach %fa : {A} {{
    ^bb0(%fx: {A}):
      transform.apply_patterns to %fx {{
        transform.apply_patterns.memref.fold_memref_alias_ops
      }} : {A}
    }}
    %fb2 = transform.structured.match ops{{["func.func"]}} in %b : ({A}) -> {A}
    transform.foreach %fb2 : {A} {{
    ^bb0(%f: {A}):
      transform.apply_cse to %f : {A}
      %f3 = transform.structured.hoist_redundant_vector_transfers %f : ({A}) -> {A}
      transform.apply_patterns to %f3 {{
        transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
        transform.apply_patterns.vector.lower_outerproduct
        transform.apply_patterns.vector.transfer_permutation_patterns
        transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
        transform.apply_patterns.vector.lower_shape_cast
        transform.apply_patterns.vector.lower_broadcast
        transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      }} : {A}
      transform.apply_patterns to %f3 {{
        transform.apply_patterns.canonicalization
      }} : {A}
    }}
    transform.yield
  }}
}}""")
print("\n".join(out))
