/* Pod cgroup removal in v1 (per controller) and v2 (unified) layouts,
 * on a fake tree of plain directories. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "cleanup.h"
#include "fileio.h"
#include "string-util.h"

static char *make_root(void) {
        char tmpl[] = "/tmp/nanolet-test-cgroup-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        return strdup(tmpl);
}

static void mk(const char *root, const char *rel) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        assert_int_equal(mkdir_p(p, 0755), 0);
}

static bool exists(const char *root, const char *rel) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        return access(p, F_OK) == 0;
}

static void rm_root(const char *root) {
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

static void test_path(void **state) {
        _cleanup_free_ char *p = runtime_pod_cgroup_path("abc");
        assert_string_equal(p, "/nanolet/podabc");
        assert_int_equal(runtime_cgroup_remove("/nonexistent", "relative"), -EINVAL);
        assert_int_equal(runtime_cgroup_remove("/nonexistent", "/nanolet/../x"), -EINVAL);
}

static void test_v1(void **state) {
        _cleanup_free_ char *root = make_root();
        mk(root, "memory/nanolet/podA/ctr-1");
        mk(root, "memory/nanolet/podB");
        mk(root, "cpu,cpuacct/nanolet/podA");
        mk(root, "pids"); /* controller without the pod */
        _cleanup_free_ char *link = strprintf("%s/cpu", root);
        assert_int_equal(symlink("cpu,cpuacct", link), 0);

        assert_int_equal(runtime_cgroup_remove(root, "/nanolet/podA"), 0);
        assert_false(exists(root, "memory/nanolet/podA"));
        assert_false(exists(root, "cpu,cpuacct/nanolet/podA"));
        assert_true(exists(root, "memory/nanolet/podB")); /* other pods untouched */
        assert_true(exists(root, "memory/nanolet"));      /* the shared parent stays */
        /* idempotent */
        assert_int_equal(runtime_cgroup_remove(root, "/nanolet/podA"), 0);
        rm_root(root);
}

static void test_v2(void **state) {
        _cleanup_free_ char *root = make_root();
        _cleanup_free_ char *ctl = strprintf("%s/cgroup.controllers", root);
        assert_int_equal(write_file_atomic(ctl, "cpu memory\n", 11, 0644), 0);
        mk(root, "nanolet/podA/x/y");
        mk(root, "nanolet/podB");
        assert_int_equal(runtime_cgroup_remove(root, "/nanolet/podA"), 0);
        assert_false(exists(root, "nanolet/podA"));
        assert_true(exists(root, "nanolet/podB"));
        rm_root(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path),
                cmocka_unit_test(test_v1),
                cmocka_unit_test(test_v2),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
