#include "pod-stats.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cgroup.h"
#include "child.h"
#include "cleanup.h"
#include "json-util.h"
#include "log.h"
#include "helper.h"
#include "string-util.h"
#include "strv.h"

/* ---- CPU samples ---- */

typedef struct CpuSample {
        char *key;
        usec_t time[2]; /* [0] newest; 0 = none */
        uint64_t usage[2];
        bool recorded; /* since the last sweep */
} CpuSample;

struct CpuSamples {
        CpuSample *v;
        size_t n, cap;
        size_t next; /* where cpu_samples_record() looks first */
};

CpuSamples *cpu_samples_new(void) {
        return calloc(1, sizeof(CpuSamples));
}

CpuSamples *cpu_samples_free(CpuSamples *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i].key);
        free(s->v);
        free(s);
        return NULL;
}

static CpuSample *sample_find(const CpuSamples *s, const char *key) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->v[i].key, key))
                        return &s->v[i];
        return NULL;
}

bool cpu_samples_has(const CpuSamples *s, const char *key) {
        return sample_find(s, key) != NULL;
}

/* The timer records the same cgroups in the same order every pass (and the
 * sweep keeps the order): looking first right after the last one recorded
 * makes a pass one comparison per cgroup instead of a scan each, which with
 * 100 pods (200 cgroups) was most of the pass's own time. */
int cpu_samples_record(CpuSamples *s, const char *key, uint64_t usage_ns, usec_t now) {
        CpuSample *e = s->next < s->n && streq(s->v[s->next].key, key) ? &s->v[s->next]
                                                                       : sample_find(s, key);
        if (!e) {
                if (s->n == s->cap) {
                        size_t cap = s->cap ? 2 * s->cap : 16;
                        CpuSample *v = reallocarray(s->v, cap, sizeof *v);
                        if (!v)
                                return -ENOMEM;
                        s->v = v;
                        s->cap = cap;
                }
                char *k = strdup(key);
                if (!k)
                        return -ENOMEM;
                e = &s->v[s->n++];
                *e = (CpuSample){ .key = k };
        }
        s->next = (size_t)(e - s->v) + 1;
        e->time[1] = e->time[0];
        e->usage[1] = e->usage[0];
        e->time[0] = now;
        e->usage[0] = usage_ns;
        e->recorded = true;
        return 0;
}

void cpu_samples_sweep(CpuSamples *s) {
        size_t j = 0;
        for (size_t i = 0; i < s->n; i++) {
                if (!s->v[i].recorded) {
                        free(s->v[i].key);
                        continue;
                }
                s->v[i].recorded = false;
                s->v[j++] = s->v[i];
        }
        s->n = j;
        s->next = 0;
}

int cpu_samples_nano_cores(const CpuSamples *s, const char *key, uint64_t usage_ns, usec_t now,
                           uint64_t *ret) {
        const CpuSample *e = sample_find(s, key);
        if (!e)
                return -ENODATA;
        for (size_t i = 0; i < 2; i++)
                if (e->time[i] > 0 && e->time[i] + POD_STATS_MIN_WINDOW <= now)
                        return cgroup_stats_nano_cores(e->usage[i], e->time[i], usage_ns, now,
                                                       ret) < 0
                                       ? -ENODATA
                                       : 0;
        return -ENODATA;
}

/* ---- the JSON ---- */

typedef struct JsonBuild {
        bool oom;
} JsonBuild;

static void put(JsonBuild *b, json_t *o, const char *key, json_t *v) {
        if (!o || !v || json_object_set_new(o, key, v) < 0)
                b->oom = true;
}

static void put_u64(JsonBuild *b, json_t *o, const char *key, uint64_t v) {
        /* json_int_t is signed 64: counters never get near 2^63. */
        put(b, o, key, json_integer((json_int_t)(v > INT64_MAX ? INT64_MAX : v)));
}

static void put_time(JsonBuild *b, json_t *o, const char *key, usec_t t) {
        char buf[32];
        put(b, o, key, json_string(format_rfc3339(buf, sizeof buf, t)));
}

static json_t *fs_json(JsonBuild *b, const StatsFs *f) {
        json_t *o = json_object();
        put_time(b, o, "time", f->time);
        put_u64(b, o, "availableBytes", f->fs.available);
        put_u64(b, o, "capacityBytes", f->fs.capacity);
        if (f->used.valid)
                put_u64(b, o, "usedBytes", f->used.bytes);
        put_u64(b, o, "inodesFree", f->fs.inodes_free);
        put_u64(b, o, "inodes", f->fs.inodes);
        if (f->used.valid)
                put_u64(b, o, "inodesUsed", f->used.inodes);
        return o;
}

