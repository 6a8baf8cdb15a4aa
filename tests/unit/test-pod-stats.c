/* The Summary API's pure parts: CPU samples (which sample a rate is taken
 * from, forgetting gone cgroups) and the JSON (kubelet's v1alpha1 field
 * names, optional fields left out when unknown). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-util.h"
#include "pod-stats.h"

#define S USEC_PER_SEC

static char *format_metrics(Metrics *m) {
        char *text = NULL;
        assert_int_equal(metrics_format(m, &text, NULL), 0);
        return text;
}

static void test_samples(void **state) {
        _cleanup_(cpu_samples_freep) CpuSamples *s = cpu_samples_new();
        uint64_t r;

        assert_non_null(s);
        assert_int_equal(cpu_samples_nano_cores(s, "/a", 100, 10 * S, &r), -ENODATA);
        assert_false(cpu_samples_has(s, "/a"));

        assert_int_equal(cpu_samples_record(s, "/a", 0, 100 * S), 0);
        assert_true(cpu_samples_has(s, "/a"));
        /* Too young a sample gives no rate: the window would be noise. */
        assert_int_equal(cpu_samples_nano_cores(s, "/a", 1000, 100 * S + S / 2, &r), -ENODATA);
        /* Half a core over 2 s. */
        assert_int_equal(cpu_samples_nano_cores(s, "/a", 1000000000ULL, 102 * S, &r), 0);
        assert_int_equal(r, 500000000ULL);

        /* A timer sample just before the request: the older one is used. */
        assert_int_equal(cpu_samples_record(s, "/a", 10000000000ULL, 110 * S), 0);
        assert_int_equal(cpu_samples_nano_cores(s, "/a", 10000000000ULL + 100000000ULL,
                                                110 * S + S / 10, &r),
                         0);
        /* (10.1e9 − 0) ns over 10.1 s */
        assert_int_equal(r, 1000000000ULL);
        /* Once it is old enough, the newest one. */
        assert_int_equal(cpu_samples_nano_cores(s, "/a", 12000000000ULL, 114 * S, &r), 0);
        assert_int_equal(r, 500000000ULL);

        /* A counter that went backwards (a recreated cgroup): no rate. */
        assert_int_equal(cpu_samples_nano_cores(s, "/a", 5, 120 * S, &r), -ENODATA);

        /* Sweeps forget what was not recorded since the previous sweep. */
        assert_int_equal(cpu_samples_record(s, "/b", 1, 100 * S), 0);
        cpu_samples_sweep(s); /* both recorded: kept */
        assert_true(cpu_samples_has(s, "/a"));
        assert_true(cpu_samples_has(s, "/b"));
        assert_int_equal(cpu_samples_record(s, "/b", 2, 110 * S), 0);
        cpu_samples_sweep(s);
        assert_false(cpu_samples_has(s, "/a"));
        assert_true(cpu_samples_has(s, "/b"));

        /* Many keys (the table grows). */
        for (unsigned i = 0; i < 100; i++) {
                char k[32];
                snprintf(k, sizeof k, "/k%u", i);
                assert_int_equal(cpu_samples_record(s, k, i, S), 0);
        }
        assert_true(cpu_samples_has(s, "/k99"));
        assert_int_equal(cpu_samples_nano_cores(s, "/k99", 99 + 1000000000ULL, 2 * S, &r), 0);
        assert_int_equal(r, 1000000000ULL);

        /* Passes in the timer's order, in reverse, with a key recorded twice
         * in a row and a new one in the middle: each sample lands on its own
         * key (one core each over the last second). */
        for (unsigned pass = 0; pass < 3; pass++)
                for (unsigned j = 0; j < 100; j++) {
                        unsigned i = pass == 1 ? 99 - j : j;
                        char k[32];
                        snprintf(k, sizeof k, "/k%u", i);
                        uint64_t u = i + (pass + 1) * 1000000000ULL;
                        assert_int_equal(cpu_samples_record(s, k, u, (2 + pass) * S), 0);
                        if (pass == 2 && i == 50) {
                                assert_int_equal(cpu_samples_record(s, k, u, (2 + pass) * S), 0);
                                assert_int_equal(cpu_samples_record(s, "/new", 0, 4 * S), 0);
                        }
                }
        cpu_samples_sweep(s);
        assert_false(cpu_samples_has(s, "/b"));
        for (unsigned i = 0; i < 100; i++) {
                char k[32];
                snprintf(k, sizeof k, "/k%u", i);
                assert_int_equal(cpu_samples_nano_cores(s, k, i + 4000000000ULL, 5 * S, &r), 0);
                assert_int_equal(r, 1000000000ULL);
        }
        assert_int_equal(cpu_samples_nano_cores(s, "/new", 1000000000ULL, 5 * S, &r), 0);
        assert_int_equal(r, 1000000000ULL);
}

