/* URL source (docs/manifests.md): pods from --manifest-url, polled.
 *
 * libcurl's multi interface runs inside the event loop (its sockets become
 * io sources, its timeout a timer source), so a slow or dead server never
 * blocks anything else. One GET is in flight at most; when the next one
 * starts, counted from the end of the previous one, is poll-schedule.h's
 * decision: a random first wait, the period spread ±20 %, a capped back-off
 * after failures, and Retry-After. The transfers share the multi handle's
 * connection cache, so one kept-alive connection serves poll after poll.
 * Whatever goes wrong (transport, status, empty or unparsable body)
 * changes nothing: the pods keep running, the error is logged, counted and
 * handed to the PodConfig as the origin's error.
 *
 * Redirects are followed here rather than by libcurl (which re-sends every
 * custom header to whatever host a redirect names, and follows https to
 * http): at most URL_SOURCE_MAX_REDIRECTS, only to http or https, never from
 * https back to http, and --manifest-url-header values only to the
 * configured URL's origin (scheme, host and port). */
#include "source.h"

#include <assert.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "config.h"
#include "event-curl.h"
#include "log.h"
#include "poll-schedule.h"
#include "string-util.h"
#include "strv.h"

#define URL_SOURCE_DEFAULT_CHECK_FREQUENCY (20 * USEC_PER_SEC)
#define URL_SOURCE_DEFAULT_TIMEOUT (10 * USEC_PER_SEC)
#define URL_SOURCE_DEFAULT_MAX_BODY ((size_t)10 * 1024 * 1024)
#define URL_SOURCE_MAX_REDIRECTS 5U

struct UrlSource {
        Event *event;
        PodConfig *config;
        char *url;
        char **headers;
        char *node_name;
        usec_t check_frequency, timeout;
        size_t max_body;
        void (*synced)(void *userdata);
        void *synced_userdata;
        bool synced_once;
        MetricFamily *fetches;      /* {result} */
        MetricFamily *last_success; /* {source}: the time of the last good fetch */

        EventCurl *curl;
        CURL *easy;                     /* the GET in flight; NULL between polls */
        char *request_url;              /* its URL: the configured one or a redirect's */
        unsigned n_redirects;           /* followed in this poll */
        struct curl_slist *req_headers; /* its request headers */
        char errbuf[CURL_ERROR_SIZE];
        EventSource *poll_timer; /* the next GET */
        usec_t next_wait;        /* its delay, when it was scheduled */
        PollSchedule schedule;
        bool poll_failed;       /* the poll under way has failed */
        unsigned poll_connects; /* new connections it needed (0: one was reused) */

        /* the response being received */
        char *body;
        size_t body_len, body_cap;
        bool body_too_large;
        char *resp_etag, *resp_last_modified, *resp_date, *resp_retry_after;

        /* the last accepted body */
        bool have_content;
        char *etag, *last_modified;
        ManifestObject **objs;
        size_t n_objs;

        bool has_error;
        char *logged_error;
        unsigned error_count;

        UrlVerifier *verifier; /* signed manifests; NULL: not checked */
};

/* ---- redirect policy ---- */

typedef struct UrlOrigin {
        const CurlApi *c; /* frees the strings */
        char *scheme, *host, *port;
} UrlOrigin;

static void url_origin_done(UrlOrigin *o) {
        if (o->c) {
                o->c->free(o->scheme);
                o->c->free(o->host);
                o->c->free(o->port);
        }
        *o = (UrlOrigin){};
}

