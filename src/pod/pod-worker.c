/* A pod worker: carries out pod_compute_actions() for one pod.
 *
 * Every step that can take time runs outside the loop: the sandbox helper,
 * image unpack + rootfs mount (an image worker child), conmon + runc create,
 * runc start/kill/delete (runtime ops). The worker counts what is in flight
 * (busy) and re-evaluates the pod whenever one of them finishes, the PLEG
 * relist notices a change, or a timer it asked for (back-off, grace period,
 * activeDeadlineSeconds) expires. Decisions stay in pod_compute_actions();
 * this file only executes them and records what happened in PodState. */
#include "pod-worker.h"
#include "pod-worker-internal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backoff.h"
#include "cgroup.h"
#include "checkpoint.h"
#include "cni.h"
#include "container-config.h"
#include "container-id.h"
#include "fileio.h"
#include "json-util.h"
#include "log.h"
#include "mount-util.h"
#include "pod-actions.h"
#include "pod-admit.h"
#include "pod-log-gc.h"
#include "pod-logs.h"
#include "pod-status.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

static_assert(POD_RUNTIME_ID_MAX == RUNTIME_ID_MAX,
              "validation must refuse exactly the container IDs the runtime refuses");

static void op_free(ContainerOp *op) {
        if (!op)
                return;
        op_clear_start(op);
        op_clear_exit_watch(op);
        event_source_free(op->grace_timer);
        free(op);
}

static const char *const worker_phase_names[_WORKER_PHASE_MAX] = {
        [WORKER_WAITING_FOR_PREDECESSOR] = "waiting-for-predecessor",
        [WORKER_ADOPTING] = "adopting",
        [WORKER_ADMITTING] = "admitting",
        [WORKER_REJECTED] = "rejected",
        [WORKER_RUNNING] = "running",
        [WORKER_CREATING_SANDBOX] = "creating-sandbox",
        [WORKER_FINISHED] = "finished",
        [WORKER_TERMINATING] = "terminating",
        [WORKER_TEARING_DOWN] = "tearing-down",
        [WORKER_GONE] = "gone",
};

void worker_set_phase(PodWorker *w, WorkerPhase phase) {
        assert(phase >= 0 && phase < _WORKER_PHASE_MAX);
        if (w->phase == phase)
                return;
        worker_log(w, LOG_DEBUG, NULL, "Pod \"%s\": %s -> %s.", w->full_name,
                   worker_phase_names[w->phase], worker_phase_names[phase]);
        w->phase = phase;
}

const char *pod_worker_phase_name(const PodWorker *w) {
        return worker_phase_names[w->phase];
}

bool pod_worker_adopted(const PodWorker *w) {
        return w->phase > WORKER_ADOPTING;
}

const char *pod_worker_uid(const PodWorker *w) {
        return w->object->uid;
}

/* ---- the manager's side ---- */

const ManifestObject *pod_worker_object(const PodWorker *w) {
        return w->object;
}

const char *pod_worker_source(const PodWorker *w) {
        return w->source;
}

const char *pod_worker_origin(const PodWorker *w) {
        return w->origin;
}

const char *pod_worker_name(const PodWorker *w) {
        return w->full_name;
}

const char *pod_worker_pod_dir(const PodWorker *w) {
        return w->pod_dir;
}

const char *pod_worker_log_dir(const PodWorker *w) {
        return w->log_dir;
}

const PodManagerOptions *pod_worker_options(const PodWorker *w) {
        return w->ctx->o;
}

const PodState *pod_worker_state(const PodWorker *w) {
        return &w->state;
}

const char *pod_worker_status_text(const PodWorker *w) {
        return w->status_text;
}

bool pod_worker_is_terminating(const PodWorker *w) {
        return w->state.terminating;
}

bool pod_worker_is_unclaimed(const PodWorker *w) {
        return w->origin_kind == WORKER_ORIGIN_UNCLAIMED_CHECKPOINT;
}

void pod_worker_claim(PodWorker *w) {
        if (w->origin_kind == WORKER_ORIGIN_UNCLAIMED_CHECKPOINT)
                w->origin_kind = WORKER_ORIGIN_SOURCE;
}

PodWorker *pod_worker_set_predecessor(PodWorker *w, PodWorker *predecessor) {
        assert(!w->predecessor);
        PodWorker *old = predecessor->successor;
        if (old)
                old->predecessor = NULL;
        predecessor->successor = w;
        w->predecessor = predecessor;
        worker_set_phase(w, WORKER_WAITING_FOR_PREDECESSOR);
        return old;
}

PodWorker *pod_worker_take_successor(PodWorker *w) {
        PodWorker *next = w->successor;
        if (next) {
                if (next->phase == WORKER_WAITING_FOR_PREDECESSOR)
                        worker_set_phase(next, WORKER_ADOPTING);
                next->predecessor = NULL;
                w->successor = NULL;
        }
        return next;
}

/* Admitted and not on its way out; an adopted or started pod that is
 * terminating holds its slot through its sandbox until it has finished. */
static bool worker_admitted(const PodWorker *w) {
        return w->phase == WORKER_RUNNING || w->phase == WORKER_CREATING_SANDBOX ||
               w->phase == WORKER_FINISHED;
}

bool pod_worker_holds_slot(const PodWorker *w) {
        if (!worker_admitted(w) && w->state.sandbox == SANDBOX_NONE)
                return false;
        PodPhase p = pod_phase(&w->state);
        return p != POD_PHASE_SUCCEEDED && p != POD_PHASE_FAILED;
}

