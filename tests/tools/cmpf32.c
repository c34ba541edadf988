/* cmpf32: compare two files of little-endian float32 values, such as the
 * logits written by refmodel and by a compiled model.
 *
 * Prints one line to stdout:
 *   n N max_abs A at I (X vs Y) max_rel R scale S
 * where A is the largest |x - y|, I its index (row,col with -c), X and Y the
 * values there, S the largest |x| or |y| in either file and R = A / S: the
 * difference relative to the size of the values, which, unlike an
 * element-wise ratio, does not blow up on values near zero.  With -c cols
 * the files are rows of cols values and the line ends with
 *   argmax_equal K/ROWS
 * (rows whose largest value has the same index in both files) and, when
 * K < ROWS,
 *   first_differ R gap G1 vs G2
 * the first such row R and the margin there, in each file, of the largest
 * value over the second largest (a near tie, G small, is where greedy
 * texts part for reasons of rounding).
 *
 * -a and -r set the largest allowed max_abs and max_rel; without either the
 * values must be equal.  -g also requires every row's argmax to agree (the
 * greedy token).
 *
 * Exit status: 0 when the files agree within the tolerances, 1 when they
 * do not (a difference above -a or -r, a NaN or infinity, a different size,
 * with -g a different argmax), or on a read error; 2 on a usage error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/base/util.h"

static const char usage_text[] = "usage: cmpf32 [-g] [-a abstol] [-c cols] [-r reltol] file1 file2\n";

static _Noreturn void
usage(void)
{
	fputs(usage_text, stderr);
	exit(LLM_EXIT_USAGE);
}

static double
tolerance(const char *s, char opt)
{
	double v;

	if (llm_parse_f64(s, &v) < 0 || v < 0) {
		llm_warn("-%c: '%s' is not a non-negative number", opt, s);
		usage();
	}
	return v;
}

static float
get(const struct llm_map *m, size_t i)
{
	const uint8_t *p = m->p + 4 * i;
	uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* The index of the largest of row r (the first of equals) and its margin
 * over the second largest. */
static size_t
top2(const struct llm_map *m, size_t r, int64_t cols, double *gap)
{
	size_t best = 0;
	double v1 = get(m, r * (size_t)cols), v2 = -INFINITY;

	for (size_t j = 1; j < (size_t)cols; j++) {
		double v = get(m, r * (size_t)cols + j);

		if (v > v1)
			v2 = v1, v1 = v, best = j;
		else if (v > v2)
			v2 = v;
	}
	*gap = v1 - v2;
	return best;
}

static void
where(char *buf, size_t n, size_t i, int64_t cols)
{
	if (cols)
		snprintf(buf, n, "%zu,%zu", i / (size_t)cols, i % (size_t)cols);
	else
		snprintf(buf, n, "%zu", i);
}

int
main(int argc, char **argv)
{
	struct llm_map a, b;
	const char *fa, *fb;
	double abstol = -1, reltol = -1, max_abs = 0, scale = 0, rel;
	size_t n, at = 0, rows = 0, argmax_equal = 0, differ = 0;
	double gap_a = 0, gap_b = 0;
	int64_t cols = 0;
	int greedy = 0, fail = 0, ch;
	char pos[64];

	llm_setprog(argv[0]);
	argv[0] = (char *)llm_prog; /* getopt's messages start with "prog:" */
	while ((ch = getopt(argc, argv, "a:c:ghr:")) != -1) {
		switch (ch) {
		case 'a':
			abstol = tolerance(optarg, 'a');
			break;
		case 'c':
			if (llm_parse_i64(optarg, 1, INT32_MAX, &cols) < 0) {
				llm_warn("-c: %s", llm_errmsg());
				usage();
			}
			break;
		case 'g':
			greedy = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return LLM_EXIT_OK;
		case 'r':
			reltol = tolerance(optarg, 'r');
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	if (greedy && !cols) {
		llm_warn("-g needs -c cols");
		usage();
	}
	if (abstol < 0 && reltol < 0)
		abstol = 0; /* no tolerance given: the files must be equal */
	fa = argv[optind];
	fb = argv[optind + 1];
	if (llm_map_file(&a, fa) < 0 || llm_map_file(&b, fb) < 0)
		llm_fatal("%s", llm_errmsg());
	if (a.len % 4)
		llm_fatal("%s: size %zu is not a multiple of 4 bytes", fa, a.len);
	if (b.len % 4)
		llm_fatal("%s: size %zu is not a multiple of 4 bytes", fb, b.len);
	if (a.len == 0)
		llm_fatal("%s: empty file", fa);
	if (a.len != b.len)
		llm_fatal("%s: %zu values, but %s has %zu", fa, a.len / 4, fb, b.len / 4);
	n = a.len / 4;
	if (cols && n % (size_t)cols)
		llm_fatal("%s: %zu values are not rows of %lld", fa, n, (long long)cols);

	for (size_t i = 0; i < n; i++) {
		double x = get(&a, i), y = get(&b, i), d = fabs(x - y);

		if (!isfinite(x) || !isfinite(y)) {
			where(pos, sizeof(pos), i, cols);
			llm_fatal("%s: value %s is not finite: %g vs %g in %s", fa, pos, x, y, fb);
		}
		if (d > max_abs || i == 0)
			max_abs = d, at = i;
		if (fabs(x) > scale)
			scale = fabs(x);
		if (fabs(y) > scale)
			scale = fabs(y);
	}
	rel = scale > 0 ? max_abs / scale : 0;
	if (cols) {
		rows = n / (size_t)cols;
		for (size_t r = 0; r < rows; r++) {
			double ga, gb;
			size_t ia = top2(&a, r, cols, &ga), ib = top2(&b, r, cols, &gb);

			if (ia != ib && argmax_equal == r)
				differ = r, gap_a = ga, gap_b = gb;
			argmax_equal += ia == ib;
		}
	}

	where(pos, sizeof(pos), at, cols);
	printf("n %zu max_abs %.9g at %s (%.9g vs %.9g) max_rel %.9g scale %.9g", n, max_abs, pos, (double)get(&a, at),
	    (double)get(&b, at), rel, scale);
	if (cols)
		printf(" argmax_equal %zu/%zu", argmax_equal, rows);
	if (cols && argmax_equal < rows)
		printf(" first_differ %zu gap %.9g vs %.9g", differ, gap_a, gap_b);
	printf("\n");
	fflush(stdout);
	if (ferror(stdout))
		llm_fatal("stdout: write error");

	if (abstol >= 0 && max_abs > abstol) {
		llm_warn("%s: max abs difference %.9g at %s exceeds %g", fb, max_abs, pos, abstol);
		fail = 1;
	}
	if (reltol >= 0 && rel > reltol) {
		llm_warn("%s: max relative difference %.9g exceeds %g", fb, rel, reltol);
		fail = 1;
	}
	if (greedy && argmax_equal != rows) {
		llm_warn("%s: argmax differs in %zu of %zu rows", fb, rows - argmax_equal, rows);
		fail = 1;
	}
	llm_unmap(&a);
	llm_unmap(&b);
	return fail ? LLM_EXIT_FAIL : LLM_EXIT_OK;
}
