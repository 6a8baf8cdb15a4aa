/* Kubernetes' ValidatePod rules for what nanolet honours, plus nanolet's
 * own (no apiserver references, safe UIDs, wait-for syntax). Every
 * problem is reported, not just the first, each located at the line of the
 * offending node, found by resolving the field path in the document (or the
 * nearest parent present, for a missing field). */
#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "expansion.h"
#include "pod-internal.h"
#include "string-util.h"
#include "strv.h"

#define PATH_BUF 1024
#define ANNOTATIONS_MAX_SIZE (256 * 1024)
#define WAIT_FOR_ANNOTATION POD_WAIT_FOR_ANNOTATION

typedef struct Validator {
        const YamlNode *doc;
        const char *file;
        char *const *skip;
        Diagnostics *diag;
        size_t n_errors;
        const Pod *pod;
} Validator;

/* ---- locating ---- */

const YamlNode *yaml_resolve_path(const YamlNode *doc, const char *path) {
        const YamlNode *cur = doc;
        const char *s = path;

        while (cur && s && *s) {
                if (*s == '.') {
                        s++;
                        continue;
                }
                if (*s == '[' && cur->type == YAML_NODE_MAP) {
                        /* a map key, "[a.b/c]": up to the ']' that ends
                         * the path or comes before '.' or '[' */
                        const char *end = s + 1;
                        while ((end = strchr(end, ']')) && end[1] && end[1] != '.' && end[1] != '[')
                                end++;
                        if (!end || (size_t)(end - s - 1) >= 256)
                                return cur;
                        char key[256];
                        memcpy(key, s + 1, (size_t)(end - s - 1));
                        key[end - s - 1] = 0;
                        const YamlNode *child = yaml_map_get(cur, key);
                        if (!child)
                                return cur;
                        cur = child;
                        s = end + 1;
                        continue;
                }
                if (*s == '[') {
                        char *end;
                        unsigned long i = strtoul(s + 1, &end, 10);
                        if (*end != ']' || cur->type != YAML_NODE_SEQ || i >= cur->n)
                                return cur;
                        cur = cur->items[i];
                        s = end + 1;
                        continue;
                }
                size_t l = strcspn(s, ".[");
                char key[256];
                if (l >= sizeof(key))
                        return cur;
                memcpy(key, s, l);
                key[l] = 0;
                const YamlNode *child = yaml_map_get(cur, key);
                if (!child)
                        return cur;
                cur = child;
                s += l;
        }
        return cur;
}

static const YamlNode *map_key_node(const YamlNode *map, const char *key) {
        for (size_t i = 0; map && map->type == YAML_NODE_MAP && i < map->n; i++)
                if (streq(map->pairs[i].key->str, key))
                        return map->pairs[i].key;
        return map;
}

_printf_(5, 0) static void vadd(Validator *v, DiagLevel level, const YamlNode *n, const char *path,
                                const char *fmt, va_list ap) {
        if (level == DIAG_ERROR && strv_contains(v->skip, path))
                return; /* decoding already said what is wrong here */
        _cleanup_free_ char *m = strvprintf(fmt, ap);
        if (!n)
                n = yaml_resolve_path(v->doc, path);
        diagnostics_add(v->diag, level, v->file, n ? n->line : 0, n ? n->column : 0, path, "%s",
                        m ?: "out of memory");
        if (level == DIAG_ERROR)
                v->n_errors++;
}

_printf_(3, 4) static void verr(Validator *v, const char *path, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vadd(v, DIAG_ERROR, NULL, path, fmt, ap);
        va_end(ap);
}

_printf_(4, 5) static void verr_at(Validator *v, const YamlNode *n, const char *path,
                                   const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vadd(v, DIAG_ERROR, n, path, fmt, ap);
        va_end(ap);
}

_printf_(3, 4) static void vwarn(Validator *v, const char *path, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        vadd(v, DIAG_WARNING, NULL, path, fmt, ap);
        va_end(ap);
}

/* Builds "prefix" + formatted suffix into buf. */
_printf_(3, 4) static const char *P(char *buf, const char *prefix, const char *fmt, ...) {
        size_t l = (size_t)snprintf(buf, PATH_BUF, "%s", prefix);
        if (l >= PATH_BUF)
                return buf;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf + l, PATH_BUF - l, fmt, ap);
        va_end(ap);
        return buf;
}

/* ---- syntaxes ---- */

