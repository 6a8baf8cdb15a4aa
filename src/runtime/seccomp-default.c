/* The RuntimeDefault seccomp profile and Localhost profile validation.
 *
 * RuntimeDefault is containerd's default profile (contrib/seccomp/
 * seccomp_default.go, containerd v2.3.4), written here as data: an
 * allowlist with SCMP_ACT_ERRNO (EPERM) as the default action, argument
 * rules for socket(2) (no AF_ALG, no AF_VSOCK), personality(2) and clone(2)
 * (no namespace flags without CAP_SYS_ADMIN), and extra syscalls allowed
 * when the container's bounding set holds the capability that guards them
 * in the kernel anyway. The syscall names are facts copied from that file;
 * names the local libseccomp does not know are kept, because runc and crun
 * skip unknown names and the profile must not shrink on an old build host.
 *
 * Localhost profiles are admin-written JSON in the OCI linux.seccomp
 * format; they are checked here, before runc sees them, so a typo becomes
 * an error naming the field instead of a silently weaker filter. The names
 * are resolved by libseccomp, loaded with dlopen() for each validation and
 * closed after it: only Localhost profiles need it, so an agent without
 * them never maps it (docs/BENCHMARKS.md), and no handle outlives the call
 * (libseccomp keeps no state between these lookups). */
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include <seccomp.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "macro.h"
#include "seccomp-default.h"
#include "string-util.h"

/* Capability numbers used below (linux/capability.h). */
enum {
        CAP_NR_DAC_READ_SEARCH = 2,
        CAP_NR_SYS_MODULE = 16,
        CAP_NR_SYS_RAWIO = 17,
        CAP_NR_SYS_CHROOT = 18,
        CAP_NR_SYS_PTRACE = 19,
        CAP_NR_SYS_PACCT = 20,
        CAP_NR_SYS_ADMIN = 21,
        CAP_NR_SYS_BOOT = 22,
        CAP_NR_SYS_NICE = 23,
        CAP_NR_SYS_TIME = 25,
        CAP_NR_SYS_TTY_CONFIG = 26,
        CAP_NR_SYSLOG = 34,
        CAP_NR_PERFMON = 38,
        CAP_NR_BPF = 39,
};

/* Values from the kernel ABI, spelled out so the table does not depend on
 * the build host's headers being new enough. */
#define NR_AF_ALG 38
#define NR_AF_VSOCK 40
#define NR_ENOSYS 38
/* CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
 * CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET */
#define CLONE_NS_FLAGS UINT64_C(0x7E020000)

