/* llm-verify-partition: prove that a partition set covers its phases
 * exactly.
 *
 * Reads partition.json (written by llm-split), the original MLIR of each
 * phase it names, the glue modules and the kernels, and checks that the
 * parts compute what the original does: every op exactly once, in order,
 * no producer after its consumer, every crossing value explicit, glue
 * signatures equal to the originals, and each kernel op by op equal to
 * the ops it stands for.  Like cmp(1) it exits 0 when the set is valid,
 * 1 when it is not, and 2 on trouble; violations go to standard error
 * and, with --report, to a JSON report.  It sits between llm-split and
 * llm-lower in pipelines/model.mk. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "../lib/base/json.h"
#include "../lib/base/util.h"
#include "../lib/compiler/ir/verifypart.h"

static const char usage_text[] = "usage: llm-verify-partition [-q] [--report file.json] partition.json\n";

/* Violations printed on standard error before the rest is left to the
 * report. */
#define MAXPRINT 20

static const char help_text[] = "  --report file.json   write the report (counts and every violation) there\n"
				"  -q                   print nothing when the set is valid\n"
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
		{"report", required_argument, NULL, 'R'},
		LLM_STD_LONGOPTS,
		{NULL, 0, NULL, 0},
	};
	const char *report_path = NULL, *path;
	json_t *report, *viol, *x;
	int c, quiet = 0, rc;
	size_t i;

	argv[0] = (char *)llm_setprog(argv[0]);
	while ((c = getopt_long(argc, argv, "hq", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			quiet = 1;
			break;
		case 'R':
			report_path = optarg;
			break;
		default:
			llm_std_option(c, usage_text, help_text);
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	path = argv[optind];

	rc = llm_verify_partition(path, &report);
	if (rc < 0) {
		llm_warn("%s", llm_errmsg());
		return LLM_EXIT_USAGE;
	}
	if (report_path && llm_json_write(report_path, report) < 0) {
		llm_warn("%s", llm_errmsg());
		json_decref(report);
		return LLM_EXIT_USAGE;
	}
	viol = json_object_get(report, "violations"); /* borrowed */
	json_array_foreach (viol, i, x) {
		if (i == MAXPRINT) {
			llm_warn("%s: %zu more violations%s", path, json_array_size(viol) - MAXPRINT,
			    report_path ? " in the report" : "");
			break;
		}
		json_t *part = json_object_get(x, "partition"); /* borrowed */
		if (json_is_integer(part))
			llm_warn("%s: %s: partition %lld: %s", path, json_string_value(json_object_get(x, "phase")),
			    (long long)json_integer_value(part), json_string_value(json_object_get(x, "message")));
		else if (json_is_string(json_object_get(x, "phase")))
			llm_warn("%s: %s: %s", path, json_string_value(json_object_get(x, "phase")),
			    json_string_value(json_object_get(x, "message")));
		else /* the file as a whole: the kernel index, the model */
			llm_warn("%s: %s", path, json_string_value(json_object_get(x, "message")));
	}
	json_t *counts = json_object_get(report, "counts"); /* borrowed */
	long long nv = (long long)json_integer_value(json_object_get(counts, "violations"));
	if (rc > 0)
		llm_warn("%s: invalid: %lld violation%s", path, nv, nv == 1 ? "" : "s");
	else if (!quiet)
		printf("%s: valid: %lld phases, %lld partitions, %lld calls, %lld ops\n", path,
		    (long long)json_integer_value(json_object_get(counts, "phases")),
		    (long long)json_integer_value(json_object_get(counts, "partitions")),
		    (long long)json_integer_value(json_object_get(counts, "calls")),
		    (long long)json_integer_value(json_object_get(counts, "ops")));
	json_decref(report);
	if (fflush(stdout) || ferror(stdout)) {
		llm_warn("write stdout:");
		return LLM_EXIT_USAGE;
	}
	return rc ? LLM_EXIT_FAIL : LLM_EXIT_OK;
}
