/* The identity test: reformatting a manifest never changes a pod's
 * canonical form or UID; changing any value, the node or the source does. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <jansson.h>

#include "manifest.h"

static const char *const same_pod[] = {
        /* block style */
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: web\n"
        "  labels:\n"
        "    app: web\n"
        "    tier: \"1\"\n"
        "spec:\n"
        "  containers:\n"
        "  - name: nginx\n"
        "    image: nginx:1.25\n"
        "    args: [\"-g\", \"daemon off;\"]\n"
        "    ports:\n"
        "    - containerPort: 80\n",
        /* keys shuffled, comments, other quoting, other indentation */
        "# the web server\n"
        "kind: 'Pod'\n"
        "spec:\n"
        "    containers:\n"
        "        -   ports:\n"
        "              - {containerPort: 0x50}   # hex is still 80\n"
        "            args:\n"
        "              - '-g'\n"
        "              - daemon off;\n"
        "            image: \"nginx:1.25\"\n"
        "            name: nginx\n"
        "metadata: # who\n"
        "    labels: {tier: '1', app: web}\n"
        "    name: \"web\"\n"
        "apiVersion: \"v1\"\n",
        /* flow style */
        "{kind: Pod, apiVersion: v1, metadata: {name: web, labels: {app: web, tier: \"1\"}},"
        " spec: {containers: [{name: nginx, image: \"nginx:1.25\", args: [-g, \"daemon off;\"],"
        " ports: [{containerPort: 80}]}]}}\n",
        /* JSON, compact */
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\",\"labels\":"
        "{\"app\":\"web\",\"tier\":\"1\"}},\"spec\":{\"containers\":[{\"name\":\"nginx\","
        "\"image\":\"nginx:1.25\",\"args\":[\"-g\",\"daemon off;\"],\"ports\":"
        "[{\"containerPort\":80}]}]}}",
        /* JSON with tabs (takes the jansson path) */
        "\t{\n\t\"spec\": {\"containers\": [{\"name\": \"nginx\", \"image\": \"nginx:1.25\","
        "\n\t\t\"args\": [\"-g\", \"daemon off;\"], \"ports\": [{\"containerPort\": 80}]}]},\n"
        "\t\"metadata\": {\"labels\": {\"tier\": \"1\", \"app\": \"web\"}, \"name\": \"web\"},"
        "\n\t\"kind\": \"Pod\", \"apiVersion\": \"v1\"\n}\n",
        /* anchors and a merge key */
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: &n web\n"
        "  labels: &l\n"
        "    app: *n\n"
        "    tier: \"1\"\n"
        "spec:\n"
        "  containers:\n"
        "  - <<: {name: nginx, image: \"nginx:1.25\"}\n"
        "    args: [\"-g\", \"daemon off;\"]\n"
        "    ports:\n"
        "    - containerPort: 80\n",
};

static const char *const want_canonical =
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"app\":\"web\","
        "\"tier\":\"1\"},\"name\":\"web\"},\"spec\":{\"containers\":[{\"args\":[\"-g\","
        "\"daemon off;\"],\"image\":\"nginx:1.25\",\"name\":\"nginx\",\"ports\":"
        "[{\"containerPort\":80}]}]}}";

static char *canonical_of(const char *text) {
        Diagnostics d;
        YamlNode **docs = NULL;
        size_t n = 0;
        char *c = NULL;

        diagnostics_init(&d);
        int r = yaml_parse_documents(text, strlen(text), "t", NULL, &docs, &n, &d);
        if (r < 0) {
                char *s = d.n > 0 ? diag_to_string(&d.items[0]) : NULL;
                fail_msg("parse failed: %s", s ? s : "?");
        }
        assert_int_equal(n, 1);
        assert_int_equal(manifest_canonical_json(docs[0], &c), 0);
        yaml_documents_free(docs, n);
        diagnostics_deinit(&d);
        return c;
}

static void init_opts(ManifestParseOptions *o) {
        *o = (ManifestParseOptions){
                .filename = "web.yaml",
                .node_name = "node1",
                .source_id = "file:/etc/kubernetes/manifests/web.yaml",
                .config_source = "file",
        };
}

/* Parses one pod and returns a copy of its UID. */
static char *uid_of(const char *text, const ManifestParseOptions *o) {
        Diagnostics d;
        ManifestObject **objs = NULL;
        size_t n = 0;

        diagnostics_init(&d);
        int r = manifest_parse_buffer(text, strlen(text), o, &objs, &n, &d);
        if (r < 0) {
                diagnostics_print(&d, stderr);
                fail_msg("manifest_parse_buffer: %d", r);
        }
        assert_int_equal(n, 1);
        assert_int_equal(objs[0]->kind, MANIFEST_KIND_POD);
        char *uid = strdup(objs[0]->uid);
        manifest_objects_free(objs, n);
        diagnostics_deinit(&d);
        return uid;
}

