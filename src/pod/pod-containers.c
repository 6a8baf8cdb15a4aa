/* The pod worker's containers: start (image -> rootfs -> bundle ->
 * conmon/runc), kill (preStop, stop signal, SIGKILL after the grace
 * period) and exits (the PLEG relist). See pod-worker-internal.h. */
#include "pod-worker-internal.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backoff.h"
#include "cgroup.h"
#include "checkpoint.h"
#include "cni.h"
#include "container-config.h"
#include "container-id.h"
#include "fileio.h"
#include "image-volumes.h"
#include "log.h"
#include "mount-util.h"
#include "pod-actions.h"
#include "pod-logs.h"
#include "pod-status.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"
#include "termination-message.h"

void op_clear_start(ContainerOp *op) {
        free(op->id);
        free(op->attempt_dir);
        free(op->rootfs);
        free(op->log_path);
        op->id = op->attempt_dir = op->rootfs = op->log_path = NULL;
        op->image = image_free(op->image);
        image_pull_waiter_cancel(TAKE_PTR(op->pull));
        op->pulled = false;
        op->vols = mfree(op->vols);
        op->vol_digests = strv_free(op->vol_digests);
        op->n_vols = op->vols_resolved = op->vols_mounted = 0;
        op->vols_listed = op->vol_pulled = false;
        if (op->apparmor_waiting)
                pod_apparmor_forget(&op->w->ctx->apparmor, op);
        op->apparmor_waiting = op->apparmor_retried = false;
        image_worker_abort(&op->iw);
        if (op->rop)
                runtime_op_cancel(op->rop);
        op->rop = NULL;
        op->starting = false;
}

void op_clear_exit_watch(ContainerOp *op) {
        op->exit_watch = event_source_free(op->exit_watch);
        op->exit_watch_id = mfree(op->exit_watch_id);
}

void container_set_waiting(ContainerState *c, const char *reason, const char *message) {
        (void)set_str(&c->waiting_reason, reason);
        (void)set_str(&c->waiting_message, message);
}

static void early_release(ContainerOp *op, const char *why);

/* An attempt could not be created or started: the container waits with the
 * reason kubelet would show and retries after the back-off. */
static int container_idmap_release(const char *attempt_dir, const char *rootfs_bind);
static char *userns_rootfs_path(const PodWorker *w, const char *container_id);

static void start_failed(ContainerOp *op, const char *reason, const char *message) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        if (op->early) {
                /* Not claimed by a ready sandbox's start: no event and no
                 * back-off; the start after the sandbox tries again and
                 * reports what fails then, as without the preparation. */
                _cleanup_free_ char *why = strprintf("%s: %s", reason, message);
                early_release(op, why ? why : reason);
                return;
        }
        worker_log(w, LOG_WARNING, c->spec->name,
                   "Failed to start container \"%s\" of pod \"%s\": %s: %s", c->spec->name,
                   w->full_name, reason, message);
        worker_event(w, c, POD_EVENT_FAILED, "Error: %s: %s", reason, message);
        free(c->pull_image);
        c->pull_image = op->pulling_image ? strdup(op->pulling_image) : NULL;
        metric_inc(w->ctx->metrics.started_containers_errors,
                   METRIC_LABELS(reason, pod_metrics_container_type(c->is_init)));
        container_set_waiting(c, reason, message);
        if (op->attempt_dir && op->id) {
                _cleanup_free_ char *bind = userns_rootfs_path(w, op->id);
                (void)container_idmap_release(op->attempt_dir, bind);
        }
        if (op->rootfs_mounted) {
                Error ie = {};
                (void)image_rootfs_umount(op->rootfs, &ie);
                op->rootfs_mounted = false;
        }
        if (op->attempt_dir)
                (void)container_subpaths_release(op->attempt_dir);
        c->state = op->state_before;
        backoff_on_failed_start(c, now_usec(CLOCK_MONOTONIC));
        op_clear_start(op);
        worker_op_done(w);
}

bool container_start_abandon_pull(ContainerOp *op) {
        ContainerState *c = op_container(op);

        if (!op->starting || !op->pull || !c)
                return false;
        log_info("Container \"%s\" of pod \"%s\": the pod is terminating, no longer waiting "
                 "for image \"%s\".",
                 c->spec->name, op->w->full_name, c->spec->image);
        c->state = op->state_before;
        op_clear_start(op); /* cancels the waiter, and the pull if it was the last */
        worker_op_done(op->w);
        return true;
}

/* ---- container start: image -> rootfs -> bundle -> conmon/runc ---- */

static void on_container_started(Runtime *rt, int r, const Error *err, void *userdata) {
        ContainerOp *op = userdata;
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        op->rop = NULL;
        if (r < 0) {
                /* The created container must go, or its ID blocks the next attempt. */
                w->busy++;
                if (runtime_container_delete(rt, op->id, true, on_attempt_deleted, w, NULL) < 0)
                        worker_op_done(w);
                start_failed(op, "RunContainerError", err ? err->message : strerror(-r));
                return;
        }
        c->state = CONTAINER_RUNNING;
        c->started_at = now_usec(CLOCK_REALTIME);
        c->running_since = now_usec(CLOCK_MONOTONIC);
        c->exit_code = -1;
        c->kill_requested = false;
        container_set_waiting(c, NULL, NULL);
        worker_log(w, LOG_INFO, c->spec->name, "Started container \"%s\" of pod \"%s\" (%s).",
                   c->spec->name, w->full_name, op->id);
        worker_event(w, c, POD_EVENT_STARTED, "Started container %s", c->spec->name);
        AttemptRecord rec = { .started_at = c->started_at,
                              .exit_code = -1,
                              .image_digest = c->image_digest };
        r = attempt_record_write(op->attempt_dir, &rec);
        if (r < 0)
                worker_log_errno(w, LOG_WARNING, r, c->spec->name,
                                 "Container \"%s\" of pod \"%s\": cannot record its start: %m",
                                 c->spec->name, w->full_name);
        /* postStart, then probes; they set started/ready. */
        pod_probes_container_started(w->probes, c);

        if (w->ctx->o->container_logs_dir) {
                _cleanup_free_ char *link =
                        strprintf("%s/%s_%s_%s-%s.log", w->ctx->o->container_logs_dir,
                                  w->object->name, w->object->namespace, c->spec->name, op->id);
                if (link) {
                        (void)mkdir_p(w->ctx->o->container_logs_dir, 0755);
                        (void)unlink(link);
                        if (symlink(op->log_path, link) < 0)
                                log_debug_errno(errno, "Failed to link %s: %m", link);
                }
        }
        /* The attempt now belongs to the container; only the op's scratch goes. */
        op->rootfs_mounted = false;
        op_clear_start(op);
        worker_op_done(w);
}

static void on_container_created(Runtime *rt, int r, pid_t pid, pid_t conmon_pid, const Error *err,
                                 void *userdata) {
        ContainerOp *op = userdata;
        ContainerState *c = op_container(op);

        op->rop = NULL;
        if (r < 0) {
                start_failed(op, "CreateContainerError", err ? err->message : strerror(-r));
                return;
        }
        c->state = CONTAINER_CREATED;
        /* The start is queued before the event: both run from deferred
         * sources in the order they were armed, so `runc start` is spawned
         * before the pod's status and event files are written, not after. */
        r = runtime_container_start(rt, op->id, on_container_started, op, &op->rop);
        worker_event(op->w, c, POD_EVENT_CREATED, "Created container: %s", c->spec->name);
        if (r < 0) {
                Error e = {};
                error_set(&e, r, "cannot start: %s", strerror(-r));
                on_container_started(rt, r, &e, op);
        }
}

static void container_launch(ContainerOp *op);
static void container_create(ContainerOp *op);

/* Detaches the idmapped clones of an attempt (<attempt>/idmap) and removes
 * the directory; nothing there when the pod is in the host's namespace. */
