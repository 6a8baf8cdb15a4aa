/* The pod checkpoint, <root-dir>/pods/<uid>/pod.json: what the agent needs
 * to recognise and adopt a pod after it restarted, written before the pod's
 * first container is created (docs/internals/state-files.md). */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "error.h"
#include "image.h"
#include "manifest.h"
#include "time-util.h"

typedef struct PodCheckpoint {
        char *uid;
        char *name;
        char *namespace;
        char *source;           /* "file" | "http" */
        char *origin;           /* path or URL */
        json_t *manifest;       /* canonical manifest document */
        json_t *restart_counts; /* {"<container>": N} */
        usec_t start_time;      /* CLOCK_REALTIME the pod first started; 0 unknown */
} PodCheckpoint;

void pod_checkpoint_done(PodCheckpoint *c);

/* Writes <pod_dir>/pod.json atomically. */
int pod_checkpoint_write(const char *pod_dir, const PodCheckpoint *c);
/* Reads it back; -ENOENT if absent, -EINVAL if unreadable: empty, not a
 * JSON object with the string fields, not a regular file, or a symlink
 * (never followed: what it points to is not the agent's). */
int pod_checkpoint_read(const char *pod_dir, PodCheckpoint *ret);
/* The pod a checkpoint holds, parsed back from its canonical manifest as the
 * agent adopts it; its UID is the checkpoint's (the UID depends on where the
 * file was). node_name as the agent's --hostname-override. seen (realtime,
 * 0: none) is its kubernetes.io/config.seen: when this agent first saw the
 * pod, which for an adopted pod is its checkpoint, as a restarted kubelet
 * first sees a static pod when it reads its manifest. */
int pod_checkpoint_parse(const PodCheckpoint *c, const char *node_name, usec_t seen,
                         ManifestObject **ret);

/* The images the checkpointed pods under pods_dir (<root-dir>/pods) use, with
 * user "pod \"<namespace>/<name>\"": the manifest digest every container
 * attempt that still has its directory was created from (attempt.json's
 * imageDigest: what runs, or ran and may be restarted or inspected, whatever
 * the tags do), and every container, init container and image volume
 * reference as the pod names it (what the pod's next start needs; for
 * attempts recorded before the digest was, the only record). For a pod
 * directory without a readable checkpoint (its containers may still run)
 * only its attempts' digests count, with user "pod directory \"<uid>\"" (and
 * a warning when the checkpoint exists). The one answer to "is this image in
 * use" for `image rm`, `image prune` and image GC. */
int pod_checkpoints_image_users(const char *pods_dir, ImageUsers *ret);

/* What the agent knows about one container attempt, kept next to its bundle
 * (<root-dir>/pods/<uid>/containers/<name>/<attempt>/attempt.json) so that
 * restart counts, lastState and exit codes survive an agent restart and a
 * reboot: conmon's exit file goes with `runc delete`, and <run-dir> with a
 * reboot. Written when the attempt starts and again when it has exited. */
typedef struct AttemptRecord {
        usec_t started_at;  /* CLOCK_REALTIME; 0 unknown */
        usec_t finished_at; /* 0: not known to have exited */
        int exit_code;      /* -1 unknown */
        char *reason;       /* "Completed", "Error", "OOMKilled", ... */
        char *message;      /* termination message */
        /* The manifest digest the attempt's root filesystem was built from
         * ("sha256:<hex>"), recorded before the rootfs is built: what keeps
         * the image in use (pod_checkpoints_image_users()) whatever its tags
         * do meanwhile. NULL in records of agents before it was recorded. */
        char *image_digest;
        /* The same for the image volumes the attempt mounts
         * (image-volumes.h), in the order of the pod's volumes. */
        char **image_volume_digests;
} AttemptRecord;

void attempt_record_done(AttemptRecord *r);
int attempt_record_write(const char *attempt_dir, const AttemptRecord *r);
/* -ENOENT if absent, -EINVAL if unreadable (a symlink included). */
int attempt_record_read(const char *attempt_dir, AttemptRecord *ret);

/* The sandbox of a pod as the agent left it: <run-dir>/sandboxes/<uid>.json,
 * written once the namespaces are pinned and the network is up, removed
 * with the sandbox. Its presence after an agent restart means the sandbox is
 * intact and the pod's running containers can be adopted; after a reboot
 * (<run-dir> is a tmpfs) it is gone and pods start afresh. */
typedef struct SandboxRecord {
        char **pod_ips; /* strv; NULL = none */
        bool network;   /* a CNI ADD succeeded and is not yet deleted */
        /* The pod's teardown began deleting its network: the sandbox is not
         * adopted again, even when the same pod is wanted again. */
        bool tearing_down;
} SandboxRecord;

void sandbox_record_done(SandboxRecord *r);
int sandbox_record_write(const char *path, const SandboxRecord *r);
/* Fails with err naming the file and what is wrong with it (fileio.h,
 * read_state_file_at()), or -EBADMSG when a member is missing or wrong. */
int sandbox_record_read(const char *path, SandboxRecord *ret, Error *err);
