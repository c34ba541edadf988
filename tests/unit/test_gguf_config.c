/* Unit tests for lib/formats/gguf_config.c and lib/text/gguf_tokenizer.c on GGUF files
 * built here in memory: the hyperparameters and their defaults, the SentencePiece merges derived from
 * scores in transformers' order (ties included, which the trained fixture
 * does not have), the tokenizer.json and tokenizer_config.json written, and
 * the refusals. */
#include <math.h>

#include "../../lib/formats/gguf_config.h"
#include "../../lib/text/gguf_tokenizer.h"
#include "../../lib/base/json.h"
#include "t.h"

enum { U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STR = 8, ARR = 9 };

/* A GGUF file under construction: metadata entries, then at most one
 * tensor (token_embd.weight, F32 [rows, cols]). */
struct g {
	struct llm_buf kv;
	uint64_t nkv;
	int64_t rows, cols;
};

static void
le(struct llm_buf *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		uint8_t c = (uint8_t)(v >> (8 * i));
		llm_buf_add(b, &c, 1);
	}
}

static void
str(struct llm_buf *b, const char *s)
{
	le(b, strlen(s), 8);
	llm_buf_add(b, s, strlen(s));
}

static void
key(struct g *g, const char *k, uint32_t type)
{
	str(&g->kv, k);
	le(&g->kv, type, 4);
	g->nkv++;
}

static void
kv_u32(struct g *g, const char *k, uint32_t v)
{
	key(g, k, U32);
	le(&g->kv, v, 4);
}

static void
kv_f32(struct g *g, const char *k, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	key(g, k, F32);
	le(&g->kv, u, 4);
}

static void
kv_str(struct g *g, const char *k, const char *v)
{
	key(g, k, STR);
	str(&g->kv, v);
}

static void
kv_bool(struct g *g, const char *k, int v)
{
	key(g, k, BOOL);
	le(&g->kv, (uint64_t)v, 1);
}

static void
kv_strs(struct g *g, const char *k, const char *const *v, size_t n)
{
	key(g, k, ARR);
	le(&g->kv, STR, 4);
	le(&g->kv, n, 8);
	for (size_t i = 0; i < n; i++)
		str(&g->kv, v[i]);
}

static void
kv_f32s(struct g *g, const char *k, const float *v, size_t n)
{
	key(g, k, ARR);
	le(&g->kv, F32, 4);
	le(&g->kv, n, 8);
	for (size_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &v[i], 4);
		le(&g->kv, u, 4);
	}
}

static void
kv_i32s(struct g *g, const char *k, const int32_t *v, size_t n)
{
	key(g, k, ARR);
	le(&g->kv, I32, 4);
	le(&g->kv, n, 8);
	for (size_t i = 0; i < n; i++)
		le(&g->kv, (uint32_t)v[i], 4);
}

/* The file's bytes (in *out) and the opened reader. */
static int
open_g(struct g *g, struct llm_buf *out, struct llm_gguf *r)
{
	int nt = g->rows > 0;
	llm_buf_add(out, "GGUF", 4);
	le(out, 3, 4);
	le(out, (uint64_t)nt, 8);
	le(out, g->nkv, 8);
	llm_buf_add(out, g->kv.p, g->kv.len);
	if (nt) {
		str(out, "token_embd.weight");
		le(out, 2, 4);
		le(out, (uint64_t)g->cols, 8);
		le(out, (uint64_t)g->rows, 8);
		le(out, 0, 4);
		le(out, 0, 8);
	}
	while (out->len % 32)
		le(out, 0, 1);
	for (int64_t i = 0; nt && i < g->rows * g->cols; i++)
		le(out, 0, 4);
	return llm_gguf_open_mem(r, out->p, out->len, "t.gguf");
}

/* A llama model's required keys. */
static void
llama_keys(struct g *g)
{
	kv_str(g, "general.architecture", "llama");
	kv_u32(g, "llama.block_count", 2);
	kv_u32(g, "llama.embedding_length", 8);
	kv_u32(g, "llama.feed_forward_length", 12);
	kv_u32(g, "llama.attention.head_count", 2);
	kv_u32(g, "llama.context_length", 64);
	kv_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
	g->rows = 16;
	g->cols = 8;
}