static void test_canonical_same(void **state) {
        for (size_t i = 0; i < sizeof(same_pod) / sizeof(same_pod[0]); i++) {
                char *c = canonical_of(same_pod[i]);
                if (strcmp(c, want_canonical) != 0)
                        fail_msg("form %zu:\n%s\nwant\n%s", i, c, want_canonical);
                free(c);
        }
}

static void test_canonical_values(void **state) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "a: 1.0", "{\"a\":1}" },
                { "a: 1.5", "{\"a\":1.5}" },
                { "a: 0.1", "{\"a\":0.10000000000000001}" },
                { "a: -.inf", "{\"a\":\"-.inf\"}" },
                { "a: .nan", "{\"a\":\".nan\"}" },
                { "a: yes", "{\"a\":true}" },
                { "a: ~", "{\"a\":null}" },
                { "a:", "{\"a\":null}" },
                { "a: \"\"", "{\"a\":\"\"}" },
                { "a: 0755", "{\"a\":493}" },
                { "a: \"0755\"", "{\"a\":\"0755\"}" },
                { "a: caf\xc3\xa9", "{\"a\":\"caf\\u00E9\"}" },
                { "a: \"tab\\there\"", "{\"a\":\"tab\\there\"}" },
                { "b: 1\na: 2\nB: 3\n", "{\"B\":3,\"a\":2,\"b\":1}" },
                { "- 1\n- x\n", "[1,\"x\"]" },
                { "a: |\n  line1\n  line2\n", "{\"a\":\"line1\\nline2\\n\"}" },
                { "a: >\n  folded\n  text\n", "{\"a\":\"folded text\\n\"}" },
                { "p: &a [1, 2]\nq: *a\n", "{\"p\":[1,2],\"q\":[1,2]}" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *c = canonical_of(cases[i].in);
                if (strcmp(c, cases[i].out) != 0)
                        fail_msg("%s -> %s, want %s", cases[i].in, c, cases[i].out);
                free(c);
        }
        char *c = NULL;
        assert_int_equal(manifest_canonical_json(NULL, &c), -EINVAL);
}

static void test_canonical_shared_nodes(void **state) {
        /* 9^5 = 59049 leaves through aliases: expanded, but cheap. */
        const char *t = "a: &a [1,1,1,1,1,1,1,1,1]\n"
                        "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                        "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                        "e: [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n";
        char *c = canonical_of(t);
        size_t ones = 0;
        for (const char *p = c; *p; p++)
                ones += *p == '1';
        assert_int_equal(ones, 9 + 81 + 729 + 6561 + 59049);
        free(c);
}

static void test_uid_same(void **state) {
        ManifestParseOptions o;
        init_opts(&o);
        char *first = uid_of(same_pod[0], &o);
        assert_int_equal(strlen(first), 32);
        for (size_t i = 1; i < sizeof(same_pod) / sizeof(same_pod[0]); i++) {
                char *u = uid_of(same_pod[i], &o);
                if (strcmp(u, first) != 0)
                        fail_msg("form %zu: uid %s != %s", i, u, first);
                free(u);
        }
        /* The UID is the documented hash of the canonical form. */
        char want[33];
        assert_int_equal(manifest_compute_uid(want_canonical, "node1",
                                              "file:/etc/kubernetes/manifests/web.yaml", want),
                         0);
        assert_string_equal(first, want);
        free(first);
}

static void test_uid_changes(void **state) {
        ManifestParseOptions o;
        init_opts(&o);
        char *base = uid_of(same_pod[0], &o);
        static const struct {
                const char *from, *to;
        } edits[] = {
                { "nginx:1.25", "nginx:1.26" },
                { "daemon off;", "daemon on;" },
                { "app: web", "app: web2" },
                { "tier: \"1\"", "tier: \"2\"" },
                { "containerPort: 80", "containerPort: 81" },
        };
        for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
                const char *pos = strstr(same_pod[0], edits[i].from);
                assert_non_null(pos);
                size_t pre = pos - same_pod[0];
                char *t = NULL;
                assert_true(asprintf(&t, "%.*s%s%s", (int)pre, same_pod[0], edits[i].to,
                                     pos + strlen(edits[i].from)) > 0);
                char *u = uid_of(t, &o);
                if (strcmp(u, base) == 0)
                        fail_msg("edit %s -> %s kept the uid", edits[i].from, edits[i].to);
                free(u);
                free(t);
        }

        ManifestParseOptions o2 = o;
        o2.node_name = "node2";
        char *u = uid_of(same_pod[0], &o2);
        assert_string_not_equal(u, base);
        free(u);

        o2 = o;
        o2.source_id = "url:http://example.com/web.yaml";
        u = uid_of(same_pod[0], &o2);
        assert_string_not_equal(u, base);
        free(u);

        /* seen and config_source are not part of the identity */
        o2 = o;
        o2.seen = 1700000000 * USEC_PER_SEC;
        o2.config_source = "http";
        u = uid_of(same_pod[0], &o2);
        assert_string_equal(u, base);
        free(u);
        free(base);
}

