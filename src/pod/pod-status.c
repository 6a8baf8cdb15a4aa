/* Pod status as kubelet reports it: phase (kubelet_pods.go getPhase),
 * conditions (pkg/kubelet/status/generate.go), qosClass and the v1
 * Pod JSON the client reads. The rules are kubelet's; the comments say where
 * nanolet's state differs from kubelet's input. */
#include "pod-status.h"

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

static const char *const pod_phase_table[_POD_PHASE_MAX] = {
        [POD_PHASE_PENDING] = "Pending",     [POD_PHASE_RUNNING] = "Running",
        [POD_PHASE_SUCCEEDED] = "Succeeded", [POD_PHASE_FAILED] = "Failed",
        [POD_PHASE_UNKNOWN] = "Unknown",
};

const char *pod_phase_to_string(PodPhase p) {
        if (p < 0 || p >= _POD_PHASE_MAX)
                return NULL;
        return pod_phase_table[p];
}

PodPhase pod_phase_from_string(const char *s) {
        if (!s)
                return _POD_PHASE_INVALID;
        for (int i = 0; i < _POD_PHASE_MAX; i++)
                if (streq(pod_phase_table[i], s))
                        return (PodPhase)i;
        return _POD_PHASE_INVALID;
}

static const char *const pod_condition_type_table[_POD_CONDITION_TYPE_MAX] = {
        [POD_CONDITION_READY_TO_START_CONTAINERS] = "PodReadyToStartContainers",
        [POD_CONDITION_INITIALIZED] = "Initialized",
        [POD_CONDITION_READY] = "Ready",
        [POD_CONDITION_CONTAINERS_READY] = "ContainersReady",
        [POD_CONDITION_SCHEDULED] = "PodScheduled",
};

const char *pod_condition_type_to_string(PodConditionType t) {
        if (t < 0 || t >= _POD_CONDITION_TYPE_MAX)
                return NULL;
        return pod_condition_type_table[t];
}

/* ---- the API view of one container ---- */

/* How kubelet's convertToAPIContainerStatuses would show a container. */
typedef enum ApiState {
        API_WAITING,
        API_RUNNING,
        API_TERMINATED,
} ApiState;

typedef struct ApiView {
        ApiState state;
        /* lastState.terminated: true when an earlier attempt is shown there. */
        bool last_terminated;
        /* For lastState: the current attempt (EXITED waiting to restart) or
         * the previous one (has_last). */
        bool last_is_current;
} ApiView;

static ApiView api_view(const ContainerState *c) {
        switch (c->state) {
        case CONTAINER_RUNNING:
                /* kubelet reports Running only once postStart completed. */
                if (c->post_start_pending)
                        return (ApiView){ .state = API_WAITING, .last_terminated = c->has_last };
                return (ApiView){ .state = API_RUNNING, .last_terminated = c->has_last };
        case CONTAINER_EXITED:
                /* An exited container that will be restarted carries a waiting
                 * reason (CrashLoopBackOff, ...): kubelet shows it as waiting
                 * with the exited attempt as lastState. */
                if (c->waiting_reason)
                        return (ApiView){ .state = API_WAITING,
                                          .last_terminated = true,
                                          .last_is_current = true };
                return (ApiView){ .state = API_TERMINATED, .last_terminated = c->has_last };
        case CONTAINER_CREATED:
        case CONTAINER_NONE:
        case _CONTAINER_RUN_STATE_INVALID:
        case _CONTAINER_RUN_STATE_MAX:
        default:
                return (ApiView){ .state = API_WAITING, .last_terminated = c->has_last };
        }
}

static int api_terminated_exit_code(const ContainerState *c) {
        /* Unknown exit codes are reported as kubelet reports a container it
         * lost track of (ContainerStatusUnknown, 137). */
        return c->exit_code >= 0 ? c->exit_code : 137;
}

static int api_last_exit_code(const ContainerState *c, const ApiView *v) {
        int code = v->last_is_current ? c->exit_code : c->last_exit_code;
        return code >= 0 ? code : 137;
}

