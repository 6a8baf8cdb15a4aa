/* A pod's volumes on the node, as kubelet lays them out:
 * <pod_dir>/volumes/kubernetes.io~<plugin>/<name> for emptyDir, configMap,
 * secret, downwardAPI and projected volumes (same plugin directory names as
 * kubelet, so operators find things where they expect them), hostPath
 * volumes checked (and created) in place, image volumes left to each
 * container attempt (image-volumes.h), and the pod's /dev/shm tmpfs at
 * <pod_dir>/shm. Also owns the pod facts both env vars and downwardAPI
 * volumes read (fieldRef / resourceFieldRef values) and the lookup of local
 * ConfigMaps and Secrets, so container-config.c and this file agree. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod.h"
#include "runtime-config.h"

/* ---- lookups of local ConfigMap/Secret documents (docs/manifests.md) ---- */

/* Returns the object or NULL when there is none. The pointer must stay
 * valid for the duration of the call that received the lookup. The real
 * implementation wraps pod_config_find() and returns o->configmap/o->secret. */
typedef struct PodObjectLookup {
        const ConfigMap *(*configmap)(void *userdata, const char *namespace, const char *name);
        const Secret *(*secret)(void *userdata, const char *namespace, const char *name);
        void *userdata;
} PodObjectLookup;

const ConfigMap *pod_lookup_configmap(const PodObjectLookup *l, const char *ns, const char *name);
const Secret *pod_lookup_secret(const PodObjectLookup *l, const char *ns, const char *name);

/* ---- node facts that downward API values need ---- */

typedef struct PodNodeInfo {
        const char *node_name;
        /* The pod's UID (ManifestObject.uid) for metadata.uid when the
         * manifest does not set metadata.uid itself; NULL = metadata.uid. */
        const char *pod_uid;   /* spec.nodeName as kubelet sets it for static pods */
        char *const *pod_ips;  /* strv; NULL until networking assigns them */
        char *const *host_ips; /* strv; NULL = unknown */
        /* Node allocatable, the default for resourceFieldRef limits when the
         * container has none (kubelet). 0 = ask the system (sysconf, statvfs). */
        uint64_t cpu_count;
        uint64_t memory_bytes;
        uint64_t ephemeral_storage_bytes;
} PodNodeInfo;

uint64_t pod_node_cpu_count(const PodNodeInfo *n);
uint64_t pod_node_memory_bytes(const PodNodeInfo *n);

/* The value of a fieldRef (env or downwardAPI volume) as kubelet renders it:
 * "status.podIPs" comma-joined, "metadata.labels" as sorted key="value" lines,
 * "metadata.labels['k']" the value or "". -EINVAL for unsupported paths. */
int pod_field_ref_value(const Pod *pod, const PodNodeInfo *node, const char *field_path,
                        char **ret);
/* The value of a resourceFieldRef for container c (kubelet: limits default to
 * node allocatable; the result is rounded up to whole divisors). */
int pod_resource_field_ref_value(const Pod *pod, const Container *c, const PodNodeInfo *node,
                                 const ResourceFieldSelector *sel, char **ret);

/* ---- volumes ---- */

typedef struct PodVolumePath {
        char *name;
        /* What to bind into containers; NULL for an image volume, which
         * each container attempt mounts itself (image-volumes.h). */
        char *host_path;
        bool image;
        /* configMap, secret, downwardAPI and projected volumes are always
         * mounted read-only (kubelet: the plugin's ReadOnly attribute). */
        bool read_only;
} PodVolumePath;

typedef struct PodVolumes {
        PodVolumePath *items;
        size_t n_items;
        char *shm_path; /* <pod_dir>/shm, NULL for hostIPC pods */
} PodVolumes;

typedef struct PodVolumesOptions {
        const char *pod_dir; /* <root-dir>/pods/<uid> */
        const PodNodeInfo *node;
        const PodObjectLookup *lookup;
        uint64_t shm_size; /* 0 = 64 MiB (containerd's default) */
        /* For unprivileged tests and dry runs: tmpfs-backed volumes (secret,
         * projected, medium Memory, /dev/shm) become plain directories. */
        bool no_mounts;
} PodVolumesOptions;

/* Prepares every volume of pod (idempotent: an existing tmpfs is reused,
 * configMap/secret contents are rewritten atomically, so calling it again
 * updates projected files in place). On failure err says which volume and
 * why, in kubelet's words ("hostPath type check failed: /x is not a
 * directory", "configmap \"x\" not found"); what was already set up stays
 * for pod_volumes_cleanup(). */
int pod_volumes_prepare(const Pod *pod, const PodVolumesOptions *o, PodVolumes *ret, Error *err);
/* Unmounts every tmpfs under <pod_dir>/volumes and <pod_dir>/shm and removes
 * <pod_dir>/volumes and <pod_dir>/shm. Never crosses a mount point that is not
 * a tmpfs of ours and never follows symlinks, so a hostPath (which is never
 * under the pod dir anyway) or a bind mount left behind cannot be emptied.
 * Idempotent. */
int pod_volumes_cleanup(const char *pod_dir, Error *err);

const char *pod_volumes_get(const PodVolumes *v, const char *name);
/* Whether the volume called name is an image volume. */
bool pod_volumes_is_image(const PodVolumes *v, const char *name);
/* Whether a configMap (secret false) or secret volume of pod, or a projected
 * volume's source, projects the object called name (of the pod's own
 * namespace): such volumes are rewritten when the object changes. */
bool pod_volumes_project(const Pod *pod, bool secret, const char *name);
void pod_volumes_done(PodVolumes *v);

/* kubelet's hostPath type check for one volume (creating DirectoryOrCreate
 * and FileOrCreate paths). Exposed for tests. */
int pod_host_path_check(const HostPathVolumeSource *hp, Error *err);

/* One file of an atomically written volume (Kubernetes' AtomicWriter). */
typedef struct PodVolumeFile {
        char *path; /* relative, no "..", no leading "/" */
        char *data;
        size_t size;
        mode_t mode;
} PodVolumeFile;

/* Writes files into dir with AtomicWriter's layout: a fresh
 * "..<timestamp>.<random>" directory holding the files, the "..data"
 * symlink swapped to it with rename(2), and one symlink per top-level
 * entry pointing into "..data/". The previous timestamped directory and
 * entries no longer in files are removed afterwards. fs_group >= 0 chowns the
 * files to that group. */
int pod_atomic_write(const char *dir, const PodVolumeFile *files, size_t n_files, int64_t fs_group);

/* openat2() with RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS|extra: a path that
 * leaves dir_fd (through "..", an absolute symlink or a symlink pointing
 * out) fails with -EXDEV. */
int pod_open_beneath(int dir_fd, const char *path, int flags, uint64_t extra_resolve);
/* openat2() with RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS: symlinks resolve as
 * if dir_fd were "/" (a container rootfs). */
int pod_open_in_root(int dir_fd, const char *path, int flags);
