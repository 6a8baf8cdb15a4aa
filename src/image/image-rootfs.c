/* Container root filesystems: overlayfs over the image's layer dirs, or
 * the copy fallback that merges the layers (overlay-format whiteouts and
 * opaque dirs applied) into the upper dir and bind-mounts it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "image-internal.h"
#include "image-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

const char *image_rootfs_mode_to_string(ImageRootfsMode m) {
        static const char *const table[_IMAGE_ROOTFS_MODE_MAX] = {
                [IMAGE_ROOTFS_OVERLAY] = "overlay",
                [IMAGE_ROOTFS_COPY] = "copy",
        };
        return m >= 0 && m < _IMAGE_ROOTFS_MODE_MAX ? table[m] : NULL;
}

typedef struct Links {
        dev_t dev;
        ino_t ino;
        char *path; /* relative to the destination root */
} Links;

typedef struct Merge {
        int dst_root;
        Links *links;
        size_t n_links;
        Error *err;
} Merge;

static int copy_xattrs(int src, int dst) {
        char names[8192];
        ssize_t n = flistxattr(src, names, sizeof(names));
        if (n <= 0)
                return 0;
        for (char *p = names; p < names + n; p += strlen(p) + 1) {
                char value[8192];
                if (startswith(p, "trusted.overlay."))
                        continue;
                ssize_t v = fgetxattr(src, p, value, sizeof(value));
                if (v >= 0)
                        (void)fsetxattr(dst, p, value, (size_t)v, 0);
        }
        return 0;
}

static int copy_meta_fd(int src, int dst, const struct stat *st) {
        if (fchown(dst, st->st_uid, st->st_gid) < 0 && geteuid() == 0)
                return -errno;
        if (fchmod(dst, st->st_mode & 07777) < 0)
                return -errno;
        (void)copy_xattrs(src, dst);
        return 0;
}

static int copy_file(int src_dir, int dst_dir, const char *name, const struct stat *st) {
        _cleanup_close_ int in = openat(src_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int out =
                openat(dst_dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (in < 0 || out < 0)
                return -errno;
        off_t left = st->st_size;
        while (left > 0) {
                ssize_t n = copy_file_range(in, NULL, out, NULL, (size_t)MIN(left, 1 << 30), 0);
                if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP)) {
                        char buf[65536];
                        n = read(in, buf, sizeof(buf));
                        if (n > 0 && write_all(out, buf, (size_t)n) < 0)
                                return -errno;
                }
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                left -= n;
        }
        int r = copy_meta_fd(in, out, st);
        if (r < 0)
                return r;
        struct timespec ts[2] = { st->st_atim, st->st_mtim };
        return futimens(out, ts) < 0 ? -errno : 0;
}

static int merge_dir(Merge *m, int src, int dst, const char *rel);

static int merge_entry(Merge *m, int src, int dst, const char *name, const char *rel) {
        struct stat st, dst_st;
        _cleanup_free_ char *path = strprintf("%s%s%s", rel, *rel ? "/" : "", name);
        if (!path)
                return -ENOMEM;
        if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        bool have = fstatat(dst, name, &dst_st, AT_SYMLINK_NOFOLLOW) == 0;

        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0))
                return rm_rf_at(dst, name); /* whiteout */

        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int sfd =
                        openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sfd < 0)
                        return -errno;
                char opaque[2] = {};
                bool is_opaque = fgetxattr(sfd, "trusted.overlay.opaque", opaque, 1) == 1 &&
                                 opaque[0] == 'y';
                if (have && !S_ISDIR(dst_st.st_mode)) {
                        int r = rm_rf_at(dst, name);
                        if (r < 0)
                                return r;
                        have = false;
                }
                if (!have && mkdirat(dst, name, 0700) < 0)
                        return -errno;
                _cleanup_close_ int dfd =
                        openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (dfd < 0)
                        return -errno;
                if (have && is_opaque) {
                        int r = rm_rf_children(dfd);
                        if (r < 0)
                                return r;
                }
                int r = copy_meta_fd(sfd, dfd, &st);
                if (r < 0)
                        return r;
                r = merge_dir(m, sfd, dfd, path);
                if (r < 0)
                        return r;
                struct timespec ts[2] = { st.st_atim, st.st_mtim };
                return futimens(dfd, ts) < 0 ? -errno : 0;
        }

        if (have) {
                int r = rm_rf_at(dst, name);
                if (r < 0)
                        return r;
        }
        if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
                for (size_t i = 0; i < m->n_links; i++)
                        if (m->links[i].dev == st.st_dev && m->links[i].ino == st.st_ino &&
                            linkat(m->dst_root, m->links[i].path, dst, name, 0) == 0)
                                return 0;
                Links *n = reallocarray(m->links, m->n_links + 1, sizeof(Links));
                if (!n)
                        return -ENOMEM;
                m->links = n;
                n[m->n_links] = (Links){ .dev = st.st_dev, .ino = st.st_ino, .path = strdup(path) };
                if (!n[m->n_links].path)
                        return -ENOMEM;
                m->n_links++;
        }
        struct timespec ts[2] = { st.st_atim, st.st_mtim };
        if (S_ISREG(st.st_mode))
                return copy_file(src, dst, name, &st);
        if (S_ISLNK(st.st_mode)) {
                char target[4097];
                ssize_t n = readlinkat(src, name, target, sizeof(target) - 1);
                if (n < 0)
                        return -errno;
                target[n] = 0;
                if (symlinkat(target, dst, name) < 0)
                        return -errno;
        } else if (mknodat(dst, name, st.st_mode, st.st_rdev) < 0)
                return -errno;
        if (fchownat(dst, name, st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0 && geteuid() == 0)
                return -errno;
        if (!S_ISLNK(st.st_mode) && fchmodat(dst, name, st.st_mode & 07777, 0) < 0)
                return -errno;
        return utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

static int merge_dir(Merge *m, int src, int dst, const char *rel) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(src, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                r = merge_entry(m, dirfd(d), dst, de->d_name, rel);
                if (r < 0)
                        return error_set(m->err, r, "copying \"%s%s%s\": %s", rel, *rel ? "/" : "",
                                         de->d_name, strerror(-r));
        }
        return 0;
}

