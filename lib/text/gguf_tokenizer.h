/* gguf_tokenizer.h: the tokenizer llm-import takes from a GGUF file's
 * metadata (tokenizer.ggml.*), both as the arrays llm_tokenizer_build
 * takes and as the tokenizer.json and tokenizer_config.json Hugging Face
 * would have written for it, so that nothing after llm-import knows that
 * the model came from a GGUF file (gguf_config.h does the same for the
 * hyperparameters).
 *
 * tokenizer.ggml.model:
 *   "llama"  SentencePiece BPE: tokens, scores (merge priority), token_type
 *            (6 = byte token <0xNN>, used for byte fallback), unknown_token_id,
 *            add_space_prefix (default true).  The tokenizer.json is the
 *            Llama 2 one: Prepend("\xe2\x96\x81") + Replace(" ", "\xe2\x96\x81")
 *            normalizer, BPE with byte_fallback and fuse_unk, merges derived
 *            from the scores as transformers' SentencePiece conversion
 *            derives them (every split of a token into two tokens, ordered
 *            by the token's score, then the longer left part, then the
 *            longer right part, then token order), decoder Replace,
 *            ByteFallback, Fuse, Strip(1 leading space).  Where two
 *            candidate merges have equal scores, these ranks (transformers')
 *            and SentencePiece's own rule (leftmost first; llama.cpp and
 *            llm_tokenizer_build) can split a word differently; vocabularies
 *            trained by SentencePiece BPE give every merged piece its own
 *            score, so the two agree on them (stories260K, Llama 2).
 *   "gpt2"   byte-level BPE: tokens, merges, token_type, and
 *            tokenizer.ggml.pre naming the pre-tokenizer: "qwen2" and
 *            "deepseek-r1-qwen" (the Qwen2 regex, NFC normaliser), "llama-bpe"
 *            (the Llama 3 regex, ignore_merges); others are refused by name.
 *   absent or "none": no tokenizer.
 * Token types 3 (control) become special added tokens, 4 (user-defined)
 * non-special ones.  bos_token_id, eos_token_id (and eot_token_id,
 * eom_token_id as further stop ids), padding_token_id: ids past the
 * vocabulary are an error, except 0xffffffff, which means none.
 * add_bos_token defaults to true for "llama" and "llama-bpe", false
 * otherwise; add_eos_token to false.  tokenizer.chat_template goes into
 * tokenizer_config.json. */
#ifndef LLM_GGUF_TOKENIZER_H
#define LLM_GGUF_TOKENIZER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../formats/gguf.h"
#include "../formats/gguf_config.h"
#include "../formats/hfconfig.h"
#include "../text/tokenizer.h"

struct llm_gguf_tokenizer {
	struct llm_tokenizer_vocab v; /* for llm_tokenizer_build; points into
	                               * the arrays below */
	const char *model;            /* "llama" or "gpt2" */
	char *pre;                    /* tokenizer.ggml.pre; NULL for llama */
	int nfc;                      /* NFC normaliser (Qwen2's tokenizer.json) */
	int ignore_merges;            /* BPE ignore_merges (Llama 3's) */
	int64_t pad_id;               /* -1: none */
	int n_eos;                    /* eos, eot, eom: the stop ids */
	int64_t eos_ids[LLM_MAX_EOS];
	char *chat_template; /* NULL: none */
	char *name;          /* the file, for messages */
	/* Storage: NUL-terminated copies (tokens hold no NUL: refused). */
	char **tokens;
	size_t *lens;
	float *scores;
	int32_t *types;
	char **merges;
};

/* Read g's tokenizer into *t.  0, 1 when g has none (t empty), or -1 with
 * llm_errmsg.  Every token must be valid UTF-8 without NUL bytes, every
 * merge two tokens whose concatenation is a token. */
int llm_gguf_tokenizer_load(struct llm_gguf_tokenizer *t, const struct llm_gguf *g);
void llm_gguf_tokenizer_free(struct llm_gguf_tokenizer *t);

/* tokenizer.json and tokenizer_config.json for t (new references).  A token
 * string that occurs twice keeps its first id in the vocabulary (the later
 * ids decode to nothing, as in a Hugging Face vocabulary with holes). */
json_t *llm_gguf_tokenizer_json(const struct llm_gguf_tokenizer *t);
json_t *llm_gguf_tokenizer_config(const struct llm_gguf_tokenizer *t);

#endif
