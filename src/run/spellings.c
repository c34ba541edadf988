/* spellings.c: llama-cli's options that llm-run's table (options.c)
 * does not hold as they are: its spellings of one dash and several
 * letters, and those that mean nothing here. */
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/util.h"
#include "run.h"

/* llama-cli's spellings of one dash and several letters, which getopt
 * would read as clustered short options ("-no-cnv" as -n o-cnv), and its
 * options that have no meaning here: those that mean something become
 * our options; those that change nothing here (the GPU, the memory
 * mapping, the batch sizes, colours) are dropped, named in one note on
 * stderr; those that would change the result and cannot be honoured
 * are refused by name in one line.  Returns the new argv (argc in
 * *argc); "--" ends the options. */
enum { NOARG, ARG, OPTARG }; /* OPTARG: a value taken when it is one of on, off, auto, 0, 1 */
char **
run_llama_spellings(int *argc, char **argv)
{
	static const struct {
		const char *name;
		int arg;
		const char *to;  /* our option; "" to drop; NULL to refuse */
		const char *why; /* for a refusal, or a dropped option's note ("" none); NULL: the line before's */
		int zero;        /* dropped when its value is 0, refused otherwise */
	} sp[] = {
		{"-cnv", NOARG, "--conversation", "", 0},
		{"-sys", ARG, "--system-prompt", "", 0},
		{"-no-cnv", NOARG, "", "", 0}, /* plain completion is the default here */
		{"-ctk", ARG, "--cache-type-k", "", 0},
		{"-ctv", ARG, "--cache-type-v", "", 0},
		{"-st", NOARG, "--single-turn", "", 0},
		{"-pg", ARG, "--pg", "", 0},
		{"-mli", NOARG, "--multiline-input", "", 0},
		{"--reverse-prompt", ARG, "--stop", "", 0},
		{"-j", ARG, "--json-schema", "", 0},
		{"-jf", ARG, "--json-schema-file", "", 0},
		{"-fa", OPTARG, "", "the attention is compiled into the model", 0},
		{"--flash-attn", OPTARG, "", NULL, 0},
		{"-ngl", ARG, "", "there are no GPU layers: llm-run runs the model on the CPU", 1},
		{"--n-gpu-layers", ARG, "", NULL, 1},
		{"--gpu-layers", ARG, "", NULL, 1},
		{"-sm", ARG, "", "nothing is split across GPUs", 0},
		{"--split-mode", ARG, "", NULL, 0},
		{"-mg", ARG, "", NULL, 0},
		{"--main-gpu", ARG, "", NULL, 0},
		{"--mlock", NOARG, "", "the weights are mapped from the bundle, read-only", 0},
		{"--no-mmap", NOARG, "", NULL, 0},
		{"--numa", ARG, "", "the threads are OpenMP's (OMP_PLACES, OMP_PROC_BIND)", 0},
		{"-b", ARG, "", "the prefill chunk is compiled into the model (llm-import --prefill-chunk)", 0},
		{"--batch-size", ARG, "", NULL, 0},
		{"-ub", ARG, "", NULL, 0},
		{"--ubatch-size", ARG, "", NULL, 0},
		{"-co", OPTARG, "", "the output is plain text", 0},
		{"--color", OPTARG, "", NULL, 0},
		{"-hf", ARG, NULL,
			"nothing is downloaded: fetch the GGUF file or the checkpoint yourself and give it to -m", 0},
		{"--hf-repo", ARG, NULL, NULL, 0},
	};
	static const char *const optvals[] = {"on", "off", "auto", "0", "1", "true", "false"};
	char **out = llm_xcalloc((size_t)*argc + 1, sizeof(*out));
	struct llm_buf dropped = {0};
	int n = 0;
	out[n++] = argv[0];
	for (int i = 1; i < *argc; i++) {
		size_t j = 0;
		if (strcmp(argv[i], "--") == 0) {
			while (i < *argc)
				out[n++] = argv[i++];
			break;
		}
		/* the long ones also as --name=value */
		size_t len = 0;
		while (j < LLM_NELEM(sp) &&
		    !(strcmp(argv[i], sp[j].name) == 0 ||
			(sp[j].name[1] == '-' && strncmp(argv[i], sp[j].name, len = strlen(sp[j].name)) == 0 &&
			    argv[i][len] == '=')))
			j++;
		if (j == LLM_NELEM(sp)) {
			out[n++] = argv[i];
			continue;
		}
		size_t k = j;
		while (!sp[k].why)
			k--;
		const char *val = strchr(argv[i], '='), *opt = argv[i];
		if (val)
			val++;
		else if (sp[j].arg == ARG && i + 1 < *argc)
			val = argv[++i];
		else if (sp[j].arg == OPTARG && i + 1 < *argc) {
			size_t v = 0;
			while (v < LLM_NELEM(optvals) && strcmp(argv[i + 1], optvals[v]) != 0)
				v++;
			if (v < LLM_NELEM(optvals))
				val = argv[++i];
		}
		if (sp[j].arg == ARG && !val)
			run_usage_line(llm_xasprintf("%s needs a value", sp[j].name));
		if (!sp[j].to || (sp[j].zero && strcmp(val, "0") != 0))
			run_usage_line(
			    llm_xasprintf("%s%s%s: %s", sp[j].name, val ? " " : "", val ? val : "", sp[k].why));
		if (*sp[j].to) {
			/* ours takes the value the same way */
			if (strchr(opt, '='))
				out[n++] = llm_xasprintf("%s%s", sp[j].to, strchr(opt, '='));
			else {
				out[n++] = (char *)sp[j].to;
				if (val)
					out[n++] = (char *)val;
			}
			continue;
		}
		if (*sp[k].why) /* dropped, with a note */
			llm_buf_printf(&dropped, "%s%s%s%s", dropped.len ? ", " : "", sp[j].name, val ? " " : "",
			    val ? val : "");
	}
	if (dropped.len)
		llm_warn("ignored, no meaning here (llm-run(1), Options): %s", dropped.p);
	llm_buf_free(&dropped);
	*argc = n;
	return out;
}
