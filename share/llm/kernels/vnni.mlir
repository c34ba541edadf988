// The int8 dot products (see generic.mlir for what each computes), VNNI
// form on 256-bit vectors: vpdpbusd on each half, which AVX512-VNNI with
// AVX512-VL and AVX-VNNI both have (LLVM 22's intrinsic takes the bytes
// as <32 x i8>).  vpdpbusd multiplies unsigned by signed bytes: a signed
// w is made unsigned as w ^ 0x80 = w + 128, and the sum starts 128 * xs4
// lower.
llvm.func internal @vpdpbusd_halves(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %a0 = vector.shuffle %acc, %acc [0, 1, 2, 3, 4, 5, 6, 7] : vector<16xi32>, vector<16xi32>
  %a1 = vector.shuffle %acc, %acc [8, 9, 10, 11, 12, 13, 14, 15] : vector<16xi32>, vector<16xi32>
  %u0 = vector.shuffle %u, %u [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<64xi8>, vector<64xi8>
  %u1 = vector.shuffle %u, %u [32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xi8>, vector<64xi8>
  %x0 = vector.shuffle %x, %x [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<64xi8>, vector<64xi8>
  %x1 = vector.shuffle %x, %x [32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xi8>, vector<64xi8>
  %r0 = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%a0, %u0, %x0) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  %r1 = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%a1, %u1, %x1) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  %r = vector.shuffle %r0, %r1 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xi32>, vector<8xi32>
  llvm.return %r : vector<16xi32>
}
llvm.func internal @llm_qdot_i8(%acc: vector<16xi32>, %w: vector<64xi8>, %x: vector<64xi8>, %xs4: vector<16xi32>) -> vector<16xi32> {
  %m128 = arith.constant dense<-128> : vector<16xi32>
  %b = arith.muli %xs4, %m128 : vector<16xi32>
  %a = arith.addi %acc, %b : vector<16xi32>
  %x80 = arith.constant dense<-128> : vector<64xi8>
  %u = arith.xori %w, %x80 : vector<64xi8>
  %r = llvm.call @vpdpbusd_halves(%a, %u, %x) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
  llvm.return %r : vector<16xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %r = llvm.call @vpdpbusd_halves(%acc, %u, %x) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
  llvm.return %r : vector<16xi32>
}