/* kubelet's swapAvailableBytes: the limit less the usage, at least 0. */
static uint64_t swap_available(const CgroupStats *cg) {
        return cg->swap_limit > cg->swap_usage ? cg->swap_limit - cg->swap_usage : 0;
}

static void usage_json(JsonBuild *b, json_t *parent, const StatsUsage *u) {
        if (u->time == 0)
                return;
        if (u->cg.has_cpu) {
                json_t *cpu = json_object();
                put_time(b, cpu, "time", u->time);
                if (u->has_nano_cores)
                        put_u64(b, cpu, "usageNanoCores", u->nano_cores);
                put_u64(b, cpu, "usageCoreNanoSeconds", u->cg.cpu_usage_ns);
                put(b, parent, "cpu", cpu);
        }
        if (u->cg.has_memory) {
                json_t *mem = json_object();
                put_time(b, mem, "time", u->time);
                if (u->cg.has_memory_available)
                        put_u64(b, mem, "availableBytes", u->cg.memory_available);
                put_u64(b, mem, "usageBytes", u->cg.memory_usage);
                put_u64(b, mem, "workingSetBytes", u->cg.memory_working_set);
                put_u64(b, mem, "rssBytes", u->cg.memory_rss);
                put_u64(b, mem, "pageFaults", u->cg.memory_pgfault);
                put_u64(b, mem, "majorPageFaults", u->cg.memory_pgmajfault);
                put(b, parent, "memory", mem);
        }
        if (u->cg.has_swap) {
                json_t *swap = json_object();
                put_time(b, swap, "time", u->time);
                if (u->cg.swap_limit != CGROUP_STATS_NO_LIMIT)
                        put_u64(b, swap, "swapAvailableBytes", swap_available(&u->cg));
                put_u64(b, swap, "swapUsageBytes", u->cg.swap_usage);
                put(b, parent, "swap", swap);
        }
}

static json_t *container_json(JsonBuild *b, const ContainerSummary *c) {
        json_t *o = json_object();
        put(b, o, "name", json_string(c->name));
        put_time(b, o, "startTime", c->start_time);
        usage_json(b, o, &c->usage);
        if (c->rootfs.time > 0)
                put(b, o, "rootfs", fs_json(b, &c->rootfs));
        if (c->logs.time > 0)
                put(b, o, "logs", fs_json(b, &c->logs));
        return o;
}

static json_t *pod_json(JsonBuild *b, const PodSummary *p) {
        json_t *o = json_object(), *containers = json_array();
        put(b, o, "podRef",
            json_pack("{s:s, s:s, s:s}", "name", p->name, "namespace", p->namespace, "uid",
                      p->uid));
        put_time(b, o, "startTime", p->start_time);
        for (size_t i = 0; i < p->n_containers; i++)
                if (!containers ||
                    json_array_append_new(containers, container_json(b, &p->containers[i])) < 0)
                        b->oom = true;
        put(b, o, "containers", containers);
        usage_json(b, o, &p->usage);
        /* kubelet's ProcessStats (PID pressure ranks pods by it) */
        if (p->usage.time > 0 && p->usage.cg.has_pids)
                put(b, o, "process_stats",
                    json_pack("{s:I}", "process_count", (json_int_t)p->usage.cg.pids_current));
        if (p->ephemeral_storage.time > 0)
                put(b, o, "ephemeral-storage", fs_json(b, &p->ephemeral_storage));
        if (p->n_volumes > 0) {
                json_t *vols = json_array();
                for (size_t i = 0; i < p->n_volumes; i++) {
                        json_t *v = fs_json(b, &p->volumes[i].fs);
                        put(b, v, "name", json_string(p->volumes[i].name));
                        if (!vols || json_array_append_new(vols, v) < 0)
                                b->oom = true;
                }
                put(b, o, "volume", vols);
        }
        return o;
}

