/* fuzz_chat.c: libFuzzer target for a conversation (lib/text/chat.c,
 * llm_chat_parse: the JSON llm-run --render reads) rendered with every
 * built-in template (lib/text/jinja.c).  A parsed conversation renders, or is refused with a
 * message, under each template, and the ranges of the messages' text are
 * sorted and inside the rendering; a refused input leaves one line naming
 * it.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/text/chat.h"
#include "../../lib/base/util.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct llm_chat c = {0};

	if (llm_chat_parse(&c, (const char *)data, size, "fuzz.json") < 0) {
		CHECK(strncmp(llm_errmsg(), "fuzz.json", 9) == 0 && json_array_size(c.messages) == 0);
		llm_chat_free(&c); /* its array may stay allocated */
		return 0;
	}
	for (size_t t = 0; llm_chat_builtin(t); t++)
		for (int gen = 0; gen < 2; gen++) {
			struct llm_chat_template tmpl = LLM_CHAT_TEMPLATE_INIT;
			struct llm_buf out = {0};
			struct llm_spans sp = {0};
			CHECK(llm_chat_template_builtin(&tmpl, llm_chat_builtin(t)) == 0);
			int rc = llm_chat_render(&tmpl, &c, gen, &out, gen ? &sp : NULL);
			llm_chat_template_free(&tmpl);
			CHECK(rc == 0 || rc == -1);
			CHECK(rc < 0 || (out.p && strlen(out.p) <= out.len));
			/* the message ranges: sorted, apart, not empty, inside */
			for (size_t i = 0; rc == 0 && i < sp.n; i++)
				CHECK(sp.r[i][0] < sp.r[i][1] && sp.r[i][1] <= out.len &&
				    (i == 0 || sp.r[i - 1][1] < sp.r[i][0]));
			llm_spans_free(&sp);
			llm_buf_free(&out);
		}
	llm_chat_free(&c);
	return 0;
}
