/* pod_compute_actions(): sandbox, init order, sidecars, restart policies,
 * back-off, probe kills, termination order, deadlines and completion.
 * Pods come from real manifests; observed states are set by hand. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backoff.h"
#include "manifest.h"
#include "pod-actions.h"
#include "strv.h"
#include "pod-fixture.h"

#define SEC USEC_PER_SEC

typedef struct Fixture {
        ManifestObject **objs;
        size_t n;
        PodState s;
        PodActions a;
        bool have_a;
} Fixture;

static void fx_setup(Fixture *f, const char *yaml) {
        *f = (Fixture){};
        pod_fixture_parse(yaml, &f->objs, &f->n);
        assert_int_equal(pod_state_init(&f->s, f->objs[0]->pod, f->objs[0]->uid), 0);
}

static void fx_done(Fixture *f) {
        if (f->have_a)
                pod_actions_done(&f->a);
        pod_state_done(&f->s);
        manifest_objects_free(f->objs, f->n);
}

static PodActions *fx_compute(Fixture *f, usec_t now) {
        if (f->have_a)
                pod_actions_done(&f->a);
        assert_int_equal(pod_compute_actions(&f->s, now, &f->a), 0);
        f->have_a = true;
        return &f->a;
}

static ContainerState *C(Fixture *f, const char *name) {
        ContainerState *c = pod_state_find_container(&f->s, name);
        assert_non_null(c);
        return c;
}

static void set_running(ContainerState *c, bool started) {
        c->state = CONTAINER_RUNNING;
        c->started = started;
        c->ready = started;
}

static void set_exited(ContainerState *c, int code) {
        c->state = CONTAINER_EXITED;
        c->exit_code = code;
        c->started = c->ready = false;
}

static const ContainerStartAction *find_start(const PodActions *a, const char *name) {
        for (size_t i = 0; i < a->n_starts; i++)
                if (strcmp(a->starts[i].name, name) == 0)
                        return &a->starts[i];
        return NULL;
}

static const ContainerKillAction *find_kill(const PodActions *a, const char *name) {
        for (size_t i = 0; i < a->n_kills; i++)
                if (strcmp(a->kills[i].name, name) == 0)
                        return &a->kills[i];
        return NULL;
}

static const ContainerWaitingUpdate *find_waiting(const PodActions *a, const char *name) {
        for (size_t i = 0; i < a->n_waiting; i++)
                if (strcmp(a->waiting[i].name, name) == 0)
                        return &a->waiting[i];
        return NULL;
}

static void assert_idle(const PodActions *a) {
        assert_false(a->create_sandbox);
        assert_false(a->kill_pod);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 0);
        assert_false(a->pod_done);
}

#define INIT_POD(policy)                                                                           \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n"                               \
        "  restartPolicy: " policy "\n"                                                            \
        "  initContainers:\n"                                                                      \
        "  - {name: i1, image: busybox}\n"                                                         \
        "  - {name: i2, image: busybox}\n"                                                         \
        "  containers:\n"                                                                          \
        "  - {name: a1, image: busybox}\n"                                                         \
        "  - {name: a2, image: busybox}\n"

#define SIDECAR_POD(policy)                                                                        \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n"                               \
        "  restartPolicy: " policy "\n"                                                            \
        "  initContainers:\n"                                                                      \
        "  - {name: sc1, image: busybox, restartPolicy: Always}\n"                                 \
        "  - {name: i1, image: busybox}\n"                                                         \
        "  - {name: sc2, image: busybox, restartPolicy: Always}\n"                                 \
        "  containers:\n"                                                                          \
        "  - {name: a1, image: busybox}\n"                                                         \
        "  - {name: a2, image: busybox}\n"

static void test_sandbox(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, INIT_POD("Always"));

        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_true(a->create_sandbox);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 0);
        assert_false(a->pod_done);

        /* A failed creation is retried after its back-off, not before. */
        f.s.sandbox = SANDBOX_FAILED;
        backoff_sandbox_failed(&f.s, 100 * SEC);
        a = fx_compute(&f, 105 * SEC);
        assert_false(a->create_sandbox);
        assert_int_equal(a->next_wakeup, 110 * SEC);
        a = fx_compute(&f, 110 * SEC);
        assert_true(a->create_sandbox);

        fx_done(&f);
}

static const ContainerStartAction *find_prepare(const PodActions *a, const char *name) {
        for (size_t i = 0; i < a->n_prepare_starts; i++)
                if (strcmp(a->prepare_starts[i].name, name) == 0)
                        return &a->prepare_starts[i];
        return NULL;
}

