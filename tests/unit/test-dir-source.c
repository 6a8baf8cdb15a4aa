/* Directory source against a real temporary directory and inotify: the
 * timing rules of docs/manifests.md (writes at once, removals after the
 * debounce, saves by rename as one change), the name filter, trust and limits.
 *
 * "At once" is checked without a clock: inotify events are queued by the
 * system call that causes them, so a change applied at once is delivered by
 * the next turn of the loop that does not wait, where no timer of the
 * source can be due yet. "After the debounce" compares the time the source
 * delivered the event with a time taken before it could have seen the
 * change. Neither depends on how fast a loaded machine runs the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"
#include "string-util.h"

#define DEBOUNCE (200 * USEC_PER_MSEC)
/* How long a wait for an event may take before the test gives up: a bound
 * for a stuck test, not a speed the source must reach. */
#define CAP (60 * USEC_PER_SEC)

typedef struct Rec {
        SourceEventType type;
        usec_t at; /* CLOCK_MONOTONIC when the source delivered it */
        char *origin, *uid, *old_uid, *name;
        size_t n_errors;
        char *errors; /* all diagnostics, one per line */
} Rec;

typedef struct Fixture {
        char dir[64];
        Event *event;
        PodConfig *config;
        DirSource *source;
        Rec ev[64];
        size_t n;
} Fixture;

static void record(const SourceEvent *ev, void *userdata) {
        Fixture *f = userdata;
        assert_true(f->n < ELEMENTSOF(f->ev));
        Rec *x = &f->ev[f->n++];
        *x = (Rec){
                .type = ev->type,
                .at = now_usec(CLOCK_MONOTONIC),
                .origin = strdup(ev->origin),
                .uid = ev->uid ? strdup(ev->uid) : NULL,
                .old_uid = ev->old_uid ? strdup(ev->old_uid) : NULL,
                .name = ev->object ? strdup(ev->object->name) : NULL,
        };
        if (ev->errors) {
                x->n_errors = ev->errors->n_errors;
                char *buf = NULL;
                size_t len = 0, cap = 0;
                for (size_t i = 0; i < ev->errors->n; i++) {
                        char *l = diag_to_string(&ev->errors->items[i]);
                        assert_non_null(l);
                        assert_int_equal(strbuf_append(&buf, &len, &cap, l, strlen(l)), 0);
                        assert_int_equal(strbuf_append(&buf, &len, &cap, "\n", 1), 0);
                        free(l);
                }
                x->errors = buf ? buf : strdup("");
        }
}

static void clear(Fixture *f) {
        for (size_t i = 0; i < f->n; i++) {
                free(f->ev[i].origin);
                free(f->ev[i].uid);
                free(f->ev[i].old_uid);
                free(f->ev[i].name);
                free(f->ev[i].errors);
        }
        f->n = 0;
}

static void dump(Fixture *f) {
        for (size_t i = 0; i < f->n; i++)
                fprintf(stderr, "  event %zu: %s %s uid=%s old=%s errors=%zu %s\n", i,
                        source_event_type_to_string(f->ev[i].type), f->ev[i].origin,
                        strna(f->ev[i].uid), strna(f->ev[i].old_uid), f->ev[i].n_errors,
                        strempty(f->ev[i].errors));
}

/* Runs the loop until n events were recorded or the cap passed. */
static void run_until(Fixture *f, size_t n, usec_t cap) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        while (f->n < n && now_usec(CLOCK_MONOTONIC) - start < cap)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        if (f->n < n)
                dump(f);
        assert_true(f->n >= n);
}

/* One turn of the loop that does not wait: the inotify events the test's
 * own system calls queued are handled, and no timer of the source is due
 * (the debounce armed while handling them ends after this turn's time), so
 * exactly the n events the source delivers at once must be there. */
static void run_at_once(Fixture *f, size_t n) {
        assert_true(event_run(f->event, 0) >= 0);
        if (f->n != n)
                dump(f);
        assert_int_equal(f->n, n);
}

/* Runs the loop for d and fails on any event beyond the n expected. */
static void run_for(Fixture *f, usec_t d, size_t n) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        while (now_usec(CLOCK_MONOTONIC) - start < d)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        if (f->n != n)
                dump(f);
        assert_int_equal(f->n, n);
}

