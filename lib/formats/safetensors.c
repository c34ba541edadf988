/* safetensors.c: see safetensors.h.
 *
 * Every file is mapped read-only and its header validated in full before a
 * tensor is handed out, so a truncated or hostile file gives a one-line
 * error naming the file, never a read outside the mapping.  For a sharded
 * checkpoint the index and the shards must agree exactly: every tensor the
 * index names is in the shard it names, and no shard holds a tensor the
 * index does not list. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../base/json.h"
#include "safetensors.h"

/* A header this large is not a model header but a corrupt length field. */
#define MAX_HEADER (100u << 20)

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

/* Growable tensor array used while loading. */
struct tlist {
	struct llm_st_tensor *v;
	size_t n, cap;
};

static struct llm_st_tensor *
tlist_add(struct tlist *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = llm_xreallocarray(l->v, l->cap, sizeof(*l->v));
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	return &l->v[l->n++];
}

/* A name from the file, fit for a one-line message. */
static const char *
shown(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return "(name with control characters)";
	return s;
}

static int
get_u64(const json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* Parse one tensor entry of the header of file `path`. */
static int
parse_tensor(struct llm_st_tensor *t, const char *path, const char *name, const json_t *e, const uint8_t *data,
    uint64_t datalen)
{
	const json_t *dt, *shape, *offs; /* borrowed from e */
	uint64_t begin, end, nelem = 1, nbytes;

	t->name = llm_xstrdup(name);
	name = shown(name);
	if (!json_is_object(e))
		return llm_seterr("%s: tensor '%s': expected an object", path, name);
	dt = json_object_get(e, "dtype");
	if (!json_is_string(dt))
		return llm_seterr("%s: tensor '%s': %s 'dtype'", path, name, dt ? "non-string" : "missing");
	t->dtype = llm_dtype_from_st_name(json_string_value(dt));
	if (t->dtype == LLM_DT_NONE)
		return llm_seterr("%s: tensor '%s': unknown dtype '%s'", path, name, shown(json_string_value(dt)));
	shape = json_object_get(e, "shape");
	if (!json_is_array(shape))
		return llm_seterr("%s: tensor '%s': %s 'shape'", path, name, shape ? "non-array" : "missing");
	if (json_array_size(shape) > LLM_MAX_DIMS)
		return llm_seterr("%s: tensor '%s': %zu dimensions (at most %d supported)", path, name,
		    json_array_size(shape), LLM_MAX_DIMS);
	t->ndim = (int)json_array_size(shape);
	for (int i = 0; i < t->ndim; i++) {
		const json_t *d = json_array_get(shape, (size_t)i);
		uint64_t v;
		if (get_u64(d, &v) < 0)
			return llm_seterr("%s: tensor '%s': shape[%d] is not a non-negative integer", path, name, i);
		t->shape[i] = (int64_t)v;
		if (__builtin_mul_overflow(nelem, v, &nelem) || nelem > INT64_MAX)
			return llm_seterr("%s: tensor '%s': shape product overflows", path, name);
	}
	offs = json_object_get(e, "data_offsets");
	if (!json_is_array(offs) || json_array_size(offs) != 2 || get_u64(json_array_get(offs, 0), &begin) < 0 ||
	    get_u64(json_array_get(offs, 1), &end) < 0)
		return llm_seterr("%s: tensor '%s': %s", path, name,
		    offs ? "'data_offsets' is not two non-negative integers" : "missing 'data_offsets'");
	if (begin > end)
		return llm_seterr("%s: tensor '%s': data_offsets [%llu, %llu] begin after end", path, name,
		    (unsigned long long)begin, (unsigned long long)end);
	if (end > datalen)
		return llm_seterr("%s: tensor '%s': data_offsets [%llu, %llu] outside the file "
				  "(data area is %llu bytes)",
		    path, name, (unsigned long long)begin, (unsigned long long)end, (unsigned long long)datalen);
	if (__builtin_mul_overflow(nelem, (uint64_t)llm_dtype_size(t->dtype), &nbytes))
		return llm_seterr("%s: tensor '%s': byte size overflows", path, name);
	if (nbytes != end - begin)
		return llm_seterr("%s: tensor '%s': shape and dtype %s give %llu bytes "
				  "but data_offsets span %llu",
		    path, name, llm_dtype_st_name(t->dtype), (unsigned long long)nbytes,
		    (unsigned long long)(end - begin));
	t->nelem = (int64_t)nelem;
	t->nbytes = (size_t)nbytes;
	t->data = data + begin;
	t->offset = begin; /* made file-relative by the caller */
	return 0;
}

static int
cmp_offset(const void *a, const void *b)
{
	const struct llm_st_tensor *x = *(struct llm_st_tensor *const *)a;
	const struct llm_st_tensor *y = *(struct llm_st_tensor *const *)b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

/* No two non-empty tensors of one file may share a byte. */
static int
check_overlap(struct llm_st_tensor *t, size_t n, const char *path)
{
	struct llm_st_tensor **s = llm_xreallocarray(NULL, n, sizeof(*s));
	const struct llm_st_tensor *prev = NULL;
	size_t m = 0;
	int rc = 0;

	for (size_t i = 0; i < n; i++)
		if (t[i].nbytes)
			s[m++] = &t[i];
	qsort(s, m, sizeof(*s), cmp_offset);
	for (size_t i = 0; i < m; i++) {
		if (prev && s[i]->offset < prev->offset + prev->nbytes) {
			rc = llm_seterr("%s: tensors '%s' and '%s' overlap", path, shown(prev->name),
			    shown(s[i]->name));
			break;
		}
		prev = s[i];
	}
	free(s);
	return rc;
}

/* Map file number fi (path already set) and append its tensors to l. */
static int
load_file(struct llm_st_file *f, int fi, struct tlist *l)
{
	json_error_t je;
	json_t *h, *e; /* h owned; e borrowed */
	const char *key;
	struct stat sb;
	uint64_t n, datalen, hstart;
	size_t first = l->n;
	int rc = 0;

	if (llm_map_file(&f->map, f->path) < 0)
		return -1;
	if (stat(f->path, &sb) < 0)
		return llm_seterr("%s:", f->path);
	f->size = f->map.len;
	f->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
	if (f->map.len < 8)
		return llm_seterr("%s: too short for a safetensors file (%zu bytes)", f->path, f->map.len);
	n = llm_le64(f->map.p);
	if (n > MAX_HEADER)
		return llm_seterr("%s: header length %llu is absurd (limit %u bytes)", f->path, (unsigned long long)n,
		    MAX_HEADER);
	if (n > f->map.len - 8)
		return llm_seterr("%s: header length %llu exceeds the file size (%zu bytes)", f->path,
		    (unsigned long long)n, f->map.len);
	hstart = 8 + n;
	datalen = f->map.len - hstart;
	f->header_hash = llm_fnv1a(LLM_FNV_INIT, f->map.p, (size_t)hstart);
	h = json_loadb((const char *)f->map.p + 8, (size_t)n, JSON_REJECT_DUPLICATES, &je);
	if (!h)
		return llm_seterr("%s: bad header JSON at line %d column %d: %s", f->path, je.line, je.column, je.text);
	if (!json_is_object(h)) {
		json_decref(h);
		return llm_seterr("%s: header is not a JSON object", f->path);
	}
	json_object_foreach (h, key, e) {
		if (strcmp(key, "__metadata__") == 0) {
			const char *k;
			json_t *v; /* borrowed */
			if (!json_is_object(e)) {
				rc = llm_seterr("%s: '__metadata__' is not an object", f->path);
				break;
			}
			json_object_foreach (e, k, v)
				if (!json_is_string(v)) {
					rc = llm_seterr("%s: __metadata__ '%s' is not a string", f->path, shown(k));
					break;
				}
			if (rc)
				break;
			continue;
		}
		struct llm_st_tensor *t = tlist_add(l);
		t->file = fi;
		if ((rc = parse_tensor(t, f->path, key, e, f->map.p + hstart, datalen)) < 0)
			break;
	}
	json_decref(h);
	if (rc == 0)
		rc = check_overlap(l->v + first, l->n - first, f->path);
	for (size_t i = first; i < l->n; i++)
		l->v[i].offset += hstart;
	return rc;
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct llm_st_tensor *)a)->name, ((const struct llm_st_tensor *)b)->name);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void
add_file(struct llm_safetensors *st, char *path)
{
	st->files = llm_xreallocarray(st->files, (size_t)st->nfiles + 1, sizeof(*st->files));
	memset(&st->files[st->nfiles], 0, sizeof(st->files[0]));
	st->files[st->nfiles++].path = path;
}

