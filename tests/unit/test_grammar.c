/* Unit tests for lib/text/grammar.c and json_schema.c: GBNF that parses
 * (grammars like llama.cpp's examples) and GBNF refused with its line and
 * column; the matcher on text fed whole, byte by byte and in every split
 * (inside UTF-8 sequences and literals); repetition bounds; completeness;
 * the vocabulary mask against token-by-token acceptance; and JSON
 * schemas, with texts that follow them accepted and texts that break
 * them refused. */
#include <string.h>

#include "../../lib/text/grammar.h"
#include "../../lib/base/util.h"
#include "t.h"

static const char arithmetic[] = "# arithmetic, as llama.cpp's example\n"
				 "root  ::= (expr \"=\" ws term \"\\n\")+\n"
				 "expr  ::= term ([-+*/] ws term)*\n"
				 "term  ::= ident | num | \"(\" ws expr \")\" ws\n"
				 "ident ::= [a-z] [a-z0-9_]* ws\n"
				 "num   ::= [0-9]+ ws\n"
				 "ws    ::= [ \\t\\n]*\n";

static const char json[] =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static const char list[] = "root ::= item+\n"
			   "# one item a line\n"
			   "item ::= \"- \" [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ \"\\n\"\n";

static const char chess[] = "root   ::= \"1. \" move \" \" move \"\\n\" (\"2. \" move \" \" move \"\\n\")?\n"
			    "move   ::= (pawn | nonpawn | castle) [+#]?\n"
			    "nonpawn ::= [NBKQR] [a-h]? [1-8]? \"x\"? [a-h] [1-8]\n"
			    "pawn   ::= ([a-h] \"x\")? [a-h] [1-8] (\"=\" [NBKQR])?\n"
			    "castle ::= \"O-O\" \"-O\"?\n";

static struct llm_grammar *
parse(const char *s)
{
	return llm_grammar_parse(s, strlen(s));
}

/* 1 if g takes text whole and it is complete there; the same fed in
 * every split into two and byte by byte. */
static int
matches(const char *gbnf, const char *text)
{
	struct llm_grammar *g = parse(gbnf);
	struct llm_grammar_state st = {0};
	size_t n = strlen(text);
	int whole, ok = 1;
	if (!g) {
		fprintf(stderr, "grammar refused: %s\n", llm_errmsg());
		return -1;
	}
	if (llm_grammar_start(g, &st) < 0)
		ok = 0;
	whole = llm_grammar_accept(g, &st, text, n) > 0 && llm_grammar_complete(&st);
	for (size_t cut = 0; cut <= n; cut++) {
		llm_grammar_start(g, &st);
		int r = llm_grammar_accept(g, &st, text, cut) && llm_grammar_accept(g, &st, text + cut, n - cut) &&
		    llm_grammar_complete(&st);
		if (r != whole)
			ok = 0;
	}
	if (llm_grammar_start(g, &st) < 0)
		ok = 0;
	int r = 1;
	for (size_t i = 0; i < n && r; i++)
		r = llm_grammar_accept(g, &st, text + i, 1);
	if ((r && llm_grammar_complete(&st)) != whole)
		ok = 0;
	llm_grammar_state_free(&st);
	llm_grammar_free(g);
	return ok ? whole : -1;
}

/* 1 if text can be taken (complete or not). */
static int
prefix_ok(const char *gbnf, const char *text)
{
	struct llm_grammar *g = parse(gbnf);
	struct llm_grammar_state st = {0};
	int r = llm_grammar_start(g, &st) < 0 ? -1 : llm_grammar_accept(g, &st, text, strlen(text));
	llm_grammar_state_free(&st);
	llm_grammar_free(g);
	return r;
}

