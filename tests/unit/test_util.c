/* Unit tests for lib/base/util.c: errors, numbers, buffers, atomic output. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/base/util.h"
#include "t.h"

static int
count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

T_TEST(seterr_appends_strerror_after_colon)
{
	errno = ENOENT;
	T_CHECK(llm_seterr("open %s:", "x.bin") == -1);
	T_CHECK(strcmp(llm_errmsg(), "open x.bin: No such file or directory") == 0);
	llm_seterr("%s: bad magic", "w.bin");
	T_CHECK(strcmp(llm_errmsg(), "w.bin: bad magic") == 0);
	/* a message built on the previous one (the buffer is an argument) */
	llm_seterr("tokenizer.json: regex matching failed: %s", "match limit exceeded");
	llm_seterr("%s: %s", "<stdin>:1", llm_errmsg());
	T_CHECK(strcmp(llm_errmsg(), "<stdin>:1: tokenizer.json: regex matching failed: match limit exceeded") == 0);
}

T_TEST(parse_i64_checks_whole_string_and_range)
{
	int64_t v;
	T_CHECK(llm_parse_i64("42", 0, 100, &v) == 0 && v == 42);
	T_CHECK(llm_parse_i64("-3", -5, 5, &v) == 0 && v == -3);
	T_CHECK(llm_parse_i64("42x", 0, 100, &v) == -1);
	T_CHECK(llm_parse_i64("", 0, 100, &v) == -1);
	T_CHECK(llm_parse_i64("101", 0, 100, &v) == -1);
	T_CHECK(strstr(llm_errmsg(), "out of range") != NULL);
	T_CHECK(llm_parse_i64("99999999999999999999", 0, INT64_MAX, &v) == -1);
}

T_TEST(parse_f64_rejects_junk_and_nonfinite)
{
	double d;
	T_CHECK(llm_parse_f64("0.5", &d) == 0 && d == 0.5);
	T_CHECK(llm_parse_f64("1e-6", &d) == 0 && d == 1e-6);
	T_CHECK(llm_parse_f64("nan", &d) == -1);
	T_CHECK(llm_parse_f64("inf", &d) == -1);
	T_CHECK(llm_parse_f64("1.0.0", &d) == -1);
}

T_TEST(buf_grows_and_stays_terminated)
{
	struct llm_buf b = {0};
	for (int i = 0; i < 1000; i++)
		llm_buf_printf(&b, "%d,", i);
	T_CHECK(b.len == strlen(b.p));
	T_CHECK(strncmp(b.p, "0,1,2,", 6) == 0);
	T_CHECK(strcmp(b.p + b.len - 4, "999,") == 0);
	llm_buf_free(&b);
}

T_TEST(atomic_output_appears_only_on_commit)
{
	char *dir = llm_path_join(t_tmpdir(), "atomic");
	char *path = llm_path_join(dir, "out.txt");
	struct llm_out o;
	char *data;

	T_CHECK(llm_mkdirs(dir) == 0);
	T_CHECK(llm_out_open(&o, path) == 0);
	fputs("hello", o.fp);
	T_CHECK(!llm_file_exists(path));
	T_CHECK(count_entries(dir) == 1); /* the temporary */
	T_CHECK(llm_out_commit(&o) == 0);
	T_CHECK(llm_read_file(path, &data, NULL) == 0);
	T_CHECK(strcmp(data, "hello") == 0);
	T_CHECK(count_entries(dir) == 1);
	free(data);

	/* Abort leaves the old file alone and no temporary behind. */
	T_CHECK(llm_out_open(&o, path) == 0);
	fputs("partial", o.fp);
	llm_out_abort(&o);
	T_CHECK(llm_read_file(path, &data, NULL) == 0);
	T_CHECK(strcmp(data, "hello") == 0);
	T_CHECK(count_entries(dir) == 1);
	free(data);
	free(path);
	free(dir);
}

