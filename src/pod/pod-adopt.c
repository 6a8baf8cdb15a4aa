/* The pod worker's adoption of what an earlier run of the agent left
 * (docs/internals/runtime.md): running containers are adopted, exited ones reported, a
 * sandbox lost to a reboot is cleaned up. See pod-worker-internal.h; the
 * decision per pod is pod_adopt_decide() (pod-adopt.h). */
#include "pod-adopt.h"
#include "pod-worker-internal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "log.h"
#include "mount-util.h"
#include "pod-actions.h"
#include "pod-logs.h"
#include "pod-status.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

/* ---- the decision (pod-adopt.h) ---- */

PodAdoptVerdict pod_adopt_decide(const PodAdoptFacts *f) {
        if (f->checkpoint == POD_ADOPT_CHECKPOINT_READABLE)
                return POD_ADOPT_FROM_CHECKPOINT;
        if (!f->live)
                return POD_ADOPT_NEW;
        if (f->wanted)
                return POD_ADOPT_REBUILD;
        return f->sources_settled ? POD_ADOPT_STOP : POD_ADOPT_WAIT;
}

static const char *const verdict_names[_POD_ADOPT_VERDICT_MAX] = {
        [POD_ADOPT_FROM_CHECKPOINT] = "from-checkpoint",
        [POD_ADOPT_NEW] = "new",
        [POD_ADOPT_REBUILD] = "rebuild",
        [POD_ADOPT_STOP] = "stop",
        [POD_ADOPT_WAIT] = "wait",
};

const char *pod_adopt_verdict_to_string(PodAdoptVerdict v) {
        return v >= 0 && v < _POD_ADOPT_VERDICT_MAX ? verdict_names[v] : NULL;
}

PodAdoptCheckpoint pod_adopt_checkpoint_from_errno(int r) {
        if (r >= 0)
                return POD_ADOPT_CHECKPOINT_READABLE;
        return r == -ENOENT ? POD_ADOPT_CHECKPOINT_MISSING : POD_ADOPT_CHECKPOINT_UNREADABLE;
}

bool pod_adopt_live(char *const *ids, const char *uid, const char *sandbox_record) {
        STRV_FOREACH(id, ids)
                if (container_id_of_pod(*id, uid))
                        return true;
        return sandbox_record && access(sandbox_record, F_OK) >= 0;
}

/* ---- adoption: an agent restart never restarts a running container ---- */

char *attempt_dir_of(const PodWorker *w, const ContainerState *c, unsigned attempt) {
        return strprintf("%s/containers/%s/%u", w->pod_dir, c->spec->name, attempt);
}

/* The runtime ID of an attempt: the legacy name when the runtime has a
 * container by that name (started by an agent before 64-hex IDs), else the
 * current scheme's. */
static char *attempt_container_id(const PodWorker *w, const ContainerState *c, unsigned attempt,
                                  char *const *ids) {
        _cleanup_free_ char *legacy = container_legacy_id(w->object->uid, c->spec->name, attempt);
        if (legacy && strv_contains(ids, legacy))
                return TAKE_PTR(legacy);
        return container_runtime_id(w->object->uid, c->spec->name, attempt);
}

/* The newest attempt number of a container: its attempt directories (in
 * <root-dir>, so they survive a reboot) and the runtime's IDs. */
static bool container_newest_attempt(const PodWorker *w, const ContainerState *c, char **ids,
                                     unsigned *ret) {
        _cleanup_free_ char *dir = strprintf("%s/containers/%s", w->pod_dir, c->spec->name);
        _cleanup_free_ char *prefix = strprintf("%s-%s-", w->object->uid, c->spec->name);
        bool found = false;
        unsigned max = 0;

        if (!dir || !prefix)
                return false;
        _cleanup_(closedirp) DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                unsigned n;
                if (safe_atou(de->d_name, &n) >= 0 && (!found || n > max)) {
                        max = n;
                        found = true;
                }
        }
        STRV_FOREACH(id, ids) {
                const char *tail = startswith(*id, prefix);
                unsigned n;
                if (tail && safe_atou(tail, &n) >= 0 && (!found || n > max)) {
                        max = n;
                        found = true;
                }
        }
        if (found)
                *ret = max;
        return found;
}

