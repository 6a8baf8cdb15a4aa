/* /etc/hosts, /etc/hostname and /etc/resolv.conf of a pod. The hosts file is
 * kubelet's (kubelet_pods.go: managedHostsFileContent / nodeHostsFileContent),
 * the resolv.conf follows kubelet's dns.go (GetPodDNS) and is rendered the
 * way containerd renders the CRI DNSConfig (search, nameserver, options). */
#include "pod-etc-files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

#define HOSTNAME_MAX_LEN 63
#define MAX_DNS_NAMESERVERS 3
#define MAX_DNS_SEARCH_PATHS 32
#define MAX_DNS_SEARCH_LIST_CHARS 2048
#define DNS1123_SUBDOMAIN_MAX 253
#define HOST_FILE_MAX (1024U * 1024U)

typedef struct Buf {
        char *s;
        size_t len, cap;
} Buf;

static void buf_done(Buf *b) {
        free(b->s);
}

static int buf_put(Buf *b, const char *s) {
        return strbuf_append(&b->s, &b->len, &b->cap, s, strlen(s));
}

static int buf_printf(Buf *b, const char *fmt, ...) _printf_(2, 3);
static int buf_printf(Buf *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = strvprintf(fmt, ap);
        va_end(ap);
        if (!s)
                return -ENOMEM;
        return strbuf_append(&b->s, &b->len, &b->cap, s, strlen(s));
}

static char *buf_take(Buf *b) {
        if (!b->s)
                return strdup("");
        char *s = b->s;
        b->s = NULL;
        b->len = b->cap = 0;
        return s;
}

