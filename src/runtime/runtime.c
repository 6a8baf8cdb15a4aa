/* The Runtime object: a FIFO of operations (op-queue.h), at most
 * max_parallel of which have a child (runc, crun, conmon or the sandbox
 * helper, supervised by child.h) at a time. Every op starts from the
 * queue's defer source, so a callback never runs inside the call that
 * queued its op; it completes only once its child is reaped, so the slot
 * count is exact. Output of runtime commands (stdout and stderr merged,
 * at most 64 KiB) becomes Error.message: for runc and crun the msg=
 * of their logrus "level=error" lines. */
#include "runtime.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "rm-rf.h"
#include "macro.h"
#include "mount-util.h"
#include "runtime-internal.h"
#include "spawn.h"
#include "string-util.h"
#include "strv.h"

#define DEFAULT_RUN_DIR "/run/nanolet"
#define DEFAULT_OP_TIMEOUT (60 * USEC_PER_SEC)

static void op_queue_start(OpQueueItem *item);
static void op_queue_free_op(OpQueueItem *item);

static const OpQueueOps runtime_queue_ops = {
        .start = op_queue_start,
        .free = op_queue_free_op, /* no stop: a cancelled op runs to its end, silently */
};

/* The CRI call each operation stands for, as kubelet labels it: a
 * runtime-agnostic dashboard reads nanolet as it reads kubelet. */
static const char *op_metric_name(RuntimeOpKind k) {
        switch (k) {
        case RUNTIME_OP_CREATE:
                return "create_container";
        case RUNTIME_OP_START:
                return "start_container";
        case RUNTIME_OP_KILL:
                return "stop_container";
        case RUNTIME_OP_DELETE:
                return "remove_container";
        case RUNTIME_OP_SANDBOX:
        default:
                return "run_podsandbox";
        }
}

static int runtime_register_metrics(Runtime *rt, Metrics *m) {
        static const char *const labels[] = { "operation_type", NULL };
        int r = metrics_register(
                m, &rt->operations, METRIC_COUNTER, "kubelet_runtime_operations_total",
                "Cumulative number of runtime operations by operation type.", labels, NULL, 0);
        if (r >= 0)
                r = metrics_register(m, &rt->operation_errors, METRIC_COUNTER,
                                     "kubelet_runtime_operations_errors_total",
                                     "Cumulative number of runtime operation errors by operation "
                                     "type.",
                                     labels, NULL, 0);
        if (r >= 0)
                r = metrics_register(m, &rt->operation_duration, METRIC_HISTOGRAM,
                                     "kubelet_runtime_operations_duration_seconds",
                                     "Duration in seconds of runtime operations. Broken down by "
                                     "operation type.",
                                     labels, metrics_buckets_operation,
                                     sizeof metrics_buckets_operation / sizeof(double));
        return r;
}

int runtime_new(Runtime **ret, Event *e, const RuntimeOptions *o) {
        RuntimeOptions def = {};
        if (!ret)
                return -EINVAL;
        if (!o)
                o = &def;

        Runtime *rt = calloc(1, sizeof(*rt));
        if (!rt)
                return -ENOMEM;
        rt->event = e;
        rt->runtime = strdup(isempty(o->runtime) ? "runc" : o->runtime);
        rt->conmon = strdup(isempty(o->conmon) ? "conmon" : o->conmon);
        rt->monitor = strdup(isempty(o->monitor) ? rt->conmon ? rt->conmon : "conmon" : o->monitor);
        rt->monitor_name = isempty(o->monitor) ? "conmon" : "nanolet-monitor";
        rt->run_dir = strdup(isempty(o->run_dir) ? DEFAULT_RUN_DIR : o->run_dir);
        if (!rt->runtime || !rt->conmon || !rt->monitor || !rt->run_dir)
                goto oom;
        const char *slash = strrchr(rt->runtime, '/');
        rt->runtime_name = strdup(slash ? slash + 1 : rt->runtime);
        rt->exits_dir = strprintf("%s/exits", rt->run_dir);
        rt->conmon_dir = strprintf("%s/conmon", rt->run_dir);
        /* runc and crun both under <run>/runc: the state-files contract names
         * one root, whatever the runtime. */
        rt->runtime_root = strprintf("%s/runc", rt->run_dir);
        if (!rt->runtime_name || !rt->exits_dir || !rt->conmon_dir || !rt->runtime_root)
                goto oom;

        rt->max_parallel = o->max_parallel;
        if (rt->max_parallel == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                rt->max_parallel = n > 0 ? 2 * (unsigned)n : 2;
        }
        rt->op_timeout = o->op_timeout > 0 ? o->op_timeout : DEFAULT_OP_TIMEOUT;
        rt->systemd_cgroup = o->systemd_cgroup;
        if (runtime_register_metrics(rt, o->metrics) < 0)
                goto oom;

        if (e) {
                int r = op_queue_new(e, rt->max_parallel, &runtime_queue_ops, "runtime-kick",
                                     &rt->queue);
                if (r < 0) {
                        runtime_free(rt);
                        return r;
                }
        }
        *ret = rt;
        return 0;
oom:
        runtime_free(rt);
        return -ENOMEM;
}

