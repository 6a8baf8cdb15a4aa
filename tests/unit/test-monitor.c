/* src/monitor: nanolet-monitor's pure parts — its command line (conmon's, as
 * src/runtime/conmon.c passes it), the CRI records it writes (read back with
 * the CLI's own reader, src/cli/cri-log.h), the size limit and reopen, exit
 * codes and files, the sync line (checked with jansson, as the agent parses
 * it) and ctl lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>

#include "cleanup.h"
#include "cri-log.h"
#include "fileio.h"
#include "monitor.h"
#include "rm-rf.h"
#include "string-util.h"

static int parse(MonitorArgs *a, char *err, size_t n, char **argv) {
        int argc = 0;
        while (argv[argc])
                argc++;
        optind = 0;
        return monitor_parse_args(argc, argv, a, err, n);
}

static void test_args(void **state) {
        MonitorArgs a;
        char err[256];
        /* exactly what conmon.c passes */
        char *argv[] = { "nanolet-monitor",
                         "--api-version",
                         "1",
                         "-c",
                         "abc",
                         "-u",
                         "abc",
                         "-n",
                         "abc",
                         "-r",
                         "/usr/bin/runc",
                         "-b",
                         "/b",
                         "-p",
                         "/p/pidfile",
                         "-P",
                         "/p/conmon.pid",
                         "-l",
                         "k8s-file:/logs/0.log",
                         "--exit-dir",
                         "/run/exits",
                         "--socket-dir-path",
                         "/p/attach",
                         "-0",
                         "/p",
                         "--log-level",
                         "info",
                         "--runtime-arg",
                         "--root",
                         "--runtime-arg",
                         "/run/runc",
                         "-t",
                         "-i",
                         "-s",
                         "--log-size-max",
                         "1048576",
                         NULL };
        assert_int_equal(parse(&a, err, sizeof(err), argv), 0);
        assert_string_equal(a.id, "abc");
        assert_string_equal(a.runtime, "/usr/bin/runc");
        assert_string_equal(a.bundle, "/b");
        assert_string_equal(a.container_pidfile, "/p/pidfile");
        assert_string_equal(a.monitor_pidfile, "/p/conmon.pid");
        assert_string_equal(a.log_path, "/logs/0.log");
        assert_string_equal(a.exit_dir, "/run/exits");
        assert_string_equal(a.persist_dir, "/p");
        assert_int_equal(a.n_runtime_args, 2);
        assert_string_equal(a.runtime_args[0], "--root");
        assert_string_equal(a.runtime_args[1], "/run/runc");
        assert_true(a.terminal && a.stdin_open && a.systemd_cgroup);
        assert_int_equal(a.log_size_max, 1048576);

        char *minimal[] = { "m",  "-c", "x",      "-r",         "/r", "-b", "/b", "-p",
                            "/p", "-l", "/l.log", "--exit-dir", "/e", "-0", "/d", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), minimal), 0);
        assert_false(a.terminal || a.stdin_open || a.systemd_cgroup);
        assert_null(a.monitor_pidfile);
        assert_int_equal(a.log_size_max, 0);
        assert_string_equal(a.log_path, "/l.log");

        char *missing[] = { "m",  "-r", "/r",         "-b", "/b", "-p", "/p",
                            "-l", "/l", "--exit-dir", "/e", "-0", "/d", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), missing), -EINVAL);
        assert_string_equal(err, "missing -c");
        char *unknown[] = { "m", "--frobnicate", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), unknown), -EINVAL);
        assert_non_null(strstr(err, "unknown option"));
        char *journald[] = { "m", "-l", "journald:", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), journald), -EINVAL);
        char *bad_id[] = { "m",  "-c", "../x",   "-r",         "/r", "-b", "/b", "-p",
                           "/p", "-l", "/l.log", "--exit-dir", "/e", "-0", "/d", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), bad_id), -EINVAL);
        char *bad_size[] = { "m", "--log-size-max", "12x", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), bad_size), -EINVAL);
        char *extra[] = { "m",  "-c", "x",          "-r", "/r", "-b", "/b",    "-p", "/p",
                          "-l", "/l", "--exit-dir", "/e", "-0", "/d", "stray", NULL };
        assert_int_equal(parse(&a, err, sizeof(err), extra), -EINVAL);
}

