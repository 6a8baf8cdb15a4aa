/* Node-pressure eviction (docs/eviction.md), kubelet's model: thresholds on
 * eviction signals ("memory.available<100Mi", "nodefs.available<10%"), hard
 * (acted on at once) or soft (after their grace period), node conditions
 * (MemoryPressure, DiskPressure, PIDPressure) that stay set for the
 * pressure-transition period after the last threshold cleared, and the
 * order in which pods are evicted.
 *
 * This header holds the decisions, pure and unit-tested: parsing the
 * flags/config values, which thresholds an observation meets, and the
 * ranking. The agent's side (EvictionManager, eviction-manager.c) observes
 * the signals cheaply (statfs() of <root-dir> for nodefs and of
 * <root-dir>/images for imagefs, /proc/meminfo's MemAvailable for memory),
 * reclaims node-level resources first (unused images, through image GC),
 * and publishes the conditions in <run-dir>/node-conditions.json (`nanolet
 * node`).
 *
 * Differences from kubelet, on purpose: memory.available is MemAvailable
 * (kubelet uses the root cgroup's working set; MemAvailable is what the
 * kernel says can be had without swapping, and needs no cgroup walk);
 * pid.available is as kubelet's: the smaller of pid_max and threads-max,
 * minus the tasks in /proc/loadavg. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "error.h"
#include "event.h"
#include "time-util.h"

typedef enum EvictionSignal {
        EVICTION_SIGNAL_MEMORY_AVAILABLE,
        EVICTION_SIGNAL_NODEFS_AVAILABLE,
        EVICTION_SIGNAL_NODEFS_INODES_FREE,
        EVICTION_SIGNAL_IMAGEFS_AVAILABLE,
        EVICTION_SIGNAL_IMAGEFS_INODES_FREE,
        EVICTION_SIGNAL_PID_AVAILABLE,
        _EVICTION_SIGNAL_MAX,
        _EVICTION_SIGNAL_INVALID = -EINVAL,
} EvictionSignal;

const char *eviction_signal_to_string(EvictionSignal s);
EvictionSignal eviction_signal_from_string(const char *s);

/* The node condition a signal sets: "MemoryPressure", "DiskPressure",
 * "PIDPressure". */
typedef enum NodeCondition {
        NODE_CONDITION_MEMORY_PRESSURE,
        NODE_CONDITION_DISK_PRESSURE,
        NODE_CONDITION_PID_PRESSURE,
        _NODE_CONDITION_MAX,
        _NODE_CONDITION_INVALID = -EINVAL,
} NodeCondition;
const char *node_condition_to_string(NodeCondition c);
NodeCondition eviction_signal_condition(EvictionSignal s);
/* The resource kubelet names in its eviction message: "memory",
 * "ephemeral-storage", "pids". */
const char *eviction_signal_resource(EvictionSignal s);

/* A value: an absolute quantity (bytes, inodes, pids) or a percentage of
 * the capacity. */
typedef struct EvictionValue {
        uint64_t quantity;
        double percentage; /* 0..1; used when quantity is 0 */
} EvictionValue;

typedef struct EvictionThreshold {
        EvictionSignal signal;
        EvictionValue value;
        bool soft;
        usec_t grace_period;       /* soft only */
        EvictionValue min_reclaim; /* --eviction-minimum-reclaim; zero: none */
} EvictionThreshold;

typedef struct EvictionConfig {
        EvictionThreshold *thresholds;
        size_t n;
        usec_t pressure_transition_period;
} EvictionConfig;

void eviction_config_done(EvictionConfig *c);

/* Parses the flags/config values as kubelet does: hard and soft are
 * "signal<value" lists (value a quantity, "100Mi", or a percentage, "10%";
 * "0%" and "100%" drop the threshold, as kubelet; a zero or negative
 * quantity is an error); grace periods and minimum reclaims are
 * "signal=value" lists; every soft threshold needs a grace period, and a
 * grace period or minimum reclaim for a signal without threshold is an
 * error. On error, err (may be NULL) gets a sentence. */
int eviction_config_parse(char *const *hard, char *const *soft, char *const *grace_periods,
                          char *const *min_reclaims, usec_t transition_period, EvictionConfig *ret,
                          Error *err);

/* What a threshold value means for a capacity: quantity, or percentage of
 * capacity (rounded down). */
uint64_t eviction_value_resolve(const EvictionValue *v, uint64_t capacity);

typedef struct EvictionObservation {
        bool valid;
        uint64_t available;
        uint64_t capacity;
} EvictionObservation;

/* Whether threshold t is met by observations obs[_EVICTION_SIGNAL_MAX]:
 * available < the threshold's value, plus its minimum reclaim while
 * under_pressure (kubelet: once acted on, a threshold is resolved only when
 * min_reclaim more than it is available). An invalid observation meets
 * nothing. */
bool eviction_threshold_met(const EvictionThreshold *t, const EvictionObservation *obs,
                            bool under_pressure);