static bool api_started(const ContainerState *c) {
        return c->state == CONTAINER_RUNNING && c->started;
}

static bool api_ready(const ContainerState *c) {
        return c->state == CONTAINER_RUNNING && c->ready;
}

/* kubecontainer.HasAnyRegularContainerStarted */
static bool any_app_started(const PodState *s) {
        for (size_t i = 0; i < s->n_app; i++) {
                ApiView v = api_view(&s->app[i]);
                if (v.state == API_RUNNING || v.state == API_TERMINATED)
                        return true;
        }
        return false;
}

/* ---- phase ---- */

PodPhase pod_phase(const PodState *s) {
        assert(s);
        if (!s->pod)
                return POD_PHASE_UNKNOWN;
        if (s->deadline_exceeded || s->evicted || s->rejected)
                return POD_PHASE_FAILED;

        unsigned pending_init = 0, failed_init = 0;
        unsigned running = 0, waiting = 0, stopped = 0, succeeded = 0;

        for (size_t i = 0; i < s->n_init; i++) {
                const ContainerState *c = &s->init[i];
                ApiView v = api_view(c);

                if (container_is_sidecar(c->spec)) {
                        /* Sidecars count only while running; a stopped one
                         * neither keeps the pod running nor fails it. */
                        if (v.state == API_RUNNING) {
                                if (!api_started(c))
                                        pending_init++;
                                running++;
                        } else if (v.state == API_WAITING && !v.last_terminated) {
                                pending_init++;
                                waiting++;
                        }
                        continue;
                }

                switch (v.state) {
                case API_RUNNING:
                        pending_init++;
                        break;
                case API_TERMINATED:
                        if (api_terminated_exit_code(c) != 0)
                                failed_init++;
                        break;
                case API_WAITING:
                        if (v.last_terminated) {
                                if (api_last_exit_code(c, &v) != 0)
                                        failed_init++;
                        } else
                                pending_init++;
                        break;
                }
        }

        for (size_t i = 0; i < s->n_app; i++) {
                const ContainerState *c = &s->app[i];
                ApiView v = api_view(c);
                switch (v.state) {
                case API_RUNNING:
                        running++;
                        break;
                case API_TERMINATED:
                        stopped++;
                        if (api_terminated_exit_code(c) == 0)
                                succeeded++;
                        break;
                case API_WAITING:
                        if (v.last_terminated)
                                stopped++;
                        else
                                waiting++;
                        break;
                }
        }

        RestartPolicy policy = s->pod->spec.restart_policy;
        if (failed_init > 0 && policy == RESTART_POLICY_NEVER)
                return POD_PHASE_FAILED;

        /* pending_init with an app that already ran means a sidecar is
         * restarting: the pod does not go back to Pending. */
        if ((pending_init > 0 && !any_app_started(s)) || waiting > 0)
                return POD_PHASE_PENDING;
        if (running > 0)
                return POD_PHASE_RUNNING;
        if (stopped > 0) {
                if (policy == RESTART_POLICY_ALWAYS)
                        return POD_PHASE_RUNNING; /* everything is restarting */
                if (stopped == succeeded)
                        return POD_PHASE_SUCCEEDED;
                if (policy == RESTART_POLICY_NEVER)
                        return POD_PHASE_FAILED;
                return POD_PHASE_RUNNING; /* OnFailure: the failed ones restart */
        }
        return POD_PHASE_PENDING;
}

/* ---- conditions ---- */

/* Go's fmt "%s" of a []string: "[a b]". */
static int names_append(char **buf, size_t *len, size_t *cap, const char *name) {
        int r;
        if (*len > 0) {
                r = strbuf_append(buf, len, cap, " ", 1);
                if (r < 0)
                        return r;
        }
        return strbuf_append(buf, len, cap, name, strlen(name));
}

static char *message_with_names(const char *prefix, const char *names) {
        return strprintf("%s: [%s]", prefix, names);
}

