/* Unit tests for lib/base/json.c: load errors with line:col, typed getters,
 * missing keys, integral reals, reproducible output. */
#include <dirent.h>
#include <ftw.h>

#include "../../lib/base/json.h"
#include "../../lib/base/util.h"
#include "t.h"

static char *
write_tmp(const char *name, const char *text)
{
	char *path = llm_path_join(t_tmpdir(), name);
	if (llm_write_file(path, text, strlen(text)) < 0) {
		fprintf(stderr, "%s\n", llm_errmsg());
		exit(2);
	}
	return path;
}

T_TEST(load_parses_a_file)
{
	char *path = write_tmp("ok.json", "{\"a\": 1, \"b\": [true, null]}\n");
	json_t *j = llm_json_load(path);
	T_CHECK(j != NULL);
	T_CHECK(json_integer_value(json_object_get(j, "a")) == 1);
	T_CHECK(json_array_size(json_object_get(j, "b")) == 2);
	json_decref(j);
	free(path);
}

T_TEST(load_error_names_file_line_and_column)
{
	char *path = write_tmp("bad.json", "{\n  \"a\": 1,\n  \"b\" 2\n}\n");
	char *want = llm_xasprintf("%s:3:", path);
	T_CHECK(llm_json_load(path) == NULL);
	T_CHECKF(strncmp(llm_errmsg(), want, strlen(want)) == 0, "%s", llm_errmsg());
	/* jansson's column: the offending token ends at column 7 of line 3. */
	free(want);
	want = llm_xasprintf("%s:3:7: ", path);
	T_CHECKF(strncmp(llm_errmsg(), want, strlen(want)) == 0, "%s", llm_errmsg());
	T_CHECK(strchr(llm_errmsg(), '\n') == NULL);
	free(want);
	free(path);
}

T_TEST(load_rejects_truncated_empty_and_trailing_garbage)
{
	const char *bad[] = {"{\"a\": [1, 2", "", "{} x", "{\"a\": 1, \"a\": 2}", "[1,]", "\"\\ud800\""};
	for (size_t i = 0; i < LLM_NELEM(bad); i++) {
		char *path = write_tmp("t.json", bad[i]);
		json_t *j = llm_json_load(path);
		T_CHECKF(j == NULL, "accepted '%s'", bad[i]);
		T_CHECKF(strncmp(llm_errmsg(), path, strlen(path)) == 0, "%s", llm_errmsg());
		free(path);
	}
}

T_TEST(load_missing_file_gives_strerror)
{
	char *path = llm_path_join(t_tmpdir(), "nonexistent.json");
	char *want = llm_xasprintf("%s: No such file or directory", path);
	T_CHECK(llm_json_load(path) == NULL);
	T_CHECKF(strcmp(llm_errmsg(), want) == 0, "%s", llm_errmsg());
	free(want);
	free(path);
}

T_TEST(loadb_uses_the_given_name)
{
	const char *text = "{\"x\": }";
	json_t *j = llm_json_loadb(text, strlen(text), "header of m.safetensors");
	T_CHECK(j == NULL);
	T_CHECKF(strncmp(llm_errmsg(), "header of m.safetensors:1:", 26) == 0, "%s", llm_errmsg());
	j = llm_json_loadb("[1]xyz", 3, "buf"); /* only len bytes are read */
	T_CHECK(j != NULL && json_array_size(j) == 1);
	json_decref(j);
}

/* transformers writes model_max_length = 1e30 as an integer: read as a
 * real; integers that fit stay integers; other errors still fail. */
T_TEST(too_big_integers_read_as_reals)
{
	const char *text = "{\"model_max_length\": 1000000000000000019884624838656, \"n\": 7,\n"
			   " \"neg\": -99999999999999999999, \"list\": [1, 123456789012345678901234567890]}";
	json_t *j = llm_json_loadb(text, strlen(text), "tokenizer_config.json");
	T_CHECKF(j != NULL, "%s", llm_errmsg());
	json_t *m = json_object_get(j, "model_max_length"), *n = json_object_get(j, "n");
	T_CHECK(json_is_real(m) && json_real_value(m) == 1e30);
	T_CHECK(json_is_integer(n) && json_integer_value(n) == 7);
	T_CHECK(json_is_real(json_object_get(j, "neg")) && json_real_value(json_object_get(j, "neg")) == -1e20);
	T_CHECK(json_is_real(json_array_get(json_object_get(j, "list"), 1)));
	T_CHECK(json_integer_value(json_array_get(json_object_get(j, "list"), 0)) == 1);
	json_decref(j);
	const char *bad = "{\"a\": 100000000000000000000000, \"b\": }";
	T_CHECK(llm_json_loadb(bad, strlen(bad), "x") == NULL);
	T_CHECKF(strncmp(llm_errmsg(), "x:1:", 4) == 0, "%s", llm_errmsg());
}

