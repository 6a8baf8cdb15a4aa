/* From a pod spec and an image config to one container's runtime
 * configuration (RuntimeContainerConfig), with Kubernetes semantics:
 * command/args over Entrypoint/Cmd, $(VAR) expansion, env from values,
 * fieldRefs, resourceFieldRefs, local ConfigMaps/Secrets and envFrom, user
 * and groups resolved inside the rootfs, namespaces joined by pin path,
 * volume/etc-file/termination-log mounts, security context, QoS-derived
 * cgroup resources and oom_score_adj. Nothing is started here; the side
 * effects are kubelet's: missing subPath directories and the termination-log
 * file are created, and each subPath is bind-mounted (from a file descriptor
 * opened beneath its volume, never from a path a container could redirect)
 * onto <attempt_dir>/subpaths/<volumeMount index>, which the runtime then
 * mounts. Whoever removes an attempt directory first calls
 * container_subpaths_release() on it. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "expansion.h"
#include "image-oci.h"
#include "pod-volumes.h"
#include "pod.h"
#include "runtime-config.h"

/* The waiting reason for every error container_config_build() returns
 * (except -ENOMEM): the status shows it with err->message, as kubelet does. */
#define CONTAINER_CONFIG_ERROR_REASON "CreateContainerConfigError"

typedef struct ContainerBuildContext {
        const Pod *pod;
        const Container *container;    /* points into pod (init or app container) */
        const ImageConfig *image;      /* NULL = empty config */
        const PodNodeInfo *node;       /* node name, pod/host IPs, allocatable */
        const PodObjectLookup *lookup; /* local ConfigMaps/Secrets; NULL = none exist */

        const char *container_id; /* <pod-uid>-<name>-<attempt> */
        unsigned attempt;         /* nanolet.io/attempt annotation */
        const char *rootfs;       /* mounted rootfs (absolute) */
        const char *attempt_dir;  /* the attempt's own; subPath mount points go below */
        /* The pod's cgroup (cgroup.h): the container's cgroupsPath is below
         * it. NULL = the cgroupfs driver under "/". The pids limit is the
         * pod's (pod_cgroup_resources()), not the container's. */
        const CgroupLayout *cgroups;
        bool no_cpu_quota; /* --cpu-cfs-quota=false: no CFS quota from limits */

        /* Files the pod prepared (pod-etc-files.h, pod-volumes.h). A NULL
         * file is not mounted (and the image's own is kept). */
        const char *etc_hosts_path;
        const char *etc_hostname_path;
        const char *resolv_conf_path;
        const PodVolumes *volumes;
        const char *termination_log_path; /* host file for terminationMessagePath; created 0666 */

        /* Pinned namespaces: <run-dir>/ns/<uid>/{net,ipc,uts,pid}. ns_pid is
         * used only with shareProcessNamespace. */
        const char *ns_net, *ns_ipc, *ns_uts, *ns_pid;
        const char *node_hostname; /* for hostNetwork pods (the host's) */
        /* hostUsers: false: the first host ID of the pod's range
         * (pod-userns.h); 0 for a pod in the host's user namespace. */
        uint32_t userns_host_id;

        const char *seccomp_dir; /* <root-dir>/seccomp, for Localhost profiles */
        /* seccompDefault false (kubelet's default): a container without a
         * seccompProfile runs Unconfined instead of RuntimeDefault. */
        bool no_seccomp_default;

        /* AppArmor (container_apparmor()): whether the host enforces it,
         * whether RuntimeDefault is CONTAINER_APPARMOR_DEFAULT_PROFILE there
         * (pod_apparmor_default_available()), and the kernel's list of
         * loaded profiles, where a Localhost profile must be (NULL: not
         * checked). */
        bool apparmor_enabled;
        bool apparmor_default;
        const char *apparmor_profiles_path;

        /* Optional: non-fatal problems are appended (invalid envFrom keys,
         * as kubelet's warning event); the caller logs them once. */
        char ***warnings;
} ContainerBuildContext;

/* Fills *ret (which the caller later frees with runtime_container_config_done).
 * Returns 0, -ENOMEM, or a negative errno with err->message in kubelet's words
 * (configmap "x" not found, container has runAsNonRoot and image will run as
 * root, ...) — the status reason is CONTAINER_CONFIG_ERROR_REASON. *ret is
 * written only on success. */
int container_config_build(const ContainerBuildContext *ctx, RuntimeContainerConfig *ret,
                           Error *err);

/* Below an attempt directory: the subPath mount points. */
#define CONTAINER_SUBPATHS_DIR "subpaths"

/* Unmounts (lazily, never following a symlink) and removes the subPath mount
 * points of an attempt; its rootfs and the rest of the directory stay. Safe
 * to call on an attempt that has none, or whose mounts a reboot took.
 * Returns the number of mounts detached, or -errno (a mount point that
 * cannot be unmounted is left in place, never emptied). */
int container_subpaths_release(const char *attempt_dir);

/* ---- pieces, exposed for tests and for the pod worker ---- */

/* The name of nanolet's own RuntimeDefault AppArmor profile (contrib/apparmor/),
 * what containerd's cri-containerd.apparmor.d and CRI-O's crio-default are. */
#define CONTAINER_APPARMOR_DEFAULT_PROFILE "nanolet-default"