int pod_conditions_compute(const PodState *s, PodCondition ret[static _POD_CONDITION_TYPE_MAX]) {
        assert(s);
        assert(s->pod);

        PodPhase phase = pod_phase(s);
        PodCondition c[_POD_CONDITION_TYPE_MAX] = {};
        for (int t = 0; t < _POD_CONDITION_TYPE_MAX; t++)
                c[t].type = (PodConditionType)t;

        c[POD_CONDITION_READY_TO_START_CONTAINERS].status = s->sandbox == SANDBOX_READY;
        if (s->sandbox == SANDBOX_FAILED) {
                /* kubelet reports this as a FailedCreatePodSandBox event; with no
                 * event stream the condition carries it. */
                c[POD_CONDITION_READY_TO_START_CONTAINERS].reason = POD_SANDBOX_FAILED_REASON;
                if (s->sandbox_message && !(c[POD_CONDITION_READY_TO_START_CONTAINERS].message =
                                                    strdup(s->sandbox_message)))
                        return -ENOMEM;
        }
        c[POD_CONDITION_SCHEDULED].status = true;

        /* Initialized: every regular init container exited 0 and every
         * sidecar has started. */
        _cleanup_free_ char *incomplete = NULL, *unready = NULL;
        size_t il = 0, ic = 0, ul = 0, uc = 0;
        for (size_t i = 0; i < s->n_init; i++) {
                const ContainerState *cs = &s->init[i];
                bool done;
                if (container_is_sidecar(cs->spec))
                        done = api_started(cs);
                else {
                        ApiView v = api_view(cs);
                        done = v.state == API_TERMINATED && api_terminated_exit_code(cs) == 0;
                }
                if (!done && names_append(&incomplete, &il, &ic, cs->spec->name) < 0)
                        return -ENOMEM;
        }
        PodCondition *init = &c[POD_CONDITION_INITIALIZED];
        if (phase == POD_PHASE_SUCCEEDED) {
                init->status = true;
                init->reason = "PodCompleted";
        } else if (any_app_started(s) || !incomplete)
                /* An app container that ran proves initialization finished
                 * even if a sidecar is restarting now. */
                init->status = true;
        else {
                init->reason = "ContainersNotInitialized";
                init->message = message_with_names("containers with incomplete status", incomplete);
                if (!init->message)
                        goto oom;
        }

        /* ContainersReady: sidecars and app containers are all ready. */
        for (size_t i = 0; i < s->n_init; i++)
                if (container_is_sidecar(s->init[i].spec) && !api_ready(&s->init[i]) &&
                    names_append(&unready, &ul, &uc, s->init[i].spec->name) < 0)
                        goto oom;
        for (size_t i = 0; i < s->n_app; i++)
                if (!api_ready(&s->app[i]) &&
                    names_append(&unready, &ul, &uc, s->app[i].spec->name) < 0)
                        goto oom;
        PodCondition *cr = &c[POD_CONDITION_CONTAINERS_READY];
        if (phase == POD_PHASE_SUCCEEDED)
                cr->reason = "PodCompleted";
        else if (phase == POD_PHASE_FAILED)
                cr->reason = "PodFailed";
        else if (unready) {
                cr->reason = "ContainersNotReady";
                cr->message = message_with_names("containers with unready status", unready);
                if (!cr->message)
                        goto oom;
        } else
                cr->status = true;

        /* Ready = ContainersReady (readinessGates need an API server). */
        PodCondition *rd = &c[POD_CONDITION_READY];
        rd->status = cr->status;
        rd->reason = cr->reason;
        if (cr->message) {
                rd->message = strdup(cr->message);
                if (!rd->message)
                        goto oom;
        }

        memcpy(ret, c, sizeof(c));
        return 0;
oom:
        pod_conditions_done(c);
        return -ENOMEM;
}

void pod_conditions_done(PodCondition c[static _POD_CONDITION_TYPE_MAX]) {
        for (int t = 0; t < _POD_CONDITION_TYPE_MAX; t++) {
                free(c[t].message);
                c[t].message = NULL;
        }
}

