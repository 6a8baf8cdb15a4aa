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
#include "fileio.h"
#include "log.h"
#include "mount-util.h"
#include "pod-actions.h"
#include "pod-logs.h"
#include "pod-status.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

static_assert(POD_RUNTIME_ID_MAX == RUNTIME_ID_MAX,
              "validation must refuse exactly the container IDs the runtime refuses");

/* Per-container bookkeeping the PodState does not hold: what is in flight. */
struct ContainerOp {
        PodWorker *w;
        bool is_init;
        unsigned index;

        /* start pipeline */
        bool starting;
        unsigned attempt;
        char *id;
        char *attempt_dir;
        char *rootfs;
        char *log_path;
        Image *image;
        ImageWorker iw;
        EventSource *iw_source;
        RuntimeOp *rop;
        bool rootfs_mounted;

        ContainerRunState state_before; /* restored when the attempt cannot start */
        int stop_signal;

        /* kill */
        bool killing;
        usec_t kill_deadline; /* CLOCK_MONOTONIC; preStop runs until then at most */
        EventSource *grace_timer;
};

static ContainerState *op_container(ContainerOp *op) {
        return pod_actions_target(&op->w->state, op->is_init, op->index);
}

static ContainerOp *worker_op(PodWorker *w, bool is_init, unsigned index) {
        size_t slot = is_init ? index : w->state.n_init + index;
        return slot < w->n_ops ? w->ops[slot] : NULL;
}

static void op_clear_start(ContainerOp *op) {
        free(op->id);
        free(op->attempt_dir);
        free(op->rootfs);
        free(op->log_path);
        op->id = op->attempt_dir = op->rootfs = op->log_path = NULL;
        op->image = image_free(op->image);
        op->iw_source = event_source_free(op->iw_source);
        if (op->iw.pid > 0)
                image_worker_abort(&op->iw);
        op->iw = IMAGE_WORKER_NULL;
        if (op->rop)
                runtime_op_cancel(op->rop);
        op->rop = NULL;
        op->starting = false;
}

static void op_free(ContainerOp *op) {
        if (!op)
                return;
        op_clear_start(op);
        event_source_free(op->grace_timer);
        free(op);
}

const char *pod_worker_uid(const PodWorker *w) {
        return w->object->uid;
}

static int set_str(char **field, const char *value) {
        char *c = NULL;
        if (value && !(c = strdup(value)))
                return -ENOMEM;
        free(*field);
        *field = c;
        return 0;
}

/* ---- status ---- */

static int on_sync_defer(EventSource *s, usec_t now, void *userdata);

void pod_worker_request_sync(PodWorker *w) {
        w->sync_requested = true;
        (void)event_source_set_enabled(w->sync_defer, true);
}

static void worker_mark_status(PodWorker *w) {
        w->status_dirty = true;
        pod_worker_request_sync(w);
}

static void worker_write_status(PodWorker *w) {
        json_t *j = NULL;
        int r;

        w->status_dirty = false;
        if (w->torn_down)
                return;
        (void)pod_status_update_conditions(&w->state, now_usec(CLOCK_REALTIME));
        PodStatusContext sc = {
                .canonical_json = w->object->canonical_json,
                .node_name = w->ctx->o->node_name,
                .runtime_name = w->ctx->o->runtime_name,
        };
        r = pod_status_to_json(&w->state, &sc, &j);
        if (r < 0) {
                log_warning_errno(r, "Failed to build status of pod \"%s\": %m", w->full_name);
                return;
        }
        r = pod_status_write(w->ctx->status_dir, w->object->uid, j);
        json_decref(j);
        if (r < 0)
                log_warning_errno(r, "Failed to write status of pod \"%s\": %m", w->full_name);
}

/* ---- completion helpers ---- */

static void worker_op_done(PodWorker *w) {
        assert(w->busy > 0);
        w->busy--;
        worker_mark_status(w);
}

static void container_set_waiting(ContainerState *c, const char *reason, const char *message) {
        (void)set_str(&c->waiting_reason, reason);
        (void)set_str(&c->waiting_message, message);
}

/* An attempt could not be created or started: the container waits with the
 * reason kubelet would show and retries after the back-off. */
static void start_failed(ContainerOp *op, const char *reason, const char *message) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        log_warning("Failed to start container \"%s\" of pod \"%s\": %s: %s", c->spec->name,
                    w->full_name, reason, message);
        container_set_waiting(c, reason, message);
        if (op->rootfs_mounted) {
                Error ie = {};
                (void)image_rootfs_umount(op->rootfs, &ie);
                op->rootfs_mounted = false;
        }
        if (op->attempt_dir)
                (void)container_subpaths_release(op->attempt_dir);
        c->state = op->state_before;
        backoff_on_exit(c, now_usec(CLOCK_MONOTONIC));
        op_clear_start(op);
        worker_op_done(w);
}

/* ---- sandbox ---- */

static unsigned sandbox_namespaces(const Pod *p) {
        const PodSpec *s = &p->spec;
        unsigned ns = 0;
        if (!s->host_network)
                ns |= SANDBOX_NS_NET | SANDBOX_NS_UTS;
        if (!s->host_ipc)
                ns |= SANDBOX_NS_IPC;
        if (s->share_process_namespace)
                ns |= SANDBOX_NS_PID;
        return ns;
}

static int worker_write_pod_files(PodWorker *w, bool warn, Error *err);

static void sandbox_failed(PodWorker *w, const char *message) {
        log_warning("Failed to create sandbox of pod \"%s\": %s", w->full_name, message);
        w->state.sandbox = SANDBOX_FAILED;
        (void)set_str(&w->state.sandbox_message, message);
        backoff_sandbox_failed(&w->state, now_usec(CLOCK_MONOTONIC));
}

static void sandbox_ready(PodWorker *w) {
        log_info("Sandbox of pod \"%s\" is ready%s%s.", w->full_name,
                 w->state.pod_ip ? ", IP " : "", strempty(w->state.pod_ip));
        w->state.sandbox = SANDBOX_READY;
        (void)set_str(&w->state.sandbox_message, NULL);
        w->state.sandbox_backoff_until = w->state.sandbox_backoff_delay = 0;
        SandboxRecord rec = { .pod_ips = w->state.pod_ips, .network = w->network_added };
        int r = sandbox_record_write(w->sandbox_record, &rec);
        if (r < 0)
                log_warning_errno(r, "Pod \"%s\": cannot record its sandbox in %s, a restarted agent would recreate it: %m",
                                  w->full_name, w->sandbox_record);
}

static bool pod_uses_cni(const PodWorker *w) {
        return w->ctx->o->cni && !w->state.pod->spec.host_network;
}

