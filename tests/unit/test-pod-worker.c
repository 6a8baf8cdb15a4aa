/* The pod worker's contract with the manager (pod-worker.h): claim,
 * predecessor/successor, terminating, the wait-for state; and its status
 * file, written only when its content changed. The pods here wait for a pod
 * that does not exist (nanolet.io/wait-for), so a sync runs on the loop and
 * writes the status without touching the runtime. */
#include <errno.h>
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
#include <fcntl.h>
#include <jansson.h>

#include "checkpoint.h"
#include "fileio.h"
#include "macro.h"
#include "manifest.h"
#include "pod-status.h"
#include "pod-worker.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"
#include "pod-fixture.h"

#define WAITING_POD(name)                                                                          \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " name "\n  namespace: default\n"           \
        "  annotations: {nanolet.io/wait-for: default/db}\n"                                       \
        "spec:\n  containers:\n  - {name: c, image: busybox}\n"

typedef struct Fixture {
        char tmp[64];
        char *status_dir, *pods_dir, *ns_dir, *sandboxes_dir, *logs_dir, *seccomp_dir;
        Event *event;
        PodManagerOptions o;
        PodManagerContext ctx;
        ManifestObject **objs;
        size_t n;
        const char *wait_message; /* what wait_for_check answers */
        unsigned wait_checks;
} Fixture;

static int wait_for_check(PodWorker *w, char **ret_reason, char **ret_message, void *userdata) {
        Fixture *f = userdata;
        f->wait_checks++;
        *ret_reason = strdup("WaitingForPods");
        *ret_message = strdup(f->wait_message);
        return 0;
}

static void worker_finished(PodWorker *w, void *userdata) {
        pod_worker_free(w);
}

static void parse(Fixture *f, const char *yaml) {
        pod_fixture_parse(yaml, &f->objs, &f->n);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        strcpy(f->tmp, "/tmp/test-pod-worker-XXXXXX");
        assert_non_null(mkdtemp(f->tmp));
        f->status_dir = strprintf("%s/status", f->tmp);
        f->pods_dir = strprintf("%s/pods", f->tmp);
        f->ns_dir = strprintf("%s/ns", f->tmp);
        f->sandboxes_dir = strprintf("%s/sandboxes", f->tmp);
        f->logs_dir = strprintf("%s/logs", f->tmp);
        f->seccomp_dir = strprintf("%s/seccomp", f->tmp);
        assert_int_equal(mkdir(f->status_dir, 0700), 0);
        assert_int_equal(event_new(&f->event), 0);
        f->o = (PodManagerOptions){
                .root_dir = f->tmp,
                .run_dir = f->tmp,
                .pod_logs_dir = f->logs_dir,
                .node_name = "node1",
                .runtime_name = "runc",
        };
        f->ctx = (PodManagerContext){
                .event = f->event,
                .o = &f->o,
                .status_dir = f->status_dir,
                .pods_dir = f->pods_dir,
                .ns_dir = f->ns_dir,
                .seccomp_dir = f->seccomp_dir,
                .sandboxes_dir = f->sandboxes_dir,
                .wait_for_check = wait_for_check,
                .worker_finished = worker_finished,
                .userdata = f,
        };
        f->wait_message = "waiting for default/db to be Ready";
        parse(f, WAITING_POD("web"));
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        manifest_objects_free(f->objs, f->n);
        event_free(f->event);
        assert_int_equal(rm_rf_at(AT_FDCWD, f->tmp), 0);
        free(f->status_dir);
        free(f->pods_dir);
        free(f->ns_dir);
        free(f->sandboxes_dir);
        free(f->logs_dir);
        free(f->seccomp_dir);
        free(f);
        return 0;
}

static PodWorker *new_worker(Fixture *f) {
        PodWorker *w = NULL;
        assert_int_equal(pod_worker_new(&w, &f->ctx, f->objs[0], "file", "/x/web.yaml"), 0);
        return w;
}

/* Runs the loop until nothing is pending (the sync and the status write). */
static void run_pending(Fixture *f) {
        for (int i = 0; i < 3; i++)
                assert_int_equal(event_run(f->event, 0), 0);
}

