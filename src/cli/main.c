/* nanolet: `serve` is the agent, every other verb is a client. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "disk-usage.h"
#include "helper.h"
#include "image-gc.h"
#include "image-pull.h"
#include "image.h"
#include "log-rotate.h"
#include "log.h"
#include "macro.h"
#include "runtime.h"
#include "self-helper.h"

static const struct {
        const char *verb;
        int (*run)(int argc, char **argv);
        const char *help;
} verbs[] = {
        { "serve", cli_serve, "run the agent" },
        { "validate", cli_validate, "check manifests before dropping them in" },
        { "version", cli_version, "print the version" },
        { "image", cli_image, "pull, load, list, inspect, tag, remove and prune images" },
        { "pods", cli_pods, "list the static pods and their status" },
        { "ps", cli_ps, "list containers" },
        { "inspect", cli_inspect, "print a pod's status, runtime state and events" },
        { "events", cli_events, "list (or watch) the pods' events" },
        { "logs", cli_logs, "print (or follow) a container's logs" },
        { "exec", cli_exec, "run a command in a running container" },
        { "node", cli_node, "print the node's capacity, allocatable and pressure conditions" },
};

/* Internal, not in help(): the agent re-executes this binary for blocking
 * file work (helper.h), one mode per module that owns such work. */
static const HelperMain *const helpers[] = {
        &image_unpack_rootfs_helper, &image_flush_helper, &image_pull_helper,
        &log_rotate_helper,          &disk_usage_helper,  &image_gc_helper,
};

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet COMMAND [OPTIONS]\n\nCommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                fprintf(f, "  %-10s %s\n", verbs[i].verb, verbs[i].help);
        fprintf(f, "\nRun 'nanolet COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv) {
        /* The pod PID-namespace holder is this binary re-executed. */
        if (argc > 0 && streq(argv[0], SANDBOX_HOLDER_ARGV0))
                return sandbox_holder_main(argc, argv);
        log_setup();
        if (argc > 1 && streq(argv[1], SELF_HELPER_VERB))
                return helper_main(helpers, ELEMENTSOF(helpers), argc - 2, argv + 2);

        if (argc < 2) {
                help(stderr);
                return EXIT_USAGE;
        }
        if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                help(stdout);
                return EXIT_OK;
        }
        if (streq(argv[1], "--version"))
                return cli_version(argc - 1, argv + 1);
        for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(argv[1], verbs[i].verb))
                        return verbs[i].run(argc - 1, argv + 1);
        fprintf(stderr, "nanolet: unknown command \"%s\"\n\n", argv[1]);
        help(stderr);
        return EXIT_USAGE;
}
