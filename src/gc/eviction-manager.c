/* Node-pressure eviction on the agent's loop (eviction.h): observations,
 * node conditions, node-level reclaim and the node status file. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "eviction.h"
#include "fileio.h"
#include "image-gc.h"
#include "json-util.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "pod-manager.h"
#include "quantity.h"
#include "string-util.h"
#include "strv.h"

#define STATUS_REWRITE_PERIOD (60 * USEC_PER_SEC)

typedef struct ConditionState {
        bool status;
        usec_t last_met;        /* CLOCK_MONOTONIC; 0 never */
        usec_t last_transition; /* CLOCK_REALTIME */
        char *message;
} ConditionState;

struct EvictionManager {
        Event *event;
        char *root_dir, *images_dir, *status_path;
        EvictionConfig config;
        usec_t *soft_since; /* per threshold: CLOCK_MONOTONIC when a soft one was first met */
        ImageGc *image_gc;
        PodManager *pods;
        StaticPodEviction static_pods;
        /* STATIC_POD_EVICTION_NEVER: what was said once per episode, that a
         * threshold of the condition is met and no pod is stopped for it,
         * and the pods over a local storage limit that were named. */
        bool kept_logged[_NODE_CONDITION_MAX];
        char **over_limit_logged;
        usec_t next_eviction; /* CLOCK_MONOTONIC: one pod per period */
        usec_t period;
        EventSource *timer;
        EvictionObservation obs[_EVICTION_SIGNAL_MAX];
        ConditionState cond[_NODE_CONDITION_MAX];
        bool disk_reclaimed; /* image GC asked during this disk-pressure episode */
        usec_t last_write;
        MetricFamily *evictions; /* kubelet_evictions_total{eviction_signal} */
};

static void observe_fs(const char *path, EvictionObservation *bytes, EvictionObservation *inodes) {
        struct statfs sf;
        if (statfs(path, &sf) < 0) {
                bytes->valid = inodes->valid = false;
                return;
        }
        *bytes = (EvictionObservation){ .valid = true,
                                        .capacity = (uint64_t)sf.f_blocks * sf.f_frsize,
                                        .available = (uint64_t)sf.f_bavail * sf.f_frsize };
        /* tmpfs without nr_inodes and some filesystems report no inode
         * counts: nothing to observe then. */
        *inodes = (EvictionObservation){ .valid = sf.f_files > 0,
                                         .capacity = sf.f_files,
                                         .available = sf.f_ffree };
}

static void observe_memory(EvictionObservation *o) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        uint64_t total = 0, avail = 0;
        o->valid = false;
        if (read_full_file_at(AT_FDCWD, "/proc/meminfo", 1 << 16, &text, &size) < 0)
                return;
        const char *p = strstr(text, "MemTotal:");
        const char *q = strstr(text, "MemAvailable:");
        if (!p || !q || sscanf(p, "MemTotal: %" SCNu64, &total) != 1 ||
            sscanf(q, "MemAvailable: %" SCNu64, &avail) != 1)
                return;
        *o = (EvictionObservation){ .valid = true,
                                    .capacity = total * 1024,
                                    .available = avail * 1024 };
}

/* kubelet's pidlimit.Stats(): the task limit is the smaller of
 * kernel.pid_max and kernel.threads-max (both bound the tasks), the tasks
 * running the fourth field of /proc/loadavg (sysinfo(2) truncates above
 * 65535). */
static void observe_pids(EvictionObservation *o) {
        _cleanup_free_ char *max = NULL, *tmax = NULL, *load = NULL;
        size_t size;
        uint64_t pid_max = 0, threads_max = 0, threads = 0;
        unsigned long running;
        o->valid = false;
        if (read_full_file_at(AT_FDCWD, "/proc/sys/kernel/pid_max", 64, &max, &size) < 0 ||
            read_full_file_at(AT_FDCWD, "/proc/loadavg", 256, &load, &size) < 0 ||
            sscanf(max, "%" SCNu64, &pid_max) != 1 ||
            sscanf(load, "%*s %*s %*s %lu/%" SCNu64, &running, &threads) != 2)
                return;
        if (read_full_file_at(AT_FDCWD, "/proc/sys/kernel/threads-max", 64, &tmax, &size) >= 0 &&
            sscanf(tmax, "%" SCNu64, &threads_max) == 1 && threads_max > 0 && threads_max < pid_max)
                pid_max = threads_max;
        *o = (EvictionObservation){ .valid = true,
                                    .capacity = pid_max,
                                    .available = pid_max > threads ? pid_max - threads : 0 };
}

