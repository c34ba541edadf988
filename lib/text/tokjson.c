/* tokjson.c: the tokenizer.json reader (llm_tokenizer_load,
 * llm_tokenizer_load_json of tokenizer.h): each section of the document
 * (model, normalizer, pre_tokenizer, decoder, post_processor,
 * added_tokens) read with jansson into the steps of tokenizer.c's
 * pipeline, and a JSON scanner of its own that takes model.vocab and
 * model.merges, nearly all of the document, straight from the text. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "tokenizer_int.h"

static int
get_bool(const json_t *o, const char *key, int def)
{
	const json_t *v = json_object_get(o, key); /* borrowed */
	return json_is_boolean(v) ? json_is_true(v) : def;
}

static int
get_str(const json_t *o, const char *key, const char **s, size_t *len)
{
	const json_t *v = json_object_get(o, key); /* borrowed */
	if (!json_is_string(v))
		return -1;
	*s = json_string_value(v);
	*len = json_string_length(v);
	return 0;
}

/* A pattern {"String": s} or {"Regex": r}. */
static int
load_pattern(struct llm_tokenizer *t, const json_t *o, struct pattern *p, const char *what)
{
	const json_t *pat = json_object_get(o, "pattern"); /* borrowed */
	const char *s;
	size_t len;
	if (json_is_object(pat) && get_str(pat, "String", &s, &len) == 0) {
		p->kind = PAT_STRING;
		p->s = llm_xmalloc(len + 1);
		memcpy(p->s, s, len + 1);
		p->len = len;
		return 0;
	}
	if (json_is_object(pat) && get_str(pat, "Regex", &s, &len) == 0) {
		p->kind = PAT_REGEX;
		return llm_tok_re_compile(&p->re, s, len, t->name);
	}
	return llm_seterr("%s: %s: 'pattern' is not {\"String\": ...} or {\"Regex\": ...}", t->name, what);
}

static int
load_char(struct llm_tokenizer *t, const json_t *o, const char *key, uint32_t *ch, const char *what)
{
	const char *s;
	size_t len;
	if (get_str(o, key, &s, &len) < 0 || llm_utf8_decode(s, len, ch) != len || !len)
		return llm_seterr("%s: %s: '%s' is not one character", t->name, what, key);
	return 0;
}

static int
load_prepend_scheme(struct llm_tokenizer *t, const json_t *o, int *scheme, const char *what)
{
	const char *s;
	size_t len;
	*scheme = PREPEND_ALWAYS;
	if (get_str(o, "prepend_scheme", &s, &len) == 0) {
		if (strcmp(s, "always") == 0)
			*scheme = PREPEND_ALWAYS;
		else if (strcmp(s, "first") == 0)
			*scheme = PREPEND_FIRST;
		else if (strcmp(s, "never") == 0)
			*scheme = PREPEND_NEVER;
		else
			return llm_seterr("%s: %s: unknown prepend_scheme '%s'", t->name, what, s);
	} else if (!get_bool(o, "add_prefix_space", 1)) {
		*scheme = PREPEND_NEVER;
	}
	return 0;
}

static const char *
type_of(const json_t *o)
{
	const json_t *v = json_object_get(o, "type"); /* borrowed */
	return json_is_string(v) ? json_string_value(v) : "";
}

static int
load_normalizer(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'normalizer' is not an object", t->name);
	const char *type = type_of(o);
	static const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
	for (size_t i = 0; i < LLM_NELEM(forms); i++)
		if (strcmp(type, forms[i]) == 0) {
			llm_tok_add_step(&t->norm, &t->n_norm, N_NFC + (int)i);
			if (i == 0)
				llm_tok_nfc_init();
			return 0;
		}
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "normalizers"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: normalizer Sequence: no 'normalizers' array", t->name);
		json_array_foreach (v, i, x)
			if (load_normalizer(t, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "Lowercase") == 0) {
		llm_tok_add_step(&t->norm, &t->n_norm, N_LOWER);
		return 0;
	}
	if (strcmp(type, "StripAccents") == 0) {
		llm_tok_add_step(&t->norm, &t->n_norm, N_STRIP_ACCENTS);
		return 0;
	}
	if (strcmp(type, "Strip") == 0) {
		struct step *s = llm_tok_add_step(&t->norm, &t->n_norm, N_STRIP);
		s->left = get_bool(o, "strip_left", 1);
		s->right = get_bool(o, "strip_right", 1);
		return 0;
	}
	if (strcmp(type, "Prepend") == 0 || strcmp(type, "Replace") == 0) {
		int prepend = type[1] == 'r' && type[2] == 'e' && type[3] == 'p';
		const char *c;
		size_t len;
		if (get_str(o, prepend ? "prepend" : "content", &c, &len) < 0)
			return llm_seterr("%s: normalizer %s: no '%s' string", t->name, type,
			    prepend ? "prepend" : "content");
		struct step *s = llm_tok_add_step(&t->norm, &t->n_norm, prepend ? N_PREPEND : N_REPLACE);
		s->s = llm_xmalloc(len + 1);
		memcpy(s->s, c, len + 1);
		s->len = len;
		if (!prepend && load_pattern(t, o, &s->pat, "normalizer Replace") < 0)
			return -1;
		return 0;
	}
	return llm_seterr("%s: unsupported normalizer '%s'", t->name, type);
}

