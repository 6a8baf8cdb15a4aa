/* Network configuration: loading from the conf dir, the built-in default,
 * validation with messages that name the file and the field, and the CNI
 * error type. */
#include <arpa/inet.h>
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cni-internal.h"
#include "fileio.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

/* --- errors ------------------------------------------------------------ */

void cni_error_done(CniError *e) {
        if (!e)
                return;
        free(e->plugin);
        free(e->details);
        *e = (CniError){};
}

int cni_error_setv(CniError *err, int r, const char *plugin, const char *fmt, va_list ap) {
        assert(r < 0);
        if (!err)
                return r;
        cni_error_done(err);
        err->base.error = r;
        err->plugin = plugin ? strdup(plugin) : NULL;
        (void)vsnprintf(err->base.message, sizeof(err->base.message), fmt, ap);
        return r;
}

int cni_error_set(CniError *err, int r, const char *plugin, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        r = cni_error_setv(err, r, plugin, fmt, ap);
        va_end(ap);
        return r;
}

char *cni_error_to_string(const CniError *e) {
        if (!e)
                return NULL;
        const char *msg = e->base.message[0]  ? e->base.message
                          : e->base.error < 0 ? strerror(-e->base.error)
                                              : "no error";
        _cleanup_free_ char *code = e->code > 0 ? strprintf(" (code %u)", e->code) : strdup("");
        if (!code)
                return NULL;
        if (e->plugin)
                return strprintf("plugin \"%s\" failed%s: %s%s%s", e->plugin, code, msg,
                                 isempty(e->details) ? "" : ": ", strempty(e->details));
        return strprintf("%s%s%s", msg, isempty(e->details) ? "" : ": ", strempty(e->details));
}

/* --- versions ---------------------------------------------------------- */

static const char *const supported_versions[] = { "0.3.0", "0.3.1", "0.4.0", "1.0.0" };

bool cni_version_supported(const char *v) {
        if (!v)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(supported_versions); i++)
                if (streq(v, supported_versions[i]))
                        return true;
        return false;
}

bool cni_version_has_check(const char *v) {
        return v && (streq(v, "0.4.0") || streq(v, "1.0.0"));
}

/* --- validation -------------------------------------------------------- */

static bool plugin_type_valid(const char *t) {
        if (isempty(t) || strlen(t) > 255 || streq(t, ".") || streq(t, ".."))
                return false;
        return !strchr(t, '/');
}

/* libcni: a network name is a DNS-ish identifier, no '/' (used in paths). */
static bool network_name_valid(const char *n) {
        if (isempty(n) || strlen(n) > 255)
                return false;
        for (const char *p = n; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || strchr("_.-", *p)))
                        return false;
        return true;
}

static int check_version(json_t *o, const char *origin, const char *where, CniError *err,
                         const char **ret) {
        json_t *v = json_object_get(o, "cniVersion");
        if (!v)
                return cni_error_set(err, -EINVAL, NULL, "%s: %smissing \"cniVersion\"", origin,
                                     where);
        if (!json_is_string(v))
                return cni_error_set(err, -EINVAL, NULL, "%s: %s\"cniVersion\" must be a string",
                                     origin, where);
        if (!cni_version_supported(json_string_value(v)))
                return cni_error_set(err, -EINVAL, NULL,
                                     "%s: %sunsupported \"cniVersion\" \"%s\" (supported: 0.3.0, "
                                     "0.3.1, 0.4.0, 1.0.0)",
                                     origin, where, json_string_value(v));
        if (ret)
                *ret = json_string_value(v);
        return 0;
}

