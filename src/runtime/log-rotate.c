/* Container log rotation; see log-rotate.h. */
#include "log-rotate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "rm-rf.h"
#include "self-helper.h"
#include "spawn.h"
#include "string-util.h"
#include "strv.h"

#define COMPRESS_SUFFIX ".gz"
#define TMP_SUFFIX ".tmp"
/* conmon's REOPEN_LOGS_EVENT; the two numbers are a window size it ignores. */
#define CONMON_REOPEN_MESSAGE "2 0 0\n"

/* Sort key of a rotated name: the name without ".gz", so that a file keeps
 * its place once compressed (the UTC stamps are fixed-width). */
static int compare_rotated(const void *a, const void *b) {
        const char *x = *(char *const *)a, *y = *(char *const *)b;
        size_t lx = strlen(x), ly = strlen(y);
        if (endswith(x, COMPRESS_SUFFIX))
                lx -= strlen(COMPRESS_SUFFIX);
        if (endswith(y, COMPRESS_SUFFIX))
                ly -= strlen(COMPRESS_SUFFIX);
        int c = memcmp(x, y, MIN(lx, ly));
        if (c != 0)
                return c;
        return lx < ly ? -1 : lx > ly ? 1 : 0;
}

/* All names "<base>.*" in dir_fd. */
static int list_with_prefix(int dir_fd, const char *base, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        size_t blen = strlen(base);
        int r = opendir_fd(dir_fd, NULL, 0, &d);

        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                if (strncmp(de->d_name, base, blen) != 0 || de->d_name[blen] != '.' ||
                    de->d_name[blen + 1] == 0)
                        continue;
                if (strv_extend(&names, de->d_name) < 0)
                        return -ENOMEM;
        }
        if (errno != 0)
                return -errno;
        *ret = TAKE_PTR(names);
        return 0;
}

/* kubelet's "in use": not temporary, and not a plain file already compressed. */
static bool rotated_in_use(const char *name, char *const *all) {
        if (endswith(name, TMP_SUFFIX))
                return false;
        if (endswith(name, COMPRESS_SUFFIX))
                return true;
        _cleanup_free_ char *gz = strprintf("%s" COMPRESS_SUFFIX, name);
        return !(gz && strv_contains(all, gz));
}

int container_log_list_rotated(int dir_fd, const char *base, char ***ret) {
        _cleanup_strv_free_ char **all = NULL, **used = NULL;
        int r;

        r = list_with_prefix(dir_fd, base, &all);
        if (r < 0)
                return r;
        STRV_FOREACH(n, all)
                if (rotated_in_use(*n, all) && strv_extend(&used, *n) < 0)
                        return -ENOMEM;
        if (used)
                qsort(used, strv_length(used), sizeof(char *), compare_rotated);
        *ret = TAKE_PTR(used);
        return 0;
}

static int write_gz_all(gzFile gz, const char *buf, size_t n) {
        while (n > 0) {
                unsigned chunk = (unsigned)MIN(n, (size_t)1 << 20);
                int w = gzwrite(gz, buf, chunk);
                if (w <= 0)
                        return -EIO;
                buf += w;
                n -= (size_t)w;
        }
        return 0;
}

int container_log_open(int dir_fd, const char *name) {
        /* O_NONBLOCK: a FIFO planted under a log name must not hang the
         * reader; it is refused below anyway. */
        _cleanup_close_ int fd =
                openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        return TAKE_FD(fd);
}

int container_log_compress(int dir_fd, const char *name) {
        _cleanup_free_ char *tmp = strprintf("%s" TMP_SUFFIX, name);
        _cleanup_free_ char *gzname = strprintf("%s" COMPRESS_SUFFIX, name);
        _cleanup_close_ int in = -EBADF;
        char buf[65536];
        int r = 0;

        if (!tmp || !gzname)
                return -ENOMEM;
        in = container_log_open(dir_fd, name);
        if (in < 0)
                return in;
        /* A fixed mode: the source's could be anything a container chose. A
         * leftover tmp (a file of ours, or something planted) goes first, so
         * that O_EXCL creates a fresh file and never writes through a link. */
        if (unlinkat(dir_fd, tmp, 0) < 0 && errno != ENOENT)
                return -errno;
        int out = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                         CONTAINER_LOG_MODE);
        if (out < 0)
                return -errno;
        /* Exactly this mode, whatever the umask. */
        if (fchmod(out, CONTAINER_LOG_MODE) < 0) {
                r = -errno;
                safe_close(out);
                (void)unlinkat(dir_fd, tmp, 0);
                return r;
        }
        /* gzclose() closes out; a dup keeps an fd for fsync. */
        _cleanup_close_ int sync_fd = fcntl(out, F_DUPFD_CLOEXEC, 3);
        gzFile gz = gzdopen(out, "wb");
        if (!gz) {
                safe_close(out);
                r = -ENOMEM;
                goto fail;
        }
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        break;
                }
                if (n == 0)
                        break;
                r = write_gz_all(gz, buf, (size_t)n);
                if (r < 0)
                        break;
        }
        if (gzclose(gz) != Z_OK && r == 0)
                r = -EIO;
        if (r == 0 && sync_fd >= 0 && fsync(sync_fd) < 0)
                r = -errno;
        if (r < 0)
                goto fail;
        if (renameat(dir_fd, tmp, dir_fd, gzname) < 0) {
                r = -errno;
                goto fail;
        }
        if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
