/* api.c: the public C API (include/llm.h) over the runtime, the
 * tokenizer, the chat templates and the sampler. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../include/llm.h"
#include "../base/utf8.h"
#include "../text/chat.h"
#include "../text/chatcache.h"
#include "../text/chatsrc.h"
#include "../base/dtype.h"
#include "../formats/family.h"
#include "../text/grammar.h"
#include "../text/reply.h"
#include "../runtime/runtime.h"
#include "../runtime/sample.h"
#include "../base/util.h"

struct llm {
	struct llm_runtime *rt;
	struct llm_chatsrc src;
	pthread_mutex_t lock;             /* the tokenizer: encode keeps a cache */
	int64_t context;                  /* a sequence's default (0: llm_ctx_new's) */
	int64_t eot;                      /* the template's end of turn, or -1 */
	atomic_int nseq;                  /* sequences alive */
	char desc[96];                    /* llm_model_desc */
	uint64_t params;                  /* elements of the checkpoint's tensors */
	unsigned char *added;             /* (vocab) 1: an added token (a chat's cut point may follow it) */
	struct llm_grammar_vocab *gvocab; /* the tokens' texts for grammars, made at the first (under lock) */
};

struct llm_seq {
	struct llm *m;
	struct llm_ctx *ctx;
	int64_t *tokens; /* the sequence's, pos of them */
	size_t cap;
	int logits; /* 1: the ctx's logits are the last token's */
	struct llm_sampler *sampler;
	struct llm_sampling sp; /* sampler's parameters */
	float *banned;          /* the logits with the end tokens -inf (ignore_eos) */
	/* The grammar (sp.grammar's text in gtext), where it is (gst) and
	 * where it was before the last token drawn (gprev), drawn at
	 * position gpos (-1: none yet) as glast. */
	char *gtext;
	struct llm_grammar *grammar;
	struct llm_grammar_state gst, gprev;
	int64_t gpos, glast;
	uint8_t *allowed; /* (vocab) the grammar's mask */
	float *masked;    /* (vocab) the logits with it */
	/* The text of the tokens, for llm_seq_chat (lib/text/chatcache.h), and
	 * its last plan: the rendering whose text from plan_from its tokens
	 * plan_ids encode, evaluated at plan_keep. */
	struct llm_chat_cache cache;
	struct llm_buf plan_text;
	size_t plan_from, plan_n;
	int64_t *plan_ids, plan_keep; /* plan_keep -1: no plan */
};

/* Set the message and return the status. */
static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int
fail(int status, const char *fmt, ...)
{
	va_list ap;
	struct llm_buf b = {0};
	va_start(ap, fmt);
	llm_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	llm_seterr("%s", b.p);
	llm_buf_free(&b);
	return status;
}

const char *
llm_status_name(int status)
{
	static const char *const names[] = {"LLM_OK", "LLM_ERR_ARG", "LLM_ERR_IO", "LLM_ERR_FORMAT", "LLM_ERR_TARGET",
		"LLM_ERR_CONTEXT", "LLM_ERR_TOKEN", "LLM_ERR_TEXT", "LLM_ERR_UNSUPPORTED", "LLM_ERR_RANKS"};
	return status >= 0 && status < (int)LLM_NELEM(names) ? names[status] : NULL;
}

const char *
llm_version(void)
{
	return LLM_VERSION;
}

void
llm_free(void *p)
{
	free(p);
}

/* Tokenizers load one at a time (the first fills shared tables), and
 * the runtime sets OMP_NUM_THREADS: models open one at a time. */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;

static int open_model(const char *path, const struct llm_options *o, struct llm **out);

/* m->params and m->desc, as llama_model_desc words it: the family,
 * llama.cpp's size class, the type of the weights (the block type that
 * holds most bytes names a quantized model). */
static void
describe(struct llm *m)
{
	const struct llm_model *md = llm_runtime_model(m->rt);
	const char *qtype = NULL;
	uint64_t qbytes = 0;
	for (size_t i = 0; i < md->ntensors; i++) {
		const struct llm_plan_tensor *t = &md->tensors[i];
		if (t->nsource == 0)
			continue; /* RoPE tables */
		uint64_t e = 1;
		for (int d = 0; d < t->ndim; d++)
			e *= (uint64_t)t->shape[d];
		m->params += e;
		uint64_t qb = 0;
		for (size_t j = 0; t->quant && j < md->ntensors; j++)
			if (md->tensors[j].quant && strcmp(md->tensors[j].quant, t->quant) == 0)
				qb += md->tensors[j].bytes;
		if (qb > qbytes) {
			qbytes = qb;
			qtype = t->quant;
		}
	}
	char dt[16];
	snprintf(dt, sizeof(dt), "%s", qtype ? qtype : llm_dtype_name(md->weight_dtype));
	for (char *c = dt; *c; c++)
		*c = (char)toupper((unsigned char)*c);
	/* llama_model_desc's words: llama.cpp's size class, the import's file type when it has one (else
	 * the weights' type, "all F32" as llama.cpp says it) */
	snprintf(m->desc, sizeof(m->desc), "%s %s %s", md->family,
	    llm_family_size_class(llm_family_by_name(md->family), md->cfg.n_layers, md->cfg.hidden_size,
		md->cfg.n_heads, md->cfg.n_kv_heads, md->cfg.vocab_size),
	    md->file_type              ? md->file_type :
		strcmp(dt, "F32") == 0 ? "all F32" :
					 dt);
}

/* The token that ends an assistant's turn in the chat template: the
 * longest special added token that starts what the template writes
 * after a reply (white space aside); -1 when there is none. */
static int64_t
end_of_turn(const struct llm *m)
{
	if (!m->src.tok || !m->src.tmpl.jinja)
		return -1;
	char *after = llm_chat_after_reply(&m->src.tmpl);
	int64_t best = -1;
	size_t best_len = 0;
	if (after) {
		const char *a = after + strspn(after, " \t\r\n");
		for (size_t i = 0; i < llm_tokenizer_n_added(m->src.tok); i++) {
			int64_t id = llm_tokenizer_added_id(m->src.tok, i);
			size_t len;
			const char *t = llm_tokenizer_token_text(m->src.tok, id, &len);
			if (t && len > best_len && strncmp(a, t, len) == 0 &&
			    llm_tokenizer_is_special(m->src.tok, id)) {
				best = id;
				best_len = len;
			}
		}
	}
	free(after);
	return best;
}

int
llm_open(const char *path, const struct llm_options *o, struct llm **out)
{
	pthread_mutex_lock(&open_lock);
	int rc = open_model(path, o, out);
	pthread_mutex_unlock(&open_lock);
	return rc;
}

