/* test_plan.c: the weight plan (lib/formats/plan.c) built from a config
 * and a tensor list held in memory, and checked against them. */
#include <inttypes.h>

#include "../../lib/base/util.h"
#include "../../lib/formats/hfconfig.h"
#include "../../lib/formats/plan.h"
#include "../../lib/formats/weights.h"
#include "t.h"

/* Qwen2 of 2 layers: hidden 64, 4 heads of 16, 2 KV heads, MLP 128,
 * vocabulary 256, q/k/v biases, an LM head of its own. */
static const char *config = "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", "
			    "\"hidden_size\": 64, \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
			    "\"num_key_value_heads\": 2, \"intermediate_size\": 128, \"vocab_size\": 256, "
			    "\"max_position_embeddings\": 512, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000, "
			    "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";

#define NT 29
static char names[NT][64];
static struct llm_source_tensor tensors[NT];
static struct llm_source_file file = {"mem.safetensors", 0, 0, 0};

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct llm_source_tensor *)a)->name, ((const struct llm_source_tensor *)b)->name);
}

static void
put(size_t *n, const char *name, int layer, int64_t rows, int64_t cols)
{
	struct llm_source_tensor *t = &tensors[*n];
	snprintf(names[*n], sizeof(names[*n]), name, layer);
	memset(t, 0, sizeof(*t));
	t->name = names[*n];
	t->dtype = LLM_DT_F32;
	t->type_name = "F32";
	t->quant = -1;
	t->blck = 1;
	t->bsize = 4;
	t->ndim = cols ? 2 : 1;
	t->shape[0] = rows;
	t->shape[1] = cols;
	t->nelem = (uint64_t)rows * (uint64_t)(cols ? cols : 1);
	(*n)++;
}

/* The checkpoint's tensors, sorted by name as llm_source_open leaves them. */
static void
source(struct llm_source *s)
{
	size_t n = 0;
	put(&n, "model.embed_tokens.weight", 0, 256, 64);
	put(&n, "model.norm.weight", 0, 64, 0);
	put(&n, "lm_head.weight", 0, 256, 64);
	for (int l = 0; l < 2; l++) {
		put(&n, "model.layers.%d.input_layernorm.weight", l, 64, 0);
		put(&n, "model.layers.%d.self_attn.q_proj.weight", l, 64, 64);
		put(&n, "model.layers.%d.self_attn.k_proj.weight", l, 32, 64);
		put(&n, "model.layers.%d.self_attn.v_proj.weight", l, 32, 64);
		put(&n, "model.layers.%d.self_attn.q_proj.bias", l, 64, 0);
		put(&n, "model.layers.%d.self_attn.k_proj.bias", l, 32, 0);
		put(&n, "model.layers.%d.self_attn.v_proj.bias", l, 32, 0);
		put(&n, "model.layers.%d.self_attn.o_proj.weight", l, 64, 64);
		put(&n, "model.layers.%d.post_attention_layernorm.weight", l, 64, 0);
		put(&n, "model.layers.%d.mlp.gate_proj.weight", l, 128, 64);
		put(&n, "model.layers.%d.mlp.up_proj.weight", l, 128, 64);
		put(&n, "model.layers.%d.mlp.down_proj.weight", l, 64, 128);
	}
	qsort(tensors, n, sizeof(*tensors), by_name);
	memset(s, 0, sizeof(*s));
	s->kind = LLM_SOURCE_SAFETENSORS;
	s->name = "mem";
	s->nfiles = 1;
	s->files = &file;
	s->ntensors = n;
	s->tensors = tensors;
}

static struct llm_hfconfig cfg;

static void
model(struct llm_model *m, int64_t tp)
{
	llm_model_init(m);
	llm_hfconfig_model_config(&cfg, &m->cfg);
	m->family = "qwen2";
	m->architecture = "Qwen2ForCausalLM";
	m->source_kind = "safetensors";
	m->source_dir = "/nonexistent";
	m->weight_dtype = LLM_DT_F32;
	m->kv_dtype = LLM_DT_F32;
	m->max_context = 32;
	m->prefill_chunk = 8;
	m->tp = tp;
}

