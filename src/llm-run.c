/* llm-run: run a compiled model on a prompt.
 *
 * Reads a bundle (model.llm, from llm-link) or a build directory: the
 * weights are mapped in place, the model library is loaded and checked
 * against the weights' plan fingerprint, the KV cache is allocated.  The
 * prompt (text through the tokenizer, or ids) goes through prefill and
 * prefill_kv in chunks, then decode generates greedily, one token at a
 * time, until -n tokens, an end-of-sequence id or a full context.  The
 * text goes to stdout as it is generated; time to first token and the
 * prefill and decode rates go to stderr (or all of it as one JSON object
 * with --json).  --logits keeps every logits row for the numeric tests.
 * The last step of the pipeline: llm-import, llm-pack-weights, llm-lower,
 * llm-link, llm-run. */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/json.h"
#include "../lib/runtime.h"
#include "../lib/tok.h"
#include "../lib/util.h"

static const char usage_text[] =
	"usage: llm-run [-v] [--json] [--logits file] [-n count] [-t threads] -m model\n"
	"               [-f file | -p text | --tokens ids]\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

static _Noreturn void
usage_msg(const char *msg)
{
	llm_warn("%s", msg);
	usage();
}

/* "1,2,3" -> ids. */
static void
parse_ids(const char *s, int64_t **ids, size_t *n)
{
	char *copy = llm_xstrdup(s), *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int64_t v;
		if (llm_parse_i64(t, 0, INT64_MAX, &v) < 0)
			usage_msg(llm_xasprintf("--tokens: %s", llm_errmsg()));
		*ids = llm_xreallocarray(*ids, *n + 1, sizeof(**ids));
		(*ids)[(*n)++] = v;
	}
	free(copy);
	if (*n == 0)
		usage_msg("--tokens: no ids");
}

static char *
read_prompt(const char *path, size_t *len)
{
	char *data;

	if (strcmp(path, "-") == 0) {
		struct llm_buf b = {0};
		char chunk[65536];
		size_t n;
		while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
			llm_buf_add(&b, chunk, n);
		if (ferror(stdin))
			llm_fatal("stdin: read error:");
		llm_buf_add(&b, "", 0);
		*len = b.len;
		return b.p;
	}
	if (llm_read_file(path, &data, len) < 0)
		llm_fatal("%s", llm_errmsg());
	return data;
}

/* The tokenizer, when the model has a tokenizer.json. */
static struct llm_tok *
load_tokenizer(struct llm_runtime *rt)
{
	const struct llm_member *mb = NULL;
	struct llm_tok *t;
	char *text;
	size_t len;

	for (size_t i = 0; i < rt->model.ntokenizer_files; i++)
		if (strcmp(rt->model.tokenizer_files[i], "tokenizer.json") == 0)
			mb = llm_bundle_find(&rt->bundle, "tokenizer.json");
	if (!mb)
		return NULL;
	if (llm_bundle_read(&rt->bundle, mb, &text, &len) < 0)
		llm_fatal("%s", llm_errmsg());
	if (!(t = llm_tok_load(text, len, mb->label)))
		llm_fatal("%s", llm_errmsg());
	free(text);
	return t;
}

static json_t *
ids_json(const int64_t *ids, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	return a;
}

static double
rate(double n, double secs)
{
	return secs > 0 ? n / secs : 0;
}

