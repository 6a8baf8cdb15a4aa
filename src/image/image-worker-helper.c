/* The helper side of image-worker.c: `nanolet internal-helper
 * unpack-rootfs ...` (the argv is described there). A file of its own so
 * that the agent executable, which only starts these helpers, links neither
 * the unpacker nor libarchive (docs/BENCHMARKS.md, memory). */
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
#include "self-helper.h"
#include "string-util.h"
#include "strv.h"

#define HELPER_ARGC 13 /* after SELF_HELPER_VERB: the mode and the 12 arguments */

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        if (!s || !*s || *s == '-')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || *end != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int helper_unpack_rootfs(char **argv, Error *err) {
        _cleanup_image_store_ ImageStore *s = NULL;
        ImageLimits l = {};
        uint64_t max_path = 0;
        const char *digest = argv[9];
        int r;

        if ((r = parse_u64(argv[3], &l.max_layer_size)) < 0 ||
            (r = parse_u64(argv[4], &l.max_total_size)) < 0 ||
            (r = parse_u64(argv[5], &l.max_ratio)) < 0 ||
            (r = parse_u64(argv[6], &l.ratio_min_size)) < 0 ||
            (r = parse_u64(argv[7], &l.max_entries)) < 0 || (r = parse_u64(argv[8], &max_path)) < 0)
                return error_set(err, r, "image worker: invalid limits");
        l.max_path = (size_t)max_path;
        /* Only an image the caller resolved: a tag here could name another one by now. */
        if (!image_digest_is_valid(digest))
                return error_set(err, -EINVAL, "image worker: \"%s\" is not an image digest",
                                 digest);
        r = store_open(argv[2], &l, false, &s, err);
        if (r < 0)
                return r;
        r = image_store_unpack(s, digest, err);
        if (r < 0)
                return r;
        return image_rootfs_mount(s, digest, argv[10], argv[11], argv[12], 0, NULL, err);
}

int image_helper_main(int argc, char **argv) {
        unsigned fd;

        if (argc != HELPER_ARGC || !streq(argv[0], IMAGE_HELPER_UNPACK_ROOTFS) ||
            safe_atou(argv[1], &fd) < 0 || fd < 3 || fd > INT_MAX) {
                log_error("Internal helper mode \"%s\": wrong arguments.", argc > 0 ? argv[0] : "");
                return EXIT_FAILURE;
        }
        Error e = {};
        int r = helper_unpack_rootfs(argv, &e);
        if (r < 0) {
                char buf[sizeof(e.message) + 32];
                int n = snprintf(buf, sizeof(buf), "%d %s", r,
                                 e.message[0] ? e.message : strerror(-r));
                (void)write_all((int)fd, buf, (size_t)MIN(n, (int)sizeof(buf) - 1));
        }
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

int image_flush_helper_main(int argc, char **argv) {
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_strv_free_ char **flushed = NULL;
        Error e = {};

        if (argc != 2 || !streq(argv[0], IMAGE_HELPER_FLUSH)) {
                log_error("Internal helper mode \"%s\": wrong arguments.", argc > 0 ? argv[0] : "");
                return EXIT_FAILURE;
        }
        /* No cleanup: the agent did it when it opened the store, and a
         * stale layer is reclaimed by whoever next unpacks it. */
        int r = store_open(argv[1], NULL, false, &s, &e);
        if (r >= 0)
                r = image_store_flush_layers(s, &flushed, &e);
        if (r < 0) {
                log_error("Cannot flush the image store's layers: %s",
                          e.message[0] ? e.message : strerror(-r));
                return EXIT_FAILURE;
        }
        STRV_FOREACH(c, flushed)
                printf("flushed %s\n", *c);
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
