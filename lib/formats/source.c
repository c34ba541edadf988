/* source.c: see source.h.  The entries are a flat, name-sorted view over
 * the readers' own tables: nothing is copied but the shapes. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "quant.h"
#include "source.h"
#include "../base/util.h"

enum llm_source_kind
llm_source_kind_from_name(const char *s)
{
	if (strcmp(s, "safetensors") == 0)
		return LLM_SOURCE_SAFETENSORS;
	if (strcmp(s, "gguf") == 0)
		return LLM_SOURCE_GGUF;
	return 0;
}

const char *
llm_source_kind_name(enum llm_source_kind k)
{
	return k == LLM_SOURCE_SAFETENSORS ? "safetensors" : k == LLM_SOURCE_GGUF ? "gguf" : "?";
}

static int
cmp_tensor(const void *a, const void *b)
{
	const struct llm_source_tensor *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	return x->file < y->file ? -1 : x->file > y->file;
}

/* Add the tensors and files of safetensors reader st. */
static void
add_st(struct llm_source *s, const struct llm_safetensors *st)
{
	size_t f0 = s->nfiles;

	s->files = llm_xreallocarray(s->files, s->nfiles + (size_t)st->nfiles, sizeof(*s->files));
	for (int i = 0; i < st->nfiles; i++) {
		struct llm_source_file *f = &s->files[s->nfiles++];
		f->path = st->files[i].path;
		f->size = st->files[i].size;
		f->mtime_ns = st->files[i].mtime_ns;
		f->header_hash = st->files[i].header_hash;
	}
	s->tensors = llm_xreallocarray(s->tensors, s->ntensors + st->ntensors, sizeof(*s->tensors));
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct llm_st_tensor *t = &st->tensors[i];
		struct llm_source_tensor *o = &s->tensors[s->ntensors++];
		memset(o, 0, sizeof(*o));
		o->name = t->name;
		o->dtype = t->dtype;
		o->type_name = llm_dtype_st_name(t->dtype);
		o->quant = -1;
		o->blck = 1;
		o->bsize = (uint32_t)llm_dtype_size(t->dtype);
		o->ndim = t->ndim;
		for (int d = 0; d < t->ndim && d < LLM_SOURCE_MAX_DIMS; d++)
			o->shape[d] = t->shape[d];
		o->nelem = (uint64_t)t->nelem;
		o->data = t->data;
		o->nbytes = t->nbytes;
		o->file = f0 + (size_t)t->file;
	}
}

static void
add_gguf(struct llm_source *s, const struct llm_gguf *g)
{
	struct llm_source_file *f;

	s->files = llm_xreallocarray(s->files, s->nfiles + 1, sizeof(*s->files));
	f = &s->files[s->nfiles++];
	f->path = g->path;
	f->size = g->size;
	f->mtime_ns = g->mtime_ns;
	f->header_hash = g->header_hash;
	s->tensors = llm_xreallocarray(s->tensors, s->ntensors + g->ntensors, sizeof(*s->tensors));
	for (size_t i = 0; i < g->ntensors; i++) {
		const struct llm_gguf_tensor *t = &g->tensors[i];
		struct llm_source_tensor *o = &s->tensors[s->ntensors++];
		memset(o, 0, sizeof(*o));
		o->name = t->name;
		o->dtype = t->dtype;
		o->type_name = llm_ggml_type_name(t->ggml_type);
		o->quant = t->dtype == LLM_DT_NONE && llm_quant_supported(t->ggml_type) ? (int32_t)t->ggml_type : -1;
		llm_ggml_type_block(t->ggml_type, &o->blck, &o->bsize);
		o->ndim = t->n_dims;
		for (int d = 0; d < t->n_dims; d++)
			o->shape[d] = t->shape[d];
		o->nelem = t->nelem;
		o->data = t->data;
		o->nbytes = t->nbytes;
		o->file = s->nfiles - 1;
	}
}

static void
finish(struct llm_source *s)
{
	if (s->ntensors)
		qsort(s->tensors, s->ntensors, sizeof(*s->tensors), cmp_tensor);
}

static int
open_gguf(struct llm_source *s, const char *path)
{
	s->kind = LLM_SOURCE_GGUF;
	s->gguf = llm_xcalloc(1, sizeof(*s->gguf));
	if (llm_gguf_open(s->gguf, path) < 0) {
		free(s->gguf);
		s->gguf = NULL;
		return -1;
	}
	add_gguf(s, s->gguf);
	return 0;
}