/* The CNI request of this pod: the pod UID is the CNI container ID. */
static int worker_cni_request(PodWorker *w, CniRequest *req, CniPortMapping **ret_ports,
                              char **ret_netns) {
        const PodSpec *spec = &w->state.pod->spec;
        _cleanup_free_ CniPortMapping *ports = NULL;
        size_t n = 0;

        /* Every hostPort of every container, for portmap (kubelet does the same). */
        for (int pass = 0; pass < 2; pass++) {
                const Container *cs = pass ? spec->containers : spec->init_containers;
                size_t nc = pass ? spec->n_containers : spec->n_init_containers;
                for (size_t i = 0; i < nc; i++)
                        for (size_t j = 0; j < cs[i].n_ports; j++) {
                                const ContainerPort *p = &cs[i].ports[j];
                                if (p->host_port <= 0)
                                        continue;
                                CniPortMapping *np = realloc(ports, sizeof *np * (n + 1));
                                if (!np)
                                        return -ENOMEM;
                                ports = np;
                                ports[n++] = (CniPortMapping){
                                        .host_port = (uint16_t)p->host_port,
                                        .container_port = (uint16_t)p->container_port,
                                        .protocol = cni_protocol_from_string(protocol_to_string(p->protocol)),
                                        .host_ip = p->host_ip,
                                };
                        }
        }
        char *netns = sandbox_ns_path(w->ns_dir, "net");
        if (!netns)
                return -ENOMEM;
        *req = (CniRequest){
                .container_id = w->object->uid,
                .netns = netns,
                .pod_namespace = w->object->namespace,
                .pod_name = w->object->name,
                .pod_uid = w->object->uid,
                .port_mappings = ports,
                .n_port_mappings = n,
        };
        *ret_ports = TAKE_PTR(ports);
        *ret_netns = netns;
        return 0;
}

static void on_network_added(CniRunner *runner, int r, CniResult *result, const CniError *err,
                             void *userdata) {
        PodWorker *w = userdata;
        _cleanup_(cni_result_freep) CniResult *res = result;

        w->cni_op = NULL;
        w->sandbox_pending = false;
        if (r < 0) {
                _cleanup_free_ char *msg = cni_error_to_string(err);
                /* The ADD undid itself; the namespaces go too, so a retry
                 * starts from nothing (no half-created sandbox). */
                w->network_added = false;
                Error e = {};
                (void)sandbox_remove(w->ns_dir, &e);
                sandbox_failed(w, msg ? msg : strerror(-r));
                worker_op_done(w);
                return;
        }
        _cleanup_strv_free_ char **ips = NULL;
        if (cni_result_pod_ips(res, &ips) >= 0 && ips && ips[0]) {
                (void)set_str(&w->state.pod_ip, ips[0]);
                strv_free(w->state.pod_ips);
                w->state.pod_ips = TAKE_PTR(ips);
        }
        /* /etc/hosts names the pod's own IP, known only now. */
        Error e = {};
        if (worker_write_pod_files(w, false, &e) < 0)
                log_warning("Pod \"%s\": %s", w->full_name, e.message);
        sandbox_ready(w);
        worker_op_done(w);
}

static void worker_network_add(PodWorker *w) {
        _cleanup_free_ CniPortMapping *ports = NULL;
        _cleanup_free_ char *netns = NULL;
        CniRequest req;
        CniError err = {};
        int r;

        w->cni_config = cni_config_unref(w->cni_config);
        r = cni_config_load(w->ctx->o->cni_conf_dir, w->ctx->o->pod_cidr, &w->cni_config, &err);
        if (r >= 0)
                r = worker_cni_request(w, &req, &ports, &netns);
        if (r >= 0) {
                w->busy++;
                w->sandbox_pending = true;
                w->network_added = true;
                r = cni_add(w->ctx->o->cni, w->cni_config, &req, on_network_added, w, &w->cni_op);
                if (r < 0) {
                        w->busy--;
                        w->sandbox_pending = false;
                        w->network_added = false;
                }
        }
        if (r < 0) {
                _cleanup_free_ char *msg = cni_error_to_string(&err);
                Error e = {};
                (void)sandbox_remove(w->ns_dir, &e);
                sandbox_failed(w, msg && err.base.message[0] ? msg : strerror(-r));
                worker_mark_status(w);
        }
        cni_error_done(&err);
}

static void on_network_deleted(CniRunner *runner, int r, CniResult *result, const CniError *err,
                               void *userdata) {
        PodWorker *w = userdata;

        cni_result_free(result);
        w->cni_op = NULL;
        if (r < 0) {
                _cleanup_free_ char *msg = cni_error_to_string(err);
                log_warning("Pod \"%s\": CNI DEL failed, the sandbox is removed anyway: %s",
                            w->full_name, strna(msg));
        }
        w->network_added = false;
        worker_op_done(w);
}

static void on_network_checked(CniRunner *runner, int r, CniResult *result, const CniError *err,
                               void *userdata) {
        PodWorker *w = userdata;

        cni_result_free(result);
        w->cni_op = NULL;
        if (r < 0 && r != -ENOENT) {
                _cleanup_free_ char *msg = cni_error_to_string(err);
                log_warning("Pod \"%s\": CNI CHECK of the adopted network failed: %s", w->full_name,
                            strna(msg));
        } else if (r >= 0)
                log_debug("Pod \"%s\": CNI CHECK passed.", w->full_name);
        worker_op_done(w);
}

/* CHECK of an adopted pod's network (CNI spec: the runtime verifies what it
 * did not set up in this run). A failure is reported, not acted on: the
 * containers keep running as they are. */
static void worker_network_check(PodWorker *w) {
        _cleanup_free_ CniPortMapping *ports = NULL;
        _cleanup_free_ char *netns = NULL;
        CniRequest req;

        if (w->cni_op || worker_cni_request(w, &req, &ports, &netns) < 0)
                return;
        w->busy++;
        if (cni_check(w->ctx->o->cni, &req, on_network_checked, w, &w->cni_op) < 0)
                w->busy--;
}

/* DEL before the namespaces go (SPEC §8). Returns true while it runs. */
static bool worker_network_del(PodWorker *w) {
        _cleanup_free_ CniPortMapping *ports = NULL;
        _cleanup_free_ char *netns = NULL;
        CniRequest req;

        if (w->cni_op)
                return true;
        if (!w->network_added || !w->ctx->o->cni)
                return false;
        if (worker_cni_request(w, &req, &ports, &netns) < 0)
                return false;
        w->busy++;
        if (cni_del(w->ctx->o->cni, w->cni_config, &req, on_network_deleted, w, &w->cni_op) < 0) {
                w->busy--;
                w->network_added = false;
                return false;
        }
        return true;
}

static void on_sandbox_created(Runtime *rt, int r, pid_t holder, const Error *err,
                               void *userdata) {
        PodWorker *w = userdata;

        w->sandbox_pending = false;
        if (r < 0)
                sandbox_failed(w, err && err->message[0] ? err->message : strerror(-r));
        else if (pod_uses_cni(w))
                /* Network before any container, init containers included. */
                worker_network_add(w);
        else
                sandbox_ready(w);
        worker_op_done(w);
}