static void test_prefix(void **state) {
        char buf[MONITOR_PREFIX_MAX];
        struct tm tm = { .tm_year = 124, .tm_mon = 4, .tm_mday = 1, .tm_hour = 10 };
        int64_t t;

        size_t n = monitor_format_prefix(buf, sizeof(buf), &tm, 123, "stdout");
        assert_string_equal(buf, "2024-05-01T10:00:00.000000123+00:00 stdout ");
        assert_int_equal(n, strlen(buf));
        assert_int_equal(timestamp_parse_rfc3339(buf, 35, &t), 0);
        assert_int_equal(t, 1714557600LL * 1000000000LL + 123);

        tm.tm_gmtoff = -(5 * 3600 + 30 * 60);
        monitor_format_prefix(buf, sizeof(buf), &tm, 999999999, "stderr");
        assert_string_equal(buf, "2024-05-01T10:00:00.999999999-05:30 stderr ");
        assert_int_equal(timestamp_parse_rfc3339(buf, 35, &t), 0);
        assert_int_equal(t, (1714557600LL + 5 * 3600 + 1800) * 1000000000LL + 999999999);
        assert_int_equal(monitor_format_prefix(buf, 10, &tm, 0, "stdout"), 0);
}

static void test_line_len(void **state) {
        bool partial;
        assert_int_equal(monitor_line_len("ab\ncd", 5, &partial), 3);
        assert_false(partial);
        assert_int_equal(monitor_line_len("abcd", 4, &partial), 4);
        assert_true(partial);
        assert_int_equal(monitor_line_len("\n", 1, &partial), 1);
        assert_false(partial);
}

typedef struct Collected {
        size_t n;
        char *last;
        size_t last_len;
        size_t stdout_bytes;
        CriStream stream[8];
        char *text[8];
} Collected;

static int collect(const CriLogLine *l, void *userdata) {
        Collected *c = userdata;
        if (l->stream == CRI_STREAM_STDOUT)
                c->stdout_bytes += l->text_len;
        if (c->n < 8) {
                c->stream[c->n] = l->stream;
                c->text[c->n] = strndup(l->text, l->text_len);
        }
        free(c->last);
        c->last = malloc(l->text_len + 1);
        memcpy(c->last, l->text, l->text_len);
        c->last_len = l->text_len;
        c->n++;
        return 0;
}

static void collected_free(Collected *c) {
        free(c->last);
        for (size_t i = 0; i < 8 && i < c->n; i++)
                free(c->text[i]);
}

static char *make_dir(void) {
        char *d = strdup("/tmp/test-monitor-XXXXXX");
        assert_non_null(mkdtemp(d));
        return d;
}

static void read_back(const char *path, Collected *c, size_t *ret_size, size_t *ret_records,
                      size_t *ret_longest) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 64 << 20, &data, &size), 0);
        CriLogReader r;
        cri_log_reader_init(&r, collect, c);
        assert_int_equal(cri_log_reader_feed(&r, data, size), 0);
        assert_int_equal(cri_log_reader_flush(&r), 0);
        assert_int_equal(r.n_bad, 0);
        cri_log_reader_deinit(&r);
        size_t records = 0, longest = 0, start = 0;
        for (size_t i = 0; i < size; i++)
                if (data[i] == '\n') {
                        records++;
                        if (i - start > longest)
                                longest = i - start;
                        start = i + 1;
                }
        if (ret_size)
                *ret_size = size;
        if (ret_records)
                *ret_records = records;
        if (ret_longest)
                *ret_longest = longest;
}