T_TEST(example_grammars_parse_and_match)
{
	T_CHECK(matches(arithmetic, "1+2=3\n") == 1);
	T_CHECK(matches(arithmetic, "(a * b1) - 7 = x\ny=2\n") == 1);
	T_CHECK(matches(arithmetic, "1+=3\n") == 0);
	T_CHECK(matches(arithmetic, "1+2=3") == 0); /* no newline: not complete */
	T_CHECK(matches(json, "{\"a\": [1, 2.5e3, \"x\\u00e9\"], \"b\": {\"c\": null}}") == 1);
	T_CHECK(matches(json, "{\"caf\xc3\xa9\": \"\xe6\x97\xa5\xe6\x9c\xac\xf0\x9f\x98\x80\"}") == 1);
	T_CHECK(matches(json, "{\"a\": tru}") == 0);
	T_CHECK(matches(json, "{\"a\": 01}") == 0);
	T_CHECK(matches(json, "[1]") == 0);
	T_CHECK(matches(list, "- one\n- two \xe2\x82\xac\n") == 1);
	T_CHECK(matches(list, "- one\n-two\n") == 0);
	T_CHECK(matches(list, "- a\xe2\x80\xa8" "b\n") == 0); /* U+2028 is outside the class */
	T_CHECK(matches(chess, "1. e4 e5\n2. Nf3 Nc6\n") == 1);
	T_CHECK(matches(chess, "1. O-O-O Qxd8#\n") == 1);
	T_CHECK(matches(chess, "1. e9 e5\n") == 0);
}

T_TEST(a_start_only_a_surrogate_could_finish_is_refused)
{
	/* a negated class admits U+D800..U+DFFF, which UTF-8 cannot encode: 0xED 0xA0..0xBF starts only
	 * those, so no byte could finish it (a JSON string took it, then allowed no token: the soak's
	 * "the grammar allows no token of the vocabulary here") */
	const char *g = "root ::= \"\\\"\" [^\"]* \"\\\"\"\n";
	T_CHECK(prefix_ok(g, "\"\xed") == 1);
	T_CHECK(prefix_ok(g, "\"\xed\x9f") == 1);  /* U+D7C0..U+D7FF */
	T_CHECK(prefix_ok(g, "\"\xed\xa0") == 0);  /* U+D800.. */
	T_CHECK(prefix_ok(g, "\"\xed\xab") == 0);
	T_CHECK(prefix_ok(g, "\"\xed\xbf") == 0);
	T_CHECK(prefix_ok(g, "\"\xee\x80") == 1);  /* U+E000.. */
	T_CHECK(matches(g, "\"\xed\x9f\xbf\"") == 1);
}

T_TEST(a_code_point_cut_by_a_token_is_carried_over)
{
	const char *g = "root ::= \"\xc3\xa9t\xc3\xa9\" [\xe4\xb8\x80-\xe9\xbf\xbf]+\n";
	T_CHECK(matches(g, "\xc3\xa9t\xc3\xa9\xe6\x97\xa5\xe6\x9c\xac") == 1);
	/* a first byte whose code points no class admits is refused at once */
	T_CHECK(prefix_ok(g, "\xc3\xa9t\xc3\xa9\xf0") == 0);
	T_CHECK(prefix_ok(g, "\xc3\xa9t\xc3\xa9\xe6") == 1);
	T_CHECK(prefix_ok(g, "\xc3\xa9t\xc3") == 1);
	T_CHECK(prefix_ok(g, "\xc3\xa9t\xc4") == 0);
	T_CHECK(prefix_ok(g, "\xc3\xa9t\x80") == 0); /* a lone continuation byte */
	struct llm_grammar *gr = parse(g);
	struct llm_grammar_state st = {0};
	T_CHECK(llm_grammar_start(gr, &st) == 0);
	T_CHECK(llm_grammar_accept(gr, &st, "\xc3\xa9t\xc3\xa9\xe6\x97", 7) && !llm_grammar_complete(&st));
	T_CHECK(llm_grammar_accept(gr, &st, "\xa5", 1) && llm_grammar_complete(&st) && !llm_grammar_done(&st));
	llm_grammar_state_free(&st);
	llm_grammar_free(gr);
}

