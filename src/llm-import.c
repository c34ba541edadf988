/* llm-import: the first step of the pipeline.  It reads a Hugging Face
 * checkpoint directory (config.json, generation_config.json, the
 * safetensors headers and the tokenizer files; no weight data) or a GGUF
 * file (its metadata and tensor infos) and writes into OUTDIR the model
 * manifest model.json (hyperparameters, dtypes, limits, tokenizer facts,
 * the weight plan with its fingerprint, the phases and their ABI), the
 * MLIR of the phases (prefill.mlir, prefill_kv.mlir, decode.mlir, embed.mlir)
 * and the tokenizer files: copies of a checkpoint's, or, for a GGUF file,
 * the tokenizer.json and tokenizer_config.json Hugging Face would have for
 * its tokenizer.ggml.* metadata, so that the later steps see the same kind
 * of build whatever the source.  llm-pack-weights reads model.json next;
 * llm-lower (or llm-split) the MLIR.  Formats: share/doc/llm/formats.txt
 * and ir.txt. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../lib/runtime/chat.h"
#include "../lib/compiler/emit.h"
#include "../lib/formats/family.h"
#include "../lib/formats/gguf_config.h"
#include "../lib/runtime/gguf_tokenizer.h"
#include "../lib/formats/hfconfig.h"
#include "../lib/base/json.h"
#include "../lib/formats/model.h"
#include "../lib/formats/qmix.h"
#include "../lib/formats/quant.h"
#include "../lib/formats/source.h"
#include "../lib/base/spawn.h"
#include "../lib/formats/target.h"
#include "../lib/runtime/tokenizer.h"
#include "../lib/base/util.h"

#define DEFAULT_PREFILL_CHUNK 128

static const char *tokenizer_names[] = {
	"tokenizer.json",
	"tokenizer_config.json",
	"chat_template.jinja",
	"special_tokens_map.json",
};

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: llm-import [-v] [-o outdir] [--max-context n] [--prefill-chunk n]\n"
	    "                  [--dtype auto|f32|f16|bf16|q8_0|q4_0|q4_k_m|...] [--kv-dtype f32|f16|bf16]\n"
	    "                  [--activations auto|f32|q8|bf16] [--cpu name] [--features list]\n"
	    "                  [--target triple] [--tp n | --pp n] model\n");
}

static const char help_text[] =
    "  -o outdir            write model.json, the phases and the tokenizer files here (default .)\n"
    "  --max-context n      the largest context llm-run -c can ask for: RoPE rows (default:\n"
    "                       max_position_embeddings, at most 32768)\n"
    "  --prefill-chunk n    most tokens one prefill call takes (default 128)\n"
    "  --dtype t            weight storage: auto (default: the checkpoint's; a quantized GGUF stays\n"
    "                       quantized), f32, f16, bf16, or a llama-quantize mix to quantize a float\n"
    "                       checkpoint: q8_0, q4_0, q4_1, q5_0, q5_1, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k\n"
    "  --kv-dtype t         KV cache element type: f32 (default), f16, bf16\n"
    "  --activations a      how x meets the weights in the linear products: auto (default): q8\n"
    "                       when the weights are block-quantized (a quantized GGUF, --dtype q*),\n"
    "                       bf16 for bf16 weights where the target has AVX512-BF16 (prefill 1.6-1.8x),\n"
    "                       else f32; q8: x quantized to int8 blocks of 32, as llama.cpp does, on\n"
    "                       int8 dot products (fast; stories260K's KL to f32: Q8_0 0.00057, not\n"
    "                       0.00034 exact; 4-bit files within 2% of exact: BENCHMARKS.md);\n"
    "                       f32: the products with the exact weights (as Hugging Face computes);\n"
    "                       bf16: bf16 weights meet x rounded to bf16, summed in f32 (vdpbf16ps)\n"
    "  --cpu name, --features list, --target triple\n"
    "                       the target auto decides for, as llm-lower takes them (default: this host)\n"
    "  --tp n               split every layer over n MPI ranks (tensor parallel: mpirun -np n\n"
    "                       llm-run); heads and intermediate_size must divide by n (default 1)\n"
    "  --pp n               split the layers over n MPI ranks (pipeline parallel: each rank\n"
    "                       holds a range of them); the layers must divide by n (default 1)\n"
    "  -v                   print what was written\n"
    "  -h                   print the usage\n"
    "  --help, --version    print this help, or the version\n";

static enum llm_dtype
parse_dtype(const char *s, int allow_auto, const char *opt)
{
	enum llm_dtype t;
	if (allow_auto && strcmp(s, "auto") == 0)
		return LLM_DT_NONE;
	t = llm_dtype_from_name(s);
	if (!llm_dtype_is_float_weight(t)) {
		if (allow_auto)
			llm_warn("%s: unsupported dtype '%s' (use auto, f32, f16, bf16 or a quantized mix: %s)", opt, s,
			    llm_qmix_names());
		else
			llm_warn("%s: unsupported dtype '%s' (use f32, f16 or bf16)", opt, s);
		usage(stderr);
		exit(LLM_EXIT_USAGE);
	}
	return t;
}

static int64_t
parse_count(const char *s, const char *opt)
{
	int64_t v;
	if (llm_parse_i64(s, 1, INT64_C(1) << 24, &v) < 0) {
		llm_warn("%s: %s", opt, llm_errmsg());
		usage(stderr);
		exit(LLM_EXIT_USAGE);
	}
	return v;
}

/* The plan under construction: the tensors of the model being described. */
struct plan {
	struct llm_model *m; /* tensors, ntensors: the plan so far */
	size_t cap;
	uint64_t off;
	const char *dir;  /* the checkpoint, for messages */
	const char *meta; /* where the sizes come from */
	const struct llm_source *src;
	unsigned char *used; /* per src tensor: in the plan */
	enum llm_dtype wdt;
	int keep_quant; /* --dtype auto: the embedding and
	                                     * the matrices of linear layers
	                                     * stay block-quantized */
	int mix;        /* --dtype q4_k_m ...: the mix
	                                     * (qmix.h) float matrices are
	                                     * quantized to, else -1 */
	const struct llm_hfconfig *cfg;
};

