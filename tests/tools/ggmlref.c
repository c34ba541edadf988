/* ggmlref: llama.cpp's own quantization code as an oracle for the tests,
 * called through the libggml and libllama that the npm package
 * node-llama-cpp ships prebuilt.  Built by tests/tools/ggml-ref (which
 * finds the package, its headers and its libraries); see there.
 *
 *   ggmlref check TYPE BLOCKS VALUES
 *       decode the blocks of ggml type TYPE ("q4_K", case ignored) in file
 *       BLOCKS with ggml's own dequantize_row_* (ggml_get_type_traits'
 *       to_float) and compare with the little-endian f32 file VALUES bit
 *       for bit (any NaN equals any NaN); prints "TYPE: N values equal" or
 *       the first difference and the count of differing values.
 *   ggmlref blocks TYPE VALUES OUT
 *       quantize the little-endian f32 file VALUES (whole blocks of TYPE)
 *       with ggml_quantize_chunk, no importance matrix (what
 *       llama-quantize does for a tensor), one row, into the file OUT.
 *   ggmlref quantize IN.gguf OUT.gguf FTYPE
 *       llama-quantize: llama_model_quantize with FTYPE "Q8_0", "Q4_0",
 *       "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M",
 *       "Q5_K_S", "Q5_K_M" or "Q6_K", on 2 threads, llama.cpp's default rules for the mix.
 *   ggmlref dequantize IN.gguf OUT.gguf
 *       the same file with every block-quantized tensor decoded to F32 by
 *       ggml's to_float (metadata copied; general.file_type set to 0).
 *   ggmlref logits MODEL.gguf IDS OUT
 *       llama.cpp's logits for the comma-separated token ids IDS at
 *       positions 0.., one batch, every position's row of n_vocab f32 into
 *       OUT; CPU, 2 threads, f32 KV cache, no flash attention (so that the
 *       only approximation left is llama.cpp's own: activations quantized
 *       to 8 bits for the dot products with block-quantized weights).
 *
 * Exit status: 0 success (check: all equal), 1 a difference or a failure,
 * 2 usage. */
#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>
#include <llama.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] =
	"usage: ggmlref check TYPE BLOCKS VALUES\n"
	"       ggmlref blocks TYPE VALUES OUT\n"
	"       ggmlref quantize IN.gguf OUT.gguf FTYPE\n"
	"       ggmlref dequantize IN.gguf OUT.gguf\n"
	"       ggmlref logits MODEL.gguf IDS OUT\n";

static void
usage(void)
{
	fputs(usage_text, stderr);
	exit(2);
}

static void
die(const char *what, const char *why)
{
	fprintf(stderr, "ggmlref: %s: %s\n", what, why);
	exit(1);
}

static void *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, "cannot open");
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *p = malloc(n > 0 ? (size_t)n : 1);
	if (!p || (n > 0 && fread(p, 1, (size_t)n, f) != (size_t)n))
		die(path, "read error");
	fclose(f);
	*len = (size_t)n;
	return p;
}

static enum ggml_type
type_named(const char *s)
{
	for (int t = 0; t < GGML_TYPE_COUNT; t++) {
		const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t);
		if (tr->type_name && tr->blck_size > 0 && strcasecmp(tr->type_name, s) == 0)
			return (enum ggml_type)t;
	}
	die(s, "no such ggml type");
	return GGML_TYPE_COUNT;
}

static int
same_bits(float a, float b)
{
	if (a != a && b != b)
		return 1;
	return memcmp(&a, &b, sizeof(a)) == 0;
}