static int url_origin_parse(const CurlApi *c, const char *url, UrlOrigin *ret) {
        CURLU *u = c->url();
        UrlOrigin o = { .c = c };
        if (!u)
                return -ENOMEM;
        /* libcurl lowercases the scheme; the port is filled in from it. */
        bool ok = c->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
                  c->url_get(u, CURLUPART_SCHEME, &o.scheme, 0) == CURLUE_OK &&
                  c->url_get(u, CURLUPART_HOST, &o.host, 0) == CURLUE_OK &&
                  c->url_get(u, CURLUPART_PORT, &o.port, CURLU_DEFAULT_PORT) == CURLUE_OK;
        c->url_cleanup(u);
        if (!ok) {
                url_origin_done(&o);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

int url_same_origin(const CurlApi *c, const char *a, const char *b) {
        _cleanup_(url_origin_done) UrlOrigin oa = {}, ob = {};
        int r = url_origin_parse(c, a, &oa);
        if (r < 0)
                return r;
        r = url_origin_parse(c, b, &ob);
        if (r < 0)
                return r;
        return streq(oa.scheme, ob.scheme) && strcasecmp(oa.host, ob.host) == 0 &&
               streq(oa.port, ob.port);
}

/* The scheme of url, lowercase; free it with c->free(). */
static int url_scheme(const CurlApi *c, const char *url, char **ret) {
        CURLU *u = c->url();
        if (!u)
                return -ENOMEM;
        bool ok = c->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
                  c->url_get(u, CURLUPART_SCHEME, ret, 0) == CURLUE_OK;
        c->url_cleanup(u);
        return ok ? 0 : -EINVAL;
}

int url_redirect_check(const CurlApi *c, const char *from, const char *to) {
        char *f = NULL, *t = NULL;
        int r = url_scheme(c, from, &f);
        if (r >= 0)
                r = url_scheme(c, to, &t);
        if (r >= 0 && !(streq(t, "https") || (streq(t, "http") && !streq(f, "https"))))
                r = -EPERM;
        c->free(f);
        c->free(t);
        return r;
}

/* ---- libcurl callbacks ---- */

static size_t url_source_on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        UrlSource *s = userdata;
        size_t n = size * nmemb;
        /* CURLOPT_MAXFILESIZE only helps when the server announces a length. */
        if (n > s->max_body - s->body_len) {
                s->body_too_large = true;
                return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
        }
        if (strbuf_append(&s->body, &s->body_len, &s->body_cap, data, n) < 0)
                return 0;
        return n;
}

static char *header_value(const char *line, size_t len, const char *name) {
        size_t l = strlen(name);
        if (len <= l || strncasecmp(line, name, l) != 0 || line[l] != ':')
                return NULL;
        const char *v = line + l + 1, *end = line + len;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
                end--;
        return end > v ? strndup(v, (size_t)(end - v)) : NULL;
}

static bool last_modified_is_racy(const CurlApi *c, const char *last_modified, const char *date) {
        time_t lm = c->getdate(last_modified, NULL);
        time_t now = date ? c->getdate(date, NULL) : -1;
        if (lm < 0)
                return true;
        if (now < 0)
                now = time(NULL);
        return lm >= now - 1;
}

static size_t url_source_on_header(char *data, size_t size, size_t nmemb, void *userdata) {
        UrlSource *s = userdata;
        size_t n = size * nmemb;

        /* A new status line starts a new response (after a redirect): only
         * the final response's validators count. */
        if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
                free(s->resp_etag);
                free(s->resp_last_modified);
                free(s->resp_date);
                free(s->resp_retry_after);
                s->resp_etag = s->resp_last_modified = s->resp_date = s->resp_retry_after = NULL;
                return n;
        }
        char *v = header_value(data, n, "ETag");
        if (v) {
                free(s->resp_etag);
                s->resp_etag = v;
        } else if ((v = header_value(data, n, "Last-Modified"))) {
                free(s->resp_last_modified);
                s->resp_last_modified = v;
        } else if ((v = header_value(data, n, "Date"))) {
                free(s->resp_date);
                s->resp_date = v;
        } else if ((v = header_value(data, n, "Retry-After"))) {
                free(s->resp_retry_after);
                s->resp_retry_after = v;
        }
        return n;
}

/* ---- results ---- */

static void url_source_commit(UrlSource *s) {
        int r = pod_config_commit(s->config);
        if (r < 0)
                log_error_errno(r, "Failed to apply the pods of \"%s\": %m", s->url);
}

