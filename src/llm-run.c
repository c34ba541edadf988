/* llm-run: run a compiled model: generate text, chat, benchmark, and the
 * scriptable tokenizer and chat-template modes.
 *
 * Models run through the public API (include/llm.h, libllm) alone:
 * llm_open maps a bundle (model.llm, from llm-link) or a build directory
 * in place and checks the model library against the weights' plan; a
 * sequence (llm_seq_new) holds the KV cache of -c positions.  A prompt
 * (text through the tokenizer, or ids) is evaluated in prefill chunks,
 * then each token is drawn by llm_seq_sample (greedy unless --temp) and
 * fed back, until -n tokens, an end-of-sequence id, a stop string, a full
 * context or Ctrl-C.  The text streams to stdout in whole UTF-8
 * characters (llm_token_piece through lib/text/stream.c); time to first token
 * and the prefill and decode rates go to stderr, or everything to stdout
 * as one JSON object with --json.
 *
 * -i chats: each line of stdin is a user message; llm_seq_chat renders
 * the conversation with the model's chat template and gives the tokens
 * the sequence lacks.  Modules in src/run/: --bench measures prefill and
 * decode rates on random tokens (bench.c); --perplexity measures a text's
 * perplexity (and, against a base run, the KL divergence) as
 * llama-perplexity does (perplexity.c, lib/api/ppl.c).  --tokenize,
 * --detokenize and --render run no model: they expose the tokenizer
 * (lib/text/toklines.c) and the templates (lib/text/chat.c) to scripts and golden
 * tests, and --verify reads the weights against weights.json.  The
 * options are one table (src/run/options.c), which makes getopt's lists,
 * --help and the checks of which mode each goes with.  The last step of
 * the pipeline: llm-import, llm-pack-weights, llm-lower, llm-link,
 * llm-run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../lib/base/util.h"
#include "run/run.h"

/* When main started: the origin of the time to first token from the
 * start of the process. */
static double t_start;

/* The grammar of --grammar, --grammar-file, --json-schema or
 * --json-schema-file into a->sp, checked before the model loads: a bad
 * one is one line naming the file (or the option) with its line and
 * column. */
static void
load_grammar(struct run_args *a)
{
	const char *opt = a->gram_opt, *where = a->gram_arg;
	char *text;
	size_t len;
	if (!a->gram_arg)
		return;
	int file = strcmp(opt, "--grammar-file") == 0 || strcmp(opt, "--json-schema-file") == 0;
	if (file) {
		text = run_read_input(a->gram_arg, &len);
	} else {
		text = llm_xstrdup(a->gram_arg);
		len = strlen(text);
		where = opt;
	}
	if (opt[2] == 'j') {
		char *g;
		if (llm_json_schema_to_grammar(text, len, &g) != LLM_OK)
			llm_fatal("%s: %s", where, llm_errmsg());
		free(text);
		text = g;
	} else if (strlen(text) != len) {
		llm_fatal("%s: a NUL byte in the grammar", where);
	}
	if (llm_grammar_check(text) != LLM_OK)
		llm_fatal("%s: %s", where, llm_errmsg());
	a->sp.grammar = text;
}

/* What every run of a model needs given, and a seed when none was. */
static void
check_run_args(struct run_args *a)
{
	if (!a->model)
		run_usage_msg("no model (-m bundle or build directory)");
	if (a->mode == M_NONE)
		run_usage_msg("no prompt (-i, -f, -p, --tokens, --bench or --perplexity)");
	if (!a->seeded)
		a->sp.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
}

/* -c: the positions of a sequence, up to the build's max_context (maxc:
 * llm-import --max-context sets it); 0: the default.  -ctk, -ctv: the
 * cache's type is the build's (kv: llm-import --kv-dtype); a different
 * one asked for is refused. */
static int64_t
choose_context(const struct run_args *a, int64_t maxc, const char *kv)
{
	int64_t ctx = a->ctx_model ? maxc : a->ctx_cap;
	for (int i = 0; i < 2; i++)
		if (a->kv_type[i] && strcmp(a->kv_type[i], kv) != 0)
			llm_fatal("%s: %s %s: the KV cache of this build is %s, chosen at import (llm-import "
				  "--kv-dtype)",
			    a->model, i ? "-ctv" : "-ctk", a->kv_type[i], kv);
	if (ctx > maxc)
		llm_fatal("%s: -c %" PRId64 " exceeds the context this model was built for, %" PRId64
			  " (llm-import --max-context sets it)",
		    a->model, ctx, maxc);
	return ctx;
}

/* Opens the model through the API; *ctx: -c's positions, 0 for the
 * default; *t_load: the seconds it took. */
