/* dequant: decode a file of ggml blocks to little-endian f32 with
 * lib/formats/quant.c, for tests/quant.bats, which compares the result with
 * ggml's own decoder (tests/tools/ggml-ref check).
 *
 *   dequant TYPE BLOCKS OUT
 *   dequant --tiled LAYOUT ROWS COLS TENSOR OUT
 *   dequant --quantize TYPE VALUES OUT
 *
 * TYPE is a ggml type name ("Q4_K", case ignored) that quant.h decodes;
 * BLOCKS holds whole blocks of it.  With --tiled, TENSOR holds the bytes
 * of a [ROWS, COLS] matrix in the tiled int8 layout LAYOUT of weights.bin
 * ("u4-r8-g32-min", "u4-r8-g32-min-sub8", share/doc/llm/formats.txt),
 * decoded here from the layout's description (x = s * q (+ m)) into
 * row-major f32, so that a
 * test can compare llm-pack-weights' tiles with ggml's decoding.  With
 * --quantize, the little-endian f32 VALUES (whole blocks of TYPE) are
 * quantized by lib/formats/quantize.c into blocks in OUT, for a comparison with
 * ggml's quantizer (tests/tools/ggml-ref blocks).  Exit
 * status: 0 success, 1 bad input or a write error, 2 usage. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../lib/base/dtype.h"
#include "../../lib/formats/gguf.h"
#include "../../lib/formats/quant.h"
#include "../../lib/base/util.h"

static void
write_f32(const char *path, const float *v, size_t n)
{
	struct llm_out o;
	if (llm_out_open(&o, path) < 0 || (n && fwrite(v, sizeof(float), n, o.fp) != n) || llm_out_commit(&o) < 0)
		llm_fatal("%s: write error", path);
}

/* Scale or offset i of a tiled layout's part at p (f32, f16, or with
 * "-sub8" the product of the group's integer and its block's f16 factor,
 * in f32, as ggml computes it; the group is g of tile t, row h). */
static float
scale_at(const struct llm_qlayout *l, const uint8_t *p, int64_t rows, int64_t cols, int64_t t, int64_t g, int64_t h)
{
	int64_t i = (t * (cols / l->group) + g) * l->rows + h;
	if (l->sub) {
		uint16_t d;
		int64_t b = g / (LLM_QSUPER / l->group);
		int64_t di = (t * (cols / LLM_QSUPER) + b) * l->rows + h;
		memcpy(&d, p + llm_qlayout_super_at(l, rows, cols) + 2 * di, 2);
		return llm_f16_to_f32(d) * (float)(int8_t)p[i];
	}
	if (l->half) {
		uint16_t h16;
		memcpy(&h16, p + 2 * i, 2);
		return llm_f16_to_f32(h16);
	}
	float f;
	memcpy(&f, p + 4 * i, 4);
	return f;
}

