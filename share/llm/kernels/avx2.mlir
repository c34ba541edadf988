// The int8 dot products (see generic.mlir for what each computes), AVX2
// form, as llama.cpp's, on each 256-bit half: vpmaddubsw multiplies
// unsigned by signed bytes into saturating 16-bit pairs, vpmaddwd adds
// the pairs into 32 bits.  A signed w goes in as |x| times w with x's
// sign (vpsignb), whose pairs stay below 2 * 128 * 127 < 32768: exact for
// every w but -128 against a negative x (ggml's quantizers write no -128:
// Q8_0 codes are -127..127, and the other types' fewer bits).  Codes of 4
// bits cannot saturate.
llvm.func internal @pmadd_u7(%u: vector<32xi8>, %x: vector<32xi8>) -> vector<8xi32> {
  %p = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%u, %x) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
  %ones = arith.constant dense<1> : vector<16xi16>
  %d = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%p, %ones) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
  llvm.return %d : vector<8xi32>
}
llvm.func internal @pmadd_i8(%w: vector<32xi8>, %x: vector<32xi8>) -> vector<8xi32> {
  %ax = llvm.call_intrinsic "llvm.x86.avx2.psign.b"(%x, %x) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
  %sw = llvm.call_intrinsic "llvm.x86.avx2.psign.b"(%w, %x) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
  %d = llvm.call @pmadd_u7(%ax, %sw) : (vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  llvm.return %d : vector<8xi32>
}
llvm.func internal @llm_qdot_i8(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>, %xs4: vector<16xi32>) -> vector<16xi32> {
  %u0 = vector.shuffle %u, %u [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<64xi8>, vector<64xi8>
  %u1 = vector.shuffle %u, %u [32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xi8>, vector<64xi8>
  %x0 = vector.shuffle %x, %x [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<64xi8>, vector<64xi8>
  %x1 = vector.shuffle %x, %x [32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xi8>, vector<64xi8>
  %d0 = llvm.call @pmadd_i8(%u0, %x0) : (vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  %d1 = llvm.call @pmadd_i8(%u1, %x1) : (vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  %d = vector.shuffle %d0, %d1 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xi32>, vector<8xi32>
  %r = arith.addi %acc, %d : vector<16xi32>
  llvm.return %r : vector<16xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %u0 = vector.shuffle %u, %u [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<64xi8>, vector<64xi8>
  %u1 = vector.shuffle %u, %u [32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xi8>, vector<64xi8>
  %x0 = vector.shuffle %x, %x [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31] : vector<64xi8>, vector<64xi8>
  %x1 = vector.shuffle %x, %x [32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63] : vector<64xi8>, vector<64xi8>
  %d0 = llvm.call @pmadd_u7(%u0, %x0) : (vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  %d1 = llvm.call @pmadd_u7(%u1, %x1) : (vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  %d = vector.shuffle %d0, %d1 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xi32>, vector<8xi32>
  %r = arith.addi %acc, %d : vector<16xi32>
  llvm.return %r : vector<16xi32>
}
