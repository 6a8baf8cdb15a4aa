/* The reading side of `nanolet logs`, apart from option parsing and
 * following, so that it can be tested on a directory of files: one
 * container attempt's logs are its rotated files, oldest first (compressed
 * ones gunzipped), then its live <attempt>.log, read as one stream — a
 * partial line continued across a rotation is joined, nothing is read
 * twice — with --tail kept in a ring of the last N formatted lines. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cri-log.h"

typedef struct LogOut {
        char *data;
        size_t len;
} LogOut;

typedef struct LogsContext {
        FILE *out;
        bool timestamps;
        const char *prefix; /* kubectl's --prefix, "[pod/<pod>/<container>] "; NULL = none */
        int64_t since;      /* ns since the epoch; 0 = no limit */
        long tail;          /* lines; -1 = all */
        bool buffering;     /* collecting the last `tail` lines */
        LogOut *ring;
        size_t ring_start, ring_n;
        CriLogReader reader;
        unsigned n_skipped; /* names that were not regular files (each reported on stderr) */
} LogsContext;

/* tail -1: all lines. Returns 0 or -ENOMEM. */
int logs_context_init(LogsContext *x, FILE *out, long tail, bool timestamps, int64_t since);
void logs_context_done(LogsContext *x);

/* Opens <pod_logs_dir>/<ns>_<pod>_<uid>/<container>, following no symlink
 * below pod_logs_dir (-ELOOP): a container may write to its log directory.
 * Returns the fd or a negative errno. */
int logs_open_dir(const char *pod_logs_dir, const char *namespace, const char *pod, const char *uid,
                  const char *container);
/* Reads the attempt's rotated files and its live file to their current
 * end. ret_live_fd (optional) gets the live file's fd, for following;
 * ret_n_files how many files there were (0: none at all). A name that is
 * not a regular file (a planted symlink, FIFO or directory) is neither
 * followed nor opened for reading: it is skipped with a line on stderr. */
int logs_read_attempt(LogsContext *x, int dir_fd, unsigned attempt, int *ret_live_fd,
                      unsigned *ret_n_files);
/* Emits an unfinished last line and, with --tail, the buffered lines; after
 * this, lines are printed as they come. */
int logs_flush(LogsContext *x, bool final);
/* Reads fd to its current end. */
int logs_drain(LogsContext *x, int fd);
