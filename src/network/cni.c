/* The CNI runner: a FIFO of operations (op-queue.h), at most max_parallel
 * running. By default that is one per CPU: the reference plugins serialise
 * on the xtables lock and host-local's lease lock, so more at once only
 * share one lock and one CPU, and each plugin's timeout would count its wait
 * behind the others instead of its own work. Each op runs its chain one
 * plugin child at a time (child.h: stdin from a memfd, so writing a config of
 * any size never blocks the loop; stdout and stderr in separate capped
 * buffers; SIGKILL of the plugin's group on timeout). An op always starts
 * from the queue's defer source, so a callback never runs inside the call
 * that queued it. The cache file (see cni.h) is what makes DEL possible
 * after an agent restart. */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "child-env.h"
#include "child.h"
#include "op-queue.h"
#include "cni-internal.h"
#include "fileio.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

#define DEFAULT_PLUGIN_TIMEOUT (120 * USEC_PER_SEC)
#define MIN_DEFAULT_MAX_PARALLEL 2U /* a hung plugin does not stop all the others */
#define NSFS_MAGIC_ 0x6e736673
#define CACHE_KIND "nanoletCniCacheV1"

struct CniRunner {
        Event *event;
        char *bin_dirs;
        char *cache_dir;
        usec_t plugin_timeout;
        unsigned max_parallel;
        OpQueue *queue;
        MetricFamily *operations, *operation_errors, *operation_duration; /* {operation} */
};

struct CniOp {
        OpQueueItem item; /* first: the queue's hooks cast back */
        CniRunner *runner;
        CniCommand cmd;      /* what the caller asked for */
        CniCommand phase;    /* what the chain does now: ADD, DEL (also cleanup), CHECK */
        usec_t requested_at; /* CLOCK_MONOTONIC, for the duration metric */
        CniConfig *config;
        char *container_id, *netns, *ifname, *args;
        json_t *port_mappings;
        json_t *prev_result;  /* ADD: the chain's result so far; DEL/CHECK: cached */
        CniResult *result;    /* ADD: the last plugin's parsed result */
        size_t index;         /* ADD/CHECK: next plugin; DEL: one past the next */
        size_t n_add_spawned; /* ADD: plugins started so far (the cleanup's scope) */
        Child *exec;
        const char *exec_type;
        int r;
        CniError err;
        unsigned n_del_failures;
        cni_done_t done;
        void *userdata;
};

static const char *const command_table[_CNI_COMMAND_MAX] = {
        [CNI_COMMAND_ADD] = "ADD",
        [CNI_COMMAND_DEL] = "DEL",
        [CNI_COMMAND_CHECK] = "CHECK",
};

const char *cni_command_to_string(CniCommand c) {
        return c >= 0 && c < _CNI_COMMAND_MAX ? command_table[c] : NULL;
}

static const char *const protocol_table[_CNI_PROTOCOL_MAX] = {
        [CNI_PROTOCOL_TCP] = "tcp",
        [CNI_PROTOCOL_UDP] = "udp",
        [CNI_PROTOCOL_SCTP] = "sctp",
};

const char *cni_protocol_to_string(CniProtocol p) {
        return p >= 0 && p < _CNI_PROTOCOL_MAX ? protocol_table[p] : NULL;
}

CniProtocol cni_protocol_from_string(const char *s) {
        for (int i = 0; s && i < _CNI_PROTOCOL_MAX; i++)
                if (strcasecmp(s, protocol_table[i]) == 0)
                        return (CniProtocol)i;
        return _CNI_PROTOCOL_INVALID;
}

static bool ifname_valid(const char *s) {
        if (isempty(s) || strlen(s) > 15 || streq(s, ".") || streq(s, ".."))
                return false;
        for (const char *p = s; *p; p++)
                if (*p == '/' || *p == ':' || isspace((unsigned char)*p))
                        return false;
        return true;
}

/* --- stdin, environment ------------------------------------------------ */

json_t *cni_port_mappings_to_json(const CniPortMapping *m, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; a && i < n; i++) {
                json_t *o = json_pack("{s:i, s:i, s:s, s:s}", "hostPort", (int)m[i].host_port,
                                      "containerPort", (int)m[i].container_port, "protocol",
                                      strempty(cni_protocol_to_string(m[i].protocol)), "hostIP",
                                      strempty(m[i].host_ip));
                if (!o || json_array_append_new(a, o) < 0) {
                        json_decref(a);
                        return NULL;
                }
        }
        return a;
}

