/* The agent: one context that owns the event loop, the configuration and
 * every subsystem, wired together here and nowhere else. */
#pragma once

#include "api-node.h"
#include "api-server.h"
#include "daemon-config.h"
#include "event.h"
#include "eviction.h"
#include "image-gc.h"
#include "image.h"
#include "image-pulls.h"
#include "metrics.h"
#include "pod-manager.h"
#include "runtime.h"
#include "source.h"

typedef struct Daemon {
        NanoletConfig *config; /* not owned */
        Event *event;
        PodConfig *pods;
        DirSource *dir_source;
        UrlSource *url_source;
        EventSource *sigterm, *sigint, *sighup;
        EventSource *watchdog; /* systemd WatchdogSec= keep-alive */
        /* The runtime side; all NULL with --dry-run. */
        ImageStore *images;
        Runtime *runtime;
        CniRunner *cni;
        PodManager *pod_manager;
        ImagePulls *pulls;         /* registry pulls for the pods, in helper processes */
        ImageGc *image_gc;         /* image GC above imageGCHighThresholdPercent */
        ImageFlusher *flusher;     /* layers committed unflushed: syncfs in a helper, later */
        EvictionManager *eviction; /* signals, node conditions, reclaim */
        /* --address:--read-only-port and --healthz-bind-address:--healthz-port;
         * NULL when disabled (port 0) and with --dry-run. */
        ApiServer *read_only_api, *healthz_api;
        ApiNodeContext api_ctx;
        /* /metrics, /metrics/probes, /metrics/resource (kubelet's split) and
         * /metrics/pods (kube-state-metrics' pod series); NULL with --dry-run. */
        Metrics *metrics, *probe_metrics, *resource_metrics, *kube_state_metrics;
        MetricFamily *images_count, *image_bytes, *build_info;
        char *node_hostname;
        char **node_ips; /* --node-ip or detected: status.hostIP */
        bool stopping;
        unsigned n_events; /* source events seen, for logs and tests */
} Daemon;

int daemon_new(Daemon **ret, NanoletConfig *config);
Daemon *daemon_free(Daemon *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(Daemon *, daemon_free)

/* Starts the sources and runs the loop until SIGTERM/SIGINT. Pods keep
 * running when the agent stops unless --stop-pods-on-exit. SIGHUP rescans
 * the manifest sources at once; SIGPIPE is ignored (a log reader that went
 * away must not take the agent with it). */
int daemon_run(Daemon *d);

/* "SyncLoop (ADD, \"file\"): \"etcd-node1_kube-system(uid)\"", as kubelet logs it. */
void daemon_log_source_event(const SourceEvent *ev);