static void url_source_fail(UrlSource *s, Diagnostics *d) {
        s->error_count++;
        s->has_error = true;
        s->poll_failed = true;

        _cleanup_free_ char *text = NULL;
        size_t len = 0, cap = 0;
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (line && (strbuf_append(&text, &len, &cap, line, strlen(line)) < 0 ||
                             strbuf_append(&text, &len, &cap, "\n", 1) < 0))
                        break;
        }
        /* The same failure every poll is logged once at warning level. */
        bool repeat = text && s->logged_error && streq(text, s->logged_error);
        log_full(repeat ? LOG_DEBUG : LOG_WARNING,
                 "Manifest URL \"%s\" failed (error #%u), keeping its current pods:", s->url,
                 s->error_count);
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (line)
                        log_full(repeat ? LOG_DEBUG : LOG_WARNING, "  %s", line);
        }
        if (!repeat) {
                free(s->logged_error);
                s->logged_error = TAKE_PTR(text);
        }

        int r = pod_config_set_origin_error(s->config, "http", s->url, d);
        if (r < 0)
                log_error_errno(r, "Failed to record the error of \"%s\": %m", s->url);
        url_source_commit(s);
}

static void url_source_failf(UrlSource *s, const char *fmt, ...) _printf_(2, 3);
static void url_source_failf(UrlSource *s, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = strvprintf(fmt, ap);
        va_end(ap);

        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        diagnostics_add(&d, DIAG_ERROR, s->url, 0, 0, NULL, "%s", msg ?: "out of memory");
        url_source_fail(s, &d);
}

/* A fetch that left the source current: a body accepted, or a 304 for the
 * one we have. */
static void url_source_mark_success(UrlSource *s) {
        metric_set(s->last_success, METRIC_LABELS("http"),
                   (double)now_usec(CLOCK_REALTIME) / (double)USEC_PER_SEC);
}

static void url_source_succeed(UrlSource *s) {
        if (s->has_error) {
                log_info("Manifest URL \"%s\" works again.", s->url);
                s->has_error = false;
                free(s->logged_error);
                s->logged_error = NULL;
        }
        int r = pod_config_set_origin(s->config, "http", s->url, s->objs, s->n_objs);
        if (r < 0)
                log_error_errno(r, "Failed to apply the pods of \"%s\": %m", s->url);
        url_source_commit(s);
}

int url_source_parse_body(const UrlSourceOptions *opts, const char *body, size_t size, usec_t seen,
                          ManifestObject ***ret_objs, size_t *ret_n, Diagnostics *diag) {
        assert(opts && !isempty(opts->url) && !isempty(opts->node_name));
        assert(ret_objs && ret_n && diag);
        _cleanup_free_ char *source_id = strprintf("url:%s", opts->url);
        int r = -ENOMEM;
        if (source_id) {
                ManifestParseOptions popts = {
                        .filename = opts->url,
                        .node_name = opts->node_name,
                        .source_id = source_id,
                        .config_source = "http",
                        .seen = seen,
                };
                popts.limits.max_input =
                        opts->max_body ? opts->max_body : URL_SOURCE_DEFAULT_MAX_BODY;
                r = source_parse_manifest(body ? body : "", size, &popts, ret_objs, ret_n, diag);
        }
        if (r < 0 && diag->n_errors == 0)
                diagnostics_add(diag, DIAG_ERROR, opts->url, 0, 0, NULL, "cannot parse: %s",
                                strerror(-r));
        return r;
}

