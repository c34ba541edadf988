/* target.h: the machine a model's objects are compiled for, as data.
 *
 * llm-lower resolves its --target / --cpu / --features (default: this
 * host) into a triple, a CPU name and the exact list of ISA extensions
 * the code generator may use, as LLVM itself enables them (clang's
 * predefined macros for the same triple, CPU and features), and stores it
 * in each object (section .llm.target, JSON); llm-link checks that every
 * object says the same and writes it into the bundle (member
 * target.json); llm-run checks it against the host before loading the
 * code and refuses, naming the wrong architecture or the missing
 * extensions, instead of dying of SIGILL.
 *
 * Extension names are Linux's (/proc/cpuinfo's flags on x86: "avx2",
 * "avx512f", "avx512_bf16", ...; on RISC-V the ISA letters of AT_HWCAP,
 * "v", "f", ..., and the multi-letter extensions of /proc/cpuinfo's isa
 * line, "zvfbfmin", ...).  The x86 table, LLVM's macro and the CPUID bit of each,
 * is target.c's, in one place; the host check reads CPUID, as LLVM's
 * own host detection does. */
#ifndef LLM_TARGET_H
#define LLM_TARGET_H

#include <stddef.h>

#define LLM_TARGET_SECTION ".llm.target"
#define LLM_TARGET_MEMBER "target.json"

struct llm_target {
	char *triple;    /* "x86_64-pc-linux-gnu" */
	char *cpu;       /* "znver5", "x86-64-v3", "generic-rv64" */
	char **features; /* sorted */
	size_t nfeatures;
};

/* Resolve a target with clang (path): triple NULL for the host's, cpu
 * NULL for "native" on the host (recorded as the host CPU's name, from
 * llc, path llc) or the triple's default, mattr an llc -mattr list
 * ("+avx512f,-avx2") or NULL.  0, or -1 with llm_errmsg. */
int llm_target_resolve(const char *clang, const char *llc, const char *triple, const char *cpu, const char *mattr,
    struct llm_target *t);

/* llc's options for a triple that the user leaves out: the -mattr list
 * that the given features (llm-lower --features) follow, adding or
 * taking, and the -target-abi (RISC-V: the lp64d ABI and the V
 * extension).  NULL: none, llc's defaults. */
const char *llm_target_default_mattr(const char *triple);
const char *llm_target_abi(const char *triple);
/* 1 if code for triple does not run on this machine's architecture (a
 * cross target: llm-link links it against a sysroot and cannot load it). */
int llm_target_foreign(const char *triple);
/* The ELF e_machine of triple's code (62 x86-64, 243 RISC-V), 0 if
 * unknown. */
unsigned llm_target_elf_machine(const char *triple);
/* The sysroot a cross link for triple takes by default (./configure
 * --target's), or NULL. */
const char *llm_target_sysroot(const char *triple);
/* The file name of compiler-rt's builtins archive for arch ("x86_64";
 * NULL: this machine's), "libclang_rt.builtins-x86_64.a", or NULL. */
const char *llm_target_builtins(const char *arch);

/* The kernel forms and the ISA facts of targets, one table (target.c's):
 * a row per form of each kind, in the order the choosers try them.  A
 * target t has a row's form when its triple starts with arch (NULL: any)
 * and it has every feature of one of the sets in needs (none: every
 * target); each kind's choice is its first row that t has, and each kind
 * ends in a row that every target has.  The first three kinds are kernel
 * forms, share/llm/kernels/<name>.mlir (ir.txt "Kernels"); tests/unit/
 * test_target.c checks the transform rows against share/llm/transforms/,
 * mkscript.py's ISA table and the Makefile's TRANSFORM_ISAS. */
enum llm_form_kind {
	LLM_FORM_INT8,         /* llm_target_kernels */
	LLM_FORM_BF16,         /* llm_target_bf16_kernels; value: bf16 activations */
	LLM_FORM_TILE,         /* llm_target_tile_kernels */
	LLM_FORM_TRANSFORMS,   /* mkscript.py's ISA; value: 1 with a folder of its own */
	LLM_FORM_VREGS,        /* value: llm_target_vector_registers */
	LLM_FORM_BF16_CONVERT, /* value: llm_target_bf16_convert */
};
#define LLM_FORM_NKERNEL 3 /* the kinds below it are kernel forms */
struct llm_target_form {
	enum llm_form_kind kind;
	const char *name;
	const char *arch;        /* the triple's start, or NULL */
	const char *needs[2][4]; /* sets of features, NULL-terminated */
	int value;
};
extern const struct llm_target_form llm_target_forms[];
extern const size_t llm_target_nforms;

