/* nanolet events [POD] [-w]: the pods' events (status/events/<uid>.json,
 * docs/internals/state-files.md) as `kubectl get events` lists them, oldest first by
 * last sighting. -w prints them, then every event that is new or repeated
 * since, until the agent's status directory goes (or SIGINT). Changes are
 * noticed by inotify on the status and events directories, and by a rescan
 * every FOLLOW_POLL_MS in case a watch could not be set up (the events
 * directory appears with the first event). */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cli-common.h"
#include "cli-options.h"
#include "cli.h"
#include "string-util.h"

#define FOLLOW_POLL_MS 1000

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet events [OPTIONS] [POD]\n\n"
                   "List the events of POD, or of every pod, oldest first. POD is NAME or\n"
                   "NAMESPACE/NAME, with or without the node suffix.\n\n"
                   "  -w, --watch         after the list, print new and repeated events as they\n"
                   "                      come, until the agent's status directory goes or\n"
                   "                      SIGINT\n" CLI_COMMON_HELP);
}

typedef struct Row {
        json_t *event; /* borrowed from the list */
        const CliPod *pod;
        int64_t last;
} Row;

static int row_compare(const void *x, const void *y) {
        const Row *a = x, *b = y;
        if (a->last != b->last)
                return a->last < b->last ? -1 : 1;
        return 0;
}

/* What was printed of an event, so -w prints it again only when it changed. */
typedef struct Seen {
        char *key; /* "<uid>/<metadata.name>" */
        json_int_t count;
        int64_t last;
        unsigned pass; /* the last pass that found it */
} Seen;

typedef struct EventsContext {
        CliCommon c;
        const char *query;
        bool watch;
        bool all;
        char *uid; /* the pod of query, once resolved */
        Seen *seen;
        size_t n_seen;
        unsigned pass;
        bool header_printed;
} EventsContext;

static void events_context_done(EventsContext *x) {
        for (size_t i = 0; i < x->n_seen; i++)
                free(x->seen[i].key);
        free(x->seen);
        free(x->uid);
}

/* true when ev is new or changed since it was printed (and remembers it). */
static int seen_update(EventsContext *x, const CliPod *pod, const json_t *ev) {
        const char *name = cli_json_str(cli_json_path(ev, "metadata", NULL), "name");
        json_int_t count = json_integer_value(json_object_get(ev, "count"));
        int64_t last = cli_json_time(ev, "lastTimestamp");
        _cleanup_free_ char *key = strprintf("%s/%s", pod->uid, strempty(name));
        if (!key)
                return -ENOMEM;
        for (size_t i = 0; i < x->n_seen; i++)
                if (streq(x->seen[i].key, key)) {
                        x->seen[i].pass = x->pass;
                        if (x->seen[i].count == count && x->seen[i].last == last)
                                return 0;
                        x->seen[i].count = count;
                        x->seen[i].last = last;
                        return 1;
                }
        Seen *n = reallocarray(x->seen, x->n_seen + 1, sizeof *n);
        if (!n)
                return -ENOMEM;
        x->seen = n;
        x->seen[x->n_seen++] =
                (Seen){ .key = TAKE_PTR(key), .count = count, .last = last, .pass = x->pass };
        return 1;
}

/* Forgets events no file holds any more (evicted, or their pod gone), so a
 * long -w stays small. Only after a pass that read every file. */
static void seen_prune(EventsContext *x) {
        size_t k = 0;
        for (size_t i = 0; i < x->n_seen; i++) {
                if (x->seen[i].pass == x->pass)
                        x->seen[k++] = x->seen[i];
                else
                        free(x->seen[i].key);
        }
        x->n_seen = k;
}

static int print_rows(EventsContext *x, const Row *rows, size_t n, int64_t now) {
        static const char *const header_all[] = { "NAMESPACE", "LAST SEEN", "TYPE",
                                                  "REASON",    "OBJECT",    "MESSAGE" };
        _cleanup_(cli_table_done) CliTable t = {};
        size_t off = x->all ? 0 : 1;
        int r = cli_table_init(&t, header_all + off, ELEMENTSOF(header_all) - off);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                char age[96];
                _cleanup_free_ char *object = strprintf("pod/%s", rows[i].pod->name);
                if (!object)
                        return -ENOMEM;
                const char *row[] = {
                        rows[i].pod->namespace,
                        cli_event_format_age(age, sizeof age, rows[i].event, now),
                        cli_json_str(rows[i].event, "type"),
                        cli_json_str(rows[i].event, "reason"),
                        object,
                        cli_json_str(rows[i].event, "message"),
                };
                r = cli_table_add_row(&t, row + off);
                if (r < 0)
                        return r;
        }
        if (x->header_printed) {
                /* Following: rows only, aligned on their own (kubectl -w does the same). */
                CliTable body = { .n_columns = t.n_columns,
                                  .cells = t.cells + t.n_columns,
                                  .n_cells = t.n_cells - t.n_columns };
                cli_table_print(&body, stdout);
        } else if (n > 0 || x->watch) {
                cli_table_print(&t, stdout);
                x->header_printed = true;
        }
        return 0;
}

