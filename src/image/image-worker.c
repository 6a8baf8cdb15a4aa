/* Workers: building a container's root filesystem (unpacking its layers,
 * then the overlay mount) runs in a helper process, this binary re-executed
 * in its "unpack-rootfs" helper mode (self-helper.h says why an exec and not
 * a fork), so the event loop only watches a pid (event_add_child) and reads
 * one short message from a pipe once the helper has exited. The helper gets
 * the image's manifest digest, never a tag: the caller resolved the image
 * once, and a re-tag in between must not mix two images in one container.
 * When every layer is unpacked already, the agent mounts the overlay
 * itself instead (image_rootfs_mount_unpacked(), below): that is one
 * mount(2), and the helper's exec cost ~10 ms of each start.
 *
 * The helper's arguments are image_unpack_rootfs_helper_mode's table below;
 * its result is helper.h's, read from its stdout once it has exited. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image-internal.h"
#include "fileio.h"
#include "image-util.h"
#include "log.h"
#include "helper.h"
#include "string-util.h"
#include "strv.h"

int store_overlay_options(ImageStore *s, const Image *im, const char *upper_dir,
                          const char *work_dir, char **ret, Error *err) {
        _cleanup_free_ char *opts = NULL;
        size_t len = 0, cap = 0;
        int r;

        if (strchr(upper_dir, ',') || strchr(work_dir, ',') || strchr(upper_dir, ':'))
                return error_set(err, -EINVAL, "overlay directories must not contain ',' or ':'");
        const char *lower = "lowerdir=";
        if ((r = strbuf_append(&opts, &len, &cap, lower, strlen(lower))) < 0)
                return r;
        for (size_t i = im->manifest.n_layers; i > 0; i--) {
                _cleanup_free_ char *p = image_store_layer_path(s, im->chain_ids[i - 1]);
                if (!p)
                        return -ENOMEM;
                if ((i < im->manifest.n_layers &&
                     (r = strbuf_append(&opts, &len, &cap, ":", 1)) < 0) ||
                    (r = strbuf_append(&opts, &len, &cap, p, strlen(p))) < 0)
                        return r;
        }
        _cleanup_free_ char *rest = strprintf(",upperdir=%s,workdir=%s", upper_dir, work_dir);
        if (!rest || (r = strbuf_append(&opts, &len, &cap, rest, strlen(rest))) < 0)
                return -ENOMEM;
        if (len > MOUNT_OPTIONS_MAX)
                return -E2BIG;
        *ret = TAKE_PTR(opts);
        return 0;
}

/* What can be decided and done on the event loop without blocking: the
 * image from the in-memory index, one fstatat() per layer, one mount(2).
 * Everything else (unpacking, waiting for a prune's lock, the copy
 * fallback, reporting why an image cannot be used) stays the helper's.
 *
 * What the mount touches, and why no container can influence it: the
 * lowerdirs are <root-dir>/layers/<chain ID> with the chain IDs of the
 * store's own index entry for the digest (computed by the store from the
 * verified config's diff IDs when the image was stored, never read from a
 * manifest or pod), each checked to be a directory and not a symlink;
 * target, upper and work are in the attempt directory the caller has just
 * removed and re-created under the agent's pod directory. No container
 * sees that directory before runc creates this attempt's container (its
 * termination log is bind-mounted into the container only then), and a
 * container of an earlier attempt sees only its own attempt's files. */
int image_rootfs_mount_unpacked(ImageStore *s, const ImageRootfsJob *job, Error *err) {
        _cleanup_(image_freep) Image *im = NULL;
        _cleanup_close_ int gc = -EBADF;
        _cleanup_free_ char *opts = NULL;
        int r;

        if (!image_digest_is_valid(job->digest))
                return error_set(err, -EINVAL, "\"%s\" is not an image digest", strna(job->digest));
        /* Shared, as the helper holds it: a prune (exclusive) cannot remove
         * a layer between the check below and the mount; once mounted, the
         * layers are in mountinfo, which prune spares. Never waited for
         * here: a prune in progress sends this start to the helper. */
        r = store_lock(s, GC_LOCK, LOCK_SH | LOCK_NB, &gc, err);
        if (r < 0)
                return error_set(err, r, "the image store is locked by a prune");
        /* Again, under the lock: an image removed since the caller looked
         * it up fails in the helper with the message it always had. */
        if ((r = image_store_get(s, job->digest, &im, err)) < 0)
                return r;
        if (im->manifest.n_layers == 0)
                return error_set(err, -ENOENT, "the image has no layers to mount");
        for (size_t i = 0; i < im->manifest.n_layers; i++)
                if (!store_layer_exists(s, im->chain_ids[i]))
                        return error_set(err, -ENOENT, "layer %s is not unpacked",
                                         im->chain_ids[i]);
        r = store_overlay_options(s, im, job->upper_dir, job->work_dir, &opts, err);
        if (r < 0)
                return error_set(err, r, "overlay options: %s", strerror(-r));
        if ((r = mkdir_p(job->target, 0755)) < 0 || (r = mkdir_p(job->upper_dir, 0755)) < 0 ||
            (r = mkdir_p(job->work_dir, 0700)) < 0)
                return error_set(err, r, "cannot create rootfs directories: %s", strerror(-r));
        if (mount("overlay", job->target, "overlay", 0, opts) < 0)
                return error_set(err, -errno, "cannot mount overlayfs on \"%s\": %m", job->target);
        return 0;
}