bool pod_worker_counts_for_qos(const PodWorker *w, const Pod **ret_pod) {
        const Pod *pod = w->state.pod ?: w->object->pod;
        if (w->phase == WORKER_GONE || !pod || !pod_worker_holds_slot(w))
                return false;
        *ret_pod = pod;
        return true;
}

char *pod_worker_cgroup_path(const PodWorker *w) {
        return runtime_pod_cgroup_path(&w->ctx->o->cgroups, pod_cgroup_qos(w->object->pod),
                                       w->object->uid);
}

char *pod_worker_container_cgroup_path(const PodWorker *w, const char *container_id) {
        return runtime_container_cgroup_path(&w->ctx->o->cgroups, pod_cgroup_qos(w->object->pod),
                                             w->object->uid, container_id);
}

char *const *pod_worker_wait_for(const PodWorker *w) {
        return w->wait_for;
}

bool pod_worker_is_ready(const PodWorker *w) {
        return w->state.condition_status[POD_CONDITION_READY];
}

bool pod_worker_is_waiting(const PodWorker *w) {
        return w->state.wait_reason;
}

/* ---- status ---- */

static int on_sync_defer(EventSource *s, usec_t now, void *userdata);
static int on_files_defer(EventSource *s, usec_t now, void *userdata);

void pod_worker_request_sync(PodWorker *w) {
        w->sync_requested = true;
        (void)event_source_set_enabled(w->sync_defer, true);
}

void worker_mark_status(PodWorker *w) {
        w->status_dirty = true;
        pod_worker_request_sync(w);
}

/* Whether the status file holds text already: the text written last is
 * the same, and the file written then is still there as written (stat()
 * tells a file removed, replaced or edited from outside without reading
 * it). One stat() per sync instead of a write and two fsync()s. */
static bool status_file_current(const PodWorker *w, const char *text) {
        struct stat st;
        const struct stat *was = &w->status_stat;

        return w->status_text && w->status_path && streq(w->status_text, text) &&
               stat(w->status_path, &st) >= 0 && st.st_dev == was->st_dev &&
               st.st_ino == was->st_ino && st.st_size == was->st_size &&
               st.st_mtim.tv_sec == was->st_mtim.tv_sec &&
               st.st_mtim.tv_nsec == was->st_mtim.tv_nsec;
}

/* text was just written: remembered only with the file's identity. */
static void status_file_written(PodWorker *w, char *text) {
        w->status_text = mfree(w->status_text);
        if (text && w->status_path && stat(w->status_path, &w->status_stat) >= 0)
                w->status_text = text;
        else
                free(text);
}

static void worker_write_status(PodWorker *w) {
        json_t *j = NULL;
        int r;

        w->status_dirty = false;
        if (w->phase == WORKER_GONE)
                return;
        (void)pod_status_update_conditions(&w->state, now_usec(CLOCK_REALTIME));
        if (!w->start_measured && pod_phase(&w->state) == POD_PHASE_RUNNING) {
                w->start_measured = true;
                metric_observe(w->ctx->metrics.pod_start_duration, NULL,
                               (double)(now_usec(CLOCK_MONOTONIC) - w->first_seen) / USEC_PER_SEC);
        }
        PodStatusContext sc = {
                .canonical_json = w->object->canonical_json,
                .node_name = w->ctx->o->node_name,
                .runtime_name = w->ctx->o->runtime_name,
                .worker_state = worker_phase_names[w->phase],
        };
        r = pod_status_to_json(&w->state, &sc, &j);
        if (r < 0) {
                worker_log_errno(w, LOG_WARNING, r, NULL,
                                 "Failed to build status of pod \"%s\": %m", w->full_name);
                return;
        }
        _cleanup_free_ char *text = json_dumps(j, JSON_COMPACT);
        if (text && status_file_current(w, text)) {
                json_decref(j);
                return;
        }
        r = pod_status_write(w->ctx->status_dir, w->object->uid, j);
        json_decref(j);
        if (r < 0) {
                w->status_text = mfree(w->status_text);
                worker_log_errno(w, LOG_WARNING, r, NULL,
                                 "Failed to write status of pod \"%s\": %m", w->full_name);
                return;
        }
        status_file_written(w, TAKE_PTR(text));
}

/* ---- events ---- */

void worker_event(PodWorker *w, const ContainerState *c, PodEventReason reason, const char *fmt,
                  ...) {
        _cleanup_free_ char *field_path = NULL;
        if (c && !(field_path = pod_event_field_path(c->is_init, c->spec->name))) {
                log_oom();
                return;
        }
        va_list ap;
        va_start(ap, fmt);
        int r = pod_events_recordv(&w->events, reason, field_path, now_usec(CLOCK_REALTIME), fmt,
                                   ap);
        va_end(ap);
        if (r < 0) {
                log_oom();
                return;
        }
        w->events_dirty = true;
        (void)event_source_set_enabled(w->files_defer, true);
}

static void worker_write_events(PodWorker *w) {
        _cleanup_json_ json_t *j = NULL;
        PodEventsObject o = {
                .name = w->object->name,
                .namespace = w->object->namespace,
                .uid = w->object->uid,
                .node_name = w->ctx->o->node_name,
        };

        w->events_dirty = false;
        int r = pod_events_to_json(&w->events, &o, &j);
        if (r >= 0)
                r = pod_events_write(w->ctx->status_dir, w->object->uid, j);
        if (r < 0)
                worker_log_errno(w, LOG_WARNING, r, NULL,
                                 "Failed to write the events of pod \"%s\": %m", w->full_name);
}

/* ---- completion helpers ---- */

void worker_op_done(PodWorker *w) {
        assert(w->busy > 0);
        w->busy--;
        worker_mark_status(w);
}