static void expect(const Rec *r, SourceEventType type, const char *origin) {
        if (r->type != type)
                fprintf(stderr, "expected %s, got %s\n", source_event_type_to_string(type),
                        source_event_type_to_string(r->type));
        assert_int_equal(r->type, type);
        if (origin)
                assert_string_equal(r->origin, origin);
}

static char *path_of(Fixture *f, const char *name) {
        char *p = strprintf("%s/%s", f->dir, name);
        assert_non_null(p);
        return p;
}

static void write_raw(Fixture *f, const char *name, const char *content, mode_t mode) {
        char *p = path_of(f, name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fchmod(fd, mode), 0);
        size_t l = strlen(content);
        assert_int_equal(write(fd, content, l), (ssize_t)l);
        assert_int_equal(close(fd), 0);
        free(p);
}

static char *pod_yaml(const char *name, const char *tag) {
        char *s = strprintf("apiVersion: v1\n"
                            "kind: Pod\n"
                            "metadata:\n"
                            "  name: %s\n"
                            "  namespace: kube-system\n"
                            "spec:\n"
                            "  containers:\n"
                            "  - name: c\n"
                            "    image: busybox:%s\n",
                            name, tag);
        assert_non_null(s);
        return s;
}

static void write_pod(Fixture *f, const char *file, const char *name, const char *tag) {
        char *y = pod_yaml(name, tag);
        write_raw(f, file, y, 0644);
        free(y);
}

static void do_rename(Fixture *f, const char *from, const char *to) {
        char *a = path_of(f, from), *b = path_of(f, to);
        assert_int_equal(rename(a, b), 0);
        free(a);
        free(b);
}

