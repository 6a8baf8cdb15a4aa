/* src/cli/cli-options: the client subcommands' option loop (common
 * directory options, --help, getopt's errors, the command's own options). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cli-options.h"
#include "cli.h"
#include "macro.h"

static unsigned helps;

static void help(FILE *f) {
        assert_ptr_equal(f, stdout);
        helps++;
}

static const struct option options[] = {
        { "help", no_argument, NULL, 'h' },
        { "output", required_argument, NULL, 'o' },
        { "watch", no_argument, NULL, 'w' },
        CLI_COMMON_OPTIONS,
        {},
};

/* Runs the loop over argv as a subcommand does: the own options, in order,
 * into own[] ('o' followed by its argument's first letter), and the end. */
static int parse(CliCommon *c, char **argv, char *own, size_t own_size) {
        int argc = 0, opt;
        size_t n = 0;

        while (argv[argc])
                argc++;
        cli_options_start(c, "nanolet test");
        while ((opt = cli_option_next(c, argc, argv, "ho:w", options, help)) > 0) {
                assert_true(n + 2 < own_size);
                own[n++] = (char)opt;
                if (opt == 'o')
                        own[n++] = optarg[0];
        }
        own[n] = 0;
        return opt;
}

static void test_own_and_common(void **state) {
        char *argv[] = { "test",         "--root-dir",     "/r",  "-w",        "--output=json",
                         "--run-dir=/x", "--pod-logs-dir", "/l",  "--runtime", "crun",
                         "-o",           "yaml",           "POD", NULL };
        char own[16];
        CliCommon c;

        helps = 0;
        assert_int_equal(parse(&c, argv, own, sizeof(own)), CLI_OPTIONS_END);
        assert_string_equal(own, "wojoy");
        assert_string_equal(c.prog, "nanolet test");
        assert_string_equal(c.root_dir, "/r");
        assert_string_equal(c.run_dir, "/x");
        assert_string_equal(c.pod_logs_dir, "/l");
        assert_string_equal(c.runtime, "crun");
        assert_true(c.runtime_set);
        assert_int_equal(optind, 12);
        assert_string_equal(argv[optind], "POD");
        assert_int_equal(helps, 0);
}

static void test_defaults(void **state) {
        char *argv[] = { "test", NULL };
        char own[4];
        CliCommon c;

        assert_int_equal(parse(&c, argv, own, sizeof(own)), CLI_OPTIONS_END);
        assert_string_equal(own, "");
        assert_string_equal(c.root_dir, CLI_DEFAULT_ROOT_DIR);
        assert_string_equal(c.runtime, CLI_DEFAULT_RUNTIME);
        assert_false(c.runtime_set);
        assert_int_equal(optind, 1);
}

static void test_help(void **state) {
        char *argv[] = { "test", "-w", "--help", "-o", "json", NULL };
        char own[8];
        CliCommon c;

        helps = 0;
        int end = parse(&c, argv, own, sizeof(own));
        assert_int_equal(end, CLI_OPTIONS_HELP);
        assert_int_equal(helps, 1);
        /* The options after --help are not taken. */
        assert_string_equal(own, "w");
        int code = -1;
        assert_true(cli_options_end(&c, end, 6, argv, CLI_OPERANDS_ANY, &code));
        assert_int_equal(code, EXIT_OK);
}

