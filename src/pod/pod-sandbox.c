/* The pod worker's sandbox: namespaces (the sandbox helper), the CNI
 * network (ADD, CHECK of an adopted pod, DEL before the namespaces go),
 * and the node-side files a container needs (checkpoint, etc files,
 * volumes). See pod-worker-internal.h. */
#include "pod-worker-internal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backoff.h"
#include "cgroup.h"
#include "checkpoint.h"
#include "child.h"
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

/* ---- sandbox ---- */

unsigned sandbox_namespaces(const Pod *p) {
        const PodSpec *s = &p->spec;
        unsigned ns = 0;
        if (!s->host_network)
                ns |= SANDBOX_NS_NET | SANDBOX_NS_UTS;
        /* No pin (and no helper fork) when runc can make the one
         * container's IPC namespace itself. */
        if (!s->host_ipc && !pod_ipc_per_container(p))
                ns |= SANDBOX_NS_IPC;
        if (s->share_process_namespace)
                ns |= SANDBOX_NS_PID;
        return ns;
}

static int worker_write_pod_files(PodWorker *w, bool warn, Error *err);

/* A sandbox creation ended (or a preparation failed before any child). */
static void sandbox_creation_ended(PodWorker *w) {
        if (w->phase == WORKER_CREATING_SANDBOX)
                worker_set_phase(w, WORKER_RUNNING);
}

static void sandbox_failed(PodWorker *w, const char *message) {
        sandbox_creation_ended(w);
        worker_log(w, LOG_WARNING, NULL, "Failed to create sandbox of pod \"%s\": %s", w->full_name,
                   message);
        worker_event(w, NULL, POD_EVENT_FAILED_CREATE_POD_SANDBOX,
                     "Failed to create pod sandbox: %s", message);
        w->state.sandbox = SANDBOX_FAILED;
        (void)set_str(&w->state.sandbox_message, message);
        backoff_sandbox_failed(&w->state, now_usec(CLOCK_MONOTONIC));
        metric_inc(w->ctx->metrics.started_pods_errors, NULL);
}

static void sandbox_ready(PodWorker *w) {
        worker_log(w, LOG_INFO, NULL, "Sandbox of pod \"%s\" is ready%s%s.", w->full_name,
                   w->state.pod_ip ? ", IP " : "", strempty(w->state.pod_ip));
        sandbox_creation_ended(w);
        w->state.sandbox = SANDBOX_READY;
        metric_inc(w->ctx->metrics.started_pods, NULL);
        (void)set_str(&w->state.sandbox_message, NULL);
        w->state.sandbox_backoff_until = w->state.sandbox_backoff_delay = 0;
        SandboxRecord rec = { .pod_ips = w->state.pod_ips, .network = w->network_added };
        int r = sandbox_record_write(w->sandbox_record, &rec);
        if (r < 0)
                worker_log_errno(w, LOG_WARNING, r, NULL,
                                 "Pod \"%s\": cannot record its sandbox in %s, a restarted agent "
                                 "would recreate it: %m",
                                 w->full_name, w->sandbox_record);
}

bool pod_uses_cni(const PodWorker *w) {
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
                                        .protocol = cni_protocol_from_string(
                                                protocol_to_string(p->protocol)),
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
                worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name, e.message);
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
                w->network_added = true;
                r = cni_add(w->ctx->o->cni, w->cni_config, &req, on_network_added, w, &w->cni_op);
                if (r < 0) {
                        w->busy--;
                        w->network_added = false;
                } else
                        /* the first containers' preparation, after the
                         * plugin's spawn (pod-worker.c) */
                        worker_arm_prepare(w);
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
                worker_log(w, LOG_WARNING, NULL,
                           "Pod \"%s\": CNI DEL failed, the sandbox is removed anyway: %s",
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
        if (r < 0) {
                _cleanup_free_ char *msg = cni_error_to_string(err);
                worker_log(w, LOG_WARNING, NULL,
                           "Pod \"%s\": CNI CHECK of the adopted network failed: %s", w->full_name,
                           strna(msg));
        } else
                worker_log(w, LOG_DEBUG, NULL, "Pod \"%s\": CNI CHECK passed.", w->full_name);
        worker_op_done(w);
}

