/* `image load`: OCI archives and docker-save archives, compressed or not,
 * several images per archive. The archive is staged first under
 * images/.tmp-load-<rand> (every file hashed while written), then checked
 * as a whole (every referenced blob present with the right digest, configs
 * parsed, layers unpacked into temporary dirs with their diff IDs
 * verified), and only then committed: layers renamed into place, blobs
 * renamed into blobs/sha256, index.json rewritten under its lock. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "image-internal.h"
#include "image-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

#define MAX_ARCHIVE_ENTRIES 100000

typedef struct Staged {
        char *path;    /* path in the archive, normalised */
        char *file;    /* name in the staging dir; NULL for a symlink */
        char *symlink; /* symlink target */
        char digest[72];
        uint64_t size;
} Staged;

typedef struct LoadImage {
        ImageDescriptor desc; /* the manifest */
        char *manifest_file;  /* staged manifest file */
        ImageManifest manifest;
        ImageConfig config;
        char **chain_ids;
        char **names;
} LoadImage;

typedef struct TmpLayer {
        char *chain_id;
        char *tmp;
} TmpLayer;

typedef struct Load {
        ImageStore *s;
        Error *err;
        int stage_fd;
        char *stage_name;
        Staged *items;
        size_t n_items;
        unsigned counter;
        uint64_t total;    /* bytes written to the staging directory */
        uint64_t declared; /* sum of the entries' declared sizes */
        LoadImage *images;
        size_t n_images;
        TmpLayer *tmps;
        size_t n_tmps;
} Load;

static void load_done(Load *l) {
        for (size_t i = 0; i < l->n_items; i++) {
                free(l->items[i].path);
                free(l->items[i].file);
                free(l->items[i].symlink);
        }
        free(l->items);
        for (size_t i = 0; i < l->n_images; i++) {
                image_descriptor_done(&l->images[i].desc);
                free(l->images[i].manifest_file);
                image_manifest_done(&l->images[i].manifest);
                image_config_done(&l->images[i].config);
                strv_free(l->images[i].chain_ids);
                strv_free(l->images[i].names);
        }
        free(l->images);
        for (size_t i = 0; i < l->n_tmps; i++) {
                if (l->tmps[i].tmp)
                        store_layer_discard(l->s, l->tmps[i].tmp);
                free(l->tmps[i].chain_id);
                free(l->tmps[i].tmp);
        }
        free(l->tmps);
        safe_close(l->stage_fd);
        if (l->stage_name)
                (void)rm_rf_at(l->s->images_fd, l->stage_name);
        free(l->stage_name);
}

static Staged *staged_add(Load *l) {
        Staged *n = reallocarray(l->items, l->n_items + 1, sizeof(Staged));
        if (!n)
                return NULL;
        l->items = n;
        n[l->n_items] = (Staged){};
        return &n[l->n_items++];
}

/* Counts n more bytes written to the staging directory against the limit. */
static int count_staged(Load *l, uint64_t n) {
        uint64_t max = l->s->limits.max_total_size;
        if (n > max || l->total > max - n)
                return error_set(l->err, -EFBIG, "archive is larger than the %llu byte limit",
                                 (unsigned long long)max);
        l->total += n;
        return 0;
}

