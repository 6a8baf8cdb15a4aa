/* The container's OCI runtime configuration, as nanolet decides it, and its
 * translation into an OCI bundle config.json (runtime-spec 1.0.2, the
 * version runc 1.1 and crun 1.8 implement). This module knows nothing of
 * Pods: src/pod fills RuntimeContainerConfig from the pod spec and the
 * image config; here it becomes JSON with the defaults containerd applies
 * (capabilities, masked/read-only paths, devices, RuntimeDefault seccomp). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "cleanup.h"
#include "error.h"

typedef struct RuntimeMount {
        char *destination; /* absolute path inside the container */
        char *source;
        char *type;     /* "bind", "tmpfs", "proc", ... */
        char **options; /* e.g. "rbind", "ro", "nosuid", "rprivate"/"rslave"/"rshared" */
} RuntimeMount;

typedef enum RuntimeNamespaceMode {
        RUNTIME_NS_NEW,  /* a fresh namespace for this container */
        RUNTIME_NS_PATH, /* join the pinned namespace at path */
        RUNTIME_NS_HOST, /* no namespace entry: the host's */
} RuntimeNamespaceMode;

typedef struct RuntimeNamespace {
        RuntimeNamespaceMode mode;
        char *path; /* RUNTIME_NS_PATH */
} RuntimeNamespace;

typedef enum RuntimeSeccompMode {
        RUNTIME_SECCOMP_RUNTIME_DEFAULT, /* nanolet's default (docs/internals/runtime.md) */
        RUNTIME_SECCOMP_UNCONFINED,
        RUNTIME_SECCOMP_LOCALHOST, /* profile JSON at seccomp_profile_path */
} RuntimeSeccompMode;

typedef struct RuntimeResources {
        uint64_t cpu_shares; /* 0 = unset */
        int64_t cpu_quota;   /* 0 = unset; with cpu_period */
        uint64_t cpu_period;
        int64_t memory_limit; /* bytes; 0 = unset */
        int64_t pids_limit;   /* 0 = unset */
        struct {
                char *page_size; /* "2MB", "1GB" */
                uint64_t limit;
        } * hugepages;
        size_t n_hugepages;
} RuntimeResources;

/* A process.rlimits entry. None by default: like containerd's CRI plugin,
 * nanolet lets the container inherit the runtime's limits, since a fixed
 * RLIMIT_NOFILE both surprises images and can exceed what the host allows. */
typedef struct RuntimeRlimit {
        char *type; /* "RLIMIT_NOFILE", ... */
        uint64_t soft;
        uint64_t hard;
} RuntimeRlimit;

/* The RuntimeDefault profiles built so far, one per bounding set (pods
 * mostly share one or two): built once per agent, not per container. The
 * owner zero-initializes it and frees it with runtime_seccomp_cache_done();
 * a full cache only stops caching. */
#define RUNTIME_SECCOMP_CACHE_MAX 8
typedef struct RuntimeSeccompCache {
        uint64_t caps[RUNTIME_SECCOMP_CACHE_MAX];
        json_t *profile[RUNTIME_SECCOMP_CACHE_MAX]; /* read-only, shared into config trees */
        size_t n;
} RuntimeSeccompCache;

void runtime_seccomp_cache_done(RuntimeSeccompCache *c);

