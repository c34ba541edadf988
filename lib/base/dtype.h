/* dtype.h: element types of tensors, and exact f16/bf16 <-> f32 conversions.
 *
 * The enum only grows: add at the end, never renumber (values are written
 * into weights.json by name, but kept stable for binary headers too). */
#ifndef LLM_DTYPE_H
#define LLM_DTYPE_H

#include <stddef.h>
#include <stdint.h>

enum llm_dtype {
	LLM_DT_NONE = 0,
	LLM_DT_F32,
	LLM_DT_F16,
	LLM_DT_BF16,
	LLM_DT_F64,
	LLM_DT_I8,
	LLM_DT_U8,
	LLM_DT_I16,
	LLM_DT_U16,
	LLM_DT_I32,
	LLM_DT_U32,
	LLM_DT_I64,
	LLM_DT_U64,
	LLM_DT_BOOL,
	LLM_DT_F8_E4M3,
	LLM_DT_F8_E5M2,
	LLM_DT_COUNT
};

/* Size in bytes of one element (0 for LLM_DT_NONE). */
size_t llm_dtype_size(enum llm_dtype t);
/* Safetensors spelling: "F32", "BF16", "F8_E4M3" ... */
const char *llm_dtype_st_name(enum llm_dtype t);
enum llm_dtype llm_dtype_from_st_name(const char *s);
/* Lowercase spelling used in manifests and MLIR: "f32", "bf16" ... */
const char *llm_dtype_name(enum llm_dtype t);
enum llm_dtype llm_dtype_from_name(const char *s);
/* Float types that weights may be stored in (f32, f16, bf16). */
int llm_dtype_is_float_weight(enum llm_dtype t);

/* Exact conversions.  f32 -> f16/bf16 round to nearest, ties to even;
 * overflow gives inf; NaN stays NaN (quiet, sign kept); subnormals of the
 * narrow types are produced and read exactly. */
float llm_f16_to_f32(uint16_t h);
uint16_t llm_f32_to_f16(float f);
float llm_bf16_to_f32(uint16_t h);
uint16_t llm_f32_to_bf16(float f);

/* Convert n elements between float types (f32, f16, bf16, f64 source).
 * Returns -1 for an unsupported pair. */
int llm_convert(void *dst, enum llm_dtype dt, const void *src, enum llm_dtype st, size_t n);

#endif