T_TEST(repetition_bounds_hold)
{
	const char *g = "root ::= \"a\"{2,4} \"b\"{3} \"c\"{2,} \"d\"{,1}\n";
	T_CHECK(matches(g, "aabbbcc") == 1);
	T_CHECK(matches(g, "aaaabbbccccd") == 1);
	T_CHECK(matches(g, "abbbcc") == 0);
	T_CHECK(matches(g, "aaaaabbbcc") == 0);
	T_CHECK(matches(g, "aabbcc") == 0);
	T_CHECK(matches(g, "aabbbc") == 0);
	T_CHECK(matches(g, "aabbbccdd") == 0);
	/* a bounded repetition of "" (nothing to copy: fuzz_grammar's UBSan
	 * report of a memcpy from NULL) is nothing */
	T_CHECK(matches("root ::= \"x\" \"\"{2,3} \"y\"\n", "xy") == 1);
	T_CHECK(matches("root ::= (\"ab\" | \"c\")* \"!\"?\n", "") == 1);
	T_CHECK(matches("root ::= (\"ab\" | \"c\")* \"!\"?\n", "abcab!") == 1);
	T_CHECK(matches("root ::= (\"ab\" | \"c\")* \"!\"?\n", "aba") == 0);
	T_CHECK(matches("root ::= [a-c]+ . [^x-z]\n", "cab\xe2\x82\xac" "w") == 1);
	T_CHECK(matches("root ::= [a-c]+ . [^x-z]\n", "cabqy") == 0);
}

T_TEST(completeness_and_the_end)
{
	struct llm_grammar *g = parse("root ::= \"yes\" | \"yes!\" | \"no\"\n");
	struct llm_grammar_state st = {0};
	T_CHECK(llm_grammar_start(g, &st) == 0);
	T_CHECK(!llm_grammar_complete(&st));
	T_CHECK(llm_grammar_accept(g, &st, "ye", 2) && !llm_grammar_complete(&st));
	T_CHECK(!llm_grammar_accept(g, &st, "x", 1)); /* refused: unchanged */
	T_CHECK(llm_grammar_accept(g, &st, "s", 1) && llm_grammar_complete(&st) && !llm_grammar_done(&st));
	T_CHECK(llm_grammar_accept(g, &st, "!", 1) && llm_grammar_done(&st));
	T_CHECK(!llm_grammar_accept(g, &st, "!", 1));
	llm_grammar_state_free(&st);
	llm_grammar_free(g);
}

/* A grammar whose readings multiply with each byte (fuzz_grammar found
 * it: 4 GB in some 30 bytes of its own text, masked against a vocabulary)
 * is followed until the matcher's bounds, then refused with one message,
 * and so is every call after; the stacks reached are bounded. */
T_TEST(a_grammar_too_ambiguous_to_follow_is_refused_and_stays_so)
{
	struct llm_grammar *g = parse("root ::= (expr \"=\" ws term \"\\n\")+\n"
				      "expr ::= term ([-+*/] ws term)*\n"
				      "term ::= [a-z]+ ws\n"
				      "ws ::= | expr \"=\" ws term{2,20}\n");
	struct llm_grammar_state st = {0};
	const char *text = "ab=cd=ef=gh=ij=kl=mn=op=qr=st=uv=wx=yz=ab=cd=ef";
	size_t i = 0, n = strlen(text);
	int r = 1;
	T_CHECK(llm_grammar_start(g, &st) == 0);
	for (; i < n && r == 1; i++)
		r = llm_grammar_accept(g, &st, text + i, 1);
	T_CHECK(r == -1 && i > 10 && st.n <= 65536);
	T_CHECK(strcmp(llm_errmsg(),
		    "the grammar is too ambiguous to follow: the text so far reads in over 65536 "
		    "ways, or they take over 4194304 frames") == 0);
	const char *toks[] = {"a", "="};
	size_t lens[] = {1, 1};
	struct llm_grammar_vocab *v = llm_grammar_vocab_new(2, toks, lens);
	uint8_t allowed[2];
	T_CHECK(llm_grammar_accept(g, &st, "a", 1) == -1 && llm_grammar_mask(g, &st, v, allowed) == -1);
	T_CHECK(llm_grammar_start(g, &st) == -1);
	llm_grammar_vocab_free(v);
	llm_grammar_state_free(&st);
	llm_grammar_free(g);
}

/* The message of a refused grammar. */
static const char *
refusal(const char *gbnf)
{
	struct llm_grammar *g = parse(gbnf);
	if (g) {
		llm_grammar_free(g);
		return "(accepted)";
	}
	return llm_errmsg();
}

#define REFUSED(gbnf, msg) T_CHECKF(strcmp(refusal(gbnf), msg) == 0, "%s", refusal(gbnf))