static void test_identity(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);

        assert_string_equal(pod_worker_uid(w), f->objs[0]->uid);
        assert_ptr_equal(pod_worker_object(w), f->objs[0]);
        assert_string_equal(pod_worker_object(w)->name, "web-node1");
        assert_string_equal(pod_worker_source(w), "file");
        assert_string_equal(pod_worker_origin(w), "/x/web.yaml");
        assert_non_null(strstr(pod_worker_name(w), f->objs[0]->uid));
        assert_non_null(pod_worker_pod_dir(w));
        assert_ptr_equal(pod_worker_options(w), &f->o);
        assert_int_equal(pod_worker_state(w)->n_app, 1);
        pod_worker_free(w);
}

static void test_terminating(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);

        assert_false(pod_worker_is_terminating(w));
        pod_worker_terminate(w, "test");
        assert_true(pod_worker_is_terminating(w));
        pod_worker_terminate(w, "again"); /* idempotent */
        assert_true(pod_worker_is_terminating(w));
        pod_worker_free(w);
}

static void test_claim(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);

        /* A worker made from a source event was never unclaimed. */
        assert_false(pod_worker_is_unclaimed(w));
        pod_worker_claim(w);
        assert_false(pod_worker_is_unclaimed(w));
        pod_worker_free(w);
}

static void test_claim_checkpoint(void **state) {
        Fixture *f = *state;
        const ManifestObject *o = f->objs[0];
        _cleanup_free_ char *dir = strprintf("%s/%s", f->pods_dir, o->uid);
        PodCheckpoint cp = {
                .uid = o->uid,
                .name = o->name,
                .namespace = o->namespace,
                .source = (char *)"file",
                .origin = (char *)"/x/web.yaml",
                .manifest = json_loads(o->canonical_json, 0, NULL),
        };
        PodWorker *w = NULL;

        assert_int_equal(mkdir_p(dir, 0700), 0);
        assert_int_equal(pod_checkpoint_write(dir, &cp), 0);
        json_decref(cp.manifest);
        assert_int_equal(pod_worker_new_from_checkpoint(&w, &f->ctx, dir), 0);
        assert_string_equal(pod_worker_uid(w), o->uid);
        assert_string_equal(pod_worker_origin(w), "/x/web.yaml");
        /* Adopted, not yet asked for by a source in this run. */
        assert_true(pod_worker_is_unclaimed(w));
        pod_worker_claim(w);
        assert_false(pod_worker_is_unclaimed(w));
        pod_worker_free(w);
}

/* A pod to stop whose checkpoint is unreadable: its spec from the status
 * file the earlier run wrote, else its container directories' names. */
