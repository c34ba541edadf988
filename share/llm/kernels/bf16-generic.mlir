// The bf16 dot product of the products with bf16 weights and bf16
// activations (share/doc/llm/ir.txt "Kernels", dtypes.activations
// "bf16"), portable form: plain vector arithmetic, for any target
// (AVX2, RISC-V V, and x86 without AVX512-BF16).  llm-lower puts the
// definitions of the target's form in place of the declaration llm-import
// writes (target.c: llm_target_bf16_kernels).
//
// @llm_bdot(acc, w, x): lane i of acc plus w[2i+1]*x[2i+1], then plus
//   w[2i]*x[2i], each sum rounded to f32, as vdpbf16ps computes it.  A
//   product of two bf16 values is exact in f32, so the multiply needs no
//   fusing with the add.  (vdpbf16ps also reads denormal inputs as zero
//   and flushes denormal sums: values below 2^-126 where this form keeps
//   them.)
llvm.func internal @llm_bdot(%acc: vector<16xf32>, %w: vector<32xbf16>, %x: vector<32xbf16>) -> vector<16xf32> {
  %wf = arith.extf %w : vector<32xbf16> to vector<32xf32>
  %xf = arith.extf %x : vector<32xbf16> to vector<32xf32>
  %p = arith.mulf %wf, %xf : vector<32xf32>
  %po = vector.shuffle %p, %p [1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31] : vector<32xf32>, vector<32xf32>
  %pe = vector.shuffle %p, %p [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30] : vector<32xf32>, vector<32xf32>
  %a = arith.addf %acc, %po : vector<16xf32>
  %r = arith.addf %a, %pe : vector<16xf32>
  llvm.return %r : vector<16xf32>
}
