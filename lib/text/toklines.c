/* toklines.c: the line protocol of `llm-run --tokenize` and
 * `--detokenize` (see toklines.h): one JSON value in and one out per line,
 * through the public tokenizer API only. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "tokenizer.h"
#include "toklines.h"
#include "../base/util.h"

/* ids as a JSON array and a newline: "[1,2,3]\n". */
static void
print_ids(const int64_t *ids, size_t n, struct llm_buf *out)
{
	llm_buf_add(out, "[", 1);
	for (size_t i = 0; i < n; i++)
		llm_buf_printf(out, i ? ",%lld" : "%lld", (long long)ids[i]);
	llm_buf_add(out, "]\n", 2);
}

/* Run one line of the protocol; 0, or -1 with llm_errmsg. */
static int
protocol_line(struct llm_tokenizer *t, int decode, int flag, const char *line, size_t len, const char *where,
    int64_t **ids, size_t *cap, struct llm_buf *out)
{
	json_error_t err;
	size_t n = 0;
	int rc = 0;

	if (!decode) {
		/* the text: the line's bytes themselves, or its JSON string */
		const char *text = line;
		size_t tl = len;
		json_t *j = NULL;
		if (!(flag & LLM_TOK_RAW)) {
			if (!(j = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err)))
				return llm_seterr("%s: %s", where, err.text);
			if (!json_is_string(j)) {
				json_decref(j);
				return llm_seterr("%s: expected a JSON string", where);
			}
			text = json_string_value(j);
			tl = json_string_length(j);
		}
		const size_t all[1][2] = {{0, tl}};
		if (llm_tokenizer_encode_plain(t, text, tl, flag & LLM_TOK_ADD_SPECIAL, all,
			(flag & LLM_TOK_PLAIN) && tl > 0 ? 1 : 0, ids, &n) < 0)
			rc = llm_seterr("%s: %s", where, llm_errmsg());
		else
			print_ids(*ids, n, out);
		json_decref(j);
		return rc;
	}
	json_t *j = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!j)
		return llm_seterr("%s: %s", where, err.text);
	size_t i;
	json_t *v;
	if (!json_is_array(j)) {
		json_decref(j);
		return llm_seterr("%s: expected a JSON array of token ids", where);
	}
	if (json_array_size(j) > *cap) {
		*cap = json_array_size(j);
		*ids = llm_xreallocarray(*ids, *cap, sizeof(**ids));
	}
	json_array_foreach (j, i, v) {
		if (!json_is_integer(v)) {
			json_decref(j);
			return llm_seterr("%s: item %zu is not an integer", where, i);
		}
		/* strict: one rule for ids everywhere, 0 <= id < n_vocab */
		json_int_t id = json_integer_value(v);
		if ((flag & LLM_DETOK_STRICT) && (id < 0 || id >= llm_tokenizer_n_vocab(t))) {
			json_decref(j);
			return llm_seterr("%s: item %zu: token id %lld is out of range [0, %lld)", where, i,
			    (long long)id, (long long)llm_tokenizer_n_vocab(t));
		}
		(*ids)[n++] = json_integer_value(v);
	}
	json_decref(j);
	size_t start = out->len;
	llm_tokenizer_decode(t, *ids, n, flag & LLM_DETOK_SKIP_SPECIAL, out);
	/* Escape the decoded text in place: move it aside first. */
	size_t tl = out->len - start;
	char *text = llm_xmalloc(tl + 1);
	if (tl) /* out->p may still be NULL when nothing was decoded */
		memcpy(text, out->p + start, tl);
	out->len = start;
	llm_json_quote(out, text, tl);
	llm_buf_add(out, "\n", 1);
	free(text);
	return 0;
}

static int
protocol(struct llm_tokenizer *t, int decode, const char *in, size_t len, const char *name, int flag,
    struct llm_buf *out)
{
	int64_t *ids = NULL;
	size_t cap = 0, lineno = 0;
	int rc = 0;
	for (size_t i = 0; i < len && rc == 0;) {
		const char *nl = memchr(in + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - in) : len;
		char *where = llm_xasprintf("%s:%zu", name, ++lineno);
		rc = protocol_line(t, decode, flag, in + i, e - i, where, &ids, &cap, out);
		free(where);
		i = e + 1;
	}
	free(ids);
	return rc;
}

int
llm_tokenizer_tokenize_lines(struct llm_tokenizer *t, const char *in, size_t len, const char *name, int flags,
    struct llm_buf *out)
{
	return protocol(t, 0, in, len, name, flags, out);
}

int
llm_tokenizer_detokenize_lines(struct llm_tokenizer *t, const char *in, size_t len, const char *name, int flags,
    struct llm_buf *out)
{
	return protocol(t, 1, in, len, name, flags, out);
}