static int
load_pretokenizer(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'pre_tokenizer' is not an object", t->name);
	const char *type = type_of(o);
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "pretokenizers"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: pre_tokenizer Sequence: no 'pretokenizers' array", t->name);
		json_array_foreach (v, i, x)
			if (load_pretokenizer(t, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "Split") == 0) {
		static const char *const names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
			"Contiguous"};
		struct step *s = llm_tok_add_step(&t->pre, &t->n_pre, P_SPLIT);
		const char *b;
		size_t len;
		if (load_pattern(t, o, &s->pat, "pre_tokenizer Split") < 0)
			return -1;
		if (get_str(o, "behavior", &b, &len) < 0)
			return llm_seterr("%s: pre_tokenizer Split: no 'behavior'", t->name);
		s->behavior = -1;
		for (size_t i = 0; i < LLM_NELEM(names); i++)
			if (strcmp(b, names[i]) == 0)
				s->behavior = (int)i;
		if (s->behavior < 0)
			return llm_seterr("%s: pre_tokenizer Split: unknown behavior '%s'", t->name, b);
		s->invert = get_bool(o, "invert", 0);
		return 0;
	}
	if (strcmp(type, "ByteLevel") == 0) {
		struct step *s = llm_tok_add_step(&t->pre, &t->n_pre, P_BYTELEVEL);
		s->prefix = get_bool(o, "add_prefix_space", 1);
		s->use_regex = get_bool(o, "use_regex", 1);
		s->pat.kind = PAT_REGEX;
		if (s->use_regex)
			return llm_tok_re_compile(&s->pat.re, LLM_TOKENIZER_RE_GPT2, strlen(LLM_TOKENIZER_RE_GPT2),
			    t->name);
		return 0;
	}
	if (strcmp(type, "Metaspace") == 0) {
		struct step *s = llm_tok_add_step(&t->pre, &t->n_pre, P_METASPACE);
		char buf[4];
		if (load_char(t, o, "replacement", &s->ch, "pre_tokenizer Metaspace") < 0 ||
		    load_prepend_scheme(t, o, &s->prefix, "pre_tokenizer Metaspace") < 0)
			return -1;
		s->len = llm_utf8_encode(s->ch, buf);
		s->s = llm_xmalloc(s->len + 1);
		memcpy(s->s, buf, s->len);
		s->s[s->len] = 0;
		s->use_regex = get_bool(o, "split", 1);
		s->pat.kind = PAT_CHAR;
		s->pat.ch = s->ch;
		return 0;
	}
	if (strcmp(type, "Digits") == 0) {
		struct step *s = llm_tok_add_step(&t->pre, &t->n_pre, P_DIGITS);
		s->use_regex = get_bool(o, "individual_digits", 0);
		s->pat.kind = PAT_NUMERIC;
		return 0;
	}
	if (strcmp(type, "WhitespaceSplit") == 0) {
		struct step *s = llm_tok_add_step(&t->pre, &t->n_pre, P_WSSPLIT);
		s->pat.kind = PAT_SPACE;
		return 0;
	}
	if (strcmp(type, "Whitespace") == 0) {
		static const char re[] = "\\w+|[^\\w\\s]+";
		struct step *s = llm_tok_add_step(&t->pre, &t->n_pre, P_WHITESPACE);
		s->pat.kind = PAT_REGEX;
		return llm_tok_re_compile(&s->pat.re, re, sizeof(re) - 1, t->name);
	}
	return llm_seterr("%s: unsupported pre_tokenizer '%s'", t->name, type);
}

