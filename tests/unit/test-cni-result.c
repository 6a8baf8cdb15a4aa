/* Tests for CNI result and error object parsing: 0.3.1, 0.4.0 and 1.0.0
 * samples as the reference plugins print them, pod IP selection, and
 * rejection of malformed results. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "cni-internal.h"
#include "strv.h"

static const char result_031[] =
        "{\"cniVersion\":\"0.3.1\",\"interfaces\":[{\"name\":\"cni0\",\"mac\":\"aa:bb:cc:dd:ee:"
        "01\"},"
        "{\"name\":\"veth1\",\"mac\":\"aa:bb:cc:dd:ee:02\"},"
        "{\"name\":\"eth0\",\"mac\":\"aa:bb:cc:dd:ee:03\",\"sandbox\":\"/run/netns/x\"}],"
        "\"ips\":[{\"version\":\"4\",\"interface\":2,\"address\":\"10.22.0.5/16\","
        "\"gateway\":\"10.22.0.1\"}],\"routes\":[{\"dst\":\"0.0.0.0/0\"}],\"dns\":{}}";

static const char result_040[] =
        "{\"cniVersion\":\"0.4.0\",\"interfaces\":[{\"name\":\"eth0\",\"sandbox\":\"/ns\"}],"
        "\"ips\":[{\"version\":\"6\",\"interface\":0,\"address\":\"fd00::5/64\"},"
        "{\"version\":\"4\",\"interface\":0,\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\"},"
        "{\"version\":\"4\",\"interface\":0,\"address\":\"10.1.0.6/24\"}],"
        "\"dns\":{\"nameservers\":[\"10.1.0.10\"],\"domain\":\"cluster.local\","
        "\"search\":[\"svc.cluster.local\"],\"options\":[\"ndots:5\"]}}";

static const char result_100[] =
        "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"nlt0\",\"mac\":\"aa:bb:cc:dd:ee:"
        "01\"},"
        "{\"name\":\"eth0\",\"mac\":\"aa:bb:cc:dd:ee:03\",\"sandbox\":\"/run/netns/x\"}],"
        "\"ips\":[{\"interface\":0,\"address\":\"10.22.0.1/16\"},"
        "{\"interface\":1,\"address\":\"10.22.0.7/16\",\"gateway\":\"10.22.0.1\"}],"
        "\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"10.22.0.1\"},{\"dst\":\"::/0\"}],"
        "\"dns\":{}}";

static void test_031(void **state) {
        CniResult *r = NULL;
        assert_int_equal(cni_result_parse(result_031, strlen(result_031), &r, NULL), 0);
        assert_string_equal(r->cni_version, "0.3.1");
        assert_int_equal(r->n_interfaces, 3);
        assert_string_equal(r->interfaces[2].sandbox, "/run/netns/x");
        assert_null(r->interfaces[0].sandbox);
        assert_int_equal(r->n_ips, 1);
        assert_int_equal(r->ips[0].family, AF_INET);
        assert_int_equal(r->ips[0].interface, 2);
        assert_string_equal(r->ips[0].gateway, "10.22.0.1");
        assert_int_equal(r->n_routes, 1);
        assert_null(r->routes[0].gw);
        char **ips;
        assert_int_equal(cni_result_pod_ips(r, &ips), 0);
        assert_int_equal(strv_length(ips), 1);
        assert_string_equal(ips[0], "10.22.0.5");
        strv_free(ips);
        cni_result_free(r);
}

static void test_040(void **state) {
        CniResult *r = NULL;
        assert_int_equal(cni_result_parse(result_040, strlen(result_040), &r, NULL), 0);
        assert_int_equal(r->n_ips, 3);
        assert_int_equal(r->ips[0].family, AF_INET6);
        assert_string_equal(r->dns.nameservers[0], "10.1.0.10");
        assert_string_equal(r->dns.domain, "cluster.local");
        assert_string_equal(r->dns.search[0], "svc.cluster.local");
        assert_string_equal(r->dns.options[0], "ndots:5");
        char **ips;
        assert_int_equal(cni_result_pod_ips(r, &ips), 0);
        /* Result order, one per family. */
        assert_int_equal(strv_length(ips), 2);
        assert_string_equal(ips[0], "fd00::5");
        assert_string_equal(ips[1], "10.1.0.5");
        strv_free(ips);
        cni_result_free(r);
}

