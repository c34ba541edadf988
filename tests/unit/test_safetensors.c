/* Unit tests for lib/formats/safetensors.c: valid single and sharded checkpoints,
 * every header validation, and truncated or corrupted files (which must
 * fail cleanly or yield only in-bounds tensors, never crash). */
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/formats/safetensors.h"
#include "t.h"

static int nfile;

/* Write DIR/NAME (DIR under t_tmpdir(), created) from raw bytes. */
static char *
write_raw(const char *dir, const char *name, const void *p, size_t n)
{
	char *d = llm_path_join(t_tmpdir(), dir);
	char *path = llm_path_join(d, name);
	FILE *fp;
	/* Plain stdio, not llm_write_file: its fsync makes the fuzz loop slow;
	 * a new file rather than a truncated one, which ext4 flushes on close. */
	unlink(path);
	if (llm_mkdirs(d) < 0 || !(fp = fopen(path, "wb")) || fwrite(p, 1, n, fp) != n || fclose(fp) != 0) {
		perror(path);
		exit(2);
	}
	free(d);
	return path;
}

/* A safetensors file: the u64 LE length `hlen` (normally strlen(header)),
 * the header, then `datalen` bytes (from data, or a byte pattern). */
static char *
write_st_len(const char *dir, const char *name, uint64_t hlen, const char *header, const void *data, size_t datalen)
{
	struct llm_buf b = {0};
	uint8_t len[8];
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(hlen >> (8 * i));
	llm_buf_add(&b, len, 8);
	llm_buf_puts(&b, header);
	for (size_t i = 0; i < datalen; i++) {
		uint8_t c = data ? ((const uint8_t *)data)[i] : (uint8_t)(i * 7 + 1);
		llm_buf_add(&b, &c, 1);
	}
	char *path = write_raw(dir, name, b.p, b.len);
	llm_buf_free(&b);
	return path;
}

static char *
write_st(const char *header, size_t datalen)
{
	char name[64];
	snprintf(name, sizeof(name), "f%d.safetensors", nfile++);
	return write_st_len("single", name, strlen(header), header, NULL, datalen);
}

/* Every tensor lies inside its file, is consistent, and names are sorted
 * and unique: what a caller may rely on after a successful open. */
static int
invariants(const struct llm_safetensors *st)
{
	for (size_t i = 0; i < st->ntensors; i++) {
		const struct llm_st_tensor *t = &st->tensors[i];
		if (t->file < 0 || t->file >= st->nfiles)
			return 0;
		const struct llm_st_file *f = &st->files[t->file];
		if (t->offset > f->size || t->nbytes > f->size - t->offset)
			return 0;
		if ((const uint8_t *)t->data != f->map.p + t->offset)
			return 0;
		if ((uint64_t)t->nelem * llm_dtype_size(t->dtype) != t->nbytes)
			return 0;
		int64_t n = 1;
		for (int d = 0; d < t->ndim; d++)
			n *= t->shape[d];
		if (n != t->nelem || t->ndim < 0 || t->ndim > LLM_MAX_DIMS)
			return 0;
		if (i && strcmp(st->tensors[i - 1].name, t->name) >= 0)
			return 0;
		if (llm_st_find(st, t->name) != t)
			return 0;
	}
	return 1;
}

/* Opening fails cleanly with a one-line message that names a file under
 * our directory and contains `want`. */
static int
open_fails(const char *path, const char *want)
{
	struct llm_safetensors st;
	if (llm_st_open(&st, path) == 0) {
		fprintf(stderr, "  %s: opened, wanted '%s'\n", path, want);
		llm_st_close(&st);
		return 0;
	}
	const char *m = llm_errmsg();
	if (st.nfiles || st.files || st.ntensors || st.tensors || strncmp(m, t_tmpdir(), strlen(t_tmpdir())) != 0 ||
	    strchr(m, '\n') || !strstr(m, want)) {
		fprintf(stderr, "  message: '%s'\n  wanted:  '%s'\n", m, want);
		return 0;
	}
	return 1;
}

