/* The registry client; see image-pull.h. One Registry per endpoint tried
 * (a mirror or the registry itself) holds its transport settings and auth
 * state; small documents (token, manifest, config) are fetched with
 * blocking easy transfers, layers with a private curl multi so that up to
 * max_parallel of them stream at once. */
#include <ctype.h>
#include "config.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "dirent-util.h"
#include "fileio.h"
#include "image-internal.h"
#include "image-pull.h"
#include "image-util.h"
#include "log.h"
#include "registry-auth.h"
#include "registry-config.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

/* The pull runs in the CLI process (a helper mode of nanolet), which links
 * libcurl directly; the agent's own transfers go through event-curl.h. */
DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct curl_slist *, curl_slist_free_all)
#define _cleanup_curl_easy_ _cleanup_(curl_easy_cleanupp)
#define _cleanup_curl_slist_ _cleanup_(curl_slist_free_allp)

#define DOC_MAX (4U * 1024U * 1024U) /* manifest, index, config, token bodies */
#define ERRBODY_MAX (16U * 1024U)
#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define SYSTEM_CA_PATH "/etc/ssl/certs"
#define MANIFEST_ACCEPT                                                                            \
        "Accept: " IMAGE_MT_OCI_MANIFEST ", " IMAGE_MT_DOCKER_MANIFEST ", " IMAGE_MT_OCI_INDEX     \
        ", " IMAGE_MT_DOCKER_LIST

typedef struct Registry {
        const ImagePullOptions *o;
        char *host; /* as configured: "docker.io", "127.0.0.1:5000" */
        char *path; /* repository on that host */
        bool insecure;
        char *base; /* "https://registry-1.docker.io" */
        char *user, *password;
        bool have_creds;
        char *auth; /* "Authorization: ..." or NULL */
        char *realm, *service;
        usec_t auth_expires;
        char *ca_blob;
        size_t ca_blob_len;
        /* One connection cache and TLS session cache for every transfer of
         * this endpoint: the token, manifest and config requests and the
         * blob downloads reuse connections instead of a handshake each. */
        CURLSH *share;
        bool system_capath; /* SYSTEM_CA_PATH is a hashed CA directory */
        char *client_cert, *client_key;
} Registry;

static void registry_done(Registry *r) {
        free(r->host);
        free(r->path);
        free(r->base);
        free(r->user);
        if (r->password)
                explicit_bzero(r->password, strlen(r->password));
        free(r->password);
        if (r->auth)
                explicit_bzero(r->auth, strlen(r->auth));
        free(r->auth);
        free(r->realm);
        free(r->service);
        free(r->ca_blob);
        free(r->client_cert);
        free(r->client_key);
        if (r->share)
                curl_share_cleanup(r->share);
        *r = (Registry){};
}

typedef struct Response {
        long code;
        char *body;
        size_t len, max;
        bool too_big;
        char *content_type;
        char *www_auth;
        char *content_digest; /* Docker-Content-Digest */
        char errbuf[CURL_ERROR_SIZE];
        /* For the redirect check (prereq_cb()); set by easy_setup(). */
        const Registry *reg;
        CURL *easy;
        char *refused_url; /* a redirect target refused, for the message */
} Response;

static void response_done(Response *r) {
        free(r->body);
        free(r->content_type);
        free(r->www_auth);
        free(r->content_digest);
        free(r->refused_url);
        *r = (Response){};
}

static size_t body_cb(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Response *r = userdata;
        size_t n = size * nmemb;
        if (r->len + n > r->max) {
                r->too_big = true;
                return 0;
        }
        char *b = realloc(r->body, r->len + n + 1);
        if (!b)
                return 0;
        memcpy(b + r->len, ptr, n);
        r->len += n;
        b[r->len] = 0;
        r->body = b;
        return n;
}

/* Keeps one header's value (of the last response, after redirects). */
static void header_keep(char **slot, const char *line, size_t n, const char *name) {
        size_t nl = strlen(name);
        if (n <= nl || strncasecmp(line, name, nl) != 0)
                return;
        const char *v = line + nl, *end = line + n;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
                end--;
        free(*slot);
        *slot = strndup_safe(v, (size_t)(end - v));
}

static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Response *r = userdata;
        size_t n = size * nmemb;
        if (n >= 5 && strneq(ptr, "HTTP/", 5)) { /* a new response (redirect): forget the old */
                r->content_type = mfree(r->content_type);
                r->www_auth = mfree(r->www_auth);
                r->content_digest = mfree(r->content_digest);
        }
        header_keep(&r->content_type, ptr, n, "content-type:");
        header_keep(&r->www_auth, ptr, n, "www-authenticate:");
        header_keep(&r->content_digest, ptr, n, "docker-content-digest:");
        return n;
}

/* The registry's own explanation from an error body
 * ({"errors":[{"code":..,"message":..}]}), or NULL. */
static char *registry_error_text(const char *body, size_t len) {
        if (!body || len == 0)
                return NULL;
        _cleanup_json_ json_t *j = json_loadb(body, len, 0, NULL);
        json_t *e = json_array_get(json_object_get(j, "errors"), 0);
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(json_object_get(e, "message"));
        if (!code && !msg)
                return NULL;
        return strprintf("%s%s%s", strempty(code), code && msg ? ": " : "", strempty(msg));
}

static bool host_is_docker_hub(const char *host) {
        return streq(host, "docker.io") || streq(host, "index.docker.io");
}

/* containers-certs.d(5): every *.crt is a CA (added to the system ones),
 * a *.cert + *.key pair a client certificate. */
/* A c_rehash'ed CA directory (Debian's /etc/ssl/certs): OpenSSL looks CAs up
 * in it by subject hash when it needs one, where a bundle file is parsed
 * whole (some 140 certificates, ~20 ms) for every new TLS connection. */
static bool system_capath_usable(void) {
        _cleanup_closedir_ DIR *d = opendir(SYSTEM_CA_PATH);
        if (!d)
                return false;
        FOREACH_DIRENT(de, d)
                if (endswith(de->d_name, ".0"))
                        return true;
        return false;
}

static int registry_load_certs(Registry *reg, Error *err) {
        reg->system_capath = system_capath_usable();
        if (!reg->o->certs_dir)
                return 0;
        _cleanup_free_ char *dir = strprintf("%s/%s", reg->o->certs_dir, reg->host);
        if (!dir)
                return -ENOMEM;
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d) {
                if (errno == ENOENT)
                        return 0;
                return error_set(err, -errno, "cannot read %s: %m", dir);
        }
        _cleanup_free_ char *blob = NULL;
        size_t len = 0, cap = 0;
        int r;
        FOREACH_DIRENT(de, d) {
                if (endswith(de->d_name, ".crt")) {
                        _cleanup_free_ char *data = NULL;
                        size_t n;
                        r = read_full_file_at(dirfd(d), de->d_name, DOC_MAX, &data, &n);
                        if (r < 0)
                                return error_set(err, r, "cannot read %s/%s: %s", dir, de->d_name,
                                                 strerror(-r));
                        if ((r = strbuf_append(&blob, &len, &cap, data, n)) < 0 ||
                            (r = strbuf_append(&blob, &len, &cap, "\n", 1)) < 0)
                                return r;
                } else if (endswith(de->d_name, ".cert")) {
                        _cleanup_free_ char *key = strndup_safe(de->d_name, strlen(de->d_name) - 5);
                        if (!key)
                                return -ENOMEM;
                        free(reg->client_key);
                        reg->client_key = strprintf("%s/%s.key", dir, key);
                        free(reg->client_cert);
                        reg->client_cert = strprintf("%s/%s", dir, de->d_name);
                        if (!reg->client_key || !reg->client_cert)
                                return -ENOMEM;
                        if (access(reg->client_key, R_OK) < 0)
                                return error_set(err, -ENOENT,
                                                 "client certificate %s has no key %s",
                                                 reg->client_cert, reg->client_key);
                }
        }
        if (len == 0)
                return 0;
        /* CURLOPT_CAINFO_BLOB replaces the default bundle: keep the system
         * CAs, through the hashed directory when there is one (see
         * easy_setup()), else by appending the bundle. */
        if (!reg->system_capath) {
                _cleanup_free_ char *sys = NULL;
                size_t sys_len = 0;
                if (read_full_file_at(AT_FDCWD, SYSTEM_CA_BUNDLE, 16U * 1024U * 1024U, &sys,
                                      &sys_len) >= 0 &&
                    (r = strbuf_append(&blob, &len, &cap, sys, sys_len)) < 0)
                        return r;
        }
        reg->ca_blob = TAKE_PTR(blob);
        reg->ca_blob_len = len;
        return 0;
}

