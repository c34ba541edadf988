/* chat.c: see chat.h. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "../base/json.h"
#include "tokenizer.h"

/* The DeepSeek markers: fullwidth vertical bars (U+FF5C) and U+2581. */
#define DS_BOS "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_EOS "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_USER "<\xef\xbd\x9c" "User\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"
#define DS_TOOL_OUTPUTS_BEGIN "<\xef\xbd\x9c" "tool\xe2\x96\x81outputs\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_TOOL_OUTPUTS_END "<\xef\xbd\x9c" "tool\xe2\x96\x81outputs\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_TOOL_OUTPUT_BEGIN "<\xef\xbd\x9c" "tool\xe2\x96\x81output\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_TOOL_OUTPUT_END "<\xef\xbd\x9c" "tool\xe2\x96\x81output\xe2\x96\x81" "end\xef\xbd\x9c>"

static const struct {
	const char *name, *bos, *eos, *eot;
} templates[LLM_CHAT_COUNT] = {
	[LLM_CHAT_DEEPSEEK_R1] = {"deepseek-r1", DS_BOS, DS_EOS, DS_EOS},
	[LLM_CHAT_QWEN2] = {"qwen2", "", "<|im_end|>", "<|im_end|>"},
	[LLM_CHAT_LLAMA3] = {"llama3", "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"},
	[LLM_CHAT_LLAMA2] = {"llama2", "<s>", "</s>", "</s>"},
	[LLM_CHAT_QWEN3] = {"qwen3", "", "<|im_end|>", "<|im_end|>"},
};

const char *
llm_chat_name(int tmpl)
{
	return tmpl >= 0 && tmpl < LLM_CHAT_COUNT ? templates[tmpl].name : NULL;
}

int
llm_chat_find(const char *name)
{
	for (int i = 0; i < LLM_CHAT_COUNT; i++)
		if (strcmp(name, templates[i].name) == 0)
			return i;
	return -1;
}

int
llm_chat_recognise(const char *t)
{
	if (!t)
		return -1;
	if (strstr(t, DS_ASSISTANT))
		return LLM_CHAT_DEEPSEEK_R1;
	if (strstr(t, "<|start_header_id|>"))
		return LLM_CHAT_LLAMA3;
	if (strstr(t, "<|im_start|>") && strstr(t, "</think>"))
		return LLM_CHAT_QWEN3;
	if (strstr(t, "<|im_start|>"))
		return LLM_CHAT_QWEN2;
	if (strstr(t, "[INST]"))
		return LLM_CHAT_LLAMA2;
	return -1;
}

const char *
llm_chat_default_bos(int tmpl)
{
	return templates[tmpl].bos;
}

const char *
llm_chat_default_eos(int tmpl)
{
	return templates[tmpl].eos;
}

const char *
llm_chat_end_of_turn(int tmpl)
{
	return templates[tmpl].eot;
}

void
llm_chat_add(struct llm_chat *c, const char *role, const char *content, size_t len)
{
	struct llm_chat_msg *m;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 8;
		c->msgs = llm_xreallocarray(c->msgs, c->cap, sizeof(*c->msgs));
	}
	m = &c->msgs[c->n++];
	m->role = llm_xstrdup(role);
	m->content = llm_xmalloc(len + 1);
	memcpy(m->content, content, len);
	m->content[len] = 0;
	m->len = len;
}

void
llm_chat_remove(struct llm_chat *c, size_t i, size_t count)
{
	for (size_t k = i; k < i + count; k++) {
		free(c->msgs[k].role);
		free(c->msgs[k].content);
	}
	if (c->n > i + count)
		memmove(c->msgs + i, c->msgs + i + count, (c->n - i - count) * sizeof(*c->msgs));
	c->n -= count;
}

void
llm_chat_free(struct llm_chat *c)
{
	llm_chat_remove(c, 0, c->n);
	free(c->msgs);
	memset(c, 0, sizeof(*c));
}

int
llm_chat_parse(struct llm_chat *c, const char *text, size_t len, const char *name)
{
	json_t *root = llm_json_loadb(text, len, name), *m;
	size_t i;

	if (!root)
		return -1;
	if (!json_is_array(root) || json_array_size(root) == 0) {
		json_decref(root);
		return llm_seterr("%s: expected a JSON array of messages", name);
	}
	size_t n0 = c->n;
	json_array_foreach (root, i, m) {
		json_t *role = json_object_get(m, "role"), *content = json_object_get(m, "content"); /* borrowed */
		if (!json_is_object(m) || !json_is_string(role) || !json_is_string(content)) {
			json_decref(root);
			llm_chat_remove(c, n0, c->n - n0); /* as it was */
			return llm_seterr("%s: message %zu: expected {\"role\": string, \"content\": string}", name, i);
		}
		llm_chat_add(c, json_string_value(role), json_string_value(content), json_string_length(content));
	}
	json_decref(root);
	return 0;
}

