/* index.json: read without trusting it, saved with a backup copy, and
 * rebuilt from what the store holds when it is missing or damaged.
 *
 * index.json is the only record of the tags: blobs and layers say nothing
 * about the names an image was loaded or pulled under. So every save writes
 * index.json.backup too (the same document, the same atomic write), and a
 * rebuild takes the tags from there. The images themselves come from the
 * blobs: every blob that is an image manifest whose config blob is stored
 * is an image, and one the backup does not name is listed by its digest.
 * A missing index therefore never empties the store's view: a prune or an
 * image GC pass after it sees every stored image, and the pods' records
 * (which name the digests they run) keep theirs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "image-internal.h"
#include "json-util.h"
#include "log.h"
#include "rm-rf.h"
#include "string-util.h"

static const char *json_kind(const json_t *j) {
        switch (json_typeof(j)) {
        case JSON_OBJECT:
                return "object";
        case JSON_ARRAY:
                return "array";
        case JSON_STRING:
                return "string";
        case JSON_INTEGER:
        case JSON_REAL:
                return "number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "boolean";
        case JSON_NULL:
                return "null";
        }
        return "value";
}

static int problem(char **ret_problem, char *text) {
        if (!text)
                return -ENOMEM;
        free(*ret_problem);
        *ret_problem = text;
        return -EBADMSG;
}

int store_index_parse(const char *data, size_t size, json_t **ret, char **ret_problem) {
        json_error_t jerr;

        if (size == 0)
                return problem(ret_problem, strdup("is empty"));
        _cleanup_json_ json_t *j = json_loadb(data, size, JSON_DECODE_ANY, &jerr);
        if (!j)
                return problem(ret_problem, strprintf("is not valid JSON (line %d, column %d)",
                                                      jerr.line, jerr.column));
        if (!json_is_object(j))
                return problem(ret_problem,
                               strprintf("is a JSON %s, not an OCI image index", json_kind(j)));
        json_t *sv = json_object_get(j, "schemaVersion");
        if (sv && (!json_is_integer(sv) || json_integer_value(sv) != 2))
                return problem(
                        ret_problem,
                        strdup("has a schemaVersion other than 2 (another version's format)"));
        json_t *mt = json_object_get(j, "mediaType");
        if (mt && !streq(strempty(json_string_value(mt)), IMAGE_MT_OCI_INDEX))
                return problem(ret_problem, strdup("has a mediaType other than " IMAGE_MT_OCI_INDEX
                                                   " (another version's format)"));
        json_t *m = json_object_get(j, "manifests");
        if (!json_is_array(m))
                return problem(
                        ret_problem,
                        m ? strprintf("has \"manifests\" as a JSON %s, not an array", json_kind(m))
                          : strdup("has no \"manifests\" list"));
        *ret = TAKE_PTR(j);
        return 0;
}

/* images/<name>: 0 with the index; -EBADMSG with ret_problem when the file
 * is there but not a usable index (a symlink is never followed); -ENOENT
 * when it is missing; another -errno when it cannot be read (nothing is
 * known then, and nothing is rebuilt). */
static int index_read(ImageStore *s, const char *name, json_t **ret, char **ret_problem) {
        _cleanup_close_ int fd = openat(s->images_fd, name,
                                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t size;

        if (fd < 0) {
                if (errno == ELOOP)
                        return problem(ret_problem, strdup("is a symbolic link (not followed)"));
                return -errno;
        }
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return problem(ret_problem, strdup(S_ISDIR(st.st_mode) ? "is a directory"
                                                                       : "is not a regular file"));
        if ((uint64_t)st.st_size > IMAGE_JSON_MAX)
                return problem(ret_problem,
                               strprintf("is larger than %u bytes", (unsigned)IMAGE_JSON_MAX));
        int r = read_full_fd(fd, IMAGE_JSON_MAX, &data, &size);
        if (r == -EFBIG)
                return problem(ret_problem,
                               strprintf("is larger than %u bytes", (unsigned)IMAGE_JSON_MAX));
        if (r < 0)
                return r;
        return store_index_parse(data, size, ret, ret_problem);
}

static json_t *index_new(void) {
        return json_pack("{s:i, s:s, s:[]}", "schemaVersion", 2, "mediaType", IMAGE_MT_OCI_INDEX,
                         "manifests");
}

static bool index_lists(json_t *index, const char *digest) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(index, "manifests"), i, e) {
                if (streq(strempty(json_string_value(json_object_get(e, "digest"))), digest))
                        return true;
        }
        return false;
}

/* Whether the blob's first non-blank byte opens a JSON object: a layer
 * (gzip, zstd, tar) is never read further. */
