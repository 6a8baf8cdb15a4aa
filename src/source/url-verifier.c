/* The URL source's signature check (url-verifier.h). The signature GET
 * follows no redirect (a signature is fetched from where the operator
 * said), sends no validators, and is capped at MANIFEST_SIGNATURE_MAX_SIZE
 * bytes however the server announces it. */
#include "url-verifier.h"

#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "log.h"
#include "manifest-generation.h"
#include "source.h"
#include "string-util.h"
#include "strv.h"

#define URL_VERIFIER_DEFAULT_TIMEOUT (10 * USEC_PER_SEC)

struct UrlVerifier {
        EventCurl *curl; /* not owned */
        char *url, *signature_url, *state_path;
        char **headers;
        ManifestKeyring *keys;
        ManifestSignatureFormat format;
        size_t max_body;
        usec_t timeout;
        MetricFamily *failures; /* {reason} */

        ManifestGenerationRecord record; /* the highest accepted */
        bool have_current;
        ManifestVersion current, pending;

        /* the check under way */
        CURL *easy;
        struct curl_slist *req_headers;
        char errbuf[CURL_ERROR_SIZE];
        char *body, *sig;
        size_t body_size, sig_len, sig_cap;
        bool sig_too_large;
        url_verifier_done_t done;
        void *userdata;
};

static void url_verifier_count(UrlVerifier *v, ManifestSignatureFailure f) {
        metric_inc(v->failures, METRIC_LABELS(manifest_signature_failure_to_string(f)));
}

int url_verifier_new(UrlVerifier **ret, EventCurl *curl, const UrlVerifierOptions *opts,
                     Error *err) {
        assert(ret && curl && opts && opts->url);
        _cleanup_(url_verifier_freep) UrlVerifier *v = calloc(1, sizeof *v);
        if (!v)
                return -ENOMEM;
        v->curl = curl;
        v->format = opts->format;
        v->max_body = opts->max_body;
        v->timeout = opts->timeout > 0 ? opts->timeout : URL_VERIFIER_DEFAULT_TIMEOUT;
        const char *suffix = manifest_signature_format_suffix(opts->format);
        if (!suffix)
                return error_set(err, -EINVAL, "unknown signature format");
        if (!(v->url = strdup(opts->url)) ||
            (opts->state_path && !(v->state_path = strdup(opts->state_path))) ||
            !(v->signature_url = opts->signature_url ? strdup(opts->signature_url)
                                                     : strprintf("%s%s", opts->url, suffix)) ||
            (opts->headers && !(v->headers = strv_copy(opts->headers))))
                return -ENOMEM;
        int r = manifest_keyring_new(&v->keys, err);
        if (r < 0)
                return r;
        STRV_FOREACH(k, opts->key_files) {
                r = manifest_keyring_add_file(v->keys, *k, err);
                if (r < 0)
                        return r;
        }
        if (manifest_keyring_count(v->keys, v->format) == 0)
                return error_set(err, -EINVAL,
                                 "none of the public keys can check %s signatures (cosign and "
                                 "sigstore-bundle take ECDSA P-256 PEM keys, minisign its own "
                                 "key files)",
                                 manifest_signature_format_to_string(v->format));

        Error e = {};
        r = v->state_path ? manifest_generation_load(v->state_path, v->url, &v->record, &e) : 0;
        if (r < 0) {
                log_warning("Cannot use the generation record: %s; starting without one: the "
                            "next valid signed generation is accepted and recorded.",
                            e.message);
                v->record = (ManifestGenerationRecord){};
        } else if (v->record.have)
                log_info("Manifest URL \"%s\": generation %" PRIu64 " accepted before.", v->url,
                         v->record.generation);

        r = metrics_register(opts->metrics, &v->failures, METRIC_COUNTER,
                             "nanolet_manifest_signature_failures_total",
                             "Manifest URL bodies not applied for their signature, by reason: "
                             "unsigned, too-large, malformed, untrusted, bad, tlog, unversioned, "
                             "rollback, expired (also counted each poll while the current "
                             "document is past its expiry), state.",
                             (const char *const[]){ "reason", NULL }, NULL, 0);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(v);
        return 0;
}

