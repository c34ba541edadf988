/* fuzz_weights.c: libFuzzer target for weights.json (lib/formats/weights.c,
 * llm_weights_manifest_load, which llm-pack-weights' reuse check and
 * llm-link read) and for the weights.bin header decoder on the same
 * bytes.  A manifest that loads keeps weights.h's promises (every tensor
 * named, of 1 to 4 dimensions, inside data_bytes); a refused one leaves
 * one line naming the file.  Build and run: see tests/fuzz/README. */
#include "../../lib/formats/weights.h"
#include "../../lib/base/util.h"
#include "fuzzfile.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_weights_manifest w;
	struct llm_weights_header h;
	const char *path = fuzz_file("weights.json", data, size);

	if (llm_weights_header_decode(data, size, path, &h) == 0)
		CHECK(h.version == LLM_WEIGHTS_VERSION && h.header_bytes == LLM_WEIGHTS_HEADER_BYTES);
	else
		fuzz_check_message(llm_errmsg(), path);
	if (llm_weights_manifest_load(&w, path) < 0) {
		fuzz_check_message(llm_errmsg(), path);
		return 0;
	}
	for (size_t i = 0; i < w.nsources; i++)
		CHECK(w.sources[i].path != NULL);
	for (size_t i = 0; i < w.ntensors; i++) {
		const struct llm_weights_entry *e = &w.tensors[i];
		CHECK(e->name && e->ndim >= 1 && e->ndim <= 4);
		CHECK(e->offset <= w.data_bytes && e->bytes <= w.data_bytes - e->offset);
	}
	llm_weights_manifest_free(&w);
	return 0;
}
