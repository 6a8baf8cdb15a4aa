/* nanolet-monitor's process: see monitor.h for the contract. One poll()
 * loop over SIGCHLD (a signalfd), the container's output, the ctl FIFO and
 * the OOM watch; every read is bounded (MONITOR_READ_MAX) and every fd the
 * loop reads is non-blocking, so a container's output can neither grow the
 * monitor's memory nor stop it. Nothing is shared with the agent once the
 * sync line is written: stdio is /dev/null, the sync pipe is closed, the
 * session is its own. libc only. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "monitor.h"

enum {
        OUT_STDOUT,
        OUT_STDERR,
        _OUT_MAX
};

typedef struct Monitor {
        MonitorArgs a;
        MonitorLog log;
        int sync_fd;
        int sigfd;
        int ctl_fd;
        int out[_OUT_MAX]; /* read ends (tty: the master as stdout) */
        int rt_out;        /* tty: the runtime's own output */
        int stdin_w;       /* -i: the write end, kept open, never written */
        int console_listen;
        char console_dir[64];
        char console_path[128];

        pid_t runtime_pid;
        pid_t container_pid;
        bool created;
        bool exited;
        int exit_status; /* waitpid status of the container */

        /* children reaped before the container's pid was known */
        struct {
                pid_t pid;
                int status;
        } early[16];
        size_t n_early;

        /* runtime output during create: the sync message on failure */
        char err[MONITOR_ERROR_MAX];
        size_t err_len;

        char ctl_buf[256];
        size_t ctl_len;

        /* OOM: v1 eventfd on memory.oom_control, or v2 inotify on
         * memory.events; the oom_kill count read at start, when shown. */
        int oom_fd;
        char oom_path[PATH_MAX + 32]; /* the file whose oom_kill counts */
        long long oom_kills;
        bool oom_v1;
        bool oom_seen;
} Monitor;

static void die(const char *what, const char *arg) {
        fprintf(stderr, "nanolet-monitor: %s%s%s\n", what, arg ? " " : "", arg ? arg : "");
}

static void send_sync(Monitor *m, int pid, const char *msg, size_t msg_len) {
        char line[MONITOR_ERROR_MAX * 2];
        if (m->sync_fd < 0)
                return;
        size_t n = monitor_sync_line(line, sizeof(line), pid, msg, msg_len);
        /* Non-blocking and shorter than the pipe: never waits; EPIPE (the
         * agent is gone) is only an error return, SIGPIPE is ignored. */
        if (n > 0 && write(m->sync_fd, line, n) < 0)
                n = 0; /* nobody to tell */
        m->sync_fd = safe_close(m->sync_fd);
}

static void log_chunk(Monitor *m, const char *stream, const char *buf, size_t len) {
        char prefix[MONITOR_PREFIX_MAX];
        struct timespec ts;
        struct tm tm;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        if (!localtime_r(&ts.tv_sec, &tm))
                memset(&tm, 0, sizeof(tm));
        if (monitor_format_prefix(prefix, sizeof(prefix), &tm, ts.tv_nsec, stream) == 0)
                return;
        (void)monitor_log_write(&m->log, prefix, buf, len);
}

/* Reads one chunk of fd. Returns bytes read, 0 on EOF (or a hung-up pty),
 * -EAGAIN when empty. */
static ssize_t read_chunk(int fd, char *buf, size_t size) {
        for (;;) {
                ssize_t n = read(fd, buf, size);
                if (n >= 0)
                        return n;
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN)
                        return -EAGAIN;
                return 0; /* EIO: the pty's other side is closed */
        }
}

/* One chunk of output stream i: 1 when something was read, 0 when the
 * pipe is empty, -1 once the stream is closed. During create, the runtime's
 * stderr is kept for the sync message instead. */
