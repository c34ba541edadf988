/* chat.c: a chat on libllm (llm(3)).  Each line of standard input is a
 * user turn; the reply streams to standard output, greedy, and ends with
 * a newline, after at most max tokens (default 256).  The sequence keeps
 * the tokens the next turn's prompt shares with it, so that only the new
 * ones are evaluated.
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
		int64_t *ids, *reply = NULL, id;
		size_t nids, keep = 0, nreply = 0, shown = 0;
		if (llm_chat_tokenize(m, msgs, n, 1, &ids, &nids) != LLM_OK)
			die("prompt");
		/* keep the prefix the sequence shares with the prompt; at least
		 * one token is evaluated, for its logits */
		while (keep < (size_t)llm_seq_pos(s) && keep + 1 < nids && llm_seq_tokens(s)[keep] == ids[keep])
			keep++;
		if (llm_seq_rewind(s, (int64_t)keep) != LLM_OK || llm_seq_eval(s, ids + keep, nids - keep) != LLM_OK)
			die("prompt");
		llm_free(ids);
		while (nreply < max) {
			char *text;
			size_t len;
			if (llm_seq_sample(s, &greedy, &id) != LLM_OK)
				die("sample");
			if (llm_token_is_eos(m, id))
				break;
			reply = realloc(reply, (nreply + 1) * sizeof(*reply));
			reply[nreply++] = id;
			/* the reply so far as text: print what is new, holding back
			 * a character still cut (U+FFFD at the end) */
			if (llm_detokenize(m, reply, nreply, &text, &len) != LLM_OK)
				die("detokenize");
			if (!(len >= 3 && memcmp(text + len - 3, "\xef\xbf\xbd", 3) == 0) && len > shown) {
				fwrite(text + shown, 1, len - shown, stdout);
				fflush(stdout);
				shown = len;
			}
			llm_free(text);
			if (llm_seq_eval(s, &id, 1) != LLM_OK)
				break; /* the context is full */
		}
		char *text;
		if (llm_detokenize(m, reply, nreply, &text, NULL) != LLM_OK)
			die("detokenize");
		printf("%s\n", text + shown);
		msgs[n++] = (struct llm_message){"assistant", strdup(text)};
		llm_free(text);
		free(reply);
	}
	llm_seq_free(&s);
	for (size_t i = 0; i < n; i++)
		free((void *)msgs[i].content);
	return llm_close(&m) == LLM_OK ? 0 : 1;
}
