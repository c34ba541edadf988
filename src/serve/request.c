/* request.c: llm-serve's request layer (request.h): a completion's JSON
 * body read into its parameters and prompt, and a request's header
 * fields checked.  Nothing here knows HTTP's connections or the slots. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../../lib/base/util.h"
#include "../../lib/text/chat.h"
#include "request.h"

/* s cut to its first l bytes, less a character they end inside of (a
 * message goes into JSON, which takes UTF-8 alone). */
static void
whole_chars(char *s, size_t l)
{
	size_t i = l;
	while (i && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
		i--;
	if (i) { /* s[i - 1] starts the last character: is it whole? */
		unsigned char c = (unsigned char)s[i - 1];
		size_t need = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
		if (i - 1 + need > l)
			l = i - 1;
	}
	s[l] = 0;
}

int
serve_badf(struct serve_bad *b, const char *code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(b->msg))
		whole_chars(b->msg, sizeof(b->msg) - 1);
	b->code = code;
	return -1;
}

/* The function that failed ("llm_chat_tokenize_json: ") and a label that
 * starts with '/' up to its ": " are left out. */
const char *
serve_client_msg(void)
{
	static _Thread_local char out[512];
	const char *m = llm_errmsg();
	size_t n = 0;
	if (!strncmp(m, "llm_", 4) && strstr(m, ": ") &&
	    strspn(m, "abcdefghijklmnopqrstuvwxyz_") == (size_t)(strstr(m, ": ") - m))
		m = strstr(m, ": ") + 2;
	while (*m && n + 1 < sizeof(out)) {
		const char *e;
		if ((m[0] == '/' || (m[0] == '.' && m[1] == '/')) && (e = strstr(m, ": ")) &&
		    !memchr(m, ' ', (size_t)(e - m))) {
			m = e + 2; /* a path, and its separator */
			continue;
		}
		out[n++] = *m++;
	}
	if (*m)
		whole_chars(out, n);
	else
		out[n] = 0;
	return out;
}

/* A number field in [lo, hi], or its default when absent or null. */
static int
num(const json_t *o, const char *key, double lo, double hi, double *v, struct serve_bad *b)
{
	const json_t *x = json_object_get(o, key);
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_number(x))
		return serve_badf(b, NULL, "'%s' must be a number", key);
	double d = json_number_value(x);
	if (!(d >= lo && d <= hi))
		return serve_badf(b, NULL, "'%s' must be in [%g, %g]", key, lo, hi);
	*v = d;
	return 0;
}

int
serve_integer(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *v, struct serve_bad *b)
{
	const json_t *x = json_object_get(o, key);
	if (!x || json_is_null(x))
		return 0;
	if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi)
		return serve_badf(b, NULL, "'%s' must be an integer in [%" PRId64 ", %" PRId64 "]", key, lo, hi);
	*v = json_integer_value(x);
	return 0;
}

/* A message's content: a string, or an array of {"type": "text", "text"} parts. */
static char *
content_of(const json_t *c, size_t i, struct serve_bad *b)
{
	char *text;
	size_t k;
	if (json_is_string(c))
		return llm_xstrdup(json_string_value(c));
	if (!json_is_array(c)) {
		serve_badf(b, NULL, "messages[%zu].content must be a string or an array of text parts", i);
		return NULL;
	}
	if (llm_chat_content_text(c, &text, &k) < 0) {
		serve_badf(b, NULL,
		    "messages[%zu].content[%zu]: only {\"type\": \"text\", \"text\": ...} parts are read", i, k);
		return NULL;
	}
	return text;
}

static const char choice_shape[] =
    "'tool_choice' must be 'none', 'auto', 'required' or {\"type\": \"function\", \"function\": {\"name\": ...}}";

/* How a chat's reply is split (g->pflags): its tools by tool_choice and
 * parallel_tool_calls, its thoughts by reasoning_format (else
 * --reasoning-format); and for tool_choice "required" or a function, the
 * grammar of the tools' calls and the text that opens one (g->prefix, its
 * tokens evaluated after the prompt). */
