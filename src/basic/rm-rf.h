/* Recursive removal that never follows symlinks and never crosses into
 * another filesystem: a mount left behind (a container rootfs, a tmpfs, a
 * bind mount of a host path) is refused with -EBUSY instead of emptied. */
#pragma once

/* Removes name below dir_fd recursively. A missing name is success. */
int rm_rf_at(int dir_fd, const char *name);
/* Removes everything inside the directory fd (not the directory itself). */
int rm_rf_children(int fd);
