/* Layer extraction with our own path checks. libarchive is used only on its
 * read side, as two stacked readers: a raw decompressor over the blob fd
 * (hashing the compressed bytes) feeding a tar reader (hashing the
 * decompressed bytes for the diff ID and enforcing size and ratio caps).
 * Every file is created with *at() calls relative to a parent fd obtained
 * with openat2(RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS), so neither "..", nor an
 * absolute path, nor a symlink planted earlier in the layer can reach
 * outside the layer root; such entries are refused, not rewritten. */
#include "image-layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fileio.h"
#include "hash.h"
#include "image-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

#define WHITEOUT_PREFIX ".wh."
#define WHITEOUT_OPAQUE ".wh..wh..opq"
#define OVERLAY_OPAQUE_XATTR "trusted.overlay.opaque"

int image_tar_path_normalize(const char *path, size_t max_path, char **ret, Error *err) {
        if (isempty(path))
                return error_set(err, -EINVAL, "entry with an empty path");
        size_t n = strlen(path);
        if (n > max_path)
                return error_set(err, -ENAMETOOLONG, "entry path is longer than %zu bytes",
                                 max_path);
        if (path[0] == '/')
                return error_set(err, -EINVAL, "entry \"%s\": absolute path refused", path);

        _cleanup_free_ char *out = malloc(n + 2);
        if (!out)
                return -ENOMEM;
        size_t len = 0, depth = 0;
        for (const char *c = path; *c;) {
                const char *e = strchr(c, '/');
                size_t cl = e ? (size_t)(e - c) : strlen(c);
                if (cl == 2 && c[0] == '.' && c[1] == '.')
                        return error_set(err, -EINVAL, "entry \"%s\": \"..\" component refused",
                                         path);
                if (cl > 255)
                        return error_set(err, -ENAMETOOLONG,
                                         "entry \"%s\": path component longer than 255 "
                                         "bytes",
                                         path);
                if (cl > 0 && !(cl == 1 && c[0] == '.')) {
                        if (++depth > IMAGE_MAX_PATH_DEPTH)
                                return error_set(err, -ENAMETOOLONG,
                                                 "entry \"%s\": nested deeper than %d "
                                                 "directories",
                                                 path, IMAGE_MAX_PATH_DEPTH);
                        if (len > 0)
                                out[len++] = '/';
                        memcpy(out + len, c, cl);
                        len += cl;
                }
                if (!e)
                        break;
                c = e + 1;
        }
        if (len == 0)
                out[len++] = '.';
        out[len] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

typedef struct DirTime {
        char *path;
        struct timespec ts[2];
} DirTime;

typedef struct Unpack {
        int blob_fd;
        int root_fd;
        const ImageLimits *limits;
        uint64_t *budget;
        Error *err;
        struct archive *decomp;
        EVP_MD_CTX *blob_md, *diff_md;
        uint64_t compressed, decompressed, entries;
        uint64_t extracted; /* logical size of the regular files written, holes included */
        bool root;
        int pull_error; /* a cap or decompression error seen by tar_read */
        bool cancelled; /* limits->cancel seen by blob_read */
        DirTime *dirs;
        size_t n_dirs;
        char buf[128 * 1024];
} Unpack;

static la_ssize_t blob_read(struct archive *a, void *userdata, const void **buf) {
        Unpack *u = userdata;
        if (u->limits->cancel && atomic_load_explicit(u->limits->cancel, memory_order_relaxed)) {
                u->cancelled = true;
                archive_set_error(a, ECANCELED, "layer unpacking cancelled");
                return -1;
        }
        for (;;) {
                ssize_t n = read(u->blob_fd, u->buf, sizeof(u->buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        archive_set_error(a, errno, "reading layer blob: %s", strerror(errno));
                        return -1;
                }
                u->compressed += (uint64_t)n;
                if (u->blob_md && sha256_update(u->blob_md, u->buf, (size_t)n) < 0)
                        return -1;
                *buf = u->buf;
                return n;
        }
}

/* Next block of the decompressed stream, with every cap enforced. */
static int pull(Unpack *u, const void **ret, size_t *ret_size) {
        const void *b;
        size_t sz;
        la_int64_t off;
        int r = archive_read_data_block(u->decomp, &b, &sz, &off);
        if (r == ARCHIVE_EOF) {
                *ret_size = 0;
                return 0;
        }
        if (r < ARCHIVE_WARN) {
                const char *m = archive_error_string(u->decomp);
                return error_set(u->err, -EBADMSG, "corrupt or truncated compressed data: %s",
                                 m ? m : "unknown error");
        }
        u->decompressed += sz;
        if (u->decompressed > u->limits->max_layer_size)
                return error_set(u->err, -EFBIG,
                                 "layer decompresses to more than %llu bytes (limit)",
                                 (unsigned long long)u->limits->max_layer_size);
        if (u->budget && u->decompressed > *u->budget)
                return error_set(u->err, -EFBIG,
                                 "image decompresses to more than the total limit of "
                                 "%llu bytes",
                                 (unsigned long long)u->limits->max_total_size);
        if (u->decompressed > u->limits->ratio_min_size &&
            u->decompressed / (u->compressed ? u->compressed : 1) > u->limits->max_ratio)
                return error_set(u->err, -EFBIG,
                                 "layer decompression ratio exceeds %llu:1 (%llu bytes "
                                 "from %llu); refused as a decompression bomb",
                                 (unsigned long long)u->limits->max_ratio,
                                 (unsigned long long)u->decompressed,
                                 (unsigned long long)u->compressed);
        if (u->diff_md && sha256_update(u->diff_md, b, sz) < 0)
                return -EIO;
        *ret = b;
        *ret_size = sz;
        return 0;
}

static la_ssize_t tar_read(struct archive *a, void *userdata, const void **buf) {
        Unpack *u = userdata;
        size_t sz = 0;
        int r = pull(u, buf, &sz);
        if (r < 0) {
                u->pull_error = r;
                archive_set_error(a, -r, "%s", u->err ? u->err->message : "read error");
                return -1;
        }
        return (la_ssize_t)sz;
}

static int split_path(const char *path, char **ret_parent, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        char *parent = slash ? strndup_safe(path, (size_t)(slash - path)) : strdup("");
        if (!parent)
                return -ENOMEM;
        *ret_parent = parent;
        *ret_name = slash ? slash + 1 : path;
        return 0;
}

/* Opens the directory parent (normalized, "" = root) below root_fd, creating
 * missing components as 0755 directories. Never follows a symlink. */
static int open_parent(Unpack *u, const char *entry, const char *parent, int *ret_fd) {
        int fd;
        if (isempty(parent)) {
                fd = fcntl(u->root_fd, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return -errno;
                *ret_fd = fd;
                return 0;
        }
        fd = openat2_in_root(u->root_fd, parent, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
        if (fd == -ENOENT) {
                /* Walk and create component by component. */
                _cleanup_close_ int cur = fcntl(u->root_fd, F_DUPFD_CLOEXEC, 3);
                _cleanup_free_ char *p = strdup(parent);
                if (cur < 0 || !p)
                        return cur < 0 ? -errno : -ENOMEM;
                fd = 0;
                for (char *c = p, *next; c; c = next) {
                        next = strchr(c, '/');
                        if (next)
                                *next++ = 0;
                        int nfd =
                                openat2_in_root(cur, c, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
                        if (nfd == -ENOENT) {
                                if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
                                        return error_set(u->err, -errno,
                                                         "entry \"%s\": cannot create "
                                                         "parent directory: %m",
                                                         entry);
                                nfd = openat2_in_root(cur, c, O_PATH | O_DIRECTORY,
                                                      RESOLVE_NO_SYMLINKS);
                        }
                        if (nfd < 0) {
                                fd = nfd;
                                break;
                        }
                        safe_close(cur);
                        cur = nfd;
                }
                if (fd == 0)
                        fd = TAKE_FD(cur);
        }
        if (fd == -ELOOP || fd == -EXDEV)
                return error_set(u->err, -ELOOP,
                                 "entry \"%s\": its parent path \"%s\" passes through a "
                                 "symbolic link; refused",
                                 entry, parent);
        if (fd == -ENOTDIR)
                return error_set(u->err, -ENOTDIR, "entry \"%s\": parent \"%s\" is not a directory",
                                 entry, parent);
        if (fd < 0)
                return error_set(u->err, fd, "entry \"%s\": cannot open parent \"%s\": %s", entry,
                                 parent, strerror(-fd));
        *ret_fd = fd;
        return 0;
}

/* Makes room for a new entry: returns 1 if a directory is already there and
 * want_dir is set (kept, as tar does), 0 when the name is free. */
static int clear_slot(int parent_fd, const char *name, bool want_dir) {
        struct stat st;
        if (fstatat(parent_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (want_dir && S_ISDIR(st.st_mode))
                return 1;
        return rm_rf_at(parent_fd, name);
}

static int check_perm(Unpack *u, int r) {
        /* Unprivileged unpacking (tests) cannot chown or mknod: not fatal. */
        if ((r == -EPERM || r == -EINVAL) && !u->root)
                return 0;
        return r;
}

static int apply_xattrs(Unpack *u, int fd, struct archive_entry *e) {
        const char *name;
        const void *value;
        size_t size;
        archive_entry_xattr_reset(e);
        while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
                if (!name || startswith(name, "trusted.overlay."))
                        continue; /* a layer must not steer overlayfs */
                if (fsetxattr(fd, name, value, size, 0) < 0)
                        log_debug("Ignoring xattr \"%s\" of \"%s\": %m", name,
                                  archive_entry_pathname(e));
        }
        return 0;
}

static int apply_owner_mode(Unpack *u, int fd, struct archive_entry *e, const char *path) {
        if (fchown(fd, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e)) < 0 &&
            check_perm(u, -errno) < 0)
                return error_set(u->err, -errno, "entry \"%s\": chown: %m", path);
        /* After chown, which clears setuid/setgid bits. */
        if (fchmod(fd, archive_entry_perm(e) & 07777) < 0)
                return error_set(u->err, -errno, "entry \"%s\": chmod: %m", path);
        return apply_xattrs(u, fd, e);
}

static void entry_times(struct archive_entry *e, struct timespec ts[2]) {
        ts[0] = (struct timespec){ .tv_sec = archive_entry_atime_is_set(e) ? archive_entry_atime(e)
                                                                           : archive_entry_mtime(e),
                                   .tv_nsec = archive_entry_atime_is_set(e)
                                                      ? archive_entry_atime_nsec(e)
                                                      : archive_entry_mtime_nsec(e) };
        ts[1] = (struct timespec){ .tv_sec = archive_entry_mtime(e),
                                   .tv_nsec = archive_entry_mtime_nsec(e) };
}

/* Counts a regular file's logical size against the limits before anything of
 * it is written. The tar stream's size is not enough: a sparse entry carries
 * only its data, but its holes become file size on disk here and real bytes
 * in the copy fallback. */
static int count_extracted(Unpack *u, const char *path, uint64_t size) {
        if (size > u->limits->max_layer_size || u->extracted > u->limits->max_layer_size - size)
                return error_set(u->err, -EFBIG,
                                 "entry \"%s\" (%llu bytes) makes the layer larger than "
                                 "%llu bytes (limit)",
                                 path, (unsigned long long)size,
                                 (unsigned long long)u->limits->max_layer_size);
        if (u->budget && (size > *u->budget || u->extracted > *u->budget - size))
                return error_set(u->err, -EFBIG,
                                 "entry \"%s\" (%llu bytes) makes the image larger than "
                                 "the total limit of %llu bytes",
                                 path, (unsigned long long)size,
                                 (unsigned long long)u->limits->max_total_size);
        u->extracted += size;
        return 0;
}

#define UNPACK_EARLY_WRITEBACK_MIN (256 * 1024)

static int extract_regular(Unpack *u, struct archive *tar, struct archive_entry *e, int parent_fd,
                           const char *name, const char *path) {
        uint64_t size = archive_entry_size_is_set(e) && archive_entry_size(e) > 0
                                ? (uint64_t)archive_entry_size(e)
                                : 0;
        int r = count_extracted(u, path, size);
        if (r < 0)
                return r;
        r = clear_slot(parent_fd, name, false);
        if (r < 0)
                return error_set(u->err, r, "entry \"%s\": cannot replace: %s", path, strerror(-r));
        _cleanup_close_ int fd =
                openat(parent_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return error_set(u->err, -errno, "entry \"%s\": cannot create: %m", path);
        for (;;) {
                const void *b;
                size_t sz;
                la_int64_t off;
                int q = archive_read_data_block(tar, &b, &sz, &off);
                if (q == ARCHIVE_EOF)
                        break;
                if (q < ARCHIVE_WARN) {
                        const char *m = archive_error_string(tar);
                        if (u->pull_error)
                                return u->pull_error;
                        return error_set(u->err, -EBADMSG,
                                         "entry \"%s\": truncated or corrupt data: %s", path,
                                         m ? m : "read error");
                }
                if (off < 0 || (uint64_t)off > size || sz > size - (uint64_t)off)
                        return error_set(u->err, -EBADMSG, "entry \"%s\": bad offset", path);
                r = pwrite_all(fd, b, sz, (uint64_t)off);
                if (r < 0)
                        return error_set(u->err, r, "entry \"%s\": write: %s", path, strerror(-r));
        }
        if (archive_entry_size_is_set(e) && ftruncate(fd, archive_entry_size(e)) < 0)
                return error_set(u->err, -errno, "entry \"%s\": truncate: %m", path);
        /* When the store flushes the whole layer before committing it
         * (store_layer_unpack_tmp() without a boot ID), starting a big
         * file's write-back now lets the disk work while the rest is
         * unpacked, so that flush finds little left. Small files are left to
         * it: one request each would cost more than they save. */
        if (u->limits->early_writeback && size >= UNPACK_EARLY_WRITEBACK_MIN)
                (void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        r = apply_owner_mode(u, fd, e, path);
        if (r < 0)
                return r;
        struct timespec ts[2];
        entry_times(e, ts);
        if (futimens(fd, ts) < 0)
                return error_set(u->err, -errno, "entry \"%s\": set times: %m", path);
        return 0;
}

static int extract_dir(Unpack *u, struct archive_entry *e, int parent_fd, const char *name,
                       const char *path) {
        int r = clear_slot(parent_fd, name, true);
        if (r < 0)
                return error_set(u->err, r, "entry \"%s\": cannot replace: %s", path, strerror(-r));
        if (r == 0 && mkdirat(parent_fd, name, 0700) < 0)
                return error_set(u->err, -errno, "entry \"%s\": mkdir: %m", path);
        _cleanup_close_ int fd =
                openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return error_set(u->err, -errno, "entry \"%s\": open: %m", path);
        r = apply_owner_mode(u, fd, e, path);
        if (r < 0)
                return r;
        /* Times last: creating children would bump them again. */
        DirTime *n = reallocarray(u->dirs, u->n_dirs + 1, sizeof(DirTime));
        if (!n)
                return -ENOMEM;
        u->dirs = n;
        u->dirs[u->n_dirs].path = strdup(path);
        if (!u->dirs[u->n_dirs].path)
                return -ENOMEM;
        entry_times(e, u->dirs[u->n_dirs].ts);
        u->n_dirs++;
        return 0;
}

static int set_times_nofollow(Unpack *u, int parent_fd, const char *name, struct archive_entry *e,
                              const char *path) {
        struct timespec ts[2];
        entry_times(e, ts);
        if (utimensat(parent_fd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
                return error_set(u->err, -errno, "entry \"%s\": set times: %m", path);
        return 0;
}

static int extract_symlink(Unpack *u, struct archive_entry *e, int parent_fd, const char *name,
                           const char *path) {
        const char *target = archive_entry_symlink(e);
        if (!target)
                target = archive_entry_symlink_utf8(e);
        if (isempty(target))
                return error_set(u->err, -EINVAL, "entry \"%s\": symlink without target", path);
        if (strlen(target) > u->limits->max_path)
                return error_set(u->err, -ENAMETOOLONG, "entry \"%s\": symlink target too long",
                                 path);
        int r = clear_slot(parent_fd, name, false);
        if (r < 0)
                return error_set(u->err, r, "entry \"%s\": cannot replace: %s", path, strerror(-r));
        /* The target is stored, never followed here: it is resolved inside the
         * container's root at run time. */
        if (symlinkat(target, parent_fd, name) < 0)
                return error_set(u->err, -errno, "entry \"%s\": symlink: %m", path);
        if (fchownat(parent_fd, name, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
                     AT_SYMLINK_NOFOLLOW) < 0 &&
            check_perm(u, -errno) < 0)
                return error_set(u->err, -errno, "entry \"%s\": chown: %m", path);
        return set_times_nofollow(u, parent_fd, name, e, path);
}

static int extract_hardlink(Unpack *u, struct archive_entry *e, int parent_fd, const char *name,
                            const char *path, const char *link) {
        _cleanup_free_ char *target = NULL, *tparent = NULL;
        _cleanup_close_ int tfd = -EBADF;
        const char *tname;
        int r = image_tar_path_normalize(link, u->limits->max_path, &target, u->err);
        if (r < 0)
                return error_prefix(u->err, r, "entry \"%s\": hard link target", path);
        if (streq(target, path))
                return 0;
        if (streq(target, "."))
                return error_set(u->err, -EINVAL, "entry \"%s\": hard link to the root", path);
        r = split_path(target, &tparent, &tname);
        if (r < 0)
                return r;
        /* Resolve the target's parent the same way: never through a symlink,
         * never outside this layer. Do not create anything for it. */
        if (isempty(tparent))
                tfd = fcntl(u->root_fd, F_DUPFD_CLOEXEC, 3);
        else
                tfd = openat2_in_root(u->root_fd, tparent, O_PATH | O_DIRECTORY,
                                      RESOLVE_NO_SYMLINKS);
        if (tfd < 0)
                return error_set(u->err, tfd == -EXDEV ? -ELOOP : tfd,
                                 "entry \"%s\": hard link target \"%s\" cannot be "
                                 "resolved inside the layer: %s",
                                 path, target, strerror(tfd == -EXDEV ? ELOOP : -tfd));
        struct stat st;
        if (fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return error_set(u->err, -errno,
                                 "entry \"%s\": hard link target \"%s\" does not exist in "
                                 "the layer",
                                 path, target);
        if (S_ISDIR(st.st_mode))
                return error_set(u->err, -EPERM, "entry \"%s\": hard link to directory \"%s\"",
                                 path, target);
        r = clear_slot(parent_fd, name, false);
        if (r < 0)
                return error_set(u->err, r, "entry \"%s\": cannot replace: %s", path, strerror(-r));
        /* No AT_SYMLINK_FOLLOW: a link to a symlink links the symlink itself. */
        if (linkat(tfd, tname, parent_fd, name, 0) < 0)
                return error_set(u->err, -errno, "entry \"%s\": link to \"%s\": %m", path, target);
        return 0;
}

static int extract_node(Unpack *u, struct archive_entry *e, int parent_fd, const char *name,
                        const char *path, mode_t type) {
        int r = clear_slot(parent_fd, name, false);
        if (r < 0)
                return error_set(u->err, r, "entry \"%s\": cannot replace: %s", path, strerror(-r));
        dev_t dev = type == S_IFIFO
                            ? 0
                            : makedev(archive_entry_rdevmajor(e), archive_entry_rdevminor(e));
        if (mknodat(parent_fd, name, type | (archive_entry_perm(e) & 07777), dev) < 0) {
                r = -errno;
                if (check_perm(u, r) == 0) {
                        log_debug("Skipping device node \"%s\": %s", path, strerror(-r));
                        return 0;
                }
                return error_set(u->err, r, "entry \"%s\": mknod: %s", path, strerror(-r));
        }
        if (fchownat(parent_fd, name, (uid_t)archive_entry_uid(e), (gid_t)archive_entry_gid(e),
                     AT_SYMLINK_NOFOLLOW) < 0 &&
            check_perm(u, -errno) < 0)
                return error_set(u->err, -errno, "entry \"%s\": chown: %m", path);
        if (fchmodat(parent_fd, name, archive_entry_perm(e) & 07777, 0) < 0)
                return error_set(u->err, -errno, "entry \"%s\": chmod: %m", path);
        return set_times_nofollow(u, parent_fd, name, e, path);
}

static int extract_whiteout(Unpack *u, int parent_fd, const char *name, const char *path) {
        if (streq(name, WHITEOUT_OPAQUE)) {
                _cleanup_close_ int fd = openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return error_set(u->err, -errno, "entry \"%s\": %m", path);
                if (fsetxattr(fd, OVERLAY_OPAQUE_XATTR, "y", 1, 0) < 0)
                        return error_set(u->err, -errno,
                                         "entry \"%s\": cannot mark the directory opaque "
                                         "(needs CAP_SYS_ADMIN and trusted xattrs): %m",
                                         path);
                return 0;
        }
        const char *target = name + strlen(WHITEOUT_PREFIX);
        if (startswith(name, WHITEOUT_PREFIX WHITEOUT_PREFIX))
                return 0; /* other AUFS metadata (.wh..wh.plnk, ...) carries nothing for us */
        if (isempty(target) || streq(target, ".") || streq(target, ".."))
                return error_set(u->err, -EINVAL, "entry \"%s\": invalid whiteout", path);
        int r = clear_slot(parent_fd, target, false);
        if (r < 0)
                return error_set(u->err, r, "entry \"%s\": cannot replace: %s", path, strerror(-r));
        if (mknodat(parent_fd, target, S_IFCHR | 0, makedev(0, 0)) < 0)
                return error_set(u->err, -errno,
                                 "entry \"%s\": cannot create overlay whiteout (needs "
                                 "CAP_MKNOD): %m",
                                 path);
        return 0;
}

static int extract_entry(Unpack *u, struct archive *tar, struct archive_entry *e) {
        _cleanup_free_ char *path = NULL, *parent = NULL;
        _cleanup_close_ int parent_fd = -EBADF;
        const char *name, *raw = archive_entry_pathname(e);
        int r;

        if (!raw)
                raw = archive_entry_pathname_utf8(e);
        r = image_tar_path_normalize(raw, u->limits->max_path, &path, u->err);
        if (r < 0)
                return r;
        if (streq(path, "."))
                return 0; /* the layer root itself: its metadata is ours */
        r = split_path(path, &parent, &name);
        if (r < 0)
                return r;
        r = open_parent(u, path, parent, &parent_fd);
        if (r < 0)
                return r;

        if (startswith(name, WHITEOUT_PREFIX))
                return extract_whiteout(u, parent_fd, name, path);

        const char *link = archive_entry_hardlink(e);
        if (!link)
                link = archive_entry_hardlink_utf8(e);
        if (link)
                return extract_hardlink(u, e, parent_fd, name, path, link);

        switch (archive_entry_filetype(e)) {
        case AE_IFREG:
                return extract_regular(u, tar, e, parent_fd, name, path);
        case AE_IFDIR:
                return extract_dir(u, e, parent_fd, name, path);
        case AE_IFLNK:
                return extract_symlink(u, e, parent_fd, name, path);
        case AE_IFCHR:
                return extract_node(u, e, parent_fd, name, path, S_IFCHR);
        case AE_IFBLK:
                return extract_node(u, e, parent_fd, name, path, S_IFBLK);
        case AE_IFIFO:
                return extract_node(u, e, parent_fd, name, path, S_IFIFO);
        default:
                log_debug("Skipping entry \"%s\" of unsupported type", path);
                return 0;
        }
}

static int apply_dir_times(Unpack *u) {
        for (size_t i = u->n_dirs; i > 0; i--) {
                DirTime *d = &u->dirs[i - 1];
                _cleanup_close_ int fd = openat2_in_root(
                        u->root_fd, d->path, O_RDONLY | O_DIRECTORY, RESOLVE_NO_SYMLINKS);
                if (fd == -ENOENT || fd == -ENOTDIR)
                        continue; /* replaced by a later entry */
                if (fd < 0)
                        return error_set(u->err, fd, "entry \"%s\": %s", d->path, strerror(-fd));
                if (futimens(fd, d->ts) < 0)
                        return error_set(u->err, -errno, "entry \"%s\": set times: %m", d->path);
        }
        return 0;
}

static void unpack_done(Unpack *u) {
        for (size_t i = 0; i < u->n_dirs; i++)
                free(u->dirs[i].path);
        free(u->dirs);
        EVP_MD_CTX_free(u->blob_md);
        EVP_MD_CTX_free(u->diff_md);
        if (u->decomp)
                (void)archive_read_free(u->decomp);
}

static int unpack_run(Unpack *u, const char *blob_digest, const char *diff_id) {
        _cleanup_archive_read_ struct archive *tar = NULL;
        struct archive_entry *e;
        int r;

        if (blob_digest && (r = sha256_new(&u->blob_md)) < 0)
                return r;
        if (diff_id && (r = sha256_new(&u->diff_md)) < 0)
                return r;

        u->decomp = archive_read_new();
        tar = archive_read_new();
        if (!u->decomp || !tar)
                return -ENOMEM;
        /* Compression detected by content; zstd through libzstd. */
        (void)archive_read_support_filter_gzip(u->decomp);
        (void)archive_read_support_filter_zstd(u->decomp);
        (void)archive_read_support_filter_xz(u->decomp);
        (void)archive_read_support_filter_bzip2(u->decomp);
        (void)archive_read_support_format_raw(u->decomp);
        if (archive_read_open(u->decomp, u, NULL, blob_read, NULL) != ARCHIVE_OK ||
            archive_read_next_header(u->decomp, &e) != ARCHIVE_OK) {
                const char *m = archive_error_string(u->decomp);
                return error_set(u->err, -EBADMSG, "cannot read layer: %s",
                                 m ? m : "empty or unrecognised data");
        }
        (void)archive_read_support_format_tar(tar);
        (void)archive_read_support_format_gnutar(tar);
        if (archive_read_open(tar, u, NULL, tar_read, NULL) != ARCHIVE_OK) {
                const char *m = archive_error_string(tar);
                return error_set(u->err, -EBADMSG, "layer is not a tar archive: %s",
                                 m ? m : "unknown error");
        }
        for (;;) {
                r = archive_read_next_header(tar, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN) {
                        const char *m = archive_error_string(tar);
                        if (u->pull_error)
                                return u->pull_error;
                        return error_set(u->err, -EBADMSG,
                                         "layer is not a valid tar archive (after %llu "
                                         "entries): %s",
                                         (unsigned long long)u->entries, m ? m : "unknown error");
                }
                if (++u->entries > u->limits->max_entries)
                        return error_set(u->err, -E2BIG, "layer has more than %llu entries (limit)",
                                         (unsigned long long)u->limits->max_entries);
                r = extract_entry(u, tar, e);
                if (r < 0)
                        return r;
        }
        r = apply_dir_times(u);
        if (r < 0)
                return r;

        /* Hash what follows the end-of-archive marker too: the diff ID covers
         * the whole stream, and so does the blob digest. */
        for (;;) {
                const void *b;
                size_t sz = 0;
                r = pull(u, &b, &sz);
                if (r < 0)
                        return r;
                if (sz == 0)
                        break;
        }
        for (;;) {
                const void *b;
                la_ssize_t n = blob_read(u->decomp, u, &b);
                if (n < 0)
                        return error_set(u->err, -EIO, "reading layer blob: %s",
                                         archive_error_string(u->decomp));
                if (n == 0)
                        break;
        }
        char got[72];
        if (u->blob_md) {
                if ((r = sha256_final_digest(u->blob_md, got)) < 0)
                        return r;
                if (!streq(got, blob_digest))
                        return error_set(u->err, -EBADMSG,
                                         "layer blob digest mismatch: expected %s, got %s",
                                         blob_digest, got);
        }
        if (u->diff_md) {
                if ((r = sha256_final_digest(u->diff_md, got)) < 0)
                        return r;
                if (!streq(got, diff_id))
                        return error_set(u->err, -EBADMSG,
                                         "layer content does not match its diff ID: "
                                         "expected %s, got %s",
                                         diff_id, got);
        }
        if (u->budget)
                *u->budget -= MAX(u->decompressed, u->extracted);
        return 0;
}

int image_layer_unpack(int blob_fd, int root_fd, const char *blob_digest, const char *diff_id,
                       const ImageLimits *limits, uint64_t *budget, Error *err) {
        ImageLimits def;
        if (!limits) {
                image_limits_default(&def);
                limits = &def;
        }
        Unpack *u = calloc(1, sizeof(Unpack));
        if (!u)
                return -ENOMEM;
        u->blob_fd = blob_fd;
        u->root_fd = root_fd;
        u->limits = limits;
        u->budget = budget;
        u->err = err;
        u->root = geteuid() == 0;
        int r = unpack_run(u, blob_digest, diff_id);
        /* Whatever error the cut stream caused downstream, it was the cancel. */
        if (r < 0 && u->cancelled) {
                if (err)
                        *err = (Error){};
                r = error_set(err, -ECANCELED, "layer unpacking cancelled");
        }
        if (r < 0 && err && !err->message[0])
                (void)error_set(err, r, "unpacking layer: %s", strerror(-r));
        unpack_done(u);
        free(u);
        return r;
}
