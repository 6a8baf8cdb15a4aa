/* nanolet pods: the static pods as kubectl get pods shows them, read from the
 * agent's status files, followed by the manifest errors of the sources.
 * -w (kubectl get pods -w): after the table, one row for every pod whose
 * status changed, appeared, or went (its last row, marked "(deleted)"),
 * as the agent rewrites its status files, until ^C. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cli-common.h"
#include "cli-options.h"
#include "cli.h"
#include "log.h"
#include "string-util.h"

/* -w notices changes by inotify; the timeout only catches what a watch
 * could miss (a status directory made after the start). */
#define WATCH_POLL_MS 1000

typedef enum PodsOutput {
        PODS_OUTPUT_TABLE,
        PODS_OUTPUT_WIDE,
        PODS_OUTPUT_JSON,
        PODS_OUTPUT_YAML,
        PODS_OUTPUT_NAME,
} PodsOutput;

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet pods [OPTIONS]\n\n"
                   "List the static pods with their status, as `kubectl get pods` would.\n\n"
                   "  -o, --output FORMAT  wide, json (a v1 PodList), yaml or name\n"
                   "                       (pod/NAME, one a line, as kubectl)\n"
                   "  -n, --namespace NS   only pods of this namespace\n"
                   "  -A, --all-namespaces all namespaces (the default)\n"
                   "  -w, --watch          after the table, print a pod's row again whenever\n"
                   "                       it changes, until ^C (table output "
                   "only)\n" CLI_COMMON_HELP);
}

static const char *pod_ip(const json_t *pod) {
        json_t *ips = cli_json_path(pod, "status", "podIPs", NULL);
        const char *ip = cli_json_str(json_array_get(ips, 0), "ip");
        if (isempty(ip))
                ip = cli_json_str(cli_json_path(pod, "status", NULL), "podIP");
        return isempty(ip) ? "<none>" : ip;
}

static const char *const table_header[] = { "NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS",
                                            "AGE",       "IP",   "NODE",  "UID" };
#define N_COLUMNS ELEMENTSOF(table_header)

/* One pod's row as kubectl prints it; the strings live in s and bufs. */
typedef struct PodRow {
        PodSummary s;
        char ready[32], restarts[64], age[32];
        const char *cells[N_COLUMNS];
} PodRow;

static void pod_row_done(PodRow *r) {
        cli_pod_summary_done(&r->s);
}

static int pod_row(const CliPod *p, int64_t now, PodRow *ret) {
        int r = cli_pod_summarize(p->json, &ret->s);
        if (r < 0)
                return r;
        snprintf(ret->ready, sizeof(ret->ready), "%u/%u", ret->s.ready, ret->s.total);
        const char *cells[N_COLUMNS] = {
                p->namespace,
                p->name,
                ret->ready,
                ret->s.status,
                cli_pod_format_restarts(ret->restarts, sizeof(ret->restarts), &ret->s, now),
                cli_format_age_since(ret->age, sizeof(ret->age),
                                     cli_json_time(cli_json_path(p->json, "metadata", NULL),
                                                   "creationTimestamp"),
                                     now),
                pod_ip(p->json),
                p->node ? p->node : "<none>",
                p->uid,
        };
        memcpy(ret->cells, cells, sizeof(cells));
        return 0;
}

/* widths (optional, N_COLUMNS): the columns' widths as printed, for the
 * rows `pods -w` prints afterwards. */
static int print_table(const CliPodList *l, const char *ns, bool wide, size_t *widths) {
        _cleanup_(cli_table_done) CliTable t = {};
        int64_t now = cli_now_nsec();
        size_t ncol = wide ? N_COLUMNS : 7, shown = 0;
        int r;

        r = cli_table_init(&t, table_header, ncol);
        if (r < 0)
                return r;
        for (size_t k = 0; widths && k < N_COLUMNS; k++)
                widths[k] = strlen(table_header[k]);
        for (size_t i = 0; i < l->n; i++) {
                const CliPod *p = &l->pods[i];
                _cleanup_(pod_row_done) PodRow row = {};

                if (ns && !streq(p->namespace, ns))
                        continue;
                r = pod_row(p, now, &row);
                if (r < 0)
                        return r;
                r = cli_table_add_row(&t, row.cells);
                if (r < 0)
                        return r;
                /* as printed: the table escapes its cells */
                for (size_t k = 0; widths && k < N_COLUMNS; k++)
                        widths[k] = MAX(widths[k], k < ncol ? strlen(t.cells[t.n_cells - ncol + k])
                                                            : strlen(row.cells[k]));
                shown++;
        }
        if (shown == 0) {
                fprintf(stderr, ns ? "No pods found in %s namespace.\n" : "No pods found.\n", ns);
                return 0;
        }
        cli_table_print(&t, stdout);
        return 0;
}

/* ---- -w: kubectl get pods --watch ---- */

typedef struct Watched {
        char *uid;
        char *line;    /* the row as printed last, without AGE (which changes by itself) */
        char *printed; /* the whole row as printed last */
        unsigned pass;
} Watched;

