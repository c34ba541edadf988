/* tokcheck: drive the tokenizer (lib/text/tokenizer.c, through the line
 * protocol of lib/text/toklines.c) from scripts, the way `llm-run
 * --tokenizer PATH --tokenize/--detokenize` does, for the golden tests
 * (tests/tokenizer.bats) and the speed measurement.
 *
 * --tokenize reads one JSON string per line on stdin and prints one JSON
 * array of ids per line (special tokens added only with --add-special);
 * --detokenize reads JSON arrays of ids and prints JSON strings (special
 * tokens dropped with --skip-special), escaped as JavaScript's
 * JSON.stringify escapes them so that the outputs compare byte for byte
 * with goldens written by node.  Both are llm_tokenizer_tokenize_lines /
 * detokenize_lines, as in llm-run.  Output is held until all input has been
 * read: a bad line gives "tokcheck: <stdin>:N: message", exit 1 and no
 * output.  --bench FILE encodes FILE line by line (newlines included) and
 * prints bytes, tokens, wall and processor seconds and MB/s (bytes per
 * processor second) of encoding alone.
 *
 * The tokenizer is a tokenizer.json, or a GGUF file (a name ending in
 * .gguf): its tokenizer.ggml.* arrays go straight to llm_tokenizer_build,
 * so that tests can check the tokenizer.json llm-import writes for it
 * against the tokenizer built from the same arrays. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../lib/formats/gguf.h"
#include "../../lib/text/gguf_tokenizer.h"
#include "../../lib/text/tokenizer.h"
#include "../../lib/text/toklines.h"
#include "../../lib/base/util.h"

static const char usage_str[] = "usage: tokcheck --tokenize [--add-special] tokenizer.json|model.gguf\n"
				"       tokcheck --detokenize [--skip-special] tokenizer.json|model.gguf\n"
				"       tokcheck --bench file tokenizer.json|model.gguf\n";

static _Noreturn void
usage(int code)
{
	fputs(usage_str, code ? stderr : stdout);
	exit(code);
}

/* Read all of stdin. */
static void
read_stdin(struct llm_buf *in)
{
	char buf[65536];
	size_t r;
	while ((r = fread(buf, 1, sizeof(buf), stdin)) > 0)
		llm_buf_add(in, buf, r);
	if (ferror(stdin))
		llm_fatal("<stdin>: read error:");
}

enum { MODE_NONE, MODE_TOKENIZE, MODE_DETOKENIZE, MODE_BENCH };

/* Processor time of this process: on a shared machine it measures one
 * core's work, where wall time measures the neighbours too. */
static double
cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
bench(struct llm_tokenizer *t, const char *path)
{
	char *text;
	size_t len, ntok = 0;
	int64_t *ids = NULL;
	if (llm_read_file(path, &text, &len) < 0)
		llm_fatal("%s", llm_errmsg());
	if (!llm_utf8_valid(text, len))
		llm_fatal("%s: not valid UTF-8", path);
	double t0 = llm_now(), c0 = cpu_now();
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - text) + 1 : len;
		size_t n = 0;
		if (llm_tokenizer_encode(t, text + i, e - i, 0, &ids, &n) < 0)
			llm_fatal("%s", llm_errmsg());
		ntok += n;
		i = e;
	}
	double dt = llm_now() - t0, dc = cpu_now() - c0;
	printf("%zu bytes, %zu tokens, %.3f s wall, %.3f s cpu, %.2f MB/s (cpu)\n", len, ntok, dt, dc,
	    dc > 0 ? len / dc / 1e6 : 0.0);
	free(ids);
	free(text);
}

int
main(int argc, char **argv)
{
	enum { OPT_TOKENIZE = 256, OPT_DETOKENIZE, OPT_ADD_SPECIAL, OPT_SKIP_SPECIAL, OPT_BENCH };
	static const struct option longopts[] = {
		{"add-special", no_argument, NULL, OPT_ADD_SPECIAL},
		{"bench", required_argument, NULL, OPT_BENCH},
		{"detokenize", no_argument, NULL, OPT_DETOKENIZE},
		{"help", no_argument, NULL, 'h'},
		{"skip-special", no_argument, NULL, OPT_SKIP_SPECIAL},
		{"tokenize", no_argument, NULL, OPT_TOKENIZE},
		{NULL, 0, NULL, 0},
	};
	int mode = MODE_NONE, add_special = 0, skip_special = 0, c;
	const char *bench_file = NULL;

	llm_setprog(argv[0]);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int m = MODE_NONE;
		/* one option a line */
		/* clang-format off */
		switch (c) {
		case 'h': usage(0);
		case OPT_ADD_SPECIAL: add_special = 1; break;
		case OPT_BENCH: m = MODE_BENCH; bench_file = optarg; break;
		case OPT_DETOKENIZE: m = MODE_DETOKENIZE; break;
		case OPT_SKIP_SPECIAL: skip_special = 1; break;
		case OPT_TOKENIZE: m = MODE_TOKENIZE; break;
		default: usage(LLM_EXIT_USAGE);
		}
		/* clang-format on */
		if (m != MODE_NONE) {
			if (mode != MODE_NONE && mode != m)
				usage(LLM_EXIT_USAGE);
			mode = m;
		}
	}
	if (optind != argc - 1 || mode == MODE_NONE || (add_special && mode != MODE_TOKENIZE) ||
	    (skip_special && mode != MODE_DETOKENIZE))
		usage(LLM_EXIT_USAGE);

	const char *path = argv[optind];
	size_t pl = strlen(path);
	struct llm_tokenizer *t;
	if (pl > 5 && strcmp(path + pl - 5, ".gguf") == 0) {
		struct llm_gguf g;
		struct llm_gguf_tokenizer gt;
		int rc;
		if (llm_gguf_open(&g, path) < 0 || (rc = llm_gguf_tokenizer_load(&gt, &g)) < 0)
			llm_fatal("%s", llm_errmsg());
		if (rc == 1)
			llm_fatal("%s: no tokenizer", path);
		t = llm_tokenizer_build(&gt.v, path);
		llm_gguf_tokenizer_free(&gt);
		llm_gguf_close(&g);
	} else {
		t = llm_tokenizer_load(path);
	}
	if (!t)
		llm_fatal("%s", llm_errmsg());
	if (mode == MODE_BENCH) {
		bench(t, bench_file);
		llm_tokenizer_free(t);
		return 0;
	}

	struct llm_buf in = {0}, out = {0};
	read_stdin(&in);
	int rc = mode == MODE_TOKENIZE ?
	    llm_tokenizer_tokenize_lines(t, in.p, in.len, "<stdin>", add_special ? LLM_TOK_ADD_SPECIAL : 0, &out) :
	    llm_tokenizer_detokenize_lines(t, in.p, in.len, "<stdin>", skip_special ? LLM_DETOK_SKIP_SPECIAL : 0, &out);
	if (rc < 0)
		llm_fatal("%s", llm_errmsg()); /* nothing has been written */
	if (fwrite(out.p, 1, out.len, stdout) != out.len || fflush(stdout) != 0 || ferror(stdout))
		llm_fatal("<stdout>: write error:");
	llm_buf_free(&in);
	llm_buf_free(&out);
	llm_tokenizer_free(t);
	return 0;
}