static void creating_forget(Runtime *rt, const char *id) {
        char **l = rt->creating;

        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], id)) {
                        free(l[i]);
                        memmove(l + i, l + i + 1, (strv_length(l + i + 1) + 1) * sizeof(char *));
                        return;
                }
}

static RuntimeOp *op_free(RuntimeOp *op) {
        if (!op)
                return NULL;
        if (op->kind == RUNTIME_OP_CREATE && op->id && op->rt)
                creating_forget(op->rt, op->id);
        op->child = child_free(op->child);
        op->sync_source = event_source_free(op->sync_source);
        op->timer = event_source_free(op->timer);
        op->sync_fd = safe_close(op->sync_fd);
        if (op->sandbox)
                sandbox_op_free(op);
        strv_free(op->argv);
        free(op->id);
        free(op->create_bundle);
        free(op->create_log_path);
        free(op);
        return NULL;
}

static void op_queue_free_op(OpQueueItem *item) {
        op_free((RuntimeOp *)item);
}

void runtime_op_release_child(RuntimeOp *op) {
        op->child = child_free(op->child);
}

/* Running ops' children are killed (their whole process group) and left to
 * the loop to reap; no callback runs. If the Event goes away too (agent
 * exit), the zombies stay until the agent exits and init reaps them. */
Runtime *runtime_free(Runtime *rt) {
        OpQueueItem *item;

        if (!rt)
                return NULL;
        while ((item = op_queue_detach_running(rt->queue)))
                op_free((RuntimeOp *)item);
        rt->queue = op_queue_free(rt->queue); /* frees the waiting ops */
        free(rt->state_cache);
        strv_free(rt->creating);
        free(rt->runtime);
        free(rt->runtime_name);
        free(rt->conmon);
        free(rt->monitor);
        free(rt->run_dir);
        free(rt->runtime_root);
        free(rt->exits_dir);
        free(rt->conmon_dir);
        free(rt);
        return NULL;
}

const char *runtime_exits_dir(Runtime *rt) {
        return rt ? rt->exits_dir : NULL;
}

