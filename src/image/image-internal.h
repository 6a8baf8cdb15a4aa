/* Shared between the image module's files; not part of its contract. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "image.h"

struct ImageStore {
        char *root;       /* <root-dir> */
        char *images_dir; /* <root-dir>/images */
        int images_fd;
        int blobs_fd; /* images/blobs/sha256 */
        int layers_fd;
        int unflushed_fd; /* layers/.unflushed (image-store-flush.c) */
        /* This boot's ID (/proc/sys/kernel/random/boot_id), "" when it
         * cannot be read: layers are then flushed before their rename. */
        char boot_id[37];
        ImageLimits limits;
        /* image_store_get()'s answers, so that a container start does not
         * read and hash every manifest and config blob: the index as last
         * read and the images it names (built, blobs verified, on first
         * use). Dropped by this store's own index writes; a write by
         * another process (the CLI while the agent runs) is seen by stat():
         * index.json is only ever replaced by rename, and index_fd keeps
         * the cached file open, so its inode number cannot be reused and a
         * different inode (or size, mtime, ctime) means a new index. */
        struct {
                int index_fd;
                struct stat st;
                json_t *index;
                Image **images;
                size_t n_images;
                bool have_images;
        } cache;
};

#define INDEX_LOCK ".lock"
#define GC_LOCK ".gc.lock"
#define TMP_PREFIX ".tmp-"
/* images/.tmp-partial-<hex>: a registry download in progress or interrupted. */
#define PARTIAL_PREFIX TMP_PREFIX "partial-"
/* layers/.unflushed/<chain-hex>-<rnd>: a layer committed before its files
 * reached the disk (image-store-flush.c). */
#define UNFLUSHED_DIR ".unflushed"
#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"

/* image_store_open(); cleanup_stale false for a helper working for an agent
 * that has the store open (it cleaned up when it opened it). */
int store_open(const char *root_dir, const ImageLimits *limits, bool cleanup_stale,
               ImageStore **ret, Error *err);
/* flock() on images/<name>; returns the fd holding the lock. */
int store_lock(ImageStore *s, const char *name, int op, int *ret_fd, Error *err);
int store_index_load(ImageStore *s, json_t **ret, Error *err);
/* Writes index.json (atomically) and drops the cache. */
int store_index_save(ImageStore *s, json_t *index, Error *err);
void store_cache_drop(ImageStore *s);
/* Adds name -> descriptor to the index (moving the name if another image had it). */
int store_index_add(json_t *index, const ImageDescriptor *manifest, const char *name);
/* Reads and verifies a JSON blob from the store. */
int store_blob_read(ImageStore *s, const char *digest, char **ret, size_t *ret_size, Error *err);
/* Unpacks one layer blob (fd) into layers/.tmp-<chain>-<rand>; returns the temp name.
 * blob_verified: the caller hashed the blob to blob_digest already (a pull
 * does while downloading), so only the diff ID is computed here: one pass
 * of SHA-256 over the compressed bytes less. cancel (optional): see
 * ImageLimits.cancel; only reads of s are made, so threads of one process
 * may unpack into the same store at once. */
int store_layer_unpack_tmp(ImageStore *s, int blob_fd, const char *blob_digest, bool blob_verified,
                           const char *diff_id, const char *chain_id, uint64_t *budget,
                           const atomic_bool *cancel, char **ret_tmp, Error *err);
/* Renames a temp layer dir to its chain ID name; a concurrent winner is fine. */
int store_layer_commit(ImageStore *s, const char *tmp, const char *chain_id, Error *err);
/* layers/<chain> is a directory (not a symlink) with no stale flush record. */
bool store_layer_exists(ImageStore *s, const char *chain_id);
/* ---- flush records (image-store-flush.c) ---- */
int store_read_boot_id(const char *path, char ret[static 37]);
/* Writes tmp's flush record (the current boot ID), durably: 1 when written,
 * 0 when the store has no boot ID (the caller then flushes the layer itself
 * before its rename). */
int store_layer_record(ImageStore *s, const char *tmp, Error *err);
/* Removes an uncommitted temp layer dir and its record. */
void store_layer_discard(ImageStore *s, const char *tmp);
/* When layers/<chain> exists with a stale record: logs, removes the dir
 * (-EBUSY when a mounted overlay uses it) and the chain's records, so that
 * the caller unpacks it again. 0 otherwise. */
int store_layer_reclaim_stale(ImageStore *s, const char *chain_id, Error *err);
/* Needs GC_LOCK exclusive: removes records of no layer, and stale layers
 * (not mounted ones) with their records. */
int store_records_cleanup_locked(ImageStore *s);
/* Chain IDs' hex of the layers mounted overlays use (from mountinfo). */
int store_mounted_layers(ImageStore *s, char ***keep);
/* mount(2) copies at most one page of options. */
#define MOUNT_OPTIONS_MAX 4095
/* The overlayfs options for the image's root filesystem: lowerdir= the
 * store's own layer directories (image_store_layer_path() of its chain IDs,
 * top first), upperdir= and workdir=. -EINVAL (with a sentence) when
 * upper_dir or work_dir hold a ',' or ':', which would end the option;
 * -E2BIG when the whole is longer than mount(2) takes. */
int store_overlay_options(ImageStore *s, const Image *im, const char *upper_dir,
                          const char *work_dir, char **ret, Error *err);
/* Removes blobs and layer dirs no index entry references. Needs GC_LOCK exclusive. */
int store_gc_locked(ImageStore *s, uint64_t *ret_reclaimed, Error *err);
/* Builds an Image from a manifest digest present in the store. */
int store_image_build(ImageStore *s, const char *digest, Image **ret, Error *err);
