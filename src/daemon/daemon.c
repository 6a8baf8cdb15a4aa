/* Wires the agent: sources -> PodConfig -> pod manager (workers on the
 * runtime and the image store). In --dry-run mode only the sources run and
 * every desired-state change is logged the way kubelet logs it. */
#include "daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api-stats.h"
#include "cgroup.h"
#include "config.h"
#include "fileio.h"
#include "image-pull.h"
#include "log.h"
#include "manifest-generation.h"
#include "node-json.h"
#include "sd-notify.h"
#include "string-util.h"
#include "strv.h"

void daemon_log_source_event(const SourceEvent *ev) {
        const char *type = source_event_type_to_string(ev->type);

        switch (ev->type) {
        case SOURCE_EVENT_ADD:
        case SOURCE_EVENT_REMOVE:
        case SOURCE_EVENT_UPDATE: {
                _cleanup_free_ char *ref =
                        strprintf("%s/%s", ev->object->namespace, ev->object->name);
                const char *const *kv = LOG_KV("pod", ref, "podUID", ev->uid);
                if (ev->type == SOURCE_EVENT_UPDATE)
                        log_kv_info(kv, "SyncLoop (%s, \"%s\"): \"%s_%s(%s)\" replaces (%s)", type,
                                    ev->source, ev->object->name, ev->object->namespace, ev->uid,
                                    ev->old_uid);
                else
                        log_kv_info(kv, "SyncLoop (%s, \"%s\"): \"%s_%s(%s)\"", type, ev->source,
                                    ev->object->name, ev->object->namespace, ev->uid);
                break;
        }
        case SOURCE_EVENT_ERROR:
                if (!ev->errors || ev->errors->n_errors == 0) {
                        log_info("SyncLoop (%s, \"%s\"): \"%s\": problems resolved", type,
                                 ev->source, ev->origin);
                        break;
                }
                log_warning("SyncLoop (%s, \"%s\"): \"%s\": %zu error(s), last good pods kept",
                            type, ev->source, ev->origin, ev->errors->n_errors);
                for (size_t i = 0; i < ev->errors->n; i++) {
                        _cleanup_free_ char *s = diag_to_string(&ev->errors->items[i]);
                        log_warning("  %s", s ? s : "(out of memory)");
                }
                break;
        case SOURCE_EVENT_LOCAL: {
                /* Added, changed or removed: the pods that project it say
                 * what they did. */
                const char *kind =
                        ev->object->kind == MANIFEST_KIND_SECRET ? "secret" : "configmap";
                _cleanup_free_ char *ref =
                        strprintf("%s/%s", ev->object->namespace, ev->object->name);
                log_kv_info(LOG_KV(kind, ref ?: ev->object->name, "origin", ev->origin),
                            "SyncLoop (%s, \"%s\")", type, ev->source);
                break;
        }
        case _SOURCE_EVENT_INVALID:
        case _SOURCE_EVENT_MAX:
        default:
                break;
        }
}

/* The URL's first answer (or failure) is in: adopted pods that no source
 * wants can go. A failed fetch marks the URL's origin as failing, which keeps
 * the pods that came from it. */
static void on_url_synced(void *userdata) {
        Daemon *d = userdata;
        if (d->pod_manager && !d->stopping)
                pod_manager_sources_ready(d->pod_manager);
}

static void on_source_event(const SourceEvent *ev, void *userdata) {
        Daemon *d = userdata;
        d->n_events++;
        daemon_log_source_event(ev);
        if (d->pod_manager && !d->stopping)
                pod_manager_handle_source_event(d->pod_manager, ev);
}

static void on_pods_stopped(void *userdata) {
        Daemon *d = userdata;
        log_info("All pods stopped.");
        (void)event_exit(d->event, 0);
}