static int write_status(EvictionManager *m) {
        json_t *conds = json_array(), *signals = json_object();
        json_t *o = json_pack("{s:o, s:o}", "conditions", conds ? conds : json_null(), "signals",
                              signals ? signals : json_null());
        if (!o || !conds || !signals) {
                json_decref(o);
                return -ENOMEM;
        }
        for (int c = 0; c < _NODE_CONDITION_MAX; c++) {
                const ConditionState *s = &m->cond[c];
                char when[64] = "";
                time_t t = (time_t)(s->last_transition / USEC_PER_SEC);
                struct tm tm;
                if (s->last_transition && gmtime_r(&t, &tm))
                        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
                const char *name = node_condition_to_string((NodeCondition)c);
                static const char *const reasons[_NODE_CONDITION_MAX][2] = {
                        [NODE_CONDITION_MEMORY_PRESSURE] = { "KubeletHasSufficientMemory",
                                                             "KubeletHasInsufficientMemory" },
                        [NODE_CONDITION_DISK_PRESSURE] = { "KubeletHasNoDiskPressure",
                                                           "KubeletHasDiskPressure" },
                        [NODE_CONDITION_PID_PRESSURE] = { "KubeletHasSufficientPID",
                                                          "KubeletHasInsufficientPID" },
                };
                const char *reason = reasons[c][s->status];
                if (json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type",
                                                           name, "status",
                                                           s->status ? "True" : "False", "reason",
                                                           reason, "message", strempty(s->message),
                                                           "lastTransitionTime", when)) < 0) {
                        json_decref(o);
                        return -ENOMEM;
                }
        }
        if (m->pods)
                (void)json_object_set_new(o, "evicted",
                                          json_integer(pod_manager_evicted_count(m->pods)));
        for (int i = 0; i < _EVICTION_SIGNAL_MAX; i++)
                if (m->obs[i].valid)
                        (void)json_object_set_new(
                                signals, eviction_signal_to_string((EvictionSignal)i),
                                json_pack("{s:I, s:I}", "available",
                                          (json_int_t)m->obs[i].available, "capacity",
                                          (json_int_t)m->obs[i].capacity));
        _cleanup_free_ char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(o);
        if (!text)
                return -ENOMEM;
        return write_file_atomic(m->status_path, text, strlen(text), 0644);
}

static const char *const pressure_reason[_NODE_CONDITION_MAX] = {
        [NODE_CONDITION_MEMORY_PRESSURE] = "kubelet has insufficient memory available",
        [NODE_CONDITION_DISK_PRESSURE] = "kubelet has disk pressure",
        [NODE_CONDITION_PID_PRESSURE] = "kubelet has insufficient PID available",
};
static const char *const ok_reason[_NODE_CONDITION_MAX] = {
        [NODE_CONDITION_MEMORY_PRESSURE] = "kubelet has sufficient memory available",
        [NODE_CONDITION_DISK_PRESSURE] = "kubelet has no disk pressure",
        [NODE_CONDITION_PID_PRESSURE] = "kubelet has sufficient PID available",
};

/* ---- choosing and evicting a pod ---- */

static int32_t spec_priority(json_t *spec) {
        json_t *p = json_object_get(spec, "priority");
        return eviction_pod_priority(json_string_value(json_object_get(spec, "priorityClassName")),
                                     json_is_integer(p), json_integer_value(p));
}

/* Sum of the containers' requests of resource (a limit alone counts as the
 * request, as the API server defaults it). */
static uint64_t spec_requests(json_t *spec, const char *resource) {
        uint64_t sum = 0;
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, "containers"), i, c) {
                json_t *res = json_object_get(c, "resources");
                json_t *v = json_object_get(json_object_get(res, "requests"), resource);
                if (!v)
                        v = json_object_get(json_object_get(res, "limits"), resource);
                Quantity q;
                if (json_is_string(v) && quantity_parse(json_string_value(v), &q) >= 0 &&
                    q.value > 0)
                        sum += (uint64_t)q.value;
                else if (json_is_integer(v) && json_integer_value(v) > 0)
                        sum += (uint64_t)json_integer_value(v);
        }
        return sum;
}

