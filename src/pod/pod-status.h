/* The status a pod reports: phase and conditions computed from a
 * PodState the way kubelet computes them (getPhase, the Generate*Condition
 * functions), and the v1 Pod JSON written to
 * <run-dir>/status/<uid>.json for the client (docs/internals/state-files.md).
 * Everything except pod_status_write()/pod_status_remove() is pure. */
#pragma once

#include <errno.h>
#include <stdbool.h>

#include <jansson.h>

#include "container-config.h"
#include "pod-state.h"
#include "pod.h"
#include "time-util.h"

typedef enum PodPhase {
        POD_PHASE_PENDING,
        POD_PHASE_RUNNING,
        POD_PHASE_SUCCEEDED,
        POD_PHASE_FAILED,
        POD_PHASE_UNKNOWN,
        _POD_PHASE_MAX,
        _POD_PHASE_INVALID = -EINVAL,
} PodPhase;

/* status.reason (and the PodReadyToStartContainers reason) while the pod's
 * sandbox (namespaces, volumes, network) cannot be set up; status.message
 * says why. kubelet's event reason for the same failure. */
#define POD_SANDBOX_FAILED_REASON "FailedCreatePodSandBox"

const char *pod_phase_to_string(PodPhase p); /* "Pending", ... */
PodPhase pod_phase_from_string(const char *s);

/* PodQOSClass, pod_qos_class() and pod_qos_class_to_string() (Kubernetes'
 * GetPodQOS, a missing request defaulting to the limit) live in
 * container-config.h, which needs them for OOM scores; status.qosClass uses
 * the same function. */

/* kubelet's getPhase() for a static pod (never "terminal" by API decision):
 * regular init containers not done -> Pending (Failed when one failed under
 * restartPolicy Never); sidecars only count while running; Succeeded/Failed
 * only once every app container has stopped and none will restart.
 * deadline_exceeded -> Failed. */
PodPhase pod_phase(const PodState *s);

const char *pod_condition_type_to_string(PodConditionType t);

typedef struct PodCondition {
        PodConditionType type;
        bool status;        /* "True"/"False" */
        const char *reason; /* static string or NULL */
        char *message;      /* owned or NULL */
} PodCondition;

/* Evaluates the five kubelet conditions (index = PodConditionType), without
 * transition times. Free with pod_conditions_done(). 0 or -ENOMEM. */
int pod_conditions_compute(const PodState *s, PodCondition ret[static _POD_CONDITION_TYPE_MAX]);
void pod_conditions_done(PodCondition c[static _POD_CONDITION_TYPE_MAX]);

/* Records now_realtime as lastTransitionTime of each condition whose status
 * changed since the last call (or that was never evaluated). Call before
 * pod_status_to_json() whenever the state changed. Returns > 0 when some
 * condition changed, 0 when none did, -ENOMEM. */
int pod_status_update_conditions(PodState *s, usec_t now_realtime);

typedef struct PodStatusContext {
        const char *canonical_json; /* ManifestObject.canonical_json: spec comes from it */
        const char *node_name;      /* becomes spec.nodeName */
        const char *runtime_name;   /* containerID scheme: "runc" (default) or "crun" */
} PodStatusContext;

/* A full v1 Pod (apiVersion, kind, metadata, spec, status) as kubectl get
 * pod -o json shows it. 0, -EINVAL (canonical_json not a JSON object), or
 * -ENOMEM. */
int pod_status_to_json(const PodState *s, const PodStatusContext *ctx, json_t **ret);

/* Writes pod to <status_dir>/<uid>.json atomically (readers never see a
 * partial file). uid must be a plain file name. 0 or -errno. */
int pod_status_write(const char *status_dir, const char *uid, json_t *pod);
/* "<status_dir>/<uid>.json"; NULL when uid is not a plain file name or
 * out of memory. */
char *pod_status_path(const char *status_dir, const char *uid);
/* Removes <status_dir>/<uid>.json; a missing file is not an error. */
int pod_status_remove(const char *status_dir, const char *uid);
