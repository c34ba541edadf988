/* Unit tests for lib/text/tokenizer.c internals: UTF-8 decoding and lossy
 * repair, the byte-level map, BPE merge order on small hand-made
 * vocabularies (from JSON and from arrays), SentencePiece merges from
 * scores, byte fallback, added tokens, decoding, and load errors.  The
 * golden comparisons with Hugging Face are in tests/tokenizer.bats. */
#include "../../lib/text/tokenizer.h"
#include "../../lib/base/util.h"
#include "t.h"

/* Encode s and compare with the n ids in want. */
static int
encodes_to(struct llm_tokenizer *t, const char *s, int add_special, const int64_t *want, size_t n)
{
	int64_t *ids = NULL;
	size_t got = 0;
	int ok = llm_tokenizer_encode(t, s, strlen(s), add_special, &ids, &got) == 0 && got == n &&
	    (n == 0 || memcmp(ids, want, n * sizeof(*ids)) == 0);
	if (!ok) {
		fprintf(stderr, "  '%s' ->", s);
		for (size_t i = 0; i < got; i++)
			fprintf(stderr, " %lld", (long long)ids[i]);
		fprintf(stderr, "\n");
	}
	free(ids);
	return ok;
}

static int
decodes_to(struct llm_tokenizer *t, const int64_t *ids, size_t n, int skip, const char *want)
{
	struct llm_buf b = {0};
	llm_tokenizer_decode(t, ids, n, skip, &b);
	int ok = b.len == strlen(want) && memcmp(b.p, want, b.len) == 0;
	if (!ok)
		fprintf(stderr, "  decoded '%.*s', want '%s'\n", (int)b.len, b.p ? b.p : "", want);
	llm_buf_free(&b);
	return ok;
}

#define IDS(...) ((const int64_t[]){__VA_ARGS__}), (sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static struct llm_tokenizer *
from_json(const char *json)
{
	struct llm_tokenizer *t = llm_tokenizer_load_json(json, strlen(json), "test.json");
	if (!t)
		fprintf(stderr, "  %s\n", llm_errmsg());
	return t;
}

T_TEST(utf8_decode_accepts_valid_and_rejects_invalid_sequences)
{
	uint32_t c;
	T_CHECK(llm_utf8_decode("A", 1, &c) == 1 && c == 'A');
	T_CHECK(llm_utf8_decode("\xc3\xa9", 2, &c) == 2 && c == 0xe9);
	T_CHECK(llm_utf8_decode("\xe2\x96\x81", 3, &c) == 3 && c == 0x2581);
	T_CHECK(llm_utf8_decode("\xf0\x9f\x98\x80", 4, &c) == 4 && c == 0x1f600);
	T_CHECK(llm_utf8_decode("\xf4\x8f\xbf\xbf", 4, &c) == 4 && c == 0x10ffff);
	T_CHECK(llm_utf8_decode("\xc0\xaf", 2, &c) == 0);         /* overlong */
	T_CHECK(llm_utf8_decode("\xe0\x80\xaf", 3, &c) == 0);     /* overlong */
	T_CHECK(llm_utf8_decode("\xed\xa0\x80", 3, &c) == 0);     /* surrogate */
	T_CHECK(llm_utf8_decode("\xf4\x90\x80\x80", 4, &c) == 0); /* past U+10FFFF */
	T_CHECK(llm_utf8_decode("\xe2\x96", 2, &c) == 0);         /* truncated */
	T_CHECK(llm_utf8_decode("\x80", 1, &c) == 0);
	T_CHECK(llm_utf8_valid("h\xc3\xa9llo", 6));
	T_CHECK(!llm_utf8_valid("h\xc3llo", 5));
	char buf[4];
	T_CHECK(llm_utf8_encode(0x2581, buf) == 3 && memcmp(buf, "\xe2\x96\x81", 3) == 0);
	T_CHECK(llm_utf8_encode(0x1f600, buf) == 4 && memcmp(buf, "\xf0\x9f\x98\x80", 4) == 0);
}

