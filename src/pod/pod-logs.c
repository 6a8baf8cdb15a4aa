/* See pod-logs.h. Runs on the event loop: the removals are of a few small
 * directories and files (the rootfs is unmounted when the attempt exits),
 * the rotation work itself happens in the rotator's worker. */
#include "pod-logs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "container-id.h"
#include "dirent-util.h"
#include "container-config.h"
#include "fileio.h"
#include "log.h"
#include "rm-rf.h"
#include "string-util.h"

/* The container's log directory relative to --pod-logs-dir,
 * "<ns>_<pod>_<uid>/<name>": what lies below the root may be written by a
 * container (a hostPath of it), so it is resolved without symlinks. */
static char *log_dir_rel(PodWorker *w, const ContainerState *c) {
        const ManifestObject *o = pod_worker_object(w);
        return strprintf("%s_%s_%s/%s", o->namespace, o->name, o->uid, c->spec->name);
}

static void offer_container(PodWorker *w, LogRotator *r, const ContainerState *c) {
        if (c->state != CONTAINER_RUNNING || !c->container_id)
                return;
        _cleanup_free_ char *dir = log_dir_rel(w, c);
        _cleanup_free_ char *log = dir ? strprintf("%s/%u.log", dir, c->attempt) : NULL;
        _cleanup_free_ char *ctl = strprintf("%s/containers/%s/%u/bundle/ctl",
                                             pod_worker_pod_dir(w), c->spec->name, c->attempt);
        if (!log || !ctl ||
            log_rotator_consider(r, pod_worker_options(w)->pod_logs_dir, log, ctl) < 0)
                log_debug("Pod \"%s\": cannot check the log of \"%s\".", pod_worker_name(w),
                          c->spec->name);
}

int pod_worker_prepare_log(PodWorker *w, const ContainerState *c, unsigned attempt) {
        _cleanup_free_ char *dir = log_dir_rel(w, c);
        _cleanup_free_ char *log = dir ? strprintf("%s/%u.log", dir, attempt) : NULL;
        if (!log)
                return -ENOMEM;
        return container_log_prepare(pod_worker_options(w)->pod_logs_dir, log);
}

void pod_worker_offer_logs(PodWorker *w, LogRotator *r) {
        const PodState *s = pod_worker_state(w);
        for (size_t i = 0; i < s->n_init; i++)
                offer_container(w, r, &s->init[i]);
        for (size_t i = 0; i < s->n_app; i++)
                offer_container(w, r, &s->app[i]);
}

/* "<n>" or "<n>.log" / "<n>.log.<anything>" with n < keep_from. */
static bool older_attempt(const char *name, bool log_file, unsigned keep_from,
                          unsigned *ret_attempt) {
        char *end;
        if (name[0] < '0' || name[0] > '9')
                return false;
        errno = 0;
        unsigned long v = strtoul(name, &end, 10);
        if (errno != 0 || v >= keep_from)
                return false;
        if (log_file) {
                const char *rest = startswith(end, ".log");
                if (!rest || (rest[0] != 0 && rest[0] != '.'))
                        return false;
        } else if (*end != 0)
                return false;
        *ret_attempt = (unsigned)v;
        return true;
}

/* Calls fn for each entry of the directory fd naming an attempt below
 * keep_from. Takes fd. */
static void for_each_older(int fd, bool log_files, unsigned keep_from,
                           void (*fn)(PodWorker *w, const ContainerState *c, int dir_fd,
                                      const char *name, unsigned attempt),
                           PodWorker *w, const ContainerState *c) {
        _cleanup_close_ int dfd = fd;
        _cleanup_closedir_ DIR *d = NULL;
        if (dfd < 0 || opendir_fd(dfd, NULL, 0, &d) < 0)
                return;
        FOREACH_DIRENT(de, d) {
                unsigned a;
                if (older_attempt(de->d_name, log_files, keep_from, &a))
                        fn(w, c, dfd, de->d_name, a);
        }
}

static void remove_attempt_dir(PodWorker *w, const ContainerState *c, int dir_fd, const char *name,
                               unsigned attempt) {
        _cleanup_free_ char *path =
                strprintf("%s/containers/%s/%s", pod_worker_pod_dir(w), c->spec->name, name);
        int r = path ? container_subpaths_release(path) : -ENOMEM;
        if (r < 0)
                log_warning_errno(
                        r,
                        "Pod \"%s\": cannot release the subPath mounts of attempt %u of \"%s\": %m",
                        pod_worker_name(w), attempt, c->spec->name);
        r = rm_rf_at(dir_fd, name);
        if (r < 0)
                log_warning_errno(r, "Pod \"%s\": cannot remove attempt %u of \"%s\": %m",
                                  pod_worker_name(w), attempt, c->spec->name);
        /* The symlink kubelet removes with the dead container. */
        const char *links = pod_worker_options(w)->container_logs_dir;
        if (!links)
                return;
        const ManifestObject *o = pod_worker_object(w);
        _cleanup_close_ int links_fd = open(links, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        /* Either ID scheme (container-id.h); unlinkat() removes a symlink,
         * never its target. */
        char *(*const schemes[])(const char *, const char *, unsigned) = { container_runtime_id,
                                                                           container_legacy_id };
        for (size_t i = 0; links_fd >= 0 && i < ELEMENTSOF(schemes); i++) {
                _cleanup_free_ char *id = schemes[i](o->uid, c->spec->name, attempt);
                _cleanup_free_ char *link =
                        id ? strprintf("%s_%s_%s-%s.log", o->name, o->namespace, c->spec->name, id)
                           : NULL;
                if (link)
                        (void)unlinkat(links_fd, link, 0);
        }
}

/* unlinkat() removes a planted symlink itself, never what it points to;
 * a planted directory is removed without crossing links or mounts. */
static void remove_log_file(PodWorker *w, const ContainerState *c, int dir_fd, const char *name,
                            unsigned attempt) {
        int r = rm_rf_at(dir_fd, name);
        if (r < 0)
                log_warning_errno(r, "Pod \"%s\": cannot remove log %s of \"%s\": %m",
                                  pod_worker_name(w), name, c->spec->name);
}

void pod_worker_gc_attempts(PodWorker *w, const ContainerState *c, unsigned keep_from) {
        if (keep_from == 0)
                return;
        _cleanup_free_ char *attempts =
                strprintf("%s/containers/%s", pod_worker_pod_dir(w), c->spec->name);
        _cleanup_free_ char *logs = log_dir_rel(w, c);
        if (!attempts || !logs)
                return;
        for_each_older(open(attempts, O_RDONLY | O_DIRECTORY | O_CLOEXEC), false, keep_from,
                       remove_attempt_dir, w, c);
        _cleanup_close_ int root =
                open(pod_worker_options(w)->pod_logs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root >= 0)
                for_each_older(openat_no_symlinks(root, logs, O_RDONLY | O_DIRECTORY, 0), true,
                               keep_from, remove_log_file, w, c);
}
