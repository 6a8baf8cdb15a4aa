/* kubelet's sysctl admission (src/pod/pod-sysctls.h): the safe set by kernel
 * version, allowedUnsafeSysctls names and prefixes, the host namespace rule,
 * the patterns refused at start, and kubelet's messages. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cleanup.h"
#include "pod-sysctls.h"
#include "strv.h"

/* Admits a pod with one sysctl; returns the message (NULL when admitted). */
static char *admit_one(const PodSysctlAllowlist *a, const char *name, bool host_net,
                       bool host_ipc) {
        Sysctl s = { .name = (char *)name, .value = (char *)"1" };
        PodSecurityContext sc = { .sysctls = &s, .n_sysctls = 1 };
        Pod pod = {};
        pod.spec.security_context = &sc;
        pod.spec.host_network = host_net;
        pod.spec.host_ipc = host_ipc;
        char *msg = NULL;
        int r = pod_sysctl_admit(a, &pod, &msg);
        if (r == 0)
                assert_null(msg);
        else {
                assert_int_equal(r, -EPERM);
                assert_non_null(msg);
        }
        return msg;
}

#define ADMITTED(a, n, hn, hi)                                                                     \
        do {                                                                                       \
                char *_m = admit_one(a, n, hn, hi);                                                \
                if (_m)                                                                            \
                        fail_msg("%s: %s", n, _m);                                                 \
        } while (0)

#define REFUSED(a, n, hn, hi, expect)                                                              \
        do {                                                                                       \
                _cleanup_free_ char *_m = admit_one(a, n, hn, hi);                                 \
                assert_non_null(_m);                                                               \
                assert_string_equal(_m, expect);                                                   \
        } while (0)

static void test_safe_set(void **state) {
        (void)state;
        PodSysctlAllowlist a;
        Error err = {};

        assert_int_equal(pod_sysctl_allowlist_init(&a, "6.1.0-18-amd64", NULL, &err), 0);
        ADMITTED(&a, "net.ipv4.ip_local_port_range", false, false);
        ADMITTED(&a, "kernel.shm_rmid_forced", false, false);
        ADMITTED(&a, "net.ipv4.tcp_fin_timeout", false, false);
        ADMITTED(&a, "net.ipv4.tcp_rmem", false, false);
        ADMITTED(&a, "net/ipv4/ip_unprivileged_port_start", false, false);
        REFUSED(&a, "net.core.somaxconn", false, false,
                "forbidden sysctl: \"net.core.somaxconn\" not allowlisted");
        REFUSED(&a, "kernel.msgmax", false, false,
                "forbidden sysctl: \"kernel.msgmax\" not allowlisted");
        /* Exact names: a longer name is not the safe one. */
        REFUSED(&a, "net.ipv4.tcp_rmem_x", false, false,
                "forbidden sysctl: \"net.ipv4.tcp_rmem_x\" not allowlisted");
        /* Safe, but it would change the host's network namespace. */
        REFUSED(&a, "net.ipv4.ip_local_port_range", true, false,
                "forbidden sysctl: \"net.ipv4.ip_local_port_range\" not allowed with host net "
                "enabled");
        REFUSED(&a, "kernel.shm_rmid_forced", false, true,
                "forbidden sysctl: \"kernel.shm_rmid_forced\" not allowed with host ipc enabled");
        ADMITTED(&a, "kernel.shm_rmid_forced", true, false);
        pod_sysctl_allowlist_done(&a);

        /* Kernel minimums: 4.5 has the keepalive ones but not fin_timeout
         * (4.6) nor tcp_rmem (4.15); an unknown version keeps only those
         * without a minimum. */
        assert_int_equal(pod_sysctl_allowlist_init(&a, "4.5.7", NULL, &err), 0);
        ADMITTED(&a, "net.ipv4.tcp_keepalive_time", false, false);
        REFUSED(&a, "net.ipv4.tcp_fin_timeout", false, false,
                "forbidden sysctl: \"net.ipv4.tcp_fin_timeout\" not allowlisted");
        REFUSED(&a, "net.ipv4.tcp_rmem", false, false,
                "forbidden sysctl: \"net.ipv4.tcp_rmem\" not allowlisted");
        pod_sysctl_allowlist_done(&a);
        assert_int_equal(pod_sysctl_allowlist_init(&a, NULL, NULL, &err), 0);
        ADMITTED(&a, "net.ipv4.ip_local_port_range", false, false);
        REFUSED(&a, "net.ipv4.ip_local_reserved_ports", false, false,
                "forbidden sysctl: \"net.ipv4.ip_local_reserved_ports\" not allowlisted");
        pod_sysctl_allowlist_done(&a);
}

static void test_unsafe_allowed(void **state) {
        (void)state;
        PodSysctlAllowlist a;
        Error err = {};
        char *allowed[] = { "net.core.*", "kernel.msgmax", "fs/mqueue/msg_max", NULL };

        assert_int_equal(pod_sysctl_allowlist_init(&a, "6.1.0", allowed, &err), 0);
        ADMITTED(&a, "net.core.somaxconn", false, false);
        ADMITTED(&a, "net/core/rmem_max", false, false);
        ADMITTED(&a, "kernel.msgmax", false, false);
        ADMITTED(&a, "fs.mqueue.msg_max", false, false);
        REFUSED(&a, "kernel.msgmnb", false, false,
                "forbidden sysctl: \"kernel.msgmnb\" not allowlisted");
        REFUSED(&a, "net.core.somaxconn", true, false,
                "forbidden sysctl: \"net.core.somaxconn\" not allowed with host net enabled");
        REFUSED(&a, "fs.mqueue.msg_max", false, true,
                "forbidden sysctl: \"fs.mqueue.msg_max\" not allowed with host ipc enabled");
        pod_sysctl_allowlist_done(&a);

        /* No sysctls, no security context: admitted. */
        Pod pod = {};
        char *msg = NULL;
        assert_int_equal(pod_sysctl_admit(&a, &pod, &msg), 0);
        assert_null(msg);
}

static void test_bad_patterns(void **state) {
        (void)state;
        const char *bad[] = { "vm.swappiness", "kernel.*", "*", "Net.core.x", "net..core", "" };
        const char *expect[] = {
                "the sysctl \"vm.swappiness\" are not known to be namespaced",
                "the sysctls \"kernel.*\" are not known to be namespaced",
                NULL,
                NULL,
                NULL,
                NULL,
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                PodSysctlAllowlist a;
                char *l[] = { (char *)bad[i], NULL };
                Error err = {};
                assert_int_equal(pod_sysctl_allowlist_init(&a, "6.1.0", l, &err), -EINVAL);
                assert_int_equal(err.error, -EINVAL);
                if (expect[i])
                        assert_string_equal(err.message, expect[i]);
                assert_null(a.names);
                assert_null(a.prefixes);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_safe_set),
                cmocka_unit_test(test_unsafe_allowed),
                cmocka_unit_test(test_bad_patterns),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
