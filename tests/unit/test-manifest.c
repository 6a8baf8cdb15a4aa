/* manifest_parse_buffer: kinds, lists, identity annotations and the
 * all-or-nothing rule. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "manifest.h"

#define POD(name)                                                                                  \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n"                                 \
        "spec:\n  containers:\n  - name: c\n    image: busybox\n"

typedef struct Result {
        ManifestObject **objs;
        size_t n;
        Diagnostics diag;
        int r;
} Result;

static void init_opts(ManifestParseOptions *o) {
        *o = (ManifestParseOptions){
                .filename = "m.yaml",
                .node_name = "node1",
                .source_id = "file:/etc/kubernetes/manifests/m.yaml",
                .config_source = "file",
        };
}

static void run_opts(Result *res, const char *text, const ManifestParseOptions *o) {
        *res = (Result){};
        diagnostics_init(&res->diag);
        res->r = manifest_parse_buffer(text, strlen(text), o, &res->objs, &res->n, &res->diag);
}

static void run(Result *res, const char *text) {
        ManifestParseOptions o;
        init_opts(&o);
        run_opts(res, text, &o);
}

static void result_done(Result *res) {
        if (res->r >= 0)
                manifest_objects_free(res->objs, res->n);
        diagnostics_deinit(&res->diag);
}

/* True if some error diagnostic, as printed, contains sub. */
static bool has_error(const Result *res, const char *sub) {
        for (size_t i = 0; i < res->diag.n; i++) {
                if (res->diag.items[i].level != DIAG_ERROR)
                        continue;
                char *s = diag_to_string(&res->diag.items[i]);
                bool ok = s && strstr(s, sub);
                free(s);
                if (ok)
                        return true;
        }
        return false;
}

static void expect_error(const char *text, const char *sub) {
        Result res;
        run(&res, text);
        assert_int_equal(res.r, -EINVAL);
        if (!has_error(&res, sub)) {
                diagnostics_print(&res.diag, stderr);
                fail_msg("no error containing \"%s\"", sub);
        }
        result_done(&res);
}

static const char *annotation(const Pod *p, const char *key) {
        const KeyValue *kv = string_map_get(&p->metadata.annotations, key);
        return kv ? kv->value : NULL;
}

static void test_pod(void **state) {
        ManifestParseOptions o;
        Result res;

        init_opts(&o);
        o.seen = 1714557600ULL * USEC_PER_SEC + 123400; /* 2024-05-01T10:00:00.1234Z */
        run_opts(&res, "# comment\n" POD("web"), &o);
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 1);
        ManifestObject *obj = res.objs[0];
        assert_int_equal(obj->kind, MANIFEST_KIND_POD);
        assert_int_equal(obj->refs, 1);
        assert_string_equal(obj->name, "web-node1");
        assert_string_equal(obj->namespace, "default");
        assert_string_equal(obj->file, "m.yaml");
        assert_int_equal(obj->line, 2);
        assert_int_equal(strlen(obj->uid), 32);
        assert_string_equal(pod_get_name(obj->pod), "web-node1");
        assert_string_equal(pod_get_namespace(obj->pod), "default");
        assert_string_equal(pod_get_uid(obj->pod), obj->uid);
        assert_string_equal(annotation(obj->pod, "kubernetes.io/config.hash"), obj->uid);
        assert_string_equal(annotation(obj->pod, "kubernetes.io/config.source"), "file");
        assert_string_equal(annotation(obj->pod, "kubernetes.io/config.seen"),
                            "2024-05-01T10:00:00.1234Z");
        assert_string_equal(obj->canonical_json,
                            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                            "\"web\"},\"spec\":{\"containers\":[{\"image\":\"busybox\",\"name\":"
                            "\"c\"}]}}");
        char want[33];
        assert_int_equal(manifest_compute_uid(obj->canonical_json, "node1",
                                              "file:/etc/kubernetes/manifests/m.yaml", want),
                         0);
        assert_string_equal(obj->uid, want);

        /* refcounting */
        assert_ptr_equal(manifest_object_ref(obj), obj);
        assert_int_equal(obj->refs, 2);
        assert_null(manifest_object_unref(obj));
        assert_int_equal(obj->refs, 1);
        result_done(&res);

        /* whole seconds: no fraction; seen == 0: no annotation */
        o.seen = 1714557600ULL * USEC_PER_SEC;
        run_opts(&res, POD("web"), &o);
        assert_int_equal(res.r, 0);
        assert_string_equal(annotation(res.objs[0]->pod, "kubernetes.io/config.seen"),
                            "2024-05-01T10:00:00Z");
        result_done(&res);
        o.seen = 0;
        run_opts(&res, POD("web"), &o);
        assert_int_equal(res.r, 0);
        assert_null(annotation(res.objs[0]->pod, "kubernetes.io/config.seen"));
        result_done(&res);

        /* namespace given */
        run(&res, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  namespace: kube-system\n"
                  "spec:\n  containers:\n  - name: c\n    image: busybox\n");
        assert_int_equal(res.r, 0);
        assert_string_equal(res.objs[0]->namespace, "kube-system");
        assert_string_equal(res.objs[0]->name, "a-node1");
        result_done(&res);
}

