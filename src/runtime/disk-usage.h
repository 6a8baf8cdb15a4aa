/* Filesystem figures for the Summary API (docs/api.md): statfs() of a
 * filesystem (capacity, free space and inodes: one syscall, fine on the
 * loop) and du-style usage of a directory tree (a container's writable
 * layer, a log directory), which is a walk of unbounded length and so runs
 * in a helper process: this binary re-executed in its disk-usage helper
 * mode (helper.h), whose result disk_usage_parse_result() reads. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "helper.h"

typedef struct FsInfo {
        uint64_t capacity;  /* bytes */
        uint64_t used;      /* bytes in use (blocks − free blocks), as cAdvisor counts */
        uint64_t available; /* bytes an unprivileged user may still use */
        uint64_t inodes;
        uint64_t inodes_free;
} FsInfo;

/* statfs(path). 0 or -errno. */
int disk_usage_statfs(const char *path, FsInfo *ret);

typedef struct DiskUsage {
        bool valid;      /* false: the directory could not be walked */
        uint64_t bytes;  /* allocated blocks × 512, as du counts */
        uint64_t inodes; /* entries, the directory itself included */
} DiskUsage;

/* Walks path (not following symlinks, not crossing into other
 * filesystems, each hard-linked inode counted once per walk); entries
 * that vanish meanwhile are skipped, directories nested deeper than
 * DISK_USAGE_MAX_DEPTH below path are counted but not entered. Blocking:
 * for helpers and tests. */
#define DISK_USAGE_MAX_DEPTH 512
int disk_usage_walk(const char *path, DiskUsage *ret);

/* The disk-usage helper mode: disk_usage_walk() of each directory. Its
 * result has "usage", one member per directory in argument order:
 * [BYTES, INODES], or null for a directory it could not walk. */
typedef struct DiskUsageArgs {
        char *const *dirs;
} DiskUsageArgs;
extern const HelperMode disk_usage_helper_mode;
extern const HelperMain disk_usage_helper;

/* Reads the helper's result for n directories into ret[0..n-1]: -EBADMSG
 * unless "usage" has exactly n well-formed members. */
int disk_usage_parse_result(const json_t *result, size_t n, DiskUsage *ret);
