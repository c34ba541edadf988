/* Unit tests for lib/base/spawn.c: exit status, stderr kept, timeouts kill the
 * whole process group, missing programs, stdout redirection, and the
 * child's group dying with the parent. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/base/spawn.h"
#include "t.h"

#define SH(cmd) ((char *const[]){"sh", "-c", cmd, NULL})

static int
msg_is(const char *want)
{
	if (strcmp(llm_errmsg(), want) == 0)
		return 1;
	fprintf(stderr, "  message: '%s'\n  wanted:  '%s'\n", llm_errmsg(), want);
	return 0;
}

/* Run f with our stderr sent to a file; return what it wrote. */
static char *
capture_stderr(int (*f)(void *), void *arg, int *rc)
{
	char *path = llm_path_join(t_tmpdir(), "stderr.txt");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), saved = dup(2);
	char *data = NULL;
	fflush(stderr);
	dup2(fd, 2);
	close(fd);
	*rc = f(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if (llm_read_file(path, &data, NULL) < 0)
		data = llm_xstrdup("");
	free(path);
	return data;
}

T_TEST(success_returns_zero)
{
	struct llm_buf err = {0};
	T_CHECK(llm_spawn(SH("exit 0"), NULL, &err) == 0);
	T_CHECK(err.len == 0);
	char *const argv[] = {"true", NULL};
	T_CHECK(llm_spawn(argv, NULL, NULL) == 0);
}

T_TEST(exit_status_is_reported_and_stderr_kept)
{
	struct llm_buf err = {0};
	llm_buf_puts(&err, "before\n");
	T_CHECK(llm_spawn(SH("echo 'error: bad op' >&2; exit 3"), NULL, &err) == -1);
	T_CHECK(msg_is("sh: exited with status 3"));
	T_CHECKF(strcmp(err.p, "before\nerror: bad op\n") == 0, "%s", err.p);
	llm_buf_free(&err);
	/* The tool name is the last component of argv[0]. */
	char *const argv[] = {"/bin/sh", "-c", "exit 1", NULL};
	T_CHECK(llm_spawn(argv, NULL, &err) == -1);
	T_CHECK(msg_is("sh: exited with status 1"));
	llm_buf_free(&err);
}

T_TEST(exit_127_with_output_is_an_exit_status)
{
	struct llm_buf err = {0};
	T_CHECK(llm_spawn(SH("echo 'not found' >&2; exit 127"), NULL, &err) == -1);
	T_CHECK(msg_is("sh: exited with status 127"));
	llm_buf_free(&err);
	llm_buf_puts(&err, "earlier output\n");
	T_CHECK(llm_spawn(SH("exit 127"), NULL, &err) == -1);
	T_CHECK(msg_is("sh: cannot run"));
	llm_buf_free(&err);
}

static int
run_127_passthrough(void *arg)
{
	return llm_spawn(SH("echo 'not found' >&2; exit 127"), NULL, NULL);
}

T_TEST(exit_127_passed_through_is_an_exit_status)
{
	int rc;
	char *out = capture_stderr(run_127_passthrough, NULL, &rc);
	T_CHECK(rc == -1);
	T_CHECKF(strcmp(out, "not found\n") == 0, "%s", out);
	T_CHECK(msg_is("sh: exited with status 127"));
	free(out);
}

T_TEST(large_stderr_is_collected_without_deadlock)
{
	struct llm_buf err = {0};
	struct llm_spawn_opts o = {.timeout = 20};
	T_CHECK(llm_spawn(SH("head -c 300000 /dev/zero | tr '\\0' x >&2"), &o, &err) == 0);
	T_CHECK(err.len == 300000);
	T_CHECK(err.p[0] == 'x' && err.p[299999] == 'x' && err.p[300000] == 0);
	llm_buf_free(&err);
}

T_TEST(signal_death_is_reported)
{
	T_CHECK(llm_spawn(SH("kill -KILL $$"), NULL, NULL) == -1);
	T_CHECK(msg_is("sh: killed by signal 9"));
}

T_TEST(timeout_kills_the_tool)
{
	struct llm_spawn_opts o = {.timeout = 0.3};
	double t0 = llm_now();
	T_CHECK(llm_spawn(SH("sleep 20"), &o, NULL) == -1);
	T_CHECK(msg_is("sh: timed out after 0.3 s"));
	T_CHECK(llm_now() - t0 < 5);
}

