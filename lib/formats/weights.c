/* weights.c: see weights.h. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/json.h"
#include "weights.h"

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

void
llm_weights_header_encode(uint8_t out[LLM_WEIGHTS_HEADER_BYTES], uint64_t fingerprint, uint64_t data_bytes)
{
	memset(out, 0, LLM_WEIGHTS_HEADER_BYTES);
	memcpy(out, LLM_WEIGHTS_MAGIC, 8);
	put32(out + 8, LLM_WEIGHTS_VERSION);
	put32(out + 12, LLM_WEIGHTS_HEADER_BYTES);
	put64(out + 16, fingerprint);
	put64(out + 24, data_bytes);
}

int
llm_weights_header_decode(const uint8_t *p, size_t len, const char *path, struct llm_weights_header *h)
{
	if (len < 32 || memcmp(p, LLM_WEIGHTS_MAGIC, 8) != 0)
		return llm_seterr("%s: not a weights file (bad magic)", path);
	h->version = llm_le32(p + 8);
	h->header_bytes = llm_le32(p + 12);
	h->fingerprint = llm_le64(p + 16);
	h->data_bytes = llm_le64(p + 24);
	if (h->version != LLM_WEIGHTS_VERSION)
		return llm_seterr("%s: unsupported weights version %" PRIu32 " (this program reads %d)", path,
		    h->version, LLM_WEIGHTS_VERSION);
	if (h->header_bytes != LLM_WEIGHTS_HEADER_BYTES)
		return llm_seterr("%s: header_bytes %" PRIu32 " (expected %d)", path, h->header_bytes,
		    LLM_WEIGHTS_HEADER_BYTES);
	return 0;
}

static int check(struct llm_weights *w, const char *path, const struct llm_model *m);

int
llm_weights_open(struct llm_weights *w, const char *path, const struct llm_model *m)
{
	memset(w, 0, sizeof(*w));
	if (llm_map_file(&w->map, path) < 0)
		return -1;
	w->owned = 1;
	return check(w, path, m);
}

int
llm_weights_view(struct llm_weights *w, const uint8_t *p, size_t len, const char *label, const struct llm_model *m)
{
	memset(w, 0, sizeof(*w));
	w->map = (struct llm_map){p, len};
	return check(w, label, m);
}

/* The header of w->map against its size and the plan m; w->path set.
 * On failure w is closed. */
static int
check(struct llm_weights *w, const char *path, const struct llm_model *m)
{
	char a[17], b[17];

	w->path = llm_xstrdup(path);
	if (w->map.len < LLM_WEIGHTS_HEADER_BYTES) {
		llm_seterr("%s: truncated header (%zu bytes)", path, w->map.len);
		goto fail;
	}
	if (llm_weights_header_decode(w->map.p, w->map.len, path, &w->hdr) < 0)
		goto fail;
	if (w->hdr.data_bytes > UINT64_MAX - w->hdr.header_bytes ||
	    w->map.len != w->hdr.header_bytes + w->hdr.data_bytes) {
		llm_seterr("%s: size %zu bytes, header says %" PRIu64, path, w->map.len,
		    (uint64_t)w->hdr.header_bytes + w->hdr.data_bytes);
		goto fail;
	}
	if (m) {
		if (w->hdr.fingerprint != m->fingerprint) {
			llm_hex64(w->hdr.fingerprint, a);
			llm_hex64(m->fingerprint, b);
			llm_seterr("%s: fingerprint %s does not match the plan's %s in %s", path, a, b, m->path);
			goto fail;
		}
		if (w->hdr.header_bytes != m->header_bytes || w->hdr.data_bytes != m->data_bytes) {
			llm_seterr("%s: layout (header %" PRIu32 ", data %" PRIu64 " bytes) differs from "
				   "%s (header %" PRIu64 ", data %" PRIu64 ")",
			    path, w->hdr.header_bytes, w->hdr.data_bytes, m->path, m->header_bytes, m->data_bytes);
			goto fail;
		}
	}
	w->data = w->map.p + w->hdr.header_bytes;
	w->data_bytes = w->hdr.data_bytes;
	return 0;
fail:
	llm_weights_close(w);
	return -1;
}

