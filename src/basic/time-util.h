/* Microsecond time helpers. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;
#define USEC_INFINITY ((usec_t)UINT64_MAX)
#define USEC_PER_SEC ((usec_t)1000000ULL)
#define USEC_PER_MSEC ((usec_t)1000ULL)
#define NSEC_PER_USEC ((uint64_t)1000ULL)

usec_t now_usec(clockid_t clock);
/* RFC 3339 UTC with seconds ("2024-05-01T10:00:00Z"), as Kubernetes prints
 * metav1.Time. buf must hold 32 bytes. */
char *format_rfc3339(char *buf, size_t size, usec_t realtime);

/* Go's time.ParseDuration, the one duration syntax of manifests, the
 * configuration and the CLI: an optional sign, then one or more decimal
 * numbers, each with an optional fraction and a unit (ns, us, µs or μs, ms,
 * s, m, h), e.g. "1h30m", "1.5h", "500ms", "-1s"; "0" alone needs no unit.
 * The result is in nanoseconds and may be negative; the range is Go's
 * (-2^63 .. 2^63-1 ns). Integer arithmetic throughout: a fraction is
 * truncated exactly (Go's float64 may come out 1 ns lower).
 * Returns 0, -EINVAL on bad syntax (including NULL and ""), -ERANGE on
 * overflow; *ret_nsec is written only on success. */
int go_duration_parse(const char *s, int64_t *ret_nsec);
/* go_duration_parse() for a length of time that cannot be negative, in
 * microseconds: a negative duration is -EINVAL ("-0" is 0), sub-microsecond
 * parts are truncated as Go does when converting to a coarser unit. */
int go_duration_parse_usec(const char *s, usec_t *ret);