static void test_stray(void **state) {
        Fixture *f = *state;
        const char *uid = "0123456789abcdef0123456789abcdef";
        _cleanup_free_ char *status = strprintf("%s/%s.json", f->status_dir, uid);
        const char *text =
                "{\"metadata\":{\"name\":\"web-node1\",\"namespace\":\"prod\",\"uid\":\"x\"},"
                "\"spec\":{\"terminationGracePeriodSeconds\":7,\"nodeName\":\"node1\","
                "\"initContainers\":[{\"name\":\"i\",\"image\":\"busybox\"}],"
                "\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]},"
                "\"status\":{\"phase\":\"Running\"}}";
        PodWorker *w = NULL;

        assert_int_equal(write_file_atomic(status, text, strlen(text), 0600), 0);
        assert_int_equal(pod_worker_new_stray(&w, &f->ctx, uid), 0);
        assert_string_equal(pod_worker_uid(w), uid);
        assert_string_equal(pod_worker_object(w)->name, "web-node1");
        assert_string_equal(pod_worker_object(w)->namespace, "prod");
        assert_int_equal(pod_worker_state(w)->n_init, 1);
        assert_int_equal(pod_worker_state(w)->n_app, 1);
        assert_int_equal(pod_worker_object(w)->pod->spec.termination_grace_period_seconds.value, 7);
        /* Not a pod a source could claim. */
        assert_false(pod_worker_is_unclaimed(w));
        pod_worker_free(w);

        /* Without a usable status file: the container directories. */
        assert_int_equal(write_file_atomic(status, "garbage", 7, 0600), 0);
        _cleanup_free_ char *a = strprintf("%s/%s/containers/a/0", f->pods_dir, uid);
        _cleanup_free_ char *b = strprintf("%s/%s/containers/b", f->pods_dir, uid);
        _cleanup_free_ char *bad = strprintf("%s/%s/containers/Not_A-Name", f->pods_dir, uid);
        assert_int_equal(mkdir_p(a, 0700), 0);
        assert_int_equal(mkdir_p(b, 0700), 0);
        assert_int_equal(mkdir_p(bad, 0700), 0);
        assert_int_equal(pod_worker_new_stray(&w, &f->ctx, uid), 0);
        assert_string_equal(pod_worker_uid(w), uid);
        assert_int_equal(pod_worker_state(w)->n_init, 0);
        assert_int_equal(pod_worker_state(w)->n_app, 2);
        pod_worker_free(w);

        /* Nothing at all: still a worker that can stop what runs. */
        _cleanup_free_ char *pod = strprintf("%s/%s", f->pods_dir, uid);
        assert_int_equal(rm_rf_at(AT_FDCWD, pod), 0);
        assert_int_equal(unlink(status), 0);
        assert_int_equal(pod_worker_new_stray(&w, &f->ctx, uid), 0);
        assert_int_equal(pod_worker_state(w)->n_app, 1);
        pod_worker_free(w);
}

static void test_successor(void **state) {
        Fixture *f = *state;
        PodWorker *old = new_worker(f), *a = new_worker(f), *b = new_worker(f);

        assert_null(pod_worker_take_successor(old));
        assert_null(pod_worker_set_predecessor(a, old));
        /* A newer version replaces the one that waited: that one is returned. */
        assert_ptr_equal(pod_worker_set_predecessor(b, old), a);
        assert_ptr_equal(pod_worker_take_successor(old), b);
        assert_null(pod_worker_take_successor(old));
        pod_worker_free(a);
        pod_worker_free(b);
        pod_worker_free(old);
}

static void test_successor_freed(void **state) {
        Fixture *f = *state;
        PodWorker *old = new_worker(f), *w = new_worker(f);

        /* Freeing either end clears the other's link. */
        assert_null(pod_worker_set_predecessor(w, old));
        pod_worker_free(w);
        assert_null(pod_worker_take_successor(old));
        w = new_worker(f);
        assert_null(pod_worker_set_predecessor(w, old));
        pod_worker_free(old);
        old = new_worker(f);
        assert_null(pod_worker_set_predecessor(w, old)); /* w had no predecessor left */
        assert_ptr_equal(pod_worker_take_successor(old), w);
        pod_worker_free(w);
        pod_worker_free(old);
}

/* A successor waits for its predecessor: a sync does nothing (no wait-for
 * check, no status) until the manager hands it over. */
static void test_successor_waits(void **state) {
        Fixture *f = *state;
        PodWorker *old = new_worker(f), *w = new_worker(f);
        _cleanup_free_ char *path = pod_status_path(f->status_dir, f->objs[0]->uid);

        assert_string_equal(pod_worker_phase_name(w), "adopting");
        (void)pod_worker_set_predecessor(w, old);
        assert_string_equal(pod_worker_phase_name(w), "waiting-for-predecessor");
        pod_worker_request_sync(w);
        run_pending(f);
        assert_int_equal(f->wait_checks, 0);
        assert_string_equal(pod_worker_phase_name(w), "waiting-for-predecessor");
        assert_ptr_equal(pod_worker_take_successor(old), w);
        assert_string_equal(pod_worker_phase_name(w), "adopting");
        pod_worker_request_sync(w);
        run_pending(f);
        assert_int_equal(f->wait_checks, 1);
        assert_true(pod_worker_is_waiting(w));
        assert_string_equal(pod_worker_phase_name(w), "admitting");
        assert_int_equal(access(path, F_OK), 0);
        pod_worker_free(w);
        pod_worker_free(old);
}

