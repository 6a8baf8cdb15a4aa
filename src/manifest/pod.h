/* The typed Pod model: what a static pod manifest says, after Kubernetes
 * defaults, in plain structs that the runtime, network and probe modules
 * read directly. Field names follow the Kubernetes JSON names in
 * snake_case. A pointer member that is NULL or an Optional* with set=false
 * means "not given in the manifest and not defaulted". Everything is owned
 * by the Pod/ConfigMap/Secret it hangs off; free only the top object. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "diag.h"
#include "quantity.h"
#include "yaml-node.h"

/* ---- small value types ---- */

typedef struct OptionalInt {
        int64_t value;
        bool set;
} OptionalInt;

typedef struct OptionalBool {
        bool value;
        bool set;
} OptionalBool;

typedef struct OptionalQuantity {
        Quantity value;
        bool set;
} OptionalQuantity;

/* A port given by number or by name ("http"). */
typedef struct IntOrString {
        bool set;
        int64_t num; /* valid when str == NULL */
        char *str;
} IntOrString;

/* One entry of an ordered string map (labels, annotations, nodeSelector,
 * ConfigMap data). value is always NUL-terminated; value_len matters for
 * binary data, which may hold NULs. */
typedef struct KeyValue {
        char *key;
        char *value;
        size_t value_len;
} KeyValue;

/* Ordered map, in document order. */
typedef struct StringMap {
        KeyValue *items;
        size_t n;
} StringMap;

/* Returns the entry for key or NULL. */
const KeyValue *string_map_get(const StringMap *m, const char *key);
/* Replaces or appends (copies both). 0 or -ENOMEM. */
int string_map_set(StringMap *m, const char *key, const char *value, size_t value_len);
void string_map_done(StringMap *m);

/* ---- enums (x_from_string() accepts the Kubernetes spelling) ---- */

typedef enum RestartPolicy {
        RESTART_POLICY_ALWAYS,
        RESTART_POLICY_ON_FAILURE,
        RESTART_POLICY_NEVER,
        _RESTART_POLICY_MAX,
        _RESTART_POLICY_INVALID = -EINVAL,
} RestartPolicy;

typedef enum PullPolicy {
        PULL_POLICY_ALWAYS,
        PULL_POLICY_IF_NOT_PRESENT,
        PULL_POLICY_NEVER,
        _PULL_POLICY_MAX,
        _PULL_POLICY_INVALID = -EINVAL,
} PullPolicy;

typedef enum Protocol {
        PROTOCOL_TCP,
        PROTOCOL_UDP,
        PROTOCOL_SCTP,
        _PROTOCOL_MAX,
        _PROTOCOL_INVALID = -EINVAL,
} Protocol;

typedef enum DNSPolicy {
        DNS_POLICY_CLUSTER_FIRST,
        DNS_POLICY_CLUSTER_FIRST_WITH_HOST_NET,
        DNS_POLICY_DEFAULT,
        DNS_POLICY_NONE,
        _DNS_POLICY_MAX,
        _DNS_POLICY_INVALID = -EINVAL,
} DNSPolicy;

typedef enum HostPathType {
        HOST_PATH_UNSET, /* "" */
        HOST_PATH_DIRECTORY_OR_CREATE,
        HOST_PATH_DIRECTORY,
        HOST_PATH_FILE_OR_CREATE,
        HOST_PATH_FILE,
        HOST_PATH_SOCKET,
        HOST_PATH_CHAR_DEVICE,
        HOST_PATH_BLOCK_DEVICE,
        _HOST_PATH_TYPE_MAX,
        _HOST_PATH_TYPE_INVALID = -EINVAL,
} HostPathType;

typedef enum MountPropagation {
        MOUNT_PROPAGATION_NONE,
        MOUNT_PROPAGATION_HOST_TO_CONTAINER,
        MOUNT_PROPAGATION_BIDIRECTIONAL,
        _MOUNT_PROPAGATION_MAX,
        _MOUNT_PROPAGATION_INVALID = -EINVAL,
} MountPropagation;

typedef enum TerminationMessagePolicy {
        TERMINATION_MESSAGE_FILE,
        TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR,
        _TERMINATION_MESSAGE_POLICY_MAX,
        _TERMINATION_MESSAGE_POLICY_INVALID = -EINVAL,
} TerminationMessagePolicy;

