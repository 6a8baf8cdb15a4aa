/* Mount helpers. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Lazily unmounts every mount point at or below prefix (deepest first), as
 * /proc/self/mountinfo lists them, never following a symlink in the last
 * component. Returns the number unmounted, or -errno. */
int umount_below(const char *prefix);

/* Every lowerdir of every overlayfs mount /proc/self/mountinfo lists
 * (unescaped), in no particular order. */
int mount_overlay_lowerdirs(char ***ret);
/* The same for the overlayfs mounted at target only (its topmost layer
 * first; an empty list when none is), e.g. to mount it again from other
 * paths of the same layers. */
int mount_overlay_lowerdirs_at(const char *target, char ***ret);

/* A user namespace fd whose mapping is container IDs 0..len-1 to host IDs
 * host_id.. (UIDs and GIDs), for MOUNT_ATTR_IDMAP: a forked child unshares
 * it, the caller writes the maps, opens /proc/<pid>/ns/user and reaps the
 * child at once (microseconds; the child only waits on a pipe, as it is
 * forked from a process with threads). Returns the fd (O_CLOEXEC) or
 * -errno. */
int userns_fd_for_range(uint32_t host_id, uint32_t len);

/* Clones the mount tree at source (recursive: with its submounts), makes the
 * clone idmapped through userns_fd and attaches it at target, which must
 * exist and be of source's kind (directory or file). -errno of the first
 * step that failed: open_tree(2) (source), mount_setattr(2) (EINVAL: the
 * filesystem cannot be idmapped, or the kernel lacks idmapped mounts;
 * ENOSYS: no mount_setattr at all), move_mount(2) (target). */
int mount_idmapped_clone(const char *source, bool recursive, int userns_fd, const char *target);
