/* Source errors: ERROR events become the per-origin table behind
 * status/sources.json, with reasons for /metrics, and the file follows. */
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
#include "json-util.h"
#include "source-errors.h"
#include "string-util.h"

#define SEC USEC_PER_SEC
#define T0 (1700000000 * SEC)

static SourceEvent error_event(const char *source, const char *origin, const Diagnostics *d,
                               size_t n_conflicts) {
        return (SourceEvent){ .type = SOURCE_EVENT_ERROR,
                              .source = source,
                              .origin = origin,
                              .errors = d,
                              .n_conflicts = n_conflicts };
}

static json_t *load(const char *path) {
        json_t *j = json_load_file(path, 0, NULL);
        assert_non_null(j);
        return j;
}

static void test_reasons_and_file(void **state) {
        (void)state;
        char tmp[] = "/tmp/test-source-errors-XXXXXX";
        assert_non_null(mkdtemp(tmp));
        _cleanup_free_ char *path = strprintf("%s/sources.json", tmp);
        _cleanup_(source_errors_freep) SourceErrors *s = NULL;
        assert_int_equal(source_errors_new(&s, tmp), 0);
        assert_int_equal(source_errors_flush(s), 0);
        _cleanup_json_ json_t *j0 = load(path);
        assert_int_equal(json_array_size(json_object_get(j0, "errors")), 0);

        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        diagnostics_add(&d, DIAG_ERROR, "/m/a.yaml", 3, 1, "spec.containers[0].image",
                        "must be set");
        diagnostics_add(&d, DIAG_WARNING, "/m/a.yaml", 4, 1, "spec.foo", "unknown field");
        diagnostics_add(&d, DIAG_ERROR, "/m/a.yaml", 7, 2, NULL, "column 2: bad indentation");
        diagnostics_add(&d, DIAG_ERROR, "/m/a.yaml", 9, 0, NULL, "pod \"x\" is also defined");
        SourceEvent ev = error_event("file", "/m/a.yaml", &d, 1);
        assert_int_equal(source_errors_update(s, &ev, T0), 0);

        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_INVALID), 1);
        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_SYNTAX), 1);
        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_DUPLICATE), 1);
        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_UNREADABLE), 0);
        assert_int_equal(source_errors_count(s, "http", SOURCE_ERROR_INVALID), 0);

        _cleanup_json_ json_t *j1 = load(path);
        json_t *errs = json_object_get(j1, "errors");
        assert_int_equal(json_array_size(errs), 1);
        json_t *o = json_array_get(errs, 0);
        assert_string_equal(json_string_value(json_object_get(o, "source")), "file");
        assert_string_equal(json_string_value(json_object_get(o, "origin")), "/m/a.yaml");
        assert_string_equal(json_string_value(json_object_get(o, "since")), "2023-11-14T22:13:20Z");
        json_t *messages = json_object_get(o, "messages");
        assert_int_equal(json_array_size(messages), 3); /* the warning is not an error */
        assert_string_equal(json_string_value(json_array_get(messages, 0)),
                            "/m/a.yaml:3: spec.containers[0].image: must be set");
        json_t *it = json_array_get(json_object_get(o, "items"), 0);
        assert_string_equal(json_string_value(json_object_get(it, "file")), "/m/a.yaml");
        assert_int_equal(json_integer_value(json_object_get(it, "line")), 3);
        assert_string_equal(json_string_value(json_object_get(it, "field")),
                            "spec.containers[0].image");
        assert_string_equal(json_string_value(json_object_get(it, "message")), "must be set");
        assert_string_equal(json_string_value(json_object_get(it, "reason")), "invalid");
        it = json_array_get(json_object_get(o, "items"), 2);
        assert_string_equal(json_string_value(json_object_get(it, "reason")), "duplicate");
        assert_null(json_object_get(it, "field"));

        /* Another origin (URL unreachable); a changed set keeps `since`. */
        _cleanup_diagnostics_ Diagnostics u;
        diagnostics_init(&u);
        diagnostics_add(&u, DIAG_ERROR, "http://h/p", 0, 0, NULL, "HTTP status 500");
        ev = error_event("http", "http://h/p", &u, 0);
        assert_int_equal(source_errors_update(s, &ev, T0 + 5 * SEC), 0);
        assert_int_equal(source_errors_count(s, "http", SOURCE_ERROR_UNREADABLE), 1);
        assert_int_equal(source_errors_count(s, NULL, SOURCE_ERROR_UNREADABLE), 1);

        _cleanup_diagnostics_ Diagnostics d2;
        diagnostics_init(&d2);
        diagnostics_add(&d2, DIAG_ERROR, "/m/a.yaml", 0, 0, NULL, "no documents");
        ev = error_event("file", "/m/a.yaml", &d2, 0);
        assert_int_equal(source_errors_update(s, &ev, T0 + 9 * SEC), 0);
        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_INVALID), 0);
        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_UNREADABLE), 1);
        _cleanup_json_ json_t *j2 = load(path);
        errs = json_object_get(j2, "errors");
        assert_int_equal(json_array_size(errs), 2);
        o = json_array_get(errs, 0); /* file before http */
        assert_string_equal(json_string_value(json_object_get(o, "origin")), "/m/a.yaml");
        assert_string_equal(json_string_value(json_object_get(o, "since")), "2023-11-14T22:13:20Z");

        /* Fixed or removed: an ERROR event without errors. */
        Diagnostics none;
        diagnostics_init(&none);
        ev = error_event("file", "/m/a.yaml", &none, 0);
        assert_int_equal(source_errors_update(s, &ev, T0 + 10 * SEC), 0);
        ev = error_event("file", "/m/never-failed.yaml", &none, 0);
        assert_int_equal(source_errors_update(s, &ev, T0 + 10 * SEC), 0);
        _cleanup_json_ json_t *j3 = load(path);
        errs = json_object_get(j3, "errors");
        assert_int_equal(json_array_size(errs), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(errs, 0), "origin")),
                            "http://h/p");
        assert_int_equal(source_errors_count(s, "file", SOURCE_ERROR_UNREADABLE), 0);

        /* Other events are not errors. */
        SourceEvent add = { .type = SOURCE_EVENT_ADD, .source = "file", .origin = "/m/b.yaml" };
        assert_int_equal(source_errors_update(s, &add, T0), 0);

        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", tmp);
        assert_int_equal(system(cmd), 0);
}

