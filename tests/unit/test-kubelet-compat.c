/* kubelet_compat_check(): kubeadm's own static pods are what kubelet runs
 * unchanged, so they must show no difference; each rule is seen at its
 * line and field path; odd shapes never crash it. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "diag.h"
#include "fileio.h"
#include "kubelet-compat.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests"
#endif

static const char *data_dir(void) {
        const char *d = getenv("TEST_DATA_DIR");
        return d && *d ? d : TEST_DATA_DIR;
}

static int check(const char *yaml, KubeletSourceKind source, Diagnostics *d) {
        diagnostics_init(d);
        return kubelet_compat_check(yaml, strlen(yaml), "m.yaml", source, d);
}

/* The item at path, or NULL. */
static const Diag *find(const Diagnostics *d, const char *path) {
        for (size_t i = 0; i < d->n; i++)
                if (d->items[i].path && strcmp(d->items[i].path, path) == 0)
                        return &d->items[i];
        return NULL;
}

static void assert_at(const Diagnostics *d, const char *path, unsigned line, const char *words) {
        const Diag *item = find(d, path);
        if (!item)
                fail_msg("no difference reported at %s", path);
        assert_int_equal(item->line, line);
        assert_int_equal(item->level, DIAG_WARNING);
        assert_non_null(strstr(item->message, "kubelet: "));
        assert_non_null(strstr(item->message, words));
}

static void test_kubeadm_static_pods_show_nothing(void **state) {
        (void)state;
        static const char *const names[] = { "etcd", "kube-apiserver", "kube-controller-manager",
                                             "kube-scheduler" };
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                _cleanup_free_ char *path = NULL, *buf = NULL;
                _cleanup_diagnostics_ Diagnostics d;
                size_t size;
                assert_true(asprintf(&path, "%s/manifests/valid/%s.yaml", data_dir(), names[i]) >
                            0);
                assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &buf, &size), 0);
                diagnostics_init(&d);
                int r = kubelet_compat_check(buf, size, path, KUBELET_SOURCE_FILE, &d);
                if (r != 0)
                        fail_msg("%s: %d differences, first: %s", names[i], r,
                                 d.n ? d.items[0].message : "?");
                assert_int_equal(d.n_warnings + d.n_errors, 0);
        }
}

static void test_references_to_api_objects(void **state) {
        (void)state;
        _cleanup_diagnostics_ Diagnostics d;
        static const char yaml[] = "apiVersion: v1\n"                            /* 1 */
                                   "kind: Pod\n"                                 /* 2 */
                                   "metadata:\n"                                 /* 3 */
                                   "  name: p\n"                                 /* 4 */
                                   "  annotations:\n"                            /* 5 */
                                   "    nanolet.io/wait-for: db\n"               /* 6 */
                                   "    example.com/other: x\n"                  /* 7 */
                                   "spec:\n"                                     /* 8 */
                                   "  serviceAccountName: builder\n"             /* 9 */
                                   "  imagePullSecrets: [{name: reg}]\n"         /* 10 */
                                   "  containers:\n"                             /* 11 */
                                   "  - name: c\n"                               /* 12 */
                                   "    image: busybox\n"                        /* 13 */
                                   "    env:\n"                                  /* 14 */
                                   "    - name: A\n"                             /* 15 */
                                   "      value: plain\n"                        /* 16 */
                                   "    - name: B\n"                             /* 17 */
                                   "      valueFrom:\n"                          /* 18 */
                                   "        secretKeyRef: {name: s, key: k}\n"   /* 19 */
                                   "    envFrom:\n"                              /* 20 */
                                   "    - configMapRef: {name: cm}\n"            /* 21 */
                                   "  volumes:\n"                                /* 22 */
                                   "  - name: a\n"                               /* 23 */
                                   "    persistentVolumeClaim: {claimName: c}\n" /* 24 */
                                   "  - name: b\n"                               /* 25 */
                                   "    projected:\n"                            /* 26 */
                                   "      sources:\n"                            /* 27 */
                                   "      - downwardAPI: {items: []}\n"          /* 28 */
                                   "      - serviceAccountToken: {path: t}\n"    /* 29 */
                                   "  - name: c\n"                               /* 30 */
                                   "    hostPath: {path: /srv}\n";               /* 31 */

        assert_int_equal(check(yaml, KUBELET_SOURCE_FILE, &d), 7);
        assert_at(&d, "metadata.annotations[nanolet.io/wait-for]", 6, "without waiting");
        assert_null(find(&d, "metadata.annotations[example.com/other]"));
        assert_at(&d, "spec.serviceAccountName", 9, "service account");
        assert_at(&d, "spec.imagePullSecrets", 10, "pull secrets");
        assert_null(find(&d, "spec.containers[0].env[0].valueFrom.secretKeyRef"));
        assert_at(&d, "spec.containers[0].env[1].valueFrom.secretKeyRef", 19, "Secret");
        assert_at(&d, "spec.containers[0].envFrom[0].configMapRef", 21, "ConfigMap");
        assert_at(&d, "spec.volumes[0].persistentVolumeClaim", 24, "PersistentVolumeClaim");
        assert_at(&d, "spec.volumes[1].projected.sources[1].serviceAccountToken", 29, "token");
        /* in the file's order */
        for (size_t i = 1; i < d.n; i++)
                assert_true(d.items[i - 1].line <= d.items[i].line);
}

