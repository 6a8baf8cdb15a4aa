/* nanolet pods: the static pods as kubectl get pods shows them, read from the
 * agent's status files, followed by the manifest errors of the sources. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli-common.h"
#include "cli.h"
#include "log.h"
#include "string-util.h"

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
                   "  -A, --all-namespaces all namespaces (the default)\n" CLI_COMMON_HELP);
}

static const char *pod_ip(const json_t *pod) {
        json_t *ips = cli_json_path(pod, "status", "podIPs", NULL);
        const char *ip = cli_json_str(json_array_get(ips, 0), "ip");
        if (isempty(ip))
                ip = cli_json_str(cli_json_path(pod, "status", NULL), "podIP");
        return isempty(ip) ? "<none>" : ip;
}

static int print_table(const CliPodList *l, const char *ns, bool wide) {
        static const char *const header[] = { "NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS",
                                              "AGE",       "IP",   "NODE",  "UID" };
        _cleanup_(cli_table_done) CliTable t = {};
        int64_t now = cli_now_nsec();
        size_t ncol = wide ? ELEMENTSOF(header) : 7, shown = 0;
        int r;

        r = cli_table_init(&t, header, ncol);
        if (r < 0)
                return r;
        for (size_t i = 0; i < l->n; i++) {
                const CliPod *p = &l->pods[i];
                _cleanup_(cli_pod_summary_done) PodSummary s = {};
                char ready[32], restarts[64], age[32];

                if (ns && !streq(p->namespace, ns))
                        continue;
                r = cli_pod_summarize(p->json, &s);
                if (r < 0)
                        return r;
                snprintf(ready, sizeof(ready), "%u/%u", s.ready, s.total);
                const char *row[] = {
                        p->namespace,
                        p->name,
                        ready,
                        s.status,
                        cli_pod_format_restarts(restarts, sizeof(restarts), &s, now),
                        cli_format_age_since(age, sizeof(age),
                                             cli_json_time(cli_json_path(p->json, "metadata", NULL),
                                                           "creationTimestamp"),
                                             now),
                        pod_ip(p->json),
                        p->node ? p->node : "<none>",
                        p->uid,
                };
                r = cli_table_add_row(&t, row);
                if (r < 0)
                        return r;
                shown++;
        }
        if (shown == 0) {
                fprintf(stderr, ns ? "No pods found in %s namespace.\n" : "No pods found.\n", ns);
                return 0;
        }
        cli_table_print(&t, stdout);
        return 0;
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
        json_array_foreach(errors, i, e) {
                json_t *messages = cli_json_path(e, "messages", NULL);
                const char *origin = cli_json_str(e, "origin");
                if (json_array_size(messages) == 0) {
                        fprintf(f, "  %s: error\n", strna(origin));
                        continue;
                }
                json_array_foreach(messages, k, m) if (json_is_string(m))
                        fprintf(f, "  %s\n", json_string_value(m));
        }
}

int cli_pods(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "output", required_argument, NULL, 'o' },
                { "namespace", required_argument, NULL, 'n' },
                { "all-namespaces", no_argument, NULL, 'A' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_json_ json_t *errors = NULL;
        PodsOutput output = PODS_OUTPUT_TABLE;
        const char *ns = NULL;
        CliCommon c;
        int r, opt;

        cli_common_init(&c, "nanolet pods");
        optind = 0;
        while ((opt = getopt_long(argc, argv, "ho:n:A", options, NULL)) >= 0) {
                if (cli_common_option(&c, opt, optarg))
                        continue;
                switch (opt) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
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
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument \"%s\"\n", c.prog, argv[optind]);
                return EXIT_USAGE;
        }

        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        r = cli_source_errors_load(&c, &errors);
        if (r < 0)
                fprintf(stderr, "%s: warning: cannot read %s/status/sources.json: %s\n", c.prog,
                        c.run_dir, strerror(-r));

        if (output == PODS_OUTPUT_TABLE || output == PODS_OUTPUT_WIDE)
                r = print_table(&l, ns, output == PODS_OUTPUT_WIDE);
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
        return EXIT_OK;
}
