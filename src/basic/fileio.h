/* Reading and writing whole files safely. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* Reads a regular file (relative to dir_fd, or AT_FDCWD) into a NUL-terminated
 * buffer. Refuses with -EFBIG when the file is larger than max_size, so a
 * hostile file cannot make us allocate without bound. */
int read_full_file_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                      size_t *ret_size);
/* Reads at most the last max_size bytes of the regular file path below
 * dir_fd, as kubelet reads a termination-log file (tail.ReadAtMost): path is
 * resolved without following any symlink (-ELOOP), anything but a regular
 * file is refused (-EISDIR, -EBADFD) without blocking on a FIFO, and only
 * those bytes are read, so a sparse file of any size costs one pread. The
 * data is NUL-terminated (it may contain NULs: use ret_size); ret_truncated
 * (optional) tells whether earlier bytes were left out. */
int read_file_tail_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                      size_t *ret_size, bool *ret_truncated);
/* Reads a state file that the agent wrote and reads back (a record under
 * <run-dir> or <root-dir>), trusting nothing about what is there now: the
 * last component is opened without following a symlink, without blocking on
 * a FIFO, and anything but a regular file of 1 to max_size bytes is refused.
 * Each refusal returns a negative errno and puts in err (optional) one
 * sentence naming path and what is wrong: -ENOENT missing, -ELOOP a symlink
 * (never followed), -EISDIR a directory, -EBADFD another kind of file,
 * -ENODATA empty, -EFBIG larger than max_size. json_state_load_at()
 * (json-util.h) adds the parse. */
int read_state_file_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                       size_t *ret_size, Error *err);
/* Reads all of an fd (pipe or file) with the same cap. */
int read_full_fd(int fd, size_t max_size, char **ret_data, size_t *ret_size);
/* Writes all of data, again after EINTR and short writes: 0 or -errno.
 * pwrite_all() writes at offset, the file offset left as it is. */
int write_all(int fd, const void *data, size_t size);
int pwrite_all(int fd, const void *data, size_t size, uint64_t offset);

/* The one openat2(2) wrapper: resolve is a mask of RESOLVE_* flags; mode is
 * used with O_CREAT only; O_CLOEXEC is always added. Returns the fd or -errno. */
int openat2_resolve(int dir_fd, const char *path, int flags, mode_t mode, uint64_t resolve);
/* openat2 that follows no symlink in any component of path (-ELOOP), for
 * paths below directories a container can write to (its log directory, its
 * termination-log file); a path starting with "/" or containing ".." is
 * resolved normally otherwise. */
int openat_no_symlinks(int dir_fd, const char *path, int flags, mode_t mode);

/* Writes data to path atomically: temp file in the same directory, fsync,
 * rename, fsync of the directory. On any failure the old file is intact and
 * the temp file is removed. */
int write_file_atomic(const char *path, const void *data, size_t size, mode_t mode);
/* The same temp file and rename (readers see the old or the new file,
 * never a part), without the two fsync()s: for files read at once and
 * worthless after a crash or reboot (a container attempt's config.json,
 * which `runc create` reads right away and runc copies into its state).
 * Each fsync() on a loaded disk costs milliseconds on a pod's start. */
int write_file_replace(const char *path, const void *data, size_t size, mode_t mode);
/* write_file_atomic() unless path is a regular file that already holds
 * exactly data with that mode (written, and synced, by an earlier run): an
 * agent restart re-derives files it finds unchanged, and every write costs
 * two fsync()s. Returns 1 when it wrote, 0 when the file was current. */
int write_file_atomic_if_changed(const char *path, const void *data, size_t size, mode_t mode);
/* The same without the fsync()s (see write_file_replace()). */
int write_file_replace_if_changed(const char *path, const void *data, size_t size, mode_t mode);

/* Removes what write_file_atomic() and write_file_replace() leave behind
 * when the process dies between creating the temporary file and the rename
 * ("<name>.tmp.XXXXXX", regular files only; nothing is followed): for a
 * directory only this process writes to, at its start. Returns the number
 * removed, 0 when dir does not exist, or -errno. */
int remove_stale_temp_files(const char *dir);

/* mkdir -p with the given mode for created components. */
int mkdir_p(const char *path, mode_t mode);
/* mkdir_p(), then gives the last component exactly mode even when it
 * already existed (an older version or an administrator created it with
 * another): for directories whose contents must stay private. Refuses a
 * symlink or non-directory there with -ENOTDIR. */
int mkdir_p_exact(const char *path, mode_t mode);
