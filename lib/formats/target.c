/* target.c: see target.h. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../base/json.h"
#include "../base/spawn.h"
#include "target.h"
#include "../base/util.h"

/* The x86 extensions LLVM's code generator can use: clang's predefined
 * macro for it, its name (as /proc/cpuinfo spells it), and where CPUID
 * reports it (leaf, subleaf, register EAX..EDX = 0..3, bit), with the
 * register state the OS must enable for it (XCR0 bits: 0x6 AVX, 0xe6
 * AVX-512, 0x60000 the AMX tile configuration and data).  The host check reads CPUID, as LLVM's host detection does
 * (a hypervisor's /proc/cpuinfo may omit a flag the CPU has). */
/* a table */
/* clang-format off */
static const struct {
	const char *macro, *name;
	unsigned leaf, sub, reg, bit, xcr0;
} x86_ext[] = {
	{"__SSE3__", "pni", 1, 0, 2, 0, 0}, {"__PCLMUL__", "pclmulqdq", 1, 0, 2, 1, 0},
	{"__SSSE3__", "ssse3", 1, 0, 2, 9, 0}, {"__FMA__", "fma", 1, 0, 2, 12, 0x6},
	{"__SSE4_1__", "sse4_1", 1, 0, 2, 19, 0}, {"__SSE4_2__", "sse4_2", 1, 0, 2, 20, 0},
	{"__MOVBE__", "movbe", 1, 0, 2, 22, 0}, {"__POPCNT__", "popcnt", 1, 0, 2, 23, 0},
	{"__AES__", "aes", 1, 0, 2, 25, 0}, {"__AVX__", "avx", 1, 0, 2, 28, 0x6},
	{"__F16C__", "f16c", 1, 0, 2, 29, 0x6}, {"__BMI__", "bmi1", 7, 0, 1, 3, 0},
	{"__AVX2__", "avx2", 7, 0, 1, 5, 0x6}, {"__BMI2__", "bmi2", 7, 0, 1, 8, 0},
	{"__AVX512F__", "avx512f", 7, 0, 1, 16, 0xe6}, {"__AVX512DQ__", "avx512dq", 7, 0, 1, 17, 0xe6},
	{"__ADX__", "adx", 7, 0, 1, 19, 0}, {"__AVX512IFMA__", "avx512ifma", 7, 0, 1, 21, 0xe6},
	{"__AVX512CD__", "avx512cd", 7, 0, 1, 28, 0xe6}, {"__SHA__", "sha_ni", 7, 0, 1, 29, 0},
	{"__AVX512BW__", "avx512bw", 7, 0, 1, 30, 0xe6}, {"__AVX512VL__", "avx512vl", 7, 0, 1, 31, 0xe6},
	{"__AVX512VBMI__", "avx512vbmi", 7, 0, 2, 1, 0xe6}, {"__AVX512VBMI2__", "avx512_vbmi2", 7, 0, 2, 6, 0xe6},
	{"__GFNI__", "gfni", 7, 0, 2, 8, 0}, {"__VAES__", "vaes", 7, 0, 2, 9, 0x6},
	{"__VPCLMULQDQ__", "vpclmulqdq", 7, 0, 2, 10, 0x6}, {"__AVX512VNNI__", "avx512_vnni", 7, 0, 2, 11, 0xe6},
	{"__AVX512BITALG__", "avx512_bitalg", 7, 0, 2, 12, 0xe6},
	{"__AVX512VPOPCNTDQ__", "avx512_vpopcntdq", 7, 0, 2, 14, 0xe6},
	{"__AVX512VP2INTERSECT__", "avx512_vp2intersect", 7, 0, 3, 8, 0xe6},
	{"__AVX512FP16__", "avx512_fp16", 7, 0, 3, 23, 0xe6}, {"__AVXVNNI__", "avx_vnni", 7, 1, 0, 4, 0x6},
	{"__AVX512BF16__", "avx512_bf16", 7, 1, 0, 5, 0xe6}, {"__AVXIFMA__", "avx_ifma", 7, 1, 0, 23, 0x6},
	{"__AVXVNNIINT8__", "avx_vnni_int8", 7, 1, 3, 4, 0x6}, {"__LZCNT__", "abm", 0x80000001, 0, 2, 5, 0},
	{"__AMX_BF16__", "amx_bf16", 7, 0, 3, 22, 0x60000}, {"__AMX_TILE__", "amx_tile", 7, 0, 3, 24, 0x60000},
	{"__AMX_INT8__", "amx_int8", 7, 0, 3, 25, 0x60000},
};
/* clang-format on */