/* Which rows of its source a plan tensor takes: the transform that moves
 * them within each of heads heads ("copy": none), and for a part of a
 * fused tensor of total rows, the first. */
struct rowsel {
	const char *transform;
	int64_t heads;
	int part;
	int64_t first, total;
	int64_t first_col; /* tensor parallel: a rank's first column (shard 2) */
	int shard;         /* tensor parallel: 0, or 1 + the dimension a
	                     * rank takes its part along */
	int64_t shard_parts;
};

static const struct rowsel whole = {"copy", 0, 0, 0, 0, 0, 0, 0};

static void
add_tensor(struct plan *p, const char *name, const char *source, const char *quant, const struct rowsel *rs,
    const struct llm_qlayout *ql, enum llm_dtype dt, int ndim, const int64_t *shape)
{
	struct llm_model *m = p->m;
	uint64_t bytes = llm_dtype_size(dt);
	char lname[LLM_QLAYOUT_NAME];

	for (int i = 0; i < ndim; i++)
		bytes *= (uint64_t)shape[i];
	if (ql)
		bytes = llm_qlayout_bytes(ql, shape[0], shape[1]);
	if (m->ntensors == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 64;
		m->tensors = llm_xrealloc(m->tensors, p->cap * sizeof(*m->tensors));
	}
	struct llm_plan_tensor *t = &m->tensors[m->ntensors++];
	memset(t, 0, sizeof(*t));
	p->off = LLM_ALIGN_UP(p->off, LLM_WEIGHTS_ALIGN);
	t->name = llm_xstrdup(name);
	if (source)
		t->source[t->nsource++] = llm_xstrdup(source);
	t->quant = quant;
	t->transform = rs->transform;
	t->heads = rs->heads;
	/* rank 0's part of a tensor-parallel split: the first */
	t->part = rs->part || rs->shard == 1;
	t->first_row = rs->first;
	t->cpart = rs->shard == 2;
	t->first_col = rs->first_col;
	if (ql) {
		llm_qlayout_name(ql, lname);
		t->layout = llm_xstrdup(lname);
		t->ql = *ql;
	}
	t->dtype = dt;
	t->ndim = ndim;
	memcpy(t->shape, shape, (size_t)ndim * sizeof(*shape));
	t->offset = p->off;
	t->bytes = bytes;
	p->off += bytes;
}

/* A rank's columns of a matrix in block type ty (its source's, or the one
 * --dtype quantizes it to) are whole blocks: every row's blocks split
 * between the ranks. */
static void
split_blocks(const struct plan *p, const char *name, uint32_t ty, const struct rowsel *rs, const int64_t *shape)
{
	uint32_t blck, size;
	if (rs->shard == 2 && llm_ggml_type_block(ty, &blck, &size) == 0 && shape[1] % blck)
		llm_fatal("%s: --tp %" PRId64 ": a rank's %" PRId64 " columns of '%s' are not whole %s blocks of %u",
		    p->dir, p->m->tp, shape[1], name, llm_ggml_type_name(ty), blck);
}

/* A tensor taken from the checkpoint (copied, or unpermuted when heads is
 * not 0): check it exists with the shape the config implies.  A matrix
 * (the embedding or a linear layer's) in a block type keeps it, in the
 * tiled layout, when the plan says so and the shape is whole tiles. */
/* A float matrix of a --dtype mix: the block type the mix gives it (the
 * plan's "quant", quantized by llm-pack-weights), in the tiled layout
 * when the shape is whole tiles, else as the f32 values of its blocks; or
 * f16 where llama-quantize falls back to F16. */
static void
add_quantized(struct plan *p, const char *name, const struct llm_source_tensor *t, enum llm_role role, int layer,
    const struct rowsel *rs, const int64_t *shape)
{
	const struct llm_hfconfig *c = p->cfg;
	struct llm_qmix_tensor qt = {role, layer, shape[1], c->family, (int)c->n_layers, c->n_heads, c->n_kv_heads,
		c->tie_word_embeddings, rs->part && role >= LLM_ROLE_WQ && role <= LLM_ROLE_WV};
	uint32_t ty = llm_qmix_type(p->mix, &qt);
	struct llm_qlayout ql;

	if (t->quant >= 0)
		llm_fatal("%s: tensor '%s' is %s already: --dtype %s quantizes float weights (F32, F16, BF16); "
			  "--dtype auto keeps the file's blocks",
		    p->dir, t->name, t->type_name, llm_qmix_name(p->mix));
	if (ty == LLM_GGML_F16) {
		add_tensor(p, name, t->name, NULL, rs, NULL, LLM_DT_F16, 2, shape);
		return;
	}
	split_blocks(p, name, ty, rs, shape);
	int keep = llm_qlayout_of(ty, p->m->act_q8, &ql) == 0 && llm_qlayout_fits(&ql, shape[0], shape[1]);
	add_tensor(p, name, t->name, llm_ggml_type_name(ty), rs, keep ? &ql : NULL, keep ? LLM_DT_I8 : LLM_DT_F32, 2,
	    shape);
}

