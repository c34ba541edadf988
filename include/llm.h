/* llm.h: the C API of libllm, for programs that run models compiled by
 * the llm-* toolchain (a bundle, model.llm, or its build directory).
 *
 *   #include <llm.h>      cc app.c $(pkg-config --cflags --libs llm)
 *
 * Handles are opaque.  Every function that can fail returns an enum
 * llm_status (LLM_OK, 0, on success) and leaves a one-line message for
 * llm_errmsg(); outputs are written only on success.  The library never
 * prints and never calls exit(); a failed allocation aborts the process,
 * as in glib.
 *
 * Threads: a struct llm (an opened model) is shared; any number of
 * threads may call the functions that take a const struct llm *,
 * llm_tokenize, llm_detokenize and llm_chat_apply (they lock the model's
 * tokenizer), and llm_embed (each call evaluates in a context of its
 * own).  A struct llm_seq (one sequence: its KV cache, tokens and
 * sampler) is used by one thread at a time; different sequences of one
 * model run in different threads at once.  llm_close refuses a model
 * whose sequences are not all freed.
 *
 * Memory: the strings and arrays the library returns through char **,
 * int64_t ** or float ** are the caller's, freed with llm_free().  Pointers returned
 * directly (llm_seq_logits, llm_chat_template, ...) belong to the handle
 * and live until the call noted beside them. */
#ifndef LLM_H
#define LLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLM_API_VERSION 3

enum llm_status {
	LLM_OK = 0,
	LLM_ERR_ARG = 1,         /* a NULL handle, a value out of range */
	LLM_ERR_IO = 2,          /* a file that cannot be read or written */
	LLM_ERR_FORMAT = 3,      /* a bundle, tokenizer or state file that is not what it must be */
	LLM_ERR_TARGET = 4,      /* the model was compiled for features this CPU lacks */
	LLM_ERR_CONTEXT = 5,     /* tokens past the sequence's context, a context too large */
	LLM_ERR_TOKEN = 6,       /* a token id outside the vocabulary */
	LLM_ERR_TEXT = 7,        /* text that is not valid UTF-8 */
	LLM_ERR_UNSUPPORTED = 8, /* the model has no tokenizer, no chat template, or no phase for embeddings */
	LLM_ERR_RANKS = 9,       /* a model split over MPI ranks that cannot run it together (another
	                          * bundle, another count); rank 0's llm_errmsg says why, the others' is "" */
};

/* The message of the last call that failed in this thread, one line
 * ("file: what is wrong"); "" when none has. */
const char *llm_errmsg(void);
/* "LLM_ERR_ARG", ...; NULL for a number that is no status. */
const char *llm_status_name(int status);
/* The library's version, "0.7". */
const char *llm_version(void);
void llm_free(void *p);

/* ---- A model ---------------------------------------------------------- */

struct llm;

struct llm_options {
	int threads;     /* OpenMP threads of the phases; 0: all the cores (OpenMP
	                  * reads it once: the first model opened sets it for the process) */
	int64_t context; /* positions of a sequence made with context 0; 0: 4096, or the build's limit if smaller */
	int verbose;     /* 1: report loading and each phase call on standard error (llm-run -v) */
	const char *tokenizer;     /* the tokenizer and chat template of this tokenizer.json, bundle or directory
	                        * instead of the model's (NULL: the model's) */
	const char *chat_template; /* a template by name instead of the model's ("qwen2", ...; NULL: the model's) */
};
#define LLM_OPTIONS_INIT {0, 0, 0, NULL, NULL}

/* Open a bundle or build directory (o NULL: LLM_OPTIONS_INIT).  Weights
 * are mapped in place; the model library is loaded and its plan checked
 * against the weights; the bundle's target against this CPU. */
int llm_open(const char *path, const struct llm_options *o, struct llm **out);
/* Close *m and set *m to NULL (a second close sees NULL: nothing).
 * LLM_ERR_ARG, and nothing closed, while sequences of it are alive. */
int llm_close(struct llm **m);

/* A model split over MPI ranks (llm-import --tp N or --pp N), run as N
 * processes (mpirun -np N program ...): llm_open starts MPI, maps this
 * rank's part of the weights and checks that every rank opened the same
 * plan.  Rank 0 is the model the program drives (sequences, sampling,
 * output); each evaluation it makes is told to the others first.  The
 * others call llm_follow, which makes the same evaluations on their part
 * and returns LLM_OK when rank 0 closes its model; then they close
 * theirs.  One sequence at a time, and no llm_seq_save or llm_seq_load.
 * llm_rank is 0 for a model of one process. */
