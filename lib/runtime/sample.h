/* sample.h: choosing the next token from a row of logits.
 *
 * The filters run in the order of Hugging Face's generate(): repetition
 * penalty on the raw logits (with llama.cpp's presence and frequency
 * penalties, over the same window), temperature, top-k, top-p, min-p,
 * then one draw from what is left.  Temperature 0 (or top-k 1) is greedy: the
 * largest logit after the penalty, the lowest id on ties.
 *
 * Nothing sorts the whole vocabulary: top-k keeps a heap of k entries,
 * top-p pops a heap built in linear time only as far as the nucleus
 * reaches, min-p is a threshold, and a plain temperature draw walks the
 * vocabulary in id order.  Ties are broken by id, and the generator is
 * xoshiro256** seeded through splitmix64, so a seed gives the same tokens
 * for the same logits on every run. */
#ifndef LLM_SAMPLE_H
#define LLM_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

struct llm_sampler_params {
	double temp;           /* <= 0: greedy */
	int64_t top_k;         /* keep the k largest; 0: off */
	double top_p;          /* keep the smallest set with mass >= top_p; >= 1: off */
	double min_p;          /* drop p < min_p * max p; 0: off */
	double repeat_penalty; /* > 0; 1: off */
	int64_t repeat_last_n; /* window of the penalties: 0 none, -1 the whole history */
	uint64_t seed;
	double presence_penalty;  /* subtracted from the logit of an id in the window; 0: off */
	double frequency_penalty; /* subtracted once per time it is there; 0: off */
};

/* Greedy, penalty window 64 (off while the penalties are 1, 0 and 0). */
#define LLM_SAMPLER_DEFAULTS {0.0, 0, 1.0, 0.0, 1.0, 64, 0, 0.0, 0.0}

struct llm_sampler;

/* A sampler for a vocabulary of n_vocab ids.  NULL with llm_errmsg for
 * parameters out of range (negative top_k, top_p or min_p outside [0, 1],
 * a penalty <= 0, a window < -1). */
struct llm_sampler *llm_sampler_new(const struct llm_sampler_params *p, int64_t n_vocab);
void llm_sampler_free(struct llm_sampler *s);

/* The next token for logits (n_vocab floats, not modified), given the
 * tokens of the context so far (hist, for the penalty window). */
int64_t llm_sampler_sample(struct llm_sampler *s, const float *logits, const int64_t *hist, size_t nhist);

/* What the filters leave before the draw: the candidate ids and their
 * probabilities (summing to 1), at most n_vocab entries, in descending
 * order when top-k or top-p ran and in id order otherwise.  Returns their
 * number (1 for greedy: the chosen id with probability 1). */
struct llm_candidate {
	int64_t id;
	double p;
};
size_t llm_sampler_candidates(struct llm_sampler *s, const float *logits, const int64_t *hist, size_t nhist,
    struct llm_candidate *out);

/* The generator alone (xoshiro256**), for random test tokens: state from a
 * seed, then 64 random bits, or a uniform double in [0, 1). */
struct llm_rng {
	uint64_t s[4];
};
void llm_rng_seed(struct llm_rng *r, uint64_t seed);
uint64_t llm_rng_next(struct llm_rng *r);
double llm_rng_uniform(struct llm_rng *r);

#endif