int cni_build_stdin(const CniConfig *c, size_t plugin, json_t *prev_result, json_t *port_mappings,
                    char **ret, size_t *ret_size) {
        json_t *p = cni_config_plugin(c, plugin);
        if (!p)
                return -EINVAL;
        _cleanup_json_ json_t *o = json_deep_copy(p);
        if (!o)
                return -ENOMEM;
        if (json_object_set_new(o, "name", json_string(c->name)) < 0 ||
            json_object_set_new(o, "cniVersion", json_string(c->version)) < 0)
                return -ENOMEM;
        if (prev_result && json_object_set(o, "prevResult", prev_result) < 0)
                return -ENOMEM;

        /* runtimeConfig only for capabilities the plugin declares (libcni). */
        json_t *caps = json_object_get(p, "capabilities");
        if (json_is_true(json_object_get(caps, "portMappings")) && port_mappings &&
            json_array_size(port_mappings) > 0) {
                json_t *rc = json_object_get(o, "runtimeConfig");
                if (!json_is_object(rc)) {
                        rc = json_object();
                        if (!rc || json_object_set_new(o, "runtimeConfig", rc) < 0)
                                return -ENOMEM;
                }
                if (json_object_set(rc, "portMappings", port_mappings) < 0)
                        return -ENOMEM;
        }
        char *s = json_dumps(o, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        *ret_size = strlen(s);
        *ret = s;
        return 0;
}

static bool arg_value_valid(const char *v) {
        return !strpbrk(v, ";=") && strlen(v) <= 253;
}

int cni_build_args(const char *ns, const char *name, const char *infra_id, const char *uid,
                   char **ret) {
        const char *keys[] = { "K8S_POD_NAMESPACE", "K8S_POD_NAME", "K8S_POD_INFRA_CONTAINER_ID",
                               "K8S_POD_UID" };
        const char *values[] = { ns, name, infra_id, uid };
        _cleanup_free_ char *s = strdup("IgnoreUnknown=1");
        size_t len = s ? strlen(s) : 0, cap = len + 1;

        if (!s)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                if (isempty(values[i]))
                        continue;
                if (!arg_value_valid(values[i]))
                        return -EINVAL;
                if (strbuf_append(&s, &len, &cap, ";", 1) < 0 ||
                    strbuf_append(&s, &len, &cap, keys[i], strlen(keys[i])) < 0 ||
                    strbuf_append(&s, &len, &cap, "=", 1) < 0 ||
                    strbuf_append(&s, &len, &cap, values[i], strlen(values[i])) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int cni_build_env(CniCommand cmd, const char *container_id, const char *netns, const char *ifname,
                  const char *args, const char *path, char ***ret) {
        _cleanup_strv_free_ char **extra = NULL;

        const char *kv[][2] = {
                { "CNI_COMMAND", cni_command_to_string(cmd) },
                { "CNI_CONTAINERID", container_id },
                { "CNI_NETNS", netns },
                { "CNI_IFNAME", ifname },
                { "CNI_ARGS", args },
                { "CNI_PATH", path },
        };
        for (size_t i = 0; i < ELEMENTSOF(kv); i++) {
                char *s = strprintf("%s=%s", kv[i][0], strempty(kv[i][1]));
                if (!s || strv_consume(&extra, s) < 0) {
                        free(s);
                        return -ENOMEM;
                }
        }
        return child_env_new(extra, ret);
}

int cni_find_plugin(const char *bin_dirs, const char *type, char **ret_path) {
        if (isempty(type) || strchr(type, '/') || streq(type, ".") || streq(type, ".."))
                return -EINVAL;
        for (const char *p = bin_dirs; p && *p;) {
                size_t n = strcspn(p, ":");
                if (n > 0) {
                        _cleanup_free_ char *path = strprintf("%.*s/%s", (int)n, p, type);
                        struct stat st;
                        if (!path)
                                return -ENOMEM;
                        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                            access(path, X_OK) == 0) {
                                *ret_path = TAKE_PTR(path);
                                return 0;
                        }
                }
                p += n;
                if (*p == ':')
                        p++;
        }
        return -ENOENT;
}

/* --- cache ------------------------------------------------------------- */

static char *cache_path(CniRunner *runner, const char *id) {
        return strprintf("%s/%s.json", runner->cache_dir, id);
}

static int cache_write(CniOp *op) {
        _cleanup_free_ char *path = cache_path(op->runner, op->container_id);
        if (!path)
                return -ENOMEM;
        _cleanup_json_ json_t *o =
                json_pack("{s:s, s:s, s:s, s:s, s:O, s:O?}", "kind", CACHE_KIND, "containerId",
                          op->container_id, "ifName", op->ifname, "networkName", op->config->name,
                          "config", op->config->list, "portMappings", op->port_mappings);
        if (!o)
                return -ENOMEM;
        if (op->result) {
                _cleanup_json_ json_t *res = json_loads(op->result->json, 0, NULL);
                if (!res || json_object_set(o, "result", res) < 0)
                        return -ENOMEM;
        }
        _cleanup_free_ char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
        if (!s)
                return -ENOMEM;
        int r = mkdir_p(op->runner->cache_dir, 0700);
        if (r < 0)
                return r;
        return write_file_atomic(path, s, strlen(s), 0600);
}

/* 0 with the cached document, -ENOENT, or another negative errno with err
 * saying what is wrong with the file (a symlink, never followed, counts as
 * corrupt: the cache is ours alone). */
static int cache_read(CniRunner *runner, const char *id, json_t **ret, Error *err) {
        _cleanup_free_ char *path = cache_path(runner, id);
        json_t *o = NULL;
        if (!path)
                return -ENOMEM;
        int r = json_state_load_at(AT_FDCWD, path, CNI_CACHE_MAX, &o, err);
        if (r < 0)
                return r;
        if (!json_is_object(json_object_get(o, "config"))) {
                json_decref(o);
                return error_set(err, -EBADMSG, "\"%s\" has no \"config\" object", path);
        }
        *ret = o;
        return 0;
}

static int cache_remove(CniRunner *runner, const char *id) {
        _cleanup_free_ char *path = cache_path(runner, id);
        if (!path)
                return -ENOMEM;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int cni_runner_cached_result(CniRunner *runner, const char *container_id, CniResult **ret) {
        _cleanup_json_ json_t *o = NULL;
        if (!container_id_valid(container_id))
                return -EINVAL;
        int r = cache_read(runner, container_id, &o, NULL);
        if (r < 0)
                return r;
        json_t *res = json_object_get(o, "result");
        if (!res) {
                *ret = NULL;
                return 0;
        }
        _cleanup_free_ char *s = json_dumps(res, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        return cni_result_parse(s, strlen(s), ret, NULL);
}

/* The container ID of a cache entry's name ("<id>.json"): 1 with it in
 * *ret, 0 for a name that is not one, -ENOMEM. */
static int cache_entry_id(const char *name, char **ret) {
        const char *dot = strrchr(name, '.');
        if (!dot || !streq(dot, ".json"))
                return 0;
        _cleanup_free_ char *id = strndup_safe(name, dot - name);
        if (!id)
                return -ENOMEM;
        if (!container_id_valid(id))
                return 0;
        *ret = TAKE_PTR(id);
        return 1;
}

int cni_runner_list_cached(CniRunner *runner, char ***ret) {
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_closedir_ DIR *d = opendir(runner->cache_dir);
        if (!d && errno != ENOENT)
                return -errno;
        for (struct dirent *de; d && (de = readdir(d));) {
                char *id = NULL;
                int r = cache_entry_id(de->d_name, &id);
                if (r < 0 || (r > 0 && strv_consume(&ids, id) < 0))
                        return -ENOMEM;
        }
        if (!ids && !(ids = calloc(1, sizeof(char *))))
                return -ENOMEM;
        strv_sort(ids);
        *ret = TAKE_PTR(ids);
        return 0;
}

/* One entry of an old cache directory: a regular <id>.json is copied (the
 * old directory is on the run-dir's tmpfs, the new one on disk, so no
 * rename) unless the new directory has one at least as recent (the old one
 * is newer only after a downgrade and an upgrade again); either way the old
 * file goes. Anything else with a cache file's name is removed unread. 1
 * when moved, 0 when dropped, or a negative errno (the old file kept for
 * the next start). */
static int cache_migrate_one(int from_fd, const char *from_dir, const char *name,
                             const char *to_dir) {
        _cleanup_free_ char *data = NULL, *dst = NULL;
        size_t size = 0;
        bool moved = false;
        struct stat st, dst_st;
        int r;

        if (fstatat(from_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        dst = strprintf("%s/%s", to_dir, name);
        if (!dst)
                return -ENOMEM;
        if (!S_ISREG(st.st_mode))
                log_warning("CNI cache %s/%s is not a regular file, removed unread.", from_dir,
                            name);
        else if (lstat(dst, &dst_st) == 0 && (dst_st.st_mtim.tv_sec > st.st_mtim.tv_sec ||
                                              (dst_st.st_mtim.tv_sec == st.st_mtim.tv_sec &&
                                               dst_st.st_mtim.tv_nsec >= st.st_mtim.tv_nsec)))
                log_debug("cni: %s/%s is older than %s, removed.", from_dir, name, dst);
        else if ((r = read_full_file_at(from_fd, name, CNI_CACHE_MAX, &data, &size)) == -EFBIG)
                log_warning("CNI cache %s/%s is larger than %u bytes, removed unread.", from_dir,
                            name, CNI_CACHE_MAX);
        else if (r < 0)
                return r;
        else if ((r = write_file_atomic(dst, data, size, 0600)) < 0)
                return r;
        else
                moved = true;
        if (unlinkat(from_fd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
                return -errno;
        return moved;
}

int cni_cache_migrate(const char *from_dir, const char *to_dir, Error *err) {
        struct stat st;
        unsigned moved = 0;
        int r, first = 0;

        if (isempty(from_dir) || isempty(to_dir))
                return -EINVAL;
        if (lstat(from_dir, &st) < 0)
                return errno == ENOENT ? 0
                                       : error_set(err, -errno, "Cannot read \"%s\": %m", from_dir);
        if (!S_ISDIR(st.st_mode)) {
                /* Never followed: the agent made a directory there. */
                if (unlink(from_dir) < 0 && errno != ENOENT)
                        return error_set(err, -errno, "Cannot remove \"%s\": %m", from_dir);
                return error_set(err, -ENOTDIR,
                                 "\"%s\" was not a directory (not followed, removed): no CNI "
                                 "cache taken from it",
                                 from_dir);
        }
        _cleanup_close_ int fd = open(from_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return error_set(err, -errno, "Cannot open \"%s\": %m", from_dir);
        r = mkdir_p_exact(to_dir, 0700);
        if (r < 0) {
                errno = -r;
                return error_set(err, r, "Cannot create \"%s\": %m", to_dir);
        }
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d)
                return error_set(err, -errno, "Cannot read \"%s\": %m", from_dir);
        int dfd = TAKE_FD(fd);
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_free_ char *id = NULL;
                r = cache_entry_id(de->d_name, &id);
                if (r < 0)
                        return r;
                if (r == 0)
                        continue;
                r = cache_migrate_one(dfd, from_dir, de->d_name, to_dir);
                if (r < 0 && first == 0) {
                        errno = -r; /* for %m */
                        first = error_set(err, r,
                                          "Cannot move the CNI cache \"%s/%s\" to \"%s\": %m",
                                          from_dir, de->d_name, to_dir);
                }
                if (r > 0)
                        moved++;
        }
        (void)remove_stale_temp_files(from_dir);
        (void)rmdir(from_dir); /* not empty: someone else's files, left alone */
        return first < 0 ? first : (int)moved;
}

/* --- runner ------------------------------------------------------------ */

static void op_queue_start(OpQueueItem *item);
static void op_queue_free_op(OpQueueItem *item);

static const OpQueueOps cni_queue_ops = {
        .start = op_queue_start,
        .free = op_queue_free_op, /* no stop: a cancelled op finishes its chain, silently */
};

static unsigned default_max_parallel(void) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > (long)MIN_DEFAULT_MAX_PARALLEL ? (unsigned)n : MIN_DEFAULT_MAX_PARALLEL;
}

int cni_runner_new(Event *e, const CniRunnerOptions *o, CniRunner **ret) {
        if (!e || !o || isempty(o->cache_dir) || !ret)
                return -EINVAL;
        CniRunner *runner = calloc(1, sizeof(*runner));
        if (!runner)
                return -ENOMEM;
        runner->event = e;
        runner->bin_dirs = strdup(isempty(o->bin_dirs) ? CNI_DEFAULT_BIN_DIRS : o->bin_dirs);
        runner->cache_dir = strdup(o->cache_dir);
        runner->plugin_timeout = o->plugin_timeout > 0 ? o->plugin_timeout : DEFAULT_PLUGIN_TIMEOUT;
        runner->max_parallel = o->max_parallel > 0 ? o->max_parallel : default_max_parallel();
        static const char *const labels[] = { "operation", NULL };
        int r = -ENOMEM;
        if (!runner->bin_dirs || !runner->cache_dir ||
            (r = metrics_register(o->metrics, &runner->operations, METRIC_COUNTER,
                                  "nanolet_cni_operations_total",
                                  "CNI operations (ADD, DEL, CHECK) of whole plugin chains.",
                                  labels, NULL, 0)) < 0 ||
            (r = metrics_register(o->metrics, &runner->operation_errors, METRIC_COUNTER,
                                  "nanolet_cni_operations_errors_total",
                                  "CNI operations that failed.", labels, NULL, 0)) < 0 ||
            (r = metrics_register(o->metrics, &runner->operation_duration, METRIC_HISTOGRAM,
                                  "nanolet_cni_operation_duration_seconds",
                                  "Duration in seconds of CNI operations, queueing included.",
                                  labels, metrics_buckets_default,
                                  sizeof metrics_buckets_default / sizeof(double))) < 0 ||
            (r = op_queue_new(e, runner->max_parallel, &cni_queue_ops, "cni-kick",
                              &runner->queue)) < 0) {
                cni_runner_free(runner);
                return r;
        }
        *ret = runner;
        return 0;
}

static CniOp *op_free(CniOp *op) {
        if (!op)
                return NULL;
        op->exec = child_free(op->exec);
        cni_config_unref(op->config);
        free(op->container_id);
        free(op->netns);
        free(op->ifname);
        free(op->args);
        json_decref(op->port_mappings);
        json_decref(op->prev_result);
        cni_result_free(op->result);
        cni_error_done(&op->err);
        free(op);
        return NULL;
}

static void op_queue_free_op(OpQueueItem *item) {
        op_free((CniOp *)item);
}

CniRunner *cni_runner_free(CniRunner *runner) {
        OpQueueItem *item;

        if (!runner)
                return NULL;
        /* A running plugin's group is killed; the loop reaps it. */
        while ((item = op_queue_detach_running(runner->queue)))
                op_free((CniOp *)item);
        runner->queue = op_queue_free(runner->queue); /* frees the waiting ops */
        free(runner->bin_dirs);
        free(runner->cache_dir);
        free(runner);
        return NULL;
}

static void op_complete(CniOp *op) {
        CniRunner *runner = op->runner;
        CniError err = op->err;
        CniResult *result = op->cmd == CNI_COMMAND_ADD && op->r >= 0 ? TAKE_PTR(op->result) : NULL;
        int r = op->r;
        bool cancelled = op_queue_item_cancelled(&op->item);
        cni_done_t done = op->done;
        void *userdata = op->userdata;

        op->err = (CniError){};
        const char *const labels[] = { cni_command_to_string(op->cmd), NULL };
        metric_inc(runner->operations, labels);
        if (r < 0)
                metric_inc(runner->operation_errors, labels);
        metric_observe(runner->operation_duration, labels,
                       (double)(now_usec(CLOCK_MONOTONIC) - op->requested_at) / USEC_PER_SEC);
        log_debug("cni: %s for %s done: %d%s%s", cni_command_to_string(op->cmd), op->container_id,
                  r, r < 0 ? ": " : "", r < 0 ? err.base.message : "");
        op_queue_complete(&op->item); /* frees op */

        if (r < 0 && !err.base.message[0])
                (void)cni_error_set(&err, r, NULL, "%s", strerror(-r));
        if (!cancelled && done)
                done(runner, r, result, &err, userdata); /* may free runner */
        else
                cni_result_free(result);
        cni_error_done(&err);
}

/* Records a failure; the first one wins. */
static void op_fail(CniOp *op, CniError *e) {
        if (op->phase == CNI_COMMAND_DEL)
                op->n_del_failures++;
        if (op->r < 0) {
                log_debug("cni: %s for %s: also: %s", cni_command_to_string(op->phase),
                          op->container_id, e->base.message);
                cni_error_done(e);
                return;
        }
        op->r = e->base.error < 0 ? e->base.error : -EIO;
        op->err = *e;
        *e = (CniError){};
}

static void op_fail_msg(CniOp *op, int r, const char *plugin, const char *fmt, ...) _printf_(4, 5);
static void op_fail_msg(CniOp *op, int r, const char *plugin, const char *fmt, ...) {
        CniError e = {};
        va_list ap;
        va_start(ap, fmt);
        (void)cni_error_setv(&e, r, plugin, fmt, ap);
        va_end(ap);
        op_fail(op, &e);
}

static void op_step(CniOp *op);

/* After a failed ADD the whole chain is DELed (as CRI-O does), no prevResult. */
static void op_start_cleanup(CniOp *op) {
        op->phase = CNI_COMMAND_DEL;
        op->index = cni_config_n_plugins(op->config);
        json_decref(op->prev_result);
        op->prev_result = NULL;
}

/* r: 0 (status valid), -ETIMEDOUT, or -ECHILD (reaped by someone else). */
static int plugin_exit_status(const Child *x, int *ret_status) {
        int code, status;

        *ret_status = 0;
        if (child_timed_out(x))
                return -ETIMEDOUT;
        child_get_status(x, &code, &status);
        if (code == CLD_EXITED)
                *ret_status = status;
        else if (code == CLD_KILLED || code == CLD_DUMPED)
                *ret_status = 128 + status;
        else
                return -ECHILD;
        return 0;
}

static void on_plugin_done(Child *x, void *userdata) {
        CniOp *op = userdata;
        const char *type = op->exec_type;
        size_t out_size, err_size;
        const char *out = child_stdout(x, &out_size);
        const char *errtext = child_stderr(x, &err_size);
        CniError e = {};
        int status;
        int r = plugin_exit_status(x, &status);

        if (r == -ETIMEDOUT)
                op_fail_msg(op, r, type, "%s timed out after %llu s, killed",
                            cni_command_to_string(op->phase),
                            (unsigned long long)(op->runner->plugin_timeout / USEC_PER_SEC));
        else if (r < 0)
                op_fail_msg(op, r, type, "%s: %s", cni_command_to_string(op->phase), strerror(-r));
        else if (status != 0) {
                if (cni_error_parse(out, out_size, &e) >= 0) {
                        free(e.plugin);
                        e.plugin = strdup(type);
                        op_fail(op, &e);
                } else {
                        /* No error object: the last line of stderr says most. */
                        _cleanup_free_ char *text = strndup_safe(errtext, MIN(err_size, 4096U));
                        size_t n = text ? strlen(text) : 0;
                        while (n > 0 && isspace((unsigned char)text[n - 1]))
                                text[--n] = 0;
                        op_fail_msg(op, -EIO, type, "%s exited with status %d%s%s",
                                    cni_command_to_string(op->phase), status, n > 0 ? ": " : "",
                                    n > 0 ? text : "");
                }
        } else if (op->phase == CNI_COMMAND_ADD) {
                CniResult *res = NULL;
                if (child_stdout_truncated(x))
                        op_fail_msg(op, -EBADMSG, type, "result larger than %u bytes",
                                    CNI_OUTPUT_MAX);
                else if (cni_result_parse(out, out_size, &res, &e) < 0) {
                        free(e.plugin);
                        e.plugin = strdup(type);
                        op_fail(op, &e);
                } else {
                        json_t *j = json_loads(res->json, 0, NULL);
                        if (!j) {
                                cni_result_free(res);
                                op_fail_msg(op, -ENOMEM, type, "out of memory");
                        } else {
                                json_decref(op->prev_result);
                                op->prev_result = j;
                                cni_result_free(op->result);
                                op->result = res;
                        }
                }
        }
        op->exec = child_free(x);
        op->exec_type = NULL;
        if (op->phase == CNI_COMMAND_ADD) {
                if (op->r < 0)
                        op_start_cleanup(op);
                else
                        op->index++;
        } else if (op->phase == CNI_COMMAND_DEL)
                op->index--;
        else if (op->r >= 0)
                op->index++;
        else
                op->index = cni_config_n_plugins(op->config); /* CHECK stops at a failure */
        op_step(op);
}

/* Starts the plugin for the current position; false when it could not be
 * started (the failure is recorded). */
static bool op_spawn(CniOp *op, size_t i) {
        const char *type = cni_config_plugin_type(op->config, i);
        _cleanup_free_ char *path = NULL, *input = NULL;
        _cleanup_strv_free_ char **env = NULL;
        size_t input_size = 0;
        int r;

        r = cni_find_plugin(op->runner->bin_dirs, type, &path);
        if (r < 0 && op->cmd == CNI_COMMAND_ADD && op->phase == CNI_COMMAND_DEL &&
            i >= op->n_add_spawned) {
                /* Cleaning up after a failed ADD: this plugin never ran in
                 * it (its binary is what is missing, or the chain stopped
                 * before it), so it has nothing to undo; counting it as a
                 * failed DEL would keep a cache that no DEL ever removes. */
                log_debug("cni: DEL %s for %s skipped: never ADDed, binary not found.", type,
                          op->container_id);
                return false;
        }
        if (r < 0) {
                /* The type comes from a conflist: name it, the fix is there
                 * or in --cni-bin-dir. */
                const char *origin = cni_config_origin(op->config);
                op_fail_msg(op, r, type, "plugin binary \"%s\" (from %s%s%s) not found in %s", type,
                            origin ? "\"" : "", origin ?: "the built-in default",
                            origin ? "\"" : "", op->runner->bin_dirs);
                return false;
        }
        /* DEL gets prevResult from 0.4.0 on; 0.3.x plugins do not expect it. */
        json_t *prev = op->phase == CNI_COMMAND_DEL && !cni_version_has_check(op->config->version)
                               ? NULL
                               : op->prev_result;
        r = cni_build_stdin(op->config, i, prev, op->port_mappings, &input, &input_size);
        if (r >= 0)
                r = cni_build_env(op->phase, op->container_id, op->netns, op->ifname, op->args,
                                  op->runner->bin_dirs, &env);
        char *argv[] = { path, NULL };
        ChildOptions co = {
                .argv = argv,
                .envp = env,
                .input = input ? input : "",
                .input_size = input_size,
                .capture = CHILD_CAPTURE_SEPARATE,
                .stdout_max = CNI_OUTPUT_MAX,
                .stderr_max = CNI_STDERR_MAX,
                .timeout = op->runner->plugin_timeout,
        };
        if (r >= 0)
                r = child_spawn(op->runner->event, &co, on_plugin_done, op, &op->exec);
        if (r < 0) {
                op_fail_msg(op, r, type, "cannot run %s: %s", path, strerror(-r));
                return false;
        }
        op->exec_type = type;
        if (op->phase == CNI_COMMAND_ADD)
                op->n_add_spawned = i + 1;
        log_debug("cni: %s %s for %s.", cni_command_to_string(op->phase), type, op->container_id);
        return true;
}

static void op_step(CniOp *op) {
        size_t n = cni_config_n_plugins(op->config);
        int r;

        for (;;) {
                if (op->phase == CNI_COMMAND_DEL) {
                        if (op->index == 0)
                                break;
                        if (op_spawn(op, op->index - 1))
                                return;
                        op->index--; /* DEL goes on: leave as little as possible behind */
                } else {
                        if (op->index >= n)
                                break;
                        if (op_spawn(op, op->index))
                                return;
                        if (op->phase == CNI_COMMAND_ADD)
                                op_start_cleanup(op);
                        else
                                op->index = n;
                }
        }

        /* The chain is through. */
        if (op->cmd == CNI_COMMAND_ADD && op->r >= 0) {
                r = cache_write(op);
                if (r < 0) {
                        op_fail_msg(op, r, NULL, "cannot write CNI cache for %s: %s",
                                    op->container_id, strerror(-r));
                        op_start_cleanup(op);
                        op_step(op);
                        return;
                }
        } else if (op->phase == CNI_COMMAND_DEL && (op->r >= 0 || op->cmd == CNI_COMMAND_ADD)) {
                /* DEL (or the cleanup after a failed ADD) went through:
                 * nothing left to delete. A failed cleanup keeps the cache. */
                bool cleaned = op->n_del_failures == 0;
                if (cleaned && (r = cache_remove(op->runner, op->container_id)) < 0)
                        log_debug_errno(r, "cni: cannot remove cache of %s: %m", op->container_id);
        }
        op_complete(op);
}

/* Returns > 0 when the op is already complete (nothing to run). */
static int op_begin(CniOp *op) {
        _cleanup_json_ json_t *cache = NULL;
        int r;

        if (op->cmd == CNI_COMMAND_ADD) {
                /* Before the first plugin: a crash mid-ADD still leaves what
                 * a DEL needs. */
                r = cache_write(op);
                if (r < 0) {
                        op_fail_msg(op, r, NULL, "cannot write CNI cache for %s: %s",
                                    op->container_id, strerror(-r));
                        return 1;
                }
                return 0;
        }

        Error cerr = {};
        r = cache_read(op->runner, op->container_id, &cache, &cerr);
        if (r < 0 && op->cmd == CNI_COMMAND_CHECK) {
                /* The caller knows the ADD happened. Without a cache, a DEL
                 * owed after the pod went while the agent was down would
                 * be forgotten (the orphan sweep finds sandboxes by it). */
                bool rewritten = op->config && cache_write(op) >= 0;
                op_fail_msg(op, r, NULL, "%s%s", cerr.message,
                            rewritten ? "; written again from the current configuration, "
                                        "without the ADD's result"
                                      : "");
                return 1;
        }
        if (r < 0 && r != -ENOENT) {
                /* What the DEL was ADDed with is lost: the configuration
                 * the caller passed is the best left. */
                log_warning("CNI cache of %s unusable, DEL with the current configuration: %s",
                            op->container_id, cerr.message);
        }
        if (cache) {
                CniConfig *cached = NULL;
                CniError e = {};
                r = cni_config_new_from_json(json_object_get(cache, "config"), "CNI cache", &cached,
                                             &e);
                if (r < 0)
                        log_debug("cni: ignoring cached config of %s: %s", op->container_id,
                                  e.base.message);
                else {
                        cni_config_unref(op->config);
                        op->config = cached;
                }
                cni_error_done(&e);
                json_t *res = json_object_get(cache, "result");
                if (json_is_object(res))
                        op->prev_result = json_incref(res);
                json_t *pm = json_object_get(cache, "portMappings");
                if (json_is_array(pm) && json_array_size(op->port_mappings) == 0) {
                        json_decref(op->port_mappings);
                        op->port_mappings = json_incref(pm);
                }
        }

        if (op->cmd == CNI_COMMAND_DEL) {
                if (!op->config)
                        return 1; /* never ADDed, nothing to delete */
                /* A pin whose bind mount is gone (reboot, crash) is an empty
                 * file: tell the plugins there is no netns rather than
                 * making them fail on it. */
                struct statfs sfs;
                if (op->netns &&
                    (statfs(op->netns, &sfs) < 0 || (unsigned long)sfs.f_type != NSFS_MAGIC_)) {
                        free(op->netns);
                        op->netns = NULL;
                }
                op->index = cni_config_n_plugins(op->config);
                return 0;
        }

        /* CHECK */
        if (!cni_version_has_check(op->config->version) || op->config->disable_check)
                return 1;
        if (!op->prev_result) {
                op_fail_msg(op, -ENOENT, NULL,
                            "no cached result for %s: the ADD did not "
                            "complete, or its cache was lost",
                            op->container_id);
                return 1;
        }
        return 0;
}

static void op_queue_start(OpQueueItem *item) {
        CniOp *op = (CniOp *)item;

        /* Either may complete the op and call back, which may free the
         * runner: the queue stops touching it then. */
        if (op_begin(op) > 0)
                op_complete(op);
        else
                op_step(op);
}

static int op_new(CniRunner *runner, CniCommand cmd, CniConfig *config, const CniRequest *req,
                  cni_done_t done, void *userdata, CniOp **ret_op) {
        if (!runner || !req || !container_id_valid(req->container_id))
                return -EINVAL;
        const char *ifname = req->ifname ? req->ifname : CNI_DEFAULT_IFNAME;
        if (!ifname_valid(ifname))
                return -EINVAL;
        if (cmd != CNI_COMMAND_DEL && (isempty(req->netns) || req->netns[0] != '/'))
                return -EINVAL;
        if (cmd == CNI_COMMAND_ADD && !config)
                return -EINVAL;
        for (size_t i = 0; i < req->n_port_mappings; i++) {
                const CniPortMapping *m = &req->port_mappings[i];
                unsigned char buf[16];
                if (m->host_port == 0 || m->container_port == 0 ||
                    !cni_protocol_to_string(m->protocol))
                        return -EINVAL;
                if (!isempty(m->host_ip) && inet_pton(AF_INET, m->host_ip, buf) != 1 &&
                    inet_pton(AF_INET6, m->host_ip, buf) != 1)
                        return -EINVAL;
        }

        CniOp *op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        op->runner = runner;
        op->requested_at = now_usec(CLOCK_MONOTONIC);
        op->cmd = op->phase = cmd;
        op->config = cni_config_ref(config);
        op->done = done;
        op->userdata = userdata;
        op->container_id = strdup(req->container_id);
        op->ifname = strdup(ifname);
        op->netns = isempty(req->netns) ? NULL : strdup(req->netns);
        int r = cni_build_args(req->pod_namespace, req->pod_name, req->container_id, req->pod_uid,
                               &op->args);
        if (r >= 0 && req->n_port_mappings > 0 &&
            !(op->port_mappings =
                      cni_port_mappings_to_json(req->port_mappings, req->n_port_mappings)))
                r = -ENOMEM;
        if (r >= 0 && (!op->container_id || !op->ifname || (!isempty(req->netns) && !op->netns)))
                r = -ENOMEM;
        if (r < 0) {
                op_free(op);
                return r;
        }

        op_queue_add(runner->queue, &op->item);
        if (ret_op)
                *ret_op = op;
        return 0;
}

int cni_add(CniRunner *runner, CniConfig *config, const CniRequest *req, cni_done_t done,
            void *userdata, CniOp **ret_op) {
        return op_new(runner, CNI_COMMAND_ADD, config, req, done, userdata, ret_op);
}

int cni_del(CniRunner *runner, CniConfig *config, const CniRequest *req, cni_done_t done,
            void *userdata, CniOp **ret_op) {
        return op_new(runner, CNI_COMMAND_DEL, config, req, done, userdata, ret_op);
}

int cni_check(CniRunner *runner, CniConfig *config, const CniRequest *req, cni_done_t done,
              void *userdata, CniOp **ret_op) {
        return op_new(runner, CNI_COMMAND_CHECK, config, req, done, userdata, ret_op);
}

void cni_op_cancel(CniOp *op) {
        if (op)
                op_queue_cancel(&op->item);
}
