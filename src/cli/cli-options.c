#include "cli-options.h"

#include "cli.h"

void cli_options_start(CliCommon *c, const char *prog) {
        cli_common_init(c, prog);
        optind = 0;
}

int cli_option_next(CliCommon *c, int argc, char **argv, const char *optstring,
                    const struct option *longopts, void (*help)(FILE *f)) {
        for (;;) {
                int opt = getopt_long(argc, argv, optstring, longopts, NULL);
                if (opt < 0)
                        return CLI_OPTIONS_END;
                if (cli_common_option(c, opt, optarg))
                        continue;
                if (opt == 'h') {
                        help(stdout);
                        return CLI_OPTIONS_HELP;
                }
                /* getopt's '?' (or ':' with a leading ':' in optstring): it has
                 * said on stderr what was wrong. */
                if (opt == '?' || opt == ':')
                        return CLI_OPTIONS_USAGE;
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
