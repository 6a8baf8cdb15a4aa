/* Kernel files are read whole with one small capped buffer: cgroupfs and
 * procfs report no useful size, and memory.stat is a few KiB. */
#include "cgroup-stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "string-util.h"

#define KERNEL_FILE_MAX (64 * 1024)

static int read_kernel_file(const char *dir, const char *sub, const char *name, char **ret) {
        _cleanup_free_ char *p = strprintf("%s%s/%s", dir, streq(sub, "/") ? "" : sub, name);
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, KERNEL_FILE_MAX, ret, NULL);
}

static int parse_u64(const char *s, uint64_t *ret) {
        char *end;
        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0)
                return -errno;
        while (*end == ' ' || *end == '\n' || *end == '\t')
                end++;
        if (*end != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int read_u64(const char *dir, const char *sub, const char *name, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r = read_kernel_file(dir, sub, name, &s);
        return r < 0 ? r : parse_u64(s, ret);
}

/* The value of "key value" in a flat-keyed file (memory.stat, cpu.stat,
 * vmstat, or "Key:  value kB" in meminfo, the unit left to the caller). */
static int keyed_value(const char *text, const char *key, uint64_t *ret) {
        size_t n = strlen(key);
        for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                if (strncmp(l, key, n) != 0 || (l[n] != ' ' && l[n] != '\t'))
                        continue;
                const char *v = l + n;
                while (*v == ' ' || *v == '\t')
                        v++;
                char *end;
                errno = 0;
                unsigned long long x = strtoull(v, &end, 10);
                if (errno != 0 || end == v)
                        return -EINVAL;
                *ret = x;
                return 0;
        }
        return -ENOENT;
}

static int path_check(const char *path) {
        if (isempty(path) || path[0] != '/' || strstr(path, ".."))
                return -EINVAL;
        return 0;
}

static uint64_t sub_floor(uint64_t a, uint64_t b) {
        return a > b ? a - b : 0;
}

static void read_cpu_v1(const char *root, const char *path, CgroupStats *st) {
        static const char *const cpu_dirs[] = { "cpuacct", "cpu,cpuacct", "cpuacct,cpu" };
        for (size_t i = 0; i < sizeof cpu_dirs / sizeof cpu_dirs[0] && !st->has_cpu; i++) {
                _cleanup_free_ char *d = strprintf("%s/%s", root, cpu_dirs[i]);
                st->has_cpu = d && read_u64(d, path, "cpuacct.usage", &st->cpu_usage_ns) >= 0;
        }
}

static void read_cpu_v2(const char *root, const char *path, CgroupStats *st) {
        _cleanup_free_ char *cpu = NULL;
        uint64_t usec;
        if (read_kernel_file(root, path, "cpu.stat", &cpu) >= 0 &&
            keyed_value(cpu, "usage_usec", &usec) >= 0) {
                st->has_cpu = true;
                st->cpu_usage_ns = usec * NSEC_PER_USEC;
        }
}

/* The names memory.stat gives what the stats take from it: v1's hierarchical
 * totals, v2's own (always hierarchical). */
typedef struct MemoryStatKeys {
        const char *inactive_file;
        const char *rss;
        const char *pgfault;
        const char *pgmajfault;
} MemoryStatKeys;

static const MemoryStatKeys memory_stat_v1 = {
        .inactive_file = "total_inactive_file",
        .rss = "total_rss",
        .pgfault = "total_pgfault",
        .pgmajfault = "total_pgmajfault",
};

static const MemoryStatKeys memory_stat_v2 = {
        .inactive_file = "inactive_file",
        .rss = "anon",
        .pgfault = "pgfault",
        .pgmajfault = "pgmajfault",
};

/* The memory figures from memory.stat's text, memory_usage already read:
 * the working set is the usage without the inactive file pages, as
 * cAdvisor's. */
static void memory_stat(const char *stat, const MemoryStatKeys *k, CgroupStats *st) {
        uint64_t inactive = 0;

        st->has_memory = true;
        (void)keyed_value(stat, k->inactive_file, &inactive);
        (void)keyed_value(stat, k->rss, &st->memory_rss);
        (void)keyed_value(stat, k->pgfault, &st->memory_pgfault);
        (void)keyed_value(stat, k->pgmajfault, &st->memory_pgmajfault);
        st->memory_working_set = sub_floor(st->memory_usage, inactive);
}

