/* Unit tests for lib/text/reply.c: replies of each template family
 * split into content, reasoning and tool calls (plain text, a thought, one
 * call, parallel calls, a thought then a call, malformed call JSON,
 * unicode and escaped quotes in arguments); every prefix of each reply
 * parsed as a partial one gives content and reasoning that only grow and
 * calls that only come whole, ending as the whole reply's; the grammar
 * for tool_choice "required" takes a well-formed call of each format and
 * the parser reads back what it took. */
#include <string.h>

#include "../../lib/text/grammar.h"
#include "../../lib/text/reply.h"
#include "../../lib/base/util.h"
#include "t.h"

#define DS(x) "<\xef\xbd\x9c" x "\xef\xbd\x9c>"
#define DS_SEP DS("tool\xe2\x96\x81sep")
#define DS_CALLS DS("tool\xe2\x96\x81" "calls\xe2\x96\x81" "begin")
#define DS_CALLS_END DS("tool\xe2\x96\x81" "calls\xe2\x96\x81" "end")
#define DS_CALL DS("tool\xe2\x96\x81" "call\xe2\x96\x81" "begin")
#define DS_CALL_END DS("tool\xe2\x96\x81" "call\xe2\x96\x81" "end")

struct rcase {
	const char *format;
	int flags;
	const char *text;
	const char *content, *reasoning;
	const char *calls; /* the calls as compact JSON: [["name", "arguments"], ...] */
};

#define T LLM_REPLY_TOOLS
#define R LLM_REPLY_REASONING
#define K LLM_REPLY_THINKING

