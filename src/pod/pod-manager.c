/* The sync loop: desired state from PodConfig events, observed state from
 * the relist, one worker per pod UID. */
#include "pod-manager.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/utsname.h>

#include "fileio.h"
#include "list.h"
#include "cgroup.h"
#include "config.h"
#include "container-config.h"
#include "log.h"
#include "container-id.h"
#include "dirent-util.h"
#include <fcntl.h>
#include "pod-adopt.h"
#include "pod-log-gc.h"
#include "pod-logs.h"
#include "kube-state-metrics.h"
#include "pod-metrics.h"
#include "pod-stats.h"
#include "pod-worker.h"
#include "string-util.h"
#include "strv.h"

#define RELIST_PERIOD_USEC POD_MANAGER_RELIST_PERIOD_USEC

struct PodManager {
        Event *event;
        PodManagerOptions o;
        PodManagerContext ctx;

        PodWorker **workers;
        size_t n_workers;

        EventSource *relist_timer;
        EventSource *sync_timer; /* syncFrequency */
        usec_t last_relist;      /* event loop time of the last relist, for /healthz */
        EventSource *exits_watch;
        bool leftovers_swept; /* runtime_sweep_leftovers() ran once since start */
        EventSource *orphan_timer;
        struct OrphanDel *orphan_dels; /* DELs of orphaned sandboxes in flight */
        LogRotator *log_rotator;       /* NULL: rotation off */
        EventSource *log_timer;
        bool sources_ready;
        /* Live pods (pod_adopt_live()) whose checkpoint could not be read at
         * start: no worker until a source wants the UID (its worker adopts
         * them) or every source was read without one (a stray worker stops
         * them). Their sandboxes are no orphans meanwhile. */
        char **unreadable;
        bool strays_checked;         /* runtime containers of no pod were looked for */
        SourceErrors *source_errors; /* status/sources.json */
        PodStats *stats;             /* /stats/summary: CPU samples, directory usage */
        EventSource *stats_timer;
        ResourceMetrics resource_metrics; /* /metrics/resource */
        KubeStateMetrics kube_state;      /* /metrics/pods */

        void (*stopped)(void *userdata);
        void *stopped_userdata;
};

static const ConfigMap *lookup_configmap(void *userdata, const char *ns, const char *name) {
        PodManager *m = userdata;
        ManifestObject *o =
                m->o.config ? pod_config_find(m->o.config, MANIFEST_KIND_CONFIGMAP, ns, name)
                            : NULL;
        return o ? o->configmap : NULL;
}

static const Secret *lookup_secret(void *userdata, const char *ns, const char *name) {
        PodManager *m = userdata;
        ManifestObject *o =
                m->o.config ? pod_config_find(m->o.config, MANIFEST_KIND_SECRET, ns, name) : NULL;
        return o ? o->secret : NULL;
}

const SourceErrors *pod_manager_source_errors(const PodManager *m) {
        return m->source_errors;
}

unsigned pod_manager_count(PodManager *m) {
        return (unsigned)m->n_workers;
}

usec_t pod_manager_last_relist(PodManager *m) {
        return m->last_relist;
}

static int worker_compare(const void *a, const void *b) {
        const ManifestObject *x = pod_worker_object(*(PodWorker *const *)a),
                             *y = pod_worker_object(*(PodWorker *const *)b);
        int k = strcmp(x->namespace, y->namespace);
        return k != 0 ? k : strcmp(x->name, y->name);
}

/* The PodList of workers[0..n-1] (sorted here, so the caller's array is
 * reordered). */
static int pod_list_json(PodWorker **workers, size_t n_workers, char **ret, size_t *ret_size) {
        static const char head[] = "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
                                   "\"metadata\":{},\"items\":[";
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0, n = 0;
        int r;

        if (n_workers > 1)
                qsort(workers, n_workers, sizeof *workers, worker_compare);
        r = strbuf_append(&buf, &len, &cap, head, strlen(head));
        for (size_t i = 0; r >= 0 && i < n_workers; i++) {
                const char *text = pod_worker_status_text(workers[i]);
                if (!text)
                        continue;
                if (n++ > 0)
                        r = strbuf_append(&buf, &len, &cap, ",", 1);
                if (r >= 0)
                        r = strbuf_append(&buf, &len, &cap, text, strlen(text));
        }
        if (r >= 0)
                r = strbuf_append(&buf, &len, &cap, "]}\n", 3);
        if (r < 0)
                return r;
        *ret_size = len;
        *ret = TAKE_PTR(buf);
        return 0;
}

int pod_manager_pod_list_json(PodManager *m, char **ret, size_t *ret_size) {
        _cleanup_free_ PodWorker **sorted = NULL;

        if (m->n_workers > 0) {
                sorted = calloc(m->n_workers, sizeof *sorted);
                if (!sorted)
                        return -ENOMEM;
                memcpy(sorted, m->workers, m->n_workers * sizeof *sorted);
        }
        return pod_list_json(sorted, m->n_workers, ret, ret_size);
}

/* The limits eviction's local storage check compares usage with
 * (eviction-manager.c's local_limit_exceeded()): an app container's
 * limits.ephemeral-storage, an emptyDir's sizeLimit. */
static bool has_local_storage_limit(const Pod *pod) {
        if (!pod)
                return false;
        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const OptionalQuantity *q =
                        &pod->spec.containers[i].resources.limits.ephemeral_storage;
                if (q->set && q->value.value > 0)
                        return true;
        }
        for (size_t i = 0; i < pod->spec.n_volumes; i++) {
                const Volume *v = &pod->spec.volumes[i];
                if (v->type == VOLUME_EMPTY_DIR && v->empty_dir.size_limit.set &&
                    v->empty_dir.size_limit.value.value > 0)
                        return true;
        }
        return false;
}

int pod_manager_local_limits_json(PodManager *m, char **ret_list, size_t *ret_list_size,
                                  char **ret_summary, size_t *ret_summary_size) {
        _cleanup_free_ PodWorker **limited = NULL;
        _cleanup_free_ char *list = NULL;
        size_t n = 0;
        int r;

        for (size_t i = 0; i < m->n_workers; i++) {
                if (!has_local_storage_limit(pod_worker_state(m->workers[i])->pod))
                        continue;
                if (!limited && !(limited = calloc(m->n_workers, sizeof *limited)))
                        return -ENOMEM;
                limited[n++] = m->workers[i];
        }
        if (n == 0)
                return 0;
        r = pod_list_json(limited, n, &list, ret_list_size);
        if (r >= 0)
                r = pod_stats_summary_json(m->stats, limited, n, ret_summary, ret_summary_size);
        if (r < 0)
                return r;
        *ret_list = TAKE_PTR(list);
        return (int)MIN(n, (size_t)INT_MAX);
}

