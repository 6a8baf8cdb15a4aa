/* The URL source's poll schedule: the first wait within one period, the
 * ±20 % spread, the doubling back-off and its cap, Retry-After honoured
 * and clamped, and Retry-After values from hostile servers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>

#include "poll-schedule.h"

#define SEC USEC_PER_SEC
#define N 20000

static void assert_in(usec_t v, usec_t lo, usec_t hi) { /* [lo, hi) */
        if (v < lo || v >= hi)
                fprintf(stderr, "%llu not in [%llu, %llu)\n", (unsigned long long)v,
                        (unsigned long long)lo, (unsigned long long)hi);
        assert_true(v >= lo && v < hi);
}

/* Boxes started together spread over the whole first period. */
static void test_first_spreads_over_one_period(void **state) {
        (void)state;
        const usec_t p = 20 * SEC;
        unsigned buckets[10] = {};
        for (uint64_t seed = 0; seed < N; seed++) {
                PollSchedule s;
                poll_schedule_init(&s, p, 0, seed);
                usec_t w = poll_schedule_first(&s);
                assert_in(w, 0, p);
                buckets[w / (p / 10)]++;
        }
        /* Each tenth of the period gets its tenth of the boxes (±15 %). */
        for (size_t i = 0; i < 10; i++)
                assert_in(buckets[i], N / 10 * 85 / 100, N / 10 * 115 / 100);
}

static void test_success_jitter_bounds_and_mean(void **state) {
        (void)state;
        const usec_t p = 20 * SEC;
        PollSchedule s;
        poll_schedule_init(&s, p, 0, 42);
        usec_t lo = USEC_INFINITY, hi = 0;
        double sum = 0;
        for (unsigned i = 0; i < N; i++) {
                usec_t w = poll_schedule_success(&s);
                assert_in(w, 16 * SEC, 24 * SEC);
                lo = w < lo ? w : lo;
                hi = w > hi ? w : hi;
                sum += (double)w;
        }
        /* the whole ±20 % is used, and the mean rate is the configured one */
        assert_true(lo < 16 * SEC + SEC / 5);
        assert_true(hi > 24 * SEC - SEC / 5);
        double mean = sum / N;
        assert_true(mean > 0.99 * (double)p && mean < 1.01 * (double)p);
}

static void test_same_seed_same_waits(void **state) {
        (void)state;
        PollSchedule a, b, c;
        poll_schedule_init(&a, 20 * SEC, 0, 7);
        poll_schedule_init(&b, 20 * SEC, 0, 7);
        poll_schedule_init(&c, 20 * SEC, 0, 8);
        unsigned differ = 0;
        for (int i = 0; i < 100; i++) {
                usec_t wa = poll_schedule_success(&a), wb = poll_schedule_success(&b);
                assert_int_equal(wa, wb);
                differ += wa != poll_schedule_success(&c);
        }
        assert_true(differ > 90);
}

/* 2p, 4p, 8p, ... up to the cap, each ±20 %; one success starts over. */
static void test_backoff_growth_and_cap(void **state) {
        (void)state;
        static const unsigned base[] = { 40, 80, 160, 300, 300, 300 };
        PollSchedule s;
        poll_schedule_init(&s, 20 * SEC, 300 * SEC, 1);
        for (int round = 0; round < 2; round++) {
                for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
                        usec_t w = poll_schedule_failure(&s, POLL_NO_RETRY_AFTER);
                        assert_in(w, base[i] * SEC * 8 / 10, base[i] * SEC * 12 / 10);
                        assert_int_equal(s.failures, i + 1);
                }
                assert_in(poll_schedule_success(&s), 16 * SEC, 24 * SEC);
                assert_int_equal(s.failures, 0);
        }
        /* many failures in a row neither overflow nor pass the cap */
        for (int i = 0; i < 4; i++)
                (void)poll_schedule_failure(&s, POLL_NO_RETRY_AFTER);
        for (int i = 0; i < 200; i++)
                assert_in(poll_schedule_failure(&s, POLL_NO_RETRY_AFTER), 240 * SEC, 360 * SEC);
}

/* A cap below the period is the period: a failure never polls faster. */
static void test_cap_below_period(void **state) {
        (void)state;
        PollSchedule s;
        poll_schedule_init(&s, 600 * SEC, 300 * SEC, 3);
        for (int i = 0; i < 5; i++)
                assert_in(poll_schedule_failure(&s, POLL_NO_RETRY_AFTER), 480 * SEC, 720 * SEC);
        /* and the defaults: 5 minutes */
        poll_schedule_init(&s, 0, 0, 3);
        assert_int_equal(s.period, 1);
        assert_int_equal(s.max_backoff, POLL_DEFAULT_MAX_BACKOFF);
}