static int
check(const char *type, const char *blocks, const char *values)
{
	enum ggml_type t = type_named(type);
	const struct ggml_type_traits *tr = ggml_get_type_traits(t);
	size_t nb, nv;
	unsigned char *b = slurp(blocks, &nb);
	float *v = slurp(values, &nv), *ref;

	if (!tr->to_float)
		die(type, "ggml has no to_float for it");
	if (nb % tr->type_size)
		die(blocks, "not whole blocks");
	size_t n = nb / tr->type_size * (size_t)tr->blck_size;
	if (nv != n * sizeof(float))
		die(values, "not one f32 per element of the blocks");
	if (!(ref = malloc(n * sizeof(float))))
		die("malloc", "out of memory");
	tr->to_float(b, ref, (int64_t)n);
	size_t bad = 0, first = 0;
	for (size_t i = 0; i < n; i++)
		if (!same_bits(ref[i], v[i]) && bad++ == 0)
			first = i;
	if (bad) {
		printf("%s: %zu of %zu values differ; first at %zu: ggml %.9g, file %.9g\n", tr->type_name, bad, n,
		    first, ref[first], v[first]);
		return 1;
	}
	printf("%s: %zu values equal\n", tr->type_name, n);
	free(b);
	free(v);
	free(ref);
	return 0;
}

static int
blocks(const char *type, const char *values, const char *out)
{
	enum ggml_type t = type_named(type);
	const struct ggml_type_traits *tr = ggml_get_type_traits(t);
	size_t nv;
	float *v = slurp(values, &nv);
	size_t n = nv / sizeof(float);

	if (nv % sizeof(float) || n % (size_t)tr->blck_size)
		die(values, "not whole blocks of f32 values");
	size_t bytes = ggml_row_size(t, (int64_t)n);
	void *dst = malloc(bytes ? bytes : 1);
	if (!dst)
		die("malloc", "out of memory");
	ggml_quantize_init(t);
	if (ggml_quantize_chunk(t, v, dst, 0, 1, (int64_t)n, NULL) != bytes)
		die(type, "ggml_quantize_chunk wrote an unexpected size");
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(dst, 1, bytes, f) != bytes || fclose(f) != 0)
		die(out, "write error");
	free(v);
	free(dst);
	return 0;
}

