/* See probe-tracker.h. */
#include "probe-tracker.h"

#include <assert.h>

#include "macro.h"

static const char *const probe_type_table[_PROBE_TYPE_MAX] = {
        [PROBE_LIVENESS] = "Liveness",
        [PROBE_READINESS] = "Readiness",
        [PROBE_STARTUP] = "Startup",
};

const char *probe_type_to_string(ProbeType t) {
        return t >= 0 && t < _PROBE_TYPE_MAX ? probe_type_table[t] : NULL;
}

static const char *const probe_result_table[_PROBE_RESULT_MAX] = {
        [PROBE_RESULT_UNKNOWN] = "unknown",
        [PROBE_RESULT_SUCCESS] = "success",
        [PROBE_RESULT_FAILURE] = "failure",
};

const char *probe_result_to_string(ProbeResult r) {
        return r >= 0 && r < _PROBE_RESULT_MAX ? probe_result_table[r] : NULL;
}

void probe_tracker_reset(ProbeTracker *t, ProbeType type, const ProbeTiming *timing,
                         usec_t started) {
        assert(t && timing);
        *t = (ProbeTracker){
                .type = type,
                .timing = *timing,
                .container_started = started,
                .result = type == PROBE_LIVENESS    ? PROBE_RESULT_SUCCESS
                          : type == PROBE_READINESS ? PROBE_RESULT_FAILURE
                                                    : PROBE_RESULT_UNKNOWN,
        };
        if (t->timing.success_threshold == 0)
                t->timing.success_threshold = 1;
        if (t->timing.failure_threshold == 0)
                t->timing.failure_threshold = 1;
}

usec_t probe_tracker_next_run(const ProbeTracker *t, bool gated) {
        if (t->in_flight || t->on_hold)
                return USEC_INFINITY;
        if (t->type == PROBE_STARTUP && t->result == PROBE_RESULT_SUCCESS)
                return USEC_INFINITY;
        if (t->type != PROBE_STARTUP && gated)
                return USEC_INFINITY;
        usec_t first = t->container_started + t->timing.initial_delay;
        if (t->last_run == 0)
                return first;
        return MAX(first, t->last_run + t->timing.period);
}

void probe_tracker_begin(ProbeTracker *t, usec_t now) {
        t->in_flight = true;
        /* 0 means "never run": a probe at time 0 (tests) still counts. */
        t->last_run = now ? now : 1;
}

bool probe_tracker_record(ProbeTracker *t, ProbeResult outcome) {
        t->in_flight = false;
        if (outcome != PROBE_RESULT_SUCCESS && outcome != PROBE_RESULT_FAILURE)
                return false;
        if (outcome == t->last_outcome)
                t->run++;
        else {
                t->last_outcome = outcome;
                t->run = 1;
        }
        unsigned need = outcome == PROBE_RESULT_SUCCESS ? t->timing.success_threshold
                                                        : t->timing.failure_threshold;
        if (t->run < need)
                return false;
        bool changed = t->result != outcome;
        t->result = outcome;
        if (outcome == PROBE_RESULT_FAILURE &&
            (t->type == PROBE_LIVENESS || t->type == PROBE_STARTUP)) {
                t->on_hold = true;
                t->run = 0;
        }
        return changed;
}