/* JavaScript white space (WhiteSpace and LineTerminator of ECMA-262): what
 * String.prototype.trim removes. */
static int
js_space(uint32_t cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0xa0 || cp == 0x1680 ||
	    (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
	    cp == 0x3000 || cp == 0xfeff;
}

/* s[*b, *e) trimmed of JavaScript white space at both ends. */
static void
js_trim(const char *s, size_t *b, size_t *e)
{
	uint32_t cp;
	size_t k;

	while (*b < *e && (k = llm_utf8_decode(s + *b, *e - *b, &cp)) > 0 && js_space(cp))
		*b += k;
	while (*e > *b) {
		size_t st = *e - 1;
		while (st > *b && ((unsigned char)s[st] & 0xc0) == 0x80)
			st--;
		if ((k = llm_utf8_decode(s + st, *e - st, &cp)) == 0 || st + k != *e || !js_space(cp))
			break;
		*e = st;
	}
}

/* The text being rendered and, when wanted, the ranges of it that come
 * from the messages. */
struct rbuf {
	struct llm_buf b;
	struct llm_chat_spans *sp;
};

/* Append text that comes from a message (its content or role). */
static void
content_add(struct rbuf *out, const char *s, size_t n)
{
	struct llm_chat_spans *sp = out->sp;

	if (sp && n > 0) {
		if (sp->n > 0 && sp->r[sp->n - 1][1] == out->b.len)
			sp->r[sp->n - 1][1] += n;
		else {
			if (sp->n == sp->cap) {
				sp->cap = sp->cap ? 2 * sp->cap : 16;
				sp->r = llm_xreallocarray(sp->r, sp->cap, sizeof(*sp->r));
			}
			sp->r[sp->n][0] = out->b.len;
			sp->r[sp->n][1] = out->b.len + n;
			sp->n++;
		}
	}
	llm_buf_add(&out->b, n ? s : "", n);
}

static void
add_trimmed(struct rbuf *out, const char *s, size_t n)
{
	size_t b = 0, e = n;
	js_trim(s, &b, &e);
	content_add(out, s + b, e - b);
}

/* JavaScript's `s == false`: Number(s) is +0 or -0 (ECMA-262
 * StringToNumber: white space trimmed; empty is 0; decimal with an
 * optional sign, or 0x / 0o / 0b digits; Infinity; else NaN). */
static int
js_loosely_false(const char *s, size_t n)
{
	size_t b = 0, e = n, i;
	int base = 0;

	js_trim(s, &b, &e);
	if (b == e)
		return 1;
	if (e - b > 2 && s[b] == '0') {
		char x = s[b + 1] | 0x20;
		base = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
	}
	if (base) {
		int zero = 1;
		for (i = b + 2; i < e; i++) {
			int c = (unsigned char)s[i],
			    d = c >= '0' && c <= '9'               ? c - '0' :
			    (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 :
								     99;
			if (d >= base)
				return 0;
			zero &= d == 0;
		}
		return zero;
	}
	/* StrDecimalLiteral: [+-] (digits [. digits] | . digits) [e [+-] digits] */
	i = b;
	if (s[i] == '+' || s[i] == '-')
		i++;
	size_t nd = 0;
	while (i < e && s[i] >= '0' && s[i] <= '9')
		i++, nd++;
	if (i < e && s[i] == '.') {
		i++;
		while (i < e && s[i] >= '0' && s[i] <= '9')
			i++, nd++;
	}
	if (nd == 0)
		return 0; /* NaN, or Infinity: not 0 either way */
	if (i < e && (s[i] | 0x20) == 'e') {
		size_t ne = 0;
		i++;
		if (i < e && (s[i] == '+' || s[i] == '-'))
			i++;
		while (i < e && s[i] >= '0' && s[i] <= '9')
			i++, ne++;
		if (ne == 0)
			return 0;
	}
	if (i != e)
		return 0;
	/* A valid literal: its value, rounded as JavaScript rounds (to
	 * nearest double; tiny values underflow to 0). */
	char *copy = llm_xmalloc(e - b + 1), *end;
	memcpy(copy, s + b, e - b);
	copy[e - b] = 0;
	errno = 0;
	double v = strtod(copy, &end);
	free(copy);
	return v == 0;
}

static int
is(const struct llm_chat_msg *m, const char *role)
{
	return strcmp(m->role, role) == 0;
}

static void
put(struct rbuf *out, const char *s)
{
	llm_buf_puts(&out->b, s);
}

static void
put_content(struct rbuf *out, const struct llm_chat_msg *m)
{
	content_add(out, m->content, m->len);
}

/* The last occurrence of needle in s[0, n), or NULL. */
static const char *
last_of(const char *s, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
		if (memcmp(s + i, needle, k) == 0)
			return s + i;
	return NULL;
}

static void
render_deepseek(const struct llm_chat *c, int gen, const char *bos, struct rbuf *out)
{
	const struct llm_chat_msg *sys = NULL;
	int is_tool = 0, is_output_first = 1;

	for (size_t i = 0; i < c->n; i++)
		if (is(&c->msgs[i], "system"))
			sys = &c->msgs[i];
	put(out, bos);
	if (sys)
		put_content(out, sys);
	for (size_t i = 0; i < c->n; i++) {
		const struct llm_chat_msg *m = &c->msgs[i];
		if (is(m, "user")) {
			is_tool = 0;
			put(out, DS_USER);
			put_content(out, m);
		} else if (is(m, "assistant")) {
			if (is_tool) {
				put(out, DS_TOOL_OUTPUTS_END);
				put_content(out, m);
				put(out, DS_EOS);
				is_tool = 0;
			} else {
				/* content.split('</think>')[-1] */
				const char *t = last_of(m->content, m->len, "</think>");
				const char *p = t ? t + 8 : m->content;
				put(out, DS_ASSISTANT);
				content_add(out, p, m->len - (size_t)(p - m->content));
				put(out, DS_EOS);
			}
		} else if (is(m, "tool")) {
			is_tool = 1;
			put(out,
			    is_output_first ? DS_TOOL_OUTPUTS_BEGIN DS_TOOL_OUTPUT_BEGIN : "\n" DS_TOOL_OUTPUT_BEGIN);
			put_content(out, m);
			put(out, DS_TOOL_OUTPUT_END);
			is_output_first = 0;
		}
	}
	if (is_tool)
		put(out, DS_TOOL_OUTPUTS_END);
	if (gen && !is_tool)
		put(out, DS_ASSISTANT "<think>\n");
}

static void
render_qwen2(const struct llm_chat *c, int gen, struct rbuf *out)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct llm_chat_msg *m = &c->msgs[i];
		if (i == 0 && !is(&c->msgs[0], "system"))
			put(out, "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n");
		put(out, "<|im_start|>");
		put(out, m->role);
		put(out, "\n");
		put_content(out, m);
		put(out, "<|im_end|>\n");
	}
	if (gen)
		put(out, "<|im_start|>assistant\n");
}

