/* src/image: path safety with hostile layers, whiteouts, and store-level
 * refusal (digest mismatch, missing blob, truncated layer) leaving the store
 * unchanged. Archives are built here with libarchive's write side. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "event.h"
#include "hash.h"
#include "self-helper.h"
#include "time-util.h"
#include "fileio.h"
#include "image-internal.h"
#include "image.h"
#include "string-util.h"
#include "strv.h"

typedef struct Ent {
        const char *name;
        char type;        /* f file, d dir, l symlink, h hardlink */
        const char *data; /* file content or link target */
        mode_t mode;
} Ent;

static char tmpdir[256];

/* Writes a tar (gzip when compress) of the entries into buf; returns its size. */
static size_t build_tar(const Ent *e, size_t n, bool compress, size_t zeros, char *buf,
                        size_t cap) {
        struct archive *a = archive_write_new();
        size_t used = 0;
        archive_write_set_format_pax_restricted(a);
        if (compress)
                archive_write_add_filter_gzip(a);
        archive_write_set_bytes_in_last_block(a, 1);
        assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
        for (size_t i = 0; i < n; i++) {
                struct archive_entry *ae = archive_entry_new();
                archive_entry_set_pathname(ae, e[i].name);
                archive_entry_set_mtime(ae, 1700000000, 0);
                archive_entry_set_perm(ae, e[i].mode ? e[i].mode : 0644);
                size_t len = e[i].data ? strlen(e[i].data) : 0;
                switch (e[i].type) {
                case 'd':
                        archive_entry_set_filetype(ae, AE_IFDIR);
                        archive_entry_set_perm(ae, 0755);
                        break;
                case 'l':
                        archive_entry_set_filetype(ae, AE_IFLNK);
                        archive_entry_set_symlink(ae, e[i].data);
                        break;
                case 'h':
                        archive_entry_set_filetype(ae, AE_IFREG);
                        archive_entry_set_hardlink(ae, e[i].data);
                        break;
                case 'z':
                        archive_entry_set_filetype(ae, AE_IFREG);
                        archive_entry_set_size(ae, (la_int64_t)zeros);
                        break;
                default:
                        archive_entry_set_filetype(ae, AE_IFREG);
                        archive_entry_set_size(ae, (la_int64_t)len);
                }
                assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
                if (e[i].type == 'f' && len)
                        assert_int_equal(archive_write_data(a, e[i].data, len), (la_ssize_t)len);
                if (e[i].type == 'z') {
                        static char z[65536];
                        for (size_t k = 0; k < zeros; k += sizeof(z))
                                archive_write_data(a, z, MIN(sizeof(z), zeros - k));
                }
                archive_entry_free(ae);
        }
        assert_int_equal(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
        return used;
}

static int memfd_with(const char *buf, size_t size) {
        int fd = memfd_create("layer", MFD_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, size), (ssize_t)size);
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

static char *path_in(const char *rel) {
        return strprintf("%s/%s", tmpdir, rel);
}

/* The canary directory holds exactly "secret" with "keep". */
static void assert_canary_intact(void) {
        _cleanup_free_ char *c = path_in("canary");
        DIR *d = opendir(c);
        assert_non_null(d);
        struct dirent *de;
        int n = 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        assert_string_equal(de->d_name, "secret");
                        n++;
                }
        closedir(d);
        assert_int_equal(n, 1);
        _cleanup_free_ char *s = path_in("canary/secret");
        struct stat st;
        assert_int_equal(stat(s, &st), 0);
        assert_int_equal(st.st_size, 5);
        assert_int_equal(st.st_nlink, 1);
        assert_int_equal(st.st_mode & 07777, 0600);
}

static int setup(void **state) {
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-image-unpack.XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
        _cleanup_free_ char *c = path_in("canary"), *s = path_in("canary/secret");
        assert_int_equal(mkdir(c, 0755), 0);
        FILE *f = fopen(s, "w");
        fputs("keep\n", f);
        fclose(f);
        chmod(s, 0600);
        return 0;
}

static int teardown(void **state) {
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", tmpdir);
        (void)!system(cmd);
        return 0;
}

