/* mkrunmodel: write a build directory for a stand-in model whose phases
 * have simple, checkable semantics (tests/fixtures/llm-run/phase.mlir.in),
 * to test llm-link and llm-run without the real pipeline.
 *
 * Output DIR: model.json (a valid llm-model/2 manifest: vocab V = 258,
 * the 256 GPT-2 byte tokens then <s> = 256 and </s> = 257, eos </s>),
 * weights.bin (f32 w[v] = v / 4 for v >= 9, else 0), tokenizer.json
 * (byte level), and prefill.mlir, prefill_kv.mlir and decode.mlir made
 * from the template with the plan fingerprint filled in.  The fingerprint
 * follows max_context and prefill_chunk, so two fixtures with different -C
 * are two plans. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/json.h"
#include "../../lib/formats/model.h"
#include "../../lib/base/util.h"
#include "../../lib/formats/weights.h"

#define V 258
#define BOS 256
#define EOS 257

static const char usage_text[] = "usage: mkrunmodel [-b] [-C max_context] [-S chunk] -o dir template.mlir\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

static json_t *
arg(const char *name, const char *type)
{
	return json_pack("{s:s,s:s}", "name", name, "type", type);
}

static char *
replace(const char *s, const char *from, const char *to)
{
	struct llm_buf b = {0};
	const char *p;
	while ((p = strstr(s, from))) {
		llm_buf_add(&b, s, (size_t)(p - s));
		llm_buf_puts(&b, to);
		s = p + strlen(from);
	}
	llm_buf_puts(&b, s);
	return b.p;
}

int
main(int argc, char **argv)
{
	int64_t C = 64, S = 4;
	int bos = 0, ch;
	const char *out = NULL;

	llm_setprog(argv[0]);
	while ((ch = getopt(argc, argv, "bC:ho:S:")) != -1) {
		switch (ch) {
		case 'b':
			bos = 1;
			break;
		case 'C':
			if (llm_parse_i64(optarg, 1, 1 << 20, &C) < 0)
				usage();
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'o':
			out = optarg;
			break;
		case 'S':
			if (llm_parse_i64(optarg, 1, 1 << 20, &S) < 0)
				usage();
			break;
		default:
			usage();
		}
	}
	if (!out || argc - optind != 1)
		usage();
	if (llm_mkdirs(out) < 0)
		llm_fatal("%s", llm_errmsg());

	uint64_t tbytes = V * 4, dbytes = LLM_ALIGN_UP(tbytes, 64);
	json_t *config = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f,s:b,s:b,s:I}", "hidden_size", 2, "n_layers", 1,
	    "n_heads", 1, "n_kv_heads", 1, "head_dim", 2, "intermediate_size", 2, "vocab_size", V, "rms_norm_eps", 1e-6,
	    "rope_theta", 10000.0, "tie_word_embeddings", 0, "attention_bias", 0, "max_position_embeddings",
	    (json_int_t)C);
	json_t *dtypes = json_pack("{s:s,s:s,s:s}", "weights", "f32", "activations", "f32", "kv", "f32");
	json_t *limits = json_pack("{s:I,s:I}", "max_context", (json_int_t)C, "prefill_chunk", (json_int_t)S);
	json_t *tensors = json_pack("[{s:s,s:[],s:s,s:s,s:[i],s:i,s:I}]", "name", "table", "source", "transform",
	    "copy", "dtype", "f32", "shape", V, "offset", 0, "bytes", (json_int_t)tbytes);
	uint64_t fp = llm_plan_fingerprint(dtypes, config, limits, tensors);
	char fphex[17];
	llm_hex64(fp, fphex);

	json_t *m = json_object();
	json_object_set_new(m, "format", json_string(LLM_MODEL_FORMAT));
	json_object_set_new(m, "family", json_string("fixture"));
	json_object_set_new(m, "architecture", json_string("LlmRunFixture"));
	json_object_set_new(m, "source", json_pack("{s:s,s:s,s:[]}", "kind", "safetensors", "dir", "none", "files"));
	json_object_set(m, "config", config);
	json_object_set(m, "dtypes", dtypes);
	json_object_set(m, "limits", limits);
	json_object_set_new(m, "tokenizer",
	    json_pack("{s:[s],s:i,s:[i],s:b,s:n}", "files", "tokenizer.json", "bos_id", BOS, "eos_ids", EOS, "add_bos",
		bos, "chat_template"));
	/* 1 layer, k and v, 1 head of 2, llm_kv_positions(C) rows, f32 */
	json_object_set_new(m, "kv_cache",
	    json_pack("{s:s,s:s,s:I,s:I}", "layout", "layer,kv,kv_head,(k: head_dim,position | v: position,head_dim)",
		"dtype", "f32", "positions", (json_int_t)llm_kv_positions(C), "bytes",
		(json_int_t)(1 * 2 * 1 * llm_kv_positions(C) * 2 * 4)));
	json_object_set_new(m, "weights",
	    json_pack("{s:s,s:i,s:i,s:I,s:s,s:O}", "file", "weights.bin", "header_bytes", LLM_WEIGHTS_HEADER_BYTES,
		"alignment", 64, "data_bytes", (json_int_t)dbytes, "fingerprint", fphex, "tensors", tensors));
	static const char *const names[3] = {"prefill", "prefill_kv", "decode"};
	json_t *phases = json_array();
	for (int i = 0; i < 3; i++) {
		char entry[64], file[64];
		snprintf(entry, sizeof(entry), "llm_%s", names[i]);
		snprintf(file, sizeof(file), "%s.mlir", names[i]);
		json_array_append_new(phases,
		    json_pack("{s:s,s:s,s:s,s:I,s:[o,o,o,o,o,o]}", "name", names[i], "entry", entry, "file", file,
			"tokens", (json_int_t)(i == 2 ? 1 : S), "args", arg("weights", "memref<?xi8>"),
			arg("kv", "memref<?xi8>"), arg("tokens", "memref<?xi64>"), arg("pos", "i64"),
			arg("n_tokens", "i64"), arg("logits", "memref<?xf32>")));
	}
	json_object_set_new(m, "phases", phases);
	char *path = llm_path_join(out, "model.json");
	if (llm_json_write(path, m) < 0)
		llm_fatal("%s", llm_errmsg());
	free(path);

	/* weights.bin */
	size_t wlen = LLM_WEIGHTS_HEADER_BYTES + dbytes;
	uint8_t *w = llm_xcalloc(1, wlen);
	llm_weights_header_encode(w, fp, dbytes);
	float *table = (float *)(w + LLM_WEIGHTS_HEADER_BYTES);
	for (int v = 9; v < V; v++)
		table[v] = (float)v / 4;
	path = llm_path_join(out, "weights.bin");
	if (llm_write_file(path, w, wlen) < 0)
		llm_fatal("%s", llm_errmsg());
	free(path);
	/* weights.json, as llm-pack-weights writes it (formats.txt section 3) */
	char sum[17], dig[17], smp[17];
	uint64_t cs = llm_fnv1a(LLM_FNV_INIT, table, tbytes);
	llm_hex64(cs, sum);
	llm_hex64(llm_weights_digest_step(LLM_FNV_INIT, 0, tbytes, cs), dig);
	llm_hex64(llm_weights_sample(w, wlen), smp);
	json_t *wj = json_pack("{s:s,s:s,s:s,s:s,s:s,s:i,s:I,s:{s:[]},s:[{s:s,s:s,s:[i],s:i,s:I,s:s}]}", "format",
	    LLM_WEIGHTS_FORMAT, "fingerprint", fphex, "digest", dig, "sample", smp, "file", "weights.bin",
	    "header_bytes", LLM_WEIGHTS_HEADER_BYTES, "data_bytes", (json_int_t)dbytes, "source", "files", "tensors",
	    "name", "table", "dtype", "f32", "shape", V, "offset", 0, "bytes", (json_int_t)tbytes, "checksum", sum);
	path = llm_path_join(out, LLM_WEIGHTS_JSON);
	if (!wj || llm_json_write(path, wj) < 0)
		llm_fatal("%s: %s", path, wj ? llm_errmsg() : "json_pack failed");
	json_decref(wj);
	free(path);
	free(w);

	/* tokenizer.json: GPT-2 byte level, token v = byte v. */
	json_t *vocab = json_object();
	int n = 0;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
		int cp = printable ? b : 256 + n++;
		char u[3];
		if (cp < 0x80) {
			u[0] = (char)cp;
			u[1] = 0;
		} else {
			u[0] = (char)(0xc0 | cp >> 6);
			u[1] = (char)(0x80 | (cp & 0x3f));
			u[2] = 0;
		}
		json_object_set_new(vocab, u, json_integer(b));
	}
	json_t *tok = json_pack("{s:s,s:[{s:i,s:s,s:b},{s:i,s:s,s:b}],s:n,s:{s:s},s:{s:s},s:{s:s,s:o,s:[]}}", "version",
	    "1.0", "added_tokens", "id", BOS, "content", "<s>", "special", 1, "id", EOS, "content", "</s>", "special",
	    1, "normalizer", "pre_tokenizer", "type", "ByteLevel", "decoder", "type", "ByteLevel", "model", "type",
	    "BPE", "vocab", vocab, "merges");
	path = llm_path_join(out, "tokenizer.json");
	if (llm_json_write(path, tok) < 0)
		llm_fatal("%s", llm_errmsg());
	free(path);

	/* The phases. */
	char *tmpl;
	if (llm_read_file(argv[optind], &tmpl, NULL) < 0)
		llm_fatal("%s", llm_errmsg());
	char fpdec[32];
	snprintf(fpdec, sizeof(fpdec), "%" PRId64, (int64_t)fp);
	for (int i = 0; i < 3; i++) {
		char entry[64], phase[8];
		snprintf(entry, sizeof(entry), "llm_%s", names[i]);
		snprintf(phase, sizeof(phase), "%d", i + 1);
		char *a = replace(tmpl, "@ENTRY@", entry), *b = replace(a, "@PHASE@", phase);
		char *c = replace(b, "@FP@", fpdec);
		char *file = llm_xasprintf("%s/%s.mlir", out, names[i]);
		if (llm_write_file(file, c, strlen(c)) < 0)
			llm_fatal("%s", llm_errmsg());
		free(a);
		free(b);
		free(c);
		free(file);
	}
	free(tmpl);
	json_decref(m);
	json_decref(tok);
	json_decref(config);
	json_decref(dtypes);
	json_decref(limits);
	json_decref(tensors);
	return 0;
}