/* CHECK of an adopted pod's network (CNI spec: the runtime verifies what it
 * did not set up in this run). A failure is reported, not acted on: the
 * containers keep running as they are. */
void worker_network_check(PodWorker *w) {
        _cleanup_free_ CniPortMapping *ports = NULL;
        _cleanup_free_ char *netns = NULL;
        CniRequest req;

        if (w->cni_op || worker_cni_request(w, &req, &ports, &netns) < 0)
                return;
        w->busy++;
        if (cni_check(w->ctx->o->cni, w->cni_config, &req, on_network_checked, w, &w->cni_op) < 0)
                w->busy--;
}

bool worker_sandbox_record_load(PodWorker *w, char **ids, SandboxRecord *ret) {
        Error err = {};
        int r = sandbox_record_read(w->sandbox_record, ret, &err);
        if (r >= 0)
                return true;
        bool present = false;
        STRV_FOREACH(id, ids)
                if (container_id_of_pod(*id, w->object->uid)) {
                        present = true;
                        break;
                }
        if (!present) {
                /* Missing: the earlier run died before the sandbox was
                 * complete, the usual case this record is for. */
                if (r != -ENOENT) {
                        worker_log(w, LOG_WARNING, NULL,
                                   "Pod \"%s\": %s; no container of the pod is left, its "
                                   "sandbox is made again.",
                                   w->full_name, err.message);
                        (void)unlink(w->sandbox_record);
                }
                return false;
        }

        SandboxRecord rec = { .network = pod_uses_cni(w) };
        if (rec.network) {
                CniResult *res = NULL;
                if (cni_runner_cached_result(w->ctx->o->cni, w->object->uid, &res) >= 0 && res)
                        (void)cni_result_pod_ips(res, &rec.pod_ips);
                cni_result_free(res);
        }
        worker_log(w, LOG_WARNING, NULL,
                   "Pod \"%s\": %s; containers of the pod are still there, so its sandbox was "
                   "complete: the record is written again%s.",
                   w->full_name, err.message,
                   rec.network && !rec.pod_ips ? " (pod IPs unknown: the CNI cache has none)" : "");
        /* The rename would replace a symlink there too; gone first, so a
         * failed write leaves nothing unreadable behind. */
        (void)unlink(w->sandbox_record);
        r = sandbox_record_write(w->sandbox_record, &rec);
        if (r < 0)
                worker_log_errno(w, LOG_WARNING, r, NULL, "Pod \"%s\": cannot write %s: %m",
                                 w->full_name, w->sandbox_record);
        *ret = rec;
        return true;
}

/* The pod goes: its record says so before its network's DEL starts. An agent
 * that dies from there on (the DEL half or wholly done, the record not yet
 * removed) must not adopt this sandbox when the same pod is wanted again:
 * its containers would run in a network namespace without a network. */
bool worker_network_teardown(PodWorker *w) {
        if (w->network_added && !w->cni_op) {
                _cleanup_(sandbox_record_done) SandboxRecord rec = {};
                Error err = {};
                if (sandbox_record_read(w->sandbox_record, &rec, &err) >= 0 && !rec.tearing_down) {
                        rec.tearing_down = true;
                        int r = sandbox_record_write(w->sandbox_record, &rec);
                        if (r < 0)
                                worker_log_errno(w, LOG_WARNING, r, NULL,
                                                 "Pod \"%s\": cannot mark %s as torn down: %m",
                                                 w->full_name, w->sandbox_record);
                }
        }
        return worker_network_del(w);
}

/* DEL before the namespaces go (docs/internals/network.md). Returns true while it runs. */
bool worker_network_del(PodWorker *w) {
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

static void on_sandbox_created(Runtime *rt, int r, pid_t holder, const Error *err, void *userdata) {
        PodWorker *w = userdata;

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
/* The volumes, made again (idempotent; projected files swapped atomically).
 * w->volumes, which container starts bind from, is replaced only on
 * success: a failed rewrite leaves what containers use now in place. */
static int worker_write_volumes(PodWorker *w, Error *err) {
        const PodManagerOptions *o = w->ctx->o;
        PodNodeInfo node = { .node_name = o->node_name,
                             .pod_ips = w->state.pod_ips,
                             .host_ips = o->node_ips };
        PodVolumesOptions vo = { .pod_dir = w->pod_dir, .node = &node, .lookup = &w->ctx->lookup };
        PodVolumes nv = {};
        int r = pod_volumes_prepare(w->state.pod, &vo, &nv, err);
        if (r < 0) {
                pod_volumes_done(&nv);
                return r;
        }
        pod_volumes_done(&w->volumes);
        w->volumes = nv;
        return 0;
}

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
                worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name, *s);

        return worker_write_volumes(w, err);
}