/* Unpacks entries into a fresh layer root under tmpdir; returns the result. */
static int unpack_ents(const char *root, const Ent *e, size_t n, const ImageLimits *lim,
                       size_t zeros, bool gz, size_t truncate_to, Error *err) {
        static char buf[16 << 20];
        size_t size = build_tar(e, n, gz, zeros, buf, sizeof(buf));
        if (truncate_to)
                size = truncate_to;
        _cleanup_free_ char *r = path_in(root);
        assert_int_equal(mkdir(r, 0755), 0);
        int rootfd = open(r, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = memfd_with(buf, size);
        int ret = image_layer_unpack(fd, rootfd, NULL, NULL, lim, NULL, err);
        close(fd);
        close(rootfd);
        return ret;
}

static void expect_refused(const char *root, const Ent *e, size_t n, const char *msg) {
        Error err = {};
        int r = unpack_ents(root, e, n, NULL, 0, false, 0, &err);
        if (r >= 0)
                fail_msg("%s: hostile layer accepted", root);
        if (!strstr(err.message, msg))
                fail_msg("%s: message \"%s\" lacks \"%s\"", root, err.message, msg);
        assert_canary_intact();
}

static void test_hostile(void **state) {
        _cleanup_free_ char *abs_canary = path_in("canary"), *abs_secret = path_in("canary/secret");
        const Ent dotdot[] = { { "../canary/pwned", 'f', "x" } };
        expect_refused("r-dotdot", dotdot, 1, "\"..\" component refused");
        const Ent dotdot2[] = { { "a/", 'd' }, { "a/../../canary/pwned", 'f', "x" } };
        expect_refused("r-dotdot2", dotdot2, 2, "\"..\"");
        _cleanup_free_ char *abs_path = strprintf("%s/pwned", abs_canary);
        const Ent absolute[] = { { abs_path, 'f', "x" } };
        expect_refused("r-abs", absolute, 1, "absolute path refused");
        const Ent through_rel[] = { { "evil", 'l', "../../canary" }, { "evil/pwned", 'f', "x" } };
        expect_refused("r-symrel", through_rel, 2, "passes through a symbolic link");
        const Ent through_abs[] = { { "evil", 'l', abs_canary }, { "evil/pwned", 'f', "x" } };
        expect_refused("r-symabs", through_abs, 2, "passes through a symbolic link");
        const Ent deep_sym[] = { { "d/", 'd' },
                                 { "d/evil", 'l', abs_canary },
                                 { "d/evil/sub/pwned", 'f', "x" } };
        expect_refused("r-symdeep", deep_sym, 3, "symbolic link");
        const Ent hard_out[] = { { "hl", 'h', "../canary/secret" } };
        expect_refused("r-hardrel", hard_out, 1, "\"..\"");
        const Ent hard_abs[] = { { "hl", 'h', abs_secret } };
        expect_refused("r-hardabs", hard_abs, 1, "absolute path refused");
        const Ent hard_sym[] = { { "s", 'l', abs_canary }, { "hl", 'h', "s/secret" } };
        expect_refused("r-hardsym", hard_sym, 2, "cannot be resolved inside the layer");
        const Ent loop[] = { { "l1", 'l', "l2" }, { "l2", 'l', "l1" }, { "l1/x", 'f', "x" } };
        expect_refused("r-loop", loop, 3, "symbolic link");
        const Ent whiteout_up[] = { { ".wh..", 'f', "" } };
        expect_refused("r-wh", whiteout_up, 1, "invalid whiteout");

        /* A symlink pointing outside is stored as is (it is resolved in the
         * container's root at run time) and nothing is written through it. */
        const Ent sym_only[] = { { "out", 'l', abs_canary }, { "rel", 'l', "../../.." } };
        Error err = {};
        assert_int_equal(unpack_ents("r-symonly", sym_only, 2, NULL, 0, false, 0, &err), 0);
        assert_canary_intact();
}

static void test_limits(void **state) {
        ImageLimits lim;
        Error err = {};
        const Ent bomb[] = { { "zeros", 'z' } };
        image_limits_default(&lim);
        lim.ratio_min_size = 1 << 20;
        lim.max_ratio = 100;
        int r = unpack_ents("r-bomb", bomb, 1, &lim, 12 << 20, true, 0, &err);
        assert_int_equal(r, -EFBIG);
        assert_non_null(strstr(err.message, "decompression bomb"));

        image_limits_default(&lim);
        lim.max_layer_size = 1 << 20;
        err = (Error){};
        r = unpack_ents("r-big", bomb, 1, &lim, 2 << 20, false, 0, &err);
        assert_int_equal(r, -EFBIG);
        assert_non_null(strstr(err.message, "limit"));

        image_limits_default(&lim);
        lim.max_entries = 2;
        const Ent many[] = { { "a", 'f', "1" }, { "b", 'f', "2" }, { "c", 'f', "3" } };
        err = (Error){};
        assert_int_equal(unpack_ents("r-many", many, 3, &lim, 0, false, 0, &err), -E2BIG);

        /* Truncated: a 100 kB file cut in the middle of its data. */
        err = (Error){};
        r = unpack_ents("r-trunc", bomb, 1, NULL, 100000, false, 50000, &err);
        assert_true(r < 0);
        assert_non_null(strstr(err.message, "truncated"));
        err = (Error){};
        r = unpack_ents("r-trunc-gz", bomb, 1, NULL, 100000, true, 60, &err);
        assert_true(r < 0);
        assert_canary_intact();
}

static void test_good_and_whiteouts(void **state) {
        if (geteuid() != 0)
                skip();
        const Ent good[] = {
                { "dir/", 'd' },
                { "dir/file", 'f', "hello", 04755 },
                { "dir/link", 'l', "file" },
                { "dir/hard", 'h', "dir/file" },
                { "dir/.wh.gone", 'f', "" },
                { "opq/", 'd' },
                { "opq/.wh..wh..opq", 'f', "" },
                { "opq/kept", 'f', "k" },
                { "implicit/parent/f", 'f', "p" },
        };
        Error err = {};
        int r = unpack_ents("r-good", good, ELEMENTSOF(good), NULL, 0, false, 0, &err);
        if (r < 0)
                fail_msg("%s", err.message);
        _cleanup_free_ char *f = path_in("r-good/dir/file"), *h = path_in("r-good/dir/hard"),
                            *g = path_in("r-good/dir/gone"), *o = path_in("r-good/opq"),
                            *l = path_in("r-good/dir/link"),
                            *p = path_in("r-good/implicit/parent/f");
        struct stat st, st2;
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_mode & 07777, 04755);
        assert_int_equal(st.st_mtime, 1700000000);
        assert_int_equal(stat(h, &st2), 0);
        assert_int_equal(st.st_ino, st2.st_ino);
        assert_int_equal(lstat(g, &st), 0);
        assert_true(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0));
        char v[4] = {};
        assert_int_equal(getxattr(o, "trusted.overlay.opaque", v, sizeof(v)), 1);
        assert_int_equal(v[0], 'y');
        assert_int_equal(lstat(l, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        assert_int_equal(stat(p, &st), 0);
}

/* ---- store level: whole archives ---- */

typedef struct Blob {
        char digest[72];
        char *data;
        size_t size;
} Blob;

static void blob_set(Blob *b, const char *data, size_t size) {
        char hex[65];
        b->data = malloc(size);
        memcpy(b->data, data, size);
        b->size = size;
        sha256_hex(data, size, hex);
        snprintf(b->digest, sizeof(b->digest), "sha256:%s", hex);
}

enum {
        GOOD,
        MISMATCH,
        MISSING_BLOB,
        BAD_DIFF_ID,
        HOSTILE_LAYER,
        TRUNCATED_LAYER
};

/* An OCI archive with one image whose second layer is made bad as asked. */
static int write_archive(const char *path, int variant) {
        static char buf[1 << 20];
        Blob l0, l1, cfg, man;
        const Ent e0[] = { { "base", 'f', "base" } };
        const Ent e1[] = { { "top", 'f', "top" } };
        const Ent e1h[] = { { "ok", 'f', "ok" }, { "../canary/pwned", 'f', "x" } };
        blob_set(&l0, buf, build_tar(e0, 1, true, 0, buf, sizeof(buf)));
        size_t n1 = variant == HOSTILE_LAYER ? build_tar(e1h, 2, false, 0, buf, sizeof(buf))
                                             : build_tar(e1, 1, false, 0, buf, sizeof(buf));
        blob_set(&l1, buf, variant == TRUNCATED_LAYER ? 700 : n1);
        _cleanup_free_ char *c = strprintf(
                "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Cmd\":[\"sh\"]},"
                "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\",\"%s\"]}}",
                "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                l1.digest);
        /* diff_id of l0 = digest of its uncompressed tar */
        char hex[65];
        size_t n0 = build_tar(e0, 1, false, 0, buf, sizeof(buf));
        sha256_hex(buf, n0, hex);
        memcpy(strstr(c, "sha256:0000") + 7, hex, 64);
        if (variant == BAD_DIFF_ID)
                c[strlen(c) - 5] = c[strlen(c) - 5] == 'a' ? 'b' : 'a';
        blob_set(&cfg, c, strlen(c));
        _cleanup_free_ char *m = strprintf(
                "{\"schemaVersion\":2,\"mediaType\":\"" IMAGE_MT_OCI_MANIFEST "\","
                "\"config\":{\"mediaType\":\"" IMAGE_MT_OCI_CONFIG
                "\",\"digest\":\"%s\",\"size\":%zu},"
                "\"layers\":[{\"mediaType\":\"" IMAGE_MT_OCI_LAYER_GZIP
                "\",\"digest\":\"%s\",\"size\":%zu},"
                "{\"mediaType\":\"" IMAGE_MT_OCI_LAYER "\",\"digest\":\"%s\",\"size\":%zu}]}",
                cfg.digest, cfg.size, l0.digest, l0.size, l1.digest, l1.size);
        blob_set(&man, m, strlen(m));
        _cleanup_free_ char *idx = strprintf(
                "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" IMAGE_MT_OCI_MANIFEST
                "\",\"digest\":\"%s\",\"size\":%zu,\"annotations\":{"
                "\"org.opencontainers.image.ref.name\":\"localhost/unit:%d\"}}]}",
                man.digest, man.size, variant);

        struct archive *a = archive_write_new();
        archive_write_set_format_pax_restricted(a);
        assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
        Blob *blobs[] = { &l0, &l1, &cfg, &man };
        struct {
                const char *name;
                const char *data;
                size_t size;
        } files[6] = {
                { "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", 30 },
                { "index.json", idx, strlen(idx) },
        };
        size_t nf = 2;
        char names[4][100];
        for (int i = 0; i < 4; i++) {
                if (variant == MISSING_BLOB && i == 1)
                        continue;
                snprintf(names[i], sizeof(names[i]), "blobs/sha256/%s", blobs[i]->digest + 7);
                files[nf].name = names[i];
                files[nf].data = blobs[i]->data;
                files[nf].size = blobs[i]->size;
                if (variant == MISMATCH && i == 1)
                        ((char *)files[nf].data)[10] ^= 1;
                nf++;
        }
        for (size_t i = 0; i < nf; i++) {
                struct archive_entry *ae = archive_entry_new();
                archive_entry_set_pathname(ae, files[i].name);
                archive_entry_set_filetype(ae, AE_IFREG);
                archive_entry_set_perm(ae, 0644);
                archive_entry_set_size(ae, (la_int64_t)files[i].size);
                archive_write_header(a, ae);
                archive_write_data(a, files[i].data, files[i].size);
                archive_entry_free(ae);
        }
        archive_write_close(a);
        archive_write_free(a);
        for (int i = 0; i < 4; i++)
                free(blobs[i]->data);
        return 0;
}

/* A listing of every path under dir (names, types, sizes). */
static char *snapshot(const char *dir) {
        _cleanup_free_ char *cmd = strprintf("cd '%s' && find . -printf '%%p %%y %%s\\n' | "
                                             "grep -v '\\.lock' | sort",
                                             dir);
        FILE *p = popen(cmd, "r");
        char *out = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&out, &len);
        char line[4096];
        while (fgets(line, sizeof(line), p))
                fputs(line, m);
        pclose(p);
        fclose(m);
        return out;
}

static void test_store(void **state) {
        _cleanup_free_ char *root = path_in("store"), *arch = path_in("a.tar");
        ImageStore *s = NULL;
        Error err = {};
        char **names = NULL;
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);

        write_archive(arch, GOOD);
        int r = image_store_load(s, arch, &names, &err);
        if (r < 0)
                fail_msg("%s", err.message);
        assert_string_equal(names[0], "localhost/unit:0");
        names = strv_free(names);

        static const struct {
                int variant;
                const char *msg;
        } bad[] = {
                { MISMATCH, "digest mismatch" },
                { MISSING_BLOB, "missing from the archive" },
                { BAD_DIFF_ID, "does not match its diff ID" },
                { HOSTILE_LAYER, "\"..\" component refused" },
                { TRUNCATED_LAYER, "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *before = snapshot(root);
                write_archive(arch, bad[i].variant);
                err = (Error){};
                r = image_store_load(s, arch, &names, &err);
                if (r >= 0)
                        fail_msg("variant %d loaded", bad[i].variant);
                if (!strstr(err.message, bad[i].msg))
                        fail_msg("variant %d: \"%s\" lacks \"%s\"", bad[i].variant, err.message,
                                 bad[i].msg);
                assert_true(err.message[0]);
                _cleanup_free_ char *after = snapshot(root);
                assert_string_equal(before, after);
                assert_canary_intact();
        }

        /* tag, get, rm, prune */
        assert_int_equal(image_store_tag(s, "localhost/unit:0", "other", &err), 0);
        Image *im = NULL;
        assert_int_equal(image_store_get(s, "docker.io/library/other:latest", &im, &err), 0);
        assert_int_equal(strv_length(im->names), 2);
        assert_string_equal(im->config.cmd[0], "sh");
        assert_int_equal(im->manifest.n_layers, 2);
        _cleanup_free_ char *lp = image_store_layer_path(s, im->chain_ids[1]);
        _cleanup_free_ char *top = strprintf("%s/top", lp);
        assert_int_equal(access(top, F_OK), 0);
        im = image_free(im);
        assert_int_equal(image_store_remove(s, "other", NULL, &err), 0);
        assert_int_equal(image_store_get(s, "other", &im, &err), -ENOENT);

        /* A user's reference keeps the image it resolves to, by name or digest. */
        ImageUsers users = {};
        err = (Error){};
        assert_int_equal(image_users_add(&users, "localhost/unit:0", "pod \"default/web\""), 0);
        assert_int_equal(image_store_remove(s, "localhost/unit:0", &users, &err), -EBUSY);
        assert_string_equal(err.message, "image \"localhost/unit:0\" is in use by pod "
                                         "\"default/web\"; remove the pod first");
        assert_int_equal(image_store_get(s, "localhost/unit:0", &im, &err), 0);
        _cleanup_free_ char *digest = strdup(im->digest);
        im = image_free(im);
        err = (Error){};
        assert_int_equal(image_store_remove(s, digest, &users, &err), -EBUSY);
        uint64_t reclaimed = 0;
        assert_int_equal(image_store_prune(s, &users, &names, &reclaimed, &err), 0);
        assert_int_equal(strv_length(names), 0);
        names = strv_free(names);
        assert_int_equal(access(lp, F_OK), 0);
        image_users_done(&users);
        assert_int_equal(image_users_add(&users, digest, "pod \"default/web\""), 0);
        assert_int_equal(image_store_remove(s, "localhost/unit:0", &users, &err), -EBUSY);
        image_users_done(&users);

        assert_int_equal(image_store_prune(s, NULL, &names, &reclaimed, &err), 0);
        assert_int_equal(strv_length(names), 1);
        names = strv_free(names);
        assert_int_equal(access(lp, F_OK), -1);
        _cleanup_free_ char *blobs = strprintf("%s/images/blobs/sha256", root);
        DIR *d = opendir(blobs);
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        fail_msg("blob %s left after prune", de->d_name);
        closedir(d);
        image_store_free(s);
}

/* ---- the index cache behind image_store_get() ---- */

static char *blob_path(const char *root, const char *digest) {
        return strprintf("%s/images/blobs/sha256/%s", root, digest + 7);
}

static void restore_blob(const char *path, const char *data, size_t size) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, size, f), size);
        fclose(f);
}

