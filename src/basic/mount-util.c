#include "mount-util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "strv.h"

/* mountinfo escapes spaces, tabs, newlines and backslashes as \ooo. */
static void unescape_octal(char *s) {
        char *w = s;
        for (char *r = s; *r; r++) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
                    r[3] >= '0' && r[3] <= '7') {
                        *w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
                        r += 3;
                } else
                        *w++ = *r;
        }
        *w = 0;
}

static int cmp_len_desc(const void *a, const void *b) {
        size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
        return la < lb ? 1 : la > lb ? -1 : 0;
}

int umount_below(const char *prefix) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_strv_free_ char **points = NULL;
        _cleanup_free_ char *line = NULL;
        size_t cap = 0, plen = strlen(prefix);
        int n = 0;

        if (!f)
                return -errno;
        while (getline(&line, &cap, f) > 0) {
                /* id parent major:minor root mountpoint ... */
                char mp[4096];
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1)
                        continue;
                unescape_octal(mp);
                if (strncmp(mp, prefix, plen) != 0 || (mp[plen] != 0 && mp[plen] != '/'))
                        continue;
                if (!strv_contains(points, mp) && strv_extend(&points, mp) < 0)
                        return -ENOMEM;
        }
        size_t k = strv_length(points);
        if (k > 1)
                qsort(points, k, sizeof(char *), cmp_len_desc);
        STRV_FOREACH(p, points)
                if (umount2(*p, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                        n++;
        return n;
}

/* Adds the ':'-separated dirs of one lowerdir option value: mountinfo's
 * octal escapes undone first, then overlayfs's "\:" for a ':' in a path. */
static int add_lowerdirs(char ***l, const char *value, size_t n) {
        _cleanup_free_ char *v = strndup(value, n), *dir = malloc(n + 1);
        size_t k = 0;
        if (!v || !dir)
                return -ENOMEM;
        unescape_octal(v);
        for (char *c = v;; c++) {
                if (c[0] == '\\' && c[1] == ':') {
                        dir[k++] = ':';
                        c++;
                } else if (*c == 0 || *c == ':') {
                        dir[k] = 0;
                        if (k > 0 && strv_extend(l, dir) < 0)
                                return -ENOMEM;
                        if (*c == 0)
                                return 0;
                        k = 0;
                } else
                        dir[k++] = *c;
        }
}

int mount_overlay_lowerdirs(char ***ret) {
        return mount_overlay_lowerdirs_at(NULL, ret);
}

/* Field 5 of a mountinfo line (the mount point), unescaped, equals target. */
static bool mountinfo_point_is(const char *line, const char *target) {
        const char *p = line;
        for (int i = 0; i < 4; i++) {
                p = strchr(p, ' ');
                if (!p)
                        return false;
                p++;
        }
        _cleanup_free_ char *point = strndup(p, strcspn(p, " "));
        if (!point)
                return false;
        unescape_octal(point);
        return strcmp(point, target) == 0;
}

int mount_overlay_lowerdirs_at(const char *target, char ***ret) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_strv_free_ char **dirs = calloc(1, sizeof(char *));
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;

        if (!f)
                return -errno;
        if (!dirs)
                return -ENOMEM;
        while (getline(&line, &cap, f) > 0) {
                /* ... optional fields - fstype source superoptions */
                char *sep = strstr(line, " - overlay ");
                if (!sep || (target && !mountinfo_point_is(line, target)))
                        continue;
                char *super = strchr(sep + strlen(" - overlay "), ' ');
                if (!super)
                        continue;
                super++;
                super[strcspn(super, " \n")] = 0;
                for (char *opt = super; opt && *opt;) {
                        char *next = strchr(opt, ',');
                        size_t len = next ? (size_t)(next - opt) : strlen(opt);
                        const char *v = NULL;
                        if (strncmp(opt, "lowerdir=", 9) == 0)
                                v = opt + 9;
                        else if (strncmp(opt, "lowerdir+=", 10) == 0)
                                v = opt + 10;
                        if (v && add_lowerdirs(&dirs, v, len - (size_t)(v - opt)) < 0)
                                return -ENOMEM;
                        opt = next ? next + 1 : NULL;
                }
        }
        *ret = TAKE_PTR(dirs);
        return 0;
}

int userns_fd_for_range(uint32_t host_id, uint32_t len) {
        int go[2], ready[2];
        char map[64], path[64];
        int r = 0, fd = -1;

        if (pipe2(go, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(ready, O_CLOEXEC) < 0) {
                r = -errno;
                close(go[0]);
                close(go[1]);
                return r;
        }
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                goto out;
        }
        if (pid == 0) {
                /* Only async-signal-safe calls: the parent has threads. */
                close(go[1]);
                close(ready[0]);
                char c = unshare(CLONE_NEWUSER) == 0 ? 'u' : 'e';
                (void)!write(ready[1], &c, 1);
                (void)!read(go[0], &c, 1); /* EOF: the parent is done */
                _exit(0);
        }
        close(go[0]);
        close(ready[1]);
        go[0] = ready[1] = -1;
        char c = 0;
        ssize_t n;
        do
                n = read(ready[0], &c, 1);
        while (n < 0 && errno == EINTR);
        if (n != 1 || c != 'u') {
                r = n < 0 ? -errno : -EPERM;
                goto reap;
        }
        snprintf(map, sizeof map, "0 %" PRIu32 " %" PRIu32 "\n", host_id, len);
        static const char *const files[] = { "uid_map", "gid_map" };
        for (size_t i = 0; i < 2 && r == 0; i++) {
                snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, files[i]);
                int mfd = open(path, O_WRONLY | O_CLOEXEC);
                if (mfd < 0 || write(mfd, map, strlen(map)) != (ssize_t)strlen(map))
                        r = -errno;
                if (mfd >= 0)
                        close(mfd);
        }
        if (r == 0) {
                snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
        }
reap:
        close(go[1]);
        go[1] = -1;
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
out:
        for (int i = 0; i < 2; i++) {
                if (go[i] >= 0)
                        close(go[i]);
                if (ready[i] >= 0)
                        close(ready[i]);
        }
        return r < 0 ? r : fd;
}

int mount_idmapped_clone(const char *source, bool recursive, int userns_fd, const char *target) {
        unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
        _cleanup_close_ int tfd = open_tree(AT_FDCWD, source, flags);
        if (tfd < 0)
                return -errno;
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)userns_fd };
        if (mount_setattr(tfd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                          sizeof attr) < 0)
                return -errno;
        if (move_mount(tfd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return -errno;
        return 0;
}