static int on_signal(EventSource *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;

        if (d->stopping) {
                log_info("Received %s again, exiting now.", strsignal((int)si->ssi_signo));
                return event_exit(d->event, 0);
        }
        d->stopping = true;
        if (d->pod_manager && d->config->stop_pods_on_exit) {
                log_info("Received %s, stopping all pods before exiting.",
                         strsignal((int)si->ssi_signo));
                return pod_manager_stop_all(d->pod_manager, on_pods_stopped, d);
        }
        log_info("Received %s, shutting down (pods keep running).", strsignal((int)si->ssi_signo));
        return event_exit(d->event, 0);
}

/* What a daemon's user expects of SIGHUP: look at the configuration again.
 * The manifests are nanolet's configuration that changes; logs go to
 * stderr, so there is nothing to reopen. */
static int on_sighup(EventSource *s, const struct signalfd_siginfo *si, void *userdata) {
        Daemon *d = userdata;

        if (d->stopping)
                return 0;
        log_info("Received %s, rescanning the manifest sources.", strsignal((int)si->ssi_signo));
        if (d->dir_source)
                (void)dir_source_rescan(d->dir_source); /* failures are logged there */
        if (d->url_source) {
                int r = url_source_refresh(d->url_source);
                if (r < 0)
                        log_warning_errno(r, "Cannot refetch the manifest URL now (the next "
                                             "poll will): %m");
        }
        return 0;
}

/* Pinged from the loop itself: a loop that stops turning stops the pings,
 * and systemd restarts the agent (pods keep running). */
static int on_watchdog(EventSource *s, usec_t now, void *userdata) {
        (void)sd_notify_send("WATCHDOG=1");
        return event_source_set_time_relative(s, sd_watchdog_interval() / 2);
}

/* The store answers from its in-memory index: cheap on every scrape. */
static int collect_image_metrics(Metrics *m, void *userdata) {
        Daemon *d = userdata;
        Image **images = NULL;
        size_t n = 0;
        uint64_t bytes = 0;
        Error err = {};

        if (!d->images || image_store_list(d->images, &images, &n, &err) < 0)
                return 0; /* the last values stay; the store logs its own trouble */
        for (size_t i = 0; i < n; i++)
                bytes += images[i]->size;
        image_list_free(images, n);
        metric_set(d->images_count, NULL, (double)n);
        metric_set(d->image_bytes, NULL, (double)bytes);
        return 0;
}

static int daemon_setup_metrics(Daemon *d) {
        int r;

        if ((r = metrics_new(&d->metrics)) < 0 || (r = metrics_new(&d->probe_metrics)) < 0 ||
            (r = metrics_new(&d->resource_metrics)) < 0 ||
            (r = metrics_new(&d->kube_state_metrics)) < 0 ||
            (r = metrics_add_process_collector(d->metrics)) < 0 ||
            (r = metrics_register(d->metrics, &d->build_info, METRIC_GAUGE, "nanolet_build_info",
                                  "A metric with a constant '1' value labeled by the version of "
                                  "nanolet that runs.",
                                  (const char *const[]){ "version", NULL }, NULL, 0)) < 0 ||
            (r = metrics_register(d->metrics, &d->images_count, METRIC_GAUGE, "nanolet_images",
                                  "Images in the local store.", NULL, NULL, 0)) < 0 ||
            (r = metrics_register(d->metrics, &d->image_bytes, METRIC_GAUGE,
                                  "nanolet_image_store_bytes",
                                  "Size of the images in the local store (manifests, configs and "
                                  "compressed layers), in bytes.",
                                  NULL, NULL, 0)) < 0 ||
            (r = metrics_add_collector(d->metrics, collect_image_metrics, d)) < 0)
                return log_error_errno(r, "Failed to set up metrics: %m");
        metric_set(d->build_info, METRIC_LABELS(NANOLET_VERSION), 1);
        return 0;
}

/* ImagePulls' backend: image_pull_start(), a helper process per pull. */
typedef struct PullJob {
        Daemon *daemon;
        ImagePull *pull;
        image_pull_backend_done_t done;
        void *pull_userdata;
} PullJob;