int runtime_resolve(Runtime *rt, char **ret_path, Error *err) {
        int r = find_executable(rt->runtime, ret_path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_set(err, r, "OCI runtime \"%s\" not found%s: %s", rt->runtime,
                                 strchr(rt->runtime, '/') ? "" : " in PATH", strerror(-r));
        return 0;
}

/* --- op queue ---------------------------------------------------------- */

int runtime_op_new(Runtime *rt, RuntimeOpKind kind, const char *id, RuntimeOp **ret) {
        if (!rt->event)
                return -ENXIO;
        RuntimeOp *op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        op->rt = rt;
        op->kind = kind;
        op->requested_at = now_usec(CLOCK_MONOTONIC);
        op->sync_fd = -EBADF;
        if (id) {
                op->id = strdup(id);
                if (!op->id) {
                        free(op);
                        return -ENOMEM;
                }
        }
        /* Its monitor dir exists before the runtime knows the container:
         * the leftover sweep must not take it. */
        if (kind == RUNTIME_OP_CREATE && id && strv_extend(&rt->creating, id) < 0) {
                free(op->id);
                free(op);
                return -ENOMEM;
        }
        *ret = op;
        return 0;
}

void runtime_op_enqueue(RuntimeOp *op) {
        /* `runc start` of a created container finishes what a pod began: it
         * waits for a slot, not behind the creates of every other pod queued
         * meanwhile (100 pods dropped at once queued each start behind up to
         * ~90 creates). kubelet's pod workers start right after their create,
         * each in its own goroutine. Kills stay in order: one may be queued
         * while its container's create still waits, and must not overtake
         * it. */
        if (op->kind == RUNTIME_OP_START)
                op_queue_add_urgent(op->rt->queue, &op->item);
        else
                op_queue_add(op->rt->queue, &op->item);
}

static int runc_op_start(RuntimeOp *op);

static int op_start(RuntimeOp *op) {
        switch (op->kind) {
        case RUNTIME_OP_CREATE:
                return conmon_op_start(op);
        case RUNTIME_OP_SANDBOX:
                return sandbox_op_start(op);
        case RUNTIME_OP_START:
        case RUNTIME_OP_KILL:
        case RUNTIME_OP_DELETE:
        default:
                return runc_op_start(op);
        }
}

static const char *op_verb(RuntimeOpKind k);

static void op_queue_start(OpQueueItem *item) {
        RuntimeOp *op = (RuntimeOp *)item;

        /* The wait for a slot, per op: what bench/run.sh's profile reads to
         * tell a queue too small from a step that is slow by itself. */
        log_debug("runtime: %s %s started after %.1f ms in the queue (%u running, %u waiting).",
                  op_verb(op->kind), strna(op->id),
                  (double)(now_usec(CLOCK_MONOTONIC) - op->requested_at) / USEC_PER_MSEC,
                  op_queue_n_running(op->rt->queue), op_queue_n_waiting(op->rt->queue));
        /* < 0: failed before any child; > 0: done without one. */
        int r = op_start(op);
        if (r != 0)
                runtime_op_complete(op, r < 0 ? r : 0); /* may free rt */
}

void runtime_op_complete(RuntimeOp *op, int r) {
        Runtime *rt = op->rt;
        Error err = op->err;
        void *userdata = op->userdata;
        bool cancelled = op_queue_item_cancelled(&op->item);
        RuntimeOpKind kind = op->kind;
        usec_t took = now_usec(CLOCK_MONOTONIC) - op->requested_at;
        _cleanup_free_ char *id = log_get_max_level() >= LOG_DEBUG ? strdup(strna(op->id)) : NULL;
        typeof(op->cb) cb = op->cb;
        pid_t container_pid = op->container_pid, conmon_pid = op->conmon_pid;
        pid_t holder_pid = op->holder_pid;
        const char *const labels[] = { op_metric_name(kind), NULL };

        /* Queue time included: that is what the caller waited. */
        metric_inc(rt->operations, labels);
        if (r < 0)
                metric_inc(rt->operation_errors, labels);
        metric_observe(rt->operation_duration, labels, (double)took / USEC_PER_SEC);
        assert(op->item.running);
        op_queue_complete(&op->item); /* frees op */

        if (r < 0 && err.error == 0)
                (void)error_set(&err, r, "%s", strerror(-r));
        if (r >= 0)
                r = 0;

        log_debug("runtime: %s %s done %.1f ms after it was queued: %d%s%s", op_verb(kind),
                  strna(id), (double)took / USEC_PER_MSEC, r, r < 0 ? ": " : "",
                  r < 0 ? err.message : "");
        if (cancelled)
                return;
        switch (kind) {
        case RUNTIME_OP_CREATE:
                if (cb.created)
                        cb.created(rt, r, r < 0 ? 0 : container_pid, r < 0 ? 0 : conmon_pid, &err,
                                   userdata);
                break;
        case RUNTIME_OP_SANDBOX:
                if (cb.sandbox)
                        cb.sandbox(rt, r, r < 0 ? 0 : holder_pid, &err, userdata);
                break;
        case RUNTIME_OP_START:
        case RUNTIME_OP_KILL:
        case RUNTIME_OP_DELETE:
        default:
                if (cb.done)
                        cb.done(rt, r, &err, userdata);
                break;
        }
}

void runtime_op_cancel(RuntimeOp *op) {
        if (op)
                op_queue_cancel(&op->item);
}

/* --- children ------------------------------------------------------------ */

static void runc_op_child_exited(RuntimeOp *op);

static void on_child(Child *c, void *userdata) {
        RuntimeOp *op = userdata;

        op->child_exited = true;
        child_get_status(c, &op->child_code, &op->child_status);
        op->out = child_stdout(c, NULL);

        switch (op->kind) {
        case RUNTIME_OP_CREATE:
                conmon_op_child_exited(op);
                break;
        case RUNTIME_OP_SANDBOX:
                sandbox_op_child_exited(op);
                break;
        case RUNTIME_OP_START:
        case RUNTIME_OP_KILL:
        case RUNTIME_OP_DELETE:
        default:
                runc_op_child_exited(op);
                break;
        }
}

static int on_timeout(EventSource *s, usec_t now, void *userdata) {
        RuntimeOp *op = userdata;

        op->timed_out = true;
        if (op->child && !op->child_exited) {
                /* The exit handler reports -ETIMEDOUT once it is reaped. */
                log_debug("runtime: op child %d timed out, killing it.", (int)op->pid);
                child_kill(op->child);
                return 0;
        }
        switch (op->kind) {
        case RUNTIME_OP_CREATE:
                conmon_op_timed_out(op);
                break;
        case RUNTIME_OP_SANDBOX:
                sandbox_op_timed_out(op);
                break;
        case RUNTIME_OP_START:
        case RUNTIME_OP_KILL:
        case RUNTIME_OP_DELETE:
        default:
                runtime_op_complete(op, -ETIMEDOUT);
                break;
        }
        return 0;
}

int runtime_op_arm_timer(RuntimeOp *op) {
        if (op->timer)
                return event_source_set_time_relative(op->timer, op->rt->op_timeout);
        return event_add_time_relative(op->rt->event, &op->timer, op->rt->op_timeout, 0, on_timeout,
                                       op);
}

int runtime_op_spawn(RuntimeOp *op, char *const *argv, char *const *envp, const char *cwd,
                     const int *keep_fds, size_t n_keep_fds) {
        int r;

        /* The op's own timer (not the child's): for create it also bounds
         * the wait for conmon's report after the first process is gone. */
        ChildOptions co = {
                .argv = argv,
                .envp = envp,
                .cwd = cwd,
                .keep_fds = keep_fds,
                .n_keep_fds = n_keep_fds,
                .capture = CHILD_CAPTURE_MERGED,
                .stdout_max = RUNTIME_OUTPUT_MAX,
        };
        r = child_spawn(op->rt->event, &co, on_child, op, &op->child);
        if (r < 0)
                return r;
        op->pid = child_get_pid(op->child);
        r = runtime_op_arm_timer(op);
        if (r < 0) {
                runtime_op_release_child(op);
                return r;
        }
        log_debug("runtime: spawned %s as %d.", argv[0], (int)op->pid);
        return 0;
}

int runtime_op_watch_child(RuntimeOp *op, pid_t pid) {
        int r;

        op->pid = pid;
        r = child_adopt(op->rt->event, pid, 0, on_child, op, &op->child);
        if (r >= 0)
                r = runtime_op_arm_timer(op);
        if (r < 0)
                runtime_op_release_child(op);
        return r;
}

/* --- runc start / kill / delete --------------------------------------- */

static const char *op_verb(RuntimeOpKind k) {
        switch (k) {
        case RUNTIME_OP_START:
                return "start";
        case RUNTIME_OP_KILL:
                return "kill";
        case RUNTIME_OP_DELETE:
                return "delete";
        case RUNTIME_OP_CREATE:
                return "create";
        case RUNTIME_OP_SANDBOX:
        default:
                return "sandbox";
        }
}

/* runc exec (1.1) bind-mounts its own binary on a temporary file in the
 * container's state directory for a moment; a runc exec killed in that
 * moment (a probe's timeout, a cancel) leaves the mount, and runc delete
 * then fails on it for good. The state directory is the runtime's and
 * holds no mount of its own, so whatever is mounted there goes first. */
static void unmount_runtime_state(Runtime *rt, const char *id) {
        _cleanup_free_ char *dir = strprintf("%s/%s", rt->runtime_root, id);
        if (!dir)
                return;
        int n = umount_below(dir);
        if (n > 0)
                log_info("runtime: unmounted %d mount(s) a killed %s exec left in the state of "
                         "container %s.",
                         n, rt->runtime_name, id);
        else if (n < 0)
                log_debug_errno(n, "runtime: reading the mounts below \"%s\": %m", dir);
}

static int runc_op_start(RuntimeOp *op) {
        Runtime *rt = op->rt;
        _cleanup_free_ char *path = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        char sig[16];
        int r;

        r = runtime_resolve(rt, &path, &op->err);
        if (r < 0)
                return r;
        if (op->kind == RUNTIME_OP_DELETE)
                unmount_runtime_state(rt, op->id);
        if (strv_consume(&argv, TAKE_PTR(path)) < 0 || strv_extend(&argv, "--root") < 0 ||
            strv_extend(&argv, rt->runtime_root) < 0 || strv_extend(&argv, op_verb(op->kind)) < 0)
                return -ENOMEM;
        if (op->kind == RUNTIME_OP_KILL && op->flag && strv_extend(&argv, "--all") < 0)
                return -ENOMEM;
        if (op->kind == RUNTIME_OP_DELETE && op->flag && strv_extend(&argv, "--force") < 0)
                return -ENOMEM;
        if (strv_extend(&argv, op->id) < 0)
                return -ENOMEM;
        if (op->kind == RUNTIME_OP_KILL) {
                (void)snprintf(sig, sizeof(sig), "%d", op->signal);
                if (strv_extend(&argv, sig) < 0)
                        return -ENOMEM;
        }

        r = runtime_op_spawn(op, argv, NULL, NULL, NULL, 0);
        if (r < 0)
                return error_set(&op->err, r, "Failed to run %s %s: %s", rt->runtime_name,
                                 op_verb(op->kind), strerror(-r));
        op->argv = TAKE_PTR(argv);
        return 0;
}

static void delete_leftovers(Runtime *rt, const char *id) {
        runtime_state_cache_forget(rt, id);
        _cleanup_free_ char *exit_file = strprintf("%s/%s", rt->exits_dir, id);
        if (exit_file && unlink(exit_file) < 0 && errno != ENOENT)
                log_debug("runtime: unlink \"%s\": %m", exit_file);

        _cleanup_close_ int dfd = open(rt->conmon_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
                int r = rm_rf_at(dfd, id);
                if (r < 0 && r != -ENOENT)
                        log_debug_errno(r, "runtime: remove conmon dir of \"%s\": %m", id);
        }
}

static void runc_op_child_exited(RuntimeOp *op) {
        Runtime *rt = op->rt;
        char msg[sizeof(op->err.message)];

        if (op->timed_out) {
                (void)error_set(&op->err, -ETIMEDOUT, "%s %s \"%s\" timed out", rt->runtime_name,
                                op_verb(op->kind), op->id);
                runtime_op_complete(op, -ETIMEDOUT);
                return;
        }
        if (op->child_code == CLD_EXITED && op->child_status == 0) {
                if (op->kind == RUNTIME_OP_DELETE)
                        delete_leftovers(rt, op->id);
                runtime_op_complete(op, 0);
                return;
        }

        runtime_extract_message(op->out, msg, sizeof(msg));
        int r = -EIO;
        if (strstr(msg, "does not exist"))
                r = -ENOENT;
        else if (strstr(msg, "not running") || strstr(msg, "process already finished"))
                r = -ESRCH;

        if (op->kind == RUNTIME_OP_DELETE && r == -ENOENT) {
                /* The runtime no longer knows it: deleted as far as we care. */
                delete_leftovers(rt, op->id);
                runtime_op_complete(op, 0);
                return;
        }

        if (msg[0])
                (void)error_set(&op->err, r, "%s %s \"%s\": %s", rt->runtime_name,
                                op_verb(op->kind), op->id, msg);
        else if (op->child_code == CLD_EXITED)
                (void)error_set(&op->err, r, "%s %s \"%s\" exited with status %d", rt->runtime_name,
                                op_verb(op->kind), op->id, op->child_status);
        else
                (void)error_set(&op->err, r, "%s %s \"%s\" killed by signal %d", rt->runtime_name,
                                op_verb(op->kind), op->id, op->child_status);
        runtime_op_complete(op, r);
}

static int queue_runc_op(Runtime *rt, RuntimeOpKind kind, const char *id, int signal, bool flag,
                         runtime_done_t done, void *userdata, RuntimeOp **ret_op) {
        RuntimeOp *op;
        int r;

        if (!rt || !container_id_valid(id))
                return -EINVAL;
        r = runtime_op_new(rt, kind, id, &op);
        if (r < 0)
                return r;
        op->signal = signal;
        op->flag = flag;
        op->cb.done = done;
        op->userdata = userdata;
        runtime_op_enqueue(op);
        if (ret_op)
                *ret_op = op;
        return 0;
}

int runtime_container_start(Runtime *rt, const char *id, runtime_done_t done, void *userdata,
                            RuntimeOp **ret_op) {
        return queue_runc_op(rt, RUNTIME_OP_START, id, 0, false, done, userdata, ret_op);
}

int runtime_container_kill(Runtime *rt, const char *id, int signal, bool all, runtime_done_t done,
                           void *userdata, RuntimeOp **ret_op) {
        if (signal <= 0 || signal >= _NSIG)
                return -EINVAL;
        return queue_runc_op(rt, RUNTIME_OP_KILL, id, signal, all, done, userdata, ret_op);
}

int runtime_container_delete(Runtime *rt, const char *id, bool force, runtime_done_t done,
                             void *userdata, RuntimeOp **ret_op) {
        return queue_runc_op(rt, RUNTIME_OP_DELETE, id, 0, force, done, userdata, ret_op);
}

/* --- exec, list -------------------------------------------------------- */

int runtime_exec_argv(Runtime *rt, const char *id, bool tty, bool interactive, char *const *cmd,
                      char ***ret_argv) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *path = NULL;

        if (!rt || !container_id_valid(id) || !cmd || !cmd[0] || !ret_argv)
                return -EINVAL;
        /* Unresolvable: keep the name, so the caller's spawn reports it. */
        if (find_executable(rt->runtime, &path) < 0) {
                path = strdup(rt->runtime);
                if (!path)
                        return -ENOMEM;
        }
        /* stdin is always passed through by runc/crun exec: interactive
         * needs no flag, only the caller's stdin. */
        (void)interactive;
        if (strv_consume(&argv, TAKE_PTR(path)) < 0 || strv_extend(&argv, "--root") < 0 ||
            strv_extend(&argv, rt->runtime_root) < 0 || strv_extend(&argv, "exec") < 0)
                return -ENOMEM;
        if (tty && strv_extend(&argv, "--tty") < 0)
                return -ENOMEM;
        if (strv_extend(&argv, id) < 0)
                return -ENOMEM;
        STRV_FOREACH(c, cmd)
                if (strv_extend(&argv, *c) < 0)
                        return -ENOMEM;
        *ret_argv = TAKE_PTR(argv);
        return 0;
}

