/* Tests for running CNI plugins, without root: fake plugins written by the
 * test as shell scripts record their order, environment and stdin and print
 * canned results or error objects. Covers ADD chaining with prevResult,
 * DEL in reverse order with the cached result, CHECK, the cache, timeouts,
 * error objects, cleanup after a failed ADD and missing plugins. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cni-internal.h"
#include "fileio.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

typedef struct Fixture {
        char dir[64];
        char *bin, *cache, *netns;
        Event *event;
        CniRunner *runner;
        CniConfig *config;
        /* last callback */
        bool done;
        unsigned n_completed; /* callbacks so far: several can land in one iteration */
        int r;
        CniResult *result;
        CniError err;
} Fixture;

static const char fake_plugin[] =
        "#!/bin/sh\n"
        "n=$(basename \"$0\")\n"
        "d=$(dirname \"$0\")/..\n"
        "echo \"$CNI_COMMAND $n\" >> $d/order\n"
        "env | grep '^CNI_' | sort > $d/env-$CNI_COMMAND-$n\n"
        "cat > $d/stdin-$CNI_COMMAND-$n\n"
        "[ -f $d/sleep-$CNI_COMMAND-$n ] && exec sleep 30\n"
        "if [ -f $d/fail-$CNI_COMMAND-$n ]; then cat $d/fail-$CNI_COMMAND-$n;"
        " echo \"some stderr\" >&2; echo \"last words\" >&2; exit 3; fi\n"
        "[ \"$CNI_COMMAND\" = ADD ] && cat $d/result-$n\n"
        "exit 0\n";

#define RESULT_A                                                                                   \
        "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"/ns\"}],"      \
        "\"ips\":[{\"interface\":0,\"address\":\"10.9.0.2/24\"}]}"
#define RESULT_B                                                                                   \
        "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"/ns\"}],"      \
        "\"ips\":[{\"interface\":0,\"address\":\"10.9.0.2/24\",\"gateway\":\"10.9.0.1\"}],"        \
        "\"dns\":{\"nameservers\":[\"10.9.0.1\"]}}"

