/* Node-pressure eviction's decisions (src/gc/eviction.h): threshold parsing
 * as kubelet's, which observations meet a threshold, kubelet's ranking and
 * its message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "eviction.h"

#define MI (1024ULL * 1024ULL)

static void test_parse_defaults(void **state) {
        (void)state;
        char *hard[] = { "memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%",
                         "imagefs.available<15%", NULL };
        EvictionConfig c;
        Error err = {};
        assert_int_equal(
                eviction_config_parse(hard, NULL, NULL, NULL, 300 * USEC_PER_SEC, &c, &err), 0);
        assert_int_equal(err.error, 0);
        assert_int_equal(c.n, 4);
        assert_int_equal(c.thresholds[0].signal, EVICTION_SIGNAL_MEMORY_AVAILABLE);
        assert_int_equal(c.thresholds[0].value.quantity, 100 * MI);
        assert_false(c.thresholds[0].soft);
        assert_int_equal(c.thresholds[1].signal, EVICTION_SIGNAL_NODEFS_AVAILABLE);
        assert_int_equal(c.thresholds[1].value.quantity, 0);
        assert_true(c.thresholds[1].value.percentage > 0.0999 &&
                    c.thresholds[1].value.percentage < 0.1001);
        assert_int_equal(c.thresholds[2].signal, EVICTION_SIGNAL_NODEFS_INODES_FREE);
        assert_int_equal(c.thresholds[3].signal, EVICTION_SIGNAL_IMAGEFS_AVAILABLE);
        assert_int_equal(c.pressure_transition_period, 300 * USEC_PER_SEC);
        eviction_config_done(&c);
}

static void test_parse_soft_and_reclaim(void **state) {
        (void)state;
        char *hard[] = { "memory.available<100Mi", "memory.available<200Mi", NULL };
        char *soft[] = { "nodefs.available<20%", NULL };
        char *grace[] = { "nodefs.available=1m30s", NULL };
        char *reclaim[] = { "nodefs.available=500Mi", "memory.available=5%", NULL };
        EvictionConfig c;
        Error err = {};
        assert_int_equal(eviction_config_parse(hard, soft, grace, reclaim, 0, &c, &err), 0);
        assert_int_equal(c.n, 2);
        /* The later value for a signal wins. */
        assert_int_equal(c.thresholds[0].value.quantity, 200 * MI);
        assert_true(c.thresholds[1].soft);
        assert_int_equal(c.thresholds[1].grace_period, 90 * USEC_PER_SEC);
        assert_int_equal(c.thresholds[1].min_reclaim.quantity, 500 * MI);
        assert_true(c.thresholds[0].min_reclaim.percentage > 0.049);
        eviction_config_done(&c);
}

static void expect_error(char **hard, char **soft, char **grace, char **reclaim,
                         const char *needle) {
        EvictionConfig c = {};
        Error err = {};
        assert_int_equal(eviction_config_parse(hard, soft, grace, reclaim, 0, &c, &err), -EINVAL);
        assert_int_equal(err.error, -EINVAL);
        if (!strstr(err.message, needle))
                fail_msg("error \"%s\" lacks \"%s\"", err.message, needle);
        assert_null(c.thresholds);
}

static void test_parse_errors(void **state) {
        (void)state;
        char *unknown[] = { "disk.available<1Gi", NULL };
        char *op[] = { "memory.available>1Gi", NULL };
        char *zero[] = { "memory.available<0", NULL };
        char *neg[] = { "memory.available<-1Mi", NULL };
        char *pct[] = { "nodefs.available<101%", NULL };
        char *junk[] = { "nodefs.available<abc", NULL };
        char *soft[] = { "nodefs.available<20%", NULL };
        char *grace_orphan[] = { "memory.available=1m", NULL };
        char *grace_bad[] = { "nodefs.available=soon", NULL };
        expect_error(unknown, NULL, NULL, NULL, "unsupported eviction signal \"disk.available\"");
        expect_error(op, NULL, NULL, NULL, "expected signal<value");
        expect_error(zero, NULL, NULL, NULL, "must be positive");
        expect_error(neg, NULL, NULL, NULL, "must be positive");
        expect_error(pct, NULL, NULL, NULL, "within 0%..100%");
        expect_error(junk, NULL, NULL, NULL, "invalid quantity");
        expect_error(NULL, soft, NULL, NULL, "needs a grace period");
        expect_error(NULL, soft, grace_orphan, NULL, "without a soft threshold");
        expect_error(NULL, soft, grace_bad, NULL, "invalid duration");
        expect_error(NULL, NULL, NULL, grace_orphan, "without a threshold");
}

