/* The owner of a pod's log directory <pod-logs-dir>/<ns>_<pod>_<uid> and of
 * its <container-logs-dir>/<pod>_<ns>_<container>-<id>.log symlinks once the
 * pod is gone (dead attempts of a live pod are pod-logs.h's): removed with
 * the pod, and, at agent start, what a run that ended before it could remove
 * them left behind. kubelet does the same in its container GC
 * (evictPodLogsDirectories): the log directories of pods whose content may be
 * removed, and dead container log symlinks.
 *
 * Guarantees:
 * 1. No symlink is followed during a removal: entries are removed with
 *    unlinkat() or rm_rf_at() relative to a directory fd, so a planted link
 *    removes the link, never what it points to.
 * 2. In the container logs directory, which a real kubelet, a container
 *    runtime or a log shipper may share, only links this agent makes are
 *    touched (pod_log_link_parse()): anything else there is left alone.
 * 3. A pod log directory is removed only for a UID no pod of the agent has. */
#pragma once

#include <stdbool.h>

/* The UID in a pod log directory name "<ns>_<pod>_<uid>" (namespace and pod
 * names never contain '_', UIDs only [a-z0-9-]), or NULL when name has
 * another shape. Returns a pointer into name. */
const char *pod_log_dir_uid(const char *name);

typedef struct PodLogLink {
        char *dir;       /* "<ns>_<pod>_<uid>", below the pod logs dir */
        char *container; /* "<container>" */
        char *uid;
        unsigned attempt;
} PodLogLink;

void pod_log_link_done(PodLogLink *l);

/* Whether the entry name of the container logs dir, a symlink to target, is
 * one this agent makes: name "<pod>_<ns>_<container>-<id>.log", target
 * "<pod_logs_dir>/<ns>_<pod>_<uid>/<container>/<attempt>.log" with the same
 * pod, namespace and container, and id a container ID of uid's pod
 * (container-id.h, either scheme). Returns 1 and fills *ret, 0 when it is
 * not ours, -ENOMEM. */
int pod_log_link_parse(const char *name, const char *target, const char *pod_logs_dir,
                       PodLogLink *ret);

/* Removes the pod log directory dir_name ("<ns>_<pod>_<uid>") below
 * pod_logs_dir and every link of ours in container_logs_dir (NULL: none)
 * that points into it. Returns 0 or the first error (the rest is still
 * removed). */
int pod_log_remove(const char *pod_logs_dir, const char *container_logs_dir, const char *dir_name);

/* Whether the pod uid is one the agent has (running, terminating, adopted
 * or waiting). */
typedef bool (*PodLogKnownFn)(const char *uid, void *userdata);

/* What an earlier run left: removes every pod log directory whose UID known()
 * denies, and every link of ours whose UID known() denies or whose attempt
 * has no log file left (<attempt>.log nor a rotated <attempt>.log.*).
 * Entries of another shape are left alone. Returns the number of entries
 * removed; failures are logged. */
unsigned pod_log_sweep(const char *pod_logs_dir, const char *container_logs_dir,
                       PodLogKnownFn known, void *userdata);