/* ---- teardown ---- */

/* Nothing a container uses goes while it exists: containers of this pod
 * the runtime still has (the worker never knew them, or lost track) are
 * removed (SIGKILL) before the sandbox and the pod directory. Returns 1
 * while removals run (each requests a sync when done), 0 when none is
 * left, -EBUSY when some are still there after one round of removals (the
 * pod directory then stays). */
static int worker_remove_leftover_containers(PodWorker *w) {
        _cleanup_strv_free_ char **ids = NULL;
        bool pending = false, found = false;

        if (runtime_list_ids(w->ctx->o->runtime, &ids) < 0)
                return 0;
        STRV_FOREACH(id, ids) {
                if (!container_id_of_pod(*id, w->object->uid))
                        continue;
                found = true;
                if (w->phase == WORKER_TEARING_DOWN)
                        continue; /* removed once already */
                worker_log(w, LOG_WARNING, NULL,
                           "Pod \"%s\": container %s still exists at its removal; removing it "
                           "first.",
                           w->full_name, *id);
                w->busy++;
                if (runtime_container_delete(w->ctx->o->runtime, *id, true, on_attempt_deleted, w,
                                             NULL) < 0)
                        w->busy--;
                else
                        pending = true;
        }
        worker_set_phase(w, WORKER_TEARING_DOWN);
        return pending ? 1 : found ? -EBUSY : 0;
}

/* The pod's ID range is free again once its directory (and so its record)
 * is gone; a worker that never prepared (a stray) frees what the record
 * names, unless that range is another pod's. */
static void worker_release_userns(PodWorker *w, bool dir_removed) {
        uint32_t start = w->userns_start;

        if (!dir_removed)
                return;
        char **conflicts = w->ctx->userns_conflicts;
        bool conflict = false;
        if (conflicts) {
                size_t j = 0;
                for (size_t i = 0; conflicts[i]; i++)
                        if (streq(conflicts[i], w->object->uid)) {
                                /* its record went with the directory: a pod
                                 * of that UID may come again and get a range */
                                free(conflicts[i]);
                                conflict = true;
                        } else
                                conflicts[j++] = conflicts[i];
                conflicts[j] = NULL;
        }
        if (start == 0 && !conflict)
                start = w->userns_record;
        if (start != 0) {
                pod_userns_release(&w->ctx->userns, start);
                worker_log(w, LOG_INFO, NULL, "Pod \"%s\": user namespace IDs %u-%u freed.",
                           w->full_name, (unsigned)start,
                           (unsigned)(start + POD_USERNS_RANGE_LEN - 1));
        }
        w->userns_start = w->userns_record = 0;
}

static void worker_remove_pod_dir(PodWorker *w) {
        Error err = {};
        uint32_t recorded = 0;

        if (w->userns_start == 0 && pod_userns_record_read(w->pod_dir, &recorded, NULL) < 0)
                recorded = 0;
        w->userns_record = recorded;

        if (pod_volumes_cleanup(w->pod_dir, &err) < 0)
                worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name, err.message);
        /* Whatever is still mounted under the pod (a rootfs whose container
         * never reported its exit) would make the removal below stop at it. */
        _cleanup_free_ char *uns = strprintf("%s/userns/%s", w->ctx->o->run_dir, w->object->uid);
        int um = uns ? umount_below(uns) : -ENOMEM;
        if (um >= 0 && uns)
                (void)rm_rf_at(AT_FDCWD, uns);
        int m = umount_below(w->pod_dir);
        if (m > 0)
                worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %d leftover mount(s) removed.",
                           w->full_name, m);
        _cleanup_free_ char *parent = strdup(w->pod_dir);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (slash) {
                *slash = 0;
                _cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int r = pfd >= 0 ? rm_rf_at(pfd, slash + 1) : -errno;
                if (r < 0)
                        worker_log_errno(w, LOG_WARNING, r, NULL,
                                         "Pod \"%s\": failed to remove %s: %m", w->full_name,
                                         w->pod_dir);
                worker_release_userns(w, r >= 0);
        }
        /* Its logs go with it, as kubelet's container GC removes the log
         * directory of a pod whose content may be removed; a pod put back
         * with the same UID starts from attempt 0 again, so keeping them
         * would make it append to the old files. */
        _cleanup_free_ char *logs =
                strprintf("%s_%s_%s", w->object->namespace, w->object->name, w->object->uid);
        int lr = logs ? pod_log_remove(w->ctx->o->pod_logs_dir, w->ctx->o->container_logs_dir, logs)
                      : -ENOMEM;
        if (lr < 0)
                worker_log_errno(w, LOG_WARNING, lr, NULL,
                                 "Pod \"%s\": failed to remove its logs in %s: %m", w->full_name,
                                 w->log_dir);
}

/* Returns true when the pod is gone (and w freed), false while the
 * network DEL still runs (the sync comes back when it finishes). */
