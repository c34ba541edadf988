/* fuzz_tokenize.c: libFuzzer target for the encoder and decoder
 * (lib/text/tokenizer.c) on arbitrary bytes.  The tokenizers are the
 * synthetic ones of tests/fixtures/tokenizer/ (every pre-tokenizer and
 * model kind) and, when tests/tools/fetch-golden-tokenizers has run, the
 * real Llama 2/3 and DeepSeek ones.  The input's first byte picks the
 * tokenizer and whether the post-processor runs; the rest is the text.
 * Text that is not UTF-8 is refused with a message; any other gives ids
 * inside the vocabulary that decode, with and without the special
 * tokens, to valid UTF-8, and each id's bytes can be streamed.  Build and
 * run: see tests/fuzz/README. */
#include <glob.h>

#include "../../lib/text/tokenizer.h"
#include "../../lib/base/util.h"
#include "fuzzfile.h"

#ifndef LLM_SRCDIR
#define LLM_SRCDIR "."
#endif
#define MAXTOK 16

static struct llm_tokenizer *toks[MAXTOK];
static int ntoks;

static void
load_glob(const char *pattern)
{
	glob_t g;

	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc && ntoks < MAXTOK; i++) {
		struct llm_tokenizer *t = llm_tokenizer_load(g.gl_pathv[i]);
		if (!t) {
			fprintf(stderr, "fuzz_tokenize: %s\n", llm_errmsg());
			abort();
		}
		toks[ntoks++] = t;
	}
	globfree(&g);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	load_glob(LLM_SRCDIR "/tests/fixtures/tokenizer/*.tokenizer.json");
	load_glob(LLM_SRCDIR "/tests/npm/node_modules/.cache/tokenizers/*/tokenizer.json");
	CHECK(ntoks > 0);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_tokenizer *t;
	int64_t *ids = NULL, nv;
	size_t n = 0;
	int special;

	if (size == 0)
		return 0;
	t = toks[data[0] % ntoks];
	special = (data[0] / ntoks) & 1;
	nv = llm_tokenizer_n_vocab(t);
	if (llm_tokenizer_encode(t, (const char *)data + 1, size - 1, special, &ids, &n) < 0) {
		CHECK(!strchr(llm_errmsg(), '\n'));
		free(ids);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct llm_buf b = {0};
		CHECK(ids[i] >= 0 && ids[i] < nv);
		CHECK(llm_tokenizer_token_bytes(t, ids[i], &b) == 0);
		llm_buf_free(&b);
	}
	for (int skip = 0; skip < 2; skip++) {
		struct llm_buf out = {0};
		llm_tokenizer_decode(t, ids, n, skip, &out);
		CHECK(llm_utf8_valid(out.p ? out.p : "", out.len));
		llm_buf_free(&out);
	}
	free(ids);
	return 0;
}
