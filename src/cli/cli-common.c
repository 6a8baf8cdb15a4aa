/* Shared client helpers; see cli-common.h. */
#include "cli-common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#include "fileio.h"
#include "macro.h"
#include "spawn.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

#define NSEC_PER_SEC 1000000000LL

void cli_common_init(CliCommon *c, const char *prog) {
        *c = (CliCommon){
                .prog = prog,
                .root_dir = CLI_DEFAULT_ROOT_DIR,
                .run_dir = CLI_DEFAULT_RUN_DIR,
                .pod_logs_dir = CLI_DEFAULT_POD_LOGS_DIR,
                .runtime = CLI_DEFAULT_RUNTIME,
        };
}

bool cli_common_option(CliCommon *c, int opt, const char *arg) {
        switch (opt) {
        case CLI_ARG_ROOT_DIR:
                c->root_dir = arg;
                return true;
        case CLI_ARG_RUN_DIR:
                c->run_dir = arg;
                return true;
        case CLI_ARG_POD_LOGS_DIR:
                c->pod_logs_dir = arg;
                return true;
        case CLI_ARG_RUNTIME:
                c->runtime = arg;
                c->runtime_set = true;
                return true;
        default:
                return false;
        }
}

/* ---- JSON accessors ---- */

json_t *cli_json_path(const json_t *j, ...) {
        va_list ap;
        const char *key;

        va_start(ap, j);
        while (j && (key = va_arg(ap, const char *)))
                j = json_is_object(j) ? json_object_get(j, key) : NULL;
        va_end(ap);
        return (json_t *)j;
}

const char *cli_json_str(const json_t *j, const char *key) {
        json_t *v = json_is_object(j) ? json_object_get(j, key) : NULL;
        return json_is_string(v) ? json_string_value(v) : NULL;
}

bool cli_json_flag(const json_t *j, const char *key) {
        json_t *v = json_is_object(j) ? json_object_get(j, key) : NULL;
        return json_is_true(v);
}

int64_t cli_json_time(const json_t *j, const char *key) {
        const char *s = cli_json_str(j, key);
        int64_t t;
        if (!s || timestamp_parse_rfc3339(s, strlen(s), &t) < 0)
                return 0;
        return t;
}

static json_int_t json_int(const json_t *j, const char *key) {
        json_t *v = json_is_object(j) ? json_object_get(j, key) : NULL;
        return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* ---- status files ---- */

void cli_pod_list_done(CliPodList *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n; i++) {
                json_decref(l->pods[i].json);
                free(l->pods[i].file);
        }
        free(l->pods);
        *l = (CliPodList){};
}

int cli_pod_from_json(json_t *j, CliPod *ret, const char **ret_reason) {
        const char *kind = cli_json_str(j, "kind");
        json_t *meta = cli_json_path(j, "metadata", NULL);

        if (!json_is_object(j)) {
                *ret_reason = "not a JSON object";
                return -EINVAL;
        }
        if (kind && !streq(kind, "Pod")) {
                *ret_reason = "not a v1 Pod";
                return -EINVAL;
        }
        if (isempty(cli_json_str(meta, "name")) || isempty(cli_json_str(meta, "uid"))) {
                *ret_reason = "metadata.name or metadata.uid missing";
                return -EINVAL;
        }
        if (!json_is_object(cli_json_path(j, "spec", NULL))) {
                *ret_reason = "spec missing";
                return -EINVAL;
        }
        *ret = (CliPod){
                .json = j,
                .namespace = cli_json_str(meta, "namespace") ?: "default",
                .name = cli_json_str(meta, "name"),
                .uid = cli_json_str(meta, "uid"),
                .node = cli_json_str(cli_json_path(j, "spec", NULL), "nodeName"),
        };
        return 0;
}

static int cli_pod_compare(const void *a, const void *b) {
        const CliPod *x = a, *y = b;
        int k = strcmp(x->namespace, y->namespace);
        return k != 0 ? k : strcmp(x->name, y->name);
}

static char *status_dir(const CliCommon *c) {
        return strprintf("%s/status", c->run_dir);
}

int cli_pods_load_or_report(const CliCommon *c, CliPodList *ret) {
        int r = cli_pods_load(c, ret);
        if (r < 0)
                fprintf(stderr, "%s: cannot read %s/status: %s\n", c->prog, c->run_dir,
                        strerror(-r));
        return r;
}

/* Every container ID of a status entry: the current one and the previous
 * attempt's. */
static void status_ids(const json_t *cs, const char *ids[3]) {
        ids[0] = cli_container_id_strip(cli_json_str(cs, "containerID"), NULL);
        ids[1] = cli_container_id_strip(
                cli_json_str(cli_json_path(cs, "lastState", "terminated", NULL), "containerID"),
                NULL);
        ids[2] = cli_container_id_strip(
                cli_json_str(cli_json_path(cs, "state", "terminated", NULL), "containerID"), NULL);
}

