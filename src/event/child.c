/* See child.h. */
#include "child.h"

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

#include "log.h"
#include "macro.h"
#include "spawn.h"
#include "string-util.h"

typedef struct Capture {
        int fd;
        EventSource *source;
        char *buf;
        size_t len, cap, max;
        bool truncated;
} Capture;

struct Child {
        Event *event;
        pid_t pid;
        int pidfd;
        bool own_group;
        bool exited;
        bool timed_out;
        int code, status;
        EventSource *child_source;
        EventSource *timer;
        Capture out, err;
        child_done_t done;
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

static int capture_start(Event *e, Capture *c, int fd, size_t max) {
        c->fd = fd;
        c->max = max;
        return event_add_io(e, &c->source, c->fd, EPOLLIN, on_capture, c);
}

void child_kill(Child *c) {
        if (!c || c->pid <= 0 || c->exited)
                return;
        /* Not reaped yet, so pid (and the process group it leads) is still
         * ours: the kill cannot reach a stranger. */
        if (c->own_group)
                (void)kill(-c->pid, SIGKILL);
        if (c->pidfd >= 0)
                (void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
        else
                (void)kill(c->pid, SIGKILL);
}

/* Kills a child nobody waits for any more and leaves the reaping to a
 * source the loop owns. */
static void child_orphan(Child *c) {
        child_kill(c);
        c->child_source = event_source_free(c->child_source);
        event_reap_later(c->event, c->pid);
        c->exited = true;
}

Child *child_free(Child *c) {
        if (!c)
                return NULL;
        if (c->pid > 0 && !c->exited)
                child_orphan(c);
        c->child_source = event_source_free(c->child_source);
        c->timer = event_source_free(c->timer);
        c->pidfd = safe_close(c->pidfd);
        capture_done(&c->out);
        capture_done(&c->err);
        free(c);
        return NULL;
}

typedef struct ReapedThen {
        void (*reaped)(void *userdata);
        void *userdata;
} ReapedThen;

/* The source's destroy: after the reaping, or when the loop ends first
 * (the child has its SIGKILL then, so the step is as late as it can be). */
static void reaped_then_run(void *userdata) {
        ReapedThen *t = userdata;

        t->reaped(t->userdata);
        free(t);
}

static int on_reaped_then(EventSource *s, const siginfo_t *si, void *userdata) {
        event_source_free(s);
        return 0;
}

void child_free_then(Child *c, void (*reaped)(void *userdata), void *userdata) {
        if (!c || c->pid <= 0 || c->exited) {
                child_free(c);
                reaped(userdata);
                return;
        }
        child_kill(c);
        c->child_source = event_source_free(c->child_source);
        ReapedThen *t = malloc(sizeof(*t));
        if (t) {
                *t = (ReapedThen){ .reaped = reaped, .userdata = userdata };
                EventSource *s = NULL;
                if (event_add_child(c->event, &s, c->pid, on_reaped_then, t) >= 0) {
                        event_source_set_destroy(s, reaped_then_run);
                        c->exited = true; /* the new source reaps it */
                        child_free(c);
                        return;
                }
                free(t);
        }
        /* Without a source of its own the step runs now: the child has its
         * SIGKILL, and a mount(2) it is inside completes before it dies. */
        log_debug("Cannot watch child %d to finish after it: running the step now.", (int)c->pid);
        child_free(c);
        reaped(userdata);
}

static int on_child(EventSource *s, const siginfo_t *si, void *userdata) {
        Child *c = userdata;

        c->exited = true;
        c->code = si->si_code;
        c->status = si->si_status;
        c->child_source = event_source_free(c->child_source);
        c->pidfd = safe_close(c->pidfd);
        c->timer = event_source_free(c->timer);
        child_drain(c);
        c->done(c, c->userdata); /* may free c */
        return 0;
}

static int on_timeout(EventSource *s, usec_t now, void *userdata) {
        Child *c = userdata;

        c->timed_out = true;
        log_debug("Child %d timed out, killing it.", (int)c->pid);
        child_kill(c);
        return 0;
}

static Child *child_alloc(Event *e, child_done_t done, void *userdata) {
        Child *c = calloc(1, sizeof(*c));
        if (!c)
                return NULL;
        c->event = e;
        c->pidfd = c->out.fd = c->err.fd = -EBADF;
        c->done = done;
        c->userdata = userdata;
        return c;
}

static int child_watch(Child *c, usec_t timeout) {
        int r = event_add_child(c->event, &c->child_source, c->pid, on_child, c);
        if (r >= 0 && timeout > 0 && timeout != USEC_INFINITY)
                r = event_add_time_relative(c->event, &c->timer, timeout, 0, on_timeout, c);
        return r;
}

static int memfd_with(const char *input, size_t size) {
        _cleanup_close_ int fd = memfd_create("child-stdin", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t off = 0; off < size;) {
                ssize_t n = write(fd, input + off, size - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                off += (size_t)n;
        }
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* The reading end non-blocking for the loop; the child's end blocking, so
 * a child writing a lot never gets EAGAIN. */
static int capture_pipe(int p[2]) {
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

int child_spawn(Event *e, const ChildOptions *o, child_done_t done, void *userdata, Child **ret) {
        _cleanup_close_pair_ int po[2] = { -EBADF, -EBADF }, pe[2] = { -EBADF, -EBADF };
        _cleanup_close_ int in = -EBADF;
        int r;

        if (!e || !o || !o->argv || !o->argv[0] || !done || !ret)
                return -EINVAL;
        if (o->input) {
                in = memfd_with(o->input, o->input_size);
                if (in < 0)
                        return in;
        }
        if (o->capture != CHILD_CAPTURE_NONE && (r = capture_pipe(po)) < 0)
                return r;
        if (o->capture == CHILD_CAPTURE_SEPARATE && (r = capture_pipe(pe)) < 0)
                return r;

        _cleanup_child_free_ Child *c = child_alloc(e, done, userdata);
        if (!c)
                return -ENOMEM;
        SpawnOptions so = SPAWN_OPTIONS_INIT;
        so.argv = o->argv;
        so.envp = o->envp;
        so.cwd = o->cwd;
        so.keep_fds = o->keep_fds;
        so.n_keep_fds = o->n_keep_fds;
        so.pdeath_signal = o->pdeath_signal;
        so.stdin_fd = in >= 0 ? in : SPAWN_FD_NULL;
        so.stdout_fd = po[1] >= 0 ? po[1] : SPAWN_FD_NULL;
        if (o->capture == CHILD_CAPTURE_STDOUT)
                so.stderr_fd = STDERR_FILENO;
        else
                so.stderr_fd = pe[1] >= 0 ? pe[1] : po[1] >= 0 ? po[1] : SPAWN_FD_NULL;
        so.new_session = true; /* no terminal signals; its group is its tree */
        r = spawn_nowait(&so, &c->pid, &c->pidfd);
        if (r < 0) {
                event_reap_later(e, c->pid);
                c->pid = 0;
                return r;
        }
        c->own_group = true;
        po[1] = safe_close(po[1]);
        pe[1] = safe_close(pe[1]);
        if (po[0] >= 0 && (r = capture_start(e, &c->out, TAKE_FD(po[0]), o->stdout_max)) < 0)
                return r;
        if (pe[0] >= 0 && (r = capture_start(e, &c->err, TAKE_FD(pe[0]), o->stderr_max)) < 0)
                return r;
        r = child_watch(c, o->timeout);
        if (r < 0)
                return r;
        log_debug("Spawned %s as %d.", o->argv[0], (int)c->pid);
        *ret = TAKE_PTR(c);
        return 0;
}

int child_adopt(Event *e, pid_t pid, usec_t timeout, child_done_t done, void *userdata,
                Child **ret) {
        int r;

        if (!e || pid <= 0 || !done || !ret)
                return -EINVAL;
        _cleanup_child_free_ Child *c = child_alloc(e, done, userdata);
        if (!c) {
                (void)kill(pid, SIGKILL);
                Child tmp = { .event = e, .pid = pid, .pidfd = -EBADF };
                child_orphan(&tmp);
                return -ENOMEM;
        }
        c->pid = pid;
        c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (c->pidfd < 0)
                c->pidfd = -errno; /* child_free() kills by pid then */
        r = child_watch(c, timeout);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

void child_drain(Child *c) {
        capture_drain(&c->out);
        capture_drain(&c->err);
}

pid_t child_get_pid(const Child *c) {
        return c->pid;
}

bool child_exited(const Child *c) {
        return c->exited;
}

bool child_warn_failure(const Child *c, const char *what) {
        int code, status;

        child_get_status(c, &code, &status);
        if (code == CLD_EXITED && status == 0)
                return false;
        log_warning("%s failed (%s %d%s): %s", what, code == CLD_EXITED ? "exit status" : "signal",
                    status, c->timed_out ? ", timed out" : "", child_stderr(c, NULL));
        return true;
}

bool child_timed_out(const Child *c) {
        return c->timed_out;
}

void child_get_status(const Child *c, int *ret_code, int *ret_status) {
        if (ret_code)
                *ret_code = c->code;
        if (ret_status)
                *ret_status = c->status;
}

const char *child_stdout(const Child *c, size_t *ret_size) {
        if (ret_size)
                *ret_size = c->out.len;
        return c->out.buf ? c->out.buf : "";
}

const char *child_stderr(const Child *c, size_t *ret_size) {
        if (ret_size)
                *ret_size = c->err.len;
        return c->err.buf ? c->err.buf : "";
}

bool child_stdout_truncated(const Child *c) {
        return c->out.truncated;
}

bool child_stderr_truncated(const Child *c) {
        return c->err.truncated;
}