/* Writes data from the archive (or buf when a is NULL) into a new staged file. */
static int stage_data(Load *l, struct archive *a, const void *buf, size_t size, Staged *st) {
        _cleanup_md_ EVP_MD_CTX *md = NULL;
        char name[32];
        (void)snprintf(name, sizeof(name), "f%u", l->counter++);
        _cleanup_close_ int fd = openat(l->stage_fd, name,
                                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        int r;
        if (fd < 0)
                return error_set(l->err, -errno, "cannot write to the staging directory: %m");
        if ((r = sha256_new(&md)) < 0)
                return r;
        st->size = 0;
        for (;;) {
                const void *b = buf;
                size_t sz = size;
                if (a) {
                        la_int64_t off;
                        int q = archive_read_data_block(a, &b, &sz, &off);
                        if (q == ARCHIVE_EOF)
                                break;
                        if (q < ARCHIVE_WARN) {
                                const char *m = archive_error_string(a);
                                return error_set(l->err, -EBADMSG,
                                                 "archive entry \"%s\" is truncated or "
                                                 "corrupt: %s",
                                                 strna(st->path), m ? m : "read error");
                        }
                        if (off >= 0 && (uint64_t)off != st->size) {
                                /* Sparse entry: fill the hole explicitly. */
                                if ((uint64_t)off < st->size)
                                        return error_set(l->err, -EBADMSG,
                                                         "archive entry \"%s\": bad offset",
                                                         strna(st->path));
                                if ((r = count_staged(l, (uint64_t)off - st->size)) < 0)
                                        return r;
                                static const char zero[4096];
                                while (st->size < (uint64_t)off) {
                                        size_t z = MIN(sizeof(zero),
                                                       (size_t)((uint64_t)off - st->size));
                                        if ((r = write_all(fd, zero, z)) < 0 ||
                                            (r = sha256_update(md, zero, z)) < 0)
                                                return r;
                                        st->size += z;
                                }
                        }
                }
                if ((r = count_staged(l, sz)) < 0)
                        return r;
                if ((r = write_all(fd, b, sz)) < 0)
                        return error_set(l->err, r, "cannot write to the staging directory: %s",
                                         strerror(-r));
                if ((r = sha256_update(md, b, sz)) < 0)
                        return r;
                st->size += sz;
                if (!a)
                        break;
        }
        if ((r = sha256_final_digest(md, st->digest)) < 0)
                return r;
        st->file = strdup(name);
        return st->file ? 0 : -ENOMEM;
}

static Staged *staged_find_raw(Load *l, const char *path) {
        for (size_t i = l->n_items; i > 0; i--)
                if (l->items[i - 1].path && streq(l->items[i - 1].path, path))
                        return &l->items[i - 1];
        return NULL;
}

/* Lexical join of a symlink target with the link's directory; archive namespace only. */
static char *join_lexical(const char *base_path, const char *target) {
        _cleanup_free_ char *dir = NULL;
        const char *slash = strrchr(base_path, '/');
        dir = target[0] == '/' ? strdup("")
              : slash          ? strndup_safe(base_path, (size_t)(slash - base_path))
                               : strdup("");
        _cleanup_free_ char *full = dir ? strprintf("%s/%s", dir, target) : NULL;
        if (!full)
                return NULL;
        char *out = calloc(1, strlen(full) + 1);
        if (!out)
                return NULL;
        size_t len = 0;
        for (char *c = full, *next; c; c = next) {
                next = strchr(c, '/');
                if (next)
                        *next++ = 0;
                if (!*c || streq(c, "."))
                        continue;
                if (streq(c, "..")) {
                        char *s = strrchr(out, '/');
                        len = s ? (size_t)(s - out) : 0;
                        out[len] = 0;
                        continue;
                }
                if (len)
                        out[len++] = '/';
                strcpy(out + len, c);
                len += strlen(c);
        }
        return out;
}

static Staged *staged_find(Load *l, const char *path) {
        _cleanup_free_ char *norm = NULL, *cur = NULL;
        if (image_tar_path_normalize(path, IMAGE_DEFAULT_MAX_PATH, &norm, NULL) < 0)
                return NULL;
        cur = TAKE_PTR(norm);
        for (int hops = 0; hops < 16; hops++) {
                Staged *st = staged_find_raw(l, cur);
                if (!st || st->file)
                        return st;
                char *next = join_lexical(st->path, st->symlink);
                if (!next)
                        return NULL;
                free(cur);
                cur = next;
        }
        return NULL;
}

static int stage_archive(Load *l, int fd) {
        _cleanup_archive_read_ struct archive *a = archive_read_new();
        struct archive_entry *e;
        size_t entries = 0;
        int r;

        if (!a)
                return -ENOMEM;
        (void)archive_read_support_filter_gzip(a);
        (void)archive_read_support_filter_zstd(a);
        (void)archive_read_support_filter_xz(a);
        (void)archive_read_support_filter_bzip2(a);
        (void)archive_read_support_format_tar(a);
        (void)archive_read_support_format_gnutar(a);
        if (archive_read_open_fd(a, fd, 128 * 1024) != ARCHIVE_OK)
                return error_set(l->err, -EBADMSG, "cannot read the archive: %s",
                                 strna(archive_error_string(a)));
        for (;;) {
                r = archive_read_next_header(a, &e);
                if (r == ARCHIVE_EOF)
                        break;
                if (r < ARCHIVE_WARN)
                        return error_set(l->err, -EBADMSG,
                                         "not a valid (tar, tar.gz or tar.zst) image "
                                         "archive: %s",
                                         strna(archive_error_string(a)));
                if (++entries > MAX_ARCHIVE_ENTRIES)
                        return error_set(l->err, -E2BIG, "archive has too many entries");
                _cleanup_free_ char *path = NULL;
                const char *raw = archive_entry_pathname(e);
                r = image_tar_path_normalize(raw ? raw : archive_entry_pathname_utf8(e),
                                             IMAGE_DEFAULT_MAX_PATH, &path, l->err);
                if (r < 0)
                        return error_prefix(l->err, r, "image archive");
                /* Every entry's declared (logical) size counts before any of
                 * it is read: the holes of a sparse entry are written out when
                 * it is staged, and the data of an entry skipped here is still
                 * decompressed. */
                uint64_t size = archive_entry_size(e) > 0 ? (uint64_t)archive_entry_size(e) : 0;
                uint64_t max = l->s->limits.max_total_size;
                if (size > max || l->declared > max - size)
                        return error_set(l->err, -EFBIG,
                                         "archive entry \"%s\" (%llu bytes) makes the "
                                         "archive larger than the %llu byte limit",
                                         path, (unsigned long long)size, (unsigned long long)max);
                l->declared += size;
                const char *hard = archive_entry_hardlink(e);
                if (hard) {
                        Staged *t = staged_find(l, hard);
                        if (!t)
                                return error_set(l->err, -EBADMSG,
                                                 "archive entry \"%s\": hard link to "
                                                 "missing \"%s\"",
                                                 path, hard);
                        Staged copy = *t;
                        Staged *st = staged_add(l);
                        if (!st)
                                return -ENOMEM;
                        *st = copy;
                        st->symlink = NULL;
                        st->path = TAKE_PTR(path);
                        st->file = strdup(copy.file);
                        if (!st->file)
                                return -ENOMEM;
                        continue;
                }
                switch (archive_entry_filetype(e)) {
                case AE_IFREG: {
                        Staged *st = staged_add(l);
                        if (!st)
                                return -ENOMEM;
                        st->path = TAKE_PTR(path);
                        r = stage_data(l, a, NULL, 0, st);
                        if (r < 0)
                                return r;
                        break;
                }
                case AE_IFLNK: {
                        const char *t = archive_entry_symlink(e);
                        Staged *st = staged_add(l);
                        if (!st)
                                return -ENOMEM;
                        st->path = TAKE_PTR(path);
                        st->symlink = strdup(strempty(t));
                        if (!st->symlink)
                                return -ENOMEM;
                        break;
                }
                default:
                        break; /* directories and the rest carry nothing for us */
                }
        }
        return 0;
}

/* A blob of the archive by digest, its content verified. */
static int blob_get(Load *l, const ImageDescriptor *d, const char *what, Staged **ret) {
        _cleanup_free_ char *p = strprintf("blobs/sha256/%s", d->digest + 7);
        if (!p)
                return -ENOMEM;
        Staged *st = staged_find(l, p);
        /* docker-save names blobs differently: any staged file with that content will do. */
        for (size_t i = 0; !st && i < l->n_items; i++)
                if (l->items[i].file && streq(l->items[i].digest, d->digest))
                        st = &l->items[i];
        if (!st)
                return error_set(l->err, -ENOENT, "%s %s is missing from the archive (no \"%s\")",
                                 what, d->digest, p);
        if (!streq(st->digest, d->digest))
                return error_set(l->err, -EBADMSG, "%s %s: digest mismatch (content hashes to %s)",
                                 what, d->digest, st->digest);
        if (d->size >= 0 && (uint64_t)d->size != st->size)
                return error_set(l->err, -EBADMSG,
                                 "%s %s: size mismatch (descriptor says %lld, blob has "
                                 "%llu bytes)",
                                 what, d->digest, (long long)d->size, (unsigned long long)st->size);
        *ret = st;
        return 0;
}

static int staged_read(Load *l, Staged *st, char **ret, size_t *ret_size) {
        int r = read_full_file_at(l->stage_fd, st->file, IMAGE_JSON_MAX, ret, ret_size);
        if (r < 0)
                return error_set(l->err, r, "\"%s\": %s", strna(st->path), strerror(-r));
        return 0;
}

static int add_name(char ***names, const char *raw, Error *err) {
        _cleanup_free_ char *n = NULL;
        int r = image_ref_normalize(raw, &n, err);
        if (r < 0)
                return error_prefix(err, r, "image name in the archive");
        if (strv_contains(*names, n))
                return 0;
        return strv_consume(names, TAKE_PTR(n));
}

/* Checks one image (manifest already staged) and records it for commit. */
static int image_add(Load *l, const ImageDescriptor *desc, Staged *mst, char **names) {
        _cleanup_free_ char *mdata = NULL, *cdata = NULL;
        size_t msize, csize;
        LoadImage im = {};
        Staged *cst, *lst;
        int r;

        for (size_t i = 0; i < l->n_images; i++)
                if (streq(l->images[i].desc.digest, mst->digest)) {
                        STRV_FOREACH(n, names)
                                if (!strv_contains(l->images[i].names, *n) &&
                                    strv_extend(&l->images[i].names, *n) < 0)
                                        return -ENOMEM;
                        return 0;
                }
        im.desc.digest = strdup(mst->digest);
        im.desc.media_type =
                strdup(desc && desc->media_type ? desc->media_type : IMAGE_MT_OCI_MANIFEST);
        im.desc.size = (int64_t)mst->size;
        im.manifest_file = strdup(mst->file);
        im.names = strv_copy(names);
        if (!im.desc.digest || !im.desc.media_type || !im.manifest_file || !im.names) {
                r = -ENOMEM;
                goto fail;
        }
        if ((r = staged_read(l, mst, &mdata, &msize)) < 0 ||
            (r = image_manifest_parse(mdata, msize, &im.manifest, l->err)) < 0 ||
            (r = blob_get(l, &im.manifest.config, "config blob", &cst)) < 0 ||
            (r = staged_read(l, cst, &cdata, &csize)) < 0 ||
            (r = image_config_parse(cdata, csize, &im.config, l->err)) < 0)
                goto fail;
        if (strv_length(im.config.diff_ids) != im.manifest.n_layers) {
                r = error_set(l->err, -EBADMSG,
                              "manifest has %zu layers but its config lists %zu diff IDs",
                              im.manifest.n_layers, strv_length(im.config.diff_ids));
                goto fail;
        }
        for (size_t i = 0; i < im.manifest.n_layers; i++)
                if ((r = blob_get(l, &im.manifest.layers[i], "layer blob", &lst)) < 0)
                        goto fail;
        if ((r = image_chain_ids(im.config.diff_ids, &im.chain_ids)) < 0)
                goto fail;
        LoadImage *n = reallocarray(l->images, l->n_images + 1, sizeof(LoadImage));
        if (!n) {
                r = -ENOMEM;
                goto fail;
        }
        l->images = n;
        l->images[l->n_images++] = im;
        return 0;
fail:
        image_descriptor_done(&im.desc);
        free(im.manifest_file);
        image_manifest_done(&im.manifest);
        image_config_done(&im.config);
        strv_free(im.chain_ids);
        strv_free(im.names);
        return error_prefix(l->err, r, "image %s", mst->digest);
}

static int oci_descriptor(Load *l, const ImageDescriptor *d, char **names, int depth) {
        Staged *st;
        int r = blob_get(l, d, "manifest", &st);
        if (r < 0)
                return r;
        if (image_media_type_is_index(d->media_type)) {
                _cleanup_free_ char *data = NULL;
                size_t size, n = 0;
                ImageDescriptor *ds = NULL;
                if (depth > 2)
                        return error_set(l->err, -ELOOP, "image indexes nested too deep");
                if ((r = staged_read(l, st, &data, &size)) < 0 ||
                    (r = image_index_parse(data, size, &ds, &n, l->err)) < 0)
                        return r;
                const ImageDescriptor *pick = image_index_select_platform(ds, n, NULL, NULL);
                if (!pick)
                        r = error_set(l->err, -ENOENT,
                                      "image index %s has no manifest for linux/%s", d->digest,
                                      image_platform_native_arch());
                else
                        r = oci_descriptor(l, pick, names, depth + 1);
                image_descriptors_free(ds, n);
                return r;
        }
        if (d->media_type && !image_media_type_is_manifest(d->media_type))
                return error_set(l->err, -EMEDIUMTYPE, "unsupported manifest media type \"%s\"",
                                 d->media_type);
        return image_add(l, d, st, names);
}

static int load_oci(Load *l, Staged *index_st) {
        _cleanup_free_ char *data = NULL;
        ImageDescriptor *ds = NULL;
        size_t size, n = 0;
        int r;

        if ((r = staged_read(l, index_st, &data, &size)) < 0 ||
            (r = image_index_parse(data, size, &ds, &n, l->err)) < 0)
                return error_prefix(l->err, r, "index.json");
        if (n == 0)
                r = error_set(l->err, -ENOENT, "index.json lists no image");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_strv_free_ char **names = calloc(1, sizeof(char *));
                if (!names) {
                        r = -ENOMEM;
                        break;
                }
                if (ds[i].image_name)
                        r = add_name(&names, ds[i].image_name, l->err);
                else if (ds[i].ref_name)
                        r = add_name(&names, ds[i].ref_name, l->err);
                if (r >= 0)
                        r = oci_descriptor(l, &ds[i], names, 0);
        }
        image_descriptors_free(ds, n);
        return r;
}

