/* See pod-log-gc.h. Runs on the event loop, as the removal of the pod's
 * directory under <root-dir>/pods does: a pod's logs are bounded by
 * containerLogMaxFiles files of containerLogMaxSize per kept attempt, and
 * unlinking a file costs the same whatever its size. */
#include "pod-log-gc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "container-id.h"
#include "dirent-util.h"
#include "fileio.h"
#include "log.h"
#include "rm-rf.h"
#include "string-util.h"

static bool uid_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

const char *pod_log_dir_uid(const char *name) {
        const char *a = strchr(name, '_');
        const char *b = a ? strchr(a + 1, '_') : NULL;
        if (!b || a == name || b == a + 1 || b[1] == 0 || strchr(b + 1, '_') || strchr(name, '/'))
                return NULL;
        for (const char *p = b + 1; *p; p++)
                if (!uid_char(*p))
                        return NULL;
        return b + 1;
}

void pod_log_link_done(PodLogLink *l) {
        l->dir = mfree(l->dir);
        l->container = mfree(l->container);
        l->uid = mfree(l->uid);
}

/* "<digits>.log", no leading zero but for "0". */
static bool attempt_log_name(const char *s, unsigned *ret) {
        const char *dot = strchr(s, '.');
        if (!dot || !streq(dot, ".log") || dot == s || (s[0] == '0' && dot != s + 1))
                return false;
        _cleanup_free_ char *digits = strndup(s, (size_t)(dot - s));
        for (const char *p = digits; p && *p; p++)
                if (*p < '0' || *p > '9')
                        return false;
        return digits && safe_atou(digits, ret) >= 0;
}

int pod_log_link_parse(const char *name, const char *target, const char *pod_logs_dir,
                       PodLogLink *ret) {
        const char *rel = startswith(target, pod_logs_dir);
        if (!rel || (rel[0] != '/' && !endswith(pod_logs_dir, "/")))
                return 0;
        while (*rel == '/')
                rel++;
        const char *s1 = strchr(rel, '/');
        const char *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
        if (!s2 || s2 == s1 + 1 || strchr(s2 + 1, '/'))
                return 0;
        _cleanup_(pod_log_link_done) PodLogLink l = {
                .dir = strndup(rel, (size_t)(s1 - rel)),
                .container = strndup(s1 + 1, (size_t)(s2 - s1 - 1)),
        };
        if (!l.dir || !l.container)
                return -ENOMEM;
        const char *uid = pod_log_dir_uid(l.dir);
        if (!uid || streq(l.container, ".") || streq(l.container, "..") ||
            !attempt_log_name(s2 + 1, &l.attempt))
                return 0;
        if (!(l.uid = strdup(uid)))
                return -ENOMEM;

        /* The dir is "<ns>_<pod>_<uid>", the link "<pod>_<ns>_<container>-<id>.log". */
        const char *us = strchr(l.dir, '_');
        _cleanup_free_ char *ns = strndup(l.dir, (size_t)(us - l.dir));
        _cleanup_free_ char *pod = strndup(us + 1, (size_t)(uid - 1 - (us + 1)));
        _cleanup_free_ char *prefix =
                ns && pod ? strprintf("%s_%s_%s-", pod, ns, l.container) : NULL;
        if (!prefix)
                return -ENOMEM;
        const char *id = startswith(name, prefix);
        if (!id || !endswith(id, ".log"))
                return 0;
        _cleanup_free_ char *id_only = strndup(id, strlen(id) - strlen(".log"));
        if (!id_only)
                return -ENOMEM;
        if (id_only[0] == 0 || strchr(id_only, '/') || !container_id_of_pod(id_only, l.uid))
                return 0;
        *ret = l;
        l = (PodLogLink){};
        return 1;
}

/* The link's target, or NULL when name is not a symlink or cannot be read. */
static char *read_link(int dir_fd, const char *name) {
        struct stat st;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode))
                return NULL;
        char buf[PATH_MAX];
        ssize_t n = readlinkat(dir_fd, name, buf, sizeof buf);
        if (n <= 0 || (size_t)n >= sizeof buf)
                return NULL;
        return strndup(buf, (size_t)n);
}

/* Removes the links in container_logs_dir that are ours and that judge()
 * says to remove; returns how many went, and sets *ret_error to the first
 * failure. */