static void test_parse_zero_percent_drops(void **state) {
        (void)state;
        char *hard[] = { "memory.available<0%", "nodefs.available<100%", "pid.available<1000",
                         NULL };
        EvictionConfig c;
        assert_int_equal(eviction_config_parse(hard, NULL, NULL, NULL, 0, &c, NULL), 0);
        assert_int_equal(c.n, 1);
        assert_int_equal(c.thresholds[0].signal, EVICTION_SIGNAL_PID_AVAILABLE);
        assert_int_equal(c.thresholds[0].value.quantity, 1000);
        eviction_config_done(&c);
}

static void test_met(void **state) {
        (void)state;
        EvictionObservation obs[_EVICTION_SIGNAL_MAX] = {
                [EVICTION_SIGNAL_MEMORY_AVAILABLE] = { .valid = true,
                                                       .available = 99 * MI,
                                                       .capacity = 1024 * MI },
                [EVICTION_SIGNAL_NODEFS_AVAILABLE] = { .valid = true,
                                                       .available = 10 * MI,
                                                       .capacity = 100 * MI },
        };
        EvictionThreshold mem = { .signal = EVICTION_SIGNAL_MEMORY_AVAILABLE,
                                  .value = { .quantity = 100 * MI } };
        EvictionThreshold disk = { .signal = EVICTION_SIGNAL_NODEFS_AVAILABLE,
                                   .value = { .percentage = 0.10 } };
        EvictionThreshold pid = { .signal = EVICTION_SIGNAL_PID_AVAILABLE,
                                  .value = { .quantity = 1000 } };
        assert_true(eviction_threshold_met(&mem, obs, false));
        /* Exactly 10% available is not below 10%. */
        assert_false(eviction_threshold_met(&disk, obs, false));
        obs[EVICTION_SIGNAL_NODEFS_AVAILABLE].available = 10 * MI - 1;
        assert_true(eviction_threshold_met(&disk, obs, false));
        /* Under pressure, the minimum reclaim counts: 10% + 5% of 100 MiB. */
        disk.min_reclaim = (EvictionValue){ .percentage = 0.05 };
        obs[EVICTION_SIGNAL_NODEFS_AVAILABLE].available = 14 * MI;
        assert_false(eviction_threshold_met(&disk, obs, false));
        assert_true(eviction_threshold_met(&disk, obs, true));
        obs[EVICTION_SIGNAL_NODEFS_AVAILABLE].available = 15 * MI;
        assert_false(eviction_threshold_met(&disk, obs, true));
        /* Not observed: never met. */
        assert_false(eviction_threshold_met(&pid, obs, false));
        assert_int_equal(eviction_signal_condition(EVICTION_SIGNAL_IMAGEFS_INODES_FREE),
                         NODE_CONDITION_DISK_PRESSURE);
        assert_string_equal(
                node_condition_to_string(eviction_signal_condition(EVICTION_SIGNAL_PID_AVAILABLE)),
                "PIDPressure");
}