static int url_source_handle_body(UrlSource *s) {
        const UrlSourceOptions opts = {
                .url = s->url,
                .node_name = s->node_name,
                .max_body = s->max_body,
        };
        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        ManifestObject **objs = NULL;
        size_t n = 0;
        int r = url_source_parse_body(&opts, s->body, s->body_len, now_usec(CLOCK_REALTIME), &objs,
                                      &n, &d);
        if (r < 0) {
                url_source_fail(s, &d);
                return r;
        }

        manifest_objects_free(s->objs, s->n_objs);
        s->objs = objs;
        s->n_objs = n;
        s->have_content = true;
        /* Validators only of a body we accepted: a bad body is fetched whole
         * again next time instead of being answered 304 forever. */
        free(s->etag);
        free(s->last_modified);
        s->etag = TAKE_PTR(s->resp_etag);
        s->last_modified = TAKE_PTR(s->resp_last_modified);
        if (s->last_modified &&
            last_modified_is_racy(event_curl_api(s->curl), s->last_modified, s->resp_date)) {
                /* Last-Modified has one-second resolution: a body modified in
                 * the second it was served may change again within that same
                 * second, and If-Modified-Since would then hide the change
                 * forever. Such a timestamp is not used (git's racy-clean rule). */
                free(s->last_modified);
                s->last_modified = NULL;
        }
        log_debug("Manifest URL \"%s\": %zu object(s).", s->url, n);
        url_source_mark_success(s);
        url_source_succeed(s);
        return 0;
}

/* ---- signed manifests (url-verifier.h) ---- */

static int url_source_schedule_poll(UrlSource *s, usec_t delay);
static usec_t url_source_next_delay(UrlSource *s);

/* 0, or -EPERM once the current signed document has expired (reported
 * as the origin's error; its pods keep running). */
static int url_source_check_expiry(UrlSource *s) {
        if (!s->verifier)
                return 0;
        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        int r = url_verifier_check_current(s->verifier, now_usec(CLOCK_REALTIME), &d);
        if (r < 0)
                url_source_fail(s, &d);
        return r;
}

static void url_source_on_verified(UrlVerifier *v, int r, char *body, size_t size,
                                   const Diagnostics *d, void *userdata) {
        UrlSource *s = userdata;
        if (r < 0) {
                free(body);
                url_source_fail(s, (Diagnostics *)d);
        } else {
                /* The validators of this response are still in resp_*: no
                 * GET starts while a check is under way. */
                s->body = body;
                s->body_len = size;
                if (url_source_handle_body(s) >= 0)
                        url_verifier_accept(v);
                free(s->body);
                s->body = NULL;
                s->body_len = s->body_cap = 0;
        }
        if (!s->synced_once) {
                s->synced_once = true;
                if (s->synced)
                        s->synced(s->synced_userdata);
        }
        (void)url_source_schedule_poll(s, url_source_next_delay(s));
}

static void url_source_verify_body(UrlSource *s) {
        char *body = TAKE_PTR(s->body);
        size_t size = s->body_len;
        s->body_len = s->body_cap = 0;
        int r = url_verifier_start(s->verifier, body, size, url_source_on_verified, s);
        if (r < 0)
                url_source_failf(s, "cannot start fetching the signature: %s", strerror(-r));
}

static void url_source_finish(UrlSource *s, CURL *easy, CURLcode result) {
        const CurlApi *c = event_curl_api(s->curl);
        long code = 0;
        if (result == CURLE_OK)
                (void)c->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        metric_inc(s->fetches, METRIC_LABELS(code == 304                  ? "304"
                                             : code >= 200 && code <= 299 ? "200"
                                                                          : "error"));
        if (result != CURLE_OK) {
                if (s->body_too_large || result == CURLE_FILESIZE_EXCEEDED)
                        url_source_failf(s, "response body is larger than the limit of %zu bytes",
                                         s->max_body);
                else if (result == CURLE_OPERATION_TIMEDOUT)
                        url_source_failf(s, "no complete response within %llu ms",
                                         (unsigned long long)(s->timeout / USEC_PER_MSEC));
                else
                        url_source_failf(s, "%s",
                                         s->errbuf[0] ? s->errbuf : c->easy_strerror(result));
                return;
        }

        long status = 0;
        (void)c->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (status == 304) {
                if (!s->have_content) {
                        url_source_failf(s, "HTTP status 304 (Not Modified) for a request "
                                            "without validators");
                        return;
                }
                /* Unchanged: the objects we have are current. This also clears
                 * an error left by an earlier failed poll. */
                if (url_source_check_expiry(s) < 0)
                        return;
                url_source_mark_success(s);
                if (s->has_error)
                        url_source_succeed(s);
                return;
        }
        if (status < 200 || status > 299) {
                url_source_failf(s, "HTTP status %ld", status);
                return;
        }
        if (s->body_len == 0) {
                url_source_failf(s, "empty response body (HTTP status %ld)", status);
                return;
        }
        if (s->verifier) {
                url_source_verify_body(s);
                return;
        }
        (void)url_source_handle_body(s);
}