static const char *PREFIX_OUT = "2024-05-01T10:00:00.000000001+00:00 stdout ";
static const char *PREFIX_ERR = "2024-05-01T10:00:00.000000002+00:00 stderr ";

static void test_log_records(void **state) {
        _cleanup_free_ char *dir = make_dir();
        _cleanup_free_ char *path = strprintf("%s/0.log", dir);
        MonitorLog log;
        Collected c = {};

        assert_int_equal(monitor_log_open(&log, path, 0), 0);
        assert_int_equal(monitor_log_write(&log, PREFIX_OUT, "a\nbb\nccc", 8), 0);
        assert_int_equal(monitor_log_write(&log, PREFIX_ERR, "err\n", 4), 0);
        assert_int_equal(monitor_log_write(&log, PREFIX_OUT, "dd\n", 3), 0);
        monitor_log_close(&log);

        _cleanup_free_ char *data = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 4096, &data, NULL), 0);
        assert_string_equal(data, "2024-05-01T10:00:00.000000001+00:00 stdout F a\n"
                                  "2024-05-01T10:00:00.000000001+00:00 stdout F bb\n"
                                  "2024-05-01T10:00:00.000000001+00:00 stdout P ccc\n"
                                  "2024-05-01T10:00:00.000000002+00:00 stderr F err\n"
                                  "2024-05-01T10:00:00.000000001+00:00 stdout F dd\n");
        read_back(path, &c, NULL, NULL, NULL);
        assert_int_equal(c.n, 4);
        assert_string_equal(c.text[2], "err");
        assert_int_equal(c.stream[2], CRI_STREAM_STDERR);
        assert_string_equal(c.text[3], "cccdd"); /* the partial joined */
        collected_free(&c);

        /* The mode conmon gives, whatever the umask; an existing file is
         * appended to. */
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0640);
        assert_int_equal(monitor_log_open(&log, path, 0), 0);
        assert_int_equal(log.written, st.st_size);
        monitor_log_close(&log);

        /* never through a symlink */
        _cleanup_free_ char *link = strprintf("%s/link.log", dir);
        assert_int_equal(symlink(path, link), 0);
        assert_int_equal(monitor_log_open(&log, link, 0), -ELOOP);
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

/* A 10 MiB line without newline, read in MONITOR_READ_MAX chunks as the
 * monitor reads it, then binary junk: records stay bounded, the reader
 * joins the line back whole. */
static void test_log_huge_line(void **state) {
        _cleanup_free_ char *dir = make_dir();
        _cleanup_free_ char *path = strprintf("%s/0.log", dir);
        const size_t total = 10U << 20;
        _cleanup_free_ char *chunk = malloc(MONITOR_READ_MAX);
        MonitorLog log;
        Collected c = {};

        memset(chunk, 'x', MONITOR_READ_MAX);
        assert_int_equal(monitor_log_open(&log, path, 0), 0);
        for (size_t done = 0; done < total; done += MONITOR_READ_MAX)
                assert_int_equal(monitor_log_write(&log, PREFIX_OUT, chunk, MONITOR_READ_MAX), 0);
        assert_int_equal(monitor_log_write(&log, PREFIX_OUT, "\n", 1), 0);
        char junk[256];
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] = (char)(i ^ 0xa5);
        junk[sizeof(junk) - 1] = '\n';
        assert_int_equal(monitor_log_write(&log, PREFIX_ERR, junk, sizeof(junk)), 0);
        monitor_log_close(&log);

        size_t size, records, longest;
        read_back(path, &c, &size, &records, &longest);
        /* 1280 partial records, the closing "F", and the junk's lines */
        assert_true(records >= total / MONITOR_READ_MAX + 2);
        assert_true(longest <= strlen(PREFIX_OUT) + 2 + MONITOR_READ_MAX);
        assert_true(c.n >= 2);
        /* the 10 MiB line comes back whole (the reader hands it out in
         * CRI_LOG_LINE_MAX pieces) */
        assert_int_equal(c.stream[0], CRI_STREAM_STDOUT);
        assert_int_equal(strlen(c.text[0]), CRI_LOG_LINE_MAX);
        assert_int_equal(c.stdout_bytes, total);
        collected_free(&c);
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

