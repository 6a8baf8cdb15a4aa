/* Agent configuration: defaults, KubeletConfiguration file, flags. */
#include "daemon-config.h"

#include <ctype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eviction.h"
#include "fileio.h"
#include "log.h"
#include "quantity.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"
#include "yaml-node.h"

#define MIB (1024LL * 1024LL)

static int set_str(char **field, const char *value) {
        char *c = strdup(value);
        if (!c)
                return -ENOMEM;
        free(*field);
        *field = c;
        return 0;
}

int nanolet_config_init(NanoletConfig *c) {
        *c = (NanoletConfig){
                .file_check_frequency = 20 * USEC_PER_SEC,
                .http_check_frequency = 20 * USEC_PER_SEC,
                .sync_frequency = 60 * USEC_PER_SEC,
                .max_manifest_size = 10 * MIB,
                .max_pods = 110,
                .pod_pids_limit = -1,
                .container_log_max_size = 10 * MIB,
                .container_log_max_files = 5,
                .container_log_monitor_interval = 10 * USEC_PER_SEC,
                .container_log_max_workers = 1,
                .seccomp_default = true, /* SPEC §10; kubelet: false */
                .image_gc_high_threshold = 85,
                .image_gc_low_threshold = 80,
                .image_minimum_gc_age = 2 * 60 * USEC_PER_SEC,
                .eviction_pressure_transition_period = 5 * 60 * USEC_PER_SEC,
                .serialize_image_pulls = true,
                .cpu_cfs_quota = true,
                .read_only_port = 10255,
                .healthz_port = 10248,
        };
        static const struct {
                size_t offset;
                const char *value;
        } defaults[] = {
                { offsetof(NanoletConfig, pod_manifest_path), "/etc/kubernetes/manifests" },
                { offsetof(NanoletConfig, root_dir), "/var/lib/nanolet" },
                { offsetof(NanoletConfig, run_dir), "/run/nanolet" },
                { offsetof(NanoletConfig, pod_logs_dir), "/var/log/pods" },
                { offsetof(NanoletConfig, container_logs_dir), "/var/log/containers" },
                { offsetof(NanoletConfig, runtime), "runc" },
                { offsetof(NanoletConfig, cni_conf_dir), "/etc/cni/net.d" },
                { offsetof(NanoletConfig, cni_bin_dir), "/opt/cni/bin:/usr/lib/cni" },
                { offsetof(NanoletConfig, pod_cidr), "10.86.0.0/16" },
                { offsetof(NanoletConfig, cluster_domain), "cluster.local" },
                { offsetof(NanoletConfig, resolv_conf), "/etc/resolv.conf" },
                { offsetof(NanoletConfig, hairpin_mode), "hairpin-veth" },
                { offsetof(NanoletConfig, cgroup_driver), "cgroupfs" },
                { offsetof(NanoletConfig, cgroup_root), "/" },
                { offsetof(NanoletConfig, address), "127.0.0.1" },
                { offsetof(NanoletConfig, healthz_bind_address), "127.0.0.1" },
                { offsetof(NanoletConfig, image_credential_file), "/var/lib/nanolet/config.json" },
                { offsetof(NanoletConfig, registries_conf), "/etc/containers/registries.conf" },
                { offsetof(NanoletConfig, registry_certs_dir), "/etc/containers/certs.d" },
        };
        for (size_t i = 0; i < ELEMENTSOF(defaults); i++)
                if (set_str((char **)((char *)c + defaults[i].offset), defaults[i].value) < 0) {
                        nanolet_config_deinit(c);
                        return -ENOMEM;
                }
        static const char *const eviction[] = { "memory.available<100Mi", "nodefs.available<10%",
                                                "nodefs.inodesFree<5%", "imagefs.available<15%" };
        for (size_t i = 0; i < ELEMENTSOF(eviction); i++)
                if (strv_extend(&c->eviction_hard, eviction[i]) < 0) {
                        nanolet_config_deinit(c);
                        return -ENOMEM;
                }
        return 0;
}

void nanolet_config_deinit(NanoletConfig *c) {
        char **strings[] = {
                &c->pod_manifest_path,
                &c->manifest_url,
                &c->hostname_override,
                &c->node_name,
                &c->root_dir,
                &c->run_dir,
                &c->pod_logs_dir,
                &c->container_logs_dir,
                &c->runtime,
                &c->cni_conf_dir,
                &c->cni_bin_dir,
                &c->pod_cidr,
                &c->cluster_domain,
                &c->resolv_conf,
                &c->hairpin_mode,
                &c->cgroup_driver,
                &c->cgroup_root,
                &c->address,
                &c->healthz_bind_address,
                &c->config_file,
                &c->image_credential_file,
                &c->registries_conf,
                &c->registry_certs_dir,
        };
        for (size_t i = 0; i < ELEMENTSOF(strings); i++) {
                free(*strings[i]);
                *strings[i] = NULL;
        }
        c->manifest_url_headers = strv_free(c->manifest_url_headers);
        c->cluster_dns = strv_free(c->cluster_dns);
        c->node_ips = strv_free(c->node_ips);
        c->eviction_hard = strv_free(c->eviction_hard);
        c->insecure_registries = strv_free(c->insecure_registries);
        c->pinned_images = strv_free(c->pinned_images);
        c->allowed_unsafe_sysctls = strv_free(c->allowed_unsafe_sysctls);
        c->eviction_soft = strv_free(c->eviction_soft);
        c->eviction_soft_grace_period = strv_free(c->eviction_soft_grace_period);
        c->eviction_minimum_reclaim = strv_free(c->eviction_minimum_reclaim);
}

int nanolet_parse_duration(const char *s, usec_t *ret) {
        if (isempty(s))
                return -EINVAL;
        /* kubelet flags take Go durations; a bare number is seconds */
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (*end == 0 && errno == 0 && isdigit((unsigned char)s[0])) {
                if (v > UINT64_MAX / USEC_PER_SEC)
                        return -ERANGE;
                *ret = v * USEC_PER_SEC;
                return 0;
        }
        return go_duration_parse_usec(s, ret);
}

int nanolet_parse_reserved(const char *s, int64_t *ret_milli_cpu, int64_t *ret_memory,
                           char **ret_error) {
        _cleanup_free_ char *copy = strdup(s);
        int64_t cpu = 0, mem = 0;
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(e, '=');
                Quantity q;
                if (!eq) {
                        *ret_error = strprintf("\"%s\" is not resource=quantity", e);
                        return -EINVAL;
                }
                *eq = 0;
                if (quantity_parse(eq + 1, &q) < 0 || q.value < 0) {
                        *ret_error = strprintf("\"%s\" is not a quantity", eq + 1);
                        return -EINVAL;
                }
                if (streq(e, "cpu"))
                        cpu = q.milli;
                else if (streq(e, "memory"))
                        mem = q.value;
                else if (!streq(e, "ephemeral-storage") && !streq(e, "pid")) {
                        *ret_error = strprintf("unknown resource \"%s\" (cpu, memory, "
                                               "ephemeral-storage, pid)",
                                               e);
                        return -EINVAL;
                }
        }
        *ret_milli_cpu = cpu;
        *ret_memory = mem;
        return 0;
}