static void on_pull_job_done(ImagePull *pull, int r, const char *digest, const char *error,
                             void *userdata) {
        PullJob *job = userdata;
        image_pull_backend_done_t done = job->done;
        void *pull_userdata = job->pull_userdata;

        Daemon *d = job->daemon;
        free(job);
        image_pull_cancel(pull); /* ended: this only frees it */
        done(pull_userdata, r, digest, error);
        /* After each pull, not only on the timer (docs/images.md, "Image GC"). */
        if (r >= 0) {
                image_gc_check(d->image_gc);
                image_flusher_request(d->flusher);
        }
}

static int pull_job_start(void *userdata, const char *ref, const char *auths_json,
                          image_pull_backend_done_t done, void *pull_userdata, void **ret_handle,
                          Error *err) {
        Daemon *d = userdata;
        NanoletConfig *c = d->config;

        PullJob *job = calloc(1, sizeof *job);
        if (!job)
                return -ENOMEM;
        job->daemon = d;
        job->done = done;
        job->pull_userdata = pull_userdata;
        ImagePullOptions o = {
                .registries_conf = c->registries_conf,
                .certs_dir = c->registry_certs_dir,
                .insecure_registries = c->insecure_registries,
                .credential_file = c->image_credential_file,
                .extra_auths_json = auths_json,
        };
        int r = image_pull_start(d->event, c->root_dir, ref, &o, on_pull_job_done, job, &job->pull,
                                 err);
        if (r < 0) {
                free(job);
                return r;
        }
        *ret_handle = job;
        return 0;
}

static void pull_job_cancel(void *handle) {
        PullJob *job = handle;
        image_pull_cancel(job->pull);
        free(job);
}

/* The node's capacity, and what is left of it for pods after
 * --kube-reserved and --system-reserved (kubelet's allocatable). */
typedef struct NodeCapacity {
        int64_t milli_cpu, memory;
        int64_t alloc_milli_cpu, alloc_memory;
        bool reserved_cpu, reserved_memory; /* a reservation is set */
} NodeCapacity;

static void node_capacity_read(const NanoletConfig *c, NodeCapacity *ret) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN), pages = sysconf(_SC_PHYS_PAGES),
             psize = sysconf(_SC_PAGESIZE);
        NodeCapacity n = {
                .milli_cpu = ncpu > 0 ? (int64_t)ncpu * 1000 : 0,
                .memory = pages > 0 && psize > 0 ? (int64_t)pages * psize : 0,
                .reserved_cpu = c->kube_reserved_milli_cpu || c->system_reserved_milli_cpu,
                .reserved_memory = c->kube_reserved_memory || c->system_reserved_memory,
        };
        n.alloc_milli_cpu =
                MAX(n.milli_cpu - c->kube_reserved_milli_cpu - c->system_reserved_milli_cpu,
                    (int64_t)0);
        n.alloc_memory =
                MAX(n.memory - c->kube_reserved_memory - c->system_reserved_memory, (int64_t)0);
        *ret = n;
}

/* The node's capacity and allocatable (capacity minus --kube-reserved and
 * --system-reserved, as kubelet's Node status shows them), written to
 * <run-dir>/node.json for `nanolet node`. */
static int daemon_write_node(Daemon *d, const NodeCapacity *cap) {
        NanoletConfig *c = d->config;
        NodeResources n = {
                .name = c->node_name,
                .capacity_milli_cpu = cap->milli_cpu,
                .capacity_memory = cap->memory,
                .allocatable_milli_cpu = cap->alloc_milli_cpu,
                .allocatable_memory = cap->alloc_memory,
                .max_pods = c->max_pods,
                .cgroup_driver = cgroup_driver_to_string(c->cgroup_driver),
                .cgroup_root = c->cgroup_root,
        };
        _cleanup_free_ char *path = strprintf("%s/node.json", c->run_dir), *text = NULL;
        if (!path)
                return -ENOMEM;
        int r = node_json_format(&n, &text);
        if (r < 0)
                return r;
        r = mkdir_p(c->run_dir, 0755);
        if (r < 0)
                return r;
        return write_file_atomic(path, text, strlen(text), 0644);
}

