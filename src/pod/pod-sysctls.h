/* kubelet's sysctl admission (pkg/kubelet/sysctl): a pod's
 * spec.securityContext.sysctls must all be on the node's allowlist, else the
 * pod is rejected before anything of it is created: phase Failed, reason
 * POD_SYSCTL_FORBIDDEN_REASON, message "forbidden sysctl: ...", as kubelet
 * words it.
 *
 * The allowlist is Kubernetes' safe set (the sysctls that are namespaced and
 * isolate pods from each other), each only on kernels where it is
 * namespaced, plus allowedUnsafeSysctls (names, or prefixes ending in "*").
 * Every entry must be known to be namespaced (net.*, kernel.shm*,
 * kernel.msg*, kernel.sem, fs.mqueue.*); a net.* one is refused to a
 * hostNetwork pod and an IPC one to a hostIPC pod, as kubelet does: it would
 * change the node. Names may use slashes ("net/ipv4/ip_forward"), as
 * Kubernetes accepts them. */
#pragma once

#include <stdbool.h>

#include "error.h"
#include "pod.h"

#define POD_SYSCTL_FORBIDDEN_REASON "SysctlForbidden"

typedef struct PodSysctlAllowlist {
        char **names;    /* "name=ns" */
        char **prefixes; /* "prefix=ns" (the "*" removed) */
} PodSysctlAllowlist;

/* Builds the allowlist for a kernel release (uname -r, e.g. "6.1.0-18-amd64";
 * NULL or unparsable: only the safe sysctls without a kernel minimum, as
 * kubelet when it cannot tell the version) and the unsafe patterns. -EINVAL
 * with err set (kubelet's words) for a pattern that is malformed or not
 * known to be namespaced; -ENOMEM. */
int pod_sysctl_allowlist_init(PodSysctlAllowlist *a, const char *kernel_release,
                              char *const *unsafe_patterns, Error *err);
void pod_sysctl_allowlist_done(PodSysctlAllowlist *a);

/* 0 when every sysctl of the pod is allowed; -EPERM with *ret_message
 * ("forbidden sysctl: \"net.core.somaxconn\" not allowlisted") for the first
 * one that is not; -ENOMEM. */
int pod_sysctl_admit(const PodSysctlAllowlist *a, const Pod *pod, char **ret_message);