int runtime_list_ids(Runtime *rt, char ***ret_ids) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_closedir_ DIR *d = NULL;

        if (!rt || !ret_ids)
                return -EINVAL;
        d = opendir(rt->runtime_root);
        if (!d) {
                if (errno != ENOENT)
                        return -errno;
        } else {
                struct dirent *de;
                errno = 0;
                while ((de = readdir(d))) {
                        if (de->d_name[0] == '.')
                                continue;
                        if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                                continue;
                        if (!container_id_valid(de->d_name))
                                continue;
                        if (strv_extend(&ids, de->d_name) < 0)
                                return -ENOMEM;
                }
                if (errno != 0)
                        return -errno;
        }
        if (!ids) {
                ids = calloc(1, sizeof(char *));
                if (!ids)
                        return -ENOMEM;
        }
        strv_sort(ids);
        *ret_ids = TAKE_PTR(ids);
        return 0;
}

/* Whether name under dir_fd (a monitor dir, never followed when it is a
 * symlink) belongs to a monitor that still runs. */
static bool monitor_dir_alive(int dir_fd, const char *name) {
        _cleanup_close_ int fd =
                openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        pid_t pid;

        return fd >= 0 && read_pid_file_at(fd, "conmon.pid", &pid) == 0 && monitor_pid_alive(pid);
}

