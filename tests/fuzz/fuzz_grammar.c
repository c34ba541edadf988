/* fuzz_grammar.c: libFuzzer target for the GBNF parser and matcher
 * (lib/text/grammar.c): the input is a grammar.  A refused one leaves
 * one "line L, column C: " message; a parsed one is fed its own text,
 * byte by byte, then masked against a small vocabulary, whose mask must
 * equal accepting each token alone.  A grammar too ambiguous to follow
 * (the matcher's bounds) stops the feeding with its message, and every
 * call after it fails the same way.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/text/grammar.h"
#include "../../lib/base/util.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* clang-format off */
/* 1 if the matcher gave up with its message, as every call from now on must. */
static int
too_ambiguous(struct llm_grammar *g, struct llm_grammar_state *st)
{
	uint8_t allowed[32];
	CHECK(strncmp(llm_errmsg(), "the grammar is too ambiguous to follow: ", 40) == 0);
	CHECK(llm_grammar_accept(g, st, "a", 1) == -1 && llm_grammar_mask(g, st, NULL, allowed) == -1);
	return 1;
}

static const char *const toks[] = {"a", "\"", "{", "}", " ", "\n", "0", "12", "ab", "\xc3", "\xa9", "\xc3\xa9",
	"x", "-", ":", ",", "[", "]", "true", NULL};
/* clang-format on */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_grammar *g = llm_grammar_parse((const char *)data, size);
	if (!g) {
		CHECK(strncmp(llm_errmsg(), "line ", 5) == 0 && strstr(llm_errmsg(), ", column "));
		return 0;
	}
	struct llm_grammar_state st = {0}, t = {0};
	size_t n = sizeof(toks) / sizeof(toks[0]), lens[32];
	for (size_t i = 0; i < n; i++)
		lens[i] = toks[i] ? strlen(toks[i]) : 0;
	struct llm_grammar_vocab *v = llm_grammar_vocab_new(n, toks, lens);
	uint8_t allowed[32];
	int over = llm_grammar_start(g, &st) < 0 && too_ambiguous(g, &st);
	for (size_t i = 0; i < size && i < 256 && !over; i++) {
		if (llm_grammar_mask(g, &st, v, allowed) < 0) {
			over = too_ambiguous(g, &st);
			break;
		}
		for (size_t k = 0; k < n && !over; k++) {
			llm_grammar_state_copy(&t, &st);
			int r = toks[k] ? llm_grammar_accept(g, &t, toks[k], lens[k]) : 0;
			if (r < 0)
				over = too_ambiguous(g, &st);
			else
				CHECK(allowed[k] == r);
		}
		int r = over ? 0 : llm_grammar_accept(g, &st, (const char *)data + i, 1);
		if (r < 0)
			over = too_ambiguous(g, &st);
		if (r <= 0)
			break;
	}
	CHECK(over || !llm_grammar_done(&st) || llm_grammar_complete(&st));
	llm_grammar_state_free(&st);
	llm_grammar_state_free(&t);
	llm_grammar_vocab_free(v);
	llm_grammar_free(g);
	return 0;
}
