/* Internals of src/network shared by its files and its unit tests; not a
 * contract for other modules. */
#pragma once

#include <jansson.h>
#include <stdarg.h>
#include <sys/types.h>

#include "cni.h"
#include "json-util.h"
#include "macro.h"

#define CNI_OUTPUT_MAX (1024U * 1024U) /* plugin stdout */
#define CNI_STDERR_MAX (64U * 1024U)   /* plugin stderr, for messages */
#define CNI_CONFIG_MAX (1024U * 1024U) /* one config file */
#define CNI_CACHE_MAX (4U * 1024U * 1024U)

struct CniConfig {
        unsigned n_ref;
        char *origin;     /* file, or NULL for the default */
        json_t *list;     /* validated: cniVersion, name, plugins[] with type */
        const char *name; /* inside list */
        const char *version;
        bool disable_check;
};

typedef enum CniCommand {
        CNI_COMMAND_ADD,
        CNI_COMMAND_DEL,
        CNI_COMMAND_CHECK,
        _CNI_COMMAND_MAX,
        _CNI_COMMAND_INVALID = -EINVAL,
} CniCommand;
const char *cni_command_to_string(CniCommand c);

/* Sets err (freeing what it held) and returns r. */
int cni_error_set(CniError *err, int r, const char *plugin, const char *fmt, ...) _printf_(4, 5);
int cni_error_setv(CniError *err, int r, const char *plugin, const char *fmt, va_list ap)
        _printf_(4, 0);

bool cni_version_supported(const char *v);
/* 0.4.0 and later have CHECK and prevResult on DEL. */
bool cni_version_has_check(const char *v);
/* Validates a network configuration list document; takes a reference on
 * list on success. */
int cni_config_new_from_json(json_t *list, const char *origin, CniConfig **ret, CniError *err);
json_t *cni_config_plugin(const CniConfig *c, size_t i);

/* The plugin's stdin as libcni builds it: the plugin's object with the
 * list's name and cniVersion, prevResult (borrowed, may be NULL) and
 * runtimeConfig for the capabilities the plugin declares. */
int cni_build_stdin(const CniConfig *c, size_t plugin, json_t *prev_result, json_t *port_mappings,
                    char **ret, size_t *ret_size);
/* portMappings in libcni's JSON shape. */
json_t *cni_port_mappings_to_json(const CniPortMapping *m, size_t n);
/* CNI_ARGS value with the K8S_POD_* keys; -EINVAL on values with ';' or '='. */
int cni_build_args(const char *ns, const char *name, const char *infra_id, const char *uid,
                   char **ret);
/* The plugin's environment: child_env_new()'s plus the CNI_* variables. */
int cni_build_env(CniCommand cmd, const char *container_id, const char *netns, const char *ifname,
                  const char *args, const char *path, char ***ret);

/* Finds an executable plugin in the ':'-list bin_dirs. -ENOENT, -EINVAL for
 * a type that is not a plain file name. */
int cni_find_plugin(const char *bin_dirs, const char *type, char **ret_path);