typedef enum SeccompProfileType {
        SECCOMP_PROFILE_RUNTIME_DEFAULT,
        SECCOMP_PROFILE_UNCONFINED,
        SECCOMP_PROFILE_LOCALHOST,
        _SECCOMP_PROFILE_TYPE_MAX,
        _SECCOMP_PROFILE_TYPE_INVALID = -EINVAL,
} SeccompProfileType;

typedef enum AppArmorProfileType {
        APPARMOR_PROFILE_RUNTIME_DEFAULT,
        APPARMOR_PROFILE_UNCONFINED,
        APPARMOR_PROFILE_LOCALHOST,
        _APPARMOR_PROFILE_TYPE_MAX,
        _APPARMOR_PROFILE_TYPE_INVALID = -EINVAL,
} AppArmorProfileType;

typedef enum URIScheme {
        URI_SCHEME_HTTP,
        URI_SCHEME_HTTPS,
        _URI_SCHEME_MAX,
        _URI_SCHEME_INVALID = -EINVAL,
} URIScheme;

typedef enum StorageMedium {
        STORAGE_MEDIUM_DEFAULT, /* "" */
        STORAGE_MEDIUM_MEMORY,
        STORAGE_MEDIUM_HUGEPAGES,
        _STORAGE_MEDIUM_MAX,
        _STORAGE_MEDIUM_INVALID = -EINVAL,
} StorageMedium;

typedef enum OSName {
        OS_NAME_LINUX,
        OS_NAME_WINDOWS, /* decoded so validation can say why it is refused */
        _OS_NAME_MAX,
        _OS_NAME_INVALID = -EINVAL,
} OSName;

typedef enum ProcMountType {
        PROC_MOUNT_DEFAULT,
        PROC_MOUNT_UNMASKED,
        _PROC_MOUNT_TYPE_MAX,
        _PROC_MOUNT_TYPE_INVALID = -EINVAL,
} ProcMountType;

typedef enum SecretType {
        SECRET_TYPE_OPAQUE,
        SECRET_TYPE_SERVICE_ACCOUNT_TOKEN,
        SECRET_TYPE_DOCKERCFG,
        SECRET_TYPE_DOCKER_CONFIG_JSON,
        SECRET_TYPE_BASIC_AUTH,
        SECRET_TYPE_SSH_AUTH,
        SECRET_TYPE_TLS,
        SECRET_TYPE_BOOTSTRAP_TOKEN,
        SECRET_TYPE_OTHER, /* any other non-empty type string, kept in Secret.type_string */
        _SECRET_TYPE_MAX,
        _SECRET_TYPE_INVALID = -EINVAL,
} SecretType;

typedef enum VolumeType {
        VOLUME_HOST_PATH,
        VOLUME_EMPTY_DIR,
        VOLUME_CONFIG_MAP,
        VOLUME_SECRET,
        VOLUME_DOWNWARD_API,
        VOLUME_PROJECTED,
        VOLUME_IMAGE,
        _VOLUME_TYPE_MAX,
        _VOLUME_TYPE_INVALID = -EINVAL, /* no source given */
} VolumeType;

#define DECLARE_ENUM_STRING(name, type)                                                            \
        const char *name##_to_string(type v) _pure_;                                               \
        type name##_from_string(const char *s) _pure_;

DECLARE_ENUM_STRING(restart_policy, RestartPolicy)
DECLARE_ENUM_STRING(pull_policy, PullPolicy)
DECLARE_ENUM_STRING(protocol, Protocol)
DECLARE_ENUM_STRING(dns_policy, DNSPolicy)
DECLARE_ENUM_STRING(host_path_type, HostPathType)
DECLARE_ENUM_STRING(mount_propagation, MountPropagation)
DECLARE_ENUM_STRING(termination_message_policy, TerminationMessagePolicy)
DECLARE_ENUM_STRING(seccomp_profile_type, SeccompProfileType)
DECLARE_ENUM_STRING(apparmor_profile_type, AppArmorProfileType)
DECLARE_ENUM_STRING(uri_scheme, URIScheme)
DECLARE_ENUM_STRING(storage_medium, StorageMedium)
DECLARE_ENUM_STRING(os_name, OSName)
DECLARE_ENUM_STRING(proc_mount_type, ProcMountType)
DECLARE_ENUM_STRING(secret_type, SecretType)
DECLARE_ENUM_STRING(volume_type, VolumeType)