int llm_rank(const struct llm *m);
int llm_follow(struct llm *m);

/* The model's facts. */
int64_t llm_vocab_size(const struct llm *m);
/* The most positions a sequence can hold (llm-import --max-context). */
int64_t llm_context_limit(const struct llm *m);
/* The id that starts a document, or -1. */
int64_t llm_token_bos(const struct llm *m);
/* 1 if the model's documents start with that id (the tokenizer adds it:
 * LLM_TOKENIZE_SPECIAL), else 0. */
int llm_token_add_bos(const struct llm *m);
/* 1 if id ends a generation (one of the model's eos ids), else 0. */
int llm_token_is_eos(const struct llm *m, int64_t id);
/* The KV cache's element type ("f32", "f16", "bf16": llm-import --kv-dtype). */
const char *llm_kv_type(const struct llm *m);
/* How the linear products take the activations: "f32", "q8" (rounded to
 * int8 blocks) or "bf16" (llm-import --activations); NULL for NULL. */
const char *llm_activations(const struct llm *m);
/* The most tokens one prefill call evaluates (llm-import --prefill-chunk;
 * longer prompts go in chunks); 0 for NULL. */
int64_t llm_prefill_chunk(const struct llm *m);
/* The CPU the model was compiled for ("znver4", ...; live until llm_close). */
const char *llm_target_cpu(const struct llm *m);
/* The chat template's Jinja text (live until llm_close), or NULL: none. */
const char *llm_chat_template_source(const struct llm *m);
/* The chat template's name ("qwen2", "llama3", ...), or NULL: none. */
const char *llm_chat_template_name(const struct llm *m);
/* What opening found odd but accepted (an unknown chat template name in
 * tokenizer_config.json), one line for the user, or NULL. */
const char *llm_model_warning(const struct llm *m);
/* As llama_model_desc: "qwen2 1.5B Q4_0" (the family, llama.cpp's size
 * class of its shape, "?B" where it has none, the file type, or the
 * weights' type, or the block type that holds most of their bytes); live
 * until llm_close. */
const char *llm_model_desc(const struct llm *m);
/* Bytes of the weights (as mapped), and elements of the checkpoint's
 * tensors; 0 for a NULL model. */
uint64_t llm_model_size(const struct llm *m);
uint64_t llm_model_n_params(const struct llm *m);

/* The OpenMP threads of the phases the calling thread runs from now on
 * (libomp's omp_set_num_threads; llm_options.threads sets it at open for
 * the thread that opens).  LLM_ERR_ARG for threads < 1. */
int llm_set_threads(struct llm *m, int threads);

/* ---- Text ------------------------------------------------------------- */

enum llm_tokenize_flags {
	LLM_TOKENIZE_SPECIAL = 1, /* add what the tokenizer adds at the start (a BOS) */
	LLM_TOKENIZE_PLAIN = 2,   /* text that spells a special token stays text */
};
/* text (len bytes, UTF-8) to *n ids in *ids (llm_free).  Text that spells
 * a special token becomes that token, as in Hugging Face tokenizers. */
int llm_tokenize(struct llm *m, const char *text, size_t len, int flags, int64_t **ids, size_t *n);
/* ids to UTF-8 text, NUL-terminated, *len bytes (len may be NULL); bytes
 * that do not form UTF-8 become U+FFFD. */
int llm_detokenize(struct llm *m, const int64_t *ids, size_t n, char **text, size_t *len);

enum llm_piece_flags {
	LLM_PIECE_SPECIAL = 1, /* a special token's own text ("<|im_end|>"); without it a special token is "" */
	LLM_PIECE_FIRST = 2,   /* the first token after a context of BOS alone: the leading space that
	                        * SentencePiece decoding strips there is stripped ("\u2581Once" is "Once") */
	LLM_PIECE_MARKERS = 4, /* a special token that is a marker of the chat template's reply format
	                        * (llm_chat_parse_reply: "[TOOL_CALLS]", "<|channel|>", ...) gives its text */
};
/* The bytes token id adds to a text streamed token by token: *len bytes
 * in *text (llm_free), NUL-terminated.  A character may span several
 * tokens, so a piece alone may end inside one: join the pieces (as
 * llm-run and llm-serve do) and hold back an unfinished character. */
int llm_token_piece(struct llm *m, int64_t id, int flags, char **text, size_t *len);

