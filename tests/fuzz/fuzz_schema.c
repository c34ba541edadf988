/* fuzz_schema.c: libFuzzer target for the JSON schema converter
 * (lib/text/json_schema.c): the input is a schema.  It becomes GBNF
 * that the grammar parser accepts, or is refused with one line; the
 * grammar of a schema is then fed the input itself (JSON text), byte by
 * byte, which must not crash.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/text/grammar.h"
#include "../../lib/base/util.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = llm_json_schema_grammar((const char *)data, size);
	if (!text) {
		CHECK(*llm_errmsg() && !strchr(llm_errmsg(), '\n'));
		return 0;
	}
	struct llm_grammar *g = llm_grammar_parse(text, strlen(text));
	CHECK(g);
	struct llm_grammar_state st = {0};
	int ok = llm_grammar_start(g, &st) == 0;
	for (size_t i = 0; ok && i < size && llm_grammar_accept(g, &st, (const char *)data + i, 1) > 0; i++)
		;
	llm_grammar_state_free(&st);
	llm_grammar_free(g);
	free(text);
	return 0;
}