/* ---- metadata ---- */

/* metadata; name carries the "-<node>" suffix after pod_decode(). */
typedef struct ObjectMeta {
        char *name;
        char *namespace;
        char *uid;
        StringMap labels;
        StringMap annotations;
} ObjectMeta;

/* ---- handlers, probes, lifecycle ---- */

typedef struct ExecAction {
        char **command; /* strv */
} ExecAction;

typedef struct HTTPHeader {
        char *name;
        char *value;
} HTTPHeader;

/* httpGet: scheme defaults to HTTP, path to "/"; host empty = pod IP. */
typedef struct HTTPGetAction {
        char *path;
        IntOrString port;
        char *host;
        URIScheme scheme;
        HTTPHeader *http_headers;
        size_t n_http_headers;
} HTTPGetAction;

typedef struct TCPSocketAction {
        IntOrString port;
        char *host;
} TCPSocketAction;

/* grpc.health.v1 check; service NULL = "". */
typedef struct GRPCAction {
        int64_t port;
        char *service;
} GRPCAction;

typedef struct SleepAction {
        int64_t seconds;
} SleepAction;

/* One action; exactly one member is non-NULL in a valid pod. Probes may
 * use exec/httpGet/tcpSocket/grpc, lifecycle hooks exec/httpGet/
 * tcpSocket/sleep. */
typedef struct Handler {
        ExecAction *exec;
        HTTPGetAction *http_get;
        TCPSocketAction *tcp_socket;
        GRPCAction *grpc;
        SleepAction *sleep;
} Handler;
typedef Handler ProbeHandler;
typedef Handler LifecycleHandler;

/* Probe timings are defaulted (see pod-defaults.c) so they are plain ints. */
typedef struct Probe {
        ProbeHandler handler;
        int64_t initial_delay_seconds;
        int64_t timeout_seconds;
        int64_t period_seconds;
        int64_t success_threshold;
        int64_t failure_threshold;
        OptionalInt termination_grace_period_seconds;
} Probe;

typedef struct Lifecycle {
        LifecycleHandler *post_start;
        LifecycleHandler *pre_stop;
} Lifecycle;

/* ---- env ---- */

/* fieldRef; field_path is one of the paths pod-validate.c accepts. */
typedef struct ObjectFieldSelector {
        char *api_version;
        char *field_path;
} ObjectFieldSelector;

/* resourceFieldRef; divisor defaults to 1. */
typedef struct ResourceFieldSelector {
        char *container_name;
        char *resource;
        OptionalQuantity divisor;
} ResourceFieldSelector;

/* configMapKeyRef / secretKeyRef to a local ConfigMap/Secret document. */
typedef struct KeySelector {
        char *name;
        char *key;
        bool optional;
} KeySelector;

typedef struct EnvVarSource {
        ObjectFieldSelector *field_ref;
        ResourceFieldSelector *resource_field_ref;
        KeySelector *config_map_key_ref;
        KeySelector *secret_key_ref;
} EnvVarSource;

/* value is NULL when not given (distinct from ""). */
typedef struct EnvVar {
        char *name;
        char *value;
        EnvVarSource *value_from;
} EnvVar;

typedef struct LocalObjectReference {
        char *name;
        bool optional;
} LocalObjectReference;

typedef struct EnvFromSource {
        char *prefix;
        LocalObjectReference *config_map_ref;
        LocalObjectReference *secret_ref;
} EnvFromSource;

/* ---- ports, resources, mounts ---- */

/* hostPort 0 = none (defaulted to containerPort on hostNetwork pods). */
typedef struct ContainerPort {
        char *name;
        int64_t host_port;
        int64_t container_port;
        Protocol protocol;
        char *host_ip;
} ContainerPort;

/* hugepages-<size>; page_size is the text after "hugepages-" ("2Mi"). */
typedef struct HugePageQuantity {
        char *page_size;
        Quantity value;
} HugePageQuantity;

