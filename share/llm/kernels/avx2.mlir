// The int8 dot products (see generic.mlir for what each computes), AVX2
// form, as llama.cpp's: vpmaddubsw multiplies unsigned by signed bytes
// into saturating 16-bit pairs, vpmaddwd adds the pairs into 32 bits.  A
// signed w goes in as |x| times w with x's sign (vpsignb), whose pairs
// stay below 2 * 128 * 127 < 32768: exact for every w but -128 against a
// negative x (ggml's quantizers write no -128: Q8_0 codes are -127..127,
// and the other types' fewer bits).  Codes of 4 bits cannot saturate.
llvm.func internal @llm_qdot_i8(%acc: vector<8xi32>, %w: vector<32xi8>, %x: vector<32xi8>, %xs4: vector<8xi32>) -> vector<8xi32> {
  %ax = llvm.call_intrinsic "llvm.x86.avx2.psign.b"(%x, %x) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
  %sw = llvm.call_intrinsic "llvm.x86.avx2.psign.b"(%w, %x) : (vector<32xi8>, vector<32xi8>) -> vector<32xi8>
  %p = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%ax, %sw) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
  %ones = arith.constant dense<1> : vector<16xi16>
  %d = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%p, %ones) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
  %r = arith.addi %acc, %d : vector<8xi32>
  llvm.return %r : vector<8xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<8xi32>, %u: vector<32xi8>, %x: vector<32xi8>) -> vector<8xi32> {
  %p = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%u, %x) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
  %ones = arith.constant dense<1> : vector<16xi16>
  %d = llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%p, %ones) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
  %r = arith.addi %acc, %d : vector<8xi32>
  llvm.return %r : vector<8xi32>
}
