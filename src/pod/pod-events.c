/* The bounded, collapsing list of a pod's events (pod-events.h). A plain
 * array kept in lastTimestamp order: fifty entries make a linear search and
 * a memmove cheaper than any index. */
#include "pod-events.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "string-util.h"

static const char *const reason_table[_POD_EVENT_REASON_MAX] = {
        [POD_EVENT_PULLING] = "Pulling",
        [POD_EVENT_PULLED] = "Pulled",
        [POD_EVENT_CREATED] = "Created",
        [POD_EVENT_STARTED] = "Started",
        [POD_EVENT_KILLING] = "Killing",
        [POD_EVENT_FAILED] = "Failed",
        [POD_EVENT_UNHEALTHY] = "Unhealthy",
        [POD_EVENT_BACK_OFF] = "BackOff",
        [POD_EVENT_FAILED_POST_START_HOOK] = "FailedPostStartHook",
        [POD_EVENT_FAILED_PRE_STOP_HOOK] = "FailedPreStopHook",
        [POD_EVENT_FAILED_CREATE_POD_SANDBOX] = "FailedCreatePodSandBox",
        [POD_EVENT_EVICTED] = "Evicted",
        [POD_EVENT_OUT_OF_PODS] = "OutOfpods",
        [POD_EVENT_SYSCTL_FORBIDDEN] = "SysctlForbidden",
        [POD_EVENT_APPARMOR] = "AppArmor",
};

const char *pod_event_reason_to_string(PodEventReason r) {
        if (r < 0 || r >= _POD_EVENT_REASON_MAX)
                return NULL;
        return reason_table[r];
}

PodEventReason pod_event_reason_from_string(const char *s) {
        for (int i = 0; s && i < _POD_EVENT_REASON_MAX; i++)
                if (streq(reason_table[i], s))
                        return (PodEventReason)i;
        return _POD_EVENT_REASON_INVALID;
}

const char *pod_event_reason_type(PodEventReason r) {
        switch (r) {
        case POD_EVENT_PULLING:
        case POD_EVENT_PULLED:
        case POD_EVENT_CREATED:
        case POD_EVENT_STARTED:
        case POD_EVENT_KILLING:
                return "Normal";
        case POD_EVENT_FAILED:
        case POD_EVENT_UNHEALTHY:
        case POD_EVENT_BACK_OFF:
        case POD_EVENT_FAILED_POST_START_HOOK:
        case POD_EVENT_FAILED_PRE_STOP_HOOK:
        case POD_EVENT_FAILED_CREATE_POD_SANDBOX:
        case POD_EVENT_EVICTED:
        case POD_EVENT_OUT_OF_PODS:
        case POD_EVENT_SYSCTL_FORBIDDEN:
        case POD_EVENT_APPARMOR:
                return "Warning";
        case _POD_EVENT_REASON_MAX:
        case _POD_EVENT_REASON_INVALID:
        default:
                return NULL;
        }
}

void pod_events_init(PodEvents *e) {
        *e = (PodEvents){ .next_id = 1 };
}

static void pod_event_done(PodEvent *ev) {
        free(ev->field_path);
        free(ev->message);
        *ev = (PodEvent){};
}

void pod_events_done(PodEvents *e) {
        for (size_t i = 0; i < e->n; i++)
                pod_event_done(&e->items[i]);
        e->n = 0;
}

char *pod_event_field_path(bool is_init, const char *container) {
        return strprintf("spec.%s{%s}", is_init ? "initContainers" : "containers", container);
}

/* Moves item i to the newest end. */
static void move_to_end(PodEvents *e, size_t i) {
        PodEvent tmp = e->items[i];
        memmove(e->items + i, e->items + i + 1, sizeof(PodEvent) * (e->n - i - 1));
        e->items[e->n - 1] = tmp;
}