/* requests or limits. */
typedef struct ResourceList {
        OptionalQuantity cpu;
        OptionalQuantity memory;
        OptionalQuantity ephemeral_storage;
        HugePageQuantity *hugepages;
        size_t n_hugepages;
} ResourceList;

typedef struct ResourceRequirements {
        ResourceList requests;
        ResourceList limits;
} ResourceRequirements;

typedef struct VolumeMount {
        char *name;
        bool read_only;
        char *mount_path;
        char *sub_path;
        char *sub_path_expr;
        MountPropagation mount_propagation; /* defaulted to None */
} VolumeMount;

/* ---- security ---- */

typedef struct Capabilities {
        char **add; /* strv, as written ("NET_ADMIN" or "CAP_NET_ADMIN") */
        char **drop;
} Capabilities;

/* type is _SECCOMP_PROFILE_TYPE_INVALID when the manifest has none: the
 * runtime applies RuntimeDefault (docs/internals/runtime.md). */
typedef struct SeccompProfile {
        SeccompProfileType type;
        char *localhost_profile;
} SeccompProfile;

/* securityContext.appArmorProfile; type is _INVALID when the manifest
 * gives none (a validation error). */
typedef struct AppArmorProfile {
        AppArmorProfileType type;
        char *localhost_profile;
} AppArmorProfile;

/* The older form, one annotation per container: runtime/default,
 * unconfined or localhost/<profile>. */
#define APPARMOR_ANNOTATION_PREFIX "container.apparmor.security.beta.kubernetes.io/"
#define APPARMOR_ANNOTATION_RUNTIME_DEFAULT "runtime/default"
#define APPARMOR_ANNOTATION_UNCONFINED "unconfined"
#define APPARMOR_ANNOTATION_LOCALHOST_PREFIX "localhost/"
/* kubelet's limit on a Localhost profile name (PATH_MAX - 1). */
#define APPARMOR_PROFILE_NAME_MAX 4095

typedef struct Sysctl {
        char *name;
        char *value;
} Sysctl;

/* Container securityContext; an unset field inherits the pod's. */
typedef struct SecurityContext {
        Capabilities *capabilities;
        OptionalBool privileged;
        OptionalInt run_as_user;
        OptionalInt run_as_group;
        OptionalBool run_as_non_root;
        OptionalBool read_only_root_filesystem;
        OptionalBool allow_privilege_escalation;
        ProcMountType proc_mount; /* _INVALID when unset (= Default) */
        SeccompProfile *seccomp_profile;
        AppArmorProfile *apparmor_profile;
} SecurityContext;

typedef struct PodSecurityContext {
        OptionalInt run_as_user;
        OptionalInt run_as_group;
        OptionalBool run_as_non_root;
        int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        OptionalInt fs_group;
        Sysctl *sysctls;
        size_t n_sysctls;
        SeccompProfile *seccomp_profile;
        AppArmorProfile *apparmor_profile;
} PodSecurityContext;

/* ---- containers ---- */

/* restart_policy is set only on sidecar init containers (Always). */
typedef struct Container {
        char *name;
        char *image;
        PullPolicy image_pull_policy;
        char **command; /* strv; NULL = image Entrypoint */
        char **args;    /* strv; NULL = image Cmd */
        char *working_dir;
        ContainerPort *ports;
        size_t n_ports;
        EnvFromSource *env_from;
        size_t n_env_from;
        EnvVar *env;
        size_t n_env;
        ResourceRequirements resources;
        RestartPolicy restart_policy;
        VolumeMount *volume_mounts;
        size_t n_volume_mounts;
        Probe *liveness_probe;
        Probe *readiness_probe;
        Probe *startup_probe;
        Lifecycle *lifecycle;
        char *termination_message_path;
        TerminationMessagePolicy termination_message_policy;
        SecurityContext *security_context;
        bool stdin_open; /* "stdin" (a macro name in <stdio.h>) */
        bool stdin_once;
        bool tty;
} Container;

/* ---- volumes ---- */

typedef struct KeyToPath {
        char *key;
        char *path;
        OptionalInt mode;
} KeyToPath;

typedef struct HostPathVolumeSource {
        char *path;
        HostPathType type;
} HostPathVolumeSource;

typedef struct EmptyDirVolumeSource {
        StorageMedium medium;
        OptionalQuantity size_limit;
} EmptyDirVolumeSource;