/* The worker that runs (or will run) pod uid. A pod removed and re-added
 * while it terminates has two: the terminating one and its successor. */
static PodWorker *find_worker(PodManager *m, const char *uid) {
        PodWorker *found = NULL;
        for (size_t i = 0; i < m->n_workers; i++)
                if (streq(pod_worker_uid(m->workers[i]), uid) &&
                    (!found || !pod_worker_is_terminating(m->workers[i])))
                        found = m->workers[i];
        return found;
}

/* A pod adopted from a checkpoint that no source has claimed yet, with the
 * same name from the same source: the same manifest, changed while the
 * agent was down. */
static PodWorker *find_unclaimed_same_pod(PodManager *m, const SourceEvent *ev) {
        for (size_t i = 0; i < m->n_workers; i++) {
                PodWorker *w = m->workers[i];
                const ManifestObject *o = pod_worker_object(w);
                if (pod_worker_is_unclaimed(w) && !pod_worker_is_terminating(w) &&
                    streq(pod_worker_source(w), ev->source) && streq(o->name, ev->object->name) &&
                    streq(o->namespace, ev->object->namespace))
                        return w;
        }
        return NULL;
}

static bool origin_has_error(PodManager *m, const char *origin) {
        const char *o;
        const Diagnostics *d;
        size_t iter = 0;
        while (m->o.config && pod_config_next_error(m->o.config, &iter, &o, &d))
                if (streq(o, origin))
                        return true;
        return false;
}

static bool any_source_error(PodManager *m) {
        const char *o;
        const Diagnostics *d;
        size_t iter = 0;
        return m->o.config && pod_config_next_error(m->o.config, &iter, &o, &d);
}

static int add_worker(PodManager *m, PodWorker *w);

static void on_stray_deleted(Runtime *rt, int r, const Error *err, void *userdata) {
        (void)rt, (void)userdata;
        if (r < 0)
                log_warning("Cannot remove a container of no pod: %s",
                            err ? err->message : strerror(-r));
}

/* Containers in the runtime's root that belong to no pod the agent knows
 * (no worker, no pod directory or sandbox record of their UID: IDs carry the
 * pod UID's hash, container-id.h): nothing would ever stop them. */
static void stop_stray_containers(PodManager *m) {
        _cleanup_strv_free_ char **ids = NULL;

        m->strays_checked = true;
        if (runtime_list_ids(m->o.runtime, &ids) < 0)
                return;
        STRV_FOREACH(id, ids) {
                bool known = false;
                for (size_t i = 0; !known && i < m->n_workers; i++)
                        known = container_id_of_pod(*id, pod_worker_uid(m->workers[i]));
                STRV_FOREACH(uid, m->unreadable)
                        known = known || container_id_of_pod(*id, *uid);
                if (known)
                        continue;
                log_warning("Container %s belongs to no pod of the agent: removing it.", *id);
                (void)runtime_container_delete(m->o.runtime, *id, true, on_stray_deleted, NULL,
                                               NULL);
        }
}

/* Live pods with an unreadable checkpoint that no source wants once every
 * source was read, none broken (pod_adopt_decide()): stopped by a worker made
 * up for it, as a removed pod is, before anything of it is removed. */
static void stop_unwanted_unreadable(PodManager *m) {
        PodAdoptFacts f = {
                .checkpoint = POD_ADOPT_CHECKPOINT_UNREADABLE,
                .live = true,
                .sources_settled = m->sources_ready && !any_source_error(m),
        };
        if (pod_adopt_decide(&f) != POD_ADOPT_STOP)
                return;
        _cleanup_strv_free_ char **uids = TAKE_PTR(m->unreadable);
        STRV_FOREACH(uid, uids) {
                PodWorker *w;
                int r = pod_worker_new_stray(&w, &m->ctx, *uid);
                if (r < 0) {
                        log_error_errno(r, "Cannot set up the stop of pod %s, left alone: %m",
                                        *uid);
                        continue;
                }
                if (add_worker(m, w) < 0) {
                        pod_worker_free(w);
                        (void)log_oom();
                        continue;
                }
                pod_worker_terminate(w, "no source wants it and its checkpoint was unreadable");
        }
        if (!m->strays_checked)
                stop_stray_containers(m);
}

/* Pods adopted from checkpoints that no source wants once every source has
 * been read are terminated, except those whose file is broken right now (a
 * half-written file never takes a running pod down, docs/manifests.md). */
static void terminate_unclaimed(PodManager *m) {
        if (!m->sources_ready)
                return;
        stop_unwanted_unreadable(m);
        for (size_t i = 0; i < m->n_workers; i++) {
                PodWorker *w = m->workers[i];
                if (!pod_worker_is_unclaimed(w) || pod_worker_is_terminating(w) ||
                    origin_has_error(m, pod_worker_origin(w)))
                        continue;
                pod_worker_terminate(
                        w, "no source wants it any more (removed while the agent was down)");
        }
}

static int add_worker(PodManager *m, PodWorker *w) {
        PodWorker **n = realloc(m->workers, sizeof(PodWorker *) * (m->n_workers + 1));
        if (!n)
                return -ENOMEM;
        m->workers = n;
        m->workers[m->n_workers++] = w;
        return 0;
}

static void on_qos_changed(void *userdata) {
        PodManager *m = userdata;
        _cleanup_free_ const Pod **pods = calloc(m->n_workers ?: 1, sizeof *pods);
        size_t n = 0;

        if (!pods) {
                (void)log_oom();
                return;
        }
        for (size_t i = 0; i < m->n_workers; i++)
                if (pod_worker_counts_for_qos(m->workers[i], &pods[n]))
                        n++;
        pod_qos_cgroups_apply(&m->ctx, qos_burstable_milli_cpu(pods, n));
}

