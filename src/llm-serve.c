/* llm-serve: an OpenAI-compatible HTTP server for a compiled model, on
 * libllm (include/llm.h) and GNU libmicrohttpd.  The model is a bundle
 * or a build directory, or a GGUF file or a checkpoint directory that
 * src/run/cache.c (llm-run's, linked here) compiles once into the cache
 * before the server listens.
 *
 * Endpoints: POST /v1/chat/completions and /v1/completions (streamed as
 * server-sent events with "stream": true), GET /v1/models, GET /health,
 * POST /tokenize and /detokenize (llama-server's).  Errors are OpenAI's
 * JSON error objects with the HTTP status that fits.
 *
 * Concurrency: each connection has a thread (libmicrohttpd's thread per
 * connection); a completion takes one of --parallel sequences (slots),
 * waiting in a queue while all are taken.  Of the free slots it takes
 * the one that keeps most of its prompt (a chat's by text, llm_seq_chat;
 * a completion's by tokens) and evaluates only the rest: a conversation
 * that resends its history reuses its previous turn's KV entries, its
 * reply as generated.  Decode steps of different
 * slots are not batched.
 *
 * See llm-serve(1). */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../include/llm.h"
#include "../lib/base/json.h"
#include "../lib/text/chat.h"
#include "../lib/text/stream.h"
#include "../lib/base/utf8.h"
#include "../lib/base/util.h"
#include "run/cache.h"
#include "serve/request.h"

static const char usage_text[] =
    "usage: llm-serve [-h] [-c n] [-n n] [-t n] [--api-key key] [--api-key-file file]\n"
    "                 [--cache-dir dir] [--chat-template name|file] [--cors-origin origin]\n"
    "                 [--health-port n] [--host addr] [--host-allow name] [--import-flags options]\n"
    "                 [--jinja] [--max-body bytes] [--max-per-address n] [--name id] [--no-cache]\n"
    "                 [--parallel n] [--pooling last|mean] [--port n] [--queue n]\n"
    "                 [--reasoning-format format] [--timeout s] -m model\n";

static const char options_text[] =
    "  -c, --ctx-size n     positions of each slot's KV cache (default: 4096, or the build's\n"
    "                       context if smaller)\n"
    "  -h                   print the usage line\n"
    "  -n, --n-predict n    a reply's tokens at most when the request does not say (default -1:\n"
    "                       to the end of the context)\n"
    "      --help           print this help\n"
    "      --api-key key    require \"Authorization: Bearer key\" or \"X-Api-Key: key\" (all but\n"
    "                       /health); again for more keys (default: $LLM_API_KEY, if set)\n"
    "      --api-key-file file\n"
    "                       the keys of file, one a line (not in ps(1)'s view)\n"
    "      --cache-dir dir  the cache (default: $LLM_CACHE_DIR, else $XDG_CACHE_HOME/llm, else\n"
    "                       ~/.cache/llm)\n"
    "      --chat-template name|file\n"
    "                       render chats with a built-in template or a file of Jinja text\n"
    "                       instead of the model's\n"
    "      --cors-origin origin\n"
    "                       answer web pages of origin (again for more; *: any); default none\n"
    "      --health-port n  also answer GET /health on this port alone, whatever the main port's\n"
    "                       clients do (default: none)\n"
    "      --host addr      IPv4 or IPv6 address to listen on (default 127.0.0.1; :: for all)\n"
    "      --host-allow name\n"
    "                       a name the Host header may give besides the address (again for more)\n"
    "      --import-flags options\n"
    "                       llm-import's options for a GGUF file's or checkpoint's build (its own\n"
    "                       entry in the cache), as llm-run's; -c past 32768 adds --max-context\n"
    "      --jinja          accepted for llama-server's command lines: templates always run\n"
    "                       through the Jinja interpreter\n"
    "  -m, --model path     the bundle (model.llm) or build directory; or a GGUF file or a\n"
    "                       Hugging Face checkpoint directory, compiled once into the cache\n"
    "                       (before the server listens)\n"
    "      --max-body n     largest request body in bytes (default 1048576)\n"
    "      --max-per-address n\n"
    "                       connections from one address at once (default 64; the server's: 256)\n"
    "      --name id        the model's id in /v1/models and responses (default: the\n"
    "                       file name without .llm or .gguf, or the directory's name)\n"
    "      --no-cache       compile a GGUF file or checkpoint for this run only\n"
    "      --parallel n     sequences served at once; more requests wait (default 1)\n"
    "      --pooling last|mean\n"
    "                       /v1/embeddings: the last token's final hidden state, or the mean\n"
    "                       of all (default last)\n"
    "      --port n         TCP port (default 8080; 0: any free one, printed)\n"
    "      --queue n        requests that may wait for a slot; more get 503 (default 64)\n"
    "      --timeout s      seconds a client has for a request's headers (after connecting, or\n"
    "                       after its last answer), then for its body (default 10)\n"
    "      --reasoning-format format\n"
    "                       deepseek (or auto): a chat's thoughts go to reasoning_content;\n"
    "                       none: they stay in content (default deepseek)\n"
    "  -t, --threads n      OpenMP threads of each slot's evaluation (default: all cores)\n"
    "      --version        print the version\n";

/* A slot: a sequence, and the thread that runs its evaluations.  libomp
 * gives every thread that starts a parallel region a team of its own,
 * whose workers spin a while after each region: evaluating on the
 * connections' threads would leave teams of finished connections
 * spinning on the cores (3x slower prefill, measured).  So one long-lived
 * thread a slot runs the jobs (on_slot). */
struct slot {
	struct llm_seq *seq;
	int busy;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	void (*job)(void *); /* NULL: none waiting */
	void *arg;
	int stop;
	_Atomic int64_t pos; /* its sequence's positions, as of its last job (for /slots) */
};

static struct server {
	struct llm *m;
	char *name;
	int reasoning;      /* --reasoning-format deepseek: thoughts into reasoning_content */
	int pooling;        /* --pooling: LLM_POOL_LAST or LLM_POOL_MEAN */
	int64_t n_predict;  /* -n: a reply's tokens when the request does not say (-1: to the context's end) */
	uint64_t queue_max; /* --queue: the most requests waiting for a slot */
	char **keys;        /* --api-key, --api-key-file, $LLM_API_KEY: none, any of them */
	size_t nkeys;
	size_t max_body;
	struct slot *slots;
	int nslots;
	pthread_mutex_t lock;
	pthread_cond_t freed;
	uint64_t *gone; /* tickets of the queue whose clients left before their turn (lock) */
	size_t ngone;
	atomic_int stopping; /* SIGINT or SIGTERM came: the work in hand ends, no more is taken */
	atomic_ulong next_id;
	uint64_t tickets, serving; /* the queue, first come first served (lock) */
} sv;

/* One request: its body, then, for a completion, its generation. */
struct req;

struct gen {
	struct slot *slot;
	struct MHD_Connection *conn; /* its client's */
	struct req *req;             /* the request's record (its connection's), for the log line and /metrics */
	double t0;                   /* when the request came */
	size_t n;                    /* choices (n) */
	size_t done_tokens;          /* tokens of the choices before this one */
	struct serve_params q;       /* what the request asks */
	char id[48];
	time_t created;
	int64_t *reply;
	size_t nreply, prompt_tokens;
	struct llm_stream
	    st;       /* the reply's text: st.text, released (held back: a cut character, a stop string's start) */
	size_t shown; /* bytes of st.text already sent (streaming) */
	size_t sent_c, sent_r, sent_calls; /* bytes of content and reasoning, and calls, streamed */
	int role_sent;
	/* logprobs (q.logprobs >= 0): an entry a token of the reply ({token, logprob, bytes, top_logprobs}),
	 * lps_sent of them streamed */
	json_t *lps;
	size_t lps_sent;
	const char *finish; /* NULL while generating: "stop", "length", or "error" (msg says why) */
	char msg[512];
	struct llm_buf out; /* server-sent events not yet sent */
	size_t out_pos;
	int ended; /* [DONE] queued */
};

struct req {
	struct llm_buf body;
	size_t too_big; /* bytes of a body past --max-body, read and not kept */
	struct gen *g;  /* handed to the streaming response */
	/* for the log line and /metrics: what was asked, the status sent, the tokens */
	char method[8], path[72];
	unsigned status;
	int close;       /* the connection closes after the answer (a request whose framing is refused) */
	int retry_after; /* a 503 of a full queue: "Retry-After: 1" */
	double t0;
	size_t prompt_tokens, completion_tokens;
};

/* The request the connection's thread (one a connection) is serving. */
static _Thread_local struct req *cur_req;
/* Requests in hand: when the last ends, the memory freed goes back to the
 * system (glibc keeps it in its arenas otherwise: a burst of large bodies
 * would leave the server's RSS at its peak). */
static atomic_int in_hand;

/* ---- metrics (GET /metrics, Prometheus' text format) ---------------------- */

#define NBUCKETS 9
static const double ttft_le[NBUCKETS] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
static const double token_le[NBUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
static const unsigned statuses[] = {200, 400, 401, 404, 405, 413, 499, 500, 503, 0}; /* 0: any other */
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))

struct hist {
	uint64_t n[NBUCKETS + 1]; /* the last: above every bucket */
	uint64_t count;
	double sum;
};

static struct metrics {
	pthread_mutex_t mu;
	uint64_t requests[NSTATUS];
	uint64_t prompt_tokens, completion_tokens;
	struct hist ttft, token;
} stats = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void
hist_add(struct hist *h, const double *le, double v)
{
	int i = 0;
	while (i < NBUCKETS && v > le[i])
		i++;
	pthread_mutex_lock(&stats.mu);
	h->n[i]++;
	h->count++;
	h->sum += v;
	pthread_mutex_unlock(&stats.mu);
}

static void
hist_text(struct llm_buf *b, const char *name, const char *help, const struct hist *h, const double *le)
{
	uint64_t c = 0;
	llm_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (int i = 0; i < NBUCKETS; i++) {
		c += h->n[i];
		llm_buf_printf(b, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, le[i], c);
	}
	llm_buf_printf(b, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.6f\n%s_count %" PRIu64 "\n", name, h->count,
	    name, h->sum, name, h->count);
}

static void *
slot_main(void *p)
{
	struct slot *s = p;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->job && !s->stop)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->mu);
		s->job(s->arg);
		atomic_store(&s->pos, llm_seq_pos(s->seq));
		pthread_mutex_lock(&s->mu);
		s->job = NULL;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Run fn(arg) on s's thread, and wait for it. */