/* /etc/hosts, hostname, resolv.conf and the volumes: written before the
 * sandbox, and again once the network gave the pod its IP (the hosts line
 * and downwardAPI podIP items depend on it; volumes are rewritten in place
 * atomically). warn: log what kubelet reports as events, the first time only. */
static int worker_write_pod_files(PodWorker *w, bool warn, Error *err) {
        const PodManagerOptions *o = w->ctx->o;
        _cleanup_strv_free_ char **warnings = NULL;
        int r;

        PodEtcOptions eo = {
                .pod_dir = w->pod_dir,
                .node_hostname = o->node_hostname,
                .cluster_domain = o->cluster_domain,
                .cluster_dns = o->cluster_dns,
                .resolv_conf = o->resolv_conf,
                .pod_ips = w->state.pod_ips,
        };
        pod_etc_files_done(&w->etc);
        r = pod_etc_files_write(w->state.pod, &eo, &w->etc, warn ? &warnings : NULL, err);
        if (r < 0)
                return r;
        STRV_FOREACH(s, warnings)
                log_warning("Pod \"%s\": %s", w->full_name, *s);

        PodNodeInfo node = { .node_name = o->node_name, .pod_ips = w->state.pod_ips,
                             .host_ips = o->node_ips };
        PodVolumesOptions vo = { .pod_dir = w->pod_dir, .node = &node, .lookup = &w->ctx->lookup };
        pod_volumes_done(&w->volumes);
        return pod_volumes_prepare(w->state.pod, &vo, &w->volumes, err);
}

/* Checkpoint, pod directory, etc files and volumes: everything a
 * container needs from the node before the first one starts. */
static int worker_prepare(PodWorker *w, Error *err) {
        int r;

        if (w->prepared)
                return 0;
        r = mkdir_p(w->pod_dir, 0700);
        if (r < 0)
                return error_set(err, r, "cannot create %s: %s", w->pod_dir, strerror(-r));

        PodCheckpoint cp = {
                .uid = w->object->uid,
                .name = w->object->name,
                .namespace = w->object->namespace,
                .source = w->source,
                .origin = w->origin,
                .manifest = json_loads(w->object->canonical_json, 0, NULL),
                .start_time = w->state.start_time,
        };
        r = pod_checkpoint_write(w->pod_dir, &cp);
        json_decref(cp.manifest);
        if (r < 0)
                return error_set(err, r, "cannot write the pod checkpoint: %s",
                                         strerror(-r));

        r = worker_write_pod_files(w, true, err);
        if (r < 0)
                return r;
        w->prepared = true;
        return 0;
}

static void on_attempt_deleted(Runtime *rt, int r, const Error *err, void *userdata);
static bool worker_network_del(PodWorker *w);
static void container_exited(PodWorker *w, ContainerOp *op, ContainerState *c,
                             const RuntimeContainerStatus *st);
static int signal_from_string(const char *s);

/* ---- adoption (SPEC §6): an agent restart never restarts a running container ---- */

static char *attempt_dir_of(const PodWorker *w, const ContainerState *c, unsigned attempt) {
        return strprintf("%s/containers/%s/%u", w->pod_dir, c->spec->name, attempt);
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

static void container_restore_last(PodWorker *w, ContainerState *c, unsigned attempt) {
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
        c->last_container_id = strprintf("%s-%s-%u", w->object->uid, c->spec->name, attempt - 1);
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
        bool have_rec = attempt_record_read(dir, &rec) >= 0;
        c->attempt = c->restart_count = n;
        free(c->container_id);
        c->container_id = strprintf("%s-%s-%u", w->object->uid, c->spec->name, n);
        if (!c->container_id)
                return false;
        container_restore_last(w, c, n);

        Image *image = NULL;
        Error ie = {};
        if (image_store_get(w->ctx->o->images, c->spec->image, &image, &ie) >= 0) {
                (void)set_str(&c->image_id, image->config_digest);
                op->stop_signal = signal_from_string(image->config.stop_signal);
                image_free(image);
        }

        RuntimeContainerStatus st = {};
        if (runtime_container_status(w->ctx->o->runtime, c->container_id, &st) < 0)
                st.state = RUNTIME_STATE_UNKNOWN;
        if (intact && st.state == RUNTIME_STATE_RUNNING) {
                usec_t now_rt = now_usec(CLOCK_REALTIME), now_mono = now_usec(CLOCK_MONOTONIC);
                c->state = CONTAINER_RUNNING;
                c->started_at = have_rec && rec.started_at ? rec.started_at : now_rt;
                usec_t age = now_rt > c->started_at ? now_rt - c->started_at : 0;
                c->running_since = now_mono > age ? now_mono - age : 0;
                c->exit_code = -1;
                container_set_waiting(c, NULL, NULL);
                pod_probes_container_adopted(w, c);
                log_info("Adopted running container \"%s\" of pod \"%s\" (%s, pid %d, restart count %u).",
                         c->spec->name, w->full_name, c->container_id, (int)st.pid, n);
                return true;
        }
        if (intact && st.state == RUNTIME_STATE_STOPPED) {
                /* It exited while the agent was down: conmon's exit file has
                 * the real code; the restart policy decides as usual. */
                c->state = CONTAINER_RUNNING;
                c->started_at = have_rec ? rec.started_at : 0;
                container_exited(w, op, c, &st);
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
                                (void)set_str(&c->last_exit_reason, rec.reason ? rec.reason : "Unknown");
                                (void)set_str(&c->last_container_id, c->container_id);
                        }
                        c->state = CONTAINER_NONE;
                }
        } else if (have_rec && rec.finished_at)
                container_restore_exited(c, &rec);
        else if (have_rec && rec.started_at && !c->is_init) {
                /* Gone from the runtime without an exit code. */
                rec.exit_code = 255;
                container_restore_exited(c, &rec);
                c->finished_at = now_usec(CLOCK_REALTIME);
        } else
                /* The attempt never ran (the agent died while creating it):
                 * the next one gets the next number. */
                c->state = CONTAINER_NONE;
        /* Restarting what an agent restart or reboot interrupted is not a
         * crash loop: no back-off. */
        c->backoff_until = 0;
        return false;
}

/* Called by the first sync of a pod the earlier agent run checkpointed: with
 * its sandbox intact (<run-dir> survived) running containers are adopted,
 * exited ones reported with their real exit code; otherwise (a reboot, or
 * the agent died before the sandbox was complete) whatever is left is
 * removed and the pod starts afresh with its restart counts kept. Returns
 * true when removals are in flight (the sync continues when they finish). */