static int
load_decoder(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'decoder' is not an object", t->name);
	const char *type = type_of(o);
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "decoders"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: decoder Sequence: no 'decoders' array", t->name);
		json_array_foreach (v, i, x)
			if (load_decoder(t, x) < 0)
				return -1;
		return 0;
	}
	if (strcmp(type, "ByteLevel") == 0) {
		llm_tok_add_step(&t->dec, &t->n_dec, D_BYTELEVEL);
		return 0;
	}
	if (strcmp(type, "ByteFallback") == 0) {
		llm_tok_add_step(&t->dec, &t->n_dec, D_BYTEFALLBACK);
		return 0;
	}
	if (strcmp(type, "Fuse") == 0) {
		llm_tok_add_step(&t->dec, &t->n_dec, D_FUSE);
		return 0;
	}
	if (strcmp(type, "Strip") == 0) {
		struct step *s = llm_tok_add_step(&t->dec, &t->n_dec, D_STRIP);
		json_int_t a = json_integer_value(json_object_get(o, "start"));
		json_int_t b = json_integer_value(json_object_get(o, "stop"));
		if (load_char(t, o, "content", &s->ch, "decoder Strip") < 0)
			return -1;
		s->left = (int)(a < 0 ? 0 : a > 1 << 20 ? 1 << 20 : a);
		s->right = (int)(b < 0 ? 0 : b > 1 << 20 ? 1 << 20 : b);
		return 0;
	}
	if (strcmp(type, "Replace") == 0) {
		struct step *s = llm_tok_add_step(&t->dec, &t->n_dec, D_REPLACE);
		const char *c;
		size_t len;
		if (get_str(o, "content", &c, &len) < 0)
			return llm_seterr("%s: decoder Replace: no 'content' string", t->name);
		s->s = llm_xmalloc(len + 1);
		memcpy(s->s, c, len + 1);
		s->len = len;
		return load_pattern(t, o, &s->pat, "decoder Replace");
	}
	if (strcmp(type, "Metaspace") == 0) {
		struct step *s = llm_tok_add_step(&t->dec, &t->n_dec, D_METASPACE);
		if (load_char(t, o, "replacement", &s->ch, "decoder Metaspace") < 0)
			return -1;
		return load_prepend_scheme(t, o, &s->prefix, "decoder Metaspace");
	}
	return llm_seterr("%s: unsupported decoder '%s'", t->name, type);
}

/* Post-processors, as the ids they put before and after the text. */
static int
load_post(struct llm_tokenizer *t, const json_t *o)
{
	if (json_is_null(o) || !o)
		return 0;
	if (!json_is_object(o))
		return llm_seterr("%s: 'post_processor' is not an object", t->name);
	const char *type = type_of(o);
	if (strcmp(type, "ByteLevel") == 0)
		return 0; /* offsets only */
	if (strcmp(type, "Sequence") == 0) {
		const json_t *v = json_object_get(o, "processors"), *x; /* borrowed */
		size_t i;
		if (!json_is_array(v))
			return llm_seterr("%s: post_processor Sequence: no 'processors' array", t->name);
		json_array_foreach (v, i, x)
			if (load_post(t, x) < 0)
				return -1;
		return 0;
	}
	int64_t *pre = NULL, *post = NULL;
	size_t npre = 0, npost = 0;
	if (strcmp(type, "BertProcessing") == 0 || strcmp(type, "RobertaProcessing") == 0) {
		const json_t *cls = json_object_get(o, "cls"), *sep = json_object_get(o, "sep"); /* borrowed */
		if (!json_is_integer(json_array_get(cls, 1)) || !json_is_integer(json_array_get(sep, 1)))
			return llm_seterr("%s: post_processor %s: bad 'cls' or 'sep'", t->name, type);
		int64_t c = json_integer_value(json_array_get(cls, 1)), s = json_integer_value(json_array_get(sep, 1));
		llm_tok_append_ids(&pre, &npre, &c, 1);
		llm_tok_append_ids(&post, &npost, &s, 1);
	} else if (strcmp(type, "TemplateProcessing") == 0) {
		const json_t *single = json_object_get(o, "single");           /* borrowed */
		const json_t *specials = json_object_get(o, "special_tokens"); /* borrowed */
		const json_t *x;
		size_t i;
		int seen = 0;
		if (!json_is_array(single))
			return llm_seterr("%s: post_processor TemplateProcessing: no 'single' array", t->name);
		json_array_foreach (single, i, x) {
			const json_t *sp = json_object_get(x, "SpecialToken"); /* borrowed */
			if (json_object_get(x, "Sequence")) {
				if (seen++) {
					free(pre);
					free(post);
					return llm_seterr(
					    "%s: post_processor TemplateProcessing: the text appears twice", t->name);
				}
				continue;
			}
			const char *name;
			size_t len;
			const json_t *ids, *idv;
			size_t k;
			if (!sp || get_str(sp, "id", &name, &len) < 0 ||
			    !json_is_array(ids = json_object_get(json_object_get(specials, name), "ids"))) {
				free(pre);
				free(post);
				return llm_seterr("%s: post_processor TemplateProcessing: bad item %zu of 'single'",
				    t->name, i);
			}
			json_array_foreach (ids, k, idv) {
				int64_t id = json_integer_value(idv);
				if (seen)
					llm_tok_append_ids(&post, &npost, &id, 1);
				else
					llm_tok_append_ids(&pre, &npre, &id, 1);
			}
		}
	} else {
		return llm_seterr("%s: unsupported post_processor '%s'", t->name, type);
	}
	/* A later processor wraps what the earlier ones produced. */
	llm_tok_append_ids(&pre, &npre, t->post_pre, t->n_post_pre);
	llm_tok_append_ids(&t->post_post, &t->n_post_post, post, npost);
	free(t->post_pre);
	free(post);
	t->post_pre = pre;
	t->n_post_pre = npre;
	return 0;
}