static void container_restore_last(PodWorker *w, ContainerState *c, unsigned attempt,
                                   char *const *ids) {
        _cleanup_(attempt_record_done) AttemptRecord rec = { .exit_code = -1 };
        _cleanup_free_ char *dir = NULL;

        if (attempt == 0 || !(dir = attempt_dir_of(w, c, attempt - 1)) ||
            attempt_record_read(dir, &rec) < 0 || rec.finished_at == 0)
                return;
        c->has_last = true;
        c->last_exit_code = rec.exit_code;
        c->last_started_at = rec.started_at;
        c->last_finished_at = rec.finished_at;
        free(c->last_exit_reason);
        c->last_exit_reason = TAKE_PTR(rec.reason);
        free(c->last_container_id);
        c->last_container_id = attempt_container_id(w, c, attempt - 1, ids);
}

static void container_restore_exited(ContainerState *c, AttemptRecord *rec) {
        c->state = CONTAINER_EXITED;
        c->exit_code = rec->exit_code >= 0 ? rec->exit_code : 255;
        c->started_at = rec->started_at;
        c->finished_at = rec->finished_at;
        (void)set_str(&c->exit_reason, rec->reason ? rec->reason : "Unknown");
        free(c->exit_message);
        c->exit_message = TAKE_PTR(rec->message);
}

/* Restores one container from what the earlier run left. Returns true when
 * its newest attempt is still running (and now adopted). */
