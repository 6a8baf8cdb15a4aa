/* Kubernetes value syntaxes that are not YAML types: resource.Quantity
 * ("500m", "1.5Gi", "129e6") and Go durations ("1h30m", "500ms"). */
#pragma once

#include <stdint.h>

#include "time-util.h"

/* Kubernetes resource.Quantity: decimal/binary SI suffixes (m, k, M, G, T,
 * P, E, Ki, Mi, Gi, Ti, Pi, Ei) and exponents (1e3, 1E-3), sign, fractions
 * ("1.5Gi", "100m", "0.1"). Negative values parse; callers that need
 * non-negative amounts check value < 0 themselves. */
typedef struct Quantity {
        int64_t value; /* rounded up (away from zero, as Kubernetes' Value()) to whole units */
        int64_t milli; /* value*1000 rounded up likewise; saturates at INT64_MAX/INT64_MIN */
} Quantity;

/* Returns 0, -EINVAL on bad syntax, -ERANGE when the value in whole units
 * does not fit in int64 (refused rather than silently clamped; only milli
 * saturates, so "8E" parses with milli = INT64_MAX). Very small non-zero
 * values round up to 1 (Kubernetes rounds up, never to zero). Also
 * accepts the "n" and "u" suffixes Kubernetes accepts. */
int quantity_parse(const char *s, Quantity *ret);