static int
reply_of(const struct serve_conf *conf, const json_t *j, struct serve_params *g, struct serve_bad *b)
{
	const json_t *tools = json_object_get(j, "tools"), *tc = json_object_get(j, "tool_choice"),
		     *par = json_object_get(j, "parallel_tool_calls"),
		     *rf = json_object_get(j, "reasoning_format"); /* borrowed */
	size_t ntools = json_array_size(tools);
	const char *choice = ntools ? "auto" : "none", *only = NULL;
	if (tc && !json_is_null(tc)) {
		if (json_is_string(tc)) {
			choice = json_string_value(tc);
			if (strcmp(choice, "none") != 0 && strcmp(choice, "auto") != 0 &&
			    strcmp(choice, "required") != 0)
				return serve_badf(b, NULL, "%s", choice_shape);
		} else {
			const json_t *fn = json_object_get(tc, "function"), *nm = json_object_get(fn, "name"),
				     *ty = json_object_get(tc, "type"); /* borrowed */
			if (!json_is_string(ty) || strcmp(json_string_value(ty), "function") != 0 ||
			    !json_is_string(nm))
				return serve_badf(b, NULL, "%s", choice_shape);
			choice = "required";
			only = json_string_value(nm);
		}
		if (strcmp(choice, "none") != 0 && !ntools)
			return serve_badf(b, NULL, "'tool_choice' '%s' needs 'tools'", choice);
	}
	int parallel = 1, reasoning = conf->reasoning, thinking = 0;
	if (par && !json_is_null(par)) {
		if (!json_is_boolean(par))
			return serve_badf(b, NULL, "'parallel_tool_calls' must be a boolean");
		parallel = json_is_true(par);
	}
	if (rf && !json_is_null(rf)) {
		const char *v = json_string_value(rf);
		if (!v || (strcmp(v, "none") != 0 && strcmp(v, "deepseek") != 0 && strcmp(v, "auto") != 0))
			return serve_badf(b, NULL, "'reasoning_format' must be 'none', 'deepseek' or 'auto'");
		reasoning = strcmp(v, "none") != 0;
	}
	/* does the generation prompt open a thought (DeepSeek-R1's "<think>\n")? */
	char *text;
	size_t len;
	if (llm_chat_apply_json(conf->m, g->conv, g->convlen, 1, &text, &len) == LLM_OK) {
		thinking = llm_chat_prompt_thinking(conf->m, text, len);
		llm_free(text);
	}
	/* a reply held to a grammar (response_format, grammar, json_schema) is its content, not a thought
	 * the template opened */
	g->pflags = (reasoning ? LLM_PARSE_REASONING : 0) | (strcmp(choice, "none") != 0 ? LLM_PARSE_TOOLS : 0) |
	    (thinking && !g->grammar ? LLM_PARSE_THINKING : 0);
	if (strcmp(choice, "required") != 0)
		return 0;
	if (g->grammar)
		return serve_badf(b, NULL,
		    "give one of 'tool_choice' (required, or a function) and 'response_format', 'grammar' or "
		    "'json_schema'");
	char *tj = json_dumps(tools, JSON_COMPACT), *grammar, *prefix;
	int rc = llm_chat_tool_grammar(conf->m, tj, strlen(tj), only, parallel, thinking, &grammar, &prefix);
	free(tj);
	if (rc != LLM_OK)
		return serve_badf(b, NULL, "'tool_choice': %s", llm_errmsg());
	g->grammar = grammar;
	g->sp.grammar = grammar;
	g->prefix = prefix;
	if (llm_tokenize(conf->m, prefix, strlen(prefix), 0, &g->pre_ids, &g->npre) != LLM_OK)
		return serve_badf(b, NULL, "'tool_choice': %s", llm_errmsg());
	return 0;
}