void
llm_weights_close(struct llm_weights *w)
{
	if (w->owned)
		llm_unmap(&w->map);
	free(w->path);
	memset(w, 0, sizeof(*w));
}

static int
get_hex(const json_t *o, const char *key, const char *ctx, uint64_t *out)
{
	const char *s;
	if (llm_json_str(o, key, ctx, &s) < 0)
		return -1;
	if (llm_parse_hex64(s, out) < 0)
		return llm_seterr("%s: key '%s': expected 16 hex digits", ctx, key);
	return 0;
}

static int manifest_parse(struct llm_weights_manifest *w, json_t *r, const char *path);

static int
load_entry(struct llm_weights_entry *e, json_t *t, size_t i, const char *path)
{
	const char *dt;
	json_t *shape; /* borrowed */
	char c[512];

	snprintf(c, sizeof(c), "%s: tensors[%zu]", path, i);
	if (!json_is_object(t))
		return llm_seterr("%s: expected an object", c);
	if (llm_json_str(t, "name", c, &e->name) < 0)
		return -1;
	snprintf(c, sizeof(c), "%s: tensor '%s'", path, e->name);
	if (llm_json_str(t, "dtype", c, &dt) < 0 || llm_json_u64(t, "offset", c, &e->offset) < 0 ||
	    llm_json_u64(t, "bytes", c, &e->bytes) < 0 || get_hex(t, "checksum", c, &e->checksum) < 0)
		return -1;
	if ((e->dtype = llm_dtype_from_name(dt)) == LLM_DT_NONE)
		return llm_seterr("%s: unknown dtype '%s'", c, dt);
	shape = json_object_get(t, "shape");
	if (!json_is_array(shape) || json_array_size(shape) < 1 || json_array_size(shape) > 4)
		return llm_seterr("%s: 'shape' must be an array of 1 to 4 integers", c);
	e->ndim = (int)json_array_size(shape);
	for (int j = 0; j < e->ndim; j++) {
		json_t *d = json_array_get(shape, (size_t)j);
		if (!json_is_integer(d) || json_integer_value(d) <= 0)
			return llm_seterr("%s: shape[%d]: expected a positive integer", c, j);
		e->shape[j] = json_integer_value(d);
	}
	return 0;
}

int
llm_weights_manifest_load(struct llm_weights_manifest *w, const char *path)
{
	memset(w, 0, sizeof(*w));
	json_t *r = llm_json_load(path);
	return r ? manifest_parse(w, r, path) : -1;
}

int
llm_weights_manifest_loadb(struct llm_weights_manifest *w, const char *buf, size_t len, const char *path)
{
	memset(w, 0, sizeof(*w));
	json_t *r = llm_json_loadb(buf, len, path);
	return r ? manifest_parse(w, r, path) : -1;
}

