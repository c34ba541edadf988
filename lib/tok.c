/* tok.c: see tok.h. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tok.h"

enum { TOK_BYTELEVEL = 1, TOK_SPM };

/* U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's space. */
#define SPM_SPACE "\xe2\x96\x81"

struct added {
	int64_t id;
	const char *s;
	size_t len;
};

struct llm_tok {
	int kind;
	int prepend_space;      /* SentencePiece: "\u2581" before the text */
	int strip_first;        /* SentencePiece: drop the first leading space on decode */
	int64_t n;              /* ids 0..n-1 */
	char **str;             /* id -> token text (NULL: unused id) */
	size_t *len;
	uint8_t *special;
	uint8_t *is_added;
	size_t maxlen;
	int64_t *ht;            /* open addressing: id, or -1 */
	size_t htcap;
	struct added *added;    /* longest first */
	size_t nadded;
	int64_t byte_tok[256];  /* SentencePiece <0xNN> tokens, -1 when absent */
	int64_t unk;
	uint16_t byte2cp[256];  /* GPT-2 bytes_to_unicode */
	int16_t cp2byte[512];
};

static void
bytes_to_unicode(struct llm_tok *t)
{
	int n = 0;
	for (int i = 0; i < 512; i++)
		t->cp2byte[i] = -1;
	for (int b = 0; b < 256; b++) {
		int printable = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
		t->byte2cp[b] = (uint16_t)(printable ? b : 256 + n++);
		t->cp2byte[t->byte2cp[b]] = (int16_t)b;
	}
}

static uint64_t
hash(const char *s, size_t n)
{
	return llm_fnv1a(LLM_FNV_INIT, s, n);
}

static int64_t
lookup(const struct llm_tok *t, const char *s, size_t n)
{
	size_t i = (size_t)hash(s, n) & (t->htcap - 1);
	for (;; i = (i + 1) & (t->htcap - 1)) {
		int64_t id = t->ht[i];
		if (id < 0)
			return -1;
		if (t->len[id] == n && memcmp(t->str[id], s, n) == 0)
			return id;
	}
}

static void
insert(struct llm_tok *t, int64_t id)
{
	size_t i = (size_t)hash(t->str[id], t->len[id]) & (t->htcap - 1);
	for (;; i = (i + 1) & (t->htcap - 1)) {
		if (t->ht[i] < 0) {
			t->ht[i] = id;
			return;
		}
		if (t->len[t->ht[i]] == t->len[id] && memcmp(t->str[t->ht[i]], t->str[id], t->len[id]) == 0)
			return; /* the first id of a text wins */
	}
}

static void
set_token(struct llm_tok *t, int64_t id, const char *s, size_t n)
{
	free(t->str[id]);
	t->str[id] = llm_xmalloc(n + 1);
	memcpy(t->str[id], s, n);
	t->str[id][n] = 0;
	t->len[id] = n;
	if (n > t->maxlen)
		t->maxlen = n;
}

/* Whether a (possibly nested Sequence) component has an entry of type. */
static int
has_type(json_t *j, const char *type, json_t **found)
{
	const char *ty;
	json_t *subs;

	if (!json_is_object(j))
		return 0;
	ty = json_string_value(json_object_get(j, "type")); /* borrowed */
	if (ty && strcmp(ty, type) == 0) {
		if (found)
			*found = j;
		return 1;
	}
	subs = json_object_get(j, "pretokenizers"); /* borrowed */
	if (!subs)
		subs = json_object_get(j, "decoders");
	if (!subs)
		subs = json_object_get(j, "normalizers");
	for (size_t i = 0; i < json_array_size(subs); i++)
		if (has_type(json_array_get(subs, i), type, found))
			return 1;
	return 0;
}

static int
cmp_added(const void *a, const void *b)
{
	const struct added *x = a, *y = b;
	return x->len < y->len ? 1 : x->len > y->len ? -1 : 0;
}