static int registry_load_creds(Registry *reg, Error *err) {
        const char *host = reg->host;
        int r = 0;
        if (reg->o->extra_auths_json) {
                r = registry_auth_lookup(reg->o->extra_auths_json, strlen(reg->o->extra_auths_json),
                                         host, &reg->user, &reg->password, err);
                if (r < 0)
                        return error_prefix(err, r, "image pull secret");
        }
        if (r == 0 && reg->o->credential_file && !streq(reg->o->credential_file, "/dev/null")) {
                _cleanup_free_ char *data = NULL;
                size_t n;
                int q = read_full_file_at(AT_FDCWD, reg->o->credential_file, 1024U * 1024U, &data,
                                          &n);
                if (q == -ENOENT)
                        return 0;
                if (q < 0)
                        return error_set(err, q, "cannot read credential file %s: %s",
                                         reg->o->credential_file, strerror(-q));
                r = registry_auth_lookup(data, n, host, &reg->user, &reg->password, err);
                if (data)
                        explicit_bzero(data, n);
                if (r < 0)
                        return error_prefix(err, r, "%s", reg->o->credential_file);
        }
        reg->have_creds = r > 0;
        return 0;
}

static int registry_init(Registry *reg, const ImagePullOptions *o, const RegistryEndpoint *ep,
                         Error *err) {
        *reg = (Registry){ .o = o, .insecure = ep->insecure };
        reg->host = strdup(ep->host);
        reg->path = strdup(ep->path);
        if (!reg->host || !reg->path)
                return -ENOMEM;
        reg->share = curl_share_init();
        if (!reg->share ||
            curl_share_setopt(reg->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
            curl_share_setopt(reg->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) !=
                    CURLSHE_OK ||
            curl_share_setopt(reg->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK)
                return -ENOMEM;
        const char *contact = host_is_docker_hub(reg->host) ? "registry-1.docker.io" : reg->host;
        /* An insecure registry is tried with TLS (unverified) first, then
         * plain HTTP (resolve_endpoint()), as containers/image does. */
        reg->base = strprintf("https://%s", contact);
        if (!reg->base)
                return -ENOMEM;
        int r = registry_load_certs(reg, err);
        if (r < 0)
                return r;
        return registry_load_creds(reg, err);
}

/* Whether url's host[:port] is the registry's own (host as configured,
 * port 80 when it names none: the plain-HTTP contact of an insecure one). */
static bool url_is_registry(const Registry *reg, const char *url) {
        CURLU *u = curl_url();
        char *host = NULL, *port = NULL;
        bool same = false;
        if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
                _cleanup_free_ char *hp = strprintf("%s:%s", host, port);
                _cleanup_free_ char *h80 = strprintf("%s:80", reg->host);
                same = hp && h80 && (streq(hp, reg->host) || streq(hp, h80));
        }
        curl_free(host);
        curl_free(port);
        curl_url_cleanup(u);
        return same;
}

/* Runs before every request of a transfer, the redirected ones included,
 * with the URL about to be asked: https anywhere is fine (certificates are
 * verified as for the registry), plain HTTP only to an insecure registry
 * itself. A redirect from a registry to http elsewhere would hand the blob
 * (or, with Basic auth on the same host, credentials) to anyone on the path. */
static int prereq_cb(void *userdata, char *primary_ip, char *local_ip, int primary_port,
                     int local_port) {
        Response *resp = userdata;
        const char *url = NULL;
        (void)primary_ip, (void)local_ip, (void)primary_port, (void)local_port;
        if (curl_easy_getinfo(resp->easy, CURLINFO_EFFECTIVE_URL, &url) != CURLE_OK || !url)
                return CURL_PREREQFUNC_ABORT;
        if (strncasecmp(url, "https://", 8) == 0 ||
            (resp->reg->insecure && url_is_registry(resp->reg, url)))
                return CURL_PREREQFUNC_OK;
        free(resp->refused_url);
        /* Without its query: a pre-signed storage URL carries a credential there. */
        resp->refused_url = strndup(url, strcspn(url, "?#"));
        return CURL_PREREQFUNC_ABORT;
}

static int easy_setup(Registry *reg, CURL *easy, const char *url, Response *resp) {
        /* http for every registry: prereq_cb() decides which http URLs may be
         * asked, so that a refused redirect is reported as such. */
        const char *protos = "http,https";
        resp->reg = reg;
        resp->easy = easy;
        bool ok =
                curl_easy_setopt(easy, CURLOPT_URL, url) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, protos) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, protos) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_PREREQFUNCTION, prereq_cb) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_PREREQDATA, resp) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 1L) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_MAXREDIRS, 5L) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT, 30L) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, 60L) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, resp->errbuf) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, header_cb) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_HEADERDATA, resp) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_USERAGENT, "nanolet/" NANOLET_VERSION) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_SHARE, reg->share) == CURLE_OK &&
                curl_easy_setopt(easy, CURLOPT_BUFFERSIZE, 256L * 1024L) == CURLE_OK &&
                /* HTTP/1.1, as skopeo uses (one connection per blob, seen under strace):
                 * each parallel blob then has its own TLS connection, which the registry
                 * serves and encrypts independently, where HTTP/2 funnels every blob through
                 * one connection's writer (docs/BENCHMARKS.md, "Seventh round"). Idle
                 * connections are still reused through reg->share. */
                curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) ==
                        CURLE_OK;
        if (ok && reg->system_capath)
                ok = curl_easy_setopt(easy, CURLOPT_CAINFO, NULL) == CURLE_OK &&
                     curl_easy_setopt(easy, CURLOPT_CAPATH, SYSTEM_CA_PATH) == CURLE_OK;
        if (ok && reg->ca_blob) {
                struct curl_blob b = { .data = reg->ca_blob,
                                       .len = reg->ca_blob_len,
                                       .flags = CURL_BLOB_NOCOPY };
                ok = curl_easy_setopt(easy, CURLOPT_CAINFO_BLOB, &b) == CURLE_OK;
        }
        if (ok && reg->client_cert)
                ok = curl_easy_setopt(easy, CURLOPT_SSLCERT, reg->client_cert) == CURLE_OK &&
                     curl_easy_setopt(easy, CURLOPT_SSLKEY, reg->client_key) == CURLE_OK;
        if (ok && reg->insecure) /* insecure also means: do not verify its certificate */
                ok = curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
                     curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK;
        return ok ? 0 : -ENOMEM;
}

static int transport_error(Registry *reg, CURLcode c, const Response *resp, Error *err) {
        const char *detail = resp->errbuf[0] ? resp->errbuf : curl_easy_strerror(c);
        int e = -EIO;
        if (c == CURLE_ABORTED_BY_CALLBACK && resp->refused_url)
                return error_set(err, -EPROTO,
                                 "registry %s redirected to %s: refused (plain HTTP is followed "
                                 "only to the registry itself, and only when it is insecure)",
                                 reg->host, resp->refused_url);
        if (c == CURLE_COULDNT_RESOLVE_HOST || c == CURLE_COULDNT_CONNECT)
                e = -ECONNREFUSED;
        else if (c == CURLE_OPERATION_TIMEDOUT)
                e = -ETIMEDOUT;
        else if (c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CONNECT_ERROR ||
                 c == CURLE_SSL_CERTPROBLEM || c == CURLE_SSL_CACERT_BADFILE)
                e = -EPROTO;
        /* A registry that wants a client certificate (http.tls.clientcas)
         * answers a missing or unknown one with a TLS alert, under TLS 1.3
         * only at the first read: libcurl then reports a receive error. */
        if ((c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_SSL_CONNECT_ERROR) &&
            (strstr(detail, "alert bad certificate") || strstr(detail, "certificate required") ||
             strstr(detail, "alert unknown ca")))
                return error_set(err, -EPROTO,
                                 "TLS error talking to %s: the registry %s (%s); a client "
                                 "certificate for it goes in %s/%s/client.cert with its key in "
                                 "client.key",
                                 reg->host,
                                 reg->client_cert ? "refused our client certificate"
                                                  : "requires a client certificate and none is "
                                                    "configured",
                                 detail, strna(reg->o->certs_dir), reg->host);
        /* The same refusal can also show as a connection closed at once
         * after the handshake (getpeername() fails, nothing is received):
         * not certain, so said as a likely cause. */
        if ((c == CURLE_RECV_ERROR || c == CURLE_SEND_ERROR || c == CURLE_FAILED_INIT ||
             c == CURLE_GOT_NOTHING) &&
            startswith(reg->base, "https://"))
                return error_set(err, -EPROTO,
                                 "TLS error talking to %s: the connection broke during or right "
                                 "after the TLS handshake (%s); %s (client.cert and client.key "
                                 "in %s/%s)",
                                 reg->host, detail,
                                 reg->client_cert
                                         ? "the registry may have refused our client certificate"
                                         : "the registry may require a client certificate",
                                 strna(reg->o->certs_dir), reg->host);
        if (c == CURLE_PEER_FAILED_VERIFICATION || c == CURLE_SSL_CONNECT_ERROR)
                return error_set(err, e,
                                 "TLS error talking to %s: %s (CA certificates for it go in "
                                 "%s/%s/ca.crt)",
                                 reg->host, detail, strna(reg->o->certs_dir), reg->host);
        return error_set(err, e, "cannot reach registry %s: %s", reg->host, detail);
}

