/* Unit tests for lib/formats/target.c's table of kernel forms: each kind
 * ends in a row that every target has, each kernel form has its file in
 * share/llm/kernels/, and the transform forms are the transform ISA
 * lists: the folders of share/llm/transforms/ (each with its scripts),
 * mkscript.py's ISA table and the Makefile's TRANSFORM_ISAS.  And the
 * choosers pick as target.h says for a few targets. */
#include <dirent.h>
#include <sys/stat.h>

#include "../../lib/base/util.h"
#include "../../lib/formats/target.h"
#include "t.h"

#define TRANSFORMS "share/llm/transforms"

static int
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* The row of kind named name, or NULL. */
static const struct llm_target_form *
row(enum llm_form_kind kind, const char *name)
{
	for (size_t i = 0; i < llm_target_nforms; i++)
		if (llm_target_forms[i].kind == kind && strcmp(llm_target_forms[i].name, name) == 0)
			return &llm_target_forms[i];
	return NULL;
}

/* The words of the list text (names between quotes before a colon, for
 * a Python dict, or blank-separated), each checked against the transform
 * rows: a row named, with a folder of its own unless top is that name.
 * The number of words, or -1 after a failed check (said on stderr). */
static int
check_list(const char *label, const char *text, int dict, const char *top)
{
	int n = 0;
	char w[64];
	for (const char *p = text; *p;) {
		size_t len;
		if (dict) {
			if (*p++ != '"')
				continue;
			len = strcspn(p, "\"");
			if (p[len] != '"' || p[len + 1] != ':') {
				p += len + (p[len] != 0);
				continue;
			}
		} else {
			p += strspn(p, " \t");
			if (!(len = strcspn(p, " \t")))
				break;
		}
		snprintf(w, sizeof(w), "%.*s", (int)len, p);
		p += len + (dict != 0);
		const struct llm_target_form *f = row(LLM_FORM_TRANSFORMS, w);
		if (!f || f->value != (strcmp(w, top) != 0)) {
			fprintf(stderr, "%s: '%s': %s\n", label, w,
			    !f ? "not a transform form of target.c's table" : "its folder is not the table's");
			return -1;
		}
		n++;
	}
	return n;
}

T_TEST(each_kind_ends_in_a_row_for_every_target)
{
	for (int k = LLM_FORM_INT8; k <= LLM_FORM_BF16_CONVERT; k++) {
		size_t last = llm_target_nforms;
		for (size_t i = 0; i < llm_target_nforms; i++)
			if ((int)llm_target_forms[i].kind == k)
				last = i;
		T_CHECKF(last < llm_target_nforms, "kind %d: no rows", k);
		T_CHECKF(!llm_target_forms[last].arch && !llm_target_forms[last].needs[0][0],
		    "kind %d: the last row, '%s', is not every target's", k, llm_target_forms[last].name);
	}
}

T_TEST(kernel_forms_have_their_files)
{
	for (size_t i = 0; i < llm_target_nforms; i++) {
		if (llm_target_forms[i].kind >= LLM_FORM_NKERNEL)
			continue;
		char path[256];
		snprintf(path, sizeof(path), "share/llm/kernels/%s.mlir", llm_target_forms[i].name);
		T_CHECKF(exists(path), "%s: missing", path);
		T_CHECKF(row(llm_target_forms[i].kind, llm_target_forms[i].name) == &llm_target_forms[i], "'%s': twice",
		    llm_target_forms[i].name);
	}
}

/* Each transform form with a folder has both scripts there, the top-level
 * one (value 0, exactly one) has them at the top, and every folder there
 * is a form's. */