void pod_worker_local_object_changed(PodWorker *w, const ManifestObject *object) {
        bool secret = object->kind == MANIFEST_KIND_SECRET;
        Error err = {};

        if (object->kind != MANIFEST_KIND_CONFIGMAP && !secret)
                return;
        /* Not yet prepared: the first preparation reads the new object
         * anyway. Terminating or evicted: nothing uses the volumes. */
        if (!w->prepared || w->state.terminating || w->state.evicted ||
            !streq(object->namespace, w->object->namespace) ||
            !pod_volumes_project(w->state.pod, secret, object->name))
                return;
        if (worker_write_volumes(w, &err) < 0) {
                worker_log(w, LOG_WARNING, NULL,
                           "Cannot update the volumes projecting %s \"%s\", they keep their "
                           "previous content: %s",
                           secret ? "secret" : "configmap", object->name, err.message);
                return;
        }
        worker_log(w, LOG_INFO, NULL, "Updated volumes from %s \"%s\"",
                   secret ? "secret" : "configmap", object->name);
}

/* hostUsers: false: the pod's ID range, the one its record names (claimed
 * when the manager started, so its running containers keep it) or a new
 * one, recorded before any container can use it. */
static int worker_prepare_userns(PodWorker *w, Error *err) {
        const OptionalBool *hu = &w->state.pod->spec.host_users;
        PodUsernsAllocator *a = &w->ctx->userns;
        Error rerr = {};
        uint32_t start = 0;
        int r;

        if (!hu->set || hu->value || w->userns_start != 0)
                return 0;
        if (strv_contains(w->ctx->userns_conflicts, w->object->uid))
                return error_set(err, -EBUSY,
                                 "the user namespace record in %s is unreadable or names a range "
                                 "another pod holds; remove the pod's directory to give it a new "
                                 "one",
                                 w->pod_dir);
        r = pod_userns_record_read(w->pod_dir, &start, &rerr);
        if (r == -ENOENT) {
                r = pod_userns_allocate(a, &start);
                if (r == -ENOSPC)
                        return error_set(err, r,
                                         "no free user namespace ID range is left (%u in use)",
                                         (unsigned)a->n_used);
                if (r < 0)
                        return error_set(err, r, "cannot allocate a user namespace ID range");
                r = pod_userns_record_write(w->pod_dir, start);
                if (r < 0) {
                        pod_userns_release(a, start);
                        return error_set(err, r, "cannot write %s/" POD_USERNS_RECORD ": %s",
                                         w->pod_dir, strerror(-r));
                }
                worker_log(w, LOG_INFO, NULL, "Pod \"%s\": user namespace IDs %u-%u.", w->full_name,
                           (unsigned)start, (unsigned)(start + POD_USERNS_RANGE_LEN - 1));
        } else if (r < 0)
                return error_set(err, r, "%s", rerr.message[0] ? rerr.message : strerror(-r));
        else if (!pod_userns_is_used(a, start))
                /* recorded by a worker of this run whose directory stayed */
                (void)pod_userns_claim(a, start);
        w->userns_start = start;
        return 0;
}

/* Checkpoint, pod directory, etc files and volumes: everything a
 * container needs from the node before the first one starts. */
int worker_prepare(PodWorker *w, Error *err) {
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
                return error_set(err, r, "cannot write the pod checkpoint: %s", strerror(-r));

        r = worker_prepare_userns(w, err);
        if (r < 0)
                return r;
        r = worker_write_pod_files(w, true, err);
        if (r < 0)
                return r;
        w->prepared = true;
        return 0;
}

/* ---- cgroups ---- */

/* One busctl call on a slice (the systemd driver, cgroup.h). w: the worker
 * whose sandbox creation waits for it (busy holds it alive), NULL for calls
 * nobody waits for (QoS slices, stopping a gone pod's slice): those carry
 * copies of what they need, as the worker may be gone when they end. */