int pod_status_update_conditions(PodState *s, usec_t now_realtime) {
        assert(s);
        PodCondition c[_POD_CONDITION_TYPE_MAX];
        int r = pod_conditions_compute(s, c);
        if (r < 0)
                return r;

        bool changed = false;
        for (int t = 0; t < _POD_CONDITION_TYPE_MAX; t++) {
                if (s->condition_transition[t] != 0 && s->condition_status[t] == c[t].status)
                        continue;
                s->condition_status[t] = c[t].status;
                s->condition_transition[t] = now_realtime;
                changed = true;
        }
        pod_conditions_done(c);
        return changed;
}

/* ---- JSON ---- */

/* json_object_set_new() that reports failure; a NULL value (allocation
 * failure, or a string that is not UTF-8) is -ENOMEM/-EINVAL. */
static int jset(json_t *o, const char *key, json_t *v) {
        if (!v)
                return -ENOMEM;
        if (json_object_set_new(o, key, v) < 0)
                return -ENOMEM;
        return 0;
}

/* jansson refuses strings that are not UTF-8. Termination messages and
 * runtime errors may hold bytes a container chose: show them with the
 * offending bytes replaced (U+FFFD) rather than lose the whole status. */
static json_t *json_string_lossy(const char *v) {
        json_t *j = json_string(v);
        if (j)
                return j;
        _cleanup_free_ char *valid = utf8_make_valid(v, strlen(v));
        return valid ? json_string(valid) : NULL;
}

static int jset_str(json_t *o, const char *key, const char *v) {
        if (!v)
                return 0;
        return jset(o, key, json_string_lossy(v));
}

/* metav1.Time: RFC 3339, or null when unknown (as Go marshals a zero time). */
static int jset_time(json_t *o, const char *key, usec_t realtime) {
        if (realtime == 0)
                return jset(o, key, json_null());
        char buf[32];
        return jset(o, key, json_string(format_rfc3339(buf, sizeof(buf), realtime)));
}

static int jset_container_id(json_t *o, const char *key, const char *scheme, const char *id) {
        if (!id)
                return 0;
        _cleanup_free_ char *s = strprintf("%s://%s", scheme, id);
        if (!s)
                return -ENOMEM;
        return jset_str(o, key, s);
}