struct llm_message {
	const char *role; /* "system", "user", "assistant" */
	const char *content;
};
/* The conversation rendered with the model's chat template (its prompt
 * for the next assistant turn when add_generation_prompt), *text NUL-
 * terminated (llm_free).  LLM_ERR_UNSUPPORTED when the model has none. */
int llm_chat_apply(struct llm *m, const struct llm_message *msgs, size_t n, int add_generation_prompt, char **text,
    size_t *len);
/* As llm_tokenize on a rendered conversation, where special-token text
 * inside the messages stays text (only the template's own markers become
 * special tokens). */
int llm_chat_tokenize(struct llm *m, const struct llm_message *msgs, size_t n, int add_generation_prompt, int64_t **ids,
    size_t *nids);
/* The same for a conversation in JSON text (len bytes): an array of
 * messages, or an object with "messages" and "tools" as an OpenAI chat
 * request carries them.  A message has a string "role"; its "content" is
 * a string, null or absent; its other keys (tool_calls, tool_call_id,
 * name, reasoning_content, ...) and the tools reach the template as they
 * are, their strings kept from becoming special tokens as contents are.
 * LLM_ERR_ARG for text that is not such JSON. */
int llm_chat_apply_json(struct llm *m, const char *json, size_t len, int add_generation_prompt, char **text,
    size_t *textlen);
int llm_chat_tokenize_json(struct llm *m, const char *json, size_t len, int add_generation_prompt, int64_t **ids,
    size_t *nids);

/* ---- Replies ---------------------------------------------------------- */

/* A generated reply split as an OpenAI assistant message carries it:
 * content, reasoning_content and tool_calls, by the reply format of the
 * model's chat template (its family's markers: Hermes' <tool_call>,
 * llama 3's JSON calls, Mistral's [TOOL_CALLS], DeepSeek-R1's
 * <｜tool▁calls▁begin｜>, Phi-4-mini's <|tool_call|>, gpt-oss's harmony
 * channels; <think> and its kin for thoughts). */
enum llm_parse_flags {
	LLM_PARSE_TOOLS = 1,     /* tool calls become tool_calls (else they stay text) */
	LLM_PARSE_REASONING = 2, /* thoughts become reasoning_content (else they stay in content) */
	LLM_PARSE_THINKING = 4,  /* the reply starts inside a thought (llm_chat_prompt_thinking) */
	LLM_PARSE_PARTIAL = 8,   /* the reply may go on: what may still become a marker or a call is
	                          * held back, so that content and reasoning only grow, and calls come whole */
};
/* The format's name: "hermes", "llama3", "mistral", "deepseek-r1",
 * "phi4", "harmony", "think" (thoughts, no calls) or "plain" (neither; a
 * model without a template too).  Live until llm_close. */
const char *llm_chat_reply_format(const struct llm *m);
/* 1 when a rendered prompt (len bytes) ends inside a thought of the
 * format (its generation prompt opens one, as DeepSeek-R1's does), else 0. */
int llm_chat_prompt_thinking(const struct llm *m, const char *prompt, size_t len);
/* The reply (len bytes of text as generated: the text of the special
 * tokens that are the format's markers included) as a message in JSON,
 * *json NUL-terminated (llm_free; jsonlen may be NULL): {"role":
 * "assistant", "content": text, or null when empty beside tool calls,
 * "reasoning_content": text (when any), "tool_calls": [{"id": "call_N",
 * "type": "function", "function": {"name", "arguments": JSON text}}]
 * (when any)}.  A call that is not well-formed stays text in content.
 * LLM_ERR_TEXT for text that is not valid UTF-8. */
int llm_chat_parse_reply(const struct llm *m, const char *text, size_t len, int flags, char **json, size_t *jsonlen);
/* For a reply held to tool calls (OpenAI's tool_choice "required", or one
 * function by name): *grammar, GBNF for llm_sampling.grammar that takes
 * one call (with parallel, one or more) of the tools (len bytes of an
 * OpenAI "tools" array in JSON; only: the one function so named, or
 * NULL), its arguments held to the function's "parameters" schema; and
 * *prefix, the text to evaluate after the generation prompt so that the
 * reply starts inside a call (the format's opening marker, which may be a
 * special token a grammar cannot draw; with thinking, a prompt that ends
 * inside a thought, the prefix closes the thought first).  The reply to parse is *prefix
 * followed by the text generated.  Both llm_free.  LLM_ERR_ARG for tools
 * that are not such JSON, a name of no tool, a schema refused (the
 * message names the tool), LLM_ERR_UNSUPPORTED for a format without
 * calls. */
