/* Probes and lifecycle hooks of one pod's containers (SPEC §9): turns the
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
 * The worker calls the four hooks below; nothing else here is public. */
#pragma once

#include <stdbool.h>

#include "pod-state.h"
#include "time-util.h"

typedef struct PodWorker PodWorker;
typedef struct PodProbes PodProbes;

PodProbes *pod_probes_free(PodProbes *p);

/* The attempt of c (RUNNING, container_id set) has just been started:
 * postStart, then the probes. Sets c->started/ready accordingly. */
void pod_probes_container_started(PodWorker *w, ContainerState *c);

/* A running attempt of c adopted after an agent restart: its postStart ran
 * in the earlier run, so only the probes start, from fresh results (as
 * kubelet after a restart: readiness and startup are re-established by the
 * first probe, which runs at once since the initial delay is long over). */
void pod_probes_container_adopted(PodWorker *w, ContainerState *c);

/* The attempt of c exited or is gone: every probe and hook of it stops. */
void pod_probes_container_stopped(PodWorker *w, ContainerState *c);

/* Runs c's preStop hook, if it has one, before the stop signal: then(w, c,
 * userdata) is called when it finished or deadline (CLOCK_MONOTONIC) was
 * reached, unless the attempt stopped first. Returns true when a hook runs
 * (then will come), false when there is none. Probes of c stop. */
typedef void (*pod_probes_then_t)(PodWorker *w, ContainerState *c, void *userdata);
bool pod_probes_pre_stop(PodWorker *w, ContainerState *c, usec_t deadline,
                         pod_probes_then_t then, void *userdata);
