/* fork + exec with a clean child: see spawn.h. */
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

#include "child-env.h"
#include "cleanup.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

static int check_executable(const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (access(path, X_OK) < 0)
                return -errno;
        return 0;
}

static int search_path(const char *name, const char *path, char **ret) {
        int r = -ENOENT;
        const char *p = path;

        while (p && *p) {
                const char *colon = strchr(p, ':');
                size_t n = colon ? (size_t)(colon - p) : strlen(p);
                if (n > 0 && p[0] == '/') {
                        _cleanup_free_ char *full = strprintf("%.*s/%s", (int)n, p, name);
                        if (!full)
                                return -ENOMEM;
                        int q = check_executable(full);
                        if (q == 0) {
                                *ret = TAKE_PTR(full);
                                return 0;
                        }
                        if (q == -EACCES)
                                r = q; /* remember, but a later entry may work */
                }
                p = colon ? colon + 1 : NULL;
        }
        return r;
}

int find_executable(const char *name, char **ret_path) {
        int r;

        if (isempty(name))
                return -EINVAL;
        if (strchr(name, '/')) {
                r = check_executable(name);
                if (r < 0)
                        return r;
                char *c = strdup(name);
                if (!c)
                        return -ENOMEM;
                *ret_path = c;
                return 0;
        }
        const char *path = getenv("PATH");
        r = search_path(name, path, ret_path);
        if (r == 0 || r == -ENOMEM)
                return r;
        /* Daemons started with a minimal PATH still find runc in /usr/sbin. */
        int q = search_path(name, CHILD_ENV_DEFAULT_PATH, ret_path);
        if (q == 0 || q == -ENOMEM)
                return q;
        return r == -EACCES ? r : q;
}

/* The kernel's struct sigaction (asm-generic and x86: handler, flags,
 * restorer, mask), for the signals glibc keeps to itself. */
struct kernel_sigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)(void);
        unsigned long mask;
};

void spawn_reset_signals(void) {
        struct sigaction sa = { .sa_handler = SIG_DFL };
        sigset_t all;

        for (int sig = 1; sig < _NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP)
                        continue;
                if (sigaction(sig, &sa, NULL) < 0 && errno == EINVAL) {
                        /* glibc refuses its reserved signals (32, 33), but a
                         * parent such as make may have left them ignored, and
                         * an ignored signal stays ignored across exec: the
                         * kernel is asked directly. */
                        struct kernel_sigaction ksa = { .handler = SIG_DFL };
                        (void)syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksa.mask));
                }
        }
        (void)sigemptyset(&all);
        (void)sigprocmask(SIG_SETMASK, &all, NULL);
}

static void close_range_fallback(unsigned first, unsigned last) {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 65536)
                max = 65536;
        for (unsigned fd = first; fd <= last && fd < (unsigned)max; fd++)
                (void)close((int)fd);
}

static void close_fd_range(unsigned first, unsigned last) {
        if (first > last)
                return;
        if (syscall(SYS_close_range, first, last, 0) < 0)
                close_range_fallback(first, last);
}

void spawn_close_all_fds(const int *keep, size_t n) {
        unsigned start = 3;

        /* Walk the gaps between kept fds in increasing order; n is tiny. */
        for (;;) {
                int next = -1;
                for (size_t i = 0; i < n; i++)
                        if (keep[i] >= (int)start && (next < 0 || keep[i] < next))
                                next = keep[i];
                if (next < 0) {
                        close_fd_range(start, UINT_MAX);
                        return;
                }
                if ((unsigned)next > start)
                        close_fd_range(start, (unsigned)next - 1);
                start = (unsigned)next + 1;
        }
}

_noreturn_ static void child_fail(int errfd, int error) {
        int e = error < 0 ? -error : error;
        (void)!write(errfd, &e, sizeof(e));
        _exit(127);
}

_noreturn_ static void child_exec(const SpawnOptions *o, const char *path, char *const *envp,
                                  int errfd) {
        int stdio[3] = { o->stdin_fd, o->stdout_fd, o->stderr_fd };
        int moved[3];
        int null_fd = -EBADF;

        spawn_reset_signals();

        if (o->new_session && setsid() < 0)
                child_fail(errfd, errno);
        if (o->pdeath_signal > 0 && prctl(PR_SET_PDEATHSIG, o->pdeath_signal) < 0)
                child_fail(errfd, errno);

        /* Move every source above 2 first, so dup2() onto 0..2 never
         * clobbers a source that is still needed. */
        for (int i = 0; i < 3; i++) {
                int fd = stdio[i];
                if (fd < 0) {
                        if (null_fd < 0) {
                                null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
                                if (null_fd < 0)
                                        child_fail(errfd, errno);
                        }
                        fd = null_fd;
                }
                moved[i] = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                if (moved[i] < 0)
                        child_fail(errfd, errno);
        }
        for (int i = 0; i < 3; i++)
                if (dup2(moved[i], i) < 0)
                        child_fail(errfd, errno);

        for (size_t i = 0; i < o->n_keep_fds; i++) {
                int fl = fcntl(o->keep_fds[i], F_GETFD);
                if (fl < 0 || fcntl(o->keep_fds[i], F_SETFD, fl & ~FD_CLOEXEC) < 0)
                        child_fail(errfd, errno);
        }

        /* Keep the error pipe until exec closes it (it is O_CLOEXEC). */
        int keep[SPAWN_KEEP_FDS_MAX + 1];
        if (o->n_keep_fds > 0)
                memcpy(keep, o->keep_fds, o->n_keep_fds * sizeof(int));
        keep[o->n_keep_fds] = errfd;
        spawn_close_all_fds(keep, o->n_keep_fds + 1);

        if (o->cwd && chdir(o->cwd) < 0)
                child_fail(errfd, errno);

        execve(path, o->argv, envp);
        child_fail(errfd, errno);
}

