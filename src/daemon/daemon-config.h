/* Agent configuration: kubelet-named flags over an optional
 * KubeletConfiguration file (kubelet.config.k8s.io/v1beta1). Flags win over
 * the file; unknown file fields are warned about, not fatal. Which flag and
 * field sets which member, with its default and bounds, is the settings
 * table (settings.h); this module runs it and checks the combination. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "cgroup.h"
#include "cleanup.h"
#include "diag.h"
#include "error.h"
#include "runtime.h"
#include "time-util.h"

/* The settings that name one of a few values are parsed into these when
 * read (flag or file), so a bad value stops the agent with the flag or
 * file:line:field named, and no code below compares strings. */

/* --runtime: runc or crun from PATH, or an absolute path. */
typedef enum RuntimeKind {
        RUNTIME_KIND_RUNC,
        RUNTIME_KIND_CRUN,
        RUNTIME_KIND_PATH,
        _RUNTIME_KIND_MAX,
        _RUNTIME_KIND_INVALID = -EINVAL,
} RuntimeKind;

/* --container-monitor */
typedef enum ContainerMonitor {
        CONTAINER_MONITOR_NANOLET, /* nanolet-monitor, installed next to the agent */
        CONTAINER_MONITOR_CONMON,  /* conmon in PATH */
        _CONTAINER_MONITOR_MAX,
        _CONTAINER_MONITOR_INVALID = -EINVAL,
} ContainerMonitor;

/* hairpinMode: kubelet's three modes. */
typedef enum HairpinMode {
        HAIRPIN_MODE_HAIRPIN_VETH,
        HAIRPIN_MODE_PROMISCUOUS_BRIDGE,
        HAIRPIN_MODE_NONE,
        _HAIRPIN_MODE_MAX,
        _HAIRPIN_MODE_INVALID = -EINVAL,
} HairpinMode;

/* "runc", "crun"; RUNTIME_KIND_PATH has no name ("path"). */
const char *runtime_kind_to_string(RuntimeKind k);
RuntimeKind runtime_kind_from_string(const char *s);
const char *container_monitor_to_string(ContainerMonitor m);
ContainerMonitor container_monitor_from_string(const char *s);
const char *hairpin_mode_to_string(HairpinMode m);
HairpinMode hairpin_mode_from_string(const char *s);

typedef struct NanoletConfig {
        /* sources */
        char *pod_manifest_path;
        char *manifest_url;
        char **manifest_url_headers;         /* "Key: Value" */
        char **manifest_url_public_keys;     /* key files; none: bodies are not verified */
        char *manifest_url_signature_format; /* cosign, sigstore-bundle, minisign */
        char *manifest_url_signature_url;    /* NULL: the URL and the format's suffix */
        usec_t file_check_frequency;
        usec_t http_check_frequency;
        usec_t manifest_url_max_backoff;
        usec_t sync_frequency;
        uint64_t max_manifest_size;
        bool allow_insecure_manifests;

        /* identity */
        char *hostname_override;
        char *node_name; /* resolved by nanolet_config_finish() */

        /* files on the node */
        char *root_dir;
        char *run_dir;
        char *pod_logs_dir;
        char *container_logs_dir; /* /var/log/containers symlinks */

        /* runtime and networking (used by later subsystems) */
        RuntimeKind runtime;
        char *runtime_path; /* RUNTIME_KIND_PATH only */
        ContainerMonitor container_monitor;
        int64_t runtime_max_parallel;  /* runtime/monitor children at once; 0 = by CPUs */
        bool seccomp_default;          /* seccompDefault [true; kubelet: false] */
        char **allowed_unsafe_sysctls; /* allowedUnsafeSysctls */
        usec_t shutdown_grace_period;  /* shutdownGracePeriod [0: off] */
        usec_t shutdown_grace_period_critical_pods;
        char *cni_conf_dir;
        char *cni_bin_dir;
        int64_t cni_max_parallel;  /* CNI operations at once; 0 = by CPUs */
        usec_t cni_plugin_timeout; /* one plugin's run */
        char *pod_cidr;
        char **cluster_dns;
        char **node_ips; /* --node-ip; NULL = detect */
        char *cluster_domain;
        char *resolv_conf;
        HairpinMode hairpin_mode;
        CgroupDriver cgroup_driver;
        char *cgroup_root;  /* --cgroup-root, "/" */
        bool cpu_cfs_quota; /* --cpu-cfs-quota, true */
        /* --kube-reserved / --system-reserved (cpu=,memory=): subtracted
         * from the node's capacity to give its allocatable. 0 = none. */
        int64_t kube_reserved_milli_cpu, kube_reserved_memory;
        int64_t system_reserved_milli_cpu, system_reserved_memory;
        int64_t max_pods;
        int64_t pod_pids_limit;
        int64_t container_log_max_size;
        int64_t container_log_max_files;
        int64_t container_log_max_workers;          /* containerLogMaxWorkers [1] */
        usec_t container_log_monitor_interval;      /* how often log sizes are checked */
        char **eviction_hard;                       /* "signal<value" */
        char **eviction_soft;                       /* "signal<value" */
        char **eviction_soft_grace_period;          /* "signal=duration" */
        char **eviction_minimum_reclaim;            /* "signal=value" */
        usec_t eviction_pressure_transition_period; /* [5m] */
        bool evict_static_pods; /* evictStaticPods [false: kubelet never evicts a static pod] */
        int64_t image_gc_high_threshold;
        int64_t image_gc_low_threshold;
        usec_t image_minimum_gc_age; /* imageMinimumGCAge [2m] */
        usec_t image_maximum_gc_age; /* imageMaximumGCAge [0: off] */
        char **pinned_images;        /* --pinned-images: never removed by image GC */
        bool serialize_image_pulls;
        int64_t max_parallel_image_pulls; /* with serializeImagePulls false; 0 = no bound */
        bool image_pull_never;            /* --image-pull-policy-override=never */
        /* registry pulls (docs/images.md): flags only, no KubeletConfiguration field */
        char *image_credential_file; /* docker config.json */
        char *registries_conf;       /* containers-registries.conf(5) */
        char *registry_certs_dir;    /* containers-certs.d(5) */
        char **insecure_registries;  /* host[:port] */

        /* API */
        char *address;
        int64_t read_only_port;
        int64_t healthz_port;
        char *healthz_bind_address;

        /* agent behaviour */
        bool dry_run;
        bool stop_pods_on_exit;
        int verbosity;
        bool log_json; /* --logging-format=json */
        char *config_file;
} NanoletConfig;

