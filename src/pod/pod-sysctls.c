/* Sysctl admission (pod-sysctls.h). The tables are Kubernetes' own (safe
 * set and kernel minimums from pkg/kubelet/sysctl/safe_sysctls.go and
 * pkg/util/kernel of 1.33, namespaces from component-helpers' NamespacedBy). */
#include "pod-sysctls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "string-util.h"
#include "strv.h"

static const struct {
        const char *name;
        unsigned major, minor; /* first kernel where it is per network namespace */
} safe_sysctls[] = {
        { "kernel.shm_rmid_forced", 0, 0 },
        { "net.ipv4.ip_local_port_range", 0, 0 },
        { "net.ipv4.tcp_syncookies", 0, 0 },
        { "net.ipv4.ping_group_range", 0, 0 },
        { "net.ipv4.ip_unprivileged_port_start", 0, 0 },
        { "net.ipv4.ip_local_reserved_ports", 3, 16 },
        { "net.ipv4.tcp_keepalive_time", 4, 5 },
        { "net.ipv4.tcp_fin_timeout", 4, 6 },
        { "net.ipv4.tcp_keepalive_intvl", 4, 5 },
        { "net.ipv4.tcp_keepalive_probes", 4, 5 },
        { "net.ipv4.tcp_rmem", 4, 15 },
        { "net.ipv4.tcp_wmem", 4, 15 },
};

/* The namespace that isolates a sysctl: "ipc", "net", or NULL when it is
 * not known to be namespaced. */
static const char *namespaced_by(const char *name) {
        if (streq(name, "kernel.sem") || startswith(name, "kernel.shm") ||
            startswith(name, "kernel.msg") || startswith(name, "fs.mqueue."))
                return "ipc";
        if (startswith(name, "net."))
                return "net";
        return NULL;
}

/* Kubernetes' rule: when the first separator is a slash, slashes and dots
 * swap roles ("net/ipv4/conf/eth0.100/rp_filter"). */
static char *dotted(const char *name) {
        char *s = strdup(name);
        if (s && s[strcspn(s, "./")] == '/')
                for (char *p = s; *p; p++)
                        *p = *p == '/' ? '.' : *p == '.' ? '/' : *p;
        return s;
}

/* IsValidSysctlPattern's shape: lowercase segments of [a-z0-9_-] separated
 * by dots or slashes, at most 253 characters, an optional "*" at the end. */
static bool valid_pattern(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 253)
                return false;
        if (s[n - 1] == '*')
                n--;
        if (n == 0 || s[0] == '.' || s[0] == '/' || s[0] == '-' || s[0] == '_')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool sep = c == '.' || c == '/';
                if (!(sep || c == '-' || c == '_' || (c >= 'a' && c <= 'z') ||
                      (c >= '0' && c <= '9')))
                        return false;
                if (sep && i + 1 < n && (s[i + 1] == '.' || s[i + 1] == '/'))
                        return false;
        }
        return true;
}

/* "6.1.0-18-amd64" -> 6, 1. */
static bool kernel_at_least(const char *release, unsigned major, unsigned minor) {
        unsigned ma, mi;
        if (major == 0)
                return true;
        if (!release || sscanf(release, "%u.%u", &ma, &mi) != 2)
                return false;
        return ma > major || (ma == major && mi >= minor);
}

static int add(char ***l, const char *name, const char *ns) {
        char *e = strprintf("%s=%s", name, ns);
        if (!e)
                return -ENOMEM;
        int r = strv_consume(l, e);
        if (r < 0)
                free(e);
        return r;
}

int pod_sysctl_allowlist_init(PodSysctlAllowlist *a, const char *kernel_release,
                              char *const *unsafe_patterns, Error *err) {
        *a = (PodSysctlAllowlist){};
        int r;

        for (size_t i = 0; i < ELEMENTSOF(safe_sysctls); i++) {
                if (!kernel_at_least(kernel_release, safe_sysctls[i].major, safe_sysctls[i].minor))
                        continue;
                r = add(&a->names, safe_sysctls[i].name, namespaced_by(safe_sysctls[i].name));
                if (r < 0)
                        goto fail;
        }
        for (char *const *p = unsafe_patterns; p && *p; p++) {
                if (!valid_pattern(*p)) {
                        r = error_set(err, -EINVAL,
                                      "sysctl \"%s\" must have at most 253 characters "
                                      "and be a dotted or slashed name with an optional "
                                      "trailing \"*\"",
                                      *p);
                        goto fail;
                }
                _cleanup_free_ char *s = dotted(*p);
                if (!s) {
                        r = -ENOMEM;
                        goto fail;
                }
                bool prefix = endswith(s, "*");
                if (prefix)
                        s[strlen(s) - 1] = 0;
                const char *ns = namespaced_by(s);
                if (!ns) {
                        r = error_set(err, -EINVAL,
                                      prefix ? "the sysctls \"%s*\" are not known to be "
                                               "namespaced"
                                             : "the sysctl \"%s\" are not known to be "
                                               "namespaced",
                                      s);
                        goto fail;
                }
                r = add(prefix ? &a->prefixes : &a->names, s, ns);
                if (r < 0)
                        goto fail;
        }
        return 0;
fail:
        pod_sysctl_allowlist_done(a);
        return r;
}

void pod_sysctl_allowlist_done(PodSysctlAllowlist *a) {
        a->names = strv_free(a->names);
        a->prefixes = strv_free(a->prefixes);
}

/* The namespace of the entry that allows name, or NULL. */
static const char *lookup(const PodSysctlAllowlist *a, const char *name) {
        size_t n = strlen(name);
        STRV_FOREACH(e, a->names) {
                const char *eq = strrchr(*e, '=');
                if ((size_t)(eq - *e) == n && strncmp(*e, name, n) == 0)
                        return eq + 1;
        }
        STRV_FOREACH(e, a->prefixes) {
                const char *eq = strrchr(*e, '=');
                if (strncmp(*e, name, (size_t)(eq - *e)) == 0)
                        return eq + 1;
        }
        return NULL;
}

int pod_sysctl_admit(const PodSysctlAllowlist *a, const Pod *pod, char **ret_message) {
        const PodSecurityContext *sc = pod->spec.security_context;

        for (size_t i = 0; sc && i < sc->n_sysctls; i++) {
                if (!sc->sysctls[i].name)
                        continue;
                _cleanup_free_ char *name = dotted(sc->sysctls[i].name);
                if (!name)
                        return -ENOMEM;
                const char *ns = lookup(a, name);
                if (!ns)
                        *ret_message = strprintf("forbidden sysctl: \"%s\" not allowlisted", name);
                else if ((streq(ns, "net") && pod->spec.host_network) ||
                         (streq(ns, "ipc") && pod->spec.host_ipc))
                        *ret_message = strprintf("forbidden sysctl: \"%s\" not allowed with host "
                                                 "%s enabled",
                                                 name, ns);
                else
                        continue;
                return *ret_message ? -EPERM : -ENOMEM;
        }
        return 0;
}