static const struct rcase cases[] = {
	/* hermes (Qwen2.5, Qwen3) */
	{"hermes", T | R, "Hello there.", "Hello there.", "", "[]"},
	{"hermes", T | R, "<think>\nhm, weather\n</think>\n\nIt is sunny.", "It is sunny.", "hm, weather", "[]"},
	{"hermes", T | R,
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", "",
		"[[\"get_weather\",\"{\\\"city\\\":\\\"Paris\\\"}\"]]"},
	{"hermes", T | R,
		"<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
		"\"arguments\": {\"x\": 1}}\n</tool_call>",
		"", "", "[[\"a\",\"{}\"],[\"b\",\"{\\\"x\\\":1}\"]]"},
	{"hermes", T | R,
		"<think>I should call it.</think>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"q\": \"caf\xc3\xa9 "
		"\\\"quoted\\\"\"}}\n</tool_call>",
		"", "I should call it.", "[[\"f\",\"{\\\"q\\\":\\\"caf\xc3\xa9 \\\\\\\"quoted\\\\\\\"\\\"}\"]]"},
	{"hermes", T | R, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call> after",
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": }\n</tool_call> after", "", "[]"},
	/* without tools, a call is text; without reasoning, a thought is */
	{"hermes", R, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>",
		"<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "", "[]"},
	{"hermes", T, "<think>x</think>y", "<think>x</think>y", "", "[]"},
	/* arguments given as a JSON string stay that string */
	{"hermes", T | R, "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", "", "",
		"[[\"f\",\"{\\\"a\\\": 1}\"]]"},
	/* DeepSeek-R1: the prompt opened the thought */
	{"deepseek-r1", T | R | K, "Let me see.\n</think>\n\nThe answer is 4.", "The answer is 4.", "Let me see.",
		"[]"},
	{"deepseek-r1", T | R | K, "still thinking", "", "still thinking", "[]"},
	{"deepseek-r1", T | R, "The answer is 4.", "The answer is 4.", "", "[]"},
	{"deepseek-r1", T | R | K,
		"ok</think>\n\n" DS_CALLS DS_CALL "function" DS_SEP
		"get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS_CALL_END DS_CALL "function" DS_SEP
		"get_time\n```json\n{}\n```" DS_CALL_END DS_CALLS_END,
		"", "ok", "[[\"get_weather\",\"{\\\"city\\\":\\\"Paris\\\"}\"],[\"get_time\",\"{}\"]]"},
	{"deepseek-r1", T | R,
		DS_CALLS DS_CALL "function" DS_SEP "f\n```json\n{\"a\": [1, 2}\n```" DS_CALL_END DS_CALLS_END,
		DS_CALL "function" DS_SEP "f\n```json\n{\"a\": [1, 2}\n```" DS_CALL_END, "", "[]"},
	/* no name before the separator: text, however the reply goes on (found by fuzz_reply) */
	{"deepseek-r1", T | R, DS_CALL "functiona<think>x</think> y" DS_SEP "f\n```json\n{}\n```" DS_CALL_END,
		DS_CALL "functiona<think>x</think> y" DS_SEP "f\n```json\n{}\n```" DS_CALL_END, "", "[]"},
	{"mistral", T | R, "[TOOL_CALLS]not a name[ARGS]{}", "[TOOL_CALLS]not a name[ARGS]{}", "", "[]"},
	/* llama 3.x: a reply that is a JSON call, or after <|python_tag|> */
	{"llama3", T | R, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", "", "",
		"[[\"get_weather\",\"{\\\"city\\\":\\\"Oslo\\\"}\"]]"},
	{"llama3", T | R, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {}}",
		"", "", "[[\"f\",\"{}\"],[\"g\",\"{}\"]]"},
	/* what follows the calls and is not JSON is text after them (found by fuzz_reply) */
	{"llama3", T | R, "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}[THINK]..", "[THINK]..", "",
		"[[\"f\",\"{}\"]]"},
	{"llama3", T | R, "Sure: {\"name\": \"f\"} is JSON.", "Sure: {\"name\": \"f\"} is JSON.", "", "[]"},
	{"llama3", T | R, "{\"a\": 1}", "{\"a\": 1}", "", "[]"},
	/* Mistral: the JSON array, and name[ARGS]{...} */
	{"mistral", T | R, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": \"\xe2\x82\xac\"}}]", "", "",
		"[[\"f\",\"{\\\"x\\\":\\\"\xe2\x82\xac\\\"}\"]]"},
	{"mistral", T | R, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}[TOOL_CALLS]g[ARGS]{}", "", "",
		"[[\"get_weather\",\"{\\\"city\\\":\\\"Rome\\\"}\"],[\"g\",\"{}\"]]"},
	{"mistral", T | R, "[THINK]plan[/THINK]Done.", "Done.", "plan", "[]"},
	/* Phi-4-mini */
	{"phi4", T | R, "<|tool_call|>[{\"name\": \"f\", \"arguments\": {\"n\": 2}}]<|/tool_call|>", "", "",
		"[[\"f\",\"{\\\"n\\\":2}\"]]"},
	{"phi4", T | R, "functools[{\"name\": \"f\", \"arguments\": {}}]", "", "", "[[\"f\",\"{}\"]]"},
	/* gpt-oss's harmony */
	{"harmony", T | R,
		"<|channel|>analysis<|message|>User wants weather.<|end|><|start|>assistant<|channel|>commentary "
		"to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Lima\"}",
		"", "User wants weather.", "[[\"get_weather\",\"{\\\"city\\\":\\\"Lima\\\"}\"]]"},
	{"harmony", T | R,
		"<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final<|message|>Four.", "Four.",
		"Easy.", "[]"},
	/* a message to a function that is not JSON is text, the end marker held back (found by fuzz_reply) */
	{"harmony", T | R, "<|channel|>commentary to=functions.f<|message|>Simple.<|end|>", "Simple.", "", "[]"},
	/* the plain format: all is content */
	{"plain", T | R, "<think>x</think><tool_call>{}</tool_call>", "<think>x</think><tool_call>{}</tool_call>", "",
		"[]"},
};

