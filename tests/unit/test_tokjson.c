/* Unit tests for loading tokenizer.json (lib/text/tokjson.c; lib/text/tokenizer_int.h
 * gives its internals): the reader that takes model.vocab and model.merges
 * straight from the text must build the very tables the general loader
 * (jansson) builds, on the real tokenizers and the committed synthetic
 * ones, on every JSON escape, and on thousands of mutated documents; and
 * wherever it declines, the error is the general loader's word for word.
 * The real files are used when present (../shared, and the npm cache that
 * tests/tools/fetch-golden-tokenizers fills). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "../../lib/text/tokenizer_int.h"
#include "t.h"

static int
same_smap(const struct llm_smap *a, const struct llm_smap *b)
{
	if (a->cap != b->cap || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->cap; i++) {
		const struct llm_smap_ent *x = &a->e[i], *y = &b->e[i];
		if ((x->off == UINT32_MAX) != (y->off == UINT32_MAX))
			return 0;
		if (x->off != UINT32_MAX && (x->h != y->h || x->off != y->off || x->len != y->len || x->val != y->val))
			return 0;
	}
	return 1;
}

static int
same_pairmap(const struct llm_pairmap *a, const struct llm_pairmap *b)
{
	if (a->cap != b->cap || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->cap; i++) {
		const struct llm_pairmap_ent *x = &a->e[i], *y = &b->e[i];
		if (x->key != y->key || (x->key != UINT64_MAX && (x->rank != y->rank || x->id != y->id)))
			return 0;
	}
	return 1;
}

static int
same_bytes(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

static int
same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The model's tables slot for slot (both loaders insert in document order,
 * so even the hash tables' layouts agree), and what the rest gives. */
static int
same_tokenizer(const struct llm_tokenizer *a, const struct llm_tokenizer *b, const char *what)
{
#define SAME(cond) do { if (!(cond)) { fprintf(stderr, "  %s: differs: %s\n", what, #cond); return 0; } } while (0)
	SAME(a->n_model == b->n_model && a->n_vocab == b->n_vocab);
	SAME(a->pool.len == b->pool.len && same_bytes(a->pool.p, b->pool.p, a->pool.len));
	SAME(same_bytes(a->tok_off, b->tok_off, a->n_model * sizeof(*a->tok_off)));
	SAME(same_bytes(a->tok_len, b->tok_len, a->n_model * sizeof(*a->tok_len)));
	SAME(same_smap(&a->vocab, &b->vocab));
	SAME(same_pairmap(&a->merges, &b->merges));
	SAME(a->byte_fallback == b->byte_fallback && a->fuse_unk == b->fuse_unk &&
	    a->ignore_merges == b->ignore_merges && a->unk_id == b->unk_id);
	SAME(same_str(a->prefix, b->prefix) && same_str(a->suffix, b->suffix));
	SAME(memcmp(a->byte_tok, b->byte_tok, sizeof(a->byte_tok)) == 0);
	SAME(memcmp(a->small, b->small, sizeof(a->small)) == 0);
	SAME(a->n_added == b->n_added);
	for (size_t i = 0; i < a->n_added; i++) {
		const struct added *x = &a->added[i], *y = &b->added[i];
		SAME(x->len == y->len && same_bytes(x->s, y->s, x->len) && x->id == y->id && x->special == y->special &&
		    x->lstrip == y->lstrip && x->rstrip == y->rstrip && x->single_word == y->single_word &&
		    x->normalized == y->normalized);
	}
	SAME(same_bytes(a->added_of_id, b->added_of_id, (size_t)a->n_vocab * sizeof(*a->added_of_id)));
	SAME(same_bytes(a->special, b->special, (size_t)a->n_vocab));
	SAME(a->n_norm == b->n_norm && a->n_pre == b->n_pre && a->n_dec == b->n_dec);
	SAME(a->n_post_pre == b->n_post_pre && a->n_post_post == b->n_post_post);
	SAME(same_bytes(a->post_pre, b->post_pre, a->n_post_pre * sizeof(*a->post_pre)));
	SAME(same_bytes(a->post_post, b->post_post, a->n_post_post * sizeof(*a->post_post)));
	SAME(a->bos == b->bos && a->eos == b->eos);
#undef SAME
	return 1;
}