T_TEST(valid_single_file)
{
	/* Tensors deliberately out of name order and with a gap. */
	const char *h = "{\"__metadata__\": {\"format\": \"pt\"},"
			" \"b\": {\"dtype\": \"F32\", \"shape\": [2, 3], \"data_offsets\": [0, 24]},"
			" \"a\": {\"dtype\": \"BF16\", \"shape\": [4], \"data_offsets\": [24, 32]},"
			" \"scalar\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [40, 48]},"
			" \"empty\": {\"dtype\": \"F16\", \"shape\": [0, 5], \"data_offsets\": [48, 48]}}";
	uint8_t data[48];
	for (int i = 0; i < 48; i++)
		data[i] = (uint8_t)i;
	char *path = write_st_len("single", "valid.safetensors", strlen(h), h, data, 48);
	struct llm_safetensors st;
	struct stat sb;
	T_CHECKF(llm_st_open(&st, path) == 0, "%s", llm_errmsg());
	T_CHECK(st.nfiles == 1 && strcmp(st.files[0].path, path) == 0);
	T_CHECK(st.ntensors == 4);
	T_CHECK(invariants(&st));
	T_CHECK(strcmp(st.tensors[0].name, "a") == 0 && strcmp(st.tensors[3].name, "scalar") == 0);
	const struct llm_st_tensor *b = llm_st_find(&st, "b");
	T_CHECK(b && b->dtype == LLM_DT_F32 && b->ndim == 2 && b->shape[0] == 2 && b->shape[1] == 3);
	T_CHECK(b->nelem == 6 && b->nbytes == 24 && b->offset == 8 + strlen(h));
	T_CHECK(memcmp(b->data, data, 24) == 0);
	const struct llm_st_tensor *a = llm_st_find(&st, "a");
	T_CHECK(a && a->dtype == LLM_DT_BF16 && a->nelem == 4 && memcmp(a->data, data + 24, 8) == 0);
	const struct llm_st_tensor *s = llm_st_find(&st, "scalar");
	T_CHECK(s && s->ndim == 0 && s->nelem == 1 && s->nbytes == 8 && memcmp(s->data, data + 40, 8) == 0);
	const struct llm_st_tensor *e = llm_st_find(&st, "empty");
	T_CHECK(e && e->nelem == 0 && e->nbytes == 0 && e->ndim == 2);
	T_CHECK(llm_st_find(&st, "__metadata__") == NULL);
	T_CHECK(llm_st_find(&st, "c") == NULL && llm_st_find(&st, "") == NULL);
	/* Source identity. */
	T_CHECK(stat(path, &sb) == 0);
	T_CHECK(st.files[0].size == (uint64_t)sb.st_size && st.files[0].size == 8 + strlen(h) + 48);
	T_CHECK(st.files[0].mtime_ns == (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec);
	T_CHECK(st.files[0].header_hash == llm_fnv1a(LLM_FNV_INIT, st.files[0].map.p, 8 + strlen(h)));
	llm_st_close(&st);
	T_CHECK(st.ntensors == 0 && st.tensors == NULL && st.nfiles == 0);
	llm_st_close(&st); /* twice is harmless */
	free(path);
}

T_TEST(header_hash_changes_with_the_header)
{
	char *p1 = write_st("{\"x\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [0, 2]}}", 2);
	char *p2 = write_st("{\"x\": {\"dtype\": \"I8\", \"shape\": [2], \"data_offsets\": [0, 2]}}", 2);
	struct llm_safetensors s1, s2;
	T_CHECK(llm_st_open(&s1, p1) == 0 && llm_st_open(&s2, p2) == 0);
	T_CHECK(s1.files[0].header_hash != s2.files[0].header_hash);
	T_CHECK(s1.files[0].size == s2.files[0].size);
	llm_st_close(&s1);
	llm_st_close(&s2);
	free(p1);
	free(p2);
}

T_TEST(every_dtype_is_recognised)
{
	struct llm_buf h = {0};
	uint64_t off = 0;
	llm_buf_puts(&h, "{");
	for (int t = 1; t < LLM_DT_COUNT; t++) {
		size_t n = 3 * llm_dtype_size((enum llm_dtype)t);
		llm_buf_printf(&h, "%s\"t_%s\": {\"dtype\": \"%s\", \"shape\": [3], \"data_offsets\": [%llu, %llu]}",
		    t > 1 ? ", " : "", llm_dtype_st_name((enum llm_dtype)t), llm_dtype_st_name((enum llm_dtype)t),
		    (unsigned long long)off, (unsigned long long)(off + n));
		off += n;
	}
	llm_buf_puts(&h, "}");
	char *path = write_st(h.p, off);
	struct llm_safetensors st;
	T_CHECKF(llm_st_open(&st, path) == 0, "%s", llm_errmsg());
	T_CHECK(st.ntensors == LLM_DT_COUNT - 1);
	for (int t = 1; t < LLM_DT_COUNT; t++) {
		char name[32];
		snprintf(name, sizeof(name), "t_%s", llm_dtype_st_name((enum llm_dtype)t));
		const struct llm_st_tensor *x = llm_st_find(&st, name);
		T_CHECKF(x && (int)x->dtype == t && x->nbytes == 3 * llm_dtype_size((enum llm_dtype)t), "%s", name);
	}
	T_CHECK(invariants(&st));
	llm_st_close(&st);
	llm_buf_free(&h);
	free(path);
}

T_TEST(header_padding_and_empty_header_are_fine)
{
	/* Writers pad the header with spaces to align the data. */
	char h[128] = "{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}  ";
	while ((8 + strlen(h)) % 8)
		strcat(h, " ");
	char *p = write_st(h, 4);
	struct llm_safetensors st;
	T_CHECKF(llm_st_open(&st, p) == 0, "%s", llm_errmsg());
	T_CHECK(st.ntensors == 1 && st.tensors[0].offset % 8 == 0);
	T_CHECK(((uintptr_t)st.tensors[0].data) % 8 == 0);
	llm_st_close(&st);
	free(p);
	p = write_st("{}", 0);
	T_CHECKF(llm_st_open(&st, p) == 0, "%s", llm_errmsg());
	T_CHECK(st.ntensors == 0 && llm_st_find(&st, "w") == NULL);
	llm_st_close(&st);
	free(p);
}

T_TEST(directory_with_model_safetensors)
{
	const char *h = "{\"w\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}}";
	char *p = write_st_len("dir1", "model.safetensors", strlen(h), h, NULL, 4);
	char *dir = llm_path_join(t_tmpdir(), "dir1");
	struct llm_safetensors st;
	T_CHECKF(llm_st_open(&st, dir) == 0, "%s", llm_errmsg());
	T_CHECK(st.ntensors == 1 && strcmp(st.files[0].path, p) == 0);
	llm_st_close(&st);
	free(dir);
	free(p);
	/* A directory with neither file. */
	p = write_raw("dir2", "other.txt", "x", 1);
	dir = llm_path_join(t_tmpdir(), "dir2");
	T_CHECK(open_fails(dir, "no model.safetensors.index.json or model.safetensors"));
	free(dir);
	free(p);
	p = llm_path_join(t_tmpdir(), "missing.safetensors");
	T_CHECK(open_fails(p, "No such file or directory"));
	free(p);
}

T_TEST(bad_lengths_and_truncated_files)
{
	char *p = write_raw("single", "short.safetensors", "\x10\x00\x00", 3);
	T_CHECK(open_fails(p, "too short for a safetensors file (3 bytes)"));
	free(p);
	p = write_raw("single", "zero.safetensors", "", 0);
	T_CHECK(open_fails(p, "too short"));
	free(p);
	const char *h = "{\"w\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}";
	p = write_st_len("single", "long.safetensors", strlen(h) + 2, h, NULL, 1);
	T_CHECK(open_fails(p, "exceeds the file size"));
	free(p);
	p = write_st_len("single", "absurd.safetensors", 1ull << 40, h, NULL, 1);
	T_CHECK(open_fails(p, "header length 1099511627776 is absurd"));
	free(p);
	p = write_st_len("single", "max.safetensors", UINT64_MAX, h, NULL, 1);
	T_CHECK(open_fails(p, "is absurd"));
	free(p);
	/* Length one short: the JSON is cut. */
	p = write_st_len("single", "cut.safetensors", strlen(h) - 1, h, NULL, 1);
	T_CHECK(open_fails(p, "bad header JSON"));
	free(p);
}

/* Each header must be rejected with the given message part. */
/* a table */
/* clang-format off */
static const struct {
	const char *header;
	size_t datalen;
	const char *want;
} bad_headers[] = {
	{ "{\"w\": ", 8, "bad header JSON at line 1" },
	{ "[]", 0, "header is not a JSON object" },
	{ "{\"w\": 5}", 8, "tensor 'w': expected an object" },
	{ "{\"w\": {\"shape\": [2], \"data_offsets\": [0, 8]}}", 8, "tensor 'w': missing 'dtype'" },
	{ "{\"w\": {\"dtype\": 4, \"shape\": [2], \"data_offsets\": [0, 8]}}", 8, "tensor 'w': non-string 'dtype'" },
	{ "{\"w\": {\"dtype\": \"Q4_0\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8,
	    "tensor 'w': unknown dtype 'Q4_0'" },
	{ "{\"w\": {\"dtype\": \"f32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8, "unknown dtype 'f32'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 8]}}", 8, "tensor 'w': missing 'shape'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": 2, \"data_offsets\": [0, 8]}}", 8, "tensor 'w': non-array 'shape'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [-2], \"data_offsets\": [0, 8]}}", 8,
	    "shape[0] is not a non-negative integer" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [1, 2.0], \"data_offsets\": [0, 8]}}", 8,
	    "shape[1] is not a non-negative integer" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [\"2\"], \"data_offsets\": [0, 8]}}", 8, "shape[0] is not" },
	{ "{\"w\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,1,8], \"data_offsets\": [0, 8]}}", 8,
	    "9 dimensions (at most 8" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2]}}", 8, "tensor 'w': missing 'data_offsets'" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0]}}", 8,
	    "'data_offsets' is not two non-negative integers" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8, 8]}}", 8,
	    "'data_offsets' is not two" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [-8, 0]}}", 8, "'data_offsets' is not two" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, \"8\"]}}", 8,
	    "'data_offsets' is not two" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": {\"a\": 0}}}", 8,
	    "'data_offsets' is not two" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8,
	    "data_offsets [8, 0] begin after end" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 16]}}", 8,
	    "tensor 'w': data_offsets [0, 16] outside the file (data area is 8 bytes)" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [9223372036854775800, 9223372036854775807]}}",
	    8, "outside the file" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 12,
	    "tensor 'w': shape and dtype F32 give 12 bytes but data_offsets span 8" },
	{ "{\"w\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [0, 4]}}", 8,
	    "give 8 bytes but data_offsets span 4" },
	{ "{\"w\": {\"dtype\": \"U8\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 8]}}", 8,
	    "shape product overflows" },
	{ "{\"w\": {\"dtype\": \"U8\", \"shape\": [9223372036854775807, 2], \"data_offsets\": [0, 8]}}", 8,
	    "shape product overflows" },
	{ "{\"w\": {\"dtype\": \"F64\", \"shape\": [2305843009213693952], \"data_offsets\": [0, 8]}}", 8,
	    "byte size overflows" },
	{ "{\"w\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904], \"data_offsets\": [0, 0]}}", 8,
	    "byte size overflows" },
	{ "{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
	  " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
	    12, "tensors 'a' and 'b' overlap" },
	{ "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]},"
	  " \"b\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}",
	    16, "tensors 'a' and 'b' overlap" },
	{ "{\"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
	  " \"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}}",
	    4, "overlap" },
	{ "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]},"
	  " \"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [1, 2]}}",
	    2, "duplicate object key" },
	{ "{\"__metadata__\": [1], \"w\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1,
	    "'__metadata__' is not an object" },
	{ "{\"__metadata__\": {\"n\": 1}}", 0, "__metadata__ 'n' is not a string" },
	/* Names from the file never break the one-line message. */
	{ "{\"a\\nb\": {\"dtype\": \"Q\\r\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1,
	    "tensor '(name with control characters)': unknown dtype '(name with control characters)'" },
	{ "{\"a\\u0000b\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1, "bad header JSON" },
};
/* clang-format on */

