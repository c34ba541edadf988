/* fuzzbuild.h: a tiny build, for the targets that read one (fuzz_partition,
 * fuzz_mlir).  make fuzz-build makes it in build/fuzz/tiny/out with
 * pipelines/model.mk (a one-layer model of mkmodel, split by layer and
 * verified); $LLM_FUZZ_BUILD names another.  The process copies its
 * model.json, its phases and, when asked, its parts/ into its own
 * directory (fuzzfile.h), which it removes at exit. */
#ifndef FUZZBUILD_H
#define FUZZBUILD_H
#include "fuzzfile.h"

#ifndef LLM_SRCDIR
#define LLM_SRCDIR "."
#endif

static void
fuzz_build_cleanup(void)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/parts' '%s'/*.mlir '%s/model.json'", fuzz_dir, fuzz_dir, fuzz_dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzzbuild: cannot remove %s's files\n", fuzz_dir);
}

/* Copies the build into the process's directory (with parts/ when parts
 * is set); its path. */
static inline const char *
fuzz_build(int parts)
{
	const char *src = getenv("LLM_FUZZ_BUILD");
	char cmd[2048];

	if (!src || !*src)
		src = LLM_SRCDIR "/build/fuzz/tiny/out";
	fuzz_path("model.json"); /* makes fuzz_dir */
	snprintf(cmd, sizeof(cmd),
	    "cd '%s' && cp --parents model.json prefill.mlir prefill_kv.mlir decode.mlir embed.mlir %s '%s'", src,
	    parts ? "parts/partition.json parts/*/*.mlir" : "", fuzz_dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "fuzzbuild: cannot copy the build %s (make fuzz-build makes it)\n", src);
		abort();
	}
	atexit(fuzz_build_cleanup); /* before fuzz_cleanup's rmdir */
	return fuzz_dir;
}
#endif