static void
add_source(struct plan *p, const char *name, const char *src, enum llm_role role, int layer, const struct rowsel *rs,
    int matrix, enum llm_dtype dt, int ndim, const int64_t *shape)
{
	struct llm_qlayout ql;
	int err;
	const struct llm_source_tensor *t = llm_source_find(p->src, src, &err);
	char want[128] = "", got[128] = "";

	if (err)
		llm_fatal("%s", llm_errmsg());
	if (!t)
		llm_fatal("%s: missing tensor '%s'", p->dir, src);
	p->used[t - p->src->tensors] = 1;
	if (p->src->kind == LLM_SOURCE_GGUF && !llm_source_tensor_readable(t))
		llm_fatal("%s: tensor '%s' has type %s, which %s does not support (it reads F32, F16, BF16, "
			  "%s)",
		    p->dir, src, t->type_name, llm_prog, llm_quant_supported_names());
	if (!llm_source_tensor_readable(t))
		llm_fatal("%s: tensor '%s': unsupported dtype '%s'", p->dir, src, t->type_name);
	int same = t->ndim == ndim;
	for (int i = 0; i < ndim; i++) {
		/* a part of a fused tensor: the whole has the parts' rows; a
		 * rank's shard: one of shard_parts */
		int64_t want_i = i == 0 && rs->part ? rs->total :
		    rs->shard == i + 1              ? shape[i] * rs->shard_parts :
						      shape[i];
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%" PRId64, i ? ", " : "", want_i);
		same = same && t->shape[i] == want_i;
	}
	for (int i = 0; i < t->ndim; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%" PRId64, i ? ", " : "", t->shape[i]);
	if (!same)
		llm_fatal("%s: tensor '%s' has shape [%s], %s implies [%s]", p->dir, src, got, p->meta, want);
	if (matrix && p->mix >= 0) {
		add_quantized(p, name, t, role, layer, rs, shape);
		return;
	}
	/* auto: a float matrix keeps its own type (an F16 matrix of a
	 * quantized file, where llama-quantize fell back to F16) */
	if (matrix && p->keep_quant && t->quant < 0 && llm_dtype_is_float_weight(t->dtype))
		dt = t->dtype;
	if (t->quant >= 0)
		split_blocks(p, name, (uint32_t)t->quant, rs, shape);
	int keep = matrix && p->keep_quant && t->quant >= 0 &&
	    llm_qlayout_of((uint32_t)t->quant, p->m->act_q8, &ql) == 0 && llm_qlayout_fits(&ql, shape[0], shape[1]);
	add_tensor(p, name, src, t->quant >= 0 ? t->type_name : NULL, rs, keep ? &ql : NULL, keep ? LLM_DT_I8 : dt,
	    ndim, shape);
}

/* The rows role r takes from its source: GGUF llama q and k unpermuted;
 * under partial rotary embedding, q and k (their biases and norms too)
 * with each head's rotated dims and passed dims regrouped into halves
 * (rotary_halves: pack.c); a part of a fused tensor at its rows. */
static struct rowsel
rows_of(const struct llm_family_spec *fs, const char *const *names, int gguf, enum llm_role r,
    const struct llm_model_config *c, const char *dir)
{
	struct rowsel rs = whole;
	int64_t heads = gguf ? llm_role_permuted_heads(fs, r, c) : 0;

	if (heads) {
		rs.transform = "unpermute_qk";
		rs.heads = heads;
	}
	if (c->rotary_dim != c->head_dim) {
		int64_t h = r == LLM_ROLE_WQ || r == LLM_ROLE_BQ ? c->n_heads :
		    r == LLM_ROLE_WK || r == LLM_ROLE_BK         ? c->n_kv_heads :
		    r == LLM_ROLE_QNORM || r == LLM_ROLE_KNORM   ? 1 :
								   0;
		if (h && heads)
			llm_fatal("%s: partial rotary embedding of q and k stored permuted (GGUF %s) is not supported",
			    dir, fs->name);
		if (h) {
			rs.transform = "rotary_halves";
			rs.heads = h;
		}
	}
	/* a checkpoint's norms that scale by 1 + w (gemma3; GGUF files hold
	 * 1 + w) */
	int norm = r == LLM_ROLE_ATTN_NORM || r == LLM_ROLE_ATTN_POST_NORM || r == LLM_ROLE_FFN_NORM ||
	    r == LLM_ROLE_FFN_POST_NORM || r == LLM_ROLE_QNORM || r == LLM_ROLE_KNORM || r == LLM_ROLE_FINAL_NORM;
	if (norm && fs->norm_plus_one && !gguf) {
		if (strcmp(rs.transform, "copy") != 0)
			llm_fatal("%s: %s norms that scale by 1 + w under %s are not supported", dir, fs->name,
			    rs.transform);
		rs.transform = "add_one";
	}
	rs.part = llm_role_part(names, r, c, &rs.first, &rs.total);
	return rs;
}

/* Tensor parallelism (m->tp ranks, Megatron's split): q, k, v (their
 * biases too), gate and up by output rows, whole heads to a rank; o and
 * down by input columns, so that each rank's product is a partial sum
 * (the all-reduce after them: emit.c).  KV heads fewer than the ranks are
 * shared: tp / n_kv_heads ranks take each.  Everything else (norms, the
 * embedding, the head, the RoPE tables) whole on every rank.  shape
 * becomes a rank's, and a transform within heads counts a rank's heads. */
static void
shard_of(const struct llm_model *m, enum llm_role r, int64_t rank, struct rowsel *rs, int64_t *shape)
{
	const struct llm_model_config *c = &m->cfg;
	int64_t parts = m->tp;
	int dim;
	if (m->tp < 2)
		return;
	switch (r) {
	case LLM_ROLE_WK:
	case LLM_ROLE_BK:
	case LLM_ROLE_WV:
	case LLM_ROLE_BV:
		parts = c->n_kv_heads < m->tp ? c->n_kv_heads : m->tp;
		/* fall through */
	case LLM_ROLE_WQ:
	case LLM_ROLE_BQ:
	case LLM_ROLE_WGATE:
	case LLM_ROLE_WUP:
		dim = 0;
		break;
	case LLM_ROLE_WO:
	case LLM_ROLE_WDOWN:
		dim = 1;
		break;
	default:
		return;
	}
	if (parts < 2)
		return;
	rs->shard = dim + 1;
	rs->shard_parts = parts;
	shape[dim] /= parts;
	rs->heads /= parts;
	/* this rank's part: the rows after first_row, or the columns */
	int64_t part = rank * parts / m->tp;
	if (dim == 0)
		rs->first += part * shape[0];
	else
		rs->first_col = part * shape[1];
}

/* A checkpoint's name of a role: the prefix of a multimodal checkpoint's
 * text model ("" else), then the family's name of it. */
static const char *
src_name(const char *prefix, const char *f, int layer, char *buf, size_t n)
{
	size_t l = (size_t)snprintf(buf, n, "%s", prefix);
	if (l < n)
		snprintf(buf + l, n - l, f, layer);
	return buf;
}

static const char *
role_name(const char *f, int layer, char *buf, size_t n)
{
	snprintf(buf, n, f, layer);
	return buf;
}

/* The weight plan.  Source names are the checkpoint's (Hugging Face or
 * GGUF); in a GGUF file of a llama model, q and k (and their biases) are
 * stored permuted and get the transform unpermute_qk.  Every tensor of a
 * GGUF file must be in the plan: one left over is a feature (a bias, RoPE
 * frequency factors, ...) that the generated code would silently ignore. */
static void
build_plan(struct llm_model *m, const struct llm_hfconfig *c, const struct llm_source *src, const char *dir,
    enum llm_dtype wdt, int keep_quant, int mix, int64_t max_ctx)
{
	const struct llm_family_spec *fs = llm_family_spec(c->family);
	int gguf = src->kind == LLM_SOURCE_GGUF;
	const char *const *names = gguf ? fs->gguf : fs->hf;
	struct plan p = {m, 0, 0, dir, gguf ? "the metadata" : "config.json", src, llm_xcalloc(src->ntensors + 1, 1),
		wdt, keep_quant, mix, c};
	const struct llm_model_config *mc = &m->cfg;
	int64_t shape[2];
	char rn[128], hn[128];

	/* Matrices and the embedding take the weight dtype; norms and biases
	 * stay f32 (small, and exact).  A model split over ranks (model.h
	 * "tp") is an image a rank: rank r's tensors named "<name>@<r>" at
	 * rank 0's offsets + r x stride; under --tp each takes its part of a
	 * split tensor (shard_of), under --pp its range of the layers, local
	 * layer l being layer r x layers + l of the checkpoint. */
	int64_t ranks = llm_model_ranks(m), layers = mc->n_layers / m->pp;
	uint64_t stride = 0;
	char sfx[24] = "";
#define ADD(role, layer, first) do { \
	int nd_ = llm_role_shape(role, mc, shape); \
	struct rowsel rs_ = rows_of(fs, names, gguf, role, mc, dir); \
	shard_of(m, role, r, &rs_, shape); \
	role_name(llm_role_runtime(role), layer, rn, sizeof(rn)); \
	snprintf(rn + strlen(rn), sizeof(rn) - strlen(rn), "%s", sfx); \
	add_source(&p, rn, src_name(c->tensor_prefix, names[role], (first) + (layer), hn, sizeof(hn)), role, \
	    (first) + (layer), &rs_, nd_ == 2, nd_ == 2 ? wdt : LLM_DT_F32, nd_, shape); \
} while (0)
#define COMPUTED(name, tf) do { \
	snprintf(rn, sizeof(rn), "%s%s", name, sfx); \
	add_tensor(&p, rn, NULL, NULL, &(struct rowsel){.transform = tf}, NULL, LLM_DT_F32, 2, rope_shape); \
} while (0)

	int64_t rope_shape[2] = {max_ctx, mc->head_dim / 2};
	for (int64_t r = 0; r < ranks; r++) {
		if (r) {
			snprintf(sfx, sizeof(sfx), "@%" PRId64, r);
			p.off = (uint64_t)r * stride; /* add_tensor keeps it: aligned */
		}
		int64_t first = m->pp > 1 ? r * layers : 0;
		ADD(LLM_ROLE_EMBED, 0, 0);
		COMPUTED(LLM_TENSOR_ROPE_COS, "rope_cos");
		COMPUTED(LLM_TENSOR_ROPE_SIN, "rope_sin");
		if (mc->rope_local_theta) {
			COMPUTED(LLM_TENSOR_ROPE_LOCAL_COS, "rope_local_cos");
			COMPUTED(LLM_TENSOR_ROPE_LOCAL_SIN, "rope_local_sin");
		}
		for (int l = 0; l < layers; l++)
			for (int role = LLM_ROLE_ATTN_NORM; role <= LLM_ROLE_LAYER_LAST; role++)
				if (llm_role_present(role, mc))
					ADD(role, l, first);
		ADD(LLM_ROLE_FINAL_NORM, 0, 0);
		if (llm_role_present(LLM_ROLE_LM_HEAD, mc))
			ADD(LLM_ROLE_LM_HEAD, 0, 0);
		if (!r)
			stride = LLM_ALIGN_UP(p.off, LLM_TP_ALIGN);
	}