int pod_events_recordv(PodEvents *e, PodEventReason reason, const char *field_path, usec_t now,
                       const char *fmt, va_list ap) {
        assert(e && fmt);
        assert(reason >= 0 && reason < _POD_EVENT_REASON_MAX);
        _cleanup_free_ char *message = strvprintf(fmt, ap);
        if (!message)
                return -ENOMEM;

        for (size_t i = 0; i < e->n; i++) {
                PodEvent *ev = &e->items[i];
                if (ev->reason == reason && streq_ptr(ev->field_path, field_path) &&
                    streq(ev->message, message)) {
                        ev->count++;
                        ev->last_timestamp = now;
                        move_to_end(e, i);
                        return 0;
                }
        }

        _cleanup_free_ char *fp = NULL;
        if (field_path && !(fp = strdup(field_path)))
                return -ENOMEM;
        if (e->n == POD_EVENTS_MAX) {
                pod_event_done(&e->items[0]);
                move_to_end(e, 0);
                e->n--;
        }
        e->items[e->n++] = (PodEvent){
                .reason = reason,
                .field_path = TAKE_PTR(fp),
                .message = TAKE_PTR(message),
                .first_timestamp = now,
                .last_timestamp = now,
                .count = 1,
                .id = e->next_id++,
        };
        return 1;
}

int pod_events_record(PodEvents *e, PodEventReason reason, const char *field_path, usec_t now,
                      const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = pod_events_recordv(e, reason, field_path, now, fmt, ap);
        va_end(ap);
        return r;
}

static json_t *event_to_json(const PodEvent *ev, const PodEventsObject *o) {
        char first[64], last[64];
        _cleanup_free_ char *name = strprintf("%s.%llx", o->name, (unsigned long long)ev->id);
        if (!name)
                return NULL;
        json_t *involved = json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "Pod",
                                     "name", o->name, "namespace", o->namespace, "uid", o->uid);
        if (!involved)
                return NULL;
        if (ev->field_path &&
            json_object_set_new(involved, "fieldPath", json_string(ev->field_path)) < 0) {
                json_decref(involved);
                return NULL;
        }
        json_t *source = json_pack("{s:s}", "component", POD_EVENTS_COMPONENT);
        if (source && o->node_name &&
            json_object_set_new(source, "host", json_string(o->node_name)) < 0)
                source = (json_decref(source), NULL);
        if (!source) {
                json_decref(involved);
                return NULL;
        }
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s, s:s, s:o, s:s, s:s, s:I}",
                         "apiVersion", "v1", "kind", "Event", "metadata", "name", name, "namespace",
                         o->namespace, "involvedObject", involved, "reason",
                         pod_event_reason_to_string(ev->reason), "message", ev->message, "type",
                         pod_event_reason_type(ev->reason), "source", source, "firstTimestamp",
                         format_rfc3339(first, sizeof first, ev->first_timestamp), "lastTimestamp",
                         format_rfc3339(last, sizeof last, ev->last_timestamp), "count",
                         (json_int_t)ev->count);
}

int pod_events_to_json(const PodEvents *e, const PodEventsObject *o, json_t **ret) {
        assert(e && o && ret);
        _cleanup_json_ json_t *items = json_array();
        if (!items)
                return -ENOMEM;
        for (size_t i = 0; i < e->n; i++)
                if (json_array_append_new(items, event_to_json(&e->items[i], o)) < 0)
                        return -ENOMEM;
        json_t *list = json_pack("{s:s, s:s, s:{}, s:O}", "apiVersion", "v1", "kind", "EventList",
                                 "metadata", "items", items);
        if (!list)
                return -ENOMEM;
        *ret = list;
        return 0;
}

/* uid becomes a file name: refuse anything that could leave the directory. */
static bool uid_is_file_name(const char *uid) {
        return !isempty(uid) && !strchr(uid, '/') && !streq(uid, ".") && !streq(uid, "..");
}

int pod_events_write(const char *status_dir, const char *uid, json_t *list) {
        assert(status_dir && list);
        if (!uid_is_file_name(uid))
                return -EINVAL;
        _cleanup_free_ char *dir = strprintf("%s/events", status_dir);
        _cleanup_free_ char *path = strprintf("%s/%s.json", dir, uid);
        _cleanup_free_ char *data = json_dumps(list, JSON_COMPACT);
        if (!dir || !path || !data)
                return -ENOMEM;
        int r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        return write_file_atomic(path, data, strlen(data), 0600);
}

int pod_events_remove(const char *status_dir, const char *uid) {
        assert(status_dir);
        if (!uid_is_file_name(uid))
                return -EINVAL;
        _cleanup_free_ char *path = strprintf("%s/events/%s.json", status_dir, uid);
        if (!path)
                return -ENOMEM;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
