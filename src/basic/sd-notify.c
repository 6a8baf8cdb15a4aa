#include "sd-notify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "macro.h"

int sd_notify_send(const char *state) {
        const char *path = getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len;

        if (isempty(path))
                return 0;
        len = strlen(path);
        if ((path[0] != '/' && path[0] != '@') || len >= sizeof sa.sun_path)
                return -EINVAL;
        memcpy(sa.sun_path, path, len);
        if (path[0] == '@') /* abstract namespace */
                sa.sun_path[0] = 0;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
                   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
                return -errno;
        return 1;
}

usec_t sd_watchdog_interval(void) {
        const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
        if (isempty(usec))
                return 0;
        if (!isempty(pid) && strtol(pid, NULL, 10) != (long)getpid())
                return 0;
        char *end;
        unsigned long long v = strtoull(usec, &end, 10);
        return *end == 0 ? (usec_t)v : 0;
}
