/* The store's layer unpacking from stored blobs (libarchive, through
 * image-layer.c). A file apart from image-store.c so that the agent, which
 * opens the store but unpacks only in helper processes, does not link it
 * (docs/BENCHMARKS.md, memory). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-internal.h"
#include "image-util.h"
#include "log.h"
#include "rm-rf.h"
#include "string-util.h"

int store_layer_unpack_tmp(ImageStore *s, int blob_fd, const char *blob_digest, bool blob_verified,
                           const char *diff_id, const char *chain_id, uint64_t *budget,
                           const atomic_bool *cancel, char **ret_tmp, Error *err) {
        ImageLimits limits = s->limits;
        limits.cancel = cancel;
        char rnd[17];
        /* A layer of this chain left unflushed by an earlier boot goes
         * first: this unpack replaces it. */
        int r = store_layer_reclaim_stale(s, chain_id, err);
        if (r < 0)
                return r;
        if ((r = random_hex(rnd)) < 0)
                return r;
        _cleanup_free_ char *tmp = strprintf(TMP_PREFIX "%s-%s", chain_id + 7, rnd);
        if (!tmp)
                return -ENOMEM;
        if (mkdirat(s->layers_fd, tmp, 0755) < 0)
                return error_set(err, -errno, "cannot create layer directory: %m");
        /* The rename in store_layer_commit() makes the layer exist for every
         * later start, and a layer present is never unpacked again: a power
         * cut before its files reach the disk would leave it empty for good
         * (containerd's image_pull_with_sync_fs, home-assistant's corrupt
         * layers). So, before anything is unpacked, a durable record that
         * this layer is written under this boot; the files reach the disk
         * later (image_store_flush_layers(), off the critical path), and a
         * layer still recorded after a reboot is unpacked again. Without a
         * boot ID, one syncfs() before the rename, in this worker. */
        int recorded = store_layer_record(s, tmp, err);
        limits.early_writeback = recorded == 0; /* the syncfs() below follows */
        _cleanup_close_ int fd = -EBADF;
        if (recorded < 0)
                r = recorded;
        else if ((fd = openat(s->layers_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
                 0)
                r = error_set(err, -errno, "cannot open layer directory: %m");
        else if (fchmod(fd, 0755) < 0)
                r = error_set(err, -errno, "cannot chmod layer directory: %m");
        else
                r = image_layer_unpack(blob_fd, fd, blob_verified ? NULL : blob_digest, diff_id,
                                       &limits, budget, err);
        if (r >= 0 && recorded == 0 && syncfs(fd) < 0)
                r = error_set(err, -errno, "cannot flush the unpacked layer to disk: %m");
        if (r < 0) {
                store_layer_discard(s, tmp);
                return error_prefix(err, r, "layer %s", blob_digest);
        }
        *ret_tmp = TAKE_PTR(tmp);
        return 0;
}

int store_layer_commit(ImageStore *s, const char *tmp, const char *chain_id, Error *err) {
        if (renameat(s->layers_fd, tmp, s->layers_fd, chain_id + 7) < 0) {
                int r = -errno;
                store_layer_discard(s, tmp);
                if (r == -EEXIST || r == -ENOTEMPTY)
                        return 0; /* a concurrent load unpacked the same chain */
                return error_set(err, r, "cannot commit layer %s: %s", chain_id, strerror(-r));
        }
        return 0;
}

int image_store_unpack(ImageStore *s, const char *ref, Error *err) {
        _cleanup_close_ int gc = -EBADF;
        _cleanup_(image_freep) Image *im = NULL;
        uint64_t budget = s->limits.max_total_size;
        bool committed = false;
        int r;

        if ((r = store_lock(s, GC_LOCK, LOCK_SH, &gc, err)) < 0 ||
            (r = image_store_get(s, ref, &im, err)) < 0)
                return r;
        for (size_t i = 0; i < im->manifest.n_layers; i++) {
                const char *digest = im->manifest.layers[i].digest;
                _cleanup_free_ char *tmp = NULL;
                if (store_layer_exists(s, im->chain_ids[i]))
                        continue;
                _cleanup_close_ int fd = openat(s->blobs_fd, digest + 7, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return error_set(err, -errno, "layer blob %s: %m", digest);
                r = store_layer_unpack_tmp(s, fd, digest, false, im->config.diff_ids[i],
                                           im->chain_ids[i], &budget, NULL, &tmp, err);
                if (r < 0)
                        return r;
                r = store_layer_commit(s, tmp, im->chain_ids[i], err);
                if (r < 0)
                        return r;
                committed = true;
        }
        /* Only a new layer's rename needs syncing; with every layer there
         * already (every start of a pod but the image's first) this was a
         * directory fsync on each container's start path. */
        if (committed)
                (void)fsync(s->layers_fd);
        return 0;
}