/* While the sandbox is created (namespaces pinned, CNI ADD), the
 * first starts it will allow are offered for preparation, before the
 * network's result exists; once it is ready they are ordinary starts. */
static void test_prepare_during_sandbox(void **state) {
        (void)state;
        Fixture f;

        /* init containers: only the first one, as the ready sandbox starts it */
        fx_setup(&f, INIT_POD("Always"));
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_true(a->create_sandbox);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_prepare_starts, 1);
        assert_non_null(find_prepare(a, "i1"));
        assert_true(find_prepare(a, "i1")->is_init);
        /* the same after a failed sandbox, once its back-off passed */
        f.s.sandbox = SANDBOX_FAILED;
        f.s.sandbox_backoff_until = 110 * SEC;
        a = fx_compute(&f, 105 * SEC);
        assert_false(a->create_sandbox);
        assert_int_equal(a->n_prepare_starts, 0);
        a = fx_compute(&f, 111 * SEC);
        assert_true(a->create_sandbox);
        assert_non_null(find_prepare(a, "i1"));
        /* ready: started, nothing left to prepare */
        f.s.sandbox = SANDBOX_READY;
        a = fx_compute(&f, 112 * SEC);
        assert_non_null(find_start(a, "i1"));
        assert_int_equal(a->n_prepare_starts, 0);
        fx_done(&f);

        /* app containers all at once; a container whose config.json needs
         * the pod IP (env from status.podIP, a subPath) waits for it */
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n"
                     "  volumes: [{name: v, emptyDir: {}}]\n"
                     "  containers:\n"
                     "  - {name: a1, image: busybox}\n"
                     "  - name: a2\n    image: busybox\n    env:\n"
                     "    - name: IP\n      valueFrom: {fieldRef: {fieldPath: status.podIP}}\n"
                     "  - name: a3\n    image: busybox\n"
                     "    volumeMounts: [{name: v, mountPath: /x, subPath: s}]\n"
                     "  - name: a4\n    image: busybox\n    env:\n"
                     "    - name: NAME\n      valueFrom: {fieldRef: {fieldPath: metadata.name}}\n");
        a = fx_compute(&f, 100 * SEC);
        assert_true(a->create_sandbox);
        assert_int_equal(a->n_prepare_starts, 2);
        assert_non_null(find_prepare(a, "a1"));
        assert_non_null(find_prepare(a, "a4"));
        assert_null(find_prepare(a, "a2"));
        assert_null(find_prepare(a, "a3"));
        fx_done(&f);

        /* a pod held back by admission prepares nothing */
        fx_setup(&f, INIT_POD("Always"));
        f.s.wait_reason = strdup("WaitingForPods");
        a = fx_compute(&f, 100 * SEC);
        assert_false(a->create_sandbox);
        assert_int_equal(a->n_prepare_starts, 0);
        fx_done(&f);
}

static void test_init_order(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, INIT_POD("Always"));
        f.s.sandbox = SANDBOX_READY;

        /* Only the first init container starts. */
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_false(a->create_sandbox);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "i1");
        assert_true(a->starts[0].is_init);
        assert_int_equal(a->starts[0].index, 0);
        assert_false(a->starts[0].restart);
        /* App containers wait for initialization. */
        assert_non_null(find_waiting(a, "a1"));
        assert_string_equal(find_waiting(a, "a1")->reason, "PodInitializing");
        assert_int_equal(a->next_wakeup, USEC_INFINITY);

        /* Running: nothing to do. */
        set_running(C(&f, "i1"), true);
        free(C(&f, "a1")->waiting_reason);
        C(&f, "a1")->waiting_reason = strdup("PodInitializing");
        a = fx_compute(&f, 101 * SEC);
        assert_idle(a);
        assert_null(find_waiting(a, "a1")); /* already set: no update */

        /* Exited 0: the next one. */
        set_exited(C(&f, "i1"), 0);
        a = fx_compute(&f, 102 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "i2");
        assert_int_equal(a->starts[0].index, 1);

        /* All init done: every app container at once. */
        set_exited(C(&f, "i2"), 0);
        a = fx_compute(&f, 103 * SEC);
        assert_int_equal(a->n_starts, 2);
        assert_string_equal(a->starts[0].name, "a1");
        assert_false(a->starts[0].is_init);
        assert_int_equal(a->starts[0].index, 0);
        assert_string_equal(a->starts[1].name, "a2");
        assert_int_equal(a->starts[1].index, 1);

        /* Apps running: completed init containers are not restarted. */
        set_running(C(&f, "a1"), true);
        set_running(C(&f, "a2"), true);
        a = fx_compute(&f, 104 * SEC);
        assert_idle(a);

        fx_done(&f);
}

