/* A pod's events: the bound of the list, kubelet-style collapsing of
 * repeats, the order, and the v1 EventList written for the client. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "pod-events.h"
#include "string-util.h"

#define SEC USEC_PER_SEC
#define T0 (1700000000 * SEC)

static void test_reasons(void **state) {
        (void)state;
        for (int i = 0; i < _POD_EVENT_REASON_MAX; i++) {
                const char *s = pod_event_reason_to_string(i);
                assert_non_null(s);
                assert_int_equal(pod_event_reason_from_string(s), i);
                assert_non_null(pod_event_reason_type(i));
        }
        assert_string_equal(pod_event_reason_to_string(POD_EVENT_BACK_OFF), "BackOff");
        assert_string_equal(pod_event_reason_type(POD_EVENT_BACK_OFF), "Warning");
        assert_string_equal(pod_event_reason_type(POD_EVENT_STARTED), "Normal");
        assert_string_equal(pod_event_reason_to_string(POD_EVENT_FAILED_CREATE_POD_SANDBOX),
                            "FailedCreatePodSandBox");
        assert_int_equal(pod_event_reason_from_string("Nope"), _POD_EVENT_REASON_INVALID);
        assert_null(pod_event_reason_to_string(_POD_EVENT_REASON_MAX));

        _cleanup_free_ char *a = pod_event_field_path(false, "app");
        _cleanup_free_ char *b = pod_event_field_path(true, "init");
        assert_string_equal(a, "spec.containers{app}");
        assert_string_equal(b, "spec.initContainers{init}");
}

static void test_collapse(void **state) {
        (void)state;
        PodEvents e;
        pod_events_init(&e);

        assert_int_equal(pod_events_record(&e, POD_EVENT_BACK_OFF, "spec.containers{c}", T0,
                                           "Back-off restarting failed container %s", "c"),
                         1);
        assert_int_equal(pod_events_record(&e, POD_EVENT_STARTED, "spec.containers{d}", T0 + SEC,
                                           "Started container d"),
                         1);
        /* Same reason, object and message: count and lastTimestamp, and it
         * becomes the newest. */
        assert_int_equal(pod_events_record(&e, POD_EVENT_BACK_OFF, "spec.containers{c}",
                                           T0 + 5 * SEC, "Back-off restarting failed container c"),
                         0);
        assert_int_equal(e.n, 2);
        assert_int_equal(e.items[0].reason, POD_EVENT_STARTED);
        assert_int_equal(e.items[1].reason, POD_EVENT_BACK_OFF);
        assert_int_equal(e.items[1].count, 2);
        assert_int_equal(e.items[1].first_timestamp, T0);
        assert_int_equal(e.items[1].last_timestamp, T0 + 5 * SEC);

        /* Another object, another message, or the pod itself: new events. */
        assert_int_equal(pod_events_record(&e, POD_EVENT_BACK_OFF, "spec.containers{x}",
                                           T0 + 6 * SEC, "Back-off restarting failed container c"),
                         1);
        assert_int_equal(pod_events_record(&e, POD_EVENT_BACK_OFF, "spec.containers{c}",
                                           T0 + 6 * SEC, "Back-off restarting failed container C"),
                         1);
        assert_int_equal(pod_events_record(&e, POD_EVENT_BACK_OFF, NULL, T0 + 6 * SEC,
                                           "Back-off restarting failed container c"),
                         1);
        assert_int_equal(pod_events_record(&e, POD_EVENT_BACK_OFF, NULL, T0 + 7 * SEC,
                                           "Back-off restarting failed container c"),
                         0);
        assert_int_equal(e.n, 5);
        assert_null(e.items[4].field_path);
        assert_int_equal(e.items[4].count, 2);
        pod_events_done(&e);
        assert_int_equal(e.n, 0);
}