static json_t *
sample(void)
{
	const char *text = "{\"i\": 42, \"neg\": -7, \"big\": 9007199254740993, \"r\": 1e4, \"r2\": 10000.0,"
			   " \"half\": 1.5, \"huge\": 1e300, \"s\": \"text\", \"t\": true, \"f\": false,"
			   " \"n\": null, \"arr\": [1], \"obj\": {}}";
	json_t *j = llm_json_loadb(text, strlen(text), "sample.json");
	if (!j) {
		fprintf(stderr, "%s\n", llm_errmsg());
		exit(2);
	}
	return j;
}

T_TEST(int_getter_accepts_integers_and_integral_reals)
{
	json_t *j = sample();
	int64_t v = 0;
	T_CHECK(llm_json_int(j, "i", "c", &v) == 0 && v == 42);
	T_CHECK(llm_json_int(j, "neg", "c", &v) == 0 && v == -7);
	T_CHECK(llm_json_int(j, "big", "c", &v) == 0 && v == 9007199254740993LL);
	T_CHECK(llm_json_int(j, "r", "c", &v) == 0 && v == 10000);
	T_CHECK(llm_json_int(j, "r2", "c", &v) == 0 && v == 10000);
	v = 5;
	T_CHECK(llm_json_int(j, "half", "c", &v) == -1 && v == 5);
	T_CHECKF(strcmp(llm_errmsg(), "c: key 'half': expected an integer") == 0, "%s", llm_errmsg());
	T_CHECK(llm_json_int(j, "huge", "c", &v) == -1 && v == 5);
	T_CHECK(llm_json_int(j, "s", "c", &v) == -1);
	T_CHECK(llm_json_int(j, "t", "c", &v) == -1);
	T_CHECK(llm_json_int(j, "arr", "c", &v) == -1);
	json_decref(j);
}

T_TEST(num_str_bool_getters_check_types)
{
	json_t *j = sample();
	double d = 0;
	const char *s = NULL;
	int b = -1;
	T_CHECK(llm_json_num(j, "half", "c", &d) == 0 && d == 1.5);
	T_CHECK(llm_json_num(j, "i", "c", &d) == 0 && d == 42);
	T_CHECK(llm_json_num(j, "s", "c", &d) == -1);
	T_CHECKF(strcmp(llm_errmsg(), "c: key 's': expected a number") == 0, "%s", llm_errmsg());
	T_CHECK(llm_json_str(j, "s", "c", &s) == 0 && strcmp(s, "text") == 0);
	T_CHECK(llm_json_str(j, "i", "c", &s) == -1);
	T_CHECKF(strcmp(llm_errmsg(), "c: key 'i': expected a string") == 0, "%s", llm_errmsg());
	T_CHECK(llm_json_bool(j, "t", "c", &b) == 0 && b == 1);
	T_CHECK(llm_json_bool(j, "f", "c", &b) == 0 && b == 0);
	T_CHECK(llm_json_bool(j, "i", "c", &b) == -1);
	T_CHECKF(strcmp(llm_errmsg(), "c: key 'i': expected true or false") == 0, "%s", llm_errmsg());
	json_decref(j);
}

T_TEST(required_getters_reject_missing_and_null)
{
	json_t *j = sample();
	int64_t v;
	double d;
	const char *s;
	int b;
	T_CHECK(llm_json_int(j, "nope", "config.json", &v) == -1);
	T_CHECKF(strcmp(llm_errmsg(), "config.json: missing key 'nope'") == 0, "%s", llm_errmsg());
	T_CHECK(llm_json_int(j, "n", "config.json", &v) == -1);
	T_CHECKF(strcmp(llm_errmsg(), "config.json: missing key 'n'") == 0, "%s", llm_errmsg());
	T_CHECK(llm_json_num(j, "nope", "x", &d) == -1);
	T_CHECK(llm_json_str(j, "nope", "x", &s) == -1);
	T_CHECK(llm_json_bool(j, "n", "x", &b) == -1);
	/* A non-object has no keys. */
	json_t *arr = json_object_get(j, "arr"); /* borrowed */
	T_CHECK(llm_json_int(arr, "i", "x", &v) == -1);
	T_CHECK(llm_json_int(NULL, "i", "x", &v) == -1);
	json_decref(j);
}