/* The prompt's tokens from the request (chat: messages; else prompt). */
static int
prompt_of(const struct serve_conf *conf, const json_t *j, struct serve_params *g, int64_t **ids, size_t *n,
    struct serve_bad *b)
{
	int chat = g->chat;
	int rc;
	if (chat) {
		const json_t *ms = json_object_get(j, "messages");
		if (!json_is_array(ms) || json_array_size(ms) == 0)
			return serve_badf(b, NULL, "'messages' must be a non-empty array");
		/* the messages as they came, each content's text parts joined;
		 * tool calls, tool results and the tools go to the template */
		const json_t *tools = json_object_get(j, "tools");
		if (tools && !json_is_null(tools) && !json_is_array(tools))
			return serve_badf(b, NULL, "'tools' must be an array");
		json_t *conv = json_object(), *out = json_array();
		json_object_set_new(conv, "messages", out);
		if (json_is_array(tools))
			json_object_set(conv, "tools", (json_t *)tools);
		/* the template's variables: chat_template_kwargs, and OpenAI's reasoning_effort (gpt-oss's) */
		const json_t *kw = json_object_get(j, "chat_template_kwargs"),
			     *effort = json_object_get(j, "reasoning_effort");
		if (kw && !json_is_null(kw) && !json_is_object(kw)) {
			json_decref(conv);
			return serve_badf(b, NULL, "'chat_template_kwargs' must be an object");
		}
		if (effort && !json_is_null(effort) && !json_is_string(effort)) {
			json_decref(conv);
			return serve_badf(b, NULL, "'reasoning_effort' must be a string");
		}
		if (json_is_object(kw) || json_is_string(effort)) {
			json_t *vars = json_is_object(kw) ? json_deep_copy(kw) : json_object();
			if (json_is_string(effort))
				json_object_set(vars, "reasoning_effort", (json_t *)effort);
			json_object_set_new(conv, "chat_template_kwargs", vars);
		}
		rc = 0;
		for (size_t i = 0; i < json_array_size(ms) && rc == 0; i++) {
			const json_t *m = json_array_get(ms, i), *role = json_object_get(m, "role"), *c;
			char *content = NULL;
			if (!json_is_object(m) || !json_is_string(role))
				rc = serve_badf(b, NULL, "messages[%zu] must be an object with a string 'role'", i);
			else if ((c = json_object_get(m, "content")) && !json_is_null(c) &&
			    !(content = content_of(c, i, b)))
				rc = -1;
			else {
				json_t *x = json_copy((json_t *)m);
				if (content)
					json_object_set_new(x, "content", json_string(content));
				json_array_append_new(out, x);
			}
			free(content);
		}
		if (rc == 0) {
			g->conv = json_dumps(conv, JSON_COMPACT);
			g->convlen = strlen(g->conv);
			if ((rc = llm_chat_tokenize_json(conf->m, g->conv, g->convlen, 1, ids, n)) != LLM_OK)
				rc = serve_badf(b, NULL, "the chat template refused the conversation: %s",
				    serve_client_msg());
		}
		json_decref(conv);
		return rc ? rc : reply_of(conf, j, g, b);
	}
	const json_t *p = json_object_get(j, "prompt");
	if (json_is_array(p) && json_array_size(p) == 1)
		p = json_array_get(p, 0);
	if (!json_is_string(p))
		return serve_badf(b, NULL, "'prompt' must be a string");
	if (g->echo)
		g->echo_text = llm_xstrndup(json_string_value(p), json_string_length(p));
	if (llm_tokenize(conf->m, json_string_value(p), json_string_length(p), LLM_TOKENIZE_SPECIAL, ids, n) != LLM_OK)
		return serve_badf(b, NULL, "'prompt': %s", serve_client_msg());
	return 0;
}

/* The sampling and stopping fields. */
static int grammar_of(const json_t *j, struct serve_params *g, struct serve_bad *b);

