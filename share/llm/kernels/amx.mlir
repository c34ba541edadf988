// The tile kernels of prefill's products (share/doc/llm/ir.txt
// "Kernels"), AMX form (target.c: llm_target_tile_kernels, AMX-TILE with
// AMX-INT8 and AMX-BF16).  @llm_qtile_i8 is one tdpbssd on tiles of 8
// rows, @llm_qtile_bf16 one tdpbf16ps on tiles of 16.  The
// operands arrive as vectors; inlined into the phase, where they are
// loads of contiguous memory (the weights' 256 bytes of a tile and group,
// a 512-byte block of x in quads), LLVM's AMX type lowering turns each
// load and cast into one tileloadd, and the cast of the result and its
// store into one tilestored (tests/llm-lower.bats counts them).  LLVM
// writes the tile configuration (ldtilecfg) in the function that holds
// them; the runtime asks Linux for the tile state (target.c).
//
// @llm_qtile_i8(w, x) -> c: w 8 rows of 32 signed codes, row-major (A,
// 8 rows x 32 bytes); x 16 rows of x's 32 signed codes in quads,
// x[64q + 4n + i] = code 4q + i of row n (B, 8 rows x 64 bytes); c[16m +
// n] = sum over k < 32 of w[32m + k] * code k of row n (C, 8 rows x 16
// i32), exact.
llvm.func internal @llm_qtile_i8(%w: vector<256xi8>, %x: vector<512xi8>) -> vector<128xi32> {
  %rows = llvm.mlir.constant(8 : i16) : i16
  %ka = llvm.mlir.constant(32 : i16) : i16
  %nc = llvm.mlir.constant(64 : i16) : i16
  %a = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v256i8"(%w) : (vector<256xi8>) -> !llvm.x86_amx
  %b = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v512i8"(%x) : (vector<512xi8>) -> !llvm.x86_amx
  %z = llvm.call_intrinsic "llvm.x86.tilezero.internal"(%rows, %nc) : (i16, i16) -> !llvm.x86_amx
  %c = llvm.call_intrinsic "llvm.x86.tdpbssd.internal"(%rows, %nc, %ka, %z, %a, %b)
       : (i16, i16, i16, !llvm.x86_amx, !llvm.x86_amx, !llvm.x86_amx) -> !llvm.x86_amx
  %r = llvm.call_intrinsic "llvm.x86.cast.tile.to.vector.v128i32"(%c) : (!llvm.x86_amx) -> vector<128xi32>
  llvm.return %r : vector<128xi32>
}

// @llm_qtile_bf16(a0, a1, w, x0, x1) -> (c0, c1): two blocks of 16 rows
// of x on one tile of W.  w is 16 rows of 32 bf16 values, row-major (A,
// 16 rows x 64 bytes); x0 and x1 are 16 rows of x's 32 values each, in
// pairs, x[32q + 2n + i] = value 2q + i of row n (B, 16 rows x 64 bytes);
// c[16m + n] = a[16m + n] plus w[32m + 2q] * value 2q of row n, then plus
// w[32m + 2q + 1] * value 2q + 1, for q = 0 .. 15, each sum rounded to
// f32 (the SDM's order; tdpbf16ps reads denormals as zero and flushes
// them).  In the phase the accumulators are loop-carried vectors whose
// only users are this kernel's casts (the loop's last step is its own
// call, after the loop), and W's and x's vectors are loads used once:
// LLVM's AMX type lowering then keeps the accumulators in tile registers
// across the loop and loads the operands with tileloadd, 3 loads for 2
// tdpbf16ps.
llvm.func internal @llm_qtile_bf16(%a0: vector<256xf32>, %a1: vector<256xf32>, %w: vector<512xbf16>,
                                   %x0: vector<512xbf16>, %x1: vector<512xbf16>)
    -> !llvm.struct<(vector<256xf32>, vector<256xf32>)> {
  %rows = llvm.mlir.constant(16 : i16) : i16
  %colsb = llvm.mlir.constant(64 : i16) : i16
  %ta = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v512bf16"(%w) : (vector<512xbf16>) -> !llvm.x86_amx
  %c0 = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v256f32"(%a0) : (vector<256xf32>) -> !llvm.x86_amx
  %b0 = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v512bf16"(%x0) : (vector<512xbf16>) -> !llvm.x86_amx
  %d0 = llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"(%rows, %colsb, %colsb, %c0, %ta, %b0)
       : (i16, i16, i16, !llvm.x86_amx, !llvm.x86_amx, !llvm.x86_amx) -> !llvm.x86_amx
  %r0 = llvm.call_intrinsic "llvm.x86.cast.tile.to.vector.v256f32"(%d0) : (!llvm.x86_amx) -> vector<256xf32>
  %c1 = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v256f32"(%a1) : (vector<256xf32>) -> !llvm.x86_amx
  %b1 = llvm.call_intrinsic "llvm.x86.cast.vector.to.tile.v512bf16"(%x1) : (vector<512xbf16>) -> !llvm.x86_amx
  %d1 = llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"(%rows, %colsb, %colsb, %c1, %ta, %b1)
       : (i16, i16, i16, !llvm.x86_amx, !llvm.x86_amx, !llvm.x86_amx) -> !llvm.x86_amx
  %r1 = llvm.call_intrinsic "llvm.x86.cast.tile.to.vector.v256f32"(%d1) : (!llvm.x86_amx) -> vector<256xf32>
  %u = llvm.mlir.poison : !llvm.struct<(vector<256xf32>, vector<256xf32>)>
  %s0 = llvm.insertvalue %r0, %u[0] : !llvm.struct<(vector<256xf32>, vector<256xf32>)>
  %s1 = llvm.insertvalue %r1, %s0[1] : !llvm.struct<(vector<256xf32>, vector<256xf32>)>
  llvm.return %s1 : !llvm.struct<(vector<256xf32>, vector<256xf32>)>
}
