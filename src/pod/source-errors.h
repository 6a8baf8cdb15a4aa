/* The manifest problems the sources report (SOURCE_EVENT_ERROR), kept per
 * origin and published as <run-dir>/status/sources.json for `nanolet pods`
 * (format in docs/internals/state-files.md). The file is rewritten atomically each
 * time an origin's error set changes: it appears with a broken manifest and
 * goes when the file is fixed or removed (the sources send an ERROR event
 * with no errors then). An origin's `since` is when it started failing; a
 * changed set of errors of a still-failing origin keeps it. */
#pragma once

#include <errno.h>

#include <jansson.h>

#include "source.h"
#include "time-util.h"

/* Why an error item is there; derived from where the source put it. */
typedef enum SourceErrorReason {
        SOURCE_ERROR_UNREADABLE, /* no line: cannot open, read, trust, fetch; empty, too big */
        SOURCE_ERROR_SYNTAX,     /* a line but no field: YAML/JSON syntax, limits, kinds */
        SOURCE_ERROR_INVALID,    /* a field: decoding or validation of an object */
        SOURCE_ERROR_DUPLICATE,  /* lost to another definition of the same name or UID */
        SOURCE_ERROR_SIGNATURE,  /* field "signature": a signed URL's body not accepted, or expired
                                  */
        _SOURCE_ERROR_REASON_MAX,
        _SOURCE_ERROR_REASON_INVALID = -EINVAL,
} SourceErrorReason;

const char *source_error_reason_to_string(SourceErrorReason r); /* "unreadable", ... */
SourceErrorReason source_error_reason_from_string(const char *s);

typedef struct SourceErrors SourceErrors;

/* status_dir: where sources.json goes (NULL: kept in memory only). */
int source_errors_new(SourceErrors **ret, const char *status_dir);
SourceErrors *source_errors_free(SourceErrors *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(SourceErrors *, source_errors_free)

/* Takes in one SOURCE_EVENT_ERROR (other events are ignored) at now
 * (CLOCK_REALTIME) and writes the file when the set changed. Returns 0, or
 * -errno when the file could not be written (the table is updated anyway
 * and the next change writes it again). */
int source_errors_update(SourceErrors *s, const SourceEvent *ev, usec_t now);
/* Writes the file from the table (at start: an earlier run's file must not
 * outlive it). 0 or -errno. */
int source_errors_flush(SourceErrors *s);

/* For /metrics: the number of error items the origins of source ("file" or
 * "http"; NULL: all) hold right now with the given reason. */
unsigned source_errors_count(const SourceErrors *s, const char *source, SourceErrorReason reason);

/* The content of sources.json. 0 or -ENOMEM. */
int source_errors_to_json(const SourceErrors *s, json_t **ret);
