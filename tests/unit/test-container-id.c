/* Runtime container IDs: 64 lowercase hex digits derived from the pod UID,
 * container name and attempt (so a restarted agent finds them again), and
 * the legacy "<uid>-<name>-<attempt>" names still adopted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "container-id.h"
#include "string-util.h"

#define POD_MARK "bf7916257b8bb0e6"
static void test_runtime_id(void **state) {
        (void)state;
        _cleanup_free_ char *a =
                container_runtime_id("7ceca5b52857864ff720b6fad01b5ef8", "main", 0);
        _cleanup_free_ char *b =
                container_runtime_id("7ceca5b52857864ff720b6fad01b5ef8", "main", 0);
        _cleanup_free_ char *c =
                container_runtime_id("7ceca5b52857864ff720b6fad01b5ef8", "main", 1);
        _cleanup_free_ char *d =
                container_runtime_id("7ceca5b52857864ff720b6fad01b5ef8", "side", 0);
        assert_non_null(a);
        assert_int_equal(strlen(a), 64);
        for (const char *p = a; *p; p++)
                assert_true((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
        assert_true(container_id_valid(a));
        assert_string_equal(a, b);
        assert_string_not_equal(a, c);
        assert_string_not_equal(a, d);
        /* 48 digits of sha256("7ceca5b52857864ff720b6fad01b5ef8/main/0") and 16
         * of sha256("7ceca5b52857864ff720b6fad01b5ef8"), fixed forever: a
         * changed derivation would orphan every running container. */
        assert_string_equal(a, "b909ea6afbf45330ad47ccecc5f4e650330386e0bac2b59c" POD_MARK);
        /* Every container of the pod carries the pod's mark. */
        assert_true(container_id_of_pod(a, "7ceca5b52857864ff720b6fad01b5ef8"));
        assert_true(container_id_of_pod(c, "7ceca5b52857864ff720b6fad01b5ef8"));
        assert_true(container_id_of_pod(d, "7ceca5b52857864ff720b6fad01b5ef8"));
        assert_false(container_id_of_pod(a, "1afd52cd307f3d448b6a5831675112ac"));
        assert_true(container_id_of_pod("7ceca5b52857864ff720b6fad01b5ef8-main-4",
                                        "7ceca5b52857864ff720b6fad01b5ef8"));
        assert_false(container_id_of_pod("7ceca5b52857864ff720b6fad01b5ef8-main-4", "7ceca5b5"));
        assert_false(container_id_of_pod("short", "7ceca5b52857864ff720b6fad01b5ef8"));
}

static void test_legacy_id(void **state) {
        (void)state;
        _cleanup_free_ char *a = container_legacy_id("7ceca5b52857864ff720b6fad01b5ef8", "main", 3);
        assert_string_equal(a, "7ceca5b52857864ff720b6fad01b5ef8-main-3");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_runtime_id),
                cmocka_unit_test(test_legacy_id),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