typedef struct SliceCall {
        Event *event;
        PodWorker *w;
        SystemdSliceCall call;
        char *cgroup_fs;
        char *path;
        char **set_argv; /* START refused because the unit exists: this next */
        Child *child;
        PodManagerContext *qos; /* the burstable slice's call: ctx->qos_burstable_call */
} SliceCall;

static SliceCall *slice_call_free(SliceCall *c) {
        if (!c)
                return NULL;
        child_free(c->child);
        free(c->cgroup_fs);
        free(c->path);
        strv_free(c->set_argv);
        free(c);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(SliceCall *, slice_call_free)

static void worker_slice_done(PodWorker *w, SliceCall *c, const char *error);
static void on_slice_call_done(Child *child, void *userdata);
static void qos_burstable_start(PodManagerContext *ctx);

static int slice_call_spawn(SliceCall *c, char *const *argv) {
        ChildOptions o = {
                .argv = argv,
                .capture = CHILD_CAPTURE_SEPARATE,
                .stdout_max = 4096,
                .stderr_max = 4096,
                .timeout = 60 * USEC_PER_SEC,
        };
        c->child = child_free(c->child);
        return child_spawn(c->event, &o, on_slice_call_done, c, &c->child);
}

static void on_slice_call_done(Child *child, void *userdata) {
        SliceCall *c = userdata;
        int code, status;
        size_t size;

        child_get_status(child, &code, &status);
        const char *err = child_stderr(child, &size);
        bool ok = code == CLD_EXITED && status == 0;
        _cleanup_free_ char *msg = NULL;
        if (!ok && c->call == SYSTEMD_SLICE_START && c->set_argv &&
            runtime_systemd_unit_exists_error(err)) {
                /* an agent restart, or a QoS slice a pod slice made systemd
                 * load: update its properties instead */
                _cleanup_strv_free_ char **argv = TAKE_PTR(c->set_argv);
                c->call = SYSTEMD_SLICE_SET;
                if (slice_call_spawn(c, argv) >= 0)
                        return;
                msg = strdup("cannot run busctl for SetUnitProperties");
        } else if (!ok) {
                msg = strprintf("busctl %s of %s failed (%s %d): %s",
                                c->call == SYSTEMD_SLICE_STOP ? "StopUnit" : "StartTransientUnit",
                                strna(runtime_systemd_slice_unit(c->path)),
                                code == CLD_EXITED ? "exit status" : "signal", status,
                                isempty(err) ? "no output" : err);
                if (msg)
                        msg[strcspn(msg, "\n")] = 0;
        }
        if (c->qos) {
                PodManagerContext *ctx = c->qos;
                if (!ok)
                        log_warning("Cgroup slice: %s", msg ? msg : "out of memory");
                ctx->qos_burstable_call = NULL;
                slice_call_free(c);
                if (ctx->qos_burstable_again) {
                        ctx->qos_burstable_again = false;
                        qos_burstable_start(ctx);
                }
                return;
        }
        if (c->w) {
                worker_slice_done(c->w, c, ok ? NULL : msg ? msg : "out of memory");
        } else if (!ok) {
                log_warning("Cgroup slice: %s", msg ? msg : "out of memory");
        } else if (c->call == SYSTEMD_SLICE_STOP) {
                /* what systemd does not manage (hugetlb) goes by hand */
                (void)runtime_cgroup_remove(c->cgroup_fs, c->path);
        }
        slice_call_free(c);
}

/* Starts (or, when it exists, updates) the slice at path with res; w waits
 * for it, or NULL. 0 once spawned; on a negative return nothing is pending. */
static int slice_call_start_full(PodManagerContext *ctx, PodWorker *w, SystemdSliceCall call,
                                 const char *path, const CgroupResources *res, SliceCall **ret) {
        const PodManagerOptions *o = ctx->o;
        const char *fs = o->cgroup_fs ?: "/sys/fs/cgroup";
        bool v2 = runtime_cgroup_is_v2(fs);
        _cleanup_(slice_call_freep) SliceCall *c = calloc(1, sizeof *c);
        _cleanup_strv_free_ char **argv = NULL;
        int r;

        if (!c || !(c->cgroup_fs = strdup(fs)) || !(c->path = strdup(path)))
                return -ENOMEM;
        c->event = ctx->event;
        c->w = w;
        c->call = call;
        if ((r = runtime_systemd_slice_argv(o->busctl, call, path, res, v2, &argv)) < 0)
                return r;
        if (call == SYSTEMD_SLICE_START &&
            (r = runtime_systemd_slice_argv(o->busctl, SYSTEMD_SLICE_SET, path, res, v2,
                                            &c->set_argv)) < 0)
                return r;
        if ((r = slice_call_spawn(c, argv)) < 0)
                return r;
        if (ret)
                *ret = c;
        TAKE_PTR(c);
        return 0;
}

static int slice_call_start(PodManagerContext *ctx, PodWorker *w, SystemdSliceCall call,
                            const char *path, const CgroupResources *res) {
        return slice_call_start_full(ctx, w, call, path, res, NULL);
}

static void cgroup_apply(PodManagerContext *ctx, const char *path, const CgroupResources *res) {
        const PodManagerOptions *o = ctx->o;
        Error err = {};
        int r;
        if (o->cgroups.driver == CGROUP_DRIVER_SYSTEMD)
                r = slice_call_start(ctx, NULL, SYSTEMD_SLICE_START, path, res);
        else
                r = runtime_cgroup_create(o->cgroup_fs ?: "/sys/fs/cgroup", path, res, &err);
        if (r < 0)
                log_warning("Cannot configure the cgroup %s: %s", path,
                            err.message[0] ? err.message : strerror(-r));
}

/* The burstable slice's shares as they are now in ctx; one call at a time
 * (on_slice_call_done() starts the next when they changed meanwhile): two
 * calls in flight could reach systemd in either order. */
static void qos_burstable_start(PodManagerContext *ctx) {
        const PodManagerOptions *o = ctx->o;
        _cleanup_free_ char *bu = runtime_qos_cgroup_path(&o->cgroups, CGROUP_QOS_BURSTABLE);
        SliceCall *c = NULL;
        if (ctx->qos_burstable_call) {
                ctx->qos_burstable_again = true;
                return;
        }
        int r = bu ? slice_call_start_full(
                             ctx, NULL, SYSTEMD_SLICE_START, bu,
                             &(CgroupResources){ .cpu_shares = ctx->qos_burstable_shares }, &c)
                   : -ENOMEM;
        if (r < 0) {
                log_warning("Cannot configure the cgroup %s: %s", strna(bu), strerror(-r));
                return;
        }
        c->qos = ctx;
        ctx->qos_burstable_call = c;
}

void pod_qos_cgroups_done(PodManagerContext *ctx) {
        ctx->qos_burstable_call = slice_call_free(ctx->qos_burstable_call);
        ctx->qos_burstable_again = false;
}

void pod_qos_cgroups_apply(PodManagerContext *ctx, int64_t burstable_milli_cpu) {
        const PodManagerOptions *o = ctx->o;
        uint64_t burstable = qos_burstable_cpu_shares(burstable_milli_cpu);

        /* Under systemd every change is a process: only what changed. */
        if (o->cgroups.driver == CGROUP_DRIVER_SYSTEMD && ctx->qos_applied &&
            ctx->qos_burstable_shares == burstable)
                return;
        _cleanup_free_ char *top = runtime_qos_cgroup_path(&o->cgroups, CGROUP_QOS_GUARANTEED);
        _cleanup_free_ char *bu = runtime_qos_cgroup_path(&o->cgroups, CGROUP_QOS_BURSTABLE);
        _cleanup_free_ char *be = runtime_qos_cgroup_path(&o->cgroups, CGROUP_QOS_BEST_EFFORT);
        if (!top || !bu || !be) {
                (void)log_oom();
                return;
        }
        CgroupResources top_res = {
                .memory_limit = o->allocatable_memory,
                .cpu_shares = o->allocatable_milli_cpu > 0
                                      ? container_milli_cpu_to_shares(o->allocatable_milli_cpu)
                                      : 0,
        };
        if (!ctx->qos_applied || ctx->qos_burstable_shares != burstable)
                log_debug("QoS cgroups: %s cpu.shares %" PRIu64 " (burstable pods request %" PRId64
                          "m).",
                          bu, burstable, burstable_milli_cpu);
        ctx->qos_applied = true;
        ctx->qos_burstable_shares = burstable;
        cgroup_apply(ctx, top, &top_res);
        /* kubelet's QoS container manager: burstable gets the burstable
         * pods' cpu requests, besteffort the minimum shares */
        if (o->cgroups.driver == CGROUP_DRIVER_SYSTEMD)
                qos_burstable_start(ctx);
        else
                cgroup_apply(ctx, bu, &(CgroupResources){ .cpu_shares = burstable });
        cgroup_apply(ctx, be, &(CgroupResources){ .cpu_shares = 2 });
}

/* The QoS parents (kubepods with the node's allocatable, burstable with the
 * burstable pods' requests, besteffort with the minimum cpu shares: a
 * parent that cannot be configured is a warning) and the pod's own cgroup
 * with the pod's limits, before the first container: runc creates each
 * container's cgroup below it. The pod's own cgroup is not optional.
 * Returns 1 when a systemd slice call is in flight (worker_slice_done()
 * goes on). */
static int worker_cgroup_create(PodWorker *w, Error *err) {
        const PodManagerOptions *o = w->ctx->o;
        const char *fs = o->cgroup_fs ?: "/sys/fs/cgroup";
        int r;

        _cleanup_free_ char *path = pod_worker_cgroup_path(w);
        if (!path)
                return error_set(err, -ENOMEM, "out of memory");
        if (w->ctx->qos_changed)
                w->ctx->qos_changed(w->ctx->userdata);
        CgroupResources res;
        r = pod_cgroup_resources(w->state.pod, o->cpu_cfs_quota, o->pod_pids_limit, &res);
        if (r < 0)
                return error_set(err, r, "out of memory");
        if (o->cgroups.driver == CGROUP_DRIVER_SYSTEMD) {
                r = slice_call_start(w->ctx, w, SYSTEMD_SLICE_START, path, &res);
                pod_cgroup_resources_done(&res);
                if (r < 0)
                        return error_set(err, r, "cannot create the pod slice %s: %s",
                                         runtime_systemd_slice_unit(path), strerror(-r));
                w->busy++;
                worker_set_phase(w, WORKER_CREATING_SANDBOX);
                return 1;
        }
        r = runtime_cgroup_create(fs, path, &res, err);
        pod_cgroup_resources_done(&res);
        return r;
}

int pod_cgroup_remove_orphan(PodManagerContext *ctx, const char *uid) {
        const PodManagerOptions *o = ctx->o;
        const char *fs = o->cgroup_fs ?: "/sys/fs/cgroup";
        int ret = 0;

        /* its QoS class is not known any more: every level */
        for (CgroupQos q = 0; q < _CGROUP_QOS_MAX; q++) {
                _cleanup_free_ char *path = runtime_pod_cgroup_path(&o->cgroups, q, uid);
                int r;
                if (!path)
                        continue;
                if (o->cgroups.driver == CGROUP_DRIVER_SYSTEMD) {
                        /* StopUnit of a unit systemd does not know fails
                         * harmlessly (logged) */
                        _cleanup_free_ char *dir = strprintf("%s%s", fs, path);
                        if (dir && access(dir, F_OK) == 0)
                                (void)slice_call_start(ctx, NULL, SYSTEMD_SLICE_STOP, path, NULL);
                        continue;
                }
                r = runtime_cgroup_remove(fs, path);
                if (r < 0) {
                        log_debug_errno(r, "Cannot remove the cgroup %s of a pod that is gone: %m",
                                        path);
                        if (ret == 0)
                                ret = r;
                }
        }
        _cleanup_free_ char *legacy = strprintf("/nanolet/pod%s", uid);
        if (legacy)
                (void)runtime_cgroup_remove(fs, legacy);
        return ret;
}

/* The pod cgroup (or slice) of a pod that is gone: the cgroupfs driver
 * removes the directories; under systemd the slice is stopped (systemd
 * removes its cgroups) and what systemd does not manage removed after. */
int worker_cgroup_remove(PodWorker *w) {
        const PodManagerOptions *o = w->ctx->o;
        const char *fs = o->cgroup_fs ?: "/sys/fs/cgroup";
        _cleanup_free_ char *cgroup = pod_worker_cgroup_path(w);
        int q;

        if (cgroup && o->cgroups.driver == CGROUP_DRIVER_SYSTEMD)
                q = slice_call_start(w->ctx, NULL, SYSTEMD_SLICE_STOP, cgroup, NULL);
        else
                q = cgroup ? runtime_cgroup_remove(fs, cgroup) : -ENOMEM;
        if (q < 0 && cgroup && o->cgroups.driver != CGROUP_DRIVER_SYSTEMD &&
            !strv_contains(w->ctx->cgroup_leftovers, cgroup) &&
            strv_extend(&w->ctx->cgroup_leftovers, cgroup) >= 0)
                worker_log_errno(w, LOG_WARNING, q, NULL,
                                 "Pod \"%s\": failed to remove cgroup %s (tried again every "
                                 "minute): %m",
                                 w->full_name, cgroup);
        else if (q < 0)
                worker_log_errno(w, LOG_WARNING, q, NULL,
                                 "Pod \"%s\": failed to remove cgroup %s: %m", w->full_name,
                                 strna(cgroup));
        return q;
}

/* The pod's directory, volumes or cgroup could not be made: the sandbox
 * failed (same status, event and back-off), reported at once. */
static void worker_prepare_failed(PodWorker *w, const char *message) {
        sandbox_failed(w, message);
        worker_mark_status(w);
}

/* The namespaces (and then the network), once the cgroups are there. */
static void worker_create_namespaces(PodWorker *w) {
        int r;

        unsigned ns = sandbox_namespaces(w->state.pod);
        if (ns == 0) {
                /* Nothing to pin, but the sandbox record all the same: an
                 * agent restart adopts the pod only when it finds one. */
                sandbox_ready(w);
                worker_mark_status(w);
                return;
        }
        _cleanup_free_ char *hostname = NULL;
        (void)pod_hostname(w->state.pod, w->ctx->o->node_hostname, &hostname);
        SandboxRequest req = { .dir = w->ns_dir, .namespaces = ns, .hostname = hostname };
        w->busy++;
        worker_set_phase(w, WORKER_CREATING_SANDBOX);
        r = sandbox_create(w->ctx->o->runtime, &req, on_sandbox_created, w, NULL);
        if (r < 0) {
                Error e = {};
                error_set(&e, r, "cannot create the pod sandbox: %s", strerror(-r));
                on_sandbox_created(w->ctx->o->runtime, r, 0, &e, w);
        }
}

/* The pod slice's start ended (systemd driver). */
static void worker_slice_done(PodWorker *w, SliceCall *c, const char *error) {
        Error err = {};

        if (error)
                worker_prepare_failed(w, error);
        else if (pod_worker_is_terminating(w))
                sandbox_creation_ended(w);
        else {
                /* hugepage limits have no unit property (cgroup.h) */
                CgroupResources res;
                int r = pod_cgroup_resources(w->state.pod, w->ctx->o->cpu_cfs_quota, 0, &res);
                if (r >= 0 && res.n_hugepages > 0) {
                        CgroupResources huge = { .hugepages = res.hugepages,
                                                 .n_hugepages = res.n_hugepages };
                        r = runtime_cgroup_create(c->cgroup_fs, c->path, &huge, &err);
                }
                if (r >= 0)
                        r = 0;
                pod_cgroup_resources_done(&res);
                if (r < 0)
                        worker_prepare_failed(w, err.message[0] ? err.message : strerror(-r));
                else
                        worker_create_namespaces(w);
        }
        worker_op_done(w);
}

void worker_create_sandbox(PodWorker *w) {
        Error err = {};
        int r;

        if (worker_sandbox_busy(w))
                return;
        if (w->stale_sandbox) {
                if (sandbox_remove(w->ns_dir, &err) < 0)
                        worker_log(w, LOG_WARNING, NULL, "Pod \"%s\": %s", w->full_name,
                                   err.message);
                (void)unlink(w->sandbox_record);
                w->stale_sandbox = false;
                err = (Error){};
        }
        r = worker_prepare(w, &err);
        if (r >= 0)
                r = worker_cgroup_create(w, &err);
        if (r < 0) {
                worker_prepare_failed(w, err.message);
                return;
        }
        if (r > 0)
                return; /* the pod slice is being started */
        worker_create_namespaces(w);
}