typedef struct WatchContext {
        const char *ns;
        bool wide;
        size_t widths[N_COLUMNS];
        Watched *w;
        size_t n;
        unsigned pass;
} WatchContext;

static void watch_context_done(WatchContext *x) {
        for (size_t i = 0; i < x->n; i++) {
                free(x->w[i].uid);
                free(x->w[i].line);
                free(x->w[i].printed);
        }
        free(x->w);
}

static char *format_row(const WatchContext *x, const char *const *cells) {
        char *s = NULL;
        size_t len = 0, cap = 0, ncol = x->wide ? N_COLUMNS : 7;
        int r = strbuf_append(&s, &len, &cap, "", 0);
        for (size_t k = 0; r >= 0 && k < ncol; k++) {
                _cleanup_free_ char *c = str_escape(cells[k], 0);
                if (!c) {
                        r = -ENOMEM;
                        break;
                }
                size_t pad =
                        k + 1 < ncol && x->widths[k] > strlen(c) ? x->widths[k] - strlen(c) : 0;
                r = strbuf_append(&s, &len, &cap, c, strlen(c));
                for (size_t i = 0; r >= 0 && k + 1 < ncol && i < pad + 3; i++)
                        r = strbuf_append(&s, &len, &cap, " ", 1);
        }
        if (r < 0) {
                free(s);
                return NULL;
        }
        return s;
}

static Watched *watched_find(WatchContext *x, const char *uid) {
        for (size_t i = 0; i < x->n; i++)
                if (streq(x->w[i].uid, uid))
                        return &x->w[i];
        return NULL;
}

/* One look at the status files: prints the row of every pod that is new or
 * whose status changed, and, for a pod whose status file is gone,
 * its last row with STATUS "Deleted". print false: only remember. */
static int watch_pass(const CliCommon *c, WatchContext *x, bool print) {
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        int64_t now = cli_now_nsec();
        int r = cli_pods_load(c, &l);
        if (r < 0)
                return r;
        x->pass++;
        for (size_t i = 0; i < l.n; i++) {
                const CliPod *p = &l.pods[i];
                _cleanup_(pod_row_done) PodRow row = {};
                if (x->ns && !streq(p->namespace, x->ns))
                        continue;
                r = pod_row(p, now, &row);
                if (r < 0)
                        return r;
                /* kubectl prints a row when the object changes; the agent
                 * rewrites a status file only when the status changed, and
                 * columns such as AGE or "(10m ago)" change by themselves */
                _cleanup_free_ char *line = json_dumps(p->json, JSON_COMPACT | JSON_SORT_KEYS);
                _cleanup_free_ char *printed = format_row(x, row.cells);
                if (!line || !printed)
                        return -ENOMEM;
                Watched *w = watched_find(x, p->uid);
                if (!w) {
                        Watched *n = reallocarray(x->w, x->n + 1, sizeof *n);
                        if (!n)
                                return -ENOMEM;
                        x->w = n;
                        w = &x->w[x->n];
                        *w = (Watched){ .uid = strdup(p->uid) };
                        if (!w->uid)
                                return -ENOMEM;
                        x->n++;
                } else if (streq(w->line, line)) {
                        w->pass = x->pass;
                        continue;
                }
                w->pass = x->pass;
                free(w->line);
                free(w->printed);
                w->line = TAKE_PTR(line);
                w->printed = TAKE_PTR(printed);
                if (print)
                        printf("%s\n", w->printed);
        }
        for (size_t i = 0; i < x->n;) {
                Watched *w = &x->w[i];
                if (w->pass == x->pass) {
                        i++;
                        continue;
                }
                /* the status file went: the agent removed the pod */
                if (print && w->printed)
                        printf("%s   (deleted)\n", w->printed);
                free(w->uid);
                free(w->line);
                free(w->printed);
                x->w[i] = x->w[--x->n];
        }
        return fflush(stdout) == 0 ? 0 : -EIO;
}

static int watch(const CliCommon *c, WatchContext *x) {
        _cleanup_free_ char *status_dir = strprintf("%s/status", c->run_dir);
        _cleanup_close_ int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        int r;

        if (!status_dir)
                return -ENOMEM;
        if (ifd < 0)
                return -errno;
        r = watch_pass(c, x, false);
        if (r < 0)
                return r;
        /* Status files are replaced by rename (IN_MOVED_TO) and removed with
         * their pod; the directory going means the agent's state is gone. */
        if (inotify_add_watch(ifd, status_dir,
                              IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE |
                                      IN_DELETE_SELF | IN_MOVE_SELF) < 0)
                return errno == ENOENT ? 0 : -errno;
        for (;;) {
                struct pollfd pfd = { .fd = ifd, .events = POLLIN };
                r = poll(&pfd, 1, WATCH_POLL_MS);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0) {
                        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                        while (read(ifd, buf, sizeof buf) > 0)
                                ;
                }
                if (access(status_dir, F_OK) < 0 && errno == ENOENT)
                        return 0;
                r = watch_pass(c, x, true);
                if (r < 0)
                        return r;
        }
}

