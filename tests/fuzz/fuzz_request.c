/* fuzz_request.c: libFuzzer target for llm-serve's request layer
 * (src/serve/request.c), on a real model: the tiny random Qwen2 with the
 * DeepSeek-R1-Distill tokenizer and template that make fuzz-build
 * compiles into build/fuzz/serve/model.llm ($LLM_FUZZ_MODEL names
 * another).
 *
 * The input's first byte picks the endpoint (chat or text completion),
 * the HTTP version, the server's address (loopback or not, with or
 * without --host-allow names), --reasoning-format and -n; then come
 * header fields, "name: value" a line, up to an empty line, and the rest
 * is the body.  The fields' framing is refused with 400 or 501 and a
 * message, or passes; Host is judged without a crash.  A body that is
 * JSON is read into a generation's parameters: a refusal leaves a
 * message that is valid UTF-8, names no path of the server and fits its
 * buffer; an acceptance gives parameters inside the ranges llm-serve(1)
 * states, a grammar that parses, a conversation that is JSON, and prompt
 * tokens inside the vocabulary.  Build and run: see tests/fuzz/README. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../include/llm.h"
#include "../../lib/base/utf8.h"
#include "../../lib/base/util.h"
#include "../../src/serve/request.h"

#ifndef LLM_SRCDIR
#define LLM_SRCDIR "."
#endif
#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

static struct llm *model;
static const char *model_path;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	model_path = getenv("LLM_FUZZ_MODEL");
	if (!model_path || !*model_path)
		model_path = LLM_SRCDIR "/build/fuzz/serve/model.llm";
	if (llm_open(model_path, NULL, &model) != LLM_OK) {
		fprintf(stderr, "fuzz_request: %s (make fuzz-build makes it)\n", llm_errmsg());
		abort();
	}
	return 0;
}

/* The header block's fields, cut into NUL-ended strings in buf. */
static size_t
fields_of(char *buf, size_t len, struct serve_field *f, size_t max)
{
	size_t n = 0;
	char *p = buf, *end = buf + len;
	while (p < end && n < max) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
		*e = 0;
		if (e > p && e[-1] == '\r')
			e[-1] = 0;
		char *colon = strchr(p, ':');
		if (colon) {
			*colon = 0;
			char *v = colon + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			f[n++] = (struct serve_field){p, v};
		}
		p = e + 1;
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned flags = data[0];
	int chat = flags & 1;
	const char *version = flags & 2 ? "HTTP/1.0" : "HTTP/1.1";
	data++, size--;

	/* the header block, up to an empty line */
	size_t hlen = 0;
	while (hlen + 1 < size && !(data[hlen] == '\n' && (data[hlen + 1] == '\n' || (data[hlen + 1] == '\r'))))
		hlen++;
	size_t body_at = hlen < size ? hlen + 1 : size;
	while (body_at < size && (data[body_at] == '\r' || data[body_at] == '\n') && body_at - hlen < 4)
		body_at++;
	char *hb = llm_xstrndup((const char *)data, hlen);
	struct serve_field f[32];
	size_t nf = fields_of(hb, strlen(hb), f, LLM_NELEM(f));
	const char *why = (const char *)1;
	unsigned st = serve_check_framing(f, nf, version, &why);
	CHECK((st == 0 && !why) || ((st == 400 || st == 501) && why && *why));
	char *allow[] = {"example.com", "[fe80::1]"};
	struct serve_names names = {flags & 4 ? "127.0.0.1" :
		    flags & 8                 ? "::1" :
						"0.0.0.0",
		!!(flags & 12), flags & 16 ? allow : NULL, flags & 16 ? 2 : 0};
	for (size_t i = 0; i < nf; i++)
		if (strcasecmp(f[i].name, "Host") == 0) {
			int ok = serve_host_allowed(&names, f[i].value);
			CHECK(ok == 0 || ok == 1);
			if (names.loopback && strcmp(f[i].value, "localhost") == 0)
				CHECK(ok);
		}
	free(hb);

	/* the body */
	json_t *j = json_loadb((const char *)data + body_at, size - body_at, JSON_REJECT_DUPLICATES, NULL);
	if (!j)
		return 0;
	struct serve_conf conf = {model, !!(flags & 32), flags & 64 ? 16 : -1, 7};
	struct serve_params p = {0};
	struct serve_bad b = {"", NULL};
	int64_t *ids = NULL;
	size_t n = 0;
	if (serve_params_read(&conf, j, chat, &p, &ids, &n, &b) < 0) {
		size_t len = strnlen(b.msg, sizeof(b.msg));
		CHECK(len > 0 && len < sizeof(b.msg));
		CHECK(llm_utf8_valid(b.msg, len));
		/* no path of the server, unless the client gave it */
		CHECK(!strstr(b.msg, model_path) || memmem(data, size, model_path, strlen(model_path)));
	} else {
		CHECK(p.chat == chat && p.n >= 1 && p.n <= SERVE_MAX_CHOICES && !(p.n > 1 && p.stream));
		CHECK(p.max_tokens >= -1 && p.nstop <= 4 && p.sp.grammar == p.grammar);
		for (size_t i = 0; i < p.nstop; i++)
			CHECK(p.stop[i][0] != 0);
		CHECK(p.logprobs >= -1 && p.logprobs <= 20 && !(p.echo && p.logprobs >= 0));
		CHECK(p.sp.temperature >= 0 && p.sp.temperature <= 2 && p.sp.top_p >= 0 && p.sp.top_p <= 1);
		if (p.grammar)
			CHECK(llm_grammar_check(p.grammar) == LLM_OK);
		CHECK(!chat == !p.conv);
		if (p.conv) {
			json_t *c = json_loadb(p.conv, p.convlen, 0, NULL);
			CHECK(json_is_array(json_object_get(c, "messages")));
			json_decref(c);
		}
		CHECK(!p.prefix == !p.pre_ids || (p.prefix && !*p.prefix));
		int64_t vocab = llm_vocab_size(model);
		for (size_t i = 0; i < n; i++)
			CHECK(ids[i] >= 0 && ids[i] < vocab);
	}
	llm_free(ids);
	serve_params_free(&p);
	json_decref(j);
	return 0;
}
