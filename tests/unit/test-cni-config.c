/* Tests for src/network configuration loading and for what a plugin gets:
 * the built-in default against contrib/cni/10-nanolet.conflist, conf dir
 * order, .conf wrapping, broken files with their messages, stdin
 * (name/cniVersion/prevResult/runtimeConfig injection), CNI_ARGS and the
 * environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cni-internal.h"
#include "fileio.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

static char *make_dir(void) {
        char *d = strdup("/tmp/test-cni-config.XXXXXX");
        assert_non_null(d);
        assert_non_null(mkdtemp(d));
        return d;
}

static void put(const char *dir, const char *name, const char *content) {
        _cleanup_free_ char *p = strprintf("%s/%s", dir, name);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static void drop_dir(char *d) {
        (void)rm_rf_at(AT_FDCWD, d);
        free(d);
}

static void test_default_matches_contrib(void **state) {
        _cleanup_free_ char *path =
                strprintf("%s/../contrib/cni/10-nanolet.conflist", TEST_DATA_DIR);
        _cleanup_free_ char *data = NULL;
        size_t size;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &data, &size), 0);
        json_t *file = json_loadb(data, size, 0, NULL);
        assert_non_null(file);

        CniConfig *c = NULL;
        CniError err = {};
        assert_int_equal(cni_config_new_default(NULL, &c, &err), 0);
        assert_true(json_equal(file, c->list));
        assert_null(cni_config_origin(c));
        assert_string_equal(cni_config_name(c), "nanolet");
        assert_string_equal(cni_config_version(c), "1.0.0");
        assert_int_equal(cni_config_n_plugins(c), 2);
        assert_string_equal(cni_config_plugin_type(c, 0), "bridge");
        assert_string_equal(cni_config_plugin_type(c, 1), "portmap");
        json_decref(file);
        cni_config_unref(c);

        assert_int_equal(cni_config_new_default("10.99.0.0/24", &c, &err), 0);
        json_t *sub = json_object_get(
                json_array_get(
                        json_array_get(
                                json_object_get(json_object_get(cni_config_plugin(c, 0), "ipam"),
                                                "ranges"),
                                0),
                        0),
                "subnet");
        assert_string_equal(json_string_value(sub), "10.99.0.0/24");
        cni_config_unref(c);

        assert_int_equal(cni_config_new_default("10.99.0.0", &c, &err), -EINVAL);
        assert_non_null(strstr(err.base.message, "10.99.0.0"));
        cni_error_done(&err);
}

static void test_load_dir(void **state) {
        char *d = make_dir();
        CniConfig *c = NULL;
        CniError err = {};

        /* Empty or missing dir: the default. */
        assert_int_equal(cni_config_load(d, "10.1.0.0/16", &c, &err), 0);
        assert_null(cni_config_origin(c));
        c = cni_config_unref(c);
        _cleanup_free_ char *missing = strprintf("%s/nope", d);
        assert_int_equal(cni_config_load(missing, NULL, &c, &err), 0);
        c = cni_config_unref(c);

        /* Lexical order; other suffixes and dotfiles ignored. */
        put(d, "README", "not json");
        put(d, ".00-hidden.conflist", "not json");
        put(d, "20-b.conflist",
            "{\"cniVersion\":\"0.4.0\",\"name\":\"b\",\"plugins\":[{\"type\":\"bridge\"}]}");
        put(d, "10-a.conf",
            "{\"cniVersion\":\"1.0.0\",\"name\":\"a\",\"type\":\"ptp\","
            "\"disableCheck\":true}");
        assert_int_equal(cni_config_load(d, NULL, &c, &err), 0);
        assert_string_equal(cni_config_name(c), "a");
        assert_true(endswith(cni_config_origin(c), "/10-a.conf"));
        assert_int_equal(cni_config_n_plugins(c), 1);
        assert_string_equal(cni_config_plugin_type(c, 0), "ptp");
        assert_true(c->disable_check);
        c = cni_config_unref(c);

        /* A broken first file is an error, not skipped. */
        put(d, "05-broken.conflist", "{\n  \"cniVersion\": \"1.0.0\",\n  \"name\": x\n}");
        assert_int_equal(cni_config_load(d, NULL, &c, &err), -EINVAL);
        assert_non_null(strstr(err.base.message, "05-broken.conflist:3:"));
        assert_non_null(strstr(err.base.message, "invalid JSON"));
        cni_error_done(&err);
        drop_dir(d);
}

