/* Restart back-off (SPEC §6, kubelet's CrashLoopBackOff): the delay before a
 * container may restart starts at 10 s, doubles on each further exit up to
 * 300 s, and starts over at 10 s once an attempt has run for 10 minutes.
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

/* Call when a container attempt ends: it exited, or it could not be created
 * or started (then running_since is 0 and the attempt counts as having run
 * for no time). Sets backoff_delay and backoff_until = now_mono + delay and
 * clears running_since. */
void backoff_on_exit(ContainerState *c, usec_t now_mono);

/* Call when creating the pod sandbox failed: same schedule, pod-level
 * fields (sandbox_backoff_delay/until). */
void backoff_sandbox_failed(PodState *s, usec_t now_mono);

/* True while a restart of c must still wait. */
bool backoff_active(const ContainerState *c, usec_t now_mono);