/* One blocking request with the current auth. */
static int request_once(Registry *reg, const char *url, const char *accept, bool head, size_t max,
                        Response *resp, Error *err) {
        _cleanup_curl_easy_ CURL *easy = curl_easy_init();
        _cleanup_curl_slist_ struct curl_slist *hdrs = NULL;
        response_done(resp);
        resp->max = max;
        if (!easy || easy_setup(reg, easy, url, resp) < 0)
                return -ENOMEM;
        if (accept && !(hdrs = curl_slist_append(hdrs, accept)))
                return -ENOMEM;
        if (reg->auth) {
                struct curl_slist *n = curl_slist_append(hdrs, reg->auth);
                if (!n)
                        return -ENOMEM;
                hdrs = n;
        }
        if (curl_easy_setopt(easy, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, body_cb) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_WRITEDATA, resp) != CURLE_OK ||
            (head && curl_easy_setopt(easy, CURLOPT_NOBODY, 1L) != CURLE_OK))
                return -ENOMEM;
        CURLcode c = curl_easy_perform(easy);
        (void)curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp->code);
        if (resp->too_big)
                return error_set(err, -EFBIG, "%s: response larger than %zu bytes", url, max);
        if (c != CURLE_OK)
                return transport_error(reg, c, resp, err);
        return 0;
}

/* Fetches a bearer token for the repository (Basic credentials if any). */
static int fetch_token(Registry *reg, Error *err) {
        _cleanup_curl_easy_ CURL *easy = curl_easy_init();
        _cleanup_(response_done) Response resp = { .max = DOC_MAX };
        _cleanup_free_ char *scope = strprintf("repository:%s:pull", reg->path);
        _cleanup_free_ char *url = NULL;
        if (!easy || !scope)
                return -ENOMEM;
        char *esc_scope = curl_easy_escape(easy, scope, 0);
        char *esc_service = reg->service ? curl_easy_escape(easy, reg->service, 0) : NULL;
        url = strprintf("%s%sscope=%s%s%s", reg->realm, strchr(reg->realm, '?') ? "&" : "?",
                        strna(esc_scope), esc_service ? "&service=" : "", strempty(esc_service));
        curl_free(esc_scope);
        curl_free(esc_service);
        if (!url)
                return -ENOMEM;
        if (!startswith(reg->realm, "https://") &&
            !(reg->insecure && startswith(reg->realm, "http://")))
                return error_set(err, -EPROTO,
                                 "registry %s sends its token realm over plain HTTP (%s); "
                                 "refused unless the registry is marked insecure",
                                 reg->host, reg->realm);
        if (easy_setup(reg, easy, url, &resp) < 0 ||
            curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, reg->insecure ? "http,https" : "https") !=
                    CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, body_cb) != CURLE_OK ||
            curl_easy_setopt(easy, CURLOPT_WRITEDATA, &resp) != CURLE_OK)
                return -ENOMEM;
        if (reg->have_creds &&
            (curl_easy_setopt(easy, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC) != CURLE_OK ||
             curl_easy_setopt(easy, CURLOPT_USERNAME, reg->user) != CURLE_OK ||
             curl_easy_setopt(easy, CURLOPT_PASSWORD, reg->password) != CURLE_OK))
                return -ENOMEM;
        /* The token's life is counted from before its request left. */
        usec_t sent_mono = now_usec(CLOCK_MONOTONIC), sent_real = now_usec(CLOCK_REALTIME);
        CURLcode c = curl_easy_perform(easy);
        (void)curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp.code);
        if (c != CURLE_OK)
                return transport_error(reg, c, &resp, err);
        if (resp.code != 200) {
                _cleanup_free_ char *t = registry_error_text(resp.body, resp.len);
                return error_set(err, resp.code == 401 || resp.code == 403 ? -EACCES : -EIO,
                                 "registry %s: token request failed: HTTP %ld%s%s%s", reg->host,
                                 resp.code, t ? " (" : "", strempty(t), t ? ")" : "");
        }
        _cleanup_json_ json_t *j = json_loadb(resp.body ? resp.body : "", resp.len, 0, NULL);
        const char *tok = json_string_value(json_object_get(j, "token"));
        if (!tok)
                tok = json_string_value(json_object_get(j, "access_token"));
        if (!tok || !*tok || strpbrk(tok, "\r\n"))
                return error_set(err, -EBADMSG, "registry %s: token response has no token",
                                 reg->host);
        usec_t life = registry_token_lifetime(
                (long long)json_integer_value(json_object_get(j, "expires_in")),
                json_string_value(json_object_get(j, "issued_at")), sent_real);
        free(reg->auth);
        reg->auth = strprintf("Authorization: Bearer %s", tok);
        if (!reg->auth)
                return -ENOMEM;
        /* Reused by every request until then (refresh_auth_if_expired()),
         * fetched again after; a 401 before that fetches one too. */
        reg->auth_expires = sent_mono + life;
        log_debug("Registry %s: bearer token valid for %.1fs", reg->host, (double)life / 1e6);
        return 0;
}

/* Reacts to a 401: sets up Basic or fetches a Bearer token. 0 when a retry
 * makes sense, else the error (naming the registry's explanation). */
static int handle_unauthorized(Registry *reg, const Response *resp, Error *err) {
        _cleanup_free_ char *text = registry_error_text(resp->body, resp->len);
        RegistryChallenge *cs = NULL;
        size_t n = 0;
        int r;
        if (!resp->www_auth)
                return error_set(err, -EACCES, "registry %s: 401 Unauthorized%s%s%s", reg->host,
                                 text ? " (" : "", strempty(text), text ? ")" : "");
        r = registry_challenges_parse(resp->www_auth, strlen(resp->www_auth), &cs, &n, err);
        if (r < 0)
                return error_prefix(err, r, "registry %s", reg->host);
        const RegistryChallenge *b = registry_challenge_find(cs, n, "bearer");
        if (b && b->realm) {
                free(reg->realm);
                free(reg->service);
                reg->realm = strdup(b->realm);
                reg->service = b->service ? strdup(b->service) : NULL;
                registry_challenges_free(cs, n);
                if (!reg->realm)
                        return -ENOMEM;
                return fetch_token(reg, err);
        }
        bool basic = registry_challenge_find(cs, n, "basic");
        registry_challenges_free(cs, n);
        if (basic && reg->have_creds && !reg->auth) {
                _cleanup_free_ char *pair = strprintf("%s:%s", reg->user, reg->password);
                if (!pair)
                        return -ENOMEM;
                size_t pl = strlen(pair);
                _cleanup_free_ char *b64 = malloc(4 * ((pl + 2) / 3) + 1);
                if (!b64)
                        return -ENOMEM;
                (void)EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)pair, (int)pl);
                explicit_bzero(pair, pl);
                reg->auth = strprintf("Authorization: Basic %s", b64);
                explicit_bzero(b64, strlen(b64));
                return reg->auth ? 0 : -ENOMEM;
        }
        return error_set(err, -EACCES, "registry %s: 401 Unauthorized%s%s%s%s", reg->host,
                         text ? " (" : "", strempty(text), text ? ")" : "",
                         reg->have_creds ? "" : "; no credentials configured for it");
}

static int refresh_auth_if_expired(Registry *reg, Error *err) {
        if (reg->realm && reg->auth && now_usec(CLOCK_MONOTONIC) >= reg->auth_expires)
                return fetch_token(reg, err);
        return 0;
}

/* A request with the auth dance: at most one retry after a 401 (two when
 * the first 401 only told us the scheme and the token then expired). */
static int request(Registry *reg, const char *url, const char *accept, bool head, size_t max,
                   Response *resp, Error *err) {
        int r = refresh_auth_if_expired(reg, err);
        if (r < 0)
                return r;
        for (int attempt = 0;; attempt++) {
                if ((r = request_once(reg, url, accept, head, max, resp, err)) < 0)
                        return r;
                if (resp->code != 401)
                        return 0;
                if (attempt >= 2)
                        break;
                bool had_auth = reg->auth != NULL;
                if (had_auth && !reg->realm) /* Basic credentials rejected */
                        break;
                if ((r = handle_unauthorized(reg, resp, err)) < 0)
                        return r;
        }
        _cleanup_free_ char *text = registry_error_text(resp->body, resp->len);
        return error_set(err, -EACCES, "registry %s: 401 Unauthorized%s%s%s (credentials rejected)",
                         reg->host, text ? " (" : "", strempty(text), text ? ")" : "");
}

static int http_status_error(Registry *reg, const char *what, const Response *resp, Error *err) {
        _cleanup_free_ char *text = registry_error_text(resp->body, resp->len);
        int e = resp->code == 404 ? -ENOENT : resp->code == 403 ? -EACCES : -EIO;
        return error_set(err, e, "registry %s: %s: HTTP %ld%s%s%s", reg->host, what, resp->code,
                         text ? " (" : "", strempty(text), text ? ")" : "");
}

/* ---- blobs ---- */

typedef struct Pull Pull;