static bool blob_looks_like_json(int dir_fd, const char *name) {
        _cleanup_close_ int fd =
                openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        char buf[64];
        if (fd < 0)
                return false;
        ssize_t n = pread(fd, buf, sizeof(buf), 0);
        for (ssize_t i = 0; i < n; i++)
                if (!strchr(" \t\r\n", buf[i]))
                        return buf[i] == '{';
        return false;
}

int store_index_rebuild(ImageStore *s, json_t *backup, json_t **ret, unsigned *ret_tags,
                        unsigned *ret_untagged) {
        _cleanup_json_ json_t *index = index_new();
        unsigned tags = 0, untagged = 0;
        size_t i;
        json_t *e;
        int r;

        if (!index)
                return -ENOMEM;
        /* The backup's entries whose image is still stored, tags and all. */
        json_array_foreach(json_object_get(backup, "manifests"), i, e) {
                const char *d = json_string_value(json_object_get(e, "digest"));
                const char *name = json_string_value(json_object_get(
                        json_object_get(e, "annotations"), IMAGE_ANNOTATION_REF_NAME));
                _cleanup_(image_freep) Image *im = NULL;
                Error ignore = {};
                if (!image_digest_is_valid(d) || store_image_build(s, d, &im, &ignore) < 0)
                        continue;
                json_int_t size = json_integer_value(json_object_get(e, "size"));
                ImageDescriptor desc = {
                        .media_type = im->manifest.media_type ? im->manifest.media_type
                                                              : (char *)IMAGE_MT_OCI_MANIFEST,
                        .digest = (char *)d,
                        .size = size > 0 ? (int64_t)size : 0,
                };
                if ((r = store_index_add(index, &desc, name)) < 0)
                        return r;
        }
        /* Every other image the blobs hold, by digest. */
        _cleanup_closedir_ DIR *dir = NULL;
        r = opendir_fd(s->blobs_fd, NULL, 0, &dir);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, dir) {
                struct stat st;
                char digest[72];
                if (strlen(de->d_name) != 64 || strspn(de->d_name, "0123456789abcdef") != 64 ||
                    fstatat(dirfd(dir), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISREG(st.st_mode) || (uint64_t)st.st_size > IMAGE_JSON_MAX)
                        continue;
                (void)snprintf(digest, sizeof(digest), "sha256:%.64s", de->d_name);
                if (index_lists(index, digest) || !blob_looks_like_json(dirfd(dir), de->d_name))
                        continue;
                _cleanup_(image_freep) Image *im = NULL;
                Error ignore = {};
                if (store_image_build(s, digest, &im, &ignore) < 0)
                        continue; /* a config, an image index, or damaged */
                ImageDescriptor desc = {
                        .media_type = im->manifest.media_type ? im->manifest.media_type
                                                              : (char *)IMAGE_MT_OCI_MANIFEST,
                        .digest = digest,
                        .size = (int64_t)st.st_size,
                };
                if ((r = store_index_add(index, &desc, NULL)) < 0)
                        return r;
        }
        json_array_foreach(json_object_get(index, "manifests"), i, e) {
                if (json_object_get(e, "annotations"))
                        tags++;
                else
                        untagged++;
        }
        *ret = TAKE_PTR(index);
        if (ret_tags)
                *ret_tags = tags;
        if (ret_untagged)
                *ret_untagged = untagged;
        return 0;
}

/* Moves the bad file aside as index.json.corrupt-<UTC time>, after removing
 * any earlier one: one is kept, for a look by hand. */