#undef ADD
#undef COMPUTED
	for (size_t i = 0; gguf && i < src->ntensors; i++)
		/* the RoPE factors are in the config (gguf_config.c) */
		if (!p.used[i] && strcmp(src->tensors[i].name, LLM_GGUF_ROPE_FREQS) != 0 &&
		    strcmp(src->tensors[i].name, LLM_GGUF_ROPE_LONG) != 0 &&
		    strcmp(src->tensors[i].name, LLM_GGUF_ROPE_SHORT) != 0)
			llm_fatal("%s: tensor '%s' is not part of a %s model as %s supports it", dir,
			    src->tensors[i].name, fs->name, llm_prog);
	free(p.used);
	m->data_bytes = ranks > 1 ? (uint64_t)ranks * stride : LLM_ALIGN_UP(p.off, LLM_WEIGHTS_ALIGN);
}

/* A tokenizer file to write into OUTDIR. */
struct tokfile {
	const char *name;
	char *data;
	size_t len;
};

/* model.json "tokenizer" from the files that will be written, the bos and
 * eos ids, add_bos and the chat template's text (or NULL; label names it):
 * a template the engine cannot render is refused here, with its line and
 * column, not at the first chat. */
static void
tokenizer_facts(struct llm_model *m, const struct tokfile *tf, int ntf, int64_t bos_id, const int64_t *eos_ids,
    int n_eos, int add_bos, const char *tmpl, const char *label)
{
	if (tmpl) {
		struct llm_chat_template t = LLM_CHAT_TEMPLATE_INIT;
		if (llm_chat_template_text(&t, tmpl, strlen(tmpl), label) < 0)
			llm_fatal("%s", llm_errmsg());
		llm_chat_template_free(&t);
	}

	m->ntokenizer_files = (size_t)ntf;
	m->tokenizer_files = llm_xcalloc((size_t)ntf + 1, sizeof(*m->tokenizer_files));
	for (int i = 0; i < ntf; i++)
		m->tokenizer_files[i] = tf[i].name;
	m->bos_id = bos_id;
	m->n_eos = n_eos;
	memcpy(m->eos_ids, eos_ids, (size_t)n_eos * sizeof(*eos_ids));
	m->add_bos = add_bos;
	m->chat_template = llm_chat_recognise(tmpl);
}

