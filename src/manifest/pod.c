/* The Pod model's lifecycle: enum spellings, ordered maps, accessors, and
 * pod_decode(), which runs decode -> defaults -> validation so that every
 * caller gets a pod that Kubernetes would also have accepted. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"
#include "string-util.h"
#include "strv.h"

#define DEFINE_ENUM_TABLE(name, type, max, ...)                                                    \
        static const char *const name##_table[max] = { __VA_ARGS__ };                              \
        const EnumInfo name##_info = { name##_table, max };                                        \
        const char *name##_to_string(type v) {                                                     \
                return (int)v >= 0 && (int)v < (max) ? name##_table[v] : NULL;                     \
        }                                                                                          \
        type name##_from_string(const char *s) {                                                   \
                for (int i = 0; s && i < (max); i++)                                               \
                        if (name##_table[i] && streq(name##_table[i], s))                          \
                                return (type)i;                                                    \
                return (type)-EINVAL;                                                              \
        }

DEFINE_ENUM_TABLE(restart_policy, RestartPolicy,
                  _RESTART_POLICY_MAX, [RESTART_POLICY_ALWAYS] = "Always",
                  [RESTART_POLICY_ON_FAILURE] = "OnFailure", [RESTART_POLICY_NEVER] = "Never")
DEFINE_ENUM_TABLE(pull_policy, PullPolicy, _PULL_POLICY_MAX, [PULL_POLICY_ALWAYS] = "Always",
                  [PULL_POLICY_IF_NOT_PRESENT] = "IfNotPresent", [PULL_POLICY_NEVER] = "Never")
DEFINE_ENUM_TABLE(
        protocol, Protocol,
        _PROTOCOL_MAX, [PROTOCOL_TCP] = "TCP", [PROTOCOL_UDP] = "UDP", [PROTOCOL_SCTP] = "SCTP")
DEFINE_ENUM_TABLE(dns_policy, DNSPolicy,
                  _DNS_POLICY_MAX, [DNS_POLICY_CLUSTER_FIRST] = "ClusterFirst",
                  [DNS_POLICY_CLUSTER_FIRST_WITH_HOST_NET] = "ClusterFirstWithHostNet",
                  [DNS_POLICY_DEFAULT] = "Default", [DNS_POLICY_NONE] = "None")
DEFINE_ENUM_TABLE(host_path_type, HostPathType, _HOST_PATH_TYPE_MAX, [HOST_PATH_UNSET] = "",
                  [HOST_PATH_DIRECTORY_OR_CREATE] = "DirectoryOrCreate",
                  [HOST_PATH_DIRECTORY] = "Directory", [HOST_PATH_FILE_OR_CREATE] = "FileOrCreate",
                  [HOST_PATH_FILE] = "File", [HOST_PATH_SOCKET] = "Socket",
                  [HOST_PATH_CHAR_DEVICE] = "CharDevice", [HOST_PATH_BLOCK_DEVICE] = "BlockDevice")
DEFINE_ENUM_TABLE(mount_propagation, MountPropagation,
                  _MOUNT_PROPAGATION_MAX, [MOUNT_PROPAGATION_NONE] = "None",
                  [MOUNT_PROPAGATION_HOST_TO_CONTAINER] = "HostToContainer",
                  [MOUNT_PROPAGATION_BIDIRECTIONAL] = "Bidirectional")
DEFINE_ENUM_TABLE(termination_message_policy, TerminationMessagePolicy,
                  _TERMINATION_MESSAGE_POLICY_MAX, [TERMINATION_MESSAGE_FILE] = "File",
                  [TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR] = "FallbackToLogsOnError")
DEFINE_ENUM_TABLE(
        seccomp_profile_type, SeccompProfileType,
        _SECCOMP_PROFILE_TYPE_MAX, [SECCOMP_PROFILE_RUNTIME_DEFAULT] = "RuntimeDefault",
        [SECCOMP_PROFILE_UNCONFINED] = "Unconfined", [SECCOMP_PROFILE_LOCALHOST] = "Localhost")
DEFINE_ENUM_TABLE(
        apparmor_profile_type, AppArmorProfileType,
        _APPARMOR_PROFILE_TYPE_MAX, [APPARMOR_PROFILE_RUNTIME_DEFAULT] = "RuntimeDefault",
        [APPARMOR_PROFILE_UNCONFINED] = "Unconfined", [APPARMOR_PROFILE_LOCALHOST] = "Localhost")
DEFINE_ENUM_TABLE(uri_scheme, URIScheme,
                  _URI_SCHEME_MAX, [URI_SCHEME_HTTP] = "HTTP", [URI_SCHEME_HTTPS] = "HTTPS")
DEFINE_ENUM_TABLE(storage_medium, StorageMedium, _STORAGE_MEDIUM_MAX, [STORAGE_MEDIUM_DEFAULT] = "",
                  [STORAGE_MEDIUM_MEMORY] = "Memory", [STORAGE_MEDIUM_HUGEPAGES] = "HugePages")
DEFINE_ENUM_TABLE(os_name, OSName,
                  _OS_NAME_MAX, [OS_NAME_LINUX] = "linux", [OS_NAME_WINDOWS] = "windows")
DEFINE_ENUM_TABLE(
        proc_mount_type, ProcMountType,
        _PROC_MOUNT_TYPE_MAX, [PROC_MOUNT_DEFAULT] = "Default", [PROC_MOUNT_UNMASKED] = "Unmasked")
DEFINE_ENUM_TABLE(
        secret_type, SecretType, _SECRET_TYPE_MAX, [SECRET_TYPE_OPAQUE] = "Opaque",
        [SECRET_TYPE_SERVICE_ACCOUNT_TOKEN] = "kubernetes.io/service-account-token",
        [SECRET_TYPE_DOCKERCFG] = "kubernetes.io/dockercfg",
        [SECRET_TYPE_DOCKER_CONFIG_JSON] = "kubernetes.io/dockerconfigjson",
        [SECRET_TYPE_BASIC_AUTH] = "kubernetes.io/basic-auth",
        [SECRET_TYPE_SSH_AUTH] = "kubernetes.io/ssh-auth", [SECRET_TYPE_TLS] = "kubernetes.io/tls",
        [SECRET_TYPE_BOOTSTRAP_TOKEN] = "bootstrap.kubernetes.io/token")
DEFINE_ENUM_TABLE(volume_type, VolumeType, _VOLUME_TYPE_MAX, [VOLUME_HOST_PATH] = "hostPath",
                  [VOLUME_EMPTY_DIR] = "emptyDir", [VOLUME_CONFIG_MAP] = "configMap",
                  [VOLUME_SECRET] = "secret", [VOLUME_DOWNWARD_API] = "downwardAPI",
                  [VOLUME_PROJECTED] = "projected", [VOLUME_IMAGE] = "image")

/* ---- ordered maps ---- */