/* At most n - 4 bytes of s into d (n > 4), cut where a UTF-8 character
 * starts and marked "..." when cut. */
void
serve_cut_text(char *d, size_t n, const char *s)
{
	size_t l = strlen(s);
	if (l < n) {
		memcpy(d, s, l + 1);
		return;
	}
	l = n - 4;
	while (l && ((unsigned char)s[l] & 0xC0) == 0x80)
		l--;
	memcpy(d, s, l);
	memcpy(d + l, "...", 4);
}

/* The most choices a request (n): each is a generation of its own. */
#define SERVE_MAX_CHOICES 8

/* The fields a completion reads (llm-serve(1) lists them): where (C chat,
 * T text completion), and the fields that are read and have no effect
 * here by what they mean (an end user's id, llama-server's prompt cache,
 * which is always on).  Any other field is refused by name. */
enum { C = 1, T = 2 };
static const struct {
	const char *name;
	int where;
} fields[] = {{"model", C | T}, {"messages", C}, {"prompt", T}, {"stream", C | T}, {"stream_options", C | T},
	{"temperature", C | T}, {"top_p", C | T}, {"top_k", C | T}, {"min_p", C | T}, {"presence_penalty", C | T},
	{"frequency_penalty", C | T}, {"repeat_penalty", C | T}, {"repeat_last_n", C | T}, {"seed", C | T},
	{"n", C | T}, {"max_tokens", C | T}, {"max_completion_tokens", C}, {"n_predict", C | T}, {"stop", C | T},
	{"ignore_eos", C | T}, {"logprobs", C | T}, {"top_logprobs", C}, {"echo", T}, {"logit_bias", C | T},
	{"response_format", C | T}, {"grammar", C | T}, {"json_schema", C | T}, {"tools", C}, {"tool_choice", C},
	{"parallel_tool_calls", C}, {"reasoning_format", C}, {"reasoning_effort", C}, {"chat_template_kwargs", C},
	{"user", C | T}, {"cache_prompt", C | T}};

static int
known_fields(const json_t *j, int chat, struct serve_bad *b)
{
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)j, k, v) {
		size_t i = 0;
		while (i < LLM_NELEM(fields) && strcmp(fields[i].name, k) != 0)
			i++;
		if (i == LLM_NELEM(fields) || !(fields[i].where & (chat ? C : T))) {
			char name[64];
			serve_cut_text(name, sizeof(name), k); /* a client's text: at most 60 bytes of it */
			return serve_badf(b, "unknown_field",
			    "'%s' is not a field of %s that llm-serve reads (llm-serve(1))", name,
			    chat ? "/v1/chat/completions" : "/v1/completions");
		}
	}
	const json_t *lb = json_object_get(j, "logit_bias"), *so = json_object_get(j, "stream_options");
	if (lb && !json_is_null(lb) && !(json_is_object(lb) && json_object_size(lb) == 0))
		return serve_badf(b, "unsupported_field", "'logit_bias' is not supported (only {} or null)");
	if (so && !json_is_null(so) && !json_is_object(so))
		return serve_badf(b, NULL, "'stream_options' must be an object");
	const json_t *user = json_object_get(j, "user"), *cp = json_object_get(j, "cache_prompt");
	if (user && !json_is_null(user) && !json_is_string(user))
		return serve_badf(b, NULL, "'user' must be a string");
	if (cp && !json_is_null(cp) && !json_is_boolean(cp))
		return serve_badf(b, NULL, "'cache_prompt' must be a boolean");
	return 0;
}

/* logprobs (chat: a boolean, with top_logprobs 0-20 alternatives; text:
 * 0-5 alternatives), and echo (text: the prompt before the reply). */
