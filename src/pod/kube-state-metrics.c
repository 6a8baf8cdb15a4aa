#include "kube-state-metrics.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"
#include "macro.h"
#include "pod-worker.h"
#include "string-util.h"

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define POD_L "namespace", "pod", "uid"
#define CONTAINER_L POD_L, "container"

typedef struct KsmFamily {
        MetricType type;
        const char *suffix; /* after kube_pod_container_ / kube_pod_init_container_ */
        const char *help[2];
        bool reason;
} KsmFamily;

static const KsmFamily container_families[_KSM_CONTAINER_MAX] = {
        [KSM_CONTAINER_WAITING] = { METRIC_GAUGE,
                                    "status_waiting",
                                    { "Describes whether the container is currently in waiting "
                                      "state.",
                                      "Describes whether the init container is currently in "
                                      "waiting state." },
                                    false },
        [KSM_CONTAINER_WAITING_REASON] = { METRIC_GAUGE,
                                           "status_waiting_reason",
                                           { "Describes the reason the container is currently in "
                                             "waiting state.",
                                             "Describes the reason the init container is "
                                             "currently in waiting state." },
                                           true },
        [KSM_CONTAINER_RUNNING] = { METRIC_GAUGE,
                                    "status_running",
                                    { "Describes whether the container is currently in running "
                                      "state.",
                                      "Describes whether the init container is currently in "
                                      "running state." },
                                    false },
        [KSM_CONTAINER_TERMINATED] = { METRIC_GAUGE,
                                       "status_terminated",
                                       { "Describes whether the container is currently in "
                                         "terminated state.",
                                         "Describes whether the init container is currently in "
                                         "terminated state." },
                                       false },
        [KSM_CONTAINER_TERMINATED_REASON] = { METRIC_GAUGE,
                                              "status_terminated_reason",
                                              { "Describes the reason the container is currently "
                                                "in terminated state.",
                                                "Describes the reason the init container is "
                                                "currently in terminated state." },
                                              true },
        [KSM_CONTAINER_LAST_TERMINATED_REASON] = { METRIC_GAUGE,
                                                   "status_last_terminated_reason",
                                                   { "Describes the last reason the container was "
                                                     "in terminated state.",
                                                     "Describes the last reason the init "
                                                     "container was in terminated state." },
                                                   true },
        [KSM_CONTAINER_READY] = { METRIC_GAUGE,
                                  "status_ready",
                                  { "Describes whether the containers readiness check succeeded.",
                                    "Describes whether the init containers readiness check "
                                    "succeeded." },
                                  false },
        [KSM_CONTAINER_RESTARTS] = { METRIC_COUNTER,
                                     "status_restarts_total",
                                     { "The number of container restarts per container.",
                                       "The number of restarts for the init container." },
                                     false },
};

static const char *const phases[] = { "Pending", "Succeeded", "Failed", "Unknown", "Running" };

int kube_state_metrics_register(KubeStateMetrics *k, Metrics *m) {
        int r;

        *k = (KubeStateMetrics){};
        if (!m)
                return 0;
        if ((r = metrics_register(m, &k->pod_info, METRIC_GAUGE, "kube_pod_info",
                                  "Information about pod.",
                                  L(POD_L, "host_ip", "pod_ip", "node", "created_by_kind",
                                    "created_by_name", "priority_class", "host_network"),
                                  NULL, 0)) < 0 ||
            (r = metrics_register(m, &k->pod_owner, METRIC_GAUGE, "kube_pod_owner",
                                  "Information about the Pod's owner.",
                                  L(POD_L, "owner_kind", "owner_name", "owner_is_controller"), NULL,
                                  0)) < 0 ||
            (r = metrics_register(m, &k->pod_phase, METRIC_GAUGE, "kube_pod_status_phase",
                                  "The pods current phase.", L(POD_L, "phase"), NULL, 0)) < 0 ||
            (r = metrics_register(m, &k->pod_ready, METRIC_GAUGE, "kube_pod_status_ready",
                                  "Describes whether the pod is ready to serve requests.",
                                  L(POD_L, "condition"), NULL, 0)) < 0)
                return r;
        for (int init = 0; init < 2; init++)
                for (int i = 0; i < _KSM_CONTAINER_MAX; i++) {
                        const KsmFamily *f = &container_families[i];
                        _cleanup_free_ char *name = strprintf(
                                "kube_pod_%s_%s", init ? "init_container" : "container", f->suffix);
                        if (!name)
                                return -ENOMEM;
                        r = metrics_register(
                                m, &k->container[init][i], f->type, name, f->help[init],
                                f->reason ? L(CONTAINER_L, "reason") : L(CONTAINER_L), NULL, 0);
                        if (r < 0)
                                return r;
                }
        return 0;
}

void kube_state_metrics_clear(const KubeStateMetrics *k) {
        metric_clear(k->pod_info);
        metric_clear(k->pod_owner);
        metric_clear(k->pod_phase);
        metric_clear(k->pod_ready);
        for (int init = 0; init < 2; init++)
                for (int i = 0; i < _KSM_CONTAINER_MAX; i++)
                        metric_clear(k->container[init][i]);
}

/* The string at obj.key, or "" (what kube-state-metrics shows for an
 * absent field). */
