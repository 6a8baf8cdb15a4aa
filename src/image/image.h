/* The image store (docs/images.md): an OCI image layout under
 * <root-dir>/images (blobs/sha256/<hex>, index.json holding every tag as
 * org.opencontainers.image.ref.name = normalised reference), layers
 * unpacked once per chain ID under <root-dir>/layers/<chain-hex>/ in
 * overlayfs format, and container root filesystems built from them.
 *
 * Locking: index.json is rewritten under flock(images/.lock); writers
 * (load, unpack, mount) hold images/.gc.lock shared, prune and the
 * stale-temp cleanup hold it exclusive. Everything is written under a
 * .tmp-* name and renamed into place, so a SIGKILLed load leaves nothing
 * visible and its leftovers are removed at the next open.
 *
 * Blocking: every function here does file I/O and may take long (unpacking,
 * the copy fallback). The event loop uses image_rootfs_mount_unpacked()
 * (one overlay mount when every layer is unpacked already),
 * image_rootfs_start(), which runs the rest in a helper process and returns
 * its pid for event_add_child(), and image_store_get(), which answers from
 * an in-memory index (see there). */
#pragma once

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cleanup.h"
#include "error.h"
#include "event.h"
#include "helper.h"
#include "image-layer.h"
#include "image-oci.h"
#include "image-ref.h"
#include "time-util.h"

typedef struct ImageStore ImageStore;

typedef struct Image {
        char *digest;        /* manifest digest, "sha256:<hex>" (the image's identity) */
        char *config_digest; /* "image ID" */
        char **names;        /* normalised references tagging it, sorted; may be empty */
        uint64_t size;       /* manifest + config + compressed layer sizes */
        ImageManifest manifest;
        ImageConfig config;
        char **chain_ids; /* one per layer, bottom first */
        unsigned n_ref;   /* image_store_get() shares the store's cached copy */
} Image;

/* Drops one reference; frees the image with the last. */
Image *image_free(Image *image);
DEFINE_TRIVIAL_CLEANUP_FUNC(Image *, image_free)
#define _cleanup_image_ _cleanup_(image_freep)
void image_list_free(Image **images, size_t n);

/* Opens (creating if needed) the store under root_dir. limits may be NULL
 * (defaults). Removes leftovers of interrupted operations when no other
 * writer is active. */
int image_store_open(const char *root_dir, const ImageLimits *limits, ImageStore **ret, Error *err);
ImageStore *image_store_free(ImageStore *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageStore *, image_store_free)
/* Removes the partial registry downloads (images/.tmp-partial-*) no running
 * pull owns, as image_store_open() does: for the agent after a pull helper
 * died. Returns how many; ret_bytes (optional) their allocated size. A
 * directory read and an unlink per file: fine on the loop. */
int image_store_sweep_partials(const char *root_dir, uint64_t *ret_bytes);
#define _cleanup_image_store_ _cleanup_(image_store_freep)
const char *image_store_root(const ImageStore *s);

/* Loads every image of an OCI archive or docker-save archive (optionally
 * gzip/zstd compressed) read from fd. ret_names (optional) receives the
 * references tagged (or manifest digests of untagged images). Either every
 * image of the archive is stored or none. */
int image_store_load_fd(ImageStore *s, int fd, char ***ret_names, Error *err);
/* path "-" reads stdin. */
int image_store_load(ImageStore *s, const char *path, char ***ret_names, Error *err);

/* Commits an image whose blobs a caller (the registry pull) staged in the
 * directory images/<stage_name> (a name starting with ".tmp-", so an
 * interrupted pull's leftovers are removed like a load's), each file named
 * by the hex of its sha256 digest. The caller verified every file's digest
 * while writing it (an image-pull.c invariant); from here on the image is
 * checked, unpacked and committed by exactly the code `image load` uses.
 * manifest is the manifest's (or index's) descriptor; names are tagged.
 * unpacked (may be NULL): chain ID, layers/ temp dir name, ... of layers the
 * caller already unpacked with store_layer_unpack_tmp(), the function the
 * load uses (the pull does it while later blobs download); they are
 * committed with the rest, or removed. The staging directory is removed in
 * every case. */
int image_store_load_staged(ImageStore *s, const char *stage_name, const ImageDescriptor *manifest,
                            char **names, char **unpacked, char ***ret_names, Error *err);

