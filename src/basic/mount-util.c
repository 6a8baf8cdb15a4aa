#include "mount-util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

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
                if (!sep)
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
