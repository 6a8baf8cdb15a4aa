/* Agent configuration: defaults, KubeletConfiguration file, flags. */
#include "daemon-config.h"

#include <ctype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eviction.h"
#include "fileio.h"
#include "getopt-util.h"
#include "log.h"
#include "quantity.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"
#include "settings.h"
#include "yaml-node.h"

#define MIB (1024LL * 1024LL)

int nanolet_config_init(NanoletConfig *c) {
        *c = (NanoletConfig){};
        /* every default is in the settings table, where --help shows it */
        int r = settings_apply_defaults(c);
        if (r < 0) {
                nanolet_config_deinit(c);
                return r;
        }
        return 0;
}

void nanolet_config_deinit(NanoletConfig *c) {
        char **strings[] = {
                &c->pod_manifest_path,
                &c->manifest_url,
                &c->manifest_url_signature_format,
                &c->manifest_url_signature_url,
                &c->hostname_override,
                &c->node_name,
                &c->root_dir,
                &c->run_dir,
                &c->pod_logs_dir,
                &c->container_logs_dir,
                &c->runtime_path,
                &c->cni_conf_dir,
                &c->cni_bin_dir,
                &c->pod_cidr,
                &c->cluster_domain,
                &c->resolv_conf,
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
        c->manifest_url_public_keys = strv_free(c->manifest_url_public_keys);
        c->cluster_dns = strv_free(c->cluster_dns);
        c->node_ips = strv_free(c->node_ips);
        c->allowed_unsafe_sysctls = strv_free(c->allowed_unsafe_sysctls);
        c->eviction_hard = strv_free(c->eviction_hard);
        c->insecure_registries = strv_free(c->insecure_registries);
        c->pinned_images = strv_free(c->pinned_images);
        c->eviction_soft = strv_free(c->eviction_soft);
        c->eviction_soft_grace_period = strv_free(c->eviction_soft_grace_period);
        c->eviction_minimum_reclaim = strv_free(c->eviction_minimum_reclaim);
}

static const char *const runtime_kind_table[_RUNTIME_KIND_MAX] = {
        [RUNTIME_KIND_RUNC] = "runc",
        [RUNTIME_KIND_CRUN] = "crun",
        [RUNTIME_KIND_PATH] = "path",
};

static const char *const container_monitor_table[_CONTAINER_MONITOR_MAX] = {
        [CONTAINER_MONITOR_NANOLET] = "nanolet",
        [CONTAINER_MONITOR_CONMON] = "conmon",
};

static const char *const hairpin_mode_table[_HAIRPIN_MODE_MAX] = {
        [HAIRPIN_MODE_HAIRPIN_VETH] = "hairpin-veth",
        [HAIRPIN_MODE_PROMISCUOUS_BRIDGE] = "promiscuous-bridge",
        [HAIRPIN_MODE_NONE] = "none",
};

static int lookup(const char *const *table, size_t n, const char *s) {
        for (size_t i = 0; s && i < n; i++)
                if (streq(table[i], s))
                        return (int)i;
        return -EINVAL;
}

const char *runtime_kind_to_string(RuntimeKind k) {
        return k >= 0 && k < _RUNTIME_KIND_MAX ? runtime_kind_table[k] : NULL;
}

RuntimeKind runtime_kind_from_string(const char *s) {
        /* "path" is no value of --runtime: a path is given as itself */
        return lookup(runtime_kind_table, RUNTIME_KIND_PATH, s);
}

const char *container_monitor_to_string(ContainerMonitor m) {
        return m >= 0 && m < _CONTAINER_MONITOR_MAX ? container_monitor_table[m] : NULL;
}

ContainerMonitor container_monitor_from_string(const char *s) {
        return lookup(container_monitor_table, _CONTAINER_MONITOR_MAX, s);
}

const char *hairpin_mode_to_string(HairpinMode m) {
        return m >= 0 && m < _HAIRPIN_MODE_MAX ? hairpin_mode_table[m] : NULL;
}

HairpinMode hairpin_mode_from_string(const char *s) {
        return lookup(hairpin_mode_table, _HAIRPIN_MODE_MAX, s);
}

const char *nanolet_config_runtime(const NanoletConfig *c) {
        if (c->runtime == RUNTIME_KIND_PATH && c->runtime_path)
                return c->runtime_path;
        return runtime_kind_to_string(c->runtime == RUNTIME_KIND_PATH ? RUNTIME_KIND_RUNC
                                                                      : c->runtime);
}

RuntimeOptions nanolet_config_runtime_options(const NanoletConfig *c) {
        return (RuntimeOptions){ .runtime = nanolet_config_runtime(c),
                                 .run_dir = c->run_dir,
                                 .max_parallel = (unsigned)c->runtime_max_parallel,
                                 .systemd_cgroup = c->cgroup_driver == CGROUP_DRIVER_SYSTEMD };
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

int nanolet_reserved_add(const char *resource, const char *quantity, int64_t *milli_cpu,
                         int64_t *memory, Error *err) {
        Quantity q;
        if (quantity_parse(quantity, &q) < 0 || q.value < 0)
                return error_set(err, -EINVAL, "\"%s\" is not a quantity", quantity);
        if (streq(resource, "cpu"))
                *milli_cpu = q.milli;
        else if (streq(resource, "memory"))
                *memory = q.value;
        else if (!streq(resource, "ephemeral-storage") && !streq(resource, "pid")) {
                return error_set(err, -EINVAL,
                                 "unknown resource \"%s\" (cpu, memory, "
                                 "ephemeral-storage, pid)",
                                 resource);
        }
        return 0;
}

int nanolet_parse_reserved(const char *s, int64_t *ret_milli_cpu, int64_t *ret_memory, Error *err) {
        _cleanup_free_ char *copy = strdup(s);
        int64_t cpu = 0, mem = 0;
        char *save = NULL;
        size_t n = 0;
        int r;
        if (!copy)
                return -ENOMEM;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(e, '=');
                if (++n > RESERVED_ENTRIES_MAX)
                        return error_set(err, -EINVAL, "more than %d resources",
                                         RESERVED_ENTRIES_MAX);
                if (!eq)
                        return error_set(err, -EINVAL, "\"%s\" is not resource=quantity", e);
                *eq = 0;
                r = nanolet_reserved_add(e, eq + 1, &cpu, &mem, err);
                if (r < 0)
                        return r;
        }
        *ret_milli_cpu = cpu;
        *ret_memory = mem;
        return 0;
}

/* ---- KubeletConfiguration ---- */

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
        if (!kind || kind->type != YAML_NODE_STRING || !streq(kind->str, "KubeletConfiguration"))
                diagnostics_add(diag, DIAG_ERROR, filename, doc->line, doc->column, "kind",
                                "must be \"KubeletConfiguration\"");
        if (!api || api->type != YAML_NODE_STRING ||
            !streq(api->str, "kubelet.config.k8s.io/v1beta1"))
                diagnostics_add(diag, DIAG_ERROR, filename, doc->line, doc->column, "apiVersion",
                                "must be \"kubelet.config.k8s.io/v1beta1\"");

        r = settings_apply_document(c, doc, filename, diag);
        if (r < 0)
                goto finish;
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

/* getopt's option array from the settings table: each option's value is
 * OPTION_BASE + its index in the table. */
#define OPTION_BASE 0x100

static struct option *options_new(void) {
        struct option *o = calloc(settings_table_size + 2, sizeof *o);
        if (!o)
                return NULL;
        size_t n = 0;
        o[n++] = (struct option){ "help", no_argument, NULL, 'h' };
        for (size_t i = 0; i < settings_table_size; i++)
                if (settings_table[i].flag)
                        /* pflag's booleans: a bare flag is true, a value needs "=" */
                        o[n++] = (struct option){ settings_table[i].flag,
                                                  settings_table[i].type == SETTING_BOOL
                                                          ? optional_argument
                                                          : required_argument,
                                                  NULL, OPTION_BASE + (int)i };
        return o;
}

static int load_config_file(NanoletConfig *c, const char *path) {
        Error error = {};
        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        int r = setting_check_value(settings_find_flag("config"), path, &error);
        if (r < 0) {
                _cleanup_free_ char *quoted = setting_value_quote(path);
                log_error("Invalid value %s for --config: %s.", strna(quoted), error.message);
                return r;
        }
        r = nanolet_config_load_file(c, path, &d);
        diagnostics_log(&d);
        if (r < 0) {
                log_error("Invalid configuration file \"%s\".", path);
                return -EINVAL;
        }
        free(c->config_file);
        c->config_file = strdup(path);
        return c->config_file ? 0 : -ENOMEM;
}

static bool is_config_option(int opt) {
        return opt >= OPTION_BASE && (size_t)(opt - OPTION_BASE) < settings_table_size &&
               settings_table[opt - OPTION_BASE].flag &&
               streq(settings_table[opt - OPTION_BASE].flag, "config");
}

/* The file is loaded before any flag so that every flag overrides it,
 * whatever the order on the command line. This first pass parses the same
 * way, so that every spelling the second takes for --config (-config,
 * --config=FILE) loads the file; problems with other flags are left to the
 * second pass to report. */
static int load_config_files(NanoletConfig *c, const struct option *options, int argc,
                             char **argv) {
        char err[512];
        int opt, r = 0;
        optind = 0;
        while (r >= 0 && (opt = getopt_whole(argc, argv, "h", options, true, err, sizeof err)) >= 0)
                if (is_config_option(opt))
                        r = load_config_file(c, optarg);
        return r;
}

int nanolet_config_parse_log_flags(NanoletConfig *c, int argc, char **argv) {
        _cleanup_free_ struct option *options = options_new();
        char err[512];
        int opt;

        if (!options)
                return -ENOMEM;
        optind = 0;
        while ((opt = getopt_whole(argc, argv, "h", options, true, err, sizeof err)) >= 0) {
                if (opt < OPTION_BASE)
                        continue;
                const Setting *s = &settings_table[opt - OPTION_BASE];
                if (streq(s->flag, "v") || streq(s->flag, "logging-format")) {
                        Error error = {};
                        /* a bad value is said by nanolet_config_parse_argv() */
                        (void)s->parse(c, s, optarg, &error);
                }
        }
        return 0;
}

/* Each value was checked against its bounds in the settings table; what is
 * left are kubelet's rules that tie settings together. */
static int check_combination(const NanoletConfig *c) {
        int r;

        if (c->max_parallel_image_pulls > 1 && c->serialize_image_pulls) {
                /* kubelet's validation says the same. */
                log_error("maxParallelImagePulls %lld needs serializeImagePulls false.",
                          (long long)c->max_parallel_image_pulls);
                return -EINVAL;
        }
        if (c->shutdown_grace_period_critical_pods > c->shutdown_grace_period) {
                log_error("shutdownGracePeriodCriticalPods must not exceed "
                          "shutdownGracePeriod (kubelet's rule).");
                return -EINVAL;
        }
        if (c->image_maximum_gc_age != 0 && c->image_maximum_gc_age <= c->image_minimum_gc_age) {
                log_error("Invalid imageMaximumGCAge %" PRIu64 "s: it must be greater than "
                          "imageMinimumGCAge %" PRIu64 "s (kubelet's rule).",
                          (uint64_t)(c->image_maximum_gc_age / USEC_PER_SEC),
                          (uint64_t)(c->image_minimum_gc_age / USEC_PER_SEC));
                return -EINVAL;
        }
        {
                EvictionConfig ec;
                Error err = {};
                r = eviction_config_parse(c->eviction_hard, c->eviction_soft,
                                          c->eviction_soft_grace_period,
                                          c->eviction_minimum_reclaim,
                                          c->eviction_pressure_transition_period, &ec, &err);
                if (r < 0) {
                        log_error("Invalid eviction settings: %s.",
                                  err.message[0] ? err.message : strerror(-r));
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
        return 0;
}

int nanolet_config_parse_argv(NanoletConfig *c, int argc, char **argv) {
        _cleanup_free_ struct option *options = options_new();
        _cleanup_free_ bool *seen = calloc(settings_table_size, sizeof(bool));
        char err[512];
        int r, opt;

        if (!options || !seen)
                return log_oom();

        r = load_config_files(c, options, argc, argv);
        if (r < 0)
                return r;

        optind = 0;
        /* Whole names only, as kubelet's pflag: an abbreviation is unknown. */
        while ((opt = getopt_whole(argc, argv, "h", options, true, err, sizeof err)) >= 0) {
                if (opt == 'h') {
                        settings_print_help(stdout);
                        return 1;
                }
                if (opt < OPTION_BASE) {
                        /* kubelet's own flags are all in the table (accepted or
                         * rejected), so this is a typo or a flag of another tool */
                        log_error("Failed to parse flags: %s; see \"nanolet serve --help\".", err);
                        return -EINVAL;
                }
                size_t i = (size_t)(opt - OPTION_BASE);
                if (is_config_option(opt))
                        continue; /* already loaded */
                r = setting_apply_flag(c, &settings_table[i], optarg, !seen[i]);
                seen[i] = true;
                if (r < 0)
                        return r;
        }
        if (optind < argc) {
                _cleanup_free_ char *quoted = setting_value_quote(argv[optind]);
                log_error("Unexpected argument %s.", strna(quoted));
                return -EINVAL;
        }
        return check_combination(c);
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
