/* lower.h: lower one MLIR module to an object file, the work of llm-lower.
 *
 * Three stages, each an external tool run through llm_spawn under a
 * timeout: mlir-opt with the pass list of the module's kind
 * (share/llm/pipelines/<kind>.txt, which may load a transform script from
 * share/llm/transforms/), mlir-translate --mlir-to-llvmir, and llc.  The
 * intermediates live in a temporary directory next to the output; the
 * object is renamed into place only when every stage succeeded.  On a
 * failure the directory is kept, with the failing tool's stderr in
 * <stage>.log, and its path is returned for the diagnostic. */
#ifndef LLM_LOWER_H
#define LLM_LOWER_H

#include "../base/spawn.h"
#include "../base/util.h"

struct llm_lower {
	const char *input;    /* .mlir file, or "-" for stdin */
	const char *output;   /* object file, or "-" for stdout */
	const char *kind;     /* pipeline name: prefill, decode, glue, generic, ... */
	const char *share;    /* the share/llm directory */
	const char *mlir_opt; /* tool paths (or names looked up in PATH) */
	const char *mlir_translate;
	const char *llc;
	const char *objcopy;  /* llvm-objcopy, to keep only llm_* symbols global */
	const char *clang;    /* to resolve the target's features (target.h) */
	const char *cache;    /* directory of the content-addressed object cache, or NULL */
	const char *tuning;   /* the tuning table (tune.h), NULL: share/tuning.json */
	int cache_hit;        /* out: the object came from the cache */
	const char *triple;   /* NULL: the host */
	const char *cpu;      /* NULL: "native" for the host, the triple's default otherwise */
	const char *features; /* llc -mattr list, or NULL */
	double timeout;       /* seconds per tool; 0: none */
	int verbose;          /* echo commands and stage times on stderr */
	int keep;             /* keep the intermediate files even on success */
	char *kept;           /* out: the directory of intermediates left behind, or NULL */
};

/* Sets the module's tunable constants from the tuning table's entry for
 * the target's CPU (tune.h), puts in the target's form of the kernels it
 * declares, then runs the three stages, then localises every defined symbol but the
 * llm_* and _mlir_ciface_* ones (helpers such as the deallocation pass's
 * dealloc_helper would otherwise clash between objects).  With a cache
 * directory, the object is looked up first under a key over everything
 * that decides it: the input text, the expanded pass list and the files
 * it names (transform scripts), the int8 kernels of every form
 * (share/llm/kernels), the tuning table, the llc options, the tools' identities and, for
 * the host CPU, /proc/cpuinfo's model and flags.  A hit copies
 * the cached object; a miss stores the new one.  Returns 0, or -1 with llm_errmsg naming the
 * stage ("mlir-opt: exited with status 1"); the tool's stderr has then
 * been copied to our stderr and l->kept names the kept directory. */
int llm_lower_run(struct llm_lower *l);

/* The kind of a module when no -k is given: the llm.kind attribute of the
 * module in text (NULL: not read), else the leading word of the file name
 * (prefill..., decode..., glue...), else that of its directory.  Returns a
 * new string (prefill_kv folds into prefill), or NULL. */
char *llm_lower_guess_kind(const char *path, const char *text);

/* The pass list of a kind, share/pipelines/<name>.txt, as a new string;
 * NULL with llm_errmsg when the kind is malformed or has no pass list. */
char *llm_lower_pipeline(const char *share, const char *kind);

/* Reads a pass list: one mlir-opt argument per line, '#' comment lines
 * and blank lines skipped, leading and trailing blanks trimmed, "@share@"
 * replaced by share, "@transforms@" by transforms (the folder of the
 * target's transform scripts), "@bf16-expand@" by bf16_expand ("true"
 * or "false": arith-expand's include-bf16) and "@mpi-to-llvm@" by
 * mpi_to_llvm (the pass that lowers the mpi dialect, for a module with
 * mpi ops, else "": a line left empty is skipped).
 * Appends the arguments to argv and returns their count, or -1 with
 * llm_errmsg. */
int llm_pipeline_read(const char *path, const char *share, const char *transforms, const char *bf16_expand,
    const char *mpi_to_llvm, struct llm_argv *argv);

/* The share/llm directory: $LLM_SHARE, else <dir of the executable>/../share/llm
 * when it holds pipelines/, else fallback.  Returns a new string. */
char *llm_share_dir(const char *fallback);

#endif
