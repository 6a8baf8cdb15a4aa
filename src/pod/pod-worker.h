/* One pod's worker: owns the pod's observed state and carries out the
 * actions pod_compute_actions() returns, through asynchronous runtime and
 * image operations. Internal to the pod manager: this header is the whole
 * of what the manager (and pod-logs.c) may do with a worker; its state is
 * private to the worker's files (pod-worker-internal.h). */
#pragma once

#include <stdbool.h>

#include "event-curl.h"
#include "event.h"
#include "manifest.h"
#include "pod-admit.h"
#include "pod-apparmor.h"
#include "pod-manager.h"
#include "pod-metrics.h"
#include "pod-state.h"
#include "pod-sysctls.h"
#include "pod-userns.h"
#include "pod-volumes.h"
#include "runtime-config.h"

typedef struct PodWorker PodWorker;

/* pod-containers.c: a container start that waited for the RuntimeDefault
 * AppArmor profile goes on (PodAppArmor.resume; waiter is its op). */
void container_apparmor_resume(void *waiter);

/* The manager's side, as workers see it. */
typedef struct PodManagerContext {
        Event *event;
        const PodManagerOptions *o;
        char *status_dir;                  /* <run-dir>/status */
        char *pods_dir;                    /* <root-dir>/pods */
        char *ns_dir;                      /* <run-dir>/ns */
        char *seccomp_dir;                 /* <root-dir>/seccomp */
        char *sandboxes_dir;               /* <run-dir>/sandboxes: SandboxRecord per pod */
        PodObjectLookup lookup;            /* local ConfigMaps/Secrets from PodConfig */
        int oom_score_adj_floor;           /* runtime_oom_score_adj_floor() at start */
        bool oom_warned;                   /* the clamp below the floor is reported once */
        RuntimeSeccompCache seccomp_cache; /* RuntimeDefault profiles, built once */
        EventCurl *curl;                   /* HTTP/gRPC probes of all pods; made on first use */
        PodMetrics metrics;                /* families are NULL when nothing is counted */
        PodSysctlAllowlist sysctls;        /* kubelet's sysctl admission (pod-sysctls.h) */
        PodAppArmor apparmor;              /* AppArmor on the node (pod-apparmor.h) */
        /* hostUsers: false pods' ID ranges; every recorded one is claimed
         * when the manager starts. userns_conflicts: UIDs of pod directories
         * whose record names a range another pod holds, or is unreadable:
         * such a pod is refused and its record frees nothing. */
        PodUsernsAllocator userns;
        char **userns_conflicts;
        /* Admission of a pod that has not started yet: maxPods, then
         * nanolet.io/wait-for. 0 with NULLs when w may start, else the
         * waiting reason ("OutOfpods", "WaitingForPods", "WaitForCycle")
         * and a message. */
        int (*wait_for_check)(PodWorker *w, char **ret_reason, char **ret_message, void *userdata);
        /* A pod's cgroup is about to be made, or a pod is gone: the manager
         * sums the burstable pods' cpu requests and calls
         * pod_qos_cgroups_apply(). NULL: nothing. */
        void (*qos_changed)(void *userdata);
        bool qos_applied; /* pod_qos_cgroups_apply() ran; qos_burstable_shares is set */
        /* Pod cgroups (cgroupfs driver) whose removal failed when their pod
         * went (a process still dying in them): the manager tries again
         * every minute, unless a pod of that UID exists again. */
        char **cgroup_leftovers;
        uint64_t qos_burstable_shares;
        /* systemd driver: the burstable slice's call in flight (owned), and
         * whether qos_burstable_shares changed since it started. One at a
         * time, so that systemd gets the values in the order they came. */
        struct SliceCall *qos_burstable_call;
        bool qos_burstable_again;
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
/* A worker only to stop pod uid, whose checkpoint could not be read while
 * its containers or sandbox still exist and no source wants it
 * (pod_adopt_decide()'s POD_ADOPT_STOP): its spec is rebuilt from what the
 * earlier run left (its status file, else its container directories). The
 * caller terminates it at once; its first sync adopts what runs so that the
 * usual termination stops it (stop signal, grace period, kill, delete, CNI
 * DEL) before the pod directory goes. It never writes a checkpoint. */
int pod_worker_new_stray(PodWorker **ret, PodManagerContext *ctx, const char *uid);
PodWorker *pod_worker_free(PodWorker *w);
/* Asks for a sync on the next loop iteration (coalesced). */
void pod_worker_request_sync(PodWorker *w);
/* Starts termination: every container is stopped with its grace period,
 * then the sandbox, volumes and pod directory are removed. */
void pod_worker_terminate(PodWorker *w, const char *reason);
/* A local ConfigMap or Secret (object) was added, changed or removed:
 * if the pod projects it into a volume and its volumes are in place, they
 * are rewritten now (atomic ..data swap, running containers see the new
 * files; environment variables keep their values until a container
 * restarts, as in Kubernetes). A removed object leaves the last content
 * (a warning says so), unless the reference is optional. */
void pod_worker_local_object_changed(PodWorker *w, const ManifestObject *object);
/* PLEG: re-reads the runtime state of the pod's containers and records
 * the exits it finds. A running container's exit is an event (a pidfd of
 * its init in the loop, runtime_container_pidfd()), so all=false skips the
 * containers whose watch is armed: only those without one (none could be
 * had, or it fired and the exit is not recorded yet) are read. all=true
 * reads every container (the safety net for a missed event). */
void pod_worker_relist(PodWorker *w, bool all);

/* ---- what the manager (and the log upkeep) may know of a worker ----
 * Everything else is private (pod-worker-internal.h). The getters borrow:
 * what they return lives as long as the worker. */
const char *pod_worker_uid(const PodWorker *w);
/* Whether its first sync adopted (or removed) what an earlier agent run left. */
bool pod_worker_adopted(const PodWorker *w);
/* Where the worker is in its pod's life: "waiting-for-predecessor",
 * "adopting", "admitting", "rejected", "running", "creating-sandbox",
 * "finished", "terminating", "tearing-down" or "gone" (docs/internals/state-files.md). */
const char *pod_worker_phase_name(const PodWorker *w);
/* The wanted pod (its name carries the node suffix). */
const ManifestObject *pod_worker_object(const PodWorker *w);
const char *pod_worker_source(const PodWorker *w);  /* "file" | "http" */
const char *pod_worker_origin(const PodWorker *w);  /* the file or URL */
const char *pod_worker_name(const PodWorker *w);    /* "<name>_<namespace>(<uid>)", for logs */
const char *pod_worker_pod_dir(const PodWorker *w); /* <root-dir>/pods/<uid> */
const char *pod_worker_log_dir(const PodWorker *w); /* <pod-logs-dir>/<ns>_<name>_<uid> */
const PodManagerOptions *pod_worker_options(const PodWorker *w);
/* The observed state, read only (the containers for log rotation). */
const PodState *pod_worker_state(const PodWorker *w);
/* The pod's status JSON (a v1 Pod) as last written to its status file;
 * NULL before the first write or after a failed one. */
const char *pod_worker_status_text(const PodWorker *w);

/* The pod's cgroup directory below each hierarchy root, and a container's
 * (cgroup.h); NULL on ENOMEM. */
char *pod_worker_cgroup_path(const PodWorker *w);
/* kubelet's QoS container manager: kubepods gets the node's allocatable
 * (when reserved), kubepods/burstable cpu shares for the burstable pods'
 * cpu requests (burstable_milli_cpu; kubelet's minimum 2 shares),
 * kubepods/besteffort 2 shares. With the systemd driver, through the
 * slices' unit properties, and only when the burstable value changed. */
void pod_qos_cgroups_apply(PodManagerContext *ctx, int64_t burstable_milli_cpu);
/* Frees what pod_qos_cgroups_apply() has in flight (the manager's end). */
void pod_qos_cgroups_done(PodManagerContext *ctx);
/* The pod cgroup of a pod of this agent that no worker has any more (it
 * went while the agent was down: only its sandbox record or CNI cache
 * entry was left), at every QoS level, removed: 0, or the first failure
 * (-EBUSY while a process is still in it), for the caller to keep the
 * record that names the cgroup and try again. */
int pod_cgroup_remove_orphan(PodManagerContext *ctx, const char *uid);
/* Whether the pod counts for the burstable level's shares: started or
 * admitted, not finished, not torn down; its Pod in ret_pod. */
bool pod_worker_counts_for_qos(const PodWorker *w, const Pod **ret_pod);
char *pod_worker_container_cgroup_path(const PodWorker *w, const char *container_id);
/* Node-pressure eviction (src/gc/eviction.h): stops every container (grace
 * periods honoured), reports phase Failed, reason "Evicted" and message,
 * records an Evicted event, and once nothing runs releases the namespaces
 * and removes the pod's volumes (emptyDir contents go, as kubelet's volume
 * cleanup of a failed pod). pod_worker_unevict() lets the pod start again:
 * a new sandbox, fresh volumes, containers restarted per their restart
 * policy and back-off (restartPolicy Never: the pod stays Failed). */
void pod_worker_evict(PodWorker *w, const char *message);
void pod_worker_unevict(PodWorker *w);
bool pod_worker_is_evicted(const PodWorker *w);
/* Evicted at least min_age ago, and nothing of it runs any more. */
bool pod_worker_eviction_done(const PodWorker *w, usec_t min_age);

/* pod_worker_terminate() was called: the worker is on its way out and no
 * longer counts as the live pod of its UID or name. */
bool pod_worker_is_terminating(const PodWorker *w);

/* Adoption after an agent restart: a worker made by
 * pod_worker_new_from_checkpoint() is unclaimed until a source asks for its
 * pod in this run (pod_worker_claim()); the manager terminates what stays
 * unclaimed once every source has been read. */
bool pod_worker_is_unclaimed(const PodWorker *w);
void pod_worker_claim(PodWorker *w);

/* A changed manifest: w replaces predecessor and does nothing until the
 * manager hands it over with pod_worker_take_successor() once predecessor
 * is gone (a terminate before that tears w down without starting it). Only
 * the newest replacement waits: the one that waited for predecessor until
 * now is unlinked and returned (the caller terminates it), else NULL. The
 * links are cleared when either worker is freed. */
PodWorker *pod_worker_set_predecessor(PodWorker *w, PodWorker *predecessor);
/* w has finished: its successor, unlinked and no longer waiting (the caller
 * requests its sync), or NULL. */
PodWorker *pod_worker_take_successor(PodWorker *w);

/* nanolet.io/wait-for: the "namespace/name" refs w waits for (NULL: none),
 * whether w is Ready (the condition the waiters look at), and whether w is
 * held back by the pods it waits for (the manager re-syncs such workers on
 * every relist so they notice a target becoming Ready). */
char *const *pod_worker_wait_for(const PodWorker *w);
/* Admitted (started, or allowed to start) and not finished (Succeeded or
 * Failed): what counts against maxPods. */
bool pod_worker_holds_slot(const PodWorker *w);
bool pod_worker_is_ready(const PodWorker *w);
bool pod_worker_is_waiting(const PodWorker *w);
