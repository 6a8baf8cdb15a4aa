/* Container log upkeep that needs to know the pod's containers: offering the
 * running containers' logs to the rotator (the mechanics are in
 * runtime/log-rotate.h; the pod manager's timer decides when), and removing
 * what attempts older than the last exited one left behind (docs/logs.md:
 * bundle and overlay directories, log files, /var/log/containers symlinks). What
 * is left of a pod once it is gone is pod-log-gc.h's. */
#pragma once

#include "log-rotate.h"
#include "pod-worker.h"

/* Notes every running container's live log <log-dir>/<name>/<attempt>.log
 * with conmon's control FIFO <attempt-dir>/bundle/ctl. */
void pod_worker_offer_logs(PodWorker *w, LogRotator *r);

/* Readies <log-dir>/<name>/<attempt>.log for conmon, which opens it by
 * path: see container_log_prepare(). -ELOOP or -ENOTDIR when the container's
 * log directory is not a plain directory. */
int pod_worker_prepare_log(PodWorker *w, const ContainerState *c, unsigned attempt);

/* Removes attempts of c numbered below keep_from: their directory under
 * <pod-dir>/containers/<name>/, their log files (rotated ones included) and
 * their /var/log/containers symlink. Never touches keep_from and above. */
void pod_worker_gc_attempts(PodWorker *w, const ContainerState *c, unsigned keep_from);