/* model.vocab and model.merges from the jansson tree (see also the fast
 * reader below, which must mean the same). */
static int
load_vocab(struct llm_tokenizer *t, const json_t *vocab)
{
	const char *k;
	const json_t *v;
	json_int_t maxid = -1;
	json_object_foreach ((json_t *)vocab, k, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return llm_seterr("%s: model: vocab entry '%s' has no valid id", t->name, k);
		if (json_integer_value(v) >= LLM_TOK_MAX_ID)
			return llm_seterr("%s: model: vocab entry '%s' has id %lld, past the %d a tokenizer may have",
			    t->name, k, (long long)json_integer_value(v), LLM_TOK_MAX_ID);
		if (json_integer_value(v) > maxid)
			maxid = json_integer_value(v);
	}
	llm_tok_model_alloc(t, (size_t)(maxid + 1));
	/* jansson keys are NUL-terminated: a key with an embedded NUL cannot
	 * occur in a vocabulary it parsed. */
	json_object_foreach ((json_t *)vocab, k, v)
		if (llm_tok_model_set(t, (int32_t)json_integer_value(v), k, strlen(k)) < 0)
			return -1;
	return 0;
}

static int
load_merges(struct llm_tokenizer *t, const json_t *merges)
{
	size_t i;
	const json_t *x;
	llm_pairmap_init(&t->merges, json_array_size(merges));
	json_array_foreach (merges, i, x) {
		const char *a, *b;
		size_t alen, blen;
		if (json_is_string(x)) {
			const char *s = json_string_value(x), *sp = strchr(s, ' ');
			if (!sp || strchr(sp + 1, ' '))
				return llm_seterr("%s: merge %zu: '%s' is not two tokens", t->name, i, s);
			a = s;
			alen = (size_t)(sp - s);
			b = sp + 1;
			blen = strlen(b);
		} else if (json_is_array(x) && json_array_size(x) == 2 && json_is_string(json_array_get(x, 0)) &&
		    json_is_string(json_array_get(x, 1))) {
			a = json_string_value(json_array_get(x, 0));
			alen = json_string_length(json_array_get(x, 0));
			b = json_string_value(json_array_get(x, 1));
			blen = json_string_length(json_array_get(x, 1));
		} else {
			return llm_seterr("%s: merge %zu is not a string or a pair of strings", t->name, i);
		}
		if (llm_tok_model_merge(t, a, alen, b, blen, (uint32_t)i) < 0)
			return -1;
	}
	return 0;
}

/* The model; its vocab and merges unless have_vocab (read from the text
 * already: the ones in m are then the empty stand-ins). */
static int
load_model(struct llm_tokenizer *t, const json_t *m, int have_vocab)
{
	const char *type = type_of(m);
	const json_t *vocab = json_object_get(m, "vocab"), *merges = json_object_get(m, "merges"); /* borrowed */
	if (!json_is_object(m))
		return llm_seterr("%s: no 'model' object", t->name);
	if (*type && strcmp(type, "BPE") != 0)
		return llm_seterr("%s: unsupported model '%s' (only BPE)", t->name, type);
	if (!json_is_object(vocab) || !json_is_array(merges))
		return llm_seterr("%s: model: no 'vocab' object or 'merges' array", t->name);
	const json_t *drop = json_object_get(m, "dropout"); /* borrowed */
	if (json_is_number(drop) && json_number_value(drop) > 0)
		return llm_seterr("%s: model: BPE dropout is not supported", t->name);

	if (!have_vocab && (load_vocab(t, vocab) < 0 || load_merges(t, merges) < 0))
		return -1;

	const char *s;
	size_t len;
	if (get_str(m, "unk_token", &s, &len) == 0) {
		t->unk_id = llm_tok_model_find(t, s, len);
		if (t->unk_id < 0)
			return llm_seterr("%s: model: unk_token '%s' not in the vocabulary", t->name, s);
	}
	if (get_str(m, "continuing_subword_prefix", &s, &len) == 0 && len)
		t->prefix = llm_xstrdup(s);
	if (get_str(m, "end_of_word_suffix", &s, &len) == 0 && len)
		t->suffix = llm_xstrdup(s);
	t->byte_fallback = get_bool(m, "byte_fallback", 0);
	t->fuse_unk = get_bool(m, "fuse_unk", 0);
	t->ignore_merges = get_bool(m, "ignore_merges", 0);
	llm_tok_model_finish(t);
	return 0;
}