/* Shard names come from a file we do not trust: keep them inside the
 * checkpoint directory. */
static int
safe_name(const char *s)
{
	if (!*s || s[0] == '/' || shown(s) != s)
		return 0;
	for (const char *p = s; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		if (*p)
			p++;
	}
	return 1;
}

static char *
dir_of(const char *path)
{
	const char *s = strrchr(path, '/');
	if (!s)
		return llm_xstrdup(".");
	if (s == path)
		return llm_xstrdup("/");
	char *d = llm_xstrdup(path);
	d[s - path] = 0;
	return d;
}

/* Sort by name and move the tensors into st; names must be unique (a
 * single file cannot repeat one: jansson rejects duplicate keys). */
static int
finish(struct llm_safetensors *st, struct tlist *l)
{
	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_name);
	st->tensors = l->v;
	st->ntensors = l->n;
	l->v = NULL;
	l->n = 0;
	for (size_t i = 1; i < st->ntensors; i++)
		if (strcmp(st->tensors[i].name, st->tensors[i - 1].name) == 0) {
			const struct llm_st_tensor *a = &st->tensors[i - 1], *b = &st->tensors[i];
			if (a->file > b->file) {
				const struct llm_st_tensor *t = a;
				a = b;
				b = t;
			}
			return llm_seterr("%s: tensor '%s' is also in %s", st->files[b->file].path, shown(b->name),
			    st->files[a->file].path);
		}
	return 0;
}