static json_t *get(json_t *o, const char *path) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", path);
        for (char *save = NULL, *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
                if (json_is_array(o))
                        o = json_array_get(o, strtoul(k, NULL, 10));
                else
                        o = json_object_get(o, k);
                if (!o)
                        return NULL;
        }
        return o;
}

static long long num(json_t *o, const char *path) {
        json_t *v = get(o, path);
        assert_non_null(v);
        assert_true(json_is_integer(v));
        return json_integer_value(v);
}

static const char *str(json_t *o, const char *path) {
        json_t *v = get(o, path);
        assert_non_null(v);
        assert_true(json_is_string(v));
        return json_string_value(v);
}

static void assert_keys(json_t *o, const char *const *keys) {
        size_t n = 0;
        assert_true(json_is_object(o));
        for (; keys[n]; n++)
                if (!json_object_get(o, keys[n]))
                        fail_msg("missing key %s", keys[n]);
        if (json_object_size(o) != n) {
                const char *k;
                json_t *v;
                json_object_foreach(o, k, v) fprintf(stderr, "key: %s\n", k);
                fail_msg("%zu keys, expected %zu", json_object_size(o), n);
        }
}

static void test_format(void **state) {
        usec_t t = 1700000000ULL * S; /* 2023-11-14T22:13:20Z */
        FsInfo fs = { .capacity = 1000000,
                      .used = 400000,
                      .available = 500000,
                      .inodes = 1000,
                      .inodes_free = 900 };
        ContainerSummary c[2] = {
                { .name = "main",
                  .start_time = t + 5 * S,
                  .usage = { .time = t + 60 * S,
                             .cg = { .has_cpu = true,
                                     .cpu_usage_ns = 12345678901ULL,
                                     .has_memory = true,
                                     .memory_usage = 300,
                                     .memory_working_set = 200,
                                     .memory_rss = 150,
                                     .memory_pgfault = 10,
                                     .memory_pgmajfault = 1,
                                     .has_memory_available = true,
                                     .memory_available = 800 },
                             .has_nano_cores = true,
                             .nano_cores = 999 },
                  .rootfs = { .time = t + 60 * S, .fs = fs, .used = { true, 8192, 3 } },
                  .logs = { .time = t + 60 * S, .fs = fs } },
                /* a container whose cgroup could not be read, no rate yet */
                { .name = "side", .start_time = t + 6 * S },
        };
        VolumeSummary v[1] = {
                { .name = "data",
                  .fs = { .time = t + 60 * S, .fs = fs, .used = { true, 4096, 2 } } }
        };
        PodSummary p[1] = { {
                .name = "web-node1",
                .namespace = "default",
                .uid = "0123",
                .start_time = t,
                .containers = c,
                .n_containers = 2,
                .usage = { .time = t + 60 * S,
                           .cg = { .has_cpu = true,
                                   .cpu_usage_ns = 5,
                                   .has_pids = true,
                                   .pids_current = 42 } },
                .ephemeral_storage = { .time = t + 60 * S, .fs = fs, .used = { true, 9000, 4 } },
                .volumes = v,
                .n_volumes = 1,
        } };
        NodeSummary node = {
                .node_name = "node1",
                .start_time = t - 3600 * S,
                .usage = { .time = t + 60 * S,
                           .cg = { .has_cpu = true,
                                   .cpu_usage_ns = 7,
                                   .has_memory = true,
                                   .memory_usage = 5,
                                   .has_memory_available = true,
                                   .memory_available = 6 },
                           .has_nano_cores = true,
                           .nano_cores = 8 },
                .fs = { .time = t + 60 * S, .fs = fs, .used = { true, 400000, 100 } },
                .image_fs = { .time = t + 60 * S, .fs = fs },
        };
        _cleanup_free_ char *out = NULL;
        size_t size = 0;
        assert_int_equal(pod_stats_summary_format(&node, p, 1, &out, &size), 0);
        assert_int_equal(size, strlen(out));
        assert_true(out[size - 1] == '\n');
        json_error_t err;
        _cleanup_json_ json_t *j = json_loads(out, 0, &err);
        assert_non_null(j);

        assert_keys(j, (const char *const[]){ "node", "pods", NULL });
        json_t *n = get(j, "node");
        assert_keys(n, (const char *const[]){ "nodeName", "startTime", "cpu", "memory", "fs",
                                              "runtime", NULL });
        assert_string_equal(str(n, "nodeName"), "node1");
        assert_string_equal(str(n, "startTime"), "2023-11-14T21:13:20Z");
        assert_keys(get(n, "cpu"), (const char *const[]){ "time", "usageNanoCores",
                                                          "usageCoreNanoSeconds", NULL });
        assert_string_equal(str(n, "cpu.time"), "2023-11-14T22:14:20Z");
        assert_int_equal(num(n, "cpu.usageNanoCores"), 8);
        assert_int_equal(num(n, "cpu.usageCoreNanoSeconds"), 7);
        assert_keys(get(n, "memory"),
                    (const char *const[]){ "time", "availableBytes", "usageBytes",
                                           "workingSetBytes", "rssBytes", "pageFaults",
                                           "majorPageFaults", NULL });
        assert_int_equal(num(n, "memory.availableBytes"), 6);
        const char *const fs_keys[] = { "time",          "availableBytes",
                                        "capacityBytes", "usedBytes",
                                        "inodesFree",    "inodes",
                                        "inodesUsed",    NULL };
        assert_keys(get(n, "fs"), fs_keys);
        assert_int_equal(num(n, "fs.capacityBytes"), 1000000);
        assert_int_equal(num(n, "fs.availableBytes"), 500000);
        assert_int_equal(num(n, "fs.usedBytes"), 400000);
        assert_int_equal(num(n, "fs.inodes"), 1000);
        assert_int_equal(num(n, "fs.inodesFree"), 900);
        assert_int_equal(num(n, "fs.inodesUsed"), 100);
        assert_keys(get(n, "runtime"), (const char *const[]){ "imageFs", NULL });
        /* image fs without a usage measurement yet: no usedBytes/inodesUsed */
        assert_keys(get(n, "runtime.imageFs"),
                    (const char *const[]){ "time", "availableBytes", "capacityBytes", "inodesFree",
                                           "inodes", NULL });

        assert_int_equal(json_array_size(get(j, "pods")), 1);
        json_t *pod = get(j, "pods.0");
        assert_keys(pod,
                    (const char *const[]){ "podRef", "startTime", "containers", "cpu",
                                           "process_stats", "ephemeral-storage", "volume", NULL });
        /* kubelet's ProcessStats: the pod cgroup's tasks */
        assert_int_equal(num(pod, "process_stats.process_count"), 42);
        /* kubelet's VolumeStats: the fs figures and the volume's name. */
        assert_int_equal(json_array_size(get(pod, "volume")), 1);
        assert_string_equal(str(pod, "volume.0.name"), "data");
        assert_int_equal(num(pod, "volume.0.usedBytes"), 4096);
        assert_int_equal(num(pod, "volume.0.inodesUsed"), 2);
        assert_keys(get(pod, "podRef"), (const char *const[]){ "name", "namespace", "uid", NULL });
        assert_string_equal(str(pod, "podRef.name"), "web-node1");
        assert_string_equal(str(pod, "podRef.namespace"), "default");
        assert_string_equal(str(pod, "podRef.uid"), "0123");
        assert_string_equal(str(pod, "startTime"), "2023-11-14T22:13:20Z");
        /* no rate: usageNanoCores left out, as kubelet's omitempty */
        assert_keys(get(pod, "cpu"), (const char *const[]){ "time", "usageCoreNanoSeconds", NULL });
        assert_int_equal(num(pod, "ephemeral-storage.usedBytes"), 9000);

        assert_int_equal(json_array_size(get(pod, "containers")), 2);
        json_t *m = get(pod, "containers.0");
        assert_keys(m, (const char *const[]){ "name", "startTime", "cpu", "memory", "rootfs",
                                              "logs", NULL });
        assert_string_equal(str(m, "name"), "main");
        assert_string_equal(str(m, "startTime"), "2023-11-14T22:13:25Z");
        assert_int_equal(num(m, "cpu.usageNanoCores"), 999);
        assert_int_equal(num(m, "cpu.usageCoreNanoSeconds"), 12345678901LL);
        assert_int_equal(num(m, "memory.usageBytes"), 300);
        assert_int_equal(num(m, "memory.workingSetBytes"), 200);
        assert_int_equal(num(m, "memory.rssBytes"), 150);
        assert_int_equal(num(m, "memory.pageFaults"), 10);
        assert_int_equal(num(m, "memory.majorPageFaults"), 1);
        assert_int_equal(num(m, "memory.availableBytes"), 800);
        assert_keys(get(m, "rootfs"), fs_keys);
        assert_int_equal(num(m, "rootfs.usedBytes"), 8192);
        assert_int_equal(num(m, "rootfs.inodesUsed"), 3);
        assert_null(get(m, "logs.usedBytes"));
        assert_int_equal(num(m, "logs.capacityBytes"), 1000000);
        assert_keys(get(pod, "containers.1"), (const char *const[]){ "name", "startTime", NULL });

        /* No pods: an empty list, not null. */
        free(out);
        out = NULL;
        assert_int_equal(pod_stats_summary_format(&node, NULL, 0, &out, &size), 0);
        _cleanup_json_ json_t *e = json_loads(out, 0, &err);
        assert_non_null(e);
        assert_true(json_is_array(get(e, "pods")));
        assert_int_equal(json_array_size(get(e, "pods")), 0);
}