typedef enum RankResource {
        RANK_MEMORY,
        RANK_DISK,
        RANK_PIDS,
} RankResource;

static uint64_t summary_usage(json_t *summary, const char *uid, RankResource what) {
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(summary, "pods"), i, p) {
                const char *u =
                        json_string_value(json_object_get(json_object_get(p, "podRef"), "uid"));
                if (!u || !streq(u, uid))
                        continue;
                static const char *const keys[][2] = {
                        [RANK_MEMORY] = { "memory", "workingSetBytes" },
                        [RANK_DISK] = { "ephemeral-storage", "usedBytes" },
                        [RANK_PIDS] = { "process_stats", "process_count" },
                };
                json_t *o = json_object_get(p, keys[what][0]);
                json_t *v = json_object_get(o, keys[what][1]);
                return json_is_integer(v) && json_integer_value(v) > 0
                               ? (uint64_t)json_integer_value(v)
                               : 0;
        }
        return 0;
}

/* Evicts the first pod in kubelet's order for the threshold t. */
static void evict_one(EvictionManager *m, const EvictionThreshold *t) {
        _cleanup_free_ char *list_text = NULL, *summary_text = NULL;
        _cleanup_free_ EvictionCandidate *cand = NULL;
        _cleanup_free_ size_t *order = NULL;
        _cleanup_free_ const char **uids = NULL, **names = NULL;
        size_t size;
        RankResource what = t->signal == EVICTION_SIGNAL_MEMORY_AVAILABLE ? RANK_MEMORY
                            : t->signal == EVICTION_SIGNAL_PID_AVAILABLE  ? RANK_PIDS
                                                                          : RANK_DISK;

        if (pod_manager_pod_list_json(m->pods, &list_text, &size) < 0 ||
            pod_manager_stats_summary_json(m->pods, &summary_text, &size) < 0) {
                (void)log_oom();
                return;
        }
        _cleanup_json_ json_t *list = json_loads(list_text, 0, NULL);
        _cleanup_json_ json_t *summary = json_loads(summary_text, 0, NULL);
        json_t *items = json_object_get(list, "items");
        size_t n = json_array_size(items), k = 0;
        cand = calloc(n ?: 1, sizeof *cand);
        order = calloc(n ?: 1, sizeof *order);
        uids = calloc(n ?: 1, sizeof *uids);
        names = calloc(n ?: 1, sizeof *names);
        if (!cand || !order || !uids || !names) {
                (void)log_oom();
                return;
        }
        size_t i;
        json_t *pod;
        json_array_foreach(items, i, pod) {
                json_t *meta = json_object_get(pod, "metadata"),
                       *spec = json_object_get(pod, "spec"),
                       *status = json_object_get(pod, "status");
                const char *uid = json_string_value(json_object_get(meta, "uid"));
                const char *phase = json_string_value(json_object_get(status, "phase"));
                const char *reason = json_string_value(json_object_get(status, "reason"));
                if (!uid || (phase && (streq(phase, "Succeeded") || streq(phase, "Failed"))) ||
                    (reason && streq(reason, "Evicted")))
                        continue;
                uids[k] = uid;
                names[k] = json_string_value(json_object_get(meta, "name"));
                /* kubelet's rankPIDPressure: priority, then process count
                 * (pods request no pids: every count is over its request) */
                cand[k++] = (EvictionCandidate){
                        .priority = spec_priority(spec),
                        .usage = summary_usage(summary, uid, what),
                        .requests = what == RANK_PIDS
                                            ? 0
                                            : spec_requests(spec, what == RANK_MEMORY
                                                                          ? "memory"
                                                                          : "ephemeral-storage"),
                };
        }
        size_t r = eviction_rank(cand, k, m->static_pods, order);
        if (r == 0) {
                log_warning("Eviction threshold %s met, but no pod can be evicted (only critical "
                            "pods, or none, run).",
                            eviction_signal_to_string(t->signal));
                return;
        }
        const EvictionObservation *o = &m->obs[t->signal];
        _cleanup_free_ char *msg = eviction_message(
                t->signal, eviction_value_resolve(&t->value, o->capacity), o->available);
        if (!msg || pod_manager_evict(m->pods, uids[order[0]], msg) < 0)
                return;
        log_warning("Evicted pod \"%s\" (priority %d, %s usage %" PRIu64 ", requests %" PRIu64
                    ") for %s.",
                    strna(names[order[0]]), cand[order[0]].priority,
                    what == RANK_MEMORY ? "memory"
                    : what == RANK_PIDS ? "pids"
                                        : "disk",
                    cand[order[0]].usage, cand[order[0]].requests,
                    eviction_signal_to_string(t->signal));
        metric_inc(m->evictions, METRIC_LABELS(eviction_signal_to_string(t->signal)));
}

