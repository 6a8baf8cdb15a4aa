/* Directory streams on directory fds: the one way nanolet lists a directory
 * it already holds open (image store, bundles, cgroups, log dirs). */
#pragma once

#include <dirent.h>

/* Opens a stream on path below dir_fd (dir_fd may be AT_FDCWD), or on dir_fd
 * itself when path is NULL. The stream owns a fresh open file description
 * (O_RDONLY|O_DIRECTORY|O_CLOEXEC, plus extra_flags such as O_NOFOLLOW), never
 * dir_fd: the caller keeps dir_fd, and the listing starts at the first entry
 * whatever offset dir_fd is at (a dup would share it). *ret is written only on
 * success. Returns 0 or -errno. */
int opendir_fd(int dir_fd, const char *path, int extra_flags, DIR **ret);

/* readdir() without "." and "..". errno is 0 at the end of the listing and
 * set when reading failed, so a caller that must tell a partial listing from a
 * complete one checks errno after the loop. */
struct dirent *readdir_no_dot(DIR *d);

/* Iterates over the entries of d other than "." and ".."; see readdir_no_dot()
 * for telling the end from an error. */
#define FOREACH_DIRENT(de, d) for (struct dirent *de = NULL; ((de) = readdir_no_dot(d));)