static void test_bound(void **state) {
        (void)state;
        PodEvents e;
        pod_events_init(&e);

        for (unsigned i = 0; i < POD_EVENTS_MAX + 20; i++)
                assert_int_equal(pod_events_record(&e, POD_EVENT_UNHEALTHY, "spec.containers{c}",
                                                   T0 + i * SEC, "Liveness probe failed: %u", i),
                                 1);
        assert_int_equal(e.n, POD_EVENTS_MAX);
        /* The oldest went; order is by lastTimestamp. */
        assert_string_equal(e.items[0].message, "Liveness probe failed: 20");
        assert_string_equal(e.items[POD_EVENTS_MAX - 1].message, "Liveness probe failed: 69");
        for (size_t i = 1; i < e.n; i++)
                assert_true(e.items[i - 1].last_timestamp <= e.items[i].last_timestamp);

        /* A repeat of the oldest moves it to the end and saves it from the
         * next eviction. */
        assert_int_equal(pod_events_record(&e, POD_EVENT_UNHEALTHY, "spec.containers{c}",
                                           T0 + 100 * SEC, "Liveness probe failed: 20"),
                         0);
        assert_string_equal(e.items[POD_EVENTS_MAX - 1].message, "Liveness probe failed: 20");
        assert_int_equal(pod_events_record(&e, POD_EVENT_KILLING, "spec.containers{c}",
                                           T0 + 101 * SEC, "Stopping container c"),
                         1);
        assert_string_equal(e.items[0].message, "Liveness probe failed: 22");
        assert_string_equal(e.items[POD_EVENTS_MAX - 2].message, "Liveness probe failed: 20");
        assert_int_equal(e.items[POD_EVENTS_MAX - 2].count, 2);
        assert_int_equal(e.n, POD_EVENTS_MAX);
        pod_events_done(&e);
}

static void test_json_and_files(void **state) {
        (void)state;
        PodEvents e;
        pod_events_init(&e);
        assert_int_equal(pod_events_record(&e, POD_EVENT_CREATED, "spec.containers{app}", T0,
                                           "Created container: app"),
                         1);
        assert_int_equal(pod_events_record(&e, POD_EVENT_FAILED_CREATE_POD_SANDBOX, NULL, T0,
                                           "Failed to create pod sandbox: no"),
                         1);
        assert_int_equal(pod_events_record(&e, POD_EVENT_FAILED_CREATE_POD_SANDBOX, NULL,
                                           T0 + 90 * SEC, "Failed to create pod sandbox: no"),
                         0);
        PodEventsObject o = {
                .name = "web-n1", .namespace = "default", .uid = "u1", .node_name = "n1"
        };
        _cleanup_json_ json_t *j = NULL;
        assert_int_equal(pod_events_to_json(&e, &o, &j), 0);
        assert_string_equal(json_string_value(json_object_get(j, "kind")), "EventList");
        json_t *items = json_object_get(j, "items");
        assert_int_equal(json_array_size(items), 2);
        json_t *a = json_array_get(items, 0), *b = json_array_get(items, 1);
        assert_string_equal(json_string_value(json_object_get(a, "kind")), "Event");
        assert_string_equal(json_string_value(json_object_get(a, "type")), "Normal");
        json_t *io = json_object_get(a, "involvedObject");
        assert_string_equal(json_string_value(json_object_get(io, "fieldPath")),
                            "spec.containers{app}");
        assert_string_equal(json_string_value(json_object_get(io, "uid")), "u1");
        assert_null(json_object_get(json_object_get(b, "involvedObject"), "fieldPath"));
        assert_string_equal(json_string_value(json_object_get(b, "reason")),
                            "FailedCreatePodSandBox");
        assert_string_equal(json_string_value(json_object_get(b, "type")), "Warning");
        assert_int_equal(json_integer_value(json_object_get(b, "count")), 2);
        assert_string_equal(json_string_value(json_object_get(b, "firstTimestamp")),
                            "2023-11-14T22:13:20Z");
        assert_string_equal(json_string_value(json_object_get(b, "lastTimestamp")),
                            "2023-11-14T22:14:50Z");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(b, "source"), "component")),
                "nanolet");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(a, "metadata"), "name")),
                "web-n1.1");

        char tmp[] = "/tmp/test-pod-events-XXXXXX";
        assert_non_null(mkdtemp(tmp));
        assert_int_equal(pod_events_write(tmp, "../x", j), -EINVAL);
        assert_int_equal(pod_events_write(tmp, "u1", j), 0);
        _cleanup_free_ char *path = strprintf("%s/events/u1.json", tmp);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        _cleanup_json_ json_t *back = json_load_file(path, 0, NULL);
        assert_true(json_equal(back, j));
        assert_int_equal(pod_events_remove(tmp, "u1"), 0);
        assert_int_equal(pod_events_remove(tmp, "u1"), 0);
        assert_int_equal(stat(path, &st), -1);
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", tmp);
        assert_int_equal(system(cmd), 0);
        pod_events_done(&e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reasons),
                cmocka_unit_test(test_collapse),
                cmocka_unit_test(test_bound),
                cmocka_unit_test(test_json_and_files),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