/* Whether node-pressure eviction may stop pods at all. Every pod nanolet
 * runs is a static pod, and kubelet's eviction manager refuses to evict
 * one (IsCriticalPod() is true for every static pod: "Static pods are not
 * re-admitted after evictions"); under pressure kubelet only reclaims
 * node-level resources. nanolet does the same by default; the other policy
 * (--evict-static-pods, evictStaticPods) is nanolet's own: pods below the
 * critical priority are evicted in kubelet's order and start again once
 * the pressure is over. */
typedef enum StaticPodEviction {
        STATIC_POD_EVICTION_NEVER,
        STATIC_POD_EVICTION_EVICT_AND_READMIT,
        _STATIC_POD_EVICTION_MAX,
        _STATIC_POD_EVICTION_INVALID = -EINVAL,
} StaticPodEviction;
const char *static_pod_eviction_to_string(StaticPodEviction p);

/* A pod as the ranking sees it, for one resource. */
typedef struct EvictionCandidate {
        int32_t priority;  /* eviction_pod_priority() */
        uint64_t usage;    /* of the resource under pressure */
        uint64_t requests; /* sum of the containers' requests of it (0: BestEffort) */
} EvictionCandidate;

/* Pods with a priority at or above this are never evicted
 * (system-cluster-critical is 2000000000, system-node-critical 2000001000). */
#define EVICTION_CRITICAL_PRIORITY 2000000000
/* The highest value a PriorityClass users create may have (Kubernetes'
 * HighestUserDefinablePriority): anything above comes only from the two
 * system classes. */
#define EVICTION_HIGHEST_USER_PRIORITY 1000000000

/* The priority eviction ranks a pod by, as the Priority admission plugin
 * would have resolved it: system-node-critical and system-cluster-critical
 * give their values whatever spec.priority says; otherwise spec.priority
 * (has_priority) when it is within what a user-defined PriorityClass can
 * give, else 0 (a hand-set system priority without its class, which the
 * apiserver refuses and manifest validation refuses too, exempts nothing). */
int32_t eviction_pod_priority(const char *priority_class_name, bool has_priority, int64_t priority);

/* kubelet's order (rankMemoryPressure / rankDiskPressureFunc): pods whose
 * usage exceeds their requests first (every BestEffort pod that uses
 * anything), then lower priority first, then larger usage above requests
 * first. For PID pressure (rankPIDPressure) the usage is the pod's process
 * count and the requests 0: lower priority first, then more processes.
 * Critical pods are left out; with STATIC_POD_EVICTION_NEVER every pod is
 * (kubelet: every static pod is critical). ret has room for n; returns the
 * count. */
size_t eviction_rank(const EvictionCandidate *c, size_t n, StaticPodEviction policy, size_t *ret);

/* kubelet's message: "The node was low on resource: <resource>. Threshold
 * quantity: <q>, available: <a>. " (quantities as Kubernetes prints them,
 * e.g. "6553Ki"; pids as DecimalSI, "1k"). */
char *eviction_message(EvictionSignal s, uint64_t threshold, uint64_t available);

/* ---- the agent's side ---- */

typedef struct ImageGc ImageGc;
typedef struct Metrics Metrics;
typedef struct PodManager PodManager;
typedef struct EvictionManager EvictionManager;

typedef struct EvictionManagerOptions {
        const char *root_dir;          /* nodefs: statfs(root_dir); imagefs: root_dir/images */
        const char *status_path;       /* <run-dir>/node-conditions.json */
        const EvictionConfig *config;  /* copied */
        ImageGc *image_gc;             /* reclaims unused images under disk pressure; may be NULL */
        PodManager *pods;              /* evicts pods; NULL: conditions only */
        StaticPodEviction static_pods; /* NEVER: conditions and node-level reclaim only */
        Metrics *metrics;              /* may be NULL */
        usec_t period;                 /* 0: 10 s, as kubelet's housekeeping */
} EvictionManagerOptions;

/* Observes the signals every period (statfs(), /proc/meminfo, /proc/loadavg:
 * cheap, on the loop), keeps the node conditions (a condition is True while
 * a threshold of its signals is met, hard at once, soft after its grace
 * period, and for pressure_transition_period after the last one cleared),
 * asks image GC to remove every unused image when a disk threshold is met.
 * With STATIC_POD_EVICTION_NEVER that is all: a met threshold (once per
 * episode) and a pod over a local storage limit (once while it stays over)
 * are logged, and no pod is stopped. With EVICT_AND_READMIT, while a
 * memory, disk or pid threshold stays met, it evicts one pod per period in
 * eviction_rank() order (usage, or process count, from the stats summary,
 * requests and priority from their specs; a pod already evicted or no
 * longer running is skipped), counting kubelet_evictions_total; once no
 * condition is True any more, every evicted pod may start again
 * (pod_manager_unevict_all(): the transition period is the back-off). It
 * rewrites status_path when a condition changes (and every minute, with the
 * observations): {"conditions": [{"type", "status", "reason", "message",
 * "lastTransitionTime"}], "signals": {"<signal>": {"available",
 * "capacity"}}, "evicted": N}. */
int eviction_manager_new(EvictionManager **ret, Event *e, const EvictionManagerOptions *o);
EvictionManager *eviction_manager_free(EvictionManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(EvictionManager *, eviction_manager_free)
/* Whether a node condition is True now. */
bool eviction_manager_condition(const EvictionManager *m, NodeCondition c);
