/* Container lifecycle through a container monitor (nanolet-monitor or
 * conmon, one contract: conmon.c) and the OCI runtime (runc by default,
 * crun through --runtime), asynchronous on the event loop: every operation
 * spawns its children, returns at once, and reports through a callback.
 * A bounded number of runtime children run at a time (others queue), so 100
 * pods appearing at once start concurrently without a fork storm.
 *
 * Files: runc state under <run_dir>/runc (runc --root), conmon exit files
 * under <run_dir>/exits/<id>, conmon pid files and attach sockets under
 * <run_dir>/conmon/<id>/. Nothing here is kept only in memory: after an
 * agent restart, runtime_container_status() reconstructs everything from
 * those files. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "metrics.h"
#include "runtime-config.h"
#include "string-util.h"
#include "time-util.h"

/* Longest runtime container ID accepted: container_id_valid() is the rule. */
#define RUNTIME_ID_MAX CONTAINER_ID_MAX

typedef struct Runtime Runtime;
typedef struct RuntimeOp RuntimeOp;

typedef struct RuntimeOptions {
        const char *runtime; /* "runc", "crun" or an absolute path; default "runc" */
        const char *conmon;  /* default: "conmon" in PATH */
        /* The container monitor: NULL runs conmon, else the path of
         * nanolet-monitor (a drop-in with conmon's command line and files,
         * src/monitor/monitor.h). */
        const char *monitor;
        const char *run_dir;   /* default /run/nanolet */
        unsigned max_parallel; /* runtime/conmon children at once; default 2 x cores */
        usec_t op_timeout;     /* a runtime command taking longer is killed; default 60 s */
        bool systemd_cgroup;
        /* kubelet_runtime_operations_{total,errors_total,duration_seconds}
         * (not owned; NULL: not counted). */
        Metrics *metrics;
} RuntimeOptions;

int runtime_new(Runtime **ret, Event *e, const RuntimeOptions *o);
/* Cancels queued ops (callbacks not called), kills running runtime
 * commands; never touches containers or conmon processes. */
Runtime *runtime_free(Runtime *rt);
DEFINE_TRIVIAL_CLEANUP_FUNC(Runtime *, runtime_free)

/* Result of an operation: r is 0 or a negative errno; err->message says what
 * the runtime or conmon printed when r < 0. */
typedef void (*runtime_done_t)(Runtime *rt, int r, const Error *err, void *userdata);

typedef struct RuntimeCreateRequest {
        const char *id;         /* runtime container ID: [a-zA-Z0-9_.-], <= RUNTIME_ID_MAX chars */
        const char *bundle_dir; /* holds config.json */
        const char *log_path;   /* CRI-format log written by conmon (k8s-file) */
        bool terminal;
        bool stdin_open;
        int64_t log_size_max; /* 0 = unlimited (nanolet rotates itself) */
} RuntimeCreateRequest;

/* Starts conmon, which runs `<runtime> create`; done is called once the
 * container exists (created, not started) with its pid, or with the error. */
typedef void (*runtime_created_t)(Runtime *rt, int r, pid_t container_pid, pid_t conmon_pid,
                                  const Error *err, void *userdata);
int runtime_container_create(Runtime *rt, const RuntimeCreateRequest *req, runtime_created_t done,
                             void *userdata, RuntimeOp **ret_op);

int runtime_container_start(Runtime *rt, const char *id, runtime_done_t done, void *userdata,
                            RuntimeOp **ret_op);
/* Signals the container's init (all=false) or every process (all=true). */
int runtime_container_kill(Runtime *rt, const char *id, int signal, bool all, runtime_done_t done,
                           void *userdata, RuntimeOp **ret_op);
/* `<runtime> delete [--force]`; also removes the exit file and conmon files.
 * A container the runtime no longer knows counts as deleted (r = 0). */
int runtime_container_delete(Runtime *rt, const char *id, bool force, runtime_done_t done,
                             void *userdata, RuntimeOp **ret_op);

/* Cancels an op: its callback will not be called. The children it started
 * are left to finish (and are reaped) so no runtime command is cut midway. */
void runtime_op_cancel(RuntimeOp *op);

typedef enum RuntimeContainerState {
        RUNTIME_STATE_UNKNOWN, /* the runtime does not know the ID */
        RUNTIME_STATE_CREATED,
        RUNTIME_STATE_RUNNING,
        RUNTIME_STATE_STOPPED, /* exited; exit code known from conmon's exit file if present */
} RuntimeContainerState;

typedef struct RuntimeContainerStatus {
        RuntimeContainerState state;
        pid_t pid;          /* container init, 0 if not running */
        int exit_code;      /* -1 unknown; 128+N for a signal, as kubelet reports */
        usec_t finished_at; /* CLOCK_REALTIME from the exit file's mtime; 0 unknown */
        bool oom_killed;    /* conmon/cgroup reported an OOM kill */
} RuntimeContainerStatus;