/* Load doc both ways.  Returns 1 when the fast reader took it and built
 * what the general loader builds, 0 when it declined and the public entry
 * point gives what the general loader gives (the same tables, or the same
 * message), -1 (said on stderr) otherwise.  The text is copied to a buffer
 * of its exact length, so that a read past its end is one a sanitizer
 * sees. */
static int
check_doc(const char *doc, size_t len, const char *what)
{
	char *text = llm_xmalloc(len ? len : 1);
	memcpy(text, doc, len);
	int rc = -1;
	struct llm_tokenizer *fast = llm_tok_load_doc(text, len, "test.json", 1);
	struct llm_tokenizer *slow = llm_tok_load_doc(text, len, "test.json", 0);
	char *err = llm_xstrdup(slow ? "" : llm_errmsg());
	if (fast) {
		if (!slow)
			fprintf(stderr, "  %s: the fast reader accepted, the general loader said '%s'\n", what, err);
		else if (same_tokenizer(fast, slow, what))
			rc = 1;
	} else {
		struct llm_tokenizer *pub = llm_tokenizer_load_json(text, len, "test.json");
		if (!slow && !pub && strcmp(llm_errmsg(), err) == 0)
			rc = 0;
		else if (slow && pub && same_tokenizer(pub, slow, what))
			rc = 0;
		else
			fprintf(stderr, "  %s: '%s' where the general loader says '%s'\n", what,
			    pub ? "(loaded)" : llm_errmsg(), slow ? "(loaded)" : err);
		llm_tokenizer_free(pub);
	}
	llm_tokenizer_free(fast);
	llm_tokenizer_free(slow);
	free(err);
	free(text);
	return rc;
}

T_TEST(real_tokenizers_load_the_same_both_ways)
{
	static const char *const paths[] = {
		"tests/fixtures/tokenizer/synth-bytelevel.tokenizer.json",
		"tests/fixtures/tokenizer/synth-metaspace.tokenizer.json",
		"tests/fixtures/tokenizer/synth-split.tokenizer.json",
		"tests/fixtures/tokenizer/synth-unk.tokenizer.json",
		"tests/fixtures/tokenizer/synth-whitespace.tokenizer.json",
		"../shared/fixtures/tokenizers/ds-r1-distill-qwen/tokenizer.json",
		"tests/npm/node_modules/.cache/tokenizers/llama3/tokenizer.json",
		"tests/npm/node_modules/.cache/tokenizers/llama3-bos/tokenizer.json",
		"tests/npm/node_modules/.cache/tokenizers/llama2/tokenizer.json",
		"tests/npm/node_modules/.cache/tokenizers/llama2-metaspace/tokenizer.json",
	};
	for (size_t i = 0; i < LLM_NELEM(paths); i++) {
		struct llm_map m;
		if (i >= 5 && !llm_file_exists(paths[i]))
			continue; /* fetched, not committed */
		T_CHECKF(llm_map_file(&m, paths[i]) == 0, "%s", llm_errmsg());
		int rc = check_doc((const char *)m.p, m.len, paths[i]);
		llm_unmap(&m);
		T_CHECKF(rc == 1, "%s: %s", paths[i], rc == 0 ? "the fast reader declined" : "differs");
	}
}