static char *
calls_of(const struct llm_reply *r)
{
	json_t *a = json_array();
	size_t i;
	json_t *c;
	json_array_foreach (r->calls, i, c)
		json_array_append_new(a,
		    json_pack("[O, O]", json_object_get(c, "name"), json_object_get(c, "arguments")));
	char *s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

T_TEST(replies_split_by_format)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rcase *c = &cases[i];
		const struct llm_reply_format *f = llm_reply_format_named(c->format);
		struct llm_reply r = {0};
		T_CHECKF(f != NULL, "%s", c->format);
		llm_reply_parse(f, c->text, strlen(c->text), c->flags, &r);
		char *calls = calls_of(&r);
		T_CHECKF(strcmp(r.content.p, c->content) == 0, "case %zu: content '%s'", i, r.content.p);
		T_CHECKF(strcmp(r.reasoning.p, c->reasoning) == 0, "case %zu: reasoning '%s'", i, r.reasoning.p);
		T_CHECKF(strcmp(calls, c->calls) == 0, "case %zu: calls %s", i, calls);
		free(calls);
		llm_reply_free(&r);
	}
}

/* 1 when a is a prefix of b. */
static int
starts(const char *b, const char *a)
{
	return strncmp(a, b, strlen(a)) == 0;
}

T_TEST(every_prefix_parsed_partial_only_grows)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rcase *c = &cases[i];
		const struct llm_reply_format *f = llm_reply_format_named(c->format);
		struct llm_reply whole = {0}, prev = {0}, r = {0};
		size_t n = strlen(c->text);
		llm_reply_parse(f, c->text, n, c->flags, &whole);
		llm_reply_parse(f, "", 0, c->flags | LLM_REPLY_PARTIAL, &prev);
		char *wcalls = calls_of(&whole);
		for (size_t k = 1; k <= n; k++) {
			if (k < n && (c->text[k] & 0xC0) == 0x80)
				continue; /* a stream's text never ends inside a character */
			llm_reply_parse(f, c->text, k, c->flags | LLM_REPLY_PARTIAL, &r);
			T_CHECKF(starts(r.content.p, prev.content.p) && starts(r.reasoning.p, prev.reasoning.p),
			    "case %zu at %zu: '%s' after '%s'", i, k, r.content.p, prev.content.p);
			T_CHECKF(starts(whole.content.p, r.content.p) && starts(whole.reasoning.p, r.reasoning.p),
			    "case %zu at %zu: '%s' not a start of '%s'", i, k, r.content.p, whole.content.p);
			char *calls = calls_of(&r);
			/* the calls so far are the whole reply's first ones */
			size_t m = strlen(calls);
			int ok = json_array_size(r.calls) == 0 || strncmp(calls, wcalls, m - 1) == 0;
			free(calls);
			T_CHECKF(ok && json_array_size(r.calls) >= json_array_size(prev.calls), "case %zu at %zu", i,
			    k);
			struct llm_reply t = prev;
			prev = r;
			r = t;
		}
		free(wcalls);
		llm_reply_free(&whole);
		llm_reply_free(&prev);
		llm_reply_free(&r);
	}
}

T_TEST(templates_are_recognised_by_their_markers)
{
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of("{{'<|im_start|>'}}{{'<tool_call>'}}")), "hermes"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of("<|im_start|>x</think>")), "think"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of("<|start_header_id|>")), "llama3"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of(DS("Assistant") "<think>")), "deepseek-r1"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of("[INST] [TOOL_CALLS]")), "mistral"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of("<|channel|>")), "harmony"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of("<|im_start|>")), "plain"));
	T_CHECK(!strcmp(llm_reply_format_name(llm_reply_format_of(NULL)), "plain"));
	T_CHECK(llm_reply_format_named("nope") == NULL);
	const struct llm_reply_format *ds = llm_reply_format_named("deepseek-r1");
	T_CHECK(llm_reply_prompt_thinking(ds, "x<think>\n", 9));
	T_CHECK(!llm_reply_prompt_thinking(ds, "x</think>\n", 10));
	T_CHECK(llm_reply_marker(ds, DS_CALL, strlen(DS_CALL)));
	T_CHECK(!llm_reply_marker(ds, "<|im_end|>", 10));
}

/* The grammar of each format's calls takes a call written its way, and the
 * parser reads the call back. */