static int container_idmap_release(const char *attempt_dir, const char *cdir) {
        _cleanup_free_ char *dir = strprintf("%s/idmap", attempt_dir);
        if (!dir)
                return -ENOMEM;
        int n = 0, r = 0;
        if (cdir) {
                n += MAX(umount_below(cdir), 0);
                r = rm_rf_at(AT_FDCWD, cdir);
        }
        n += MAX(umount_below(dir), 0);
        int q = rm_rf_at(AT_FDCWD, dir);
        return r < 0 ? r : q < 0 ? q : n;
}

/* <run-dir>/userns/<pod uid>/<container id>: where the runtime finds the
 * rootfs (rootfs/) and the idmapped bind mounts (m<N>) of a hostUsers: false
 * container. runc 1.1 resolves the rootfs path, crun also the bind mount
 * sources, as the container's root, whose host ID is the pod's and may not
 * search <root-dir>/pods (root's only: secrets live there), so they are
 * here, below directories of mode 0711, as containerd keeps its bundles.
 * Removed with the container's exit and, whatever is left, with the pod. */
static char *userns_rootfs_path(const PodWorker *w, const char *container_id) {
        return strprintf("%s/userns/%s/%s", w->ctx->o->run_dir, w->object->uid, container_id);
}

/* Every ancestor of path must be searchable by others: the container's
 * root is nobody on the host. */
static int check_searchable(const char *path, Error *err) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *slash = p + strlen(p); slash > p;) {
                struct stat st;
                if (stat(p, &st) < 0)
                        return error_set(err, -errno, "cannot stat %s: %m", p);
                if (!(st.st_mode & S_IXOTH))
                        return error_set(err, -EACCES,
                                         "hostUsers is false but %s is not searchable by others "
                                         "(mode %04o): the pod's user namespace must reach its "
                                         "rootfs below it",
                                         p, (unsigned)(st.st_mode & 07777));
                slash = strrchr(p, '/');
                if (!slash)
                        break;
                *(slash == p ? slash + 1 : slash) = 0;
                if (slash == p)
                        break;
        }
        struct stat st;
        if (stat("/", &st) == 0 && !(st.st_mode & S_IXOTH))
                return error_set(err, -EACCES, "/ is not searchable by others");
        return 0;
}

static int bind_rootfs_for_userns(ContainerOp *op, RuntimeContainerConfig *cfg, Error *err) {
        PodWorker *w = op->w;
        _cleanup_free_ char *uns = strprintf("%s/userns", w->ctx->o->run_dir);
        _cleanup_free_ char *pod = strprintf("%s/userns/%s", w->ctx->o->run_dir, w->object->uid);
        _cleanup_free_ char *target = userns_rootfs_path(w, op->id);
        int r;

        if (!uns || !pod || !target)
                return -ENOMEM;
        r = check_searchable(w->ctx->o->run_dir, err);
        if (r < 0)
                return r;
        if ((r = mkdir_p(pod, 0711)) < 0)
                return error_set(err, r, "cannot create %s: %s", pod, strerror(-r));
        if (chmod(uns, 0711) < 0 || chmod(pod, 0711) < 0)
                return error_set(err, -errno, "cannot make %s searchable: %m", pod);
        if ((r = mkdir_p(target, 0711)) < 0 || chmod(target, 0711) < 0)
                return error_set(err, r < 0 ? r : -errno, "cannot create %s: %s", target,
                                 strerror(r < 0 ? -r : errno));
        _cleanup_free_ char *root = strprintf("%s/rootfs", target);
        if (!root)
                return -ENOMEM;
        if (mkdir(root, 0700) < 0 && errno != EEXIST)
                return error_set(err, -errno, "cannot create %s: %m", root);
        if (mount(cfg->rootfs, root, NULL, MS_BIND, NULL) < 0)
                return error_set(err, -errno, "cannot bind %s to %s: %m", cfg->rootfs, root);
        free(cfg->rootfs);
        cfg->rootfs = TAKE_PTR(root);
        return 0;
}

/* The rootfs again as overlayfs, from idmapped clones of its layers and of
 * the attempt directory that holds upper and work: overlayfs itself cannot
 * be idmapped, its layers can (Linux 5.19). The first overlay goes before
 * the second comes, as two on one upperdir are undefined; the clones are
 * detached once the overlay holds them, so only the overlay stays, which
 * image_rootfs_umount() removes as before. */
static int idmap_rootfs(ContainerOp *op, const char *rootfs, const char *dir, int ufd, Error *err) {
        _cleanup_strv_free_ char **lowers = NULL;
        _cleanup_free_ char *opts = NULL;
        Error ie = {};
        int r;

        r = mount_overlay_lowerdirs_at(rootfs, &lowers);
        if (r < 0)
                return error_set(err, r, "cannot read the layers of %s: %s", rootfs, strerror(-r));
        if (strv_length(lowers) == 0)
                return error_set(err, -EINVAL, "%s is not an overlayfs mount", rootfs);
        if (image_rootfs_umount(rootfs, &ie) < 0)
                return error_set(err, ie.error, "%s", ie.message);
        op->rootfs_mounted = false;
        _cleanup_free_ char *lower = NULL;
        size_t len = 0, cap = 0;
        for (size_t i = 0; lowers[i]; i++) {
                _cleanup_free_ char *t = strprintf("%s/l%zu", dir, i);
                if (!t)
                        return -ENOMEM;
                if (mkdir(t, 0700) < 0 && errno != EEXIST)
                        return error_set(err, -errno, "cannot create %s: %m", t);
                r = mount_idmapped_clone(lowers[i], false, ufd, t);
                if (r < 0)
                        return error_set(err, r,
                                         "hostUsers is false but the image layer %s cannot be "
                                         "idmapped: %s",
                                         lowers[i], strerror(-r));
                if ((i > 0 && strbuf_append(&lower, &len, &cap, ":", 1) < 0) ||
                    strbuf_append(&lower, &len, &cap, t, strlen(t)) < 0)
                        return -ENOMEM;
                free(lowers[i]);
                lowers[i] = TAKE_PTR(t);
        }
        /* The upper directory is this attempt's, new and empty: given to
         * the pod's root (one chown, as containerd does), it need not be
         * idmapped, which it could not be (overlayfs writes its work
         * directory as the mounter, host root, whom the idmapping does not
         * map). */
        _cleanup_free_ char *upper = strprintf("%s/upper", op->attempt_dir);
        if (!upper)
                return -ENOMEM;
        if (chown(upper, op->w->userns_start, op->w->userns_start) < 0)
                return error_set(err, -errno, "cannot chown %s: %m", upper);
        opts = lower ? strprintf("lowerdir=%s,upperdir=%s,workdir=%s/work", lower, upper,
                                 op->attempt_dir)
                     : NULL;
        if (!opts)
                return -ENOMEM;
        if (mount("overlay", rootfs, "overlay", 0, opts) < 0)
                r = error_set(err, -errno,
                              "hostUsers is false but overlayfs on idmapped layers cannot be "
                              "mounted (needs Linux 5.19 or later): %m");
        else
                op->rootfs_mounted = true;
        for (size_t i = 0; lowers[i]; i++)
                (void)umount2(lowers[i], MNT_DETACH | UMOUNT_NOFOLLOW);
        return r < 0 ? r : 0;
}

/* hostUsers: false. The rootfs and every bind mount (volumes, subPaths, etc
 * files) go into the container as idmapped clones below
 * <run-dir>/userns/<uid>/<id>: host ID 0 is the pod's first ID there, so what is root's
 * on the host is root's in the container, without a chown. runc 1.1 has no
 * idmapped mounts of its own, so the agent makes them: a user namespace fd
 * with the pod's mapping, then open_tree(2), mount_setattr(2) and
 * move_mount(2), a few syscalls like the overlay mount beside them. A
 * source whose filesystem cannot be idmapped (or a kernel without
 * idmapped mounts, of overlayfs before 5.19) refuses the container: it
 * would run with files it cannot use. container_idmap_release() undoes it. */
