/* nanolet ps: one line per container as crictl ps prints them, from the
 * containerStatuses of the status files (the runtime is not asked). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-common.h"
#include "cli-options.h"
#include "cli.h"
#include "string-util.h"

#define ID_TRUNC 13

typedef struct PsRow {
        int64_t created;
        char *cells[8];
        json_t *json; /* crictl ps -o json's item */
} PsRow;

typedef enum PsOutput {
        PS_OUTPUT_TABLE,
        PS_OUTPUT_JSON,
        PS_OUTPUT_YAML,
} PsOutput;

typedef struct PsContext {
        PsOutput output;
        bool all;
        bool no_trunc;
        bool quiet;
        const char *id_prefix; /* --id / the argument: only IDs starting so */
        int64_t now;
        PsRow *rows;
        size_t n_rows;
} PsContext;

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet ps [OPTIONS] [ID]\n\n"
                   "List containers (running ones; -a adds exited attempts), as `crictl ps`.\n"
                   "ID (or --id) keeps the containers whose ID starts with it; the 13\n"
                   "characters shown are enough, and logs/exec take such a prefix in place\n"
                   "of POD.\n\n"
                   "  -a, --all            include exited containers and previous attempts\n"
                   "      --id PREFIX      only containers whose ID starts with PREFIX\n"
                   "  -q, --quiet          only container IDs\n"
                   "      --no-trunc       full IDs\n"
                   "  -o, --output FORMAT  table (default), json or yaml, as crictl ps "
                   "-o\n" CLI_COMMON_HELP);
}

static void ps_context_done(PsContext *p) {
        for (size_t i = 0; i < p->n_rows; i++) {
                for (size_t k = 0; k < ELEMENTSOF(p->rows[i].cells); k++)
                        free(p->rows[i].cells[k]);
                json_decref(p->rows[i].json);
        }
        free(p->rows);
}

static char *trunc_id(const PsContext *p, const char *id) {
        return strndup(strempty(id), p->no_trunc ? SIZE_MAX : ID_TRUNC);
}

static int add_row(PsContext *p, const CliPod *pod, const json_t *cs, const char *state,
                   const json_t *st, const char *container_id, unsigned attempt) {
        char created[64], buf[64], att[16];
        int64_t started = cli_json_time(st, "startedAt");
        if (started == 0)
                started = cli_json_time(st, "finishedAt");

        if (p->id_prefix) {
                const char *id = cli_container_id_strip(container_id, NULL);
                if (!id || !startswith(id, p->id_prefix))
                        return 0;
        }
        PsRow *nr = reallocarray(p->rows, p->n_rows + 1, sizeof(PsRow));
        if (!nr)
                return -ENOMEM;
        p->rows = nr;
        if (started)
                snprintf(created, sizeof(created), "%s ago",
                         cli_format_human_duration(buf, sizeof(buf), p->now - started));
        else
                snprintf(created, sizeof(created), "Unknown");
        snprintf(att, sizeof(att), "%u", attempt);
        const char *img = cli_json_str(cs, "image");
        const char *full_id = cli_container_id_strip(container_id, NULL);
        char created_ns[32];
        snprintf(created_ns, sizeof(created_ns), "%lld", (long long)started);
        /* crictl's shape: a runtime-independent view of the container. */
        json_t *obj = json_pack(
                "{s:s, s:s, s:{s:s, s:i}, s:{s:s}, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{}}",
                "id", strempty(full_id), "podSandboxId", pod->uid, "metadata", "name",
                strempty(cli_json_str(cs, "name")), "attempt", (int)attempt, "image", "image",
                strempty(img), "imageRef", strempty(cli_json_str(cs, "imageID")), "state",
                streq(state, "Running") ? "CONTAINER_RUNNING" : "CONTAINER_EXITED", "createdAt",
                created_ns, "labels", "io.kubernetes.container.name",
                strempty(cli_json_str(cs, "name")), "io.kubernetes.pod.name", pod->name,
                "io.kubernetes.pod.namespace", pod->namespace, "io.kubernetes.pod.uid", pod->uid,
                "annotations");
        PsRow row = {
                .created = started,
                .json = obj,
                .cells = {
                        trunc_id(p, cli_container_id_strip(container_id, NULL)),
                        strdup(isempty(img) ? "<none>" : img),
                        strdup(created),
                        strdup(state),
                        strdup(strempty(cli_json_str(cs, "name"))),
                        strdup(att),
                        trunc_id(p, pod->uid),
                        strdup(pod->name),
                },
        };
        p->rows[p->n_rows++] = row;
        for (size_t k = 0; k < ELEMENTSOF(row.cells); k++)
                if (!row.cells[k])
                        return -ENOMEM;
        return obj ? 0 : -ENOMEM;
}

/* The attempt of a legacy container ID "<uid>-<name>-<attempt>" (agents
 * before 64-hex IDs, docs/internals/state-files.md); other IDs keep the default. */
static bool attempt_from_id(const char *id, unsigned *ret) {
        const char *dash = id ? strrchr(id, '-') : NULL;
        char *end;
        if (!dash || !dash[1])
                return false;
        errno = 0;
        unsigned long v = strtoul(dash + 1, &end, 10);
        if (errno != 0 || *end || v > UINT32_MAX)
                return false;
        *ret = (unsigned)v;
        return true;
}

