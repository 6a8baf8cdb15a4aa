/* Internals shared by log-rotate.c (what the agent runs: readying a live
 * log, the asynchronous driver that spawns rotation workers) and
 * log-rotate-files.c (what the workers and the CLI's readers run: rotating,
 * gzip, reading rotated files). The split keeps zlib out of the agent's
 * address space: the agent links only log-rotate.c. Not for use outside
 * src/runtime. */
#pragma once

#define CONTAINER_LOG_COMPRESS_SUFFIX ".gz"
#define CONTAINER_LOG_TMP_SUFFIX ".tmp"

/* argv after SELF_HELPER_VERB: LOG_ROTATE_HELPER_MODE MAX_SIZE MAX_FILES NOW
 * then LOGS_ROOT LOG_PATH CTL_PATH per log. */
#define LOG_ROTATE_HELPER_FIXED_ARGS 4

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
