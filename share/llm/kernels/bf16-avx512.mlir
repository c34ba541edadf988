// The bf16 dot product (see bf16-generic.mlir for what it computes),
// AVX512-BF16 form: one vdpbf16ps on 512-bit vectors, 32 products a
// call.
llvm.func internal @llm_bdot(%acc: vector<16xf32>, %w: vector<32xbf16>, %x: vector<32xbf16>) -> vector<16xf32> {
  %r = llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%acc, %w, %x) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>
  llvm.return %r : vector<16xf32>
}
