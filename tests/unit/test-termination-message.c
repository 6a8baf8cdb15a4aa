/* src/pod/termination-message: kubelet's FallbackToLogsOnError message,
 * the end of the CRI log (last 80 records, last 2048 bytes of their text). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "string-util.h"
#include "termination-message.h"

#define TS "2024-05-01T10:00:00.123456789Z"

static char *message(const char *log, bool truncated) {
        char *m = NULL;
        assert_int_equal(termination_message_from_log(log, strlen(log), truncated, &m), 0);
        return m;
}

static void test_wanted(void **state) {
        (void)state;
        TerminationMessagePolicy fb = TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR;
        assert_true(termination_message_from_log_wanted(fb, 1, NULL));
        assert_true(termination_message_from_log_wanted(fb, 137, ""));
        /* the message file wins when it says something */
        assert_false(termination_message_from_log_wanted(fb, 1, "bye"));
        /* only a failure falls back */
        assert_false(termination_message_from_log_wanted(fb, 0, NULL));
        assert_false(termination_message_from_log_wanted(TERMINATION_MESSAGE_FILE, 1, NULL));
}

static void test_records(void **state) {
        (void)state;
        char *m;

        /* stdout and stderr as they interleave; full records end in a
         * newline, partial ones join the next */
        m = message(TS " stdout F one\n" TS " stderr P tw\n" TS " stderr F o\n" TS
                       " stdout F three\n",
                    false);
        assert_string_equal(m, "one\ntwo\nthree\n");
        free(m);

        /* a last record cut short (no newline): its text without one */
        m = message(TS " stdout F one\n" TS " stdout F tw", false);
        assert_string_equal(m, "one\ntw");
        free(m);

        /* tags after ':' and empty texts; damaged records are skipped */
        m = message(TS " stdout F:x a\n" TS " stdout F \n"
                       "garbage\n" TS " stdin F no\n" TS " stdout Q no\n\n" TS " stdout F b\n",
                    false);
        assert_string_equal(m, "a\n\nb\n");
        free(m);

        /* nothing: no message */
        m = message("", false);
        assert_null(m);
        m = message("garbage\n", false);
        assert_null(m);
}

/* The last 80 records, whatever came before. */
static void test_last_80_lines(void **state) {
        (void)state;
        char *log = NULL, *expect = NULL;
        size_t n = 0, cap = 0, en = 0, ecap = 0;
        for (int i = 0; i < 100; i++) {
                char line[128], text[16];
                snprintf(text, sizeof text, "%d\n", i);
                snprintf(line, sizeof line, TS " stdout F %s", text);
                assert_int_equal(strbuf_append(&log, &n, &cap, line, strlen(line)), 0);
                if (i >= 20)
                        assert_int_equal(strbuf_append(&expect, &en, &ecap, text, strlen(text)), 0);
        }
        char *m = message(log, false);
        assert_string_equal(m, expect);
        free(m);
        free(log);
        free(expect);
}

/* At most 2048 bytes, the end kept: a long last line keeps its end, and
 * earlier lines are left out once the end fills the buffer. */
static void test_last_2048_bytes(void **state) {
        (void)state;
        size_t len = 5000;
        char *text = malloc(len + 1);
        assert_non_null(text);
        for (size_t i = 0; i < len; i++)
                text[i] = (char)('a' + i % 26);
        text[len] = 0;
        char *log = strprintf(TS " stdout F first\n" TS " stderr F %s\n", text);
        assert_non_null(log);
        char *m = message(log, false);
        assert_int_equal(strlen(m), TERMINATION_LOG_BYTES);
        assert_memory_equal(m, text + len - (TERMINATION_LOG_BYTES - 1), TERMINATION_LOG_BYTES - 1);
        assert_int_equal(m[TERMINATION_LOG_BYTES - 1], '\n');
        assert_null(strstr(m, "first"));
        free(m);
        free(log);

        /* under 2048 in all: every line */
        log = strprintf(TS " stdout F first\n" TS " stderr F %.2000s\n", text);
        m = message(log, false);
        assert_int_equal(strlen(m), 6 + 2001);
        assert_true(startswith(m, "first\nabc"));
        free(m);
        free(log);
        free(text);
}

/* A read that starts inside a record: that record's visible bytes are
 * text (no header left to see); a complete one is parsed as usual. */
static void test_truncated(void **state) {
        (void)state;
        char *m = message("xyz end of a long record\n" TS " stdout F last\n", true);
        assert_string_equal(m, "xyz end of a long record\nlast\n");
        free(m);
        m = message(TS " stdout F whole\n", false);
        assert_string_equal(m, "whole\n");
        free(m);
}

/* The container's bytes: what is not UTF-8 becomes U+FFFD, so the status
 * JSON always takes it; a cut through a character at the 2048-byte edge
 * too. */
static void test_utf8(void **state) {
        (void)state;
        char *m = message(TS " stdout F a\xff"
                             "b\n",
                          false);
        assert_string_equal(m, "a\xef\xbf\xbd"
                               "b\n");
        free(m);

        char text[TERMINATION_LOG_BYTES + 8];
        memset(text, 'x', sizeof text);
        text[0] = '\xc3'; /* é, its second byte just inside the 2048 */
        text[1] = '\xa9';
        size_t keep = TERMINATION_LOG_BYTES - 2; /* text after byte 1, and '\n' */
        text[2 + keep] = 0;
        char *log = strprintf(TS " stdout F %s\n", text);
        m = message(log, false);
        assert_true(startswith(m, "\xef\xbf\xbdxxx"));
        assert_int_equal(strlen(m), 3 + keep + 1);
        free(m);
        free(log);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wanted),        cmocka_unit_test(test_records),
                cmocka_unit_test(test_last_80_lines), cmocka_unit_test(test_last_2048_bytes),
                cmocka_unit_test(test_truncated),     cmocka_unit_test(test_utf8),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
