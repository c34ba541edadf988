/* cache.h: a GGUF file or a Hugging Face checkpoint directory given as
 * the model, compiled once into a cache of bundles (cache.c).  Shared by
 * llm-run and llm-serve, which link cache.o: the one way a program turns
 * such a source into a bundle. */
#ifndef LLM_RUN_CACHE_H
#define LLM_RUN_CACHE_H

#include <stdint.h>

struct run_cache {
	const char *dir; /* --cache-dir; NULL: the environment's */
	int off;         /* --no-cache: compile for this run only */
	int verbose;
	const char *user_flags; /* --import-flags: llm-import's options, as words */
	char *import_flags;     /* run_cache_variant's: what the build is keyed and compiled with */
};
/* The build a run asks for, beyond the default one: --import-flags, and
 * the options of llm-run and llm-serve that a build fixes: -c past the
 * default context bound (LLM_DEFAULT_MAX_CONTEXT: --max-context), -ctk
 * and -ctv (NULL: not given; --kv-dtype).  A refusal is a usage error. */
void run_cache_variant(struct run_cache *c, int64_t ctx, const char *ctk, const char *ctv);
/* The bundle to open for -m src: NULL when src is a bundle or a build
 * directory (opened as it is), else the cache entry's (compiled first if
 * need be) or, with --no-cache, a temporary one, removed at exit.  A new
 * string.  Errors are fatal (llm_fatal). */
char *run_cache_model(const char *src, const struct run_cache *c);
/* --list-cache (its entries on stdout, a line each: see llm-run(1)),
 * --prune-cache (prune: remove them, and what interrupted builds left). */
void run_cache_list(const struct run_cache *c, int prune);

#endif
