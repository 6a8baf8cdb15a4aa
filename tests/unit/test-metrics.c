/* The metrics registry: the text exposition format (HELP/TYPE, labels
 * escaped, histogram buckets cumulative with +Inf, _sum and _count),
 * numbers as Prometheus' Go clients print them, series made on first use and
 * dropped by label, collectors run before formatting, NULL families ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metrics.h"

static char *format(Metrics *m) {
        char *text = NULL;
        size_t size = 0;
        assert_int_equal(metrics_format(m, &text, &size), 0);
        assert_int_equal(strlen(text), size);
        return text;
}

static void test_counter_and_gauge(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *c, *g, *unused;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &c, METRIC_COUNTER, "x_ops_total", "Ops.",
                                          (const char *const[]){ "kind", NULL }, NULL, 0),
                         0);
        assert_int_equal(metrics_register(m, &g, METRIC_GAUGE, "x_pods", "Pods.", NULL, NULL, 0),
                         0);
        assert_int_equal(metrics_register(m, &unused, METRIC_COUNTER, "x_unused_total",
                                          "Labelled, never counted.",
                                          (const char *const[]){ "kind", NULL }, NULL, 0),
                         0);
        metric_inc(c, METRIC_LABELS("start"));
        metric_add(c, METRIC_LABELS("start"), 2);
        metric_inc(c, METRIC_LABELS("a\"b\\c\nd"));
        metric_add(c, METRIC_LABELS("start"), -5); /* counters never go down */
        metric_set(g, NULL, 0.1);

        _cleanup_free_ char *text = format(m);
        assert_string_equal(text, "# HELP x_ops_total Ops.\n"
                                  "# TYPE x_ops_total counter\n"
                                  "x_ops_total{kind=\"start\"} 3\n"
                                  "x_ops_total{kind=\"a\\\"b\\\\c\\nd\"} 1\n"
                                  "# HELP x_pods Pods.\n"
                                  "# TYPE x_pods gauge\n"
                                  "x_pods 0.1\n");
}

static void test_unlabelled_counter_reads_zero(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *c;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(
                metrics_register(m, &c, METRIC_COUNTER, "x_total", "Help\\me\nnow.", NULL, NULL, 0),
                0);
        _cleanup_free_ char *text = format(m);
        assert_string_equal(text, "# HELP x_total Help\\\\me\\nnow.\n"
                                  "# TYPE x_total counter\n"
                                  "x_total 0\n");
}

static void test_histogram(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *h;
        static const double bounds[] = { 0.5, 1, 3600 };

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &h, METRIC_HISTOGRAM, "x_seconds", "Durations.",
                                          (const char *const[]){ "op", NULL }, bounds, 3),
                         0);
        metric_observe(h, METRIC_LABELS("a"), 0.25);
        metric_observe(h, METRIC_LABELS("a"), 0.5); /* le is inclusive */
        metric_observe(h, METRIC_LABELS("a"), 2);
        metric_observe(h, METRIC_LABELS("a"), 5000);
        _cleanup_free_ char *text = format(m);
        assert_string_equal(text, "# HELP x_seconds Durations.\n"
                                  "# TYPE x_seconds histogram\n"
                                  "x_seconds_bucket{op=\"a\",le=\"0.5\"} 2\n"
                                  "x_seconds_bucket{op=\"a\",le=\"1\"} 2\n"
                                  "x_seconds_bucket{op=\"a\",le=\"3600\"} 3\n"
                                  "x_seconds_bucket{op=\"a\",le=\"+Inf\"} 4\n"
                                  "x_seconds_sum{op=\"a\"} 5002.75\n"
                                  "x_seconds_count{op=\"a\"} 4\n");
}

