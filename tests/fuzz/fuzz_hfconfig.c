/* fuzz_hfconfig.c: libFuzzer target for config.json and
 * generation_config.json (lib/formats/hfconfig.c, llm_hfconfig_load on a
 * directory).  The input up to its first NUL byte is config.json; what
 * follows, when there is a NUL, is generation_config.json.  A config that
 * loads keeps hfconfig.h's promises (sizes positive, heads dividing as the
 * family needs, token ids inside the vocabulary, at most LLM_MAX_EOS end
 * ids); a refused one leaves one line naming the file at fault.  Build
 * and run: see tests/fuzz/README. */
#include "../../lib/formats/hfconfig.h"
#include "../../lib/base/util.h"
#include "fuzzfile.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_hfconfig c;
	const uint8_t *nul = memchr(data, 0, size);
	size_t n = nul ? (size_t)(nul - data) : size;

	fuzz_file("config.json", data, n);
	if (nul)
		fuzz_file("generation_config.json", nul + 1, size - n - 1);
	else
		unlink(fuzz_path("generation_config.json"));
	if (llm_hfconfig_load(&c, fuzz_dir) < 0) {
		const char *msg = llm_errmsg();
		CHECK(strncmp(msg, fuzz_dir, strlen(fuzz_dir)) == 0 && !strchr(msg, '\n'));
		return 0;
	}
	CHECK(c.family_name[0] && memchr(c.family_name, 0, sizeof(c.family_name)));
	CHECK(c.hidden_size > 0 && c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 && c.head_dim > 0);
	CHECK(c.n_heads % c.n_kv_heads == 0);
	CHECK(c.intermediate_size > 0 && c.vocab_size > 0 && c.max_position_embeddings > 0);
	CHECK(c.rms_norm_eps > 0 && c.rope_theta > 0);
	CHECK(c.bos_id >= -1 && c.bos_id < c.vocab_size);
	CHECK(c.n_eos >= 0 && c.n_eos <= LLM_MAX_EOS);
	for (int i = 0; i < c.n_eos; i++)
		CHECK(c.eos_ids[i] >= 0 && c.eos_ids[i] < c.vocab_size);
	return 0;
}
