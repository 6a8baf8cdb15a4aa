/* The pod checkpoint, <root-dir>/pods/<uid>/pod.json: what the agent needs
 * to recognise and adopt a pod after it restarted, written before the pod's
 * first container is created (docs/state-files.md). */
#pragma once

#include <jansson.h>

typedef struct PodCheckpoint {
        char *uid;
        char *name;
        char *namespace;
        char *source;   /* "file" | "http" */
        char *origin;   /* path or URL */
        json_t *manifest; /* canonical manifest document */
        json_t *restart_counts; /* {"<container>": N} */
} PodCheckpoint;

void pod_checkpoint_done(PodCheckpoint *c);

/* Writes <pod_dir>/pod.json atomically. */
int pod_checkpoint_write(const char *pod_dir, const PodCheckpoint *c);
/* Reads it back; -ENOENT if absent, -EINVAL if unreadable. */
int pod_checkpoint_read(const char *pod_dir, PodCheckpoint *ret);