static void test_reason_strings(void **state) {
        (void)state;
        for (int i = 0; i < _SOURCE_ERROR_REASON_MAX; i++)
                assert_int_equal(source_error_reason_from_string(source_error_reason_to_string(i)),
                                 i);
        assert_int_equal(source_error_reason_from_string("x"), _SOURCE_ERROR_REASON_INVALID);
}

/* A signed URL's refusal (field "signature") has its own reason. */
static void test_signature_reason(void **state) {
        _cleanup_(source_errors_freep) SourceErrors *s = NULL;
        assert_int_equal(source_errors_new(&s, NULL), 0);
        Diagnostics d;
        diagnostics_init(&d);
        diagnostics_add(&d, DIAG_ERROR, "http://h/p", 0, 0, "signature",
                        "generation 6 is older than generation 7 (rollback)");
        SourceEvent ev = error_event("http", "http://h/p", &d, 0);
        assert_int_equal(source_errors_update(s, &ev, T0), 0);
        assert_int_equal(source_errors_count(s, "http", SOURCE_ERROR_SIGNATURE), 1);
        assert_int_equal(source_errors_count(s, "http", SOURCE_ERROR_INVALID), 0);
        assert_string_equal(source_error_reason_to_string(SOURCE_ERROR_SIGNATURE), "signature");
        assert_int_equal(source_error_reason_from_string("signature"), SOURCE_ERROR_SIGNATURE);
        diagnostics_deinit(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reasons_and_file),
                cmocka_unit_test(test_signature_reason),
                cmocka_unit_test(test_reason_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
