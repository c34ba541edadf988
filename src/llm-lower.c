/* llm-lower: compile one MLIR module (a phase written by llm-import, or a
 * partition or glue module written by llm-split) to a relocatable object.
 *
 * It reads in.mlir and writes out.o, nothing else: mlir-opt runs the pass
 * list of the module's kind (share/llm/pipelines/<kind>.txt; the tuned
 * kinds load a transform script from share/llm/transforms/ that tiles and
 * vectorises each linalg op by its llm.sched class), mlir-translate turns
 * the LLVM dialect into LLVM IR, and llc emits the object for the host CPU
 * or for --target.  The objects go to llm-link.  Every tool runs under a
 * timeout; a failure names the stage and keeps the intermediates. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/compiler/lower.h"
#include "../lib/base/spawn.h"
#include "../lib/base/util.h"

#ifndef LLM_SHAREDIR
#define LLM_SHAREDIR "/usr/local/share/llm"
#endif

#define DEFAULT_TIMEOUT 600.0

static const char usage_text[] =
    "usage: llm-lower [-sv] [-k kind] [-o output] [-t seconds] [--cpu name]\n"
    "                 [--features list] [--target triple] [--tuning file] [--no-cache] input.mlir\n";

static void
usage(FILE *f)
{
	fputs(usage_text, f);
}

static const char help_text[] =
    "  -o output            the object (default: the input's name with .o; - for standard output)\n"
    "  -k kind              prefill, prefill_kv, decode, glue or generic (default: from llm.kind or\n"
    "                       the file name)\n"
    "  -t seconds           time limit of each tool (default 600; 0: none)\n"
    "  --cpu name           llc's CPU: native (default for the host), x86-64-v3, znver4, ...\n"
    "  --features list      llc -mattr features, e.g. +avx2,+fma (on RISC-V after +m,+a,+f,+d,+c,+v: +zvfbfmin, -v)\n"
    "  --target triple      cross-compile, e.g. riscv64-linux-gnu\n"
    "  --tuning file        the kernel parameters measured per CPU (default: share/llm/tuning.json)\n"
    "  --no-cache           neither read nor fill the object cache (~/.cache/llm/objects)\n"
    "  -s                   keep the intermediate files even on success, and say where\n"
    "  -v                   echo each command and its time\n"
    "  -h                   print the usage\n"
    "  --help, --version    print this help, or the version\n";

static double
parse_timeout(const char *s, const char *what)
{
	double t;
	if (llm_parse_f64(s, &t) < 0 || t < 0) {
		llm_warn("bad %s '%s': want seconds >= 0", what, s);
		usage(stderr);
		exit(LLM_EXIT_USAGE);
	}
	return t;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"cpu", required_argument, NULL, 'C'},
		{"features", required_argument, NULL, 'F'},
		{"no-cache", no_argument, NULL, 'N'},
		{"target", required_argument, NULL, 'T'},
		{"tuning", required_argument, NULL, 'U'},
		LLM_STD_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct llm_lower l = {0};
	const char *kind = NULL, *output = NULL, *env;
	char *guessed = NULL, *defout = NULL;
	int c, nocache = 0;

	argv[0] = (char *)llm_setprog(argv[0]);
	l.timeout = DEFAULT_TIMEOUT;
	if ((env = getenv("LLM_LOWER_TIMEOUT")) && *env)
		l.timeout = parse_timeout(env, "LLM_LOWER_TIMEOUT");
	while ((c = getopt_long(argc, argv, "hk:o:st:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			kind = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 's':
			l.keep = 1;
			break;
		case 't':
			l.timeout = parse_timeout(optarg, "timeout");
			break;
		case 'v':
			l.verbose = 1;
			break;
		case 'C':
			l.cpu = optarg;
			break;
		case 'F':
			l.features = optarg;
			break;
		case 'N':
			nocache = 1;
			break;
		case 'T':
			l.triple = optarg;
			break;
		case 'U':
			l.tuning = optarg;
			break;
		default:
			llm_std_option(c, usage_text, help_text);
			usage(stderr);
			return LLM_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return LLM_EXIT_USAGE;
	}
	l.input = argv[optind];

	/* The input must exist before we guess anything from it. */
	if (strcmp(l.input, "-") != 0) {
		char *text;
		size_t len;
		if (llm_read_file(l.input, &text, &len) < 0)
			llm_fatal("%s", llm_errmsg());
		if (!kind)
			kind = guessed = llm_lower_guess_kind(l.input, text);
		free(text);
	}
	if (!kind) {
		llm_warn("%s: cannot tell the kind of module: pass -k prefill, decode, glue or generic", l.input);
		return LLM_EXIT_USAGE;
	}
	l.kind = kind;

	if (!output) {
		if (strcmp(l.input, "-") == 0)
			output = "-";
		else {
			const char *b = strrchr(l.input, '/') ? strrchr(l.input, '/') + 1 : l.input;
			size_t n = strlen(b);
			if (n > 5 && strcmp(b + n - 5, ".mlir") == 0)
				n -= 5;
			output = defout = llm_xasprintf("%.*s.o", (int)n, b);
		}
	}
	l.output = output;

	char *opt = llm_llvm_tool("LLM_MLIR_OPT", "mlir-opt");
	char *translate = llm_llvm_tool("LLM_MLIR_TRANSLATE", "mlir-translate");
	char *llc = llm_llvm_tool("LLM_LLC", "llc");
	char *objcopy = llm_llvm_tool("LLM_OBJCOPY", "llvm-objcopy");
	char *clang = llm_llvm_tool("LLM_CLANG", "clang");
	l.mlir_opt = opt;
	l.mlir_translate = translate;
	l.llc = llc;
	l.objcopy = objcopy;
	l.clang = clang;
	/* The object cache: none under --no-cache or an empty LLM_CACHE_DIR,
	 * else the toolchain's cache's objects/ (llm_cache_root). */
	char *cachedir = NULL, *root;
	const char *e = getenv("LLM_CACHE_DIR");
	if (!nocache && (!e || *e) && (root = llm_cache_root())) {
		cachedir = llm_path_join(root, LLM_CACHE_OBJECTS);
		free(root);
	}
	l.cache = cachedir;
	char *share = llm_share_dir(LLM_SHAREDIR);
	l.share = share;
	char *pipeline = llm_lower_pipeline(share, kind);
	if (!pipeline) {
		llm_warn("%s", llm_errmsg());
		usage(stderr);
		return LLM_EXIT_USAGE;
	}
	free(pipeline);

	if (llm_lower_run(&l) < 0) {
		if (l.kept)
			llm_fatal("%s (intermediate files kept in %s)", llm_errmsg(), l.kept);
		llm_fatal("%s", llm_errmsg());
	}
	if (l.kept)
		fprintf(stderr, "%s: intermediate files kept in %s\n", llm_prog, l.kept);
	free(l.kept);
	free(share);
	free(opt);
	free(translate);
	free(llc);
	free(objcopy);
	free(clang);
	free(cachedir);
	free(guessed);
	free(defout);
	return LLM_EXIT_OK;
}
