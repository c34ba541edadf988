/* gguf_config.h: the hyperparameters llm-import takes from a GGUF file's
 * metadata, for a model of a family family.h lists, in the terms of a Hugging Face
 * config.json (struct llm_hfconfig), so that nothing after llm-import
 * knows that the model came from a GGUF file (gguf_tokenizer.h does the
 * same for the tokenizer).
 *
 * Hyperparameters, for architecture A (general.architecture, a family
 * spec's name in family.h; anything else is refused by name):
 *   A.block_count, A.embedding_length, A.feed_forward_length,
 *   A.attention.head_count, A.context_length,
 *   A.attention.layer_norm_rms_epsilon      required
 *   A.attention.head_count_kv               default head_count
 *   A.rope.freq_base                        default 10000
 *   A.attention.key_length                  head_dim; default
 *                                           embedding_length / head_count
 *   A.vocab_size                            optional; the vocabulary is the
 *                                           rows of token_embd.weight
 * These keys and Mistral's and Gemma 3's window keys are rows of
 * hfconfig.h's llm_config_keys, which gives config.json's key of each too;
 * llm_config_check checks the invariants for both readers.
 * Refused: rope.scaling.type other than "none", rope.dimension_count other
 * than head_dim, value_length other than key_length, experts.  An F32 value
 * (eps, rope base) is taken as the shortest decimal that reads back as the
 * same f32, as gguf2hf and Hugging Face configs spell it (1e-05, not
 * 9.99999974738e-06). */
#ifndef LLM_GGUF_CONFIG_H
#define LLM_GGUF_CONFIG_H

#include "gguf.h"
#include "hfconfig.h"

/* Fill c from g's metadata (and the shape of token_embd.weight, the
 * presence of output.weight and of q biases).  0, or -1 with llm_errmsg
 * "file: ..." naming the key at fault. */
int llm_gguf_config(struct llm_hfconfig *c, const struct llm_gguf *g);

/* A token id key of g: *out -1 when absent or 0xffffffff (none); an error
 * (-1, llm_errmsg) when outside [0, n). */
int llm_gguf_token_id(const struct llm_gguf *g, const char *key, uint64_t n, int64_t *out);
/* Add id (when >= 0 and not there yet) to the stop ids[0, *n), at most
 * LLM_MAX_EOS of them. */
void llm_gguf_add_stop_id(int64_t *ids, int *n, int64_t id);

#endif