int pod_stats_summary_format(const NodeSummary *node, const PodSummary *pods, size_t n_pods,
                             char **ret, size_t *ret_size) {
        JsonBuild b = {};
        _cleanup_json_ json_t *root = json_object();
        json_t *n = json_object(), *list = json_array();

        put(&b, n, "nodeName", json_string(node->node_name));
        put_time(&b, n, "startTime", node->start_time);
        usage_json(&b, n, &node->usage);
        if (node->fs.time > 0)
                put(&b, n, "fs", fs_json(&b, &node->fs));
        if (node->image_fs.time > 0) {
                json_t *rt = json_object();
                put(&b, rt, "imageFs", fs_json(&b, &node->image_fs));
                put(&b, n, "runtime", rt);
        }
        put(&b, root, "node", n);
        for (size_t i = 0; i < n_pods; i++)
                if (!list || json_array_append_new(list, pod_json(&b, &pods[i])) < 0)
                        b.oom = true;
        put(&b, root, "pods", list);
        if (b.oom)
                return -ENOMEM;
        char *s = json_dumps(root, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        size_t len = strlen(s);
        char *t = realloc(s, len + 2);
        if (!t) {
                free(s);
                return -ENOMEM;
        }
        t[len] = '\n';
        t[len + 1] = 0;
        *ret = t;
        *ret_size = len + 1;
        return 0;
}

/* ---- directory usage, in a helper process ---- */

typedef struct DuEntry {
        char *path;
        DiskUsage du; /* last result; !valid: none yet, or not walkable */
        bool wanted;  /* seen by the current sample pass */
} DuEntry;

struct PodStats {
        Event *event;
        char *node_name;
        char *root_dir;
        char *images_dir, *layers_dir;
        char *cgroup_root;
        char *proc_dir;
        usec_t boot_time; /* CLOCK_REALTIME; 0 unknown */

        CpuSamples *cpu;

        DuEntry *du;
        size_t n_du, cap_du;
        size_t du_next; /* where du_want() looks first (cpu_samples_record()'s reason) */
        Child *du_child;
        char **du_running; /* the paths the running helper walks, in order */
        usec_t du_last;    /* CLOCK_MONOTONIC when the last run started */
        /* A summary was asked for: only then are directories walked (an
         * agent nobody asks costs no helper processes). */
        bool requested;
};

PodStats *pod_stats_free(PodStats *s) {
        if (!s)
                return NULL;
        child_free(s->du_child);
        strv_free(s->du_running);
        for (size_t i = 0; i < s->n_du; i++)
                free(s->du[i].path);
        free(s->du);
        cpu_samples_free(s->cpu);
        free(s->node_name);
        free(s->root_dir);
        free(s->images_dir);
        free(s->layers_dir);
        free(s->cgroup_root);
        free(s->proc_dir);
        free(s);
        return NULL;
}

int pod_stats_new(PodStats **ret, Event *e, const PodStatsOptions *o) {
        _cleanup_(pod_stats_freep) PodStats *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->event = e;
        s->node_name = strdup(o->node_name ?: "");
        s->root_dir = strdup(o->root_dir);
        s->images_dir = strprintf("%s/images", o->root_dir);
        s->layers_dir = strprintf("%s/layers", o->root_dir);
        s->cgroup_root = strdup(o->cgroup_root ?: "/sys/fs/cgroup");
        s->proc_dir = strdup(o->proc_dir ?: "/proc");
        s->cpu = cpu_samples_new();
        if (!s->node_name || !s->root_dir || !s->images_dir || !s->layers_dir || !s->cgroup_root ||
            !s->proc_dir || !s->cpu)
                return -ENOMEM;
        if (cgroup_stats_read_boot_time(s->proc_dir, &s->boot_time) < 0)
                s->boot_time = 0;
        *ret = TAKE_PTR(s);
        return 0;
}

static DuEntry *du_find(PodStats *s, const char *path) {
        for (size_t i = 0; i < s->n_du; i++)
                if (streq(s->du[i].path, path))
                        return &s->du[i];
        return NULL;
}

/* Marks path as one the next run walks. true when it is new. */
static bool du_want(PodStats *s, const char *path) {
        DuEntry *e = s->du_next < s->n_du && streq(s->du[s->du_next].path, path)
                             ? &s->du[s->du_next]
                             : du_find(s, path);
        if (e) {
                s->du_next = (size_t)(e - s->du) + 1;
                e->wanted = true;
                return false;
        }
        if (s->n_du == s->cap_du) {
                size_t cap = s->cap_du ? 2 * s->cap_du : 16;
                DuEntry *v = reallocarray(s->du, cap, sizeof *v);
                if (!v)
                        return false;
                s->du = v;
                s->cap_du = cap;
        }
        char *p = strdup(path);
        if (!p)
                return false;
        s->du[s->n_du++] = (DuEntry){ .path = p, .wanted = true };
        s->du_next = s->n_du;
        return true;
}

static DiskUsage du_get(PodStats *s, const char *path) {
        DuEntry *e = du_find(s, path);
        return e ? e->du : (DiskUsage){};
}

static void on_du_done(Child *c, void *userdata) {
        PodStats *s = userdata;
        size_t n = strv_length(s->du_running);
        _cleanup_free_ DiskUsage *res = NULL;
        _cleanup_json_ json_t *result = NULL;
        Error err = {};

        if (helper_child_result(c, "the helper", &result, &err) < 0) {
                log_warning("Disk usage for the stats summary failed: %s", err.message);
                goto done;
        }
        res = calloc(n ?: 1, sizeof *res);
        if (!res) {
                (void)log_oom();
                goto done;
        }
        if (disk_usage_parse_result(result, n, res) < 0) {
                log_warning("Disk usage helper for the stats summary reported something else than "
                            "%zu directories' usage; ignoring it.",
                            n);
                goto done;
        }
        for (size_t i = 0; i < n; i++) {
                DuEntry *e = du_find(s, s->du_running[i]);
                if (e) /* else forgotten while the helper ran */
                        e->du = res[i];
        }
done:
        s->du_running = strv_free(s->du_running);
        s->du_child = child_free(s->du_child);
}

/* Forgets the directories this pass did not see, then starts a run over
 * the rest when one is due. */
static void du_refresh(PodStats *s, bool new_dirs, usec_t now) {
        size_t j = 0;
        for (size_t i = 0; i < s->n_du; i++) {
                if (!s->du[i].wanted) {
                        free(s->du[i].path);
                        continue;
                }
                s->du[i].wanted = false;
                s->du[j++] = s->du[i];
        }
        s->n_du = j;
        s->du_next = 0;

        if (!s->requested || s->du_child || s->n_du == 0)
                return;
        if (!new_dirs && s->du_last > 0 && now < s->du_last + POD_STATS_DISK_USAGE_PERIOD)
                return;

        _cleanup_strv_free_ char **paths = calloc(s->n_du + 1, sizeof(char *));
        if (!paths)
                return;
        for (size_t i = 0; i < s->n_du; i++)
                if (!(paths[i] = strdup(s->du[i].path)))
                        return;
        DiskUsageArgs args = { .dirs = paths };
        HelperSpawnOptions o = {
                .mode = &disk_usage_helper_mode,
                .args = &args,
                .result_max = 48 * s->n_du + 256, /* "[u64,u64]," per directory */
                .stderr_max = 4096,
                .timeout = 5 * 60 * USEC_PER_SEC,
        };
        int r = helper_spawn(s->event, &o, on_du_done, s, &s->du_child);
        if (r < 0) {
                log_warning_errno(r, "Failed to start the disk usage helper: %m");
                return;
        }
        s->du_running = TAKE_PTR(paths);
        s->du_last = now;
}

/* ---- what a pod has ---- */

static bool worker_listed(const PodWorker *w) {
        return pod_worker_status_text(w) != NULL;
}

static bool container_listed(const ContainerState *c) {
        return c->state == CONTAINER_RUNNING && c->container_id;
}

/* The cgroupsPath the container was created with (container-config.c):
 * the pod's cgroup and the container ID. */
static char *container_cgroup(const PodWorker *w, const ContainerState *c) {
        return pod_worker_container_cgroup_path(w, c->container_id);
}

static char *container_upper(const PodWorker *w, const ContainerState *c) {
        return strprintf("%s/containers/%s/%u/upper", pod_worker_pod_dir(w), c->spec->name,
                         c->attempt);
}

/* A disk-backed emptyDir's directory (pod-volumes.c's layout), or NULL for
 * any other volume (a Memory emptyDir is memory, as kubelet counts it). */
static char *empty_dir_path(const PodWorker *w, const Volume *v) {
        if (v->type != VOLUME_EMPTY_DIR || v->empty_dir.medium != STORAGE_MEDIUM_DEFAULT)
                return NULL;
        return strprintf("%s/volumes/kubernetes.io~empty-dir/%s", pod_worker_pod_dir(w), v->name);
}

static char *container_log_dir(const PodWorker *w, const ContainerState *c) {
        return strprintf("%s/%s", pod_worker_log_dir(w), c->spec->name);
}

/* The i-th container of st (init containers first), or NULL when it is not
 * one the summary lists. */
static const ContainerState *listed_container(const PodState *st, size_t i) {
        const ContainerState *c = i < st->n_init ? &st->init[i] : &st->app[i - st->n_init];
        return container_listed(c) ? c : NULL;
}

/* The CPU counter only: memory and pids are read when a summary is asked
 * for, and need no earlier sample. */
static void sample_cgroup(PodStats *s, const char *path, usec_t now) {
        uint64_t ns;
        if (cgroup_stats_read_cpu(s->cgroup_root, path, &ns) >= 0)
                (void)cpu_samples_record(s->cpu, path, ns, now);
}

void pod_stats_sample(PodStats *s, PodWorker *const *workers, size_t n) {
        usec_t now = now_usec(CLOCK_MONOTONIC);
        bool new_dirs = false;
        uint64_t node_ns;

        if (cgroup_stats_read_node_cpu(s->cgroup_root, s->proc_dir, &node_ns) >= 0)
                (void)cpu_samples_record(s->cpu, "/", node_ns, now);
        /* Directories are listed only for a walk, and nothing is walked
         * before the first request (which calls this again). */
        bool walk = s->requested;
        if (walk) {
                new_dirs |= du_want(s, s->images_dir);
                new_dirs |= du_want(s, s->layers_dir);
        }
        for (size_t i = 0; i < n; i++) {
                PodWorker *w = workers[i];
                if (!worker_listed(w))
                        continue;
                _cleanup_free_ char *pod_cg = pod_worker_cgroup_path(w);
                if (pod_cg)
                        sample_cgroup(s, pod_cg, now);
                const PodState *st = pod_worker_state(w);
                for (size_t k = 0; walk && st->pod && k < st->pod->spec.n_volumes; k++) {
                        _cleanup_free_ char *ed = empty_dir_path(w, &st->pod->spec.volumes[k]);
                        if (ed)
                                new_dirs |= du_want(s, ed);
                }
                for (size_t k = 0; k < st->n_init + st->n_app; k++) {
                        const ContainerState *c = listed_container(st, k);
                        if (!c)
                                continue;
                        _cleanup_free_ char *cg = container_cgroup(w, c);
                        if (cg)
                                sample_cgroup(s, cg, now);
                        if (!walk)
                                continue;
                        _cleanup_free_ char *upper = container_upper(w, c);
                        _cleanup_free_ char *logs = container_log_dir(w, c);
                        if (upper)
                                new_dirs |= du_want(s, upper);
                        if (logs)
                                new_dirs |= du_want(s, logs);
                }
        }
        cpu_samples_sweep(s->cpu);
        du_refresh(s, new_dirs, now);
}

/* ---- the summary ---- */

static void usage_read(PodStats *s, const char *cgroup, usec_t now, usec_t realtime,
                       StatsUsage *ret) {
        StatsUsage u = { .time = realtime };
        if (cgroup_stats_read(s->cgroup_root, cgroup, &u.cg) < 0)
                return;
        if (u.cg.has_cpu) {
                u.has_nano_cores = cpu_samples_nano_cores(s->cpu, cgroup, u.cg.cpu_usage_ns, now,
                                                          &u.nano_cores) >= 0;
                /* A baseline for the next request when the timer has not
                 * seen this cgroup yet. */
                if (!cpu_samples_has(s->cpu, cgroup))
                        (void)cpu_samples_record(s->cpu, cgroup, u.cg.cpu_usage_ns, now);
        }
        *ret = u;
}

static void fs_read(PodStats *s, const char *dir, usec_t realtime, StatsFs *ret) {
        StatsFs f = { .time = realtime };
        if (disk_usage_statfs(dir, &f.fs) < 0)
                return;
        f.used = du_get(s, dir);
        *ret = f;
}

static int pod_summary_compare(const void *a, const void *b) {
        const PodSummary *x = a, *y = b;
        int k = strcmp(x->namespace, y->namespace);
        return k != 0 ? k : strcmp(x->name, y->name);
}

static void pod_summaries_free(PodSummary *p, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(p[i].containers);
                free(p[i].volumes);
        }
        free(p);
}

