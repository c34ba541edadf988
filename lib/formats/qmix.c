/* qmix.c: see qmix.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "gguf.h"
#include "qmix.h"

static const struct {
	const char *name;
	uint32_t base;  /* the type of every matrix no rule below changes */
	uint32_t ftype; /* llama_ftype */
} mixes[] = {
	[LLM_QMIX_Q8_0] = {"q8_0", LLM_GGML_Q8_0, 7},
	[LLM_QMIX_Q4_0] = {"q4_0", LLM_GGML_Q4_0, 2},
	[LLM_QMIX_Q4_1] = {"q4_1", LLM_GGML_Q4_1, 3},
	[LLM_QMIX_Q5_0] = {"q5_0", LLM_GGML_Q5_0, 8},
	[LLM_QMIX_Q5_1] = {"q5_1", LLM_GGML_Q5_1, 9},
	[LLM_QMIX_Q4_K_S] = {"q4_k_s", LLM_GGML_Q4_K, 14},
	[LLM_QMIX_Q4_K_M] = {"q4_k_m", LLM_GGML_Q4_K, 15},
	[LLM_QMIX_Q5_K_S] = {"q5_k_s", LLM_GGML_Q5_K, 16},
	[LLM_QMIX_Q5_K_M] = {"q5_k_m", LLM_GGML_Q5_K, 17},
	[LLM_QMIX_Q6_K] = {"q6_k", LLM_GGML_Q6_K, 18},
};

/* llama_model_ftype_name's words for the llama_ftype values of quantized
 * files (llama-model-loader.cpp); the others (all F32, F16, BF16) name
 * no quantized type. */
/* a table */
/* clang-format off */
static const char *const ftype_labels[] = {
	[2] = "Q4_0", [3] = "Q4_1", [7] = "Q8_0", [8] = "Q5_0", [9] = "Q5_1",
	[10] = "Q2_K - Medium", [11] = "Q3_K - Small", [12] = "Q3_K - Medium", [13] = "Q3_K - Large",
	[14] = "Q4_K - Small", [15] = "Q4_K - Medium", [16] = "Q5_K - Small", [17] = "Q5_K - Medium",
	[18] = "Q6_K", [19] = "IQ2_XXS - 2.0625 bpw", [20] = "IQ2_XS - 2.3125 bpw", [21] = "Q2_K - Small",
	[22] = "IQ3_XS - 3.3 bpw", [23] = "IQ3_XXS - 3.0625 bpw", [24] = "IQ1_S - 1.5625 bpw",
	[25] = "IQ4_NL - 4.5 bpw", [26] = "IQ3_S - 3.4375 bpw", [27] = "IQ3_S mix - 3.66 bpw",
	[28] = "IQ2_S - 2.5 bpw", [29] = "IQ2_M - 2.7 bpw", [30] = "IQ4_XS - 4.25 bpw", [31] = "IQ1_M - 1.75 bpw",
};
/* clang-format on */

const char *
llm_qmix_label(int mix)
{
	return llm_ftype_label(mixes[mix].ftype);
}

const char *
llm_ftype_label(uint32_t ftype)
{
	ftype &= ~UINT32_C(1024); /* LLAMA_FTYPE_GUESSED */
	return ftype < sizeof(ftype_labels) / sizeof(ftype_labels[0]) ? ftype_labels[ftype] : NULL;
}

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

uint32_t
llm_qmix_ftype(int mix)
{
	return mixes[mix].ftype;
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

int
llm_qmix_quantizes(const char *name, int n_dims)
{
	static const char *const never[] = {"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup",
		"laurel", "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
		"indexer.q_proj.weight", "time_mix_"};
	size_t n = strlen(name);
	if (n_dims < 2 || n < 6 || strcmp(name + n - 6, "weight") != 0)
		return 0;
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (strstr(name, never[i]))
			return 0;
	return strcmp(name, "position_embd.weight") != 0 && strcmp(name, "token_types.weight") != 0;
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