static void test_wait_for_state(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);

        char *const *refs = pod_worker_wait_for(w);
        assert_non_null(refs);
        assert_string_equal(refs[0], "default/db");
        assert_null(refs[1]);
        assert_false(pod_worker_is_waiting(w));
        assert_false(pod_worker_is_ready(w));
        pod_worker_request_sync(w);
        run_pending(f);
        assert_true(pod_worker_is_waiting(w));
        assert_false(pod_worker_is_ready(w));
        /* held back: the phase, in the status file too */
        assert_string_equal(pod_worker_phase_name(w), "admitting");
        json_t *j = json_loads(pod_worker_status_text(w), 0, NULL);
        assert_non_null(j);
        json_t *ann = json_object_get(json_object_get(j, "metadata"), "annotations");
        assert_string_equal(json_string_value(json_object_get(ann, POD_WORKER_STATE_ANNOTATION)),
                            "admitting");
        json_decref(j);
        /* a termination takes over from the admission (no check): the pod
         * is gone, its status file too (worker_finished() frees w) */
        unsigned checks = f->wait_checks;
        _cleanup_free_ char *path = pod_status_path(f->status_dir, f->objs[0]->uid);
        pod_worker_terminate(w, "test");
        pod_worker_request_sync(w);
        run_pending(f);
        assert_int_equal(f->wait_checks, checks);
        assert_int_equal(access(path, F_OK), -1);
}

static void stat_status(Fixture *f, struct stat *st) {
        _cleanup_free_ char *path = pod_status_path(f->status_dir, f->objs[0]->uid);
        assert_non_null(path);
        assert_int_equal(stat(path, st), 0);
}

static bool same_file(const struct stat *a, const struct stat *b) {
        return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* The status file comes after what the sync armed for the next iteration
 * (the runtime queue's kick, the next sync): not in the sync's iteration,
 * not in the next one, which the files wait for once, but in the one after
 * (docs/internals/runtime.md, "The sync loop"). */
static void test_status_after_next_step(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);
        _cleanup_free_ char *path = pod_status_path(f->status_dir, f->objs[0]->uid);
        struct stat st;

        pod_worker_request_sync(w);
        assert_int_equal(event_run(f->event, 0), 0);
        assert_int_equal(f->wait_checks, 1); /* the sync ran */
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(errno, ENOENT);
        assert_int_equal(event_run(f->event, 0), 0);
        assert_int_equal(stat(path, &st), -1);
        assert_int_equal(event_run(f->event, 0), 0);
        stat_status(f, &st);
        assert_int_equal(f->wait_checks, 1);
        pod_worker_free(w);
}

static void test_status_written_on_change(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);
        struct stat first, again;

        pod_worker_request_sync(w);
        run_pending(f);
        stat_status(f, &first);

        /* An identical sync: the file is not written again (write_file_atomic
         * would rename a new inode into place). */
        for (int i = 0; i < 3; i++) {
                pod_worker_request_sync(w);
                run_pending(f);
        }
        assert_int_equal(f->wait_checks, 4);
        stat_status(f, &again);
        assert_true(same_file(&first, &again));

        /* Changed content: written. */
        f->wait_message = "waiting for default/db and more to be Ready";
        pod_worker_request_sync(w);
        run_pending(f);
        stat_status(f, &again);
        assert_false(same_file(&first, &again));
        _cleanup_free_ char *path = pod_status_path(f->status_dir, f->objs[0]->uid);
        _cleanup_free_ char *text = NULL;
        size_t size;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &text, &size), 0);
        assert_non_null(strstr(text, "and more"));
        pod_worker_free(w);
}