T_TEST(bad_grammars_are_refused_with_line_and_column)
{
	REFUSED("root ::= \"a\" b\n", "line 1, column 14: undefined rule 'b'");
	REFUSED("a ::= \"x\"\n", "line 1, column 1: no rule 'root' (where the text starts)");
	REFUSED("root ::= \"a\n", "line 1, column 12: unterminated string");
	REFUSED("root ::= x\n\nx ::= [a-\n", "line 3, column 10: unterminated character class");
	REFUSED("root ::= expr\nexpr ::= expr \"+\" num | num\nnum ::= [0-9]+\n",
	    "line 2, column 1: rule 'expr' can start with itself (left recursion)");
	REFUSED("root ::= (\"a\"?)*\n",
	    "line 1, column 16: this repetition can start with itself (left recursion): it repeats something that can "
	    "be empty");
	REFUSED("root ::= \"a\" root\n", "line 1, column 1: rule 'root' can never end");
	REFUSED("root ::= \"a\"\nroot ::= \"b\"\n", "line 2, column 1: rule 'root' is defined twice");
	REFUSED("root = \"a\"\n", "line 1, column 6: expected '::=' after the rule name 'root'");
	REFUSED("root ::= (\"a\" | \"b\"\n", "line 1, column 10: '(' is not closed");
	REFUSED("root ::= \"\\q\"\n", "line 1, column 11: unknown escape '\\q'");
	/* a character's first byte after the backslash: its number, the message stays UTF-8 (fuzz_request) */
	REFUSED("root ::= \"\\\xd1\x85\"\n", "line 1, column 11: unknown escape '\\' then byte 0xd1");
	REFUSED("root ::= \"a\"{3,2}\n", "line 1, column 13: repetition {3,2}: the most is below the least");
	REFUSED("root ::= [z-a]\n", "line 1, column 11: range 0x7a-0x61 is reversed");
	REFUSED("# \xc3\xa9\xc3\xa9\nroot ::= \"\xc3\xa9\" @\n", "line 2, column 14: unexpected '@'");
	REFUSED("root ::= \"\\xZ1\"\n", "line 1, column 13: expected 2 hexadecimal digits");
	REFUSED("root ::= \"a\" )\n", "line 1, column 14: unexpected ')'");
	/* newlines inside parentheses, names with '-' and digits, '|' lines */
	T_CHECK(matches("root ::= (\n  \"a\" |\n  \"b\"\n) my-rule2\nmy-rule2 ::= \"c\"\n  | \"d\"\n", "bd") == 1);
}

/* A toy vocabulary: the mask equals accepting each token alone. */
T_TEST(the_mask_is_what_the_matcher_takes_token_by_token)
{
	/* clang-format off */
	static const char *toks[] = {"{", "\"", "{\"", "\":", " ", "a", "ab", "\xc3", "\xa9", "\xc3\xa9", "}", "\"}",
		NULL, "", "1", "12", ",", "\n", "\n\n", "xyz"};
	/* clang-format on */
	size_t n = sizeof(toks) / sizeof(toks[0]), lens[32];
	for (size_t i = 0; i < n; i++)
		lens[i] = toks[i] ? strlen(toks[i]) : 0;
	struct llm_grammar_vocab *v = llm_grammar_vocab_new(n, toks, lens);
	struct llm_grammar *g = parse(json);
	struct llm_grammar_state st = {0}, t = {0};
	uint8_t allowed[32];
	const char *path[] = {"{\"", "a", "\xc3", "\xa9", "\":", " ", "12", "}"};
	T_CHECK(llm_grammar_start(g, &st) == 0);
	for (size_t step = 0; step <= sizeof(path) / sizeof(path[0]); step++) {
		int64_t count = llm_grammar_mask(g, &st, v, allowed), c2 = 0;
		for (size_t i = 0; i < n; i++) {
			llm_grammar_state_copy(&t, &st);
			int want = toks[i] && lens[i] && llm_grammar_accept(g, &t, toks[i], lens[i]);
			T_CHECKF(allowed[i] == want, "step %zu token %zu", step, i);
			c2 += want;
		}
		T_CHECK(count == c2);
		if (step < sizeof(path) / sizeof(path[0]))
			T_CHECK(llm_grammar_accept(g, &st, path[step], strlen(path[step])));
	}
	T_CHECK(llm_grammar_complete(&st));
	llm_grammar_state_free(&st);
	llm_grammar_state_free(&t);
	llm_grammar_free(g);
	llm_grammar_vocab_free(v);
}

