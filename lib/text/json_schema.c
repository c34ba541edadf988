/* json_schema.c: a JSON schema turned into GBNF (grammar.h), as
 * llama.cpp's json-schema-to-grammar does, for llm-run --json-schema and
 * llm-serve's response_format.
 *
 * Followed: type (one or a list), properties in the schema's order,
 * required (an optional property may be absent), additionalProperties
 * (false or absent, as llama.cpp: the named keys alone, when there are
 * some; true: any more keys after them, which may repeat a named key's
 * name; a schema: the same with their values so), items, prefixItems (then items, if a schema;
 * else nothing more), minItems, maxItems, enum, const, anyOf, oneOf
 * (as anyOf: the one-only is not checked), allOf of object schemas (their
 * properties and required merged), $ref to "#", "#/$defs/...",
 * "#/definitions/..." or any JSON pointer into the schema, minLength and
 * maxLength of strings, format "uuid".  Other formats, and the
 * annotations (title, description, default, examples, ...), are ignored.
 * Refused by name: the keywords that constrain further in ways a grammar
 * here does not follow (pattern, minimum, uniqueItems, ...).
 *
 * Every value is followed by the rule space, which allows at most one
 * space or one newline and 20 spaces or tabs (llama.cpp's), so that a
 * model cannot run away in whitespace; numbers have at most 16 digits
 * before and after the point and 3 in the exponent. */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "../base/hash.h"
#include "../base/util.h"

