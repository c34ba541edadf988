/* tune.c: see tune.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../base/json.h"
#include "../formats/target.h"
#include "tune.h"

/* a table */
/* clang-format off */
const struct llm_tune_param llm_tune_params[] = {
	/* decode's one-row int8 pass: how far ahead W's codes are
	 * prefetched, for 256-byte groups (Q8_0's 8 rows of 32 codes) */
	{"decode.prefetch_bytes.g256", 0, 1 << 20},
	/* the same for 128-byte groups (4-bit codes, Q6_K's pairs of 16) */
	{"decode.prefetch_bytes.g128", 0, 1 << 20},
	/* prefill's products with int8 activations: 1 in blocks of 8 rows
	 * of W by 16 of x on the tile kernel (@llm_qtile_i8), 0 on the
	 * row passes of the dot-product kernels; -1 (generic's) by the
	 * target: the tiles where they are AMX's (llm_tune_settle) */
	{"prefill.int8_tiles", -1, 1},
	/* prefill's products with bf16 weights and activations: 1 in blocks
	 * of 16 rows of W by 16 of x on the tile kernel (@llm_qtile_bf16), 0
	 * on the bf16 kernel's row passes; -1 by the target, as above */
	{"prefill.bf16_tiles", -1, 1},
	/* prefill's row passes of the bf16 products and of the int8 ones
	 * with 4-bit codes without offsets (Q4_0): 1 three rows of x a pass,
	 * 0 two; -1 by the target: three where it has 32 vector registers
	 * (three spill on AVX2's 16: BENCHMARKS.md "Rows of x a pass by
	 * the target") */
	{"prefill.three_rows", -1, 1},
};
/* clang-format on */
const size_t llm_tune_nparams = LLM_NELEM(llm_tune_params);

static int
param_index(const char *name, size_t n)
{
	for (size_t i = 0; i < llm_tune_nparams; i++)
		if (strlen(llm_tune_params[i].name) == n && memcmp(llm_tune_params[i].name, name, n) == 0)
			return (int)i;
	return -1;
}

/* The params of entry e (the table's cpus.NAME) into v; all: every
 * parameter must be there. */
static int
read_entry(const json_t *e, const char *path, const char *name, int all, int64_t *v, int *set)
{
	const json_t *p = json_is_object(e) ? json_object_get(e, "params") : NULL;
	const char *k;
	json_t *val;
	if (!json_is_object(p))
		return llm_seterr("%s: cpus.%s: no \"params\" object", path, name);
	json_object_foreach ((json_t *)p, k, val) {
		int i = param_index(k, strlen(k));
		if (i < 0)
			return llm_seterr("%s: cpus.%s: unknown parameter '%s'", path, name, k);
		if (!json_is_integer(val) || json_integer_value(val) < llm_tune_params[i].min ||
		    json_integer_value(val) > llm_tune_params[i].max)
			return llm_seterr("%s: cpus.%s: %s: want an integer in [%" PRId64 ", %" PRId64 "]", path, name,
			    k, llm_tune_params[i].min, llm_tune_params[i].max);
		v[i] = json_integer_value(val);
		set[i] = 1;
	}
	for (size_t i = 0; all && i < llm_tune_nparams; i++)
		if (!set[i])
			return llm_seterr("%s: cpus.%s: parameter '%s' missing", path, name, llm_tune_params[i].name);
	return 0;
}

int
llm_tune_load(const char *path, const char *cpu, struct llm_tune *t)
{
	const char *fmt;
	int rc = -1;
	int *set = llm_xcalloc(llm_tune_nparams, sizeof(*set));
	memset(t, 0, sizeof(*t));
	json_t *j = llm_json_load(path);
	if (!j)
		goto out;
	if (llm_json_str(j, "format", path, &fmt) < 0)
		goto out;
	if (strcmp(fmt, LLM_TUNE_FORMAT) != 0) {
		llm_seterr("%s: format '%s' is not %s", path, fmt, LLM_TUNE_FORMAT);
		goto out;
	}
	const json_t *cpus = json_object_get(j, "cpus");
	if (!json_is_object(cpus)) {
		llm_seterr("%s: no \"cpus\" object", path);
		goto out;
	}
	t->values = llm_xcalloc(llm_tune_nparams, sizeof(*t->values));
	if (read_entry(json_object_get(cpus, "generic"), path, "generic", 1, t->values, set) < 0)
		goto out;
	/* Every entry is checked, not only the one used: a table that is
	 * wrong for another CPU is wrong. */
	const char *k;
	json_t *e;
	json_object_foreach ((json_t *)cpus, k, e) {
		int64_t *v = llm_xcalloc(llm_tune_nparams, sizeof(*v));
		int *s = llm_xcalloc(llm_tune_nparams, sizeof(*s));
		int r = read_entry(e, path, k, 0, v, s);
		if (r == 0 && cpu && strcmp(k, cpu) == 0)
			for (size_t i = 0; i < llm_tune_nparams; i++)
				if (s[i])
					t->values[i] = v[i];
		free(v);
		free(s);
		if (r < 0)
			goto out;
	}
	t->entry = llm_xstrdup(cpu && json_object_get(cpus, cpu) ? cpu : "generic");
	rc = 0;
out:
	if (rc < 0)
		llm_tune_free(t);
	json_decref(j);
	free(set);
	return rc;
}

