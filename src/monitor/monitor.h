/* nanolet-monitor: nanolet's own container monitor, a drop-in for what the
 * runtime code (src/runtime/conmon.c) uses conmon for, keeping conmon's
 * command line (the options nanolet passes) and its on-disk contract:
 *
 * - the first process writes the monitor's pid to -P and exits 0; the
 *   monitor (own session, child subreaper) runs `<runtime> create` with the
 *   container's stdio on pipes (or receives the pty master over
 *   --console-socket with -t) and reports on the _OCI_SYNCPIPE fd
 *   {"data": <pid>}\n, or {"data": -1, "message": "<runtime output>"}\n;
 * - container output becomes CRI k8s-file records in the -l log, the
 *   "<bundle>/ctl" FIFO reopens it ("2 ..." lines) or resizes the tty
 *   ("1 <rows> <cols>"), --log-size-max starts a fresh file at the limit;
 * - a cgroup OOM kill creates <persist>/oom; on container exit the code
 *   (decimal, 128+N for a signal) goes to <persist>/exit and then
 *   <exit-dir>/<id> by temp file + rename, and the monitor exits.
 *
 * This header is the pure part (unit-tested): argument parsing, the CRI
 * framing, the sync line, exit codes. It depends on libc only, as does the
 * whole program: it must start in well under a millisecond and cost little
 * memory per container (docs/internals/runtime.md, "The container monitor"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* conmon's STDIO_BUF_SIZE: container output is read (and framed) in
 * chunks of at most this, so no record's text is longer. */
#define MONITOR_READ_MAX 8192
/* The runtime's create output kept for the sync message. */
#define MONITOR_ERROR_MAX 4096
#define MONITOR_RUNTIME_ARGS_MAX 16

typedef struct MonitorArgs {
        const char *id;
        const char *runtime;
        const char *bundle;
        const char *container_pidfile;
        const char *monitor_pidfile; /* may be NULL */
        const char *log_path;
        const char *exit_dir;
        const char *persist_dir;
        const char *runtime_args[MONITOR_RUNTIME_ARGS_MAX];
        size_t n_runtime_args;
        bool terminal;
        bool stdin_open;
        bool systemd_cgroup;
        int64_t log_size_max; /* 0: none */
} MonitorArgs;

/* Parses conmon's options as conmon.c passes them (ignored ones included).
 * Returns 0, or -EINVAL with a sentence in err. Uses getopt_long(): tests
 * reset optind between calls. */
int monitor_parse_args(int argc, char **argv, MonitorArgs *ret, char *err, size_t err_size);

/* "2006-01-02T15:04:05.000000000+07:00 " + stream + " ": conmon's record
 * prefix (local time with a numeric offset, nanoseconds). Returns its
 * length, 0 if size is too small. */
#define MONITOR_PREFIX_MAX 64
size_t monitor_format_prefix(char *buf, size_t size, const struct tm *tm, long nsec,
                             const char *stream);

/* The length of the first record's text in buf[0..len): up to and including
 * the first newline (*ret_partial false), or all of it (true). len > 0. */
size_t monitor_line_len(const char *buf, size_t len, bool *ret_partial);

/* The live log: append-only, reopened on request or at the size limit. */
typedef struct MonitorLog {
        int fd;
        const char *path;
        int64_t written; /* bytes in the current file */
        int64_t size_max;
} MonitorLog;

/* Opens path (O_APPEND|O_CREAT, mode 0640, never following a symlink). */
int monitor_log_open(MonitorLog *log, const char *path, int64_t size_max);
/* conmon's reopen: a fresh "<path>.tmp" renamed over path, then the old
 * descriptor closed. On failure the old file stays in use. */
int monitor_log_reopen(MonitorLog *log);
/* Writes buf[0..len) of stream as CRI records, one per line, the last one
 * partial ("P") when it does not end in a newline; all with prefix. */
int monitor_log_write(MonitorLog *log, const char *prefix, const char *buf, size_t len);
void monitor_log_close(MonitorLog *log);

/* waitpid() status -> the exit file's code: the exit status, or 128+N for
 * signal N; -1 for anything else. */
int monitor_exit_code(int wait_status);
/* Writes text to path through "<dir>/.<name>.tmp" + rename (no fsync). */
int monitor_write_file_atomic(const char *path, const char *text);

/* The sync line: {"data": pid}\n, or with message (any bytes: escaped as
 * JSON, invalid UTF-8 and control bytes replaced) {"data": -1, "message":
 * "..."}\n. Truncated to fit size. Returns its length. */
size_t monitor_sync_line(char *buf, size_t size, int pid, const char *message, size_t msg_len);

/* One "<type> <a> <b>" line of the ctl FIFO: 0, or -EINVAL. */
int monitor_parse_ctl_line(const char *line, size_t len, int *ret_type, unsigned *ret_a,
                           unsigned *ret_b);

/* The program. */
int monitor_main(int argc, char **argv);
