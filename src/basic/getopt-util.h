/* getopt_long() as kubelet's flag parser (pflag) reads a command line: a
 * long option is known by its whole name only. glibc's getopt_long()
 * accepts any unambiguous abbreviation ("--root" for "--root-dir"), which
 * would make a later option that shares the prefix change what an old
 * command line means, and lets a typo pass; pflag has no abbreviations.
 * Errors are not printed: the caller gets pflag's sentence and says it in
 * its own voice (a log line in the agent, "prog: ..." in a client). */
#pragma once

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

/* The option getopt_long() (long_only: getopt_long_only()) returns, or -1
 * at the end, or '?' with err holding one of pflag's sentences:
 *   unknown flag: --max-pod           (also an abbreviation of a known one)
 *   unknown shorthand flag: 'x' in -x
 *   flag needs an argument: --root-dir
 *   flag needs an argument: 'c' in -c
 *   flag does not take a value: --help
 * The flag is shown as written up to any '=', escaped, at most 64 bytes.
 * optstring is getopt's, without a leading ':' (added here); opterr is
 * set to 0. optind and optarg work as for getopt_long(). */
int getopt_whole(int argc, char **argv, const char *optstring, const struct option *longopts,
                 bool long_only, char *err, size_t err_size);
