/* nanolet node: the node's capacity and allocatable (capacity minus
 * --kube-reserved and --system-reserved) as the running agent recorded them
 * in <run-dir>/node.json at start (docs/resources.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "cli.h"
#include "fileio.h"
#include "string-util.h"

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet node [OPTIONS]\n\n"
                   "Print the node's capacity and allocatable (cpu, memory, pods) and the\n"
                   "cgroup driver and root the agent runs with.\n\n"
                   "  -o json             print the agent's record as it is\n" CLI_COMMON_HELP);
}

int cli_node(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "output", required_argument, NULL, 'o' },
                CLI_COMMON_OPTIONS,
                {},
        };
        CliCommon c;
        bool json = false;
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
                                fprintf(stderr, "%s: unknown output format \"%s\"\n", c.prog,
                                        optarg);
                                return EXIT_USAGE;
                        }
                        json = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument \"%s\"\n", c.prog, argv[optind]);
                return EXIT_USAGE;
        }
        _cleanup_free_ char *path = strprintf("%s/node.json", c.run_dir), *data = NULL;
        size_t size;
        if (!path)
                return EXIT_ERROR;
        int r = read_full_file_at(AT_FDCWD, path, 65536, &data, &size);
        if (r < 0) {
                fprintf(stderr, "%s: cannot read %s (is the agent running?): %s\n", c.prog, path,
                        strerror(-r));
                return EXIT_ERROR;
        }
        if (json) {
                fputs(data, stdout);
                return EXIT_OK;
        }
        json_t *j = json_loads(data, 0, NULL);
        if (!j) {
                fprintf(stderr, "%s: %s is not valid JSON\n", c.prog, path);
                return EXIT_ERROR;
        }
        printf("Name:           %s\n", strempty(cli_json_str(j, "name")));
        printf("Cgroup driver:  %s, root %s\n", strempty(cli_json_str(j, "cgroupDriver")),
               strempty(cli_json_str(j, "cgroupRoot")));
        static const char *const sections[] = { "capacity", "Capacity", "allocatable",
                                                "Allocatable" };
        for (size_t i = 0; i < 4; i += 2) {
                json_t *s = json_object_get(j, sections[i]);
                printf("%s:\n", sections[i + 1]);
                printf("  cpu:     %s\n", strempty(cli_json_str(s, "cpu")));
                printf("  memory:  %s\n", strempty(cli_json_str(s, "memory")));
                printf("  pods:    %s\n", strempty(cli_json_str(s, "pods")));
        }
        json_decref(j);
        return EXIT_OK;
}