/* Cheap and synchronous (reads files, no child process): the runtime's
 * state.json under its root, /proc and conmon's exit file. Used by the
 * PLEG relist and by the CLI while the agent is down. */
int runtime_container_status(Runtime *rt, const char *id, RuntimeContainerStatus *ret);
/* A pidfd (pidfd_open(2), O_CLOEXEC) of the container's init process as
 * the runtime's state records it, so that its exit is an event: the fd turns
 * readable (EPOLLIN) once that process has exited. The start time is checked
 * after the open, so a reused PID is never what the fd refers to. Returns
 * the fd (the caller closes it), -ESRCH when the process is gone (or a
 * zombie), -ENOENT when the runtime does not know the container, another
 * -errno (-ENOSYS before Linux 5.3, -EMFILE) when none can be had: the
 * caller then polls runtime_container_status(). */
int runtime_container_pidfd(Runtime *rt, const char *id);
/* Every container ID the runtime root holds (for orphan cleanup). */
int runtime_list_ids(Runtime *rt, char ***ret_ids);
/* The monitor dirs (<run_dir>/conmon/<id>) and exit files (<run_dir>/exits/
 * <id>) of containers the runtime no longer knows, that no create in flight
 * is making and no live monitor owns: what a delete interrupted by an agent
 * crash left. Symlinks there are removed, never followed. Returns how many
 * entries went, or -errno when the runtime's list cannot be read (then
 * nothing is removed). */
int runtime_sweep_leftovers(Runtime *rt);
/* Directory conmon writes exit files into (watch it with inotify to see
 * exits at once). */
const char *runtime_exits_dir(Runtime *rt);

/* argv for `<runtime> --root ... exec [-t] [-i] id cmd...`, for probes and
 * `nanolet exec`; the caller spawns it. */
int runtime_exec_argv(Runtime *rt, const char *id, bool tty, bool interactive, char *const *cmd,
                      char ***ret_argv);

/* ---- pod sandbox: pinned namespaces, no pause container (docs/internals/runtime.md) ---- */

typedef enum SandboxNamespaces {
        SANDBOX_NS_NET = 1 << 0,
        SANDBOX_NS_IPC = 1 << 1,
        SANDBOX_NS_UTS = 1 << 2,
        SANDBOX_NS_PID = 1 << 3, /* shareProcessNamespace: a tiny holder process is pid 1 */
} SandboxNamespaces;

typedef struct SandboxRequest {
        const char *dir;      /* <run-dir>/ns/<uid>: pins are <dir>/net, <dir>/ipc, <dir>/uts */
        unsigned namespaces;  /* SandboxNamespaces flags */
        const char *hostname; /* set in the new UTS namespace */
} SandboxRequest;

/* Creates and pins the namespaces (a short-lived thread unshares them, or a
 * forked helper with SANDBOX_NS_PID; the pins are bind mounts of its
 * /proc/.../ns files, as CRI-O's pinns does), and brings up "lo" in a new
 * network namespace. holder_pid is the PID holder
 * (SANDBOX_NS_PID) or 0. On failure nothing is left mounted. */
typedef void (*sandbox_created_t)(Runtime *rt, int r, pid_t holder_pid, const Error *err,
                                  void *userdata);
int sandbox_create(Runtime *rt, const SandboxRequest *req, sandbox_created_t done, void *userdata,
                   RuntimeOp **ret_op);
/* Unmounts and removes every pin under dir (and kills the PID holder whose
 * pid is recorded in <dir>/holder.pid). Idempotent; synchronous (umount2 with
 * MNT_DETACH does not block). */
int sandbox_remove(const char *dir, Error *err);
/* Path of a pinned namespace ("net", "ipc", "uts", "pid"). */
char *sandbox_ns_path(const char *dir, const char *ns);

/* The PID holder is /proc/self/exe re-executed with argv[0] set to
 * SANDBOX_HOLDER_ARGV0; main() must dispatch to sandbox_holder_main() first
 * thing:
 *     if (argc > 0 && streq(argv[0], SANDBOX_HOLDER_ARGV0))
 *             return sandbox_holder_main(argc, argv);
 * The holder is pid 1 of the pod's PID namespace: it reaps zombies and
 * exits on SIGTERM/SIGINT/SIGHUP (sandbox_remove() sends SIGKILL). Without
 * that dispatch, sandbox_create() with SANDBOX_NS_PID fails cleanly. */
#define SANDBOX_HOLDER_ARGV0 "nanolet-pod-holder"
int sandbox_holder_main(int argc, char **argv);
