/* pack.c: see pack.h.
 *
 * Sources come through source.h: safetensors files or a GGUF file.
 *
 * Memory: a source tensor is read through the mapping of its file a chunk
 * at a time; after each chunk its pages are dropped from the mapping again
 * (MADV_DONTNEED; they stay in the page cache), so resident memory stays
 * near NSLOT chunks and their conversion buffers (16 MiB), whatever the
 * model size.  Data is written in host byte order, which must be little
 * endian (as safetensors, GGUF and weights.bin are).
 *
 * Time: the FNV-1a checksums are byte-serial (about 4 cycles a byte) and
 * would cost as much as everything else together, so a second thread
 * computes them while the main thread converts and writes.  The two share
 * a ring of NSLOT chunks: the main thread fills a slot (a conversion
 * buffer, or a pointer into the mapping), publishes it, writes it, and
 * reuses it only once the hasher has moved past it. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../formats/bundle.h"
#include "../formats/gguf.h"
#include "../base/json.h"
#include "pack.h"
#include "../formats/plan.h"
#include "../formats/quant.h"
#include "../formats/source.h"
#include "../base/util.h"
#include "../formats/weights.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "weights.bin and safetensors are little endian; this host is not"
#endif

/* Elements per chunk: 4 MiB of f32 at most in a conversion buffer. */
#define CHUNK ((size_t)1 << 20)
#define NSLOT 4

/* One chunk of a tensor as written. */
struct slot {
	const uint8_t *p;
	size_t n;
	size_t tensor;
	int first, last; /* first / last chunk of the tensor */
	const void *rel; /* source bytes to drop from the mapping once done */
	size_t reln;
	void *buf; /* CHUNK f32 elements, for converted or computed data */
};

struct hasher {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct slot s[NSLOT];
	size_t head, tail; /* slots published by main / hashed; tail <= head */
	int quit;
	uint64_t *sum; /* per plan tensor; written by the hasher */
};

struct packer {
	const struct llm_model *m;
	const struct llm_pack_opts *o;
	struct llm_source src_files; /* the checkpoint (model.json source) */
	struct llm_plan_sources ps;  /* per plan tensor: its source, heads, block type */
	int threads;
	uint64_t *sum; /* per plan tensor checksum */
	float *stage;  /* CHUNK f32: decoded blocks */
	const char *outdir;
	char *binpath, *jsonpath;
	struct hasher hs;
	/* Progress. */
	struct llm_progress pr;
	uint64_t done;
	size_t cur;
};

static int
open_sources(struct packer *k)
{
	const struct llm_model *m = k->m;

	if (!llm_source_kind_from_name(m->source_kind))
		return llm_seterr("%s: source kind '%s' is not supported", m->path, m->source_kind);
	if (m->nsource_files == 0)
		return llm_seterr("%s: source.files is empty", m->path);
	return llm_source_open(&k->src_files, m->source_kind, m->source_dir, m->source_files, m->nsource_files);
}

/* Check every plan tensor against its source before writing anything:
 * llm_plan_check, and rows short enough to move within heads. */
static int
check_plan(struct packer *k)
{
	const struct llm_model *m = k->m;

	if (llm_plan_check(m, &k->src_files, &k->ps) < 0)
		return -1;
	for (size_t i = 0; i < m->ntensors; i++) {
		const struct llm_plan_tensor *p = &m->tensors[i];
		int64_t row = 1;
		for (int d = 1; d < p->ndim; d++)
			row *= p->shape[d];
		if (k->ps.heads[i] && (uint64_t)row > CHUNK)
			return llm_seterr("%s: tensor '%s': rows of %" PRId64 " elements are too long to permute",
			    m->path, p->name, row);
	}
	return 0;
}

static void
say_why(struct packer *k, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!k->o->verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	llm_warn("%s: not reused: %s", k->jsonpath, msg);
}

/* 1 when the existing weights.json and weights.bin describe exactly this
 * plan and these source files, 0 otherwise (including when they are
 * missing or unreadable: then they are simply rewritten). */
