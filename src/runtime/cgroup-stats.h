/* Resource counters for the Summary API (docs/api.md): one cgroup's CPU and
 * memory counters, cgroup v1 or v2, and the node's from the root cgroup and
 * /proc. Readers only: they read a few small kernel files (cheap, never
 * blocking for long), keep no state and take their roots as arguments, so
 * tests point them at fixture trees.
 *
 * Definitions follow cAdvisor, which kubelet's /stats/summary reports:
 *   usage          v1 memory.usage_in_bytes          v2 memory.current
 *   working set    usage − inactive_file (≥ 0)      (v1: total_inactive_file)
 *   rss            v1 total_rss                     v2 anon
 *   page faults    v1 total_pgfault/total_pgmajfault v2 pgfault/pgmajfault
 *   limit          v1 memory.limit_in_bytes         v2 memory.max ("max": none)
 *                  (v1's "unlimited", a number ≥ 2^62, counts as none)
 *   cpu            v1 cpuacct.usage (ns)            v2 cpu.stat usage_usec × 1000
 *   tasks          v1 pids/…/pids.current           v2 pids.current
 *   swap           v2 memory.swap.current, limit memory.swap.max (v1: none)
 *   node swap      /proc/meminfo SwapTotal − SwapFree, limit SwapTotal */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "time-util.h"

#define CGROUP_STATS_NO_LIMIT UINT64_MAX

typedef struct CgroupStats {
        bool has_cpu;
        uint64_t cpu_usage_ns; /* cumulative, all cores */

        bool has_memory;
        uint64_t memory_usage;
        uint64_t memory_working_set;
        uint64_t memory_rss;
        uint64_t memory_pgfault;
        uint64_t memory_pgmajfault;
        uint64_t memory_limit; /* CGROUP_STATS_NO_LIMIT when unlimited */
        /* limit − working set (≥ 0) when there is a limit, as kubelet's
         * availableBytes; for the node, MemAvailable. */
        bool has_memory_available;
        uint64_t memory_available;

        /* pids.current (v1 in the pids controller): the cgroup's tasks,
         * threads included, the count the pids limit applies to */
        bool has_pids;
        uint64_t pids_current;

        /* swap in use, and the swap limit (CGROUP_STATS_NO_LIMIT: none) */
        bool has_swap;
        uint64_t swap_usage;
        uint64_t swap_limit;
} CgroupStats;

/* Reads the cgroup at path ("/kubepods/pod<uid>/<id>", "/" for the root)
 * below cgroup_root (normally "/sys/fs/cgroup"): one tree when
 * cgroup_root/cgroup.controllers exists (v2), else the v1 controllers
 * cgroup_root/cpuacct (or cpu,cpuacct) and cgroup_root/memory. Either half
 * may be missing (has_cpu / has_memory false); -ENOENT when both are,
 * -EINVAL for a path that is not absolute or has "..". */
int cgroup_stats_read(const char *cgroup_root, const char *path, CgroupStats *ret);

/* The CPU counter alone (what cgroup_stats_read() gives as cpu_usage_ns),
 * for the periodic CPU sample: one file instead of the five the whole read
 * opens. -ENOENT when the cgroup has none, -EINVAL as above. */
int cgroup_stats_read_cpu(const char *cgroup_root, const char *path, uint64_t *ret_ns);

/* The node's memory from proc_dir/meminfo (and proc_dir/vmstat for the
 * page faults, when readable): available = MemAvailable, usage = MemTotal −
 * MemFree, working set = usage − Inactive(file), rss = AnonPages, limit =
 * MemTotal. */
int cgroup_stats_read_node_memory(const char *proc_dir, CgroupStats *ret);

/* The node's cumulative CPU time in ns: the root cgroup's counter (as
 * cgroup_stats_read(cgroup_root, "/")) when it has one, else the "cpu" line
 * of proc_dir/stat (user+nice+system+irq+softirq+steal, USER_HZ ticks). */
int cgroup_stats_read_node_cpu(const char *cgroup_root, const char *proc_dir, uint64_t *ret_ns);

/* The boot time (CLOCK_REALTIME usec) from proc_dir/stat's btime line. */
int cgroup_stats_read_boot_time(const char *proc_dir, usec_t *ret);

/* The average CPU usage between two samples of a cumulative counter, in
 * nano-cores (core-nanoseconds per second, kubelet's usageNanoCores): a busy
 * single thread is ~1e9. -EINVAL when cur_time is not after prev_time,
 * -ERANGE when the counter went backwards (the cgroup was recreated). */
int cgroup_stats_nano_cores(uint64_t prev_ns, usec_t prev_time, uint64_t cur_ns, usec_t cur_time,
                            uint64_t *ret);
