/* A pod's events, as kubelet's event recorder would send them to the
 * apiserver: a bounded list (the last POD_EVENTS_MAX) kept by the pod
 * worker and written next to the pod's status record as a v1 EventList
 * (<run-dir>/status/events/<uid>.json, docs/internals/state-files.md), where
 * `nanolet inspect` and `nanolet events` read it.
 *
 * Repeats collapse as kubelet's EventCorrelator deduplicates: an event with
 * the same type, reason, message and involved object (the pod, or one of its
 * containers) as one already kept is not added again; the kept one gets
 * count + 1 and a new lastTimestamp and becomes the newest. The list is
 * therefore ordered by lastTimestamp, oldest first, and a full list drops
 * the event seen least recently. kubelet's second correlator stage (similar
 * events with different messages combined after ten in ten minutes) is not
 * done: at most POD_EVENTS_MAX are kept anyway. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "macro.h"
#include "time-util.h"

#define POD_EVENTS_MAX 50
/* source.component of every event (kubectl describe's "From"). */
#define POD_EVENTS_COMPONENT "nanolet"

/* kubelet's reasons (pkg/kubelet/events); the type follows from the reason. */
typedef enum PodEventReason {
        POD_EVENT_PULLING,                   /* Normal: reserved for registry pulls */
        POD_EVENT_PULLED,                    /* Normal: image present in the store */
        POD_EVENT_CREATED,                   /* Normal */
        POD_EVENT_STARTED,                   /* Normal */
        POD_EVENT_KILLING,                   /* Normal */
        POD_EVENT_FAILED,                    /* Warning: an attempt could not be created/started */
        POD_EVENT_UNHEALTHY,                 /* Warning: a probe failed */
        POD_EVENT_BACK_OFF,                  /* Warning: CrashLoopBackOff */
        POD_EVENT_FAILED_POST_START_HOOK,    /* Warning */
        POD_EVENT_FAILED_PRE_STOP_HOOK,      /* Warning */
        POD_EVENT_FAILED_CREATE_POD_SANDBOX, /* Warning */
        POD_EVENT_EVICTED,                   /* Warning: node-pressure eviction */
        POD_EVENT_OUT_OF_PODS,               /* Warning: maxPods reached, the pod waits */
        POD_EVENT_SYSCTL_FORBIDDEN,          /* Warning: admission refused a sysctl */
        POD_EVENT_APPARMOR,                  /* Warning: admission cannot enforce AppArmor */
        _POD_EVENT_REASON_MAX,
        _POD_EVENT_REASON_INVALID = -EINVAL,
} PodEventReason;

const char *pod_event_reason_to_string(PodEventReason r); /* "BackOff", ... */
PodEventReason pod_event_reason_from_string(const char *s);
/* "Normal" or "Warning". */
const char *pod_event_reason_type(PodEventReason r);

typedef struct PodEvent {
        PodEventReason reason;
        char *field_path; /* "spec.containers{name}"; NULL: the pod itself */
        char *message;
        usec_t first_timestamp, last_timestamp; /* CLOCK_REALTIME */
        unsigned count;
        uint64_t id; /* unique within the list, for metadata.name */
} PodEvent;

typedef struct PodEvents {
        PodEvent items[POD_EVENTS_MAX]; /* oldest first */
        size_t n;
        uint64_t next_id;
} PodEvents;

void pod_events_init(PodEvents *e);
void pod_events_done(PodEvents *e);

/* Records an event at now (CLOCK_REALTIME) on the pod (field_path NULL) or
 * the container field_path names (see pod_event_field_path()). Returns 1
 * when a new event was added, 0 when it collapsed into a kept one, or
 * -ENOMEM (the list is unchanged then). */
int pod_events_record(PodEvents *e, PodEventReason reason, const char *field_path, usec_t now,
                      const char *fmt, ...) _printf_(5, 6);
int pod_events_recordv(PodEvents *e, PodEventReason reason, const char *field_path, usec_t now,
                       const char *fmt, va_list ap) _printf_(5, 0);

/* kubelet's fieldPath of a container: "spec.initContainers{name}" or
 * "spec.containers{name}". NULL on ENOMEM. */
char *pod_event_field_path(bool is_init, const char *container);

typedef struct PodEventsObject {
        const char *name, *namespace, *uid; /* the pod (involvedObject) */
        const char *node_name;              /* source.host */
} PodEventsObject;

/* The list as a v1 EventList whose items are v1 Events. 0 or -ENOMEM. */
int pod_events_to_json(const PodEvents *e, const PodEventsObject *o, json_t **ret);

/* "<status_dir>/events/<uid>.json", written atomically (0600: messages may
 * quote probe output); the events directory is made when missing. 0 or
 * -errno (-EINVAL when uid is not a plain file name). */
int pod_events_write(const char *status_dir, const char *uid, json_t *list);
/* Removes it; a missing file is not an error. */
int pod_events_remove(const char *status_dir, const char *uid);
