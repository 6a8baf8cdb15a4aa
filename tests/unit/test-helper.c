/* Tests for helper processes (helper.h): the command line built from a
 * mode's table and parsed back into the same struct, the argument errors,
 * the result parser against garbage, truncated and huge output, and real
 * helpers (this test re-executed, see main()) that succeed, fail, crash,
 * hang and write garbage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "helper.h"
#include "json-util.h"
#include "macro.h"
#include "self-helper.h"
#include "string-util.h"
#include "strv.h"

/* ---- a mode with every argument type ---- */

typedef struct TestArgs {
        const char *name;
        const char *opt;
        uint64_t size;
        int64_t delta;
        char *const *items;
        char *const *extra;
} TestArgs;

static const HelperArg test_args[] = {
        HELPER_ARG_STRING(TestArgs, name, "name", true),
        HELPER_ARG_STRING(TestArgs, opt, "opt", false),
        HELPER_ARG_U64(TestArgs, size, "size", true),
        HELPER_ARG_I64(TestArgs, delta, "delta", false),
        HELPER_ARG_STRV(TestArgs, items, "item", true),
        HELPER_ARG_STRV(TestArgs, extra, "extra", false),
};

static const HelperMode test_mode = HELPER_MODE_INIT("test", TestArgs, test_args);

static void test_mode_verify(void **state) {
        assert_int_equal(helper_mode_verify(&test_mode), 0);

        HelperArg bad[2] = { test_args[0], test_args[1] };
        HelperMode m = { .name = "test", .args = bad, .n_args = 2, .args_size = sizeof(TestArgs) };
        assert_int_equal(helper_mode_verify(&m), 0);
        bad[1].name = "name"; /* twice */
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        bad[1].name = "Opt";
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        bad[1].name = "o=pt";
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        bad[1].name = "";
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        bad[1] = test_args[1];
        bad[1].offset = sizeof(TestArgs) - sizeof(char *) + 1; /* past the struct */
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        bad[1] = test_args[1];
        bad[1].type = _HELPER_ARG_TYPE_MAX;
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        bad[1] = test_args[1];
        m.name = "test mode";
        assert_int_equal(helper_mode_verify(&m), -EINVAL);
        assert_int_equal(helper_mode_verify(NULL), -EINVAL);
}

static void test_argv_build(void **state) {
        _cleanup_strv_free_ char **argv = NULL;
        char *items[] = { "a", "b=c", "", NULL };
        TestArgs a = { .name = "n", .size = UINT64_MAX, .delta = INT64_MIN, .items = items };

        assert_int_equal(helper_argv_new(&test_mode, &a, &argv), 0);
        assert_string_equal(argv[0], self_helper_exe());
        assert_string_equal(argv[1], SELF_HELPER_VERB);
        assert_string_equal(argv[2], "test");
        /* Table order; the NULL optional string and the empty list left out. */
        const char *want[] = { "--name=n",
                               "--size=18446744073709551615",
                               "--delta=-9223372036854775808",
                               "--item=a",
                               "--item=b=c",
                               "--item=",
                               NULL };
        for (size_t i = 0; want[i]; i++)
                assert_string_equal(argv[3 + i], want[i]);
        assert_int_equal(strv_length(argv), 3 + 6);

        /* A required argument missing: no command line. */
        char **none = NULL;
        TestArgs b = a;
        b.name = NULL;
        assert_int_equal(helper_argv_new(&test_mode, &b, &none), -EINVAL);
        b = a;
        b.items = NULL;
        assert_int_equal(helper_argv_new(&test_mode, &b, &none), -EINVAL);
        char *empty[] = { NULL };
        b.items = empty;
        assert_int_equal(helper_argv_new(&test_mode, &b, &none), -EINVAL);
        assert_null(none);
}

