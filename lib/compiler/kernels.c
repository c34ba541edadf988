/* kernels.c: see kernels.h. */
#include "kernels.h"

const struct llm_kernel_family_info llm_kernel_families[LLM_NKFAMILY] = {
	[LLM_KFAMILY_QDOT] = {"llvm.func @llm_qdot_", llm_target_kernels},
	[LLM_KFAMILY_BDOT] = {"llvm.func @llm_bdot(", llm_target_bf16_kernels},
	[LLM_KFAMILY_TILE] = {"llvm.func @llm_qtile_", llm_target_tile_kernels},
};

const struct llm_kernel_info llm_kernels[LLM_NKERNEL] = {
	[LLM_KERNEL_QDOT_I8] = {"llm_qdot_i8",
		"(vector<16xi32>, vector<64xi8>, vector<64xi8>, vector<16xi32>) -> vector<16xi32>", LLM_KFAMILY_QDOT},
	[LLM_KERNEL_QDOT_U7] = {"llm_qdot_u7", "(vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>",
		LLM_KFAMILY_QDOT},
	[LLM_KERNEL_QTILE_I8] = {"llm_qtile_i8", "(vector<256xi8>, vector<512xi8>) -> vector<128xi32>",
		LLM_KFAMILY_TILE},
	[LLM_KERNEL_QTILE_BF16] = {"llm_qtile_bf16",
		"(vector<256xf32>, vector<256xf32>, vector<512xbf16>, vector<512xbf16>, vector<512xbf16>) -> "
		"!llvm.struct<(vector<256xf32>, vector<256xf32>)>",
		LLM_KFAMILY_TILE},
	[LLM_KERNEL_BDOT] = {"llm_bdot", "(vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>",
		LLM_KFAMILY_BDOT},
};