int cni_config_new_from_json(json_t *list, const char *origin, CniConfig **ret, CniError *err) {
        const char *version, *name;
        int r;

        if (!origin)
                origin = "built-in default";
        if (!json_is_object(list))
                return cni_error_set(err, -EINVAL, NULL, "%s: not a JSON object", origin);
        r = check_version(list, origin, "", err, &version);
        if (r < 0)
                return r;
        json_t *n = json_object_get(list, "name");
        if (!n)
                return cni_error_set(err, -EINVAL, NULL, "%s: missing \"name\"", origin);
        name = json_string_value(n);
        if (!name || !network_name_valid(name))
                return cni_error_set(err, -EINVAL, NULL,
                                     "%s: \"name\" must be a string of letters, digits, '_', '.' "
                                     "and '-'",
                                     origin);
        json_t *dc = json_object_get(list, "disableCheck");
        if (dc && !json_is_boolean(dc))
                return cni_error_set(err, -EINVAL, NULL, "%s: \"disableCheck\" must be a boolean",
                                     origin);
        json_t *plugins = json_object_get(list, "plugins");
        if (!plugins)
                return cni_error_set(err, -EINVAL, NULL, "%s: missing \"plugins\"", origin);
        if (!json_is_array(plugins) || json_array_size(plugins) == 0)
                return cni_error_set(err, -EINVAL, NULL,
                                     "%s: \"plugins\" must be a non-empty array", origin);
        if (json_array_size(plugins) > 64)
                return cni_error_set(err, -EINVAL, NULL, "%s: more than 64 plugins", origin);
        size_t i;
        json_t *p;
        json_array_foreach(plugins, i, p) {
                if (!json_is_object(p))
                        return cni_error_set(err, -EINVAL, NULL,
                                             "%s: plugins[%zu] must be an object", origin, i);
                json_t *t = json_object_get(p, "type");
                if (!t)
                        return cni_error_set(err, -EINVAL, NULL,
                                             "%s: plugins[%zu]: missing \"type\"", origin, i);
                if (!json_is_string(t) || !plugin_type_valid(json_string_value(t)))
                        return cni_error_set(err, -EINVAL, NULL,
                                             "%s: plugins[%zu]: \"type\" must be a plugin "
                                             "binary name (no '/')",
                                             origin, i);
                json_t *caps = json_object_get(p, "capabilities");
                if (caps && !json_is_object(caps))
                        return cni_error_set(err, -EINVAL, NULL,
                                             "%s: plugins[%zu]: \"capabilities\" must be an "
                                             "object",
                                             origin, i);
                /* libcni ignores a plugin's own cniVersion; so do we, but a
                 * wrong one is still worth a clear message. */
                if (json_object_get(p, "cniVersion")) {
                        _cleanup_free_ char *where = strprintf("plugins[%zu]: ", i);
                        if (!where)
                                return -ENOMEM;
                        r = check_version(p, origin, where, err, NULL);
                        if (r < 0)
                                return r;
                }
        }

        CniConfig *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->n_ref = 1;
        if (!streq(origin, "built-in default")) {
                c->origin = strdup(origin);
                if (!c->origin) {
                        free(c);
                        return -ENOMEM;
                }
        }
        c->list = json_incref(list);
        c->name = name;
        c->version = version;
        c->disable_check = json_is_true(dc);
        *ret = c;
        return 0;
}

int cni_config_parse(const char *data, size_t size, const char *origin, bool is_list,
                     CniConfig **ret, CniError *err) {
        json_error_t je;
        int r;

        if (!origin)
                origin = "(config)";
        if (size > CNI_CONFIG_MAX)
                return cni_error_set(err, -EFBIG, NULL, "%s: larger than %u bytes", origin,
                                     CNI_CONFIG_MAX);
        _cleanup_json_ json_t *doc = json_loadb(data, size, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
                return cni_error_set(err, -EINVAL, NULL, "%s:%d:%d: invalid JSON: %s", origin,
                                     je.line, je.column, je.text);
        if (!json_is_object(doc))
                return cni_error_set(err, -EINVAL, NULL, "%s: not a JSON object", origin);
        if (is_list)
                return cni_config_new_from_json(doc, origin, ret, err);

        /* A single plugin's .conf: {cniVersion, name, type, ...} becomes a
         * list of one, as libcni's ConfListFromConf does. */
        r = check_version(doc, origin, "", err, NULL);
        if (r < 0)
                return r;
        if (!json_object_get(doc, "type"))
                return cni_error_set(err, -EINVAL, NULL, "%s: missing \"type\"", origin);
        _cleanup_json_ json_t *list =
                json_pack("{s:O?, s:O?, s:[O]}", "cniVersion", json_object_get(doc, "cniVersion"),
                          "name", json_object_get(doc, "name"), "plugins", doc);
        if (!list)
                return -ENOMEM;
        if (!json_object_get(doc, "name"))
                (void)json_object_del(list, "name");
        json_t *dc = json_object_get(doc, "disableCheck");
        if (dc && json_object_set(list, "disableCheck", dc) < 0)
                return -ENOMEM;
        return cni_config_new_from_json(list, origin, ret, err);
}

static int parse_cidr(const char *s, int *ret_family) {
        char addr[INET6_ADDRSTRLEN + 1];
        unsigned char buf[sizeof(struct in6_addr)];
        const char *slash = s ? strchr(s, '/') : NULL;
        if (!slash || (size_t)(slash - s) >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, s, slash - s);
        addr[slash - s] = 0;
        int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(family, addr, buf) != 1)
                return -EINVAL;
        char *end;
        errno = 0;
        unsigned long len = strtoul(slash + 1, &end, 10);
        if (errno || end == slash + 1 || *end || len > (family == AF_INET ? 32U : 128U))
                return -EINVAL;
        if (ret_family)
                *ret_family = family;
        return 0;
}