/* What the agent builds, the helper reads back, whatever the strings hold. */
static void test_round_trip(void **state) {
        _cleanup_strv_free_ char **argv = NULL;
        char *items[] = { "/var/lib/x y", "line\nbreak", "--item=not-a-flag", "", NULL };
        char *extra[] = { "\x01\x7f\xff", NULL };
        TestArgs a = {
                .name = "=", .opt = "", .size = 0, .delta = -1, .items = items, .extra = extra
        };
        TestArgs b = {};
        Error err = {};

        assert_int_equal(helper_argv_new(&test_mode, &a, &argv), 0);
        int argc = (int)strv_length(argv);
        assert_int_equal(helper_args_parse(&test_mode, argc - 3, argv + 3, &b, &err), 0);
        assert_string_equal(b.name, "=");
        assert_string_equal(b.opt, "");
        assert_int_equal(b.size, 0);
        assert_int_equal(b.delta, -1);
        assert_int_equal(strv_length(b.items), 4);
        for (size_t i = 0; items[i]; i++)
                assert_string_equal(b.items[i], items[i]);
        assert_int_equal(strv_length(b.extra), 1);
        assert_string_equal(b.extra[0], extra[0]);
        helper_args_done(&test_mode, &b);
        assert_null(b.items);
        assert_null(b.extra);
}

static int parse_one(char **argv, Error *err) {
        TestArgs a = {};
        int r = helper_args_parse(&test_mode, (int)strv_length(argv), argv, &a, err);
        if (r >= 0)
                helper_args_done(&test_mode, &a);
        else {
                /* Cleaned up on failure: nothing for the caller to free. */
                assert_null(a.items);
                assert_null(a.extra);
        }
        return r;
}

#define BAD(msg_part, ...)                                                                         \
        do {                                                                                       \
                char *v_[] = { __VA_ARGS__, NULL };                                                \
                Error e_ = {};                                                                     \
                assert_int_equal(parse_one(v_, &e_), -EINVAL);                                     \
                if (!strstr(e_.message, msg_part))                                                 \
                        fail_msg("\"%s\" lacks \"%s\"", e_.message, msg_part);                     \
        } while (0)

static void test_args_errors(void **state) {
        Error err = {};
        char *ok[] = { "--item=x", "--size=7", "--name=a", "--item=y", NULL };
        assert_int_equal(parse_one(ok, &err), 0);

        BAD("missing", "--size=1", "--item=x");           /* no --name */
        BAD("--item is missing", "--name=a", "--size=1"); /* no element of a required list */
        BAD("given twice", "--name=a", "--name=b", "--size=1", "--item=x");
        BAD("given twice", "--name=a", "--size=1", "--size=1", "--item=x");
        BAD("unknown argument \"--nam\"", "--nam=a", "--size=1", "--item=x");
        BAD("unknown argument \"--names\"", "--names=a", "--size=1", "--item=x");
        BAD("unknown argument \"--\"", "--=a", "--name=a", "--size=1", "--item=x");
        BAD("not --NAME=VALUE", "--name", "--size=1", "--item=x");
        BAD("not --NAME=VALUE", "name=a", "--size=1", "--item=x");
        BAD("not --NAME=VALUE", "", "--name=a", "--size=1", "--item=x");
        /* numbers: digits only, in range */
        BAD("--size", "--name=a", "--size=", "--item=x");
        BAD("--size", "--name=a", "--size=-1", "--item=x");
        BAD("--size", "--name=a", "--size=+1", "--item=x");
        BAD("--size", "--name=a", "--size= 1", "--item=x");
        BAD("--size", "--name=a", "--size=1 ", "--item=x");
        BAD("--size", "--name=a", "--size=0x10", "--item=x");
        BAD("--size", "--name=a", "--size=18446744073709551616", "--item=x");
        BAD("--size", "--name=a", "--size=99999999999999999999999", "--item=x");
        BAD("--delta", "--name=a", "--size=1", "--item=x", "--delta=9223372036854775808");
        BAD("--delta", "--name=a", "--size=1", "--item=x", "--delta=-9223372036854775809");
        BAD("--delta", "--name=a", "--size=1", "--item=x", "--delta=-");
        BAD("--delta", "--name=a", "--size=1", "--item=x", "--delta=--1");

        /* A huge hostile argument: the message stays bounded. */
        _cleanup_free_ char *huge = malloc(200000);
        assert_non_null(huge);
        memset(huge, 'x', 199999);
        huge[199999] = 0;
        memcpy(huge, "--", 2);
        char *h[] = { huge, NULL };
        err = (Error){};
        assert_int_equal(parse_one(h, &err), -EINVAL);
        assert_true(strlen(err.message) < 200);

        char *edge[] = { "--name=a", "--size=18446744073709551615", "--item=x",
                         "--delta=-9223372036854775808", NULL };
        assert_int_equal(parse_one(edge, &err), 0);
}

