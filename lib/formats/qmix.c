/* qmix.c: see qmix.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gguf.h"
#include "qmix.h"

static const struct {
	const char *name;
	uint32_t base; /* the type of every matrix no rule below changes */
} mixes[] = {
	[LLM_QMIX_Q8_0] = {"q8_0", LLM_GGML_Q8_0},
	[LLM_QMIX_Q4_0] = {"q4_0", LLM_GGML_Q4_0},
	[LLM_QMIX_Q4_1] = {"q4_1", LLM_GGML_Q4_1},
	[LLM_QMIX_Q5_0] = {"q5_0", LLM_GGML_Q5_0},
	[LLM_QMIX_Q5_1] = {"q5_1", LLM_GGML_Q5_1},
	[LLM_QMIX_Q4_K_S] = {"q4_k_s", LLM_GGML_Q4_K},
	[LLM_QMIX_Q4_K_M] = {"q4_k_m", LLM_GGML_Q4_K},
	[LLM_QMIX_Q5_K_S] = {"q5_k_s", LLM_GGML_Q5_K},
	[LLM_QMIX_Q5_K_M] = {"q5_k_m", LLM_GGML_Q5_K},
	[LLM_QMIX_Q6_K] = {"q6_k", LLM_GGML_Q6_K},
};

int
llm_qmix_parse(const char *s)
{
	for (int i = 0; i < LLM_QMIX_COUNT; i++)
		if (strcasecmp(s, mixes[i].name) == 0)
			return i;
	return -1;
}

const char *
llm_qmix_name(int mix)
{
	return mixes[mix].name;
}

const char *
llm_qmix_names(void)
{
	static char buf[128];
	if (!buf[0])
		for (int i = 0; i < LLM_QMIX_COUNT; i++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? ", " : "", mixes[i].name);
	return buf;
}

static uint32_t
blck(uint32_t t)
{
	uint32_t b, size;
	llm_ggml_type_block(t, &b, &size);
	return b;
}

/* llama-quantize's use_more_bits: the first and last eighth of the
 * layers and every third one between. */
static int
more_bits(int layer, int n)
{
	return layer < n / 8 || layer >= 7 * n / 8 || (layer - n / 8) % 3 == 2;
}

uint32_t
llm_qmix_type(int mix, const struct llm_qmix_tensor *t)
{
	uint32_t ty = mixes[mix].base;
	int l = t->layer, n = t->n_layers;
	int km = mix == LLM_QMIX_Q4_K_M || mix == LLM_QMIX_Q5_K_M;

	if (t->role == LLM_ROLE_LM_HEAD || (t->role == LLM_ROLE_EMBED && t->tied)) {
		if (t->cols % blck(ty))
			ty = LLM_GGML_Q8_0;
		else if (ty != LLM_GGML_Q8_0)
			ty = LLM_GGML_Q6_K;
	} else if (t->role == LLM_ROLE_WV || t->qkv) {
		if (km && more_bits(l, n))
			ty = LLM_GGML_Q6_K;
		else if (mix == LLM_QMIX_Q4_K_S && l < 4)
			ty = LLM_GGML_Q5_K;
		/* llama.cpp's LLM_TYPE_70B: a Llama of 80 layers with GQA */
		int llama70b = t->family == LLM_FAMILY_LLAMA && n == 80 && t->n_kv_heads < t->n_heads;
		if (llama70b && ty == LLM_GGML_Q4_K)
			ty = LLM_GGML_Q5_K;
	} else if (t->role == LLM_ROLE_WDOWN) {
		if (km && more_bits(l, n))
			ty = LLM_GGML_Q6_K;
		else if (mix == LLM_QMIX_Q4_K_S && l < n / 8)
			ty = LLM_GGML_Q5_K;
	}
	/* rows (of cols elements) must be whole blocks */
	if (t->cols % blck(ty)) {
		ty = ty == LLM_GGML_Q4_K ? LLM_GGML_Q5_0 :
		    ty == LLM_GGML_Q5_K  ? LLM_GGML_Q5_1 :
		    ty == LLM_GGML_Q6_K  ? LLM_GGML_Q8_0 :
					   ty;
		if (t->cols % blck(ty))
			ty = LLM_GGML_F16;
	}
	return ty;
}
