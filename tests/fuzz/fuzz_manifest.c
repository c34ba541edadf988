/* fuzz_manifest.c: libFuzzer target for the model.json reader
 * (lib/formats/model.c, llm_model_parse after lib/base/json.c's llm_json_loadb), the
 * manifest every program after llm-import trusts.  An input that loads
 * must keep what model.h promises (tensors inside data_bytes, phases
 * named, strings borrowed from the document); one that fails must leave
 * one line naming the input.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/json.h"
#include "../../lib/formats/model.h"
#include "../../lib/base/util.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_model m;
	json_t *root = llm_json_loadb((const char *)data, size, "fuzz.json");

	if (!root || llm_model_parse(&m, root, "fuzz.json") < 0) {
		const char *msg = llm_errmsg();
		CHECK(strncmp(msg, "fuzz.json", 9) == 0 && !strchr(msg, '\n'));
		return 0;
	}
	for (size_t i = 0; i < m.ntensors; i++) {
		const struct llm_plan_tensor *t = &m.tensors[i];
		CHECK(t->name && t->ndim >= 1 && t->ndim <= 4);
		CHECK(t->offset <= m.data_bytes && t->bytes <= m.data_bytes - t->offset);
		CHECK(llm_model_tensor(&m, t->name) != NULL);
	}
	for (int i = 0; i < m.nphases; i++)
		CHECK(m.phases[i].name && m.phases[i].entry && m.phases[i].tokens > 0 &&
		    llm_model_phase(&m, m.phases[i].name) != NULL);
	llm_model_free(&m);
	return 0;
}