static void
on_slot(struct slot *s, void (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&s->mu);
	s->job = fn;
	s->arg = arg;
	pthread_cond_broadcast(&s->cv);
	while (s->job)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static void
release(struct slot *s)
{
	pthread_mutex_lock(&sv.lock);
	s->busy = 0;
	pthread_cond_broadcast(&sv.freed);
	pthread_mutex_unlock(&sv.lock);
}

static void
gen_free(struct gen *g)
{
	if (!g)
		return;
	if (g->slot)
		release(g->slot);
	serve_params_free(&g->q);
	free(g->reply);
	json_decref(g->lps);
	llm_stream_free(&g->st);
	llm_buf_free(&g->out);
	free(g);
}

/* ---- responses ---------------------------------------------------------- */

/* ---- browsers and framing ------------------------------------------------ */

static struct {
	struct serve_names names; /* --host, --host-allow: what Host may name */
	char **origins;           /* --cors-origin */
	size_t norigins;
} web;

/* The request's Origin when --cors-origin allows it, else NULL. */
static const char *
allowed_origin(struct MHD_Connection *c)
{
	const char *o = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	for (size_t i = 0; o && i < web.norigins; i++)
		if (strcmp(web.origins[i], "*") == 0 || strcasecmp(web.origins[i], o) == 0)
			return o;
	return NULL;
}

static void
cors_headers(struct MHD_Connection *c, struct MHD_Response *r)
{
	const char *o = allowed_origin(c);
	if (!o)
		return;
	MHD_add_response_header(r, "Access-Control-Allow-Origin", o);
	MHD_add_response_header(r, "Vary", "Origin");
}

static enum MHD_Result
send_text(struct MHD_Connection *c, unsigned status, const char *type, char *text)
{
	if (cur_req)
		cur_req->status = status;
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", type);
	if (cur_req && cur_req->close)
		MHD_add_response_header(r, "Connection", "close");
	if (cur_req && cur_req->retry_after)
		MHD_add_response_header(r, "Retry-After", "1");
	cors_headers(c, r);
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result
send_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		llm_fatal("out of memory serialising JSON");
	return send_text(c, status, "application/json", s);
}

/* OpenAI's error object: type from the status, code (may be NULL). */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum MHD_Result
send_error(struct MHD_Connection *c, unsigned status, const char *code, const char *fmt, ...)
{
	struct llm_buf b = {0};
	va_list ap;
	va_start(ap, fmt);
	llm_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (!llm_utf8_valid(b.p, b.len)) { /* a client's bytes in it, cut: JSON takes UTF-8 alone */
		struct llm_buf v = {0};
		llm_utf8_lossy(b.p, b.len, &v);
		llm_buf_free(&b);
		b = v;
	}
	const char *type = status == 401 ? "authentication_error" :
	    status == 404                ? "not_found_error" :
	    status >= 500                ? "server_error" :
					   "invalid_request_error";
	json_t *e = json_pack("{s:s, s:s, s:n, s:o}", "message", b.p, "type", type, "param", "code",
	    code ? json_string(code) : json_null());
	llm_buf_free(&b);
	return send_json(c, status, json_pack("{s:o}", "error", e));
}

/* The prompt evaluated on its slot's thread: ids[keep, n) after the
 * kept prefix; rc -1 and msg on failure (the sequence emptied). */
/* Keep keep positions of seq, then evaluate ids[n]. */
struct prompt_job {
	struct llm_seq *seq;
	const int64_t *ids;
	size_t n, keep;
	const int64_t *pre; /* then these (a forced call's opening), evaluated on their own */
	size_t npre;
	int rc;
	char msg[256];
};

static void
prompt_eval(void *p)
{
	struct prompt_job *j = p;
	/* the request's seed draws as on a fresh sequence, whatever the slot drew before */
	if (llm_seq_reseed(j->seq) != LLM_OK || llm_seq_rewind(j->seq, (int64_t)j->keep) != LLM_OK ||
	    llm_seq_eval(j->seq, j->ids, j->n) != LLM_OK ||
	    (j->npre && llm_seq_eval(j->seq, j->pre, j->npre) != LLM_OK)) {
		snprintf(j->msg, sizeof(j->msg), "%s", serve_client_msg());
		llm_seq_rewind(j->seq, 0);
		j->rc = -1;
	}
}

/* What slot s keeps of the request's prompt (*keep positions) and the
 * rest (*rest, *nrest; llm_free): a chat's conversation compared as text
 * (llm_seq_chat: a reply the slot generated is kept as it was), a
 * completion's ids as tokens.  At least one token is new. */
static void
reuse(struct gen *g, struct slot *s, const int64_t *ids, size_t n, size_t *keep, int64_t **rest, size_t *nrest)
{
	int64_t k;
	if (g->q.conv &&
	    llm_seq_chat_json(s->seq, g->q.conv, g->q.convlen, LLM_CHAT_GENERATION_PROMPT, &k, rest, nrest) == LLM_OK) {
		*keep = (size_t)k;
		return;
	}
	size_t m = 0, pos = (size_t)llm_seq_pos(s->seq);
	const int64_t *t = llm_seq_tokens(s->seq);
	while (m < pos && m + 1 < n && t[m] == ids[m])
		m++;
	*keep = m;
	*nrest = n - m;
	*rest = llm_xreallocarray(NULL, *nrest, sizeof(**rest));
	memcpy(*rest, ids + m, *nrest * sizeof(**rest));
}

/* 1 when the client of c has gone (its socket at its end or broken), or
 * the server is stopping: the work for it is of no more use. */
static int
abandoned(struct MHD_Connection *c)
{
	if (atomic_load(&sv.stopping))
		return 1;
	const union MHD_ConnectionInfo *ci = c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD) : NULL;
	if (!ci)
		return 0;
	char b;
	ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* 1 when the queue is full: a request more gets 503 (lock held). */
static int
queue_full(void)
{
	int any = 0;
	for (int i = 0; i < sv.nslots; i++)
		any |= !sv.slots[i].busy;
	return !(any && sv.tickets == sv.serving) && sv.tickets - sv.serving - sv.ngone >= sv.queue_max;
}

/* The queue's head moves past the tickets whose clients left (lock held). */
static void
skip_gone(void)
{
	for (size_t i = 0; i < sv.ngone;)
		if (sv.gone[i] == sv.serving) {
			sv.gone[i] = sv.gone[--sv.ngone];
			sv.serving++;
			i = 0;
		} else
			i++;
}

/* Wait (lock held) for a slot's release, or 100 ms; -1 (the lock
 * released, ticket me given up) when the client of c left meanwhile or
 * the server is stopping, else 0. */
static int
wait_turn(struct MHD_Connection *c, uint64_t me)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100000000;
	if (ts.tv_nsec >= 1000000000)
		ts.tv_sec++, ts.tv_nsec -= 1000000000;
	pthread_cond_timedwait(&sv.freed, &sv.lock, &ts);
	if (!abandoned(c))
		return 0;
	sv.gone = llm_xreallocarray(sv.gone, sv.ngone + 1, sizeof(*sv.gone));
	sv.gone[sv.ngone++] = me;
	skip_gone();
	pthread_cond_broadcast(&sv.freed);
	pthread_mutex_unlock(&sv.lock);
	return -1;
}

/* A free slot, the one that keeps most of the prompt (ids, n: the whole
 * prompt as tokens), waiting in the queue (first come, first served)
 * while none is free; its sequence then holds the prompt, evaluated.
 * -2 (the slot given back) when what it holds would not fit; -3 when
 * the client left while it waited, or the server is stopping; -4 when
 * the queue is full (--queue). */
static int
take_slot(struct gen *g, const int64_t *ids, size_t n)
{
	pthread_mutex_lock(&sv.lock);
	if (queue_full()) {
		pthread_mutex_unlock(&sv.lock);
		return -4;
	}
	uint64_t me = sv.tickets++;
	struct slot *best;
	size_t keep, nrest = 0;
	int64_t *rest = NULL;
	for (;;) {
		best = NULL;
		keep = 0;
		for (int i = 0; i < sv.nslots && me == sv.serving; i++) {
			struct slot *s = &sv.slots[i];
			if (s->busy)
				continue;
			size_t k, nr;
			int64_t *r;
			reuse(g, s, ids, n, &k, &r, &nr);
			if (!best || k > keep) {
				llm_free(rest);
				best = s;
				keep = k;
				rest = r;
				nrest = nr;
			} else
				llm_free(r);
		}
		if (best)
			break;
		if (wait_turn(g->conn, me) < 0) {
			llm_free(rest);
			return -3;
		}
	}
	best->busy = 1;
	sv.serving++;
	skip_gone();
	pthread_cond_broadcast(&sv.freed); /* the next in the queue may find a slot */
	pthread_mutex_unlock(&sv.lock);
	g->slot = best;
	g->prompt_tokens = keep + nrest + g->q.npre;
	if ((int64_t)g->prompt_tokens >= llm_seq_context(best->seq)) {
		llm_free(rest);
		return -2;
	}
	struct prompt_job j = {best->seq, rest, nrest, keep, g->q.pre_ids, g->q.npre, 0, ""};
	on_slot(best, prompt_eval, &j);
	llm_free(rest);
	if (j.rc)
		llm_seterr("%s", j.msg);
	return j.rc;
}

/* The generation ends for reason: what was held back is released. */
static void
finish(struct gen *g, const char *reason)
{
	struct llm_buf rest = {0};
	g->finish = reason;
	llm_stream_finish(&g->st, &rest);
	llm_buf_free(&rest);
}

/* It ends in a failure of the library (a 500, or an error event). */
static void
fail(struct gen *g)
{
	snprintf(g->msg, sizeof(g->msg), "%s", serve_client_msg());
	finish(g, "error");
}

/* ---- log probabilities -------------------------------------------------- */

struct alt {
	int64_t id;
	float logit;
};

/* log(sum(exp(logits))) over the vocabulary (n), in double; top[0, k) the
 * k largest logits, largest first (ties: the lower id). */
static double
log_sum_exp(const float *lg, int64_t n, struct alt *top, int k)
{
	float mx = -INFINITY;
	int have = 0;
	for (int64_t i = 0; i < n; i++) {
		if (lg[i] > mx)
			mx = lg[i];
		if (k && (have < k || lg[i] > top[have - 1].logit)) {
			int p = have < k ? have++ : k - 1;
			while (p > 0 && top[p - 1].logit < lg[i]) {
				top[p] = top[p - 1];
				p--;
			}
			top[p] = (struct alt){i, lg[i]};
		}
	}
	double sum = 0;
	for (int64_t i = 0; i < n; i++)
		sum += exp((double)lg[i] - mx);
	return mx + log(sum);
}

/* A token as OpenAI's logprobs give it: its text (invalid UTF-8 as
 * U+FFFD), its bytes. */
static void
token_fields(json_t *o, int64_t id)
{
	char *p;
	size_t n;
	struct llm_buf t = {0};
	json_t *bytes = json_array();
	if (llm_token_piece(sv.m, id, LLM_PIECE_SPECIAL, &p, &n) != LLM_OK)
		n = 0, p = NULL;
	llm_utf8_lossy(p ? p : "", n, &t);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(bytes, json_integer((unsigned char)p[i]));
	json_object_set_new(o, "token", json_stringn(t.p ? t.p : "", t.len));
	json_object_set_new(o, "bytes", bytes);
	llm_buf_free(&t);
	llm_free(p);
}