static int
open_model(const char *path, const struct llm_options *o, struct llm **out)
{
	static const struct llm_options none = LLM_OPTIONS_INIT;
	struct stat st;
	int refused = 0;

	if (!path || !out)
		return fail(LLM_ERR_ARG, "llm_open: %s is NULL", path ? "out" : "path");
	*out = NULL;
	if (!o)
		o = &none;
	if (o->threads < 0 || o->context < 0)
		return fail(LLM_ERR_ARG, "llm_open: %s %s is negative", path, o->threads < 0 ? "threads" : "context");
	if (stat(path, &st) < 0)
		return fail(LLM_ERR_IO, "%s: %s", path, strerror(errno));
	int rank = -1;
	struct llm_runtime_opts ro = {.threads = o->threads,
		.verbose = o->verbose,
		.prefault = 1,
		.refused = &refused,
		.mpi_rank = &rank};
	struct llm *m = llm_xcalloc(1, sizeof(*m));
	m->src = (struct llm_chatsrc)LLM_CHATSRC_INIT;
	if (!(m->rt = llm_runtime_open(path, &ro))) {
		free(m);
		if (rank < 0)
			return refused ? LLM_ERR_TARGET : LLM_ERR_FORMAT;
		/* the ranks' verdict, the same on all of them: rank 0 says it */
		if (rank)
			llm_seterr("%s", "");
		return LLM_ERR_RANKS;
	}
	int64_t limit = llm_runtime_model(m->rt)->max_context;
	if (o->context > limit) {
		llm_runtime_close(m->rt);
		free(m);
		return fail(LLM_ERR_CONTEXT,
		    "%s: a context of %" PRId64 " positions exceeds the one this model was built for, %" PRId64, path,
		    o->context, limit);
	}
	m->context = o->context;
	pthread_mutex_init(&m->lock, NULL);
	if ((o->tokenizer ? llm_chatsrc_path(&m->src, o->tokenizer) :
			    llm_chatsrc_bundle(&m->src, llm_runtime_bundle(m->rt))) < 0) {
		llm_close(&m);
		return LLM_ERR_FORMAT;
	}
	describe(m);
	if (o->chat_template && llm_chatsrc_template(&m->src, o->chat_template) < 0) {
		int rc = fail(LLM_ERR_ARG, "%s", llm_errmsg()); /* it names the template */
		llm_close(&m);
		return rc;
	}
	int64_t vocab = llm_runtime_vocab(m->rt);
	m->added = llm_xcalloc((size_t)vocab, 1);
	for (size_t i = 0; m->src.tok && i < llm_tokenizer_n_added(m->src.tok); i++) {
		int64_t id = llm_tokenizer_added_id(m->src.tok, i);
		if (id >= 0 && id < vocab)
			m->added[id] = 1;
	}
	m->eot = end_of_turn(m);
	*out = m;
	return LLM_OK;
}

int
llm_rank(const struct llm *m)
{
	return m ? llm_runtime_rank(m->rt) : 0;
}

int
llm_follow(struct llm *m)
{
	if (!m)
		return fail(LLM_ERR_ARG, "llm_follow: the model is NULL");
	return llm_runtime_follow(m->rt) < 0 ? LLM_ERR_RANKS : LLM_OK;
}

int
llm_close(struct llm **mp)
{
	struct llm *m = mp ? *mp : NULL;
	if (!m)
		return LLM_OK;
	if (atomic_load(&m->nseq) > 0)
		return fail(LLM_ERR_ARG, "llm_close: %d sequences of the model are alive (llm_seq_free them first)",
		    atomic_load(&m->nseq));
	*mp = NULL;
	llm_chatsrc_free(&m->src);
	free(m->added);
	llm_grammar_vocab_free(m->gvocab);
	llm_runtime_close(m->rt);
	pthread_mutex_destroy(&m->lock);
	free(m);
	return LLM_OK;
}

int64_t
llm_vocab_size(const struct llm *m)
{
	return m ? llm_runtime_vocab(m->rt) : -1;
}

int64_t
llm_context_limit(const struct llm *m)
{
	return m ? llm_runtime_model(m->rt)->max_context : -1;
}

int64_t
llm_token_bos(const struct llm *m)
{
	return m ? llm_runtime_model(m->rt)->bos_id : -1;
}

int
llm_token_add_bos(const struct llm *m)
{
	return m && llm_runtime_model(m->rt)->add_bos && llm_runtime_model(m->rt)->bos_id >= 0;
}

int
llm_token_is_eos(const struct llm *m, int64_t id)
{
	if (!m || id < 0)
		return 0;
	const struct llm_model *mm = llm_runtime_model(m->rt);
	for (int i = 0; i < mm->n_eos; i++)
		if (mm->eos_ids[i] == id)
			return 1;
	return id == m->eot;
}

const char *
llm_target_cpu(const struct llm *m)
{
	return m ? llm_runtime_target_cpu(m->rt) : NULL;
}

const char *
llm_chat_template_source(const struct llm *m)
{
	return m && m->src.tmpl.jinja ? m->src.tmpl.text : NULL;
}

const char *
llm_chat_template_name(const struct llm *m)
{
	return m && m->src.tmpl.jinja ? (m->src.tmpl.name ? m->src.tmpl.name : "jinja") : NULL;
}

/* ---- replies ---- */

static const struct llm_reply_format *
reply_format(const struct llm *m)
{
	return m->src.tmpl.jinja && m->src.tmpl.reply ? m->src.tmpl.reply : llm_reply_format_named("plain");
}

const char *
llm_chat_reply_format(const struct llm *m)
{
	return m ? llm_reply_format_name(reply_format(m)) : NULL;
}

int
llm_chat_prompt_thinking(const struct llm *m, const char *prompt, size_t len)
{
	return m && prompt && llm_reply_prompt_thinking(reply_format(m), prompt, len);
}

int
llm_chat_parse_reply(const struct llm *m, const char *text, size_t len, int flags, char **json, size_t *jsonlen)
{
	if (!m || !text || !json)
		return fail(LLM_ERR_ARG, "llm_chat_parse_reply: %s is NULL",
		    !m ? "the model" :
			!text ? "text" :
				"json");
	if (flags & ~(LLM_PARSE_TOOLS | LLM_PARSE_REASONING | LLM_PARSE_THINKING | LLM_PARSE_PARTIAL))
		return fail(LLM_ERR_ARG, "llm_chat_parse_reply: flags %#x: unknown bits", (unsigned)flags);
	if (!llm_utf8_valid(text, len))
		return fail(LLM_ERR_TEXT, "llm_chat_parse_reply: the text is not valid UTF-8");
	struct llm_reply r = {0};
	llm_reply_parse(reply_format(m), text, len,
	    (flags & LLM_PARSE_TOOLS ? LLM_REPLY_TOOLS : 0) | (flags & LLM_PARSE_REASONING ? LLM_REPLY_REASONING : 0) |
		(flags & LLM_PARSE_THINKING ? LLM_REPLY_THINKING : 0) |
		(flags & LLM_PARSE_PARTIAL ? LLM_REPLY_PARTIAL : 0),
	    &r);
	json_t *msg = llm_reply_message(&r);
	llm_reply_free(&r);
	*json = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!*json)
		llm_fatal("out of memory serialising JSON");
	if (jsonlen)
		*jsonlen = strlen(*json);
	return LLM_OK;
}

