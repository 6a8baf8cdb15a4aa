/* What the agent knows about one pod at a moment: the wanted spec plus the
 * observed state of its sandbox and of every container. The pod worker
 * keeps it up to date (from runtime callbacks, the PLEG relist and probes);
 * the pure functions pod_compute_actions() and pod_status_build() read it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pod.h"
#include "time-util.h"

typedef enum ContainerRunState {
        CONTAINER_NONE,    /* no attempt exists (never started, or the attempt was removed) */
        CONTAINER_CREATED, /* runtime created it, not started yet */
        CONTAINER_RUNNING,
        CONTAINER_EXITED,
        _CONTAINER_RUN_STATE_MAX,
        _CONTAINER_RUN_STATE_INVALID = -22,
} ContainerRunState;

const char *container_run_state_to_string(ContainerRunState s);

typedef struct ContainerState {
        const Container *spec; /* points into PodState.pod */
        bool is_init;          /* from spec.initContainers (sidecars included) */
        unsigned index;        /* position in its list */

        ContainerRunState state;
        unsigned attempt;       /* attempt number of the current/last attempt (= restartCount) */
        unsigned restart_count; /* restarts so far (kubelet's restartCount) */
        char *container_id;     /* runtime ID of the current/last attempt, or NULL */
        usec_t started_at;      /* CLOCK_REALTIME; 0 unknown */
        usec_t finished_at;
        int exit_code;      /* last attempt's exit code; -1 unknown */
        char *exit_reason;  /* "Completed", "Error", "OOMKilled", "ContainerCannotRun", ... */
        char *exit_message; /* termination message or error text */

        /* The attempt before the current one, for lastState. */
        bool has_last;
        int last_exit_code;
        char *last_exit_reason;
        usec_t last_started_at, last_finished_at;
        char *last_container_id;

        /* Back-off (backoff.h): a restart may not happen before backoff_until
         * (CLOCK_MONOTONIC). backoff_delay is the delay used last (0 = none yet). */
        usec_t backoff_until;
        usec_t backoff_delay;  /* the wait before the coming restart (0: none) */
        usec_t backoff_window; /* kubelet's back-off entry: the next exit's wait; 0 = none */
        usec_t running_since; /* CLOCK_MONOTONIC of the current run's start, for the 10 min reset */

        /* Probe-driven flags (maintained by the probe issue; defaults make
         * containers without probes behave as Kubernetes says). */
        bool started;        /* postStart done and startupProbe passed (or none) */
        bool ready;          /* readiness (true when running and no readiness probe) */
        bool kill_requested; /* liveness/startup failure or postStart failure */
        char *kill_reason;
        int64_t kill_grace_seconds; /* the failed probe's terminationGracePeriodSeconds; 0 = none */
        bool post_start_pending;    /* postStart runs: not Running in the API yet */
        /* Probe outcomes per probe type (Liveness, Readiness, Startup) and
         * result (unknown, success, failure), for metrics. Across attempts. */
        unsigned long long probe_results[3][3];

        /* Why the container is waiting, when it is not running:
         * "ContainerCreating", "PodInitializing", "CrashLoopBackOff",
         * "CreateContainerConfigError", "CreateContainerError", "ErrImageNeverPull",
         * "ImagePullBackOff", ... and a message. */
        char *waiting_reason;
        char *waiting_message;
        /* With ErrImagePull/ImagePullBackOff: the image whose pull failed
         * when it is an image volume's; NULL: the container's own. */
        char *pull_image;
        char *image_id;     /* resolved image digest, for status */
        char *image_digest; /* manifest digest the current attempt runs (attempt.json) */
} ContainerState;

typedef enum SandboxRunState {
        SANDBOX_NONE,
        SANDBOX_READY,
        SANDBOX_FAILED, /* creation failed; see sandbox_message */
} SandboxRunState;

/* The kubelet-owned pod conditions, in the order kubelet lists them. */
typedef enum PodConditionType {
        POD_CONDITION_READY_TO_START_CONTAINERS, /* "PodReadyToStartContainers" */
        POD_CONDITION_INITIALIZED,               /* "Initialized" */
        POD_CONDITION_READY,                     /* "Ready" */
        POD_CONDITION_CONTAINERS_READY,          /* "ContainersReady" */
        POD_CONDITION_SCHEDULED,                 /* "PodScheduled" */
        _POD_CONDITION_TYPE_MAX,
        _POD_CONDITION_TYPE_INVALID = -22,
} PodConditionType;

typedef struct PodState {
        const Pod *pod; /* the wanted spec (owned by the ManifestObject) */
        char *uid;

        SandboxRunState sandbox;
        char *sandbox_message;
        char *pod_ip; /* first pod IP (networking issue); NULL = none */
        char **pod_ips;
        char *host_ip;

        ContainerState *init; /* spec.initContainers order */
        size_t n_init;
        ContainerState *app; /* spec.containers order */
        size_t n_app;

        usec_t start_time;      /* CLOCK_REALTIME when the agent first acted on the pod */
        usec_t start_monotonic; /* for activeDeadlineSeconds */
        bool terminating;       /* removal or replacement in progress: kill everything */
        bool deadline_exceeded;
        /* Node-pressure eviction (pod_worker_evict()): everything is stopped,
         * phase Failed, reason "Evicted"; cleared by pod_worker_unevict(). */
        bool evicted;
        /* Admission refused it (SysctlForbidden): nothing was created and
         * nothing will be; phase Failed with reason and message. */
        bool rejected;
        /* The pod got a new sandbox after a reboot: its init containers run
         * again before the app containers, whatever ran before (kubelet does
         * the same for a recreated sandbox). */
        bool init_rerun;
        /* nanolet.io/wait-for (docs/manifests.md): while set, the pod does not start
         * and its containers wait with this reason ("WaitingForPods", or
         * "WaitForCycle" when the annotations form a cycle) and message.
         * The worker keeps it current; it only gates the first start. */
        char *wait_reason;
        char *wait_message;
        char *message; /* pod-level message (status.message) */
        char *reason;  /* pod-level reason (status.reason), e.g. "DeadlineExceeded" */

        /* Sandbox creation retry: a failed creation is retried no earlier
         * than sandbox_backoff_until (CLOCK_MONOTONIC), with the same 10 s ->
         * 300 s doubling as containers (backoff_sandbox_failed()). The
         * worker zeroes both once the sandbox is READY. */
        usec_t sandbox_backoff_until;
        usec_t sandbox_backoff_delay;

        /* Conditions as last reported, so lastTransitionTime only moves when
         * a status flips (pod_status_update_conditions() maintains them).
         * condition_transition 0 = never evaluated. CLOCK_REALTIME. */
        bool condition_status[_POD_CONDITION_TYPE_MAX];
        usec_t condition_transition[_POD_CONDITION_TYPE_MAX];
} PodState;

/* Sets up init/app arrays from pod (states NONE, started/ready false). */
int pod_state_init(PodState *s, const Pod *pod, const char *uid);
void pod_state_done(PodState *s);
ContainerState *pod_state_find_container(PodState *s, const char *name);