/* configMap (name) and secret (secretName) volumes, and their projections. */
typedef struct ConfigMapVolumeSource {
        char *name;
        KeyToPath *items;
        size_t n_items;
        OptionalInt default_mode; /* defaulted to 0644 */
        bool optional;
} ConfigMapVolumeSource;
typedef ConfigMapVolumeSource SecretVolumeSource;

typedef struct DownwardAPIVolumeFile {
        char *path;
        ObjectFieldSelector *field_ref;
        ResourceFieldSelector *resource_field_ref;
        OptionalInt mode;
} DownwardAPIVolumeFile;

typedef struct DownwardAPIVolumeSource {
        DownwardAPIVolumeFile *items;
        size_t n_items;
        OptionalInt default_mode; /* defaulted to 0644 */
} DownwardAPIVolumeSource;

/* One projected source; exactly one member is non-NULL. default_mode of
 * the nested sources is unused (the projection's applies). */
typedef struct VolumeProjection {
        ConfigMapVolumeSource *config_map;
        SecretVolumeSource *secret;
        DownwardAPIVolumeSource *downward_api;
} VolumeProjection;

typedef struct ProjectedVolumeSource {
        VolumeProjection *sources;
        size_t n_sources;
        OptionalInt default_mode; /* defaulted to 0644 */
} ProjectedVolumeSource;

/* image volume: an OCI image mounted read-only. */
typedef struct ImageVolumeSource {
        char *reference;
        PullPolicy pull_policy;
} ImageVolumeSource;

/* A volume: name plus exactly one source, selected by type. */
typedef struct Volume {
        char *name;
        VolumeType type;
        union {
                HostPathVolumeSource host_path;
                EmptyDirVolumeSource empty_dir;
                ConfigMapVolumeSource config_map;
                SecretVolumeSource secret; /* name holds secretName */
                DownwardAPIVolumeSource downward_api;
                ProjectedVolumeSource projected;
                ImageVolumeSource image;
        };
} Volume;

/* ---- pod ---- */

typedef struct HostAlias {
        char *ip;
        char **hostnames; /* strv */
} HostAlias;

/* dnsConfig option; value NULL = option without value ("ndots" vs "ndots:2"). */
typedef struct PodDNSConfigOption {
        char *name;
        char *value;
} PodDNSConfigOption;

typedef struct PodDNSConfig {
        char **nameservers; /* strv */
        char **searches;    /* strv */
        PodDNSConfigOption *options;
        size_t n_options;
} PodDNSConfig;

/* spec.os; name is _OS_NAME_INVALID when not given. */
typedef struct PodOS {
        OSName name;
} PodOS;

typedef struct PodSpec {
        Volume *volumes;
        size_t n_volumes;
        Container *init_containers;
        size_t n_init_containers;
        Container *containers;
        size_t n_containers;
        RestartPolicy restart_policy;
        OptionalInt termination_grace_period_seconds; /* defaulted to 30 */
        OptionalInt active_deadline_seconds;
        DNSPolicy dns_policy;
        StringMap node_selector;    /* ignored (warned about) */
        char *service_account_name; /* only "default" or unset */
        char *node_name;            /* ignored: the agent's node name applies */
        bool host_network;
        bool host_pid;
        bool host_ipc;
        bool share_process_namespace;
        /* false: a user namespace of the pod's own (docs/internals/runtime.md); unset
         * or true: the host's. */
        OptionalBool host_users;
        PodSecurityContext *security_context;
        char **image_pull_secrets; /* strv of local Secret names */
        char *hostname;
        char *subdomain;
        HostAlias *host_aliases;
        size_t n_host_aliases;
        char *priority_class_name;
        OptionalInt priority; /* defaulted for system-*-critical classes */
        PodDNSConfig *dns_config;
        OptionalBool enable_service_links; /* defaulted to true; no-op */
        PodOS os;
} PodSpec;

typedef struct Pod {
        ObjectMeta metadata;
        PodSpec spec;
} Pod;

/* data as written; binaryData base64-decoded (value_len counts). */
typedef struct ConfigMap {
        ObjectMeta metadata;
        StringMap data;
        StringMap binary_data;
        bool immutable;
} ConfigMap;

