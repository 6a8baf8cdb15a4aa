#include "rm-rf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "macro.h"

int rm_rf_children(int fd) {
        struct stat self;
        if (fstat(fd, &self) < 0)
                return -errno;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(fd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno != ENOENT && r == 0)
                                r = -errno;
                        continue;
                }
                if (st.st_dev != self.st_dev) {
                        if (r == 0)
                                r = -EBUSY;
                        continue;
                }
                int q = rm_rf_at(dirfd(d), de->d_name);
                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

int rm_rf_at(int dir_fd, const char *name) {
        struct stat st, parent;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode)) {
                if (fstat(dir_fd, &parent) == 0 && parent.st_dev != st.st_dev)
                        return -EBUSY; /* a mount point: not ours to empty */
                _cleanup_close_ int fd =
                        openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return errno == ENOENT ? 0 : -errno;
                int r = rm_rf_children(fd);
                if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                        return r < 0 ? r : -errno;
                return 0;
        }
        if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
