/* The Summary API (GET /stats/summary, docs/api.md): kubelet's
 * k8s.io/kubelet/pkg/apis/stats/v1alpha1 Summary, built from cgroups
 * (cgroup-stats.h), statfs and directory usage (disk-usage.h).
 *
 * Sources: node cpu from the root cgroup (or /proc/stat), node memory from
 * /proc/meminfo, node fs = statfs(--root-dir), runtime.imageFs =
 * statfs(<root-dir>/images) with usedBytes = the usage of <root-dir>/images
 * and <root-dir>/layers; per pod its cgroup kubepods/.../pod<uid> (cgroup.h), per running
 * container its cgroup .../pod<uid>/<container id> (the cgroupsPath
 * runc was given), rootfs = the attempt's writable layer
 * <pod-dir>/containers/<name>/<attempt>/upper, logs = its log directory
 * <pod-log-dir>/<name>; a pod's ephemeral-storage is the sum of its
 * containers' rootfs and logs.
 *
 * Sampling: a counter is read when the summary is asked for (so
 * usageCoreNanoSeconds is current), but usageNanoCores needs a rate, so
 * pod_stats_sample() (the manager's timer, every POD_STATS_SAMPLE_PERIOD)
 * records every cgroup's CPU counter, keeping the last two samples. A
 * request's rate is taken from the newest sample at least
 * POD_STATS_MIN_WINDOW old to the counter read now; a cgroup with no such
 * sample yet (a container started within the last second or so) has no
 * usageNanoCores, as kubelet omits it before its second sample. A request
 * that finds no sample for a cgroup records one, so the next request a
 * second later has a rate even between timer ticks. Directory usage is a
 * walk of unbounded length, so it runs in a helper process (never on the
 * loop) started by pod_stats_sample() for every directory it saw, at most
 * one at a time, every POD_STATS_DISK_USAGE_PERIOD and at the next tick
 * when a new directory appeared; requests report the last result
 * (usedBytes and inodesUsed are absent until there is one). Nothing is
 * walked before the first request (which starts the first run at once):
 * an agent whose summary nobody reads spawns no helpers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup-stats.h"
#include "cleanup.h"
#include "disk-usage.h"
#include "event.h"
#include "metrics.h"
#include "pod-worker.h"

#define POD_STATS_SAMPLE_PERIOD (10 * USEC_PER_SEC)
#define POD_STATS_MIN_WINDOW (1 * USEC_PER_SEC)
#define POD_STATS_DISK_USAGE_PERIOD (30 * USEC_PER_SEC)

/* ---- the pure part: CPU samples and the JSON ---- */

/* The last two CPU samples of each cgroup, keyed by its path. */
typedef struct CpuSamples CpuSamples;

