/* Manifest signatures (manifest-signature.h). Every byte of a signature
 * file is hostile until it verified: lengths are checked before each copy,
 * base64 is decoded strictly, and the body's digest is always computed
 * here. */
#include "manifest-signature.h"

#include <assert.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base64.h"
#include "cleanup.h"
#include "fileio.h"
#include "hash.h"
#include "json-util.h"
#include "string-util.h"
#include "yaml-node.h"

#define MANIFEST_KEY_MAX_SIZE ((size_t)64 * 1024)
#define MINISIGN_KEYID_SIZE 8
#define MINISIGN_PK_SIZE 32
#define MINISIGN_SIG_SIZE 64
/* Longest trusted comment minisign writes or reads. */
#define MINISIGN_COMMENT_MAX 1024

/* libcrypto is loaded with dlopen() when the first keyring is made: an
 * agent that verifies nothing never maps it (docs/internals/runtime.md,
 * "The agent executable"). X(libcrypto name, CryptoApi member). */
#define CRYPTO_API_FUNCTIONS(X)                                                                    \
        X(BIO_new_mem_buf, bio_new_mem_buf)                                                        \
        X(BIO_free, bio_free)                                                                      \
        X(PEM_read_bio_PUBKEY, pem_read_bio_pubkey)                                                \
        X(EVP_PKEY_new_raw_public_key, pkey_new_raw_public_key)                                    \
        X(EVP_PKEY_get_base_id, pkey_get_base_id)                                                  \
        X(EVP_PKEY_get_utf8_string_param, pkey_get_utf8_string_param)                              \
        X(EVP_PKEY_free, pkey_free)                                                                \
        X(EVP_MD_CTX_new, md_ctx_new)                                                              \
        X(EVP_MD_CTX_free, md_ctx_free)                                                            \
        X(EVP_DigestVerifyInit, digest_verify_init)                                                \
        X(EVP_DigestVerify, digest_verify)                                                         \
        X(EVP_Digest, digest)                                                                      \
        X(EVP_sha256, sha256)                                                                      \
        X(EVP_blake2b512, blake2b512)                                                              \
        X(CRYPTO_memcmp, memcmp)

typedef struct CryptoApi {
#define CRYPTO_API_MEMBER(name, member) __typeof__(name) *member;
        CRYPTO_API_FUNCTIONS(CRYPTO_API_MEMBER)
#undef CRYPTO_API_MEMBER
} CryptoApi;

typedef enum KeyKind {
        KEY_ECDSA_P256,
        KEY_MINISIGN,
} KeyKind;

typedef struct ManifestKey {
        KeyKind kind;
        char *name;
        EVP_PKEY *pkey;
        uint8_t keyid[MINISIGN_KEYID_SIZE]; /* minisign only */
} ManifestKey;

struct ManifestKeyring {
        void *dl; /* libcrypto; never dlclose()d, as libcurl (event-curl.c) */
        CryptoApi api;
        ManifestKey *keys;
        size_t n_keys;
};

static const char *const format_table[_MANIFEST_SIGNATURE_FORMAT_MAX] = {
        [MANIFEST_SIGNATURE_COSIGN] = "cosign",
        [MANIFEST_SIGNATURE_SIGSTORE_BUNDLE] = "sigstore-bundle",
        [MANIFEST_SIGNATURE_MINISIGN] = "minisign",
};

static const char *const suffix_table[_MANIFEST_SIGNATURE_FORMAT_MAX] = {
        [MANIFEST_SIGNATURE_COSIGN] = ".sig",
        [MANIFEST_SIGNATURE_SIGSTORE_BUNDLE] = ".sigstore.json",
        [MANIFEST_SIGNATURE_MINISIGN] = ".minisig",
};