struct llm_tok *
llm_tok_load(const char *text, size_t textlen, const char *name)
{
	json_t *root = llm_json_loadb(text, textlen, name), *model, *vocab, *added, *v, *found;
	struct llm_tok *t;
	const char *key;
	int64_t maxid = -1;

	if (!root)
		return NULL;
	if (!json_is_object(root) || !json_is_object(model = json_object_get(root, "model")) ||
	    !json_is_object(vocab = json_object_get(model, "vocab"))) {
		llm_seterr("%s: no model.vocab object (not a tokenizer.json?)", name);
		json_decref(root);
		return NULL;
	}
	added = json_object_get(root, "added_tokens"); /* borrowed */
	json_object_foreach(vocab, key, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > (1 << 24)) {
			llm_seterr("%s: model.vocab['%s']: expected an id", name, key);
			json_decref(root);
			return NULL;
		}
		if (json_integer_value(v) > maxid)
			maxid = json_integer_value(v);
	}
	for (size_t i = 0; i < json_array_size(added); i++) {
		json_t *a = json_array_get(added, i), *id = json_object_get(a, "id");
		if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) > (1 << 24) ||
		    !json_is_string(json_object_get(a, "content"))) {
			llm_seterr("%s: added_tokens[%zu]: expected an id and a content", name, i);
			json_decref(root);
			return NULL;
		}
		if (json_integer_value(id) > maxid)
			maxid = json_integer_value(id);
	}

	t = llm_xcalloc(1, sizeof(*t));
	t->n = maxid + 1;
	t->str = llm_xcalloc((size_t)t->n, sizeof(*t->str));
	t->len = llm_xcalloc((size_t)t->n, sizeof(*t->len));
	t->special = llm_xcalloc((size_t)t->n, 1);
	t->is_added = llm_xcalloc((size_t)t->n, 1);
	json_object_foreach(vocab, key, v)
		set_token(t, json_integer_value(v), key, strlen(key));
	t->added = llm_xcalloc(json_array_size(added), sizeof(*t->added));
	for (size_t i = 0; i < json_array_size(added); i++) {
		json_t *a = json_array_get(added, i);
		int64_t id = json_integer_value(json_object_get(a, "id"));
		const char *s = json_string_value(json_object_get(a, "content"));
		set_token(t, id, s, json_string_length(json_object_get(a, "content")));
		t->is_added[id] = 1;
		t->special[id] = json_is_true(json_object_get(a, "special"));
		if (t->len[id] > 0)
			t->added[t->nadded++] = (struct added){id, t->str[id], t->len[id]};
	}
	qsort(t->added, t->nadded, sizeof(*t->added), cmp_added);

	for (t->htcap = 16; t->htcap < 2 * (size_t)t->n; t->htcap *= 2)
		;
	t->ht = llm_xmalloc(t->htcap * sizeof(*t->ht));
	for (size_t i = 0; i < t->htcap; i++)
		t->ht[i] = -1;
	for (int64_t id = 0; id < t->n; id++)
		if (t->str[id] && !t->is_added[id])
			insert(t, id);

	/* The kind: GPT-2 byte level, or SentencePiece-style BPE. */
	json_t *dec = json_object_get(root, "decoder"), *pre = json_object_get(root, "pre_tokenizer");
	json_t *norm = json_object_get(root, "normalizer");
	bytes_to_unicode(t);
	for (int b = 0; b < 256; b++) {
		char bt[8];
		snprintf(bt, sizeof(bt), "<0x%02X>", b);
		t->byte_tok[b] = lookup(t, bt, 6);
	}
	t->unk = -1;
	if ((key = json_string_value(json_object_get(model, "unk_token"))))
		t->unk = lookup(t, key, strlen(key));
	if (has_type(dec, "ByteLevel", NULL) || has_type(pre, "ByteLevel", NULL))
		t->kind = TOK_BYTELEVEL;
	else if (has_type(dec, "Replace", NULL) || has_type(dec, "ByteFallback", NULL) ||
	    has_type(pre, "Metaspace", NULL) || has_type(dec, "Metaspace", NULL) ||
	    json_is_true(json_object_get(model, "byte_fallback"))) {
		t->kind = TOK_SPM;
		found = NULL;
		if (has_type(norm, "Prepend", &found))
			t->prepend_space = 1;
		else if (has_type(pre, "Metaspace", &found)) {
			const char *scheme = json_string_value(json_object_get(found, "prepend_scheme"));
			t->prepend_space = scheme ? strcmp(scheme, "never") != 0 :
			    !json_is_false(json_object_get(found, "add_prefix_space"));
		}
		t->strip_first = t->prepend_space || has_type(dec, "Strip", NULL);
	} else {
		llm_seterr("%s: unsupported tokenizer (neither byte-level nor SentencePiece-style)", name);
		json_decref(root);
		llm_tok_free(t);
		return NULL;
	}
	json_decref(root);
	return t;
}

void
llm_tok_free(struct llm_tok *t)
{
	if (!t)
		return;
	for (int64_t i = 0; i < t->n; i++)
		free(t->str[i]);
	free(t->str);
	free(t->len);
	free(t->special);
	free(t->is_added);
	free(t->ht);
	free(t->added);
	free(t);
}

int64_t
llm_tok_size(const struct llm_tok *t)
{
	return t->n;
}

static void
push(int64_t **ids, size_t *n, int64_t id)
{
	*ids = llm_xreallocarray(*ids, *n + 1, sizeof(**ids));
	(*ids)[(*n)++] = id;
}

static void
put_utf8(struct llm_buf *b, uint32_t cp)
{
	char u[4];
	size_t n;
	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6);
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12);
		u[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18);
		u[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	llm_buf_add(b, u, n);
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t
utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0];
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, c &= 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, c &= 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, c &= 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (len == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	*cp = c;
	return len;
}

