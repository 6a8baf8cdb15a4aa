#include "dirent-util.h"

#include <errno.h>
#include <fcntl.h>

#include "cleanup.h"
#include "macro.h"

int opendir_fd(int dir_fd, const char *path, int extra_flags, DIR **ret) {
        _cleanup_close_ int fd =
                openat(dir_fd, path ?: ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC | extra_flags);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);
        *ret = d;
        return 0;
}

struct dirent *readdir_no_dot(DIR *d) {
        for (;;) {
                errno = 0;
                struct dirent *de = readdir(d);
                if (!de || !(streq(de->d_name, ".") || streq(de->d_name, "..")))
                        return de;
        }
}