T_TEST(config_from_metadata_with_defaults)
{
	struct g g = {0};
	struct llm_buf b = {0};
	struct llm_gguf r;
	struct llm_hfconfig c;

	llama_keys(&g);
	kv_u32(&g, "tokenizer.ggml.bos_token_id", 1);
	kv_u32(&g, "tokenizer.ggml.eos_token_id", 2);
	kv_u32(&g, "tokenizer.ggml.eot_token_id", 3);
	kv_u32(&g, "tokenizer.ggml.padding_token_id", 0xffffffffu);
	T_CHECK(open_g(&g, &b, &r) == 0);
	T_CHECKF(llm_gguf_config(&c, &r) == 0, "%s", llm_errmsg());
	T_CHECK(c.family == LLM_FAMILY_LLAMA && strcmp(c.architecture, "LlamaForCausalLM") == 0);
	T_CHECK(c.n_layers == 2 && c.hidden_size == 8 && c.intermediate_size == 12);
	T_CHECK(c.n_heads == 2 && c.n_kv_heads == 2 && c.head_dim == 4); /* defaults */
	T_CHECK(c.vocab_size == 16 && c.max_position_embeddings == 64);
	T_CHECK(c.rms_norm_eps == 1e-5);  /* the f32 read back as its shortest decimal */
	T_CHECK(c.rope_theta == 10000.0); /* default */
	T_CHECK(c.tie_word_embeddings && !c.attention_bias);
	T_CHECK(c.bos_id == 1 && c.n_eos == 2 && c.eos_ids[0] == 2 && c.eos_ids[1] == 3);
	llm_gguf_close(&r);
	llm_buf_free(&b);
	llm_buf_free(&g.kv);
}

/* One llama file with an extra key; llm_gguf_config must fail saying msg. */
static int
config_fails(void (*extra)(struct g *), const char *msg)
{
	struct g g = {0};
	struct llm_buf b = {0};
	struct llm_gguf r;
	struct llm_hfconfig c;
	int ok;

	llama_keys(&g);
	extra(&g);
	if (open_g(&g, &b, &r) < 0) {
		fprintf(stderr, "open: %s\n", llm_errmsg());
		return 0;
	}
	ok = llm_gguf_config(&c, &r) < 0 && strcmp(llm_errmsg(), msg) == 0;
	if (!ok)
		fprintf(stderr, "got: %s\nwant: %s\n", llm_errmsg(), msg);
	llm_gguf_close(&r);
	llm_buf_free(&b);
	llm_buf_free(&g.kv);
	return ok;
}

static void
x_arch(struct g *g)
{
	g->kv.len = 0;
	g->nkv = 0;
	kv_str(g, "general.architecture", "mamba");
}
static void
x_heads(struct g *g)
{
	kv_u32(g, "llama.attention.head_count_kv", 3);
}
static void
x_bos(struct g *g)
{
	kv_u32(g, "tokenizer.ggml.bos_token_id", 16);
}
static void
x_experts(struct g *g)
{
	kv_u32(g, "llama.expert_count", 8);
}
static void
x_embd(struct g *g)
{
	g->cols = 4;
}
static void
x_zero(struct g *g)
{
	kv_u32(g, "llama.rope.dimension_count", 0);
}

T_TEST(config_refusals)
{
	T_CHECK(config_fails(x_arch,
	    "t.gguf: unsupported architecture 'mamba' (supported: qwen2, llama, qwen3, phi3, gemma3)"));
	T_CHECK(config_fails(x_heads,
	    "t.gguf: key 'llama.attention.head_count' 2 is not a multiple of "
	    "'llama.attention.head_count_kv' 3"));
	T_CHECK(config_fails(x_bos,
	    "t.gguf: key 'tokenizer.ggml.bos_token_id': token id 16 is outside the "
	    "vocabulary of 16 tokens"));
	T_CHECK(config_fails(x_experts,
	    "t.gguf: key 'llama.expert_count': mixture-of-experts models are not "
	    "supported"));
	T_CHECK(config_fails(x_embd,
	    "t.gguf: tensor 'token_embd.weight' is not [vocab, 8] "
	    "('llama.embedding_length')"));
	T_CHECK(config_fails(x_zero,
	    "t.gguf: key 'llama.rope.dimension_count': 0 is out of range (1 to "
	    "16777216)"));
}

