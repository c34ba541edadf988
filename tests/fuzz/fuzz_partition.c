/* fuzz_partition.c: libFuzzer target for partition.json as
 * llm-verify-partition reads it (lib/compiler/ir/verifypart.c,
 * llm_verify_partition), in a tiny build (fuzzbuild.h): the input is
 * the build's parts/partition.json, the model, the phases and the parts
 * stay the build's.  Trouble (status 2) is one line naming a file of the
 * build; a verdict is a report whose "valid", count of violations and
 * list of violations agree.  The MLIR it parses is the build's own, so
 * the work is the reader and the checks, not MLIR's parser (fuzz_mlir).
 * llm-link's reader of the same file (its kernels' and glues' paths) is
 * a subset of this one.  Build and run: see tests/fuzz/README. */
#include <jansson.h>

#include "../../lib/compiler/ir/verifypart.h"
#include "../../lib/base/util.h"
#include "fuzzbuild.h"

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_build(1);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_file("parts/partition.json", data, size);
	json_t *r, *viol, *counts;
	int rc = llm_verify_partition(path, &r);

	if (rc < 0) {
		CHECK(r == NULL);
		fuzz_check_message(llm_errmsg(), fuzz_dir);
		return 0;
	}
	CHECK(rc == 0 || rc == 1);
	CHECK(json_is_object(r));
	viol = json_object_get(r, "violations"); /* borrowed */
	counts = json_object_get(r, "counts");   /* borrowed */
	CHECK(json_is_array(viol) && json_is_object(counts));
	CHECK((rc == 1) == (json_array_size(viol) > 0));
	CHECK(json_is_boolean(json_object_get(r, "valid")) && json_is_true(json_object_get(r, "valid")) == (rc == 0));
	CHECK(json_integer_value(json_object_get(counts, "violations")) == (json_int_t)json_array_size(viol));
	for (size_t i = 0; i < json_array_size(viol); i++) {
		json_t *v = json_array_get(viol, i);
		CHECK(json_is_string(json_object_get(v, "message")) && json_is_string(json_object_get(v, "kind")));
	}
	json_decref(r);
	return 0;
}