static int
has_feature(const struct llm_target *t, const char *f)
{
	for (size_t i = 0; i < t->nfeatures; i++)
		if (strcmp(t->features[i], f) == 0)
			return 1;
	return 0;
}

static int
is_riscv(const char *triple)
{
	return strncmp(triple, "riscv", 5) == 0;
}

/* The table of target.h: each row a form, with what a target needs for
 * it.  The ISA of a row is its own: AVX-512 VNNI with BW for 512-bit
 * vpdpbusd, with VL (or AVX-VNNI) for 256-bit; vdpbf16ps wants AVX-512 F
 * beside AVX512-BF16; the AMX kernels use all three tile extensions. */
/* clang-format off */
const struct llm_target_form llm_target_forms[] = {
	{LLM_FORM_INT8, "vnni512", NULL, {{"avx512_vnni", "avx512bw"}}, 0},
	{LLM_FORM_INT8, "vnni", NULL, {{"avx512_vnni", "avx512vl"}, {"avx_vnni"}}, 0},
	{LLM_FORM_INT8, "rvv", "riscv", {{"v"}}, 0},
	{LLM_FORM_INT8, "avx2", NULL, {{"avx2"}}, 0},
	{LLM_FORM_INT8, "generic", NULL, {{NULL}}, 0},
	{LLM_FORM_BF16, "bf16-avx512", NULL, {{"avx512_bf16", "avx512f"}}, 1},
	{LLM_FORM_BF16, "bf16-generic", NULL, {{NULL}}, 0},
	{LLM_FORM_TILE, "amx", NULL, {{"amx_tile", "amx_int8", "amx_bf16"}}, 0},
	{LLM_FORM_TILE, "tile-generic", NULL, {{NULL}}, 0},
	{LLM_FORM_TRANSFORMS, "avx512", NULL, {{"avx512f", "avx512bw", "avx512vl"}}, 1},
	{LLM_FORM_TRANSFORMS, "rvv", "riscv", {{"v"}}, 1},
	{LLM_FORM_TRANSFORMS, "avx2", NULL, {{NULL}}, 0},
	{LLM_FORM_VREGS, "avx512", NULL, {{"avx512f"}}, 32},
	{LLM_FORM_VREGS, "avx2", "x86_64", {{NULL}}, 16},
	{LLM_FORM_VREGS, "generic", NULL, {{NULL}}, 0},
	{LLM_FORM_BF16_CONVERT, "zvfbfmin", "riscv", {{"v", "zvfbfmin"}}, 1},
	{LLM_FORM_BF16_CONVERT, "expand", NULL, {{NULL}}, 0},
};
/* clang-format on */
const size_t llm_target_nforms = LLM_NELEM(llm_target_forms);

/* 1 if t has form f (target.h). */
static int
form_fits(const struct llm_target_form *f, const struct llm_target *t)
{
	if (f->arch && strncmp(t->triple, f->arch, strlen(f->arch)) != 0)
		return 0;
	if (!f->needs[0][0])
		return 1;
	for (size_t s = 0; s < LLM_NELEM(f->needs) && f->needs[s][0]; s++) {
		size_t i = 0;
		while (i < LLM_NELEM(f->needs[s]) && f->needs[s][i] && has_feature(t, f->needs[s][i]))
			i++;
		if (i == LLM_NELEM(f->needs[s]) || !f->needs[s][i])
			return 1;
	}
	return 0;
}