T_TEST(bad_headers_are_rejected)
{
	for (size_t i = 0; i < LLM_NELEM(bad_headers); i++) {
		char *p = write_st(bad_headers[i].header, bad_headers[i].datalen);
		T_CHECKF(open_fails(p, bad_headers[i].want), "case %zu: %s", i, bad_headers[i].header);
		/* The message starts with the file, then the tensor. */
		T_CHECK(strncmp(llm_errmsg(), p, strlen(p)) == 0 && llm_errmsg()[strlen(p)] == ':');
		free(p);
	}
}

T_TEST(touching_and_empty_tensors_do_not_overlap)
{
	const char *h = "{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
			" \"z\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [2, 2]},"
			" \"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [4, 8]},"
			" \"e\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [8, 8]}}";
	char *p = write_st(h, 8);
	struct llm_safetensors st;
	T_CHECKF(llm_st_open(&st, p) == 0, "%s", llm_errmsg());
	T_CHECK(st.ntensors == 4 && invariants(&st));
	llm_st_close(&st);
	free(p);
}

/* Every truncation of a valid file fails cleanly. */
T_TEST(every_truncation_fails_cleanly)
{
	const char *h = "{\"__metadata__\": {\"format\": \"pt\"},"
			" \"w\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]},"
			" \"b\": {\"dtype\": \"F16\", \"shape\": [4], \"data_offsets\": [16, 24]}}";
	size_t full = 8 + strlen(h) + 24;
	uint8_t *buf = llm_xmalloc(full);
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(strlen(h) >> (8 * i));
	memcpy(buf + 8, h, strlen(h));
	memset(buf + 8 + strlen(h), 0x3c, 24);
	struct llm_safetensors st;
	for (size_t n = 0; n <= full; n++) {
		char *p = write_raw("trunc", "t.safetensors", buf, n);
		int rc = llm_st_open(&st, p);
		T_CHECKF(n == full ? rc == 0 : rc == -1, "length %zu of %zu", n, full);
		if (rc == 0) {
			T_CHECK(invariants(&st) && st.ntensors == 2);
			llm_st_close(&st);
		} else
			T_CHECKF(strncmp(llm_errmsg(), p, strlen(p)) == 0, "%s", llm_errmsg());
		free(p);
	}
	free(buf);
}