const KeyValue *string_map_get(const StringMap *m, const char *key) {
        for (size_t i = 0; i < m->n; i++)
                if (streq(m->items[i].key, key))
                        return &m->items[i];
        return NULL;
}

int string_map_set(StringMap *m, const char *key, const char *value, size_t value_len) {
        _cleanup_free_ char *v = malloc(value_len + 1);
        if (!v)
                return -ENOMEM;
        memcpy(v, value, value_len);
        v[value_len] = 0;

        KeyValue *kv = (KeyValue *)string_map_get(m, key);
        if (kv) {
                free(kv->value);
                kv->value = TAKE_PTR(v);
                kv->value_len = value_len;
                return 0;
        }
        _cleanup_free_ char *k = strdup(key);
        if (!k)
                return -ENOMEM;
        KeyValue *a = reallocarray(m->items, m->n + 1, sizeof(KeyValue));
        if (!a)
                return -ENOMEM;
        m->items = a;
        m->items[m->n++] = (KeyValue){ TAKE_PTR(k), TAKE_PTR(v), value_len };
        return 0;
}

void string_map_done(StringMap *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->items[i].key);
                free(m->items[i].value);
        }
        m->items = mfree(m->items);
        m->n = 0;
}

/* ---- objects ---- */

Pod *pod_free(Pod *p) {
        if (!p)
                return NULL;
        struct_done(&pod_type, p);
        free(p);
        return NULL;
}

ConfigMap *configmap_free(ConfigMap *c) {
        if (!c)
                return NULL;
        struct_done(&object_meta_type, &c->metadata);
        string_map_done(&c->data);
        string_map_done(&c->binary_data);
        free(c);
        return NULL;
}

Secret *secret_free(Secret *s) {
        if (!s)
                return NULL;
        struct_done(&object_meta_type, &s->metadata);
        string_map_done(&s->data);
        free(s->type_string);
        free(s);
        return NULL;
}

const char *pod_get_name(const Pod *p) {
        return p->metadata.name;
}

const char *pod_get_namespace(const Pod *p) {
        return p->metadata.namespace;
}

const char *pod_get_uid(const Pod *p) {
        return p->metadata.uid;
}

int pod_set_uid(Pod *p, const char *uid) {
        char *s = strdup(uid);
        if (!s)
                return -ENOMEM;
        free(p->metadata.uid);
        p->metadata.uid = s;
        return 0;
}

int pod_set_annotation(Pod *p, const char *key, const char *value) {
        return string_map_set(&p->metadata.annotations, key, value, strlen(value));
}

