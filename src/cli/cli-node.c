/* nanolet node: what the running agent recorded of the node, as `kubectl
 * describe node` shows it: capacity and allocatable (capacity minus
 * --kube-reserved and --system-reserved) from <run-dir>/node.json, written
 * at start (docs/resources.md), then the pressure conditions
 * (MemoryPressure, DiskPressure, PIDPressure) and the eviction signals from
 * <run-dir>/node-conditions.json, kept current by the eviction manager
 * (docs/eviction.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "cli-common.h"
#include "cli-options.h"
#include "cli.h"
#include "fileio.h"
#include "string-util.h"

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet node [OPTIONS]\n\n"
                   "Print the node's capacity and allocatable (cpu, memory, pods), the cgroup\n"
                   "driver and root the agent runs with, its pressure conditions and the\n"
                   "eviction signals it observed last.\n\n"
                   "  -o json             both records as one object\n" CLI_COMMON_HELP);
}

/* The JSON object in run_dir/name; NULL with a message when it cannot be
 * read (quiet when missing and !required). */
static json_t *load_record(const CliCommon *c, const char *name, bool required) {
        _cleanup_free_ char *path = strprintf("%s/%s", c->run_dir, name);
        Error err = {};
        json_t *j = NULL;

        if (!path)
                return NULL;
        int r = json_state_load_at(AT_FDCWD, path, 1 << 20, &j, &err);
        if (r == -ENOENT && required)
                fprintf(stderr, "%s: cannot read %s (is the agent running?): %s\n", c->prog, path,
                        strerror(-r));
        else if (r < 0 && r != -ENOENT)
                fprintf(stderr, "%s: %s: not a node record\n", c->prog,
                        err.message[0] ? err.message : strerror(-r));
        return r < 0 ? NULL : j;
}

static void print_resources(const json_t *j) {
        static const char *const sections[] = { "capacity", "Capacity", "allocatable",
                                                "Allocatable" };

        printf("Name:           %s\n", strempty(cli_json_str(j, "name")));
        printf("Cgroup driver:  %s, root %s\n", strempty(cli_json_str(j, "cgroupDriver")),
               strempty(cli_json_str(j, "cgroupRoot")));
        for (size_t i = 0; i < ELEMENTSOF(sections); i += 2) {
                json_t *s = json_object_get(j, sections[i]);
                printf("%s:\n", sections[i + 1]);
                printf("  cpu:     %s\n", strempty(cli_json_str(s, "cpu")));
                printf("  memory:  %s\n", strempty(cli_json_str(s, "memory")));
                printf("  pods:    %s\n", strempty(cli_json_str(s, "pods")));
        }
}

static void print_pressure(const json_t *j) {
        const char *key;
        size_t i;
        json_t *e, *v;

        printf("\n%-16s %-6s %-22s %-32s %s\n", "CONDITION", "STATUS", "LAST TRANSITION", "REASON",
               "MESSAGE");
        json_array_foreach(json_object_get(j, "conditions"), i, e)
                printf("%-16s %-6s %-22s %-32s %s\n", strempty(cli_json_str(e, "type")),
                       strempty(cli_json_str(e, "status")),
                       strempty(cli_json_str(e, "lastTransitionTime")),
                       strempty(cli_json_str(e, "reason")), strempty(cli_json_str(e, "message")));
        printf("\n%-20s %20s %20s\n", "SIGNAL", "AVAILABLE", "CAPACITY");
        json_object_foreach(json_object_get(j, "signals"), key, v)
                printf("%-20s %20lld %20lld\n", key,
                       (long long)json_integer_value(json_object_get(v, "available")),
                       (long long)json_integer_value(json_object_get(v, "capacity")));
}

int cli_node(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "output", required_argument, NULL, 'o' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_json_ json_t *resources = NULL, *pressure = NULL;
        CliCommon c;
        bool json = false;
        int opt, r;

        cli_options_start(&c, "nanolet node");
        while ((opt = cli_option_next(&c, argc, argv, "ho:", options, help)) > 0) {
                switch (opt) {
                case 'o':
                        if (!streq(optarg, "json")) {
                                fprintf(stderr, "%s: unknown output format \"%s\" (json)\n", c.prog,
                                        optarg);
                                return EXIT_USAGE;
                        }
                        json = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (cli_options_end(&c, opt, argc, argv, 0, &r))
                return r;
        resources = load_record(&c, "node.json", true);
        if (!resources)
                return EXIT_ERROR;
        /* Written by the eviction manager's first pass, seconds after start. */
        pressure = load_record(&c, "node-conditions.json", false);
        if (json) {
                if (pressure && json_object_update(resources, pressure) < 0)
                        return EXIT_ERROR;
                if (json_dumpf(resources, stdout, JSON_INDENT(2)) < 0)
                        return EXIT_ERROR;
                putchar('\n');
                return EXIT_OK;
        }
        print_resources(resources);
        if (pressure)
                print_pressure(pressure);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
}