fail:
        (void)unlinkat(dir_fd, tmp, 0);
        return r;
}

int container_log_request_reopen(const char *ctl_path) {
        /* Non-blocking: without conmon reading the FIFO the open fails with
         * ENXIO instead of waiting for a reader. */
        _cleanup_close_ int fd =
                open(ctl_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        struct stat st;

        if (fd < 0)
                return errno == ENOENT ? -ENXIO : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISFIFO(st.st_mode))
                return -ENXIO;
        /* Shorter than PIPE_BUF: written whole or not at all. */
        ssize_t n = write(fd, CONMON_REOPEN_MESSAGE, strlen(CONMON_REOPEN_MESSAGE));
        if (n < 0)
                return -errno;
        return n == (ssize_t)strlen(CONMON_REOPEN_MESSAGE) ? 0 : -EIO;
}

static int split_path(const char *path, char **ret_dir, const char **ret_base) {
        const char *slash = strrchr(path, '/');
        if (!slash) {
                char *dot = strdup(".");
                if (!dot)
                        return -ENOMEM;
                *ret_dir = dot;
                *ret_base = path;
                return 0;
        }
        if (slash[1] == 0)
                return -EINVAL;
        char *dir = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
        if (!dir)
                return -ENOMEM;
        *ret_dir = dir;
        *ret_base = slash + 1;
        return 0;
}

/* Whether dir_fd/name is a log file this module may open, rename and
 * compress: a regular file with no other name. Anything else under a log
 * name was put there by a container that can write to the directory (a
 * hostPath of it): a symlink to a host file, a FIFO that would block the
 * worker, a directory, a hard link. Such an entry is removed — unlinkat()
 * and rm_rf_at() never follow a link — and logged, once, since it is gone
 * afterwards. Returns 1 for a log file, 0 when the name was planted (or
 * vanished), or a negative errno. */
static int check_log_entry(int dir_fd, const char *dir, const char *name) {
        struct stat st;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISREG(st.st_mode) && st.st_nlink <= 1)
                return 1;
        const char *what = S_ISLNK(st.st_mode)   ? "symlink"
                           : S_ISDIR(st.st_mode) ? "directory"
                           : S_ISREG(st.st_mode) ? "hard-linked file"
                                                 : "special file";
        int r = rm_rf_at(dir_fd, name);
        if (r < 0)
                return log_warning_errno(r,
                                         "Container log directory %s holds a %s \"%s\" (not "
                                         "followed); cannot remove it: %m",
                                         dir, what, name);
        log_warning("Removed a %s \"%s\" from container log directory %s: a container put it "
                    "where a log file belongs (it was not followed).",
                    what, name, dir);
        return 0;
}

/* Opens the directory of logs_root/log_path (relative) and points
 * *ret_base into log_path at the file name. */
static int open_log_dir(const char *logs_root, const char *log_path, char **ret_dir,
                        const char **ret_base) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int root_fd = -EBADF;
        const char *base;

        if (!logs_root || !log_path || log_path[0] == '/')
                return -EINVAL;
        int r = split_path(log_path, &dir, &base);
        if (r < 0)
                return r;
        /* The root is the operator's (it may be reached through a symlink);
         * what lies below it can be a container's. */
        root_fd = open(logs_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return -errno;
        int dir_fd = openat_no_symlinks(root_fd, dir, O_RDONLY | O_DIRECTORY, 0);
        if (dir_fd < 0)
                return dir_fd;
        *ret_dir = TAKE_PTR(dir);
        *ret_base = base;
        return dir_fd;
}