/* data is base64-decoded, with stringData merged over it. */
typedef struct Secret {
        ObjectMeta metadata;
        SecretType type;
        char *type_string; /* as written, or "Opaque" when absent */
        StringMap data;
        bool immutable;
} Secret;

/* ---- API ---- */

typedef struct PodDecodeOptions {
        const char *file;      /* for diagnostics; NULL = "<input>" */
        const char *node_name; /* static pod naming suffix; NULL = none */
} PodDecodeOptions;

/* decode + defaults + validate one Pod document (doc = whole object with
 * apiVersion/kind/metadata/spec/status); appends "-<node_name>" to
 * metadata.name when node_name is set (static pod naming); returns 0, or
 * -EINVAL with every problem in diag (warnings alone do not fail). */
int pod_decode(const YamlNode *doc, const PodDecodeOptions *o, Pod **ret, Diagnostics *diag);
int configmap_decode(const YamlNode *doc, const PodDecodeOptions *o, ConfigMap **ret,
                     Diagnostics *diag);
int secret_decode(const YamlNode *doc, const PodDecodeOptions *o, Secret **ret, Diagnostics *diag);

Pod *pod_free(Pod *p);
ConfigMap *configmap_free(ConfigMap *c);
Secret *secret_free(Secret *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Pod *, pod_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(ConfigMap *, configmap_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(Secret *, secret_free)
#define _cleanup_pod_free_ _cleanup_(pod_freep)
#define _cleanup_configmap_free_ _cleanup_(configmap_freep)
#define _cleanup_secret_free_ _cleanup_(secret_freep)

const char *pod_get_name(const Pod *p);
const char *pod_get_namespace(const Pod *p);
const char *pod_get_uid(const Pod *p); /* metadata.uid as given, or NULL */
int pod_set_uid(Pod *p, const char *uid);
int pod_set_annotation(Pod *p, const char *key, const char *value);

/* The largest CFS quota the kernel accepts (MAX_BW in kernel/sched/core.c,
 * 2^44-1 µs), and the largest CPU amount that quota expresses with the
 * 100 ms period kubelet uses: validation refuses more, the quota saturates. */
#define POD_CPU_QUOTA_MAX_USEC ((INT64_C(1) << 44) - 1)
#define POD_CPU_MAX_MILLI (POD_CPU_QUOTA_MAX_USEC / 100)

/* A container's runtime ID is "<pod uid>-<container name>-<restart count>"
 * (the count a 32-bit unsigned); validation refuses a uid and a name that
 * would not fit in the runtime's limit (RUNTIME_ID_MAX, checked equal where
 * both are known). */
#define POD_RUNTIME_ID_MAX 128
#define POD_RUNTIME_ID_COUNT_DIGITS 10

/* Start ordering between static pods (docs/manifests.md, "Start ordering"). */
#define POD_WAIT_FOR_ANNOTATION "nanolet.io/wait-for"
/* The pods p waits for, as "namespace/name" (name without the node suffix,
 * namespace defaulted to p's own), from a validated annotation. *ret is
 * NULL when p waits for nothing. */
int pod_wait_for_targets(const Pod *p, char ***ret);
const char *configmap_get_name(const ConfigMap *c);
const char *configmap_get_namespace(const ConfigMap *c);
const char *secret_get_name(const Secret *s);
const char *secret_get_namespace(const Secret *s);

/* Lookups used by the runtime and probes. */
const Container *pod_find_container(const Pod *p, const char *name);
const Volume *pod_find_volume(const Pod *p, const char *name);
/* A named container port ("http") of c, or -ENOENT. */
int container_find_port(const Container *c, const char *name);
/* True for init containers with restartPolicy Always. */
bool container_is_sidecar(const Container *c);

/* kubelet's apparmor.GetProfile(): the container's appArmorProfile, else
 * its annotation (APPARMOR_ANNOTATION_PREFIX<name>; a value of none of the
 * three forms counts as absent), else the pod's appArmorProfile. Fills
 * *ret with pointers into p and returns true; false when none applies
 * (the runtime's default). */
bool pod_container_apparmor(const Pod *p, const Container *c, AppArmorProfile *ret);
/* Parses an annotation value; false when it is none of the three forms. */
bool apparmor_annotation_parse(const char *value, AppArmorProfile *ret);