/* ---- local storage limits (kubelet's localStorageEviction) ---- */

static json_t *find_by_name(json_t *array, const char *name) {
        size_t i;
        json_t *e;
        json_array_foreach(array, i, e) {
                const char *n = json_string_value(json_object_get(e, "name"));
                if (n && streq(n, name))
                        return e;
        }
        return NULL;
}

static bool parse_limit(json_t *v, uint64_t *ret) {
        Quantity q;
        if (!json_is_string(v) || quantity_parse(json_string_value(v), &q) < 0 || q.value <= 0)
                return false;
        *ret = (uint64_t)q.value;
        return true;
}

static uint64_t used_bytes(json_t *fs) {
        json_t *v = json_object_get(fs, "usedBytes");
        return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v)
                                                               : 0;
}

/* The message kubelet gives when pod (summary entry ps, spec) is over one
 * of its local storage limits, and the metric's signal; NULL if none. */
static char *local_limit_exceeded(json_t *ps, json_t *spec, const char **ret_signal) {
        size_t i;
        json_t *e;
        /* emptyDir.sizeLimit */
        json_array_foreach(json_object_get(ps, "volume"), i, e) {
                const char *name = json_string_value(json_object_get(e, "name"));
                json_t *v = name ? find_by_name(json_object_get(spec, "volumes"), name) : NULL;
                json_t *lim = json_object_get(json_object_get(v, "emptyDir"), "sizeLimit");
                uint64_t limit;
                if (parse_limit(lim, &limit) && used_bytes(e) > limit) {
                        *ret_signal = "emptydirfs.limit";
                        return strprintf("Usage of EmptyDir volume \"%s\" exceeds the limit "
                                         "\"%s\". ",
                                         name, json_string_value(lim));
                }
        }
        /* A container's limits.ephemeral-storage: its writable layer and logs. */
        uint64_t total_limit = 0;
        bool all_limited = json_array_size(json_object_get(spec, "containers")) > 0;
        json_array_foreach(json_object_get(spec, "containers"), i, e) {
                json_t *lim =
                        json_object_get(json_object_get(json_object_get(e, "resources"), "limits"),
                                        "ephemeral-storage");
                uint64_t limit;
                if (!parse_limit(lim, &limit)) {
                        all_limited = false;
                        continue;
                }
                total_limit += limit;
                const char *name = json_string_value(json_object_get(e, "name"));
                json_t *cs = name ? find_by_name(json_object_get(ps, "containers"), name) : NULL;
                if (cs && used_bytes(json_object_get(cs, "rootfs")) +
                                          used_bytes(json_object_get(cs, "logs")) >
                                  limit) {
                        *ret_signal = "ephemeralcontainerfs.limit";
                        return strprintf("Container %s exceeded its local ephemeral storage limit "
                                         "\"%s\". ",
                                         name, json_string_value(lim));
                }
        }
        /* The pod as a whole, when every container has a limit (kubelet). */
        if (all_limited && used_bytes(json_object_get(ps, "ephemeral-storage")) > total_limit) {
                char q[32];
                snprintf(q, sizeof q, "%" PRIu64, total_limit);
                *ret_signal = "ephemeralpodfs.limit";
                return strprintf("Pod ephemeral local storage usage exceeds the total limit of "
                                 "containers %s. ",
                                 q);
        }
        return NULL;
}

/* A pod over a local storage limit that is not evicted (kubelet: "cannot
 * evict a critical pod"): said once while it stays over; over collects the
 * pods over a limit now, so one that goes under and over again is named
 * again. */