static int
logprobs_of(const json_t *j, struct serve_params *g, struct serve_bad *b)
{
	const json_t *lp = json_object_get(j, "logprobs"), *top = json_object_get(j, "top_logprobs"),
		     *echo = json_object_get(j, "echo"); /* borrowed */
	int64_t k = -1;
	g->logprobs = -1;
	if (g->chat) {
		if (lp && !json_is_null(lp) && !json_is_boolean(lp))
			return serve_badf(b, NULL, "'logprobs' must be a boolean");
		if (serve_integer(j, "top_logprobs", 0, 20, &k, b))
			return -1;
		if (top && !json_is_null(top) && !json_is_true(lp))
			return serve_badf(b, NULL, "'top_logprobs' needs 'logprobs': true");
		if (json_is_true(lp))
			g->logprobs = k < 0 ? 0 : (int)k;
	} else {
		if (serve_integer(j, "logprobs", 0, 5, &k, b))
			return -1;
		g->logprobs = (int)k;
		if (echo && !json_is_null(echo) && !json_is_boolean(echo))
			return serve_badf(b, NULL, "'echo' must be a boolean");
		g->echo = json_is_true(echo);
		if (g->echo && g->logprobs >= 0)
			return serve_badf(b, "unsupported_field",
			    "'echo' with 'logprobs' is not supported (the prompt's "
			    "log probabilities are not computed)");
	}
	return 0;
}

static int
params_of(const struct serve_conf *conf, const json_t *j, struct serve_params *g, struct serve_bad *b)
{
	struct llm_sampling d = LLM_SAMPLING_DEFAULT;
	double temp = d.temperature, top_p = d.top_p, pres = 0, freq = 0, min_p = d.min_p, rep = d.repeat_penalty;
	int64_t seed = -1, n = 1, maxt = conf->n_predict, top_k = d.top_k, rep_n = d.repeat_last_n;
	if (known_fields(j, g->chat, b) < 0)
		return -1;
	const json_t *x = json_object_get(j, "stream"), *ie = json_object_get(j, "ignore_eos");
	if (x && !json_is_null(x) && !json_is_boolean(x))
		return serve_badf(b, NULL, "'stream' must be a boolean");
	g->stream = json_is_true(x);
	if (ie && !json_is_null(ie) && !json_is_boolean(ie))
		return serve_badf(b, NULL, "'ignore_eos' must be a boolean");
	if (num(j, "temperature", 0, 2, &temp, b) || num(j, "top_p", 0, 1, &top_p, b) ||
	    num(j, "presence_penalty", -2, 2, &pres, b) || num(j, "frequency_penalty", -2, 2, &freq, b) ||
	    num(j, "min_p", 0, 1, &min_p, b) || num(j, "repeat_penalty", 0.01, 100, &rep, b) ||
	    serve_integer(j, "top_k", 0, INT32_MAX, &top_k, b) ||
	    serve_integer(j, "repeat_last_n", -1, INT32_MAX, &rep_n, b) ||
	    serve_integer(j, "seed", INT64_MIN, INT64_MAX, &seed, b) ||
	    serve_integer(j, "n", 1, SERVE_MAX_CHOICES, &n, b) ||
	    serve_integer(j, "max_tokens", 1, INT32_MAX, &maxt, b) ||
	    serve_integer(j, "n_predict", -1, INT32_MAX, &maxt, b) ||
	    serve_integer(j, "max_completion_tokens", 1, INT32_MAX, &maxt, b) || logprobs_of(j, g, b))
		return -1;
	if (n > 1 && g->stream)
		return serve_badf(b, "unsupported_field", "'n' above 1 is not streamed: give 'stream': false");
	g->n = (size_t)n;
	d.temperature = temp;
	d.top_p = top_p;
	d.top_k = top_k;
	d.min_p = min_p;
	d.repeat_penalty = rep;
	d.repeat_last_n = rep_n;
	d.ignore_eos = json_is_true(ie);
	/* OpenAI's penalties count the whole sequence so far */
	d.presence_penalty = pres;
	d.frequency_penalty = freq;
	if ((pres != 0 || freq != 0) && !json_object_get(j, "repeat_last_n"))
		d.repeat_last_n = -1;
	d.seed = seed < 0 ? (uint64_t)time(NULL) ^ conf->salt : (uint64_t)seed;
	g->sp = d;
	g->max_tokens = maxt;
	const json_t *st = json_object_get(j, "stop");
	if (json_is_string(st)) {
		if (!*json_string_value(st))
			return serve_badf(b, NULL, "'stop' must not be empty");
		g->stop = llm_xcalloc(1, sizeof(*g->stop));
		g->stop[g->nstop++] = llm_xstrdup(json_string_value(st));
	} else if (json_is_array(st)) {
		if (json_array_size(st) > 4)
			return serve_badf(b, NULL, "'stop' holds at most 4 strings");
		g->stop = llm_xcalloc(json_array_size(st) + 1, sizeof(*g->stop));
		size_t i;
		json_t *s;
		json_array_foreach (st, i, s) {
			if (!json_is_string(s) || !*json_string_value(s)) /* "" or a leading NUL */
				return serve_badf(b, NULL, "'stop' must be a string or an array of non-empty strings");
			g->stop[g->nstop++] = llm_xstrdup(json_string_value(s));
		}
	} else if (st && !json_is_null(st))
		return serve_badf(b, NULL, "'stop' must be a string or an array of strings");
	return grammar_of(j, g, b);
}

