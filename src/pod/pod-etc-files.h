/* A pod's /etc/hosts, /etc/hostname and /etc/resolv.conf, written under the
 * pod directory as kubelet (hosts) and containerd (hostname, resolv.conf)
 * produce them, and bound into every container by container-config.c. The
 * *_content() functions are pure (apart from reading the host's files) so
 * tests compare whole files. */
#pragma once

#include "pod.h"
#include "runtime-config.h"

typedef struct PodEtcOptions {
        const char *pod_dir;        /* <root-dir>/pods/<uid> */
        const char *node_hostname;  /* the host's name (hostNetwork pods) */
        const char *cluster_domain; /* --cluster-domain; NULL/"" = none */
        char *const *cluster_dns;   /* --cluster-dns strv; NULL = none */
        /* --resolv-conf: NULL = /etc/resolv.conf; "" = none (kubelet then
         * points pods at 127.0.0.1 with search "."). */
        const char *resolv_conf;
        const char *host_hosts; /* hostNetwork pods' base; NULL = /etc/hosts */
        char *const *pod_ips;   /* strv; NULL until networking */
} PodEtcOptions;

typedef struct PodEtcFiles {
        char *hosts;       /* <pod_dir>/etc-hosts */
        char *hostname;    /* <pod_dir>/hostname */
        char *resolv_conf; /* <pod_dir>/resolv.conf */
} PodEtcFiles;

/* Writes all three files atomically (0644). ret_warnings (optional) gets
 * what kubelet reports as events (ClusterFirst without cluster DNS falling
 * back to Default, nameservers/searches trimmed to the resolver's limits). */
int pod_etc_files_write(const Pod *pod, const PodEtcOptions *o, PodEtcFiles *ret,
                        char ***ret_warnings, Error *err);
void pod_etc_files_done(PodEtcFiles *f);

/* The pod's hostname: spec.hostname or metadata.name, truncated to 63
 * characters without a trailing '-' or '.'; the node's for hostNetwork. */
int pod_hostname(const Pod *pod, const char *node_hostname, char **ret);
/* "<subdomain>.<ns>.svc.<cluster_domain>", or NULL (returns 0) when there
 * is no subdomain or no cluster domain. */
int pod_host_domain(const Pod *pod, const char *cluster_domain, char **ret);

int pod_hosts_content(const Pod *pod, const PodEtcOptions *o, char **ret, Error *err);
int pod_resolv_conf_content(const Pod *pod, const PodEtcOptions *o, char **ret,
                            char ***ret_warnings, Error *err);