/* Load the index, then its shards in name order, and check that both
 * agree: every tensor of a shard is listed, every listed tensor is in the
 * shard the index names. */
static int
load_index(struct llm_safetensors *st, const char *ipath, struct tlist *l)
{
	json_t *ix, *wm, *v; /* ix owned; wm and v borrowed from it */
	const char *key;
	const char **shards = NULL; /* borrowed from ix */
	char *dir = NULL;
	size_t nshards = 0;
	int rc = -1;

	if (!(ix = llm_json_load(ipath)))
		return -1;
	wm = json_is_object(ix) ? json_object_get(ix, "weight_map") : NULL;
	if (!json_is_object(ix)) {
		llm_seterr("%s: not a JSON object", ipath);
		goto out;
	}
	if (!json_is_object(wm)) {
		llm_seterr("%s: %s 'weight_map'", ipath, wm ? "non-object" : "missing");
		goto out;
	}
	if (json_object_size(wm) == 0) {
		llm_seterr("%s: empty 'weight_map'", ipath);
		goto out;
	}
	shards = llm_xreallocarray(NULL, json_object_size(wm), sizeof(*shards));
	json_object_foreach (wm, key, v) {
		if (!json_is_string(v)) {
			llm_seterr("%s: weight_map: tensor '%s': shard name is not a string", ipath, shown(key));
			goto out;
		}
		if (!safe_name(json_string_value(v))) {
			llm_seterr("%s: weight_map: tensor '%s': bad shard name '%s'", ipath, shown(key),
			    shown(json_string_value(v)));
			goto out;
		}
		shards[nshards++] = json_string_value(v);
	}
	qsort(shards, nshards, sizeof(*shards), cmp_str);
	dir = dir_of(ipath);
	for (size_t i = 0; i < nshards; i++) {
		if (i && strcmp(shards[i], shards[i - 1]) == 0)
			continue;
		char *p = llm_path_join(dir, shards[i]);
		if (!llm_file_exists(p)) {
			llm_seterr("%s: shard %s:", ipath, p);
			free(p);
			goto out;
		}
		add_file(st, p);
		if (load_file(&st->files[st->nfiles - 1], st->nfiles - 1, l) < 0)
			goto out;
	}
	for (size_t i = 0; i < l->n; i++)
		if (!json_object_get(wm, l->v[i].name)) {
			llm_seterr("%s: tensor '%s' is not listed in %s", st->files[l->v[i].file].path,
			    shown(l->v[i].name), ipath);
			goto out;
		}
	if (finish(st, l) < 0)
		goto out;
	json_object_foreach (wm, key, v) {
		const struct llm_st_tensor *t = llm_st_find(st, key);
		char *want = llm_path_join(dir, json_string_value(v));
		int bad = !t || strcmp(st->files[t->file].path, want) != 0;
		if (!t)
			llm_seterr("%s: no tensor '%s' (named by %s)", want, shown(key), ipath);
		else if (bad)
			llm_seterr("%s: no tensor '%s' (named by %s; it is in %s)", want, shown(key), ipath,
			    st->files[t->file].path);
		free(want);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	free(dir);
	free(shards);
	json_decref(ix);
	return rc;
}

static int
ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int
llm_st_open(struct llm_safetensors *st, const char *path)
{
	struct tlist l = {0};
	struct stat sb;
	char *ipath = NULL;
	int rc;

	memset(st, 0, sizeof(*st));
	if (stat(path, &sb) < 0)
		return llm_seterr("%s:", path);
	if (S_ISDIR(sb.st_mode)) {
		char *p = llm_path_join(path, INDEX_NAME);
		if (llm_file_exists(p))
			ipath = p;
		else {
			free(p);
			p = llm_path_join(path, SINGLE_NAME);
			if (!llm_file_exists(p)) {
				free(p);
				return llm_seterr("%s: no %s or %s", path, INDEX_NAME, SINGLE_NAME);
			}
			add_file(st, p);
		}
	} else if (ends_with(path, ".json"))
		ipath = llm_xstrdup(path);
	else
		add_file(st, llm_xstrdup(path));

	if (ipath)
		rc = load_index(st, ipath, &l);
	else
		rc = load_file(&st->files[0], 0, &l) < 0 ? -1 : finish(st, &l);
	if (rc < 0) {
		for (size_t i = 0; i < l.n; i++)
			free(l.v[i].name);
		free(l.v);
		llm_st_close(st);
	}
	free(ipath);
	return rc;
}

const struct llm_st_tensor *
llm_st_find(const struct llm_safetensors *st, const char *name)
{
	size_t lo = 0, hi = st->ntensors;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(name, st->tensors[mid].name);
		if (c == 0)
			return &st->tensors[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

void
llm_st_close(struct llm_safetensors *st)
{
	for (size_t i = 0; i < st->ntensors; i++)
		free(st->tensors[i].name);
	free(st->tensors);
	for (int i = 0; i < st->nfiles; i++) {
		llm_unmap(&st->files[i].map);
		free(st->files[i].path);
	}
	free(st->files);
	memset(st, 0, sizeof(*st));
}
