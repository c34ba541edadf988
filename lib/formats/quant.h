/* quant.h: ggml's block-quantized tensor types (the ones GGUF files of
 * llama.cpp's Q8_0, Q4_0, Q4_K_M, ... mixes hold): decoded to f32, or
 * split into int8 codes and f32 group scales (and offsets) for the tiled
 * layout the generated code reads.
 *
 * A block of blck elements (32, or 256 for the k-quants) is stored in a
 * fixed number of bytes: integer codes plus f16 (and, for the k-quants,
 * 6- or 8-bit) scales and minimums.  The geometry of every ggml type is in
 * lib/formats/gguf.c (llm_ggml_type_block); the layouts and formulas are in
 * share/doc/llm/formats.txt ("Block-quantized GGUF tensors").
 *
 * Every type is, exactly, groups of G elements (G = 32, or 16 for Q2_K,
 * Q3_K and Q6_K) with an f32 scale s, small integer codes q and, for the
 * types with minimums (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K), an f32 offset m:
 * x = s*q (+ m), rounded after the product and after the sum.  The decoded
 * values equal ggml's own dequantize_row_* bit for bit (the same f32
 * operations in the same order, no contraction into FMAs);
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

/* The codes q[n], group scales s[n/G] and (types with minimums) offsets
 * m[n/G] of the first n elements of the blocks at src.  -1 if t is not
 * supported. */
int llm_quant_split(uint32_t t, const void *src, size_t n, int8_t *q, float *s, float *m);

/* The tiled layout of a quantized [rows, cols] matrix in weights.bin
 * (plan key "layout", formats.txt): tiles of R = 8 consecutive rows;
 * codes [rows/R][cols/G][R][G] (one byte a code, or for codes of 4 bits
 * [rows/R][cols/G][R][G/2] bytes, byte j of a group holding element j in
 * its low nibble and element j + G/2 in its high nibble), then scales f32
 * [rows/R][cols/G][R], then, with minimums, offsets f32 in the same
 * order; "-f16" layouts (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, whose scales and
 * offsets are the blocks' own f16 values) keep them in f16, exactly.
 * "-sub8" layouts (Q4_K, Q5_K, Q6_K, in plans with int8 activations,
 * whose kernels alone read them) keep the k-quants' own factors instead:
 * each part (scales, then offsets) is the groups' integer sub-scales
 * (sub-minimums), one int8 each [rows/R][cols/G][R], then the blocks' f16
 * d (dmin negated) [rows/R][cols/256][R]; s = d * sc and m = (-dmin) *
 * min, computed in f32 as ggml computes them, are the same values (Q4_K:
 * 4.625 bits a weight instead of 6, Q6_K 8.56 instead of 10).  A
 * tile's group of codes is one contiguous piece, read by one register tile
 * of the GEMV, so a tile's rows are one sequential stream.  Named
 * "i8-r8-g32-f16", "i4-r8-g32-f16", "u4-r8-g32-min-sub8" ...: i8 codes are
 * the bytes as int8; i4 codes are the nibble - 8 (-8 .. 7), u4 codes the
 * nibble (0 .. 15).  4-bit codes are used for the types whose codes fit
 * (Q4_0, Q3_K: i4; Q4_1, Q4_K, Q2_K: u4).
 *
 * In plans with int8 activations the 5- and 6-bit types keep their bits:
 * i5 (Q5_0: v - 16), u5 (Q5_1, Q5_K: v) and i6 (Q6_K: v - 32), v the
 * type's unsigned 5- or 6-bit value.  A tile's group, its R rows' codes in
 * the i8 order ([R][G], R * G codes), is pieces of 64 codes, each 32 bytes
 * of nibbles (byte j: the low 4 bits of code j of the piece in its low
 * nibble, of code j + 32 in its high nibble), then one 8-byte plane per
 * bit above the fourth (bit i of the little-endian 64-bit word: that bit
 * of code i's v): 40 or 48 bytes a piece, G * 5 or G * 6 bytes a group. */
#define LLM_QTILE_ROWS 8
#define LLM_QSUPER 256 /* elements of a k-quant block: one d (and dmin) */
#define LLM_QLAYOUT_NAME 32
enum { LLM_QCODE_I8, LLM_QCODE_I4, LLM_QCODE_U4, LLM_QCODE_I5, LLM_QCODE_U5, LLM_QCODE_I6 };
/* The bits of a code (8, 4, 5 or 6) and the value v - code (8 for i4, 16
 * for i5, 32 for i6, else 0). */
int llm_qcode_bits(int code);
int llm_qcode_zero(int code);
#define LLM_QPIECE 64 /* codes of a piece of the 5- and 6-bit forms */
struct llm_qlayout {
	int rows, group, mins, code, half; /* half: f16 scales and offsets */
	int sub;                           /* "-sub8": int8 sub-scales, f16 d */
};
/* The layout of ggml type t; with sub (int8 activations) its "-sub8" form
 * where it has one, and 5- or 6-bit codes for the types whose values have
 * that many bits; -1 if t is not supported. */
int llm_qlayout_of(uint32_t t, int sub, struct llm_qlayout *l);
void llm_qlayout_name(const struct llm_qlayout *l, char out[LLM_QLAYOUT_NAME]);
/* 0, or -1 if s is not a layout name. */
int llm_qlayout_parse(const char *s, struct llm_qlayout *l);
/* 1 if a [rows, cols] matrix is whole tiles and groups (and, "-sub8",
 * blocks of 256). */
int llm_qlayout_fits(const struct llm_qlayout *l, int64_t rows, int64_t cols);
/* Bytes of one scale or offset (1, 2 or 4) and of a whole part of them;
 * the byte offset, within a "-sub8" part, of its f16 d; byte offsets
 * (from the tensor's offset) of the scales and offsets, and the size of
 * the whole tensor. */
size_t llm_qlayout_scale_bytes(const struct llm_qlayout *l);
uint64_t llm_qlayout_part_bytes(const struct llm_qlayout *l, int64_t rows, int64_t cols);
uint64_t llm_qlayout_super_at(const struct llm_qlayout *l, int64_t rows, int64_t cols);
uint64_t llm_qlayout_scales_at(const struct llm_qlayout *l, int64_t rows, int64_t cols);
uint64_t llm_qlayout_mins_at(const struct llm_qlayout *l, int64_t rows, int64_t cols);
uint64_t llm_qlayout_bytes(const struct llm_qlayout *l, int64_t rows, int64_t cols);
/* Tile `tile` of a [rows, cols] matrix: its R rows of type t, consecutive
 * at src, into codes (the tile's [cols/G][R] groups) and its entries of
 * the whole parts scales and mins (with minimums).  -1 on an unsupported
 * type or cols not whole blocks. */
int llm_qlayout_tile(const struct llm_qlayout *l, uint32_t t, const void *src, int64_t rows, int64_t cols, int64_t tile,
    uint8_t *codes, uint8_t *scales, uint8_t *mins);

/* Quantizing (quantize.c): 1 if llm can write ggml type t from f32
 * (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), else 0. */
int llm_quantize_supported(uint32_t t);

/* n values (a multiple of t's block size, all finite) into blocks of
 * type t at dst, byte for byte as llama-quantize writes them without an
 * importance matrix (ggml's quantize_row_*_ref).  -1 if t is not
 * supported or n is not whole blocks. */
int llm_quantize(uint32_t t, const float *src, size_t n, void *dst);

#endif