/* The tables stay in compact rows. */
/* clang-format off */
static const char *const names_allow[] = {
        "accept", "accept4", "access", "adjtimex", "alarm", "bind", "brk", "cachestat",
        "capget", "capset", "chdir", "chmod", "chown", "chown32", "clock_adjtime",
        "clock_adjtime64", "clock_getres", "clock_getres_time64", "clock_gettime",
        "clock_gettime64", "clock_nanosleep", "clock_nanosleep_time64", "close",
        "close_range", "connect", "copy_file_range", "creat", "dup", "dup2", "dup3",
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
        "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "execve",
        "execveat", "exit", "exit_group", "faccessat", "faccessat2", "fadvise64",
        "fadvise64_64", "fallocate", "fanotify_mark", "fchdir", "fchmod", "fchmodat",
        "fchmodat2", "fchown", "fchown32", "fchownat", "fcntl", "fcntl64", "fdatasync",
        "fgetxattr", "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat",
        "fstat64", "fstatat64", "fstatfs", "fstatfs64", "fsync", "ftruncate", "ftruncate64",
        "futex", "futex_requeue", "futex_time64", "futex_wait", "futex_waitv", "futex_wake",
        "futimesat", "getcpu", "getcwd", "getdents", "getdents64", "getegid", "getegid32",
        "geteuid", "geteuid32", "getgid", "getgid32", "getgroups", "getgroups32",
        "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid",
        "getpriority", "getrandom", "getresgid", "getresgid32", "getresuid", "getresuid32",
        "getrlimit", "get_robust_list", "getrusage", "getsid", "getsockname", "getsockopt",
        "get_thread_area", "gettid", "gettimeofday", "getuid", "getuid32", "getxattr",
        "getxattrat", "inotify_add_watch", "inotify_init", "inotify_init1",
        "inotify_rm_watch", "io_cancel", "ioctl", "io_destroy", "io_getevents",
        "io_pgetevents", "io_pgetevents_time64", "ioprio_get", "ioprio_set", "io_setup",
        "io_submit", "ipc", "kill", "landlock_add_rule", "landlock_create_ruleset",
        "landlock_restrict_self", "lchown", "lchown32", "lgetxattr", "link", "linkat",
        "listen", "listmount", "listxattr", "listxattrat", "llistxattr", "_llseek",
        "lremovexattr", "lseek", "lsetxattr", "lsm_get_self_attr", "lsm_list_modules",
        "lsm_set_self_attr", "lstat", "lstat64", "madvise", "membarrier", "memfd_create",
        "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat", "mlock",
        "mlock2", "mlockall", "map_shadow_stack", "mmap", "mmap2", "mprotect",
        "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
        "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink",
        "mremap", "mseal", "msgctl", "msgget", "msgrcv", "msgsnd", "msync", "munlock",
        "munlockall", "munmap", "name_to_handle_at", "nanosleep", "newfstatat",
        "_newselect", "open", "openat", "openat2", "pause", "pidfd_open",
        "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect",
        "poll", "ppoll", "ppoll_time64", "prctl", "pread64", "preadv", "preadv2",
        "prlimit64", "process_mrelease", "pselect6", "pselect6_time64", "pwrite64",
        "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv",
        "recv", "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "remap_file_pages",
        "removexattr", "removexattrat", "rename", "renameat", "renameat2",
        "restart_syscall", "rmdir", "rseq", "rt_sigaction", "rt_sigpending",
        "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
        "rt_sigtimedwait", "rt_sigtimedwait_time64", "rt_tgsigqueueinfo",
        "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_get_priority_max",
        "sched_get_priority_min", "sched_getscheduler", "sched_rr_get_interval",
        "sched_rr_get_interval_time64", "sched_setaffinity", "sched_setattr",
        "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp", "select",
        "semctl", "semget", "semop", "semtimedop", "semtimedop_time64", "send", "sendfile",
        "sendfile64", "sendmmsg", "sendmsg", "sendto", "setfsgid", "setfsgid32", "setfsuid",
        "setfsuid32", "setgid", "setgid32", "setgroups", "setgroups32", "setitimer",
        "setpgid", "setpriority", "setregid", "setregid32", "setresgid", "setresgid32",
        "setresuid", "setresuid32", "setreuid", "setreuid32", "setrlimit",
        "set_robust_list", "setsid", "setsockopt", "set_thread_area", "set_tid_address",
        "setuid", "setuid32", "setxattr", "setxattrat", "shmat", "shmctl", "shmdt",
        "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "sigprocmask",
        "sigreturn", "socketcall", "socketpair", "splice", "stat", "stat64", "statfs",
        "statfs64", "statmount", "statx", "symlink", "symlinkat", "sync", "sync_file_range",
        "syncfs", "sysinfo", "tee", "tgkill", "time", "timer_create", "timer_delete",
        "timer_getoverrun", "timer_gettime", "timer_gettime64", "timer_settime",
        "timer_settime64", "timerfd_create", "timerfd_gettime", "timerfd_gettime64",
        "timerfd_settime", "timerfd_settime64", "times", "tkill", "truncate", "truncate64",
        "ugetrlimit", "umask", "uname", "unlink", "unlinkat", "uretprobe", "utime",
        "utimensat", "utimensat_time64", "utimes", "vfork", "vmsplice", "wait4", "waitid",
        "waitpid", "write", "writev", NULL
};

static const char *const names_kernel_4_8[] = {
        "process_vm_readv", "process_vm_writev", "ptrace", NULL
};

/* Extra syscalls per architecture; only the build's own is used (the
 * others are _unused_ so every architecture compiles warning-free). */
static const char *const names_ppc64le[] _unused_ = {
        "sync_file_range2", "swapcontext", NULL
};

static const char *const names_arm[] _unused_ = {
        "arm_fadvise64_64", "arm_sync_file_range", "sync_file_range2", "breakpoint",
        "cacheflush", "set_tls", NULL
};

static const char *const names_amd64[] _unused_ = {
        "arch_prctl", "modify_ldt", NULL
};

static const char *const names_386[] _unused_ = {
        "modify_ldt", NULL
};

static const char *const names_s390[] _unused_ = {
        "s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr", NULL
};