int
llm_chat_tool_grammar(const struct llm *m, const char *tools, size_t len, const char *only, int parallel, int thinking,
    char **grammar, char **prefix)
{
	if (!m || !tools || !grammar || !prefix)
		return fail(LLM_ERR_ARG, "llm_chat_tool_grammar: %s is NULL",
		    !m ? "the model" :
			!tools   ? "tools" :
			!grammar ? "grammar" :
				   "prefix");
	json_error_t e;
	json_t *t = json_loadb(tools, len, 0, &e);
	if (!json_is_array(t)) {
		json_decref(t);
		return fail(LLM_ERR_ARG, "llm_chat_tool_grammar: the tools are not a JSON array");
	}
	const struct llm_reply_format *f = reply_format(m);
	if (!llm_reply_writes_calls(f)) {
		json_decref(t);
		return fail(LLM_ERR_UNSUPPORTED,
		    "llm_chat_tool_grammar: the chat template's reply format ('%s') has "
		    "no tool calls to hold a reply to",
		    llm_reply_format_name(f));
	}
	char *p = NULL, *g = llm_reply_tool_grammar(f, t, only, parallel, thinking, &p);
	json_decref(t);
	if (!g)
		return fail(LLM_ERR_ARG, "llm_chat_tool_grammar: %s", llm_errmsg());
	*grammar = g;
	*prefix = p;
	return LLM_OK;
}

static int
need_tokenizer(const struct llm *m, const char *fn)
{
	if (!m)
		return fail(LLM_ERR_ARG, "%s: the model is NULL", fn);
	if (!m->src.tok)
		return fail(LLM_ERR_UNSUPPORTED, "%s: %s: no tokenizer.json", fn, llm_runtime_model(m->rt)->path);
	return LLM_OK;
}

/* Encode under the lock; ranges as llm_tokenizer_encode_plain's. */
static int
encode(struct llm *m, const char *text, size_t len, int add_special, const size_t (*plain)[2], size_t nplain,
    int64_t **ids, size_t *n)
{
	int64_t *v = NULL;
	size_t k = 0;
	pthread_mutex_lock(&m->lock);
	int rc = llm_tokenizer_encode_plain(m->src.tok, text, len, add_special, plain, nplain, &v, &k);
	pthread_mutex_unlock(&m->lock);
	if (rc < 0) {
		free(v);
		return LLM_ERR_TEXT;
	}
	*ids = v;
	*n = k;
	return LLM_OK;
}

int
llm_tokenize(struct llm *m, const char *text, size_t len, int flags, int64_t **ids, size_t *n)
{
	int rc = need_tokenizer(m, "llm_tokenize");
	if (rc)
		return rc;
	if ((!text && len) || !ids || !n)
		return fail(LLM_ERR_ARG, "llm_tokenize: %s is NULL", !ids ? "ids" : !n ? "n" : "text");
	if (flags & ~(LLM_TOKENIZE_SPECIAL | LLM_TOKENIZE_PLAIN))
		return fail(LLM_ERR_ARG, "llm_tokenize: unknown flags %#x", (unsigned)flags);
	const size_t all[1][2] = {{0, len}};
	return encode(m, text ? text : "", len, (flags & LLM_TOKENIZE_SPECIAL) != 0, all,
	    (flags & LLM_TOKENIZE_PLAIN) && len > 0, ids, n);
}

int
llm_detokenize(struct llm *m, const int64_t *ids, size_t n, char **text, size_t *len)
{
	int rc = need_tokenizer(m, "llm_detokenize");
	if (rc)
		return rc;
	if ((!ids && n) || !text)
		return fail(LLM_ERR_ARG, "llm_detokenize: %s is NULL", !text ? "text" : "ids");
	struct llm_buf b = {0};
	pthread_mutex_lock(&m->lock);
	llm_tokenizer_decode(m->src.tok, ids, n, 0, &b);
	pthread_mutex_unlock(&m->lock);
	llm_buf_add(&b, "", 1);
	if (len)
		*len = b.len - 1;
	*text = b.p;
	return LLM_OK;
}

const char *
llm_kv_type(const struct llm *m)
{
	return m ? llm_dtype_name(llm_runtime_model(m->rt)->kv_dtype) : NULL;
}

const char *
llm_activations(const struct llm *m)
{
	const struct llm_model *md = m ? llm_runtime_model(m->rt) : NULL;
	return !md ? NULL : md->act_q8 ? "q8" : md->act_bf16 ? "bf16" : "f32";
}

int64_t
llm_prefill_chunk(const struct llm *m)
{
	return m ? llm_runtime_model(m->rt)->prefill_chunk : 0;
}

const char *
llm_model_warning(const struct llm *m)
{
	return m ? m->src.warning : NULL;
}

const char *
llm_model_desc(const struct llm *m)
{
	return m ? m->desc : NULL;
}

int
llm_set_threads(struct llm *m, int threads)
{
	if (!m || threads < 1)
		return fail(LLM_ERR_ARG, "llm_set_threads: %s",
		    !m ? "the model is NULL" : "threads must be at least 1");
	llm_runtime_set_threads(m->rt, threads);
	return LLM_OK;
}

uint64_t
llm_model_size(const struct llm *m)
{
	return m ? llm_runtime_model(m->rt)->data_bytes : 0;
}

uint64_t
llm_model_n_params(const struct llm *m)
{
	return m ? m->params : 0;
}

/* Whether decoding strips the leading space of piece as the first token
 * of a document, as SentencePiece decoding does: decoded alone, id has
 * fewer bytes and no leading space. */
static int
strips_first_space(struct llm_tokenizer *tok, int64_t id, const struct llm_buf *piece)
{
	struct llm_buf d = {0};
	if (piece->len == 0 || piece->p[0] != ' ')
		return 0;
	llm_tokenizer_decode(tok, &id, 1, 1, &d);
	int strip = d.len < piece->len && (d.len == 0 || d.p[0] != ' ');
	llm_buf_free(&d);
	return strip;
}

int
llm_token_piece(struct llm *m, int64_t id, int flags, char **text, size_t *len)
{
	int rc = need_tokenizer(m, "llm_token_piece");
	if (rc)
		return rc;
	if (!text)
		return fail(LLM_ERR_ARG, "llm_token_piece: text is NULL");
	if (flags & ~(LLM_PIECE_SPECIAL | LLM_PIECE_FIRST | LLM_PIECE_MARKERS))
		return fail(LLM_ERR_ARG, "llm_token_piece: unknown flags %#x", (unsigned)flags);
	if (id < 0 || id >= llm_vocab_size(m))
		return fail(LLM_ERR_TOKEN, "llm_token_piece: token %" PRId64 " is outside the vocabulary of %" PRId64,
		    id, llm_vocab_size(m));
	struct llm_buf b = {0};
	pthread_mutex_lock(&m->lock);
	int special = llm_tokenizer_is_special(m->src.tok, id);
	if ((flags & (LLM_PIECE_SPECIAL | LLM_PIECE_MARKERS)) || !special) {
		llm_tokenizer_token_bytes(m->src.tok, id, &b);
		if ((flags & LLM_PIECE_FIRST) && strips_first_space(m->src.tok, id, &b))
			memmove(b.p, b.p + 1, --b.len);
		if (special && !(flags & LLM_PIECE_SPECIAL) && !llm_reply_marker(reply_format(m), b.p, b.len))
			b.len = 0; /* LLM_PIECE_MARKERS alone: a special token that is no marker */
	}
	pthread_mutex_unlock(&m->lock);
	llm_buf_add(&b, "", 1);
	if (len)
		*len = b.len - 1;
	*text = b.p;
	return LLM_OK;
}