/* s [b, e) without the newlines at its start (lead) and its end (trail),
 * Python's lstrip/rstrip/strip('\n'). */
static void
strip_nl(const char *s, size_t *b, size_t *e, int lead, int trail)
{
	while (lead && *b < *e && s[*b] == '\n')
		(*b)++;
	while (trail && *e > *b && s[*e - 1] == '\n')
		(*e)--;
}

static int
has_affixes(const struct llm_chat_msg *m, const char *pre, const char *suf)
{
	size_t a = strlen(pre), z = strlen(suf);
	return m->len >= a && m->len >= z && memcmp(m->content, pre, a) == 0 &&
	    memcmp(m->content + m->len - z, suf, z) == 0;
}

static void
render_qwen3(const struct llm_chat *c, int gen, struct rbuf *out)
{
	size_t n = c->n, last = n - 1; /* ns.last_query_index (with n 0 it wraps: no message) */

	if (n && is(&c->msgs[0], "system")) {
		put(out, "<|im_start|>system\n");
		put_content(out, &c->msgs[0]);
		put(out, "<|im_end|>\n");
	}
	for (size_t i = n; i-- > 0;)
		if (is(&c->msgs[i], "user") && !has_affixes(&c->msgs[i], "<tool_response>", "</tool_response>")) {
			last = i;
			break;
		}
	for (size_t i = 0; i < n; i++) {
		const struct llm_chat_msg *m = &c->msgs[i];
		if (is(m, "user") || (is(m, "system") && i > 0)) {
			put(out, "<|im_start|>");
			put(out, m->role);
			put(out, "\n");
			put_content(out, m);
			put(out, "<|im_end|>\n");
		} else if (is(m, "assistant")) {
			/* content: after the last '</think>', without leading
			 * newlines; the reasoning: before the first, after the
			 * last '<think>' in it, without the newlines around it */
			const char *s = m->content, *t = last_of(s, m->len, "</think>");
			size_t cb = 0, ce = m->len, rb = 0, re = 0;
			if (t) {
				cb = (size_t)(t - s) + strlen("</think>");
				strip_nl(s, &cb, &ce, 1, 0);
				re = (size_t)((const char *)memmem(s, m->len, "</think>", strlen("</think>")) - s);
				strip_nl(s, &rb, &re, 0, 1);
				const char *o = last_of(s, re, "<think>");
				if (o)
					rb = (size_t)(o - s) + strlen("<think>");
				strip_nl(s, &rb, &re, 1, 0);
			}
			put(out, "<|im_start|>assistant\n");
			if (i > last) {
				if (i == n - 1 || re > rb) {
					strip_nl(s, &rb, &re, 1, 1);
					put(out, "<think>\n");
					content_add(out, s + rb, re - rb);
					put(out, "\n</think>\n\n");
					strip_nl(s, &cb, &ce, 1, 0);
				}
			}
			content_add(out, s + cb, ce - cb);
			put(out, "<|im_end|>\n");
		} else if (is(m, "tool")) {
			if (i == 0 || !is(&c->msgs[i - 1], "tool"))
				put(out, "<|im_start|>user");
			put(out, "\n<tool_response>\n");
			put_content(out, m);
			put(out, "\n</tool_response>");
			if (i == n - 1 || !is(&c->msgs[i + 1], "tool"))
				put(out, "<|im_end|>\n");
		}
	}
	if (gen)
		put(out, "<|im_start|>assistant\n");
}

