/* fuzz_tokjson.c: libFuzzer target for the tokenizer.json reader
 * (lib/text/tokjson.c, llm_tokenizer_load_json).  A tokenizer that loads
 * encodes the first bytes of the input itself, and its ids decode back
 * to a string; a refused input leaves one line naming it.  Build and
 * run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/text/tokenizer.h"
#include "../../lib/base/util.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_tokenizer *t = llm_tokenizer_load_json((const char *)data, size, "fuzz.json");
	int64_t *ids = NULL;
	size_t n = 0;

	if (!t) {
		CHECK(strncmp(llm_errmsg(), "fuzz.json", 9) == 0);
		return 0;
	}
	if (llm_tokenizer_encode(t, (const char *)data, size < 256 ? size : 256, 1, &ids, &n) == 0) {
		struct llm_buf out = {0};
		llm_tokenizer_decode(t, ids, n, 0, &out);
		llm_buf_free(&out);
	}
	free(ids);
	llm_tokenizer_free(t);
	return 0;
}