static void do_unlink(Fixture *f, const char *name) {
        char *p = path_of(f, name);
        assert_int_equal(unlink(p), 0);
        free(p);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        strcpy(f->dir, "/tmp/test-dir-source-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        assert_int_equal(chmod(f->dir, 0755), 0);
        assert_int_equal(event_new(&f->event), 0);
        assert_int_equal(pod_config_new(&f->config, record, f), 0);
        *state = f;
        return 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(p) < 0 ? -1 : 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        dir_source_free(f->source);
        pod_config_free(f->config);
        event_free(f->event);
        clear(f);
        (void)nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(f);
        return 0;
}

static void start_full(Fixture *f, const char *path, usec_t check_frequency, size_t max_size,
                       bool insecure) {
        DirSourceOptions o = {
                .path = path,
                .node_name = "node1",
                .check_frequency = check_frequency,
                .debounce = DEBOUNCE,
                .max_file_size = max_size,
                .allow_insecure = insecure,
        };
        assert_int_equal(dir_source_new(&f->source, f->event, f->config, &o), 0);
        assert_int_equal(dir_source_start(f->source), 0);
}

/* Rescans only every minute: whatever happens faster came through inotify. */
static void start(Fixture *f) {
        start_full(f, f->dir, 60 * USEC_PER_SEC, 0, false);
}

/* ---- pure functions ---- */

static void test_classify(void **state) {
        static const struct {
                const char *name;
                int expect;
        } t[] = {
                { "etcd.yaml", 1 },
                { "etcd.yml", 1 },
                { "etcd.json", 1 },
                { "etcd.YAML", 1 },
                { "kube-apiserver.Yml", 1 },
                { "etcd.yaml.bak", 0 },
                { "etcd.yaml~", 0 },
                { ".etcd.yaml.swp", 0 },
                { ".etcd.yaml", 0 },
                { ".yaml", 0 },
                { "etcd.yaml.swp", 0 },
                { "etcd.yaml.orig", 0 },
                { "etcd.yaml.dpkg-old", 0 },
                { "etcd.yaml.dpkg-new", 0 },
                { "etcd.yaml.dpkg-dist", 0 },
                { "etcd.yaml.dpkg-tmp", 0 },
                { "etcd.yaml.dpkg-bak", 0 },
                { "etcd.yaml.rpmnew", 0 },
                { "etcd.yaml.rpmsave", 0 },
                { "etcd.yaml.rpmorig", 0 },
                { "ETCD.YAML.BAK", 0 },
                { "etcd.yaml.tmp", -1 },
                { "etcd.txt", -1 },
                { "README", -1 },
                { "etcd.yamlx", -1 },
                { "4913", -1 },
                { ".", -1 },
                { "..", -1 },
                { "", -1 },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                int r = manifest_filename_classify(t[i].name);
                if (r != t[i].expect)
                        fprintf(stderr, "%s: got %d, want %d\n", t[i].name, r, t[i].expect);
                assert_int_equal(r, t[i].expect);
        }
}

static void test_trust(void **state) {
        Fixture *f = *state;
        write_raw(f, "t.yaml", "x", 0644);
        char *p = path_of(f, "t.yaml");
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        char *reason = (char *)"unset";

        assert_int_equal(manifest_path_check_trust(fd, p, &reason), 0);
        assert_null(reason);

        assert_int_equal(fchmod(fd, 0664), 0);
        assert_int_equal(manifest_path_check_trust(fd, p, &reason), -EPERM);
        assert_non_null(strstr(reason, "group-writable"));
        assert_non_null(strstr(reason, p));
        free(reason);

        assert_int_equal(fchmod(fd, 0646), 0);
        assert_int_equal(manifest_path_check_trust(fd, p, &reason), -EPERM);
        assert_non_null(strstr(reason, "world-writable"));
        free(reason);

        assert_int_equal(fchmod(fd, 0644), 0);
        assert_int_equal(fchown(fd, 1000, 0), 0);
        assert_int_equal(manifest_path_check_trust(fd, p, &reason), -EPERM);
        assert_non_null(strstr(reason, "owned by uid 1000"));
        free(reason);

        close(fd);
        free(p);
}

/* ---- events ---- */

static void test_add_update_delete(void **state) {
        Fixture *f = *state;
        start(f);
        char *x = path_of(f, "x.yaml");

        write_pod(f, "x.yaml", "x", "1");
        run_at_once(f, 1); /* no debounce */
        expect(&f->ev[0], SOURCE_EVENT_ADD, x);
        assert_string_equal(f->ev[0].name, "x-node1");
        char *uid1 = strdup(f->ev[0].uid);
        clear(f);

        write_pod(f, "x.yaml", "x", "2");
        run_at_once(f, 1);
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, x);
        assert_string_equal(f->ev[0].old_uid, uid1);
        assert_string_not_equal(f->ev[0].uid, uid1);
        char *uid2 = strdup(f->ev[0].uid);
        clear(f);

        /* same content written again, and a touch: nothing */
        write_pod(f, "x.yaml", "x", "2");
        assert_int_equal(utimensat(AT_FDCWD, x, NULL, 0), 0);
        run_for(f, DEBOUNCE, 0);

        /* delete: REMOVE, but only after the debounce */
        usec_t before = now_usec(CLOCK_MONOTONIC);
        do_unlink(f, "x.yaml");
        run_at_once(f, 0);
        run_until(f, 1, CAP);
        expect(&f->ev[0], SOURCE_EVENT_REMOVE, x);
        assert_true(f->ev[0].at - before >= DEBOUNCE);
        assert_string_equal(f->ev[0].uid, uid2);
        run_for(f, DEBOUNCE, 1);

        free(uid1);
        free(uid2);
        free(x);
}

static void test_editor_save_by_rename(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        start(f);
        assert_int_equal(f->n, 1); /* the first scan is synchronous */
        expect(&f->ev[0], SOURCE_EVENT_ADD, NULL);
        clear(f);

        /* swap file and temp file, then rename over the manifest */
        write_raw(f, ".x.yaml.swp", "garbage: [", 0644);
        write_pod(f, "x.yaml.tmp", "x", "2");
        do_rename(f, "x.yaml.tmp", "x.yaml");
        do_unlink(f, ".x.yaml.swp");
        run_until(f, 1, CAP);
        run_for(f, 2 * DEBOUNCE, 1);
        char *x = path_of(f, "x.yaml");
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, x);
        free(x);
}