static void expect_broken(const char *json, bool list, const char *needle) {
        CniConfig *c = NULL;
        CniError err = {};
        assert_int_equal(cni_config_parse(json, strlen(json), "/x/net.conflist", list, &c, &err),
                         -EINVAL);
        assert_null(c);
        assert_non_null(err.base.message);
        if (!strstr(err.base.message, needle))
                fail_msg("message \"%s\" lacks \"%s\"", err.base.message, needle);
        assert_non_null(strstr(err.base.message, "/x/net.conflist"));
        cni_error_done(&err);
}

static void test_broken(void **state) {
        expect_broken("[]", true, "not a JSON object");
        expect_broken("{\"name\":\"n\",\"plugins\":[{\"type\":\"b\"}]}", true,
                      "missing \"cniVersion\"");
        expect_broken("{\"cniVersion\":\"0.2.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"b\"}]}",
                      true, "unsupported \"cniVersion\" \"0.2.0\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"plugins\":[{\"type\":\"b\"}]}", true,
                      "missing \"name\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n/x\",\"plugins\":[{\"type\":\"b\"}]}",
                      true, "\"name\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", true, "missing \"plugins\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[]}", true,
                      "non-empty array");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"b\"},"
                      "{\"bridge\":\"x\"}]}",
                      true, "plugins[1]: missing \"type\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"plugins\":[{\"type\":\"../b\"}]}",
                      true, "plugins[0]: \"type\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"a\",\"type\":\"b\"}",
                      false, "invalid JSON");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"name\":\"n\"}", false, "missing \"type\"");
        expect_broken("{\"cniVersion\":\"1.0.0\",\"type\":\"b\"}", false, "missing \"name\"");
}

static void test_stdin(void **state) {
        const char *list = "{\"cniVersion\":\"0.4.0\",\"name\":\"net\",\"plugins\":["
                           "{\"type\":\"bridge\",\"bridge\":\"br\"},"
                           "{\"type\":\"portmap\",\"capabilities\":{\"portMappings\":true},"
                           "\"runtimeConfig\":{\"other\":1}}]}";
        CniConfig *c = NULL;
        assert_int_equal(cni_config_parse(list, strlen(list), "t", true, &c, NULL), 0);

        CniPortMapping pm[] = {
                { .host_port = 8080, .container_port = 80, .protocol = CNI_PROTOCOL_TCP },
                { .host_port = 53,
                  .container_port = 53,
                  .protocol = CNI_PROTOCOL_UDP,
                  .host_ip = "127.0.0.1" },
        };
        json_t *pmj = cni_port_mappings_to_json(pm, 2);
        json_t *prev = json_pack("{s:s, s:[{s:s}]}", "cniVersion", "0.4.0", "ips", "address",
                                 "10.0.0.2/24");
        char *s;
        size_t n;

        /* First plugin: no capability, no runtimeConfig; name and version injected. */
        assert_int_equal(cni_build_stdin(c, 0, NULL, pmj, &s, &n), 0);
        json_t *o = json_loads(s, 0, NULL);
        assert_string_equal(json_string_value(json_object_get(o, "name")), "net");
        assert_string_equal(json_string_value(json_object_get(o, "cniVersion")), "0.4.0");
        assert_string_equal(json_string_value(json_object_get(o, "bridge")), "br");
        assert_null(json_object_get(o, "runtimeConfig"));
        assert_null(json_object_get(o, "prevResult"));
        json_decref(o);
        free(s);

        /* Second: prevResult and portMappings merged into its runtimeConfig. */
        assert_int_equal(cni_build_stdin(c, 1, prev, pmj, &s, &n), 0);
        o = json_loads(s, 0, NULL);
        assert_true(json_equal(json_object_get(o, "prevResult"), prev));
        json_t *rc = json_object_get(o, "runtimeConfig");
        assert_int_equal(json_integer_value(json_object_get(rc, "other")), 1);
        json_t *m = json_object_get(rc, "portMappings");
        assert_int_equal(json_array_size(m), 2);
        json_t *expect = json_loads("{\"hostPort\":53,\"containerPort\":53,\"protocol\":\"udp\","
                                    "\"hostIP\":\"127.0.0.1\"}",
                                    0, NULL);
        assert_true(json_equal(json_array_get(m, 1), expect));
        json_decref(expect);
        json_decref(o);
        free(s);
        /* The config itself is untouched. */
        assert_null(json_object_get(cni_config_plugin(c, 1), "prevResult"));

        json_decref(prev);
        json_decref(pmj);
        cni_config_unref(c);
}