static void url_verifier_reset(UrlVerifier *v) {
        const CurlApi *c = event_curl_api(v->curl);
        if (v->easy) {
                event_curl_remove(v->curl, v->easy);
                c->easy_cleanup(v->easy);
                v->easy = NULL;
        }
        if (v->req_headers) {
                c->slist_free_all(v->req_headers);
                v->req_headers = NULL;
        }
        free(v->body);
        free(v->sig);
        v->body = v->sig = NULL;
        v->body_size = v->sig_len = v->sig_cap = 0;
        v->sig_too_large = false;
        v->done = NULL;
}

UrlVerifier *url_verifier_free(UrlVerifier *v) {
        if (!v)
                return NULL;
        url_verifier_reset(v);
        manifest_keyring_free(v->keys);
        strv_free(v->headers);
        free(v->url);
        free(v->signature_url);
        free(v->state_path);
        free(v);
        return NULL;
}

bool url_verifier_busy(const UrlVerifier *v) {
        return v && v->done;
}

static size_t url_verifier_on_data(char *data, size_t size, size_t nmemb, void *userdata) {
        UrlVerifier *v = userdata;
        size_t n = size * nmemb;
        if (n > MANIFEST_SIGNATURE_MAX_SIZE - v->sig_len) {
                v->sig_too_large = true;
                return 0;
        }
        if (strbuf_append(&v->sig, &v->sig_len, &v->sig_cap, data, n) < 0)
                return 0;
        return n;
}

/* Ends the check: hands the body back with r and, on failure, msg. */
static void url_verifier_finish(UrlVerifier *v, int r, ManifestSignatureFailure f,
                                const char *msg) {
        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        if (r < 0) {
                url_verifier_count(v, f);
                diagnostics_add(&d, DIAG_ERROR, v->url, 0, 0, "signature", "%s (%s)",
                                msg && msg[0] ? msg : strerror(-r),
                                manifest_signature_failure_to_string(f));
                /* The running document's own expiry, unless that is what
                 * was just said. */
                if (f != MANIFEST_SIGNATURE_EXPIRED)
                        (void)url_verifier_check_current(v, now_usec(CLOCK_REALTIME), &d);
        }
        url_verifier_done_t done = v->done;
        void *userdata = v->userdata;
        char *body = TAKE_PTR(v->body);
        size_t size = v->body_size;
        url_verifier_reset(v);
        done(v, r, body, size, &d, userdata);
}

static void url_verifier_check(UrlVerifier *v) {
        Error err = {};
        ManifestSignatureFailure f = MANIFEST_SIGNATURE_BAD;
        const char *key = NULL;
        int r = manifest_signature_verify(v->keys, v->format, v->body, v->body_size, v->sig,
                                          v->sig_len, &key, &f, &err);
        if (r < 0) {
                url_verifier_finish(v, r, f, err.message);
                return;
        }
        /* Only bytes that verified are parsed, here for the annotations. */
        r = manifest_version_parse(v->body, v->body_size, v->max_body, &v->pending, &err);
        if (r < 0) {
                url_verifier_finish(v, r, MANIFEST_SIGNATURE_UNVERSIONED, err.message);
                return;
        }
        r = manifest_version_check(&v->record, &v->pending, now_usec(CLOCK_REALTIME), &f, &err);
        if (r < 0) {
                url_verifier_finish(v, r, f, err.message);
                return;
        }
        log_debug("Manifest URL \"%s\": generation %" PRIu64 " signed by \"%s\".", v->url,
                  v->pending.generation, key);
        url_verifier_finish(v, 0, f, NULL);
}

