/* fuzz_plan.c: libFuzzer target for the weight plan (lib/formats/plan.c).
 * The first bytes choose a config (family, sizes, biases, tying, partial
 * rotary, a Hugging Face or a GGUF source, --tp or --pp, --dtype); it goes
 * through config.json and llm_hfconfig_load, so that only configs the
 * loader takes reach the plan.  The tensor list that config implies is
 * then damaged by the rest, two bytes an edit (drop a tensor, change a
 * dimension or its type, rename it, add one).  A refused plan leaves one
 * line naming the source and no tensors; a plan that builds has its
 * tensors aligned and apart inside data_bytes, passes llm_model_build and
 * llm_model_parse (the rank images repeat), and checks against the same
 * tensor list (llm_plan_check): what one side builds the other accepts.
 * Build and run: see tests/fuzz/README. */
#include <inttypes.h>

#include "../../lib/base/util.h"
#include "../../lib/formats/family.h"
#include "../../lib/formats/gguf.h"
#include "../../lib/formats/hfconfig.h"
#include "../../lib/formats/plan.h"
#include "../../lib/formats/qmix.h"
#include "../../lib/formats/quant.h"
#include "fuzzfile.h"

#define MAXT 256

static char names[MAXT][96];
static struct llm_source_tensor tensors[MAXT];
static struct llm_source_file file = {"mem.gguf", 0, 0, 0};

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct llm_source_tensor *)a)->name, ((const struct llm_source_tensor *)b)->name);
}

static void
set_type(struct llm_source_tensor *t, uint8_t b)
{
	static const enum llm_dtype floats[] = {LLM_DT_F32, LLM_DT_F16, LLM_DT_BF16, LLM_DT_NONE};
	static const uint32_t blocks[] = {LLM_GGML_Q8_0, LLM_GGML_Q4_0, LLM_GGML_Q4_K, LLM_GGML_Q6_K};
	uint32_t blck, size;
	t->quant = -1;
	t->dtype = floats[b % 4];
	t->type_name = t->dtype == LLM_DT_NONE ? "F8_E4M3" : llm_dtype_name(t->dtype);
	t->blck = 1;
	if (b & 4 && llm_ggml_type_block(blocks[(b >> 3) % 4], &blck, &size) == 0) {
		t->dtype = LLM_DT_NONE;
		t->quant = (int32_t)blocks[(b >> 3) % 4];
		t->type_name = llm_ggml_type_name((uint32_t)t->quant);
		t->blck = blck;
	}
}

static size_t
put(size_t n, const char *name, int64_t rows, int64_t cols)
{
	for (size_t i = 0; i < n; i++) /* a fused tensor's parts name it once */
		if (strcmp(names[i], name) == 0)
			return n;
	if (n == MAXT)
		return n;
	snprintf(names[n], sizeof(names[n]), "%s", name);
	tensors[n] = (struct llm_source_tensor){.name = names[n], .ndim = cols ? 2 : 1, .shape = {rows, cols}};
	set_type(&tensors[n], 0);
	return n + 1;
}

/* The tensors config c implies, with names as a source of that kind has. */
static size_t
source_of(const struct llm_hfconfig *c, int gguf)
{
	const struct llm_family_spec *fs = llm_family_spec(c->family);
	const char *const *nm = gguf ? fs->gguf : fs->hf;
	struct llm_model_config mc;
	size_t n = 0;
	char name[96];
	int64_t shape[2], first, rows;

	llm_hfconfig_model_config(c, &mc);
	for (int l = 0; l < c->n_layers; l++)
		for (int r = 0; r < LLM_ROLE_COUNT; r++) {
			int layer = r >= LLM_ROLE_ATTN_NORM && r <= LLM_ROLE_LAYER_LAST;
			if (!llm_role_present(r, &mc) || (!layer && l))
				continue;
			llm_role_shape(r, &mc, shape);
			if (llm_role_part(nm, r, &mc, &first, &rows))
				shape[0] = rows;
			snprintf(name, sizeof(name), "%s", gguf ? "" : c->tensor_prefix);
			snprintf(name + strlen(name), sizeof(name) - strlen(name), nm[r], l);
			n = put(n, name, shape[0], shape[1]);
		}
	return n;
}