int pod_stats_summary_json(PodStats *s, PodWorker *const *workers, size_t n, char **ret,
                           size_t *ret_size) {
        usec_t now = now_usec(CLOCK_MONOTONIC), realtime = now_usec(CLOCK_REALTIME);
        NodeSummary node = { .node_name = s->node_name, .start_time = s->boot_time };
        PodSummary *pods = NULL;
        size_t n_pods = 0;
        int r = 0;

        /* The first request starts the directory usage runs now rather than
         * at the next tick. */
        if (!s->requested) {
                s->requested = true;
                pod_stats_sample(s, workers, n);
        }

        /* The node: its cpu counter, memory from /proc/meminfo. */
        uint64_t node_ns;
        if (cgroup_stats_read_node_cpu(s->cgroup_root, s->proc_dir, &node_ns) >= 0) {
                node.usage.time = realtime;
                node.usage.cg.has_cpu = true;
                node.usage.cg.cpu_usage_ns = node_ns;
                node.usage.has_nano_cores = cpu_samples_nano_cores(s->cpu, "/", node_ns, now,
                                                                   &node.usage.nano_cores) >= 0;
                if (!cpu_samples_has(s->cpu, "/"))
                        (void)cpu_samples_record(s->cpu, "/", node_ns, now);
        }
        CgroupStats mem;
        if (cgroup_stats_read_node_memory(s->proc_dir, &mem) >= 0) {
                node.usage.time = realtime;
                node.usage.cg.has_memory = true;
                node.usage.cg.memory_usage = mem.memory_usage;
                node.usage.cg.memory_working_set = mem.memory_working_set;
                node.usage.cg.memory_rss = mem.memory_rss;
                node.usage.cg.memory_pgfault = mem.memory_pgfault;
                node.usage.cg.memory_pgmajfault = mem.memory_pgmajfault;
                node.usage.cg.has_memory_available = mem.has_memory_available;
                node.usage.cg.memory_available = mem.memory_available;
                node.usage.cg.has_swap = mem.has_swap;
                node.usage.cg.swap_usage = mem.swap_usage;
                node.usage.cg.swap_limit = mem.swap_limit;
        }
        /* The node's fs reports the filesystem's own usage. */
        if (disk_usage_statfs(s->root_dir, &node.fs.fs) >= 0) {
                node.fs.time = realtime;
                node.fs.used = (DiskUsage){ .valid = true,
                                            .bytes = node.fs.fs.used,
                                            .inodes = node.fs.fs.inodes - node.fs.fs.inodes_free };
        }
        if (disk_usage_statfs(s->images_dir, &node.image_fs.fs) >= 0) {
                DiskUsage a = du_get(s, s->images_dir), b = du_get(s, s->layers_dir);
                node.image_fs.time = realtime;
                if (a.valid && b.valid)
                        node.image_fs.used = (DiskUsage){ .valid = true,
                                                          .bytes = a.bytes + b.bytes,
                                                          .inodes = a.inodes + b.inodes };
        }

        if (n > 0 && !(pods = calloc(n, sizeof *pods)))
                return -ENOMEM;
        /* Names below point into the workers, alive for this call. */
        for (size_t i = 0; r >= 0 && i < n; i++) {
                PodWorker *w = workers[i];
                const PodState *st = pod_worker_state(w);
                const ManifestObject *o = pod_worker_object(w);
                if (!worker_listed(w))
                        continue;
                PodSummary *p = &pods[n_pods++];
                *p = (PodSummary){ .name = o->name,
                                   .namespace = o->namespace,
                                   .uid = o->uid,
                                   .start_time = st->start_time };
                _cleanup_free_ char *pod_cg = pod_worker_cgroup_path(w);
                if (!pod_cg) {
                        r = -ENOMEM;
                        break;
                }
                usage_read(s, pod_cg, now, realtime, &p->usage);
                size_t max = st->n_init + st->n_app;
                if (max > 0 && !(p->containers = calloc(max, sizeof *p->containers))) {
                        r = -ENOMEM;
                        break;
                }
                DiskUsage eph = { .valid = true };
                for (size_t k = 0; r >= 0 && k < max; k++) {
                        const ContainerState *c = listed_container(st, k);
                        if (!c)
                                continue;
                        ContainerSummary *cs = &p->containers[p->n_containers++];
                        _cleanup_free_ char *cg = container_cgroup(w, c);
                        _cleanup_free_ char *upper = container_upper(w, c);
                        _cleanup_free_ char *logs = container_log_dir(w, c);
                        if (!cg || !upper || !logs) {
                                r = -ENOMEM;
                                break;
                        }
                        *cs = (ContainerSummary){ .name = c->spec->name,
                                                  .start_time = c->started_at };
                        usage_read(s, cg, now, realtime, &cs->usage);
                        fs_read(s, upper, realtime, &cs->rootfs);
                        fs_read(s, logs, realtime, &cs->logs);
                        eph.valid = eph.valid && cs->rootfs.used.valid && cs->logs.used.valid;
                        eph.bytes += cs->rootfs.used.bytes + cs->logs.used.bytes;
                        eph.inodes += cs->rootfs.used.inodes + cs->logs.used.inodes;
                        if (p->ephemeral_storage.time == 0 && cs->rootfs.time > 0)
                                p->ephemeral_storage = cs->rootfs;
                }
                size_t nv = st->pod ? st->pod->spec.n_volumes : 0;
                if (nv > 0 && !(p->volumes = calloc(nv, sizeof *p->volumes))) {
                        r = -ENOMEM;
                        break;
                }
                for (size_t k = 0; k < nv; k++) {
                        const Volume *v = &st->pod->spec.volumes[k];
                        _cleanup_free_ char *ed = empty_dir_path(w, v);
                        if (!ed)
                                continue;
                        VolumeSummary *vs = &p->volumes[p->n_volumes];
                        vs->name = v->name;
                        fs_read(s, ed, realtime, &vs->fs);
                        if (vs->fs.time == 0)
                                continue; /* not there (yet) */
                        p->n_volumes++;
                        eph.valid = eph.valid && vs->fs.used.valid;
                        eph.bytes += vs->fs.used.bytes;
                        eph.inodes += vs->fs.used.inodes;
                }
                if (p->ephemeral_storage.time > 0)
                        p->ephemeral_storage.used = eph;
        }
        if (r >= 0) {
                if (n_pods > 1)
                        qsort(pods, n_pods, sizeof *pods, pod_summary_compare);
                r = pod_stats_summary_format(&node, pods, n_pods, ret, ret_size);
        }
        pod_summaries_free(pods, n_pods);
        return r;
}