static void keep_over_limit(EvictionManager *m, const char *uid, const char *name, const char *msg,
                            char ***over) {
        if (!strv_contains(m->over_limit_logged, uid))
                log_warning("Pod \"%s\" is over a local storage limit and is not evicted "
                            "(static pods are not evicted; --evict-static-pods evicts them): %s",
                            strna(name), msg);
        if (strv_extend(over, uid) < 0)
                (void)log_oom();
}

/* Every period, whatever the node's pressure: the usage comes from the
 * disk-usage helper's last walk (pod-stats.h), never from the loop. Only
 * the pods with a local storage limit are looked at (kubelet ranges over
 * all and finds nothing to do for the others): with none, as on most nodes,
 * no summary is built, and the disk-usage walks do not start for this. */
static void check_local_limits(EvictionManager *m) {
        _cleanup_free_ char *list_text = NULL, *summary_text = NULL;
        _cleanup_strv_free_ char **over = NULL;
        size_t size;

        int r = pod_manager_local_limits_json(m->pods, &list_text, &size, &summary_text, &size);
        if (r < 0) {
                (void)log_oom();
                return;
        }
        if (r == 0) {
                m->over_limit_logged = strv_free(m->over_limit_logged);
                return;
        }
        _cleanup_json_ json_t *list = json_loads(list_text, 0, NULL);
        _cleanup_json_ json_t *summary = json_loads(summary_text, 0, NULL);
        size_t i;
        json_t *pod;
        json_array_foreach(json_object_get(list, "items"), i, pod) {
                json_t *meta = json_object_get(pod, "metadata"),
                       *status = json_object_get(pod, "status");
                const char *uid = json_string_value(json_object_get(meta, "uid"));
                const char *reason = json_string_value(json_object_get(status, "reason"));
                const char *phase = json_string_value(json_object_get(status, "phase"));
                if (!uid || (reason && streq(reason, "Evicted")) ||
                    (phase && (streq(phase, "Succeeded") || streq(phase, "Failed"))))
                        continue;
                size_t j;
                json_t *ps, *found = NULL;
                json_array_foreach(json_object_get(summary, "pods"), j, ps) {
                        const char *u = json_string_value(
                                json_object_get(json_object_get(ps, "podRef"), "uid"));
                        if (u && streq(u, uid))
                                found = ps;
                }
                const char *signal = NULL;
                _cleanup_free_ char *msg =
                        found ? local_limit_exceeded(found, json_object_get(pod, "spec"), &signal)
                              : NULL;
                if (!msg)
                        continue;
                if (m->static_pods == STATIC_POD_EVICTION_NEVER) {
                        keep_over_limit(m, uid, json_string_value(json_object_get(meta, "name")),
                                        msg, &over);
                        continue;
                }
                if (pod_manager_evict(m->pods, uid, msg) < 0)
                        continue;
                metric_inc(m->evictions, METRIC_LABELS(signal));
        }
        strv_free(m->over_limit_logged);
        m->over_limit_logged = TAKE_PTR(over);
}

/* STATIC_POD_EVICTION_NEVER: kubelet's rule, every static pod is
 * critical. Said once per pressure episode of each condition, so that the
 * log shows why nothing is stopped while the node stays under pressure. */
static void log_kept_pods(EvictionManager *m, const EvictionThreshold *const *first_met) {
        for (int c = 0; c < _NODE_CONDITION_MAX; c++) {
                if (!m->cond[c].status)
                        m->kept_logged[c] = false;
                const EvictionThreshold *t = first_met[c];
                if (!t || m->kept_logged[c])
                        continue;
                m->kept_logged[c] = true;
                log_warning("Eviction threshold %s met: no pod is evicted (static pods are not "
                            "evicted; --evict-static-pods evicts them)%s.",
                            eviction_signal_to_string(t->signal),
                            c == NODE_CONDITION_DISK_PRESSURE && m->disk_reclaimed
                                    ? "; image GC was asked to remove every unused image"
                                    : "");
        }
}