static void test_configmap_secret(void **state) {
        Result res;
        run(&res, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n"
                  "---\n"
                  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: sec\n  namespace: ns\n"
                  "data:\n  k: dmFsdWU=\n"
                  "---\n" POD("web"));
        if (res.r < 0)
                diagnostics_print(&res.diag, stderr);
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 3);
        assert_int_equal(res.objs[0]->kind, MANIFEST_KIND_CONFIGMAP);
        assert_string_equal(res.objs[0]->name, "cfg"); /* no node suffix */
        assert_string_equal(res.objs[0]->namespace, "default");
        assert_int_equal(strlen(res.objs[0]->uid), 32);
        assert_int_equal(res.objs[1]->kind, MANIFEST_KIND_SECRET);
        assert_string_equal(res.objs[1]->name, "sec");
        assert_string_equal(res.objs[1]->namespace, "ns");
        assert_int_equal(res.objs[1]->line, 8);
        assert_int_equal(res.objs[2]->kind, MANIFEST_KIND_POD);
        assert_string_equal(manifest_kind_to_string(res.objs[1]->kind), "Secret");
        char *cm_uid = strdup(res.objs[0]->uid);
        result_done(&res);

        /* the ConfigMap's uid follows its content */
        run(&res, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v2\n");
        assert_int_equal(res.r, 0);
        assert_string_not_equal(res.objs[0]->uid, cm_uid);
        result_done(&res);
        run(&res, "{kind: ConfigMap, apiVersion: v1, data: {k: v}, metadata: {name: cfg}}");
        assert_int_equal(res.r, 0);
        assert_string_equal(res.objs[0]->uid, cm_uid);
        result_done(&res);
        free(cm_uid);
}

static void test_lists(void **state) {
        Result res;
        run(&res, "apiVersion: v1\nkind: PodList\nitems:\n"
                  "- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n"
                  "  spec: {containers: [{name: c, image: busybox}]}\n"
                  "- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n"
                  "  spec: {containers: [{name: c, image: busybox}]}\n");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 2);
        assert_string_equal(res.objs[0]->name, "a-node1");
        assert_string_equal(res.objs[1]->name, "b-node1");
        assert_int_equal(res.objs[1]->line, 8);
        /* each item's identity is the item alone */
        assert_string_equal(res.objs[0]->canonical_json,
                            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                            "\"a\"},\"spec\":{\"containers\":[{\"image\":\"busybox\",\"name\":"
                            "\"c\"}]}}");
        char *uid_in_list = strdup(res.objs[0]->uid);
        result_done(&res);

        run(&res, "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"
                  "spec: {containers: [{name: c, image: busybox}]}\n");
        assert_int_equal(res.r, 0);
        assert_string_equal(res.objs[0]->uid, uid_in_list);
        result_done(&res);
        free(uid_in_list);

        run(&res, "apiVersion: v1\nkind: List\nitems:\n"
                  "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n"
                  "- "
                  "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: "
                  "[{name: c, image: busybox}]}}\n");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 2);
        assert_int_equal(res.objs[0]->kind, MANIFEST_KIND_CONFIGMAP);
        result_done(&res);

        /* an empty PodList is a valid, empty set */
        run(&res, "apiVersion: v1\nkind: PodList\nitems: []\n");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 0);
        result_done(&res);

        /* errors inside items carry the item path */
        expect_error("apiVersion: v1\nkind: PodList\nitems:\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: "
                     "[{name: c, image: busybox}]}}\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: b}, spec: {containers: "
                     "[{name: c, image: busybox}]}}\n"
                     "- {apiVersion: apps/v1, kind: Deployment}\n",
                     "m.yaml:6: items[2].kind: kind \"Deployment\" is not supported");
        expect_error("apiVersion: v1\nkind: PodList\nitems:\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: "
                     "[{name: c}]}}\n",
                     "m.yaml:4: items[0].spec.containers[0]");
        expect_error("apiVersion: v1\nkind: PodList\nitems: {a: 1}\n",
                     "m.yaml:3: items: must be a list, not a map");
        expect_error("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: List}\n",
                     "items[0].kind: a List cannot be an item of a list");
}