T_TEST(the_tool_grammar_takes_a_call_and_the_parser_reads_it)
{
	static const char tools[] =
	    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
	    "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}, \"days\": "
	    "{\"type\": \"integer\"}}, \"required\": [\"city\"]}}}, "
	    "{\"type\": \"function\", \"function\": {\"name\": \"now\"}}]";
	static const struct {
		const char *format, *text; /* the text after the prefix */
		int parallel, ok;
	} w[] = {
		{"hermes",
			"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}"
			"\n</tool_call>",
			0, 1},
		{"hermes",
			"{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
			"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>",
			1, 1},
		{"hermes", "{\"name\": \"get_weather\", \"arguments\": {\"days\": 2}}\n</tool_call>", 0, 0},
		{"hermes", "{\"name\": \"other\", \"arguments\": {}}\n</tool_call>", 0, 0},
		{"llama3", "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", 0, 1},
		{"mistral", "{\"name\": \"now\", \"arguments\": {}}]", 0, 1},
		{"phi4", "{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"now\", \"arguments\": {}}]", 1, 1},
		{"deepseek-r1", "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS_CALL_END DS_CALLS_END, 0, 1},
	};
	json_t *tj = json_loads(tools, 0, NULL);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		const struct llm_reply_format *f = llm_reply_format_named(w[i].format);
		char *prefix = NULL, *g = llm_reply_tool_grammar(f, tj, NULL, w[i].parallel, 0, &prefix);
		T_CHECKF(g != NULL, "%s: %s", w[i].format, llm_errmsg());
		struct llm_grammar *gr = llm_grammar_parse(g, strlen(g));
		struct llm_grammar_state st = {0};
		T_CHECK(gr && llm_grammar_start(gr, &st) == 0);
		int took = llm_grammar_accept(gr, &st, w[i].text, strlen(w[i].text)) > 0 && llm_grammar_complete(&st);
		llm_grammar_state_free(&st);
		llm_grammar_free(gr);
		T_CHECKF(took == w[i].ok, "case %zu (%s): took %d", i, w[i].format, took);
		if (took) {
			char *text = llm_xasprintf("%s%s", prefix, w[i].text);
			struct llm_reply r = {0};
			llm_reply_parse(f, text, strlen(text), LLM_REPLY_TOOLS | LLM_REPLY_REASONING, &r);
			T_CHECKF(json_array_size(r.calls) == (w[i].parallel ? 2u : 1u) && r.content.len == 0,
			    "case %zu: %zu calls, content '%s'", i, json_array_size(r.calls), r.content.p);
			llm_reply_free(&r);
			free(text);
		}
		free(g);
		free(prefix);
	}
	/* one function named; a name of no tool; a format without calls */
	char *prefix = NULL, *g = llm_reply_tool_grammar(llm_reply_format_named("hermes"), tj, "now", 0, 0, &prefix);
	T_CHECK(g && !strstr(g, "get_weather") && strstr(g, "now"));
	free(g), free(prefix);
	T_CHECK(!llm_reply_tool_grammar(llm_reply_format_named("hermes"), tj, "nope", 0, 0, &prefix));
	T_CHECK(strstr(llm_errmsg(), "no tool is named 'nope'"));
	T_CHECK(!llm_reply_tool_grammar(llm_reply_format_named("plain"), tj, NULL, 0, 0, &prefix));
	json_t *bad = json_loads("[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
				 "{\"type\": \"string\", \"pattern\": \"x\"}}}]",
	    0, NULL);
	T_CHECK(!llm_reply_tool_grammar(llm_reply_format_named("hermes"), bad, NULL, 0, 0, &prefix));
	T_CHECKF(strstr(llm_errmsg(), "tools[0].function.parameters"), "%s", llm_errmsg());
	json_decref(bad);
	json_decref(tj);
}

int
main(void)
{
	T_RUN(replies_split_by_format);
	T_RUN(every_prefix_parsed_partial_only_grows);
	T_RUN(templates_are_recognised_by_their_markers);
	T_RUN(the_tool_grammar_takes_a_call_and_the_parser_reads_it);
	return T_DONE();
}
