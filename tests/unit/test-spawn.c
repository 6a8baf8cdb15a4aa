/* Tests for spawn(): exit status through the pidfd, stdio and kept fds,
 * closed fds, environment, signal state, session, cwd, exec errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child-env.h"
#include "cleanup.h"
#include "fileio.h"
#include "macro.h"
#include "spawn.h"
#include "string-util.h"
#include "strv.h"

/* Runs argv with stdout+stderr into a pipe; returns the output and the
 * exit code (waited through the pidfd). */
static char *run(const SpawnOptions *base, int *ret_code) {
        _cleanup_close_pair_ int p[2] = { -EBADF, -EBADF };
        SpawnOptions o = *base;
        pid_t pid;
        int pidfd = -EBADF;
        char *out = NULL;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        o.stdout_fd = p[1];
        o.stderr_fd = p[1];
        assert_int_equal(spawn(&o, &pid, &pidfd), 0);
        assert_true(pid > 0);
        assert_true(pidfd >= 0);
        p[1] = safe_close(p[1]);
        assert_int_equal(read_full_fd(p[0], 1 << 20, &out, NULL), 0);

        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        assert_int_equal(poll(&pfd, 1, 10000), 1);
        siginfo_t si = {};
        assert_int_equal(waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_EXITED);
        *ret_code = si.si_status;
        safe_close(pidfd);
        return out;
}

static void test_exit_code_and_output(void **state) {
        char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        int code;
        _cleanup_free_ char *out = run(&o, &code);
        assert_int_equal(code, 3);
        assert_string_equal(out, "out\nerr\n");
}

static void test_fds(void **state) {
        /* A leaked fd (no O_CLOEXEC) must be closed; a kept one stays. */
        int leaked = open("/dev/null", O_RDONLY);
        assert_true(leaked >= 3);
        int kept = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(kept >= 3);
        char cmd[256];
        (void)snprintf(cmd, sizeof(cmd),
                       "test -e /proc/self/fd/%d && echo leaked; test -e /proc/self/fd/%d && "
                       "echo kept; read x; echo \"in=$x\"",
                       leaked, kept);
        char *argv[] = { "sh", "-c", cmd, NULL };
        _cleanup_close_pair_ int in[2] = { -EBADF, -EBADF };
        assert_int_equal(pipe2(in, O_CLOEXEC), 0);
        assert_int_equal(write(in[1], "hi\n", 3), 3);
        in[1] = safe_close(in[1]);

        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        o.stdin_fd = in[0];
        o.keep_fds = &kept;
        o.n_keep_fds = 1;
        int code;
        _cleanup_free_ char *out = run(&o, &code);
        assert_int_equal(code, 0);
        assert_string_equal(out, "kept\nin=hi\n");
        /* Our own fds are untouched. */
        assert_true(fcntl(kept, F_GETFD) & FD_CLOEXEC);
        close(leaked);
        close(kept);
}