/* A SentencePiece vocabulary with tied scores. */
static const char *const spm_tokens[] = {
	"<unk>", "<s>", "</s>", "a", "b", "c", "ab", "bc", "abc", "\xe2\x96\x81", "\xe2\x96\x81" "a",
	"<0x41>",
};
static const float spm_scores[] = {0, 0, 0, -5, -6, -7, -1, -1, -2, -8, -1, 0};
static const int32_t spm_types[] = {2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6};

static int
spm_open(struct g *g, struct llm_buf *b, struct llm_gguf *r, struct llm_gguf_tokenizer *t)
{
	size_t n = LLM_NELEM(spm_tokens);
	kv_str(g, "tokenizer.ggml.model", "llama");
	kv_strs(g, "tokenizer.ggml.tokens", spm_tokens, n);
	kv_f32s(g, "tokenizer.ggml.scores", spm_scores, n);
	kv_i32s(g, "tokenizer.ggml.token_type", spm_types, n);
	kv_u32(g, "tokenizer.ggml.unknown_token_id", 0);
	kv_u32(g, "tokenizer.ggml.bos_token_id", 1);
	kv_u32(g, "tokenizer.ggml.eos_token_id", 2);
	kv_bool(g, "tokenizer.ggml.add_eos_token", 1);
	if (open_g(g, b, r) < 0)
		return -1;
	return llm_gguf_tokenizer_load(t, r);
}

T_TEST(spm_merges_in_transformers_order)
{
	struct g g = {0};
	struct llm_buf b = {0};
	struct llm_gguf r;
	struct llm_gguf_tokenizer t;

	T_CHECKF(spm_open(&g, &b, &r, &t) == 0, "%s", llm_errmsg());
	json_t *j = llm_gguf_tokenizer_json(&t);
	char *m = json_dumps(json_object_get(json_object_get(j, "model"), "merges"), JSON_COMPACT);
	/* score -1: a+b, b+c, \u2581+a in token order; score -2: "abc" as
	 * ab+c (longer left part) before a+bc */
	T_CHECKF(strcmp(m, "[[\"a\",\"b\"],[\"b\",\"c\"],[\"\xe2\x96\x81\",\"a\"],[\"ab\",\"c\"],[\"a\",\"bc\"]]") == 0,
	    "%s", m);
	free(m);
	json_t *md = json_object_get(j, "model");
	T_CHECK(json_is_true(json_object_get(md, "byte_fallback")) && json_is_true(json_object_get(md, "fuse_unk")));
	T_CHECK(strcmp(json_string_value(json_object_get(md, "unk_token")), "<unk>") == 0);
	T_CHECK(json_array_size(json_object_get(j, "added_tokens")) == 2); /* <s>, </s> */
	/* BOS and EOS both added: TemplateProcessing <s> A </s> */
	char *pp = json_dumps(json_object_get(json_object_get(j, "post_processor"), "single"), JSON_COMPACT);
	T_CHECKF(strcmp(pp,
		     "[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\","
		     "\"type_id\":0}},{\"SpecialToken\":{\"id\":\"</s>\",\"type_id\":0}}]") == 0,
	    "%s", pp);
	free(pp);

	/* The written tokenizer.json (Hugging Face's ranks) and the tokenizer
	 * built from the arrays (SentencePiece's and llama.cpp's rule: the
	 * best score, leftmost among equals) agree where no tie decides ... */
	char *text = json_dumps(j, 0);
	struct llm_tokenizer *a = llm_tokenizer_load_json(text, strlen(text), "t.json");
	struct llm_tokenizer *bt = llm_tokenizer_build(&t.v, "t.gguf");
	T_CHECKF(a && bt, "%s", llm_errmsg());
	static const struct {
		const char *text;
		int64_t ids[6];
		size_t n;
	} cases[] = {
		{"cab", {1, 9, 5, 6, 2}, 5},     /* \u2581 c ab */
		{"A b", {1, 9, 11, 9, 4, 2}, 6}, /* byte fallback <0x41> */
		{"<s>bc", {1, 1, 9, 7, 2}, 5},   /* an added token, then \u2581 bc */
	};
	for (size_t i = 0; i < LLM_NELEM(cases); i++) {
		int64_t *x = NULL, *y = NULL;
		size_t nx = 0, ny = 0;
		T_CHECK(llm_tokenizer_encode(a, cases[i].text, strlen(cases[i].text), 1, &x, &nx) == 0);
		T_CHECK(llm_tokenizer_encode(bt, cases[i].text, strlen(cases[i].text), 1, &y, &ny) == 0);
		T_CHECKF(nx == cases[i].n && memcmp(x, cases[i].ids, nx * sizeof(*x)) == 0, "'%s'", cases[i].text);
		T_CHECKF(ny == nx && memcmp(x, y, nx * sizeof(*x)) == 0, "'%s'", cases[i].text);
		free(x);
		free(y);
	}
	/* ... and differ where one does: in "\u2581abc" the pairs \u2581+a,
	 * a+b, b+c all score -1.  Hugging Face ranks a+b first (a+b, b+c,
	 * \u2581+a by token order) and then ab+c: \u2581 abc.  SentencePiece
	 * merges the leftmost, \u2581+a, then b+c: \u2581a bc. */
	int64_t *x = NULL, *y = NULL;
	size_t nx = 0, ny = 0;
	T_CHECK(llm_tokenizer_encode(a, "abc", 3, 1, &x, &nx) == 0);
	T_CHECK(llm_tokenizer_encode(bt, "abc", 3, 1, &y, &ny) == 0);
	T_CHECKF(nx == 4 && x[0] == 1 && x[1] == 9 && x[2] == 8 && x[3] == 2, "%zu ids", nx);
	T_CHECKF(ny == 4 && y[0] == 1 && y[1] == 10 && y[2] == 7 && y[3] == 2, "%zu ids", ny);
	free(x);
	free(y);
	llm_tokenizer_free(a);
	llm_tokenizer_free(bt);
	free(text);

	json_t *c = llm_gguf_tokenizer_config(&t);
	char *cs = json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
	T_CHECKF(strcmp(cs,
		     "{\"add_bos_token\":true,\"add_eos_token\":true,\"bos_token\":\"<s>\",\"eos_token\":"
		     "\"</s>\",\"unk_token\":\"<unk>\",\"pad_token\":null,\"clean_up_tokenization_spaces\":false,"
		     "\"tokenizer_class\":\"PreTrainedTokenizerFast\"}") == 0,
	    "%s", cs);
	free(cs);
	json_decref(c);
	json_decref(j);
	llm_gguf_tokenizer_free(&t);
	llm_gguf_close(&r);
	llm_buf_free(&b);
	llm_buf_free(&g.kv);
}

