/* Signature verification, versions and the generation record, with
 * fixtures made by the real tools (openssl, minisign 0.11, and a bundle
 * accepted by @sigstore/verify): tests/signatures/make-fixtures.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "manifest-generation.h"
#include "manifest-signature.h"
#include "rm-rf.h"
#include "string-util.h"

#define FIXTURES TEST_DATA_DIR "/signatures/fixtures/"

static char *fixture(const char *name, size_t *ret_size) {
        char *data = NULL;
        size_t size = 0;
        char path[512];
        snprintf(path, sizeof path, FIXTURES "%s", name);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &data, &size), 0);
        *ret_size = size;
        return data;
}

static ManifestKeyring *keyring(const char *const *names) {
        ManifestKeyring *k = NULL;
        assert_int_equal(manifest_keyring_new(&k, NULL), 0);
        for (; *names; names++) {
                char path[512];
                Error err = {};
                snprintf(path, sizeof path, FIXTURES "%s", *names);
                assert_int_equal(manifest_keyring_add_file(k, path, &err), 0);
        }
        return k;
}

#define KEYS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Verifies fixture body against fixture sig; returns r, the reason in *f. */
static int verify(ManifestKeyring *k, ManifestSignatureFormat fmt, const char *body_name,
                  const char *sig_name, ManifestSignatureFailure *f) {
        size_t bn, sn;
        char *body = fixture(body_name, &bn), *sig = fixture(sig_name, &sn);
        Error err = {};
        *f = _MANIFEST_SIGNATURE_FAILURE_INVALID;
        int r = manifest_signature_verify(k, fmt, body, bn, sig, sn, NULL, f, &err);
        if (r < 0)
                assert_true(err.message[0] != 0);
        free(body);
        free(sig);
        return r;
}

static void test_cosign(void **state) {
        ManifestKeyring *k = keyring(KEYS("cosign.pub"));
        ManifestSignatureFailure f;
        size_t bn, sn;
        char *body = fixture("body.yaml", &bn), *sig = fixture("body.yaml.sig", &sn);
        const char *key = NULL;
        Error err = {};

        assert_int_equal(manifest_signature_verify(k, MANIFEST_SIGNATURE_COSIGN, body, bn, sig, sn,
                                                   &key, &f, &err),
                         0);
        assert_non_null(strstr(key, "cosign.pub"));
        /* A flipped byte anywhere in the body. */
        for (size_t i = 0; i < bn; i += bn / 7) {
                body[i] ^= 0x01;
                assert_int_equal(manifest_signature_verify(k, MANIFEST_SIGNATURE_COSIGN, body, bn,
                                                           sig, sn, NULL, &f, &err),
                                 -EBADMSG);
                assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
                body[i] ^= 0x01;
        }
        /* A flipped bit inside the signature: bad, or no DER at all. */
        sig[10] = sig[10] == 'A' ? 'B' : 'A';
        assert_int_equal(manifest_signature_verify(k, MANIFEST_SIGNATURE_COSIGN, body, bn, sig, sn,
                                                   NULL, &f, &err),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        free(body);
        free(sig);

        /* Another body's signature (swapped). */
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_COSIGN, "body.yaml", "body-old.yaml.sig", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        /* Signed by a key that is not trusted. */
        assert_int_equal(
                verify(k, MANIFEST_SIGNATURE_COSIGN, "body.yaml", "body.yaml.other-sig", &f),
                -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        manifest_keyring_free(k);

        /* Rotation: either of two trusted keys verifies. */
        k = keyring(KEYS("other.pub", "cosign.pub"));
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_COSIGN, "body.yaml", "body.yaml.sig", &f), 0);
        assert_int_equal(
                verify(k, MANIFEST_SIGNATURE_COSIGN, "body.yaml", "body.yaml.other-sig", &f), 0);
        manifest_keyring_free(k);
        /* The wrong key alone. */
        k = keyring(KEYS("other.pub"));
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_COSIGN, "body.yaml", "body.yaml.sig", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        manifest_keyring_free(k);
}