static const char *const failure_table[_MANIFEST_SIGNATURE_FAILURE_MAX] = {
        [MANIFEST_SIGNATURE_UNSIGNED] = "unsigned",
        [MANIFEST_SIGNATURE_TOO_LARGE] = "too-large",
        [MANIFEST_SIGNATURE_MALFORMED] = "malformed",
        [MANIFEST_SIGNATURE_UNTRUSTED] = "untrusted",
        [MANIFEST_SIGNATURE_BAD] = "bad",
        [MANIFEST_SIGNATURE_TLOG] = "tlog",
        [MANIFEST_SIGNATURE_UNVERSIONED] = "unversioned",
        [MANIFEST_SIGNATURE_ROLLBACK] = "rollback",
        [MANIFEST_SIGNATURE_EXPIRED] = "expired",
        [MANIFEST_SIGNATURE_STATE] = "state",
};

const char *manifest_signature_format_to_string(ManifestSignatureFormat f) {
        return f >= 0 && f < _MANIFEST_SIGNATURE_FORMAT_MAX ? format_table[f] : NULL;
}

ManifestSignatureFormat manifest_signature_format_from_string(const char *s) {
        for (int i = 0; s && i < _MANIFEST_SIGNATURE_FORMAT_MAX; i++)
                if (streq(format_table[i], s))
                        return (ManifestSignatureFormat)i;
        return _MANIFEST_SIGNATURE_FORMAT_INVALID;
}

const char *manifest_signature_format_suffix(ManifestSignatureFormat f) {
        return f >= 0 && f < _MANIFEST_SIGNATURE_FORMAT_MAX ? suffix_table[f] : NULL;
}

const char *manifest_signature_failure_to_string(ManifestSignatureFailure f) {
        return f >= 0 && f < _MANIFEST_SIGNATURE_FAILURE_MAX ? failure_table[f] : NULL;
}

/* ---- strict base64 ---- */

/* Standard base64 with padding, nothing else (no whitespace inside), into
 * out of out_max bytes. Returns the decoded length or -EINVAL (-E2BIG when
 * it does not fit). */
static ssize_t b64_decode(const char *in, size_t len, uint8_t *out, size_t out_max) {
        if (len == 0)
                return -EINVAL;
        if (len / 4 > out_max / 3 + 1) /* before anything is allocated */
                return -E2BIG;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t n;
        int r = base64_decode_strict(in, len, 0, &buf, &n);
        if (r < 0)
                return r;
        if (n > out_max)
                return -E2BIG;
        memcpy(out, buf, n);
        return (ssize_t)n;
}

/* ---- keys ---- */

