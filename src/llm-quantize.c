/* llm-quantize: a float GGUF file (F32, F16, BF16 tensors) quantized to
 * one of llama-quantize's file types (Q8_0, Q4_K_M, ...), written as the
 * GGUF file llama-quantize writes, byte for byte: the same metadata (the
 * input's, general.quantization_version and general.file_type last), the
 * tensors in llama.cpp's order (those of no layer, then layer by layer,
 * by name within each), each matrix of the block type the mix gives it
 * (lib/formats/qmix.c) and its blocks as ggml quantizes them
 * (lib/formats/quantize.c), everything else copied.
 *
 * See llm-quantize(1). */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../lib/base/dtype.h"
#include "../lib/base/util.h"
#include "../lib/formats/family.h"
#include "../lib/formats/gguf.h"
#include "../lib/formats/gguf_config.h"
#include "../lib/formats/qmix.h"
#include "../lib/formats/quant.h"

static const char usage_text[] = "usage: llm-quantize [-hv] [-t threads] input.gguf output.gguf type [threads]\n";

static const char help_text[] =
    "  input.gguf           a GGUF file of F32, F16 or BF16 tensors (convert_hf_to_gguf.py's)\n"
    "  output.gguf          the quantized file (written whole, then renamed into place)\n"
    "  type                 llama-quantize's file type, by name or number: Q8_0 (7), Q4_0 (2),\n"
    "                       Q4_1 (3), Q5_0 (8), Q5_1 (9), Q4_K_S (14), Q4_K_M (15), Q5_K_S (16),\n"
    "                       Q5_K_M (17), Q6_K (18)\n"
    "  threads, -t threads  threads that quantize (default: one per CPU)\n"
    "  -v                   say each tensor's type\n"
    "  -h                   print the usage\n"
    "  --help, --version    print this help, or the version\n";

#define GGML_QNT_VERSION 2  /* ggml's quantization version, general.quantization_version */
#define GGUF_OUT_VERSION 3  /* llama.cpp writes version 3 */
#define ALIGN LLM_GGUF_DEFAULT_ALIGNMENT

static _Noreturn void
usage(const char *msg)
{
	if (msg)
		llm_warn("%s", msg);
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

/* ---- the order, and each tensor's type ---------------------------------- */

/* llama.cpp's order of a model's tensors (llama_model_loader's
 * weight_name_comparer): by layer ("blk.N.", none first), then by name. */
static int
layer_of(const char *name)
{
	int l = -1;
	if (sscanf(name, "blk.%d.", &l) != 1)
		l = -1;
	return l;
}

static int
cmp_llama(const void *a, const void *b)
{
	const struct llm_gguf_tensor *x = *(const struct llm_gguf_tensor *const *)a,
				     *y = *(const struct llm_gguf_tensor *const *)b;
	int lx = layer_of(x->name), ly = layer_of(y->name);
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x->name, y->name);
}

/* ---- the file's metadata ------------------------------------------------- */