static void on_worker_finished(PodWorker *w, void *userdata) {
        PodManager *m = userdata;

        for (size_t i = 0; i < m->n_workers; i++)
                if (m->workers[i] == w) {
                        memmove(m->workers + i, m->workers + i + 1,
                                sizeof(PodWorker *) * (m->n_workers - i - 1));
                        m->n_workers--;
                        break;
                }
        /* A replaced pod's successor starts only now (docs/manifests.md: the old pod
         * is terminated honouring its grace period, then the new one runs). */
        PodWorker *next = pod_worker_take_successor(w);
        if (next)
                pod_worker_request_sync(next);
        /* A slot may be free now: pods waiting for one look again. */
        for (size_t i = 0; i < m->n_workers; i++)
                if (pod_worker_is_waiting(m->workers[i]))
                        pod_worker_request_sync(m->workers[i]);
        /* Freed later in this iteration's dispatch would still reference it;
         * the worker's own defer source is the caller, so free on return. */
        pod_worker_free(w);
        if (m->n_workers == 0 && m->stopped) {
                void (*cb)(void *) = m->stopped;
                m->stopped = NULL;
                cb(m->stopped_userdata);
        }
}

/* ---- nanolet.io/wait-for (docs/manifests.md, "Start ordering") ---- */

/* The live pod "namespace/name" (name without the node suffix). */
static PodWorker *find_by_ref(PodManager *m, const char *ref) {
        const char *slash = strchr(ref, '/');
        if (!slash)
                return NULL;
        _cleanup_free_ char *ns = strndup(ref, (size_t)(slash - ref));
        _cleanup_free_ char *name = strprintf("%s-%s", slash + 1, m->o.node_name);
        if (!ns || !name)
                return NULL;
        for (size_t i = 0; i < m->n_workers; i++) {
                PodWorker *w = m->workers[i];
                if (!pod_worker_is_terminating(w) && streq(pod_worker_object(w)->namespace, ns) &&
                    streq(pod_worker_object(w)->name, name))
                        return w;
        }
        return NULL;
}

/* Depth-first along wait-for edges from w; true when it comes back to
 * start. path collects the refs of the cycle for the message. */
static bool wait_for_reaches(PodManager *m, PodWorker *w, PodWorker *start, unsigned depth,
                             char ***path) {
        if (depth > m->n_workers)
                return false;
        STRV_FOREACH(ref, pod_worker_wait_for(w)) {
                PodWorker *t = find_by_ref(m, *ref);
                if (!t)
                        continue;
                if (t == start || wait_for_reaches(m, t, start, depth + 1, path)) {
                        (void)strv_extend(path, *ref);
                        return true;
                }
        }
        return false;
}

/* kubelet's admission of the pods resource: the pods that run (or may
 * start) now, finished ones and w itself not counted. */
static bool out_of_pods(PodManager *m, PodWorker *w, char **ret_reason, char **ret_message) {
        int64_t used = 0;
        if (m->o.max_pods <= 0)
                return false;
        for (size_t i = 0; i < m->n_workers; i++)
                if (m->workers[i] != w && pod_worker_holds_slot(m->workers[i]))
                        used++;
        if (used < m->o.max_pods)
                return false;
        *ret_reason = strdup(POD_OUT_OF_PODS_REASON);
        *ret_message = strprintf("Node didn't have enough resource: pods, requested: 1, used: "
                                 "%" PRId64 ", capacity: %" PRId64,
                                 used, m->o.max_pods);
        return true;
}

static int wait_for_check(PodWorker *w, char **ret_reason, char **ret_message, void *userdata) {
        PodManager *m = userdata;
        _cleanup_strv_free_ char **cycle = NULL;
        _cleanup_free_ char *missing = NULL;
        size_t len = 0, cap = 0;

        if (out_of_pods(m, w, ret_reason, ret_message))
                return *ret_reason && *ret_message ? 0 : -ENOMEM;

        if (wait_for_reaches(m, w, w, 0, &cycle)) {
                _cleanup_free_ char *chain = NULL;
                size_t cl = 0, cc = 0;
                for (size_t i = strv_length(cycle); i > 0; i--) {
                        if (strbuf_append(&chain, &cl, &cc, " -> ", 4) < 0 ||
                            strbuf_append(&chain, &cl, &cc, cycle[i - 1], strlen(cycle[i - 1])) < 0)
                                return -ENOMEM;
                }
                *ret_reason = strdup("WaitForCycle");
                /* The name as the annotations write it: without the node suffix. */
                _cleanup_free_ char *suffix = strprintf("-%s", m->o.node_name);
                const char *name = pod_worker_object(w)->name;
                size_t n = strlen(name);
                if (suffix && endswith(name, suffix))
                        n -= strlen(suffix);
                *ret_message =
                        strprintf(POD_WAIT_FOR_ANNOTATION " forms a cycle: %s/%.*s%s",
                                  pod_worker_object(w)->namespace, (int)n, name, strempty(chain));
                return *ret_reason && *ret_message ? 0 : -ENOMEM;
        }
        STRV_FOREACH(ref, pod_worker_wait_for(w)) {
                PodWorker *t = find_by_ref(m, *ref);
                if (t && pod_worker_is_ready(t))
                        continue;
                if ((len > 0 && strbuf_append(&missing, &len, &cap, ", ", 2) < 0) ||
                    strbuf_append(&missing, &len, &cap, *ref, strlen(*ref)) < 0)
                        return -ENOMEM;
        }
        if (!missing) {
                *ret_reason = *ret_message = NULL;
                return 0;
        }
        *ret_reason = strdup("WaitingForPods");
        *ret_message =
                strprintf("waiting for %s to be Ready (" POD_WAIT_FOR_ANNOTATION ")", missing);
        return *ret_reason && *ret_message ? 0 : -ENOMEM;
}

/* Removes uid from the strv l, if there. */
static void strv_drop(char **l, const char *uid) {
        char **keep = l;
        STRV_FOREACH(s, l) {
                if (streq(*s, uid))
                        free(*s);
                else
                        *keep++ = *s;
        }
        if (keep)
                *keep = NULL;
}

static int start_worker(PodManager *m, const SourceEvent *ev, PodWorker *predecessor) {
        PodWorker *w;
        int r;

        /* A live pod whose checkpoint was unreadable: this worker adopts it
         * (worker_adopt(), POD_ADOPT_REBUILD). */
        strv_drop(m->unreadable, ev->uid);

        r = pod_worker_new(&w, &m->ctx, ev->object, ev->source, ev->origin);
        if (r < 0)
                return log_error_errno(r, "Failed to set up pod \"%s_%s(%s)\": %m",
                                       ev->object->name, ev->object->namespace, ev->uid);
        r = add_worker(m, w);
        if (r < 0) {
                pod_worker_free(w);
                return log_oom();
        }
        if (predecessor) {
                /* Chains of quick edits: only the newest waits; intermediate
                 * versions that never started are dropped. */
                PodWorker *old = pod_worker_set_predecessor(w, predecessor);
                if (old)
                        pod_worker_terminate(old, "replaced by a newer version before it started");
        }
        pod_worker_request_sync(w);
        return 0;
}