static void test_rank(void **state) {
        (void)state;
        EvictionCandidate c[] = {
                /* 0: Burstable within its requests */
                { .priority = 0, .usage = 50, .requests = 100 },
                /* 1: BestEffort, small */
                { .priority = 0, .usage = 10, .requests = 0 },
                /* 2: BestEffort, big */
                { .priority = 0, .usage = 500, .requests = 0 },
                /* 3: system-node-critical BestEffort: never */
                { .priority = 2000001000, .usage = 5000, .requests = 0 },
                /* 4: over requests but higher priority */
                { .priority = 1000, .usage = 900, .requests = 100 },
                /* 5: Burstable over its requests by 100 */
                { .priority = 0, .usage = 200, .requests = 100 },
                /* 6: within requests, lower priority than 0 */
                { .priority = -10, .usage = 1, .requests = 100 },
        };
        size_t order[7];
        size_t k = eviction_rank(c, 7, STATIC_POD_EVICTION_EVICT_AND_READMIT, order);
        assert_int_equal(k, 6);
        size_t want[] = { 2, 5, 1, 4, 6, 0 };
        for (size_t i = 0; i < 6; i++)
                assert_int_equal(order[i], want[i]);
}

/* kubelet's rule, the default: every static pod is critical, so no pod is
 * ever chosen, whatever its usage, requests or priority. */
static void test_rank_never(void **state) {
        (void)state;
        EvictionCandidate c[] = {
                { .priority = 0, .usage = 500, .requests = 0 },
                { .priority = -10, .usage = 1 << 30, .requests = 0 },
                { .priority = 0, .usage = 200, .requests = 100 },
        };
        size_t order[3] = { 7, 7, 7 };
        assert_int_equal(eviction_rank(c, 3, STATIC_POD_EVICTION_NEVER, order), 0);
        assert_int_equal(order[0], 7); /* nothing written */
        assert_int_equal(eviction_rank(c, 3, _STATIC_POD_EVICTION_INVALID, order), 0);
        assert_int_equal(eviction_rank(c, 3, STATIC_POD_EVICTION_EVICT_AND_READMIT, order), 3);
        assert_int_equal(order[0], 1);
        assert_string_equal(static_pod_eviction_to_string(STATIC_POD_EVICTION_NEVER), "never");
        assert_string_equal(static_pod_eviction_to_string(STATIC_POD_EVICTION_EVICT_AND_READMIT),
                            "evict-and-readmit");
        assert_null(static_pod_eviction_to_string(_STATIC_POD_EVICTION_MAX));
}

/* A system priority comes from priorityClassName only, as the Priority
 * admission plugin resolves it; a hand-set one above what a user-defined
 * class may hold exempts nothing. */
static void test_pod_priority(void **state) {
        (void)state;
        assert_int_equal(eviction_pod_priority("system-node-critical", false, 0), 2000001000);
        assert_int_equal(eviction_pod_priority("system-cluster-critical", false, 0), 2000000000);
        assert_int_equal(eviction_pod_priority("system-node-critical", true, 2000001000),
                         2000001000);
        /* the class wins over a different hand-set value */
        assert_int_equal(eviction_pod_priority("system-cluster-critical", true, 5), 2000000000);
        /* hand-set system priorities without their class */
        assert_int_equal(eviction_pod_priority(NULL, true, 2000001000), 0);
        assert_int_equal(eviction_pod_priority(NULL, true, 2000000000), 0);
        assert_int_equal(eviction_pod_priority("high", true, 1999999999), 0);
        assert_int_equal(eviction_pod_priority(NULL, true, 1000000001), 0);
        assert_int_equal(eviction_pod_priority(NULL, true, INT64_MAX), 0);
        assert_int_equal(eviction_pod_priority(NULL, true, INT64_MIN), 0);
        /* what a user-defined class may give is kept */
        assert_int_equal(eviction_pod_priority("high", true, 1000000000), 1000000000);
        assert_int_equal(eviction_pod_priority(NULL, true, 1000), 1000);
        assert_int_equal(eviction_pod_priority(NULL, true, -10), -10);
        assert_int_equal(eviction_pod_priority(NULL, false, 77), 0);
        assert_int_equal(eviction_pod_priority("system-node-critical-ish", false, 0), 0);

        /* ranked with the setting: the hand-set "critical" pod is evicted
         * first (BestEffort, largest), the classed one never */
        EvictionCandidate c[] = {
                { .priority = eviction_pod_priority(NULL, true, 2000001000), .usage = 900 },
                { .priority = eviction_pod_priority("system-node-critical", false, 0),
                  .usage = 5000 },
                { .priority = eviction_pod_priority(NULL, false, 0), .usage = 10 },
        };
        size_t order[3];
        assert_int_equal(eviction_rank(c, 3, STATIC_POD_EVICTION_EVICT_AND_READMIT, order), 2);
        assert_int_equal(order[0], 0);
        assert_int_equal(order[1], 2);
}

