/* The cgroup and node counter readers on fixture trees written here: cgroup
 * v1 (separate cpuacct and memory hierarchies, and the cpu,cpuacct
 * co-mount), v2 (one tree), /proc's meminfo, vmstat and stat; and the
 * nano-cores rate. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup-stats.h"
#include "cleanup.h"
#include "fileio.h"
#include "string-util.h"

static char *make_root(void) {
        char tmpl[] = "/tmp/nanolet-test-cgroup-stats-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        return strdup(tmpl);
}

static void put(const char *root, const char *rel, const char *content) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        _cleanup_free_ char *dir = strdup(p);
        *strrchr(dir, '/') = 0;
        assert_int_equal(mkdir_p(dir, 0755), 0);
        FILE *f = fopen(p, "we");
        assert_non_null(f);
        fputs(content, f);
        assert_int_equal(fclose(f), 0);
}

static void rm_root(const char *root) {
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

/* A v1 memory.stat: the total_ lines are the hierarchy's (what counts for
 * a pod with child cgroups), the plain ones this cgroup's own. */
static const char v1_memory_stat[] = "cache 100\n"
                                     "rss 7\n"
                                     "inactive_file 5\n"
                                     "pgfault 1\n"
                                     "total_cache 4096\n"
                                     "total_rss 8192000\n"
                                     "total_pgfault 1234\n"
                                     "total_pgmajfault 5\n"
                                     "total_inactive_file 1048576\n"
                                     "total_active_file 0\n";

static void test_v1(void **state) {
        _cleanup_free_ char *root = make_root();
        const char *cg = "/nanolet/podA/ctr-1";
        put(root, "cpuacct/nanolet/podA/ctr-1/cpuacct.usage", "123456789\n");
        put(root, "memory/nanolet/podA/ctr-1/memory.usage_in_bytes", "10485760\n");
        put(root, "memory/nanolet/podA/ctr-1/memory.stat", v1_memory_stat);
        put(root, "memory/nanolet/podA/ctr-1/memory.limit_in_bytes", "9223372036854771712\n");
        CgroupStats st;
        assert_int_equal(cgroup_stats_read(root, cg, &st), 0);
        assert_true(st.has_cpu);
        assert_int_equal(st.cpu_usage_ns, 123456789);
        assert_true(st.has_memory);
        assert_int_equal(st.memory_usage, 10485760);
        assert_int_equal(st.memory_working_set, 10485760 - 1048576);
        assert_int_equal(st.memory_rss, 8192000);
        assert_int_equal(st.memory_pgfault, 1234);
        assert_int_equal(st.memory_pgmajfault, 5);
        /* v1's "unlimited" is no limit: no availableBytes. */
        assert_true(st.memory_limit == CGROUP_STATS_NO_LIMIT);
        assert_false(st.has_memory_available);
        /* The counter alone, as the periodic sample reads it. */
        uint64_t ns = 0;
        assert_int_equal(cgroup_stats_read_cpu(root, cg, &ns), 0);
        assert_int_equal(ns, 123456789);
        /* no pids hierarchy for it: no task count */
        assert_false(st.has_pids);
        put(root, "pids/nanolet/podA/ctr-1/pids.current", "17\n");
        assert_int_equal(cgroup_stats_read(root, cg, &st), 0);
        assert_true(st.has_pids);
        assert_int_equal(st.pids_current, 17);

        /* A limit: available = limit − working set. */
        put(root, "memory/nanolet/podA/ctr-1/memory.limit_in_bytes", "16777216\n");
        assert_int_equal(cgroup_stats_read(root, cg, &st), 0);
        assert_int_equal(st.memory_limit, 16777216);
        assert_true(st.has_memory_available);
        assert_int_equal(st.memory_available, 16777216 - (10485760 - 1048576));

        /* Working set never goes below 0 (inactive_file > usage is possible
         * in a racing read). */
        put(root, "memory/nanolet/podA/ctr-1/memory.usage_in_bytes", "1000\n");
        assert_int_equal(cgroup_stats_read(root, cg, &st), 0);
        assert_int_equal(st.memory_working_set, 0);
        rm_root(root);
}

