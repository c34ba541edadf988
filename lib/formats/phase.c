/* phase.c: the phase table (see phase.h).  prefill takes a chunk of the
 * prompt at position 0, prefill_kv a chunk after earlier ones (the same
 * code but for its history: the same schedule), decode one token.  embed
 * is prefill_kv (at any position, 0 included) with the head replaced by
 * the final norm of every row: the hidden states an embedding pools
 * (share/doc/llm/ir.txt "The embed phase").  Its entry is not llm_embed,
 * libllm's function: the model library's own call of it would bind to
 * the program's. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "phase.h"
#include "../base/util.h"

const struct llm_phase_spec llm_phase_specs[LLM_PH_COUNT] = {
	[LLM_PH_PREFILL] = {"prefill", "llm_prefill", "prefill", 0, 0, LLM_OUT_LOGITS},
	[LLM_PH_PREFILL_KV] = {"prefill_kv", "llm_prefill_kv", "prefill", 0, 1, LLM_OUT_LOGITS},
	[LLM_PH_DECODE] = {"decode", "llm_decode", "decode", 1, 0, LLM_OUT_LOGITS},
	[LLM_PH_EMBED] = {"embed", "llm_embed_rows", "prefill", 0, 1, LLM_OUT_HIDDEN},
};

const struct llm_phase_arg llm_phase_args[LLM_PHASE_NARGS] = {
	{"weights", "memref<?xi8>", "weights"},
	{"kv", "memref<?xi8>", "kv"},
	{"tokens", "memref<?xi64>", "tokens"},
	{"pos", "i64", "pos_i"},
	{"n_tokens", "i64", "n_tokens"},
	{"logits", "memref<?xf32>", "logits"},
};

const struct llm_phase_spec *
llm_phase_spec_by_name(const char *name)
{
	for (int i = 0; i < LLM_PH_COUNT; i++)
		if (strcmp(llm_phase_specs[i].name, name) == 0)
			return &llm_phase_specs[i];
	return NULL;
}

int64_t
llm_phase_tokens(const struct llm_phase_spec *s, int64_t chunk)
{
	return s->single ? 1 : chunk;
}

int64_t
llm_phase_out_floats(const struct llm_phase_spec *s, int64_t tokens, int64_t vocab, int64_t hidden)
{
	return s->out == LLM_OUT_HIDDEN ? tokens * hidden : vocab;
}

int
llm_phase_kind(const char *kind, char *buf, size_t n)
{
	size_t len = strlen(kind);
	const struct llm_phase_spec *s;

	if (len == 0 || len >= n)
		return llm_seterr("bad kind '%s'", kind);
	for (size_t i = 0; i < len; i++)
		if (!islower((unsigned char)kind[i]) && !isdigit((unsigned char)kind[i]) && kind[i] != '_')
			return llm_seterr("bad kind '%s'", kind);
	if ((s = llm_phase_spec_by_name(kind)))
		kind = s->kind;
	snprintf(buf, n, "%s", kind);
	return 0;
}