int pod_wait_for_targets(const Pod *p, char ***ret) {
        const KeyValue *kv = string_map_get(&p->metadata.annotations, POD_WAIT_FOR_ANNOTATION);
        _cleanup_strv_free_ char **l = NULL;

        *ret = NULL;
        if (!kv)
                return 0;
        _cleanup_free_ char *copy = strdup(kv->value);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                while (*e == ' ')
                        e++;
                size_t n = strlen(e);
                while (n > 0 && e[n - 1] == ' ')
                        e[--n] = 0;
                if (n == 0)
                        continue;
                char *t = strchr(e, '/') ? strdup(e) : strprintf("%s/%s", p->metadata.namespace, e);
                if (!t || strv_consume(&l, t) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

const char *configmap_get_name(const ConfigMap *c) {
        return c->metadata.name;
}

const char *configmap_get_namespace(const ConfigMap *c) {
        return c->metadata.namespace;
}

const char *secret_get_name(const Secret *s) {
        return s->metadata.name;
}

const char *secret_get_namespace(const Secret *s) {
        return s->metadata.namespace;
}

const Container *pod_find_container(const Pod *p, const char *name) {
        for (size_t i = 0; i < p->spec.n_init_containers; i++)
                if (p->spec.init_containers[i].name && streq(p->spec.init_containers[i].name, name))
                        return &p->spec.init_containers[i];
        for (size_t i = 0; i < p->spec.n_containers; i++)
                if (p->spec.containers[i].name && streq(p->spec.containers[i].name, name))
                        return &p->spec.containers[i];
        return NULL;
}

const Volume *pod_find_volume(const Pod *p, const char *name) {
        for (size_t i = 0; i < p->spec.n_volumes; i++)
                if (p->spec.volumes[i].name && streq(p->spec.volumes[i].name, name))
                        return &p->spec.volumes[i];
        return NULL;
}

int container_find_port(const Container *c, const char *name) {
        for (size_t i = 0; i < c->n_ports; i++)
                if (c->ports[i].name && streq(c->ports[i].name, name))
                        return (int)c->ports[i].container_port;
        return -ENOENT;
}

bool container_is_sidecar(const Container *c) {
        return c->restart_policy == RESTART_POLICY_ALWAYS;
}

int pod_decode(const YamlNode *doc, const PodDecodeOptions *o, Pod **ret, Diagnostics *diag) {
        assert(doc);
        DecodeContext c = { .file = o ? o->file : NULL, .diag = diag };
        _cleanup_strv_free_ char **error_paths = NULL;
        _cleanup_pod_free_ Pod *p = NULL;
        _cleanup_free_ char *unsuffixed = NULL;
        size_t errors = diag->n_errors;
        int r;

        p = calloc(1, sizeof(Pod));
        if (!p)
                return -ENOMEM;
        struct_init(&pod_type, p);

        r = struct_decode(&c, doc, "", &pod_type, p);
        error_paths = c.error_paths;
        if (r < 0)
                return r;

        unsuffixed = strdup(strempty(p->metadata.name));
        if (!unsuffixed)
                return -ENOMEM;
        /* An empty name stays empty, so validation reports the missing name
         * rather than an odd "-node". */
        if (o && o->node_name && !isempty(p->metadata.name)) {
                char *s = strprintf("%s-%s", p->metadata.name, o->node_name);
                if (!s)
                        return -ENOMEM;
                free(p->metadata.name);
                p->metadata.name = s;
        }

        r = pod_set_defaults(p);
        if (r < 0)
                return r;

        (void)pod_validate(p, unsuffixed, doc, c.file, error_paths, diag);
        if (diag->n_errors > errors)
                return -EINVAL;

        *ret = TAKE_PTR(p);
        return 0;
}

bool apparmor_annotation_parse(const char *value, AppArmorProfile *ret) {
        const char *name;

        assert(ret);
        if (!value)
                return false;
        if (streq(value, APPARMOR_ANNOTATION_RUNTIME_DEFAULT))
                *ret = (AppArmorProfile){ .type = APPARMOR_PROFILE_RUNTIME_DEFAULT };
        else if (streq(value, APPARMOR_ANNOTATION_UNCONFINED))
                *ret = (AppArmorProfile){ .type = APPARMOR_PROFILE_UNCONFINED };
        else if ((name = startswith(value, APPARMOR_ANNOTATION_LOCALHOST_PREFIX)))
                *ret = (AppArmorProfile){ .type = APPARMOR_PROFILE_LOCALHOST,
                                          .localhost_profile = (char *)name };
        else
                return false;
        return true;
}

bool pod_container_apparmor(const Pod *p, const Container *c, AppArmorProfile *ret) {
        assert(p);
        assert(c);
        assert(ret);

        if (c->security_context && c->security_context->apparmor_profile) {
                *ret = *c->security_context->apparmor_profile;
                return true;
        }
        /* Static pods never had their annotations turned into fields by an
         * apiserver, so the annotation comes before the pod's field. */
        if (c->name) {
                _cleanup_free_ char *key = strprintf(APPARMOR_ANNOTATION_PREFIX "%s", c->name);
                const KeyValue *kv = key ? string_map_get(&p->metadata.annotations, key) : NULL;
                if (kv && apparmor_annotation_parse(kv->value, ret))
                        return true;
        }
        if (p->spec.security_context && p->spec.security_context->apparmor_profile) {
                *ret = *p->spec.security_context->apparmor_profile;
                return true;
        }
        return false;
}