int manifest_keyring_new(ManifestKeyring **ret, Error *err) {
        _cleanup_(manifest_keyring_freep) ManifestKeyring *k = calloc(1, sizeof *k);
        if (!k)
                return error_set(err, -ENOMEM, "out of memory");
        k->dl = dlopen(MANIFEST_CRYPTO_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (!k->dl)
                return error_set(err, -ELIBACC, "%s", dlerror());
#define CRYPTO_API_LOAD(name, member)                                                              \
        k->api.member = (__typeof__(name) *)dlsym(k->dl, #name);                                   \
        if (!k->api.member)                                                                        \
                return error_set(err, -ELIBACC, MANIFEST_CRYPTO_LIBRARY " has no " #name "()");
        CRYPTO_API_FUNCTIONS(CRYPTO_API_LOAD)
#undef CRYPTO_API_LOAD
        *ret = TAKE_PTR(k);
        return 0;
}

ManifestKeyring *manifest_keyring_free(ManifestKeyring *k) {
        if (!k)
                return NULL;
        for (size_t i = 0; i < k->n_keys; i++) {
                free(k->keys[i].name);
                k->api.pkey_free(k->keys[i].pkey);
        }
        free(k->keys);
        free(k);
        return NULL;
}

/* The first line of [p, end) without its LF (and a CR before it); *next
 * after it. */
static size_t next_line(const char **p, const char *end) {
        const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        *p = nl ? nl + 1 : end;
        if (e > s && e[-1] == '\r')
                e--;
        return (size_t)(e - s);
}

static int key_from_minisign(const CryptoApi *c, const char *name, const char *data, size_t size,
                             ManifestKey *ret, Error *err) {
        const char *p = data, *end = data + size;
        const char *l1 = p;
        size_t n1 = next_line(&p, end);
        if (n1 < 19 || memcmp(l1, "untrusted comment: ", 19) != 0)
                return error_set(err, -EINVAL, "\"%s\": not a minisign public key", name);
        const char *l2 = p;
        size_t n2 = next_line(&p, end);
        while (p < end && (*p == '\n' || *p == '\r'))
                p++;
        if (p != end)
                return error_set(err, -EINVAL, "\"%s\": text after the minisign public key", name);
        uint8_t raw[2 + MINISIGN_KEYID_SIZE + MINISIGN_PK_SIZE];
        ssize_t r = b64_decode(l2, n2, raw, sizeof raw);
        if (r != (ssize_t)sizeof raw || raw[0] != 'E' || raw[1] != 'd')
                return error_set(err, -EINVAL,
                                 "\"%s\": not a minisign Ed25519 public key (base64 of 42 bytes "
                                 "starting with \"Ed\")",
                                 name);
        EVP_PKEY *pkey = c->pkey_new_raw_public_key(
                EVP_PKEY_ED25519, NULL, raw + 2 + MINISIGN_KEYID_SIZE, MINISIGN_PK_SIZE);
        if (!pkey)
                return error_set(err, -EINVAL, "\"%s\": invalid Ed25519 key", name);
        *ret = (ManifestKey){ .kind = KEY_MINISIGN, .pkey = pkey };
        memcpy(ret->keyid, raw + 2, MINISIGN_KEYID_SIZE);
        return 0;
}

static int key_from_pem(const CryptoApi *c, const char *name, const char *data, size_t size,
                        ManifestKey *ret, Error *err) {
        if (size > INT32_MAX)
                return -EFBIG;
        BIO *bio = c->bio_new_mem_buf(data, (int)size);
        if (!bio)
                return -ENOMEM;
        EVP_PKEY *pkey = c->pem_read_bio_pubkey(bio, NULL, NULL, NULL);
        c->bio_free(bio);
        if (!pkey)
                return error_set(err, -EINVAL, "\"%s\": not a PEM public key", name);
        char group[64] = "";
        size_t glen = 0;
        if (c->pkey_get_base_id(pkey) != EVP_PKEY_EC ||
            c->pkey_get_utf8_string_param(pkey, "group", group, sizeof group, &glen) != 1 ||
            !streq(group, "prime256v1")) {
                c->pkey_free(pkey);
                return error_set(err, -EINVAL,
                                 "\"%s\": only ECDSA P-256 keys are accepted (cosign's)", name);
        }
        *ret = (ManifestKey){ .kind = KEY_ECDSA_P256, .pkey = pkey };
        return 0;
}

int manifest_keyring_add(ManifestKeyring *k, const char *name, const char *data, size_t size,
                         Error *err) {
        assert(k && name && (data || size == 0));
        ManifestKey key;
        int r;
        if (size >= 19 && memcmp(data, "untrusted comment: ", 19) == 0)
                r = key_from_minisign(&k->api, name, data, size, &key, err);
        else
                r = key_from_pem(&k->api, name, data, size, &key, err);
        if (r < 0)
                return r;
        key.name = strdup(name);
        ManifestKey *n = key.name ? reallocarray(k->keys, k->n_keys + 1, sizeof *n) : NULL;
        if (!n) {
                free(key.name);
                k->api.pkey_free(key.pkey);
                return -ENOMEM;
        }
        k->keys = n;
        k->keys[k->n_keys++] = key;
        return 0;
}

int manifest_keyring_add_file(ManifestKeyring *k, const char *path, Error *err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r = read_full_file_at(AT_FDCWD, path, MANIFEST_KEY_MAX_SIZE, &data, &size);
        if (r < 0)
                return error_set(err, r, "cannot read the public key \"%s\": %s", path,
                                 strerror(-r));
        return manifest_keyring_add(k, path, data, size, err);
}

static bool key_fits(const ManifestKey *key, ManifestSignatureFormat f) {
        return f == MANIFEST_SIGNATURE_MINISIGN ? key->kind == KEY_MINISIGN
                                                : key->kind == KEY_ECDSA_P256;
}

size_t manifest_keyring_count(const ManifestKeyring *k, ManifestSignatureFormat f) {
        size_t n = 0;
        for (size_t i = 0; k && i < k->n_keys; i++)
                n += key_fits(&k->keys[i], f);
        return n;
}

/* ---- primitives ---- */

/* 1 verified, 0 not, negative errno on failure to try. md NULL: Ed25519. */
static int evp_verify(const CryptoApi *c, EVP_PKEY *pkey, const EVP_MD *md, const void *msg,
                      size_t msg_len, const uint8_t *sig, size_t sig_len) {
        EVP_MD_CTX *ctx = c->md_ctx_new();
        if (!ctx)
                return -ENOMEM;
        int r = c->digest_verify_init(ctx, NULL, md, NULL, pkey) == 1 &&
                c->digest_verify(ctx, sig, sig_len, msg, msg_len) == 1;
        c->md_ctx_free(ctx);
        return r;
}

static int digest(const CryptoApi *c, const EVP_MD *md, const void *data, size_t len,
                  uint8_t *out) {
        unsigned n = 0;
        return c->digest(data, len, out, &n, md, NULL) == 1 ? (int)n : -EIO;
}

static int fail(ManifestSignatureFailure *ret_failure, ManifestSignatureFailure f) {
        if (ret_failure)
                *ret_failure = f;
        return f == MANIFEST_SIGNATURE_TOO_LARGE ? -EFBIG : -EBADMSG;
}

/* An ECDSA P-256 DER signature over the body, with each trusted key. */
static int verify_ecdsa(const ManifestKeyring *k, const char *body, size_t body_size,
                        const uint8_t *sig, size_t sig_len, const char **ret_key,
                        ManifestSignatureFailure *ret_failure, Error *err) {
        for (size_t i = 0; i < k->n_keys; i++) {
                if (!key_fits(&k->keys[i], MANIFEST_SIGNATURE_COSIGN))
                        continue;
                int r = evp_verify(&k->api, k->keys[i].pkey, k->api.sha256(), body, body_size, sig,
                                   sig_len);
                if (r < 0)
                        return error_set(err, r, "cannot verify: %s", strerror(-r));
                if (r > 0) {
                        if (ret_key)
                                *ret_key = k->keys[i].name;
                        return 0;
                }
        }
        (void)error_set(err, -EBADMSG,
                        "the signature does not verify with any of the %zu "
                        "trusted ECDSA key(s)",
                        manifest_keyring_count(k, MANIFEST_SIGNATURE_COSIGN));
        return fail(ret_failure, MANIFEST_SIGNATURE_BAD);
}

/* The bytes of sig without surrounding ASCII whitespace. */
static void trim(const char **s, size_t *len) {
        while (*len > 0 && strchr(" \t\r\n", (*s)[0]) && (*s)[0])
                (*s)++, (*len)--;
        while (*len > 0 && strchr(" \t\r\n", (*s)[*len - 1]) && (*s)[*len - 1])
                (*len)--;
}

static int verify_cosign(const ManifestKeyring *k, const char *body, size_t body_size,
                         const char *sig, size_t sig_size, const char **ret_key,
                         ManifestSignatureFailure *ret_failure, Error *err) {
        uint8_t der[256];
        trim(&sig, &sig_size);
        ssize_t n = b64_decode(sig, sig_size, der, sizeof der);
        if (n <= 0) {
                (void)error_set(err, -EBADMSG,
                                "the signature is not base64 of a DER ECDSA signature");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        return verify_ecdsa(k, body, body_size, der, (size_t)n, ret_key, ret_failure, err);
}

/* ---- Sigstore bundle ---- */

static const char *json_str(json_t *o, const char *key) {
        return json_string_value(json_object_get(o, key));
}

static int verify_bundle(const ManifestKeyring *k, const char *body, size_t body_size,
                         const char *sig, size_t sig_size, const char **ret_key,
                         ManifestSignatureFailure *ret_failure, Error *err) {
        json_error_t jerr;
        _cleanup_json_ json_t *j = json_loadb(sig, sig_size, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(j)) {
                (void)error_set(err, -EBADMSG, "the Sigstore bundle is not a JSON object");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        const char *mt = json_str(j, "mediaType");
        if (!mt || !(streq(mt, "application/vnd.dev.sigstore.bundle.v0.3+json") ||
                     streq(mt, "application/vnd.dev.sigstore.bundle+json;version=0.3"))) {
                (void)error_set(err, -EBADMSG,
                                "not a Sigstore bundle v0.3 (mediaType "
                                "application/vnd.dev.sigstore.bundle.v0.3+json)");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        json_t *vm = json_object_get(j, "verificationMaterial");
        if (!json_is_object(vm)) {
                (void)error_set(err, -EBADMSG, "the bundle has no verificationMaterial");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        if (json_object_get(vm, "certificate") || json_object_get(vm, "x509CertificateChain")) {
                (void)error_set(err, -EBADMSG,
                                "the bundle is signed with a certificate, whose check needs a "
                                "transparency log and a Fulcio root: none is configured, only "
                                "bundles signed with a key (verificationMaterial.publicKey) are "
                                "accepted");
                return fail(ret_failure, MANIFEST_SIGNATURE_TLOG);
        }
        if (!json_is_object(json_object_get(vm, "publicKey"))) {
                (void)error_set(err, -EBADMSG,
                                "the bundle names no key (verificationMaterial.publicKey)");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        json_t *ms = json_object_get(j, "messageSignature");
        const char *sig64 = json_str(ms, "signature");
        if (!sig64) {
                (void)error_set(err, -EBADMSG,
                                "the bundle has no messageSignature.signature (a DSSE envelope "
                                "is not accepted)");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        /* The digest the bundle claims is only compared: a bundle made for
         * other bytes is refused for that, and the signature is checked
         * over the body itself. */
        json_t *md = json_object_get(ms, "messageDigest");
        if (md) {
                const char *alg = json_str(md, "algorithm"), *d64 = json_str(md, "digest");
                uint8_t claimed[64], actual[32];
                ssize_t n = d64 ? b64_decode(d64, strlen(d64), claimed, sizeof claimed) : -EINVAL;
                if (!alg || !streq(alg, "SHA2_256") || n != 32) {
                        (void)error_set(err, -EBADMSG,
                                        "the bundle's messageDigest is not a SHA2_256 digest");
                        return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
                }
                if (digest(&k->api, k->api.sha256(), body, body_size, actual) != 32)
                        return error_set(err, -EIO, "cannot compute SHA-256");
                if (k->api.memcmp(claimed, actual, 32) != 0) {
                        (void)error_set(err, -EBADMSG,
                                        "the bundle is for other content (its messageDigest is "
                                        "not the body's SHA-256)");
                        return fail(ret_failure, MANIFEST_SIGNATURE_BAD);
                }
        }
        uint8_t der[256];
        ssize_t n = b64_decode(sig64, strlen(sig64), der, sizeof der);
        if (n <= 0) {
                (void)error_set(err, -EBADMSG,
                                "messageSignature.signature is not base64 of a DER signature");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        return verify_ecdsa(k, body, body_size, der, (size_t)n, ret_key, ret_failure, err);
}

/* ---- minisign ---- */

static int verify_minisign(const ManifestKeyring *k, const char *body, size_t body_size,
                           const char *sig, size_t sig_size, const char **ret_key,
                           ManifestSignatureFailure *ret_failure, Error *err) {
        const char *p = sig, *end = sig + sig_size;
        const char *l1 = p;
        size_t n1 = next_line(&p, end);
        const char *l2 = p;
        size_t n2 = next_line(&p, end);
        const char *l3 = p;
        size_t n3 = next_line(&p, end);
        const char *l4 = p;
        size_t n4 = next_line(&p, end);
        while (p < end && (*p == '\n' || *p == '\r'))
                p++;
        uint8_t raw[2 + MINISIGN_KEYID_SIZE + MINISIGN_SIG_SIZE], global[MINISIGN_SIG_SIZE];
        if (n1 < 19 || memcmp(l1, "untrusted comment: ", 19) != 0 || n3 < 17 ||
            memcmp(l3, "trusted comment: ", 17) != 0 || p != end ||
            n3 - 17 > MINISIGN_COMMENT_MAX ||
            b64_decode(l2, n2, raw, sizeof raw) != (ssize_t)sizeof raw ||
            b64_decode(l4, n4, global, sizeof global) != (ssize_t)sizeof global || raw[0] != 'E' ||
            (raw[1] != 'd' && raw[1] != 'D')) {
                (void)error_set(err, -EBADMSG, "not a minisign signature file");
                return fail(ret_failure, MANIFEST_SIGNATURE_MALFORMED);
        }
        const uint8_t *keyid = raw + 2, *s = raw + 2 + MINISIGN_KEYID_SIZE;
        const ManifestKey *key = NULL;
        for (size_t i = 0; i < k->n_keys && !key; i++)
                if (k->keys[i].kind == KEY_MINISIGN &&
                    memcmp(k->keys[i].keyid, keyid, MINISIGN_KEYID_SIZE) == 0)
                        key = &k->keys[i];
        if (!key) {
                (void)error_set(err, -EBADMSG,
                                "signed by minisign key %02X%02X%02X%02X%02X%02X%02X%02X, which "
                                "is not trusted",
                                keyid[7], keyid[6], keyid[5], keyid[4], keyid[3], keyid[2],
                                keyid[1], keyid[0]);
                return fail(ret_failure, MANIFEST_SIGNATURE_UNTRUSTED);
        }
        uint8_t hash[64];
        const void *msg = body;
        size_t msg_len = body_size;
        if (raw[1] == 'D') {
                if (digest(&k->api, k->api.blake2b512(), body, body_size, hash) != 64)
                        return error_set(err, -EIO, "cannot compute BLAKE2b-512");
                msg = hash;
                msg_len = sizeof hash;
        }
        int r = evp_verify(&k->api, key->pkey, NULL, msg, msg_len, s, MINISIGN_SIG_SIZE);
        if (r < 0)
                return error_set(err, r, "cannot verify: %s", strerror(-r));
        if (r == 0) {
                (void)error_set(err, -EBADMSG, "the minisign signature does not verify with \"%s\"",
                                key->name);
                return fail(ret_failure, MANIFEST_SIGNATURE_BAD);
        }
        /* The trusted comment is signed too: signature || comment text. */
        uint8_t gmsg[MINISIGN_SIG_SIZE + MINISIGN_COMMENT_MAX];
        memcpy(gmsg, s, MINISIGN_SIG_SIZE);
        memcpy(gmsg + MINISIGN_SIG_SIZE, l3 + 17, n3 - 17);
        r = evp_verify(&k->api, key->pkey, NULL, gmsg, MINISIGN_SIG_SIZE + n3 - 17, global,
                       sizeof global);
        if (r < 0)
                return error_set(err, r, "cannot verify: %s", strerror(-r));
        if (r == 0) {
                (void)error_set(err, -EBADMSG,
                                "the minisign trusted comment's signature does not verify with "
                                "\"%s\"",
                                key->name);
                return fail(ret_failure, MANIFEST_SIGNATURE_BAD);
        }
        if (ret_key)
                *ret_key = key->name;
        return 0;
}

int manifest_signature_verify(const ManifestKeyring *k, ManifestSignatureFormat f, const char *body,
                              size_t body_size, const char *sig, size_t sig_size,
                              const char **ret_key, ManifestSignatureFailure *ret_failure,
                              Error *err) {
        assert(k && (body || body_size == 0));
        if (sig_size > MANIFEST_SIGNATURE_MAX_SIZE) {
                (void)error_set(err, -EFBIG, "the signature is larger than the limit of %zu bytes",
                                MANIFEST_SIGNATURE_MAX_SIZE);
                return fail(ret_failure, MANIFEST_SIGNATURE_TOO_LARGE);
        }
        if (!sig || sig_size == 0) {
                (void)error_set(err, -EBADMSG, "the signature is empty");
                return fail(ret_failure, MANIFEST_SIGNATURE_UNSIGNED);
        }
        if (manifest_keyring_count(k, f) == 0) {
                (void)error_set(err, -EBADMSG, "no trusted key is of the kind %s signatures use",
                                manifest_signature_format_to_string(f));
                return fail(ret_failure, MANIFEST_SIGNATURE_UNTRUSTED);
        }
        switch (f) {
        case MANIFEST_SIGNATURE_COSIGN:
                return verify_cosign(k, body, body_size, sig, sig_size, ret_key, ret_failure, err);
        case MANIFEST_SIGNATURE_SIGSTORE_BUNDLE:
                return verify_bundle(k, body, body_size, sig, sig_size, ret_key, ret_failure, err);
        case MANIFEST_SIGNATURE_MINISIGN:
                return verify_minisign(k, body, body_size, sig, sig_size, ret_key, ret_failure,
                                       err);
        case _MANIFEST_SIGNATURE_FORMAT_MAX:
        case _MANIFEST_SIGNATURE_FORMAT_INVALID:
                break;
        }
        return -EINVAL;
}

/* ---- versions ---- */

static int parse_digits(const char **p, size_t n, int *ret) {
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                char c = (*p)[i];
                if (c < '0' || c > '9')
                        return -EINVAL;
                v = v * 10 + (c - '0');
        }
        *p += n;
        *ret = v;
        return 0;
}

int manifest_parse_rfc3339(const char *s, usec_t *ret) {
        int Y, M, D, h, m, sec;
        const char *p = s;
        if (!s || strlen(s) < 20 || parse_digits(&p, 4, &Y) < 0 || *p++ != '-' ||
            parse_digits(&p, 2, &M) < 0 || *p++ != '-' || parse_digits(&p, 2, &D) < 0 ||
            (*p != 'T' && *p != 't') || parse_digits((p++, &p), 2, &h) < 0 || *p++ != ':' ||
            parse_digits(&p, 2, &m) < 0 || *p++ != ':' || parse_digits(&p, 2, &sec) < 0)
                return -EINVAL;
        usec_t frac = 0;
        if (*p == '.') {
                p++;
                usec_t scale = 100000;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++) {
                        frac += (usec_t)(*p - '0') * scale;
                        scale /= 10;
                }
        }
        int64_t offset = 0;
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                int sign = *p++ == '-' ? -1 : 1, oh, om;
                if (parse_digits(&p, 2, &oh) < 0 || *p++ != ':' || parse_digits(&p, 2, &om) < 0 ||
                    oh > 23 || om > 59)
                        return -EINVAL;
                offset = sign * (int64_t)(oh * 3600 + om * 60);
        } else
                return -EINVAL;
        if (*p || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
                return -EINVAL;
        struct tm tm = { .tm_year = Y - 1900,
                         .tm_mon = M - 1,
                         .tm_mday = D,
                         .tm_hour = h,
                         .tm_min = m,
                         .tm_sec = sec };
        time_t t = timegm(&tm);
        /* timegm() normalizes 31 February into March: refuse that. */
        if (tm.tm_mday != D || tm.tm_mon != M - 1)
                return -EINVAL;
        int64_t secs = (int64_t)t - offset;
        if (secs < 0)
                return -EINVAL;
        *ret = (usec_t)secs * USEC_PER_SEC + frac;
        return 0;
}

static const char *annotation(const YamlNode *doc, const char *key) {
        YamlNode *ann = yaml_map_get(yaml_map_get(doc, "metadata"), "annotations");
        YamlNode *v = yaml_map_get(ann, key);
        return v && yaml_node_is_scalar(v) && v->str ? v->str : NULL;
}

int manifest_version_parse(const char *body, size_t size, size_t max_input, ManifestVersion *ret,
                           Error *err) {
        assert(ret);
        _cleanup_diagnostics_ Diagnostics diag;
        diagnostics_init(&diag);
        YamlLimits limits = { .max_input = max_input };
        YamlNode **docs = NULL;
        size_t n = 0;
        int r = yaml_parse_documents(body ? body : "", size, "body", &limits, &docs, &n, &diag);
        if (r < 0 || n == 0 || !docs[0] || docs[0]->type != YAML_NODE_MAP) {
                yaml_documents_free(docs, n);
                return error_set(err, -EBADMSG,
                                 "the signed body has no first document to carry its "
                                 "%s and %s annotations",
                                 MANIFEST_ANNOTATION_GENERATION, MANIFEST_ANNOTATION_EXPIRES);
        }
        const char *gen = annotation(docs[0], MANIFEST_ANNOTATION_GENERATION);
        const char *exp = annotation(docs[0], MANIFEST_ANNOTATION_EXPIRES);
        ManifestVersion v = {};
        char *e = NULL;
        r = 0;
        if (!gen)
                r = error_set(err, -EBADMSG,
                              "the signed body has no metadata.annotations[%s] on its first "
                              "document",
                              MANIFEST_ANNOTATION_GENERATION);
        else if (gen[0] < '0' || gen[0] > '9' || strlen(gen) > 19 ||
                 (errno = 0, v.generation = strtoull(gen, &e, 10), errno != 0 || *e))
                r = error_set(err, -EBADMSG, "%s is not a decimal number of at most 19 digits",
                              MANIFEST_ANNOTATION_GENERATION);
        else if (!exp)
                r = error_set(err, -EBADMSG,
                              "the signed body has no metadata.annotations[%s] on its first "
                              "document",
                              MANIFEST_ANNOTATION_EXPIRES);
        else if (manifest_parse_rfc3339(exp, &v.expires) < 0)
                r = error_set(err, -EBADMSG, "%s is not an RFC 3339 time",
                              MANIFEST_ANNOTATION_EXPIRES);
        yaml_documents_free(docs, n);
        if (r < 0)
                return r;
        char hex[65];
        if (sha256_hex(body ? body : "", size, hex) < 0)
                return error_set(err, -EIO, "cannot compute SHA-256");
        for (size_t i = 0; i < sizeof v.sha256; i++) {
                unsigned b = 0;
                (void)sscanf(hex + 2 * i, "%2x", &b);
                v.sha256[i] = (uint8_t)b;
        }
        *ret = v;
        return 0;
}

int manifest_version_check(const ManifestGenerationRecord *rec, const ManifestVersion *v,
                           usec_t now, ManifestSignatureFailure *ret_failure, Error *err) {
        assert(rec && v);
        if (rec->have && v->generation < rec->generation) {
                (void)error_set(err, -EPERM,
                                "generation %" PRIu64 " is older than generation %" PRIu64
                                ", already accepted: refused as a rollback",
                                v->generation, rec->generation);
                fail(ret_failure, MANIFEST_SIGNATURE_ROLLBACK);
                return -EPERM;
        }
        if (rec->have && v->generation == rec->generation &&
            memcmp(v->sha256, rec->sha256, sizeof v->sha256) != 0) {
                (void)error_set(err, -EPERM,
                                "generation %" PRIu64 " was already accepted with other content: "
                                "a changed document needs a higher generation",
                                v->generation);
                fail(ret_failure, MANIFEST_SIGNATURE_ROLLBACK);
                return -EPERM;
        }
        if (now >= v->expires) {
                char when[32];
                (void)error_set(err, -EPERM, "generation %" PRIu64 " expired at %s", v->generation,
                                format_rfc3339(when, sizeof when, v->expires));
                fail(ret_failure, MANIFEST_SIGNATURE_EXPIRED);
                return -EPERM;
        }
        return 0;
}
