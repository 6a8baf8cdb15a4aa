/* Rotation of the CRI-format container logs conmon writes (docs/logs.md), done
 * the way kubelet's container log manager does it for CRI runtimes:
 *
 * - The live file is <dir>/<n>.log. Once it has reached max_size it is
 *   renamed to <n>.log.<YYYYMMDD-HHMMSS> (UTC) and conmon is asked to reopen
 *   its log: "2 0 0\n" (REOPEN_LOGS_EVENT) written to the "ctl" FIFO conmon
 *   keeps in the container's bundle directory. conmon then creates a fresh
 *   <n>.log (it writes <n>.log.tmp and renames it over the name). If conmon
 *   cannot be told, the rename is undone.
 * - Before that rename, rotated files from earlier passes are gzipped
 *   (<name>.gz, written as <name>.tmp first) and the oldest ones removed so
 *   that, after the rotation, at most max_files files exist: the live one,
 *   the one just rotated (left uncompressed because conmon may still be
 *   writing its last records to it) and max_files - 2 compressed ones.
 * - Leftovers of an interrupted pass (*.tmp, a plain file whose .gz exists)
 *   are removed first.
 *
 * This lives in runtime/ because the files and the FIFO are conmon's: the
 * pod layer only says which containers run (log path, bundle directory) and
 * when to look. The file work (stat aside) runs in workers (at most
 * containerLogMaxWorkers at once, as kubelet's), this binary
 * re-executed in its rotate-logs helper mode (helper.h), so the event
 * loop never waits on gzip or the disk. Readers (`nanolet logs`) use
 * container_log_list_rotated() and container_log_read() so that they see
 * exactly the files and the order this module produces. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "event.h"
#include "helper.h"

typedef struct LogRotatePolicy {
        int64_t max_size;   /* bytes; the live file is rotated once it is at least this big */
        unsigned max_files; /* >= 2: files kept per container attempt, the live one included */
        /* containerLogMaxWorkers: the logs due in one pass are shared out
         * to at most this many workers that run at once; 0 = 1. */
        unsigned max_workers;
} LogRotatePolicy;

/* ---- synchronous steps (the worker's; also for readers and tests) ---- */

/* The rotated files of the live file `base` (e.g. "0.log") in dir_fd, oldest
 * first: "<base>.<stamp>" and "<base>.<stamp>.gz". Temporary files and plain
 * files whose compressed twin exists are left out. Returns 0 (the list may
 * be empty) or a negative errno. */
int container_log_list_rotated(int dir_fd, const char *base, char ***ret);

/* One pass over the live log logs_root/log_path (see the top of this file),
 * if it is at least p->max_size; ctl_path is conmon's control FIFO.
 * log_path is relative to logs_root and resolved without following any
 * symlink (-ELOOP): a container may write to its own log directory through a
 * hostPath. Every name in that directory that is not a plain single-link
 * regular file (a planted symlink, FIFO, directory or hard link) is removed
 * without being followed or opened, with one warning. A missing live file
 * (an earlier pass was interrupted between rename and reopen, or a planted
 * one was removed) only gets the reopen request. Returns 1 when the file was
 * rotated, 0 when nothing was due, or a negative errno (-ENXIO: conmon does
 * not listen). */
int container_log_rotate(const char *logs_root, const char *log_path, const char *ctl_path,
                         const LogRotatePolicy *p, time_t now);

/* The mode of the compressed files; never the source's, which a container
 * may have chosen. conmon creates live files with the same. */
#define CONTAINER_LOG_MODE 0640

/* Readies the live log logs_root/log_path (relative, resolved as for
 * container_log_rotate()) of an attempt about to start. conmon opens it by
 * path with O_CREAT and follows a symlink, so a name a container planted
 * there ahead of the start (a symlink to a host file, a FIFO, a directory, a
 * hard link), and one at "<log>.tmp" (conmon's reopen writes that name and
 * renames it over the log), is removed as container_log_rotate() removes it,
 * with one warning; then the file is created (O_EXCL|O_NOFOLLOW,
 * CONTAINER_LOG_MODE) unless a regular one exists, so conmon opens a regular
 * file. A name replaced between this call and conmon's open is not caught.
 * Returns 0 or a negative errno (-ELOOP: a directory below logs_root is a
 * symlink). */
int container_log_prepare(const char *logs_root, const char *log_path);

/* Opens dir_fd/name for reading if it is a regular file, without following
 * a symlink (-ELOOP) or blocking on a FIFO (-EBADFD; a directory: -EISDIR).
 * Returns the fd or a negative errno. */
int container_log_open(int dir_fd, const char *name);

/* Compresses dir_fd/name (opened as container_log_open() does) into name.gz,
 * created with CONTAINER_LOG_MODE through name.tmp (O_EXCL, after removing a
 * leftover), then removes name. */
int container_log_compress(int dir_fd, const char *name);

/* Asks conmon to reopen the container's log file. */
int container_log_request_reopen(const char *ctl_path);

/* Reads dir_fd/name, gunzipping it when its name ends in ".gz", and passes
 * the bytes to fn in chunks. A plain name that has been compressed in the
 * meantime is read from name.gz. Returns 0, -ENOENT when neither exists,
 * container_log_open()'s refusals (-ELOOP, -EBADFD, -EISDIR) for what is not
 * a regular file, a negative errno, or fn's negative return (which stops the
 * reading). */
typedef int (*container_log_data_fn)(const char *data, size_t size, void *userdata);
int container_log_read(int dir_fd, const char *name, container_log_data_fn fn, void *userdata);

/* ---- the asynchronous driver ---- */

typedef struct LogRotator LogRotator;

int log_rotator_new(LogRotator **ret, Event *e, const LogRotatePolicy *p);
/* Kills a worker still running and leaves its reaping to the loop (its
 * half-done file is cleaned up by the next pass). */
LogRotator *log_rotator_free(LogRotator *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(LogRotator *, log_rotator_free)

/* Notes a running container's log logs_root/log_path (log_path relative, as
 * for container_log_rotate()) for the next pass when it has reached the size
 * limit (or has vanished, or is not a regular file). Only an lstat(2)
 * happens here. */
int log_rotator_consider(LogRotator *r, const char *logs_root, const char *log_path,
                         const char *ctl_path);
/* Starts the workers that rotate the noted logs (as many as there are logs
 * due, at most max_workers, the logs dealt out in turn) and returns how many
 * started; 0 when nothing was noted or a worker of the last pass still runs
 * (the notes are dropped: the next pass looks again); or a negative errno
 * (workers already started keep running). */
int log_rotator_run(LogRotator *r);
bool log_rotator_busy(const LogRotator *r);

/* The workers' helper mode (helper.h), for main()'s table:
 * container_log_rotate() of each log named, warnings logged. */
extern const HelperMain log_rotate_helper;