/* ---- the result parser ---- */

static int parse_result(const char *out, int code, int status, json_t **ret, Error *err) {
        return helper_result_parse("the helper", out, out ? strlen(out) : 0, false, code, status,
                                   ret, err);
}

static void expect_no_result(const char *out, const char *why) {
        Error err = {};
        json_t *j = (json_t *)1;
        assert_int_equal(parse_result(out, CLD_EXITED, 0, &j, &err), -EIO);
        assert_null(j);
        if (!strstr(err.message, "the helper failed (exit status 0: ") || !strstr(err.message, why))
                fail_msg("\"%s\" for \"%s\"", err.message, out ? out : "(null)");
}

static void test_result_parse(void **state) {
        _cleanup_json_ json_t *j = NULL;
        Error err = {};

        assert_int_equal(
                parse_result("{\"result\":0,\"digest\":\"sha256:x\"}\n", CLD_EXITED, 0, &j, &err),
                0);
        assert_string_equal(json_string_value(json_object_get(j, "digest")), "sha256:x");
        assert_int_equal(err.error, 0);
        json_decref(j);
        j = NULL;
        assert_int_equal(parse_result("{\"result\":1}", CLD_EXITED, 0, NULL, &err), 1);

        /* A failure: the helper's own sentence, its members still there. */
        assert_int_equal(parse_result("{\"removed\":[1],\"result\":-28,\"error\":\"disk full\"}",
                                      CLD_EXITED, 1, &j, &err),
                         -ENOSPC);
        assert_string_equal(err.message, "disk full");
        assert_non_null(json_object_get(j, "removed"));
        json_decref(j);
        j = NULL;
        /* ... without one, or with one of the wrong type: strerror */
        err = (Error){};
        assert_int_equal(parse_result("{\"result\":-2}", CLD_EXITED, 1, NULL, &err), -ENOENT);
        assert_string_equal(err.message, strerror(ENOENT));
        err = (Error){};
        assert_int_equal(parse_result("{\"result\":-2,\"error\":7}", CLD_EXITED, 1, NULL, &err),
                         -ENOENT);
        assert_string_equal(err.message, strerror(ENOENT));

        /* The process outcome comes first: a killed helper's output is not
         * believed, however valid it looks. */
        err = (Error){};
        assert_int_equal(parse_result("{\"result\":0}", CLD_KILLED, SIGKILL, &j, &err), -EINTR);
        assert_null(j);
        assert_string_equal(err.message, "the helper was killed by signal 9");
        err = (Error){};
        assert_int_equal(parse_result("{\"result\":0}", CLD_DUMPED, SIGSEGV, NULL, &err), -EINTR);
        err = (Error){};
        assert_int_equal(parse_result("{\"result\":0}", 0, 0, NULL, &err), -EIO);

        /* garbage, truncated, wrong shapes */
        expect_no_result(NULL, "it wrote no result");
        expect_no_result("", "it wrote no result");
        expect_no_result("{\"result\":0", "not JSON");
        expect_no_result("{\"result\":0}{\"result\":0}", "not JSON");
        expect_no_result("{\"result\":0}x", "not JSON");
        expect_no_result("flushed sha256:abc\n", "not JSON");
        expect_no_result("\xff\xfe{}", "not JSON");
        expect_no_result("{\"result\":\"\xff\"}", "not JSON");
        expect_no_result("{\"result\":0,\"result\":-1}", "not JSON"); /* duplicate keys */
        expect_no_result("[0]", "not a JSON object");
        expect_no_result("0", "not JSON");
        expect_no_result("{}", "no integer \"result\"");
        expect_no_result("{\"result\":\"0\"}", "no integer \"result\"");
        expect_no_result("{\"result\":0.0}", "no integer \"result\"");
        expect_no_result("{\"result\":null}", "no integer \"result\"");
        expect_no_result("{\"result\":-4096}", "out of range");
        expect_no_result("{\"result\":2147483648}", "out of range");
        expect_no_result("{\"result\":-9223372036854775808}", "out of range");
        expect_no_result("{\"result\":99999999999999999999}", "not JSON");

        /* a NUL byte inside */
        err = (Error){};
        assert_int_equal(
                helper_result_parse("w", "{\"result\":0}\0x", 14, false, CLD_EXITED, 0, NULL, &err),
                -EIO);
        assert_non_null(strstr(err.message, "NUL"));
        /* kept output that was cut: not a result even when it parses */
        err = (Error){};
        assert_int_equal(
                helper_result_parse("w", "{\"result\":0}", 12, true, CLD_EXITED, 0, NULL, &err),
                -EIO);
        assert_non_null(strstr(err.message, "too long"));

        /* huge: a long error sentence is cut to the Error's size; deep
         * nesting is refused by the JSON parser, not by the stack */
        size_t big = 1024 * 1024;
        _cleanup_free_ char *s = malloc(big + 64);
        assert_non_null(s);
        strcpy(s, "{\"result\":-5,\"error\":\"");
        size_t off = strlen(s);
        memset(s + off, 'e', big);
        strcpy(s + off + big, "\"}");
        err = (Error){};
        assert_int_equal(parse_result(s, CLD_EXITED, 1, NULL, &err), -EIO);
        assert_int_equal(err.error, -EIO);
        assert_int_equal(strlen(err.message), sizeof(err.message) - 1);
        memset(s, '[', big);
        s[big] = 0;
        err = (Error){};
        assert_int_equal(parse_result(s, CLD_EXITED, 0, NULL, &err), -EIO);
        assert_non_null(strstr(err.message, "not JSON"));
}

