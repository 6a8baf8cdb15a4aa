#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "macro.h"
#include "string-util.h"

char *runtime_pod_cgroup_path(const char *uid) {
        return strprintf("/nanolet/pod%s", uid);
}

/* rmdir of a cgroup removes its control files with it; child cgroups
 * must go first. Regular files are never unlinked (cgroupfs refuses it and
 * a fake tree in tests has none). */
static int cgroup_rmdir_tree(int parent_fd, const char *name) {
        _cleanup_close_ int fd =
                openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(fd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                if (de->d_type != DT_DIR)
                        continue;
                int q = cgroup_rmdir_tree(fd, de->d_name);
                if (q < 0 && r == 0)
                        r = q;
        }
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return r < 0 ? r : -errno;
        return r;
}

static int remove_in_hierarchy(const char *hierarchy, const char *path) {
        _cleanup_free_ char *full = strprintf("%s%s", hierarchy, path);
        if (!full)
                return -ENOMEM;
        char *slash = strrchr(full, '/');
        if (!slash || slash == full)
                return -EINVAL;
        *slash = 0;
        _cleanup_close_ int parent = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parent < 0)
                return errno == ENOENT ? 0 : -errno;
        return cgroup_rmdir_tree(parent, slash + 1);
}

int runtime_cgroup_remove(const char *cgroup_root, const char *path) {
        int r = 0, q;

        if (isempty(path) || path[0] != '/' || strstr(path, ".."))
                return -EINVAL;
        _cleanup_free_ char *controllers = strprintf("%s/cgroup.controllers", cgroup_root);
        if (!controllers)
                return -ENOMEM;
        if (access(controllers, F_OK) == 0) /* cgroup v2: one tree */
                return remove_in_hierarchy(cgroup_root, path);

        /* cgroup v1: every controller directory (symlinks such as cpu,cpuacct
         * point at one of them and are skipped). */
        _cleanup_closedir_ DIR *d = opendir(cgroup_root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *h = strprintf("%s/%s", cgroup_root, de->d_name);
                if (!h)
                        return -ENOMEM;
                q = remove_in_hierarchy(h, path);
                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

int runtime_oom_score_adj_floor(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        unsigned long long eff = 0;

        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "CapEff: %llx", &eff) == 1)
                        break;
        if (eff & (1ULL << 24 /* CAP_SYS_RESOURCE */))
                return -1000;
        _cleanup_fclose_ FILE *o = fopen("/proc/self/oom_score_adj", "re");
        int own = 0;
        if (!o || fscanf(o, "%d", &own) != 1)
                own = 0;
        return own;
}