/* Removes the entries of dir (the monitor dirs or the exit files) whose
 * container the runtime does not know, no create is making and no live
 * monitor owns. Returns how many went. */
static unsigned sweep_dir(Runtime *rt, const char *dir, char *const *known, bool is_exits) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int monitors = -EBADF;
        unsigned n = 0;

        if (dfd < 0)
                return 0;
        if (is_exits)
                monitors = open(rt->conmon_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int rfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (rfd < 0)
                return 0;
        _cleanup_closedir_ DIR *d = fdopendir(rfd);
        if (!d) {
                safe_close(rfd);
                return 0;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (strv_contains(known, de->d_name) || strv_contains(rt->creating, de->d_name))
                        continue;
                if (monitor_dir_alive(is_exits ? monitors : dfd, de->d_name))
                        continue;
                int r = rm_rf_at(dfd, de->d_name);
                if (r < 0 && r != -ENOENT) {
                        log_debug_errno(r, "runtime: remove \"%s/%s\": %m", dir, de->d_name);
                        continue;
                }
                log_info("Removed %s/%s, left by a container the runtime no longer knows.", dir,
                         de->d_name);
                n++;
        }
        return n;
}

int runtime_sweep_leftovers(Runtime *rt) {
        _cleanup_strv_free_ char **known = NULL;

        if (!rt)
                return -EINVAL;
        /* An unreadable runtime root tells nothing: nothing is removed. */
        int r = runtime_list_ids(rt, &known);
        if (r < 0)
                return r;
        return (int)(sweep_dir(rt, rt->conmon_dir, known, false) +
                     sweep_dir(rt, rt->exits_dir, known, true));
}