T_TEST(escapes_and_layouts_read_as_jansson_reads_them)
{
	static const char *const docs[] = {
		/* Every escape, raw UTF-8, both merge forms in one array. */
		"{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"\\u0120\": 3,"
		" \"\\u0120a\": 4, \"\\ud83d\\ude00\": 5, \"\\\"\\\\\\/\": 6, \"\\b\\f\\n\\r\\t\": 7,"
		" \"\xc3\xa9\": 8, \"\xc3\xa9" "a\": 9, \"\\u00E9b\": 10, \"\xf0\x9f\x98\x80" "a\": 11},"
		" \"merges\": [\"a b\", \"\\u0120 a\", [\"\xc3\xa9\", \"a\"], [\"\\ud83d\\ude00\", \"a\"]]}}",
		/* Merges before the vocabulary, the model last, keys spelt with
		 * escapes, white space of every kind. */
		"\r\n\t{ \"added_tokens\" : [ ] ,\t\"mod\\u0065l\"\r:\n{ \"merges\" :\t[ [ \"a\" , \"b\" ] ] ,"
		" \"voc\\u0061b\" : { \"a\" : 0 , \"b\" : 1 , \"ab\" : 2 } , \"type\" : \"BPE\" } }\n",
		/* Members the reader skips, with quotes and brackets inside
		 * strings. */
		"{\"x\": [\"\\\"}\", {\"\\\\\": \"]\"}, true, -1.5e3, null], \"model\": {\"vocab\": {\"a\": 0},"
		" \"y\": {\"\\\"\": [[]]}, \"merges\": []}, \"z\": \"{\"}",
		/* Empty vocabulary and merges. */
		"{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}",
		/* Two strings for one id: which one decodes it is undefined
		 * (in Hugging Face's tokenizers too): declined, and refused
		 * naming both.  The ids out of order and with gaps. */
		"{\"model\": {\"vocab\": {\"b\": 1, \"a\": 0, \"c\": 1, \"ab\": 70000}, \"merges\": [\"a b\"]}}",
		/* A merge repeated with another rank (the later one counts),
		 * and a space written as an escape. */
		"{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, \"merges\": [\"a b\", [\"a\", \"b\"],"
		" \"a\\u0020b\"]}}",
		/* A "model" that is not an object before the real one is a
		 * duplicate key: declined, and jansson's message. */
		"{\"model\": 1, \"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}}",
	};
	static const int fast[] = {1, 1, 1, 1, 0, 1, 0};
	for (size_t i = 0; i < LLM_NELEM(docs); i++) {
		char what[32];
		snprintf(what, sizeof(what), "doc %zu", i);
		T_CHECKF(check_doc(docs[i], strlen(docs[i]), what) == fast[i], "doc %zu", i);
	}
	T_CHECK(!llm_tokenizer_load_json(docs[4], strlen(docs[4]), "test.json") &&
	    strcmp(llm_errmsg(), "test.json: model.vocab: 'c' and 'b' both have id 1") == 0);
	/* merges given twice: loaded, the later rank kept, said once */
	struct llm_tokenizer *d = llm_tokenizer_load_json(docs[5], strlen(docs[5]), "test.json");
	T_CHECK(d && llm_tokenizer_warning(d) &&
	    strcmp(llm_tokenizer_warning(d),
		"test.json: model.merges: 2 merges given twice (the later rank counts, as in "
		"Hugging Face's tokenizers)") == 0);
	llm_tokenizer_free(d);
	struct llm_tokenizer *t = llm_tokenizer_load_json(docs[0], strlen(docs[0]), "test.json");
	T_CHECK(t && !llm_tokenizer_warning(t));
	size_t len;
	T_CHECK(t != NULL);
	T_CHECK(llm_tokenizer_find(t, "\xc4\xa0" "a", 3) == 4);
	T_CHECK(llm_tokenizer_find(t, "\xc3\xa9" "b", 3) == 10);
	T_CHECK(strcmp(llm_tokenizer_token_text(t, 5, &len), "\xf0\x9f\x98\x80") == 0 && len == 4);
	T_CHECK(strcmp(llm_tokenizer_token_text(t, 6, &len), "\"\\/") == 0 && len == 3);
	T_CHECK(strcmp(llm_tokenizer_token_text(t, 7, &len), "\b\f\n\r\t") == 0 && len == 5);
	llm_tokenizer_free(t);
}

/* Documents the fast reader must decline; the message must then be the
 * general loader's (jansson's "name:line:col: ..." for bad JSON). */