int
llm_source_open(struct llm_source *s, const char *kind, const char *dir, const char *const *files, size_t nfiles)
{
	memset(s, 0, sizeof(*s));
	s->kind = llm_source_kind_from_name(kind);
	s->name = llm_xstrdup(dir);
	if (!s->kind) {
		llm_seterr("%s: source kind '%s' is not supported (safetensors or gguf)", dir, kind);
		goto fail;
	}
	if (nfiles == 0) {
		llm_seterr("%s: no source files", dir);
		goto fail;
	}
	if (s->kind == LLM_SOURCE_GGUF) {
		if (nfiles != 1) {
			llm_seterr("%s: a gguf source is one file, not %zu", dir, nfiles);
			goto fail;
		}
		char *p = llm_path_join(dir, files[0]);
		int rc = open_gguf(s, p);
		free(p);
		if (rc < 0)
			goto fail;
	} else {
		s->st = llm_xcalloc(nfiles, sizeof(*s->st));
		for (size_t i = 0; i < nfiles; i++) {
			char *p = llm_path_join(dir, files[i]);
			int rc = llm_st_open(&s->st[i], p);
			free(p);
			if (rc < 0)
				goto fail;
			s->nst = i + 1;
			add_st(s, &s->st[i]);
		}
	}
	finish(s);
	return 0;
fail:
	llm_source_close(s);
	return -1;
}

int
llm_source_open_path(struct llm_source *s, const char *path)
{
	struct stat sb;

	memset(s, 0, sizeof(*s));
	s->name = llm_xstrdup(path);
	if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		if (open_gguf(s, path) < 0)
			goto fail;
	} else {
		s->kind = LLM_SOURCE_SAFETENSORS;
		s->st = llm_xcalloc(1, sizeof(*s->st));
		if (llm_st_open(&s->st[0], path) < 0)
			goto fail;
		s->nst = 1;
		add_st(s, &s->st[0]);
	}
	finish(s);
	return 0;
fail:
	llm_source_close(s);
	return -1;
}

void
llm_source_close(struct llm_source *s)
{
	for (size_t i = 0; i < s->nst; i++)
		llm_st_close(&s->st[i]);
	free(s->st);
	if (s->gguf) {
		llm_gguf_close(s->gguf);
		free(s->gguf);
	}
	free(s->files);
	free(s->tensors);
	free(s->name);
	memset(s, 0, sizeof(*s));
}

const struct llm_source_tensor *
llm_source_find(const struct llm_source *s, const char *name, int *err)
{
	size_t lo = 0, hi = s->ntensors;

	*err = 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(s->tensors[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->ntensors || strcmp(s->tensors[lo].name, name) != 0)
		return NULL;
	if (lo + 1 < s->ntensors && strcmp(s->tensors[lo + 1].name, name) == 0) {
		*err = llm_seterr("%s: tensor '%s' is also in %s", s->files[s->tensors[lo + 1].file].path, name,
		    s->files[s->tensors[lo].file].path);
		return NULL;
	}
	return &s->tensors[lo];
}

int
llm_source_tensor_readable(const struct llm_source_tensor *t)
{
	return t->quant >= 0 || llm_dtype_is_float_weight(t->dtype) || t->dtype == LLM_DT_F64;
}

int
llm_source_read(const struct llm_source_tensor *t, const void *src, size_t n, enum llm_dtype dt, void *dst,
    float *stage)
{
	if (t->quant < 0)
		return llm_convert(dst, dt, src, t->dtype, n);
	float *f = dt == LLM_DT_F32 ? dst : stage;
	llm_dequantize((uint32_t)t->quant, src, f, n);
	return f == dst ? 0 : llm_convert(dst, dt, f, LLM_DT_F32, n);
}

int
llm_gguf_tensor_loadable(const struct llm_gguf *g, const struct llm_gguf_tensor *t)
{
	char b[300];

	if (t->ggml_type == LLM_GGML_F32 || t->ggml_type == LLM_GGML_F16 || t->ggml_type == LLM_GGML_BF16 ||
	    llm_quant_supported(t->ggml_type))
		return 0;
	return llm_seterr("%s: tensor '%s' has type %s, which %s does not support (it reads F32, F16, "
			  "BF16, %s)",
	    g->path, llm_gguf_shown(b, sizeof(b), t->name), llm_ggml_type_name(t->ggml_type), llm_prog,
	    llm_quant_supported_names());
}
