/* reply.c: replies split by the format of their template's family
 * (reply.h).  One row of formats[] a format; the parser reads the rows.
 *
 * A bracketed format: a thought between think_open and think_close (or
 * from the start of the reply, when the prompt ended with think_open);
 * tool calls in one of up to three forms, each an opening marker, a body
 * and a closing marker (none: the body ends the call).  Bodies:
 *   B_JSON      JSON values: an object {"name", "arguments" or
 *               "parameters"}, or an array of them; several may follow
 *               one another, apart by white space, ',' or ';';
 *   B_MISTRAL   B_JSON, or Mistral's newer `name[ARGS]{...}`;
 *   B_DEEPSEEK  `function<｜tool▁sep｜>name` then the arguments as JSON,
 *               bare or in a ```json fence;
 * skip[] are markers around a run of calls, dropped.  A form whose opening
 * marker is "" is llama 3's bare call: a reply whose text, white space
 * aside, is JSON calls and nothing else.
 *
 * Harmony (gpt-oss) is a row of its own kind: messages "<|channel|>c
 * [to=functions.name] ...<|message|>text<|end|>", each after
 * "<|start|>assistant" but the first; channel analysis is reasoning,
 * final is content, a commentary to a function is a call (its text the
 * arguments), commentary to no one is content.
 *
 * What a template is recognised by: the first row one of whose markers its
 * text holds; the plain row (no thought, no calls) otherwise. */
#include <stdio.h>
#include <string.h>

#include "grammar.h"
#include "reply.h"

enum body { B_JSON = 1, B_MISTRAL, B_DEEPSEEK };

struct form {
	const char *open, *close;
	enum body body;
};

/* How a call is written when a grammar holds the reply to one: the text
 * before the first call (prefix, given with the prompt), each call
 * (head, the name, mid, the arguments, tail), between calls (sep) and
 * after the last (suffix). */
struct writing {
	const char *prefix, *head, *mid, *tail, *sep, *suffix;
	int name_json; /* the name inside a JSON string (escaped) */
};

struct llm_reply_format {
	const char *name;
	const char *recognise[3]; /* a template holding one of these is of this format */
	const char *think_open, *think_close;
	struct form forms[3];
	const char *skip[2];
	struct writing w;
	int harmony;
};

#define DS(x) "<\xef\xbd\x9c" x "\xef\xbd\x9c>" /* DeepSeek's markers: <｜...｜> */
#define DS_SEP DS("tool\xe2\x96\x81sep")      /* <｜tool▁sep｜> */
#define DS_CALLS DS("tool\xe2\x96\x81" "calls\xe2\x96\x81" "begin")
#define DS_CALLS_END DS("tool\xe2\x96\x81" "calls\xe2\x96\x81" "end")
#define DS_CALL DS("tool\xe2\x96\x81" "call\xe2\x96\x81" "begin")
#define DS_CALL_END DS("tool\xe2\x96\x81" "call\xe2\x96\x81" "end")

