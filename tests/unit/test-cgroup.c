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
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup.h"
#include "cleanup.h"
#include "fileio.h"
#include "string-util.h"
#include "strv.h"

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

static const CgroupLayout cgfs = { .driver = CGROUP_DRIVER_CGROUPFS, .root = "/" };
static const CgroupLayout sysd = { .driver = CGROUP_DRIVER_SYSTEMD, .root = "/" };

#define assert_path(expr, want)                                                                    \
        do {                                                                                       \
                char *_p = (expr);                                                                 \
                assert_non_null(_p);                                                               \
                assert_string_equal(_p, want);                                                     \
                free(_p);                                                                          \
        } while (0)

static void test_path(void **state) {
        assert_path(runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_GUARANTEED, "abc"),
                    "/kubepods/podabc");
        assert_path(runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_BURSTABLE, "abc"),
                    "/kubepods/burstable/podabc");
        assert_path(runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_BEST_EFFORT, "abc"),
                    "/kubepods/besteffort/podabc");
        assert_path(runtime_qos_cgroup_path(&cgfs, CGROUP_QOS_GUARANTEED), "/kubepods");
        assert_path(runtime_qos_cgroup_path(&cgfs, CGROUP_QOS_BEST_EFFORT), "/kubepods/besteffort");
        assert_path(runtime_container_cgroups_path(&cgfs, CGROUP_QOS_BURSTABLE, "abc", "abc-c-0"),
                    "/kubepods/burstable/podabc/abc-c-0");
        assert_path(runtime_container_cgroup_path(&cgfs, CGROUP_QOS_BURSTABLE, "abc", "abc-c-0"),
                    "/kubepods/burstable/podabc/abc-c-0");
        /* --cgroup-root */
        CgroupLayout nested = { .driver = CGROUP_DRIVER_CGROUPFS, .root = "/edge/node1/" };
        assert_path(runtime_pod_cgroup_path(&nested, CGROUP_QOS_BEST_EFFORT, "u"),
                    "/edge/node1/kubepods/besteffort/podu");
        CgroupLayout null_root = { .driver = CGROUP_DRIVER_CGROUPFS };
        assert_path(runtime_pod_cgroup_path(&null_root, CGROUP_QOS_GUARANTEED, "u"),
                    "/kubepods/podu");
        assert_null(runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_GUARANTEED, ""));
        assert_null(runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_GUARANTEED, "a/b"));

        assert_int_equal(runtime_cgroup_remove("/nonexistent", "relative"), -EINVAL);
        assert_int_equal(runtime_cgroup_remove("/nonexistent", "/nanolet/../x"), -EINVAL);
        assert_int_equal(cgroup_driver_from_string("cgroupfs"), CGROUP_DRIVER_CGROUPFS);
        assert_int_equal(cgroup_driver_from_string("systemd"), CGROUP_DRIVER_SYSTEMD);
        assert_int_equal(cgroup_driver_from_string("docker"), _CGROUP_DRIVER_INVALID);
}

/* kubelet's systemd names: each level a slice named after all levels
 * above it, '-' in a name escaped as '_'. */