static json_t *
logprob_entry(int64_t id, double lp, const struct alt *top, int k, double lse)
{
	json_t *e = json_object(), *alts = json_array();
	token_fields(e, id);
	json_object_set_new(e, "logprob", json_real(lp));
	for (int i = 0; i < k; i++) {
		json_t *a = json_object();
		token_fields(a, top[i].id);
		json_object_set_new(a, "logprob", json_real(top[i].logit - lse));
		json_array_append_new(alts, a);
	}
	json_object_set_new(e, "top_logprobs", alts);
	return e;
}

/* The entries [from, to) of g->lps as a choice's logprobs: chat's
 * {"content": [...]}, or a text completion's {"tokens", "token_logprobs",
 * "top_logprobs", "text_offset"} (offsets in bytes of the choice's
 * text). */
static json_t *
logprobs_json(const struct gen *g, size_t from, size_t to)
{
	size_t offset = 0;
	for (size_t i = 0; i < from; i++)
		offset += json_array_size(json_object_get(json_array_get(g->lps, i), "bytes"));
	json_t *c = json_array();
	for (size_t i = from; i < to; i++)
		json_array_append(c, json_array_get(g->lps, i));
	if (g->q.chat)
		return json_pack("{s:o}", "content", c);
	json_t *tokens = json_array(), *lps = json_array(), *tops = json_array(), *offs = json_array(), *e;
	size_t i;
	json_array_foreach (c, i, e) {
		json_t *a, *m = json_object();
		size_t x;
		json_array_append(tokens, json_object_get(e, "token"));
		json_array_append(lps, json_object_get(e, "logprob"));
		json_array_foreach (json_object_get(e, "top_logprobs"), x, a)
			json_object_set(m, json_string_value(json_object_get(a, "token")),
			    json_object_get(a, "logprob"));
		json_array_append_new(tops, m);
		json_array_append_new(offs, json_integer((json_int_t)offset));
		offset += json_array_size(json_object_get(e, "bytes"));
	}
	json_decref(c);
	return json_pack("{s:o, s:o, s:o, s:o}", "tokens", tokens, "token_logprobs", lps, "top_logprobs", tops,
	    "text_offset", offs);
}

/* One token more, or the end: g->st and g->finish updated (run on the
 * slot's thread: step).  The reply's text grows by the token's bytes. */
static void
step_job(void *p)
{
	struct gen *g = p;
	int64_t id;
	struct llm_seq *s = g->slot->seq;
	if (g->q.max_tokens >= 0 && (int64_t)g->nreply >= g->q.max_tokens)
		return finish(g, "length");
	struct alt top[20];
	double lse = 0;
	if (g->q.logprobs >= 0)
		lse = log_sum_exp(llm_seq_logits(s), llm_vocab_size(sv.m), top, g->q.logprobs);
	if (llm_seq_sample(s, &g->q.sp, &id) != LLM_OK)
		return fail(g);
	if (llm_token_is_eos(sv.m, id))
		return finish(g, "stop");
	if (g->q.logprobs >= 0)
		json_array_append_new(g->lps, logprob_entry(id, llm_seq_logits(s)[id] - lse, top, g->q.logprobs, lse));
	int first = llm_seq_pos(s) == 1 && llm_seq_tokens(s)[0] == llm_token_bos(sv.m);
	char *piece;
	size_t len;
	if (llm_token_piece(sv.m, id, (first ? LLM_PIECE_FIRST : 0) | (g->q.pflags ? LLM_PIECE_MARKERS : 0), &piece,
		&len) != LLM_OK)
		return fail(g);
	g->reply = llm_xreallocarray(g->reply, g->nreply + 1, sizeof(*g->reply));
	g->reply[g->nreply++] = id;
	struct llm_buf out = {0};
	int stopped = llm_stream_push(&g->st, piece, len, &out);
	llm_buf_free(&out);
	llm_free(piece);
	if (stopped)
		return finish(g, "stop");
	if (llm_seq_pos(s) >= llm_seq_context(s))
		return finish(g, "length"); /* the context is full */
	if (llm_seq_eval(s, &id, 1) != LLM_OK)
		fail(g);
}

static void
step(struct gen *g)
{
	double t = llm_now();
	size_t before = g->nreply;
	on_slot(g->slot, step_job, g);
	if (g->nreply > before) {
		double now = llm_now();
		if (before == 0)
			hist_add(&stats.ttft, ttft_le, now - g->t0);
		else
			hist_add(&stats.token, token_le, now - t);
	}
	if (g->req) {
		g->req->prompt_tokens = g->prompt_tokens;
		g->req->completion_tokens = g->done_tokens + g->nreply;
	}
}

static json_t *
usage_json(const struct gen *g)
{
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)g->prompt_tokens, "completion_tokens",
	    (json_int_t)g->nreply, "total_tokens", (json_int_t)(g->prompt_tokens + g->nreply));
}

/* A chat's reply so far as its message (new): the prompt's forced call
 * opening and the text, split by g->q.pflags; each call's id made of the
 * request's. */
static json_t *
message(struct gen *g, int partial)
{
	struct llm_buf t = {0};
	char *js;
	json_error_t e;
	if (g->q.prefix)
		llm_buf_puts(&t, g->q.prefix);
	llm_buf_add(&t, g->st.text.p ? g->st.text.p : "", g->st.text.len);
	if (llm_chat_parse_reply(sv.m, t.p, t.len, g->q.pflags | (partial ? LLM_PARSE_PARTIAL : 0), &js, NULL) !=
	    LLM_OK)
		llm_fatal("%s", llm_errmsg()); /* only NULL arguments fail */
	llm_buf_free(&t);
	json_t *m = json_loads(js, 0, &e), *c;
	llm_free(js);
	size_t i;
	json_array_foreach (json_object_get(m, "tool_calls"), i, c) {
		char id[80];
		snprintf(id, sizeof(id), "call_%s_%zu", g->id, i);
		json_object_set_new(c, "id", json_string(id));
	}
	return m;
}

/* finish_reason: "tool_calls" when the reply is calls. */
static const char *
finish_of(const struct gen *g, const json_t *msg)
{
	return json_array_size(json_object_get(msg, "tool_calls")) && strcmp(g->finish, "error") != 0 ? "tool_calls" :
													g->finish;
}

/* A streamed event into g->out: choice, one choice of it (taken). */
static void
event(struct gen *g, json_t *choice, int usage)
{
	json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", g->id, "object",
	    g->q.chat ? "chat.completion.chunk" : "text_completion", "created", (json_int_t)g->created, "model",
	    sv.name, "choices", choice);
	if (usage)
		json_object_set_new(j, "usage", usage_json(g));
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	llm_buf_printf(&g->out, "data: %s\n\n", s);
	free(s);
}

/* The log probabilities not streamed yet into choice (all of them now). */
static void
pending_logprobs(struct gen *g, json_t *choice)
{
	if (g->q.logprobs < 0 || g->lps_sent == json_array_size(g->lps))
		return;
	json_object_set_new(choice, "logprobs", logprobs_json(g, g->lps_sent, json_array_size(g->lps)));
	g->lps_sent = json_array_size(g->lps);
}

/* A chat's deltas since the last: the reply parsed (whole when final),
 * what its content and reasoning gained, the calls that came whole (the
 * parse only grows: llm_chat_parse_reply's partial form); then, when
 * final, the finish. */
static void
chat_deltas(struct gen *g, int final)
{
	json_t *m = message(g, !final), *delta = json_object(),
	       *calls = json_object_get(m, "tool_calls"); /* borrowed */
	const char *c = json_string_value(json_object_get(m, "content")),
		   *r = json_string_value(json_object_get(m, "reasoning_content"));
	size_t nc = c ? strlen(c) : 0, nr = r ? strlen(r) : 0;
	if (!g->role_sent)
		json_object_set_new(delta, "role", json_string("assistant"));
	if (nr > g->sent_r)
		json_object_set_new(delta, "reasoning_content", json_stringn(r + g->sent_r, nr - g->sent_r));
	if (nc > g->sent_c)
		json_object_set_new(delta, "content", json_stringn(c + g->sent_c, nc - g->sent_c));
	if (json_array_size(calls) > g->sent_calls) {
		json_t *a = json_array();
		for (size_t i = g->sent_calls; i < json_array_size(calls); i++) {
			json_t *x = json_deep_copy(json_array_get(calls, i));
			json_object_set_new(x, "index", json_integer((json_int_t)i));
			json_array_append_new(a, x);
		}
		json_object_set_new(delta, "tool_calls", a);
	}
	g->sent_c = nc > g->sent_c ? nc : g->sent_c;
	g->sent_r = nr > g->sent_r ? nr : g->sent_r;
	g->sent_calls = json_array_size(calls) > g->sent_calls ? json_array_size(calls) : g->sent_calls;
	if (json_object_size(delta)) {
		g->role_sent = 1;
		json_t *choice = json_pack("{s:i, s:o, s:n}", "index", 0, "delta", delta, "finish_reason");
		pending_logprobs(g, choice);
		event(g, choice, 0);
	} else
		json_decref(delta);
	if (final) {
		json_t *choice = json_pack("{s:i, s:{}, s:s}", "index", 0, "delta", "finish_reason", finish_of(g, m));
		pending_logprobs(g, choice);
		event(g, choice, 1);
	}
	json_decref(m);
}

/* A streamed chunk of a text completion (its text, or the finish) as an event into g->out. */
static void
chunk(struct gen *g, const char *text, size_t len, const char *finish)
{
	json_t *choice = json_pack("{s:i, s:s%, s:o}", "index", 0, "text", text, len, "finish_reason",
	    finish ? json_string(finish) : json_null());
	pending_logprobs(g, choice);
	event(g, choice, finish != NULL);
}

/* libmicrohttpd's reader of a streamed completion: events as the tokens
 * come, then [DONE].  A client that goes away ends it (gen_free). */
static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct gen *g = cls;
	(void)pos;
	while (g->out_pos == g->out.len) {
		g->out.len = g->out_pos = 0;
		if (g->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!g->finish && atomic_load(&sv.stopping)) {
			snprintf(g->msg, sizeof(g->msg), "the server is shutting down");
			finish(g, "error");
		}
		if (g->finish && strcmp(g->finish, "error") == 0) {
			/* the status is sent: an event with an error object, which OpenAI's clients raise */
			json_t *e = json_pack("{s:{s:s, s:s, s:i}}", "error", "message", g->msg, "type", "server_error",
			    "code", 500);
			char *t = json_dumps(e, JSON_COMPACT);
			json_decref(e);
			llm_buf_printf(&g->out, "data: %s\n\n", t);
			free(t);
			g->ended = 1;
			break;
		}
		if (g->finish) {
			if (g->q.chat)
				chat_deltas(g, 1);
			else
				chunk(g, g->st.text.p + g->shown, g->st.text.len - g->shown, g->finish);
			g->shown = g->st.text.len;
			llm_buf_puts(&g->out, "data: [DONE]\n\n");
			g->ended = 1;
			break;
		}
		if (g->q.echo_text && g->q.echo) {
			/* echo: the prompt first */
			chunk(g, g->q.echo_text, strlen(g->q.echo_text), NULL);
			g->q.echo = 0;
			continue;
		}
		step(g);
		size_t n = g->st.text.len;
		if (!g->finish && g->q.chat)
			chat_deltas(g, 0);
		else if (!g->finish && n > g->shown) {
			chunk(g, g->st.text.p + g->shown, n - g->shown, NULL);
			g->shown = n;
		}
	}
	size_t n = g->out.len - g->out_pos < max ? g->out.len - g->out_pos : max;
	memcpy(buf, g->out.p + g->out_pos, n);
	g->out_pos += n;
	return (ssize_t)n;
}

