/* Pod status: phase (kubelet's getPhase incl. sidecars), conditions and
 * their transition times, QoS classes, the v1 Pod JSON shape, and the
 * atomic status file. */
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "fileio.h"
#include "manifest.h"
#include "pod-status.h"
#include "pod-fixture.h"

#define SEC USEC_PER_SEC

typedef struct Fixture {
        ManifestObject **objs;
        size_t n;
        PodState s;
} Fixture;

static void fx_setup(Fixture *f, const char *yaml) {
        *f = (Fixture){};
        pod_fixture_parse(yaml, &f->objs, &f->n);
        assert_int_equal(pod_state_init(&f->s, f->objs[0]->pod, f->objs[0]->uid), 0);
}

static void fx_done(Fixture *f) {
        pod_state_done(&f->s);
        manifest_objects_free(f->objs, f->n);
}

static ContainerState *C(Fixture *f, const char *name) {
        ContainerState *c = pod_state_find_container(&f->s, name);
        assert_non_null(c);
        return c;
}

#define SIDECAR_POD(policy)                                                                        \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {app: web}\nspec:\n"         \
        "  restartPolicy: " policy "\n"                                                            \
        "  initContainers:\n"                                                                      \
        "  - {name: sc, image: busybox, restartPolicy: Always}\n"                                  \
        "  - {name: i1, image: busybox}\n"                                                         \
        "  containers:\n"                                                                          \
        "  - {name: a1, image: busybox}\n"                                                         \
        "  - {name: a2, image: busybox}\n"

/* "name:STATE ..." with STATE one of N (none), C (created), R (running, not
 * started), R+ (running, started and ready), X<code> (exited), W<code>
 * (exited, waiting to restart: CrashLoopBackOff). */
static void apply_states(Fixture *f, const char *spec) {
        char *copy = strdup(spec), *save = NULL;
        assert_non_null(copy);
        for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                char *colon = strchr(tok, ':');
                assert_non_null(colon);
                *colon = 0;
                ContainerState *c = C(f, tok);
                const char *st = colon + 1;
                switch (st[0]) {
                case 'N':
                        c->state = CONTAINER_NONE;
                        break;
                case 'C':
                        c->state = CONTAINER_CREATED;
                        break;
                case 'R':
                        c->state = CONTAINER_RUNNING;
                        c->started = c->ready = st[1] == '+';
                        c->started_at = 1700000000 * SEC;
                        break;
                case 'X':
                case 'W':
                        c->state = CONTAINER_EXITED;
                        c->exit_code = atoi(st + 1);
                        if (st[0] == 'W') {
                                c->waiting_reason = strdup("CrashLoopBackOff");
                                c->restart_count = 1;
                        }
                        break;
                default:
                        fail_msg("bad state %s", st);
                }
        }
        free(copy);
}

typedef struct PhaseRow {
        const char *policy;
        const char *states;
        PodPhase phase;
} PhaseRow;

