/* common.c: the output helpers of llm-run and its modules (run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/util.h"
#include "run.h"

void
run_write(const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, stdout) != n)
		llm_fatal("stdout: write error:");
}

void
run_finish_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		llm_fatal("stdout: write error:");
}

void
run_print_json(json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!s)
		llm_fatal("out of memory");
	run_write(s, strlen(s));
	run_write("\n", 1);
	free(s);
	json_decref(j);
	if (fflush(stdout) != 0)
		llm_fatal("stdout: write error:");
}

double
run_rate(double n, double secs)
{
	return secs > 0 ? n / secs : 0;
}

/* From /proc/self/statm. */
long
run_rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

char *
run_read_input(const char *path, size_t *len)
{
	char *data;

	if (strcmp(path, "-") == 0) {
		struct llm_buf b = {0};
		char chunk[65536];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
			llm_buf_add(&b, chunk, n);
		if (ferror(stdin))
			llm_fatal("stdin: read error:");
		llm_buf_add(&b, "", 1);
		*len = b.len - 1;
		return b.p;
	}
	if (llm_read_file(path, &data, len) < 0)
		llm_fatal("%s", llm_errmsg());
	return data;
}
