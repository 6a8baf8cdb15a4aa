/* Container status from files only, no child process (the PLEG relist runs
 * it every second for the containers whose exit is not watched with
 * runtime_container_pidfd(), and every syncFrequency for all).
 *
 * Supported layouts under the runtime root (<run>/runc):
 * - runc 1.1: <root>/<id>/state.json with "init_process_pid" and
 *   "init_process_start" (clock ticks since boot, /proc/<pid>/stat field 22).
 * - crun 1.x: <root>/<id>/status with "pid" and "process-start-time".
 * Both keep <root>/<id>/exec.fifo from create until start. The state is
 * derived as runc itself does: init alive with the recorded start time
 * (so a reused PID is not mistaken for it) and exec.fifo present: CREATED;
 * alive without it: RUNNING; otherwise stopped. Paused counts as RUNNING.
 *
 * STOPPED is reported once conmon's exit file exists, or conmon is gone: a
 * container that just died while its conmon is still writing the file keeps
 * its previous state for those milliseconds, so STOPPED comes with the exit
 * code whenever conmon did its job (exit_code -1 otherwise). The exit file
 * <run>/exits/<id> holds the code as decimal text; its mtime is finished_at.
 * oom_killed: conmon's <run>/conmon/<id>/oom marker. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <jansson.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "runtime-internal.h"
#include "string-util.h"

#define STATE_FILE_MAX (8U * 1024U * 1024U)

/* Returns 1 and the start time when pid exists and is not a zombie, 0 when
 * it is gone or a zombie. */
static int proc_start_time(pid_t pid, unsigned long long *ret_start) {
        char path[64];
        _cleanup_free_ char *stat = NULL;

        (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        int r = read_full_file_at(AT_FDCWD, path, 4096, &stat, NULL);
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        if (r < 0)
                return r;
        /* comm may hold spaces and parentheses: fields follow the last ')'. */
        const char *p = strrchr(stat, ')');
        if (!p)
                return -EBADMSG;
        p++;
        char state = 0;
        unsigned long long start = 0;
        /* fields 3 (state) .. 22 (starttime) */
        if (sscanf(p,
                   " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
                   "%*d %llu",
                   &state, &start) != 2)
                return -EBADMSG;
        if (state == 'Z' || state == 'X' || state == 'x')
                return 0;
        *ret_start = start;
        return 1;
}

#define STATE_CACHE_MAX 4096

static RuntimeStateCacheEntry *state_cache_find(Runtime *rt, const char *id) {
        for (size_t i = 0; i < rt->n_state_cache; i++)
                if (streq(rt->state_cache[i].id, id))
                        return &rt->state_cache[i];
        return NULL;
}

static void state_cache_put(Runtime *rt, const char *id, const struct stat *st, pid_t pid,
                            unsigned long long start) {
        RuntimeStateCacheEntry *e = state_cache_find(rt, id);
        if (!e) {
                if (rt->n_state_cache >= STATE_CACHE_MAX)
                        rt->n_state_cache = 0; /* rare: start over rather than track age */
                RuntimeStateCacheEntry *n =
                        realloc(rt->state_cache, sizeof(*n) * (rt->n_state_cache + 1));
                if (!n)
                        return; /* only a cache */
                rt->state_cache = n;
                e = &rt->state_cache[rt->n_state_cache++];
        }
        (void)snprintf(e->id, sizeof(e->id), "%s", id);
        e->dev = st->st_dev;
        e->ino = st->st_ino;
        e->size = st->st_size;
        e->mtime = st->st_mtim;
        e->pid = pid;
        e->start = start;
}

void runtime_state_cache_forget(Runtime *rt, const char *id) {
        RuntimeStateCacheEntry *e = state_cache_find(rt, id);
        if (e)
                *e = rt->state_cache[--rt->n_state_cache];
}

static int read_state(Runtime *rt, const char *id, pid_t *ret_pid, unsigned long long *ret_start) {
        _cleanup_free_ char *data = NULL;
        _cleanup_close_ int fd = -EBADF;
        char path[PATH_MAX];
        bool crun = false;
        struct stat st;
        int r;

        (void)snprintf(path, sizeof(path), "%s/%s/state.json", rt->runtime_root, id);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 && errno == ENOENT) {
                (void)snprintf(path, sizeof(path), "%s/%s/status", rt->runtime_root, id);
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                crun = true;
        }
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        RuntimeStateCacheEntry *e = state_cache_find(rt, id);
        if (e && e->dev == st.st_dev && e->ino == st.st_ino && e->size == st.st_size &&
            e->mtime.tv_sec == st.st_mtim.tv_sec && e->mtime.tv_nsec == st.st_mtim.tv_nsec) {
                *ret_pid = e->pid;
                *ret_start = e->start;
                return 0;
        }
        r = read_full_fd(fd, STATE_FILE_MAX, &data, NULL);
        if (r < 0)
                return r;

        json_t *j = json_loads(data, 0, NULL);
        if (!j)
                return -EBADMSG;
        json_t *pid = json_object_get(j, crun ? "pid" : "init_process_pid");
        json_t *start = json_object_get(j, crun ? "process-start-time" : "init_process_start");
        if (!json_is_integer(pid)) {
                json_decref(j);
                return -EBADMSG;
        }
        *ret_pid = (pid_t)json_integer_value(pid);
        *ret_start = json_is_integer(start) ? (unsigned long long)json_integer_value(start) : 0;
        json_decref(j);
        state_cache_put(rt, id, &st, *ret_pid, *ret_start);
        return 0;
}