int cni_config_new_default(const char *pod_cidr, CniConfig **ret, CniError *err) {
        if (!pod_cidr)
                pod_cidr = CNI_DEFAULT_POD_CIDR;
        if (parse_cidr(pod_cidr, NULL) < 0)
                return cni_error_set(err, -EINVAL, NULL, "pod CIDR \"%s\" is not a valid CIDR",
                                     pod_cidr);
        /* Keep in sync with contrib/cni/10-nanolet.conflist (a unit test
         * compares them). No loopback plugin: the sandbox brings lo up, and
         * loopback's result would replace the chain's prevResult. */
        _cleanup_json_ json_t *list = json_pack(
                "{s:s, s:s, s:[{s:s, s:s, s:b, s:b, s:b, s:{s:s, s:[[{s:s}]], s:[{s:s}]}},"
                " {s:s, s:{s:b}}]}",
                "cniVersion", "1.0.0", "name", "nanolet", "plugins",
                /* bridge */
                "type", "bridge", "bridge", "nanolet0", "isGateway", 1, "ipMasq", 1, "hairpinMode",
                1, "ipam", "type", "host-local", "ranges", "subnet", pod_cidr, "routes", "dst",
                "0.0.0.0/0",
                /* portmap */
                "type", "portmap", "capabilities", "portMappings", 1);
        if (!list)
                return -ENOMEM;
        return cni_config_new_from_json(list, NULL, ret, err);
}

static int conf_file_kind(const char *name) {
        if (name[0] == '.')
                return -1;
        if (endswith(name, ".conflist"))
                return 1;
        if (endswith(name, ".conf"))
                return 0;
        return -1;
}

int cni_config_load(const char *conf_dir, const char *pod_cidr, CniConfig **ret, CniError *err) {
        _cleanup_strv_free_ char **names = NULL;
        int r;

        if (!conf_dir)
                conf_dir = CNI_DEFAULT_CONF_DIR;
        _cleanup_closedir_ DIR *d = opendir(conf_dir);
        if (!d && errno != ENOENT)
                return cni_error_set(err, -errno, NULL, "%s: cannot open: %s", conf_dir,
                                     strerror(errno));
        for (struct dirent *de; d && (de = readdir(d));) {
                if (conf_file_kind(de->d_name) < 0)
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode))
                        continue; /* dangling links, directories named x.conf */
                r = strv_extend(&names, de->d_name);
                if (r < 0)
                        return r;
        }
        if (!names || !names[0])
                return cni_config_new_default(pod_cidr, ret, err);

        strv_sort(names);
        _cleanup_free_ char *path = strprintf("%s/%s", conf_dir, names[0]);
        if (!path)
                return -ENOMEM;
        _cleanup_free_ char *data = NULL;
        size_t size;
        r = read_full_file_at(AT_FDCWD, path, CNI_CONFIG_MAX, &data, &size);
        if (r == -EFBIG)
                return cni_error_set(err, r, NULL, "%s: larger than %u bytes", path,
                                     CNI_CONFIG_MAX);
        if (r < 0)
                return cni_error_set(err, r, NULL, "%s: cannot read: %s", path, strerror(-r));
        return cni_config_parse(data, size, path, conf_file_kind(names[0]) == 1, ret, err);
}

CniConfig *cni_config_ref(CniConfig *c) {
        if (c)
                c->n_ref++;
        return c;
}

CniConfig *cni_config_unref(CniConfig *c) {
        if (!c || --c->n_ref > 0)
                return NULL;
        json_decref(c->list);
        free(c->origin);
        free(c);
        return NULL;
}

const char *cni_config_name(const CniConfig *c) {
        return c->name;
}

const char *cni_config_version(const CniConfig *c) {
        return c->version;
}

const char *cni_config_origin(const CniConfig *c) {
        return c->origin;
}

size_t cni_config_n_plugins(const CniConfig *c) {
        return json_array_size(json_object_get(c->list, "plugins"));
}

json_t *cni_config_plugin(const CniConfig *c, size_t i) {
        return json_array_get(json_object_get(c->list, "plugins"), i);
}

const char *cni_config_plugin_type(const CniConfig *c, size_t i) {
        return json_string_value(json_object_get(cni_config_plugin(c, i), "type"));
}

char *cni_config_to_json(const CniConfig *c) {
        return json_dumps(c->list, JSON_COMPACT | JSON_SORT_KEYS);
}
