/* dequant: decode a file of ggml blocks to little-endian f32 with
 * lib/quant.c, for tests/quant.bats, which compares the result with
 * ggml's own decoder (tests/tools/ggml-ref check).
 *
 *   dequant TYPE BLOCKS OUT
 *
 * TYPE is a ggml type name ("Q4_K", case ignored) that quant.h decodes;
 * BLOCKS holds whole blocks of it.  Exit status: 0 success, 1 bad input or
 * a write error, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "../../lib/gguf.h"
#include "../../lib/quant.h"
#include "../../lib/util.h"

int
main(int argc, char **argv)
{
	struct llm_map m;
	uint32_t t = 0, blck, size;

	llm_setprog("dequant");
	if (argc != 4) {
		fputs("usage: dequant TYPE BLOCKS OUT\n", stderr);
		return LLM_EXIT_USAGE;
	}
	while (t < LLM_GGML_NTYPES && strcasecmp(llm_ggml_type_name(t), argv[1]) != 0)
		t++;
	if (t == LLM_GGML_NTYPES || !llm_quant_supported(t))
		llm_fatal("%s: not a block type llm decodes (%s)", argv[1], llm_quant_supported_names());
	llm_ggml_type_block(t, &blck, &size);
	if (llm_map_file(&m, argv[2]) < 0)
		llm_fatal("%s", llm_errmsg());
	if (m.len % size)
		llm_fatal("%s: %zu bytes are not whole %s blocks of %u bytes", argv[2], m.len, argv[1], size);
	size_t n = m.len / size * blck;
	float *out = llm_xmalloc(n ? n * sizeof(float) : 1);
	llm_dequantize(t, m.p, out, n);
	struct llm_out o;
	if (llm_out_open(&o, argv[3]) < 0 || (n && fwrite(out, sizeof(float), n, o.fp) != n) ||
	    llm_out_commit(&o) < 0)
		llm_fatal("%s: write error", argv[3]);
	free(out);
	llm_unmap(&m);
	return 0;
}