/* t's row of kind: the first that fits (each kind's last fits all). */
static const struct llm_target_form *
form_of(const struct llm_target *t, enum llm_form_kind kind)
{
	size_t i = 0;
	while (llm_target_forms[i].kind != kind || !form_fits(&llm_target_forms[i], t))
		i++;
	return &llm_target_forms[i];
}

const char *
llm_target_kernels(const struct llm_target *t)
{
	return form_of(t, LLM_FORM_INT8)->name;
}

const char *
llm_target_bf16_kernels(const struct llm_target *t)
{
	return form_of(t, LLM_FORM_BF16)->name;
}

int
llm_target_bf16_activations(const struct llm_target *t)
{
	return form_of(t, LLM_FORM_BF16)->value;
}

const char *
llm_target_tile_kernels(const struct llm_target *t)
{
	return form_of(t, LLM_FORM_TILE)->name;
}

int
llm_target_bf16_convert(const struct llm_target *t)
{
	return form_of(t, LLM_FORM_BF16_CONVERT)->value;
}

int
llm_target_vector_registers(const struct llm_target *t)
{
	return form_of(t, LLM_FORM_VREGS)->value;
}

const char *
llm_target_transforms(const struct llm_target *t)
{
	const struct llm_target_form *f = form_of(t, LLM_FORM_TRANSFORMS);
	return f->value ? f->name : NULL;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
add_feature(struct llm_target *t, const char *f)
{
	if (has_feature(t, f))
		return;
	t->features = llm_xreallocarray(t->features, t->nfeatures + 1, sizeof(*t->features));
	t->features[t->nfeatures++] = llm_xstrdup(f);
}

static void
del_feature(struct llm_target *t, const char *f)
{
	for (size_t i = 0; i < t->nfeatures; i++)
		if (strcmp(t->features[i], f) == 0) {
			free(t->features[i]);
			t->features[i] = t->features[--t->nfeatures];
			return;
		}
}

/* A tool's standard output, as a string (NULL, llm_errmsg, on failure). */
static char *
run_output(char **argv)
{
	const char *tmp = getenv("TMPDIR");
	char *path = llm_xasprintf("%s/llm-target.XXXXXX", tmp && *tmp ? tmp : "/tmp"), *text = NULL;
	int fd = mkstemp(path);
	if (fd < 0) {
		llm_seterr("%s:", path);
		free(path);
		return NULL;
	}
	llm_tmp_track(path); /* a signal while the tool runs removes it too */
	close(fd);
	struct llm_spawn_opts so = {.stdout_path = path, .timeout = 30};
	struct llm_buf err = {0};
	if (llm_spawn(argv, &so, &err) == 0) {
		if (llm_read_file(path, &text, NULL) < 0)
			text = NULL; /* llm_errmsg: the read's */
	} else if (err.len > 0) {
		/* the tool's first line says why ("clang: error: unknown
		 * target CPU 'x'"), after the tool's path alone */
		const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
		size_t n = strcspn(err.p, "\n"), pn = llm_prefix_len(err.p, n, base);
		llm_seterr("%s: %.*s", argv[0], (int)(n - pn), err.p + pn);
	}
	llm_buf_free(&err);
	unlink(path);
	llm_tmp_untrack(path);
	free(path);
	return text;
}

/* Per architecture (the start of a triple, or uname's machine): llc's
 * defaults, compiler-rt's builtins archive, the ELF machine of its code
 * and, for a cross target, the sysroot a link takes by default (what
 * ./configure --target made; "" where none). */
#ifndef LLM_RISCV64_SYSROOT
#define LLM_RISCV64_SYSROOT ""
#endif
static const struct {
	const char *name;
	const char *mattr;    /* llc -mattr the given features follow, or NULL */
	const char *abi;      /* llc -target-abi, or NULL */
	const char *builtins; /* in <libdir>/clang/<major>/lib/linux */
	unsigned machine;     /* ELF e_machine */
	const char *sysroot;
} archs[] = {
	{"x86_64", NULL, NULL, "libclang_rt.builtins-x86_64.a", 62, ""},
	/* RISC-V Linux wants the lp64d ABI and, for our vector code, the V
	 * extension. */
	{"riscv64", "+m,+a,+f,+d,+c,+v", "lp64d", "libclang_rt.builtins-riscv64.a", 243, LLM_RISCV64_SYSROOT},
};

static int
arch_of(const char *triple)
{
	for (size_t i = 0; i < LLM_NELEM(archs); i++)
		if (strncmp(triple, archs[i].name, strlen(archs[i].name)) == 0)
			return (int)i;
	return -1;
}

const char *
llm_target_default_mattr(const char *triple)
{
	int a = arch_of(triple);
	return a < 0 ? NULL : archs[a].mattr;
}

const char *
llm_target_abi(const char *triple)
{
	int a = arch_of(triple);
	return a < 0 ? NULL : archs[a].abi;
}

const char *
llm_target_builtins(const char *arch)
{
	struct utsname u;
	int a;

	if (!arch) {
		if (uname(&u) != 0)
			return NULL;
		arch = u.machine;
	}
	a = arch_of(arch);
	return a < 0 ? NULL : archs[a].builtins;
}

int
llm_target_foreign(const char *triple)
{
	struct utsname u;
	size_t al = strcspn(triple, "-");
	if (uname(&u) != 0)
		return 0;
	return strlen(u.machine) != al || strncmp(u.machine, triple, al) != 0;
}

unsigned
llm_target_elf_machine(const char *triple)
{
	int a = arch_of(triple);
	return a < 0 ? 0 : archs[a].machine;
}

const char *
llm_target_sysroot(const char *triple)
{
	int a = arch_of(triple);
	return a < 0 || !*archs[a].sysroot ? NULL : archs[a].sysroot;
}

int
llm_target_resolve(const char *clang, const char *llc, const char *triple, const char *cpu, const char *mattr,
    struct llm_target *t)
{
	memset(t, 0, sizeof(*t));
	if (triple && arch_of(triple) < 0) {
		/* said before clang, which would blame -march= for it */
		char known[64] = "";
		for (size_t i = 0; i < LLM_NELEM(archs); i++)
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
			    archs[i].name);
		return llm_seterr("target '%s': the architecture '%.*s' is not supported (%s)", triple,
		    (int)strcspn(triple, "-"), triple, known);
	}
	if (triple)
		t->triple = llm_xstrdup(triple);
	else {
		char *argv[] = {(char *)clang, "-dumpmachine", NULL}, *out = run_output(argv);
		if (!out)
			return -1;
		out[strcspn(out, "\r\n")] = 0;
		t->triple = out;
	}
	if (is_riscv(t->triple)) {
		/* llc -mattr letters: "+m,+a,+f,+d,+c,+v" */
		t->cpu = llm_xstrdup(cpu ? cpu : "generic-rv64");
		char *copy = llm_xstrdup(mattr ? mattr : ""), *save = NULL;
		for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save))
			if (f[0] == '+' && f[1])
				add_feature(t, f + 1);
			else if (f[0] == '-' && f[1])
				del_feature(t, f + 1);
		free(copy);
	} else {
		if (!cpu && !triple) {
			char *argv[] = {(char *)llc, "--version", NULL}, *out = run_output(argv);
			char *h = out ? strstr(out, "Host CPU:") : NULL;
			if (h) {
				h += 9;
				h += strspn(h, " \t");
				h[strcspn(h, "\r\n")] = 0;
				t->cpu = llm_xstrdup(h);
			}
			free(out);
		}
		if (!t->cpu)
			t->cpu = llm_xstrdup(cpu ? cpu : "x86-64");
		/* LLVM's own view of what the CPU and features enable */
		struct llm_argv a = {0};
		llm_argv_add(&a, clang);
		llm_argv_addf(&a, "--target=%s", t->triple);
		llm_argv_addf(&a, "-march=%s", cpu ? cpu : triple ? "x86-64" : "native");
		char *copy = llm_xstrdup(mattr ? mattr : ""), *save = NULL;
		for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
			llm_argv_add(&a, "-Xclang");
			llm_argv_add(&a, "-target-feature");
			llm_argv_add(&a, "-Xclang");
			llm_argv_add(&a, f);
		}
		llm_argv_add(&a, "-E");
		llm_argv_add(&a, "-dM");
		llm_argv_add(&a, "-xc");
		llm_argv_add(&a, "/dev/null");
		char *out = run_output(a.v);
		free(copy);
		llm_argv_free(&a);
		if (!out) {
			llm_target_free(t);
			return -1;
		}
		for (size_t i = 0; i < LLM_NELEM(x86_ext); i++) {
			char *m = llm_xasprintf("#define %s ", x86_ext[i].macro);
			if (strstr(out, m))
				add_feature(t, x86_ext[i].name);
			free(m);
		}
		free(out);
	}
	if (t->nfeatures > 1) /* qsort wants a base even for none */
		qsort(t->features, t->nfeatures, sizeof(*t->features), cmp_str);
	return 0;
}

