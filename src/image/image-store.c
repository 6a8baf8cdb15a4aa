/* The store: layout, locks, index.json, lookup, tag/remove/prune, GC.
 * Unpacking layers from stored blobs is image-store-unpack.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "hash.h"
#include "image-internal.h"
#include "image-util.h"
#include "log.h"
#include "mount-util.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

/* images/last-used/<hex>: image GC's last-used marks. */
#define LAST_USED_DIR "last-used"

static const char oci_layout[] = "{\"imageLayoutVersion\":\"1.0.0\"}";

const char *image_store_root(const ImageStore *s) {
        return s->root;
}

ImageStore *image_store_free(ImageStore *s) {
        if (!s)
                return NULL;
        store_cache_drop(s);
        safe_close(s->images_fd);
        safe_close(s->blobs_fd);
        safe_close(s->layers_fd);
        safe_close(s->unflushed_fd);
        free(s->root);
        free(s->images_dir);
        free(s);
        return NULL;
}

int store_lock(ImageStore *s, const char *name, int op, int *ret_fd, Error *err) {
        _cleanup_close_ int fd = openat(s->images_fd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return error_set(err, -errno, "cannot open lock file %s/%s: %m", s->images_dir,
                                 name);
        while (flock(fd, op) < 0) {
                if (errno == EINTR)
                        continue;
                if (errno == EWOULDBLOCK)
                        return -EWOULDBLOCK;
                return error_set(err, -errno, "cannot lock %s/%s: %m", s->images_dir, name);
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* keep: a name prefix spared (NULL: none). */
static int remove_tmp_entries(int dir_fd, const char *prefix, const char *keep,
                              uint64_t *reclaimed) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(dir_fd, NULL, 0, &d);
        if (r < 0)
                return r;
        int n = 0;
        FOREACH_DIRENT(de, d)
                if (startswith(de->d_name, prefix) && !(keep && startswith(de->d_name, keep))) {
                        struct stat st;
                        if (reclaimed &&
                            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                                *reclaimed += (uint64_t)st.st_blocks * 512;
                        log_debug("Removing leftover \"%s\" of an interrupted operation",
                                  de->d_name);
                        (void)rm_rf_at(dirfd(d), de->d_name);
                        n++;
                }
        return n;
}

int store_partials_sweep(int images_fd, uint64_t *ret_bytes) {
        _cleanup_closedir_ DIR *d = NULL;
        uint64_t bytes = 0;
        int n = 0;
        int r = opendir_fd(images_fd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                struct stat a, b;
                if (!startswith(de->d_name, PARTIAL_PREFIX))
                        continue;
                _cleanup_close_ int fd =
                        openat(dirfd(d), de->d_name,
                               O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
                if (fd < 0) {
                        /* A pull creates regular files only: a symlink
                         * there is no pull's, and goes unfollowed. */
                        if (errno == ELOOP && unlinkat(dirfd(d), de->d_name, 0) == 0)
                                n++;
                        continue;
                }
                if (fstat(fd, &a) < 0)
                        continue;
                if (!S_ISREG(a.st_mode)) {
                        if (rm_rf_at(dirfd(d), de->d_name) >= 0)
                                n++;
                        continue;
                }
                /* Held by a running pull: its own. */
                if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                        continue;
                /* Still that file under that name (a pull may have staged
                 * it and another created a new one meanwhile). */
                if (fstatat(dirfd(d), de->d_name, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
                    a.st_ino != b.st_ino || a.st_dev != b.st_dev)
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0)
                        continue;
                log_debug("Removed \"%s\" (%" PRIu64 " bytes), a registry download no pull owns",
                          de->d_name, (uint64_t)a.st_blocks * 512);
                bytes += (uint64_t)a.st_blocks * 512;
                n++;
        }
        if (ret_bytes)
                *ret_bytes = bytes;
        return n;
}

int image_store_sweep_partials(const char *root_dir, uint64_t *ret_bytes) {
        _cleanup_free_ char *p = strprintf("%s/images", root_dir);
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return store_partials_sweep(fd, ret_bytes);
}

/* Leftovers of a killed writer: only when no writer is active right now.
 * Partial downloads have a lock each and go whenever no pull holds it. */
static int store_cleanup_stale(ImageStore *s, Error *err) {
        _cleanup_close_ int lock = -EBADF;
        uint64_t bytes = 0;
        int n = store_partials_sweep(s->images_fd, &bytes);
        if (n > 0)
                log_info("Removed %d partial registry download(s) of pulls that ended (%" PRIu64
                         " bytes).",
                         n, bytes);
        int r = store_lock(s, GC_LOCK, LOCK_EX | LOCK_NB, &lock, err);
        if (r == -EWOULDBLOCK)
                return 0;
        if (r < 0)
                return r;
        int staged = remove_tmp_entries(s->images_fd, TMP_PREFIX, PARTIAL_PREFIX, NULL);
        (void)remove_tmp_entries(s->images_fd, "index.json.tmp.", NULL, NULL);
        (void)remove_tmp_entries(s->images_fd, "index.json.backup.tmp.", NULL, NULL);
        (void)remove_tmp_entries(s->blobs_fd, TMP_PREFIX, NULL, NULL);
        (void)remove_tmp_entries(s->layers_fd, TMP_PREFIX, NULL, NULL);
        /* Layers committed unflushed before a reboot: removed now, unpacked
         * again from their blobs when an image needs them. */
        (void)store_records_cleanup_locked(s);
        /* A load killed while committing may have left blobs/layers that no
         * index entry references yet: collect them now. */
        if (staged > 0)
                return store_gc_locked(s, false, NULL, err);
        return 0;
}

int store_open(const char *root_dir, const ImageLimits *limits, bool cleanup_stale,
               ImageStore **ret, Error *err) {
        _cleanup_(image_store_freep) ImageStore *s = calloc(1, sizeof(ImageStore));
        if (!s)
                return -ENOMEM;
        s->images_fd = s->blobs_fd = s->layers_fd = s->unflushed_fd = s->cache.index_fd = -EBADF;
        if (limits)
                s->limits = *limits;
        else
                image_limits_default(&s->limits);
        s->root = strdup(root_dir);
        s->images_dir = strprintf("%s/images", root_dir);
        _cleanup_free_ char *blobs = strprintf("%s/images/blobs/sha256", root_dir);
        _cleanup_free_ char *layers = strprintf("%s/layers", root_dir);
        if (!s->root || !s->images_dir || !blobs || !layers)
                return -ENOMEM;
        int r = mkdir_p(blobs, 0700);
        if (r >= 0)
                r = mkdir_p(layers, 0700);
        if (r < 0)
                return error_set(err, r, "cannot create image store under \"%s\": %s", root_dir,
                                 strerror(-r));
        s->images_fd = open(s->images_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        s->blobs_fd = open(blobs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        s->layers_fd = open(layers, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->images_fd < 0 || s->blobs_fd < 0 || s->layers_fd < 0)
                return error_set(err, -errno, "cannot open image store under \"%s\": %m", root_dir);
        if (mkdirat(s->layers_fd, UNFLUSHED_DIR, 0700) < 0 && errno != EEXIST)
                return error_set(err, -errno, "cannot create %s/" UNFLUSHED_DIR ": %m", layers);
        /* Not a symlink: the records' verdicts decide which layers stay. */
        s->unflushed_fd = openat(s->layers_fd, UNFLUSHED_DIR,
                                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (s->unflushed_fd < 0)
                return error_set(err, -errno, "cannot open %s/" UNFLUSHED_DIR ": %m", layers);
        r = store_read_boot_id(BOOT_ID_PATH, s->boot_id);
        if (r < 0) {
                s->boot_id[0] = 0;
                log_debug("Cannot read the boot ID from " BOOT_ID_PATH
                          " (%s): layers are flushed to disk before they are committed",
                          strerror(-r));
        }

        if (faccessat(s->images_fd, "oci-layout", F_OK, 0) < 0) {
                _cleanup_free_ char *p = strprintf("%s/oci-layout", s->images_dir);
                if (!p)
                        return -ENOMEM;
                r = write_file_atomic(p, oci_layout, strlen(oci_layout), 0644);
                if (r < 0)
                        return error_set(err, r, "cannot write \"%s\": %s", p, strerror(-r));
        }
        if (cleanup_stale) {
                /* A missing or damaged index is rebuilt here, before
                 * anything reads it (a helper, opening a store its agent
                 * opened, leaves that to its first read); a store from
                 * before the backup gets one. */
                _cleanup_close_ int lock = -EBADF;
                _cleanup_json_ json_t *index = NULL;
                if ((r = store_lock(s, INDEX_LOCK, LOCK_EX, &lock, err)) < 0 ||
                    (r = store_index_load(s, true, &index, err)) < 0)
                        return r;
                r = store_index_backup_check_locked(s);
                if (r < 0)
                        log_debug("Cannot write %s/" INDEX_BACKUP " (%s); ignoring it.",
                                  s->images_dir, strerror(-r));
                lock = safe_close(lock);
                r = store_cleanup_stale(s, err);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int image_store_open(const char *root_dir, const ImageLimits *limits, ImageStore **ret,
                     Error *err) {
        return store_open(root_dir, limits, true, ret, err);
}

void store_cache_drop(ImageStore *s) {
        s->cache.index_fd = safe_close(s->cache.index_fd);
        json_decref(s->cache.index);
        s->cache.index = NULL;
        image_list_free(s->cache.images, s->cache.n_images);
        s->cache.images = NULL;
        s->cache.n_images = 0;
        s->cache.have_images = false;
}

static bool index_unchanged(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Makes s->cache.index the current index.json. */
static int store_cache_index(ImageStore *s, Error *err) {
        struct stat st;

        if (s->cache.index && fstatat(s->images_fd, "index.json", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            index_unchanged(&st, &s->cache.st))
                return 0;
        store_cache_drop(s);
        /* Stat the file, then read it by name: if a writer replaces it in
         * between, the cache holds the newer content under the older file's
         * identity, and the next call reads it again. Never the reverse. */
        _cleanup_close_ int fd = openat(s->images_fd, "index.json",
                                        O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        json_t *index = NULL;
        int r = store_index_load(s, false, &index, err);
        if (r < 0)
                return r;
        if (fd < 0 || fstat(fd, &st) < 0) {
                /* Not cacheable; answer from what was read. */
                s->cache.index = index;
                return 0;
        }
        s->cache.index = index;
        s->cache.index_fd = TAKE_FD(fd);
        s->cache.st = st;
        return 0;
}

static const char *entry_digest(json_t *e) {
        return json_string_value(json_object_get(e, "digest"));
}

static const char *entry_name(json_t *e) {
        return json_string_value(
                json_object_get(json_object_get(e, "annotations"), IMAGE_ANNOTATION_REF_NAME));
}

int store_index_add(json_t *index, const ImageDescriptor *m, const char *name) {
        json_t *manifests = json_object_get(index, "manifests");
        size_t i;
        json_t *e;
        bool present = false;

        /* A name belongs to one image: drop it from wherever it was. */
        for (i = 0; name && i < json_array_size(manifests);) {
                e = json_array_get(manifests, i);
                const char *n = entry_name(e);
                if (n && streq(n, name)) {
                        if (streq(strempty(entry_digest(e)), m->digest))
                                return 0;
                        (void)json_array_remove(manifests, i);
                        continue;
                }
                i++;
        }
        json_array_foreach(manifests, i, e) if (streq(strempty(entry_digest(e)), m->digest)) {
                present = true;
                if (name && !entry_name(e)) {
                        /* Name an untagged entry rather than adding one. */
                        json_t *ann = json_pack("{s:s}", IMAGE_ANNOTATION_REF_NAME, name);
                        return ann && json_object_set_new(e, "annotations", ann) == 0 ? 0 : -ENOMEM;
                }
        }
        if (present && !name)
                return 0;
        json_t *d = json_pack("{s:s, s:s, s:I}", "mediaType",
                              m->media_type ? m->media_type : IMAGE_MT_OCI_MANIFEST, "digest",
                              m->digest, "size", (json_int_t)(m->size < 0 ? 0 : m->size));
        if (!d)
                return -ENOMEM;
        if (name && json_object_set_new(d, "annotations",
                                        json_pack("{s:s}", IMAGE_ANNOTATION_REF_NAME, name)) < 0) {
                json_decref(d);
                return -ENOMEM;
        }
        return json_array_append_new(manifests, d) == 0 ? 0 : -ENOMEM;
}

int store_blob_read(ImageStore *s, const char *digest, char **ret, size_t *ret_size, Error *err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        char got[72];

        if (!image_digest_is_valid(digest))
                return error_set(err, -EINVAL, "invalid digest \"%s\"", strna(digest));
        int r = read_full_file_at(s->blobs_fd, digest + 7, IMAGE_JSON_MAX, &data, &size);
        if (r < 0)
                return error_set(err, r, "blob %s: %s", digest,
                                 r == -ENOENT ? "missing from the store" : strerror(-r));
        /* hash.h, not the streaming EVP helpers: this runs in the agent,
         * which does not map libcrypto. */
        if ((r = sha256_oci_digest(data, size, got)) < 0)
                return r;
        if (!streq(got, digest))
                return error_set(err, -EBADMSG, "blob %s is corrupt (content hashes to %s)", digest,
                                 got);
        *ret = TAKE_PTR(data);
        *ret_size = size;
        return 0;
}

Image *image_free(Image *image) {
        if (!image)
                return NULL;
        if (image->n_ref > 1) {
                image->n_ref--;
                return NULL;
        }
        free(image->digest);
        free(image->config_digest);
        strv_free(image->names);
        image_manifest_done(&image->manifest);
        image_config_done(&image->config);
        strv_free(image->chain_ids);
        free(image);
        return NULL;
}

void image_list_free(Image **images, size_t n) {
        for (size_t i = 0; images && i < n; i++)
                image_free(images[i]);
        free(images);
}

int store_image_build(ImageStore *s, const char *digest, Image **ret, Error *err) {
        _cleanup_(image_freep) Image *im = calloc(1, sizeof(Image));
        _cleanup_free_ char *mdata = NULL, *cdata = NULL;
        size_t msize, csize;
        int r;

        if (!im)
                return -ENOMEM;
        im->n_ref = 1;
        im->digest = strdup(digest);
        im->names = calloc(1, sizeof(char *));
        if (!im->digest || !im->names)
                return -ENOMEM;
        if ((r = store_blob_read(s, digest, &mdata, &msize, err)) < 0 ||
            (r = image_manifest_parse(mdata, msize, &im->manifest, err)) < 0)
                return error_prefix(err, r, "image %s", digest);
        if ((r = store_blob_read(s, im->manifest.config.digest, &cdata, &csize, err)) < 0 ||
            (r = image_config_parse(cdata, csize, &im->config, err)) < 0)
                return error_prefix(err, r, "image %s", digest);
        if (strv_length(im->config.diff_ids) != im->manifest.n_layers)
                return error_set(err, -EBADMSG,
                                 "image %s: %zu layers but %zu diff IDs in its config", digest,
                                 im->manifest.n_layers, strv_length(im->config.diff_ids));
        im->config_digest = strdup(im->manifest.config.digest);
        if (!im->config_digest)
                return -ENOMEM;
        r = image_chain_ids(im->config.diff_ids, &im->chain_ids);
        if (r < 0)
                return r;
        im->size = msize + csize;
        for (size_t i = 0; i < im->manifest.n_layers; i++)
                im->size += (uint64_t)MAX(im->manifest.layers[i].size, 0);
        *ret = TAKE_PTR(im);
        return 0;
}

static int image_cmp(const void *a, const void *b) {
        const Image *x = *(Image *const *)a, *y = *(Image *const *)b;
        const char *nx = x->names[0] ? x->names[0] : "~", *ny = y->names[0] ? y->names[0] : "~";
        int c = strcmp(nx, ny);
        return c ? c : strcmp(x->digest, y->digest);
}

static int list_from_index(ImageStore *s, json_t *index, Image ***ret, size_t *ret_n, Error *err) {
        json_t *manifests = json_object_get(index, "manifests");
        Image **l = NULL;
        size_t n = 0, i;
        json_t *e;
        int r = 0;

        json_array_foreach(manifests, i, e) {
                const char *d = entry_digest(e), *name = entry_name(e);
                Image *im = NULL;
                if (!image_digest_is_valid(d))
                        continue;
                for (size_t k = 0; k < n; k++)
                        if (streq(l[k]->digest, d))
                                im = l[k];
                if (!im) {
                        r = store_image_build(s, d, &im, err);
                        if (r < 0)
                                goto fail;
                        Image **nl = reallocarray(l, n + 1, sizeof(Image *));
                        if (!nl) {
                                image_free(im);
                                r = -ENOMEM;
                                goto fail;
                        }
                        l = nl;
                        l[n++] = im;
                }
                if (name && !strv_contains(im->names, name)) {
                        r = strv_extend(&im->names, name);
                        if (r < 0)
                                goto fail;
                        strv_sort(im->names);
                }
        }
        if (n > 1)
                qsort(l, n, sizeof(Image *), image_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
fail:
        image_list_free(l, n);
        return r;
}

int image_store_list(ImageStore *s, Image ***ret, size_t *ret_n, Error *err) {
        _cleanup_json_ json_t *index = NULL;
        int r = store_index_load(s, false, &index, err);
        if (r < 0)
                return r;
        return list_from_index(s, index, ret, ret_n, err);
}

/* Which index entries does ref select? Writes the image digest; *ret_name is
 * the normalised name when ref is a name (only that tag is meant). */
static int resolve_ref(json_t *index, const char *ref, char **ret_digest, char **ret_name,
                       Error *err) {
        json_t *manifests = json_object_get(index, "manifests");
        size_t i;
        json_t *e;
        _cleanup_free_ char *name = NULL;
        const char *found = NULL;

        if (image_digest_is_valid(ref)) {
                json_array_foreach(manifests, i, e) if (streq(strempty(entry_digest(e)), ref))
                        found = ref;
        } else {
                size_t n = strlen(ref);
                bool hexprefix = n >= 12 && n <= 64 && strspn(ref, "0123456789abcdef") == n;
                if (hexprefix) {
                        json_array_foreach(manifests, i, e) {
                                const char *d = entry_digest(e);
                                if (d && strneq(d + 7, ref, n)) {
                                        if (found && !streq(found, d))
                                                return error_set(err, -ENOTUNIQ,
                                                                 "\"%s\" matches more than "
                                                                 "one image",
                                                                 ref);
                                        found = d;
                                }
                        }
                }
                if (!found) {
                        int r = image_ref_normalize(ref, &name, err);
                        if (r < 0)
                                return r;
                        ImageRef pr = {};
                        if (image_ref_parse(name, &pr, NULL) >= 0 && pr.digest && !pr.tag) {
                                /* name@digest: the digest decides. */
                                json_array_foreach(manifests, i,
                                                   e) if (streq(strempty(entry_digest(e)),
                                                                pr.digest)) found = entry_digest(e);
                                free(name);
                                name = NULL;
                        } else
                                json_array_foreach(manifests, i, e) {
                                        const char *nm = entry_name(e);
                                        if (nm && streq(nm, name))
                                                found = entry_digest(e);
                                }
                        image_ref_done(&pr);
                }
        }
        if (!found)
                return error_set(err, -ENOENT, "image \"%s\" not found", ref);
        char *d = strdup(found);
        if (!d)
                return -ENOMEM;
        *ret_digest = d;
        if (ret_name)
                *ret_name = TAKE_PTR(name);
        return 0;
}

int image_store_get(ImageStore *s, const char *ref, Image **ret, Error *err) {
        _cleanup_free_ char *digest = NULL;
        int r = store_cache_index(s, err);
        if (r < 0)
                return r;
        r = resolve_ref(s->cache.index, ref, &digest, NULL, err);
        if (r < 0)
                return r;
        if (!s->cache.have_images) {
                /* Every image, as before the cache: a corrupt one fails the lookup of any. */
                r = list_from_index(s, s->cache.index, &s->cache.images, &s->cache.n_images, err);
                if (r < 0) {
                        store_cache_drop(s);
                        return r;
                }
                s->cache.have_images = true;
        }
        for (size_t i = 0; i < s->cache.n_images; i++)
                if (streq(s->cache.images[i]->digest, digest)) {
                        s->cache.images[i]->n_ref++;
                        *ret = s->cache.images[i];
                        return 0;
                }
        return error_set(err, -ENOENT, "image \"%s\" not found", ref);
}

int image_store_tag(ImageStore *s, const char *src, const char *dst, Error *err) {
        _cleanup_close_ int lock = -EBADF;
        _cleanup_json_ json_t *index = NULL;
        _cleanup_free_ char *digest = NULL, *name = NULL;
        _cleanup_(image_freep) Image *im = NULL;
        int r = image_ref_normalize(dst, &name, err);
        if (r < 0)
                return r;
        ImageRef pr = {};
        r = image_ref_parse(name, &pr, err);
        bool digest_only = r >= 0 && !pr.tag;
        image_ref_done(&pr);
        if (digest_only)
                return error_set(err, -EINVAL, "tag \"%s\": a tag cannot be a digest", dst);
        if ((r = store_lock(s, INDEX_LOCK, LOCK_EX, &lock, err)) < 0 ||
            (r = store_index_load(s, true, &index, err)) < 0 ||
            (r = resolve_ref(index, src, &digest, NULL, err)) < 0 ||
            (r = store_image_build(s, digest, &im, err)) < 0)
                return r;
        ImageDescriptor d = { .digest = digest, .size = -1 };
        json_t *manifests = json_object_get(index, "manifests");
        size_t i;
        json_t *e;
        json_array_foreach(manifests, i, e) if (streq(strempty(entry_digest(e)), digest)) {
                d.size = json_integer_value(json_object_get(e, "size"));
                d.media_type = (char *)json_string_value(json_object_get(e, "mediaType"));
        }
        r = store_index_add(index, &d, name);
        if (r < 0)
                return r;
        return store_index_save(s, index, err);
}

void image_users_done(ImageUsers *u) {
        for (size_t i = 0; i < u->n; i++) {
                free(u->uses[i].ref);
                free(u->uses[i].user);
        }
        free(u->uses);
        *u = (ImageUsers){};
}

int image_users_add(ImageUsers *u, const char *ref, const char *user) {
        ImageUse *l = reallocarray(u->uses, u->n + 1, sizeof(ImageUse));
        if (!l)
                return -ENOMEM;
        u->uses = l;
        ImageUse use = { .ref = strdup(ref), .user = strdup(user) };
        if (!use.ref || !use.user) {
                free(use.ref);
                free(use.user);
                return -ENOMEM;
        }
        u->uses[u->n++] = use;
        return 0;
}

/* The manifest digest each use resolves to in index, as image_store_get()
 * resolves it; "" where it resolves to nothing (that use keeps nothing). */
static int users_resolve(json_t *index, const ImageUsers *users, char ***ret_digests) {
        _cleanup_strv_free_ char **digests = calloc(1, sizeof(char *));
        if (!digests)
                return -ENOMEM;
        for (size_t i = 0; users && i < users->n; i++) {
                _cleanup_free_ char *d = NULL;
                Error ignore = {};
                int r = resolve_ref(index, users->uses[i].ref, &d, NULL, &ignore);
                if (r == -ENOMEM)
                        return r;
                if (strv_extend(&digests, r < 0 ? "" : d) < 0)
                        return -ENOMEM;
        }
        *ret_digests = TAKE_PTR(digests);
        return 0;
}

static void index_remove(json_t *index, const char *digest, const char *name) {
        json_t *manifests = json_object_get(index, "manifests");
        for (size_t i = 0; i < json_array_size(manifests);) {
                json_t *e = json_array_get(manifests, i);
                const char *n = entry_name(e);
                if (streq(strempty(entry_digest(e)), digest) && (!name || (n && streq(n, name))))
                        (void)json_array_remove(manifests, i);
                else
                        i++;
        }
}

static bool index_has(json_t *index, const char *digest) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(index, "manifests"), i,
                           e) if (streq(strempty(entry_digest(e)), digest)) return true;
        return false;
}

int image_store_remove(ImageStore *s, const char *ref, const ImageUsers *users, Error *err) {
        _cleanup_close_ int gc = -EBADF, lock = -EBADF;
        _cleanup_json_ json_t *index = NULL;
        _cleanup_free_ char *digest = NULL, *name = NULL;
        _cleanup_strv_free_ char **before = NULL, **after = NULL;
        int r;

        if ((r = store_lock(s, GC_LOCK, LOCK_EX, &gc, err)) < 0 ||
            (r = store_lock(s, INDEX_LOCK, LOCK_EX, &lock, err)) < 0 ||
            (r = store_index_load(s, true, &index, err)) < 0 ||
            (r = resolve_ref(index, ref, &digest, &name, err)) < 0 ||
            (r = users_resolve(index, users, &before)) < 0)
                return r;
        index_remove(index, digest, name);
        bool deleted = !index_has(index, digest);
        /* Refused when a user would lose its image: the image itself goes,
         * or the name a pod runs it by does. */
        if ((r = users_resolve(index, users, &after)) < 0)
                return r;
        for (size_t i = 0; users && i < users->n; i++)
                if (streq(before[i], digest) && !streq(after[i], digest))
                        return error_set(err, -EBUSY,
                                         "image \"%s\" is in use by %s; remove the pod first", ref,
                                         users->uses[i].user);
        r = store_index_save(s, index, err);
        if (r < 0)
                return r;
        if (deleted) {
                r = store_gc_locked(s, true, NULL, err);
                if (r < 0)
                        return r;
        }
        return deleted;
}

int image_store_prune(ImageStore *s, const ImageUsers *users, char ***ret_removed,
                      uint64_t *ret_reclaimed, Error *err) {
        _cleanup_close_ int gc = -EBADF, lock = -EBADF;
        _cleanup_json_ json_t *index = NULL;
        _cleanup_strv_free_ char **removed = calloc(1, sizeof(char *)), **in_use = NULL;
        Image **l = NULL;
        size_t n = 0;
        int r;

        if (!removed)
                return -ENOMEM;
        if ((r = store_lock(s, GC_LOCK, LOCK_EX, &gc, err)) < 0 ||
            (r = store_lock(s, INDEX_LOCK, LOCK_EX, &lock, err)) < 0 ||
            (r = store_index_load(s, true, &index, err)) < 0 ||
            (r = users_resolve(index, users, &in_use)) < 0 ||
            (r = list_from_index(s, index, &l, &n, err)) < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                if (strv_contains(in_use, l[i]->digest))
                        continue;
                index_remove(index, l[i]->digest, NULL);
                if (l[i]->names[0]) {
                        STRV_FOREACH(nm, l[i]->names)
                                if (strv_extend(&removed, *nm) < 0)
                                        r = -ENOMEM;
                } else if (strv_extend(&removed, l[i]->digest) < 0)
                        r = -ENOMEM;
        }
        image_list_free(l, n);
        if (r < 0)
                return r;
        r = store_index_save(s, index, err);
        if (r < 0)
                return r;
        r = store_gc_locked(s, true, ret_reclaimed, err);
        if (r < 0)
                return r;
        /* Partial downloads: no pull runs (they hold GC_LOCK shared). */
        uint64_t partial = 0;
        (void)store_partials_sweep(s->images_fd, &partial);
        if (ret_reclaimed)
                *ret_reclaimed += partial;
        if (ret_removed)
                *ret_removed = TAKE_PTR(removed);
        return 0;
}

static uint64_t tree_size(int dir_fd, const char *name) {
        struct stat st;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        uint64_t sz = (uint64_t)st.st_blocks * 512;
        if (!S_ISDIR(st.st_mode))
                return sz;
        _cleanup_closedir_ DIR *d = NULL;
        if (opendir_fd(dir_fd, name, O_NOFOLLOW, &d) < 0)
                return sz;
        FOREACH_DIRENT(de, d)
                sz += tree_size(dirfd(d), de->d_name);
        return sz;
}

/* Layer dirs that mounted overlays use as lowerdirs. They stay even when no
 * index entry references them any more (a container started from an image
 * whose tag has since moved to another image): removing a lower under a live
 * overlay pulls files out of a running container. */
int store_mounted_layers(ImageStore *s, char ***keep) {
        _cleanup_strv_free_ char **lowers = NULL;
        struct stat layers;
        int r = mount_overlay_lowerdirs(&lowers);
        if (r < 0)
                return r;
        if (fstat(s->layers_fd, &layers) < 0)
                return -errno;
        STRV_FOREACH(p, lowers) {
                char *slash = strrchr(*p, '/');
                struct stat parent;
                if (!slash || slash == *p || strlen(slash + 1) != 64)
                        continue;
                *slash = 0;
                /* The agent and the CLI may spell <root-dir> differently. */
                bool ours = stat(*p, &parent) == 0 && parent.st_dev == layers.st_dev &&
                            parent.st_ino == layers.st_ino;
                if (ours && strv_extend(keep, slash + 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int store_gc_locked(ImageStore *s, bool index_locked, uint64_t *ret_reclaimed, Error *err) {
        _cleanup_json_ json_t *index = NULL;
        _cleanup_strv_free_ char **keep_blobs = calloc(1, sizeof(char *)),
                                 **keep_layers = calloc(1, sizeof(char *));
        uint64_t reclaimed = 0;
        size_t i;
        json_t *e;
        int r;

        if (!keep_blobs || !keep_layers)
                return -ENOMEM;
        r = store_index_load(s, index_locked, &index, err);
        if (r < 0)
                return r;
        json_array_foreach(json_object_get(index, "manifests"), i, e) {
                const char *d = entry_digest(e);
                _cleanup_(image_freep) Image *im = NULL;
                if (!image_digest_is_valid(d))
                        continue;
                if (strv_extend(&keep_blobs, d + 7) < 0)
                        return -ENOMEM;
                Error ignore = {};
                if (store_image_build(s, d, &im, &ignore) < 0) {
                        /* Keep what we cannot interpret rather than guess. */
                        log_debug("GC: keeping everything: %s", ignore.message);
                        return 0;
                }
                if (strv_extend(&keep_blobs, im->config_digest + 7) < 0)
                        return -ENOMEM;
                for (size_t k = 0; k < im->manifest.n_layers; k++)
                        if (strv_extend(&keep_blobs, im->manifest.layers[k].digest + 7) < 0 ||
                            strv_extend(&keep_layers, im->chain_ids[k] + 7) < 0)
                                return -ENOMEM;
        }
        r = store_mounted_layers(s, &keep_layers);
        if (r < 0)
                return error_set(err, r, "cannot list the layers mounted containers use: %s",
                                 strerror(-r));
        int fds[2] = { s->blobs_fd, s->layers_fd };
        char **keeps[2] = { keep_blobs, keep_layers };
        for (int k = 0; k < 2; k++) {
                _cleanup_closedir_ DIR *d = NULL;
                r = opendir_fd(fds[k], NULL, 0, &d);
                if (r < 0)
                        return r;
                FOREACH_DIRENT(de, d) {
                        if (de->d_name[0] == '.' || strv_contains(keeps[k], de->d_name))
                                continue;
                        reclaimed += tree_size(dirfd(d), de->d_name);
                        r = rm_rf_at(dirfd(d), de->d_name);
                        if (r < 0)
                                log_debug("GC: cannot remove \"%s\": %s", de->d_name, strerror(-r));
                }
        }
        /* The flush records of the layers just removed. */
        (void)store_records_cleanup_locked(s);
        /* Last-used marks of images no longer stored. */
        _cleanup_closedir_ DIR *used = NULL;
        if (opendir_fd(s->images_fd, LAST_USED_DIR, O_NOFOLLOW, &used) >= 0)
                FOREACH_DIRENT(de, used)
                        if (de->d_name[0] != '.' && !strv_contains(keep_blobs, de->d_name))
                                (void)unlinkat(dirfd(used), de->d_name, 0);
        if (ret_reclaimed)
                *ret_reclaimed = reclaimed;
        return 0;
}

int image_store_mark_used(ImageStore *s, const char *digest, usec_t now) {
        if (!image_digest_is_valid(digest))
                return -EINVAL;
        if (mkdirat(s->images_fd, LAST_USED_DIR, 0755) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *p = strprintf(LAST_USED_DIR "/%s", digest + 7);
        if (!p)
                return -ENOMEM;
        _cleanup_close_ int fd =
                openat(s->images_fd, p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        struct timespec ts[2] = {
                { .tv_sec = (time_t)(now / USEC_PER_SEC),
                  .tv_nsec = (long)(now % USEC_PER_SEC) * 1000 },
        };
        ts[1] = ts[0];
        return futimens(fd, ts) < 0 ? -errno : 0;
}

static usec_t mtime_usec(const struct stat *st) {
        return (usec_t)st->st_mtim.tv_sec * USEC_PER_SEC + (usec_t)st->st_mtim.tv_nsec / 1000;
}

int image_store_times(ImageStore *s, const char *digest, usec_t *ret_first_seen,
                      usec_t *ret_last_used) {
        struct stat st;
        if (!image_digest_is_valid(digest))
                return -EINVAL;
        if (fstatat(s->blobs_fd, digest + 7, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        usec_t first = mtime_usec(&st), last = 0;
        _cleanup_free_ char *p = strprintf(LAST_USED_DIR "/%s", digest + 7);
        if (!p)
                return -ENOMEM;
        if (fstatat(s->images_fd, p, &st, AT_SYMLINK_NOFOLLOW) == 0)
                last = mtime_usec(&st);
        if (ret_first_seen)
                *ret_first_seen = first;
        if (ret_last_used)
                *ret_last_used = last;
        return 0;
}

char *image_store_layer_path(const ImageStore *s, const char *chain_id) {
        return strprintf("%s/layers/%s", s->root, chain_id + 7);
}
