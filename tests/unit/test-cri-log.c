/* src/cli/cri-log: CRI log records, timestamps, partial-line joining. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "cri-log.h"
#include "string-util.h"

static void test_timestamp(void **state) {
        int64_t t;
        const char *s;

        s = "1970-01-01T00:00:00Z";
        assert_int_equal(timestamp_parse_rfc3339(s, strlen(s), &t), 0);
        assert_int_equal(t, 0);
        s = "2024-05-01T10:00:00.123456789Z";
        assert_int_equal(timestamp_parse_rfc3339(s, strlen(s), &t), 0);
        assert_int_equal(t, 1714557600LL * 1000000000LL + 123456789);
        s = "2024-05-01T12:00:00.5+02:00";
        assert_int_equal(timestamp_parse_rfc3339(s, strlen(s), &t), 0);
        assert_int_equal(t, 1714557600LL * 1000000000LL + 500000000);
        s = "2024-05-01T09:30:00-00:30";
        assert_int_equal(timestamp_parse_rfc3339(s, strlen(s), &t), 0);
        assert_int_equal(t, 1714557600LL * 1000000000LL);
        /* more than nanosecond precision is cut */
        s = "2000-02-29T00:00:00.0000000019Z";
        assert_int_equal(timestamp_parse_rfc3339(s, strlen(s), &t), 0);
        assert_int_equal(t, 951782400LL * 1000000000LL + 1);

        const char *bad[] = { "",
                              "2024-05-01",
                              "2024-05-01T10:00:00",
                              "2024-13-01T10:00:00Z",
                              "2024-05-01T10:00:00.Z",
                              "2024-05-01T10:00:00Zx",
                              "2024-05-01T25:00:00Z",
                              "2024-05-01T10:00:00+0200",
                              "x024-05-01T10:00:00Z" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(timestamp_parse_rfc3339(bad[i], strlen(bad[i]), &t), -EINVAL);
}

