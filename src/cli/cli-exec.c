/* nanolet exec [-i] [-t] POD [-c C] -- CMD...: runs a command in a running
 * container. The runtime ID comes from the status file; then nanolet
 * replaces itself with `runc --root <run-dir>/runc exec [--tty] ID CMD...`,
 * so the terminal, signals and the exit code are the command's own. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli-common.h"
#include "cli-options.h"
#include "cli.h"
#include "string-util.h"
#include "strv.h"

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet exec [OPTIONS] POD [-c CONTAINER] -- COMMAND [ARG...]\n\n"
                   "Run a command in a running container; the exit status is the command's.\n\n"
                   "  -c, --container NAME  container (default: the only one, or the\n"
                   "                        kubectl.kubernetes.io/default-container annotation)\n"
                   "  -i, --stdin           pass stdin to the command\n"
                   "  -t, --tty             allocate a terminal\n" CLI_COMMON_HELP);
}

int cli_exec(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "container", required_argument, NULL, 'c' },
                { "stdin", no_argument, NULL, 'i' },
                { "tty", no_argument, NULL, 't' },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        /* Every _cleanup_ variable is declared before the first "goto oom":
         * a jump past one would free an uninitialised pointer. */
        _cleanup_strv_free_ char **cmd = NULL, **args = NULL;
        _cleanup_free_ char *root = NULL;
        const char *container = NULL, *pod_arg = NULL;
        bool interactive = false, tty = false;
        const CliPod *pod;
        json_t *cs = NULL;
        CliCommon c;
        int opt, nopt = argc, r;

        cli_options_start(&c, "nanolet exec");
        /* Options end at "--"; without it at the first word after POD (GNU
         * getopt would otherwise take the command's own options). */
        for (int i = 1; i < argc; i++)
                if (streq(argv[i], "--")) {
                        nopt = i;
                        break;
                }
        while ((opt = cli_option_next(&c, nopt, argv, nopt == argc ? "+hc:it" : "hc:it", options,
                                      help)) > 0) {
                switch (opt) {
                case 'c':
                        container = optarg;
                        break;
                case 'i':
                        interactive = true;
                        break;
                case 't':
                        tty = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (cli_options_end(&c, opt, nopt, argv, CLI_OPERANDS_ANY, &r))
                return r;
        if (optind >= nopt) {
                fprintf(stderr, "%s: no POD given (nanolet exec POD -- COMMAND..., see --help)\n",
                        c.prog);
                return EXIT_USAGE;
        }
        pod_arg = argv[optind++];
        if (nopt == argc) {
                /* kubectl's deprecated form: exec POD CMD... */
                for (int i = optind; i < argc; i++)
                        if (strv_extend(&cmd, argv[i]) < 0)
                                goto oom;
        } else {
                if (optind < nopt) {
                        fprintf(stderr, "%s: unexpected argument \"%s\" before \"--\"\n", c.prog,
                                argv[optind]);
                        return EXIT_USAGE;
                }
                for (int i = nopt + 1; i < argc; i++)
                        if (strv_extend(&cmd, argv[i]) < 0)
                                goto oom;
        }
        if (strv_length(cmd) == 0) {
                fprintf(stderr, "%s: no COMMAND given (nanolet exec POD -- COMMAND...)\n", c.prog);
                return EXIT_USAGE;
        }

        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        if (cli_container_find(&c, &l, pod_arg, &container, &pod, &cs) < 0)
                return EXIT_ERROR;
        const char *id = cli_json_str(cs, "containerID");
        if (!cli_json_path(cs, "state", "running", NULL) || isempty(id)) {
                fprintf(stderr, "%s: container %s in pod %s/%s is not running\n", c.prog, container,
                        pod->namespace, pod->name);
                return EXIT_ERROR;
        }

        if (tty && !isatty(STDIN_FILENO)) {
                /* runc would fail opening /dev/tty; kubectl goes on without. */
                fprintf(stderr, "%s: Unable to use a TTY - input is not a terminal\n", c.prog);
                tty = false;
        }

        root = cli_runtime_root(&c);
        if (!root)
                goto oom;
        const char *runtime = cli_runtime_for(&c, id);
        if (strv_extend(&args, runtime) < 0 || strv_extend(&args, "--root") < 0 ||
            strv_extend(&args, root) < 0 || strv_extend(&args, "exec") < 0 ||
            (tty && strv_extend(&args, "--tty") < 0) ||
            strv_extend(&args, cli_container_id_strip(id, NULL)) < 0)
                goto oom;
        STRV_FOREACH(a, cmd)
                if (strv_extend(&args, *a) < 0)
                        goto oom;

        if (!interactive && !tty) {
                /* Like kubectl without -i: the command gets no input. (A
                 * terminal keeps its input: runc's pty relays it.) */
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0) {
                        fprintf(stderr, "%s: cannot open /dev/null: %m\n", c.prog);
                        return EXIT_ERROR;
                }
                if (null != STDIN_FILENO)
                        (void)close(null);
        }
        fflush(NULL);
        execvp(args[0], args);
        fprintf(stderr, "%s: cannot execute %s: %m\n", c.prog, args[0]);
        return EXIT_ERROR;
oom:
        fprintf(stderr, "%s: out of memory\n", c.prog);
        return EXIT_ERROR;
}