static void test_hostile_signatures(void **state) {
        ManifestKeyring *k = keyring(KEYS("cosign.pub", "minisign.pub"));
        ManifestSignatureFailure f;
        Error err = {};
        const char body[] = "kind: List\n";
        static const char *const bad[] = {
                "", "====", "AAAA\nAAAA", "not base64!", "MEUCIQ", "A===", "\x01", "MA==",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                assert_true(manifest_signature_verify(k, MANIFEST_SIGNATURE_COSIGN, body,
                                                      strlen(body), bad[i], strlen(bad[i]), NULL,
                                                      &f, &err) < 0);
                assert_true(f == MANIFEST_SIGNATURE_MALFORMED || f == MANIFEST_SIGNATURE_BAD ||
                            f == MANIFEST_SIGNATURE_UNSIGNED);
                assert_true(manifest_signature_verify(k, MANIFEST_SIGNATURE_MINISIGN, body,
                                                      strlen(body), bad[i], strlen(bad[i]), NULL,
                                                      &f, &err) < 0);
                assert_true(manifest_signature_verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE, body,
                                                      strlen(body), bad[i], strlen(bad[i]), NULL,
                                                      &f, &err) < 0);
        }
        /* Larger than the limit: refused before any parse. */
        size_t n = MANIFEST_SIGNATURE_MAX_SIZE + 1;
        char *big = malloc(n);
        assert_non_null(big);
        memset(big, 'A', n);
        for (int fmt = 0; fmt < _MANIFEST_SIGNATURE_FORMAT_MAX; fmt++) {
                assert_int_equal(manifest_signature_verify(k, (ManifestSignatureFormat)fmt, body,
                                                           strlen(body), big, n, NULL, &f, &err),
                                 -EFBIG);
                assert_int_equal(f, MANIFEST_SIGNATURE_TOO_LARGE);
        }
        free(big);
        manifest_keyring_free(k);
}

static void test_bundle(void **state) {
        ManifestKeyring *k = keyring(KEYS("cosign.pub"));
        ManifestSignatureFailure f;
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE, "body.yaml",
                                "body.yaml.sigstore.json", &f),
                         0);
        /* The bundle's own digest is never trusted: with another body it
         * is refused, whether the digest matches the body or not. */
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE, "body-old.yaml",
                                "body.yaml.sigstore.json", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE, "body-old.yaml",
                                "body.yaml.wrong-digest.sigstore.json", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE, "body.yaml",
                                "body.yaml.wrong-digest.sigstore.json", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        /* Keyless: needs a transparency log. */
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE, "body.yaml",
                                "body.yaml.tlog.sigstore.json", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_TLOG);

        /* Other media types, no signature, a DSSE envelope. */
        static const char *const bad[] = {
                "{}",
                "[]",
                "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.1+json\"}",
                "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\","
                "\"verificationMaterial\":{\"publicKey\":{}},\"dsseEnvelope\":{}}",
                "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\","
                "\"verificationMaterial\":{}, \"messageSignature\":{\"signature\":\"MA==\"}}",
                "{\"mediaType\":\"application/vnd.dev.sigstore.bundle.v0.3+json\","
                "\"mediaType\":\"x\"}",
        };
        Error err = {};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                assert_int_equal(manifest_signature_verify(k, MANIFEST_SIGNATURE_SIGSTORE_BUNDLE,
                                                           "x", 1, bad[i], strlen(bad[i]), NULL, &f,
                                                           &err),
                                 -EBADMSG);
                assert_int_equal(f, MANIFEST_SIGNATURE_MALFORMED);
        }
        manifest_keyring_free(k);
}

