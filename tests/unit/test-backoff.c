/* Restart back-off: the 10 s doubling schedule, its 300 s cap and the reset
 * after a long run (docs/internals/runtime.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backoff.h"

#define SEC USEC_PER_SEC

static void test_sequence(void **state) {
        (void)state;
        /* kubelet: the first exit restarts at once, then 10 s, doubling to 300 s. */
        static const unsigned expected[] = { 0, 10, 20, 40, 80, 160, 300, 300, 300 };
        ContainerState c = { .exit_code = -1 };
        usec_t now = 1000 * SEC;

        for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
                /* Each attempt runs 1 s and crashes. */
                c.running_since = now;
                now += SEC;
                backoff_on_exit(&c, now);
                assert_int_equal(c.backoff_delay, expected[i] * SEC);
                assert_int_equal(c.backoff_until, now + expected[i] * SEC);
                assert_int_equal(c.running_since, 0);
                if (expected[i] == 0) {
                        assert_false(backoff_active(&c, now));
                        continue;
                }
                assert_true(backoff_active(&c, now));
                assert_true(backoff_active(&c, c.backoff_until - 1));
                assert_false(backoff_active(&c, c.backoff_until));
                now = c.backoff_until;
        }
}

static void test_reset_after_long_run(void **state) {
        (void)state;
        ContainerState c = {};
        usec_t now = 5000 * SEC;

        for (int i = 0; i < 5; i++) {
                c.running_since = now;
                now += 2 * SEC;
                backoff_on_exit(&c, now);
        }
        assert_int_equal(c.backoff_delay, 80 * SEC);

        /* Just under 10 minutes does not reset. */
        c.running_since = now;
        now += 600 * SEC - 1;
        backoff_on_exit(&c, now);
        assert_int_equal(c.backoff_delay, 160 * SEC);

        /* 10 minutes of running: the next exit counts as the first. */
        c.running_since = now;
        now += 600 * SEC;
        backoff_on_exit(&c, now);
        assert_int_equal(c.backoff_delay, 0);
        assert_int_equal(c.backoff_until, now);
        c.running_since = now;
        now += SEC;
        backoff_on_exit(&c, now);
        assert_int_equal(c.backoff_delay, 10 * SEC);
}

static void test_failed_start(void **state) {
        (void)state;
        /* A start that failed (image pull, create) waits from the first
         * failure, as kubelet's image back-off: 10 s, 20 s, ... */
        ContainerState c = {};
        backoff_on_failed_start(&c, 100 * SEC);
        assert_int_equal(c.backoff_delay, 10 * SEC);
        assert_int_equal(c.backoff_until, 110 * SEC);
        backoff_on_failed_start(&c, 200 * SEC);
        assert_int_equal(c.backoff_delay, 20 * SEC);
        assert_int_equal(c.backoff_until, 220 * SEC);
        /* Started at last, then crashed: the window goes on doubling. */
        c.running_since = 230 * SEC;
        backoff_on_exit(&c, 231 * SEC);
        assert_int_equal(c.backoff_delay, 40 * SEC);
}

static void test_next_delay(void **state) {
        (void)state;
        assert_int_equal(backoff_next_delay(0, 0), BACKOFF_INITIAL_USEC);
        assert_int_equal(backoff_next_delay(150 * SEC, 0), 300 * SEC);
        assert_int_equal(backoff_next_delay(160 * SEC, 0), 300 * SEC);
        assert_int_equal(backoff_next_delay(300 * SEC, 0), 300 * SEC);
        assert_int_equal(backoff_next_delay(300 * SEC, BACKOFF_RESET_USEC), 10 * SEC);
}

static void test_sandbox(void **state) {
        (void)state;
        PodState s = {};
        backoff_sandbox_failed(&s, 10 * SEC);
        assert_int_equal(s.sandbox_backoff_until, 20 * SEC);
        backoff_sandbox_failed(&s, 20 * SEC);
        assert_int_equal(s.sandbox_backoff_delay, 20 * SEC);
        assert_int_equal(s.sandbox_backoff_until, 40 * SEC);
}

/* After an agent restart the back-off follows from the restart count and
 * the last exit's time: the same schedule as if every exit had been seen. */
static void test_restore(void **state) {
        (void)state;
        static const unsigned expected[] = { 0, 10, 20, 40, 80, 160, 300, 300, 300 };
        usec_t rt = 5000000 * SEC, mono = 1000 * SEC;

        for (unsigned n = 0; n < sizeof(expected) / sizeof(expected[0]); n++) {
                ContainerState c = { .exit_code = -1, .running_since = 7 };
                /* exited 2 s ago after a 1 s run */
                backoff_restore(&c, n, rt - 3 * SEC, rt - 2 * SEC, rt, mono);
                assert_int_equal(c.backoff_delay, expected[n] * SEC);
                assert_int_equal(c.running_since, 0);
                if (expected[n] == 0) {
                        assert_false(backoff_active(&c, mono));
                        continue;
                }
                assert_int_equal(c.backoff_until, mono + (expected[n] - 2) * SEC);
                /* the next exit continues the schedule */
                c.running_since = mono;
                backoff_on_exit(&c, mono + SEC);
                assert_int_equal(
                        c.backoff_delay,
                        (n + 1 < sizeof(expected) / sizeof(expected[0]) ? expected[n + 1] : 300) *
                                SEC);
        }

        /* a wait that already passed while the agent was down */
        ContainerState c = { .exit_code = -1 };
        backoff_restore(&c, 1, rt - 60 * SEC, rt - 30 * SEC, rt, mono);
        assert_false(backoff_active(&c, mono));
        /* a long run resets it */
        backoff_restore(&c, 5, rt - 700 * SEC, rt - SEC, rt, mono);
        assert_int_equal(c.backoff_delay, 0);
        assert_false(backoff_active(&c, mono));
        /* a huge restart count stays capped; a finish time in the future waits the whole delay */
        backoff_restore(&c, 4000000000U, rt - 2 * SEC, rt + 50 * SEC, rt, mono);
        assert_int_equal(c.backoff_delay, 300 * SEC);
        assert_int_equal(c.backoff_until, mono + 300 * SEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sequence),     cmocka_unit_test(test_reset_after_long_run),
                cmocka_unit_test(test_failed_start), cmocka_unit_test(test_next_delay),
                cmocka_unit_test(test_sandbox),      cmocka_unit_test(test_restore),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