/* Outputs through symbolic links and onto files that are not regular:
 * the link stays a link, its target (at the end of a chain, created when
 * missing) gets the data; a FIFO or a device is written in place, never
 * replaced; a directory is refused. */
T_TEST(output_through_links_and_into_special_files)
{
	char *dir = llm_path_join(t_tmpdir(), "special");
	char *target = llm_path_join(dir, "target"), *link1 = llm_path_join(dir, "link1");
	char *link2 = llm_path_join(dir, "link2"), *fifo = llm_path_join(dir, "fifo");
	char *dev = llm_path_join(dir, "null"), *data;
	struct stat st;

	T_CHECK(llm_mkdirs(dir) == 0);
	/* link2 -> link1 -> target (missing): the target is created */
	T_CHECK(symlink("target", link1) == 0 && symlink(link1, link2) == 0);
	T_CHECK(llm_write_file(link2, "one", 3) == 0);
	T_CHECK(lstat(link2, &st) == 0 && S_ISLNK(st.st_mode) && lstat(link1, &st) == 0 && S_ISLNK(st.st_mode));
	T_CHECK(llm_read_file(target, &data, NULL) == 0 && strcmp(data, "one") == 0);
	free(data);
	/* an existing target is replaced, the links stay */
	T_CHECK(llm_write_file(link2, "two", 3) == 0);
	T_CHECK(lstat(link1, &st) == 0 && S_ISLNK(st.st_mode));
	T_CHECK(llm_read_file(target, &data, NULL) == 0 && strcmp(data, "two") == 0);
	free(data);
	T_CHECK(count_entries(dir) == 3);
	/* a loop of links is an error */
	char *la = llm_path_join(dir, "la"), *lb = llm_path_join(dir, "lb");
	T_CHECK(symlink("lb", la) == 0 && symlink("la", lb) == 0);
	T_CHECK(llm_write_file(la, "x", 1) < 0 && strstr(llm_errmsg(), "symbolic links") != NULL);
	/* a FIFO is written in place: a child reads what was written */
	T_CHECK(mkfifo(fifo, 0600) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		char buf[16] = {0};
		int fd = open(fifo, O_RDONLY);
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		_exit(n == 5 && strcmp(buf, "fifo!") == 0 ? 0 : 1);
	}
	T_CHECK(llm_write_file(fifo, "fifo!", 5) == 0);
	int status;
	T_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	T_CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	/* a character device (made here, as root only) stays one */
	if (mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0) {
		T_CHECK(llm_write_file(dev, "gone", 4) == 0);
		T_CHECK(lstat(dev, &st) == 0 && S_ISCHR(st.st_mode));
	}
	/* a directory is refused, naming it */
	T_CHECK(llm_write_file(dir, "x", 1) < 0 && strstr(llm_errmsg(), "is a directory") != NULL);
	free(la);
	free(lb);
	free(dev);
	free(fifo);
	free(link2);
	free(link1);
	free(target);
	free(dir);
}

T_TEST(fatal_removes_open_temporaries)
{
	char *dir = llm_path_join(t_tmpdir(), "fatal");
	char *path = llm_path_join(dir, "out.bin");
	int status;
	pid_t pid;

	T_CHECK(llm_mkdirs(dir) == 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		struct llm_out o;
		freopen("/dev/null", "w", stderr);
		if (llm_out_open(&o, path) < 0)
			_exit(3);
		fputs("partial", o.fp);
		fflush(o.fp);
		llm_fatal("%s: simulated failure", path);
	}
	T_CHECK(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == LLM_EXIT_FAIL);
	/* the temporary is gone, and so is the folder llm_mkdirs made for it */
	T_CHECK(access(dir, F_OK) != 0 && errno == ENOENT);
	free(path);
	free(dir);
}

/* A signal runs every registered cleanup: an open output's temporary and
 * another module's (as lower.c registers its work directory). */
static char *sig_extra;