/* Check root (owned from here) and fill w. */
static int
manifest_parse(struct llm_weights_manifest *w, json_t *r, const char *path)
{
	json_t *o, *a; /* borrowed from r */
	const char *fmt;

	w->root = r;
	if (!json_is_object(r)) {
		llm_seterr("%s: expected a JSON object", path);
		goto fail;
	}
	if (llm_json_str(r, "format", path, &fmt) < 0)
		goto fail;
	if (strncmp(fmt, "llm-weights/", 12) != 0) {
		llm_seterr("%s: not a weights manifest (format '%s')", path, fmt);
		goto fail;
	}
	if (strcmp(fmt, LLM_WEIGHTS_FORMAT) != 0) {
		llm_seterr("%s: unsupported format version '%s' (this program reads %s)", path, fmt,
		    LLM_WEIGHTS_FORMAT);
		goto fail;
	}
	if (get_hex(r, "fingerprint", path, &w->fingerprint) < 0 || get_hex(r, "digest", path, &w->digest) < 0 ||
	    get_hex(r, "sample", path, &w->sample) < 0 || llm_json_str(r, "file", path, &w->file) < 0 ||
	    llm_json_u64(r, "header_bytes", path, &w->header_bytes) < 0 ||
	    llm_json_u64(r, "data_bytes", path, &w->data_bytes) < 0)
		goto fail;

	o = json_object_get(r, "source");
	a = json_is_object(o) ? json_object_get(o, "files") : NULL;
	if (!json_is_array(a)) {
		llm_seterr("%s: key 'source.files': expected an array", path);
		goto fail;
	}
	w->nsources = json_array_size(a);
	w->sources = llm_xcalloc(w->nsources, sizeof(*w->sources));
	for (size_t i = 0; i < w->nsources; i++) {
		struct llm_weights_source *s = &w->sources[i];
		json_t *f = json_array_get(a, i);
		char c[256];
		int64_t mt;
		snprintf(c, sizeof(c), "%s: source.files[%zu]", path, i);
		if (!json_is_object(f)) {
			llm_seterr("%s: expected an object", c);
			goto fail;
		}
		if (llm_json_str(f, "path", c, &s->path) < 0 || llm_json_u64(f, "size", c, &s->size) < 0 ||
		    llm_json_int(f, "mtime_ns", c, &mt) < 0 || get_hex(f, "header_hash", c, &s->header_hash) < 0)
			goto fail;
		s->mtime_ns = mt;
	}

	a = json_object_get(r, "tensors");
	if (!json_is_array(a)) {
		llm_seterr("%s: key 'tensors': expected an array", path);
		goto fail;
	}
	w->ntensors = json_array_size(a);
	w->tensors = llm_xcalloc(w->ntensors, sizeof(*w->tensors));
	for (size_t i = 0; i < w->ntensors; i++) {
		struct llm_weights_entry *e = &w->tensors[i];
		if (load_entry(e, json_array_get(a, i), i, path) < 0)
			goto fail;
		if (e->offset > w->data_bytes || e->bytes > w->data_bytes - e->offset) {
			llm_seterr("%s: tensor '%s': extends past data_bytes", path, e->name);
			goto fail;
		}
	}
	return 0;
fail:
	llm_weights_manifest_free(w);
	return -1;
}

void
llm_weights_manifest_free(struct llm_weights_manifest *w)
{
	free(w->sources);
	free(w->tensors);
	json_decref(w->root);
	memset(w, 0, sizeof(*w));
}

uint64_t
llm_weights_digest_step(uint64_t h, uint64_t offset, uint64_t bytes, uint64_t checksum)
{
	uint8_t b[24];

	put64(b, offset);
	put64(b + 8, bytes);
	put64(b + 16, checksum);
	return llm_fnv1a(h, b, sizeof(b));
}

uint64_t
llm_weights_manifest_digest(const struct llm_weights_manifest *j)
{
	uint64_t h = LLM_FNV_INIT;

	for (size_t i = 0; i < j->ntensors; i++)
		h = llm_weights_digest_step(h, j->tensors[i].offset, j->tensors[i].bytes, j->tensors[i].checksum);
	return h;
}

uint64_t
llm_weights_sample(const uint8_t *p, uint64_t size)
{
	const uint64_t blk = 4096, hb = LLM_WEIGHTS_HEADER_BYTES;
	uint8_t b[8];
	uint64_t h;

	put64(b, size);
	h = llm_fnv1a(LLM_FNV_INIT, b, sizeof(b));
	h = llm_fnv1a(h, p, (size_t)(size < hb ? size : hb));
	if (size <= hb)
		return h;
	uint64_t data = size - hb, span = data > blk ? data - blk : 0;
	for (uint64_t k = 0; k < LLM_WEIGHTS_SAMPLE_BLOCKS; k++) {
		uint64_t off = hb + span * k / (LLM_WEIGHTS_SAMPLE_BLOCKS - 1) / blk * blk;
		h = llm_fnv1a(h, p + off, (size_t)(size - off < blk ? size - off : blk));
	}
	return h;
}