static const char *sniff_layer_type(Load *l, Staged *st) {
        unsigned char m[4] = {};
        _cleanup_close_ int fd = openat(l->stage_fd, st->file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && read(fd, m, sizeof(m)) == (ssize_t)sizeof(m)) {
                if (m[0] == 0x1f && m[1] == 0x8b)
                        return IMAGE_MT_OCI_LAYER_GZIP;
                if (m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd)
                        return IMAGE_MT_OCI_LAYER_ZSTD;
        }
        return IMAGE_MT_OCI_LAYER;
}

static int load_docker(Load *l, Staged *mj) {
        _cleanup_free_ char *data = NULL;
        DockerSaveImage *d = NULL;
        size_t size, n = 0;
        int r;

        if ((r = staged_read(l, mj, &data, &size)) < 0 ||
            (r = image_docker_save_parse(data, size, &d, &n, l->err)) < 0)
                return r;
        if (n == 0)
                r = error_set(l->err, -ENOENT, "manifest.json lists no image");
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_strv_free_ char **names = calloc(1, sizeof(char *));
                _cleanup_json_ json_t *layers = json_array();
                _cleanup_json_ json_t *m = NULL;
                _cleanup_free_ char *mdata = NULL;
                Staged *cst = staged_find(l, d[i].config), *mst;
                if (!names || !layers) {
                        r = -ENOMEM;
                        break;
                }
                if (!cst) {
                        r = error_set(l->err, -ENOENT,
                                      "manifest.json: config \"%s\" is missing from the "
                                      "archive",
                                      d[i].config);
                        break;
                }
                STRV_FOREACH(t, d[i].repo_tags)
                        if ((r = add_name(&names, *t, l->err)) < 0)
                                break;
                STRV_FOREACH(p, d[i].layers) {
                        Staged *lst = staged_find(l, *p);
                        if (r < 0)
                                break;
                        if (!lst) {
                                r = error_set(l->err, -ENOENT,
                                              "manifest.json: layer \"%s\" is missing "
                                              "from the archive",
                                              *p);
                                break;
                        }
                        if (json_array_append_new(layers, json_pack("{s:s, s:s, s:I}", "mediaType",
                                                                    sniff_layer_type(l, lst),
                                                                    "digest", lst->digest, "size",
                                                                    (json_int_t)lst->size)) < 0)
                                r = -ENOMEM;
                }
                if (r < 0)
                        break;
                /* docker-save has no manifest blob: synthesise a deterministic OCI one. */
                m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:O}", "schemaVersion", 2, "mediaType",
                              IMAGE_MT_OCI_MANIFEST, "config", "mediaType", IMAGE_MT_OCI_CONFIG,
                              "digest", cst->digest, "size", (json_int_t)cst->size, "layers",
                              layers);
                mdata = m ? json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
                mst = mdata ? staged_add(l) : NULL;
                if (!mst) {
                        r = -ENOMEM;
                        break;
                }
                r = stage_data(l, NULL, mdata, strlen(mdata), mst);
                if (r >= 0)
                        r = image_add(l, NULL, mst, names);
        }
        image_docker_save_free(d, n);
        return r;
}