typedef struct Blob {
        Pull *pull;
        const ImageDescriptor *desc;
        const char *what;
        unsigned index; /* 0: the config; else the layer's manifest position + 1 */
        char hex[65];
        char *partial;
        int fd;
        /* Body bytes not yet written to fd: TLS hands the body over in
         * records of 16 KiB at most, one write() each would be ~3000
         * syscalls for a 50 MiB image. Written out when full and when the
         * transfer ends (blob_finish()); have counts them already. */
        char *wbuf;
        size_t wlen;
        EVP_MD_CTX *md;
        uint64_t have;
        uint64_t attempt_start; /* have when this transfer started */
        unsigned resumes;       /* transfers continued after an early end */
        bool ranged;            /* sent a Range header */
        bool started_body;
        bool oversize;
        bool write_failed;
        bool done;
        int auth_retries;
        CURL *easy;
        struct curl_slist *hdrs;
        Response resp; /* headers and an error body */
        usec_t last_progress;
        /* Early unpacking (see unpack_start()): for the blob's first
         * position in the manifest. */
        const char *diff_id, *chain_id;
        bool unpack_wanted;
        bool unpack_running; /* the thread was started and not joined yet */
        pthread_t unpack_thread;
        int unpack_fd;      /* read end of its done pipe: EOF once it ends */
        int unpack_wfd;     /* write end, closed by the thread as it ends */
        int unpack_blob_fd; /* the staged blob, read by the thread */
        /* The thread's result, read after pthread_join(). */
        int unpack_r;
        Error unpack_err;
        char *unpack_tmp;
} Blob;

struct Pull {
        ImageStore *s;
        const ImagePullOptions *o;
        Registry *reg;
        Error *err;
        int stage_fd;
        char *stage_name;
        Blob *blobs;
        size_t n_blobs;
        const ImageManifest *man;
        bool config_parsed;
        ImageConfig config;
        char **chain_ids;
        char **unpacked; /* chain ID, layers/ temp dir, ...: unpacked early */
        unsigned unpacking, max_unpackers;
        /* Set when the pull fails with unpack threads running: they stop at
         * their next blob read instead of finishing a layer nobody wants. */
        atomic_bool cancel;
};

/* The pthread_join() calls here and in unpack_collect() block, which is
 * fine: image_pull_run() runs only in the pull helper process or the CLI,
 * never on the agent's event loop (the agent watches the helper through
 * child.h). Here the thread was told to stop and does at its next read of
 * at most 128 KiB of blob; in unpack_collect() it has closed its pipe, i.e.
 * it is returning. */
static void unpack_stop(Pull *p, Blob *b) {
        if (b->unpack_running) {
                atomic_store(&p->cancel, true);
                (void)pthread_join(b->unpack_thread, NULL);
                b->unpack_running = false;
                if (b->unpack_tmp) /* it finished before it saw the cancel */
                        store_layer_discard(p->s, b->unpack_tmp);
        }
        b->unpack_tmp = mfree(b->unpack_tmp);
        b->unpack_fd = safe_close(b->unpack_fd);
        b->unpack_wfd = safe_close(b->unpack_wfd);
        b->unpack_blob_fd = safe_close(b->unpack_blob_fd);
}

static void blob_done(Blob *b) {
        unpack_stop(b->pull, b);
        /* Not staged: the pull failed. The partial is ours while fd holds
         * its lock (no other pull or sweep renames or removes it then). */
        if (b->fd >= 0 && !b->done && b->partial)
                (void)unlinkat(b->pull->s->images_fd, b->partial, 0);
        if (b->easy)
                curl_easy_cleanup(b->easy);
        curl_slist_free_all(b->hdrs);
        EVP_MD_CTX_free(b->md);
        safe_close(b->fd);
        free(b->wbuf);
        free(b->partial);
        response_done(&b->resp);
}

static void progress(Pull *p, ImagePullEvent ev, const Blob *b, uint64_t done) {
        if (!p->o->progress)
                return;
        ImagePullProgress pp = { .event = ev,
                                 .digest = b->desc->digest,
                                 .what = b->what,
                                 .index = b->index,
                                 .n = (unsigned)p->n_blobs,
                                 .done = done,
                                 .total = b->desc->size >= 0 ? (uint64_t)b->desc->size : 0 };
        p->o->progress(&pp, p->o->userdata);
}

#define BLOB_WBUF_SIZE (256U * 1024U)

static int blob_flush(Blob *b) {
        size_t n = b->wlen;
        b->wlen = 0;
        return n > 0 ? write_all(b->fd, b->wbuf, n) : 0;
}

static int blob_buffer(Blob *b, const char *ptr, size_t n) {
        if (!b->wbuf && !(b->wbuf = malloc(BLOB_WBUF_SIZE)))
                return -ENOMEM;
        if (b->wlen + n > BLOB_WBUF_SIZE) {
                int r = blob_flush(b);
                if (r < 0)
                        return r;
        }
        if (n >= BLOB_WBUF_SIZE)
                return write_all(b->fd, ptr, n);
        memcpy(b->wbuf + b->wlen, ptr, n);
        b->wlen += n;
        return 0;
}

static size_t blob_write_cb(char *ptr, size_t size, size_t nmemb, void *userdata) {
        Blob *b = userdata;
        size_t n = size * nmemb;
        if (!b->started_body) {
                b->started_body = true;
                (void)curl_easy_getinfo(b->easy, CURLINFO_RESPONSE_CODE, &b->resp.code);
                if (b->resp.code == 200 && b->have > 0) {
                        /* The server ignored the Range: start over. */
                        if (ftruncate(b->fd, 0) < 0 || lseek(b->fd, 0, SEEK_SET) < 0 ||
                            EVP_DigestInit_ex(b->md, EVP_sha256(), NULL) != 1) {
                                b->write_failed = true;
                                return 0;
                        }
                        b->have = 0;
                }
        }
        if (b->resp.code != 200 && b->resp.code != 206) {
                b->resp.max = ERRBODY_MAX;
                return body_cb(ptr, size, nmemb, &b->resp) == n || b->resp.too_big ? n : 0;
        }
        if (b->have + n > (uint64_t)b->desc->size) {
                b->oversize = true;
                return 0;
        }
        if (sha256_update(b->md, ptr, n) < 0 || blob_buffer(b, ptr, n) < 0) {
                b->write_failed = true;
                return 0;
        }
        b->have += n;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        if (now - b->last_progress > 100 * USEC_PER_MSEC) {
                b->last_progress = now;
                progress(b->pull, IMAGE_PULL_BLOB_PROGRESS, b, b->have);
        }
        return n;
}

/* Opens (or creates) the partial file and hashes what it holds already.
 * 1 when it already holds the whole verified blob. */
