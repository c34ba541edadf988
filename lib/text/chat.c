/* chat.c: see chat.h. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat.h"
#include "../base/json.h"

/* The built-in texts, assembled into the object from
 * lib/text/templates/ (paths from the top of the tree, where make
 * runs), each with a NUL after it. */
#define EMBED(sym, path)                                                                                    \
	__asm__(".pushsection .rodata\n.globl " #sym "\n.hidden " #sym "\n" #sym ":\n.incbin \"" path "\"\n" \
		".byte 0\n.popsection\n");                                                                      \
	extern const char sym[] __attribute__((visibility("hidden")))
EMBED(llm_tpl_deepseek_r1, "lib/text/templates/deepseek-r1.jinja");
EMBED(llm_tpl_qwen2, "lib/text/templates/qwen2.jinja");
EMBED(llm_tpl_qwen3, "lib/text/templates/qwen3.jinja");
EMBED(llm_tpl_llama3, "lib/text/templates/llama3.jinja");
EMBED(llm_tpl_llama2, "lib/text/templates/llama2.jinja");

/* The DeepSeek markers: fullwidth vertical bars (U+FF5C) and U+2581. */
#define DS_BOS "<\xef\xbd\x9c" "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_EOS "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"
#define DS_ASSISTANT "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"

static const struct {
	const char *name, *text, *bos, *eos;
} builtins[] = {
	{"deepseek-r1", llm_tpl_deepseek_r1, DS_BOS, DS_EOS},
	{"qwen2", llm_tpl_qwen2, "", "<|im_end|>"},
	{"qwen3", llm_tpl_qwen3, "", "<|im_end|>"},
	{"llama3", llm_tpl_llama3, "<|begin_of_text|>", "<|end_of_text|>"},
	{"llama2", llm_tpl_llama2, "<s>", "</s>"},
};

static int
builtin_index(const char *name)
{
	for (size_t i = 0; i < LLM_NELEM(builtins); i++)
		if (strcmp(name, builtins[i].name) == 0)
			return (int)i;
	return -1;
}

const char *
llm_chat_builtin(size_t i)
{
	return i < LLM_NELEM(builtins) ? builtins[i].name : NULL;
}

const char *
llm_chat_recognise(const char *t)
{
	if (!t)
		return NULL;
	if (strstr(t, DS_ASSISTANT))
		return "deepseek-r1";
	if (strstr(t, "<|start_header_id|>"))
		return "llama3";
	if (strstr(t, "<|im_start|>") && strstr(t, "</think>"))
		return "qwen3";
	if (strstr(t, "<|im_start|>"))
		return "qwen2";
	if (strstr(t, "[INST]"))
		return "llama2";
	return NULL;
}

const char *
llm_chat_config_template(const json_t *cfg)
{
	json_t *t = json_object_get(cfg, "chat_template"), *x; /* borrowed */
	size_t i;
	if (json_is_string(t))
		return json_string_value(t);
	json_array_foreach (t, i, x)
		if (json_is_string(json_object_get(x, "name")) &&
		    strcmp(json_string_value(json_object_get(x, "name")), "default") == 0 &&
		    json_is_string(json_object_get(x, "template")))
			return json_string_value(json_object_get(x, "template"));
	return NULL;
}

void
llm_chat_template_free(struct llm_chat_template *t)
{
	llm_jinja_free(t->jinja);
	json_decref(t->tokens);
	free(t->name);
	free(t->text);
	*t = (struct llm_chat_template)LLM_CHAT_TEMPLATE_INIT;
}

int
llm_chat_template_text(struct llm_chat_template *t, const char *text, size_t len, const char *label)
{
	struct llm_jinja *j = llm_jinja_parse(text, len, label);
	if (!j)
		return -1;
	llm_chat_template_free(t);
	t->jinja = j;
	t->tokens = json_object();
	char *z = llm_xstrndup(text, len);
	const char *fam = llm_chat_recognise(z);
	t->name = fam ? llm_xstrdup(fam) : NULL;
	t->reply = llm_reply_format_of(z);
	t->text = z;
	return 0;
}

int
llm_chat_template_builtin(struct llm_chat_template *t, const char *name)
{
	int i = builtin_index(name);
	if (i < 0)
		return llm_seterr("chat template '%s': not one of the built-in ones", name);
	char *label = llm_xasprintf("chat template '%s'", name);
	int rc = llm_chat_template_text(t, builtins[i].text, strlen(builtins[i].text), label);
	free(label);
	if (rc < 0)
		return -1;
	free(t->name);
	t->name = llm_xstrdup(name);
	json_object_set_new(t->tokens, "bos_token", json_string(builtins[i].bos));
	json_object_set_new(t->tokens, "eos_token", json_string(builtins[i].eos));
	return 0;
}