/* A tokenizer whose load must fail with msg. */
static int
tok_fails(void (*fill)(struct g *), const char *msg)
{
	struct g g = {0};
	struct llm_buf b = {0};
	struct llm_gguf r;
	struct llm_gguf_tokenizer t;
	int ok;

	fill(&g);
	if (open_g(&g, &b, &r) < 0) {
		fprintf(stderr, "open: %s\n", llm_errmsg());
		return 0;
	}
	ok = llm_gguf_tokenizer_load(&t, &r) < 0 && strcmp(llm_errmsg(), msg) == 0;
	if (!ok)
		fprintf(stderr, "got: %s\nwant: %s\n", llm_errmsg(), msg);
	llm_gguf_close(&r);
	llm_buf_free(&b);
	llm_buf_free(&g.kv);
	return ok;
}

static const char *const bpe_tokens[] = {"a", "b", "ab", "\xc4\xa0"};

static void
t_badutf8(struct g *g)
{
	static const char *const toks[] = {"a", "\xff"};
	kv_str(g, "tokenizer.ggml.model", "llama");
	kv_strs(g, "tokenizer.ggml.tokens", toks, 2);
}

static void
t_noscores(struct g *g)
{
	kv_str(g, "tokenizer.ggml.model", "llama");
	kv_strs(g, "tokenizer.ggml.tokens", bpe_tokens, 4);
}

static void
t_badmerge(struct g *g)
{
	static const char *const merges[] = {"a b", "b a"};
	kv_str(g, "tokenizer.ggml.model", "gpt2");
	kv_str(g, "tokenizer.ggml.pre", "qwen2");
	kv_strs(g, "tokenizer.ggml.tokens", bpe_tokens, 4);
	kv_strs(g, "tokenizer.ggml.merges", merges, 2);
}

