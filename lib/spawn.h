/* spawn.h: run one external tool (mlir-opt, mlir-translate, llc, cc) with
 * posix_spawnp, under a timeout, keeping its stderr.
 *
 * The child runs in its own process group with stdin from /dev/null; on a
 * timeout or a fatal signal in the parent the whole group is killed. */
#ifndef LLM_SPAWN_H
#define LLM_SPAWN_H

#include "util.h"

struct llm_spawn_opts {
	const char *stdout_path; /* NULL: inherit stdout */
	double timeout;          /* seconds; 0: none */
	int verbose;             /* echo the command line to stderr */
};

/* Returns 0 when the tool exited with status 0.  Otherwise -1 with
 * llm_errmsg "TOOL: exited with status N", "TOOL: killed by signal N",
 * "TOOL: timed out after N s" or "TOOL: cannot run: ...".  The tool's
 * stderr is appended to *err when err is not NULL, else passed through. */
int llm_spawn(char *const argv[], const struct llm_spawn_opts *opts, struct llm_buf *err);

#endif