static int
load_added(struct llm_tokenizer *t, const json_t *a)
{
	size_t i;
	const json_t *x;
	if (json_is_null(a) || !a)
		return 0;
	if (!json_is_array(a))
		return llm_seterr("%s: 'added_tokens' is not an array", t->name);
	json_array_foreach (a, i, x) {
		const char *s;
		size_t len;
		const json_t *id = json_object_get(x, "id"); /* borrowed */
		if (get_str(x, "content", &s, &len) < 0 || !json_is_integer(id) || json_integer_value(id) < 0 ||
		    json_integer_value(id) >= LLM_TOK_MAX_ID)
			return llm_seterr("%s: added token %zu: no 'content' string or valid 'id'", t->name, i);
		if (!len)
			continue; /* the crate ignores empty tokens */
		/* The crate does not take the ids from the file: it adds the
		 * tokens in order, each getting the id its content already has
		 * (an earlier added token, or the model's), else the next free
		 * one after the model's vocabulary.  The file's ids agree unless
		 * the file was edited by hand. */
		int32_t nid;
		const struct added *old = llm_tok_find_added(t, s, len);
		if (old) {
			nid = old->id;
		} else if ((nid = llm_tok_model_find(t, s, len)) < 0) {
			int64_t size = (int64_t)t->vocab.n, max = -1;
			for (size_t k = 0; k < t->n_added; k++)
				if (t->added[k].id > max)
					max = t->added[k].id;
			nid = (int32_t)(max < 0 ? size : max >= size || size == 0 ? max + 1 : size);
		}
		int special = get_bool(x, "special", 0);
		llm_tok_add_added(t, s, len, nid, special, get_bool(x, "lstrip", 0), get_bool(x, "rstrip", 0),
		    get_bool(x, "single_word", 0), get_bool(x, "normalized", !special));
	}
	return 0;
}

/* ---- model.vocab and model.merges straight from the text ----
 *
 * The vocabulary and the merges are nearly all of a tokenizer.json (11 MB
 * for a 151k-token vocabulary), and a jansson tree of them, with a malloc'd
 * node per string, costs more than all the rest of loading together.  So
 * the loader first walks the text itself: it reads those two values
 * straight into the model's tables and hands jansson the rest of the
 * document, with them replaced by {} and [].  This reader accepts a subset
 * of what jansson accepts and means the same by it: strings of valid UTF-8
 * without control characters, escapes with paired surrogates (never
 * \u0000, which jansson refuses in keys, and in strings without
 * JSON_ALLOW_NUL), ids written as plain integers, no duplicate keys.  As
 * the rest is valid JSON with a value where each of the two stood, the
 * whole document is valid JSON too.  Whenever the reader declines (bad
 * JSON, or anything load_vocab or load_merges would refuse) the document
 * is loaded again the general way, so that every error message is the one
 * jansson or the loaders give, word for word. */

#define AHEAD 16 /* table lookups in flight while loading */

static inline const char *
jws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

static int
hex4(const char *p, uint32_t *v)
{
	uint32_t x = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' :
		    c >= 'a' && c <= 'f'     ? c - 'a' + 10 :
		    c >= 'A' && c <= 'F'     ? c - 'A' + 10 :
					       -1;
		if (d < 0)
			return -1;
		x = x << 4 | (uint32_t)d;
	}
	*v = x;
	return 0;
}

/* Decode the JSON string whose opening quote is at *pp, append it to out
 * and leave *pp after the closing quote; -1 for a string that jansson
 * refuses, and for \u0000. */
static int
jstring(const char **pp, const char *e, struct llm_buf *out)
{
	const char *p = *pp + 1;
	for (;;) {
		const char *run = p;
		unsigned high = 0;
		while (p < e && (uint8_t)*p >= 0x20 && *p != '"' && *p != '\\')
			high |= (uint8_t)*p++;
		if (p == e)
			return -1;
		if ((high & 0x80) && !llm_utf8_valid(run, (size_t)(p - run)))
			return -1;
		llm_buf_add(out, run, (size_t)(p - run));
		if (*p == '"') {
			*pp = p + 1;
			return 0;
		}
		if (*p != '\\' || e - p < 2)
			return -1; /* a control character, or the text ends */
		char c[4];
		size_t n = 1;
		/* one escape a line */
		/* clang-format off */
		switch (p[1]) {
		case '"': case '\\': case '/': c[0] = p[1]; break;
		case 'b': c[0] = '\b'; break;
		case 'f': c[0] = '\f'; break;
		case 'n': c[0] = '\n'; break;
		case 'r': c[0] = '\r'; break;
		case 't': c[0] = '\t'; break;
		/* clang-format on */
		case 'u': {
			uint32_t cp, lo;
			if (e - p < 6 || hex4(p + 2, &cp) < 0)
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (e - p < 12 || p[6] != '\\' || p[7] != 'u' || hex4(p + 8, &lo) < 0 || lo < 0xdc00 ||
				    lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				p += 6;
			} else if (cp == 0 || (cp >= 0xdc00 && cp <= 0xdfff)) {
				return -1;
			}
			n = llm_utf8_encode(cp, c);
			p += 4;
			break;
		}
		default:
			return -1;
		}
		llm_buf_add(out, c, n);
		p += 2;
	}
}