#define NO_WRITING {NULL, NULL, NULL, NULL, NULL, NULL, 0} /* calls are not written under a grammar */
static const struct llm_reply_format formats[] = {
	{"deepseek-r1", {DS("Assistant"), DS_CALLS}, "<think>", "</think>", {{DS_CALL, DS_CALL_END, B_DEEPSEEK}},
		{DS_CALLS, DS_CALLS_END},
		{DS_CALLS DS_CALL "function" DS_SEP, "", "\n```json\n", "\n```" DS_CALL_END, DS_CALL "function" DS_SEP,
			DS_CALLS_END, 0},
		0},
	{"harmony", {"<|channel|>"}, NULL, NULL, {{NULL, NULL, 0}}, {NULL}, NO_WRITING, 1},
	{"mistral", {"[TOOL_CALLS]"}, "[THINK]", "[/THINK]", {{"[TOOL_CALLS]", "", B_MISTRAL}}, {NULL},
		{"[TOOL_CALLS][", "{\"name\": \"", "\", \"arguments\": ", "}", ", ", "]", 1}, 0},
	{"phi4", {"<|tool_call|>", "<|tool|>"}, NULL, NULL,
		{{"<|tool_call|>", "<|/tool_call|>", B_JSON}, {"functools", "", B_JSON}}, {NULL},
		{"<|tool_call|>[", "{\"name\": \"", "\", \"arguments\": ", "}", ", ", "]", 1}, 0},
	{"hermes", {"<tool_call>"}, "<think>", "</think>", {{"<tool_call>", "</tool_call>", B_JSON}}, {NULL},
		{"<tool_call>\n", "{\"name\": \"", "\", \"arguments\": ", "}", "\n</tool_call>\n<tool_call>\n",
			"\n</tool_call>", 1},
		0},
	{"llama3", {"<|python_tag|>", "<|start_header_id|>"}, NULL, NULL,
		{{"<|python_tag|>", "", B_JSON}, {"", "", B_JSON}}, {NULL},
		{"", "{\"name\": \"", "\", \"parameters\": ", "}", "; ", "", 1}, 0},
	/* a template that thinks but calls no tools the ways above (Qwen3 without tools) */
	{"think", {"</think>"}, "<think>", "</think>", {{NULL, NULL, 0}}, {NULL}, NO_WRITING, 0},
	{"plain", {NULL}, NULL, NULL, {{NULL, NULL, 0}}, {NULL}, NO_WRITING, 0},
};
#define NFORMATS (sizeof(formats) / sizeof(formats[0]))

static const char *const harmony_markers[] = {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>",
	"<|call|>", "<|return|>"};

const struct llm_reply_format *
llm_reply_format_of(const char *t)
{
	for (size_t i = 0; t && i < NFORMATS; i++)
		for (size_t k = 0; k < 3 && formats[i].recognise[k]; k++)
			if (strstr(t, formats[i].recognise[k]))
				return &formats[i];
	return &formats[NFORMATS - 1];
}

