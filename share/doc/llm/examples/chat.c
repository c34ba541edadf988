/* chat.c: a chat on libllm (llm(3)).  Each line of standard input is a
 * user turn; the reply streams to standard output, greedy, and ends with
 * a newline, after at most max tokens (default 256).  llm_seq_chat
 * renders the conversation with the model's template and gives what the
 * sequence must evaluate beyond what it keeps (the previous turns, the
 * reply as generated); llm_token_piece gives each token's bytes, joined
 * into the reply's text.
 *
 *   cc chat.c $(pkg-config --cflags --libs llm) -o chat
 *   ./chat model.llm [max]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llm.h>

/* what went wrong (what NULL: the message names the file), and exit */
static int
die(const char *what)
{
	fprintf(stderr, "chat: %s%s%s\n", what ? what : "", what ? ": " : "", llm_errmsg());
	exit(1);
}

/* The reply's text as it streams: the pieces' bytes (raw) become text,
 * each invalid UTF-8 sequence one U+FFFD (as llm-run and Hugging Face
 * decode), never ending inside a character, which may span tokens. */
struct text {
	unsigned char *raw;
	size_t nraw, done; /* raw bytes, and those turned into text */
	char *p;
	size_t len;
};

static void
add(struct text *t, const void *p, size_t n)
{
	t->p = realloc(t->p, t->len + n + 1);
	memcpy(t->p + t->len, p, n);
	t->len += n;
	t->p[t->len] = '\0';
}

/* The bytes of the character at p (n there): its length; 0 when they only
 * start one; -k for k bytes that start none (a maximal invalid part). */
static int
next_char(const unsigned char *p, size_t n)
{
	unsigned lo = 0x80, hi = 0xBF;
	int len;
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		len = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		len = 3, lo = p[0] == 0xE0 ? 0xA0 : lo, hi = p[0] == 0xED ? 0x9F : hi;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		len = 4, lo = p[0] == 0xF0 ? 0x90 : lo, hi = p[0] == 0xF4 ? 0x8F : hi;
	else
		return -1;
	for (int i = 1; i < len; i++, lo = 0x80, hi = 0xBF) {
		if ((size_t)i == n)
			return 0;
		if (p[i] < lo || p[i] > hi)
			return -i;
	}
	return len;
}

/* Push a piece (end: the reply ended, nothing is held back). */
static void
push(struct text *t, const char *p, size_t n, int end)
{
	t->raw = realloc(t->raw, t->nraw + n + 1);
	memcpy(t->raw + t->nraw, p, n);
	t->nraw += n;
	while (t->done < t->nraw) {
		int r = next_char(t->raw + t->done, t->nraw - t->done);
		if (r == 0 && !end)
			break;
		if (r > 0)
			add(t, t->raw + t->done, (size_t)r);
		else
			add(t, "\xef\xbf\xbd", 3);
		t->done += r > 0 ? (size_t)r : r < 0 ? (size_t)-r : t->nraw - t->done;
	}
}

int
main(int argc, char **argv)
{
	struct llm *m;
	struct llm_seq *s;
	struct llm_message msgs[64];
	struct llm_sampling greedy = LLM_SAMPLING_GREEDY;
	size_t n = 0, max = argc == 3 ? strtoul(argv[2], NULL, 10) : 256;
	char line[4096];

	if (argc < 2 || argc > 3 || max == 0) {
		fprintf(stderr, "usage: chat model.llm [max]\n");
		return 2;
	}
	if (llm_open(argv[1], NULL, &m) != LLM_OK || llm_seq_new(m, 0, &s) != LLM_OK)
		die(NULL);
	while (n + 2 <= 64 && fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		msgs[n++] = (struct llm_message){"user", strdup(line)};
		/* the prompt: the positions to keep, and the tokens after them */
		int64_t *ids, keep, id;
		size_t nids;
		if (llm_seq_chat(s, msgs, n, LLM_CHAT_GENERATION_PROMPT, &keep, &ids, &nids) != LLM_OK ||
		    llm_seq_rewind(s, keep) != LLM_OK || llm_seq_eval(s, ids, nids) != LLM_OK)
			die("prompt");
		llm_free(ids);
		struct text reply = {0};
		size_t shown = 0;
		for (size_t t = 0; t < max; t++) {
			char *piece;
			size_t plen;
			if (llm_seq_sample(s, &greedy, &id) != LLM_OK)
				die("sample");
			if (llm_token_is_eos(m, id))
				break;
			if (llm_token_piece(m, id, 0, &piece, &plen) != LLM_OK)
				die("piece");
			push(&reply, piece, plen, 0);
			llm_free(piece);
			fwrite(reply.p + shown, 1, reply.len - shown, stdout); /* what is new */
			fflush(stdout);
			shown = reply.len;
			if (llm_seq_eval(s, &id, 1) != LLM_OK)
				break; /* the context is full */
		}
		push(&reply, "", 0, 1);
		printf("%s\n", reply.p ? reply.p + shown : "");
		msgs[n++] = (struct llm_message){"assistant", reply.p ? reply.p : strdup("")};
		free(reply.raw);
	}
	llm_seq_free(&s);
	for (size_t i = 0; i < n; i++)
		free((void *)msgs[i].content);
	return llm_close(&m) == LLM_OK ? 0 : 1;
}