int llm_chat_tool_grammar(const struct llm *m, const char *tools, size_t len, const char *only, int parallel,
    int thinking, char **grammar, char **prefix);

/* ---- Sequences -------------------------------------------------------- */

struct llm_seq;

/* A sequence of up to context positions (0: llm_options.context). */
int llm_seq_new(struct llm *m, int64_t context, struct llm_seq **out);
/* Free *s and set *s to NULL (a second free sees NULL: nothing). */
void llm_seq_free(struct llm_seq **s);

/* Append n tokens: their KV entries are computed, and the logits become
 * the last token's.  LLM_ERR_CONTEXT when they do not fit (nothing
 * appended). */
int llm_seq_eval(struct llm_seq *s, const int64_t *ids, size_t n);
/* llm_vocab_size floats: the next token's logits after the last eval
 * (NULL before any); live until the next call on s. */
const float *llm_seq_logits(const struct llm_seq *s);
/* Positions filled, and the positions the sequence holds. */
int64_t llm_seq_pos(const struct llm_seq *s);
int64_t llm_seq_context(const struct llm_seq *s);
/* The tokens of the sequence, llm_seq_pos of them (live until the next
 * call on s). */
const int64_t *llm_seq_tokens(const struct llm_seq *s);
/* Keep the first pos positions (a prefix: the rest is forgotten, the
 * logits too until the next eval); 0 empties it. */
int llm_seq_rewind(struct llm_seq *s, int64_t pos);

enum llm_chat_flags {
	LLM_CHAT_GENERATION_PROMPT = 1,  /* end with the start of the assistant's turn */
	LLM_CHAT_SPECIAL_IN_CONTENT = 2, /* messages' text that spells a special token becomes it (else: text) */
};
/* A chat's next prompt for s: the conversation rendered with the model's
 * template, compared with the text of s's tokens.  *keep: the positions
 * of s to keep, the longest prefix whose text starts the rendering at a
 * point where the rest can be encoded on its own (after an added token,
 * or a token evaluated alone as a generated one is: so a reply's tokens
 * are kept as they were generated).  *ids, *nids (llm_free): the rest,
 * at least one token.  Nothing is evaluated: llm_seq_rewind(s, *keep)
 * then llm_seq_eval(s, *ids, *nids) do it, the prompt's text recorded
 * for the next turn. */
int llm_seq_chat(struct llm_seq *s, const struct llm_message *msgs, size_t n, int flags, int64_t *keep, int64_t **ids,
    size_t *nids);
/* The same for a conversation in JSON text, as llm_chat_apply_json. */
int llm_seq_chat_json(struct llm_seq *s, const char *json, size_t len, int flags, int64_t *keep, int64_t **ids,
    size_t *nids);

/* Write the sequence's state (tokens, KV entries, logits, context size)
 * to path (atomically), and read one back into a sequence of the same
 * model, whose context becomes the saved one's.  A state of another
 * model or plan is refused (LLM_ERR_FORMAT), the sequence unchanged;
 * one cut short in its KV entries leaves the sequence empty. */
int llm_seq_save(const struct llm_seq *s, const char *path);
int llm_seq_load(struct llm_seq *s, const char *path);

/* ---- Embeddings ------------------------------------------------------- */

/* Added in API version 3. */
enum llm_pooling {
	LLM_POOL_LAST = 0, /* the last token's hidden state (decoder embedding models: Qwen3-Embedding, e5-mistral) */
	LLM_POOL_MEAN = 1, /* the mean of every token's */
};
/* The size of an embedding: the model's hidden size (-1 for a NULL model). */
int64_t llm_embed_dim(const struct llm *m);
/* The embedding of n tokens (n >= 1): the model's hidden states after its
 * final norm (the LM head's input) at every position of ids evaluated
 * from position 0, pooled, and with normalize scaled to unit Euclidean
 * norm (a zero vector stays zero); *dim = llm_embed_dim floats in *out
 * (llm_free).  The tokens are evaluated in a context of their own, as
 * long as they need (up to llm_context_limit), in chunks like a prompt's:
 * no sequence changes, and calls from several threads run at once.  A
 * model compiled by a toolchain older than llm_embed (one without the
 * phase "embed") gives LLM_ERR_UNSUPPORTED, the message saying so: compile
 * it again.  LLM_ERR_ARG for a NULL or empty input or an unknown pooling,
 * LLM_ERR_TOKEN for an id outside the vocabulary, LLM_ERR_CONTEXT for more
 * tokens than the limit. */