static void test_index_cache(void **state) {
        _cleanup_free_ char *root = path_in("cache"), *arch = path_in("cache.tar");
        ImageStore *s = NULL, *other = NULL;
        Image *a = NULL, *b = NULL;
        Error err = {};

        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        write_archive(arch, GOOD);
        assert_int_equal(image_store_load(s, arch, NULL, &err), 0);

        /* Hit: the same cached image, and its blobs are not read again. */
        assert_int_equal(image_store_get(s, "localhost/unit:0", &a, &err), 0);
        _cleanup_free_ char *config = blob_path(root, a->config_digest), *saved = NULL;
        size_t saved_size = 0;
        FILE *f = fopen(config, "r");
        assert_non_null(f);
        saved = calloc(1, 65536);
        saved_size = fread(saved, 1, 65536, f);
        fclose(f);
        assert_int_equal(truncate(config, 0), 0);
        assert_int_equal(image_store_get(s, "localhost/unit:0", &b, &err), 0);
        assert_ptr_equal(a, b);
        b = image_free(b);
        a = image_free(a);
        restore_blob(config, saved, saved_size);

        /* Invalidated by another process's write (a second store stands in
         * for the `nanolet image load` CLI): the index is read again, and so
         * are the blobs (a corrupt one now fails the lookup). */
        assert_int_equal(image_store_open(root, NULL, &other, &err), 0);
        assert_int_equal(image_store_tag(other, "localhost/unit:0", "theirs", &err), 0);
        assert_int_equal(truncate(config, 0), 0);
        err = (Error){};
        assert_int_equal(image_store_get(s, "theirs", &a, &err), -EBADMSG);
        assert_non_null(strstr(err.message, "is corrupt"));
        restore_blob(config, saved, saved_size);
        err = (Error){};
        assert_int_equal(image_store_get(s, "theirs", &a, &err), 0);
        assert_true(strv_contains(a->names, "docker.io/library/theirs:latest"));
        assert_int_equal(image_store_remove(other, "theirs", NULL, &err), 0);
        assert_int_equal(image_store_get(s, "theirs", &b, &err), -ENOENT);
        /* A released cache entry outlives the cache: a is still ours. */
        assert_int_equal(strv_length(a->names), 2);
        a = image_free(a);

        /* Invalidated by the store's own write. */
        assert_int_equal(image_store_get(s, "localhost/unit:0", &a, &err), 0);
        assert_int_equal(strv_length(a->names), 1);
        assert_int_equal(image_store_tag(s, "localhost/unit:0", "mine", &err), 0);
        assert_int_equal(image_store_get(s, "mine", &b, &err), 0);
        assert_ptr_not_equal(a, b);
        assert_int_equal(strv_length(b->names), 2);
        assert_int_equal(strv_length(a->names), 1);
        a = image_free(a);
        b = image_free(b);

        image_store_free(other);
        image_store_free(s);
}

/* ---- index.json damaged or missing: rebuilt from the store ---- */

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

/* How many entries of dir start with prefix. */
static int count_prefixed(const char *dir, const char *prefix) {
        DIR *d = opendir(dir);
        struct dirent *de;
        int n = 0;
        assert_non_null(d);
        while ((de = readdir(d)))
                if (startswith(de->d_name, prefix))
                        n++;
        closedir(d);
        return n;
}

