/* fuzzfile.h: the input as a file, for the readers that take a path (the
 * safetensors header, config.json, the bundle, weights.json).  Each
 * process writes into a directory of its own, made on the first call
 * under $TMPDIR (default /tmp) and removed at exit; each call replaces
 * the file called name there with the input and returns its path. */
#ifndef FUZZFILE_H
#define FUZZFILE_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static char fuzz_dir[256];

static inline void
fuzz_cleanup(void)
{
	static const char *const names[] = {"model.safetensors", "model.safetensors.index.json",
		"model-00001-of-00001.safetensors", "config.json", "generation_config.json", "model.llm",
		"weights.json"};
	char p[320];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", fuzz_dir, names[i]);
		unlink(p);
	}
	rmdir(fuzz_dir);
}

/* The path of the file `name` in the process's directory (made if need be). */
static inline const char *
fuzz_path(const char *name)
{
	static char path[320];

	if (!fuzz_dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/llm-fuzz.XXXXXX", t && *t ? t : "/tmp");
		CHECK(mkdtemp(fuzz_dir) != NULL);
		atexit(fuzz_cleanup);
	}
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
	return path;
}

/* Write data as the file `name`; its path. */
static inline const char *
fuzz_file(const char *name, const uint8_t *data, size_t size)
{
	const char *path = fuzz_path(name);
	FILE *f = fopen(path, "wb");

	CHECK(f != NULL);
	CHECK(fwrite(data, 1, size, f) == size);
	CHECK(fclose(f) == 0);
	return path;
}

/* A failure's message: one line that starts with the path at fault. */
static inline void
fuzz_check_message(const char *msg, const char *path)
{
	CHECK(strncmp(msg, path, strlen(path)) == 0 && !strchr(msg, '\n'));
}
#endif
