/* spawn.c: see spawn.h. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spawn.h"

extern char **environ;

/* While a tool runs, a SIGINT/SIGTERM/SIGHUP to us ends its process group
 * too (it is in its own group, so a terminal's ^C does not reach it):
 * SIGTERM, so that our own tools and make remove their temporaries, then
 * SIGKILL for what is left once the tool has ended or a second has
 * passed.  Then on to the handler that was there before (util.c's
 * removes temporaries) or to the default action.  One tool runs at a
 * time. */
static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction fwd_old[LLM_NELEM(fwd_sigs)];
static volatile sig_atomic_t fwd_pgid;

static void
fwd_handler(int sig)
{
	if (fwd_pgid > 0) {
		pid_t g = (pid_t)fwd_pgid;
		kill(-g, SIGTERM);
		for (int i = 0; i < 100 && waitpid(g, NULL, WNOHANG) == 0; i++)
			nanosleep(&(struct timespec){0, 10000000}, NULL);
		kill(-g, SIGKILL);
	}
	for (size_t i = 0; i < LLM_NELEM(fwd_sigs); i++) {
		if (fwd_sigs[i] != sig)
			continue;
		if (!(fwd_old[i].sa_flags & SA_SIGINFO) && fwd_old[i].sa_handler != SIG_DFL &&
		    fwd_old[i].sa_handler != SIG_IGN)
			fwd_old[i].sa_handler(sig);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
echo_argv(char *const argv[])
{
	struct llm_buf b = {0};
	for (int i = 0; argv[i]; i++) {
		const char *a = argv[i];
		int quote = !*a || strpbrk(a, " \t\"'$\\*?;&|<>()") != NULL;
		if (i)
			llm_buf_puts(&b, " ");
		if (quote) {
			llm_buf_puts(&b, "'");
			for (; *a; a++)
				if (*a == '\'')
					llm_buf_puts(&b, "'\\''");
				else
					llm_buf_add(&b, a, 1);
			llm_buf_puts(&b, "'");
		} else
			llm_buf_puts(&b, a);
	}
	fprintf(stderr, "%s\n", b.p);
	llm_buf_free(&b);
}

int
llm_spawn(char *const argv[], const struct llm_spawn_opts *opts, struct llm_buf *err)
{
	static const struct llm_spawn_opts none;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	const char *tool = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	int pipefd[2], status, rc, timed_out = 0, outfd = -1;
	size_t got = 0;
	sigset_t block, oldmask;
	pid_t pid;

	if (!opts)
		opts = &none;
	if (opts->verbose)
		echo_argv(argv);
	/* Opened here, so that a bad path is reported as such. */
	if (opts->stdout_path && (outfd = open(opts->stdout_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
		return llm_seterr("%s:", opts->stdout_path);
	if (pipe2(pipefd, O_CLOEXEC) < 0) {
		rc = llm_seterr("%s: pipe:", tool);
		if (outfd >= 0)
			close(outfd);
		return rc;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (outfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, outfd, 1);
	else if (opts->stdout_to_stderr)
		posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
	/* Block the forwarded signals until the handler knows the child;
	 * the child starts with our old mask. */
	sigemptyset(&block);
	for (size_t i = 0; i < LLM_NELEM(fwd_sigs); i++)
		sigaddset(&block, fwd_sigs[i]);
	sigprocmask(SIG_BLOCK, &block, &oldmask);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &oldmask);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(pipefd[1]);
	if (outfd >= 0)
		close(outfd);
	if (rc != 0) {
		sigprocmask(SIG_SETMASK, &oldmask, NULL);
		close(pipefd[0]);
		errno = rc;
		return llm_seterr("%s: cannot run:", tool);
	}
	fwd_pgid = pid;
	for (size_t i = 0; i < LLM_NELEM(fwd_sigs); i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = fwd_handler;
		sigemptyset(&sa.sa_mask);
		sigaction(fwd_sigs[i], NULL, &fwd_old[i]);
		if (fwd_old[i].sa_handler != SIG_IGN) /* ignored stays ignored */
			sigaction(fwd_sigs[i], &sa, NULL);
	}
	sigprocmask(SIG_SETMASK, &oldmask, NULL);

	/* Collect stderr until EOF, watching the deadline. */
	double deadline = opts->timeout > 0 ? llm_now() + opts->timeout : 0;
	struct llm_buf local = {0};
	struct llm_buf *eb = err ? err : &local;
	for (;;) {
		int ms = -1;
		if (deadline) {
			double left = deadline - llm_now();
			if (left <= 0) {
				timed_out = 1;
				kill(-pid, SIGKILL);
				break;
			}
			ms = left > 3600 ? 3600000 : (int)(left * 1000) + 1;
		}
		struct pollfd p = {pipefd[0], POLLIN, 0};
		int n = poll(&p, 1, ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			continue;
		char chunk[4096];
		ssize_t r = read(pipefd[0], chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		llm_buf_add(eb, chunk, (size_t)r);
		if (!err) {
			fwrite(chunk, 1, (size_t)r, stderr);
			eb->len = 0;
		}
	}
	close(pipefd[0]);
	/* The tool may close stderr and go on running: keep the deadline. */
	for (;;) {
		pid_t w = waitpid(pid, &status, deadline && !timed_out ? WNOHANG : 0);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			rc = llm_seterr("%s: waitpid:", tool);
			goto out;
		}
		if (w == 0) {
			if (llm_now() >= deadline) {
				timed_out = 1;
				kill(-pid, SIGKILL);
			} else
				usleep(5000);
		}
	}
	if (timed_out)
		rc = llm_seterr("%s: timed out after %g s", tool, opts->timeout);
	else if (WIFSIGNALED(status))
		rc = llm_seterr("%s: killed by signal %d", tool, WTERMSIG(status));
	else if (WEXITSTATUS(status) == 127 && got == 0) /* exec failed in the child */
		rc = llm_seterr("%s: cannot run", tool);
	else if (WEXITSTATUS(status) != 0)
		rc = llm_seterr("%s: exited with status %d", tool, WEXITSTATUS(status));
	else
		rc = 0;
out:
	/* The group is reaped (or being reaped): stop forwarding signals. */
	sigprocmask(SIG_BLOCK, &block, NULL);
	fwd_pgid = 0;
	for (size_t i = 0; i < LLM_NELEM(fwd_sigs); i++)
		if (fwd_old[i].sa_handler != SIG_IGN)
			sigaction(fwd_sigs[i], &fwd_old[i], NULL);
	sigprocmask(SIG_SETMASK, &oldmask, NULL);
	llm_buf_free(&local);
	return rc;
}

void
llm_argv_add(struct llm_argv *a, const char *s)
{
	a->v = llm_xreallocarray(a->v, a->n + 2, sizeof(*a->v));
	a->v[a->n++] = llm_xstrdup(s);
	a->v[a->n] = NULL;
}

void
llm_argv_addf(struct llm_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		llm_fatal("out of memory");
	va_end(ap);
	a->v = llm_xreallocarray(a->v, a->n + 2, sizeof(*a->v));
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

void
llm_argv_words(struct llm_argv *a, const char *s)
{
	char *copy = llm_xstrdup(s), *save = NULL;
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		llm_argv_add(a, w);
	free(copy);
}

void
llm_argv_free(struct llm_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = 0;
}

#ifndef LLM_LLVM_BINDIR
#define LLM_LLVM_BINDIR "/usr/lib/llvm-22/bin"
#endif

const char *
llm_llvm_bindir(void)
{
	const char *env = getenv("LLVM_BINDIR");
	return env && *env ? env : LLM_LLVM_BINDIR;
}

char *
llm_llvm_tool(const char *env, const char *name)
{
	const char *v = getenv(env);
	if (v && *v)
		return llm_xstrdup(v);
	return llm_path_join(llm_llvm_bindir(), name);
}

char *
llm_llvm_libdir(void)
{
	const char *env = getenv("LLVM_LIBDIR"), *bindir = llm_llvm_bindir();
	size_t n = strlen(bindir);
	if (env && *env)
		return llm_xstrdup(env);
	if (n >= 4 && strcmp(bindir + n - 4, "/bin") == 0)
		return llm_xasprintf("%.*s/lib", (int)(n - 4), bindir);
	return llm_xasprintf("%s/../lib", bindir);
}

char *
llm_llvm_builtins(const char *libdir, const char *rt)
{
	return llm_xasprintf("%s/clang/%d/lib/linux/%s", libdir, atoi(LLM_LLVM_VERSION), rt);
}

char *
llm_which(const char *tool)
{
	if (strchr(tool, '/'))
		return llm_xstrdup(tool);
	const char *p = getenv("PATH");
	char *copy = llm_xstrdup(p ? p : "/usr/bin:/bin"), *save = NULL, *path = NULL;
	for (char *d = strtok_r(copy, ":", &save); d && !path; d = strtok_r(NULL, ":", &save)) {
		char *c = llm_path_join(d, tool);
		if (access(c, X_OK) == 0)
			path = c;
		else
			free(c);
	}
	free(copy);
	return path;
}