char *
llm_target_json(const struct llm_target *t)
{
	json_t *o = json_object(), *f = json_array();
	for (size_t i = 0; i < t->nfeatures; i++)
		json_array_append_new(f, json_string(t->features[i]));
	json_object_set_new(o, "triple", json_string(t->triple));
	json_object_set_new(o, "cpu", json_string(t->cpu));
	json_object_set_new(o, "features", f);
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	char *r = llm_xasprintf("%s\n", s);
	free(s);
	return r;
}

int
llm_target_parse(const char *text, size_t len, const char *label, struct llm_target *t)
{
	json_t *o = llm_json_loadb(text, len, label), *f;
	const char *triple, *cpu;
	memset(t, 0, sizeof(*t));
	if (!o)
		return -1;
	if (!json_is_object(o) || llm_json_str(o, "triple", label, &triple) < 0 ||
	    llm_json_str(o, "cpu", label, &cpu) < 0) {
		if (!json_is_object(o))
			llm_seterr("%s: expected a JSON object", label);
		json_decref(o);
		return -1;
	}
	if (!json_is_array(f = json_object_get(o, "features"))) {
		json_decref(o);
		return llm_seterr("%s: no array 'features'", label);
	}
	t->triple = llm_xstrdup(triple);
	t->cpu = llm_xstrdup(cpu);
	for (size_t i = 0; i < json_array_size(f); i++) {
		json_t *e = json_array_get(f, i);
		if (!json_is_string(e)) {
			json_decref(o);
			llm_target_free(t);
			return llm_seterr("%s: features[%zu]: expected a string", label, i);
		}
		add_feature(t, json_string_value(e));
	}
	if (t->nfeatures > 1) /* qsort wants a base even for none */
		qsort(t->features, t->nfeatures, sizeof(*t->features), cmp_str);
	json_decref(o);
	return 0;
}

