/* Internals shared by log-rotate.c (what the agent runs: readying a live
 * log, the asynchronous driver that spawns rotation workers) and
 * log-rotate-files.c (what the workers and the CLI's readers run: rotating,
 * gzip, reading rotated files). The split keeps zlib out of the agent's
 * address space: the agent links only log-rotate.c. Not for use outside
 * src/runtime. */
#pragma once

#include "helper.h"

#define CONTAINER_LOG_COMPRESS_SUFFIX ".gz"
#define CONTAINER_LOG_TMP_SUFFIX ".tmp"

/* The rotate-logs helper mode (log-rotate.c starts it, log-rotate-files.c
 * runs it): the policy, the time of the pass, and per log its root, its
 * path below the root and conmon's control FIFO, as three lists of the same
 * length. */
typedef struct LogRotateArgs {
        int64_t max_size;
        uint64_t max_files;
        int64_t now;
        char *const *logs_roots;
        char *const *log_paths;
        char *const *ctl_paths;
} LogRotateArgs;
extern const HelperMode log_rotate_helper_mode;

/* Whether dir_fd/name is a log file this module may open, rename and
 * compress: a regular file with no other name. Anything else under a log
 * name was put there by a container that can write to the directory (a
 * hostPath of it): a symlink to a host file, a FIFO that would block the
 * worker, a directory, a hard link. Such an entry is removed — unlinkat()
 * and rm_rf_at() never follow a link — and logged, once, since it is gone
 * afterwards. Returns 1 for a log file, 0 when the name was planted (or
 * vanished), or a negative errno. dir names the directory in the log. */
int log_check_entry(int dir_fd, const char *dir, const char *name);

/* Opens the directory of logs_root/log_path (relative, no symlink below
 * logs_root: -ELOOP) and points *ret_base into log_path at the file name;
 * *ret_dir is that directory's path, for messages. Returns the fd. */
int log_open_dir(const char *logs_root, const char *log_path, char **ret_dir,
                 const char **ret_base);