static void test_unsupported(void **state) {
        expect_error("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n",
                     "m.yaml:2: kind: kind \"Deployment\" is not supported: nanolet runs static "
                     "Pods only; put the Deployment's pod template in a Pod manifest");
        expect_error("apiVersion: apps/v1\nkind: DaemonSet\n",
                     "put the DaemonSet's pod template in a Pod manifest");
        expect_error("apiVersion: batch/v1\nkind: Job\n", "kind \"Job\" is not supported");
        expect_error("apiVersion: v1\nkind: Service\n",
                     "kind \"Service\" is not supported: nanolet runs static Pods only");
        expect_error("apiVersion: v2\nkind: Pod\nmetadata: {name: x}\n",
                     "m.yaml:1: apiVersion: apiVersion \"v2\" is not valid for kind \"Pod\" "
                     "(expected \"v1\")");
        expect_error("apiVersion: apps/v1\nkind: ConfigMap\n", "apiVersion \"apps/v1\"");
        expect_error("kind: Pod\nmetadata: {name: x}\n", "m.yaml:1: apiVersion: is missing");
        expect_error("apiVersion: v1\nmetadata: {name: x}\n", "m.yaml:1: kind: is missing");
        expect_error("apiVersion: v1\nkind: 5\n", "m.yaml:2: kind: must be a non-empty string");
        expect_error("- a\n- b\n", "a manifest must be a map with apiVersion and kind, not a list");
        expect_error("just a string\n", "not a string");
}

static void test_all_or_nothing(void **state) {
        Result res;
        /* one bad document: nothing is returned, every problem is reported */
        run(&res, POD("good") "---\napiVersion: apps/v1\nkind: Deployment\n"
                              "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\n"
                              "spec:\n  containers:\n  - name: c\n"
                              "---\napiVersion: v1\nkind: Service\n");
        assert_int_equal(res.r, -EINVAL);
        assert_null(res.objs);
        assert_int_equal(res.n, 0);
        assert_true(res.diag.n_errors >= 4);
        assert_true(has_error(&res, "m.yaml:11: kind: kind \"Deployment\""));
        assert_true(has_error(&res, "metadata.name"));
        assert_true(has_error(&res, "spec.containers[0].image"));
        assert_true(has_error(&res, "m.yaml:22: kind: kind \"Service\""));
        result_done(&res);

        /* a YAML error anywhere: nothing */
        run(&res, POD("good") "---\na: [\n");
        assert_int_equal(res.r, -EINVAL);
        assert_int_equal(res.n, 0);
        assert_true(has_error(&res, "m.yaml:"));
        result_done(&res);

        /* limits are errors too (returned as -EINVAL) */
        ManifestParseOptions o;
        init_opts(&o);
        o.limits.max_input = 16;
        run_opts(&res, POD("good"), &o);
        assert_int_equal(res.r, -EINVAL);
        assert_true(has_error(&res, "more than the limit of 16 bytes"));
        result_done(&res);

        /* no document: zero objects, success */
        run(&res, "# nothing here\n");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 0);
        result_done(&res);

        /* bad arguments */
        Diagnostics d;
        ManifestObject **objs;
        size_t n;
        diagnostics_init(&d);
        init_opts(&o);
        o.node_name = NULL;
        assert_int_equal(manifest_parse_buffer("", 0, &o, &objs, &n, &d), -EINVAL);
        assert_int_equal(manifest_parse_buffer("", 0, NULL, &objs, &n, &d), -EINVAL);
        diagnostics_deinit(&d);
}