static void test_retry_after_honoured(void **state) {
        (void)state;
        PollSchedule s;
        poll_schedule_init(&s, 20 * SEC, 300 * SEC, 5);
        /* longer than the back-off (40 s ± 20 %): at least Retry-After,
         * spread by up to one period */
        usec_t lo = USEC_INFINITY, hi = 0;
        for (int i = 0; i < 1000; i++) {
                s.failures = 0;
                usec_t w = poll_schedule_failure(&s, 120 * SEC);
                assert_in(w, 120 * SEC, 140 * SEC);
                lo = w < lo ? w : lo;
                hi = w > hi ? w : hi;
        }
        assert_true(lo < 121 * SEC && hi > 139 * SEC);
        /* shorter than the back-off: the back-off */
        s.failures = 3; /* the next base is 300 s */
        assert_in(poll_schedule_failure(&s, 10 * SEC), 240 * SEC, 360 * SEC);
        /* 0 (a date in the past): the back-off */
        s.failures = 0;
        assert_in(poll_schedule_failure(&s, 0), 32 * SEC, 48 * SEC);
        /* a day, or more than any clock: clamped to the cap */
        s.failures = 0;
        assert_in(poll_schedule_failure(&s, 86400 * SEC), 300 * SEC, 320 * SEC);
        s.failures = 0;
        assert_in(poll_schedule_failure(&s, USEC_INFINITY - 1), 300 * SEC, 320 * SEC);
        /* success ends it all */
        assert_in(poll_schedule_success(&s), 16 * SEC, 24 * SEC);
}

/* Every box told the same instant comes back spread over one period. */
static void test_retry_after_date_spreads_fleet(void **state) {
        (void)state;
        unsigned buckets[4] = {};
        for (uint64_t seed = 0; seed < 4000; seed++) {
                PollSchedule s;
                poll_schedule_init(&s, 20 * SEC, 300 * SEC, seed);
                usec_t w = poll_schedule_failure(&s, 200 * SEC);
                assert_in(w, 200 * SEC, 220 * SEC);
                buckets[(w - 200 * SEC) / (5 * SEC)]++;
        }
        for (size_t i = 0; i < 4; i++)
                assert_in(buckets[i], 850, 1150);
}

static usec_t ra(const char *v, const char *date, time_t now) {
        usec_t d = 12345;
        int r = poll_retry_after_parse(v, date, now, &d);
        if (r < 0) {
                assert_int_equal(r, -EINVAL);
                assert_int_equal(d, 12345); /* untouched */
                return POLL_NO_RETRY_AFTER;
        }
        return d;
}

static void test_retry_after_seconds(void **state) {
        (void)state;
        assert_int_equal(ra("120", NULL, 0), 120 * SEC);
        assert_int_equal(ra("0", NULL, 0), 0);
        assert_int_equal(ra(" \t7 \t", NULL, 0), 7 * SEC);
        assert_int_equal(ra("0000000000000000000000000000000000000000000000000000000042", NULL, 0),
                         42 * SEC);
        /* huge: saturates (the schedule clamps it to the cap), no overflow */
        assert_int_equal(ra("4294967295", NULL, 0), UINT64_C(4294967295) * SEC);
        assert_int_equal(ra("99999999999999999999999999999999", NULL, 0),
                         UINT64_C(4294967295) * SEC);
        assert_int_equal(ra("18446744073709551617", NULL, 0), UINT64_C(4294967295) * SEC);
        /* garbage */
        static const char *const bad[] = {
                "",
                "   ",
                "-5",
                "+5",
                "-0",
                "1.5",
                "5s",
                "0x10",
                "12 34",
                "1e3",
                "5\r\n",
                "5\n",
                "\x01\x02",
                "five",
                "5;6",
                "NaN",
                "inf",
                "5,6",
                "\xff\xfe",
                "Sun",
                "4294967296x",
                "1111111111111111111111111111111111111111111111111111111111111111111111",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                if (ra(bad[i], NULL, 0) != POLL_NO_RETRY_AFTER)
                        fprintf(stderr, "accepted \"%s\"\n", bad[i]);
                assert_int_equal(ra(bad[i], NULL, 0), POLL_NO_RETRY_AFTER);
        }
        assert_int_equal(ra(NULL, NULL, 0), POLL_NO_RETRY_AFTER);
}