T_TEST(lossy_replaces_each_maximal_invalid_subpart_once)
{
	/* The cases of Rust's from_utf8_lossy documentation and the Unicode
	 * "maximal subpart" practice. */
	static const struct {
		const char *in;
		size_t n;
		const char *out;
	} cases[] = {
		{"Hello \xf0\x90\x80World", 14, "Hello \xef\xbf\xbdWorld"},
		{"\xf0\x80\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
		{"\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
		{"\xe2\x96", 2, "\xef\xbf\xbd"},
		{"a\xff" "b", 3, "a\xef\xbf\xbd" "b"},
		{"\xc3\xa9\xc3", 3, "\xc3\xa9\xef\xbf\xbd"},
		{"ok", 2, "ok"},
	};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		struct llm_buf b = {0};
		llm_utf8_lossy(cases[i].in, cases[i].n, &b);
		T_CHECKF(b.len == strlen(cases[i].out) && memcmp(b.p, cases[i].out, b.len) == 0, "case %zu", i);
		llm_buf_free(&b);
	}
}

T_TEST(bytelevel_map_is_gpt2s_and_round_trips)
{
	T_CHECK(llm_bytelevel_char(' ') == 0x120);  /* 'Ġ' */
	T_CHECK(llm_bytelevel_char('\n') == 0x10a); /* 'Ċ' */
	T_CHECK(llm_bytelevel_char(0) == 0x100);
	T_CHECK(llm_bytelevel_char('a') == 'a');
	T_CHECK(llm_bytelevel_char(0xad) == 0x143);
	T_CHECK(llm_bytelevel_char(0xe9) == 0xe9);
	for (int b = 0; b < 256; b++)
		T_CHECKF(llm_bytelevel_byte(llm_bytelevel_char((uint8_t)b)) == b, "byte %d", b);
	T_CHECK(llm_bytelevel_byte(' ') == -1);
	T_CHECK(llm_bytelevel_byte(0x2581) == -1);
}

/* A byte-level vocabulary with merges ranked "b c" < "a b" < "a bc" < "ab c". */
static const char bpe_json[] =
    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4, \"abc\": 5,"
    " \"\\u0120\": 6, \"\\u0120a\": 7, \"aa\": 8, \"aaaa\": 9},"
    " \"merges\": [\"b c\", \"a b\", \"a bc\", \"ab c\", \"\\u0120 a\", \"a a\", \"aa aa\"]},"
    " \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true},"
    " \"decoder\": {\"type\": \"ByteLevel\"},"
    " \"added_tokens\": [{\"id\": 10, \"content\": \"<s>\", \"special\": true, \"normalized\": false},"
    "   {\"id\": 11, \"content\": \"<x>\", \"special\": false, \"normalized\": false}],"
    " \"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": [{\"SpecialToken\": {\"id\": \"<s>\"}},"
    "   {\"Sequence\": {\"id\": \"A\"}}], \"special_tokens\": {\"<s>\": {\"id\": \"<s>\", \"ids\": [10]}}}}";

T_TEST(bpe_merges_by_rank_not_by_position)
{
	struct llm_tokenizer *t = from_json(bpe_json);
	T_CHECK(t != NULL);
	/* (b,c) has the best rank: bc first, then a+bc. */
	T_CHECK(encodes_to(t, "abc", 0, IDS(5)));
	T_CHECK(encodes_to(t, "ab", 0, IDS(3)));
	T_CHECK(encodes_to(t, "cab", 0, IDS(2, 3)));
	/* Equal ranks go left to right: aa aa, then aaaa. */
	T_CHECK(encodes_to(t, "aaa", 0, IDS(8, 0)));
	T_CHECK(encodes_to(t, "aaaaa", 0, IDS(9, 0)));
	T_CHECK(encodes_to(t, " a", 0, IDS(7)));
	T_CHECK(encodes_to(t, "", 0, NULL, 0));
	T_CHECK(encodes_to(t, "", 1, IDS(10)));
	llm_tokenizer_free(t);
}

T_TEST(bpe_of_a_long_word_is_exact)
{
	struct llm_tokenizer *t = from_json(bpe_json);
	T_CHECK(t != NULL);
	size_t n = 100001;
	char *s = llm_xmalloc(n + 1);
	memset(s, 'a', n);
	s[n] = 0;
	int64_t *ids = NULL;
	size_t got = 0;
	T_CHECK(llm_tokenizer_encode(t, s, n, 0, &ids, &got) == 0);
	T_CHECK(got == 25001);
	for (size_t i = 0; i + 1 < got; i++)
		T_CHECK(ids[i] == 9);
	T_CHECK(ids[got - 1] == 0);
	free(ids);
	free(s);
	llm_tokenizer_free(t);
}

T_TEST(added_tokens_are_cut_out_before_bpe_and_skipped_when_special)
{
	struct llm_tokenizer *t = from_json(bpe_json);
	T_CHECK(t != NULL);
	T_CHECK(encodes_to(t, "ab<s>c<x>", 0, IDS(3, 10, 2, 11)));
	T_CHECK(encodes_to(t, "<s<x>>", 0, IDS(11))); /* '<', 's', '>' are not tokens: dropped */
	T_CHECK(encodes_to(t, "a<x>", 1, IDS(10, 0, 11)));
	T_CHECK(decodes_to(t, IDS(10, 5, 11, 6, 7), 0, "<s>abc<x>  a"));
	T_CHECK(decodes_to(t, IDS(10, 5, 11, 6, 7), 1, "abc<x>  a"));
	T_CHECK(decodes_to(t, IDS(99, 5, -1), 0, "abc")); /* unknown ids are dropped */
	T_CHECK(llm_tokenizer_is_special(t, 10) && !llm_tokenizer_is_special(t, 11));
	T_CHECK(llm_tokenizer_bos(t) == 10 && llm_tokenizer_eos(t) == -1);
	T_CHECK(llm_tokenizer_n_vocab(t) == 12);
	T_CHECK(llm_tokenizer_find(t, "<x>", 3) == 11 && llm_tokenizer_find(t, "bc", 2) == 4);
	T_CHECK(llm_tokenizer_find(t, "zz", 2) == -1);
	size_t len;
	const char *s = llm_tokenizer_token_text(t, 7, &len);
	T_CHECK(s && len == 3 && memcmp(s, "\xc4\xa0" "a", 3) == 0);
	struct llm_buf b = {0};
	T_CHECK(llm_tokenizer_token_bytes(t, 7, &b) == 0 && b.len == 2 && memcmp(b.p, " a", 2) == 0);
	T_CHECK(llm_tokenizer_token_bytes(t, 12, &b) == -1 && b.len == 2);
	llm_buf_free(&b);
	llm_tokenizer_free(t);
}

/* A SentencePiece vocabulary given as arrays, merges implied by scores. */
static struct llm_tokenizer *
spm_tokenizer(void)
{
	/* clang-format would join these two lines */
	/* clang-format off */
	static const char *const base[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81", "h", "e", "l", "o",
		"\xe2\x96\x81h", "he", "ll", "llo", "\xe2\x96\x81he", "\xe2\x96\x81hello", "<ctl>"};
	/* clang-format on */
	static const float base_scores[] = {0, 0, 0, -1, -2, -2, -2, -2, -5, -6, -3, -4, -7, -8, 0};
	static const int32_t base_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3};
	size_t nb = LLM_NELEM(base), n = nb + 256;
	const char **tok = llm_xcalloc(n, sizeof(*tok));
	float *scores = llm_xcalloc(n, sizeof(*scores));
	int32_t *types = llm_xcalloc(n, sizeof(*types));
	char (*bytes)[8] = llm_xcalloc(256, 8);
	for (size_t i = 0; i < nb; i++) {
		tok[i] = base[i];
		scores[i] = base_scores[i];
		types[i] = base_types[i];
	}
	for (int b = 0; b < 256; b++) {
		snprintf(bytes[b], 8, "<0x%02X>", b);
		tok[nb + (size_t)b] = bytes[b];
		types[nb + (size_t)b] = LLM_TOKEN_BYTE;
	}
	struct llm_tokenizer_vocab v = {
		.kind = LLM_TOKENIZER_SPM_BPE,
		.n_tokens = n,
		.tokens = tok,
		.scores = scores,
		.types = types,
		.add_space_prefix = 1,
		.bos_id = 1,
		.eos_id = 2,
		.unk_id = 0,
		.add_bos = 1,
	};
	struct llm_tokenizer *t = llm_tokenizer_build(&v, "spm");
	if (!t)
		fprintf(stderr, "  %s\n", llm_errmsg());
	free(tok);
	free(scores);
	free(types);
	free(bytes);
	return t;
}

T_TEST(spm_from_arrays_merges_by_score_with_byte_fallback)
{
	struct llm_tokenizer *t = spm_tokenizer();
	T_CHECK(t != NULL);
	/* "▁hello": ll (-3), llo (-4), ▁h (-5); h+e (-6) is stale by then, so
	 * ▁h+e (-7) and ▁he+llo (-8). */
	T_CHECK(encodes_to(t, "hello", 0, IDS(13)));
	T_CHECK(encodes_to(t, "hello", 1, IDS(1, 13)));
	/* 'z' is no token: its byte 0x7a; 'é' its two bytes. */
	T_CHECK(encodes_to(t, "hez", 0, IDS(12, 15 + 0x7a)));
	T_CHECK(encodes_to(t, "\xc3\xa9", 0, IDS(3, 15 + 0xc3, 15 + 0xa9)));
	/* A control token is cut out, and each piece after it gets '▁' again. */
	T_CHECK(encodes_to(t, "he<ctl>he", 0, IDS(12, 14, 12)));
	T_CHECK(decodes_to(t, IDS(1, 13, 3, 4, 15 + 0xc3, 15 + 0xa9), 1, "hello h\xc3\xa9"));
	T_CHECK(decodes_to(t, IDS(13, 15 + 0xc3), 0, "hello\xef\xbf\xbd"));
	struct llm_buf b = {0};
	T_CHECK(llm_tokenizer_token_bytes(t, 13, &b) == 0 && b.len == 6 && memcmp(b.p, " hello", 6) == 0);
	b.len = 0;
	T_CHECK(llm_tokenizer_token_bytes(t, 15 + 0xc3, &b) == 0 && b.len == 1 && (uint8_t)b.p[0] == 0xc3);
	llm_buf_free(&b);
	T_CHECK(llm_tokenizer_bos(t) == 1 && llm_tokenizer_eos(t) == 2);
	T_CHECK(llm_tokenizer_is_special(t, 14) && llm_tokenizer_n_added(t) == 3);
	llm_tokenizer_free(t);
}

T_TEST(byte_bpe_from_arrays_uses_the_split_regex)
{
	/* Tokens in byte-level spelling: "Ġ" is the space. */
	static const char *const tok[] = {"a", "b", "\xc4\xa0", "\xc4\xa0" "a", "1", "11", "<|eot|>"};
	static const int32_t types[] = {1, 1, 1, 1, 1, 1, 3};
	static const char *const merges[] = {"\xc4\xa0 a", "1 1"};
	struct llm_tokenizer_vocab v = {
		.kind = LLM_TOKENIZER_BYTE_BPE,
		.n_tokens = LLM_NELEM(tok),
		.tokens = tok,
		.types = types,
		.n_merges = LLM_NELEM(merges),
		.merges = merges,
		.pattern = LLM_TOKENIZER_RE_LLAMA3,
		.bos_id = -1,
		.eos_id = 6,
		.unk_id = -1,
	};
	struct llm_tokenizer *t = llm_tokenizer_build(&v, "bpe");
	T_CHECK(t != NULL);
	/* \p{N}{1,3}: "1111" is "111" + "1", and "111" is "11" + "1". */
	T_CHECK(encodes_to(t, "a a1111<|eot|>", 0, IDS(0, 3, 5, 4, 4, 6)));
	T_CHECK(decodes_to(t, IDS(0, 3, 5, 4, 6), 1, "a a111"));
	T_CHECK(llm_tokenizer_eos(t) == 6 && llm_tokenizer_bos(t) == -1);
	llm_tokenizer_free(t);
}

T_TEST(build_rejects_a_merge_of_unknown_tokens)
{
	static const char *const tok[] = {"a", "b"};
	static const char *const merges[] = {"a b"};
	struct llm_tokenizer_vocab v = {
		.kind = LLM_TOKENIZER_BYTE_BPE,
		.n_tokens = 2,
		.tokens = tok,
		.n_merges = 1,
		.merges = merges,
		.bos_id = -1,
		.eos_id = -1,
		.unk_id = -1,
	};
	T_CHECK(llm_tokenizer_build(&v, "x.gguf") == NULL);
	T_CHECKF(strcmp(llm_errmsg(), "x.gguf: merge 0: 'ab' not in the vocabulary") == 0, "%s", llm_errmsg());
}

T_TEST(load_errors_name_the_file_and_the_feature)
{
	/* a table */
	/* clang-format off */
	static const struct {
		const char *json, *err;
	} cases[] = {
		{ "[1]", "test.json: not a JSON object" },
		{ "{\"model\": {\"type\": \"Unigram\"}}", "test.json: unsupported model 'Unigram' (only BPE)" },
		{ "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
		  " \"normalizer\": {\"type\": \"Precompiled\"}}",
		    "test.json: unsupported normalizer 'Precompiled'" },
		{ "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
		  " \"decoder\": {\"type\": \"WordPiece\"}}",
		    "test.json: unsupported decoder 'WordPiece'" },
		{ "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a b c\"]}}",
		    "test.json: merge 0: 'a b c' is not two tokens" },
		{ "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [],"
		  " \"unk_token\": \"<unk>\"}}",
		    "test.json: model: unk_token '<unk>' not in the vocabulary" },
		{ "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []},"
		  " \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": \"(\"}, \"behavior\": "
		  "\"Isolated\"}}",
		    "test.json: regex '(': missing closing parenthesis" },
		/* an id that would size the tables to gigabytes (fuzz_tokjson) */
		{ "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 2147483646}, \"merges\": []}}",
		    "test.json: model: vocab entry 'a' has id 2147483646, past the 16777216 a tokenizer may have" },
	};
	/* clang-format on */
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		struct llm_tokenizer *t = llm_tokenizer_load_json(cases[i].json, strlen(cases[i].json), "test.json");
		T_CHECKF(t == NULL, "case %zu", i);
		T_CHECKF(strcmp(llm_errmsg(), cases[i].err) == 0, "case %zu: %s", i, llm_errmsg());
	}
	T_CHECK(llm_tokenizer_load("/nonexistent/tokenizer.json") == NULL);
	T_CHECKF(strstr(llm_errmsg(), "/nonexistent/tokenizer.json: ") == llm_errmsg(), "%s", llm_errmsg());
}

/* Regex escapes as Oniguruma reads them: \h is a hex digit, [\s] leaves
 * out U+180E, \v is the vertical tab.  The expected ids are what Hugging
 * Face's tokenizers 0.23.2 gives for this file. */
T_TEST(regex_escapes_mean_what_oniguruma_means)
{
	static const char json[] =
	    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"f\": 1, \"0\": 2, \"9\": 3, \"z\": 4,"
	    " \"g\": 5, \"af\": 6, \"fa\": 7, \"zg\": 8, \"gz\": 9, \"\u1820\": 10, \"\u180e\": 11,"
	    " \"\u1820\u180e\": 12, \"\u180e\u1820\": 13, \"az\": 14}, \"merges\": [\"a f\", \"f a\","
	    " \"z g\", \"g z\", \"\u1820 \u180e\", \"\u180e \u1820\", \"a z\"]},"
	    " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
	    " {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\h+\"}, \"behavior\": \"Isolated\"},"
	    " {\"type\": \"Split\", \"pattern\": {\"Regex\": \"[\\\\s]\"}, \"behavior\": \"Isolated\"},"
	    " {\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\v\"}, \"behavior\": \"Removed\"}]}}";
	struct llm_tokenizer *t = from_json(json);
	T_CHECK(t != NULL);
	T_CHECK(encodes_to(t, "zgafaf09zg", 0, IDS(8, 6, 6, 2, 3, 8)));
	T_CHECK(encodes_to(t, "gzfaz", 0, IDS(9, 7, 4)));
	T_CHECK(encodes_to(t, "azaz", 0, IDS(0, 4, 0, 4))); /* 'a' is cut from 'z' as a hex digit */
	T_CHECK(encodes_to(t, "\xe1\xa0\xa0\xe1\xa0\x8e\xe1\xa0\xa0", 0, IDS(12, 10)));
	T_CHECK(encodes_to(t, "\xe1\xa0\x8e\xe1\xa0\xa0\xe1\xa0\x8e", 0, IDS(11, 12)));
	T_CHECK(encodes_to(t, "fa\vfa", 0, IDS(7, 7)));
	llm_tokenizer_free(t);
}

T_TEST(encode_rejects_invalid_utf8)
{
	struct llm_tokenizer *t = from_json(bpe_json);
	T_CHECK(t != NULL);
	int64_t *ids = NULL;
	size_t n = 0;
	T_CHECK(llm_tokenizer_encode(t, "a\xff", 2, 0, &ids, &n) == -1 && n == 0);
	T_CHECKF(strcmp(llm_errmsg(), "test.json: text is not valid UTF-8") == 0, "%s", llm_errmsg());
	free(ids);
	llm_tokenizer_free(t);
}

/* llm_tokenizer_encode_plain: a special token whose text overlaps a plain
 * range is text there (the first "<s>" below), everywhere else a token;
 * non-special added tokens stay tokens; text without special-token text
 * encodes as without ranges. */
T_TEST(plain_ranges_keep_special_text_as_text)
{
	struct llm_tokenizer *t = from_json(bpe_json);
	const size_t first[1][2] = {{1, 5}}, none[1][2] = {{0, 2}}, all[1][2] = {{0, 11}};
	int64_t *ids = NULL;
	size_t n = 0;

	T_CHECK(t != NULL);
	T_CHECK(llm_tokenizer_encode_plain(t, "a<s>b<s><x>", 11, 0, first, 1, &ids, &n) == 0);
	/* '<', 's', '>' are not in the vocabulary: the plain "<s>" leaves "a" then "b" */
	T_CHECKF(n == 4 && ids[0] == 0 && ids[1] == 1 && ids[2] == 10 && ids[3] == 11, "%zu ids", n);
	n = 0;
	T_CHECK(llm_tokenizer_encode_plain(t, "a<s>b<s><x>", 11, 0, all, 1, &ids, &n) == 0);
	T_CHECKF(n == 3 && ids[0] == 0 && ids[1] == 1 && ids[2] == 11, "%zu ids", n); /* "<", "s", ">" dropped */
	n = 0;
	T_CHECK(llm_tokenizer_encode_plain(t, "ab<s>c", 6, 0, none, 1, &ids, &n) == 0);
	T_CHECK(n == 3 && ids[0] == 3 && ids[1] == 10 && ids[2] == 2);
	free(ids);
	ids = NULL;
	llm_tokenizer_free(t);

	/* A normalized special token (SentencePiece's "<s>" of old Llama 2
	 * files): the normalized pass cuts the piece at the range, and joins
	 * the text again so that the model sees one word. */
	t = from_json(
	    "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"<\": 2, \"s\": 3, \">\": 4,"
	    " \"\\u2581\": 5, \"a\\u2581\": 6, \"\\u2581b\": 7, \"\\u2581<\": 8},"
	    " \"merges\": [\"a \\u2581\", \"\\u2581 b\", \"\\u2581 <\"]},"
	    " \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"},"
	    " \"added_tokens\": [{\"id\": 9, \"content\": \"<s>\", \"special\": true, \"normalized\": true}]}");
	T_CHECK(t != NULL);
	const size_t mid[1][2] = {{2, 5}};
	n = 0;
	T_CHECK(llm_tokenizer_encode_plain(t, "a <s> b<s>", 10, 0, mid, 1, &ids, &n) == 0);
	/* "a▁<s>▁b" is one word: a▁ < s > ▁b, then the real <s> */
	T_CHECKF(n == 6 && ids[0] == 6 && ids[1] == 2 && ids[2] == 3 && ids[3] == 4 && ids[4] == 7 && ids[5] == 9,
	    "%zu ids", n);
	n = 0;
	T_CHECK(llm_tokenizer_encode(t, "a <s> b<s>", 10, 0, &ids, &n) == 0);
	T_CHECK(n == 4 && ids[0] == 6 && ids[1] == 9 && ids[2] == 7 && ids[3] == 9);
	free(ids);
	llm_tokenizer_free(t);
}

int
main(void)
{
	T_RUN(utf8_decode_accepts_valid_and_rejects_invalid_sequences);
	T_RUN(lossy_replaces_each_maximal_invalid_subpart_once);
	T_RUN(bytelevel_map_is_gpt2s_and_round_trips);
	T_RUN(bpe_merges_by_rank_not_by_position);
	T_RUN(bpe_of_a_long_word_is_exact);
	T_RUN(added_tokens_are_cut_out_before_bpe_and_skipped_when_special);
	T_RUN(spm_from_arrays_merges_by_score_with_byte_fallback);
	T_RUN(byte_bpe_from_arrays_uses_the_split_regex);
	T_RUN(build_rejects_a_merge_of_unknown_tokens);
	T_RUN(load_errors_name_the_file_and_the_feature);
	T_RUN(regex_escapes_mean_what_oniguruma_means);
	T_RUN(encode_rejects_invalid_utf8);
	T_RUN(plain_ranges_keep_special_text_as_text);
	return T_DONE();
}