/* ---- KubeletConfiguration ---- */

typedef enum ConfigFieldType {
        FIELD_STRING,
        FIELD_DURATION,
        FIELD_INT,
        FIELD_BOOL,
        FIELD_QUANTITY,
        FIELD_STRV,
        FIELD_HEADERS,    /* map[string][]string -> "Key: Value" list */
        FIELD_EVICTION,   /* map[string]string -> "signal<value" list */
        FIELD_SIGNAL_MAP, /* map[string]string -> "signal=value" list */
        FIELD_RESERVED,   /* map[string]string {cpu, memory} -> two int64 (milli-CPU, bytes) */
        FIELD_IGNORED,    /* a kubelet field that has no meaning without an apiserver */
} ConfigFieldType;

typedef struct ConfigField {
        const char *name;
        ConfigFieldType type;
        size_t offset;
} ConfigField;

#define F(n, t, m)                                                                                 \
        { n, t, offsetof(NanoletConfig, m) }
#define IGN(n)                                                                                     \
        { n, FIELD_IGNORED, 0 }
static const ConfigField config_fields[] = {
        F("staticPodPath", FIELD_STRING, pod_manifest_path),
        F("staticPodURL", FIELD_STRING, manifest_url),
        F("staticPodURLHeader", FIELD_HEADERS, manifest_url_headers),
        F("fileCheckFrequency", FIELD_DURATION, file_check_frequency),
        F("httpCheckFrequency", FIELD_DURATION, http_check_frequency),
        F("syncFrequency", FIELD_DURATION, sync_frequency),
        F("clusterDNS", FIELD_STRV, cluster_dns),
        F("clusterDomain", FIELD_STRING, cluster_domain),
        F("resolvConf", FIELD_STRING, resolv_conf),
        F("podCIDR", FIELD_STRING, pod_cidr),
        F("readOnlyPort", FIELD_INT, read_only_port),
        F("healthzPort", FIELD_INT, healthz_port),
        F("healthzBindAddress", FIELD_STRING, healthz_bind_address),
        F("address", FIELD_STRING, address),
        F("maxPods", FIELD_INT, max_pods),
        F("podPidsLimit", FIELD_INT, pod_pids_limit),
        F("cgroupDriver", FIELD_STRING, cgroup_driver),
        F("cgroupRoot", FIELD_STRING, cgroup_root),
        F("cpuCFSQuota", FIELD_BOOL, cpu_cfs_quota),
        F("kubeReserved", FIELD_RESERVED, kube_reserved_milli_cpu),
        F("systemReserved", FIELD_RESERVED, system_reserved_milli_cpu),
        F("containerLogMaxSize", FIELD_QUANTITY, container_log_max_size),
        F("containerLogMaxFiles", FIELD_INT, container_log_max_files),
        F("containerLogMonitorInterval", FIELD_DURATION, container_log_monitor_interval),
        F("containerLogMaxWorkers", FIELD_INT, container_log_max_workers),
        F("podLogsDir", FIELD_STRING, pod_logs_dir),
        F("seccompDefault", FIELD_BOOL, seccomp_default),
        F("allowedUnsafeSysctls", FIELD_STRV, allowed_unsafe_sysctls),
        F("shutdownGracePeriod", FIELD_DURATION, shutdown_grace_period),
        F("shutdownGracePeriodCriticalPods", FIELD_DURATION, shutdown_grace_period_critical_pods),
        F("evictionHard", FIELD_EVICTION, eviction_hard),
        F("evictionSoft", FIELD_EVICTION, eviction_soft),
        F("evictionSoftGracePeriod", FIELD_SIGNAL_MAP, eviction_soft_grace_period),
        F("evictionMinimumReclaim", FIELD_SIGNAL_MAP, eviction_minimum_reclaim),
        F("evictionPressureTransitionPeriod", FIELD_DURATION, eviction_pressure_transition_period),
        F("imageGCHighThresholdPercent", FIELD_INT, image_gc_high_threshold),
        F("imageGCLowThresholdPercent", FIELD_INT, image_gc_low_threshold),
        F("imageMinimumGCAge", FIELD_DURATION, image_minimum_gc_age),
        F("imageMaximumGCAge", FIELD_DURATION, image_maximum_gc_age),
        F("pinnedImages", FIELD_STRV, pinned_images), /* nanolet's, as --pinned-images */
        F("serializeImagePulls", FIELD_BOOL, serialize_image_pulls),
        F("maxParallelImagePulls", FIELD_INT, max_parallel_image_pulls),
        F("hairpinMode", FIELD_STRING, hairpin_mode),
        /* kubeadm writes these; they are about the apiserver connection or
         * features nanolet does not have, so they are accepted and ignored */
        IGN("authentication"),
        IGN("authorization"),
        IGN("cgroupsPerQOS"),
        IGN("containerRuntimeEndpoint"),
        IGN("cpuManagerReconcilePeriod"),
        IGN("logging"),
        IGN("memorySwap"),
        IGN("nodeStatusReportFrequency"),
        IGN("nodeStatusUpdateFrequency"),
        IGN("rotateCertificates"),
        IGN("runtimeRequestTimeout"),
        IGN("streamingConnectionIdleTimeout"),
        IGN("volumeStatsAggPeriod"),
        IGN("tlsCertFile"),
        IGN("tlsPrivateKeyFile"),
        IGN("port"),
        IGN("featureGates"),
        IGN("failSwapOn"),
};
#undef F
#undef IGN

static bool node_is_string(const YamlNode *n) {
        return n && n->type == YAML_NODE_STRING;
}