/* Finds an image by reference (normalised), by manifest digest
 * ("sha256:<hex>") or by a unique hex prefix (>= 12) of the manifest or
 * config digest. -ENOENT when absent. Answers from the store's in-memory
 * index (built once, verifying every image's blobs; rebuilt after any write
 * to index.json, by this store or another process): cheap enough for the
 * event loop. The image returned is shared with that cache: read only,
 * released with image_free(). */
int image_store_get(ImageStore *s, const char *ref, Image **ret, Error *err);
/* All images, sorted by first name. */
int image_store_list(ImageStore *s, Image ***ret, size_t *ret_n, Error *err);
/* Adds the tag dst (moved from any other image) to the image src names. */
int image_store_tag(ImageStore *s, const char *src, const char *dst, Error *err);
/* Who uses which image. The store does not know about pods: its callers
 * (src/pod) collect the references pods name, and the store resolves each
 * exactly as image_store_get() does, so "in use" means "the image the agent
 * would run for it". A ref may be anything image_store_get() accepts,
 * including a manifest digest. */
typedef struct ImageUse {
        char *ref;
        char *user; /* for messages, e.g. "pod default/web-node1" */
} ImageUse;
typedef struct ImageUsers {
        ImageUse *uses;
        size_t n;
} ImageUsers;
void image_users_done(ImageUsers *u);
int image_users_add(ImageUsers *u, const char *ref, const char *user);

/* Removes a tag; a digest/ID removes every tag. An image left with no names is deleted
 * with the blobs and layers no other image uses. Refused (-EBUSY, naming the user)
 * when a reference in users (may be NULL) resolves to the image now and would not
 * after the removal. Returns 1 if the image itself was deleted, 0 if only untagged. */
int image_store_remove(ImageStore *s, const char *ref, const ImageUsers *users, Error *err);
/* Removes every image no reference in users (may be NULL) resolves to, then
 * unreferenced blobs and layers. ret_removed (optional) lists the removed
 * images' names/digests. */
int image_store_prune(ImageStore *s, const ImageUsers *users, char ***ret_removed,
                      uint64_t *ret_reclaimed, Error *err);
/* Image GC's clock (docs/images.md): image_store_mark_used() records that a
 * container is being created from the image with manifest digest now (the
 * mtime of images/last-used/<hex>: one open and futimens, fine on the loop);
 * image_store_times() reads it back as ret_last_used (0: never used) and,
 * as ret_first_seen, when the image was stored (its manifest blob's mtime:
 * kubelet's "first detected", which --image-minimum-gc-age counts from).
 * Marks of removed images go with the store's garbage collection. */
int image_store_mark_used(ImageStore *s, const char *digest, usec_t now);
int image_store_times(ImageStore *s, const char *digest, usec_t *ret_first_seen,
                      usec_t *ret_last_used);

/* Layers are committed before their files reach the disk, each with a
 * flush record holding the boot ID it was written under (docs/images.md,
 * "On disk"; image-store-flush.c). The record's verdict: CURRENT only for
 * exactly "<boot_id>\n" with boot_id this boot's; anything else (another
 * boot's ID, empty, torn, garbage) is STALE: the layer may have lost data
 * in a reboot and is unpacked again from its blob before any use. */
typedef enum LayerRecordState {
        LAYER_RECORD_CURRENT,
        LAYER_RECORD_STALE,
} LayerRecordState;
LayerRecordState image_layer_record_decide(const char *data, size_t size, const char *boot_id);
/* Whether any flush record is left (one directory read: fine on the loop). */
bool image_store_has_unflushed(ImageStore *s);
/* Flushes the layers recorded under this boot (syncfs() of the store's
 * filesystem), then removes their records; blocks (the agent runs it in
 * its flush helper, IMAGE_HELPER_FLUSH). ret_flushed (optional): the chain
 * IDs flushed. Takes images/.gc.lock shared. */
int image_store_flush_layers(ImageStore *s, char ***ret_flushed, Error *err);

/* The agent's flush (image-flush-agent.c): a timer every period (0:
 * IMAGE_FLUSH_PERIOD) and IMAGE_FLUSH_DELAY after each request (a pull
 * done) looks whether flush records are left and, if so, runs
 * image_store_flush_layers() in a helper process, one at a time, logging
 * each layer flushed. The first look is IMAGE_FLUSH_DELAY after the start.
 * The delay keeps the helper off the start of the pod that waited for the
 * pull; nothing waits for it: the records keep the store sound meanwhile. */