int cli_container_id_resolve(const CliPodList *l, const char *prefix, const CliPod **ret_pod,
                             const char **ret_name, json_t **ret_status, char **ret_message) {
        static const char *const lists[] = { "initContainerStatuses", "containerStatuses" };
        const char *want = cli_container_id_strip(prefix, NULL);
        size_t want_len = strlen(strempty(want)), n = 0;
        _cleanup_free_ char *matches = NULL;
        size_t len = 0, cap = 0;

        if (want_len == 0)
                return -ENOENT;
        for (size_t i = 0; i < l->n; i++)
                for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
                        json_t *status = cli_json_path(l->pods[i].json, "status", lists[k], NULL);
                        size_t j;
                        json_t *cs;
                        json_array_foreach(status, j, cs) {
                                const char *ids[3];
                                status_ids(cs, ids);
                                for (size_t x = 0; x < ELEMENTSOF(ids); x++) {
                                        if (isempty(ids[x]) || !strneq(ids[x], want, want_len))
                                                continue;
                                        /* one container's entries may repeat an ID */
                                        if ((x > 0 && ids[0] && streq(ids[x], ids[0])) ||
                                            (x == 2 && ids[1] && streq(ids[2], ids[1])))
                                                continue;
                                        if (n++ == 0) {
                                                *ret_pod = &l->pods[i];
                                                *ret_name = cli_json_str(cs, "name");
                                                *ret_status = cs;
                                        }
                                        _cleanup_free_ char *line = strprintf(
                                                "\n  %s (container \"%s\" of pod %s/%s)", ids[x],
                                                strempty(cli_json_str(cs, "name")),
                                                l->pods[i].namespace, l->pods[i].name);
                                        if (!line || strbuf_append(&matches, &len, &cap, line,
                                                                   strlen(line)) < 0)
                                                return -ENOMEM;
                                }
                        }
                }
        if (n == 0)
                return -ENOENT;
        if (n > 1) {
                if (ret_message)
                        *ret_message = strprintf("container ID prefix \"%s\" is ambiguous, it "
                                                 "matches %zu containers; give more "
                                                 "characters:%s",
                                                 want, n, matches);
                return -ENOTUNIQ;
        }
        return 0;
}

static bool is_hex(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

int cli_container_find(const CliCommon *c, const CliPodList *l, const char *pod_arg,
                       const char **container, const CliPod **ret_pod, json_t **ret_status) {
        _cleanup_free_ char *msg = NULL;
        const CliPod *pod;
        int r;

        r = cli_pod_resolve(l, pod_arg, &pod, &msg);
        if (r == -ENOENT && !*container &&
            (is_hex(pod_arg) || startswith(pod_arg, "runc://") || startswith(pod_arg, "crun://"))) {
                _cleanup_free_ char *idmsg = NULL;
                int q = cli_container_id_resolve(l, pod_arg, ret_pod, container, ret_status,
                                                 &idmsg);
                if (q == 0)
                        return 0;
                if (q != -ENOENT) {
                        fprintf(stderr, "%s: %s\n", c->prog, idmsg ? idmsg : strerror(-q));
                        return q;
                }
                /* neither a pod nor a container ID: say both */
                fprintf(stderr,
                        "%s: %s, and no container ID starts with \"%s\" (see `nanolet ps -a`)\n",
                        c->prog, msg ? msg : strerror(-r), pod_arg);
                return -ENOENT;
        }
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", c->prog, msg ? msg : strerror(-r));
                return -ENOENT;
        }
        if (!*container) {
                _cleanup_free_ char *cmsg = NULL;
                r = cli_pod_default_container(pod->json, container, &cmsg);
                if (r < 0) {
                        fprintf(stderr, "%s: %s\n", c->prog, cmsg ? cmsg : strerror(-r));
                        return r;
                }
        }
        if (cli_pod_find_container(pod->json, *container, NULL, ret_status, NULL) < 0) {
                fprintf(stderr,
                        "%s: container %s is not valid for pod %s (see `nanolet inspect %s`)\n",
                        c->prog, *container, pod->name, pod->name);
                return -ENOENT;
        }
        *ret_pod = pod;
        return 0;
}

int cli_pods_load(const CliCommon *c, CliPodList *ret) {
        _cleanup_free_ char *dir_path = status_dir(c);
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_closedir_ DIR *dir = NULL;
        size_t cap = 0;

        if (!dir_path)
                return -ENOMEM;
        dir = opendir(dir_path);
        if (!dir) {
                if (errno == ENOENT) {
                        *ret = (CliPodList){};
                        return 0;
                }
                return -errno;
        }
        for (struct dirent *de; (errno = 0, de = readdir(dir));) {
                /* Dot files are the agent's temp files of atomic writes. */
                if (de->d_name[0] == '.' || !endswith(de->d_name, ".json") ||
                    streq(de->d_name, "sources.json"))
                        continue;
                _cleanup_free_ char *path = strprintf("%s/%s", dir_path, de->d_name);
                if (!path)
                        return -ENOMEM;
                _cleanup_json_ json_t *j = NULL;
                Error err = {};
                int r = json_state_load_at(AT_FDCWD, path, CLI_STATUS_FILE_MAX, &j, &err);
                if (r == -ENOENT)
                        continue; /* removed since readdir */
                if (r < 0) {
                        fprintf(stderr, "%s: warning: skipping status file: %s\n", c->prog,
                                err.message[0] ? err.message : strerror(-r));
                        continue;
                }
                CliPod p;
                const char *reason;
                if (cli_pod_from_json(j, &p, &reason) < 0) {
                        fprintf(stderr, "%s: warning: skipping malformed status file %s: %s\n",
                                c->prog, path, reason);
                        continue;
                }
                if (l.n == cap) {
                        size_t nc = MAX(cap * 2, (size_t)16);
                        CliPod *np = reallocarray(l.pods, nc, sizeof(CliPod));
                        if (!np)
                                return -ENOMEM;
                        l.pods = np;
                        cap = nc;
                }
                p.json = TAKE_PTR(j);
                p.file = TAKE_PTR(path);
                l.pods[l.n++] = p;
        }
        if (errno != 0)
                return -errno;
        if (l.n > 0)
                qsort(l.pods, l.n, sizeof(CliPod), cli_pod_compare);
        *ret = l;
        l = (CliPodList){};
        return 0;
}