static int url_source_schedule_poll(UrlSource *s, usec_t delay);
static int url_source_start_request(UrlSource *s, const char *url);

/* The wait after the poll that just ended (poll-schedule.h). Logged for
 * whoever looks at the timing of one box or of a fleet (-v 4). */
static usec_t url_source_next_delay(UrlSource *s) {
        if (!s->poll_failed) {
                usec_t wait = poll_schedule_success(&s->schedule);
                log_debug("Manifest URL \"%s\": %s connection, next poll in %llu ms.", s->url,
                          s->poll_connects == 0 ? "reused the" : "opened a",
                          (unsigned long long)(wait / USEC_PER_MSEC));
                return wait;
        }

        usec_t ra = POLL_NO_RETRY_AFTER;
        if (s->resp_retry_after &&
            poll_retry_after_parse(s->resp_retry_after, s->resp_date, time(NULL), &ra) < 0)
                log_debug("Manifest URL \"%s\": the Retry-After header is neither a number of "
                          "seconds nor an HTTP date, ignored.",
                          s->url);
        usec_t wait = poll_schedule_failure(&s->schedule, ra);
        char why[96] = "";
        if (ra != POLL_NO_RETRY_AFTER && ra > s->schedule.max_backoff)
                (void)snprintf(why, sizeof why, " (Retry-After %llu s, clamped to %llu s)",
                               (unsigned long long)(ra / USEC_PER_SEC),
                               (unsigned long long)(s->schedule.max_backoff / USEC_PER_SEC));
        else if (ra != POLL_NO_RETRY_AFTER)
                (void)snprintf(why, sizeof why, " (Retry-After %llu s)",
                               (unsigned long long)(ra / USEC_PER_SEC));
        log_debug("Manifest URL \"%s\": failed poll %u in a row, next poll in %llu ms%s.", s->url,
                  s->schedule.failures, (unsigned long long)(wait / USEC_PER_MSEC), why);
        return wait;
}

/* 1 with the target in *ret when the response is a redirect to follow, 0
 * when it is not a redirect, a negative errno when it is one that is not
 * followed (reported as the poll's failure). */
static int url_source_redirect_target(UrlSource *s, CURL *easy, CURLcode result, char **ret) {
        const CurlApi *c = event_curl_api(s->curl);
        long status = 0;
        char *location = NULL;

        if (result != CURLE_OK)
                return 0;
        (void)c->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (status != 301 && status != 302 && status != 303 && status != 307 && status != 308)
                return 0;
        (void)c->easy_getinfo(easy, CURLINFO_REDIRECT_URL, &location);
        if (!location)
                return 0; /* reported as the 3xx status it is */
        if (s->n_redirects >= URL_SOURCE_MAX_REDIRECTS) {
                url_source_failf(s, "more than %u redirects (the last to \"%s\")",
                                 URL_SOURCE_MAX_REDIRECTS, location);
                return -ELOOP;
        }
        int r = url_redirect_check(c, s->request_url, location);
        if (r < 0) {
                url_source_failf(s, "redirect from \"%s\" to \"%s\" refused: %s", s->request_url,
                                 location,
                                 r == -EPERM ? "only http and https are followed, and never "
                                               "from https to http"
                                             : "not a valid URL");
                return r;
        }
        char *target = strdup(location);
        if (!target) {
                url_source_failf(s, "out of memory");
                return -ENOMEM;
        }
        s->n_redirects++;
        *ret = target;
        return 1;
}

