/* json.c: see json.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "util.h"

static json_t *
loaded(json_t *j, json_error_t *e, const char *name)
{
	if (!j)
		llm_seterr("%s:%d:%d: %s", name, e->line, e->column, e->text);
	return j;
}

/* Parse buf.  jansson refuses an integer beyond int64 ("too big
 * integer", "too big negative integer"), and Hugging Face writes such numbers where no program needs
 * them exactly (transformers' "very large integer" for model_max_length,
 * 1000000000000000019884624838656): each one is read as a real instead,
 * by parsing again with ".0" after its digits.  Integers that fit stay
 * integers. */
static json_t *
parse(const char *buf, size_t len, const char *name, size_t flags)
{
	json_error_t e;
	char *copy = NULL;
	json_t *j;

	for (int tries = 0;; tries++) {
		j = json_loadb(buf, len, flags, &e);
		if (j || tries == 64 || strncmp(e.text, "too big ", 8) != 0 || !strstr(e.text, "integer"))
			break;
		/* e.position is just past the number (or its next byte). */
		size_t end = (size_t)e.position < len ? (size_t)e.position : len;
		while (end > 0 && !(buf[end - 1] >= '0' && buf[end - 1] <= '9'))
			end--;
		size_t start = end;
		while (start > 0 && buf[start - 1] >= '0' && buf[start - 1] <= '9')
			start--;
		if (start == end)
			break;
		char *next = llm_xmalloc(len + 2);
		memcpy(next, buf, end);
		memcpy(next + end, ".0", 2);
		memcpy(next + end + 2, buf + end, len - end);
		free(copy);
		buf = copy = next;
		len += 2;
	}
	free(copy);
	return loaded(j, &e, name);
}

json_t *
llm_json_load(const char *path)
{
	char *buf;
	size_t len;

	/* Read ourselves so that a missing file gets the strerror message. */
	if (llm_read_file(path, &buf, &len) < 0)
		return NULL;
	json_t *j = parse(buf, len, path, JSON_REJECT_DUPLICATES);
	free(buf);
	return j;
}

json_t *
llm_json_loadb(const char *buf, size_t len, const char *name)
{
	return parse(buf, len, name, JSON_REJECT_DUPLICATES);
}

json_t *
llm_json_loadb_js(const char *buf, size_t len, const char *name)
{
	return parse(buf, len, name, JSON_DECODE_INT_AS_REAL);
}

char *
llm_json_dumps(const json_t *j)
{
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	if (!s)
		llm_fatal("out of memory serialising JSON");
	size_t n = strlen(s);
	s = llm_xrealloc(s, n + 2);
	s[n] = '\n';
	s[n + 1] = 0;
	return s;
}

int
llm_json_write(const char *path, const json_t *j)
{
	char *s = llm_json_dumps(j);
	int rc = llm_write_file(path, s, strlen(s));
	free(s);
	return rc;
}

/* Find key: 1 found, 0 missing or null. */
static int
find(const json_t *o, const char *key, json_t **v)
{
	*v = json_is_object(o) ? json_object_get(o, key) : NULL;
	return *v && !json_is_null(*v);
}

static int
bad(const char *ctx, const char *key, const char *want)
{
	return llm_seterr("%s: key '%s': expected %s", ctx, key, want);
}

static int
missing(const char *ctx, const char *key)
{
	return llm_seterr("%s: missing key '%s'", ctx, key);
}

int
llm_json_int_opt(const json_t *o, const char *key, const char *ctx, int64_t *out)
{
	json_t *v;
	if (!find(o, key, &v))
		return 0;
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 1;
	}
	/* Accept integral reals such as 1e4 or 10000.0 (config.json has them). */
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (d == floor(d) && fabs(d) < 9e15) {
			*out = (int64_t)d;
			return 1;
		}
	}
	return bad(ctx, key, "an integer");
}

int
llm_json_num_opt(const json_t *o, const char *key, const char *ctx, double *out)
{
	json_t *v;
	if (!find(o, key, &v))
		return 0;
	if (!json_is_number(v))
		return bad(ctx, key, "a number");
	*out = json_number_value(v);
	return 1;
}

int
llm_json_str_opt(const json_t *o, const char *key, const char *ctx, const char **out)
{
	json_t *v;
	if (!find(o, key, &v))
		return 0;
	if (!json_is_string(v))
		return bad(ctx, key, "a string");
	*out = json_string_value(v);
	return 1;
}

int
llm_json_bool_opt(const json_t *o, const char *key, const char *ctx, int *out)
{
	json_t *v;
	if (!find(o, key, &v))
		return 0;
	if (!json_is_boolean(v))
		return bad(ctx, key, "true or false");
	*out = json_is_true(v);
	return 1;
}

#define REQUIRED(name, type) \
int \
llm_json_##name(const json_t *o, const char *key, const char *ctx, type *out) \
{ \
	int rc = llm_json_##name##_opt(o, key, ctx, out); \
	return rc == 0 ? missing(ctx, key) : rc < 0 ? -1 : 0; \
}
REQUIRED(int, int64_t)
REQUIRED(num, double)
REQUIRED(str, const char *)
REQUIRED(bool, int)

int
llm_json_u64(const json_t *o, const char *key, const char *ctx, uint64_t *out)
{
	int64_t v;
	if (llm_json_int(o, key, ctx, &v) < 0)
		return -1;
	if (v < 0)
		return llm_seterr("%s: key '%s': negative", ctx, key);
	*out = (uint64_t)v;
	return 0;
}

json_t *
llm_json_i64_array(const int64_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

void
llm_json_quote(struct llm_buf *out, const char *s, size_t n)
{
	llm_buf_add(out, "\"", 1);
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = NULL;
		char u[8];
		/* one escape a line */
		/* clang-format off */
		switch (c) {
		case '"': e = "\\\""; break;
		case '\\': e = "\\\\"; break;
		case '\b': e = "\\b"; break;
		case '\f': e = "\\f"; break;
		case '\n': e = "\\n"; break;
		case '\r': e = "\\r"; break;
		case '\t': e = "\\t"; break;
		/* clang-format on */
		default:
			if (c < 0x20) {
				snprintf(u, sizeof(u), "\\u%04x", c);
				e = u;
			}
		}
		if (!e)
			continue;
		llm_buf_add(out, s + run, i - run);
		llm_buf_puts(out, e);
		run = i + 1;
	}
	llm_buf_add(out, s + run, n - run);
	llm_buf_add(out, "\"", 1);
}

const char *
llm_json_shown(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "(text with control characters)";
	return s;
}
