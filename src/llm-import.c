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

#include "../lib/text/chat.h"
#include "../lib/compiler/emit.h"
#include "../lib/formats/family.h"
#include "../lib/formats/gguf_config.h"
#include "../lib/text/gguf_tokenizer.h"
#include "../lib/formats/hfconfig.h"
#include "../lib/base/json.h"
#include "../lib/formats/model.h"
#include "../lib/formats/plan.h"
#include "../lib/formats/qmix.h"
#include "../lib/formats/quant.h"
#include "../lib/formats/source.h"
#include "../lib/base/spawn.h"
#include "../lib/formats/target.h"
#include "../lib/text/tokenizer.h"
#include "../lib/base/util.h"

#define DEFAULT_PREFILL_CHUNK 128

static const char *tokenizer_names[] = {
	"tokenizer.json",
	"tokenizer_config.json",
	"chat_template.jinja",
	"special_tokens_map.json",
};

static const char usage_text[] =
    "usage: llm-import [-v] [-o outdir] [--max-context n] [--prefill-chunk n]\n"
    "                  [--dtype auto|f32|f16|bf16|q8_0|q4_0|q4_k_m|...] [--kv-dtype f32|f16|bf16]\n"
    "                  [--activations auto|f32|q8|bf16] [--cpu name] [--features list]\n"
    "                  [--target triple] [--tp n | --pp n] model\n";

static void
usage(FILE *fp)
{
	fputs(usage_text, fp);
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
		snprintf(en, sizeof(en), "%s%s", gguf ? "" : cfg.tensor_prefix,
		    gguf ? fs->gguf[LLM_ROLE_EMBED] : fs->hf[LLM_ROLE_EMBED]);
		const struct llm_source_tensor *e = llm_source_find(src, en, &err);
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
	llm_hfconfig_model_config(&cfg, &m->cfg);
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
	struct llm_plan_opts po = {o->wdt, keep_quant, o->mix, o->max_ctx};
	if (llm_plan_build(m, &cfg, src, dir, &po) < 0)
		llm_fatal("%s", llm_errmsg());
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
	llm_plan_free(m);
	for (size_t i = 0; i < m->nsource_files; i++)
		free((char *)m->source_files[i]);
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
		case 'o': o.outdir = optarg; break;
		case 'v': o.verbose = 1; break;
		default: llm_std_option(ch, usage_text, help_text); usage(stderr); return LLM_EXIT_USAGE;
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