/* JSON schemas: each with texts that follow it and texts that do not. */
struct schema_case {
	const char *schema;
	const char *good[6], *bad[8];
};

static const struct schema_case cases[] = {
	{"{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\"},"
	 " \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 2}},"
	 " \"required\": [\"name\", \"age\"], \"additionalProperties\": false}",
		{"{\"name\": \"Al\", \"age\": 3}", "{\"name\":\"\",\"age\":-12,\"tags\":[\"a\",\"b\"]}",
			"{ \"name\": \"x\\n\\u00e9\",\n  \"age\": 0, \"tags\": [] }"},
		{"{\"age\": 3}", "{\"name\": \"Al\"}", "{\"name\": \"Al\", \"age\": 3.5}",
			"{\"name\": \"Al\", \"age\": 3, \"x\": 1}",
			"{\"name\": \"Al\", \"age\": 3, \"tags\": [\"a\",\"b\",\"c\"]}",
			"{\"age\": 3, \"name\": \"Al\"}", "{\"name\": \"A\nl\", \"age\": 3}"}},
	{"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"boolean\"}, \"b\": {\"type\": \"null\"}}}",
		{"{}", "{\"a\": true}", "{\"b\": null}", "{\"a\": false, \"b\": null}"},
		{"{\"a\": 1}", "{,\"b\": null}", "{\"a\": true,}", "{\"b\": null, \"a\": true}",
			"{\"a\": true, \"zz\": [1, {}]}"}},
	{"{\"properties\": {\"a\": {\"type\": \"boolean\"}}, \"additionalProperties\": true}",
		{"{}", "{\"a\": true, \"zz\": [1, {}]}", "{\"zz\": 1}"},
		{"{\"a\": true \"zz\": 1}", "{\"a\": true, \"zz\"}"}},
	{"{\"type\": \"object\", \"additionalProperties\": {\"type\": \"number\"}}",
		{"{}", "{\"x\": 1.5e3, \"y\": -0.25}"}, {"{\"x\": \"1\"}", "{\"x\": 1,}", "{\"x\": 01}"}},
	{"{\"enum\": [\"red\", 2, null, {\"k\": [true]}]}", {"\"red\"", "2", "null", "{\"k\":[true]}"},
		{"\"blue\"", "3", "{\"k\": [true]}", "red"}},
	{"{\"const\": \"x\\\"y\"}", {"\"x\\\"y\""}, {"\"xy\"", "\"x\"y\""}},
	{"{\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"string\", \"maxLength\": 3}]}", {"42", "\"abc\"", "\"\""},
		{"\"abcd\"", "4.5", "true"}},
	{"{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}",
		{"\"ab\"", "\"\\u00e9\\n\"", "\"\xc3\xa9\xc3\xa9\xc3\xa9\""}, {"\"a\"", "\"abcd\""}},
	{"{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 2, \"maxItems\": 3}",
		{"[1, 2]", "[1,2,3]"}, {"[]", "[1]", "[1,2,3,4]", "[1,\"2\"]"}},
	{"{\"type\": \"array\", \"prefixItems\": [{\"type\": \"string\"}, {\"type\": \"number\"}]}", {"[\"a\", 1]"},
		{"[\"a\"]", "[1, \"a\"]", "[\"a\", 1, 2]"}},
	{"{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"},"
	 " \"next\": {\"anyOf\": [{\"$ref\": \"#/$defs/node\"}, {\"type\": \"null\"}]}},"
	 " \"required\": [\"v\", \"next\"], \"additionalProperties\": false}}, \"$ref\": \"#/$defs/node\"}",
		{"{\"v\": 1, \"next\": {\"v\": 2, \"next\": null}}"},
		{"{\"v\": 1, \"next\": {\"v\": 2}}", "{\"v\": 1}"}},
	{"{\"allOf\": [{\"properties\": {\"a\": {\"type\": \"integer\"}}, \"required\": [\"a\"]},"
	 " {\"properties\": {\"b\": {\"type\": \"string\"}}, \"required\": [\"b\"], \"additionalProperties\": false}]}",
		{"{\"a\": 1, \"b\": \"x\"}"}, {"{\"a\": 1}", "{\"b\": \"x\"}", "{\"a\": 1, \"b\": \"x\", \"c\": 1}"}},
	{"{\"type\": [\"string\", \"null\"], \"format\": \"uuid\"}",
		{"null", "\"0f8fad5b-d9cb-469f-a165-70867728950e\""}, {"\"0f8fad5b\"", "1"}},
	{"{\"type\": \"object\"}", {"{}", "{\"a\": [1, {\"b\": null}]}"}, {"[]", "{\"a\"}"}},
	{"{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"number\"}}, \"required\": [\"n\"]}",
		{"{\"n\": 1}", "{\"n\": -0.5E-7}"}, {"{\"n\": 1, \"extra\": true}", "{\"n\": .5}", "{\"n\": 1.}"}},
	{"{\"type\": \"object\", \"properties\": {\"s\": {\"type\": \"string\"}}, \"required\": [\"s\"],"
	 " \"additionalProperties\": false}",
		{"{\"s\": \"a\"}", "{\"s\": \"a\"}\n", "{\"s\": \"a\"}\n \t"},
		{"{\"s\": \"a\"}\n\n", "{\"s\": \"a\"}  "}},
};