static void test_priority(void **state) {
        (void)state;
        _cleanup_diagnostics_ Diagnostics d;

        /* kubeadm writes both, and they agree */
        assert_int_equal(check("kind: Pod\nspec:\n  priorityClassName: system-node-critical\n"
                               "  priority: 2000001000\n",
                               KUBELET_SOURCE_FILE, &d),
                         0);
        diagnostics_deinit(&d);
        /* a system priority by hand, without its class */
        assert_int_equal(
                check("kind: Pod\nspec:\n  priority: 2000000000\n", KUBELET_SOURCE_FILE, &d), 1);
        assert_at(&d, "spec.priority", 3, "priority admission");
        diagnostics_deinit(&d);
        assert_int_equal(check("kind: Pod\nspec:\n  priorityClassName: system-cluster-critical\n"
                               "  priority: 2000001000\n",
                               KUBELET_SOURCE_FILE, &d),
                         1);
        assert_at(&d, "spec.priority", 4, "gives 2000000000");
        diagnostics_deinit(&d);
        assert_int_equal(
                check("kind: Pod\nspec:\n  priorityClassName: gold\n", KUBELET_SOURCE_FILE, &d), 1);
        assert_at(&d, "spec.priorityClassName", 3, "\"gold\" must exist");
}

static void test_documents_file_and_url(void **state) {
        (void)state;
        _cleanup_diagnostics_ Diagnostics d;
        static const char two[] = "kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\n"
                                  "metadata: {name: b}\n---\nkind: ConfigMap\n";
        static const char podlist[] =
                "kind: PodList\nitems:\n- kind: Pod\n  metadata:\n"
                "    annotations: {nanolet.io/wait-for: x, nanolet.io/other: y}\n";
        static const char list[] = "kind: List\nitems:\n- kind: Secret\n- kind: Pod\n";

        assert_int_equal(check(two, KUBELET_SOURCE_FILE, &d), 2);
        assert_int_equal(d.items[0].line, 4);
        assert_non_null(strstr(d.items[0].message, "first YAML document of a file"));
        assert_non_null(strstr(d.items[0].message, "2 documents are not read"));
        assert_int_equal(d.items[1].line, 7);
        assert_non_null(strstr(d.items[1].message, "ConfigMap documents"));
        diagnostics_deinit(&d);

        /* a PodList is fine from a URL, not from the directory */
        assert_int_equal(check(podlist, KUBELET_SOURCE_URL, &d), 1);
        assert_at(&d, "items[0].metadata.annotations[nanolet.io/wait-for]", 5, "start-order");
        diagnostics_deinit(&d);
        assert_int_equal(check(podlist, KUBELET_SOURCE_FILE, &d), 2);
        assert_non_null(strstr(d.items[0].message, "one Pod per file"));
        diagnostics_deinit(&d);
        assert_int_equal(check(list, KUBELET_SOURCE_URL, &d), 2);
        assert_non_null(strstr(d.items[0].message, "a List is an error"));
        assert_at(&d, "items[0]", 3, "only Pods from a PodList");
}

static void test_odd_shapes(void **state) {
        (void)state;
        _cleanup_diagnostics_ Diagnostics d;
        static const char *const inputs[] = {
                "kind: Pod\nspec: []\n",
                "kind: Pod\nmetadata: {annotations: [nanolet.io/wait-for]}\nspec: {volumes: x}\n",
                ("kind: Pod\nspec:\n  volumes: [null, 3, {projected: {sources: [null, {}]}}]\n"
                 "  containers: [{env: [null, {valueFrom: 7}]}, {envFrom: {}}]\n"),
                "kind: [Pod]\n",
                "kind: List\nitems: {a: b}\n",
                "- kind: Pod\n",
                "",
                "kind: Pod\nspec: {priority: 5, priorityClassName: [x]}\n",
        };
        for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++) {
                int r = check(inputs[i], KUBELET_SOURCE_FILE, &d);
                assert_true(r >= 0);
                diagnostics_deinit(&d);
        }
        /* not YAML: the parser reports it, the check only says so */
        assert_int_equal(check("a: [\n", KUBELET_SOURCE_FILE, &d), -EINVAL);
        assert_int_equal(d.n, 0);
}

static void test_hostile_text_is_escaped_when_printed(void **state) {
        (void)state;
        _cleanup_diagnostics_ Diagnostics d;
        /* a class name is quoted in the message: printing escapes it */
        assert_int_equal(check("kind: Pod\nmetadata:\n  annotations:\n"
                               "    \"x\\e[2J\": b\n"
                               "spec:\n  priorityClassName: \"gold\\e[2J\\r\\nfake: line\"\n",
                               KUBELET_SOURCE_FILE, &d),
                         1);
        assert_non_null(strstr(d.items[0].message, "gold\033[2J\r\nfake"));
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        assert_non_null(f);
        diagnostics_print(&d, f);
        fclose(f);
        assert_null(strchr(buf, '\033'));
        assert_null(strchr(buf, '\r'));
        assert_int_equal(strchr(buf, '\n') - buf, (ptrdiff_t)strlen(buf) - 1); /* one line */
        free(buf);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kubeadm_static_pods_show_nothing),
                cmocka_unit_test(test_references_to_api_objects),
                cmocka_unit_test(test_priority),
                cmocka_unit_test(test_documents_file_and_url),
                cmocka_unit_test(test_odd_shapes),
                cmocka_unit_test(test_hostile_text_is_escaped_when_printed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