void pod_manager_handle_source_event(PodManager *m, const SourceEvent *ev) {
        PodWorker *w;

        switch (ev->type) {
        case SOURCE_EVENT_ADD:
                w = find_worker(m, ev->uid);
                if (w && !pod_worker_is_terminating(w)) {
                        pod_worker_claim(w); /* adopted from its checkpoint */
                        return;
                }
                if (w)
                        /* Removed and added back with the same content: kubelet
                         * counts such a static pod as restarted. */
                        metric_inc(m->ctx.metrics.restarted_pods, METRIC_LABELS("true"));
                if (!w && (w = find_unclaimed_same_pod(m, ev)))
                        pod_worker_terminate(w, "its manifest changed while the agent was down");
                /* A terminating predecessor (removed and re-added, or
                 * changed) finishes before this one starts. */
                (void)start_worker(m, ev, w);
                break;
        case SOURCE_EVENT_UPDATE:
                w = ev->old_uid ? find_worker(m, ev->old_uid) : NULL;
                PodWorker *nw = find_worker(m, ev->uid);
                if (nw && !pod_worker_is_terminating(nw)) {
                        pod_worker_claim(nw);
                        if (w && w != nw)
                                pod_worker_terminate(w, "its manifest changed");
                        return;
                }
                if (w) {
                        pod_worker_terminate(w, "its manifest changed");
                        (void)start_worker(m, ev, w);
                } else
                        (void)start_worker(m, ev, NULL);
                break;
        case SOURCE_EVENT_REMOVE:
                w = find_worker(m, ev->uid);
                if (w)
                        pod_worker_terminate(w, "its manifest was removed");
                break;
        case SOURCE_EVENT_LOCAL:
                for (size_t i = 0; i < m->n_workers; i++)
                        pod_worker_local_object_changed(m->workers[i], ev->object);
                return;
        case SOURCE_EVENT_ERROR: {
                int r = source_errors_update(m->source_errors, ev, now_usec(CLOCK_REALTIME));
                if (r < 0)
                        log_warning_errno(r,
                                          "Cannot write %s/sources.json, `nanolet pods` shows "
                                          "stale manifest errors until the next change: %m",
                                          m->ctx.status_dir);
                break;
        }
        case _SOURCE_EVENT_INVALID:
        case _SOURCE_EVENT_MAX:
        default:
                break;
        }
        terminate_unclaimed(m);
}

/* ---- orphans (docs/internals/network.md): networks of sandboxes no worker has ---- */

#define ORPHAN_SWEEP_PERIOD_USEC (60 * USEC_PER_SEC)

/* A CNI DEL of a sandbox that only this agent's CNI cache still records. */
typedef struct OrphanDel OrphanDel;
struct OrphanDel {
        PodManager *manager;
        char *id;
        CniOp *op;
        OrphanDel *prev, *next;
};

static OrphanDel *orphan_del_free(PodManager *m, OrphanDel *o) {
        if (!o)
                return NULL;
        LIST_REMOVE(m->orphan_dels, o);
        if (o->op)
                cni_op_cancel(o->op);
        free(o->id);
        free(o);
        return NULL;
}

static void on_orphan_deleted(CniRunner *runner, int r, CniResult *result, const CniError *err,
                              void *userdata) {
        OrphanDel *o = userdata;
        PodManager *m = o->manager;
        cni_result_free(result);
        o->op = NULL;
        if (r < 0) {
                _cleanup_free_ char *msg = cni_error_to_string(err);
                log_warning("CNI DEL of orphaned sandbox %s failed (retried in a minute): %s",
                            o->id, strna(msg));
        } else if (!find_worker(m, o->id)) {
                /* Its pins were kept for the DEL: the bridge plugin finds the
                 * pod's addresses (and so its masquerade rules) in the netns. */
                _cleanup_free_ char *dir = strprintf("%s/%s", m->ctx.ns_dir, o->id);
                _cleanup_free_ char *record = strprintf("%s/%s.json", m->ctx.sandboxes_dir, o->id);
                Error rerr = {};
                if (dir && sandbox_remove(dir, &rerr) < 0)
                        log_warning("Cannot remove the namespaces of sandbox %s: %s", o->id,
                                    rerr.message);
                /* what kubelet's orphaned pod cgroup cleanup removes; the
                 * record, which names it, stays until it is gone */
                if (pod_cgroup_remove_orphan(&m->ctx, o->id) >= 0 && record)
                        (void)unlink(record);
                log_info("Released the network of sandbox %s.", o->id);
        }
        orphan_del_free(m, o);
}

/* Only what this agent recorded is released, and only by a CNI DEL: the
 * sandboxes in its own CNI cache (<root-dir>/cni/results) that no pod owns any more
 * (their pod was removed while the agent was down, or its own DEL failed).
 * Leases in a host-local directory are never judged by their owner's name:
 * another agent or runtime sharing the network owns IDs of the same shape,
 * and a removed lease file would leave the plugins' iptables rules behind.
 * Pods with a checkpoint have a worker, whose own DEL releases them. */
/* Sandboxes this agent recorded (<run-dir>/sandboxes/<uid>.json) whose pod
 * went while it was down and that have no network to release (hostNetwork
 * pods, or no CNI): their pins, record and pod cgroup go at once. Those in
 * the CNI cache wait for their DEL (sweep_orphans()). */
static void sweep_orphan_records(PodManager *m, char *const *cached) {
        _cleanup_closedir_ DIR *d = opendir(m->ctx.sandboxes_dir);
        struct dirent *de;

        while (d && (de = readdir(d))) {
                const char *dot = strrchr(de->d_name, '.');
                if (de->d_name[0] == '.' || !dot || !streq(dot, ".json"))
                        continue;
                _cleanup_free_ char *uid = strndup(de->d_name, (size_t)(dot - de->d_name));
                if (!uid || find_worker(m, uid) || strv_contains(cached, uid) ||
                    strv_contains(m->unreadable, uid))
                        continue;
                _cleanup_free_ char *dir = strprintf("%s/%s", m->ctx.ns_dir, uid);
                Error rerr = {};
                if (dir && sandbox_remove(dir, &rerr) < 0)
                        log_warning("Cannot remove the namespaces of sandbox %s: %s", uid,
                                    rerr.message);
                /* The record names the pod cgroup: it stays until that is
                 * gone (a process still dying in it), for the next sweep. */
                int r = pod_cgroup_remove_orphan(&m->ctx, uid);
                if (r < 0) {
                        log_debug_errno(r,
                                        "Sandbox %s, whose pod no longer exists, keeps its "
                                        "cgroup for now: %m",
                                        uid);
                        continue;
                }
                (void)unlinkat(dirfd(d), de->d_name, 0);
                log_info("Removed sandbox %s, whose pod no longer exists.", uid);
        }
}