static const char *const refused[] = {"pattern", "patternProperties", "uniqueItems", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minProperties", "maxProperties", "propertyNames",
	"dependentRequired", "dependentSchemas", "dependencies", "if", "then", "else", "not", "contains", "minContains",
	"maxContains", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"};

/* The rules every schema may use, defined once when first used. */
static const struct {
	const char *name, *body;
} prims[] = {
	{"space", "| \" \" | \"\\n\" [ \\t]{0,20}"},
	{"value", "object | array | string | number | boolean | null"},
	{"object", "\"{\" space ( string \":\" space value ( \",\" space string \":\" space value )* )? \"}\" space"},
	{"array", "\"[\" space ( value ( \",\" space value )* )? \"]\" space"},
	{"char", "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )"},
	{"string", "\"\\\"\" char* \"\\\"\" space"},
	{"number", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )? space"},
	{"integer", "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} ) space"},
	{"boolean", "( \"true\" | \"false\" ) space"},
	{"null", "\"null\" space"},
	{"hex", "[0-9a-fA-F]"},
	{"uuid", "\"\\\"\" hex{8} \"-\" hex{4} \"-\" hex{4} \"-\" hex{4} \"-\" hex{12} \"\\\"\" space"},
};
#define NPRIMS (sizeof(prims) / sizeof(prims[0]))

/* What each primitive needs besides itself. */
static const char *const prim_deps[NPRIMS][6] = {
	{NULL},
	{"object", "array", "string", "number", "boolean", "null"},
	{"space", "string", "value"},
	{"space", "value"},
	{NULL},
	{"char", "space"},
	{"space"},
	{"space"},
	{"space"},
	{"space"},
	{NULL},
	{"hex", "space"},
};

struct conv {
	json_t *root; /* the schema: borrowed */
	struct llm_buf out;
	char **names; /* rule names taken */
	size_t nnames;
	/* the same names as keys of a map (in pool) to the next number to try
	 * after them: a clash costs one lookup, not a scan of every name */
	struct llm_smap taken;
	struct llm_buf pool;
	char **refs; /* $ref strings and their rules' names, in pairs */
	size_t nrefs;
	int used[NPRIMS];
	/* what a rule being made holds, freed at the end (an error jumps out) */
	void **held;
	size_t nheld;
	struct llm_buf **bufs;
	size_t nbufs;
	json_t *json; /* an array of JSON made on the way */
	jmp_buf jb;
};

static void *
hold(struct conv *c, void *p)
{
	c->held = llm_xreallocarray(c->held, c->nheld + 1, sizeof(*c->held));
	return c->held[c->nheld++] = p;
}

static struct llm_buf *
newbuf(struct conv *c)
{
	c->bufs = llm_xreallocarray(c->bufs, c->nbufs + 1, sizeof(*c->bufs));
	return c->bufs[c->nbufs++] = llm_xcalloc(1, sizeof(struct llm_buf));
}

/* A printf-made string, held. */
static char *hf(struct conv *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *
hf(struct conv *c, const char *fmt, ...)
{
	va_list ap;
	struct llm_buf *b = newbuf(c);
	va_start(ap, fmt);
	llm_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return b->p;
}

static _Noreturn void cerr(struct conv *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static _Noreturn void
cerr(struct conv *c, const char *path, const char *fmt, ...)
{
	va_list ap;
	struct llm_buf b = {0};
	llm_buf_printf(&b, "%s: ", *path ? path : "/");
	va_start(ap, fmt);
	llm_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	llm_seterr("%s", b.p);
	llm_buf_free(&b);
	longjmp(c->jb, 1);
}

static const char *
prim(struct conv *c, const char *name)
{
	for (size_t i = 0; i < NPRIMS; i++)
		if (strcmp(prims[i].name, name) == 0) {
			if (!c->used[i]) {
				c->used[i] = 1;
				llm_buf_printf(&c->out, "%s ::= %s\n", prims[i].name, prims[i].body);
				for (int k = 0; k < 6 && prim_deps[i][k]; k++)
					prim(c, prim_deps[i][k]);
			}
			return prims[i].name;
		}
	return NULL;
}

/* The number to try after name when it clashes, or -1: not taken. */
static int32_t
next_of(const struct conv *c, const char *name)
{
	size_t n = strlen(name);
	return llm_smap_get(&c->taken, c->pool.p, name, n, llm_hash_bytes(name, n));
}

static void
set_next(struct conv *c, const char *name, int32_t next)
{
	size_t n = strlen(name), off = c->pool.len;
	llm_buf_add(&c->pool, name, n);
	llm_smap_put(&c->taken, c->pool.p, off, n, llm_hash_bytes(name, n), next);
}

static int
taken(const struct conv *c, const char *name)
{
	for (size_t i = 0; i < NPRIMS; i++)
		if (strcmp(prims[i].name, name) == 0)
			return 1;
	return next_of(c, name) >= 0;
}

/* name is taken (a new string, owned by c->names from now). */
static const char *
take(struct conv *c, char *name)
{
	set_next(c, name, 1);
	c->names = llm_xreallocarray(c->names, c->nnames + 1, sizeof(*c->names));
	return c->names[c->nnames++] = name;
}

/* A new rule name from hint: letters, digits and '-', numbered if taken. */
static const char *
fresh(struct conv *c, const char *hint)
{
	char *base = llm_xstrdup(*hint ? hint : "r"), *name;
	for (char *p = base; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-'))
			*p = '-';
	if (strlen(base) > 60)
		base[60] = 0;
	name = llm_xstrdup(base);
	if (taken(c, name)) {
		/* base-N from the number after the last one taken of this base */
		int32_t i = next_of(c, base);
		if (i < 1)
			i = 1; /* a primitive's name */
		do {
			free(name);
			name = llm_xasprintf("%s-%d", base, i++);
		} while (taken(c, name));
		set_next(c, base, i);
	}
	free(base);
	return take(c, name);
}

/* The GBNF literal of text: "..." with its quotes, backslashes and control
 * characters escaped. */
void
llm_grammar_literal(struct llm_buf *b, const char *s)
{
	llm_buf_puts(b, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			llm_buf_printf(b, "\\%c", ch);
		else if (ch == '\n')
			llm_buf_puts(b, "\\n");
		else if (ch < 0x20 || ch == 0x7f)
			llm_buf_printf(b, "\\x%02X", ch);
		else
			llm_buf_add(b, s, 1);
	}
	llm_buf_puts(b, "\"");
}

static void
json_literal(struct llm_buf *b, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	llm_grammar_literal(b, s ? s : "null");
	free(s);
}

static void gen(struct conv *c, json_t *s, const char *name, const char *path);

/* A rule for sub-schema s (named from hint), its name. */
static const char *
sub(struct conv *c, json_t *s, const char *hint, const char *path)
{
	const char *name = fresh(c, hint);
	gen(c, s, name, path);
	return name;
}

static json_t *
resolve(struct conv *c, const char *ref, const char *path)
{
	json_t *v = c->root; /* borrowed */
	if (ref[0] != '#')
		cerr(c, path, "$ref '%s': only references inside the schema (#...) are followed", ref);
	const char *p = ref + 1;
	while (*p == '/') {
		p++;
		size_t n = strcspn(p, "/");
		char *tok = llm_xmalloc(n + 1), *d = tok;
		for (size_t i = 0; i < n; i++) {
			if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
				*d++ = p[i + 1] == '0' ? '~' : '/';
				i++;
			} else
				*d++ = p[i];
		}
		*d = 0;
		json_t *next = NULL;
		if (json_is_object(v))
			next = json_object_get(v, tok);
		else if (json_is_array(v)) {
			char *end;
			unsigned long k = strtoul(tok, &end, 10);
			if (*tok && !*end)
				next = json_array_get(v, k);
		}
		free(tok);
		if (!next)
			cerr(c, path, "$ref '%s': no such place in the schema", ref);
		v = next;
		p += n;
	}
	if (*p)
		cerr(c, path, "$ref '%s': not a JSON pointer", ref);
	return v;
}

static size_t
count_of(struct conv *c, json_t *s, const char *key, const char *path, size_t dflt)
{
	json_t *v = json_object_get(s, key); /* borrowed */
	if (!v)
		return dflt;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 10000)
		cerr(c, path, "'%s' is not a whole number from 0 to 10000", key);
	return (size_t)json_integer_value(v);
}

/* "x{min,max}" with max SIZE_MAX for none. */
static void
bounds(struct llm_buf *b, size_t lo, size_t hi)
{
	if (hi == SIZE_MAX)
		llm_buf_printf(b, "{%zu,}", lo);
	else
		llm_buf_printf(b, "{%zu,%zu}", lo, hi);
}

static void
gen_object(struct conv *c, json_t *s, const char *name, const char *path)
{
	json_t *props = json_object_get(s, "properties");          /* borrowed */
	json_t *req = json_object_get(s, "required");              /* borrowed */
	json_t *addl = json_object_get(s, "additionalProperties"); /* borrowed */
	if (props && !json_is_object(props))
		cerr(c, path, "'properties' is not an object");
	if (req && !json_is_array(req))
		cerr(c, path, "'required' is not an array");
	if (addl && !json_is_boolean(addl) && !json_is_object(addl))
		cerr(c, path, "'additionalProperties' is not a boolean or a schema");
	size_t k = props ? json_object_size(props) : 0;
	json_t *reqset = json_object(); /* the required names, looked up by hash */
	json_array_append_new(c->json, reqset);
	for (size_t i = 0; req && i < json_array_size(req); i++) {
		json_t *r = json_array_get(req, i); /* borrowed */
		if (!json_is_string(r))
			cerr(c, path, "'required' holds something other than a string");
		if (!props || !json_object_get(props, json_string_value(r)))
			cerr(c, path, "required property '%s' is not in 'properties'", json_string_value(r));
		json_object_set(reqset, json_string_value(r), json_true());
	}
	if (k == 0 && (!addl || json_is_true(addl))) {
		llm_buf_printf(&c->out, "%s ::= %s\n", name, prim(c, "object"));
		return;
	}
	prim(c, "space");
	/* The additional key-value pair, if any. */
	const char *extra = NULL;
	if (json_is_true(addl)) {
		extra = fresh(c, hf(c, "%s-kv", name));
		llm_buf_printf(&c->out, "%s ::= %s \":\" space %s\n", extra, prim(c, "string"), prim(c, "value"));
	} else if (json_is_object(addl)) {
		const char *v = sub(c, addl, hf(c, "%s-additional", name), hf(c, "%s/additionalProperties", path));
		extra = fresh(c, hf(c, "%s-kv", name));
		llm_buf_printf(&c->out, "%s ::= %s \":\" space %s\n", extra, prim(c, "string"), v);
	}
	/* Each property's pair, then the chain of rules: F_i with nothing
	 * written yet, M_i after something (a comma first). */
	const char **kv = hold(c, llm_xcalloc(k + 1, sizeof(*kv)));
	int *required = hold(c, llm_xcalloc(k + 1, sizeof(*required)));
	const char *key;
	json_t *ps;
	size_t i = 0;
	json_object_foreach (props, key, ps) {
		const char *v = sub(c, ps, hf(c, "%s-%s", name, key), hf(c, "%s/properties/%s", path, key));
		kv[i] = fresh(c, hf(c, "%s-%s-kv", name, key));
		json_t *kj = json_string(key);
		llm_buf_printf(&c->out, "%s ::= ", kv[i]);
		json_literal(&c->out, kj);
		json_decref(kj);
		llm_buf_printf(&c->out, " space \":\" space %s\n", v);
		required[i] = json_object_get(reqset, key) != NULL;
		i++;
	}
	char **F = hold(c, llm_xcalloc(k + 1, sizeof(*F))), **M = hold(c, llm_xcalloc(k + 1, sizeof(*M)));
	for (i = 0; i <= k; i++) {
		F[i] = (char *)fresh(c, hf(c, "%s-f%zu", name, i));
		M[i] = (char *)fresh(c, hf(c, "%s-m%zu", name, i));
	}
	for (i = 0; i <= k; i++) {
		if (i == k) {
			if (extra) {
				llm_buf_printf(&c->out, "%s ::= ( %s ( \",\" space %s )* )?\n", F[i], extra, extra);
				llm_buf_printf(&c->out, "%s ::= ( \",\" space %s )*\n", M[i], extra);
			} else {
				llm_buf_printf(&c->out, "%s ::= \"\"\n%s ::= \"\"\n", F[i], M[i]);
			}
			continue;
		}
		llm_buf_printf(&c->out, "%s ::= %s %s%s%s\n", F[i], kv[i], M[i + 1], required[i] ? "" : " | ",
		    required[i] ? "" : F[i + 1]);
		llm_buf_printf(&c->out, "%s ::= \",\" space %s %s%s%s\n", M[i], kv[i], M[i + 1],
		    required[i] ? "" : " | ", required[i] ? "" : M[i + 1]);
	}
	llm_buf_printf(&c->out, "%s ::= \"{\" space %s \"}\" space\n", name, F[0]);
}

static void
gen_array(struct conv *c, json_t *s, const char *name, const char *path)
{
	json_t *items = json_object_get(s, "items");        /* borrowed */
	json_t *prefix = json_object_get(s, "prefixItems"); /* borrowed */
	size_t lo = count_of(c, s, "minItems", path, 0), hi = count_of(c, s, "maxItems", path, SIZE_MAX);
	if (hi < lo)
		cerr(c, path, "'maxItems' %zu is below 'minItems' %zu", hi, lo);
	if (items && !json_is_object(items) && !json_is_boolean(items))
		cerr(c, path, "'items' is not a schema");
	if (prefix && !json_is_array(prefix))
		cerr(c, path, "'prefixItems' is not an array");
	prim(c, "space");
	const char *it = NULL;
	if (!items || json_is_true(items))
		it = prefix ? NULL : prim(c, "value");
	else if (json_is_object(items)) {
		it = sub(c, items, hf(c, "%s-item", name), hf(c, "%s/items", path));
	}
	if (prefix && json_array_size(prefix)) {
		if (json_object_get(s, "minItems") || json_object_get(s, "maxItems"))
			cerr(c, path, "'minItems' and 'maxItems' beside 'prefixItems' are not supported");
		struct llm_buf *b = newbuf(c);
		for (size_t i = 0; i < json_array_size(prefix); i++) {
			const char *r = sub(c, json_array_get(prefix, i), hf(c, "%s-%zu", name, i),
			    hf(c, "%s/prefixItems/%zu", path, i));
			llm_buf_printf(b, "%s%s", i ? " \",\" space " : "", r);
		}
		llm_buf_printf(&c->out, "%s ::= \"[\" space %s", name, b->p);
		if (it)
			llm_buf_printf(&c->out, " ( \",\" space %s )*", it);
		llm_buf_puts(&c->out, " \"]\" space\n");
		return;
	}
	if (!it || hi == 0) {
		/* items false, or at most none */
		if (lo > 0)
			cerr(c, path, "'minItems' %zu with no items allowed", lo);
		llm_buf_printf(&c->out, "%s ::= \"[\" space \"]\" space\n", name);
		return;
	}
	llm_buf_printf(&c->out, "%s ::= \"[\" space %s%s ( \",\" space %s )", name, lo ? "" : "( ", it, it);
	bounds(&c->out, lo ? lo - 1 : 0, hi == SIZE_MAX ? SIZE_MAX : hi - 1);
	llm_buf_printf(&c->out, "%s \"]\" space\n", lo ? "" : " )?");
}

static void
gen_string(struct conv *c, json_t *s, const char *name, const char *path)
{
	size_t lo = count_of(c, s, "minLength", path, 0), hi = count_of(c, s, "maxLength", path, SIZE_MAX);
	json_t *fmt = json_object_get(s, "format"); /* borrowed */
	if (hi < lo)
		cerr(c, path, "'maxLength' %zu is below 'minLength' %zu", hi, lo);
	if (json_is_string(fmt) && strcmp(json_string_value(fmt), "uuid") == 0) {
		llm_buf_printf(&c->out, "%s ::= %s\n", name, prim(c, "uuid"));
		return;
	}
	if (lo == 0 && hi == SIZE_MAX) {
		llm_buf_printf(&c->out, "%s ::= %s\n", name, prim(c, "string"));
		return;
	}
	prim(c, "char");
	prim(c, "space");
	llm_buf_printf(&c->out, "%s ::= \"\\\"\" char", name);
	bounds(&c->out, lo, hi);
	llm_buf_puts(&c->out, " \"\\\"\" space\n");
}

static void
gen_type(struct conv *c, json_t *s, const char *type, const char *name, const char *path)
{
	if (strcmp(type, "object") == 0)
		gen_object(c, s, name, path);
	else if (strcmp(type, "array") == 0)
		gen_array(c, s, name, path);
	else if (strcmp(type, "string") == 0)
		gen_string(c, s, name, path);
	else if (strcmp(type, "number") == 0 || strcmp(type, "integer") == 0 || strcmp(type, "boolean") == 0 ||
	    strcmp(type, "null") == 0)
		llm_buf_printf(&c->out, "%s ::= %s\n", name, prim(c, type));
	else
		cerr(c, path, "unknown type '%s'", type);
}

/* allOf: object schemas merged into one. */
static json_t *
merge_all_of(struct conv *c, json_t *s, json_t *all, const char *path)
{
	json_t *m = json_object(), *parts = json_array();
	int closed = 0;
	json_array_append_new(c->json, m);
	json_array_append_new(c->json, parts);
	json_object_set_new(m, "type", json_string("object"));
	json_object_set_new(m, "properties", json_object());
	json_object_set_new(m, "required", json_array());
	json_t *props = json_object_get(m, "properties"), *req = json_object_get(m, "required"); /* borrowed */
	json_array_append(parts, s);
	for (size_t i = 0; i < json_array_size(all); i++)
		json_array_append(parts, json_array_get(all, i));
	for (size_t i = 0; i < json_array_size(parts); i++) {
		json_t *p = json_array_get(parts, i), *r; /* borrowed */
		for (int hops = 0; json_is_object(p) && (r = json_object_get(p, "$ref")) && json_is_string(r); hops++) {
			if (hops > 32)
				cerr(c, path, "'allOf': $ref refers to itself");
			p = resolve(c, json_string_value(r), path);
		}
		json_t *t = json_object_get(p, "type"); /* borrowed */
		if (!json_is_object(p) || (t && !(json_is_string(t) && strcmp(json_string_value(t), "object") == 0)) ||
		    json_object_get(p, "anyOf") || json_object_get(p, "oneOf") || (i && json_object_get(p, "allOf")))
			cerr(c, path, "'allOf' is supported for object schemas (type object, properties) only");
		json_t *pp = json_object_get(p, "properties"), *rq = json_object_get(p, "required"), *v;
		const char *k;
		json_object_foreach (pp, k, v)
			json_object_set(props, k, v);
		for (size_t j = 0; json_is_array(rq) && j < json_array_size(rq); j++)
			json_array_append(req, json_array_get(rq, j));
		if (json_is_false(json_object_get(p, "additionalProperties")))
			closed = 1;
	}
	if (closed)
		json_object_set_new(m, "additionalProperties", json_false());
	return m;
}

/* The rule name ::= what schema s allows. */
static void
gen(struct conv *c, json_t *s, const char *name, const char *path)
{
	if (json_is_true(s)) {
		llm_buf_printf(&c->out, "%s ::= %s\n", name, prim(c, "value"));
		return;
	}
	if (json_is_false(s))
		cerr(c, path, "the schema false allows nothing");
	if (!json_is_object(s))
		cerr(c, path, "a schema is an object or a boolean");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (json_object_get(s, refused[i]))
			cerr(c, path, "'%s' is not supported", refused[i]);
	json_t *ref = json_object_get(s, "$ref"), *v; /* borrowed */
	if (ref) {
		if (!json_is_string(ref))
			cerr(c, path, "'$ref' is not a string");
		const char *r = json_string_value(ref);
		for (size_t i = 0; i < c->nrefs; i += 2)
			if (strcmp(c->refs[i], r) == 0) {
				llm_buf_printf(&c->out, "%s ::= %s\n", name, c->refs[i + 1]);
				return;
			}
		json_t *t = resolve(c, r, path);
		const char *slash = strrchr(r, '/');
		const char *target = strcmp(r, "#") == 0 ? "root" : fresh(c, slash ? slash + 1 : "ref");
		c->refs = llm_xreallocarray(c->refs, c->nrefs + 2, sizeof(*c->refs));
		c->refs[c->nrefs++] = llm_xstrdup(r);
		c->refs[c->nrefs++] = llm_xstrdup(target);
		llm_buf_printf(&c->out, "%s ::= %s\n", name, target);
		if (strcmp(r, "#") != 0)
			gen(c, t, target, r + 1);
		return;
	}
	if ((v = json_object_get(s, "const"))) {
		prim(c, "space"); /* first: prim writes its rule to c->out */
		llm_buf_printf(&c->out, "%s ::= ", name);
		json_literal(&c->out, v);
		llm_buf_puts(&c->out, " space\n");
		return;
	}
	if ((v = json_object_get(s, "enum"))) {
		if (!json_is_array(v) || json_array_size(v) == 0)
			cerr(c, path, "'enum' is not an array of values");
		prim(c, "space");
		llm_buf_printf(&c->out, "%s ::= ( ", name);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				llm_buf_puts(&c->out, " | ");
			json_literal(&c->out, json_array_get(v, i));
		}
		llm_buf_puts(&c->out, " ) space\n");
		return;
	}
	json_t *any = json_object_get(s, "anyOf"); /* borrowed */
	const char *anykey = "anyOf";
	if (!any) {
		any = json_object_get(s, "oneOf");
		anykey = "oneOf";
	}
	if (any) {
		if (!json_is_array(any) || json_array_size(any) == 0)
			cerr(c, path, "'%s' is not an array of schemas", anykey);
		if (json_object_get(s, "type") || json_object_get(s, "properties") || json_object_get(s, "items"))
			cerr(c, path, "'%s' beside 'type', 'properties' or 'items' is not supported", anykey);
		struct llm_buf *b = newbuf(c);
		for (size_t i = 0; i < json_array_size(any); i++) {
			const char *r = sub(c, json_array_get(any, i), hf(c, "%s-%zu", name, i),
			    hf(c, "%s/%s/%zu", path, anykey, i));
			llm_buf_printf(b, "%s%s", i ? " | " : "", r);
		}
		llm_buf_printf(&c->out, "%s ::= %s\n", name, b->p);
		return;
	}
	json_t *all = json_object_get(s, "allOf"); /* borrowed */
	if (all) {
		if (!json_is_array(all))
			cerr(c, path, "'allOf' is not an array of schemas");
		gen_object(c, merge_all_of(c, s, all, path), name, path);
		return;
	}
	json_t *type = json_object_get(s, "type"); /* borrowed */
	if (json_is_string(type)) {
		gen_type(c, s, json_string_value(type), name, path);
	} else if (json_is_array(type) && json_array_size(type)) {
		struct llm_buf *b = newbuf(c);
		for (size_t i = 0; i < json_array_size(type); i++) {
			json_t *t = json_array_get(type, i); /* borrowed */
			if (!json_is_string(t))
				cerr(c, path, "'type' holds something other than a string");
			const char *r = fresh(c, hf(c, "%s-%s", name, json_string_value(t)));
			gen_type(c, s, json_string_value(t), r, path);
			llm_buf_printf(b, "%s%s", i ? " | " : "", r);
		}
		llm_buf_printf(&c->out, "%s ::= %s\n", name, b->p);
	} else if (type) {
		cerr(c, path, "'type' is not a string or an array of strings");
	} else if (json_object_get(s, "properties") || json_object_get(s, "additionalProperties") ||
	    json_object_get(s, "required")) {
		gen_object(c, s, name, path);
	} else if (json_object_get(s, "items") || json_object_get(s, "prefixItems")) {
		gen_array(c, s, name, path);
	} else if (json_object_get(s, "minLength") || json_object_get(s, "maxLength")) {
		gen_string(c, s, name, path);
	} else {
		llm_buf_printf(&c->out, "%s ::= %s\n", name, prim(c, "value"));
	}
}

/* Free what a conversion holds but its output. */
static void
conv_free(struct conv *c)
{
	for (size_t i = 0; i < c->nnames; i++)
		free(c->names[i]);
	free(c->names);
	llm_smap_free(&c->taken);
	llm_buf_free(&c->pool);
	for (size_t i = 0; i < c->nrefs; i++)
		free(c->refs[i]);
	free(c->refs);
	llm_buf_free(&c->out);
	for (size_t i = 0; i < c->nheld; i++)
		free(c->held[i]);
	free(c->held);
	for (size_t i = 0; i < c->nbufs; i++) {
		llm_buf_free(c->bufs[i]);
		free(c->bufs[i]);
	}
	free(c->bufs);
	json_decref(c->json);
}

char *
llm_json_schema_rules(const json_t *const *schemas, const char *const *names, const char *const *paths, size_t n)
{
	struct conv c = {0};
	char *volatile ret = NULL; /* set after the jump's point */
	c.json = json_array();
	/* the rules' names are taken before any is made */
	for (size_t i = 0; i < n; i++) {
		take(&c, llm_xstrdup(names[i]));
	}
	if (!setjmp(c.jb)) {
		for (size_t i = 0; i < n; i++) {
			/* each schema's references are its own */
			for (size_t k = 0; k < c.nrefs; k++)
				free(c.refs[k]);
			c.nrefs = 0;
			c.root = (json_t *)schemas[i];
			gen(&c, c.root, names[i], paths ? paths[i] : "");
		}
		ret = llm_xstrndup(c.out.p ? c.out.p : "", c.out.len);
	}
	conv_free(&c);
	return ret;
}

char *
llm_json_schema_grammar(const char *schema, size_t len)
{
	json_error_t e;
	json_t *root = json_loadb(schema, len, JSON_DECODE_ANY, &e);
	if (!root) {
		llm_seterr("line %d, column %d: %s", e.line, e.column, e.text);
		return NULL;
	}
	static const char *const names[] = {"root"};
	const json_t *const schemas[] = {root};
	char *ret = llm_json_schema_rules(schemas, names, NULL, 1);
	json_decref(root);
	if (!ret)
		return NULL;
	struct llm_grammar *g = llm_grammar_parse(ret, strlen(ret));
	if (!g) {
		/* only a schema that refers to itself before any text */
		llm_seterr("the grammar made of the schema is refused (a $ref to itself before any JSON text?): %s",
		    llm_errmsg());
		free(ret);
		return NULL;
	}
	llm_grammar_free(g);
	return ret;
}
