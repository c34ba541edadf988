/* t.h: a minimal unit-test harness.  Each test file defines tests with
 * T_TEST(name) and lists them in main via T_RUN(name); the summary line
 * "N passed, N failed" is what CI reads.  A test fails on the first failed
 * T_CHECK and reports file:line and the condition. */
#ifndef LLM_T_H
#define LLM_T_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed, t_cur_failed;
static const char *t_cur;

#define T_TEST(name) static void name(void)
#define T_CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "FAIL %s: %s:%d: %s\n", t_cur, __FILE__, __LINE__, #cond); \
	t_cur_failed = 1; return; } } while (0)
#define T_CHECKF(cond, ...) do { if (!(cond)) { \
	fprintf(stderr, "FAIL %s: %s:%d: %s: ", t_cur, __FILE__, __LINE__, #cond); \
	fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); \
	t_cur_failed = 1; return; } } while (0)
#define T_RUN(name) do { t_cur = #name; t_cur_failed = 0; name(); \
	if (t_cur_failed) t_failed++; else t_passed++; } while (0)
#define T_DONE() (t_cleanup(), printf("%s: %d passed, %d failed\n", __FILE__, t_passed, t_failed), t_failed ? 1 : 0)

static char t_dir[256];

/* A fresh temporary directory for a test file's outputs, removed by
 * T_DONE. */
static inline const char *
t_tmpdir(void)
{
	char *dir = t_dir;
	if (!dir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(dir, sizeof(t_dir), "%s/llmtest.XXXXXX", base ? base : "/tmp");
		if (!mkdtemp(dir)) {
			perror("mkdtemp");
			exit(2);
		}
	}
	return dir;
}

static inline int
t_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static inline void
t_cleanup(void)
{
	if (t_dir[0])
		nftw(t_dir, t_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