T_TEST(what_the_fast_reader_declines_fails_as_before)
{
	static const char *const vocabs[] = {
		"{\"a\": 0, \"a\": 1}",       /* duplicate key */
		"{\"a\": 0, \"\\u0061\": 1}", /* the same key, escaped */
		"{\"a\\u0000\": 0}",          /* NUL in a key */
		"{\"\\ud800\": 0}",           /* lone high surrogate */
		"{\"\\udc00\": 0}",           /* lone low surrogate */
		"{\"\\ud800\\u0041\": 0}",    /* high surrogate, then no low one */
		"{\"\\ud800\\\\\": 0}",
		"{\"\\x\": 0}",     /* unknown escape */
		"{\"\\u12g4\": 0}", /* not hex */
		"{\"\\u12\": 0}",
		"{\"a\tb\": 0}",         /* raw control character */
		"{\"\xc0\x80\": 0}",     /* overlong */
		"{\"\xed\xa0\x80\": 0}", /* encoded surrogate */
		"{\"\xff\": 0}",
		"{\"\xe2\x96\": 0}",         /* truncated sequence */
		"{\"\xf4\x90\x80\x80\": 0}", /* beyond U+10FFFF */
		"{\"a\": 01}",
		"{\"a\": -1}",
		"{\"a\": 1.0}",
		"{\"a\": 1e2}",
		"{\"a\": 2147483647}",
		"{\"a\": 99999999999}",
		"{\"a\": -0}",
		"{\"a\": \"0\"}",
		"{\"a\": null}",
		"{\"a\": 0,}",
		"{\"a\" 0}",
		"{\"a\": 0 \"b\": 1}",
		"{a: 0}",
		"{\"a\": 0",
		"[]",
		"{\"a\": 0}}",
	};
	static const char *const merges[] = {
		"[\"a b c\"]",
		"[\"ab\"]",
		"[\"a  b\"]",
		"[\"a c\"]",
		"[[\"a\", \"b\", \"c\"]]",
		"[[\"a\"]]",
		"[[\"a\", 1]]",
		"[1]",
		"[null]",
		"[\"a b\",]",
		"[\"a b\" \"a b\"]",
		"{}",
		"[\"a\\u0000 b\"]",
		"[[\"a\",\"b\"]",
		"[\"a b\"]]",
	};
	char doc[512];
	for (size_t i = 0; i < LLM_NELEM(vocabs); i++) {
		int n = snprintf(doc, sizeof(doc), "{\"model\": {\"type\": \"BPE\", \"vocab\": %s, \"merges\": []}}",
		    vocabs[i]);
		T_CHECKF(check_doc(doc, (size_t)n, doc) == 0, "%s", doc);
	}
	for (size_t i = 0; i < LLM_NELEM(merges); i++) {
		int n = snprintf(doc, sizeof(doc),
		    "{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
		    "\"merges\": %s}}",
		    merges[i]);
		T_CHECKF(check_doc(doc, (size_t)n, doc) == 0, "%s", doc);
	}
	static const char *const docs[] = {
		"{\"model\": {\"vocab\": {\"a\": 0}, \"vocab\": {\"b\": 0}, \"merges\": []}}",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [], \"merges\": []}}",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}, \"model\": {}}",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}} x",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}, \"x\": \"\\q\"}",
		"{\"model\": {\"vocab\": {\"a\": 0}}}",
		"{\"model\": {\"merges\": []}}",
		"{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}, \"merges\": []}}",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [], \"dropout\": 0.1}}",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}, \"normalizer\": {\"type\": \"Precompiled\"}}",
		"{\"model\": {\"vocab\": [], \"merges\": []}}",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": {}}}",
		"",
		"{",
		"{\"model\": {\"vocab\": {\"a\": 0}, \"merges\": [\"a",
		"{\"model\": {\"vocab\": {\"a\": 0, \"",
	};
	for (size_t i = 0; i < LLM_NELEM(docs); i++)
		T_CHECKF(check_doc(docs[i], strlen(docs[i]), docs[i]) == 0, "%s", docs[i]);
	/* For bad JSON the message is jansson's, with the line and column. */
	const char *bad = "{\"model\": {\"vocab\": {\"a\": 0,\n \"a\": 1}, \"merges\": []}}";
	T_CHECK(llm_tokenizer_load_json(bad, strlen(bad), "test.json") == NULL);
	T_CHECKF(strncmp(llm_errmsg(), "test.json:2:", 12) == 0 && strstr(llm_errmsg(), "duplicate object key"), "%s",
	    llm_errmsg());
}

/* Random edits of a small document that has every part the reader knows:
 * each mutant must load as the general loader loads it, or fail with its
 * message. */
