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