/* After a reboot the pod gets a new sandbox: apps that ran before (restart
 * counts, lastState) do not count as initialized; init containers first. */
static void test_init_rerun_after_reboot(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, INIT_POD("Always"));
        f.s.sandbox = SANDBOX_READY;
        f.s.init_rerun = true;
        C(&f, "a1")->has_last = true;
        C(&f, "a1")->restart_count = C(&f, "a1")->attempt = 3;
        C(&f, "i1")->restart_count = C(&f, "i1")->attempt = 0;
        C(&f, "i1")->has_last = true;
        C(&f, "i2")->has_last = true; /* a later init container ran before, too */

        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "i1");
        assert_null(find_start(a, "a1"));

        /* Without the new sandbox, the same history means initialized. */
        f.s.init_rerun = false;
        a = fx_compute(&f, 101 * SEC);
        assert_null(find_start(a, "i1"));
        assert_non_null(find_start(a, "a1"));

        /* Once init is done in the new sandbox, the apps start. */
        f.s.init_rerun = true;
        set_exited(C(&f, "i1"), 0);
        set_exited(C(&f, "i2"), 0);
        a = fx_compute(&f, 102 * SEC);
        assert_non_null(find_start(a, "a1"));
        assert_non_null(find_start(a, "a2"));
        fx_done(&f);
}

/* nanolet.io/wait-for holds the first start: no sandbox, every container
 * waiting with the reason the worker set; cleared, the pod starts. */
static void test_wait_for_gate(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: api\n  namespace: kube-system\n"
                     "  annotations: {nanolet.io/wait-for: 'etcd, default/db'}\n"
                     "spec:\n  containers:\n  - {name: a, image: busybox}\n");
        _cleanup_strv_free_ char **targets = NULL;
        assert_int_equal(pod_wait_for_targets(f.objs[0]->pod, &targets), 0);
        assert_int_equal(strv_length(targets), 2);
        assert_string_equal(targets[0], "kube-system/etcd");
        assert_string_equal(targets[1], "default/db");

        f.s.wait_reason = strdup("WaitingForPods");
        f.s.wait_message = strdup("waiting for kube-system/etcd to be Ready");
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_false(a->create_sandbox);
        assert_int_equal(a->n_starts, 0);
        assert_non_null(find_waiting(a, "a"));
        assert_string_equal(find_waiting(a, "a")->reason, "WaitingForPods");
        assert_string_equal(find_waiting(a, "a")->message,
                            "waiting for kube-system/etcd to be Ready");

        free(f.s.wait_reason);
        free(f.s.wait_message);
        f.s.wait_reason = f.s.wait_message = NULL;
        a = fx_compute(&f, 101 * SEC);
        assert_true(a->create_sandbox);
        fx_done(&f);

        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: plain\n"
                     "spec:\n  containers:\n  - {name: a, image: busybox}\n");
        targets = strv_free(targets);
        assert_int_equal(pod_wait_for_targets(f.objs[0]->pod, &targets), 0);
        assert_null(targets);
        fx_done(&f);
}

static void test_init_failed_never(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Never"));
        f.s.sandbox = SANDBOX_READY;
        set_running(C(&f, "sc1"), true);
        set_exited(C(&f, "i1"), 3);

        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_true(a->kill_pod);
        assert_int_equal(a->kill_pod_reason, KILL_REASON_INIT_FAILED);
        assert_int_equal(a->phase, POD_PHASE_FAILED);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 1);
        assert_string_equal(a->kills[0].name, "sc1");
        assert_false(a->pod_done);

        set_exited(C(&f, "sc1"), 137);
        a = fx_compute(&f, 101 * SEC);
        assert_int_equal(a->n_kills, 0);
        assert_int_equal(a->n_starts, 0);
        assert_true(a->pod_done);
        assert_int_equal(a->phase, POD_PHASE_FAILED);

        fx_done(&f);
}

/* An exit after an earlier one (kubelet restarts the first at once): the
 * container waits its 10 s window. */
static void crashed_again(ContainerState *c, usec_t now) {
        if (c->backoff_window == 0)
                c->backoff_window = BACKOFF_INITIAL_USEC;
        backoff_on_exit(c, now);
}

