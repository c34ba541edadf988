/* fuzz_jinja.c: libFuzzer target for the template engine
 * (lib/text/jinja.c): the input is a template, parsed, then rendered
 * with a conversation that has a bit of everything (messages with tool
 * calls, tools, special tokens), as data and not.  A template parses or
 * is refused with one "fuzz.jinja:LINE:COL: " message; a parsed one
 * renders or fails the same way, and the data ranges of a rendering are
 * sorted, apart, not empty and inside it.  Build and run: see
 * tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/text/jinja.h"
#include "../../lib/base/util.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static const char context[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"},"
    " {\"role\": \"user\", \"content\": \"h\\u00e9 <|im_end|>\"},"
    " {\"role\": \"assistant\", \"content\": null, \"tool_calls\": [{\"type\": \"function\","
    " \"function\": {\"name\": \"f\", \"arguments\": {\"x\": 1.5, \"y\": [true, null]}}}]},"
    " {\"role\": \"tool\", \"content\": \"{\\\"ok\\\": 1}\", \"tool_call_id\": \"c1\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {}}}],"
    " \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"add_generation_prompt\": true}";

static int
located(const char *msg)
{
	return strncmp(msg, "fuzz.jinja:", 11) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static json_t *vars;
	static const char *const keys[] = {"messages", "tools", NULL};
	if (!vars)
		vars = json_loads(context, 0, NULL);
	CHECK(vars);
	struct llm_jinja *t = llm_jinja_parse((const char *)data, size, "fuzz.jinja");
	if (!t) {
		CHECK(located(llm_errmsg()));
		return 0;
	}
	for (int d = 0; d < 2; d++) {
		struct llm_buf out = {0};
		struct llm_spans sp = {0};
		int rc = llm_jinja_render(t, vars, d ? keys : NULL, &out, &sp);
		CHECK(rc == 0 || (rc == -1 && located(llm_errmsg()) && out.len == 0 && sp.n == 0));
		for (size_t i = 0; rc == 0 && i < sp.n; i++)
			CHECK(sp.r[i][0] < sp.r[i][1] && sp.r[i][1] <= out.len &&
			    (i == 0 || sp.r[i - 1][1] < sp.r[i][0]));
		CHECK(d || sp.n == 0);
		llm_spans_free(&sp);
		llm_buf_free(&out);
	}
	llm_jinja_free(t);
	return 0;
}