void
llm_tune_settle(struct llm_tune *t, const struct llm_target *tg)
{
	/* the parameters whose -1 is the target's, and its value */
	const struct {
		const char *name;
		int v;
	} by_target[] = {
		{"prefill.int8_tiles", strcmp(llm_target_tile_kernels(tg), "amx") == 0},
		{"prefill.bf16_tiles", strcmp(llm_target_tile_kernels(tg), "amx") == 0},
		{"prefill.three_rows", llm_target_vector_registers(tg) >= 32},
	};
	for (size_t j = 0; j < LLM_NELEM(by_target); j++) {
		int i = param_index(by_target[j].name, strlen(by_target[j].name));
		if (t->values[i] < 0)
			t->values[i] = by_target[j].v;
	}
}

void
llm_tune_free(struct llm_tune *t)
{
	free(t->entry);
	free(t->values);
	memset(t, 0, sizeof(*t));
}

char *
llm_tune_describe(const struct llm_tune *t)
{
	struct llm_buf b = {0};
	for (size_t i = 0; i < llm_tune_nparams; i++)
		llm_buf_printf(&b, "%s%s=%" PRId64, i ? " " : "", llm_tune_params[i].name, t->values[i]);
	llm_buf_add(&b, "", 1);
	return b.p;
}

/* Line number of p in text, for messages. */
static size_t
line_of(const char *text, const char *p)
{
	size_t n = 1;
	for (const char *q = text; q < p; q++)
		n += *q == '\n';
	return n;
}

int
llm_tune_apply(const struct llm_tune *t, const char *text, size_t len, struct llm_buf *out, size_t *n,
    const char *label)
{
	static const char key[] = "{llm.tune = \"", unit[] = ", llm.tune_unit = ";
	const char *p = text, *end = text + len, *at;
	*n = 0;
	while ((at = memmem(p, (size_t)(end - p), key, sizeof(key) - 1))) {
		/* {llm.tune = "NAME", llm.tune_unit = U : i64} V : index */
		const char *name = at + sizeof(key) - 1, *q = memchr(name, '"', (size_t)(end - name));
		char *e;
		if (!q || (size_t)(end - q) < sizeof(unit) || memcmp(q + 1, unit, sizeof(unit) - 1) != 0)
			return llm_seterr("%s:%zu: a tunable constant without llm.tune_unit", label, line_of(text, at));
		int i = param_index(name, (size_t)(q - name));
		if (i < 0)
			return llm_seterr("%s:%zu: unknown tunable parameter '%.*s'", label, line_of(text, at),
			    (int)(q - name), name);
		long long u = strtoll(q + sizeof(unit), &e, 10);
		if (u < 1 || strncmp(e, " : i64} ", 8) != 0)
			return llm_seterr("%s:%zu: %s: a bad llm.tune_unit", label, line_of(text, at),
			    llm_tune_params[i].name);
		const char *v = e + 8;
		strtoll(v, &e, 10);
		if (e == v || strncmp(e, " : index", 8) != 0)
			return llm_seterr("%s:%zu: %s: not an index constant", label, line_of(text, at),
			    llm_tune_params[i].name);
		llm_buf_add(out, p, (size_t)(v - p));
		llm_buf_printf(out, "%" PRId64, t->values[i] / (int64_t)u);
		p = e;
		(*n)++;
	}
	llm_buf_add(out, p, (size_t)(end - p));
	return 0;
}