/* Random corruption of header and length bytes: any outcome but a crash,
 * and a successful open only hands out in-bounds tensors. */
T_TEST(random_corruption_never_escapes_the_file)
{
	const char *h = "{\"a\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]},"
			" \"bb\": {\"dtype\": \"BF16\", \"shape\": [3], \"data_offsets\": [16, 22]},"
			" \"c\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [24, 32]}}";
	static const char pool[] = "0123456789[]{}\",:-e. \x00\xff" "F32BF16I64";
	size_t hl = strlen(h), full = 8 + hl + 32;
	uint8_t *orig = llm_xmalloc(full), *buf = llm_xmalloc(full);
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	int ok = 0, failed = 0;
	for (int i = 0; i < 8; i++)
		orig[i] = (uint8_t)(hl >> (8 * i));
	memcpy(orig + 8, h, hl);
	memset(orig + 8 + hl, 0, 32);
	for (int iter = 0; iter < 3000; iter++) {
		memcpy(buf, orig, full);
		int nmut = 1 + iter % 3;
		for (int k = 0; k < nmut; k++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t pos = (size_t)(seed >> 33) % (8 + hl);
			uint8_t c = (uint8_t)pool[(seed >> 20) % (sizeof(pool) - 1)];
			buf[pos] = iter % 5 == 0 ? (uint8_t)(buf[pos] ^ (1u << ((seed >> 12) % 8))) : c;
		}
		size_t len = iter % 7 == 0 ? full - (seed >> 40) % 16 : full;
		char *p = write_raw("fuzz", "f.safetensors", buf, len);
		struct llm_safetensors st;
		if (llm_st_open(&st, p) == 0) {
			ok++;
			T_CHECKF(invariants(&st), "iteration %d", iter);
			llm_st_close(&st);
		} else {
			failed++;
			T_CHECKF(strncmp(llm_errmsg(), p, strlen(p)) == 0 && !strchr(llm_errmsg(), '\n'),
			    "iteration %d: %s", iter, llm_errmsg());
		}
		free(p);
	}
	T_CHECKF(ok > 0 && failed > 0, "ok %d failed %d", ok, failed);
	free(orig);
	free(buf);
}

