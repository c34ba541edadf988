// decode.mlir: the transform script of llm-lower for decode modules (share/doc/llm/ir.txt).
// Written by mkscript.py (python3 mkscript.py decode ISA=rvv > rvv/decode.mlir): the rvv form;
// edit that, not this.  Parameters: GV_NC=64 GV_NR=8 GV_KV=8 QV_NT=1 GM_NC=64 GM_NR=2 GM_MR=4 GM_KV=8 GM_KC=512 EW=32 RKV=8 AT_MR=6 AT_NT=16 AT_DT=16 AT_DB=8 AT_VB=64 AT_PB=64 AT_PR=4.
// Every linalg op is tiled by its llm.sched class to tiles of static shape,
// which vectorise; the partial tiles of dynamic or ragged dimensions are
// peeled off and left to scalar loops, so the result is correct for any
// shape and fast for the usual ones.
module attributes {transform.with_named_sequence} {
  // Splits off the last, partial iteration of a loop; a silenceable
  // failure (suppressed by the callers) when the step divides the trip count.
  transform.named_sequence @peel(%l: !transform.any_op {transform.readonly}) {
    %lf = transform.cast %l : !transform.any_op to !transform.op<"scf.for">
    %main, %rest = transform.loop.peel %lf : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
  // Reduction over the last dim of a rank-3 tile in 8 lanes: a vector
  // accumulator lives in registers over the whole loop and is reduced once
  // at the end.  Ragged last columns, if any, are peeled and done one at a
  // time (short bf16 vectors would need a truncation routine at run time).
  transform.named_sequence @ksplit_gemv(%t: !transform.any_op {transform.consumed}) {
    %i, %s, %c, %lk = transform.structured.tile_reduction_using_for %t by tile_sizes = [0, 0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %lk "llm.kloop" : !transform.any_op
    %rest = transform.sequence %lk : (!transform.any_op) -> !transform.any_op failures(suppress) {
    ^bb0(%l: !transform.any_op):
      %lf = transform.cast %l : !transform.any_op to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      transform.yield %r : !transform.any_op
    }
    transform.foreach %rest : !transform.any_op {
    ^bb0(%r: !transform.any_op):
      %rk = transform.structured.match ops{["linalg.generic"]} in %r : (!transform.any_op) -> !transform.any_op
      %rk2, %rkl = transform.structured.tile_using_for %rk tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
  // Reduction over the last dim of a rank-5 tile in 8 lanes: a vector
  // accumulator lives in registers over the whole loop and is reduced once
  // at the end.  Ragged last columns, if any, are peeled and done one at a
  // time (short bf16 vectors would need a truncation routine at run time).
  transform.named_sequence @ksplit_gemv5(%t: !transform.any_op {transform.consumed}) {
    %i, %s, %c, %lk = transform.structured.tile_reduction_using_for %t by tile_sizes = [0, 0, 0, 0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %lk "llm.kloop" : !transform.any_op
    %rest = transform.sequence %lk : (!transform.any_op) -> !transform.any_op failures(suppress) {
    ^bb0(%l: !transform.any_op):
      %lf = transform.cast %l : !transform.any_op to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      transform.yield %r : !transform.any_op
    }
    transform.foreach %rest : !transform.any_op {
    ^bb0(%r: !transform.any_op):
      %rk = transform.structured.match ops{["linalg.generic"]} in %r : (!transform.any_op) -> !transform.any_op
      %rk2, %rkl = transform.structured.tile_using_for %rk tile_sizes [0, 0, 0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
  // Reduction over the last dim of a rank-2 tile in 8 lanes: a vector
  // accumulator lives in registers over the whole loop and is reduced once
  // at the end.  Ragged last columns, if any, are peeled and done one at a
  // time (short bf16 vectors would need a truncation routine at run time).
  transform.named_sequence @ksplit_red2(%t: !transform.any_op {transform.consumed}) {
    %i, %s, %c, %lk = transform.structured.tile_reduction_using_for %t by tile_sizes = [0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %lk "llm.kloop" : !transform.any_op
    %rest = transform.sequence %lk : (!transform.any_op) -> !transform.any_op failures(suppress) {
    ^bb0(%l: !transform.any_op):
      %lf = transform.cast %l : !transform.any_op to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      transform.yield %r : !transform.any_op
    }
    transform.foreach %rest : !transform.any_op {
    ^bb0(%r: !transform.any_op):
      %rk = transform.structured.match ops{["linalg.generic"]} in %r : (!transform.any_op) -> !transform.any_op
      %rk2, %rkl = transform.structured.tile_using_for %rk tile_sizes [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
  // Reduction over the last dim of a rank-3 tile in 8 lanes: a vector
  // accumulator lives in registers over the whole loop and is reduced once
  // at the end.  Ragged last columns, if any, are peeled and done one at a
  // time (short bf16 vectors would need a truncation routine at run time).
  transform.named_sequence @ksplit_red3(%t: !transform.any_op {transform.consumed}) {
    %i, %s, %c, %lk = transform.structured.tile_reduction_using_for %t by tile_sizes = [0, 0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %lk "llm.kloop" : !transform.any_op
    %rest = transform.sequence %lk : (!transform.any_op) -> !transform.any_op failures(suppress) {
    ^bb0(%l: !transform.any_op):
      %lf = transform.cast %l : !transform.any_op to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      transform.yield %r : !transform.any_op
    }
    transform.foreach %rest : !transform.any_op {
    ^bb0(%r: !transform.any_op):
      %rk = transform.structured.match ops{["linalg.generic"]} in %r : (!transform.any_op) -> !transform.any_op
      %rk2, %rkl = transform.structured.tile_using_for %rk tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
  // Reduction over the last dim of a rank-4 tile in 8 lanes: a vector
  // accumulator lives in registers over the whole loop and is reduced once
  // at the end.  Ragged last columns, if any, are peeled and done one at a
  // time (short bf16 vectors would need a truncation routine at run time).
  transform.named_sequence @ksplit_red4(%t: !transform.any_op {transform.consumed}) {
    %i, %s, %c, %lk = transform.structured.tile_reduction_using_for %t by tile_sizes = [0, 0, 0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %lk "llm.kloop" : !transform.any_op
    %rest = transform.sequence %lk : (!transform.any_op) -> !transform.any_op failures(suppress) {
    ^bb0(%l: !transform.any_op):
      %lf = transform.cast %l : !transform.any_op to !transform.op<"scf.for">
      %m, %r = transform.loop.peel %lf : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      transform.yield %r : !transform.any_op
    }
    transform.foreach %rest : !transform.any_op {
    ^bb0(%r: !transform.any_op):
      %rk = transform.structured.match ops{["linalg.generic"]} in %r : (!transform.any_op) -> !transform.any_op
      %rk2, %rkl = transform.structured.tile_using_for %rk tile_sizes [0, 0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    }
    transform.yield
  }
  // y[1, n] = sum_k x[1, k] * W[n, k] (W in its [N, K] layout): chunks of
  // 64 rows of W per scf.forall iteration (OpenMP threads), 8 rows per register
  // tile, k in 8 lanes; the output initialiser is fused into the chunk.
  transform.named_sequence @gemv(%mm: !transform.any_op {transform.consumed}) {
    %fill = transform.get_producer_of_operand %mm[2] : (!transform.any_op) -> !transform.any_op
    %t1, %forall = transform.structured.tile_using_forall %mm tile_sizes [0, 64] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f1, %forall2 = transform.structured.fuse_into_containing_op %fill into %forall : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t2, %ln = transform.structured.tile_using_for %t1 tile_sizes [0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%ln) : (!transform.any_op) -> ()
    %tiles = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "matmul"} in %forall2 : (!transform.any_op) -> !transform.any_op
    %tiles2 = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "head"} in %forall2 : (!transform.any_op) -> !transform.any_op
    %all = transform.merge_handles %tiles, %tiles2 : !transform.any_op
    transform.foreach %all : !transform.any_op {
    ^bb0(%x: !transform.any_op):
      transform.include @ksplit_gemv failures(propagate) (%x) : (!transform.any_op) -> ()
    }
    transform.yield
  }
  // The single-row products in streams (class gemv, share/doc/llm/ir.txt):
  // y[0, c, j, h] = sum_k x[0, k] * W[c, j, h, k], iterated (r, c, h, j, k).  One
  // chunk c (64 rows of W) per scf.forall iteration, then for each row h of
  // the streams a register tile of 8 streams j (rows 8 apart) with k in
  // 8 lanes: the 8 rows a tile reads run on into the next h, so the
  // hardware prefetchers see long streams.
  transform.named_sequence @gemv_s(%mm: !transform.any_op {transform.consumed}) {
    %fill = transform.get_producer_of_operand %mm[2] : (!transform.any_op) -> !transform.any_op
    %t1, %forall = transform.structured.tile_using_forall %mm tile_sizes [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %f1, %forall2 = transform.structured.fuse_into_containing_op %fill into %forall : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t2, %lh, %lj = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 1, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %tiles = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "gemv"} in %forall2 : (!transform.any_op) -> !transform.any_op
    transform.foreach %tiles : !transform.any_op {
    ^bb0(%x: !transform.any_op):
      transform.include @ksplit_gemv5 failures(propagate) (%x) : (!transform.any_op) -> ()
    }
    transform.yield
  }
  transform.named_sequence @m_is_qmv(%c: !transform.any_op {transform.readonly}) {
    transform.match.operation_name %c ["linalg.generic"] : !transform.any_op
    %m = transform.structured.match attributes{llm.sched = "qmv"} in %c : (!transform.any_op) -> !transform.any_op
    %one = transform.param.constant 1 : i64 -> !transform.param<i64>
    %nm = transform.num_associations %m : (!transform.any_op) -> !transform.param<i64>
    transform.match.param.cmpi eq %nm, %one : !transform.param<i64>
    transform.yield
  }
  // The qmv op of a quantized single-row product with 3 inputs (x or its
  // two halves, codes, scales, offsets if any), fused into a forall: operand
  // 3 is a slice of its zero fill.
  transform.named_sequence @m_qmv3(%c: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_is_qmv failures(propagate) (%c) : (!transform.any_op) -> ()
    transform.match.structured %c : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %n = transform.match.structured.num_inputs %s : (!transform.any_op) -> !transform.param<i64>
      %want = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %n, %want : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %c : !transform.any_op
  }
  transform.named_sequence @qmv_tile3(%mm: !transform.any_op {transform.consumed}) {
    %zs = transform.get_producer_of_operand %mm[3] : (!transform.any_op) -> !transform.any_op
    %z = transform.get_producer_of_operand %zs[0] : (!transform.any_op) -> !transform.any_op
    %fa = transform.get_parent_op %mm {op_name = "scf.forall"} : (!transform.any_op) -> !transform.any_op
    %z1, %fa2 = transform.structured.fuse_into_containing_op %z into %fa : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t, %lg = transform.structured.tile_using_for %mm tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %lg "llm.kloop" : !transform.any_op
    // Unit dims folded in the whole forall body, so that the zero fill of
    // the accumulator and its read in the group loop have one shape and
    // fold to a constant (no buffer a tile).
    transform.apply_patterns to %fa2 {
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
  // The qmv op of a quantized single-row product with 4 inputs (x or its
  // two halves, codes, scales, offsets if any), fused into a forall: operand
  // 4 is a slice of its zero fill.
  transform.named_sequence @m_qmv4(%c: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_is_qmv failures(propagate) (%c) : (!transform.any_op) -> ()
    transform.match.structured %c : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %n = transform.match.structured.num_inputs %s : (!transform.any_op) -> !transform.param<i64>
      %want = transform.param.constant 4 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %n, %want : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %c : !transform.any_op
  }
  transform.named_sequence @qmv_tile4(%mm: !transform.any_op {transform.consumed}) {
    %zs = transform.get_producer_of_operand %mm[4] : (!transform.any_op) -> !transform.any_op
    %z = transform.get_producer_of_operand %zs[0] : (!transform.any_op) -> !transform.any_op
    %fa = transform.get_parent_op %mm {op_name = "scf.forall"} : (!transform.any_op) -> !transform.any_op
    %z1, %fa2 = transform.structured.fuse_into_containing_op %z into %fa : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t, %lg = transform.structured.tile_using_for %mm tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %lg "llm.kloop" : !transform.any_op
    // Unit dims folded in the whole forall body, so that the zero fill of
    // the accumulator and its read in the group loop have one shape and
    // fold to a constant (no buffer a tile).
    transform.apply_patterns to %fa2 {
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
  // The qmv op of a quantized single-row product with 5 inputs (x or its
  // two halves, codes, scales, offsets if any), fused into a forall: operand
  // 5 is a slice of its zero fill.
  transform.named_sequence @m_qmv5(%c: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_is_qmv failures(propagate) (%c) : (!transform.any_op) -> ()
    transform.match.structured %c : !transform.any_op {
    ^bb0(%s: !transform.any_op):
      %n = transform.match.structured.num_inputs %s : (!transform.any_op) -> !transform.param<i64>
      %want = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %n, %want : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %c : !transform.any_op
  }
  transform.named_sequence @qmv_tile5(%mm: !transform.any_op {transform.consumed}) {
    %zs = transform.get_producer_of_operand %mm[5] : (!transform.any_op) -> !transform.any_op
    %z = transform.get_producer_of_operand %zs[0] : (!transform.any_op) -> !transform.any_op
    %fa = transform.get_parent_op %mm {op_name = "scf.forall"} : (!transform.any_op) -> !transform.any_op
    %z1, %fa2 = transform.structured.fuse_into_containing_op %z into %fa : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t, %lg = transform.structured.tile_using_for %mm tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.annotate %lg "llm.kloop" : !transform.any_op
    // Unit dims folded in the whole forall body, so that the zero fill of
    // the accumulator and its read in the group loop have one shape and
    // fold to a constant (no buffer a tile).
    transform.apply_patterns to %fa2 {
      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
  // The single-row products of a quantized W (classes qfill, qmv, qsum;
  // share/doc/llm/ir.txt): acc[0, t, h, l] = sum_g x[0, g, l] * w[t, g, h, l]
  // in G lanes, then y[0, t, h] = sum_l acc[0, t, h, l].  1 tile(s) of 8 rows
  // of W per scf.forall iteration (OpenMP threads), the lane sum's
  // initialiser, the qmv op and its zero fill fused into it; the groups g
  // become a loop carrying the [8, G] accumulator (a tile's group of codes
  // is 8 x G contiguous bytes, so the tiles are one stream), with the unit
  // dims folded away so that the body vectorises to elementwise FMAs and
  // no contraction is formed.
  transform.named_sequence @qgemv(%ys: !transform.any_op {transform.consumed}) {
    %acc = transform.get_producer_of_operand %ys[0] : (!transform.any_op) -> !transform.any_op
    %init = transform.get_producer_of_operand %ys[1] : (!transform.any_op) -> !transform.any_op
    %t1, %forall = transform.structured.tile_using_forall %ys tile_sizes [0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %i1, %f2 = transform.structured.fuse_into_containing_op %init into %forall : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %a1, %f3 = transform.structured.fuse_into_containing_op %acc into %f2 : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %r = transform.foreach_match in %f3 @m_qmv3 -> @qmv_tile3, @m_qmv4 -> @qmv_tile4, @m_qmv5 -> @qmv_tile5 : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
  // A quantized W decoded to f32 for the products of many rows (class
  // dequant): one tile of 8 rows per scf.forall iteration, a group of G
  // values at a time.
  transform.named_sequence @dequant(%d: !transform.any_op {transform.consumed}) {
    %t1, %forall = transform.structured.tile_using_forall %d tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t2, %l:2 = transform.structured.tile_using_for %t1 tile_sizes [0, 1, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
  // Matcher prologue: a linalg.generic of the classes scheduled by rank
  // (marked llm.ew at the start; tiles of matmul and head ops are not).
  transform.named_sequence @m_other(%c0: !transform.any_op {transform.readonly}) {
    transform.match.operation_name %c0 ["linalg.generic"] : !transform.any_op
    %one = transform.param.constant 1 : i64 -> !transform.param<i64>
    %m = transform.structured.match attributes{llm.ew} in %c0 : (!transform.any_op) -> !transform.any_op
    %n = transform.num_associations %m : (!transform.any_op) -> !transform.param<i64>
    transform.match.param.cmpi eq %n, %one : !transform.param<i64>
    transform.yield
  }
  // Elementwise rank 1: one row at a time, the last dim in 32-wide pieces.
  transform.named_sequence @ew1(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:1 = transform.structured.tile_using_for %t tile_sizes [32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%l#0) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_par1(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 1 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Elementwise rank 2: one row at a time, the last dim in 32-wide pieces.
  transform.named_sequence @ew2(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:2 = transform.structured.tile_using_for %t tile_sizes [1, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%l#1) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_par2(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 2 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Elementwise rank 3: one row at a time, the last dim in 32-wide pieces.
  transform.named_sequence @ew3(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:3 = transform.structured.tile_using_for %t tile_sizes [1, 1, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%l#2) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_par3(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Elementwise rank 4: one row at a time, the last dim in 32-wide pieces.
  transform.named_sequence @ew4(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:4 = transform.structured.tile_using_for %t tile_sizes [1, 1, 1, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%l#3) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_par4(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 4 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Elementwise rank 5: one row at a time, the last dim in 32-wide pieces.
  transform.named_sequence @ew5(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:5 = transform.structured.tile_using_for %t tile_sizes [1, 1, 1, 1, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.include @peel failures(suppress) (%l#4) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_par5(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[all] {parallel} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Reduction over the last dim, rank 2: one output element at a time.
  transform.named_sequence @red2(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:1 = transform.structured.tile_using_for %t tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.include @ksplit_red2 failures(propagate) (%t2) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_red2(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 2 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0] {parallel} : !transform.any_op
      transform.match.structured.dim %c[-1] {reduction} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Reduction over the last dim, rank 3: one output element at a time.
  transform.named_sequence @red3(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:2 = transform.structured.tile_using_for %t tile_sizes [1, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.include @ksplit_red3 failures(propagate) (%t2) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_red3(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 3 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0, 1] {parallel} : !transform.any_op
      transform.match.structured.dim %c[-1] {reduction} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  // Reduction over the last dim, rank 4: one output element at a time.
  transform.named_sequence @red4(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:3 = transform.structured.tile_using_for %t tile_sizes [1, 1, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.include @ksplit_red4 failures(propagate) (%t2) : (!transform.any_op) -> ()
    transform.yield
  }
  transform.named_sequence @m_red4(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 4 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0, 1, 2] {parallel} : !transform.any_op
      transform.match.structured.dim %c[-1] {reduction} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  transform.named_sequence @m_red5_static(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0, 1, 2, 3] {parallel} : !transform.any_op
      transform.match.structured.dim %c[-1] {reduction} : !transform.any_op
      %d = transform.match.structured.dim %c[-1] : (!transform.any_op) -> !transform.param<i64>
      %z = transform.param.constant 0 : i64 -> !transform.param<i64>
      transform.match.param.cmpi gt %d, %z : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  transform.named_sequence @m_red5(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.include @m_other failures(propagate) (%c0) : (!transform.any_op) -> ()
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      transform.match.structured.dim %c[0, 1, 2, 3] {parallel} : !transform.any_op
      transform.match.structured.dim %c[-1] {reduction} : !transform.any_op
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  transform.named_sequence @m_att_static(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %c0 ["linalg.generic"] : !transform.any_op
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      %z = transform.param.constant 0 : i64 -> !transform.param<i64>
      %d2 = transform.match.structured.dim %c[2] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi gt %d2, %z : !transform.param<i64>
      %d3 = transform.match.structured.dim %c[3] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi gt %d3, %z : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  transform.named_sequence @m_att_keys(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %c0 ["linalg.generic"] : !transform.any_op
    transform.match.structured %c0 : !transform.any_op {
    ^bb0(%c: !transform.any_op):
      %rank = transform.match.structured.rank %c : (!transform.any_op) -> !transform.param<i64>
      %n = transform.param.constant 5 : i64 -> !transform.param<i64>
      transform.match.param.cmpi eq %rank, %n : !transform.param<i64>
      %z = transform.param.constant 0 : i64 -> !transform.param<i64>
      %d3 = transform.match.structured.dim %c[3] : (!transform.any_op) -> !transform.param<i64>
      transform.match.param.cmpi gt %d3, %z : !transform.param<i64>
      transform.match.structured.yield
    }
    transform.yield %c0 : !transform.any_op
  }
  transform.named_sequence @m_att_any(%c0: !transform.any_op {transform.readonly}) -> !transform.any_op {
    transform.match.operation_name %c0 ["linalg.generic"] : !transform.any_op
    transform.yield %c0 : !transform.any_op
  }
  // Partial tiles of scores: the last rows of a chunk one at a time with
  // full tiles of keys; the last keys one row and one key at a time.
  transform.named_sequence @att_rows(%t: !transform.any_op {transform.consumed}) {
    %t2, %l = transform.structured.tile_using_for %t tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
  transform.named_sequence @att_rest(%t: !transform.any_op {transform.consumed}) {
    %t2, %l:2 = transform.structured.tile_using_for %t tile_sizes [0, 0, 1, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.yield
  }
  transform.named_sequence @pv_rest(%t: !transform.any_op {transform.consumed}) {
    %t2, %l = transform.structured.tile_using_for %t tile_sizes [0, 0, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.yield
  }
  transform.named_sequence @nothing(%t: !transform.any_op {transform.readonly}) {
    transform.yield
  }
  // Attention scores s[h, g, 0, t] = sum_d q[h, g, 0, d] k[h, d, t] (keys
  // cached transposed), the KV heads (h) shared out over the threads: outer
  // products over d into register tiles of all query heads of a KV head
  // ({g}) by 16 keys (in vector lanes), in blocks of 8 of d: a tile reads
  // 8 rows of the transposed keys at a time, streams the hardware prefetchers
  // follow (all 128 rows at once, 16 KiB apart, they do not: -10% at context
  // 2048).  A partial last tile of keys is peeled and done one key at a time.
  transform.named_sequence @scores(%t: !transform.any_op {transform.consumed}) {
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t1b, %ld = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, 0, 8] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t2, %l:3 = transform.structured.tile_using_for %t1b tile_sizes [0, 0, 1, 16, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %l#2 "llm.kloop" : !transform.any_op
    transform.include @peel failures(suppress) (%l#1) : (!transform.any_op) -> ()
    transform.apply_patterns to %fa {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %r = transform.foreach_match in %fa
        @m_att_static -> @nothing, @m_att_any -> @att_rest : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
  // o[h, g, 0, d] = sum_t p[h, g, 0, t] v[h, t, d], the KV heads shared out
  // over the threads: outer products, all query heads of a KV head by 16
  // of d in registers, one position t at a time, in blocks of 64 positions: the d tiles of a block
  // re-read its rows of v (64 x 512 B at HD = 128) from L1/L2, not from memory.
  transform.named_sequence @pv(%t: !transform.any_op {transform.consumed}) {
    %t1, %fa = transform.structured.tile_using_forall %t tile_sizes [1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t1b, %lb = transform.structured.tile_using_for %t1 tile_sizes [0, 0, 0, 0, 64] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %t2, %l:3 = transform.structured.tile_using_for %t1b tile_sizes [0, 0, 1, 16, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.annotate %l#2 "llm.kloop" : !transform.any_op
    transform.yield
  }
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.consumed}) {
    %gather_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "gather"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %gather_ew "llm.ew" : !transform.any_op
    %fill_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "fill"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %fill_ew "llm.ew" : !transform.any_op
    %eltwise_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "eltwise"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %eltwise_ew "llm.ew" : !transform.any_op
    %rowsum_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "rowsum"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %rowsum_ew "llm.ew" : !transform.any_op
    %rope_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "rope"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %rope_ew "llm.ew" : !transform.any_op
    %attn_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "attn"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %attn_ew "llm.ew" : !transform.any_op
    %softmax_ew = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "softmax"} in %root : (!transform.any_op) -> !transform.any_op
    transform.annotate %softmax_ew "llm.ew" : !transform.any_op
    %matmul = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "matmul"} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %matmul : !transform.any_op {
    ^bb0(%m: !transform.any_op):
      transform.include @gemv failures(propagate) (%m) : (!transform.any_op) -> ()
    }
    %head = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "head"} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %head : !transform.any_op {
    ^bb0(%m: !transform.any_op):
      transform.include @gemv failures(propagate) (%m) : (!transform.any_op) -> ()
    }
    %qsum = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "qsum"} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %qsum : !transform.any_op {
    ^bb0(%m: !transform.any_op):
      transform.include @qgemv failures(propagate) (%m) : (!transform.any_op) -> ()
    }
    %dq = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "dequant"} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %dq : !transform.any_op {
    ^bb0(%m: !transform.any_op):
      transform.include @dequant failures(propagate) (%m) : (!transform.any_op) -> ()
    }
    %gemv = transform.structured.match ops{["linalg.generic"]} attributes{llm.sched = "gemv"} in %root : (!transform.any_op) -> !transform.any_op
    transform.foreach %gemv : !transform.any_op {
    ^bb0(%m: !transform.any_op):
      transform.include @gemv_s failures(propagate) (%m) : (!transform.any_op) -> ()
    }
    %r = transform.foreach_match in %root
        @m_par1 -> @ew1, @m_par2 -> @ew2, @m_par3 -> @ew3, @m_par4 -> @ew4, @m_par5 -> @ew5,
        @m_red2 -> @red2, @m_red3 -> @red3, @m_red4 -> @red4,
        @m_red5_static -> @scores, @m_red5 -> @pv : (!transform.any_op) -> !transform.any_op
    %fv = transform.structured.match ops{["func.func"]} in %r : (!transform.any_op) -> !transform.any_op
    transform.foreach %fv : !transform.any_op {
    ^bb0(%f: !transform.any_op):
      transform.apply_patterns to %f {
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      %f2 = transform.structured.vectorize_children_and_apply_patterns %f {vectorize_nd_extract} : (!transform.any_op) -> !transform.any_op
    }
    // Keep the reduction accumulators in registers across the k loops.
    %loops = transform.structured.match ops{["scf.for"]} attributes{llm.kloop} in %r : (!transform.any_op) -> !transform.any_op
    transform.foreach %loops : !transform.any_op {
    ^bb0(%lp: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %lp : !transform.any_op
    }
    %fv3 = transform.structured.match ops{["func.func"]} in %r : (!transform.any_op) -> !transform.any_op
    transform.foreach %fv3 : !transform.any_op {
    ^bb0(%f: !transform.any_op):
      transform.apply_patterns to %f {
        transform.apply_patterns.canonicalization
      } : !transform.any_op
      transform.bufferization.eliminate_empty_tensors %f : !transform.any_op
    }
    %b = transform.bufferization.one_shot_bufferize %r {bufferize_function_boundaries = true, function_boundary_type_conversion = 1 : i32, memcpy_op = "linalg.copy"} : (!transform.any_op) -> !transform.any_op
    %fb = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.foreach %fb : !transform.any_op {
    ^bb0(%f: !transform.any_op):
      transform.apply_cse to %f : !transform.any_op
      transform.apply_patterns to %f {
        transform.apply_patterns.canonicalization
      } : !transform.any_op
    }
    // memref.fold_memref_alias_ops hangs on whole functions in MLIR 22:
    // apply it inside the foralls only.
    %fa = transform.structured.match ops{["scf.forall"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.foreach %fa : !transform.any_op {
    ^bb0(%fx: !transform.any_op):
      transform.apply_patterns to %fx {
        transform.apply_patterns.memref.fold_memref_alias_ops
      } : !transform.any_op
    }
    %fb2 = transform.structured.match ops{["func.func"]} in %b : (!transform.any_op) -> !transform.any_op
    transform.foreach %fb2 : !transform.any_op {
    ^bb0(%f: !transform.any_op):
      transform.apply_cse to %f : !transform.any_op
      %f3 = transform.structured.hoist_redundant_vector_transfers %f : (!transform.any_op) -> !transform.any_op
      transform.apply_patterns to %f3 {
        transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
        transform.apply_patterns.vector.lower_outerproduct
        transform.apply_patterns.vector.transfer_permutation_patterns
        transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
        transform.apply_patterns.vector.lower_shape_cast
        transform.apply_patterns.vector.lower_broadcast
        transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerreduction"
      } : !transform.any_op
      transform.apply_patterns to %f3 {
        transform.apply_patterns.canonicalization
      } : !transform.any_op
    }
    transform.yield
  }
}