static int apply_field(NanoletConfig *c, const ConfigField *f, const YamlNode *v, const char *file,
                       Diagnostics *diag) {
        void *p = (char *)c + f->offset;
        int r;

#define BAD(...)                                                                                   \
        do {                                                                                       \
                diagnostics_add(diag, DIAG_ERROR, file, v->line, v->column, f->name, __VA_ARGS__); \
                return 0;                                                                          \
        } while (0)

        switch (f->type) {
        case FIELD_IGNORED:
                diagnostics_add(diag, DIAG_WARNING, file, v->line, v->column, f->name,
                                "is ignored by nanolet (no apiserver)");
                return 0;
        case FIELD_STRING:
                if (!node_is_string(v))
                        BAD("must be a string");
                return set_str(p, v->str);
        case FIELD_DURATION: {
                usec_t u;
                if (!node_is_string(v) || nanolet_parse_duration(v->str, &u) < 0)
                        BAD("must be a duration such as \"20s\"");
                *(usec_t *)p = u;
                return 0;
        }
        case FIELD_INT:
                if (v->type != YAML_NODE_INT)
                        BAD("must be an integer");
                *(int64_t *)p = v->i;
                return 0;
        case FIELD_BOOL:
                if (v->type != YAML_NODE_BOOL)
                        BAD("must be true or false");
                *(bool *)p = v->b;
                return 0;
        case FIELD_QUANTITY: {
                Quantity q;
                if (v->type == YAML_NODE_INT)
                        q.value = v->i;
                else if (!node_is_string(v) || quantity_parse(v->str, &q) < 0)
                        BAD("must be a quantity such as \"10Mi\"");
                if (q.value <= 0)
                        BAD("must be positive");
                *(int64_t *)p = q.value;
                return 0;
        }
        case FIELD_STRV: {
                if (v->type != YAML_NODE_SEQ)
                        BAD("must be a list of strings");
                _cleanup_strv_free_ char **l = NULL;
                for (size_t i = 0; i < v->n; i++) {
                        if (!node_is_string(v->items[i]))
                                BAD("must be a list of strings");
                        r = strv_extend(&l, v->items[i]->str);
                        if (r < 0)
                                return r;
                }
                strv_free(*(char ***)p);
                *(char ***)p = TAKE_PTR(l);
                return 0;
        }
        case FIELD_RESERVED: {
                if (v->type != YAML_NODE_MAP)
                        BAD("must be a map such as {cpu: 100m, memory: 256Mi}");
                int64_t *cpu = p, *mem = cpu + 1;
                *cpu = *mem = 0;
                for (size_t i = 0; i < v->n; i++) {
                        const YamlNode *val = v->pairs[i].value;
                        const char *key = v->pairs[i].key->str;
                        Quantity q;
                        if (val->type == YAML_NODE_INT)
                                q = (Quantity){ .value = val->i, .milli = val->i * 1000 };
                        else if (!node_is_string(val) || quantity_parse(val->str, &q) < 0 ||
                                 q.value < 0)
                                BAD("values must be quantities such as \"100m\" or \"1Gi\"");
                        if (streq(key, "cpu"))
                                *cpu = q.milli;
                        else if (streq(key, "memory"))
                                *mem = q.value;
                        else if (!streq(key, "ephemeral-storage") && !streq(key, "pid"))
                                BAD("unknown resource \"%s\" (cpu, memory, ephemeral-storage, "
                                    "pid)",
                                    key);
                }
                return 0;
        }
        case FIELD_HEADERS:
        case FIELD_SIGNAL_MAP:
        case FIELD_EVICTION: {
                if (v->type != YAML_NODE_MAP)
                        BAD("must be a map");
                _cleanup_strv_free_ char **l = NULL;
                for (size_t i = 0; i < v->n; i++) {
                        const YamlNode *val = v->pairs[i].value;
                        const char *key = v->pairs[i].key->str;
                        if (f->type == FIELD_EVICTION || f->type == FIELD_SIGNAL_MAP) {
                                if (!node_is_string(val))
                                        BAD("values must be strings such as \"100Mi\"");
                                r = strv_consume(&l,
                                                 strprintf("%s%c%s", key,
                                                           f->type == FIELD_EVICTION ? '<' : '=',
                                                           val->str));
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (val->type != YAML_NODE_SEQ)
                                BAD("values must be lists of strings");
                        for (size_t j = 0; j < val->n; j++) {
                                if (!node_is_string(val->items[j]))
                                        BAD("values must be lists of strings");
                                char *h = strprintf("%s: %s", key, val->items[j]->str);
                                if (!h)
                                        return -ENOMEM;
                                r = strv_consume(&l, h);
                                if (r < 0) {
                                        free(h);
                                        return r;
                                }
                        }
                }
                strv_free(*(char ***)p);
                *(char ***)p = TAKE_PTR(l);
                return 0;
        }
        }
#undef BAD
        return 0;
}

int nanolet_config_load_buffer(NanoletConfig *c, const char *buf, size_t size, const char *filename,
                               Diagnostics *diag) {
        YamlNode **docs = NULL;
        size_t n = 0;
        int r;

        r = yaml_parse_documents(buf, size, filename, NULL, &docs, &n, diag);
        if (r < 0)
                return r;
        if (n != 1 || docs[0]->type != YAML_NODE_MAP) {
                diagnostics_add(diag, DIAG_ERROR, filename, n ? docs[0]->line : 0, 0, NULL,
                                "must hold exactly one KubeletConfiguration document");
                r = -EINVAL;
                goto finish;
        }
        const YamlNode *doc = docs[0];
        const YamlNode *kind = yaml_map_get(doc, "kind");
        const YamlNode *api = yaml_map_get(doc, "apiVersion");
        if (!node_is_string(kind) || !streq(kind->str, "KubeletConfiguration"))
                diagnostics_add(diag, DIAG_ERROR, filename, doc->line, doc->column, "kind",
                                "must be \"KubeletConfiguration\"");
        if (!node_is_string(api) || !streq(api->str, "kubelet.config.k8s.io/v1beta1"))
                diagnostics_add(diag, DIAG_ERROR, filename, doc->line, doc->column, "apiVersion",
                                "must be \"kubelet.config.k8s.io/v1beta1\"");

        for (size_t i = 0; i < doc->n; i++) {
                const char *key = doc->pairs[i].key->str;
                const YamlNode *v = doc->pairs[i].value;
                if (streq(key, "kind") || streq(key, "apiVersion"))
                        continue;
                const ConfigField *f = NULL;
                for (size_t j = 0; j < ELEMENTSOF(config_fields); j++)
                        if (streq(config_fields[j].name, key)) {
                                f = &config_fields[j];
                                break;
                        }
                if (!f) {
                        diagnostics_add(diag, DIAG_WARNING, filename, v->line, v->column, key,
                                        "unknown field, ignored");
                        continue;
                }
                r = apply_field(c, f, v, filename, diag);
                if (r < 0)
                        goto finish;
        }
        r = diagnostics_has_errors(diag) ? -EINVAL : 0;
finish:
        yaml_documents_free(docs, n);
        return r;
}

int nanolet_config_load_file(NanoletConfig *c, const char *path, Diagnostics *diag) {
        _cleanup_free_ char *buf = NULL;
        size_t size;
        int r = read_full_file_at(AT_FDCWD, path, 1 * MIB, &buf, &size);
        if (r < 0) {
                diagnostics_add(diag, DIAG_ERROR, path, 0, 0, NULL, "cannot read: %s",
                                strerror(-r));
                return r;
        }
        return nanolet_config_load_buffer(c, buf, size, path, diag);
}

/* ---- flags ---- */

enum {
        ARG_CONFIG = 0x100,
        ARG_POD_MANIFEST_PATH,
        ARG_MANIFEST_URL,
        ARG_MANIFEST_URL_HEADER,
        ARG_FILE_CHECK_FREQUENCY,
        ARG_HTTP_CHECK_FREQUENCY,
        ARG_SYNC_FREQUENCY,
        ARG_HOSTNAME_OVERRIDE,
        ARG_ALLOW_INSECURE,
        ARG_MAX_MANIFEST_SIZE,
        ARG_ROOT_DIR,
        ARG_RUN_DIR,
        ARG_POD_LOGS_DIR,
        ARG_CONTAINER_LOGS_DIR,
        ARG_CONTAINER_LOG_MAX_SIZE,
        ARG_CONTAINER_LOG_MAX_FILES,
        ARG_CONTAINER_LOG_MONITOR_INTERVAL,
        ARG_RUNTIME,
        ARG_CNI_CONF_DIR,
        ARG_CNI_BIN_DIR,
        ARG_POD_CIDR,
        ARG_CLUSTER_DNS,
        ARG_NODE_IP,
        ARG_CLUSTER_DOMAIN,
        ARG_RESOLV_CONF,
        ARG_ADDRESS,
        ARG_READ_ONLY_PORT,
        ARG_HEALTHZ_PORT,
        ARG_HEALTHZ_BIND_ADDRESS,
        ARG_MAX_PODS,
        ARG_POD_PIDS_LIMIT,
        ARG_CGROUP_DRIVER,
        ARG_CGROUP_ROOT,
        ARG_CPU_CFS_QUOTA,
        ARG_KUBE_RESERVED,
        ARG_SYSTEM_RESERVED,
        ARG_DRY_RUN,
        ARG_STOP_PODS_ON_EXIT,
        ARG_IMAGE_CREDENTIAL_FILE,
        ARG_REGISTRIES_CONF,
        ARG_REGISTRY_CERTS_DIR,
        ARG_INSECURE_REGISTRY,
        ARG_SERIALIZE_IMAGE_PULLS,
        ARG_MAX_PARALLEL_IMAGE_PULLS,
        ARG_IMAGE_PULL_POLICY_OVERRIDE,
        ARG_LOGGING_FORMAT,
        ARG_IMAGE_GC_HIGH_THRESHOLD,
        ARG_IMAGE_GC_LOW_THRESHOLD,
        ARG_IMAGE_MINIMUM_GC_AGE,
        ARG_PINNED_IMAGES,
        ARG_IMAGE_MAXIMUM_GC_AGE,
        ARG_SECCOMP_DEFAULT,
        ARG_ALLOWED_UNSAFE_SYSCTLS,
        ARG_EVICTION_HARD,
        ARG_EVICTION_SOFT,
        ARG_EVICTION_SOFT_GRACE_PERIOD,
        ARG_EVICTION_MINIMUM_RECLAIM,
        ARG_EVICTION_PRESSURE_TRANSITION_PERIOD,
};

static const struct option serve_options[] = {
        { "help", no_argument, NULL, 'h' },
        { "v", required_argument, NULL, 'v' },
        { "config", required_argument, NULL, ARG_CONFIG },
        { "pod-manifest-path", required_argument, NULL, ARG_POD_MANIFEST_PATH },
        { "manifest-url", required_argument, NULL, ARG_MANIFEST_URL },
        { "manifest-url-header", required_argument, NULL, ARG_MANIFEST_URL_HEADER },
        { "file-check-frequency", required_argument, NULL, ARG_FILE_CHECK_FREQUENCY },
        { "http-check-frequency", required_argument, NULL, ARG_HTTP_CHECK_FREQUENCY },
        { "sync-frequency", required_argument, NULL, ARG_SYNC_FREQUENCY },
        { "hostname-override", required_argument, NULL, ARG_HOSTNAME_OVERRIDE },
        { "allow-insecure-manifests", no_argument, NULL, ARG_ALLOW_INSECURE },
        { "max-manifest-size", required_argument, NULL, ARG_MAX_MANIFEST_SIZE },
        { "root-dir", required_argument, NULL, ARG_ROOT_DIR },
        { "run-dir", required_argument, NULL, ARG_RUN_DIR },
        { "pod-logs-dir", required_argument, NULL, ARG_POD_LOGS_DIR },
        { "container-logs-dir", required_argument, NULL, ARG_CONTAINER_LOGS_DIR },
        { "container-log-max-size", required_argument, NULL, ARG_CONTAINER_LOG_MAX_SIZE },
        { "container-log-max-files", required_argument, NULL, ARG_CONTAINER_LOG_MAX_FILES },
        { "container-log-monitor-interval", required_argument, NULL,
          ARG_CONTAINER_LOG_MONITOR_INTERVAL },
        { "runtime", required_argument, NULL, ARG_RUNTIME },
        { "cni-conf-dir", required_argument, NULL, ARG_CNI_CONF_DIR },
        { "cni-bin-dir", required_argument, NULL, ARG_CNI_BIN_DIR },
        { "pod-cidr", required_argument, NULL, ARG_POD_CIDR },
        { "cluster-dns", required_argument, NULL, ARG_CLUSTER_DNS },
        { "node-ip", required_argument, NULL, ARG_NODE_IP },
        { "cluster-domain", required_argument, NULL, ARG_CLUSTER_DOMAIN },
        { "resolv-conf", required_argument, NULL, ARG_RESOLV_CONF },
        { "address", required_argument, NULL, ARG_ADDRESS },
        { "read-only-port", required_argument, NULL, ARG_READ_ONLY_PORT },
        { "healthz-port", required_argument, NULL, ARG_HEALTHZ_PORT },
        { "healthz-bind-address", required_argument, NULL, ARG_HEALTHZ_BIND_ADDRESS },
        { "max-pods", required_argument, NULL, ARG_MAX_PODS },
        { "pod-max-pids", required_argument, NULL, ARG_POD_PIDS_LIMIT },
        { "pod-pids-limit", required_argument, NULL, ARG_POD_PIDS_LIMIT },
        { "cgroup-driver", required_argument, NULL, ARG_CGROUP_DRIVER },
        { "cgroup-root", required_argument, NULL, ARG_CGROUP_ROOT },
        { "cpu-cfs-quota", required_argument, NULL, ARG_CPU_CFS_QUOTA },
        { "kube-reserved", required_argument, NULL, ARG_KUBE_RESERVED },
        { "system-reserved", required_argument, NULL, ARG_SYSTEM_RESERVED },
        { "dry-run", no_argument, NULL, ARG_DRY_RUN },
        { "stop-pods-on-exit", no_argument, NULL, ARG_STOP_PODS_ON_EXIT },
        { "image-credential-file", required_argument, NULL, ARG_IMAGE_CREDENTIAL_FILE },
        { "registries-conf", required_argument, NULL, ARG_REGISTRIES_CONF },
        { "registry-certs-dir", required_argument, NULL, ARG_REGISTRY_CERTS_DIR },
        { "insecure-registry", required_argument, NULL, ARG_INSECURE_REGISTRY },
        { "serialize-image-pulls", required_argument, NULL, ARG_SERIALIZE_IMAGE_PULLS },
        { "max-parallel-image-pulls", required_argument, NULL, ARG_MAX_PARALLEL_IMAGE_PULLS },
        { "image-pull-policy-override", required_argument, NULL, ARG_IMAGE_PULL_POLICY_OVERRIDE },
        { "logging-format", required_argument, NULL, ARG_LOGGING_FORMAT },
        { "image-gc-high-threshold", required_argument, NULL, ARG_IMAGE_GC_HIGH_THRESHOLD },
        { "image-gc-low-threshold", required_argument, NULL, ARG_IMAGE_GC_LOW_THRESHOLD },
        { "image-minimum-gc-age", required_argument, NULL, ARG_IMAGE_MINIMUM_GC_AGE },
        { "pinned-images", required_argument, NULL, ARG_PINNED_IMAGES },
        { "image-maximum-gc-age", required_argument, NULL, ARG_IMAGE_MAXIMUM_GC_AGE },
        { "seccomp-default", optional_argument, NULL, ARG_SECCOMP_DEFAULT },
        { "allowed-unsafe-sysctls", required_argument, NULL, ARG_ALLOWED_UNSAFE_SYSCTLS },
        { "eviction-hard", required_argument, NULL, ARG_EVICTION_HARD },
        { "eviction-soft", required_argument, NULL, ARG_EVICTION_SOFT },
        { "eviction-soft-grace-period", required_argument, NULL, ARG_EVICTION_SOFT_GRACE_PERIOD },
        { "eviction-minimum-reclaim", required_argument, NULL, ARG_EVICTION_MINIMUM_RECLAIM },
        { "eviction-pressure-transition-period", required_argument, NULL,
          ARG_EVICTION_PRESSURE_TRANSITION_PERIOD },
        {}
};

static void serve_help(void) {
        printf("Usage: nanolet serve [OPTIONS]\n\n"
               "Run the agent: watch manifests and run their pods.\n\n"
               "  --config FILE                   KubeletConfiguration file (flags override it)\n"
               "  --pod-manifest-path PATH        manifests directory or file "
               "[/etc/kubernetes/manifests]\n"
               "  --manifest-url URL              also read pods from this URL\n"
               "  --manifest-url-header 'K: V'    header for the URL (repeatable)\n"
               "  --file-check-frequency D        full directory rescan period [20s]\n"
               "  --http-check-frequency D        URL poll period [20s]\n"
               "  --hostname-override NAME        node name [lowercase hostname]\n"
               "  --allow-insecure-manifests      accept manifests not owned by root or writable "
               "by others\n"
               "  --max-manifest-size BYTES       largest manifest accepted [10Mi]\n"
               "  --root-dir DIR                  state [/var/lib/nanolet]\n"
               "  --run-dir DIR                   runtime state [/run/nanolet]\n"
               "  --pod-logs-dir DIR              container logs [/var/log/pods]\n"
               "  --container-logs-dir DIR        log symlinks [/var/log/containers]\n"
               "  --container-log-max-size SIZE   rotate a container's log at this size [10Mi]\n"
               "  --container-log-max-files N     log files kept per container, current one "
               "included [5]\n"
               "  --container-log-monitor-interval D  how often log sizes are checked [10s]\n"
               "  --runtime runc|crun             OCI runtime [runc]\n"
               "  --cni-conf-dir DIR, --cni-bin-dir PATH, --pod-cidr CIDR\n"
               "  --cluster-dns IP (repeatable), --cluster-domain D, --resolv-conf FILE\n"
               "  --node-ip IP[,IP]               status.hostIP [the default route's address]\n"
               "  --address IP, --read-only-port N   GET /pods, /healthz [127.0.0.1, 10255; 0: "
               "off]\n"
               "  --healthz-bind-address IP, --healthz-port N  GET /healthz [127.0.0.1, 10248; 0: "
               "off]\n"
               "  --max-pods N                    pods run at once; more wait (OutOfpods) "
               "[110]\n"
               "  --pod-pids-limit N              pids.max of each pod's cgroup [-1: none]\n"
               "  --cgroup-driver cgroupfs|systemd  systemd only where it is PID 1 [cgroupfs]\n"
               "  --cgroup-root PATH              parent of kubepods/ [/]\n"
               "  --cpu-cfs-quota BOOL            CFS quota from cpu limits [true]\n"
               "  --kube-reserved, --system-reserved cpu=Q,memory=Q  kept from allocatable\n"
               "  --image-credential-file FILE    registry credentials (docker config.json)\n"
               "                                  [/var/lib/nanolet/config.json]\n"
               "  --registries-conf FILE          mirrors, blocked and insecure registries\n"
               "                                  [/etc/containers/registries.conf]\n"
               "  --registry-certs-dir DIR        per-registry CAs and client certificates\n"
               "                                  [/etc/containers/certs.d]\n"
               "  --insecure-registry HOST[:PORT] allow plain HTTP / unverified TLS "
               "(repeatable)\n"
               "  --serialize-image-pulls BOOL    one registry pull at a time [true]\n"
               "  --max-parallel-image-pulls N    pulls at once when not serialized [no bound]\n"
               "  --image-pull-policy-override never  no registry pull at all (appliances)\n"
               "  --image-gc-high-threshold PCT   image GC starts above this disk usage [85; "
               "100: off]\n"
               "  --image-gc-low-threshold PCT    image GC frees down to this usage [80]\n"
               "  --image-minimum-gc-age D        images stored more recently are kept [2m]\n"
               "  --pinned-images REF[,REF]       never removed by image GC (repeatable)\n"
               "  --image-maximum-gc-age D        unused images older than this are removed "
               "[0: off]\n"
               "  --seccomp-default[=BOOL]        RuntimeDefault seccomp unless a profile is set "
               "[true]\n"
               "  --allowed-unsafe-sysctls S[,S]  sysctls (or prefix*) allowed beyond the safe "
               "set\n"
               "  --eviction-hard S<V[,S<V]       hard eviction thresholds (replace the defaults)\n"
               "  --eviction-soft S<V[,S<V]       soft eviction thresholds\n"
               "  --eviction-soft-grace-period S=D[,S=D]  how long a soft one must hold\n"
               "  --eviction-minimum-reclaim S=V[,S=V]    reclaim beyond the threshold\n"
               "  --eviction-pressure-transition-period D  pressure conditions stay [5m]\n"
               "  --dry-run                       log the pod events, touch no container\n"
               "  --stop-pods-on-exit             stop all pods when the agent is stopped\n"
               "  -v N                            log verbosity (>= 4: debug)\n"
               "  --logging-format text|json      klog's text lines or kubelet's JSON [text]\n");
}

/* "IP[,IP]": each an IPv4 or IPv6 address. */
static int parse_ip_list(const char *name, const char *s, char ***ret) {
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                unsigned char buf[sizeof(struct in6_addr)];
                if (inet_pton(AF_INET, e, buf) != 1 && inet_pton(AF_INET6, e, buf) != 1) {
                        log_error("%s: \"%s\" is not an IP address.", name, e);
                        return -EINVAL;
                }
                int r = strv_extend(ret, e);
                if (r < 0)
                        return r;
        }
        return *ret ? 0 : -EINVAL;
}