/* nanolet-monitor next to the running executable (a build tree, or the
 * libexec directory the agent is installed in), else where meson installs
 * it (the in-process agent of an installed nanolet). */
static int find_monitor(char **ret) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        char *slash = NULL;

        if (n > 0) {
                self[n] = 0;
                slash = strrchr(self, '/');
        }
        if (slash) {
                _cleanup_free_ char *p =
                        strprintf("%.*s/nanolet-monitor", (int)(slash - self), self);
                if (!p)
                        return -ENOMEM;
                if (access(p, X_OK) == 0) {
                        *ret = TAKE_PTR(p);
                        return 0;
                }
        }
        if (access(NANOLET_MONITOR_PATH, X_OK) < 0)
                return -errno;
        *ret = strdup(NANOLET_MONITOR_PATH);
        return *ret ? 0 : -ENOMEM;
}

/* The monitor each container gets, and the OCI runtime. */
static int daemon_setup_oci_runtime(Daemon *d) {
        NanoletConfig *c = d->config;
        int r;

        _cleanup_free_ char *monitor = NULL;
        if (c->container_monitor == CONTAINER_MONITOR_NANOLET) {
                r = find_monitor(&monitor);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        return log_error_errno(r,
                                               "Cannot find nanolet-monitor next to the agent nor "
                                               "as %s (--container-monitor=conmon runs conmon "
                                               "instead): %m",
                                               NANOLET_MONITOR_PATH);
                log_debug("Container monitor: %s.", monitor);
        }
        RuntimeOptions ro = nanolet_config_runtime_options(c);
        ro.monitor = monitor;
        ro.metrics = d->metrics;
        r = runtime_new(&d->runtime, d->event, &ro);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the container runtime \"%s\": %m",
                                       ro.runtime);
        return 0;
}

/* CNI, and the node's hostname and addresses the pods see. */
static int daemon_setup_host(Daemon *d) {
        NanoletConfig *c = d->config;
        char host[256];
        int r;

        /* Under the root dir, as libcni's /var/lib/cni/results: after a
         * reboot the orphan sweep needs the cached configuration and result
         * to DEL a pod that went while the node was down, or host-local
         * keeps its lease (its files are on disk too). */
        _cleanup_free_ char *cni_cache = strprintf("%s/cni/results", c->root_dir);
        _cleanup_free_ char *old_cache = strprintf("%s/cni", c->run_dir);
        if (!cni_cache || !old_cache)
                return log_oom();
        Error merr = {};
        r = cni_cache_migrate(old_cache, cni_cache, &merr);
        if (r > 0)
                log_info("Moved %d CNI cache files from %s to %s.", r, old_cache, cni_cache);
        else if (r == -ENOMEM)
                return log_oom();
        else if (r < 0)
                log_warning("%s; ignored.", strna(merr.message));
        error_clear(&merr);
        CniRunnerOptions co = { .bin_dirs = c->cni_bin_dir,
                                .cache_dir = cni_cache,
                                .plugin_timeout = c->cni_plugin_timeout,
                                .max_parallel = (unsigned)c->cni_max_parallel,
                                .metrics = d->metrics };
        r = cni_runner_new(d->event, &co, &d->cni);
        if (r < 0)
                return log_error_errno(r, "Failed to set up CNI: %m");
        if (gethostname(host, sizeof host - 1) < 0)
                return log_error_errno(errno, "Failed to get the host name: %m");
        host[sizeof host - 1] = 0;
        d->node_hostname = strdup(host);
        if (!d->node_hostname)
                return log_oom();
        if (c->node_ips)
                d->node_ips = strv_copy(c->node_ips);
        else if ((r = node_ip_detect(&d->node_ips)) < 0)
                log_warning_errno(r, "Cannot find the node's address, status.hostIP stays empty "
                                     "(set --node-ip): %m");
        if (c->node_ips && !d->node_ips)
                return log_oom();
        return 0;
}

