/* Layers committed before they are on disk, and their records
 * (docs/images.md, "On disk"). A layer is renamed into layers/<chain> as
 * soon as it is unpacked, without waiting for its files to reach the disk;
 * what makes that safe is a record, layers/.unflushed/<chain-hex>-<rnd>,
 * holding the boot ID of the kernel that wrote the files, made durable
 * (fsync of the file and of its directory) before the unpacking starts and
 * so before the rename. The page cache outlives any process, never a
 * reboot: a layer recorded under the current boot ID reads back what was
 * written, one recorded under another boot ID (or whose record cannot be
 * read as one) may hold empty or truncated files and is removed, to be
 * unpacked again from its blob (digest-verified, fsync'ed before it was
 * committed) before any container uses it. image_store_flush_layers()
 * flushes the store (syncfs) and only then removes the records of the
 * layers it flushed, off every critical path (the agent's flush helper).
 *
 * No libarchive here: the agent links this file (store_layer_exists() on
 * its direct mount path). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "image-internal.h"
#include "image-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

/* A record is "<boot ID>\n"; anything longer is not one of ours. */
#define RECORD_MAX 64

static bool is_boot_id(const char *s, size_t n) {
        if (n != 36)
                return false;
        for (size_t i = 0; i < n; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                if (dash ? s[i] != '-' : !strchr("0123456789abcdef", s[i]) || !s[i])
                        return false;
        }
        return true;
}

LayerRecordState image_layer_record_decide(const char *data, size_t size, const char *boot_id) {
        /* Only an exact "<current boot ID>\n" vouches for the page cache;
         * an empty record (a crash before its fsync: then its layer was
         * never renamed), a torn one, a foreign one: not flushed. */
        if (!data || !boot_id || !is_boot_id(boot_id, strlen(boot_id)))
                return LAYER_RECORD_STALE;
        if (size != 37 || data[36] != '\n' || !is_boot_id(data, 36) || memcmp(data, boot_id, 36))
                return LAYER_RECORD_STALE;
        return LAYER_RECORD_CURRENT;
}

int store_read_boot_id(const char *path, char ret[static 37]) {
        _cleanup_free_ char *data = NULL;
        size_t n;
        int r = read_full_file_at(AT_FDCWD, path, RECORD_MAX, &data, &n);
        if (r < 0)
                return r;
        while (n > 0 && data[n - 1] == '\n')
                n--;
        if (!is_boot_id(data, n))
                return -EBADMSG;
        memcpy(ret, data, 36);
        ret[36] = 0;
        return 0;
}

/* "<64 hex>-<16 hex>": the chain's hex goes to chain_hex. */
static bool record_name_parse(const char *name, char chain_hex[static 65]) {
        if (strlen(name) != 64 + 1 + 16 || name[64] != '-')
                return false;
        for (size_t i = 0; i < 64 + 1 + 16; i++)
                if (i != 64 && !strchr("0123456789abcdef", name[i]))
                        return false;
        memcpy(chain_hex, name, 64);
        chain_hex[64] = 0;
        return true;
}

/* The record's verdict. Never follows a symlink, never blocks on a FIFO,
 * never reads more than RECORD_MAX bytes: anything but a small regular
 * file is STALE. */
static LayerRecordState record_state(ImageStore *s, const char *name) {
        char buf[RECORD_MAX + 1];
        struct stat st;
        _cleanup_close_ int fd = openat(s->unflushed_fd, name,
                                        O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > RECORD_MAX)
                return LAYER_RECORD_STALE;
        ssize_t n = pread(fd, buf, sizeof(buf), 0);
        if (n < 0)
                return LAYER_RECORD_STALE;
        return image_layer_record_decide(buf, (size_t)n, s->boot_id);
}

