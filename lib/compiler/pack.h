/* pack.h: write weights.bin and weights.json from a model.json weight plan
 * and its sources, safetensors files or a GGUF file (lib/formats/source.h): the
 * body of llm-pack-weights.
 *
 * Every plan tensor is checked against its source before anything is
 * written; then the tensors are streamed one at a time, in chunks, from
 * the mapped sources (converted to the plan dtype, rows unpermuted for
 * "unpermute_qk", or computed for the RoPE tables), so memory stays
 * O(chunk), not O(model).  Both outputs are written atomically: a failure
 * leaves the previous pair as it was. */
#ifndef LLM_PACK_H
#define LLM_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "../formats/model.h"

struct llm_pack_opts {
	int no_reuse; /* rewrite even when the existing pair is up to date */
	int verbose;  /* say on stderr why an existing pair is not reused */
	int threads;  /* threads that quantize or split blocks; 0: one per CPU */
};

struct llm_pack_stats {
	int reused; /* 1: the existing pair was up to date, nothing written */
	size_t ntensors;
	uint64_t bytes; /* size of weights.bin */
	double seconds;
};

/* Pack model m into outdir/<m->weights_file> and outdir/weights.json,
 * creating outdir if needed.  0, or -1 with llm_errmsg "file: message"
 * and no new output left behind. */
int llm_pack_weights(const struct llm_model *m, const char *outdir, const struct llm_pack_opts *o,
    struct llm_pack_stats *st);

/* RoPE's inv_freq[i], i < dim/2 (dim: the rotated dims of a head):
 * theta^(-2i/dim), changed as the scaling s says (model.h), in double. */
double llm_rope_inv_freq(double theta, const struct llm_rope_scaling *s, int64_t i, int64_t dim);
/* RoPE table row p: out[i] = cos or sin(p * inv_freq[i]) times the
 * attention factor, for i < rotary_dim/2, computed in double and rounded
 * to f32; then cos 1 and sin 0 up to head_dim/2 (dims that pass). */
void llm_rope_row(float *out, int64_t p, double theta, const struct llm_rope_scaling *s, int64_t head_dim,
    int64_t rotary_dim, int use_sin);

#endif
