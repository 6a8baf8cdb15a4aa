/* The option loop of the client subcommands (pods, ps, logs, exec, node,
 * events): getopt_long() with CLI_COMMON_OPTIONS and -h/--help answered in
 * one place, so that a subcommand's loop names only its own options. */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "cli-common.h"

/* What cli_option_next() returns once the subcommand's own options are over. */
enum {
        CLI_OPTIONS_END = -1,   /* no more options: optind is at the first operand */
        CLI_OPTIONS_HELP = -2,  /* --help was printed on stdout: exit EXIT_OK */
        CLI_OPTIONS_USAGE = -3, /* an unknown option (an abbreviation is one) or a
                                 * missing argument, said on stderr in pflag's
                                 * words: exit EXIT_USAGE */
};

/* cli_common_init() and getopt restarted at argv[1]: call before the first
 * cli_option_next() of a command. */
void cli_options_start(CliCommon *c, const char *prog);

/* The next option of the subcommand's own (> 0, its argument in optarg), or
 * one of the CLI_OPTIONS_* above. A common option is stored in c and -h
 * (which optstring and longopts must name) calls help(stdout) on the way. */
int cli_option_next(CliCommon *c, int argc, char **argv, const char *optstring,
                    const struct option *longopts, void (*help)(FILE *f));

#define CLI_OPERANDS_ANY (-1)

/* After the loop, with what cli_option_next() returned last: true when the
 * command exits now, with *ret_exit: EXIT_OK after --help, EXIT_USAGE after
 * getopt's error or with more than max_operands operands (said on stderr;
 * CLI_OPERANDS_ANY leaves them to the command). */
bool cli_options_end(const CliCommon *c, int end, int argc, char **argv, int max_operands,
                     int *ret_exit);
