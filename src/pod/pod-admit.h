/* A pod's admission, the decision only: kubelet's sysctl and AppArmor
 * admission first (a refusal is final: the pod is Failed and nothing of it
 * is created), then the manager's maxPods and nanolet.io/wait-for, which
 * only hold the pod back until they allow it. pod_admit_decide() is pure:
 * the worker gathers the facts (pod_sysctl_admit(),
 * container_apparmor_admit(), PodManagerContext.wait_for_check) and
 * carries out the decision: logs, events, the pod's reason. */
#pragma once

#include <stdbool.h>

/* kubelet's admission failure reason when maxPods pods run already. */
#define POD_OUT_OF_PODS_REASON "OutOfpods"

typedef enum PodAdmitVerdict {
        POD_ADMIT_ADMIT,  /* may start, and is never held back again */
        POD_ADMIT_WAIT,   /* held back; asked again at the next sync */
        POD_ADMIT_REJECT, /* refused for good */
} PodAdmitVerdict;

/* What becomes of the pod's own reason and message (PodState.reason). */
typedef enum PodAdmitPodReason {
        POD_ADMIT_POD_REASON_KEEP,
        POD_ADMIT_POD_REASON_SET,   /* the wait's reason and message (OutOfpods) */
        POD_ADMIT_POD_REASON_CLEAR, /* an OutOfpods that no longer holds */
} PodAdmitPodReason;

typedef struct PodAdmitFacts {
        const char *sysctl_refusal;   /* pod_sysctl_admit()'s message; NULL: allowed */
        const char *apparmor_refusal; /* container_apparmor_admit()'s; NULL: allowed */
        const char *wait_reason;      /* wait_for_check()'s reason now; NULL: may start */
        const char *held_reason;      /* PodState.wait_reason: why it was held back so far */
        const char *pod_reason;       /* PodState.reason */
} PodAdmitFacts;

typedef struct PodAdmitDecision {
        PodAdmitVerdict verdict;
        /* Held back for a reason it was not held back for before: logged
         * once, not at every sync; an OutOfpods event goes with it. */
        bool log_held;
        bool event_out_of_pods;
        bool log_released; /* held back until now, it may start */
        PodAdmitPodReason pod_reason;
} PodAdmitDecision;

PodAdmitDecision pod_admit_decide(const PodAdmitFacts *f);