/* The grammar the reply is held to: OpenAI's response_format (json_object,
 * or json_schema with its schema), or llama-server's grammar (GBNF) or
 * json_schema; one of them.  0 and g->grammar (NULL: none), or -1. */
static int
grammar_of(const json_t *j, struct serve_params *g, struct serve_bad *b)
{
	const json_t *rf = json_object_get(j, "response_format"), *gr = json_object_get(j, "grammar"),
		     *js = json_object_get(j, "json_schema"); /* borrowed */
	const json_t *schema = NULL;
	const char *what = NULL, *any = NULL; /* any: response_format json_object's schema when it gives none */
	if (rf && json_is_null(rf))
		rf = NULL;
	if (gr && json_is_null(gr))
		gr = NULL;
	if (js && json_is_null(js))
		js = NULL;
	if (rf) {
		const json_t *t = json_object_get(rf, "type"); /* borrowed */
		const char *type = json_string_value(t);
		if (!json_is_object(rf) || !type)
			return serve_badf(b, NULL, "'response_format' must be an object with a string 'type'");
		if (strcmp(type, "json_schema") == 0) {
			const json_t *w = json_object_get(rf, "json_schema"); /* borrowed */
			schema = json_object_get(w, "schema");
			if (!json_is_object(schema) && !json_is_boolean(schema))
				return serve_badf(b, NULL,
				    "'response_format.json_schema.schema' must be a JSON schema");
			what = "response_format.json_schema.schema";
		} else if (strcmp(type, "json_object") == 0) {
			/* llama-server's: a schema may come with it */
			schema = json_object_get(rf, "schema");
			what = "response_format.schema";
			if (!schema)
				any = "{\"type\": \"object\"}";
		} else if (strcmp(type, "text") != 0) {
			return serve_badf(b, NULL,
			    "'response_format.type' must be 'text', 'json_object' or 'json_schema', not '%s'", type);
		}
	}
	if ((schema || any) + (gr != NULL) + (js != NULL) > 1)
		return serve_badf(b, NULL,
		    "give one of 'response_format' (json_object, json_schema), 'grammar' and 'json_schema'");
	if (js) {
		if (!json_is_object(js) && !json_is_boolean(js))
			return serve_badf(b, NULL, "'json_schema' must be a JSON schema");
		schema = js;
		what = "json_schema";
	}
	if (schema || any) {
		char *text = any ? llm_xstrdup(any) : json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
		int rc = llm_json_schema_to_grammar(text, strlen(text), &g->grammar);
		free(text);
		if (rc != LLM_OK)
			return serve_badf(b, NULL, "'%s': %s", what, llm_errmsg());
	} else if (gr) {
		if (!json_is_string(gr))
			return serve_badf(b, NULL, "'grammar' must be a string (GBNF)");
		if (llm_grammar_check(json_string_value(gr)) != LLM_OK)
			return serve_badf(b, NULL, "'grammar': %s", llm_errmsg());
		g->grammar = llm_xstrdup(json_string_value(gr));
	}
	g->sp.grammar = g->grammar;
	return 0;
}