static void test_numbers_as_go_prints_them(void **state) {
        (void)state;
        static const struct {
                double v;
                const char *text;
        } cases[] = {
                { 0, "0" },
                { 3600, "3600" },
                { 123456, "123456" },
                { 1e6, "1e+06" },
                { 2017960, "2.01796e+06" },
                { 0.1, "0.1" },
                { 0.0125, "0.0125" },
                { 0.0001, "0.0001" },
                { 0.000025, "2.5e-05" },
                { -3, "-3" },
                { 1.0 / 3, "0.3333333333333333" },
                { 745.0580596923828, "745.0580596923828" },
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
                _cleanup_(metrics_freep) Metrics *m = NULL;
                MetricFamily *g;
                char want[128];

                assert_int_equal(metrics_new(&m), 0);
                assert_int_equal(metrics_register(m, &g, METRIC_GAUGE, "g", "G.", NULL, NULL, 0),
                                 0);
                metric_set(g, NULL, cases[i].v);
                _cleanup_free_ char *text = format(m);
                snprintf(want, sizeof want, "# HELP g G.\n# TYPE g gauge\ng %s\n", cases[i].text);
                assert_string_equal(text, want);
        }
}

static void test_remove_where_and_clear(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *g;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &g, METRIC_GAUGE, "g", "G.",
                                          (const char *const[]){ "pod", "c", NULL }, NULL, 0),
                         0);
        metric_set(g, METRIC_LABELS("p1", "a"), 1);
        metric_set(g, METRIC_LABELS("p2", "a"), 2);
        metric_set(g, METRIC_LABELS("p1", "b"), 3);
        metric_remove_where(g, "pod", "p1");
        metric_remove_where(g, "nolabel", "p2"); /* no such label: nothing */
        _cleanup_free_ char *text = format(m);
        assert_string_equal(text, "# HELP g G.\n# TYPE g gauge\ng{pod=\"p2\",c=\"a\"} 2\n");
        metric_clear(g);
        _cleanup_free_ char *empty = format(m);
        assert_string_equal(empty, ""); /* a labelled family without series is left out */
}

static void test_register_twice(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *a, *b, *c;
        const char *const labels[] = { "x", NULL };

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &a, METRIC_COUNTER, "c_total", "C.", labels, NULL, 0),
                         0);
        assert_int_equal(metrics_register(m, &b, METRIC_COUNTER, "c_total", "C.", labels, NULL, 0),
                         0);
        assert_ptr_equal(a, b);
        assert_int_equal(metrics_register(m, &c, METRIC_GAUGE, "c_total", "C.", labels, NULL, 0),
                         -EEXIST);
        assert_int_equal(metrics_register(m, &c, METRIC_COUNTER, "c_total", "C.", NULL, NULL, 0),
                         -EEXIST);
}

static void test_null_is_ignored(void **state) {
        (void)state;
        MetricFamily *f = (MetricFamily *)0x1;

        assert_int_equal(metrics_register(NULL, &f, METRIC_COUNTER, "x_total", "X.", NULL, NULL, 0),
                         0);
        assert_null(f);
        metric_inc(f, NULL);
        metric_set(f, METRIC_LABELS("a"), 1);
        metric_observe(f, NULL, 1);
        metric_remove_where(f, "a", "b");
        metric_clear(f);
}

typedef struct Collected {
        MetricFamily *g;
        unsigned calls;
} Collected;

static int collect(Metrics *m, void *userdata) {
        Collected *c = userdata;
        metric_set(c->g, NULL, ++c->calls);
        return 0;
}

static int collect_fails(Metrics *m, void *userdata) {
        return -EIO;
}

static void test_collectors(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        Collected c = {};
        char *text = NULL;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &c.g, METRIC_GAUGE, "calls", "Calls.", NULL, NULL, 0),
                         0);
        assert_int_equal(metrics_add_collector(m, collect, &c), 0);
        free(format(m));
        _cleanup_free_ char *second = format(m);
        assert_string_equal(second, "# HELP calls Calls.\n# TYPE calls gauge\ncalls 2\n");
        assert_int_equal(metrics_add_collector(m, collect_fails, NULL), 0);
        assert_int_equal(metrics_format(m, &text, NULL), -EIO);
        assert_null(text);
}