int
llm_chat_spec_known(const char *spec)
{
	if (builtin_index(spec) >= 0 || access(spec, R_OK) == 0)
		return 1;
	struct llm_buf names = {0};
	for (size_t i = 0; i < LLM_NELEM(builtins); i++)
		llm_buf_printf(&names, "%s%s", i ? ", " : "", builtins[i].name);
	llm_seterr("'%s' is neither a built-in template (%s) nor a file", spec, names.p);
	llm_buf_free(&names);
	return 0;
}

int
llm_chat_template_spec(struct llm_chat_template *t, const char *spec)
{
	char *text;
	size_t len;
	if (builtin_index(spec) >= 0)
		return llm_chat_template_builtin(t, spec);
	if (!llm_chat_spec_known(spec))
		return llm_seterr("chat template %s", llm_errmsg());
	if (llm_read_file(spec, &text, &len) < 0)
		return -1;
	int rc = llm_chat_template_text(t, text, len, spec);
	free(text);
	return rc;
}

/* The special tokens a tokenizer_config.json names, as transformers reads
 * them. */
static const char *const special_keys[] = {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
	"mask_token"};

/* A special token as transformers takes it: a string, an AddedToken
 * object with a string content, or null (none). */
static int
special_ok(const json_t *v)
{
	return !v || json_is_null(v) || json_is_string(v) ||
	    (json_is_object(v) && json_is_string(json_object_get(v, "content")));
}

int
llm_chat_config_check(const json_t *config, const char *label)
{
	for (size_t i = 0; i < LLM_NELEM(special_keys); i++)
		if (!special_ok(json_object_get(config, special_keys[i])))
			return llm_seterr(
			    "%s: %s: expected a string or an object with a string 'content' (transformers "
			    "refuses it too)",
			    label, special_keys[i]);
	json_t *extra = json_object_get(config, "additional_special_tokens"), *x;
	size_t i;
	if (extra && !json_is_null(extra) && !json_is_array(extra))
		return llm_seterr("%s: additional_special_tokens: expected an array", label);
	json_array_foreach (extra, i, x)
		if (json_is_null(x) || !special_ok(x))
			return llm_seterr("%s: additional_special_tokens[%zu]: expected a string or an object with a "
					  "string 'content'",
			    label, i);
	return 0;
}

int
llm_chat_template_tokens(struct llm_chat_template *t, const json_t *config, const char *label)
{
	if (llm_chat_config_check(config, label) < 0)
		return -1;
	if (!t->tokens)
		t->tokens = json_object();
	for (size_t i = 0; i < LLM_NELEM(special_keys); i++) {
		json_t *v = json_object_get(config, special_keys[i]); /* borrowed */
		if (json_is_object(v))
			v = json_object_get(v, "content");
		if (json_is_string(v))
			json_object_set(t->tokens, special_keys[i], v);
	}
	json_t *extra = json_object_get(config, "additional_special_tokens"), *x;
	if (json_is_array(extra)) {
		json_t *a = json_array();
		size_t i;
		json_array_foreach (extra, i, x) {
			if (json_is_object(x))
				x = json_object_get(x, "content");
			if (json_is_string(x))
				json_array_append(a, x);
		}
		json_object_set_new(t->tokens, "additional_special_tokens", a);
	}
	return 0;
}

void
llm_chat_add(struct llm_chat *c, const char *role, const char *content, size_t len)
{
	json_t *m = json_object();
	json_object_set_new(m, "role", json_string(role));
	json_object_set_new(m, "content", json_stringn(content, len));
	if (!c->messages)
		c->messages = json_array();
	json_array_append_new(c->messages, m);
}

void
llm_chat_free(struct llm_chat *c)
{
	json_decref(c->messages);
	json_decref(c->tools);
	json_decref(c->kwargs);
	memset(c, 0, sizeof(*c));
}

/* A variable chat_template_kwargs may not set: the conversation's and the
 * special tokens'. */
static int
reserved_var(const char *k)
{
	static const char *const own[] = {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token",
		"unk_token", "sep_token", "pad_token", "cls_token", "mask_token", "additional_special_tokens"};
	for (size_t i = 0; i < LLM_NELEM(own); i++)
		if (strcmp(k, own[i]) == 0)
			return 1;
	return 0;
}

int
llm_chat_content_text(const json_t *content, char **text, size_t *part)
{
	struct llm_buf t = {0};
	size_t k;
	json_t *p;
	json_array_foreach ((json_t *)content, k, p) {
		const json_t *ty = json_object_get(p, "type"), *tx = json_object_get(p, "text");
		if (!json_is_string(ty) || strcmp(json_string_value(ty), "text") != 0 || !json_is_string(tx)) {
			llm_buf_free(&t);
			*part = k;
			return -1;
		}
		llm_buf_add(&t, json_string_value(tx), json_string_length(tx));
	}
	llm_buf_add(&t, "", 0);
	*text = t.p ? t.p : llm_xstrdup("");
	return 0;
}