static const struct llm_plan_tensor *
find(const struct llm_model *m, const char *name)
{
	for (size_t i = 0; i < m->ntensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	return NULL;
}

static const struct llm_plan_opts f32 = {LLM_DT_F32, 0, -1, 32};

T_TEST(plan_of_a_checkpoint)
{
	struct llm_source s;
	struct llm_model m;
	source(&s);
	model(&m, 1);
	T_CHECKF(llm_plan_build(&m, &cfg, &s, "mem", &f32) == 0, "%s", llm_errmsg());
	/* embed, rope.cos, rope.sin, 12 a layer, final_norm, lm_head */
	T_CHECK(m.ntensors == 3 + 2 * 12 + 2);
	T_CHECK(strcmp(m.tensors[0].name, "embed") == 0 &&
	    strcmp(m.tensors[0].source[0], "model.embed_tokens.weight") == 0);
	T_CHECK(strcmp(m.tensors[1].name, "rope.cos") == 0 && m.tensors[1].nsource == 0);
	T_CHECK(m.tensors[1].shape[0] == 32 && m.tensors[1].shape[1] == 8);
	T_CHECK(strcmp(m.tensors[m.ntensors - 1].name, "lm_head") == 0);
	const struct llm_plan_tensor *bk = find(&m, "layers.1.bk");
	T_CHECK(bk && bk->ndim == 1 && bk->shape[0] == 32 && strcmp(bk->transform, "copy") == 0);
	uint64_t end = 0;
	for (size_t i = 0; i < m.ntensors; i++) {
		const struct llm_plan_tensor *t = &m.tensors[i];
		T_CHECK(t->offset % LLM_WEIGHTS_ALIGN == 0 && t->offset >= end);
		T_CHECK(t->dtype == LLM_DT_F32 && !t->part && !t->cpart);
		end = t->offset + t->bytes;
	}
	T_CHECK(m.data_bytes == LLM_ALIGN_UP(end, LLM_WEIGHTS_ALIGN));

	/* through model.json and back, the plan checks against its source */
	json_t *root = llm_model_build(&m);
	struct llm_model back;
	struct llm_plan_sources ps;
	T_CHECKF(llm_model_parse(&back, root, "mem/model.json") == 0, "%s", llm_errmsg());
	T_CHECKF(llm_plan_check(&back, &s, &ps) == 0, "%s", llm_errmsg());
	T_CHECK(ps.src[0] && strcmp(ps.src[0]->name, "model.embed_tokens.weight") == 0);
	T_CHECK(ps.src[1] == NULL && ps.qtype[0] == -1 && ps.heads[0] == 0);
	llm_plan_sources_free(&ps);
	/* a source changed since: refused, naming both */
	tensors[0].shape[0] = 255;
	int rc = llm_plan_check(&back, &s, &ps);
	tensors[0].shape[0] = 256;
	T_CHECK(rc < 0 && strstr(llm_errmsg(), "does not match"));
	T_CHECK(ps.src == NULL);
	llm_model_free(&back);
	llm_plan_free(&m);
	T_CHECK(m.tensors == NULL && m.ntensors == 0);
}

/* Megatron's split over 2 ranks: q, k, v, gate and up by rows, o and down
 * by columns, everything else whole; each rank an image at rank 0's
 * offsets + stride. */
T_TEST(plan_tensor_parallel)
{
	struct llm_source s;
	struct llm_model m;
	source(&s);
	model(&m, 2);
	T_CHECKF(llm_plan_build(&m, &cfg, &s, "mem", &f32) == 0, "%s", llm_errmsg());
	T_CHECK(m.ntensors == 2 * 29);
	const struct llm_plan_tensor *wq = find(&m, "layers.0.wq@1"), *wo = find(&m, "layers.0.wo@1");
	const struct llm_plan_tensor *wk = find(&m, "layers.1.wk"), *bv = find(&m, "layers.1.bv@1");
	const struct llm_plan_tensor *norm = find(&m, "final_norm@1"), *wq0 = find(&m, "layers.0.wq");
	T_CHECK(wq && wq->part && wq->first_row == 32 && wq->shape[0] == 32 && wq->shape[1] == 64);
	T_CHECK(wq0 && wq0->part && wq0->first_row == 0);
	T_CHECK(wo && wo->cpart && wo->first_col == 32 && wo->shape[0] == 64 && wo->shape[1] == 32);
	T_CHECK(wk && wk->shape[0] == 16 && wk->first_row == 0);
	T_CHECK(bv && bv->shape[0] == 16 && bv->first_row == 16);
	T_CHECK(norm && !norm->part && !norm->cpart && norm->shape[0] == 64);
	uint64_t stride = m.data_bytes / 2;
	T_CHECK(stride % LLM_TP_ALIGN == 0 && wq->offset == wq0->offset + stride);
	llm_plan_free(&m);

	/* 4 ranks and 2 KV heads: two ranks share each KV head */
	model(&m, 4);
	T_CHECKF(llm_plan_build(&m, &cfg, &s, "mem", &f32) == 0, "%s", llm_errmsg());
	wk = find(&m, "layers.0.wk@1");
	const struct llm_plan_tensor *wk2 = find(&m, "layers.0.wk@2");
	wq = find(&m, "layers.0.wq@3");
	T_CHECK(wk && wk->shape[0] == 16 && wk->first_row == 0);
	T_CHECK(wk2 && wk2->shape[0] == 16 && wk2->first_row == 16);
	T_CHECK(wq && wq->shape[0] == 16 && wq->first_row == 48);
	llm_plan_free(&m);
}

T_TEST(plan_refusals)
{
	struct llm_source s;
	struct llm_model m;
	source(&s);
	/* a tensor the config needs is missing */
	model(&m, 1);
	s.ntensors--; /* the last by name: model.norm.weight */
	T_CHECK(strcmp(s.tensors[s.ntensors].name, "model.norm.weight") == 0);
	T_CHECK(llm_plan_build(&m, &cfg, &s, "mem", &f32) < 0);
	T_CHECKF(strcmp(llm_errmsg(), "mem: missing tensor 'model.norm.weight'") == 0, "%s", llm_errmsg());
	T_CHECK(m.tensors == NULL && m.ntensors == 0);
	s.ntensors++;
	/* a shape the config does not imply */
	for (size_t i = 0; i < s.ntensors; i++)
		if (strcmp(tensors[i].name, "model.layers.1.mlp.up_proj.weight") == 0)
			tensors[i].shape[1] = 63;
	T_CHECK(llm_plan_build(&m, &cfg, &s, "mem", &f32) < 0);
	T_CHECKF(strcmp(llm_errmsg(),
		     "mem: tensor 'model.layers.1.mlp.up_proj.weight' has shape [128, 63], "
		     "config.json implies [128, 64]") == 0,
	    "%s", llm_errmsg());
	T_CHECK(m.tensors == NULL);
	source(&s);
	/* a type no one reads */
	tensors[3].dtype = LLM_DT_NONE;
	tensors[3].type_name = "F8_E4M3";
	T_CHECK(llm_plan_build(&m, &cfg, &s, "mem", &f32) < 0);
	T_CHECKF(strstr(llm_errmsg(), "unsupported dtype 'F8_E4M3'"), "%s", llm_errmsg());
}

int
main(void)
{
	char *dir = llm_path_join(t_tmpdir(), "qwen2"), *p = llm_path_join(dir, "config.json");
	FILE *fp;
	if (llm_mkdirs(dir) < 0 || !(fp = fopen(p, "w")) || fputs(config, fp) < 0 || fclose(fp) != 0 ||
	    llm_hfconfig_load(&cfg, dir) < 0) {
		fprintf(stderr, "test_plan: %s\n", llm_errmsg());
		return 1;
	}
	free(p);
	free(dir);
	T_RUN(plan_of_a_checkpoint);
	T_RUN(plan_tensor_parallel);
	T_RUN(plan_refusals);
	return T_DONE();
}