int container_log_prepare(const char *logs_root, const char *log_path) {
        _cleanup_free_ char *dir = NULL, *tmp = NULL;
        _cleanup_close_ int dir_fd = -EBADF, fd = -EBADF;
        const char *base;
        int r;

        dir_fd = open_log_dir(logs_root, log_path, &dir, &base);
        if (dir_fd < 0)
                return dir_fd;
        tmp = strprintf("%s" TMP_SUFFIX, base);
        if (!tmp)
                return -ENOMEM;
        r = check_log_entry(dir_fd, dir, tmp);
        if (r < 0)
                return r;
        r = check_log_entry(dir_fd, dir, base);
        if (r != 0)
                return r < 0 ? r : 0;
        fd = openat(dir_fd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    CONTAINER_LOG_MODE);
        if (fd < 0)
                return -errno;
        /* The agent's umask must not decide what conmon would have given. */
        if (fchmod(fd, CONTAINER_LOG_MODE) < 0)
                return -errno;
        return 0;
}

int container_log_rotate(const char *logs_root, const char *log_path, const char *ctl_path,
                         const LogRotatePolicy *p, time_t now) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_strv_free_ char **all = NULL, **rotated = NULL;
        _cleanup_close_ int dir_fd = -EBADF;
        const char *base;
        struct stat st;
        int r;

        if (!p || p->max_files < 2 || p->max_size <= 0)
                return -EINVAL;
        dir_fd = open_log_dir(logs_root, log_path, &dir, &base);
        if (dir_fd < 0)
                return dir_fd;
        r = check_log_entry(dir_fd, dir, base);
        if (r < 0)
                return r;
        if (r == 0) {
                /* Missing, or something planted in its place, now removed:
                 * conmon creates a fresh live file on reopen. */
                r = container_log_request_reopen(ctl_path);
                return r < 0 ? r : 0;
        }
        if (fstatat(dir_fd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (st.st_size < p->max_size)
                return 0;

        char stamp[32];
        struct tm tm;
        if (!gmtime_r(&now, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm) == 0)
                return -EINVAL;
        _cleanup_free_ char *target = strprintf("%s.%s", base, stamp);
        _cleanup_free_ char *target_gz = strprintf("%s.%s" COMPRESS_SUFFIX, base, stamp);
        if (!target || !target_gz)
                return -ENOMEM;
        /* Two rotations within one second: the next pass does it. */
        if (faccessat(dir_fd, target, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
            faccessat(dir_fd, target_gz, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;

        r = list_with_prefix(dir_fd, base, &all);
        if (r < 0)
                return r;
        STRV_FOREACH(n, all) {
                r = check_log_entry(dir_fd, dir, *n);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                if (rotated_in_use(*n, all)) {
                        if (strv_extend(&rotated, *n) < 0)
                                return -ENOMEM;
                } else if (unlinkat(dir_fd, *n, 0) < 0 && errno != ENOENT)
                        return -errno;
        }
        size_t n = strv_length(rotated);
        if (n > 0)
                qsort(rotated, n, sizeof(char *), compare_rotated);
        /* Oldest first, so that a reader going through them in order meets
         * a gap only at the start. */
        size_t keep = p->max_files - 2, i = 0;
        for (; n - i > keep; i++)
                if (unlinkat(dir_fd, rotated[i], 0) < 0 && errno != ENOENT)
                        return -errno;
        for (; i < n; i++) {
                if (endswith(rotated[i], COMPRESS_SUFFIX))
                        continue;
                r = container_log_compress(dir_fd, rotated[i]);
                if (r < 0)
                        return r;
        }

        if (renameat(dir_fd, base, dir_fd, target) < 0)
                return -errno;
        r = container_log_request_reopen(ctl_path);
        if (r < 0) {
                /* conmon keeps writing to the file it has open, whatever its
                 * name: put the name back so the next pass can try again. */
                if (renameat(dir_fd, target, dir_fd, base) < 0)
                        log_warning_errno(errno, "Failed to rename %s/%s back to %s: %m", dir,
                                          target, base);
                return r;
        }
        return 1;
}

static int read_plain(int fd, container_log_data_fn fn, void *userdata) {
        char buf[65536];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return 0;
                int r = fn(buf, (size_t)n, userdata);
                if (r < 0)
                        return r;
        }
}

static int read_gz(int fd, container_log_data_fn fn, void *userdata) {
        char buf[65536];
        gzFile gz = gzdopen(fd, "rb");
        if (!gz) {
                safe_close(fd);
                return -ENOMEM;
        }
        int r = 0;
        for (;;) {
                int n = gzread(gz, buf, sizeof(buf));
                if (n < 0) {
                        r = -EBADMSG;
                        break;
                }
                if (n == 0)
                        break;
                r = fn(buf, (size_t)n, userdata);
                if (r < 0)
                        break;
        }
        (void)gzclose_r(gz);
        return r;
}

int container_log_read(int dir_fd, const char *name, container_log_data_fn fn, void *userdata) {
        _cleanup_free_ char *gzname = NULL;
        bool compressed = endswith(name, COMPRESS_SUFFIX);
        int fd = container_log_open(dir_fd, name);

        if (fd == -ENOENT && !compressed) {
                gzname = strprintf("%s" COMPRESS_SUFFIX, name);
                if (!gzname)
                        return -ENOMEM;
                fd = container_log_open(dir_fd, gzname);
                compressed = true;
        }
        if (fd < 0)
                return fd;
        if (compressed)
                return read_gz(fd, fn, userdata); /* takes fd */
        int r = read_plain(fd, fn, userdata);
        safe_close(fd);
        return r;
}

/* ---- the asynchronous driver ---- */

typedef struct RotateJob {
        char *logs_root;
        char *log_path;
        char *ctl_path;
} RotateJob;

typedef struct RotateWorker {
        LogRotator *rotator;
        pid_t pid; /* 0: idle */
        EventSource *source;
} RotateWorker;

struct LogRotator {
        Event *event;
        LogRotatePolicy policy;
        RotateJob *jobs;
        size_t n_jobs;
        RotateWorker *workers; /* policy.max_workers of them */
        unsigned n_busy;
};

static void jobs_clear(LogRotator *r) {
        for (size_t i = 0; i < r->n_jobs; i++) {
                free(r->jobs[i].logs_root);
                free(r->jobs[i].log_path);
                free(r->jobs[i].ctl_path);
        }
        free(r->jobs);
        r->jobs = NULL;
        r->n_jobs = 0;
}

/* Kills a worker still running; the loop reaps it, nothing here waits. */
static void worker_abort(RotateWorker *w) {
        w->source = event_source_free(w->source);
        if (w->pid <= 0)
                return;
        (void)kill(w->pid, SIGKILL);
        event_reap_later(w->rotator->event, w->pid);
        w->pid = 0;
        w->rotator->n_busy--;
}

int log_rotator_new(LogRotator **ret, Event *e, const LogRotatePolicy *p) {
        if (!p || p->max_files < 2 || p->max_size <= 0)
                return -EINVAL;
        LogRotator *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->event = e;
        r->policy = *p;
        if (r->policy.max_workers == 0)
                r->policy.max_workers = 1;
        r->workers = calloc(r->policy.max_workers, sizeof(RotateWorker));
        if (!r->workers) {
                free(r);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < r->policy.max_workers; i++)
                r->workers[i].rotator = r;
        *ret = r;
        return 0;
}

LogRotator *log_rotator_free(LogRotator *r) {
        if (!r)
                return NULL;
        for (unsigned i = 0; i < r->policy.max_workers; i++)
                worker_abort(&r->workers[i]);
        jobs_clear(r);
        free(r->workers);
        free(r);
        return NULL;
}

bool log_rotator_busy(const LogRotator *r) {
        return r && r->n_busy > 0;
}

int log_rotator_consider(LogRotator *r, const char *logs_root, const char *log_path,
                         const char *ctl_path) {
        _cleanup_free_ char *full = NULL;
        struct stat st;

        if (!r || !logs_root || !log_path || !ctl_path)
                return -EINVAL;
        if (r->n_busy > 0)
                return 0;
        full = strprintf("%s/%s", logs_root, log_path);
        if (!full)
                return -ENOMEM;
        /* Only a size; the worker checks what the name really is. */
        if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < r->policy.max_size)
                return 0;
        RotateJob *n = realloc(r->jobs, sizeof(RotateJob) * (r->n_jobs + 1));
        if (!n)
                return -ENOMEM;
        r->jobs = n;
        RotateJob *j = &r->jobs[r->n_jobs];
        j->logs_root = strdup(logs_root);
        j->log_path = strdup(log_path);
        j->ctl_path = strdup(ctl_path);
        if (!j->logs_root || !j->log_path || !j->ctl_path) {
                free(j->logs_root);
                free(j->log_path);
                free(j->ctl_path);
                return -ENOMEM;
        }
        r->n_jobs++;
        return 0;
}

static int on_worker_exit(EventSource *s, const siginfo_t *si, void *userdata) {
        RotateWorker *w = userdata;

        if (si->si_code != CLD_EXITED || si->si_status != 0)
                log_warning("Container log rotation worker %d failed (%s %d).", (int)w->pid,
                            si->si_code == CLD_EXITED ? "exit status" : "signal", si->si_status);
        w->pid = 0;
        w->source = event_source_free(w->source);
        w->rotator->n_busy--;
        return 0;
}

/* argv after SELF_HELPER_VERB: LOG_ROTATE_HELPER_MODE MAX_SIZE MAX_FILES NOW
 * then LOGS_ROOT LOG_PATH CTL_PATH per log. */
#define HELPER_FIXED_ARGS 4

int log_rotate_helper_main(int argc, char **argv) {
        LogRotatePolicy policy = {};
        long long max_size, now;
        unsigned max_files;
        char *end;

        if (argc < HELPER_FIXED_ARGS + 3 || (argc - HELPER_FIXED_ARGS) % 3 != 0 ||
            !streq(argv[0], LOG_ROTATE_HELPER_MODE) || safe_atou(argv[2], &max_files) < 0) {
                log_error("Internal helper mode \"%s\": wrong arguments.", argc > 0 ? argv[0] : "");
                return EXIT_FAILURE;
        }
        errno = 0;
        max_size = strtoll(argv[1], &end, 10);
        bool bad = errno != 0 || *end != 0;
        now = strtoll(argv[3], &end, 10);
        if (bad || errno != 0 || *end != 0) {
                log_error("Internal helper mode \"%s\": wrong arguments.", argv[0]);
                return EXIT_FAILURE;
        }
        policy.max_size = max_size;
        policy.max_files = max_files;
        for (int i = HELPER_FIXED_ARGS; i + 2 < argc; i += 3) {
                const char *log_path = argv[i + 1];
                int k = container_log_rotate(argv[i], log_path, argv[i + 2], &policy, (time_t)now);
                if (k > 0)
                        log_debug("Rotated container log %s.", log_path);
                else if (k == -ENXIO)
                        log_debug("Not rotating %s: its conmon is gone.", log_path);
                else if (k < 0)
                        log_warning_errno(k, "Failed to rotate container log %s: %m", log_path);
        }
        return EXIT_SUCCESS;
}

/* A worker for the jobs first, first + step, ... */
static int worker_spawn(LogRotator *r, size_t first, size_t step, pid_t *ret) {
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_free_ char **argv = NULL;
        char max_size[24], max_files[16], now[24];
        size_t n = 0;

        int k = self_helper_env(&env);
        if (k < 0)
                return k;
        argv = calloc(3 + HELPER_FIXED_ARGS + 3 * r->n_jobs + 1, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        (void)snprintf(max_size, sizeof(max_size), "%lld", (long long)r->policy.max_size);
        (void)snprintf(max_files, sizeof(max_files), "%u", r->policy.max_files);
        (void)snprintf(now, sizeof(now), "%lld", (long long)time(NULL));
        argv[n++] = (char *)self_helper_exe();
        argv[n++] = (char *)SELF_HELPER_VERB;
        argv[n++] = (char *)LOG_ROTATE_HELPER_MODE;
        argv[n++] = max_size;
        argv[n++] = max_files;
        argv[n++] = now;
        for (size_t i = first; i < r->n_jobs; i += step) {
                argv[n++] = r->jobs[i].logs_root;
                argv[n++] = r->jobs[i].log_path;
                argv[n++] = r->jobs[i].ctl_path;
        }
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        o.envp = env;
        /* Its warnings go where the agent's go, as a forked worker's did. */
        o.stdout_fd = STDOUT_FILENO;
        o.stderr_fd = STDERR_FILENO;
        pid_t pid = 0;
        int q = spawn_nowait(&o, &pid, NULL);
        if (q < 0) {
                event_reap_later(r->event, pid);
                return q;
        }
        *ret = pid;
        return 0;
}

int log_rotator_run(LogRotator *r) {
        if (!r)
                return -EINVAL;
        if (r->n_jobs == 0 || r->n_busy > 0) {
                jobs_clear(r);
                return 0;
        }
        /* Dealt out in turn, so that each worker gets a share of the logs,
         * not the next one in the list only. */
        size_t n = MIN((size_t)r->policy.max_workers, r->n_jobs);
        int k = 0;
        for (size_t i = 0; i < n && k >= 0; i++) {
                RotateWorker *w = &r->workers[i];
                pid_t pid;
                k = worker_spawn(r, i, n, &pid);
                if (k < 0)
                        break;
                w->pid = pid;
                r->n_busy++;
                k = event_add_child(r->event, &w->source, pid, on_worker_exit, w);
                if (k < 0)
                        /* Unwatched, nobody would reap it or know it ended:
                         * stop it (the next pass cleans up its half-done
                         * file). */
                        worker_abort(w);
        }
        jobs_clear(r);
        return k < 0 ? k : (int)n;
}
