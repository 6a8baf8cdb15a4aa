/* The pod worker's own state, shared by its files and nothing else:
 * pod-worker.c (lifecycle, status, the sync), pod-sandbox.c (namespaces,
 * network, node-side files), pod-adopt.c (what an earlier agent run left)
 * and pod-containers.c (start, kill, exits). Everyone else goes through
 * pod-worker.h. */
#pragma once

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "image.h"
#include "image-pulls.h"
#include "pod-actions.h"
#include "pod-etc-files.h"
#include "pod-events.h"
#include "pod-probes.h"
#include "pod-worker.h"
#include "runtime.h"

typedef struct ContainerOp ContainerOp;

/* Where the worker is in its pod's life; worker_set_phase() moves it and
 * worker_sync() is a switch over it. What the pod wants (PodState:
 * terminating, evicted, the sandbox) is the input of pod_compute_actions();
 * the phase is the worker's own progress. The names are in the status file
 * (annotation nanolet.io/worker-state) and in `nanolet inspect`. */
typedef enum WorkerPhase {
        /* A changed manifest's pod: nothing until its predecessor is gone. */
        WORKER_WAITING_FOR_PREDECESSOR,
        /* Every worker's first sync: what an earlier agent run left of the
         * pod is adopted or removed (pod-adopt.c); a new pod finds nothing. */
        WORKER_ADOPTING,
        /* Held back by maxPods or nanolet.io/wait-for (pod-admit.h). */
        WORKER_ADMITTING,
        /* Refused by admission (sysctls): Failed, nothing of it made. */
        WORKER_REJECTED,
        /* Admitted, and counted against maxPods: pod_compute_actions() runs
         * the pod (sandbox, again after a failure or an eviction,
         * containers, restarts). */
        WORKER_RUNNING,
        /* Cgroup, namespaces and network are being made (children in
         * flight); back to running when they are ready or failed, even
         * when the pod was told to terminate meanwhile. */
        WORKER_CREATING_SANDBOX,
        /* Done (Succeeded or Failed, nothing to restart); its namespaces
         * are released. Running again only after pod_worker_unevict(). */
        WORKER_FINISHED,
        /* Stopping every container (grace periods), pod_worker_terminate(). */
        WORKER_TERMINATING,
        /* Nothing runs any more: leftover containers, network, namespaces,
         * pod directory and cgroup are being removed. */
        WORKER_TEARING_DOWN,
        /* Removed; the manager frees the worker. */
        WORKER_GONE,
        _WORKER_PHASE_MAX,
} WorkerPhase;

/* How the worker came to be: a source's pod, a checkpointed pod no source
 * has asked for in this run yet (the manager terminates it if none does),
 * or one made up only to stop what an earlier run left (writes no
 * checkpoint, which would make it a pod a manifest could claim). */
typedef enum WorkerOrigin {
        WORKER_ORIGIN_SOURCE,
        WORKER_ORIGIN_UNCLAIMED_CHECKPOINT,
        WORKER_ORIGIN_STRAY,
} WorkerOrigin;

struct PodWorker {
        PodManagerContext *ctx;
        ManifestObject *object; /* the wanted pod (reference) */
        char *source;           /* "file" | "http" */
        char *origin;
        char *full_name; /* "<name>_<namespace>(<uid>)" for logs */
        char *pod_ref;   /* "<namespace>/<name>": pod= of structured log lines */

        PodState state;
        WorkerPhase phase;
        WorkerOrigin origin_kind;
        char *pod_dir; /* <root-dir>/pods/<uid> */
        char *ns_dir;  /* <run-dir>/ns/<uid> */
        char *log_dir; /* <pod-logs-dir>/<ns>_<name>_<uid> */
        PodEtcFiles etc;
        PodVolumes volumes;
        char *sandbox_record; /* <run-dir>/sandboxes/<uid>.json */
        /* Checkpoint, etc files and volumes are in place: made once, by
         * the adoption or the first sandbox, kept in every later phase. */
        bool prepared;
        /* hostUsers: false: the pod's ID range (pod-userns.h), recorded in
         * the pod directory by worker_prepare(); 0: none. */
        uint32_t userns_start;
        uint32_t userns_record; /* a stray's record, read before its directory goes */
        bool stale_sandbox;     /* pins of an earlier run to remove before a new sandbox */
        char **wait_for;        /* "namespace/name" of pods to wait for (annotation) */
        /* An evicted pod's volumes were removed (PodState.evicted is an
         * overlay on the running phase, lifted by pod_worker_unevict()). */
        bool evicted_volumes_released;
        usec_t evicted_at;     /* CLOCK_MONOTONIC */
        CniConfig *cni_config; /* the network the pod was added to */
        CniOp *cni_op;         /* ADD or DEL in flight */
        bool network_added;    /* an ADD may have left state to DEL */
        /* The first starts to prepare while the sandbox is created
         * (PodActions.prepare_starts), run from prepare_defer: armed once the
         * CNI ADD (or, without CNI, the pin's helper) was queued, so the
         * deferred spawn of that child goes first and the preparation runs
         * while it works instead of before it. */
        ContainerStartAction *prepare_starts;
        size_t n_prepare_starts;
        EventSource *prepare_defer;

