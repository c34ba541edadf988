/* request.h: llm-serve's request layer, apart from HTTP and the slots:
 * a completion's JSON body read into what its generation needs (the
 * prompt's tokens, the sampling and stopping parameters, the grammar,
 * how the reply is split), and the checks of a request's header fields
 * (framing and Host).  Linked into llm-serve and into the fuzz target
 * fuzz_request (tests/fuzz/README), which runs it on arbitrary input. */
#ifndef LLM_SERVE_REQUEST_H
#define LLM_SERVE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "../../include/llm.h"
#include "../../lib/base/json.h"

/* The most choices a request (n): each is a generation of its own. */
#define SERVE_MAX_CHOICES 8

/* What the server's options say to the reading of a request. */
struct serve_conf {
	struct llm *m;
	int reasoning;     /* --reasoning-format deepseek: thoughts into reasoning_content */
	int64_t n_predict; /* -n: a reply's tokens when the request does not say (-1: to the context's end) */
	uint64_t salt;     /* mixed into the seed of a request that gives none */
};

/* A request's refusal: the message a client reads (a field and what is
 * wrong with it, never a path) and OpenAI's error code (NULL: none). */
struct serve_bad {
	char msg[256];
	const char *code;
};

/* A completion's parameters, as the request gives them. */
struct serve_params {
	int chat, stream;
	size_t n; /* choices */
	struct llm_sampling sp;
	int64_t max_tokens; /* -1: to the end of the context */
	char **stop;
	size_t nstop;
	char *conv; /* a chat's conversation as JSON ({"messages", "tools", ...}), or NULL */
	size_t convlen;
	char *grammar; /* sp.grammar: response_format's, grammar's, json_schema's or the tools', or NULL */
	/* the reply's split (llm_chat_parse_reply): LLM_PARSE_*; prefix, text evaluated after the prompt
	 * that opens a call (tool_choice required or a function), and its tokens */
	int pflags;
	char *prefix;
	int64_t *pre_ids;
	size_t npre;
	int logprobs;    /* -1: none; else the alternatives a token (chat: top_logprobs; text: logprobs) */
	int echo;        /* text: the prompt before the reply */
	char *echo_text; /* echo: the prompt */
};

/* Reads a completion's body j (chat: /v1/chat/completions, else
 * /v1/completions) into *p, and the prompt's tokens into *ids and *n
 * (llm_free; may be 0 tokens).  0, or -1 and *b (*p then holds what was
 * read: serve_params_free it). */
int serve_params_read(const struct serve_conf *conf, const json_t *j, int chat, struct serve_params *p, int64_t **ids,
    size_t *n, struct serve_bad *b);
void serve_params_free(struct serve_params *p);

/* A refusal: the message in *b (printf's format) and its code; -1. */
int serve_badf(struct serve_bad *b, const char *code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An integer field in [lo, hi] into *v, which keeps its default when the
 * field is absent or null; 0, or -1 and *b. */
int serve_integer(const json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *v, struct serve_bad *b);

/* The library's last message as a client may read it: without the
 * function that failed and the server's file names.  Thread-local. */
const char *serve_client_msg(void);

/* At most n - 4 bytes of s into d (n > 4), cut where a UTF-8 character
 * starts and marked "..." when cut: a client's text in a message. */
void serve_cut_text(char *d, size_t n, const char *s);

/* ---- header fields ---------------------------------------------------------- */

/* A request's header fields, as they came (names in any case). */
struct serve_field {
	const char *name, *value;
};

/* The framing of a request (RFC 9112): one Content-Length or several
 * that agree, not with Transfer-Encoding, no coding but chunked, one Host
 * (needed on HTTP/1.1).  0, or the status to refuse it with (400, 501)
 * and *msg; the connection is closed after such a refusal. */
unsigned serve_check_framing(const struct serve_field *f, size_t n, const char *version, const char **msg);

/* The names a server answers to in Host (against DNS rebinding). */
struct serve_names {
	const char *listen; /* --host */
	int loopback;       /* it is a loopback address: localhost, 127.0.0.1 and [::1] too */
	char **hosts;       /* --host-allow */
	size_t nhosts;
};

/* Whether Host names this server; any Host when it listens on a
 * non-loopback address and no --host-allow is given. */
int serve_host_allowed(const struct serve_names *s, const char *host);

#endif