static struct llm *
open_model(struct run_args *a, int64_t *ctx, double *t_load)
{
	struct llm *m;
	struct llm_options o = {.threads = (int)a->threads,
		.verbose = a->verbose,
		.tokenizer = a->tokenizer_path,
		.chat_template = a->template_name};
	check_run_args(a);
	/* a GGUF file or a checkpoint: its compiled bundle */
	char *bundle = run_cache_model(a->model, &a->cache);
	double t = llm_now();
	int rc = llm_open(bundle ? bundle : a->model, &o, &m);
	if (rc == LLM_ERR_RANKS && !*llm_errmsg())
		exit(LLM_EXIT_FAIL); /* rank 0 says why */
	if (rc != LLM_OK)
		llm_fatal("%s", llm_errmsg());
	free(bundle);
	if (llm_rank(m) > 0) {
		/* a tensor-parallel model's other ranks: rank 0's calls, on their
		 * part of the weights, until it closes the model */
		if (llm_follow(m) != LLM_OK)
			llm_fatal("%s", llm_errmsg());
		llm_close(&m);
		exit(LLM_EXIT_OK);
	}
	if (llm_model_warning(m))
		llm_warn("%s", llm_model_warning(m));
	*ctx = choose_context(a, llm_context_limit(m), llm_kv_type(m));
	*t_load = llm_now() - t;
	return m;
}

int
main(int argc, char **argv)
{
	struct run_args a;

	t_start = llm_now();
	argv[0] = (char *)llm_setprog(argv[0]);
	run_parse_args(argc, argv, &a);
	if (a.cache_action) {
		if (a.model || a.mode != M_NONE || a.cache.off)
			run_usage_msg("--list-cache and --prune-cache go alone (with --cache-dir)");
		run_cache_list(&a.cache, a.cache_action == 2);
		return LLM_EXIT_OK;
	}
	if (a.cache.off && a.cache.dir)
		run_usage_msg("give one of --no-cache and --cache-dir");
	a.cache.verbose = a.verbose;
	/* the build -c, -ctk/-ctv and --import-flags ask for, of a GGUF file or a checkpoint */
	run_cache_variant(&a.cache, a.ctx_cap, a.kv_type[0], a.kv_type[1]);
	if (a.mode == M_TOKENIZE || a.mode == M_DETOKENIZE || a.mode == M_RENDER || a.mode == M_PARSE) {
		if (a.model && a.tokenizer_path)
			run_usage_msg("give one of -m and --tokenizer");
		if (a.mode != M_RENDER && a.mode != M_PARSE && !a.model && !a.tokenizer_path)
			run_usage_msg("no tokenizer (-m model or --tokenizer path)");
		/* a GGUF file or a checkpoint: the tokenizer and template of
		 * its compiled bundle, those generation uses */
		char *bundle = a.model ? run_cache_model(a.model, &a.cache) : NULL;
		struct text_opts t = {a.mode == M_TOKENIZE ? TEXT_TOKENIZE :
			    a.mode == M_DETOKENIZE         ? TEXT_DETOKENIZE :
			    a.mode == M_PARSE              ? TEXT_PARSE :
							     TEXT_RENDER,
			bundle ? bundle : a.model, a.tokenizer_path, a.template_name, a.render_path, a.add_special,
			a.raw, a.plain_input, a.skip_special, a.no_gen, a.model};
		run_text(&t);
		free(bundle);
		return LLM_EXIT_OK;
	}
	if (a.mode == M_VERIFY) {
		if (!a.model)
			run_usage_msg("--verify needs -m model");
		char *bundle = run_cache_model(a.model, &a.cache);
		run_verify(bundle ? bundle : a.model);
		free(bundle);
		return LLM_EXIT_OK;
	}

	int64_t ctx;
	double t_load;
	load_grammar(&a);
	struct llm *m = open_model(&a, &ctx, &t_load);
	if (a.mode == M_BENCH)
		run_bench(m, a.model, ctx, &a.bench, (int)a.threads, a.sp.seed, a.verbose, t_load);
	else if (a.mode == M_PPL) {
		a.ppl.json = a.json;
		a.ppl.verbose = a.verbose;
		a.ppl.t_load = t_load;
		run_perplexity(m, a.model, ctx, &a.ppl);
	} else {
		int64_t *ids = NULL;
		size_t nids = 0;
		if (a.tokens_arg)
			run_parse_ids(a.tokens_arg, &ids, &nids);
		struct gen_opts g = {a.prompt, a.prompt_file, a.escape, ids, nids, a.system, a.logits_path, a.sp,
			a.max_new, a.stop, a.nstop, a.json, a.verbose, a.plain_input, a.no_echo, t_start, a.single_turn,
			a.multiline};
		if (a.mode == M_CHAT)
			run_chat(m, a.model, ctx, t_load, &g);
		else
			run_generate(m, a.model, ctx, t_load, &g);
		free(ids);
	}
	if (llm_close(&m) != LLM_OK)
		llm_fatal("%s: %s", a.model, llm_errmsg());
	free(a.stop);
	return LLM_EXIT_OK;
}
