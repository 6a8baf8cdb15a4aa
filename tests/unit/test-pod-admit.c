/* pod_admit_decide(): the sysctl refusal before everything, holding back
 * and releasing, what is logged once and what every sync, and the pod's
 * own OutOfpods reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "pod-admit.h"

#define WAITING_FOR_PODS "WaitingForPods"

static PodAdmitDecision decide(const char *sysctl_refusal, const char *wait_reason,
                               const char *held_reason, const char *pod_reason) {
        PodAdmitFacts f = {
                .sysctl_refusal = sysctl_refusal,
                .wait_reason = wait_reason,
                .held_reason = held_reason,
                .pod_reason = pod_reason,
        };
        return pod_admit_decide(&f);
}

/* A forbidden sysctl is final, whatever maxPods or wait-for say: nothing
 * is logged as a wait and the pod's reason is left to the rejection. */
static void test_sysctl_rejects_first(void **state) {
        PodAdmitDecision d = decide("forbidden sysctl", POD_OUT_OF_PODS_REASON, NULL, NULL);
        assert_int_equal(d.verdict, POD_ADMIT_REJECT);
        assert_false(d.log_held);
        assert_false(d.event_out_of_pods);
        assert_false(d.log_released);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);

        d = decide("forbidden sysctl", NULL, WAITING_FOR_PODS, POD_OUT_OF_PODS_REASON);
        assert_int_equal(d.verdict, POD_ADMIT_REJECT);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);
}

/* AppArmor that cannot be enforced is as final as a forbidden sysctl. */
static void test_apparmor_rejects(void **state) {
        PodAdmitFacts f = {
                .apparmor_refusal = "Cannot enforce AppArmor: AppArmor is not enabled on the host",
                .wait_reason = POD_OUT_OF_PODS_REASON,
        };
        PodAdmitDecision d = pod_admit_decide(&f);
        assert_int_equal(d.verdict, POD_ADMIT_REJECT);
        assert_false(d.log_held);
        assert_false(d.event_out_of_pods);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);
}

static void test_admit_plain(void **state) {
        PodAdmitDecision d = decide(NULL, NULL, NULL, NULL);
        assert_int_equal(d.verdict, POD_ADMIT_ADMIT);
        assert_false(d.log_held);
        assert_false(d.log_released);
        assert_false(d.event_out_of_pods);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);

        /* a reason of the pod's own that admission did not set stays */
        d = decide(NULL, NULL, NULL, "DeadlineExceeded");
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);
}

/* maxPods: held back, logged with an event once; the pod's own reason is
 * OutOfpods (set again at every sync, its message may change). */
static void test_out_of_pods(void **state) {
        PodAdmitDecision d = decide(NULL, POD_OUT_OF_PODS_REASON, NULL, NULL);
        assert_int_equal(d.verdict, POD_ADMIT_WAIT);
        assert_true(d.log_held);
        assert_true(d.event_out_of_pods);
        assert_false(d.log_released);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_SET);

        d = decide(NULL, POD_OUT_OF_PODS_REASON, POD_OUT_OF_PODS_REASON, POD_OUT_OF_PODS_REASON);
        assert_int_equal(d.verdict, POD_ADMIT_WAIT);
        assert_false(d.log_held);
        assert_false(d.event_out_of_pods);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_SET);

        /* a slot is free: released, and OutOfpods is no longer the pod's reason */
        d = decide(NULL, NULL, POD_OUT_OF_PODS_REASON, POD_OUT_OF_PODS_REASON);
        assert_int_equal(d.verdict, POD_ADMIT_ADMIT);
        assert_true(d.log_released);
        assert_false(d.log_held);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_CLEAR);
}

/* wait-for: held back and logged once, but no OutOfpods event and no pod
 * reason; a change of reason is logged again. */
static void test_wait_for(void **state) {
        PodAdmitDecision d = decide(NULL, WAITING_FOR_PODS, NULL, NULL);
        assert_int_equal(d.verdict, POD_ADMIT_WAIT);
        assert_true(d.log_held);
        assert_false(d.event_out_of_pods);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);

        d = decide(NULL, WAITING_FOR_PODS, WAITING_FOR_PODS, NULL);
        assert_false(d.log_held);

        /* from wait-for to maxPods: logged, with the event */
        d = decide(NULL, POD_OUT_OF_PODS_REASON, WAITING_FOR_PODS, NULL);
        assert_true(d.log_held);
        assert_true(d.event_out_of_pods);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_SET);

        /* from maxPods to wait-for: the OutOfpods reason goes */
        d = decide(NULL, "WaitForCycle", POD_OUT_OF_PODS_REASON, POD_OUT_OF_PODS_REASON);
        assert_int_equal(d.verdict, POD_ADMIT_WAIT);
        assert_true(d.log_held);
        assert_false(d.event_out_of_pods);
        assert_false(d.log_released);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_CLEAR);

        d = decide(NULL, NULL, WAITING_FOR_PODS, NULL);
        assert_int_equal(d.verdict, POD_ADMIT_ADMIT);
        assert_true(d.log_released);
        assert_int_equal(d.pod_reason, POD_ADMIT_POD_REASON_KEEP);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sysctl_rejects_first),
                cmocka_unit_test(test_apparmor_rejects),
                cmocka_unit_test(test_admit_plain),
                cmocka_unit_test(test_out_of_pods),
                cmocka_unit_test(test_wait_for),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