/* kubelet's resource metrics from the Summary's figures: seconds from
 * nanoseconds, each figure's read time as the sample's timestamp in ms,
 * absent figures without a series, and the series of a pod that is gone
 * dropped on the next set. */
static void test_resource_metrics(void **state) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        ResourceMetrics rm;
        const usec_t t = 1700000000123456ULL;

        assert_int_equal(metrics_new(&m), 0);
        assert_int_equal(resource_metrics_register(&rm, m), 0);

        NodeSummary node = { .usage = { .time = t,
                                        .cg = { .has_cpu = true,
                                                .cpu_usage_ns = 2500000000ULL,
                                                .has_memory = true,
                                                .memory_working_set = 1048576,
                                                .has_swap = true,
                                                .swap_usage = 8192,
                                                .swap_limit = CGROUP_STATS_NO_LIMIT } } };
        ContainerSummary cs[2] = {
                { .name = "app",
                  .start_time = 1700000000500000ULL,
                  .usage = { .time = t,
                             .cg = { .has_cpu = true,
                                     .cpu_usage_ns = 1000,
                                     .has_memory = true,
                                     .memory_working_set = 4096,
                                     .has_swap = true,
                                     .swap_usage = 100,
                                     .swap_limit = 1000 } } },
                { .name = "side" }, /* no cgroup read, no start time: no series */
        };
        PodSummary pods[2] = {
                { .name = "web",
                  .namespace = "default",
                  .uid = "u1",
                  .containers = cs,
                  .n_containers = 2,
                  .usage = { .time = t,
                             .cg = { .has_cpu = true, .cpu_usage_ns = 3000000000ULL } } },
                { .name = "evil\"}\n", .namespace = "kube-system", .uid = "u2" },
        };
        resource_metrics_set(&rm, &node, pods, 2);
        _cleanup_free_ char *text = format_metrics(m);
        assert_string_equal(
                text,
                "# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed by the "
                "container in core-seconds\n"
                "# TYPE container_cpu_usage_seconds_total counter\n"
                "container_cpu_usage_seconds_total{container=\"app\",pod=\"web\",namespace="
                "\"default\"} 1e-06 1700000000123\n"
                "# HELP container_memory_working_set_bytes Current working set of the container "
                "in bytes\n"
                "# TYPE container_memory_working_set_bytes gauge\n"
                "container_memory_working_set_bytes{container=\"app\",pod=\"web\",namespace="
                "\"default\"} 4096 1700000000123\n"
                "# HELP container_start_time_seconds Start time of the container since unix "
                "epoch in seconds\n"
                "# TYPE container_start_time_seconds gauge\n"
                "container_start_time_seconds{container=\"app\",pod=\"web\",namespace="
                "\"default\"} 1.7000000005e+09\n"
                "# HELP container_swap_usage_bytes Current amount of the container swap usage in "
                "bytes. Reported only on non-windows systems\n"
                "# TYPE container_swap_usage_bytes gauge\n"
                "container_swap_usage_bytes{container=\"app\",pod=\"web\",namespace="
                "\"default\"} 100 1700000000123\n"
                "# HELP container_swap_limit_bytes Current amount of the container swap limit in "
                "bytes. Reported only on non-windows systems\n"
                "# TYPE container_swap_limit_bytes gauge\n"
                "container_swap_limit_bytes{container=\"app\",pod=\"web\",namespace="
                "\"default\"} 1000 1700000000123\n"
                "# HELP node_cpu_usage_seconds_total Cumulative cpu time consumed by the node in "
                "core-seconds\n"
                "# TYPE node_cpu_usage_seconds_total counter\n"
                "node_cpu_usage_seconds_total 2.5 1700000000123\n"
                "# HELP node_memory_working_set_bytes Current working set of the node in bytes\n"
                "# TYPE node_memory_working_set_bytes gauge\n"
                "node_memory_working_set_bytes 1.048576e+06 1700000000123\n"
                "# HELP node_swap_usage_bytes Current swap usage of the node in bytes. Reported "
                "only on non-windows systems\n"
                "# TYPE node_swap_usage_bytes gauge\n"
                "node_swap_usage_bytes 8192 1700000000123\n"
                "# HELP pod_cpu_usage_seconds_total Cumulative cpu time consumed by the pod in "
                "core-seconds\n"
                "# TYPE pod_cpu_usage_seconds_total counter\n"
                "pod_cpu_usage_seconds_total{pod=\"web\",namespace=\"default\"} 3 "
                "1700000000123\n"
                "# HELP resource_scrape_error 1 if there was an error while getting container "
                "metrics, 0 otherwise\n"
                "# TYPE resource_scrape_error gauge\n"
                "resource_scrape_error 0\n"
                "# HELP scrape_error (Deprecated since 1.29.0) 1 if there was an error while "
                "getting container metrics, 0 otherwise\n"
                "# TYPE scrape_error gauge\n"
                "scrape_error 0\n");

        /* The pod is gone and the node unreadable this time. */
        NodeSummary unread = {};
        resource_metrics_set(&rm, &unread, pods + 1, 1);
        _cleanup_free_ char *after = format_metrics(m);
        assert_null(strstr(after, "web"));
        assert_null(strstr(after, "container_cpu_usage_seconds_total"));
        assert_non_null(strstr(after, "\nscrape_error 1\n"));
        assert_non_null(strstr(after, "\nresource_scrape_error 1\n"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_samples),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_resource_metrics),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
