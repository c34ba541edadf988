/* fuzz_lines.c: libFuzzer target for the line protocol of llm-run
 * --tokenize and --detokenize (lib/text/toklines.c) on arbitrary
 * bytes.  The tokenizers are the synthetic ones of tests/fixtures/tokenizer/.
 * The input's first byte picks the tokenizer, the direction and the flags
 * (--add-special, --raw, --no-special-in-input; --skip-special); the rest
 * is standard input.  A refusal is one line "<stdin>:LINE: message"; an
 * accepted input gives one output line per input line, each a JSON value
 * jansson reads back: an array of ids inside the vocabulary (tokenize) or
 * a string (detokenize).  Build and run: see tests/fuzz/README. */
#include <glob.h>
#include <jansson.h>

#include "../../lib/text/toklines.h"
#include "../../lib/base/util.h"
#include "fuzzfile.h"

#ifndef LLM_SRCDIR
#define LLM_SRCDIR "."
#endif
#define MAXTOK 8

static struct llm_tokenizer *toks[MAXTOK];
static int ntoks;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	glob_t g;
	(void)argc;
	(void)argv;
	if (glob(LLM_SRCDIR "/tests/fixtures/tokenizer/*.tokenizer.json", 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc && ntoks < MAXTOK; i++) {
			struct llm_tokenizer *t = llm_tokenizer_load(g.gl_pathv[i]);
			if (!t) {
				fprintf(stderr, "fuzz_lines: %s\n", llm_errmsg());
				abort();
			}
			toks[ntoks++] = t;
		}
		globfree(&g);
	}
	CHECK(ntoks > 0);
	return 0;
}

/* The lines of in[0, len): a final line without a newline counts. */
static size_t
count_lines(const char *in, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += in[i] == '\n';
	return n + (len > 0 && in[len - 1] != '\n');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	struct llm_tokenizer *t = toks[data[0] % ntoks];
	int sel = data[0] / ntoks, detok = sel & 1;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	struct llm_buf out = {0};
	int rc = detok ? llm_tokenizer_detokenize_lines(t, in, len, "<stdin>",
			     LLM_DETOK_STRICT | ((sel >> 1) & 1 ? LLM_DETOK_SKIP_SPECIAL : 0), &out) :
			 llm_tokenizer_tokenize_lines(t, in, len, "<stdin>", (sel >> 1) & 7, &out);
	if (rc < 0) {
		CHECK(strncmp(llm_errmsg(), "<stdin>:", 8) == 0 && !strchr(llm_errmsg(), '\n'));
		llm_buf_free(&out);
		return 0;
	}
	/* a line out for each line in, each a JSON value of the right kind */
	CHECK(count_lines(out.p ? out.p : "", out.len) == count_lines(in, len));
	int64_t nv = llm_tokenizer_n_vocab(t);
	for (size_t i = 0; i < out.len;) {
		const char *nl = memchr(out.p + i, '\n', out.len - i);
		CHECK(nl);
		json_error_t e;
		json_t *v = json_loadb(out.p + i, (size_t)(nl - out.p) - i, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
		CHECK(v);
		if (detok)
			CHECK(json_is_string(v));
		else {
			size_t k;
			json_t *x;
			CHECK(json_is_array(v));
			json_array_foreach (v, k, x)
				CHECK(json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) < nv);
		}
		json_decref(v);
		i = (size_t)(nl - out.p) + 1;
	}
	llm_buf_free(&out);
	return 0;
}