/* --- helpers ------------------------------------------------------------- */

/* Appends src[0..n) to buf (size, used *len), unescaping \" and \\ . */
static void append_unescaped(char *buf, size_t size, size_t *len, const char *src, size_t n) {
        for (size_t i = 0; i < n && *len + 1 < size; i++) {
                char c = src[i];
                if (c == '\\' && i + 1 < n) {
                        char d = src[++i];
                        c = d == 'n' ? ' ' : d == 't' ? ' ' : d;
                }
                buf[(*len)++] = c;
        }
        buf[*len] = 0;
}

void runtime_extract_message(const char *out, char *buf, size_t size) {
        size_t len = 0;

        if (size == 0)
                return;
        buf[0] = 0;
        if (isempty(out))
                return;

        /* logrus text lines: time="..." level=error msg="..." */
        for (const char *line = out; line && *line;) {
                const char *eol = strchr(line, '\n');
                size_t ll = eol ? (size_t)(eol - line) : strlen(line);
                const char *lvl = memmem(line, ll, "level=", 6);
                const char *m = memmem(line, ll, "msg=\"", 5);
                bool error_line =
                        lvl && (strneq(lvl + 6, "error", 5) || strneq(lvl + 6, "fatal", 5));
                if (m && error_line) {
                        const char *start = m + 5, *end = line + ll, *p = start;
                        while (p < end && *p != '"') {
                                if (*p == '\\' && p + 1 < end)
                                        p++;
                                p++;
                        }
                        if (len > 0 && len + 2 < size) {
                                buf[len++] = ';';
                                buf[len++] = ' ';
                        }
                        append_unescaped(buf, size, &len, start, (size_t)(p - start));
                }
                line = eol ? eol + 1 : NULL;
        }
        if (len > 0)
                return;

        /* Anything else (crun prints "crun: <msg>"; conmon's own errors):
         * the text, whitespace collapsed. */
        bool space = false;
        for (const char *p = out; *p && len + 1 < size; p++) {
                if (isspace((unsigned char)*p)) {
                        space = len > 0;
                        continue;
                }
                if (space && len + 2 < size)
                        buf[len++] = ' ';
                space = false;
                buf[len++] = *p;
        }
        buf[len] = 0;
}