static void put(Fixture *f, const char *name, const char *content) {
        _cleanup_free_ char *p = strprintf("%s/%s", f->dir, name);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static char *get(Fixture *f, const char *name) {
        _cleanup_free_ char *p = strprintf("%s/%s", f->dir, name);
        char *data = NULL;
        if (read_full_file_at(AT_FDCWD, p, 1 << 20, &data, NULL) < 0)
                return NULL;
        return data;
}

static bool exists(Fixture *f, const char *name) {
        _cleanup_free_ char *p = strprintf("%s/%s", f->dir, name);
        return access(p, F_OK) == 0;
}

static void add_plugin(Fixture *f, const char *name) {
        _cleanup_free_ char *p = strprintf("%s/%s", f->bin, name);
        assert_int_equal(write_file_atomic(p, fake_plugin, strlen(fake_plugin), 0755), 0);
}

static void use_config(Fixture *f, const char *version, const char *plugins) {
        _cleanup_free_ char *s = strprintf("{\"cniVersion\":\"%s\",\"name\":\"test\","
                                           "\"plugins\":[%s]}",
                                           version, plugins);
        f->config = cni_config_unref(f->config);
        CniError err = {};
        assert_int_equal(cni_config_parse(s, strlen(s), "test", true, &f->config, &err), 0);
}

static void make_runner(Fixture *f, usec_t timeout) {
        f->runner = cni_runner_free(f->runner);
        CniRunnerOptions o = {
                .bin_dirs = f->bin,
                .cache_dir = f->cache,
                .plugin_timeout = timeout,
        };
        assert_int_equal(cni_runner_new(f->event, &o, &f->runner), 0);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        strcpy(f->dir, "/tmp/test-cni-runner.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->bin = strprintf("%s/bin", f->dir);
        f->cache = strprintf("%s/cache", f->dir);
        f->netns = strprintf("%s/netns", f->dir);
        assert_int_equal(mkdir(f->bin, 0755), 0);
        put(f, "netns", "");
        put(f, "result-p1", RESULT_A);
        put(f, "result-p2", RESULT_B);
        add_plugin(f, "p1");
        add_plugin(f, "p2");
        assert_int_equal(event_new(&f->event), 0);
        make_runner(f, 30 * USEC_PER_SEC); /* generous: a loaded 2-core machine */
        use_config(f, "1.0.0",
                   "{\"type\":\"p1\",\"x\":1},"
                   "{\"type\":\"p2\",\"capabilities\":{\"portMappings\":true}}");
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        cni_runner_free(f->runner);
        cni_config_unref(f->config);
        event_free(f->event);
        cni_result_free(f->result);
        cni_error_done(&f->err);
        (void)rm_rf_at(AT_FDCWD, f->dir);
        free(f->bin);
        free(f->cache);
        free(f->netns);
        free(f);
        return 0;
}

static void on_done(CniRunner *runner, int r, CniResult *result, const CniError *err,
                    void *userdata) {
        Fixture *f = userdata;
        f->done = true;
        f->n_completed++;
        f->r = r;
        cni_result_free(f->result);
        f->result = result;
        cni_error_done(&f->err);
        f->err.base = err->base;
        f->err.code = err->code;
        f->err.plugin = err->plugin ? strdup(err->plugin) : NULL;
        f->err.details = err->details ? strdup(err->details) : NULL;
}

static void wait_done(Fixture *f) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + 90 * USEC_PER_SEC;
        while (!f->done) {
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                assert_int_equal(event_run(f->event, 100 * USEC_PER_MSEC), 0);
        }
        f->done = false;
}

static CniRequest request(Fixture *f) {
        static const CniPortMapping pm[] = {
                { .host_port = 8080, .container_port = 80, .protocol = CNI_PROTOCOL_TCP },
        };
        return (CniRequest){
                .container_id = "pod-1",
                .netns = f->netns,
                .pod_namespace = "default",
                .pod_name = "web",
                .pod_uid = "uid-1",
                .port_mappings = pm,
                .n_port_mappings = 1,
        };
}

static json_t *stdin_of(Fixture *f, const char *name) {
        _cleanup_free_ char *s = get(f, name);
        assert_non_null(s);
        json_t *j = json_loads(s, 0, NULL);
        assert_non_null(j);
        return j;
}

static void test_add_del(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);

        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        assert_false(f->done); /* never inside the call */
        wait_done(f);
        assert_int_equal(f->r, 0);
        assert_non_null(f->result);
        assert_string_equal(f->result->ips[0].gateway, "10.9.0.1");

        _cleanup_free_ char *order = get(f, "order");
        assert_string_equal(order, "ADD p1\nADD p2\n");
        _cleanup_free_ char *env = get(f, "env-ADD-p1");
        assert_non_null(strstr(env, "CNI_COMMAND=ADD\n"));
        assert_non_null(strstr(env, "CNI_CONTAINERID=pod-1\n"));
        assert_non_null(strstr(env, "CNI_IFNAME=eth0\n"));
        assert_non_null(strstr(env, "CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=default;"
                                    "K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=pod-1;"
                                    "K8S_POD_UID=uid-1\n"));
        _cleanup_free_ char *netns_line = strprintf("CNI_NETNS=%s\n", f->netns);
        assert_non_null(strstr(env, netns_line));

        json_t *in1 = stdin_of(f, "stdin-ADD-p1"), *in2 = stdin_of(f, "stdin-ADD-p2");
        json_t *a = json_loads(RESULT_A, 0, NULL), *b = json_loads(RESULT_B, 0, NULL);
        assert_null(json_object_get(in1, "prevResult"));
        assert_null(json_object_get(in1, "runtimeConfig"));
        assert_string_equal(json_string_value(json_object_get(in1, "name")), "test");
        assert_true(json_equal(json_object_get(in2, "prevResult"), a));
        assert_int_equal(
                json_integer_value(json_object_get(
                        json_array_get(json_object_get(json_object_get(in2, "runtimeConfig"),
                                                       "portMappings"),
                                       0),
                        "hostPort")),
                8080);
        json_decref(in1);
        json_decref(in2);

        /* The cache has the config and the final result. */
        assert_true(exists(f, "cache/pod-1.json"));
        CniResult *cached = NULL;
        assert_int_equal(cni_runner_cached_result(f->runner, "pod-1", &cached), 0);
        assert_non_null(cached);
        assert_string_equal(cached->ips[0].gateway, "10.9.0.1");
        cni_result_free(cached);
        char **ids;
        assert_int_equal(cni_runner_list_cached(f->runner, &ids), 0);
        assert_int_equal(strv_length(ids), 1);
        assert_string_equal(ids[0], "pod-1");
        strv_free(ids);

        /* CHECK in order with the cached result. */
        CniRequest creq = request(f);
        assert_int_equal(cni_check(f->runner, NULL, &creq, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        json_t *c2 = stdin_of(f, "stdin-CHECK-p2");
        assert_true(json_equal(json_object_get(c2, "prevResult"), b));
        json_decref(c2);

        /* DEL after a "restart": a new runner, a changed config (the cached
         * one is used), no port mappings given (the cached ones are), and a
         * netns path that is no netns (CNI_NETNS empty). */
        make_runner(f, 30 * USEC_PER_SEC); /* generous: a loaded 2-core machine */
        use_config(f, "1.0.0", "{\"type\":\"other\"}");
        CniRequest dreq = { .container_id = "pod-1", .netns = f->netns };
        assert_int_equal(cni_del(f->runner, f->config, &dreq, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        assert_null(f->result);
        _cleanup_free_ char *order2 = get(f, "order");
        assert_string_equal(order2, "ADD p1\nADD p2\nCHECK p1\nCHECK p2\nDEL p2\nDEL p1\n");
        json_t *d1 = stdin_of(f, "stdin-DEL-p1"), *d2 = stdin_of(f, "stdin-DEL-p2");
        assert_true(json_equal(json_object_get(d1, "prevResult"), b));
        assert_int_equal(json_array_size(json_object_get(json_object_get(d2, "runtimeConfig"),
                                                         "portMappings")),
                         1);
        json_decref(d1);
        json_decref(d2);
        _cleanup_free_ char *denv = get(f, "env-DEL-p1");
        assert_non_null(strstr(denv, "CNI_NETNS=\n"));
        assert_false(exists(f, "cache/pod-1.json"));

        /* Again: no cache, the given config is DELed (p "other" is missing:
         * an error, reported). Without a config nothing is to do. */
        assert_int_equal(cni_del(f->runner, f->config, &dreq, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -ENOENT);
        assert_string_equal(f->err.plugin, "other");
        assert_int_equal(cni_del(f->runner, NULL, &dreq, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);

        /* CHECK without a cache. */
        assert_int_equal(cni_check(f->runner, NULL, &creq, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -ENOENT);
        json_decref(a);
        json_decref(b);
}

static void test_error_object_and_cleanup(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);

        put(f, "fail-ADD-p2",
            "{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"no luck\","
            "\"details\":\"range full\"}");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -EIO);
        assert_null(f->result);
        assert_int_equal(f->err.code, 11);
        assert_string_equal(f->err.plugin, "p2");
        assert_string_equal(f->err.base.message, "no luck");
        assert_string_equal(f->err.details, "range full");
        /* The chain was DELed in reverse, without prevResult, and the cache is gone. */
        _cleanup_free_ char *order = get(f, "order");
        assert_string_equal(order, "ADD p1\nADD p2\nDEL p2\nDEL p1\n");
        json_t *d = stdin_of(f, "stdin-DEL-p1");
        assert_null(json_object_get(d, "prevResult"));
        json_decref(d);
        assert_false(exists(f, "cache/pod-1.json"));

        /* No error object: stderr's text. */
        put(f, "fail-ADD-p2", "garbage");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -EIO);
        assert_int_equal(f->err.code, 0);
        assert_non_null(strstr(f->err.base.message, "exited with status 3"));
        assert_non_null(strstr(f->err.base.message, "last words"));

        /* A failing DEL goes on with the others and keeps the cache. */
        _cleanup_free_ char *fail_add = strprintf("%s/fail-ADD-p2", f->dir);
        assert_int_equal(unlink(fail_add), 0);
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        put(f, "fail-DEL-p2", "{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"busy\"}");
        put(f, "order", "");
        assert_int_equal(cni_del(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -EIO);
        assert_int_equal(f->err.code, 7);
        _cleanup_free_ char *order2 = get(f, "order");
        assert_string_equal(order2, "DEL p2\nDEL p1\n");
        assert_true(exists(f, "cache/pod-1.json"));

        /* Invalid result from a plugin with exit 0. */
        put(f, "result-p1", "{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"nope\"}]}");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -EBADMSG);
        assert_string_equal(f->err.plugin, "p1");
        assert_non_null(strstr(f->err.base.message, "invalid result"));
}

/* A plugin whose binary is missing fails the ADD; the cleanup DELs what ran
 * and, since the missing one never ran, leaves no cache behind (a kept
 * cache would name a sandbox no DEL ever comes for). */
static void test_missing_plugin_cleanup(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);

        use_config(f, "1.0.0", "{\"type\":\"p1\"},{\"type\":\"absent\"},{\"type\":\"p2\"}");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -ENOENT);
        assert_string_equal(f->err.plugin, "absent");
        assert_non_null(strstr(f->err.base.message, "\"absent\" (from \"test\") not found in"));
        _cleanup_free_ char *order = get(f, "order");
        /* p2 (after the failure) is DELed too, as libcni DELs the whole list */
        assert_string_equal(order, "ADD p1\nDEL p2\nDEL p1\n");
        assert_false(exists(f, "cache/pod-1.json"));

        /* The first plugin missing: nothing ran, nothing kept. */
        use_config(f, "1.0.0", "{\"type\":\"absent\"}");
        put(f, "order", "");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -ENOENT);
        _cleanup_free_ char *order2 = get(f, "order");
        assert_string_equal(order2, "");
        assert_false(exists(f, "cache/pod-1.json"));

        /* A plain DEL still reports a missing binary and keeps the cache. */
        use_config(f, "1.0.0", "{\"type\":\"p1\"},{\"type\":\"p2\"}");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        _cleanup_free_ char *p2 = strprintf("%s/p2", f->bin);
        assert_int_equal(unlink(p2), 0);
        assert_int_equal(cni_del(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -ENOENT);
        assert_true(exists(f, "cache/pod-1.json"));
}

static void test_timeout(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);

        make_runner(f, 300 * USEC_PER_MSEC);
        put(f, "sleep-ADD-p1", "");
        usec_t start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, -ETIMEDOUT);
        assert_string_equal(f->err.plugin, "p1");
        assert_non_null(strstr(f->err.base.message, "timed out"));
        /* the plugin alone sleeps 30 s */
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 20 * USEC_PER_SEC);
        _cleanup_free_ char *order = get(f, "order");
        assert_string_equal(order, "ADD p1\nDEL p2\nDEL p1\n");
}