/* The array under key in a status file the agent writes; an empty array
 * when the file does not exist (yet), and a warning when it is malformed. */
static int status_array_load(const CliCommon *c, const char *path, const char *key, json_t **ret) {
        _cleanup_json_ json_t *j = NULL;
        Error err = {};

        int r = json_state_load_at(AT_FDCWD, path, CLI_STATUS_FILE_MAX, &j, &err);
        if (r == -ENOENT) {
                *ret = json_array();
                return *ret ? 0 : -ENOMEM;
        }
        if (r == -ENOMEM)
                return r;
        json_t *array = r < 0 ? NULL : cli_json_path(j, key, NULL);
        if (!json_is_array(array)) {
                fprintf(stderr, "%s: warning: ignoring %s\n", c->prog,
                        err.message[0] ? err.message : path);
                *ret = json_array();
                return *ret ? 0 : -ENOMEM;
        }
        *ret = json_incref(array);
        return 0;
}

int cli_source_errors_load(const CliCommon *c, json_t **ret) {
        _cleanup_free_ char *path = strprintf("%s/status/sources.json", c->run_dir);

        if (!path)
                return -ENOMEM;
        return status_array_load(c, path, "errors", ret);
}

/* ---- events ---- */

int cli_events_load(const CliCommon *c, const char *uid, json_t **ret) {
        _cleanup_free_ char *path = NULL;

        if (isempty(uid) || strchr(uid, '/'))
                return -EINVAL;
        path = strprintf("%s/status/events/%s.json", c->run_dir, uid);
        if (!path)
                return -ENOMEM;
        return status_array_load(c, path, "items", ret);
}

char *cli_event_format_age(char *buf, size_t size, const json_t *ev, int64_t now) {
        char last[32], first[32];
        json_t *count = json_object_get(ev, "count");
        (void)cli_format_age_since(last, sizeof last, cli_json_time(ev, "lastTimestamp"), now);
        if (json_is_integer(count) && json_integer_value(count) > 1) {
                (void)cli_format_age_since(first, sizeof first, cli_json_time(ev, "firstTimestamp"),
                                           now);
                snprintf(buf, size, "%s (x%lld over %s)", last,
                         (long long)json_integer_value(count), first);
        } else
                snprintf(buf, size, "%s", last);
        return buf;
}

int cli_events_print_describe(const json_t *items, int64_t now, FILE *f) {
        static const char *const header[] = { "Type", "Reason", "Age", "From", "Message" };
        static const char *const rule[] = { "----", "------", "----", "----", "-------" };
        _cleanup_(cli_table_done) CliTable t = {};
        size_t i;
        json_t *ev;
        int r;

        if (json_array_size(items) == 0) {
                fprintf(f, "Events:  <none>\n");
                return 0;
        }
        r = cli_table_init(&t, header, ELEMENTSOF(header));
        if (r < 0 || (r = cli_table_add_row(&t, rule)) < 0)
                return r;
        json_array_foreach(items, i, ev) {
                char age[96];
                const char *row[] = {
                        cli_json_str(ev, "type"),
                        cli_json_str(ev, "reason"),
                        cli_event_format_age(age, sizeof age, ev, now),
                        cli_json_str(cli_json_path(ev, "source", NULL), "component"),
                        cli_json_str(ev, "message"),
                };
                r = cli_table_add_row(&t, row);
                if (r < 0)
                        return r;
        }
        fprintf(f, "Events:\n");
        cli_table_print_indented(&t, "  ", f);
        return 0;
}

/* ---- POD resolution ---- */

static bool pod_name_matches_suffixed(const CliPod *p, const char *name) {
        const char *rest = startswith(p->name, name);
        if (!rest || rest[0] != '-')
                return false;
        /* With a known node name only the exact node suffix counts, so
         * "etcd" does not match "etcd-backup-node1". */
        if (p->node)
                return streq(rest + 1, p->node);
        return rest[1] != 0;
}

static char *candidates_list(const CliPodList *l, const bool *match) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        for (size_t i = 0; i < l->n; i++) {
                if (!match[i])
                        continue;
                _cleanup_free_ char *s = strprintf("%s%s/%s", len > 0 ? ", " : "",
                                                   l->pods[i].namespace, l->pods[i].name);
                if (!s || strbuf_append(&buf, &len, &cap, s, strlen(s)) < 0)
                        return NULL;
        }
        return TAKE_PTR(buf);
}