static void test_minisign(void **state) {
        ManifestKeyring *k = keyring(KEYS("minisign.pub"));
        ManifestSignatureFailure f;
        /* Prehashed (minisign's default) and legacy. */
        assert_int_equal(
                verify(k, MANIFEST_SIGNATURE_MINISIGN, "body.yaml", "body.yaml.minisig", &f), 0);
        assert_int_equal(
                verify(k, MANIFEST_SIGNATURE_MINISIGN, "body.yaml", "body.yaml.legacy.minisig", &f),
                0);
        assert_int_equal(
                verify(k, MANIFEST_SIGNATURE_MINISIGN, "body-old.yaml", "body.yaml.minisig", &f),
                -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_MINISIGN, "body-old.yaml",
                                "body.yaml.legacy.minisig", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        /* Another key id. */
        assert_int_equal(
                verify(k, MANIFEST_SIGNATURE_MINISIGN, "body.yaml", "body.yaml.other.minisig", &f),
                -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_UNTRUSTED);

        /* The trusted comment is signed: changing it breaks the global
         * signature, while the untrusted comment is free. */
        size_t bn, sn;
        char *body = fixture("body.yaml", &bn), *sig = fixture("body.yaml.minisig", &sn);
        Error err = {};
        char *tc = strstr(sig, "trusted comment: nanolet");
        assert_non_null(tc);
        char *t = tc + strlen("trusted comment: ");
        t[0] = 'N';
        assert_int_equal(manifest_signature_verify(k, MANIFEST_SIGNATURE_MINISIGN, body, bn, sig,
                                                   sn, NULL, &f, &err),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_BAD);
        assert_non_null(strstr(err.message, "trusted comment"));
        t[0] = 'n';
        char *uc = strstr(sig, "untrusted comment: ");
        assert_ptr_equal(uc, sig);
        uc[strlen("untrusted comment: ")] ^= 0x20;
        assert_int_equal(manifest_signature_verify(k, MANIFEST_SIGNATURE_MINISIGN, body, bn, sig,
                                                   sn, NULL, &f, &err),
                         0);
        free(body);
        free(sig);

        /* A minisign key never checks an ECDSA signature and vice versa. */
        assert_int_equal(verify(k, MANIFEST_SIGNATURE_COSIGN, "body.yaml", "body.yaml.sig", &f),
                         -EBADMSG);
        assert_int_equal(f, MANIFEST_SIGNATURE_UNTRUSTED);
        manifest_keyring_free(k);
}

static void test_keys(void **state) {
        ManifestKeyring *k = NULL;
        Error err = {};
        assert_int_equal(manifest_keyring_new(&k, NULL), 0);
        static const char *const bad[] = {
                "",
                "garbage",
                "untrusted comment: x\n",
                "untrusted comment: x\nRWQ=\n",
                /* base64 of 42 bytes that do not start with "Ed" */
                "untrusted comment: x\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
                "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                error_clear(&err);
                assert_int_equal(manifest_keyring_add(k, "key", bad[i], strlen(bad[i]), &err),
                                 -EINVAL);
                assert_true(err.message[0] != 0);
        }
        /* A P-384 key is not cosign's. */
        const char *p384 = "-----BEGIN PUBLIC KEY-----\n"
                           "MHYwEAYHKoZIzj0CAQYFK4EEACIDYgAEDW+g8sbyAsfoHzdFNreBu8UZDccvlbmq\n"
                           "bvHzFYXf9pxeXjMUm3cXNZMBKhEQ1yhnuOSgNwXxLa9Pig+txVGQtD3ae445ExYC\n"
                           "mSoxYX2fDVWdvIStwCJynTpl/61omrJd\n"
                           "-----END PUBLIC KEY-----\n";
        error_clear(&err);
        assert_int_equal(manifest_keyring_add(k, "p384", p384, strlen(p384), &err), -EINVAL);
        assert_int_equal(manifest_keyring_count(k, MANIFEST_SIGNATURE_COSIGN), 0);
        error_clear(&err);
        assert_true(manifest_keyring_add_file(k, FIXTURES "missing.pub", &err) < 0);
        manifest_keyring_free(k);
}

static void test_rfc3339(void **state) {
        usec_t t;
        assert_int_equal(manifest_parse_rfc3339("1970-01-01T00:00:00Z", &t), 0);
        assert_int_equal(t, 0);
        assert_int_equal(manifest_parse_rfc3339("2026-11-28T15:15:00Z", &t), 0);
        assert_int_equal(t, 1795878900ULL * USEC_PER_SEC);
        assert_int_equal(manifest_parse_rfc3339("2026-11-28T17:15:00.5+02:00", &t), 0);
        assert_int_equal(t, 1795878900ULL * USEC_PER_SEC + 500000);
        static const char *const bad[] = {
                "",
                "2026-11-28",
                "2026-11-28T15:15:00",
                "2026-02-30T00:00:00Z",
                "2026-13-01T00:00:00Z",
                "2026-11-28T25:00:00Z",
                "2026-11-28T15:15:00Zjunk",
                "1969-12-31T23:59:59Z",
                "2026-11-28T15:15:00.Z",
                "2026-11-28T15:15:00+2:00",
                "+2026-11-28T15:15:00Z",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
                assert_int_equal(manifest_parse_rfc3339(bad[i], &t), -EINVAL);
}

static int version_of(const char *body, ManifestVersion *v) {
        Error err = {};
        return manifest_version_parse(body, strlen(body), 0, v, &err);
}

static void test_version(void **state) {
        size_t n;
        char *body = fixture("body.yaml", &n);
        ManifestVersion v, v2;
        Error err = {};
        assert_int_equal(manifest_version_parse(body, n, 0, &v, &err), 0);
        assert_int_equal(v.generation, 7);
        usec_t exp;
        assert_int_equal(manifest_parse_rfc3339("2099-01-01T00:00:00Z", &exp), 0);
        assert_int_equal(v.expires, exp);
        free(body);

        assert_int_equal(version_of("kind: List\nitems: []\n", &v2), -EBADMSG);
        assert_int_equal(version_of("", &v2), -EBADMSG);
        assert_int_equal(version_of("- a\n", &v2), -EBADMSG);
#define VERSIONED(g, e)                                                                            \
        "kind: List\nmetadata:\n  annotations:\n    nanolet.io/generation: \"%s\"\n"               \
        "    nanolet.io/expires: \"%s\"\n",                                                        \
                g, e
        static const char *const bad_gen[] = {
                "-1", "", "1x", "0x10", "99999999999999999999", "18446744073709551615", " 1", "+1"
        };
        for (size_t i = 0; i < sizeof bad_gen / sizeof bad_gen[0]; i++) {
                char *b = strprintf(VERSIONED(bad_gen[i], "2099-01-01T00:00:00Z"));
                assert_int_equal(version_of(b, &v2), -EBADMSG);
                free(b);
        }
        char *b = strprintf(VERSIONED("9999999999999999999", "2099-01-01T00:00:00Z"));
        assert_int_equal(version_of(b, &v2), 0);
        assert_true(v2.generation == 9999999999999999999ULL);
        free(b);
        b = strprintf(VERSIONED("3", "tomorrow"));
        assert_int_equal(version_of(b, &v2), -EBADMSG);
        free(b);
        /* Only the first document counts: a later one cannot add a version. */
        assert_int_equal(
                version_of("kind: List\nitems: []\n---\nkind: List\nmetadata:\n  annotations:\n"
                           "    nanolet.io/generation: \"9\"\n"
                           "    nanolet.io/expires: \"2099-01-01T00:00:00Z\"\n",
                           &v2),
                -EBADMSG);
}

static void test_version_check(void **state) {
        ManifestGenerationRecord rec = {};
        ManifestVersion v = { .generation = 7, .expires = 2000 * USEC_PER_SEC };
        ManifestSignatureFailure f;
        Error err = {};
        memset(v.sha256, 0xaa, sizeof v.sha256);
        /* No record: any generation. */
        assert_int_equal(manifest_version_check(&rec, &v, 1000 * USEC_PER_SEC, &f, &err), 0);
        rec = (ManifestGenerationRecord){ .have = true, .generation = 7 };
        memcpy(rec.sha256, v.sha256, sizeof rec.sha256);
        /* The same document again (a restart). */
        assert_int_equal(manifest_version_check(&rec, &v, 1000 * USEC_PER_SEC, &f, &err), 0);
        /* The same generation with other bytes. */
        v.sha256[0] = 0;
        assert_int_equal(manifest_version_check(&rec, &v, 1000 * USEC_PER_SEC, &f, &err), -EPERM);
        assert_int_equal(f, MANIFEST_SIGNATURE_ROLLBACK);
        /* A replayed older generation. */
        v.generation = 6;
        assert_int_equal(manifest_version_check(&rec, &v, 1000 * USEC_PER_SEC, &f, &err), -EPERM);
        assert_int_equal(f, MANIFEST_SIGNATURE_ROLLBACK);
        /* Newer, then expired at exactly its time. */
        v.generation = 8;
        assert_int_equal(manifest_version_check(&rec, &v, 1999 * USEC_PER_SEC, &f, &err), 0);
        error_clear(&err);
        assert_int_equal(manifest_version_check(&rec, &v, 2000 * USEC_PER_SEC, &f, &err), -EPERM);
        assert_int_equal(f, MANIFEST_SIGNATURE_EXPIRED);
        assert_non_null(strstr(err.message, "expired"));
}

static char tmpdir[] = "/tmp/test-manifest-signature.XXXXXX";

static void test_generation_file(void **state) {
        assert_non_null(mkdtemp(tmpdir));
        char path[256], other[256];
        snprintf(path, sizeof path, "%s/%s", tmpdir, MANIFEST_GENERATION_FILE);
        snprintf(other, sizeof other, "%s/target", tmpdir);
        const char *url = "https://fleet.example/box.yaml";
        ManifestGenerationRecord rec, back;
        Error err = {};

        /* Missing: no record. */
        assert_int_equal(manifest_generation_load(path, url, &rec, &err), 0);
        assert_false(rec.have);

        rec = (ManifestGenerationRecord){ .have = true, .generation = 9999999999999999999ULL };
        memset(rec.sha256, 0x5c, sizeof rec.sha256);
        assert_int_equal(manifest_generation_store(path, url, &rec, &err), 0);
        assert_int_equal(manifest_generation_load(path, url, &back, &err), 0);
        assert_true(back.have);
        assert_true(back.generation == 9999999999999999999ULL);
        assert_memory_equal(back.sha256, rec.sha256, sizeof rec.sha256);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* Another URL's record is no record for this one. */
        assert_int_equal(manifest_generation_load(path, "https://other/", &back, &err), 0);
        assert_false(back.have);

        /* Empty, garbage, other versions, wrong fields: refused with a reason. */
        static const char *const bad[] = {
                "",
                "garbage",
                "{}",
                "{\"version\":2,\"url\":\"https://fleet.example/box.yaml\",\"generation\":\"1\","
                "\"sha256\":\"" /* */
                "0000000000000000000000000000000000000000000000000000000000000000\"}",
                "{\"version\":1,\"url\":\"https://fleet.example/box.yaml\",\"generation\":1,"
                "\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                "{\"version\":1,\"url\":\"https://fleet.example/box.yaml\",\"generation\":\"-1\","
                "\"sha256\":\"0000000000000000000000000000000000000000000000000000000000000000\"}",
                "{\"version\":1,\"url\":\"https://fleet.example/box.yaml\",\"generation\":\"1\","
                "\"sha256\":\"00\"}",
                "{\"version\":1,\"url\":\"https://fleet.example/box.yaml\",\"generation\":\"1\","
                "\"sha256\":\"ZZ00000000000000000000000000000000000000000000000000000000000000\"}",
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
                assert_true(fd >= 0);
                assert_int_equal(write_all(fd, bad[i], strlen(bad[i])), 0);
                close(fd);
                error_clear(&err);
                assert_true(manifest_generation_load(path, url, &back, &err) < 0);
                assert_true(err.message[0] != 0);
        }

        /* A symlink is never followed, and a store replaces the link, not
         * its target. */
        assert_int_equal(unlink(path), 0);
        int fd = open(other, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, "keep", 4), 0);
        close(fd);
        assert_int_equal(symlink(other, path), 0);
        error_clear(&err);
        assert_int_equal(manifest_generation_load(path, url, &back, &err), -ELOOP);
        assert_int_equal(manifest_generation_store(path, url, &rec, &err), 0);
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        char *data = NULL;
        size_t n = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, other, 100, &data, &n), 0);
        assert_string_equal(data, "keep");
        free(data);
        /* A directory in its place. */
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_true(manifest_generation_load(path, url, &back, &err) < 0);
        assert_true(manifest_generation_store(path, url, &rec, &err) < 0);
        (void)rm_rf_at(AT_FDCWD, tmpdir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cosign),
                cmocka_unit_test(test_hostile_signatures),
                cmocka_unit_test(test_bundle),
                cmocka_unit_test(test_minisign),
                cmocka_unit_test(test_keys),
                cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_version),
                cmocka_unit_test(test_version_check),
                cmocka_unit_test(test_generation_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
