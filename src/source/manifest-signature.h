/* Signed manifests (docs/fleet.md): the keys an operator trusts and the
 * verification of a manifest body against a detached signature, with
 * libcrypto alone and no network.
 *
 * Formats:
 * 1. cosign: `cosign sign-blob --key` (or `openssl dgst -sha256 -sign`):
 *    base64 of an ASN.1 DER ECDSA P-256 signature over the body's SHA-256.
 * 2. Sigstore bundle v0.3 (application/vnd.dev.sigstore.bundle.v0.3+json)
 *    signed with a key (verificationMaterial.publicKey): the same ECDSA
 *    signature in messageSignature.signature. The digest is computed here
 *    from the body; messageSignature.messageDigest is only compared with
 *    it, never trusted. A bundle that carries a certificate needs a
 *    transparency log and a Fulcio root to be checked, and none is
 *    configured: it is refused (reason "tlog").
 * 3. minisign: Ed25519 over the body ("Ed") or over its BLAKE2b-512
 *    ("ED", minisign's default), the key id of the signature matching a
 *    trusted key, and the global signature over signature || trusted
 *    comment.
 *
 * The body says which version it is: its first document's
 * metadata.annotations nanolet.io/generation (a decimal number) and
 * nanolet.io/expires (RFC 3339). They are read only after the signature
 * has verified, and bound to it like every other byte of the body.
 *
 * Everything here is pure: no I/O but manifest_keyring_add_file() and the
 * loading of libcrypto. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "error.h"
#include "time-util.h"

typedef enum ManifestSignatureFormat {
        MANIFEST_SIGNATURE_COSIGN,
        MANIFEST_SIGNATURE_SIGSTORE_BUNDLE,
        MANIFEST_SIGNATURE_MINISIGN,
        _MANIFEST_SIGNATURE_FORMAT_MAX,
        _MANIFEST_SIGNATURE_FORMAT_INVALID = -EINVAL,
} ManifestSignatureFormat;

/* "cosign", "sigstore-bundle", "minisign". */
const char *manifest_signature_format_to_string(ManifestSignatureFormat f);
ManifestSignatureFormat manifest_signature_format_from_string(const char *s);
/* Where the signature of a body at URL u is fetched from by default:
 * u + ".sig", ".sigstore.json" or ".minisig". */
const char *manifest_signature_format_suffix(ManifestSignatureFormat f);

/* Why a body was not accepted: the reason label of
 * nanolet_manifest_signature_failures_total. */
typedef enum ManifestSignatureFailure {
        MANIFEST_SIGNATURE_UNSIGNED,    /* no signature could be fetched */
        MANIFEST_SIGNATURE_TOO_LARGE,   /* signature above its limit */
        MANIFEST_SIGNATURE_MALFORMED,   /* the signature does not parse */
        MANIFEST_SIGNATURE_UNTRUSTED,   /* made by no trusted key (minisign key id) */
        MANIFEST_SIGNATURE_BAD,         /* does not verify with any trusted key */
        MANIFEST_SIGNATURE_TLOG,        /* a bundle that needs a transparency log */
        MANIFEST_SIGNATURE_UNVERSIONED, /* no valid generation or expiry in the body */
        MANIFEST_SIGNATURE_ROLLBACK,    /* an older generation, or the same one changed */
        MANIFEST_SIGNATURE_EXPIRED,     /* past nanolet.io/expires */
        MANIFEST_SIGNATURE_STATE,       /* the generation could not be recorded */
        _MANIFEST_SIGNATURE_FAILURE_MAX,
        _MANIFEST_SIGNATURE_FAILURE_INVALID = -EINVAL,
} ManifestSignatureFailure;

/* "unsigned", "too-large", "malformed", "untrusted", "bad", "tlog",
 * "unversioned", "rollback", "expired", "state". */
const char *manifest_signature_failure_to_string(ManifestSignatureFailure f);

/* Largest signature file accepted (a bundle is the largest: about 1 KiB). */
#define MANIFEST_SIGNATURE_MAX_SIZE ((size_t)64 * 1024)

#define MANIFEST_ANNOTATION_GENERATION "nanolet.io/generation"
#define MANIFEST_ANNOTATION_EXPIRES "nanolet.io/expires"

typedef struct ManifestKeyring ManifestKeyring;

/* The soname loaded (with dlopen(), on the first keyring); named in
 * error messages. */
#define MANIFEST_CRYPTO_LIBRARY "libcrypto.so.3"

/* Loads libcrypto: -ELIBACC with dlerror()'s sentence in err when it or
 * one of its functions is missing. */
int manifest_keyring_new(ManifestKeyring **ret, Error *err);
ManifestKeyring *manifest_keyring_free(ManifestKeyring *k);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManifestKeyring *, manifest_keyring_free)

/* Adds the public key in data: a PEM SubjectPublicKeyInfo of an ECDSA
 * P-256 key (cosign.pub, `openssl ec -pubout`), or a minisign public key
 * file (an "untrusted comment:" line, then base64 of "Ed", the 8-byte key
 * id and the 32-byte Ed25519 key). name (the file's path) names the key in
 * messages. -EINVAL with err saying why for anything else. */
int manifest_keyring_add(ManifestKeyring *k, const char *name, const char *data, size_t size,
                         Error *err);
/* The same from a file (at most 64 KiB). */
int manifest_keyring_add_file(ManifestKeyring *k, const char *path, Error *err);
/* Keys usable for format f. */
size_t manifest_keyring_count(const ManifestKeyring *k, ManifestSignatureFormat f);

/* Verifies body against sig (the signature file's bytes, format f) with
 * every trusted key of that kind. 0 when one verifies (its name in
 * *ret_key, optional, owned by k); otherwise a negative errno, the reason
 * in *ret_failure and one sentence in err. */
int manifest_signature_verify(const ManifestKeyring *k, ManifestSignatureFormat f, const char *body,
                              size_t body_size, const char *sig, size_t sig_size,
                              const char **ret_key, ManifestSignatureFailure *ret_failure,
                              Error *err);

/* What a verified body says about itself. */
typedef struct ManifestVersion {
        uint64_t generation;
        usec_t expires; /* CLOCK_REALTIME */
        uint8_t sha256[32];
} ManifestVersion;

/* Reads the two annotations of the first document of body (which must be
 * a mapping; a List's own metadata, not an item's) and the body's SHA-256.
 * -EBADMSG with err saying what is missing or wrong. max_input bounds the
 * YAML parse as the manifest parser's own limit does. */
int manifest_version_parse(const char *body, size_t size, size_t max_input, ManifestVersion *ret,
                           Error *err);

/* The highest generation accepted so far for a URL (have: false when none
 * is known). */
typedef struct ManifestGenerationRecord {
        bool have;
        uint64_t generation;
        uint8_t sha256[32];
} ManifestGenerationRecord;

/* Whether a verified body of version v may replace what runs, at now:
 * refused (ROLLBACK) when its generation is lower than the record's, or
 * the same with other bytes; refused (EXPIRED) when now is past its
 * expiry. 0 or -EPERM with *ret_failure and err. */
int manifest_version_check(const ManifestGenerationRecord *rec, const ManifestVersion *v,
                           usec_t now, ManifestSignatureFailure *ret_failure, Error *err);

/* RFC 3339 ("2026-01-02T03:04:05Z", "...05.5+02:00") to CLOCK_REALTIME
 * microseconds; -EINVAL for anything else, or before 1970. */
int manifest_parse_rfc3339(const char *s, usec_t *ret);
