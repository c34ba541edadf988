/* fuzz_reply.c: libFuzzer target for the reply parser (lib/text/reply.c):
 * the first byte picks the format and the flags, the rest is a reply's
 * text.  Text that is not UTF-8 is left alone (llm_chat_parse_reply
 * refuses it).  The whole parse gives valid UTF-8 strings and a message
 * that serialises; every prefix parsed as a partial reply (cut where a
 * character starts, as a stream cuts) gives content and reasoning that
 * start the next prefix's and the whole reply's, and calls that are the
 * whole reply's first ones.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/utf8.h"
#include "../../lib/base/util.h"
#include "../../lib/text/reply.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* clang-format off */
static int
starts(const char *b, const char *a)
{
	return strncmp(a, b, strlen(a)) == 0;
}
/* clang-format on */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t nformats = 0;
	while (llm_reply_format_list(nformats))
		nformats++;
	if (size < 1 || size > 2048)
		return 0;
	const struct llm_reply_format *f = llm_reply_format_named(llm_reply_format_list(data[0] % nformats));
	int flags = (data[0] / nformats) & (LLM_REPLY_TOOLS | LLM_REPLY_REASONING | LLM_REPLY_THINKING);
	const char *t = (const char *)data + 1;
	size_t n = size - 1;
	if (!llm_utf8_valid(t, n))
		return 0;
	struct llm_reply whole = {0}, prev = {0}, r = {0};
	llm_reply_parse(f, t, n, flags, &whole);
	CHECK(llm_utf8_valid(whole.content.p, whole.content.len) &&
	    llm_utf8_valid(whole.reasoning.p, whole.reasoning.len));
	json_t *m = llm_reply_message(&whole);
	char *s = json_dumps(m, JSON_COMPACT);
	CHECK(s != NULL);
	free(s);
	json_decref(m);
	char *wcalls = json_dumps(whole.calls, JSON_COMPACT);
	llm_reply_parse(f, t, 0, flags | LLM_REPLY_PARTIAL, &prev);
	for (size_t k = 1; k <= n; k++) {
		if (k < n && ((unsigned char)t[k] & 0xC0) == 0x80)
			continue;
		llm_reply_parse(f, t, k, flags | LLM_REPLY_PARTIAL, &r);
		CHECK(starts(r.content.p, prev.content.p) && starts(r.reasoning.p, prev.reasoning.p));
		CHECK(starts(whole.content.p, r.content.p) && starts(whole.reasoning.p, r.reasoning.p));
		CHECK(json_array_size(r.calls) >= json_array_size(prev.calls));
		CHECK(json_array_size(r.calls) <= json_array_size(whole.calls));
		for (size_t i = 0; i < json_array_size(r.calls); i++)
			CHECK(json_equal(json_array_get(r.calls, i), json_array_get(whole.calls, i)));
		struct llm_reply x = prev;
		prev = r;
		r = x;
	}
	free(wcalls);
	llm_reply_free(&whole);
	llm_reply_free(&prev);
	llm_reply_free(&r);
	return 0;
}
