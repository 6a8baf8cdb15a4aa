/* One plugin child on the event loop. stdin is a sealed-size memfd holding
 * the whole config (so writing it can never block the loop, whatever its
 * size); stdout and stderr are separate non-blocking pipes read as data
 * arrives and capped; the child is reaped through its pidfd and SIGKILLed
 * when the timeout expires. Completion is the child's exit: whatever it
 * wrote is in the pipes by then and is drained; a grandchild holding the
 * pipes open cannot delay us. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cni-internal.h"
#include "log.h"
#include "spawn.h"
#include "string-util.h"

typedef struct Capture {
        int fd;
        EventSource *source;
        char *buf;
        size_t len, cap, max;
        bool truncated;
} Capture;

struct CniExec {
        Event *event;
        pid_t pid;
        int pidfd;
        bool exited;
        EventSource *child_source;
        EventSource *timer;
        bool timed_out;
        Capture out, err;
        cni_exec_done_t done;
        void *userdata;
};

static void capture_drain(Capture *c) {
        char buf[16384];

        while (c->fd >= 0) {
                ssize_t n = read(c->fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        c->source = event_source_free(c->source);
                        c->fd = safe_close(c->fd);
                        return;
                }
                size_t take = MIN((size_t)n, c->max - c->len);
                if (take < (size_t)n)
                        c->truncated = true;
                if (take > 0 && strbuf_append(&c->buf, &c->len, &c->cap, buf, take) < 0)
                        c->truncated = true; /* out of memory: keep what we have */
        }
}

static void capture_done(Capture *c) {
        c->source = event_source_free(c->source);
        c->fd = safe_close(c->fd);
        free(c->buf);
        c->buf = NULL;
}

static int on_capture(EventSource *s, int fd, uint32_t revents, void *userdata) {
        capture_drain(userdata);
        return 0;
}

static void kill_child(CniExec *x) {
        if (x->pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, x->pidfd, SIGKILL, NULL, 0);
}

CniExec *cni_exec_free(CniExec *x) {
        if (!x)
                return NULL;
        if (x->pid > 0 && !x->exited) {
                kill_child(x);
                x->child_source = event_source_free(x->child_source);
                (void)TEMP_FAILURE_RETRY(waitpid(x->pid, NULL, 0));
        }
        x->child_source = event_source_free(x->child_source);
        x->timer = event_source_free(x->timer);
        x->pidfd = safe_close(x->pidfd);
        capture_done(&x->out);
        capture_done(&x->err);
        free(x);
        return NULL;
}

static int on_child(EventSource *s, const siginfo_t *si, void *userdata) {
        CniExec *x = userdata;
        int r = 0, status = 0;

        x->exited = true;
        x->pidfd = safe_close(x->pidfd);
        x->timer = event_source_free(x->timer);
        capture_drain(&x->out);
        capture_drain(&x->err);
        if (x->timed_out)
                r = -ETIMEDOUT;
        else if (si->si_code == CLD_EXITED)
                status = si->si_status;
        else if (si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED)
                status = 128 + si->si_status;
        else
                r = -ECHILD;
        /* May free x. */
        x->done(x, r, status, x->userdata);
        return 0;
}

static int on_timeout(EventSource *s, usec_t now, void *userdata) {
        CniExec *x = userdata;

        x->timed_out = true;
        log_debug("cni: plugin child %d timed out, killing it.", (int)x->pid);
        kill_child(x);
        return 0;
}

static int capture_start(Event *e, Capture *c, int fd, size_t max) {
        c->fd = fd;
        c->max = max;
        return event_add_io(e, &c->source, c->fd, EPOLLIN, on_capture, c);
}

int cni_exec_start(Event *e, char *const *argv, char *const *envp, const char *input,
                   size_t input_size, usec_t timeout, cni_exec_done_t done, void *userdata,
                   CniExec **ret) {
        _cleanup_close_pair_ int po[2] = { -EBADF, -EBADF }, pe[2] = { -EBADF, -EBADF };
        _cleanup_close_ int in = -EBADF;
        int r;

        in = memfd_create("cni-stdin", MFD_CLOEXEC);
        if (in < 0)
                return -errno;
        for (size_t off = 0; off < input_size;) {
                ssize_t n = write(in, input + off, input_size - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                off += (size_t)n;
        }
        if (lseek(in, 0, SEEK_SET) < 0)
                return -errno;
        if (pipe2(po, O_CLOEXEC | O_NONBLOCK) < 0 || pipe2(pe, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;

        CniExec *x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        x->event = e;
        x->pidfd = x->out.fd = x->err.fd = -EBADF;
        x->done = done;
        x->userdata = userdata;

        /* The child's ends must be blocking: a plugin writing a large
         * result must not get EAGAIN. */
        if (fcntl(po[1], F_SETFL, 0) < 0 || fcntl(pe[1], F_SETFL, 0) < 0) {
                r = -errno;
                goto fail;
        }
        SpawnOptions so = SPAWN_OPTIONS_INIT;
        so.argv = argv;
        so.envp = envp;
        so.stdin_fd = in;
        so.stdout_fd = po[1];
        so.stderr_fd = pe[1];
        so.new_session = true; /* no terminal signals from our session */
        r = spawn(&so, &x->pid, &x->pidfd);
        if (r < 0) {
                x->pid = 0;
                goto fail;
        }
        po[1] = safe_close(po[1]);
        pe[1] = safe_close(pe[1]);
        if ((r = capture_start(e, &x->out, TAKE_FD(po[0]), CNI_OUTPUT_MAX)) < 0 ||
            (r = capture_start(e, &x->err, TAKE_FD(pe[0]), CNI_STDERR_MAX)) < 0 ||
            (r = event_add_child(e, &x->child_source, x->pid, on_child, x)) < 0 ||
            (r = event_add_time_relative(e, &x->timer, timeout, 0, on_timeout, x)) < 0)
                goto fail;
        log_debug("cni: spawned %s as %d.", argv[0], (int)x->pid);
        *ret = x;
        return 0;
fail:
        cni_exec_free(x);
        return r;
}

const char *cni_exec_stdout(const CniExec *x, size_t *ret_size) {
        *ret_size = x->out.len;
        return x->out.buf ? x->out.buf : "";
}

const char *cni_exec_stderr(const CniExec *x, size_t *ret_size) {
        *ret_size = x->err.len;
        return x->err.buf ? x->err.buf : "";
}

bool cni_exec_stdout_truncated(const CniExec *x) {
        return x->out.truncated;
}
