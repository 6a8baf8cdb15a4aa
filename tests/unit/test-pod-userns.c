/* Per-pod user namespace ranges (src/pod/pod-userns.h): slots above the
 * host's IDs, never two pods on one, next-fit, claims of recorded ranges,
 * and the record file against hostile contents. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "pod-userns.h"
#include "rm-rf.h"
#include "string-util.h"

#define R POD_USERNS_RANGE_LEN

static void test_first_range_above_host_ids(void **state) {
        (void)state;
        PodUsernsAllocator a;
        uint32_t s;
        assert_int_equal(pod_userns_allocator_init(&a, 0), 0);
        assert_int_equal(a.n_slots, 65534);
        assert_int_equal(pod_userns_allocate(&a, &s), 0);
        assert_int_equal(s, R); /* never 0..65535, the host's */
        pod_userns_allocator_done(&a);
}

static void test_unique_until_full(void **state) {
        (void)state;
        PodUsernsAllocator a;
        uint32_t s[4];
        assert_int_equal(pod_userns_allocator_init(&a, 3), 0);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(pod_userns_allocate(&a, &s[i]), 0);
                assert_int_equal(s[i] % R, 0);
                for (int j = 0; j < i; j++)
                        assert_int_not_equal(s[i], s[j]);
        }
        assert_int_equal(pod_userns_allocate(&a, &s[3]), -ENOSPC);
        pod_userns_release(&a, s[1]);
        assert_int_equal(pod_userns_allocate(&a, &s[3]), 0);
        assert_int_equal(s[3], s[1]);
        pod_userns_allocator_done(&a);
}

static void test_next_fit_does_not_reuse_at_once(void **state) {
        (void)state;
        PodUsernsAllocator a;
        uint32_t x, y;
        assert_int_equal(pod_userns_allocator_init(&a, 10), 0);
        assert_int_equal(pod_userns_allocate(&a, &x), 0);
        pod_userns_release(&a, x);
        assert_int_equal(pod_userns_allocate(&a, &y), 0);
        assert_int_not_equal(x, y);
        pod_userns_allocator_done(&a);
}

static void test_claim(void **state) {
        (void)state;
        PodUsernsAllocator a;
        uint32_t s;
        assert_int_equal(pod_userns_allocator_init(&a, 0), 0);
        assert_int_equal(pod_userns_claim(&a, 2 * R), 0);
        assert_int_equal(pod_userns_claim(&a, 2 * R), -EBUSY);
        assert_int_equal(pod_userns_claim(&a, 0), -EINVAL);          /* the host's */
        assert_int_equal(pod_userns_claim(&a, 2 * R + 1), -EINVAL);  /* not a slot */
        assert_int_equal(pod_userns_claim(&a, 65535u * R), -EINVAL); /* holds ID -1 */
        assert_true(pod_userns_is_used(&a, 2 * R));
        /* A claimed range is never handed out again. */
        for (int i = 0; i < 3; i++) {
                assert_int_equal(pod_userns_allocate(&a, &s), 0);
                assert_int_not_equal(s, 2 * R);
        }
        pod_userns_release(&a, 2 * R);
        assert_false(pod_userns_is_used(&a, 2 * R));
        pod_userns_release(&a, 2 * R); /* twice: ignored */
        assert_int_equal(a.n_used, 3);
        pod_userns_allocator_done(&a);
}

static char *make_dir(void) {
        char *d = strdup("/tmp/test-pod-userns-XXXXXX");
        assert_non_null(d);
        assert_non_null(mkdtemp(d));
        return d;
}

static void put(const char *dir, const char *text) {
        _cleanup_free_ char *p = strprintf("%s/" POD_USERNS_RECORD, dir);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static int read_rec(const char *dir, uint32_t *s) {
        Error err = {};
        int r = pod_userns_record_read(dir, s, &err);
        if (r == -EINVAL)
                assert_true(err.message[0] != '\0');
        return r;
}

static void test_record(void **state) {
        (void)state;
        _cleanup_free_ char *d = make_dir();
        uint32_t s = 0;

        assert_int_equal(read_rec(d, &s), -ENOENT);
        assert_int_equal(pod_userns_record_write(d, 7 * R), 0);
        assert_int_equal(read_rec(d, &s), 0);
        assert_int_equal(s, 7 * R);

        static const char *const bad[] = {
                "",
                "garbage\n",
                "[]",
                "{\"version\":2,\"hostID\":131072,\"length\":65536}",
                "{\"version\":1,\"hostID\":131073,\"length\":65536}",
                "{\"version\":1,\"hostID\":0,\"length\":65536}",
                "{\"version\":1,\"hostID\":-65536,\"length\":65536}",
                "{\"version\":1,\"hostID\":4294901760,\"length\":65536}",
                "{\"version\":1,\"hostID\":131072,\"length\":1}",
                "{\"version\":1,\"hostID\":\"131072\",\"length\":65536}",
                "{\"version\":1,\"hostID\":131072,\"hostID\":196608,\"length\":65536}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                put(d, bad[i]);
                assert_int_equal(read_rec(d, &s), -EINVAL);
        }

        /* A symlink is never followed, even to a valid record. */
        _cleanup_free_ char *other = make_dir();
        assert_int_equal(pod_userns_record_write(other, 3 * R), 0);
        _cleanup_free_ char *p = strprintf("%s/" POD_USERNS_RECORD, d);
        _cleanup_free_ char *target = strprintf("%s/" POD_USERNS_RECORD, other);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(symlink(target, p), 0);
        assert_int_equal(read_rec(d, &s), -EINVAL);

        (void)rm_rf_at(AT_FDCWD, d);
        (void)rm_rf_at(AT_FDCWD, other);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_range_above_host_ids),
                cmocka_unit_test(test_unique_until_full),
                cmocka_unit_test(test_next_fit_does_not_reuse_at_once),
                cmocka_unit_test(test_claim),
                cmocka_unit_test(test_record),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