int cli_pod_resolve(const CliPodList *l, const char *query, const CliPod **ret_pod,
                    char **ret_message) {
        _cleanup_free_ char *ns = NULL;
        _cleanup_free_ bool *match = NULL;
        const char *name = query, *slash = strchr(query, '/');
        size_t n_match = 0, found = 0;

        *ret_message = NULL;
        if (slash) {
                ns = strndup(query, (size_t)(slash - query));
                if (!ns)
                        return -ENOMEM;
                name = slash + 1;
        }
        if (isempty(name) || (ns && isempty(ns))) {
                *ret_message = strprintf("invalid pod name \"%s\"", query);
                return -EINVAL;
        }
        match = calloc(MAX(l->n, (size_t)1), sizeof(bool));
        if (!match)
                return -ENOMEM;

        /* Exact names (or a UID) first, then names with the node suffix. */
        for (int pass = 0; pass < 2 && n_match == 0; pass++)
                for (size_t i = 0; i < l->n; i++) {
                        const CliPod *p = &l->pods[i];
                        if (ns && !streq(p->namespace, ns))
                                continue;
                        bool m = pass == 0 ? streq(p->name, name) || (!ns && streq(p->uid, name))
                                           : pod_name_matches_suffixed(p, name);
                        if (m) {
                                match[i] = true;
                                n_match++;
                                found = i;
                        }
                }

        if (n_match == 1) {
                *ret_pod = &l->pods[found];
                return 0;
        }
        if (n_match == 0) {
                *ret_message = strprintf("pod \"%s\" not found (`nanolet pods` lists them)", query);
                return -ENOENT;
        }
        _cleanup_free_ char *cands = candidates_list(l, match);
        *ret_message = strprintf("pod \"%s\" is ambiguous, it matches: %s (use NAMESPACE/NAME)",
                                 query, strempty(cands));
        return -ENOTUNIQ;
}

int cli_pod_find(const CliCommon *c, const CliPodList *l, const char *query,
                 const CliPod **ret_pod) {
        _cleanup_free_ char *msg = NULL;
        int r = cli_pod_resolve(l, query, ret_pod, &msg);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", c->prog, msg ? msg : strerror(-r));
        return r;
}

/* ---- kubectl's printer ---- */

static bool condition_true(const json_t *pod, const char *type) {
        json_t *conds = cli_json_path(pod, "status", "conditions", NULL);
        size_t i;
        json_t *c;
        json_array_foreach(conds, i, c) {
                const char *t = cli_json_str(c, "type"), *s = cli_json_str(c, "status");
                if (t && s && streq(t, type) && streq(s, "True"))
                        return true;
        }
        return false;
}

static json_t *find_by_name(const json_t *array, const char *name) {
        size_t i;
        json_t *e;
        if (!name)
                return NULL;
        json_array_foreach(array, i, e) {
                const char *n = cli_json_str(e, "name");
                if (n && streq(n, name))
                        return e;
        }
        return NULL;
}

static bool is_restartable_init(const json_t *pod, const char *name) {
        json_t *c = find_by_name(cli_json_path(pod, "spec", "initContainers", NULL), name);
        const char *policy = cli_json_str(c, "restartPolicy");
        return policy && streq(policy, "Always");
}

static int set_status(PodSummary *s, char *v) {
        if (!v)
                return -ENOMEM;
        free(s->status);
        s->status = v;
        return 0;
}

/* The reason for a terminated container, with prefix ("Init:" or ""). */
static char *terminated_reason(const char *prefix, const json_t *term) {
        const char *reason = cli_json_str(term, "reason");
        if (!isempty(reason))
                return strprintf("%s%s", prefix, reason);
        json_int_t sig = json_int(term, "signal");
        if (sig != 0)
                return strprintf("%sSignal:%" JSON_INTEGER_FORMAT, prefix, sig);
        return strprintf("%sExitCode:%" JSON_INTEGER_FORMAT, prefix, json_int(term, "exitCode"));
}