/* The form of the int8 dot-product kernels for t: the file
 * share/llm/kernels/<form>.mlir whose definitions llm-lower puts in place
 * of the declarations of the quantized single-row products (ir.txt
 * "Kernels").  "vnni512" (vpdpbusd on 512 bits: AVX512-VNNI with
 * AVX512-BW), "vnni" (vpdpbusd on 256: AVX512-VNNI with AVX512-VL, or
 * AVX-VNNI), "rvv" (RISC-V with V: 16-bit products, vwmul, widened pair
 * sums), "avx2" (vpmaddubsw + vpmaddwd), "generic" (any other target).
 * Every form computes the same integers. */
const char *llm_target_kernels(const struct llm_target *t);
/* The form of the bf16 dot-product kernel for t (@llm_bdot, the products
 * with bf16 activations: ir.txt "Kernels"): "bf16-avx512" (vdpbf16ps:
 * AVX512-BF16 with AVX-512 F), "bf16-generic" (any other target). */
const char *llm_target_bf16_kernels(const struct llm_target *t);
/* 1 if bf16 weights take bf16 activations by default on t (llm-import
 * --activations auto): where the bf16 kernel is vdpbf16ps, whose prefill
 * measured 1.55-1.83x the f32 products on a Zen 5, where the portable
 * form's was 0.37x on AVX2 (BENCHMARKS.md, "Fast defaults"). */
int llm_target_bf16_activations(const struct llm_target *t);
/* The form of the tile kernels for t (@llm_qtile_i8 and @llm_qtile_bf16,
 * prefill's products in blocks of 8 or 16 rows of W by 16 rows of x:
 * ir.txt "Kernels"): "amx" (tdpbssd and tdpbf16ps: AMX-TILE with AMX-INT8
 * and AMX-BF16), "tile-generic" (vector arithmetic, any other target; the
 * same integers, the same sums but where AMX reads denormals as zero). */
const char *llm_target_tile_kernels(const struct llm_target *t);
/* 1 if t's vector unit converts bf16 to and from f32 itself, so that the
 * pass lists leave bf16 extf/truncf to LLVM (@bf16-expand@ "false"):
 * RISC-V V with Zvfbfmin (vfwcvtbf16.f.f.v, vfncvtbf16.f.f.w).  0: they
 * are expanded into integer shifts before LLVM (x86: LLVM's own
 * conversions are the same shifts). */
int llm_target_bf16_convert(const struct llm_target *t);
/* The vector registers t's kernels may count on: 32 with AVX-512 F, 16
 * on any other x86 target (AVX2's), 0 where unknown (the generic forms'
 * targets: RVV's registers group by LMUL). */
int llm_target_vector_registers(const struct llm_target *t);
/* The form of the transform scripts for t, share/llm/transforms/<form>/
 * (the parameters of each, mkscript.py's ISA table): "avx512" (AVX-512
 * F, BW and VL: k in 16 lanes), "rvv" (RISC-V with V: smaller GEMM and
 * elementwise tiles); NULL for the top-level scripts (mkscript.py's
 * "avx2": AVX2's, and every other target's). */
const char *llm_target_transforms(const struct llm_target *t);

/* One line of JSON: {"triple": ..., "cpu": ..., "features": [...]}. */
char *llm_target_json(const struct llm_target *t);
/* Parse it back; label names the source in messages.  0 or -1. */
int llm_target_parse(const char *text, size_t len, const char *label, struct llm_target *t);

/* 0 if this machine runs code of target t; else -1 with llm_errmsg
 * "LABEL: built for TRIPLE (CPU): this machine is ARCH" or "...: this CPU
 * lacks avx512f, avx512bw".  For a target with AMX tiles it asks Linux
 * for the process's tile state (arch_prctl), and fails if refused. */
int llm_target_check_host(const struct llm_target *t, const char *label);

/* 1 if the two are the same target. */
int llm_target_equal(const struct llm_target *a, const struct llm_target *b);

void llm_target_free(struct llm_target *t);

/* The bytes of section name of the ELF64 little-endian object at p (n
 * bytes): *out and *outlen, 1 if found, 0 if not, -1 (llm_errmsg) if p is
 * not such an object. */
int llm_elf_section(const void *p, size_t n, const char *name, const void **out, size_t *outlen);
/* The e_machine of such an object, or -1 (llm_errmsg). */
int llm_elf_machine(const void *p, size_t n);
/* 1 if such a shared object defines (exports) the dynamic symbol name, 0
 * if not, -1 (llm_errmsg) if p is not an ELF64 little-endian object. */
int llm_elf_dynsym(const void *p, size_t n, const char *name);

/* The host CPU as cache keys know it, into buf (n bytes, cut there): the
 * first two of the "model name", "flags" and "isa" (RISC-V) lines of
 * /proc/cpuinfo (the first CPU's), newlines kept; "" without /proc.  What
 * -mcpu=native and a build for this host depend on.  Returns buf. */
char *llm_host_id(char *buf, size_t n);

#endif
