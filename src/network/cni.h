/* Pod networking through CNI plugins (containernetworking-plugins), as the
 * CNI specification and libcni describe it: configuration loading and
 * validation, chained ADD / reverse DEL / CHECK, plugin results and error
 * objects. Plugins run asynchronously on the event loop, one child at a time
 * per operation, a bounded number of operations at once, each plugin with a
 * timeout. Every byte a plugin prints is untrusted input.
 *
 * Cache: every ADD leaves <cache_dir>/<container-id>.json (written
 * atomically before the first plugin runs and again with the result), so a
 * DEL or CHECK after an agent restart or a kill -9 in the middle of an ADD
 * has the configuration, port mappings and prevResult the ADD used. A
 * successful DEL removes it. See docs/internals/network.md. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "error.h"
#include "event.h"
#include "metrics.h"
#include "time-util.h"

#define CNI_DEFAULT_CONF_DIR "/etc/cni/net.d"
#define CNI_DEFAULT_BIN_DIRS "/opt/cni/bin:/usr/lib/cni"
#define CNI_DEFAULT_POD_CIDR "10.86.0.0/16"
#define CNI_DEFAULT_IFNAME "eth0"

/* What went wrong, for logs and pod status. error is the negative errno;
 * code/details are set only from a plugin's error object (code 0 else). */
typedef struct CniError {
        Error base; /* the -errno and the sentence (a plugin's "msg") */
        unsigned code;
        char *plugin; /* type of the plugin that failed, or NULL */
        char *details;
} CniError;

void cni_error_done(CniError *e);
/* "plugin \"bridge\" failed (code 11): msg: details" or just msg. NULL on ENOMEM. */
char *cni_error_to_string(const CniError *e);

/* --- configuration ----------------------------------------------------- */

/* A validated network configuration list. Immutable and reference counted:
 * every operation holds a reference, so the caller may drop its own at any
 * time (for example when the conf dir changes). */
typedef struct CniConfig CniConfig;

/* The first *.conflist / *.conf in conf_dir (lexical order; a .conf is
 * wrapped as a one-plugin list), or, when there is none or conf_dir does not
 * exist, the built-in default on pod_cidr (NULL: CNI_DEFAULT_POD_CIDR). A
 * broken first file is an error naming file and field, never skipped. */
int cni_config_load(const char *conf_dir, const char *pod_cidr, CniConfig **ret, CniError *err);
/* Parses one file's contents; origin names it in messages. is_list: .conflist. */
int cni_config_parse(const char *data, size_t size, const char *origin, bool is_list,
                     CniConfig **ret, CniError *err);