/* The end of the JSON value at p, found by following strings and nesting
 * only (jansson checks the rest); NULL if the text ends first. */
static const char *
jskip(const char *p, const char *e)
{
	size_t depth = 0;
	do {
		if (p == e)
			return NULL;
		switch (*p) {
		case '"':
			for (p++; p < e && *p != '"'; p++)
				if (*p == '\\' && ++p == e)
					return NULL;
			if (p == e)
				return NULL;
			p++;
			break;
		case '{':
		case '[':
			depth++;
			p++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return NULL;
			depth--;
			p++;
			break;
		default:
			if (depth == 0) { /* a number, true, false or null */
				const char *q = p;
				while (p < e &&
				    ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-' || *p == '+' ||
					*p == '.' || *p == 'E'))
					p++;
				return p > q ? p : NULL;
			}
			p++;
		}
	} while (depth > 0);
	return p;
}

/* The key of an object member at p (after '{' or ',' and white space),
 * decoded into key; returns the start of the member's value, or NULL. */
static const char *
jkey(const char *p, const char *e, struct llm_buf *key)
{
	key->len = 0;
	if (p == e || *p != '"' || jstring(&p, e, key) < 0)
		return NULL;
	p = jws(p, e);
	if (p == e || *p != ':')
		return NULL;
	return jws(p + 1, e);
}

/* After a value inside an object or array closed by close: 1 and *pp at
 * the next one, 0 and *pp after the close, or -1. */
static int
jnext(const char **pp, const char *e, char close)
{
	const char *p = jws(*pp, e);
	if (p < e && *p == ',') {
		*pp = jws(p + 1, e);
		return 1;
	}
	if (p < e && *p == close) {
		*pp = p + 1;
		return 0;
	}
	return -1;
}

/* The first step into an object or array at p: 1 and *pp at its first
 * element, or 0 and *pp after it when it is empty. */
static int
jopen(const char **pp, const char *e, char close)
{
	const char *p = jws(*pp + 1, e);
	if (p < e && *p == close) {
		*pp = p + 1;
		return 0;
	}
	*pp = p;
	return 1;
}

static inline int
key_is(const struct llm_buf *key, const char *s)
{
	size_t n = strlen(s);
	return key->len == n && memcmp(key->p, s, n) == 0;
}

/* model.vocab at p ('{'): as load_vocab, or NULL.  Returns the end.  The
 * keys go to the pool as they come; the table, which needs the largest id
 * for its size, is filled once they are all read, AHEAD keys at a time. */
static const char *
read_vocab(struct llm_tokenizer *t, const char *p, const char *e)
{
	struct vent {
		uint32_t len; /* the key's; keys follow each other in the pool */
		int32_t id;
	} *v = NULL;
	size_t n = 0, cap = 0, base = t->pool.len;
	int32_t maxid = -1;
	int more = jopen(&p, e, '}');

	while (more) {
		if (p == e || *p != '"')
			goto fail;
		size_t off = t->pool.len;
		if (jstring(&p, e, &t->pool) < 0)
			goto fail;
		size_t len = t->pool.len - off;
		llm_buf_add(&t->pool, "", 1); /* NUL-terminated, as llm_tok_model_set does */
		p = jws(p, e);
		if (p == e || *p != ':')
			goto fail;
		p = jws(p + 1, e);
		/* An id as jansson reads a valid one: 0 or [1-9][0-9]*.  Signs,
		 * fractions and exponents are left to load_vocab. */
		const char *q = p;
		int64_t id = 0;
		while (p < e && *p >= '0' && *p <= '9' && p - q < 10)
			id = id * 10 + (*p++ - '0');
		if (p == q || (*q == '0' && p - q > 1) || id >= LLM_TOK_MAX_ID)
			goto fail; /* load_vocab says why */
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = llm_xreallocarray(v, cap, sizeof(*v));
		}
		v[n++] = (struct vent){(uint32_t)len, (int32_t)id};
		if (id > maxid)
			maxid = (int32_t)id;
		if ((more = jnext(&p, e, '}')) < 0)
			goto fail;
	}
	llm_tok_model_alloc(t, (size_t)maxid + 1);
	uint64_t h[AHEAD];
	size_t off = base, ahead = base; /* pool offsets of keys i - AHEAD and i */
	for (size_t i = 0; i < n + AHEAD; i++) {
		uint64_t *hi = &h[i % AHEAD]; /* key i - AHEAD's hash, then key i's */
		if (i >= AHEAD) {
			const struct vent *x = &v[i - AHEAD];
			if (t->tok_off[x->id] != SIZE_MAX)
				goto fail; /* two keys with one id: load_vocab says so */
			t->tok_off[x->id] = off;
			t->tok_len[x->id] = x->len;
			if (llm_smap_put(&t->vocab, t->pool.p, off, x->len, *hi, x->id))
				goto fail; /* a duplicate key */
			off += x->len + 1;
		}
		if (i < n) {
			*hi = llm_hash_bytes(t->pool.p + ahead, v[i].len);
			llm_smap_prefetch(&t->vocab, *hi);
			ahead += v[i].len + 1;
		}
	}
	free(v);
	return p;