static void read_v1(const char *root, const char *path, CgroupStats *st) {
        _cleanup_free_ char *mem = strprintf("%s/memory", root);
        _cleanup_free_ char *stat = NULL;

        read_cpu_v1(root, path, st);
        _cleanup_free_ char *pids = strprintf("%s/pids", root);
        st->has_pids = pids && read_u64(pids, path, "pids.current", &st->pids_current) >= 0;
        if (!mem || read_u64(mem, path, "memory.usage_in_bytes", &st->memory_usage) < 0 ||
            read_kernel_file(mem, path, "memory.stat", &stat) < 0)
                return;
        memory_stat(stat, &memory_stat_v1, st);
        /* v1 says "no limit" with a huge page-aligned number. */
        uint64_t limit;
        if (read_u64(mem, path, "memory.limit_in_bytes", &limit) >= 0 &&
            limit < (UINT64_C(1) << 62))
                st->memory_limit = limit;
}

static void read_v2(const char *root, const char *path, CgroupStats *st) {
        _cleanup_free_ char *stat = NULL, *max = NULL;

        read_cpu_v2(root, path, st);
        st->has_pids = read_u64(root, path, "pids.current", &st->pids_current) >= 0;
        if (read_u64(root, path, "memory.current", &st->memory_usage) < 0 ||
            read_kernel_file(root, path, "memory.stat", &stat) < 0)
                return;
        memory_stat(stat, &memory_stat_v2, st);
        /* No memory.swap.* without swap support in the kernel. */
        if (read_u64(root, path, "memory.swap.current", &st->swap_usage) >= 0) {
                _cleanup_free_ char *swap_max = NULL;
                uint64_t swap_limit;
                st->has_swap = true;
                if (read_kernel_file(root, path, "memory.swap.max", &swap_max) >= 0 &&
                    parse_u64(swap_max, &swap_limit) >= 0)
                        st->swap_limit = swap_limit;
        }
        uint64_t limit;
        if (read_kernel_file(root, path, "memory.max", &max) >= 0 && parse_u64(max, &limit) >= 0) {
                st->memory_limit = limit;
                return;
        }
        /* crun under the systemd driver runs the container in a cgroup
         * "container" below its scope and puts the limits there (systemd
         * leaves a delegated scope's children alone): the scope has none. */
        _cleanup_free_ char *sub = strprintf("%s/container", path), *submax = NULL;
        if (sub && read_kernel_file(root, sub, "memory.max", &submax) >= 0 &&
            parse_u64(submax, &limit) >= 0)
                st->memory_limit = limit;
}

/* Before the stats of path are read: 1 for a cgroup2 (unified) root, 0 for
 * v1; -EINVAL for a path that is not absolute or climbs up, -ENOMEM. */
static int stats_root_unified(const char *cgroup_root, const char *path) {
        int r = path_check(path);
        if (r < 0)
                return r;
        _cleanup_free_ char *controllers = strprintf("%s/cgroup.controllers", cgroup_root);
        if (!controllers)
                return -ENOMEM;
        return access(controllers, F_OK) == 0;
}

int cgroup_stats_read(const char *cgroup_root, const char *path, CgroupStats *ret) {
        CgroupStats st = { .memory_limit = CGROUP_STATS_NO_LIMIT,
                           .swap_limit = CGROUP_STATS_NO_LIMIT };
        int unified = stats_root_unified(cgroup_root, path);
        if (unified < 0)
                return unified;
        if (unified)
                read_v2(cgroup_root, path, &st);
        else
                read_v1(cgroup_root, path, &st);
        if (!st.has_cpu && !st.has_memory)
                return -ENOENT;
        /* kubelet: availableBytes = limit − working set, absent without a limit. */
        if (st.has_memory && st.memory_limit != CGROUP_STATS_NO_LIMIT) {
                st.has_memory_available = true;
                st.memory_available = sub_floor(st.memory_limit, st.memory_working_set);
        }
        *ret = st;
        return 0;
}