/* Fills in every default of the settings table (docs/settings.md). */
int nanolet_config_init(NanoletConfig *c);
void nanolet_config_deinit(NanoletConfig *c);

/* Parses a KubeletConfiguration document; problems go to diag (errors for
 * wrong types or values, warnings for unknown fields). */
int nanolet_config_load_file(NanoletConfig *c, const char *path, Diagnostics *diag);
int nanolet_config_load_buffer(NanoletConfig *c, const char *buf, size_t size, const char *filename,
                               Diagnostics *diag);

/* Only -v and --logging-format, silently: for the logger to be set up
 * before nanolet_config_parse_argv() reports anything, the configuration
 * file's warnings included. */
int nanolet_config_parse_log_flags(NanoletConfig *c, int argc, char **argv);

/* Parses `serve` flags (argv[0] is the verb). Loads --config first so that
 * flags override it. Returns 0, 1 when --help was printed, or -EINVAL after
 * printing a usage error. */
int nanolet_config_parse_argv(NanoletConfig *c, int argc, char **argv);

/* The OCI runtime to run: "runc", "crun" or the absolute path. */
const char *nanolet_config_runtime(const NanoletConfig *c);

/* The container runtime's options that follow from the configuration (the
 * caller adds the monitor and the metrics). With the systemd cgroup driver
 * runc and crun get --systemd-cgroup: without it they take a pod slice's
 * "slice:prefix:name" cgroupsPath for a directory below their own cgroup,
 * outside the pod slice and its limits. */
RuntimeOptions nanolet_config_runtime_options(const NanoletConfig *c);

/* Resolves derived values: node name from --hostname-override or the
 * lowercase hostname. */
int nanolet_config_finish(NanoletConfig *c);

/* "cpu=100m,memory=256Mi" (kubelet's --kube-reserved form; also
 * ephemeral-storage= and pid=, accepted and not counted) into milli-CPU and
 * bytes; -EINVAL with a message in err for anything else. */
int nanolet_parse_reserved(const char *s, int64_t *ret_milli_cpu, int64_t *ret_memory, Error *err);
/* One resource=quantity pair of the same form into *milli_cpu or *memory. */
int nanolet_reserved_add(const char *resource, const char *quantity, int64_t *milli_cpu,
                         int64_t *memory, Error *err);
/* Most resource=quantity pairs in one reservation (the four resources,
 * each perhaps repeated). */
#define RESERVED_ENTRIES_MAX 64

/* Go-style duration or bare seconds ("20s", "1m30s", "20"). */
int nanolet_parse_duration(const char *s, usec_t *ret);
