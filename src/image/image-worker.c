/* Workers: the store's blocking operations run in a forked child so the
 * event loop only watches a pid (event_add_child) and reads one short
 * message from a pipe once the child has exited. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image-internal.h"
#include "image-util.h"

int image_worker_start(ImageStore *s, image_worker_fn_t fn, void *userdata, ImageWorker *ret,
                       Error *err) {
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return error_set(err, -errno, "cannot create worker pipe: %m");
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                safe_close(p[0]);
                safe_close(p[1]);
                return error_set(err, r, "cannot fork image worker: %s", strerror(-r));
        }
        if (pid == 0) {
                Error e = {};
                safe_close(p[0]);
                int r = fn(s, userdata, &e);
                if (r < 0) {
                        char buf[sizeof(e.message) + 32];
                        int n = snprintf(buf, sizeof(buf), "%d %s", r,
                                         e.message[0] ? e.message : strerror(-r));
                        (void)write_all(p[1], buf, (size_t)MIN(n, (int)sizeof(buf) - 1));
                }
                /* A forked worker must not run the parent's atexit handlers or flush its stdio. */
                _exit(r < 0 ? 1 : 0);
        }
        safe_close(p[1]);
        *ret = (ImageWorker){ .pid = pid, .error_fd = p[0] };
        return 0;
}

int image_worker_finish(ImageWorker *w, const siginfo_t *si, Error *err) {
        char buf[sizeof(err->message) + 32] = {};
        ssize_t n = w->error_fd >= 0 ? read(w->error_fd, buf, sizeof(buf) - 1) : -1;
        w->error_fd = safe_close(w->error_fd);
        w->pid = 0;
        if (si && si->si_code == CLD_EXITED && si->si_status == 0)
                return 0;
        if (n > 0) {
                char *end;
                long code = strtol(buf, &end, 10);
                if (code < 0 && *end == ' ')
                        return error_set(err, (int)code, "%s", end + 1);
        }
        if (si && (si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED))
                return error_set(err, -EINTR, "image worker killed by signal %d",
                                       si->si_status);
        return error_set(err, -EIO, "image worker failed (exit status %d)",
                               si ? si->si_status : -1);
}

void image_worker_abort(ImageWorker *w) {
        if (w->pid > 0) {
                (void)kill(w->pid, SIGKILL);
                (void)waitpid(w->pid, NULL, 0);
        }
        w->pid = 0;
        w->error_fd = safe_close(w->error_fd);
}

static int unpack_fn(ImageStore *s, void *userdata, Error *err) {
        return image_store_unpack(s, userdata, err);
}

int image_store_unpack_start(ImageStore *s, const char *ref, ImageWorker *ret, Error *err) {
        return image_worker_start(s, unpack_fn, (void *)ref, ret, err);
}