static int index_move_aside(ImageStore *s, char **ret_name) {
        char stamp[32];
        time_t t = time(NULL);
        struct tm tm;
        if (!gmtime_r(&t, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
                return -EINVAL;
        _cleanup_free_ char *name = strprintf(INDEX_CORRUPT_PREFIX "%s", stamp);
        if (!name)
                return -ENOMEM;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(s->images_fd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d)
                if (startswith(de->d_name, INDEX_CORRUPT_PREFIX))
                        (void)rm_rf_at(dirfd(d), de->d_name);
        if (renameat(s->images_fd, INDEX_FILE, s->images_fd, name) < 0)
                return -errno;
        *ret_name = TAKE_PTR(name);
        return 0;
}

/* Under INDEX_LOCK: index.json is missing or bad (what: its problem). */
static int index_recover_locked(ImageStore *s, const char *what, json_t **ret, Error *err) {
        _cleanup_json_ json_t *backup = NULL, *index = NULL;
        _cleanup_free_ char *backup_problem = NULL, *aside = NULL;
        unsigned tags = 0, untagged = 0;

        int rb = index_read(s, INDEX_BACKUP, &backup, &backup_problem);
        int r = store_index_rebuild(s, backup, &index, &tags, &untagged);
        if (r < 0)
                return error_set(err, r,
                                 "%s/" INDEX_FILE " %s, and the store cannot be read to rebuild "
                                 "it: %s",
                                 s->images_dir, what, strerror(-r));
        bool missing = !what || streq(what, "is missing");
        if (missing && rb == -ENOENT && tags + untagged == 0) {
                /* A new store (or an empty one): nothing was lost. */
                r = store_index_save(s, index, err);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(index);
                return 0;
        }
        if (!missing) {
                r = index_move_aside(s, &aside);
                if (r < 0)
                        return error_set(err, r,
                                         "%s/" INDEX_FILE
                                         " %s; cannot move it aside to rebuild it: "
                                         "%s",
                                         s->images_dir, what, strerror(-r));
        }
        r = store_index_save(s, index, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *tag_note =
                rb >= 0 ? strprintf("tags from " INDEX_BACKUP)
                        : strprintf("no tags: " INDEX_BACKUP " %s, so every tag is lost and the "
                                    "images are listed by digest",
                                    rb == -ENOENT    ? "is missing"
                                    : rb == -EBADMSG ? backup_problem
                                                     : strerror(-rb));
        log_error("The image store's %s/" INDEX_FILE " %s. Rebuilt it from the store: %u tag(s) "
                  "and %u untagged image(s) (%s)%s%s.",
                  s->images_dir, what, tags, untagged, tag_note ? tag_note : "?",
                  aside ? "; the bad file is kept as " : "", aside ? aside : "");
        *ret = TAKE_PTR(index);
        return 0;
}

int store_index_load(ImageStore *s, bool locked, json_t **ret, Error *err) {
        _cleanup_free_ char *what = NULL;
        _cleanup_close_ int lock = -EBADF;

        int r = index_read(s, INDEX_FILE, ret, &what);
        if (r >= 0)
                return 0;
        if (r != -EBADMSG && r != -ENOENT)
                return error_set(err, r, "cannot read %s/" INDEX_FILE ": %s", s->images_dir,
                                 strerror(-r));
        if (!locked) {
                if ((r = store_lock(s, INDEX_LOCK, LOCK_EX, &lock, err)) < 0)
                        return r;
                /* Another process may have rebuilt it meanwhile. */
                r = index_read(s, INDEX_FILE, ret, &what);
                if (r >= 0)
                        return 0;
                if (r != -EBADMSG && r != -ENOENT)
                        return error_set(err, r, "cannot read %s/" INDEX_FILE ": %s", s->images_dir,
                                         strerror(-r));
        }
        if (r == -ENOENT && !(what = strdup("is missing")))
                return -ENOMEM;
        return index_recover_locked(s, what, ret, err);
}

int store_index_save(ImageStore *s, json_t *index, Error *err) {
        _cleanup_free_ char *data = json_dumps(index, JSON_INDENT(2));
        _cleanup_free_ char *p = strprintf("%s/" INDEX_FILE, s->images_dir);
        _cleanup_free_ char *b = strprintf("%s/" INDEX_BACKUP, s->images_dir);
        if (!data || !p || !b)
                return -ENOMEM;
        int r = write_file_atomic(p, data, strlen(data), 0644);
        store_cache_drop(s);
        if (r < 0)
                return error_set(err, r, "cannot write \"%s\": %s", p, strerror(-r));
        /* After index.json: a crash between the two leaves the backup one
         * save behind, which a rebuild only uses for names. */
        r = write_file_atomic(b, data, strlen(data), 0644);
        if (r < 0)
                log_warning("Cannot write \"%s\" (%s); ignoring it: the next save of the "
                            "index writes it again.",
                            b, strerror(-r));
        return 0;
}

int store_index_backup_check_locked(ImageStore *s) {
        _cleanup_json_ json_t *index = NULL, *backup = NULL;
        _cleanup_free_ char *what = NULL;
        if (index_read(s, INDEX_BACKUP, &backup, &what) >= 0)
                return 0;
        /* A store written before backups were kept, or a damaged backup:
         * written now from the good index. */
        int r = index_read(s, INDEX_FILE, &index, &what);
        if (r < 0)
                return r;
        _cleanup_free_ char *data = json_dumps(index, JSON_INDENT(2));
        _cleanup_free_ char *b = strprintf("%s/" INDEX_BACKUP, s->images_dir);
        if (!data || !b)
                return -ENOMEM;
        return write_file_atomic(b, data, strlen(data), 0644);
}