/* Image pulls and the pod manager. */
static int daemon_setup_pods(Daemon *d, const NodeCapacity *n) {
        NanoletConfig *c = d->config;
        const char *runtime = nanolet_config_runtime(c);
        int r;

        /* kubelet: serializeImagePulls (default) means one pull at a time;
         * without it, maxParallelImagePulls or no bound (here: 100). */
        ImagePullBackend pb = { .start = pull_job_start, .cancel = pull_job_cancel, .userdata = d };
        unsigned parallel = c->serialize_image_pulls      ? 1
                            : c->max_parallel_image_pulls ? (unsigned)c->max_parallel_image_pulls
                                                          : 100;
        r = image_pulls_new(&d->pulls, d->event, parallel, &pb);
        if (r < 0)
                return log_error_errno(r, "Failed to set up image pulls: %m");
        PodManagerOptions po = {
                .root_dir = c->root_dir,
                .run_dir = c->run_dir,
                .pod_logs_dir = c->pod_logs_dir,
                .container_logs_dir = c->container_logs_dir,
                .node_name = c->node_name,
                .node_hostname = d->node_hostname,
                .cluster_domain = c->cluster_domain,
                .cluster_dns = c->cluster_dns,
                .node_ips = d->node_ips,
                .resolv_conf = c->resolv_conf,
                .runtime_name = strrchr(runtime, '/') ? strrchr(runtime, '/') + 1 : runtime,
                .pod_pids_limit = c->pod_pids_limit,
                .cgroups = { .driver = c->cgroup_driver, .root = c->cgroup_root },
                .cpu_cfs_quota = c->cpu_cfs_quota,
                .no_seccomp_default = !c->seccomp_default,
                .allowed_unsafe_sysctls = c->allowed_unsafe_sysctls,
                .allocatable_memory = n->reserved_memory ? (uint64_t)n->alloc_memory : 0,
                .allocatable_milli_cpu = n->reserved_cpu ? n->alloc_milli_cpu : 0,
                .max_pods = c->max_pods,
                .container_log_max_size = c->container_log_max_size,
                .container_log_max_files = (unsigned)c->container_log_max_files,
                .container_log_max_workers = (unsigned)c->container_log_max_workers,
                .container_log_monitor_interval = c->container_log_monitor_interval,
                .sync_frequency = c->sync_frequency,
                .images = d->images,
                .runtime = d->runtime,
                .cni = d->cni,
                .cni_conf_dir = c->cni_conf_dir,
                .pod_cidr = c->pod_cidr,
                .config = d->pods,
                .pulls = d->pulls,
                .image_pull_never = c->image_pull_never,
                .metrics = d->metrics,
                .probe_metrics = d->probe_metrics,
                .resource_metrics = d->resource_metrics,
                .kube_state_metrics = d->kube_state_metrics,
        };
        r = pod_manager_new(&d->pod_manager, d->event, &po);
        if (r < 0)
                return r;
        return 0;
}

/* Image GC and the eviction manager that also drives it. */
static int daemon_setup_gc(Daemon *d) {
        NanoletConfig *c = d->config;
        int r;

        ImageGcOptions go = {
                .root_dir = c->root_dir,
                .policy = { .high_percent = (unsigned)c->image_gc_high_threshold,
                            .low_percent = (unsigned)c->image_gc_low_threshold,
                            .min_age = c->image_minimum_gc_age,
                            .max_age = c->image_maximum_gc_age },
                .pinned_images = c->pinned_images,
                .metrics = d->metrics,
        };
        r = image_gc_new(&d->image_gc, d->event, &go);
        if (r < 0)
                return log_error_errno(r, "Failed to set up image GC: %m");
        _cleanup_(eviction_config_done) EvictionConfig ec = {};
        Error err = {};
        _cleanup_free_ char *node_status = strprintf("%s/node-conditions.json", c->run_dir);
        if (!node_status)
                return log_oom();
        r = eviction_config_parse(c->eviction_hard, c->eviction_soft, c->eviction_soft_grace_period,
                                  c->eviction_minimum_reclaim,
                                  c->eviction_pressure_transition_period, &ec, &err);
        if (r < 0)
                return log_error_errno(r, "Invalid eviction settings: %s",
                                       err.message[0] ? err.message : "?");
        EvictionManagerOptions eo = {
                .root_dir = c->root_dir,
                .status_path = node_status,
                .config = &ec,
                .image_gc = d->image_gc,
                .pods = d->pod_manager,
                .static_pods = c->evict_static_pods ? STATIC_POD_EVICTION_EVICT_AND_READMIT
                                                    : STATIC_POD_EVICTION_NEVER,
                .metrics = d->metrics,
        };
        r = eviction_manager_new(&d->eviction, d->event, &eo);
        if (r < 0)
                return log_error_errno(r, "Failed to set up eviction: %m");
        return 0;
}