static void test_retry_after_dates(void **state) {
        (void)state;
        const time_t t = 784111777; /* Sun, 06 Nov 1994 08:49:37 GMT */
        time_t v;
        assert_int_equal(http_date_parse("Sun, 06 Nov 1994 08:49:37 GMT", &v), 0);
        assert_int_equal(v, t);
        assert_int_equal(http_date_parse("Sunday, 06-Nov-94 08:49:37 GMT", &v), 0);
        assert_int_equal(v, t);
        assert_int_equal(http_date_parse("Sun Nov  6 08:49:37 1994", &v), 0);
        assert_int_equal(v, t);
        assert_int_equal(http_date_parse("Thu, 01 Jan 2026 00:00:00 GMT", &v), 0);
        assert_int_equal(v, 1767225600);
        assert_int_equal(http_date_parse("Thursday, 01-Jan-26 00:00:00 GMT", &v), 0);
        assert_int_equal(v, 1767225600);
        assert_int_equal(http_date_parse("Sat, 29 Feb 2028 12:00:00 GMT", &v), 0);

        /* relative to the local clock when there is no Date header */
        assert_int_equal(ra("Sun, 06 Nov 1994 08:49:37 GMT", NULL, t - 90), 90 * SEC);
        assert_int_equal(ra("Sun Nov  6 08:49:37 1994", NULL, t - 1), 1 * SEC);
        /* relative to the server's Date: a box whose clock is a day off
         * still waits what the server meant */
        assert_int_equal(
                ra("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:48:37 GMT", t + 86400),
                60 * SEC);
        assert_int_equal(ra("Sun, 06 Nov 1994 08:49:37 GMT", "garbage", t - 5), 5 * SEC);
        /* in the past: 0 */
        assert_int_equal(ra("Sun, 06 Nov 1994 08:49:37 GMT", NULL, t + 3600), 0);
        assert_int_equal(ra("Sun, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT", 0),
                         0);
        /* far in the future: a long delay, for the schedule to clamp */
        if (sizeof(time_t) >= 8)
                assert_true(ra("Fri, 31 Dec 9999 23:59:59 GMT", NULL, t) >= 86400 * 365 * SEC);

        static const char *const bad[] = {
                "Sun, 31 Feb 2026 08:49:37 GMT", /* no such day */
                "Sun, 00 Nov 1994 08:49:37 GMT",    "Sun, 06 Nov 1994 24:00:00 GMT",
                "Sun, 06 Nov 1994 08:60:00 GMT",    "Sun, 06 Nov 1994 08:49:37 UTC",
                "Sun, 06 Nov 1994 08:49:37",        "Sun, 06 Nov 1994 08:49:37 GMT trailing",
                "Sun, 06 Foo 1994 08:49:37 GMT",    "Sun, 6 Nov 1994 08:49:37 GMT",
                "Sun, 06 Nov 94 08:49:37 GMT",      "Sun, 06 Nov 1969 08:49:37 GMT",
                "Sun, 06 Nov 1994 8:49:37 GMT",     "Sun,06 Nov 1994 08:49:37 GMT",
                "Sun Nov 6 08:49:37 1994",          "Sun Nov  6 08:49:37 94",
                "Sunday, 06-Nov-1994 08:49:37 GMT", ", 06 Nov 1994 08:49:37 GMT",
                "Sun, 06 Nov 1994 08:49:37 GMT\r",  "Sun, 06 Nov 1994 08:49:37\x00GMT",
                "Sun, 06 Nov 1994 08:4\x01:37 GMT", "Wednesdayyyy, 06 Nov 1994 08:49:37 GMT",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                if (ra(bad[i], NULL, t) != POLL_NO_RETRY_AFTER)
                        fprintf(stderr, "accepted \"%s\"\n", bad[i]);
                assert_int_equal(ra(bad[i], NULL, t), POLL_NO_RETRY_AFTER);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_first_spreads_over_one_period),
                cmocka_unit_test(test_success_jitter_bounds_and_mean),
                cmocka_unit_test(test_same_seed_same_waits),
                cmocka_unit_test(test_backoff_growth_and_cap),
                cmocka_unit_test(test_cap_below_period),
                cmocka_unit_test(test_retry_after_honoured),
                cmocka_unit_test(test_retry_after_date_spreads_fleet),
                cmocka_unit_test(test_retry_after_seconds),
                cmocka_unit_test(test_retry_after_dates),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