typedef struct RuntimeContainerConfig {
        char *rootfs; /* absolute path of the prepared root filesystem */
        bool readonly_rootfs;

        char **args; /* argv; args[0] resolved by the runtime in PATH */
        char **env;  /* "K=V" */
        char *cwd;   /* absolute; "/" if unset */
        uid_t uid;
        gid_t gid;
        gid_t *additional_gids;
        size_t n_additional_gids;
        bool terminal;
        char *hostname; /* NULL: the UTS namespace keeps its own */

        RuntimeNamespace net, ipc, uts, pid; /* mount ns is always new */
        /* userns_length > 0: a new user namespace mapping container IDs
         * 0..length-1 to host IDs userns_host_id.. (UIDs and GIDs alike);
         * 0: the host's user namespace. */
        uint32_t userns_host_id;
        uint32_t userns_length;

        RuntimeMount *mounts; /* added after the default /proc, /dev, /sys... mounts */
        size_t n_mounts;

        bool privileged; /* all capabilities, no masked paths, every host device */
        char **cap_add;  /* "NET_ADMIN" or "CAP_NET_ADMIN"; "ALL" allowed */
        char **cap_drop;
        bool no_new_privileges;
        bool unmasked_proc; /* procMount: Unmasked */
        RuntimeSeccompMode seccomp;
        char *seccomp_profile_path;
        RuntimeSeccompCache *seccomp_cache; /* not owned; NULL: build every time */
        char *apparmor_profile;             /* process.apparmorProfile; NULL: none */
        /* Privileged: the host's device nodes below this directory go into
         * linux.devices ("/dev" when NULL), as containerd and CRI-O do. */
        const char *host_dev_dir;
        char **sysctls; /* "key=value" */

        char *cgroups_path; /* e.g. "/kubepods/burstable/pod<uid>/<id>" */
        RuntimeResources resources;
        int oom_score_adj;
        bool oom_score_adj_set;

        char **annotations; /* "key=value" */

        RuntimeRlimit *rlimits; /* optional; see RuntimeRlimit */
        size_t n_rlimits;
} RuntimeContainerConfig;

void runtime_container_config_done(RuntimeContainerConfig *c);

/* Builds config.json for c. Also as containerd: process.env gets containerd's
 * default PATH when c->env has none (runc looks args[0] up in it);
 * privileged containers get no seccomp filter, writable /sys and
 * /sys/fs/cgroup and no cgroup namespace. Every problem (unknown capability, unreadable
 * or invalid Localhost seccomp profile, unknown syscall in it, bad sysctl)
 * is an error naming the field. */
int runtime_config_to_json(const RuntimeContainerConfig *c, json_t **ret, Error *err);

/* The device nodes below dir (recursively, at most RUNTIME_HOST_DEVICES_MAX)
 * appended to the JSON array devs as OCI linux.devices entries with their
 * path under /dev, type, numbers, mode and owner: containerd's HostDevices(),
 * which skips pts, shm, mqueue, fd and console. Symlinks are not followed.
 * Returns the number added or -errno (dir unreadable: -errno of opendir). */
#define RUNTIME_HOST_DEVICES_MAX 4096
int runtime_host_devices(const char *dir, json_t *devs);

/* Writes <bundle_dir>/config.json atomically (creating bundle_dir). */
int runtime_bundle_write(const char *bundle_dir, const RuntimeContainerConfig *c, Error *err);

/* The capability set containerd gives a container by default, "CAP_"
 * names, NULL-terminated. */
extern const char *const runtime_default_capabilities[];

/* Capabilities as bitmasks like CapEff in /proc/<pid>/status. */
#define RUNTIME_CAP_MAX 40 /* CAP_CHECKPOINT_RESTORE, the last one with a name here */

/* "CAP_CHOWN" for 0, ...; NULL beyond RUNTIME_CAP_MAX. */
const char *runtime_capability_to_string(int cap);
/* "NET_ADMIN", "cap_net_admin", ...: the number, or -EINVAL. "ALL" is not a
 * capability here. */
int runtime_capability_from_string(const char *name);
/* What "ALL" and privileged mean: every capability the kernel knows
 * (/proc/sys/kernel/cap_last_cap) that nanolet itself holds (CapEff), as
 * containerd's WithAllCurrentCapabilities -- asking runc for one the agent
 * lacks would make the container fail to start. */
uint64_t runtime_capabilities_all(void);
/* The container's bounding = effective = permitted set after privileged,
 * cap_add and cap_drop (Kubernetes semantics: ALL first, then the named
 * ones; a drop wins over an add). Errors name the field. */
int runtime_capabilities_resolve(const RuntimeContainerConfig *c, uint64_t *ret, Error *err);

/* true when /sys/fs/cgroup is cgroup v2, where containers get their own
 * cgroup namespace. */
bool runtime_cgroup_unified(void);