static int unpack_layers(Load *l) {
        uint64_t budget = l->s->limits.max_total_size;
        for (size_t i = 0; i < l->n_images; i++) {
                LoadImage *im = &l->images[i];
                for (size_t k = 0; k < im->manifest.n_layers; k++) {
                        const char *chain = im->chain_ids[k];
                        bool done = store_layer_exists(l->s, chain);
                        for (size_t t = 0; t < l->n_tmps && !done; t++)
                                done = streq(l->tmps[t].chain_id, chain);
                        if (done)
                                continue;
                        Staged *st;
                        int r = blob_get(l, &im->manifest.layers[k], "layer blob", &st);
                        if (r < 0)
                                return r;
                        _cleanup_close_ int fd =
                                openat(l->stage_fd, st->file, O_RDONLY | O_CLOEXEC);
                        if (fd < 0)
                                return error_set(l->err, -errno, "staged layer: %m");
                        TmpLayer *n = reallocarray(l->tmps, l->n_tmps + 1, sizeof(TmpLayer));
                        if (!n)
                                return -ENOMEM;
                        l->tmps = n;
                        n[l->n_tmps] = (TmpLayer){ .chain_id = strdup(chain) };
                        if (!n[l->n_tmps].chain_id)
                                return -ENOMEM;
                        r = store_layer_unpack_tmp(l->s, fd, st->digest, false,
                                                   im->config.diff_ids[k], chain, &budget, NULL,
                                                   &n[l->n_tmps].tmp, l->err);
                        if (r < 0) {
                                free(n[l->n_tmps].chain_id);
                                return error_prefix(l->err, r, "image %s", im->desc.digest);
                        }
                        l->n_tmps++;
                }
        }
        return 0;
}

