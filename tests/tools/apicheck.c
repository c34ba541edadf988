/* apicheck: the public API (include/llm.h) on a compiled model, misuse
 * included.  Each check prints "ok"/"FAIL" and a name; the last line is
 * "apicheck: N passed, N failed", and the exit status 1 when one failed.
 *
 *   apicheck model.llm not-a-bundle tmpdir logits.f32 id,id,...
 *
 * not-a-bundle: any file that is not a model; tmpdir: for state files;
 * the ids: a prompt whose last token's logits, then those of 4 greedy
 * steps, are written to logits.f32 (for the test to compare with
 * llm-run --logits). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/llm.h"

static int npass, nfail;

static void
check(int ok, const char *name)
{
	printf("%s %s%s%s\n", ok ? "ok" : "FAIL", name, ok ? "" : ": ", ok ? "" : llm_errmsg());
	ok ? npass++ : nfail++;
}

/* status rc is want */
static void
status(int rc, int want, const char *name)
{
	char b[256];
	snprintf(b, sizeof(b), "%s: %s (got %s)", name, llm_status_name(want), llm_status_name(rc));
	check(rc == want, b);
}

static int64_t prompt[256];
static size_t nprompt;
static struct llm *model;

/* Greedy: the prompt then k tokens; the tokens in out. */
static int
greedy(struct llm_seq *s, int k, int64_t *out, FILE *logits)
{
	struct llm_sampling g = LLM_SAMPLING_GREEDY;
	if (llm_seq_eval(s, prompt, nprompt))
		return -1;
	for (int i = 0; i < k; i++) {
		if (logits)
			fwrite(llm_seq_logits(s), sizeof(float), (size_t)llm_vocab_size(model), logits);
		if (llm_seq_sample(s, &g, &out[i]) || llm_seq_eval(s, &out[i], 1))
			return -1;
	}
	return 0;
}

/* llm_embed of the prompt (mean, normalized): the first floats. */
static float embedding[64];

static void *
embed_main(void *arg)
{
	float *e;
	size_t dim;
	int *ok = arg;
	*ok = 0;
	for (int i = 0; i < 3; i++) {
		if (llm_embed(model, prompt, nprompt, LLM_POOL_MEAN, 1, &e, &dim))
			return NULL;
		size_t k = dim < 64 ? dim : 64;
		int same = !memcmp(e, embedding, k * sizeof(float));
		llm_free(e);
		if (!same)
			return NULL;
	}
	*ok = 1;
	return NULL;
}

