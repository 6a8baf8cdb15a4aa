/* Reading and writing whole files safely. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Reads a regular file (relative to dir_fd, or AT_FDCWD) into a NUL-terminated
 * buffer. Refuses with -EFBIG when the file is larger than max_size, so a
 * hostile file cannot make us allocate without bound. */
int read_full_file_at(int dir_fd, const char *path, size_t max_size, char **ret_data,
                      size_t *ret_size);
/* Reads all of an fd (pipe or file) with the same cap. */
int read_full_fd(int fd, size_t max_size, char **ret_data, size_t *ret_size);

/* Writes data to path atomically: temp file in the same directory, fsync,
 * rename, fsync of the directory. On any failure the old file is intact and
 * the temp file is removed. */
int write_file_atomic(const char *path, const void *data, size_t size, mode_t mode);

/* mkdir -p with the given mode for created components. */
int mkdir_p(const char *path, mode_t mode);
/* mkdir_p(), then gives the last component exactly mode even when it
 * already existed (an older version or an administrator created it with
 * another): for directories whose contents must stay private. Refuses a
 * symlink or non-directory there with -ENOTDIR. */
int mkdir_p_exact(const char *path, mode_t mode);