static void orphan_unmount(void *userdata) {
        _cleanup_free_ char *target = userdata;
        Error err = {};

        /* Killed after its mount() and before its exit, the helper would
         * leave the rootfs mounted for a container that will not run. */
        if (target && image_rootfs_umount(target, &err) < 0)
                log_debug("Cannot unmount \"%s\" after an aborted image worker: %s", target,
                          err.message);
}

static const HelperArg unpack_rootfs_args[] = {
        HELPER_ARG_STRING(ImageUnpackRootfsArgs, store, "store", true),
        HELPER_ARG_U64(ImageUnpackRootfsArgs, max_layer_size, "max-layer-size", true),
        HELPER_ARG_U64(ImageUnpackRootfsArgs, max_total_size, "max-total-size", true),
        HELPER_ARG_U64(ImageUnpackRootfsArgs, max_ratio, "max-ratio", true),
        HELPER_ARG_U64(ImageUnpackRootfsArgs, ratio_min_size, "ratio-min-size", true),
        HELPER_ARG_U64(ImageUnpackRootfsArgs, max_entries, "max-entries", true),
        HELPER_ARG_U64(ImageUnpackRootfsArgs, max_path, "max-path", true),
        HELPER_ARG_STRING(ImageUnpackRootfsArgs, digest, "digest", true),
        HELPER_ARG_STRING(ImageUnpackRootfsArgs, target, "target", true),
        HELPER_ARG_STRING(ImageUnpackRootfsArgs, upper_dir, "upper-dir", true),
        HELPER_ARG_STRING(ImageUnpackRootfsArgs, work_dir, "work-dir", true),
};

const HelperMode image_unpack_rootfs_helper_mode =
        HELPER_MODE_INIT("unpack-rootfs", ImageUnpackRootfsArgs, unpack_rootfs_args);

int image_rootfs_start(ImageStore *s, Event *e, const ImageRootfsJob *job, child_done_t done,
                       void *userdata, ImageWorker *ret, Error *err) {
        _cleanup_free_ char *target = NULL;
        const ImageLimits *l = &s->limits;
        Child *child = NULL;

        if (!image_digest_is_valid(job->digest))
                return error_set(err, -EINVAL, "invalid image digest \"%s\"", strna(job->digest));
        target = strdup(job->target);
        if (!target)
                return error_set(err, -ENOMEM, "out of memory");
        ImageUnpackRootfsArgs args = {
                .store = s->root,
                .max_layer_size = l->max_layer_size,
                .max_total_size = l->max_total_size,
                .max_ratio = l->max_ratio,
                .ratio_min_size = l->ratio_min_size,
                .max_entries = l->max_entries,
                .max_path = (uint64_t)l->max_path,
                .digest = job->digest,
                .target = job->target,
                .upper_dir = job->upper_dir,
                .work_dir = job->work_dir,
        };
        /* Its log lines go where the agent's go (stderr not captured). */
        HelperSpawnOptions o = { .mode = &image_unpack_rootfs_helper_mode, .args = &args };
        int r = helper_spawn(e, &o, done, userdata, &child);
        if (r < 0)
                return error_set(err, r, "cannot start image worker: %s", strerror(-r));
        *ret = (ImageWorker){ .child = child, .target = TAKE_PTR(target) };
        return 0;
}

int image_worker_finish(ImageWorker *w, Error *err) {
        int r = helper_child_result(w->child, "image worker", NULL, err);

        w->child = child_free(w->child);
        w->target = mfree(w->target);
        return r < 0 ? r : 0;
}

void image_worker_abort(ImageWorker *w) {
        if (w->child)
                /* The loop reaps it and then unmounts what it may have
                 * mounted; nothing here waits. */
                child_free_then(TAKE_PTR(w->child), orphan_unmount, TAKE_PTR(w->target));
        w->target = mfree(w->target);
}

/* Here, not in image-rootfs.c: the agent unmounts (adoption, aborted
 * workers) and mounts only what image_rootfs_mount_unpacked() can; all
 * else is mounted in the helper (image-worker-helper.c). */
int image_rootfs_umount(const char *target, Error *err) {
        if (umount2(target, UMOUNT_NOFOLLOW) == 0)
                return 0;
        if (errno == EINVAL || errno == ENOENT)
                return 0; /* not mounted (any more) */
        if (errno == EBUSY && umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                return 0;
        return error_set(err, -errno, "cannot unmount \"%s\": %m", target);
}
