/* The image GC helper mode (image-gc.h): everything that reads or removes
 * files, in a process of its own. The store's own locks (images/.gc.lock
 * exclusive for removals) keep it from racing loads, pulls and rootfs
 * builds; image_store_remove() itself refuses an image a pod uses, so a pod
 * that started meanwhile is safe even after the selection was made. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "checkpoint.h"
#include "image-gc.h"
#include "image.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

static int fs_space(const char *path, uint64_t *ret_capacity, uint64_t *ret_available) {
        struct statfs sf;
        if (statfs(path, &sf) < 0)
                return -errno;
        *ret_capacity = (uint64_t)sf.f_blocks * (uint64_t)sf.f_frsize;
        *ret_available = (uint64_t)sf.f_bavail * (uint64_t)sf.f_frsize;
        return 0;
}

/* The digest a reference names now, or NULL. */
static char *resolve(ImageStore *s, const char *ref) {
        _cleanup_(image_freep) Image *im = NULL;
        Error ignore = {};
        if (image_store_get(s, ref, &im, &ignore) < 0)
                return NULL;
        return strdup(im->digest);
}

/* Removes one image and adds it to the result's "removed" with its reason. */
static int remove_one(ImageStore *s, const Image *im, const ImageUsers *users, const char *reason,
                      json_t *removed) {
        Error rerr = {};
        int r = image_store_remove(s, im->digest, users, &rerr);
        if (r == -EBUSY)
                return r; /* a pod started meanwhile */
        if (r < 0) {
                log_warning("Image GC: cannot remove %s: %s", im->digest, rerr.message);
                return r;
        }
        const char *name = im->names && im->names[0] ? im->names[0] : im->digest;
        _cleanup_free_ char *valid = utf8_make_valid(name, strlen(name));
        json_t *o = valid ? json_pack("{s:s, s:s, s:I, s:s}", "reason", reason, "digest",
                                      im->digest, "size", (json_int_t)im->size, "name", valid)
                          : NULL;
        if (json_array_append_new(removed, o) < 0)
                log_oom(); /* removed all the same; only the report lacks it */
        return 0;
}

static int set_u64(json_t *result, const char *key, uint64_t v) {
        return json_object_set_new(result, key, json_integer((json_int_t)v)) < 0 ? -ENOMEM : 0;
}

static int run(const char *root, const ImageGcPolicy *policy, char *const *pinned_refs,
               json_t *result, Error *gerr) {
        _cleanup_(image_store_freep) ImageStore *s = NULL;
        _cleanup_(image_users_done) ImageUsers users = {};
        _cleanup_strv_free_ char **in_use = NULL, **pinned = NULL;
        _cleanup_free_ char *images_dir = strprintf("%s/images", root);
        _cleanup_free_ char *pods_dir = strprintf("%s/pods", root);
        _cleanup_free_ ImageGcCandidate *cand = NULL;
        _cleanup_free_ size_t *order = NULL;
        Image **images = NULL;
        size_t n = 0;
        uint64_t capacity = 0, before = 0, available = 0;
        Error err = {};
        json_t *removed = json_array();
        int r;

        if (!removed || json_object_set_new(result, "removed", removed) < 0 || !images_dir ||
            !pods_dir)
                return error_set(gerr, -ENOMEM, "out of memory");
        /* Partial registry downloads no pull holds any more (a pull that
         * was killed): before the store's open would remove them silently,
         * so that the report says so. */
        uint64_t partial_bytes = 0;
        int partials = image_store_sweep_partials(root, &partial_bytes);
        if (partials > 0 && json_object_set_new(result, "partials",
                                                json_pack("{s:i, s:I}", "count", partials, "bytes",
                                                          (json_int_t)partial_bytes)) < 0)
                return error_set(gerr, -ENOMEM, "out of memory");
        r = image_store_open(root, NULL, &s, &err);
        if (r < 0)
                return error_set(gerr, r, "cannot open the image store: %s", err.message);
        r = fs_space(images_dir, &capacity, &before);
        if (r < 0)
                return error_set(gerr, r, "cannot statfs \"%s\": %s", images_dir, strerror(-r));
        available = before;
        uint64_t to_free = image_gc_bytes_to_free(policy, capacity, before);
        if (to_free == 0 && policy->max_age == 0)
                goto done;
        r = pod_checkpoints_image_users(pods_dir, &users);
        if (r < 0)
                return error_set(gerr, r, "cannot list the images pods use: %s", strerror(-r));
        for (size_t i = 0; i < users.n; i++) {
                char *d = resolve(s, users.uses[i].ref);
                if (d && strv_consume(&in_use, d) < 0) {
                        free(d);
                        return error_set(gerr, -ENOMEM, "out of memory");
                }
        }
        STRV_FOREACH(p, pinned_refs) {
                char *d = resolve(s, *p);
                if (d && strv_consume(&pinned, d) < 0) {
                        free(d);
                        return error_set(gerr, -ENOMEM, "out of memory");
                }
        }
        r = image_store_list(s, &images, &n, &err);
        if (r < 0)
                return error_set(gerr, r, "cannot list the images: %s", err.message);
        cand = calloc(n ?: 1, sizeof *cand);
        order = calloc(n ?: 1, sizeof *order);
        if (!cand || !order) {
                image_list_free(images, n);
                return error_set(gerr, -ENOMEM, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                Image *im = images[i];
                cand[i] = (ImageGcCandidate){
                        .digest = im->digest,
                        .size = im->size,
                        .in_use = strv_contains(in_use, im->digest),
                        .pinned = strv_contains(pinned, im->digest) ||
                                  image_gc_labels_pinned(im->config.labels),
                };
                if (image_store_times(s, im->digest, &cand[i].first_seen, &cand[i].last_used) < 0)
                        cand[i].in_use = true; /* cannot tell its age: keep it */
        }
        usec_t now = now_usec(CLOCK_REALTIME);
        /* kubelet's order: the age pass, then the space pass over what is
         * left (a removed candidate is marked in use: not selected again). */
        size_t k = image_gc_select_expired(policy, cand, n, now, order);
        for (size_t i = 0; i < k; i++)
                if (remove_one(s, images[order[i]], &users, "age", removed) >= 0) {
                        cand[order[i]].in_use = true;
                        (void)fs_space(images_dir, &capacity, &available);
                }
        if (to_free > 0) {
                k = image_gc_select(policy, cand, n, now, UINT64_MAX, order);
                uint64_t target = before + to_free;
                for (size_t i = 0; i < k && available < target; i++)
                        if (remove_one(s, images[order[i]], &users, "space", removed) >= 0)
                                (void)fs_space(images_dir, &capacity, &available);
        }
        image_list_free(images, n);
done:
        if (set_u64(result, "capacity", capacity) < 0 || set_u64(result, "before", before) < 0 ||
            set_u64(result, "after", available) < 0)
                return error_set(gerr, -ENOMEM, "out of memory");
        return 0;
}

static int run_image_gc(const void *args, json_t *result, Error *err) {
        const ImageGcArgs *a = args;
        if (a->high_percent > 100 || a->low_percent > a->high_percent)
                return error_set(err, -EINVAL, "invalid thresholds %" PRIu64 "%% and %" PRIu64 "%%",
                                 a->high_percent, a->low_percent);
        ImageGcPolicy p = { .high_percent = (unsigned)a->high_percent,
                            .low_percent = (unsigned)a->low_percent,
                            .min_age = a->min_age,
                            .max_age = a->max_age };
        return run(a->root_dir, &p, a->pinned, result, err);
}

const HelperMain image_gc_helper = {
        .mode = &image_gc_helper_mode,
        .run = run_image_gc,
};