static bool is_alnum_lower(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool is_dns1123_label(const char *s) {
        size_t l = strlen(s);
        if (l == 0 || l > 63 || !is_alnum_lower(s[0]) || !is_alnum_lower(s[l - 1]))
                return false;
        for (size_t i = 0; i < l; i++)
                if (!is_alnum_lower(s[i]) && s[i] != '-')
                        return false;
        return true;
}

/* As Kubernetes' IsDNS1123Subdomain: the regex and 253 characters in
 * total, without RFC 1123's 63-character limit per label. */
bool is_dns1123_subdomain(const char *s) {
        size_t l = strlen(s);
        if (l == 0 || l > 253)
                return false;
        for (size_t i = 0; i < l; i++) {
                bool edge = i == 0 || i == l - 1 || s[i - 1] == '.' || s[i + 1] == '.';
                if (is_alnum_lower(s[i]))
                        continue;
                if ((s[i] == '-' || s[i] == '.') && !edge)
                        continue;
                return false;
        }
        return true;
}

/* Volume files are written next to the "..data" symlink and the "..<time>"
 * directories it points to (AtomicWriter), which these would collide with. */
const char *config_key_dot_problem(const char *s) {
        if (streq(s, "."))
                return "must not be '.'";
        if (streq(s, ".."))
                return "must not be '..'";
        if (startswith(s, ".."))
                return "must not start with '..'";
        return NULL;
}

bool is_config_key(const char *s) {
        size_t l = strlen(s);
        if (l == 0 || l > 253 || config_key_dot_problem(s))
                return false;
        for (size_t i = 0; i < l; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
                        return false;
        return true;
}

/* Kubernetes' "qualified name" name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, <= 63. */
static bool is_qualified_name_part(const char *s, size_t l) {
        if (l == 0 || l > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[l - 1]))
                return false;
        for (size_t i = 0; i < l; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
                        return false;
        return true;
}

static bool is_qualified_name(const char *s) {
        const char *slash = strchr(s, '/');
        if (!slash)
                return is_qualified_name_part(s, strlen(s));
        _cleanup_free_ char *prefix = strndup(s, (size_t)(slash - s));
        return prefix && is_dns1123_subdomain(prefix) &&
               is_qualified_name_part(slash + 1, strlen(slash + 1));
}

static bool is_label_value(const char *s) {
        return !*s || is_qualified_name_part(s, strlen(s));
}

/* IANA_SVC_NAME: <= 15 lowercase alphanumerics or '-', at least one letter,
 * no leading/trailing or double '-'. */
static bool is_port_name(const char *s) {
        size_t l = strlen(s);
        bool letter = false;
        if (l == 0 || l > 15 || s[0] == '-' || s[l - 1] == '-' || strstr(s, "--"))
                return false;
        for (size_t i = 0; i < l; i++) {
                if (!is_alnum_lower(s[i]) && s[i] != '-')
                        return false;
                letter = letter || (s[i] >= 'a' && s[i] <= 'z');
        }
        return letter;
}

/* Kubernetes (since 1.30, RelaxedEnvironmentVariableValidation): printable
 * ASCII other than '='. */
static bool is_env_name(const char *s) {
        if (!*s)
                return false;
        for (; *s; s++)
                if (*s < 32 || *s > 126 || *s == '=')
                        return false;
        return true;
}

static bool is_ip(const char *s) {
        unsigned char buf[16];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static bool has_dotdot(const char *p) {
        for (const char *s = p; s; s = strchr(s, '/')) {
                if (*s == '/')
                        s++;
                if (strneq(s, "..", 2) && (s[2] == 0 || s[2] == '/'))
                        return true;
        }
        return false;
}

static void check_relative_path(Validator *v, const char *path, const char *value) {
        if (value[0] == '/')
                verr(v, path, "must be a relative path");
        if (has_dotdot(value))
                verr(v, path, "must not contain '..'");
}

/* validateLocalNonReservedPath: a volume item's path */
static void check_volume_item_path(Validator *v, const char *path, const char *value) {
        check_relative_path(v, path, value);
        if (startswith(value, "..") && !startswith(value, "../"))
                verr(v, path, "invalid value \"%s\": must not start with '..'", value);
}

static bool is_sysctl_name(const char *s) {
        size_t l = strlen(s);
        if (l == 0 || l > 253)
                return false;
        for (const char *p = s;;) {
                size_t n = strcspn(p, "./");
                if (n == 0 || !is_alnum_lower(p[0]) || !is_alnum_lower(p[n - 1]))
                        return false;
                for (size_t i = 0; i < n; i++)
                        if (!is_alnum_lower(p[i]) && p[i] != '-' && p[i] != '_')
                                return false;
                if (!p[n])
                        return true;
                p += n + 1;
        }
}

static const char *const capabilities[] = {
        "CHOWN",
        "DAC_OVERRIDE",
        "DAC_READ_SEARCH",
        "FOWNER",
        "FSETID",
        "KILL",
        "SETGID",
        "SETUID",
        "SETPCAP",
        "LINUX_IMMUTABLE",
        "NET_BIND_SERVICE",
        "NET_BROADCAST",
        "NET_ADMIN",
        "NET_RAW",
        "IPC_LOCK",
        "IPC_OWNER",
        "SYS_MODULE",
        "SYS_RAWIO",
        "SYS_CHROOT",
        "SYS_PTRACE",
        "SYS_PACCT",
        "SYS_ADMIN",
        "SYS_BOOT",
        "SYS_NICE",
        "SYS_RESOURCE",
        "SYS_TIME",
        "SYS_TTY_CONFIG",
        "MKNOD",
        "LEASE",
        "AUDIT_WRITE",
        "AUDIT_CONTROL",
        "SETFCAP",
        "MAC_OVERRIDE",
        "MAC_ADMIN",
        "SYSLOG",
        "WAKE_ALARM",
        "BLOCK_SUSPEND",
        "AUDIT_READ",
        "PERFMON",
        "BPF",
        "CHECKPOINT_RESTORE",
        "ALL",
};

/* As containerd does: case-insensitive, with or without "CAP_". */
static bool is_capability(const char *s) {
        if (strncasecmp(s, "CAP_", 4) == 0)
                s += 4;
        for (size_t i = 0; i < ELEMENTSOF(capabilities); i++)
                if (strcasecmp(s, capabilities[i]) == 0)
                        return true;
        return false;
}

/* ---- metadata ---- */

static void validate_string_map_keys(Validator *v, const char *path, const StringMap *m,
                                     bool labels) {
        const YamlNode *map = yaml_resolve_path(v->doc, path);
        for (size_t i = 0; i < m->n; i++) {
                const KeyValue *kv = &m->items[i];
                const YamlNode *kn = map_key_node(map, kv->key);
                if (!is_qualified_name(kv->key))
                        verr_at(v, kn, path,
                                "invalid key \"%s\": must be a qualified name ([prefix/]name: "
                                "alphanumerics, '-', '_' or '.', at most 63 characters, the "
                                "optional prefix a DNS subdomain)",
                                kv->key);
                if (labels && !is_label_value(kv->value))
                        verr_at(v, kn, path,
                                "invalid value \"%s\" for label \"%s\": must be at most 63 "
                                "alphanumerics, '-', '_' or '.', starting and ending with an "
                                "alphanumeric",
                                kv->value, kv->key);
        }
}

static void validate_wait_for(Validator *v, const char *value) {
        const char *path = "metadata.annotations";
        const YamlNode *n = map_key_node(yaml_resolve_path(v->doc, path), WAIT_FOR_ANNOTATION);
        _cleanup_free_ char *copy = strdup(value);
        if (!copy)
                return;
        char *save = NULL;
        size_t count = 0;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                while (*e == ' ')
                        e++;
                size_t l = strlen(e);
                while (l > 0 && e[l - 1] == ' ')
                        e[--l] = 0;
                count++;
                char *slash = strchr(e, '/');
                bool ok =
                        slash ? (*slash = 0, is_dns1123_label(e) && is_dns1123_subdomain(slash + 1))
                              : is_dns1123_subdomain(e);
                if (!ok) {
                        if (slash)
                                *slash = '/';
                        verr_at(v, n, path,
                                "invalid " WAIT_FOR_ANNOTATION
                                " entry \"%s\": must be a pod name or "
                                "namespace/name, comma-separated",
                                e);
                }
        }
        if (count == 0 || strstr(value, ",,") || value[strlen(value) - 1] == ',')
                verr_at(v, n, path, WAIT_FOR_ANNOTATION " has an empty entry");
}

static void validate_metadata(Validator *v, const ObjectMeta *m, const char *unsuffixed) {
        if (isempty(unsuffixed))
                verr(v, "metadata.name", "name is required");
        else if (!is_dns1123_subdomain(m->name))
                verr(v, "metadata.name",
                     "invalid value \"%s\": must be a lowercase RFC 1123 subdomain (lowercase "
                     "alphanumerics, '-' or '.', starting and ending with an alphanumeric, at "
                     "most 253 characters including the node name suffix)",
                     m->name);
        if (!is_dns1123_label(m->namespace))
                verr(v, "metadata.namespace",
                     "invalid value \"%s\": must be a lowercase RFC 1123 label (at most 63 "
                     "lowercase alphanumerics or '-')",
                     m->namespace);
        if (m->uid) {
                size_t l = strlen(m->uid);
                bool ok = l >= 1 && l <= 64;
                for (size_t i = 0; ok && i < l; i++)
                        ok = is_alnum_lower(m->uid[i]) || m->uid[i] == '-';
                if (!ok)
                        verr(v, "metadata.uid",
                             "invalid value \"%s\": must be 1 to 64 lowercase alphanumerics or "
                             "'-' (nanolet uses it in paths)",
                             m->uid);
        }
        validate_string_map_keys(v, "metadata.labels", &m->labels, true);
        validate_string_map_keys(v, "metadata.annotations", &m->annotations, false);
        size_t total = 0;
        for (size_t i = 0; i < m->annotations.n; i++)
                total += strlen(m->annotations.items[i].key) + m->annotations.items[i].value_len;
        if (total > ANNOTATIONS_MAX_SIZE)
                verr(v, "metadata.annotations", "too long: must have at most %d bytes",
                     ANNOTATIONS_MAX_SIZE);
        const KeyValue *wf = string_map_get(&m->annotations, WAIT_FOR_ANNOTATION);
        if (wf)
                validate_wait_for(v, wf->value);
}

/* ---- shared pieces ---- */

static const char *const env_field_paths[] = {
        "metadata.name", "metadata.namespace",      "metadata.uid",
        "spec.nodeName", "spec.serviceAccountName", "status.podIP",
        "status.podIPs", "status.hostIP",           "status.hostIPs",
};
static const char *const volume_field_paths[] = {
        "metadata.name",   "metadata.namespace",   "metadata.uid",
        "metadata.labels", "metadata.annotations",
};

static void validate_field_ref(Validator *v, const char *path, const ObjectFieldSelector *f,
                               bool env) {
        char p[PATH_BUF];
        if (f->api_version && !streq(f->api_version, "v1"))
                verr(v, P(p, path, ".apiVersion"), "unsupported value \"%s\": only \"v1\"",
                     f->api_version);
        if (isempty(f->field_path)) {
                verr(v, P(p, path, ".fieldPath"), "fieldPath is required");
                return;
        }
        const char *const *l = env ? env_field_paths : volume_field_paths;
        size_t n = env ? ELEMENTSOF(env_field_paths) : ELEMENTSOF(volume_field_paths);
        for (size_t i = 0; i < n; i++)
                if (streq(f->field_path, l[i]))
                        return;
        /* metadata.labels['key'] / metadata.annotations['key'] */
        const char *rest = startswith(f->field_path, "metadata.labels['")
                                   ?: startswith(f->field_path, "metadata.annotations['");
        if (rest && endswith(rest, "']")) {
                _cleanup_free_ char *key = strndup(rest, strlen(rest) - 2);
                if (key && is_qualified_name(key))
                        return;
        }
        verr(v, P(p, path, ".fieldPath"),
             "unsupported value \"%s\": supported values: %s\"metadata.labels['<key>']\", "
             "\"metadata.annotations['<key>']\"%s",
             f->field_path,
             env ? "\"metadata.name\", \"metadata.namespace\", \"metadata.uid\", "
                   "\"spec.nodeName\", \"spec.serviceAccountName\", \"status.podIP\", "
                   "\"status.podIPs\", \"status.hostIP\", \"status.hostIPs\", "
                 : "\"metadata.name\", \"metadata.namespace\", \"metadata.uid\", "
                   "\"metadata.labels\", \"metadata.annotations\", ",
             env ? " (other fields need an apiserver)" : "");
}

static bool is_resource_field(const char *r) {
        const char *s = startswith(r, "limits.") ?: startswith(r, "requests.");
        return s && (streq(s, "cpu") || streq(s, "memory") || streq(s, "ephemeral-storage") ||
                     startswith(s, "hugepages-"));
}

static void validate_resource_field_ref(Validator *v, const char *path,
                                        const ResourceFieldSelector *r, bool need_container) {
        char p[PATH_BUF];
        if (isempty(r->resource))
                verr(v, P(p, path, ".resource"), "resource is required");
        else if (!is_resource_field(r->resource))
                verr(v, P(p, path, ".resource"),
                     "unsupported value \"%s\": must be limits.<resource> or requests.<resource> "
                     "of cpu, memory, ephemeral-storage or hugepages-<size>",
                     r->resource);
        if (isempty(r->container_name)) {
                if (need_container)
                        verr(v, P(p, path, ".containerName"), "containerName is required");
        } else if (!pod_find_container(v->pod, r->container_name))
                verr(v, P(p, path, ".containerName"), "container \"%s\" not found in this pod",
                     r->container_name);
        if (r->divisor.set && r->divisor.value.milli <= 0)
                verr(v, P(p, path, ".divisor"), "must be greater than 0");
}

static void validate_mode(Validator *v, const char *path, const OptionalInt *m) {
        if (m->set && (m->value < 0 || m->value > 0777))
                verr(v, path, "must be a number between 0 and 0777 (octal), both inclusive");
}

static void validate_key_to_paths(Validator *v, const char *path, const KeyToPath *items,
                                  size_t n) {
        char p[PATH_BUF];
        for (size_t i = 0; i < n; i++) {
                char ip[PATH_BUF];
                P(ip, path, ".items[%zu]", i);
                if (isempty(items[i].key))
                        verr(v, P(p, ip, ".key"), "key is required");
                else if (config_key_dot_problem(items[i].key))
                        verr(v, P(p, ip, ".key"), "invalid key \"%s\": %s", items[i].key,
                             config_key_dot_problem(items[i].key));
                else if (!is_config_key(items[i].key))
                        verr(v, P(p, ip, ".key"), "invalid key \"%s\"", items[i].key);
                if (isempty(items[i].path))
                        verr(v, P(p, ip, ".path"), "path is required");
                else
                        check_volume_item_path(v, P(p, ip, ".path"), items[i].path);
                validate_mode(v, P(p, ip, ".mode"), &items[i].mode);
        }
}

static void validate_config_source(Validator *v, const char *path, const ConfigMapVolumeSource *s,
                                   const char *name_field) {
        char p[PATH_BUF];
        if (isempty(s->name))
                verr(v, P(p, path, ".%s", name_field), "%s is required", name_field);
        else if (!is_dns1123_subdomain(s->name))
                verr(v, P(p, path, ".%s", name_field), "invalid name \"%s\"", s->name);
        validate_key_to_paths(v, path, s->items, s->n_items);
        validate_mode(v, P(p, path, ".defaultMode"), &s->default_mode);
}

static void validate_downward_api(Validator *v, const char *path,
                                  const DownwardAPIVolumeSource *d) {
        char p[PATH_BUF], ip[PATH_BUF];
        for (size_t i = 0; i < d->n_items; i++) {
                const DownwardAPIVolumeFile *f = &d->items[i];
                P(ip, path, ".items[%zu]", i);
                if (isempty(f->path))
                        verr(v, P(p, ip, ".path"), "path is required");
                else
                        check_volume_item_path(v, P(p, ip, ".path"), f->path);
                if (!!f->field_ref + !!f->resource_field_ref != 1)
                        verr(v, ip, "must specify exactly one of fieldRef or resourceFieldRef");
                if (f->field_ref)
                        validate_field_ref(v, P(p, ip, ".fieldRef"), f->field_ref, false);
                if (f->resource_field_ref)
                        validate_resource_field_ref(v, P(p, ip, ".resourceFieldRef"),
                                                    f->resource_field_ref, true);
                validate_mode(v, P(p, ip, ".mode"), &f->mode);
        }
}

static void validate_seccomp(Validator *v, const char *path, const SeccompProfile *s) {
        char p[PATH_BUF];
        if (!s)
                return;
        if (s->type < 0)
                verr(v, P(p, path, ".type"), "type is required");
        if (s->type == SECCOMP_PROFILE_LOCALHOST) {
                if (isempty(s->localhost_profile))
                        verr(v, P(p, path, ".localhostProfile"),
                             "must be set when seccomp type is Localhost");
                else
                        check_relative_path(v, P(p, path, ".localhostProfile"),
                                            s->localhost_profile);
        } else if (s->type >= 0 && s->localhost_profile)
                verr(v, P(p, path, ".localhostProfile"),
                     "can only be set when seccomp type is Localhost");
}

static bool has_control_char(const char *s) {
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 || *s == 0x7f)
                        return true;
        return false;
}

/* kubelet's validateAppArmorProfileField, and no control characters: the
 * name goes into the kernel's profile list and the runtime's spec. */
static void validate_apparmor_name(Validator *v, const YamlNode *n, const char *path,
                                   const char *name) {
        size_t l = strlen(name);
        if (l > APPARMOR_PROFILE_NAME_MAX)
                verr_at(v, n, path, "too long: may not be more than %d bytes",
                        APPARMOR_PROFILE_NAME_MAX);
        else if (l > 0 && (isspace((unsigned char)name[0]) || isspace((unsigned char)name[l - 1])))
                verr_at(v, n, path, "invalid value \"%s\": must not be padded with whitespace",
                        name);
        else if (has_control_char(name))
                verr_at(v, n, path, "invalid value: must not contain control characters");
        else if (l == 0)
                verr_at(v, n, path, "must be set when AppArmor type is Localhost");
}

static void validate_apparmor(Validator *v, const char *path, const AppArmorProfile *a) {
        char p[PATH_BUF];
        if (!a)
                return;
        if (a->type < 0)
                verr(v, P(p, path, ".type"), "type is required when appArmorProfile is set");
        if (a->type == APPARMOR_PROFILE_LOCALHOST) {
                if (!a->localhost_profile)
                        verr(v, P(p, path, ".localhostProfile"),
                             "must be set when AppArmor type is Localhost");
                else
                        validate_apparmor_name(v, NULL, P(p, path, ".localhostProfile"),
                                               a->localhost_profile);
        } else if (a->type >= 0 && a->localhost_profile)
                verr(v, P(p, path, ".localhostProfile"),
                     "can only be set when AppArmor type is Localhost");
}

/* kubelet's ValidateAppArmorPodAnnotations: each annotation names a
 * container of the pod and has one of the three forms. */
static void validate_apparmor_annotations(Validator *v, const ObjectMeta *m) {
        const YamlNode *map = yaml_resolve_path(v->doc, "metadata.annotations");
        char p[PATH_BUF];

        for (size_t i = 0; i < m->annotations.n; i++) {
                const KeyValue *kv = &m->annotations.items[i];
                const char *container = startswith(kv->key, APPARMOR_ANNOTATION_PREFIX);
                AppArmorProfile a;
                if (!container)
                        continue;
                const YamlNode *n = map_key_node(map, kv->key);
                P(p, "metadata.annotations", "[%s]", kv->key);
                if (!pod_find_container(v->pod, container))
                        verr_at(v, n, p, "invalid value \"%s\": container not found", container);
                if (!apparmor_annotation_parse(kv->value, &a))
                        verr_at(v, n, p,
                                "invalid AppArmor profile name: \"%s\" (must be "
                                "\"" APPARMOR_ANNOTATION_RUNTIME_DEFAULT
                                "\", \"" APPARMOR_ANNOTATION_UNCONFINED
                                "\" or \"" APPARMOR_ANNOTATION_LOCALHOST_PREFIX "<profile>\")",
                                kv->value);
                else if (a.type == APPARMOR_PROFILE_LOCALHOST)
                        validate_apparmor_name(v, n, p, a.localhost_profile);
        }
}

/* kubelet's validateAppArmorAnnotationsAndFieldsMatchOnCreate: where a
 * container has both an annotation and a field (its own or the pod's),
 * they say the same. */
static void validate_apparmor_match(Validator *v, const char *path, const Container *c) {
        const PodSecurityContext *psc = v->pod->spec.security_context;
        const AppArmorProfile *f = psc ? psc->apparmor_profile : NULL;
        char p[PATH_BUF];
        AppArmorProfile a;

        if (c->security_context && c->security_context->apparmor_profile)
                f = c->security_context->apparmor_profile;
        if (!f || f->type < 0 || !c->name)
                return;
        _cleanup_free_ char *key = strprintf(APPARMOR_ANNOTATION_PREFIX "%s", c->name);
        const KeyValue *kv = key ? string_map_get(&v->pod->metadata.annotations, key) : NULL;
        if (!kv)
                return;
        if (!apparmor_annotation_parse(kv->value, &a) || a.type != f->type)
                verr(v, P(p, path, ".securityContext.appArmorProfile.type"),
                     "apparmor type in annotation and field must match");
        else if (a.type == APPARMOR_PROFILE_LOCALHOST &&
                 !streq_ptr(a.localhost_profile, f->localhost_profile))
                verr(v, P(p, path, ".securityContext.appArmorProfile.localhostProfile"),
                     "apparmor profile in annotation and field must match");
}

static void validate_nonnegative(Validator *v, const char *path, const OptionalInt *i) {
        if (i->set && i->value < 0)
                verr(v, path, "must be greater than or equal to 0");
}

/* ---- volumes ---- */

static void validate_volumes(Validator *v, const PodSpec *s) {
        char p[PATH_BUF], vp[PATH_BUF];
        for (size_t i = 0; i < s->n_volumes; i++) {
                const Volume *vol = &s->volumes[i];
                P(vp, "spec.volumes", "[%zu]", i);
                if (isempty(vol->name))
                        verr(v, P(p, vp, ".name"), "name is required");
                else if (!is_dns1123_label(vol->name))
                        verr(v, P(p, vp, ".name"),
                             "invalid value \"%s\": must be a lowercase RFC 1123 label", vol->name);
                else
                        for (size_t j = 0; j < i; j++)
                                if (s->volumes[j].name && streq(s->volumes[j].name, vol->name)) {
                                        verr(v, P(p, vp, ".name"), "duplicate value \"%s\"",
                                             vol->name);
                                        break;
                                }

                switch (vol->type) {
                case VOLUME_HOST_PATH:
                        P(vp, "spec.volumes", "[%zu].hostPath", i);
                        if (isempty(vol->host_path.path))
                                verr(v, P(p, vp, ".path"), "path is required");
                        else if (vol->host_path.path[0] != '/')
                                verr(v, P(p, vp, ".path"), "must be an absolute path");
                        else if (has_dotdot(vol->host_path.path))
                                verr(v, P(p, vp, ".path"), "must not contain '..'");
                        break;
                case VOLUME_EMPTY_DIR:
                        P(vp, "spec.volumes", "[%zu].emptyDir", i);
                        if (vol->empty_dir.size_limit.set &&
                            vol->empty_dir.size_limit.value.value < 0)
                                verr(v, P(p, vp, ".sizeLimit"),
                                     "must be greater than or equal to 0");
                        break;
                case VOLUME_CONFIG_MAP:
                        validate_config_source(v, P(vp, "spec.volumes", "[%zu].configMap", i),
                                               &vol->config_map, "name");
                        break;
                case VOLUME_SECRET:
                        validate_config_source(v, P(vp, "spec.volumes", "[%zu].secret", i),
                                               &vol->secret, "secretName");
                        break;
                case VOLUME_DOWNWARD_API:
                        P(vp, "spec.volumes", "[%zu].downwardAPI", i);
                        validate_downward_api(v, vp, &vol->downward_api);
                        validate_mode(v, P(p, vp, ".defaultMode"), &vol->downward_api.default_mode);
                        break;
                case VOLUME_PROJECTED:
                        P(vp, "spec.volumes", "[%zu].projected", i);
                        validate_mode(v, P(p, vp, ".defaultMode"), &vol->projected.default_mode);
                        for (size_t j = 0; j < vol->projected.n_sources; j++) {
                                const VolumeProjection *pr = &vol->projected.sources[j];
                                char sp[PATH_BUF];
                                P(sp, vp, ".sources[%zu]", j);
                                int n = !!pr->config_map + !!pr->secret + !!pr->downward_api;
                                if (n != 1 && !strv_contains(v->skip, sp))
                                        verr(v, sp,
                                             n == 0 ? "must specify a source type"
                                                    : "may not specify more than 1 source type");
                                if (pr->config_map)
                                        validate_config_source(v, P(p, sp, ".configMap"),
                                                               pr->config_map, "name");
                                if (pr->secret)
                                        validate_config_source(v, P(p, sp, ".secret"), pr->secret,
                                                               "name");
                                if (pr->downward_api)
                                        validate_downward_api(v, P(p, sp, ".downwardAPI"),
                                                              pr->downward_api);
                        }
                        break;
                case VOLUME_IMAGE:
                        P(vp, "spec.volumes", "[%zu].image", i);
                        if (isempty(vol->image.reference))
                                verr(v, P(p, vp, ".reference"), "reference is required");
                        break;
                case _VOLUME_TYPE_INVALID:
                case _VOLUME_TYPE_MAX:
                default:
                        verr(v, P(p, "spec.volumes", "[%zu]", i),
                             "must specify a volume type (hostPath, emptyDir, configMap, secret, "
                             "downwardAPI, projected or image)");
                }
        }
}

/* ---- containers ---- */

static void validate_port_ref(Validator *v, const char *path, const IntOrString *port,
                              const Container *c) {
        if (!port->set) {
                verr(v, path, "port is required");
                return;
        }
        if (port->str) {
                if (!is_port_name(port->str))
                        verr(v, path, "invalid port name \"%s\"", port->str);
                else if (c && container_find_port(c, port->str) < 0)
                        verr(v, path, "port \"%s\" is not a named port of container \"%s\"",
                             port->str, strna(c->name));
        } else if (port->num < 1 || port->num > 65535)
                verr(v, path, "must be between 1 and 65535, inclusive");
}

static void validate_handler(Validator *v, const char *path, const Handler *h, const Container *c,
                             bool probe) {
        char p[PATH_BUF];
        int n = !!h->exec + !!h->http_get + !!h->tcp_socket + !!h->grpc + !!h->sleep;
        if (n == 0)
                verr(v, path, "must specify a handler type (%s)",
                     probe ? "exec, httpGet, tcpSocket or grpc" : "exec, httpGet or sleep");
        else if (n > 1)
                verr(v, path, "may not specify more than 1 handler type");
        if (h->exec && strv_length(h->exec->command) == 0)
                verr(v, P(p, path, ".exec.command"), "command is required");
        if (h->http_get) {
                validate_port_ref(v, P(p, path, ".httpGet.port"), &h->http_get->port,
                                  probe ? c : NULL);
                for (size_t i = 0; i < h->http_get->n_http_headers; i++) {
                        const char *name = h->http_get->http_headers[i].name;
                        bool ok = !isempty(name);
                        for (const char *s = name; ok && *s; s++)
                                ok = isalnum((unsigned char)*s) || strchr("!#$%&'*+-.^_`|~", *s);
                        if (!ok)
                                verr(v, P(p, path, ".httpGet.httpHeaders[%zu].name", i),
                                     "invalid HTTP header name \"%s\"", strempty(name));
                }
        }
        if (h->tcp_socket) {
                validate_port_ref(v, P(p, path, ".tcpSocket.port"), &h->tcp_socket->port,
                                  probe ? c : NULL);
                if (!probe)
                        vwarn(v, P(p, path, ".tcpSocket"),
                              "is ignored by nanolet (kubelet does not run tcpSocket hooks "
                              "either)");
        }
        if (h->grpc && (h->grpc->port < 1 || h->grpc->port > 65535))
                verr(v, P(p, path, ".grpc.port"), "must be between 1 and 65535, inclusive");
        if (h->sleep && h->sleep->seconds < 0)
                verr(v, P(p, path, ".sleep.seconds"), "must be greater than or equal to 0");
}

static void validate_probe(Validator *v, const char *path, const Probe *pr, const Container *c,
                           bool need_success_one) {
        char p[PATH_BUF];
        if (!pr)
                return;
        validate_handler(v, path, &pr->handler, c, true);
        if (pr->initial_delay_seconds < 0)
                verr(v, P(p, path, ".initialDelaySeconds"), "must be greater than or equal to 0");
        const struct {
                const char *name;
                int64_t value;
        } positive[] = {
                { "timeoutSeconds", pr->timeout_seconds },
                { "periodSeconds", pr->period_seconds },
                { "successThreshold", pr->success_threshold },
                { "failureThreshold", pr->failure_threshold },
        };
        for (size_t i = 0; i < ELEMENTSOF(positive); i++)
                if (positive[i].value <= 0)
                        verr(v, P(p, path, ".%s", positive[i].name), "must be greater than 0");
        if (need_success_one && pr->success_threshold != 1)
                verr(v, P(p, path, ".successThreshold"), "must be 1");
        if (pr->termination_grace_period_seconds.set &&
            pr->termination_grace_period_seconds.value <= 0)
                verr(v, P(p, path, ".terminationGracePeriodSeconds"), "must be greater than 0");
}

static void validate_resource_list(Validator *v, const char *path, const ResourceList *l) {
        char p[PATH_BUF];
        const struct {
                const char *name;
                const OptionalQuantity *q;
        } q[] = { { "cpu", &l->cpu },
                  { "memory", &l->memory },
                  { "ephemeral-storage", &l->ephemeral_storage } };
        for (size_t i = 0; i < ELEMENTSOF(q); i++)
                if (q[i].q->set && q[i].q->value.milli < 0)
                        verr(v, P(p, path, "[%s]", q[i].name),
                             "must be greater than or equal to 0");
        if (l->cpu.set && l->cpu.value.milli > POD_CPU_MAX_MILLI)
                verr(v, P(p, path, "[cpu]"),
                     "must be at most %" PRId64 "m (the largest CPU quota the kernel accepts)",
                     (int64_t)POD_CPU_MAX_MILLI);
        for (size_t i = 0; i < l->n_hugepages; i++)
                if (l->hugepages[i].value.milli < 0)
                        verr(v, P(p, path, "[hugepages-%s]", l->hugepages[i].page_size),
                             "must be greater than or equal to 0");
}

static const HugePageQuantity *find_hugepage(const ResourceList *l, const char *size) {
        for (size_t i = 0; i < l->n_hugepages; i++)
                if (streq(l->hugepages[i].page_size, size))
                        return &l->hugepages[i];
        return NULL;
}

/* value first: milli saturates for large memory amounts */
static int quantity_cmp(const Quantity *a, const Quantity *b) {
        if (a->value != b->value)
                return a->value < b->value ? -1 : 1;
        return a->milli < b->milli ? -1 : a->milli > b->milli;
}

static void validate_resources(Validator *v, const char *path, const ResourceRequirements *r) {
        char p[PATH_BUF], rp[PATH_BUF], lp[PATH_BUF];
        P(rp, path, ".requests");
        P(lp, path, ".limits");
        validate_resource_list(v, rp, &r->requests);
        validate_resource_list(v, lp, &r->limits);

        const struct {
                const char *name;
                const OptionalQuantity *req, *lim;
        } pairs[] = {
                { "cpu", &r->requests.cpu, &r->limits.cpu },
                { "memory", &r->requests.memory, &r->limits.memory },
                { "ephemeral-storage", &r->requests.ephemeral_storage,
                  &r->limits.ephemeral_storage },
        };
        for (size_t i = 0; i < ELEMENTSOF(pairs); i++)
                if (pairs[i].req->set && pairs[i].lim->set &&
                    quantity_cmp(&pairs[i].req->value, &pairs[i].lim->value) > 0)
                        verr(v, P(p, rp, "[%s]", pairs[i].name),
                             "must be less than or equal to %s limit", pairs[i].name);

        /* hugepages cannot be overcommitted: requests equal limits */
        for (size_t i = 0; i < r->requests.n_hugepages; i++) {
                const HugePageQuantity *req = &r->requests.hugepages[i];
                const HugePageQuantity *lim = find_hugepage(&r->limits, req->page_size);
                if (!lim || quantity_cmp(&lim->value, &req->value) != 0)
                        verr(v, P(p, rp, "[hugepages-%s]", req->page_size),
                             "must be equal to hugepages-%s limit", req->page_size);
        }
        if ((r->requests.n_hugepages > 0 || r->limits.n_hugepages > 0) && !r->requests.cpu.set &&
            !r->requests.memory.set && !r->limits.cpu.set && !r->limits.memory.set)
                verr(v, path, "hugepages require a cpu or memory request or limit");
}

static void validate_env(Validator *v, const char *path, const Container *c) {
        char p[PATH_BUF], ep[PATH_BUF];
        for (size_t i = 0; i < c->n_env; i++) {
                const EnvVar *e = &c->env[i];
                P(ep, path, ".env[%zu]", i);
                if (isempty(e->name))
                        verr(v, P(p, ep, ".name"), "name is required");
                else if (!is_env_name(e->name))
                        verr(v, P(p, ep, ".name"),
                             "invalid value \"%s\": must consist of printable ASCII characters "
                             "other than '='",
                             e->name);
                if (!e->value_from)
                        continue;
                P(ep, path, ".env[%zu].valueFrom", i);
                if (!isempty(e->value))
                        verr(v, ep, "may not be specified when `value` is not empty");
                const EnvVarSource *s = e->value_from;
                int n = !!s->field_ref + !!s->resource_field_ref + !!s->config_map_key_ref +
                        !!s->secret_key_ref;
                if (n == 0 && !strv_contains(v->skip, P(p, ep, ".fileKeyRef")))
                        verr(v, ep,
                             "must specify one of: fieldRef, resourceFieldRef, "
                             "configMapKeyRef or secretKeyRef");
                else if (n > 1)
                        verr(v, ep, "may not have more than one field specified at a time");
                if (s->field_ref)
                        validate_field_ref(v, P(p, ep, ".fieldRef"), s->field_ref, true);
                if (s->resource_field_ref)
                        validate_resource_field_ref(v, P(p, ep, ".resourceFieldRef"),
                                                    s->resource_field_ref, false);
                const KeySelector *ks[] = { s->config_map_key_ref, s->secret_key_ref };
                const char *kn[] = { "configMapKeyRef", "secretKeyRef" };
                for (size_t j = 0; j < 2; j++) {
                        if (!ks[j])
                                continue;
                        if (isempty(ks[j]->name))
                                verr(v, P(p, ep, ".%s.name", kn[j]), "name is required");
                        if (isempty(ks[j]->key))
                                verr(v, P(p, ep, ".%s.key", kn[j]), "key is required");
                        else if (!is_config_key(ks[j]->key))
                                verr(v, P(p, ep, ".%s.key", kn[j]), "invalid key \"%s\"",
                                     ks[j]->key);
                }
        }
        for (size_t i = 0; i < c->n_env_from; i++) {
                const EnvFromSource *e = &c->env_from[i];
                P(ep, path, ".envFrom[%zu]", i);
                if (e->prefix && *e->prefix && !is_env_name(e->prefix))
                        verr(v, P(p, ep, ".prefix"),
                             "invalid value \"%s\": must consist of printable ASCII characters "
                             "other than '='",
                             e->prefix);
                if (!!e->config_map_ref + !!e->secret_ref != 1)
                        verr(v, ep, "must specify exactly one of configMapRef or secretRef");
                const LocalObjectReference *r = e->config_map_ref ?: e->secret_ref;
                if (r && isempty(r->name))
                        verr(v,
                             P(p, ep, ".%s.name", e->config_map_ref ? "configMapRef" : "secretRef"),
                             "name is required");
        }
}

/* The sizes $(VAR) expansion gives env, command and args, computed as the
 * container config builder will (single pass, earlier env values already
 * expanded), so a chain like A=$(X)$(X), B=$(A)$(A), ... is refused here
 * rather than when the container is created. Values only known at run time
 * (valueFrom, envFrom) count as empty: what is refused here is too long
 * whatever they hold. */
typedef struct SizedEnv {
        const Container *c;
        char **names, **values; /* values[i] NULL: only known at run time */
        size_t n;
} SizedEnv;

static const char *sized_env_get(const char *name, void *userdata) {
        const SizedEnv *e = userdata;
        for (size_t i = e->n; i > 0; i--)
                if (streq(e->names[i - 1], name))
                        return e->values[i - 1] ?: "";
        /* perhaps from envFrom: at least nothing */
        return e->c->n_env_from > 0 ? "" : NULL;
}

static void sized_env_done(SizedEnv *e) {
        for (size_t i = 0; i < e->n; i++)
                free(e->values[i]);
        free(e->names);
        free(e->values);
}

static int expanded_size(Validator *v, SizedEnv *env, const char *in, const char *path,
                         const char *what, char **ret) {
        int r = kube_expand(in, sized_env_get, env, EXPANSION_MAX_VALUE, ret);
        if (r == -E2BIG)
                verr(v, path,
                     "container \"%s\": expands to more than %u bytes (the kernel's limit for one "
                     "%s)",
                     env->c->name, EXPANSION_MAX_VALUE, what);
        return r;
}

static void validate_expansion(Validator *v, const char *path, const Container *c) {
        _cleanup_(sized_env_done) SizedEnv env = { .c = c };
        char p[PATH_BUF];
        size_t total = 0;

        env.names = calloc(c->n_env + 1, sizeof(char *));
        env.values = calloc(c->n_env + 1, sizeof(char *));
        if (!env.names || !env.values)
                return; /* the config builder checks again */
        for (size_t i = 0; i < c->n_env; i++) {
                const EnvVar *e = &c->env[i];
                char *value = NULL;
                if (isempty(e->name))
                        continue;
                if (!e->value_from &&
                    expanded_size(v, &env, strempty(e->value), P(p, path, ".env[%zu].value", i),
                                  "environment string", &value) < 0)
                        return;
                env.names[env.n] = e->name;
                env.values[env.n++] = value;
                total += strlen(e->name) + 2 + (value ? strlen(value) : 0);
        }
        char **lists[] = { c->command, c->args };
        const char *fields[] = { "command", "args" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                size_t i = 0;
                STRV_FOREACH(s, lists[l]) {
                        _cleanup_free_ char *arg = NULL;
                        if (expanded_size(v, &env, *s, P(p, path, ".%s[%zu]", fields[l], i++),
                                          "argument", &arg) < 0)
                                return;
                        total += strlen(arg) + 1;
                }
        }
        if (total > EXPANSION_MAX_TOTAL)
                verr(v, path,
                     "container \"%s\": env, command and args expand to at least %zu bytes, "
                     "more than %u (the kernel's limit for them together)",
                     c->name, total, EXPANSION_MAX_TOTAL);
}

static void validate_volume_mounts(Validator *v, const char *path, const Container *c) {
        char p[PATH_BUF], mp[PATH_BUF];
        bool privileged = c->security_context && c->security_context->privileged.value;
        for (size_t i = 0; i < c->n_volume_mounts; i++) {
                const VolumeMount *m = &c->volume_mounts[i];
                P(mp, path, ".volumeMounts[%zu]", i);
                if (isempty(m->name))
                        verr(v, P(p, mp, ".name"), "name is required");
                else if (!pod_find_volume(v->pod, m->name))
                        verr(v, P(p, mp, ".name"), "volume \"%s\" not found in spec.volumes",
                             m->name);
                if (isempty(m->mount_path))
                        verr(v, P(p, mp, ".mountPath"), "mountPath is required");
                else {
                        if (m->mount_path[0] != '/')
                                verr(v, P(p, mp, ".mountPath"), "must be an absolute path");
                        for (size_t j = 0; j < i; j++)
                                if (c->volume_mounts[j].mount_path &&
                                    streq(c->volume_mounts[j].mount_path, m->mount_path)) {
                                        verr(v, P(p, mp, ".mountPath"), "must be unique");
                                        break;
                                }
                }
                if (m->sub_path)
                        check_relative_path(v, P(p, mp, ".subPath"), m->sub_path);
                if (m->sub_path_expr) {
                        if (m->sub_path && *m->sub_path)
                                verr(v, P(p, mp, ".subPathExpr"),
                                     "subPathExpr and subPath are mutually exclusive");
                        check_relative_path(v, P(p, mp, ".subPathExpr"), m->sub_path_expr);
                }
                if (m->mount_propagation == MOUNT_PROPAGATION_BIDIRECTIONAL && !privileged)
                        verr(v, P(p, mp, ".mountPropagation"),
                             "Bidirectional mount propagation is available only to privileged "
                             "containers");
        }
}

static void validate_security_context(Validator *v, const char *path, const SecurityContext *s) {
        char p[PATH_BUF];
        if (!s)
                return;
        validate_nonnegative(v, P(p, path, ".runAsUser"), &s->run_as_user);
        validate_nonnegative(v, P(p, path, ".runAsGroup"), &s->run_as_group);
        if (s->capabilities) {
                char *const *lists[] = { s->capabilities->add, s->capabilities->drop };
                const char *names[] = { "add", "drop" };
                for (size_t j = 0; j < 2; j++) {
                        size_t k = 0;
                        STRV_FOREACH(cap, lists[j]) {
                                if (!is_capability(*cap))
                                        verr(v, P(p, path, ".capabilities.%s[%zu]", names[j], k),
                                             "unknown capability \"%s\"", *cap);
                                k++;
                        }
                }
        }
        if (s->privileged.set && s->privileged.value && s->allow_privilege_escalation.set &&
            !s->allow_privilege_escalation.value)
                verr(v, P(p, path, ".allowPrivilegeEscalation"),
                     "cannot set allowPrivilegeEscalation to false and privileged to true");
        validate_seccomp(v, P(p, path, ".seccompProfile"), s->seccomp_profile);
        validate_apparmor(v, P(p, path, ".appArmorProfile"), s->apparmor_profile);
}

static void validate_container(Validator *v, const char *path, const Container *c, bool init) {
        char p[PATH_BUF];
        const PodSpec *spec = &v->pod->spec;
        bool sidecar = init && container_is_sidecar(c);

        if (isempty(c->image))
                verr(v, P(p, path, ".image"), "image is required");
        else if (isspace((unsigned char)c->image[0]) ||
                 isspace((unsigned char)c->image[strlen(c->image) - 1]))
                verr(v, P(p, path, ".image"), "must not have leading or trailing whitespace");

        for (size_t i = 0; i < c->n_ports; i++) {
                const ContainerPort *cp = &c->ports[i];
                char pp[PATH_BUF];
                P(pp, path, ".ports[%zu]", i);
                if (cp->name) {
                        if (!is_port_name(cp->name))
                                verr(v, P(p, pp, ".name"),
                                     "invalid value \"%s\": must be an IANA_SVC_NAME (at most 15 "
                                     "lowercase alphanumerics or '-', with at least one letter)",
                                     cp->name);
                        else
                                for (size_t j = 0; j < i; j++)
                                        if (c->ports[j].name && streq(c->ports[j].name, cp->name)) {
                                                verr(v, P(p, pp, ".name"), "duplicate value \"%s\"",
                                                     cp->name);
                                                break;
                                        }
                }
                if (cp->container_port < 1 || cp->container_port > 65535)
                        verr(v, P(p, pp, ".containerPort"),
                             "must be between 1 and 65535, inclusive");
                if (cp->host_port < 0 || cp->host_port > 65535)
                        verr(v, P(p, pp, ".hostPort"), "must be between 0 and 65535, inclusive");
                else if (spec->host_network && cp->host_port != cp->container_port)
                        verr(v, P(p, pp, ".hostPort"),
                             "must match containerPort when hostNetwork is true");
                if (cp->host_ip && !is_ip(cp->host_ip))
                        verr(v, P(p, pp, ".hostIP"), "must be a valid IP address");
        }

        validate_env(v, path, c);
        validate_expansion(v, path, c);
        validate_resources(v, P(p, path, ".resources"), &c->resources);
        validate_volume_mounts(v, path, c);

        if (init && !sidecar) {
                const char *names[] = { "livenessProbe", "readinessProbe", "startupProbe",
                                        "lifecycle" };
                const void *set[] = { c->liveness_probe, c->readiness_probe, c->startup_probe,
                                      c->lifecycle };
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (set[i])
                                verr(v, P(p, path, ".%s", names[i]),
                                     "may not be set for init containers without restartPolicy: "
                                     "Always");
        } else {
                validate_probe(v, P(p, path, ".livenessProbe"), c->liveness_probe, c, true);
                validate_probe(v, P(p, path, ".readinessProbe"), c->readiness_probe, c, false);
                /* A readiness failure never kills, so a kill period makes no sense. */
                if (c->readiness_probe && c->readiness_probe->termination_grace_period_seconds.set)
                        verr(v, P(p, path, ".readinessProbe.terminationGracePeriodSeconds"),
                             "must not be set for readinessProbes");
                validate_probe(v, P(p, path, ".startupProbe"), c->startup_probe, c, true);
                if (c->lifecycle && c->lifecycle->post_start)
                        validate_handler(v, P(p, path, ".lifecycle.postStart"),
                                         c->lifecycle->post_start, c, false);
                if (c->lifecycle && c->lifecycle->pre_stop)
                        validate_handler(v, P(p, path, ".lifecycle.preStop"),
                                         c->lifecycle->pre_stop, c, false);
        }
        if (c->restart_policy >= 0) {
                if (!init)
                        verr(v, P(p, path, ".restartPolicy"),
                             "may not be set for non-init containers");
                else if (c->restart_policy != RESTART_POLICY_ALWAYS)
                        verr(v, P(p, path, ".restartPolicy"),
                             "unsupported value \"%s\": only \"Always\" is supported for init "
                             "containers",
                             restart_policy_to_string(c->restart_policy));
        }
        if (c->termination_message_path && c->termination_message_path[0] != '/')
                verr(v, P(p, path, ".terminationMessagePath"), "must be an absolute path");
        validate_security_context(v, P(p, path, ".securityContext"), c->security_context);
        validate_apparmor_match(v, path, c);
}

/* The runtime ID "<uid>-<name>-<restart count>" must fit for every count;
 * without metadata.uid the uid is the 32-digit identity hash. */
static void validate_runtime_id(Validator *v, const char *path, const char *name) {
        const char *uid = v->pod->metadata.uid;
        size_t room = POD_RUNTIME_ID_MAX - 2 - POD_RUNTIME_ID_COUNT_DIGITS;
        size_t l = (isempty(uid) ? 32 : strlen(uid)) + strlen(name);
        if (l > room)
                verr(v, path,
                     "container name and metadata.uid are %zu characters together; at most %zu "
                     "fit in a runtime container ID (<uid>-<name>-<restart count>, at most %d "
                     "characters)",
                     l, room, POD_RUNTIME_ID_MAX);
}

static void validate_containers(Validator *v, const PodSpec *s) {
        char p[PATH_BUF];
        if (s->n_containers == 0 && !strv_contains(v->skip, "spec.containers"))
                verr(v, "spec.containers", "at least one container is required");

        /* names are unique across init and app containers */
        size_t total = s->n_init_containers + s->n_containers;
        for (size_t k = 0; k < total; k++) {
                bool init = k < s->n_init_containers;
                const Container *c =
                        init ? &s->init_containers[k] : &s->containers[k - s->n_init_containers];
                char cp[PATH_BUF];
                P(cp, init ? "spec.initContainers" : "spec.containers", "[%zu]",
                  init ? k : k - s->n_init_containers);
                if (isempty(c->name))
                        verr(v, P(p, cp, ".name"), "name is required");
                else if (!is_dns1123_label(c->name))
                        verr(v, P(p, cp, ".name"),
                             "invalid value \"%s\": must be a lowercase RFC 1123 label (at most 63 "
                             "lowercase alphanumerics or '-', starting and ending with an "
                             "alphanumeric)",
                             c->name);
                else
                        for (size_t j = 0; j < k; j++) {
                                const Container *o =
                                        j < s->n_init_containers
                                                ? &s->init_containers[j]
                                                : &s->containers[j - s->n_init_containers];
                                if (o->name && streq(o->name, c->name)) {
                                        verr(v, P(p, cp, ".name"), "duplicate value \"%s\"",
                                             c->name);
                                        break;
                                }
                        }
                if (!isempty(c->name) && is_dns1123_label(c->name))
                        validate_runtime_id(v, P(p, cp, ".name"), c->name);
                validate_container(v, cp, c, init);
        }

        /* host ports are a node-wide resource: one (port, protocol, IP) once */
        for (size_t k = 0; k < total; k++) {
                bool init = k < s->n_init_containers;
                const Container *c =
                        init ? &s->init_containers[k] : &s->containers[k - s->n_init_containers];
                for (size_t i = 0; i < c->n_ports; i++) {
                        const ContainerPort *a = &c->ports[i];
                        if (a->host_port <= 0)
                                continue;
                        bool dup = false;
                        for (size_t l = 0; l <= k && !dup; l++) {
                                const Container *o =
                                        l < s->n_init_containers
                                                ? &s->init_containers[l]
                                                : &s->containers[l - s->n_init_containers];
                                for (size_t j = 0; j < (l == k ? i : o->n_ports) && !dup; j++)
                                        dup = o->ports[j].host_port == a->host_port &&
                                              o->ports[j].protocol == a->protocol &&
                                              streq(strempty(o->ports[j].host_ip),
                                                    strempty(a->host_ip));
                        }
                        if (dup)
                                verr(v,
                                     P(p, init ? "spec.initContainers" : "spec.containers",
                                       "[%zu].ports[%zu].hostPort",
                                       init ? k : k - s->n_init_containers, i),
                                     "duplicate value \"%" PRIi64 "/%s\"", a->host_port,
                                     strna(protocol_to_string(a->protocol)));
                }
        }
}

/* ---- pod spec ---- */

static void validate_dns(Validator *v, const PodSpec *s) {
        char p[PATH_BUF];
        const PodDNSConfig *d = s->dns_config;
        if (s->dns_policy == DNS_POLICY_NONE && (!d || strv_length(d->nameservers) == 0))
                /* pointing at dnsPolicy: the absent dnsConfig has no line */
                verr_at(v, d ? NULL : yaml_resolve_path(v->doc, "spec.dnsPolicy"),
                        d ? "spec.dnsConfig.nameservers" : "spec.dnsConfig",
                        "must provide at least one DNS nameserver when dnsPolicy is None");
        if (!d)
                return;
        if (strv_length(d->nameservers) > 3)
                verr(v, "spec.dnsConfig.nameservers", "must not have more than 3 nameservers");
        size_t i = 0;
        STRV_FOREACH(ns, d->nameservers) {
                if (!is_ip(*ns))
                        verr(v, P(p, "spec.dnsConfig.nameservers", "[%zu]", i),
                             "invalid value \"%s\": must be a valid IP address", *ns);
                i++;
        }
        if (strv_length(d->searches) > 32)
                verr(v, "spec.dnsConfig.searches", "must not have more than 32 search paths");
        size_t len = 0;
        i = 0;
        STRV_FOREACH(sp, d->searches) {
                _cleanup_free_ char *t = strdup(*sp);
                if (t && *t && t[strlen(t) - 1] == '.')
                        t[strlen(t) - 1] = 0; /* a trailing dot (absolute name) is fine */
                if (t && !streq(*sp, ".") && !is_dns1123_subdomain(t))
                        verr(v, P(p, "spec.dnsConfig.searches", "[%zu]", i),
                             "invalid value \"%s\": must be a DNS subdomain", *sp);
                len += strlen(*sp) + 1;
                i++;
        }
        if (len > 2048)
                verr(v, "spec.dnsConfig.searches",
                     "must not have more than 2048 characters (including spaces) in total");
        for (i = 0; i < d->n_options; i++)
                if (isempty(d->options[i].name))
                        verr(v, P(p, "spec.dnsConfig.options", "[%zu].name", i),
                             "name is required");
}

static void validate_pod_security_context(Validator *v, const PodSecurityContext *s) {
        char p[PATH_BUF];
        if (!s)
                return;
        validate_nonnegative(v, "spec.securityContext.runAsUser", &s->run_as_user);
        validate_nonnegative(v, "spec.securityContext.runAsGroup", &s->run_as_group);
        validate_nonnegative(v, "spec.securityContext.fsGroup", &s->fs_group);
        for (size_t i = 0; i < s->n_supplemental_groups; i++)
                if (s->supplemental_groups[i] < 0)
                        verr(v, P(p, "spec.securityContext.supplementalGroups", "[%zu]", i),
                             "must be greater than or equal to 0");
        for (size_t i = 0; i < s->n_sysctls; i++) {
                const char *n = s->sysctls[i].name;
                P(p, "spec.securityContext.sysctls", "[%zu].name", i);
                if (isempty(n))
                        verr(v, p, "name is required");
                else if (!is_sysctl_name(n))
                        verr(v, p,
                             "invalid value \"%s\": must be a sysctl name such as "
                             "\"net.ipv4.ip_forward\"",
                             n);
                else
                        for (size_t j = 0; j < i; j++)
                                if (s->sysctls[j].name && streq(s->sysctls[j].name, n)) {
                                        verr(v, p, "duplicate value \"%s\"", n);
                                        break;
                                }
        }
        validate_seccomp(v, "spec.securityContext.seccompProfile", s->seccomp_profile);
        validate_apparmor(v, "spec.securityContext.appArmorProfile", s->apparmor_profile);
}

/* The apiserver's Priority admission plugin: the priority is the one the
 * class gives, and a pod that also sets spec.priority to another value is
 * refused; a class whose name begins with "system-" other than the two
 * built-in ones cannot exist (the apiserver reserves the prefix). nanolet
 * has no PriorityClass objects: any other class is taken on trust, but none
 * can give more than a user-defined class may hold, so a higher value
 * without a system class is refused as the apiserver would. Defaulting
 * already set the priority of a system class that named none. */
static void validate_priority(Validator *v, const PodSpec *s) {
        const char *pc = s->priority_class_name;
        int64_t class_value =
                pc && streq(pc, "system-node-critical")      ? PRIORITY_SYSTEM_NODE_CRITICAL
                : pc && streq(pc, "system-cluster-critical") ? PRIORITY_SYSTEM_CLUSTER_CRITICAL
                                                             : -1;
        if (class_value < 0 && pc && startswith(pc, "system-")) {
                verr(v, "spec.priorityClassName",
                     "no PriorityClass with name \"%s\": the \"system-\" prefix is reserved for "
                     "system-node-critical and system-cluster-critical",
                     pc);
                return;
        }
        if (!s->priority.set)
                return;
        if (class_value >= 0 && s->priority.value != class_value)
                verr(v, "spec.priority",
                     "the integer value of priority (%" PRId64 ") must not be provided in pod "
                     "spec; priorityClassName \"%s\" gives %" PRId64,
                     s->priority.value, pc, class_value);
        else if (class_value < 0 && s->priority.value > PRIORITY_HIGHEST_USER_DEFINABLE)
                verr(v, "spec.priority",
                     "invalid value %" PRId64 ": a priority above %d comes only from "
                     "priorityClassName system-node-critical (%d) or system-cluster-critical (%d)",
                     s->priority.value, PRIORITY_HIGHEST_USER_DEFINABLE,
                     PRIORITY_SYSTEM_NODE_CRITICAL, PRIORITY_SYSTEM_CLUSTER_CRITICAL);
}

static void validate_spec(Validator *v, const PodSpec *s) {
        char p[PATH_BUF];

        validate_volumes(v, s);
        validate_containers(v, s);

        if (s->termination_grace_period_seconds.value < 0)
                verr(v, "spec.terminationGracePeriodSeconds", "must be greater than or equal to 0");
        /* ValidatePodSpec: 1..MaxInt32; a larger deadline overflowed the timer. */
        if (s->active_deadline_seconds.set &&
            (s->active_deadline_seconds.value < 1 || s->active_deadline_seconds.value > INT32_MAX))
                verr(v, "spec.activeDeadlineSeconds",
                     "invalid value %" PRId64 ": must be between 1 and 2147483647, inclusive",
                     (int64_t)s->active_deadline_seconds.value);
        if (s->hostname && !is_dns1123_label(s->hostname))
                verr(v, "spec.hostname", "invalid value \"%s\": must be a lowercase RFC 1123 label",
                     s->hostname);
        if (s->subdomain && !is_dns1123_label(s->subdomain))
                verr(v, "spec.subdomain",
                     "invalid value \"%s\": must be a lowercase RFC 1123 label", s->subdomain);
        if (s->share_process_namespace && s->host_pid)
                verr(v, "spec.shareProcessNamespace", "may not be true when hostPID is true");
        /* validateHostUsers: a pod in its own user namespace shares none of
         * the host's other namespaces. */
        if (s->host_users.set && !s->host_users.value) {
                if (s->host_network)
                        verr(v, "spec.hostNetwork", "may not be true when hostUsers is false");
                if (s->host_pid)
                        verr(v, "spec.hostPID", "may not be true when hostUsers is false");
                if (s->host_ipc)
                        verr(v, "spec.hostIPC", "may not be true when hostUsers is false");
        }
        if (s->os.name == OS_NAME_WINDOWS)
                verr(v, "spec.os.name", "windows pods are not supported by nanolet (Linux only)");
        if (s->service_account_name && !streq(s->service_account_name, "default"))
                verr(v,
                     yaml_resolve_path(v->doc, "spec") &&
                                     yaml_map_get(yaml_resolve_path(v->doc, "spec"),
                                                  "serviceAccountName")
                             ? "spec.serviceAccountName"
                             : "spec.serviceAccount",
                     "service account \"%s\" needs an apiserver: only \"default\" (no token) is "
                     "supported",
                     s->service_account_name);
        if (s->node_selector.n > 0)
                vwarn(v, "spec.nodeSelector", "is ignored by nanolet");
        size_t i = 0;
        STRV_FOREACH(n, s->image_pull_secrets) {
                if (!is_dns1123_subdomain(*n))
                        verr(v, P(p, "spec.imagePullSecrets", "[%zu].name", i),
                             "invalid value \"%s\": must be a Secret name", *n);
                i++;
        }
        for (i = 0; i < s->n_host_aliases; i++) {
                const HostAlias *h = &s->host_aliases[i];
                if (isempty(h->ip) || !is_ip(h->ip))
                        verr(v, P(p, "spec.hostAliases", "[%zu].ip", i),
                             "invalid value \"%s\": must be a valid IP address", strempty(h->ip));
                size_t j = 0;
                STRV_FOREACH(hn, h->hostnames) {
                        if (!is_dns1123_subdomain(*hn))
                                verr(v, P(p, "spec.hostAliases", "[%zu].hostnames[%zu]", i, j),
                                     "invalid value \"%s\": must be a DNS subdomain", *hn);
                        j++;
                }
        }
        validate_dns(v, s);
        validate_pod_security_context(v, s->security_context);
        validate_priority(v, s);
}

size_t pod_validate(const Pod *p, const char *unsuffixed_name, const YamlNode *doc,
                    const char *file, char *const *skip, Diagnostics *diag) {
        Validator v = { .doc = doc, .file = file, .skip = skip, .diag = diag, .pod = p };
        validate_metadata(&v, &p->metadata, unsuffixed_name);
        validate_apparmor_annotations(&v, &p->metadata);
        validate_spec(&v, &p->spec);
        return v.n_errors;
}