static void test_queue_cancel_free(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);
        CniOp *op;

        /* A cancelled queued op never runs. */
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, &op), 0);
        cni_op_cancel(op);
        assert_int_equal(event_run(f->event, 200 * USEC_PER_MSEC), 0);
        assert_false(f->done);
        assert_false(exists(f, "order"));

        /* Many at once, with a parallelism cap of 2. */
        f->runner = cni_runner_free(f->runner);
        CniRunnerOptions o = { .bin_dirs = f->bin, .cache_dir = f->cache, .max_parallel = 2 };
        assert_int_equal(cni_runner_new(f->event, &o, &f->runner), 0);
        unsigned before = f->n_completed;
        for (int i = 0; i < 5; i++) {
                char id[16];
                snprintf(id, sizeof(id), "pod-%d", i);
                CniRequest r2 = req;
                r2.container_id = id;
                assert_int_equal(cni_add(f->runner, f->config, &r2, on_done, f, NULL), 0);
        }
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + 90 * USEC_PER_SEC;
        while (f->n_completed - before < 5) {
                assert_true(now_usec(CLOCK_MONOTONIC) < deadline);
                assert_int_equal(event_run(f->event, 100 * USEC_PER_MSEC), 0);
                assert_int_equal(f->r, 0);
        }
        f->done = false;
        char **ids;
        assert_int_equal(cni_runner_list_cached(f->runner, &ids), 0);
        assert_int_equal(strv_length(ids), 5);
        strv_free(ids);

        /* Freeing the runner with a plugin running kills it, no callback. */
        put(f, "sleep-DEL-p2", "");
        assert_int_equal(cni_del(f->runner, f->config, &req, on_done, f, NULL), 0);
        assert_int_equal(event_run(f->event, 300 * USEC_PER_MSEC), 0);
        f->runner = cni_runner_free(f->runner);
        assert_false(f->done);

        /* Bad requests. */
        make_runner(f, 0);
        CniRequest bad = req;
        bad.container_id = "../x";
        assert_int_equal(cni_add(f->runner, f->config, &bad, on_done, f, NULL), -EINVAL);
        bad = req;
        bad.pod_name = "a;b";
        assert_int_equal(cni_add(f->runner, f->config, &bad, on_done, f, NULL), -EINVAL);
        bad = req;
        bad.netns = NULL;
        assert_int_equal(cni_add(f->runner, f->config, &bad, on_done, f, NULL), -EINVAL);
        CniPortMapping pm = { .host_port = 1,
                              .container_port = 1,
                              .protocol = CNI_PROTOCOL_TCP,
                              .host_ip = "bogus" };
        bad = req;
        bad.port_mappings = &pm;
        assert_int_equal(cni_add(f->runner, f->config, &bad, on_done, f, NULL), -EINVAL);
}

