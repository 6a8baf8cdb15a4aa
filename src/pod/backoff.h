/* Restart back-off (kubelet's CrashLoopBackOff, docs/internals/runtime.md): a
 * container that exits is restarted at once the first time; after the
 * second exit it waits 10 s, then 20 s, doubling up to 300 s, and the count
 * starts over once an attempt has run for 10 minutes. A start that failed
 * (the image could not be pulled, the container not created) waits from the
 * first failure: 10 s, 20 s, … as kubelet's image pull back-off.
 *
 * The worker records an exit with backoff_on_exit(); pod_compute_actions()
 * only compares backoff_until with the clock, so the policy lives here and
 * the decision stays a pure function. All times are CLOCK_MONOTONIC. */
#pragma once

#include <stdbool.h>

#include "pod-state.h"
#include "time-util.h"

#define BACKOFF_INITIAL_USEC (10 * USEC_PER_SEC)
#define BACKOFF_MAX_USEC (300 * USEC_PER_SEC)
/* An attempt that ran at least this long resets the back-off. */
#define BACKOFF_RESET_USEC (600 * USEC_PER_SEC)

/* The delay to use after an attempt that ran for ran_for, given the delay
 * used last time (0 = none yet). */
usec_t backoff_next_delay(usec_t prev_delay, usec_t ran_for);

/* Call when a container attempt exited. Sets backoff_delay (0: restart
 * now) and backoff_until = now_mono + delay, advances the window for the
 * next exit and clears running_since. */
void backoff_on_exit(ContainerState *c, usec_t now_mono);
/* After an agent restart: the back-off c would have if the agent had seen
 * every exit, from what its attempt records keep. restart_count exits came
 * before the attempt that ran from started_at to finished_at (both
 * CLOCK_REALTIME); its restart waits from finished_at, so an agent that
 * restarts in a loop does not hurry a crash-looping container. */
void backoff_restore(ContainerState *c, unsigned restart_count, usec_t started_at,
                     usec_t finished_at, usec_t now_rt, usec_t now_mono);
/* Call when an attempt could not be pulled, created or started: waits the
 * current window (10 s the first time) and doubles it. */
void backoff_on_failed_start(ContainerState *c, usec_t now_mono);

/* Call when creating the pod sandbox failed: same schedule, pod-level
 * fields (sandbox_backoff_delay/until). */
void backoff_sandbox_failed(PodState *s, usec_t now_mono);

/* True while a restart of c must still wait. */
bool backoff_active(const ContainerState *c, usec_t now_mono);
