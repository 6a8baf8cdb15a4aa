/* Real-world manifests through the whole manifest pipeline.
 *
 * tests/manifests/valid/: kubeadm's control-plane static pods exactly as
 * kubeadm writes them, and the Pod examples of the Kubernetes documentation.
 * Each must parse with no error into at least one object.
 *
 * tests/manifests/invalid/: one problem (or several) per file; each must be
 * rejected, and the printed diagnostics must contain every line of the
 * file's ".expect" companion (typically "file:line: field.path").
 *
 * Failures print the diagnostics, and every file is checked before the test
 * fails, so one run lists every wrongly accepted or rejected manifest. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cleanup.h"
#include "diag.h"
#include "fileio.h"
#include "manifest.h"
#include "pod.h"

#ifndef TEST_DATA_DIR
#define TEST_DATA_DIR "tests"
#endif

#define NODE_NAME "node1"
#define MAX_FILE (16u * 1024u * 1024u)

static const char *data_dir(void) {
        const char *d = getenv("TEST_DATA_DIR");
        return d && *d ? d : TEST_DATA_DIR;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int manifest_filter(const struct dirent *de) {
        return has_suffix(de->d_name, ".yaml") || has_suffix(de->d_name, ".yml") ||
               has_suffix(de->d_name, ".json");
}

/* Sorted manifest file names of data_dir()/sub. */
static int list_manifests(const char *sub, struct dirent ***ret) {
        char dir[4096];
        int n;

        snprintf(dir, sizeof dir, "%s/manifests/%s", data_dir(), sub);
        n = scandir(dir, ret, manifest_filter, alphasort);
        if (n < 0)
                fprintf(stderr, "cannot list %s: %s\n", dir, strerror(errno));
        return n;
}

static void free_list(struct dirent **l, int n) {
        for (int i = 0; i < n; i++)
                free(l[i]);
        free(l);
}

typedef struct Parsed {
        char *path;
        char *source_id;
        char *buf;
        size_t size;
        ManifestObject **objs;
        size_t n;
        Diagnostics diag;
        int r;
} Parsed;

static void parsed_done(Parsed *p) {
        manifest_objects_free(p->objs, p->n);
        diagnostics_deinit(&p->diag);
        free(p->buf);
        free(p->source_id);
        free(p->path);
        *p = (Parsed){};
}

static int parse_buffer_as(Parsed *p, const char *path, const char *buf, size_t size) {
        ManifestParseOptions opts = {
                .filename = path,
                .node_name = NODE_NAME,
                .source_id = p->source_id,
                .config_source = "file",
        };

        diagnostics_init(&p->diag);
        p->objs = NULL;
        p->n = 0;
        p->r = manifest_parse_buffer(buf, size, &opts, &p->objs, &p->n, &p->diag);
        return p->r;
}

/* Reads and parses data_dir()/manifests/sub/name. Returns -errno when the
 * file cannot be read (a test bug, not a parser result). */
static int parse_file(const char *sub, const char *name, Parsed *ret) {
        Parsed p = {};
        int r;

        if (asprintf(&p.path, "%s/manifests/%s/%s", data_dir(), sub, name) < 0)
                return -ENOMEM;
        if (asprintf(&p.source_id, "file:%s", p.path) < 0) {
                free(p.path);
                return -ENOMEM;
        }
        r = read_full_file_at(AT_FDCWD, p.path, MAX_FILE, &p.buf, &p.size);
        if (r < 0) {
                fprintf(stderr, "cannot read %s: %s\n", p.path, strerror(-r));
                parsed_done(&p);
                return r;
        }
        (void)parse_buffer_as(&p, p.path, p.buf, p.size);
        *ret = p;
        return 0;
}

/* All diagnostics as "file:line: path: message" lines. */
static char *diagnostics_to_text(const Diagnostics *d) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return NULL;
        diagnostics_print(d, f);
        fclose(f);
        return text;
}

static void print_diagnostics(const char *what, const Parsed *p) {
        _cleanup_free_ char *text = diagnostics_to_text(&p->diag);

        fprintf(stderr, "---- %s: %s (r=%d, %zu objects, %zu errors, %zu warnings)\n%s", what,
                p->path, p->r, p->n, p->diag.n_errors, p->diag.n_warnings,
                text && *text ? text : "(no diagnostics)\n");
}

static bool is_hex(const char *s, size_t n) {
        if (!s || strlen(s) != n)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("0123456789abcdef", s[i]))
                        return false;
        return true;
}