int cli_pod_summarize(const json_t *pod, PodSummary *ret) {
        _cleanup_(cli_pod_summary_done) PodSummary s = {};
        json_t *status = cli_json_path(pod, "status", NULL);
        json_t *spec_init = cli_json_path(pod, "spec", "initContainers", NULL);
        json_t *init_statuses = cli_json_path(status, "initContainerStatuses", NULL);
        json_t *statuses = cli_json_path(status, "containerStatuses", NULL);
        unsigned restartable_restarts = 0;
        int64_t restartable_last = 0;
        bool initializing = false;
        const char *phase = cli_json_str(status, "phase");
        const char *reason = cli_json_str(status, "reason");
        size_t i;
        json_t *e;
        int r;

        s.total = (unsigned)json_array_size(cli_json_path(pod, "spec", "containers", NULL));
        json_array_foreach(spec_init, i, e) {
                const char *p = cli_json_str(e, "restartPolicy");
                if (p && streq(p, "Always"))
                        s.total++;
        }
        r = set_status(&s, strdup(!isempty(reason) ? reason : !isempty(phase) ? phase : "Pending"));
        if (r < 0)
                return r;

        json_array_foreach(init_statuses, i, e) {
                const char *name = cli_json_str(e, "name");
                json_t *state = cli_json_path(e, "state", NULL);
                json_t *term = cli_json_path(state, "terminated", NULL);
                json_t *waiting = cli_json_path(state, "waiting", NULL);
                json_t *last_term = cli_json_path(e, "lastState", "terminated", NULL);
                bool restartable = is_restartable_init(pod, name);
                unsigned rc = (unsigned)json_int(e, "restartCount");
                int64_t fin = cli_json_time(last_term, "finishedAt");

                s.restarts += rc;
                if (last_term && fin > s.last_restart)
                        s.last_restart = fin;
                if (restartable) {
                        restartable_restarts += rc;
                        if (last_term && fin > restartable_last)
                                restartable_last = fin;
                }

                if (term && json_int(term, "exitCode") == 0)
                        continue;
                if (restartable && cli_json_flag(e, "started")) {
                        if (cli_json_flag(e, "ready"))
                                s.ready++;
                        continue;
                }
                const char *wr = cli_json_str(waiting, "reason");
                if (term)
                        r = set_status(&s, terminated_reason("Init:", term));
                else if (!isempty(wr) && !streq(wr, "PodInitializing"))
                        r = set_status(&s, strprintf("Init:%s", wr));
                else
                        r = set_status(&s,
                                       strprintf("Init:%zu/%zu", i, json_array_size(spec_init)));
                if (r < 0)
                        return r;
                initializing = true;
                break;
        }

        if (!initializing || condition_true(pod, "Initialized")) {
                bool has_running = false;
                s.restarts = restartable_restarts;
                s.last_restart = restartable_last;
                for (size_t k = json_array_size(statuses); k > 0; k--) {
                        e = json_array_get(statuses, k - 1);
                        json_t *state = cli_json_path(e, "state", NULL);
                        json_t *term = cli_json_path(state, "terminated", NULL);
                        json_t *last_term = cli_json_path(e, "lastState", "terminated", NULL);
                        const char *wr =
                                cli_json_str(cli_json_path(state, "waiting", NULL), "reason");
                        int64_t fin = cli_json_time(last_term, "finishedAt");

                        s.restarts += (unsigned)json_int(e, "restartCount");
                        if (last_term && fin > s.last_restart)
                                s.last_restart = fin;
                        r = 0;
                        if (!isempty(wr))
                                r = set_status(&s, strdup(wr));
                        else if (term)
                                r = set_status(&s, terminated_reason("", term));
                        else if (cli_json_flag(e, "ready") &&
                                 cli_json_path(state, "running", NULL)) {
                                has_running = true;
                                s.ready++;
                        }
                        if (r < 0)
                                return r;
                }
                /* A pod with one container still running is not Completed. */
                if (streq(s.status, "Completed") && has_running) {
                        r = set_status(
                                &s, strdup(condition_true(pod, "Ready") ? "Running" : "NotReady"));
                        if (r < 0)
                                return r;
                }
        }

        bool terminal = phase && (streq(phase, "Succeeded") || streq(phase, "Failed"));
        if (cli_json_path(pod, "metadata", "deletionTimestamp", NULL) && !terminal) {
                r = set_status(&s, strdup("Terminating"));
                if (r < 0)
                        return r;
        }
        *ret = s;
        s = (PodSummary){};
        return 0;
}

void cli_pod_summary_done(PodSummary *s) {
        if (!s)
                return;
        free(s->status);
        s->status = NULL;
}

char *cli_pod_format_restarts(char *buf, size_t size, const PodSummary *s, int64_t now) {
        if (s->restarts != 0 && s->last_restart != 0) {
                char age[32];
                snprintf(buf, size, "%u (%s ago)", s->restarts,
                         cli_format_age(age, sizeof(age), now - s->last_restart));
        } else
                snprintf(buf, size, "%u", s->restarts);
        return buf;
}

char *cli_format_age(char *buf, size_t size, int64_t nsec) {
        /* k8s.io/apimachinery/pkg/util/duration.HumanDuration */
        int64_t seconds = nsec / NSEC_PER_SEC;
        if (seconds < -1) {
                snprintf(buf, size, "<invalid>");
                return buf;
        }
        if (seconds < 0)
                seconds = 0;
        if (seconds < 60 * 2) {
                snprintf(buf, size, "%llds", (long long)seconds);
                return buf;
        }
        int64_t minutes = seconds / 60;
        if (minutes < 10) {
                int64_t sec = seconds % 60;
                if (sec == 0)
                        snprintf(buf, size, "%lldm", (long long)minutes);
                else
                        snprintf(buf, size, "%lldm%llds", (long long)minutes, (long long)sec);
                return buf;
        }
        if (minutes < 60 * 3) {
                snprintf(buf, size, "%lldm", (long long)minutes);
                return buf;
        }
        int64_t hours = seconds / 3600;
        if (hours < 8) {
                int64_t m = minutes % 60;
                if (m == 0)
                        snprintf(buf, size, "%lldh", (long long)hours);
                else
                        snprintf(buf, size, "%lldh%lldm", (long long)hours, (long long)m);
        } else if (hours < 48)
                snprintf(buf, size, "%lldh", (long long)hours);
        else if (hours < 24 * 8) {
                int64_t h = hours % 24;
                if (h == 0)
                        snprintf(buf, size, "%lldd", (long long)(hours / 24));
                else
                        snprintf(buf, size, "%lldd%lldh", (long long)(hours / 24), (long long)h);
        } else if (hours < 24 * 365 * 2)
                snprintf(buf, size, "%lldd", (long long)(hours / 24));
        else if (hours < 24 * 365 * 8) {
                int64_t dy = (hours / 24) % 365;
                if (dy == 0)
                        snprintf(buf, size, "%lldy", (long long)(hours / 24 / 365));
                else
                        snprintf(buf, size, "%lldy%lldd", (long long)(hours / 24 / 365),
                                 (long long)dy);
        } else
                snprintf(buf, size, "%lldy", (long long)(hours / 24 / 365));
        return buf;
}

char *cli_format_age_since(char *buf, size_t size, int64_t then, int64_t now) {
        if (then == 0) {
                snprintf(buf, size, "<unknown>");
                return buf;
        }
        return cli_format_age(buf, size, now - then);
}

