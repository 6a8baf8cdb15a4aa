/* Layer extraction: one layer blob (gzip, zstd or plain tar, detected by
 * content) unpacked into a directory, entry by entry, with every parent
 * resolved by openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS|RESOLVE_NO_SYMLINKS)
 * below the layer root. Whiteouts are converted to overlayfs format: a
 * 0/0 character device for ".wh.NAME", trusted.overlay.opaque=y for
 * ".wh..wh..opq". Also chain IDs (OCI image spec). */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct ImageLimits {
        uint64_t max_layer_size; /* decompressed bytes per layer */
        uint64_t max_total_size; /* decompressed bytes per load (all layers + archive) */
        uint64_t max_ratio;      /* decompressed:compressed ... */
        uint64_t ratio_min_size; /* ... checked once this many bytes are out */
        uint64_t max_entries;    /* tar entries per layer */
        size_t max_path;         /* bytes in an entry path */
        /* Optional: another thread sets it to stop an unpacking early
         * (-ECANCELED at the next blob read), e.g. a pull whose download
         * failed while its unpack threads run (image-pull.c). */
        const atomic_bool *cancel;
        /* Start the write-back of every file of 256 KiB or more as soon as
         * it is written: only when the caller flushes the layer before
         * committing it (a store without boot ID, image-store-unpack.c),
         * so that this flush finds little left. A layer committed with a
         * flush record is flushed later, off the pull's path; starting its
         * write-back here would only put that disk work (and its CPU) into
         * the pull (docs/BENCHMARKS.md, "Eighth round"). */
        bool early_writeback;
} ImageLimits;

#define IMAGE_DEFAULT_MAX_LAYER_SIZE (UINT64_C(8) << 30)
#define IMAGE_DEFAULT_MAX_TOTAL_SIZE (UINT64_C(8) << 30)
#define IMAGE_DEFAULT_MAX_RATIO 200
#define IMAGE_DEFAULT_RATIO_MIN_SIZE (UINT64_C(64) << 20)
#define IMAGE_DEFAULT_MAX_ENTRIES 1000000
#define IMAGE_DEFAULT_MAX_PATH 4096
#define IMAGE_MAX_PATH_DEPTH 128

void image_limits_default(ImageLimits *ret);

/* Lexical check of a tar entry path: refuses empty and absolute paths, ".."
 * components, over-long paths or components and over-deep nesting; returns
 * the path without "./", "." and repeated slashes ("." for the root). */
int image_tar_path_normalize(const char *path, size_t max_path, char **ret, Error *err);

/* Unpacks the layer read from blob_fd into the directory root_fd. When
 * blob_digest / diff_id are given, the compressed and decompressed streams
 * must hash to them. *budget (optional) is decremented by the decompressed
 * size and enforced as the remaining total. On failure root_fd holds a
 * partial tree the caller removes (it unpacks into a temporary directory). */
int image_layer_unpack(int blob_fd, int root_fd, const char *blob_digest, const char *diff_id,
                       const ImageLimits *limits, uint64_t *budget, Error *err);

/* ChainID(L0) = DiffID(L0); ChainID(Ln) = sha256(ChainID(Ln-1) + " " + DiffID(Ln)).
 * Returns a NULL-terminated vector of "sha256:<hex>", one per diff ID. */
int image_chain_ids(char *const *diff_ids, char ***ret);
