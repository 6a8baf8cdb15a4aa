/* Mount helpers. */
#pragma once

/* Lazily unmounts every mount point at or below prefix (deepest first), as
 * /proc/self/mountinfo lists them, never following a symlink in the last
 * component. Returns the number unmounted, or -errno. */
int umount_below(const char *prefix);

/* Every lowerdir of every overlayfs mount /proc/self/mountinfo lists
 * (unescaped), in no particular order. */
int mount_overlay_lowerdirs(char ***ret);