static void
stream_free(void *cls)
{
	gen_free(cls);
}

/* The answer to a request given up: 503 while the server stops, else
 * 499 (nginx's "client closed request", to a client that has gone: for
 * the log). */
static enum MHD_Result
gone_or_stopping(struct MHD_Connection *c)
{
	if (atomic_load(&sv.stopping))
		return send_error(c, 503, NULL, "the server is shutting down");
	return send_error(c, 499, NULL, "the client closed the request");
}

/* 503 with Retry-After: the queue is full. */
static enum MHD_Result
queue_is_full(struct MHD_Connection *c)
{
	if (cur_req)
		cur_req->retry_after = 1;
	return send_error(c, 503, "queue_full", "the server is busy: %" PRIu64 " requests wait already (--queue)",
	    sv.queue_max);
}

static enum MHD_Result completion_run(struct MHD_Connection *c, json_t **jp, int chat);

/* A completion, given the request's parse tree (taken: freed as soon as
 * the request's fields are read). */
static enum MHD_Result
completion(struct MHD_Connection *c, json_t *j, int chat)
{
	enum MHD_Result rc = completion_run(c, &j, chat);
	json_decref(j);
	return rc;
}

/* A request's "model" that is not a string, or not this server's: 1 and
 * its answer in *q (the name cut: a client's text). */
static int
wrong_model(struct MHD_Connection *c, const json_t *j, enum MHD_Result *q)
{
	const json_t *model = json_object_get(j, "model"); /* borrowed */
	char name[104];
	if (model && !json_is_string(model)) {
		*q = send_error(c, 400, NULL, "'model' must be a string");
		return 1;
	}
	if (!json_is_string(model) || strcmp(json_string_value(model), sv.name) == 0)
		return 0;
	serve_cut_text(name, sizeof(name), json_string_value(model));
	*q = send_error(c, 404, "model_not_found", "The model '%s' does not exist: this server has '%s'", name,
	    sv.name);
	return 1;
}

/* A choice of a reply that is not streamed (index i), as the response
 * carries it. */
static json_t *
choice_json(struct gen *g, int i)
{
	json_t *choice;
	if (g->q.chat) {
		json_t *msg = message(g, 0);
		choice = json_pack("{s:i, s:o, s:s}", "index", i, "message", msg, "finish_reason", finish_of(g, msg));
	} else {
		struct llm_buf t = {0};
		llm_buf_puts(&t, g->q.echo_text ? g->q.echo_text : "");
		llm_buf_add(&t, g->st.text.p ? g->st.text.p : "", g->st.text.len);
		choice = json_pack("{s:i, s:s%, s:s}", "index", i, "text", t.p, t.len, "finish_reason", g->finish);
		llm_buf_free(&t);
	}
	json_object_set_new(choice, "logprobs",
	    g->q.logprobs >= 0 ? logprobs_json(g, 0, json_array_size(g->lps)) : json_null());
	return choice;
}

/* A completion: its n choices one after another on a slot (each takes
 * the queue again; the prompt kept but its last token, the seed + i), or
 * streamed (n 1). */
static enum MHD_Result
completion_run(struct MHD_Connection *c, json_t **jp, int chat)
{
	const json_t *j = *jp;
	enum MHD_Result wq;
	if (wrong_model(c, j, &wq))
		return wq;
	if (chat && !llm_chat_template_name(sv.m))
		return send_error(c, 500, "no_chat_template",
		    "this model has no chat template: the server must be started with --chat-template");
	char id[48];
	snprintf(id, sizeof(id), "%s-%lu", chat ? "chatcmpl" : "cmpl", atomic_fetch_add(&sv.next_id, 1));
	json_t *choices = json_array();
	size_t ptoks = 0, ctoks = 0, nchoices = 1;
	time_t created = time(NULL);
	for (size_t i = 0; i < nchoices; i++) {
		struct serve_bad b = {"", NULL};
		int64_t *ids = NULL;
		size_t n = 0;
		struct gen *g = llm_xcalloc(1, sizeof(*g));
		g->created = created;
		g->req = cur_req;
		g->conn = c;
		g->done_tokens = ctoks;
		g->t0 = cur_req ? cur_req->t0 : llm_now();
		snprintf(g->id, sizeof(g->id), "%s", id);
		struct serve_conf conf = {sv.m, sv.reasoning, sv.n_predict, atomic_load(&sv.next_id)};
		if (serve_params_read(&conf, j, chat, &g->q, &ids, &n, &b) < 0) {
			llm_free(ids);
			gen_free(g);
			json_decref(choices);
			return send_error(c, 400, b.code, "%s", b.msg);
		}
		if (g->q.logprobs >= 0)
			g->lps = json_array();
		nchoices = g->q.n;
		g->q.sp.seed += i;
		if (nchoices == 1 && *jp) {
			/* what the request asks is in g now: its parse tree goes before the wait in the queue */
			json_decref(*jp);
			*jp = NULL;
			j = NULL;
		}
		llm_stream_init(&g->st, g->q.stop, g->q.nstop);
		int64_t ctx = llm_seq_context(sv.slots[0].seq);
		if (n == 0 || (int64_t)n >= ctx) {
			free(ids);
			gen_free(g);
			json_decref(choices);
			return n == 0 ? send_error(c, 400, NULL, "the prompt is empty") :
					send_error(c, 400, "context_length_exceeded",
					    "This model's context is %" PRId64 " tokens; the prompt has %zu", ctx, n);
		}
		int rc = take_slot(g, ids, n);
		free(ids);
		if (rc < 0) {
			char msg[512];
			size_t have = g->prompt_tokens;
			snprintf(msg, sizeof(msg), "%s", serve_client_msg());
			gen_free(g);
			json_decref(choices);
			if (rc == -3)
				return gone_or_stopping(c);
			if (rc == -4)
				return queue_is_full(c);
			return rc == -2 ?
			    send_error(c, 400, "context_length_exceeded",
				"This model's context is %" PRId64 " tokens; the prompt has %zu", ctx, have) :
			    send_error(c, 500, NULL, "%s", msg);
		}
		if (g->q.stream) {
			json_decref(choices);
			struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read,
			    g, stream_free);
			MHD_add_response_header(r, "Content-Type", "text/event-stream");
			MHD_add_response_header(r, "Cache-Control", "no-cache");
			if (cur_req)
				cur_req->status = 200;
			enum MHD_Result q = MHD_queue_response(c, 200, r);
			MHD_destroy_response(r);
			return q;
		}
		while (!g->finish && !abandoned(c))
			step(g);
		if (!g->finish) {
			/* the client left, or the server is stopping: no more tokens for it */
			gen_free(g);
			json_decref(choices);
			return gone_or_stopping(c);
		}
		if (strcmp(g->finish, "error") == 0) {
			enum MHD_Result q = send_error(c, 500, NULL, "%s", g->msg);
			gen_free(g);
			json_decref(choices);
			return q;
		}
		json_array_append_new(choices, choice_json(g, (int)i));
		ptoks = g->prompt_tokens;
		ctoks += g->nreply;
		gen_free(g);
	}
	json_t *res = json_pack("{s:s, s:s, s:I, s:s, s:o, s:{s:I, s:I, s:I}}", "id", id, "object",
	    chat ? "chat.completion" : "text_completion", "created", (json_int_t)created, "model", sv.name, "choices",
	    choices, "usage", "prompt_tokens", (json_int_t)ptoks, "completion_tokens", (json_int_t)ctoks,
	    "total_tokens", (json_int_t)(ptoks + ctoks));
	return send_json(c, 200, res);
}

/* ---- embeddings ---------------------------------------------------------- */

/* A free slot, any, taken in the queue's order: -3 when the client left
 * while it waited, or the server is stopping. */
static int
any_slot(struct MHD_Connection *c, struct slot **out)
{
	pthread_mutex_lock(&sv.lock);
	if (queue_full()) {
		pthread_mutex_unlock(&sv.lock);
		return -4;
	}
	uint64_t me = sv.tickets++;
	for (;;) {
		for (int i = 0; i < sv.nslots && me == sv.serving; i++)
			if (!sv.slots[i].busy) {
				sv.slots[i].busy = 1;
				sv.serving++;
				skip_gone();
				pthread_cond_broadcast(&sv.freed);
				pthread_mutex_unlock(&sv.lock);
				*out = &sv.slots[i];
				return 0;
			}
		if (wait_turn(c, me) < 0)
			return -3;
	}
}

/* The inputs' embeddings, evaluated on a slot's thread (its OpenMP team). */
struct embed_job {
	int64_t **ids;
	size_t *n, count;
	float **out;
	size_t dim;
	int rc;
	char msg[256];
};

static void
embed_run(void *p)
{
	struct embed_job *j = p;
	for (size_t i = 0; i < j->count && !j->rc; i++) {
		int rc = llm_embed(sv.m, j->ids[i], j->n[i], sv.pooling, 1, &j->out[i], &j->dim);
		if (rc != LLM_OK) {
			snprintf(j->msg, sizeof(j->msg), "%s", serve_client_msg());
			j->rc = rc == LLM_ERR_UNSUPPORTED ? LLM_ERR_UNSUPPORTED : -1;
		}
	}
}

/* Standard base64 of n bytes. */
static char *
base64(const unsigned char *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *o = llm_xmalloc(4 * ((n + 2) / 3) + 1), *q = o;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
		    (i + 2 < n ? p[i + 2] : 0);
		*q++ = tab[v >> 18];
		*q++ = tab[(v >> 12) & 63];
		*q++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*q++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*q = 0;
	return o;
}

/* OpenAI's /v1/embeddings: input (a string, an array of strings, of ids,
 * or of arrays of ids; at most 2048 inputs), each pooled by --pooling and
 * normalized to unit length; dimensions (its first ones, normalized
 * again); encoding_format float or base64 (float32, little-endian). */