static void test_vim_style_save(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        start(f);
        clear(f);

        /* vim: the old file becomes the backup, a new file is written */
        do_rename(f, "x.yaml", "x.yaml~");
        run_at_once(f, 0); /* the move away is seen on its own */
        write_pod(f, "x.yaml", "x", "2");
        run_until(f, 1, CAP);
        run_for(f, 2 * DEBOUNCE, 1);
        char *x = path_of(f, "x.yaml");
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, x);
        free(x);
}

static void test_invalid_keeps_pod(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        start(f);
        char *uid1 = strdup(f->ev[0].uid);
        clear(f);
        char *x = path_of(f, "x.yaml");

        write_raw(f, "x.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [unclosed\n", 0644);
        run_until(f, 1, CAP);
        run_for(f, 2 * DEBOUNCE, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR, x);
        assert_true(f->ev[0].n_errors > 0);
        assert_non_null(strstr(f->ev[0].errors, x));
        clear(f);
        ManifestObject *o = pod_config_find(f->config, MANIFEST_KIND_POD, "kube-system", "x-node1");
        assert_non_null(o);
        assert_string_equal(o->uid, uid1);

        /* fixed with new content: UPDATE, then the error clears */
        write_pod(f, "x.yaml", "x", "2");
        run_until(f, 2, CAP);
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, x);
        assert_string_equal(f->ev[0].old_uid, uid1);
        expect(&f->ev[1], SOURCE_EVENT_ERROR, x);
        assert_int_equal(f->ev[1].n_errors, 0);
        run_for(f, DEBOUNCE, 2);

        free(uid1);
        free(x);
}

static void test_zero_byte_file(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        start(f);
        clear(f);
        char *x = path_of(f, "x.yaml");

        /* truncated (a write in progress seen by a rescan, or a bad save) */
        write_raw(f, "x.yaml", "", 0644);
        run_until(f, 1, CAP);
        run_for(f, 2 * DEBOUNCE, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR, x);
        assert_non_null(strstr(f->ev[0].errors, "no documents"));
        clear(f);

        /* comments only: the same */
        write_raw(f, "y.yaml", "# nothing yet\n", 0644);
        run_until(f, 1, CAP);
        char *y = path_of(f, "y.yaml");
        expect(&f->ev[0], SOURCE_EVENT_ERROR, y);
        assert_non_null(strstr(f->ev[0].errors, "no documents"));
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "kube-system", "x-node1"));
        free(x);
        free(y);
}

static void test_duplicate_files(void **state) {
        Fixture *f = *state;
        start(f);
        /* b first: the winner must still be a.yaml */
        write_pod(f, "b.yaml", "etcd", "1");
        run_until(f, 1, CAP);
        clear(f);
        write_pod(f, "a.yaml", "etcd", "2");
        run_until(f, 2, CAP);
        char *a = path_of(f, "a.yaml"), *b = path_of(f, "b.yaml");
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, a);
        expect(&f->ev[1], SOURCE_EVENT_ERROR, b);
        assert_int_equal(f->ev[1].n_errors, 1);
        char *want = strprintf("pod \"kube-system/etcd-node1\" is also defined in %s, which wins; "
                               "this definition is ignored",
                               a);
        assert_non_null(strstr(f->ev[1].errors, want));
        assert_non_null(strstr(f->ev[1].errors, b));
        free(want);
        free(a);
        free(b);
}

static void test_duplicate_at_start(void **state) {
        Fixture *f = *state;
        write_pod(f, "b.yaml", "etcd", "1");
        write_pod(f, "a.yaml", "etcd", "2");
        start(f);
        assert_int_equal(f->n, 2);
        char *a = path_of(f, "a.yaml"), *b = path_of(f, "b.yaml");
        expect(&f->ev[0], SOURCE_EVENT_ADD, a);
        expect(&f->ev[1], SOURCE_EVENT_ERROR, b);
        free(a);
        free(b);
}

static void test_move_is_one_update(void **state) {
        Fixture *f = *state;
        write_pod(f, "a.yaml", "x", "1");
        start(f);
        char *uid1 = strdup(f->ev[0].uid);
        clear(f);

        do_rename(f, "a.yaml", "b.yaml");
        run_at_once(f, 1); /* the pair is applied at once */
        char *b = path_of(f, "b.yaml");
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, b);
        assert_string_equal(f->ev[0].old_uid, uid1);
        run_for(f, 2 * DEBOUNCE, 1);
        free(b);
        free(uid1);
}

