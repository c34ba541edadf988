/* llm-split: cut the phases of a model into partitions for a parallel
 * build.
 *
 * Reads model.json (written by llm-import) and the MLIR of each phase it
 * names, and writes a parts directory: one module per distinct kernel
 * (<kind>/k<hash>.mlir), one glue module per phase (<phase>/glue.mlir,
 * whose public function has the phase's original signature and calls the
 * kernels in order), partition.json (which op went where, what crosses
 * each cut) and parts.mk (the modules to lower, for make -jN).
 * llm-verify-partition checks the result against the original; llm-lower
 * turns each module into an object. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "../lib/formats/model.h"
#include "../lib/compiler/ir/split.h"
#include "../lib/base/util.h"

static const char usage_text[] = "usage: llm-split [-v] [-o partsdir] [-s none|layer|stage] model.json\n";

static const char help_text[] =
    "  -o partsdir          write the parts here (default: parts/ beside model.json)\n"
    "  -s strategy          none, layer (default: one kernel for every decoder layer) or stage\n"
    "  -v                   print the partitions of each phase\n"
    "  -h                   print the usage\n"
    "  --help, --version    print this help, or the version\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

int
main(int argc, char **argv)
{
	struct llm_split_opts opts = {LLM_SPLIT_LAYER, NULL, 0};
	struct llm_split_stats st;
	struct llm_model m;
	char *partsdir = NULL;
	int c;

	static const struct option longopts[] = {LLM_STD_LONGOPTS, {NULL, 0, NULL, 0}};
	argv[0] = (char *)llm_setprog(argv[0]);
	while ((c = getopt_long(argc, argv, "ho:s:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			opts.partsdir = optarg;
			break;
		case 's':
			if (llm_split_strategy_parse(optarg, &opts.strategy) < 0) {
				llm_warn("%s", llm_errmsg());
				usage();
			}
			break;
		case 'v':
			opts.verbose = 1;
			break;
		default:
			llm_std_option(c, usage_text, help_text);
			usage();
		}
	}
	if (argc - optind != 1)
		usage();

	if (llm_model_load(&m, argv[optind]) < 0)
		llm_fatal("%s", llm_errmsg());
	if (!opts.partsdir)
		opts.partsdir = partsdir = llm_path_join(m.dir, "parts");
	if (llm_split(&m, &opts, &st) < 0)
		llm_fatal("%s", llm_errmsg());
	for (int i = 0; i < st.nphases; i++)
		printf("%s: %zu ops, %zu partitions, %zu kernels\n", st.phase[i].name, st.phase[i].ops,
		    st.phase[i].partitions, st.phase[i].kernels);
	printf("%zu partitions, %zu distinct kernels\n", st.partitions, st.kernels);
	free(partsdir);
	llm_model_free(&m);
	if (fflush(stdout) || ferror(stdout))
		llm_fatal("write stdout:");
	return LLM_EXIT_OK;
}
