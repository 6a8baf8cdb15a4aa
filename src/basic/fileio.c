#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "string-util.h"

/* read(), or pread() at offset when positional, again after EINTR: the
 * number of bytes read (0 at the end of the file) or -errno. */
static ssize_t read_some(int fd, void *buf, size_t size, bool positional, off_t offset) {
        for (;;) {
                ssize_t n = positional ? pread(fd, buf, size, offset) : read(fd, buf, size);
                if (n >= 0 || errno != EINTR)
                        return n < 0 ? -errno : n;
        }
}

static int write_loop(int fd, const void *data, size_t size, bool positional, uint64_t offset) {
        const char *p = data;
        while (size > 0) {
                ssize_t n = positional ? pwrite(fd, p, size, (off_t)offset) : write(fd, p, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += n;
                size -= (size_t)n;
                offset += (uint64_t)n;
        }
        return 0;
}

int write_all(int fd, const void *data, size_t size) {
        return write_loop(fd, data, size, false, 0);
}

int pwrite_all(int fd, const void *data, size_t size, uint64_t offset) {
        return write_loop(fd, data, size, true, offset);
}

int read_full_fd(int fd, size_t max_size, char **ret_data, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;

        for (;;) {
                if (cap - len < 4096) {
                        size_t nc = cap ? cap * 2 : 8192;
                        if (nc > max_size + 1 + 4096)
                                nc = max_size + 1 + 4096;
                        if (nc <= cap)
                                return -EFBIG;
                        char *nb = realloc(buf, nc);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = nc;
                }
                ssize_t n = read_some(fd, buf + len, cap - len - 1, false, 0);
                if (n < 0)
                        return (int)n;
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > max_size)
                        return -EFBIG;
        }
        if (!buf) {
                buf = malloc(1);
                if (!buf)
                        return -ENOMEM;
        }
        buf[len] = 0;
        *ret_data = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = len;
        return 0;
}

/* The size of the file open at fd, refused unless it is a regular file (a
 * FIFO or device would block or never end). */
static int regular_file_size(int fd, off_t *ret_size) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return S_ISDIR(st.st_mode) ? -EISDIR : -EBADFD;
        *ret_size = st.st_size;
        return 0;
}

int read_full_file_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                      size_t *ret_size) {
        _cleanup_close_ int fd = openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        off_t size;
        int r = regular_file_size(fd, &size);
        if (r < 0)
                return r;
        if ((uint64_t)size > max_size)
                return -EFBIG;
        return read_full_fd(fd, max_size, ret_data, ret_size);
}

int read_state_file_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                       size_t *ret_size, Error *err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        off_t fsize;

        _cleanup_close_ int fd =
                openat(dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0) {
                int r = -errno;
                if (r == -ENOENT)
                        return error_set(err, r, "\"%s\" is missing", path);
                if (r == -ELOOP)
                        return error_set(err, r, "\"%s\" is a symlink (not followed)", path);
                return error_set(err, r, "Cannot open \"%s\": %s", path, strerror(-r));
        }
        int r = regular_file_size(fd, &fsize);
        if (r == -EISDIR)
                return error_set(err, r, "\"%s\" is a directory", path);
        if (r == -EBADFD)
                return error_set(err, r, "\"%s\" is not a regular file", path);
        if (r < 0)
                return error_set(err, r, "Cannot read \"%s\": %s", path, strerror(-r));
        if (fsize == 0)
                return error_set(err, -ENODATA, "\"%s\" is empty", path);
        if ((uint64_t)fsize > max_size)
                return error_set(err, -EFBIG, "\"%s\" is larger than %zu bytes", path, max_size);
        r = read_full_fd(fd, max_size, &data, &size);
        if (r == -EFBIG)
                return error_set(err, r, "\"%s\" is larger than %zu bytes", path, max_size);
        if (r < 0)
                return error_set(err, r, "Cannot read \"%s\": %s", path, strerror(-r));
        if (size == 0)
                return error_set(err, -ENODATA, "\"%s\" is empty", path);
        *ret_data = TAKE_PTR(data);
        if (ret_size)
                *ret_size = size;
        return 0;
}

int read_file_tail_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                      size_t *ret_size, bool *ret_truncated) {
        _cleanup_close_ int fd =
                openat_no_symlinks(dir_fd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        off_t size;

        if (fd < 0)
                return fd;
        int r = regular_file_size(fd, &size);
        if (r < 0)
                return r;
        off_t offset = (uint64_t)size > max_size ? size - (off_t)max_size : 0;
        buf = malloc(max_size + 1);
        if (!buf)
                return -ENOMEM;
        /* The file may still change: never more than max_size, whatever it does. */
        while (len < max_size) {
                ssize_t n = read_some(fd, buf + len, max_size - len, true, offset + (off_t)len);
                if (n < 0)
                        return (int)n;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = 0;
        *ret_data = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = len;
        if (ret_truncated)
                *ret_truncated = offset > 0;
        return 0;
}

int openat2_resolve(int dir_fd, const char *path, int flags, mode_t mode, uint64_t resolve) {
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC),
                .mode = (flags & O_CREAT) ? mode : 0,
                .resolve = resolve,
        };
        long fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
        if (fd < 0)
                return -errno;
        return (int)fd;
}