static void test_init_failed_restart(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, INIT_POD("Always"));
        f.s.sandbox = SANDBOX_READY;
        ContainerState *i1 = C(&f, "i1");
        i1->running_since = 90 * SEC;
        set_exited(i1, 1);
        crashed_again(i1, 100 * SEC);

        /* Before the back-off expires: CrashLoopBackOff and a wake-up. */
        PodActions *a = fx_compute(&f, 105 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_false(a->kill_pod);
        assert_int_equal(a->next_wakeup, 110 * SEC);
        const ContainerWaitingUpdate *w = find_waiting(a, "i1");
        assert_non_null(w);
        assert_string_equal(w->reason, "CrashLoopBackOff");
        char expect[256];
        snprintf(expect, sizeof(expect),
                 "back-off 10s restarting failed container=i1 pod=web-node1_default(%s)", f.s.uid);
        assert_string_equal(w->message, expect);
        assert_null(find_start(a, "i2"));

        /* Once expired: the same init container again, nothing after it. */
        a = fx_compute(&f, 110 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "i1");
        assert_true(a->starts[0].restart);

        /* Second crash: 20 s, message follows. */
        i1->running_since = 111 * SEC;
        backoff_on_exit(i1, 112 * SEC);
        a = fx_compute(&f, 113 * SEC);
        assert_int_equal(a->next_wakeup, 132 * SEC);
        assert_non_null(strstr(find_waiting(a, "i1")->message, "back-off 20s restarting"));

        fx_done(&f);
}

static void test_sidecar_gates_next_init(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Never"));
        f.s.sandbox = SANDBOX_READY;

        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "sc1");

        /* Running but not started (startupProbe pending): wait. */
        set_running(C(&f, "sc1"), false);
        a = fx_compute(&f, 101 * SEC);
        assert_idle(a);

        /* Started: the next init container starts while the sidecar runs. */
        C(&f, "sc1")->started = true;
        a = fx_compute(&f, 102 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "i1");
        assert_int_equal(a->n_kills, 0);

        /* The sidecar exits while i1 runs: restarted regardless of the pod's
         * restartPolicy Never, after its back-off, without blocking i1. */
        set_running(C(&f, "i1"), true);
        set_exited(C(&f, "sc1"), 1);
        crashed_again(C(&f, "sc1"), 103 * SEC);
        a = fx_compute(&f, 104 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_false(a->kill_pod);
        assert_string_equal(find_waiting(a, "sc1")->reason, "CrashLoopBackOff");
        assert_int_equal(a->next_wakeup, 113 * SEC);
        a = fx_compute(&f, 113 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "sc1");
        assert_true(a->starts[0].restart);

        /* i1 done, sc1 back: sc2 starts; apps wait for sc2 to have started. */
        set_running(C(&f, "sc1"), true);
        set_exited(C(&f, "i1"), 0);
        a = fx_compute(&f, 114 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "sc2");
        set_running(C(&f, "sc2"), false);
        a = fx_compute(&f, 115 * SEC);
        assert_idle(a);
        C(&f, "sc2")->started = true;
        a = fx_compute(&f, 116 * SEC);
        assert_int_equal(a->n_starts, 2);
        assert_non_null(find_start(a, "a1"));
        assert_non_null(find_start(a, "a2"));

        fx_done(&f);
}

static void test_sidecar_restart_after_init(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("OnFailure"));
        f.s.sandbox = SANDBOX_READY;
        set_running(C(&f, "sc1"), true);
        set_exited(C(&f, "i1"), 0);
        set_exited(C(&f, "sc2"), 0); /* even exit 0: a sidecar always restarts */
        crashed_again(C(&f, "sc2"), 200 * SEC);
        set_running(C(&f, "a1"), true);
        set_running(C(&f, "a2"), true);

        PodActions *a = fx_compute(&f, 205 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->next_wakeup, 210 * SEC);
        a = fx_compute(&f, 210 * SEC);
        assert_int_equal(a->n_starts, 1);
        assert_string_equal(a->starts[0].name, "sc2");
        assert_true(a->starts[0].is_init);
        assert_int_equal(a->starts[0].index, 2);
        /* Completed regular init containers stay completed. */
        assert_null(find_start(a, "i1"));

        fx_done(&f);
}

typedef struct AppExitRow {
        const char *policy;
        int exit_code;
        bool restart;
} AppExitRow;