char *cli_format_human_duration(char *buf, size_t size, int64_t nsec) {
        /* github.com/docker/go-units.HumanDuration, as crictl prints CREATED */
        int64_t seconds = nsec / NSEC_PER_SEC;
        int64_t minutes = seconds / 60;
        int64_t hours = (nsec + NSEC_PER_SEC * 1800) / (NSEC_PER_SEC * 3600); /* rounded */

        if (seconds < 1)
                snprintf(buf, size, "Less than a second");
        else if (seconds == 1)
                snprintf(buf, size, "1 second");
        else if (seconds < 60)
                snprintf(buf, size, "%lld seconds", (long long)seconds);
        else if (minutes == 1)
                snprintf(buf, size, "About a minute");
        else if (minutes < 60)
                snprintf(buf, size, "%lld minutes", (long long)minutes);
        else if (hours == 1)
                snprintf(buf, size, "About an hour");
        else if (hours < 48)
                snprintf(buf, size, "%lld hours", (long long)hours);
        else if (hours < 24 * 7 * 2)
                snprintf(buf, size, "%lld days", (long long)(hours / 24));
        else if (hours < 24 * 30 * 2)
                snprintf(buf, size, "%lld weeks", (long long)(hours / 24 / 7));
        else if (hours < 24 * 365 * 2)
                snprintf(buf, size, "%lld months", (long long)(hours / 24 / 30));
        else
                snprintf(buf, size, "%lld years", (long long)(seconds / 3600 / 24 / 365));
        return buf;
}

int64_t cli_now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int cli_parse_go_duration(const char *s, int64_t *ret_nsec) {
        /* a look-back: crictl's --since takes no sign */
        if (s && (*s == '+' || *s == '-'))
                return -EINVAL;
        return go_duration_parse(s, ret_nsec);
}

/* ---- containers ---- */

int cli_pod_find_container(const json_t *pod, const char *name, json_t **ret_spec,
                           json_t **ret_status, bool *ret_is_init) {
        json_t *spec = find_by_name(cli_json_path(pod, "spec", "containers", NULL), name);
        bool is_init = false;
        if (!spec) {
                spec = find_by_name(cli_json_path(pod, "spec", "initContainers", NULL), name);
                is_init = true;
        }
        if (!spec)
                return -ENOENT;
        if (ret_spec)
                *ret_spec = spec;
        if (ret_status)
                *ret_status = find_by_name(
                        cli_json_path(pod, "status",
                                      is_init ? "initContainerStatuses" : "containerStatuses",
                                      NULL),
                        name);
        if (ret_is_init)
                *ret_is_init = is_init;
        return 0;
}

static char *container_names(const json_t *array) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0, i;
        json_t *e;
        if (strbuf_append(&buf, &len, &cap, "", 0) < 0)
                return NULL;
        json_array_foreach(array, i, e) {
                const char *n = cli_json_str(e, "name");
                if (!n)
                        continue;
                if ((len > 0 && strbuf_append(&buf, &len, &cap, " ", 1) < 0) ||
                    strbuf_append(&buf, &len, &cap, n, strlen(n)) < 0)
                        return NULL;
        }
        return TAKE_PTR(buf);
}

int cli_pod_default_container(const json_t *pod, const char **ret_name, char **ret_message) {
        json_t *containers = cli_json_path(pod, "spec", "containers", NULL);
        const char *ann = cli_json_str(cli_json_path(pod, "metadata", "annotations", NULL),
                                       "kubectl.kubernetes.io/default-container");

        *ret_message = NULL;
        if (ann && cli_pod_find_container(pod, ann, NULL, NULL, NULL) >= 0) {
                *ret_name = ann;
                return 0;
        }
        if (json_array_size(containers) == 1 &&
            cli_json_str(json_array_get(containers, 0), "name")) {
                *ret_name = cli_json_str(json_array_get(containers, 0), "name");
                return 0;
        }
        _cleanup_free_ char *names = container_names(containers);
        _cleanup_free_ char *init =
                container_names(cli_json_path(pod, "spec", "initContainers", NULL));
        if (!names || !init)
                return -ENOMEM;
        *ret_message = strprintf(
                "a container name must be specified for pod %s, choose one of: [%s]%s%s%s",
                strna(cli_json_str(cli_json_path(pod, "metadata", NULL), "name")), names,
                isempty(init) ? "" : " or one of the init containers: [", init,
                isempty(init) ? "" : "]");
        return -ENOTUNIQ;
}

const char *cli_container_id_strip(const char *id, char **ret_scheme) {
        const char *sep = id ? strstr(id, "://") : NULL;
        if (ret_scheme)
                *ret_scheme = sep ? strndup(id, (size_t)(sep - id)) : NULL;
        return sep ? sep + 3 : id;
}

const char *cli_runtime_for(const CliCommon *c, const char *container_id) {
        const char *sep = container_id ? strstr(container_id, "://") : NULL;

        if (c->runtime_set || !sep)
                return c->runtime;
        /* Only known names: the scheme must not choose an arbitrary binary. */
        if ((size_t)(sep - container_id) == 4 && strneq(container_id, "crun", 4))
                return "crun";
        return CLI_DEFAULT_RUNTIME;
}

char *cli_runtime_root(const CliCommon *c) {
        return strprintf("%s/runc", c->run_dir);
}

/* ---- tables ---- */