static bool worker_teardown(PodWorker *w) {
        Error err = {};

        int left = worker_remove_leftover_containers(w);
        if (left > 0)
                return false;
        if (worker_network_teardown(w))
                return false;
        worker_set_phase(w, WORKER_GONE);
        if (sandbox_remove(w->ns_dir, &err) < 0)
                worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name, err.message);
        if (left < 0)
                worker_log(w, LOG_ERR, NULL,
                           "Pod \"%s\": containers of it cannot be removed from the runtime; "
                           "%s and its mounts are kept for them.",
                           w->full_name, w->pod_dir);
        else
                worker_remove_pod_dir(w);
        int cr = worker_cgroup_remove(w);
        /* the burstable level's shares without this pod */
        if (w->ctx->qos_changed)
                w->ctx->qos_changed(w->ctx->userdata);
        /* where versions before the QoS hierarchy put it (adopted pods) */
        _cleanup_free_ char *legacy = strprintf("/nanolet/pod%s", w->object->uid);
        if (legacy)
                (void)runtime_cgroup_remove(w->ctx->o->cgroup_fs ?: "/sys/fs/cgroup", legacy);
        /* The record goes last, and stays while the cgroup does (a process
         * still dying in it): it is what names the pod's pins and cgroup to
         * the orphan sweep, every minute and after a restart, should the
         * agent die first (nanolet removes no pod cgroup it has no record
         * of, docs/resources.md). */
        if (cr >= 0)
                (void)unlink(w->sandbox_record);
        (void)pod_status_remove(w->ctx->status_dir, w->object->uid);
        w->status_text = mfree(w->status_text); /* gone from the API's /pods too */
        (void)pod_events_remove(w->ctx->status_dir, w->object->uid);
        worker_log(w, LOG_INFO, NULL, "Pod \"%s\" is gone.", w->full_name);
        w->ctx->worker_finished(w, w->ctx->userdata);
        return true;
}

/* Replaced or removed before it ever started: it made nothing but its
 * status and events files. One that shares its UID with the pod it waited
 * for (a manifest removed and put back) shares that pod's directories,
 * namespaces, cgroup and files too, and must leave them to it: that pod is
 * still stopping. */
static bool worker_finish_unstarted(PodWorker *w) {
        bool shared = w->predecessor && streq(w->predecessor->object->uid, w->object->uid);

        worker_set_phase(w, WORKER_GONE);
        if (!shared) {
                (void)pod_status_remove(w->ctx->status_dir, w->object->uid);
                (void)pod_events_remove(w->ctx->status_dir, w->object->uid);
        }
        w->status_text = mfree(w->status_text);
        worker_log(w, LOG_INFO, NULL, "Pod \"%s\" is gone (it never started).", w->full_name);
        w->ctx->worker_finished(w, w->ctx->userdata);
        return true;
}

/* ---- the sync ---- */

static int on_wakeup(EventSource *s, usec_t now, void *userdata) {
        pod_worker_request_sync(userdata);
        return 0;
}

static bool worker_sync(PodWorker *w);

/* A phase that needs nothing more of this sync: the next one goes on at once. */
static bool worker_sync_next(PodWorker *w, WorkerPhase phase) {
        worker_set_phase(w, phase);
        return worker_sync(w);
}

static bool worker_sync_adopting(PodWorker *w) {
        bool pending = worker_adopt(w);

        worker_set_phase(w, WORKER_ADMITTING);
        if (pending)
                return false; /* removals in flight; they request the next sync */
        return worker_sync(w);
}

/* kubelet's rejectPod: the event has the message, the status says it was
 * a rejection. */
static void worker_reject(PodWorker *w, const char *reason, PodEventReason event,
                          const char *refusal) {
        worker_log(w, LOG_WARNING, NULL, "Pod \"%s\" rejected: %s", w->full_name, refusal);
        w->state.rejected = true;
        (void)set_str(&w->state.reason, reason);
        free(w->state.message);
        w->state.message = strprintf("Pod was rejected: %s", refusal);
        worker_event(w, NULL, event, "%s", refusal);
        w->status_dirty = true;
}

/* The admission's facts (pod-admit.h) and what its decision says to do.
 * Returns the verdict, or < 0 when there is none this time. */
static int worker_admit(PodWorker *w) {
        _cleanup_free_ char *refusal = NULL, *aa_refusal = NULL, *reason = NULL, *message = NULL;

        int r = pod_sysctl_admit(&w->ctx->sysctls, w->state.pod, &refusal);
        if (r == -ENOMEM)
                return log_oom();
        int ra = container_apparmor_admit(w->state.pod, w->ctx->apparmor.enabled, &aa_refusal);
        if (ra == -ENOMEM)
                return log_oom();
        PodAdmitFacts f = {
                .sysctl_refusal = r < 0 ? strempty(refusal) : NULL,
                .apparmor_refusal = ra < 0 ? strempty(aa_refusal) : NULL,
                .held_reason = w->state.wait_reason,
                .pod_reason = w->state.reason,
        };
        if (!f.sysctl_refusal && !f.apparmor_refusal &&
            w->ctx->wait_for_check(w, &reason, &message, w->ctx->userdata) < 0)
                return -EAGAIN;
        f.wait_reason = reason;
        PodAdmitDecision d = pod_admit_decide(&f);
        if (d.verdict == POD_ADMIT_REJECT) {
                if (f.sysctl_refusal)
                        worker_reject(w, POD_SYSCTL_FORBIDDEN_REASON, POD_EVENT_SYSCTL_FORBIDDEN,
                                      f.sysctl_refusal);
                else
                        worker_reject(w, CONTAINER_APPARMOR_REASON, POD_EVENT_APPARMOR,
                                      f.apparmor_refusal);
                return d.verdict;
        }
        if (d.log_held)
                worker_log(w, LOG_INFO, NULL, "Pod \"%s\" waits: %s", w->full_name, strna(message));
        if (d.event_out_of_pods)
                worker_event(w, NULL, POD_EVENT_OUT_OF_PODS, "%s", strna(message));
        if (d.log_released)
                worker_log(w, LOG_INFO, NULL, "Pod \"%s\" may start now (it waited: %s).",
                           w->full_name, w->state.wait_reason);
        switch (d.pod_reason) {
        case POD_ADMIT_POD_REASON_SET:
                (void)set_str(&w->state.reason, reason);
                (void)set_str(&w->state.message, message);
                break;
        case POD_ADMIT_POD_REASON_CLEAR:
                w->state.reason = mfree(w->state.reason);
                w->state.message = mfree(w->state.message);
                break;
        case POD_ADMIT_POD_REASON_KEEP:
                break;
        }
        free(w->state.wait_reason);
        free(w->state.wait_message);
        w->state.wait_reason = TAKE_PTR(reason);
        w->state.wait_message = TAKE_PTR(message);
        return d.verdict;
}