static void test_v1_comount_and_missing(void **state) {
        _cleanup_free_ char *root = make_root();
        /* cpu and cpuacct co-mounted, no memory hierarchy for this cgroup */
        put(root, "cpu,cpuacct/nanolet/podB/cpuacct.usage", "42\n");
        put(root, "memory/other/memory.usage_in_bytes", "1\n");
        CgroupStats st;
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podB", &st), 0);
        assert_true(st.has_cpu);
        assert_int_equal(st.cpu_usage_ns, 42);
        assert_false(st.has_memory);

        uint64_t ns = 0;
        assert_int_equal(cgroup_stats_read_cpu(root, "/nanolet/podB", &ns), 0);
        assert_int_equal(ns, 42);
        assert_int_equal(cgroup_stats_read_cpu(root, "/nanolet/gone", &ns), -ENOENT);
        assert_int_equal(cgroup_stats_read_cpu(root, "/nanolet/../etc", &ns), -EINVAL);
        assert_int_equal(cgroup_stats_read(root, "/nanolet/gone", &st), -ENOENT);
        assert_int_equal(cgroup_stats_read(root, "relative", &st), -EINVAL);
        assert_int_equal(cgroup_stats_read(root, "/nanolet/../etc", &st), -EINVAL);
        /* garbage in a counter: that half is missing, not a wrong number */
        put(root, "cpu,cpuacct/nanolet/podC/cpuacct.usage", "x12\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podC", &st), -ENOENT);
        rm_root(root);
}

