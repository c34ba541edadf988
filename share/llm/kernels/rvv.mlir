// The int8 dot products of the quantized products (share/doc/llm/ir.txt
// "Kernels"), RISC-V V form (target.c: llm_target_kernels, a riscv64
// target with the V extension).  The same integers as generic.mlir, in
// 16-bit products: a signed byte times a signed byte (or a code in
// 0..127) is at most 2^14 in magnitude, so the products are vwmul.vv at
// e8 (two bytes a lane where the generic form's 32-bit products take
// four), and the sums of neighbours widen to 32 bits (vwadd.vv) before
// the second pair sum.  Register groups of half the size: the generic
// form's vector<64xi32> products are two LMUL-8 groups at VLEN 128 and
// spill whole groups (vl8r.v/vs8r.v: BENCHMARKS.md, "RISC-V V").
//
// @llm_qdot_i8(acc, w, x, xs4), on 64 bytes: lane i of acc plus
//   w[4i]*x[4i] + ... + w[4i+3]*x[4i+3], w and x signed (xs4 unused).
// @llm_qdot_u7(acc, u, x): the same for u in 0..127 (4-bit codes).
llvm.func internal @llm_qdot_i8(%acc: vector<16xi32>, %w: vector<64xi8>, %x: vector<64xi8>, %xs4: vector<16xi32>) -> vector<16xi32> {
  %we = arith.extsi %w : vector<64xi8> to vector<64xi16>
  %xe = arith.extsi %x : vector<64xi8> to vector<64xi16>
  %p = arith.muli %we, %xe : vector<64xi16>
  %p0 = vector.shuffle %p, %p [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62] : vector<64xi16>, vector<64xi16>
  %p1 = vector.shuffle %p, %p [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63] : vector<64xi16>, vector<64xi16>
  %p0e = arith.extsi %p0 : vector<32xi16> to vector<32xi32>
  %p1e = arith.extsi %p1 : vector<32xi16> to vector<32xi32>
  %q = arith.addi %p0e, %p1e : vector<32xi32>
  %q0 = vector.shuffle %q, %q [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xi32>, vector<32xi32>
  %q1 = vector.shuffle %q, %q [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<32xi32>, vector<32xi32>
  %s = arith.addi %q0, %q1 : vector<16xi32>
  %r = arith.addi %acc, %s : vector<16xi32>
  llvm.return %r : vector<16xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<16xi32>, %u: vector<64xi8>, %x: vector<64xi8>) -> vector<16xi32> {
  %we = arith.extui %u : vector<64xi8> to vector<64xi16>
  %xe = arith.extsi %x : vector<64xi8> to vector<64xi16>
  %p = arith.muli %we, %xe : vector<64xi16>
  %p0 = vector.shuffle %p, %p [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62] : vector<64xi16>, vector<64xi16>
  %p1 = vector.shuffle %p, %p [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63] : vector<64xi16>, vector<64xi16>
  %p0e = arith.extsi %p0 : vector<32xi16> to vector<32xi32>
  %p1e = arith.extsi %p1 : vector<32xi16> to vector<32xi32>
  %q = arith.addi %p0e, %p1e : vector<32xi32>
  %q0 = vector.shuffle %q, %q [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xi32>, vector<32xi32>
  %q1 = vector.shuffle %q, %q [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<32xi32>, vector<32xi32>
  %s = arith.addi %q0, %q1 : vector<16xi32>
  %r = arith.addi %acc, %s : vector<16xi32>
  llvm.return %r : vector<16xi32>
}