static int handle_output(Monitor *m, int i) {
        char buf[MONITOR_READ_MAX];
        ssize_t n = read_chunk(m->out[i], buf, sizeof(buf));
        if (n == -EAGAIN)
                return 0;
        if (n <= 0) {
                m->out[i] = safe_close(m->out[i]);
                return -1;
        }
        size_t len = (size_t)n;
        if (!m->created && i == OUT_STDERR && !m->a.terminal) {
                size_t room = sizeof(m->err) - m->err_len;
                size_t k = len < room ? len : room;
                memcpy(m->err + m->err_len, buf, k);
                m->err_len += k;
                if (k < len)
                        log_chunk(m, "stderr", buf + k, len - k);
                return 1;
        }
        log_chunk(m, i == OUT_STDOUT ? "stdout" : "stderr", buf, len);
        return 1;
}

static void handle_runtime_output(Monitor *m) {
        char buf[MONITOR_READ_MAX];
        ssize_t n = read_chunk(m->rt_out, buf, sizeof(buf));
        if (n == -EAGAIN)
                return;
        if (n <= 0) {
                m->rt_out = safe_close(m->rt_out);
                return;
        }
        size_t room = sizeof(m->err) - m->err_len, k = (size_t)n < room ? (size_t)n : room;
        memcpy(m->err + m->err_len, buf, k);
        m->err_len += k;
}

static void handle_ctl(Monitor *m) {
        for (;;) {
                ssize_t n =
                        read(m->ctl_fd, m->ctl_buf + m->ctl_len, sizeof(m->ctl_buf) - m->ctl_len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return;
                m->ctl_len += (size_t)n;
                char *nl;
                while ((nl = memchr(m->ctl_buf, '\n', m->ctl_len))) {
                        size_t l = (size_t)(nl - m->ctl_buf);
                        int type;
                        unsigned a, b;
                        if (monitor_parse_ctl_line(m->ctl_buf, l, &type, &a, &b) == 0) {
                                if (type == 2)
                                        (void)monitor_log_reopen(&m->log);
                                else if (type == 1 && m->a.terminal && m->out[OUT_STDOUT] >= 0) {
                                        struct winsize ws = { .ws_row = (unsigned short)a,
                                                              .ws_col = (unsigned short)b };
                                        (void)ioctl(m->out[OUT_STDOUT], TIOCSWINSZ, &ws);
                                }
                        }
                        m->ctl_len -= l + 1;
                        memmove(m->ctl_buf, nl + 1, m->ctl_len);
                }
                /* A line longer than the buffer is garbage: drop it. */
                if (m->ctl_len == sizeof(m->ctl_buf))
                        m->ctl_len = 0;
        }
}

/* ---- OOM ---- */

/* The "oom_kill N" count of a memory.events / memory.oom_control file. */
static long long read_oom_kills(const char *path) {
        char buf[1024];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -1;
        buf[n] = 0;
        for (char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "oom_kill ", 9) == 0)
                        return strtoll(p + 9, NULL, 10);
        return -1;
}

static void oom_mark(Monitor *m) {
        char path[PATH_MAX];
        if (m->oom_seen)
                return;
        m->oom_seen = true;
        if (snprintf(path, sizeof(path), "%s/oom", m->a.persist_dir) >= (int)sizeof(path))
                return;
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd >= 0)
                close(fd);
}

/* The container's memory cgroup directory: the v1 "memory" controller's,
 * else the unified one's when /sys/fs/cgroup is cgroup2. */
static int memory_cgroup(pid_t pid, char *ret, size_t size, bool *ret_v1) {
        char path[64], line[PATH_MAX];
        bool unified = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
        int found = -ENOENT;

        (void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
                if (!c2)
                        continue;
                line[strcspn(line, "\n")] = 0;
                *c2 = 0;
                const char *controllers = c1 + 1, *cg = c2 + 1;
                bool memory = false;
                for (const char *p = controllers; *p;) {
                        size_t l = strcspn(p, ",");
                        if (l == 6 && strncmp(p, "memory", 6) == 0)
                                memory = true;
                        p += l + (p[l] == ',');
                }
                if (memory) {
                        (void)snprintf(ret, size, "/sys/fs/cgroup/memory%s", cg);
                        *ret_v1 = true;
                        found = 0;
                        break;
                }
                if (unified && !controllers[0] && strncmp(line, "0", 1) == 0) {
                        (void)snprintf(ret, size, "/sys/fs/cgroup%s", cg);
                        *ret_v1 = false;
                        found = 0;
                }
        }
        fclose(f);
        return found;
}

