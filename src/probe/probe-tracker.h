/* The prober's bookkeeping for one probe of one container attempt, as
 * kubelet's prober worker keeps it: when the next probe is due
 * (initialDelaySeconds from the container's start, then every
 * periodSeconds), and how single outcomes become the probe's result
 * (successThreshold / failureThreshold consecutive outcomes). Pure: no
 * clock, no loop; the caller passes CLOCK_MONOTONIC times in. */
#pragma once

#include <errno.h>
#include <stdbool.h>

#include "time-util.h"

typedef enum ProbeType {
        PROBE_LIVENESS,
        PROBE_READINESS,
        PROBE_STARTUP,
        _PROBE_TYPE_MAX,
        _PROBE_TYPE_INVALID = -EINVAL,
} ProbeType;

/* "Liveness", "Readiness", "Startup" (kubelet's log spelling). */
const char *probe_type_to_string(ProbeType t);

typedef enum ProbeResult {
        PROBE_RESULT_UNKNOWN, /* not probed yet, or the prober itself failed */
        PROBE_RESULT_SUCCESS,
        PROBE_RESULT_FAILURE,
        _PROBE_RESULT_MAX,
        _PROBE_RESULT_INVALID = -EINVAL,
} ProbeResult;

/* "unknown", "success", "failure" */
const char *probe_result_to_string(ProbeResult r);

typedef struct ProbeTiming {
        usec_t initial_delay;
        usec_t period;
        usec_t timeout;
        unsigned success_threshold;
        unsigned failure_threshold;
} ProbeTiming;

typedef struct ProbeTracker {
        ProbeType type;
        ProbeTiming timing;
        usec_t container_started; /* CLOCK_MONOTONIC start of the attempt */
        usec_t last_run;          /* start of the latest probe; 0 = none yet */
        bool in_flight;
        ProbeResult result;       /* after thresholds; what the container's flags follow */
        ProbeResult last_outcome; /* of the latest probe */
        unsigned run;             /* consecutive outcomes equal to last_outcome */
        /* A liveness or startup failure stops probing until the next
         * attempt (the container is being killed). */
        bool on_hold;
} ProbeTracker;

/* For a new container attempt started at started (CLOCK_MONOTONIC). The
 * initial result is kubelet's: Success for liveness, Failure for
 * readiness, Unknown for startup. */
void probe_tracker_reset(ProbeTracker *t, ProbeType type, const ProbeTiming *timing,
                         usec_t started);

/* When the next probe is to start; USEC_INFINITY when none is to run now:
 * one is in flight, the tracker is on hold, a startup probe has succeeded,
 * or gated (liveness/readiness before the startup probe passed). */
usec_t probe_tracker_next_run(const ProbeTracker *t, bool gated);

void probe_tracker_begin(ProbeTracker *t, usec_t now);

/* Records the outcome of the probe in flight. Unknown (the prober could not
 * even try) changes nothing, as in kubelet. Returns true when the result
 * changed. */
bool probe_tracker_record(ProbeTracker *t, ProbeResult outcome);
