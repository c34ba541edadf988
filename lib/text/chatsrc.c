/* chatsrc.c: see chatsrc.h. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chatsrc.h"
#include "../base/json.h"
#include "../base/util.h"

/* The template from its text (jinja: chat_template.jinja's, else the
 * config's), then the config's special tokens. */
static int
settle(struct llm_chatsrc *s, const char *jinja, size_t len, const char *jlabel, const char *clabel)
{
	const char *text = jinja, *label = jlabel;
	char *lab = NULL;
	if (!text && s->config && (text = llm_chat_config_template(s->config))) {
		len = strlen(text);
		label = lab = llm_xasprintf("%s: chat_template", clabel);
	}
	if (text && llm_chat_template_text(&s->tmpl, text, len, label) < 0) {
		free(s->warning);
		s->warning = llm_xasprintf("the chat template is left out: %s", llm_errmsg());
	}
	free(lab);
	if (s->config && llm_chat_config_check(s->config, clabel) < 0)
		return -1;
	if (s->tmpl.jinja && s->config && llm_chat_template_tokens(&s->tmpl, s->config, clabel) < 0)
		return -1;
	/* what the tokenizer accepted but found odd: said with the rest */
	const char *tw = s->tok ? llm_tokenizer_warning(s->tok) : NULL;
	if (tw) {
		char *w = s->warning ? llm_xasprintf("%s; %s", s->warning, tw) : llm_xstrdup(tw);
		free(s->warning);
		s->warning = w;
	}
	return 0;
}

/* The member name of b as text (freed by the caller), or NULL: absent;
 * -1 in *rc for an error. */
static char *
member(const struct llm_bundle *b, const char *name, const char **label, size_t *len, int *rc)
{
	const struct llm_member *mb = llm_bundle_find(b, name);
	char *text;
	if (!mb)
		return NULL;
	if (llm_bundle_read(b, mb, &text, len) < 0) {
		*rc = -1;
		return NULL;
	}
	*label = mb->label;
	return text;
}

int
llm_chatsrc_bundle(struct llm_chatsrc *s, const struct llm_bundle *b)
{
	const char *label, *jlabel = NULL, *clabel = NULL;
	char *text, *jinja = NULL;
	size_t len, jlen = 0;
	int rc = 0;

	if ((text = member(b, "tokenizer.json", &label, &len, &rc))) {
		s->tok = llm_tokenizer_load_json(text, len, label);
		free(text);
		if (!s->tok)
			return -1;
	}
	if (rc == 0 && (text = member(b, "tokenizer_config.json", &clabel, &len, &rc))) {
		s->config = llm_json_loadb(text, len, clabel);
		free(text);
		if (!s->config || !json_is_object(s->config)) {
			if (s->config)
				llm_seterr("%s: not a JSON object", clabel);
			return -1;
		}
	}
	if (rc == 0)
		jinja = member(b, "chat_template.jinja", &jlabel, &jlen, &rc);
	if (rc == 0)
		rc = settle(s, jinja, jlen, jlabel, clabel);
	free(jinja);
	return rc;
}

int
llm_chatsrc_path(struct llm_chatsrc *s, const char *path)
{
	struct stat st;
	/* before fopen: a FIFO would block it */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return llm_seterr("%s: not a regular file or directory", path);
	FILE *f = fopen(path, "r");
	int c = ' ';
	if (f) {
		while ((c = getc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r')
			;
		fclose(f);
	}
	if (c != '{') {
		struct llm_bundle b;
		if (llm_bundle_open(&b, path) < 0)
			return -1;
		int rc = llm_chatsrc_bundle(s, &b);
		llm_bundle_close(&b);
		return rc;
	}
	if (!(s->tok = llm_tokenizer_load(path)))
		return -1;
	char *p = llm_xstrdup(path), *dir = llm_xstrdup(dirname(p));
	char *cpath = llm_path_join(dir, "tokenizer_config.json"), *jpath = llm_path_join(dir, "chat_template.jinja");
	char *jinja = NULL;
	size_t jlen = 0;
	int rc = 0;
	if (llm_file_exists(cpath)) {
		if (!(s->config = llm_json_load(cpath)))
			rc = -1;
		else if (!json_is_object(s->config))
			rc = llm_seterr("%s: not a JSON object", cpath);
	}
	if (rc == 0 && llm_file_exists(jpath) && llm_read_file(jpath, &jinja, &jlen) < 0)
		rc = -1;
	if (rc == 0)
		rc = settle(s, jinja, jlen, jpath, cpath);
	free(jinja);
	free(cpath);
	free(jpath);
	free(p);
	free(dir);
	return rc;
}

int
llm_chatsrc_template(struct llm_chatsrc *s, const char *spec)
{
	struct llm_chat_template t = LLM_CHAT_TEMPLATE_INIT;
	if (llm_chat_template_spec(&t, spec) < 0)
		return -1;
	if (s->config && llm_chat_template_tokens(&t, s->config, "tokenizer_config.json") < 0) {
		llm_chat_template_free(&t);
		return -1;
	}
	llm_chat_template_free(&s->tmpl);
	s->tmpl = t;
	return 0;
}

void
llm_chatsrc_free(struct llm_chatsrc *s)
{
	llm_tokenizer_free(s->tok);
	llm_chat_template_free(&s->tmpl);
	json_decref(s->config);
	free(s->warning);
	*s = (struct llm_chatsrc)LLM_CHATSRC_INIT;
}