const struct llm_reply_format *
llm_reply_format_named(const char *name)
{
	for (size_t i = 0; name && i < NFORMATS; i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}

const char *
llm_reply_format_name(const struct llm_reply_format *f)
{
	return f ? f->name : "plain";
}

const char *
llm_reply_format_list(size_t i)
{
	return i < NFORMATS ? formats[i].name : NULL;
}

/* ---- markers ------------------------------------------------------------ */

/* f's markers, in turn: i from 0 until NULL. */
static const char *
marker(const struct llm_reply_format *f, size_t i)
{
	if (f->harmony)
		return i < LLM_NELEM(harmony_markers) ? harmony_markers[i] : NULL;
	const char *m[10] = {f->think_open, f->think_close};
	size_t n = 2;
	for (size_t k = 0; k < 3 && f->forms[k].open; k++) {
		m[n++] = f->forms[k].open;
		m[n++] = f->forms[k].close;
	}
	for (size_t k = 0; k < 2 && f->skip[k]; k++)
		m[n++] = f->skip[k];
	for (size_t k = 0, seen = 0; k < n; k++)
		if (m[k] && *m[k] && seen++ == i)
			return m[k];
	return NULL;
}

int
llm_reply_marker(const struct llm_reply_format *f, const char *s, size_t n)
{
	const char *m;
	for (size_t i = 0; f && (m = marker(f, i)); i++)
		if (strlen(m) == n && memcmp(m, s, n) == 0)
			return 1;
	if (f && f->name && strcmp(f->name, "deepseek-r1") == 0 && n == strlen(DS_SEP) && !memcmp(s, DS_SEP, n))
		return 1;
	return 0;
}

static int
is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

int
llm_reply_prompt_thinking(const struct llm_reply_format *f, const char *p, size_t n)
{
	if (!f || !f->think_open)
		return 0;
	while (n && is_space(p[n - 1]))
		n--;
	size_t k = strlen(f->think_open);
	return n >= k && memcmp(p + n - k, f->think_open, k) == 0;
}

/* The first place in t[from, len) where s starts, or len. */
static size_t
find(const char *t, size_t len, size_t from, const char *s)
{
	size_t k = strlen(s);
	for (size_t i = from; k && i + k <= len; i++)
		if (t[i] == s[0] && memcmp(t + i, s, k) == 0)
			return i;
	return len;
}

/* The bytes at the end of t[0, len) that start s (a proper prefix). */
static size_t
tail_of(const char *t, size_t len, const char *s)
{
	size_t k = s ? strlen(s) : 0;
	for (size_t n = k ? k - 1 : 0; n > 0; n--)
		if (n <= len && memcmp(t + len - n, s, n) == 0)
			return n;
	return 0;
}

/* ---- calls -------------------------------------------------------------- */

/* A call object into r->calls; 0, or -1 for an object that is not one. */
static int
add_call(struct llm_reply *r, const json_t *o)
{
	const json_t *name = json_object_get(o, "name"), *args = json_object_get(o, "arguments"); /* borrowed */
	if (!args)
		args = json_object_get(o, "parameters");
	if (!json_is_object(o) || !json_is_string(name) || !json_string_length(name))
		return -1;
	char *a = !args          ? llm_xstrdup("{}") :
	    json_is_string(args) ? llm_xstrdup(json_string_value(args)) :
				   json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
	json_array_append_new(r->calls, json_pack("{s:O, s:s}", "name", name, "arguments", a));
	free(a);
	return 0;
}

/* Calls from a JSON value (an object, or an array of them) to r; -1: not calls. */
static int
add_value(struct llm_reply *r, const json_t *v)
{
	size_t i;
	const json_t *x;
	if (!json_is_array(v))
		return add_call(r, v);
	if (!json_array_size(v))
		return -1;
	json_array_foreach (v, i, x)
		if (add_call(r, x) < 0)
			return -1;
	return 0;
}

/* One JSON value at t[*p, len): 1 (*v new, *p past it), 0: the text ends
 * inside it, -1: not JSON. */
static int
json_at(const char *t, size_t len, size_t *p, json_t **v)
{
	json_error_t e;
	while (*p < len && is_space(t[*p]))
		(*p)++;
	if (*p == len)
		return 0;
	if (t[*p] != '{' && t[*p] != '[')
		return -1;
	*v = json_loadb(t + *p, len - *p, JSON_DISABLE_EOF_CHECK, &e);
	/* an error where the text ends is a value not whole yet; jansson ends at a NUL, which no text
	 * after it makes whole */
	if (!*v)
		return (size_t)e.position >= len - *p && !memchr(t + *p, 0, len - *p) ? 0 : -1;
	*p += (size_t)e.position;
	return 1;
}

/* Calls added since before are taken back. */
static void
drop_calls(struct llm_reply *r, size_t before)
{
	while (json_array_size(r->calls) > before)
		json_array_remove(r->calls, json_array_size(r->calls) - 1);
}

/* JSON calls at t[*p, end): 1 (*p past them), 0: unfinished, -1: not calls.
 * Values one after another, apart by white space, ',' or ';'. */
static int
json_calls(struct llm_reply *r, const char *t, size_t end, size_t *p)
{
	size_t q = *p, before = json_array_size(r->calls);
	for (int any = 0;; any = 1) {
		size_t s = q;
		while (s < end && (is_space(t[s]) || t[s] == ',' || t[s] == ';'))
			s++;
		if (any && s == end)
			q = s; /* separators at the end may be before another call */
		if (any && (s == end || (t[s] != '{' && t[s] != '[')))
			break;
		json_t *v = NULL;
		size_t at = json_array_size(r->calls);
		int rc = json_at(t, end, &s, &v);
		int ok = rc > 0 && add_value(r, v) == 0;
		json_decref(v);
		if (!ok && any && rc != 0) {
			drop_calls(r, at); /* what follows the calls is not one: they end before it */
			break;
		}
		if (!ok) {
			if (rc != 0)
				drop_calls(r, before);
			return rc == 0 ? 0 : -1; /* unfinished: the whole calls so far stay (call_at decides) */
		}
		q = s;
	}
	*p = q;
	return 1;
}

/* The end of the run of a function name's characters in t[from, to). */
static size_t
name_run(const char *t, size_t from, size_t to)
{
	while (from < to &&
	    (((t[from] | 32) >= 'a' && (t[from] | 32) <= 'z') || (t[from] >= '0' && t[from] <= '9') || t[from] == '_' ||
		t[from] == '-' || t[from] == '.'))
		from++;
	return from;
}

/* Mistral's `name[ARGS]{...}` at t[*p, end), or JSON calls. */
static int
mistral_call(struct llm_reply *r, const char *t, size_t end, size_t *p)
{
	size_t q = *p;
	while (q < end && is_space(t[q]))
		q++;
	if (q < end && (t[q] == '[' || t[q] == '{'))
		return json_calls(r, t, end, p);
	size_t a = find(t, end, q, "[ARGS]"), nm = name_run(t, q, a);
	if (nm < a && !(a == end && end - nm < 6 && memcmp(t + nm, "[ARGS]", end - nm) == 0))
		return -1; /* not a name before [ARGS] (a decision more text does not undo) */
	if (a == end)
		return 0;
	size_t s = a + 6;
	json_t *v = NULL;
	int rc = json_at(t, end, &s, &v);
	if (rc <= 0)
		return rc;
	char *name = llm_xstrndup(t + q, a - q);
	char *args = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(v);
	if (!*name || strpbrk(name, " \n\t{[\"")) {
		free(name), free(args);
		return -1;
	}
	json_array_append_new(r->calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
	free(name), free(args);
	*p = s;
	return 1;
}

/* DeepSeek's `function<｜tool▁sep｜>name` and the arguments. */
static int
deepseek_call(struct llm_reply *r, const char *t, size_t end, size_t *p)
{
	size_t q = *p, sep = find(t, end, q, DS_SEP), nm = name_run(t, q, sep);
	if (nm < sep && !(sep == end && tail_of(t, end, DS_SEP) == end - nm))
		return -1; /* not "function" or a name before the separator */
	if (sep == end)
		return 0;
	size_t s = sep + strlen(DS_SEP), nl = s;
	while (nl < end && t[nl] != '\n' && t[nl] != '{' && t[nl] != '`')
		nl++;
	if (nl == end)
		return 0;
	char *name = llm_xstrndup(t + s, nl - s);
	size_t k = strlen(name);
	while (k && is_space(name[k - 1]))
		name[--k] = 0;
	s = nl;
	while (s < end && is_space(t[s]))
		s++;
	int fenced = end - s >= 3 && memcmp(t + s, "```", 3) == 0;
	if (fenced) {
		s += 3;
		while (s < end && t[s] != '\n')
			s++; /* the fence's language */
	} else if (end - s < 3 && memcmp(t + s, "```", end - s) == 0) {
		free(name);
		return 0;
	}
	json_t *v = NULL;
	int rc = json_at(t, end, &s, &v);
	if (rc > 0 && fenced) {
		while (s < end && is_space(t[s]))
			s++;
		if (end - s < 3)
			rc = memcmp(t + s, "```", end - s) == 0 ? 0 : -1;
		else if (memcmp(t + s, "```", 3) == 0)
			s += 3;
		else
			rc = -1;
	}
	if (rc <= 0 || !*name) {
		json_decref(v);
		free(name);
		return rc <= 0 ? rc : -1;
	}
	char *args = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(v);
	json_array_append_new(r->calls, json_pack("{s:s, s:s}", "name", name, "arguments", args));
	free(name), free(args);
	*p = s;
	return 1;
}

/* The body of form fm at t[*p, len): 1 (the call(s) added, *p past the
 * closing marker), 0: unfinished, -1: not a call.  A closing marker
 * missing at the very end of a whole reply is forgiven (it may be a
 * special token that a grammar could not draw). */
static int
call_at(const struct form *fm, struct llm_reply *r, const char *t, size_t len, size_t *p, int partial)
{
	size_t end = *fm->close ? find(t, len, *p, fm->close) : len, q = *p, before = json_array_size(r->calls);
	int rc = fm->body == B_DEEPSEEK ? deepseek_call(r, t, end, &q) :
	    fm->body == B_MISTRAL       ? mistral_call(r, t, end, &q) :
					  json_calls(r, t, end, &q);
	if (rc == 0 && end < len)
		rc = -1; /* closed inside its body */
	if (rc > 0 && *fm->close) {
		while (q < end && is_space(t[q]))
			q++;
		size_t k = strlen(fm->close);
		if (end < len)
			rc = q == end ? 1 : -1;
		else if (partial)
			rc = len - q < k && memcmp(t + q, fm->close, len - q) == 0 ? 0 : -1;
		else
			rc = q == len ? 1 : -1;
		if (rc > 0 && end < len)
			q = end + k;
	}
	if (rc <= 0) {
		/* a partial run of calls with no closing marker shows its whole ones */
		if (rc < 0 || *fm->close || !partial)
			drop_calls(r, before);
		return rc;
	}
	*p = q;
	return 1;
}

/* ---- the parser --------------------------------------------------------- */

/* The bytes at the end of t[0, len) that may start a harmony marker. */
static size_t
harmony_tail(const char *t, size_t len)
{
	size_t hold = 0, n;
	for (size_t k = 0; k < LLM_NELEM(harmony_markers); k++)
		if ((n = tail_of(t, len, harmony_markers[k])) > hold)
			hold = n;
	return hold;
}

static void
harmony(const char *t, size_t len, int flags, struct llm_reply *r)
{
	int partial = flags & LLM_REPLY_PARTIAL;
	size_t p = 0;
	while (p < len) {
		size_t ch = find(t, len, p, "<|channel|>");
		if (ch > p) {
			/* text outside any message: of no channel, up to a message's start */
			size_t st = find(t, len, p, "<|start|>"), keep = st < ch ? st : ch;
			if (keep == len && partial)
				keep -= harmony_tail(t, len);
			llm_buf_add(&r->content, t + p, keep > p ? keep - p : 0);
			if (ch == len)
				break;
		}
		size_t msg = find(t, len, ch, "<|message|>");
		if (msg == len)
			break; /* the header is not whole yet */
		char *head = llm_xstrndup(t + ch, msg - ch);
		/* the recipient may come before the channel: <|start|>assistant to=functions.x<|channel|> */
		size_t from = p;
		const char *to = NULL;
		for (size_t i = from; i + 3 < ch; i++)
			if (!memcmp(t + i, "to=", 3))
				to = t + i;
		char *recip = NULL;
		const char *h = strstr(head, "to=");
		if (h || to) {
			const char *x = h ? h + 3 : to + 3;
			size_t n = strcspn(x, " <\n");
			recip = llm_xstrndup(x, n);
		}
		size_t body = msg + strlen("<|message|>");
		size_t end = len, next = len;
		static const char *const ends[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>"};
		for (size_t k = 0; k < LLM_NELEM(ends); k++) {
			size_t e = find(t, len, body, ends[k]);
			if (e < end) {
				end = e;
				next = e + (k < 3 ? strlen(ends[k]) : 0);
			}
		}
		int closed = end < len;
		const char *chan = head + strlen("<|channel|>");
		if (recip && !strncmp(recip, "functions.", 10) && (flags & LLM_REPLY_TOOLS)) {
			json_t *v = NULL;
			size_t s = body;
			int rc = json_at(t, end, &s, &v);
			if (rc > 0) {
				char *args = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
				json_array_append_new(r->calls,
				    json_pack("{s:s, s:s}", "name", recip + 10, "arguments", args));
				free(args);
			} else if (rc < 0 || closed || !partial) {
				/* not a call's JSON: text, but for the start of a marker still to come */
				size_t keep = !closed && partial ? len - harmony_tail(t, len) : end;
				llm_buf_add(&r->content, t + body, keep > body ? keep - body : 0);
			}
			json_decref(v);
			free(recip);
			free(head);
			if (!closed && partial)
				return;
			p = next;
			continue;
		}
		struct llm_buf *to_buf = !strncmp(chan, "analysis", 8) && (flags & LLM_REPLY_REASONING) ?
		    &r->reasoning :
		    &r->content;
		size_t keep = end;
		if (!closed && partial)
			keep = len - harmony_tail(t, len);
		llm_buf_add(to_buf, t + body, keep > body ? keep - body : 0);
		free(recip);
		free(head);
		p = next;
	}
}

/* The earliest opening marker at or after p: its place (len: none), *what
 * 0 a thought, 1.. a form (k+1), -1 a marker to skip. */
static size_t
next_open(const struct llm_reply_format *f, const char *t, size_t len, size_t p, int flags, int *what, int at_start)
{
	size_t best = len;
	*what = 0;
	if ((flags & LLM_REPLY_REASONING) && f->think_open) {
		best = find(t, len, p, f->think_open);
		*what = 0;
	}
	if (!(flags & LLM_REPLY_TOOLS))
		return best;
	for (size_t k = 0; k < 3 && f->forms[k].open; k++) {
		size_t at;
		if (!*f->forms[k].open) {
			/* a bare call: the reply is JSON from here, white space aside */
			if (!at_start)
				continue;
			at = p;
			while (at < len && is_space(t[at]))
				at++;
			if (at == len || t[at] != '{')
				continue;
		} else
			at = find(t, len, p, f->forms[k].open);
		if (at < best) {
			best = at;
			*what = (int)k + 1;
		}
	}
	for (size_t k = 0; k < 2 && f->skip[k]; k++) {
		size_t at = find(t, len, p, f->skip[k]);
		if (at < best) {
			best = at;
			*what = -1 - (int)k;
		}
	}
	return best;
}

/* The bytes at the end of t[0, len) that may start an opening marker. */
static size_t
held_tail(const struct llm_reply_format *f, const char *t, size_t len, int flags)
{
	size_t hold = 0, n;
	if ((flags & LLM_REPLY_REASONING) && (n = tail_of(t, len, f->think_open)) > hold)
		hold = n;
	for (size_t k = 0; (flags & LLM_REPLY_TOOLS) && k < 3 && f->forms[k].open; k++)
		if ((n = tail_of(t, len, f->forms[k].open)) > hold)
			hold = n;
	for (size_t k = 0; (flags & LLM_REPLY_TOOLS) && k < 2 && f->skip[k]; k++)
		if ((n = tail_of(t, len, f->skip[k])) > hold)
			hold = n;
	return hold;
}

/* Leading white space after a thought is not content. */
static size_t
skip_space(const char *t, size_t len, size_t p)
{
	while (p < len && is_space(t[p]))
		p++;
	return p;
}

void
llm_reply_parse(const struct llm_reply_format *f, const char *t, size_t len, int flags, struct llm_reply *r)
{
	int partial = flags & LLM_REPLY_PARTIAL;
	r->content.len = r->reasoning.len = 0;
	llm_buf_add(&r->content, "", 0);
	llm_buf_add(&r->reasoning, "", 0);
	if (!r->calls)
		r->calls = json_array();
	json_array_clear(r->calls);
	if (!f)
		f = &formats[NFORMATS - 1];
	if (f->harmony) {
		harmony(t, len, flags, r);
		goto done;
	}
	size_t p = 0;
	int thinking = (flags & LLM_REPLY_THINKING) && (flags & LLM_REPLY_REASONING) && f->think_close;
	while (p < len) {
		if (thinking) {
			size_t c = find(t, len, p, f->think_close);
			size_t keep = c < len ? c : partial ? len - tail_of(t, len, f->think_close) : len;
			llm_buf_add(&r->reasoning, t + p, keep - p);
			if (c == len)
				break;
			thinking = 0;
			p = skip_space(t, len, c + strlen(f->think_close));
			continue;
		}
		int what, at_start = r->content.len == 0 || r->content.len == strspn(r->content.p, " \n\t\r");
		size_t o = next_open(f, t, len, p, flags, &what, at_start);
		size_t keep = o < len || !partial ? o : len - held_tail(f, t, len, flags);
		llm_buf_add(&r->content, t + p, keep > p ? keep - p : 0);
		if (o == len)
			break;
		if (what == 0) {
			thinking = 1;
			p = o + strlen(f->think_open);
			continue;
		}
		if (what < 0) {
			p = o + strlen(f->skip[-what - 1]);
			continue;
		}
		const struct form *fm = &f->forms[what - 1];
		size_t q = o + strlen(fm->open);
		int rc = call_at(fm, r, t, len, &q, partial);
		if (rc > 0) {
			p = q;
			continue;
		}
		if (rc == 0 && partial)
			break; /* held back until it is whole */
		/* not a call after all: its text is content, up to the next marker */
		size_t next = *fm->close ? find(t, len, q, fm->close) : len;
		next = next < len ? next + strlen(fm->close) : len;
		llm_buf_add(&r->content, t + o, next - o);
		p = next;
	}
done:;
	/* a thought's white space at its ends is not reasoning (so it only grows when parsed partial) */
	size_t lead = strspn(r->reasoning.p, " \n\t\r");
	memmove(r->reasoning.p, r->reasoning.p + lead, r->reasoning.len - lead + 1);
	r->reasoning.len -= lead;
	while (r->reasoning.len && is_space(r->reasoning.p[r->reasoning.len - 1]))
		r->reasoning.p[--r->reasoning.len] = 0;
	/* what follows the calls is not content when it is white space */
	if (json_array_size(r->calls) && r->content.len == strspn(r->content.p, " \n\t\r"))
		r->content.len = 0;
	llm_buf_add(&r->content, "", 0); /* its NUL after a cut */
}

void
llm_reply_free(struct llm_reply *r)
{
	llm_buf_free(&r->content);
	llm_buf_free(&r->reasoning);
	json_decref(r->calls);
	r->calls = NULL;
}

json_t *
llm_reply_message(const struct llm_reply *r)
{
	json_t *m = json_pack("{s:s}", "role", "assistant");
	size_t n = json_array_size(r->calls), i;
	json_t *c;
	json_object_set_new(m, "content",
	    r->content.len || !n ? json_stringn(r->content.p ? r->content.p : "", r->content.len) : json_null());
	if (r->reasoning.len)
		json_object_set_new(m, "reasoning_content", json_stringn(r->reasoning.p, r->reasoning.len));
	if (n) {
		json_t *a = json_array();
		json_array_foreach (r->calls, i, c) {
			char id[32];
			snprintf(id, sizeof(id), "call_%zu", i);
			json_array_append_new(a,
			    json_pack("{s:s, s:s, s:{s:O, s:O}}", "id", id, "type", "function", "function", "name",
				json_object_get(c, "name"), "arguments", json_object_get(c, "arguments")));
		}
		json_object_set_new(m, "tool_calls", a);
	}
	return m;
}

/* ---- a grammar for calls ------------------------------------------------ */

/* " " and s as a GBNF literal. */
static void
lit(struct llm_buf *b, const char *s)
{
	llm_buf_puts(b, " ");
	llm_grammar_literal(b, s);
}

int
llm_reply_writes_calls(const struct llm_reply_format *f)
{
	return f && f->w.prefix;
}

char *
llm_reply_tool_grammar(const struct llm_reply_format *f, const json_t *tools, const char *only, int parallel,
    int thinking, char **prefix)
{
	const struct writing *w = &f->w;
	if (!w->prefix) {
		llm_seterr("the chat template's reply format ('%s') has no tool calls to hold a reply to",
		    llm_reply_format_name(f));
		return NULL;
	}
	size_t n = json_array_size(tools), k = 0;
	const json_t **schemas = llm_xcalloc(n + 1, sizeof(*schemas));
	char **names = llm_xcalloc(n + 1, sizeof(*names)), **paths = llm_xcalloc(n + 1, sizeof(*paths));
	struct llm_buf g = {0}, alts = {0};
	char *ret = NULL;
	json_t *empty = json_object();
	for (size_t i = 0; i < n; i++) {
		const json_t *t = json_array_get(tools, i), *fn = json_object_get(t, "function"); /* borrowed */
		const json_t *name = json_object_get(fn, "name"), *params = json_object_get(fn, "parameters");
		const json_t *type = json_object_get(t, "type");
		if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function") != 0 ||
		    !json_is_object(fn) || !json_is_string(name) || !json_string_length(name)) {
			llm_seterr("tools[%zu] is not {\"type\": \"function\", \"function\": {\"name\": ...}}", i);
			goto out;
		}
		if (only && strcmp(only, json_string_value(name)) != 0)
			continue;
		if (params && !json_is_object(params) && !json_is_boolean(params)) {
			llm_seterr("tools[%zu].function.parameters is not a JSON schema", i);
			goto out;
		}
		schemas[k] = params ? params : empty;
		names[k] = llm_xasprintf("tool-args-%zu", k);
		paths[k] = llm_xasprintf("tools[%zu].function.parameters", i);
		/* call-k ::= head "name" mid args-k tail */
		llm_buf_printf(&alts, "tool-call-%zu ::=", k);
		char *nm = w->name_json ? json_dumps(name, JSON_ENCODE_ANY) : llm_xstrdup(json_string_value(name));
		if (w->name_json) {
			/* the name's JSON text without its quotes */
			size_t l = strlen(nm);
			memmove(nm, nm + 1, l - 2);
			nm[l - 2] = 0;
		}
		struct llm_buf text = {0};
		llm_buf_printf(&text, "%s%s%s", w->head, nm, w->mid);
		lit(&alts, text.p);
		llm_buf_printf(&alts, " %s", names[k]);
		if (*w->tail)
			lit(&alts, w->tail);
		llm_buf_puts(&alts, "\n");
		llm_buf_free(&text);
		free(nm);
		k++;
	}
	if (!k) {
		if (only)
			llm_seterr("no tool is named '%s'", only);
		else
			llm_seterr("no tools to call");
		goto out;
	}
	char *rules = llm_json_schema_rules(schemas, (const char *const *)names, (const char *const *)paths, k);
	if (!rules)
		goto out;
	llm_buf_puts(&g, "root ::= tool-call");
	if (parallel) {
		llm_buf_puts(&g, " (");
		lit(&g, w->sep);
		llm_buf_puts(&g, " tool-call )*");
	}
	if (*w->suffix)
		lit(&g, w->suffix);
	llm_buf_puts(&g, "\ntool-call ::=");
	for (size_t i = 0; i < k; i++)
		llm_buf_printf(&g, "%s tool-call-%zu", i ? " |" : "", i);
	llm_buf_printf(&g, "\n%s%s", alts.p, rules);
	free(rules);
	struct llm_grammar *gr = llm_grammar_parse(g.p, g.len);
	if (!gr) {
		llm_seterr("the grammar made of the tools is refused: %s", llm_errmsg());
		goto out;
	}
	llm_grammar_free(gr);
	ret = llm_xstrndup(g.p, g.len);
	*prefix = thinking && f->think_close ? llm_xasprintf("%s\n\n%s", f->think_close, w->prefix) :
					       llm_xstrdup(w->prefix);
out:
	for (size_t i = 0; i < k; i++)
		free(names[i]), free(paths[i]);
	free(names), free(paths), free(schemas);
	llm_buf_free(&g);
	llm_buf_free(&alts);
	json_decref(empty);
	return ret;
}