static void test_version_040(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);

        /* 0.3.1: no CHECK, no prevResult on DEL. */
        use_config(f, "0.3.1", "{\"type\":\"p1\"}");
        put(f, "result-p1",
            "{\"cniVersion\":\"0.3.1\",\"ips\":[{\"version\":\"4\","
            "\"address\":\"10.9.0.3/24\"}]}");
        assert_int_equal(cni_add(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        assert_int_equal(cni_check(f->runner, NULL, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        assert_false(exists(f, "stdin-CHECK-p1"));
        assert_int_equal(cni_del(f->runner, f->config, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_int_equal(f->r, 0);
        json_t *d = stdin_of(f, "stdin-DEL-p1");
        assert_null(json_object_get(d, "prevResult"));
        assert_string_equal(json_string_value(json_object_get(d, "cniVersion")), "0.3.1");
        json_decref(d);
}

/* A cache that is missing, garbage or a symlink: CHECK fails naming the
 * file, runs no plugin, never follows the link, and writes the cache again
 * from the configuration given, without a result, for a later DEL. */
static void test_check_damaged_cache(void **state) {
        Fixture *f = *state;
        CniRequest req = request(f);
        _cleanup_free_ char *path = strprintf("%s/pod-1.json", f->cache);
        _cleanup_free_ char *target = strprintf("%s/target", f->dir);
        static const char secret[] = "{\"config\": {\"name\": \"secret\"}}";

        use_config(f, "1.0.0", "{\"type\":\"p1\"}");
        assert_int_equal(mkdir_p(f->cache, 0700), 0);
        assert_int_equal(write_file_atomic(target, secret, strlen(secret), 0600), 0);
        for (int way = 0; way < 3; way++) {
                (void)unlink(path);
                if (way == 1)
                        assert_int_equal(write_file_atomic(path, "{oops", 5, 0600), 0);
                else if (way == 2)
                        assert_int_equal(symlink(target, path), 0);
                assert_int_equal(cni_check(f->runner, f->config, &req, on_done, f, NULL), 0);
                wait_done(f);
                assert_true(f->r < 0);
                assert_non_null(strstr(f->err.base.message, path));
                assert_non_null(strstr(f->err.base.message, "written again"));
                assert_false(exists(f, "stdin-CHECK-p1"));
                struct stat st;
                assert_int_equal(lstat(path, &st), 0);
                assert_true(S_ISREG(st.st_mode));
        }
        _cleanup_free_ char *kept = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, target, 1024, &kept, NULL), 0);
        assert_string_equal(kept, secret);
        /* the rewritten cache: the next CHECK lacks only the result */
        assert_int_equal(cni_check(f->runner, NULL, &req, on_done, f, NULL), 0);
        wait_done(f);
        assert_non_null(strstr(f->err.base.message, "no cached result"));
}

static void put_old(Fixture *f, const char *name, const char *content) {
        _cleanup_free_ char *p = strprintf("old/%s", name);
        put(f, p, content);
}

/* The cache an older layout kept in <run-dir>/cni moves to the runner's
 * directory; nothing there is followed or trusted. */
static void test_cache_migrate(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *old = strprintf("%s/old", f->dir);
        _cleanup_free_ char *p = NULL;
        Error err = {};

        /* No old directory: nothing to do. */
        assert_int_equal(cni_cache_migrate(old, f->cache, &err), 0);
        assert_false(exists(f, "cache"));

        assert_int_equal(mkdir(old, 0700), 0);
        put_old(f, "pod-a.json",
                "{\"kind\":\"nanoletCniCacheV1\",\"containerId\":\"pod-a\",\"ifName\":\"eth0\","
                "\"networkName\":\"test\",\"config\":{\"cniVersion\":\"1.0.0\",\"name\":\"test\","
                "\"plugins\":[{\"type\":\"p1\"}]},\"result\":" RESULT_B "}");
        put_old(f, "pod-b.json", "old b");
        assert_int_equal(mkdir(f->cache, 0755), 0); /* made 0700 */
        put(f, "cache/pod-b.json", "new b");
        /* n: the old one is the newer (a downgrade, then an upgrade again). */
        put(f, "cache/pod-n.json", "stale n");
        struct timespec past[2] = { { .tv_sec = 1000000000 }, { .tv_sec = 1000000000 } };
        assert_int_equal(utimensat(AT_FDCWD, p = strprintf("%s/pod-n.json", f->cache), past, 0), 0);
        free(TAKE_PTR(p));
        put_old(f, "pod-n.json", "newer n");
        put_old(f, "pod-c.json", "");
        put_old(f, "pod-d.json", "\x01garbage\r\n{");
        put_old(f, "pod-v.json", "{\"kind\":\"cniCacheV9\",\"containerId\":\"pod-v\"}");
        put(f, "secret", "not a cache");
        p = strprintf("%s/secret", f->dir);
        _cleanup_free_ char *link = strprintf("%s/pod-s.json", old);
        assert_int_equal(symlink(p, link), 0);
        _cleanup_free_ char *fifo = strprintf("%s/pod-f.json", old);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        _cleanup_free_ char *sub = strprintf("%s/pod-g.json", old);
        assert_int_equal(mkdir(sub, 0700), 0);
        _cleanup_free_ char *big = strprintf("%s/pod-h.json", old);
        _cleanup_close_ int fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(ftruncate(fd, CNI_CACHE_MAX + 1), 0);
        put_old(f, "notes.txt", "someone else's");
        put_old(f, "bad id.json", "{}");

        /* a, c (empty), d (garbage) and v (another kind) move as they are:
         * their reader decides what they are worth. */
        assert_int_equal(cni_cache_migrate(old, f->cache, &err), 5);
        _cleanup_free_ char *newer = get(f, "cache/pod-n.json");
        assert_string_equal(newer, "newer n");
        _cleanup_free_ char *a = get(f, "cache/pod-a.json");
        assert_non_null(a);
        assert_non_null(strstr(a, "10.9.0.1"));
        _cleanup_free_ char *b = get(f, "cache/pod-b.json");
        assert_string_equal(b, "new b");
        _cleanup_free_ char *d = get(f, "cache/pod-d.json");
        assert_string_equal(d, "\x01garbage\r\n{");
        assert_true(exists(f, "cache/pod-c.json"));
        assert_true(exists(f, "cache/pod-v.json"));
        /* The link, FIFO, directory and oversized file are gone unread; the
         * link's target is untouched. */
        for (const char *n = "sfgh"; *n; n++) {
                _cleanup_free_ char *nn = strprintf("pod-%c.json", *n);
                _cleanup_free_ char *o = strprintf("old/%s", nn), *c = strprintf("cache/%s", nn);
                assert_false(exists(f, o));
                assert_false(exists(f, c));
        }
        _cleanup_free_ char *secret = get(f, "secret");
        assert_string_equal(secret, "not a cache");
        assert_false(exists(f, "old/pod-a.json"));
        assert_false(exists(f, "old/pod-b.json"));
        /* Other names stay, and so does their directory. */
        assert_true(exists(f, "old/notes.txt"));
        assert_true(exists(f, "old/bad id.json"));
        struct stat st;
        assert_int_equal(stat(f->cache, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);

        /* The runner finds the moved sandboxes and a's result. */
        _cleanup_strv_free_ char **ids = NULL;
        assert_int_equal(cni_runner_list_cached(f->runner, &ids), 0);
        assert_int_equal(strv_length(ids), 6);
        assert_string_equal(ids[0], "pod-a");
        CniResult *cached = NULL;
        assert_int_equal(cni_runner_cached_result(f->runner, "pod-a", &cached), 0);
        assert_non_null(cached);
        assert_string_equal(cached->ips[0].gateway, "10.9.0.1");
        cni_result_free(cached);

        /* Once only foreign names are left, a second start moves nothing;
         * emptied, the old directory goes. */
        assert_int_equal(cni_cache_migrate(old, f->cache, &err), 0);
        assert_true(exists(f, "old/notes.txt"));
        free(p);
        p = strprintf("%s/notes.txt", old);
        assert_int_equal(unlink(p), 0);
        free(p);
        p = strprintf("%s/bad id.json", old);
        assert_int_equal(unlink(p), 0);
        assert_int_equal(cni_cache_migrate(old, f->cache, &err), 0);
        assert_false(exists(f, "old"));
        error_clear(&err);
}

/* An old cache directory that is a symlink is never followed: the link
 * goes, its target and the files in it stay where they are. */
static void test_cache_migrate_symlink(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *old = strprintf("%s/old", f->dir);
        _cleanup_free_ char *target = strprintf("%s/elsewhere", f->dir);
        Error err = {};

        assert_int_equal(mkdir(target, 0700), 0);
        put(f, "elsewhere/pod-x.json", "{\"config\":{}}");
        assert_int_equal(symlink(target, old), 0);
        assert_int_equal(cni_cache_migrate(old, f->cache, &err), -ENOTDIR);
        assert_non_null(strstr(err.message, "not followed"));
        error_clear(&err);
        assert_false(exists(f, "old"));
        assert_true(exists(f, "elsewhere/pod-x.json"));
        assert_false(exists(f, "cache/pod-x.json"));

        /* A plain file there: the same. */
        put(f, "old", "junk");
        assert_int_equal(cni_cache_migrate(old, f->cache, &err), -ENOTDIR);
        error_clear(&err);
        assert_false(exists(f, "old"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_add_del, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_object_and_cleanup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_plugin_cleanup, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_queue_cancel_free, setup, teardown),
                cmocka_unit_test_setup_teardown(test_version_040, setup, teardown),
                cmocka_unit_test_setup_teardown(test_check_damaged_cache, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_migrate, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cache_migrate_symlink, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