int cli_table_init(CliTable *t, const char *const *header, size_t n_columns) {
        *t = (CliTable){ .n_columns = n_columns };
        return cli_table_add_row(t, header);
}

void cli_table_done(CliTable *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        *t = (CliTable){};
}

int cli_table_add_row(CliTable *t, const char *const *row) {
        char **nc = reallocarray(t->cells, t->n_cells + t->n_columns, sizeof(char *));
        if (!nc)
                return -ENOMEM;
        t->cells = nc;
        for (size_t i = 0; i < t->n_columns; i++) {
                /* Cells carry text from outside (event messages from a
                 * registry's error body, termination reasons, file names):
                 * escaped, so a row stays one line and drives no terminal. */
                char *s = str_escape(row[i], 0);
                if (!s) {
                        for (size_t k = 0; k < i; k++)
                                free(t->cells[t->n_cells + k]);
                        return -ENOMEM;
                }
                t->cells[t->n_cells + i] = s;
        }
        t->n_cells += t->n_columns;
        return 0;
}

void cli_table_print(const CliTable *t, FILE *f) {
        cli_table_print_indented(t, "", f);
}

void cli_table_print_indented(const CliTable *t, const char *indent, FILE *f) {
        _cleanup_free_ size_t *width = calloc(MAX(t->n_columns, (size_t)1), sizeof(size_t));
        if (!width)
                return;
        for (size_t i = 0; i < t->n_cells; i++)
                width[i % t->n_columns] = MAX(width[i % t->n_columns], strlen(t->cells[i]));
        for (size_t i = 0; i < t->n_cells; i++) {
                size_t col = i % t->n_columns;
                if (col == 0)
                        fputs(indent, f);
                if (col + 1 == t->n_columns)
                        fprintf(f, "%s\n", t->cells[i]);
                else
                        fprintf(f, "%-*s   ", (int)width[col], t->cells[i]);
        }
}

/* ---- YAML ---- */

/* Whether a plain scalar with this text would read back as something other
 * than a string under YAML 1.1 (what go-yaml and PyYAML resolve): booleans,
 * nulls, numbers, timestamps. False positives only add quotes. */
static bool yaml_string_ambiguous(const char *s, size_t len) {
        static const char *const words[] = {
                "",      "~",     "null",  "Null", "NULL", "true", "True",  "TRUE",
                "false", "False", "FALSE", "yes",  "Yes",  "YES",  "no",    "No",
                "NO",    "on",    "On",    "ON",   "off",  "Off",  "OFF",   "y",
                "Y",     "n",     "N",     ".inf", ".Inf", ".INF", "-.inf", "-.Inf",
                "-.INF", "+.inf", ".nan",  ".NaN", ".NAN", "<<",   "=",
        };
        if (strlen(s) != len)
                return true; /* embedded NUL: quote it so the escape is visible */
        for (size_t i = 0; i < ELEMENTSOF(words); i++)
                if (streq(s, words[i]))
                        return true;
        if (!strchr("0123456789+-.", s[0]))
                return false;
        for (size_t i = 0; i < len; i++)
                if (!strchr("0123456789abcdefABCDEFxXoO_.:+-tTzZ ", s[i]))
                        return false;
        return true;
}

static int yaml_emit(yaml_emitter_t *e, yaml_event_t *ev) {
        return yaml_emitter_emit(e, ev) ? 0 : -EIO;
}

static int yaml_emit_scalar(yaml_emitter_t *e, const char *s, size_t len, bool is_string) {
        yaml_event_t ev;
        bool quote = is_string && yaml_string_ambiguous(s, len);
        /* Multi-line text as a literal block, as kubectl prints scripts and
         * certificates; libyaml falls back to quoting when it cannot. */
        yaml_scalar_style_t style = quote ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                    : is_string && memchr(s, '\n', len) ? YAML_LITERAL_SCALAR_STYLE
                                                                        : YAML_ANY_SCALAR_STYLE;
        if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, !quote, 1,
                                          style))
                return -ENOMEM;
        return yaml_emit(e, &ev);
}

static int str_ptr_compare(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int yaml_emit_json(yaml_emitter_t *e, const json_t *j, unsigned depth) {
        yaml_event_t ev;
        char buf[64];
        int r;

        if (depth > 512)
                return -ELOOP;
        switch (json_typeof(j)) {
        case JSON_OBJECT: {
                size_t n = json_object_size(j), k = 0;
                _cleanup_free_ const char **keys = calloc(MAX(n, (size_t)1), sizeof(char *));
                const char *key;
                json_t *v;
                if (!keys)
                        return -ENOMEM;
                json_object_foreach((json_t *)j, key, v) keys[k++] = key;
                qsort(keys, k, sizeof(char *), str_ptr_compare);
                if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                         YAML_BLOCK_MAPPING_STYLE))
                        return -ENOMEM;
                r = yaml_emit(e, &ev);
                for (size_t i = 0; r >= 0 && i < k; i++) {
                        r = yaml_emit_scalar(e, keys[i], strlen(keys[i]), true);
                        if (r >= 0)
                                r = yaml_emit_json(e, json_object_get(j, keys[i]), depth + 1);
                }
                if (r < 0)
                        return r;
                if (!yaml_mapping_end_event_initialize(&ev))
                        return -ENOMEM;
                return yaml_emit(e, &ev);
        }
        case JSON_ARRAY: {
                size_t i;
                json_t *v;
                if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                          YAML_BLOCK_SEQUENCE_STYLE))
                        return -ENOMEM;
                r = yaml_emit(e, &ev);
                json_array_foreach(j, i, v) {
                        if (r < 0)
                                break;
                        r = yaml_emit_json(e, v, depth + 1);
                }
                if (r < 0)
                        return r;
                if (!yaml_sequence_end_event_initialize(&ev))
                        return -ENOMEM;
                return yaml_emit(e, &ev);
        }
        case JSON_STRING:
                return yaml_emit_scalar(e, json_string_value(j), json_string_length(j), true);
        case JSON_INTEGER:
                snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
                return yaml_emit_scalar(e, buf, strlen(buf), false);
        case JSON_REAL:
                snprintf(buf, sizeof(buf), "%.17g", json_real_value(j));
                if (!strpbrk(buf, ".eEn")) /* keep it a float when read back */
                        strcat(buf, ".0");
                return yaml_emit_scalar(e, buf, strlen(buf), false);
        case JSON_TRUE:
                return yaml_emit_scalar(e, "true", 4, false);
        case JSON_FALSE:
                return yaml_emit_scalar(e, "false", 5, false);
        case JSON_NULL:
        default:
                return yaml_emit_scalar(e, "null", 4, false);
        }
}