/* --log-size-max: a fresh file (conmon's reopen) before a record would
 * cross the limit; a record bigger than the limit still goes whole into
 * an empty file. */
static void test_log_size_max(void **state) {
        _cleanup_free_ char *dir = make_dir();
        _cleanup_free_ char *path = strprintf("%s/0.log", dir);
        _cleanup_free_ char *tmp = strprintf("%s.tmp", path);
        MonitorLog log;
        struct stat st;

        assert_int_equal(monitor_log_open(&log, path, 500), 0);
        for (int i = 0; i < 100; i++)
                assert_int_equal(monitor_log_write(&log, PREFIX_OUT, "hello world\n", 12), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size <= 500);
        assert_true(st.st_size > 0);
        assert_int_equal(access(tmp, F_OK), -1);
        char big[1000];
        memset(big, 'y', sizeof(big));
        assert_int_equal(monitor_log_write(&log, PREFIX_OUT, big, sizeof(big)), 0);
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_size, (off_t)(strlen(PREFIX_OUT) + 2 + sizeof(big) + 1));
        monitor_log_close(&log);
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

/* The ctl FIFO's reopen after the agent renamed the live file away. */
static void test_log_reopen(void **state) {
        _cleanup_free_ char *dir = make_dir();
        _cleanup_free_ char *path = strprintf("%s/0.log", dir);
        _cleanup_free_ char *rotated = strprintf("%s/0.log.20240501-100000", dir);
        _cleanup_free_ char *tmp = strprintf("%s.tmp", path);
        _cleanup_free_ char *a = NULL, *b = NULL;
        MonitorLog log;

        assert_int_equal(monitor_log_open(&log, path, 0), 0);
        assert_int_equal(monitor_log_write(&log, PREFIX_OUT, "one\n", 4), 0);
        assert_int_equal(rename(path, rotated), 0);
        /* a planted name at <log>.tmp is replaced, not followed */
        assert_int_equal(symlink("/etc/passwd", tmp), 0);
        assert_int_equal(monitor_log_reopen(&log), 0);
        assert_int_equal(monitor_log_write(&log, PREFIX_OUT, "two\n", 4), 0);
        monitor_log_close(&log);
        assert_int_equal(read_full_file_at(AT_FDCWD, rotated, 4096, &a, NULL), 0);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 4096, &b, NULL), 0);
        assert_non_null(strstr(a, "F one\n"));
        assert_null(strstr(a, "two"));
        assert_non_null(strstr(b, "F two\n"));
        assert_int_equal(access(tmp, F_OK), -1);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0640);
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

static void test_exit_code(void **state) {
        _cleanup_free_ char *dir = make_dir();
        _cleanup_free_ char *path = strprintf("%s/abc", dir);
        _cleanup_free_ char *tmp = strprintf("%s/.abc.tmp", dir);
        _cleanup_free_ char *data = NULL;
        char code[16];

        assert_int_equal(monitor_exit_code(0), 0);
        assert_int_equal(monitor_exit_code(3 << 8), 3);
        assert_int_equal(monitor_exit_code(255 << 8), 255);
        assert_int_equal(monitor_exit_code(9), 137);   /* killed by SIGKILL */
        assert_int_equal(monitor_exit_code(15), 143);  /* SIGTERM */
        assert_int_equal(monitor_exit_code(0x7f), -1); /* stopped: not an exit */

        (void)snprintf(code, sizeof(code), "%d", monitor_exit_code(9));
        assert_int_equal(monitor_write_file_atomic(path, code), 0);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 64, &data, NULL), 0);
        assert_string_equal(data, "137"); /* no newline, as conmon */
        assert_int_equal(access(tmp, F_OK), -1);
        /* overwritten whole */
        assert_int_equal(monitor_write_file_atomic(path, "0"), 0);
        free(data);
        data = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 64, &data, NULL), 0);
        assert_string_equal(data, "0");
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