int llm_embed(struct llm *m, const int64_t *ids, size_t n, int pooling, int normalize, float **out, size_t *dim);

/* ---- Sampling --------------------------------------------------------- */

/* The filters run in the order of Hugging Face's generate(): repetition
 * penalty, temperature, top-k, top-p, min-p, then one draw.  Temperature
 * 0 is greedy.  The same seed and logits give the same tokens. */
struct llm_sampling {
	double temperature;    /* <= 0: greedy */
	int64_t top_k;         /* 0: off */
	double top_p;          /* >= 1: off */
	double min_p;          /* 0: off */
	double repeat_penalty; /* 1: off */
	int64_t repeat_last_n; /* the penalties' window: 0 none, -1 the whole sequence */
	uint64_t seed;
	double presence_penalty;  /* less for a token in the window (llama.cpp's, OpenAI's); 0: off */
	double frequency_penalty; /* less per time it is there; 0: off */
	int64_t ignore_eos;       /* 1: never an end-of-sequence or end-of-turn token (llama-cli --ignore-eos) */
	/* Added in API version 2, at the end: a program built with an older
	 * llm.h passes a smaller struct and must be rebuilt.  GBNF text (llama.cpp's grammar notation; NULL: none):
	 * the reply is held to it (see Grammars below). */
	const char *grammar;
};
#define LLM_SAMPLING_GREEDY {0.0, 0, 1.0, 0.0, 1.0, 64, 0, 0.0, 0.0, 0, NULL}
/* llama-cli's defaults (temperature 0.8, top-k 40, top-p 0.95, min-p 0.05). */
#define LLM_SAMPLING_DEFAULT {0.8, 40, 0.95, 0.05, 1.0, 64, 0, 0.0, 0.0, 0, NULL}

/* The next token from the sequence's logits, its tokens as the penalty's
 * history.  The sampler's random state lives in s and is started afresh
 * from p->seed when p changes (p->grammar compared by its text).
 * LLM_ERR_ARG before any eval, and for a grammar that is refused
 * ("llm_seq_sample: grammar: line L, column C: what") or that allows no
 * token of the vocabulary at this point; LLM_ERR_UNSUPPORTED for a
 * grammar on a model without a tokenizer. */
int llm_seq_sample(struct llm_seq *s, const struct llm_sampling *p, int64_t *id);
/* Start the sampler's random state afresh: the next llm_seq_sample draws
 * as the first one after llm_seq_new with the same p would (from p->seed,
 * the grammar at its root), whatever was sampled before.  A server that
 * reuses a sequence for another request calls it so that a seed gives the
 * same reply every time.  LLM_ERR_ARG for a NULL s. */
int llm_seq_reseed(struct llm_seq *s);

/* ---- Grammars --------------------------------------------------------- */

/* With llm_sampling.grammar, every token drawn is one whose text the
 * grammar can take next (the others' logits are -inf before the other
 * filters: the token drawn is checked first, and the whole vocabulary
 * masked only when it is refused); a special token is never text, and an
 * end-of-sequence or end-of-turn token is allowed only where the text so
 * far is a whole sentence of the grammar, and drawn (whatever
 * ignore_eos) where nothing else can follow.  The grammar's state belongs
 * to the sequence: it goes on from one llm_seq_sample to the next while
 * each follows the token drawn by the one before (evaluated alone), and
 * starts afresh at the root when p changes or anything else was evaluated
 * or rewound in between (a new prompt, a chat turn).  A token's text is
 * its bytes as llm_token_piece gives them without flags; a character may
 * span tokens.
 *
 * GBNF, as llama.cpp: `name ::= alternatives` a line, `|`, "literals",
 * [classes], `.`, ( ), * + ? {m} {m,} {m,n}, # comments; `root` starts.
 * LLM_OK if grammar (NUL-terminated) is one that llm_seq_sample accepts,
 * else LLM_ERR_ARG with "line L, column C: what". */
int llm_grammar_check(const char *grammar);
/* A JSON schema (len bytes of JSON) as GBNF text, *grammar NUL-terminated
 * (llm_free), for llm_sampling.grammar; the schema {"type": "object"} gives
 * any JSON object.  LLM_ERR_ARG for text that is not JSON, or a
 * schema with what is not supported (pattern, minimum, uniqueItems, ...:
 * the message names the keyword and where it is). */
int llm_json_schema_to_grammar(const char *schema, size_t len, char **grammar);

#ifdef __cplusplus
}
#endif

#endif