static void test_status_removed_outside(void **state) {
        Fixture *f = *state;
        PodWorker *w = new_worker(f);
        _cleanup_free_ char *path = pod_status_path(f->status_dir, f->objs[0]->uid);
        struct stat st;

        pod_worker_request_sync(w);
        run_pending(f);
        assert_int_equal(unlink(path), 0);
        /* Same content, but the file is gone: the next sync writes it. */
        pod_worker_request_sync(w);
        run_pending(f);
        stat_status(f, &st);

        /* Replaced from outside with other content: rewritten as well. */
        assert_int_equal(write_file_atomic(path, "{}", 2, 0600), 0);
        pod_worker_request_sync(w);
        run_pending(f);
        _cleanup_free_ char *text = NULL;
        size_t size;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &text, &size), 0);
        assert_non_null(strstr(text, "WaitingForPods"));
        pod_worker_free(w);
}

static char *read_rel(const char *root, const char *rel) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        char *text = NULL;
        size_t size;
        if (read_full_file_at(AT_FDCWD, p, 4096, &text, &size) < 0)
                return NULL;
        return text;
}

static bool dir_exists(const char *root, const char *rel) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        struct stat st;
        return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The QoS levels as kubelet's QoS manager sets them, written again as the
 * burstable pods change, and the pod cgroup of a pod that went while the
 * agent was down removed at every level (a cgroup v1 fixture tree). */
/* Under systemd the burstable slice's values reach systemd in the order
 * they came, however long each busctl takes: a fake busctl that refuses
 * every start as systemd does for an existing unit ("already loaded") and
 * takes its time over the first value's update. */
static void test_qos_systemd_in_order(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *fs = strprintf("%s/cgroup2", f->tmp);
        _cleanup_free_ char *log = strprintf("%s/busctl.log", f->tmp);
        _cleanup_free_ char *busctl = strprintf("%s/busctl", f->tmp);
        _cleanup_free_ char *script = strprintf(
                "#!/bin/sh\n"
                "case \"$*\" in\n"
                "*StartTransientUnit*) echo \"$*\" >>%s\n"
                "  echo \"Call failed: Unit $9 was already loaded or has a fragment file.\" >&2; "
                "exit 1 ;;\n"
                "*'CPUWeight t 14'*) sleep 1 ;;\n"
                "esac\n"
                "echo \"$*\" >>%s\n",
                log, log);
        assert_int_equal(mkdir_p(fs, 0755), 0);
        _cleanup_free_ char *controllers = strprintf("%s/cgroup.controllers", fs);
        assert_int_equal(write_file_atomic(controllers, "cpu memory pids\n", 16, 0644), 0);
        assert_int_equal(write_file_atomic(busctl, script, strlen(script), 0755), 0);
        f->o.cgroup_fs = fs;
        f->o.busctl = busctl;
        f->o.cgroups = (CgroupLayout){ .driver = CGROUP_DRIVER_SYSTEMD, .root = "/" };

        pod_qos_cgroups_apply(&f->ctx, 350); /* 358 shares: CPUWeight 14 */
        pod_qos_cgroups_apply(&f->ctx, 0);   /* 2 shares: CPUWeight 1 */
        /* 3 slices x 2 values x (start + update) */
        char *text = NULL;
        size_t size = 0, lines = 0;
        for (int i = 0; i < 200 && (lines < 12 || f->ctx.qos_burstable_call); i++) {
                assert_int_equal(event_run(f->event, 50 * USEC_PER_MSEC), 0);
                free(text);
                text = NULL;
                lines = 0;
                if (read_full_file_at(AT_FDCWD, log, 1 << 16, &text, &size) >= 0)
                        for (const char *p = text; (p = strchr(p, '\n')); p++)
                                lines++;
        }
        assert_int_equal(lines, 12);
        assert_null(f->ctx.qos_burstable_call);
        /* the burstable slice's updates, in the order busctl finished */
        _cleanup_strv_free_ char **sets = NULL;
        for (const char *p = text; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0)) {
                _cleanup_free_ char *line = strndup(p, strcspn(p, "\n"));
                assert_non_null(line);
                if (strstr(line, " SetUnitProperties ") &&
                    strstr(line, " kubepods-burstable.slice "))
                        assert_int_equal(strv_extend(&sets, line), 0);
        }
        assert_int_equal(strv_length(sets), 2);
        assert_true(endswith(sets[0], " CPUWeight t 14"));
        assert_true(endswith(sets[1], " CPUWeight t 1"));
        free(text);
        pod_qos_cgroups_done(&f->ctx);
}