static enum MHD_Result
embeddings(struct MHD_Connection *c, const json_t *j)
{
	const json_t *in = json_object_get(j, "input"), *ef = json_object_get(j, "encoding_format"); /* borrowed */
	const char *k;
	const json_t *v;
	json_object_foreach ((json_t *)j, k, v)
		if (strcmp(k, "input") && strcmp(k, "model") && strcmp(k, "encoding_format") &&
		    strcmp(k, "dimensions") && strcmp(k, "user")) {
			char name[64];
			serve_cut_text(name, sizeof(name), k);
			return send_error(c, 400, "unknown_field",
			    "'%s' is not a field of /v1/embeddings that llm-serve reads (llm-serve(1))", name);
		}
	enum MHD_Result wq;
	if (wrong_model(c, j, &wq))
		return wq;
	int b64 = 0;
	if (ef && !json_is_null(ef)) {
		if (!json_is_string(ef) ||
		    (strcmp(json_string_value(ef), "float") && strcmp(json_string_value(ef), "base64")))
			return send_error(c, 400, NULL, "'encoding_format' must be 'float' or 'base64'");
		b64 = strcmp(json_string_value(ef), "base64") == 0;
	}
	int64_t dims = -1, edim = llm_embed_dim(sv.m);
	struct serve_bad b = {"", NULL};
	if (serve_integer(j, "dimensions", 1, edim > 0 ? edim : 1, &dims, &b))
		return send_error(c, 400, NULL, "%s", b.msg);
	/* the inputs as arrays of ids */
	json_t *list = json_is_string(in) || (json_is_array(in) && json_is_integer(json_array_get(in, 0))) ?
	    json_pack("[O]", in) :
	    json_incref((json_t *)in);
	size_t count = json_array_size(list);
	if (!json_is_array(list) || count == 0 || count > 2048) {
		json_decref(list);
		return send_error(c, 400, NULL,
		    "'input' must be a string, an array of strings, of token ids, or of arrays of token ids "
		    "(1 to 2048)");
	}
	struct embed_job job = {llm_xcalloc(count, sizeof(int64_t *)), llm_xcalloc(count, sizeof(size_t)), count,
		llm_xcalloc(count, sizeof(float *)), 0, 0, ""};
	size_t ntok = 0;
	int64_t limit = llm_context_limit(sv.m);
	for (size_t i = 0; i < count && !b.msg[0]; i++) {
		const json_t *x = json_array_get(list, i);
		if (json_is_string(x) && !json_string_length(x)) {
			serve_badf(&b, NULL, "input[%zu] is empty", i);
		} else if (json_is_string(x)) {
			if (llm_tokenize(sv.m, json_string_value(x), json_string_length(x), LLM_TOKENIZE_SPECIAL,
				&job.ids[i], &job.n[i]) != LLM_OK)
				serve_badf(&b, NULL, "input[%zu]: not valid UTF-8", i);
		} else if (json_is_array(x)) {
			job.ids[i] = llm_xcalloc(json_array_size(x) + 1, sizeof(int64_t));
			for (size_t t = 0; t < json_array_size(x) && !b.msg[0]; t++) {
				const json_t *id = json_array_get(x, t);
				if (!json_is_integer(id) || json_integer_value(id) < 0 ||
				    json_integer_value(id) >= llm_vocab_size(sv.m))
					serve_badf(&b, NULL, "input[%zu][%zu] is not a token id of this model", i, t);
				else
					job.ids[i][job.n[i]++] = json_integer_value(id);
			}
		} else
			serve_badf(&b, NULL, "input[%zu] must be a string or an array of token ids", i);
		if (!b.msg[0] && job.n[i] == 0)
			serve_badf(&b, NULL, "input[%zu] is empty", i);
		if (!b.msg[0] && (int64_t)job.n[i] > limit)
			serve_badf(&b, "context_length_exceeded",
			    "input[%zu] has %zu tokens; this model's context is %" PRId64, i, job.n[i], limit);
		ntok += job.n[i];
	}
	json_decref(list);
	struct slot *s = NULL;
	enum MHD_Result q;
	int sr;
	if (b.msg[0])
		q = send_error(c, 400, b.code, "%s", b.msg);
	else if ((sr = any_slot(c, &s)) < 0)
		q = sr == -4 ? queue_is_full(c) : gone_or_stopping(c);
	else {
		on_slot(s, embed_run, &job);
		release(s);
		if (job.rc == LLM_ERR_UNSUPPORTED)
			q = send_error(c, 501, NULL, "this model was compiled without embeddings: compile it again");
		else if (job.rc)
			q = send_error(c, 500, NULL, "%s", job.msg);
		else {
			json_t *data = json_array();
			size_t d = dims > 0 ? (size_t)dims : job.dim;
			for (size_t i = 0; i < count; i++) {
				float *e = job.out[i];
				if (d < job.dim) {
					/* the first d, normalized again (as OpenAI's dimensions) */
					double ss = 0;
					for (size_t t = 0; t < d; t++)
						ss += (double)e[t] * e[t];
					for (size_t t = 0; ss > 0 && t < d; t++)
						e[t] = (float)(e[t] / sqrt(ss));
				}
				json_t *emb;
				if (b64) {
					char *t = base64((const unsigned char *)e, d * sizeof(float));
					emb = json_string(t);
					free(t);
				} else {
					emb = json_array();
					for (size_t t = 0; t < d; t++)
						json_array_append_new(emb, json_real(e[t]));
				}
				json_array_append_new(data,
				    json_pack("{s:s, s:I, s:o}", "object", "embedding", "index", (json_int_t)i,
					"embedding", emb));
			}
			if (cur_req)
				cur_req->prompt_tokens = ntok;
			q = send_json(c, 200,
			    json_pack("{s:s, s:o, s:s, s:{s:I, s:I}}", "object", "list", "data", data, "model", sv.name,
				"usage", "prompt_tokens", (json_int_t)ntok, "total_tokens", (json_int_t)ntok));
		}
	}
	for (size_t i = 0; i < count; i++) {
		llm_free(job.ids[i]);
		llm_free(job.out[i]);
	}
	free(job.ids);
	free(job.n);
	free(job.out);
	return q;
}

static enum MHD_Result
tokenize(struct MHD_Connection *c, const json_t *j)
{
	const json_t *t = json_object_get(j, "content"), *sp = json_object_get(j, "add_special");
	int64_t *ids;
	size_t n;
	if (!json_is_string(t))
		return send_error(c, 400, NULL, "'content' must be a string");
	if (sp && !json_is_boolean(sp))
		return send_error(c, 400, NULL, "'add_special' must be a boolean");
	if (llm_tokenize(sv.m, json_string_value(t), json_string_length(t), json_is_true(sp) ? LLM_TOKENIZE_SPECIAL : 0,
		&ids, &n) != LLM_OK)
		return send_error(c, 400, NULL, "%s", llm_errmsg());
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(ids[i]));
	llm_free(ids);
	return send_json(c, 200, json_pack("{s:o}", "tokens", a));
}

static enum MHD_Result
detokenize(struct MHD_Connection *c, const json_t *j)
{
	const json_t *t = json_object_get(j, "tokens");
	if (!json_is_array(t))
		return send_error(c, 400, NULL, "'tokens' must be an array of token ids");
	size_t n = json_array_size(t);
	int64_t *ids = llm_xcalloc(n + 1, sizeof(*ids));
	for (size_t i = 0; i < n; i++) {
		const json_t *x = json_array_get(t, i);
		if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) >= llm_vocab_size(sv.m)) {
			free(ids);
			return send_error(c, 400, NULL, "tokens[%zu] is not a token id of this model", i);
		}
		ids[i] = json_integer_value(x);
	}
	char *text;
	size_t len;
	int rc = llm_detokenize(sv.m, ids, n, &text, &len);
	free(ids);
	if (rc != LLM_OK)
		return send_error(c, 500, NULL, "%s", llm_errmsg());
	json_t *res = json_pack("{s:s%}", "content", text, len);
	llm_free(text);
	return send_json(c, 200, res);
}

static char *
metrics_text(void)
{
	struct llm_buf b = {0};
	int busy = 0;
	pthread_mutex_lock(&sv.lock);
	for (int i = 0; i < sv.nslots; i++)
		busy += sv.slots[i].busy;
	uint64_t queued = sv.tickets - sv.serving;
	pthread_mutex_unlock(&sv.lock);
	pthread_mutex_lock(&stats.mu);
	llm_buf_puts(&b,
	    "# HELP llm_serve_requests_total Requests answered, by HTTP status (other: any other).\n"
	    "# TYPE llm_serve_requests_total counter\n");
	for (size_t i = 0; i < NSTATUS; i++) {
		char st[8];
		snprintf(st, sizeof(st), statuses[i] ? "%u" : "other", statuses[i]);
		llm_buf_printf(&b, "llm_serve_requests_total{status=\"%s\"} %" PRIu64 "\n", st, stats.requests[i]);
	}
	llm_buf_printf(&b,
	    "# HELP llm_serve_prompt_tokens_total Prompt tokens of the completions answered.\n"
	    "# TYPE llm_serve_prompt_tokens_total counter\nllm_serve_prompt_tokens_total %" PRIu64 "\n"
	    "# HELP llm_serve_completion_tokens_total Tokens generated.\n"
	    "# TYPE llm_serve_completion_tokens_total counter\nllm_serve_completion_tokens_total %" PRIu64 "\n"
	    "# HELP llm_serve_slots_busy Slots generating now.\n# TYPE llm_serve_slots_busy gauge\n"
	    "llm_serve_slots_busy %d\n"
	    "# HELP llm_serve_slots Slots (--parallel).\n# TYPE llm_serve_slots gauge\nllm_serve_slots %d\n"
	    "# HELP llm_serve_requests_queued Completions waiting for a slot.\n"
	    "# TYPE llm_serve_requests_queued gauge\nllm_serve_requests_queued %" PRIu64 "\n",
	    stats.prompt_tokens, stats.completion_tokens, busy, sv.nslots, queued);
	hist_text(&b, "llm_serve_time_to_first_token_seconds",
	    "From a completion's request to its first token (its prompt evaluated, its wait for a slot).", &stats.ttft,
	    ttft_le);
	hist_text(&b, "llm_serve_token_seconds", "Each further token of a reply (a decode step and its sampling).",
	    &stats.token, token_le);
	pthread_mutex_unlock(&stats.mu);
	return b.p;
}

/* llama-server's /slots: each slot, whether it is generating, and the
 * positions its sequence holds (of an idle slot: what a next prompt may
 * reuse). */
static json_t *
slots_json(void)
{
	json_t *a = json_array();
	pthread_mutex_lock(&sv.lock);
	for (int i = 0; i < sv.nslots; i++) {
		struct slot *s = &sv.slots[i];
		json_array_append_new(a,
		    json_pack("{s:i, s:I, s:b, s:I}", "id", i, "n_ctx", (json_int_t)llm_seq_context(s->seq),
			"is_processing", s->busy, "n_past", (json_int_t)atomic_load(&s->pos)));
	}
	pthread_mutex_unlock(&sv.lock);
	return a;
}