/* One pass: every (selected) pod's events that were not printed yet. */
static int events_pass(EventsContext *x, bool *ret_pod_gone) {
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_free_ json_t **lists = NULL;
        _cleanup_free_ Row *rows = NULL;
        size_t n_rows = 0, cap = 0;
        int r;

        *ret_pod_gone = false;
        x->pass++;
        r = cli_pods_load(&x->c, &l);
        if (r < 0)
                return r;
        lists = calloc(MAX(l.n, (size_t)1), sizeof(json_t *));
        if (!lists)
                return -ENOMEM;
        bool found = false, complete = true;
        for (size_t p = 0; p < l.n; p++) {
                const CliPod *pod = &l.pods[p];
                if (x->uid && !streq(pod->uid, x->uid))
                        continue;
                found = true;
                r = cli_events_load(&x->c, pod->uid, &lists[p]);
                if (r < 0) {
                        fprintf(stderr, "%s: warning: cannot read the events of %s/%s: %s\n",
                                x->c.prog, pod->namespace, pod->name, strerror(-r));
                        complete = false;
                        continue;
                }
                size_t i;
                json_t *ev;
                json_array_foreach(lists[p], i, ev) {
                        r = seen_update(x, pod, ev);
                        if (r < 0)
                                goto out;
                        if (r == 0)
                                continue;
                        if (n_rows == cap) {
                                size_t nc = MAX(cap * 2, (size_t)32);
                                Row *nr = reallocarray(rows, nc, sizeof *nr);
                                if (!nr) {
                                        r = -ENOMEM;
                                        goto out;
                                }
                                rows = nr;
                                cap = nc;
                        }
                        rows[n_rows++] = (Row){ .event = ev,
                                                .pod = pod,
                                                .last = cli_json_time(ev, "lastTimestamp") };
                }
        }
        if (x->uid && !found)
                *ret_pod_gone = true;
        if (complete)
                seen_prune(x);
        if (n_rows > 1)
                qsort(rows, n_rows, sizeof *rows, row_compare);
        r = print_rows(x, rows, n_rows, cli_now_nsec());
        if (r >= 0 && fflush(stdout) != 0)
                r = -errno ?: -EIO;
out:
        for (size_t p = 0; p < l.n; p++)
                json_decref(lists[p]);
        return r;
}

static int follow(EventsContext *x) {
        _cleanup_free_ char *status_dir = strprintf("%s/status", x->c.run_dir);
        _cleanup_free_ char *events_dir = strprintf("%s/status/events", x->c.run_dir);
        _cleanup_close_ int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        bool events_watched = false;

        if (!status_dir || !events_dir)
                return -ENOMEM;
        if (ifd < 0)
                return -errno;
        /* Status files come and go with pods; the directory itself going
         * (IN_DELETE_SELF, IN_MOVE_SELF) means the agent's state is gone. */
        if (inotify_add_watch(ifd, status_dir,
                              IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF) <
            0)
                return errno == ENOENT ? 0 : -errno;
        for (;;) {
                if (!events_watched)
                        events_watched = inotify_add_watch(ifd, events_dir,
                                                           IN_CLOSE_WRITE | IN_MOVED_TO |
                                                                   IN_DELETE_SELF) >= 0;
                struct pollfd p = { .fd = ifd, .events = POLLIN };
                int r = poll(&p, 1, FOLLOW_POLL_MS);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0) {
                        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                        ssize_t k;
                        while ((k = read(ifd, buf, sizeof buf)) > 0)
                                for (char *q = buf; q < buf + k;) {
                                        const struct inotify_event *ie = (void *)q;
                                        /* The events directory went: watch it again
                                         * once it is back. */
                                        if (ie->mask & IN_IGNORED)
                                                events_watched = false;
                                        q += sizeof *ie + ie->len;
                                }
                }
                if (access(status_dir, F_OK) < 0 && errno == ENOENT)
                        return 0;
                bool gone;
                r = events_pass(x, &gone);
                if (r < 0)
                        return r;
                if (gone)
                        return 0; /* the pod was removed: nothing more will come */
        }
}

int cli_events(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "watch", no_argument, NULL, 'w' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(events_context_done) EventsContext x = {};
        int opt, r;

        cli_options_start(&x.c, "nanolet events");
        while ((opt = cli_option_next(&x.c, argc, argv, "hw", options, help)) > 0) {
                switch (opt) {
                case 'w':
                        x.watch = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (cli_options_end(&x.c, opt, argc, argv, 1, &r))
                return r;
        x.query = optind < argc ? argv[optind] : NULL;
        x.all = !x.query;
        if (x.query) {
                _cleanup_(cli_pod_list_done) CliPodList l = {};
                const CliPod *pod;
                if (cli_pods_load_or_report(&x.c, &l) < 0)
                        return EXIT_ERROR;
                if (cli_pod_find(&x.c, &l, x.query, &pod) < 0)
                        return EXIT_ERROR;
                x.uid = strdup(pod->uid);
                if (!x.uid) {
                        fprintf(stderr, "%s: out of memory\n", x.c.prog);
                        return EXIT_ERROR;
                }
        }
        bool gone;
        r = events_pass(&x, &gone);
        if (r >= 0 && !x.header_printed && !x.watch)
                fprintf(stderr, "No events found.\n");
        if (r >= 0 && x.watch && !gone)
                r = follow(&x);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", x.c.prog, strerror(-r));
                return EXIT_ERROR;
        }
        if (fflush(stdout) != 0) {
                fprintf(stderr, "%s: cannot write output: %m\n", x.c.prog);
                return EXIT_ERROR;
        }
        return EXIT_OK;
}