static void test_index_parse(void **state) {
        static const struct {
                const char *text;
                const char *problem;
        } bad[] = {
                { "", "is empty" },
                { "{\"manifests\":[", "is not valid JSON (line 1" },
                { "\x01\x02garbage", "is not valid JSON" },
                { "[]", "is a JSON array, not an OCI image index" },
                { "\"index\"", "is a JSON string" },
                { "{}", "has no \"manifests\" list" },
                { "{\"manifests\":{}}", "has \"manifests\" as a JSON object, not an array" },
                { "{\"schemaVersion\":3,\"manifests\":[]}", "schemaVersion other than 2" },
                { "{\"schemaVersion\":\"2\",\"manifests\":[]}", "schemaVersion other than 2" },
                { "{\"schemaVersion\":2,\"mediaType\":\"x/y\",\"manifests\":[]}",
                  "mediaType other than" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *j = NULL;
                char *problem = NULL;
                assert_int_equal(store_index_parse(bad[i].text, strlen(bad[i].text), &j, &problem),
                                 -EBADMSG);
                assert_null(j);
                if (!strstr(problem, bad[i].problem))
                        fail_msg("\"%s\": \"%s\" lacks \"%s\"", bad[i].text, problem,
                                 bad[i].problem);
                free(problem);
        }
        const char *good =
                "{\"schemaVersion\":2,\"mediaType\":\"" IMAGE_MT_OCI_INDEX "\",\"manifests\":[]}";
        json_t *j = NULL;
        char *problem = NULL;
        assert_int_equal(store_index_parse(good, strlen(good), &j, &problem), 0);
        assert_null(problem);
        json_decref(j);
}

typedef enum Damage {
        DAMAGE_MISSING,
        DAMAGE_EMPTY,
        DAMAGE_GARBAGE,
        DAMAGE_WRONG_TYPE,
        DAMAGE_OTHER_VERSION,
        DAMAGE_SYMLINK,
        DAMAGE_DIRECTORY,
        _DAMAGE_MAX,
} Damage;

static void damage_index(const char *root, Damage d) {
        _cleanup_free_ char *p = strprintf("%s/images/index.json", root);
        _cleanup_free_ char *target = path_in("elsewhere.json");
        assert_int_equal(unlink(p), 0);
        switch (d) {
        case DAMAGE_MISSING:
                break;
        case DAMAGE_EMPTY:
                write_text(p, "");
                break;
        case DAMAGE_GARBAGE:
                write_text(p, "\x7f"
                              "ELF\x01\x01 not json");
                break;
        case DAMAGE_WRONG_TYPE:
                write_text(p, "[{\"digest\":\"sha256:00\"}]");
                break;
        case DAMAGE_OTHER_VERSION:
                write_text(p, "{\"schemaVersion\":3,\"images\":{}}");
                break;
        case DAMAGE_SYMLINK:
                /* A valid index elsewhere: never read through the link. */
                write_text(target, "{\"schemaVersion\":2,\"manifests\":[]}");
                assert_int_equal(symlink(target, p), 0);
                break;
        case DAMAGE_DIRECTORY:
                assert_int_equal(mkdir(p, 0755), 0);
                break;
        case _DAMAGE_MAX:
                break;
        }
}

static void test_index_rebuild(void **state) {
        _cleanup_free_ char *root = path_in("rebuild"), *arch = path_in("rebuild.tar");
        _cleanup_free_ char *images = strprintf("%s/images", root);
        _cleanup_free_ char *index = strprintf("%s/images/index.json", root);
        _cleanup_free_ char *backup = strprintf("%s/images/index.json.backup", root);
        _cleanup_free_ char *elsewhere = path_in("elsewhere.json");
        ImageStore *s = NULL;
        Image *im = NULL;
        Error err = {};
        struct stat st;

        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        write_archive(arch, GOOD);
        assert_int_equal(image_store_load(s, arch, NULL, &err), 0);
        assert_int_equal(image_store_tag(s, "localhost/unit:0", "second", &err), 0);
        assert_int_equal(image_store_get(s, "localhost/unit:0", &im, &err), 0);
        _cleanup_free_ char *digest = strdup(im->digest);
        im = image_free(im);
        s = image_store_free(s);
        assert_int_equal(stat(backup, &st), 0);

        for (Damage d = 0; d < _DAMAGE_MAX; d++) {
                damage_index(root, d);
                err = (Error){};
                if (image_store_open(root, NULL, &s, &err) < 0)
                        fail_msg("damage %d: %s", d, err.message);
                if (image_store_get(s, "localhost/unit:0", &im, &err) < 0)
                        fail_msg("damage %d: %s", d, err.message);
                assert_string_equal(im->digest, digest);
                assert_int_equal(strv_length(im->names), 2);
                im = image_free(im);
                assert_int_equal(lstat(index, &st), 0);
                assert_true(S_ISREG(st.st_mode));
                /* The bad file aside, one at most. */
                assert_int_equal(count_prefixed(images, "index.json.corrupt-"),
                                 d == DAMAGE_MISSING ? 0 : 1);
                s = image_store_free(s);
        }
        _cleanup_free_ char *kept = NULL;
        {
                DIR *dd = opendir(images);
                struct dirent *de;
                while ((de = readdir(dd)))
                        if (startswith(de->d_name, "index.json.corrupt-"))
                                kept = strprintf("%s/%s", images, de->d_name);
                closedir(dd);
        }
        assert_int_equal(lstat(kept, &st), 0);
        assert_true(S_ISDIR(st.st_mode)); /* the last one: the directory */
        /* The symlink's target was not touched. */
        FILE *f = fopen(elsewhere, "r");
        assert_non_null(f);
        char buf[128] = {};
        assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
        fclose(f);
        assert_string_equal(buf, "{\"schemaVersion\":2,\"manifests\":[]}");

        /* Damaged while the store is open (and its index cached). */
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        assert_int_equal(image_store_get(s, "second", &im, &err), 0);
        im = image_free(im);
        assert_int_equal(unlink(index), 0);
        write_text(index, "{\"schemaVersion\":2,\"manifests\":");
        err = (Error){};
        if (image_store_get(s, "second", &im, &err) < 0)
                fail_msg("after damage while open: %s", err.message);
        im = image_free(im);

        /* No backup either: the image is kept, by digest; the tags are lost. */
        assert_int_equal(unlink(backup), 0);
        write_text(backup, "garbage");
        assert_int_equal(unlink(index), 0);
        err = (Error){};
        assert_int_equal(image_store_get(s, "localhost/unit:0", &im, &err), -ENOENT);
        assert_int_equal(image_store_get(s, digest, &im, &err), 0);
        assert_int_equal(strv_length(im->names), 0);
        im = image_free(im);
        /* The backup is good again: written with the index. */
        {
                _cleanup_free_ char *data = NULL;
                size_t n = 0;
                json_t *j = NULL;
                char *problem = NULL;
                assert_int_equal(read_full_file_at(AT_FDCWD, backup, 1 << 20, &data, &n), 0);
                assert_int_equal(store_index_parse(data, n, &j, &problem), 0);
                json_decref(j);
        }

        /* Missing index, then prune: a user's digest keeps the image. */
        ImageUsers users = {};
        assert_int_equal(image_users_add(&users, digest, "pod \"default/web\""), 0);
        assert_int_equal(unlink(index), 0);
        char **removed = NULL;
        uint64_t reclaimed = 0;
        err = (Error){};
        if (image_store_prune(s, &users, &removed, &reclaimed, &err) < 0)
                fail_msg("prune: %s", err.message);
        assert_int_equal(strv_length(removed), 0);
        removed = strv_free(removed);
        image_users_done(&users);
        _cleanup_free_ char *mblob = blob_path(root, digest);
        assert_int_equal(access(mblob, F_OK), 0);
        assert_int_equal(image_store_get(s, digest, &im, &err), 0);
        for (size_t k = 0; k < im->manifest.n_layers; k++) {
                _cleanup_free_ char *lb = blob_path(root, im->manifest.layers[k].digest);
                assert_int_equal(access(lb, F_OK), 0);
        }
        im = image_free(im);
        image_store_free(s);
}

static void test_partials_sweep(void **state) {
        _cleanup_free_ char *root = path_in("sweep"), *images = strprintf("%s/images", root);
        _cleanup_free_ char *a = strprintf("%s/.tmp-partial-aaaa", images);
        _cleanup_free_ char *b = strprintf("%s/.tmp-partial-bbbb", images);
        _cleanup_free_ char *c = strprintf("%s/.tmp-partial-cccc", images);
        _cleanup_free_ char *d = strprintf("%s/.tmp-partial-dddd", images);
        _cleanup_free_ char *canary = path_in("canary/secret");
        ImageStore *s = NULL;
        Error err = {};

        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        write_text(a, "left by a killed pull");
        write_text(b, "a running pull's");
        assert_int_equal(symlink(canary, c), 0);
        assert_int_equal(mkdir(d, 0700), 0);
        /* A pull holds its partial's flock (another open file: as another
         * process would). */
        int held = open(b, O_RDONLY | O_CLOEXEC);
        assert_true(held >= 0);
        assert_int_equal(flock(held, LOCK_EX), 0);
        uint64_t bytes = 0;
        assert_int_equal(image_store_sweep_partials(root, &bytes), 3);
        assert_true(bytes > 0);
        assert_int_equal(access(a, F_OK), -1);
        assert_int_equal(access(b, F_OK), 0);
        struct stat st;
        assert_int_equal(lstat(c, &st), -1);
        assert_int_equal(lstat(d, &st), -1);
        assert_canary_intact();
        /* Its pull is gone: the next store open removes it. */
        close(held);
        s = image_store_free(s);
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        assert_int_equal(access(b, F_OK), -1);
        image_store_free(s);
}

/* ---- the rootfs helper (this test re-executed, see main()) ---- */

static bool is_mounted(const char *path) {
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[4096];
        bool found = false;
        assert_non_null(f);
        while (!found && fgets(line, sizeof(line), f)) {
                char mnt[4096];
                if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 && streq(mnt, path))
                        found = true;
        }
        fclose(f);
        return found;
}