static void test_stdin_null_by_default(void **state) {
        char *argv[] = { "sh", "-c", "cat; echo done", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        int code;
        _cleanup_free_ char *out = run(&o, &code);
        assert_int_equal(code, 0);
        assert_string_equal(out, "done\n");
}

static void test_env_cwd_session(void **state) {
        char *argv[] = { "/bin/sh", "-c",
                         "echo \"$FOO\"; pwd; read a b c d e f rest < /proc/$$/stat; "
                         "test \"$f\" = $$ && echo leader",
                         NULL };
        char *envp[] = { "FOO=bar", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        o.envp = envp;
        o.cwd = "/tmp";
        o.new_session = true;
        int code;
        _cleanup_free_ char *out = run(&o, &code);
        assert_int_equal(code, 0);
        assert_string_equal(out, "bar\n/tmp\nleader\n");
}

/* What systemd and an administrator give the agent stays with the agent
 * (docs/internals/runtime.md): the default child environment is the allowlist only. */
static void test_default_env_is_clean(void **state) {
        static const char *const agent_only[] = {
                "NOTIFY_SOCKET", "WATCHDOG_USEC",         "WATCHDOG_PID", "LISTEN_FDS",
                "LISTEN_PID",    "LISTEN_FDNAMES",        "http_proxy",   "HTTPS_PROXY",
                "NO_PROXY",      "AWS_SECRET_ACCESS_KEY",
        };
        for (size_t i = 0; i < ELEMENTSOF(agent_only); i++)
                assert_int_equal(setenv(agent_only[i], "agent", 1), 0);
        assert_int_equal(setenv("TZ", "UTC", 1), 0);

        char *argv[] = { "env", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        int code;
        _cleanup_free_ char *out = run(&o, &code);
        assert_int_equal(code, 0);
        for (size_t i = 0; i < ELEMENTSOF(agent_only); i++) {
                _cleanup_free_ char *line = strprintf("%s=", agent_only[i]);
                assert_null(strstr(out, line));
        }
        assert_true(startswith(out, "PATH=/") || strstr(out, "\nPATH=/"));
        assert_non_null(strstr(out, "TZ=UTC\n"));

        for (size_t i = 0; i < ELEMENTSOF(agent_only); i++)
                assert_int_equal(unsetenv(agent_only[i]), 0);
        assert_int_equal(unsetenv("TZ"), 0);
}

static void test_child_env_new(void **state) {
        _cleanup_strv_free_ char **env = NULL;
        char *const extra[] = { "CNI_COMMAND=ADD", "PATH=/opt/bin", NULL };

        assert_int_equal(setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1), 0);
        assert_int_equal(unsetenv("TZ"), 0);
        assert_int_equal(child_env_new(extra, &env), 0);
        assert_int_equal(strv_length(env), 2);
        assert_string_equal(env[0], "PATH=/opt/bin"); /* replaced in place */
        assert_string_equal(env[1], "CNI_COMMAND=ADD");
        env = strv_free(env);

        /* No PATH in the agent: the standard one, so runc still finds its helpers. */
        _cleanup_free_ char *path = strdup(getenv("PATH"));
        assert_non_null(path);
        assert_int_equal(unsetenv("PATH"), 0);
        assert_int_equal(child_env_new(NULL, &env), 0);
        assert_int_equal(setenv("PATH", path, 1), 0);
        assert_int_equal(strv_length(env), 1);
        assert_string_equal(env[0], "PATH=" CHILD_ENV_DEFAULT_PATH);
        env = strv_free(env);

        char *const bad[] = { "NOEQUALS", NULL };
        assert_int_equal(child_env_new(bad, &env), -EINVAL);
        assert_null(env);
        assert_int_equal(unsetenv("NOTIFY_SOCKET"), 0);
}

static void test_signals_reset(void **state) {
        sigset_t s, old;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        sigaddset(&s, SIGCHLD);
        assert_int_equal(sigprocmask(SIG_BLOCK, &s, &old), 0);
        struct sigaction ign = { .sa_handler = SIG_IGN }, oldsa, oldpipe;
        assert_int_equal(sigaction(SIGUSR2, &ign, &oldsa), 0);
        /* As the agent runs: children must die of SIGPIPE as usual. */
        assert_int_equal(sigaction(SIGPIPE, &ign, &oldpipe), 0);

        char *argv[] = { "sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        int code;
        _cleanup_free_ char *out = run(&o, &code);
        assert_int_equal(code, 0);
        assert_non_null(strstr(out, "SigBlk:\t0000000000000000"));
        assert_non_null(strstr(out, "SigIgn:\t0000000000000000"));
        /* The child shares the caller's memory until it execs, not its
         * signal state: the caller keeps its mask (all blocked around the
         * clone only) and its dispositions. */
        sigset_t now;
        assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &now), 0);
        assert_true(sigismember(&now, SIGUSR1));
        assert_true(sigismember(&now, SIGCHLD));
        assert_false(sigismember(&now, SIGTERM));
        assert_false(sigismember(&now, SIGINT));
        struct sigaction cur;
        assert_int_equal(sigaction(SIGUSR2, NULL, &cur), 0);
        assert_ptr_equal(cur.sa_handler, SIG_IGN);

        assert_int_equal(sigprocmask(SIG_SETMASK, &old, NULL), 0);
        assert_int_equal(sigaction(SIGUSR2, &oldsa, NULL), 0);
        assert_int_equal(sigaction(SIGPIPE, &oldpipe, NULL), 0);
}

static void test_exec_errors(void **state) {
        char *argv[] = { "/nonexistent/binary", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        pid_t pid;
        assert_int_equal(spawn(&o, &pid, NULL), -ENOENT);

        char *argv2[] = { "no-such-program-nanolet", NULL };
        o.argv = argv2;
        assert_int_equal(spawn(&o, &pid, NULL), -ENOENT);

        /* A bad cwd fails in the child, reported synchronously. */
        char *argv3[] = { "true", NULL };
        o.argv = argv3;
        o.cwd = "/nonexistent-dir";
        assert_int_equal(spawn(&o, &pid, NULL), -ENOENT);

        int low = 1;
        o.cwd = NULL;
        o.keep_fds = &low;
        o.n_keep_fds = 1;
        assert_int_equal(spawn(&o, &pid, NULL), -EINVAL);
}

/* The loop's variant never waits: a child that failed in the child (bad cwd,
 * ENOEXEC) comes back unreaped for the caller, one that was never made as 0. */
static void test_exec_errors_nowait(void **state) {
        char *argv[] = { "true", NULL };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        siginfo_t si = {};
        pid_t pid = -1;

        o.argv = argv;
        o.cwd = "/nonexistent-dir";
        assert_int_equal(spawn_nowait(&o, &pid, NULL), -ENOENT);
        assert_true(pid > 0);
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_EXITED);
        assert_int_equal(si.si_status, 127);

        char junk[] = "/tmp/nanolet-test-spawn-XXXXXX";
        int fd = mkstemp(junk);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "\x01\x02\x03\x04", 4), 4);
        assert_int_equal(fchmod(fd, 0755), 0);
        close(fd);
        char *argv2[] = { junk, NULL };
        o.argv = argv2;
        o.cwd = NULL;
        assert_int_equal(spawn_nowait(&o, &pid, NULL), -ENOEXEC);
        assert_true(pid > 0);
        assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED), 0);
        (void)unlink(junk);

        char *argv3[] = { "/nonexistent/binary", NULL };
        o.argv = argv3;
        pid = -1;
        assert_int_equal(spawn_nowait(&o, &pid, NULL), -ENOENT);
        assert_int_equal(pid, 0); /* found missing before any fork */
        assert_int_equal(waitid(P_ALL, 0, &si, WEXITED | WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
}

static void test_find_executable(void **state) {
        _cleanup_free_ char *p = NULL;
        assert_int_equal(find_executable("sh", &p), 0);
        assert_true(p[0] == '/');
        assert_true(endswith(p, "/sh"));
        char *q = NULL;
        assert_int_equal(find_executable("/etc", &q), -EISDIR);
        assert_int_equal(find_executable("", &q), -EINVAL);
        assert_null(q);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_code_and_output),
                cmocka_unit_test(test_fds),
                cmocka_unit_test(test_stdin_null_by_default),
                cmocka_unit_test(test_env_cwd_session),
                cmocka_unit_test(test_default_env_is_clean),
                cmocka_unit_test(test_child_env_new),
                cmocka_unit_test(test_signals_reset),
                cmocka_unit_test(test_exec_errors),
                cmocka_unit_test(test_exec_errors_nowait),
                cmocka_unit_test(test_find_executable),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