static int blob_open_partial(Pull *p, Blob *b) {
        int r;
        b->partial = strprintf(PARTIAL_PREFIX "%s", b->hex);
        if (!b->partial)
                return -ENOMEM;
        for (;;) {
                b->fd = openat(p->s->images_fd, b->partial,
                               O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (b->fd < 0)
                        return error_set(p->err, -errno, "cannot create %s/%s: %m",
                                         p->s->images_dir, b->partial);
                /* Another pull of the same blob: wait for it, then look again. */
                if (flock(b->fd, LOCK_EX) < 0)
                        return error_set(p->err, -errno, "cannot lock %s: %m", b->partial);
                struct stat a, c;
                if (fstat(b->fd, &a) == 0 &&
                    fstatat(p->s->images_fd, b->partial, &c, AT_SYMLINK_NOFOLLOW) == 0 &&
                    a.st_ino == c.st_ino && a.st_dev == c.st_dev)
                        break;
                b->fd = safe_close(b->fd); /* renamed away by the other pull */
        }
        if ((r = sha256_new(&b->md)) < 0)
                return r;
        struct stat st;
        if (fstat(b->fd, &st) < 0)
                return -errno;
        if ((uint64_t)st.st_size > (uint64_t)b->desc->size) {
                if (ftruncate(b->fd, 0) < 0)
                        return -errno;
                st.st_size = 0;
        }
        char buf[128 * 1024];
        uint64_t off = 0;
        while (off < (uint64_t)st.st_size) {
                ssize_t n = pread(b->fd, buf, sizeof(buf), (off_t)off);
                if (n <= 0)
                        break;
                if ((r = sha256_update(b->md, buf, (size_t)n)) < 0)
                        return r;
                off += (uint64_t)n;
        }
        b->have = off;
        if (lseek(b->fd, (off_t)off, SEEK_SET) < 0 || ftruncate(b->fd, (off_t)off) < 0)
                return -errno;
        if (b->have == (uint64_t)b->desc->size && b->have > 0) {
                char digest[72];
                EVP_MD_CTX *copy = EVP_MD_CTX_new();
                if (!copy || EVP_MD_CTX_copy_ex(copy, b->md) != 1) {
                        EVP_MD_CTX_free(copy);
                        return -ENOMEM;
                }
                r = sha256_final_digest(copy, digest);
                EVP_MD_CTX_free(copy);
                if (r < 0)
                        return r;
                if (streq(digest, b->desc->digest))
                        return 1;
                /* Complete but wrong (an earlier corrupt download): start over. */
                if (ftruncate(b->fd, 0) < 0 || lseek(b->fd, 0, SEEK_SET) < 0 ||
                    EVP_DigestInit_ex(b->md, EVP_sha256(), NULL) != 1)
                        return -EIO;
                b->have = 0;
        }
        return 0;
}

static int config_ready(Pull *p);

/* No fsync here: the load path's commit_blob() syncs every blob before it
 * renames it into the store, and a partial lost in a crash is downloaded
 * again. But the write-back of the verified blob is started now, while the
 * other blobs download, so that those fsync()s at the commit find the data
 * (50 MiB for the bench image) mostly on disk already instead of writing it
 * all after the last byte arrived. */
static int blob_stage(Pull *p, Blob *b) {
        if (renameat(p->s->images_fd, b->partial, p->stage_fd, b->hex) < 0)
                return error_set(p->err, -errno, "cannot stage blob %s: %m", b->desc->digest);
        (void)sync_file_range(b->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        b->done = true;
        b->fd = safe_close(b->fd); /* drops the flock: a waiting pull reopens */
        progress(p, IMAGE_PULL_BLOB_DONE, b, b->have);
        /* The config, downloaded alongside the layers: now the layers'
         * chain IDs are known and the verified ones can be unpacked. */
        return b->index == 0 ? config_ready(p) : 0;
}

static int blob_start(Pull *p, Blob *b, CURLM *multi) {
        _cleanup_free_ char *url =
                strprintf("%s/v2/%s/blobs/%s", p->reg->base, p->reg->path, b->desc->digest);
        int r;
        if (!url)
                return -ENOMEM;
        if ((r = refresh_auth_if_expired(p->reg, p->err)) < 0)
                return r;
        if (b->easy)
                curl_easy_cleanup(b->easy);
        curl_slist_free_all(b->hdrs);
        b->hdrs = NULL;
        response_done(&b->resp);
        b->started_body = false;
        b->easy = curl_easy_init();
        if (!b->easy || easy_setup(p->reg, b->easy, url, &b->resp) < 0)
                return -ENOMEM;
        if (p->reg->auth && !(b->hdrs = curl_slist_append(b->hdrs, p->reg->auth)))
                return -ENOMEM;
        b->attempt_start = b->have;
        b->ranged = b->have > 0;
        if (b->ranged) {
                char range[64];
                (void)snprintf(range, sizeof(range), "Range: bytes=%llu-",
                               (unsigned long long)b->have);
                struct curl_slist *n = curl_slist_append(b->hdrs, range);
                if (!n)
                        return -ENOMEM;
                b->hdrs = n;
        }
        if (curl_easy_setopt(b->easy, CURLOPT_HTTPHEADER, b->hdrs) != CURLE_OK ||
            curl_easy_setopt(b->easy, CURLOPT_WRITEFUNCTION, blob_write_cb) != CURLE_OK ||
            curl_easy_setopt(b->easy, CURLOPT_WRITEDATA, b) != CURLE_OK ||
            curl_easy_setopt(b->easy, CURLOPT_PRIVATE, b) != CURLE_OK)
                return -ENOMEM;
        progress(p, IMAGE_PULL_BLOB_START, b, b->have);
        if (curl_multi_add_handle(multi, b->easy) != CURLM_OK)
                return -ENOMEM;
        return 0;
}

#define BLOB_MAX_RESUMES 3

/* A finished transfer: 1 when it must be started again (after a 401, a
 * 416, or an early end). */
static int blob_finish(Pull *p, Blob *b, CURLcode c) {
        char digest[72];
        int r;
        if (b->resp.code == 0)
                (void)curl_easy_getinfo(b->easy, CURLINFO_RESPONSE_CODE, &b->resp.code);
        /* The file holds the whole prefix before a retry with Range, the
         * staging or a resume by a later pull. */
        if (blob_flush(b) < 0)
                b->write_failed = true;
        if (b->oversize) {
                (void)unlinkat(p->s->images_fd, b->partial, 0);
                return error_set(p->err, -EBADMSG,
                                 "%s %s: the registry sent more than the %lld bytes its "
                                 "descriptor declares; refused",
                                 b->what, b->desc->digest, (long long)b->desc->size);
        }
        if (b->write_failed)
                return error_set(p->err, -EIO, "cannot write %s/%s: %m", p->s->images_dir,
                                 b->partial);
        if (b->resp.code == 401 && b->auth_retries++ < 2) {
                if ((r = handle_unauthorized(p->reg, &b->resp, p->err)) < 0)
                        return r;
                return 1;
        }
        /* The connection ended before the blob did: continued from where it
         * stopped (Range) while each transfer brings bytes, a few times per
         * pull. A failed pull removes what it downloaded. */
        bool short_body = c == CURLE_PARTIAL_FILE || c == CURLE_RECV_ERROR ||
                          (c == CURLE_OK && (b->resp.code == 200 || b->resp.code == 206) &&
                           b->have < (uint64_t)b->desc->size);
        if (short_body && b->have > b->attempt_start && b->resumes < BLOB_MAX_RESUMES) {
                b->resumes++;
                log_debug("%s %s: the transfer ended after %llu of %lld bytes; continuing", b->what,
                          b->desc->digest, (unsigned long long)b->have, (long long)b->desc->size);
                return 1;
        }
        if (c != CURLE_OK && c != CURLE_WRITE_ERROR)
                return transport_error(p->reg, c, &b->resp, p->err);
        if (b->resp.code == 416 && b->ranged) {
                /* The partial is not a prefix the server can continue: start over. */
                if (ftruncate(b->fd, 0) < 0 || lseek(b->fd, 0, SEEK_SET) < 0 ||
                    EVP_DigestInit_ex(b->md, EVP_sha256(), NULL) != 1)
                        return -EIO;
                b->have = 0;
                return 1;
        }
        if (b->resp.code != 200 && b->resp.code != 206) {
                _cleanup_free_ char *what = strprintf("%s %s", b->what, b->desc->digest);
                return http_status_error(p->reg, what ? what : b->what, &b->resp, p->err);
        }
        if (b->have != (uint64_t)b->desc->size)
                return error_set(p->err, -EBADMSG, "%s %s: the registry sent %llu of %lld bytes",
                                 b->what, b->desc->digest, (unsigned long long)b->have,
                                 (long long)b->desc->size);
        if ((r = sha256_final_digest(b->md, digest)) < 0)
                return r;
        if (!streq(digest, b->desc->digest)) {
                (void)unlinkat(p->s->images_fd, b->partial, 0);
                return error_set(p->err, -EBADMSG,
                                 "%s %s: digest mismatch: the registry's content hashes to %s; "
                                 "refused",
                                 b->what, b->desc->digest, digest);
        }
        return blob_stage(p, b);
}

/* Early unpacking: a layer whose blob is verified is unpacked by a thread
 * of this process (store_layer_unpack_tmp(), the function `image load`
 * uses) while later blobs download; the temp layer dirs then go to
 * image_store_load_staged(), which commits them with the rest or removes
 * them. Threads, not helper processes: each exec of this binary cost ~7.5 ms
 * of CPU in the dynamic linker alone (docs/BENCHMARKS.md, "Registry pull").
 * Cancellation stays what it was: the agent kills the pull helper's process
 * group, and SIGINT ends the CLI, threads and all, before anything is
 * committed; the leftover .tmp-* dirs go at the store's next open. At most
 * one thread per CPU (2..4): the download thread needs CPU too. */
#define MAX_UNPACKERS 4

static void *unpack_thread(void *userdata) {
        Blob *b = userdata;
        Pull *p = b->pull;
        uint64_t budget = p->s->limits.max_total_size;
        /* The blob's digest was verified as it downloaded (blob_finish()),
         * into the pull's own stage dir (root-only, under the store's GC
         * lock): hashing it again would only cost time. */
        b->unpack_r = store_layer_unpack_tmp(p->s, b->unpack_blob_fd, b->desc->digest, true,
                                             b->diff_id, b->chain_id, &budget, &p->cancel,
                                             &b->unpack_tmp, &b->unpack_err);
        /* The blob's own fsync, here while later blobs still download: the
         * commit's fsync before the blob's rename into the store
         * (commit_blob()) then finds it clean and returns at once, instead
         * of every blob's write-back waiting after the last byte. */
        if (b->unpack_r >= 0)
                (void)fsync(b->unpack_blob_fd);
        /* Last: wakes the download loop (curl_multi_poll() on the read end). */
        b->unpack_wfd = safe_close(b->unpack_wfd);
        return NULL;
}

static int unpack_start(Pull *p, Blob *b) {
        int fds[2];
        int r;

        b->unpack_blob_fd = openat(p->stage_fd, b->hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (b->unpack_blob_fd < 0)
                return error_set(p->err, -errno, "cannot open staged layer %s: %m", b->hex);
        if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0)
                return error_set(p->err, -errno, "cannot create a pipe: %m");
        b->unpack_fd = fds[0];
        b->unpack_wfd = fds[1];
        b->unpack_r = 0;
        b->unpack_err = (Error){};
        r = pthread_create(&b->unpack_thread, NULL, unpack_thread, b);
        if (r != 0)
                return error_set(p->err, -r, "cannot start a layer unpack thread: %s", strerror(r));
        b->unpack_running = true;
        b->unpack_wanted = false;
        p->unpacking++;
        return 0;
}

/* Collects a thread's result once it closed its pipe: 1 when it has not yet. */
static int unpack_collect(Pull *p, Blob *b) {
        char c;
        ssize_t n;
        while ((n = read(b->unpack_fd, &c, 1)) < 0 && errno == EINTR)
                ;
        if (n < 0 && errno == EAGAIN)
                return 1;
        if (n < 0)
                return -errno;
        (void)pthread_join(b->unpack_thread, NULL);
        b->unpack_running = false;
        b->unpack_fd = safe_close(b->unpack_fd);
        b->unpack_blob_fd = safe_close(b->unpack_blob_fd);
        p->unpacking--;
        if (b->unpack_r < 0) {
                if (p->err)
                        *p->err = b->unpack_err;
                return b->unpack_r;
        }
        if (strv_extend(&p->unpacked, b->chain_id) < 0 ||
            strv_extend(&p->unpacked, b->unpack_tmp) < 0) {
                store_layer_discard(p->s, b->unpack_tmp);
                b->unpack_tmp = mfree(b->unpack_tmp);
                return -ENOMEM;
        }
        b->unpack_tmp = mfree(b->unpack_tmp);
        return 0;
}

static void unpacked_remove(Pull *p) {
        for (size_t i = 0; p->unpacked && p->unpacked[i] && p->unpacked[i + 1]; i += 2)
                store_layer_discard(p->s, p->unpacked[i + 1]);
        p->unpacked = strv_free(p->unpacked);
}

static int download_blobs(Pull *p) {
        CURLM *multi = curl_multi_init();
        unsigned max = p->o->max_parallel ? p->o->max_parallel : 3;
        size_t next = 0, active = 0;
        int r = 0;

        if (!multi)
                return -ENOMEM;
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        p->max_unpackers = (unsigned)MAX(2L, MIN(cpus, (long)MAX_UNPACKERS));
        for (;;) {
                while (r >= 0 && active < max && next < p->n_blobs) {
                        Blob *b = &p->blobs[next++];
                        if (b->done)
                                continue;
                        r = blob_start(p, b, multi);
                        if (r >= 0)
                                active++;
                }
                struct curl_waitfd waits[MAX_UNPACKERS];
                unsigned n_waits = 0;
                for (size_t i = 0; r >= 0 && i < p->n_blobs; i++) {
                        Blob *b = &p->blobs[i];
                        if (b->unpack_running && (r = unpack_collect(p, b)) == 1)
                                r = 0;
                        if (r >= 0 && b->done && b->unpack_wanted &&
                            p->unpacking < p->max_unpackers)
                                r = unpack_start(p, b);
                        if (r >= 0 && b->unpack_running && n_waits < MAX_UNPACKERS)
                                waits[n_waits++] =
                                        (struct curl_waitfd){ .fd = b->unpack_fd,
                                                              .events = CURL_WAIT_POLLIN };
                }
                if (r < 0 || (active == 0 && n_waits == 0))
                        break;
                int running = 0;
                if (curl_multi_perform(multi, &running) != CURLM_OK) {
                        r = -EIO;
                        break;
                }
                CURLMsg *m;
                int left;
                while (r >= 0 && (m = curl_multi_info_read(multi, &left))) {
                        if (m->msg != CURLMSG_DONE)
                                continue;
                        Blob *b = NULL;
                        CURLcode c = m->data.result;
                        (void)curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&b);
                        (void)curl_multi_remove_handle(multi, m->easy_handle);
                        active--;
                        r = blob_finish(p, b, c);
                        if (r == 1) {
                                r = blob_start(p, b, multi);
                                if (r >= 0)
                                        active++;
                        }
                }
                if (r < 0)
                        break;
                if ((active > 0 || n_waits > 0) &&
                    curl_multi_poll(multi, waits, n_waits, 1000, NULL) != CURLM_OK) {
                        r = -EIO;
                        break;
                }
        }
        for (size_t i = 0; i < p->n_blobs; i++)
                if (p->blobs[i].easy) {
                        (void)curl_multi_remove_handle(multi, p->blobs[i].easy);
                        curl_easy_cleanup(p->blobs[i].easy);
                        p->blobs[i].easy = NULL;
                }
        curl_multi_cleanup(multi);
        return r;
}

/* ---- manifest ---- */

static int stage_bytes(Pull *p, const char *digest, const void *data, size_t size) {
        _cleanup_close_ int fd =
                openat(p->stage_fd, digest + 7,
                       O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return error_set(p->err, -errno, "cannot write to the staging directory: %m");
        int r = write_all(fd, data, size);
        if (r < 0)
                return error_set(p->err, r, "cannot write to the staging directory: %s",
                                 strerror(-r));
        return 0;
}

static int body_digest(const char *body, size_t len, char ret[static 72]) {
        _cleanup_md_ EVP_MD_CTX *md = NULL;
        int r = sha256_new(&md);
        if (r < 0 || (r = sha256_update(md, body, len)) < 0)
                return r;
        return sha256_final_digest(md, ret);
}

/* The media type of a manifest response: the body's own field, else Content-Type. */
static char *manifest_media_type(const Response *resp) {
        _cleanup_json_ json_t *j = json_loadb(resp->body ? resp->body : "", resp->len, 0, NULL);
        const char *mt = json_string_value(json_object_get(j, "mediaType"));
        if (mt)
                return strdup(mt);
        if (resp->content_type) {
                size_t n = strcspn(resp->content_type, ";");
                return strndup_safe(resp->content_type, n);
        }
        /* OCI manifests may omit mediaType: an index has "manifests". */
        return strdup(json_object_get(j, "manifests") ? IMAGE_MT_OCI_INDEX : IMAGE_MT_OCI_MANIFEST);
}

/* GETs a manifest by tag or digest; verifies a digest reference. */
static int get_manifest(Registry *reg, const char *reference, Response *resp, char **ret_mt,
                        char ret_digest[static 72], Error *err) {
        _cleanup_free_ char *url =
                strprintf("%s/v2/%s/manifests/%s", reg->base, reg->path, reference);
        if (!url)
                return -ENOMEM;
        int r = request(reg, url, MANIFEST_ACCEPT, false, DOC_MAX, resp, err);
        if (r < 0)
                return r;
        if (resp->code != 200) {
                _cleanup_free_ char *what = strprintf("manifest %s:%s", reg->path, reference);
                return http_status_error(reg, what ? what : "manifest", resp, err);
        }
        if ((r = body_digest(resp->body ? resp->body : "", resp->len, ret_digest)) < 0)
                return r;
        if (startswith(reference, "sha256:") && !streq(reference, ret_digest))
                return error_set(err, -EBADMSG,
                                 "registry %s: manifest %s: digest mismatch (content hashes to "
                                 "%s)",
                                 reg->host, reference, ret_digest);
        *ret_mt = manifest_media_type(resp);
        return *ret_mt ? 0 : -ENOMEM;
}

typedef struct Resolved {
        char *media_type;
        char digest[72];
        char *body;
        size_t len;
} Resolved;

/* The digest a tag points to now, from a HEAD of its manifest (the
 * registry's Docker-Content-Digest), as kubelet's Always policy asks on
 * every start: a manifest the store already has needs no GET. 0 and the
 * digest, or -ENOENT when the registry does not say (then GET). */
static int head_manifest_digest(Registry *reg, const char *tag, char ret[static 72]) {
        _cleanup_(response_done) Response resp = {};
        Error ignored = {};
        _cleanup_free_ char *url = strprintf("%s/v2/%s/manifests/%s", reg->base, reg->path, tag);
        if (!url)
                return -ENOMEM;
        int r = request(reg, url, MANIFEST_ACCEPT, true, 0, &resp, &ignored);
        if (r < 0 || resp.code != 200 || !resp.content_digest ||
            !image_digest_is_valid(resp.content_digest))
                return -ENOENT;
        snprintf(ret, 72, "%s", resp.content_digest);
        return 0;
}

/* The image manifest for this platform, following an index. */
static int resolve(Registry *reg, const char *reference, Resolved *ret, Error *err) {
        _cleanup_(response_done) Response resp = {};
        _cleanup_free_ char *mt = NULL;
        char digest[72];
        int r = get_manifest(reg, reference, &resp, &mt, digest, err);
        if (r < 0)
                return r;
        if (image_media_type_is_index(mt)) {
                ImageDescriptor *ds = NULL;
                size_t n = 0;
                if ((r = image_index_parse(resp.body ? resp.body : "", resp.len, &ds, &n, err)) < 0)
                        return error_prefix(err, r, "registry %s: image index %s", reg->host,
                                            digest);
                const ImageDescriptor *pick = image_index_select_platform(ds, n, NULL, NULL);
                _cleanup_free_ char *child = pick ? strdup(pick->digest) : NULL;
                image_descriptors_free(ds, n);
                if (!pick)
                        return error_set(err, -ENOENT,
                                         "image index %s has no manifest for linux/%s%s%s", digest,
                                         image_platform_native_arch(),
                                         image_platform_native_variant() ? "/" : "",
                                         strempty(image_platform_native_variant()));
                if (!child)
                        return -ENOMEM;
                mt = mfree(mt);
                if ((r = get_manifest(reg, child, &resp, &mt, digest, err)) < 0)
                        return r;
                if (image_media_type_is_index(mt))
                        return error_set(err, -ELOOP, "image index %s points to another index",
                                         child);
        }
        if (!image_media_type_is_manifest(mt))
                return error_set(err, -EMEDIUMTYPE,
                                 "registry %s: unsupported manifest media type \"%s\" (schema 1 "
                                 "manifests are not supported)",
                                 reg->host, mt);
        ret->media_type = TAKE_PTR(mt);
        memcpy(ret->digest, digest, sizeof(digest));
        ret->body = TAKE_PTR(resp.body);
        ret->len = resp.len;
        return 0;
}

/* The config is staged (downloaded and verified, or linked from the store):
 * its diff IDs give each layer's chain ID, and a layer whose chain is not in
 * the store yet is unpacked as soon as its blob is verified. A config that
 * does not parse or does not match the manifest unpacks nothing early: the
 * load path reports it at the commit. */
static int config_ready(Pull *p) {
        _cleanup_free_ char *cdata = NULL;
        size_t csize;
        const ImageManifest *man = p->man;
        if (p->config_parsed)
                return 0;
        p->config_parsed = true;
        if (read_full_file_at(p->stage_fd, man->config.digest + 7, DOC_MAX, &cdata, &csize) < 0 ||
            image_config_parse(cdata, csize, &p->config, NULL) < 0 ||
            strv_length(p->config.diff_ids) != man->n_layers)
                return 0;
        if (image_chain_ids(p->config.diff_ids, &p->chain_ids) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_blobs; i++) {
                Blob *b = &p->blobs[i];
                if (b->index == 0)
                        continue;
                const char *chain = p->chain_ids[b->index - 1];
                if (!store_layer_exists(p->s, chain)) {
                        b->diff_id = p->config.diff_ids[b->index - 1];
                        b->chain_id = chain;
                        b->unpack_wanted = true;
                }
        }
        return 0;
}

/* resolve(), and for an insecure registry whose TLS handshake fails (it
 * may speak plain HTTP only) the same over http://. */
static int resolve_endpoint(Registry *reg, const char *reference, Resolved *ret, Error *err) {
        Error first = {};
        int r = resolve(reg, reference, ret, &first);
        if (r != -EPROTO || !reg->insecure || !startswith(reg->base, "https://")) {
                if (r < 0 && err && !err->error)
                        *err = first;
                return r;
        }
        log_debug("Insecure registry %s: %s; trying plain HTTP", reg->host, first.message);
        _cleanup_free_ char *http = strprintf("http://%s", reg->base + strlen("https://"));
        if (!http)
                return -ENOMEM;
        free(reg->base);
        reg->base = TAKE_PTR(http);
        return resolve(reg, reference, ret, err);
}

static void pull_done(Pull *p) {
        for (size_t i = 0; i < p->n_blobs; i++)
                blob_done(&p->blobs[i]);
        free(p->blobs);
        unpacked_remove(p);
        image_config_done(&p->config);
        strv_free(p->chain_ids);
        safe_close(p->stage_fd);
        if (p->stage_name)
                (void)rm_rf_at(p->s->images_fd, p->stage_name);
        free(p->stage_name);
}

/* Everything after the manifest: config, layers, commit. */
static int blob_hex_cmp(const void *a, const void *b) {
        return strcmp((*(Blob *const *)a)->hex, (*(Blob *const *)b)->hex);
}

static int pull_image(Pull *p, const Resolved *m, char **names, char ***ret_names) {
        _cleanup_free_ Blob **order = NULL;
        ImageManifest man = {};
        char rnd[17];
        int r;

        if ((r = image_manifest_parse(m->body ? m->body : "", m->len, &man, p->err)) < 0)
                return error_prefix(p->err, r, "manifest %s", m->digest);
        if ((r = random_hex(rnd)) < 0)
                goto out;
        p->stage_name = strprintf(TMP_PREFIX "pull-%s", rnd);
        if (!p->stage_name) {
                r = -ENOMEM;
                goto out;
        }
        if (mkdirat(p->s->images_fd, p->stage_name, 0700) < 0) {
                r = error_set(p->err, -errno, "cannot create staging directory: %m");
                p->stage_name = mfree(p->stage_name);
                goto out;
        }
        p->stage_fd = openat(p->s->images_fd, p->stage_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (p->stage_fd < 0) {
                r = error_set(p->err, -errno, "cannot open staging directory: %m");
                goto out;
        }
        if ((r = stage_bytes(p, m->digest, m->body, m->len)) < 0)
                goto out;
        if (man.config.size < 0 || (uint64_t)man.config.size > DOC_MAX) {
                r = error_set(p->err, -EFBIG, "config blob %s: size %lld over the %u byte cap",
                              man.config.digest, (long long)man.config.size, DOC_MAX);
                goto out;
        }
        p->man = &man;
        p->blobs = calloc(man.n_layers + 2, sizeof(Blob));
        if (!p->blobs) {
                r = -ENOMEM;
                goto out;
        }
        /* The config is one more blob of the transfer, first in line, not a
         * request of its own before the layers: its round trip (a Basic
         * login checked by the registry, bcrypt for htpasswd) overlaps with
         * theirs. Layers verified before it arrives wait for it to be
         * unpacked (config_ready()). */
        if (linkat(p->s->blobs_fd, man.config.digest + 7, p->stage_fd, man.config.digest + 7, 0) ==
            0) {
                if ((r = config_ready(p)) < 0)
                        goto out;
        } else {
                Blob *b = &p->blobs[p->n_blobs++];
                *b = (Blob){ .pull = p,
                             .desc = &man.config,
                             .what = "config",
                             .index = 0,
                             .fd = -EBADF,
                             .unpack_fd = -EBADF,
                             .unpack_wfd = -EBADF,
                             .unpack_blob_fd = -EBADF };
                memcpy(b->hex, man.config.digest + 7, 65);
        }
        for (size_t i = 0; i < man.n_layers; i++) {
                const ImageDescriptor *d = &man.layers[i];
                bool dup = false;
                for (size_t k = 0; k < p->n_blobs; k++)
                        dup = dup || streq(p->blobs[k].desc->digest, d->digest);
                if (dup)
                        continue;
                if (d->size < 0) {
                        r = error_set(p->err, -EBADMSG, "layer %s has no size", d->digest);
                        goto out;
                }
                Blob *b = &p->blobs[p->n_blobs++];
                *b = (Blob){ .pull = p,
                             .desc = d,
                             .what = "layer",
                             .index = (unsigned)i + 1,
                             .fd = -EBADF,
                             .unpack_fd = -EBADF,
                             .unpack_wfd = -EBADF,
                             .unpack_blob_fd = -EBADF };
                /* Chain IDs from the config when it is here already (else
                 * config_ready() sets them once it is). */
                if (p->chain_ids && !store_layer_exists(p->s, p->chain_ids[i])) {
                        b->diff_id = p->config.diff_ids[i];
                        b->chain_id = p->chain_ids[i];
                        b->unpack_wanted = true;
                }
                memcpy(b->hex, d->digest + 7, 65);
        }
        /* Partials are locked in digest order: two pulls sharing blobs in
         * different manifest orders must not wait for each other in a cycle. */
        order = calloc(p->n_blobs + 1, sizeof(Blob *));
        if (!order) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < p->n_blobs; i++)
                order[i] = &p->blobs[i];
        qsort(order, p->n_blobs, sizeof(Blob *), blob_hex_cmp);
        for (size_t i = 0; i < p->n_blobs; i++) {
                Blob *b = order[i];
                /* In the store already: never downloaded again. */
                if (linkat(p->s->blobs_fd, b->hex, p->stage_fd, b->hex, 0) == 0) {
                        b->done = true;
                        progress(p, IMAGE_PULL_BLOB_EXISTS, b, (uint64_t)b->desc->size);
                        continue;
                }
                if ((r = blob_open_partial(p, b)) < 0)
                        goto out;
                if (r == 1 && (r = blob_stage(p, b)) < 0)
                        goto out;
        }
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        if ((r = download_blobs(p)) < 0)
                goto out;
        usec_t t1 = now_usec(CLOCK_MONOTONIC);
        size_t n_early = strv_length(p->unpacked) / 2;
        if (p->o->progress) {
                ImagePullProgress pp = { .event = IMAGE_PULL_COMMITTING, .digest = m->digest };
                p->o->progress(&pp, p->o->userdata);
        }
        ImageDescriptor desc = { .media_type = m->media_type,
                                 .digest = (char *)m->digest,
                                 .size = (int64_t)m->len };
        r = image_store_load_staged(p->s, p->stage_name, &desc, names, p->unpacked, ret_names,
                                    p->err);
        p->stage_name = mfree(p->stage_name); /* removed by image_store_load_staged() */
        p->unpacked = strv_free(p->unpacked); /* committed or removed by it too */
        /* For bench/pull.sh (NANOLET_LOG_LEVEL=7): where the time went. */
        log_debug("Pull of %s: blobs downloaded and verified (%zu layers unpacked meanwhile) in "
                  "%.3fs, rest unpacked and committed in %.3fs",
                  m->digest, n_early, (double)(t1 - t0) / 1e6,
                  (double)(now_usec(CLOCK_MONOTONIC) - t1) / 1e6);
out:
        /* Before the manifest goes: a thread still unpacking after a failure
         * reads its layer's digest from it (a use-after-free that crashed
         * test-registry's corrupt-blob pull once in a few runs). */
        for (size_t i = 0; i < p->n_blobs; i++)
                unpack_stop(p, &p->blobs[i]);
        p->man = NULL;
        image_manifest_done(&man);
        return r;
}

static int load_registries_conf(const ImagePullOptions *o, RegistryConfig *c, Error *err) {
        *c = (RegistryConfig){};
        /* /dev/null, as for other tools, means "no configuration". */
        if (o->registries_conf && !streq(o->registries_conf, "/dev/null")) {
                _cleanup_free_ char *data = NULL;
                size_t n = 0;
                int r = read_full_file_at(AT_FDCWD, o->registries_conf, 1024U * 1024U, &data, &n);
                if (r < 0 && r != -ENOENT)
                        return error_set(err, r, "cannot read %s: %s", o->registries_conf,
                                         strerror(-r));
                if (r >= 0) {
                        if ((r = registry_config_parse(data, n, o->registries_conf, c, err)) < 0)
                                return r;
                        STRV_FOREACH(note, c->notes)
                                log_debug("%s", *note);
                }
        }
        STRV_FOREACH(h, o->insecure_registries) {
                int r = registry_config_add_insecure(c, *h);
                if (r < 0)
                        return error_set(err, r, "invalid insecure registry \"%s\"", *h);
        }
        return 0;
}

int image_pull_run(ImageStore *s, const char *refstr, const ImagePullOptions *o, char **ret_digest,
                   Error *err) {
        _cleanup_(registry_config_done) RegistryConfig conf = {};
        _cleanup_free_ char *repo = NULL, *name = NULL, *tag = NULL;
        _cleanup_close_ int gc = -EBADF;
        RegistryEndpoint *eps = NULL;
        size_t n_eps = 0;
        ImageRef ref = {};
        Error last = {};
        int r;

        if ((r = image_ref_parse(refstr, &ref, err)) < 0)
                return r;
        repo = image_ref_repository(&ref);
        name = image_ref_to_string(&ref);
        if (ref.tag && ref.digest)
                tag = strprintf("%s:%s", strna(repo), ref.tag);
        else if (ref.tag)
                tag = strdup(strna(name));
        if (!repo || !name || (ref.tag && !tag)) {
                r = -ENOMEM;
                goto out;
        }
        if ((r = load_registries_conf(o, &conf, err)) < 0 ||
            (r = registry_config_endpoints(&conf, repo, ref.digest != NULL, &eps, &n_eps, err)) < 0)
                goto out;
        /* Partials and the staging dir must survive a concurrent prune. */
        if ((r = store_lock(s, GC_LOCK, LOCK_SH, &gc, err)) < 0)
                goto out;
        const char *reference = ref.digest ? ref.digest : ref.tag;
        for (size_t i = 0; i < n_eps; i++) {
                Registry reg;
                Resolved m = {};
                Error e = {};
                r = registry_init(&reg, o, &eps[i], &e);
                char head_digest[72];
                _cleanup_(image_freep) Image *known = NULL, *tagged = NULL;
                /* The HEAD only pays when the tag is here already (kubelet's
                 * Always on an unchanged tag: no GET at all). For a tag the
                 * store has not seen it would be one more authenticated round
                 * trip before the GET that is needed anyway (a manifest found
                 * by that GET under another name is still only tagged). */
                if (r >= 0 && !ref.digest && tag && image_store_get(s, tag, &tagged, NULL) >= 0 &&
                    head_manifest_digest(&reg, reference, head_digest) >= 0 &&
                    image_store_get(s, head_digest, &known, NULL) >= 0) {
                        /* Unchanged: tag it (it may be new here) and done. */
                        if (o->progress) {
                                ImagePullProgress pp = { .event = IMAGE_PULL_RESOLVED,
                                                         .digest = head_digest,
                                                         .endpoint = reg.host };
                                o->progress(&pp, o->userdata);
                        }
                        r = tag ? image_store_tag(s, head_digest, tag, &e) : 0;
                        if (r >= 0 && ret_digest && !(*ret_digest = strdup(head_digest)))
                                r = -ENOMEM;
                        registry_done(&reg);
                        if (r >= 0) {
                                r = 1;
                                goto out;
                        }
                        last = e;
                        continue;
                }
                if (r >= 0)
                        r = resolve_endpoint(&reg, reference, &m, &e);
                if (r >= 0) {
                        if (o->progress) {
                                ImagePullProgress pp = { .event = IMAGE_PULL_RESOLVED,
                                                         .digest = m.digest,
                                                         .endpoint = reg.host };
                                o->progress(&pp, o->userdata);
                        }
                        _cleanup_(image_freep) Image *have = NULL;
                        if (image_store_get(s, m.digest, &have, NULL) >= 0) {
                                /* Present: only the tag may be new. A digest
                                 * reference resolves by digest already. */
                                r = tag ? image_store_tag(s, m.digest, tag, &e) : 0;
                                if (r >= 0)
                                        r = 1;
                        } else {
                                Pull p = {
                                        .s = s, .o = o, .reg = &reg, .err = &e, .stage_fd = -EBADF
                                };
                                char *names[] = { name, NULL };
                                r = pull_image(&p, &m, names, NULL);
                                pull_done(&p);
                        }
                        if (r >= 0 && ret_digest && !(*ret_digest = strdup(m.digest)))
                                r = -ENOMEM;
                }
                free(m.media_type);
                free(m.body);
                registry_done(&reg);
                if (r >= 0)
                        goto out;
                if (!e.message[0])
                        (void)error_set(&e, r, "%s", strerror(-r));
                if (eps[i].mirror)
                        log_debug("Mirror %s/%s failed for %s: %s", eps[i].host, eps[i].path, name,
                                  e.message);
                last = e;
                /* Only a manifest a mirror could not give is a reason to try
                 * the next: a digest mismatch or a full disk is not. */
                if (r == -EBADMSG || r == -ENOSPC)
                        break;
        }
        if (err && !err->error)
                *err = last;
        if (r >= 0)
                r = -ENOENT;
out:
        registry_endpoints_free(eps, n_eps);
        image_ref_done(&ref);
        return r;
}

/* ---- the helper side (the agent's side is image-pull-agent.c) ---- */

/* The job on stdin: image-pull-agent.c's limit. */
#define HELPER_JOB_MAX (4U * 1024U * 1024U)

static int helper_run(const char *root, json_t *job, char **ret_digest, Error *err) {
        _cleanup_image_store_ ImageStore *s = NULL;
        _cleanup_strv_free_ char **insecure = calloc(1, sizeof(char *));
        const char *ref = json_string_value(json_object_get(job, "ref"));
        size_t i;
        json_t *v;
        int r;

        if (!insecure)
                return -ENOMEM;
        if (!ref)
                return error_set(err, -EINVAL, "image pull job has no \"ref\"");
        json_array_foreach(json_object_get(job, "insecure_registries"), i, v) {
                if (!json_is_string(v) || (r = strv_extend(&insecure, json_string_value(v))) < 0)
                        return error_set(err, -EINVAL, "image pull job: bad insecure_registries");
        }
        ImagePullOptions o = {
                .registries_conf = json_string_value(json_object_get(job, "registries_conf")),
                .certs_dir = json_string_value(json_object_get(job, "certs_dir")),
                .credential_file = json_string_value(json_object_get(job, "credential_file")),
                .extra_auths_json = json_string_value(json_object_get(job, "extra_auths_json")),
                .insecure_registries = insecure,
        };
        /* The agent cleaned the store up when it opened it. */
        if ((r = store_open(root, NULL, false, &s, err)) < 0)
                return r;
        return image_pull_run(s, ref, &o, ret_digest, err);
}

static int run_pull(const void *args, json_t *result, Error *err) {
        const ImagePullArgs *a = args;
        _cleanup_free_ char *input = NULL, *digest = NULL;
        size_t n = 0;

        int r = read_full_fd(STDIN_FILENO, HELPER_JOB_MAX, &input, &n);
        if (r < 0)
                return error_set(err, r, "cannot read the image pull job: %s", strerror(-r));
        _cleanup_json_ json_t *job = json_loadb(input, n, 0, NULL);
        explicit_bzero(input, n);
        if (!json_is_object(job))
                return error_set(err, -EINVAL, "image pull job is not a JSON object");
        r = helper_run(a->store, job, &digest, err);
        if (r >= 0 && digest && json_object_set_new(result, "digest", json_string(digest)) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        return r;
}

const HelperMain image_pull_helper = {
        .mode = &image_pull_helper_mode,
        .run = run_pull,
};