static void oom_watch(Monitor *m) {
        char dir[PATH_MAX], path[PATH_MAX + 32];

        if (memory_cgroup(m->container_pid, dir, sizeof(dir), &m->oom_v1) < 0)
                return;
        if (m->oom_v1) {
                (void)snprintf(m->oom_path, sizeof(m->oom_path), "%s/memory.oom_control", dir);
                _cleanup_close_ int ofd = open(m->oom_path, O_RDONLY | O_CLOEXEC);
                if (ofd < 0)
                        return;
                int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (efd < 0)
                        return;
                (void)snprintf(path, sizeof(path), "%s/cgroup.event_control", dir);
                _cleanup_close_ int cfd = open(path, O_WRONLY | O_CLOEXEC);
                char line[32];
                int l = snprintf(line, sizeof(line), "%d %d", efd, ofd);
                if (cfd < 0 || write(cfd, line, (size_t)l) != l) {
                        close(efd);
                        return;
                }
                m->oom_fd = efd;
        } else {
                (void)snprintf(m->oom_path, sizeof(m->oom_path), "%s/memory.events", dir);
                int ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
                if (ifd < 0)
                        return;
                if (inotify_add_watch(ifd, m->oom_path, IN_MODIFY) < 0) {
                        close(ifd);
                        return;
                }
                m->oom_fd = ifd;
        }
        m->oom_kills = read_oom_kills(m->oom_path);
}

/* An event on the OOM watch (or a last look at exit): an oom_kill count
 * that went up is an OOM kill; without the count (old v1 kernels), a v1
 * event while the cgroup still exists is (the eventfd also fires when the
 * cgroup is removed). */
static void oom_check(Monitor *m, bool event) {
        char buf[4096];
        if (m->oom_fd < 0)
                return;
        if (event)
                while (read(m->oom_fd, buf, sizeof(buf)) > 0)
                        ;
        long long kills = read_oom_kills(m->oom_path);
        if (m->oom_kills >= 0 && kills > m->oom_kills)
                oom_mark(m);
        else if (event && m->oom_v1 && m->oom_kills < 0 && access(m->oom_path, F_OK) == 0)
                oom_mark(m);
        if (kills >= 0)
                m->oom_kills = kills;
}

/* ---- the runtime and the container ---- */

static int setup_console_socket(Monitor *m) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };

        /* A short path: the persist directory may be too long for
         * sun_path. */
        (void)snprintf(m->console_dir, sizeof(m->console_dir), "/tmp/nanolet-monitor-XXXXXX");
        if (!mkdtemp(m->console_dir)) {
                m->console_dir[0] = 0;
                return -errno;
        }
        (void)snprintf(m->console_path, sizeof(m->console_path), "%s/console.sock", m->console_dir);
        if (strlen(m->console_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, m->console_path, strlen(m->console_path) + 1);
        m->console_listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (m->console_listen < 0)
                return -errno;
        if (bind(m->console_listen, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
            listen(m->console_listen, 1) < 0)
                return -errno;
        return 0;
}

static void remove_console_socket(Monitor *m) {
        m->console_listen = safe_close(m->console_listen);
        if (m->console_path[0])
                (void)unlink(m->console_path);
        if (m->console_dir[0])
                (void)rmdir(m->console_dir);
        m->console_path[0] = m->console_dir[0] = 0;
}

/* The pty master runc sent over the console socket (SCM_RIGHTS). */
static int receive_console(Monitor *m) {
        char data[256];
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { data, sizeof(data) };
        struct msghdr mh = { .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf) };

        _cleanup_close_ int conn = accept4(m->console_listen, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
                return -errno;
        /* runc wrote the message and closed before create returned. */
        ssize_t n = recvmsg(conn, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0)
                return -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len == CMSG_LEN(sizeof(int))) {
                        int fd;
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
                        return fd;
                }
        return -EBADMSG;
}

