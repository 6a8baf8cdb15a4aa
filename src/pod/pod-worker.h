/* One pod's worker: owns the pod's observed state and carries out the
 * actions pod_compute_actions() returns, through asynchronous runtime and
 * image operations. Internal to the pod manager. */
#pragma once

#include <stdbool.h>

#include "event-curl.h"
#include "event.h"
#include "image.h"
#include "manifest.h"
#include "pod-etc-files.h"
#include "pod-manager.h"
#include "pod-probes.h"
#include "pod-state.h"
#include "pod-volumes.h"
#include "runtime.h"

typedef struct PodWorker PodWorker;

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
        EventCurl *curl;          /* HTTP/gRPC probes of all pods; made on first use */
        /* nanolet.io/wait-for: 0 when every pod w waits for is Ready, else
         * the waiting reason and a message naming what it waits for. */
        int (*wait_for_check)(PodWorker *w, char **ret_reason, char **ret_message,
                              void *userdata);
        /* Called when a worker has torn its pod down completely. */
        void (*worker_finished)(PodWorker *w, void *userdata);
        void *userdata;
} PodManagerContext;

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