/* Checks every object of a valid file; returns the number of problems. */
static unsigned check_objects(const Parsed *p) {
        unsigned bad = 0;

        for (size_t i = 0; i < p->n; i++) {
                const ManifestObject *o = p->objs[i];

                if (!o->name || !*o->name || !o->namespace || !*o->namespace) {
                        fprintf(stderr, "%s: object %zu has no name or namespace\n", p->path, i);
                        bad++;
                        continue;
                }
                if (!o->canonical_json || !o->uid || !*o->uid) {
                        fprintf(stderr, "%s: %s has no canonical form or UID\n", p->path, o->name);
                        bad++;
                        continue;
                }
                if (o->kind != MANIFEST_KIND_POD)
                        continue;

                /* Static pod naming: <metadata.name>-<node>. */
                if (!has_suffix(o->name, "-" NODE_NAME)) {
                        fprintf(stderr, "%s: pod name \"%s\" lacks the node suffix\n", p->path,
                                o->name);
                        bad++;
                }
                if (!pod_get_uid(o->pod) && !is_hex(o->uid, 32)) {
                        fprintf(stderr, "%s: pod %s: UID \"%s\" is not 32 hex digits\n", p->path,
                                o->name, o->uid);
                        bad++;
                }

                const KeyValue *hash =
                        string_map_get(&o->pod->metadata.annotations, "kubernetes.io/config.hash");
                const KeyValue *source = string_map_get(&o->pod->metadata.annotations,
                                                        "kubernetes.io/config.source");
                if (!hash || strcmp(hash->value, o->uid) != 0) {
                        fprintf(stderr, "%s: pod %s: config.hash annotation is not the UID\n",
                                p->path, o->name);
                        bad++;
                }
                if (!source || strcmp(source->value, "file") != 0) {
                        fprintf(stderr, "%s: pod %s: config.source annotation is not \"file\"\n",
                                p->path, o->name);
                        bad++;
                }
        }
        return bad;
}

/* The canonical JSON of an object is itself a manifest: parsed again with
 * the same source it must give the same canonical form and UID. That is
 * what keeps UIDs stable across reformatting (docs/manifests.md). */
static unsigned check_canonical_fixed_point(const Parsed *p) {
        unsigned bad = 0;

        for (size_t i = 0; i < p->n; i++) {
                const ManifestObject *o = p->objs[i];
                Parsed again = {};

                again.source_id = p->source_id; /* borrowed */
                (void)parse_buffer_as(&again, p->path, o->canonical_json,
                                      strlen(o->canonical_json));
                if (again.r < 0 || again.n != 1) {
                        again.path = p->path;
                        print_diagnostics("canonical JSON does not parse", &again);
                        bad++;
                } else if (strcmp(again.objs[0]->canonical_json, o->canonical_json) != 0 ||
                           strcmp(again.objs[0]->uid, o->uid) != 0) {
                        fprintf(stderr,
                                "%s: %s: canonical form is not a fixed point\n  first:  %s "
                                "%s\n  second: %s %s\n",
                                p->path, o->name, o->uid, o->canonical_json, again.objs[0]->uid,
                                again.objs[0]->canonical_json);
                        bad++;
                }
                manifest_objects_free(again.objs, again.n);
                diagnostics_deinit(&again.diag);
        }
        return bad;
}

static void test_valid_manifests(void **state) {
        struct dirent **list = NULL;
        unsigned failed = 0;
        int n;

        n = list_manifests("valid", &list);
        assert_true(n >= 15);

        for (int i = 0; i < n; i++) {
                Parsed p = {};

                assert_int_equal(parse_file("valid", list[i]->d_name, &p), 0);
                if (p.r < 0 || p.diag.n_errors > 0 || p.n == 0) {
                        print_diagnostics("valid manifest rejected", &p);
                        failed++;
                } else {
                        unsigned bad = check_objects(&p) + check_canonical_fixed_point(&p);
                        if (bad > 0) {
                                print_diagnostics("valid manifest with bad objects", &p);
                                failed++;
                        } else if (p.diag.n_warnings > 0)
                                print_diagnostics("accepted with warnings", &p);
                }
                parsed_done(&p);
        }
        free_list(list, n);

        if (failed > 0)
                fprintf(stderr, "%u of %d valid manifests failed\n", failed, n);
        assert_int_equal(failed, 0);
}

/* Reads the expectation lines of an invalid manifest. */
static char **read_expectations(const char *name, size_t *ret_n) {
        _cleanup_free_ char *path = NULL, *buf = NULL;
        char **lines = NULL;
        size_t size, n = 0;
        char *save = NULL;

        *ret_n = 0;
        if (asprintf(&path, "%s/manifests/invalid/%.*s.expect", data_dir(),
                     (int)(strrchr(name, '.') - name), name) < 0)
                return NULL;
        if (read_full_file_at(AT_FDCWD, path, MAX_FILE, &buf, &size) < 0) {
                fprintf(stderr, "missing expectation file %s\n", path);
                return NULL;
        }
        for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (!*l || *l == '#')
                        continue;
                char **t = realloc(lines, (n + 1) * sizeof(char *));
                assert_non_null(t);
                lines = t;
                lines[n] = strdup(l);
                assert_non_null(lines[n]);
                n++;
        }
        *ret_n = n;
        return lines;
}

