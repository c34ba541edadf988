// The int8 dot products (see generic.mlir for what each computes), VNNI
// form on 512-bit vectors: one vpdpbusd zmm, for AVX512-VNNI with
// AVX512-BW (LLVM 22's intrinsic takes the bytes as <64 x i8>).
// vpdpbusd multiplies unsigned by signed bytes: a signed w is made
// unsigned as w ^ 0x80 = w + 128, and the sum starts 128 * xs4 lower.
llvm.func internal @llm_qdot_i8(%acc: vector<16xi32>, %w: vector<64xi8>, %x: vector<64xi8>, %xs4: vector<16xi32>) -> vector<16xi32> {
  %m128 = arith.constant dense<-128> : vector<16xi32>
  %b = arith.muli %xs4, %m128 : vector<16xi32>
  %a = arith.addi %acc, %b : vector<16xi32>
  %x80 = arith.constant dense<-128> : vector<64xi8>
  %u = arith.xori %w, %x80 : vector<64xi8>
  %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%a, %u, %x) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
  llvm.return %r : vector<16xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%acc, %u, %x) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
  llvm.return %r : vector<16xi32>
}