T_TEST(transform_forms_are_the_folders)
{
	int top = 0;
	for (size_t i = 0; i < llm_target_nforms; i++) {
		const struct llm_target_form *f = &llm_target_forms[i];
		if (f->kind != LLM_FORM_TRANSFORMS)
			continue;
		top += !f->value;
		for (int k = 0; k < 2; k++) {
			char path[256];
			snprintf(path, sizeof(path), TRANSFORMS "%s%s/%s.mlir", f->value ? "/" : "",
			    f->value ? f->name : "", k ? "prefill" : "decode");
			T_CHECKF(exists(path), "%s: missing (make transforms)", path);
		}
	}
	T_CHECKF(top == 1, "%d top-level transform forms", top);
	DIR *d = opendir(TRANSFORMS);
	T_CHECK(d != NULL);
	struct dirent *e;
	int bad = 0;
	while ((e = readdir(d)) && !bad) {
		char path[512];
		struct stat st;
		snprintf(path, sizeof(path), TRANSFORMS "/%s", e->d_name);
		if (e->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
			continue;
		const struct llm_target_form *f = row(LLM_FORM_TRANSFORMS, e->d_name);
		if (!f || !f->value)
			bad = fprintf(stderr, "%s: not a transform form of target.c's table\n", path);
	}
	closedir(d);
	T_CHECK(!bad);
}

/* mkscript.py's ISA table and the Makefile's TRANSFORM_ISAS (the forms
 * `make transforms` writes folders for) name the table's forms, all of
 * them: mkscript.py's the top-level one too, its default ISA. */
T_TEST(transform_forms_are_mkscripts_and_the_makefiles)
{
	size_t nform = 0, nfolder = 0;
	for (size_t i = 0; i < llm_target_nforms; i++)
		if (llm_target_forms[i].kind == LLM_FORM_TRANSFORMS) {
			nform++;
			nfolder += llm_target_forms[i].value != 0;
		}
	const char *top = NULL;
	for (size_t i = 0; i < llm_target_nforms; i++)
		if (llm_target_forms[i].kind == LLM_FORM_TRANSFORMS && !llm_target_forms[i].value)
			top = llm_target_forms[i].name;
	T_CHECK(top != NULL);

	char *text;
	T_CHECK(llm_read_file(TRANSFORMS "/mkscript.py", &text, NULL) == 0);
	char *isa = strstr(text, "\nISA = {"), *def = strstr(text, "\nisa = \"");
	T_CHECKF(isa && def, "mkscript.py: no line 'ISA = {...}' or 'isa = \"...\"'");
	isa[strcspn(isa + 1, "\n") + 1] = 0;
	def += 8;
	def[strcspn(def, "\"")] = 0;
	int n = check_list("mkscript.py: ISA", isa, 1, top);
	T_CHECKF(strcmp(def, top) == 0, "mkscript.py: the default ISA is '%s', the table's top-level form '%s'", def,
	    top);
	free(text);
	T_CHECKF(n == (int)nform, "mkscript.py: %d ISAs, the table %zu transform forms", n, nform);

	T_CHECK(llm_read_file("Makefile", &text, NULL) == 0);
	char *mk = strstr(text, "\nTRANSFORM_ISAS =");
	T_CHECKF(mk, "Makefile: no line 'TRANSFORM_ISAS = ...'");
	mk += strlen("\nTRANSFORM_ISAS =");
	mk[strcspn(mk, "\n")] = 0;
	n = check_list("Makefile: TRANSFORM_ISAS", mk, 0, top);
	free(text);
	T_CHECKF(n == (int)nfolder, "Makefile: %d TRANSFORM_ISAS, the table %zu folders", n, nfolder);
}

/* A target of triple and features (blank-separated), the choosers' words. */
static void
choose(const char *triple, const char *features, char *out, size_t n)
{
	char *copy = llm_xstrdup(features), *fv[16], *save = NULL;
	struct llm_target t = {(char *)triple, "test", fv, 0};
	for (char *f = strtok_r(copy, " ", &save); f && t.nfeatures < 16; f = strtok_r(NULL, " ", &save))
		fv[t.nfeatures++] = f;
	const char *tr = llm_target_transforms(&t);
	snprintf(out, n, "%s %s %d %s %d %d %s", llm_target_kernels(&t), llm_target_bf16_kernels(&t),
	    llm_target_bf16_activations(&t), llm_target_tile_kernels(&t), llm_target_bf16_convert(&t),
	    llm_target_vector_registers(&t), tr ? tr : "-");
	free(copy);
}

T_TEST(choosers_pick_as_target_h_says)
{
	static const struct {
		const char *triple, *features, *want;
	} c[] = {
		{"x86_64-pc-linux-gnu", "", "generic bf16-generic 0 tile-generic 0 16 -"},
		{"x86_64-pc-linux-gnu", "avx avx2 fma", "avx2 bf16-generic 0 tile-generic 0 16 -"},
		{"x86_64-pc-linux-gnu", "avx2 avx_vnni", "vnni bf16-generic 0 tile-generic 0 16 -"},
		{"x86_64-pc-linux-gnu", "avx2 avx512f avx512bw avx512vl",
			"avx2 bf16-generic 0 tile-generic 0 32 avx512"},
		{"x86_64-pc-linux-gnu", "avx2 avx512f avx512vl avx512_vnni", "vnni bf16-generic 0 tile-generic 0 32 -"},
		{"x86_64-pc-linux-gnu", "avx2 avx512f avx512bw avx512vl avx512_vnni avx512_bf16",
			"vnni512 bf16-avx512 1 tile-generic 0 32 avx512"},
		{"x86_64-pc-linux-gnu", "amx_tile amx_int8 amx_bf16", "generic bf16-generic 0 amx 0 16 -"},
		{"x86_64-pc-linux-gnu", "amx_tile amx_int8", "generic bf16-generic 0 tile-generic 0 16 -"},
		{"riscv64-unknown-linux-gnu", "m a f d c", "generic bf16-generic 0 tile-generic 0 0 -"},
		{"riscv64-unknown-linux-gnu", "m a f d c v", "rvv bf16-generic 0 tile-generic 0 0 rvv"},
		{"riscv64-unknown-linux-gnu", "v zvfbfmin", "rvv bf16-generic 0 tile-generic 1 0 rvv"},
		{"riscv64-unknown-linux-gnu", "zvfbfmin", "generic bf16-generic 0 tile-generic 0 0 -"},
	};
	for (size_t i = 0; i < LLM_NELEM(c); i++) {
		char got[256];
		choose(c[i].triple, c[i].features, got, sizeof(got));
		T_CHECKF(strcmp(got, c[i].want) == 0, "%s [%s]: '%s', not '%s'", c[i].triple, c[i].features, got,
		    c[i].want);
	}
}

int
main(void)
{
	T_RUN(each_kind_ends_in_a_row_for_every_target);
	T_RUN(kernel_forms_have_their_files);
	T_RUN(transform_forms_are_the_folders);
	T_RUN(transform_forms_are_mkscripts_and_the_makefiles);
	T_RUN(choosers_pick_as_target_h_says);
	return T_DONE();
}
