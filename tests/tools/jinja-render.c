/* jinja-render: a template rendered by lib/text/jinja.c, as
 * @huggingface/jinja's Template(text).render(context) renders it, for the
 * golden tests (tests/jinja.bats, tests/tools/make-jinja-golden).
 *
 * jinja-render [-g] [-s] template context.json...
 *
 * The context is the JSON objects of the files merged in order (a later
 * key replaces an earlier one), then add_generation_prompt: true with -g,
 * false without, as the generator sets it for conversations; -G leaves it
 * as the files have it.  The strings of "messages" and "tools" are data.
 * The rendering goes to stdout as is.  With -s, the data ranges (the strings
 * of messages and tools) follow on stderr, one "begin end" line each.
 * Errors: "jinja-render: template:LINE:COL: what" on stderr, exit 1; 2
 * for usage. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/base/json.h"
#include "../../lib/base/util.h"
#include "../../lib/text/jinja.h"

int
main(int argc, char **argv)
{
	static const char *const data[] = {"messages", "tools", NULL};
	int c, gen = 0, set_gen = 1, show = 0;
	llm_setprog(argv[0]);
	while ((c = getopt(argc, argv, "gGs")) != -1) {
		switch (c) {
		case 'g':
			gen = 1;
			break;
		case 'G':
			set_gen = 0;
			break;
		case 's':
			show = 1;
			break;
		default:
			fprintf(stderr, "usage: jinja-render [-g|-G] [-s] template context.json...\n");
			return 2;
		}
	}
	if (argc - optind < 1) {
		fprintf(stderr, "usage: jinja-render [-g|-G] [-s] template context.json...\n");
		return 2;
	}
	char *text;
	size_t len;
	if (llm_read_file(argv[optind], &text, &len) < 0)
		llm_fatal("%s", llm_errmsg());
	json_t *ctx = json_object();
	for (int i = optind + 1; i < argc; i++) {
		char *buf;
		size_t n;
		if (llm_read_file(argv[i], &buf, &n) < 0)
			llm_fatal("%s", llm_errmsg());
		json_t *j = llm_json_loadb_js(buf, n, argv[i]);
		free(buf);
		if (!j)
			llm_fatal("%s", llm_errmsg());
		if (!json_is_object(j))
			llm_fatal("%s: not a JSON object", argv[i]);
		json_object_update(ctx, j);
		json_decref(j);
	}
	if (set_gen)
		json_object_set_new(ctx, "add_generation_prompt", json_boolean(gen));
	struct llm_jinja *t = llm_jinja_parse(text, len, argv[optind]);
	if (!t)
		llm_fatal("%s", llm_errmsg());
	struct llm_buf out = {0};
	struct llm_spans sp = {0};
	if (llm_jinja_render(t, ctx, data, &out, &sp) < 0)
		llm_fatal("%s", llm_errmsg());
	fwrite(out.p ? out.p : "", 1, out.len, stdout);
	if (show)
		for (size_t i = 0; i < sp.n; i++)
			fprintf(stderr, "%zu %zu\n", sp.r[i][0], sp.r[i][1]);
	llm_buf_free(&out);
	llm_spans_free(&sp);
	llm_jinja_free(t);
	json_decref(ctx);
	free(text);
	return fflush(stdout) == 0 ? 0 : 1;
}