static void test_phase_table(void **state) {
        (void)state;
        static const PhaseRow rows[] = {
                { "Always", "", POD_PHASE_PENDING },
                { "Always", "sc:R", POD_PHASE_PENDING },              /* sidecar not started */
                { "Always", "sc:R+ i1:R", POD_PHASE_PENDING },        /* init running */
                { "Never", "sc:R+ i1:X1", POD_PHASE_FAILED },         /* init failed, Never */
                { "OnFailure", "sc:R+ i1:W1", POD_PHASE_PENDING },    /* init restarting */
                { "Always", "sc:R+ i1:X0 a1:R+", POD_PHASE_PENDING }, /* a2 still waiting */
                { "Always", "sc:R+ i1:X0 a1:R+ a2:R", POD_PHASE_RUNNING },
                { "Always", "sc:X1 i1:X0 a1:R+ a2:R+", POD_PHASE_RUNNING }, /* sidecar down */
                { "Always", "sc:R i1:X0 a1:R+ a2:R+", POD_PHASE_RUNNING },  /* sidecar restarting */
                { "Always", "sc:W1 i1:X0 a1:W1 a2:W1", POD_PHASE_RUNNING }, /* all restarting */
                { "Never", "sc:R+ i1:X0 a1:X0 a2:X0", POD_PHASE_RUNNING },  /* sidecar still up */
                { "Never", "sc:X137 i1:X0 a1:X0 a2:X0", POD_PHASE_SUCCEEDED },
                { "Never", "sc:X0 i1:X0 a1:X0 a2:X1", POD_PHASE_FAILED },
                { "OnFailure", "sc:X0 i1:X0 a1:X0 a2:W1", POD_PHASE_RUNNING },
                { "OnFailure", "sc:X0 i1:X0 a1:X0 a2:X0", POD_PHASE_SUCCEEDED },
                { "Always", "sc:X0 i1:X0 a1:X0 a2:X0", POD_PHASE_RUNNING },
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char yaml[1024];
                snprintf(yaml, sizeof(yaml), SIDECAR_POD("%s"), rows[i].policy);
                Fixture f;
                fx_setup(&f, yaml);
                apply_states(&f, rows[i].states);
                PodPhase p = pod_phase(&f.s);
                if (p != rows[i].phase)
                        fail_msg("row %zu (%s: %s): got %s, want %s", i, rows[i].policy,
                                 rows[i].states, pod_phase_to_string(p),
                                 pod_phase_to_string(rows[i].phase));
                fx_done(&f);
        }

        /* activeDeadlineSeconds overrides everything. */
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Always"));
        apply_states(&f, "sc:R+ i1:X0 a1:R+ a2:R+");
        f.s.deadline_exceeded = true;
        assert_int_equal(pod_phase(&f.s), POD_PHASE_FAILED);
        fx_done(&f);

        assert_string_equal(pod_phase_to_string(POD_PHASE_SUCCEEDED), "Succeeded");
        assert_int_equal(pod_phase_from_string("Running"), POD_PHASE_RUNNING);
        assert_int_equal(pod_phase_from_string("running"), _POD_PHASE_INVALID);
}

static void test_conditions(void **state) {
        (void)state;
        Fixture f;
        PodCondition c[_POD_CONDITION_TYPE_MAX];
        fx_setup(&f, SIDECAR_POD("Always"));

        assert_int_equal(pod_conditions_compute(&f.s, c), 0);
        assert_false(c[POD_CONDITION_READY_TO_START_CONTAINERS].status);
        assert_false(c[POD_CONDITION_INITIALIZED].status);
        assert_string_equal(c[POD_CONDITION_INITIALIZED].reason, "ContainersNotInitialized");
        assert_string_equal(c[POD_CONDITION_INITIALIZED].message,
                            "containers with incomplete status: [sc i1]");
        assert_false(c[POD_CONDITION_CONTAINERS_READY].status);
        assert_string_equal(c[POD_CONDITION_CONTAINERS_READY].reason, "ContainersNotReady");
        assert_string_equal(c[POD_CONDITION_CONTAINERS_READY].message,
                            "containers with unready status: [sc a1 a2]");
        assert_false(c[POD_CONDITION_READY].status);
        assert_string_equal(c[POD_CONDITION_READY].message,
                            "containers with unready status: [sc a1 a2]");
        assert_true(c[POD_CONDITION_SCHEDULED].status);
        pod_conditions_done(c);

        /* Sidecar started, i1 done: initialized; a2 not ready. */
        f.s.sandbox = SANDBOX_READY;
        apply_states(&f, "sc:R+ i1:X0 a1:R+ a2:R");
        assert_int_equal(pod_conditions_compute(&f.s, c), 0);
        assert_true(c[POD_CONDITION_READY_TO_START_CONTAINERS].status);
        assert_true(c[POD_CONDITION_INITIALIZED].status);
        assert_null(c[POD_CONDITION_INITIALIZED].message);
        assert_false(c[POD_CONDITION_READY].status);
        assert_string_equal(c[POD_CONDITION_READY].message, "containers with unready status: [a2]");
        pod_conditions_done(c);

        /* Everything ready. */
        C(&f, "a2")->ready = true;
        assert_int_equal(pod_conditions_compute(&f.s, c), 0);
        for (int t = 0; t < _POD_CONDITION_TYPE_MAX; t++)
                assert_true(c[t].status);
        pod_conditions_done(c);

        /* A restarting sidecar after apps ran does not un-initialize. */
        apply_states(&f, "sc:W1");
        assert_int_equal(pod_conditions_compute(&f.s, c), 0);
        assert_true(c[POD_CONDITION_INITIALIZED].status);
        assert_false(c[POD_CONDITION_CONTAINERS_READY].status);
        pod_conditions_done(c);

        /* Transition times move only on flips. */
        apply_states(&f, "sc:R+");
        assert_int_equal(pod_status_update_conditions(&f.s, 1000 * SEC), 1);
        for (int t = 0; t < _POD_CONDITION_TYPE_MAX; t++)
                assert_int_equal(f.s.condition_transition[t], 1000 * SEC);
        assert_int_equal(pod_status_update_conditions(&f.s, 1001 * SEC), 0);
        C(&f, "a1")->ready = false;
        assert_int_equal(pod_status_update_conditions(&f.s, 1002 * SEC), 1);
        assert_int_equal(f.s.condition_transition[POD_CONDITION_READY], 1002 * SEC);
        assert_int_equal(f.s.condition_transition[POD_CONDITION_CONTAINERS_READY], 1002 * SEC);
        assert_int_equal(f.s.condition_transition[POD_CONDITION_INITIALIZED], 1000 * SEC);
        assert_false(f.s.condition_status[POD_CONDITION_READY]);
        fx_done(&f);

        /* Terminal phases. */
        fx_setup(&f, SIDECAR_POD("Never"));
        apply_states(&f, "sc:X0 i1:X0 a1:X0 a2:X0");
        assert_int_equal(pod_conditions_compute(&f.s, c), 0);
        assert_true(c[POD_CONDITION_INITIALIZED].status);
        assert_string_equal(c[POD_CONDITION_INITIALIZED].reason, "PodCompleted");
        assert_false(c[POD_CONDITION_READY].status);
        assert_string_equal(c[POD_CONDITION_READY].reason, "PodCompleted");
        pod_conditions_done(c);
        apply_states(&f, "a2:X1");
        assert_int_equal(pod_conditions_compute(&f.s, c), 0);
        assert_string_equal(c[POD_CONDITION_CONTAINERS_READY].reason, "PodFailed");
        pod_conditions_done(c);
        fx_done(&f);
}