int pod_hostname(const Pod *pod, const char *node_hostname, char **ret) {
        const char *h;
        if (pod->spec.host_network)
                h = node_hostname;
        else
                h = !isempty(pod->spec.hostname) ? pod->spec.hostname : pod->metadata.name;
        if (isempty(h))
                return -EINVAL;

        size_t n = MIN(strlen(h), (size_t)HOSTNAME_MAX_LEN);
        /* kubelet: a truncated hostname must not end with '-' or '.' */
        while (n > 0 && (h[n - 1] == '-' || h[n - 1] == '.'))
                n--;
        if (n == 0)
                return -EINVAL;
        char *s = strndup(h, n);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int pod_host_domain(const Pod *pod, const char *cluster_domain, char **ret) {
        if (isempty(pod->spec.subdomain) || isempty(cluster_domain)) {
                *ret = NULL;
                return 0;
        }
        char *s = strprintf("%s.%s.svc.%s", pod->spec.subdomain, pod->metadata.namespace,
                            cluster_domain);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int hosts_aliases(Buf *b, const Pod *pod) {
        int r;
        if (pod->spec.n_host_aliases == 0)
                return 0;
        if ((r = buf_put(b, "\n# Entries added by HostAliases.\n")) < 0)
                return r;
        for (size_t i = 0; i < pod->spec.n_host_aliases; i++) {
                const HostAlias *a = &pod->spec.host_aliases[i];
                if ((r = buf_put(b, a->ip)) < 0)
                        return r;
                STRV_FOREACH(h, a->hostnames)
                        if ((r = buf_printf(b, "\t%s", *h)) < 0)
                                return r;
                if ((r = buf_put(b, "\n")) < 0)
                        return r;
        }
        return 0;
}

int pod_hosts_content(const Pod *pod, const PodEtcOptions *o, char **ret, Error *err) {
        _cleanup_(buf_done) Buf b = {};
        int r;

        if (pod->spec.host_network) {
                /* kubelet: the node's own hosts file, plus the pod's hostAliases */
                const char *path = o->host_hosts ?: "/etc/hosts";
                _cleanup_free_ char *data = NULL;
                r = read_full_file_at(AT_FDCWD, path, HOST_FILE_MAX, &data, NULL);
                if (r < 0 && r != -ENOENT)
                        return error_set(err, r, "failed to read \"%s\": %s", path, strerror(-r));
                if (data && (r = buf_put(&b, data)) < 0)
                        return r;
        } else {
                _cleanup_free_ char *hostname = NULL, *domain = NULL;
                if ((r = pod_hostname(pod, o->node_hostname, &hostname)) < 0)
                        return error_set(err, r, "pod has no usable hostname");
                if ((r = pod_host_domain(pod, o->cluster_domain, &domain)) < 0)
                        return r;
                r = buf_put(&b, "# Kubernetes-managed hosts file.\n"
                                "127.0.0.1\tlocalhost\n"
                                "::1\tlocalhost ip6-localhost ip6-loopback\n"
                                "fe00::0\tip6-localnet\n"
                                "fe00::0\tip6-mcastprefix\n"
                                "fe00::1\tip6-allnodes\n"
                                "fe00::2\tip6-allrouters\n");
                if (r < 0)
                        return r;
                STRV_FOREACH(ip, o->pod_ips) {
                        if (domain)
                                r = buf_printf(&b, "%s\t%s.%s\t%s\n", *ip, hostname, domain,
                                               hostname);
                        else
                                r = buf_printf(&b, "%s\t%s\n", *ip, hostname);
                        if (r < 0)
                                return r;
                }
        }
        if ((r = hosts_aliases(&b, pod)) < 0)
                return r;
        char *s = buf_take(&b);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* ---- resolv.conf ---- */

typedef struct DNSSettings {
        char **servers;
        char **searches;
        char **options; /* "name" or "name:value" */
} DNSSettings;

static void dns_settings_done(DNSSettings *d) {
        strv_free(d->servers);
        strv_free(d->searches);
        strv_free(d->options);
        *d = (DNSSettings){};
}

static int strv_extend_unique(char ***l, const char *s) {
        if (strv_contains(*l, s))
                return 0;
        return strv_extend(l, s);
}

/* Options are keyed by the name before ':'; a later one replaces an earlier
 * one in place (kubelet merges through a map; nanolet keeps the order
 * stable so the file does not change from one write to the next). */
static int options_set(char ***l, const char *name, const char *value) {
        _cleanup_free_ char *opt = value && *value ? strprintf("%s:%s", name, value) : strdup(name);
        if (!opt)
                return -ENOMEM;
        size_t nl = strlen(name);
        for (char **p = *l; p && *p; p++)
                if (strneq(*p, name, nl) && ((*p)[nl] == 0 || (*p)[nl] == ':')) {
                        free(*p);
                        *p = TAKE_PTR(opt);
                        return 0;
                }
        int r = strv_consume(l, opt);
        if (r >= 0)
                opt = NULL;
        return r;
}

static int option_add_raw(char ***l, const char *raw) {
        const char *colon = strchr(raw, ':');
        if (!colon)
                return options_set(l, raw, NULL);
        _cleanup_free_ char *name = strndup(raw, (size_t)(colon - raw));
        if (!name)
                return -ENOMEM;
        return options_set(l, name, colon + 1);
}

/* kubelet's parseResolvConf: nameservers accumulate, the last "search" line
 * wins ("." dropped, trailing dots trimmed), options merge by name. */
static int parse_resolv_conf(const char *data, DNSSettings *d) {
        _cleanup_free_ char *copy = strdup(data);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        int r;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                line += strspn(line, " \t\r");
                if (*line == '#')
                        continue;
                char *fs = NULL;
                char *key = strtok_r(line, " \t\r", &fs);
                if (!key)
                        continue;
                if (streq(key, "nameserver")) {
                        char *v = strtok_r(NULL, " \t\r", &fs);
                        if (v && (r = strv_extend(&d->servers, v)) < 0)
                                return r;
                } else if (streq(key, "search")) {
                        d->searches = strv_free(d->searches);
                        for (char *v; (v = strtok_r(NULL, " \t\r", &fs));) {
                                if (streq(v, "."))
                                        continue;
                                size_t n = strlen(v);
                                if (n > 1 && v[n - 1] == '.')
                                        v[n - 1] = 0;
                                if ((r = strv_extend(&d->searches, v)) < 0)
                                        return r;
                        }
                } else if (streq(key, "options")) {
                        for (char *v; (v = strtok_r(NULL, " \t\r", &fs));)
                                if ((r = option_add_raw(&d->options, v)) < 0)
                                        return r;
                }
        }
        return 0;
}

static int warn(char ***warnings, char *msg) {
        if (!msg)
                return -ENOMEM;
        if (!warnings) {
                free(msg);
                return 0;
        }
        int r = strv_consume(warnings, msg);
        if (r < 0)
                free(msg);
        return r;
}

static int dns_host_settings(const PodEtcOptions *o, DNSSettings *d, Error *err) {
        int r;
        if (o->resolv_conf && !o->resolv_conf[0]) {
                /* --resolv-conf="": kubelet disables lookups by pointing at the
                 * (absent) local resolver */
                if ((r = strv_extend(&d->servers, "127.0.0.1")) < 0)
                        return r;
                return strv_extend(&d->searches, ".");
        }
        const char *path = o->resolv_conf ?: "/etc/resolv.conf";
        _cleanup_free_ char *data = NULL;
        r = read_full_file_at(AT_FDCWD, path, HOST_FILE_MAX, &data, NULL);
        if (r == -ENOENT)
                return 0; /* kubelet treats a missing file as empty */
        if (r < 0)
                return error_set(err, r, "failed to read resolv.conf \"%s\": %s", path,
                                 strerror(-r));
        return parse_resolv_conf(data, d);
}

static int dns_cluster_searches(const Pod *pod, const PodEtcOptions *o, DNSSettings *d) {
        if (isempty(o->cluster_domain))
                return 0;
        _cleanup_strv_free_ char **s = NULL;
        _cleanup_free_ char *ns_svc =
                strprintf("%s.svc.%s", pod->metadata.namespace, o->cluster_domain);
        _cleanup_free_ char *svc = strprintf("svc.%s", o->cluster_domain);
        if (!ns_svc || !svc)
                return -ENOMEM;
        int r;
        if ((r = strv_extend_unique(&s, ns_svc)) < 0 || (r = strv_extend_unique(&s, svc)) < 0 ||
            (r = strv_extend_unique(&s, o->cluster_domain)) < 0)
                return r;
        STRV_FOREACH(h, d->searches)
                if ((r = strv_extend_unique(&s, *h)) < 0)
                        return r;
        strv_free(d->searches);
        d->searches = TAKE_PTR(s);
        return 0;
}

static int dns_append_pod_config(const PodDNSConfig *c, DNSSettings *d) {
        int r;
        _cleanup_strv_free_ char **servers = NULL, **searches = NULL;
        /* kubelet's appendDNSConfig: omitDuplicates over the concatenation */
        STRV_FOREACH(s, d->servers)
                if ((r = strv_extend_unique(&servers, *s)) < 0)
                        return r;
        STRV_FOREACH(s, c->nameservers)
                if ((r = strv_extend_unique(&servers, *s)) < 0)
                        return r;
        STRV_FOREACH(s, d->searches)
                if ((r = strv_extend_unique(&searches, *s)) < 0)
                        return r;
        STRV_FOREACH(s, c->searches)
                if ((r = strv_extend_unique(&searches, *s)) < 0)
                        return r;
        for (size_t i = 0; i < c->n_options; i++)
                if ((r = options_set(&d->options, c->options[i].name, c->options[i].value)) < 0)
                        return r;
        strv_free(d->servers);
        d->servers = TAKE_PTR(servers);
        strv_free(d->searches);
        d->searches = TAKE_PTR(searches);
        return 0;
}

static int dns_fit_limits(DNSSettings *d, char ***warnings) {
        int r;
        size_t n = strv_length(d->servers);
        if (n > MAX_DNS_NAMESERVERS) {
                for (size_t i = MAX_DNS_NAMESERVERS; i < n; i++)
                        d->servers[i] = (free(d->servers[i]), NULL);
                r = warn(warnings, strprintf("Nameserver limits were exceeded, some nameservers "
                                             "have been omitted, the applied nameserver line "
                                             "is: %s %s %s",
                                             d->servers[0], d->servers[1], d->servers[2]));
                if (r < 0)
                        return r;
        }

        bool exceeded = false;
        size_t l = 0, total = 0;
        n = strv_length(d->searches);
        for (size_t i = 0; i < n; i++) {
                size_t len = strlen(d->searches[i]);
                /* glibc aborts on a search path over 255 characters; kubelet
                 * drops those, keeps at most 32 and at most 2048 characters */
                if (l >= MAX_DNS_SEARCH_PATHS || len > DNS1123_SUBDOMAIN_MAX ||
                    total + len + (l > 0) > MAX_DNS_SEARCH_LIST_CHARS) {
                        free(d->searches[i]);
                        exceeded = true;
                        continue;
                }
                total += len + (l > 0);
                d->searches[l++] = d->searches[i];
        }
        if (d->searches)
                d->searches[l] = NULL;
        if (exceeded) {
                r = warn(warnings, strdup("Search Line limits were exceeded, some search paths "
                                          "have been omitted"));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int dns_render(const DNSSettings *d, char **ret) {
        _cleanup_(buf_done) Buf b = {};
        int r;
        if (d->searches && d->searches[0]) {
                if ((r = buf_put(&b, "search")) < 0)
                        return r;
                STRV_FOREACH(s, d->searches)
                        if ((r = buf_printf(&b, " %s", *s)) < 0)
                                return r;
                if ((r = buf_put(&b, "\n")) < 0)
                        return r;
        }
        STRV_FOREACH(s, d->servers)
                if ((r = buf_printf(&b, "nameserver %s\n", *s)) < 0)
                        return r;
        if (d->options && d->options[0]) {
                if ((r = buf_put(&b, "options")) < 0)
                        return r;
                STRV_FOREACH(s, d->options)
                        if ((r = buf_printf(&b, " %s", *s)) < 0)
                                return r;
                if ((r = buf_put(&b, "\n")) < 0)
                        return r;
        }
        char *s = buf_take(&b);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int pod_resolv_conf_content(const Pod *pod, const PodEtcOptions *o, char **ret,
                            char ***ret_warnings, Error *err) {
        _cleanup_(dns_settings_done) DNSSettings d = {};
        int r;

        DNSPolicy policy = pod->spec.dns_policy;
        /* kubelet's getPodDNSType: ClusterFirst on hostNetwork means Default */
        if (policy == DNS_POLICY_CLUSTER_FIRST && pod->spec.host_network)
                policy = DNS_POLICY_DEFAULT;
        if (policy < 0)
                policy = DNS_POLICY_CLUSTER_FIRST;

        if (policy != DNS_POLICY_NONE && (r = dns_host_settings(o, &d, err)) < 0)
                return r;

        if (policy == DNS_POLICY_CLUSTER_FIRST ||
            policy == DNS_POLICY_CLUSTER_FIRST_WITH_HOST_NET) {
                if (o->cluster_dns && o->cluster_dns[0]) {
                        d.servers = strv_free(d.servers);
                        if (!(d.servers = strv_copy(o->cluster_dns)))
                                return -ENOMEM;
                        if ((r = dns_cluster_searches(pod, o, &d)) < 0)
                                return r;
                        d.options = strv_free(d.options);
                        if ((r = strv_extend(&d.options, "ndots:5")) < 0)
                                return r;
                } else {
                        r = warn(ret_warnings,
                                 strprintf("kubelet does not have ClusterDNS IP configured and "
                                           "cannot create Pod using \"%s\" policy. Falling back "
                                           "to \"Default\" policy.",
                                           dns_policy_to_string(pod->spec.dns_policy)));
                        if (r < 0)
                                return r;
                }
        }
        if (pod->spec.dns_config && (r = dns_append_pod_config(pod->spec.dns_config, &d)) < 0)
                return r;
        if ((r = dns_fit_limits(&d, ret_warnings)) < 0)
                return r;
        return dns_render(&d, ret);
}

/* ---- files ---- */

void pod_etc_files_done(PodEtcFiles *f) {
        free(f->hosts);
        free(f->hostname);
        free(f->resolv_conf);
        *f = (PodEtcFiles){};
}

static int write_one(const char *dir, const char *name, const char *content, char **ret_path,
                     Error *err) {
        _cleanup_free_ char *path = strprintf("%s/%s", dir, name);
        if (!path)
                return -ENOMEM;
        /* Unchanged after an agent restart (adoption): not rewritten, and
         * the file bind-mounted into the running containers stays the same
         * inode. No fsync(): the files are derived from the manifest and the
         * node on every pod start, and a power loss that tears one also
         * ends every container using it; the next start finds the content
         * changed and writes it again. Three fsync pairs were ~10 ms of a
         * pod's start on a loaded disk (docs/BENCHMARKS.md). */
        int r = write_file_replace_if_changed(path, content, strlen(content), 0644);
        if (r < 0)
                return error_set(err, r, "failed to write \"%s\": %s", path, strerror(-r));
        *ret_path = TAKE_PTR(path);
        return 0;
}

int pod_etc_files_write(const Pod *pod, const PodEtcOptions *o, PodEtcFiles *ret,
                        char ***ret_warnings, Error *err) {
        _cleanup_(pod_etc_files_done) PodEtcFiles f = {};
        _cleanup_free_ char *hosts = NULL, *hostname = NULL, *hostname_line = NULL, *resolv = NULL;
        int r;

        if ((r = pod_hosts_content(pod, o, &hosts, err)) < 0)
                return r;
        if ((r = pod_hostname(pod, o->node_hostname, &hostname)) < 0)
                return error_set(err, r, "pod has no usable hostname");
        if (!(hostname_line = strprintf("%s\n", hostname)))
                return -ENOMEM;
        if ((r = pod_resolv_conf_content(pod, o, &resolv, ret_warnings, err)) < 0)
                return r;
        if ((r = mkdir_p(o->pod_dir, 0750)) < 0)
                return error_set(err, r, "failed to create \"%s\": %s", o->pod_dir, strerror(-r));

        if ((r = write_one(o->pod_dir, "etc-hosts", hosts, &f.hosts, err)) < 0 ||
            (r = write_one(o->pod_dir, "hostname", hostname_line, &f.hostname, err)) < 0 ||
            (r = write_one(o->pod_dir, "resolv.conf", resolv, &f.resolv_conf, err)) < 0)
                return r;
        *ret = f;
        f = (PodEtcFiles){};
        return 0;
}