fail:
	free(v);
	return NULL;
}

/* A merge read and waiting for its lookups: left and right back to back,
 * and the hashes of left, right and the two together. */
struct pending {
	struct llm_buf s;
	size_t alen;
	uint64_t h[3];
};

static int
merge_ids(const struct llm_tokenizer *t, const struct pending *q, int32_t *r)
{
	r[0] = llm_smap_get(&t->vocab, t->pool.p, q->s.p, q->alen, q->h[0]);
	r[1] = llm_smap_get(&t->vocab, t->pool.p, q->s.p + q->alen, q->s.len - q->alen, q->h[1]);
	r[2] = llm_smap_get(&t->vocab, t->pool.p, q->s.p, q->s.len, q->h[2]);
	return r[0] < 0 || r[1] < 0 || r[2] < 0 ? -1 : 0;
}

/* model.merges at p ('['): as load_merges, or NULL.  Returns the end.
 * Each merge is looked up when the one AHEAD after it has been read. */
static const char *
read_merges(struct llm_tokenizer *t, const char *p, const char *e)
{
	int32_t (*v)[3] = NULL; /* (n, 3): left, right and merged id */
	size_t n = 0, cap = 0;
	struct pending ring[AHEAD];
	int more = jopen(&p, e, ']');

	memset(ring, 0, sizeof(ring));
	for (; more; n++) {
		struct pending *q = &ring[n % AHEAD];
		if (n >= AHEAD && merge_ids(t, q, v[n - AHEAD]) < 0)
			goto fail;
		q->s.len = 0;
		if (p < e && *p == '"') { /* "left right" */
			if (jstring(&p, e, &q->s) < 0)
				goto fail;
			char *sp = memchr(q->s.p, ' ', q->s.len);
			if (!sp || memchr(sp + 1, ' ', q->s.len - (size_t)(sp + 1 - q->s.p)))
				goto fail;
			q->alen = (size_t)(sp - q->s.p);
			memmove(sp, sp + 1, q->s.len - q->alen - 1);
			q->s.len--;
		} else if (p < e && *p == '[') { /* ["left", "right"] */
			p = jws(p + 1, e);
			if (p == e || *p != '"' || jstring(&p, e, &q->s) < 0)
				goto fail;
			q->alen = q->s.len;
			p = jws(p, e);
			if (p == e || *p != ',')
				goto fail;
			p = jws(p + 1, e);
			if (p == e || *p != '"' || jstring(&p, e, &q->s) < 0)
				goto fail;
			p = jws(p, e);
			if (p == e || *p != ']')
				goto fail;
			p++;
		} else {
			goto fail;
		}
		q->h[0] = llm_hash_bytes(q->s.p, q->alen);
		q->h[1] = llm_hash_bytes(q->s.p + q->alen, q->s.len - q->alen);
		q->h[2] = llm_hash_bytes(q->s.p, q->s.len);
		for (int k = 0; k < 3; k++)
			llm_smap_prefetch(&t->vocab, q->h[k]);
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			v = llm_xreallocarray(v, cap, sizeof(*v));
		}
		if ((more = jnext(&p, e, ']')) < 0)
			goto fail;
	}
	for (size_t i = n > AHEAD ? n - AHEAD : 0; i < n; i++)
		if (merge_ids(t, &ring[i % AHEAD], v[i]) < 0)
			goto fail;
	llm_pairmap_init(&t->merges, n);
	for (size_t i = 0; i < n; i++) {
		if (i + AHEAD < n)
			llm_pairmap_prefetch(&t->merges, v[i + AHEAD][0], v[i + AHEAD][1]);
		t->dup_merges += (size_t)llm_pairmap_put(&t->merges, v[i][0], v[i][1], (uint32_t)i, v[i][2]);
	}
	for (int k = 0; k < AHEAD; k++)
		llm_buf_free(&ring[k].s);
	free(v);
	return p;
fail:
	for (int k = 0; k < AHEAD; k++)
		llm_buf_free(&ring[k].s);
	free(v);
	return NULL;
}

