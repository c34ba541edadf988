/* plan.c: the weight plan (plan.h): built from a config and a source's
 * tensor list, checked against the source files. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/util.h"
#include "family.h"
#include "gguf.h"
#include "plan.h"
#include "qmix.h"
#include "quant.h"
#include "weights.h"

/* The plan under construction: the tensors of the model being described. */
struct plan {
	struct llm_model *m; /* tensors, ntensors: the plan so far */
	size_t cap;
	uint64_t off;
	const char *dir;  /* the checkpoint, for messages */
	const char *meta; /* where the sizes come from */
	const struct llm_source *src;
	unsigned char *used; /* per src tensor: in the plan */
	const struct llm_plan_opts *o;
	const struct llm_hfconfig *cfg;
	const struct llm_family_spec *fs;
	const char *const *names; /* the family's hf or gguf names */
	int gguf;
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
static int
split_blocks(const struct plan *p, const char *name, uint32_t ty, const struct rowsel *rs, const int64_t *shape)
{
	uint32_t blck, size;
	if (rs->shard == 2 && llm_ggml_type_block(ty, &blck, &size) == 0 && shape[1] % blck)
		return llm_seterr("%s: --tp %" PRId64 ": a rank's %" PRId64 " columns of '%s' are not whole %s blocks "
				  "of %u",
		    p->dir, p->m->tp, shape[1], name, llm_ggml_type_name(ty), blck);
	return 0;
}

/* A float matrix of a --dtype mix: the block type the mix gives it (the
 * plan's "quant", quantized by llm-pack-weights), in the tiled layout
 * when the shape is whole tiles, else as the f32 values of its blocks; or
 * f16 where llama-quantize falls back to F16. */
static int
add_quantized(struct plan *p, const char *name, const struct llm_source_tensor *t, enum llm_role role, int layer,
    const struct rowsel *rs, const int64_t *shape)
{
	const struct llm_hfconfig *c = p->cfg;
	struct llm_qmix_tensor qt = {role, layer, shape[1], c->family, (int)c->n_layers, c->n_heads, c->n_kv_heads,
		c->tie_word_embeddings, rs->part && role >= LLM_ROLE_WQ && role <= LLM_ROLE_WV};
	uint32_t ty = llm_qmix_type(p->o->mix, &qt);
	struct llm_qlayout ql;

	if (t->quant >= 0)
		return llm_seterr("%s: tensor '%s' is %s already: --dtype %s quantizes float weights (F32, F16, BF16); "
				  "--dtype auto keeps the file's blocks",
		    p->dir, t->name, t->type_name, llm_qmix_name(p->o->mix));
	if (ty == LLM_GGML_F16) {
		add_tensor(p, name, t->name, NULL, rs, NULL, LLM_DT_F16, 2, shape);
		return 0;
	}
	if (split_blocks(p, name, ty, rs, shape) < 0)
		return -1;
	int keep = llm_qlayout_of(ty, p->m->act_q8, &ql) == 0 && llm_qlayout_fits(&ql, shape[0], shape[1]);
	add_tensor(p, name, t->name, llm_ggml_type_name(ty), rs, keep ? &ql : NULL, keep ? LLM_DT_I8 : LLM_DT_F32, 2,
	    shape);
	return 0;
}

/* Source tensor src must exist with the shape the config implies (for a
 * part, the whole's; for a rank's shard, all ranks'). */
static int
check_source(const struct plan *p, const struct llm_source_tensor *t, const char *src, const struct rowsel *rs,
    int ndim, const int64_t *shape)
{
	char want[128] = "", got[128] = "";
	int same = t->ndim == ndim;

	if (p->gguf && !llm_source_tensor_readable(t))
		return llm_seterr("%s: tensor '%s' has type %s, which %s does not support (it reads F32, F16, BF16, "
				  "%s)",
		    p->dir, src, t->type_name, llm_prog, llm_quant_supported_names());
	if (!llm_source_tensor_readable(t))
		return llm_seterr("%s: tensor '%s': unsupported dtype '%s'", p->dir, src, t->type_name);
	for (int i = 0; i < ndim; i++) {
		int64_t want_i = i == 0 && rs->part ? rs->total :
		    rs->shard == i + 1              ? shape[i] * rs->shard_parts :
						      shape[i];
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%" PRId64, i ? ", " : "", want_i);
		same = same && t->shape[i] == want_i;
	}
	for (int i = 0; i < t->ndim; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%" PRId64, i ? ", " : "", t->shape[i]);
	if (!same)
		return llm_seterr("%s: tensor '%s' has shape [%s], %s implies [%s]", p->dir, src, got, p->meta, want);
	return 0;
}

/* A tensor taken from the checkpoint (copied, or moved within heads).  A
 * matrix (the embedding or a linear layer's) in a block type keeps it,
 * in the tiled layout, when the plan says so and the shape is whole
 * tiles. */
static int
add_source(struct plan *p, const char *name, const char *src, enum llm_role role, int layer, const struct rowsel *rs,
    int matrix, enum llm_dtype dt, int ndim, const int64_t *shape)
{
	struct llm_qlayout ql;
	int err;
	const struct llm_source_tensor *t = llm_source_find(p->src, src, &err);

	if (err)
		return -1;
	if (!t)
		return llm_seterr("%s: missing tensor '%s'", p->dir, src);
	p->used[t - p->src->tensors] = 1;
	if (check_source(p, t, src, rs, ndim, shape) < 0)
		return -1;
	if (matrix && p->o->mix >= 0)
		return add_quantized(p, name, t, role, layer, rs, shape);
	/* auto: a float matrix keeps its own type (an F16 matrix of a
	 * quantized file, where llama-quantize fell back to F16) */
	if (matrix && p->o->keep_quant && t->quant < 0 && llm_dtype_is_float_weight(t->dtype))
		dt = t->dtype;
	if (t->quant >= 0 && split_blocks(p, name, (uint32_t)t->quant, rs, shape) < 0)
		return -1;
	int keep = matrix && p->o->keep_quant && t->quant >= 0 &&
	    llm_qlayout_of((uint32_t)t->quant, p->m->act_q8, &ql) == 0 && llm_qlayout_fits(&ql, shape[0], shape[1]);
	add_tensor(p, name, src, t->quant >= 0 ? t->type_name : NULL, rs, keep ? &ql : NULL, keep ? LLM_DT_I8 : dt,
	    ndim, shape);
	return 0;
}

/* The rows role r takes from its source: GGUF llama q and k unpermuted;
 * under partial rotary embedding, q and k (their biases and norms too)
 * with each head's rotated dims and passed dims regrouped into halves
 * (rotary_halves: pack.c); a checkpoint's norms that scale by 1 + w
 * (gemma3; GGUF files hold 1 + w) plus one; a part of a fused tensor at
 * its rows. */
static int
rows_of(const struct plan *p, enum llm_role r, struct rowsel *rs)
{
	const struct llm_model_config *c = &p->m->cfg;
	const struct llm_role_info *ri = llm_role_info(r);
	int64_t heads = p->gguf ? llm_role_permuted_heads(p->fs, r, c) : 0;

	*rs = (struct rowsel){.transform = "copy"};
	if (heads) {
		rs->transform = "unpermute_qk";
		rs->heads = heads;
	}
	if (c->rotary_dim != c->head_dim && ri->rotary) {
		if (heads)
			return llm_seterr("%s: partial rotary embedding of q and k stored permuted (GGUF %s) is not "
					  "supported",
			    p->dir, p->fs->name);
		rs->transform = "rotary_halves";
		rs->heads = llm_role_heads(r, c);
	}
	if (ri->norm && p->fs->norm_plus_one && !p->gguf) {
		if (strcmp(rs->transform, "copy") != 0)
			return llm_seterr("%s: %s norms that scale by 1 + w under %s are not supported", p->dir,
			    p->fs->name, rs->transform);
		rs->transform = "add_one";
	}
	rs->part = llm_role_part(p->names, r, c, &rs->first, &rs->total);
	return 0;
}

/* Tensor parallelism (m->tp ranks, Megatron's split, llm_role_info's tp):
 * whole heads to a rank; KV heads fewer than the ranks are shared:
 * tp / n_kv_heads ranks take each.  shape becomes a rank's, and a
 * transform within heads counts a rank's heads. */
static void
shard_of(const struct llm_model *m, enum llm_role r, int64_t rank, struct rowsel *rs, int64_t *shape)
{
	const struct llm_model_config *c = &m->cfg;
	const struct llm_role_info *ri = llm_role_info(r);
	int64_t parts = ri->heads == LLM_HEADS_KV && c->n_kv_heads < m->tp ? c->n_kv_heads : m->tp;
	int dim = ri->tp == LLM_TP_ROWS ? 0 : 1;

	if (m->tp < 2 || ri->tp == LLM_TP_NONE || parts < 2)
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

/* Role r of layer (its checkpoint layer: first + layer) for rank, named
 * with the rank's suffix sfx. */
static int
add_role(struct plan *p, enum llm_role r, int layer, int first, int64_t rank, const char *sfx)
{
	const struct llm_model_config *mc = &p->m->cfg;
	struct rowsel rs;
	int64_t shape[2];
	char rn[128], hn[128];
	int nd = llm_role_shape(r, mc, shape);

	if (rows_of(p, r, &rs) < 0)
		return -1;
	shard_of(p->m, r, rank, &rs, shape);
	snprintf(rn, sizeof(rn), llm_role_runtime(r), layer);
	snprintf(rn + strlen(rn), sizeof(rn) - strlen(rn), "%s", sfx);
	/* a checkpoint's name: the prefix of a multimodal checkpoint's text
	 * model ("" else), then the family's name of it */
	size_t l = (size_t)snprintf(hn, sizeof(hn), "%s", p->cfg->tensor_prefix);
	if (l < sizeof(hn))
		snprintf(hn + l, sizeof(hn) - l, p->names[r], first + layer);
	return add_source(p, rn, hn, r, first + layer, &rs, nd == 2, nd == 2 ? p->o->wdt : LLM_DT_F32, nd, shape);
}

/* A RoPE table, computed by llm-pack-weights (transform tf). */
static void
add_rope(struct plan *p, const char *name, const char *tf, const char *sfx)
{
	int64_t shape[2] = {p->o->max_ctx, p->m->cfg.head_dim / 2};
	char rn[128];

	snprintf(rn, sizeof(rn), "%s%s", name, sfx);
	add_tensor(p, rn, NULL, NULL, &(struct rowsel){.transform = tf}, NULL, LLM_DT_F32, 2, shape);
}

static const char *
type_of(const struct llm_plan_tensor *t)
{
	return t->quant ? t->quant : llm_dtype_name(t->dtype);
}

/* Rank r's tensors from n0 * r on must be rank 0's types and layouts (one
 * image a rank: model.h "tp"), which a pipeline's ranks are not when the
 * types vary by layer (a GGUF file's mix, or --dtype q4_k_m's). */
static int
same_image(const struct plan *p, int64_t r, size_t n0)
{
	const struct llm_model *m = p->m;
	for (size_t i = (size_t)r * n0; i < m->ntensors; i++) {
		const struct llm_plan_tensor *t = &m->tensors[i], *t0 = &m->tensors[i - (size_t)r * n0];
		if (strcmp(type_of(t), type_of(t0)) == 0 && t->dtype == t0->dtype &&
		    strcmp(t->layout ? t->layout : "", t0->layout ? t0->layout : "") == 0)
			continue;
		return llm_seterr("%s: --pp %" PRId64 ": '%s' would be %s%s%s but '%s' %s%s%s: the ranks of a pipeline "
				  "hold the same types, layer for layer (a --dtype of one type, such as q8_0, or --tp)",
		    p->dir, m->pp, t0->nsource ? t0->source[0] : t0->name, type_of(t0), t0->layout ? " " : "",
		    t0->layout ? t0->layout : "", t->nsource ? t->source[0] : t->name, type_of(t), t->layout ? " " : "",
		    t->layout ? t->layout : "");
	}
	return 0;
}

/* One rank's tensors (rank 0's alone without tp or pp). */
static int
add_rank(struct plan *p, int64_t r)
{
	const struct llm_model *m = p->m;
	const struct llm_model_config *mc = &m->cfg;
	int64_t layers = mc->n_layers / m->pp;
	int first = m->pp > 1 ? (int)(r * layers) : 0;
	char sfx[24] = "";

	if (r)
		snprintf(sfx, sizeof(sfx), "@%" PRId64, r);
	if (add_role(p, LLM_ROLE_EMBED, 0, 0, r, sfx) < 0)
		return -1;
	add_rope(p, LLM_TENSOR_ROPE_COS, "rope_cos", sfx);
	add_rope(p, LLM_TENSOR_ROPE_SIN, "rope_sin", sfx);
	if (mc->rope_local_theta) {
		add_rope(p, LLM_TENSOR_ROPE_LOCAL_COS, "rope_local_cos", sfx);
		add_rope(p, LLM_TENSOR_ROPE_LOCAL_SIN, "rope_local_sin", sfx);
	}
	for (int l = 0; l < layers; l++)
		for (int role = LLM_ROLE_ATTN_NORM; role <= LLM_ROLE_LAYER_LAST; role++)
			if (llm_role_present(role, mc) && add_role(p, role, l, first, r, sfx) < 0)
				return -1;
	if (add_role(p, LLM_ROLE_FINAL_NORM, 0, 0, r, sfx) < 0)
		return -1;
	if (llm_role_present(LLM_ROLE_LM_HEAD, mc) && add_role(p, LLM_ROLE_LM_HEAD, 0, 0, r, sfx) < 0)
		return -1;
	return 0;
}

/* Every tensor of a GGUF file must be in the plan: one left over is a
 * feature (a bias, RoPE frequency factors, ...) that the generated code
 * would silently ignore.  The RoPE factors are in the config
 * (gguf_config.c). */
static int
check_unused(const struct plan *p)
{
	const struct llm_source *src = p->src;
	for (size_t i = 0; p->gguf && i < src->ntensors; i++)
		if (!p->used[i] && strcmp(src->tensors[i].name, LLM_GGUF_ROPE_FREQS) != 0 &&
		    strcmp(src->tensors[i].name, LLM_GGUF_ROPE_LONG) != 0 &&
		    strcmp(src->tensors[i].name, LLM_GGUF_ROPE_SHORT) != 0)
			return llm_seterr("%s: tensor '%s' is not part of a %s model as %s supports it", p->dir,
			    src->tensors[i].name, p->fs->name, llm_prog);
	return 0;
}

/* Source names are the checkpoint's (Hugging Face or GGUF); in a GGUF
 * file of a llama model, q and k (and their biases) are stored permuted
 * and get the transform unpermute_qk.  Matrices and the embedding take
 * the weight dtype; norms and biases stay f32 (small, and exact).  A
 * model split over ranks (model.h "tp") is an image a rank: rank r's
 * tensors named "<name>@<r>" at rank 0's offsets + r x stride; under --tp
 * each takes its part of a split tensor (shard_of), under --pp its range
 * of the layers, local layer l being layer r x layers + l of the
 * checkpoint. */
int
llm_plan_build(struct llm_model *m, const struct llm_hfconfig *c, const struct llm_source *src, const char *dir,
    const struct llm_plan_opts *o)
{
	const struct llm_family_spec *fs = llm_family_spec(c->family);
	int gguf = src->kind == LLM_SOURCE_GGUF;
	struct plan p = {m, 0, 0, dir, gguf ? "the metadata" : "config.json", src, llm_xcalloc(src->ntensors + 1, 1), o,
		c, fs, gguf ? fs->gguf : fs->hf, gguf};
	int64_t ranks = llm_model_ranks(m);
	uint64_t stride = 0;
	int rc = 0;

	m->tensors = NULL;
	m->ntensors = 0;
	size_t n0 = 0;
	for (int64_t r = 0; r < ranks && rc == 0; r++) {
		p.off = (uint64_t)r * stride; /* add_tensor keeps it: aligned */
		rc = add_rank(&p, r);
		if (!r) {
			stride = LLM_ALIGN_UP(p.off, LLM_TP_ALIGN);
			n0 = m->ntensors;
		} else if (rc == 0)
			rc = same_image(&p, r, n0);
	}
	if (rc == 0)
		rc = check_unused(&p);
	free(p.used);
	if (rc < 0) {
		llm_plan_free(m);
		return -1;
	}
	m->data_bytes = ranks > 1 ? (uint64_t)ranks * stride : LLM_ALIGN_UP(p.off, LLM_WEIGHTS_ALIGN);
	return 0;
}

void
llm_plan_free(struct llm_model *m)
{
	for (size_t i = 0; i < m->ntensors; i++) {
		free((char *)m->tensors[i].name);
		if (m->tensors[i].nsource)
			free((char *)m->tensors[i].source[0]);
		free((char *)m->tensors[i].layout);
	}
	free(m->tensors);
	m->tensors = NULL;
	m->ntensors = 0;
}

static void
fmt_shape(char *out, size_t n, const int64_t *shape, int ndim)
{
	size_t l = 0;
	l += (size_t)snprintf(out + l, n - l, "[");
	for (int i = 0; i < ndim && l < n; i++)
		l += (size_t)snprintf(out + l, n - l, "%s%" PRId64, i ? ", " : "", shape[i]);
	if (l < n)
		snprintf(out + l, n - l, "]");
}

/* A plain file name for weights.bin: no directories, nothing special. */
static int
plain_name(const char *s)
{
	return *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && strcmp(s, LLM_WEIGHTS_JSON) != 0;
}

/* The "heads" of plan entry i (an unpermute_qk or rotary_halves transform): a positive
 * integer that divides the rows into heads of an even size. */
static int
plan_heads(const struct llm_model *m, size_t i, const struct llm_plan_tensor *p, int64_t *out)
{
	json_t *ts = json_object_get(json_object_get(m->root, "weights"), "tensors"); /* borrowed */
	json_t *h = json_object_get(json_array_get(ts, i), "heads");                  /* borrowed */

	if (!json_is_integer(h) || json_integer_value(h) <= 0)
		return llm_seterr("%s: tensor '%s': transform '%s' needs a positive integer 'heads'", m->path, p->name,
		    p->transform);
	*out = json_integer_value(h);
	if (p->shape[0] % *out || (p->shape[0] / *out) % 2)
		return llm_seterr("%s: tensor '%s': %" PRId64 " rows do not split into %" PRId64
				  " heads of an even size",
		    m->path, p->name, p->shape[0], *out);
	if (strcmp(p->transform, "rotary_halves") == 0 && p->shape[0] / *out != m->cfg.head_dim)
		return llm_seterr("%s: tensor '%s': %" PRId64 " rows are not %" PRId64 " heads of head_dim %" PRId64,
		    m->path, p->name, p->shape[0], *out, m->cfg.head_dim);
	return 0;
}

static int
check_tensors(const struct llm_model *m, const struct llm_source *s, struct llm_plan_sources *ps)
{
	char a[128], b[128];
	int err;

	if (!plain_name(m->weights_file))
		return llm_seterr("%s: weights.file '%s' must be a plain file name", m->path, m->weights_file);
	if (m->header_bytes != LLM_WEIGHTS_HEADER_BYTES)
		return llm_seterr("%s: weights.header_bytes %" PRIu64 " (this program writes %d)", m->path,
		    m->header_bytes, LLM_WEIGHTS_HEADER_BYTES);
	ps->src = llm_xcalloc(m->ntensors, sizeof(*ps->src));
	ps->heads = llm_xcalloc(m->ntensors, sizeof(*ps->heads));
	ps->rotary = llm_xcalloc(m->ntensors, sizeof(*ps->rotary));
	ps->qtype = llm_xcalloc(m->ntensors, sizeof(*ps->qtype));
	for (size_t i = 0; i < m->ntensors; i++) {
		const struct llm_plan_tensor *p = &m->tensors[i];
		ps->qtype[i] = -1;
		if (strcmp(p->transform, "rope_cos") == 0 || strcmp(p->transform, "rope_sin") == 0 ||
		    strcmp(p->transform, "rope_local_cos") == 0 || strcmp(p->transform, "rope_local_sin") == 0) {
			int64_t want[2] = {m->max_context, m->cfg.head_dim / 2};
			if (p->nsource != 0)
				return llm_seterr("%s: tensor '%s': transform '%s' takes no source", m->path, p->name,
				    p->transform);
			if (strncmp(p->transform, "rope_local_", 11) == 0 && !(m->cfg.rope_local_theta > 0))
				return llm_seterr("%s: tensor '%s': transform '%s' needs config.rope_local_theta",
				    m->path, p->name, p->transform);
			if (p->dtype != LLM_DT_F32)
				return llm_seterr("%s: tensor '%s': transform '%s' makes f32, not %s", m->path, p->name,
				    p->transform, llm_dtype_name(p->dtype));
			if (p->ndim != 2 || p->shape[0] != want[0] || p->shape[1] != want[1]) {
				fmt_shape(a, sizeof(a), p->shape, p->ndim);
				fmt_shape(b, sizeof(b), want, 2);
				return llm_seterr("%s: tensor '%s': shape %s, expected %s "
						  "(max_context, head_dim/2)",
				    m->path, p->name, a, b);
			}
			continue;
		}
		int permute = strcmp(p->transform, "unpermute_qk") == 0 || strcmp(p->transform, "rotary_halves") == 0;
		if (strcmp(p->transform, "add_one") == 0 && (p->dtype != LLM_DT_F32 || p->ndim != 1))
			return llm_seterr("%s: tensor '%s': transform 'add_one' makes an f32 vector", m->path, p->name);
		if (strcmp(p->transform, "copy") != 0 && strcmp(p->transform, "add_one") != 0 && !permute)
			return llm_seterr("%s: tensor '%s': unknown transform '%s'", m->path, p->name, p->transform);
		if (p->nsource != 1)
			return llm_seterr("%s: tensor '%s': transform '%s' takes one source, not %d", m->path, p->name,
			    p->transform, p->nsource);
		if (permute && plan_heads(m, i, p, &ps->heads[i]) < 0)
			return -1;
		ps->rotary[i] = strcmp(p->transform, "rotary_halves") == 0;
		const struct llm_source_tensor *t = llm_source_find(s, p->source[0], &err);
		if (err)
			return -1;
		if (!t)
			return llm_seterr("%s: no tensor '%s' (source of '%s' in %s)",
			    s->nfiles == 1 ? s->files[0].path : m->source_dir, p->source[0], p->name, m->path);
		const char *file = s->files[t->file].path;
		/* the rows or columns a part takes (a fused tensor's part, a
		 * tensor-parallel rank's) lie inside the source */
		int64_t rows = p->part ? p->first_row + p->shape[0] : p->shape[0];
		int64_t cols = p->ndim > 1 && p->cpart ? p->first_col + p->shape[1] : p->ndim > 1 ? p->shape[1] : 0;
		if (t->ndim != p->ndim || (p->part ? t->shape[0] < rows : t->shape[0] != rows) ||
		    (p->ndim > 1 && (p->cpart ? t->shape[1] < cols : t->shape[1] != cols)) ||
		    (p->ndim > 2 && memcmp(t->shape + 2, p->shape + 2, (size_t)(p->ndim - 2) * sizeof(int64_t)) != 0) ||
		    (p->cpart && t->quant >= 0 && (p->first_col % t->blck || p->shape[1] % t->blck))) {
			fmt_shape(a, sizeof(a), t->shape, t->ndim);
			fmt_shape(b, sizeof(b), p->shape, p->ndim);
			if (p->cpart && t->quant >= 0)
				return llm_seterr("%s: tensor '%s': columns %" PRId64 "..%" PRId64 " are not whole %s "
						  "blocks of %" PRIu64 " (for '%s' in %s)",
				    file, t->name, p->first_col, cols - 1, t->type_name, (uint64_t)t->blck, p->name,
				    m->path);
			if (p->part || p->cpart)
				return llm_seterr("%s: tensor '%s': shape %s has no rows %" PRId64 "..%" PRId64
						  ", columns %" PRId64 "..%" PRId64 " of %s for '%s' in %s",
				    file, t->name, a, p->part ? p->first_row : 0, rows - 1, p->cpart ? p->first_col : 0,
				    cols - 1, b, p->name, m->path);
			return llm_seterr("%s: tensor '%s': shape %s does not match %s of '%s' in %s", file, t->name, a,
			    b, p->name, m->path);
		}
		if (!llm_source_tensor_readable(t))
			return llm_seterr("%s: tensor '%s': cannot convert %s to %s", file, t->name, t->type_name,
			    llm_dtype_name(p->dtype));
		ps->qtype[i] = t->quant;
		if (p->quant && t->quant < 0) {
			/* a float source, quantized here (llm-import --dtype q4_k_m ...) */
			int64_t q = llm_ggml_type_by_name(p->quant);
			if (q < 0 || !llm_quantize_supported((uint32_t)q))
				return llm_seterr("%s: tensor '%s': cannot quantize to '%s' "
						  "(%s writes Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K)",
				    m->path, p->name, p->quant, llm_prog);
			if (p->dtype != LLM_DT_I8 && p->dtype != LLM_DT_F32)
				return llm_seterr("%s: tensor '%s': %s values are stored as i8 codes or f32, not %s",
				    m->path, p->name, p->quant, llm_dtype_name(p->dtype));
			ps->qtype[i] = (int)q;
		} else if (strcmp(p->quant ? p->quant : "", t->quant >= 0 ? t->type_name : "") != 0)
			return llm_seterr("%s: tensor '%s' is %s, but %s says %s (run llm-import again)", file, t->name,
			    t->type_name, m->path, p->quant ? p->quant : "not quantized");
		if (p->layout) {
			struct llm_qlayout want;
			char name[LLM_QLAYOUT_NAME];
			const char *tn = llm_ggml_type_name((uint32_t)ps->qtype[i]);
			if (llm_qlayout_of((uint32_t)ps->qtype[i], m->act_q8, &want) < 0)
				return llm_seterr("%s: tensor '%s': no tiled layout for %s", file, t->name, tn);
			llm_qlayout_name(&want, name);
			if (strcmp(name, p->layout) != 0)
				return llm_seterr("%s: tensor '%s' (%s) has layout %s, but %s says %s (run llm-import "
						  "again)",
				    file, t->name, tn, name, m->path, p->layout);
		}
		ps->src[i] = t;
	}
	return 0;
}

int
llm_plan_check(const struct llm_model *m, const struct llm_source *s, struct llm_plan_sources *ps)
{
	memset(ps, 0, sizeof(*ps));
	if (check_tensors(m, s, ps) == 0)
		return 0;
	llm_plan_sources_free(ps);
	return -1;
}

void
llm_plan_sources_free(struct llm_plan_sources *ps)
{
	free(ps->src);
	free(ps->heads);
	free(ps->rotary);
	free(ps->qtype);
	memset(ps, 0, sizeof(*ps));
}
