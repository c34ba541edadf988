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
	int stdout_to_stderr;    /* stdout goes where stderr goes (not with
	                          * stdout_path) */
};

/* Returns 0 when the tool exited with status 0.  Otherwise -1 with
 * llm_errmsg "TOOL: exited with status N", "TOOL: killed by signal N",
 * "TOOL: timed out after N s" or "TOOL: cannot run: ...".  The tool's
 * stderr is appended to *err when err is not NULL, else passed through. */
int llm_spawn(char *const argv[], const struct llm_spawn_opts *opts, struct llm_buf *err);

/* A tool's argument vector under construction: v[n] is NULL, every
 * argument an owned copy.  {0} is the empty vector. */
struct llm_argv {
	char **v;
	size_t n;
};
void llm_argv_add(struct llm_argv *a, const char *s);
void llm_argv_addf(struct llm_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Each word of s, split at blanks ($CC as a shell would give it, without
 * quoting). */
void llm_argv_words(struct llm_argv *a, const char *s);
void llm_argv_free(struct llm_argv *a);

/* The LLVM tools: $LLVM_BINDIR when set, else the directory configured
 * at build time (config.mk's LLVM_BINDIR). */
const char *llm_llvm_bindir(void);
/* Tool name: $env when set and not empty (a path or a name on $PATH),
 * else llm_llvm_bindir()/name.  A new string. */
char *llm_llvm_tool(const char *env, const char *name);
/* LLVM's libraries: $LLVM_LIBDIR when set, else the lib beside
 * llm_llvm_bindir().  A new string. */
char *llm_llvm_libdir(void);
/* Clang's runtime archive rt (llm_target_builtins: "libclang_rt...a") of
 * the LLVM release built with (LLM_LLVM_VERSION's major) under libdir.  A
 * new string. */
char *llm_llvm_builtins(const char *libdir, const char *rt);
/* The file posix_spawnp runs for tool: tool itself when it has a slash,
 * else the first executable on $PATH.  A new string, or NULL. */
char *llm_which(const char *tool);

#endif