typedef struct QosRow {
        const char *containers; /* YAML list items under "containers:" */
        PodQOSClass qos;
} QosRow;

static void test_qos(void **state) {
        (void)state;
        /* Examples from "Configure Quality of Service for Pods". */
        static const QosRow rows[] = {
                { "  - name: a\n    image: nginx\n    resources:\n"
                  "      limits: {memory: 200Mi, cpu: 700m}\n"
                  "      requests: {memory: 200Mi, cpu: 700m}\n",
                  POD_QOS_GUARANTEED },
                /* requests default to limits */
                { "  - name: a\n    image: nginx\n    resources:\n"
                  "      limits: {memory: 1Gi, cpu: '1'}\n",
                  POD_QOS_GUARANTEED },
                { "  - name: a\n    image: nginx\n    resources:\n"
                  "      limits: {memory: 200Mi}\n      requests: {memory: 100Mi}\n",
                  POD_QOS_BURSTABLE },
                { "  - name: a\n    image: nginx\n", POD_QOS_BEST_EFFORT },
                { "  - name: a\n    image: nginx\n"
                  "  - name: b\n    image: redis\n    resources:\n"
                  "      requests: {memory: 200Mi}\n",
                  POD_QOS_BURSTABLE },
                /* equal totals but one container without limits */
                { "  - name: a\n    image: nginx\n    resources:\n"
                  "      limits: {memory: 200Mi, cpu: 700m}\n"
                  "  - name: b\n    image: redis\n",
                  POD_QOS_BURSTABLE },
                /* cpu 0.7 == 700m */
                { "  - name: a\n    image: nginx\n    resources:\n"
                  "      limits: {memory: 1Gi, cpu: '0.7'}\n"
                  "      requests: {memory: 1024Mi, cpu: 700m}\n",
                  POD_QOS_GUARANTEED },
                /* only ephemeral-storage: not a QoS resource */
                { "  - name: a\n    image: nginx\n    resources:\n"
                  "      limits: {ephemeral-storage: 1Gi}\n",
                  POD_QOS_BEST_EFFORT },
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                char yaml[1024];
                snprintf(yaml, sizeof(yaml),
                         "apiVersion: v1\nkind: Pod\nmetadata:\n  name: q\nspec:\n"
                         "  containers:\n%s",
                         rows[i].containers);
                Fixture f;
                fx_setup(&f, yaml);
                PodQOSClass q = pod_qos_class(f.s.pod);
                if (q != rows[i].qos)
                        fail_msg("row %zu: got %s, want %s", i, pod_qos_class_to_string(q),
                                 pod_qos_class_to_string(rows[i].qos));
                fx_done(&f);
        }

        /* An init container without limits spoils Guaranteed. */
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: q\nspec:\n"
                     "  initContainers:\n  - {name: i, image: busybox}\n"
                     "  containers:\n  - name: a\n    image: nginx\n    resources:\n"
                     "      limits: {memory: 200Mi, cpu: 700m}\n");
        assert_int_equal(pod_qos_class(f.s.pod), POD_QOS_BURSTABLE);
        fx_done(&f);
}

