/* The node's AppArmor (pod-apparmor.h): the kernel's switch as sysfs gives
 * it, and the RuntimeDefault profile's load with a stand-in apparmor_parser
 * (a script in $PATH that writes the profile into a stand-in list): loaded
 * already, loaded once for every waiter, a waiter that gave up (also while
 * the others are resumed), a failing parser, a parser that ran but left no
 * profile, no parser installed. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "container-config.h"
#include "fileio.h"
#include "pod-apparmor.h"
#include "string-util.h"

static char dir[] = "/tmp/test-apparmor-XXXXXX";
static char *profiles, *parser_log, *old_path;
static int resumed[4];

static void put(const char *name, const char *content, mode_t mode) {
        char *p = strprintf("%s/%s", dir, name);
        assert_non_null(p);
        assert_int_equal(write_file_atomic(p, content, strlen(content), mode), 0);
        free(p);
}

/* The stand-in parser: after a while (so that a test can queue waiters
 * meanwhile) logs its arguments; "ok" appends the profile to the
 * list, "fail" exits 1 with a message, "noop" exits 0 and does nothing. */
static void parser(const char *mode) {
        char *script = strprintf("#!/bin/sh\nsleep 0.3\necho \"$*\" >> %s\n"
                                 "case %s in\n"
                                 "ok) echo 'nanolet-default (enforce)' >> %s ;;\n"
                                 "fail) echo 'AppArmor parser error: syntax' ; exit 1 ;;\n"
                                 "esac\n",
                                 parser_log, mode, profiles);
        assert_non_null(script);
        put("apparmor_parser", script, 0755);
        free(script);
}

static int setup(void **state) {
        assert_non_null(mkdtemp(dir));
        profiles = strprintf("%s/profiles", dir);
        parser_log = strprintf("%s/parser.log", dir);
        const char *p = getenv("PATH");
        old_path = strdup(p ? p : "/usr/bin:/bin");
        char *np = strprintf("%s:%s", dir, old_path);
        setenv("PATH", np, 1);
        free(np);
        return 0;
}

static int teardown(void **state) {
        setenv("PATH", old_path, 1);
        char *cmd = strprintf("rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        free(profiles);
        free(parser_log);
        free(old_path);
        return 0;
}

static PodAppArmor *cancelling; /* on_resume of waiter 0 ends waiter 3's start */

static void on_resume(void *waiter) {
        resumed[(int *)waiter - resumed]++;
        if (cancelling && waiter == &resumed[0])
                pod_apparmor_forget(cancelling, &resumed[3]);
}

static size_t parser_runs(void) {
        _cleanup_free_ char *s = NULL;
        size_t n = 0;
        if (read_full_file_at(AT_FDCWD, parser_log, 1 << 16, &s, NULL) < 0)
                return 0;
        for (const char *c = s; *c; c++)
                n += *c == '\n';
        return n;
}

static void run_until_loaded(Event *e, PodAppArmor *a) {
        for (int i = 0; a->loader && i < 500; i++)
                assert_int_equal(event_run(e, 20 * USEC_PER_MSEC), 0);
        assert_null(a->loader);
}

static void test_host_enabled(void **state) {
        char *p = strprintf("%s/enabled", dir);
        /* sysfs: "Y\n" in a file whose size is a page */
        char page[4096];
        memset(page, 0, sizeof page);
        page[0] = 'Y';
        page[1] = '\n';
        assert_int_equal(write_file_atomic(p, page, sizeof page, 0644), 0);
        assert_true(pod_apparmor_host_enabled(p));
        put("enabled", "N\n", 0644);
        assert_false(pod_apparmor_host_enabled(p));
        put("enabled", "", 0644);
        assert_false(pod_apparmor_host_enabled(p));
        unlink(p);
        assert_false(pod_apparmor_host_enabled(p));
        free(p);
}

static void test_default_load(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        PodAppArmor a;
        Error why = {};

        assert_int_equal(event_new(&e), 0);
        memset(resumed, 0, sizeof resumed);
        unlink(parser_log);

        /* a host without AppArmor: nothing to load */
        pod_apparmor_init(&a, e, false, profiles, "/x/nanolet-default", on_resume);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[0], false, &why), 1);
        pod_apparmor_done(&a);

        /* loaded already: no parser */
        put("profiles", "other (enforce)\nnanolet-default (enforce)\n", 0644);
        parser("ok");
        pod_apparmor_init(&a, e, true, profiles, "/x/nanolet-default", on_resume);
        assert_true(pod_apparmor_default_available(&a));
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[0], false, &why), 1);
        assert_int_equal(parser_runs(), 0);

        /* missing: one load for four waiters, two of which give up */
        put("profiles", "other (enforce)\n", 0644);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[0], false, &why), 0);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[1], false, &why), 0);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[2], false, &why), 0);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[3], false, &why), 0);
        pod_apparmor_forget(&a, &resumed[1]);
        cancelling = &a;
        run_until_loaded(e, &a);
        cancelling = NULL;
        assert_int_equal(parser_runs(), 1);
        assert_int_equal(resumed[0], 1);
        assert_int_equal(resumed[1], 0);
        assert_int_equal(resumed[2], 1);
        assert_int_equal(resumed[3], 0); /* its start ended while the others were resumed */
        assert_int_equal(a.n_waiters, 0);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[0], true, &why), 1);
        _cleanup_free_ char *log = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, parser_log, 4096, &log, NULL), 0);
        assert_string_equal(log, "-r /x/nanolet-default\n");
        pod_apparmor_done(&a);

        /* the parser fails: the waiter is resumed and then told why */
        memset(resumed, 0, sizeof resumed);
        put("profiles", "other (enforce)\n", 0644);
        parser("fail");
        pod_apparmor_init(&a, e, true, profiles, "/x/nanolet-default", on_resume);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[0], false, &why), 0);
        run_until_loaded(e, &a);
        assert_int_equal(resumed[0], 1);
        assert_true(pod_apparmor_default_ready(&a, &resumed[0], true, &why) < 0);
        assert_non_null(strstr(why.message,
                               "apparmor_parser -r /x/nanolet-default failed (exit status 1)"));
        assert_non_null(strstr(why.message, "AppArmor parser error: syntax"));
        /* a new start (its back-off over) loads again */
        unlink(parser_log);
        parser("noop");
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[1], false, &why), 0);
        run_until_loaded(e, &a);
        assert_int_equal(parser_runs(), 1);
        assert_int_equal(resumed[1], 1);
        /* it exited 0 but the kernel has no such profile */
        error_clear(&why);
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[1], true, &why), -ENOENT);
        assert_non_null(strstr(why.message, "not loaded after apparmor_parser ran"));
        pod_apparmor_done(&a);

        /* no apparmor_parser at all: no default profile, as with containerd */
        char *p = strprintf("%s/apparmor_parser", dir);
        unlink(p);
        free(p);
        setenv("PATH", dir, 1);
        pod_apparmor_init(&a, e, true, profiles, "/x/nanolet-default", on_resume);
        assert_false(pod_apparmor_default_available(&a));
        assert_int_equal(pod_apparmor_default_ready(&a, &resumed[3], false, &why), 1);
        pod_apparmor_done(&a);
        char *np = strprintf("%s:%s", dir, old_path);
        setenv("PATH", np, 1);
        free(np);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_host_enabled),
                cmocka_unit_test(test_default_load),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