static void test_json_members(void **state) {
        _cleanup_json_ json_t *j = json_loads(
                "{\"n\":5,\"neg\":-1,\"f\":1.5,\"s\":\"abc\",\"long\":\"abcdef\",\"nul\":null}", 0,
                NULL);
        uint64_t v = 0;
        const char *str = NULL;

        assert_non_null(j);
        assert_int_equal(helper_json_u64(j, "n", &v), 0);
        assert_int_equal(v, 5);
        assert_int_equal(helper_json_u64(j, "neg", &v), -EBADMSG);
        assert_int_equal(helper_json_u64(j, "f", &v), -EBADMSG);
        assert_int_equal(helper_json_u64(j, "s", &v), -EBADMSG);
        assert_int_equal(helper_json_u64(j, "missing", &v), -EBADMSG);
        assert_int_equal(helper_json_u64(NULL, "n", &v), -EBADMSG);
        assert_int_equal(helper_json_str(j, "s", 3, &str), 0);
        assert_string_equal(str, "abc");
        assert_int_equal(helper_json_str(j, "long", 5, &str), -EBADMSG);
        assert_int_equal(helper_json_str(j, "n", 5, &str), -EBADMSG);
        assert_int_equal(helper_json_str(j, "nul", 5, &str), -EBADMSG);
}

/* ---- real helpers: this test re-executed ---- */

/* The helpers' stderr (the test's own) to /dev/null and back, around the
 * runs that print a lot. */
static int stderr_quiet(void) {
        int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        assert_true(saved >= 0 && null >= 0);
        assert_true(dup2(null, STDERR_FILENO) >= 0);
        close(null);
        return saved;
}