static void test_insecure_file(void **state) {
        Fixture *f = *state;
        char *y = pod_yaml("x", "1");
        write_raw(f, "x.yaml", y, 0664);
        free(y);
        start(f);
        assert_int_equal(f->n, 1);
        char *x = path_of(f, "x.yaml");
        expect(&f->ev[0], SOURCE_EVENT_ERROR, x);
        assert_non_null(strstr(f->ev[0].errors, "group-writable"));
        clear(f);

        /* fixing the mode (IN_ATTRIB) starts it */
        assert_int_equal(chmod(x, 0644), 0);
        run_until(f, 2, CAP);
        expect(&f->ev[0], SOURCE_EVENT_ADD, x);
        expect(&f->ev[1], SOURCE_EVENT_ERROR, x);
        assert_int_equal(f->ev[1].n_errors, 0);
        free(x);
}

static void test_insecure_allowed(void **state) {
        Fixture *f = *state;
        char *y = pod_yaml("x", "1");
        write_raw(f, "x.yaml", y, 0666);
        free(y);
        assert_int_equal(chmod(f->dir, 0777), 0);
        start_full(f, f->dir, 60 * USEC_PER_SEC, 0, true);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD, NULL);
}

static void test_insecure_directory(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        assert_int_equal(chmod(f->dir, 0775), 0);
        start(f);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR, NULL);
        assert_non_null(strstr(f->ev[0].errors, "group-writable"));
        assert_non_null(strstr(f->ev[0].errors, f->dir));
        clear(f);

        assert_int_equal(chmod(f->dir, 0755), 0);
        run_until(f, 2, CAP);
        expect(&f->ev[0], SOURCE_EVENT_ADD, NULL);
        expect(&f->ev[1], SOURCE_EVENT_ERROR, NULL);
        assert_int_equal(f->ev[1].n_errors, 0);
}

static void test_size_cap(void **state) {
        Fixture *f = *state;
        start_full(f, f->dir, 60 * USEC_PER_SEC, 256, false);
        char *big = malloc(1001);
        assert_non_null(big);
        memset(big, '#', 1000);
        big[1000] = 0;
        write_raw(f, "big.yaml", big, 0644);
        free(big);
        run_until(f, 1, CAP);
        char *p = path_of(f, "big.yaml");
        expect(&f->ev[0], SOURCE_EVENT_ERROR, p);
        assert_non_null(strstr(f->ev[0].errors, "larger than the limit of 256 bytes"));
        free(p);
}

static void test_ignored_and_subdirs(void **state) {
        Fixture *f = *state;
        char *sub = path_of(f, "sub"), *subdir_yaml = path_of(f, "dir.yaml");
        assert_int_equal(mkdir(sub, 0755), 0);
        assert_int_equal(mkdir(subdir_yaml, 0755), 0);
        start_full(f, f->dir, 100 * USEC_PER_MSEC, 0, false);

        write_pod(f, "sub/x.yaml", "x", "1");
        write_pod(f, "x.yaml.bak", "x", "1");
        write_pod(f, "x.yaml~", "x", "1");
        write_pod(f, ".x.yaml", "x", "1");
        write_pod(f, "x.yaml.dpkg-old", "x", "1");
        write_pod(f, "x.yaml.rpmnew", "x", "1");
        write_pod(f, "x.txt", "x", "1");
        /* several rescans, and one for certain however slowly the loop ran */
        run_for(f, 500 * USEC_PER_MSEC, 0);
        assert_int_equal(dir_source_rescan(f->source), 0);
        assert_int_equal(f->n, 0);
        free(sub);
        free(subdir_yaml);
}

