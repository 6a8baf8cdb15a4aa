/* The walk is relative to directory fds (openat, fstatat with
 * AT_SYMLINK_NOFOLLOW), so a container renaming or replacing entries in its
 * writable layer meanwhile cannot lead it outside the tree: at worst an
 * entry is missed or counted late. */
#include "disk-usage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

int disk_usage_statfs(const char *path, FsInfo *ret) {
        struct statvfs sv;
        if (statvfs(path, &sv) < 0)
                return -errno;
        *ret = (FsInfo){
                .capacity = (uint64_t)sv.f_blocks * sv.f_frsize,
                .used = (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize,
                .available = (uint64_t)sv.f_bavail * sv.f_frsize,
                .inodes = sv.f_files,
                .inodes_free = sv.f_ffree,
        };
        return 0;
}

typedef struct Walk {
        dev_t dev;
        void *seen; /* tsearch tree of hard-linked inodes already counted */
        DiskUsage du;
} Walk;

typedef struct SeenInode {
        dev_t dev;
        ino_t ino;
} SeenInode;

static int seen_compare(const void *a, const void *b) {
        const SeenInode *x = a, *y = b;
        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* true when st was counted before (a second link to it). */
static bool seen_before(Walk *w, const struct stat *st) {
        if (S_ISDIR(st->st_mode) || st->st_nlink < 2)
                return false;
        SeenInode *k = malloc(sizeof *k);
        if (!k)
                return false; /* counting twice beats failing */
        *k = (SeenInode){ .dev = st->st_dev, .ino = st->st_ino };
        SeenInode **found = tsearch(k, &w->seen, seen_compare);
        if (found && *found != k) {
                free(k);
                return true;
        }
        if (!found)
                free(k);
        return false;
}

static void count(Walk *w, const struct stat *st) {
        if (seen_before(w, st))
                return;
        w->du.bytes += (uint64_t)st->st_blocks * 512;
        w->du.inodes++;
}

/* name below parent_fd. One open directory per level: a tree deeper than
 * DISK_USAGE_MAX_DEPTH (or than the fd limit) is counted down to there, so
 * a container cannot make the helper run out of stack. */
static void walk_dir(Walk *w, int parent_fd, const char *name, unsigned depth) {
        _cleanup_closedir_ DIR *d = NULL;
        if (depth >= DISK_USAGE_MAX_DEPTH || opendir_fd(parent_fd, name, O_NOFOLLOW, &d) < 0)
                return;
        FOREACH_DIRENT(de, d) {
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile */
                if (st.st_dev != w->dev)
                        continue; /* a mount point: another filesystem's usage */
                count(w, &st);
                if (S_ISDIR(st.st_mode))
                        walk_dir(w, dirfd(d), de->d_name, depth + 1);
        }
}

int disk_usage_walk(const char *path, DiskUsage *ret) {
        Walk w = {};
        struct stat st;

        if (stat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        w.dev = st.st_dev;
        count(&w, &st);
        walk_dir(&w, AT_FDCWD, path, 0);
        tdestroy(w.seen, free);
        w.du.valid = true;
        *ret = w.du;
        return 0;
}

static const HelperArg disk_usage_args[] = {
        HELPER_ARG_STRV(DiskUsageArgs, dirs, "dir", true),
};

const HelperMode disk_usage_helper_mode =
        HELPER_MODE_INIT("disk-usage", DiskUsageArgs, disk_usage_args);

static int run_disk_usage(const void *args, json_t *result, Error *err) {
        const DiskUsageArgs *a = args;
        json_t *usage = json_array();

        if (!usage || json_object_set_new(result, "usage", usage) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        STRV_FOREACH(d, a->dirs) {
                DiskUsage du;
                json_t *v = disk_usage_walk(*d, &du) < 0 ? json_null()
                                                         : json_pack("[I,I]", (json_int_t)du.bytes,
                                                                     (json_int_t)du.inodes);
                if (json_array_append_new(usage, v) < 0)
                        return error_set(err, -ENOMEM, "out of memory");
        }
        return 0;
}

const HelperMain disk_usage_helper = {
        .mode = &disk_usage_helper_mode,
        .run = run_disk_usage,
};

int disk_usage_parse_result(const json_t *result, size_t n, DiskUsage *ret) {
        json_t *usage = json_object_get(result, "usage");

        if (!json_is_array(usage) || json_array_size(usage) != n)
                return -EBADMSG;
        for (size_t i = 0; i < n; i++) {
                json_t *v = json_array_get(usage, i);
                if (json_is_null(v)) {
                        ret[i] = (DiskUsage){};
                        continue;
                }
                json_t *b = json_array_get(v, 0), *in = json_array_get(v, 1);
                if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(b) ||
                    !json_is_integer(in) || json_integer_value(b) < 0 || json_integer_value(in) < 0)
                        return -EBADMSG;
                ret[i] = (DiskUsage){ .valid = true,
                                      .bytes = (uint64_t)json_integer_value(b),
                                      .inodes = (uint64_t)json_integer_value(in) };
        }
        return 0;
}