static const struct {
	const char *name;
	enum llama_ftype ftype;
} ftypes[] = {
	{"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0}, {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},
	{"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1}, {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},
	{"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1}, {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
	{"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S},
	{"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M}, {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S},
	{"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M}, {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},
};

static void
quiet(enum ggml_log_level level, const char *text, void *user)
{
	(void)user;
	if (level >= GGML_LOG_LEVEL_ERROR)
		fputs(text, stderr);
}

static int
quantize(const char *in, const char *out, const char *ftype)
{
	struct llama_model_quantize_params p = llama_model_quantize_default_params();
	size_t i = 0;

	while (i < sizeof(ftypes) / sizeof(ftypes[0]) && strcmp(ftypes[i].name, ftype) != 0)
		i++;
	if (i == sizeof(ftypes) / sizeof(ftypes[0]))
		die(ftype, "unknown file type");
	llama_log_set(quiet, NULL);
	llama_backend_init();
	p.ftype = ftypes[i].ftype;
	p.nthread = 2;
	if (llama_model_quantize(in, out, &p) != 0)
		die(in, "llama_model_quantize failed");
	llama_backend_free();
	return 0;
}

static int
dequantize(const char *in, const char *out)
{
	struct ggml_context *ctx = NULL;
	struct gguf_init_params ip = {.no_alloc = false, .ctx = &ctx};
	struct gguf_context *g = gguf_init_from_file(in, ip);
	if (!g)
		die(in, "not a GGUF file ggml can read");
	int64_t n = gguf_get_n_tensors(g);
	size_t need = ggml_tensor_overhead() * (size_t)(n + 1);
	for (int64_t i = 0; i < n; i++) {
		struct ggml_tensor *t = ggml_get_tensor(ctx, gguf_get_tensor_name(g, i));
		need += (size_t)ggml_nelements(t) * sizeof(float) + 64;
	}
	struct ggml_init_params cp = {.mem_size = need, .mem_buffer = NULL, .no_alloc = false};
	struct ggml_context *fctx = ggml_init(cp);
	struct gguf_context *o = gguf_init_empty();
	if (!fctx || !o)
		die("ggml_init", "out of memory");
	gguf_set_kv(o, g);
	gguf_set_val_u32(o, "general.file_type", 0);
	for (int64_t i = 0; i < n; i++) {
		const char *name = gguf_get_tensor_name(g, i);
		struct ggml_tensor *t = ggml_get_tensor(ctx, name);
		if (!ggml_is_quantized(t->type)) {
			gguf_add_tensor(o, t);
			continue;
		}
		struct ggml_tensor *f = ggml_new_tensor(fctx, GGML_TYPE_F32, ggml_n_dims(t), t->ne);
		ggml_set_name(f, name);
		ggml_get_type_traits(t->type)->to_float(t->data, f->data, ggml_nelements(t));
		gguf_add_tensor(o, f);
	}
	if (!gguf_write_to_file(o, out, false))
		die(out, "write failed");
	gguf_free(o);
	gguf_free(g);
	ggml_free(fctx);
	ggml_free(ctx);
	return 0;
}

static int
logits(const char *model, const char *ids, const char *out)
{
	int n = 0, cap = 16;
	llama_token *tok = malloc((size_t)cap * sizeof(*tok));
	for (const char *p = ids; *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 0 || (*end && *end != ','))
			die(ids, "not a comma-separated list of token ids");
		if (n == cap)
			tok = realloc(tok, (size_t)(cap *= 2) * sizeof(*tok));
		tok[n++] = (llama_token)v;
		p = *end ? end + 1 : end;
	}
	if (n == 0)
		die(ids, "no token ids");
	llama_log_set(quiet, NULL);
	llama_backend_init();
	/* The CPU backend is a library of its own, one per x86 level. */
	const char *dir = getenv("GGMLREF_BACKENDS");
	if (dir)
		ggml_backend_load_all_from_path(dir);
	else
		ggml_backend_load_all();
	struct llama_model_params mp = llama_model_default_params();
	mp.n_gpu_layers = 0;
	struct llama_model *m = llama_model_load_from_file(model, mp);
	if (!m)
		die(model, "llama.cpp cannot load it");
	struct llama_context_params cp = llama_context_default_params();
	cp.n_ctx = (uint32_t)(n + 255) / 256 * 256;
	cp.n_batch = cp.n_ubatch = (uint32_t)n;
	cp.n_seq_max = 1;
	cp.n_threads = cp.n_threads_batch = 2;
	cp.type_k = cp.type_v = GGML_TYPE_F32;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	struct llama_context *c = llama_init_from_model(m, cp);
	if (!c)
		die(model, "llama_init_from_model failed");
	struct llama_batch b = llama_batch_init(n, 0, 1);
	for (int i = 0; i < n; i++) {
		b.token[i] = tok[i];
		b.pos[i] = i;
		b.n_seq_id[i] = 1;
		b.seq_id[i][0] = 0;
		b.logits[i] = 1;
	}
	b.n_tokens = n;
	if (llama_decode(c, b) != 0)
		die(model, "llama_decode failed");
	int nv = llama_vocab_n_tokens(llama_model_get_vocab(m));
	FILE *f = fopen(out, "wb");
	if (!f)
		die(out, "cannot open");
	for (int i = 0; i < n; i++)
		if (fwrite(llama_get_logits_ith(c, i), sizeof(float), (size_t)nv, f) != (size_t)nv)
			die(out, "write error");
	if (fclose(f) != 0)
		die(out, "write error");
	llama_batch_free(b);
	llama_free(c);
	llama_model_free(m);
	llama_backend_free();
	free(tok);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "check") == 0)
		return check(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "blocks") == 0)
		return blocks(argv[2], argv[3], argv[4]);
	if (argc == 5 && strcmp(argv[1], "quantize") == 0)
		return quantize(argv[2], argv[3], argv[4]);
	if (argc == 4 && strcmp(argv[1], "dequantize") == 0)
		return dequantize(argv[2], argv[3]);
	if (argc == 5 && strcmp(argv[1], "logits") == 0)
		return logits(argv[2], argv[3], argv[4]);
	usage();
	return 2;
}