/* Out of admission: the reasons it was held back for go. */
static void worker_clear_wait(PodWorker *w) {
        if (!w->state.wait_reason)
                return;
        w->state.wait_reason = mfree(w->state.wait_reason);
        w->state.wait_message = mfree(w->state.wait_message);
        if (streq_ptr(w->state.reason, POD_OUT_OF_PODS_REASON)) {
                w->state.reason = mfree(w->state.reason);
                w->state.message = mfree(w->state.message);
        }
}

/* Whatever pod_compute_actions() says now, carried out: container
 * waiting reasons, the sandbox, kills and starts; a finished pod releases
 * its namespaces, a terminated one is torn down. */
static bool worker_run_actions(PodWorker *w) {
        PodActions a = {};
        usec_t now = now_usec(CLOCK_MONOTONIC);

        if (w->state.terminating)
                for (size_t i = 0; i < w->n_ops; i++)
                        (void)container_start_abandon_pull(w->ops[i]);
        containers_release_unclaimed(w, false);
        if (pod_compute_actions(&w->state, now, &a) < 0) {
                log_oom();
                return false;
        }
        for (size_t i = 0; i < a.n_waiting; i++) {
                ContainerState *c =
                        pod_actions_target(&w->state, a.waiting[i].is_init, a.waiting[i].index);
                if (!c)
                        continue;
                /* Once per crash, as the container enters its back-off:
                 * repeats collapse into one event with a count. */
                if (streq_ptr(a.waiting[i].reason, "CrashLoopBackOff") &&
                    !streq_ptr(c->waiting_reason, "CrashLoopBackOff"))
                        worker_event(w, c, POD_EVENT_BACK_OFF,
                                     "Back-off restarting failed container %s in pod %s",
                                     c->spec->name, w->full_name);
                if (streq_ptr(a.waiting[i].reason, "ImagePullBackOff") &&
                    !streq_ptr(c->waiting_reason, "ImagePullBackOff"))
                        worker_event(w, c, POD_EVENT_BACK_OFF, "Back-off pulling image \"%s\"",
                                     c->pull_image ?: c->spec->image);
                container_set_waiting(c, a.waiting[i].reason, a.waiting[i].message);
        }
        if (a.deadline_exceeded && !w->state.deadline_exceeded) {
                w->state.deadline_exceeded = true;
                (void)set_str(&w->state.reason, "DeadlineExceeded");
                (void)set_str(&w->state.message,
                              "Pod was active on the node longer than the specified deadline");
        }
        if (a.create_sandbox)
                worker_create_sandbox(w);
        /* While the namespaces are pinned and CNI ADD runs (children the
         * loop waits for), the first containers' image, rootfs and bundle
         * are prepared; their start after the sandbox only launches them.
         * A CNI pod's preparation waits for the ADD's spawn (pod-sandbox.c
         * arms it): the pin's helper is short, the ADD is most of the
         * sandbox's time, and a preparation still running when the pin is
         * done would hold the ADD back. */
        if (worker_sandbox_busy(w) && a.n_prepare_starts > 0 && !w->prepare_starts) {
                w->prepare_starts = TAKE_PTR(a.prepare_starts);
                w->n_prepare_starts = a.n_prepare_starts;
                a.n_prepare_starts = 0;
                if (!pod_uses_cni(w) || w->cni_op)
                        worker_arm_prepare(w);
        }
        for (size_t i = 0; i < a.n_kills; i++)
                container_kill(w, &a.kills[i]);
        for (size_t i = 0; i < a.n_starts; i++)
                container_start(w, &a.starts[i]);
        containers_release_unclaimed(w, true);

        if (a.pod_done && w->busy == 0) {
                if (w->state.terminating) {
                        pod_actions_done(&a);
                        return worker_teardown(w);
                }
                /* An evicted pod gives its volumes back: what filled the disk
                 * is often an emptyDir. */
                if (w->state.evicted && !w->evicted_volumes_released) {
                        Error err = {};
                        if (pod_volumes_cleanup(w->pod_dir, &err) < 0)
                                worker_log(w, LOG_WARNING, NULL,
                                           "Pod \"%s\": cannot remove its volumes after the "
                                           "eviction: %s",
                                           w->full_name, err.message);
                        w->evicted_volumes_released = true;
                }
                /* A finished pod (Succeeded/Failed) keeps its status and logs
                 * but not its namespaces. */
                bool pinned = sandbox_namespaces(w->state.pod) != 0;
                if (w->phase == WORKER_RUNNING && (!pinned || !worker_network_del(w))) {
                        Error err = {};
                        if (pinned && sandbox_remove(w->ns_dir, &err) < 0)
                                worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name,
                                           err.message);
                        if (pinned)
                                (void)unlink(w->sandbox_record);
                        worker_set_phase(w, WORKER_FINISHED);
                }
        }
        if (a.next_wakeup != USEC_INFINITY) {
                if (!w->wakeup)
                        (void)event_add_time(w->ctx->event, &w->wakeup, a.next_wakeup, 0, on_wakeup,
                                             w);
                else
                        (void)event_source_set_time(w->wakeup, a.next_wakeup);
        }
        pod_actions_done(&a);
        w->status_dirty = true;
        return false;
}

