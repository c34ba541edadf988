/* tokenizer.h: exact Hugging Face tokenization (the `tokenizers` library's
 * semantics) for byte-level BPE (GPT-2, Llama 3, Qwen2, DeepSeek-R1-Distill)
 * and SentencePiece-style BPE ('\xe2\x96\x81' for space, <0xNN> byte
 * fallback: Llama 2, Mistral).
 *
 * A tokenizer is one pipeline, the same whichever way it is built:
 *   added tokens matched in the raw text (leftmost-longest; special or not;
 *   lstrip/rstrip/single_word/normalized flags)
 *   -> normalizer (NFC/NFD/NFKC/NFKD, Lowercase, Prepend, Replace, Strip,
 *      StripAccents, Sequence)
 *   -> pre-tokenizer (Split with a PCRE2 regex or string and any split
 *      behaviour, ByteLevel, Metaspace, Digits, Whitespace,
 *      WhitespaceSplit, Sequence)
 *   -> BPE by merge rank (byte fallback, unk fusing, ignore_merges)
 *   -> post-processor when special tokens are asked for
 *      (TemplateProcessing, Bert/Roberta, ByteLevel, Sequence).
 * Decoding runs the tokenizer.json decoder (ByteLevel, Metaspace, Replace,
 * ByteFallback, Fuse, Strip, Sequence) and yields valid UTF-8, invalid
 * byte sequences replaced by U+FFFD as Rust's from_utf8_lossy does.
 *
 * Ids are int64_t like every other token id in the toolchain.  A tokenizer
 * is not safe for concurrent use (encode keeps a word cache and scratch
 * buffers); use one per thread, and load tokenizers from one thread at a
 * time (the first load fills shared Unicode tables). */
#ifndef LLM_TOKENIZER_H
#define LLM_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "../base/utf8.h"
#include "../base/util.h"

struct llm_tokenizer;

/* Load a tokenizer.json file, or its text already in memory (from a
 * bundle); name is used in messages ("name: what is wrong").  NULL with
 * llm_errmsg on failure, including any tokenizer.json feature this engine
 * does not implement (named in the message, never ignored). */
struct llm_tokenizer *llm_tokenizer_load(const char *path);
struct llm_tokenizer *llm_tokenizer_load_json(const char *text, size_t len, const char *name);
void llm_tokenizer_free(struct llm_tokenizer *t);

/* Building from arrays, for vocabularies that come without tokenizer.json
 * (GGUF's tokenizer.ggml.* keys).  The strings are copied. */
enum llm_tokenizer_kind {
	LLM_TOKENIZER_BYTE_BPE = 1, /* GGUF "gpt2": byte-level BPE with a split regex */
	LLM_TOKENIZER_SPM_BPE = 2,  /* GGUF "llama": SentencePiece BPE, byte fallback */
};

/* Token types, numbered as GGUF's tokenizer.ggml.token_type. */
enum llm_token_type {
	LLM_TOKEN_NORMAL = 1,
	LLM_TOKEN_UNKNOWN = 2,
	LLM_TOKEN_CONTROL = 3,      /* becomes a special added token */
	LLM_TOKEN_USER_DEFINED = 4, /* becomes a non-special added token */
	LLM_TOKEN_UNUSED = 5,
	LLM_TOKEN_BYTE = 6,
};

/* Pre-tokenizer regexes of the common byte-level vocabularies (PCRE2
 * syntax, matched with UTF and UCP). */
#define LLM_TOKENIZER_RE_GPT2 \
	"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"
#define LLM_TOKENIZER_RE_LLAMA3 \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*" \
	"|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* GPT-4o's o200k (Phi-4-mini; llama.cpp's pre-tokenizer "gpt-4o") */
#define LLM_TOKENIZER_RE_O200K \
	"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+" \
	"[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*" \
	"|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define LLM_TOKENIZER_RE_QWEN2 \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*" \
	"|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

struct llm_tokenizer_vocab {
	int kind; /* enum llm_tokenizer_kind */
	size_t n_tokens;
	const char *const *tokens; /* (n_tokens) token strings, index = id */
	const size_t *lens;        /* (n_tokens) byte lengths, or NULL: NUL-terminated */
	const float *scores;       /* (n_tokens) or NULL; SPM merge priority when no merges */
	const int32_t *types;      /* (n_tokens) enum llm_token_type, or NULL: all normal */
	size_t n_merges;
	const char *const *merges; /* (n_merges) "left right" by rank, or NULL (SPM: by score) */
	const char *pattern;       /* BYTE_BPE split regex; NULL: LLM_TOKENIZER_RE_GPT2 */
	int add_space_prefix;      /* SPM: '\xe2\x96\x81' before each text piece, as llama.cpp */
	int64_t bos_id, eos_id;    /* -1 when absent */
	int64_t unk_id;            /* SPM unknown token, -1 when absent */
	int add_bos, add_eos;      /* what encoding with special tokens adds */
};
struct llm_tokenizer *llm_tokenizer_build(const struct llm_tokenizer_vocab *v, const char *name);

