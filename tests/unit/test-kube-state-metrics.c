/* kube-state-metrics' pod series from v1 Pod JSON: one phase and ready
 * series per possible value with 1 on the one that holds, a reason series
 * only for the reason that holds, init containers apart, the "<none>"
 * owner, hostile names escaped, and a removed pod's series gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-util.h"
#include "kube-state-metrics.h"

static char *format(Metrics *m) {
        char *text = NULL;
        assert_int_equal(metrics_format(m, &text, NULL), 0);
        return text;
}

static json_t *load(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        if (!j)
                fail_msg("bad test JSON: %s", e.text);
        return j;
}

static void assert_line(const char *text, const char *line) {
        _cleanup_free_ char *needle = NULL;
        assert_int_not_equal(asprintf(&needle, "\n%s\n", line), -1);
        if (!strstr(text, needle))
                fail_msg("missing line: %s\nin:\n%s", line, text);
}

static const char crash_looping[] =
        "{\"metadata\":{\"name\":\"crash\",\"namespace\":\"default\",\"uid\":\"u-1\"},"
        "\"spec\":{\"nodeName\":\"box\",\"hostNetwork\":true},"
        "\"status\":{\"phase\":\"Running\",\"hostIP\":\"10.0.0.1\",\"podIP\":\"10.0.0.1\","
        "\"conditions\":[{\"type\":\"Initialized\",\"status\":\"True\"},"
        "{\"type\":\"Ready\",\"status\":\"False\"}],"
        "\"initContainerStatuses\":[{\"name\":\"setup\",\"ready\":false,\"restartCount\":0,"
        "\"state\":{\"terminated\":{\"reason\":\"Completed\",\"exitCode\":0}},"
        "\"lastState\":{}}],"
        "\"containerStatuses\":[{\"name\":\"app\",\"ready\":false,\"restartCount\":4,"
        "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off\"}},"
        "\"lastState\":{\"terminated\":{\"reason\":\"Error\",\"exitCode\":1}}},"
        "{\"name\":\"web\",\"ready\":true,\"restartCount\":0,"
        "\"state\":{\"running\":{\"startedAt\":\"2026-01-01T00:00:00Z\"}},\"lastState\":{}}]}}";

static void test_crash_looping_pod(void **state) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        KubeStateMetrics k;
        _cleanup_json_ json_t *pod = load(crash_looping);

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(kube_state_metrics_register(&k, m), 0);
        kube_state_metrics_add_pod(&k, pod);
        _cleanup_free_ char *t = format(m);

#define P "namespace=\"default\",pod=\"crash\",uid=\"u-1\""
        assert_line(t, "kube_pod_info{" P ",host_ip=\"10.0.0.1\",pod_ip=\"10.0.0.1\",node=\"box\","
                       "created_by_kind=\"\",created_by_name=\"\",priority_class=\"\","
                       "host_network=\"true\"} 1");
        assert_line(t, "kube_pod_owner{" P ",owner_kind=\"<none>\",owner_name=\"<none>\","
                       "owner_is_controller=\"<none>\"} 1");
        assert_line(t, "kube_pod_status_phase{" P ",phase=\"Pending\"} 0");
        assert_line(t, "kube_pod_status_phase{" P ",phase=\"Running\"} 1");
        assert_line(t, "kube_pod_status_phase{" P ",phase=\"Failed\"} 0");
        assert_line(t, "kube_pod_status_ready{" P ",condition=\"true\"} 0");
        assert_line(t, "kube_pod_status_ready{" P ",condition=\"false\"} 1");
        assert_line(t, "kube_pod_status_ready{" P ",condition=\"unknown\"} 0");
        assert_line(t, "# TYPE kube_pod_container_status_waiting_reason gauge");
        assert_line(t, "kube_pod_container_status_waiting_reason{" P ",container=\"app\","
                       "reason=\"CrashLoopBackOff\"} 1");
        assert_line(t, "kube_pod_container_status_waiting{" P ",container=\"app\"} 1");
        assert_line(t, "kube_pod_container_status_waiting{" P ",container=\"web\"} 0");
        assert_line(t, "kube_pod_container_status_running{" P ",container=\"web\"} 1");
        assert_line(t, "kube_pod_container_status_ready{" P ",container=\"web\"} 1");
        assert_line(t, "kube_pod_container_status_ready{" P ",container=\"app\"} 0");
        assert_line(t, "# TYPE kube_pod_container_status_restarts_total counter");
        assert_line(t, "kube_pod_container_status_restarts_total{" P ",container=\"app\"} 4");
        assert_line(t, "kube_pod_container_status_last_terminated_reason{" P ",container=\"app\","
                       "reason=\"Error\"} 1");
        assert_line(t, "kube_pod_init_container_status_terminated_reason{" P
                       ",container=\"setup\",reason=\"Completed\"} 1");
        assert_line(t, "kube_pod_init_container_status_terminated{" P ",container=\"setup\"} 1");
        /* Reasons only where one holds: web waits for nothing, app has not
         * terminated, setup never terminated before. */
        assert_null(strstr(t, "waiting_reason{" P ",container=\"web\""));
        assert_null(strstr(t, "kube_pod_container_status_terminated_reason{"));
        assert_null(strstr(t, "kube_pod_init_container_status_last_terminated_reason{"));
        assert_null(strstr(t, "kube_pod_init_container_status_waiting_reason{"));