bool monitor_pid_alive(pid_t pid) {
        char path[64];
        _cleanup_free_ char *stat = NULL;

        /* "<pid> (<comm>) <state> ...": a zombie monitor (one whose parent
         * does not reap it, as a container's init may not) has exited. */
        (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (read_full_file_at(AT_FDCWD, path, 4096, &stat, NULL) < 0)
                return false;
        const char *comm = strchr(stat, '(');
        const char *end = strrchr(stat, ')');
        if (!comm || !end || end < comm || end[1] != ' ' || strchr("ZX", end[2]))
                return false;
        comm++;
        return startswith(comm, "conmon") || startswith(comm, "nanolet-monito");
}

int read_pid_file(const char *path, pid_t *ret) {
        return read_pid_file_at(AT_FDCWD, path, ret);
}

int read_pid_file_at(int dir_fd, const char *path, pid_t *ret) {
        _cleanup_free_ char *s = NULL;
        /* Ours or the monitor's, never followed elsewhere. */
        int r = read_state_file_at(dir_fd, path, 64, &s, NULL, NULL);
        if (r < 0)
                return r;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        while (*end == '\n' || *end == ' ')
                end++;
        if (errno != 0 || end == s || *end || v <= 0 || v > INT32_MAX)
                return -EBADMSG;
        *ret = (pid_t)v;
        return 0;
}