static json_t *jpath(json_t *root, const char *path) {
        /* "a.b.0.c": object keys and array indexes. */
        char *copy = strdup(path), *save = NULL;
        json_t *j = root;
        for (char *tok = strtok_r(copy, ".", &save); tok && j; tok = strtok_r(NULL, ".", &save)) {
                if (json_is_array(j))
                        j = json_array_get(j, (size_t)atoi(tok));
                else
                        j = json_object_get(j, tok);
        }
        free(copy);
        return j;
}

static const char *jstr(json_t *root, const char *path) {
        json_t *j = jpath(root, path);
        if (!json_is_string(j))
                fail_msg("%s is not a string", path);
        return json_string_value(j);
}

static json_int_t jint(json_t *root, const char *path) {
        json_t *j = jpath(root, path);
        if (!json_is_integer(j))
                fail_msg("%s is not an integer", path);
        return json_integer_value(j);
}

static bool jbool(json_t *root, const char *path) {
        json_t *j = jpath(root, path);
        if (!json_is_boolean(j))
                fail_msg("%s is not a boolean", path);
        return json_is_true(j);
}

static void fill_json_state(Fixture *f) {
        PodState *s = &f->s;
        s->sandbox = SANDBOX_READY;
        s->start_time = 1714557600 * SEC; /* 2024-05-01T10:00:00Z */
        s->host_ip = strdup("192.168.1.10");
        s->pod_ip = strdup("10.88.0.5");

        ContainerState *sc = C(f, "sc");
        sc->state = CONTAINER_RUNNING;
        sc->started = sc->ready = true;
        sc->started_at = s->start_time + SEC;
        sc->container_id = strdup("uid-sc-0");
        sc->image_id = strdup("docker.io/library/busybox@sha256:abcd");

        ContainerState *i1 = C(f, "i1");
        i1->state = CONTAINER_EXITED;
        i1->exit_code = 0;
        i1->started_at = s->start_time + 2 * SEC;
        i1->finished_at = s->start_time + 3 * SEC;
        i1->container_id = strdup("uid-i1-0");

        ContainerState *a1 = C(f, "a1");
        a1->state = CONTAINER_RUNNING;
        a1->started = a1->ready = true;
        a1->started_at = s->start_time + 4 * SEC;
        a1->container_id = strdup("uid-a1-0");

        /* a2 crash-looping: waiting, with the exited attempt as lastState. */
        ContainerState *a2 = C(f, "a2");
        a2->state = CONTAINER_EXITED;
        a2->exit_code = 1;
        a2->exit_reason = strdup("Error");
        a2->restart_count = 3;
        a2->attempt = 3;
        a2->started_at = s->start_time + 5 * SEC;
        a2->finished_at = s->start_time + 6 * SEC;
        a2->container_id = strdup("uid-a2-3");
        a2->waiting_reason = strdup("CrashLoopBackOff");
        a2->waiting_message = strdup("back-off 40s restarting failed container=a2");
}