/* A checkpoint's tokenizer: the files present in dir, read whole, and
 * model.json "tokenizer". */
static void
hf_tokenizer(struct llm_model *m, const char *dir, const struct llm_hfconfig *c, struct tokfile *tf, int *ntf)
{
	json_t *tc = NULL;
	const char *tmpl = NULL;
	char *label = NULL;
	int add_bos = 0;

	*ntf = 0;
	for (size_t i = 0; i < LLM_NELEM(tokenizer_names); i++) {
		char *p = llm_path_join(dir, tokenizer_names[i]);
		if (llm_file_exists(p)) {
			struct tokfile *f = &tf[(*ntf)++];
			f->name = tokenizer_names[i];
			if (llm_read_file(p, &f->data, &f->len) < 0)
				llm_fatal("%s", llm_errmsg());
			if (strcmp(f->name, "tokenizer.json") == 0) {
				/* loaded as llm-run will load it: a bad file is refused
				 * here, not after the whole compile */
				struct llm_tokenizer *tk = llm_tokenizer_load_json(f->data, f->len, p);
				if (!tk)
					llm_fatal("%s", llm_errmsg());
				if (llm_tokenizer_warning(tk))
					llm_warn("%s", llm_tokenizer_warning(tk));
				/* an id past the embedding's rows would be read out of bounds (or refused at run
				 * time, token by token): the tokenizer is not this model's */
				int64_t nv = llm_tokenizer_n_vocab(tk);
				if (nv > c->vocab_size) {
					size_t tl = 0;
					const char *tt = llm_tokenizer_token_text(tk, nv - 1, &tl);
					llm_fatal("%s: token id %lld ('%.*s') is beyond the model's vocabulary of %lld "
						  "(config.json vocab_size): the tokenizer is not this model's",
					    p, (long long)(nv - 1), tt ? (int)(tl < 40 ? tl : 40) : 1, tt ? tt : "?",
					    (long long)c->vocab_size);
				}
				llm_tokenizer_free(tk);
			}
			if (strcmp(f->name, "tokenizer_config.json") == 0) {
				if (!(tc = llm_json_loadb(f->data, f->len, p)))
					llm_fatal("%s", llm_errmsg());
				if (llm_json_bool_opt(tc, "add_bos_token", p, &add_bos) < 0 ||
				    llm_chat_config_check(tc, p) < 0)
					llm_fatal("%s", llm_errmsg());
				if ((tmpl = llm_chat_config_template(tc)))
					label = llm_xasprintf("%s: chat_template", p);
			}
		}
		free(p);
	}
	for (int i = 0; i < *ntf; i++)
		if (strcmp(tf[i].name, "chat_template.jinja") == 0) {
			tmpl = tf[i].data;
			free(label);
			label = llm_path_join(dir, "chat_template.jinja");
		}
	tokenizer_facts(m, tf, *ntf, c->bos_id, c->eos_ids, c->n_eos, add_bos, tmpl, label);
	free(label);
	json_decref(tc);
}

/* A GGUF file's tokenizer: tokenizer.json and tokenizer_config.json made
 * from its metadata (none when it has no tokenizer), and model.json
 * "tokenizer". */
