/* Container log rotation, the file work: what the rotation workers (the
 * nanolet binary in LOG_ROTATE_HELPER_MODE) and the readers of rotated logs
 * (`nanolet logs`) run; see log-rotate.h. Everything that needs zlib is
 * here, so that the agent, which links only log-rotate.c, does not map it. */
#include "log-rotate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "fileio.h"
#include "log-rotate-internal.h"
#include "log.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

/* conmon's REOPEN_LOGS_EVENT; the two numbers are a window size it ignores. */
#define CONMON_REOPEN_MESSAGE "2 0 0\n"

/* Sort key of a rotated name: the name without ".gz", so that a file keeps
 * its place once compressed (the UTC stamps are fixed-width). */
static int compare_rotated(const void *a, const void *b) {
        const char *x = *(char *const *)a, *y = *(char *const *)b;
        size_t lx = strlen(x), ly = strlen(y);
        if (endswith(x, CONTAINER_LOG_COMPRESS_SUFFIX))
                lx -= strlen(CONTAINER_LOG_COMPRESS_SUFFIX);
        if (endswith(y, CONTAINER_LOG_COMPRESS_SUFFIX))
                ly -= strlen(CONTAINER_LOG_COMPRESS_SUFFIX);
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
        if (endswith(name, CONTAINER_LOG_TMP_SUFFIX))
                return false;
        if (endswith(name, CONTAINER_LOG_COMPRESS_SUFFIX))
                return true;
        _cleanup_free_ char *gz = strprintf("%s" CONTAINER_LOG_COMPRESS_SUFFIX, name);
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
        _cleanup_free_ char *tmp = strprintf("%s" CONTAINER_LOG_TMP_SUFFIX, name);
        _cleanup_free_ char *gzname = strprintf("%s" CONTAINER_LOG_COMPRESS_SUFFIX, name);
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
        dir_fd = log_open_dir(logs_root, log_path, &dir, &base);
        if (dir_fd < 0)
                return dir_fd;
        r = log_check_entry(dir_fd, dir, base);
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
        _cleanup_free_ char *target_gz =
                strprintf("%s.%s" CONTAINER_LOG_COMPRESS_SUFFIX, base, stamp);
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
                r = log_check_entry(dir_fd, dir, *n);
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
                if (endswith(rotated[i], CONTAINER_LOG_COMPRESS_SUFFIX))
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
        bool compressed = endswith(name, CONTAINER_LOG_COMPRESS_SUFFIX);
        int fd = container_log_open(dir_fd, name);

        if (fd == -ENOENT && !compressed) {
                gzname = strprintf("%s" CONTAINER_LOG_COMPRESS_SUFFIX, name);
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

static int run_rotate(const void *args, json_t *result, Error *err) {
        const LogRotateArgs *a = args;
        size_t n = strv_length(a->log_paths);

        if (strv_length(a->logs_roots) != n || strv_length(a->ctl_paths) != n)
                return error_set(err, -EINVAL, "the lists of logs, roots and control FIFOs differ");
        if (a->max_size <= 0 || a->max_files < 2 || a->max_files > UINT_MAX)
                return error_set(err, -EINVAL, "invalid rotation policy");
        LogRotatePolicy policy = { .max_size = a->max_size, .max_files = (unsigned)a->max_files };
        for (size_t i = 0; i < n; i++) {
                const char *log_path = a->log_paths[i];
                int k = container_log_rotate(a->logs_roots[i], log_path, a->ctl_paths[i], &policy,
                                             (time_t)a->now);
                if (k > 0)
                        log_debug("Rotated container log %s.", log_path);
                else if (k == -ENXIO)
                        log_debug("Not rotating %s: its conmon is gone.", log_path);
                else if (k < 0)
                        log_warning_errno(k, "Failed to rotate container log %s: %m", log_path);
        }
        return 0;
}

const HelperMain log_rotate_helper = {
        .mode = &log_rotate_helper_mode,
        .run = run_rotate,
};