/* llama-server's /props: the model's facts, its template, the defaults. */
static json_t *
props_json(void)
{
	const char *tmpl = llm_chat_template_source(sv.m), *name = llm_chat_template_name(sv.m);
	struct llm_sampling d = LLM_SAMPLING_DEFAULT;
	int64_t ctx = llm_seq_context(sv.slots[0].seq);
	char *bos = NULL;
	size_t n;
	if (llm_token_bos(sv.m) >= 0 &&
	    llm_token_piece(sv.m, llm_token_bos(sv.m), LLM_PIECE_SPECIAL, &bos, &n) != LLM_OK)
		bos = NULL;
	json_t *p = json_pack("{s:s, s:s, s:i, s:{s:I, s:{s:f, s:I, s:f, s:f, s:f, s:I}}, s:s?, s:s?, s:s, s:s?, s:s, "
			      "s:{s:b, s:b}, s:I, s:s, s:s, s:I}",
	    "model_alias", sv.name, "model_desc", llm_model_desc(sv.m), "total_slots", sv.nslots,
	    "default_generation_settings", "n_ctx", (json_int_t)ctx, "params", "temperature", d.temperature, "top_k",
	    (json_int_t)d.top_k, "top_p", d.top_p, "min_p", d.min_p, "repeat_penalty", d.repeat_penalty,
	    "repeat_last_n", (json_int_t)d.repeat_last_n, "chat_template", tmpl, "chat_template_name", name,
	    "reply_format", llm_chat_reply_format(sv.m), "bos_token", bos, "build_info", llm_version(), "modalities",
	    "vision", 0, "audio", 0, "n_vocab", (json_int_t)llm_vocab_size(sv.m), "target_cpu", llm_target_cpu(sv.m),
	    "reasoning_format", sv.reasoning ? "deepseek" : "none", "n_params", (json_int_t)llm_model_n_params(sv.m));
	llm_free(bos);
	return p;
}

/* 1 when token (n bytes) is one of the keys; in time that depends on the
 * keys' lengths alone, not on where a guess first differs. */
static int
key_matches(const char *token, size_t n)
{
	int ok = 0;
	for (size_t k = 0; k < sv.nkeys; k++) {
		const char *key = sv.keys[k];
		size_t kl = strlen(key);
		unsigned char d = kl != n;
		for (size_t i = 0; i < kl; i++)
			d |= (unsigned char)key[i] ^ (unsigned char)(i < n ? token[i] : 0);
		ok |= d == 0;
	}
	return ok;
}

/* A key is needed (but for /health): "Authorization: Bearer KEY" (the
 * scheme's case as RFC 9110 has it, any) or llama-server's "X-Api-Key: KEY". */
static int
authorized(struct MHD_Connection *c)
{
	if (!sv.nkeys)
		return 1;
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
		   *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Api-Key");
	if (h && strncasecmp(h, "Bearer ", 7) == 0) {
		h += 7;
		while (*h == ' ')
			h++;
		if (key_matches(h, strlen(h)))
			return 1;
	}
	return x && key_matches(x, strlen(x));
}

static enum MHD_Result
handle(struct MHD_Connection *c, const char *url, const char *method, const char *body, size_t len)
{
	int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
	if (strcmp(url, "/health") == 0 && get)
		return send_json(c, 200, json_pack("{s:s}", "status", "ok"));
	if (!authorized(c))
		return send_error(c, 401, "invalid_api_key",
		    "a valid API key is required (Authorization: Bearer ..., or X-Api-Key)");
	if (strcmp(url, "/v1/models") == 0 && get)
		return send_json(c, 200,
		    json_pack("{s:s, s:[{s:s, s:s, s:i, s:s}]}", "object", "list", "data", "id", sv.name, "object",
			"model", "created", 0, "owned_by", "llm"));
	if (strcmp(url, "/metrics") == 0 && get)
		return send_text(c, 200, "text/plain; version=0.0.4", metrics_text());
	if (strcmp(url, "/slots") == 0 && get)
		return send_json(c, 200, slots_json());
	if (strcmp(url, "/props") == 0 && get)
		return send_json(c, 200, props_json());
	static const char *const posts[] = {"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize",
		"/v1/embeddings", "/embeddings"};
	int k = -1;
	for (int i = 0; i < (int)LLM_NELEM(posts); i++)
		if (strcmp(url, posts[i]) == 0)
			k = i;
	static const char *const gets[] = {"/health", "/v1/models", "/metrics", "/slots", "/props"};
	for (size_t i = 0; k < 0 && i < LLM_NELEM(gets); i++)
		if (strcmp(url, gets[i]) == 0)
			k = -2;
	if (k == -1)
		return send_error(c, 404, NULL, "no endpoint %s %s", method, url);
	if (k < 0 || !post)
		return send_error(c, 405, NULL, "%s %s: method not allowed", method, url);
	json_error_t e;
	json_t *j = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &e);
	if (!j)
		return send_error(c, 400, NULL, "the body is not JSON: %s (at byte %d)", e.text, e.position);
	if (!json_is_object(j)) {
		json_decref(j);
		return send_error(c, 400, NULL, "the body must be a JSON object");
	}
	/* the body is parsed: its text goes (a queued request holds only what it needs) */
	if (cur_req)
		llm_buf_free(&cur_req->body);
	if (k <= 1)
		return completion(c, j, k == 0); /* it frees j */
	enum MHD_Result rc = k == 2 ? tokenize(c, j) : k == 3 ? detokenize(c, j) : embeddings(c, j);
	json_decref(j);
	return rc;
}

/* A request's header fields, gathered for serve_check_framing (as many
 * as libmicrohttpd's memory limit for a connection lets through). */
struct fields {
	struct serve_field *f;
	size_t n;
};

static enum MHD_Result
add_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct fields *fs = cls;
	(void)kind;
	fs->f = llm_xreallocarray(fs->f, fs->n + 1, sizeof(*fs->f));
	fs->f[fs->n++] = (struct serve_field){key, value ? value : ""};
	return MHD_YES;
}

/* The checks on a request's headers, before its body: framing (RFC 9112:
 * one Content-Length, not with Transfer-Encoding, no coding but chunked,
 * Host on HTTP/1.1), Host (a loopback server answers only to its own
 * names, against DNS rebinding), Origin (a browser's request only from
 * --cors-origin), the key, a body's announced size, and a page's simple
 * POST (text/plain) when there is no key.  The refusal queued, or MHD_YES
 * and *ok. */
static enum MHD_Result
check_headers(struct MHD_Connection *c, const char *url, const char *method, const char *version, int *ok)
{
	struct fields fs = {0};
	const char *why;
	*ok = 0;
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_field, &fs);
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host"),
		   *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"),
		   *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	cur_req->close = 1; /* a refusal of the framing ends the connection: what follows is not trusted */
	unsigned st = serve_check_framing(fs.f, fs.n, version, &why);
	free(fs.f);
	if (st)
		return send_error(c, st, NULL, "%s", why);
	cur_req->close = 0;
	if (host && !serve_host_allowed(&web.names, host))
		return send_error(c, 403, NULL, "the Host header names no name of this server (--host-allow)");
	if (origin && !allowed_origin(c))
		return send_error(c, 403, NULL,
		    "requests from the web page of that origin are not allowed (--cors-origin)");
	if (strcmp(method, "OPTIONS") == 0) {
		/* a preflight: what may be asked */
		struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Allow", "GET, POST, OPTIONS");
		if (origin) {
			MHD_add_response_header(r, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
			MHD_add_response_header(r, "Access-Control-Allow-Headers",
			    "Authorization, Content-Type, X-Api-Key");
			MHD_add_response_header(r, "Access-Control-Max-Age", "600");
		}
		cors_headers(c, r);
		cur_req->status = 204;
		enum MHD_Result q = MHD_queue_response(c, 204, r);
		MHD_destroy_response(r);
		return q;
	}
	if (!(strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0) && !authorized(c))
		return send_error(c, 401, "invalid_api_key",
		    "a valid API key is required (Authorization: Bearer ..., or X-Api-Key)");
	if (!sv.nkeys && strcmp(method, "POST") == 0 && ct && strncasecmp(ct, "text/plain", 10) == 0)
		return send_error(c, 415, NULL,
		    "send the body as JSON (Content-Type: application/json), not text/plain");
	const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl && strtoull(cl, NULL, 10) > sv.max_body)
		return send_error(c, 413, NULL, "the body of %.20s bytes is larger than --max-body, %zu", cl,
		    sv.max_body);
	*ok = 1;
	return MHD_YES;
}

static int
hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : (ch | 32) >= 'a' && (ch | 32) <= 'f' ? (ch | 32) - 'a' + 10 : -1;
}

/* The URL's %XX escapes decoded in place, but %00: a NUL would end the
 * path early ("/health%00..." is no route of ours, not /health). */
static size_t
unescape(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls, (void)c;
	char *w = s;
	for (const char *r = s; *r;) {
		int hi, lo;
		if (r[0] == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0 && (hi | lo)) {
			*w++ = (char)(hi << 4 | lo);
			r += 3;
		} else
			*w++ = *r++;
	}
	*w = 0;
	return (size_t)(w - s);
}

/* The health port's one answer. */
static enum MHD_Result
on_health(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
    const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls, (void)version, (void)upload, (void)upload_size, (void)con_cls;
	int ok = strcmp(url, "/health") == 0 && strcmp(method, "GET") == 0;
	const char *body = ok ? "{\"status\":\"ok\"}" :
				"{\"error\":{\"message\":\"this port answers GET /health alone\"}}";
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result q = MHD_queue_response(c, ok ? 200 : 404, r);
	MHD_destroy_response(r);
	return q;
}

/* ---- deadlines (a slow client does not hold a connection) ----------------- */

/* A connection's deadline: its request's headers (from its start, or from
 * its last answer: the keep-alive's wait) and then its body must come
 * within --timeout seconds each; while a request is being answered there
 * is none (a reply takes what it takes).  A watchdog thread shuts the
 * socket of a connection past its deadline, and libmicrohttpd closes it.
 * (libmicrohttpd 0.9's own timeout is of idleness: a byte every few
 * seconds would keep a connection for ever.) */
struct conn {
	struct conn *prev, *next;
	int fd;
	int busy;     /* a request is being answered */
	int cut;      /* its socket was shut */
	double since; /* when its deadline's time began */
};

static struct {
	pthread_mutex_t mu;
	struct conn *list;
	double timeout;
	atomic_int stop;
	pthread_t th;
} dl = {.mu = PTHREAD_MUTEX_INITIALIZER, .timeout = 10};

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context, enum MHD_ConnectionNotificationCode toe)
{
	(void)cls;
	struct conn *k = *socket_context;
	pthread_mutex_lock(&dl.mu);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		k = llm_xcalloc(1, sizeof(*k));
		k->fd = ci ? ci->connect_fd : -1;
		k->since = llm_now();
		k->next = dl.list;
		if (dl.list)
			dl.list->prev = k;
		dl.list = k;
		*socket_context = k;
	} else if (k) {
		if (k->prev)
			k->prev->next = k->next;
		else
			dl.list = k->next;
		if (k->next)
			k->next->prev = k->prev;
		free(k);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&dl.mu);
}

/* The connection of c now answers (busy 1), or waits for a request's
 * headers or body again (busy 0: the deadline's time begins). */
static void
conn_phase(struct MHD_Connection *c, int busy)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *k = ci ? ci->socket_context : NULL;
	if (!k)
		return;
	pthread_mutex_lock(&dl.mu);
	k->busy = busy;
	k->since = llm_now();
	pthread_mutex_unlock(&dl.mu);
}