static void test_usage(void **state) {
        char *unknown[] = { "test", "--bogus", "-h", NULL };
        char *missing[] = { "test", "-w", "-o", NULL };
        char *missing_common[] = { "test", "--root-dir", NULL };
        char own[8];
        CliCommon c;

        helps = 0;
        int end = parse(&c, unknown, own, sizeof(own));
        assert_int_equal(end, CLI_OPTIONS_USAGE);
        int code = -1;
        assert_true(cli_options_end(&c, end, 3, unknown, CLI_OPERANDS_ANY, &code));
        assert_int_equal(code, EXIT_USAGE);
        /* The error stops the loop before the help. */
        assert_int_equal(helps, 0);
        assert_int_equal(parse(&c, missing, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_string_equal(own, "w");
        assert_int_equal(parse(&c, missing_common, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_string_equal(c.root_dir, CLI_DEFAULT_ROOT_DIR);
}

/* Whole names only, as kubelet's pflag: getopt's abbreviations of an
 * own or a common option are unknown flags. */
static void test_no_abbreviations(void **state) {
        char *own_abbrev[] = { "test", "--out=json", NULL };
        char *own_abbrev2[] = { "test", "--wat", NULL };
        char *common_abbrev[] = { "test", "--root=/x", NULL };
        char *common_abbrev2[] = { "test", "--run", "/x", NULL };
        char *help_abbrev[] = { "test", "--he", NULL };
        char *whole[] = { "test", "--watch", "--root-dir=/x", NULL };
        char own[8];
        CliCommon c;

        helps = 0;
        assert_int_equal(parse(&c, own_abbrev, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_string_equal(own, "");
        assert_int_equal(parse(&c, own_abbrev2, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_int_equal(parse(&c, common_abbrev, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_string_equal(c.root_dir, CLI_DEFAULT_ROOT_DIR);
        assert_int_equal(parse(&c, common_abbrev2, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_int_equal(parse(&c, help_abbrev, own, sizeof(own)), CLI_OPTIONS_USAGE);
        assert_int_equal(helps, 0);
        assert_int_equal(parse(&c, whole, own, sizeof(own)), CLI_OPTIONS_END);
        assert_string_equal(own, "w");
        assert_string_equal(c.root_dir, "/x");
}

/* Each command starts getopt again: a second parse sees its own argv whole. */
static void test_restart(void **state) {
        char *first[] = { "test", "-w", "A", NULL };
        char *second[] = { "test", "-o", "name", "B", NULL };
        char own[8];
        CliCommon c;

        assert_int_equal(parse(&c, first, own, sizeof(own)), CLI_OPTIONS_END);
        assert_string_equal(own, "w");
        assert_int_equal(parse(&c, second, own, sizeof(own)), CLI_OPTIONS_END);
        assert_string_equal(own, "on");
        assert_string_equal(second[optind], "B");
}

static void test_operands(void **state) {
        char *none[] = { "test", "-w", NULL };
        char *one[] = { "test", "-w", "A", NULL };
        char *two[] = { "test", "A", "-w", "B", NULL };
        char own[8];
        CliCommon c;
        int code;

        code = -1;
        assert_int_equal(parse(&c, none, own, sizeof(own)), CLI_OPTIONS_END);
        assert_false(cli_options_end(&c, CLI_OPTIONS_END, 2, none, 0, &code));
        assert_int_equal(code, -1);

        assert_int_equal(parse(&c, one, own, sizeof(own)), CLI_OPTIONS_END);
        assert_true(cli_options_end(&c, CLI_OPTIONS_END, 3, one, 0, &code));
        assert_int_equal(code, EXIT_USAGE);
        code = -1;
        assert_false(cli_options_end(&c, CLI_OPTIONS_END, 3, one, 1, &code));
        assert_int_equal(code, -1);

        /* GNU getopt moves the operands behind the options. */
        assert_int_equal(parse(&c, two, own, sizeof(own)), CLI_OPTIONS_END);
        assert_int_equal(optind, 2);
        assert_false(cli_options_end(&c, CLI_OPTIONS_END, 4, two, 2, &code));
        assert_true(cli_options_end(&c, CLI_OPTIONS_END, 4, two, 1, &code));
        assert_int_equal(code, EXIT_USAGE);
        code = -1;
        assert_false(cli_options_end(&c, CLI_OPTIONS_END, 4, two, CLI_OPERANDS_ANY, &code));
        assert_int_equal(code, -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_own_and_common),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_help),
                cmocka_unit_test(test_usage),
                cmocka_unit_test(test_restart),
                cmocka_unit_test(test_operands),
                cmocka_unit_test(test_no_abbreviations),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
