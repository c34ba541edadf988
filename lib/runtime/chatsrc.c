/* chatsrc.c: see chatsrc.h. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "chat.h"
#include "chatsrc.h"
#include "../base/json.h"
#include "../base/util.h"

/* A token of tokenizer_config.json: a string, an AddedToken object, or
 * null (""). */
static char *
config_token(json_t *cfg, const char *key)
{
	json_t *v = json_object_get(cfg, key); /* borrowed */
	if (!v)
		return NULL;
	if (json_is_object(v))
		v = json_object_get(v, "content");
	return llm_xstrdup(json_is_string(v) ? json_string_value(v) : "");
}

static int
read_config(struct llm_chatsrc *s, const char *text, size_t len, const char *label)
{
	json_t *cfg = llm_json_loadb(text, len, label), *t;
	if (!cfg)
		return -1;
	s->bos = config_token(cfg, "bos_token");
	s->eos = config_token(cfg, "eos_token");
	t = json_object_get(cfg, "chat_template"); /* borrowed */
	if (s->tmpl < 0 && json_is_string(t))
		s->tmpl = llm_chat_recognise(json_string_value(t));
	json_decref(cfg);
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
	const char *label;
	char *text;
	size_t len;
	int rc = 0;

	if ((text = member(b, "model.json", &label, &len, &rc))) {
		json_t *m = llm_json_loadb(text, len, label), *t;
		free(text);
		if (!m)
			return -1;
		t = json_object_get(json_object_get(m, "tokenizer"), "chat_template"); /* borrowed */
		if (json_is_string(t) && (s->tmpl = llm_chat_find(json_string_value(t))) < 0)
			s->warning = llm_xasprintf("%s: unknown chat template '%s'", label, json_string_value(t));
		json_decref(m);
	}
	if (rc == 0 && (text = member(b, "tokenizer.json", &label, &len, &rc))) {
		s->tok = llm_tokenizer_load_json(text, len, label);
		free(text);
		if (!s->tok)
			return -1;
	}
	if (rc == 0 && (text = member(b, "chat_template.jinja", &label, &len, &rc))) {
		if (s->tmpl < 0)
			s->tmpl = llm_chat_recognise(text);
		free(text);
	}
	if (rc == 0 && (text = member(b, "tokenizer_config.json", &label, &len, &rc))) {
		rc = read_config(s, text, len, label);
		free(text);
	}
	return rc;
}

/* A file beside dir's tokenizer.json, when there is one. */
static int
beside(struct llm_chatsrc *s, const char *dir, const char *name)
{
	char *p = llm_path_join(dir, name), *text;
	size_t len;
	int rc = 0;
	if (llm_file_exists(p)) {
		if ((rc = llm_read_file(p, &text, &len)) == 0) {
			if (strcmp(name, "chat_template.jinja") == 0)
				s->tmpl = llm_chat_recognise(text);
			else
				rc = read_config(s, text, len, p);
			free(text);
		}
	}
	free(p);
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
	int rc = beside(s, dir, "chat_template.jinja");
	if (rc == 0)
		rc = beside(s, dir, "tokenizer_config.json");
	free(p);
	free(dir);
	return rc;
}

const char *
llm_chatsrc_bos(const struct llm_chatsrc *s, int tmpl)
{
	return s->bos ? s->bos : llm_chat_default_bos(tmpl);
}

const char *
llm_chatsrc_eos(const struct llm_chatsrc *s, int tmpl)
{
	return s->eos ? s->eos : llm_chat_default_eos(tmpl);
}

void
llm_chatsrc_free(struct llm_chatsrc *s)
{
	llm_tokenizer_free(s->tok);
	free(s->bos);
	free(s->eos);
	free(s->warning);
	*s = (struct llm_chatsrc)LLM_CHATSRC_INIT;
}