static int container_idmap_mounts_do(ContainerOp *op, RuntimeContainerConfig *cfg, Error *err) {
        PodWorker *w = op->w;
        _cleanup_free_ char *dir = strprintf("%s/idmap", op->attempt_dir);
        _cleanup_close_ int ufd = -1;
        int r;

        if (!dir)
                return -ENOMEM;
        _cleanup_free_ char *bind = userns_rootfs_path(w, op->id);
        (void)container_idmap_release(op->attempt_dir, bind);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return error_set(err, -errno, "cannot create %s: %m", dir);
        ufd = userns_fd_for_range(w->userns_start, POD_USERNS_RANGE_LEN);
        if (ufd < 0)
                return error_set(err, ufd, "cannot make a user namespace for idmapped mounts: %s",
                                 strerror(-ufd));
        r = idmap_rootfs(op, cfg->rootfs, dir, ufd, err);
        if (r < 0)
                return r;
        r = bind_rootfs_for_userns(op, cfg, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < cfg->n_mounts; i++) {
                RuntimeMount *m = &cfg->mounts[i];
                /* The pod's /dev/shm is a tmpfs of mode 1777, usable by
                 * any ID as it is; tmpfs can be idmapped only from 6.3. */
                if (!streq_ptr(m->type, "bind") || !m->source || streq(m->destination, "/dev/shm"))
                        continue;
                struct stat st;
                if (stat(m->source, &st) < 0)
                        return error_set(err, -errno, "cannot stat \"%s\" (for %s): %m", m->source,
                                         m->destination);
                _cleanup_free_ char *t = strprintf("%s/m%zu", bind, i);
                if (!t)
                        return -ENOMEM;
                if (S_ISDIR(st.st_mode))
                        r = mkdir(t, 0755) < 0 && errno != EEXIST ? -errno : 0;
                else {
                        int fd = open(t, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                        r = fd < 0 ? -errno : 0;
                        if (fd >= 0)
                                close(fd);
                }
                if (r < 0)
                        return error_set(err, r, "cannot create %s: %s", t, strerror(-r));
                r = mount_idmapped_clone(m->source, strv_contains(m->options, "rbind"), ufd, t);
                if (r < 0)
                        return error_set(err, r,
                                         "hostUsers is false but \"%s\" (mounted at %s) cannot "
                                         "be idmapped: %s",
                                         m->source, m->destination,
                                         r == -EINVAL ? "its filesystem does not support "
                                                        "idmapped mounts"
                                                      : strerror(-r));
                free(m->source);
                m->source = TAKE_PTR(t);
        }
        return 0;
}

static int container_idmap_mounts(ContainerOp *op, RuntimeContainerConfig *cfg, Error *err) {
        int r = container_idmap_mounts_do(op, cfg, err);
        if (r < 0) {
                _cleanup_free_ char *bind = userns_rootfs_path(op->w, op->id);
                (void)container_idmap_release(op->attempt_dir, bind);
        }
        return r;
}

void container_apparmor_resume(void *waiter) {
        ContainerOp *op = waiter;
        op->apparmor_waiting = false;
        op->apparmor_retried = true;
        container_create(op);
}

static void container_create(ContainerOp *op) {
        PodWorker *w = op->w;
        const PodManagerOptions *o = w->ctx->o;
        ContainerState *c = op_container(op);
        Error err = {};
        int r;

        PodNodeInfo node = { .node_name = o->node_name,
                             .pod_ips = w->state.pod_ips,
                             .host_ips = o->node_ips };
        _cleanup_free_ char *bundle = strprintf("%s/bundle", op->attempt_dir);
        _cleanup_free_ char *termlog = strprintf("%s/termination-log", op->attempt_dir);
        _cleanup_free_ char *ns_net = sandbox_ns_path(w->ns_dir, "net");
        _cleanup_free_ char *ns_ipc = sandbox_ns_path(w->ns_dir, "ipc");
        _cleanup_free_ char *ns_uts = sandbox_ns_path(w->ns_dir, "uts");
        _cleanup_free_ char *ns_pid = sandbox_ns_path(w->ns_dir, "pid");
        if (!bundle || !termlog || !ns_net || !ns_ipc || !ns_uts || !ns_pid) {
                start_failed(op, "CreateContainerError", "out of memory");
                return;
        }
        PodAppArmor *aa = &w->ctx->apparmor;
        bool aa_default = pod_apparmor_default_available(aa);
        if (container_apparmor(w->state.pod, c->spec, aa_default, NULL) ==
            CONTAINER_APPARMOR_DEFAULT) {
                Error error = {};
                r = pod_apparmor_default_ready(aa, op, op->apparmor_retried, &error);
                if (r == 0) {
                        op->apparmor_waiting = true;
                        worker_log(w, LOG_DEBUG, c->spec->name,
                                   "Container \"%s\" of pod \"%s\" waits for the AppArmor "
                                   "profile " CONTAINER_APPARMOR_DEFAULT_PROFILE ".",
                                   c->spec->name, w->full_name);
                        return;
                }
                if (r < 0) {
                        start_failed(op, "CreateContainerError", error.message);
                        return;
                }
        }
        ContainerBuildContext bc = {
                .pod = w->state.pod,
                .container = c->spec,
                .image = &op->image->config,
                .node = &node,
                .lookup = &w->ctx->lookup,
                .container_id = op->id,
                .attempt = op->attempt,
                .rootfs = op->rootfs,
                .attempt_dir = op->attempt_dir,
                .cgroups = &o->cgroups,
                .no_cpu_quota = !o->cpu_cfs_quota,
                .etc_hosts_path = w->etc.hosts,
                .etc_hostname_path = w->etc.hostname,
                .resolv_conf_path = w->etc.resolv_conf,
                .volumes = &w->volumes,
                .termination_log_path = termlog,
                .ns_net = ns_net,
                .ns_ipc = ns_ipc,
                .ns_uts = ns_uts,
                .ns_pid = ns_pid,
                .node_hostname = o->node_hostname,
                .userns_host_id = w->userns_start,
                .seccomp_dir = w->ctx->seccomp_dir,
                .no_seccomp_default = o->no_seccomp_default,
                .apparmor_enabled = aa->enabled,
                .apparmor_default = aa_default,
                .apparmor_profiles_path = aa->enabled ? aa->profiles_path : NULL,
        };
        _cleanup_strv_free_ char **warnings = NULL;
        bc.warnings = &warnings;
        RuntimeContainerConfig cfg = {};
        r = container_config_build(&bc, &cfg, &err);
        STRV_FOREACH(s, warnings)
                worker_log(w, LOG_WARNING, c->spec->name, "Container \"%s\" of pod \"%s\": %s",
                           c->spec->name, w->full_name, *s);
        if (r < 0) {
                start_failed(op, CONTAINER_CONFIG_ERROR_REASON, err.message);
                return;
        }
        if (cfg.oom_score_adj_set && cfg.oom_score_adj < w->ctx->oom_score_adj_floor) {
                /* Without CAP_SYS_RESOURCE the OOM score cannot go below the
                 * agent's own: degrade rather than fail the pod (kubelet's
                 * critical pods ask for -997). */
                PodManagerContext *ctx = w->ctx;
                if (!ctx->oom_warned)
                        worker_log(w, LOG_WARNING, NULL,
                                   "Cannot lower oom_score_adj below %d (no CAP_SYS_RESOURCE); "
                                   "containers that ask for less (e.g. %d for \"%s\") get %d.",
                                   ctx->oom_score_adj_floor, cfg.oom_score_adj, w->full_name,
                                   ctx->oom_score_adj_floor);
                ctx->oom_warned = true;
                cfg.oom_score_adj = ctx->oom_score_adj_floor;
        }
        if (w->userns_start != 0 && streq_ptr(w->ctx->o->runtime_name, "runc")) {
                /* runc enters the container's user namespace before the pod's
                 * IPC namespace, which the host's owns: the container would
                 * start, but exec, exec probes and exec hooks never could. */
                runtime_container_config_done(&cfg);
                start_failed(op, "CreateContainerError",
                             "hostUsers: false needs crun (--runtime=crun): runc cannot join the "
                             "pod's namespaces from the container's user namespace, so exec, "
                             "exec probes and exec hooks would fail");
                return;
        }
        if (w->userns_start != 0 && (r = container_idmap_mounts(op, &cfg, &err)) < 0) {
                runtime_container_config_done(&cfg);
                start_failed(op, "CreateContainerError", err.message);
                return;
        }
        cfg.seccomp_cache = &w->ctx->seccomp_cache;
        r = runtime_bundle_write(bundle, &cfg, &err);
        runtime_container_config_done(&cfg);
        if (r < 0) {
                start_failed(op, CONTAINER_CONFIG_ERROR_REASON, err.message);
                return;
        }
        _cleanup_free_ char *log_dir = strprintf("%s/%s", w->log_dir, c->spec->name);
        if (!log_dir || mkdir_p(log_dir, 0755) < 0) {
                start_failed(op, "CreateContainerError", "cannot create the log directory");
                return;
        }
        /* conmon opens the log by path: a directory or a log name a
         * container replaced by a symlink (through a hostPath of its log
         * directory) would have it write wherever that points. */
        r = pod_worker_prepare_log(w, c, op->attempt);
        if (r < 0) {
                _cleanup_free_ char *msg =
                        r == -ELOOP || r == -ENOTDIR
                                ? strprintf("the log directory %s is not a plain directory (%s)",
                                            log_dir, strerror(-r))
                                : strprintf("cannot create the log file %s: %s", op->log_path,
                                            strerror(-r));
                start_failed(op, "CreateContainerError", msg ? msg : "bad log directory");
                return;
        }
        if (op->early) {
                /* Prepared while the sandbox is being created: the rest
                 * waits for the ready sandbox's start (container_start()). */
                op->parked = true;
                worker_log(w, LOG_DEBUG, c->spec->name,
                           "Container \"%s\" of pod \"%s\": bundle prepared, waiting for the "
                           "sandbox.",
                           c->spec->name, w->full_name);
                if (!worker_sandbox_busy(w))
                        /* The sandbox is done (ready or failed): the next
                         * sync claims or releases this preparation. */
                        pod_worker_request_sync(w);
                return;
        }
        container_launch(op);
}

/* The step after the bundle: the monitor and `runc create`. Everything it
 * uses that depends on the sandbox (the pinned namespaces, /etc/hosts with
 * the pod IP) is there by now. */
static void container_launch(ContainerOp *op) {
        PodWorker *w = op->w;
        const PodManagerOptions *o = w->ctx->o;
        ContainerState *c = op_container(op);
        int r;

        _cleanup_free_ char *bundle = strprintf("%s/bundle", op->attempt_dir);
        if (!bundle) {
                start_failed(op, "CreateContainerError", "out of memory");
                return;
        }
        RuntimeCreateRequest req = {
                .id = op->id,
                .bundle_dir = bundle,
                .log_path = op->log_path,
                .terminal = c->spec->tty,
                .stdin_open = c->spec->stdin_open,
        };
        (void)set_str(&c->container_id, op->id);
        r = runtime_container_create(o->runtime, &req, on_container_created, op, &op->rop);
        if (r < 0) {
                Error e = {};
                error_set(&e, r, "cannot run conmon: %s", strerror(-r));
                on_container_created(o->runtime, r, 0, 0, &e, op);
        }
}

static void container_mount_volumes(ContainerOp *op);

static void on_volume_mounted(Child *child, void *userdata) {
        ContainerOp *op = userdata;
        Error err = {};
        _cleanup_free_ char *target = NULL;
        const Volume *v = &op->w->object->pod->spec.volumes[op->vols[op->vols_mounted]];

        int r = image_worker_finish(&op->iw, &err);
        if (r >= 0 &&
            (r = image_volume_paths(op->attempt_dir, v->name, &target, NULL, NULL)) >= 0 &&
            (r = image_volume_seal(target)) < 0)
                error_set(&err, r, "cannot make it read-only: %s", strerror(-r));
        if (r < 0) {
                _cleanup_free_ char *msg =
                        strprintf("cannot mount image volume \"%s\": %s", v->name,
                                  err.message[0] ? err.message : strerror(-r));
                start_failed(op, "CreateContainerError", msg ? msg : err.message);
                return;
        }
        op->vols_mounted++;
        container_mount_volumes(op);
        (void)child;
}

/* Each image volume's image as a root filesystem of its own, as the
 * container's is mounted (in the loop when that is one mount(2), else by
 * the helper), then sealed read-only; the bundle comes after. */
static void container_mount_volumes(ContainerOp *op) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);
        ImageStore *store = w->ctx->o->images;

        while (op->vols_mounted < op->n_vols) {
                const Volume *v = &w->object->pod->spec.volumes[op->vols[op->vols_mounted]];
                _cleanup_free_ char *target = NULL, *upper = NULL, *work = NULL, *dir = NULL;
                _cleanup_free_ char *msg = NULL;
                Error ierr = {};
                int r = image_volume_paths(op->attempt_dir, v->name, &target, &upper, &work);
                if (r >= 0 && !(dir = strprintf("%s/" CONTAINER_SUBPATHS_DIR, op->attempt_dir)))
                        r = -ENOMEM;
                /* no container reads this directory, as for subPath binds */
                if (r >= 0 && mkdir(dir, 0700) < 0 && errno != EEXIST)
                        r = -errno;
                if (r < 0) {
                        msg = strprintf("cannot mount image volume \"%s\": %s", v->name,
                                        strerror(-r));
                        start_failed(op, "CreateContainerError", msg ? msg : "out of memory");
                        return;
                }
                ImageRootfsJob job = { .digest = op->vol_digests[op->vols_mounted],
                                       .target = target,
                                       .upper_dir = upper,
                                       .work_dir = work };
                r = image_rootfs_mount_unpacked(store, &job, &ierr);
                if (r >= 0) {
                        r = image_volume_seal(target);
                        if (r < 0) {
                                msg = strprintf("cannot make image volume \"%s\" read-only: %s",
                                                v->name, strerror(-r));
                                start_failed(op, "CreateContainerError",
                                             msg ? msg : "out of memory");
                                return;
                        }
                        op->vols_mounted++;
                        continue;
                }
                worker_log(w, LOG_DEBUG, c->spec->name,
                           "Container \"%s\" of pod \"%s\": image volume \"%s\" by the helper: %s",
                           c->spec->name, w->full_name, v->name, ierr.message);
                ierr = (Error){};
                r = image_rootfs_start(store, w->ctx->event, &job, on_volume_mounted, op, &op->iw,
                                       &ierr);
                if (r < 0) {
                        msg = strprintf("cannot mount image volume \"%s\": %s", v->name,
                                        ierr.message);
                        start_failed(op, "CreateContainerError", msg ? msg : ierr.message);
                }
                return; /* on_volume_mounted() goes on */
        }
        container_create(op);
}