T_TEST(mutated_documents_load_as_the_general_loader_loads_them)
{
	static const char seed[] =
	    "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 5, \"content\": \"<s>\", \"special\": true}],"
	    " \"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Metaspace\", \"replacement\": \"\\u2581\","
	    " \"prepend_scheme\": \"first\", \"split\": false}, \"decoder\": null, \"model\": {\"type\": \"BPE\","
	    " \"unk_token\": \"u\", \"vocab\": {\"u\": 0, \"a\": 1, \"b\": 2, \"ab\": 3, \"\\u00e9\": 4,"
	    " \"\\ud83d\\ude00\": 6, \"\\u00e9\\ud83d\\ude00\": 7, \"\\\"\": 8, \"a\\\"\": 9},"
	    " \"merges\": [\"a b\", [\"\\u00e9\", \"\\ud83d\\ude00\"], \"a \\\"\"]}}";
	static const char alphabet[] = "\"\\{}[],: 0159aeudDuU\x80\xc3\xed\xf0\t\n";
	uint64_t r = 0x9e3779b97f4a7c15ULL;
	size_t n = strlen(seed), accepted = 0;
	char doc[sizeof(seed) + 16], what[64];

	T_CHECK(check_doc(seed, n, "seed") == 1);
	for (int k = 0; k < 3000; k++) {
		memcpy(doc, seed, n);
		size_t len = n;
		for (int edits = 1 + k % 3; edits > 0; edits--) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			size_t at = (size_t)(r >> 8) % len;
			char c = alphabet[(r >> 40) % (sizeof(alphabet) - 1)];
			switch (r % 3) {
			case 0: /* replace */
				doc[at] = c;
				break;
			case 1: /* delete */
				memmove(doc + at, doc + at + 1, len - at - 1);
				len--;
				break;
			default: /* insert */
				if (len + 1 < sizeof(doc)) {
					memmove(doc + at + 1, doc + at, len - at);
					doc[at] = c;
					len++;
				}
			}
		}
		snprintf(what, sizeof(what), "mutant %d", k);
		int rc = check_doc(doc, len, what);
		T_CHECKF(rc >= 0, "mutant %d: %.*s", k, (int)len, doc);
		accepted += rc == 1;
	}
	/* Edits outside the two values leave most mutants to the reader. */
	T_CHECKF(accepted > 100, "only %zu mutants taken by the fast reader", accepted);
}

/* nfc_init skips the code points without a canonical decomposition; the
 * table must be the one that asking utf8proc about each gives. */
T_TEST(nfc_table_is_what_utf8proc_says_for_every_code_point)
{
	llm_tok_nfc_init();
	uint8_t *u = llm_xcalloc(NFC_TABLE_MAX / 8, 1);
	for (utf8proc_int32_t c = 0x80; c < NFC_TABLE_MAX; c++) {
		utf8proc_int32_t buf[16];
		int last = 0;
		if (utf8proc_get_property(c)->combining_class) {
			u[c >> 3] |= (uint8_t)(1u << (c & 7));
			continue;
		}
		utf8proc_ssize_t k = utf8proc_decompose_char(c, buf, 16, UTF8PROC_DECOMPOSE, &last);
		if (k == 1 && buf[0] == c)
			continue;
		if (k < 1 || k > 16) {
			u[c >> 3] |= (uint8_t)(1u << (c & 7));
			continue;
		}
		if (buf[k - 1] < NFC_TABLE_MAX)
			u[buf[k - 1] >> 3] |= (uint8_t)(1u << (buf[k - 1] & 7));
		k = utf8proc_normalize_utf32(buf, k, UTF8PROC_COMPOSE | UTF8PROC_STABLE);
		if (k != 1 || buf[0] != c)
			u[c >> 3] |= (uint8_t)(1u << (c & 7));
	}
	int same = memcmp(u, llm_tok_nfc_unsafe, NFC_TABLE_MAX / 8) == 0;
	free(u);
	T_CHECK(same);
}

int
main(void)
{
	T_RUN(real_tokenizers_load_the_same_both_ways);
	T_RUN(escapes_and_layouts_read_as_jansson_reads_them);
	T_RUN(what_the_fast_reader_declines_fails_as_before);
	T_RUN(mutated_documents_load_as_the_general_loader_loads_them);
	T_RUN(nfc_table_is_what_utf8proc_says_for_every_code_point);
	return T_DONE();
}