int openat_no_symlinks(int dir_fd, const char *path, int flags, mode_t mode) {
        return openat2_resolve(dir_fd, path, flags, mode,
                               RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

static int write_file_renamed(const char *path, const void *data, size_t size, mode_t mode,
                              bool sync) {
        _cleanup_free_ char *dir_copy = strdup(path);
        if (!dir_copy)
                return -ENOMEM;
        const char *dir = dirname(dir_copy);
        _cleanup_free_ char *tmp = strprintf("%s.tmp.XXXXXX", path);
        if (!tmp)
                return -ENOMEM;
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;

        int r = write_all(fd, data, size);
        if (r < 0)
                goto fail;
        if (fchmod(fd, mode) < 0 || (sync && fsync(fd) < 0)) {
                r = -errno;
                goto fail;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                goto fail;
        }
        if (!sync)
                return 0;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0)
                (void)fsync(dfd);
        return 0;
fail:
        (void)unlink(tmp);
        return r;
}

static bool is_temp_name(const char *name) {
        const char *t = strstr(name, ".tmp.");
        if (!t || t == name)
                return false;
        /* the last ".tmp." and mkostemp()'s six characters after it */
        for (const char *n; (n = strstr(t + 1, ".tmp.")); t = n)
                ;
        t += strlen(".tmp.");
        if (strlen(t) != 6)
                return false;
        for (; *t; t++)
                if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", *t))
                        return false;
        return true;
}

int remove_stale_temp_files(const char *dir) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(AT_FDCWD, dir, O_NOFOLLOW, &d);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        int n = 0;
        FOREACH_DIRENT(de, d) {
                struct stat st;
                if (!is_temp_name(de->d_name) ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        n++;
        }
        return n;
}

int write_file_atomic(const char *path, const void *data, size_t size, mode_t mode) {
        return write_file_renamed(path, data, size, mode, true);
}

int write_file_replace(const char *path, const void *data, size_t size, mode_t mode) {
        return write_file_renamed(path, data, size, mode, false);
}

static int write_file_if_changed(const char *path, const void *data, size_t size, mode_t mode,
                                 bool sync) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) >= 0 && S_ISREG(st.st_mode) &&
            (uint64_t)st.st_size == (uint64_t)size && (st.st_mode & 07777) == mode) {
                _cleanup_free_ char *old = NULL;
                size_t n = 0;
                if (read_full_fd(fd, size, &old, &n) >= 0 && n == size &&
                    (size == 0 || memcmp(old, data, size) == 0))
                        return 0;
        }
        int r = write_file_renamed(path, data, size, mode, sync);
        return r < 0 ? r : 1;
}

int write_file_atomic_if_changed(const char *path, const void *data, size_t size, mode_t mode) {
        return write_file_if_changed(path, data, size, mode, true);
}

int write_file_replace_if_changed(const char *path, const void *data, size_t size, mode_t mode) {
        return write_file_if_changed(path, data, size, mode, false);
}

/* p is writable; restored before returning. */
static int mkdir_parents_first(char *p, mode_t mode) {
        if (mkdir(p, mode) >= 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT)
                return -errno;
        /* The parent ends before the run of slashes that precedes the last
         * component ("a//b/" -> "a"). */
        size_t end = strlen(p);
        while (end > 1 && p[end - 1] == '/')
                end--;
        while (end > 0 && p[end - 1] != '/')
                end--;
        while (end > 1 && p[end - 2] == '/')
                end--;
        if (end <= 1)
                return -ENOENT; /* no parent to make ("x", "/x") */
        p[end - 1] = 0;
        int r = mkdir_parents_first(p, mode);
        p[end - 1] = '/';
        if (r < 0)
                return r;
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int mkdir_p(const char *path, mode_t mode) {
        /* The deepest directory first, its parents only when it says
         * ENOENT: the usual call, whose parent exists, is one mkdir(2)
         * instead of one per component (each a path walk and the parent's
         * lock; ~200 per pod start with the cgroup-v1 hierarchies). */
        if (mkdir(path, mode) >= 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT)
                return -errno;
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        return mkdir_parents_first(p, mode);
}

int mkdir_p_exact(const char *path, mode_t mode) {
        int r = mkdir_p(path, mode);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* The umask trimmed a new one; an old one may have any mode. */
        if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0)
                return -errno;
        return 0;
}
