/* The agent's image pulls: one pull per reference and credentials however
 * many wait, at most max_parallel at a time (serializeImagePulls), results
 * to every waiter, never from inside the request, cancellation of a
 * waiter (a pull nobody wants any more is dropped, or cancelled when
 * running; a shared one goes on).
 * The backend is a recording fake: this is the queueing policy, the real
 * pulls are tested against a registry in test-registry-pods.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "image-pulls.h"
#include "macro.h"

typedef struct FakePull {
        char ref[64];
        char auths[64];
        image_pull_backend_done_t done;
        void *pull_userdata;
        bool cancelled, finished;
} FakePull;

typedef struct Fake {
        FakePull pulls[8];
        unsigned n;
        int fail_start; /* next start fails with this */
} Fake;

static int fake_start(void *userdata, const char *ref, const char *auths,
                      image_pull_backend_done_t done, void *pull_userdata, void **ret_handle,
                      Error *err) {
        Fake *f = userdata;
        if (f->fail_start) {
                int r = f->fail_start;
                f->fail_start = 0;
                return error_set(err, r, "no helper");
        }
        assert_true(f->n < ELEMENTSOF(f->pulls));
        FakePull *p = &f->pulls[f->n++];
        snprintf(p->ref, sizeof p->ref, "%s", ref);
        snprintf(p->auths, sizeof p->auths, "%s", auths ? auths : "");
        p->done = done;
        p->pull_userdata = pull_userdata;
        *ret_handle = p;
        return 0;
}

static void fake_cancel(void *handle) {
        ((FakePull *)handle)->cancelled = true;
}

static void fake_finish(FakePull *p, int r, const char *digest, const char *error) {
        assert_false(p->finished);
        p->finished = true;
        p->done(p->pull_userdata, r, digest, error);
}

typedef struct Result {
        bool called;
        int r;
        char digest[80];
        char error[80];
} Result;

static bool in_request;

static void on_done(int r, const char *digest, const char *error, usec_t duration, void *userdata) {
        Result *res = userdata;
        assert_false(in_request);
        assert_false(res->called);
        res->called = true;
        res->r = r;
        snprintf(res->digest, sizeof res->digest, "%s", digest ? digest : "");
        snprintf(res->error, sizeof res->error, "%s", error ? error : "");
}

static ImagePullWaiter *request(ImagePulls *p, const char *ref, const char *auths, Result *res) {
        ImagePullWaiter *w = NULL;
        in_request = true;
        assert_int_equal(image_pulls_request(p, ref, auths, on_done, res, &w), 0);
        in_request = false;
        return w;
}

static void spin(Event *e) {
        for (int i = 0; i < 5; i++)
                assert_true(event_run(e, 0) >= 0);
}

typedef struct Harness {
        Event *e;
        Fake fake;
        ImagePulls *pulls;
} Harness;

static void setup(Harness *h, unsigned max_parallel) {
        memset(h, 0, sizeof *h);
        assert_int_equal(event_new(&h->e), 0);
        ImagePullBackend b = { .start = fake_start, .cancel = fake_cancel, .userdata = &h->fake };
        assert_int_equal(image_pulls_new(&h->pulls, h->e, max_parallel, &b), 0);
}

static void teardown(Harness *h) {
        image_pulls_free(h->pulls);
        event_free(h->e);
}

static void test_shared_pull(void **state) {
        (void)state;
        Harness h;
        Result a = {}, b = {}, c = {};

        setup(&h, 1);
        request(h.pulls, "docker.io/library/busybox:1", NULL, &a);
        request(h.pulls, "docker.io/library/busybox:1", NULL, &b);
        /* Other credentials (another pod's imagePullSecrets): its own pull. */
        request(h.pulls, "docker.io/library/busybox:1", "{\"auths\":{}}", &c);
        assert_int_equal(h.fake.n, 0); /* nothing starts inside the request */
        spin(h.e);
        assert_int_equal(h.fake.n, 1); /* serialized: one at a time */
        assert_int_equal(image_pulls_running(h.pulls), 1);
        assert_int_equal(image_pulls_queued(h.pulls), 1);
        fake_finish(&h.fake.pulls[0], 0, "sha256:aa", NULL);
        assert_true(a.called && b.called);
        assert_int_equal(a.r, 0);
        assert_string_equal(b.digest, "sha256:aa");
        assert_false(c.called);
        spin(h.e);
        assert_int_equal(h.fake.n, 2);
        assert_string_equal(h.fake.pulls[1].auths, "{\"auths\":{}}");
        fake_finish(&h.fake.pulls[1], -EACCES, NULL, "401 Unauthorized: bad password");
        assert_true(c.called);
        assert_int_equal(c.r, -EACCES);
        assert_string_equal(c.error, "401 Unauthorized: bad password");
        /* Done pulls are forgotten: the next request pulls again. */
        Result d = {};
        request(h.pulls, "docker.io/library/busybox:1", NULL, &d);
        spin(h.e);
        assert_int_equal(h.fake.n, 3);
        fake_finish(&h.fake.pulls[2], 1, "sha256:aa", NULL);
        assert_int_equal(d.r, 1);
        teardown(&h);
}