static void *
watchdog(void *p)
{
	(void)p;
	while (!atomic_load(&dl.stop)) {
		nanosleep(&(struct timespec){0, 200000000}, NULL);
		double now = llm_now();
		pthread_mutex_lock(&dl.mu);
		for (struct conn *k = dl.list; k; k = k->next)
			if (!k->busy && !k->cut && k->fd >= 0 && now - k->since > dl.timeout) {
				shutdown(k->fd, SHUT_RDWR);
				k->cut = 1;
			}
		pthread_mutex_unlock(&dl.mu);
	}
	return NULL;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method, const char *version,
    const char *upload, size_t *upload_size, void **con_cls)
{
	struct req *r = *con_cls;
	(void)cls;
	if (!r) {
		r = llm_xcalloc(1, sizeof(*r));
		*con_cls = r;
		r->t0 = llm_now();
		atomic_fetch_add(&in_hand, 1);
		snprintf(r->method, sizeof(r->method), "%s", method);
		serve_cut_text(r->path, sizeof(r->path), url);
		for (char *p = r->path; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = '?'; /* a client's text on our log line */
		cur_req = r;
		conn_phase(c, 0); /* the headers came: the body's time begins */
		/* the headers judged before the body: a refused client sends no more than them */
		int ok;
		enum MHD_Result q = check_headers(c, url, method, version, &ok);
		return ok ? MHD_YES : q;
	}
	cur_req = r;
	if (*upload_size) {
		/* a chunked body past the bound is read on (not kept) to twice the bound, for its 413; past that
		 * the connection ends (libmicrohttpd 0.9 answers no request before its body's end) */
		if (r->too_big || r->body.len + *upload_size > sv.max_body) {
			r->too_big += *upload_size;
			*upload_size = 0;
			if (r->body.len + r->too_big > 2 * sv.max_body) {
				r->status = 413;
				return MHD_NO;
			}
			return MHD_YES;
		}
		llm_buf_add(&r->body, upload, *upload_size);
		*upload_size = 0;
		return MHD_YES;
	}
	if (r->too_big)
		return send_error(c, 413, NULL, "the body is larger than --max-body, %zu bytes", sv.max_body);
	conn_phase(c, 1);
	return handle(c, url, method, r->body.p, r->body.len);
}

static void
on_done(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct req *r = *con_cls;
	(void)cls;
	conn_phase(c, 0); /* answered: the next request's time begins (keep-alive) */
	if (r) {
		/* the log line: method, path, status, tokens (prompt+reply), milliseconds */
		size_t i = 0;
		while (statuses[i] && statuses[i] != r->status)
			i++;
		pthread_mutex_lock(&stats.mu);
		stats.requests[i]++;
		stats.prompt_tokens += r->prompt_tokens;
		stats.completion_tokens += r->completion_tokens;
		pthread_mutex_unlock(&stats.mu);
		fprintf(stderr, "%s: %s %s %u %zu+%zu tokens %.0f ms%s\n", llm_prog, r->method, r->path, r->status,
		    r->prompt_tokens, r->completion_tokens, (llm_now() - r->t0) * 1e3,
		    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (cut short)");
		if (cur_req == r)
			cur_req = NULL;
		llm_buf_free(&r->body);
		free(r);
		*con_cls = NULL;
		if (atomic_fetch_sub(&in_hand, 1) == 1)
			malloc_trim(0);
	}
}

enum {
	OPT_API_KEY = 256,
	OPT_API_KEY_FILE,
	OPT_CACHE_DIR,
	OPT_CHAT_TEMPLATE,
	OPT_CORS_ORIGIN,
	OPT_HEALTH_PORT,
	OPT_HOST,
	OPT_HOST_ALLOW,
	OPT_IMPORT_FLAGS,
	OPT_JINJA,
	OPT_MAX_BODY,
	OPT_MAX_PER_ADDRESS,
	OPT_NAME,
	OPT_NO_CACHE,
	OPT_PARALLEL,
	OPT_POOLING,
	OPT_PORT,
	OPT_QUEUE,
	OPT_REASONING_FORMAT,
	OPT_TIMEOUT
};

/* libmicrohttpd's messages, as ours: after the program's name, one line;
 * none before the server listens (its failure to bind says "port 0" of
 * a port it was given: ours names the address). */
static atomic_int listening;

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	if (!atomic_load(&listening))
		return;
	/* the same message again within a second (a flood of refused connections) is counted, not printed */
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static char last[512];
	static double at;
	static unsigned long again;
	char line[512];
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = 0;
	pthread_mutex_lock(&mu);
	double now = llm_now();
	if (strcmp(line, last) == 0 && now - at < 1) {
		again++;
	} else {
		if (again)
			fprintf(stderr, "%s: libmicrohttpd: (the line before %lu times more)\n", llm_prog, again);
		fprintf(stderr, "%s: libmicrohttpd: %s\n", llm_prog, line);
		snprintf(last, sizeof(last), "%s", line);
		at = now;
		again = 0;
	}
	pthread_mutex_unlock(&mu);
}

/* SIGBUS: a page of the mapped model that its file no longer has (the
 * bundle cut short, or rewritten in place, under the server).  No
 * request can go on: one line that says so, then exit 1 (not a silent
 * 135). */
static char bus_msg[1024];

static void
on_sigbus(int sig)
{
	(void)sig;
	ssize_t w = write(2, bus_msg, strlen(bus_msg));
	(void)w;
	_exit(LLM_EXIT_FAIL);
}

static _Noreturn void
bad_usage(const char *msg)
{
	fprintf(stderr, "%s: %s\n%s", llm_prog, msg, usage_text);
	exit(LLM_EXIT_USAGE);
}

/* The served id when --name is not given: the last part of the path
 * (trailing slashes aside), without ".llm" for a bundle, ".gguf" for a
 * GGUF file (source: the path is a GGUF file or a checkpoint directory);
 * a directory's name as it is. */
static char *
default_name(const char *path, int source)
{
	size_t l = strlen(path);
	while (l > 1 && path[l - 1] == '/')
		l--;
	const char *b = path + l;
	while (b > path && b[-1] != '/')
		b--;
	l -= (size_t)(b - path);
	const char *ext = source ? ".gguf" : ".llm";
	size_t el = strlen(ext);
	struct stat sb;
	if (l > el && strncmp(b + l - el, ext, el) == 0 && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
		l -= el;
	return llm_xstrndup(b, l);
}

static void
add_key(const char *k, size_t n)
{
	sv.keys = llm_xreallocarray(sv.keys, sv.nkeys + 1, sizeof(*sv.keys));
	sv.keys[sv.nkeys++] = llm_xstrndup(k, n);
}

/* --api-key-file: a key a line (white space around it dropped; empty
 * lines and lines starting with '#' skipped); at least one. */
static void
keys_from_file(const char *path)
{
	char *text;
	size_t len, before = sv.nkeys;
	if (llm_read_file(path, &text, &len) < 0)
		llm_fatal("%s", llm_errmsg());
	for (char *p = text, *e; p < text + len; p = e + 1) {
		e = memchr(p, '\n', (size_t)(text + len - p));
		if (!e)
			e = text + len;
		char *a = p, *b = e;
		while (a < b && (*a == ' ' || *a == '\t' || *a == '\r'))
			a++;
		while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
			b--;
		if (a < b && *a != '#')
			add_key(a, (size_t)(b - a));
	}
	free(text);
	if (sv.nkeys == before)
		llm_fatal("%s: no key in it", path);
}

static int64_t
int_arg(const char *opt, const char *s, int64_t lo, int64_t hi)
{
	int64_t v;
	if (llm_parse_i64(s, lo, hi, &v) < 0) {
		fprintf(stderr, "%s: %s: '%s' is not an integer in [%" PRId64 ", %" PRId64 "]\n", llm_prog, opt, s, lo,
		    hi);
		exit(LLM_EXIT_USAGE);
	}
	return v;
}

/* The command line's settings (main's; the server's own are in sv, web
 * and dl). */
struct serve_opts {
	const char *model, *host, *name, *template;
	int64_t ctx, threads, parallel, port, max_body, health_port, per_address;
	struct run_cache cache;
	int reasoning;
};

/* The address to listen on: an IPv4 one, else an IPv6 one. */
struct listen_at {
	struct sockaddr_in a4;
	struct sockaddr_in6 a6;
	int v6;
};

static void
parse_options(int argc, char **argv, struct serve_opts *o)
{
	static const struct option longs[] = {{"ctx-size", required_argument, NULL, 'c'},
		{"model", required_argument, NULL, 'm'}, {"threads", required_argument, NULL, 't'}, LLM_STD_LONGOPTS,
		{"api-key", required_argument, NULL, OPT_API_KEY},
		{"api-key-file", required_argument, NULL, OPT_API_KEY_FILE},
		{"cache-dir", required_argument, NULL, OPT_CACHE_DIR}, {"host", required_argument, NULL, OPT_HOST},
		{"max-body", required_argument, NULL, OPT_MAX_BODY}, {"name", required_argument, NULL, OPT_NAME},
		{"no-cache", no_argument, NULL, OPT_NO_CACHE}, {"parallel", required_argument, NULL, OPT_PARALLEL},
		{"port", required_argument, NULL, OPT_PORT},
		{"chat-template", required_argument, NULL, OPT_CHAT_TEMPLATE}, {"jinja", no_argument, NULL, OPT_JINJA},
		{"health-port", required_argument, NULL, OPT_HEALTH_PORT},
		{"max-per-address", required_argument, NULL, OPT_MAX_PER_ADDRESS},
		{"timeout", required_argument, NULL, OPT_TIMEOUT}, {"queue", required_argument, NULL, OPT_QUEUE},
		{"n-predict", required_argument, NULL, 'n'}, {"pooling", required_argument, NULL, OPT_POOLING},
		{"cors-origin", required_argument, NULL, OPT_CORS_ORIGIN},
		{"host-allow", required_argument, NULL, OPT_HOST_ALLOW},
		{"import-flags", required_argument, NULL, OPT_IMPORT_FLAGS},
		{"reasoning-format", required_argument, NULL, OPT_REASONING_FORMAT}, {NULL, 0, NULL, 0}};
	int ch;

	while ((ch = getopt_long(argc, argv, "c:hm:n:t:", longs, NULL)) != -1) {
		switch (ch) {
		case 'c':
			o->ctx = int_arg("-c", optarg, 0, INT32_MAX);
			break;
		case 'm':
			o->model = optarg;
			break;
		case 'n':
			sv.n_predict = int_arg("-n", optarg, -1, INT32_MAX);
			if (sv.n_predict == 0)
				bad_usage("-n: 0 tokens: give -1 (to the end of the context) or more");
			break;
		case OPT_HEALTH_PORT:
			o->health_port = int_arg("--health-port", optarg, 0, 65535);
			break;
		case OPT_MAX_PER_ADDRESS:
			o->per_address = int_arg("--max-per-address", optarg, 1, 256);
			break;
		case OPT_TIMEOUT:
			dl.timeout = (double)int_arg("--timeout", optarg, 1, 3600);
			break;
		case OPT_QUEUE:
			sv.queue_max = (uint64_t)int_arg("--queue", optarg, 0, 1 << 20);
			break;
		case 't':
			o->threads = int_arg("-t", optarg, -1, 4096);
			break;
		case OPT_API_KEY:
			if (!*optarg)
				bad_usage("--api-key: empty");
			add_key(optarg, strlen(optarg));
			break;
		case OPT_API_KEY_FILE:
			keys_from_file(optarg);
			break;
		case OPT_IMPORT_FLAGS:
			o->cache.user_flags = optarg;
			break;
		case OPT_CACHE_DIR:
			o->cache.dir = optarg;
			break;
		case OPT_CHAT_TEMPLATE:
			o->template = optarg;
			break;
		case OPT_HOST:
			o->host = optarg;
			break;
		case OPT_JINJA:
			break;
		case OPT_POOLING:
			if (strcmp(optarg, "last") != 0 && strcmp(optarg, "mean") != 0)
				bad_usage("--pooling: not one of last and mean");
			sv.pooling = strcmp(optarg, "mean") == 0 ? LLM_POOL_MEAN : LLM_POOL_LAST;
			break;
		case OPT_CORS_ORIGIN:
			web.origins = llm_xreallocarray(web.origins, web.norigins + 1, sizeof(*web.origins));
			web.origins[web.norigins++] = optarg;
			break;
		case OPT_HOST_ALLOW:
			web.names.hosts = llm_xreallocarray(web.names.hosts, web.names.nhosts + 1, sizeof(char *));
			web.names.hosts[web.names.nhosts++] = optarg;
			break;
		case OPT_REASONING_FORMAT:
			if (strcmp(optarg, "none") != 0 && strcmp(optarg, "deepseek") != 0 &&
			    strcmp(optarg, "auto") != 0)
				bad_usage("--reasoning-format: not one of none, deepseek and auto");
			o->reasoning = strcmp(optarg, "none") != 0;
			break;
		case OPT_MAX_BODY:
			o->max_body = int_arg("--max-body", optarg, 1, INT32_MAX);
			break;
		case OPT_NAME:
			o->name = optarg;
			break;
		case OPT_NO_CACHE:
			o->cache.off = 1;
			break;
		case OPT_PARALLEL:
			o->parallel = int_arg("--parallel", optarg, 1, 64);
			break;
		case OPT_PORT:
			o->port = int_arg("--port", optarg, 0, 65535);
			break;
		default:
			llm_std_option(ch, usage_text, options_text);
			fputs(usage_text, stderr);
			exit(LLM_EXIT_USAGE);
		}
	}
	if (optind != argc)
		bad_usage("unexpected arguments");
	if (!o->model)
		bad_usage("no model (-m model.llm)");
	const char *ek = getenv("LLM_API_KEY");
	if (!sv.nkeys && ek && *ek)
		add_key(ek, strlen(ek));
	if (o->cache.off && o->cache.dir)
		bad_usage("give one of --no-cache and --cache-dir");
	if (o->template && !llm_chat_spec_known(o->template)) {
		char *m = llm_xasprintf("--chat-template: %s", llm_errmsg());
		bad_usage(m);
	}
}

static void
listen_address(const char *host, int64_t port, struct listen_at *la)
{
	la->a4 = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	la->a6 = (struct sockaddr_in6){.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
	la->v6 = 0;
	if (inet_pton(AF_INET, host, &la->a4.sin_addr) != 1) {
		if (inet_pton(AF_INET6, host, &la->a6.sin6_addr) != 1)
			bad_usage("--host: not an IPv4 or IPv6 address");
		la->v6 = 1;
	}
	web.names.listen = host;
	web.names.loopback = la->v6 ? IN6_IS_ADDR_LOOPBACK(&la->a6.sin6_addr) :
				      (ntohl(la->a4.sin_addr.s_addr) >> 24) == 127;
}

/* The slots, each a sequence and a thread of its own. */
static void
start_slots(int64_t parallel)
{
	sv.nslots = (int)parallel;
	sv.slots = llm_xcalloc((size_t)parallel, sizeof(*sv.slots));
	for (int i = 0; i < sv.nslots; i++) {
		struct slot *s = &sv.slots[i];
		if (llm_seq_new(sv.m, 0, &s->seq) != LLM_OK)
			llm_fatal("%s", llm_errmsg());
		pthread_mutex_init(&s->mu, NULL);
		pthread_cond_init(&s->cv, NULL);
		if (pthread_create(&s->thread, NULL, slot_main, s) != 0)
			llm_fatal("cannot start a thread:");
	}
	pthread_mutex_init(&sv.lock, NULL);
	pthread_cond_init(&sv.freed, NULL);
}

/* The API's daemon, and the health port's (a daemon of its own, GET
 * /health alone) when one is asked for (*hd NULL else). */
static struct MHD_Daemon *
start_daemons(const struct serve_opts *o, struct listen_at *la, struct MHD_Daemon **hd)
{
	int v6 = la->v6;
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_ERROR_LOG | MHD_USE_ITC | (v6 ? MHD_USE_IPv6 : 0),
	    0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR,
	    v6 ? (struct sockaddr *)&la->a6 : (struct sockaddr *)&la->a4, MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)256, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)o->per_address,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600, MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
	if (!d)
		llm_fatal("%s:%" PRId64 ": cannot listen:", o->host, o->port);
	*hd = NULL;
	if (o->health_port < 0)
		return d;
	if (v6)
		la->a6.sin6_port = htons((uint16_t)o->health_port);
	else
		la->a4.sin_port = htons((uint16_t)o->health_port);
	*hd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG |
		(v6 ? MHD_USE_IPv6 : 0),
	    0, NULL, NULL, on_health, NULL, MHD_OPTION_SOCK_ADDR,
	    v6 ? (struct sockaddr *)&la->a6 : (struct sockaddr *)&la->a4, MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)5, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_END);
	if (!*hd)
		llm_fatal("%s:%" PRId64 ": cannot listen:", o->host, o->health_port);
	return d;
}