static int string_map_to_json(const StringMap *m, json_t **ret) {
        _cleanup_json_ json_t *o = json_object();
        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++) {
                int r = jset_str(o, m->items[i].key, m->items[i].value);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static const char *exit_reason_default(const char *reason, int exit_code, bool known) {
        if (reason)
                return reason;
        if (!known)
                return "ContainerStatusUnknown";
        return exit_code == 0 ? "Completed" : "Error";
}

static int terminated_to_json(int exit_code, bool known, const char *reason, const char *message,
                              usec_t started, usec_t finished, const char *scheme, const char *id,
                              json_t **ret) {
        _cleanup_json_ json_t *t = json_object();
        int r;
        if (!t)
                return -ENOMEM;
        if ((r = jset(t, "exitCode", json_integer(exit_code))) < 0 ||
            (r = jset_str(t, "reason", exit_reason_default(reason, exit_code, known))) < 0 ||
            (r = jset_str(t, "message", isempty(message) ? NULL : message)) < 0 ||
            (r = jset_time(t, "startedAt", started)) < 0 ||
            (r = jset_time(t, "finishedAt", finished)) < 0 ||
            (r = jset_container_id(t, "containerID", scheme, id)) < 0)
                return r;
        *ret = TAKE_PTR(t);
        return 0;
}

static int container_status_to_json(const PodState *s, const ContainerState *c, const char *scheme,
                                    json_t **ret) {
        _cleanup_json_ json_t *o = json_object(), *state = json_object(), *last = json_object();
        ApiView v = api_view(c);
        int r;

        if (!o || !state || !last)
                return -ENOMEM;

        switch (v.state) {
        case API_RUNNING: {
                json_t *run = json_object();
                if ((r = jset(state, "running", run)) < 0 ||
                    (r = jset_time(run, "startedAt", c->started_at)) < 0)
                        return r;
                break;
        }
        case API_TERMINATED: {
                json_t *t = NULL;
                r = terminated_to_json(api_terminated_exit_code(c), c->exit_code >= 0,
                                       c->exit_reason, c->exit_message, c->started_at,
                                       c->finished_at, scheme, c->container_id, &t);
                if (r < 0 || (r = jset(state, "terminated", t)) < 0)
                        return r;
                break;
        }
        case API_WAITING: {
                json_t *w = json_object();
                /* kubelet's default waiting reasons for containers it has not
                 * created yet. */
                const char *reason = c->waiting_reason;
                if (!reason)
                        reason = s->n_init > 0 ? "PodInitializing" : "ContainerCreating";
                if ((r = jset(state, "waiting", w)) < 0 ||
                    (r = jset_str(w, "reason", reason)) < 0 ||
                    (r = jset_str(w, "message",
                                  isempty(c->waiting_message) ? NULL : c->waiting_message)) < 0)
                        return r;
                break;
        }
        }

        if (v.last_terminated) {
                json_t *t = NULL;
                if (v.last_is_current)
                        r = terminated_to_json(api_last_exit_code(c, &v), c->exit_code >= 0,
                                               c->exit_reason, c->exit_message, c->started_at,
                                               c->finished_at, scheme, c->container_id, &t);
                else
                        r = terminated_to_json(api_last_exit_code(c, &v), c->last_exit_code >= 0,
                                               c->last_exit_reason, NULL, c->last_started_at,
                                               c->last_finished_at, scheme, c->last_container_id,
                                               &t);
                if (r < 0 || (r = jset(last, "terminated", t)) < 0)
                        return r;
        }

        if ((r = jset_str(o, "name", c->spec->name)) < 0 ||
            (r = jset(o, "state", TAKE_PTR(state))) < 0 ||
            (r = jset(o, "lastState", TAKE_PTR(last))) < 0 ||
            (r = jset(o, "ready", json_boolean(api_ready(c)))) < 0 ||
            (r = jset(o, "restartCount", json_integer(c->restart_count))) < 0 ||
            (r = jset_str(o, "image", strempty(c->spec->image))) < 0 ||
            /* imageID is a required string in v1: "" until the image is resolved. */
            (r = jset_str(o, "imageID", strempty(c->image_id))) < 0 ||
            (r = jset_container_id(o, "containerID", scheme, c->container_id)) < 0 ||
            (r = jset(o, "started", json_boolean(api_started(c)))) < 0)
                return r;

        *ret = TAKE_PTR(o);
        return 0;
}

static int container_statuses_to_json(const PodState *s, const ContainerState *a, size_t n,
                                      const char *scheme, json_t **ret) {
        _cleanup_json_ json_t *arr = json_array();
        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *o = NULL;
                int r = container_status_to_json(s, &a[i], scheme, &o);
                if (r < 0)
                        return r;
                if (json_array_append_new(arr, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(arr);
        return 0;
}

/* [{"ip": ...}] as v1 PodIP/HostIP lists. */
static int ip_list_to_json(char *const *ips, const char *single, json_t **ret) {
        _cleanup_json_ json_t *arr = json_array();
        if (!arr)
                return -ENOMEM;
        if (strv_length(ips) > 0) {
                STRV_FOREACH(ip, ips) {
                        json_t *o = json_pack("{s:s}", "ip", *ip);
                        if (!o || json_array_append_new(arr, o) < 0)
                                return -ENOMEM;
                }
        } else if (single) {
                json_t *o = json_pack("{s:s}", "ip", single);
                if (!o || json_array_append_new(arr, o) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(arr);
        return 0;
}

static int conditions_to_json(const PodState *s, json_t **ret) {
        PodCondition c[_POD_CONDITION_TYPE_MAX];
        _cleanup_json_ json_t *arr = json_array();
        int r;

        if (!arr)
                return -ENOMEM;
        r = pod_conditions_compute(s, c);
        if (r < 0)
                return r;

        for (int t = 0; t < _POD_CONDITION_TYPE_MAX; t++) {
                json_t *o = json_object();
                if (!o || json_array_append_new(arr, o) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                /* The transition time recorded for this status; when the
                 * caller did not update the conditions (or the status changed
                 * since), it is unknown rather than wrong. */
                usec_t ts =
                        (s->condition_transition[t] != 0 && s->condition_status[t] == c[t].status)
                                ? s->condition_transition[t]
                                : 0;
                if ((r = jset_str(o, "type", pod_condition_type_to_string(c[t].type))) < 0 ||
                    (r = jset_str(o, "status", c[t].status ? "True" : "False")) < 0 ||
                    (r = jset(o, "lastProbeTime", json_null())) < 0 ||
                    (r = jset_time(o, "lastTransitionTime", ts)) < 0 ||
                    (r = jset_str(o, "reason", c[t].reason)) < 0 ||
                    (r = jset_str(o, "message", c[t].message)) < 0)
                        goto out;
        }
        *ret = TAKE_PTR(arr);
        r = 0;
out:
        pod_conditions_done(c);
        return r;
}

static int status_to_json(const PodState *s, const char *scheme, json_t **ret) {
        _cleanup_json_ json_t *st = json_object();
        json_t *j = NULL;
        int r;

        if (!st)
                return -ENOMEM;

        const char *reason = s->reason, *message = s->message;
        if (s->sandbox == SANDBOX_FAILED && !reason) {
                reason = POD_SANDBOX_FAILED_REASON;
                message = message ?: s->sandbox_message;
        }
        if (s->deadline_exceeded && !reason) {
                reason = "DeadlineExceeded";
                message =
                        message ?: "Pod was active on the node longer than the specified deadline";
        }

        /* kubelet's rejectPod: a status of phase, reason, message and QoS
         * class only; nothing of the pod ever existed to report on. */
        if (s->rejected) {
                if ((r = jset_str(st, "phase", pod_phase_to_string(pod_phase(s)))) < 0 ||
                    (r = jset_str(st, "message", message)) < 0 ||
                    (r = jset_str(st, "reason", reason)) < 0 ||
                    (r = jset_str(st, "qosClass", pod_qos_class_to_string(pod_qos_class(s->pod)))) <
                            0)
                        return r;
                *ret = TAKE_PTR(st);
                return 0;
        }

        /* hostNetwork pods have the node's addresses, as kubelet reports. */
        const char *pod_ip = s->pod_ip;
        char *const *pod_ips = s->pod_ips;
        if (!pod_ip && strv_length(pod_ips) == 0 && s->pod->spec.host_network) {
                pod_ip = s->host_ip;
                pod_ips = NULL;
        }
        if (!pod_ip && strv_length(pod_ips) > 0)
                pod_ip = pod_ips[0];

        if ((r = jset_str(st, "phase", pod_phase_to_string(pod_phase(s)))) < 0)
                return r;
        if ((r = conditions_to_json(s, &j)) < 0 || (r = jset(st, "conditions", j)) < 0)
                return r;
        if ((r = jset_str(st, "message", message)) < 0 ||
            (r = jset_str(st, "reason", reason)) < 0 ||
            (r = jset_str(st, "hostIP", s->host_ip)) < 0)
                return r;
        if (s->host_ip) {
                if ((r = ip_list_to_json(NULL, s->host_ip, &j)) < 0 ||
                    (r = jset(st, "hostIPs", j)) < 0)
                        return r;
        }
        if (pod_ip) {
                if ((r = jset_str(st, "podIP", pod_ip)) < 0 ||
                    (r = ip_list_to_json(pod_ips, pod_ip, &j)) < 0 ||
                    (r = jset(st, "podIPs", j)) < 0)
                        return r;
        }
        if (s->start_time != 0 && (r = jset_time(st, "startTime", s->start_time)) < 0)
                return r;
        if (s->n_init > 0) {
                if ((r = container_statuses_to_json(s, s->init, s->n_init, scheme, &j)) < 0 ||
                    (r = jset(st, "initContainerStatuses", j)) < 0)
                        return r;
        }
        if ((r = container_statuses_to_json(s, s->app, s->n_app, scheme, &j)) < 0 ||
            (r = jset(st, "containerStatuses", j)) < 0)
                return r;
        if ((r = jset_str(st, "qosClass", pod_qos_class_to_string(pod_qos_class(s->pod)))) < 0)
                return r;

        *ret = TAKE_PTR(st);
        return 0;
}

static int spec_from_canonical(const char *canonical_json, const char *node_name, json_t **ret) {
        _cleanup_json_ json_t *spec = NULL;

        if (canonical_json) {
                json_error_t err;
                _cleanup_json_ json_t *doc = json_loads(canonical_json, 0, &err);
                if (!doc || !json_is_object(doc))
                        return -EINVAL;
                spec = json_incref(json_object_get(doc, "spec"));
                if (spec && !json_is_object(spec))
                        return -EINVAL;
        }
        if (!spec) {
                spec = json_object();
                if (!spec)
                        return -ENOMEM;
        }
        /* The manifest's nodeName is ignored (docs/manifests.md): the pod runs here. */
        if (node_name) {
                int r = jset_str(spec, "nodeName", node_name);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(spec);
        return 0;
}

int pod_status_to_json(const PodState *s, const PodStatusContext *ctx, json_t **ret) {
        assert(s);
        assert(s->pod);
        assert(ret);

        const char *scheme = ctx && ctx->runtime_name ? ctx->runtime_name : "runc";
        _cleanup_json_ json_t *pod = json_object(), *meta = json_object();
        json_t *j = NULL;
        int r;

        if (!pod || !meta)
                return -ENOMEM;

        const ObjectMeta *m = &s->pod->metadata;
        if ((r = jset_str(meta, "name", m->name)) < 0 ||
            (r = jset_str(meta, "namespace", m->namespace ?: "default")) < 0 ||
            (r = jset_str(meta, "uid", s->uid ?: m->uid)) < 0 ||
            (r = jset_time(meta, "creationTimestamp", s->start_time)) < 0)
                return r;
        if (m->labels.n > 0 &&
            ((r = string_map_to_json(&m->labels, &j)) < 0 || (r = jset(meta, "labels", j)) < 0))
                return r;
        if (m->annotations.n > 0 && ((r = string_map_to_json(&m->annotations, &j)) < 0 ||
                                     (r = jset(meta, "annotations", j)) < 0))
                return r;

        if ((r = jset_str(pod, "apiVersion", "v1")) < 0 || (r = jset_str(pod, "kind", "Pod")) < 0 ||
            (r = jset(pod, "metadata", TAKE_PTR(meta))) < 0)
                return r;
        if ((r = spec_from_canonical(ctx ? ctx->canonical_json : NULL, ctx ? ctx->node_name : NULL,
                                     &j)) < 0 ||
            (r = jset(pod, "spec", j)) < 0)
                return r;
        if ((r = status_to_json(s, scheme, &j)) < 0 || (r = jset(pod, "status", j)) < 0)
                return r;

        *ret = TAKE_PTR(pod);
        return 0;
}

/* uid becomes a file name: refuse anything that could leave status_dir. */
static bool uid_is_file_name(const char *uid) {
        return !isempty(uid) && !strchr(uid, '/') && !streq(uid, ".") && !streq(uid, "..");
}

int pod_status_write(const char *status_dir, const char *uid, json_t *pod) {
        assert(status_dir);
        assert(pod);
        if (!uid_is_file_name(uid))
                return -EINVAL;

        _cleanup_free_ char *path = strprintf("%s/%s.json", status_dir, uid);
        _cleanup_free_ char *data = json_dumps(pod, JSON_COMPACT);
        if (!path || !data)
                return -ENOMEM;
        return write_file_atomic(path, data, strlen(data), 0600); /* spec and env values */
}

int pod_status_remove(const char *status_dir, const char *uid) {
        assert(status_dir);
        if (!uid_is_file_name(uid))
                return -EINVAL;

        _cleanup_free_ char *path = strprintf("%s/%s.json", status_dir, uid);
        if (!path)
                return -ENOMEM;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

char *pod_status_path(const char *status_dir, const char *uid) {
        assert(status_dir);
        if (!uid_is_file_name(uid))
                return NULL;
        return strprintf("%s/%s.json", status_dir, uid);
}