static void test_qos_and_orphan_cgroups(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *fs = strprintf("%s/cgroup", f->tmp);
        const char *const controllers[] = { "cpu", "cpuacct", "memory", "pids" };
        for (size_t i = 0; i < 4; i++) {
                _cleanup_free_ char *d = strprintf("%s/%s", fs, controllers[i]);
                assert_int_equal(mkdir_p(d, 0755), 0);
        }
        f->o.cgroup_fs = fs;
        f->o.cgroups = (CgroupLayout){ .driver = CGROUP_DRIVER_CGROUPFS, .root = "/" };

        pod_qos_cgroups_apply(&f->ctx, 350);
        char *v = read_rel(fs, "cpu/kubepods/burstable/cpu.shares");
        assert_non_null(v);
        assert_string_equal(v, "358");
        free(v);
        v = read_rel(fs, "cpu/kubepods/besteffort/cpu.shares");
        assert_non_null(v);
        assert_string_equal(v, "2");
        free(v);
        assert_true(f->ctx.qos_applied);
        /* the last burstable pod went: the minimum */
        pod_qos_cgroups_apply(&f->ctx, 0);
        v = read_rel(fs, "cpu/kubepods/burstable/cpu.shares");
        assert_non_null(v);
        assert_string_equal(v, "2");
        free(v);
        /* nothing reserved: kubepods keeps the kernel's defaults */
        assert_null(read_rel(fs, "memory/kubepods/memory.limit_in_bytes"));
        f->o.allocatable_memory = 1 << 30;
        pod_qos_cgroups_apply(&f->ctx, 0);
        v = read_rel(fs, "memory/kubepods/memory.limit_in_bytes");
        assert_non_null(v);
        assert_string_equal(v, "1073741824");
        free(v);

        /* an orphan's pod cgroup, whatever its level, goes; others stay */
        const char *const dirs[] = {
                "cpu/kubepods/besteffort/podorphan/ctr",
                "memory/kubepods/besteffort/podorphan",
                "pids/kubepods/podorphan",
                "cpu/kubepods/burstable/podother",
                "memory/nanolet/podorphan",
        };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_free_ char *d = strprintf("%s/%s", fs, dirs[i]);
                assert_int_equal(mkdir_p(d, 0755), 0);
        }
        pod_cgroup_remove_orphan(&f->ctx, "orphan");
        assert_false(dir_exists(fs, "cpu/kubepods/besteffort/podorphan"));
        assert_false(dir_exists(fs, "memory/kubepods/besteffort/podorphan"));
        assert_false(dir_exists(fs, "pids/kubepods/podorphan"));
        assert_false(dir_exists(fs, "memory/nanolet/podorphan"));
        assert_true(dir_exists(fs, "cpu/kubepods/burstable/podother"));
        assert_true(dir_exists(fs, "cpu/kubepods/besteffort"));

        /* a pod that waits (never admitted) does not count for the shares */
        PodWorker *w = new_worker(f);
        run_pending(f);
        const Pod *pod = NULL;
        assert_false(pod_worker_counts_for_qos(w, &pod));
        pod_worker_free(w);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_identity, setup, teardown),
                cmocka_unit_test_setup_teardown(test_qos_and_orphan_cgroups, setup, teardown),
                cmocka_unit_test_setup_teardown(test_qos_systemd_in_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_terminating, setup, teardown),
                cmocka_unit_test_setup_teardown(test_claim, setup, teardown),
                cmocka_unit_test_setup_teardown(test_claim_checkpoint, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stray, setup, teardown),
                cmocka_unit_test_setup_teardown(test_successor, setup, teardown),
                cmocka_unit_test_setup_teardown(test_successor_freed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_successor_waits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_wait_for_state, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_after_next_step, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_written_on_change, setup, teardown),
                cmocka_unit_test_setup_teardown(test_status_removed_outside, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