T_TEST(timeout_kills_grandchildren_holding_stderr)
{
	struct llm_spawn_opts o = {.timeout = 0.3};
	struct llm_buf err = {0};
	double t0 = llm_now();
	/* The background sleep keeps stderr open after sh is gone. */
	T_CHECK(llm_spawn(SH("echo started >&2; sleep 20 & sleep 20"), &o, &err) == -1);
	T_CHECK(msg_is("sh: timed out after 0.3 s"));
	T_CHECK(strcmp(err.p, "started\n") == 0);
	T_CHECK(llm_now() - t0 < 5);
	llm_buf_free(&err);
}

T_TEST(timeout_applies_after_stderr_is_closed)
{
	struct llm_spawn_opts o = {.timeout = 0.3};
	double t0 = llm_now();
	T_CHECK(llm_spawn(SH("exec 2>&-; sleep 20"), &o, NULL) == -1);
	T_CHECK(msg_is("sh: timed out after 0.3 s"));
	T_CHECK(llm_now() - t0 < 5);
}

T_TEST(fast_tool_under_timeout_succeeds)
{
	struct llm_spawn_opts o = {.timeout = 30};
	double t0 = llm_now();
	T_CHECK(llm_spawn(SH("exec 2>&-; exit 0"), &o, NULL) == 0);
	T_CHECK(llm_spawn(SH("exit 4"), &o, NULL) == -1);
	T_CHECK(msg_is("sh: exited with status 4"));
	T_CHECK(llm_now() - t0 < 10);
}

T_TEST(missing_program_cannot_run)
{
	char *const argv[] = {"llm-no-such-program", "-x", NULL};
	T_CHECK(llm_spawn(argv, NULL, NULL) == -1);
	T_CHECK(msg_is("llm-no-such-program: cannot run: No such file or directory"));
	char *const argv2[] = {"/nonexistent/dir/mlir-opt", NULL};
	T_CHECK(llm_spawn(argv2, NULL, NULL) == -1);
	T_CHECK(msg_is("mlir-opt: cannot run: No such file or directory"));
}

T_TEST(stdin_is_dev_null)
{
	struct llm_spawn_opts o = {.timeout = 10};
	char *out = llm_path_join(t_tmpdir(), "stdin.txt");
	o.stdout_path = out;
	T_CHECK(llm_spawn(SH("wc -c"), &o, NULL) == 0);
	char *data;
	T_CHECK(llm_read_file(out, &data, NULL) == 0);
	T_CHECKF(atoi(data) == 0, "%s", data);
	free(data);
	free(out);
}

T_TEST(stdout_path_receives_stdout)
{
	char *out = llm_path_join(t_tmpdir(), "out.txt");
	struct llm_spawn_opts o = {.stdout_path = out};
	struct llm_buf err = {0};
	char *data;
	T_CHECK(llm_write_file(out, "old contents that are longer\n", 29) == 0);
	T_CHECK(llm_spawn(SH("echo hello; echo warn >&2"), &o, &err) == 0);
	T_CHECK(llm_read_file(out, &data, NULL) == 0);
	T_CHECKF(strcmp(data, "hello\n") == 0, "%s", data); /* truncated */
	T_CHECK(strcmp(err.p, "warn\n") == 0);
	free(data);
	llm_buf_free(&err);
	free(out);
}

T_TEST(unwritable_stdout_path_names_the_file)
{
	char *out = llm_path_join(t_tmpdir(), "no/such/dir/out.txt");
	char *want = llm_xasprintf("%s: No such file or directory", out);
	struct llm_spawn_opts o = {.stdout_path = out};
	T_CHECK(llm_spawn(SH("echo hello"), &o, NULL) == -1);
	T_CHECK(msg_is(want));
	free(want);
	free(out);
}

static int
run_verbose(void *arg)
{
	struct llm_spawn_opts o = {.verbose = 1};
	char *const argv[] = {"sh", "-c", "echo \"it's\" >&2", "arg with space", "", NULL};
	return llm_spawn(argv, &o, NULL);
}

T_TEST(verbose_echoes_a_shell_quoted_command_line)
{
	int rc;
	char *out = capture_stderr(run_verbose, NULL, &rc);
	T_CHECK(rc == 0);
	const char *want = "sh -c 'echo \"it'\\''s\" >&2' 'arg with space' ''\nit's\n";
	T_CHECKF(strcmp(out, want) == 0, "%s", out);
	free(out);
}