int cgroup_stats_read_cpu(const char *cgroup_root, const char *path, uint64_t *ret_ns) {
        CgroupStats st = {};
        int unified = stats_root_unified(cgroup_root, path);
        if (unified < 0)
                return unified;
        if (unified)
                read_cpu_v2(cgroup_root, path, &st);
        else
                read_cpu_v1(cgroup_root, path, &st);
        if (!st.has_cpu)
                return -ENOENT;
        *ret_ns = st.cpu_usage_ns;
        return 0;
}

int cgroup_stats_read_node_memory(const char *proc_dir, CgroupStats *ret) {
        CgroupStats st = { .has_memory = true, .swap_limit = CGROUP_STATS_NO_LIMIT };
        _cleanup_free_ char *mi = NULL, *vm = NULL;
        uint64_t total, free_kb, avail, inactive = 0, anon = 0, swap_total, swap_free;

        int r = read_kernel_file(proc_dir, "/", "meminfo", &mi);
        if (r < 0)
                return r;
        if (keyed_value(mi, "MemTotal:", &total) < 0 || keyed_value(mi, "MemFree:", &free_kb) < 0 ||
            keyed_value(mi, "MemAvailable:", &avail) < 0)
                return -EBADMSG;
        (void)keyed_value(mi, "Inactive(file):", &inactive);
        (void)keyed_value(mi, "AnonPages:", &anon);
        st.memory_limit = total * 1024;
        st.memory_usage = sub_floor(total, free_kb) * 1024;
        st.memory_working_set = sub_floor(st.memory_usage, inactive * 1024);
        st.memory_rss = anon * 1024;
        /* The kernel's own estimate of what can be had without swapping. */
        st.has_memory_available = true;
        st.memory_available = avail * 1024;
        if (keyed_value(mi, "SwapTotal:", &swap_total) >= 0 &&
            keyed_value(mi, "SwapFree:", &swap_free) >= 0) {
                st.has_swap = true;
                st.swap_usage = sub_floor(swap_total, swap_free) * 1024;
                st.swap_limit = swap_total * 1024;
        }
        if (read_kernel_file(proc_dir, "/", "vmstat", &vm) >= 0) {
                (void)keyed_value(vm, "pgfault", &st.memory_pgfault);
                (void)keyed_value(vm, "pgmajfault", &st.memory_pgmajfault);
        }
        *ret = st;
        return 0;
}

int cgroup_stats_read_node_cpu(const char *cgroup_root, const char *proc_dir, uint64_t *ret_ns) {
        _cleanup_free_ char *stat = NULL;
        unsigned long long v[8] = {};

        if (cgroup_stats_read_cpu(cgroup_root, "/", ret_ns) >= 0)
                return 0;
        int r = read_kernel_file(proc_dir, "/", "stat", &stat);
        if (r < 0)
                return r;
        /* cpu user nice system idle iowait irq softirq steal */
        if (sscanf(stat, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]) < 7)
                return -EBADMSG;
        long hz = sysconf(_SC_CLK_TCK);
        if (hz <= 0)
                hz = 100;
        uint64_t ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
        *ret_ns = ticks * (UINT64_C(1000000000) / (uint64_t)hz);
        return 0;
}

int cgroup_stats_read_boot_time(const char *proc_dir, usec_t *ret) {
        _cleanup_free_ char *stat = NULL;
        uint64_t btime;
        int r = read_kernel_file(proc_dir, "/", "stat", &stat);
        if (r < 0)
                return r;
        if (keyed_value(stat, "btime", &btime) < 0)
                return -EBADMSG;
        *ret = btime * USEC_PER_SEC;
        return 0;
}

int cgroup_stats_nano_cores(uint64_t prev_ns, usec_t prev_time, uint64_t cur_ns, usec_t cur_time,
                            uint64_t *ret) {
        if (cur_time <= prev_time)
                return -EINVAL;
        if (cur_ns < prev_ns)
                return -ERANGE;
        /* ns of CPU per ns of wall time, × 1e9; in 128 bits, as hours of
         * usage × 1e9 overflow 64. */
        unsigned __int128 x = (unsigned __int128)(cur_ns - prev_ns) * 1000000000u;
        *ret = (uint64_t)(x / ((cur_time - prev_time) * NSEC_PER_USEC));
        return 0;
}