T_TEST(many_tensors_are_found_by_binary_search)
{
	struct llm_buf h = {0};
	int n = 1000;
	llm_buf_puts(&h, "{");
	/* Names in a scrambled order. */
	for (int i = 0; i < n; i++) {
		int k = (i * 617) % n;
		llm_buf_printf(&h,
		    "%s\"model.layers.%d.w\": {\"dtype\": \"U8\", \"shape\": [1], "
		    "\"data_offsets\": [%d, %d]}",
		    i ? ", " : "", k, k, k + 1);
	}
	llm_buf_puts(&h, "}");
	char *p = write_st(h.p, (size_t)n);
	struct llm_safetensors st;
	T_CHECKF(llm_st_open(&st, p) == 0, "%s", llm_errmsg());
	T_CHECK(st.ntensors == (size_t)n && invariants(&st));
	for (int k = 0; k < n; k++) {
		char name[64];
		snprintf(name, sizeof(name), "model.layers.%d.w", k);
		const struct llm_st_tensor *t = llm_st_find(&st, name);
		T_CHECKF(t && t->offset - (8 + h.len) == (uint64_t)k, "%s", name);
		snprintf(name, sizeof(name), "model.layers.%d.v", k);
		T_CHECK(llm_st_find(&st, name) == NULL);
	}
	T_CHECK(llm_st_find(&st, "a") == NULL && llm_st_find(&st, "zzz") == NULL);
	llm_st_close(&st);
	llm_buf_free(&h);
	free(p);
}

