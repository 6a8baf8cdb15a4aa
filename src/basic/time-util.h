/* Microsecond time helpers. */
#pragma once

#include <stdint.h>
#include <time.h>

typedef uint64_t usec_t;
#define USEC_INFINITY ((usec_t)UINT64_MAX)
#define USEC_PER_SEC ((usec_t)1000000ULL)
#define USEC_PER_MSEC ((usec_t)1000ULL)

usec_t now_usec(clockid_t clock);
/* RFC 3339 UTC with seconds ("2024-05-01T10:00:00Z"), as Kubernetes prints
 * metav1.Time. buf must hold 32 bytes. */
char *format_rfc3339(char *buf, size_t size, usec_t realtime);