/* Held back until admitted (an adopted pod was admitted by the run that
 * started it); the containers show why they wait. */
static bool worker_sync_admitting(PodWorker *w) {
        if (w->state.sandbox != SANDBOX_NONE)
                return worker_sync_next(w, WORKER_RUNNING);
        if (w->state.terminating)
                return worker_sync_next(w, WORKER_TERMINATING);
        int verdict = worker_admit(w);
        if (verdict < 0)
                return false;
        if (verdict == POD_ADMIT_REJECT) {
                worker_set_phase(w, WORKER_REJECTED);
                return false;
        }
        if (verdict == POD_ADMIT_ADMIT)
                worker_set_phase(w, WORKER_RUNNING);
        return worker_run_actions(w);
}

static bool worker_sync_pod(PodWorker *w) {
        worker_clear_wait(w);
        return worker_run_actions(w);
}

/* Admitted or refused: termination takes over from here. */
static bool worker_sync_settled(PodWorker *w) {
        if (w->state.terminating)
                return worker_sync_next(w, WORKER_TERMINATING);
        return worker_sync_pod(w);
}

/* Returns true when the worker tore its pod down and was freed. */
static bool worker_sync(PodWorker *w) {
        switch (w->phase) {
        case WORKER_WAITING_FOR_PREDECESSOR:
                return w->state.terminating && worker_finish_unstarted(w);
        case WORKER_ADOPTING:
                return worker_sync_adopting(w);
        case WORKER_ADMITTING:
                return worker_sync_admitting(w);
        case WORKER_REJECTED:
        case WORKER_RUNNING:
        case WORKER_FINISHED:
                return worker_sync_settled(w);
        case WORKER_CREATING_SANDBOX: /* its children end first, even for a termination */
        case WORKER_TERMINATING:
        case WORKER_TEARING_DOWN:
                return worker_sync_pod(w);
        case WORKER_GONE:
        case _WORKER_PHASE_MAX:
                break;
        }
        return false;
}

void pod_worker_evict(PodWorker *w, const char *message) {
        if (w->state.evicted || w->state.terminating)
                return;
        w->state.evicted = true;
        w->evicted_volumes_released = false;
        w->evicted_at = now_usec(CLOCK_MONOTONIC);
        (void)set_str(&w->state.reason, "Evicted");
        (void)set_str(&w->state.message, message);
        worker_log(w, LOG_WARNING, NULL, "Evicting pod \"%s\": %s", w->full_name, message);
        worker_event(w, NULL, POD_EVENT_EVICTED, "%s", message);
        w->status_dirty = true;
        pod_worker_request_sync(w);
}

void pod_worker_unevict(PodWorker *w) {
        if (!w->state.evicted)
                return;
        w->state.evicted = false;
        free(w->state.reason);
        free(w->state.message);
        w->state.reason = w->state.message = NULL;
        if (w->phase == WORKER_FINISHED) {
                /* Namespaces and volumes are made again. */
                if (sandbox_namespaces(w->state.pod))
                        w->state.sandbox = SANDBOX_NONE;
                worker_set_phase(w, WORKER_RUNNING);
        }
        worker_log(w, LOG_INFO, NULL,
                   "Pod \"%s\" may start again: the node is no longer under pressure.",
                   w->full_name);
        w->status_dirty = true;
        pod_worker_request_sync(w);
}

bool pod_worker_is_evicted(const PodWorker *w) {
        return w->state.evicted;
}

bool pod_worker_eviction_done(const PodWorker *w, usec_t min_age) {
        return w->state.evicted && w->evicted_volumes_released &&
               now_usec(CLOCK_MONOTONIC) >= w->evicted_at + min_age;
}

static int on_prepare_defer(EventSource *s, usec_t now, void *userdata) {
        PodWorker *w = userdata;
        _cleanup_free_ ContainerStartAction *starts = TAKE_PTR(w->prepare_starts);
        size_t n = w->n_prepare_starts;

        w->n_prepare_starts = 0;
        if (w->phase == WORKER_GONE || w->state.terminating || w->state.evicted ||
            !worker_sandbox_busy(w))
                return 0;
        for (size_t i = 0; i < n; i++)
                container_prepare(w, &starts[i]);
        return 0;
}

void worker_arm_prepare(PodWorker *w) {
        if (w->prepare_starts)
                (void)event_source_set_enabled(w->prepare_defer, true);
}

static int on_sync_defer(EventSource *s, usec_t now, void *userdata) {
        PodWorker *w = userdata;

        if (w->sync_requested) {
                const char *operation = w->synced_once ? "sync" : "create";
                MetricFamily *duration = w->ctx->metrics.pod_worker_duration;
                usec_t begin = now_usec(CLOCK_MONOTONIC);
                w->sync_requested = false;
                w->synced_once = true;
                bool freed = worker_sync(w);
                /* The sync's own work: what it started runs on after it. */
                metric_observe(duration, METRIC_LABELS(operation),
                               (double)(now_usec(CLOCK_MONOTONIC) - begin) / USEC_PER_SEC);
                if (freed)
                        return 0; /* w is freed */
                w->files_synced = true;
        }
        if ((w->status_dirty || w->events_dirty) && w->phase != WORKER_GONE)
                (void)event_source_set_enabled(w->files_defer, true);
        return 0;
}

