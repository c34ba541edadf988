/* fuzz_mlir.c: libFuzzer target for the MLIR text llm-split and
 * llm-verify-partition read (lib/compiler/ir/: the MLIR C API's parser,
 * then split.c's and verifypart.c's walks of what it gives).  The input
 * is the decode phase (decode.mlir) of a tiny build (fuzzbuild.h); the
 * build's model.json and other phases stay.  llm_split either refuses it
 * in one line naming a file of the build, or writes a partition set that
 * llm_verify_partition finds valid.  MLIR itself is not instrumented:
 * the fuzzer's coverage is that of lib/compiler/ir/, and its mutations
 * mostly end at a parse error.  Build and run: see tests/fuzz/README. */
#include <jansson.h>

#include "../../lib/compiler/ir/split.h"
#include "../../lib/compiler/ir/verifypart.h"
#include "../../lib/formats/model.h"
#include "../../lib/base/util.h"
#include "fuzzbuild.h"

static struct llm_model model;
static char *partsdir, *partition;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_build(0);
	if (llm_model_load(&model, fuzz_path("model.json")) < 0) {
		fprintf(stderr, "fuzz_mlir: %s\n", llm_errmsg());
		abort();
	}
	partsdir = llm_xstrdup(fuzz_path("parts"));
	partition = llm_xstrdup(fuzz_path("parts/partition.json"));
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_split_opts o = {LLM_SPLIT_LAYER, partsdir, 0};
	struct llm_split_stats st;
	json_t *r;
	int rc;

	fuzz_file("decode.mlir", data, size);
	if (llm_split(&model, &o, &st) < 0) {
		fuzz_check_message(llm_errmsg(), fuzz_dir);
		return 0;
	}
	if ((rc = llm_verify_partition(partition, &r)) != 0) {
		char *s = rc > 0 ? json_dumps(json_object_get(r, "violations"), JSON_COMPACT) : NULL;
		fprintf(stderr, "fuzz_mlir: split, but not valid: %s\n", s ? s : llm_errmsg());
		abort();
	}
	json_decref(r);
	return 0;
}