CpuSamples *cpu_samples_new(void);
CpuSamples *cpu_samples_free(CpuSamples *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(CpuSamples *, cpu_samples_free)
/* Records a sample (time CLOCK_MONOTONIC). 0 or -ENOMEM. */
int cpu_samples_record(CpuSamples *s, const char *key, uint64_t usage_ns, usec_t now);
/* Forgets the keys not recorded since the previous sweep (gone cgroups). */
void cpu_samples_sweep(CpuSamples *s);
/* The rate from key's newest sample at least POD_STATS_MIN_WINDOW older
 * than now to usage_ns. -ENODATA when there is no such sample (or the
 * counter went backwards: the cgroup was recreated). */
int cpu_samples_nano_cores(const CpuSamples *s, const char *key, uint64_t usage_ns, usec_t now,
                           uint64_t *ret);
bool cpu_samples_has(const CpuSamples *s, const char *key);

/* Filesystem figures of one FsStats; time 0 = absent altogether. */
typedef struct StatsFs {
        usec_t time; /* CLOCK_REALTIME */
        FsInfo fs;
        /* The usage being reported (a directory's, or the filesystem's
         * own for the node); absent when !used.valid. */
        DiskUsage used;
} StatsFs;

/* cpu and memory of one cgroup; time 0 = absent. */
typedef struct StatsUsage {
        usec_t time; /* CLOCK_REALTIME */
        CgroupStats cg;
        bool has_nano_cores;
        uint64_t nano_cores;
} StatsUsage;

typedef struct ContainerSummary {
        const char *name;
        usec_t start_time; /* CLOCK_REALTIME */
        StatsUsage usage;
        StatsFs rootfs, logs;
} ContainerSummary;

/* A disk-backed emptyDir (kubelet's VolumeStats): its usage counts into the
 * pod's ephemeral storage, and emptyDir.sizeLimit is checked against it
 * (src/gc/eviction.h). */
typedef struct VolumeSummary {
        const char *name;
        StatsFs fs;
} VolumeSummary;

typedef struct PodSummary {
        const char *name, *namespace, *uid;
        usec_t start_time;
        ContainerSummary *containers;
        size_t n_containers;
        StatsUsage usage;
        StatsFs ephemeral_storage;
        VolumeSummary *volumes;
        size_t n_volumes;
} PodSummary;

typedef struct NodeSummary {
        const char *node_name;
        usec_t start_time;
        StatsUsage usage;
        StatsFs fs, image_fs;
} NodeSummary;

/* The Summary JSON (field names as v1alpha1's; optional ones left out when
 * unknown, as kubelet's omitempty does). ret is malloc'd and
 * NUL-terminated, ends with a newline. 0 or -ENOMEM. */
int pod_stats_summary_format(const NodeSummary *node, const PodSummary *pods, size_t n_pods,
                             char **ret, size_t *ret_size);

/* GET /metrics/resource: kubelet's resource metrics (its
 * resource_metrics.go), the cpu and memory of the Summary: node, pod and
 * container CPU counters and working sets, each with the time its figure
 * was read as the sample's timestamp, the containers' start times, and
 * scrape_error (resource_scrape_error) 1 when the node's figures could not
 * be read, and kubelet's swap series where the kernel counts swap. */
typedef struct ResourceMetrics {
        MetricFamily *node_cpu, *node_memory;
        MetricFamily *pod_cpu, *pod_memory;
        MetricFamily *container_cpu, *container_memory, *container_start_time;
        MetricFamily *node_swap, *pod_swap, *container_swap, *container_swap_limit;
        MetricFamily *scrape_error, *resource_scrape_error;
} ResourceMetrics;

/* Registers the families on m (NULL: *rm all NULL, nothing kept). */
int resource_metrics_register(ResourceMetrics *rm, Metrics *m);

/* Replaces every series with those of node and pods[0..n-1] (their cpu and
 * memory; a figure that is absent has no series): the series of a pod that
 * is gone go with it. */
void resource_metrics_set(const ResourceMetrics *rm, const NodeSummary *node,
                          const PodSummary *pods, size_t n_pods);

/* ---- the collector, over the pod workers ---- */

typedef struct PodStats PodStats;

typedef struct PodStatsOptions {
        const char *node_name;
        const char *root_dir;    /* node fs; <root_dir>/images and /layers: the image fs */
        const char *cgroup_root; /* NULL: "/sys/fs/cgroup" */
        const char *proc_dir;    /* NULL: "/proc" */
} PodStatsOptions;

int pod_stats_new(PodStats **ret, Event *e, const PodStatsOptions *o);
PodStats *pod_stats_free(PodStats *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(PodStats *, pod_stats_free)

/* The periodic sample over the pods workers[0..n-1]: CPU counters, and a
 * directory usage run when one is due. Never blocks. */
void pod_stats_sample(PodStats *s, PodWorker *const *workers, size_t n);

/* The Summary of the node and of the pods whose status has been written
 * (the pods of /pods), in namespace/name order, each with its running
 * containers. 0 or -ENOMEM. */
int pod_stats_summary_json(PodStats *s, PodWorker *const *workers, size_t n, char **ret,
                           size_t *ret_size);

/* resource_metrics_set() over the node and the pods of the Summary, their
 * cgroups read now. Only cpu and memory: it samples nothing and starts no
 * directory walk. */
void pod_stats_resource_metrics(PodStats *s, PodWorker *const *workers, size_t n,
                                const ResourceMetrics *rm);