int
main(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_LOGITS, OPT_TOKENS };
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"logits", required_argument, NULL, OPT_LOGITS},
		{"tokens", required_argument, NULL, OPT_TOKENS},
		{NULL, 0, NULL, 0},
	};
	const char *model = NULL, *prompt = NULL, *prompt_file = NULL, *tokens_arg = NULL;
	const char *logits_path = NULL;
	int64_t max_new = 128, threads = 0;
	int json = 0, verbose = 0, ch, nsrc = 0;

	llm_setprog(argv[0]);
	while ((ch = getopt_long(argc, argv, "f:hm:n:p:t:v", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			prompt_file = optarg;
			nsrc++;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return LLM_EXIT_OK;
		case 'm':
			model = optarg;
			break;
		case 'n':
			if (llm_parse_i64(optarg, 0, INT64_MAX, &max_new) < 0)
				usage_msg(llm_xasprintf("-n: %s", llm_errmsg()));
			break;
		case 'p':
			prompt = optarg;
			nsrc++;
			break;
		case 't':
			if (llm_parse_i64(optarg, 1, 4096, &threads) < 0)
				usage_msg(llm_xasprintf("-t: %s", llm_errmsg()));
			break;
		case 'v':
			verbose = 1;
			break;
		case OPT_JSON:
			json = 1;
			break;
		case OPT_LOGITS:
			logits_path = optarg;
			break;
		case OPT_TOKENS:
			tokens_arg = optarg;
			nsrc++;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage_msg(llm_xasprintf("unexpected argument '%s'", argv[optind]));
	if (!model)
		usage_msg("no model (-m bundle or build directory)");
	if (nsrc != 1)
		usage_msg(nsrc ? "give one of -f, -p and --tokens" : "no prompt (-f, -p or --tokens)");

	/* Open the model. */
	struct llm_runtime rt;
	struct llm_runtime_opts ro = {(int)threads, verbose};
	double t_load = llm_now();
	if (llm_runtime_open(&rt, model, &ro) < 0)
		llm_fatal("%s", llm_errmsg());
	struct llm_tok *tok = load_tokenizer(&rt);
	t_load = llm_now() - t_load;
	if (verbose) {
		const struct llm_model *m = &rt.model;
		char fp[17];
		llm_hex64(rt.lib_fingerprint, fp);
		fprintf(stderr, "%s: %s: %s, %" PRId64 " layers, vocab %" PRId64 ", max_context %" PRId64
		    ", chunk %" PRId64 ", %" PRIu64 " bytes of weights mapped in place, plan %s, loaded in %.1f ms\n",
		    llm_prog, model, m->family, m->cfg.n_layers, rt.vocab, rt.max_context, m->prefill_chunk,
		    m->data_bytes, fp, t_load * 1e3);
	}

	/* The prompt as ids. */
	int64_t *ids = NULL;
	size_t nids = 0;
	if (tokens_arg)
		parse_ids(tokens_arg, &ids, &nids);
	else {
		size_t len;
		char *ptext = prompt ? llm_xstrdup(prompt) : read_prompt(prompt_file, &len);
		if (prompt)
			len = strlen(ptext);
		if (!tok)
			llm_fatal("%s: no tokenizer.json: give the prompt as --tokens", model);
		if (rt.model.add_bos && rt.model.bos_id >= 0) {
			ids = llm_xmalloc(sizeof(*ids));
			ids[nids++] = rt.model.bos_id;
		}
		if (llm_tok_encode(tok, ptext, len, &ids, &nids) < 0)
			llm_fatal("%s: %s", model, llm_errmsg());
		free(ptext);
	}
	if (nids == 0)
		llm_fatal("%s: empty prompt", model);
	if ((int64_t)nids > rt.max_context)
		llm_fatal("%s: prompt of %zu tokens does not fit max_context %" PRId64, model, nids, rt.max_context);

	struct llm_out lo;
	if (logits_path && llm_out_open(&lo, logits_path) < 0)
		llm_fatal("%s", llm_errmsg());
#define WRITE_ROW() do { \
		if (logits_path && fwrite(rt.logits, sizeof(float), (size_t)rt.vocab, lo.fp) != (size_t)rt.vocab) \
			llm_fatal("%s: write error:", logits_path); \
	} while (0)

	/* Prefill: the logits of the last prompt token give the first new one. */
	double t0 = llm_now();
	if (llm_runtime_prefill(&rt, ids, (int64_t)nids) < 0)
		llm_fatal("%s: %s", model, llm_errmsg());
	double t_prefill = llm_now() - t0, t_first = t_prefill;
	WRITE_ROW();

	/* Decode, greedy. */
	int64_t *gen = NULL, ngen = 0, ndecode = 0;
	struct llm_buf text = {0}, piece = {0};
	const char *stop = "length";
	double t_decode = 0;
	if (max_new > 0) {
		int64_t next = llm_argmax(rt.logits, rt.vocab);
		t_first = llm_now() - t0;
		for (;;) {
			int eos = 0;
			for (int i = 0; i < rt.model.n_eos; i++)
				eos |= next == rt.model.eos_ids[i];
			if (eos) {
				stop = "eos";
				break;
			}
			gen = llm_xreallocarray(gen, (size_t)ngen + 1, sizeof(*gen));
			gen[ngen++] = next;
			piece.len = 0;
			if (!tok)
				llm_buf_printf(&piece, "%s%" PRId64, ngen > 1 ? " " : "", next);
			else if (!llm_tok_is_special(tok, next))
				llm_tok_decode(tok, next, 0, &piece);
			llm_buf_add(&text, piece.p ? piece.p : "", piece.len);
			if (!json && piece.len) {
				fwrite(piece.p, 1, piece.len, stdout);
				fflush(stdout);
			}
			if (ngen == max_new)
				break;
			if (rt.pos >= rt.max_context) {
				stop = "context";
				break;
			}
			double td = llm_now();
			if (llm_runtime_decode(&rt, next) < 0)
				llm_fatal("%s: %s", model, llm_errmsg());
			t_decode += llm_now() - td;
			ndecode++;
			WRITE_ROW();
			next = llm_argmax(rt.logits, rt.vocab);
		}
	}
	if (logits_path && llm_out_commit(&lo) < 0)
		llm_fatal("%s", llm_errmsg());

	if (json) {
		struct llm_buf clean = {0};
		json_t *o = json_object(), *tm = json_object();
		llm_utf8_sanitize(text.p ? text.p : "", text.len, &clean);
		json_object_set_new(o, "model", json_string(model));
		json_object_set_new(o, "prompt_tokens", ids_json(ids, nids));
		json_object_set_new(o, "generated_tokens", ids_json(gen, (size_t)ngen));
		json_object_set_new(o, "text", json_stringn(clean.p ? clean.p : "", clean.len));
		json_object_set_new(o, "stop", json_string(stop));
		json_object_set_new(tm, "load_ms", json_real(t_load * 1e3));
		json_object_set_new(tm, "ttft_ms", json_real(t_first * 1e3));
		json_object_set_new(tm, "prefill_tokens", json_integer((json_int_t)nids));
		json_object_set_new(tm, "prefill_ms", json_real(t_prefill * 1e3));
		json_object_set_new(tm, "prefill_tps", json_real(rate((double)nids, t_prefill)));
		json_object_set_new(tm, "decode_tokens", json_integer(ndecode));
		json_object_set_new(tm, "decode_ms", json_real(t_decode * 1e3));
		json_object_set_new(tm, "decode_tps", json_real(rate((double)ndecode, t_decode)));
		json_object_set_new(o, "timings", tm);
		char *s = llm_json_dumps(o);
		fputs(s, stdout);
		free(s);
		json_decref(o);
		llm_buf_free(&clean);
	} else {
		fputc('\n', stdout);
		fprintf(stderr, "%s: time to first token %.2f ms\n", llm_prog, t_first * 1e3);
		fprintf(stderr, "%s: prefill %zu tokens in %.2f ms, %.2f t/s\n", llm_prog, nids, t_prefill * 1e3,
		    rate((double)nids, t_prefill));
		fprintf(stderr, "%s: decode %" PRId64 " tokens in %.2f ms, %.2f t/s\n", llm_prog, ndecode,
		    t_decode * 1e3, rate((double)ndecode, t_decode));
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		llm_fatal("stdout: write error:");

	llm_buf_free(&text);
	llm_buf_free(&piece);
	free(gen);
	free(ids);
	llm_tok_free(tok);
	llm_runtime_close(&rt);
	return LLM_EXIT_OK;
}