static void stderr_restore(int saved) {
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
}

typedef struct BehaveArgs {
        const char *how;
        uint64_t size;
} BehaveArgs;

static const HelperArg behave_args[] = {
        HELPER_ARG_STRING(BehaveArgs, how, "how", true),
        HELPER_ARG_U64(BehaveArgs, size, "size", false),
};

static const HelperMode behave_mode = HELPER_MODE_INIT("behave", BehaveArgs, behave_args);

static int run_behave(const void *args, json_t *result, Error *err) {
        const BehaveArgs *a = args;

        if (streq(a->how, "ok")) {
                _cleanup_free_ char *in = NULL;
                size_t n = 0;
                if (read_full_fd(STDIN_FILENO, 4096, &in, &n) < 0)
                        return error_set(err, -EIO, "no stdin");
                (void)json_object_set_new(result, "echo", json_stringn(in, n));
                (void)json_object_set_new(result, "size", json_integer((json_int_t)a->size));
                return 0;
        }
        if (streq(a->how, "fail")) {
                (void)json_object_set_new(result, "done", json_integer(3));
                /* Not UTF-8: the result must stay JSON. */
                return error_set(err, -ENOSPC, "cannot write \"\xff\": disk full");
        }
        if (streq(a->how, "crash"))
                abort();
        if (streq(a->how, "hang"))
                pause();
        if (streq(a->how, "garbage")) {
                for (unsigned i = 0; i < 4096; i++)
                        printf("garbage before the result, far more than a pipe holds\n");
                (void)fflush(stdout);
                return 0;
        }
        if (streq(a->how, "flood")) {
                /* on stdout (which is stderr now), and as the result */
                for (uint64_t i = 0; i < a->size; i++)
                        putchar('x');
                (void)fflush(stdout);
                _cleanup_free_ char *big = malloc(a->size + 1);
                if (!big)
                        return -ENOMEM;
                memset(big, 'x', a->size);
                big[a->size] = 0;
                (void)json_object_set_new(result, "big", json_string(big));
                return 0;
        }
        return error_set(err, -EINVAL, "no such behaviour");
}

static const HelperMain behave_main = { .mode = &behave_mode, .run = run_behave };

typedef struct Done {
        bool done;
        int r;
        Error err;
        json_t *res;
} Done;

static void on_done(Child *c, void *userdata) {
        Done *d = userdata;
        d->r = helper_child_result(c, "the helper", &d->res, &d->err);
        d->done = true;
        child_free(c);
}

static int run_helper(const char *how, uint64_t size, const char *input, usec_t timeout, Done *d) {
        _cleanup_event_free_ Event *e = NULL;
        BehaveArgs a = { .how = how, .size = size };
        HelperSpawnOptions o = { .mode = &behave_mode,
                                 .args = &a,
                                 .input = input,
                                 .input_size = input ? strlen(input) : 0,
                                 .result_max = 4096,
                                 .timeout = timeout };
        Child *c = NULL;

        *d = (Done){};
        assert_int_equal(event_new(&e), 0);
        assert_int_equal(helper_spawn(e, &o, on_done, d, &c), 0);
        for (unsigned i = 0; i < 600 && !d->done; i++)
                assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_true(d->done);
        return d->r;
}