/* The monitor dirs and exit files a delete interrupted by an agent crash
 * left (runtime_sweep_leftovers()). Only once every worker has adopted what
 * the earlier run left: adoption reads the exit file of a container deleted
 * while the agent was down. */
static void sweep_runtime_leftovers(PodManager *m) {
        if (!m->o.runtime)
                return;
        for (size_t i = 0; i < m->n_workers; i++)
                if (!pod_worker_adopted(m->workers[i]))
                        return;
        (void)runtime_sweep_leftovers(m->o.runtime);
        m->leftovers_swept = true;
}

static void sweep_orphans(PodManager *m) {
        _cleanup_strv_free_ char **cached = NULL;
        CniConfig *config = NULL;
        CniError err = {};

        sweep_runtime_leftovers(m);

        if (m->o.cni && cni_runner_list_cached(m->o.cni, &cached) < 0)
                return;
        sweep_orphan_records(m, cached);
        /* Only once every source was read: until then a manifest may still
         * want the UID, and its new worker's ADD must not meet this DEL of
         * the same container ID. */
        if (!m->o.cni || m->orphan_dels || !m->sources_ready)
                return;
        /* The fallback for a cache whose configuration cannot be read. */
        if (cni_config_load(m->o.cni_conf_dir, m->o.pod_cidr, &config, &err) < 0)
                config = NULL;
        cni_error_done(&err);
        STRV_FOREACH(id, cached) {
                if (find_worker(m, *id) || strv_contains(m->unreadable, *id))
                        continue;
                log_info("Releasing the network of sandbox %s, whose pod no longer exists.", *id);
                _cleanup_free_ char *netns = strprintf("%s/%s/net", m->ctx.ns_dir, *id);
                OrphanDel *o = calloc(1, sizeof *o);
                if (!netns || !o || !(o->id = strdup(*id))) {
                        free(o);
                        break;
                }
                o->manager = m;
                LIST_PREPEND(m->orphan_dels, o);
                CniRequest req = { .container_id = *id, .netns = netns, .pod_uid = *id };
                if (cni_del(m->o.cni, config, &req, on_orphan_deleted, o, &o->op) < 0)
                        orphan_del_free(m, o);
        }
        cni_config_unref(config);
}

/* Pod cgroups whose removal failed when their pod went (pod-worker.h):
 * removed once what held them is gone. A UID that has a worker again is
 * left to that worker (its cgroup is in use, or about to be). */
static void retry_cgroup_leftovers(PodManager *m) {
        const char *fs = m->o.cgroup_fs ?: "/sys/fs/cgroup";
        char **l = m->ctx.cgroup_leftovers, **keep = l;

        STRV_FOREACH(p, l) {
                const char *base = strrchr(*p, '/');
                const char *uid = base && startswith(base + 1, "pod") ? base + 4 : NULL;
                if (uid && (find_worker(m, uid) || strv_contains(m->unreadable, uid))) {
                        free(*p);
                        continue;
                }
                if (runtime_cgroup_remove(fs, *p) >= 0) {
                        log_info("Removed the leftover cgroup %s.", *p);
                        free(*p);
                        continue;
                }
                *keep++ = *p;
        }
        if (keep)
                *keep = NULL;
}

static int on_orphan_timer(EventSource *s, usec_t now, void *userdata) {
        retry_cgroup_leftovers(userdata);
        sweep_orphans(userdata);
        return event_source_set_time_relative(s, ORPHAN_SWEEP_PERIOD_USEC);
}

/* Status and events files of UIDs no worker has. A pod's files are
 * written from its first sync and removed last in its teardown, its
 * checkpoint lives from its preparation to its directory's removal: an
 * agent killed between those (a pod that waited for its predecessor and
 * whose manifest went while the agent was down, or a teardown past its
 * directory) leaves files that nothing else removes, and `nanolet pods`
 * would list the pod for good. Only once every source was read, so every
 * wanted pod has its worker. */
static void sweep_status_files(PodManager *m) {
        _cleanup_free_ char *events_dir = strprintf("%s/events", m->ctx.status_dir);
        const char *const dirs[] = { m->ctx.status_dir, events_dir };

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_closedir_ DIR *d = dirs[i] ? opendir(dirs[i]) : NULL;
                struct dirent *de;
                unsigned n = 0;

                while (d && (de = readdir(d))) {
                        const char *dot = strrchr(de->d_name, '.');
                        if (de->d_name[0] == '.' || !dot || !streq(dot, ".json") ||
                            (i == 0 && streq(de->d_name, "sources.json")))
                                continue;
                        _cleanup_free_ char *uid = strndup(de->d_name, (size_t)(dot - de->d_name));
                        if (!uid || find_worker(m, uid) || strv_contains(m->unreadable, uid))
                                continue;
                        if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                                n++;
                }
                if (n > 0)
                        log_info("Removed %u file(s) of pods that are gone from %s.", n, dirs[i]);
        }
}

void pod_manager_sources_ready(PodManager *m) {
        if (m->sources_ready)
                return;
        m->sources_ready = true;
        terminate_unclaimed(m);
        sweep_status_files(m);
        sweep_orphans(m);
}

/* A pod an earlier run left whose checkpoint cannot be used: live ones wait
 * for a source to want them (pod_adopt_decide()); the others are nothing to
 * adopt. */
static void note_unreadable(PodManager *m, const char *uid, int r, char *const *ids) {
        _cleanup_free_ char *record = strprintf("%s/%s.json", m->ctx.sandboxes_dir, uid);
        PodAdoptFacts f = {
                .checkpoint = pod_adopt_checkpoint_from_errno(r),
                .live = record && pod_adopt_live(ids, uid, record),
        };
        if (strv_contains(m->unreadable, uid) || pod_adopt_decide(&f) != POD_ADOPT_WAIT)
                return;
        log_warning("Pod %s: its checkpoint in %s/%s is %s, yet its containers or sandbox "
                    "still exist: they are adopted if a manifest wants the pod, else stopped "
                    "once every source was read.",
                    uid, m->ctx.pods_dir, uid, r == -ENOENT ? "missing" : "unreadable");
        if (strv_extend(&m->unreadable, uid) < 0)
                (void)log_oom();
}