/* Built-in default, identical to contrib/cni/10-nanolet.conflist with pod_cidr. */
int cni_config_new_default(const char *pod_cidr, CniConfig **ret, CniError *err);
CniConfig *cni_config_ref(CniConfig *c);
CniConfig *cni_config_unref(CniConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(CniConfig *, cni_config_unref)
#define _cleanup_cni_config_unref_ _cleanup_(cni_config_unrefp)

const char *cni_config_name(const CniConfig *c);
const char *cni_config_version(const CniConfig *c);
/* The file it came from, or NULL for the built-in default. */
const char *cni_config_origin(const CniConfig *c);
size_t cni_config_n_plugins(const CniConfig *c);
const char *cni_config_plugin_type(const CniConfig *c, size_t i);
/* The whole list as compact JSON (sorted keys); NULL on ENOMEM. */
char *cni_config_to_json(const CniConfig *c);

/* --- results ----------------------------------------------------------- */

typedef struct CniInterface {
        char *name;
        char *mac;     /* may be NULL */
        char *sandbox; /* netns path; NULL/empty for host-side interfaces */
} CniInterface;

typedef struct CniIP {
        int family;    /* AF_INET or AF_INET6 */
        char *address; /* CIDR, e.g. "10.86.0.5/16" */
        char *gateway; /* may be NULL */
        int interface; /* index into interfaces, -1 when absent */
} CniIP;

typedef struct CniRoute {
        char *dst; /* CIDR */
        char *gw;  /* may be NULL */
} CniRoute;

typedef struct CniDNS {
        char **nameservers;
        char *domain;
        char **search;
        char **options;
} CniDNS;

typedef struct CniResult {
        char *cni_version;
        CniInterface *interfaces;
        size_t n_interfaces;
        CniIP *ips;
        size_t n_ips;
        CniRoute *routes;
        size_t n_routes;
        CniDNS dns;
        char *json; /* the plugin's document, re-serialized compactly (prevResult, cache) */
} CniResult;

/* Parses a result (cniVersion 0.3.0, 0.3.1, 0.4.0 or 1.0.0 shapes). At most
 * 1 MiB, bounded counts, every address checked. -EBADMSG with err->base.message on
 * anything invalid. */
int cni_result_parse(const char *data, size_t size, CniResult **ret, CniError *err);
/* Parses a plugin's error object {cniVersion, code, msg, details} into err
 * (err->base.error = -EIO). Returns 0 when data was an error object, -EBADMSG else. */
int cni_error_parse(const char *data, size_t size, CniError *err);
CniResult *cni_result_free(CniResult *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(CniResult *, cni_result_free)
#define _cleanup_cni_result_free_ _cleanup_(cni_result_freep)
/* The pod's IPs, without prefix length, in result order: IPs of interfaces
 * inside the sandbox (or without an interface index), at most one per
 * family (status.podIP is the first). */
int cni_result_pod_ips(const CniResult *r, char ***ret);

/* --- running plugins --------------------------------------------------- */

typedef struct CniRunner CniRunner;
typedef struct CniOp CniOp;

typedef struct CniRunnerOptions {
        const char *bin_dirs;  /* CNI_PATH, ':'-separated; default CNI_DEFAULT_BIN_DIRS */
        const char *cache_dir; /* required: <root-dir>/cni/results (survives a reboot) */
        usec_t plugin_timeout; /* per plugin run; default 2 min */
        unsigned max_parallel; /* operations at once; default 1 per CPU, at least 2 */
        /* nanolet_cni_operations_total / _errors_total / _duration_seconds
         * {operation} (not owned; NULL: not counted). */
        Metrics *metrics;
} CniRunnerOptions;

int cni_runner_new(Event *e, const CniRunnerOptions *o, CniRunner **ret);
/* Queued operations are dropped, running plugins killed and reaped; no
 * callback is called. */
CniRunner *cni_runner_free(CniRunner *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(CniRunner *, cni_runner_free)
#define _cleanup_cni_runner_free_ _cleanup_(cni_runner_freep)

typedef enum CniProtocol {
        CNI_PROTOCOL_TCP,
        CNI_PROTOCOL_UDP,
        CNI_PROTOCOL_SCTP,
        _CNI_PROTOCOL_MAX,
        _CNI_PROTOCOL_INVALID = -EINVAL,
} CniProtocol;
const char *cni_protocol_to_string(CniProtocol p);
CniProtocol cni_protocol_from_string(const char *s); /* case-insensitive, as k8s' TCP/UDP/SCTP */

typedef struct CniPortMapping {
        uint16_t host_port;
        uint16_t container_port;
        CniProtocol protocol;
        const char *host_ip; /* NULL or "" for all addresses */
} CniPortMapping;

/* Borrowed for the duration of the call only: the op copies what it needs. */
typedef struct CniRequest {
        const char *container_id; /* [A-Za-z0-9_.-], <= 128: also the cache file name */
        const char *netns;        /* the pinned netns path */
        const char *ifname;       /* NULL: CNI_DEFAULT_IFNAME */
        const char *pod_namespace;
        const char *pod_name;
        const char *pod_uid;
        const CniPortMapping *port_mappings; /* injected as runtimeConfig.portMappings */
        size_t n_port_mappings;
} CniRequest;

/* r is 0 or a negative errno; err explains a failure (a plugin's error
 * object, its stderr, a timeout). result: ADD only, owned by the callback
 * (free with cni_result_free); NULL otherwise. */
typedef void (*cni_done_t)(CniRunner *runner, int r, CniResult *result, const CniError *err,
                           void *userdata);

/* ADD through the chain, each plugin getting the previous one's result as
 * prevResult. When a plugin fails, the chain is DELed (reverse order) before
 * done reports the ADD's error, so no half-configured sandbox remains. */
int cni_add(CniRunner *runner, CniConfig *config, const CniRequest *req, cni_done_t done,
            void *userdata, CniOp **ret_op);
/* DEL in reverse order with the cached prevResult. Uses the cached
 * configuration when the cache exists (what the ADD used), else config;
 * with neither there is nothing to delete (r = 0). Tolerates a missing or
 * stale netns (CNI_NETNS is then empty). Every plugin is tried even when
 * one fails; the first failure is reported and the cache kept for a retry. */
int cni_del(CniRunner *runner, CniConfig *config, const CniRequest *req, cni_done_t done,
            void *userdata, CniOp **ret_op);
/* CHECK with the cached result and configuration. A missing or unusable
 * cache fails it (-ENOENT or the read's error, the message naming the file)
 * and, with config (the current configuration; may be NULL), is written
 * again from config without a result, so that a later DEL still finds it.
 * A no-op for cniVersion < 0.4.0 and for disableCheck lists. */
int cni_check(CniRunner *runner, CniConfig *config, const CniRequest *req, cni_done_t done,
              void *userdata, CniOp **ret_op);
void cni_op_cancel(CniOp *op);

/* The cached ADD result of a container, for adoption after a restart:
 * 0 and *ret (NULL when the cache has no result: an ADD was interrupted),
 * -ENOENT without a cache. */
int cni_runner_cached_result(CniRunner *runner, const char *container_id, CniResult **ret);
/* Container IDs with a cache file: sandboxes that may still need a DEL. */
int cni_runner_list_cached(CniRunner *runner, char ***ret);
/* Moves the <id>.json cache files in from_dir (where an older layout kept
 * them) into to_dir (the runner's cache_dir, created 0700), for a start
 * before the runner's first operation. Nothing in from_dir is trusted: it is
 * never followed (a symlink or other non-directory there is removed), a
 * file that is no regular one or is over the cache's size cap is removed
 * unread, one to_dir has in a version at least as recent is dropped, other
 * names are left alone, and from_dir is removed once empty. Contents are
 * copied as they are: a damaged file is handled where it is read. Returns
 * the number of files moved, or the first failure (a negative errno, err
 * saying which file; the rest are still tried, the failed one is kept). */
int cni_cache_migrate(const char *from_dir, const char *to_dir, Error *err);

/* ---- the node's address (node-ip.c) ---- */

/* The node's IPv4 address as kubelet picks it without a cloud provider:
 * the address of the default route's interface, else the first global
 * address. Appends it to *ret; -ENOENT if there is none. */
int node_ip_detect(char ***ret);
/* The default route's interface from the text of /proc/net/route. */
int node_default_route_interface(const char *route_table, char ret[static 16]);