static bool container_adopt(PodWorker *w, ContainerOp *op, ContainerState *c, char **ids,
                            bool intact) {
        _cleanup_(attempt_record_done) AttemptRecord rec = { .exit_code = -1 };
        unsigned n;

        if (!container_newest_attempt(w, c, ids, &n))
                return false;
        _cleanup_free_ char *dir = attempt_dir_of(w, c, n);
        if (!dir)
                return false;
        int rec_r = attempt_record_read(dir, &rec);
        bool have_rec = rec_r >= 0;
        c->attempt = c->restart_count = n;
        free(c->container_id);
        c->container_id = attempt_container_id(w, c, n, ids);
        if (!c->container_id)
                return false;
        container_restore_last(w, c, n, ids);

        Image *image = NULL;
        Error ie = {};
        /* The digest the attempt was created from, where recorded: the tag may
         * have moved since. */
        if (have_rec && rec.image_digest)
                (void)set_str(&c->image_digest, rec.image_digest);
        if (image_store_get(w->ctx->o->images, c->image_digest ? c->image_digest : c->spec->image,
                            &image, &ie) >= 0) {
                (void)set_str(&c->image_id, image->config_digest);
                op->stop_signal = signal_from_string(image->config.stop_signal);
                image_free(image);
        }

        RuntimeContainerStatus st = {};
        if (runtime_container_status(w->ctx->o->runtime, c->container_id, &st) < 0)
                st.state = RUNTIME_STATE_UNKNOWN;
        /* Recorded (the record comes before the runtime's create) but never
         * started: the earlier run died in between. Not a restart: the next
         * start reuses its number, so RESTARTS stays as it was. A created
         * container of it is removed below. A record that cannot be read
         * tells nothing, and the attempt counts as before. */
        bool never_started =
                (rec_r == -ENOENT || (have_rec && !rec.started_at && !rec.finished_at)) &&
                (st.state == RUNTIME_STATE_UNKNOWN || st.state == RUNTIME_STATE_CREATED);
        if (never_started) {
                worker_log(w, LOG_INFO, c->spec->name,
                           "Container \"%s\" of pod \"%s\": attempt %u was recorded but never "
                           "started; its number is used again.",
                           c->spec->name, w->full_name, n);
                c->state = CONTAINER_NONE;
                c->backoff_until = 0;
                free(c->container_id);
                c->container_id = n > 0 ? attempt_container_id(w, c, n - 1, ids) : NULL;
                c->attempt = c->restart_count = n > 0 ? n - 1 : 0;
                return false;
        }
        if (rec_r < 0 && st.state != RUNTIME_STATE_UNKNOWN)
                worker_log(w, LOG_WARNING, c->spec->name,
                           "Container \"%s\" of pod \"%s\": its attempt record %s/attempt.json "
                           "is %s; its state is taken from the runtime.",
                           c->spec->name, w->full_name, dir,
                           rec_r == -ENOENT ? "missing" : "unreadable");
        if (intact && st.state == RUNTIME_STATE_RUNNING) {
                usec_t now_rt = now_usec(CLOCK_REALTIME), now_mono = now_usec(CLOCK_MONOTONIC);
                c->state = CONTAINER_RUNNING;
                c->started_at = have_rec && rec.started_at ? rec.started_at : now_rt;
                usec_t age = now_rt > c->started_at ? now_rt - c->started_at : 0;
                c->running_since = now_mono > age ? now_mono - age : 0;
                c->exit_code = -1;
                container_set_waiting(c, NULL, NULL);
                pod_probes_container_adopted(w->probes, c);
                worker_log(w, LOG_INFO, c->spec->name,
                           "Adopted running container \"%s\" of pod \"%s\" (%s, pid %d, restart "
                           "count %u).",
                           c->spec->name, w->full_name, c->container_id, (int)st.pid, n);
                return true;
        }
        if (intact && st.state == RUNTIME_STATE_STOPPED) {
                /* It exited while the agent was down: conmon's exit file has
                 * the real code; the restart policy decides as usual. */
                c->state = CONTAINER_RUNNING;
                c->started_at = have_rec ? rec.started_at : 0;
                container_exited(w, op, c, &st);
                backoff_restore(c, n, c->started_at, c->finished_at, now_usec(CLOCK_REALTIME),
                                now_usec(CLOCK_MONOTONIC));
                return true; /* container_exited() removes it */
        }
        if (!intact) {
                /* A new sandbox (a reboot): as kubelet does for a new sandbox,
                 * every container runs again, init containers first, unless
                 * the restart policy says a finished one stays finished. */
                RestartPolicy policy = w->state.pod->spec.restart_policy;
                if (have_rec && rec.started_at && !rec.finished_at) {
                        rec.exit_code = 255;
                        rec.finished_at = now_usec(CLOCK_REALTIME);
                }
                if (have_rec && rec.finished_at &&
                    (policy == RESTART_POLICY_NEVER ||
                     (policy == RESTART_POLICY_ON_FAILURE && !c->is_init && rec.exit_code == 0)))
                        container_restore_exited(c, &rec);
                else {
                        if (have_rec && rec.finished_at) {
                                c->has_last = true;
                                c->last_exit_code = rec.exit_code;
                                c->last_started_at = rec.started_at;
                                c->last_finished_at = rec.finished_at;
                                (void)set_str(&c->last_exit_reason,
                                              rec.reason ? rec.reason : "Unknown");
                                (void)set_str(&c->last_container_id, c->container_id);
                        }
                        c->state = CONTAINER_NONE;
                }
        } else if (have_rec && rec.finished_at)
                container_restore_exited(c, &rec);
        else if (have_rec && rec.started_at && !c->is_init) {
                /* Gone from the runtime (deleted while the agent was down):
                 * conmon's exit file, which outlives runc's state, has the
                 * real exit code when it wrote one; else 255 as kubelet
                 * reports a container it lost. */
                bool have_exit = st.exit_code >= 0;
                rec.exit_code = have_exit ? st.exit_code : 255;
                if (have_exit && !rec.reason)
                        rec.reason = strdup(st.oom_killed       ? "OOMKilled"
                                            : st.exit_code == 0 ? "Completed"
                                                                : "Error");
                container_restore_exited(c, &rec);
                c->finished_at =
                        have_exit && st.finished_at ? st.finished_at : now_usec(CLOCK_REALTIME);
        } else
                /* The attempt never ran (the agent died while creating it):
                 * the next one gets the next number. */
                c->state = CONTAINER_NONE;
        /* An exit the earlier run saw, or that came while the agent was
         * down, waits the back-off its restart count earned, counted from
         * when it exited. Restarting what a reboot interrupted is not a
         * crash loop: no back-off. */
        if (intact && c->state == CONTAINER_EXITED)
                backoff_restore(c, n, c->started_at, c->finished_at, now_usec(CLOCK_REALTIME),
                                now_usec(CLOCK_MONOTONIC));
        else
                c->backoff_until = 0;
        return false;
}