static void
t_badtype(struct g *g)
{
	static const int32_t types[] = {1, 1, 9, 1};
	kv_str(g, "tokenizer.ggml.model", "llama");
	kv_strs(g, "tokenizer.ggml.tokens", bpe_tokens, 4);
	kv_i32s(g, "tokenizer.ggml.token_type", types, 4);
}

static void
t_nopre(struct g *g)
{
	kv_str(g, "tokenizer.ggml.model", "gpt2");
	kv_strs(g, "tokenizer.ggml.tokens", bpe_tokens, 4);
}

T_TEST(tokenizer_refusals)
{
	T_CHECK(tok_fails(t_badutf8, "t.gguf: key 'tokenizer.ggml.tokens': token 1 is not valid UTF-8"));
	T_CHECK(tok_fails(t_noscores,
	    "t.gguf: missing key 'tokenizer.ggml.scores' (a SentencePiece vocabulary "
	    "needs them)"));
	T_CHECK(tok_fails(t_badmerge,
	    "t.gguf: key 'tokenizer.ggml.merges': merge 1 ('b a') does not make a "
	    "token"));
	T_CHECK(tok_fails(t_badtype,
	    "t.gguf: key 'tokenizer.ggml.token_type': entry 2 is not a token type "
	    "(1 to 6)"));
	T_CHECK(tok_fails(t_nopre, "t.gguf: missing key 'tokenizer.ggml.pre'"));
}

T_TEST(byte_level_tokenizer_json)
{
	static const char *const merges[] = {"a b"};
	static const int32_t types[] = {1, 1, 1, 3};
	static const char *const toks[] = {"a", "b", "ab", "<|end|>"};
	struct g g = {0};
	struct llm_buf b = {0};
	struct llm_gguf r;
	struct llm_gguf_tokenizer t;

	kv_str(&g, "tokenizer.ggml.model", "gpt2");
	kv_str(&g, "tokenizer.ggml.pre", "qwen2");
	kv_strs(&g, "tokenizer.ggml.tokens", toks, 4);
	kv_strs(&g, "tokenizer.ggml.merges", merges, 1);
	kv_i32s(&g, "tokenizer.ggml.token_type", types, 4);
	kv_u32(&g, "tokenizer.ggml.eos_token_id", 3);
	kv_str(&g, "tokenizer.chat_template", "{{ messages }}<|im_start|>");
	T_CHECK(open_g(&g, &b, &r) == 0);
	T_CHECKF(llm_gguf_tokenizer_load(&t, &r) == 0, "%s", llm_errmsg());
	T_CHECK(!t.v.add_bos && t.nfc && !t.ignore_merges && t.n_eos == 1 && t.eos_ids[0] == 3);
	json_t *j = llm_gguf_tokenizer_json(&t);
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	T_CHECKF(strstr(s, "\"normalizer\":{\"type\":\"NFC\"}") != NULL, "%s", s);
	T_CHECKF(strstr(s,
		     "\"post_processor\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
		     "\"trim_offsets\":false,\"use_regex\":false}") != NULL,
	    "%s", s);
	T_CHECKF(strstr(s, "\"merges\":[[\"a\",\"b\"]]") != NULL, "%s", s);
	T_CHECKF(strstr(s, "\"added_tokens\":[{\"id\":3,\"content\":\"<|end|>\"") != NULL, "%s", s);
	free(s);
	json_decref(j);
	j = llm_gguf_tokenizer_config(&t);
	T_CHECK(strcmp(json_string_value(json_object_get(j, "chat_template")), "{{ messages }}<|im_start|>") == 0);
	json_decref(j);
	llm_gguf_tokenizer_free(&t);
	llm_gguf_close(&r);
	llm_buf_free(&b);
	llm_buf_free(&g.kv);
}

int
main(void)
{
	llm_setprog("test_gguf_config");
	T_RUN(config_from_metadata_with_defaults);
	T_RUN(config_refusals);
	T_RUN(spm_merges_in_transformers_order);
	T_RUN(tokenizer_refusals);
	T_RUN(byte_level_tokenizer_json);
	return T_DONE();
}