static void *
thread_main(void *arg)
{
	struct llm_seq *s;
	if (llm_seq_new(model, 64, &s) || greedy(s, 8, arg, NULL))
		((int64_t *)arg)[0] = -1;
	llm_seq_free(&s);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct llm_options o = LLM_OPTIONS_INIT;
	struct llm_seq *s, *t;
	struct llm *m = NULL;
	char path[4096];

	if (argc != 6) {
		fprintf(stderr, "usage: apicheck model.llm not-a-bundle tmpdir logits.f32 id,id,...\n");
		return 2;
	}
	for (char *p = argv[5]; *p && nprompt < 256; p += *p == ',')
		prompt[nprompt++] = strtoll(p, &p, 10);

	/* opening */
	status(llm_open(NULL, NULL, &m), LLM_ERR_ARG, "open NULL path");
	status(llm_open(argv[1], NULL, NULL), LLM_ERR_ARG, "open NULL out");
	status(llm_open("/nonexistent/model.llm", NULL, &m), LLM_ERR_IO, "open a missing file");
	check(m == NULL && strstr(llm_errmsg(), "/nonexistent/model.llm") != NULL, "the message names the file");
	status(llm_open(argv[2], NULL, &m), LLM_ERR_FORMAT, "open a file that is no model");
	o.context = 1 << 30;
	status(llm_open(argv[1], &o, &m), LLM_ERR_CONTEXT, "open with a context too large");
	o.context = -1;
	status(llm_open(argv[1], &o, &m), LLM_ERR_ARG, "open with a negative context");
	o.chat_template = "nope";
	status(llm_open(argv[1], &o, &m), LLM_ERR_ARG, "open with an unknown chat template");
	o.chat_template = NULL;
	o.context = 48;
	status(llm_open(argv[1], &o, &m), LLM_OK, "open");
	if (!m)
		return 1;
	model = m;
	check(llm_vocab_size(m) > 0 && llm_context_limit(m) >= 64, "vocabulary and context limit");
	check(llm_vocab_size(NULL) == -1 && llm_seq_pos(NULL) == -1 && llm_seq_logits(NULL) == NULL, "NULL handles");
	check(llm_chat_template_name(m) != NULL, "a chat template");
	check(llm_status_name(LLM_ERR_TEXT) && !strcmp(llm_status_name(LLM_ERR_TEXT), "LLM_ERR_TEXT") &&
		!llm_status_name(99),
	    "status names");

	/* text */
	int64_t *ids;
	size_t n, len;
	char *text;
	status(llm_tokenize(m, "Hello world", 11, 0, &ids, &n), LLM_OK, "tokenize");
	status(llm_detokenize(m, ids, n, &text, &len), LLM_OK, "detokenize");
	check(len == 11 && !strcmp(text, "Hello world"), "detokenize(tokenize(text)) is the text");
	llm_free(text);
	char joined[64] = "", *piece;
	size_t plen;
	for (size_t i = 0; i < n && llm_token_piece(m, ids[i], 0, &piece, &plen) == LLM_OK; i++) {
		if (strlen(joined) + plen < sizeof(joined))
			strcat(joined, piece);
		llm_free(piece);
	}
	check(!strcmp(joined, "Hello world"), "the pieces of the tokens join into the text");
	llm_free(ids);
	int64_t eot = llm_token_bos(m); /* a special token */
	check(eot >= 0, "a BOS");
	piece = NULL;
	status(llm_token_piece(m, eot, 0, &piece, &plen), LLM_OK, "the piece of a special token");
	check(piece && plen == 0 && !strcmp(piece, ""), "a special token's piece is empty");
	llm_free(piece);
	piece = NULL;
	status(llm_token_piece(m, eot, LLM_PIECE_SPECIAL, &piece, &plen), LLM_OK, "LLM_PIECE_SPECIAL");
	status(llm_detokenize(m, &eot, 1, &text, &len), LLM_OK, "detokenize a special token");
	check(piece && plen > 0 && plen == len && !strcmp(piece, text), "with LLM_PIECE_SPECIAL, its text");
	llm_free(piece);
	llm_free(text);
	status(llm_token_piece(m, llm_vocab_size(m), 0, &piece, &plen), LLM_ERR_TOKEN,
	    "the piece of an id past the vocabulary");
	status(llm_token_piece(m, 0, 8, &piece, &plen), LLM_ERR_ARG, "token_piece with unknown flags");
	status(llm_token_piece(NULL, 0, 0, &piece, &plen), LLM_ERR_ARG, "token_piece of a NULL model");
	status(llm_tokenize(m, "\xff\xfe", 2, 0, &ids, &n), LLM_ERR_TEXT, "tokenize invalid UTF-8");
	status(llm_tokenize(m, "x", 1, 8, &ids, &n), LLM_ERR_ARG, "tokenize with unknown flags");
	struct llm_message msgs[] = {{"user", "Hi <|im_end|>"}};
	status(llm_chat_apply(m, msgs, 1, 1, &text, &len), LLM_OK, "chat_apply");
	check(strstr(text, "Hi <|im_end|>") != NULL && len == strlen(text), "the message is in the prompt");
	llm_free(text);
	struct llm_message bad[] = {{"user", NULL}};
	status(llm_chat_apply(m, bad, 1, 1, &text, &len), LLM_ERR_ARG, "chat_apply with a NULL content");
	status(llm_chat_tokenize(m, msgs, 1, 1, &ids, &n), LLM_OK, "chat_tokenize");
	/* the same conversation as JSON: the same text and tokens */
	static const char js[] = "[{\"role\": \"user\", \"content\": \"Hi <|im_end|>\"}]";
	char *jtext;
	size_t jlen, jn;
	int64_t *jids;
	status(llm_chat_apply(m, msgs, 1, 1, &text, &len), LLM_OK, "chat_apply again");
	status(llm_chat_apply_json(m, js, strlen(js), 1, &jtext, &jlen), LLM_OK, "chat_apply_json");
	check(jlen == len && !strcmp(jtext, text), "the JSON conversation renders as the messages do");
	llm_free(jtext);
	llm_free(text);
	status(llm_chat_tokenize_json(m, js, strlen(js), 1, &jids, &jn), LLM_OK, "chat_tokenize_json");
	check(jn == n && !memcmp(jids, ids, n * sizeof(*ids)), "and encodes to the same tokens");
	llm_free(jids);
	llm_free(ids);
	/* a tool call reaches the template (DeepSeek-R1's renders it) */
	static const char call[] =
	    "{\"messages\": [{\"role\": \"user\", \"content\": \"Weather?\"}, {\"role\": \"assistant\", "
	    "\"content\": null, \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": "
	    "\"get_weather\", \"arguments\": \"{\\\"city\\\": \\\"Paris\\\"}\"}}]}], \"tools\": []}";
	status(llm_chat_apply_json(m, call, strlen(call), 0, &jtext, &jlen), LLM_OK,
	    "chat_apply_json with a tool call");
	check(jtext && strstr(jtext, "get_weather") && strstr(jtext, "{\"city\": \"Paris\"}"),
	    "the tool call is in the prompt");
	llm_free(jtext);
	status(llm_chat_apply_json(m, "[{\"role\": 1}]", 14, 1, &jtext, &jlen), LLM_ERR_ARG,
	    "chat_apply_json with a bad message");
	status(llm_chat_apply_json(m, "[", 1, 1, &jtext, &jlen), LLM_ERR_ARG, "chat_apply_json with bad JSON");
	status(llm_chat_tokenize_json(m, NULL, 0, 1, &jids, &jn), LLM_ERR_ARG, "chat_tokenize_json with NULL");

	/* sequences */
	status(llm_seq_new(NULL, 0, &s), LLM_ERR_ARG, "seq_new NULL model");
	status(llm_seq_new(m, llm_context_limit(m) + 1, &s), LLM_ERR_CONTEXT, "seq_new past the limit");
	status(llm_seq_new(m, 0, &s), LLM_OK, "seq_new");
	check(llm_seq_context(s) == 48, "the model's default context");
	struct llm_sampling g = LLM_SAMPLING_GREEDY;
	int64_t id, over[64] = {0};
	status(llm_seq_sample(s, &g, &id), LLM_ERR_ARG, "sample before any eval");
	check(llm_seq_logits(s) == NULL, "no logits before any eval");
	int64_t badid = llm_vocab_size(m);
	status(llm_seq_eval(s, &badid, 1), LLM_ERR_TOKEN, "eval an id outside the vocabulary");
	status(llm_seq_eval(s, over, 49), LLM_ERR_CONTEXT, "eval past the context");
	check(llm_seq_pos(s) == 0, "nothing appended");
	status(llm_close(&m), LLM_ERR_ARG, "close with a sequence alive");
	check(m != NULL, "the model stays open");

	/* the logits of the prompt and 4 greedy steps, for llm-run's */
	FILE *f = fopen(argv[4], "wb");
	int64_t gen[8];
	check(f && greedy(s, 4, gen, f) == 0 && fclose(f) == 0, "greedy generation");
	int64_t pos = llm_seq_pos(s);

	/* save, load into another sequence (smaller: grown), go on alike */
	snprintf(path, sizeof(path), "%s/state", argv[3]);
	status(llm_seq_save(s, path), LLM_OK, "seq_save");
	status(llm_seq_new(m, 4, &t), LLM_OK, "seq_new of 4 positions");
	status(llm_seq_load(t, path), LLM_OK, "seq_load");
	check(llm_seq_pos(t) == pos && llm_seq_context(t) >= pos &&
		!memcmp(llm_seq_tokens(t), llm_seq_tokens(s), (size_t)pos * sizeof(int64_t)),
	    "the loaded sequence's tokens");
	int64_t a, b;
	int same = 1;
	for (int i = 0; i < 3; i++) {
		same &= !memcmp(llm_seq_logits(s), llm_seq_logits(t), (size_t)llm_vocab_size(m) * sizeof(float));
		same &= !llm_seq_sample(s, &g, &a) && !llm_seq_sample(t, &g, &b) && a == b;
		same &= !llm_seq_eval(s, &a, 1) && !llm_seq_eval(t, &b, 1);
	}
	check(same, "a loaded sequence goes on as the saved one, bit for bit");
	/* rewind: the same prefix again gives the same logits */
	float *before = malloc((size_t)llm_vocab_size(m) * sizeof(float));
	memcpy(before, llm_seq_logits(s), (size_t)llm_vocab_size(m) * sizeof(float));
	int64_t last = llm_seq_tokens(s)[llm_seq_pos(s) - 1];
	status(llm_seq_rewind(s, llm_seq_pos(s) - 1), LLM_OK, "rewind by one");
	check(llm_seq_logits(s) == NULL, "no logits after a rewind");
	status(llm_seq_save(s, path), LLM_ERR_ARG, "save without logits");
	check(!llm_seq_eval(s, &last, 1) &&
		!memcmp(before, llm_seq_logits(s), (size_t)llm_vocab_size(m) * sizeof(float)),
	    "the token again: the same logits");
	free(before);
	status(llm_seq_rewind(s, llm_seq_pos(s) + 1), LLM_ERR_ARG, "rewind forward");
	/* replies split by the template's format (deepseek-r1's: the thought opened by the prompt) */
	{
		char *rj = NULL, *rg = NULL, *pre = NULL, *rp;
		size_t jl, pl;
		static const char reply[] = "hm</think>\n\nYes.";
		static const char tools[] =
		    "[{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
		    "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}]";
		check(!strcmp(llm_chat_reply_format(m), "deepseek-r1"), "the reply format of the model's template");
		check(llm_chat_template_source(m) && strstr(llm_chat_template_source(m), "Assistant"),
		    "the template's text");
		status(llm_chat_apply(m, (struct llm_message[]){{"user", "Hi"}}, 1, 1, &rp, &pl), LLM_OK, "apply");
		check(llm_chat_prompt_thinking(m, rp, pl) == 1, "its generation prompt opens a thought");
		llm_free(rp);
		status(llm_chat_parse_reply(m, reply, strlen(reply), LLM_PARSE_REASONING | LLM_PARSE_THINKING, &rj,
			   &jl),
		    LLM_OK, "parse_reply");
		check(rj && strlen(rj) == jl &&
			!strcmp(rj, "{\"role\":\"assistant\",\"content\":\"Yes.\",\"reasoning_content\":\"hm\"}"),
		    "the thought apart");
		llm_free(rj);
		status(llm_chat_parse_reply(m, "a\377", 2, 0, &rj, NULL), LLM_ERR_TEXT, "parse_reply of bad UTF-8");
		status(llm_chat_parse_reply(m, "a", 1, 64, &rj, NULL), LLM_ERR_ARG, "parse_reply with unknown flags");
		status(llm_chat_parse_reply(NULL, "a", 1, 0, &rj, NULL), LLM_ERR_ARG, "parse_reply without a model");
		status(llm_chat_tool_grammar(m, tools, strlen(tools), NULL, 1, 1, &rg, &pre), LLM_OK, "tool_grammar");
		check(llm_grammar_check(rg) == LLM_OK && !strncmp(pre, "</think>", 8),
		    "a grammar, and a prefix that closes "
		    "the thought");
		llm_free(rg);
		llm_free(pre);
		status(llm_chat_tool_grammar(m, "{}", 2, NULL, 1, 0, &rg, &pre), LLM_ERR_ARG,
		    "tool_grammar of no array");
		status(llm_chat_tool_grammar(m, tools, strlen(tools), "nope", 1, 0, &rg, &pre), LLM_ERR_ARG,
		    "tool_grammar of no such tool");
	}
	/* embeddings: misuse; a sequence is not disturbed by them */
	{
		float *e = NULL, *e2 = NULL;
		size_t dim = 0, dim2 = 0;
		int64_t limit = llm_context_limit(m), *many = calloc((size_t)limit + 1, sizeof(int64_t));
		check(llm_embed_dim(NULL) == -1 && llm_embed_dim(m) > 0, "embed_dim");
		status(llm_embed(NULL, prompt, nprompt, LLM_POOL_LAST, 0, &e, &dim), LLM_ERR_ARG,
		    "embed with a NULL model");
		status(llm_embed(m, NULL, 3, LLM_POOL_LAST, 0, &e, &dim), LLM_ERR_ARG, "embed NULL ids");
		status(llm_embed(m, prompt, 0, LLM_POOL_LAST, 0, &e, &dim), LLM_ERR_ARG, "embed no tokens");
		status(llm_embed(m, prompt, nprompt, 2, 0, &e, &dim), LLM_ERR_ARG, "embed with an unknown pooling");
		status(llm_embed(m, prompt, nprompt, LLM_POOL_LAST, 0, NULL, &dim), LLM_ERR_ARG,
		    "embed with a NULL out");
		status(llm_embed(m, prompt, nprompt, LLM_POOL_LAST, 0, &e, NULL), LLM_ERR_ARG, "embed with a NULL dim");
		status(llm_embed(m, &badid, 1, LLM_POOL_LAST, 0, &e, &dim), LLM_ERR_TOKEN,
		    "embed an id outside the vocabulary");
		status(llm_embed(m, many, (size_t)limit + 1, LLM_POOL_MEAN, 0, &e, &dim), LLM_ERR_CONTEXT,
		    "embed more tokens than the context limit");
		check(e == NULL && dim == 0, "nothing written on failure");
		size_t nv = (size_t)llm_vocab_size(m);
		float *lg = malloc(nv * sizeof(float));
		memcpy(lg, llm_seq_logits(s), nv * sizeof(float));
		int64_t p0 = llm_seq_pos(s), tail = llm_seq_tokens(s)[p0 - 1];
		status(llm_embed(m, prompt, nprompt, LLM_POOL_MEAN, 1, &e, &dim), LLM_OK, "embed");
		check(e && dim == (size_t)llm_embed_dim(m), "llm_embed_dim floats");
		check(llm_seq_pos(s) == p0 && !memcmp(lg, llm_seq_logits(s), nv * sizeof(float)),
		    "the sequence's position and logits are as they were");
		check(!llm_seq_rewind(s, p0 - 1) && !llm_seq_eval(s, &tail, 1) &&
			!memcmp(lg, llm_seq_logits(s), nv * sizeof(float)),
		    "and its KV cache: its last token again gives its logits");
		status(llm_embed(m, many, (size_t)limit, LLM_POOL_LAST, 0, &e2, &dim2), LLM_OK,
		    "embed as many tokens as the context limit");
		llm_free(e2);
		status(llm_embed(m, prompt, nprompt, LLM_POOL_MEAN, 1, &e2, &dim2), LLM_OK, "embed again");
		check(dim2 == dim && !memcmp(e, e2, dim * sizeof(float)), "the same embedding, bit for bit");
		memcpy(embedding, e, dim * sizeof(float) < sizeof(embedding) ? dim * sizeof(float) : sizeof(embedding));
		llm_free(e);
		llm_free(e2);
		free(lg);
		free(many);
	}
	/* llm_seq_reseed: a seeded draw repeats from the same logits, whatever was drawn before */
	{
		struct llm_sampling r = LLM_SAMPLING_DEFAULT;
		r.temperature = 1.5, r.top_k = 0, r.top_p = 1, r.min_p = 0, r.seed = 11;
		int64_t first[8], again[8], cont[8];
		int64_t p0 = llm_seq_pos(s);
		int ok = 1;
		status(llm_seq_reseed(NULL), LLM_ERR_ARG, "reseed NULL");
		for (int round = 0; round < 3; round++) {
			int64_t *to = round == 0 ? first : round == 1 ? cont : again;
			if (round == 2)
				ok &= !llm_seq_reseed(s);
			ok &= !llm_seq_rewind(s, p0 - 1) && !llm_seq_eval(s, &last, 1);
			for (int i = 0; i < 8; i++)
				ok &= !llm_seq_sample(s, &r, &to[i]);
		}
		check(ok && !memcmp(first, again, sizeof(first)), "after llm_seq_reseed the seed's draws again");
		check(memcmp(first, cont, sizeof(first)) != 0, "without it the draws go on");
	}
	/* bad state files */
	snprintf(path, sizeof(path), "%s/state", argv[3]);
	status(llm_seq_load(t, argv[2]), LLM_ERR_FORMAT, "load a file that is no state");
	FILE *in = fopen(path, "rb"), *out;
	char cut[4096];
	snprintf(cut, sizeof(cut), "%s/cut", argv[3]);
	out = fopen(cut, "wb");
	char buf[100];
	size_t k = fread(buf, 1, sizeof(buf), in);
	fwrite(buf, 1, k, out);
	fclose(in);
	fclose(out);
	status(llm_seq_load(t, cut), LLM_ERR_FORMAT, "load a truncated state");
	status(llm_seq_load(t, "/nonexistent/state"), LLM_ERR_IO, "load a missing state");
	llm_seq_free(&t);
	llm_seq_free(&t);
	check(t == NULL, "a second seq_free is nothing");

	/* a chat: the second turn keeps what the first shares with it */
	struct llm_seq *u;
	int64_t keep, *cids, reply[3];
	size_t ncids, n1;
	status(llm_seq_new(m, 0, &u), LLM_OK, "seq_new for a chat");
	struct llm_message turn1[] = {{"user", "Hi"}};
	static const char jturn1[] = "[{\"role\": \"user\", \"content\": \"Hi\"}]";
	status(llm_seq_chat_json(u, jturn1, strlen(jturn1), LLM_CHAT_GENERATION_PROMPT, &keep, &cids, &ncids), LLM_OK,
	    "seq_chat_json");
	int64_t jfirst[64];
	size_t njfirst = ncids < 64 ? ncids : 64;
	memcpy(jfirst, cids, njfirst * sizeof(*cids));
	llm_free(cids);
	status(llm_seq_chat(u, turn1, 1, LLM_CHAT_GENERATION_PROMPT, &keep, &cids, &ncids), LLM_OK, "seq_chat");
	check(keep == 0 && ncids > 0, "the first turn: nothing kept");
	check(ncids == njfirst && !memcmp(jfirst, cids, njfirst * sizeof(*cids)), "as seq_chat_json gave it");
	n1 = ncids;
	check(!llm_seq_rewind(u, keep) && !llm_seq_eval(u, cids, ncids), "its prompt evaluated");
	llm_free(cids);
	char rtext[256] = "";
	for (int i = 0; i < 3; i++) {
		char *p;
		size_t pl;
		check(!llm_seq_sample(u, &g, &reply[i]) && !llm_seq_eval(u, &reply[i], 1) &&
			!llm_token_piece(m, reply[i], 0, &p, &pl),
		    "a reply token");
		if (strlen(rtext) + pl < sizeof(rtext))
			strcat(rtext, p);
		llm_free(p);
	}
	struct llm_message turn2[] = {{"user", "Hi"}, {"assistant", rtext}, {"user", "Again"}};
	status(llm_seq_chat(u, turn2, 3, LLM_CHAT_GENERATION_PROMPT, &keep, &cids, &ncids), LLM_OK, "seq_chat again");
	/* (deepseek-r1 renders a past reply without the generation prompt's
	 * "<think>\n": the text parts after <｜Assistant｜>) */
	check(keep > 0 && keep < (int64_t)n1 && ncids > 0, "the second turn keeps the start of the first");
	check(!llm_seq_rewind(u, keep) && !llm_seq_eval(u, cids, ncids), "the second prompt evaluated");
	llm_free(cids);
	status(llm_seq_chat(u, turn2, 3, 8, &keep, &cids, &ncids), LLM_ERR_ARG, "seq_chat with unknown flags");
	status(llm_seq_chat(u, turn2, 3, 0, NULL, &cids, &ncids), LLM_ERR_ARG, "seq_chat with a NULL keep");
	llm_seq_free(&u);
	check(llm_model_warning(m) == NULL, "no warning");
	/* special-token text stays text with LLM_TOKENIZE_PLAIN */
	int64_t bos = llm_token_bos(m);
	status(llm_detokenize(m, &bos, 1, &text, &len), LLM_OK, "BOS's text");
	status(llm_tokenize(m, text, len, 0, &ids, &n), LLM_OK, "tokenize BOS's text");
	check(n == 1 && ids[0] == bos, "it is BOS");
	llm_free(ids);
	status(llm_tokenize(m, text, len, LLM_TOKENIZE_PLAIN, &ids, &n), LLM_OK, "tokenize it as plain text");
	check(n > 1, "with LLM_TOKENIZE_PLAIN it is text");
	llm_free(ids);
	llm_free(text);

	/* four sequences in four threads: each as one alone */
	int64_t alone[8], res[4][8], one[8];
	llm_seq_free(&s);
	status(llm_seq_new(m, 64, &s), LLM_OK, "seq_new again");
	check(greedy(s, 8, alone, NULL) == 0, "greedy alone");
	llm_seq_free(&s);
	/* one thread or two: the same tokens */
	status(llm_set_threads(m, 0), LLM_ERR_ARG, "set_threads 0");
	status(llm_set_threads(NULL, 1), LLM_ERR_ARG, "set_threads of a NULL model");
	status(llm_set_threads(m, 1), LLM_OK, "set_threads 1");
	status(llm_seq_new(m, 64, &s), LLM_OK, "seq_new on one thread");
	check(greedy(s, 8, one, NULL) == 0 && !memcmp(one, alone, sizeof(one)), "greedy on one thread as on two");
	llm_seq_free(&s);
	status(llm_set_threads(m, 2), LLM_OK, "set_threads 2");
	pthread_t th[6];
	int eok[2];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, thread_main, res[i]);
	for (int i = 0; i < 2; i++)
		pthread_create(&th[4 + i], NULL, embed_main, &eok[i]);
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	same = 1;
	for (int i = 0; i < 4; i++)
		same &= !memcmp(res[i], alone, sizeof(alone));
	check(same, "four sequences in four threads, each as alone");
	check(eok[0] && eok[1], "embeddings in two threads beside them, each as alone");

	status(llm_close(&m), LLM_OK, "close");
	check(m == NULL, "close sets the handle to NULL");
	status(llm_close(&m), LLM_OK, "a second close is nothing");
	printf("apicheck: %d passed, %d failed\n", npass, nfail);
	return nfail > 0;
}