int image_rootfs_copy(ImageStore *s, const Image *image, const char *dest_dir, Error *err) {
        int r = mkdir_p(dest_dir, 0755);
        if (r < 0)
                return error_set(err, r, "cannot create \"%s\": %s", dest_dir, strerror(-r));
        _cleanup_close_ int dst = open(dest_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dst < 0)
                return error_set(err, -errno, "cannot open \"%s\": %m", dest_dir);
        for (size_t i = 0; i < image->manifest.n_layers; i++) {
                Merge m = { .dst_root = dst, .err = err };
                _cleanup_close_ int src = openat(s->layers_fd, image->chain_ids[i] + 7,
                                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (src < 0)
                        r = error_set(err, -errno, "layer %s is not unpacked: %m",
                                      image->chain_ids[i]);
                else
                        r = merge_dir(&m, src, dst, "");
                for (size_t k = 0; k < m.n_links; k++)
                        free(m.links[k].path);
                free(m.links);
                if (r < 0)
                        return r;
        }
        return 0;
}

int image_rootfs_mount(ImageStore *s, const char *ref, const char *target, const char *upper_dir,
                       const char *work_dir, ImageRootfsFlags flags, ImageRootfsMode *ret_mode,
                       Error *err) {
        _cleanup_(image_freep) Image *im = NULL;
        _cleanup_close_ int gc = -EBADF;
        _cleanup_free_ char *opts = NULL;
        int r;

        if ((r = image_store_unpack(s, ref, err)) < 0)
                return r;
        if ((r = store_lock(s, GC_LOCK, LOCK_SH, &gc, err)) < 0 ||
            (r = image_store_get(s, ref, &im, err)) < 0)
                return r;
        if ((r = mkdir_p(target, 0755)) < 0 || (r = mkdir_p(upper_dir, 0755)) < 0 ||
            (r = mkdir_p(work_dir, 0700)) < 0)
                return error_set(err, r, "cannot create rootfs directories: %s", strerror(-r));

        if (!(flags & IMAGE_ROOTFS_FORCE_COPY) && im->manifest.n_layers > 0) {
                r = store_overlay_options(s, im, upper_dir, work_dir, &opts, err);
                if (r < 0 && r != -E2BIG)
                        return r;
                if (r >= 0) {
                        if (mount("overlay", target, "overlay", 0, opts) == 0) {
                                if (ret_mode)
                                        *ret_mode = IMAGE_ROOTFS_OVERLAY;
                                return 0;
                        }
                        r = -errno;
                        if (flags & IMAGE_ROOTFS_NO_COPY)
                                return error_set(err, r, "cannot mount overlayfs on \"%s\": %s",
                                                 target, strerror(-r));
                        log_debug("overlayfs mount failed (%s); copying the layers instead",
                                  strerror(-r));
                } else if (flags & IMAGE_ROOTFS_NO_COPY)
                        return error_set(err, -E2BIG,
                                         "image has too many layers for one overlayfs mount");
        }
        r = image_rootfs_copy(s, im, upper_dir, err);
        if (r < 0)
                return r;
        if (mount(upper_dir, target, NULL, MS_BIND | MS_REC, NULL) < 0)
                return error_set(err, -errno, "cannot bind-mount \"%s\" on \"%s\": %m", upper_dir,
                                 target);
        if (ret_mode)
                *ret_mode = IMAGE_ROOTFS_COPY;
        return 0;
}
