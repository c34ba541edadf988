/* chatsrc.h: what turns text into a model's tokens and a conversation
 * into its prompt: the tokenizer, the chat template and the bos/eos
 * token strings of a bundle or build directory (model.json's
 * tokenizer.chat_template, tokenizer.json, chat_template.jinja,
 * tokenizer_config.json), or of a tokenizer.json file with those files
 * beside it.  Used by llm-run and by the public API (include/llm.h). */
#ifndef LLM_CHATSRC_H
#define LLM_CHATSRC_H

#include "../formats/bundle.h"
#include "tokenizer.h"

struct llm_chatsrc {
	struct llm_tokenizer *tok; /* NULL: no tokenizer.json */
	int tmpl;                  /* named or recognised; -1: none */
	char *bos, *eos;           /* tokenizer_config.json's tokens; NULL: not given */
	char *warning;             /* NULL, or what the caller may print (an unknown template name) */
};

#define LLM_CHATSRC_INIT {NULL, -1, NULL, NULL, NULL}

/* Fill s from the members of b, or from path: a tokenizer.json (a file
 * starting with '{'), a bundle or a directory.  0, or -1 with llm_errmsg
 * naming the file at fault (s then holds what was read; free it). */
int llm_chatsrc_bundle(struct llm_chatsrc *s, const struct llm_bundle *b);
int llm_chatsrc_path(struct llm_chatsrc *s, const char *path);
/* The bos and eos strings to render with: s's, else the template's. */
const char *llm_chatsrc_bos(const struct llm_chatsrc *s, int tmpl);
const char *llm_chatsrc_eos(const struct llm_chatsrc *s, int tmpl);
void llm_chatsrc_free(struct llm_chatsrc *s);

#endif
