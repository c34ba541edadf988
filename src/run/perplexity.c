/* perplexity.c: llm-run --perplexity FILE, on the public API: the text's
 * perplexity over windows of --ppl-context tokens (default 512, or the
 * sequence's context when smaller), and against a base run's logits its
 * KL divergence (lib/api/ppl.c has the method and the base file). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/json.h"
#include "../../lib/api/ppl.h"
#include "../../lib/base/util.h"
#include "run.h"

static void
progress(void *arg, int64_t chunk, int64_t n, double ppl, double seconds)
{
	(void)arg;
	fprintf(stderr, "%s: chunk %" PRId64 "/%" PRId64 ": PPL %.4f, %.1f s\n", llm_prog, chunk + 1, n, ppl, seconds);
}

static void
print_result(const struct llm_ppl_result *r, int64_t n_ctx, int json)
{
	if (json) {
		json_t *o = json_object();
		json_object_set_new(o, "chunks", json_integer(r->n_chunks));
		json_object_set_new(o, "context", json_integer(n_ctx));
		json_object_set_new(o, "scored_tokens", json_integer(r->n_scored));
		json_object_set_new(o, "seconds", json_real(r->seconds));
		json_object_set_new(o, "tokens_per_second", json_real(run_rate((double)r->n_eval, r->seconds)));
		json_object_set_new(o, "ppl", json_real(r->ppl));
		json_object_set_new(o, "ppl_error", json_real(r->ppl_err));
		if (r->has_base) {
			json_object_set_new(o, "base_ppl", json_real(r->base_ppl));
			json_object_set_new(o, "base_ppl_error", json_real(r->base_ppl_err));
			json_object_set_new(o, "kld_mean", json_real(r->kl_mean));
			json_object_set_new(o, "kld_error", json_real(r->kl_err));
			json_object_set_new(o, "kld_median", json_real(r->kl_median));
			json_object_set_new(o, "kld_99", json_real(r->kl_p99));
			json_object_set_new(o, "kld_max", json_real(r->kl_max));
			json_object_set_new(o, "same_top", json_real(r->same_top));
		}
		char *t = llm_json_dumps(o);
		run_write(t, strlen(t));
		run_write("\n", 1);
		free(t);
		json_decref(o);
	} else {
		printf("perplexity: %" PRId64 " chunks of %" PRId64 " tokens, %" PRId64 " scored, %" PRId64
		       " evaluated in %.2f s (%.2f t/s)\n",
		    r->n_chunks, n_ctx, r->n_scored, r->n_eval, r->seconds, run_rate((double)r->n_eval, r->seconds));
		printf("PPL = %.4f +/- %.5f\n", r->ppl, r->ppl_err);
		if (r->has_base) {
			printf("PPL(base) = %.4f +/- %.5f, PPL/PPL(base) = %.5f\n", r->base_ppl, r->base_ppl_err,
			    r->ppl / r->base_ppl);
			printf("KLD = %.6f +/- %.6f, median %.6f, 99%% %.6f, max %.6f\n", r->kl_mean, r->kl_err,
			    r->kl_median, r->kl_p99, r->kl_max);
			printf("same top-1 = %.3f%%\n", 100 * r->same_top);
		}
	}
	run_finish_stdout();
}

void
run_perplexity(struct llm *m, const char *model, int64_t context, const struct ppl_args *a)
{
	struct llm_ppl_result r;
	struct llm_ppl_opts po = {a->n_ctx, a->max_chunks, -1, a->save_base, a->base, NULL, NULL};
	struct llm_seq *s;
	int64_t *ids = NULL, *text_ids = NULL;
	size_t nids = 0, ntext, len;
	const char *label = strcmp(a->path, "-") == 0 ? "<stdin>" : a->path;

	if (llm_tokenize(m, "", 0, 0, &text_ids, &ntext) == LLM_ERR_UNSUPPORTED)
		llm_fatal("%s: no tokenizer.json: --perplexity needs the tokenizer", model);
	llm_free(text_ids);
	char *text = run_read_input(a->path, &len);
	if (run_text_check(label, text, len) < 0)
		llm_fatal("%s", llm_errmsg());
	if (llm_tokenize(m, text, len, 0, &text_ids, &ntext) != LLM_OK)
		llm_fatal("%s: %s", label, llm_errmsg());
	free(text);
	/* every chunk starts with BOS when the model's documents do */
	if (llm_token_add_bos(m)) {
		po.bos = llm_token_bos(m);
		ids = llm_xreallocarray(NULL, ntext + 1, sizeof(*ids));
		ids[nids++] = po.bos;
	} else
		ids = llm_xreallocarray(NULL, ntext + 1, sizeof(*ids));
	if (ntext) /* an empty text has no ids (NULL) */
		memcpy(ids + nids, text_ids, ntext * sizeof(*ids));
	nids += ntext;
	llm_free(text_ids);
	if (a->verbose)
		po.progress = progress;
	if (llm_seq_new(m, context, &s) != LLM_OK)
		llm_fatal("%s: %s", model, llm_errmsg());
	if (a->verbose)
		run_describe(model, m, s, a->t_load);
	if (po.n_ctx == 0)
		po.n_ctx = llm_seq_context(s) < 512 ? llm_seq_context(s) : 512;
	if (llm_perplexity(s, llm_vocab_size(m), ids, nids, &po, &r) < 0)
		llm_fatal("%s: %s", po.base && strstr(llm_errmsg(), po.base) ? model : label, llm_errmsg());
	llm_seq_free(&s);
	free(ids);
	print_result(&r, po.n_ctx, a->json);
}
