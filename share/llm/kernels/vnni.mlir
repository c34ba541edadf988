// The int8 dot products (see generic.mlir for what each computes), VNNI
// form: vpdpbusd on 256-bit vectors, which AVX512-VNNI with AVX512-VL and
// AVX-VNNI both have (LLVM 22's intrinsic takes the bytes as <32 x i8>).
// vpdpbusd multiplies unsigned by signed bytes: a signed w is made
// unsigned as w ^ 0x80 = w + 128, and the sum starts 128 * xs4 lower.
llvm.func internal @llm_qdot_i8(%acc: vector<8xi32>, %w: vector<32xi8>, %x: vector<32xi8>, %xs4: vector<8xi32>) -> vector<8xi32> {
  %m128 = arith.constant dense<-128> : vector<8xi32>
  %b = arith.muli %xs4, %m128 : vector<8xi32>
  %a = arith.addi %acc, %b : vector<8xi32>
  %x80 = arith.constant dense<-128> : vector<32xi8>
  %u = arith.xori %w, %x80 : vector<32xi8>
  %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%a, %u, %x) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  llvm.return %r : vector<8xi32>
}
llvm.func internal @llm_qdot_u7(%acc: vector<8xi32>, %u: vector<32xi8>, %x: vector<32xi8>) -> vector<8xi32> {
  %r = llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.256"(%acc, %u, %x) : (vector<8xi32>, vector<32xi8>, vector<32xi8>) -> vector<8xi32>
  llvm.return %r : vector<8xi32>
}