typedef struct ChildArgs {
        const SpawnOptions *o;
        const char *path;
        char *const *envp;
        int errfd;
} ChildArgs;

static int child_start(void *userdata) {
        const ChildArgs *a = userdata;
        child_exec(a->o, a->path, a->envp, a->errfd);
}

/* The child shares the agent's memory until it execs (CLONE_VM |
 * CLONE_VFORK, as posix_spawn does): no copy of the page tables and no
 * copy-on-write faults in the agent afterwards, which a fork() of the
 * agent paid for every runc, monitor and CNI plugin
 * (docs/internals/design-decisions.md). The caller is suspended until the
 * exec or the _exit(), which it waited for anyway on the error pipe. The
 * child runs child_exec() only: system calls, no malloc, no stdio; its own
 * stack, and every signal blocked until it has reset the dispositions, so
 * no handler of the agent's runs on the shared memory. */
static pid_t clone_vfork(ChildArgs *a) {
        const size_t stack_size = 256 * 1024; /* sanitizer builds use more than the usual few KiB */
        void *stack = mmap(NULL, stack_size, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (stack == MAP_FAILED)
                return -1;
#ifdef __SANITIZE_ADDRESS__
        /* The child never returns, so its frames' redzones stay poisoned in
         * the shadow; the next mmap() may hand out the same range. */
        __asan_unpoison_memory_region(stack, stack_size);
#endif
        sigset_t all, saved;
        (void)sigfillset(&all);
        (void)pthread_sigmask(SIG_SETMASK, &all, &saved);
        pid_t pid =
                clone(child_start, (char *)stack + stack_size, CLONE_VM | CLONE_VFORK | SIGCHLD, a);
        int e = errno;
        (void)pthread_sigmask(SIG_SETMASK, &saved, NULL);
        (void)munmap(stack, stack_size);
        errno = e;
        return pid;
}

int spawn_nowait(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd) {
        _cleanup_free_ char *path = NULL;
        _cleanup_strv_free_ char **clean_env = NULL;
        _cleanup_close_pair_ int errpipe[2] = { -EBADF, -EBADF };
        int r;

        if (!o || !o->argv || !o->argv[0] || !ret_pid)
                return -EINVAL;
        *ret_pid = 0;
        if (o->n_keep_fds > SPAWN_KEEP_FDS_MAX)
                return -E2BIG;
        for (size_t i = 0; i < o->n_keep_fds; i++)
                if (o->keep_fds[i] < 3)
                        return -EINVAL;

        r = find_executable(o->argv[0], &path);
        if (r < 0)
                return r;
        if (!o->envp) {
                /* Built before fork: the child only execs. */
                r = child_env_new(NULL, &clean_env);
                if (r < 0)
                        return r;
        }

        if (pipe2(errpipe, O_CLOEXEC) < 0)
                return -errno;

        /* The child inherits both ends; the read end is close-on-exec and
         * the child never reads it. */
        ChildArgs a = {
                .o = o, .path = path, .envp = o->envp ? o->envp : clean_env, .errfd = errpipe[1]
        };
        pid_t pid = clone_vfork(&a);
        if (pid < 0)
                return -errno;

        errpipe[1] = safe_close(errpipe[1]);

        /* The child has exec'd (the write end closed on exec: EOF) or
         * written its errno and exited: this read does not wait. */
        int child_errno = 0;
        ssize_t n;
        do
                n = read(errpipe[0], &child_errno, sizeof(child_errno));
        while (n < 0 && errno == EINTR);

        if (n == (ssize_t)sizeof(child_errno)) {
                *ret_pid = pid; /* in _exit(127) already; the caller reaps it */
                return -(child_errno > 0 ? child_errno : EIO);
        }

        if (ret_pidfd) {
                /* Race-free: the child is ours and not reaped yet. */
                int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
                if (pidfd < 0) {
                        r = -errno;
                        (void)kill(pid, SIGKILL);
                        *ret_pid = pid;
                        return r;
                }
                *ret_pidfd = pidfd;
        }
        *ret_pid = pid;
        return 0;
}

int spawn(const SpawnOptions *o, pid_t *ret_pid, int *ret_pidfd) {
        pid_t pid = 0;
        int r = spawn_nowait(o, &pid, ret_pidfd);

        if (r < 0 && pid > 0) {
                /* Bounded: the child is in _exit() or SIGKILLed. Never on
                 * the event loop, whose callers use spawn_nowait(). */
                (void)TEMP_FAILURE_RETRY(waitpid(pid, NULL, 0));
                return r;
        }
        if (r < 0)
                return r;
        *ret_pid = pid;
        return 0;
}