static void test_v2(void **state) {
        _cleanup_free_ char *root = make_root();
        put(root, "cgroup.controllers", "cpu memory pids\n");
        put(root, "nanolet/podA/ctr-1/cpu.stat",
            "usage_usec 2500000\n"
            "user_usec 2000000\n"
            "system_usec 500000\n"
            "nr_periods 0\n");
        put(root, "nanolet/podA/ctr-1/memory.current", "20971520\n");
        put(root, "nanolet/podA/ctr-1/memory.stat",
            "anon 15728640\n"
            "file 4194304\n"
            "active_file 1048576\n"
            "inactive_file 3145728\n"
            "pgfault 777\n"
            "pgmajfault 3\n");
        put(root, "nanolet/podA/ctr-1/memory.max", "max\n");
        CgroupStats st;
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_true(st.has_cpu);
        assert_int_equal(st.cpu_usage_ns, 2500000000ULL);
        uint64_t cpu_ns = 0;
        assert_int_equal(cgroup_stats_read_cpu(root, "/nanolet/podA/ctr-1", &cpu_ns), 0);
        assert_int_equal(cpu_ns, 2500000000ULL);
        assert_true(st.has_memory);
        assert_int_equal(st.memory_usage, 20971520);
        assert_int_equal(st.memory_working_set, 20971520 - 3145728);
        assert_int_equal(st.memory_rss, 15728640);
        assert_int_equal(st.memory_pgfault, 777);
        assert_int_equal(st.memory_pgmajfault, 3);
        assert_false(st.has_memory_available);
        assert_false(st.has_pids);
        assert_false(st.has_swap); /* a kernel without swap support */
        put(root, "nanolet/podA/ctr-1/memory.swap.current", "4096\n");
        put(root, "nanolet/podA/ctr-1/memory.swap.max", "max\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_true(st.has_swap);
        assert_int_equal(st.swap_usage, 4096);
        assert_true(st.swap_limit == CGROUP_STATS_NO_LIMIT);
        put(root, "nanolet/podA/ctr-1/memory.swap.max", "1048576\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_int_equal(st.swap_limit, 1048576);
        put(root, "nanolet/podA/ctr-1/pids.current", "203\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_true(st.has_pids);
        assert_int_equal(st.pids_current, 203);

        put(root, "nanolet/podA/ctr-1/memory.max", "33554432\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_true(st.has_memory_available);
        assert_int_equal(st.memory_available, 33554432 - (20971520 - 3145728));

        /* crun's "container" cgroup below a systemd scope holds the limit */
        put(root, "nanolet/podA/ctr-1/memory.max", "max\n");
        put(root, "nanolet/podA/ctr-1/container/memory.max", "67108864\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_true(st.has_memory_available);
        assert_int_equal(st.memory_limit, 67108864);
        assert_int_equal(st.memory_available, 67108864 - (20971520 - 3145728));
        assert_int_equal(st.memory_usage, 20971520); /* the scope's: the whole container */
        put(root, "nanolet/podA/ctr-1/container/memory.max", "max\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podA/ctr-1", &st), 0);
        assert_false(st.has_memory_available);

        /* The v1 layout is not looked at in a v2 tree. */
        put(root, "cpuacct/nanolet/podZ/cpuacct.usage", "1\n");
        assert_int_equal(cgroup_stats_read(root, "/nanolet/podZ", &st), -ENOENT);
        assert_int_equal(cgroup_stats_read_cpu(root, "/nanolet/podZ", &cpu_ns), -ENOENT);

        /* The root cgroup's cpu.stat is the node's CPU. */
        put(root, "cpu.stat", "usage_usec 9000000\n");
        uint64_t ns;
        assert_int_equal(cgroup_stats_read_node_cpu(root, "/nonexistent", &ns), 0);
        assert_int_equal(ns, 9000000000ULL);
        rm_root(root);
}

static void test_node(void **state) {
        _cleanup_free_ char *proc = make_root(), *cg = make_root();
        put(proc, "meminfo",
            "MemTotal:        8000000 kB\n"
            "MemFree:         1000000 kB\n"
            "MemAvailable:    5000000 kB\n"
            "Buffers:          100000 kB\n"
            "Cached:          3000000 kB\n"
            "Inactive(anon):    10000 kB\n"
            "Inactive(file):  2000000 kB\n"
            "AnonPages:       1500000 kB\n"
            "SwapTotal:       2000000 kB\n"
            "SwapFree:        1500000 kB\n");
        put(proc, "vmstat", "nr_free_pages 1\npgfault 99999\npgmajfault 12\n");
        /* user nice system idle iowait irq softirq steal guest guest_nice */
        put(proc, "stat",
            "cpu  100 20 30 5000 40 5 6 7 0 0\n"
            "cpu0 50 10 15 2500 20 2 3 3 0 0\n"
            "intr 1 2 3\n"
            "btime 1700000000\n");
        CgroupStats st;
        assert_int_equal(cgroup_stats_read_node_memory(proc, &st), 0);
        assert_true(st.has_memory);
        assert_int_equal(st.memory_usage, 7000000ULL * 1024);
        assert_int_equal(st.memory_working_set, 5000000ULL * 1024);
        assert_int_equal(st.memory_rss, 1500000ULL * 1024);
        assert_true(st.has_memory_available);
        assert_int_equal(st.memory_available, 5000000ULL * 1024);
        assert_int_equal(st.memory_limit, 8000000ULL * 1024);
        assert_int_equal(st.memory_pgfault, 99999);
        assert_int_equal(st.memory_pgmajfault, 12);
        assert_true(st.has_swap);
        assert_int_equal(st.swap_usage, 500000ULL * 1024);
        assert_int_equal(st.swap_limit, 2000000ULL * 1024);

        /* No cpu counter in the cgroup root (an empty v1 root here): the
         * busy ticks of /proc/stat (idle and iowait left out). */
        uint64_t ns;
        assert_int_equal(cgroup_stats_read_node_cpu(cg, proc, &ns), 0);
        long hz = sysconf(_SC_CLK_TCK);
        assert_int_equal(ns, (100 + 20 + 30 + 5 + 6 + 7) * (1000000000ULL / (uint64_t)hz));
        /* A v1 root with cpuacct.usage wins over /proc/stat. */
        put(cg, "cpuacct/cpuacct.usage", "5555\n");
        assert_int_equal(cgroup_stats_read_node_cpu(cg, proc, &ns), 0);
        assert_int_equal(ns, 5555);

        usec_t boot;
        assert_int_equal(cgroup_stats_read_boot_time(proc, &boot), 0);
        assert_int_equal(boot, 1700000000ULL * 1000000);

        put(proc, "meminfo", "MemTotal: 1 kB\n");
        assert_int_equal(cgroup_stats_read_node_memory(proc, &st), -EBADMSG);
        rm_root(proc);
        rm_root(cg);
        assert_int_equal(cgroup_stats_read_node_memory("/nonexistent", &st), -ENOENT);
}

static void test_nano_cores(void **state) {
        uint64_t r;
        /* one core busy for 10 s */
        assert_int_equal(cgroup_stats_nano_cores(0, 1000000, 10000000000ULL, 11000000, &r), 0);
        assert_int_equal(r, 1000000000ULL);
        /* a quarter core over 2 s */
        assert_int_equal(cgroup_stats_nano_cores(5000, 0, 5000 + 500000000ULL, 2000000, &r), 0);
        assert_int_equal(r, 250000000ULL);
        /* idle */
        assert_int_equal(cgroup_stats_nano_cores(7, 0, 7, 1000000, &r), 0);
        assert_int_equal(r, 0);
        /* a day of 64 cores: no overflow */
        uint64_t day = 86400ULL * 1000000ULL;
        assert_int_equal(cgroup_stats_nano_cores(0, 0, 64ULL * 86400ULL * 1000000000ULL, day, &r),
                         0);
        assert_int_equal(r, 64000000000ULL);
        assert_int_equal(cgroup_stats_nano_cores(0, 5, 10, 5, &r), -EINVAL);
        assert_int_equal(cgroup_stats_nano_cores(0, 6, 10, 5, &r), -EINVAL);
        assert_int_equal(cgroup_stats_nano_cores(10, 0, 9, 5, &r), -ERANGE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v1),         cmocka_unit_test(test_v1_comount_and_missing),
                cmocka_unit_test(test_v2),         cmocka_unit_test(test_node),
                cmocka_unit_test(test_nano_cores),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
