/* The admission decision (pod-admit.h). */
#include "pod-admit.h"

#include <assert.h>

#include "string-util.h"

PodAdmitDecision pod_admit_decide(const PodAdmitFacts *f) {
        assert(f);

        if (f->sysctl_refusal || f->apparmor_refusal)
                return (PodAdmitDecision){ .verdict = POD_ADMIT_REJECT };

        bool out_of_pods = streq_ptr(f->wait_reason, POD_OUT_OF_PODS_REASON);
        PodAdmitDecision d = {
                .verdict = f->wait_reason ? POD_ADMIT_WAIT : POD_ADMIT_ADMIT,
                .log_held = f->wait_reason && !streq_ptr(f->wait_reason, f->held_reason),
                .log_released = !f->wait_reason && f->held_reason,
        };
        d.event_out_of_pods = d.log_held && out_of_pods;
        /* OutOfpods is also the pod's own reason, as kubelet's admission
         * failure shows it; the message may change while it waits. */
        if (out_of_pods)
                d.pod_reason = POD_ADMIT_POD_REASON_SET;
        else if (streq_ptr(f->pod_reason, POD_OUT_OF_PODS_REASON))
                d.pod_reason = POD_ADMIT_POD_REASON_CLEAR;
        return d;
}
