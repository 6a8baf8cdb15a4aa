/* Internals shared by runtime.c (the op queue and runtime commands),
 * conmon.c (create through conmon), runtime-status.c and sandbox.c. Not
 * for use outside src/runtime. */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "child.h"
#include "op-queue.h"
#include "runtime.h"

#define RUNTIME_OUTPUT_MAX (64U * 1024U)

typedef enum RuntimeOpKind {
        RUNTIME_OP_CREATE,
        RUNTIME_OP_START,
        RUNTIME_OP_KILL,
        RUNTIME_OP_DELETE,
        RUNTIME_OP_SANDBOX,
} RuntimeOpKind;

typedef struct RuntimeStateCacheEntry {
        char id[129];
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
        pid_t pid;
        unsigned long long start;
} RuntimeStateCacheEntry;

struct Runtime {
        Event *event;
        char *runtime;      /* as configured: "runc", "crun" or a path */
        char *runtime_name; /* basename, for messages */
        char *conmon;
        char *monitor;            /* argv[0] of the monitor: conmon or nanolet-monitor */
        const char *monitor_name; /* for messages */
        char *run_dir;
        char *runtime_root; /* <run>/runc */
        char *exits_dir;    /* <run>/exits */
        char *conmon_dir;   /* <run>/conmon */
        unsigned max_parallel;
        usec_t op_timeout;
        bool systemd_cgroup;

        OpQueue *queue; /* NULL without an Event */

        bool warned_ns_private;

        /* {operation_type}: kubelet's CRI names for what runc and conmon do */
        MetricFamily *operations, *operation_errors, *operation_duration;

        /* The PLEG relist asks for every container's state every second:
         * runc's state.json (which embeds the whole OCI config) is parsed
         * again only when it changed (inode, size or mtime). */
        RuntimeStateCacheEntry *state_cache;
        size_t n_state_cache;

        /* IDs with a create in flight (one entry per op) */
        char **creating;
};

/* Drops the cached state of a deleted container (runtime-status.c). */
void runtime_state_cache_forget(Runtime *rt, const char *id);

typedef struct SandboxState SandboxState;

struct RuntimeOp {
        OpQueueItem item; /* first: the queue's hooks cast back */
        Runtime *rt;
        RuntimeOpKind kind;
        char *id;
        usec_t requested_at; /* CLOCK_MONOTONIC, for the operation's duration */

        union {
                runtime_done_t done;
                runtime_created_t created;
                sandbox_created_t sandbox;
        } cb;
        void *userdata;

        /* the child this op waits for */
        Child *child;
        pid_t pid;
        bool child_exited;
        int child_code;   /* si_code */
        int child_status; /* si_status */
        /* merged stdout+stderr of the child, capped; owned by child */
        const char *out;

        EventSource *timer;
        bool timed_out;

        /* kind-specific arguments */
        char **argv;
        int signal;
        bool flag; /* kill: all; delete: force */
        RuntimeCreateRequest create;
        char *create_bundle, *create_log_path;

        /* create: conmon's sync pipe */
        int sync_fd;
        EventSource *sync_source;
        char sync_buf[8192];
        size_t sync_len;
        bool sync_done;
        pid_t container_pid;
        pid_t conmon_pid;

        SandboxState *sandbox;
        pid_t holder_pid;

        Error err;
};

/* runtime.c */
int runtime_op_new(Runtime *rt, RuntimeOpKind kind, const char *id, RuntimeOp **ret);
/* Queues op; it starts from the loop (never inside the caller's call). */
void runtime_op_enqueue(RuntimeOp *op);
/* Completes a running op: releases its slot, frees it, then calls its
 * callback (unless cancelled) with r and op->err. Must only be called when
 * the op's child has been reaped (or was never started). */
void runtime_op_complete(RuntimeOp *op, int r);
/* Spawns argv with stdout+stderr captured into op->out, watches its exit
 * and arms the op timeout. keep_fds as in SpawnOptions. */
int runtime_op_spawn(RuntimeOp *op, char *const *argv, char *const *envp, const char *cwd,
                     const int *keep_fds, size_t n_keep_fds);
/* Watches a child this process forked (child_adopt()), arms the op
 * timeout. On failure the child is killed and left to the loop to reap. */
int runtime_op_watch_child(RuntimeOp *op, pid_t pid);
/* SIGKILLs the op's child and leaves it to the loop to reap (failure and
 * teardown paths): no callback follows for it. */
void runtime_op_release_child(RuntimeOp *op);
/* Starts the op timer (runtime_op_spawn does it). */
int runtime_op_arm_timer(RuntimeOp *op);
/* Copies the meaningful part of a runtime's output: logrus msg="..." values
 * of error lines, or the trimmed text. */
void runtime_extract_message(const char *out, char *buf, size_t size);
int runtime_resolve(Runtime *rt, char **ret_path, Error *err);
int read_pid_file(const char *path, pid_t *ret);
int read_pid_file_at(int dir_fd, const char *path, pid_t *ret);
/* Whether pid runs a container monitor (conmon or nanolet-monitor, either
 * one: containers started under the other setting keep theirs). */
bool monitor_pid_alive(pid_t pid);

/* conmon.c */
int conmon_op_start(RuntimeOp *op);
void conmon_op_child_exited(RuntimeOp *op);
void conmon_op_timed_out(RuntimeOp *op);

/* sandbox.c */
int sandbox_op_start(RuntimeOp *op);
void sandbox_op_child_exited(RuntimeOp *op);
void sandbox_op_timed_out(RuntimeOp *op);
void sandbox_op_free(RuntimeOp *op);
