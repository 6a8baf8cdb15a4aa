/* nanolet node: the node's conditions (MemoryPressure, DiskPressure,
 * PIDPressure) and the eviction signals the agent observed, from
 * <run-dir>/status/node.json (eviction.h), as `kubectl describe node`
 * lists conditions. */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "cli.h"
#include "fileio.h"
#include "string-util.h"

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet node [OPTIONS]\n\n"
                   "Print the node's pressure conditions and the eviction signals the agent\n"
                   "observed last.\n\n"
                   "  -o json             the status file as it is\n" CLI_COMMON_HELP);
}

int cli_node(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "output", required_argument, NULL, 'o' },
                CLI_COMMON_OPTIONS,
                {},
        };
        CliCommon c;
        bool as_json = false;
        int opt;

        cli_common_init(&c, "nanolet node");
        optind = 0;
        while ((opt = getopt_long(argc, argv, "ho:", options, NULL)) >= 0) {
                if (cli_common_option(&c, opt, optarg))
                        continue;
                switch (opt) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case 'o':
                        if (!streq(optarg, "json")) {
                                fprintf(stderr, "%s: -o takes \"json\"\n", c.prog);
                                return EXIT_USAGE;
                        }
                        as_json = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument \"%s\"\n", c.prog, argv[optind]);
                return EXIT_USAGE;
        }
        _cleanup_free_ char *path = strprintf("%s/status/node.json", c.run_dir), *text = NULL;
        size_t size;
        if (!path)
                return EXIT_ERROR;
        int r = read_full_file_at(AT_FDCWD, path, 1 << 20, &text, &size);
        if (r < 0) {
                fprintf(stderr, "%s: cannot read \"%s\" (is the agent running?): %s\n", c.prog,
                        path, strerror(-r));
                return EXIT_ERROR;
        }
        if (as_json) {
                fwrite(text, 1, size, stdout);
                putchar('\n');
                return EXIT_OK;
        }
        json_t *j = json_loadb(text, size, 0, NULL);
        if (!json_is_object(j)) {
                json_decref(j);
                fprintf(stderr, "%s: \"%s\" is not a node status\n", c.prog, path);
                return EXIT_ERROR;
        }
        printf("%-16s %-6s %-22s %-32s %s\n", "CONDITION", "STATUS", "LAST TRANSITION", "REASON",
               "MESSAGE");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(j, "conditions"), i, e)
                printf("%-16s %-6s %-22s %-32s %s\n", strempty(cli_json_str(e, "type")),
                       strempty(cli_json_str(e, "status")),
                       strempty(cli_json_str(e, "lastTransitionTime")),
                       strempty(cli_json_str(e, "reason")), strempty(cli_json_str(e, "message")));
        printf("\n%-20s %20s %20s\n", "SIGNAL", "AVAILABLE", "CAPACITY");
        const char *key;
        json_t *v;
        json_object_foreach(json_object_get(j, "signals"), key, v)
                printf("%-20s %20lld %20lld\n", key,
                       (long long)json_integer_value(json_object_get(v, "available")),
                       (long long)json_integer_value(json_object_get(v, "capacity")));
        json_decref(j);
        return EXIT_OK;
}