static void test_invalid_manifests(void **state) {
        struct dirent **list = NULL;
        unsigned failed = 0;
        int n;

        n = list_manifests("invalid", &list);
        assert_true(n >= 15);

        for (int i = 0; i < n; i++) {
                Parsed p = {};
                struct timespec t0, t1;
                size_t n_expect;
                char **expect;
                bool ok = true;

                /* CPU time, which a loaded machine does not stretch */
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
                assert_int_equal(parse_file("invalid", list[i]->d_name, &p), 0);
                clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);

                expect = read_expectations(list[i]->d_name, &n_expect);
                if (n_expect == 0) {
                        fprintf(stderr, "%s: no expectations\n", p.path);
                        ok = false;
                }

                if (p.r >= 0 || p.diag.n_errors == 0 || p.n != 0) {
                        fprintf(stderr, "%s: accepted, expected a rejection\n", p.path);
                        ok = false;
                }

                _cleanup_free_ char *text = diagnostics_to_text(&p.diag);
                for (size_t j = 0; j < n_expect; j++) {
                        if (!text || !strstr(text, expect[j])) {
                                fprintf(stderr, "%s: diagnostics lack \"%s\"\n", p.path, expect[j]);
                                ok = false;
                        }
                        free(expect[j]);
                }
                free(expect);

                /* Hostile input (billion laughs, deep nesting) must be cheap to
                 * refuse; generous for sanitizer builds. */
                double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
                if (secs > 5.0) {
                        fprintf(stderr, "%s: took %.1f s of CPU to reject\n", p.path, secs);
                        ok = false;
                }

                if (!ok) {
                        print_diagnostics("invalid manifest", &p);
                        failed++;
                }
                parsed_done(&p);
        }
        free_list(list, n);

        if (failed > 0)
                fprintf(stderr, "%u of %d invalid manifests failed\n", failed, n);
        assert_int_equal(failed, 0);
}

/* kubeadm's control plane: names, namespace and the fields that matter for
 * running it (host network, critical priority). */
static void test_kubeadm(void **state) {
        static const struct {
                const char *file, *name;
        } table[] = {
                { "etcd.yaml", "etcd-" NODE_NAME },
                { "kube-apiserver.yaml", "kube-apiserver-" NODE_NAME },
                { "kube-controller-manager.yaml", "kube-controller-manager-" NODE_NAME },
                { "kube-scheduler.yaml", "kube-scheduler-" NODE_NAME },
        };

        for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
                Parsed p = {};

                assert_int_equal(parse_file("valid", table[i].file, &p), 0);
                if (p.r < 0 || p.n != 1)
                        print_diagnostics("kubeadm manifest", &p);
                assert_int_equal(p.r >= 0, 1);
                assert_int_equal(p.n, 1);

                const ManifestObject *o = p.objs[0];
                assert_int_equal(o->kind, MANIFEST_KIND_POD);
                assert_string_equal(o->name, table[i].name);
                assert_string_equal(o->namespace, "kube-system");
                assert_true(is_hex(o->uid, 32));
                assert_true(o->pod->spec.host_network);
                assert_true(o->pod->spec.priority.set);
                assert_int_equal(o->pod->spec.priority.value, 2000001000);
                assert_string_equal(o->pod->spec.priority_class_name, "system-node-critical");
                assert_int_equal(o->pod->spec.n_containers, 1);

                /* The same file read from another path is another pod. */
                Parsed other = {};
                other.source_id = (char *)"file:/elsewhere/manifest.yaml";
                (void)parse_buffer_as(&other, p.path, p.buf, p.size);
                assert_int_equal(other.n, 1);
                assert_string_not_equal(other.objs[0]->uid, o->uid);
                assert_string_equal(other.objs[0]->name, o->name);
                manifest_objects_free(other.objs, other.n);
                diagnostics_deinit(&other.diag);

                /* Parsing twice gives the same UID. */
                Parsed again = {};
                again.source_id = p.source_id;
                (void)parse_buffer_as(&again, p.path, p.buf, p.size);
                assert_int_equal(again.n, 1);
                assert_string_equal(again.objs[0]->uid, o->uid);
                manifest_objects_free(again.objs, again.n);
                diagnostics_deinit(&again.diag);

                parsed_done(&p);
        }
}

/* Kubernetes documentation writes file modes in YAML 1.1 octal
 * ("defaultMode: 0400"); they must mean what Kubernetes makes of them. */
static void test_octal_mode(void **state) {
        Parsed p = {};
        const Volume *v;

        assert_int_equal(parse_file("valid", "secret-volume.yaml", &p), 0);
        if (p.r < 0)
                print_diagnostics("secret-volume.yaml", &p);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.objs[1]->kind, MANIFEST_KIND_POD);
        v = pod_find_volume(p.objs[1]->pod, "secret-volume");
        assert_non_null(v);
        assert_int_equal(v->type, VOLUME_SECRET);
        assert_true(v->secret.default_mode.set);
        assert_int_equal(v->secret.default_mode.value, 0400);
        parsed_done(&p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_manifests),
                cmocka_unit_test(test_invalid_manifests),
                cmocka_unit_test(test_kubeadm),
                cmocka_unit_test(test_octal_mode),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
