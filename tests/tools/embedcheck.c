/* embedcheck: llm_embed (include/llm.h) on a compiled model, for the
 * tests to compare with refmodel --hidden.
 *
 *   embedcheck [-m] [-n] [-v] [-o out.f32] model.llm id,id,...
 *
 * Writes the embedding of the ids (pooled by the last token, or with -m
 * by their mean; with -n normalized) to out.f32 as float32 and prints
 * "dim D norm N" (N its Euclidean norm, in double).  An id list of "-"
 * is an empty one (n 0), "NULL" a NULL one.  A failure prints
 * "embedcheck: STATUS: message" and exits 1.  -v: the model opened
 * verbose (each phase call on standard error). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../include/llm.h"

static int
failed(int rc)
{
	fprintf(stderr, "embedcheck: %s: %s\n", llm_status_name(rc), llm_errmsg());
	return 1;
}

int
main(int argc, char **argv)
{
	const char *out = NULL;
	struct llm_options o = LLM_OPTIONS_INIT;
	int pooling = LLM_POOL_LAST, normalize = 0, ch, rc;

	while ((ch = getopt(argc, argv, "mno:v")) != -1) {
		switch (ch) {
		case 'm':
			pooling = LLM_POOL_MEAN;
			break;
		case 'n':
			normalize = 1;
			break;
		case 'o':
			out = optarg;
			break;
		case 'v':
			o.verbose = 1;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 2)
		goto usage;
	size_t n = 0;
	int64_t *ids = calloc(strlen(argv[optind + 1]) + 1, sizeof(int64_t));
	if (!ids)
		return 1;
	if (strcmp(argv[optind + 1], "-") != 0 && strcmp(argv[optind + 1], "NULL") != 0)
		for (char *p = argv[optind + 1]; *p; p += *p == ',')
			ids[n++] = strtoll(p, &p, 10);
	struct llm *m;
	if ((rc = llm_open(argv[optind], &o, &m)))
		return failed(rc);
	float *e;
	size_t dim;
	rc = llm_embed(m, strcmp(argv[optind + 1], "NULL") ? ids : NULL, n, pooling, normalize, &e, &dim);
	if (rc)
		return failed(rc);
	double ss = 0;
	for (size_t i = 0; i < dim; i++)
		ss += (double)e[i] * e[i];
	printf("dim %zu norm %.9f\n", dim, sqrt(ss));
	FILE *f = out ? fopen(out, "wb") : NULL;
	if (out && (!f || fwrite(e, sizeof(float), dim, f) != dim || fclose(f) != 0)) {
		perror(out);
		return 1;
	}
	llm_free(e);
	free(ids);
	llm_close(&m);
	return 0;
usage:
	fprintf(stderr, "usage: embedcheck [-m] [-n] [-v] [-o out.f32] model.llm id,id,...\n");
	return 2;
}