static void on_worker_done(Child *c, void *userdata) {
        *(bool *)userdata = true;
}

static int run_helper(ImageStore *s, Event *e, const ImageRootfsJob *job, Error *err) {
        ImageWorker w = {};
        bool done = false;
        int k = image_rootfs_start(s, e, job, on_worker_done, &done, &w, err);
        if (k < 0)
                return k;
        while (!done)
                assert_int_equal(event_run(e, UINT64_MAX), 0);
        k = image_worker_finish(&w, err);
        assert_null(w.child);
        return k;
}

/* Is pid blocked in flock() (a "->" line of /proc/locks)? */
static bool blocked_in_flock(pid_t pid) {
        FILE *f = fopen("/proc/locks", "re");
        char line[512];
        bool found = false;
        assert_non_null(f);
        while (!found && fgets(line, sizeof(line), f)) {
                int p;
                if (strstr(line, "->") &&
                    sscanf(strstr(line, "->") + 2, " %*s %*s %*s %d", &p) == 1 && p == pid)
                        found = true;
        }
        fclose(f);
        return found;
}

static void test_rootfs_helper(void **state) {
        _cleanup_free_ char *root = path_in("helper"), *arch = path_in("helper.tar");
        _cleanup_free_ char *target = path_in("helper-rootfs"), *upper = path_in("helper-upper");
        _cleanup_free_ char *work = path_in("helper-work"), *top = NULL, *lock = NULL;
        ImageStore *s = NULL;
        Image *im = NULL;
        Event *e = NULL;
        Error err = {};

        if (geteuid() != 0)
                skip();
        assert_int_equal(event_new(&e), 0);
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        write_archive(arch, GOOD);
        assert_int_equal(image_store_load(s, arch, NULL, &err), 0);
        assert_int_equal(image_store_get(s, "localhost/unit:0", &im, &err), 0);
        ImageRootfsJob job = {
                .digest = im->digest, .target = target, .upper_dir = upper, .work_dir = work
        };

        /* Only a digest: a tag could name another image by the time the helper runs. */
        job.digest = "localhost/unit:0";
        assert_int_equal(run_helper(s, e, &job, &err), -EINVAL);
        job.digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        err = (Error){};
        assert_int_equal(run_helper(s, e, &job, &err), -ENOENT);
        assert_string_equal(err.message, "image \"sha256:0000000000000000000000000000000000000000"
                                         "000000000000000000000000\" not found");
        assert_false(is_mounted(target));

        /* The image, end to end: layers unpacked, the overlay mounted. */
        job.digest = im->digest;
        err = (Error){};
        if (run_helper(s, e, &job, &err) < 0)
                fail_msg("%s", err.message);
        top = strprintf("%s/top", target);
        assert_int_equal(access(top, F_OK), 0);
        assert_true(is_mounted(target));
        assert_int_equal(image_rootfs_umount(target, &err), 0);

        /* Under nanolet-agent the helper is the nanolet binary that started
         * it, named as /proc/<agent pid>/fd/<n> (self-helper.h): that is
         * what runs, also from a child that closed its own descriptors. */
        int xfd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
        assert_true(xfd >= 0);
        char var[64];
        snprintf(var, sizeof(var), "/proc/%d/fd/%d", (int)getpid(), xfd);
        assert_int_equal(setenv(SELF_HELPER_EXE_ENV, var, 1), 0);
        assert_string_equal(self_helper_exe(), var);
        err = (Error){};
        if (run_helper(s, e, &job, &err) < 0)
                fail_msg("%s", err.message);
        assert_true(is_mounted(target));
        assert_int_equal(image_rootfs_umount(target, &err), 0);
        /* a descriptor that is not open: no helper runs, nothing is mounted */
        snprintf(var, sizeof(var), "/proc/%d/fd/%d", (int)getpid(), 1000);
        assert_int_equal(fcntl(1000, F_GETFD), -1);
        assert_int_equal(setenv(SELF_HELPER_EXE_ENV, var, 1), 0);
        err = (Error){};
        assert_true(run_helper(s, e, &job, &err) < 0);
        assert_false(is_mounted(target));
        assert_int_equal(unsetenv(SELF_HELPER_EXE_ENV), 0);
        assert_string_equal(self_helper_exe(), "/proc/self/exe");
        close(xfd);

        /* Abort while it runs: prune's lock holds it in its first step. The
         * loop reaps it (no zombie) and nothing is mounted. */
        lock = strprintf("%s/images/.gc.lock", root);
        int lfd = open(lock, O_RDWR | O_CLOEXEC);
        assert_true(lfd >= 0);
        assert_int_equal(flock(lfd, LOCK_EX), 0);
        ImageWorker w = {};
        bool done = false;
        assert_int_equal(image_rootfs_start(s, e, &job, on_worker_done, &done, &w, &err), 0);
        pid_t pid = child_get_pid(w.child);
        while (!blocked_in_flock(pid))
                assert_int_equal(event_run(e, 10 * USEC_PER_MSEC), 0);
        image_worker_abort(&w);
        assert_null(w.child);
        assert_null(w.target);
        siginfo_t si = {};
        while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
                assert_int_equal(event_run(e, 10 * USEC_PER_MSEC), 0);
        assert_int_equal(errno, ECHILD);
        assert_false(is_mounted(target));
        assert_false(done); /* an aborted worker's callback never runs */
        close(lfd);

        im = image_free(im);
        image_store_free(s);
        event_free(e);
}

/* ---- the agent's own mount: only when every layer is unpacked ---- */

