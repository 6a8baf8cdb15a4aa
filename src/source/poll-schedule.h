/* When the URL source polls next (docs/fleet.md, "Polling a manifest URL
 * from many boxes"). A fleet that boots together must not poll together,
 * and a server that fails must see fewer requests, not more. Pure: no
 * clock, no I/O; the randomness is a generator the schedule owns, seeded
 * by its user (getrandom() in the agent, a constant in tests).
 *
 * The waits, with p the polling period (--http-check-frequency) and
 * cap = max(--manifest-url-max-backoff, p):
 *  1. The first poll waits a uniform random time in [0, p): boxes started
 *     at the same instant spread over one period.
 *  2. After a poll that worked (200 or 304), the wait is p spread by
 *     ±POLL_JITTER_PERCENT (uniform in [0.8 p, 1.2 p)): the mean stays p,
 *     and boxes that a stalled server answered at the same instant drift
 *     apart again. kubelet's wait.JitterUntil only lengthens the period
 *     (factor 0..f); a symmetric spread keeps the configured mean rate.
 *  3. After the n-th failed poll in a row (transport error, timeout, any
 *     status but 2xx and 304, an empty or unparsable body), the base is
 *     p * 2^n capped at cap, spread the same ±20 %: 2p, 4p, 8p, ... The
 *     first poll that works returns to 2.
 *  4. A Retry-After on a failed response is honoured: the wait is at least
 *     its delay, clamped to [0, cap], plus a uniform random part in [0, p),
 *     since an HTTP-date names one instant for every box that got it. The
 *     longer of this and the back-off of 3 is used.
 * So no wait is longer than 1.2 * cap + p, and none after a failure is
 * shorter than the Retry-After the server asked for (up to cap). */
#pragma once

#include <stdint.h>
#include <time.h>

#include "time-util.h"

#define POLL_JITTER_PERCENT 20U
#define POLL_DEFAULT_MAX_BACKOFF (300 * USEC_PER_SEC)
/* poll_schedule_failure(): the response had no usable Retry-After. */
#define POLL_NO_RETRY_AFTER USEC_INFINITY

typedef struct PollSchedule {
        usec_t period;      /* > 0 */
        usec_t max_backoff; /* the cap: never below period */
        unsigned failures;  /* failed polls in a row */
        uint64_t rng;       /* splitmix64 state */
} PollSchedule;

/* period 0 counts as 1 µs; max_backoff 0 is POLL_DEFAULT_MAX_BACKOFF. */
void poll_schedule_init(PollSchedule *s, usec_t period, usec_t max_backoff, uint64_t seed);
/* The wait before the first poll (1). */
usec_t poll_schedule_first(PollSchedule *s);
/* The wait after a poll that worked (2); ends a back-off. */
usec_t poll_schedule_success(PollSchedule *s);
/* The wait after a failed poll (3, 4); retry_after is the server's delay
 * from poll_retry_after_parse() or POLL_NO_RETRY_AFTER. */
usec_t poll_schedule_failure(PollSchedule *s, usec_t retry_after);

/* An RFC 9110 Retry-After value: delay-seconds ("120") or an HTTP-date in
 * any of its three forms (IMF-fixdate, RFC 850, asctime). A date counts
 * from date, the response's own Date header when it parses (the server's
 * clock against the server's clock: a box's clock may be wrong), else from
 * now (CLOCK_REALTIME seconds). A date in the past is 0; delay-seconds too
 * large for any clock saturate. 0 with *ret, or -EINVAL for anything else
 * (negative numbers, signs, fractions, trailing garbage, control
 * characters, impossible dates), which the caller ignores. Leading and
 * trailing spaces and tabs are allowed. */
int poll_retry_after_parse(const char *value, const char *date, time_t now, usec_t *ret);
/* One HTTP-date of the three forms, as seconds since the epoch. 0 or
 * -EINVAL. */
int http_date_parse(const char *s, time_t *ret);
