// The int8 dot products of the quantized single-row products
// (share/doc/llm/ir.txt "Kernels"), portable form: plain vector
// arithmetic, for any target (RISC-V V, and x86 without the forms below).
// llm-lower puts the definitions of the target's form in place of the
// declarations llm-import writes (target.c: llm_target_kernels); all
// forms compute the same integers.
//
// @llm_qdot_i8(acc, w, x, xs4): lane i of acc plus
//   w[4i]*x[4i] + ... + w[4i+3]*x[4i+3], w and x signed; xs4[i] is
//   x[4i] + .. + x[4i+3] (the forms that multiply unsigned bytes use it).
// @llm_qdot_u7(acc, u, x): the same for u in 0..127 (4-bit codes).
llvm.func internal @llm_qdot_i8(%acc: vector<8xi32>, %w: vector<32xi8>, %x: vector<32xi8>, %xs4: vector<8xi32>) -> vector<8xi32> {
  %we = arith.extsi %w : vector<32xi8> to vector<32xi32>
  %xe = arith.extsi %x : vector<32xi8> to vector<32xi32>
  %p = arith.muli %we, %xe : vector<32xi32>
  %e0 = vector.shuffle %p, %p [0, 4, 8, 12, 16, 20, 24, 28] : vector<32xi32>, vector<32xi32>
  %e1 = vector.shuffle %p, %p [1, 5, 9, 13, 17, 21, 25, 29] : vector<32xi32>, vector<32xi32>
  %e2 = vector.shuffle %p, %p [2, 6, 10, 14, 18, 22, 26, 30] : vector<32xi32>, vector<32xi32>
  %e3 = vector.shuffle %p, %p [3, 7, 11, 15, 19, 23, 27, 31] : vector<32xi32>, vector<32xi32>
  %s01 = arith.addi %e0, %e1 : vector<8xi32>
  %s23 = arith.addi %e2, %e3 : vector<8xi32>
  %s = arith.addi %s01, %s23 : vector<8xi32>
  %r = arith.addi %acc, %s : vector<8xi32>
  llvm.return %r : vector<8xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<8xi32>, %u: vector<32xi8>, %x: vector<32xi8>) -> vector<8xi32> {
  %ue = arith.extui %u : vector<32xi8> to vector<32xi32>
  %xe = arith.extsi %x : vector<32xi8> to vector<32xi32>
  %p = arith.muli %ue, %xe : vector<32xi32>
  %e0 = vector.shuffle %p, %p [0, 4, 8, 12, 16, 20, 24, 28] : vector<32xi32>, vector<32xi32>
  %e1 = vector.shuffle %p, %p [1, 5, 9, 13, 17, 21, 25, 29] : vector<32xi32>, vector<32xi32>
  %e2 = vector.shuffle %p, %p [2, 6, 10, 14, 18, 22, 26, 30] : vector<32xi32>, vector<32xi32>
  %e3 = vector.shuffle %p, %p [3, 7, 11, 15, 19, 23, 27, 31] : vector<32xi32>, vector<32xi32>
  %s01 = arith.addi %e0, %e1 : vector<8xi32>
  %s23 = arith.addi %e2, %e3 : vector<8xi32>
  %s = arith.addi %s01, %s23 : vector<8xi32>
  %r = arith.addi %acc, %s : vector<8xi32>
  llvm.return %r : vector<8xi32>
}
