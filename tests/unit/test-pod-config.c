/* PodConfig: merge of origins, duplicates, keep-last-good and the event
 * stream. Objects are built by hand so every UID is chosen by the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "source.h"
#include "string-util.h"

typedef struct Rec {
        SourceEventType type;
        char *source, *origin, *uid, *old_uid, *name;
        size_t n_errors;
        size_t n_conflicts;
        char *error0; /* first diagnostic, formatted */
} Rec;

typedef struct Recorder {
        Rec ev[64];
        size_t n;
        PodConfig *config;
        bool found_in_handler; /* the handler sees the new state */
} Recorder;

static char *xstrdup0(const char *s) {
        return s ? strdup(s) : NULL;
}

static void record(const SourceEvent *ev, void *userdata) {
        Recorder *r = userdata;
        assert_true(r->n < ELEMENTSOF(r->ev));
        Rec *x = &r->ev[r->n++];
        *x = (Rec){
                .type = ev->type,
                .source = xstrdup0(ev->source),
                .origin = xstrdup0(ev->origin),
                .uid = xstrdup0(ev->uid),
                .old_uid = xstrdup0(ev->old_uid),
                .name = ev->object ? xstrdup0(ev->object->name) : NULL,
        };
        if (ev->type == SOURCE_EVENT_ERROR) {
                assert_non_null(ev->errors);
                assert_null(ev->object);
                x->n_errors = ev->errors->n_errors;
                x->n_conflicts = ev->n_conflicts;
                assert_true(ev->n_conflicts <= ev->errors->n);
                if (ev->errors->n > 0)
                        x->error0 = diag_to_string(&ev->errors->items[0]);
        } else {
                assert_non_null(ev->object);
                assert_string_equal(ev->object->uid, ev->uid);
                if (ev->type != SOURCE_EVENT_REMOVE && ev->type != SOURCE_EVENT_LOCAL && r->config)
                        r->found_in_handler =
                                pod_config_find(r->config, MANIFEST_KIND_POD, ev->object->namespace,
                                                ev->object->name) == ev->object;
        }
}

static void recorder_clear(Recorder *r) {
        for (size_t i = 0; i < r->n; i++) {
                free(r->ev[i].source);
                free(r->ev[i].origin);
                free(r->ev[i].uid);
                free(r->ev[i].old_uid);
                free(r->ev[i].name);
                free(r->ev[i].error0);
        }
        r->n = 0;
}

static ManifestObject *obj_new(ManifestKind kind, const char *ns, const char *name, const char *uid,
                               const char *file, unsigned line) {
        ManifestObject *o = calloc(1, sizeof *o);
        assert_non_null(o);
        o->refs = 1;
        o->kind = kind;
        o->namespace = strdup(ns);
        o->name = strdup(name);
        o->uid = strdup(uid);
        o->file = strdup(file);
        o->line = line;
        return o;
}

static ManifestObject *pod(const char *name, const char *uid, const char *file) {
        return obj_new(MANIFEST_KIND_POD, "kube-system", name, uid, file, 1);
}

/* Sets origin to the given objects (consumed) in "file". */
static void set(PodConfig *c, const char *origin, size_t n, ...) {
        ManifestObject *objs[16];
        va_list ap;
        va_start(ap, n);
        for (size_t i = 0; i < n; i++)
                objs[i] = va_arg(ap, ManifestObject *);
        va_end(ap);
        assert_int_equal(pod_config_set_origin(c, "file", origin, objs, n), 0);
        for (size_t i = 0; i < n; i++)
                manifest_object_unref(objs[i]);
}

static void set_error(PodConfig *c, const char *origin, const char *msg) {
        Diagnostics d;
        diagnostics_init(&d);
        diagnostics_add(&d, DIAG_ERROR, origin, 3, 1, "spec", "%s", msg);
        assert_int_equal(pod_config_set_origin_error(c, "file", origin, &d), 0);
        diagnostics_deinit(&d);
}

