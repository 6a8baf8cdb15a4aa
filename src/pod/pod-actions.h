/* What to do next for one pod: kubelet's computePodActions for nanolet
 * (no pause container: the "sandbox" is the pod's pinned namespaces).
 *
 * pod_compute_actions() is pure: it reads the wanted spec and the observed
 * PodState plus the monotonic clock value it is given, and returns intents.
 * The worker carries them out asynchronously and calls it again whenever
 * the state changes (runtime callback, PLEG relist, probe result) or when
 * next_wakeup passes. Intents are idempotent: an action whose operation is
 * already in flight for that container (a start not yet reflected in the
 * state, a kill whose grace period is running) is to be skipped by the
 * worker, not repeated.
 *
 * Order of evaluation:
 *   1. terminating           -> kill in stages, pod_done when nothing runs
 *   1b. evicted              -> kill in stages, phase Failed (reason Evicted)
 *   1c. rejected (admission) -> nothing at all, phase Failed
 *   2. init failed (Never)   -> kill in stages, phase Failed
 *   3. all apps completed    -> (restartPolicy Never/OnFailure) stop sidecars, Succeeded/Failed
 *   4. activeDeadlineSeconds -> kill in stages, phase Failed, reason DeadlineExceeded
 *   5. sandbox NONE/FAILED   -> create it (honouring the sandbox back-off); the first
 *                               starts steps 6-7 would make once it is ready are offered
 *                               as prepare_starts (see there), nothing else
 *   6. init containers in order (sidecars gate on started), sidecar restarts
 *   7. app containers: first starts, restarts per restartPolicy, probe kills
 *
 * "Kill in stages" follows kubelet's termination ordering: app containers
 * (and a running regular init container) first, all at once; then sidecars
 * one at a time in reverse spec order, each only once everything before it
 * in that order has stopped. Each call returns only the current stage. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod-state.h"
#include "pod-status.h"
#include "time-util.h"

typedef enum KillReason {
        KILL_REASON_UNHEALTHY,         /* kill_requested: liveness/startup/postStart failure */
        KILL_REASON_TERMINATING,       /* pod removed or replaced */
        KILL_REASON_DEADLINE_EXCEEDED, /* activeDeadlineSeconds */
        KILL_REASON_POD_COMPLETED,     /* sidecars stopping after the app containers completed */
        KILL_REASON_INIT_FAILED, /* a regular init container failed under restartPolicy Never */
        KILL_REASON_EVICTED,     /* node-pressure eviction (src/gc/eviction.h) */
        _KILL_REASON_MAX,
        _KILL_REASON_INVALID = -EINVAL,
} KillReason;

/* "Unhealthy", "Terminating", "DeadlineExceeded", "PodCompleted", "InitContainerFailed",
 * "Evicted" */
const char *kill_reason_to_string(KillReason r);

typedef struct ContainerStartAction {
        bool is_init; /* index is into PodState.init (else PodState.app) */
        unsigned index;
        const char *name; /* points into the Pod */
        bool restart;     /* false: first start; true: restart after an exited attempt */
} ContainerStartAction;

typedef struct ContainerKillAction {
        bool is_init;
        unsigned index;
        const char *name;
        KillReason reason;
        char *message; /* for the log line, e.g. "Container app failed liveness probe" */
        /* terminationGracePeriodSeconds to give this container (probe-level
         * override for Unhealthy kills), at least 2 as kubelet enforces.
         * During pod termination the period is for the whole pod: the
         * worker counts it from the first kill, not per stage. */
        int64_t grace_period_seconds;
} ContainerKillAction;

/* A change to apply to ContainerState.waiting_reason/waiting_message.
 * Only differences from the current state are listed. */
typedef struct ContainerWaitingUpdate {
        bool is_init;
        unsigned index;
        const char *name;
        const char *reason; /* static string; NULL = clear */
        char *message;      /* owned; NULL = none */
} ContainerWaitingUpdate;

typedef struct PodActions {
        bool create_sandbox;

        /* Nothing of this pod is to run or start any more: kills lists the
         * current stage. */
        bool kill_pod;
        KillReason kill_pod_reason;

        ContainerStartAction *starts; /* in start order */
        size_t n_starts;
        /* With create_sandbox: the starts the pod will make once the
         * sandbox is ready, which the worker may prepare (image,
         * rootfs, config.json) while the namespaces are pinned and CNI ADD
         * runs, and launch when the ready sandbox's starts name them. Only
         * first starts of containers that never ran, and only those whose
         * config.json does not depend on the network's result
         * (container_config_needs_network()). */
        ContainerStartAction *prepare_starts;
        size_t n_prepare_starts;
        ContainerKillAction *kills; /* all may be signalled at once */
        size_t n_kills;
        ContainerWaitingUpdate *waiting;
        size_t n_waiting;

        /* CLOCK_MONOTONIC time at which to evaluate again even if nothing
         * happens (a back-off expiring, activeDeadlineSeconds);
         * USEC_INFINITY = only on events. */
        usec_t next_wakeup;

        /* The pod's final phase once decided (Succeeded or Failed), else
         * _POD_PHASE_INVALID. pod_phase() catches up when the containers
         * have stopped; this is for logging and for not restarting. */
        PodPhase phase;
        /* Set PodState.deadline_exceeded (and its reason/message). */
        bool deadline_exceeded;
        /* Nothing runs and nothing will be started: when terminating, the
         * worker tears the sandbox down and forgets the pod; otherwise the
         * pod is finished (Succeeded/Failed) and only its status remains. */
        bool pod_done;
} PodActions;

/* Fills *ret (which the caller frees with pod_actions_done()). now_mono is
 * CLOCK_MONOTONIC. 0 or -ENOMEM; *ret is untouched on failure. */
int pod_compute_actions(const PodState *s, usec_t now_mono, PodActions *ret);
void pod_actions_done(PodActions *a);

/* The container an action refers to. */
static inline ContainerState *pod_actions_target(PodState *s, bool is_init, unsigned index) {
        if (is_init)
                return index < s->n_init ? &s->init[index] : NULL;
        return index < s->n_app ? &s->app[index] : NULL;
}