int
llm_target_equal(const struct llm_target *a, const struct llm_target *b)
{
	if (strcmp(a->triple, b->triple) != 0 || strcmp(a->cpu, b->cpu) != 0 || a->nfeatures != b->nfeatures)
		return 0;
	for (size_t i = 0; i < a->nfeatures; i++)
		if (strcmp(a->features[i], b->features[i]) != 0)
			return 0;
	return 1;
}

/* The host's extensions, space-separated with a space on each side:
 * CPUID (with the OS's XCR0) on x86, AT_HWCAP letters on RISC-V. */
static char *
host_features(const char *arch)
{
	struct llm_buf b = {0};
	llm_buf_puts(&b, " ");
	if (strncmp(arch, "riscv", 5) == 0) {
		unsigned long hw = getauxval(AT_HWCAP);
		for (int i = 0; i < 26; i++)
			if (hw & (1UL << i))
				llm_buf_printf(&b, "%c ", 'a' + i);
		/* the multi-letter extensions (zvfbfmin, ...), which AT_HWCAP
		 * has no bits for: the first hart's isa line of /proc/cpuinfo,
		 * "rv64imafdcv_zicsr_zvfbfmin_..." */
		FILE *f = fopen("/proc/cpuinfo", "r");
		char line[4096];
		while (f && fgets(line, sizeof(line), f))
			if (strncmp(line, "isa", 3) == 0 && strchr(line, ':')) {
				char *save = NULL, *isa = strchr(line, ':') + 1;
				isa[strcspn(isa, "\n")] = 0;
				strtok_r(isa, "_", &save); /* the single letters, AT_HWCAP's */
				for (char *e = strtok_r(NULL, "_", &save); e; e = strtok_r(NULL, "_", &save))
					llm_buf_printf(&b, "%s ", e);
				break;
			}
		if (f)
			fclose(f);
		return b.p;
	}
#if defined(__x86_64__) || defined(__i386__)
	unsigned r[4], max = __get_cpuid_max(0, NULL), maxx = __get_cpuid_max(0x80000000, NULL), xcr0 = 0;
	if (max >= 1 && __get_cpuid(1, &r[0], &r[1], &r[2], &r[3]) && (r[2] >> 27 & 1)) {
		unsigned lo, hi;
		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		xcr0 = lo;
	}
	for (size_t i = 0; i < LLM_NELEM(x86_ext); i++) {
		unsigned leaf = x86_ext[i].leaf;
		if ((leaf < 0x80000000 ? leaf > max : leaf > maxx) ||
		    !__get_cpuid_count(leaf, x86_ext[i].sub, &r[0], &r[1], &r[2], &r[3]))
			continue;
		if ((r[x86_ext[i].reg] >> x86_ext[i].bit & 1) && (xcr0 & x86_ext[i].xcr0) == x86_ext[i].xcr0)
			llm_buf_printf(&b, "%s ", x86_ext[i].name);
	}
#endif
	return b.p;
}