static void url_verifier_on_done(EventCurl *ec, CURL *easy, CURLcode result, void *userdata) {
        UrlVerifier *v = userdata;
        const CurlApi *c = event_curl_api(ec);
        long status = 0;
        assert(easy == v->easy);
        if (result == CURLE_OK)
                (void)c->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        c->easy_cleanup(easy);
        v->easy = NULL;
        _cleanup_free_ char *msg = NULL;

        if (v->sig_too_large || result == CURLE_FILESIZE_EXCEEDED)
                msg = strprintf("the signature \"%s\" is larger than the limit of %zu bytes",
                                v->signature_url, MANIFEST_SIGNATURE_MAX_SIZE);
        else if (result != CURLE_OK)
                msg = strprintf("cannot fetch the signature \"%s\": %s", v->signature_url,
                                v->errbuf[0] ? v->errbuf : c->easy_strerror(result));
        else if (status < 200 || status > 299)
                /* A 304 too: the GET had no validators, so it cannot
                 * vouch for a signature fetched before. */
                msg = strprintf("the signature \"%s\" answered HTTP status %ld%s", v->signature_url,
                                status,
                                (status >= 301 && status <= 303) || status == 307 || status == 308
                                        ? " (signature URLs are fetched "
                                          "without following redirects)"
                                        : "");
        else {
                url_verifier_check(v);
                return;
        }
        url_verifier_finish(v, -EBADMSG,
                            v->sig_too_large || result == CURLE_FILESIZE_EXCEEDED
                                    ? MANIFEST_SIGNATURE_TOO_LARGE
                                    : MANIFEST_SIGNATURE_UNSIGNED,
                            msg ? msg : "out of memory");
}

int url_verifier_start(UrlVerifier *v, char *body, size_t size, url_verifier_done_t done,
                       void *userdata) {
        assert(v && done);
        url_verifier_reset(v);
        v->body = body;
        v->body_size = size;
        v->errbuf[0] = 0;

        const CurlApi *c = event_curl_api(v->curl);
        int r = url_same_origin(c, v->url, v->signature_url);
        struct curl_slist *l = NULL;
        STRV_FOREACH(h, r > 0 ? v->headers : NULL) {
                struct curl_slist *n = c->slist_append(l, *h);
                if (!n) {
                        c->slist_free_all(l);
                        url_verifier_reset(v);
                        return -ENOMEM;
                }
                l = n;
        }
        v->req_headers = l;
        CURL *easy = c->easy_init();
        bool ok = easy && c->easy_setopt(easy, CURLOPT_URL, v->signature_url) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_TIMEOUT_MS,
                                 (long)MAX(v->timeout / USEC_PER_MSEC, (usec_t)1)) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE,
                                 (curl_off_t)MANIFEST_SIGNATURE_MAX_SIZE) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_ERRORBUFFER, v->errbuf) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_HTTPHEADER, l) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_USERAGENT, "nanolet/" NANOLET_VERSION) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_WRITEFUNCTION, url_verifier_on_data) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_WRITEDATA, v) == CURLE_OK;
        r = !easy ? -ENOMEM
            : !ok ? -EINVAL
                  : event_curl_add(v->curl, easy, url_verifier_on_done, v);
        if (r < 0) {
                if (easy)
                        c->easy_cleanup(easy);
                url_verifier_reset(v);
                return r;
        }
        v->easy = easy;
        v->done = done;
        v->userdata = userdata;
        return 0;
}

void url_verifier_accept(UrlVerifier *v) {
        assert(v);
        v->current = v->pending;
        v->have_current = true;
        if (v->record.have && v->record.generation == v->current.generation)
                return;
        v->record = (ManifestGenerationRecord){ .have = true, .generation = v->current.generation };
        memcpy(v->record.sha256, v->current.sha256, sizeof v->record.sha256);
        Error err = {};
        if (v->state_path &&
            manifest_generation_store(v->state_path, v->url, &v->record, &err) < 0) {
                /* The record in memory still refuses older generations
                 * until the agent restarts. */
                url_verifier_count(v, MANIFEST_SIGNATURE_STATE);
                log_error("Cannot record generation %" PRIu64 " of \"%s\": %s",
                          v->record.generation, v->url, err.message);
        }
}

bool url_verifier_current_generation(const UrlVerifier *v, uint64_t *ret) {
        assert(v && ret);
        if (!v->have_current)
                return false;
        *ret = v->current.generation;
        return true;
}

int url_verifier_check_current(UrlVerifier *v, usec_t now, Diagnostics *d) {
        assert(v && d);
        if (!v->have_current || now < v->current.expires)
                return 0;
        char when[32];
        url_verifier_count(v, MANIFEST_SIGNATURE_EXPIRED);
        diagnostics_add(d, DIAG_ERROR, v->url, 0, 0, "signature",
                        "generation %" PRIu64 " expired at %s and no newer one could be accepted: "
                        "its pods keep running (expired)",
                        v->current.generation,
                        format_rfc3339(when, sizeof when, v->current.expires));
        return -EPERM;
}
