/* Names, help texts, labels and buckets follow kubelet
 * (pkg/kubelet/metrics, pkg/kubelet/prober), so dashboards and alerts
 * written for kubelet read nanolet unchanged. */
#include "pod-metrics.h"

#include <errno.h>
#include <stddef.h>

#include "pod-worker.h"
#include "probe-tracker.h"

typedef struct FamilySpec {
        size_t offset; /* of the MetricFamily * in PodMetrics */
        MetricType type;
        const char *name;
        const char *help;
        const char *const *labels;
        const double *bounds;
        size_t n_bounds;
        bool probes; /* on the /metrics/probes registry */
} FamilySpec;

#define F(field) offsetof(PodMetrics, field)
#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define B(array) array, sizeof(array) / sizeof((array)[0])

static const FamilySpec families[] = {
        { F(running_pods), METRIC_GAUGE, "kubelet_running_pods",
          "Number of pods that have a running pod sandbox", NULL, NULL, 0, false },
        { F(running_containers), METRIC_GAUGE, "kubelet_running_containers",
          "Number of containers currently running", L("container_state"), NULL, 0, false },
        { F(pod_start_duration), METRIC_HISTOGRAM, "kubelet_pod_start_duration_seconds",
          "Duration in seconds from kubelet seeing a pod for the first time to the pod starting "
          "to run",
          NULL, B(metrics_buckets_pod_start), false },
        { F(pod_worker_duration), METRIC_HISTOGRAM, "kubelet_pod_worker_duration_seconds",
          "Duration in seconds to sync a single pod. Broken down by operation type: create, "
          "update, or sync",
          L("operation_type"), B(metrics_buckets_default), false },
        { F(pleg_relist_duration), METRIC_HISTOGRAM, "kubelet_pleg_relist_duration_seconds",
          "Duration in seconds for relisting pods in PLEG.", NULL, B(metrics_buckets_default),
          false },
        { F(pleg_relist_interval), METRIC_HISTOGRAM, "kubelet_pleg_relist_interval_seconds",
          "Interval in seconds between relisting in PLEG.", NULL, B(metrics_buckets_default),
          false },
        { F(started_pods), METRIC_COUNTER, "kubelet_started_pods_total",
          "Cumulative number of pods started", NULL, NULL, 0, false },
        { F(started_pods_errors), METRIC_COUNTER, "kubelet_started_pods_errors_total",
          "Cumulative number of errors when starting pods", NULL, NULL, 0, false },
        { F(started_containers), METRIC_COUNTER, "kubelet_started_containers_total",
          "Cumulative number of containers started", L("container_type"), NULL, 0, false },
        { F(started_containers_errors), METRIC_COUNTER, "kubelet_started_containers_errors_total",
          "Cumulative number of errors when starting containers", L("code", "container_type"), NULL,
          0, false },
        { F(restarted_pods), METRIC_COUNTER, "kubelet_restarted_pods_total",
          "Number of pods that have been restarted because they were deleted and recreated with "
          "the same UID while the kubelet was watching them (common for static pods, extremely "
          "uncommon for API pods)",
          L("static"), NULL, 0, false },
        { F(container_restarts), METRIC_COUNTER, "nanolet_container_restarts_total",
          "Restarts of each container of the pods on the node (its status' restartCount)",
          L("namespace", "pod", "pod_uid", "container"), NULL, 0, false },
        { F(source_errors), METRIC_GAUGE, "nanolet_manifest_source_errors",
          "Problems the manifest sources report right now, by source (file, http) and reason "
          "(unreadable, syntax, invalid, duplicate)",
          L("source", "reason"), NULL, 0, false },
        { F(probe_total), METRIC_COUNTER, "prober_probe_total",
          "Cumulative number of a liveness, readiness or startup probe for a container by result.",
          L("probe_type", "result", "container", "pod", "namespace", "pod_uid"), NULL, 0, true },
};

int pod_metrics_register(PodMetrics *pm, Metrics *m, Metrics *probes) {
        *pm = (PodMetrics){};
        for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
                const FamilySpec *s = &families[i];
                MetricFamily **slot = (MetricFamily **)((char *)pm + s->offset);
                int r = metrics_register(s->probes ? probes : m, slot, s->type, s->name, s->help,
                                         s->labels, s->bounds, s->n_bounds);
                if (r < 0)
                        return r;
        }
        return 0;
}

const char *pod_metrics_container_type(bool is_init) {
        return is_init ? "init_container" : "container";
}

static const char *probe_result_label(ProbeResult r) {
        switch (r) {
        case PROBE_RESULT_SUCCESS:
                return "successful";
        case PROBE_RESULT_FAILURE:
                return "failed";
        case PROBE_RESULT_UNKNOWN:
        case _PROBE_RESULT_MAX:
        case _PROBE_RESULT_INVALID:
        default:
                return "unknown";
        }
}

static void collect_container(const PodMetrics *pm, const ManifestObject *o,
                              const ContainerState *c, unsigned *by_state) {
        by_state[c->state]++;
        metric_set(pm->container_restarts,
                   METRIC_LABELS(o->namespace, o->name, o->uid, c->spec->name), c->restart_count);
        for (int t = 0; t < _PROBE_TYPE_MAX; t++)
                for (int r = 0; r < _PROBE_RESULT_MAX; r++)
                        if (c->probe_results[t][r] > 0)
                                metric_set(pm->probe_total,
                                           METRIC_LABELS(probe_type_to_string((ProbeType)t),
                                                         probe_result_label((ProbeResult)r),
                                                         c->spec->name, o->name, o->namespace,
                                                         o->uid),
                                           (double)c->probe_results[t][r]);
}

void pod_metrics_collect(const PodMetrics *pm, PodWorker *const *workers, size_t n_workers,
                         const SourceErrors *errors) {
        unsigned by_state[_CONTAINER_RUN_STATE_MAX] = {};
        unsigned running_pods = 0;

        metric_clear(pm->container_restarts);
        metric_clear(pm->probe_total);
        for (size_t i = 0; i < n_workers; i++) {
                const PodState *s = pod_worker_state(workers[i]);
                const ManifestObject *o = pod_worker_object(workers[i]);
                if (s->sandbox == SANDBOX_READY)
                        running_pods++;
                for (size_t k = 0; k < s->n_init; k++)
                        collect_container(pm, o, &s->init[k], by_state);
                for (size_t k = 0; k < s->n_app; k++)
                        collect_container(pm, o, &s->app[k], by_state);
        }
        metric_set(pm->running_pods, NULL, running_pods);
        /* kubelet's states: created, running, exited (and unknown). A
         * container with no attempt is not a container yet. */
        metric_set(pm->running_containers, METRIC_LABELS("created"), by_state[CONTAINER_CREATED]);
        metric_set(pm->running_containers, METRIC_LABELS("running"), by_state[CONTAINER_RUNNING]);
        metric_set(pm->running_containers, METRIC_LABELS("exited"), by_state[CONTAINER_EXITED]);

        static const char *const sources[] = { "file", "http" };
        for (SourceErrorReason r = 0; r < _SOURCE_ERROR_REASON_MAX; r++)
                for (size_t k = 0; k < sizeof sources / sizeof sources[0]; k++)
                        metric_set(pm->source_errors,
                                   METRIC_LABELS(sources[k], source_error_reason_to_string(r)),
                                   errors ? source_errors_count(errors, sources[k], r) : 0);
}
