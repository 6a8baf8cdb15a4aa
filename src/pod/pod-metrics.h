/* The pod layer's Prometheus metrics (docs/api.md), under kubelet's names and
 * labels where kubelet has the metric. Events (a pod or container started, a
 * relist ran) are counted where they happen; what describes the present
 * (running pods and containers, restart counts, probe results, manifest
 * errors) is computed from the workers' state when /metrics is scraped, so
 * a pod that is gone takes its series with it. */
#pragma once

#include <stddef.h>

#include "metrics.h"
#include "source-errors.h"

typedef struct PodWorker PodWorker;

typedef struct PodMetrics {
        /* counted as they happen (any may be NULL: not counted) */
        MetricFamily *pod_start_duration;  /* kubelet_pod_start_duration_seconds */
        MetricFamily *pod_worker_duration; /* kubelet_pod_worker_duration_seconds{operation_type} */
        MetricFamily *pleg_relist_duration;
        MetricFamily *pleg_relist_interval;
        MetricFamily *started_pods, *started_pods_errors;
        MetricFamily *started_containers;        /* {container_type} */
        MetricFamily *started_containers_errors; /* {code,container_type} */
        MetricFamily *restarted_pods;            /* {static} */
        /* computed when scraped */
        MetricFamily *running_pods, *running_containers;
        MetricFamily *container_restarts;
        MetricFamily *source_errors;
        MetricFamily *probe_total; /* on the probe registry: /metrics/probes */
} PodMetrics;

/* Registers the families on m (/metrics) and probes (/metrics/probes);
 * either may be NULL. */
int pod_metrics_register(PodMetrics *pm, Metrics *m, Metrics *probes);

/* "container", "init_container": kubelet's container_type label. */
const char *pod_metrics_container_type(bool is_init);

/* Sets the scrape-time families from the live workers and the manifest
 * errors the sources hold now. */
void pod_metrics_collect(const PodMetrics *pm, PodWorker *const *workers, size_t n_workers,
                         const SourceErrors *errors);