static void test_app_exit_table(void **state) {
        (void)state;
        static const AppExitRow rows[] = {
                { "Always", 0, true },    { "Always", 1, true },      { "OnFailure", 0, false },
                { "OnFailure", 1, true }, { "OnFailure", 137, true }, { "Never", 0, false },
                { "Never", 1, false },
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char yaml[512];
                snprintf(yaml, sizeof(yaml),
                         "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                         "  restartPolicy: %s\n  containers:\n"
                         "  - {name: a1, image: busybox}\n  - {name: a2, image: busybox}\n",
                         rows[i].policy);
                Fixture f;
                fx_setup(&f, yaml);
                f.s.sandbox = SANDBOX_READY;
                set_running(C(&f, "a2"), true);
                set_exited(C(&f, "a1"), rows[i].exit_code);
                crashed_again(C(&f, "a1"), 100 * SEC);

                /* In back-off: never started early. */
                PodActions *a = fx_compute(&f, 101 * SEC);
                assert_int_equal(a->n_starts, 0);
                assert_int_equal(a->next_wakeup, rows[i].restart ? 110 * SEC : USEC_INFINITY);
                assert_int_equal(find_waiting(a, "a1") != NULL, rows[i].restart);

                a = fx_compute(&f, 110 * SEC);
                if (rows[i].restart != (find_start(a, "a1") != NULL))
                        fail_msg("row %zu (%s, exit %d): restart expected %d", i, rows[i].policy,
                                 rows[i].exit_code, rows[i].restart);
                if (rows[i].restart)
                        assert_true(find_start(a, "a1")->restart);
                assert_false(a->kill_pod); /* a2 still runs */
                fx_done(&f);
        }
}

static void test_stale_crashloop_cleared(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, INIT_POD("OnFailure"));
        f.s.sandbox = SANDBOX_READY;
        set_exited(C(&f, "i1"), 0);
        set_exited(C(&f, "i2"), 0);
        set_running(C(&f, "a2"), true);
        ContainerState *a1 = C(&f, "a1");
        set_exited(a1, 0); /* OnFailure + exit 0: done */
        a1->waiting_reason = strdup("CrashLoopBackOff");

        PodActions *a = fx_compute(&f, 100 * SEC);
        const ContainerWaitingUpdate *w = find_waiting(a, "a1");
        assert_non_null(w);
        assert_null(w->reason);
        assert_null(find_start(a, "a1"));

        fx_done(&f);
}

static void test_kill_requested(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  terminationGracePeriodSeconds: 40\n"
                     "  containers:\n"
                     "  - name: a1\n    image: busybox\n"
                     "    livenessProbe:\n      exec: {command: [\"true\"]}\n"
                     "      terminationGracePeriodSeconds: 5\n"
                     "  - {name: a2, image: busybox}\n");
        f.s.sandbox = SANDBOX_READY;
        set_running(C(&f, "a1"), true);
        set_running(C(&f, "a2"), true);
        C(&f, "a1")->kill_requested = true;
        C(&f, "a1")->kill_reason = strdup("Container a1 failed liveness probe");
        C(&f, "a2")->kill_requested = true;

        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_false(a->kill_pod);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 2);
        const ContainerKillAction *k = find_kill(a, "a1");
        assert_int_equal(k->reason, KILL_REASON_UNHEALTHY);
        assert_string_equal(k->message, "Container a1 failed liveness probe, will be restarted");
        assert_int_equal(k->grace_period_seconds, 5); /* the probe's override */
        k = find_kill(a, "a2");
        assert_int_equal(k->grace_period_seconds, 40);
        assert_non_null(strstr(k->message, "a2"));

        /* Once dead it restarts per policy (Always), with back-off. */
        set_exited(C(&f, "a1"), 137);
        C(&f, "a1")->kill_requested = false;
        crashed_again(C(&f, "a1"), 101 * SEC);
        a = fx_compute(&f, 111 * SEC);
        assert_non_null(find_start(a, "a1"));

        fx_done(&f);
}

/* A probe's kill during initialization: of the running regular init
 * container, and of a sidecar, started or not, that gates the next one or
 * runs behind later ones. Nothing after the killed one starts. */
static void test_kill_requested_init(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Always"));
        f.s.sandbox = SANDBOX_READY;

        set_running(C(&f, "sc1"), false);
        C(&f, "sc1")->kill_requested = true;
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 1);
        assert_int_equal(find_kill(a, "sc1")->reason, KILL_REASON_UNHEALTHY);

        /* Started, but the kill comes first: i1 waits for the restart. */
        set_running(C(&f, "sc1"), true);
        a = fx_compute(&f, 101 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 1);
        assert_non_null(find_kill(a, "sc1"));

        C(&f, "sc1")->kill_requested = false;
        set_running(C(&f, "i1"), true);
        C(&f, "i1")->kill_requested = true;
        a = fx_compute(&f, 102 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 1);
        assert_int_equal(find_kill(a, "i1")->reason, KILL_REASON_UNHEALTHY);

        /* Behind a later init container, a sidecar is only kept running:
         * its kill does not hold the next one back. */
        C(&f, "i1")->kill_requested = false;
        set_exited(C(&f, "i1"), 0);
        C(&f, "sc1")->kill_requested = true;
        a = fx_compute(&f, 103 * SEC);
        assert_non_null(find_kill(a, "sc1"));
        assert_non_null(find_start(a, "sc2"));
        assert_int_equal(a->n_kills, 1);
        assert_int_equal(a->n_starts, 1);

        fx_done(&f);
}

