/* Pod sandboxes without a pause container: namespaces created by a short-lived
 * thread of the agent (or, when the pod shares its PID namespace, a
 * forked helper) and pinned by bind mounts of its /proc/.../ns/<ns> files, as
 * CRI-O's pinns does; a PID holder process only when the pod shares its PID
 * namespace.
 *
 * Without PID (every CNI pod, multi-container pods' IPC) no process is
 * forked: namespaces belong to a task, not to a process, so a detached thread
 * can unshare(NET|IPC|UTS) (allowed in a multi-threaded process, see
 * unshare(2): only CLONE_THREAD, CLONE_SIGHAND, CLONE_VM and CLONE_NEWUSER,
 * which implies them, need a single thread) and only that thread moves. It
 * runs with every signal blocked (process-directed signals stay for the
 * loop's signalfd), sets the hostname, brings "lo" up, reports "T <tid>\n"
 * and then waits, doing nothing else, until the loop closes the go pipe; the
 * loop pins the /proc/<pid>/task/<tid>/ns files meanwhile. The thread never
 * touches the filesystem: if the op times out or is freed, the loop closes
 * its ends and the late thread exits on EOF, its namespaces vanishing with
 * it, so there is never a pin the loop does not know about (a thread that
 * pinned by itself, as first designed, would leave pins behind an abandoned
 * op and race a retry of the same pod for the pin paths). Netns creation can
 * take milliseconds under rtnl contention (other pods' CNI plugins): that is
 * why it is not done on the loop thread itself.
 *
 * With PID a new PID namespace only applies to children and its pid 1 must
 * outlive the agent's call (a holder spawned by the thread would be the
 * agent's child to reap, its pdeath signal tied to the thread): a fork
 * without exec (CLONE_VFORK cannot be used for a child that outlives the
 * call, and a CLONE_VM child running beside the loop would share its errno
 * and heap). That helper calls only async-signal-safe functions (raw
 * syscalls, write(); no stdio or malloc), since the agent has threads. The
 * holder re-execs nanolet, so it is not bound by that.
 *
 * Protocol of the forked helper (pipes; the helper may block, the agent
 * never does):
 *   helper: unshare(NET|IPC|UTS|PID), sethostname, "lo" up, forks the
 *           holder (pid 1 of the new namespace), which re-execs
 *           /proc/self/exe as SANDBOX_HOLDER_ARGV0 with a SIGKILL pdeath
 *           signal and reports on fd 3.
 *   helper -> agent: "R <holder pid or 0>\n" or "E <errno> <what>\n".
 *   agent:  bind-mounts the pins, writes <dir>/holder.pid, then writes "c"
 *           (commit) on the go pipe and closes it; closing without "c"
 *           aborts.
 *   helper -> holder (fd 4): "c"; the holder clears its pdeath signal and
 *           acks "k" on fd 3, so the helper's exit cannot kill it. On abort
 *           or any death before that, the holder dies with the helper.
 * The pins live under <run-dir>/ns, made a private bind mount of itself on
 * first use, so they do not propagate into other mount namespaces (pinns
 * does the same with MS_UNBINDABLE for its mount-namespace pins). */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/magic.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "runtime-internal.h"
#include "spawn.h"
#include "string-util.h"

#ifndef NSFS_MAGIC
#define NSFS_MAGIC 0x6e736673
#endif

#define HOLDER_FD_OUT 3 /* holder -> helper */
#define HOLDER_FD_IN 4  /* helper -> holder */

static const struct {
        unsigned flag;
        const char *name;
        int clone_flag;
} pin_table[] = {
        { SANDBOX_NS_NET, "net", CLONE_NEWNET },
        { SANDBOX_NS_IPC, "ipc", CLONE_NEWIPC },
        { SANDBOX_NS_UTS, "uts", CLONE_NEWUTS },
        { SANDBOX_NS_PID, "pid", CLONE_NEWPID },
};