static void url_source_on_done(EventCurl *ec, CURL *easy, CURLcode result, void *userdata) {
        UrlSource *s = userdata;
        const CurlApi *c = event_curl_api(ec);
        _cleanup_free_ char *redirect = NULL;
        bool ours = easy == s->easy;

        if (ours) {
                long connects = 0;
                if (c->easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK &&
                    connects > 0)
                        s->poll_connects += (unsigned)connects;
                s->easy = NULL;
                if (url_source_redirect_target(s, easy, result, &redirect) == 0)
                        url_source_finish(s, easy, result);
        }
        c->easy_cleanup(easy);
        c->slist_free_all(s->req_headers);
        s->req_headers = NULL;
        free(s->body);
        s->body = NULL;
        s->body_len = s->body_cap = 0;
        if (redirect) {
                int r = url_source_start_request(s, redirect);
                if (r >= 0)
                        return;
                url_source_failf(s, "cannot follow the redirect to \"%s\": %s", redirect,
                                 strerror(-r));
        }
        /* A body whose signature is being checked: the check ends the
         * poll (url_source_on_verified()). */
        if (url_verifier_busy(s->verifier))
                return;
        if (ours && !s->synced_once) {
                s->synced_once = true;
                if (s->synced)
                        s->synced(s->synced_userdata);
        }
        (void)url_source_schedule_poll(s, url_source_next_delay(s));
}

/* ---- polling ---- */

/* custom: with the --manifest-url-header values. */
/* Appends h (NULL: out of memory already) to *l; on failure *l is left as
 * it was, for the caller to free. */
static int slist_add(const CurlApi *c, struct curl_slist **l, const char *h) {
        struct curl_slist *n = h ? c->slist_append(*l, h) : NULL;
        if (!n)
                return -ENOMEM;
        *l = n;
        return 0;
}

static int url_source_build_headers(UrlSource *s, bool custom, struct curl_slist **ret) {
        const CurlApi *c = event_curl_api(s->curl);
        struct curl_slist *l = NULL;
        int r = 0;
        STRV_FOREACH(h, custom ? s->headers : NULL)
                if (r >= 0)
                        r = slist_add(c, &l, *h);
        if (r >= 0 && s->etag) {
                _cleanup_free_ char *h = strprintf("If-None-Match: %s", s->etag);
                r = slist_add(c, &l, h);
        }
        if (r >= 0 && s->last_modified) {
                /* The server's own string back, as RFC 9110 recommends. */
                _cleanup_free_ char *h = strprintf("If-Modified-Since: %s", s->last_modified);
                r = slist_add(c, &l, h);
        }
        if (r < 0) {
                c->slist_free_all(l);
                return r;
        }
        *ret = l;
        return 0;
}

/* A GET of url, the configured one or a redirect's target. */
static int url_source_start_request(UrlSource *s, const char *url) {
        free(s->body);
        s->body = NULL;
        s->body_len = s->body_cap = 0;
        s->body_too_large = false;
        free(s->resp_etag);
        free(s->resp_last_modified);
        free(s->resp_date);
        free(s->resp_retry_after);
        s->resp_etag = s->resp_last_modified = s->resp_date = s->resp_retry_after = NULL;
        s->errbuf[0] = 0;

        _cleanup_free_ char *request_url = strdup(url);
        if (!request_url)
                return -ENOMEM;
        /* Custom headers (tokens) only to the configured URL's origin. */
        const CurlApi *c = event_curl_api(s->curl);
        int r = s->n_redirects == 0 ? 1 : url_same_origin(c, s->url, url);
        if (r == 0 && s->headers)
                log_debug("Manifest URL \"%s\" redirects to \"%s\", another origin: its headers "
                          "are not sent there.",
                          s->url, url);
        struct curl_slist *hdrs = NULL;
        r = url_source_build_headers(s, r > 0, &hdrs);
        if (r < 0)
                return r;

        CURL *easy = c->easy_init();
        bool ok = easy && c->easy_setopt(easy, CURLOPT_URL, url) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_TIMEOUT_MS, (long)(s->timeout / USEC_PER_MSEC)) ==
                          CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s->max_body) ==
                          CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_ERRORBUFFER, s->errbuf) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_HTTPHEADER, hdrs) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_USERAGENT, "nanolet/" NANOLET_VERSION) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_WRITEFUNCTION, url_source_on_body) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_WRITEDATA, s) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_HEADERFUNCTION, url_source_on_header) == CURLE_OK &&
                  c->easy_setopt(easy, CURLOPT_HEADERDATA, s) == CURLE_OK;
        r = !easy ? -ENOMEM : !ok ? -EINVAL : event_curl_add(s->curl, easy, url_source_on_done, s);
        if (r < 0) {
                if (easy)
                        c->easy_cleanup(easy);
                c->slist_free_all(hdrs);
                return r;
        }
        s->easy = easy;
        s->req_headers = hdrs;
        free(s->request_url);
        s->request_url = TAKE_PTR(request_url);
        return 0;
}