/* Every pod an earlier run of the agent checkpointed gets a worker before
 * any source is read: the worker adopts what still runs, and the sources
 * then claim it (or, once they are all read, it is terminated). Pods the
 * runtime still runs without a usable checkpoint (missing, damaged, a
 * symlink, another pod's) are noted instead (note_unreadable()). */
static void adopt_checkpointed(PodManager *m) {
        _cleanup_strv_free_ char **ids = NULL;
        (void)runtime_list_ids(m->o.runtime, &ids);
        _cleanup_closedir_ DIR *d = opendir(m->ctx.pods_dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.' || find_worker(m, de->d_name))
                        continue;
                _cleanup_free_ char *dir = strprintf("%s/%s", m->ctx.pods_dir, de->d_name);
                PodWorker *w;
                if (!dir)
                        continue;
                int r = pod_worker_new_from_checkpoint(&w, &m->ctx, dir);
                if (r == -ENOMEM) {
                        (void)log_oom();
                        continue;
                }
                if (r < 0) {
                        if (r != -ENOENT)
                                log_warning_errno(r, "Cannot read the checkpoint in %s: %m", dir);
                        note_unreadable(m, de->d_name, r, ids);
                        continue;
                }
                if (!streq(pod_worker_uid(w), de->d_name)) {
                        log_warning("Checkpoint in %s does not match its directory.", dir);
                        pod_worker_free(w);
                        note_unreadable(m, de->d_name, -EINVAL, ids);
                        continue;
                }
                if (add_worker(m, w) < 0) {
                        (void)log_oom();
                        pod_worker_free(w);
                        continue;
                }
                pod_worker_request_sync(w);
        }
        /* Sandboxes whose pod directory is gone while containers of theirs
         * still run. */
        _cleanup_closedir_ DIR *sd = opendir(m->ctx.sandboxes_dir);
        while (sd && (de = readdir(sd))) {
                const char *dot = strrchr(de->d_name, '.');
                if (de->d_name[0] == '.' || !dot || !streq(dot, ".json"))
                        continue;
                _cleanup_free_ char *uid = strndup(de->d_name, (size_t)(dot - de->d_name));
                if (!uid || find_worker(m, uid))
                        continue;
                bool running = false;
                STRV_FOREACH(id, ids)
                        running = running || container_id_of_pod(*id, uid);
                if (running)
                        note_unreadable(m, uid, -ENOENT, ids);
        }
}

/* all: read every container, not only those without an exit watch
 * (pod_worker_relist()). */
static void relist_all(PodManager *m, bool all) {
        for (size_t i = 0; i < m->n_workers; i++) {
                pod_worker_relist(m->workers[i], all);
                /* Pods held by wait-for look again at the pods they wait for. */
                if (pod_worker_is_waiting(m->workers[i]))
                        pod_worker_request_sync(m->workers[i]);
        }
}

static int on_relist(EventSource *s, usec_t now, void *userdata) {
        PodManager *m = userdata;
        usec_t begin = now_usec(CLOCK_MONOTONIC);

        if (m->last_relist > 0)
                metric_observe(m->ctx.metrics.pleg_relist_interval, NULL,
                               (double)(now - m->last_relist) / USEC_PER_SEC);
        /* The iteration's start, not the clock now: a loop stopped in the
         * middle of this iteration still shows the stop. */
        m->last_relist = now;
        relist_all(m, false);
        if (!m->leftovers_swept)
                sweep_runtime_leftovers(m);
        metric_observe(m->ctx.metrics.pleg_relist_duration, NULL,
                       (double)(now_usec(CLOCK_MONOTONIC) - begin) / USEC_PER_SEC);
        return event_source_set_time_relative(s, RELIST_PERIOD_USEC);
}

/* Like kubelet's container log manager: sizes are looked at on a timer, the
 * rotation itself runs in a worker; a pass still running makes this one a
 * no-op rather than a queue. */
static int on_log_timer(EventSource *s, usec_t now, void *userdata) {
        PodManager *m = userdata;
        if (!log_rotator_busy(m->log_rotator)) {
                for (size_t i = 0; i < m->n_workers; i++)
                        pod_worker_offer_logs(m->workers[i], m->log_rotator);
                int r = log_rotator_run(m->log_rotator);
                if (r < 0)
                        log_warning_errno(r, "Failed to start container log rotation: %m");
        }
        return event_source_set_time_relative(s, m->o.container_log_monitor_interval);
}

/* kubelet's periodic SyncLoop (SYNC): events and the relist sync a pod
 * when something changed; this bounds how long a pod can go without a
 * sync if an event was missed (syncFrequency). The same for exits: the
 * every-second relist reads only the containers whose exit is not an event
 * (pod_worker_relist()); this one reads them all, as kubelet's evented PLEG
 * still relists everything now and then. */
static int on_sync_timer(EventSource *s, usec_t now, void *userdata) {
        PodManager *m = userdata;
        log_debug("SyncLoop (SYNC): %zu pod(s)", m->n_workers);
        relist_all(m, true);
        for (size_t i = 0; i < m->n_workers; i++)
                pod_worker_request_sync(m->workers[i]);
        return event_source_set_time_relative(s, m->o.sync_frequency);
}

static int on_stats_timer(EventSource *s, usec_t now, void *userdata) {
        PodManager *m = userdata;
        pod_stats_sample(m->stats, m->workers, m->n_workers);
        return event_source_set_time_relative(s, POD_STATS_SAMPLE_PERIOD);
}

int pod_manager_stats_summary_json(PodManager *m, char **ret, size_t *ret_size) {
        return pod_stats_summary_json(m->stats, m->workers, m->n_workers, ret, ret_size);
}

/* The monitor writes an exit file the moment a container exits: seeing it
 * through inotify makes exits (and restarts) immediate instead of up to 1 s
 * late for the containers without an exit watch (pod_worker_relist()); the
 * others' exits are their pidfd's event. An overflowed queue lost events:
 * everything is read. */
static int on_exit_file(EventSource *s, const struct inotify_event *ev, void *userdata) {
        relist_all(userdata, ev->mask & IN_Q_OVERFLOW);
        return 0;
}

/* /metrics and /metrics/probes are scraped separately and each scrape sets
 * all the scrape-time families of both: one cheap pass over the workers. */