static unsigned remove_links(const char *pod_logs_dir, const char *container_logs_dir,
                             bool (*judge)(const PodLogLink *l, void *userdata), void *userdata,
                             int *ret_error) {
        _cleanup_closedir_ DIR *d = NULL;
        unsigned n = 0;
        int r = opendir_fd(AT_FDCWD, container_logs_dir, 0, &d);
        if (r < 0) {
                if (r != -ENOENT)
                        *ret_error = r;
                return 0;
        }
        FOREACH_DIRENT(de, d) {
                if (!endswith(de->d_name, ".log"))
                        continue;
                _cleanup_free_ char *target = read_link(dirfd(d), de->d_name);
                _cleanup_(pod_log_link_done) PodLogLink l = {};
                if (!target || pod_log_link_parse(de->d_name, target, pod_logs_dir, &l) <= 0 ||
                    !judge(&l, userdata))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        if (errno != ENOENT && *ret_error == 0)
                                *ret_error = -errno;
                        continue;
                }
                n++;
        }
        return n;
}

static bool link_in_dir(const PodLogLink *l, void *userdata) {
        return streq(l->dir, (const char *)userdata);
}

int pod_log_remove(const char *pod_logs_dir, const char *container_logs_dir, const char *dir_name) {
        int ret = 0;
        if (container_logs_dir)
                (void)remove_links(pod_logs_dir, container_logs_dir, link_in_dir, (void *)dir_name,
                                   &ret);
        _cleanup_close_ int fd = open(pod_logs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = fd < 0 ? (errno == ENOENT ? 0 : -errno) : rm_rf_at(fd, dir_name);
        return ret < 0 ? ret : r;
}

/* Whether <dir>/<container> below the pod logs dir holds <attempt>.log or a
 * rotated <attempt>.log.*: a live file renamed by a rotation that an agent
 * crash interrupted before the reopen still has its rotated file. */
static bool attempt_has_logs(int root_fd, const PodLogLink *l) {
        _cleanup_free_ char *rel = strprintf("%s/%s", l->dir, l->container);
        _cleanup_free_ char *live = strprintf("%u.log", l->attempt);
        if (!rel || !live)
                return true; /* keep when unsure */
        int fd = openat_no_symlinks(root_fd, rel, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return fd != -ENOENT && fd != -ELOOP && fd != -ENOTDIR;
        _cleanup_close_ int dfd = fd;
        _cleanup_closedir_ DIR *d = NULL;
        if (opendir_fd(dfd, NULL, 0, &d) < 0)
                return true;
        FOREACH_DIRENT(de, d) {
                const char *rest = startswith(de->d_name, live);
                if (rest && (rest[0] == 0 || rest[0] == '.'))
                        return true;
        }
        return false;
}

typedef struct SweepContext {
        PodLogKnownFn known;
        void *userdata;
        int root_fd;
} SweepContext;

static bool link_orphaned(const PodLogLink *l, void *userdata) {
        SweepContext *c = userdata;
        return !c->known(l->uid, c->userdata) || !attempt_has_logs(c->root_fd, l);
}

unsigned pod_log_sweep(const char *pod_logs_dir, const char *container_logs_dir,
                       PodLogKnownFn known, void *userdata) {
        _cleanup_close_ int root = open(pod_logs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = NULL;
        unsigned n = 0;

        int r = root < 0 ? -errno : opendir_fd(root, NULL, 0, &d);
        if (r < 0) {
                if (r != -ENOENT)
                        log_warning_errno(r, "Cannot list %s for orphaned pod logs: %m",
                                          pod_logs_dir);
                return 0;
        }
        FOREACH_DIRENT(de, d) {
                const char *uid = pod_log_dir_uid(de->d_name);
                struct stat st;
                /* Only real directories: a symlink here is the operator's. */
                if (!uid || known(uid, userdata) ||
                    fstatat(root, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                r = rm_rf_at(root, de->d_name);
                if (r < 0) {
                        log_warning_errno(r,
                                          "Cannot remove the orphaned pod log directory %s/%s: %m",
                                          pod_logs_dir, de->d_name);
                        continue;
                }
                log_info("Removed the log directory %s/%s, whose pod no longer exists.",
                         pod_logs_dir, de->d_name);
                n++;
        }
        if (!container_logs_dir)
                return n;
        SweepContext c = { .known = known, .userdata = userdata, .root_fd = root };
        int error = 0;
        unsigned links = remove_links(pod_logs_dir, container_logs_dir, link_orphaned, &c, &error);
        if (error < 0)
                log_warning_errno(error, "Cannot remove every orphaned log link in %s: %m",
                                  container_logs_dir);
        if (links > 0)
                log_info("Removed %u log link(s) in %s whose container no longer exists.", links,
                         container_logs_dir);
        return n + links;
}
