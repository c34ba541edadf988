// The int8 tile kernel of prefill's quantized products (share/doc/llm/
// ir.txt "Kernels"), AMX form: one tdpbssd on tiles of 8 rows
// (target.c: llm_target_tile_kernels, AMX-TILE with AMX-INT8).  The
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
