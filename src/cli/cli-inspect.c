/* nanolet inspect POD: the pod's status file pretty-printed, plus what the
 * runtime says about each of its current containers under "runtime"
 * ({"<container>": <runc state> or {"error": "..."}}), then the pod
 * worker's state (annotation nanolet.io/worker-state) and the pod's events
 * as kubectl describe ends with them. With -o json stdout is one JSON
 * document instead, the events (v1 Events) under "events". */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli-common.h"
#include "cli.h"
#include "getopt-util.h"
#include "string-util.h"

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet inspect [OPTIONS] POD\n\n"
                   "Print a pod's status (a v1 Pod) and the runtime's state of its containers\n"
                   "as a JSON document, followed by the agent's state of the pod (Worker state:\n"
                   "adopting, admitting, running, terminating, ...) and the pod's events as\n"
                   "kubectl describe shows them. POD is NAME or NAMESPACE/NAME, with or without\n"
                   "the node suffix.\n\n"
                   "  -o, --output json   one JSON document only, the events under "
                   "\"events\"\n" CLI_COMMON_HELP);
}

static char *strip_trailing(char *s) {
        size_t n = strlen(s);
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' '))
                s[--n] = 0;
        return s;
}

/* `<runtime> --root <run-dir>/runc state <id>` as a JSON value. */
static json_t *runtime_state(const CliCommon *c, const char *container_id) {
        _cleanup_free_ char *root = cli_runtime_root(c), *out = NULL, *err = NULL;
        const char *id = cli_container_id_strip(container_id, NULL);
        int status, r;

        if (!root)
                return NULL;
        char *argv[] = {
                (char *)cli_runtime_for(c, container_id), "--root", root, "state", (char *)id, NULL
        };
        r = cli_run_capture(argv, &out, &err, &status);
        if (r < 0)
                return json_pack("{s:s}", "error", strerror(-r));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                _cleanup_free_ char *msg = NULL;
                if (isempty(strip_trailing(err)))
                        msg = strprintf("%s state exited with status %d", argv[0],
                                        WIFEXITED(status) ? WEXITSTATUS(status)
                                                          : 128 + WTERMSIG(status));
                return json_pack("{s:s}", "error", msg ? msg : err);
        }
        json_error_t jerr;
        json_t *j = json_loads(out, 0, &jerr);
        if (!j)
                return json_pack("{s:s, s:s}", "error", "unparsable runtime output", "output", out);
        return j;
}

static int add_runtime_states(const CliCommon *c, json_t *pod, json_t *target) {
        static const char *const lists[] = { "initContainerStatuses", "containerStatuses" };
        for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
                size_t i;
                json_t *cs;
                json_array_foreach(cli_json_path(pod, "status", lists[k], NULL), i, cs) {
                        const char *name = cli_json_str(cs, "name"),
                                   *id = cli_json_str(cs, "containerID");
                        if (isempty(name) || isempty(id))
                                continue;
                        json_t *st = runtime_state(c, id);
                        if (!st || json_object_set_new(target, name, st) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* The document for a terminal: jansson escapes C0 controls in strings but
 * writes the C1 range, the line separators and the bidirectional controls
 * as UTF-8; those become \uNNNN here, which reads back as the same string. */
static int print_json_for_terminal(const json_t *j, FILE *f) {
        _cleanup_free_ char *text = json_dumps(j, JSON_INDENT(4));
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        for (size_t i = 0; i < n;) {
                char buf[ESCAPE_ONE_MAX];
                size_t k = 1, m = 1;
                if ((unsigned char)text[i] < 0x80)
                        buf[0] = text[i]; /* structure, ASCII, or jansson's own escapes */
                else
                        m = escape_one(text + i, n - i, 0, buf, &k);
                i += m;
                if (fwrite(buf, 1, k, f) != k)
                        return -EIO;
        }
        return 0;
}

int cli_inspect(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "output", required_argument, NULL, 'o' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_json_ json_t *out = NULL, *runtime = NULL, *events = NULL;
        const CliPod *pod;
        bool json_only = false;
        CliCommon c;
        char err[512];
        int opt, r;

        cli_common_init(&c, "nanolet inspect");
        optind = 0;
        while ((opt = getopt_whole(argc, argv, "ho:", options, false, err, sizeof err)) >= 0) {
                if (cli_common_option(&c, opt, optarg))
                        continue;
                if (opt == 'h') {
                        help(stdout);
                        return EXIT_OK;
                }
                if (opt == '?')
                        fprintf(stderr, "%s: %s\n", c.prog, err);
                if (opt == 'o' && streq(optarg, "json")) {
                        json_only = true;
                        continue;
                }
                if (opt == 'o')
                        fprintf(stderr, "%s: unknown output format \"%s\" (json)\n", c.prog,
                                optarg);
                return EXIT_USAGE;
        }
        if (argc - optind != 1) {
                fprintf(stderr, "%s: expected exactly one POD\n", c.prog);
                return EXIT_USAGE;
        }
        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        if (cli_pod_find(&c, &l, argv[optind], &pod) < 0)
                return EXIT_ERROR;

        out = json_copy(pod->json);
        runtime = json_object();
        if (!out || !runtime)
                goto oom;
        if (add_runtime_states(&c, pod->json, runtime) < 0 ||
            json_object_set(out, "runtime", runtime) < 0)
                goto oom;
        r = cli_events_load(&c, pod->uid, &events);
        if (r < 0) {
                fprintf(stderr, "%s: warning: cannot read the events of %s/%s: %s\n", c.prog,
                        pod->namespace, pod->name, strerror(-r));
                events = json_array();
                if (!events)
                        goto oom;
        }
        if (json_only && json_object_set(out, "events", events) < 0)
                goto oom;
        bool written = (json_only ? json_dumpf(out, stdout, JSON_INDENT(4))
                                  : print_json_for_terminal(out, stdout)) >= 0 &&
                       putchar('\n') != EOF;
        if (written && !json_only) {
                putchar('\n');
                /* A name of the agent's own (docs/internals/state-files.md); the
                 * status file is another program's input: printed escaped. */
                const char *phase =
                        cli_json_str(cli_json_path(pod->json, "metadata", "annotations", NULL),
                                     "nanolet.io/worker-state");
                if (phase) {
                        _cleanup_free_ char *shown = str_escape(phase, 0);
                        if (!shown)
                                goto oom;
                        printf("Worker state:  %s\n\n", shown);
                }
                if (cli_events_print_describe(events, cli_now_nsec(), stdout) < 0)
                        goto oom;
        }
        if (!written || fflush(stdout) != 0) {
                fprintf(stderr, "%s: cannot write output: %m\n", c.prog);
                return EXIT_ERROR;
        }
        return EXIT_OK;
oom:
        fprintf(stderr, "%s: out of memory\n", c.prog);
        return EXIT_ERROR;
}