static int read_pid(const char *path, pid_t *ret) {
        char buf[32];
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return -EBADMSG;
        buf[n] = 0;
        char *end;
        long v = strtol(buf, &end, 10);
        if (v <= 0 || v > INT_MAX || end == buf)
                return -EBADMSG;
        *ret = (pid_t)v;
        return 0;
}

static void container_exited(Monitor *m, int status) {
        m->exited = true;
        m->exit_status = status;
}

/* `<runtime> create` ended. */
static int runtime_done(Monitor *m, int status) {
        m->runtime_pid = 0;
        if (m->rt_out >= 0)
                handle_runtime_output(m);
        /* What the runtime wrote last (the container's init keeps the
         * pipe open: no EOF, only an empty pipe). */
        for (int k = 0; k < 16 && !m->a.terminal && m->out[OUT_STDERR] >= 0; k++)
                if (handle_output(m, OUT_STDERR) <= 0)
                        break;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
            read_pid(m->a.container_pidfile, &m->container_pid) < 0) {
                if (m->err_len == 0) {
                        char msg[64];
                        int l = snprintf(msg, sizeof(msg), "the runtime exited with status %d",
                                         monitor_exit_code(status));
                        send_sync(m, -1, msg, (size_t)l);
                } else
                        send_sync(m, -1, m->err, m->err_len);
                return -EIO;
        }
        if (m->a.terminal) {
                int fd = receive_console(m);
                remove_console_socket(m);
                if (fd < 0) {
                        static const char msg[] = "the runtime sent no console";
                        send_sync(m, -1, msg, sizeof(msg) - 1);
                        return fd;
                }
                (void)fcntl(fd, F_SETFL, O_NONBLOCK);
                m->out[OUT_STDOUT] = fd;
        }
        m->created = true;
        /* What the runtime printed on success is the container's. */
        if (m->err_len > 0 && !m->a.terminal)
                log_chunk(m, "stderr", m->err, m->err_len);
        oom_watch(m);
        send_sync(m, m->container_pid, NULL, 0);
        for (size_t i = 0; i < m->n_early; i++)
                if (m->early[i].pid == m->container_pid)
                        container_exited(m, m->early[i].status);
        return 0;
}

static int reap(Monitor *m) {
        struct signalfd_siginfo si;
        while (read(m->sigfd, &si, sizeof(si)) > 0)
                ;
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid <= 0)
                        return 0;
                if (pid == m->runtime_pid) {
                        int r = runtime_done(m, status);
                        if (r < 0)
                                return r;
                } else if (m->container_pid > 0 && pid == m->container_pid)
                        container_exited(m, status);
                else if (m->container_pid == 0 &&
                         m->n_early < sizeof(m->early) / sizeof(m->early[0]))
                        m->early[m->n_early++] = (typeof(m->early[0])){ pid, status };
        }
}

static int spawn_runtime(Monitor *m, int in, int out, int err) {
        const char *argv[MONITOR_RUNTIME_ARGS_MAX + 16];
        size_t n = 0;

        argv[n++] = m->a.runtime;
        for (size_t i = 0; i < m->a.n_runtime_args; i++)
                argv[n++] = m->a.runtime_args[i];
        if (m->a.systemd_cgroup)
                argv[n++] = "--systemd-cgroup";
        argv[n++] = "create";
        argv[n++] = "--bundle";
        argv[n++] = m->a.bundle;
        argv[n++] = "--pid-file";
        argv[n++] = m->a.container_pidfile;
        if (m->a.terminal) {
                argv[n++] = "--console-socket";
                argv[n++] = m->console_path;
        }
        argv[n++] = m->a.id;
        argv[n] = NULL;

        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sigset_t all;
                if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
                        _exit(127);
                sigemptyset(&all);
                (void)sigprocmask(SIG_SETMASK, &all, NULL);
                (void)signal(SIGPIPE, SIG_DFL);
                (void)signal(SIGHUP, SIG_DFL);
                (void)unsetenv("_OCI_SYNCPIPE");
                execv(argv[0], (char *const *)argv);
                fprintf(stderr, "nanolet-monitor: cannot run %s: %s\n", argv[0], strerror(errno));
                _exit(127);
        }
        m->runtime_pid = pid;
        return 0;
}

