/* The signature check of the URL source (docs/fleet.md): for each body the
 * URL source receives, a fresh GET of its signature (never a conditional
 * one, so a cached signature is never paired with a new body), the
 * verification (manifest-signature.h), the rollback and expiry checks
 * against the generation record (manifest-generation.h), and the
 * nanolet_manifest_signature_failures_total{reason} counter.
 *
 * One check is under way at most: the URL source starts no GET while
 * url_verifier_busy(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "error.h"
#include "event-curl.h"
#include "manifest-signature.h"
#include "metrics.h"

typedef struct UrlVerifier UrlVerifier;

typedef struct UrlVerifierOptions {
        const char *url;        /* the manifest URL */
        char *const *headers;   /* sent to the signature URL only at url's origin */
        char *const *key_files; /* trusted public keys; at least one */
        ManifestSignatureFormat format;
        const char *signature_url; /* NULL: url + the format's suffix */
        const char *state_path;    /* the generation record; NULL: kept in memory only */
        size_t max_body;           /* the manifest limit, for the annotation parse */
        usec_t timeout;            /* of the signature GET; 0: 10 s */
        Metrics *metrics;          /* not owned; NULL: not counted */
} UrlVerifierOptions;

/* r: 0 when body (size bytes, handed back, the callee owns it) is signed by
 * a trusted key, not older than the record and not expired; otherwise a
 * negative errno, and d holds the refusal (field "signature"), followed by
 * the expiry of the running document when it has expired meanwhile. */
typedef void (*url_verifier_done_t)(UrlVerifier *v, int r, char *body, size_t size,
                                    const Diagnostics *d, void *userdata);

/* Loads the keys (every one must load: a typo in a key file stops the
 * agent rather than trusting fewer keys than configured) and the record
 * (an unusable record file is logged and treated as none). */
int url_verifier_new(UrlVerifier **ret, EventCurl *curl, const UrlVerifierOptions *opts,
                     Error *err);
UrlVerifier *url_verifier_free(UrlVerifier *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(UrlVerifier *, url_verifier_free)

/* Takes body (malloc()ed) and starts the check; done() runs later, from
 * the loop, unless the start fails (a negative errno; body is freed). */
int url_verifier_start(UrlVerifier *v, char *body, size_t size, url_verifier_done_t done,
                       void *userdata);
bool url_verifier_busy(const UrlVerifier *v);
/* The body of the last successful check was applied: it becomes the
 * current document and its generation is recorded. */
void url_verifier_accept(UrlVerifier *v);
/* The generation of the current document, when there is one. */
bool url_verifier_current_generation(const UrlVerifier *v, uint64_t *ret);
/* Whether the current document has expired at now (CLOCK_REALTIME): 0, or
 * -EPERM with the error in d (and counted). */
int url_verifier_check_current(UrlVerifier *v, usec_t now, Diagnostics *d);