/* ---- /metrics/resource ---- */

typedef struct ResourceFamily {
        size_t offset;
        MetricType type;
        const char *name, *help;
        const char *const *labels;
} ResourceFamily;

#define RF(field) offsetof(ResourceMetrics, field)
#define CONTAINER_LABELS ((const char *const[]){ "container", "pod", "namespace", NULL })
#define POD_LABELS ((const char *const[]){ "pod", "namespace", NULL })

/* kubelet's names, labels and help texts. */
static const ResourceFamily resource_families[] = {
        { RF(container_cpu), METRIC_COUNTER, "container_cpu_usage_seconds_total",
          "Cumulative cpu time consumed by the container in core-seconds", CONTAINER_LABELS },
        { RF(container_memory), METRIC_GAUGE, "container_memory_working_set_bytes",
          "Current working set of the container in bytes", CONTAINER_LABELS },
        { RF(container_start_time), METRIC_GAUGE, "container_start_time_seconds",
          "Start time of the container since unix epoch in seconds", CONTAINER_LABELS },
        { RF(container_swap), METRIC_GAUGE, "container_swap_usage_bytes",
          "Current amount of the container swap usage in bytes. Reported only on non-windows "
          "systems",
          CONTAINER_LABELS },
        { RF(container_swap_limit), METRIC_GAUGE, "container_swap_limit_bytes",
          "Current amount of the container swap limit in bytes. Reported only on non-windows "
          "systems",
          CONTAINER_LABELS },
        { RF(node_cpu), METRIC_COUNTER, "node_cpu_usage_seconds_total",
          "Cumulative cpu time consumed by the node in core-seconds", NULL },
        { RF(node_memory), METRIC_GAUGE, "node_memory_working_set_bytes",
          "Current working set of the node in bytes", NULL },
        { RF(node_swap), METRIC_GAUGE, "node_swap_usage_bytes",
          "Current swap usage of the node in bytes. Reported only on non-windows systems", NULL },
        { RF(pod_cpu), METRIC_COUNTER, "pod_cpu_usage_seconds_total",
          "Cumulative cpu time consumed by the pod in core-seconds", POD_LABELS },
        { RF(pod_memory), METRIC_GAUGE, "pod_memory_working_set_bytes",
          "Current working set of the pod in bytes", POD_LABELS },
        { RF(pod_swap), METRIC_GAUGE, "pod_swap_usage_bytes",
          "Current amount of the pod swap usage in bytes. Reported only on non-windows systems",
          POD_LABELS },
        { RF(resource_scrape_error), METRIC_GAUGE, "resource_scrape_error",
          "1 if there was an error while getting container metrics, 0 otherwise", NULL },
        { RF(scrape_error), METRIC_GAUGE, "scrape_error",
          "(Deprecated since 1.29.0) 1 if there was an error while getting container metrics, "
          "0 otherwise",
          NULL },
};