static void test_spawn(void **state) {
        Done d;

        assert_int_equal(run_helper("ok", 42, "job on stdin", 0, &d), 0);
        assert_string_equal(json_string_value(json_object_get(d.res, "echo")), "job on stdin");
        assert_int_equal(json_integer_value(json_object_get(d.res, "size")), 42);
        assert_null(json_object_get(d.res, "error"));
        json_decref(d.res);

        assert_int_equal(run_helper("fail", 0, NULL, 0, &d), -ENOSPC);
        assert_string_equal(d.err.message, "cannot write \"\xef\xbf\xbd\": disk full");
        assert_int_equal(json_integer_value(json_object_get(d.res, "done")), 3);
        json_decref(d.res);

        assert_int_equal(run_helper("crash", 0, NULL, 0, &d), -EINTR);
        assert_string_equal(d.err.message, "the helper was killed by signal 6");
        assert_null(d.res);

        assert_int_equal(run_helper("hang", 0, NULL, 200 * USEC_PER_MSEC, &d), -EINTR);
        assert_string_equal(d.err.message, "the helper was killed by signal 9 (timed out)");

        /* What a mode prints goes to stderr: the result stays one object. */
        int saved = stderr_quiet();
        assert_int_equal(run_helper("garbage", 0, NULL, 0, &d), 0);
        json_decref(d.res);
        assert_int_equal(run_helper("flood", 1000, NULL, 0, &d), 0);
        assert_int_equal(json_string_length(json_object_get(d.res, "big")), 1000);
        json_decref(d.res);

        /* A result bigger than the caller allows: cut, and not taken for one. */
        int r = run_helper("flood", 1024 * 1024, NULL, 0, &d);
        stderr_restore(saved);
        assert_int_equal(r, -EIO);
        assert_non_null(strstr(d.err.message, "too long"));
        assert_null(d.res);

        /* A mode's own refusal. */
        assert_int_equal(run_helper("nonsense", 0, NULL, 0, &d), -EINVAL);
        assert_string_equal(d.err.message, "no such behaviour");
        json_decref(d.res);
}

/* The dispatcher itself: unknown modes and wrong arguments are results too. */
static int main_capture(char **argv, char **ret_out) {
        const HelperMain *mains[] = { &behave_main };
        char path[] = "/tmp/test-helper-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        (void)unlink(path);
        fflush(stdout);
        int saved = dup(STDOUT_FILENO);
        assert_true(saved >= 0);
        assert_true(dup2(fd, STDOUT_FILENO) >= 0);
        int status = helper_main(mains, 1, (int)strv_length(argv), argv);
        assert_true(dup2(saved, STDOUT_FILENO) >= 0);
        close(saved);
        size_t n;
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(read_full_fd(fd, 65536, ret_out, &n), 0);
        close(fd);
        return status;
}

static void test_main(void **state) {
        _cleanup_free_ char *out = NULL;
        Error err = {};

        char *unknown[] = { "nope", NULL };
        assert_int_equal(main_capture(unknown, &out), 2);
        assert_int_equal(parse_result(out, CLD_EXITED, 2, NULL, &err), -EINVAL);
        assert_non_null(strstr(err.message, "unknown helper mode \"nope\""));
        out = mfree(out);

        char *empty[] = { NULL };
        assert_int_equal(main_capture(empty, &out), 2);
        out = mfree(out);

        char *wrong[] = { "behave", "--how=ok", "--size=-1", NULL };
        err = (Error){};
        assert_int_equal(main_capture(wrong, &out), 1);
        assert_int_equal(parse_result(out, CLD_EXITED, 1, NULL, &err), -EINVAL);
        assert_non_null(strstr(err.message, "--size"));
        out = mfree(out);

        char *fail[] = { "behave", "--how=fail", NULL };
        err = (Error){};
        assert_int_equal(main_capture(fail, &out), 1);
        /* one line, one object */
        assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
        assert_int_equal(parse_result(out, CLD_EXITED, 1, NULL, &err), -ENOSPC);
}

int main(int argc, char **argv) {
        /* The helpers re-execute /proc/self/exe, this test, in a helper mode. */
        if (argc > 1 && streq(argv[1], SELF_HELPER_VERB))
                return helper_main((const HelperMain *const[]){ &behave_main }, 1, argc - 2,
                                   argv + 2);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mode_verify),  cmocka_unit_test(test_argv_build),
                cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_args_errors),
                cmocka_unit_test(test_result_parse), cmocka_unit_test(test_json_members),
                cmocka_unit_test(test_spawn),        cmocka_unit_test(test_main),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