static void evaluate(EvictionManager *m) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        bool met_cond[_NODE_CONDITION_MAX] = {};
        const EvictionThreshold *first_met[_NODE_CONDITION_MAX] = {};
        _cleanup_free_ char *what[_NODE_CONDITION_MAX] = {};

        observe_memory(&m->obs[EVICTION_SIGNAL_MEMORY_AVAILABLE]);
        observe_fs(m->root_dir, &m->obs[EVICTION_SIGNAL_NODEFS_AVAILABLE],
                   &m->obs[EVICTION_SIGNAL_NODEFS_INODES_FREE]);
        observe_fs(m->images_dir, &m->obs[EVICTION_SIGNAL_IMAGEFS_AVAILABLE],
                   &m->obs[EVICTION_SIGNAL_IMAGEFS_INODES_FREE]);
        observe_pids(&m->obs[EVICTION_SIGNAL_PID_AVAILABLE]);

        for (size_t i = 0; i < m->config.n; i++) {
                const EvictionThreshold *t = &m->config.thresholds[i];
                bool met = eviction_threshold_met(
                        t, m->obs, m->cond[eviction_signal_condition(t->signal)].status);
                if (t->soft) {
                        /* Logged both ways: the grace period is counted from
                         * here, and this line is the record of it. */
                        const EvictionObservation *o = &m->obs[t->signal];
                        if (!met && m->soft_since[i] != 0)
                                log_info("Soft eviction threshold %s no longer met (available "
                                         "%" PRIu64 ").",
                                         eviction_signal_to_string(t->signal), o->available);
                        if (!met)
                                m->soft_since[i] = 0;
                        else if (m->soft_since[i] == 0) {
                                m->soft_since[i] = now;
                                log_info("Soft eviction threshold %s<%" PRIu64
                                         " met (available %" PRIu64
                                         "); acted on after its grace period of %" PRIu64 " s.",
                                         eviction_signal_to_string(t->signal),
                                         eviction_value_resolve(&t->value, o->capacity),
                                         o->available, t->grace_period / USEC_PER_SEC);
                        }
                        met = met && now - m->soft_since[i] >= t->grace_period;
                }
                if (!met)
                        continue;
                NodeCondition c = eviction_signal_condition(t->signal);
                met_cond[c] = true;
                if (!first_met[c])
                        first_met[c] = t;
                if (!what[c]) {
                        const EvictionObservation *o = &m->obs[t->signal];
                        what[c] = eviction_message(t->signal,
                                                   eviction_value_resolve(&t->value, o->capacity),
                                                   o->available);
                        log_debug("Eviction threshold met: %s (%s%s).", strna(what[c]),
                                  eviction_signal_to_string(t->signal), t->soft ? ", soft" : "");
                }
        }

        bool changed = false;
        for (int c = 0; c < _NODE_CONDITION_MAX; c++) {
                ConditionState *s = &m->cond[c];
                if (met_cond[c])
                        s->last_met = now;
                bool status =
                        s->last_met != 0 &&
                        (met_cond[c] || now - s->last_met < m->config.pressure_transition_period);
                if (met_cond[c] && what[c]) {
                        free(s->message);
                        s->message = TAKE_PTR(what[c]);
                }
                if (status == s->status)
                        continue;
                s->status = status;
                s->last_transition = now_usec(CLOCK_REALTIME);
                if (!status) {
                        free(s->message);
                        s->message = strdup(ok_reason[c]);
                }
                changed = true;
                log_full(status ? LOG_WARNING : LOG_INFO, "Node condition %s is now %s%s%s%s%s.",
                         node_condition_to_string((NodeCondition)c), status ? "True" : "False",
                         status ? ": " : "", status ? pressure_reason[c] : "", status ? ": " : "",
                         status ? strempty(s->message) : "");
        }
        /* Node-level reclaim first, as kubelet: unused images (dead
         * containers' attempts are already kept to the last one per
         * container, docs/logs.md). */
        bool reclaim_now = false;
        if (met_cond[NODE_CONDITION_DISK_PRESSURE] && !m->disk_reclaimed) {
                m->disk_reclaimed = reclaim_now = true;
                image_gc_reclaim_all(m->image_gc);
        }
        if (!m->cond[NODE_CONDITION_DISK_PRESSURE].status)
                m->disk_reclaimed = false;
        /* Then, only with --evict-static-pods, pods, one per period: what the
         * reclaim freed shows in the next observation. Memory first, then
         * disk, then pids. kubelet waits for an evicted pod to be cleaned up
         * before the next: its emptyDir may be what frees the disk. */
        if (m->pods && m->static_pods == STATIC_POD_EVICTION_NEVER)
                log_kept_pods(m, first_met);
        else if (m->pods && now >= m->next_eviction &&
                 pod_manager_evictions_in_progress(m->pods) == 0) {
                const EvictionThreshold *t = first_met[NODE_CONDITION_MEMORY_PRESSURE];
                if (!t && !reclaim_now)
                        t = first_met[NODE_CONDITION_DISK_PRESSURE];
                if (!t)
                        t = first_met[NODE_CONDITION_PID_PRESSURE];
                if (t) {
                        evict_one(m, t);
                        m->next_eviction = now + m->period;
                }
        }
        if (m->pods)
                check_local_limits(m);
        /* The pressure is over (transition period included): evicted pods
         * may start again. */
        bool any = false;
        for (int c = 0; c < _NODE_CONDITION_MAX; c++)
                any = any || m->cond[c].status;
        if (m->pods && !any) {
                /* The back-off: an evicted pod waits at least the transition
                 * period (and one period) before it may start again. */
                unsigned n = pod_manager_unevict_all(
                        m->pods, MAX(m->config.pressure_transition_period, m->period));
                if (n > 0)
                        log_info("Node pressure is over: %u evicted pod(s) may start again.", n);
        }
        usec_t mono = now_usec(CLOCK_MONOTONIC);
        if (changed || m->last_write == 0 || mono - m->last_write >= STATUS_REWRITE_PERIOD) {
                int r = write_status(m);
                if (r < 0)
                        log_warning_errno(r, "Cannot write \"%s\": %m", m->status_path);
                m->last_write = mono;
        }
}

