/* Image GC's decision (src/gc/image-gc.h): kubelet's threshold arithmetic,
 * the least-recently-used order, the minimum age, in-use and pinned images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "image-gc.h"

#define SEC USEC_PER_SEC
#define MIB (1024ULL * 1024ULL)

static const ImageGcPolicy policy = { .high_percent = 85, .low_percent = 80, .min_age = 120 * SEC };

static void test_bytes_to_free(void **state) {
        (void)state;
        /* 100 MiB disk: 85% used is not above 85%. */
        assert_int_equal(image_gc_bytes_to_free(&policy, 100 * MIB, 15 * MIB), 0);
        /* 86% used: free down to 80% = 20 MiB available. */
        assert_int_equal(image_gc_bytes_to_free(&policy, 100 * MIB, 14 * MIB), 6 * MIB);
        /* Full. */
        assert_int_equal(image_gc_bytes_to_free(&policy, 100 * MIB, 0), 20 * MIB);
        /* kubelet's integer percent: 14.5 MiB available is 100 - 14 = 86%. */
        assert_int_equal(image_gc_bytes_to_free(&policy, 100 * MIB, 14 * MIB + MIB / 2),
                         5 * MIB + MIB / 2);
        /* high 100: off; capacity 0: nothing to say. */
        ImageGcPolicy off = { .high_percent = 100, .low_percent = 80 };
        assert_int_equal(image_gc_bytes_to_free(&off, 100 * MIB, 0), 0);
        assert_int_equal(image_gc_bytes_to_free(&policy, 0, 0), 0);
        /* Big disks do not overflow. */
        assert_int_equal(image_gc_bytes_to_free(&policy, UINT64_MAX / 2, 0),
                         UINT64_MAX / 2 / 100 * 20 + (UINT64_MAX / 2 % 100) * 20 / 100);
}

static void test_lru_order(void **state) {
        (void)state;
        usec_t now = 100000 * SEC;
        ImageGcCandidate c[] = {
                { .digest = "sha256:a",
                  .size = 10,
                  .first_seen = 1000 * SEC,
                  .last_used = 5000 * SEC },
                { .digest = "sha256:b", .size = 10, .first_seen = 2000 * SEC, .last_used = 0 },
                { .digest = "sha256:c",
                  .size = 10,
                  .first_seen = 1000 * SEC,
                  .last_used = 3000 * SEC },
                { .digest = "sha256:d", .size = 10, .first_seen = 1500 * SEC, .last_used = 0 },
        };
        size_t order[4];
        size_t k = image_gc_select(&policy, c, 4, now, UINT64_MAX, order);
        assert_int_equal(k, 4);
        /* Never used first (earliest stored first), then by last use. */
        assert_int_equal(order[0], 3);
        assert_int_equal(order[1], 1);
        assert_int_equal(order[2], 2);
        assert_int_equal(order[3], 0);
        /* Only as many as the bytes to free need: 15 bytes -> two images. */
        k = image_gc_select(&policy, c, 4, now, 15, order);
        assert_int_equal(k, 2);
        assert_int_equal(order[0], 3);
        assert_int_equal(order[1], 1);
        /* Exactly one image's size: one image. */
        assert_int_equal(image_gc_select(&policy, c, 4, now, 10, order), 1);
        assert_int_equal(image_gc_select(&policy, c, 4, now, 0, order), 0);
}

static void test_kept(void **state) {
        (void)state;
        usec_t now = 100000 * SEC;
        ImageGcCandidate c[] = {
                { .digest = "sha256:used", .size = 10, .first_seen = SEC, .in_use = true },
                { .digest = "sha256:pinned", .size = 10, .first_seen = SEC, .pinned = true },
                /* Stored 119 s ago: younger than the 2 min minimum age. */
                { .digest = "sha256:young", .size = 10, .first_seen = now - 119 * SEC },
                { .digest = "sha256:future", .size = 10, .first_seen = now + SEC },
                { .digest = "sha256:old", .size = 10, .first_seen = now - 120 * SEC },
        };
        size_t order[5];
        size_t k = image_gc_select(&policy, c, 5, now, UINT64_MAX, order);
        assert_int_equal(k, 1);
        assert_int_equal(order[0], 4);
        ImageGcPolicy no_age = policy;
        no_age.min_age = 0;
        k = image_gc_select(&no_age, c, 5, now, UINT64_MAX, order);
        assert_int_equal(k, 2); /* young joins; future (clock went back) stays */
        assert_int_equal(order[0], 4);
        assert_int_equal(order[1], 2);
}

/* imageMaximumGCAge: unused for longer than max_age, counted from the last
 * use or, never used, from when it was stored; in-use and pinned images
 * stay whatever their age; 0 turns it off. */
static void test_max_age(void **state) {
        (void)state;
        usec_t now = 100000 * SEC;
        ImageGcPolicy p = policy;
        p.max_age = 3600 * SEC;
        ImageGcCandidate c[] = {
                /* stored long ago, used 30 min ago: kept */
                { .digest = "sha256:recent", .first_seen = SEC, .last_used = now - 1800 * SEC },
                /* used 2 h ago */
                { .digest = "sha256:stale", .first_seen = SEC, .last_used = now - 7200 * SEC },
                /* never used, stored 3 h ago */
                { .digest = "sha256:never", .first_seen = now - 3 * 3600 * SEC },
                /* never used, stored 10 min ago: kept */
                { .digest = "sha256:new", .first_seen = now - 600 * SEC },
                { .digest = "sha256:used", .first_seen = SEC, .in_use = true },
                { .digest = "sha256:pinned", .first_seen = SEC, .pinned = true },
                /* exactly max_age: not longer, kept (kubelet's ">") */
                { .digest = "sha256:edge", .first_seen = SEC, .last_used = now - 3600 * SEC },
        };
        size_t order[7];
        size_t k = image_gc_select_expired(&p, c, 7, now, order);
        assert_int_equal(k, 2);
        /* least recently used first: never used (stored 3 h ago) before the
         * one used 2 h ago */
        assert_int_equal(order[0], 2);
        assert_int_equal(order[1], 1);
        p.max_age = 0;
        assert_int_equal(image_gc_select_expired(&p, c, 7, now, order), 0);
}

static void test_labels(void **state) {
        (void)state;
        char *containerd[] = { "a", "b", IMAGE_GC_LABEL_CONTAINERD, "pinned", NULL };
        char *nanolet[] = { IMAGE_GC_LABEL_NANOLET, "true", NULL };
        char *off[] = { IMAGE_GC_LABEL_NANOLET, "false", IMAGE_GC_LABEL_CONTAINERD, "no", NULL };
        char *odd[] = { IMAGE_GC_LABEL_NANOLET, NULL };
        assert_true(image_gc_labels_pinned(containerd));
        assert_true(image_gc_labels_pinned(nanolet));
        assert_false(image_gc_labels_pinned(off));
        assert_false(image_gc_labels_pinned(odd));
        assert_false(image_gc_labels_pinned(NULL));
}

/* The mode's table: names and fields that helper.h can build and parse. */
static void test_helper_mode(void **state) {
        assert_int_equal(helper_mode_verify(&image_gc_helper_mode), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_helper_mode), cmocka_unit_test(test_bytes_to_free),
                cmocka_unit_test(test_lru_order),   cmocka_unit_test(test_kept),
                cmocka_unit_test(test_labels),      cmocka_unit_test(test_max_age),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