static void test_json_shape(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, SIDECAR_POD("Always"));
        fill_json_state(&f);
        assert_true(pod_status_update_conditions(&f.s, f.s.start_time) > 0);

        PodStatusContext ctx = {
                .canonical_json = f.objs[0]->canonical_json,
                .node_name = "node1",
        };
        json_t *pod = NULL;
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &pod), 0);

        /* Through text and back, as the client reads it. */
        char *text = json_dumps(pod, JSON_COMPACT);
        json_decref(pod);
        json_error_t err;
        json_t *j = json_loads(text, 0, &err);
        free(text);
        assert_non_null(j);

        assert_string_equal(jstr(j, "apiVersion"), "v1");
        assert_string_equal(jstr(j, "kind"), "Pod");
        assert_string_equal(jstr(j, "metadata.name"), "web-node1");
        assert_string_equal(jstr(j, "metadata.namespace"), "default");
        assert_string_equal(jstr(j, "metadata.uid"), f.s.uid);
        assert_string_equal(jstr(j, "metadata.labels.app"), "web");
        json_t *ann = jpath(j, "metadata.annotations");
        assert_true(json_is_object(ann));
        assert_string_equal(json_string_value(json_object_get(ann, "kubernetes.io/config.source")),
                            "file");
        assert_string_equal(jstr(j, "metadata.creationTimestamp"), "2024-05-01T10:00:00Z");
        assert_string_equal(jstr(j, "spec.nodeName"), "node1");
        assert_string_equal(jstr(j, "spec.containers.0.name"), "a1");
        assert_string_equal(jstr(j, "spec.restartPolicy"), "Always");

        assert_string_equal(jstr(j, "status.phase"), "Running");
        assert_string_equal(jstr(j, "status.qosClass"), "BestEffort");
        assert_string_equal(jstr(j, "status.hostIP"), "192.168.1.10");
        assert_string_equal(jstr(j, "status.hostIPs.0.ip"), "192.168.1.10");
        assert_string_equal(jstr(j, "status.podIP"), "10.88.0.5");
        assert_string_equal(jstr(j, "status.podIPs.0.ip"), "10.88.0.5");
        assert_string_equal(jstr(j, "status.startTime"), "2024-05-01T10:00:00Z");

        static const char *const types[] = { "PodReadyToStartContainers", "Initialized", "Ready",
                                             "ContainersReady", "PodScheduled" };
        json_t *conds = jpath(j, "status.conditions");
        assert_true(json_is_array(conds));
        assert_int_equal(json_array_size(conds), 5);
        for (size_t i = 0; i < 5; i++) {
                json_t *c = json_array_get(conds, i);
                assert_string_equal(jstr(c, "type"), types[i]);
                const char *st = jstr(c, "status");
                assert_true(strcmp(st, "True") == 0 || strcmp(st, "False") == 0);
                assert_string_equal(jstr(c, "lastTransitionTime"), "2024-05-01T10:00:00Z");
                assert_true(json_is_null(json_object_get(c, "lastProbeTime")));
        }
        assert_string_equal(jstr(j, "status.conditions.2.status"), "False");
        assert_string_equal(jstr(j, "status.conditions.2.reason"), "ContainersNotReady");
        assert_string_equal(jstr(j, "status.conditions.2.message"),
                            "containers with unready status: [a2]");

        /* init containers */
        assert_string_equal(jstr(j, "status.initContainerStatuses.0.name"), "sc");
        assert_true(jbool(j, "status.initContainerStatuses.0.started"));
        assert_string_equal(jstr(j, "status.initContainerStatuses.0.imageID"),
                            "docker.io/library/busybox@sha256:abcd");
        assert_string_equal(jstr(j, "status.initContainerStatuses.1.name"), "i1");
        assert_int_equal(jint(j, "status.initContainerStatuses.1.state.terminated.exitCode"), 0);
        assert_string_equal(jstr(j, "status.initContainerStatuses.1.state.terminated.reason"),
                            "Completed");
        assert_string_equal(jstr(j, "status.initContainerStatuses.1.state.terminated.containerID"),
                            "runc://uid-i1-0");
        assert_string_equal(jstr(j, "status.initContainerStatuses.1.state.terminated.startedAt"),
                            "2024-05-01T10:00:02Z");
        assert_false(jbool(j, "status.initContainerStatuses.1.ready"));

        /* app containers */
        assert_string_equal(jstr(j, "status.containerStatuses.0.name"), "a1");
        assert_string_equal(jstr(j, "status.containerStatuses.0.state.running.startedAt"),
                            "2024-05-01T10:00:04Z");
        assert_int_equal(jint(j, "status.containerStatuses.0.restartCount"), 0);
        assert_true(jbool(j, "status.containerStatuses.0.ready"));
        assert_true(jbool(j, "status.containerStatuses.0.started"));
        assert_string_equal(jstr(j, "status.containerStatuses.0.containerID"), "runc://uid-a1-0");
        assert_string_equal(jstr(j, "status.containerStatuses.0.image"), "busybox");
        assert_string_equal(jstr(j, "status.containerStatuses.0.imageID"), "");
        assert_true(json_is_object(jpath(j, "status.containerStatuses.0.lastState")));
        assert_int_equal(json_object_size(jpath(j, "status.containerStatuses.0.lastState")), 0);

        assert_string_equal(jstr(j, "status.containerStatuses.1.state.waiting.reason"),
                            "CrashLoopBackOff");
        assert_string_equal(jstr(j, "status.containerStatuses.1.state.waiting.message"),
                            "back-off 40s restarting failed container=a2");
        assert_int_equal(jint(j, "status.containerStatuses.1.restartCount"), 3);
        assert_int_equal(jint(j, "status.containerStatuses.1.lastState.terminated.exitCode"), 1);
        assert_string_equal(jstr(j, "status.containerStatuses.1.lastState.terminated.reason"),
                            "Error");
        assert_string_equal(jstr(j, "status.containerStatuses.1.lastState.terminated.finishedAt"),
                            "2024-05-01T10:00:06Z");
        assert_string_equal(jstr(j, "status.containerStatuses.1.lastState.terminated.containerID"),
                            "runc://uid-a2-3");
        assert_false(jbool(j, "status.containerStatuses.1.started"));
        json_decref(j);
        fx_done(&f);
}

