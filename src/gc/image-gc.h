/* Image garbage collection (docs/images.md), kubelet's policy: when the image
 * filesystem (the one holding <root-dir>/images) is more than
 * high_percent full, unused images are removed, least recently used first
 * (never-used ones before used ones; then the earliest stored), until it is
 * at most low_percent full. Never removed: images in use (the pods'
 * checkpoints and attempts, pod_checkpoints_image_users()), images stored
 * less than min_age ago (kubelet's imageMinimumGCAge, counted from when the
 * image was stored), images pinned by a label of their config
 * (IMAGE_GC_LABEL_CONTAINERD = "pinned" as containerd's CRI pins them, or
 * IMAGE_GC_LABEL_NANOLET = "true") or named by --pinned-images.
 *
 * imageMaximumGCAge (kubelet 1.30+, max_age): besides, whatever the disk
 * usage, an image not in use and not pinned is removed once it has been
 * unused for longer than max_age. Unused is counted from its last use (the
 * last container created from it) or, never used, from when it was stored.
 * kubelet keeps those times in memory only, so after its own restart it
 * waits max_age before removing anything by age; nanolet's store keeps
 * them on disk, so it needs no such wait. The age pass runs before the
 * space pass, as kubelet's, and at least every IMAGE_GC_AGE_PERIOD (or
 * max_age, when shorter).
 *
 * Three parts: the decision (image_gc_bytes_to_free(), image_gc_select():
 * pure, unit-tested), the work (image_gc_helper_mode: listing, resolving the
 * users and removing blobs and layers walks the disk, so it runs in this
 * binary re-executed as a helper, one at a time) and the agent's side
 * (ImageGc: a statfs() every period and after each pull, which is one
 * syscall and fine on the loop, and the helper's report turned into log
 * lines and the kubelet_image_garbage_collected_total counter). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "event.h"
#include "helper.h"
#include "metrics.h"
#include "time-util.h"

#define IMAGE_GC_LABEL_CONTAINERD "io.cri-containerd.pinned"
#define IMAGE_GC_LABEL_NANOLET "nanolet.io/pinned"
#define IMAGE_GC_DEFAULT_PERIOD (10 * USEC_PER_SEC)
#define IMAGE_GC_AGE_PERIOD (5 * 60 * USEC_PER_SEC) /* kubelet's ImageGCPeriod */

typedef struct ImageGcPolicy {
        unsigned high_percent; /* 100: image GC off, as kubelet */
        unsigned low_percent;  /* < high_percent */
        usec_t min_age;
        usec_t max_age; /* imageMaximumGCAge; 0 = off */
} ImageGcPolicy;

/* kubelet's arithmetic: usage = 100 - available*100/capacity (integer
 * percent); above high, the bytes to free are capacity*(100-low)/100 -
 * available. 0: nothing to do (below high, high 100, capacity 0). */
uint64_t image_gc_bytes_to_free(const ImageGcPolicy *p, uint64_t capacity, uint64_t available);

typedef struct ImageGcCandidate {
        const char *digest;
        uint64_t size;     /* an estimate; the helper measures with statfs() */
        usec_t first_seen; /* when stored (CLOCK_REALTIME) */
        usec_t last_used;  /* last container created from it; 0 never */
        bool in_use;
        bool pinned;
} ImageGcCandidate;

/* The removal order: indices into c of the removable candidates (not in
 * use, not pinned, first_seen + min_age <= now), least recently used first
 * (last_used, then first_seen, then digest: a stable order), cut after the
 * one whose cumulated size reaches bytes_to_free (UINT64_MAX: all of them).
 * ret has room for n. Returns the count. */
size_t image_gc_select(const ImageGcPolicy *p, const ImageGcCandidate *c, size_t n, usec_t now,
                       uint64_t bytes_to_free, size_t *ret);

/* The age pass: indices into c of the candidates not in use, not pinned,
 * and unused (since last_used, or first_seen when never used) for longer
 * than p->max_age at now, least recently used first. 0 when max_age is 0.
 * ret has room for n. Returns the count. */
size_t image_gc_select_expired(const ImageGcPolicy *p, const ImageGcCandidate *c, size_t n,
                               usec_t now, size_t *ret);

/* True when the config labels (key, value, ... NULL) pin the image. */
bool image_gc_labels_pinned(char *const *labels);

/* The image-gc helper mode (helper.h). Removes the partial registry
 * downloads no pull holds (image_store_sweep_partials()), then images by age
 * (nothing when max_age is 0), then images for space (nothing when the
 * filesystem is below high). Its result's members:
 *   "partials": {"count": N, "bytes": N}, when there were any;
 *   "removed": [{"reason": "age"|"space", "digest", "size", "name"}, ...]
 *     in the order removed ("name": the image's first name, or its digest);
 *   "capacity", "before", "after": the filesystem's size and the bytes
 *     available before and after, once the store could be looked at.
 * A failure keeps the members of what was done before it. */
typedef struct ImageGcArgs {
        const char *root_dir;
        uint64_t high_percent;
        uint64_t low_percent;
        uint64_t min_age;    /* usec */
        uint64_t max_age;    /* usec */
        char *const *pinned; /* references, as --pinned-images */
} ImageGcArgs;
extern const HelperMode image_gc_helper_mode;
extern const HelperMain image_gc_helper;

/* The agent's side. */
typedef struct ImageGc ImageGc;
typedef struct ImageGcOptions {
        const char *root_dir;
        ImageGcPolicy policy;
        char **pinned_images; /* references, as --pinned-images; copied */
        usec_t period;        /* 0: IMAGE_GC_DEFAULT_PERIOD */
        Metrics *metrics;     /* may be NULL */
} ImageGcOptions;

int image_gc_new(ImageGc **ret, Event *e, const ImageGcOptions *o);
/* A running helper is killed and left to the loop to reap. */
ImageGc *image_gc_free(ImageGc *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageGc *, image_gc_free)
/* Looks at the filesystem now (after a pull or load) and starts the helper
 * when it is above the high threshold and none runs. */
void image_gc_check(ImageGc *g);
/* Eviction's node-level reclaim (eviction.h): removes every unused image
 * (in use, pinned and younger than min_age still stay), whatever the
 * thresholds; queued behind a running helper. */
void image_gc_reclaim_all(ImageGc *g);
/* Images the helpers removed so far, for space or by age (for tests and
 * logs). */
unsigned image_gc_removed_count(const ImageGc *g);