int resource_metrics_register(ResourceMetrics *rm, Metrics *m) {
        *rm = (ResourceMetrics){};
        if (!m)
                return 0;
        for (size_t i = 0; i < sizeof resource_families / sizeof resource_families[0]; i++) {
                const ResourceFamily *f = &resource_families[i];
                MetricFamily **slot = (MetricFamily **)((char *)rm + f->offset);
                int r = metrics_register(m, slot, f->type, f->name, f->help, f->labels, NULL, 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

static double ns_to_seconds(uint64_t ns) {
        return (double)ns / 1e9;
}

/* The families one StatsUsage feeds (swap_limit may be NULL). */
typedef struct UsageFamilies {
        MetricFamily *cpu, *memory, *swap, *swap_limit;
} UsageFamilies;

static void resource_set_usage(const UsageFamilies *f, const char *const *labels,
                               const StatsUsage *u) {
        if (u->time == 0)
                return;
        if (u->cg.has_cpu)
                metric_set_at(f->cpu, labels, ns_to_seconds(u->cg.cpu_usage_ns), u->time);
        if (u->cg.has_memory)
                metric_set_at(f->memory, labels, (double)u->cg.memory_working_set, u->time);
        if (u->cg.has_swap) {
                metric_set_at(f->swap, labels, (double)u->cg.swap_usage, u->time);
                /* kubelet: swapAvailableBytes + swapUsageBytes */
                if (u->cg.swap_limit != CGROUP_STATS_NO_LIMIT)
                        metric_set_at(f->swap_limit, labels,
                                      (double)(swap_available(&u->cg) + u->cg.swap_usage), u->time);
        }
}

void resource_metrics_set(const ResourceMetrics *rm, const NodeSummary *node,
                          const PodSummary *pods, size_t n_pods) {
        MetricFamily *const labelled[] = { rm->pod_cpu,
                                           rm->pod_memory,
                                           rm->pod_swap,
                                           rm->container_cpu,
                                           rm->container_memory,
                                           rm->container_swap,
                                           rm->container_swap_limit,
                                           rm->container_start_time };
        const UsageFamilies node_f = { rm->node_cpu, rm->node_memory, rm->node_swap, NULL },
                            pod_f = { rm->pod_cpu, rm->pod_memory, rm->pod_swap, NULL },
                            container_f = { rm->container_cpu, rm->container_memory,
                                            rm->container_swap, rm->container_swap_limit };
        for (size_t i = 0; i < sizeof labelled / sizeof labelled[0]; i++)
                metric_clear(labelled[i]);

        /* A family without labels always has its one series: the node's
         * are there, read or not, and scrape_error says which. */
        bool node_ok = node->usage.time > 0 && node->usage.cg.has_cpu && node->usage.cg.has_memory;
        resource_set_usage(&node_f, NULL, &node->usage);
        metric_set(rm->scrape_error, NULL, node_ok ? 0 : 1);
        metric_set(rm->resource_scrape_error, NULL, node_ok ? 0 : 1);

        for (size_t i = 0; i < n_pods; i++) {
                const PodSummary *p = &pods[i];
                for (size_t k = 0; k < p->n_containers; k++) {
                        const ContainerSummary *c = &p->containers[k];
                        const char *const *labels = METRIC_LABELS(c->name, p->name, p->namespace);
                        if (c->start_time > 0)
                                metric_set(rm->container_start_time, labels,
                                           (double)c->start_time / (double)USEC_PER_SEC);
                        resource_set_usage(&container_f, labels, &c->usage);
                }
                resource_set_usage(&pod_f, METRIC_LABELS(p->name, p->namespace), &p->usage);
        }
}

static void resource_usage_read(PodStats *s, const char *cgroup, usec_t realtime, StatsUsage *ret) {
        StatsUsage u = { .time = realtime };
        if (cgroup_stats_read(s->cgroup_root, cgroup, &u.cg) >= 0)
                *ret = u;
}

void pod_stats_resource_metrics(PodStats *s, PodWorker *const *workers, size_t n,
                                const ResourceMetrics *rm) {
        usec_t realtime = now_usec(CLOCK_REALTIME);
        NodeSummary node = { .node_name = s->node_name, .start_time = s->boot_time };
        PodSummary *pods = NULL;
        size_t n_pods = 0;
        bool failed = false;

        uint64_t node_ns;
        CgroupStats mem;
        if (cgroup_stats_read_node_cpu(s->cgroup_root, s->proc_dir, &node_ns) >= 0 &&
            cgroup_stats_read_node_memory(s->proc_dir, &mem) >= 0) {
                node.usage.time = realtime;
                node.usage.cg = mem;
                node.usage.cg.has_cpu = true;
                node.usage.cg.cpu_usage_ns = node_ns;
        }

        if (n > 0 && !(pods = calloc(n, sizeof *pods)))
                failed = true;
        for (size_t i = 0; !failed && i < n; i++) {
                PodWorker *w = workers[i];
                const PodState *st = pod_worker_state(w);
                const ManifestObject *o = pod_worker_object(w);
                if (!worker_listed(w))
                        continue;
                PodSummary *p = &pods[n_pods++];
                *p = (PodSummary){ .name = o->name, .namespace = o->namespace, .uid = o->uid };
                _cleanup_free_ char *pod_cg = pod_worker_cgroup_path(w);
                size_t max = st->n_init + st->n_app;
                if (!pod_cg || (max > 0 && !(p->containers = calloc(max, sizeof *p->containers)))) {
                        failed = true;
                        break;
                }
                resource_usage_read(s, pod_cg, realtime, &p->usage);
                for (size_t k = 0; k < max; k++) {
                        const ContainerState *c = listed_container(st, k);
                        if (!c)
                                continue;
                        _cleanup_free_ char *cg = container_cgroup(w, c);
                        if (!cg) {
                                failed = true;
                                break;
                        }
                        ContainerSummary *cs = &p->containers[p->n_containers++];
                        *cs = (ContainerSummary){ .name = c->spec->name,
                                                  .start_time = c->started_at };
                        resource_usage_read(s, cg, realtime, &cs->usage);
                }
        }
        if (failed) {
                /* Out of memory: no pods rather than some, and the error said. */
                pod_summaries_free(pods, n_pods);
                pods = NULL;
                n_pods = 0;
                node.usage.time = 0;
        }
        resource_metrics_set(rm, &node, pods, n_pods);
        pod_summaries_free(pods, n_pods);
}