/* Encode UTF-8 text and append the ids to *ids (grown with llm_xrealloc,
 * *n updated).  add_special: run the post-processor (BOS for Llama and
 * DeepSeek); text is otherwise encoded as is, special-token text included
 * (it becomes the special token's id, as in Hugging Face).  0, or -1 with
 * llm_errmsg (text that is not valid UTF-8). */
int llm_tokenizer_encode(struct llm_tokenizer *t, const char *text, size_t len, int add_special, int64_t **ids,
    size_t *n);
/* As llm_tokenizer_encode, but special added tokens are not recognized
 * where their text overlaps one of the byte ranges [plain[i][0],
 * plain[i][1]) of text (sorted, not overlapping, not empty): there it is
 * encoded as the text it spells, as Hugging Face's encode_special_tokens
 * (transformers' split_special_tokens) does for a whole text.  Everything
 * else is as llm_tokenizer_encode: a rendered conversation whose messages
 * are the ranges gets its template's tokens and no forged ones. */
int llm_tokenizer_encode_plain(struct llm_tokenizer *t, const char *text, size_t len, int add_special,
    const size_t (*plain)[2], size_t nplain, int64_t **ids, size_t *n);

/* Decode ids to text as Hugging Face's decode(ids, skip_special_tokens)
 * does: unknown ids are dropped, special added tokens too when
 * skip_special, the decoder runs over the whole sequence and the result is
 * valid UTF-8.  Appends to out. */
void llm_tokenizer_decode(struct llm_tokenizer *t, const int64_t *ids, size_t n, int skip_special, struct llm_buf *out);

/* The raw bytes one token stands for, appended to out, for streaming
 * output: byte-level tokens through the byte map, '\xe2\x96\x81' as space
 * (SPM), <0xNN> as the byte; added tokens as their text.  No U+FFFD
 * replacement: a character may span several tokens, the caller joins them.
 * The leading space that SPM decoding strips from the first token is kept.
 * 0, or -1 for an unknown id (out unchanged). */
int llm_tokenizer_token_bytes(const struct llm_tokenizer *t, int64_t id, struct llm_buf *out);

/* Token lookups.  n_vocab is the largest id + 1.  token_text gives the
 * token's string as tokenizer.json spells it (byte-level "\xc4\xa0the"),
 * NULL for an unknown id; find gives the id of a token string (added
 * tokens first, then the model), -1 when there is none. */
int64_t llm_tokenizer_n_vocab(const struct llm_tokenizer *t);
/* What loading accepted but found odd (merges given twice), one line
 * naming the file and key, or NULL. */
const char *llm_tokenizer_warning(const struct llm_tokenizer *t);
const char *llm_tokenizer_token_text(const struct llm_tokenizer *t, int64_t id, size_t *len);
int64_t llm_tokenizer_find(const struct llm_tokenizer *t, const char *s, size_t len);

/* Added tokens (the tokenizer.json "added_tokens" or GGUF control and
 * user-defined tokens) and whether an id is special (skipped by
 * skip_special). */
size_t llm_tokenizer_n_added(const struct llm_tokenizer *t);
int64_t llm_tokenizer_added_id(const struct llm_tokenizer *t, size_t i);
int llm_tokenizer_is_special(const struct llm_tokenizer *t, int64_t id);

/* BOS/EOS as far as the tokenizer knows them: the ids that encoding with
 * special tokens puts first and last (TemplateProcessing, or the GGUF
 * keys), -1 when none.  tokenizer.json does not name EOS unless its
 * template appends it: read config.json / generation_config.json for the
 * model's EOS ids. */
int64_t llm_tokenizer_bos(const struct llm_tokenizer *t);
int64_t llm_tokenizer_eos(const struct llm_tokenizer *t);

/* The GPT-2 byte-level map: byte -> code point, and back (-1: none). */
uint32_t llm_bytelevel_char(uint8_t b);
int llm_bytelevel_byte(uint32_t cp);

#endif