        unsigned busy; /* operations in flight */
        bool sync_requested;
        EventSource *sync_defer;
        /* The status and events files are written from their own deferred
         * source, armed after what a sync armed: the next step of a start
         * (the runtime queue's kick, the next sync) runs before the files'
         * writes, not behind them. files_synced: a sync ran since the files
         * were last looked at; files_postponed: they already waited once. */
        EventSource *files_defer;
        bool files_synced;
        bool files_postponed;
        EventSource *wakeup; /* back-off expiry, grace deadline, deadline */
        bool status_dirty;
        /* The status file as written last: its text and what stat() said
         * of it then, so an unchanged status is not written again. */
        char *status_path; /* <run-dir>/status/<uid>.json; NULL: always write */
        char *status_text; /* NULL: write at the next chance */
        struct stat status_stat;
        /* Pod termination: the grace period is for the whole pod, counted
         * from the first kill; later stages (sidecars) get what is left. */
        usec_t termination_deadline;

        /* A changed manifest: this pod replaces `predecessor` and starts only
         * when it is gone. */
        PodWorker *successor;
        PodWorker *predecessor;

        ContainerOp **ops;
        size_t n_ops;
        PodProbes *probes; /* probes and hooks (pod-probes.c) */

        /* kubelet_pod_start_duration_seconds: from the worker's creation
         * (kubelet's "first seen") to the first Running status. Adopted
         * pods were started by an earlier run and are not measured. */
        usec_t first_seen; /* CLOCK_MONOTONIC */
        bool start_measured;
        bool synced_once; /* kubelet_pod_worker_duration_seconds: "create", then "sync" */

        PodEvents events;  /* kubelet-style events (worker_event()) */
        bool events_dirty; /* status/events/<uid>.json is written after the sync */
};

/* A structured log line about the worker's pod (and container c_name, or
 * NULL), as kubelet's klog.InfoS lines: pod="ns/name" podUID="…"
 * containerName="…". The pod's name in logs is its static name (with the
 * node suffix), kubelet's too. */
#define worker_log(w, level, c_name, ...)                                                          \
        log_kv_full((level),                                                                       \
                    LOG_KV("pod", (w)->pod_ref, "podUID", (w)->object->uid, "containerName",       \
                           (c_name)),                                                              \
                    __VA_ARGS__)
#define worker_log_errno(w, level, error, c_name, ...)                                             \
        log_kv_full_errno((level), (error),                                                        \
                          LOG_KV("pod", (w)->pod_ref, "podUID", (w)->object->uid, "containerName", \
                                 (c_name)),                                                        \
                          __VA_ARGS__)

/* Per-container bookkeeping the PodState does not hold: what is in flight. */
struct ContainerOp {
        PodWorker *w;
        bool is_init;
        unsigned index;

        /* start pipeline */
        bool starting;
        unsigned attempt;
        char *id;
        char *attempt_dir;
        char *rootfs;
        char *log_path;
        Image *image;
        ImagePullWaiter *pull; /* a registry pull this attempt waits for */
        bool pulled;           /* this attempt pulled (policy Always: once per attempt) */
        ImageWorker iw;
        RuntimeOp *rop;
        bool rootfs_mounted;
        /* The image volumes the attempt mounts (image-volumes.h): indices
         * into the pod's volumes, listed once per attempt; each one's
         * manifest digest once resolved (vol_pulled: the one being resolved
         * was pulled), and how many are mounted. */
        bool vols_listed;
        size_t *vols;
        size_t n_vols;
        char **vol_digests;
        size_t vols_resolved;
        size_t vols_mounted;
        bool vol_pulled;
        /* The image a failing pull is about: an image volume's reference
         * while those are resolved, NULL for the container's own image. */
        const char *pulling_image;
        /* A start prepared while the sandbox is being created
         * (PodActions.prepare_starts): early until the ready sandbox's start
         * claims it; parked once its bundle is written and it waits for that
         * claim; early_tried: at most once per worker, so a preparation that
         * failed or was given up is not repeated on every sync. */
        bool early;
        bool parked;
        bool early_tried;
        /* Waits for the RuntimeDefault AppArmor profile's load
         * (pod-apparmor.h); retried once resumed after one. */
        bool apparmor_waiting;
        bool apparmor_retried;

        ContainerRunState state_before; /* restored when the attempt cannot start */
        int stop_signal;

        /* kill */
        bool killing;
        usec_t kill_deadline; /* CLOCK_MONOTONIC; preStop runs until then at most */
        EventSource *grace_timer;