/* A conversation as the caller gives it: messages, or JSON text. */
struct conv {
	const struct llm_message *msgs;
	size_t n;
	const char *json;
	size_t len;
};

/* The conversation rendered into out (spans: the messages' ranges). */
static int
render(struct llm *m, const struct conv *cv, int add_gen, struct llm_buf *out, struct llm_spans *sp, const char *fn)
{
	const struct llm_message *msgs = cv->msgs;
	size_t n = cv->n;
	if (!m)
		return fail(LLM_ERR_ARG, "%s: the model is NULL", fn);
	if (!msgs && n)
		return fail(LLM_ERR_ARG, "%s: msgs is NULL", fn);
	if (!m->src.tmpl.jinja)
		return fail(LLM_ERR_UNSUPPORTED, "%s: %s: no chat template recognised", fn,
		    llm_runtime_model(m->rt)->path);
	struct llm_chat c = {0};
	if (cv->json && llm_chat_parse(&c, cv->json, cv->len, fn) < 0)
		return fail(LLM_ERR_ARG, "%s", llm_errmsg());
	for (size_t i = 0; !cv->json && i < n; i++) {
		if (!msgs[i].role || !msgs[i].content) {
			llm_chat_free(&c);
			return fail(LLM_ERR_ARG, "%s: message %zu: %s is NULL", fn, i,
			    msgs[i].role ? "content" : "role");
		}
		size_t len = strlen(msgs[i].content);
		if (!llm_utf8_valid(msgs[i].content, len)) {
			llm_chat_free(&c);
			return fail(LLM_ERR_TEXT, "%s: message %zu: content is not valid UTF-8", fn, i);
		}
		llm_chat_add(&c, msgs[i].role, msgs[i].content, len);
	}
	int rc = llm_chat_render(&m->src.tmpl, &c, add_gen, out, sp);
	llm_chat_free(&c);
	return rc < 0 ? fail(LLM_ERR_ARG, "%s: %s", fn, llm_errmsg()) : LLM_OK;
}

static int
chat_apply(struct llm *m, const struct conv *cv, int add_generation_prompt, char **text, size_t *len, const char *fn)
{
	struct llm_buf b = {0};
	if (!text)
		return fail(LLM_ERR_ARG, "%s: text is NULL", fn);
	int rc = render(m, cv, add_generation_prompt, &b, NULL, fn);
	if (rc) {
		llm_buf_free(&b);
		return rc;
	}
	llm_buf_add(&b, "", 1);
	if (len)
		*len = b.len - 1;
	*text = b.p;
	return LLM_OK;
}

int
llm_chat_apply(struct llm *m, const struct llm_message *msgs, size_t n, int add_generation_prompt, char **text,
    size_t *len)
{
	return chat_apply(m, &(struct conv){msgs, n, NULL, 0}, add_generation_prompt, text, len, "llm_chat_apply");
}

int
llm_chat_apply_json(struct llm *m, const char *json, size_t jlen, int add_generation_prompt, char **text, size_t *len)
{
	if (!json)
		return fail(LLM_ERR_ARG, "llm_chat_apply_json: json is NULL");
	return chat_apply(m, &(struct conv){NULL, 0, json, jlen}, add_generation_prompt, text, len,
	    "llm_chat_apply_json");
}

static int
chat_tokenize(struct llm *m, const struct conv *cv, int add_generation_prompt, int64_t **ids, size_t *nids,
    const char *fn)
{
	struct llm_buf b = {0};
	struct llm_spans sp = {0};
	int rc = need_tokenizer(m, fn);
	if (rc)
		return rc;
	if (!ids || !nids)
		return fail(LLM_ERR_ARG, "%s: %s is NULL", fn, ids ? "nids" : "ids");
	if (!(rc = render(m, cv, add_generation_prompt, &b, &sp, fn)))
		rc = encode(m, b.p ? b.p : "", b.len, 0, (const size_t (*)[2])sp.r, sp.n, ids, nids);
	llm_buf_free(&b);
	llm_spans_free(&sp);
	return rc;
}

int
llm_chat_tokenize(struct llm *m, const struct llm_message *msgs, size_t n, int add_generation_prompt, int64_t **ids,
    size_t *nids)
{
	return chat_tokenize(m, &(struct conv){msgs, n, NULL, 0}, add_generation_prompt, ids, nids,
	    "llm_chat_tokenize");
}

int
llm_chat_tokenize_json(struct llm *m, const char *json, size_t len, int add_generation_prompt, int64_t **ids,
    size_t *nids)
{
	if (!json)
		return fail(LLM_ERR_ARG, "llm_chat_tokenize_json: json is NULL");
	return chat_tokenize(m, &(struct conv){NULL, 0, json, len}, add_generation_prompt, ids, nids,
	    "llm_chat_tokenize_json");
}

static int
seq_chat(struct llm_seq *s, const struct conv *cv, int flags, int64_t *keep, int64_t **ids, size_t *nids,
    const char *fn)
{
	struct llm_buf b = {0};
	struct llm_spans sp = {0};
	if (!s || !keep || !ids || !nids)
		return fail(LLM_ERR_ARG, "%s: %s is NULL", fn,
		    !s ? "the sequence" :
			!keep ? "keep" :
			!ids  ? "ids" :
				"nids");
	int rc = need_tokenizer(s->m, fn);
	if (rc)
		return rc;
	if (flags & ~(LLM_CHAT_GENERATION_PROMPT | LLM_CHAT_SPECIAL_IN_CONTENT))
		return fail(LLM_ERR_ARG, "%s: unknown flags %#x", fn, (unsigned)flags);
	if ((rc = render(s->m, cv, (flags & LLM_CHAT_GENERATION_PROMPT) != 0, &b, &sp, fn)))
		goto out;
	/* The longest cached prefix at a cut point whose text starts the
	 * rendering; at least one token must be new, for its logits. */
	size_t k = llm_chat_cache_reuse(&s->cache, b.p, b.len), from;
	size_t (*r)[2] = llm_xreallocarray(NULL, sp.n + 1, sizeof(*r));
	int64_t *v;
	size_t nv;
	for (;;) {
		from = k ? s->cache.end[k - 1] : 0;
		size_t nr = 0;
		for (size_t i = 0; !(flags & LLM_CHAT_SPECIAL_IN_CONTENT) && i < sp.n; i++) {
			size_t lo = sp.r[i][0] > from ? sp.r[i][0] : from, hi = sp.r[i][1];
			if (lo < hi) {
				r[nr][0] = lo - from;
				r[nr][1] = hi - from;
				nr++;
			}
		}
		if ((rc = encode(s->m, b.p + from, b.len - from, 0, (const size_t (*)[2])r, nr, &v, &nv)))
			break;
		if (nv > 0 || k == 0)
			break;
		free(v);
		k = llm_chat_cache_prev_cut(&s->cache, k);
	}
	free(r);
	if (rc)
		goto out;
	llm_buf_free(&s->plan_text);
	s->plan_text = b;
	b = (struct llm_buf){0};
	free(s->plan_ids);
	s->plan_ids = llm_xreallocarray(NULL, nv + 1, sizeof(*v));
	if (nv)
		memcpy(s->plan_ids, v, nv * sizeof(*v));
	s->plan_n = nv;
	s->plan_from = from;
	s->plan_keep = (int64_t)k;
	*keep = (int64_t)k;
	*ids = v;
	*nids = nv;
out:
	llm_buf_free(&b);
	llm_spans_free(&sp);
	return rc;
}