static int on_timer(EventSource *s, usec_t now, void *userdata) {
        EvictionManager *m = userdata;
        evaluate(m);
        return event_source_set_time_relative(s, m->period);
}

int eviction_manager_new(EvictionManager **ret, Event *e, const EvictionManagerOptions *o) {
        _cleanup_(eviction_manager_freep) EvictionManager *m = calloc(1, sizeof *m);
        int r;

        if (!m)
                return -ENOMEM;
        m->event = e;
        m->image_gc = o->image_gc;
        m->pods = o->pods;
        m->static_pods = o->static_pods;
        m->period = o->period ?: 10 * USEC_PER_SEC;
        m->root_dir = strdup(o->root_dir);
        m->images_dir = strprintf("%s/images", o->root_dir);
        m->status_path = strdup(o->status_path);
        if (!m->root_dir || !m->images_dir || !m->status_path)
                return -ENOMEM;
        m->config = *o->config;
        m->config.thresholds = NULL;
        if (o->config->n > 0) {
                m->config.thresholds = calloc(o->config->n, sizeof *m->config.thresholds);
                m->soft_since = calloc(o->config->n, sizeof *m->soft_since);
                if (!m->config.thresholds || !m->soft_since)
                        return -ENOMEM;
                memcpy(m->config.thresholds, o->config->thresholds,
                       o->config->n * sizeof *m->config.thresholds);
        }
        for (int c = 0; c < _NODE_CONDITION_MAX; c++)
                if (!(m->cond[c].message = strdup(ok_reason[c])))
                        return -ENOMEM;
        r = metrics_register(o->metrics, &m->evictions, METRIC_COUNTER, "kubelet_evictions_total",
                             "Pods evicted by node-pressure eviction, by eviction signal "
                             "(kubelet's kubelet_evictions, with the _total suffix counters "
                             "carry).",
                             METRIC_LABELS("eviction_signal"), NULL, 0);
        if (r < 0)
                return r;
        r = event_add_time_relative(e, &m->timer, 0, USEC_PER_SEC, on_timer, m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

EvictionManager *eviction_manager_free(EvictionManager *m) {
        if (!m)
                return NULL;
        event_source_free(m->timer);
        eviction_config_done(&m->config);
        free(m->soft_since);
        for (int c = 0; c < _NODE_CONDITION_MAX; c++)
                free(m->cond[c].message);
        free(m->root_dir);
        free(m->images_dir);
        free(m->status_path);
        strv_free(m->over_limit_logged);
        free(m);
        return NULL;
}

bool eviction_manager_condition(const EvictionManager *m, NodeCondition c) {
        return m && c >= 0 && c < _NODE_CONDITION_MAX && m->cond[c].status;
}
