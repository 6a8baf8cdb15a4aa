/* node.json: valid JSON with the same values, whatever bytes the names hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cleanup.h"
#include "node-json.h"

static json_t *parse(const NodeResources *n) {
        _cleanup_free_ char *text = NULL;
        assert_int_equal(node_json_format(n, &text), 0);
        size_t len = strlen(text);
        /* one line, as `nanolet node` and a reader with grep expect */
        assert_true(len > 0 && text[len - 1] == '\n');
        assert_null(memchr(text, '\n', len - 1));
        json_error_t e;
        json_t *doc = json_loads(text, 0, &e);
        if (!doc)
                fail_msg("node.json does not parse (%s at %d): %s", e.text, e.position, text);
        return doc;
}

static const char *get_string(json_t *doc, const char *path) {
        json_t *v = doc;
        char key[64];
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ".");
                assert_true(n < sizeof key);
                memcpy(key, p, n);
                key[n] = 0;
                v = json_object_get(v, key);
                if (!v)
                        fail_msg("node.json lacks %s", path);
                p += n + (p[n] == '.');
        }
        assert_true(json_is_string(v));
        return json_string_value(v);
}

static void test_fields(void **state) {
        NodeResources n = {
                .name = "node-1",
                .capacity_milli_cpu = 4000,
                .capacity_memory = 8LL << 30,
                .allocatable_milli_cpu = 3900,
                .allocatable_memory = (8LL << 30) - (256LL << 20),
                .max_pods = 110,
                .cgroup_driver = "systemd",
                .cgroup_root = "/",
        };
        json_t *doc = parse(&n);
        assert_string_equal(get_string(doc, "name"), "node-1");
        assert_string_equal(get_string(doc, "capacity.cpu"), "4000m");
        assert_string_equal(get_string(doc, "capacity.memory"), "8589934592");
        assert_string_equal(get_string(doc, "capacity.pods"), "110");
        assert_string_equal(get_string(doc, "allocatable.cpu"), "3900m");
        assert_string_equal(get_string(doc, "allocatable.memory"), "8321499136");
        assert_string_equal(get_string(doc, "allocatable.pods"), "110");
        assert_string_equal(get_string(doc, "cgroupDriver"), "systemd");
        assert_string_equal(get_string(doc, "cgroupRoot"), "/");
        json_decref(doc);
}

/* Quotes, a backslash, control characters and a newline in every string
 * field: the document still parses, and gives back the same bytes. */
static void test_hostile_strings(void **state) {
        static const char *const values[] = {
                "a\"b",        "back\\slash",          "line\nbreak", "ctl\x01\x1b[31m\x7f",
                "tab\there\r", "\",\"name\":\"forged", "caf\xc3\xa9",
        };
        for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
                NodeResources n = {
                        .name = values[i],
                        .max_pods = 1,
                        .cgroup_driver = values[i],
                        .cgroup_root = values[i],
                };
                json_t *doc = parse(&n);
                assert_string_equal(get_string(doc, "name"), values[i]);
                assert_string_equal(get_string(doc, "cgroupDriver"), values[i]);
                assert_string_equal(get_string(doc, "cgroupRoot"), values[i]);
                json_decref(doc);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_fields),
                cmocka_unit_test(test_hostile_strings),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