static void test_uid_user_given(void **state) {
        ManifestParseOptions o;
        init_opts(&o);
        const char *t = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"
                        "  uid: 11111111-2222-3333-4444-555555555555\n"
                        "spec:\n  containers:\n  - name: c\n    image: busybox\n";
        char *u = uid_of(t, &o);
        assert_string_equal(u, "11111111-2222-3333-4444-555555555555");
        free(u);
}

static void test_compute_uid(void **state) {
        char uid[33];
        /* sha256("{}\nhost:n\nsource:s") */
        assert_int_equal(manifest_compute_uid("{}", "n", "s", uid), 0);
        assert_string_equal(uid, "a4e1b8be7ec4f0eef16e409c734cf7c6");
        char uid2[33];
        assert_int_equal(manifest_compute_uid("{}", "n", "s2", uid2), 0);
        assert_string_not_equal(uid, uid2);
        assert_int_equal(manifest_compute_uid(NULL, "n", "s", uid), -EINVAL);
}

/* jansson's allocator, failing after a number of allocations: the only
 * allocation-failure injection the manifest path has. */
static size_t allocs_left;

static void *failing_malloc(size_t size) {
        if (allocs_left == 0)
                return NULL;
        allocs_left--;
        return malloc(size);
}

static void test_canonical_out_of_memory(void **state) {
        const char *t = "a: x\nb: [e, {c: d}]\n";
        Diagnostics d;
        YamlNode **docs = NULL;
        size_t n = 0, n_enomem = 0;
        char *c = NULL;
        int r = -1;

        diagnostics_init(&d);
        assert_int_equal(yaml_parse_documents(t, strlen(t), "t", NULL, &docs, &n, &d), 0);
        for (size_t k = 0; k < 1000; k++) {
                allocs_left = k;
                json_set_alloc_funcs(failing_malloc, free);
                r = manifest_canonical_json(docs[0], &c);
                json_set_alloc_funcs(malloc, free);
                if (r == 0)
                        break;
                /* running out of memory is never the document's fault */
                assert_int_equal(r, -ENOMEM);
                n_enomem++;
        }
        assert_int_equal(r, 0);
        assert_true(n_enomem > 0);
        assert_string_equal(c, "{\"a\":\"x\",\"b\":[\"e\",{\"c\":\"d\"}]}");
        free(c);
        yaml_documents_free(docs, n);
        diagnostics_deinit(&d);

        /* text that is not UTF-8 is (a parser cannot produce it, but a
         * tree built otherwise can) */
        YamlNode bad = { .type = YAML_NODE_STRING, .str = (char *)"\xff", .str_len = 1 };
        assert_int_equal(manifest_canonical_json(&bad, &c), -EINVAL);
}

static void test_parse_out_of_memory(void **state) {
        ManifestParseOptions o;
        size_t n_enomem = 0;
        int r = -1;

        init_opts(&o);
        for (size_t k = 0; k < 1000; k++) {
                Diagnostics d;
                ManifestObject **objs = NULL;
                size_t n = 0;

                diagnostics_init(&d);
                allocs_left = k;
                json_set_alloc_funcs(failing_malloc, free);
                r = manifest_parse_buffer(same_pod[0], strlen(same_pod[0]), &o, &objs, &n, &d);
                json_set_alloc_funcs(malloc, free);
                if (r == 0) {
                        manifest_objects_free(objs, n);
                        diagnostics_deinit(&d);
                        break;
                }
                /* -ENOMEM as such, not a diagnostic saying "Invalid argument" */
                assert_int_equal(r, -ENOMEM);
                assert_int_equal(d.n_errors, 0);
                n_enomem++;
                diagnostics_deinit(&d);
        }
        assert_int_equal(r, 0);
        assert_true(n_enomem > 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_canonical_same),
                cmocka_unit_test(test_canonical_values),
                cmocka_unit_test(test_canonical_shared_nodes),
                cmocka_unit_test(test_uid_same),
                cmocka_unit_test(test_uid_changes),
                cmocka_unit_test(test_uid_user_given),
                cmocka_unit_test(test_compute_uid),
                cmocka_unit_test(test_canonical_out_of_memory),
                cmocka_unit_test(test_parse_out_of_memory),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