static void test_systemd_names(void **state) {
        const char *uid = "0f3b6c1e-aa-bb";
        assert_path(runtime_pod_cgroup_path(&sysd, CGROUP_QOS_GUARANTEED, uid),
                    "/kubepods.slice/kubepods-pod0f3b6c1e_aa_bb.slice");
        assert_path(runtime_pod_cgroup_path(&sysd, CGROUP_QOS_BURSTABLE, uid),
                    "/kubepods.slice/kubepods-burstable.slice/"
                    "kubepods-burstable-pod0f3b6c1e_aa_bb.slice");
        assert_path(runtime_pod_cgroup_path(&sysd, CGROUP_QOS_BEST_EFFORT, "u1"),
                    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice");
        assert_path(runtime_qos_cgroup_path(&sysd, CGROUP_QOS_GUARANTEED), "/kubepods.slice");
        /* runc's systemd cgroupsPath: slice:prefix:name */
        assert_path(runtime_container_cgroups_path(&sysd, CGROUP_QOS_BEST_EFFORT, "u1", "u1-c-0"),
                    "kubepods-besteffort-podu1.slice:nanolet:u1-c-0");
        assert_path(runtime_container_cgroup_path(&sysd, CGROUP_QOS_BEST_EFFORT, "u1", "u1-c-0"),
                    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice/"
                    "nanolet-u1-c-0.scope");
        /* a slice root, as kubelet parses it */
        CgroupLayout edge = { .driver = CGROUP_DRIVER_SYSTEMD, .root = "/edge.slice" };
        assert_path(runtime_pod_cgroup_path(&edge, CGROUP_QOS_BURSTABLE, "u1"),
                    "/edge.slice/edge-kubepods.slice/edge-kubepods-burstable.slice/"
                    "edge-kubepods-burstable-podu1.slice");
        CgroupLayout deep = { .driver = CGROUP_DRIVER_SYSTEMD, .root = "/a.slice/a-b.slice" };
        assert_path(runtime_qos_cgroup_path(&deep, CGROUP_QOS_GUARANTEED),
                    "/a.slice/a-b.slice/a-b-kubepods.slice");
}

static char *joined(char **argv) {
        size_t len = 0, cap = 0;
        char *buf = NULL;
        STRV_FOREACH(a, argv) {
                if (len > 0)
                        assert_int_equal(strbuf_append(&buf, &len, &cap, " ", 1), 0);
                assert_int_equal(strbuf_append(&buf, &len, &cap, *a, strlen(*a)), 0);
        }
        return buf;
}

#define assert_argv(call, path, res, v2, want)                                                     \
        do {                                                                                       \
                char **_a = NULL;                                                                  \
                assert_int_equal(runtime_systemd_slice_argv("busctl", call, path, res, v2, &_a),   \
                                 0);                                                               \
                char *_j = joined(_a);                                                             \
                assert_string_equal(_j, want);                                                     \
                free(_j);                                                                          \
                strv_free(_a);                                                                     \
        } while (0)

#define BUSCTL                                                                                     \
        "busctl call --quiet org.freedesktop.systemd1 /org/freedesktop/systemd1 "                  \
        "org.freedesktop.systemd1.Manager "
#define ACCT "CPUAccounting b true MemoryAccounting b true TasksAccounting b true"

/* The systemd driver's pod slice: the unit properties that carry the pod's
 * limits (libcontainer's names), v1 and v2, and the calls around them. */
static void test_systemd_slice_argv(void **state) {
        const char *pod = "/kubepods.slice/kubepods-burstable.slice/"
                          "kubepods-burstable-pod0f3b_aa.slice";
        CgroupResources res = { .cpu_shares = 358,
                                .cpu_quota = 75000,
                                .cpu_period = 100000,
                                .memory_limit = 64 << 20,
                                .pids_limit = 100 };

        assert_string_equal(runtime_systemd_slice_unit(pod), "kubepods-burstable-pod0f3b_aa.slice");
        assert_string_equal(runtime_systemd_slice_unit("/kubepods.slice"), "kubepods.slice");
        assert_null(runtime_systemd_slice_unit("/kubepods/burstable/podx"));
        assert_null(runtime_systemd_slice_unit("/a.slice/"));
        assert_null(runtime_systemd_slice_unit(NULL));

        /* cgroup v1: CPUShares and MemoryLimit; 75000/100000 µs = 750 ms/s */
        assert_argv(SYSTEMD_SLICE_START, pod, &res, false,
                    BUSCTL
                    "StartTransientUnit ssa(sv)a(sa(sv)) kubepods-burstable-pod0f3b_aa.slice "
                    "replace 10 Description s nanolet kubepods-burstable-pod0f3b_aa.slice "
                    "DefaultDependencies b false " ACCT " CPUShares t 358 "
                    "CPUQuotaPerSecUSec t 750000 CPUQuotaPeriodUSec t 100000 "
                    "MemoryLimit t 67108864 TasksMax t 100 0");
        /* cgroup v2: CPUWeight (kubelet's mapping of the shares) and MemoryMax */
        assert_argv(SYSTEMD_SLICE_START, pod, &res, true,
                    BUSCTL
                    "StartTransientUnit ssa(sv)a(sa(sv)) kubepods-burstable-pod0f3b_aa.slice "
                    "replace 10 Description s nanolet kubepods-burstable-pod0f3b_aa.slice "
                    "DefaultDependencies b false " ACCT " CPUWeight t 14 "
                    "CPUQuotaPerSecUSec t 750000 CPUQuotaPeriodUSec t 100000 "
                    "MemoryMax t 67108864 TasksMax t 100 0");
        assert_int_equal(cgroup_cpu_shares_to_weight(358), 14);
        /* an existing unit: SetUnitProperties, runtime, without the
         * transient-only properties */
        assert_argv(SYSTEMD_SLICE_SET, pod, &res, true,
                    BUSCTL
                    "SetUnitProperties sba(sv) kubepods-burstable-pod0f3b_aa.slice true 8 " ACCT
                    " CPUWeight t 14 CPUQuotaPerSecUSec t 750000 "
                    "CPUQuotaPeriodUSec t 100000 MemoryMax t 67108864 TasksMax t 100");
        assert_argv(SYSTEMD_SLICE_STOP, pod, NULL, false,
                    BUSCTL "StopUnit ss kubepods-burstable-pod0f3b_aa.slice replace");

        /* a quota that is not a 10 ms step per second is rounded up (systemd
         * keeps a percentage); --cpu-cfs-quota=false: infinity; zero values
         * are left to systemd's defaults */
        CgroupResources odd = { .cpu_quota = 1234, .cpu_period = 100000 };
        assert_argv(SYSTEMD_SLICE_SET, "/kubepods.slice", &odd, false,
                    BUSCTL "SetUnitProperties sba(sv) kubepods.slice true 5 " ACCT
                           " CPUQuotaPerSecUSec t 20000 CPUQuotaPeriodUSec t 100000");
        CgroupResources unlimited = { .cpu_shares = 2, .cpu_quota = -1, .cpu_period = 100000 };
        assert_argv(SYSTEMD_SLICE_SET, "/kubepods.slice/kubepods-besteffort.slice", &unlimited,
                    true,
                    BUSCTL "SetUnitProperties sba(sv) kubepods-besteffort.slice true 6 " ACCT
                           " CPUWeight t 1 CPUQuotaPerSecUSec t 18446744073709551615 "
                           "CPUQuotaPeriodUSec t 100000");
        assert_argv(SYSTEMD_SLICE_SET, "/kubepods.slice", NULL, false,
                    BUSCTL "SetUnitProperties sba(sv) kubepods.slice true 3 " ACCT);
        /* the QoS slice under a slice --cgroup-root */
        CgroupLayout edge = { .driver = CGROUP_DRIVER_SYSTEMD, .root = "/edge.slice" };
        char *bu = runtime_qos_cgroup_path(&edge, CGROUP_QOS_BURSTABLE);
        assert_argv(SYSTEMD_SLICE_STOP, bu, NULL, false,
                    BUSCTL "StopUnit ss edge-kubepods-burstable.slice replace");
        free(bu);

        /* not a slice: refused, nothing to run */
        char **a = NULL;
        assert_int_equal(runtime_systemd_slice_argv(NULL, SYSTEMD_SLICE_START,
                                                    "/kubepods/burstable/podx", &res, false, &a),
                         -EINVAL);
        assert_null(a);
        assert_int_equal(
                runtime_systemd_slice_argv(NULL, _SYSTEMD_SLICE_CALL_MAX, pod, &res, false, &a),
                -EINVAL);
        /* busctl NULL: from PATH */
        assert_int_equal(runtime_systemd_slice_argv(NULL, SYSTEMD_SLICE_STOP, pod, NULL, false, &a),
                         0);
        assert_string_equal(a[0], "busctl");
        strv_free(a);

        /* START refused for an existing unit is retried as SET */
        assert_true(runtime_systemd_unit_exists_error(
                "Call failed: Unit kubepods-burstable.slice already exists.\n"));
        assert_true(runtime_systemd_unit_exists_error("org.freedesktop.systemd1.UnitExists"));
        /* busctl's words for it on systemd 252 (Debian 12) and later */
        assert_true(runtime_systemd_unit_exists_error(
                "Call failed: Unit kubepods-burstable.slice was already loaded or has a fragment "
                "file.\n"));
        assert_false(runtime_systemd_unit_exists_error("Call failed: Access denied\n"));
        assert_false(runtime_systemd_unit_exists_error(NULL));
}

static void write_rel(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        _cleanup_free_ char *dir = strdup(p);
        *strrchr(dir, '/') = 0;
        assert_int_equal(mkdir_p(dir, 0755), 0);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static void test_systemd_detection(void **state) {
        _cleanup_free_ char *root = make_root();
        Error err = {};

        /* nothing: not systemd */
        assert_false(runtime_systemd_is_init(root, &err));
        assert_int_equal(err.error, -EOPNOTSUPP);
        assert_non_null(strstr(err.message, "use --cgroup-driver cgroupfs"));
        assert_non_null(strstr(err.message, "\"unknown\""));

        /* another init, e.g. in a container or tini */
        write_rel(root, "proc/1/comm", "tini\n");
        err = (Error){};
        assert_false(runtime_systemd_is_init(root, &err));
        assert_non_null(strstr(err.message, "PID 1 is \"tini\""));
        assert_non_null(strstr(err.message, "/run/systemd/system does not exist"));

        /* /run/systemd/system without systemd as PID 1 (a leftover) */
        mk(root, "run/systemd/system");
        err = (Error){};
        assert_false(runtime_systemd_is_init(root, &err));
        assert_null(strstr(err.message, "does not exist"));

        write_rel(root, "proc/1/comm", "systemd\n");
        err = (Error){};
        assert_true(runtime_systemd_is_init(root, &err));
        rm_root(root);
}

static char *read_rel(const char *root, const char *rel) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        char *data = NULL;
        size_t size;
        if (read_full_file_at(AT_FDCWD, p, 4096, &data, &size) < 0)
                return NULL;
        return data;
}

#define assert_file(root, rel, want)                                                               \
        do {                                                                                       \
                char *_d = read_rel(root, rel);                                                    \
                assert_non_null(_d);                                                               \
                assert_string_equal(_d, want);                                                     \
                free(_d);                                                                          \
        } while (0)

static void test_create_v1(void **state) {
        _cleanup_free_ char *root = make_root();
        static const char *const ctl[] = { "cpu,cpuacct", "memory", "pids", "hugetlb" };
        for (size_t i = 0; i < 4; i++)
                mk(root, ctl[i]);
        _cleanup_free_ char *l1 = strprintf("%s/cpu", root), *l2 = strprintf("%s/cpuacct", root);
        assert_int_equal(symlink("cpu,cpuacct", l1), 0);
        assert_int_equal(symlink("cpu,cpuacct", l2), 0);

        const CgroupHugepageLimit hp[] = { { "2MB", 4 << 20 } };
        CgroupResources res = { .cpu_shares = 512,
                                .cpu_quota = 150000,
                                .cpu_period = 100000,
                                .memory_limit = 64 << 20,
                                .pids_limit = 100,
                                .hugepages = hp,
                                .n_hugepages = 1 };
        _cleanup_free_ char *path = runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_BURSTABLE, "u1");
        Error err = {};
        assert_int_equal(runtime_cgroup_create(root, path, &res, &err), 0);
        assert_file(root, "cpu/kubepods/burstable/podu1/cpu.shares", "512");
        assert_file(root, "cpu/kubepods/burstable/podu1/cpu.cfs_period_us", "100000");
        assert_file(root, "cpu/kubepods/burstable/podu1/cpu.cfs_quota_us", "150000");
        assert_file(root, "memory/kubepods/burstable/podu1/memory.limit_in_bytes", "67108864");
        assert_file(root, "pids/kubepods/burstable/podu1/pids.max", "100");
        assert_file(root, "hugetlb/kubepods/burstable/podu1/hugetlb.2MB.limit_in_bytes", "4194304");

        /* unset values are not written; an unlimited quota is -1 */
        CgroupResources be = { .cpu_shares = 2, .cpu_quota = -1, .cpu_period = 100000 };
        _cleanup_free_ char *bp = runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_BEST_EFFORT, "u2");
        assert_int_equal(runtime_cgroup_create(root, bp, &be, &err), 0);
        assert_file(root, "cpu/kubepods/besteffort/podu2/cpu.shares", "2");
        assert_file(root, "cpu/kubepods/besteffort/podu2/cpu.cfs_quota_us", "-1");
        assert_false(exists(root, "memory/kubepods/besteffort/podu2/memory.limit_in_bytes"));
        assert_false(exists(root, "pids/kubepods/besteffort/podu2/pids.max"));
        assert_true(exists(root, "pids/kubepods/besteffort/podu2"));
        assert_false(exists(root, "hugetlb/kubepods/besteffort")); /* not limited: not made */

        assert_int_equal(runtime_cgroup_create(root, "relative", &res, &err), -EINVAL);
        assert_int_equal(runtime_cgroup_create(root, "/a/../b", &res, &err), -EINVAL);

        rm_root(root);
}