static void test_terminating_order(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Always"));
        f.s.sandbox = SANDBOX_READY;
        set_running(C(&f, "sc1"), true);
        set_exited(C(&f, "i1"), 0);
        set_running(C(&f, "sc2"), true);
        set_running(C(&f, "a1"), true);
        C(&f, "a2")->state = CONTAINER_CREATED;
        f.s.terminating = true;

        /* Stage 1: the app containers, together. */
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_true(a->kill_pod);
        assert_int_equal(a->kill_pod_reason, KILL_REASON_TERMINATING);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 2);
        assert_non_null(find_kill(a, "a1"));
        assert_non_null(find_kill(a, "a2"));
        assert_int_equal(a->kills[0].grace_period_seconds, 30);
        assert_false(a->pod_done);

        /* Stage 2: the last sidecar. */
        set_exited(C(&f, "a1"), 143);
        C(&f, "a2")->state = CONTAINER_NONE;
        a = fx_compute(&f, 101 * SEC);
        assert_int_equal(a->n_kills, 1);
        assert_string_equal(a->kills[0].name, "sc2");
        assert_int_equal(a->n_starts, 0); /* no restarts while terminating */

        /* Stage 3: the first sidecar. */
        set_exited(C(&f, "sc2"), 143);
        a = fx_compute(&f, 102 * SEC);
        assert_int_equal(a->n_kills, 1);
        assert_string_equal(a->kills[0].name, "sc1");

        set_exited(C(&f, "sc1"), 143);
        a = fx_compute(&f, 103 * SEC);
        assert_int_equal(a->n_kills, 0);
        assert_true(a->pod_done);
        assert_false(a->create_sandbox);

        fx_done(&f);
}

static void test_terminating_during_init(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Always"));
        f.s.sandbox = SANDBOX_READY;
        set_running(C(&f, "sc1"), true);
        set_running(C(&f, "i1"), true);
        f.s.terminating = true;

        /* The running init container goes first: it may depend on sc1. */
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_int_equal(a->n_kills, 1);
        assert_string_equal(a->kills[0].name, "i1");
        set_exited(C(&f, "i1"), 137);
        a = fx_compute(&f, 101 * SEC);
        assert_int_equal(a->n_kills, 1);
        assert_string_equal(a->kills[0].name, "sc1");

        /* A pod never started is done at once. */
        fx_done(&f);
        fx_setup(&f, SIDECAR_POD("Always"));
        f.s.terminating = true;
        a = fx_compute(&f, 100 * SEC);
        assert_true(a->pod_done);
        assert_false(a->create_sandbox);
        fx_done(&f);
}

static void test_deadline(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  activeDeadlineSeconds: 30\n"
                     "  terminationGracePeriodSeconds: 1\n"
                     "  containers:\n  - {name: a1, image: busybox}\n");
        f.s.sandbox = SANDBOX_READY;
        f.s.start_monotonic = 10 * SEC;
        set_running(C(&f, "a1"), true);

        PodActions *a = fx_compute(&f, 20 * SEC);
        assert_idle(a);
        assert_int_equal(a->next_wakeup, 40 * SEC);

        a = fx_compute(&f, 40 * SEC);
        assert_true(a->kill_pod);
        assert_true(a->deadline_exceeded);
        assert_int_equal(a->kill_pod_reason, KILL_REASON_DEADLINE_EXCEEDED);
        assert_int_equal(a->phase, POD_PHASE_FAILED);
        assert_int_equal(a->n_kills, 1);
        assert_int_equal(a->kills[0].reason, KILL_REASON_DEADLINE_EXCEEDED);
        assert_int_equal(a->kills[0].grace_period_seconds, 2); /* kubelet's minimum */

        /* Recorded: no restart afterwards even with restartPolicy Always. */
        f.s.deadline_exceeded = true;
        set_exited(C(&f, "a1"), 137);
        a = fx_compute(&f, 41 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_true(a->pod_done);
        assert_int_equal(a->phase, POD_PHASE_FAILED);

        fx_done(&f);
}

/* Rejected at admission (SysctlForbidden): Failed, and nothing is made or
 * started, not even the sandbox; removal still finishes the pod. */
static void test_rejected(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  containers:\n  - {name: a1, image: busybox}\n");
        f.s.rejected = true;
        PodActions *a = fx_compute(&f, 20 * SEC);
        assert_false(a->create_sandbox);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_kills, 0);
        assert_false(a->pod_done);
        assert_int_equal(a->phase, POD_PHASE_FAILED);
        assert_int_equal(pod_phase(&f.s), POD_PHASE_FAILED);
        f.s.terminating = true;
        a = fx_compute(&f, 21 * SEC);
        assert_true(a->pod_done);
        fx_done(&f);
}

