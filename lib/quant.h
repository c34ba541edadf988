/* quant.h: ggml's block-quantized tensor types (the ones GGUF files of
 * llama.cpp's Q8_0, Q4_0, Q4_K_M, ... mixes hold), decoded to f32.
 *
 * A block of blck elements (32, or 256 for the k-quants) is stored in a
 * fixed number of bytes: integer codes plus f16 (and, for the k-quants,
 * 6- or 8-bit) scales and minimums.  The geometry of every ggml type is in
 * lib/gguf.c (llm_ggml_type_block); the layouts and formulas are in
 * share/doc/llm/formats.txt ("Block-quantized GGUF tensors").
 *
 * The decoded values equal ggml's own dequantize_row_* bit for bit (the
 * same f32 operations in the same order, no contraction into FMAs);
 * tests/quant.bats checks that against the libggml that llama.cpp ships. */
#ifndef LLM_QUANT_H
#define LLM_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* 1 if llm can decode ggml type t (enum llm_ggml_type), else 0. */
int llm_quant_supported(uint32_t t);

/* The supported block types, for messages: "Q4_0, Q4_1, ...". */
const char *llm_quant_supported_names(void);

/* Decode the first n elements of the blocks at src (type t, supported;
 * n a multiple of its block size) into dst. */
void llm_dequantize(uint32_t t, const void *src, float *dst, size_t n);

#endif
