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
/* ---- index.json (image-store-index.c) ---- */
#define INDEX_FILE "index.json"
/* The same document, written after each index.json: the tags' second copy. */
#define INDEX_BACKUP "index.json.backup"
/* A damaged index.json moved aside by a rebuild (one kept). */
#define INDEX_CORRUPT_PREFIX "index.json.corrupt-"
/* index.json's content: 0 and the index, or -EBADMSG and ret_problem (a
 * phrase after "index.json ...": "is empty", "is not valid JSON (line 1,
 * column 2)", ...). */
int store_index_parse(const char *data, size_t size, json_t **ret, char **ret_problem);
/* Reads index.json. When it is missing, or there but not an index (empty,
 * not JSON, another JSON type, another version's, a symlink: never
 * followed, not a regular file, too large), rebuilds it with
 * store_index_rebuild() under INDEX_LOCK (taken here unless locked says
 * the caller holds it), moves a bad file aside (INDEX_CORRUPT_PREFIX),
 * saves the new one and logs one error naming the file, the problem and
 * what was recovered. A new store (no index, no backup, no image blobs)
 * just gets an empty index. An index that cannot be read (EIO, EACCES)
 * is an error: nothing is rebuilt. */
int store_index_load(ImageStore *s, bool locked, json_t **ret, Error *err);
/* An index of what the store holds: backup's entries (tags included) whose
 * image is stored, then every other blob that is an image manifest with
 * its config blob stored, untagged. backup may be NULL. ret_tags
 * (optional): entries with a tag; ret_untagged (optional): without. */
int store_index_rebuild(ImageStore *s, json_t *backup, json_t **ret, unsigned *ret_tags,
                        unsigned *ret_untagged);
/* Writes index.json, then INDEX_BACKUP (both atomically: temp, fsync,
 * rename), and drops the cache. */
int store_index_save(ImageStore *s, json_t *index, Error *err);
/* Under INDEX_LOCK: writes INDEX_BACKUP from index.json when it is missing
 * or bad (a store from before backups). */
int store_index_backup_check_locked(ImageStore *s);
/* Removes the PARTIAL_PREFIX files of images_fd that no pull owns (their
 * flock is free: see blob_open_partial()); returns how many, ret_bytes
 * (optional) their allocated size. Needs no store lock. */
int store_partials_sweep(int images_fd, uint64_t *ret_bytes);
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
/* Removes blobs and layer dirs no index entry references. Needs GC_LOCK
 * exclusive; index_locked: the caller holds INDEX_LOCK too. */
int store_gc_locked(ImageStore *s, bool index_locked, uint64_t *ret_reclaimed, Error *err);
/* Builds an Image from a manifest digest present in the store. */
int store_image_build(ImageStore *s, const char *digest, Image **ret, Error *err);

/* The unpack-rootfs helper mode (image-worker.c starts it,
 * image-worker-helper.c runs it): the store, its limits, the image digest
 * and the rootfs directories. */
typedef struct ImageUnpackRootfsArgs {
        const char *store;
        uint64_t max_layer_size;
        uint64_t max_total_size;
        uint64_t max_ratio;
        uint64_t ratio_min_size;
        uint64_t max_entries;
        uint64_t max_path;
        const char *digest;
        const char *target;
        const char *upper_dir;
        const char *work_dir;
} ImageUnpackRootfsArgs;
extern const HelperMode image_unpack_rootfs_helper_mode;

/* The image-flush helper mode (image-flush-agent.c starts it,
 * image-worker-helper.c runs it). Its result: "flushed", the chain IDs of
 * the layers whose flush record it removed. */
typedef struct ImageFlushArgs {
        const char *store;
} ImageFlushArgs;
extern const HelperMode image_flush_helper_mode;

/* The image-pull helper mode (image-pull-agent.c starts it, image-pull.c
 * runs it): the job (ImagePullOptions as JSON, with credentials) on stdin,
 * never in argv. Its result: "digest" on success. */
typedef struct ImagePullArgs {
        const char *store;
} ImagePullArgs;
extern const HelperMode image_pull_helper_mode;