/* Prometheus refuses a whole scrape whose label values are not UTF-8: a
 * hostile byte is replaced, a valid multi-byte character kept, and CR, tab
 * and the escapes go through as the format wants them. */
static void test_label_values_made_utf8(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *g;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &g, METRIC_GAUGE, "x_info", "Info.",
                                          (const char *const[]){ "v", NULL }, NULL, 0),
                         0);
        metric_set(g, METRIC_LABELS("a\xff\xc3\xa9\xc0\xafz"), 1);   /* ff, é, overlong / */
        metric_set(g, METRIC_LABELS("\xed\xa0\x80\xe2\x82"), 2);     /* surrogate, cut short */
        metric_set(g, METRIC_LABELS("\xf4\x90\x80\x80\r\t\"\n"), 3); /* > U+10FFFF */

        _cleanup_free_ char *text = format(m);
        assert_string_equal(text, "# HELP x_info Info.\n"
                                  "# TYPE x_info gauge\n"
                                  "x_info{v=\"a\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd\xef\xbf\xbdz\"} 1\n"
                                  "x_info{v=\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                  "\xef\xbf\xbd\"} 2\n"
                                  "x_info{v=\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                  "\r\t\\\"\\n\"} 3\n");
}

/* A value read at a known time carries it in ms; metric_set() drops it. */
static void test_timestamps(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;
        MetricFamily *c, *g;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_register(m, &c, METRIC_COUNTER, "x_cpu_seconds_total", "CPU.",
                                          (const char *const[]){ "pod", NULL }, NULL, 0),
                         0);
        assert_int_equal(metrics_register(m, &g, METRIC_GAUGE, "x_bytes", "Bytes.", NULL, NULL, 0),
                         0);
        metric_set_at(c, METRIC_LABELS("a"), 1.5, 1700000000123456ULL);
        metric_set_at(c, METRIC_LABELS("b"), 2, 1700000000123456ULL);
        metric_set(c, METRIC_LABELS("b"), 3);
        metric_set_at(g, NULL, 7, 2000);

        _cleanup_free_ char *text = format(m);
        assert_string_equal(text, "# HELP x_cpu_seconds_total CPU.\n"
                                  "# TYPE x_cpu_seconds_total counter\n"
                                  "x_cpu_seconds_total{pod=\"a\"} 1.5 1700000000123\n"
                                  "x_cpu_seconds_total{pod=\"b\"} 3\n"
                                  "# HELP x_bytes Bytes.\n"
                                  "# TYPE x_bytes gauge\n"
                                  "x_bytes 7 2\n");
}

static void test_process_collector(void **state) {
        (void)state;
        _cleanup_(metrics_freep) Metrics *m = NULL;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(metrics_add_process_collector(m), 0);
        assert_int_equal(metrics_add_process_collector(m), -EEXIST);
        _cleanup_free_ char *text = format(m);
        assert_non_null(strstr(text, "# TYPE process_cpu_seconds_total counter\n"));
        assert_non_null(strstr(text, "\nprocess_resident_memory_bytes "));
        assert_non_null(strstr(text, "\nprocess_virtual_memory_bytes "));
        assert_non_null(strstr(text, "\nprocess_max_fds "));
        assert_null(strstr(text, "\nprocess_open_fds 0\n"));
        const char *start = strstr(text, "\nprocess_start_time_seconds ");
        assert_non_null(start);
        assert_true(strtod(start + strlen("\nprocess_start_time_seconds "), NULL) > 1.5e9);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_counter_and_gauge),
                cmocka_unit_test(test_unlabelled_counter_reads_zero),
                cmocka_unit_test(test_histogram),
                cmocka_unit_test(test_numbers_as_go_prints_them),
                cmocka_unit_test(test_remove_where_and_clear),
                cmocka_unit_test(test_register_twice),
                cmocka_unit_test(test_null_is_ignored),
                cmocka_unit_test(test_collectors),
                cmocka_unit_test(test_label_values_made_utf8),
                cmocka_unit_test(test_timestamps),
                cmocka_unit_test(test_process_collector),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