static void test_rootfs_direct(void **state) {
        _cleanup_free_ char *root = path_in("direct"), *arch = path_in("direct.tar");
        _cleanup_free_ char *target = path_in("direct-rootfs"), *upper = path_in("direct-upper");
        _cleanup_free_ char *work = path_in("direct-work"), *top = NULL, *lock = NULL;
        _cleanup_free_ char *layer1 = NULL, *layer0 = NULL, *moved = NULL, *want = NULL;
        ImageStore *s = NULL;
        Image *im = NULL;
        Event *e = NULL;
        Error err = {};

        if (geteuid() != 0)
                skip();
        assert_int_equal(event_new(&e), 0);
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        write_archive(arch, GOOD);
        assert_int_equal(image_store_load(s, arch, NULL, &err), 0);
        assert_int_equal(image_store_get(s, "localhost/unit:0", &im, &err), 0);
        ImageRootfsJob job = {
                .digest = im->digest, .target = target, .upper_dir = upper, .work_dir = work
        };
        top = strprintf("%s/top", target);
        layer0 = image_store_layer_path(s, im->chain_ids[0]);
        layer1 = image_store_layer_path(s, im->chain_ids[1]);
        moved = path_in("direct-moved-layer");

        /* The load unpacked every layer: mounted here, no helper. */
        if (image_rootfs_mount_unpacked(s, &job, &err) < 0)
                fail_msg("%s", err.message);
        assert_true(is_mounted(target));
        assert_int_equal(access(top, F_OK), 0);
        assert_int_equal(image_rootfs_umount(target, &err), 0);

        /* Only a digest, and only one the store's index has. */
        job.digest = "localhost/unit:0";
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), -EINVAL);
        job.digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), -ENOENT);
        assert_false(is_mounted(target));
        job.digest = im->digest;

        /* One layer not unpacked: the helper's job, nothing mounted here;
         * the helper then unpacks it from its blob and mounts. */
        assert_int_equal(rename(layer1, moved), 0);
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), -ENOENT);
        want = strprintf("layer %s is not unpacked", im->chain_ids[1]);
        assert_string_equal(err.message, want);
        assert_false(is_mounted(target));
        err = (Error){};
        if (run_helper(s, e, &job, &err) < 0)
                fail_msg("%s", err.message);
        assert_true(is_mounted(target));
        assert_int_equal(access(top, F_OK), 0);
        assert_int_equal(image_rootfs_umount(target, &err), 0);
        assert_int_equal(access(layer1, F_OK), 0);
        /* ...and the next start mounts here again. */
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), 0);
        assert_int_equal(image_rootfs_umount(target, &err), 0);

        /* A layer name that is a symlink (to the real layer, even) is not
         * followed: only the store's own directories become lowerdirs. */
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", moved);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(rename(layer0, moved), 0);
        assert_int_equal(symlink(moved, layer0), 0);
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), -ENOENT);
        assert_false(is_mounted(target));
        assert_int_equal(unlink(layer0), 0);
        assert_int_equal(rename(moved, layer0), 0);

        /* A prune holds the store: no waiting on the loop, the helper waits. */
        lock = strprintf("%s/images/.gc.lock", root);
        int lfd = open(lock, O_RDWR | O_CLOEXEC);
        assert_true(lfd >= 0);
        assert_int_equal(flock(lfd, LOCK_EX), 0);
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), -EWOULDBLOCK);
        assert_false(is_mounted(target));
        close(lfd);
        err = (Error){};
        assert_int_equal(image_rootfs_mount_unpacked(s, &job, &err), 0);
        assert_true(is_mounted(target));
        assert_int_equal(image_rootfs_umount(target, &err), 0);

        im = image_free(im);
        image_store_free(s);
        event_free(e);
}

/* ---- layers committed before their flush: the records ---- */

static void test_layer_record_decide(void **state) {
        const char *boot = "0f3a1c2e-8d4b-4f6a-9c1d-2b3e4f5a6b7c";
        char line[64];
        snprintf(line, sizeof line, "%s\n", boot);
        assert_int_equal(image_layer_record_decide(line, 37, boot), LAYER_RECORD_CURRENT);
        /* another boot, torn, empty, no newline, trailing bytes, NUL, upper case */
        assert_int_equal(
                image_layer_record_decide("1f3a1c2e-8d4b-4f6a-9c1d-2b3e4f5a6b7c\n", 37, boot),
                LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide(line, 20, boot), LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide("", 0, boot), LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide(line, 36, boot), LAYER_RECORD_STALE);
        snprintf(line, sizeof line, "%s\nx", boot);
        assert_int_equal(image_layer_record_decide(line, 38, boot), LAYER_RECORD_STALE);
        char nul[37];
        memcpy(nul, boot, 36);
        nul[5] = 0;
        nul[36] = '\n';
        assert_int_equal(image_layer_record_decide(nul, 37, boot), LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide("0F3A1C2E-8D4B-4F6A-9C1D-2B3E4F5A6B7C\n", 37,
                                                   "0F3A1C2E-8D4B-4F6A-9C1D-2B3E4F5A6B7C"),
                         LAYER_RECORD_STALE);
        /* no (valid) boot ID of our own: nothing vouches for anything */
        snprintf(line, sizeof line, "%s\n", boot);
        assert_int_equal(image_layer_record_decide(line, 37, ""), LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide(line, 37, NULL), LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide(NULL, 0, boot), LAYER_RECORD_STALE);
        assert_int_equal(image_layer_record_decide("garbage-garbage-garbage-garbage-gar\n", 37,
                                                   "garbage-garbage-garbage-garbage-gar"),
                         LAYER_RECORD_STALE);
}

/* The records in layers/.unflushed, "<chain hex>-<rnd>", by chain hex. */
static size_t records_of(const char *root, const char *hex) {
        _cleanup_free_ char *dir = strprintf("%s/layers/.unflushed", root);
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t n = 0;
        assert_non_null(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && (!hex || strncmp(de->d_name, hex, 64) == 0))
                        n++;
        closedir(d);
        return n;
}

/* Replaces the chain's records by one record holding data (or, for the
 * kinds 's' symlink, 'p' FIFO, 'd' directory, such an entry). */
static void put_record(const char *root, const char *hex, char kind, const char *data,
                       size_t size) {
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s/layers/.unflushed/%s'-*", root, hex);
        _cleanup_free_ char *p = strprintf("%s/layers/.unflushed/%s-0123456789abcdef", root, hex);
        assert_int_equal(system(cmd), 0);
        switch (kind) {
        case 's':
                assert_int_equal(symlink("/proc/sys/kernel/random/boot_id", p), 0);
                break;
        case 'p':
                assert_int_equal(mkfifo(p, 0600), 0);
                break;
        case 'd':
                assert_int_equal(mkdir(p, 0700), 0);
                break;
        default: {
                FILE *f = fopen(p, "w");
                assert_non_null(f);
                assert_int_equal(fwrite(data, 1, size, f), size);
                fclose(f);
        }
        }
}

static char *read_text(const char *path) {
        static char buf[256];
        FILE *f = fopen(path, "r");
        if (!f)
                return NULL;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        return buf;
}