static int collect_metrics(Metrics *metrics, void *userdata) {
        PodManager *m = userdata;
        pod_metrics_collect(&m->ctx.metrics, m->workers, m->n_workers, m->source_errors);
        return 0;
}

/* Every pod directory's user namespace record claims its range before any
 * pod gets a new one: a pod that kept running across the restart keeps its
 * range, and no two pods share one. A record that is unreadable or names a
 * range already claimed makes its pod a conflict (refused at start). */
static int claim_userns_ranges(PodManagerContext *ctx) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(AT_FDCWD, ctx->pods_dir, O_NOFOLLOW, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                _cleanup_free_ char *dir = strprintf("%s/%s", ctx->pods_dir, de->d_name);
                Error err = {};
                uint32_t start;
                if (!dir)
                        return -ENOMEM;
                r = pod_userns_record_read(dir, &start, &err);
                if (r == -ENOENT || r == -ENOTDIR)
                        continue;
                if (r == -ENOMEM)
                        return r;
                if (r >= 0) {
                        r = pod_userns_claim(&ctx->userns, start);
                        if (r >= 0) {
                                log_debug("Pod directory %s holds user namespace IDs from %u.", dir,
                                          (unsigned)start);
                                continue;
                        }
                        log_error("Pod directory %s: its user namespace IDs from %u are another "
                                  "pod's; the pod is refused.",
                                  dir, (unsigned)start);
                } else
                        log_error("Pod directory %s: %s; the pod is refused.", dir,
                                  err.message[0] ? err.message : strerror(-r));
                if (strv_extend(&ctx->userns_conflicts, de->d_name) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int collect_resource_metrics(Metrics *metrics, void *userdata) {
        PodManager *m = userdata;
        if (m->stats)
                pod_stats_resource_metrics(m->stats, m->workers, m->n_workers,
                                           &m->resource_metrics);
        return 0;
}

static int collect_kube_state_metrics(Metrics *metrics, void *userdata) {
        PodManager *m = userdata;
        kube_state_metrics_collect(&m->kube_state, m->workers, m->n_workers);
        return 0;
}

int pod_manager_new(PodManager **ret, Event *e, const PodManagerOptions *o) {
        _cleanup_(pod_manager_freep) PodManager *m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        m->event = e;
        m->o = *o;
        m->ctx = (PodManagerContext){
                .event = e,
                .o = &m->o,
                .status_dir = strprintf("%s/status", o->run_dir),
                .pods_dir = strprintf("%s/pods", o->root_dir),
                .ns_dir = strprintf("%s/ns", o->run_dir),
                .seccomp_dir = strprintf("%s/seccomp", o->root_dir),
                .sandboxes_dir = strprintf("%s/sandboxes", o->run_dir),
                .lookup = { .configmap = lookup_configmap, .secret = lookup_secret, .userdata = m },
                .oom_score_adj_floor = runtime_oom_score_adj_floor(),
                .wait_for_check = wait_for_check,
                .worker_finished = on_worker_finished,
                .qos_changed = on_qos_changed,
                .userdata = m,
        };
        if (!m->ctx.status_dir || !m->ctx.pods_dir || !m->ctx.ns_dir || !m->ctx.seccomp_dir ||
            !m->ctx.sandboxes_dir)
                return -ENOMEM;
        pod_apparmor_init(&m->ctx.apparmor, e, pod_apparmor_host_enabled(NULL),
                          POD_APPARMOR_PROFILES_PATH, NANOLET_APPARMOR_PROFILE_PATH,
                          container_apparmor_resume);
        log_debug("AppArmor is %s on this host.",
                  m->ctx.apparmor.enabled ? "enabled" : "not enabled");
        int r;
        {
                Error err = {};
                struct utsname u;
                r = pod_sysctl_allowlist_init(&m->ctx.sysctls, uname(&u) >= 0 ? u.release : NULL,
                                              o->allowed_unsafe_sysctls, &err);
                if (r == -EINVAL)
                        return log_error_errno(r, "Invalid allowedUnsafeSysctls: %s.", err.message);
                if (r < 0)
                        return r;
        }
        if (m->o.container_log_monitor_interval == 0)
                m->o.container_log_monitor_interval = 10 * USEC_PER_SEC;
        if (m->o.sync_frequency == 0)
                m->o.sync_frequency = 60 * USEC_PER_SEC;
        if (o->container_log_max_size > 0) {
                LogRotatePolicy lp = { .max_size = o->container_log_max_size,
                                       .max_files = o->container_log_max_files,
                                       .max_workers = o->container_log_max_workers };
                r = log_rotator_new(&m->log_rotator, e, &lp);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up container log rotation: %m");
        }
        /* Status files and checkpoints hold pod specs with env values
         * (docs/internals/state-files.md): root only, also when an older version made them 0755. */
        if ((r = mkdir_p_exact(m->ctx.status_dir, 0700)) < 0 ||
            (r = mkdir_p_exact(m->ctx.pods_dir, 0700)) < 0 ||
            (r = mkdir_p(m->ctx.sandboxes_dir, 0700)) < 0 ||
            (r = mkdir_p(m->ctx.ns_dir, 0755)) < 0 || (r = mkdir_p(o->pod_logs_dir, 0755)) < 0)
                return log_error_errno(r, "Failed to create the agent's directories: %m");
        r = pod_userns_allocator_init(&m->ctx.userns, 0);
        if (r < 0)
                return log_oom();
        r = claim_userns_ranges(&m->ctx);
        if (r < 0)
                return log_error_errno(r, "Failed to read the pods' user namespace records: %m");
        /* Only this agent writes there, and nothing is being written yet. */
        _cleanup_free_ char *events_dir = strprintf("%s/events", m->ctx.status_dir);
        _cleanup_free_ char *cni_dir = strprintf("%s/cni/results", o->root_dir);
        const char *const written[] = { o->run_dir, m->ctx.status_dir, events_dir,
                                        m->ctx.sandboxes_dir, cni_dir };
        for (size_t i = 0; i < ELEMENTSOF(written); i++) {
                int n = written[i] ? remove_stale_temp_files(written[i]) : -ENOMEM;
                if (n > 0)
                        log_info("Removed %d temporary file(s) an interrupted write left in %s.", n,
                                 written[i]);
        }
        r = pod_metrics_register(&m->ctx.metrics, o->metrics, o->probe_metrics);
        if (r >= 0 && o->metrics)
                r = metrics_add_collector(o->metrics, collect_metrics, m);
        if (r >= 0 && o->probe_metrics)
                r = metrics_add_collector(o->probe_metrics, collect_metrics, m);
        if (r >= 0)
                r = resource_metrics_register(&m->resource_metrics, o->resource_metrics);
        if (r >= 0 && o->resource_metrics)
                r = metrics_add_collector(o->resource_metrics, collect_resource_metrics, m);
        if (r >= 0)
                r = kube_state_metrics_register(&m->kube_state, o->kube_state_metrics);
        if (r >= 0 && o->kube_state_metrics)
                r = metrics_add_collector(o->kube_state_metrics, collect_kube_state_metrics, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the pod metrics: %m");
        r = source_errors_new(&m->source_errors, m->ctx.status_dir);
        if (r < 0)
                return log_oom();
        PodStatsOptions so = { .node_name = o->node_name, .root_dir = o->root_dir };
        r = pod_stats_new(&m->stats, e, &so);
        if (r < 0)
                return log_oom();
        /* An earlier run's errors are not this run's: the sources report
         * theirs again when they read. */
        r = source_errors_flush(m->source_errors);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s/sources.json: %m", m->ctx.status_dir);
        *ret = TAKE_PTR(m);
        return 0;
}

/* A live pod whose checkpoint could not be read has no worker yet, but its
 * containers still write to their logs. */
static bool pod_known(const char *uid, void *userdata) {
        PodManager *m = userdata;

        return find_worker(m, uid) != NULL || strv_contains(m->unreadable, uid);
}

int pod_manager_start(PodManager *m) {
        adopt_checkpointed(m);
        /* After adoption, so every checkpointed pod counts as live. */
        sweep_orphans(m);
        (void)pod_log_sweep(m->o.pod_logs_dir, m->o.container_logs_dir, pod_known, m);
        int r = event_add_time_relative(m->event, &m->orphan_timer, ORPHAN_SWEEP_PERIOD_USEC,
                                        USEC_PER_SEC, on_orphan_timer, m);
        if (r < 0)
                return r;
        m->last_relist = event_now(m->event);
        r = event_add_time_relative(m->event, &m->relist_timer, RELIST_PERIOD_USEC,
                                    100 * USEC_PER_MSEC, on_relist, m);
        if (r < 0)
                return r;
        r = event_add_time_relative(m->event, &m->sync_timer, m->o.sync_frequency,
                                    100 * USEC_PER_MSEC, on_sync_timer, m);
        if (r < 0)
                return r;
        /* The first sample at once: the node has a CPU rate a second after
         * start, the pods from their first request or tick on. */
        r = event_add_time_relative(m->event, &m->stats_timer, 0, 100 * USEC_PER_MSEC,
                                    on_stats_timer, m);
        if (r < 0)
                return r;
        if (m->log_rotator) {
                r = event_add_time_relative(m->event, &m->log_timer,
                                            m->o.container_log_monitor_interval,
                                            100 * USEC_PER_MSEC, on_log_timer, m);
                if (r < 0)
                        return r;
        }
        const char *exits = runtime_exits_dir(m->o.runtime);
        if (exits && mkdir_p(exits, 0700) >= 0) {
                r = event_add_inotify(m->event, &m->exits_watch, exits,
                                      IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE, on_exit_file, m,
                                      NULL);
                if (r < 0)
                        log_warning_errno(
                                r, "Cannot watch %s, exits are seen by the relist only: %m", exits);
        }
        return 0;
}

int pod_manager_stop_all(PodManager *m, void (*done)(void *userdata), void *userdata) {
        m->stopped = done;
        m->stopped_userdata = userdata;
        if (m->n_workers == 0) {
                m->stopped = NULL;
                done(userdata);
                return 0;
        }
        for (size_t i = 0; i < m->n_workers; i++)
                pod_worker_terminate(m->workers[i], "the agent is stopping");
        return 0;
}

PodManager *pod_manager_free(PodManager *m) {
        if (!m)
                return NULL;
        retry_cgroup_leftovers(m); /* a last chance for what is gone now */
        pod_qos_cgroups_done(&m->ctx);
        for (size_t i = 0; i < m->n_workers; i++)
                pod_worker_free(m->workers[i]);
        free(m->workers);
        event_curl_free(m->ctx.curl);
        event_source_free(m->relist_timer);
        event_source_free(m->sync_timer);
        event_source_free(m->exits_watch);
        event_source_free(m->orphan_timer);
        while (m->orphan_dels)
                orphan_del_free(m, m->orphan_dels);
        event_source_free(m->log_timer);
        log_rotator_free(m->log_rotator);
        source_errors_free(m->source_errors);
        event_source_free(m->stats_timer);
        pod_stats_free(m->stats);
        strv_free(m->ctx.cgroup_leftovers);
        strv_free(m->unreadable);
        free(m->ctx.status_dir);
        free(m->ctx.pods_dir);
        free(m->ctx.ns_dir);
        free(m->ctx.seccomp_dir);
        pod_apparmor_done(&m->ctx.apparmor);
        runtime_seccomp_cache_done(&m->ctx.seccomp_cache);
        pod_sysctl_allowlist_done(&m->ctx.sysctls);
        pod_userns_allocator_done(&m->ctx.userns);
        strv_free(m->ctx.userns_conflicts);
        free(m->ctx.sandboxes_dir);
        free(m);
        return NULL;
}

int pod_manager_evict(PodManager *m, const char *uid, const char *message) {
        for (size_t i = 0; i < m->n_workers; i++) {
                PodWorker *w = m->workers[i];
                if (pod_worker_is_terminating(w) || !streq(pod_worker_uid(w), uid))
                        continue;
                pod_worker_evict(w, message);
                return 0;
        }
        return -ENOENT;
}

unsigned pod_manager_unevict_all(PodManager *m, usec_t min_age) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_workers; i++)
                if (pod_worker_eviction_done(m->workers[i], min_age)) {
                        pod_worker_unevict(m->workers[i]);
                        n++;
                }
        return n;
}

unsigned pod_manager_evicted_count(PodManager *m) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_workers; i++)
                n += pod_worker_is_evicted(m->workers[i]);
        return n;
}

unsigned pod_manager_evictions_in_progress(PodManager *m) {
        unsigned n = 0;
        for (size_t i = 0; i < m->n_workers; i++)
                n += pod_worker_is_evicted(m->workers[i]) &&
                     !pod_worker_eviction_done(m->workers[i], 0);
        return n;
}