static void
gguf_tokenizer(struct llm_model *m, const struct llm_gguf *g, const struct llm_hfconfig *c, struct tokfile *tf,
    int *ntf)
{
	struct llm_gguf_tokenizer gt;
	json_t *j;
	int rc;

	*ntf = 0;
	if ((rc = llm_gguf_tokenizer_load(&gt, g)) < 0)
		llm_fatal("%s", llm_errmsg());
	if (rc == 1) {
		tokenizer_facts(m, tf, 0, c->bos_id, c->eos_ids, c->n_eos, 0, NULL, NULL);
		return;
	}
	j = llm_gguf_tokenizer_json(&gt);
	tf[0].name = "tokenizer.json";
	tf[0].data = llm_json_dumps(j);
	tf[0].len = strlen(tf[0].data);
	json_decref(j);
	j = llm_gguf_tokenizer_config(&gt);
	tf[1].name = "tokenizer_config.json";
	tf[1].data = llm_json_dumps(j);
	tf[1].len = strlen(tf[1].data);
	json_decref(j);
	*ntf = 2;
	char *label = llm_xasprintf("%s: tokenizer.chat_template", g->path);
	tokenizer_facts(m, tf, *ntf, gt.v.bos_id, gt.eos_ids, gt.n_eos, gt.v.add_bos, gt.chat_template, label);
	free(label);
	llm_gguf_tokenizer_free(&gt);
}

/* Whether path already holds exactly these bytes: such files are left
 * alone, so that their mtimes tell make that nothing changed.  model.json
 * is always written: it stands for the whole import. */
static int
same_contents(const char *path, const char *p, size_t n)
{
	struct llm_map m;
	int same;

	if (llm_map_file(&m, path) < 0)
		return 0;
	same = m.len == n && memcmp(m.p, p, n) == 0;
	llm_unmap(&m);
	return same;
}

/* The options. */
struct opts {
	const char *outdir;
	int64_t max_ctx, chunk;   /* 0: the default max_ctx */
	enum llm_dtype wdt, kvdt; /* wdt LLM_DT_NONE: auto */
	int mix;                  /* a --dtype mix (qmix.h), else -1 */
	int64_t tp, pp;           /* --tp, --pp: ranks (1: one process) */
	int verbose;
	int act_auto;                        /* --activations auto (the default): q8 where the
	               * plan keeps or makes block-quantized matrices, else
	               * f32 (resolve_activations) */
	int act_q8;                          /* --activations q8 */
	int act_bf16;                        /* --activations bf16 */
	const char *triple, *cpu, *features; /* the target auto decides for */
};

/* --activations auto: int8 activations (llama.cpp's arithmetic, the fast
 * int8 kernels) when block-quantized matrices are kept (a quantized GGUF
 * file) or made (--dtype q4_k_m ...); else, for bf16 weights, bf16
 * activations where the target's bf16 products are fast
 * (llm_target_bf16_activations: --target, --cpu, --features, else this
 * host); else f32. */
static void
resolve_activations(struct opts *o, const struct llm_source *src, int keep_quant, const char *dir)
{
	if (!o->act_auto)
		return;
	int quant = o->mix >= 0;
	for (size_t i = 0; keep_quant && !quant && i < src->ntensors; i++)
		quant = src->tensors[i].quant >= 0;
	o->act_q8 = quant;
	if (quant || o->wdt != LLM_DT_BF16)
		return;
	struct llm_target t;
	char *clang = llm_llvm_tool("LLM_CLANG", "clang"), *llc = llm_llvm_tool("LLM_LLC", "llc");
	if (llm_target_resolve(clang, llc, o->triple, o->cpu, o->features, &t) < 0)
		llm_fatal("%s: cannot tell the target's features: %s", dir, llm_errmsg());
	o->act_bf16 = llm_target_bf16_activations(&t);
	if (o->verbose)
		fprintf(stderr, "llm-import: --activations auto: %s for bf16 weights on %s (%s)\n",
		    o->act_bf16 ? "bf16" : "f32", t.cpu, t.triple);
	llm_target_free(&t);
	free(clang);
	free(llc);
}

/* The model at dir (a GGUF file, or a checkpoint directory) as model.json
 * describes it, into m (llm_model_build's input; its strings are owned,
 * freed by free_description), and the tokenizer files to write. */