static const char *const names_riscv64[] _unused_ = {
        "riscv_flush_icache", "riscv_hwprobe", NULL
};

static const char *const names_sys_admin[] = {
        "bpf", "clone", "clone3", "fanotify_init", "fsconfig", "fsmount", "fsopen",
        "fspick", "lookup_dcookie", "mount", "mount_setattr", "move_mount", "open_tree",
        "perf_event_open", "quotactl", "quotactl_fd", "setdomainname", "sethostname",
        "setns", "syslog", "umount", "umount2", "unshare", NULL
};

static const char *const names_sys_module[] = {
        "delete_module", "init_module", "finit_module", NULL
};

static const char *const names_sys_ptrace[] = {
        "kcmp", "pidfd_getfd", "process_madvise", "process_vm_readv", "process_vm_writev",
        "ptrace", NULL
};

static const char *const names_sys_rawio[] = {
        "iopl", "ioperm", NULL
};

static const char *const names_sys_time[] = {
        "settimeofday", "stime", "clock_settime", "clock_settime64", NULL
};

static const char *const names_sys_nice[] = {
        "get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node", NULL
};

/* clang-format on */

typedef struct SeccompArg {
        const char *op; /* NULL: the rule has no argument condition */
        unsigned index;
        uint64_t value;
        uint64_t value_two;
} SeccompArg;

typedef enum RuleWhen {
        WHEN_ALWAYS,
        WHEN_CAP,        /* only when cap is in the bounding set */
        WHEN_NO_CAP,     /* only when cap is not */
        WHEN_KERNEL_4_8, /* ptrace is safe from seccomp bypass since 4.8 */
} RuleWhen;

typedef struct SeccompRule {
        RuleWhen when;
        int cap;
        const char *const *names;
        const char *single; /* a one-name rule without a names array */
        bool errno_enosys;  /* SCMP_ACT_ERRNO with ENOSYS instead of allow */
        SeccompArg arg;
} SeccompRule;

/* containerd's lists. On x86_64 the two 32-bit ABIs are two thirds of the
 * filter runc compiles at each create (docs/BENCHMARKS.md, "The seccomp
 * profile's cost"), but without them a 32-bit or x32 process is killed
 * instead of filtered, so they stay. */
#if defined(__x86_64__)
static const char *const arches[] = { "SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", NULL };
#define names_arch names_amd64
#elif defined(__aarch64__) || defined(__arm__)
static const char *const arches[] = { "SCMP_ARCH_ARM", "SCMP_ARCH_AARCH64", NULL };
#define names_arch names_arm
#elif defined(__i386__)
static const char *const arches[] = { NULL };
#define names_arch names_386
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static const char *const arches[] = { NULL }; /* containerd lists none for ppc64le */
#define names_arch names_ppc64le
#elif defined(__s390x__) || defined(__s390__)
static const char *const arches[] = { "SCMP_ARCH_S390", "SCMP_ARCH_S390X", NULL };
#define names_arch names_s390
#define CLONE_FLAGS_ARG 1 /* s390's clone takes the flags second */
#elif defined(__riscv) && __riscv_xlen == 64
static const char *const arches[] = { "SCMP_ARCH_RISCV64", NULL };
#define names_arch names_riscv64
#else
static const char *const arches[] = { NULL };
#define names_arch NULL
#endif
#ifndef CLONE_FLAGS_ARG
#define CLONE_FLAGS_ARG 0
#endif

/* clang-format off */
#define ARG_NONE { .op = NULL }