int
llm_seq_chat(struct llm_seq *s, const struct llm_message *msgs, size_t n, int flags, int64_t *keep, int64_t **ids,
    size_t *nids)
{
	return seq_chat(s, &(struct conv){msgs, n, NULL, 0}, flags, keep, ids, nids, "llm_seq_chat");
}

int
llm_seq_chat_json(struct llm_seq *s, const char *json, size_t len, int flags, int64_t *keep, int64_t **ids,
    size_t *nids)
{
	if (!json)
		return fail(LLM_ERR_ARG, "llm_seq_chat_json: json is NULL");
	return seq_chat(s, &(struct conv){NULL, 0, json, len}, flags, keep, ids, nids, "llm_seq_chat_json");
}

int
llm_seq_new(struct llm *m, int64_t context, struct llm_seq **out)
{
	if (!m || !out)
		return fail(LLM_ERR_ARG, "llm_seq_new: %s is NULL", m ? "out" : "the model");
	*out = NULL;
	if (context < 0)
		return fail(LLM_ERR_ARG, "llm_seq_new: context %" PRId64 " is negative", context);
	struct llm_ctx *c = llm_ctx_new(m->rt, context ? context : m->context);
	if (!c)
		return LLM_ERR_CONTEXT;
	struct llm_seq *s = llm_xcalloc(1, sizeof(*s));
	s->m = m;
	s->ctx = c;
	s->plan_keep = -1;
	atomic_fetch_add(&m->nseq, 1);
	*out = s;
	return LLM_OK;
}

void
llm_seq_free(struct llm_seq **sp)
{
	struct llm_seq *s = sp ? *sp : NULL;
	if (!s)
		return;
	*sp = NULL;
	atomic_fetch_sub(&s->m->nseq, 1);
	llm_ctx_free(s->ctx);
	llm_sampler_free(s->sampler);
	free(s->banned);
	free(s->gtext);
	llm_grammar_free(s->grammar);
	llm_grammar_state_free(&s->gst);
	llm_grammar_state_free(&s->gprev);
	free(s->allowed);
	free(s->masked);
	free(s->tokens);
	llm_chat_cache_free(&s->cache);
	llm_buf_free(&s->plan_text);
	free(s->plan_ids);
	free(s);
}

/* The text of tokens ids[n] evaluated at pos into s->cache: those of
 * s's plan as llm_seq_chat encoded them (cut points after the added
 * tokens when their bytes spell the text, and after the last), others as
 * their bytes (cut points after the added tokens and the last: a
 * generated token is one). */
static void
record(struct llm_seq *s, int64_t pos, const int64_t *ids, size_t n)
{
	struct llm *m = s->m;
	struct llm_buf bytes = {0};
	llm_chat_cache_truncate(&s->cache, (size_t)pos);
	if (n == 0)
		return;
	size_t *ends = llm_xreallocarray(NULL, n, sizeof(*ends));
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < n; i++) {
		if (m->src.tok)
			llm_tokenizer_token_bytes(m->src.tok, ids[i], &bytes);
		ends[i] = bytes.len;
	}
	pthread_mutex_unlock(&m->lock);
	const char *text = bytes.p;
	size_t len = bytes.len;
	if (pos == s->plan_keep && n == s->plan_n && memcmp(ids, s->plan_ids, n * sizeof(*ids)) == 0) {
		text = s->plan_text.p + s->plan_from;
		len = s->plan_text.len - s->plan_from;
	}
	int exact = bytes.len == len && (len == 0 || memcmp(bytes.p, text, len) == 0);
	for (size_t i = 0, prev = 0; i < n; i++) {
		int last = i + 1 == n;
		if (exact) {
			llm_chat_cache_push(&s->cache, ids[i], text + prev, ends[i] - prev, last || m->added[ids[i]]);
			prev = ends[i];
		} else
			llm_chat_cache_push(&s->cache, ids[i], text, last ? len : 0, last);
	}
	s->plan_keep = -1;
	free(ends);
	llm_buf_free(&bytes);
}

int
llm_seq_eval(struct llm_seq *s, const int64_t *ids, size_t n)
{
	if (!s || (!ids && n))
		return fail(LLM_ERR_ARG, "llm_seq_eval: %s is NULL", s ? "ids" : "the sequence");
	if (n == 0)
		return LLM_OK;
	int64_t vocab = llm_runtime_vocab(s->m->rt), pos = llm_ctx_pos(s->ctx);
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= vocab)
			return fail(LLM_ERR_TOKEN,
			    "llm_seq_eval: token id %" PRId64 " is out of range [0, %" PRId64 ")", ids[i], vocab);
	if ((int64_t)n > llm_ctx_context(s->ctx) - pos)
		return fail(LLM_ERR_CONTEXT,
		    "llm_seq_eval: %zu more tokens do not fit in the context: %" PRId64 " of %" PRId64
		    " positions used",
		    n, pos, llm_ctx_context(s->ctx));
	int rc = n == 1 && pos > 0 ? llm_ctx_decode(s->ctx, ids[0]) : llm_ctx_prefill(s->ctx, ids, (int64_t)n);
	if (rc < 0) {
		/* a phase missing: what was computed is kept, not the rest */
		s->logits = 0;
		llm_ctx_rewind(s->ctx, pos);
		return LLM_ERR_FORMAT;
	}
	if ((size_t)pos + n > s->cap) {
		s->cap = ((size_t)pos + n) * 2;
		s->tokens = llm_xreallocarray(s->tokens, s->cap, sizeof(*s->tokens));
	}
	memcpy(s->tokens + pos, ids, n * sizeof(*ids));
	s->logits = 1;
	record(s, pos, ids, n);
	return LLM_OK;
}

const float *
llm_seq_logits(const struct llm_seq *s)
{
	return s && s->logits ? llm_ctx_logits(s->ctx) : NULL;
}

