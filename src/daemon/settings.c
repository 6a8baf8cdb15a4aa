/* The settings table and the two parsers (flags, KubeletConfiguration
 * fields) that share it. See settings.h for the contract. */
#include "settings.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "manifest-signature.h"
#include "quantity.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"
#include "yaml-node.h"

/* ---- what a string value may hold ---- */

char *setting_value_quote(const char *value) {
        char buf[64 * 4 + 8];
        size_t n = 0, i = 0;
        for (; value[i] && i < 64; i++) {
                unsigned char ch = (unsigned char)value[i];
                if (ch == '\\' || ch == '"')
                        n += (size_t)snprintf(buf + n, sizeof buf - n, "\\%c", ch);
                else if (ch >= 0x20 && ch < 0x7f)
                        buf[n++] = (char)ch;
                else if (ch == '\n')
                        n += (size_t)snprintf(buf + n, sizeof buf - n, "\\n");
                else if (ch == '\r')
                        n += (size_t)snprintf(buf + n, sizeof buf - n, "\\r");
                else
                        n += (size_t)snprintf(buf + n, sizeof buf - n, "\\x%02x", ch);
        }
        buf[n] = 0;
        return strprintf("\"%s\"%s", buf, value[i] ? "..." : "");
}

/* The rules every kind shares; see SettingCheck. */
static int check_text(const char *value, Error *err) {
        size_t len = strlen(value);
        if (len > SETTING_VALUE_MAX)
                return error_set(err, -EINVAL, "is %zu bytes long, at most %d are accepted", len,
                                 SETTING_VALUE_MAX);
        for (size_t i = 0; i < len;) {
                unsigned char ch = (unsigned char)value[i];
                if (ch < 0x20 || ch == 0x7f) {
                        char hex[8];
                        snprintf(hex, sizeof hex, "0x%02x", ch);
                        return error_set(
                                err, -EINVAL, "holds the control character %s at byte %zu",
                                ch == '\n'   ? "LF (a line break; a YAML block scalar ends in one)"
                                : ch == '\r' ? "CR"
                                : ch == '\t' ? "TAB"
                                : ch == 0x1b ? "ESC"
                                             : hex,
                                i);
                }
                if (ch < 0x80) {
                        i++;
                        continue;
                }
                size_t n = utf8_sequence_length(value + i, len - i);
                /* C1 controls (U+0080..U+009F) act as terminal escapes too */
                if (n == 0 || (n == 2 && ch == 0xc2 && (unsigned char)value[i + 1] < 0xa0))
                        return error_set(err, -EINVAL, "holds %s at byte %zu",
                                         n ? "a C1 control character" : "malformed UTF-8", i);
                i += n;
        }
        return 0;
}

static bool is_ascii_word(const char *value) {
        for (const char *p = value; *p; p++)
                if (*p <= 0x20 || *p >= 0x7f)
                        return false;
        return true;
}

/* RFC 1123 labels joined by dots, as Kubernetes' IsDNS1123Subdomain
 * (letters of either case when any_case: a hostname before lowercasing). */