static int daemon_setup_runtime(Daemon *d) {
        NanoletConfig *c = d->config;
        Error ierr = {};
        NodeCapacity n;
        int r;

        /* runc's systemd cgroup manager needs systemd as PID 1: say so now
         * rather than fail every container. */
        if (c->cgroup_driver == CGROUP_DRIVER_SYSTEMD && !runtime_systemd_is_init("/", &ierr)) {
                log_error("%s.", ierr.message);
                return -EOPNOTSUPP;
        }
        node_capacity_read(c, &n);
        r = daemon_write_node(d, &n);
        if (r < 0)
                log_warning_errno(r, "Cannot write %s/node.json: %m", c->run_dir);

        r = image_store_open(c->root_dir, NULL, &d->images, &ierr);
        if (r < 0)
                return log_error_errno(r, "Failed to open the image store in \"%s\": %s",
                                       c->root_dir, ierr.message);
        r = image_flusher_new(d->event, d->images, 0, &d->flusher);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the layer flush: %m");
        r = daemon_setup_metrics(d);
        if (r < 0)
                return r;
        r = daemon_setup_oci_runtime(d);
        if (r < 0)
                return r;
        r = daemon_setup_host(d);
        if (r < 0)
                return r;
        r = daemon_setup_pods(d, &n);
        if (r < 0)
                return r;
        return daemon_setup_gc(d);
}

static int daemon_listen(Daemon *d, ApiServer **ret, const char *name, const char *address,
                         int64_t port, bool with_pods) {
        Error err = {};
        int r;

        if (port == 0)
                return 0;
        ApiServerOptions o = { .address = address, .port = (uint16_t)port, .name = name };
        r = api_server_new(ret, d->event, &o, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to start the %s: %s", name,
                                       err.message[0] ? err.message : strerror(-r));
        r = api_node_add_routes(*ret, &d->api_ctx, with_pods);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the %s: %m", name);
        log_info("Serving the %s on %s%s%s:%u.", name, strchr(address, ':') ? "[" : "", address,
                 strchr(address, ':') ? "]" : "", api_server_port(*ret));
        return 0;
}

/* Listening is part of starting: a port in use is a start-up error. */
static int daemon_setup_api(Daemon *d) {
        NanoletConfig *c = d->config;
        int r;

        d->api_ctx = (ApiNodeContext){
                .event = d->event,
                .pod_manager = d->pod_manager,
                .metrics = d->metrics,
                .probe_metrics = d->probe_metrics,
                .resource_metrics = d->resource_metrics,
                .kube_state_metrics = d->kube_state_metrics,
        };
        r = daemon_listen(d, &d->read_only_api, "read-only API", c->address, c->read_only_port,
                          true);
        if (r < 0)
                return r;
        if (d->read_only_api && (r = api_stats_add_routes(d->read_only_api, d->pod_manager)) < 0)
                return log_error_errno(r, "Failed to set up the read-only API: %m");
        return daemon_listen(d, &d->healthz_api, "health endpoint", c->healthz_bind_address,
                             c->healthz_port, false);
}