static void on_rootfs_ready(Child *c, void *userdata) {
        ContainerOp *op = userdata;
        Error err = {};

        int r = image_worker_finish(&op->iw, &err);
        if (r < 0) {
                start_failed(op, "CreateContainerError", err.message);
                return;
        }
        op->rootfs_mounted = true;
        container_mount_volumes(op);
}

/* An image's StopSignal ("SIGQUIT", "QUIT", "3"); SIGTERM when absent or
 * unknown, as kubelet falls back. */
int signal_from_string(const char *s) {
        if (isempty(s))
                return SIGTERM;
        char *end;
        long n = strtol(s, &end, 10);
        if (*end == 0 && n > 0 && n < NSIG)
                return (int)n;
        const char *name = startswith(s, "SIG") ?: s;
        for (int i = 1; i < NSIG; i++) {
                const char *abbrev = sigabbrev_np(i);
                if (abbrev && streq(abbrev, name))
                        return i;
        }
        return SIGTERM;
}

static void container_start_image(ContainerOp *op);

void container_start(PodWorker *w, const ContainerStartAction *a) {
        ContainerOp *op = worker_op(w, a->is_init, a->index);
        ContainerState *c = pod_actions_target(&w->state, a->is_init, a->index);

        if (!op || !c || op->killing)
                return;
        if (op->starting && op->early) {
                /* Prepared while the sandbox was created: this start claims
                 * it, and goes on from the bundle (parked) or, when the
                 * preparation is still running, where it parks. */
                op->early = false;
                metric_inc(w->ctx->metrics.started_containers,
                           METRIC_LABELS(pod_metrics_container_type(c->is_init)));
                container_set_waiting(c, "ContainerCreating", NULL);
                /* container_start_image()'s event, in the order it has there */
                worker_event(w, c, POD_EVENT_PULLED,
                             "Container image \"%s\" already present on machine", c->spec->image);
                if (op->parked) {
                        op->parked = false;
                        worker_log(w, LOG_DEBUG, c->spec->name,
                                   "Container \"%s\" of pod \"%s\": sandbox ready, starting "
                                   "the prepared bundle.",
                                   c->spec->name, w->full_name);
                        container_launch(op);
                }
                return;
        }
        if (op->starting)
                return;
        op->starting = true;
        op->state_before = c->state;
        w->busy++;
        /* As kubelet: every attempt counts, its failures count again below. */
        metric_inc(w->ctx->metrics.started_containers,
                   METRIC_LABELS(pod_metrics_container_type(c->is_init)));
        op->attempt = c->state == CONTAINER_NONE && !c->container_id ? 0 : c->attempt + 1;
        if (c->state == CONTAINER_EXITED) {
                /* The exited attempt becomes lastState. */
                c->has_last = true;
                c->last_exit_code = c->exit_code;
                c->last_started_at = c->started_at;
                c->last_finished_at = c->finished_at;
                free(c->last_exit_reason);
                c->last_exit_reason = TAKE_PTR(c->exit_reason);
                free(c->last_container_id);
                c->last_container_id = c->container_id ? strdup(c->container_id) : NULL;
        }

        container_start_image(op);
}