static void test_create_v1_missing_controller(void **state) {
        _cleanup_free_ char *root = make_root();
        mk(root, "cpu");
        mk(root, "memory"); /* no pids */
        CgroupResources res = { .pids_limit = 5 };
        Error err = {};
        assert_int_equal(runtime_cgroup_create(root, "/kubepods/podx", &res, &err), -ENOENT);
        assert_non_null(strstr(err.message, "pids"));
        rm_root(root);
}

static void test_create_v2(void **state) {
        _cleanup_free_ char *root = make_root();
        write_rel(root, "cgroup.controllers", "cpuset cpu io memory pids\n");
        const CgroupHugepageLimit hp[] = { { "1GB", 1ULL << 30 } };
        CgroupResources res = { .cpu_shares = 1024,
                                .cpu_quota = 50000,
                                .cpu_period = 100000,
                                .memory_limit = 32 << 20,
                                .pids_limit = 64,
                                .hugepages = hp,
                                .n_hugepages = 1 };
        _cleanup_free_ char *path = runtime_pod_cgroup_path(&cgfs, CGROUP_QOS_BURSTABLE, "u1");
        Error err = {};
        assert_int_equal(runtime_cgroup_create(root, path, &res, &err), 0);
        /* the root has no hugetlb: only what it offers is enabled there */
        assert_file(root, "cgroup.subtree_control", "+cpu +memory +pids");
        /* below, without a cgroup.controllers file in the fixture, all */
        assert_file(root, "kubepods/cgroup.subtree_control", "+cpu +memory +pids +hugetlb");
        assert_file(root, "kubepods/burstable/cgroup.subtree_control",
                    "+cpu +memory +pids +hugetlb");
        assert_file(root, "kubepods/burstable/podu1/cpu.weight", "39");
        assert_file(root, "kubepods/burstable/podu1/cpu.max", "50000 100000");
        assert_file(root, "kubepods/burstable/podu1/memory.max", "33554432");
        assert_file(root, "kubepods/burstable/podu1/pids.max", "64");
        assert_file(root, "kubepods/burstable/podu1/hugetlb.1GB.max", "1073741824");

        CgroupResources g = { .cpu_shares = 2, .cpu_quota = -1, .cpu_period = 100000 };
        assert_int_equal(runtime_cgroup_create(root, "/kubepods/podg", &g, &err), 0);
        assert_file(root, "kubepods/podg/cpu.weight", "1");
        assert_file(root, "kubepods/podg/cpu.max", "max 100000");
        assert_false(exists(root, "kubepods/podg/memory.max"));
        rm_root(root);
}

static void test_weight(void **state) {
        assert_int_equal(cgroup_cpu_shares_to_weight(2), 1);
        assert_int_equal(cgroup_cpu_shares_to_weight(1024), 39);
        assert_int_equal(cgroup_cpu_shares_to_weight(262144), 10000);
        assert_int_equal(cgroup_cpu_shares_to_weight(0), 1);
        assert_int_equal(cgroup_cpu_shares_to_weight(1000000), 10000);
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
                cmocka_unit_test(test_systemd_names),
                cmocka_unit_test(test_systemd_detection),
                cmocka_unit_test(test_systemd_slice_argv),
                cmocka_unit_test(test_create_v1),
                cmocka_unit_test(test_create_v1_missing_controller),
                cmocka_unit_test(test_create_v2),
                cmocka_unit_test(test_weight),
                cmocka_unit_test(test_v1),
                cmocka_unit_test(test_v2),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