static void
remove_extra(void)
{
	unlink(sig_extra);
}

T_TEST(signal_runs_every_cleanup)
{
	char *dir = llm_path_join(t_tmpdir(), "signal");
	char *path = llm_path_join(dir, "out.bin");
	int status;
	pid_t pid;

	sig_extra = llm_path_join(dir, "extra");
	T_CHECK(llm_mkdirs(dir) == 0);
	T_CHECK(llm_write_file(sig_extra, "x", 1) == 0);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		struct llm_out o;
		llm_atsignal(remove_extra); /* before and after the output's */
		if (llm_out_open(&o, path) < 0)
			_exit(3);
		llm_atsignal(remove_extra);
		fputs("partial", o.fp);
		fflush(o.fp);
		raise(SIGTERM);
		_exit(4);
	}
	T_CHECK(waitpid(pid, &status, 0) == pid);
	T_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	T_CHECK(count_entries(dir) == 0);
	free(sig_extra);
	free(path);
	free(dir);
}

T_TEST(out_open_fails_in_missing_directory)
{
	struct llm_out o;
	T_CHECK(llm_out_open(&o, "/nonexistent-dir/x") == -1);
	T_CHECK(strstr(llm_errmsg(), "/nonexistent-dir/x") != NULL);
}

T_TEST(map_file_maps_contents_and_rejects_directories)
{
	char *path = llm_path_join(t_tmpdir(), "map.bin");
	struct llm_map m;
	T_CHECK(llm_write_file(path, "abc", 3) == 0);
	T_CHECK(llm_map_file(&m, path) == 0);
	T_CHECK(m.len == 3 && memcmp(m.p, "abc", 3) == 0);
	llm_unmap(&m);
	T_CHECK(llm_map_file(&m, t_tmpdir()) == -1);
	T_CHECK(strstr(llm_errmsg(), "not a regular file") != NULL);
	T_CHECK(llm_map_file(&m, "/nonexistent") == -1);
	free(path);
}

T_TEST(path_join_handles_slashes)
{
	char *p = llm_path_join("a/", "b");
	T_CHECK(strcmp(p, "a/b") == 0);
	free(p);
	p = llm_path_join("a", "/abs");
	T_CHECK(strcmp(p, "/abs") == 0);
	free(p);
}

T_TEST(fnv1a_matches_known_vectors)
{
	T_CHECK(llm_fnv1a(LLM_FNV_INIT, "", 0) == 0xcbf29ce484222325ULL);
	T_CHECK(llm_fnv1a(LLM_FNV_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
	T_CHECK(llm_fnv1a(LLM_FNV_INIT, "foobar", 6) == 0x85944171f73967e8ULL);
}

/* A message is one line: control characters are written as escapes. */
T_TEST(messages_are_one_line)
{
	llm_seterr("%s: near '%s'", "a\nb.json", "x\ty\r\001");
	T_CHECKF(strcmp(llm_errmsg(), "a\\nb.json: near 'x\\ty\\r\\x01'") == 0, "%s", llm_errmsg());
}

int
main(void)
{
	llm_setprog("test_util");
	T_RUN(seterr_appends_strerror_after_colon);
	T_RUN(parse_i64_checks_whole_string_and_range);
	T_RUN(parse_f64_rejects_junk_and_nonfinite);
	T_RUN(buf_grows_and_stays_terminated);
	T_RUN(atomic_output_appears_only_on_commit);
	T_RUN(output_through_links_and_into_special_files);
	T_RUN(fatal_removes_open_temporaries);
	T_RUN(messages_are_one_line);
	T_RUN(out_open_fails_in_missing_directory);
	T_RUN(signal_runs_every_cleanup);
	T_RUN(map_file_maps_contents_and_rejects_directories);
	T_RUN(path_join_handles_slashes);
	T_RUN(fnv1a_matches_known_vectors);
	return T_DONE();
}