static void container_start_with_image(ContainerOp *op);

void container_prepare(PodWorker *w, const ContainerStartAction *a) {
        ContainerOp *op = worker_op(w, a->is_init, a->index);
        ContainerState *c = pod_actions_target(&w->state, a->is_init, a->index);
        const PodManagerOptions *o = w->ctx->o;
        Error ierr = {};

        if (!op || !c || op->starting || op->killing || op->early_tried)
                return;
        op->early_tried = true;
        /* A pull stays after the sandbox, as kubelet orders it: its events
         * and back-off belong to a start that happens. */
        PullPolicy policy = o->image_pull_never ? PULL_POLICY_NEVER : c->spec->image_pull_policy;
        if (policy == PULL_POLICY_ALWAYS && o->pulls)
                return;
        /* image volumes are resolved (and maybe pulled) by the start itself */
        if (image_volumes_mounted_by(&w->object->pod->spec, c->spec))
                return;
        if (image_store_get(o->images, c->spec->image, &op->image, &ierr) < 0)
                return;
        op->starting = true;
        op->early = true;
        op->state_before = c->state;
        op->attempt = 0; /* a first start only (prepare_starts) */
        w->busy++;
        worker_log(w, LOG_DEBUG, c->spec->name,
                   "Container \"%s\" of pod \"%s\": preparing its start while the sandbox is "
                   "created.",
                   c->spec->name, w->full_name);
        container_start_with_image(op);
}

/* An early preparation nobody claims: undone as a failed create is (rootfs
 * unmounted, subPath mounts released) and its attempt directory removed,
 * since the attempt never began; the container is as before. */
static void early_release(ContainerOp *op, const char *why) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        worker_log(w, LOG_INFO, c->spec->name,
                   "Container \"%s\" of pod \"%s\": its start prepared during the sandbox's "
                   "creation is given up (%s).",
                   c->spec->name, w->full_name, why);
        if (op->attempt_dir && op->id) {
                _cleanup_free_ char *bind = userns_rootfs_path(w, op->id);
                (void)container_idmap_release(op->attempt_dir, bind);
        }
        if (op->rootfs_mounted) {
                Error ie = {};
                (void)image_rootfs_umount(op->rootfs, &ie);
                op->rootfs_mounted = false;
        }
        if (op->attempt_dir) {
                (void)container_subpaths_release(op->attempt_dir);
                _cleanup_close_ int pfd = open(w->pod_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_free_ char *rel =
                        strprintf("containers/%s/%u", c->spec->name, op->attempt);
                if (pfd >= 0 && rel)
                        (void)rm_rf_at(pfd, rel);
        }
        c->state = op->state_before;
        c->attempt = c->restart_count = 0;
        c->image_digest = mfree(c->image_digest);
        c->image_id = mfree(c->image_id);
        op->early = op->parked = false;
        op_clear_start(op);
        worker_op_done(w);
}

void containers_release_unclaimed(PodWorker *w, bool claim_done) {
        bool sandbox_busy = worker_sandbox_busy(w);
        bool failed = !sandbox_busy && w->state.sandbox != SANDBOX_READY;

        for (size_t slot = 0; slot < w->n_ops; slot++) {
                ContainerOp *op = w->ops[slot];
                if (!op->early || !op->parked)
                        continue;
                if (w->state.terminating || w->state.evicted)
                        early_release(op, "the pod is terminating");
                else if (failed)
                        early_release(op, "the sandbox failed");
                else if (claim_done && w->state.sandbox == SANDBOX_READY && !sandbox_busy)
                        early_release(op, "the ready sandbox does not start it");
        }
}

static void on_image_pulled(int r, const char *digest, const char *error, usec_t duration,
                            void *userdata) {
        ContainerOp *op = userdata;
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        op->pull = NULL; /* delivered: no longer ours to cancel */
        if (r < 0) {
                worker_event(w, c, POD_EVENT_FAILED, "Failed to pull image \"%s\": %s",
                             c->spec->image, error);
                start_failed(op, "ErrImagePull", error);
                return;
        }
        worker_event(w, c, POD_EVENT_PULLED,
                     "Successfully pulled image \"%s\" in %llu.%03llus (%s)", c->spec->image,
                     (unsigned long long)(duration / USEC_PER_SEC),
                     (unsigned long long)(duration % USEC_PER_SEC / USEC_PER_MSEC),
                     r == 1 ? "already present, digest unchanged" : strna(digest));
        op->pulled = true;
        container_start_image(op);
}

static void container_resolve_volumes(ContainerOp *op);

static void on_volume_pulled(int r, const char *digest, const char *error, usec_t duration,
                             void *userdata) {
        ContainerOp *op = userdata;
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);
        const Volume *v = &w->object->pod->spec.volumes[op->vols[op->vols_resolved]];

        op->pull = NULL;
        if (r < 0) {
                worker_event(w, c, POD_EVENT_FAILED, "Failed to pull image \"%s\": %s",
                             v->image.reference, error);
                _cleanup_free_ char *msg = strprintf("image volume \"%s\": failed to pull image "
                                                     "\"%s\": %s",
                                                     v->name, v->image.reference, error);
                start_failed(op, "ErrImagePull", msg ? msg : error);
                return;
        }
        worker_event(w, c, POD_EVENT_PULLED,
                     "Successfully pulled image \"%s\" in %llu.%03llus (%s)", v->image.reference,
                     (unsigned long long)(duration / USEC_PER_SEC),
                     (unsigned long long)(duration % USEC_PER_SEC / USEC_PER_MSEC),
                     r == 1 ? "already present, digest unchanged" : strna(digest));
        op->vol_pulled = true;
        container_resolve_volumes(op);
}

/* The image volumes the container mounts, after its own image and with
 * the same rules (image_pull_decide()) and credentials: each ends as a
 * manifest digest in op->vol_digests, or the start fails with kubelet's
 * waiting reason for the image. */