/* A two-shard checkpoint in DIR; `index` is the weight_map body. */
static char *
make_sharded(const char *dir, const char *index)
{
	const char *h1 = "{\"model.embed\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
			 " \"model.norm\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]}}";
	const char *h2 = "{\"lm_head\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [0, 8]}}";
	free(write_st_len(dir, "model-00001-of-00002.safetensors", strlen(h1), h1, NULL, 12));
	free(write_st_len(dir, "model-00002-of-00002.safetensors", strlen(h2), h2, NULL, 8));
	char *ix = llm_xasprintf("{\"metadata\": {\"total_size\": 20}, \"weight_map\": {%s}}", index);
	char *p = write_raw(dir, "model.safetensors.index.json", ix, strlen(ix));
	free(ix);
	return p;
}

#define GOOD_MAP "\"lm_head\": \"model-00002-of-00002.safetensors\"," \
	" \"model.embed\": \"model-00001-of-00002.safetensors\"," \
	" \"model.norm\": \"model-00001-of-00002.safetensors\""

T_TEST(sharded_checkpoint_via_directory_and_index)
{
	char *ix = make_sharded("sh1", GOOD_MAP);
	char *dir = llm_path_join(t_tmpdir(), "sh1");
	/* A broken model.safetensors beside the index: the index wins. */
	free(write_raw("sh1", "model.safetensors", "junk", 4));
	const char *paths[2] = {dir, ix};
	for (int k = 0; k < 2; k++) {
		struct llm_safetensors st;
		T_CHECKF(llm_st_open(&st, paths[k]) == 0, "%s", llm_errmsg());
		T_CHECK(st.nfiles == 2 && st.ntensors == 3 && invariants(&st));
		T_CHECK(strstr(st.files[0].path, "model-00001-of-00002.safetensors") != NULL);
		T_CHECK(strstr(st.files[1].path, "model-00002-of-00002.safetensors") != NULL);
		const struct llm_st_tensor *t = llm_st_find(&st, "lm_head");
		T_CHECK(t && t->file == 1 && t->dtype == LLM_DT_BF16 && t->nelem == 4);
		t = llm_st_find(&st, "model.norm");
		T_CHECK(t && t->file == 0 && t->nbytes == 4);
		for (int f = 0; f < 2; f++)
			T_CHECK(st.files[f].size > 0 && st.files[f].mtime_ns > 0 && st.files[f].header_hash);
		T_CHECK(st.files[0].header_hash != st.files[1].header_hash);
		llm_st_close(&st);
	}
	free(dir);
	free(ix);
}

