/* Mount helpers. */
#pragma once

/* Lazily unmounts every mount point at or below prefix (deepest first), as
 * /proc/self/mountinfo lists them, never following a symlink in the last
 * component. Returns the number unmounted, or -errno. */
int umount_below(const char *prefix);