static const SeccompRule rules[] = {
        { WHEN_ALWAYS, 0, names_allow, NULL, false, ARG_NONE },
        /* socket(2): everything below AF_ALG, the family between AF_ALG and
         * AF_VSOCK, and everything above AF_VSOCK -- three single-condition
         * rules, since runc turns conditions on the same argument into OR. */
        { WHEN_ALWAYS, 0, NULL, "socket", false, { "SCMP_CMP_LT", 0, NR_AF_ALG, 0 } },
        { WHEN_ALWAYS, 0, NULL, "socket", false, { "SCMP_CMP_EQ", 0, NR_AF_ALG + 1, 0 } },
        { WHEN_ALWAYS, 0, NULL, "socket", false, { "SCMP_CMP_GT", 0, NR_AF_VSOCK, 0 } },
        /* personality(2): PER_LINUX, PER_LINUX32, UNAME26 variants and the
         * query (0xffffffff) only. */
        { WHEN_ALWAYS, 0, NULL, "personality", false, { "SCMP_CMP_EQ", 0, 0x0, 0 } },
        { WHEN_ALWAYS, 0, NULL, "personality", false, { "SCMP_CMP_EQ", 0, 0x0008, 0 } },
        { WHEN_ALWAYS, 0, NULL, "personality", false, { "SCMP_CMP_EQ", 0, 0x20000, 0 } },
        { WHEN_ALWAYS, 0, NULL, "personality", false, { "SCMP_CMP_EQ", 0, 0x20008, 0 } },
        { WHEN_ALWAYS, 0, NULL, "personality", false, { "SCMP_CMP_EQ", 0, 0xffffffff, 0 } },
        { WHEN_KERNEL_4_8, 0, names_kernel_4_8, NULL, false, ARG_NONE },
        { WHEN_ALWAYS, 0, names_arch, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_DAC_READ_SEARCH, NULL, "open_by_handle_at", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_ADMIN, names_sys_admin, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_BOOT, NULL, "reboot", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_CHROOT, NULL, "chroot", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_MODULE, names_sys_module, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_PACCT, NULL, "acct", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_PTRACE, names_sys_ptrace, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_RAWIO, names_sys_rawio, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_TIME, names_sys_time, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_TTY_CONFIG, NULL, "vhangup", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYS_NICE, names_sys_nice, NULL, false, ARG_NONE },
        { WHEN_CAP, CAP_NR_SYSLOG, NULL, "syslog", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_BPF, NULL, "bpf", false, ARG_NONE },
        { WHEN_CAP, CAP_NR_PERFMON, NULL, "perf_event_open", false, ARG_NONE },
        /* Without CAP_SYS_ADMIN: clone(2) only without namespace flags, and
         * clone3(2) fails with ENOSYS (its flags are behind a pointer that
         * seccomp cannot inspect), so libc falls back to clone(2). */
        { WHEN_NO_CAP, CAP_NR_SYS_ADMIN, NULL, "clone", false,
          { "SCMP_CMP_MASKED_EQ", CLONE_FLAGS_ARG, CLONE_NS_FLAGS, 0 } },
        { WHEN_NO_CAP, CAP_NR_SYS_ADMIN, NULL, "clone3", true, ARG_NONE },
};

/* clang-format on */