static void test_evicted(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  terminationGracePeriodSeconds: 5\n"
                     "  containers:\n  - {name: a1, image: busybox}\n");
        f.s.sandbox = SANDBOX_READY;
        set_running(C(&f, "a1"), true);
        f.s.evicted = true;
        PodActions *a = fx_compute(&f, 20 * SEC);
        assert_true(a->kill_pod);
        assert_int_equal(a->kill_pod_reason, KILL_REASON_EVICTED);
        assert_string_equal(kill_reason_to_string(KILL_REASON_EVICTED), "Evicted");
        assert_int_equal(a->phase, POD_PHASE_FAILED);
        assert_int_equal(a->n_kills, 1);
        assert_int_equal(a->kills[0].grace_period_seconds, 5);
        assert_int_equal(pod_phase(&f.s), POD_PHASE_FAILED);

        /* Stopped: no restart while evicted, even with restartPolicy Always. */
        set_exited(C(&f, "a1"), 137);
        a = fx_compute(&f, 30 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_true(a->pod_done);

        /* Un-evicted with a new sandbox to make: the sandbox first, then the
         * container restarts per its policy. */
        f.s.evicted = false;
        f.s.sandbox = SANDBOX_NONE;
        a = fx_compute(&f, 31 * SEC);
        assert_true(a->create_sandbox);
        assert_int_equal(a->n_starts, 0);
        fx_done(&f);
}

static void test_completion_stops_sidecars(void **state) {
        (void)state;
        static const struct {
                int a2_exit;
                PodPhase phase;
        } rows[] = { { 0, POD_PHASE_SUCCEEDED }, { 2, POD_PHASE_FAILED } };

        for (size_t i = 0; i < 2; i++) {
                Fixture f;
                fx_setup(&f, SIDECAR_POD("Never"));
                f.s.sandbox = SANDBOX_READY;
                set_running(C(&f, "sc1"), true);
                set_exited(C(&f, "i1"), 0);
                set_running(C(&f, "sc2"), true);
                set_exited(C(&f, "a1"), 0);
                set_exited(C(&f, "a2"), rows[i].a2_exit);

                PodActions *a = fx_compute(&f, 100 * SEC);
                assert_true(a->kill_pod);
                assert_int_equal(a->kill_pod_reason, KILL_REASON_POD_COMPLETED);
                assert_int_equal(a->phase, rows[i].phase);
                assert_int_equal(a->n_kills, 1);
                assert_string_equal(a->kills[0].name, "sc2");
                assert_int_equal(a->n_starts, 0);

                set_exited(C(&f, "sc2"), 143);
                a = fx_compute(&f, 101 * SEC);
                assert_int_equal(a->n_kills, 1);
                assert_string_equal(a->kills[0].name, "sc1");
                assert_int_equal(a->n_starts, 0); /* the sidecar is not restarted */

                set_exited(C(&f, "sc1"), 143);
                a = fx_compute(&f, 102 * SEC);
                assert_true(a->pod_done);
                assert_int_equal(a->phase, rows[i].phase);
                fx_done(&f);
        }
}

static void test_created_is_in_progress(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, INIT_POD("Always"));
        f.s.sandbox = SANDBOX_READY;
        C(&f, "i1")->state = CONTAINER_CREATED;
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_idle(a);
        fx_done(&f);
}

static void test_create_error_waits(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  containers:\n  - {name: a1, image: busybox}\n");
        f.s.sandbox = SANDBOX_READY;
        ContainerState *c = C(&f, "a1");
        /* The worker failed to create it: reason kept, retried after back-off. */
        c->waiting_reason = strdup("CreateContainerError");
        backoff_on_failed_start(c, 100 * SEC);
        PodActions *a = fx_compute(&f, 105 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->n_waiting, 0);
        assert_int_equal(a->next_wakeup, 110 * SEC);
        a = fx_compute(&f, 110 * SEC);
        assert_non_null(find_start(a, "a1"));
        assert_false(find_start(a, "a1")->restart);
        fx_done(&f);
}