static int
up_to_date(struct packer *k)
{
	const struct llm_model *m = k->m;
	struct llm_weights_manifest j;
	struct llm_weights w;
	size_t n = 0;
	int ok = 0;

	if (!llm_file_exists(k->jsonpath)) {
		say_why(k, "no such file");
		return 0;
	}
	if (llm_weights_manifest_load(&j, k->jsonpath) < 0) {
		say_why(k, "%s", llm_errmsg());
		return 0;
	}
	if (j.fingerprint != m->fingerprint || strcmp(j.file, m->weights_file) != 0 ||
	    j.header_bytes != m->header_bytes || j.data_bytes != m->data_bytes) {
		say_why(k, "the plan changed");
		goto out;
	}
	for (; n < k->src_files.nfiles; n++) {
		const struct llm_source_file *s = &k->src_files.files[n];
		const struct llm_weights_source *o = &j.sources[n];
		if (n >= j.nsources || strcmp(o->path, s->path) != 0 || o->size != s->size ||
		    o->mtime_ns != s->mtime_ns || o->header_hash != s->header_hash) {
			say_why(k, "source %s changed", s->path);
			goto out;
		}
	}
	if (n != j.nsources) {
		say_why(k, "the source files changed");
		goto out;
	}
	/* weights.bin, or the weights model.mk moved into the build's
	 * model.llm (bundle.h): then they stay there */
	struct llm_bundle b;
	struct llm_bundle_map bm = {0};
	const struct llm_member *wm;
	if (llm_bundle_open(&b, k->outdir) < 0) {
		say_why(k, "%s", llm_errmsg());
		goto out;
	}
	if (!(wm = llm_bundle_get(&b, m->weights_file)) || llm_bundle_map(&b, wm, &bm) < 0 ||
	    llm_weights_view(&w, bm.p, bm.len, wm->label, m) < 0) {
		say_why(k, "%s", llm_errmsg());
		llm_bundle_unmap(&bm);
		llm_bundle_close(&b);
		goto out;
	}
	ok = llm_weights_check(w.map.p, w.map.len, wm->label, &j) == 0;
	if (!ok)
		say_why(k, "%s", llm_errmsg());
	llm_weights_close(&w);
	llm_bundle_unmap(&bm);
	llm_bundle_close(&b);
out:
	llm_weights_manifest_free(&j);
	return ok;
}

static void
progress(struct packer *k, uint64_t n)
{
	k->done += n;
	llm_progress_show(&k->pr, k->binpath, k->done, k->m->data_bytes, "tensor %zu/%zu, ", k->cur + 1,
	    k->m->ntensors);
}

