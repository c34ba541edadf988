/* llm-pack-weights: write the runtime weights of a model.
 *
 * Reads model.json (written by llm-import) and the checkpoint it names
 * (safetensors files or a GGUF file), and writes weights.bin (a 4096-byte
 * header, then every tensor of the weight plan at its offset, converted to
 * the plan's dtype or quantized to its block type, plus the precomputed RoPE tables) and
 * weights.json (offsets, shapes, dtypes,
 * checksums and the identity of the source files).  llm-run maps
 * weights.bin as it is.  When weights.json shows that weights.bin already
 * matches the plan and the sources, nothing is written. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../lib/formats/model.h"
#include "../lib/compiler/pack.h"
#include "../lib/base/util.h"

static const char usage_text[] = "usage: llm-pack-weights [-v] [--no-reuse] [-o outdir] [-t threads] model.json\n";

static const char help_text[] =
    "  -o outdir            write weights.bin and weights.json here (default: model.json's directory)\n"
    "  -t, --threads n      threads that quantize and split blocks, 1-64 (default: one per CPU)\n"
    "  --no-reuse           rewrite even when the existing pair is up to date\n"
    "  -v                   print a summary, or why an existing pair is not reused\n"
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
	static const struct option longopts[] = {
		{"no-reuse", no_argument, NULL, 'R'},
		{"threads", required_argument, NULL, 't'},
		LLM_STD_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	struct llm_pack_opts opts = {0};
	struct llm_pack_stats st;
	struct llm_model m;
	const char *outdir = NULL;
	char *bin, fp[17];
	int64_t n;
	int c;

	argv[0] = (char *)llm_setprog(argv[0]);
	while ((c = getopt_long(argc, argv, "ho:t:v", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			outdir = optarg;
			break;
		case 'v':
			opts.verbose = 1;
			break;
		case 'R':
			opts.no_reuse = 1;
			break;
		case 't':
			if (llm_parse_i64(optarg, 1, 64, &n) < 0) {
				llm_warn("-t: %s", llm_errmsg());
				usage();
			}
			opts.threads = (int)n;
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
	if (!outdir)
		outdir = m.dir;
	if (llm_pack_weights(&m, outdir, &opts, &st) < 0)
		llm_fatal("%s", llm_errmsg());

	bin = llm_path_join(outdir, m.weights_file);
	llm_hex64(m.fingerprint, fp);
	if (st.reused && !llm_file_exists(bin)) {
		char *b = llm_path_join(outdir, "model.llm");
		llm_warn("%s holds the weights, up to date (fingerprint %s)", b, fp);
		free(b);
	} else if (st.reused)
		llm_warn("%s is up to date (fingerprint %s)", bin, fp);
	else if (opts.verbose)
		llm_warn("%s: %zu tensors, %.3f GB in %.2f s (%.2f GB/s), fingerprint %s", bin, st.ntensors,
		    (double)st.bytes / 1e9, st.seconds, st.seconds > 0 ? (double)st.bytes / 1e9 / st.seconds : 0.0, fp);
	free(bin);
	llm_model_free(&m);
	return LLM_EXIT_OK;
}