/* Linux gives a process the AMX tile data state only when asked, once
 * (threads created later inherit it); the first tile instruction of a
 * process that did not ask raises SIGILL.  0, or -1 with errno. */
static int
amx_permit(void)
{
#if defined(__x86_64__) && defined(SYS_arch_prctl)
	enum { GET_PERM = 0x1022, REQ_PERM = 0x1023, XTILEDATA = 18 };
	unsigned long perm = 0;
	if (syscall(SYS_arch_prctl, REQ_PERM, XTILEDATA) != 0)
		return -1;
	if (syscall(SYS_arch_prctl, GET_PERM, &perm) != 0)
		return -1;
	if (!(perm >> XTILEDATA & 1)) {
		errno = EPERM;
		return -1;
	}
	return 0;
#else
	errno = ENOSYS;
	return -1;
#endif
}

int
llm_target_check_host(const struct llm_target *t, const char *label)
{
	struct utsname u;
	if (uname(&u) != 0)
		return llm_seterr("uname:");
	if (llm_target_foreign(t->triple))
		return llm_seterr("%s: built for %s (%s): this machine is %s", label, t->triple, t->cpu, u.machine);
	char *have = host_features(u.machine);
	struct llm_buf miss = {0};
	for (size_t i = 0; i < t->nfeatures; i++) {
		char *w = llm_xasprintf(" %s ", t->features[i]);
		if (!strstr(have, w))
			llm_buf_printf(&miss, "%s%s", miss.len ? ", " : "", t->features[i]);
		free(w);
	}
	free(have);
	int rc = 0;
	if (miss.len)
		rc = llm_seterr("%s: built for %s (%s): this CPU lacks %s", label, t->cpu, t->triple, miss.p);
	else if (has_feature(t, "amx_tile") && amx_permit() < 0)
		rc = llm_seterr("%s: built for %s (%s) with AMX tiles: Linux refuses this process the tile state "
				"(arch_prctl ARCH_REQ_XCOMP_PERM: %s)",
		    label, t->cpu, t->triple, strerror(errno));
	llm_buf_free(&miss);
	return rc;
}