static void container_resolve_volumes(ContainerOp *op) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);
        const PodManagerOptions *o = w->ctx->o;
        const PodSpec *spec = &w->object->pod->spec;
        int r;

        if (!op->vols_listed) {
                r = image_volumes_of_container(spec, c->spec, &op->vols, &op->n_vols);
                if (r >= 0 && op->n_vols > 0 &&
                    !(op->vol_digests = calloc(op->n_vols + 1, sizeof(char *))))
                        r = -ENOMEM;
                if (r < 0) {
                        start_failed(op, "CreateContainerError", "out of memory");
                        return;
                }
                op->vols_listed = true;
        }
        while (op->vols_resolved < op->n_vols) {
                const Volume *v = &spec->volumes[op->vols[op->vols_resolved]];
                const char *ref = v->image.reference;
                op->pulling_image = ref;
                _cleanup_free_ char *normalized = NULL, *msg = NULL;
                _cleanup_(image_freep) Image *im = NULL;
                Error ierr = {};

                r = image_ref_normalize(ref, &normalized, &ierr);
                if (r == -ENOMEM) {
                        start_failed(op, "ErrImagePull", "out of memory");
                        return;
                }
                if (r < 0) {
                        msg = strprintf("image volume \"%s\": Failed to apply default image "
                                        "tag \"%s\": %s",
                                        v->name, ref, ierr.message);
                        start_failed(op, "InvalidImageName", msg ? msg : ierr.message);
                        return;
                }
                PullPolicy policy = o->image_pull_never ? PULL_POLICY_NEVER : v->image.pull_policy;
                bool present = image_store_get(o->images, ref, &im, &ierr) >= 0;
                switch (image_pull_decide(policy, present, op->vol_pulled, o->pulls != NULL)) {
                case IMAGE_PULL_PULL: {
                        _cleanup_free_ char *auths = NULL;
                        Error aerr = {};
                        r = worker_pull_auths(w, &auths, &aerr);
                        if (r < 0) {
                                start_failed(op, "ErrImagePull",
                                             aerr.message[0] ? aerr.message : strerror(-r));
                                return;
                        }
                        worker_event(w, c, POD_EVENT_PULLING, "Pulling image \"%s\"", ref);
                        r = image_pulls_request(o->pulls, normalized, auths, on_volume_pulled, op,
                                                &op->pull);
                        if (r < 0)
                                start_failed(op, "ErrImagePull", "out of memory");
                        return; /* on_volume_pulled() goes on */
                }
                case IMAGE_PULL_USE_STORED:
                        if (!(op->vol_digests[op->vols_resolved] = strdup(im->digest))) {
                                start_failed(op, "CreateContainerError", "out of memory");
                                return;
                        }
                        if (!op->vol_pulled)
                                worker_event(w, c, POD_EVENT_PULLED,
                                             "Container image \"%s\" already present on machine",
                                             ref);
                        op->vol_pulled = false;
                        op->vols_resolved++;
                        continue;
                case IMAGE_PULL_VANISHED:
                        msg = strprintf("image volume \"%s\": image \"%s\" was pulled but is no "
                                        "longer in the local store",
                                        v->name, ref);
                        start_failed(op, "ErrImagePull",
                                     msg ? msg : "image removed after its pull");
                        return;
                case IMAGE_PULL_NEVER_ABSENT:
                case IMAGE_PULL_NO_REGISTRY:
                case _IMAGE_PULL_DECISION_MAX:
                case _IMAGE_PULL_DECISION_INVALID:
                default: {
                        bool never = policy == PULL_POLICY_NEVER;
                        msg = strprintf(
                                "image volume \"%s\": image \"%s\" is not present in the local "
                                "store%s",
                                v->name, ref,
                                never ? (o->image_pull_never
                                                 ? " and --image-pull-policy-override=never "
                                                   "forbids pulls"
                                                 : " with pull policy of Never")
                                      : " and registry pulls are not set up");
                        start_failed(op, never ? "ErrImageNeverPull" : "ErrImagePull",
                                     msg ? msg : "image missing");
                        return;
                }
                }
        }
        container_start_with_image(op);
}

/* The image, as the pull policy says (docs/images.md): Never and IfNotPresent use
 * the store's copy, Always asks the registry for the tag's digest on every
 * start (a pull of an unchanged image downloads no blob) and
 * --image-pull-policy-override=never forbids every pull. */
static void container_start_image(ContainerOp *op) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);
        const PodManagerOptions *o = w->ctx->o;
        Error ierr = {};
        int r;

        op->pulling_image = NULL;
        _cleanup_free_ char *normalized = NULL;
        r = image_ref_normalize(c->spec->image, &normalized, &ierr);
        if (r == -ENOMEM) {
                start_failed(op, "ErrImagePull", "out of memory");
                return;
        }
        if (r < 0) {
                /* kubelet's words for a reference it cannot parse. */
                _cleanup_free_ char *msg = strprintf("Failed to apply default image tag \"%s\": %s",
                                                     c->spec->image, ierr.message);
                start_failed(op, "InvalidImageName", msg ? msg : ierr.message);
                return;
        }
        PullPolicy policy = o->image_pull_never ? PULL_POLICY_NEVER : c->spec->image_pull_policy;
        r = image_store_get(o->images, c->spec->image, &op->image, &ierr);
        bool present = r >= 0;
        ImagePullDecision d = image_pull_decide(policy, present, op->pulled, o->pulls != NULL);
        if (d == IMAGE_PULL_PULL) {
                _cleanup_free_ char *auths = NULL;
                Error aerr = {};
                op->image = image_free(op->image);
                r = worker_pull_auths(w, &auths, &aerr);
                if (r < 0) {
                        start_failed(op, "ErrImagePull",
                                     aerr.message[0] ? aerr.message : strerror(-r));
                        return;
                }
                worker_event(w, c, POD_EVENT_PULLING, "Pulling image \"%s\"", c->spec->image);
                r = image_pulls_request(o->pulls, normalized, auths, on_image_pulled, op,
                                        &op->pull);
                if (r < 0)
                        start_failed(op, "ErrImagePull", "out of memory");
                return; /* on_image_pulled() goes on */
        }
        if (d == IMAGE_PULL_VANISHED) {
                /* The pull succeeded, yet the store no longer has the image:
                 * something removed it in between (not `nanolet image rm` or
                 * image GC, which keep an image a pod names: a store edited
                 * by another program, a GC pass that read the checkpoints
                 * before this pod's existed). The next attempt pulls again. */
                _cleanup_free_ char *msg = strprintf(
                        "image \"%s\" was pulled but is no longer in the local store (removed "
                        "before the container was created: %s)",
                        c->spec->image, ierr.message[0] ? ierr.message : "not found");
                start_failed(op, "ErrImagePull", msg ? msg : "image removed after its pull");
                return;
        }
        if (d != IMAGE_PULL_USE_STORED) {
                bool never = d == IMAGE_PULL_NEVER_ABSENT;
                _cleanup_free_ char *msg = strprintf(
                        "image \"%s\" is not present in the local store%s", c->spec->image,
                        never ? (o->image_pull_never
                                         ? " and --image-pull-policy-override=never forbids pulls"
                                         : " with pull policy of Never")
                              : " and registry pulls are not set up");
                start_failed(op, never ? "ErrImageNeverPull" : "ErrImagePull",
                             msg ? msg : "image missing");
                return;
        }
        if (!op->pulled)
                worker_event(w, c, POD_EVENT_PULLED,
                             "Container image \"%s\" already present on machine", c->spec->image);
        container_resolve_volumes(op);
}