/* Everything the container wrote before it died and that is in the pipes
 * now, bounded: another process of the container may keep writing. */
static void drain(Monitor *m) {
        for (int i = 0; i < _OUT_MAX; i++)
                for (int k = 0; k < 256 && m->out[i] >= 0; k++)
                        if (handle_output(m, i) <= 0)
                                break;
}

/* The exit file in the exit dir goes last, as conmon writes it: it tells
 * the agent the container is done, and the agent then deletes the
 * container and removes the persist dir, which a file written there after
 * it would keep. */
static int write_exit(Monitor *m) {
        char path[PATH_MAX], code[16];
        int r = 0;

        (void)snprintf(code, sizeof(code), "%d", monitor_exit_code(m->exit_status));
        if (snprintf(path, sizeof(path), "%s/exit", m->a.persist_dir) < (int)sizeof(path))
                (void)monitor_write_file_atomic(path, code);
        if (snprintf(path, sizeof(path), "%s/%s", m->a.exit_dir, m->a.id) < (int)sizeof(path))
                r = monitor_write_file_atomic(path, code);
        return r;
}

static int run(Monitor *m) {
        int pipes[_OUT_MAX][2] = { { -1, -1 }, { -1, -1 } }, in[2] = { -1, -1 };
        int rt_pipe[2] = { -1, -1 };
        int r;

        if (m->a.terminal) {
                r = setup_console_socket(m);
                if (r < 0)
                        return r;
                if (pipe2(rt_pipe, O_CLOEXEC) < 0)
                        return -errno;
        } else {
                for (int i = 0; i < _OUT_MAX; i++)
                        if (pipe2(pipes[i], O_CLOEXEC) < 0)
                                return -errno;
        }
        if (m->a.stdin_open && !m->a.terminal) {
                if (pipe2(in, O_CLOEXEC) < 0)
                        return -errno;
        } else {
                in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (in[0] < 0)
                        return -errno;
        }

        r = m->a.terminal ? spawn_runtime(m, in[0], rt_pipe[1], rt_pipe[1])
                          : spawn_runtime(m, in[0], pipes[OUT_STDOUT][1], pipes[OUT_STDERR][1]);
        safe_close(in[0]);
        m->stdin_w = in[1];
        for (int i = 0; i < _OUT_MAX; i++) {
                safe_close(pipes[i][1]);
                m->out[i] = pipes[i][0];
                if (m->out[i] >= 0)
                        (void)fcntl(m->out[i], F_SETFL, O_NONBLOCK);
        }
        safe_close(rt_pipe[1]);
        m->rt_out = rt_pipe[0];
        if (m->rt_out >= 0)
                (void)fcntl(m->rt_out, F_SETFL, O_NONBLOCK);
        if (r < 0)
                return r;

        while (!m->exited) {
                struct pollfd p[6];
                int n = 0, idx_out[_OUT_MAX] = { -1, -1 }, idx_ctl = -1, idx_oom = -1, idx_rt = -1;
                p[n++] = (struct pollfd){ m->sigfd, POLLIN, 0 };
                for (int i = 0; i < _OUT_MAX; i++)
                        if (m->out[i] >= 0) {
                                idx_out[i] = n;
                                p[n++] = (struct pollfd){ m->out[i], POLLIN, 0 };
                        }
                if (m->ctl_fd >= 0) {
                        idx_ctl = n;
                        p[n++] = (struct pollfd){ m->ctl_fd, POLLIN, 0 };
                }
                if (m->oom_fd >= 0) {
                        idx_oom = n;
                        p[n++] = (struct pollfd){ m->oom_fd, POLLIN, 0 };
                }
                if (m->rt_out >= 0) {
                        idx_rt = n;
                        p[n++] = (struct pollfd){ m->rt_out, POLLIN, 0 };
                }
                if (poll(p, (nfds_t)n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (int i = 0; i < _OUT_MAX; i++)
                        if (idx_out[i] >= 0 && p[idx_out[i]].revents)
                                (void)handle_output(m, i);
                if (idx_rt >= 0 && p[idx_rt].revents)
                        handle_runtime_output(m);
                if (idx_ctl >= 0 && p[idx_ctl].revents)
                        handle_ctl(m);
                if (idx_oom >= 0 && p[idx_oom].revents)
                        oom_check(m, true);
                if (p[0].revents) {
                        r = reap(m);
                        if (r < 0)
                                return r;
                }
        }
        drain(m);
        oom_check(m, false);
        return write_exit(m);
}

/* <bundle>/ctl, read by the loop: opened read-write so it never reports
 * EOF when a writer (the agent's log rotation) closes. */
static int open_ctl(const char *bundle) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/ctl", bundle) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        (void)unlink(path);
        if (mkfifo(path, 0600) < 0)
                return -errno;
        int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int write_pid_file(const char *path, pid_t pid) {
        char buf[16];
        (void)snprintf(buf, sizeof(buf), "%d", (int)pid);
        return monitor_write_file_atomic(path, buf);
}

int monitor_main(int argc, char **argv) {
        Monitor m = { .sync_fd = -1,
                      .sigfd = -1,
                      .ctl_fd = -1,
                      .out = { -1, -1 },
                      .rt_out = -1,
                      .stdin_w = -1,
                      .console_listen = -1,
                      .oom_fd = -1,
                      .oom_kills = -1 };
        char err[256];
        int r;

        if (monitor_parse_args(argc, argv, &m.a, err, sizeof(err)) < 0) {
                die(err, NULL);
                return 2;
        }
        const char *sync = getenv("_OCI_SYNCPIPE");
        if (sync) {
                char *end;
                long fd = strtol(sync, &end, 10);
                if (*end || fd < 3 || fd > INT_MAX || fcntl((int)fd, F_GETFD) < 0) {
                        die("bad _OCI_SYNCPIPE", sync);
                        return 1;
                }
                m.sync_fd = (int)fd;
                (void)fcntl(m.sync_fd, F_SETFD, FD_CLOEXEC);
                (void)fcntl(m.sync_fd, F_SETFL, O_NONBLOCK);
        }
        /* Errors up to the fork reach the agent on stderr. */
        r = monitor_log_open(&m.log, m.a.log_path, m.a.log_size_max);
        if (r < 0) {
                fprintf(stderr, "nanolet-monitor: cannot open the log %s: %s\n", m.a.log_path,
                        strerror(-r));
                return 1;
        }
        m.ctl_fd = open_ctl(m.a.bundle);
        if (m.ctl_fd < 0) {
                fprintf(stderr, "nanolet-monitor: cannot create the ctl FIFO in %s: %s\n",
                        m.a.bundle, strerror(-m.ctl_fd));
                return 1;
        }
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
            (m.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                die("cannot watch children", NULL);
                return 1;
        }
        (void)signal(SIGPIPE, SIG_IGN);
        (void)signal(SIGHUP, SIG_IGN);
        tzset();

        pid_t pid = fork();
        if (pid < 0) {
                die("cannot fork", NULL);
                return 1;
        }
        if (pid > 0) {
                /* The first process: the monitor's pid for the agent, then
                 * exit (the agent reaps it). */
                if (m.a.monitor_pidfile && write_pid_file(m.a.monitor_pidfile, pid) < 0) {
                        die("cannot write", m.a.monitor_pidfile);
                        (void)kill(pid, SIGKILL);
                        return 1;
                }
                return 0;
        }

        /* The monitor: its own session, the parent of the container's
         * orphans, nothing of the agent's but the sync pipe. */
        (void)setsid();
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1);
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
                for (int fd = 0; fd < 3; fd++)
                        (void)dup2(null, fd);
                if (null > 2)
                        close(null);
        }
        r = run(&m);
        if (r < 0 && m.sync_fd >= 0) {
                int l = snprintf(err, sizeof(err), "nanolet-monitor: %s", strerror(-r));
                send_sync(&m, -1, err, (size_t)l);
        }
        remove_console_socket(&m);
        monitor_log_close(&m.log);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        return monitor_main(argc, argv);
}