/* Settings accepted but not applied, each said once. kubelet's graceful
 * node shutdown takes a systemd-logind delay inhibitor and stops the pods on
 * PrepareForShutdown, over D-Bus. nanolet has no D-Bus client and often runs
 * where logind does not (PID 1 not systemd), so the setting has no effect. */
static void daemon_warn_unsupported(const NanoletConfig *c) {
        if (c->shutdown_grace_period > 0 || c->shutdown_grace_period_critical_pods > 0)
                log_warning("shutdownGracePeriod %" PRIu64
                            "s, shutdownGracePeriodCriticalPods %" PRIu64
                            "s: graceful node shutdown needs systemd-logind; not implemented: pods "
                            "are not stopped before shutdown (--stop-pods-on-exit stops them when "
                            "the agent itself is stopped).",
                            (uint64_t)(c->shutdown_grace_period / USEC_PER_SEC),
                            (uint64_t)(c->shutdown_grace_period_critical_pods / USEC_PER_SEC));
        /* The built-in bridge (src/network/cni-config.c) always sets the
         * bridge plugin's hairpinMode; a CNI configuration file decides for
         * itself, as with a CRI runtime under kubelet. */
        if (c->hairpin_mode != HAIRPIN_MODE_HAIRPIN_VETH)
                log_warning("hairpinMode \"%s\" is not applied: the built-in bridge network uses "
                            "hairpin-veth, and a file in the CNI configuration directory sets its "
                            "own.",
                            hairpin_mode_to_string(c->hairpin_mode));
}

/* The manifest directory and the URL, each when configured. */
static int daemon_setup_sources(Daemon *d) {
        NanoletConfig *config = d->config;
        int r;

        if (!isempty(config->pod_manifest_path)) {
                DirSourceOptions o = {
                        .path = config->pod_manifest_path,
                        .node_name = config->node_name,
                        .check_frequency = config->file_check_frequency,
                        .max_file_size = config->max_manifest_size,
                        .allow_insecure = config->allow_insecure_manifests,
                };
                r = dir_source_new(&d->dir_source, d->event, d->pods, &o);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up manifest directory \"%s\": %m",
                                               config->pod_manifest_path);
        }
        if (!isempty(config->manifest_url)) {
                _cleanup_free_ char *state_path =
                        strprintf("%s/%s", config->root_dir, MANIFEST_GENERATION_FILE);
                if (!state_path)
                        return log_oom();
                UrlVerifierOptions v = {
                        .url = config->manifest_url,
                        .headers = config->manifest_url_headers,
                        .key_files = config->manifest_url_public_keys,
                        .format = manifest_signature_format_from_string(
                                config->manifest_url_signature_format),
                        .signature_url = isempty(config->manifest_url_signature_url)
                                                 ? NULL
                                                 : config->manifest_url_signature_url,
                        /* a dry run writes nothing; it still refuses what
                         * is older than what it accepted since its start */
                        .state_path = config->dry_run ? NULL : state_path,
                        .max_body = config->max_manifest_size,
                        .metrics = d->metrics,
                };
                UrlSourceOptions o = {
                        .url = config->manifest_url,
                        .headers = config->manifest_url_headers,
                        .node_name = config->node_name,
                        .check_frequency = config->http_check_frequency,
                        .max_body = config->max_manifest_size,
                        .max_backoff = config->manifest_url_max_backoff,
                        .synced = on_url_synced,
                        .synced_userdata = d,
                        .metrics = d->metrics,
                        .verify = config->manifest_url_public_keys &&
                                                  config->manifest_url_public_keys[0]
                                          ? &v
                                          : NULL,
                };
                Error error = {};
                r = url_source_new(&d->url_source, d->event, d->pods, &o, &error);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up manifest URL \"%s\": %s",
                                               config->manifest_url,
                                               error.message[0] ? error.message : strerror(-r));
        }
        return 0;
}