static int commit_blob(Load *l, const char *digest, const char *file) {
        if (faccessat(l->s->blobs_fd, digest + 7, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;
        _cleanup_close_ int fd = openat(l->stage_fd, file, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                (void)fchmod(fd, 0644);
                (void)fsync(fd);
        }
        if (renameat(l->stage_fd, file, l->s->blobs_fd, digest + 7) < 0 &&
            faccessat(l->s->blobs_fd, digest + 7, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return error_set(l->err, -errno, "cannot store blob %s: %m", digest);
        return 0;
}

static int commit(Load *l, char ***ret_names) {
        _cleanup_close_ int lock = -EBADF;
        _cleanup_json_ json_t *index = NULL;
        _cleanup_strv_free_ char **loaded = calloc(1, sizeof(char *));
        int r;

        if (!loaded)
                return -ENOMEM;
        for (size_t t = 0; t < l->n_tmps; t++) {
                r = store_layer_commit(l->s, l->tmps[t].tmp, l->tmps[t].chain_id, l->err);
                if (r < 0)
                        return r;
                free(l->tmps[t].tmp);
                l->tmps[t].tmp = NULL;
        }
        (void)fsync(l->s->layers_fd);
        for (size_t i = 0; i < l->n_images; i++) {
                LoadImage *im = &l->images[i];
                Staged *st;
                if ((r = commit_blob(l, im->desc.digest, im->manifest_file)) < 0 ||
                    (r = blob_get(l, &im->manifest.config, "config blob", &st)) < 0 ||
                    (r = commit_blob(l, st->digest, st->file)) < 0)
                        return r;
                for (size_t k = 0; k < im->manifest.n_layers; k++)
                        if ((r = blob_get(l, &im->manifest.layers[k], "layer blob", &st)) < 0 ||
                            (r = commit_blob(l, st->digest, st->file)) < 0)
                                return r;
        }
        (void)fsync(l->s->blobs_fd);
        if ((r = store_lock(l->s, INDEX_LOCK, LOCK_EX, &lock, l->err)) < 0 ||
            (r = store_index_load(l->s, true, &index, l->err)) < 0)
                return r;
        for (size_t i = 0; i < l->n_images; i++) {
                LoadImage *im = &l->images[i];
                if (!im->names[0]) {
                        if ((r = store_index_add(index, &im->desc, NULL)) < 0 ||
                            (r = strv_extend(&loaded, im->desc.digest)) < 0)
                                return r;
                }
                STRV_FOREACH(n, im->names)
                        if ((r = store_index_add(index, &im->desc, *n)) < 0 ||
                            (r = strv_extend(&loaded, *n)) < 0)
                                return r;
        }
        r = store_index_save(l->s, index, l->err);
        if (r < 0)
                return r;
        if (ret_names)
                *ret_names = TAKE_PTR(loaded);
        return 0;
}

int image_store_load_fd(ImageStore *s, int fd, char ***ret_names, Error *err) {
        _cleanup_close_ int gc = -EBADF;
        Load l = { .s = s, .err = err, .stage_fd = -EBADF };
        char rnd[17];
        int r;

        if ((r = store_lock(s, GC_LOCK, LOCK_SH, &gc, err)) < 0 || (r = random_hex(rnd)) < 0)
                return r;
        l.stage_name = strprintf(TMP_PREFIX "load-%s", rnd);
        if (!l.stage_name)
                return -ENOMEM;
        if (mkdirat(s->images_fd, l.stage_name, 0700) < 0) {
                r = error_set(err, -errno, "cannot create staging directory: %m");
                free(l.stage_name);
                return r;
        }
        l.stage_fd = openat(s->images_fd, l.stage_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (l.stage_fd < 0) {
                r = error_set(err, -errno, "cannot open staging directory: %m");
                goto out;
        }
        if ((r = stage_archive(&l, fd)) < 0)
                goto out;
        Staged *mj = staged_find(&l, "manifest.json"), *idx = staged_find(&l, "index.json");
        if (mj)
                r = load_docker(&l, mj);
        else if (idx)
                r = load_oci(&l, idx);
        else
                r = error_set(err, -EBADMSG,
                              "not an image archive: neither index.json (OCI) nor "
                              "manifest.json (docker save) found");
        if (r < 0)
                goto out;
        if ((r = unpack_layers(&l)) < 0)
                goto out;
        r = commit(&l, ret_names);
out:
        load_done(&l);
        return r;
}

int image_store_load_staged(ImageStore *s, const char *stage_name, const ImageDescriptor *manifest,
                            char **names, char **unpacked, char ***ret_names, Error *err) {
        _cleanup_close_ int gc = -EBADF;
        _cleanup_strv_free_ char **norm = calloc(1, sizeof(char *));
        Load l = { .s = s, .err = err, .stage_fd = -EBADF };
        int r;

        l.stage_name = strdup(stage_name);
        if (!l.stage_name || !norm) {
                free(l.stage_name);
                return -ENOMEM;
        }
        if ((r = store_lock(s, GC_LOCK, LOCK_SH, &gc, err)) < 0)
                goto out;
        l.stage_fd =
                openat(s->images_fd, l.stage_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (l.stage_fd < 0) {
                r = error_set(err, -errno, "cannot open staging directory: %m");
                goto out;
        }
        {
                _cleanup_closedir_ DIR *d = NULL;
                if ((r = opendir_fd(l.stage_fd, NULL, 0, &d)) < 0) {
                        r = error_set(err, r, "cannot read staging directory: %s", strerror(-r));
                        goto out;
                }
                FOREACH_DIRENT(de, d) {
                        struct stat st;
                        if (!image_hex_is_valid(de->d_name) ||
                            fstatat(l.stage_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            !S_ISREG(st.st_mode))
                                continue;
                        Staged *it = staged_add(&l);
                        if (!it) {
                                r = -ENOMEM;
                                goto out;
                        }
                        it->path = strprintf("blobs/sha256/%s", de->d_name);
                        it->file = strdup(de->d_name);
                        memcpy(it->digest, "sha256:", 7);
                        memcpy(it->digest + 7, de->d_name, 65);
                        it->size = (uint64_t)st.st_size;
                        if (!it->path || !it->file) {
                                r = -ENOMEM;
                                goto out;
                        }
                }
        }
        /* Layers the caller unpacked already: owned (removed on failure,
         * committed on success) exactly as the ones unpack_layers() makes. */
        for (size_t i = 0; unpacked && unpacked[i] && unpacked[i + 1]; i += 2) {
                TmpLayer *n = reallocarray(l.tmps, l.n_tmps + 1, sizeof(TmpLayer));
                if (!n) {
                        r = -ENOMEM;
                        goto out;
                }
                l.tmps = n;
                n[l.n_tmps] = (TmpLayer){ .chain_id = strdup(unpacked[i]),
                                          .tmp = strdup(unpacked[i + 1]) };
                if (!n[l.n_tmps].chain_id || !n[l.n_tmps].tmp) {
                        free(n[l.n_tmps].chain_id);
                        free(n[l.n_tmps].tmp);
                        r = -ENOMEM;
                        goto out;
                }
                l.n_tmps++;
        }
        STRV_FOREACH(n, names)
                if ((r = add_name(&norm, *n, err)) < 0)
                        goto out;
        if ((r = oci_descriptor(&l, manifest, norm, 0)) < 0 || (r = unpack_layers(&l)) < 0)
                goto out;
        r = commit(&l, ret_names);
out:
        load_done(&l);
        return r;
}

int image_store_load(ImageStore *s, const char *path, char ***ret_names, Error *err) {
        if (streq(path, "-"))
                return image_store_load_fd(s, STDIN_FILENO, ret_names, err);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return error_set(err, -errno, "cannot open \"%s\": %m", path);
        int r = image_store_load_fd(s, fd, ret_names, err);
        if (r < 0)
                return error_prefix(err, r, "loading \"%s\"", path);
        return r;
}