static void test_sync_line(void **state) {
        char buf[8192];
        size_t n;

        n = monitor_sync_line(buf, sizeof(buf), 4242, NULL, 0);
        assert_int_equal(n, strlen("{\"data\": 4242}\n"));
        assert_memory_equal(buf, "{\"data\": 4242}\n", n);

        const char msg[] =
                "time=\"x\" level=error msg=\"a \\\"q\\\"\"\n\t\x01 \xc3\xa9 \xff\xfe end";
        n = monitor_sync_line(buf, sizeof(buf), -1, msg, sizeof(msg) - 1);
        assert_int_equal(buf[n - 1], '\n');
        json_error_t jerr;
        json_t *j = json_loadb(buf, n, 0, &jerr);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "data")), -1);
        const char *m = json_string_value(json_object_get(j, "message"));
        assert_non_null(m);
        assert_non_null(strstr(m, "msg=\"a \\\"q\\\"\""));
        assert_non_null(strstr(m, "\xc3\xa9"));  /* valid UTF-8 kept */
        assert_non_null(strstr(m, " ?? end"));   /* invalid bytes replaced */
        assert_non_null(strstr(m, "\n\t\x01 ")); /* control bytes escaped */
        json_decref(j);

        /* A long message is cut, still one valid line, within the buffer. */
        size_t big = 100000;
        _cleanup_free_ char *long_msg = malloc(big);
        for (size_t i = 0; i < big; i++)
                long_msg[i] = "\"\\\n\xc3\xa9x"[i % 6];
        n = monitor_sync_line(buf, sizeof(buf), -1, long_msg, big);
        assert_true(n < sizeof(buf));
        assert_int_equal(buf[n - 1], '\n');
        assert_null(memchr(buf, '\n', n - 1));
        j = json_loadb(buf, n, 0, &jerr);
        assert_non_null(j);
        json_decref(j);
}

static void test_ctl_line(void **state) {
        int type;
        unsigned a, b;
        assert_int_equal(monitor_parse_ctl_line("2 0 0", 5, &type, &a, &b), 0);
        assert_int_equal(type, 2);
        assert_int_equal(monitor_parse_ctl_line("1 24 80", 7, &type, &a, &b), 0);
        assert_int_equal(type, 1);
        assert_int_equal(a, 24);
        assert_int_equal(b, 80);
        assert_int_equal(monitor_parse_ctl_line("2", 1, &type, &a, &b), 0);
        assert_int_equal(monitor_parse_ctl_line("", 0, &type, &a, &b), -EINVAL);
        assert_int_equal(monitor_parse_ctl_line("x y z", 5, &type, &a, &b), -EINVAL);
        assert_int_equal(monitor_parse_ctl_line("1 2", 3, &type, &a, &b), -EINVAL);
        assert_int_equal(monitor_parse_ctl_line("1 2 3 4", 7, &type, &a, &b), -EINVAL);
        char longline[200];
        memset(longline, '1', sizeof(longline));
        assert_int_equal(monitor_parse_ctl_line(longline, sizeof(longline), &type, &a, &b),
                         -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_args),          cmocka_unit_test(test_prefix),
                cmocka_unit_test(test_line_len),      cmocka_unit_test(test_log_records),
                cmocka_unit_test(test_log_huge_line), cmocka_unit_test(test_log_size_max),
                cmocka_unit_test(test_log_reopen),    cmocka_unit_test(test_exit_code),
                cmocka_unit_test(test_sync_line),     cmocka_unit_test(test_ctl_line),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