static void test_multi_document(void **state) {
        Fixture *f = *state;
        start(f);
        char *a = pod_yaml("a", "1"), *b = pod_yaml("b", "1");
        char *both = strprintf("# two pods\n%s---\n%s", a, b);
        write_raw(f, "two.yaml", both, 0644);
        run_until(f, 2, CAP);
        expect(&f->ev[0], SOURCE_EVENT_ADD, NULL);
        expect(&f->ev[1], SOURCE_EVENT_ADD, NULL);
        assert_string_equal(f->ev[0].name, "a-node1");
        assert_string_equal(f->ev[1].name, "b-node1");
        free(a);
        free(b);
        free(both);
}

static void test_missing_directory(void **state) {
        Fixture *f = *state;
        char *sub = path_of(f, "manifests");
        start_full(f, sub, 200 * USEC_PER_MSEC, 0, false);
        run_for(f, 500 * USEC_PER_MSEC, 0);

        /* created with a manifest in it: found (parent watch or rescan) */
        char *tmp = path_of(f, "staging");
        assert_int_equal(mkdir(tmp, 0755), 0);
        write_pod(f, "staging/x.yaml", "x", "1");
        assert_int_equal(rename(tmp, sub), 0);
        run_until(f, 1, CAP);
        char *x = path_of(f, "manifests/x.yaml");
        expect(&f->ev[0], SOURCE_EVENT_ADD, x);
        clear(f);

        /* the directory goes away: everything is removed after the debounce */
        assert_int_equal(unlink(x), 0);
        assert_int_equal(rmdir(sub), 0);
        run_until(f, 1, CAP);
        expect(&f->ev[0], SOURCE_EVENT_REMOVE, x);
        clear(f);

        /* and comes back: picked up again */
        assert_int_equal(mkdir(sub, 0755), 0);
        run_for(f, 50 * USEC_PER_MSEC, 0);
        write_pod(f, "manifests/x.yaml", "x", "1");
        run_until(f, 1, CAP);
        expect(&f->ev[0], SOURCE_EVENT_ADD, x);

        free(x);
        free(tmp);
        free(sub);
}

static void test_single_file(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        write_pod(f, "y.yaml", "web", "1");
        char *x = path_of(f, "x.yaml");
        start_full(f, x, 60 * USEC_PER_SEC, 0, false);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD, x);
        assert_string_equal(f->ev[0].name, "x-node1");
        clear(f);

        write_pod(f, "y.yaml", "web", "2");
        run_for(f, DEBOUNCE, 0);
        write_pod(f, "x.yaml", "x", "2");
        run_until(f, 1, CAP);
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, x);
        free(x);
}

static void test_symlink(void **state) {
        Fixture *f = *state;
        char *target_dir = path_of(f, "store");
        assert_int_equal(mkdir(target_dir, 0755), 0);
        write_pod(f, "store/x.manifest", "x", "1");
        start(f);
        run_for(f, 50 * USEC_PER_MSEC, 0);

        char *link = path_of(f, "x.yaml");
        assert_int_equal(symlink("store/x.manifest", link), 0);
        run_at_once(f, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD, link);
        free(link);
        free(target_dir);
}

static void test_rescan_finds_changes(void **state) {
        Fixture *f = *state;
        write_pod(f, "x.yaml", "x", "1");
        start(f);
        char *uid1 = strdup(f->ev[0].uid);
        clear(f);
        char *x = path_of(f, "x.yaml"), *y = path_of(f, "y.yaml");

        /* Changes made while the loop does not run: the rescan alone must
         * find them (a changed stat identity is re-read, a new file read). */
        write_pod(f, "x.yaml", "x", "2");
        write_pod(f, "y.yaml", "web", "1");
        assert_int_equal(dir_source_rescan(f->source), 0);
        assert_int_equal(f->n, 2);
        expect(&f->ev[0], SOURCE_EVENT_UPDATE, x);
        assert_string_equal(f->ev[0].old_uid, uid1);
        expect(&f->ev[1], SOURCE_EVENT_ADD, y);
        clear(f);

        /* the queued inotify events then change nothing */
        run_for(f, DEBOUNCE, 0);
        assert_int_equal(dir_source_rescan(f->source), 0);
        assert_int_equal(f->n, 0);

        /* a file gone by the time of a rescan is removed after the debounce */
        do_unlink(f, "y.yaml");
        assert_int_equal(dir_source_rescan(f->source), 0);
        assert_int_equal(f->n, 0);
        run_until(f, 1, CAP);
        expect(&f->ev[0], SOURCE_EVENT_REMOVE, y);
        run_for(f, DEBOUNCE, 1);
        free(uid1);
        free(x);
        free(y);
}