static int parse_int_arg(const char *name, const char *s, int64_t min, int64_t max, int64_t *ret) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (isempty(s) || *end || errno || v < min || v > max) {
                log_error("Invalid value \"%s\" for --%s: expected an integer in %lld..%lld.", s,
                          name, (long long)min, (long long)max);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* allow_zero: 0 means "none" for this flag (a minimum age, a period that
 * may be off). */
static int parse_duration_arg(const char *name, const char *s, bool allow_zero, usec_t *ret) {
        if (nanolet_parse_duration(s, ret) < 0 || (*ret == 0 && !allow_zero)) {
                log_error("Invalid value \"%s\" for --%s: expected a duration such as \"20s\".", s,
                          name);
                return -EINVAL;
        }
        return 0;
}

static int load_config_file(NanoletConfig *c, const char *path) {
        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        int r = nanolet_config_load_file(c, path, &d);
        diagnostics_print(&d, stderr);
        if (r < 0) {
                log_error("Invalid configuration file \"%s\".", path);
                return -EINVAL;
        }
        return set_str(&c->config_file, path);
}

/* The file is loaded before any flag so that every flag overrides it,
 * whatever the order on the command line. This first pass parses with
 * getopt as well, so that every spelling getopt_long_only() takes for
 * --config (-config, --conf=FILE) loads the file; problems with other flags
 * are left to the second pass to report. */
static int load_config_files(NanoletConfig *c, int argc, char **argv) {
        int opt, r = 0;
        optind = 0;
        opterr = 0;
        while (r >= 0 && (opt = getopt_long_only(argc, argv, "hv:", serve_options, NULL)) >= 0)
                if (opt == ARG_CONFIG)
                        r = load_config_file(c, optarg);
        opterr = 1;
        return r;
}

int nanolet_config_parse_argv(NanoletConfig *c, int argc, char **argv) {
        int r, opt;

        r = load_config_files(c, argc, argv);
        if (r < 0)
                return r;

        optind = 0;
        while ((opt = getopt_long_only(argc, argv, "hv:", serve_options, NULL)) >= 0) {
                int64_t n;
                r = 0;
                switch (opt) {
                case 'h':
                        serve_help();
                        return 1;
                case 'v':
                        r = parse_int_arg("v", optarg, 0, 10, &n);
                        if (r < 0)
                                return r;
                        c->verbosity = (int)n;
                        break;
                case ARG_CONFIG:
                        break; /* already loaded */
                case ARG_POD_MANIFEST_PATH:
                        r = set_str(&c->pod_manifest_path, optarg);
                        break;
                case ARG_MANIFEST_URL:
                        r = set_str(&c->manifest_url, optarg);
                        break;
                case ARG_MANIFEST_URL_HEADER:
                        if (!strchr(optarg, ':')) {
                                log_error("Invalid --manifest-url-header \"%s\": expected 'Key: "
                                          "Value'.",
                                          optarg);
                                return -EINVAL;
                        }
                        r = strv_extend(&c->manifest_url_headers, optarg);
                        break;
                case ARG_FILE_CHECK_FREQUENCY:
                        r = parse_duration_arg("file-check-frequency", optarg, false,
                                               &c->file_check_frequency);
                        break;
                case ARG_HTTP_CHECK_FREQUENCY:
                        r = parse_duration_arg("http-check-frequency", optarg, false,
                                               &c->http_check_frequency);
                        break;
                case ARG_SYNC_FREQUENCY:
                        r = parse_duration_arg("sync-frequency", optarg, false, &c->sync_frequency);
                        break;
                case ARG_HOSTNAME_OVERRIDE:
                        r = set_str(&c->hostname_override, optarg);
                        break;
                case ARG_ALLOW_INSECURE:
                        c->allow_insecure_manifests = true;
                        r = 0;
                        break;
                case ARG_MAX_MANIFEST_SIZE: {
                        Quantity q;
                        if (quantity_parse(optarg, &q) < 0 || q.value <= 0) {
                                log_error("Invalid --max-manifest-size \"%s\".", optarg);
                                return -EINVAL;
                        }
                        c->max_manifest_size = (uint64_t)q.value;
                        r = 0;
                        break;
                }
                case ARG_ROOT_DIR:
                        r = set_str(&c->root_dir, optarg);
                        break;
                case ARG_RUN_DIR:
                        r = set_str(&c->run_dir, optarg);
                        break;
                case ARG_POD_LOGS_DIR:
                        r = set_str(&c->pod_logs_dir, optarg);
                        break;
                case ARG_CONTAINER_LOGS_DIR:
                        r = set_str(&c->container_logs_dir, optarg);
                        break;
                case ARG_CONTAINER_LOG_MAX_SIZE: {
                        Quantity q;
                        if (quantity_parse(optarg, &q) < 0 || q.value <= 0) {
                                log_error("Invalid --container-log-max-size \"%s\": expected a "
                                          "size such as \"10Mi\".",
                                          optarg);
                                return -EINVAL;
                        }
                        c->container_log_max_size = q.value;
                        r = 0;
                        break;
                }
                case ARG_CONTAINER_LOG_MAX_FILES:
                        r = parse_int_arg("container-log-max-files", optarg, 2, 1000,
                                          &c->container_log_max_files);
                        break;
                case ARG_CONTAINER_LOG_MONITOR_INTERVAL:
                        r = parse_duration_arg("container-log-monitor-interval", optarg, false,
                                               &c->container_log_monitor_interval);
                        break;
                case ARG_RUNTIME:
                        r = set_str(&c->runtime, optarg);
                        break;
                case ARG_CNI_CONF_DIR:
                        r = set_str(&c->cni_conf_dir, optarg);
                        break;
                case ARG_CNI_BIN_DIR:
                        r = set_str(&c->cni_bin_dir, optarg);
                        break;
                case ARG_POD_CIDR:
                        r = set_str(&c->pod_cidr, optarg);
                        break;
                case ARG_CLUSTER_DNS:
                        r = strv_extend(&c->cluster_dns, optarg);
                        break;
                case ARG_NODE_IP:
                        c->node_ips = strv_free(c->node_ips);
                        r = parse_ip_list("--node-ip", optarg, &c->node_ips);
                        break;
                case ARG_CLUSTER_DOMAIN:
                        r = set_str(&c->cluster_domain, optarg);
                        break;
                case ARG_RESOLV_CONF:
                        r = set_str(&c->resolv_conf, optarg);
                        break;
                case ARG_ADDRESS:
                        r = set_str(&c->address, optarg);
                        break;
                case ARG_READ_ONLY_PORT:
                        r = parse_int_arg("read-only-port", optarg, 0, 65535, &c->read_only_port);
                        break;
                case ARG_HEALTHZ_PORT:
                        r = parse_int_arg("healthz-port", optarg, 0, 65535, &c->healthz_port);
                        break;
                case ARG_HEALTHZ_BIND_ADDRESS:
                        r = set_str(&c->healthz_bind_address, optarg);
                        break;
                case ARG_MAX_PODS:
                        r = parse_int_arg("max-pods", optarg, 1, 100000, &c->max_pods);
                        break;
                case ARG_POD_PIDS_LIMIT:
                        r = parse_int_arg("pod-pids-limit", optarg, -1, INT32_MAX,
                                          &c->pod_pids_limit);
                        break;
                case ARG_CGROUP_DRIVER:
                        r = set_str(&c->cgroup_driver, optarg);
                        break;
                case ARG_CGROUP_ROOT:
                        if (optarg[0] != '/' || strstr(optarg, "..")) {
                                log_error("Invalid --cgroup-root \"%s\": expected an absolute "
                                          "cgroup path such as \"/\".",
                                          optarg);
                                return -EINVAL;
                        }
                        r = set_str(&c->cgroup_root, optarg);
                        break;
                case ARG_CPU_CFS_QUOTA:
                        if (!streq(optarg, "true") && !streq(optarg, "false")) {
                                log_error("Invalid --cpu-cfs-quota \"%s\": expected true or "
                                          "false.",
                                          optarg);
                                return -EINVAL;
                        }
                        c->cpu_cfs_quota = streq(optarg, "true");
                        r = 0;
                        break;
                case ARG_KUBE_RESERVED:
                case ARG_SYSTEM_RESERVED: {
                        _cleanup_free_ char *msg = NULL;
                        bool kube = opt == ARG_KUBE_RESERVED;
                        r = nanolet_parse_reserved(
                                optarg,
                                kube ? &c->kube_reserved_milli_cpu : &c->system_reserved_milli_cpu,
                                kube ? &c->kube_reserved_memory : &c->system_reserved_memory, &msg);
                        if (r == -EINVAL) {
                                log_error("Invalid --%s \"%s\": %s.",
                                          kube ? "kube-reserved" : "system-reserved", optarg,
                                          strna(msg));
                                return r;
                        }
                        break;
                }
                case ARG_DRY_RUN:
                        c->dry_run = true;
                        r = 0;
                        break;
                case ARG_STOP_PODS_ON_EXIT:
                        c->stop_pods_on_exit = true;
                        r = 0;
                        break;
                case ARG_IMAGE_CREDENTIAL_FILE:
                        r = set_str(&c->image_credential_file, optarg);
                        break;
                case ARG_REGISTRIES_CONF:
                        r = set_str(&c->registries_conf, optarg);
                        break;
                case ARG_REGISTRY_CERTS_DIR:
                        r = set_str(&c->registry_certs_dir, optarg);
                        break;
                case ARG_INSECURE_REGISTRY:
                        if (isempty(optarg) || strstr(optarg, "://") || strpbrk(optarg, "/ \t@")) {
                                log_error("Invalid --insecure-registry \"%s\": expected "
                                          "HOST[:PORT] without a scheme or path.",
                                          optarg);
                                return -EINVAL;
                        }
                        r = strv_extend(&c->insecure_registries, optarg);
                        break;
                case ARG_SERIALIZE_IMAGE_PULLS:
                        if (streq(optarg, "true") || streq(optarg, "false")) {
                                c->serialize_image_pulls = streq(optarg, "true");
                                r = 0;
                        } else {
                                log_error("Invalid --serialize-image-pulls \"%s\": expected true "
                                          "or false.",
                                          optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_MAX_PARALLEL_IMAGE_PULLS:
                        r = parse_int_arg("max-parallel-image-pulls", optarg, 1, 100,
                                          &c->max_parallel_image_pulls);
                        break;
                case ARG_IMAGE_PULL_POLICY_OVERRIDE:
                        if (!streq(optarg, "never") && !streq(optarg, "")) {
                                log_error("Invalid --image-pull-policy-override \"%s\": the only "
                                          "override is \"never\" (no pulls at all).",
                                          optarg);
                                return -EINVAL;
                        }
                        c->image_pull_never = streq(optarg, "never");
                        r = 0;
                        break;
                case ARG_LOGGING_FORMAT: {
                        LogFormat format;
                        if (log_format_from_string(optarg, &format) < 0) {
                                log_error("Invalid --logging-format \"%s\": expected text or json.",
                                          optarg);
                                return -EINVAL;
                        }
                        c->log_json = format == LOG_FORMAT_JSON;
                        r = 0;
                        break;
                }
                case ARG_IMAGE_GC_HIGH_THRESHOLD:
                        r = parse_int_arg("image-gc-high-threshold", optarg, 0, 100,
                                          &c->image_gc_high_threshold);
                        break;
                case ARG_IMAGE_GC_LOW_THRESHOLD:
                        r = parse_int_arg("image-gc-low-threshold", optarg, 0, 100,
                                          &c->image_gc_low_threshold);
                        break;
                case ARG_IMAGE_MINIMUM_GC_AGE:
                        /* 0 is allowed: no minimum age. */
                        r = parse_duration_arg("image-minimum-gc-age", optarg, true,
                                               &c->image_minimum_gc_age);
                        break;
                case ARG_EVICTION_HARD:
                case ARG_EVICTION_SOFT:
                case ARG_EVICTION_SOFT_GRACE_PERIOD:
                case ARG_EVICTION_MINIMUM_RECLAIM: {
                        /* The flag's list replaces the file's (and the defaults), as kubelet. */
                        char ***l = opt == ARG_EVICTION_HARD   ? &c->eviction_hard
                                    : opt == ARG_EVICTION_SOFT ? &c->eviction_soft
                                    : opt == ARG_EVICTION_SOFT_GRACE_PERIOD
                                            ? &c->eviction_soft_grace_period
                                            : &c->eviction_minimum_reclaim;
                        _cleanup_free_ char *copy = strdup(optarg);
                        char *save = NULL;
                        if (!copy)
                                return -ENOMEM;
                        *l = strv_free(*l);
                        r = 0;
                        for (char *e = strtok_r(copy, ",", &save); e && r >= 0;
                             e = strtok_r(NULL, ",", &save))
                                r = strv_extend(l, e);
                        break;
                }
                case ARG_EVICTION_PRESSURE_TRANSITION_PERIOD:
                        r = parse_duration_arg("eviction-pressure-transition-period", optarg, true,
                                               &c->eviction_pressure_transition_period);
                        break;
                case ARG_PINNED_IMAGES:
                case ARG_ALLOWED_UNSAFE_SYSCTLS: {
                        /* Repeatable lists, as kubelet's string slices. */
                        char ***l = opt == ARG_PINNED_IMAGES ? &c->pinned_images
                                                             : &c->allowed_unsafe_sysctls;
                        _cleanup_free_ char *copy = strdup(optarg);
                        char *save = NULL;
                        if (!copy)
                                return -ENOMEM;
                        r = 0;
                        for (char *e = strtok_r(copy, ",", &save); e && r >= 0;
                             e = strtok_r(NULL, ",", &save))
                                r = strv_extend(l, e);
                        break;
                }
                case ARG_IMAGE_MAXIMUM_GC_AGE:
                        r = parse_duration_arg("image-maximum-gc-age", optarg, true,
                                               &c->image_maximum_gc_age);
                        break;
                case ARG_SECCOMP_DEFAULT:
                        /* A bool flag as kubelet's: bare, or =true/=false. */
                        if (optarg && !streq(optarg, "true") && !streq(optarg, "false")) {
                                log_error("Invalid --seccomp-default \"%s\": expected true or "
                                          "false.",
                                          optarg);
                                return -EINVAL;
                        }
                        c->seccomp_default = !optarg || streq(optarg, "true");
                        r = 0;
                        break;
                default:
                        /* getopt printed the problem */
                        return -EINVAL;
                }
                if (r < 0)
                        return r;
        }
        if (optind < argc) {
                log_error("Unexpected argument \"%s\".", argv[optind]);
                return -EINVAL;
        }
        if (!streq(c->runtime, "runc") && !streq(c->runtime, "crun") && !strchr(c->runtime, '/')) {
                log_error("Invalid --runtime \"%s\": expected runc, crun or a path.", c->runtime);
                return -EINVAL;
        }
        /* kubelet's rule: the live file and the one just rotated always
         * exist, so fewer than two files cannot be kept. */
        if (c->container_log_max_files < 2 || c->container_log_max_files > 1000) {
                log_error("Invalid containerLogMaxFiles %lld: expected 2..1000.",
                          (long long)c->container_log_max_files);
                return -EINVAL;
        }
        if (c->container_log_monitor_interval < 100 * USEC_PER_MSEC) {
                log_error("Invalid containerLogMonitorInterval: expected at least 100ms.");
                return -EINVAL;
        }
        /* The file's integers are not range-checked as they are read. */
        if (c->read_only_port < 0 || c->read_only_port > 65535 || c->healthz_port < 0 ||
            c->healthz_port > 65535) {
                log_error("Invalid readOnlyPort %lld or healthzPort %lld: expected 0..65535.",
                          (long long)c->read_only_port, (long long)c->healthz_port);
                return -EINVAL;
        }
        if (c->max_parallel_image_pulls < 0 || c->max_parallel_image_pulls > 100) {
                log_error("Invalid maxParallelImagePulls %lld: expected 1..100.",
                          (long long)c->max_parallel_image_pulls);
                return -EINVAL;
        }
        if (c->max_parallel_image_pulls > 1 && c->serialize_image_pulls) {
                /* kubelet's validation says the same. */
                log_error("maxParallelImagePulls %lld needs serializeImagePulls false.",
                          (long long)c->max_parallel_image_pulls);
                return -EINVAL;
        }
        if (isempty(c->cgroup_root) || c->cgroup_root[0] != '/' || strstr(c->cgroup_root, "..")) {
                log_error("Invalid cgroupRoot \"%s\": expected an absolute cgroup path.",
                          strempty(c->cgroup_root));
                return -EINVAL;
        }
        {
                EvictionConfig ec;
                _cleanup_free_ char *msg = NULL;
                r = eviction_config_parse(c->eviction_hard, c->eviction_soft,
                                          c->eviction_soft_grace_period,
                                          c->eviction_minimum_reclaim,
                                          c->eviction_pressure_transition_period, &ec, &msg);
                if (r < 0) {
                        log_error("Invalid eviction settings: %s.", msg ? msg : strerror(-r));
                        return r;
                }
                eviction_config_done(&ec);
        }
        /* kubelet's validation of the image GC thresholds. */
        if (c->image_gc_high_threshold < 0 || c->image_gc_high_threshold > 100 ||
            c->image_gc_low_threshold < 0 || c->image_gc_low_threshold > 100 ||
            (c->image_gc_high_threshold < 100 &&
             c->image_gc_low_threshold >= c->image_gc_high_threshold)) {
                log_error("Invalid image GC thresholds: low %lld%% must be below high %lld%% "
                          "(both 0..100; high 100 turns image GC off).",
                          (long long)c->image_gc_low_threshold,
                          (long long)c->image_gc_high_threshold);
                return -EINVAL;
        }
        /* kubelet's validation of the settings below. */
        if (c->image_maximum_gc_age != 0 && c->image_maximum_gc_age <= c->image_minimum_gc_age) {
                log_error("Invalid imageMaximumGCAge %" PRIu64 "s: it must be greater than "
                          "imageMinimumGCAge %" PRIu64 "s.",
                          (uint64_t)(c->image_maximum_gc_age / USEC_PER_SEC),
                          (uint64_t)(c->image_minimum_gc_age / USEC_PER_SEC));
                return -EINVAL;
        }
        if (c->container_log_max_workers < 1) {
                log_error("Invalid containerLogMaxWorkers %lld: expected at least 1.",
                          (long long)c->container_log_max_workers);
                return -EINVAL;
        }
        if (c->shutdown_grace_period_critical_pods > c->shutdown_grace_period) {
                log_error("Invalid shutdownGracePeriodCriticalPods: it must not be greater than "
                          "shutdownGracePeriod.");
                return -EINVAL;
        }
        if (isempty(c->pod_logs_dir) || c->pod_logs_dir[0] != '/') {
                log_error("Invalid podLogsDir \"%s\": expected an absolute path.",
                          strempty(c->pod_logs_dir));
                return -EINVAL;
        }
        if (!streq(c->cgroup_driver, "cgroupfs") && !streq(c->cgroup_driver, "systemd")) {
                log_error("Invalid --cgroup-driver \"%s\": expected cgroupfs or systemd.",
                          c->cgroup_driver);
                return -EINVAL;
        }
        return 0;
}

int nanolet_config_finish(NanoletConfig *c) {
        char host[256];
        const char *name = c->hostname_override;

        if (!name) {
                if (gethostname(host, sizeof host - 1) < 0)
                        return -errno;
                host[sizeof host - 1] = 0;
                name = host;
        }
        _cleanup_free_ char *lower = strdup(name);
        if (!lower)
                return -ENOMEM;
        for (char *p = lower; *p; p++)
                *p = (char)tolower((unsigned char)*p);
        /* kubelet trims and lowercases; a name it cannot use in pod names is an error */
        if (isempty(lower) || strlen(lower) > 63) {
                log_error("Invalid node name \"%s\": use --hostname-override.", lower);
                return -EINVAL;
        }
        for (char *p = lower; *p; p++)
                if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.')) {
                        log_error("Invalid node name \"%s\": only lowercase letters, digits, '-' "
                                  "and '.' may be used; use --hostname-override.",
                                  lower);
                        return -EINVAL;
                }
        free(c->node_name);
        c->node_name = TAKE_PTR(lower);
        return 0;
}