static void test_100(void **state) {
        CniResult *r = NULL;
        assert_int_equal(cni_result_parse(result_100, strlen(result_100), &r, NULL), 0);
        assert_int_equal(r->n_routes, 2);
        assert_string_equal(r->routes[0].gw, "10.22.0.1");
        char **ips;
        assert_int_equal(cni_result_pod_ips(r, &ips), 0);
        /* The bridge's own address (host side) is not the pod's. */
        assert_int_equal(strv_length(ips), 1);
        assert_string_equal(ips[0], "10.22.0.7");
        strv_free(ips);
        /* The re-serialized document parses to the same thing. */
        CniResult *again = NULL;
        assert_int_equal(cni_result_parse(r->json, strlen(r->json), &again, NULL), 0);
        assert_string_equal(again->ips[1].address, "10.22.0.7/16");
        cni_result_free(again);
        cni_result_free(r);
}

static void expect_bad(const char *json, const char *needle) {
        CniResult *r = NULL;
        CniError err = {};
        assert_int_equal(cni_result_parse(json, strlen(json), &r, &err), -EBADMSG);
        assert_null(r);
        if (!strstr(err.base.message, needle))
                fail_msg("message \"%s\" lacks \"%s\"", err.base.message, needle);
        cni_error_done(&err);
}

static void test_bad(void **state) {
        expect_bad("", "invalid result");
        expect_bad("[1]", "not a JSON object");
        expect_bad("{}", "missing \"cniVersion\"");
        expect_bad("{\"cniVersion\":\"9.9.9\"}", "unsupported");
        expect_bad("{\"cniVersion\":\"0.2.0\",\"ip4\":{}}", "unsupported");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.1\"}]}",
                   "address/prefix");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.1/33\"}]}",
                   "address/prefix");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.1/24\","
                   "\"interface\":0}]}",
                   "\"interface\"");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"ips\":[{\"address\":\"10.0.0.1/24\","
                   "\"gateway\":\"fd00::1\"}]}",
                   "\"gateway\"");
        expect_bad("{\"cniVersion\":\"0.4.0\",\"ips\":[{\"version\":\"6\","
                   "\"address\":\"10.0.0.1/24\"}]}",
                   "\"version\"");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"routes\":[{\"gw\":\"10.0.0.1\"}]}", "\"dst\"");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"interfaces\":[{}]}", "missing \"name\"");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"dns\":{\"nameservers\":[\"x\"]}}", "nameserver");
        expect_bad("{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"a\\u0000b\"}]}",
                   "invalid result");
}

static void test_error_object(void **state) {
        CniError err = {};
        const char *e = "{\"cniVersion\":\"1.0.0\",\"code\":11,\"msg\":\"failed to allocate\","
                        "\"details\":\"no IP addresses available in range set\"}";
        assert_int_equal(cni_error_parse(e, strlen(e), &err), 0);
        assert_int_equal(err.code, 11);
        assert_int_equal(err.base.error, -EIO);
        assert_string_equal(err.base.message, "failed to allocate");
        err.plugin = strdup("host-local");
        char *s = cni_error_to_string(&err);
        assert_string_equal(s, "plugin \"host-local\" failed (code 11): failed to allocate: no "
                               "IP addresses available in range set");
        free(s);
        cni_error_done(&err);

        assert_int_equal(cni_error_parse("oops", 4, &err), -EBADMSG);
        assert_int_equal(cni_error_parse("{\"msg\":\"x\"}", 11, &err), -EBADMSG);
        assert_int_equal(cni_error_parse("{\"code\":-1}", 11, &err), -EBADMSG);
        assert_string_equal(err.base.message, "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_031),          cmocka_unit_test(test_040),
                cmocka_unit_test(test_100),          cmocka_unit_test(test_bad),
                cmocka_unit_test(test_error_object),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