static void
put_u32(struct llm_buf *b, uint32_t v)
{
	uint8_t p[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	llm_buf_add(b, p, 4);
}

static void
put_u64(struct llm_buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void
put_str(struct llm_buf *b, const char *s)
{
	put_u64(b, strlen(s));
	llm_buf_add(b, s, strlen(s));
}

/* The bytes of tensor info i's record in the input (name, dims, type,
 * offset), to find where the metadata ends. */
static uint64_t
info_bytes(const struct llm_gguf_tensor *t)
{
	return 8 + strlen(t->name) + 4 + 8 * (uint64_t)t->n_dims + 4 + 8;
}

/* Keys llama-quantize drops (split files) or sets last. */
static int
dropped_key(const char *k)
{
	return strcmp(k, "general.quantization_version") == 0 || strcmp(k, "general.file_type") == 0 ||
	    strcmp(k, "split.no") == 0 || strcmp(k, "split.count") == 0 || strcmp(k, "split.tensors.count") == 0;
}

/* ---- quantizing ---------------------------------------------------------- */

struct job {
	const struct llm_gguf_tensor *t;
	uint32_t type;            /* the output's */
	uint8_t *out;             /* its bytes */
	int64_t row0, rows;       /* the rows of this thread */
	uint64_t in_row, out_row; /* bytes of a row, in and out */
	int err;
};

static void *
quantize_rows(void *p)
{
	struct job *j = p;
	int64_t cols = (int64_t)j->t->ne[0];
	float *f = malloc((size_t)cols * sizeof(float));
	if (!f) {
		j->err = 1;
		return NULL;
	}
	for (int64_t r = j->row0; r < j->row0 + j->rows && !j->err; r++) {
		const uint8_t *src = (const uint8_t *)j->t->data + (uint64_t)r * j->in_row;
		if (llm_convert(f, LLM_DT_F32, src, j->t->dtype, (size_t)cols) < 0)
			j->err = 1;
		else if (j->type == LLM_GGML_F16) {
			uint16_t *h = (uint16_t *)(j->out + (uint64_t)r * j->out_row);
			for (int64_t c = 0; c < cols; c++)
				h[c] = llm_f32_to_f16(f[c]);
		} else if (llm_quantize(j->type, f, (size_t)cols, j->out + (uint64_t)r * j->out_row) < 0)
			j->err = 1;
	}
	free(f);
	return NULL;
}

/* Tensor t as type (rows of ne[0] elements) into out, on nthreads. */
static int
quantize_tensor(const struct llm_gguf_tensor *t, uint32_t type, uint8_t *out, size_t out_bytes, int nthreads)
{
	int64_t rows = (int64_t)(t->nelem / t->ne[0]);
	struct job jobs[64];
	pthread_t th[64];
	if (nthreads > rows)
		nthreads = (int)rows;
	for (int i = 0; i < nthreads; i++) {
		int64_t a = rows * i / nthreads, b = rows * (i + 1) / nthreads;
		jobs[i] = (struct job){t, type, out, a, b - a, t->nbytes / (uint64_t)rows, out_bytes / (uint64_t)rows,
			0};
		if (i && pthread_create(&th[i], NULL, quantize_rows, &jobs[i]) != 0)
			return llm_seterr("pthread_create:");
	}
	quantize_rows(&jobs[0]);
	int err = jobs[0].err;
	for (int i = 1; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		err |= jobs[i].err;
	}
	return err ? llm_seterr("%s: %s: cannot quantize to %s", llm_prog, t->name, llm_ggml_type_name(type)) : 0;
}

/* The mix named s ("Q4_K_M", case ignored) or numbered as llama_ftype, or -1. */
static int
mix_of(const char *s)
{
	int mix = llm_qmix_parse(s);
	char *end;
	long n = strtol(s, &end, 10);
	for (int m = 0; mix < 0 && *s && !*end && m < LLM_QMIX_COUNT; m++)
		if ((long)llm_qmix_ftype(m) == n)
			mix = m;
	return mix;
}

/* The tensors in llama.cpp's order (ts), and the type each is written in
 * (types): the mix's for those llama-quantize quantizes, else their own. */
static void
choose_types(const struct llm_gguf *g, const struct llm_hfconfig *cfg, int mix, int verbose,
    const struct llm_gguf_tensor **ts, uint32_t *types)
{
	const char *in = g->path;
	int tied = !llm_gguf_find_tensor(g, "output.weight");
	for (size_t i = 0; i < g->ntensors; i++)
		ts[i] = &g->tensors[i];
	qsort(ts, g->ntensors, sizeof(*ts), cmp_llama);
	for (size_t i = 0; i < g->ntensors; i++) {
		const struct llm_gguf_tensor *t = ts[i];
		types[i] = t->ggml_type;
		if (!llm_qmix_quantizes(t->name, t->n_dims))
			continue;
		if (t->ggml_type != LLM_GGML_F32 && t->ggml_type != LLM_GGML_F16 && t->ggml_type != LLM_GGML_BF16)
			llm_fatal(
			    "%s: tensor '%s' is %s already: llm-quantize takes a file of F32, F16 and BF16 tensors", in,
			    t->name, llm_ggml_type_name(t->ggml_type));
		int layer = layer_of(t->name);
		struct llm_qmix_tensor qt = {llm_family_gguf_role(cfg->family, t->name, layer), layer,
			(int64_t)t->ne[0], cfg->family, (int)cfg->n_layers, cfg->n_heads, cfg->n_kv_heads, tied, 0};
		types[i] = llm_qmix_type(mix, &qt);
		if (verbose)
			fprintf(stderr, "%s: %s: %s -> %s\n", llm_prog, t->name, llm_ggml_type_name(t->ggml_type),
			    llm_ggml_type_name(types[i]));
	}
}

/* The metadata: the input's keys but those set last, which follow; then
 * the tensor infos, each tensor's size into sizes. */
static void
put_meta(struct llm_buf *meta, const struct llm_gguf *g, int mix, const struct llm_gguf_tensor **ts,
    const uint32_t *types, uint64_t *sizes)
{
	static const uint8_t zeros[ALIGN];
	uint64_t kv_end = g->header_end, offset = 0;
	size_t nkv = 0;
	for (size_t i = 0; i < g->ntensors; i++)
		kv_end -= info_bytes(&g->tensors[i]);
	for (size_t i = 0; i < g->nkv; i++)
		nkv += !dropped_key(g->kvs[i].key);
	llm_buf_add(meta, "GGUF", 4);
	put_u32(meta, GGUF_OUT_VERSION);
	put_u64(meta, g->ntensors);
	put_u64(meta, nkv + 2);
	for (size_t i = 0; i < g->nkv; i++) {
		uint64_t end = i + 1 < g->nkv ? g->kvs[i + 1].pos : kv_end;
		if (!dropped_key(g->kvs[i].key))
			llm_buf_add(meta, g->map.p + g->kvs[i].pos, (size_t)(end - g->kvs[i].pos));
	}
	put_str(meta, "general.quantization_version");
	put_u32(meta, LLM_GGUF_U32);
	put_u32(meta, GGML_QNT_VERSION);
	put_str(meta, "general.file_type");
	put_u32(meta, LLM_GGUF_U32);
	put_u32(meta, llm_qmix_ftype(mix));
	for (size_t i = 0; i < g->ntensors; i++) {
		const struct llm_gguf_tensor *t = ts[i];
		uint32_t blck, bsize;
		llm_ggml_type_block(types[i], &blck, &bsize);
		sizes[i] = t->nelem / blck * bsize;
		put_str(meta, t->name);
		put_u32(meta, (uint32_t)t->n_dims);
		for (int d = 0; d < t->n_dims; d++)
			put_u64(meta, t->ne[d]);
		put_u32(meta, types[i]);
		put_u64(meta, offset);
		offset += LLM_ALIGN_UP(sizes[i], ALIGN);
	}
	llm_buf_add(meta, zeros, (size_t)(LLM_ALIGN_UP(meta->len, ALIGN) - meta->len));
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {LLM_STD_LONGOPTS, {NULL, 0, NULL, 0}};
	int verbose = 0, ch;
	int64_t threads = 0;
	argv[0] = (char *)llm_setprog(argv[0]); /* getopt's messages name the program */
	while ((ch = getopt_long(argc, argv, "+hvt:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'v':
			verbose = 1;
			break;
		case 't':
			if (llm_parse_i64(optarg, 1, 64, &threads) < 0)
				usage(llm_xasprintf("-t: %s", llm_errmsg()));
			break;
		default:
			llm_std_option(ch, usage_text, help_text);
			usage(NULL);
		}
	}
	if (argc - optind == 4) { /* llama-quantize's trailing thread count */
		if (llm_parse_i64(argv[argc - 1], 1, 64, &threads) < 0)
			usage(llm_xasprintf("threads: %s", llm_errmsg()));
		argc--;
	}
	if (argc - optind != 3)
		usage(NULL);
	const char *in = argv[optind], *out = argv[optind + 1], *type = argv[optind + 2];
	int mix = mix_of(type);
	if (mix < 0)
		usage(llm_xasprintf("unknown type '%s' (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, "
				    "Q6_K, or their numbers)",
		    type));
	if (!threads) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n < 1 ? 1 : n > 64 ? 64 : n;
	}

	struct llm_gguf g;
	struct llm_hfconfig cfg;
	if (llm_gguf_open(&g, in) < 0 || llm_gguf_config(&cfg, &g) < 0)
		llm_fatal("%s", llm_errmsg());
	if (g.alignment != ALIGN)
		llm_fatal("%s: general.alignment %u: llm-quantize writes files of the default, %u", in, g.alignment,
		    ALIGN);

	const struct llm_gguf_tensor **ts = llm_xcalloc(g.ntensors, sizeof(*ts));
	uint32_t *types = llm_xcalloc(g.ntensors, sizeof(*types));
	uint64_t *sizes = llm_xcalloc(g.ntensors, sizeof(*sizes));
	struct llm_buf meta = {0};
	static const uint8_t zeros[ALIGN];
	choose_types(&g, &cfg, mix, verbose, ts, types);
	put_meta(&meta, &g, mix, ts, types, sizes);

	/* then the data, each tensor padded to the alignment */
	struct llm_out o;
	if (llm_out_open(&o, out) < 0)
		llm_fatal("%s", llm_errmsg());
	fwrite(meta.p, 1, meta.len, o.fp);
	uint64_t in_total = 0, out_total = 0;
	for (size_t i = 0; i < g.ntensors; i++) {
		const struct llm_gguf_tensor *t = ts[i];
		if (types[i] == t->ggml_type)
			fwrite(t->data, 1, t->nbytes, o.fp);
		else {
			uint8_t *q = llm_xcalloc(1, (size_t)sizes[i]);
			if (quantize_tensor(t, types[i], q, (size_t)sizes[i], (int)threads) < 0) {
				llm_out_abort(&o);
				llm_fatal("%s", llm_errmsg());
			}
			fwrite(q, 1, (size_t)sizes[i], o.fp);
			free(q);
		}
		fwrite(zeros, 1, (size_t)(LLM_ALIGN_UP(sizes[i], ALIGN) - sizes[i]), o.fp);
		in_total += t->nbytes;
		out_total += sizes[i];
	}
	if (llm_out_commit(&o) < 0)
		llm_fatal("%s", llm_errmsg());
	fprintf(stderr, "%s: %s: %zu tensors, %.1f MiB -> %.1f MiB (%s)\n", llm_prog, out, g.ntensors,
	    (double)in_total / (1 << 20), (double)out_total / (1 << 20), llm_qmix_label(mix));
	free(sizes);
	free(types);
	free(ts);
	llm_buf_free(&meta);
	llm_gguf_close(&g);
	return LLM_EXIT_OK;
}