/* Read the top-level model.vocab and model.merges of the document into t
 * and append the rest of it to rest, with {} and [] in their place; -1
 * (nothing said) to have the document loaded the general way. */
static int
read_model_text(struct llm_tokenizer *t, const char *text, size_t len, struct llm_buf *rest)
{
	const char *e = text + len, *p = jws(text, e), *copied = text;
	const char *merges = NULL, *merges_end = NULL;
	struct llm_buf key = {0};
	int have_model = 0, have_vocab = 0, rc = -1, more, more_m;

	if (p == e || *p != '{')
		goto out;
	more = jopen(&p, e, '}');
	while (more) {
		if (!(p = jkey(p, e, &key)))
			goto out;
		if (!key_is(&key, "model") || p == e || *p != '{') {
			if (!(p = jskip(p, e)))
				goto out;
		} else if (have_model++) {
			goto out;
		} else {
			more_m = jopen(&p, e, '}');
			while (more_m) {
				if (!(p = jkey(p, e, &key)))
					goto out;
				if (key_is(&key, "vocab")) {
					if (have_vocab++ || p == e || *p != '{')
						goto out;
					llm_buf_add(rest, copied, (size_t)(p - copied));
					llm_buf_add(rest, "{}", 2);
					if (!(p = read_vocab(t, p, e)))
						goto out;
					copied = p;
				} else if (key_is(&key, "merges")) {
					if (merges || p == e || *p != '[')
						goto out;
					llm_buf_add(rest, copied, (size_t)(p - copied));
					llm_buf_add(rest, "[]", 2);
					merges = p;
					/* Merges need the vocabulary: read them now if it
					 * came first, else once the object is done. */
					if (!(p = have_vocab ? read_merges(t, p, e) : jskip(p, e)))
						goto out;
					merges_end = have_vocab ? NULL : p;
					copied = p;
				} else if (!(p = jskip(p, e))) {
					goto out;
				}
				if ((more_m = jnext(&p, e, '}')) < 0)
					goto out;
			}
		}
		if ((more = jnext(&p, e, '}')) < 0)
			goto out;
	}
	if (!have_vocab || !merges || (merges_end && read_merges(t, merges, merges_end) != merges_end))
		goto out;
	llm_buf_add(rest, copied, (size_t)(e - copied));
	rc = 0;
out:
	llm_buf_free(&key);
	return rc;
}

/* Load a document, reading the vocabulary and merges from the text when
 * fast (NULL, nothing said, if that declines) or through jansson. */
struct llm_tokenizer *
llm_tok_load_doc(const char *text, size_t len, const char *name, int fast)
{
	struct llm_tokenizer *t = llm_tok_new(name);
	struct llm_buf rest = {0};
	json_t *j = NULL;
	if (fast) {
		if (read_model_text(t, text, len, &rest) < 0)
			goto fail;
		j = llm_json_loadb(rest.p, rest.len, name);
	} else {
		j = llm_json_loadb(text, len, name);
	}
	if (!j)
		goto fail;
	if (!json_is_object(j)) {
		llm_seterr("%s: not a JSON object", name);
		goto fail;
	}
	if (load_model(t, json_object_get(j, "model"), fast) < 0 ||
	    load_normalizer(t, json_object_get(j, "normalizer")) < 0 ||
	    load_pretokenizer(t, json_object_get(j, "pre_tokenizer")) < 0 ||
	    load_decoder(t, json_object_get(j, "decoder")) < 0 ||
	    load_post(t, json_object_get(j, "post_processor")) < 0 ||
	    load_added(t, json_object_get(j, "added_tokens")) < 0 || llm_tok_finish(t) < 0)
		goto fail;
	json_decref(j);
	llm_buf_free(&rest);
	return t;
fail:
	json_decref(j);
	llm_buf_free(&rest);
	llm_tokenizer_free(t);
	return NULL;
}

struct llm_tokenizer *
llm_tokenizer_load_json(const char *text, size_t len, const char *name)
{
	struct llm_tokenizer *t = llm_tok_load_doc(text, len, name, 1);
	return t ? t : llm_tok_load_doc(text, len, name, 0);
}

struct llm_tokenizer *
llm_tokenizer_load(const char *path)
{
	/* Mapped rather than read: no copy, and the pages are the page
	 * cache's.  A file that cannot be mapped is read, for the message. */
	struct llm_map m;
	if (llm_map_file(&m, path) == 0) {
		struct llm_tokenizer *t = llm_tokenizer_load_json((const char *)m.p, m.len, path);
		llm_unmap(&m);
		return t;
	}
	char *text;
	size_t len;
	if (llm_read_file(path, &text, &len) < 0)
		return NULL;
	struct llm_tokenizer *t = llm_tokenizer_load_json(text, len, path);
	free(text);
	return t;
}