static void test_parallel_bound(void **state) {
        (void)state;
        Harness h;
        Result r[4] = {};
        static const char *const refs[] = { "a:1", "b:1", "c:1", "d:1" };

        setup(&h, 2);
        for (int i = 0; i < 4; i++)
                request(h.pulls, refs[i], NULL, &r[i]);
        spin(h.e);
        assert_int_equal(h.fake.n, 2);
        assert_string_equal(h.fake.pulls[0].ref, "a:1"); /* in request order */
        assert_string_equal(h.fake.pulls[1].ref, "b:1");
        fake_finish(&h.fake.pulls[1], 0, "sha256:b", NULL);
        spin(h.e);
        assert_int_equal(h.fake.n, 3);
        assert_string_equal(h.fake.pulls[2].ref, "c:1");
        teardown(&h); /* running pulls are cancelled, nobody is called back */
        assert_true(h.fake.pulls[0].cancelled);
        assert_true(h.fake.pulls[2].cancelled);
        assert_false(r[0].called || r[2].called || r[3].called);
}

static void test_cancel(void **state) {
        (void)state;
        Harness h;
        Result a = {}, b = {}, q = {};

        setup(&h, 1);
        ImagePullWaiter *wa = request(h.pulls, "a:1", NULL, &a);
        request(h.pulls, "a:1", NULL, &b);
        ImagePullWaiter *wq = request(h.pulls, "queued:1", NULL, &q);
        spin(h.e);
        image_pull_waiter_cancel(wa);
        image_pull_waiter_cancel(wq); /* nobody wants it: never starts */
        fake_finish(&h.fake.pulls[0], 0, "sha256:a", NULL);
        assert_false(a.called);
        assert_true(b.called);
        spin(h.e);
        assert_int_equal(h.fake.n, 1);
        assert_int_equal(image_pulls_queued(h.pulls), 0);

        /* The last waiter of a running pull goes: the backend's pull is
         * cancelled and its slot serves the next queued pull. */
        Result c = {}, d = {}, e = {};
        ImagePullWaiter *wc = request(h.pulls, "c:1", NULL, &c);
        request(h.pulls, "d:1", NULL, &d);
        spin(h.e);
        assert_int_equal(h.fake.n, 2);
        image_pull_waiter_cancel(wc);
        assert_true(h.fake.pulls[1].cancelled);
        assert_int_equal(image_pulls_running(h.pulls), 0);
        spin(h.e);
        assert_int_equal(h.fake.n, 3);
        assert_string_equal(h.fake.pulls[2].ref, "d:1");
        assert_false(c.called);
        /* A shared running pull loses one waiter: it goes on for the other. */
        ImagePullWaiter *we = request(h.pulls, "d:1", NULL, &e);
        image_pull_waiter_cancel(we);
        assert_false(h.fake.pulls[2].cancelled);
        fake_finish(&h.fake.pulls[2], 0, "sha256:d", NULL);
        assert_true(d.called);
        assert_false(e.called);
        teardown(&h);
}

static void test_backend_cannot_start(void **state) {
        (void)state;
        Harness h;
        Result a = {}, b = {};

        setup(&h, 1);
        h.fake.fail_start = -ENOEXEC;
        request(h.pulls, "a:1", NULL, &a);
        request(h.pulls, "b:1", NULL, &b);
        spin(h.e);
        assert_true(a.called);
        assert_int_equal(a.r, -ENOEXEC);
        assert_string_equal(a.error, "no helper");
        /* The slot is free again: the next pull runs. */
        assert_int_equal(h.fake.n, 1);
        assert_string_equal(h.fake.pulls[0].ref, "b:1");
        teardown(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shared_pull),
                cmocka_unit_test(test_parallel_bound),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_backend_cannot_start),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