/* The status and events files, after the work a sync started. A sync that
 * ran in the same iteration as this may have armed the next step of a
 * start (the runtime queue's kick spawns the monitor, or `runc start`) for
 * the next iteration: the files wait for it once, so their writes (a temp
 * file, two fsync()s each) are not on the start's path, and a pod that
 * syncs in every iteration still gets its files written every other one
 * (docs/internals/design-decisions.md, "The start path"). */
static int on_files_defer(EventSource *s, usec_t now, void *userdata) {
        PodWorker *w = userdata;

        if (w->phase == WORKER_GONE)
                return 0;
        if (w->files_synced && !w->files_postponed) {
                w->files_synced = false;
                w->files_postponed = true;
                (void)event_source_set_enabled(w->files_defer, true);
                return 0;
        }
        w->files_synced = w->files_postponed = false;
        if (w->status_dirty)
                worker_write_status(w);
        if (w->events_dirty)
                worker_write_events(w);
        return 0;
}

void pod_worker_terminate(PodWorker *w, const char *reason) {
        if (w->state.terminating)
                return;
        worker_log(w, LOG_INFO, NULL, "Terminating pod \"%s\": %s.", w->full_name, reason);
        w->state.terminating = true;
        pod_worker_request_sync(w);
}

/* A probe or hook changed a container's flags. */
static void on_probes_changed(void *userdata) {
        worker_mark_status(userdata);
}

static void on_probes_event(const ContainerState *c, PodEventReason reason, const char *message,
                            void *userdata) {
        worker_event(userdata, c, reason, "%s", message);
}

int pod_worker_new(PodWorker **ret, PodManagerContext *ctx, ManifestObject *object,
                   const char *source, const char *origin) {
        _cleanup_free_ PodWorker *w = calloc(1, sizeof *w);
        int r;

        if (!w)
                return -ENOMEM;
        w->ctx = ctx;
        w->phase = WORKER_ADOPTING;
        w->first_seen = now_usec(CLOCK_MONOTONIC);
        pod_events_init(&w->events);
        w->object = manifest_object_ref(object);
        w->source = strdup(source);
        w->origin = strdup(origin);
        w->full_name = strprintf("%s_%s(%s)", object->name, object->namespace, object->uid);
        w->pod_ref = strprintf("%s/%s", object->namespace, object->name);
        w->pod_dir = strprintf("%s/%s", ctx->pods_dir, object->uid);
        w->ns_dir = strprintf("%s/%s", ctx->ns_dir, object->uid);
        w->log_dir = strprintf("%s/%s_%s_%s", ctx->o->pod_logs_dir, object->namespace, object->name,
                               object->uid);
        w->sandbox_record = strprintf("%s/%s.json", ctx->sandboxes_dir, object->uid);
        /* NULL (out of memory, or a UID pod_status_write() refuses): every
         * sync then writes, or reports why it cannot. */
        w->status_path = pod_status_path(ctx->status_dir, object->uid);
        if (!w->source || !w->origin || !w->full_name || !w->pod_ref || !w->pod_dir || !w->ns_dir ||
            !w->log_dir || !w->sandbox_record) {
                r = -ENOMEM;
                goto fail;
        }
        r = pod_state_init(&w->state, object->pod, object->uid);
        if (r < 0)
                goto fail;
        r = pod_wait_for_targets(object->pod, &w->wait_for);
        if (r < 0)
                goto fail;
        if (ctx->o->node_ips && ctx->o->node_ips[0] &&
            !(w->state.host_ip = strdup(ctx->o->node_ips[0]))) {
                r = -ENOMEM;
                goto fail;
        }
        w->state.start_time = now_usec(CLOCK_REALTIME);
        w->state.start_monotonic = now_usec(CLOCK_MONOTONIC);
        w->n_ops = w->state.n_init + w->state.n_app;
        w->ops = calloc(MAX(w->n_ops, (size_t)1), sizeof(ContainerOp *));
        if (!w->ops) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < w->n_ops; i++) {
                w->ops[i] = calloc(1, sizeof(ContainerOp));
                if (!w->ops[i]) {
                        r = -ENOMEM;
                        goto fail;
                }
                w->ops[i]->w = w;
                w->ops[i]->is_init = i < w->state.n_init;
                w->ops[i]->index = (unsigned)(w->ops[i]->is_init ? i : i - w->state.n_init);
        }
        PodProbesContext pc = {
                .event = ctx->event,
                .runtime = ctx->o->runtime,
                .curl = &ctx->curl,
                .state = &w->state,
                .pod_dir = w->pod_dir,
                .name = w->full_name,
                .pod_uid = w->object->uid,
                .changed = on_probes_changed,
                .record_event = on_probes_event,
                .userdata = w,
        };
        r = pod_probes_new(&w->probes, &pc);
        if (r < 0)
                goto fail;
        r = event_add_defer(ctx->event, &w->sync_defer, on_sync_defer, w);
        if (r < 0)
                goto fail;
        r = event_add_defer(ctx->event, &w->files_defer, on_files_defer, w);
        if (r < 0)
                goto fail;
        (void)event_source_set_enabled(w->files_defer, false);
        r = event_add_defer(ctx->event, &w->prepare_defer, on_prepare_defer, w);
        if (r < 0)
                goto fail;
        (void)event_source_set_enabled(w->prepare_defer, false);
        *ret = TAKE_PTR(w);
        return 0;
fail:
        pod_worker_free(TAKE_PTR(w));
        return r;
}