static int
tiled(char **argv)
{
	struct llm_qlayout l;
	struct llm_map m;
	int64_t rows, cols;

	if (llm_qlayout_parse(argv[0], &l) < 0)
		llm_fatal("%s: not a tiled layout name", argv[0]);
	if (llm_parse_i64(argv[1], 1, INT64_C(1) << 32, &rows) < 0 ||
	    llm_parse_i64(argv[2], 1, INT64_C(1) << 32, &cols) < 0 || !llm_qlayout_fits(&l, rows, cols))
		llm_fatal("%s x %s: not whole tiles of %s", argv[1], argv[2], argv[0]);
	if (llm_map_file(&m, argv[3]) < 0)
		llm_fatal("%s", llm_errmsg());
	if (m.len != llm_qlayout_bytes(&l, rows, cols))
		llm_fatal("%s: %zu bytes, the layout takes %" PRIu64, argv[3], m.len,
		    llm_qlayout_bytes(&l, rows, cols));
	int bits = llm_qcode_bits(l.code), zero = llm_qcode_zero(l.code);
	int64_t R = l.rows, G = l.group, ng = cols / G, gb = G * bits / 8;
	const uint8_t *q = m.p;
	const uint8_t *s = (const uint8_t *)m.p + llm_qlayout_scales_at(&l, rows, cols);
	const uint8_t *mn = (const uint8_t *)m.p + llm_qlayout_mins_at(&l, rows, cols);
	float *out = llm_xmalloc((size_t)(rows * cols) * sizeof(float));
	for (int64_t r = 0; r < rows; r++)
		for (int64_t c = 0; c < cols; c++) {
			int64_t t = r / R, h = r % R, g = c / G, j = c % G;
			int64_t sg = (t * ng + g) * R + h;
			int code;
			if (bits == 8)
				code = (int8_t)q[sg * G + j];
			else if (bits == 4) {
				uint8_t b = q[sg * gb + j % (G / 2)];
				code = (j < G / 2 ? b & 15 : b >> 4) - zero;
			} else {
				/* code i of the tile's group: piece i / 64, whose 32
				 * bytes of nibbles, then planes of 8 bytes */
				int64_t i = h * G + j, o = i % 64;
				const uint8_t *pc = q + (t * ng + g) * R * gb + i / 64 * (8 * bits);
				int v = o < 32 ? pc[o] & 15 : pc[o - 32] >> 4;
				for (int k = 4; k < bits; k++)
					v |= ((pc[32 + 8 * (k - 4) + o / 8] >> (o % 8)) & 1) << k;
				code = v - zero;
			}
			float v = scale_at(&l, s, rows, cols, t, g, h) * (float)code;
			out[r * cols + c] = l.mins ? v + scale_at(&l, mn, rows, cols, t, g, h) : v;
		}
	write_f32(argv[4], out, (size_t)(rows * cols));
	free(out);
	llm_unmap(&m);
	return 0;
}

static uint32_t
type_named(const char *s, int (*supported)(uint32_t))
{
	int64_t t = llm_ggml_type_by_name(s);
	if (t < 0 || !supported((uint32_t)t))
		llm_fatal("%s: not a block type llm %s", s, supported == llm_quant_supported ? "decodes" : "writes");
	return (uint32_t)t;
}

static int
quantize(char **argv)
{
	struct llm_map m;
	uint32_t t = type_named(argv[0], llm_quantize_supported), blck, size;

	llm_ggml_type_block(t, &blck, &size);
	if (llm_map_file(&m, argv[1]) < 0)
		llm_fatal("%s", llm_errmsg());
	size_t n = m.len / sizeof(float);
	if (m.len % (sizeof(float) * blck))
		llm_fatal("%s: not whole blocks of %s", argv[1], argv[0]);
	uint8_t *out = llm_xmalloc(n / blck * size + 1);
	struct llm_out o;
	if (llm_quantize(t, (const float *)m.p, n, out) < 0)
		llm_fatal("%s: cannot quantize to %s", argv[1], argv[0]);
	if (llm_out_open(&o, argv[2]) < 0 || (n && fwrite(out, 1, n / blck * size, o.fp) != n / blck * size) ||
	    llm_out_commit(&o) < 0)
		llm_fatal("%s: write error", argv[2]);
	free(out);
	llm_unmap(&m);
	return 0;
}

int
main(int argc, char **argv)
{
	struct llm_map m;
	uint32_t t = 0, blck, size;

	llm_setprog("dequant");
	if (argc == 7 && strcmp(argv[1], "--tiled") == 0)
		return tiled(argv + 2);
	if (argc == 5 && strcmp(argv[1], "--quantize") == 0)
		return quantize(argv + 2);
	if (argc != 4) {
		fputs("usage: dequant TYPE BLOCKS OUT\n       dequant --tiled LAYOUT ROWS COLS TENSOR OUT\n"
		      "       dequant --quantize TYPE VALUES OUT\n",
		    stderr);
		return LLM_EXIT_USAGE;
	}
	t = type_named(argv[1], llm_quant_supported);
	llm_ggml_type_block(t, &blck, &size);
	if (llm_map_file(&m, argv[2]) < 0)
		llm_fatal("%s", llm_errmsg());
	if (m.len % size)
		llm_fatal("%s: %zu bytes are not whole %s blocks of %u bytes", argv[2], m.len, argv[1], size);
	size_t n = m.len / size * blck;
	float *out = llm_xmalloc(n ? n * sizeof(float) : 1);
	llm_dequantize(t, m.p, out, n);
	write_f32(argv[3], out, n);
	free(out);
	llm_unmap(&m);
	return 0;
}