/* After SIGINT or SIGTERM: the work in hand ends at its next token (a
 * 503, or a stream's error event), the queue empties, then the daemon's
 * threads are joined, and the slots'. */
static void
stop_serving(struct MHD_Daemon *d, struct MHD_Daemon *hd)
{
	MHD_quiesce_daemon(d); /* no more connections */
	pthread_mutex_lock(&sv.lock);
	atomic_store(&sv.stopping, 1);
	pthread_cond_broadcast(&sv.freed);
	pthread_mutex_unlock(&sv.lock);
	/* their answers sent (connections closed), for at most a second */
	for (int i = 0; i < 100; i++) {
		const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
		if (!di || di->num_connections == 0)
			break;
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	}
	MHD_stop_daemon(d);
	if (hd)
		MHD_stop_daemon(hd);
	atomic_store(&dl.stop, 1);
	pthread_join(dl.th, NULL);
	for (int i = 0; i < sv.nslots; i++) {
		struct slot *s = &sv.slots[i];
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
		llm_seq_free(&s->seq);
	}
}

int
main(int argc, char **argv)
{
	struct serve_opts o = {.host = "127.0.0.1",
		.parallel = 1,
		.port = 8080,
		.max_body = 1 << 20,
		.health_port = -1,
		.per_address = 64,
		.reasoning = 1};
	struct listen_at la;
	/* glibc gives each thread that allocates an arena of its own (up to 8 a core), and what a burst of
	 * large requests frees in them stays with the process: two arenas, shared, give it back (measured:
	 * 40 queued 1 MB bodies left RSS 75 MB above its start with the default, 12 MB with two) */
	mallopt(M_ARENA_MAX, 2);
	sv.n_predict = -1;
	sv.queue_max = 64;

	argv[0] = (char *)llm_setprog(argv[0]);
	parse_options(argc, argv, &o);
	listen_address(o.host, o.port, &la);
	sv.reasoning = o.reasoning;
	const char *model = o.model;
	snprintf(bus_msg, sizeof(bus_msg),
	    "%s: %s: the model's file changed under the server (cut short, or rewritten in place): replace a served "
	    "bundle by rename\n",
	    llm_prog, model);
	struct sigaction sa = {.sa_handler = on_sigbus};
	sigaction(SIGBUS, &sa, NULL);
	/* A GGUF file or a checkpoint: its bundle in the cache, compiled
	 * first if need be (minutes: the server is not listening yet; a
	 * signal now ends the compile and the server). */
	run_cache_variant(&o.cache, o.ctx, NULL, NULL); /* -c past the default bound, --import-flags */
	char *bundle = run_cache_model(model, &o.cache);

	/* SIGINT and SIGTERM end the server: waited for below, blocked in
	 * every thread (blocked before any starts); a client gone mid-write is an error, not SIGPIPE */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* a terminal's hang-up and the user signals do not end a server (its log is stderr as it is) */
	signal(SIGHUP, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGUSR2, SIG_IGN);
	struct llm_options lo = {.threads = o.threads < 0 ? 0 : (int)o.threads,
		.context = o.ctx,
		.chat_template = o.template};
	int rc = llm_open(bundle ? bundle : model, &lo, &sv.m);
	if (rc == LLM_ERR_RANKS && !*llm_errmsg())
		return LLM_EXIT_FAIL; /* rank 0 says why */
	if (rc != LLM_OK)
		llm_fatal("%s", llm_errmsg());
	if (llm_rank(sv.m) > 0) {
		/* a tensor-parallel model's other ranks: rank 0 serves */
		if (llm_follow(sv.m) != LLM_OK)
			llm_fatal("%s", llm_errmsg());
		llm_close(&sv.m);
		return LLM_EXIT_OK;
	}
	sv.name = o.name ? llm_xstrdup(o.name) : default_name(model, bundle != NULL);
	if (llm_model_warning(sv.m))
		llm_warn("%s", llm_model_warning(sv.m));
	if (!llm_chat_template_name(sv.m))
		llm_warn("%s: no chat template: /v1/chat/completions answers 500 (give --chat-template); text "
			 "completions are served",
		    model);
	sv.max_body = (size_t)o.max_body;
	start_slots(o.parallel);
	struct MHD_Daemon *hd, *d = start_daemons(&o, &la, &hd);
	if (pthread_create(&dl.th, NULL, watchdog, NULL) != 0)
		llm_fatal("cannot start a thread:");
	atomic_store(&listening, 1);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (hd) {
		const union MHD_DaemonInfo *hi = MHD_get_daemon_info(hd, MHD_DAEMON_INFO_BIND_PORT);
		fprintf(stderr, "%s: health on http://%s%s%s:%u/health\n", llm_prog, la.v6 ? "[" : "", o.host,
		    la.v6 ? "]" : "", hi ? hi->port : (unsigned)o.health_port);
	}
	fprintf(stderr, "%s: %s: listening on http://%s%s%s:%u (model '%s', %d slot%s of %" PRId64 " positions)\n",
	    llm_prog, model, la.v6 ? "[" : "", o.host, la.v6 ? "]" : "", info ? info->port : (unsigned)o.port, sv.name,
	    sv.nslots, sv.nslots > 1 ? "s" : "", llm_seq_context(sv.slots[0].seq));
	int sig;
	sigwait(&sigs, &sig);
	stop_serving(d, hd);
	llm_close(&sv.m);
	free(bundle);
	free(sv.slots);
	free(sv.name);
	return 0;
}