static void test_json_defaults(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: h\nspec:\n"
                     "  hostNetwork: true\n  activeDeadlineSeconds: 5\n"
                     "  containers:\n  - {name: a, image: busybox}\n");
        f.s.host_ip = strdup("192.168.1.10");
        f.s.deadline_exceeded = true;
        PodStatusContext ctx = { .canonical_json = f.objs[0]->canonical_json,
                                 .node_name = "node1",
                                 .runtime_name = "crun" };
        json_t *j = NULL;
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &j), 0);
        /* hostNetwork pods report the node's address as pod IP. */
        assert_string_equal(jstr(j, "status.podIP"), "192.168.1.10");
        assert_string_equal(jstr(j, "status.podIPs.0.ip"), "192.168.1.10");
        assert_string_equal(jstr(j, "status.phase"), "Failed");
        assert_string_equal(jstr(j, "status.reason"), "DeadlineExceeded");
        assert_string_equal(jstr(j, "status.containerStatuses.0.state.waiting.reason"),
                            "ContainerCreating");
        assert_null(jpath(j, "status.initContainerStatuses"));
        assert_null(jpath(j, "status.startTime"));
        assert_true(json_is_null(jpath(j, "metadata.creationTimestamp")));
        json_decref(j);

        /* containerID uses the runtime's scheme; an unknown exit code is
         * reported as kubelet reports a lost container. */
        ContainerState *c = C(&f, "a");
        c->state = CONTAINER_EXITED;
        c->container_id = strdup("x-a-0");
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &j), 0);
        assert_string_equal(jstr(j, "status.containerStatuses.0.containerID"), "crun://x-a-0");
        assert_int_equal(jint(j, "status.containerStatuses.0.state.terminated.exitCode"), 137);
        assert_string_equal(jstr(j, "status.containerStatuses.0.state.terminated.reason"),
                            "ContainerStatusUnknown");
        json_decref(j);

        /* Bad canonical JSON is refused. */
        ctx.canonical_json = "[1]";
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &j), -EINVAL);
        fx_done(&f);
}

/* A sandbox that cannot be set up says why in the status, not only in the
 * agent's log. */