void
llm_target_free(struct llm_target *t)
{
	for (size_t i = 0; i < t->nfeatures; i++)
		free(t->features[i]);
	free(t->features);
	free(t->triple);
	free(t->cpu);
	memset(t, 0, sizeof(*t));
}

/* The ELF64 little-endian header's checks, shared by the readers below. */
static int
elf64_le(const uint8_t *p, size_t n)
{
	if (n < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 || p[5] != 1)
		return llm_seterr("not an ELF64 little-endian object");
	return 0;
}

int
llm_elf_section(const void *data, size_t n, const char *name, const void **out, size_t *outlen)
{
	const uint8_t *p = data;
	if (elf64_le(p, n) < 0)
		return -1;
	uint64_t shoff = llm_get_le(p + 0x28, 8), shentsize = llm_get_le(p + 0x3a, 2), shnum = llm_get_le(p + 0x3c, 2),
		 shstrndx = llm_get_le(p + 0x3e, 2);
	if (shentsize < 64 || shoff > n || shnum > (n - shoff) / shentsize || shstrndx >= shnum)
		return llm_seterr("bad ELF section headers");
	const uint8_t *strh = p + shoff + shstrndx * shentsize;
	uint64_t stroff = llm_get_le(strh + 24, 8), strsize = llm_get_le(strh + 32, 8);
	if (stroff > n || strsize > n - stroff)
		return llm_seterr("bad ELF section names");
	for (uint64_t i = 0; i < shnum; i++) {
		const uint8_t *h = p + shoff + i * shentsize;
		uint64_t nm = llm_get_le(h, 4), off = llm_get_le(h + 24, 8), size = llm_get_le(h + 32, 8);
		if (nm >= strsize || strnlen((const char *)p + stroff + nm, strsize - nm) == strsize - nm)
			continue;
		if (strcmp((const char *)p + stroff + nm, name) != 0)
			continue;
		if (off > n || size > n - off)
			return llm_seterr("bad ELF section %s", name);
		*out = p + off;
		*outlen = (size_t)size;
		return 1;
	}
	return 0;
}

int
llm_elf_machine(const void *data, size_t n)
{
	if (elf64_le(data, n) < 0)
		return -1;
	return (int)llm_get_le((const uint8_t *)data + 0x12, 2);
}

int
llm_elf_dynsym(const void *data, size_t n, const char *name)
{
	const void *sym, *str;
	size_t nsym, nstr;
	int r;
	if ((r = llm_elf_section(data, n, ".dynsym", &sym, &nsym)) <= 0 ||
	    (r = llm_elf_section(data, n, ".dynstr", &str, &nstr)) <= 0)
		return r;
	/* Elf64_Sym: st_name (4), st_info, st_other, st_shndx (2), value, size */
	for (size_t off = 0; off + 24 <= nsym; off += 24) {
		const uint8_t *e = (const uint8_t *)sym + off;
		uint64_t nm = llm_get_le(e, 4), shndx = llm_get_le(e + 6, 2);
		if (shndx == 0 || nm >= nstr)
			continue; /* undefined: a symbol the object takes, not one it gives */
		if (strnlen((const char *)str + nm, nstr - nm) < nstr - nm && strcmp((const char *)str + nm, name) == 0)
			return 1;
	}
	return 0;
}

char *
llm_host_id(char *buf, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	size_t len = 0;
	int seen = 0;

	buf[0] = 0;
	while (f && seen < 2 && fgets(line, sizeof(line), f))
		if (strncmp(line, "model name", 10) == 0 || strncmp(line, "flags", 5) == 0 ||
		    strncmp(line, "isa", 3) == 0) {
			len += (size_t)snprintf(buf + len, n - len, "%s", line);
			if (len >= n)
				len = n - 1;
			seen++;
		}
	if (f)
		fclose(f);
	return buf;
}
