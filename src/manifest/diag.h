/* Diagnostics: every problem found in a manifest, with the place it was
 * found, so an operator sees all of them at once. Printed as
 * "file:line: field.path: message". */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

typedef enum DiagLevel {
        DIAG_ERROR,
        DIAG_WARNING,
} DiagLevel;

typedef struct Diag {
        DiagLevel level;
        char *file;    /* may be NULL (then "<input>") */
        unsigned line; /* 1-based; 0 = unknown */
        unsigned column;
        char *path; /* field path such as "spec.containers[0].image"; may be NULL */
        char *message;
} Diag;

typedef struct Diagnostics {
        Diag *items;
        size_t n, cap;
        size_t n_errors, n_warnings;
        size_t max_items; /* further items are counted but not stored; 0 = 1000 */
} Diagnostics;

void diagnostics_init(Diagnostics *d);
void diagnostics_deinit(Diagnostics *d);
static inline void diagnostics_deinitp(Diagnostics *d) {
        diagnostics_deinit(d);
}
#define _cleanup_diagnostics_ __attribute__((cleanup(diagnostics_deinitp)))

/* Records a problem. Out of memory is remembered as an error too, so a
 * failed add never makes an invalid manifest look valid. */
void diagnostics_add(Diagnostics *d, DiagLevel level, const char *file, unsigned line,
                     unsigned column, const char *path, const char *fmt, ...) _printf_(7, 8);
/* Copies all items of src into d (used to merge per-document results). */
void diagnostics_merge(Diagnostics *d, const Diagnostics *src);
static inline bool diagnostics_has_errors(const Diagnostics *d) {
        return d->n_errors > 0;
}
/* "file:line: path: message" (warnings get "warning: " before the message);
 * line 0 omits ":line", a NULL path omits "path: ". The column is kept in
 * the item but not printed (parser errors say "column N: " in the message). */
void diag_format(const Diag *item, FILE *f);
/* Same as one allocated string; NULL on ENOMEM. */
char *diag_to_string(const Diag *item);
void diagnostics_print(const Diagnostics *d, FILE *f);
/* Each problem as one line of the agent's log (klog's header or JSON), at
 * the error or warning level: for the agent, whose every stderr line is a
 * log line. */
void diagnostics_log(const Diagnostics *d);