static void
describe(struct llm_model *m, const char *dir, struct opts *o, struct llm_source *src, struct tokfile *tf, int *ntf)
{
	struct llm_hfconfig cfg;
	struct stat sb;

	/* A file is a GGUF model; a directory (or nothing) a checkpoint. */
	int gguf = stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode);
	if (gguf) {
		if (llm_source_open_path(src, dir) < 0 || llm_gguf_config(&cfg, src->gguf) < 0)
			llm_fatal("%s", llm_errmsg());
	} else {
		if (llm_hfconfig_load(&cfg, dir) < 0 || llm_source_open_path(src, dir) < 0)
			llm_fatal("%s", llm_errmsg());
	}
	if (cfg.head_dim % 2)
		llm_fatal("%s: head_dim %" PRId64 " is odd: rotary embedding needs an even head_dim", dir,
		    cfg.head_dim);
	if (!o->max_ctx)
		o->max_ctx = cfg.max_position_embeddings < LLM_DEFAULT_MAX_CONTEXT ? cfg.max_position_embeddings :
										     LLM_DEFAULT_MAX_CONTEXT;
	if (o->max_ctx > cfg.max_position_embeddings)
		llm_warn("%s: --max-context %" PRId64 " exceeds max_position_embeddings %" PRId64, dir, o->max_ctx,
		    cfg.max_position_embeddings);
	if (o->chunk > o->max_ctx)
		llm_fatal("--prefill-chunk %" PRId64 " exceeds the context size %" PRId64, o->chunk, o->max_ctx);
	const struct llm_family_spec *fs = llm_family_spec(cfg.family);
	int keep_quant = o->wdt == LLM_DT_NONE && o->mix < 0;
	if (o->wdt == LLM_DT_NONE) {
		/* auto: the checkpoint's own storage type, from the embedding */
		int err;
		char en[160];
		const struct llm_source_tensor *e = llm_source_find(src,
		    gguf ? fs->gguf[LLM_ROLE_EMBED] :
			   src_name(cfg.tensor_prefix, fs->hf[LLM_ROLE_EMBED], 0, en, sizeof(en)),
		    &err);
		o->wdt = e && llm_dtype_is_float_weight(e->dtype) ? e->dtype :
		    cfg.torch_dtype != LLM_DT_NONE                ? cfg.torch_dtype :
								    LLM_DT_F32;
	}
	resolve_activations(o, src, keep_quant, dir);

	llm_model_init(m);
	m->family = llm_xstrdup(cfg.family_name);
	m->architecture = llm_xstrdup(cfg.architecture);
	m->source_kind = llm_source_kind_name(src->kind);
	/* The absolute path, so that later steps run from anywhere; for a GGUF
	 * file, its directory and its name, links resolved. */
	char *absdir = realpath(dir, NULL);
	if (!absdir)
		llm_fatal("%s:", dir);
	m->source_files = llm_xcalloc(src->nfiles + 1, sizeof(*m->source_files));
	if (gguf) {
		char *slash = strrchr(absdir, '/');
		m->source_files[m->nsource_files++] = llm_xstrdup(slash + 1);
		slash[slash == absdir] = 0; /* "/m.gguf" lies in "/" */
	} else {
		for (size_t i = 0; i < src->nfiles; i++) {
			const char *f = strrchr(src->files[i].path, '/');
			m->source_files[m->nsource_files++] = llm_xstrdup(f ? f + 1 : src->files[i].path);
		}
	}
	m->source_dir = absdir;
	/* a window the context never outgrows masks nothing: the plain code */
	if (cfg.sliding_window >= o->max_ctx)
		cfg.sliding_window = 0;
	/* longrope: the factors of this context, as transformers takes them
	 * for a sequence of that length */
	if (cfg.rope_scaling.longrope && llm_rope_scaling_for_context(&cfg.rope_scaling, o->max_ctx))
		llm_warn("%s: the context %" PRId64 " passes original_max_position_embeddings %.0f: RoPE takes the "
			 "long factors at every position, as llama.cpp does (transformers takes them only for "
			 "sequences that long)",
		    dir, o->max_ctx, cfg.rope_scaling.original_max_position_embeddings);
	m->cfg = (struct llm_model_config){cfg.hidden_size, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim,
		cfg.intermediate_size, cfg.vocab_size, cfg.max_position_embeddings, cfg.rms_norm_eps, cfg.rope_theta,
		cfg.tie_word_embeddings, cfg.attention_bias, cfg.qk_norm, cfg.sliding_window, cfg.rope_scaling,
		cfg.rotary_dim ? cfg.rotary_dim : cfg.head_dim, cfg.post_norms, cfg.act, cfg.embed_scale,
		cfg.attn_scale, cfg.window_pattern, cfg.rope_local_theta};
	m->weight_dtype = o->wdt;
	m->kv_dtype = o->kvdt;
	m->act_q8 = o->act_q8;
	m->act_bf16 = o->act_bf16;
	m->max_context = o->max_ctx;
	m->prefill_chunk = o->chunk;
	m->tp = o->tp;
	m->pp = o->pp;
	if (llm_model_split_check(&m->cfg, m->tp, m->pp, dir) < 0)
		llm_fatal("%s", llm_errmsg());

	/* llama.cpp's name of the file type: the mix quantized to, or the
	 * GGUF's whose blocks the build keeps */
	m->file_type = o->mix >= 0 ? llm_qmix_label(o->mix) :
	    keep_quant && gguf     ? llm_ftype_label(cfg.file_type) :
				     NULL;
	build_plan(m, &cfg, src, dir, o->wdt, keep_quant, o->mix, o->max_ctx);
	if (o->act_auto && m->act_q8) {
		/* auto, and no matrix took an int8 layout (block types read
		 * only as f32): the plan has no int8 product to mark */
		int any = 0;
		for (size_t i = 0; i < m->ntensors && !any; i++)
			any = m->tensors[i].layout != NULL;
		m->act_q8 = any;
	}
	if (gguf)
		gguf_tokenizer(m, src->gguf, &cfg, tf, ntf);
	else
		hf_tokenizer(m, dir, &cfg, tf, ntf);
}

static void
free_description(struct llm_model *m)
{
	for (size_t i = 0; i < m->ntensors; i++) {
		free((char *)m->tensors[i].name);
		if (m->tensors[i].nsource)
			free((char *)m->tensors[i].source[0]);
		free((char *)m->tensors[i].layout);
	}
	for (size_t i = 0; i < m->nsource_files; i++)
		free((char *)m->source_files[i]);
	free(m->tensors);
	free(m->source_files);
	free(m->tokenizer_files);
	free((char *)m->family);
	free((char *)m->architecture);
	free((char *)m->source_dir);
}

/* OUTDIR: the phases' MLIR, the tokenizer files and model.json (root).
 * Everything goes to temporaries first and is renamed at the end, so a
 * failure leaves no partial output. */