struct SandboxState {
        char *dir;
        char *hostname;
        unsigned namespaces;
        bool created_dir;
        int ready_fd; /* helper -> us */
        int go_fd;    /* us -> helper */
        EventSource *ready_source;
        char buf[512];
        size_t len;
        bool reported;
        bool committed;
        bool threaded;   /* namespaces from a thread of ours, no helper process */
        unsigned pinned; /* SandboxNamespaces flags mounted */
        bool wrote_holder_pid;
};

char *sandbox_ns_path(const char *dir, const char *ns) {
        if (!dir || !ns)
                return NULL;
        return strprintf("%s/%s", dir, ns);
}

/* --- helper (child side) --------------------------------------------------- */

/* The helper is forked without exec from an agent that may have threads
 * (libcurl's resolver), so it calls only async-signal-safe functions: no
 * stdio, no malloc. This writes "<tag> <number>[ <what>]\n" with write(). */
static void helper_report(int fd, char tag, long number, const char *what) {
        char buf[256], digits[24];
        size_t n = 0, d = 0;
        bool negative = number < 0;
        unsigned long v = negative ? -(unsigned long)number : (unsigned long)number;

        do
                digits[d++] = (char)('0' + v % 10);
        while ((v /= 10) > 0);
        buf[n++] = tag;
        buf[n++] = ' ';
        if (negative)
                buf[n++] = '-';
        while (d > 0)
                buf[n++] = digits[--d];
        if (what) {
                buf[n++] = ' ';
                for (; *what && n < sizeof(buf) - 1; what++)
                        buf[n++] = *what;
        }
        buf[n++] = '\n';
        (void)!write(fd, buf, n);
}

_noreturn_ static void helper_fail(int fd, int error, const char *what) {
        helper_report(fd, 'E', error < 0 ? -error : error, what);
        _exit(1);
}

static int loopback_up(void) {
        struct ifreq ifr = {};
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void)strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return -errno;
        return 0;
}

static ssize_t read_byte(int fd, char *c) {
        ssize_t n;
        do
                n = read(fd, c, 1);
        while (n < 0 && errno == EINTR);
        return n;
}