static bool worker_adopt(PodWorker *w) {
        _cleanup_(pod_checkpoint_done) PodCheckpoint cp = {};
        _cleanup_(sandbox_record_done) SandboxRecord sb = {};
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_strv_free_ char **keep = NULL;
        bool pending = false;

        w->adopt_checked = true;
        if (pod_checkpoint_read(w->pod_dir, &cp) < 0)
                return false; /* a new pod */
        if (cp.start_time > 0) {
                usec_t now_rt = now_usec(CLOCK_REALTIME), now_mono = now_usec(CLOCK_MONOTONIC);
                usec_t age = now_rt > cp.start_time ? now_rt - cp.start_time : 0;
                w->state.start_time = cp.start_time;
                w->state.start_monotonic = now_mono > age ? now_mono - age : 0;
        }
        bool intact = sandbox_record_read(w->sandbox_record, &sb) >= 0;
        unsigned ns = sandbox_namespaces(w->state.pod);
        static const struct { unsigned flag; const char *name; } pins[] = {
                { SANDBOX_NS_NET, "net" }, { SANDBOX_NS_IPC, "ipc" },
                { SANDBOX_NS_UTS, "uts" }, { SANDBOX_NS_PID, "pid" },
        };
        for (size_t i = 0; intact && i < ELEMENTSOF(pins); i++) {
                if (!(ns & pins[i].flag))
                        continue;
                _cleanup_free_ char *pin = sandbox_ns_path(w->ns_dir, pins[i].name);
                if (!pin || access(pin, F_OK) < 0)
                        intact = false;
        }
        (void)runtime_list_ids(w->ctx->o->runtime, &ids);
        log_info("Pod \"%s\" was checkpointed by an earlier run of the agent: %s.", w->full_name,
                 intact ? "adopting it" : "its sandbox is gone, starting it afresh");

        for (size_t slot = 0; slot < w->n_ops; slot++) {
                ContainerOp *op = w->ops[slot];
                ContainerState *c = op_container(op);
                bool running = container_adopt(w, op, c, ids, intact);
                if (running && c->container_id && c->state == CONTAINER_RUNNING)
                        (void)strv_extend(&keep, c->container_id);
                /* Root filesystems of attempts that no longer run (the
                 * earlier run may have died before unmounting them). */
                _cleanup_free_ char *cdir = strprintf("%s/containers/%s", w->pod_dir, c->spec->name);
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
        _cleanup_free_ char *prefix = strprintf("%s-", w->object->uid);
        STRV_FOREACH(id, ids) {
                if (!prefix || !startswith(*id, prefix) || strv_contains(keep, *id))
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
                if (worker_prepare(w, &err) < 0)
                        log_warning("Pod \"%s\": %s", w->full_name, err.message);
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

static void worker_create_sandbox(PodWorker *w) {
        Error err = {};
        int r;

        if (w->sandbox_pending || w->cni_op)
                return;
        if (w->stale_sandbox) {
                if (sandbox_remove(w->ns_dir, &err) < 0)
                        log_warning("Pod \"%s\": %s", w->full_name, err.message);
                (void)unlink(w->sandbox_record);
                w->stale_sandbox = false;
                err = (Error){};
        }
        r = worker_prepare(w, &err);
        if (r < 0) {
                log_warning("Failed to prepare pod \"%s\": %s", w->full_name, err.message);
                w->state.sandbox = SANDBOX_FAILED;
                (void)set_str(&w->state.sandbox_message, err.message);
                backoff_sandbox_failed(&w->state, now_usec(CLOCK_MONOTONIC));
                worker_mark_status(w);
                return;
        }
        unsigned ns = sandbox_namespaces(w->state.pod);
        if (ns == 0) {
                w->state.sandbox = SANDBOX_READY;
                worker_mark_status(w);
                return;
        }
        _cleanup_free_ char *hostname = NULL;
        (void)pod_hostname(w->state.pod, w->ctx->o->node_hostname, &hostname);
        SandboxRequest req = { .dir = w->ns_dir, .namespaces = ns, .hostname = hostname };
        w->busy++;
        w->sandbox_pending = true;
        r = sandbox_create(w->ctx->o->runtime, &req, on_sandbox_created, w, NULL);
        if (r < 0) {
                Error e = {};
                error_set(&e, r, "cannot create the pod sandbox: %s", strerror(-r));
                on_sandbox_created(w->ctx->o->runtime, r, 0, &e, w);
        }
}

/* ---- container start: image -> rootfs -> bundle -> conmon/runc ---- */

static void on_attempt_deleted(Runtime *rt, int r, const Error *err, void *userdata);

static void on_container_started(Runtime *rt, int r, const Error *err, void *userdata) {
        ContainerOp *op = userdata;
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        op->rop = NULL;
        if (r < 0) {
                /* The created container must go, or its ID blocks the next attempt. */
                w->busy++;
                if (runtime_container_delete(rt, op->id, true, on_attempt_deleted, w, NULL) < 0)
                        worker_op_done(w);
                start_failed(op, "RunContainerError", err ? err->message : strerror(-r));
                return;
        }
        c->state = CONTAINER_RUNNING;
        c->started_at = now_usec(CLOCK_REALTIME);
        c->running_since = now_usec(CLOCK_MONOTONIC);
        c->exit_code = -1;
        c->kill_requested = false;
        container_set_waiting(c, NULL, NULL);
        log_info("Started container \"%s\" of pod \"%s\" (%s).", c->spec->name, w->full_name,
                 op->id);
        AttemptRecord rec = { .started_at = c->started_at, .exit_code = -1 };
        r = attempt_record_write(op->attempt_dir, &rec);
        if (r < 0)
                log_warning_errno(r, "Container \"%s\" of pod \"%s\": cannot record its start: %m",
                                  c->spec->name, w->full_name);
        /* postStart, then probes; they set started/ready. */
        pod_probes_container_started(w, c);

        if (w->ctx->o->container_logs_dir) {
                _cleanup_free_ char *link = strprintf("%s/%s_%s_%s-%s.log",
                                                      w->ctx->o->container_logs_dir,
                                                      w->object->name, w->object->namespace,
                                                      c->spec->name, op->id);
                if (link) {
                        (void)mkdir_p(w->ctx->o->container_logs_dir, 0755);
                        (void)unlink(link);
                        if (symlink(op->log_path, link) < 0)
                                log_debug_errno(errno, "Failed to link %s: %m", link);
                }
        }
        /* The attempt now belongs to the container; only the op's scratch goes. */
        op->rootfs_mounted = false;
        op_clear_start(op);
        worker_op_done(w);
}

static void on_container_created(Runtime *rt, int r, pid_t pid, pid_t conmon_pid,
                                 const Error *err, void *userdata) {
        ContainerOp *op = userdata;
        ContainerState *c = op_container(op);

        op->rop = NULL;
        if (r < 0) {
                start_failed(op, "CreateContainerError", err ? err->message : strerror(-r));
                return;
        }
        c->state = CONTAINER_CREATED;
        r = runtime_container_start(rt, op->id, on_container_started, op, &op->rop);
        if (r < 0) {
                Error e = {};
                error_set(&e, r, "cannot start: %s", strerror(-r));
                on_container_started(rt, r, &e, op);
        }
}

static void container_create(ContainerOp *op) {
        PodWorker *w = op->w;
        const PodManagerOptions *o = w->ctx->o;
        ContainerState *c = op_container(op);
        Error err = {};
        int r;

        PodNodeInfo node = { .node_name = o->node_name, .pod_ips = w->state.pod_ips,
                             .host_ips = o->node_ips };
        _cleanup_free_ char *bundle = strprintf("%s/bundle", op->attempt_dir);
        _cleanup_free_ char *termlog = strprintf("%s/termination-log", op->attempt_dir);
        _cleanup_free_ char *ns_net = sandbox_ns_path(w->ns_dir, "net");
        _cleanup_free_ char *ns_ipc = sandbox_ns_path(w->ns_dir, "ipc");
        _cleanup_free_ char *ns_uts = sandbox_ns_path(w->ns_dir, "uts");
        _cleanup_free_ char *ns_pid = sandbox_ns_path(w->ns_dir, "pid");
        if (!bundle || !termlog || !ns_net || !ns_ipc || !ns_uts || !ns_pid) {
                start_failed(op, "CreateContainerError", "out of memory");
                return;
        }
        ContainerBuildContext bc = {
                .pod = w->state.pod,
                .container = c->spec,
                .image = &op->image->config,
                .node = &node,
                .lookup = &w->ctx->lookup,
                .container_id = op->id,
                .attempt = op->attempt,
                .rootfs = op->rootfs,
                .attempt_dir = op->attempt_dir,
                .pids_limit = o->pod_pids_limit > 0 ? o->pod_pids_limit : 0,
                .etc_hosts_path = w->etc.hosts,
                .etc_hostname_path = w->etc.hostname,
                .resolv_conf_path = w->etc.resolv_conf,
                .volumes = &w->volumes,
                .termination_log_path = termlog,
                .ns_net = ns_net,
                .ns_ipc = ns_ipc,
                .ns_uts = ns_uts,
                .ns_pid = ns_pid,
                .node_hostname = o->node_hostname,
                .seccomp_dir = w->ctx->seccomp_dir,
        };
        _cleanup_strv_free_ char **warnings = NULL;
        bc.warnings = &warnings;
        RuntimeContainerConfig cfg = {};
        r = container_config_build(&bc, &cfg, &err);
        STRV_FOREACH(s, warnings)
                log_warning("Container \"%s\" of pod \"%s\": %s", c->spec->name, w->full_name, *s);
        if (r < 0) {
                start_failed(op, CONTAINER_CONFIG_ERROR_REASON, err.message);
                return;
        }
        if (cfg.oom_score_adj_set && cfg.oom_score_adj < w->ctx->oom_score_adj_floor) {
                /* Without CAP_SYS_RESOURCE the OOM score cannot go below the
                 * agent's own: degrade rather than fail the pod (kubelet's
                 * critical pods ask for -997). */
                PodManagerContext *ctx = w->ctx;
                if (!ctx->oom_warned)
                        log_warning("Cannot lower oom_score_adj below %d (no CAP_SYS_RESOURCE); containers that ask for less (e.g. %d for \"%s\") get %d.",
                                    ctx->oom_score_adj_floor, cfg.oom_score_adj, w->full_name,
                                    ctx->oom_score_adj_floor);
                ctx->oom_warned = true;
                cfg.oom_score_adj = ctx->oom_score_adj_floor;
        }
        r = runtime_bundle_write(bundle, &cfg, &err);
        runtime_container_config_done(&cfg);
        if (r < 0) {
                start_failed(op, CONTAINER_CONFIG_ERROR_REASON, err.message);
                return;
        }
        _cleanup_free_ char *log_dir = strprintf("%s/%s", w->log_dir, c->spec->name);
        if (!log_dir || mkdir_p(log_dir, 0755) < 0) {
                start_failed(op, "CreateContainerError", "cannot create the log directory");
                return;
        }
        /* conmon opens the log by path: a directory or a log name a
         * container replaced by a symlink (through a hostPath of its log
         * directory) would have it write wherever that points. */
        r = pod_worker_prepare_log(w, c, op->attempt);
        if (r < 0) {
                _cleanup_free_ char *msg =
                        r == -ELOOP || r == -ENOTDIR
                                ? strprintf("the log directory %s is not a plain directory (%s)",
                                            log_dir, strerror(-r))
                                : strprintf("cannot create the log file %s: %s", op->log_path,
                                            strerror(-r));
                start_failed(op, "CreateContainerError", msg ? msg : "bad log directory");
                return;
        }
        RuntimeCreateRequest req = {
                .id = op->id,
                .bundle_dir = bundle,
                .log_path = op->log_path,
                .terminal = c->spec->tty,
                .stdin_open = c->spec->stdin_open,
        };
        (void)set_str(&c->container_id, op->id);
        r = runtime_container_create(o->runtime, &req, on_container_created, op, &op->rop);
        if (r < 0) {
                Error e = {};
                error_set(&e, r, "cannot run conmon: %s", strerror(-r));
                on_container_created(o->runtime, r, 0, 0, &e, op);
        }
}

static int on_rootfs_ready(EventSource *s, const siginfo_t *si, void *userdata) {
        ContainerOp *op = userdata;
        Error err = {};

        op->iw_source = event_source_free(op->iw_source);
        int r = image_worker_finish(&op->iw, si, &err);
        op->iw = IMAGE_WORKER_NULL;
        if (r < 0) {
                start_failed(op, "CreateContainerError", err.message);
                return 0;
        }
        op->rootfs_mounted = true;
        container_create(op);
        return 0;
}

/* An image's StopSignal ("SIGQUIT", "QUIT", "3"); SIGTERM when absent or
 * unknown, as kubelet falls back. */
static int signal_from_string(const char *s) {
        if (isempty(s))
                return SIGTERM;
        char *end;
        long n = strtol(s, &end, 10);
        if (*end == 0 && n > 0 && n < NSIG)
                return (int)n;
        const char *name = startswith(s, "SIG") ?: s;
        for (int i = 1; i < NSIG; i++) {
                const char *abbrev = sigabbrev_np(i);
                if (abbrev && streq(abbrev, name))
                        return i;
        }
        return SIGTERM;
}

static void container_start(PodWorker *w, const ContainerStartAction *a) {
        ContainerOp *op = worker_op(w, a->is_init, a->index);
        ContainerState *c = pod_actions_target(&w->state, a->is_init, a->index);
        ImageStore *store = w->ctx->o->images;
        Error ierr = {};
        int r;

        if (!op || !c || op->starting || op->killing)
                return;
        op->starting = true;
        op->state_before = c->state;
        w->busy++;
        op->attempt = c->state == CONTAINER_NONE && !c->container_id ? 0 : c->attempt + 1;
        if (c->state == CONTAINER_EXITED) {
                /* The exited attempt becomes lastState. */
                c->has_last = true;
                c->last_exit_code = c->exit_code;
                c->last_started_at = c->started_at;
                c->last_finished_at = c->finished_at;
                free(c->last_exit_reason);
                c->last_exit_reason = TAKE_PTR(c->exit_reason);
                free(c->last_container_id);
                c->last_container_id = c->container_id ? strdup(c->container_id) : NULL;
        }

        /* Images come from the local store only in this milestone (archives
         * loaded with `nanolet image load`); registry pulls come later. */
        r = image_store_get(store, c->spec->image, &op->image, &ierr);
        if (r < 0) {
                bool never = c->spec->image_pull_policy == PULL_POLICY_NEVER;
                _cleanup_free_ char *msg =
                        strprintf("image \"%s\" is not present in the local store%s", c->spec->image,
                                  never ? " with pull policy of Never"
                                        : "; load it with 'nanolet image load' (registry pulls are not available in this version)");
                start_failed(op, never ? "ErrImageNeverPull" : "ErrImagePull", msg ? msg : "image missing");
                return;
        }
        (void)set_str(&c->image_id, op->image->config_digest);
        op->stop_signal = signal_from_string(op->image->config.stop_signal);

        op->id = strprintf("%s-%s-%u", w->object->uid, c->spec->name, op->attempt);
        op->attempt_dir = strprintf("%s/containers/%s/%u", w->pod_dir, c->spec->name, op->attempt);
        op->rootfs = op->attempt_dir ? strprintf("%s/rootfs", op->attempt_dir) : NULL;
        op->log_path = strprintf("%s/%s/%u.log", w->log_dir, c->spec->name, op->attempt);
        _cleanup_free_ char *upper = op->attempt_dir ? strprintf("%s/upper", op->attempt_dir) : NULL;
        _cleanup_free_ char *work = op->attempt_dir ? strprintf("%s/work", op->attempt_dir) : NULL;
        if (!op->id || !op->rootfs || !op->log_path || !upper || !work) {
                start_failed(op, "CreateContainerError", "out of memory");
                return;
        }
        /* A leftover of an earlier agent run at this attempt number is stale. */
        (void)image_rootfs_umount(op->rootfs, &ierr);
        ierr = (Error){};
        (void)container_subpaths_release(op->attempt_dir);
        _cleanup_close_ int pfd = open(w->pod_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *rel = strprintf("containers/%s/%u", c->spec->name, op->attempt);
        if (pfd >= 0 && rel)
                (void)rm_rf_at(pfd, rel);
        r = mkdir_p(op->rootfs, 0755);
        if (r < 0) {
                start_failed(op, "CreateContainerError", "cannot create the container directory");
                return;
        }
        c->attempt = op->attempt;
        c->restart_count = op->attempt;
        /* SPEC §14: the last exited attempt stays for `logs -p`. */
        if (op->attempt >= 1)
                pod_worker_gc_attempts(w, c, op->attempt - 1);
        container_set_waiting(c, "ContainerCreating", NULL);

        /* The digest resolved above, as config.json uses it: a re-tag from
         * now on does not change what this attempt runs. */
        ImageRootfsJob job = { .digest = op->image->digest, .target = op->rootfs,
                               .upper_dir = upper, .work_dir = work };
        r = image_rootfs_start(store, w->ctx->event, &job, &op->iw, &ierr);
        if (r < 0) {
                start_failed(op, "CreateContainerError", ierr.message);
                return;
        }
        r = event_add_child(w->ctx->event, &op->iw_source, op->iw.pid, on_rootfs_ready, op);
        if (r < 0) {
                image_worker_abort(&op->iw);
                start_failed(op, "CreateContainerError", "cannot watch the image worker");
        }
}

/* ---- kill ---- */

static int stop_signal(const ContainerOp *op) {
        return op->stop_signal > 0 ? op->stop_signal : SIGTERM;
}

static void on_kill_sent(Runtime *rt, int r, const Error *err, void *userdata) {
        PodWorker *w = userdata;
        if (r < 0)
                log_debug("Kill in pod \"%s\" failed: %s", w->full_name,
                          err ? err->message : strerror(-r));
        worker_op_done(w);
}

static int on_grace_expired(EventSource *s, usec_t now, void *userdata) {
        ContainerOp *op = userdata;
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        op->grace_timer = event_source_free(op->grace_timer);
        if (!c->container_id || (c->state != CONTAINER_RUNNING && c->state != CONTAINER_CREATED))
                return 0;
        log_info("Container \"%s\" of pod \"%s\" did not stop within its grace period, killing it.",
                 c->spec->name, w->full_name);
        w->busy++;
        if (runtime_container_kill(w->ctx->o->runtime, c->container_id, SIGKILL, true, on_kill_sent,
                                   w, NULL) < 0)
                worker_op_done(w);
        return 0;
}

/* The stop signal, then SIGKILL at deadline (at least 2 s later, as
 * kubelet's minimum, even when earlier stages or preStop used it up). */
static void container_signal(PodWorker *w, ContainerOp *op, ContainerState *c, usec_t deadline) {
        w->busy++;
        if (runtime_container_kill(w->ctx->o->runtime, c->container_id, stop_signal(op), false,
                                   on_kill_sent, w, NULL) < 0)
                worker_op_done(w);
        deadline = MAX(deadline, now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC);
        (void)event_add_time(w->ctx->event, &op->grace_timer, deadline, 0, on_grace_expired, op);
}

static void on_pre_stop_done(PodWorker *w, ContainerState *c, void *userdata) {
        ContainerOp *op = userdata;
        if (op->killing && c->container_id)
                container_signal(w, op, c, op->kill_deadline);
}

static void container_kill(PodWorker *w, const ContainerKillAction *a) {
        ContainerOp *op = worker_op(w, a->is_init, a->index);
        ContainerState *c = pod_actions_target(&w->state, a->is_init, a->index);

        if (!op || !c || op->killing || !c->container_id)
                return;
        op->killing = true;
        log_info("Killing container \"%s\" of pod \"%s\" (%s), grace period %llds%s%s.",
                 c->spec->name, w->full_name, kill_reason_to_string(a->reason),
                 (long long)a->grace_period_seconds, a->message ? ": " : "", strempty(a->message));
        usec_t now = now_usec(CLOCK_MONOTONIC);
        usec_t grace = (usec_t)MAX(a->grace_period_seconds, (int64_t)2) * USEC_PER_SEC;
        usec_t deadline = now + grace;
        if (a->reason != KILL_REASON_UNHEALTHY) {
                if (w->termination_deadline == 0)
                        w->termination_deadline = deadline;
                deadline = MAX(w->termination_deadline, now + 2 * USEC_PER_SEC);
        }
        /* preStop first; the time it takes counts against the grace period. */
        op->kill_deadline = deadline;
        if (pod_probes_pre_stop(w, c, deadline, on_pre_stop_done, op))
                return;
        container_signal(w, op, c, deadline);
}

/* ---- exits (PLEG) ---- */

static void on_attempt_deleted(Runtime *rt, int r, const Error *err, void *userdata) {
        PodWorker *w = userdata;
        if (r < 0)
                log_debug("Pod \"%s\": removing a container failed: %s", w->full_name,
                          err ? err->message : strerror(-r));
        worker_op_done(w);
}

/* kubelet's getTerminationMessage: the last 4096 bytes of the file
 * (MaxContainerTerminationMessageLength, read with tail.ReadAtMost, so a
 * longer message keeps its end), nothing for an empty or missing file, and
 * for a file that cannot be read a message saying so. The file is the
 * container's to write: it is read without following a symlink, only if it is
 * a regular file, and only those bytes of it. Bytes that are not UTF-8 are
 * replaced by U+FFFD, so the exit record and the status always take it. */
#define TERMINATION_MESSAGE_MAX 4096
static char *read_termination_message(PodWorker *w, const ContainerState *c) {
        _cleanup_free_ char *rel =
                strprintf("containers/%s/%u/termination-log", c->spec->name, c->attempt);
        _cleanup_close_ int pfd = open(w->pod_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        size_t size;

        if (!rel || pfd < 0)
                return NULL;
        int r = read_file_tail_at(pfd, rel, TERMINATION_MESSAGE_MAX, &data, &size, NULL);
        if (r == -ENOENT)
                return NULL;
        if (r < 0) {
                log_warning_errno(
                        r, "Container \"%s\" of pod \"%s\": cannot read its termination log: %m",
                        c->spec->name, w->full_name);
                return strprintf("Error on reading termination log %s/%s: %s", w->pod_dir, rel,
                                 strerror(-r));
        }
        if (size == 0)
                return NULL;
        return utf8_make_valid(data, size);
}

static void container_exited(PodWorker *w, ContainerOp *op, ContainerState *c,
                             const RuntimeContainerStatus *st) {
        c->state = CONTAINER_EXITED;
        c->exit_code = st->exit_code >= 0 ? st->exit_code : 137;
        c->finished_at = st->finished_at ? st->finished_at : now_usec(CLOCK_REALTIME);
        const char *reason = st->oom_killed ? "OOMKilled" : c->exit_code == 0 ? "Completed" : "Error";
        (void)set_str(&c->exit_reason, reason);
        free(c->exit_message);
        c->exit_message = read_termination_message(w, c);
        c->ready = false;
        c->started = false;
        c->kill_requested = false;
        pod_probes_container_stopped(w, c);
        backoff_on_exit(c, now_usec(CLOCK_MONOTONIC));
        log_info("Container \"%s\" of pod \"%s\" exited with code %d (%s).", c->spec->name,
                 w->full_name, c->exit_code, reason);
        _cleanup_free_ char *attempt_dir = attempt_dir_of(w, c, c->attempt);
        AttemptRecord rec = {
                .started_at = c->started_at,
                .finished_at = c->finished_at,
                .exit_code = c->exit_code,
                .reason = c->exit_reason,
                .message = c->exit_message,
        };
        int r = attempt_dir ? attempt_record_write(attempt_dir, &rec) : -ENOMEM;
        if (r < 0)
                log_warning_errno(r, "Container \"%s\" of pod \"%s\": cannot record its exit: %m",
                                  c->spec->name, w->full_name);

        if (op) {
                op->killing = false;
                op->grace_timer = event_source_free(op->grace_timer);
        }
        /* The attempt's runtime state and rootfs go now; its log and bundle
         * stay for `logs -p` and inspection. */
        _cleanup_free_ char *rootfs = strprintf("%s/containers/%s/%u/rootfs", w->pod_dir,
                                                c->spec->name, c->attempt);
        Error ie = {};
        if (rootfs)
                (void)image_rootfs_umount(rootfs, &ie);
        if (attempt_dir)
                (void)container_subpaths_release(attempt_dir);
        w->busy++;
        if (runtime_container_delete(w->ctx->o->runtime, c->container_id, true,
                                     on_attempt_deleted, w, NULL) < 0)
                worker_op_done(w);
        /* Until the restart, the attempt before this one is still lastState
         * (`logs -p`); older ones are of no further use. */
        if (c->attempt >= 1)
                pod_worker_gc_attempts(w, c, c->attempt - 1);
}

void pod_worker_relist(PodWorker *w) {
        bool changed = false;

        for (size_t slot = 0; slot < w->n_ops; slot++) {
                ContainerOp *op = w->ops[slot];
                ContainerState *c = op_container(op);
                if (!c || !c->container_id || op->starting)
                        continue;
                if (c->state != CONTAINER_RUNNING && c->state != CONTAINER_CREATED)
                        continue;
                RuntimeContainerStatus st = {};
                if (runtime_container_status(w->ctx->o->runtime, c->container_id, &st) < 0)
                        continue;
                if (st.state == RUNTIME_STATE_RUNNING || st.state == RUNTIME_STATE_CREATED)
                        continue;
                /* Keep the previous attempt for lastState before recording this one. */
                container_exited(w, op, c, &st);
                changed = true;
        }
        if (changed)
                worker_mark_status(w);
}

/* ---- teardown ---- */

/* Returns true when the pod is gone (and w freed), false while the
 * network DEL still runs (the sync comes back when it finishes). */
static bool worker_teardown(PodWorker *w) {
        Error err = {};

        if (w->torn_down)
                return true;
        if (worker_network_del(w))
                return false;
        w->torn_down = true;
        if (sandbox_remove(w->ns_dir, &err) < 0)
                log_warning("Pod \"%s\": %s", w->full_name, err.message);
        (void)unlink(w->sandbox_record);
        err = (Error){};
        if (pod_volumes_cleanup(w->pod_dir, &err) < 0)
                log_warning("Pod \"%s\": %s", w->full_name, err.message);
        /* Whatever is still mounted under the pod (a rootfs whose container
         * never reported its exit) would make the removal below stop at it. */
        int m = umount_below(w->pod_dir);
        if (m > 0)
                log_warning("Pod \"%s\": %d leftover mount(s) removed.", w->full_name, m);
        _cleanup_free_ char *parent = strdup(w->pod_dir);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (slash) {
                *slash = 0;
                _cleanup_close_ int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int r = pfd >= 0 ? rm_rf_at(pfd, slash + 1) : -errno;
                if (r < 0)
                        log_warning_errno(r, "Pod \"%s\": failed to remove %s: %m", w->full_name,
                                          w->pod_dir);
        }
        _cleanup_free_ char *cgroup = runtime_pod_cgroup_path(w->object->uid);
        int q = cgroup ? runtime_cgroup_remove("/sys/fs/cgroup", cgroup) : -ENOMEM;
        if (q < 0)
                log_warning_errno(q, "Pod \"%s\": failed to remove cgroup %s: %m", w->full_name,
                                  strna(cgroup));
        (void)pod_status_remove(w->ctx->status_dir, w->object->uid);
        log_info("Pod \"%s\" is gone.", w->full_name);
        w->ctx->worker_finished(w, w->ctx->userdata);
        return true;
}

/* ---- the sync ---- */

static int on_wakeup(EventSource *s, usec_t now, void *userdata) {
        pod_worker_request_sync(userdata);
        return 0;
}

/* Returns true when the worker tore its pod down and was freed. */
static bool worker_sync(PodWorker *w) {
        PodActions a = {};
        usec_t now = now_usec(CLOCK_MONOTONIC);
        int r;

        if (w->torn_down)
                return false;
        if (w->waiting_for_predecessor) {
                if (!w->state.terminating)
                        return false;
                /* Replaced or removed before it ever started: nothing to stop. */
                return worker_teardown(w);
        }
        if (!w->adopt_checked && worker_adopt(w))
                return false; /* removals in flight; they request the next sync */
        if (w->wait_for && w->state.sandbox == SANDBOX_NONE && !w->state.terminating) {
                _cleanup_free_ char *reason = NULL, *message = NULL;
                if (w->ctx->wait_for_check(w, &reason, &message, w->ctx->userdata) < 0)
                        return false;
                if (!streq_ptr(reason, w->state.wait_reason) && reason)
                        log_info("Pod \"%s\" waits: %s", w->full_name, strna(message));
                else if (!reason && w->state.wait_reason)
                        log_info("Pod \"%s\": the pods it waits for are Ready, starting it.",
                                 w->full_name);
                free(w->state.wait_reason);
                free(w->state.wait_message);
                w->state.wait_reason = TAKE_PTR(reason);
                w->state.wait_message = TAKE_PTR(message);
        } else if (w->state.wait_reason) {
                w->state.wait_reason = mfree(w->state.wait_reason);
                w->state.wait_message = mfree(w->state.wait_message);
        }
        r = pod_compute_actions(&w->state, now, &a);
        if (r < 0) {
                log_oom();
                return false;
        }
        for (size_t i = 0; i < a.n_waiting; i++) {
                ContainerState *c = pod_actions_target(&w->state, a.waiting[i].is_init,
                                                       a.waiting[i].index);
                if (c)
                        container_set_waiting(c, a.waiting[i].reason, a.waiting[i].message);
        }
        if (a.deadline_exceeded && !w->state.deadline_exceeded) {
                w->state.deadline_exceeded = true;
                (void)set_str(&w->state.reason, "DeadlineExceeded");
                (void)set_str(&w->state.message, "Pod was active on the node longer than the specified deadline");
        }
        if (a.create_sandbox)
                worker_create_sandbox(w);
        for (size_t i = 0; i < a.n_kills; i++)
                container_kill(w, &a.kills[i]);
        for (size_t i = 0; i < a.n_starts; i++)
                container_start(w, &a.starts[i]);

        if (a.pod_done && w->busy == 0) {
                if (w->state.terminating) {
                        pod_actions_done(&a);
                        return worker_teardown(w);
                }
                /* A finished pod (Succeeded/Failed) keeps its status and logs
                 * but not its namespaces. */
                if (!w->sandbox_released && sandbox_namespaces(w->state.pod) &&
                    !worker_network_del(w)) {
                        Error err = {};
                        if (sandbox_remove(w->ns_dir, &err) < 0)
                                log_warning("Pod \"%s\": %s", w->full_name, err.message);
                        (void)unlink(w->sandbox_record);
                        w->sandbox_released = true;
                }
        }
        if (a.next_wakeup != USEC_INFINITY) {
                if (!w->wakeup)
                        (void)event_add_time(w->ctx->event, &w->wakeup, a.next_wakeup, 0,
                                             on_wakeup, w);
                else
                        (void)event_source_set_time(w->wakeup, a.next_wakeup);
        }
        pod_actions_done(&a);
        w->status_dirty = true;
        return false;
}

static int on_sync_defer(EventSource *s, usec_t now, void *userdata) {
        PodWorker *w = userdata;

        if (w->sync_requested) {
                w->sync_requested = false;
                if (worker_sync(w))
                        return 0; /* w is freed */
        }
        if (w->status_dirty && !w->torn_down)
                worker_write_status(w);
        return 0;
}

void pod_worker_terminate(PodWorker *w, const char *reason) {
        if (w->state.terminating)
                return;
        log_info("Terminating pod \"%s\": %s.", w->full_name, reason);
        w->state.terminating = true;
        pod_worker_request_sync(w);
}

int pod_worker_new(PodWorker **ret, PodManagerContext *ctx, ManifestObject *object,
                   const char *source, const char *origin) {
        _cleanup_free_ PodWorker *w = calloc(1, sizeof *w);
        int r;

        if (!w)
                return -ENOMEM;
        w->ctx = ctx;
        w->object = manifest_object_ref(object);
        w->source = strdup(source);
        w->origin = strdup(origin);
        w->full_name = strprintf("%s_%s(%s)", object->name, object->namespace, object->uid);
        w->pod_dir = strprintf("%s/%s", ctx->pods_dir, object->uid);
        w->ns_dir = strprintf("%s/%s", ctx->ns_dir, object->uid);
        w->log_dir = strprintf("%s/%s_%s_%s", ctx->o->pod_logs_dir, object->namespace, object->name,
                               object->uid);
        w->sandbox_record = strprintf("%s/%s.json", ctx->sandboxes_dir, object->uid);
        if (!w->source || !w->origin || !w->full_name || !w->pod_dir || !w->ns_dir || !w->log_dir ||
            !w->sandbox_record) {
                r = -ENOMEM;
                goto fail;
        }
        r = pod_state_init(&w->state, object->pod, object->uid);
        if (r < 0)
                goto fail;
        r = pod_wait_for_targets(object->pod, &w->wait_for);
        if (r < 0)
                goto fail;
        if (ctx->o->node_ips && ctx->o->node_ips[0] && !(w->state.host_ip = strdup(ctx->o->node_ips[0]))) {
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
                w->ops[i]->iw = IMAGE_WORKER_NULL;
        }
        r = event_add_defer(ctx->event, &w->sync_defer, on_sync_defer, w);
        if (r < 0)
                goto fail;
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
        event_source_free(w->wakeup);
        pod_state_done(&w->state);
        pod_etc_files_done(&w->etc);
        pod_volumes_done(&w->volumes);
        manifest_object_unref(w->object);
        free(w->source);
        free(w->origin);
        free(w->full_name);
        free(w->pod_dir);
        free(w->ns_dir);
        free(w->log_dir);
        free(w->sandbox_record);
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
        r = pod_checkpoint_parse(&cp, ctx->o->node_name, &o);
        if (r < 0)
                return r;
        PodWorker *w;
        r = pod_worker_new(&w, ctx, o, cp.source, cp.origin);
        if (r < 0)
                return r;
        w->from_checkpoint = true;
        *ret = w;
        return 0;
}