PodWorker *pod_worker_free(PodWorker *w) {
        if (!w)
                return NULL;
        if (w->predecessor)
                w->predecessor->successor = NULL;
        if (w->successor)
                w->successor->predecessor = NULL;
        pod_probes_free(w->probes);
        for (size_t i = 0; i < w->n_ops; i++)
                op_free(w->ops[i]);
        free(w->ops);
        if (w->cni_op)
                cni_op_cancel(w->cni_op);
        cni_config_unref(w->cni_config);
        event_source_free(w->sync_defer);
        event_source_free(w->prepare_defer);
        free(w->prepare_starts);
        event_source_free(w->files_defer);
        event_source_free(w->wakeup);
        pod_state_done(&w->state);
        pod_events_done(&w->events);
        pod_etc_files_done(&w->etc);
        pod_volumes_done(&w->volumes);
        manifest_object_unref(w->object);
        free(w->source);
        free(w->origin);
        free(w->full_name);
        free(w->pod_ref);
        free(w->pod_dir);
        free(w->ns_dir);
        free(w->log_dir);
        free(w->sandbox_record);
        free(w->status_path);
        free(w->status_text);
        strv_free(w->wait_for);
        free(w);
        return NULL;
}

int pod_worker_new_from_checkpoint(PodWorker **ret, PodManagerContext *ctx, const char *pod_dir) {
        _cleanup_(pod_checkpoint_done) PodCheckpoint cp = {};
        _cleanup_manifest_object_unref_ ManifestObject *o = NULL;
        int r;

        r = pod_checkpoint_read(pod_dir, &cp);
        if (r < 0)
                return r;
        r = pod_checkpoint_parse(&cp, ctx->o->node_name, now_usec(CLOCK_REALTIME), &o);
        if (r < 0)
                return r;
        PodWorker *w;
        r = pod_worker_new(&w, ctx, o, cp.source, cp.origin);
        if (r < 0)
                return r;
        w->origin_kind = WORKER_ORIGIN_UNCLAIMED_CHECKPOINT;
        w->start_measured = true;
        *ret = w;
        return 0;
}

/* The name and spec of a stray pod: its status file's (<run-dir>/status,
 * written by the run that started it: the real names, init containers and
 * grace period), else its container directories' names with kubelet's
 * default grace period. The name loses the node suffix the parser adds. */
static json_t *stray_manifest(PodManagerContext *ctx, const char *uid, const char *pod_dir) {
        _cleanup_free_ char *status_path = pod_status_path(ctx->status_dir, uid);
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ char *suffix = strprintf("-%s", ctx->o->node_name);
        size_t size;

        if (!suffix)
                return NULL;
        if (status_path &&
            read_full_file_at(AT_FDCWD, status_path, 16 * 1024 * 1024, &text, &size) >= 0) {
                json_t *st = json_loadb(text, size, 0, NULL);
                json_t *meta = json_object_get(st, "metadata");
                const char *name = json_string_value(json_object_get(meta, "name"));
                const char *ns = json_string_value(json_object_get(meta, "namespace"));
                json_t *spec = json_object_get(st, "spec");
                if (name && ns && json_is_object(spec)) {
                        size_t n = strlen(name);
                        if (endswith(name, suffix))
                                n -= strlen(suffix);
                        json_t *o = json_pack("{s:s, s:s, s:{s:s%, s:s}, s:O}", "apiVersion", "v1",
                                              "kind", "Pod", "metadata", "name", name, n,
                                              "namespace", ns, "spec", spec);
                        json_decref(st);
                        return o;
                }
                json_decref(st);
        }
        json_t *containers = json_array();
        _cleanup_free_ char *cdir = strprintf("%s/containers", pod_dir);
        _cleanup_closedir_ DIR *d = cdir ? opendir(cdir) : NULL;
        struct dirent *de;
        while (containers && d && (de = readdir(d)))
                if (de->d_name[0] != '.' && strlen(de->d_name) <= 63 &&
                    strspn(de->d_name, "abcdefghijklmnopqrstuvwxyz0123456789-") ==
                            strlen(de->d_name))
                        (void)json_array_append_new(
                                containers,
                                json_pack("{s:s, s:s}", "name", de->d_name, "image", "unknown"));
        if (containers && json_array_size(containers) == 0)
                (void)json_array_append_new(
                        containers, json_pack("{s:s, s:s}", "name", "unknown", "image", "unknown"));
        _cleanup_free_ char *name = strprintf("stray-%.8s", uid);
        if (!containers || !name) {
                json_decref(containers);
                return NULL;
        }
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:o}}", "apiVersion", "v1", "kind", "Pod",
                         "metadata", "name", name, "namespace", "default", "spec", "containers",
                         containers);
}

int pod_worker_new_stray(PodWorker **ret, PodManagerContext *ctx, const char *uid) {
        _cleanup_manifest_object_unref_ ManifestObject *o = NULL;
        _cleanup_free_ char *pod_dir = strprintf("%s/%s", ctx->pods_dir, uid);
        int r;

        if (!pod_dir)
                return -ENOMEM;
        PodCheckpoint cp = {
                .uid = (char *)uid,
                .source = (char *)"file",
                .origin = pod_dir,
                .manifest = stray_manifest(ctx, uid, pod_dir),
        };
        if (!cp.manifest)
                return -ENOMEM;
        r = pod_checkpoint_parse(&cp, ctx->o->node_name, now_usec(CLOCK_REALTIME), &o);
        json_decref(cp.manifest);
        if (r < 0)
                return r;
        PodWorker *w;
        r = pod_worker_new(&w, ctx, o, cp.source, cp.origin);
        if (r < 0)
                return r;
        w->origin_kind = WORKER_ORIGIN_STRAY;
        w->start_measured = true;
        *ret = w;
        return 0;
}