/* The records' names, or NULL for none (the usual case: one getdents). */
static int records_list(ImageStore *s, char ***ret) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **l = NULL;
        *ret = NULL;
        if (s->unflushed_fd < 0)
                return 0;
        int r = opendir_fd(s->unflushed_fd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d)
                if (de->d_name[0] != '.' && strv_extend(&l, de->d_name) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

static bool dir_exists_at(int dir_fd, const char *name) {
        struct stat st;
        return fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* 1 when a record of the chain (hex) is stale, 0 when none is. */
static int chain_stale(ImageStore *s, const char *hex) {
        _cleanup_strv_free_ char **names = NULL;
        char chain[65];
        int r = records_list(s, &names);
        if (r < 0)
                return r;
        STRV_FOREACH(n, names)
                if (record_name_parse(*n, chain) && streq(chain, hex) &&
                    record_state(s, *n) == LAYER_RECORD_STALE)
                        return 1;
        return 0;
}

bool store_layer_exists(ImageStore *s, const char *chain_id) {
        /* A layer with a stale record is not there for anyone: the agent's
         * direct mount sends its container to the helper, and every unpack
         * path replaces it (store_layer_reclaim_stale()). On an error
         * reading the records: not there either. */
        return dir_exists_at(s->layers_fd, chain_id + 7) && chain_stale(s, chain_id + 7) == 0;
}

/* A record is a file; whatever else sits under its name goes too. */
static void record_remove(ImageStore *s, const char *name) {
        if (unlinkat(s->unflushed_fd, name, 0) < 0 && errno != ENOENT)
                (void)rm_rf_at(s->unflushed_fd, name);
}

static void records_remove_chain(ImageStore *s, char **names, const char *hex) {
        char chain[65];
        STRV_FOREACH(n, names)
                if (!record_name_parse(*n, chain) || streq(chain, hex))
                        record_remove(s, *n);
}

/* Removes the layer dir (renamed away first, so that its chain ID name is
 * gone at once, as after a prune). Never one a mounted overlay uses. */
static int layer_remove(ImageStore *s, const char *hex, Error *err) {
        _cleanup_strv_free_ char **mounted = NULL;
        char rnd[17];
        int r = store_mounted_layers(s, &mounted);
        if (r < 0)
                return error_set(err, r, "cannot list the layers mounted containers use: %s",
                                 strerror(-r));
        if (strv_contains(mounted, hex))
                return error_set(err, -EBUSY,
                                 "layer sha256:%s is recorded as not flushed to disk in an "
                                 "earlier boot (or its record is unreadable) and a running "
                                 "container uses it: it cannot be unpacked again now",
                                 hex);
        if ((r = random_hex(rnd)) < 0)
                return r;
        _cleanup_free_ char *away = strprintf(TMP_PREFIX "stale-%s-%s", hex, rnd);
        if (!away)
                return -ENOMEM;
        if (renameat(s->layers_fd, hex, s->layers_fd, away) < 0)
                return errno == ENOENT ? 0
                                       : error_set(err, -errno, "cannot remove layer %s: %m", hex);
        (void)rm_rf_at(s->layers_fd, away);
        return 0;
}

int store_layer_reclaim_stale(ImageStore *s, const char *chain_id, Error *err) {
        _cleanup_strv_free_ char **names = NULL;
        const char *hex = chain_id + 7;
        if (!dir_exists_at(s->layers_fd, hex))
                return 0;
        int r = chain_stale(s, hex);
        if (r <= 0)
                return r;
        log_warning("Layer %s was committed without being flushed to disk in an earlier boot "
                    "(or its record is unreadable): unpacking it again from its blob.",
                    chain_id);
        if ((r = layer_remove(s, hex, err)) < 0)
                return r;
        /* The dir first, then its records: a crash in between leaves
         * records without a layer, which the next cleanup removes. */
        (void)fsync(s->layers_fd);
        if ((r = records_list(s, &names)) < 0)
                return r;
        records_remove_chain(s, names, hex);
        return 0;
}

/* tmp is ".tmp-<hex>-<rnd>" (store_layer_unpack_tmp()); its record is
 * "<hex>-<rnd>". */
static const char *record_of_tmp(const char *tmp) {
        return startswith(tmp, TMP_PREFIX);
}

int store_layer_record(ImageStore *s, const char *tmp, Error *err) {
        const char *name = record_of_tmp(tmp);
        if (!s->boot_id[0] || s->unflushed_fd < 0 || !name)
                return 0; /* no boot ID: the caller flushes before the rename */
        _cleanup_close_ int fd = openat(s->unflushed_fd, name,
                                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return error_set(err, -errno, "cannot create the layer's flush record: %m");
        char line[38];
        memcpy(line, s->boot_id, 36);
        line[36] = '\n';
        line[37] = 0;
        /* Durable before the layer can be renamed into place: the file and
         * its name. Written while nothing of the layer is yet, so these
         * journal commits have little to wait for. */
        int r = write_all(fd, line, 37);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && fsync(s->unflushed_fd) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlinkat(s->unflushed_fd, name, 0);
                return error_set(err, r, "cannot write the layer's flush record: %s", strerror(-r));
        }
        return 1;
}

void store_layer_discard(ImageStore *s, const char *tmp) {
        (void)rm_rf_at(s->layers_fd, tmp);
        /* After the dir: this record is this unpack's own, never another's. */
        const char *name = record_of_tmp(tmp);
        if (name && s->unflushed_fd >= 0)
                (void)unlinkat(s->unflushed_fd, name, 0);
}

int store_records_cleanup_locked(ImageStore *s) {
        _cleanup_strv_free_ char **names = NULL;
        char chain[65];
        int r = records_list(s, &names);
        if (r < 0)
                return r;
        STRV_FOREACH(n, names) {
                if (!record_name_parse(*n, chain) || !dir_exists_at(s->layers_fd, chain)) {
                        /* No writer runs (the caller holds .gc.lock
                         * exclusive): a record of no layer is a leftover. */
                        record_remove(s, *n);
                        continue;
                }
                if (record_state(s, *n) == LAYER_RECORD_CURRENT)
                        continue;
                log_warning("Layer sha256:%s was committed without being flushed to disk in an "
                            "earlier boot (or its record is unreadable): removed; it is unpacked "
                            "again from its blob when an image needs it.",
                            chain);
                Error err = {};
                r = layer_remove(s, chain, &err);
                if (r < 0) {
                        log_warning("%s", err.message);
                        continue;
                }
                (void)fsync(s->layers_fd);
                record_remove(s, *n);
        }
        return 0;
}

bool image_store_has_unflushed(ImageStore *s) {
        _cleanup_strv_free_ char **names = NULL;
        return records_list(s, &names) < 0 || names;
}

int image_store_flush_layers(ImageStore *s, char ***ret_flushed, Error *err) {
        _cleanup_close_ int gc = -EBADF;
        _cleanup_strv_free_ char **names = NULL, **done = NULL, **chains = NULL;
        char chain[65];
        int r;

        /* Shared: no prune or stale removal runs meanwhile, so a layer seen
         * here is the one the syncfs() below flushes. Pulls may run. */
        if ((r = store_lock(s, GC_LOCK, LOCK_SH, &gc, err)) < 0 ||
            (r = records_list(s, &names)) < 0)
                return r;
        STRV_FOREACH(n, names) {
                /* The record first, then the layer: a layer renamed into
                 * place after its record was written is complete in the page
                 * cache (the rename follows the unpacking), and a record of
                 * a layer still unpacking (no dir yet) is left alone. */
                if (!record_name_parse(*n, chain) || record_state(s, *n) != LAYER_RECORD_CURRENT ||
                    !dir_exists_at(s->layers_fd, chain))
                        continue;
                if (strv_extend(&done, *n) < 0)
                        return -ENOMEM;
                if (!strv_contains(chains, chain)) {
                        _cleanup_free_ char *c = strprintf("sha256:%s", chain);
                        if (!c || strv_extend(&chains, c) < 0)
                                return -ENOMEM;
                }
        }
        if (done) {
                if (syncfs(s->layers_fd) < 0)
                        return error_set(err, -errno, "cannot flush the layers to disk: %m");
                STRV_FOREACH(n, done)
                        (void)unlinkat(s->unflushed_fd, *n, 0);
                /* Only so that the next boot does not unpack these again. */
                (void)fsync(s->unflushed_fd);
        }
        if (ret_flushed)
                *ret_flushed = TAKE_PTR(chains);
        return 0;
}