/* Drop the pages of [p, p+n) from our mapping: they were read once. */
static void
release(const void *p, size_t n)
{
	static uintptr_t pg;
	if (!pg)
		pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p & ~(pg - 1), b = ((uintptr_t)p + n) & ~(pg - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

static int
put(struct llm_out *o, const void *p, size_t n)
{
	if (n && fwrite(p, 1, n, o->fp) != n)
		return llm_seterr("%s: write error:", o->path);
	return 0;
}

static int
put_zeros(struct llm_out *o, uint64_t n)
{
	static const uint8_t zero[65536];
	while (n > 0) {
		size_t c = n < sizeof(zero) ? (size_t)n : sizeof(zero);
		if (put(o, zero, c) < 0)
			return -1;
		n -= c;
	}
	return 0;
}

double
llm_rope_inv_freq(double theta, const struct llm_rope_scaling *s, int64_t i, int64_t dim)
{
	double f = pow(theta, -2.0 * (double)i / (double)dim);
	if (s->nfactors)
		return f / s->factors[i]; /* as ggml's rope with freq_factors */
	if (!s->llama3)
		return f;
	/* transformers' _compute_llama3_parameters: wavelengths above the
	 * original context / low_freq_factor slow down by factor, those below
	 * it / high_freq_factor stay, and those between blend the two by how
	 * far the original context is in wavelengths. */
	double wavelen = 2.0 * M_PI / f, ctx = s->original_max_position_embeddings;
	if (wavelen < ctx / s->high_freq_factor)
		return f;
	if (wavelen > ctx / s->low_freq_factor)
		return f / s->factor;
	double smooth = (ctx / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
	return (1.0 - smooth) * f / s->factor + smooth * f;
}

void
llm_rope_row(float *out, int64_t p, double theta, const struct llm_rope_scaling *s, int64_t head_dim,
    int64_t rotary_dim, int use_sin)
{
	double af = s->attention_factor ? s->attention_factor : 1;
	for (int64_t i = 0; i < rotary_dim / 2; i++) {
		double a = (double)p * llm_rope_inv_freq(theta, s, i, rotary_dim);
		out[i] = (float)((use_sin ? sin(a) : cos(a)) * af);
	}
	/* the dims past rotary_dim pass through (rotary_halves) */
	for (int64_t i = rotary_dim / 2; i < head_dim / 2; i++)
		out[i] = use_sin ? 0.0f : 1.0f;
}

static void *
hash_main(void *arg)
{
	struct hasher *hs = arg;
	uint64_t h = LLM_FNV_INIT;

	pthread_mutex_lock(&hs->mu);
	for (;;) {
		while (hs->tail == hs->head && !hs->quit)
			pthread_cond_wait(&hs->cv, &hs->mu);
		if (hs->tail == hs->head)
			break;
		struct slot *s = &hs->s[hs->tail % NSLOT];
		pthread_mutex_unlock(&hs->mu);
		if (s->first)
			h = LLM_FNV_INIT;
		h = llm_fnv1a(h, s->p, s->n);
		if (s->last)
			hs->sum[s->tensor] = h;
		pthread_mutex_lock(&hs->mu);
		hs->tail++;
		pthread_cond_broadcast(&hs->cv);
	}
	pthread_mutex_unlock(&hs->mu);
	return NULL;
}

static int
hasher_start(struct hasher *hs, size_t ntensors)
{
	memset(hs, 0, sizeof(*hs));
	hs->sum = llm_xcalloc(ntensors, sizeof(*hs->sum));
	for (int i = 0; i < NSLOT; i++)
		hs->s[i].buf = llm_xmalloc(CHUNK * sizeof(float));
	pthread_mutex_init(&hs->mu, NULL);
	pthread_cond_init(&hs->cv, NULL);
	if ((errno = pthread_create(&hs->th, NULL, hash_main, hs)) != 0)
		return llm_seterr("pthread_create:");
	return 0;
}

/* Wait until every published chunk is hashed, stop the thread and drop
 * the source pages still mapped. */
static void
hasher_stop(struct hasher *hs)
{
	pthread_mutex_lock(&hs->mu);
	hs->quit = 1;
	pthread_cond_broadcast(&hs->cv);
	pthread_mutex_unlock(&hs->mu);
	pthread_join(hs->th, NULL);
	for (int i = 0; i < NSLOT; i++) {
		release(hs->s[i].rel, hs->s[i].reln);
		free(hs->s[i].buf);
	}
	pthread_mutex_destroy(&hs->mu);
	pthread_cond_destroy(&hs->cv);
}

/* A free slot for chunk `first`/`last` of tensor i: its previous chunk is
 * hashed (and was written before it was published). */
static struct slot *
slot_get(struct hasher *hs, size_t i, int first, int last)
{
	pthread_mutex_lock(&hs->mu);
	while (hs->head - hs->tail >= NSLOT)
		pthread_cond_wait(&hs->cv, &hs->mu);
	struct slot *s = &hs->s[hs->head % NSLOT];
	pthread_mutex_unlock(&hs->mu);
	release(s->rel, s->reln);
	s->rel = NULL;
	s->reln = 0;
	s->tensor = i;
	s->first = first;
	s->last = last;
	return s;
}

/* Hand the filled slot to the hasher, then write it. */
static int
slot_put(struct packer *k, struct llm_out *o, struct slot *s)
{
	pthread_mutex_lock(&k->hs.mu);
	k->hs.head++;
	pthread_cond_broadcast(&k->hs.cv);
	pthread_mutex_unlock(&k->hs.mu);
	if (put(o, s->p, s->n) < 0)
		return -1;
	progress(k, s->n);
	return 0;
}

/* rope_cos, rope_sin (the global tables: rope_theta, the scaling) and
 * rope_local_cos, rope_local_sin (rope_local_theta, unscaled). */
static int
write_rope(struct packer *k, struct llm_out *o, size_t ti, const struct llm_plan_tensor *p)
{
	const struct llm_model_config *c = &k->m->cfg;
	int64_t rows = p->shape[0], cols = p->shape[1];
	int use_sin = strcmp(p->transform, "rope_sin") == 0 || strcmp(p->transform, "rope_local_sin") == 0;
	int local = strncmp(p->transform, "rope_local_", 11) == 0;
	const struct llm_rope_scaling none = {0};
	int64_t per = (int64_t)CHUNK / cols;

	if (per < 1)
		per = 1;
	for (int64_t r = 0; r < rows; r += per) {
		int64_t n = rows - r < per ? rows - r : per;
		struct slot *s = slot_get(&k->hs, ti, r == 0, r + n == rows);
		float *row = s->buf;
		for (int64_t i = 0; i < n; i++)
			llm_rope_row(row + i * cols, r + i, local ? c->rope_local_theta : c->rope_theta,
			    local ? &none : &c->rope_scaling, c->head_dim, c->rotary_dim, use_sin);
		s->p = s->buf;
		s->n = (size_t)(n * cols) * sizeof(float);
		if (slot_put(k, o, s) < 0)
			return -1;
	}
	return 0;
}

/* The bytes of n elements of t (whole blocks). */
static size_t
src_bytes(const struct llm_source_tensor *t, uint64_t n)
{
	return (size_t)(n / t->blck * t->bsize);
}

/* add_one: f32 1 + w of each element w of the source (as Gemma 3's
 * RMSNorm computes its scale, in float32). */
static int
write_add_one(struct packer *k, struct llm_out *o, size_t ti, const struct llm_plan_tensor *p,
    const struct llm_source_tensor *t)
{
	size_t n = (size_t)t->nelem;
	const uint8_t *src = t->data;

	for (size_t i = 0; i < n; i += CHUNK) {
		size_t c = n - i < CHUNK ? n - i : CHUNK;
		struct slot *s = slot_get(&k->hs, ti, i == 0, i + c == n);
		float *f = s->buf;
		if (llm_source_read(t, src + src_bytes(t, i), c, LLM_DT_F32, f, k->stage) < 0)
			return llm_seterr("%s: tensor '%s': cannot convert %s to f32", k->m->path, p->name,
			    t->type_name);
		for (size_t j = 0; j < c; j++)
			f[j] = 1.0f + f[j];
		s->p = s->buf;
		s->n = c * sizeof(float);
		if (slot_put(k, o, s) < 0)
			return -1;
	}
	return 0;
}

static int
write_copy(struct packer *k, struct llm_out *o, size_t ti, const struct llm_plan_tensor *p,
    const struct llm_source_tensor *t)
{
	size_t ds = llm_dtype_size(p->dtype);
	size_t n = (size_t)t->nelem;
	const uint8_t *src = t->data;

	for (size_t i = 0; i < n; i += CHUNK) {
		size_t c = n - i < CHUNK ? n - i : CHUNK;
		struct slot *s = slot_get(&k->hs, ti, i == 0, i + c == n);
		s->p = src + src_bytes(t, i);
		if (t->dtype != p->dtype) {
			if (llm_source_read(t, s->p, c, p->dtype, s->buf, k->stage) < 0)
				return llm_seterr("%s: tensor '%s': cannot convert %s to %s", k->m->path, p->name,
				    t->type_name, llm_dtype_name(p->dtype));
			s->p = s->buf;
		}
		s->n = c * ds;
		s->rel = src + src_bytes(t, i);
		s->reln = src_bytes(t, c);
		if (slot_put(k, o, s) < 0)
			return -1;
	}
	return 0;
}

/* The source row of output row r of plan entry ti: r, moved by the
 * transform within its head (heads, see write_rows), then past first_row
 * for a part of a fused tensor. */
static uint64_t
source_row(const struct packer *k, size_t ti, const struct llm_plan_tensor *p, uint64_t r)
{
	uint64_t first = (uint64_t)p->first_row;
	if (!k->ps.heads[ti])
		return first + r;
	uint64_t hd = (uint64_t)p->shape[0] / (uint64_t)k->ps.heads[ti], half = hd / 2;
	uint64_t h = r / hd, j = r % hd;
	if (!k->ps.rotary[ti]) /* unpermute_qk */
		return first + h * hd + (j < half ? 2 * j : 2 * (j - half) + 1);
	/* rotary_halves: the rotated dims' halves (r2 each) then the passed
	 * dims' halves (p2 each) become the head's halves, so that the
	 * rotate-half RoPE of the tables (cos 1 and sin 0 past r2) moves the
	 * first and passes the rest */
	uint64_t rd = (uint64_t)k->m->cfg.rotary_dim, r2 = rd / 2, p2 = (hd - rd) / 2;
	uint64_t c = j / half, i = j % half;
	return first + h * hd + (i < r2 ? c * r2 + i : rd + c * p2 + (i - r2));
}

/* Rows gathered through source_row: unpermute_qk (GGUF files of llama
 * models store the q and k projections with the rows of each head
 * interleaved for llama.cpp's RoPE, which rotates adjacent pairs; Hugging
 * Face and llm rotate halves: output row r of head h, hd rows a head,
 * half = hd/2, is source row h*hd + (r < half ? 2r : 2(r - half) + 1)),
 * rotary_halves (partial rotary embedding, see source_row) and the parts
 * of fused tensors.  Rows (whole blocks of a quantized type: a row is
 * whole blocks) are gathered a chunk at a time into the slot, or into a
 * staging buffer when the type changes. */
static int
write_rows(struct packer *k, struct llm_out *o, size_t ti, const struct llm_plan_tensor *p,
    const struct llm_source_tensor *t)
{
	size_t ds = llm_dtype_size(p->dtype);
	/* a row of the source, and the part of it taken (first_col on) */
	uint64_t rows = (uint64_t)p->shape[0], srclen = t->nelem / (uint64_t)t->shape[0];
	uint64_t rowlen = p->cpart ? (uint64_t)p->shape[1] : srclen;
	size_t rb = src_bytes(t, rowlen), sb = src_bytes(t, srclen);
	uint64_t per = CHUNK / rowlen;
	const uint8_t *src = t->data + (p->cpart ? src_bytes(t, (uint64_t)p->first_col) : 0);
	uint8_t *stage = t->dtype != p->dtype ? llm_xmalloc(CHUNK * sizeof(double)) : NULL;

	for (uint64_t r = 0; r < rows; r += per) {
		uint64_t n = rows - r < per ? rows - r : per;
		struct slot *s = slot_get(&k->hs, ti, r == 0, r + n == rows);
		uint8_t *dst = stage ? stage : s->buf;
		for (uint64_t i = 0; i < n; i++)
			memcpy(dst + i * rb, src + source_row(k, ti, p, r + i) * sb, rb);
		if (stage && llm_source_read(t, stage, n * rowlen, p->dtype, s->buf, k->stage) < 0) {
			free(stage);
			return llm_seterr("%s: tensor '%s': cannot convert %s to %s", k->m->path, p->name, t->type_name,
			    llm_dtype_name(p->dtype));
		}
		s->p = s->buf;
		s->n = n * rowlen * ds;
		if (slot_put(k, o, s) < 0) {
			free(stage);
			return -1;
		}
	}
	free(stage);
	release(t->data, t->nbytes);
	return 0;
}

/* Work on the rows of a block-quantized matrix, shared by the threads
 * that quantize or split them: a range of 8-row tiles (write_tiled) or of
 * rows (write_rounded) of plan tensor ti. */
struct rowjob {
	const struct packer *k;
	size_t ti;
	const struct llm_plan_tensor *p;
	const struct llm_source_tensor *t;
	int64_t first, n; /* tiles or rows */
	uint8_t *out;     /* the tiles' codes, or the rows as f32 */
	uint8_t *sc, *mn; /* write_tiled: the tensor's parts of scales and offsets */
	int rc;           /* 0, -1 a conversion failed, -2 a value not finite */
	int64_t bad;      /* the row of rc -2 */
};

/* The blocks (type qtype) of output row r: copied from a block-quantized
 * source, or the source's row converted to f32 and quantized as
 * llama-quantize would (quantize.c).  f: scratch of a row of f32. */
static int
row_blocks(const struct rowjob *j, uint64_t r, uint8_t *dst, float *f)
{
	const struct llm_source_tensor *t = j->t;
	uint64_t cols = (uint64_t)j->p->shape[1], scols = t->nelem / (uint64_t)t->shape[0];
	uint32_t q = (uint32_t)j->k->ps.qtype[j->ti], blck, size;
	/* a column part (a tensor-parallel rank's) from first_col on: whole
	 * blocks (check_plan) */
	const uint8_t *row = (const uint8_t *)t->data + source_row(j->k, j->ti, j->p, r) * src_bytes(t, scols) +
	    (j->p->cpart ? src_bytes(t, (uint64_t)j->p->first_col) : 0);

	llm_ggml_type_block(q, &blck, &size);
	if (t->quant >= 0) {
		memcpy(dst, row, (size_t)(cols / blck * size));
		return 0;
	}
	if (llm_source_read(t, row, (size_t)cols, LLM_DT_F32, f, NULL) < 0)
		return -1;
	for (uint64_t c = 0; c < cols; c++)
		if (!isfinite(f[c]))
			return -2;
	return llm_quantize(q, f, (size_t)cols, dst);
}

static size_t
qrow_bytes(const struct rowjob *j)
{
	uint32_t blck, size;
	llm_ggml_type_block((uint32_t)j->k->ps.qtype[j->ti], &blck, &size);
	return (size_t)((uint64_t)j->p->shape[1] / blck * size);
}

/* Tiles first .. first + n - 1 into their codes (at out, a tile's codes
 * after another), scales and offsets. */
static void *
tiles_main(void *arg)
{
	struct rowjob *j = arg;
	const struct llm_qlayout *l = &j->p->ql;
	int64_t rows = j->p->shape[0], cols = j->p->shape[1], R = l->rows;
	size_t rb = qrow_bytes(j);
	size_t tbytes = (size_t)(llm_qlayout_scales_at(l, rows, cols) / (uint64_t)(rows / R));
	uint8_t *rowsbuf = llm_xmalloc((size_t)R * rb);
	float *f = llm_xmalloc((size_t)cols * sizeof(float));

	for (int64_t i = 0; i < j->n && !j->rc; i++) {
		int64_t tile = j->first + i;
		for (int64_t r = 0; r < R && !j->rc; r++)
			if ((j->rc = row_blocks(j, (uint64_t)(tile * R + r), rowsbuf + (size_t)r * rb, f)) == -2)
				j->bad = tile * R + r;
		if (!j->rc &&
		    llm_qlayout_tile(l, (uint32_t)j->k->ps.qtype[j->ti], rowsbuf, rows, cols, tile,
			j->out + (size_t)i * tbytes, j->sc, j->mn) < 0)
			j->rc = -1;
	}
	free(rowsbuf);
	free(f);
	return NULL;
}

/* Rows first .. first + n - 1 as the f32 values of their blocks. */
static void *
rounded_main(void *arg)
{
	struct rowjob *j = arg;
	int64_t cols = j->p->shape[1];
	uint8_t *blocks = llm_xmalloc(qrow_bytes(j));
	float *f = llm_xmalloc((size_t)cols * sizeof(float));

	for (int64_t i = 0; i < j->n && !j->rc; i++) {
		if ((j->rc = row_blocks(j, (uint64_t)(j->first + i), blocks, f)) == -2)
			j->bad = j->first + i;
		else if (!j->rc)
			llm_dequantize((uint32_t)j->k->ps.qtype[j->ti], blocks, (float *)j->out + (size_t)(i * cols),
			    (size_t)cols);
	}
	free(blocks);
	free(f);
	return NULL;
}

/* Run fn on job's range split between k->threads threads (each its own
 * part of out, of unit bytes a tile or row); the error, if any, in llm_errmsg. */
static int
run_jobs(const struct packer *k, const struct rowjob *job, size_t unit, void *(*fn)(void *))
{
	struct rowjob parts[64];
	pthread_t th[64];
	int n = k->threads < 1 ? 1 : k->threads > 64 ? 64 : k->threads, started = 0, rc = 0;

	if (n > job->n)
		n = (int)job->n;
	for (int i = 0; i < n; i++) {
		parts[i] = *job;
		parts[i].first = job->first + job->n * i / n;
		parts[i].n = job->first + job->n * (i + 1) / n - parts[i].first;
		parts[i].out = job->out + (size_t)(parts[i].first - job->first) * unit;
	}
	for (int i = 1; i < n; i++, started++)
		if ((errno = pthread_create(&th[i], NULL, fn, &parts[i])) != 0)
			break;
	fn(&parts[0]);
	for (int i = 1; i <= started; i++)
		pthread_join(th[i], NULL);
	for (int i = started + 1; i < n; i++)
		fn(&parts[i]);
	for (int i = 0; i < n && !rc; i++) {
		const struct rowjob *j = &parts[i];
		if (j->rc == -2)
			rc = llm_seterr("%s: tensor '%s': row %" PRId64 " holds a value that is not finite, "
					"which cannot be quantized",
			    k->src_files.files[j->t->file].path, j->t->name, j->bad);
		else if (j->rc)
			rc = llm_seterr("%s: tensor '%s': cannot convert %s to %s blocks", k->m->path, j->p->name,
			    j->t->type_name, llm_ggml_type_name((uint32_t)k->ps.qtype[j->ti]));
	}
	return rc;
}

/* A block-quantized matrix in the tiled layout (quant.h): the codes of
 * as many 8-row tiles as a slot holds at a time (rows gathered through
 * source_row, so unpermute_qk and the rest work the same; a float source quantized
 * first), then the parts of scales and of offsets (quant.h), kept in
 * memory until the codes are written (a 16th or an 8th of the codes'
 * size, as f32). */
static int
write_tiled(struct packer *k, struct llm_out *o, size_t ti, const struct llm_plan_tensor *p,
    const struct llm_source_tensor *t)
{
	const struct llm_qlayout *l = &p->ql;
	int64_t rows = p->shape[0], cols = p->shape[1], R = l->rows;
	size_t rb = src_bytes(t, (uint64_t)cols);
	/* a tile's codes: R rows of cols codes of 8 or 4 bits */
	size_t tbytes = (size_t)(llm_qlayout_scales_at(l, rows, cols) / (uint64_t)(rows / R));
	size_t per = CHUNK * sizeof(float) / tbytes, np = (size_t)llm_qlayout_part_bytes(l, rows, cols);
	const uint8_t *src = t->data;
	uint8_t *sc = llm_xmalloc(np), *mn = l->mins ? llm_xmalloc(np) : NULL;
	int rc = -1;

	if (per < 1) {
		llm_seterr("%s: tensor '%s': rows of %" PRId64 " are too long for a tile (at most %zu)", k->m->path,
		    p->name, cols, CHUNK * sizeof(float) / (size_t)R);
		goto out;
	}
	for (int64_t t0 = 0; t0 < rows / R; t0 += (int64_t)per) {
		int64_t nt = rows / R - t0 < (int64_t)per ? rows / R - t0 : (int64_t)per;
		struct slot *s = slot_get(&k->hs, ti, t0 == 0, 0);
		if (!k->ps.heads[ti] && !p->part) {
			/* rows in order: the chunk's source pages can go once written */
			s->rel = src + (size_t)(t0 * R) * rb;
			s->reln = (size_t)(nt * R) * rb;
		}
		struct rowjob job = {k, ti, p, t, t0, nt, s->buf, sc, mn, 0, 0};
		if (run_jobs(k, &job, tbytes, tiles_main) < 0)
			goto out;
		s->p = s->buf;
		s->n = (size_t)nt * tbytes;
		if (slot_put(k, o, s) < 0)
			goto out;
	}
	for (int part = 0; part < (mn ? 2 : 1); part++) {
		const uint8_t *a = part ? mn : sc;
		size_t cb = CHUNK * sizeof(float);
		for (size_t i = 0; i < np; i += cb) {
			size_t c = np - i < cb ? np - i : cb;
			struct slot *s = slot_get(&k->hs, ti, 0, i + c == np && part == (mn ? 1 : 0));
			memcpy(s->buf, a + i, c);
			s->p = s->buf;
			s->n = c;
			if (slot_put(k, o, s) < 0)
				goto out;
		}
	}
	release(src, t->nbytes);
	rc = 0;
out:
	free(sc);
	free(mn);
	return rc;
}

/* A float matrix quantized here whose shape is not whole tiles (f32 in
 * the plan): the f32 values of its blocks, which are what llama.cpp
 * computes with on the file llama-quantize would write. */
static int
write_rounded(struct packer *k, struct llm_out *o, size_t ti, const struct llm_plan_tensor *p,
    const struct llm_source_tensor *t)
{
	int64_t rows = p->shape[0], cols = p->shape[1];
	int64_t per = (int64_t)CHUNK / cols;

	if (per < 1)
		return llm_seterr("%s: tensor '%s': rows of %" PRId64 " are too long to quantize (at most %zu)",
		    k->m->path, p->name, cols, CHUNK);
	for (int64_t r = 0; r < rows; r += per) {
		int64_t n = rows - r < per ? rows - r : per;
		struct slot *s = slot_get(&k->hs, ti, r == 0, r + n == rows);
		struct rowjob job = {k, ti, p, t, r, n, s->buf, NULL, NULL, 0, 0};
		if (run_jobs(k, &job, (size_t)cols * sizeof(float), rounded_main) < 0)
			return -1;
		s->p = s->buf;
		s->n = (size_t)(n * cols) * sizeof(float);
		if (slot_put(k, o, s) < 0)
			return -1;
	}
	release(t->data, t->nbytes);
	return 0;
}

/* weights.json, keys in the order of formats.txt section 3. */
static json_t *
manifest(struct packer *k, uint64_t sample)
{
	const struct llm_model *m = k->m;
	json_t *r = json_object(), *src = json_object(), *files = json_array(), *ts = json_array();
	uint64_t digest = LLM_FNV_INIT;
	char hex[17];

	for (size_t i = 0; i < m->ntensors; i++)
		digest = llm_weights_digest_step(digest, m->tensors[i].offset, m->tensors[i].bytes, k->sum[i]);
	json_object_set_new(r, "format", json_string(LLM_WEIGHTS_FORMAT));
	llm_hex64(m->fingerprint, hex);
	json_object_set_new(r, "fingerprint", json_string(hex));
	llm_hex64(digest, hex);
	json_object_set_new(r, "digest", json_string(hex));
	llm_hex64(sample, hex);
	json_object_set_new(r, "sample", json_string(hex));
	json_object_set_new(r, "file", json_string(m->weights_file));
	json_object_set_new(r, "header_bytes", json_integer((json_int_t)m->header_bytes));
	json_object_set_new(r, "data_bytes", json_integer((json_int_t)m->data_bytes));
	for (size_t i = 0; i < k->src_files.nfiles; i++) {
		const struct llm_source_file *s = &k->src_files.files[i];
		json_t *o = json_object();
		json_object_set_new(o, "path", json_string(s->path));
		json_object_set_new(o, "size", json_integer((json_int_t)s->size));
		json_object_set_new(o, "mtime_ns", json_integer(s->mtime_ns));
		llm_hex64(s->header_hash, hex);
		json_object_set_new(o, "header_hash", json_string(hex));
		json_array_append_new(files, o);
	}
	json_object_set_new(src, "files", files);
	json_object_set_new(r, "source", src);
	for (size_t i = 0; i < m->ntensors; i++) {
		const struct llm_plan_tensor *p = &m->tensors[i];
		json_t *o = json_object();
		json_object_set_new(o, "name", json_string(p->name));
		json_object_set_new(o, "dtype", json_string(llm_dtype_name(p->dtype)));
		if (p->layout)
			json_object_set_new(o, "layout", json_string(p->layout));
		json_object_set_new(o, "shape", llm_json_i64_array(p->shape, (size_t)p->ndim));
		json_object_set_new(o, "offset", json_integer((json_int_t)p->offset));
		json_object_set_new(o, "bytes", json_integer((json_int_t)p->bytes));
		llm_hex64(k->sum[i], hex);
		json_object_set_new(o, "checksum", json_string(hex));
		json_array_append_new(ts, o);
	}
	json_object_set_new(r, "tensors", ts);
	return r;
}

static int
write_pair(struct packer *k)
{
	const struct llm_model *m = k->m;
	struct llm_out bin = {.fd = -1}, js = {.fd = -1};
	uint8_t hdr[LLM_WEIGHTS_HEADER_BYTES];
	uint64_t pos = 0;
	char *text = NULL;
	int rc, running = 0;
	json_t *j;

	if (llm_out_open(&bin, k->binpath) < 0)
		return -1;
	setvbuf(bin.fp, NULL, _IOFBF, 1 << 20);
	llm_weights_header_encode(hdr, m->fingerprint, m->data_bytes);
	if (put(&bin, hdr, sizeof(hdr)) < 0)
		goto fail;
	rc = hasher_start(&k->hs, m->ntensors);
	k->sum = k->hs.sum;
	if (rc < 0)
		goto fail;
	running = 1;
	for (size_t i = 0; i < m->ntensors; i++) {
		const struct llm_plan_tensor *p = &m->tensors[i];
		k->cur = i;
		/* model.c checked that offsets ascend and tensors do not overlap. */
		if (put_zeros(&bin, p->offset - pos) < 0)
			goto fail;
		const struct llm_source_tensor *t = k->ps.src[i];
		if ((!t ? write_rope(k, &bin, i, p) :
			    p->layout                             ? write_tiled(k, &bin, i, p, t) :
			    k->ps.qtype[i] >= 0 && t->quant < 0   ? write_rounded(k, &bin, i, p, t) :
			    k->ps.heads[i] || p->part || p->cpart ? write_rows(k, &bin, i, p, t) :
			    strcmp(p->transform, "add_one") == 0  ? write_add_one(k, &bin, i, p, t) :
								    write_copy(k, &bin, i, p, t)) < 0)
			goto fail;
		pos = p->offset + p->bytes;
	}
	hasher_stop(&k->hs);
	running = 0;
	if (put_zeros(&bin, m->data_bytes - pos) < 0)
		goto fail;
	if (fflush(bin.fp) != 0) {
		llm_seterr("%s: write error:", k->binpath);
		goto fail;
	}

	/* The sampled blocks, read back from the file as written. */
	struct llm_map wm;
	if (llm_map_file(&wm, bin.tmp ? bin.tmp : bin.path) < 0)
		goto fail;
	uint64_t sample = llm_weights_sample(wm.p, wm.len);
	llm_unmap(&wm);

	/* Both files are complete in their temporaries before either is
	 * renamed, so a failure up to here leaves the old pair intact. */
	j = manifest(k, sample);
	text = llm_json_dumps(j);
	json_decref(j);
	if (llm_out_open(&js, k->jsonpath) < 0)
		goto fail;
	if (put(&js, text, strlen(text)) < 0 || fflush(js.fp) != 0) {
		llm_seterr("%s: write error:", k->jsonpath);
		goto fail;
	}
	llm_progress_end(&k->pr);
	if (llm_out_commit(&bin) < 0)
		goto fail;
	if (llm_out_commit(&js) < 0)
		goto fail;
	free(text);
	return 0;
fail:
	if (running)
		hasher_stop(&k->hs);
	llm_progress_end(&k->pr);
	llm_out_abort(&bin);
	if (js.path)
		llm_out_abort(&js);
	free(text);
	return -1;
}

int
llm_pack_weights(const struct llm_model *m, const char *outdir, const struct llm_pack_opts *o,
    struct llm_pack_stats *st)
{
	struct packer k = {.m = m, .o = o, .threads = o->threads};
	if (k.threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		k.threads = n > 0 ? (int)n : 1;
	}
	int rc = -1;

	memset(st, 0, sizeof(*st));
	llm_progress_begin(&k.pr);
	if (open_sources(&k) < 0 || check_plan(&k) < 0)
		goto out;
	k.outdir = outdir;
	k.binpath = llm_path_join(outdir, m->weights_file);
	k.jsonpath = llm_path_join(outdir, LLM_WEIGHTS_JSON);
	st->ntensors = m->ntensors;
	st->bytes = m->header_bytes + m->data_bytes;
	if (!o->no_reuse && up_to_date(&k)) {
		st->reused = 1;
		rc = 0;
		goto out;
	}
	k.stage = llm_xmalloc(CHUNK * sizeof(float));
	if (llm_mkdirs(outdir) < 0 || write_pair(&k) < 0)
		goto out;
	rc = 0;
out:
	st->seconds = llm_now() - k.pr.t0;
	llm_source_close(&k.src_files);
	llm_plan_sources_free(&k.ps);
	free(k.stage);
	free(k.sum);
	free(k.binpath);
	free(k.jsonpath);
	return rc;
}
