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
 *   ggmlref perplexity MODEL.gguf TEXT N_CTX [BASE]
 *       llama-perplexity's measure, with llama.cpp's tokenizer and logits:
 *       TEXT tokenized with BOS (when the model adds one), cut into chunks
 *       of N_CTX tokens, each evaluated from an empty cache with BOS as its
 *       first token, the second half scored (positions N_CTX/2 .. N_CTX-2
 *       predict the next token); prints "chunks C scored S PPL P +/- E".
 *       With BASE (a file of llm-run --kl-divergence-base, lib/api/ppl.h, made
 *       from the same tokens; its chunk count caps the chunks), also "KLD mean K median M p99 Q max X
 *       same_top F" of the base's distributions against llama.cpp's.
 *
 * Exit status: 0 success (check: all equal), 1 a difference or a failure,
 * 2 usage. */
#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>
#include <llama.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char usage_text[] = "usage: ggmlref check TYPE BLOCKS VALUES\n"
				 "       ggmlref blocks TYPE VALUES OUT\n"
				 "       ggmlref perplexity MODEL.gguf TEXT N_CTX [BASE]\n"
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

/* a table */
/* clang-format off */
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
/* clang-format on */

static void
quiet(enum ggml_log_level level, const char *text, void *user)
{
	static enum ggml_log_level last = GGML_LOG_LEVEL_INFO;
	(void)user;
	if (level != GGML_LOG_LEVEL_CONT)
		last = level;
	if (last == GGML_LOG_LEVEL_ERROR)
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

/* llama.cpp on the CPU with 2 threads, an f32 KV cache and no flash
 * attention, batches of up to n tokens (every logit kept). */
static struct llama_context *
open_model(const char *model, uint32_t n, struct llama_model **mp_out)
{
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
	cp.n_ctx = (n + 255) / 256 * 256;
	cp.n_batch = cp.n_ubatch = n;
	cp.n_seq_max = 1;
	cp.n_threads = cp.n_threads_batch = 2;
	cp.type_k = cp.type_v = GGML_TYPE_F32;
	cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
	struct llama_context *c = llama_init_from_model(m, cp);
	if (!c)
		die(model, "llama_init_from_model failed");
	*mp_out = m;
	return c;
}

static double
log_sum_exp(const float *l, int n, double *max_out)
{
	double max = l[0], sum = 0;
	for (int k = 1; k < n; k++)
		max = l[k] > max ? l[k] : max;
	for (int k = 0; k < n; k++)
		sum += exp((double)l[k] - max);
	*max_out = max;
	return max + log(sum);
}

static int
argmax(const float *l, int n)
{
	int a = 0;
	for (int k = 1; k < n; k++)
		if (l[k] > l[a])
			a = k;
	return a;
}

static int
cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int
perplexity(const char *model, const char *text, const char *nctx, const char *basefile)
{
	size_t len;
	char *t = slurp(text, &len);
	int n_ctx = atoi(nctx);
	if (n_ctx < 4)
		die(nctx, "not a context size");
	struct llama_model *m;
	struct llama_context *c = open_model(model, (uint32_t)n_ctx, &m);
	const struct llama_vocab *v = llama_model_get_vocab(m);
	int cap = (int)len + 16;
	llama_token *tok = malloc((size_t)cap * sizeof(*tok));
	int n = llama_tokenize(v, t, (int32_t)len, tok, cap, 1, 0);
	if (n < 0)
		die(text, "llama_tokenize failed");
	if (n < 2 * n_ctx)
		die(text, "too few tokens for two chunks");
	int nv = llama_vocab_n_tokens(v), first = n_ctx / 2, chunks = n / n_ctx, count = 0;
	double nll = 0, nll2 = 0, *kls = NULL;
	const float *base = NULL;
	int same = 0;
	size_t blen = 0;
	unsigned char *bf = NULL;
	if (basefile) {
		bf = slurp(basefile, &blen);
		const int32_t *h = (const int32_t *)(bf + 8);
		if (blen >= 24 && h[3] < chunks)
			chunks = h[3]; /* the base's chunks (llm-run --chunks) */
		if (blen < 24 || memcmp(bf, "LLMKLD01", 8) != 0 || h[1] != nv || h[2] != n_ctx || h[3] != chunks)
			die(basefile, "not a base file of these chunks");
		if (memcmp(bf + 24, tok, (size_t)chunks * (size_t)n_ctx * 4) != 0)
			die(basefile, "made from other tokens than llama.cpp's");
		base = (const float *)(bf + 24 + (size_t)chunks * (size_t)n_ctx * 4);
		kls = malloc((size_t)chunks * (size_t)n_ctx * sizeof(double));
	}
	struct llama_batch b = llama_batch_init(n_ctx, 0, 1);
	for (int ch = 0; ch < chunks; ch++) {
		const llama_token *ct = tok + ch * n_ctx;
		llama_memory_clear(llama_get_memory(c), 1);
		for (int i = 0; i < n_ctx; i++) {
			b.token[i] = i == 0 && llama_vocab_get_add_bos(v) ? llama_vocab_bos(v) : ct[i];
			b.pos[i] = i;
			b.n_seq_id[i] = 1;
			b.seq_id[i][0] = 0;
			b.logits[i] = i >= first;
		}
		b.n_tokens = n_ctx;
		if (llama_decode(c, b) != 0)
			die(model, "llama_decode failed");
		for (int i = first; i <= n_ctx - 2; i++) {
			const float *l = llama_get_logits_ith(c, i);
			double max, lq = log_sum_exp(l, nv, &max);
			double x = -((double)l[ct[i + 1]] - lq);
			nll += x;
			nll2 += x * x;
			if (base) {
				const float *bl = base + (size_t)count * (size_t)nv;
				double lb = log_sum_exp(bl, nv, &max), kl = 0;
				for (int k = 0; k < nv; k++) {
					double pb = (double)bl[k] - lb;
					kl += exp(pb) * (pb - ((double)l[k] - lq));
				}
				kls[count] = kl > 0 ? kl : 0;
				same += argmax(bl, nv) == argmax(l, nv);
			}
			count++;
		}
	}
	double mean = nll / count, var = nll2 / count - mean * mean, ppl = exp(mean);
	printf("chunks %d scored %d PPL %.6f +/- %.6f\n", chunks, count, ppl,
	    var > 0 ? sqrt(var / (count - 1)) * ppl : 0);
	if (base) {
		double sk = 0;
		for (int i = 0; i < count; i++)
			sk += kls[i];
		qsort(kls, (size_t)count, sizeof(double), cmpd);
		printf("KLD mean %.6f median %.6f p99 %.6f max %.6f same_top %.5f\n", sk / count,
		    kls[(count + 1) / 2 - 1], kls[(int)ceil(0.99 * count) - 1], kls[count - 1], (double)same / count);
		free(kls);
		free(bf);
	}
	llama_batch_free(b);
	llama_free(c);
	llama_model_free(m);
	llama_backend_free();
	free(tok);
	free(t);
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
	struct llama_model *m;
	struct llama_context *c = open_model(model, (uint32_t)n, &m);
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
	if ((argc == 5 || argc == 6) && strcmp(argv[1], "perplexity") == 0)
		return perplexity(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : NULL);
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