static void test_args_env(void **state) {
        char *a;
        assert_int_equal(cni_build_args("default", "web", "cid", "u-1", &a), 0);
        assert_string_equal(a, "IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web;"
                               "K8S_POD_INFRA_CONTAINER_ID=cid;K8S_POD_UID=u-1");
        free(a);
        assert_int_equal(cni_build_args("a;b", "web", "cid", "u", &a), -EINVAL);
        assert_int_equal(cni_build_args("ns", "a=b", "cid", "u", &a), -EINVAL);

        setenv("CNI_IFNAME", "leak", 1);
        char **env;
        assert_int_equal(cni_build_env(CNI_COMMAND_DEL, "cid", NULL, "eth0", "IgnoreUnknown=1",
                                       "/a:/b", &env),
                         0);
        assert_true(strv_contains(env, "CNI_COMMAND=DEL"));
        assert_true(strv_contains(env, "CNI_CONTAINERID=cid"));
        assert_true(strv_contains(env, "CNI_NETNS="));
        assert_true(strv_contains(env, "CNI_IFNAME=eth0"));
        assert_true(strv_contains(env, "CNI_PATH=/a:/b"));
        assert_false(strv_contains(env, "CNI_IFNAME=leak"));
        strv_free(env);
        unsetenv("CNI_IFNAME");

        assert_int_equal(cni_protocol_from_string("TCP"), CNI_PROTOCOL_TCP);
        assert_int_equal(cni_protocol_from_string("sctp"), CNI_PROTOCOL_SCTP);
        assert_int_equal(cni_protocol_from_string("icmp"), _CNI_PROTOCOL_INVALID);
}

static void test_find_plugin(void **state) {
        char *d = make_dir();
        put(d, "noexec", "#!/bin/sh\n");
        put(d, "ok", "#!/bin/sh\n");
        _cleanup_free_ char *ok = strprintf("%s/ok", d), *dirs = strprintf("/nonexistent:%s", d);
        assert_int_equal(chmod(ok, 0755), 0);
        char *p;
        assert_int_equal(cni_find_plugin(dirs, "ok", &p), 0);
        assert_string_equal(p, ok);
        free(p);
        if (geteuid() != 0)
                assert_int_equal(cni_find_plugin(dirs, "noexec", &p), -ENOENT);
        assert_int_equal(cni_find_plugin(dirs, "../ok", &p), -EINVAL);
        assert_int_equal(cni_find_plugin(dirs, "missing", &p), -ENOENT);
        drop_dir(d);
}

static void test_default_route(void **state) {
        (void)state;
        const char *table = "Iface\tDestination\tGateway "
                            "\tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                            "nlt1\t0000CA0A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"
                            "ens4\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n";
        char iface[16];
        assert_int_equal(node_default_route_interface(table, iface), 0);
        assert_string_equal(iface, "ens4");
        assert_int_equal(node_default_route_interface("Iface\tDestination\n", iface), -ENOENT);
        /* Whatever this machine has: a detected address is an IPv4 address. */
        _cleanup_strv_free_ char **ips = NULL;
        if (node_ip_detect(&ips) == 0) {
                unsigned char buf[4];
                assert_int_equal(inet_pton(AF_INET, ips[0], buf), 1);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_default_matches_contrib),
                cmocka_unit_test(test_load_dir),
                cmocka_unit_test(test_broken),
                cmocka_unit_test(test_stdin),
                cmocka_unit_test(test_args_env),
                cmocka_unit_test(test_find_plugin),
                cmocka_unit_test(test_default_route),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