static bool is_dns_subdomain(const char *value, size_t max, bool any_case) {
        size_t len = strlen(value), label = 0;
        if (len == 0 || len > max)
                return false;
        for (size_t i = 0; i < len; i++) {
                char ch = value[i];
                if (ch == '.') {
                        if (label == 0 || value[i - 1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                             (any_case && ch >= 'A' && ch <= 'Z');
                if (!alnum && (ch != '-' || label == 0))
                        return false;
                if (++label > 63)
                        return false;
        }
        return value[len - 1] != '-';
}

static bool is_ip(const char *value) {
        unsigned char buf[sizeof(struct in6_addr)];
        return inet_pton(AF_INET, value, buf) == 1 || inet_pton(AF_INET6, value, buf) == 1;
}

/* [start, end): an absolute path without "." or ".." components. */
static bool is_absolute_path(const char *start, const char *end) {
        if (start >= end || *start != '/')
                return false;
        for (const char *p = start; p < end;) {
                while (p < end && *p == '/')
                        p++;
                const char *c = p;
                while (p < end && *p != '/')
                        p++;
                size_t n = (size_t)(p - c);
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
        }
        return true;
}

static bool is_cidr(const char *value) {
        const char *slash = strchr(value, '/');
        if (!slash || slash == value || (size_t)(slash - value) >= INET6_ADDRSTRLEN)
                return false;
        char addr[INET6_ADDRSTRLEN];
        memcpy(addr, value, (size_t)(slash - value));
        addr[slash - value] = 0;
        unsigned char buf[sizeof(struct in6_addr)];
        unsigned max = inet_pton(AF_INET, addr, buf) == 1    ? 32
                       : inet_pton(AF_INET6, addr, buf) == 1 ? 128
                                                             : 0;
        unsigned prefix;
        return max && safe_atou(slash + 1, &prefix) >= 0 && prefix <= max;
}

/* RFC 9110 section 5.6.2 token characters. */
static bool is_tchar(char ch) {
        return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
               (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static bool is_http_header(const char *value) {
        const char *p = value;
        while (is_tchar(*p))
                p++;
        if (p == value || *p != ':')
                return false;
        /* the field value: visible ASCII and spaces (check_text refused
         * CR, LF, TAB and NUL already; obs-text is refused too) */
        for (p++; *p; p++)
                if (*p != ' ' && (*p < 0x21 || *p > 0x7e))
                        return false;
        return true;
}

static bool is_host_port(const char *value) {
        if (isempty(value) || strstr(value, "://") || strpbrk(value, "/@"))
                return false;
        return is_ascii_word(value);
}

static bool is_sysctl(const char *value) {
        size_t len = strlen(value);
        if (len == 0 || len > 255)
                return false;
        for (size_t i = 0; i < len; i++) {
                char ch = value[i];
                if (ch == '*' && i == len - 1)
                        break;
                if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || strchr("_-./", ch)))
                        return false;
        }
        return true;
}

static const char *const check_names[_SETTING_CHECK_MAX] = {
        [SETTING_CHECK_TEXT] = "text without control characters",
        [SETTING_CHECK_WORD] = "printable ASCII without spaces",
        [SETTING_CHECK_PATH] = "an absolute path without \".\" or \"..\" components",
        [SETTING_CHECK_PATH_LIST] = "absolute paths separated by ':'",
        [SETTING_CHECK_DNS_DOMAIN] = "a lowercase RFC 1123 DNS subdomain (at most 253 bytes)",
        [SETTING_CHECK_NODE_NAME] = "an RFC 1123 DNS subdomain of at most 63 bytes",
        [SETTING_CHECK_IP] = "an IPv4 or IPv6 address",
        [SETTING_CHECK_CIDR] = "an IPv4 or IPv6 CIDR such as 10.86.0.0/16",
        [SETTING_CHECK_URL] = "an http:// or https:// URL in printable ASCII",
        [SETTING_CHECK_HTTP_HEADER] = "'Name: value', an RFC 9110 token and printable ASCII",
        [SETTING_CHECK_HOST_PORT] = "HOST[:PORT] without a scheme or path",
        [SETTING_CHECK_SYSCTL] = "a sysctl name, or a prefix ending in *",
};

const char *setting_check_to_string(SettingCheck k) {
        return k >= 0 && k < _SETTING_CHECK_MAX ? check_names[k] : NULL;
}

/* Whether a non-empty value that passed check_text() has the syntax of k. */
static bool value_has_syntax(SettingCheck k, const char *value) {
        switch (k) {
        case SETTING_CHECK_TEXT:
                break;
        case SETTING_CHECK_WORD:
                return is_ascii_word(value);
        case SETTING_CHECK_PATH:
                return is_absolute_path(value, value + strlen(value));
        case SETTING_CHECK_PATH_LIST:
                for (const char *p = value;; p++) {
                        const char *e = strchrnul(p, ':');
                        if (!is_absolute_path(p, e))
                                return false;
                        if (!*e)
                                break;
                        p = e;
                }
                break;
        case SETTING_CHECK_DNS_DOMAIN:
                return is_dns_subdomain(value, 253, false);
        case SETTING_CHECK_NODE_NAME:
                return is_dns_subdomain(value, 63, true);
        case SETTING_CHECK_IP:
                return is_ip(value);
        case SETTING_CHECK_CIDR:
                return is_cidr(value);
        case SETTING_CHECK_URL:
                return (startswith(value, "http://") || startswith(value, "https://")) &&
                       is_ascii_word(value);
        case SETTING_CHECK_HTTP_HEADER:
                return is_http_header(value);
        case SETTING_CHECK_HOST_PORT:
                return is_host_port(value);
        case SETTING_CHECK_SYSCTL:
                return is_sysctl(value);
        case _SETTING_CHECK_MAX:
        case _SETTING_CHECK_INVALID:
                break;
        }
        return true;
}

int setting_check_value(const Setting *s, const char *value, Error *err) {
        int r = check_text(value, err);
        if (r < 0)
                return r;
        if (isempty(value)) {
                if (s->flags & SETTING_EMPTY_ALLOWED)
                        return 0;
                if (s->check != SETTING_CHECK_TEXT)
                        return error_set(err, -EINVAL, "must not be empty: expected %s",
                                         check_names[s->check]);
                return 0;
        }
        if (!value_has_syntax(s->check, value)) {
                _cleanup_free_ char *q = setting_value_quote(value);
                return error_set(err, -EINVAL, "%s is not %s", strna(q), check_names[s->check]);
        }
        return 0;
}

/* ---- custom parsers ---- */

static int parse_verbosity(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        char *end;
        errno = 0;
        long v = strtol(value, &end, 10);
        (void)s;
        if (isempty(value) || *end || errno || v < 0 || v > 10)
                return error_set(err, -EINVAL, "expected a level in 0..10");
        c->verbosity = (int)v;
        return 0;
}

static int parse_logging_format(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        LogFormat format;
        (void)s;
        if (log_format_from_string(value, &format) < 0)
                return error_set(err, -EINVAL, "expected text or json");
        c->log_json = format == LOG_FORMAT_JSON;
        return 0;
}

static int check_signature_format(NanoletConfig *c, const Setting *s, const char *value,
                                  Error *err) {
        (void)c;
        (void)s;
        if (manifest_signature_format_from_string(value) < 0)
                return error_set(err, -EINVAL, "expected cosign, sigstore-bundle or minisign");
        return 0;
}

static int parse_pull_override(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        (void)s;
        if (!streq(value, "never") && !streq(value, ""))
                return error_set(err, -EINVAL, "the only override is \"never\" (no pulls at all)");
        c->image_pull_never = streq(value, "never");
        return 0;
}

static int parse_cgroup_driver(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        CgroupDriver d = cgroup_driver_from_string(value);
        (void)s;
        if (d < 0)
                return error_set(err, -EINVAL, "expected cgroupfs or systemd");
        c->cgroup_driver = d;
        return 0;
}

static int parse_hairpin_mode(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        HairpinMode m = hairpin_mode_from_string(value);
        (void)s;
        if (m < 0)
                return error_set(err, -EINVAL, "expected hairpin-veth, promiscuous-bridge or none");
        c->hairpin_mode = m;
        return 0;
}

static int parse_runtime(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        RuntimeKind k = runtime_kind_from_string(value);
        char *path = NULL;
        (void)s;
        if (k < 0) {
                if (!is_absolute_path(value, value + strlen(value)))
                        return error_set(err, -EINVAL, "expected runc, crun or an absolute path");
                path = strdup(value);
                if (!path)
                        return -ENOMEM;
                k = RUNTIME_KIND_PATH;
        }
        free(c->runtime_path);
        c->runtime_path = path;
        c->runtime = k;
        return 0;
}

static int parse_container_monitor(NanoletConfig *c, const Setting *s, const char *value,
                                   Error *err) {
        ContainerMonitor m = container_monitor_from_string(value);
        (void)s;
        if (m < 0)
                return error_set(err, -EINVAL, "expected nanolet or conmon");
        c->container_monitor = m;
        return 0;
}

/* ---- the table ---- */

#define OFF(m) offsetof(NanoletConfig, m)

/* Honoured settings: H(flag, key, type, member, default, metavar, help, extra...) */
#define H(fl, k, t, m, def, mv, h, ...)                                                            \
        {                                                                                          \
                .flag = fl, .key = k, .type = t, .disposition = SETTING_HONOURED,                  \
                .offset = OFF(m), .value = def, .metavar = mv, .help = h, __VA_ARGS__              \
        }
/* Ignored kubelet settings: the type says how a flag takes its value. */
#define IGN(fl, k, t, why)                                                                         \
        { .flag = fl, .key = k, .type = t, .disposition = SETTING_IGNORED, .help = why }
/* Rejected kubelet settings: only kubelet's default value is accepted. */
#define REJ(fl, k, t, def, why)                                                                    \
        {                                                                                          \
                .flag = fl, .key = k, .type = t, .disposition = SETTING_REJECTED, .value = def,    \
                .help = why                                                                        \
        }

#define NO_APISERVER "nanolet has no apiserver"
#define NO_SERVER                                                                                  \
        "nanolet has no authenticated kubelet API (port 10250); its read-only API is "             \
        "--address/--read-only-port"
#define NO_CRI "nanolet runs runc or crun itself, not through a CRI runtime (see --runtime)"
#define NO_MANAGER "nanolet has no CPU, memory, topology or device manager"
#define NO_TLS "nanolet serves no TLS"
#define LOGGING_FLAGS "set -v and --logging-format on the command line"

const Setting settings_table[] = {
        /* ---- the agent itself ---- */
        { .flag = "config",
          .type = SETTING_STRING,
          .disposition = SETTING_HONOURED,
          .offset = OFF(config_file),
          .check = SETTING_CHECK_TEXT,
          .metavar = "FILE",
          .help = "KubeletConfiguration file (kubelet.config.k8s.io/v1beta1); flags override "
                  "it" },
        H("v", NULL, SETTING_CUSTOM, verbosity, NULL, "N", "log verbosity (4 and more: debug)",
          .parse = parse_verbosity, .shown_default = "0"),
        H("logging-format", NULL, SETTING_CUSTOM, log_json, NULL, "text|json",
          "klog's text lines or kubelet's JSON lines", .parse = parse_logging_format,
          .shown_default = "text"),
        H("dry-run", NULL, SETTING_BOOL, dry_run, "false", NULL,
          "log the pod events, touch no container"),
        H("stop-pods-on-exit", NULL, SETTING_BOOL, stop_pods_on_exit, "false", NULL,
          "stop all pods when the agent is stopped (otherwise they keep running and are "
          "adopted at the next start)"),

        /* ---- manifest sources ---- */
        H("pod-manifest-path", "staticPodPath", SETTING_STRING, pod_manifest_path,
          "/etc/kubernetes/manifests", "PATH", "manifest directory or file (empty: none)",
          .check = SETTING_CHECK_PATH, .flags = SETTING_EMPTY_ALLOWED),
        H("manifest-url", "staticPodURL", SETTING_STRING, manifest_url, NULL, "URL",
          "also read pods from this URL", .check = SETTING_CHECK_URL,
          .flags = SETTING_EMPTY_ALLOWED),
        H("manifest-url-header", "staticPodURLHeader", SETTING_HEADERS, manifest_url_headers, NULL,
          "'K: V'", "HTTP header for the URL (repeatable; the flag replaces the file's headers)",
          .check = SETTING_CHECK_HTTP_HEADER, .flags = SETTING_REPEATABLE),
        H("manifest-url-public-key", "manifestURLPublicKeys", SETTING_STRV,
          manifest_url_public_keys, NULL, "FILE",
          "trusted public key (ECDSA P-256 PEM, or a minisign key) the URL's body must be signed "
          "with; repeatable, any one of them verifies (none: bodies are not verified)",
          .flags = SETTING_REPEATABLE, .check = SETTING_CHECK_PATH),
        H("manifest-url-signature-format", "manifestURLSignatureFormat", SETTING_STRING,
          manifest_url_signature_format, "cosign", "FORMAT",
          "signature format: cosign (URL.sig), sigstore-bundle (URL.sigstore.json) or minisign "
          "(URL.minisig)",
          .check = SETTING_CHECK_WORD, .parse = check_signature_format),
        H("manifest-url-signature-url", "manifestURLSignatureURL", SETTING_STRING,
          manifest_url_signature_url, NULL, "URL",
          "where the signature is fetched from, fresh with every new body",
          .shown_default = "the URL and the format's suffix", .check = SETTING_CHECK_URL,
          .flags = SETTING_EMPTY_ALLOWED),
        H("file-check-frequency", "fileCheckFrequency", SETTING_DURATION, file_check_frequency,
          "20s", "D", "full rescan period of the manifest directory",
          .flags = SETTING_FILE_ZERO_IS_DEFAULT, .min = USEC_PER_SEC,
          .max = 24 * 3600 * USEC_PER_SEC),
        H("http-check-frequency", "httpCheckFrequency", SETTING_DURATION, http_check_frequency,
          "20s", "D", "polling period of the manifest URL", .flags = SETTING_FILE_ZERO_IS_DEFAULT,
          .min = USEC_PER_SEC, .max = 24 * 3600 * USEC_PER_SEC),
        H("manifest-url-max-backoff", NULL, SETTING_DURATION, manifest_url_max_backoff, "5m", "D",
          "longest wait between failed polls of the manifest URL, and the longest Retry-After "
          "honoured",
          .min = USEC_PER_SEC, .max = 24 * 3600 * USEC_PER_SEC),
        H("sync-frequency", "syncFrequency", SETTING_DURATION, sync_frequency, "1m", "D",
          "every pod is synced at least this often, besides on each event and change the "
          "one-second relist sees",
          .flags = SETTING_FILE_ZERO_IS_DEFAULT, .min = USEC_PER_SEC,
          .max = 24 * 3600 * USEC_PER_SEC),
        H("max-manifest-size", NULL, SETTING_QUANTITY, max_manifest_size, "10Mi", "SIZE",
          "largest manifest accepted"),
        H("allow-insecure-manifests", NULL, SETTING_BOOL, allow_insecure_manifests, "false", NULL,
          "accept manifests not owned by root or writable by others"),
        H("hostname-override", NULL, SETTING_STRING, hostname_override, NULL, "NAME", "node name",
          .shown_default = "the lowercase hostname", .check = SETTING_CHECK_NODE_NAME),

        /* ---- files on the node ---- */
        H("root-dir", NULL, SETTING_STRING, root_dir, "/var/lib/nanolet", "DIR",
          "agent state (images, pod records)", .check = SETTING_CHECK_PATH),
        H("run-dir", NULL, SETTING_STRING, run_dir, "/run/nanolet", "DIR",
          "runtime state (pod status files, sockets)", .check = SETTING_CHECK_PATH),
        H("pod-logs-dir", "podLogsDir", SETTING_STRING, pod_logs_dir, "/var/log/pods", "DIR",
          "container logs", .check = SETTING_CHECK_PATH),
        H("container-logs-dir", NULL, SETTING_STRING, container_logs_dir, "/var/log/containers",
          "DIR", "log symlinks for log shippers", .check = SETTING_CHECK_PATH),
        H("container-log-max-size", "containerLogMaxSize", SETTING_QUANTITY, container_log_max_size,
          "10Mi", "SIZE", "a running container's log is rotated once it reaches this size"),
        H("container-log-max-files", "containerLogMaxFiles", SETTING_INT, container_log_max_files,
          "5", "N", "log files kept per container, the live one included (older ones gzipped)",
          .min = 2, .max = 1000),
        H("container-log-max-workers", "containerLogMaxWorkers", SETTING_INT,
          container_log_max_workers, "1", "N", "log rotations done at once", .min = 1, .max = 64),
        H("container-log-monitor-interval", "containerLogMonitorInterval", SETTING_DURATION,
          container_log_monitor_interval, "10s", "D", "how often log sizes are checked",
          .min = 100 * USEC_PER_MSEC, .max = 3600 * USEC_PER_SEC),

        /* ---- runtime ---- */
        H("runtime", NULL, SETTING_CUSTOM, runtime, "runc", "runc|crun|PATH", "OCI runtime",
          .parse = parse_runtime),
        /* A flag only: kubelet's strict decoding would refuse the key in a
         * KubeletConfiguration file shared with kubelet. */
        H("container-monitor", NULL, SETTING_CUSTOM, container_monitor, "nanolet", "nanolet|conmon",
          "the process that watches each container: nanolet-monitor (installed next to the agent) "
          "or conmon in PATH; both keep the same files, so either adopts the other's containers",
          .parse = parse_container_monitor),
        H("runtime-max-parallel", NULL, SETTING_INT, runtime_max_parallel, NULL, "N",
          "runtime and monitor processes (runc, the container monitor) at once", .min = 1,
          .max = 1024, .shown_default = "2 per CPU"),
        H("seccomp-default", "seccompDefault", SETTING_BOOL, seccomp_default, "true", "BOOL",
          "RuntimeDefault seccomp profile for containers that name none (kubelet's default is "
          "false; nanolet confines by default)"),
        H("allowed-unsafe-sysctls", "allowedUnsafeSysctls", SETTING_STRV, allowed_unsafe_sysctls,
          NULL, "S[,S]",
          "unsafe sysctls (or patterns ending in *) pods may set, beyond Kubernetes' safe set",
          .flags = SETTING_REPEATABLE, .check = SETTING_CHECK_SYSCTL),
        H(NULL, "shutdownGracePeriod", SETTING_DURATION, shutdown_grace_period, "0s", NULL,
          "accepted and validated, not honoured: graceful node shutdown needs systemd-logind; a "
          "non-zero value is warned about at start",
          .flags = SETTING_ZERO_ALLOWED, .min = USEC_PER_SEC, .max = 24 * 3600 * USEC_PER_SEC),
        H(NULL, "shutdownGracePeriodCriticalPods", SETTING_DURATION,
          shutdown_grace_period_critical_pods, "0s", NULL,
          "the part of shutdownGracePeriod kept for critical pods", .flags = SETTING_ZERO_ALLOWED,
          .min = USEC_PER_SEC, .max = 24 * 3600 * USEC_PER_SEC),

        /* ---- cgroups and resources ---- */
        H("cgroup-driver", "cgroupDriver", SETTING_CUSTOM, cgroup_driver, "cgroupfs",
          "cgroupfs|systemd",
          "systemd only where systemd is PID 1: the agent refuses to start otherwise",
          .parse = parse_cgroup_driver),
        H("cgroup-root", "cgroupRoot", SETTING_STRING, cgroup_root, "/", "PATH",
          "parent of the kubepods cgroup hierarchy", .check = SETTING_CHECK_PATH),
        H("cpu-cfs-quota", "cpuCFSQuota", SETTING_BOOL, cpu_cfs_quota, "true", "BOOL",
          "CFS quota from cpu limits"),
        H("kube-reserved", "kubeReserved", SETTING_RESERVED, kube_reserved_milli_cpu, NULL,
          "cpu=Q,memory=Q",
          "kept from the node's capacity: the rest is allocatable (ephemeral-storage and pid "
          "accepted, not counted)",
          .check = SETTING_CHECK_WORD),
        H("system-reserved", "systemReserved", SETTING_RESERVED, system_reserved_milli_cpu, NULL,
          "cpu=Q,memory=Q", "as kubeReserved, for the system", .check = SETTING_CHECK_WORD),
        H("max-pods", "maxPods", SETTING_INT, max_pods, "110", "N",
          "pods run at once; more wait (Pending, OutOfpods)", .min = 1, .max = 100000,
          .flags = SETTING_FILE_ZERO_IS_DEFAULT),
        H("pod-max-pids", "podPidsLimit", SETTING_INT, pod_pids_limit, "-1", "N",
          "pids.max of each pod's cgroup (-1: none)", .min = -1, .max = INT32_MAX),
        /* nanolet's older spelling of --pod-max-pids */
        H("pod-pids-limit", NULL, SETTING_INT, pod_pids_limit, NULL, "N",
          "the same as --pod-max-pids", .min = -1, .max = INT32_MAX),

        /* ---- networking ---- */
        H("cni-conf-dir", NULL, SETTING_STRING, cni_conf_dir, "/etc/cni/net.d", "DIR",
          "CNI network configurations", .check = SETTING_CHECK_PATH),
        H("cni-bin-dir", NULL, SETTING_STRING, cni_bin_dir, "/opt/cni/bin:/usr/lib/cni", "PATH",
          "CNI plugin directories", .check = SETTING_CHECK_PATH_LIST),
        H("cni-max-parallel", NULL, SETTING_INT, cni_max_parallel, NULL, "N",
          "CNI operations (ADD, DEL, CHECK of a pod's network) at once; more wait in the agent",
          .min = 1, .max = 1024, .shown_default = "1 per CPU, at least 2"),
        H("cni-plugin-timeout", NULL, SETTING_DURATION, cni_plugin_timeout, "2m", "D",
          "one CNI plugin's run, from its start (not its wait for a slot); then it is killed and "
          "the operation fails",
          .min = USEC_PER_SEC, .max = 3600 * USEC_PER_SEC),
        H("pod-cidr", "podCIDR", SETTING_STRING, pod_cidr, "10.86.0.0/16", "CIDR",
          "pod network of the built-in CNI configuration", .check = SETTING_CHECK_CIDR),
        H("cluster-dns", "clusterDNS", SETTING_STRV, cluster_dns, NULL, "IP[,IP]",
          "DNS servers of pods with dnsPolicy ClusterFirst", .flags = SETTING_REPEATABLE,
          .check = SETTING_CHECK_IP),
        H("cluster-domain", "clusterDomain", SETTING_STRING, cluster_domain, "cluster.local", "D",
          "DNS search domain of pods (empty: none)", .check = SETTING_CHECK_DNS_DOMAIN,
          .flags = SETTING_EMPTY_ALLOWED),
        H("resolv-conf", "resolvConf", SETTING_STRING, resolv_conf, "/etc/resolv.conf", "FILE",
          "host resolver file used for dnsPolicy Default (empty: none)",
          .check = SETTING_CHECK_PATH, .flags = SETTING_EMPTY_ALLOWED),
        H("node-ip", NULL, SETTING_STRV, node_ips, NULL, "IP[,IP]", "status.hostIP",
          .shown_default = "the default route's address", .check = SETTING_CHECK_IP),
        H("hairpin-mode", "hairpinMode", SETTING_CUSTOM, hairpin_mode, "hairpin-veth", "MODE",
          "hairpin-veth, promiscuous-bridge or none; the built-in bridge network always uses "
          "hairpin-veth (another value is warned about at start)",
          .parse = parse_hairpin_mode),

        /* ---- HTTP API ---- */
        H("address", "address", SETTING_STRING, address, "127.0.0.1", "IP",
          "address of the read-only API", .check = SETTING_CHECK_IP),
        H("read-only-port", "readOnlyPort", SETTING_INT, read_only_port, "10255", "N",
          "read-only API (GET /pods, /healthz, /metrics, /stats/summary); 0: off", .min = 0,
          .max = 65535),
        H("healthz-bind-address", "healthzBindAddress", SETTING_STRING, healthz_bind_address,
          "127.0.0.1", "IP", "address of the health endpoint", .check = SETTING_CHECK_IP),
        H("healthz-port", "healthzPort", SETTING_INT, healthz_port, "10248", "N",
          "GET /healthz; 0: off", .min = 0, .max = 65535),

        /* ---- images ---- */
        H("image-credential-file", NULL, SETTING_STRING, image_credential_file,
          "/var/lib/nanolet/config.json", "FILE", "registry credentials (docker config.json)",
          .check = SETTING_CHECK_PATH),
        H("registries-conf", NULL, SETTING_STRING, registries_conf,
          "/etc/containers/registries.conf", "FILE", "mirrors, blocked and insecure registries",
          .check = SETTING_CHECK_PATH),
        H("registry-certs-dir", NULL, SETTING_STRING, registry_certs_dir, "/etc/containers/certs.d",
          "DIR", "per-registry CAs and client certificates", .check = SETTING_CHECK_PATH),
        H("insecure-registry", NULL, SETTING_STRV, insecure_registries, NULL, "HOST[:PORT]",
          "allow plain HTTP / unverified TLS (repeatable)", .flags = SETTING_REPEATABLE,
          .check = SETTING_CHECK_HOST_PORT),
        H("serialize-image-pulls", "serializeImagePulls", SETTING_BOOL, serialize_image_pulls,
          "true", "BOOL", "one registry pull at a time"),
        H("max-parallel-image-pulls", "maxParallelImagePulls", SETTING_INT,
          max_parallel_image_pulls, NULL, "N", "pulls at once when serializeImagePulls is false",
          .min = 1, .max = 100, .shown_default = "no bound"),
        H("image-pull-policy-override", NULL, SETTING_CUSTOM, image_pull_never, NULL, "never",
          "no registry pull at all (appliances)", .parse = parse_pull_override),
        H("image-gc-high-threshold", "imageGCHighThresholdPercent", SETTING_INT,
          image_gc_high_threshold, "85", "PCT",
          "image GC starts above this image filesystem use (100: off)", .min = 0, .max = 100),
        H("image-gc-low-threshold", "imageGCLowThresholdPercent", SETTING_INT,
          image_gc_low_threshold, "80", "PCT", "image GC frees down to this use", .min = 0,
          .max = 100),
        H("image-minimum-gc-age", "imageMinimumGCAge", SETTING_DURATION, image_minimum_gc_age, "2m",
          "D", "images stored more recently are never removed by image GC",
          .flags = SETTING_FILE_ZERO_IS_DEFAULT | SETTING_ZERO_ALLOWED),
        H("image-maximum-gc-age", "imageMaximumGCAge", SETTING_DURATION, image_maximum_gc_age, "0s",
          "D", "an image unused for longer is removed by image GC (0: off)",
          .flags = SETTING_ZERO_ALLOWED),
        H("pinned-images", "pinnedImages", SETTING_STRV, pinned_images, NULL, "REF[,REF]",
          "images image GC never removes (nanolet's own key)", .flags = SETTING_REPEATABLE,
          .check = SETTING_CHECK_WORD),

        /* ---- eviction ---- */
        H("eviction-hard", "evictionHard", SETTING_EVICTION, eviction_hard,
          "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<"
          "15%",
          "S<V[,S<V]", "hard eviction thresholds (replace the defaults)",
          .check = SETTING_CHECK_WORD),
        H("eviction-soft", "evictionSoft", SETTING_EVICTION, eviction_soft, NULL, "S<V[,S<V]",
          "soft eviction thresholds", .check = SETTING_CHECK_WORD),
        H("eviction-soft-grace-period", "evictionSoftGracePeriod", SETTING_SIGNAL_MAP,
          eviction_soft_grace_period, NULL, "S=D[,S=D]",
          "how long a soft threshold must hold (required for each)", .check = SETTING_CHECK_WORD),
        H("eviction-minimum-reclaim", "evictionMinimumReclaim", SETTING_SIGNAL_MAP,
          eviction_minimum_reclaim, NULL, "S=V[,S=V]", "reclaim beyond the threshold",
          .check = SETTING_CHECK_WORD),
        H("eviction-pressure-transition-period", "evictionPressureTransitionPeriod",
          SETTING_DURATION, eviction_pressure_transition_period, "5m", "D",
          "a pressure condition stays this long after its last threshold cleared",
          .flags = SETTING_FILE_ZERO_IS_DEFAULT | SETTING_ZERO_ALLOWED),
        H("evict-static-pods", "evictStaticPods", SETTING_BOOL, evict_static_pods, "false", "BOOL",
          "under node pressure, evict pods outside the system-node-critical and "
          "system-cluster-critical classes in kubelet's order and start them again once the "
          "pressure is over (kubelet never evicts a static pod; nanolet's own key)"),

        /* ---- kubelet's, rejected: nanolet cannot keep their promise ---- */
        REJ("runonce", "runOnce", SETTING_BOOL, "false",
            "nanolet is a daemon; run `nanolet validate` to check manifests once"),

        /* ---- kubelet's, accepted and ignored (one warning each) ---- */
        IGN("kubeconfig", NULL, SETTING_STRING, NO_APISERVER),
        IGN("bootstrap-kubeconfig", NULL, SETTING_STRING, NO_APISERVER),
        IGN("config-dir", NULL, SETTING_STRING,
            "nanolet reads one --config file; merge drop-ins into it"),
        IGN("cert-dir", NULL, SETTING_STRING, NO_TLS),
        IGN("cloud-provider", NULL, SETTING_STRING, NO_APISERVER),
        IGN("cloud-config", NULL, SETTING_STRING, NO_APISERVER),
        IGN("node-labels", NULL, SETTING_STRING, "nanolet registers no Node object"),
        IGN("lock-file", NULL, SETTING_STRING, "nanolet holds its own lock in --run-dir"),
        IGN("exit-on-lock-contention", NULL, SETTING_BOOL,
            "nanolet holds its own lock in --run-dir"),
        IGN("pod-infra-container-image", NULL, SETTING_STRING,
            "nanolet's pods have no pause container (the network namespace is pinned)"),
        IGN("image-credential-provider-config", NULL, SETTING_STRING,
            "credential provider plugins are not supported; use --image-credential-file"),
        IGN("image-credential-provider-bin-dir", NULL, SETTING_STRING,
            "credential provider plugins are not supported; use --image-credential-file"),
        IGN("runtime-cgroups", NULL, SETTING_STRING, NO_CRI),
        IGN("minimum-container-ttl-duration", NULL, SETTING_DURATION,
            "removed from kubelet; nanolet keeps the last exited container of each"),
        IGN("maximum-dead-containers-per-container", NULL, SETTING_INT,
            "removed from kubelet; nanolet keeps the last exited container of each"),
        IGN("maximum-dead-containers", NULL, SETTING_INT,
            "removed from kubelet; nanolet keeps the last exited container of each"),
        IGN("register-schedulable", NULL, SETTING_BOOL, NO_APISERVER),
        IGN("keep-terminated-pod-volumes", NULL, SETTING_BOOL,
            "nanolet removes a pod's volumes when the pod is removed"),
        IGN("experimental-mounter-path", NULL, SETTING_STRING, "nanolet mounts volumes itself"),
        IGN("experimental-allocatable-ignore-eviction", NULL, SETTING_BOOL,
            "allocatable is capacity minus kubeReserved and systemReserved"),
        IGN("vmodule", NULL, SETTING_STRING, "nanolet has one verbosity, -v"),
        IGN("log-flush-frequency", NULL, SETTING_DURATION, "nanolet writes log lines unbuffered"),
        IGN("log-json-split-stream", NULL, SETTING_BOOL, "nanolet logs to stderr only"),
        IGN("log-json-info-buffer-size", NULL, SETTING_STRING,
            "nanolet writes log lines unbuffered"),
        IGN("log-text-split-stream", NULL, SETTING_BOOL, "nanolet logs to stderr only"),
        IGN("log-text-info-buffer-size", NULL, SETTING_STRING,
            "nanolet writes log lines unbuffered"),
        IGN("enable-server", "enableServer", SETTING_BOOL, NO_SERVER),
        IGN("port", "port", SETTING_INT, NO_SERVER),
        IGN("tls-cert-file", "tlsCertFile", SETTING_STRING, NO_TLS),
        IGN("tls-private-key-file", "tlsPrivateKeyFile", SETTING_STRING, NO_TLS),
        IGN("tls-cipher-suites", "tlsCipherSuites", SETTING_STRV, NO_TLS),
        IGN(NULL, "tlsCurvePreferences", SETTING_STRV, NO_TLS),
        IGN("tls-min-version", "tlsMinVersion", SETTING_STRING, NO_TLS),
        IGN("rotate-certificates", "rotateCertificates", SETTING_BOOL, NO_APISERVER),
        IGN("rotate-server-certificates", "serverTLSBootstrap", SETTING_BOOL, NO_APISERVER),
        IGN(NULL, "authentication", SETTING_OBJECT, NO_SERVER),
        IGN("anonymous-auth", NULL, SETTING_BOOL, NO_SERVER),
        IGN("authentication-token-webhook", NULL, SETTING_BOOL, NO_SERVER),
        IGN("authentication-token-webhook-cache-ttl", NULL, SETTING_DURATION, NO_SERVER),
        IGN("client-ca-file", NULL, SETTING_STRING, NO_SERVER),
        IGN(NULL, "authorization", SETTING_OBJECT, NO_SERVER),
        IGN("authorization-mode", NULL, SETTING_STRING, NO_SERVER),
        IGN("authorization-webhook-cache-authorized-ttl", NULL, SETTING_DURATION, NO_SERVER),
        IGN("authorization-webhook-cache-unauthorized-ttl", NULL, SETTING_DURATION, NO_SERVER),
        IGN("registry-qps", "registryPullQPS", SETTING_INT,
            "pulls are bounded by count (serializeImagePulls, maxParallelImagePulls), not rate"),
        IGN("registry-burst", "registryBurst", SETTING_INT,
            "pulls are bounded by count (serializeImagePulls, maxParallelImagePulls), not rate"),
        IGN(NULL, "imagePullCredentialsVerificationPolicy", SETTING_STRING,
            "nanolet has no pull secrets to verify"),
        IGN(NULL, "preloadedImagesVerificationAllowlist", SETTING_STRV,
            "nanolet has no pull secrets to verify"),
        IGN("event-qps", "eventRecordQPS", SETTING_INT,
            "nanolet records events locally, not through an apiserver"),
        IGN("event-burst", "eventBurst", SETTING_INT,
            "nanolet records events locally, not through an apiserver"),
        IGN("enable-debugging-handlers", "enableDebuggingHandlers", SETTING_BOOL, NO_SERVER),
        IGN("contention-profiling", "enableContentionProfiling", SETTING_BOOL,
            "nanolet has no profiling endpoint"),
        IGN("oom-score-adj", "oomScoreAdj", SETTING_INT,
            "set the agent's OOMScoreAdjust in its service unit"),
        IGN("streaming-connection-idle-timeout", "streamingConnectionIdleTimeout", SETTING_DURATION,
            "nanolet has no streaming server (exec and logs are local)"),
        IGN("node-status-update-frequency", "nodeStatusUpdateFrequency", SETTING_DURATION,
            NO_APISERVER),
        IGN(NULL, "nodeStatusReportFrequency", SETTING_DURATION, NO_APISERVER),
        IGN(NULL, "nodeLeaseDurationSeconds", SETTING_INT, NO_APISERVER),
        IGN("minimum-image-ttl-duration", NULL, SETTING_DURATION,
            "removed from kubelet; use --image-minimum-gc-age"),
        IGN("volume-stats-agg-period", "volumeStatsAggPeriod", SETTING_DURATION,
            "volume usage is measured at each stats request"),
        IGN("kubelet-cgroups", "kubeletCgroups", SETTING_STRING,
            "put the agent in a cgroup with its service manager"),
        IGN("system-cgroups", "systemCgroups", SETTING_STRING,
            "nanolet does not move system processes"),
        IGN("cgroups-per-qos", "cgroupsPerQOS", SETTING_BOOL,
            "nanolet always builds kubelet's QoS cgroup hierarchy"),
        IGN("cpu-manager-policy", "cpuManagerPolicy", SETTING_STRING, NO_MANAGER),
        IGN(NULL, "singleProcessOOMKill", SETTING_BOOL,
            "cgroup v1 hosts kill processes singly; v2 groups are not configurable yet"),
        IGN("cpu-manager-policy-options", "cpuManagerPolicyOptions", SETTING_OBJECT, NO_MANAGER),
        IGN("cpu-manager-reconcile-period", "cpuManagerReconcilePeriod", SETTING_DURATION,
            NO_MANAGER),
        IGN(NULL, "draManagerReconcilePeriod", SETTING_DURATION, NO_MANAGER),
        IGN("memory-manager-policy", "memoryManagerPolicy", SETTING_STRING, NO_MANAGER),
        IGN("topology-manager-policy", "topologyManagerPolicy", SETTING_STRING, NO_MANAGER),
        IGN("topology-manager-scope", "topologyManagerScope", SETTING_STRING, NO_MANAGER),
        IGN("topology-manager-policy-options", "topologyManagerPolicyOptions", SETTING_OBJECT,
            NO_MANAGER),
        IGN("qos-reserved", "qosReserved", SETTING_OBJECT, NO_MANAGER),
        IGN("runtime-request-timeout", "runtimeRequestTimeout", SETTING_DURATION,
            "runtime calls run asynchronously with their own timeouts"),
        IGN("cpu-cfs-quota-period", "cpuCFSQuotaPeriod", SETTING_DURATION,
            "the quota period is the kernel's 100ms"),
        IGN("node-status-max-images", "nodeStatusMaxImages", SETTING_INT, NO_APISERVER),
        IGN("max-open-files", "maxOpenFiles", SETTING_INT,
            "set LimitNOFILE in the agent's service unit"),
        IGN("kube-api-content-type", "contentType", SETTING_STRING, NO_APISERVER),
        IGN("kube-api-qps", "kubeAPIQPS", SETTING_INT, NO_APISERVER),
        IGN("kube-api-burst", "kubeAPIBurst", SETTING_INT, NO_APISERVER),
        IGN("eviction-max-pod-grace-period", "evictionMaxPodGracePeriod", SETTING_INT,
            "a pod evicted on a soft threshold is given its own grace period"),
        IGN(NULL, "mergeDefaultEvictionSettings", SETTING_BOOL,
            "evictionHard replaces the defaults, kubelet's default behaviour"),
        IGN("pods-per-core", "podsPerCore", SETTING_INT, "use --max-pods"),
        IGN("enable-controller-attach-detach", "enableControllerAttachDetach", SETTING_BOOL,
            NO_APISERVER),
        IGN("protect-kernel-defaults", "protectKernelDefaults", SETTING_BOOL,
            "nanolet neither checks nor changes kernel tunables"),
        IGN("make-iptables-util-chains", "makeIPTablesUtilChains", SETTING_BOOL,
            "the CNI plugins own the iptables rules"),
        IGN("iptables-masquerade-bit", "iptablesMasqueradeBit", SETTING_INT,
            "no effect in kubelet either"),
        IGN("iptables-drop-bit", "iptablesDropBit", SETTING_INT, "no effect in kubelet either"),
        IGN("feature-gates", "featureGates", SETTING_OBJECT, "nanolet has no feature gates"),
        IGN("fail-swap-on", "failSwapOn", SETTING_BOOL,
            "nanolet starts with swap on; containers get no swap limit"),
        IGN(NULL, "memorySwap", SETTING_OBJECT,
            "nanolet starts with swap on; containers get no swap limit"),
        IGN(NULL, "configMapAndSecretChangeDetectionStrategy", SETTING_STRING,
            "local ConfigMap and Secret documents are read with the manifests"),
        IGN("reserved-cpus", "reservedSystemCPUs", SETTING_STRING, NO_MANAGER),
        IGN("show-hidden-metrics-for-version", "showHiddenMetricsForVersion", SETTING_STRING,
            "nanolet hides no metrics"),
        IGN("system-reserved-cgroup", "systemReservedCgroup", SETTING_STRING,
            "reservations are subtracted from allocatable, not enforced on other cgroups"),
        IGN("kube-reserved-cgroup", "kubeReservedCgroup", SETTING_STRING,
            "reservations are subtracted from allocatable, not enforced on other cgroups"),
        IGN("enforce-node-allocatable", "enforceNodeAllocatable", SETTING_STRV,
            "nanolet always limits the kubepods cgroup to allocatable when reservations are set"),
        IGN("volume-plugin-dir", "volumePluginDir", SETTING_STRING,
            "nanolet has no volume plugins"),
        IGN("provider-id", "providerID", SETTING_STRING, NO_APISERVER),
        IGN("kernel-memcg-notification", "kernelMemcgNotification", SETTING_BOOL,
            "memory signals are polled"),
        IGN(NULL, "logging", SETTING_OBJECT, LOGGING_FLAGS),
        IGN(NULL, "enableSystemLogHandler", SETTING_BOOL, NO_SERVER),
        IGN(NULL, "enableSystemLogQuery", SETTING_BOOL, NO_SERVER),
        IGN(NULL, "shutdownGracePeriodByPodPriority", SETTING_OBJECT,
            "use shutdownGracePeriod and shutdownGracePeriodCriticalPods"),
        IGN(NULL, "crashLoopBackOff", SETTING_OBJECT,
            "restart back-off is kubelet's default, 10s doubling to 300s"),
        IGN("reserved-memory", "reservedMemory", SETTING_OBJECT, NO_MANAGER),
        IGN(NULL, "enableProfilingHandler", SETTING_BOOL, "nanolet has no profiling endpoint"),
        IGN(NULL, "enableDebugFlagsHandler", SETTING_BOOL, NO_SERVER),
        IGN(NULL, "memoryThrottlingFactor", SETTING_STRING, "MemoryQoS is not supported"),
        IGN(NULL, "memoryReservationPolicy", SETTING_STRING, "MemoryQoS is not supported"),
        IGN("register-with-taints", "registerWithTaints", SETTING_OBJECT, NO_APISERVER),
        IGN("register-node", "registerNode", SETTING_BOOL, NO_APISERVER),
        IGN(NULL, "tracing", SETTING_OBJECT, "nanolet has no tracing"),
        IGN("local-storage-capacity-isolation", "localStorageCapacityIsolation", SETTING_BOOL,
            "ephemeral-storage limits are always enforced by eviction"),
        IGN("container-runtime-endpoint", "containerRuntimeEndpoint", SETTING_STRING, NO_CRI),
        IGN("image-service-endpoint", "imageServiceEndpoint", SETTING_STRING, NO_CRI),
        IGN(NULL, "failCgroupV1", SETTING_BOOL, "nanolet supports cgroup v1 and v2"),
        IGN(NULL, "userNamespaces", SETTING_OBJECT, "user namespaces are not supported"),
};
#undef H
#undef IGN
#undef REJ

const size_t settings_table_size = ELEMENTSOF(settings_table);

const Setting *settings_find_flag(const char *name) {
        for (size_t i = 0; i < settings_table_size; i++)
                if (settings_table[i].flag && streq(settings_table[i].flag, name))
                        return &settings_table[i];
        return NULL;
}

const Setting *settings_find_key(const char *key) {
        for (size_t i = 0; i < settings_table_size; i++)
                if (settings_table[i].key && streq(settings_table[i].key, key))
                        return &settings_table[i];
        return NULL;
}

static const char *const type_names[_SETTING_TYPE_MAX] = {
        [SETTING_STRING] = "string",
        [SETTING_DURATION] = "duration",
        [SETTING_INT] = "integer",
        [SETTING_BOOL] = "boolean",
        [SETTING_QUANTITY] = "quantity",
        [SETTING_STRV] = "list of strings",
        [SETTING_HEADERS] = "map of string to list of strings",
        [SETTING_EVICTION] = "map of signal to quantity",
        [SETTING_SIGNAL_MAP] = "map of signal to string",
        [SETTING_RESERVED] = "map of resource to quantity",
        [SETTING_OBJECT] = "object",
        [SETTING_CUSTOM] = "string",
};

const char *setting_type_to_string(SettingType t) {
        return t >= 0 && t < _SETTING_TYPE_MAX ? type_names[t] : NULL;
}

static const char *const disposition_names[_SETTING_DISPOSITION_MAX] = {
        [SETTING_HONOURED] = "honoured",
        [SETTING_IGNORED] = "ignored",
        [SETTING_REJECTED] = "rejected",
};

const char *setting_disposition_to_string(SettingDisposition d) {
        return d >= 0 && d < _SETTING_DISPOSITION_MAX ? disposition_names[d] : NULL;
}

/* ---- parsing one value ---- */

static int set_str(char **field, const char *value) {
        char *c = strdup(value);
        if (!c)
                return -ENOMEM;
        free(*field);
        *field = c;
        return 0;
}

static int parse_bool(const char *s, bool *ret) {
        /* pflag's strconv.ParseBool spellings */
        static const char *const yes[] = { "true", "1", "t", "T", "TRUE", "True" };
        static const char *const no[] = { "false", "0", "f", "F", "FALSE", "False" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (streq(s, yes[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, no[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/* "1s", "100ms", "24h": the largest unit that divides d. */
static void format_duration(usec_t d, char buf[static 32]) {
        static const struct {
                usec_t usec;
                const char *unit;
        } units[] = {
                { 3600 * USEC_PER_SEC, "h" },
                { 60 * USEC_PER_SEC, "m" },
                { USEC_PER_SEC, "s" },
                { USEC_PER_MSEC, "ms" },
                { 1, "us" },
        };
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (d % units[i].usec == 0) {
                        snprintf(buf, 32, "%llu%s", (unsigned long long)(d / units[i].usec),
                                 units[i].unit);
                        return;
                }
}

static usec_t duration_max(const Setting *s) {
        return s->max > 0 ? (usec_t)s->max : SETTING_DURATION_MAX;
}

/* One element of a string, list or map setting: the table's check kind,
 * then the setting's own parser or check. */
static int check_element(NanoletConfig *c, const Setting *s, const char *value, Error *err) {
        int r = setting_check_value(s, value, err);
        if (r < 0 || !s->parse)
                return r;
        return s->parse(c, s, value, err);
}

static int too_many_entries(size_t n, Error *err) {
        return error_set(err, -EINVAL, "has %zu entries, at most %d are accepted", n,
                         SETTING_ENTRIES_MAX);
}

/* Appends the comma-separated elements of value to *l; with sep, each must
 * hold it ('<' for thresholds, '=' for signal maps). */
static int append_list(const Setting *s, NanoletConfig *c, char ***l, const char *value, char sep,
                       Error *err) {
        _cleanup_free_ char *copy = strdup(value);
        size_t n = strv_length(*l);
        char *save = NULL;
        int r;
        if (!copy)
                return -ENOMEM;
        for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
                if (++n > SETTING_ENTRIES_MAX)
                        return too_many_entries(n, err);
                r = check_element(c, s, e, err);
                if (r < 0)
                        return r;
                if (sep && !strchr(e, sep)) {
                        _cleanup_free_ char *q = setting_value_quote(e);
                        return error_set(err, -EINVAL, "%s is not signal%cvalue", strna(q), sep);
                }
                r = strv_extend(l, e);
                if (r < 0)
                        return r;
        }
        if (!*l)
                return error_set(err, -EINVAL, "expected at least one value");
        return 0;
}

static int parse_duration_bounded(const Setting *s, const char *value, usec_t *ret, Error *err) {
        char lo[32], hi[32];
        usec_t u;
        int r = nanolet_parse_duration(value, &u);
        format_duration((usec_t)s->min, lo);
        format_duration(duration_max(s), hi);
        if (r == -ERANGE || (r >= 0 && u > duration_max(s)))
                return error_set(err, -EINVAL, "must be at most %s", hi);
        if (r < 0)
                return error_set(err, -EINVAL, "expected a duration such as \"20s\"");
        if (u == 0 && !(s->flags & SETTING_ZERO_ALLOWED))
                return error_set(err, -EINVAL, "must not be 0: expected %s to %s", lo, hi);
        if (u != 0 && u < (usec_t)s->min)
                return error_set(err, -EINVAL, "must be at least %s%s", lo,
                                 (s->flags & SETTING_ZERO_ALLOWED) ? " (or 0)" : "");
        *ret = u;
        return 0;
}

static int parse_int(const Setting *s, const char *value, int64_t *ret, Error *err) {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (isempty(value) || *end || errno || v < s->min || v > s->max)
                return error_set(err, -EINVAL, "expected an integer in %lld..%lld",
                                 (long long)s->min, (long long)s->max);
        *ret = v;
        return 0;
}

static int parse_bool_value(const char *value, bool *ret, Error *err) {
        if (parse_bool(value, ret) < 0)
                return error_set(err, -EINVAL, "expected true or false");
        return 0;
}

static int parse_size(const char *value, int64_t *ret, Error *err) {
        Quantity q;
        if (quantity_parse(value, &q) < 0 || q.value <= 0)
                return error_set(err, -EINVAL, "expected a positive size such as \"10Mi\"");
        *ret = q.value;
        return 0;
}

/* One "Name: value" header, added to the list (replace: to an empty one). */
static int append_header(NanoletConfig *c, const Setting *s, char ***l, const char *value,
                         bool replace, Error *err) {
        int r = check_element(c, s, value, err);
        if (r < 0)
                return r;
        if (replace)
                *l = strv_free(*l);
        if (strv_length(*l) >= SETTING_ENTRIES_MAX)
                return too_many_entries(strv_length(*l) + 1, err);
        return strv_extend(l, value);
}

/* The scalar forms of every type, shared by flags and file scalars. */
static int apply_scalar(NanoletConfig *c, const Setting *s, const char *value, bool replace,
                        Error *err) {
        void *p = (char *)c + s->offset;
        int r;

        switch (s->type) {
        case SETTING_STRING:
                r = check_element(c, s, value, err);
                return r < 0 ? r : set_str(p, value);
        case SETTING_CUSTOM:
                r = setting_check_value(s, value, err);
                return r < 0 ? r : s->parse(c, s, value, err);
        case SETTING_DURATION:
                return parse_duration_bounded(s, value, p, err);
        case SETTING_INT:
                return parse_int(s, value, p, err);
        case SETTING_BOOL:
                return parse_bool_value(value, p, err);
        case SETTING_QUANTITY:
                return parse_size(value, p, err);
        case SETTING_STRV:
        case SETTING_EVICTION:
        case SETTING_SIGNAL_MAP:
                if (replace)
                        *(char ***)p = strv_free(*(char ***)p);
                return append_list(s, c, p, value,
                                   s->type == SETTING_EVICTION     ? '<'
                                   : s->type == SETTING_SIGNAL_MAP ? '='
                                                                   : 0,
                                   err);
        case SETTING_HEADERS:
                return append_header(c, s, p, value, replace, err);
        case SETTING_RESERVED: {
                r = setting_check_value(s, value, err);
                int64_t *cpu = p, *mem = cpu + 1;
                return r < 0 ? r : nanolet_parse_reserved(value, cpu, mem, err);
        }
        case SETTING_OBJECT:
        case _SETTING_TYPE_MAX:
        case _SETTING_TYPE_INVALID:
                break;
        }
        return error_set(err, -EINVAL, "cannot be given as a flag");
}

int setting_apply_flag(NanoletConfig *c, const Setting *s, const char *value, bool replace) {
        Error error = {};
        _cleanup_free_ char *quoted = NULL;
        int r;

        if (!value) {
                /* pflag: a bare boolean flag means true */
                if (s->type != SETTING_BOOL) {
                        log_error("Flag --%s needs a value.", s->flag);
                        return -EINVAL;
                }
                value = "true";
        }
        switch (s->disposition) {
        case SETTING_IGNORED:
                log_warning("Flag --%s is ignored: %s.", s->flag, s->help);
                return 0;
        case SETTING_REJECTED:
                if (streq(value, s->value))
                        return 0;
                quoted = setting_value_quote(value);
                log_error("Flag --%s=%s is not supported: %s.", s->flag, strna(quoted), s->help);
                return -EINVAL;
        case SETTING_HONOURED:
        case _SETTING_DISPOSITION_MAX:
        case _SETTING_DISPOSITION_INVALID:
                break;
        }
        r = apply_scalar(c, s, value, replace, &error);
        if (r == -EINVAL) {
                quoted = setting_value_quote(value);
                log_error("Invalid value %s for --%s: %s.", strna(quoted), s->flag, error.message);
        }
        return r;
}

int settings_apply_defaults(NanoletConfig *c) {
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                Error error = {};
                if (s->disposition != SETTING_HONOURED || !s->value)
                        continue;
                int r = apply_scalar(c, s, s->value, true, &error);
                if (r < 0)
                        /* a default the table cannot parse is a bug in the table */
                        return log_error_errno(r, "Bad default \"%s\" of %s: %s.", s->value,
                                               s->flag ? s->flag : s->key, error.message);
        }
        return 0;
}

/* ---- KubeletConfiguration fields ---- */

static bool node_is_string(const YamlNode *n) {
        return n && n->type == YAML_NODE_STRING;
}

static const char *file_type_hint(const Setting *s) {
        switch (s->type) {
        case SETTING_STRING:
        case SETTING_CUSTOM:
                return "must be a string";
        case SETTING_DURATION:
                return "must be a duration such as \"20s\"";
        case SETTING_INT:
                return "must be an integer";
        case SETTING_BOOL:
                return "must be true or false";
        case SETTING_QUANTITY:
                return "must be a quantity such as \"10Mi\"";
        case SETTING_STRV:
                return "must be a list of strings";
        case SETTING_HEADERS:
                return "must be a map of header names to lists of strings";
        case SETTING_EVICTION:
        case SETTING_SIGNAL_MAP:
                return "must be a map of signals to strings such as \"100Mi\"";
        case SETTING_RESERVED:
                return "must be a map such as {cpu: 100m, memory: 256Mi}";
        case SETTING_OBJECT:
        case _SETTING_TYPE_MAX:
        case _SETTING_TYPE_INVALID:
                break;
        }
        return "has the wrong type";
}

/* A YAML string may hold a NUL ("\0" in double quotes) that C strings
 * would silently cut off. */
static bool scalar_has_nul(const YamlNode *n) {
        return n->str && memchr(n->str, 0, n->str_len);
}

static bool is_http_token(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if (!is_tchar(*s))
                        return false;
        return true;
}

/* kubeReserved/systemReserved as a map: each pair on its own, so the
 * work is linear in the map and a key cannot smuggle in a ',' or '='. */
static int apply_reserved_map(NanoletConfig *c, const Setting *s, const YamlNode *v, Error *err) {
        int64_t cpu = 0, mem = 0;
        for (size_t i = 0; i < v->n; i++) {
                const YamlNode *key = v->pairs[i].key, *val = v->pairs[i].value;
                int r = setting_check_value(s, key->str, err);
                if (r >= 0)
                        r = setting_check_value(s, val->str, err);
                if (r >= 0)
                        r = nanolet_reserved_add(key->str, val->str, &cpu, &mem, err);
                if (r < 0)
                        return r;
        }
        int64_t *p = (int64_t *)((char *)c + s->offset);
        p[0] = cpu;
        p[1] = mem;
        return 0;
}

/* The field helpers below add one error naming file:line and the key and
 * return 0 (the document goes on); a negative return is ENOMEM. */
#define BAD(...)                                                                                   \
        do {                                                                                       \
                diagnostics_add(diag, DIAG_ERROR, file, v->line, v->column, s->key, __VA_ARGS__);  \
                return 0;                                                                          \
        } while (0)
#define BAD_NUL(n)                                                                                 \
        do {                                                                                       \
                if (scalar_has_nul(n))                                                             \
                        BAD("holds a NUL byte");                                                   \
        } while (0)

/* A sequence of strings, each checked as a flag's element. */
static int apply_list_field(NanoletConfig *c, const Setting *s, const YamlNode *v, const char *file,
                            Diagnostics *diag) {
        _cleanup_strv_free_ char **l = NULL;
        Error error = {};
        if (v->type != YAML_NODE_SEQ)
                BAD("%s", file_type_hint(s));
        if (v->n > SETTING_ENTRIES_MAX)
                BAD("has %zu entries, at most %d are accepted", v->n, SETTING_ENTRIES_MAX);
        for (size_t i = 0; i < v->n; i++) {
                if (!node_is_string(v->items[i]))
                        BAD("%s", file_type_hint(s));
                BAD_NUL(v->items[i]);
                if (check_element(c, s, v->items[i]->str, &error) < 0)
                        BAD("item %zu: %s", i + 1, error.message);
                int r = strv_extend(&l, v->items[i]->str);
                if (r < 0)
                        return r;
        }
        char ***p = (char ***)((char *)c + s->offset);
        strv_free(*p);
        *p = TAKE_PTR(l);
        return 0;
}

/* The eviction maps: each "key: value" becomes "key<value" (thresholds) or
 * "key=value", checked as the flag form is. */
static int apply_signal_map_field(NanoletConfig *c, const Setting *s, const YamlNode *v,
                                  const char *file, Diagnostics *diag) {
        _cleanup_strv_free_ char **l = NULL;
        Error error = {};
        if (v->type != YAML_NODE_MAP)
                BAD("%s", file_type_hint(s));
        for (size_t i = 0; i < v->n; i++) {
                const YamlNode *val = v->pairs[i].value, *key = v->pairs[i].key;
                BAD_NUL(key);
                if (!node_is_string(val) && val->type != YAML_NODE_INT)
                        BAD("%s", file_type_hint(s));
                BAD_NUL(val);
                if (i + 1 > SETTING_ENTRIES_MAX)
                        BAD("has %zu entries, at most %d are accepted", v->n, SETTING_ENTRIES_MAX);
                _cleanup_free_ char *e = strprintf(
                        "%s%c%s", key->str, s->type == SETTING_EVICTION ? '<' : '=', val->str);
                if (!e)
                        return -ENOMEM;
                if (check_element(c, s, e, &error) < 0)
                        BAD("%s", error.message);
                int r = strv_consume(&l, TAKE_PTR(e));
                if (r < 0)
                        return r;
        }
        char ***p = (char ***)((char *)c + s->offset);
        strv_free(*p);
        *p = TAKE_PTR(l);
        return 0;
}

/* staticPodURLHeader: header name -> list of values, each "Name: value". */
static int apply_headers_field(NanoletConfig *c, const Setting *s, const YamlNode *v,
                               const char *file, Diagnostics *diag) {
        _cleanup_strv_free_ char **l = NULL;
        Error error = {};
        size_t n_entries = 0;
        if (v->type != YAML_NODE_MAP)
                BAD("%s", file_type_hint(s));
        for (size_t i = 0; i < v->n; i++) {
                const YamlNode *val = v->pairs[i].value, *key = v->pairs[i].key;
                BAD_NUL(key);
                if (!is_http_token(key->str)) {
                        _cleanup_free_ char *q = setting_value_quote(key->str);
                        BAD("header name %s is not an RFC 9110 token", strna(q));
                }
                if (val->type != YAML_NODE_SEQ)
                        BAD("%s", file_type_hint(s));
                for (size_t j = 0; j < val->n; j++) {
                        if (!node_is_string(val->items[j]))
                                BAD("%s", file_type_hint(s));
                        BAD_NUL(val->items[j]);
                        if (++n_entries > SETTING_ENTRIES_MAX)
                                BAD("has more than %d values, at most %d are accepted",
                                    SETTING_ENTRIES_MAX, SETTING_ENTRIES_MAX);
                        _cleanup_free_ char *h = strprintf("%s: %s", key->str, val->items[j]->str);
                        if (!h)
                                return -ENOMEM;
                        if (check_element(c, s, h, &error) < 0)
                                BAD("header %s: %s", key->str, error.message);
                        int r = strv_consume(&l, TAKE_PTR(h));
                        if (r < 0)
                                return r;
                }
        }
        char ***p = (char ***)((char *)c + s->offset);
        strv_free(*p);
        *p = TAKE_PTR(l);
        return 0;
}

static int apply_reserved_field(NanoletConfig *c, const Setting *s, const YamlNode *v,
                                const char *file, Diagnostics *diag) {
        Error error = {};
        if (v->type != YAML_NODE_MAP)
                BAD("%s", file_type_hint(s));
        if (v->n > RESERVED_ENTRIES_MAX)
                BAD("has %zu entries, at most %d are accepted", v->n, RESERVED_ENTRIES_MAX);
        for (size_t i = 0; i < v->n; i++) {
                const YamlNode *val = v->pairs[i].value;
                if (!node_is_string(val) && val->type != YAML_NODE_INT)
                        BAD("values must be quantities such as \"100m\" or \"1Gi\"");
                BAD_NUL(v->pairs[i].key);
                BAD_NUL(val);
        }
        int r = apply_reserved_map(c, s, v, &error);
        if (r == -EINVAL)
                BAD("%s", error.message);
        return r;
}

static bool scalar_type_ok(const Setting *s, const YamlNode *v) {
        switch (s->type) {
        case SETTING_INT:
                return v->type == YAML_NODE_INT;
        case SETTING_BOOL:
                return v->type == YAML_NODE_BOOL;
        case SETTING_QUANTITY:
                return v->type == YAML_NODE_INT || node_is_string(v);
        case SETTING_STRING:
        case SETTING_CUSTOM:
        case SETTING_DURATION:
        case SETTING_STRV:
        case SETTING_HEADERS:
        case SETTING_EVICTION:
        case SETTING_SIGNAL_MAP:
        case SETTING_RESERVED:
        case SETTING_OBJECT:
        case _SETTING_TYPE_MAX:
        case _SETTING_TYPE_INVALID:
                break;
        }
        return node_is_string(v);
}

/* A scalar: the flag's parser, so both sources accept the same values. */
static int apply_scalar_field(NanoletConfig *c, const Setting *s, const YamlNode *v,
                              const char *file, Diagnostics *diag) {
        Error error = {};
        if (!scalar_type_ok(s, v))
                BAD("%s", file_type_hint(s));
        if (s->type != SETTING_INT && s->type != SETTING_BOOL)
                BAD_NUL(v);

        const char *value = v->str;
        if ((s->flags & SETTING_FILE_ZERO_IS_DEFAULT) && s->value) {
                usec_t u;
                if ((s->type == SETTING_DURATION && nanolet_parse_duration(value, &u) >= 0 &&
                     u == 0) ||
                    (s->type == SETTING_INT && v->i == 0))
                        value = s->value;
        }
        int r = apply_scalar(c, s, value, true, &error);
        if (r == -EINVAL)
                BAD("%s", error.message);
        return r;
}

#undef BAD_NUL
#undef BAD

static int apply_field(NanoletConfig *c, const Setting *s, const YamlNode *v, const char *file,
                       Diagnostics *diag) {
        switch (s->type) {
        case SETTING_STRING:
        case SETTING_CUSTOM:
        case SETTING_DURATION:
        case SETTING_INT:
        case SETTING_BOOL:
        case SETTING_QUANTITY:
                return apply_scalar_field(c, s, v, file, diag);
        case SETTING_STRV:
                return apply_list_field(c, s, v, file, diag);
        case SETTING_EVICTION:
        case SETTING_SIGNAL_MAP:
                return apply_signal_map_field(c, s, v, file, diag);
        case SETTING_HEADERS:
                return apply_headers_field(c, s, v, file, diag);
        case SETTING_RESERVED:
                return apply_reserved_field(c, s, v, file, diag);
        case SETTING_OBJECT:
        case _SETTING_TYPE_MAX:
        case _SETTING_TYPE_INVALID:
                break;
        }
        return 0;
}

int settings_apply_document(NanoletConfig *c, const void *yaml_map, const char *filename,
                            Diagnostics *diag) {
        const YamlNode *doc = yaml_map;
        int r;

        for (size_t i = 0; i < doc->n; i++) {
                const char *key = doc->pairs[i].key->str;
                const YamlNode *v = doc->pairs[i].value;
                if (streq(key, "kind") || streq(key, "apiVersion"))
                        continue;
                const Setting *s = settings_find_key(key);
                if (!s) {
                        /* the key as written, unless it holds bytes a terminal acts on */
                        _cleanup_free_ char *quoted = NULL;
                        if (scalar_has_nul(doc->pairs[i].key) || check_text(key, NULL) < 0) {
                                quoted = setting_value_quote(key);
                                if (!quoted)
                                        return -ENOMEM;
                        }
                        diagnostics_add(diag, DIAG_WARNING, filename, v->line, v->column,
                                        quoted ?: key, "unknown field, ignored");
                        continue;
                }
                /* kubelet decodes null as "not set": the default stays */
                if (v->type == YAML_NODE_NULL)
                        continue;
                switch (s->disposition) {
                case SETTING_IGNORED:
                        diagnostics_add(diag, DIAG_WARNING, filename, v->line, v->column, key,
                                        "ignored: %s", s->help);
                        continue;
                case SETTING_REJECTED:
                        if (v->str && streq(v->str, s->value))
                                continue;
                        diagnostics_add(diag, DIAG_ERROR, filename, v->line, v->column, key,
                                        "only %s is supported: %s", s->value, s->help);
                        continue;
                case SETTING_HONOURED:
                case _SETTING_DISPOSITION_MAX:
                case _SETTING_DISPOSITION_INVALID:
                        break;
                }
                r = apply_field(c, s, v, filename, diag);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- generated documentation ---- */

static const char *shown_default(const Setting *s) {
        if (s->shown_default)
                return s->shown_default;
        if (s->value && s->type == SETTING_EVICTION)
                return s->value; /* commas are part of the list */
        return s->value;
}

static void print_flag_list(FILE *f, SettingDisposition d);

void settings_print_help(FILE *f) {
        fputs("Usage: nanolet serve [OPTIONS]\n\n"
              "Run the agent: watch manifests and run their pods. Flags override the --config\n"
              "file. Boolean flags take no value or =true/=false.\n\n",
              f);
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                if (!s->flag || s->disposition != SETTING_HONOURED)
                        continue;
                char left[64];
                const char *mv = s->type == SETTING_BOOL ? (s->metavar ? "[=BOOL]" : "") : NULL;
                snprintf(left, sizeof left, "%s%s%s%s", strlen(s->flag) == 1 ? "-" : "--", s->flag,
                         mv ? "" : " ", mv ? mv : strempty(s->metavar));
                const char *def = shown_default(s);
                fprintf(f, "  %-34s %s", left, s->help);
                if (def && !streq(def, "false"))
                        fprintf(f, " [%s]", def);
                fputc('\n', f);
        }
        fputs("\nkubelet flags accepted and ignored, one warning each (see nanolet-config(5)):\n",
              f);
        print_flag_list(f, SETTING_IGNORED);
        fputs("kubelet flags refused unless given kubelet's default value:\n", f);
        print_flag_list(f, SETTING_REJECTED);
}

static void print_flag_list(FILE *f, SettingDisposition d) {
        size_t col = 0;
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                if (!s->flag || s->disposition != d)
                        continue;
                size_t w = strlen(s->flag) + 3;
                if (col + w > 78) {
                        fputc('\n', f);
                        col = 0;
                }
                fprintf(f, "%s--%s", col ? " " : "  ", s->flag);
                col += w;
        }
        fputs("\n", f);
}

/* scdoc text: * and _ would start bold and underline */
static void fputs_scdoc(const char *text, FILE *f) {
        for (const char *p = text; *p; p++) {
                if (strchr("*_\\", *p))
                        fputc('\\', f);
                fputc(*p, f);
        }
}

static void print_man_allowed(FILE *f, const Setting *s);

static void print_man_entry(FILE *f, const Setting *s, bool key_first) {
        if (key_first)
                fprintf(f, "*%s* (%s)\n", s->key, setting_type_to_string(s->type));
        else if (s->metavar && s->type != SETTING_BOOL)
                fprintf(f, "*%s%s* _%s_\n", strlen(s->flag) == 1 ? "-" : "--", s->flag, s->metavar);
        else
                fprintf(f, "*%s%s*\n", strlen(s->flag) == 1 ? "-" : "--", s->flag);
        fputc('\t', f);
        fputs_scdoc(s->help, f);
        fputc('.', f);
        if (key_first && s->flag)
                fprintf(f, " Flag: *--%s*.", s->flag);
        print_man_allowed(f, s);
        const char *def = shown_default(s);
        if (def) {
                fputs(" Default: ", f);
                fputs_scdoc(def, f);
                fputc('.', f);
        }
        fputs("\n\n", f);
}

/* The values a setting accepts, from its type, bounds and check kind. */
static void print_man_allowed(FILE *f, const Setting *s) {
        char lo[32], hi[32];
        switch (s->type) {
        case SETTING_DURATION:
                format_duration((usec_t)s->min, lo);
                format_duration(duration_max(s), hi);
                fprintf(f, " Range: %s to %s%s.", s->min > 0 ? lo : "0", hi,
                        (s->flags & SETTING_ZERO_ALLOWED) && s->min > 0 ? ", or 0" : "");
                return;
        case SETTING_INT:
                fprintf(f, " Range: %lld to %lld.", (long long)s->min, (long long)s->max);
                return;
        case SETTING_STRING:
        case SETTING_STRV:
        case SETTING_HEADERS:
        case SETTING_EVICTION:
        case SETTING_SIGNAL_MAP:
        case SETTING_RESERVED:
                break;
        case SETTING_BOOL:
        case SETTING_QUANTITY:
        case SETTING_OBJECT:
        case SETTING_CUSTOM:
        case _SETTING_TYPE_MAX:
        case _SETTING_TYPE_INVALID:
                return;
        }
        if (s->check == SETTING_CHECK_TEXT)
                return;
        fprintf(f, " %s: ", s->type == SETTING_STRING ? "Value" : "Each element");
        fputs_scdoc(setting_check_to_string(s->check), f);
        if (s->flags & SETTING_EMPTY_ALLOWED)
                fputs(", or empty", f);
        if (s->type != SETTING_STRING)
                fprintf(f, "; at most %d elements",
                        s->type == SETTING_RESERVED ? RESERVED_ENTRIES_MAX : SETTING_ENTRIES_MAX);
        fputc('.', f);
}

/* One "- name: reason." line per setting of a disposition: the fields
 * (with their flag, and for a rejected one the only value accepted), or
 * the flags that have no field. */
static void print_man_bullets(FILE *f, SettingDisposition d, bool fields) {
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                if (s->disposition != d || (fields ? !s->key : s->key || !s->flag))
                        continue;
                if (!fields)
                        fprintf(f, "- *--%s*", s->flag);
                else
                        fprintf(f, "- *%s*%s%s%s", s->key, s->flag ? " (*--" : "",
                                strempty(s->flag), s->flag ? "*)" : "");
                if (fields && d == SETTING_REJECTED)
                        fprintf(f, ", default %s", s->value);
                fputs(": ", f);
                fputs_scdoc(s->help, f);
                fputs(".\n", f);
        }
}

void settings_print_man(FILE *f) {
        fputs("# FIELDS\n\n"
              "Generated from nanolet's settings table. Each field is honoured as\n"
              "described; its flag, where it has one, overrides it.\n\n"
              "*apiVersion*, *kind*\n"
              "\tMust be *kubelet.config.k8s.io/v1beta1* and *KubeletConfiguration*.\n\n",
              f);
        for (size_t i = 0; i < settings_table_size; i++)
                if (settings_table[i].key && settings_table[i].disposition == SETTING_HONOURED)
                        print_man_entry(f, &settings_table[i], true);

        fputs("# IGNORED FIELDS\n\n"
              "kubelet fields that nanolet accepts and ignores, each with one warning giving\n"
              "the reason below. Their flags are accepted the same way.\n\n",
              f);
        print_man_bullets(f, SETTING_IGNORED, true);

        fputs("\n# REJECTED FIELDS\n\n"
              "Any value but kubelet's default stops the agent.\n\n",
              f);
        print_man_bullets(f, SETTING_REJECTED, true);

        fputs("\n# FLAGS WITHOUT A FIELD\n\n"
              "These *nanolet serve* flags have no KubeletConfiguration field.\n\n",
              f);
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                if (!s->key && s->flag && s->disposition == SETTING_HONOURED)
                        print_man_entry(f, s, false);
        }

        fputs("# IGNORED FLAGS\n\n"
              "kubelet flags without a field that nanolet accepts with one warning each:\n\n",
              f);
        print_man_bullets(f, SETTING_IGNORED, false);
        fputs("\n", f);
}