static int print_list(const CliPodList *l, const char *ns, PodsOutput o) {
        _cleanup_json_ json_t *items = json_array();
        _cleanup_json_ json_t *list = NULL;
        int r;

        if (!items)
                return -ENOMEM;
        for (size_t i = 0; i < l->n; i++)
                if (!ns || streq(l->pods[i].namespace, ns))
                        if (json_array_append(items, l->pods[i].json) < 0)
                                return -ENOMEM;
        list = json_pack("{s:s, s:s, s:{s:s}, s:O}", "apiVersion", "v1", "kind", "PodList",
                         "metadata", "resourceVersion", "", "items", items);
        if (!list)
                return -ENOMEM;
        if (o == PODS_OUTPUT_YAML) {
                r = cli_json_dump_yaml(list, stdout);
                if (r < 0)
                        return r;
        } else {
                if (json_dumpf(list, stdout, JSON_INDENT(4)) < 0)
                        return -EIO;
                putchar('\n');
        }
        return 0;
}

static void print_source_errors(const json_t *errors, FILE *f) {
        size_t i, k;
        json_t *e, *m;

        if (json_array_size(errors) == 0)
                return;
        fprintf(f, "\nmanifest errors:\n");
        /* File names and messages quoting a manifest's bad values:
         * escaped, one line each (-o json has them exact). */
        json_array_foreach(errors, i, e) {
                json_t *messages = cli_json_path(e, "messages", NULL);
                if (json_array_size(messages) == 0) {
                        _cleanup_free_ char *origin = str_escape(cli_json_str(e, "origin"), 0);
                        fprintf(f, "  %s: error\n", origin ? origin : "?");
                        continue;
                }
                json_array_foreach(messages, k, m) if (json_is_string(m)) {
                        _cleanup_free_ char *text = str_escape(json_string_value(m), 0);
                        fprintf(f, "  %s\n", text ? text : "?");
                }
        }
}

int cli_pods(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "output", required_argument, NULL, 'o' },
                { "namespace", required_argument, NULL, 'n' },
                { "all-namespaces", no_argument, NULL, 'A' },
                { "watch", no_argument, NULL, 'w' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_json_ json_t *errors = NULL;
        PodsOutput output = PODS_OUTPUT_TABLE;
        _cleanup_(watch_context_done) WatchContext wx = {};
        bool watching = false;
        const char *ns = NULL;
        CliCommon c;
        int r, opt;

        cli_options_start(&c, "nanolet pods");
        while ((opt = cli_option_next(&c, argc, argv, "ho:n:Aw", options, help)) > 0) {
                switch (opt) {
                case 'o':
                        if (streq(optarg, "wide"))
                                output = PODS_OUTPUT_WIDE;
                        else if (streq(optarg, "json"))
                                output = PODS_OUTPUT_JSON;
                        else if (streq(optarg, "yaml"))
                                output = PODS_OUTPUT_YAML;
                        else if (streq(optarg, "name"))
                                output = PODS_OUTPUT_NAME;
                        else {
                                fprintf(stderr,
                                        "%s: unknown output format \"%s\" (wide, json, yaml, "
                                        "name)\n",
                                        c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'n':
                        ns = optarg;
                        break;
                case 'A':
                        ns = NULL;
                        break;
                case 'w':
                        watching = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (cli_options_end(&c, opt, argc, argv, 0, &r))
                return r;

        if (watching && output != PODS_OUTPUT_TABLE && output != PODS_OUTPUT_WIDE) {
                fprintf(stderr, "%s: -w prints table rows: use it without -o, or with -o wide\n",
                        c.prog);
                return EXIT_USAGE;
        }
        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        r = cli_source_errors_load(&c, &errors);
        if (r < 0)
                fprintf(stderr, "%s: warning: cannot read %s/status/sources.json: %s\n", c.prog,
                        c.run_dir, strerror(-r));

        if (output == PODS_OUTPUT_TABLE || output == PODS_OUTPUT_WIDE)
                r = print_table(&l, ns, output == PODS_OUTPUT_WIDE, wx.widths);
        else if (output == PODS_OUTPUT_NAME) {
                for (size_t i = 0; i < l.n; i++)
                        if (!ns || streq(l.pods[i].namespace, ns))
                                printf("pod/%s\n", l.pods[i].name);
                r = 0;
        } else
                r = print_list(&l, ns, output);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", c.prog, strerror(-r));
                return EXIT_ERROR;
        }
        /* Machine-readable output stays parseable: errors go to stderr then. */
        print_source_errors(errors, output == PODS_OUTPUT_TABLE || output == PODS_OUTPUT_WIDE
                                            ? stdout
                                            : stderr);
        if (fflush(stdout) != 0) {
                fprintf(stderr, "%s: cannot write output: %m\n", c.prog);
                return EXIT_ERROR;
        }
        if (watching) {
                wx.ns = ns;
                wx.wide = output == PODS_OUTPUT_WIDE;
                r = watch(&c, &wx);
                if (r < 0 && r != -EIO) {
                        fprintf(stderr, "%s: watching %s/status: %s\n", c.prog, c.run_dir,
                                strerror(-r));
                        return EXIT_ERROR;
                }
        }
        return EXIT_OK;
}