#undef P
}

/* Names from a manifest cannot break the format: quotes, backslashes,
 * newlines and bytes that are not UTF-8 are escaped or replaced; a pod
 * without a name is no pod; a pod without status has Unknown readiness
 * and no phase that holds. */
static void test_hostile_and_partial(void **state) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        KubeStateMetrics k;
        _cleanup_json_ json_t *evil =
                json_pack("{s:{s:s,s:s,s:s}}", "metadata", "name", "a\"b\\c\nd}", "namespace",
                          "n\xc3\xa9", "uid", "x");
        _cleanup_json_ json_t *nameless = load("{\"metadata\":{\"namespace\":\"default\"}}");

        assert_non_null(evil);
        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(kube_state_metrics_register(&k, m), 0);
        kube_state_metrics_add_pod(&k, evil);
        kube_state_metrics_add_pod(&k, nameless);
        _cleanup_free_ char *t = format(m);

        assert_line(t, "kube_pod_status_ready{namespace=\"n\xc3\xa9\",pod=\"a\\\"b\\\\c\\nd}\","
                       "uid=\"x\",condition=\"unknown\"} 1");
        assert_line(t, "kube_pod_status_phase{namespace=\"n\xc3\xa9\",pod=\"a\\\"b\\\\c\\nd}\","
                       "uid=\"x\",phase=\"Running\"} 0");
        assert_null(strstr(t, "namespace=\"default\""));
}

/* Each collection starts over: a pod removed between two scrapes leaves no
 * series behind, and the families without series are not written. */
static void test_removed_pod_leaves_nothing(void **state) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        KubeStateMetrics k;
        _cleanup_json_ json_t *pod = load(crash_looping);

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(kube_state_metrics_register(&k, m), 0);
        kube_state_metrics_add_pod(&k, pod);
        _cleanup_free_ char *before = format(m);
        assert_non_null(strstr(before, "crash"));

        kube_state_metrics_collect(&k, NULL, 0);
        _cleanup_free_ char *after = format(m);
        assert_string_equal(after, "");
}

static void test_null_registry(void **state) {
        KubeStateMetrics k;
        _cleanup_json_ json_t *pod = load(crash_looping);

        assert_int_equal(kube_state_metrics_register(&k, NULL), 0);
        kube_state_metrics_add_pod(&k, pod); /* counts nothing, crashes nothing */
        kube_state_metrics_clear(&k);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_crash_looping_pod),
                cmocka_unit_test(test_hostile_and_partial),
                cmocka_unit_test(test_removed_pod_leaves_nothing),
                cmocka_unit_test(test_null_registry),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