#define IMAGE_FLUSH_PERIOD (30 * USEC_PER_SEC)
#define IMAGE_FLUSH_DELAY (1 * USEC_PER_SEC)
typedef struct ImageFlusher ImageFlusher;
int image_flusher_new(Event *e, ImageStore *s, usec_t period, ImageFlusher **ret);
void image_flusher_request(ImageFlusher *f);
ImageFlusher *image_flusher_free(ImageFlusher *f);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageFlusher *, image_flusher_free)

/* Makes sure every layer of the image is unpacked (from its stored blob). */
int image_store_unpack(ImageStore *s, const char *ref, Error *err);
/* Path of a layer dir: <root>/layers/<chain-hex>. */
char *image_store_layer_path(const ImageStore *s, const char *chain_id);

typedef enum ImageRootfsMode {
        IMAGE_ROOTFS_OVERLAY,
        IMAGE_ROOTFS_COPY,
        _IMAGE_ROOTFS_MODE_MAX,
        _IMAGE_ROOTFS_MODE_INVALID = -EINVAL,
} ImageRootfsMode;
const char *image_rootfs_mode_to_string(ImageRootfsMode m);

typedef enum ImageRootfsFlags {
        IMAGE_ROOTFS_FORCE_COPY = 1 << 0, /* skip overlayfs */
        IMAGE_ROOTFS_NO_COPY = 1 << 1,    /* fail rather than fall back to copying */
} ImageRootfsFlags;

/* Mounts the image's root filesystem on target: overlayfs with the image's
 * layers as lowerdirs (top first) and upper_dir/work_dir (created if
 * missing, fresh per container attempt). When overlayfs is unavailable or
 * the lowerdir option is too long, the layers are merged into upper_dir
 * (whiteouts applied) and upper_dir is bind-mounted on target. */
int image_rootfs_mount(ImageStore *s, const char *ref, const char *target, const char *upper_dir,
                       const char *work_dir, ImageRootfsFlags flags, ImageRootfsMode *ret_mode,
                       Error *err);
int image_rootfs_umount(const char *target, Error *err);
/* The copy fallback alone: merges the image's layers into dest_dir. */
int image_rootfs_copy(ImageStore *s, const Image *image, const char *dest_dir, Error *err);

/* The container's root filesystem, built in a helper process for the event
 * loop (image-worker.c): image_store_unpack() and image_rootfs_mount() of
 * the image digest (a manifest digest the caller resolved with
 * image_store_get(); the helper refuses anything else, and an image no
 * longer in the store fails as image_store_get() does). The helper runs
 * as a Child (child.h); done runs once it is reaped and calls
 * image_worker_finish(). */
typedef struct ImageRootfsJob {
        const char *digest;
        const char *target;
        const char *upper_dir;
        const char *work_dir;
} ImageRootfsJob;
typedef struct ImageWorker {
        Child *child;
        char *target;
} ImageWorker;
int image_rootfs_start(ImageStore *s, Event *e, const ImageRootfsJob *job, child_done_t done,
                       void *userdata, ImageWorker *ret, Error *err);
/* The same root filesystem without a helper, when that is one mount(2):
 * the job's image (its digest looked up again in the store's in-memory
 * index, under images/.gc.lock taken shared without waiting) has every
 * layer unpacked (a directory, not a symlink, under layers/), so the
 * overlay is mounted by the caller itself; cheap enough for the event loop
 * (an exec of the helper costs ~7.5 ms of dynamic linking alone). 0 when
 * mounted; otherwise -errno and the reason (a layer not unpacked, a prune
 * holding the lock, an image with no layers, overlayfs refused, ...), and
 * the caller starts image_rootfs_start() for the same job, which unpacks,
 * waits for the lock, falls back to copying and reports the real error. */
int image_rootfs_mount_unpacked(ImageStore *s, const ImageRootfsJob *job, Error *err);
/* Collects the result and frees the worker's Child: 0 if it succeeded,
 * else its -errno and message. */
int image_worker_finish(ImageWorker *w, Error *err);
/* For teardown: SIGKILLs a helper that is still running and leaves the
 * reaping to the loop, which then unmounts the target the helper may have
 * mounted. Never waits. */
void image_worker_abort(ImageWorker *w);

/* The helper modes of this module (helper.h), for main()'s table:
 * unpack-rootfs (image_rootfs_start()'s work) and image-flush
 * (image_store_flush_layers() of the store, for ImageFlusher). */
extern const HelperMain image_unpack_rootfs_helper;
extern const HelperMain image_flush_helper;