static void test_image_pull_back_off(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  containers:\n  - {name: a1, image: reg.example:5000/app:1}\n");
        f.s.sandbox = SANDBOX_READY;
        ContainerState *c = C(&f, "a1");
        /* The pull failed (ErrImagePull, set by the worker): while the
         * back-off runs the container shows ImagePullBackOff with the cause. */
        c->waiting_reason = strdup("ErrImagePull");
        c->waiting_message = strdup("401 Unauthorized: authentication required");
        backoff_on_failed_start(c, 100 * SEC);
        PodActions *a = fx_compute(&f, 101 * SEC);
        assert_int_equal(a->n_starts, 0);
        assert_int_equal(a->next_wakeup, 110 * SEC);
        const ContainerWaitingUpdate *w = find_waiting(a, "a1");
        assert_non_null(w);
        assert_string_equal(w->reason, "ImagePullBackOff");
        assert_string_equal(w->message, "Back-off pulling image \"reg.example:5000/app:1\": "
                                        "ErrImagePull: 401 Unauthorized: authentication required");
        /* Once shown, it stays as it is (no update, no new event). */
        free(c->waiting_reason);
        free(c->waiting_message);
        c->waiting_reason = strdup("ImagePullBackOff");
        c->waiting_message = strdup(w->message);
        a = fx_compute(&f, 105 * SEC);
        assert_int_equal(a->n_waiting, 0);
        /* Expired: the start (and with it the pull) is tried again. */
        a = fx_compute(&f, 110 * SEC);
        assert_non_null(find_start(a, "a1"));
        fx_done(&f);
}

/* An image volume's failed pull: the message names that image, not the
 * container's. */
static void test_image_volume_pull_back_off(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  containers:\n  - {name: a1, image: reg.example:5000/app:1}\n");
        f.s.sandbox = SANDBOX_READY;
        ContainerState *c = C(&f, "a1");
        c->waiting_reason = strdup("ErrImagePull");
        c->waiting_message = strdup("image volume \"data\": failed to pull image "
                                    "\"reg.example:5000/data:2\": not found");
        c->pull_image = strdup("reg.example:5000/data:2");
        backoff_on_failed_start(c, 100 * SEC);
        PodActions *a = fx_compute(&f, 101 * SEC);
        const ContainerWaitingUpdate *w = find_waiting(a, "a1");
        assert_non_null(w);
        assert_string_equal(w->reason, "ImagePullBackOff");
        assert_string_equal(w->message,
                            "Back-off pulling image \"reg.example:5000/data:2\": ErrImagePull: "
                            "image volume \"data\": failed to pull image "
                            "\"reg.example:5000/data:2\": not found");
        fx_done(&f);
}

static void test_first_restart_at_once(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
                     "  containers:\n  - {name: a1, image: busybox}\n");
        f.s.sandbox = SANDBOX_READY;
        ContainerState *c = C(&f, "a1");
        /* kubelet: the first exit is restarted at once, no CrashLoopBackOff. */
        c->running_since = 99 * SEC;
        set_exited(c, 1);
        backoff_on_exit(c, 100 * SEC);
        PodActions *a = fx_compute(&f, 100 * SEC);
        assert_non_null(find_start(a, "a1"));
        assert_true(find_start(a, "a1")->restart);
        assert_null(find_waiting(a, "a1"));
        /* The second exit waits 10 s, in CrashLoopBackOff. */
        c->running_since = 100 * SEC;
        backoff_on_exit(c, 101 * SEC);
        a = fx_compute(&f, 101 * SEC);
        assert_null(find_start(a, "a1"));
        assert_string_equal(find_waiting(a, "a1")->reason, "CrashLoopBackOff");
        assert_int_equal(a->next_wakeup, 111 * SEC);
        fx_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_restart_at_once),
                cmocka_unit_test(test_image_pull_back_off),
                cmocka_unit_test(test_image_volume_pull_back_off),
                cmocka_unit_test(test_sandbox),
                cmocka_unit_test(test_prepare_during_sandbox),
                cmocka_unit_test(test_init_order),
                cmocka_unit_test(test_init_rerun_after_reboot),
                cmocka_unit_test(test_wait_for_gate),
                cmocka_unit_test(test_init_failed_never),
                cmocka_unit_test(test_init_failed_restart),
                cmocka_unit_test(test_sidecar_gates_next_init),
                cmocka_unit_test(test_sidecar_restart_after_init),
                cmocka_unit_test(test_app_exit_table),
                cmocka_unit_test(test_stale_crashloop_cleared),
                cmocka_unit_test(test_kill_requested),
                cmocka_unit_test(test_kill_requested_init),
                cmocka_unit_test(test_terminating_order),
                cmocka_unit_test(test_terminating_during_init),
                cmocka_unit_test(test_deadline),
                cmocka_unit_test(test_evicted),
                cmocka_unit_test(test_rejected),
                cmocka_unit_test(test_completion_stops_sidecars),
                cmocka_unit_test(test_created_is_in_progress),
                cmocka_unit_test(test_create_error_waits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