_noreturn_ static void holder_exec(int out_fd, int in_fd) {
        int null_fd;

        /* pid 1 of the new namespace; dies with the helper until committed. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                _exit(127);
        (void)setsid();
        null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null_fd < 0)
                _exit(127);
        for (int i = 0; i < 3; i++)
                if (dup2(null_fd, i) < 0)
                        _exit(127);
        /* Move to the fixed numbers, via high temporaries to avoid clashes. */
        int o = fcntl(out_fd, F_DUPFD_CLOEXEC, 10), n = fcntl(in_fd, F_DUPFD_CLOEXEC, 10);
        if (o < 0 || n < 0 || dup2(o, HOLDER_FD_OUT) < 0 || dup2(n, HOLDER_FD_IN) < 0)
                _exit(127);
        int keep[] = { HOLDER_FD_OUT, HOLDER_FD_IN };
        spawn_close_all_fds(keep, ELEMENTSOF(keep));
        if (chdir("/") < 0)
                _exit(127);
        char *const argv[] = { (char *)SANDBOX_HOLDER_ARGV0, NULL };
        char *const envp[] = { (char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        execve("/proc/self/exe", argv, envp);
        _exit(127);
}

_noreturn_ static void helper_main(pid_t parent, int ready_fd, int go_fd, unsigned namespaces,
                                   const char *hostname) {
        int flags = 0;
        pid_t holder = 0;
        int to_holder = -1, from_holder = -1;
        char c;

        spawn_reset_signals();
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
                _exit(1);
        int keep[] = { ready_fd, go_fd };
        spawn_close_all_fds(keep, ELEMENTSOF(keep));

        for (size_t i = 0; i < ELEMENTSOF(pin_table); i++)
                if (namespaces & pin_table[i].flag)
                        flags |= pin_table[i].clone_flag;
        if (unshare(flags) < 0)
                helper_fail(ready_fd, errno, "unshare");
        if ((namespaces & SANDBOX_NS_UTS) && !isempty(hostname) &&
            sethostname(hostname, strlen(hostname)) < 0)
                helper_fail(ready_fd, errno, "sethostname");
        if (namespaces & SANDBOX_NS_NET) {
                int r = loopback_up();
                if (r < 0)
                        helper_fail(ready_fd, r, "bringing up lo");
        }

        if (namespaces & SANDBOX_NS_PID) {
                int up[2], down[2];
                if (pipe2(up, O_CLOEXEC) < 0 || pipe2(down, O_CLOEXEC) < 0)
                        helper_fail(ready_fd, errno, "pipe");
                holder = fork();
                if (holder < 0)
                        helper_fail(ready_fd, errno, "fork of the PID holder");
                if (holder == 0)
                        holder_exec(up[1], down[0]);
                (void)close(up[1]);
                (void)close(down[0]);
                from_holder = up[0];
                to_holder = down[1];
                if (read_byte(from_holder, &c) != 1 || c != 'r')
                        helper_fail(ready_fd, ENOEXEC,
                                    "PID holder did not start (main() must dispatch "
                                    "argv[0] \"" SANDBOX_HOLDER_ARGV0 "\" to "
                                    "sandbox_holder_main())");
        }

        helper_report(ready_fd, 'R', holder, NULL);

        /* Wait for the agent to pin everything. */
        ssize_t n = read_byte(go_fd, &c);
        if (n != 1 || c != 'c')
                _exit(1); /* abort: the holder dies with us */
        if (holder > 0) {
                if (write(to_holder, "c", 1) != 1 || read_byte(from_holder, &c) != 1 || c != 'k')
                        _exit(1);
        }
        _exit(0);
}

/* --- thread (no PID namespace) ------------------------------------------------ */

typedef struct PinThread {
        int ready_fd; /* thread -> loop */
        int go_fd;    /* loop -> thread: EOF once pinned or given up */
        int flags;    /* CLONE_NEW* */
        char hostname[65];
} PinThread;

static void pin_thread_free(PinThread *t) {
        safe_close(t->ready_fd);
        safe_close(t->go_fd);
        free(t);
}

/* Runs in a detached thread with every signal blocked. Its errno and
 * stack are its own; it shares nothing with the loop but the two pipe ends
 * it owns, and calls nothing that takes a lock the loop could hold (no
 * logging). It moves only itself into the new namespaces. */
static void *pin_thread_main(void *userdata) {
        PinThread *t = userdata;
        char c;

        if (unshare(t->flags) < 0)
                helper_report(t->ready_fd, 'E', errno, "unshare");
        else if ((t->flags & CLONE_NEWUTS) && t->hostname[0] &&
                 sethostname(t->hostname, strlen(t->hostname)) < 0)
                helper_report(t->ready_fd, 'E', errno, "sethostname");
        else {
                int r = (t->flags & CLONE_NEWNET) ? loopback_up() : 0;
                if (r < 0)
                        helper_report(t->ready_fd, 'E', -r, "bringing up lo");
                else {
                        helper_report(t->ready_fd, 'T', (long)gettid(), NULL);
                        /* Alive (so /proc/<pid>/task/<tid> is ours) and idle
                         * in the new namespaces until the loop is done. */
                        while (read_byte(t->go_fd, &c) == 1)
                                ;
                }
        }
        pin_thread_free(t);
        return NULL;
}

static int pin_thread_start(SandboxState *sb, int ready_fd, int go_fd, Error *err) {
        pthread_attr_t attr;
        sigset_t all, saved;
        pthread_t thread;
        int r;

        PinThread *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->ready_fd = ready_fd;
        t->go_fd = go_fd;
        for (size_t i = 0; i < ELEMENTSOF(pin_table); i++)
                if (sb->namespaces & pin_table[i].flag)
                        t->flags |= pin_table[i].clone_flag;
        if (sb->hostname)
                (void)strncpy(t->hostname, sb->hostname, sizeof(t->hostname) - 1);

        r = pthread_attr_init(&attr);
        if (r != 0) {
                free(t);
                return error_set(err, -r, "Failed to set up the sandbox thread: %s", strerror(r));
        }
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* It needs a few hundred bytes of stack, not the default 8 MiB
         * mapping (128 KiB leaves room for the sanitizers). */
        (void)pthread_attr_setstacksize(&attr, 128 * 1024);
        /* A new thread inherits its creator's mask: all blocked, so no
         * process-directed signal (SIGCHLD, SIGTERM: the loop reads them
         * from its signalfd) is ever delivered to it, nor its default
         * action taken there. */
        (void)sigfillset(&all);
        (void)pthread_sigmask(SIG_SETMASK, &all, &saved);
        r = pthread_create(&thread, &attr, pin_thread_main, t);
        (void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
        (void)pthread_attr_destroy(&attr);
        if (r != 0) {
                free(t); /* the caller still owns the fds */
                return error_set(err, -r, "Failed to start the sandbox thread: %s", strerror(r));
        }
        return 0;
}

/* --- holder ------------------------------------------------------------------ */

static volatile sig_atomic_t holder_terminate;

static void holder_on_term(int sig) {
        holder_terminate = 1;
}

static void holder_on_chld(int sig) {
}

int sandbox_holder_main(int argc, char **argv) {
        struct sigaction term = { .sa_handler = holder_on_term };
        struct sigaction chld = { .sa_handler = holder_on_chld, .sa_flags = SA_NOCLDSTOP };
        sigset_t block, empty;
        char c;

        /* pid 1 of a namespace only gets signals it has handlers for: real
         * handlers, not SIG_DFL, for everything we react to. */
        (void)sigemptyset(&block);
        (void)sigaddset(&block, SIGCHLD);
        (void)sigaddset(&block, SIGTERM);
        (void)sigaddset(&block, SIGINT);
        (void)sigaddset(&block, SIGHUP);
        (void)sigprocmask(SIG_BLOCK, &block, NULL);
        (void)sigaction(SIGTERM, &term, NULL);
        (void)sigaction(SIGINT, &term, NULL);
        (void)sigaction(SIGHUP, &term, NULL);
        (void)sigaction(SIGCHLD, &chld, NULL);
        (void)prctl(PR_SET_NAME, "pod-holder");

        if (fcntl(HOLDER_FD_OUT, F_GETFD) >= 0 && fcntl(HOLDER_FD_IN, F_GETFD) >= 0) {
                if (write(HOLDER_FD_OUT, "r", 1) != 1)
                        return 1;
                if (read_byte(HOLDER_FD_IN, &c) != 1 || c != 'c')
                        return 1; /* aborted */
                (void)prctl(PR_SET_PDEATHSIG, 0);
                if (write(HOLDER_FD_OUT, "k", 1) != 1)
                        return 1;
                (void)close(HOLDER_FD_OUT);
                (void)close(HOLDER_FD_IN);
        }

        (void)sigemptyset(&empty);
        for (;;) {
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                if (holder_terminate)
                        return 0;
                (void)sigsuspend(&empty);
        }
}

/* --- agent side -------------------------------------------------------------- */

static int is_nsfs(const char *path) {
        struct statfs sfs;
        if (statfs(path, &sfs) < 0)
                return -errno;
        return sfs.f_type == (typeof(sfs.f_type))NSFS_MAGIC;
}

/* <run-dir>/ns as a private mount, so pins stay in this mount namespace. */
static int ns_root_make_private(Runtime *rt, const char *root, Error *err) {
        struct statx stx = {};
        int r;

        r = mkdir_p(root, 0755);
        if (r < 0)
                return error_set(err, r, "Failed to create \"%s\": %s", root, strerror(-r));
        if (statx(AT_FDCWD, root, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) < 0)
                return error_set(err, -errno, "Failed to stat \"%s\": %m", root);
        if (!S_ISDIR(stx.stx_mode))
                return error_set(err, -ENOTDIR, "\"%s\" is not a directory", root);
        bool known = stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT;
        bool mount_root = stx.stx_attributes & STATX_ATTR_MOUNT_ROOT;
        if (known && !mount_root && mount(root, root, NULL, MS_BIND, NULL) < 0)
                return error_set(err, -errno, "Failed to make \"%s\" a bind mount of itself: %m",
                                 root);
        if (mount(NULL, root, NULL, MS_PRIVATE, NULL) < 0) {
                if (!rt->warned_ns_private)
                        log_warning_errno(-errno,
                                          "Cannot make \"%s\" a private mount, pins may "
                                          "propagate, ignoring: %m",
                                          root);
                rt->warned_ns_private = true;
        }
        return 0;
}

/* proc: "/proc/<pid>" or "/proc/<pid>/task/<tid>", whose ns/<name> is pinned. */
static int pin_one(const char *dir, const char *name, const char *proc, Error *err) {
        _cleanup_free_ char *path = sandbox_ns_path(dir, name);
        _cleanup_free_ char *src = strprintf("%s/ns/%s", proc, name);
        if (!path || !src)
                return -ENOMEM;

        int fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
        if (fd < 0 && errno == EEXIST) {
                if (is_nsfs(path) > 0)
                        return error_set(err, -EEXIST, "\"%s\" is already pinned", path);
                fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd < 0)
                return error_set(err, -errno, "Failed to create \"%s\": %m", path);
        safe_close(fd);
        if (mount(src, path, NULL, MS_BIND, NULL) < 0) {
                int r = -errno;
                (void)unlink(path);
                return error_set(err, r, "Failed to pin \"%s\" on \"%s\": %s", src, path,
                                 strerror(-r));
        }
        return 0;
}

static int unpin_one(const char *dir, const char *name, Error *err) {
        _cleanup_free_ char *path = sandbox_ns_path(dir, name);
        if (!path)
                return -ENOMEM;
        /* Detach every stacked mount, then the file. */
        for (unsigned i = 0; i < 16; i++)
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
                        if (errno == EINVAL || errno == ENOENT)
                                break;
                        return error_set(err, -errno, "Failed to unmount \"%s\": %m", path);
                }
        if (unlink(path) < 0 && errno != ENOENT)
                return error_set(err, -errno, "Failed to remove \"%s\": %m", path);
        return 0;
}

/* Verifies pid is the holder of this sandbox before killing it: its pid
 * namespace is the pinned one, or (pin already gone) its argv[0] says so. */
static bool holder_matches(const char *dir, pid_t pid) {
        char path[64];
        struct stat a, b;
        _cleanup_free_ char *pin = sandbox_ns_path(dir, "pid");

        (void)snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
        if (pin && is_nsfs(pin) > 0 && stat(pin, &a) == 0 && stat(path, &b) == 0)
                return a.st_ino == b.st_ino && a.st_dev == b.st_dev;

        _cleanup_free_ char *cmdline = NULL;
        (void)snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        if (read_full_file_at(AT_FDCWD, path, 4096, &cmdline, NULL) < 0)
                return false;
        return streq(cmdline, SANDBOX_HOLDER_ARGV0);
}

static void kill_holder(const char *dir, pid_t pid) {
        if (pid <= 0)
                return;
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return;
        if (holder_matches(dir, pid))
                (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        safe_close(pidfd);
}

int sandbox_remove(const char *dir, Error *err) {
        Error dummy = {};
        _cleanup_free_ char *holder_file = NULL;
        pid_t holder;
        int r = 0;

        if (!dir || dir[0] != '/')
                return -EINVAL;
        if (!err)
                err = &dummy;

        holder_file = sandbox_ns_path(dir, "holder.pid");
        if (!holder_file)
                return -ENOMEM;
        if (read_pid_file(holder_file, &holder) == 0)
                kill_holder(dir, holder);

        for (size_t i = 0; i < ELEMENTSOF(pin_table); i++) {
                int q = unpin_one(dir, pin_table[i].name, err);
                if (q < 0 && r == 0)
                        r = q;
        }
        if (r < 0)
                return r;
        if (unlink(holder_file) < 0 && errno != ENOENT)
                return error_set(err, -errno, "Failed to remove \"%s\": %m", holder_file);
        if (rmdir(dir) < 0 && errno != ENOENT)
                return error_set(err, -errno, "Failed to remove \"%s\": %m", dir);
        return 0;
}

/* Undoes whatever this op did; used on every failure path. */
static void sandbox_undo(RuntimeOp *op) {
        SandboxState *sb = op->sandbox;
        Error ignored = {};

        if (op->holder_pid > 0) {
                /* Not committed: it dies with the helper anyway; be sure. */
                int pidfd = (int)syscall(SYS_pidfd_open, op->holder_pid, 0);
                if (pidfd >= 0) {
                        (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        safe_close(pidfd);
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(pin_table); i++)
                if (sb->pinned & pin_table[i].flag)
                        (void)unpin_one(sb->dir, pin_table[i].name, &ignored);
        sb->pinned = 0;
        if (sb->wrote_holder_pid) {
                _cleanup_free_ char *f = sandbox_ns_path(sb->dir, "holder.pid");
                if (f)
                        (void)unlink(f);
        }
        if (sb->created_dir)
                (void)rmdir(sb->dir);
}

void sandbox_op_free(RuntimeOp *op) {
        SandboxState *sb = op->sandbox;
        sb->ready_source = event_source_free(sb->ready_source);
        sb->ready_fd = safe_close(sb->ready_fd);
        sb->go_fd = safe_close(sb->go_fd);
        free(sb->dir);
        free(sb->hostname);
        free(sb);
        op->sandbox = NULL;
}

/* helper_proc: "/proc/<helper pid>" or "/proc/<pid>/task/<tid>" of the
 * thread; holder: the PID holder or 0. */
static int sandbox_pin_all(RuntimeOp *op, const char *helper_proc, pid_t holder) {
        SandboxState *sb = op->sandbox;
        char holder_proc[32];
        int r;

        (void)snprintf(holder_proc, sizeof(holder_proc), "/proc/%d", (int)holder);
        for (size_t i = 0; i < ELEMENTSOF(pin_table); i++) {
                if (!(sb->namespaces & pin_table[i].flag))
                        continue;
                const char *src = pin_table[i].flag == SANDBOX_NS_PID ? holder_proc : helper_proc;
                r = pin_one(sb->dir, pin_table[i].name, src, &op->err);
                if (r < 0)
                        return r;
                sb->pinned |= pin_table[i].flag;
        }
        if (holder > 0) {
                char buf[32];
                int n = snprintf(buf, sizeof(buf), "%d\n", (int)holder);
                _cleanup_free_ char *f = sandbox_ns_path(sb->dir, "holder.pid");
                if (!f)
                        return -ENOMEM;
                sb->wrote_holder_pid = true;
                r = write_file_atomic(f, buf, (size_t)n, 0644);
                if (r < 0)
                        return error_set(&op->err, r, "Failed to write \"%s\": %s", f,
                                         strerror(-r));
        }
        return 0;
}

/* Handles the helper's report line (or EOF without one). */
static void sandbox_handle_report(RuntimeOp *op, bool eof) {
        SandboxState *sb = op->sandbox;
        char *nl = memchr(sb->buf, '\n', sb->len);

        if (!nl && !eof)
                return;
        sb->reported = true;
        sb->ready_source = event_source_free(sb->ready_source);
        sb->ready_fd = safe_close(sb->ready_fd);

        int holder = 0, tid = 0, e = 0, consumed = 0;
        char proc[64];
        if (nl && sb->threaded && sscanf(sb->buf, "T %d", &tid) == 1 && tid > 0) {
                /* The thread waits on the go pipe until we close it, so
                 * its tid cannot have been reused meanwhile. */
                (void)snprintf(proc, sizeof(proc), "/proc/%d/task/%d", (int)getpid(), tid);
                int q = sandbox_pin_all(op, proc, 0);
                if (q == 0)
                        sb->committed = true;
                else if (op->err.error == 0) /* -ENOMEM, without a sentence */
                        (void)error_set(&op->err, q, "Failed to pin the sandbox namespaces: %s",
                                        strerror(-q));
        } else if (nl && !sb->threaded && sscanf(sb->buf, "R %d", &holder) == 1) {
                op->holder_pid = holder;
                (void)snprintf(proc, sizeof(proc), "/proc/%d", (int)op->pid);
                if (op->child_exited) {
                        (void)error_set(&op->err, -ESRCH,
                                        "Sandbox helper died before its namespaces were "
                                        "pinned");
                } else if (sandbox_pin_all(op, proc, holder) == 0) {
                        if (write(sb->go_fd, "c", 1) == 1)
                                sb->committed = true;
                        else
                                (void)error_set(&op->err, -errno,
                                                "Failed to commit the sandbox helper: %m");
                }
        } else if (nl && sscanf(sb->buf, "E %d %n", &e, &consumed) >= 1 && consumed > 0) {
                *nl = 0;
                (void)error_set(&op->err, e > 0 ? -e : -EIO, "%s failed: %s: %s",
                                sb->threaded ? "Creating the sandbox namespaces" : "Sandbox helper",
                                sb->buf + consumed, strerror(e > 0 ? e : EIO));
        } else {
                (void)error_set(&op->err, -EIO, "Sandbox %s exited without reporting",
                                sb->threaded ? "thread" : "helper");
        }
        /* Commit sent or not: closing lets the helper exit (abort if not);
         * the thread exits on this EOF either way, its namespaces now
         * pinned or gone with it. */
        sb->go_fd = safe_close(sb->go_fd);

        if (sb->threaded) {
                /* No child to wait for: the op ends here. */
                int r = op->err.error;
                if (r == 0 && !sb->committed)
                        r = error_set(&op->err, -EIO, "Sandbox namespaces were not pinned");
                if (r < 0) {
                        sandbox_undo(op);
                        runtime_op_complete(op, r);
                        return;
                }
                log_debug("runtime: sandbox \"%s\" pinned from thread %d, no helper process.",
                          sb->dir, tid);
                runtime_op_complete(op, 0);
        }
}

static int on_ready(EventSource *s, int fd, uint32_t revents, void *userdata) {
        RuntimeOp *op = userdata;
        SandboxState *sb = op->sandbox;

        for (;;) {
                size_t room = sizeof(sb->buf) - 1 - sb->len;
                ssize_t n = room > 0 ? read(fd, sb->buf + sb->len, room) : 0;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n <= 0) {
                        sb->buf[sb->len] = 0;
                        sandbox_handle_report(op, true);
                        return 0;
                }
                sb->len += (size_t)n;
                sb->buf[sb->len] = 0;
        }
        sandbox_handle_report(op, false);
        return 0;
}

void sandbox_op_child_exited(RuntimeOp *op) {
        SandboxState *sb = op->sandbox;

        if (!sb->reported)
                (void)on_ready(sb->ready_source, sb->ready_fd, EPOLLIN, op);

        int r = op->err.error;
        if (op->timed_out && r == 0)
                r = error_set(&op->err, -ETIMEDOUT, "Sandbox helper timed out");
        if (r == 0 && (op->child_code != CLD_EXITED || op->child_status != 0))
                r = error_set(&op->err, -EIO,
                              "Sandbox helper failed to hand over to the PID holder "
                              "(status %d)",
                              op->child_status);
        if (r == 0 && !sb->committed)
                r = error_set(&op->err, -EIO, "Sandbox helper exited early");
        if (r < 0) {
                sandbox_undo(op);
                runtime_op_complete(op, r);
                return;
        }
        log_debug("runtime: sandbox \"%s\" pinned (holder %d).", sb->dir, (int)op->holder_pid);
        runtime_op_complete(op, 0);
}

void sandbox_op_timed_out(RuntimeOp *op) {
        /* Forked helper: only reached once it is gone; everything else is
         * done in sandbox_op_child_exited(). Thread: it never reported;
         * freeing the op closes its pipes, and it exits on its own once
         * it gets that far, having pinned nothing. */
        (void)error_set(&op->err, -ETIMEDOUT,
                        op->sandbox->threaded ? "Creating the sandbox namespaces timed out"
                                              : "Sandbox helper timed out");
        sandbox_undo(op);
        runtime_op_complete(op, -ETIMEDOUT);
}

int sandbox_op_start(RuntimeOp *op) {
        SandboxState *sb = op->sandbox;
        Runtime *rt = op->rt;
        _cleanup_close_pair_ int rp[2] = { -EBADF, -EBADF }, gp[2] = { -EBADF, -EBADF };
        int r;

        _cleanup_free_ char *root = strdup(sb->dir);
        if (!root)
                return -ENOMEM;
        char *slash = strrchr(root, '/');
        if (slash && slash != root)
                *slash = 0;
        r = ns_root_make_private(rt, root, &op->err);
        if (r < 0)
                return r;
        if (mkdir(sb->dir, 0755) < 0) {
                if (errno != EEXIST)
                        return error_set(&op->err, -errno, "Failed to create \"%s\": %m", sb->dir);
        } else
                sb->created_dir = true;

        if (sb->namespaces == 0)
                return 1; /* nothing to pin: done */

        if (pipe2(rp, O_CLOEXEC) < 0 || pipe2(gp, O_CLOEXEC) < 0) {
                r = -errno;
                sandbox_undo(op);
                return r;
        }
        (void)fcntl(rp[0], F_SETFL, O_NONBLOCK);

        if (!(sb->namespaces & SANDBOX_NS_PID)) {
                sb->threaded = true;
                r = pin_thread_start(sb, rp[1], gp[0], &op->err);
                if (r < 0) {
                        sandbox_undo(op);
                        return r; /* closes all four ends */
                }
                /* Its ends are the thread's now. */
                rp[1] = -EBADF;
                gp[0] = -EBADF;
                sb->ready_fd = TAKE_FD(rp[0]);
                sb->go_fd = TAKE_FD(gp[1]);
                r = runtime_op_arm_timer(op);
                if (r >= 0)
                        r = event_add_io(rt->event, &sb->ready_source, sb->ready_fd, EPOLLIN,
                                         on_ready, op);
                if (r < 0) {
                        /* Freeing the op closes our ends: the thread exits. */
                        sandbox_undo(op);
                        return r;
                }
                return 0;
        }

        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                r = error_set(&op->err, -errno, "Failed to fork the sandbox helper: %m");
                sandbox_undo(op);
                return r;
        }
        if (pid == 0) {
                safe_close(rp[0]);
                safe_close(gp[1]);
                helper_main(parent, rp[1], gp[0], sb->namespaces, sb->hostname);
        }
        rp[1] = safe_close(rp[1]);
        gp[0] = safe_close(gp[0]);
        sb->ready_fd = TAKE_FD(rp[0]);
        sb->go_fd = TAKE_FD(gp[1]);

        r = runtime_op_watch_child(op, pid);
        if (r >= 0)
                r = event_add_io(rt->event, &sb->ready_source, sb->ready_fd, EPOLLIN, on_ready, op);
        if (r < 0) {
                runtime_op_release_child(op);
                sandbox_undo(op);
                return r;
        }
        return 0;
}

int sandbox_create(Runtime *rt, const SandboxRequest *req, sandbox_created_t done, void *userdata,
                   RuntimeOp **ret_op) {
        RuntimeOp *op;
        int r;

        if (!rt || !req || isempty(req->dir) || req->dir[0] != '/' ||
            (req->namespaces &
             ~(unsigned)(SANDBOX_NS_NET | SANDBOX_NS_IPC | SANDBOX_NS_UTS | SANDBOX_NS_PID)))
                return -EINVAL;
        if (req->hostname && strlen(req->hostname) > 64)
                return -EINVAL;
        r = runtime_op_new(rt, RUNTIME_OP_SANDBOX, NULL, &op);
        if (r < 0)
                return r;
        SandboxState *sb = calloc(1, sizeof(*sb));
        if (!sb) {
                free(op);
                return -ENOMEM;
        }
        sb->ready_fd = sb->go_fd = -EBADF;
        sb->namespaces = req->namespaces;
        sb->dir = strdup(req->dir);
        sb->hostname = req->hostname ? strdup(req->hostname) : NULL;
        op->sandbox = sb;
        if (!sb->dir || (req->hostname && !sb->hostname)) {
                sandbox_op_free(op);
                free(op);
                return -ENOMEM;
        }
        op->cb.sandbox = done;
        op->userdata = userdata;
        runtime_op_enqueue(op);
        if (ret_op)
                *ret_op = op;
        return 0;
}