/* kubelet's rankPIDPressure: lower priority first, then more processes;
 * the candidates carry the process count as usage and no requests. */
static void test_rank_pids(void **state) {
        (void)state;
        EvictionCandidate c[] = {
                { .priority = 0, .usage = 3 },             /* 0 */
                { .priority = 0, .usage = 204 },           /* 1: the forker */
                { .priority = 1000, .usage = 900 },        /* 2: more, but higher priority */
                { .priority = 2000001000, .usage = 5000 }, /* 3: critical: never */
                { .priority = 0, .usage = 0 },             /* 4: nothing running */
                { .priority = -5, .usage = 1 },            /* 5: lowest priority */
        };
        size_t order[6];
        size_t k = eviction_rank(c, 6, STATIC_POD_EVICTION_EVICT_AND_READMIT, order);
        assert_int_equal(k, 5);
        size_t want[] = { 5, 1, 0, 2, 4 };
        for (size_t i = 0; i < k; i++)
                assert_int_equal(order[i], want[i]);

        /* pid.available as a threshold: met below it, and the message */
        EvictionConfig cfg = {};
        char *hard[] = { (char *)"pid.available<1000", NULL };
        assert_int_equal(eviction_config_parse(hard, NULL, NULL, NULL, 0, &cfg, NULL), 0);
        assert_int_equal(cfg.n, 1);
        EvictionObservation obs[_EVICTION_SIGNAL_MAX] = {};
        obs[EVICTION_SIGNAL_PID_AVAILABLE] = (EvictionObservation){ true, 999, 32768 };
        assert_true(eviction_threshold_met(&cfg.thresholds[0], obs, false));
        obs[EVICTION_SIGNAL_PID_AVAILABLE].available = 1000;
        assert_false(eviction_threshold_met(&cfg.thresholds[0], obs, false));
        assert_int_equal(eviction_signal_condition(EVICTION_SIGNAL_PID_AVAILABLE),
                         NODE_CONDITION_PID_PRESSURE);
        eviction_config_done(&cfg);
        char *m = eviction_message(EVICTION_SIGNAL_PID_AVAILABLE, 1000, 999);
        assert_string_equal(m, "The node was low on resource: pids. Threshold quantity: 1k, "
                               "available: 999. ");
        free(m);
}

static void test_message(void **state) {
        (void)state;
        char *m = eviction_message(EVICTION_SIGNAL_NODEFS_AVAILABLE, 6710886, 6553 * 1024);
        assert_string_equal(m, "The node was low on resource: ephemeral-storage. Threshold "
                               "quantity: 6710886, available: 6553Ki. ");
        free(m);
        m = eviction_message(EVICTION_SIGNAL_MEMORY_AVAILABLE, 100 * MI, 0);
        assert_string_equal(m, "The node was low on resource: memory. Threshold quantity: 100Mi, "
                               "available: 0. ");
        free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_defaults),
                cmocka_unit_test(test_parse_soft_and_reclaim),
                cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_parse_zero_percent_drops),
                cmocka_unit_test(test_met),
                cmocka_unit_test(test_rank),
                cmocka_unit_test(test_rank_pids),
                cmocka_unit_test(test_rank_never),
                cmocka_unit_test(test_pod_priority),
                cmocka_unit_test(test_message),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