/* Called by the first sync of a pod the earlier agent run checkpointed: with
 * its sandbox intact (<run-dir> survived) running containers are adopted,
 * exited ones reported with their real exit code; otherwise (a reboot, or
 * the agent died before the sandbox was complete) whatever is left is
 * removed and the pod starts afresh with its restart counts kept. Returns
 * true when removals are in flight (the sync continues when they finish). */
bool worker_adopt(PodWorker *w) {
        _cleanup_(pod_checkpoint_done) PodCheckpoint cp = {};
        _cleanup_(sandbox_record_done) SandboxRecord sb = {};
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_strv_free_ char **keep = NULL;
        bool pending = false;

        (void)runtime_list_ids(w->ctx->o->runtime, &ids);
        int r = pod_checkpoint_read(w->pod_dir, &cp);
        if (r >= 0 && !streq(cp.uid, w->object->uid))
                r = -EINVAL; /* another pod's */
        if (r < 0) {
                /* The runtime is the truth: live containers of this UID are
                 * adopted whatever happened to the checkpoint, never started
                 * a second time beside themselves. */
                PodAdoptFacts f = {
                        .checkpoint = pod_adopt_checkpoint_from_errno(r),
                        .live = pod_adopt_live(ids, w->object->uid, w->sandbox_record),
                        .wanted = true,
                };
                if (pod_adopt_decide(&f) != POD_ADOPT_REBUILD)
                        return false; /* a new pod */
                worker_log(w, LOG_WARNING, NULL,
                           "Pod \"%s\": its checkpoint %s/pod.json is %s, yet its containers or "
                           "sandbox still exist: adopting them, the checkpoint is rewritten "
                           "from the manifest.",
                           w->full_name, w->pod_dir, r == -ENOENT ? "missing" : "unreadable");
        } else if (cp.start_time > 0) {
                usec_t now_rt = now_usec(CLOCK_REALTIME), now_mono = now_usec(CLOCK_MONOTONIC);
                usec_t age = now_rt > cp.start_time ? now_rt - cp.start_time : 0;
                w->state.start_time = cp.start_time;
                w->state.start_monotonic = now_mono > age ? now_mono - age : 0;
        }
        bool intact = worker_sandbox_record_load(w, ids, &sb);
        /* The earlier run was removing the pod (its network half or wholly
         * deleted) when it died, and the same pod is wanted again. */
        if (intact && sb.tearing_down)
                intact = false;
        unsigned ns = sandbox_namespaces(w->state.pod);
        static const struct {
                unsigned flag;
                const char *name;
        } pins[] = {
                { SANDBOX_NS_NET, "net" },
                { SANDBOX_NS_IPC, "ipc" },
                { SANDBOX_NS_UTS, "uts" },
                { SANDBOX_NS_PID, "pid" },
        };
        for (size_t i = 0; intact && i < ELEMENTSOF(pins); i++) {
                if (!(ns & pins[i].flag))
                        continue;
                _cleanup_free_ char *pin = sandbox_ns_path(w->ns_dir, pins[i].name);
                if (!pin || access(pin, F_OK) < 0)
                        intact = false;
        }
        worker_log(w, LOG_INFO, NULL, "Pod \"%s\" was left by an earlier run of the agent: %s.",
                   w->full_name,
                   intact            ? "adopting it"
                   : sb.tearing_down ? "it was being removed, starting it afresh"
                                     : "its sandbox is gone, starting it afresh");

        for (size_t slot = 0; slot < w->n_ops; slot++) {
                ContainerOp *op = w->ops[slot];
                ContainerState *c = op_container(op);
                bool running = container_adopt(w, op, c, ids, intact);
                if (running && c->container_id && c->state == CONTAINER_RUNNING)
                        (void)strv_extend(&keep, c->container_id);
                /* Root filesystems of attempts that no longer run (the
                 * earlier run may have died before unmounting them). */
                _cleanup_free_ char *cdir =
                        strprintf("%s/containers/%s", w->pod_dir, c->spec->name);
                _cleanup_(closedirp) DIR *d = cdir ? opendir(cdir) : NULL;
                struct dirent *de;
                while (d && (de = readdir(d))) {
                        unsigned a;
                        if (safe_atou(de->d_name, &a) < 0 ||
                            (c->state == CONTAINER_RUNNING && a == c->attempt))
                                continue;
                        _cleanup_free_ char *attempt_dir = strprintf("%s/%s", cdir, de->d_name);
                        _cleanup_free_ char *rootfs = strprintf("%s/%s/rootfs", cdir, de->d_name);
                        Error ie = {};
                        if (rootfs)
                                (void)image_rootfs_umount(rootfs, &ie);
                        if (attempt_dir)
                                (void)container_subpaths_release(attempt_dir);
                }
        }
        /* Containers of this pod the runtime still has but nobody adopted:
         * stale attempts, or an attempt created but never started. */
        STRV_FOREACH(id, ids) {
                if (strv_contains(keep, *id) || !container_id_of_pod(*id, w->object->uid))
                        continue;
                bool exited_now = false;
                for (size_t slot = 0; slot < w->n_ops; slot++) {
                        ContainerState *c = op_container(w->ops[slot]);
                        if (c->state == CONTAINER_EXITED && streq_ptr(c->container_id, *id) &&
                            intact)
                                exited_now = true; /* container_exited() deletes it */
                }
                if (exited_now)
                        continue;
                log_info("Removing container %s left by an earlier run of the agent.", *id);
                w->busy++;
                if (runtime_container_delete(w->ctx->o->runtime, *id, true, on_attempt_deleted, w,
                                             NULL) < 0)
                        w->busy--;
                else
                        pending = true;
        }

        if (intact) {
                strv_free(w->state.pod_ips);
                w->state.pod_ips = TAKE_PTR(sb.pod_ips);
                (void)set_str(&w->state.pod_ip, w->state.pod_ips ? w->state.pod_ips[0] : NULL);
                w->state.sandbox = SANDBOX_READY;
                Error err = {};
                if (w->origin_kind != WORKER_ORIGIN_STRAY && worker_prepare(w, &err) < 0)
                        worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name,
                                   err.message);
                if (sb.network && pod_uses_cni(w)) {
                        CniError cerr = {};
                        w->network_added = true;
                        if (cni_config_load(w->ctx->o->cni_conf_dir, w->ctx->o->pod_cidr,
                                            &w->cni_config, &cerr) < 0)
                                w->cni_config = NULL; /* DEL uses the cached configuration */
                        cni_error_done(&cerr);
                        worker_network_check(w);
                }
                return pending;
        }
        w->state.init_rerun = w->state.n_init > 0;
        /* Not intact: a network the earlier run added (or was adding when it
         * died) is released before its namespaces go; DEL tolerates a
         * missing netns, and host-local releases the lease by container ID. */
        w->stale_sandbox = true;
        if (pod_uses_cni(w)) {
                CniError cerr = {};
                if (cni_config_load(w->ctx->o->cni_conf_dir, w->ctx->o->pod_cidr, &w->cni_config,
                                    &cerr) < 0)
                        w->cni_config = NULL;
                cni_error_done(&cerr);
                w->network_added = true;
                if (worker_network_del(w))
                        pending = true;
        }
        return pending;
}
