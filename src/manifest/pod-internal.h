/* Shared between pod.c, pod-decode.c, pod-defaults.c and pod-validate.c:
 * the field tables that drive both decoding and freeing, so a field added
 * to a table is decoded and released without further code. */
#pragma once

#include <stddef.h>
#include <stdlib.h>

#include "diag.h"
#include "pod.h"
#include "yaml-node.h"

/* The two built-in PriorityClasses, and the highest value any other class
 * may have (Kubernetes' HighestUserDefinablePriority). */
#define PRIORITY_SYSTEM_CLUSTER_CRITICAL 2000000000
#define PRIORITY_SYSTEM_NODE_CRITICAL 2000001000
#define PRIORITY_HIGHEST_USER_DEFINABLE 1000000000

typedef enum FieldKind {
        FIELD_STRING,        /* char * */
        FIELD_BOOL,          /* bool */
        FIELD_OPT_BOOL,      /* OptionalBool */
        FIELD_INT32,         /* int64_t holding an int32 */
        FIELD_INT64,         /* int64_t */
        FIELD_OPT_INT32,     /* OptionalInt holding an int32 */
        FIELD_OPT_INT64,     /* OptionalInt */
        FIELD_MODE,          /* OptionalInt; "0644" is octal as in YAML 1.1/Kubernetes */
        FIELD_ENUM,          /* int-sized enum; arg = EnumInfo */
        FIELD_STRV,          /* char ** */
        FIELD_INT64_ARRAY,   /* int64_t *, count at offset_n */
        FIELD_MAP,           /* StringMap of strings */
        FIELD_QUANTITY,      /* OptionalQuantity */
        FIELD_INT_OR_STRING, /* IntOrString */
        FIELD_STRUCT,        /* embedded; arg = StructType */
        FIELD_STRUCT_PTR,    /* allocated; arg = StructType */
        FIELD_ARRAY,         /* items pointer, count at offset_n; arg = StructType */
        FIELD_IGNORED,       /* Kubernetes field nanolet does not honour: warning */
        FIELD_SILENT,        /* accepted and dropped without a word */
        FIELD_REJECTED,      /* error; arg = the reason */
} FieldKind;

typedef struct EnumInfo {
        const char *const *names; /* NULL entries cannot be spelled */
        int n;
} EnumInfo;

typedef struct DecodeContext DecodeContext;
typedef struct StructType StructType;

typedef struct Field {
        const char *name;
        FieldKind kind;
        size_t offset;
        size_t offset_n;
        const void *arg;
        bool alias; /* second spelling of a field listed before: not freed twice */
} Field;

struct StructType {
        size_t size;
        const Field *fields; /* terminated by name == NULL */
        /* Types that are not a plain field list (Volume, ResourceList). */
        int (*decode)(DecodeContext *c, const YamlNode *n, const char *path, void *base);
        void (*free)(void *base);
};

struct DecodeContext {
        const char *file;
        Diagnostics *diag;
        char **error_paths; /* strv: where decoding failed, so validation stays quiet there */
};

extern const StructType pod_type, object_meta_type;

/* Generic table walkers (pod-decode.c). */
void struct_init(const StructType *t, void *base);
void struct_done(const StructType *t, void *base);
int struct_decode(DecodeContext *c, const YamlNode *n, const char *path, const StructType *t,
                  void *base);
void decode_error(DecodeContext *c, const YamlNode *n, const char *path, const char *fmt, ...)
        _printf_(4, 5);
void decode_warning(DecodeContext *c, const YamlNode *n, const char *path, const char *fmt, ...)
        _printf_(4, 5);
/* "parent.name", or name at the top. */
char *path_join(char *buf, size_t size, const char *parent, const char *name);
/* A map key as Kubernetes' field.Path writes it: "metadata.annotations[a.b/c]",
 * "data[..data]", "resources.limits[cpu]". */
char *path_key(char *buf, size_t size, const char *parent, const char *key);

/* Enum tables (pod.c). */
extern const EnumInfo restart_policy_info, pull_policy_info, protocol_info, dns_policy_info,
        host_path_type_info, mount_propagation_info, termination_message_policy_info,
        seccomp_profile_type_info, apparmor_profile_type_info, uri_scheme_info, storage_medium_info,
        os_name_info, proc_mount_type_info, secret_type_info, volume_type_info;

/* pod-defaults.c: Kubernetes SetDefaults_* for a decoded pod. */
int pod_set_defaults(Pod *p);
/* Pull policy Kubernetes derives from an image reference. */
PullPolicy pull_policy_for_image(const char *image);

/* pod-validate.c: every problem to diag, located via doc (may be NULL);
 * paths listed in skip already have a decode error. Returns the number of
 * errors found. */
size_t pod_validate(const Pod *p, const char *unsuffixed_name, const YamlNode *doc,
                    const char *file, char *const *skip, Diagnostics *diag);
/* Helpers also used for ConfigMap/Secret names. */
bool is_dns1123_label(const char *s);
bool is_dns1123_subdomain(const char *s);
bool is_config_key(const char *s);
/* Kubernetes' hasChDirPrefix: why a config key or a volume item path may not
 * be "." or "..", or start with "..", or NULL if it is fine. */
const char *config_key_dot_problem(const char *s);
/* Deepest node of doc along "a.b[2].c". */
const YamlNode *yaml_resolve_path(const YamlNode *doc, const char *path);