static void test_record(void **state) {
        CriLogRecord r;
        const char *l;

        l = "2024-05-01T10:00:00.000000001Z stdout F hello world";
        assert_int_equal(cri_log_record_parse(l, strlen(l), &r), 0);
        assert_int_equal(r.stream, CRI_STREAM_STDOUT);
        assert_false(r.partial);
        assert_int_equal(r.text_len, 11);
        assert_memory_equal(r.text, "hello world", 11);
        assert_int_equal(r.time_len, 30);

        l = "2024-05-01T10:00:00Z stderr P part";
        assert_int_equal(cri_log_record_parse(l, strlen(l), &r), 0);
        assert_int_equal(r.stream, CRI_STREAM_STDERR);
        assert_true(r.partial);

        /* extra tags after ':' are ignored; empty text with or without the space */
        l = "2024-05-01T10:00:00Z stdout F:x ";
        assert_int_equal(cri_log_record_parse(l, strlen(l), &r), 0);
        assert_int_equal(r.text_len, 0);
        l = "2024-05-01T10:00:00Z stdout F";
        assert_int_equal(cri_log_record_parse(l, strlen(l), &r), 0);
        assert_int_equal(r.text_len, 0);
        /* text keeps its own spaces */
        l = "2024-05-01T10:00:00Z stdout F  two  spaces ";
        assert_int_equal(cri_log_record_parse(l, strlen(l), &r), 0);
        assert_int_equal(r.text_len, 13);

        const char *bad[] = { "",
                              "garbage",
                              "2024-05-01T10:00:00Z",
                              "2024-05-01T10:00:00Z stdout",
                              "2024-05-01T10:00:00Z stdin F x",
                              "notatime stdout F x",
                              "2024-05-01T10:00:00Z stdout  x" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                assert_int_equal(cri_log_record_parse(bad[i], strlen(bad[i]), &r), -EINVAL);
}

typedef struct Collected {
        char *text;
        size_t len, cap;
        unsigned n;
        int64_t last_ts;
        char last_time[CRI_TIME_MAX];
} Collected;

static int collect(const CriLogLine *line, void *userdata) {
        Collected *c = userdata;
        const char *s = line->stream == CRI_STREAM_STDOUT ? "o" : "e";
        assert_non_null(cri_stream_to_string(line->stream));
        assert_int_equal(strbuf_append(&c->text, &c->len, &c->cap, s, 1), 0);
        assert_int_equal(strbuf_append(&c->text, &c->len, &c->cap, ":", 1), 0);
        assert_int_equal(strbuf_append(&c->text, &c->len, &c->cap, line->text, line->text_len), 0);
        assert_int_equal(strbuf_append(&c->text, &c->len, &c->cap, "|", 1), 0);
        c->n++;
        c->last_ts = line->timestamp;
        strcpy(c->last_time, line->time_str);
        return 0;
}

static void test_reader_joining(void **state) {
        Collected c = {};
        CriLogReader r;
        const char *data = "2024-05-01T10:00:00.1Z stdout F one\n"
                           "2024-05-01T10:00:00.2Z stdout P tw\n"
                           "2024-05-01T10:00:00.3Z stderr F err\n" /* interleaved stream */
                           "this line is damaged\n"
                           "2024-05-01T10:00:00.4Z stdout P o-\n"
                           "2024-05-01T10:00:00.5Z stdout F two\n"
                           "\n"
                           "2024-05-01T10:00:00.6Z stdout F \n";

        cri_log_reader_init(&r, collect, &c);
        assert_int_equal(cri_log_reader_feed(&r, data, strlen(data)), 0);
        assert_int_equal(cri_log_reader_flush(&r), 0);
        assert_string_equal(c.text, "o:one|e:err|o:two-two|o:|");
        assert_int_equal(c.n, 4);
        assert_int_equal(r.n_bad, 1);
        cri_log_reader_deinit(&r);
        free(c.text);
}

static void test_reader_byte_by_byte(void **state) {
        Collected c = {};
        CriLogReader r;
        const char *data = "2024-05-01T10:00:00.1Z stdout P a\n"
                           "2024-05-01T10:00:00.2Z stdout P b\n"
                           "2024-05-01T10:00:00.3Z stdout F c\n"
                           "2024-05-01T10:00:01Z stderr F last"; /* no newline: flush parses it */

        cri_log_reader_init(&r, collect, &c);
        for (size_t i = 0; i < strlen(data); i++)
                assert_int_equal(cri_log_reader_feed(&r, data + i, 1), 0);
        assert_int_equal(c.n, 1);
        /* a joined line carries its first record's time */
        assert_string_equal(c.last_time, "2024-05-01T10:00:00.1Z");
        assert_int_equal(cri_log_reader_flush(&r), 0);
        assert_string_equal(c.text, "o:abc|e:last|");
        assert_int_equal(c.last_ts, 1714557601LL * 1000000000LL);
        cri_log_reader_deinit(&r);
        free(c.text);
}

static void test_reader_dangling_partial(void **state) {
        Collected c = {};
        CriLogReader r;
        const char *data = "2024-05-01T10:00:00Z stdout P never finished\n";

        cri_log_reader_init(&r, collect, &c);
        assert_int_equal(cri_log_reader_feed(&r, data, strlen(data)), 0);
        assert_int_equal(c.n, 0);
        assert_int_equal(cri_log_reader_flush(&r), 0);
        assert_string_equal(c.text, "o:never finished|");
        cri_log_reader_deinit(&r);
        free(c.text);
}

static int stop_at_second(const CriLogLine *line, void *userdata) {
        unsigned *n = userdata;
        return ++*n == 2 ? -ECANCELED : 0;
}

static void test_reader_stop(void **state) {
        CriLogReader r;
        unsigned n = 0;
        const char *data = "2024-05-01T10:00:00Z stdout F 1\n2024-05-01T10:00:00Z stdout F 2\n"
                           "2024-05-01T10:00:00Z stdout F 3\n";
        cri_log_reader_init(&r, stop_at_second, &n);
        assert_int_equal(cri_log_reader_feed(&r, data, strlen(data)), -ECANCELED);
        assert_int_equal(n, 2);
        cri_log_reader_deinit(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_timestamp),
                cmocka_unit_test(test_record),
                cmocka_unit_test(test_reader_joining),
                cmocka_unit_test(test_reader_byte_by_byte),
                cmocka_unit_test(test_reader_dangling_partial),
                cmocka_unit_test(test_reader_stop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