static void expect(const Rec *r, SourceEventType type, const char *origin, const char *uid,
                   const char *old_uid) {
        assert_int_equal(r->type, type);
        assert_string_equal(r->origin, origin);
        if (uid)
                assert_string_equal(r->uid, uid);
        else
                assert_null(r->uid);
        if (old_uid)
                assert_string_equal(r->old_uid, old_uid);
        else
                assert_null(r->old_uid);
}

static void test_add_update_remove(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);
        rec.config = c;

        set(c, "/m/etcd.yaml", 1, pod("etcd-n1", "u1", "/m/etcd.yaml"));
        assert_int_equal(rec.n, 0); /* nothing before the commit */
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/etcd.yaml", "u1", NULL);
        assert_string_equal(rec.ev[0].source, "file");
        assert_string_equal(rec.ev[0].name, "etcd-n1");
        assert_true(rec.found_in_handler);
        recorder_clear(&rec);

        /* same UID: nothing */
        set(c, "/m/etcd.yaml", 1, pod("etcd-n1", "u1", "/m/etcd.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);

        /* content change: one UPDATE */
        set(c, "/m/etcd.yaml", 1, pod("etcd-n1", "u2", "/m/etcd.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        expect(&rec.ev[0], SOURCE_EVENT_UPDATE, "/m/etcd.yaml", "u2", "u1");
        recorder_clear(&rec);

        size_t it = 0;
        ManifestObject *o = pod_config_next_pod(c, &it);
        assert_non_null(o);
        assert_string_equal(o->uid, "u2");
        assert_null(pod_config_next_pod(c, &it));

        assert_int_equal(pod_config_remove_origin(c, "file", "/m/etcd.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        expect(&rec.ev[0], SOURCE_EVENT_REMOVE, "/m/etcd.yaml", "u2", NULL);
        recorder_clear(&rec);
        assert_null(pod_config_find(c, MANIFEST_KIND_POD, "kube-system", "etcd-n1"));

        /* removing an unknown origin is fine and silent */
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/nope.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);

        pod_config_free(c);
}

static void test_event_order(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        set(c, "/m/x.yaml", 3, pod("m", "m1", "/m/x.yaml"), pod("z", "z1", "/m/x.yaml"),
            pod("b", "b1", "/m/x.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 3);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/x.yaml", "b1", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ADD, "/m/x.yaml", "m1", NULL);
        expect(&rec.ev[2], SOURCE_EVENT_ADD, "/m/x.yaml", "z1", NULL);
        recorder_clear(&rec);

        /* z goes, m changes, a comes, b stays: REMOVE, UPDATE, ADD */
        set(c, "/m/x.yaml", 3, pod("a", "a1", "/m/x.yaml"), pod("m", "m2", "/m/x.yaml"),
            pod("b", "b1", "/m/x.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 3);
        expect(&rec.ev[0], SOURCE_EVENT_REMOVE, "/m/x.yaml", "z1", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_UPDATE, "/m/x.yaml", "m2", "m1");
        expect(&rec.ev[2], SOURCE_EVENT_ADD, "/m/x.yaml", "a1", NULL);
        recorder_clear(&rec);

        pod_config_free(c);
}

static void run_duplicate(bool a_first) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        if (a_first) {
                set(c, "/m/a.yaml", 1, pod("etcd-node1", "ua", "/m/a.yaml"));
                set(c, "/m/b.yaml", 1, pod("etcd-node1", "ub", "/m/b.yaml"));
        } else {
                set(c, "/m/b.yaml", 1, pod("etcd-node1", "ub", "/m/b.yaml"));
                set(c, "/m/a.yaml", 1, pod("etcd-node1", "ua", "/m/a.yaml"));
        }
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/a.yaml", "ua", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/b.yaml", NULL, NULL);
        assert_int_equal(rec.ev[1].n_errors, 1);
        assert_int_equal(rec.ev[1].n_conflicts, 1); /* a duplicate, not the file's own error */
        assert_string_equal(rec.ev[1].error0,
                            "/m/b.yaml:1: pod \"kube-system/etcd-node1\" is also defined in "
                            "/m/a.yaml, which wins; this definition is ignored");
        recorder_clear(&rec);

        size_t it = 0;
        const char *origin;
        const Diagnostics *errs;
        assert_true(pod_config_next_error(c, &it, &origin, &errs));
        assert_string_equal(origin, "/m/b.yaml");
        assert_int_equal(errs->n_errors, 1);
        assert_false(pod_config_next_error(c, &it, &origin, &errs));

        /* nothing changed: the duplicate error is not repeated */
        set(c, "/m/b.yaml", 1, pod("etcd-node1", "ub", "/m/b.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);

        /* the winner goes: the other definition takes over, its error clears */
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/a.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_UPDATE, "/m/b.yaml", "ub", "ua");
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/b.yaml", NULL, NULL);
        assert_int_equal(rec.ev[1].n_errors, 0);
        recorder_clear(&rec);
        it = 0;
        assert_false(pod_config_next_error(c, &it, NULL, NULL));

        pod_config_free(c);
}

static void test_duplicate_a_first(void **state) {
        run_duplicate(true);
}

static void test_duplicate_b_first(void **state) {
        run_duplicate(false);
}

/* Two pods (different names) with the same metadata.uid: the pod layer and
 * the runtime key everything by uid, so the second in origin order is
 * refused like a duplicate name, with an error naming both files. */
static void run_duplicate_uid(bool a_first) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        if (a_first) {
                set(c, "/m/a.yaml", 1, pod("zeta", "same", "/m/a.yaml"));
                set(c, "/m/b.yaml", 1, pod("alpha", "same", "/m/b.yaml"));
        } else {
                set(c, "/m/b.yaml", 1, pod("alpha", "same", "/m/b.yaml"));
                set(c, "/m/a.yaml", 1, pod("zeta", "same", "/m/a.yaml"));
        }
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/a.yaml", "same", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/b.yaml", NULL, NULL);
        assert_int_equal(rec.ev[1].n_errors, 1);
        assert_string_equal(rec.ev[1].error0,
                            "/m/b.yaml:1: pod \"kube-system/alpha\" has metadata.uid \"same\", "
                            "which pod \"kube-system/zeta\" in /m/a.yaml already has; this pod "
                            "is ignored");
        recorder_clear(&rec);

        /* the first goes: the other one runs, its error clears */
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/a.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 3);
        expect(&rec.ev[0], SOURCE_EVENT_REMOVE, "/m/a.yaml", "same", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ADD, "/m/b.yaml", "same", NULL);
        expect(&rec.ev[2], SOURCE_EVENT_ERROR, "/m/b.yaml", NULL, NULL);
        assert_int_equal(rec.ev[2].n_errors, 0);
        recorder_clear(&rec);
        pod_config_free(c);
}

static void test_duplicate_uid_a_first(void **state) {
        run_duplicate_uid(true);
}

static void test_duplicate_uid_b_first(void **state) {
        run_duplicate_uid(false);
}

static void test_duplicate_uid_same_file(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);
        ManifestObject *a = obj_new(MANIFEST_KIND_POD, "ns", "q", "u1", "/m/a.yaml", 1);
        ManifestObject *b = obj_new(MANIFEST_KIND_POD, "ns", "p", "u1", "/m/a.yaml", 9);
        set(c, "/m/a.yaml", 2, a, b);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/a.yaml", "u1", NULL);
        assert_string_equal(rec.ev[0].name, "q");
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/a.yaml", NULL, NULL);
        assert_string_equal(rec.ev[1].error0,
                            "/m/a.yaml:9: pod \"ns/p\" has metadata.uid \"u1\", which pod "
                            "\"ns/q\" in /m/a.yaml already has; this pod is ignored");
        recorder_clear(&rec);
        pod_config_free(c);
}

static void test_duplicate_file_beats_http(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        ManifestObject *h = pod("p", "uh", "http://a/");
        assert_int_equal(pod_config_set_origin(c, "http", "http://a/", &h, 1), 0);
        manifest_object_unref(h);
        set(c, "/z/last.yaml", 1, pod("p", "uf", "/z/last.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/z/last.yaml", "uf", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "http://a/", NULL, NULL);
        assert_string_equal(rec.ev[1].source, "http");
        assert_non_null(strstr(rec.ev[1].error0, "also defined in /z/last.yaml"));
        recorder_clear(&rec);
        pod_config_free(c);
}

static void test_duplicate_same_file(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);
        ManifestObject *a = obj_new(MANIFEST_KIND_POD, "ns", "p", "u1", "/m/a.yaml", 1);
        ManifestObject *b = obj_new(MANIFEST_KIND_POD, "ns", "p", "u2", "/m/a.yaml", 9);
        set(c, "/m/a.yaml", 2, a, b);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/a.yaml", "u1", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/a.yaml", NULL, NULL);
        assert_non_null(strstr(rec.ev[1].error0, "/m/a.yaml:9:"));
        assert_non_null(strstr(rec.ev[1].error0, "defined twice"));
        recorder_clear(&rec);
        pod_config_free(c);
}

static void test_keep_last_good(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        set(c, "/m/x.yaml", 1, pod("x", "u1", "/m/x.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        recorder_clear(&rec);

        set_error(c, "/m/x.yaml", "syntax error");
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        expect(&rec.ev[0], SOURCE_EVENT_ERROR, "/m/x.yaml", NULL, NULL);
        assert_int_equal(rec.ev[0].n_errors, 1);
        assert_int_equal(rec.ev[0].n_conflicts, 0); /* the origin's own error */
        assert_string_equal(rec.ev[0].error0, "/m/x.yaml:3: spec: syntax error");
        recorder_clear(&rec);
        /* the pod is still wanted */
        ManifestObject *o = pod_config_find(c, MANIFEST_KIND_POD, "kube-system", "x");
        assert_non_null(o);
        assert_string_equal(o->uid, "u1");

        /* the same error again (a rescan): no event */
        set_error(c, "/m/x.yaml", "syntax error");
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);

        /* a different error: reported */
        set_error(c, "/m/x.yaml", "other error");
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        assert_string_equal(rec.ev[0].error0, "/m/x.yaml:3: spec: other error");
        recorder_clear(&rec);

        /* fixed with new content: UPDATE, then the error clears */
        set(c, "/m/x.yaml", 1, pod("x", "u2", "/m/x.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_UPDATE, "/m/x.yaml", "u2", "u1");
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/x.yaml", NULL, NULL);
        assert_int_equal(rec.ev[1].n_errors, 0);
        recorder_clear(&rec);

        /* fixed with the same content: only the error clears */
        set_error(c, "/m/x.yaml", "syntax error");
        assert_int_equal(pod_config_commit(c), 0);
        recorder_clear(&rec);
        set(c, "/m/x.yaml", 1, pod("x", "u2", "/m/x.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        expect(&rec.ev[0], SOURCE_EVENT_ERROR, "/m/x.yaml", NULL, NULL);
        assert_int_equal(rec.ev[0].n_errors, 0);
        recorder_clear(&rec);

        /* a failing origin that is removed: REMOVE and its error clears */
        set_error(c, "/m/x.yaml", "syntax error");
        assert_int_equal(pod_config_commit(c), 0);
        recorder_clear(&rec);
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/x.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_REMOVE, "/m/x.yaml", "u2", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_ERROR, "/m/x.yaml", NULL, NULL);
        assert_int_equal(rec.ev[1].n_errors, 0);
        recorder_clear(&rec);

        /* an origin that never worked: just the error, no pod */
        set_error(c, "/m/new.yaml", "bad");
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 1);
        expect(&rec.ev[0], SOURCE_EVENT_ERROR, "/m/new.yaml", NULL, NULL);
        assert_int_equal(rec.ev[0].n_errors, 1);
        recorder_clear(&rec);
        size_t it = 0;
        assert_null(pod_config_next_pod(c, &it));

        pod_config_free(c);
}

static void test_rename_is_one_update(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        set(c, "/m/a.yaml", 2, pod("p", "pa", "/m/a.yaml"), pod("q", "qa", "/m/a.yaml"));
        assert_int_equal(pod_config_commit(c), 0);
        recorder_clear(&rec);

        /* the new origin arrives before the old one is dropped: still one
         * change per pod */
        set(c, "/m/b.yaml", 2, pod("p", "pb", "/m/b.yaml"), pod("q", "qb", "/m/b.yaml"));
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/a.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_UPDATE, "/m/b.yaml", "pb", "pa");
        expect(&rec.ev[1], SOURCE_EVENT_UPDATE, "/m/b.yaml", "qb", "qa");
        recorder_clear(&rec);
        pod_config_free(c);
}

static void test_local_objects(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        set(c, "/m/a.yaml", 3, obj_new(MANIFEST_KIND_CONFIGMAP, "ns", "cfg", "c1", "/m/a.yaml", 1),
            obj_new(MANIFEST_KIND_SECRET, "ns", "cfg", "s1", "/m/a.yaml", 5),
            obj_new(MANIFEST_KIND_POD, "ns", "cfg", "p1", "/m/a.yaml", 9));
        assert_int_equal(pod_config_commit(c), 0);
        /* the pod first, then the new local objects (kind order) */
        assert_int_equal(rec.n, 3);
        expect(&rec.ev[0], SOURCE_EVENT_ADD, "/m/a.yaml", "p1", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_LOCAL, "/m/a.yaml", "c1", NULL);
        expect(&rec.ev[2], SOURCE_EVENT_LOCAL, "/m/a.yaml", "s1", NULL);
        recorder_clear(&rec);

        /* unchanged content: no event */
        set(c, "/m/a.yaml", 3, obj_new(MANIFEST_KIND_CONFIGMAP, "ns", "cfg", "c1", "/m/a.yaml", 1),
            obj_new(MANIFEST_KIND_SECRET, "ns", "cfg", "s1", "/m/a.yaml", 5),
            obj_new(MANIFEST_KIND_POD, "ns", "cfg", "p1", "/m/a.yaml", 9));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);

        ManifestObject *o = pod_config_find(c, MANIFEST_KIND_CONFIGMAP, "ns", "cfg");
        assert_non_null(o);
        assert_string_equal(o->uid, "c1");
        o = pod_config_find(c, MANIFEST_KIND_SECRET, "ns", "cfg");
        assert_non_null(o);
        assert_string_equal(o->uid, "s1");
        assert_null(pod_config_find(c, MANIFEST_KIND_SECRET, "other", "cfg"));

        set(c, "/m/a.yaml", 1, obj_new(MANIFEST_KIND_CONFIGMAP, "ns", "cfg", "c2", "/m/a.yaml", 1));
        assert_int_equal(pod_config_commit(c), 0);
        /* changed ConfigMap (old_uid: its previous version), removed Secret
         * (the object that was, no old_uid) */
        assert_int_equal(rec.n, 3);
        expect(&rec.ev[0], SOURCE_EVENT_REMOVE, "/m/a.yaml", "p1", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_LOCAL, "/m/a.yaml", "c2", "c1");
        expect(&rec.ev[2], SOURCE_EVENT_LOCAL, "/m/a.yaml", "s1", NULL);
        recorder_clear(&rec);
        o = pod_config_find(c, MANIFEST_KIND_CONFIGMAP, "ns", "cfg");
        assert_non_null(o);
        assert_string_equal(o->uid, "c2");
        assert_null(pod_config_find(c, MANIFEST_KIND_SECRET, "ns", "cfg"));
        pod_config_free(c);
}

/* A pod read again unchanged (same key, same uid) sends no event and keeps
 * the object the pod layer already holds, but follows its new origin; a
 * ConfigMap read again unchanged sends nothing either. */
static void test_unchanged_keeps_object(void **state) {
        Recorder rec = {};
        PodConfig *c;
        assert_int_equal(pod_config_new(&c, record, &rec), 0);

        set(c, "/m/a.yaml", 2, pod("x", "u1", "/m/a.yaml"),
            obj_new(MANIFEST_KIND_CONFIGMAP, "kube-system", "cm", "c1", "/m/a.yaml", 5));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        recorder_clear(&rec);
        ManifestObject *first = pod_config_find(c, MANIFEST_KIND_POD, "kube-system", "x");
        assert_non_null(first);

        set(c, "/m/a.yaml", 2, pod("x", "u1", "/m/a.yaml"),
            obj_new(MANIFEST_KIND_CONFIGMAP, "kube-system", "cm", "c1", "/m/a.yaml", 5));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);
        assert_ptr_equal(pod_config_find(c, MANIFEST_KIND_POD, "kube-system", "x"), first);

        /* moved to another file with the same uid: still no event */
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/a.yaml"), 0);
        set(c, "/m/b.yaml", 2, pod("x", "u1", "/m/b.yaml"),
            obj_new(MANIFEST_KIND_CONFIGMAP, "kube-system", "cm", "c1", "/m/b.yaml", 5));
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 0);
        assert_ptr_equal(pod_config_find(c, MANIFEST_KIND_POD, "kube-system", "x"), first);

        /* its removal names the origin it came from last */
        assert_int_equal(pod_config_remove_origin(c, "file", "/m/b.yaml"), 0);
        assert_int_equal(pod_config_commit(c), 0);
        assert_int_equal(rec.n, 2);
        expect(&rec.ev[0], SOURCE_EVENT_REMOVE, "/m/b.yaml", "u1", NULL);
        expect(&rec.ev[1], SOURCE_EVENT_LOCAL, "/m/b.yaml", "c1", NULL);
        assert_null(pod_config_find(c, MANIFEST_KIND_POD, "kube-system", "x"));
        recorder_clear(&rec);
        pod_config_free(c);
}