/* The count a source needs to tell an empty List from a file being written. */
static void test_document_count(void **state) {
        static const struct {
                const char *text;
                size_t n_objs, n_docs;
        } cases[] = {
                { "", 0, 0 },
                { "# only a comment\n", 0, 0 },
                { "apiVersion: v1\nkind: List\nitems: []\n", 0, 1 },
                { "---\napiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\n"
                  "items: []\n",
                  0, 2 },
                { "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n"
                  "  - name: c\n    image: busybox\n",
                  1, 1 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                ManifestParseOptions o;
                Diagnostics d;
                ManifestObject **objs = NULL;
                size_t n = 99, n_docs = 99;
                init_opts(&o);
                diagnostics_init(&d);
                assert_int_equal(manifest_parse_buffer_full(cases[i].text, strlen(cases[i].text),
                                                            &o, &objs, &n, &n_docs, &d),
                                 0);
                assert_int_equal(n, cases[i].n_objs);
                assert_int_equal(n_docs, cases[i].n_docs);
                manifest_objects_free(objs, n);
                diagnostics_deinit(&d);
        }
}

static void test_warnings_kept(void **state) {
        Result res;
        run(&res, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n"
                  "spec:\n  unknownField: 1\n  containers:\n  - name: c\n    image: busybox\n");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 1);
        assert_true(res.diag.n_warnings >= 1);
        assert_int_equal(res.diag.n_errors, 0);
        result_done(&res);
}

static void test_duplicates(void **state) {
        expect_error(POD("web") "---\n" POD("web"),
                     "m.yaml:10: Pod \"default/web-node1\" is defined twice in this input "
                     "(first at line 1)");
        expect_error("apiVersion: v1\nkind: PodList\nitems:\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: "
                     "[{name: c, image: busybox}]}}\n"
                     "- {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {containers: "
                     "[{name: d, image: busybox}]}}\n",
                     "m.yaml:5: items[1]: Pod \"default/a-node1\" is defined twice in this "
                     "input (first at line 4)");
        expect_error("{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n---\n"
                     "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n",
                     "m.yaml:3: ConfigMap \"default/c\" is defined twice");

        /* same name, other kind or namespace: fine */
        Result res;
        run(&res, "{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n---\n"
                  "{apiVersion: v1, kind: Secret, metadata: {name: c}}\n---\n"
                  "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: x}}\n");
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 3);
        result_done(&res);
}

static void test_duplicate_uid(void **state) {
        Result res;
        run(&res, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  uid: u-1\n"
                  "spec:\n  containers:\n  - name: c\n    image: busybox\n"
                  "---\n"
                  "apiVersion: v1\nkind: List\nitems:\n"
                  "- apiVersion: v1\n  kind: Pod\n  metadata: {name: b, uid: u-1}\n"
                  "  spec: {containers: [{name: c, image: busybox}]}\n");
        assert_int_equal(res.r, -EINVAL);
        assert_int_equal(res.diag.n_errors, 1);
        char *s = diag_to_string(&res.diag.items[0]);
        assert_string_equal(s, "m.yaml:16: items[0].metadata.uid: pod \"default/b-node1\" has the "
                               "same uid \"u-1\" as pod \"default/a-node1\" (line 5)");
        free(s);
        result_done(&res);

        /* computed UIDs differ: same content under two names is fine */
        run(&res, POD("a") "---\n" POD("b"));
        assert_int_equal(res.r, 0);
        assert_int_equal(res.n, 2);
        result_done(&res);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod),
                cmocka_unit_test(test_configmap_secret),
                cmocka_unit_test(test_lists),
                cmocka_unit_test(test_unsupported),
                cmocka_unit_test(test_all_or_nothing),
                cmocka_unit_test(test_warnings_kept),
                cmocka_unit_test(test_document_count),
                cmocka_unit_test(test_duplicates),
                cmocka_unit_test(test_duplicate_uid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
