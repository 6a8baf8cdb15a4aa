#include "cli-options.h"

#include "cli.h"
#include "getopt-util.h"

void cli_options_start(CliCommon *c, const char *prog) {
        cli_common_init(c, prog);
        optind = 0;
}

int cli_option_next(CliCommon *c, int argc, char **argv, const char *optstring,
                    const struct option *longopts, void (*help)(FILE *f)) {
        for (;;) {
                char err[512];
                int opt = getopt_whole(argc, argv, optstring, longopts, false, err, sizeof err);
                if (opt < 0)
                        return CLI_OPTIONS_END;
                if (cli_common_option(c, opt, optarg))
                        continue;
                if (opt == 'h') {
                        help(stdout);
                        return CLI_OPTIONS_HELP;
                }
                if (opt == '?') {
                        fprintf(stderr, "%s: %s\n", c->prog, err);
                        return CLI_OPTIONS_USAGE;
                }
                return opt;
        }
}

bool cli_options_end(const CliCommon *c, int end, int argc, char **argv, int max_operands,
                     int *ret_exit) {
        if (end == CLI_OPTIONS_HELP) {
                *ret_exit = EXIT_OK;
                return true;
        }
        if (end != CLI_OPTIONS_END) {
                *ret_exit = EXIT_USAGE;
                return true;
        }
        if (max_operands != CLI_OPERANDS_ANY && argc - optind > max_operands) {
                fprintf(stderr, "%s: unexpected argument \"%s\"\n", c->prog,
                        argv[optind + max_operands]);
                *ret_exit = EXIT_USAGE;
                return true;
        }
        return false;
}
