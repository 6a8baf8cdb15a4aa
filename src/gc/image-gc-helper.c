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

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s || *end)
                return -EINVAL;
        *ret = v;
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

/* Removes one image and reports it on stdout with the line's kind. */
static int remove_one(ImageStore *s, const Image *im, const ImageUsers *users, const char *kind) {
        Error rerr = {};
        int r = image_store_remove(s, im->digest, users, &rerr);
        if (r == -EBUSY)
                return r; /* a pod started meanwhile */
        if (r < 0) {
                log_warning("Image GC: cannot remove %s: %s", im->digest, rerr.message);
                return r;
        }
        printf("%s %s %" PRIu64 " %s\n", kind, im->digest, im->size,
               im->names && im->names[0] ? im->names[0] : im->digest);
        return 0;
}

static int run(const char *root, const ImageGcPolicy *policy, char **pinned_refs) {
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
        int r;

        if (!images_dir || !pods_dir)
                return log_oom();
        /* Partial registry downloads no pull holds any more (a pull that
         * was killed): before the store's open would remove them silently,
         * so that the report says so. */
        uint64_t partial_bytes = 0;
        int partials = image_store_sweep_partials(root, &partial_bytes);
        if (partials > 0)
                printf("partials %d %" PRIu64 "\n", partials, partial_bytes);
        r = image_store_open(root, NULL, &s, &err);
        if (r < 0)
                return log_error_errno(r, "Cannot open the image store: %s", err.message);
        r = fs_space(images_dir, &capacity, &before);
        if (r < 0)
                return log_error_errno(r, "Cannot statfs \"%s\": %m", images_dir);
        available = before;
        uint64_t to_free = image_gc_bytes_to_free(policy, capacity, before);
        if (to_free == 0 && policy->max_age == 0)
                goto done;
        r = pod_checkpoints_image_users(pods_dir, &users);
        if (r < 0)
                return log_error_errno(r, "Cannot list the images pods use: %m");
        for (size_t i = 0; i < users.n; i++) {
                char *d = resolve(s, users.uses[i].ref);
                if (d && strv_consume(&in_use, d) < 0) {
                        free(d);
                        return log_oom();
                }
        }
        STRV_FOREACH(p, pinned_refs) {
                char *d = resolve(s, *p);
                if (d && strv_consume(&pinned, d) < 0) {
                        free(d);
                        return log_oom();
                }
        }
        r = image_store_list(s, &images, &n, &err);
        if (r < 0)
                return log_error_errno(r, "Cannot list the images: %s", err.message);
        cand = calloc(n ?: 1, sizeof *cand);
        order = calloc(n ?: 1, sizeof *order);
        if (!cand || !order) {
                image_list_free(images, n);
                return log_oom();
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
                if (remove_one(s, images[order[i]], &users, "expired") >= 0) {
                        cand[order[i]].in_use = true;
                        (void)fs_space(images_dir, &capacity, &available);
                }
        if (to_free > 0) {
                k = image_gc_select(policy, cand, n, now, UINT64_MAX, order);
                uint64_t target = before + to_free;
                for (size_t i = 0; i < k && available < target; i++)
                        if (remove_one(s, images[order[i]], &users, "removed") >= 0)
                                (void)fs_space(images_dir, &capacity, &available);
        }
        image_list_free(images, n);
done:
        printf("done %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", capacity, before, available);
        return fflush(stdout) == 0 ? 0 : -EIO;
}

int image_gc_helper_main(int argc, char **argv) {
        uint64_t high, low, min_age, max_age;
        if (argc < 6 || parse_u64(argv[2], &high) < 0 || parse_u64(argv[3], &low) < 0 ||
            parse_u64(argv[4], &min_age) < 0 || parse_u64(argv[5], &max_age) < 0 || high > 100 ||
            low > high) {
                fprintf(stderr,
                        "usage: %s ROOT_DIR HIGH LOW MIN_AGE_USEC MAX_AGE_USEC [PINNED_REF...]\n",
                        IMAGE_GC_HELPER_MODE);
                return 2;
        }
        ImageGcPolicy p = { .high_percent = (unsigned)high,
                            .low_percent = (unsigned)low,
                            .min_age = min_age,
                            .max_age = max_age };
        return run(argv[1], &p, argv + 6) < 0 ? 1 : 0;
}