int
llm_chat_parse(struct llm_chat *c, const char *text, size_t len, const char *name)
{
	json_t *root = llm_json_loadb_js(text, len, name), *msgs, *tools = NULL, *kw = NULL, *m;
	size_t i;

	if (!root)
		return -1;
	msgs = root;
	if (json_is_object(root)) {
		msgs = json_object_get(root, "messages");
		tools = json_object_get(root, "tools");
		if (tools && !json_is_array(tools) && !json_is_null(tools)) {
			json_decref(root);
			return llm_seterr("%s: \"tools\" is not an array", name);
		}
		kw = json_object_get(root, "chat_template_kwargs");
		const char *k;
		json_t *v;
		if (kw && !json_is_object(kw) && !json_is_null(kw)) {
			json_decref(root);
			return llm_seterr("%s: \"chat_template_kwargs\" is not an object", name);
		}
		json_object_foreach (json_is_object(kw) ? kw : NULL, k, v)
			if (reserved_var(k)) {
				json_decref(root);
				return llm_seterr("%s: \"chat_template_kwargs\": '%s' is the template's own variable",
				    name, k);
			}
	}
	if (!json_is_array(msgs)) {
		json_decref(root);
		return llm_seterr("%s: expected a JSON array of messages, or an object with one as \"messages\"", name);
	}
	json_t *copy = json_array();
	json_array_foreach (msgs, i, m) {
		json_t *content = json_object_get(m, "content"); /* borrowed */
		char *joined = NULL;
		size_t part;
		if (!json_is_object(m) || !json_is_string(json_object_get(m, "role")) ||
		    (content && !json_is_string(content) && !json_is_null(content) && !json_is_array(content))) {
			json_decref(copy);
			json_decref(root);
			return llm_seterr(
			    "%s: message %zu: expected {\"role\": string, \"content\": string, an array of "
			    "text parts or null, ...}",
			    name, i);
		}
		if (json_is_array(content) && llm_chat_content_text(content, &joined, &part) < 0) {
			json_decref(copy);
			json_decref(root);
			return llm_seterr("%s: message %zu: content part %zu: only {\"type\": \"text\", \"text\": "
					  "string} parts are read",
			    name, i, part);
		}
		json_t *x = json_copy(m);
		if (joined)
			json_object_set_new(x, "content", json_string(joined));
		free(joined);
		json_array_append_new(copy, x);
	}
	if (!c->messages)
		c->messages = json_array();
	json_array_extend(c->messages, copy);
	json_decref(copy);
	if (json_is_array(tools)) {
		json_decref(c->tools);
		c->tools = json_incref(tools);
	}
	if (json_is_object(kw)) {
		json_decref(c->kwargs);
		c->kwargs = json_incref(kw);
	}
	json_decref(root);
	return 0;
}

int
llm_chat_render(const struct llm_chat_template *t, const struct llm_chat *c, int add_generation_prompt,
    struct llm_buf *out, struct llm_spans *spans)
{
	/* the request's variables are data, as the messages are: their strings stay text */
	size_t nk = json_object_size(c->kwargs), n = 0;
	const char **data = llm_xcalloc(nk + 3, sizeof(*data));
	const char *k;
	json_t *v, *vars = json_object();
	data[n++] = "messages";
	data[n++] = "tools";
	if (t->tokens)
		json_object_update(vars, t->tokens);
	json_object_foreach (c->kwargs, k, v) {
		json_object_set(vars, k, v);
		data[n++] = k;
	}
	json_object_set_new(vars, "messages", c->messages ? json_incref(c->messages) : json_array());
	if (c->tools)
		json_object_set(vars, "tools", c->tools);
	json_object_set_new(vars, "add_generation_prompt", json_boolean(add_generation_prompt));
	int rc = llm_jinja_render(t->jinja, vars, data, out, spans);
	json_decref(vars);
	free(data);
	return rc;
}

char *
llm_chat_after_reply(const struct llm_chat_template *t)
{
	static const char reply[] = "Yes.";
	struct llm_chat c = {0};
	struct llm_buf b = {0};
	struct llm_spans sp = {0};
	char *after = NULL;
	llm_chat_add(&c, "user", "Hi?", 3);
	llm_chat_add(&c, "assistant", reply, sizeof(reply) - 1);
	if (llm_chat_render(t, &c, 0, &b, &sp) == 0 && sp.n > 0) {
		size_t e = sp.r[sp.n - 1][1];
		if (e >= sizeof(reply) - 1 && memcmp(b.p + e - (sizeof(reply) - 1), reply, sizeof(reply) - 1) == 0)
			after = llm_xstrndup(b.p + e, b.len - e);
	}
	llm_spans_free(&sp);
	llm_buf_free(&b);
	llm_chat_free(&c);
	return after;
}