static void
write_outputs(const struct opts *o, json_t *root, const struct tokfile *tf, int ntf)
{
	if (llm_mkdirs(o->outdir) < 0)
		llm_fatal("%s", llm_errmsg());
	char *mpath = llm_path_join(o->outdir, "model.json");
	char *mtext = llm_json_dumps(root);
	struct llm_model m;
	if (llm_model_parse(&m, json_incref(root), mpath) < 0)
		llm_fatal("internal error: %s", llm_errmsg());

	struct llm_out outs[8];
	int nout = 0;
	int kept = 0;
	double t0 = llm_now();
	for (int i = 0; i < m.nphases; i++) {
		struct llm_buf b = {0};
		char *p = llm_path_join(o->outdir, m.phases[i].file);
		if (llm_emit_phase(&b, &m, &m.phases[i]) < 0)
			llm_fatal("%s", llm_errmsg());
		if (same_contents(p, b.p, b.len)) {
			kept++;
			llm_buf_free(&b);
			free(p);
			continue;
		}
		if (llm_out_open(&outs[nout], p) < 0)
			llm_fatal("%s", llm_errmsg());
		if (fwrite(b.p, 1, b.len, outs[nout].fp) != b.len)
			llm_fatal("%s: write error:", p);
		nout++;
		if (o->verbose)
			fprintf(stderr, "llm-import: %s: %zu bytes\n", p, b.len);
		llm_buf_free(&b);
		free(p);
	}
	for (int i = 0; i < ntf; i++) {
		char *to = llm_path_join(o->outdir, tf[i].name);
		if (same_contents(to, tf[i].data, tf[i].len)) {
			kept++;
			free(to);
			continue;
		}
		if (llm_out_open(&outs[nout], to) < 0)
			llm_fatal("%s", llm_errmsg());
		if (fwrite(tf[i].data, 1, tf[i].len, outs[nout].fp) != tf[i].len)
			llm_fatal("%s: write error:", to);
		nout++;
		free(to);
	}
	if (llm_out_open(&outs[nout], mpath) < 0)
		llm_fatal("%s", llm_errmsg());
	fputs(mtext, outs[nout].fp);
	nout++;
	for (int i = 0; i < nout; i++)
		if (llm_out_commit(&outs[i]) < 0)
			llm_fatal("%s", llm_errmsg());
	if (o->verbose) {
		char fph[17];
		llm_hex64(m.fingerprint, fph);
		fprintf(stderr,
		    "llm-import: %s: %s %s, %" PRId64 " layers, %zu tensors, %" PRIu64 " weight bytes, "
		    "fingerprint %s, %d files unchanged, %.2f s\n",
		    mpath, m.family, o->mix >= 0 ? llm_qmix_name(o->mix) : llm_dtype_name(m.weight_dtype),
		    m.cfg.n_layers, m.ntensors, m.data_bytes, fph, kept, llm_now() - t0);
	}
	llm_model_free(&m);
	free(mtext);
	free(mpath);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"max-context", required_argument, NULL, 'C'},
		{"prefill-chunk", required_argument, NULL, 'S'},
		{"dtype", required_argument, NULL, 'D'},
		{"kv-dtype", required_argument, NULL, 'K'},
		{"activations", required_argument, NULL, 'A'},
		{"cpu", required_argument, NULL, 'U'},
		{"features", required_argument, NULL, 'F'},
		{"target", required_argument, NULL, 'T'},
		{"tp", required_argument, NULL, 'P'},
		{"pp", required_argument, NULL, 'L'},
		LLM_STD_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct opts o = {".", 0, DEFAULT_PREFILL_CHUNK, LLM_DT_NONE, LLM_DT_F32, -1, 1, 1, 0, 1, 0, 0, NULL, NULL,
		NULL};
	struct llm_model d;
	struct llm_source src;
	struct tokfile tf[LLM_NELEM(tokenizer_names)];
	int ch, ntf = 0;

	argv[0] = (char *)llm_setprog(argv[0]);
	while ((ch = getopt_long(argc, argv, "ho:v", longopts, NULL)) != -1) {
		/* one option a line */
		/* clang-format off */
		switch (ch) {
		case 'A':
			if (strcmp(optarg, "q8") != 0 && strcmp(optarg, "bf16") != 0 && strcmp(optarg, "f32") != 0 &&
			    strcmp(optarg, "auto") != 0) {
				llm_warn("--activations: '%s' is not auto, f32, q8 or bf16", optarg);
				usage(stderr);
				return LLM_EXIT_USAGE;
			}
			o.act_auto = strcmp(optarg, "auto") == 0;
			o.act_q8 = strcmp(optarg, "q8") == 0;
			o.act_bf16 = strcmp(optarg, "bf16") == 0;
			break;
		case 'C': o.max_ctx = parse_count(optarg, "--max-context"); break;
		case 'P':
		case 'L':
			*(ch == 'P' ? &o.tp : &o.pp) = parse_count(optarg, ch == 'P' ? "--tp" : "--pp");
			if (o.tp * o.pp > LLM_MAX_TP) {
				llm_warn("%s: at most %d ranks", ch == 'P' ? "--tp" : "--pp", LLM_MAX_TP);
				usage(stderr);
				return LLM_EXIT_USAGE;
			}
			break;
		case 'F': o.features = optarg; break;
		case 'T': o.triple = optarg; break;
		case 'U': o.cpu = strcmp(optarg, "native") == 0 ? NULL : optarg; break;
		case 'D':
			if ((o.mix = llm_qmix_parse(optarg)) >= 0)
				o.wdt = LLM_DT_F32;
			else
				o.wdt = parse_dtype(optarg, 1, "--dtype");
			break;
		case 'K': o.kvdt = parse_dtype(optarg, 0, "--kv-dtype"); break;
		case 'S': o.chunk = parse_count(optarg, "--prefill-chunk"); break;
		case 'h': usage(stdout); return LLM_EXIT_OK;
		case LLM_OPT_HELP: usage(stdout); llm_help(help_text);
		case LLM_OPT_VERSION: llm_print_version();
		case 'o': o.outdir = optarg; break;
		case 'v': o.verbose = 1; break;
		default: usage(stderr); return LLM_EXIT_USAGE;
		}
		/* clang-format on */
	}
	if (argc - optind != 1) {
		usage(stderr);
		return LLM_EXIT_USAGE;
	}

	describe(&d, argv[optind], &o, &src, tf, &ntf);
	json_t *root = llm_model_build(&d);
	write_outputs(&o, root, tf, ntf);
	json_decref(root);
	free_description(&d);
	for (int i = 0; i < ntf; i++)
		free(tf[i].data);
	llm_source_close(&src);
	return LLM_EXIT_OK;
}