int
llm_weights_check(const uint8_t *p, uint64_t size, const char *label, const struct llm_weights_manifest *j)
{
	struct llm_weights_header hd;

	if (llm_weights_header_decode(p, (size_t)size, label, &hd) < 0)
		return -1;
	if (hd.fingerprint != j->fingerprint || hd.data_bytes != j->data_bytes || hd.header_bytes != j->header_bytes ||
	    size != j->header_bytes + j->data_bytes)
		return llm_seterr("%s: does not match weights.json (another plan's weights?)", label);
	if (llm_weights_manifest_digest(j) != j->digest)
		return llm_seterr("%s: weights.json's checksums do not give its digest (edited by hand?)", label);
	if (llm_weights_sample(p, size) != j->sample)
		return llm_seterr("%s: sampled blocks differ from weights.json's record (other or damaged weights)",
		    label);
	return 0;
}

#define VERIFY_PIECE ((size_t)64 << 20)
#define VERIFY_THREADS 8

/* The checksum pass, shared out over threads: each takes the next
 * tensor not yet taken (FNV-1a is serial within a tensor), in pieces so
 * that the calling thread can draw the progress of all of them. */
struct verify {
	const uint8_t *data;
	const struct llm_weights_manifest *j;
	uint64_t *sums; /* per tensor */
	atomic_size_t next;
	atomic_uint_fast64_t done;
	uint64_t total;
	const char *label;
};

static void
verify_share(struct verify *v, struct llm_progress *pr)
{
	for (;;) {
		size_t i = atomic_fetch_add(&v->next, 1);
		if (i >= v->j->ntensors)
			return;
		const struct llm_weights_entry *e = &v->j->tensors[i];
		const uint8_t *t = v->data + e->offset;
		uint64_t h = LLM_FNV_INIT;
		for (uint64_t at = 0; at < e->bytes; at += VERIFY_PIECE) {
			size_t n = e->bytes - at < VERIFY_PIECE ? (size_t)(e->bytes - at) : VERIFY_PIECE;
			h = llm_fnv1a(h, t + at, n);
			uint64_t done = atomic_fetch_add(&v->done, n) + n;
			if (pr)
				llm_progress_show(pr, v->label, done, v->total, "checking ");
		}
		v->sums[i] = h;
	}
}

static void *
verify_main(void *arg)
{
	verify_share(arg, NULL);
	return NULL;
}

int
llm_weights_verify_map(const uint8_t *p, uint64_t size, const char *label, const struct llm_weights_manifest *j)
{
	char a[17], b[17];
	struct llm_progress pr;
	pthread_t th[VERIFY_THREADS - 1];
	int nth = 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (llm_weights_check(p, size, label, j) < 0)
		return -1;
	struct verify v = {.data = p + j->header_bytes, .j = j, .label = label};
	v.sums = llm_xcalloc(j->ntensors ? j->ntensors : 1, sizeof(*v.sums));
	atomic_init(&v.next, 0);
	atomic_init(&v.done, 0);
	for (size_t i = 0; i < j->ntensors; i++)
		v.total += j->tensors[i].bytes;
	llm_progress_begin(&pr);
	/* Best effort: a thread that cannot start leaves its share to the others. */
	while (nth + 1 < VERIFY_THREADS && nth + 1 < cpus && (size_t)nth + 1 < j->ntensors &&
	    pthread_create(&th[nth], NULL, verify_main, &v) == 0)
		nth++;
	verify_share(&v, &pr);
	for (int t = 0; t < nth; t++)
		pthread_join(th[t], NULL);
	llm_progress_end(&pr);
	/* The first tensor that differs, in file order, whatever thread saw it. */
	for (size_t i = 0; i < j->ntensors; i++) {
		const struct llm_weights_entry *e = &j->tensors[i];
		if (v.sums[i] != e->checksum) {
			llm_hex64(v.sums[i], a);
			llm_hex64(e->checksum, b);
			free(v.sums);
			return llm_seterr("%s: tensor '%s': checksum %s, weights.json says %s", label, e->name, a, b);
		}
	}
	free(v.sums);
	return 0;
}

int
llm_weights_verify(const struct llm_weights *w, const struct llm_weights_manifest *j)
{
	return llm_weights_verify_map(w->map.p, w->map.len, w->path, j);
}