static void test_unflushed_layers(void **state) {
        _cleanup_free_ char *root = path_in("unflushed"), *arch = path_in("unflushed.tar");
        _cleanup_free_ char *lp = NULL, *top = NULL, *boot = NULL;
        ImageStore *s = NULL;
        Image *im = NULL;
        Error err = {};
        char **flushed = NULL;
        char hex[65];

        boot = strdup(read_text("/proc/sys/kernel/random/boot_id"));
        assert_non_null(boot);
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        write_archive(arch, GOOD);
        assert_int_equal(image_store_load(s, arch, NULL, &err), 0);
        assert_int_equal(image_store_get(s, "localhost/unit:0", &im, &err), 0);
        lp = image_store_layer_path(s, im->chain_ids[1]);
        top = strprintf("%s/top", lp);
        snprintf(hex, sizeof hex, "%s", im->chain_ids[1] + 7);

        /* Committed with one record each, this boot's ID in it. */
        assert_int_equal(records_of(root, NULL), 2);
        assert_int_equal(records_of(root, hex), 1);
        assert_string_equal(read_text(top), "top");
        /* The flush takes them all and says which. */
        assert_int_equal(image_store_flush_layers(s, &flushed, &err), 0);
        assert_int_equal(strv_length(flushed), 2);
        assert_true(strv_contains(flushed, im->chain_ids[0]));
        assert_true(strv_contains(flushed, im->chain_ids[1]));
        flushed = strv_free(flushed);
        assert_int_equal(records_of(root, NULL), 0);
        assert_false(image_store_has_unflushed(s));

        /* A record of this boot keeps the layer as it is. */
        snprintf(hex, sizeof hex, "%s", im->chain_ids[1] + 7);
        _cleanup_free_ char *cur = strprintf("%s", boot);
        put_record(root, hex, 'f', cur, strlen(cur));
        assert_true(image_store_has_unflushed(s));
        assert_int_equal(truncate(top, 0), 0);
        assert_int_equal(image_store_unpack(s, "localhost/unit:0", &err), 0);
        assert_string_equal(read_text(top), ""); /* kept, not unpacked again */
        assert_int_equal(image_store_flush_layers(s, &flushed, &err), 0);
        assert_int_equal(strv_length(flushed), 1);
        flushed = strv_free(flushed);

        /* After a "reboot" (another boot ID), and for every record that is
         * not exactly this boot's ID: the layer is unpacked again from its
         * blob, and its record is this boot's again. */
        static const struct {
                char kind;
                const char *data;
        } stale[] = {
                { 'f', "00000000-0000-4000-8000-000000000000\n" },
                { 'f', "" },
                { 'f', "garbage\n" },
                { 'h', NULL }, /* huge */
                { 's', NULL },
                { 'p', NULL },
                { 'd', NULL },
        };
        static char huge[1 << 20];
        memset(huge, 'a', sizeof(huge));
        for (size_t i = 0; i < ELEMENTSOF(stale); i++) {
                /* The next unpack of the layer fixes what was lost. */
                assert_int_equal(truncate(top, 0), 0);
                if (stale[i].kind == 'h')
                        put_record(root, hex, 'f', huge, sizeof(huge));
                else
                        put_record(root, hex, stale[i].kind, stale[i].data,
                                   stale[i].data ? strlen(stale[i].data) : 0);
                err = (Error){};
                if (image_store_unpack(s, "localhost/unit:0", &err) < 0)
                        fail_msg("record %zu: %s", i, err.message);
                if (strcmp(read_text(top), "top") != 0)
                        fail_msg("record %zu: layer not unpacked again", i);
                if (records_of(root, hex) != 1)
                        fail_msg("record %zu: %zu records", i, records_of(root, hex));
                assert_int_equal(image_store_flush_layers(s, &flushed, &err), 0);
                assert_int_equal(strv_length(flushed), 1);
                flushed = strv_free(flushed);
                assert_int_equal(records_of(root, NULL), 0);
        }

        /* At the store's open: a stale layer is removed (the next unpack
         * brings it back), records of no layer go, this boot's stay. */
        put_record(root, hex, 'f', "00000000-0000-4000-8000-000000000000\n", 37);
        char other[65];
        snprintf(other, sizeof other, "%s", im->chain_ids[0] + 7);
        put_record(root, other, 'f', cur, strlen(cur));
        put_record(root, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", 'f',
                   cur, strlen(cur));
        im = image_free(im);
        image_store_free(s);
        s = NULL;
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        assert_int_equal(access(lp, F_OK), -1);
        assert_int_equal(records_of(root, hex), 0);
        assert_int_equal(records_of(root, other), 1);
        assert_int_equal(records_of(root, NULL), 1);
        assert_int_equal(image_store_unpack(s, "localhost/unit:0", &err), 0);
        assert_string_equal(read_text(top), "top");
        assert_int_equal(records_of(root, NULL), 2);

        /* A failed unpack leaves no record behind. */
        assert_int_equal(image_store_flush_layers(s, NULL, &err), 0);
        assert_int_equal(records_of(root, NULL), 0);
        write_archive(arch, BAD_DIFF_ID);
        assert_true(image_store_load(s, arch, NULL, &err) < 0);
        assert_int_equal(records_of(root, NULL), 0);
        image_store_free(s);
}

/* ---- sparse entries: a hole counts as the bytes it becomes ---- */

/* 9 GiB of hole between 8 kB of data at each end: an archive of ~20 kB. */
#define SPARSE_SIZE ((UINT64_C(9) << 30) + 16384)

/* A pax tar (GNU sparse 1.0 headers) of one regular file of size logical
 * bytes, data only in its first and last 8 kB. */
static size_t build_sparse_tar(const char *name, uint64_t size, char *buf, size_t cap) {
        static char data[1 << 20];
        struct archive *a = archive_write_new();
        size_t used = 0;
        memset(data, 'x', sizeof(data));
        archive_write_set_format_pax(a);
        archive_write_set_bytes_in_last_block(a, 1);
        assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
        struct archive_entry *ae = archive_entry_new();
        archive_entry_set_pathname(ae, name);
        archive_entry_set_filetype(ae, AE_IFREG);
        archive_entry_set_perm(ae, 0644);
        archive_entry_set_size(ae, (la_int64_t)size);
        archive_entry_sparse_add_entry(ae, 0, 8192);
        archive_entry_sparse_add_entry(ae, (la_int64_t)(size - 8192), 8192);
        assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
        /* The writer takes the logical stream and skips what falls in holes. */
        for (uint64_t k = 0; k < size; k += sizeof(data)) {
                size_t n = (size_t)MIN((uint64_t)sizeof(data), size - k);
                assert_int_equal(archive_write_data(a, data, n), (la_ssize_t)n);
        }
        archive_entry_free(ae);
        assert_int_equal(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
        return used;
}

/* Writing past 64 MiB fails with EFBIG instead of filling the disk, so that
 * these tests are safe to run against a loader that writes holes out. */
static void limit_file_size(struct rlimit *old) {
        assert_int_equal(getrlimit(RLIMIT_FSIZE, old), 0);
        struct rlimit l = { .rlim_cur = 64 << 20, .rlim_max = old->rlim_max };
        if (l.rlim_cur > old->rlim_max)
                l.rlim_cur = old->rlim_max;
        (void)signal(SIGXFSZ, SIG_IGN);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &l), 0);
}

static uint64_t tree_blocks(const char *dir) {
        _cleanup_free_ char *cmd = strprintf("du -s -B1 '%s'", dir);
        FILE *p = popen(cmd, "r");
        unsigned long long n = 0;
        assert_int_equal(fscanf(p, "%llu", &n), 1);
        pclose(p);
        return n;
}

