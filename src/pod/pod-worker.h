/* One pod's worker: owns the pod's observed state and carries out the
 * actions pod_compute_actions() returns, through asynchronous runtime and
 * image operations. Internal to the pod manager. */
#pragma once

#include <stdbool.h>

#include "event.h"
#include "image.h"
#include "manifest.h"
#include "pod-etc-files.h"
#include "pod-manager.h"
#include "pod-state.h"
#include "pod-volumes.h"
#include "runtime.h"

typedef struct PodWorker PodWorker;
typedef struct ContainerOp ContainerOp;

/* The manager's side, as workers see it. */
typedef struct PodManagerContext {
        Event *event;
        const PodManagerOptions *o;
        char *status_dir;    /* <run-dir>/status */
        char *pods_dir;      /* <root-dir>/pods */
        char *ns_dir;        /* <run-dir>/ns */
        char *seccomp_dir;   /* <root-dir>/seccomp */
        char *sandboxes_dir; /* <run-dir>/sandboxes: SandboxRecord per pod */
        PodObjectLookup lookup; /* local ConfigMaps/Secrets from PodConfig */
        int oom_score_adj_floor;  /* runtime_oom_score_adj_floor() at start */
        bool oom_warned;          /* the clamp below the floor is reported once */
        /* Called when a worker has torn its pod down completely. */
        void (*worker_finished)(PodWorker *w, void *userdata);
        void *userdata;
} PodManagerContext;

struct PodWorker {
        PodManagerContext *ctx;
        ManifestObject *object;   /* the wanted pod (reference) */
        char *source;             /* "file" | "http" */
        char *origin;
        char *full_name;          /* "<name>_<namespace>(<uid>)" for logs */

        PodState state;
        char *pod_dir;            /* <root-dir>/pods/<uid> */
        char *ns_dir;             /* <run-dir>/ns/<uid> */
        char *log_dir;            /* <pod-logs-dir>/<ns>_<name>_<uid> */
        PodEtcFiles etc;
        PodVolumes volumes;
        char *sandbox_record;     /* <run-dir>/sandboxes/<uid>.json */
        bool prepared;            /* checkpoint, etc files and volumes are in place */
        bool adopt_checked;       /* what an earlier agent run left was adopted or removed */
        bool stale_sandbox;       /* pins of an earlier run to remove before a new sandbox */
        /* Created from a checkpoint at agent start: no source has asked for
         * the pod yet in this run (the manager terminates it if none does). */
        bool from_checkpoint;
        bool claimed;
        bool sandbox_pending;
        bool sandbox_released;    /* a finished pod's namespaces were removed */
        CniConfig *cni_config;    /* the network the pod was added to */
        CniOp *cni_op;            /* ADD or DEL in flight */
        bool network_added;       /* an ADD may have left state to DEL */

        unsigned busy;            /* operations in flight */
        bool sync_requested;
        EventSource *sync_defer;
        EventSource *wakeup;      /* back-off expiry, grace deadline, deadline */
        bool status_dirty;
        /* Pod termination: the grace period is for the whole pod, counted
         * from the first kill; later stages (sidecars) get what is left. */
        usec_t termination_deadline;

        /* A changed manifest: this pod replaces `predecessor` and starts only
         * when it is gone. */
        PodWorker *successor;
        PodWorker *predecessor;
        bool waiting_for_predecessor;
        bool torn_down;

        ContainerOp **ops;
        size_t n_ops;
};

int pod_worker_new(PodWorker **ret, PodManagerContext *ctx, ManifestObject *object,
                   const char *source, const char *origin);
/* A worker for a pod an earlier run of the agent checkpointed in pod_dir:
 * the manifest comes from the checkpoint. The first sync adopts what still
 * runs (or, after a reboot, cleans up and restarts, restart counts kept). */
int pod_worker_new_from_checkpoint(PodWorker **ret, PodManagerContext *ctx, const char *pod_dir);
PodWorker *pod_worker_free(PodWorker *w);
/* Asks for a sync on the next loop iteration (coalesced). */
void pod_worker_request_sync(PodWorker *w);
/* Starts termination: every container is stopped with its grace period,
 * then the sandbox, volumes and pod directory are removed. */
void pod_worker_terminate(PodWorker *w, const char *reason);
/* PLEG: re-reads the runtime state of the pod's containers. */
void pod_worker_relist(PodWorker *w);
const char *pod_worker_uid(const PodWorker *w);