/* The rest of the start, once op->image is the store's copy. */
static void container_start_with_image(ContainerOp *op) {
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);
        ImageStore *store = w->ctx->o->images;
        Error ierr = {};
        int r;

        if (!op->image) {
                r = image_store_get(store, c->spec->image, &op->image, &ierr);
                if (r < 0) {
                        start_failed(op, "ErrImagePull", ierr.message);
                        return;
                }
        }
        (void)set_str(&c->image_id, op->image->config_digest);
        op->stop_signal = signal_from_string(op->image->config.stop_signal);

        op->id = container_runtime_id(w->object->uid, c->spec->name, op->attempt);
        op->attempt_dir = strprintf("%s/containers/%s/%u", w->pod_dir, c->spec->name, op->attempt);
        op->rootfs = op->attempt_dir ? strprintf("%s/rootfs", op->attempt_dir) : NULL;
        op->log_path = strprintf("%s/%s/%u.log", w->log_dir, c->spec->name, op->attempt);
        _cleanup_free_ char *upper =
                op->attempt_dir ? strprintf("%s/upper", op->attempt_dir) : NULL;
        _cleanup_free_ char *work = op->attempt_dir ? strprintf("%s/work", op->attempt_dir) : NULL;
        if (!op->id || !op->rootfs || !op->log_path || !upper || !work) {
                start_failed(op, "CreateContainerError", "out of memory");
                return;
        }
        /* A leftover of an earlier agent run at this attempt number is stale. */
        (void)image_rootfs_umount(op->rootfs, &ierr);
        ierr = (Error){};
        (void)container_subpaths_release(op->attempt_dir);
        _cleanup_close_ int pfd = open(w->pod_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *rel = strprintf("containers/%s/%u", c->spec->name, op->attempt);
        if (pfd >= 0 && rel)
                (void)rm_rf_at(pfd, rel);
        r = mkdir_p(op->rootfs, 0755);
        if (r < 0) {
                start_failed(op, "CreateContainerError", "cannot create the container directory");
                return;
        }
        c->attempt = op->attempt;
        c->restart_count = op->attempt;
        /* The last exited attempt stays for `logs -p` (docs/logs.md). */
        if (op->attempt >= 1)
                pod_worker_gc_attempts(w, c, op->attempt - 1);
        /* A preparation shows nothing until a start claims it: the
         * status keeps kubelet's waiting reasons for a pod whose sandbox is
         * being created (PodInitializing, ContainerCreating). */
        if (!op->early)
                container_set_waiting(c, "ContainerCreating", NULL);

        /* In use from here on, before the rootfs helper looks the image up:
         * `image prune`/`rm` and image GC read the attempt's record
         * (pod_checkpoints_image_users()); the store's last-used mark orders
         * image GC. */
        (void)set_str(&c->image_digest, op->image->digest);
        AttemptRecord rec = { .exit_code = -1,
                              .image_digest = c->image_digest,
                              .image_volume_digests = op->vol_digests };
        r = attempt_record_write(op->attempt_dir, &rec);
        if (r < 0)
                worker_log_errno(w, LOG_WARNING, r, c->spec->name,
                                 "Container \"%s\" of pod \"%s\": cannot record its image: %m",
                                 c->spec->name, w->full_name);
        r = image_store_mark_used(store, op->image->digest, now_usec(CLOCK_REALTIME));
        if (r < 0)
                log_debug_errno(r, "Cannot mark image %s as used: %m", op->image->digest);
        STRV_FOREACH(d, op->vol_digests)
                if ((r = image_store_mark_used(store, *d, now_usec(CLOCK_REALTIME))) < 0)
                        log_debug_errno(r, "Cannot mark image %s as used: %m", *d);

        /* The digest resolved above, as config.json uses it: a re-tag from
         * now on does not change what this attempt runs. */
        ImageRootfsJob job = { .digest = op->image->digest,
                               .target = op->rootfs,
                               .upper_dir = upper,
                               .work_dir = work };
        /* Every start of an image but its first: all layers are unpacked,
         * and the overlay is one mount(2) from here, not an exec of the
         * helper binary (docs/internals/design-decisions.md). */
        r = image_rootfs_mount_unpacked(store, &job, &ierr);
        if (r >= 0) {
                worker_log(w, LOG_DEBUG, c->spec->name,
                           "Container \"%s\" of pod \"%s\": rootfs mounted by the agent.",
                           c->spec->name, w->full_name);
                op->rootfs_mounted = true;
                container_mount_volumes(op);
                return;
        }
        worker_log(w, LOG_DEBUG, c->spec->name,
                   "Container \"%s\" of pod \"%s\": rootfs by the helper: %s", c->spec->name,
                   w->full_name, ierr.message);
        ierr = (Error){};
        r = image_rootfs_start(store, w->ctx->event, &job, on_rootfs_ready, op, &op->iw, &ierr);
        if (r < 0)
                start_failed(op, "CreateContainerError", ierr.message);
}

/* ---- kill ---- */

static int stop_signal(const ContainerOp *op) {
        return op->stop_signal > 0 ? op->stop_signal : SIGTERM;
}

static void on_kill_sent(Runtime *rt, int r, const Error *err, void *userdata) {
        PodWorker *w = userdata;
        if (r < 0)
                worker_log(w, LOG_DEBUG, NULL, "Kill in pod \"%s\" failed: %s", w->full_name,
                           err ? err->message : strerror(-r));
        worker_op_done(w);
}

static int on_grace_expired(EventSource *s, usec_t now, void *userdata) {
        ContainerOp *op = userdata;
        PodWorker *w = op->w;
        ContainerState *c = op_container(op);

        op->grace_timer = event_source_free(op->grace_timer);
        if (!c->container_id || (c->state != CONTAINER_RUNNING && c->state != CONTAINER_CREATED))
                return 0;
        worker_log(
                w, LOG_INFO, c->spec->name,
                "Container \"%s\" of pod \"%s\" did not stop within its grace period, killing it.",
                c->spec->name, w->full_name);
        w->busy++;
        if (runtime_container_kill(w->ctx->o->runtime, c->container_id, SIGKILL, true, on_kill_sent,
                                   w, NULL) < 0)
                worker_op_done(w);
        return 0;
}

/* The stop signal, then SIGKILL at deadline (at least 2 s later, as
 * kubelet's minimum, even when earlier stages or preStop used it up). */
static void container_signal(PodWorker *w, ContainerOp *op, ContainerState *c, usec_t deadline) {
        w->busy++;
        if (runtime_container_kill(w->ctx->o->runtime, c->container_id, stop_signal(op), false,
                                   on_kill_sent, w, NULL) < 0)
                worker_op_done(w);
        deadline = MAX(deadline, now_usec(CLOCK_MONOTONIC) + 2 * USEC_PER_SEC);
        (void)event_add_time(w->ctx->event, &op->grace_timer, deadline, 0, on_grace_expired, op);
}

static void on_pre_stop_done(ContainerState *c, void *userdata) {
        ContainerOp *op = userdata;
        if (op->killing && c->container_id)
                container_signal(op->w, op, c, op->kill_deadline);
}

void container_kill(PodWorker *w, const ContainerKillAction *a) {
        ContainerOp *op = worker_op(w, a->is_init, a->index);
        ContainerState *c = pod_actions_target(&w->state, a->is_init, a->index);

        if (!op || !c || op->killing || !c->container_id)
                return;
        op->killing = true;
        if (a->message)
                worker_event(w, c, POD_EVENT_KILLING, "%s", a->message);
        else
                worker_event(w, c, POD_EVENT_KILLING, "Stopping container %s", c->spec->name);
        worker_log(w, LOG_INFO, c->spec->name,
                   "Killing container \"%s\" of pod \"%s\" (%s), grace period %llds%s%s.",
                   c->spec->name, w->full_name, kill_reason_to_string(a->reason),
                   (long long)a->grace_period_seconds, a->message ? ": " : "",
                   strempty(a->message));
        usec_t now = now_usec(CLOCK_MONOTONIC);
        usec_t grace = (usec_t)MAX(a->grace_period_seconds, (int64_t)2) * USEC_PER_SEC;
        usec_t deadline = now + grace;
        if (a->reason != KILL_REASON_UNHEALTHY) {
                if (w->termination_deadline == 0)
                        w->termination_deadline = deadline;
                deadline = MAX(w->termination_deadline, now + 2 * USEC_PER_SEC);
        }
        /* preStop first; the time it takes counts against the grace period. */
        op->kill_deadline = deadline;
        if (pod_probes_pre_stop(w->probes, c, deadline, on_pre_stop_done, op))
                return;
        container_signal(w, op, c, deadline);
}

/* ---- exits (PLEG) ---- */

void on_attempt_deleted(Runtime *rt, int r, const Error *err, void *userdata) {
        PodWorker *w = userdata;
        if (r < 0)
                worker_log(w, LOG_DEBUG, NULL, "Pod \"%s\": removing a container failed: %s",
                           w->full_name, err ? err->message : strerror(-r));
        worker_op_done(w);
}

/* kubelet's getTerminationMessage: the last 4096 bytes of the file
 * (MaxContainerTerminationMessageLength, read with tail.ReadAtMost, so a
 * longer message keeps its end), nothing for an empty or missing file, and
 * for a file that cannot be read a message saying so. The file is the
 * container's to write: it is read without following a symlink, only if it is
 * a regular file, and only those bytes of it. Bytes that are not UTF-8 are
 * replaced by U+FFFD, so the exit record and the status always take it. */
