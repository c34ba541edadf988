// The int8 dot products of the quantized products (share/doc/llm/ir.txt
// "Kernels"), portable form: plain vector arithmetic, for any target
// (RISC-V V, and x86 without the forms below).  llm-lower puts the
// definitions of the target's form in place of the declarations
// llm-import writes (target.c: llm_target_kernels); all forms compute the
// same integers.
//
// @llm_qdot_i8(acc, w, x, xs4), on 64 bytes: lane i of acc plus
//   w[4i]*x[4i] + ... + w[4i+3]*x[4i+3], w and x signed; xs4[i] is
//   x[4i] + .. + x[4i+3] (the forms that multiply unsigned bytes use it).
// @llm_qdot_u7(acc, u, x): the same for u in 0..127 (4-bit codes).
llvm.func internal @llm_qdot_i8(%acc: vector<16xi32>, %w: vector<64xi8>, %x: vector<64xi8>, %xs4: vector<16xi32>) -> vector<16xi32> {
  %we = arith.extsi %w : vector<64xi8> to vector<64xi32>
  %xe = arith.extsi %x : vector<64xi8> to vector<64xi32>
  %p = arith.muli %we, %xe : vector<64xi32>
  %e0 = vector.shuffle %p, %p [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>, vector<64xi32>
  %e1 = vector.shuffle %p, %p [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi32>, vector<64xi32>
  %e2 = vector.shuffle %p, %p [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi32>, vector<64xi32>
  %e3 = vector.shuffle %p, %p [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi32>, vector<64xi32>
  %s01 = arith.addi %e0, %e1 : vector<16xi32>
  %s23 = arith.addi %e2, %e3 : vector<16xi32>
  %s = arith.addi %s01, %s23 : vector<16xi32>
  %r = arith.addi %acc, %s : vector<16xi32>
  llvm.return %r : vector<16xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %we = arith.extui %u : vector<64xi8> to vector<64xi32>
  %xe = arith.extsi %x : vector<64xi8> to vector<64xi32>
  %p = arith.muli %we, %xe : vector<64xi32>
  %e0 = vector.shuffle %p, %p [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60] : vector<64xi32>, vector<64xi32>
  %e1 = vector.shuffle %p, %p [1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41, 45, 49, 53, 57, 61] : vector<64xi32>, vector<64xi32>
  %e2 = vector.shuffle %p, %p [2, 6, 10, 14, 18, 22, 26, 30, 34, 38, 42, 46, 50, 54, 58, 62] : vector<64xi32>, vector<64xi32>
  %e3 = vector.shuffle %p, %p [3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47, 51, 55, 59, 63] : vector<64xi32>, vector<64xi32>
  %s01 = arith.addi %e0, %e1 : vector<16xi32>
  %s23 = arith.addi %e2, %e3 : vector<16xi32>
  %s = arith.addi %s01, %s23 : vector<16xi32>
  %r = arith.addi %acc, %s : vector<16xi32>
  llvm.return %r : vector<16xi32>
}
