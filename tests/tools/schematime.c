/* schematime: the time llm_json_schema_grammar takes on a schema that is
 * deep (objects in objects, one required property each) or wide (one
 * object of N required integer properties), for BENCHMARKS.md.
 *
 *   schematime deep|wide N
 *
 * Prints "deep N: S bytes of schema, ok, T s, G bytes of grammar" (or the
 * refusal in place of ok). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/util.h"
#include "../../lib/text/grammar.h"

int
main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "deep") != 0 && strcmp(argv[1], "wide") != 0)) {
		fputs("usage: schematime deep|wide N\n", stderr);
		return 2;
	}
	int n = atoi(argv[2]), wide = strcmp(argv[1], "wide") == 0;
	struct llm_buf b = {0};
	if (!wide) {
		for (int i = 0; i < n; i++)
			llm_buf_puts(&b, "{\"type\":\"object\",\"properties\":{\"a\":");
		llm_buf_puts(&b, "{\"type\":\"string\"}");
		for (int i = 0; i < n; i++)
			llm_buf_puts(&b, "},\"required\":[\"a\"]}");
	} else {
		llm_buf_puts(&b, "{\"type\":\"object\",\"properties\":{");
		for (int i = 0; i < n; i++)
			llm_buf_printf(&b, "%s\"p%d\":{\"type\":\"integer\"}", i ? "," : "", i);
		llm_buf_puts(&b, "},\"required\":[");
		for (int i = 0; i < n; i++)
			llm_buf_printf(&b, "%s\"p%d\"", i ? "," : "", i);
		llm_buf_puts(&b, "]}");
	}
	double t = llm_now();
	char *g = llm_json_schema_grammar(b.p, b.len);
	printf("%s %d: %zu bytes of schema, %s, %.3f s, %zu bytes of grammar\n", argv[1], n, b.len,
	    g ? "ok" : llm_errmsg(), llm_now() - t, g ? strlen(g) : 0);
	free(g);
	llm_buf_free(&b);
	return 0;
}