static int add_container(PsContext *p, const CliPod *pod, const json_t *cs) {
        json_t *state = cli_json_path(cs, "state", NULL);
        json_t *last = cli_json_path(cs, "lastState", "terminated", NULL);
        const char *id = cli_json_str(cs, "containerID");
        unsigned rc = (unsigned)json_integer_value(cli_json_path(cs, "restartCount", NULL));
        json_t *s;
        int r;

        if ((s = cli_json_path(state, "running", NULL)) && !isempty(id)) {
                r = add_row(p, pod, cs, "Running", s, id, rc);
                if (r < 0)
                        return r;
        } else if (p->all && (s = cli_json_path(state, "terminated", NULL))) {
                const char *tid = cli_json_str(s, "containerID") ?: id;
                if (!isempty(tid)) {
                        r = add_row(p, pod, cs, "Exited", s, tid, rc);
                        if (r < 0)
                                return r;
                }
        }
        if (p->all && last) {
                const char *lid = cli_json_str(last, "containerID");
                unsigned attempt = rc > 0 ? rc - 1 : 0;
                (void)attempt_from_id(cli_container_id_strip(lid, NULL), &attempt);
                /* A waiting container's containerID is its last attempt's. */
                if (!isempty(lid) &&
                    !(cli_json_path(state, "terminated", NULL) && id && streq(lid, id))) {
                        r = add_row(p, pod, cs, "Exited", last, lid, attempt);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int row_compare(const void *a, const void *b) {
        const PsRow *x = a, *y = b;
        /* Newest first, as crictl. */
        return x->created < y->created ? 1 : x->created > y->created ? -1 : 0;
}

int cli_ps(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "all", no_argument, NULL, 'a' },
                { "quiet", no_argument, NULL, 'q' },
                { "no-trunc", no_argument, NULL, 'T' },
                { "output", required_argument, NULL, 'o' },
                { "id", required_argument, NULL, 'I' },
                CLI_COMMON_OPTIONS,
                {},
        };
        static const char *const header[] = { "CONTAINER", "IMAGE",   "CREATED", "STATE",
                                              "NAME",      "ATTEMPT", "POD ID",  "POD" };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_(ps_context_done) PsContext p = { .now = cli_now_nsec() };
        _cleanup_(cli_table_done) CliTable t = {};
        CliCommon c;
        int r, opt;

        cli_options_start(&c, "nanolet ps");
        while ((opt = cli_option_next(&c, argc, argv, "haqo:", options, help)) > 0) {
                switch (opt) {
                case 'a':
                        p.all = true;
                        break;
                case 'q':
                        p.quiet = p.no_trunc = true; /* crictl -q prints full IDs */
                        break;
                case 'T':
                        p.no_trunc = true;
                        break;
                case 'I':
                        p.id_prefix = cli_container_id_strip(optarg, NULL);
                        break;
                case 'o':
                        if (streq(optarg, "json"))
                                p.output = PS_OUTPUT_JSON;
                        else if (streq(optarg, "yaml"))
                                p.output = PS_OUTPUT_YAML;
                        else if (streq(optarg, "table"))
                                p.output = PS_OUTPUT_TABLE;
                        else {
                                fprintf(stderr,
                                        "%s: unknown output format \"%s\" (table, json, yaml)\n",
                                        c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (cli_options_end(&c, opt, argc, argv, CLI_OPERANDS_ANY, &r))
                return r;
        if (optind < argc && !p.id_prefix)
                p.id_prefix = cli_container_id_strip(argv[optind++], NULL);
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument \"%s\" (one ID prefix at most)\n", c.prog,
                        argv[optind]);
                return EXIT_USAGE;
        }
        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        for (size_t i = 0; i < l.n; i++) {
                json_t *status = cli_json_path(l.pods[i].json, "status", NULL);
                static const char *const lists[] = { "initContainerStatuses", "containerStatuses" };
                for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
                        size_t j;
                        json_t *cs;
                        json_array_foreach(cli_json_path(status, lists[k], NULL), j, cs) {
                                r = add_container(&p, &l.pods[i], cs);
                                if (r < 0)
                                        goto oom;
                        }
                }
        }
        if (p.n_rows > 0)
                qsort(p.rows, p.n_rows, sizeof(PsRow), row_compare);

        if (p.output != PS_OUTPUT_TABLE) {
                _cleanup_json_ json_t *items = json_array();
                _cleanup_json_ json_t *doc = NULL;
                bool ok = items != NULL;
                for (size_t i = 0; ok && i < p.n_rows; i++)
                        ok = json_array_append(items, p.rows[i].json) >= 0;
                if (!ok || !(doc = json_pack("{s:O}", "containers", items))) {
                        r = -ENOMEM;
                        goto oom;
                }
                if (p.output == PS_OUTPUT_YAML)
                        r = cli_json_dump_yaml(doc, stdout);
                else {
                        r = json_dumpf(doc, stdout, JSON_INDENT(2)) < 0 ? -EIO : 0;
                        putchar('\n');
                }
                if (r < 0)
                        goto oom;
                return EXIT_OK;
        }
        if (p.quiet) {
                for (size_t i = 0; i < p.n_rows; i++)
                        printf("%s\n", p.rows[i].cells[0]);
                return EXIT_OK;
        }
        r = cli_table_init(&t, header, ELEMENTSOF(header));
        for (size_t i = 0; r >= 0 && i < p.n_rows; i++)
                r = cli_table_add_row(&t, (const char *const *)p.rows[i].cells);
        if (r < 0)
                goto oom;
        cli_table_print(&t, stdout);
        return EXIT_OK;
oom:
        fprintf(stderr, "%s: %s\n", c.prog, strerror(-r));
        return EXIT_ERROR;
}
