/* chatsrc.h: what turns text into a model's tokens and a conversation
 * into its prompt: the tokenizer and the chat template of a bundle or
 * build directory (tokenizer.json, chat_template.jinja,
 * tokenizer_config.json), or of a tokenizer.json file with those files
 * beside it.  The template is chat_template.jinja's text, else
 * tokenizer_config.json's chat_template (a string, or a list of
 * {"name", "template"} of which "default" is used), as transformers takes
 * it; it renders with tokenizer_config.json's special tokens.  Used by
 * llm-run and by the public API (include/llm.h). */
#ifndef LLM_CHATSRC_H
#define LLM_CHATSRC_H

#include "../formats/bundle.h"
#include "chat.h"
#include "tokenizer.h"

struct llm_chatsrc {
	struct llm_tokenizer *tok;     /* NULL: no tokenizer.json */
	struct llm_chat_template tmpl; /* tmpl.jinja NULL: none */
	json_t *config;                /* tokenizer_config.json; NULL: none */
	char *warning;                 /* NULL, or what the caller may print (a template that cannot render) */
};

#define LLM_CHATSRC_INIT {NULL, LLM_CHAT_TEMPLATE_INIT, NULL, NULL}

/* Fill s from the members of b, or from path: a tokenizer.json (a file
 * starting with '{'), a bundle or a directory.  0, or -1 with llm_errmsg
 * naming the file at fault (s then holds what was read; free it).  A
 * template the engine cannot render is left out, with s->warning saying
 * why. */
int llm_chatsrc_bundle(struct llm_chatsrc *s, const struct llm_bundle *b);
int llm_chatsrc_path(struct llm_chatsrc *s, const char *path);
/* Render with a built-in template (a name of chat.h), or with the Jinja
 * text of the file spec names, instead; tokenizer_config.json's special
 * tokens still apply.  0, or -1 with llm_errmsg. */
int llm_chatsrc_template(struct llm_chatsrc *s, const char *spec);
void llm_chatsrc_free(struct llm_chatsrc *s);

#endif