static int url_source_start_get(UrlSource *s) {
        if (s->easy || url_verifier_busy(s->verifier))
                return 0; /* still in flight */
        s->n_redirects = 0;
        s->poll_failed = false;
        s->poll_connects = 0;
        return url_source_start_request(s, s->url);
}

static int url_source_on_poll(EventSource *es, usec_t now, void *userdata) {
        UrlSource *s = userdata;
        int r = url_source_start_get(s);
        if (r < 0) {
                url_source_failf(s, "cannot start the request: %s", strerror(-r));
                (void)url_source_schedule_poll(s, url_source_next_delay(s));
        }
        return 0;
}

static int url_source_schedule_poll(UrlSource *s, usec_t delay) {
        usec_t when = now_usec(CLOCK_MONOTONIC) + delay;
        int r;
        s->next_wait = delay;
        if (!s->poll_timer) {
                r = event_add_time(s->event, &s->poll_timer, when, 0, url_source_on_poll, s);
                if (r >= 0)
                        (void)event_source_set_description(s->poll_timer, "url-source-poll");
        } else {
                r = event_source_set_time(s->poll_timer, when);
                if (r >= 0)
                        r = event_source_set_enabled(s->poll_timer, true);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to schedule the next poll of \"%s\": %m", s->url);
        return 0;
}

/* ---- lifecycle ---- */

/* A seed that differs between boxes that booted at the same instant from
 * the same image: the kernel's random pool when it is ready, and in every
 * case the node name, the pid and both clocks mixed in (a pool that is not
 * initialized yet early in boot must not leave every box with the same
 * schedule). */
static uint64_t url_source_seed(const char *node_name) {
        uint64_t seed = 0;
        if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
                seed = 0;
        uint64_t h = UINT64_C(0xcbf29ce484222325); /* FNV-1a */
        for (const char *p = node_name; *p; p++)
                h = (h ^ (uint8_t)*p) * UINT64_C(0x100000001b3);
        return seed ^ h ^ ((uint64_t)getpid() << 32) ^ now_usec(CLOCK_REALTIME) ^
               (now_usec(CLOCK_MONOTONIC) << 20);
}