static void
render_llama3(const struct llm_chat *c, int gen, const char *bos, struct rbuf *out)
{
	for (size_t i = 0; i < c->n; i++) {
		const struct llm_chat_msg *m = &c->msgs[i];
		if (i == 0)
			put(out, bos);
		put(out, "<|start_header_id|>");
		content_add(out, m->role, strlen(m->role));
		put(out, "<|end_header_id|>\n\n");
		add_trimmed(out, m->content, m->len);
		put(out, "<|eot_id|>");
	}
	if (gen)
		put(out, "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

static int
render_llama2(const struct llm_chat *c, const char *bos, const char *eos, struct rbuf *out)
{
	const struct llm_chat_msg *sys = NULL;
	size_t first = 0;

	if (c->n > 0 && is(&c->msgs[0], "system")) {
		first = 1;
		/* `system_message != false` in JavaScript. */
		if (!js_loosely_false(c->msgs[0].content, c->msgs[0].len))
			sys = &c->msgs[0];
	}
	for (size_t i = first; i < c->n; i++) {
		const struct llm_chat_msg *m = &c->msgs[i];
		if (is(m, "user") != ((i - first) % 2 == 0))
			return llm_seterr("chat template 'llama2': "
					  "Conversation roles must alternate user/assistant/user/assistant/...");
		struct rbuf content = {0};
		if (i == first && sys) {
			put(&content, "<<SYS>>\n");
			put_content(&content, sys);
			put(&content, "\n<</SYS>>\n\n");
		}
		put_content(&content, m);
		if (is(m, "user")) {
			put(out, bos);
			put(out, "[INST] ");
			add_trimmed(out, content.b.p, content.b.len);
			put(out, " [/INST]");
		} else if (is(m, "assistant")) {
			put(out, " ");
			add_trimmed(out, content.b.p, content.b.len);
			put(out, " ");
			put(out, eos);
		}
		llm_buf_free(&content.b);
	}
	return 0;
}

int
llm_chat_render(int tmpl, const struct llm_chat *c, int gen, const char *bos, const char *eos, struct llm_buf *out,
    struct llm_chat_spans *spans)
{
	struct llm_chat_spans sp = {0};
	struct rbuf b = {{0}, spans ? &sp : NULL};

	switch (tmpl) {
	case LLM_CHAT_DEEPSEEK_R1:
		render_deepseek(c, gen, bos, &b);
		break;
	case LLM_CHAT_QWEN2:
		render_qwen2(c, gen, &b);
		break;
	case LLM_CHAT_LLAMA3:
		render_llama3(c, gen, bos, &b);
		break;
	case LLM_CHAT_QWEN3:
		render_qwen3(c, gen, &b);
		break;
	case LLM_CHAT_LLAMA2:
		if (render_llama2(c, bos, eos, &b) < 0) {
			llm_buf_free(&b.b);
			llm_chat_spans_free(&sp);
			return -1;
		}
		break;
	default:
		return llm_seterr("unknown chat template %d", tmpl);
	}
	if (spans) {
		spans->n = 0;
		for (size_t i = 0; i < sp.n; i++) {
			if (spans->n == spans->cap) {
				spans->cap = spans->cap ? 2 * spans->cap : 16;
				spans->r = llm_xreallocarray(spans->r, spans->cap, sizeof(*spans->r));
			}
			spans->r[spans->n][0] = out->len + sp.r[i][0];
			spans->r[spans->n][1] = out->len + sp.r[i][1];
			spans->n++;
		}
		llm_chat_spans_free(&sp);
	}
	llm_buf_add(out, b.b.p ? b.b.p : "", b.b.len);
	llm_buf_free(&b.b);
	return 0;
}

void
llm_chat_spans_free(struct llm_chat_spans *s)
{
	free(s->r);
	memset(s, 0, sizeof(*s));
}
