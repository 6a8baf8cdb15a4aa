/* The helper side of image-worker.c and image-flush-agent.c: the
 * unpack-rootfs and image-flush helper modes (helper.h). A file of its own
 * so that the agent executable, which only starts these helpers, links
 * neither the unpacker nor libarchive (docs/BENCHMARKS.md, memory). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "image-internal.h"
#include "image-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

static int run_unpack_rootfs(const void *args, json_t *result, Error *err) {
        const ImageUnpackRootfsArgs *a = args;
        _cleanup_image_store_ ImageStore *s = NULL;
        ImageLimits l = {
                .max_layer_size = a->max_layer_size,
                .max_total_size = a->max_total_size,
                .max_ratio = a->max_ratio,
                .ratio_min_size = a->ratio_min_size,
                .max_entries = a->max_entries,
                .max_path = (size_t)a->max_path,
        };
        int r;

        if ((uint64_t)l.max_path != a->max_path)
                return error_set(err, -EINVAL, "image worker: invalid limits");
        /* Only an image the caller resolved: a tag here could name another one by now. */
        if (!image_digest_is_valid(a->digest))
                return error_set(err, -EINVAL, "image worker: \"%s\" is not an image digest",
                                 a->digest);
        r = store_open(a->store, &l, false, &s, err);
        if (r < 0)
                return r;
        r = image_store_unpack(s, a->digest, err);
        if (r < 0)
                return r;
        r = image_rootfs_mount(s, a->digest, a->target, a->upper_dir, a->work_dir, 0, NULL, err);
        return r < 0 ? r : 0;
}

const HelperMain image_unpack_rootfs_helper = {
        .mode = &image_unpack_rootfs_helper_mode,
        .run = run_unpack_rootfs,
};

static int run_flush(const void *args, json_t *result, Error *err) {
        const ImageFlushArgs *a = args;
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_strv_free_ char **flushed = NULL;
        json_t *list = json_array();

        if (!list || json_object_set_new(result, "flushed", list) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        /* No cleanup: the agent did it when it opened the store, and a
         * stale layer is reclaimed by whoever next unpacks it. */
        int r = store_open(a->store, NULL, false, &s, err);
        if (r >= 0)
                r = image_store_flush_layers(s, &flushed, err);
        if (r < 0)
                return error_prefix(err, r, "cannot flush the image store's layers");
        STRV_FOREACH(c, flushed)
                if (json_array_append_new(list, json_string(*c)) < 0)
                        return error_set(err, -ENOMEM, "out of memory");
        return 0;
}

const HelperMain image_flush_helper = {
        .mode = &image_flush_helper_mode,
        .run = run_flush,
};
