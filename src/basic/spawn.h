/* Starting a child program with exactly the file descriptors, signal state
 * and session the caller asks for. The child gets stdin/stdout/stderr from
 * the given fds (or /dev/null), keeps only the listed extra fds (at their
 * numbers), has an empty signal mask and default dispositions, so nothing the
 * agent blocked for its signalfd leaks into runc or conmon, and the explicit
 * environment of child-env.h unless the caller passes one. Exec failures
 * (missing binary, no permission) are reported synchronously by spawn()
 * through a close-on-exec pipe, as posix_spawn does. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SPAWN_FD_NULL (-1)
#define SPAWN_KEEP_FDS_MAX 16

typedef struct SpawnOptions {
        char *const *argv; /* argv[0]: absolute path, or a name searched in $PATH */
        char *const *envp; /* NULL: child_env_new()'s, never the agent's own */
        int stdin_fd;      /* SPAWN_FD_NULL: /dev/null */
        int stdout_fd;
        int stderr_fd;
        const int *keep_fds; /* kept open, same numbers, close-on-exec cleared; each >= 3, at most
                                SPAWN_KEEP_FDS_MAX */
        size_t n_keep_fds;
        const char *cwd;   /* NULL: inherit */
        bool new_session;  /* setsid() */
        int pdeath_signal; /* 0: none; else PR_SET_PDEATHSIG */
} SpawnOptions;

#define SPAWN_OPTIONS_INIT                                                                         \
        { .stdin_fd = SPAWN_FD_NULL, .stdout_fd = SPAWN_FD_NULL, .stderr_fd = SPAWN_FD_NULL }

/* Forks and execs o->argv. Returns 0 with the child's pid and, when
 * ret_pidfd is non-NULL, a pidfd (O_CLOEXEC) for it; or -errno if fork or
 * exec failed (the failed child is already reaped then, with a wait that is
 * bounded but blocking: for the CLI, never for the event loop). The caller
 * reaps the child. */
int spawn(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd);
/* spawn() without any wait, for the event loop: on failure *ret_pid is
 * either 0 (no child was made) or a child that failed to exec or was
 * SIGKILLed because no pidfd could be had; it is dead or dying and the
 * caller reaps it (event_reap_later()). */
int spawn_nowait(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd);

/* In a freshly forked child: empty signal mask, default dispositions. */
void spawn_reset_signals(void);
/* In a freshly forked child: closes every fd >= 3 except keep[0..n). */
void spawn_close_all_fds(const int *keep, size_t n);

/* Searches name in $PATH (or the standard system directories when $PATH is
 * unset or lacks it). name containing '/' is checked as is. Returns 0 and
 * an allocated absolute path, -ENOENT or -EACCES. */
int find_executable(const char *name, char **ret_path);