int url_source_new(UrlSource **ret, Event *e, PodConfig *config, const UrlSourceOptions *opts,
                   Error *error) {
        assert(ret && e && config && opts);
        if (isempty(opts->url) || isempty(opts->node_name))
                return -EINVAL;

        _cleanup_(url_source_freep) UrlSource *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->event = e;
        s->config = config;
        s->check_frequency =
                opts->check_frequency ? opts->check_frequency : URL_SOURCE_DEFAULT_CHECK_FREQUENCY;
        s->timeout = opts->timeout ? opts->timeout : URL_SOURCE_DEFAULT_TIMEOUT;
        /* libcurl counts in ms; 0 would mean "no timeout". */
        if (s->timeout < USEC_PER_MSEC)
                s->timeout = USEC_PER_MSEC;
        s->max_body = opts->max_body ? opts->max_body : URL_SOURCE_DEFAULT_MAX_BODY;
        poll_schedule_init(&s->schedule, s->check_frequency, opts->max_backoff,
                           url_source_seed(opts->node_name));
        s->synced = opts->synced;
        s->synced_userdata = opts->synced_userdata;
        s->url = strdup(opts->url);
        s->node_name = strdup(opts->node_name);
        if (!s->url || !s->node_name)
                return -ENOMEM;
        if (opts->headers) {
                s->headers = strv_copy(opts->headers);
                if (!s->headers)
                        return -ENOMEM;
        }

        int r = metrics_register(opts->metrics, &s->fetches, METRIC_COUNTER,
                                 "nanolet_manifest_url_fetches_total",
                                 "Polls of the manifest URL by result: 200 (any 2xx with a body), "
                                 "304 (not modified) or error (transport error, timeout, other "
                                 "status).",
                                 (const char *const[]){ "result", NULL }, NULL, 0);
        if (r >= 0)
                r = metrics_register(opts->metrics, &s->last_success, METRIC_GAUGE,
                                     "nanolet_manifest_source_last_success_timestamp_seconds",
                                     "Time of the last fetch of the manifest URL that left its "
                                     "pods current (a valid body, or 304 Not Modified), in "
                                     "seconds since the epoch, by source (http).",
                                     (const char *const[]){ "source", NULL }, NULL, 0);
        if (r < 0)
                return r;
        r = event_curl_new(e, &s->curl, error);
        if (r < 0)
                return error_prefix(error, r, "the manifest URL source needs " EVENT_CURL_LIBRARY);
        if (opts->verify) {
                UrlVerifierOptions vo = *opts->verify;
                if (vo.timeout == 0)
                        vo.timeout = s->timeout;
                if (vo.max_body == 0)
                        vo.max_body = s->max_body;
                r = url_verifier_new(&s->verifier, s->curl, &vo, error);
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(s);
        return 0;
}

int url_source_start(UrlSource *s) {
        assert(s);
        if (s->poll_timer)
                return -EBUSY;
        usec_t first = poll_schedule_first(&s->schedule);
        log_info("Polling manifests from \"%s\" every %llu ms (±%u %%), the first time in %llu ms.",
                 s->url, (unsigned long long)(s->check_frequency / USEC_PER_MSEC),
                 POLL_JITTER_PERCENT, (unsigned long long)(first / USEC_PER_MSEC));
        return url_source_schedule_poll(s, first);
}

int url_source_refresh(UrlSource *s) {
        assert(s);
        if (!s->poll_timer || s->easy)
                return 0; /* not started, or a GET is already under way */
        return url_source_schedule_poll(s, 0);
}

unsigned url_source_get_error_count(UrlSource *s) {
        assert(s);
        return s->error_count;
}

usec_t url_source_get_next_wait(UrlSource *s) {
        assert(s);
        return s->next_wait;
}

UrlSource *url_source_free(UrlSource *s) {
        if (!s)
                return NULL;
        /* A handle or a header list exists only with s->curl, whose table
         * frees it; libcurl stays usable until event_curl_free(). */
        if (s->easy) {
                event_curl_remove(s->curl, s->easy);
                event_curl_api(s->curl)->easy_cleanup(s->easy);
        }
        if (s->req_headers)
                event_curl_api(s->curl)->slist_free_all(s->req_headers);
        url_verifier_free(s->verifier);
        event_curl_free(s->curl);
        event_source_free(s->poll_timer);

        free(s->body);
        free(s->resp_etag);
        free(s->resp_last_modified);
        free(s->resp_date);
        free(s->resp_retry_after);
        free(s->etag);
        free(s->last_modified);
        manifest_objects_free(s->objs, s->n_objs);
        free(s->logged_error);
        free(s->request_url);
        free(s->url);
        strv_free(s->headers);
        free(s->node_name);
        free(s);
        return NULL;
}
