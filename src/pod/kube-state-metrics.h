/* GET /metrics/pods (docs/api.md): the pod series of kube-state-metrics,
 * under its names, labels and help texts, so the alerts and dashboards
 * written for it (kubernetes-mixin's KubePodCrashLooping, KubePodNotReady,
 * KubeContainerWaiting, ...) read a node that has no API server for
 * kube-state-metrics to watch.
 *
 * They are made from the v1 Pod each worker last wrote (what /pods serves),
 * as kube-state-metrics makes them from the Pod objects it watches, so the
 * two never disagree. Every scrape rebuilds every series: a pod that is gone
 * has none. Label values come from manifests and are escaped (and made
 * UTF-8) by the registry (metrics.h).
 *
 * kube-state-metrics' rules kept: a phase, condition or state series for
 * every possible value, 1 for the one that holds and 0 for the others;
 * a *_reason series only for the reason that holds now, value 1; init
 * containers under kube_pod_init_container_*; a pod without owner
 * references has kube_pod_owner with "<none>" owner labels. */
#pragma once

#include <jansson.h>

#include "metrics.h"

typedef struct PodWorker PodWorker;

typedef enum KubeStateContainerFamily {
        KSM_CONTAINER_WAITING,
        KSM_CONTAINER_WAITING_REASON,
        KSM_CONTAINER_RUNNING,
        KSM_CONTAINER_TERMINATED,
        KSM_CONTAINER_TERMINATED_REASON,
        KSM_CONTAINER_LAST_TERMINATED_REASON,
        KSM_CONTAINER_READY,
        KSM_CONTAINER_RESTARTS,
        _KSM_CONTAINER_MAX,
} KubeStateContainerFamily;

typedef struct KubeStateMetrics {
        MetricFamily *pod_info, *pod_owner, *pod_phase, *pod_ready;
        /* [0]: containers (kube_pod_container_*), [1]: init containers
         * (kube_pod_init_container_*) */
        MetricFamily *container[2][_KSM_CONTAINER_MAX];
} KubeStateMetrics;

/* Registers the families on m (NULL: *k all NULL). */
int kube_state_metrics_register(KubeStateMetrics *k, Metrics *m);

/* Drops every series. */
void kube_state_metrics_clear(const KubeStateMetrics *k);

/* Adds the series of one v1 Pod (metadata, spec, status as /pods shows
 * it). A pod without metadata.name is skipped; missing fields give empty
 * labels, as kube-state-metrics does. */
void kube_state_metrics_add_pod(const KubeStateMetrics *k, const json_t *pod);

/* kube_state_metrics_clear(), then the pods of the workers whose status
 * has been written (those of /pods). */
void kube_state_metrics_collect(const KubeStateMetrics *k, PodWorker *const *workers, size_t n);