static void test_sparse_layer(void **state) {
        static char buf[1 << 20];
        struct rlimit old;
        Error err = {};
        limit_file_size(&old);

        size_t n = build_sparse_tar("big", SPARSE_SIZE, buf, sizeof(buf));
        assert_true(n < 64 * 1024);
        _cleanup_free_ char *root = path_in("r-sparse"), *big = path_in("r-sparse/big");
        assert_int_equal(mkdir(root, 0755), 0);
        int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int fd = memfd_with(buf, n);
        assert_int_equal(image_layer_unpack(fd, rootfd, NULL, NULL, NULL, NULL, &err), -EFBIG);
        assert_string_equal(err.message, "entry \"big\" (9663692800 bytes) makes the layer "
                                         "larger than 8589934592 bytes (limit)");
        close(fd);
        close(rootfd);
        struct stat st;
        assert_int_equal(stat(big, &st), -1);
        assert_true(tree_blocks(root) < (1 << 20));

        /* A sparse file within the limits unpacks, still sparse. */
        n = build_sparse_tar("small", UINT64_C(32) << 20, buf, sizeof(buf));
        _cleanup_free_ char *root2 = path_in("r-sparse-ok"), *small = path_in("r-sparse-ok/small");
        assert_int_equal(mkdir(root2, 0755), 0);
        rootfd = open(root2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = memfd_with(buf, n);
        err = (Error){};
        assert_int_equal(image_layer_unpack(fd, rootfd, NULL, NULL, NULL, NULL, &err), 0);
        close(fd);
        close(rootfd);
        assert_int_equal(stat(small, &st), 0);
        assert_int_equal(st.st_size, 32 << 20);
        assert_true(tree_blocks(root2) < (1 << 20));

        /* The total budget of a load counts holes too. */
        uint64_t budget = 16 << 20;
        _cleanup_free_ char *root3 = path_in("r-sparse-budget");
        assert_int_equal(mkdir(root3, 0755), 0);
        rootfd = open(root3, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        fd = memfd_with(buf, n);
        err = (Error){};
        assert_int_equal(image_layer_unpack(fd, rootfd, NULL, NULL, NULL, &budget, &err), -EFBIG);
        assert_string_equal(err.message, "entry \"small\" (33554432 bytes) makes the image "
                                         "larger than the total limit of 8589934592 bytes");
        close(fd);
        close(rootfd);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
}

/* ImageLimits.cancel: the pull's unpack threads stop when it is set. */
static void test_cancel(void **state) {
        const Ent ents[] = { { "d", 'd', NULL, 0755 }, { "d/f", 'f', "some content", 0644 } };
        atomic_bool cancel = true;
        ImageLimits lim;
        Error err = {};
        image_limits_default(&lim);
        lim.cancel = &cancel;
        assert_int_equal(unpack_ents("r-cancel", ents, 2, &lim, 0, true, 0, &err), -ECANCELED);
        assert_string_equal(err.message, "layer unpacking cancelled");
        /* Not set: the same layer unpacks. */
        atomic_store(&cancel, false);
        err = (Error){};
        assert_int_equal(unpack_ents("r-cancel-not", ents, 2, &lim, 0, true, 0, &err), 0);
        _cleanup_free_ char *f = path_in("r-cancel-not/d/f");
        assert_int_equal(access(f, F_OK), 0);
}

/* Whether any byte of the file at rel is still delayed-allocation data,
 * i.e. its write-back has not started: 1 yes, 0 no, -1 when the filesystem
 * cannot tell (no FIEMAP, e.g. tmpfs). */
static int file_has_delalloc(const char *rel) {
        _cleanup_free_ char *p = path_in(rel);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        /* struct fiemap ends in a flexible array: the extents follow it in
         * one allocation (a struct around it is a GNU extension). */
        _cleanup_free_ struct fiemap *m =
                calloc(1, sizeof(struct fiemap) + 32 * sizeof(struct fiemap_extent));
        assert_non_null(m);
        m->fm_length = FIEMAP_MAX_OFFSET;
        m->fm_extent_count = 32;
        int r = ioctl(fd, FS_IOC_FIEMAP, m); /* no FIEMAP_FLAG_SYNC: as it is */
        close(fd);
        if (r < 0)
                return -1;
        for (unsigned i = 0; i < m->fm_mapped_extents; i++)
                if (m->fm_extents[i].fe_flags & FIEMAP_EXTENT_DELALLOC)
                        return 1;
        return 0;
}

/* ImageLimits.early_writeback: a big file's write-back starts as it is
 * unpacked only when asked for (the store asks only when it flushes the
 * layer before committing it); otherwise its data is left to a later flush. */
static void test_early_writeback(void **state) {
        const Ent ents[] = { { "big", 'z', NULL, 0644 } };
        ImageLimits lim;
        Error err = {};
        /* Does this filesystem delay allocation at all (ext4, xfs, btrfs)? */
        static char zero[1 << 20];
        _cleanup_free_ char *probe = path_in("delalloc-probe");
        int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, zero, sizeof(zero)), (ssize_t)sizeof(zero));
        close(fd);
        if (file_has_delalloc("delalloc-probe") != 1)
                skip(); /* no FIEMAP or no delayed allocation: nothing to observe */

        image_limits_default(&lim);
        assert_false(lim.early_writeback);
        assert_int_equal(unpack_ents("r-wb-off", ents, 1, &lim, 1 << 20, true, 0, &err), 0);
        assert_int_equal(file_has_delalloc("r-wb-off/big"), 1);
        lim.early_writeback = true;
        assert_int_equal(unpack_ents("r-wb-on", ents, 1, &lim, 1 << 20, true, 0, &err), 0);
        assert_int_equal(file_has_delalloc("r-wb-on/big"), 0);
}

static void test_sparse_archive(void **state) {
        static char buf[1 << 20];
        struct rlimit old;
        _cleanup_free_ char *root = path_in("store-sparse"), *arch = path_in("sparse.tar");
        ImageStore *s = NULL;
        Error err = {};
        char **names = NULL;
        limit_file_size(&old);

        /* A "layer blob" that is a sparse file inside the archive. */
        const char *blob =
                "blobs/sha256/0000000000000000000000000000000000000000000000000000000000000000";
        size_t n = build_sparse_tar(blob, SPARSE_SIZE, buf, sizeof(buf));
        FILE *f = fopen(arch, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(buf, 1, n, f), n);
        fclose(f);
        assert_int_equal(image_store_open(root, NULL, &s, &err), 0);
        _cleanup_free_ char *before = snapshot(root);
        assert_int_equal(image_store_load(s, arch, &names, &err), -EFBIG);
        _cleanup_free_ char *want = strprintf(
                "loading \"%s\": archive entry \"%s\" (9663692800 bytes) makes the archive "
                "larger than the 8589934592 byte limit",
                arch, blob);
        assert_string_equal(err.message, want);
        _cleanup_free_ char *after = snapshot(root);
        assert_string_equal(before, after);
        assert_true(tree_blocks(root) < (1 << 20));
        image_store_free(s);

        /* Entries within the limit one by one, but not together: the
         * second is refused before it is written. */
        ImageLimits lim;
        image_limits_default(&lim);
        lim.max_total_size = 48 << 20;
        assert_int_equal(image_store_open(root, &lim, &s, &err), 0);
        f = fopen(arch, "we");
        assert_non_null(f);
        n = build_sparse_tar("one", UINT64_C(32) << 20, buf, sizeof(buf));
        assert_int_equal(fwrite(buf, 1, n - 1024, f), n - 1024); /* without the end marker */
        n = build_sparse_tar("two", UINT64_C(32) << 20, buf, sizeof(buf));
        assert_int_equal(fwrite(buf, 1, n, f), n);
        fclose(f);
        err = (Error){};
        assert_int_equal(image_store_load(s, arch, &names, &err), -EFBIG);
        free(want);
        want = strprintf("loading \"%s\": archive entry \"two\" (33554432 bytes) makes the "
                         "archive larger than the 50331648 byte limit",
                         arch);
        assert_string_equal(err.message, want);
        free(after);
        after = snapshot(root);
        assert_string_equal(before, after);
        image_store_free(s);
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
}

/* The modes' tables: names and fields that helper.h can build and parse. */
static void test_helper_modes(void **state) {
        assert_int_equal(helper_mode_verify(&image_unpack_rootfs_helper_mode), 0);
        assert_int_equal(helper_mode_verify(&image_flush_helper_mode), 0);
        assert_int_equal(helper_mode_verify(&image_pull_helper_mode), 0);
}

int main(int argc, char **argv) {
        /* The workers re-execute /proc/self/exe, this test, in their helper mode. */
        if (argc > 1 && streq(argv[1], SELF_HELPER_VERB))
                return helper_main((const HelperMain *const[]){ &image_unpack_rootfs_helper }, 1,
                                   argc - 2, argv + 2);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_helper_modes),
                cmocka_unit_test(test_hostile),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_good_and_whiteouts),
                cmocka_unit_test(test_store),
                cmocka_unit_test(test_index_cache),
                cmocka_unit_test(test_index_parse),
                cmocka_unit_test(test_index_rebuild),
                cmocka_unit_test(test_partials_sweep),
                cmocka_unit_test(test_rootfs_helper),
                cmocka_unit_test(test_rootfs_direct),
                cmocka_unit_test(test_layer_record_decide),
                cmocka_unit_test(test_unflushed_layers),
                cmocka_unit_test(test_sparse_layer),
                cmocka_unit_test(test_sparse_archive),
                cmocka_unit_test(test_cancel),
                cmocka_unit_test(test_early_writeback),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