T_TEST(json_schemas_accept_what_follows_them_and_refuse_what_does_not)
{
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *gbnf = llm_json_schema_grammar(cases[k].schema, strlen(cases[k].schema));
		T_CHECKF(gbnf, "schema %zu: %s", k, llm_errmsg());
		for (int i = 0; i < 6 && cases[k].good[i]; i++)
			T_CHECKF(matches(gbnf, cases[k].good[i]) == 1, "schema %zu good %d: %s\n%s", k, i,
			    cases[k].good[i], gbnf);
		for (int i = 0; i < 8 && cases[k].bad[i]; i++)
			T_CHECKF(matches(gbnf, cases[k].bad[i]) == 0, "schema %zu bad %d: %s\n%s", k, i,
			    cases[k].bad[i], gbnf);
		free(gbnf);
	}
}

T_TEST(json_schema_keywords_not_followed_are_refused_by_name)
{
	static const struct {
		const char *schema, *msg;
	} bad[] = {
		{"{\"type\": \"string\", \"pattern\": \"^a\"}", "/: 'pattern' is not supported"},
		{"{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\", \"minimum\": 0}}}",
			"/properties/n: 'minimum' is not supported"},
		{"{\"type\": \"array\", \"uniqueItems\": true}", "/: 'uniqueItems' is not supported"},
		{"{\"type\": \"decimal\"}", "/: unknown type 'decimal'"},
		{"{\"$ref\": \"#/$defs/x\"}", "/: $ref '#/$defs/x': no such place in the schema"},
		{"{\"$ref\": \"http://x/y.json\"}",
			"/: $ref 'http://x/y.json': only references inside the schema (#...) are followed"},
		{"{\"type\": \"object\", \"required\": [\"a\"]}", "/: required property 'a' is not in 'properties'"},
		{"false", "/: the schema false allows nothing"},
		{"{\"type\": ", "line 1, column 9: unexpected token near end of file"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *g = llm_json_schema_grammar(bad[i].schema, strlen(bad[i].schema));
		T_CHECKF(!g && strcmp(llm_errmsg(), bad[i].msg) == 0, "%zu: %s", i, g ? g : llm_errmsg());
	}
}

int
main(void)
{
	T_RUN(example_grammars_parse_and_match);
	T_RUN(a_code_point_cut_by_a_token_is_carried_over);
	T_RUN(a_start_only_a_surrogate_could_finish_is_refused);
	T_RUN(repetition_bounds_hold);
	T_RUN(completeness_and_the_end);
	T_RUN(a_grammar_too_ambiguous_to_follow_is_refused_and_stays_so);
	T_RUN(bad_grammars_are_refused_with_line_and_column);
	T_RUN(the_mask_is_what_the_matcher_takes_token_by_token);
	T_RUN(json_schemas_accept_what_follows_them_and_refuse_what_does_not);
	T_RUN(json_schema_keywords_not_followed_are_refused_by_name);
	return T_DONE();
}
