/* The sync loop (docs/internals/runtime.md): the desired state (source events) and the
 * observed state (runtime callbacks, a PLEG-style relist every second and
 * conmon's exit files, watched with inotify) meet here. One worker per pod
 * carries out what pod_compute_actions() decides, asynchronously; a changed
 * manifest's new pod starts only after the old one has terminated. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "cgroup.h"
#include "cni.h"
#include "image.h"
#include "image-pulls.h"
#include "metrics.h"
#include "runtime.h"
#include "source.h"
#include "source-errors.h"

typedef struct PodManager PodManager;

typedef struct PodManagerOptions {
        const char *root_dir;
        const char *run_dir;
        const char *pod_logs_dir;
        const char *container_logs_dir; /* /var/log/containers; NULL = no symlinks */
        const char *node_name;
        const char *node_hostname;
        const char *cluster_domain;
        char *const *cluster_dns;
        char *const *node_ips; /* status.hostIP(s); NULL = unknown */
        const char *resolv_conf;
        const char *runtime_name; /* "runc"/"crun": containerID scheme */
        int64_t pod_pids_limit;
        /* Pod cgroups (cgroup.h): driver and --cgroup-root; cgroup_fs is
         * where the hierarchies are mounted (NULL = "/sys/fs/cgroup"). */
        CgroupLayout cgroups;
        const char *cgroup_fs;
        const char *busctl; /* the systemd driver's slice calls; NULL = "busctl" */
        bool cpu_cfs_quota; /* --cpu-cfs-quota: CFS quota from cpu limits */
        /* --seccomp-default=false (kubelet's default): containers without a
         * seccompProfile run Unconfined; false here keeps RuntimeDefault. */
        bool no_seccomp_default;
        /* allowedUnsafeSysctls: names or "prefix*" allowed beyond the safe
         * set (pod-sysctls.h); a pod with any other sysctl is rejected,
         * SysctlForbidden. pod_manager_new() fails on an invalid entry. */
        char *const *allowed_unsafe_sysctls;
        /* The QoS parent "kubepods" gets the node's allocatable (capacity
         * minus --kube-reserved and --system-reserved) as its limit when
         * anything is reserved; 0 = leave unlimited. */
        uint64_t allocatable_memory;
        int64_t allocatable_milli_cpu;
        /* maxPods: pods beyond it wait, with kubelet's OutOfpods reason,
         * until one goes away; 0 = no bound. */
        int64_t max_pods;
        int64_t container_log_max_size; /* rotation (docs/logs.md); 0 = none */
        unsigned container_log_max_files;
        unsigned container_log_max_workers;    /* rotation workers at once; 0 = 1 */
        usec_t container_log_monitor_interval; /* 0 = 10 s */
        usec_t sync_frequency;    /* every pod is synced at least this often; 0 = 1 min */
        ImageStore *images;       /* not owned */
        Runtime *runtime;         /* not owned */
        CniRunner *cni;           /* not owned; NULL: pods get only lo */
        const char *cni_conf_dir; /* --cni-conf-dir */
        const char *pod_cidr;     /* --pod-cidr, for the built-in network */
        PodConfig *config;        /* not owned: ConfigMap/Secret lookups */
        ImagePulls *pulls;        /* not owned; NULL: no registry pulls */
        bool image_pull_never;    /* --image-pull-policy-override=never */
        /* /metrics and /metrics/probes (not owned; NULL: nothing counted).
         * The manager adds a collector to metrics: format it only while the
         * manager lives. */
        Metrics *metrics;
        Metrics *probe_metrics;
        /* /metrics/resource (pod-stats.h) and /metrics/pods
         * (kube-state-metrics.h); not owned, NULL: not served. Each gets a
         * collector, as metrics does. */
        Metrics *resource_metrics;
        Metrics *kube_state_metrics;
} PodManagerOptions;

int pod_manager_new(PodManager **ret, Event *e, const PodManagerOptions *o);
PodManager *pod_manager_free(PodManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(PodManager *, pod_manager_free)

/* Adopts the pods an earlier run of the agent checkpointed, then starts the
 * relist timer and the exit-file watch. Call before the sources start. */
int pod_manager_start(PodManager *m);
/* Every source has been read once (the directory scanned, the URL fetched
 * or failed): adopted pods no source asked for are terminated from now on. */
void pod_manager_sources_ready(PodManager *m);
/* Feeds one desired-state change (from PodConfig). An ERROR event updates
 * the source errors (and <run-dir>/status/sources.json). */
void pod_manager_handle_source_event(PodManager *m, const SourceEvent *ev);
/* The manifest problems the sources report right now, for /metrics
 * (source_errors_count()). Borrowed: lives as long as m. */
const SourceErrors *pod_manager_source_errors(const PodManager *m);
/* Terminates every pod (grace periods honoured); done is called once no pod
 * is left. */
int pod_manager_stop_all(PodManager *m, void (*done)(void *userdata), void *userdata);
unsigned pod_manager_count(PodManager *m);

/* The pods as a v1 PodList (what `nanolet pods -o json` shows), in
 * namespace/name order: each pod's status as its worker last wrote it, so
 * nothing is rebuilt or re-read. A pod whose status was never written yet is
 * left out. ret is a malloc'd NUL-terminated string; 0 or -ENOMEM. */
int pod_manager_pod_list_json(PodManager *m, char **ret, size_t *ret_size);

/* GET /stats/summary: kubelet's Summary (stats/v1alpha1) of the node and of
 * the pods of pod_manager_pod_list_json(), from cgroups, statfs and the
 * directory usage last measured (pod-stats.h says what comes from where and
 * how CPU rates are sampled). Reads a few small kernel files per container,
 * never blocks. ret is malloc'd and NUL-terminated; 0 or -ENOMEM. */
int pod_manager_stats_summary_json(PodManager *m, char **ret, size_t *ret_size);

/* For eviction's local storage limits (src/gc/eviction.h): the PodList and
 * the Summary as the two calls above make them, restricted to the pods that
 * have such a limit (an app container's limits.ephemeral-storage, an
 * emptyDir's sizeLimit). Returns how many pods that is; with none (the
 * common case) nothing is built or read, and ret_list and ret_summary are
 * left alone. -ENOMEM. */
int pod_manager_local_limits_json(PodManager *m, char **ret_list, size_t *ret_list_size,
                                  char **ret_summary, size_t *ret_summary_size);

/* Node-pressure eviction (src/gc/eviction.h) of the pod with this UID
 * (pod_worker_evict()); -ENOENT when no live worker has it. */
int pod_manager_evict(PodManager *m, const char *uid, const char *message);
/* The pressure cleared: every evicted pod whose eviction is complete (it
 * stopped, its volumes are gone) and at least min_age old (the back-off) may
 * start again (pod_worker_unevict()). Returns how many. */
unsigned pod_manager_unevict_all(PodManager *m, usec_t min_age);
/* How many pods are evicted now, and how many of them still run or hold
 * their volumes. */
unsigned pod_manager_evicted_count(PodManager *m);
unsigned pod_manager_evictions_in_progress(PodManager *m);

/* The sync loop's heartbeat is the relist (every
 * POD_MANAGER_RELIST_PERIOD_USEC). When it last ran (event loop time,
 * CLOCK_MONOTONIC), 0 before pod_manager_start(). */
#define POD_MANAGER_RELIST_PERIOD_USEC (1 * USEC_PER_SEC)
usec_t pod_manager_last_relist(PodManager *m);
