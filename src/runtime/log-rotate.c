/* Container log rotation, the agent's side: readying a live log before a
 * start and the driver that spawns rotation workers; see log-rotate.h. The
 * file work the workers do, and the readers', is in log-rotate-files.c. */
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

#include "cleanup.h"
#include "dirent-util.h"
#include "fileio.h"
#include "log-rotate-internal.h"
#include "log.h"
#include "macro.h"
#include "rm-rf.h"
#include "child.h"
#include "helper.h"
#include "string-util.h"
#include "strv.h"

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

int log_check_entry(int dir_fd, const char *dir, const char *name) {
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

int log_open_dir(const char *logs_root, const char *log_path, char **ret_dir,
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

        dir_fd = log_open_dir(logs_root, log_path, &dir, &base);
        if (dir_fd < 0)
                return dir_fd;
        tmp = strprintf("%s" CONTAINER_LOG_TMP_SUFFIX, base);
        if (!tmp)
                return -ENOMEM;
        r = log_check_entry(dir_fd, dir, tmp);
        if (r < 0)
                return r;
        r = log_check_entry(dir_fd, dir, base);
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

/* ---- the asynchronous driver ---- */

typedef struct RotateJob {
        char *logs_root;
        char *log_path;
        char *ctl_path;
} RotateJob;

typedef struct RotateWorker {
        LogRotator *rotator;
        Child *child; /* NULL: idle */
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
        if (!w->child)
                return;
        w->child = child_free(w->child);
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

static const HelperArg rotate_args[] = {
        HELPER_ARG_I64(LogRotateArgs, max_size, "max-size", true),
        HELPER_ARG_U64(LogRotateArgs, max_files, "max-files", true),
        HELPER_ARG_I64(LogRotateArgs, now, "now", true),
        HELPER_ARG_STRV(LogRotateArgs, logs_roots, "logs-root", true),
        HELPER_ARG_STRV(LogRotateArgs, log_paths, "log-path", true),
        HELPER_ARG_STRV(LogRotateArgs, ctl_paths, "ctl-path", true),
};

const HelperMode log_rotate_helper_mode =
        HELPER_MODE_INIT("rotate-logs", LogRotateArgs, rotate_args);

static void on_worker_done(Child *c, void *userdata) {
        RotateWorker *w = userdata;
        Error err = {};

        if (helper_child_result(c, "worker", NULL, &err) < 0)
                log_warning("Container log rotation failed: %s", err.message);
        w->child = child_free(w->child);
        w->rotator->n_busy--;
}

/* A worker for the jobs first, first + step, ... */
static int worker_spawn(LogRotator *r, RotateWorker *w, size_t first, size_t step) {
        size_t n = (r->n_jobs - first + step - 1) / step;
        _cleanup_free_ char **roots = calloc(n + 1, sizeof(char *));
        _cleanup_free_ char **paths = calloc(n + 1, sizeof(char *));
        _cleanup_free_ char **ctls = calloc(n + 1, sizeof(char *));
        size_t k = 0;

        if (!roots || !paths || !ctls)
                return -ENOMEM;
        for (size_t i = first; i < r->n_jobs; i += step, k++) {
                roots[k] = r->jobs[i].logs_root;
                paths[k] = r->jobs[i].log_path;
                ctls[k] = r->jobs[i].ctl_path;
        }
        LogRotateArgs args = {
                .max_size = r->policy.max_size,
                .max_files = r->policy.max_files,
                .now = (int64_t)time(NULL),
                .logs_roots = roots,
                .log_paths = paths,
                .ctl_paths = ctls,
        };
        /* Its warnings go where the agent's go. */
        HelperSpawnOptions o = { .mode = &log_rotate_helper_mode, .args = &args };
        return helper_spawn(r->event, &o, on_worker_done, w, &w->child);
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
                k = worker_spawn(r, &r->workers[i], i, n);
                if (k >= 0)
                        r->n_busy++;
        }
        jobs_clear(r);
        return k < 0 ? k : (int)n;
}