int
serve_params_read(const struct serve_conf *conf, const json_t *j, int chat, struct serve_params *p, int64_t **ids,
    size_t *n, struct serve_bad *b)
{
	*ids = NULL;
	*n = 0;
	p->chat = chat;
	if (!json_is_object(j))
		return serve_badf(b, NULL, "the body must be a JSON object");
	return params_of(conf, j, p, b) < 0 || prompt_of(conf, j, p, ids, n, b) < 0 ? -1 : 0;
}

void
serve_params_free(struct serve_params *p)
{
	for (size_t i = 0; i < p->nstop; i++)
		free(p->stop[i]);
	free(p->stop);
	free(p->conv);
	free(p->grammar);
	free(p->prefix);
	llm_free(p->pre_ids);
	free(p->echo_text);
	memset(p, 0, sizeof(*p));
}

/* ---- header fields ---------------------------------------------------------- */

unsigned
serve_check_framing(const struct serve_field *f, size_t n, const char *version, const char **msg)
{
	size_t cl = 0, te = 0, host = 0;
	const char *cl1 = NULL, *te1 = NULL;
	int differ = 0;
	for (size_t i = 0; i < n; i++) {
		if (strcasecmp(f[i].name, "Content-Length") == 0) {
			if (cl++ && strcmp(cl1, f[i].value) != 0)
				differ = 1;
			cl1 = f[i].value;
		} else if (strcasecmp(f[i].name, "Transfer-Encoding") == 0) {
			te++;
			te1 = f[i].value;
		} else if (strcasecmp(f[i].name, "Host") == 0)
			host++;
	}
	*msg = NULL;
	if (differ)
		*msg = "the request has Content-Length headers that differ";
	else if (te && cl)
		*msg = "the request has both Transfer-Encoding and Content-Length";
	else if (te > 1 || (te1 && strcasecmp(te1, "chunked") != 0)) {
		*msg = "no transfer coding but chunked is taken";
		return 501;
	} else if (host > 1 || (!host && strcmp(version, "HTTP/1.1") == 0))
		*msg = "an HTTP/1.1 request has one Host header";
	return *msg ? 400 : 0;
}

/* The host part of a Host header: "[::1]" of "[::1]:8080", "name" of "name:80". */
static size_t
host_part(const char *h)
{
	if (*h == '[') {
		const char *e = strchr(h, ']');
		return e ? (size_t)(e - h + 1) : strlen(h);
	}
	const char *e = strrchr(h, ':');
	return e ? (size_t)(e - h) : strlen(h);
}

static int
host_is(const char *h, size_t n, const char *name)
{
	return strlen(name) == n && strncasecmp(h, name, n) == 0;
}

int
serve_host_allowed(const struct serve_names *s, const char *host)
{
	if (!s->loopback && !s->nhosts)
		return 1;
	size_t n = host_part(host);
	int good = host_is(host, n, s->listen) ||
	    (s->loopback &&
		(host_is(host, n, "localhost") || host_is(host, n, "127.0.0.1") || host_is(host, n, "[::1]")));
	if (s->listen[0] != '[' && strchr(s->listen, ':') && n == strlen(s->listen) + 2 && host[0] == '[' &&
	    strncasecmp(host + 1, s->listen, n - 2) == 0)
		good = 1; /* an IPv6 address in brackets */
	for (size_t i = 0; !good && i < s->nhosts; i++)
		good = host_is(host, n, s->hosts[i]);
	return good;
}