int daemon_new(Daemon **ret, NanoletConfig *config) {
        _cleanup_(daemon_freep) Daemon *d = calloc(1, sizeof *d);
        int r;

        if (!d)
                return -ENOMEM;
        d->config = config;
        r = event_new(&d->event);
        if (r < 0)
                return r;
        r = pod_config_new(&d->pods, on_source_event, d);
        if (r < 0)
                return r;
        r = event_add_signal(d->event, &d->sigterm, SIGTERM, on_signal, d);
        if (r < 0)
                return r;
        r = event_add_signal(d->event, &d->sigint, SIGINT, on_signal, d);
        if (r < 0)
                return r;
        r = event_add_signal(d->event, &d->sighup, SIGHUP, on_sighup, d);
        if (r < 0)
                return r;
        /* stderr is often a pipe (journald, `| tee`, a log collector): its
         * reader going away must cost log lines, not the agent. A write
         * then fails with EPIPE, which the logger ignores. Children get the
         * default back (spawn_reset_signals()). */
        if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
                return -errno;

        daemon_warn_unsupported(config);
        if (!config->dry_run) {
                r = daemon_setup_runtime(d);
                if (r < 0)
                        return r;
                r = daemon_setup_api(d);
                if (r < 0)
                        return r;
        }
        r = daemon_setup_sources(d);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(d);
        return 0;
}

Daemon *daemon_free(Daemon *d) {
        if (!d)
                return NULL;
        url_source_free(d->url_source);
        dir_source_free(d->dir_source);
        api_server_free(d->read_only_api);
        api_server_free(d->healthz_api);
        eviction_manager_free(d->eviction);
        image_gc_free(d->image_gc);
        image_flusher_free(d->flusher);
        pod_manager_free(d->pod_manager);
        image_pulls_free(d->pulls);
        /* Children still running are SIGKILLed with their process group
         * and left to loop-owned child sources; event_free() below drops
         * those, so such a zombie lasts only until the agent exits, right
         * after. Nothing here waits. */
        cni_runner_free(d->cni);
        runtime_free(d->runtime);
        image_store_free(d->images);
        /* After everything that counts into them. */
        metrics_free(d->metrics);
        metrics_free(d->probe_metrics);
        metrics_free(d->resource_metrics);
        metrics_free(d->kube_state_metrics);
        free(d->node_hostname);
        strv_free(d->node_ips);
        pod_config_free(d->pods);
        event_source_free(d->watchdog);
        event_source_free(d->sigterm);
        event_source_free(d->sigint);
        event_source_free(d->sighup);
        event_free(d->event);
        free(d);
        return NULL;
}

int daemon_run(Daemon *d) {
        int r;

        log_info("nanolet starting: node \"%s\", manifests \"%s\"%s%s%s", d->config->node_name,
                 strempty(d->config->pod_manifest_path), d->config->manifest_url ? ", URL \"" : "",
                 strempty(d->config->manifest_url), d->config->manifest_url ? "\"" : "");
        if (d->config->dry_run)
                log_info("Dry run: pod events are logged, no container is touched.");
        if (d->pod_manager) {
                r = pod_manager_start(d->pod_manager);
                if (r < 0)
                        return log_error_errno(r, "Failed to start the pod manager: %m");
        }

        if (d->dir_source) {
                r = dir_source_start(d->dir_source);
                if (r < 0)
                        return log_error_errno(r,
                                               "Failed to start the manifest directory source: %m");
        }
        if (d->url_source) {
                r = url_source_start(d->url_source);
                if (r < 0)
                        return log_error_errno(r, "Failed to start the manifest URL source: %m");
        } else if (d->pod_manager)
                /* The directory was read synchronously by dir_source_start(). */
                pod_manager_sources_ready(d->pod_manager);
        (void)sd_notify_send("READY=1");
        usec_t wd = sd_watchdog_interval();
        if (wd > 0) {
                r = event_add_time_relative(d->event, &d->watchdog, wd / 2, 0, on_watchdog, d);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up the watchdog: %m");
        }
        r = event_loop(d->event);
        (void)sd_notify_send("STOPPING=1");
        return r;
}