/* State of a process from /proc: 0 if gone or a zombie. */
static int
alive(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

T_TEST(terminating_the_parent_kills_the_tool)
{
	char *pidfile = llm_path_join(t_tmpdir(), "tool.pid");
	char *cmd = llm_xasprintf("echo $$ > %s.tmp && mv %s.tmp %s; exec sleep 30", pidfile, pidfile, pidfile);
	pid_t parent = fork(), tool = 0;
	int status;

	T_CHECK(parent >= 0);
	if (parent == 0) {
		char *const argv[] = {"sh", "-c", cmd, NULL};
		llm_spawn(argv, NULL, NULL);
		_exit(0);
	}
	for (int i = 0; i < 500 && !tool; i++) {
		char *data;
		if (llm_read_file(pidfile, &data, NULL) == 0) {
			tool = atoi(data);
			free(data);
		} else
			usleep(10000);
	}
	if (!tool) {
		kill(parent, SIGKILL);
		waitpid(parent, &status, 0);
	}
	T_CHECK(tool > 0);
	usleep(100000); /* let sh exec sleep */
	kill(parent, SIGTERM);
	T_CHECK(waitpid(parent, &status, 0) == parent);
	T_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	int gone = 0;
	for (int i = 0; i < 300 && !(gone = !alive(tool)); i++)
		usleep(10000);
	if (!gone)
		kill(tool, SIGKILL); /* do not leave it behind */
	T_CHECK(gone);
	free(cmd);
	free(pidfile);
}

T_TEST(argv_builds_a_terminated_vector_of_copies)
{
	struct llm_argv a = {0};
	char word[] = "cc";
	llm_argv_add(&a, word);
	word[0] = 'x'; /* a copy was taken */
	llm_argv_addf(&a, "-L%s/%d", "lib", 22);
	llm_argv_words(&a, "  ccache \tgcc -O2 ");
	T_CHECK(a.n == 5 && a.v[5] == NULL);
	T_CHECK(strcmp(a.v[0], "cc") == 0 && strcmp(a.v[1], "-Llib/22") == 0);
	T_CHECK(strcmp(a.v[2], "ccache") == 0 && strcmp(a.v[3], "gcc") == 0 && strcmp(a.v[4], "-O2") == 0);
	llm_argv_free(&a);
	T_CHECK(a.n == 0 && a.v == NULL);
}

T_TEST(tool_lookup_follows_the_environment)
{
	char *old = getenv("LLVM_BINDIR") ? llm_xstrdup(getenv("LLVM_BINDIR")) : NULL;
	setenv("LLVM_BINDIR", "/opt/llvm/bin", 1);
	setenv("LLM_TEST_TOOL", "", 1);
	char *t = llm_llvm_tool("LLM_TEST_TOOL", "llc");
	T_CHECK(strcmp(t, "/opt/llvm/bin/llc") == 0);
	free(t);
	setenv("LLM_TEST_TOOL", "my-llc", 1);
	t = llm_llvm_tool("LLM_TEST_TOOL", "llc");
	T_CHECK(strcmp(t, "my-llc") == 0);
	free(t);
	unsetenv("LLM_TEST_TOOL");
	if (old) {
		setenv("LLVM_BINDIR", old, 1);
		free(old);
	} else
		unsetenv("LLVM_BINDIR");
	/* sh is on $PATH; a path is itself; a missing tool is NULL */
	t = llm_which("sh");
	T_CHECK(t && t[0] == '/' && access(t, X_OK) == 0);
	free(t);
	t = llm_which("./x/y");
	T_CHECK(t && strcmp(t, "./x/y") == 0);
	free(t);
	T_CHECK(llm_which("no-such-tool-llm") == NULL);
}

int
main(void)
{
	T_RUN(success_returns_zero);
	T_RUN(exit_status_is_reported_and_stderr_kept);
	T_RUN(exit_127_with_output_is_an_exit_status);
	T_RUN(exit_127_passed_through_is_an_exit_status);
	T_RUN(large_stderr_is_collected_without_deadlock);
	T_RUN(signal_death_is_reported);
	T_RUN(timeout_kills_the_tool);
	T_RUN(timeout_kills_grandchildren_holding_stderr);
	T_RUN(timeout_applies_after_stderr_is_closed);
	T_RUN(fast_tool_under_timeout_succeeds);
	T_RUN(missing_program_cannot_run);
	T_RUN(stdin_is_dev_null);
	T_RUN(stdout_path_receives_stdout);
	T_RUN(unwritable_stdout_path_names_the_file);
	T_RUN(verbose_echoes_a_shell_quoted_command_line);
	T_RUN(terminating_the_parent_kills_the_tool);
	T_RUN(argv_builds_a_terminated_vector_of_copies);
	T_RUN(tool_lookup_follows_the_environment);
	return T_DONE();
}
