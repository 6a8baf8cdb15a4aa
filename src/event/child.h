/* One child process supervised by the event loop: spawned with spawn()
 * (spawn.h) in a session and process group of its own, watched through a
 * pidfd child source, its stdout/stderr read from non-blocking pipes as data
 * arrives and capped, optionally fed stdin from a memfd (so writing the
 * input can never block the loop, whatever its size), and killed — the whole
 * process group — on timeout, child_kill() or child_free().
 *
 * Reaping is always the loop's: done runs once the child is reaped (its
 * exit status in child_get_status()), after the pipes are drained of what
 * is in them (a grandchild holding them open cannot delay completion).
 * child_free() on a running child kills its group and hands the pid to a
 * source owned by the loop, which reaps it later; nothing ever waits
 * blocking. If the Event itself is freed before that source fires, the
 * zombie stays until the agent exits (its parent is gone then; init reaps
 * it). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "event.h"

typedef struct Child Child;

typedef enum ChildCapture {
        CHILD_CAPTURE_NONE,     /* stdout and stderr to /dev/null */
        CHILD_CAPTURE_SEPARATE, /* stdout and stderr into two buffers */
        CHILD_CAPTURE_MERGED,   /* both into the stdout buffer, one pipe */
        CHILD_CAPTURE_STDOUT,   /* stdout into a buffer; stderr is the caller's own */
} ChildCapture;

typedef struct ChildOptions {
        char *const *argv;
        char *const *envp; /* NULL: child_env_new()'s */
        const char *cwd;
        const int *keep_fds; /* as in SpawnOptions */
        size_t n_keep_fds;
        int pdeath_signal;
        const char *input; /* non-NULL: stdin from a memfd holding input */
        size_t input_size;
        ChildCapture capture;
        size_t stdout_max; /* bytes kept; the rest is read and dropped */
        size_t stderr_max;
        usec_t timeout; /* 0 or USEC_INFINITY: none */
} ChildOptions;

/* Called once, after the child is reaped. The callback may free c. */
typedef void (*child_done_t)(Child *c, void *userdata);

/* Spawns o->argv. Exec failures come back here (spawn() reports them
 * synchronously), never through done. */
int child_spawn(Event *e, const ChildOptions *o, child_done_t done, void *userdata, Child **ret);
/* Supervises a child this process forked itself (not its own process
 * group: kills reach only the child). On failure the child is killed and
 * left to the loop (or, without a pidfd, to the agent's exit). */
int child_adopt(Event *e, pid_t pid, usec_t timeout, child_done_t done, void *userdata,
                Child **ret);

/* SIGKILLs the child's process group (or the child) while it is not
 * reaped; done follows once it is. */
void child_kill(Child *c);
/* A running child is killed and left to the loop to reap; no callback. */
Child *child_free(Child *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Child *, child_free)
#define _cleanup_child_free_ _cleanup_(child_freep)

/* child_free() for a child whose end needs one more step once it is
 * reaped (unmounting what it may have mounted, removing a file it may be
 * creating): a running child is killed and reaped(userdata) runs from the
 * loop after the reaping, or from event_free() if the loop ends first; for
 * a child that already exited it runs now. reaped owns userdata either
 * way, and runs exactly once. */
void child_free_then(Child *c, void (*reaped)(void *userdata), void *userdata);

pid_t child_get_pid(const Child *c);
bool child_exited(const Child *c);
bool child_timed_out(const Child *c);
/* waitid()'s si_code (CLD_EXITED, CLD_KILLED, CLD_DUMPED; 0 if someone
 * else reaped it) and si_status. */
void child_get_status(const Child *c, int *ret_code, int *ret_status);
/* Captured output, NUL-terminated, "" when none. */
const char *child_stdout(const Child *c, size_t *ret_size);
const char *child_stderr(const Child *c, size_t *ret_size);
bool child_stdout_truncated(const Child *c);
bool child_stderr_truncated(const Child *c);
/* Reads what is in the pipes now, without blocking. */
void child_drain(Child *c);
/* For a helper whose every failure is a warning: false when it exited 0;
 * otherwise logs "<what> failed (exit status N|signal N[, timed out]):
 * <stderr>" and returns true. */
bool child_warn_failure(const Child *c, const char *what);