static void test_event_type_names(void **state) {
        assert_string_equal(source_event_type_to_string(SOURCE_EVENT_ADD), "ADD");
        assert_string_equal(source_event_type_to_string(SOURCE_EVENT_UPDATE), "UPDATE");
        assert_string_equal(source_event_type_to_string(SOURCE_EVENT_REMOVE), "REMOVE");
        assert_string_equal(source_event_type_to_string(SOURCE_EVENT_ERROR), "ERROR");
        assert_string_equal(source_event_type_to_string(SOURCE_EVENT_LOCAL), "LOCAL");
        assert_null(source_event_type_to_string(_SOURCE_EVENT_MAX));
        assert_null(source_event_type_to_string(_SOURCE_EVENT_INVALID));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_add_update_remove),
                cmocka_unit_test(test_event_order),
                cmocka_unit_test(test_duplicate_a_first),
                cmocka_unit_test(test_duplicate_b_first),
                cmocka_unit_test(test_duplicate_uid_a_first),
                cmocka_unit_test(test_duplicate_uid_b_first),
                cmocka_unit_test(test_duplicate_uid_same_file),
                cmocka_unit_test(test_duplicate_file_beats_http),
                cmocka_unit_test(test_duplicate_same_file),
                cmocka_unit_test(test_keep_last_good),
                cmocka_unit_test(test_rename_is_one_update),
                cmocka_unit_test(test_local_objects),
                cmocka_unit_test(test_unchanged_keeps_object),
                cmocka_unit_test(test_event_type_names),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
