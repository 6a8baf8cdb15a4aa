/* Probes and lifecycle hooks of one pod's containers (docs/probes.md): turns the
 * manifest's handlers into ProbeActions (runc exec command lines, URLs,
 * addresses), runs them on the loop through the probe module, and applies
 * the outcomes to the ContainerState flags the pod worker acts on:
 *   - postStart runs right after the start; the container is not Running
 *     (in the API) until it completes; a failure requests a kill
 *     (FailedPostStartHook);
 *   - startup gates liveness and readiness; readiness drives `ready`;
 *     liveness/startup failure requests a kill (kill_requested), which
 *     pod_compute_actions() turns into an Unhealthy kill;
 *   - preStop runs before the stop signal, within the grace period.
 * The worker makes one PodProbes per pod and calls the four hooks below;
 * the probes tell it of a changed flag through the changed callback, so
 * this module knows nothing of the worker. */
#pragma once

#include <stdbool.h>

#include "event-curl.h"
#include "event.h"
#include "pod-events.h"
#include "pod-state.h"
#include "runtime.h"
#include "time-util.h"

typedef struct PodProbes PodProbes;

typedef struct PodProbesContext {
        Event *event;
        Runtime *runtime;    /* exec handlers run as `<runtime> exec` */
        EventCurl **curl;    /* HTTP/gRPC client shared by all pods; made on first use */
        PodState *state;     /* the pod's containers; outlives the PodProbes */
        const char *pod_dir; /* exec pid files go below <pod-dir>/containers */
        const char *name;    /* the pod, for log lines */
        const char *pod_uid; /* podUID= of structured log lines */
        /* started, ready, kill_requested or post_start_pending of a container
         * changed: the owner records the status and syncs the pod. Also
         * called from within the hooks below, so it only takes note (the
         * sync it asks for runs later on the loop). */
        void (*changed)(void *userdata);
        /* An event for the pod's list (Unhealthy on each failed or errored
         * probe, FailedPostStartHook, FailedPreStopHook) on container c. */
        void (*record_event)(const ContainerState *c, PodEventReason reason, const char *message,
                             void *userdata);
        void *userdata;
} PodProbesContext;

/* ctx is copied; what it points to is borrowed. */
int pod_probes_new(PodProbes **ret, const PodProbesContext *ctx);
PodProbes *pod_probes_free(PodProbes *p);

/* The attempt of c (RUNNING, container_id set) has just been started:
 * postStart, then the probes. Sets c->started/ready accordingly. */
void pod_probes_container_started(PodProbes *p, ContainerState *c);

/* A running attempt of c adopted after an agent restart: its postStart ran
 * in the earlier run, so only the probes start, from fresh results (as
 * kubelet after a restart: readiness and startup are re-established by the
 * first probe, which runs at once since the initial delay is long over). */
void pod_probes_container_adopted(PodProbes *p, ContainerState *c);

/* The attempt of c exited or is gone: every probe and hook of it stops. */
void pod_probes_container_stopped(PodProbes *p, ContainerState *c);

/* Runs c's preStop hook, if it has one, before the stop signal: then(c,
 * userdata) is called when it finished or deadline (CLOCK_MONOTONIC) was
 * reached, unless the attempt stopped first. Returns true when a hook runs
 * (then will come), false when there is none. Probes of c stop. */
typedef void (*pod_probes_then_t)(ContainerState *c, void *userdata);
bool pod_probes_pre_stop(PodProbes *p, ContainerState *c, usec_t deadline, pod_probes_then_t then,
                         void *userdata);