T_TEST(sharded_inconsistencies_are_rejected)
{
	/* a table */
	/* clang-format off */
	static const struct { const char *map, *want;
	} cases[] = {
		/* A shard that does not exist. */
		{ GOOD_MAP ", \"x\": \"model-00003-of-00003.safetensors\"", "model.safetensors.index.json: shard " },
		/* The index names a tensor its shard lacks. */
		{ GOOD_MAP ", \"model.extra\": \"model-00001-of-00002.safetensors\"",
		    "model-00001-of-00002.safetensors: no tensor 'model.extra' (named by " },
		/* The index puts a tensor in the wrong shard. */
		{ "\"lm_head\": \"model-00001-of-00002.safetensors\","
		  " \"model.embed\": \"model-00001-of-00002.safetensors\","
		  " \"model.norm\": \"model-00002-of-00002.safetensors\"",
		    "no tensor 'lm_head'" },
		/* A shard holds a tensor the index does not list. */
		{ "\"lm_head\": \"model-00002-of-00002.safetensors\","
		  " \"model.embed\": \"model-00001-of-00002.safetensors\"",
		    "model-00001-of-00002.safetensors: tensor 'model.norm' is not listed in " },
		{ GOOD_MAP ", \"y\": 3", "weight_map: tensor 'y': shard name is not a string" },
		{ GOOD_MAP ", \"y\": \"../outside.safetensors\"", "bad shard name '../outside.safetensors'" },
		{ GOOD_MAP ", \"y\": \"/etc/passwd\"", "bad shard name '/etc/passwd'" },
		{ GOOD_MAP ", \"y\": \"\"", "bad shard name ''" },
		{ GOOD_MAP ", \"y\\n\": \"a\\nb\"",
		    "tensor '(name with control characters)': bad shard name '(name with" },
		{ "", "empty 'weight_map'" },
	};
	/* clang-format on */
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		char dname[32];
		snprintf(dname, sizeof(dname), "bad%zu", i);
		char *ix = make_sharded(dname, cases[i].map);
		T_CHECKF(open_fails(ix, cases[i].want), "case %zu", i);
		free(ix);
	}
}

T_TEST(duplicate_tensor_across_shards)
{
	char *ix = make_sharded("dup", GOOD_MAP);
	const char *h = "{\"model.norm\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
			" \"lm_head\": {\"dtype\": \"BF16\", \"shape\": [2, 2], \"data_offsets\": [4, 12]}}";
	free(write_st_len("dup", "model-00002-of-00002.safetensors", strlen(h), h, NULL, 12));
	T_CHECK(open_fails(ix, "model-00002-of-00002.safetensors: tensor 'model.norm' is also in "));
	T_CHECK(strstr(llm_errmsg(), "model-00001-of-00002.safetensors") != NULL);
	free(ix);
}

T_TEST(bad_shard_contents_name_the_shard)
{
	char *ix = make_sharded("badshard", GOOD_MAP);
	free(write_raw("badshard", "model-00002-of-00002.safetensors", "\x05\0\0\0\0\0\0\0{\"a\":", 13));
	T_CHECK(open_fails(ix, "model-00002-of-00002.safetensors: bad header JSON"));
	free(ix);
}

T_TEST(bad_index_files)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"{\"weight_map\": {\"a\": ", "model.safetensors.index.json:1:"},
		{"[1, 2]", "not a JSON object"},
		{"{\"metadata\": {}}", "missing 'weight_map'"},
		{"{\"weight_map\": [\"a\"]}", "non-object 'weight_map'"},
	};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		char *p = write_raw("badindex", "model.safetensors.index.json", cases[i].text, strlen(cases[i].text));
		T_CHECKF(open_fails(p, cases[i].want), "case %zu", i);
		free(p);
	}
}

int
main(void)
{
	T_RUN(valid_single_file);
	T_RUN(header_hash_changes_with_the_header);
	T_RUN(every_dtype_is_recognised);
	T_RUN(header_padding_and_empty_header_are_fine);
	T_RUN(directory_with_model_safetensors);
	T_RUN(bad_lengths_and_truncated_files);
	T_RUN(bad_headers_are_rejected);
	T_RUN(touching_and_empty_tensors_do_not_overlap);
	T_RUN(every_truncation_fails_cleanly);
	T_RUN(random_corruption_never_escapes_the_file);
	T_RUN(many_tensors_are_found_by_binary_search);
	T_RUN(sharded_checkpoint_via_directory_and_index);
	T_RUN(sharded_inconsistencies_are_rejected);
	T_RUN(duplicate_tensor_across_shards);
	T_RUN(bad_shard_contents_name_the_shard);
	T_RUN(bad_index_files);
	return T_DONE();
}