static int yaml_write_file(void *data, unsigned char *buffer, size_t size) {
        return fwrite(buffer, 1, size, data) == size;
}

static void yaml_emitter_freep(yaml_emitter_t **e) {
        if (*e)
                yaml_emitter_delete(*e);
}

int cli_json_dump_yaml(const json_t *j, FILE *f) {
        yaml_emitter_t emitter;
        _cleanup_(yaml_emitter_freep) yaml_emitter_t *e = NULL;
        yaml_event_t ev;
        int r;

        if (!yaml_emitter_initialize(&emitter))
                return -ENOMEM;
        e = &emitter;
        yaml_emitter_set_output(e, yaml_write_file, f);
        yaml_emitter_set_unicode(e, 1);
        yaml_emitter_set_width(e, -1);
        yaml_emitter_set_indent(e, 2);

        if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING))
                return -ENOMEM;
        r = yaml_emit(e, &ev);
        if (r < 0)
                return r;
        if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1))
                return -ENOMEM;
        r = yaml_emit(e, &ev);
        if (r >= 0)
                r = yaml_emit_json(e, j, 0);
        if (r < 0)
                return r;
        if (!yaml_document_end_event_initialize(&ev, 1))
                return -ENOMEM;
        r = yaml_emit(e, &ev);
        if (r < 0)
                return r;
        if (!yaml_stream_end_event_initialize(&ev))
                return -ENOMEM;
        r = yaml_emit(e, &ev);
        if (r < 0)
                return r;
        return yaml_emitter_flush(e) ? 0 : -EIO;
}

/* ---- running the runtime ---- */

#define CAPTURE_MAX (16U * 1024U * 1024U)

int cli_run_capture(char *const *argv, char **ret_out, char **ret_err, int *ret_status) {
        _cleanup_close_pair_ int out[2] = { -EBADF, -EBADF };
        _cleanup_close_pair_ int err[2] = { -EBADF, -EBADF };
        _cleanup_free_ char *obuf = NULL, *ebuf = NULL;
        size_t olen = 0, ocap = 0, elen = 0, ecap = 0;
        int status;

        if (strbuf_append(&obuf, &olen, &ocap, "", 0) < 0 ||
            strbuf_append(&ebuf, &elen, &ecap, "", 0) < 0)
                return -ENOMEM;
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
                return -errno;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        o.argv = argv;
        o.envp = environ; /* the user's command: the user's environment */
        o.stdout_fd = out[1];
        o.stderr_fd = err[1];
        pid_t pid;
        int r = spawn(&o, &pid, NULL);
        if (r < 0) {
                /* As a shell reports a command it cannot run. */
                _cleanup_free_ char *msg =
                        strprintf("cannot execute %s: %s", argv[0], strerror(-r));
                if (!msg)
                        return -ENOMEM;
                if (ret_out)
                        *ret_out = TAKE_PTR(obuf);
                if (ret_err)
                        *ret_err = TAKE_PTR(msg);
                *ret_status = W_EXITCODE(127, 0);
                return 0;
        }
        out[1] = safe_close(out[1]);
        err[1] = safe_close(err[1]);

        struct pollfd pfd[2] = { { .fd = out[0], .events = POLLIN },
                                 { .fd = err[0], .events = POLLIN } };
        while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
                if (poll(pfd, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                for (int i = 0; i < 2; i++) {
                        if (pfd[i].fd < 0 || !pfd[i].revents)
                                continue;
                        char buf[16384];
                        ssize_t n = read(pfd[i].fd, buf, sizeof(buf));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0) {
                                pfd[i].fd = -1;
                                continue;
                        }
                        char **b = i == 0 ? &obuf : &ebuf;
                        size_t *len = i == 0 ? &olen : &elen, *cap = i == 0 ? &ocap : &ecap;
                        if (*len + (size_t)n > CAPTURE_MAX)
                                continue; /* drop the excess, keep draining */
                        if (strbuf_append(b, len, cap, buf, (size_t)n) < 0)
                                r = -ENOMEM;
                }
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (r < 0)
                return r;
        if (ret_out)
                *ret_out = TAKE_PTR(obuf);
        if (ret_err)
                *ret_err = TAKE_PTR(ebuf);
        *ret_status = status;
        return 0;
}