static const char *str(const json_t *obj, const char *key) {
        const char *s = json_string_value(json_object_get(obj, key));
        return s ? s : "";
}

static double flag(bool b) {
        return b ? 1 : 0;
}

typedef struct PodLabels {
        const char *namespace, *name, *uid;
} PodLabels;

static void add_container(const KubeStateMetrics *k, int init, const PodLabels *p,
                          const json_t *cs) {
        MetricFamily *const *f = k->container[init];
        const char *name = json_string_value(json_object_get(cs, "name"));
        if (!name)
                return;
        const char *const *labels = L(p->namespace, p->name, p->uid, name);
        const json_t *state = json_object_get(cs, "state");
        const json_t *waiting = json_object_get(state, "waiting");
        const json_t *running = json_object_get(state, "running");
        const json_t *terminated = json_object_get(state, "terminated");
        const json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");

        metric_set(f[KSM_CONTAINER_WAITING], labels, flag(waiting));
        metric_set(f[KSM_CONTAINER_RUNNING], labels, flag(running));
        metric_set(f[KSM_CONTAINER_TERMINATED], labels, flag(terminated));
        metric_set(f[KSM_CONTAINER_READY], labels,
                   flag(json_is_true(json_object_get(cs, "ready"))));
        metric_set(f[KSM_CONTAINER_RESTARTS], labels,
                   (double)json_integer_value(json_object_get(cs, "restartCount")));

        const struct {
                KubeStateContainerFamily family;
                const json_t *state;
        } reasons[] = {
                { KSM_CONTAINER_WAITING_REASON, waiting },
                { KSM_CONTAINER_TERMINATED_REASON, terminated },
                { KSM_CONTAINER_LAST_TERMINATED_REASON, last },
        };
        for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++) {
                const char *reason = json_string_value(json_object_get(reasons[i].state, "reason"));
                if (!isempty(reason))
                        metric_set(f[reasons[i].family],
                                   L(p->namespace, p->name, p->uid, name, reason), 1);
        }
}

void kube_state_metrics_add_pod(const KubeStateMetrics *k, const json_t *pod) {
        const json_t *meta = json_object_get(pod, "metadata");
        const json_t *spec = json_object_get(pod, "spec");
        const json_t *status = json_object_get(pod, "status");
        PodLabels p = { .namespace = str(meta, "namespace"),
                        .name = str(meta, "name"),
                        .uid = str(meta, "uid") };
        if (isempty(p.name))
                return;

        metric_set(k->pod_info,
                   L(p.namespace, p.name, p.uid, str(status, "hostIP"), str(status, "podIP"),
                     str(spec, "nodeName"), "", "", str(spec, "priorityClassName"),
                     json_is_true(json_object_get(spec, "hostNetwork")) ? "true" : "false"),
                   1);

        const json_t *owners = json_object_get(meta, "ownerReferences");
        size_t n_owners = json_array_size(owners);
        for (size_t i = 0; i < n_owners; i++) {
                const json_t *o = json_array_get(owners, i);
                metric_set(k->pod_owner,
                           L(p.namespace, p.name, p.uid, str(o, "kind"), str(o, "name"),
                             json_is_true(json_object_get(o, "controller")) ? "true" : "false"),
                           1);
        }
        if (n_owners == 0)
                metric_set(k->pod_owner,
                           L(p.namespace, p.name, p.uid, "<none>", "<none>", "<none>"), 1);

        const char *phase = str(status, "phase");
        for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++)
                metric_set(k->pod_phase, L(p.namespace, p.name, p.uid, phases[i]),
                           flag(streq(phase, phases[i])));

        /* The Ready condition's status; none at all counts as unknown. */
        const char *ready = "Unknown";
        const json_t *conditions = json_object_get(status, "conditions");
        for (size_t i = 0; i < json_array_size(conditions); i++) {
                const json_t *c = json_array_get(conditions, i);
                if (streq(str(c, "type"), "Ready"))
                        ready = str(c, "status");
        }
        metric_set(k->pod_ready, L(p.namespace, p.name, p.uid, "true"), flag(streq(ready, "True")));
        metric_set(k->pod_ready, L(p.namespace, p.name, p.uid, "false"),
                   flag(streq(ready, "False")));
        metric_set(k->pod_ready, L(p.namespace, p.name, p.uid, "unknown"),
                   flag(!streq(ready, "True") && !streq(ready, "False")));

        static const char *const lists[2] = { "containerStatuses", "initContainerStatuses" };
        for (int init = 0; init < 2; init++) {
                const json_t *a = json_object_get(status, lists[init]);
                for (size_t i = 0; i < json_array_size(a); i++)
                        add_container(k, init, &p, json_array_get(a, i));
        }
}

void kube_state_metrics_collect(const KubeStateMetrics *k, PodWorker *const *workers, size_t n) {
        kube_state_metrics_clear(k);
        for (size_t i = 0; i < n; i++) {
                const char *text = pod_worker_status_text(workers[i]);
                if (!text)
                        continue;
                _cleanup_json_ json_t *pod = json_loads(text, 0, NULL);
                if (pod)
                        kube_state_metrics_add_pod(k, pod);
        }
}