        /* The exit of the running container as an event (pod_worker_relist()):
         * a pidfd of its init in the loop. exit_watch_id is the container it
         * was tried for; with it set and no source, that container is polled
         * (no pidfd could be had, or it fired and the exit is not recorded
         * yet). */
        EventSource *exit_watch;
        char *exit_watch_id;
};

static inline ContainerState *op_container(ContainerOp *op) {
        return pod_actions_target(&op->w->state, op->is_init, op->index);
}

static inline ContainerOp *worker_op(PodWorker *w, bool is_init, unsigned index) {
        size_t slot = is_init ? index : w->state.n_init + index;
        return slot < w->n_ops ? w->ops[slot] : NULL;
}

/* The sandbox's children (pin helper, slice start, CNI ADD or DEL) run. */
static inline bool worker_sandbox_busy(const PodWorker *w) {
        return w->phase == WORKER_CREATING_SANDBOX || w->cni_op;
}

static inline int set_str(char **field, const char *value) {
        char *c = NULL;
        if (value && !(c = strdup(value)))
                return -ENOMEM;
        free(*field);
        *field = c;
        return 0;
}

/* pod-worker.c */
/* Moves the worker to phase, logged at debug level. */
void worker_set_phase(PodWorker *w, WorkerPhase phase);
/* The status changed: written after the next sync. */
void worker_mark_status(PodWorker *w);
/* One operation of the busy count finished: status and a new sync. */
void worker_op_done(PodWorker *w);
/* Records an event on the pod (c NULL) or container c; the events file is
 * written after this loop iteration. Asks for no sync. */
void worker_event(PodWorker *w, const ContainerState *c, PodEventReason reason, const char *fmt,
                  ...) _printf_(4, 5);

/* Runs the stored prepare_starts after the children queued so far are
 * spawned (pod-worker.c). Nothing when none are stored. */
void worker_arm_prepare(PodWorker *w);

/* pod-sandbox.c */
unsigned sandbox_namespaces(const Pod *p);
bool pod_uses_cni(const PodWorker *w);
int worker_prepare(PodWorker *w, Error *err);
void worker_create_sandbox(PodWorker *w);
/* The pod's cgroup once the pod is gone (pod-sandbox.c). */
int worker_cgroup_remove(PodWorker *w);
void worker_network_check(PodWorker *w);
/* The sandbox record of a pod an earlier run checkpointed: true (and ret
 * set) when it says the sandbox was completed. One that is missing or
 * unreadable while the runtime still has containers of the pod (ids) is
 * written again from what is known: containers are only created in a
 * complete sandbox. The caller checks that its namespaces are still pinned. */
bool worker_sandbox_record_load(PodWorker *w, char **ids, SandboxRecord *ret);
/* DEL before the namespaces go (docs/internals/network.md). Returns true while it runs. */
bool worker_network_del(PodWorker *w);
/* worker_network_del() for a pod that goes, its sandbox record marked first. */
bool worker_network_teardown(PodWorker *w);

/* pod-adopt.c */
char *attempt_dir_of(const PodWorker *w, const ContainerState *c, unsigned attempt);
/* The first sync of a pod: adopts what an earlier agent run left. Returns
 * true when removals are in flight (the sync continues when they finish). */
bool worker_adopt(PodWorker *w);

/* pod-pull-auths.c: the pod's imagePullSecrets as one docker config.json
 * document (*ret_json NULL when there is none). -EINVAL with err set
 * for a Secret whose credentials do not parse; -ENOMEM. */
int worker_pull_auths(PodWorker *w, char **ret_json, Error *err);

/* pod-containers.c */
void op_clear_start(ContainerOp *op);
void op_clear_exit_watch(ContainerOp *op);
void container_set_waiting(ContainerState *c, const char *reason, const char *message);
void container_start(PodWorker *w, const ContainerStartAction *a);
/* Begins a start of PodActions.prepare_starts while the sandbox is being
 * created: image (present, no pull), attempt, rootfs and bundle, then parks
 * until container_start() claims it. Nothing when a pull is needed. */
void container_prepare(PodWorker *w, const ContainerStartAction *a);
/* Gives up parked preparations nobody will claim: the pod terminates, the
 * sandbox failed, or (claim_done) the ready sandbox's starts did not name
 * them. Their attempt goes as if it had never begun. */
void containers_release_unclaimed(PodWorker *w, bool claim_done);
/* A terminating pod's start that waits for an image pull is given up at
 * once: a pull can stall for as long as the helper's timeout, and nothing
 * of the attempt exists yet. Returns true when one was given up. */
bool container_start_abandon_pull(ContainerOp *op);
void container_kill(PodWorker *w, const ContainerKillAction *a);
void container_exited(PodWorker *w, ContainerOp *op, ContainerState *c,
                      const RuntimeContainerStatus *st);
void on_attempt_deleted(Runtime *rt, int r, const Error *err, void *userdata);
int signal_from_string(const char *s);