int64_t
llm_seq_pos(const struct llm_seq *s)
{
	return s ? llm_ctx_pos(s->ctx) : -1;
}

int64_t
llm_seq_context(const struct llm_seq *s)
{
	return s ? llm_ctx_context(s->ctx) : -1;
}

const int64_t *
llm_seq_tokens(const struct llm_seq *s)
{
	return s ? s->tokens : NULL;
}

int
llm_seq_rewind(struct llm_seq *s, int64_t pos)
{
	if (!s)
		return fail(LLM_ERR_ARG, "llm_seq_rewind: the sequence is NULL");
	if (pos == llm_ctx_pos(s->ctx))
		return LLM_OK;
	if (llm_ctx_rewind(s->ctx, pos) < 0)
		return fail(LLM_ERR_ARG, "llm_seq_rewind: %s", llm_errmsg());
	llm_chat_cache_truncate(&s->cache, (size_t)pos);
	s->logits = 0;
	return LLM_OK;
}

/* Embeddings: the rows of the phase embed (llm_ctx_embed), pooled in
 * double. */
struct pool {
	int pooling;
	int64_t d;
	double *acc; /* d: the rows' sum (mean), or the last row */
};

static void
pool_rows(void *arg, const float *h, int64_t k)
{
	struct pool *p = arg;
	if (p->pooling == LLM_POOL_LAST) {
		for (int64_t j = 0; j < p->d; j++)
			p->acc[j] = h[(k - 1) * p->d + j];
		return;
	}
	for (int64_t r = 0; r < k; r++)
		for (int64_t j = 0; j < p->d; j++)
			p->acc[j] += h[r * p->d + j];
}

int64_t
llm_embed_dim(const struct llm *m)
{
	return m ? llm_runtime_hidden_size(m->rt) : -1;
}

int
llm_embed(struct llm *m, const int64_t *ids, size_t n, int pooling, int normalize, float **out, size_t *dim)
{
	if (!m || !ids || !out || !dim)
		return fail(LLM_ERR_ARG, "llm_embed: %s is NULL",
		    !m ? "the model" :
			!ids ? "ids" :
			!out ? "out" :
			       "dim");
	if (n == 0)
		return fail(LLM_ERR_ARG, "llm_embed: no tokens");
	if (pooling != LLM_POOL_LAST && pooling != LLM_POOL_MEAN)
		return fail(LLM_ERR_ARG, "llm_embed: pooling %d is neither LLM_POOL_LAST nor LLM_POOL_MEAN", pooling);
	if (!llm_runtime_has_phase(m->rt, LLM_PH_EMBED))
		return fail(LLM_ERR_UNSUPPORTED,
		    "%s: no phase 'embed': the model was compiled before embeddings existed; compile it again",
		    llm_runtime_bundle(m->rt)->path);
	int64_t vocab = llm_runtime_vocab(m->rt), limit = llm_context_limit(m);
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= vocab)
			return fail(LLM_ERR_TOKEN, "llm_embed: token id %" PRId64 " is out of range [0, %" PRId64 ")",
			    ids[i], vocab);
	if (n > (size_t)limit)
		return fail(LLM_ERR_CONTEXT, "llm_embed: %zu tokens exceed the model's context limit, %" PRId64, n,
		    limit);
	struct llm_ctx *c = llm_ctx_new(m->rt, (int64_t)n);
	if (!c)
		return LLM_ERR_CONTEXT;
	atomic_fetch_add(&m->nseq, 1); /* llm_close waits for it as for a sequence */
	struct pool p = {pooling, llm_runtime_hidden_size(m->rt), NULL};
	p.acc = llm_xcalloc((size_t)p.d, sizeof(double));
	int rc = llm_ctx_embed(c, ids, (int64_t)n, pool_rows, &p);
	llm_ctx_free(c);
	atomic_fetch_sub(&m->nseq, 1);
	if (rc < 0) {
		free(p.acc);
		return LLM_ERR_FORMAT;
	}
	double scale = pooling == LLM_POOL_MEAN ? 1.0 / (double)n : 1.0;
	if (normalize) {
		double ss = 0;
		for (int64_t j = 0; j < p.d; j++)
			ss += p.acc[j] * p.acc[j];
		if (ss > 0)
			scale = 1.0 / sqrt(ss);
	}
	float *v = llm_xreallocarray(NULL, (size_t)p.d, sizeof(float));
	for (int64_t j = 0; j < p.d; j++)
		v[j] = (float)(p.acc[j] * scale);
	free(p.acc);
	*out = v;
	*dim = (size_t)p.d;
	return LLM_OK;
}

/* The state file: a header of 8-byte fields, the tokens, the logits, the
 * KV entries (llm_ctx_write_kv). */
#define STATE_MAGIC "LLMSEQ01"
enum { H_MAGIC, H_FINGERPRINT, H_VOCAB, H_POS, H_CONTEXT, H_KVDIM, H_COUNT };

static uint64_t
kv_dim(const struct llm *m)
{
	const struct llm_model *mm = llm_runtime_model(m->rt);
	return (uint64_t)mm->cfg.n_layers << 48 | (uint64_t)mm->cfg.n_kv_heads << 32 | (uint64_t)mm->cfg.head_dim << 8 |
	    llm_dtype_size(mm->kv_dtype);
}

int
llm_seq_save(const struct llm_seq *s, const char *path)
{
	if (!s || !path)
		return fail(LLM_ERR_ARG, "llm_seq_save: %s is NULL", s ? "path" : "the sequence");
	if (!s->logits)
		return fail(LLM_ERR_ARG,
		    "llm_seq_save: %s: the sequence has no logits (nothing evaluated since its start "
		    "or a rewind)",
		    path);
	if (llm_model_ranks(llm_runtime_model(s->m->rt)) > 1)
		return fail(LLM_ERR_ARG,
		    "llm_seq_save: %s: the KV cache of a model split over MPI ranks is spread over them", path);
	struct llm_out o;
	if (llm_out_open(&o, path) < 0)
		return LLM_ERR_IO;
	uint64_t h[H_COUNT];
	memcpy(&h[H_MAGIC], STATE_MAGIC, 8);
	h[H_FINGERPRINT] = llm_runtime_fingerprint(s->m->rt);
	h[H_VOCAB] = (uint64_t)llm_runtime_vocab(s->m->rt);
	h[H_POS] = (uint64_t)llm_ctx_pos(s->ctx);
	h[H_CONTEXT] = (uint64_t)llm_ctx_context(s->ctx);
	h[H_KVDIM] = kv_dim(s->m);
	size_t pos = (size_t)h[H_POS], v = (size_t)h[H_VOCAB];
	if (fwrite(h, sizeof(h), 1, o.fp) != 1 || fwrite(s->tokens, sizeof(int64_t), pos, o.fp) != pos ||
	    fwrite(llm_ctx_logits(s->ctx), sizeof(float), v, o.fp) != v || llm_ctx_write_kv(s->ctx, o.fp) < 0) {
		int e = errno;
		llm_out_abort(&o);
		return fail(LLM_ERR_IO, "%s: %s", path, strerror(e));
	}
	return llm_out_commit(&o) < 0 ? LLM_ERR_IO : LLM_OK;
}