static bool conmon_alive(Runtime *rt, const char *id) {
        char path[PATH_MAX];
        pid_t pid;

        (void)snprintf(path, sizeof(path), "%s/%s/conmon.pid", rt->conmon_dir, id);
        if (read_pid_file(path, &pid) < 0)
                return false;
        return monitor_pid_alive(pid);
}

/* Reads <exits>/<id>: 1 if present (code and mtime set), 0 if not. A file
 * there that is not the monitor's (a symlink, which is never followed, an
 * empty file, anything but a small regular file, or text that is no exit
 * code) counts as present with code -1, and ret_damaged (an errno) says why:
 * the caller decides whether it is removed. */
static int read_exit_file(Runtime *rt, const char *id, int *ret_code, usec_t *ret_mtime,
                          int *ret_damaged, Error *err) {
        char path[PATH_MAX];
        _cleanup_free_ char *s = NULL;
        struct stat st;

        *ret_damaged = 0;
        (void)snprintf(path, sizeof(path), "%s/%s", rt->exits_dir, id);
        int r = read_state_file_at(AT_FDCWD, path, 64, &s, NULL, err);
        if (r == -ENOENT)
                return 0;
        *ret_code = -1;
        *ret_mtime = 0;
        if (r < 0) {
                *ret_damaged = r;
                return 1;
        }
        if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0)
                *ret_mtime = (usec_t)st.st_mtim.tv_sec * USEC_PER_SEC +
                             (usec_t)st.st_mtim.tv_nsec / 1000;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        while (*end == '\n')
                end++;
        if (errno != 0 || end == s || *end || v < -1 || v > 255) {
                *ret_damaged = error_set(err, -EBADMSG, "\"%s\" holds no exit code", path);
                return 1;
        }
        *ret_code = (int)v;
        return 1;
}

/* Removes a damaged exit file (never what a symlink points to), once, with
 * a warning naming it. */
static void exit_file_discard(Runtime *rt, const char *id, const Error *err, const char *why) {
        char path[PATH_MAX];

        (void)snprintf(path, sizeof(path), "%s/%s", rt->exits_dir, id);
        if (unlink(path) < 0 && errno != ENOENT)
                log_debug("runtime: unlink \"%s\": %m", path);
        log_warning("%s; removed it (%s).", err->message[0] ? err->message : path, why);
}