static void test_sandbox_failed(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: s\nspec:\n"
                     "  containers:\n  - {name: a, image: busybox}\n");
        f.s.sandbox = SANDBOX_FAILED;
        f.s.sandbox_message = strdup("hostPath type check failed: /x is not a directory");
        PodStatusContext ctx = { .canonical_json = f.objs[0]->canonical_json, .node_name = "n" };
        json_t *j = NULL;
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &j), 0);
        assert_string_equal(jstr(j, "status.phase"), "Pending");
        assert_string_equal(jstr(j, "status.reason"), POD_SANDBOX_FAILED_REASON);
        assert_string_equal(jstr(j, "status.message"),
                            "hostPath type check failed: /x is not a directory");
        json_t *conds = jpath(j, "status.conditions");
        bool seen = false;
        for (size_t i = 0; i < json_array_size(conds); i++) {
                json_t *c = json_array_get(conds, i);
                if (!streq(json_string_value(json_object_get(c, "type")),
                           "PodReadyToStartContainers"))
                        continue;
                seen = true;
                assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
                assert_string_equal(json_string_value(json_object_get(c, "reason")),
                                    POD_SANDBOX_FAILED_REASON);
                assert_string_equal(json_string_value(json_object_get(c, "message")),
                                    "hostPath type check failed: /x is not a directory");
        }
        assert_true(seen);
        json_decref(j);

        /* Once ready, the failure is gone from the status. */
        f.s.sandbox = SANDBOX_READY;
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &j), 0);
        assert_null(jpath(j, "status.reason"));
        json_decref(j);
        fx_done(&f);
}

/* Rejected at admission: kubelet's rejectPod status, nothing else. */
static void test_rejected(void **state) {
        (void)state;
        Fixture f;
        fx_setup(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: s\nspec:\n"
                     "  containers:\n  - {name: a, image: busybox}\n");
        f.s.rejected = true;
        f.s.reason = strdup("SysctlForbidden");
        f.s.message =
                strdup("Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted");
        PodStatusContext ctx = { .canonical_json = f.objs[0]->canonical_json, .node_name = "n" };
        json_t *j = NULL;
        assert_int_equal(pod_status_to_json(&f.s, &ctx, &j), 0);
        assert_string_equal(jstr(j, "status.phase"), "Failed");
        assert_string_equal(jstr(j, "status.reason"), "SysctlForbidden");
        assert_string_equal(
                jstr(j, "status.message"),
                "Pod was rejected: forbidden sysctl: \"kernel.msgmax\" not allowlisted");
        assert_string_equal(jstr(j, "status.qosClass"), "BestEffort");
        assert_int_equal(json_object_size(jpath(j, "status")), 4);
        json_decref(j);
        fx_done(&f);
}

static void test_write(void **state) {
        (void)state;
        char dir[] = "/tmp/test-pod-status-XXXXXX";
        assert_non_null(mkdtemp(dir));

        json_t *pod = json_pack("{s:s, s:s}", "apiVersion", "v1", "kind", "Pod");
        assert_int_equal(pod_status_write(dir, "abc123", pod), 0);
        assert_int_equal(pod_status_write(dir, "abc123", pod), 0); /* replace */
        assert_int_equal(pod_status_write(dir, "../evil", pod), -EINVAL);
        assert_int_equal(pod_status_write(dir, "", pod), -EINVAL);
        assert_int_equal(pod_status_write("/nonexistent-dir-xyz", "u", pod), -ENOENT);
        json_decref(pod);

        char path[256];
        snprintf(path, sizeof(path), "%s/abc123.json", dir);
        /* The pod spec with its env values: root only (docs/internals/state-files.md). */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        char *data = NULL;
        size_t size = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &data, &size), 0);
        json_error_t err;
        json_t *back = json_loads(data, 0, &err);
        free(data);
        assert_non_null(back);
        assert_string_equal(jstr(back, "kind"), "Pod");
        json_decref(back);

        /* Only the final file: no temporary left behind. */
        DIR *d = opendir(dir);
        assert_non_null(d);
        int entries = 0;
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.') {
                        assert_string_equal(de->d_name, "abc123.json");
                        entries++;
                }
        closedir(d);
        assert_int_equal(entries, 1);

        assert_int_equal(pod_status_remove(dir, "abc123"), 0);
        assert_int_equal(access(path, F_OK), -1);
        assert_int_equal(pod_status_remove(dir, "abc123"), 0); /* already gone */
        assert_int_equal(pod_status_remove(dir, "a/b"), -EINVAL);
        assert_int_equal(rmdir(dir), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_phase_table),
                cmocka_unit_test(test_conditions),
                cmocka_unit_test(test_qos),
                cmocka_unit_test(test_json_shape),
                cmocka_unit_test(test_json_defaults),
                cmocka_unit_test(test_write),
                cmocka_unit_test(test_sandbox_failed),
                cmocka_unit_test(test_rejected),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
