/* common.c: the output helpers of llm-run and its modules (run.h), and
 * what -p, -f, --tokens (generate.c) and -i (chat.c) share. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/base/utf8.h"
#include "../../lib/base/util.h"
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

void
run_describe(const char *model, const struct llm *m, const struct llm_seq *s, double t_load)
{
	fprintf(stderr,
	    "%s: %s: %s, vocab %" PRId64 ", context %" PRId64 " of max_context %" PRId64 ", %" PRIu64
	    " bytes of weights mapped in place, code for %s, loaded in %.1f ms\n",
	    llm_prog, model, llm_model_desc(m), llm_vocab_size(m), llm_seq_context(s), llm_context_limit(m),
	    llm_model_size(m), llm_target_cpu(m) ? llm_target_cpu(m) : "this CPU", t_load * 1e3);
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

int
run_text_check(const char *what, const char *text, size_t len)
{
	const char *nul = memchr(text, 0, len);
	if (nul)
		return llm_seterr("%s: a NUL byte at byte %zu", what, (size_t)(nul - text));
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = llm_utf8_decode(text + i, len - i, &cp);
		if (!n)
			return llm_seterr("%s: not valid UTF-8 at byte %zu", what, i);
		i += n;
	}
	return 0;
}

volatile sig_atomic_t run_interrupted;

static void
on_sigint(int sig)
{
	(void)sig;
	run_interrupted = 1;
}

void
run_catch_sigint(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
}

/* -e: the escapes llama-cli processes in a prompt: \n \r \t \' \" \\. */
void
run_unescape(char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (*s != '\\' || !s[1]) {
			*o++ = *s;
			continue;
		}
		/* one escape a line */
		/* clang-format off */
		switch (*++s) {
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case '\'': case '"': case '\\': *o++ = *s; break;
		default: *o++ = '\\'; *o++ = *s; break;
		}
		/* clang-format on */
	}
	*o = 0;
}

struct llm_seq *
run_gen_start(struct gen *g, struct llm *m, const char *model, int64_t ctx, double t_load, const struct gen_opts *a)
{
	struct llm_seq *s;
	int64_t *probe = NULL;
	size_t nprobe;

	memset(g, 0, sizeof(*g));
	g->m = m;
	g->model = model;
	g->tok = llm_tokenize(m, "", 0, 0, &probe, &nprobe) != LLM_ERR_UNSUPPORTED;
	llm_free(probe);
	g->sp = a->sp;
	g->max_new = a->max_new;
	g->stop = a->stop;
	g->nstop = a->nstop;
	g->json = a->json;
	g->echo_end = -1;
	g->t_start = a->t_start;
	g->verbose = a->verbose;
	g->plain_input = a->plain_input;
	g->multiline = a->multiline;
	if (llm_seq_new(m, ctx, &s) != LLM_OK)
		llm_fatal("%s: %s", model, llm_errmsg());
	if (a->verbose)
		run_describe(model, m, s, t_load);
	return s;
}

_Noreturn void
run_usage_line(const char *msg)
{
	llm_warn("%s", msg);
	exit(LLM_EXIT_USAGE);
}