int
llm_seq_load(struct llm_seq *s, const char *path)
{
	if (!s || !path)
		return fail(LLM_ERR_ARG, "llm_seq_load: %s is NULL", s ? "path" : "the sequence");
	if (llm_model_ranks(llm_runtime_model(s->m->rt)) > 1)
		return fail(LLM_ERR_ARG,
		    "llm_seq_load: %s: the KV cache of a model split over MPI ranks is spread over them", path);
	FILE *f = fopen(path, "rb");
	if (!f)
		return fail(LLM_ERR_IO, "%s: %s", path, strerror(errno));
	uint64_t h[H_COUNT];
	int rc = LLM_OK;
	int64_t vocab = llm_runtime_vocab(s->m->rt);
	if (fread(h, sizeof(h), 1, f) != 1 || memcmp(&h[H_MAGIC], STATE_MAGIC, 8) != 0)
		rc = fail(LLM_ERR_FORMAT, "%s: not a sequence state (llm_seq_save)", path);
	else if (h[H_FINGERPRINT] != llm_runtime_fingerprint(s->m->rt) || h[H_VOCAB] != (uint64_t)vocab ||
	    h[H_KVDIM] != kv_dim(s->m))
		rc = fail(LLM_ERR_FORMAT, "%s: the state of another model or plan", path);
	else if (h[H_CONTEXT] > (uint64_t)llm_runtime_model(s->m->rt)->max_context || h[H_POS] > h[H_CONTEXT])
		rc = fail(LLM_ERR_FORMAT,
		    "%s: %" PRIu64 " positions of a context of %" PRIu64 ": not one of this model", path, h[H_POS],
		    h[H_CONTEXT]);
	if (rc) {
		fclose(f);
		return rc;
	}
	int64_t pos = (int64_t)h[H_POS];
	int64_t *tokens = llm_xreallocarray(NULL, (size_t)pos + 1, sizeof(*tokens));
	float *logits = llm_xreallocarray(NULL, (size_t)vocab, sizeof(*logits));
	if (fread(tokens, sizeof(*tokens), (size_t)pos, f) != (size_t)pos ||
	    fread(logits, sizeof(*logits), (size_t)vocab, f) != (size_t)vocab)
		rc = fail(LLM_ERR_FORMAT, "%s: truncated", path);
	for (int64_t i = 0; rc == LLM_OK && i < pos; i++)
		if (tokens[i] < 0 || tokens[i] >= vocab)
			rc = fail(LLM_ERR_FORMAT, "%s: token %" PRId64 " is out of the vocabulary", path, i);
	if (rc == LLM_OK && (int64_t)h[H_CONTEXT] != llm_ctx_context(s->ctx) &&
	    llm_ctx_set_context(s->ctx, (int64_t)h[H_CONTEXT]) < 0)
		rc = LLM_ERR_CONTEXT;
	if (rc == LLM_OK && llm_ctx_read_kv(s->ctx, pos, logits, f) < 0) {
		rc = fail(LLM_ERR_FORMAT, "%s: %s", path, llm_errmsg());
		llm_ctx_rewind(s->ctx, 0);
		s->logits = 0;
	}
	if (rc == LLM_OK && getc(f) != EOF) {
		rc = fail(LLM_ERR_FORMAT, "%s: bytes after the state", path);
		llm_ctx_rewind(s->ctx, 0);
		s->logits = 0;
	}
	fclose(f);
	if (rc == LLM_OK) {
		free(s->tokens);
		s->tokens = tokens;
		s->cap = (size_t)pos + 1;
		s->logits = 1;
		s->plan_keep = -1;
		record(s, 0, tokens, (size_t)pos);
	} else
		free(tokens);
	free(logits);
	return rc;
}

/* Whether p is s's sampling: the fields before grammar bit for bit, the
 * grammar by its text. */
static int
same_sampling(const struct llm_seq *s, const struct llm_sampling *p)
{
	if (memcmp(&s->sp, p, offsetof(struct llm_sampling, grammar)) != 0)
		return 0;
	if (!p->grammar || !s->gtext)
		return !p->grammar && !s->gtext;
	return strcmp(p->grammar, s->gtext) == 0;
}

/* The model's tokens as text for grammars, made once. */
static const struct llm_grammar_vocab *
grammar_vocab(struct llm *m)
{
	pthread_mutex_lock(&m->lock);
	if (!m->gvocab) {
		size_t v = (size_t)llm_runtime_vocab(m->rt);
		struct llm_buf b = {0};
		size_t *off = llm_xcalloc(v + 1, sizeof(*off)), *lens = llm_xcalloc(v, sizeof(*lens));
		const char **ptrs = llm_xcalloc(v, sizeof(*ptrs));
		for (size_t i = 0; i < v; i++) {
			off[i] = b.len;
			if (!llm_tokenizer_is_special(m->src.tok, (int64_t)i))
				llm_tokenizer_token_bytes(m->src.tok, (int64_t)i, &b);
			lens[i] = b.len - off[i];
		}
		for (size_t i = 0; i < v; i++)
			ptrs[i] = lens[i] ? b.p + off[i] : NULL;
		m->gvocab = llm_grammar_vocab_new(v, ptrs, lens);
		llm_buf_free(&b);
		free(off);
		free(lens);
		free(ptrs);
	}
	pthread_mutex_unlock(&m->lock);
	return m->gvocab;
}

/* 1 if the grammar allows token id at st (an end token where the text is
 * whole); st advanced then when adv.  -1: the grammar is too ambiguous
 * to follow (llm_errmsg). */
static int
grammar_allows(struct llm_seq *s, const struct llm_grammar_vocab *v, int64_t id, int adv)
{
	size_t len;
	if (llm_token_is_eos(s->m, id))
		return llm_grammar_complete(&s->gst);
	const char *t = llm_grammar_vocab_token(v, (size_t)id, &len);
	if (!t)
		return 0;
	if (adv)
		return llm_grammar_accept(s->grammar, &s->gst, t, len);
	struct llm_grammar_state tmp = {0};
	llm_grammar_state_copy(&tmp, &s->gst);
	int ok = llm_grammar_accept(s->grammar, &tmp, t, len);
	llm_grammar_state_free(&tmp);
	return ok;
}

/* The draw under the grammar: the token drawn from the logits if the
 * grammar allows it, else one drawn from the logits of those it allows
 * (llama.cpp's order: most draws need no mask); an end token where
 * nothing else can follow.  The state then takes the token. */