T_TEST(optional_getters_leave_default_when_missing_or_null)
{
	json_t *j = sample();
	int64_t v = 99;
	double d = 0.25;
	const char *s = "dflt";
	int b = 7;
	T_CHECK(llm_json_int_opt(j, "nope", "c", &v) == 0 && v == 99);
	T_CHECK(llm_json_int_opt(j, "n", "c", &v) == 0 && v == 99);
	T_CHECK(llm_json_num_opt(j, "n", "c", &d) == 0 && d == 0.25);
	T_CHECK(llm_json_str_opt(j, "nope", "c", &s) == 0 && strcmp(s, "dflt") == 0);
	T_CHECK(llm_json_bool_opt(j, "nope", "c", &b) == 0 && b == 7);
	T_CHECK(llm_json_int_opt(j, "i", "c", &v) == 1 && v == 42);
	T_CHECK(llm_json_bool_opt(j, "t", "c", &b) == 1 && b == 1);
	/* Present with the wrong type: an error, not a default. */
	T_CHECK(llm_json_int_opt(j, "s", "c", &v) == -1 && v == 42);
	T_CHECK(llm_json_str_opt(j, "obj", "c", &s) == -1);
	json_decref(j);
}

T_TEST(dumps_keeps_insertion_order_and_ends_with_newline)
{
	json_t *o = json_object();
	json_object_set_new(o, "zeta", json_integer(1));
	json_object_set_new(o, "alpha", json_real(0.1));
	json_object_set_new(o, "mid", json_pack("[ii]", 2, 3));
	char *s = llm_json_dumps(o);
	const char *want = "{\n  \"zeta\": 1,\n  \"alpha\": 0.10000000000000001,\n"
			   "  \"mid\": [\n    2,\n    3\n  ]\n}\n";
	T_CHECKF(strcmp(s, want) == 0, "%s", s);
	/* Reals survive a round trip bit for bit. */
	json_t *back = llm_json_loadb(s, strlen(s), "dump");
	T_CHECK(back && json_real_value(json_object_get(back, "alpha")) == 0.1);
	json_decref(back);
	free(s);
	json_decref(o);
}

T_TEST(write_is_atomic_and_reloads)
{
	char *dir = llm_path_join(t_tmpdir(), "w");
	char *path = llm_path_join(dir, "m.json");
	json_t *o = json_pack("{s:s, s:i}", "format", "llm-model/1", "n", 3);
	T_CHECK(llm_mkdirs(dir) == 0);
	T_CHECK(llm_json_write(path, o) == 0);
	json_t *back = llm_json_load(path);
	T_CHECK(back && json_equal(back, o));
	/* Nothing but the output in the directory. */
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	T_CHECK(n == 1);
	/* A directory that does not exist: error, no file. */
	char *bad = llm_path_join(dir, "no/such/m.json");
	T_CHECK(llm_json_write(bad, o) == -1);
	T_CHECK(!llm_file_exists(bad));
	free(bad);
	json_decref(back);
	json_decref(o);
	free(path);
	free(dir);
}

int
main(void)
{
	T_RUN(load_parses_a_file);
	T_RUN(load_error_names_file_line_and_column);
	T_RUN(load_rejects_truncated_empty_and_trailing_garbage);
	T_RUN(load_missing_file_gives_strerror);
	T_RUN(loadb_uses_the_given_name);
	T_RUN(int_getter_accepts_integers_and_integral_reals);
	T_RUN(num_str_bool_getters_check_types);
	T_RUN(required_getters_reject_missing_and_null);
	T_RUN(optional_getters_leave_default_when_missing_or_null);
	T_RUN(dumps_keeps_insertion_order_and_ends_with_newline);
	T_RUN(write_is_atomic_and_reloads);
	T_RUN(too_big_integers_read_as_reals);
	return T_DONE();
}