int runtime_container_status(Runtime *rt, const char *id, RuntimeContainerStatus *ret) {
        RuntimeContainerStatus s = { .state = RUNTIME_STATE_UNKNOWN, .exit_code = -1 };
        char path[PATH_MAX];
        pid_t pid = 0;
        unsigned long long start = 0;
        int r;

        if (!rt || !ret || !container_id_valid(id))
                return -EINVAL;

        int code = -1, damaged = 0;
        usec_t mtime = 0;
        Error eerr = {};
        r = read_exit_file(rt, id, &code, &mtime, &damaged, &eerr);
        if (r < 0)
                return r;
        bool have_exit = r > 0;

        (void)snprintf(path, sizeof(path), "%s/%s/oom", rt->conmon_dir, id);
        s.oom_killed = access(path, F_OK) == 0;

        r = read_state(rt, id, &pid, &start);
        if (r == -ENOENT || r == -ENOTDIR) {
                /* Unknown to the runtime; a leftover exit file still tells
                 * how it ended (e.g. deleted while the agent was down). */
                if (have_exit) {
                        s.exit_code = code;
                        s.finished_at = mtime;
                }
                *ret = s;
                return 0;
        }
        if (r < 0)
                return r;

        (void)snprintf(path, sizeof(path), "%s/%s/exec.fifo", rt->runtime_root, id);
        bool fifo = access(path, F_OK) == 0;

        unsigned long long actual = 0;
        int alive = pid > 0 ? proc_start_time(pid, &actual) : 0;
        if (alive < 0)
                return alive;
        if (alive > 0 && start != 0 && actual != start)
                alive = 0; /* the PID was reused */
        if (have_exit && alive > 0 && start != 0) {
                /* The monitor writes the exit file after it reaped the
                 * container's process: this one is not its. */
                if (!eerr.message[0])
                        (void)error_set(&eerr, -EEXIST, "\"%s/%s\" says container %s exited",
                                        rt->exits_dir, id, id);
                exit_file_discard(rt, id, &eerr, "the container still runs");
                have_exit = false;
        } else if (have_exit && damaged)
                exit_file_discard(rt, id, &eerr, "exit code unknown");

        if (alive > 0 && !have_exit) {
                s.state = fifo ? RUNTIME_STATE_CREATED : RUNTIME_STATE_RUNNING;
                s.pid = pid;
        } else if (!have_exit && conmon_alive(rt, id)) {
                /* Dead, conmon about to write the exit file. */
                s.state = fifo ? RUNTIME_STATE_CREATED : RUNTIME_STATE_RUNNING;
                s.pid = 0;
        } else {
                s.state = RUNTIME_STATE_STOPPED;
                /* The monitor writes the exit file and then exits: when it
                 * was gone by the time it was looked at, a file that was not
                 * there at the first read may be there now. */
                if (!have_exit) {
                        r = read_exit_file(rt, id, &code, &mtime, &damaged, &eerr);
                        if (r < 0)
                                return r;
                        have_exit = r > 0;
                        if (have_exit && damaged)
                                exit_file_discard(rt, id, &eerr, "exit code unknown");
                }
                if (have_exit) {
                        s.exit_code = code;
                        s.finished_at = mtime;
                }
        }
        *ret = s;
        return 0;
}

int runtime_container_pidfd(Runtime *rt, const char *id) {
        pid_t pid = 0;
        unsigned long long start = 0, actual = 0;

        if (!rt || !container_id_valid(id))
                return -EINVAL;
        int r = read_state(rt, id, &pid, &start);
        if (r < 0)
                return r;
        if (pid <= 0)
                return -ESRCH;
        _cleanup_close_ int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                return -errno;
        /* Checked after the open: if the recorded process still has the PID
         * now, it had it at the open too (it started long before), so the
         * pidfd is its own and not a reused PID's. A zombie counts as gone:
         * its monitor is about to reap it. */
        r = proc_start_time(pid, &actual);
        if (r < 0)
                return r;
        if (r == 0 || (start != 0 && actual != start))
                return -ESRCH;
        return TAKE_FD(fd);
}