static int
sample_grammar(struct llm_seq *s, const struct llm_sampling *p, const float *logits, int64_t *id)
{
	const struct llm_model *mm = llm_runtime_model(s->m->rt);
	int64_t v = llm_runtime_vocab(s->m->rt), pos = llm_ctx_pos(s->ctx);
	const struct llm_grammar_vocab *gv = grammar_vocab(s->m);
	/* where the grammar is: going on after the last draw, at it again, or afresh */
	if (s->gpos >= 0 && pos == s->gpos)
		llm_grammar_state_copy(&s->gst, &s->gprev);
	else if (!(s->gpos >= 0 && pos == s->gpos + 1 && s->tokens[pos - 1] == s->glast) &&
	    llm_grammar_start(s->grammar, &s->gst) < 0)
		return fail(LLM_ERR_ARG, "llm_seq_sample: %s", llm_errmsg());
	llm_grammar_state_copy(&s->gprev, &s->gst);
	int64_t end = mm->n_eos > 0 ? mm->eos_ids[0] : s->m->eot;
	int64_t t = -1;
	if (llm_grammar_done(&s->gst)) {
		if (end < 0 || end >= v)
			return fail(LLM_ERR_ARG,
			    "llm_seq_sample: the grammar is complete and the model has no end token");
		t = end;
	} else {
		t = llm_sampler_sample(s->sampler, logits, s->tokens, (size_t)pos);
		int ok = grammar_allows(s, gv, t, 0);
		if (ok < 0)
			return fail(LLM_ERR_ARG, "llm_seq_sample: %s", llm_errmsg());
		if (!ok) {
			if (!s->allowed) {
				s->allowed = llm_xmalloc((size_t)v);
				s->masked = llm_xmalloc((size_t)v * sizeof(*s->masked));
			}
			int64_t n = llm_grammar_mask(s->grammar, &s->gst, gv, s->allowed);
			if (n < 0)
				return fail(LLM_ERR_ARG, "llm_seq_sample: %s", llm_errmsg());
			int complete = llm_grammar_complete(&s->gst);
			for (int64_t i = 0; i < v; i++)
				s->masked[i] = s->allowed[i] || (complete && llm_token_is_eos(s->m, i)) ? logits[i] :
													  -INFINITY;
			int any = n > 0;
			for (int64_t i = 0; !any && i < v; i++)
				any = s->masked[i] != -INFINITY;
			if (!any) {
				if (!complete || end < 0 || end >= v)
					return fail(LLM_ERR_ARG,
					    "llm_seq_sample: the grammar allows no token of the "
					    "vocabulary here");
				t = end; /* ignore_eos banned it: the grammar wins */
			} else {
				t = llm_sampler_sample(s->sampler, s->masked, s->tokens, (size_t)pos);
			}
		}
	}
	int ok = llm_token_is_eos(s->m, t) ? 1 : grammar_allows(s, gv, t, 1);
	if (ok < 0)
		return fail(LLM_ERR_ARG, "llm_seq_sample: %s", llm_errmsg());
	if (!ok)
		return fail(LLM_ERR_ARG, "llm_seq_sample: the grammar refused the token drawn under its mask");
	s->gpos = pos;
	s->glast = t;
	*id = t;
	return LLM_OK;
}

int
llm_seq_sample(struct llm_seq *s, const struct llm_sampling *p, int64_t *id)
{
	if (!s || !p || !id)
		return fail(LLM_ERR_ARG, "llm_seq_sample: %s is NULL", !s ? "the sequence" : !p ? "p" : "id");
	if (!s->logits)
		return fail(LLM_ERR_ARG, "llm_seq_sample: no logits (nothing evaluated since the start or a rewind)");
	if (!s->sampler || !same_sampling(s, p)) {
		struct llm_sampler_params sp = {p->temperature, p->top_k, p->top_p, p->min_p, p->repeat_penalty,
			p->repeat_last_n, p->seed, p->presence_penalty, p->frequency_penalty};
		if (p->ignore_eos != 0 && p->ignore_eos != 1)
			return fail(LLM_ERR_ARG, "llm_seq_sample: ignore_eos %" PRId64 " is neither 0 nor 1",
			    p->ignore_eos);
		struct llm_grammar *g = NULL;
		if (p->grammar) {
			int rc = need_tokenizer(s->m, "llm_seq_sample");
			if (rc)
				return rc;
			if (!(g = llm_grammar_parse(p->grammar, strlen(p->grammar))))
				return fail(LLM_ERR_ARG, "llm_seq_sample: grammar: %s", llm_errmsg());
		}
		struct llm_sampler *n = llm_sampler_new(&sp, llm_runtime_vocab(s->m->rt));
		if (!n) {
			llm_grammar_free(g);
			return fail(LLM_ERR_ARG, "llm_seq_sample: %s", llm_errmsg());
		}
		llm_sampler_free(s->sampler);
		s->sampler = n;
		s->sp = *p;
		llm_grammar_free(s->grammar);
		free(s->gtext);
		s->grammar = g;
		s->gtext = p->grammar ? llm_xstrdup(p->grammar) : NULL;
		s->sp.grammar = s->gtext;
		s->gpos = -1;
	}
	const float *logits = llm_ctx_logits(s->ctx);
	if (p->ignore_eos) {
		/* llama-cli's --ignore-eos: the end tokens' logits -inf */
		const struct llm_model *mm = llm_runtime_model(s->m->rt);
		int64_t v = llm_runtime_vocab(s->m->rt);
		if (!s->banned)
			s->banned = llm_xmalloc((size_t)v * sizeof(*s->banned));
		memcpy(s->banned, logits, (size_t)v * sizeof(*s->banned));
		for (int i = 0; i < mm->n_eos; i++)
			if (mm->eos_ids[i] >= 0 && mm->eos_ids[i] < v)
				s->banned[mm->eos_ids[i]] = -INFINITY;
		if (s->m->eot >= 0 && s->m->eot < v)
			s->banned[s->m->eot] = -INFINITY;
		logits = s->banned;
	}
	if (s->grammar)
		return sample_grammar(s, p, logits, id);
	*id = llm_sampler_sample(s->sampler, logits, s->tokens, (size_t)llm_ctx_pos(s->ctx));
	return LLM_OK;
}

int
llm_seq_reseed(struct llm_seq *s)
{
	if (!s)
		return fail(LLM_ERR_ARG, "llm_seq_reseed: the sequence is NULL");
	/* the next llm_seq_sample makes a new sampler (and grammar state) from its p */
	llm_sampler_free(s->sampler);
	s->sampler = NULL;
	return LLM_OK;
}

int
llm_grammar_check(const char *grammar)
{
	if (!grammar)
		return fail(LLM_ERR_ARG, "llm_grammar_check: grammar is NULL");
	struct llm_grammar *g = llm_grammar_parse(grammar, strlen(grammar));
	if (!g)
		return fail(LLM_ERR_ARG, "%s", llm_errmsg());
	llm_grammar_free(g);
	return LLM_OK;
}

int
llm_json_schema_to_grammar(const char *schema, size_t len, char **grammar)
{
	if (!schema || !grammar)
		return fail(LLM_ERR_ARG, "llm_json_schema_to_grammar: %s is NULL", schema ? "grammar" : "schema");
	char *g = llm_json_schema_grammar(schema, len);
	if (!g)
		return fail(LLM_ERR_ARG, "%s", llm_errmsg());
	*grammar = g;
	return LLM_OK;
}