typedef enum ContainerAppArmor {
        CONTAINER_APPARMOR_NONE,      /* no profile: unconfined */
        CONTAINER_APPARMOR_DEFAULT,   /* CONTAINER_APPARMOR_DEFAULT_PROFILE */
        CONTAINER_APPARMOR_LOCALHOST, /* a profile the host has loaded */
} ContainerAppArmor;

/* The profile container c of pod runs with, as containerd and CRI-O decide
 * it from kubelet's choice (pod_container_apparmor()): none named is
 * RuntimeDefault; RuntimeDefault is no profile for a privileged container
 * or where the host has no default profile to give (default_available
 * false: no AppArmor, or no apparmor_parser); Unconfined is none; Localhost
 * is the named profile (*ret_name, pointing into pod), whatever the host. */
ContainerAppArmor container_apparmor(const Pod *pod, const Container *c, bool default_available,
                                     const char **ret_name);

/* kubelet's AppArmor admission, where it concerns a Localhost profile: on a
 * host without AppArmor such a pod cannot run. 0 when allowed; -EPERM with
 * *ret_message naming the container and profile; -ENOMEM. */
#define CONTAINER_APPARMOR_REASON "AppArmor"
int container_apparmor_admit(const Pod *pod, bool host_enabled, char **ret_message);

/* Whether the kernel's profile list (the text of
 * /sys/kernel/security/apparmor/profiles: "name (mode)" lines) holds name. */
bool container_apparmor_listed(const char *profiles, const char *name);
/* The most of that list read (hosts with snaps load hundreds of profiles). */
#define CONTAINER_APPARMOR_PROFILES_MAX (8u * 1024 * 1024)

/* Whether runc gives the pod's container an IPC namespace of its own instead
 * of joining a pinned one: a hostNetwork pod (not hostIPC, no shared PID
 * namespace) with one container and no init containers has nothing to
 * share it with, and would otherwise need the sandbox helper's fork for
 * that one pin. kubelet's pause container holds it in every pod; the
 * difference (a restarted container gets fresh SysV IPC objects; /dev/shm
 * stays the pod's tmpfs) is in docs/internals/runtime.md. */
bool pod_ipc_per_container(const Pod *pod);

/* Whether container c's config.json depends on what the pod's network
 * returns (the pod IP), so that it cannot be built while CNI ADD runs: an
 * env var (and so any $(VAR) in command, args or subPathExpr) from the
 * fieldRef status.podIP or status.podIPs, or a subPath/subPathExpr mount,
 * which binds a volume's file as it is at build time (a downwardAPI or
 * projected file holding the pod IP is rewritten after CNI). The etc
 * files and volume directories are bound by path and rewritten in place
 * before runc create, so they do not count. */
bool container_config_needs_network(const Container *c);

typedef enum PodQOSClass {
        POD_QOS_GUARANTEED,
        POD_QOS_BURSTABLE,
        POD_QOS_BEST_EFFORT,
        _POD_QOS_CLASS_MAX,
        _POD_QOS_CLASS_INVALID = -EINVAL,
} PodQOSClass;

const char *pod_qos_class_to_string(PodQOSClass q) _pure_;
/* v1qos.GetPodQOS for the requests/limits the pod declares. */
PodQOSClass pod_qos_class(const Pod *pod);
/* The cgroup QoS level of a pod's class. */
CgroupQos pod_cgroup_qos(const Pod *pod);
/* kubelet's ResourceConfigForPod (cm/helpers_linux.go): the pod cgroup's
 * limits. cpu shares from the sum of requests (BestEffort: 2); CFS quota
 * from the sum of limits and the memory limit from the sum of limits, each
 * only when every container (init containers included) sets that limit;
 * an init container's larger value wins over the sum, as PodLimits and
 * PodRequests compute. pids_limit > 0 is the pod's (--pod-pids-limit);
 * cpu_cfs_quota false leaves the quota unlimited (-1). Hugepage limits
 * (sums, by size) go to ret->hugepages, whose names the caller frees with
 * pod_cgroup_resources_done(). */
int pod_cgroup_resources(const Pod *pod, bool cpu_cfs_quota, int64_t pids_limit,
                         CgroupResources *ret);
void pod_cgroup_resources_done(CgroupResources *res);
/* A hugepages resource's page size ("2Mi") as the hugetlb cgroup names it
 * ("2MB"); -EINVAL for a size that is not a positive quantity. */
int container_hugepage_cgroup_name(const char *page_size, char **ret);
/* kubelet's GetContainerOOMScoreAdjust. */
int container_oom_score_adj(const Pod *pod, const Container *c, uint64_t memory_capacity);
/* kubelet's QoS container manager (qos_container_manager_linux.go): the
 * burstable level's cpu shares are MilliCPUToShares of the summed cpu
 * requests (PodRequests, as pod_cgroup_resources() sums them) of the
 * Burstable pods among pods[n]; qos_burstable_cpu_shares() gives at least
 * kubelet's minimum of 2. */
int64_t qos_burstable_milli_cpu(const Pod *const *pods, size_t n);
uint64_t qos_burstable_cpu_shares(int64_t milli);
/* kubelet's MilliCPUToShares / MilliCPUToQuota (period 100000 µs). */
uint64_t container_milli_cpu_to_shares(int64_t milli);
int64_t container_milli_cpu_to_quota(int64_t milli, uint64_t period);