static bool kernel_at_least_4_8(void) {
        struct utsname u;
        unsigned major = 0, minor = 0;

        if (uname(&u) < 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
                return false; /* unknown: the stricter profile */
        return major > 4 || (major == 4 && minor >= 8);
}

static bool rule_applies(const SeccompRule *r, uint64_t caps, bool kernel_4_8) {
        switch (r->when) {
        case WHEN_ALWAYS:
                return true;
        case WHEN_CAP:
                return caps & RUNTIME_CAP_BIT(r->cap);
        case WHEN_NO_CAP:
                return !(caps & RUNTIME_CAP_BIT(r->cap));
        case WHEN_KERNEL_4_8:
                return kernel_4_8;
        }
        return false;
}

/* json_object_set_new/json_array_append_new that report ENOMEM; they take
 * the reference to v in every case, as jansson does. */
static int obj_set(json_t *o, const char *k, json_t *v) {
        return v && json_object_set_new(o, k, v) == 0 ? 0 : -ENOMEM;
}
static int arr_add(json_t *a, json_t *v) {
        return v && json_array_append_new(a, v) == 0 ? 0 : -ENOMEM;
}

static json_t *strv_to_json(const char *const *l) {
        _cleanup_json_ json_t *a = json_array();
        if (!a)
                return NULL;
        for (; l && *l; l++)
                if (arr_add(a, json_string(*l)) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

static int rule_to_json(const SeccompRule *r, json_t **ret) {
        _cleanup_json_ json_t *o = json_object();
        const char *single[] = { r->single, NULL };
        int k;

        if (!o)
                return -ENOMEM;
        k = obj_set(o, "names", strv_to_json(r->names ? r->names : single));
        if (k < 0)
                return k;
        if (r->errno_enosys) {
                k = obj_set(o, "action", json_string("SCMP_ACT_ERRNO"));
                if (k >= 0)
                        k = obj_set(o, "errnoRet", json_integer(NR_ENOSYS));
        } else
                k = obj_set(o, "action", json_string("SCMP_ACT_ALLOW"));
        if (k < 0)
                return k;
        if (r->arg.op) {
                _cleanup_json_ json_t *args = json_array();
                json_t *a = json_pack("{s:I, s:I, s:I, s:s}", "index", (json_int_t)r->arg.index,
                                      "value", (json_int_t)r->arg.value, "valueTwo",
                                      (json_int_t)r->arg.value_two, "op", r->arg.op);
                if (!args || arr_add(args, a) < 0)
                        return -ENOMEM;
                k = obj_set(o, "args", TAKE_PTR(args));
                if (k < 0)
                        return k;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

int seccomp_default_profile(uint64_t caps, json_t **ret) {
        _cleanup_json_ json_t *p = NULL, *syscalls = NULL;
        bool k48 = kernel_at_least_4_8();
        int k;

        assert(ret);

        p = json_object();
        syscalls = json_array();
        if (!p || !syscalls)
                return -ENOMEM;
        k = obj_set(p, "defaultAction", json_string("SCMP_ACT_ERRNO"));
        if (k < 0)
                return k;
        /* EPERM is what runc and crun use for a bare SCMP_ACT_ERRNO too;
         * saying it keeps the profile's meaning independent of the runtime. */
        k = obj_set(p, "defaultErrnoRet", json_integer(EPERM));
        if (k < 0)
                return k;
        k = obj_set(p, "architectures", strv_to_json(arches));
        if (k < 0)
                return k;

        for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
                json_t *o = NULL;

                if (!rules[i].names && !rules[i].single)
                        continue; /* an architecture without extra syscalls */
                if (!rule_applies(&rules[i], caps, k48))
                        continue;
                k = rule_to_json(&rules[i], &o);
                if (k < 0)
                        return k;
                k = arr_add(syscalls, o);
                if (k < 0)
                        return k;
        }
        k = obj_set(p, "syscalls", TAKE_PTR(syscalls));
        if (k < 0)
                return k;

        *ret = TAKE_PTR(p);
        return 0;
}

/* ---- Localhost profiles ---- */

#define SECCOMP_PROFILE_MAX (1024 * 1024)

static const char *const known_actions[] = {
        "SCMP_ACT_KILL",        "SCMP_ACT_KILL_PROCESS",
        "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
        "SCMP_ACT_ERRNO",       "SCMP_ACT_TRACE",
        "SCMP_ACT_ALLOW",       "SCMP_ACT_LOG",
        "SCMP_ACT_NOTIFY",      NULL,
};

static const char *const known_ops[] = {
        "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",        "SCMP_CMP_EQ",
        "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ", NULL,
};

static const char *const known_flags[] = {
        "SECCOMP_FILTER_FLAG_TSYNC",
        "SECCOMP_FILTER_FLAG_LOG",
        "SECCOMP_FILTER_FLAG_SPEC_ALLOW",
        "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV",
        NULL,
};

/* The two libseccomp functions validation calls, typed from seccomp.h. */
typedef struct SeccompApi {
        void *dl;
        __typeof__(seccomp_arch_resolve_name) *arch_resolve_name;
        __typeof__(seccomp_syscall_resolve_name) *syscall_resolve_name;
} SeccompApi;

static void seccomp_api_close(SeccompApi *a) {
        if (a->dl)
                (void)dlclose(a->dl);
        *a = (SeccompApi){};
}

static int seccomp_api_open(SeccompApi *a, const char *where, Error *err) {
        a->dl = dlopen(SECCOMP_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (!a->dl)
                return error_set(err, -ELIBACC, "%s: checking it needs %s: %s", where,
                                 SECCOMP_LIBRARY, dlerror());
        a->arch_resolve_name =
                (__typeof__(seccomp_arch_resolve_name) *)dlsym(a->dl, "seccomp_arch_resolve_name");
        a->syscall_resolve_name = (__typeof__(seccomp_syscall_resolve_name) *)dlsym(
                a->dl, "seccomp_syscall_resolve_name");
        if (!a->arch_resolve_name || !a->syscall_resolve_name) {
                seccomp_api_close(a);
                return error_set(err, -ELIBACC, "%s: checking it needs %s: %s", where,
                                 SECCOMP_LIBRARY, "a resolver function is missing");
        }
        return 0;
}

static bool in_list(const char *const *l, const char *s) {
        for (; *l; l++)
                if (streq(*l, s))
                        return true;
        return false;
}

/* "SCMP_ARCH_X86_64" -> libseccomp's "x86_64". */
static bool arch_known(const SeccompApi *api, const char *name) {
        char lower[64];
        const char *s = startswith(name, "SCMP_ARCH_");
        size_t i;

        if (!s || strlen(s) >= sizeof(lower) || !*s)
                return false;
        for (i = 0; s[i]; i++)
                lower[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
        lower[i] = 0;
        return api->arch_resolve_name(lower) != 0;
}

static bool is_uint(json_t *v) {
        return json_is_integer(v) && json_integer_value(v) >= 0;
}

static int check_string_array(const SeccompApi *api, json_t *v, const char *where,
                              const char *field, const char *const *known, const char *what,
                              Error *err) {
        size_t i;
        json_t *e;

        if (!json_is_array(v))
                return error_set(err, -EINVAL, "%s: %s: not an array", where, field);
        json_array_foreach(v, i, e) {
                if (!json_is_string(e))
                        return error_set(err, -EINVAL, "%s: %s[%zu]: not a string", where, field,
                                         i);
                if (known ? !in_list(known, json_string_value(e))
                          : !arch_known(api, json_string_value(e)))
                        return error_set(err, -EINVAL, "%s: %s[%zu]: unknown %s \"%s\"", where,
                                         field, i, what, json_string_value(e));
        }
        return 0;
}

static int check_action(json_t *v, const char *where, const char *field, Error *err) {
        if (!json_is_string(v))
                return error_set(err, -EINVAL, "%s: %s: missing or not a string", where, field);
        if (!in_list(known_actions, json_string_value(v)))
                return error_set(err, -EINVAL, "%s: %s: unknown action \"%s\"", where, field,
                                 json_string_value(v));
        return 0;
}

static int check_syscall(const SeccompApi *api, json_t *sc, size_t n, const char *where,
                         Error *err) {
        json_t *names, *e, *args;
        size_t i;
        int k;

        if (!json_is_object(sc))
                return error_set(err, -EINVAL, "%s: syscalls[%zu]: not an object", where, n);
        names = json_object_get(sc, "names");
        if (!json_is_array(names) || json_array_size(names) == 0)
                return error_set(err, -EINVAL, "%s: syscalls[%zu].names: missing or empty", where,
                                 n);
        json_array_foreach(names, i, e) {
                if (!json_is_string(e))
                        return error_set(err, -EINVAL, "%s: syscalls[%zu].names[%zu]: not a string",
                                         where, n, i);
                /* libseccomp resolves names of every architecture it knows
                 * (with pseudo numbers for syscalls absent on this one), so
                 * only names that exist nowhere fail. */
                if (api->syscall_resolve_name(json_string_value(e)) == __NR_SCMP_ERROR)
                        return error_set(err, -EINVAL,
                                         "%s: syscalls[%zu].names[%zu]: unknown syscall \"%s\"",
                                         where, n, i, json_string_value(e));
        }

        char field[64];
        (void)snprintf(field, sizeof(field), "syscalls[%zu].action", n);
        k = check_action(json_object_get(sc, "action"), where, field, err);
        if (k < 0)
                return k;
        e = json_object_get(sc, "errnoRet");
        if (e && !is_uint(e))
                return error_set(err, -EINVAL,
                                 "%s: syscalls[%zu].errnoRet: not a non-negative integer", where,
                                 n);

        args = json_object_get(sc, "args");
        if (args && !json_is_null(args)) {
                if (!json_is_array(args))
                        return error_set(err, -EINVAL, "%s: syscalls[%zu].args: not an array",
                                         where, n);
                json_array_foreach(args, i, e) {
                        json_t *idx = json_object_get(e, "index"), *op = json_object_get(e, "op");
                        json_t *v2 = json_object_get(e, "valueTwo");

                        if (!json_is_object(e))
                                return error_set(err, -EINVAL,
                                                 "%s: syscalls[%zu].args[%zu]: not an object",
                                                 where, n, i);
                        /* syscalls take at most six arguments */
                        if (!is_uint(idx) || json_integer_value(idx) > 5)
                                return error_set(err, -EINVAL,
                                                 "%s: syscalls[%zu].args[%zu].index: not 0..5",
                                                 where, n, i);
                        if (!is_uint(json_object_get(e, "value")))
                                return error_set(err, -EINVAL,
                                                 "%s: syscalls[%zu].args[%zu].value: "
                                                 "missing or not a non-negative integer",
                                                 where, n, i);
                        if (v2 && !is_uint(v2))
                                return error_set(err, -EINVAL,
                                                 "%s: syscalls[%zu].args[%zu].valueTwo: "
                                                 "not a non-negative integer",
                                                 where, n, i);
                        if (!json_is_string(op) || !in_list(known_ops, json_string_value(op)))
                                return error_set(
                                        err, -EINVAL,
                                        "%s: syscalls[%zu].args[%zu].op: unknown operator \"%s\"",
                                        where, n, i,
                                        json_is_string(op) ? json_string_value(op) : "");
                }
        }
        return 0;
}

int seccomp_profile_validate(json_t *profile, const char *where, json_t **ret, Error *err) {
        /* Only the fields runtime-spec defines are passed on, as containerd
         * does by decoding into specs.LinuxSeccomp: anything else in the
         * file (comments, Docker's archMap) would be ignored by runc anyway,
         * and leaving it out keeps config.json exactly what was checked. */
        static const char *const fields[] = {
                "defaultAction", "defaultErrnoRet",  "architectures", "flags",
                "listenerPath",  "listenerMetadata", "syscalls",      NULL,
        };
        _cleanup_json_ json_t *out = NULL;
        _cleanup_(seccomp_api_close) SeccompApi api = {};
        json_t *v, *e;
        size_t i;
        int k;

        assert(where);
        assert(ret);

        k = seccomp_api_open(&api, where, err);
        if (k < 0)
                return k;
        if (!json_is_object(profile))
                return error_set(err, -EINVAL, "%s: not a JSON object", where);
        k = check_action(json_object_get(profile, "defaultAction"), where, "defaultAction", err);
        if (k < 0)
                return k;
        v = json_object_get(profile, "defaultErrnoRet");
        if (v && !is_uint(v))
                return error_set(err, -EINVAL, "%s: defaultErrnoRet: not a non-negative integer",
                                 where);
        v = json_object_get(profile, "architectures");
        if (v && !json_is_null(v)) {
                k = check_string_array(&api, v, where, "architectures", NULL, "architecture", err);
                if (k < 0)
                        return k;
        }
        v = json_object_get(profile, "flags");
        if (v && !json_is_null(v)) {
                k = check_string_array(&api, v, where, "flags", known_flags, "flag", err);
                if (k < 0)
                        return k;
        }
        v = json_object_get(profile, "listenerPath");
        if (v && !json_is_string(v))
                return error_set(err, -EINVAL, "%s: listenerPath: not a string", where);
        v = json_object_get(profile, "syscalls");
        if (v && !json_is_null(v)) {
                if (!json_is_array(v))
                        return error_set(err, -EINVAL, "%s: syscalls: not an array", where);
                json_array_foreach(v, i, e) {
                        k = check_syscall(&api, e, i, where, err);
                        if (k < 0)
                                return k;
                }
        }

        out = json_object();
        if (!out)
                return error_set(err, -ENOMEM, "%s: out of memory", where);
        for (const char *const *f = fields; *f; f++) {
                v = json_object_get(profile, *f);
                if (!v || json_is_null(v))
                        continue;
                k = obj_set(out, *f, json_deep_copy(v));
                if (k < 0)
                        return error_set(err, k, "%s: out of memory", where);
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int seccomp_profile_load(const char *path, json_t **ret, Error *err) {
        _cleanup_free_ char *data = NULL, *where = NULL;
        _cleanup_json_ json_t *j = NULL;
        json_error_t jerr;
        size_t size;
        int k;

        assert(ret);

        if (isempty(path))
                return error_set(err, -EINVAL, "seccompProfile: Localhost without a profile path");
        where = strprintf("seccomp profile \"%s\"", path);
        if (!where)
                return error_set(err, -ENOMEM, "out of memory");

        k = read_full_file_at(AT_FDCWD, path, SECCOMP_PROFILE_MAX, &data, &size);
        if (k == -EFBIG)
                return error_set(err, k, "%s: larger than %d bytes", where, SECCOMP_PROFILE_MAX);
        if (k < 0)
                return error_set(err, k, "%s: cannot read: %s", where, strerror(-k));

        j = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!j)
                return error_set(err, -EINVAL, "%s: line %d, column %d: %s", where, jerr.line,
                                 jerr.column, jerr.text);
        return seccomp_profile_validate(j, where, ret, err);
}