/* Greedy longest match of s over the vocabulary. */
static int
encode_piece(const struct llm_tok *t, const char *s, size_t n, int64_t **ids, size_t *nids)
{
	size_t i = 0;

	while (i < n) {
		size_t max = n - i < t->maxlen ? n - i : t->maxlen, k;
		int64_t id = -1;
		for (k = max; k > 0; k--)
			if ((id = lookup(t, s + i, k)) >= 0)
				break;
		if (id >= 0) {
			push(ids, nids, id);
			i += k;
			continue;
		}
		/* No token starts here: byte tokens for one character. */
		uint32_t cp;
		size_t cl = utf8_len((const unsigned char *)s + i, n - i, &cp);
		if (cl == 0)
			cl = 1;
		for (size_t j = 0; j < cl; j++) {
			int64_t bt = t->byte_tok[(unsigned char)s[i + j]];
			if (bt < 0)
				bt = t->unk;
			if (bt < 0)
				return llm_seterr("cannot encode byte 0x%02x: no byte token and no unknown token",
				    (unsigned char)s[i + j]);
			push(ids, nids, bt);
		}
		i += cl;
	}
	return 0;
}

static int
encode_text(const struct llm_tok *t, const char *s, size_t n, int at_start, int64_t **ids, size_t *nids)
{
	struct llm_buf b = {0};
	int rc;

	if (n == 0)
		return 0;
	if (t->kind == TOK_BYTELEVEL) {
		for (size_t i = 0; i < n; i++)
			put_utf8(&b, t->byte2cp[(unsigned char)s[i]]);
	} else {
		if (at_start && t->prepend_space)
			llm_buf_puts(&b, SPM_SPACE);
		for (size_t i = 0; i < n; i++)
			if (s[i] == ' ')
				llm_buf_puts(&b, SPM_SPACE);
			else
				llm_buf_add(&b, s + i, 1);
	}
	rc = encode_piece(t, b.p, b.len, ids, nids);
	llm_buf_free(&b);
	return rc;
}

int
llm_tok_encode(const struct llm_tok *t, const char *text, size_t len, int64_t **ids, size_t *n)
{
	size_t start = 0, i = 0;

	/* Added tokens are matched literally first, longest first. */
	while (i < len) {
		const struct added *a = NULL;
		for (size_t k = 0; k < t->nadded; k++)
			if (t->added[k].len <= len - i && memcmp(text + i, t->added[k].s, t->added[k].len) == 0) {
				a = &t->added[k];
				break;
			}
		if (!a) {
			i++;
			continue;
		}
		if (encode_text(t, text + start, i - start, start == 0, ids, n) < 0)
			return -1;
		push(ids, n, a->id);
		i += a->len;
		start = i;
	}
	return encode_text(t, text + start, len - start, start == 0, ids, n);
}

void
llm_tok_decode(const struct llm_tok *t, int64_t id, int first, struct llm_buf *out)
{
	const char *s;
	size_t n;

	if (id < 0 || id >= t->n || !t->str[id])
		return;
	s = t->str[id];
	n = t->len[id];
	if (t->is_added[id]) {
		llm_buf_add(out, s, n);
		return;
	}
	if (t->kind == TOK_BYTELEVEL) {
		for (size_t i = 0; i < n;) {
			uint32_t cp;
			size_t cl = utf8_len((const unsigned char *)s + i, n - i, &cp);
			if (cl == 0) {
				i++;
				continue;
			}
			if (cp < 512 && t->cp2byte[cp] >= 0) {
				char c = (char)t->cp2byte[cp];
				llm_buf_add(out, &c, 1);
			} else
				llm_buf_add(out, s + i, cl);
			i += cl;
		}
		return;
	}
	/* SentencePiece style. */
	unsigned v;
	if (n == 6 && sscanf(s, "<0x%2X>", &v) == 1 && s[5] == '>') {
		char c = (char)v;
		llm_buf_add(out, &c, 1);
		return;
	}
	for (size_t i = 0; i < n;) {
		if (n - i >= 3 && memcmp(s + i, SPM_SPACE, 3) == 0) {
			if (!(first && i == 0 && t->strip_first))
				llm_buf_add(out, " ", 1);
			i += 3;
		} else
			llm_buf_add(out, s + i++, 1);
	}
}

int
llm_tok_is_special(const struct llm_tok *t, int64_t id)
{
	return id >= 0 && id < t->n && t->special[id];
}

void
llm_utf8_sanitize(const char *s, size_t n, struct llm_buf *out)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t cl = utf8_len((const unsigned char *)s + i, n - i, &cp);
		if (cl == 0 || (cl == 1 && cp == 0)) {
			llm_buf_puts(out, "\xef\xbf\xbd");
			i++;
		} else {
			llm_buf_add(out, s + i, cl);
			i += cl;
		}
	}
}
