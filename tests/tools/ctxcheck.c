/* ctxcheck: several contexts on one opened runtime (runtime.h llm_ctx),
 * each in a thread of its own at once, against one context run alone.
 *
 * ctxcheck [-j threads] [-n steps] model prompt...
 *
 * Each prompt (comma-separated token ids) is prefilled, then -n greedy
 * decode steps follow; the logits of every step are kept.  First each
 * prompt alone, one after the other, on one context; then one
 * context per prompt, all run at once in -j rounds of threads.  Every
 * logit must be bit for bit the same.  Prints one line; exits 0 when they
 * are, 1 when not, 2 on a usage or load error. */
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/runtime/runtime.h"
#include "../../lib/base/util.h"

struct job {
	const struct llm_runtime *rt;
	int64_t *ids, n;
	int steps;
	float *want, *got; /* (steps + 1) * vocab */
	const char *err;
};

static int64_t
parse_ids(const char *s, int64_t **out)
{
	int64_t n = 0, *ids = NULL;
	for (const char *p = s; *p;) {
		char *end;
		long long v = strtoll(p, &end, 10);
		if (end == p || (*end && *end != ','))
			llm_fatal("bad token list '%s'", s);
		ids = llm_xreallocarray(ids, (size_t)n + 1, sizeof(*ids));
		ids[n++] = v;
		p = *end ? end + 1 : end;
	}
	if (!n)
		llm_fatal("empty token list");
	*out = ids;
	return n;
}

/* The prompt, then steps greedy tokens, on c; each step's logits into
 * out. */
static int
run(struct llm_ctx *c, int64_t vocab, const int64_t *ids, int64_t n, int steps, float *out)
{
	if (llm_ctx_prefill(c, ids, n) < 0)
		return -1;
	for (int s = 0;; s++) {
		memcpy(out + (size_t)s * (size_t)vocab, llm_ctx_logits(c), (size_t)vocab * sizeof(float));
		if (s == steps)
			return 0;
		if (llm_ctx_decode(c, llm_argmax(llm_ctx_logits(c), vocab)) < 0)
			return -1;
	}
}

static void *
job_main(void *arg)
{
	struct job *j = arg;
	struct llm_ctx *c = llm_ctx_new(j->rt, 0);
	if (!c || run(c, llm_runtime_vocab(j->rt), j->ids, j->n, j->steps, j->got) < 0)
		j->err = llm_xstrdup(llm_errmsg());
	llm_ctx_free(c);
	return NULL;
}

int
main(int argc, char **argv)
{
	int steps = 4, rounds = 1, ch;
	llm_prog = "ctxcheck";
	while ((ch = getopt(argc, argv, "j:n:")) != -1) {
		if (ch == 'n')
			steps = atoi(optarg);
		else if (ch == 'j')
			rounds = atoi(optarg);
		else {
			fprintf(stderr, "usage: ctxcheck [-j rounds] [-n steps] model prompt...\n");
			return 2;
		}
	}
	if (argc - optind < 2 || steps < 0 || rounds < 1) {
		fprintf(stderr, "usage: ctxcheck [-j rounds] [-n steps] model prompt...\n");
		return 2;
	}
	struct llm_runtime_opts o = {0};
	struct llm_runtime *rt = llm_runtime_open(argv[optind], &o);
	if (!rt) {
		fprintf(stderr, "ctxcheck: %s\n", llm_errmsg());
		return 2;
	}
	int np = argc - optind - 1;
	int64_t v = llm_runtime_vocab(rt);
	size_t per = (size_t)(steps + 1) * (size_t)v;
	struct llm_ctx *alone = llm_ctx_new(rt, 0);
	if (!alone)
		llm_fatal("%s", llm_errmsg());
	struct job *jobs = llm_xcalloc((size_t)np, sizeof(*jobs));
	for (int i = 0; i < np; i++) {
		struct job *j = &jobs[i];
		j->rt = rt;
		j->steps = steps;
		j->n = parse_ids(argv[optind + 1 + i], &j->ids);
		j->want = llm_xcalloc(per, sizeof(float));
		j->got = llm_xcalloc(per, sizeof(float));
		/* alone, on one context used again */
		llm_ctx_reset(alone);
		if (run(alone, v, j->ids, j->n, steps, j->want) < 0)
			llm_fatal("%s", llm_errmsg());
	}
	llm_ctx_free(alone);
	int bad = 0;
	for (int r = 0; r < rounds; r++) {
		pthread_t *th = llm_xcalloc((size_t)np, sizeof(*th));
		for (int i = 0; i < np; i++)
			if (pthread_create(&th[i], NULL, job_main, &jobs[i]) != 0)
				llm_fatal("cannot start a thread");
		for (int i = 0; i < np; i++)
			pthread_join(th[i], NULL);
		free(th);
		for (int i = 0; i < np; i++) {
			if (jobs[i].err) {
				printf("prompt %d: %s\n", i + 1, jobs[i].err);
				return 1;
			}
			if (memcmp(jobs[i].want, jobs[i].got, per * sizeof(float)) != 0) {
				printf("round %d, prompt %d: logits differ from the prompt's run alone\n", r + 1,
				    i + 1);
				bad = 1;
			}
		}
	}
	if (!bad)
		printf("%d contexts in %d threads at once, %d rounds: every logit of %d steps as alone\n", np, np,
		    rounds, steps + 1);
	for (int i = 0; i < np; i++) {
		free(jobs[i].ids);
		free(jobs[i].want);
		free(jobs[i].got);
	}
	free(jobs);
	llm_runtime_close(rt);
	return bad;
}