#define TERMINATION_MESSAGE_MAX 4096
static char *read_termination_message(PodWorker *w, const ContainerState *c) {
        _cleanup_free_ char *rel =
                strprintf("containers/%s/%u/termination-log", c->spec->name, c->attempt);
        _cleanup_close_ int pfd = open(w->pod_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        size_t size;

        if (!rel || pfd < 0)
                return NULL;
        int r = read_file_tail_at(pfd, rel, TERMINATION_MESSAGE_MAX, &data, &size, NULL);
        if (r == -ENOENT)
                return NULL;
        if (r < 0) {
                worker_log_errno(
                        w, LOG_WARNING, r, c->spec->name,
                        "Container \"%s\" of pod \"%s\": cannot read its termination log: %m",
                        c->spec->name, w->full_name);
                return strprintf("Error on reading termination log %s/%s: %s", w->pod_dir, rel,
                                 strerror(-r));
        }
        if (size == 0)
                return NULL;
        return utf8_make_valid(data, size);
}

/* terminationMessagePolicy FallbackToLogsOnError: the end of the attempt's
 * log (termination-message.h), or what kept it from being read, in
 * kubelet's words. The log is the agent's own file; a container cannot
 * make it anything but a log. */
static char *read_log_message(PodWorker *w, const ContainerState *c) {
        _cleanup_free_ char *rel = strprintf("%s/%u.log", c->spec->name, c->attempt);
        _cleanup_close_ int dfd = open(w->log_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        char *message = NULL;
        size_t size;
        bool truncated;

        if (!rel)
                return NULL;
        int r = dfd < 0 ? -errno
                        : read_file_tail_at(dfd, rel, TERMINATION_LOG_READ, &data, &size,
                                            &truncated);
        if (r >= 0)
                r = termination_message_from_log(data, size, truncated, &message);
        if (r == -ENOMEM)
                return NULL;
        if (r < 0)
                return strprintf("Error on reading termination message from logs: %s",
                                 strerror(-r));
        return message;
}

void container_exited(PodWorker *w, ContainerOp *op, ContainerState *c,
                      const RuntimeContainerStatus *st) {
        c->state = CONTAINER_EXITED;
        c->exit_code = st->exit_code >= 0 ? st->exit_code : 137;
        c->finished_at = st->finished_at ? st->finished_at : now_usec(CLOCK_REALTIME);
        const char *reason = st->oom_killed      ? "OOMKilled"
                             : c->exit_code == 0 ? "Completed"
                                                 : "Error";
        (void)set_str(&c->exit_reason, reason);
        free(c->exit_message);
        c->exit_message = read_termination_message(w, c);
        if (termination_message_from_log_wanted(c->spec->termination_message_policy, c->exit_code,
                                                c->exit_message)) {
                free(c->exit_message);
                c->exit_message = read_log_message(w, c);
        }
        c->ready = false;
        c->started = false;
        c->kill_requested = false;
        pod_probes_container_stopped(w->probes, c);
        backoff_on_exit(c, now_usec(CLOCK_MONOTONIC));
        worker_log(w, LOG_INFO, c->spec->name,
                   "Container \"%s\" of pod \"%s\" exited with code %d (%s).", c->spec->name,
                   w->full_name, c->exit_code, reason);
        _cleanup_free_ char *attempt_dir = attempt_dir_of(w, c, c->attempt);
        AttemptRecord rec = {
                .started_at = c->started_at,
                .finished_at = c->finished_at,
                .exit_code = c->exit_code,
                .reason = c->exit_reason,
                .message = c->exit_message,
                .image_digest = c->image_digest,
        };
        int r = attempt_dir ? attempt_record_write(attempt_dir, &rec) : -ENOMEM;
        if (r < 0)
                worker_log_errno(w, LOG_WARNING, r, c->spec->name,
                                 "Container \"%s\" of pod \"%s\": cannot record its exit: %m",
                                 c->spec->name, w->full_name);

        if (op) {
                op->killing = false;
                op->grace_timer = event_source_free(op->grace_timer);
                op_clear_exit_watch(op);
        }
        /* The attempt's runtime state and rootfs go now; its log and bundle
         * stay for `logs -p` and inspection. */
        _cleanup_free_ char *rootfs =
                strprintf("%s/containers/%s/%u/rootfs", w->pod_dir, c->spec->name, c->attempt);
        Error ie = {};
        if (attempt_dir) {
                _cleanup_free_ char *bind = userns_rootfs_path(w, c->container_id);
                (void)container_idmap_release(attempt_dir, bind);
        }
        if (rootfs)
                (void)image_rootfs_umount(rootfs, &ie);
        if (attempt_dir)
                (void)container_subpaths_release(attempt_dir);
        w->busy++;
        if (runtime_container_delete(w->ctx->o->runtime, c->container_id, true, on_attempt_deleted,
                                     w, NULL) < 0)
                worker_op_done(w);
        /* Until the restart, the attempt before this one is still lastState
         * (`logs -p`); older ones are of no further use. */
        if (c->attempt >= 1)
                pod_worker_gc_attempts(w, c, c->attempt - 1);
}

/* The container's init exited (its pidfd turned readable): the watch has
 * done its job, and the container is polled by the relist from now on until
 * its exit is recorded, which this first look usually does at once (the
 * monitor may still be writing the exit file; the exit-file watch or the
 * next relist then sees it). */
static int on_exit_pidfd(EventSource *s, int fd, uint32_t revents, void *userdata) {
        ContainerOp *op = userdata;
        ContainerState *c = op_container(op);
        if (c)
                worker_log(op->w, LOG_DEBUG, c->spec->name,
                           "Container \"%s\" of pod \"%s\": its process exited (pidfd).",
                           c->spec->name, op->w->full_name);
        op->exit_watch = event_source_free(op->exit_watch);
        pod_worker_relist(op->w, false);
        return 0;
}

/* Tried once per container: a container without a watch is polled. */
static void arm_exit_watch(PodWorker *w, ContainerOp *op, const ContainerState *c) {
        if (!(op->exit_watch_id = strdup(c->container_id)))
                return;
        int fd = runtime_container_pidfd(w->ctx->o->runtime, c->container_id);
        if (fd < 0) {
                if (fd != -ESRCH)
                        worker_log_errno(w, LOG_DEBUG, fd, c->spec->name,
                                         "Container \"%s\" of pod \"%s\": no pidfd for its "
                                         "exit, polled every relist: %m",
                                         c->spec->name, w->full_name);
                return;
        }
        int r = event_add_io(w->ctx->event, &op->exit_watch, fd, EPOLLIN, on_exit_pidfd, op);
        if (r >= 0)
                r = event_source_set_io_fd_own(op->exit_watch, true);
        if (r < 0) {
                op->exit_watch = event_source_free(op->exit_watch);
                safe_close(fd);
                return;
        }
        (void)event_source_set_description(op->exit_watch, "container-exit");
}

void pod_worker_relist(PodWorker *w, bool all) {
        bool changed = false;

        for (size_t slot = 0; slot < w->n_ops; slot++) {
                ContainerOp *op = w->ops[slot];
                ContainerState *c = op_container(op);
                if (!c || !c->container_id || op->starting)
                        continue;
                if (c->state != CONTAINER_RUNNING && c->state != CONTAINER_CREATED)
                        continue;
                bool tried = op->exit_watch_id && streq(op->exit_watch_id, c->container_id);
                if (!tried)
                        op_clear_exit_watch(op); /* an earlier container's */
                else if (op->exit_watch && !all)
                        continue; /* its exit is an event */
                RuntimeContainerStatus st = {};
                if (runtime_container_status(w->ctx->o->runtime, c->container_id, &st) < 0)
                        continue;
                if (st.state == RUNTIME_STATE_RUNNING || st.state == RUNTIME_STATE_CREATED) {
                        if (!tried)
                                arm_exit_watch(w, op, c);
                        continue;
                }
                /* Keep the previous attempt for lastState before recording this one. */
                container_exited(w, op, c, &st);
                changed = true;
        }
        if (changed)
                worker_mark_status(w);
}