/* Two bytes an edit of the tensor list. */
static size_t
damage(size_t n, const uint8_t *d, size_t size)
{
	for (size_t i = 0; i + 1 < size && n; i += 2) {
		struct llm_source_tensor *t = &tensors[d[i + 1] % n];
		switch (d[i] % 6) {
		case 0: /* drop it */
			memmove(t, t + 1, (size_t)(&tensors[n - 1] - t) * sizeof(*t));
			n--;
			break;
		case 1:
			t->shape[d[i] / 6 % 2] += (int64_t)(d[i] / 12 % 3) - 1;
			break;
		case 2:
			set_type(t, d[i] / 6);
			break;
		case 3:
			t->ndim = 1 + d[i] / 6 % 2;
			break;
		case 4: /* rename it */
			if (n < MAXT) {
				size_t k = (size_t)(t - tensors);
				snprintf(names[k], sizeof(names[k]), "blk.%d.extra.weight", d[i] / 6);
				t->name = names[k];
			}
			break;
		default: /* a tensor more: another's twin */
			if (n < MAXT) {
				tensors[n] = *t;
				n++;
			}
		}
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 8)
		return 0;
	const struct llm_family_spec *fs = llm_family_spec((enum llm_family)(1 + data[0] % (LLM_FAMILY_COUNT - 1)));
	int64_t kv = 1 + data[1] % 4, heads = kv * (1 + data[1] / 4 % 3), hd = 2 * (1 + data[2] % 8);
	int64_t layers = 1 + data[2] / 8 % 4, ffn = 8 * (1 + data[3] % 4), vocab = 32 * (1 + data[3] / 4 % 4);
	int gguf = data[4] & 1, tied = data[4] >> 1 & 1, bias = data[4] >> 2 & 1;
	int64_t tp = data[4] >> 3 & 1 ? 1 + data[5] % 4 : 1, pp = tp == 1 && data[4] >> 4 & 1 ? 2 : 1;
	char json[1024];

	snprintf(json, sizeof(json),
	    "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": %" PRId64
	    ", \"num_hidden_layers\": %" PRId64 ", \"num_attention_heads\": %" PRId64
	    ", \"num_key_value_heads\": %" PRId64 ", \"head_dim\": %" PRId64 ", \"intermediate_size\": %" PRId64
	    ", \"vocab_size\": %" PRId64 ", \"tie_word_embeddings\": %s, \"attention_bias\": %s%s}",
	    fs->architectures[0], llm_family_model_type(fs), heads * hd, layers, heads, kv, hd, ffn, vocab,
	    tied ? "true" : "false", bias ? "true" : "false",
	    data[4] >> 5 & 1 ? ", \"partial_rotary_factor\": 0.5" : "");
	fuzz_file("config.json", (const uint8_t *)json, strlen(json));
	struct llm_hfconfig c;
	if (llm_hfconfig_load(&c, fuzz_dir) < 0)
		return 0;

	size_t n = damage(source_of(&c, gguf), data + 8, size - 8);
	qsort(tensors, n, sizeof(*tensors), by_name);
	struct llm_source s = {.kind = gguf ? LLM_SOURCE_GGUF : LLM_SOURCE_SAFETENSORS,
		.name = "mem",
		.nfiles = 1,
		.files = &file,
		.ntensors = n,
		.tensors = tensors};
	struct llm_model m;
	llm_model_init(&m);
	llm_hfconfig_model_config(&c, &m.cfg);
	m.family = c.family_name;
	m.architecture = c.architecture;
	m.source_kind = gguf ? "gguf" : "safetensors";
	m.source_dir = "/nonexistent";
	m.weight_dtype = m.kv_dtype = LLM_DT_F32;
	m.max_context = 16;
	m.prefill_chunk = 4;
	m.tp = tp;
	m.pp = pp;
	if (llm_model_split_check(&m.cfg, tp, pp, "mem") < 0)
		return 0;
	int mix = data[6] % 4 == 1 ? llm_qmix_parse("q8_0") : data[6] % 4 == 2 ? llm_qmix_parse("q4_k_m") : -1;
	m.act_q8 = mix >= 0 || data[6] % 4 == 3;
	struct llm_plan_opts o = {data[6] & 4 ? LLM_DT_BF16 : LLM_DT_F32, data[6] % 4 == 3, mix, 16};
	m.weight_dtype = o.wdt;

	if (llm_plan_build(&m, &c, &s, "mem", &o) < 0) {
		const char *msg = llm_errmsg();
		CHECK(strncmp(msg, "mem", 3) == 0 && !strchr(msg, '\n'));
		CHECK(m.tensors == NULL && m.ntensors == 0);
		return 0;
	}
	uint64_t stride = m.data_bytes / (uint64_t)llm_model_ranks(&m);
	for (size_t i = 0; i < m.ntensors; i++) {
		const struct llm_plan_tensor *t = &m.tensors[i];
		CHECK(t->offset % LLM_WEIGHTS_ALIGN == 0 && t->offset + t->bytes <= m.data_bytes);
		CHECK(i == 0 || t->offset >= m.tensors[i - 1].offset + m.tensors[i - 1].bytes ||
		    (t->offset % stride == 0 && strchr(t->name, '@')));
	}
	json_t *root = llm_model_build(&m);
	struct llm_model back;
	int rc = llm_model_parse(&back, root, "mem/model.json");
	CHECK(rc == 0);
	struct llm_plan_sources ps;
	rc = llm_plan_check(&back, &s, &ps);
	CHECK(rc == 0);
	for (size_t i = 0; i < back.ntensors; i++)
		CHECK((ps.src[i] == NULL) == (back.tensors[i].nsource == 0));
	llm_plan_sources_free(&ps);
	llm_model_free(&back);
	llm_plan_free(&m);
	return 0;
}