/* Hundreds of files, a third of them removed, then changed and re-added:
 * the name index (open addressing with deletions) must still find every
 * remaining file, so an unchanged rescan says nothing and a change is one
 * UPDATE, never an ADD of a file it lost track of. */
static void count_event(const SourceEvent *ev, void *userdata) {
        size_t *counts = userdata;
        counts[ev->type]++;
}

static void test_many_files(void **state) {
        Fixture *f = *state;
        size_t counts[_SOURCE_EVENT_MAX] = {};
        PodConfig *cfg = NULL;
        DirSource *src = NULL;
        char file[32], name[32];
        const size_t n = 300;

        for (size_t i = 0; i < n; i++) {
                snprintf(file, sizeof file, "pod-%03zu.yaml", i);
                snprintf(name, sizeof name, "p%03zu", i);
                write_pod(f, file, name, "1");
        }
        assert_int_equal(pod_config_new(&cfg, count_event, counts), 0);
        DirSourceOptions o = { .path = f->dir,
                               .node_name = "node1",
                               .check_frequency = 60 * USEC_PER_SEC,
                               .debounce = DEBOUNCE };
        assert_int_equal(dir_source_new(&src, f->event, cfg, &o), 0);
        assert_int_equal(dir_source_start(src), 0);
        assert_int_equal(counts[SOURCE_EVENT_ADD], n);

        for (size_t i = 0; i < n; i += 3) {
                snprintf(file, sizeof file, "pod-%03zu.yaml", i);
                do_unlink(f, file);
        }
        usec_t start = now_usec(CLOCK_MONOTONIC);
        while (counts[SOURCE_EVENT_REMOVE] < n / 3 && now_usec(CLOCK_MONOTONIC) - start < CAP)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(counts[SOURCE_EVENT_REMOVE], n / 3);

        memset(counts, 0, sizeof counts);
        assert_int_equal(dir_source_rescan(src), 0);
        for (size_t t = 0; t < _SOURCE_EVENT_MAX; t++)
                assert_int_equal(counts[t], 0);

        /* every remaining file changed, every removed one back: found by
         * the rescan alone (the loop does not run) */
        for (size_t i = 0; i < n; i++) {
                snprintf(file, sizeof file, "pod-%03zu.yaml", i);
                snprintf(name, sizeof name, "p%03zu", i);
                write_pod(f, file, name, i % 3 ? "2" : "1");
        }
        assert_int_equal(dir_source_rescan(src), 0);
        assert_int_equal(counts[SOURCE_EVENT_UPDATE], n - n / 3);
        assert_int_equal(counts[SOURCE_EVENT_ADD], n / 3);
        assert_int_equal(counts[SOURCE_EVENT_REMOVE], 0);

        dir_source_free(src);
        pod_config_free(cfg);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_classify),
                cmocka_unit_test_setup_teardown(test_trust, setup, teardown),
                cmocka_unit_test_setup_teardown(test_add_update_delete, setup, teardown),
                cmocka_unit_test_setup_teardown(test_editor_save_by_rename, setup, teardown),
                cmocka_unit_test_setup_teardown(test_vim_style_save, setup, teardown),
                cmocka_unit_test_setup_teardown(test_invalid_keeps_pod, setup, teardown),
                cmocka_unit_test_setup_teardown(test_zero_byte_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_duplicate_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_duplicate_at_start, setup, teardown),
                cmocka_unit_test_setup_teardown(test_move_is_one_update, setup, teardown),
                cmocka_unit_test_setup_teardown(test_insecure_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_insecure_allowed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_insecure_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_size_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ignored_and_subdirs, setup, teardown),
                cmocka_unit_test_setup_teardown(test_multi_document, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_directory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_single_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_symlink, setup, teardown),
                cmocka_unit_test_setup_teardown(test_rescan_finds_changes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_many_files, setup, teardown),
        };
        if (geteuid() != 0) {
                fprintf(stderr, "test-dir-source needs root (file ownership checks); skipping\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
