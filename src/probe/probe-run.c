/* See probe-run.h. One ProbeRun per probe in flight; everything it holds
 * (child, pipe, socket, curl handle, timers) goes in run_release(), on
 * every way out: outcome, timeout or cancel. */
#include "probe-run.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "fileio.h"
#include "grpc-health.h"
#include "log.h"
#include "macro.h"
#include "child.h"
#include "string-util.h"

#define PROBE_MAX_REDIRECTS 10
#define PROBE_USER_AGENT "kube-probe/nanolet-" NANOLET_VERSION

struct ProbeRun {
        ProbeContext ctx;
        ProbeActionType type;
        probe_done_t done;
        void *userdata;
        usec_t timeout;
        EventSource *timer; /* the timeout; for sleep, the sleep itself */
        EventSource *defer; /* an outcome known at start, reported from the loop */
        ProbeResult deferred_result;
        char *deferred_output;

        /* output: command output or response body */
        char *buf;
        size_t len;
        bool truncated;

        /* exec */
        Child *child;
        char *pid_file;
        char *display;
        bool timed_out;

        /* httpGet, grpc */
        CURL *easy;
        struct curl_slist *hdrs;
        char errbuf[CURL_ERROR_SIZE];
        char *url;
        char *host;
        unsigned redirects;
        uint8_t *post;
        size_t post_len;
        long grpc_status; /* -1 = not seen */
        char *grpc_message;

        /* tcpSocket */
        int sock;
        EventSource *sock_io;
        uint16_t port;
};

/* runc writes `--pid-file F` through a sibling `.F` that it creates with
 * O_EXCL and then renames to F. A runc killed between the two (a probe's
 * timeout, an agent stopped mid-probe) leaves `.F` behind, and every later
 * exec naming F fails with "file exists" for as long as the container runs:
 * a readiness probe would never pass again. So both go, before and after. */
static void pid_file_remove(const char *path) {
        const char *slash = strrchr(path, '/');
        size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;

        (void)unlink(path);
        _cleanup_free_ char *sibling = strprintf("%.*s.%s", (int)dir_len, path, path + dir_len);
        if (sibling)
                (void)unlink(sibling);
}

static void pid_file_remove_and_free(void *userdata) {
        _cleanup_free_ char *path = userdata;

        pid_file_remove(path);
}

static void run_release(ProbeRun *r) {
        r->timer = event_source_free(r->timer);
        r->defer = event_source_free(r->defer);
        /* Still running: its group dies, and the loop reaps it. A runc
         * killed inside its open(O_EXCL) of `.F` still makes the file, so
         * the files go only once it is reaped. */
        if (r->pid_file)
                child_free_then(TAKE_PTR(r->child), pid_file_remove_and_free,
                                TAKE_PTR(r->pid_file));
        else
                r->child = child_free(r->child);
        /* A handle or a header list exists only with ctx.curl, whose table
         * frees it. */
        if (r->easy) {
                event_curl_remove(r->ctx.curl, r->easy);
                event_curl_api(r->ctx.curl)->easy_cleanup(r->easy);
                r->easy = NULL;
        }
        if (r->hdrs)
                event_curl_api(r->ctx.curl)->slist_free_all(r->hdrs);
        r->hdrs = NULL;
        r->sock_io = event_source_free(r->sock_io);
        if (r->sock >= 0)
                (void)close(r->sock);
        r->sock = -1;
}

static void run_free(ProbeRun *r) {
        run_release(r);
        free(r->deferred_output);
        free(r->buf);
        free(r->display);
        free(r->url);
        free(r->host);
        free(r->post);
        free(r->grpc_message);
        free(r);
}

ProbeRun *probe_run_cancel(ProbeRun *r) {
        if (r)
                run_free(r);
        return NULL;
}

static void finish(ProbeRun *r, ProbeResult result, const char *fmt, ...) _printf_(3, 4);
static void finish(ProbeRun *r, ProbeResult result, const char *fmt, ...) {
        _cleanup_free_ char *out = NULL;
        va_list ap;

        va_start(ap, fmt);
        out = strvprintf(fmt, ap);
        va_end(ap);
        run_release(r);
        r->done(result, out ? out : "", r->userdata);
        run_free(r);
}

static void buf_append(ProbeRun *r, const char *data, size_t n) {
        size_t room = PROBE_OUTPUT_MAX - r->len;
        if (n > room) {
                r->truncated = true;
                n = room;
        }
        if (n == 0)
                return;
        char *b = realloc(r->buf, r->len + n + 1);
        if (!b)
                return;
        memcpy(b + r->len, data, n);
        r->len += n;
        b[r->len] = 0;
        r->buf = b;
}

static const char *buf_str(ProbeRun *r) {
        return r->buf ? r->buf : "";
}

static int on_defer(EventSource *s, usec_t now, void *userdata) {
        ProbeRun *r = userdata;
        finish(r, r->deferred_result, "%s", strempty(r->deferred_output));
        return 0;
}

/* An outcome known while starting: reported from the loop, as always. */
static int finish_later(ProbeRun *r, ProbeResult result, char *output) {
        r->deferred_result = result;
        free(r->deferred_output);
        r->deferred_output = output;
        return event_add_defer(r->ctx.event, &r->defer, on_defer, r);
}

/* ---- exec ---- */

static void on_exec_exit(Child *c, void *userdata) {
        ProbeRun *r = userdata;
        size_t n;
        const char *out = child_stdout(c, &n);
        int code, status;

        child_get_status(c, &code, &status);
        buf_append(r, out, n);
        if (child_stdout_truncated(c))
                r->truncated = true;
        if (r->timed_out)
                finish(r, PROBE_RESULT_FAILURE, "command \"%s\" timed out", strna(r->display));
        else if (code == CLD_EXITED && status == 0)
                finish(r, PROBE_RESULT_SUCCESS, "%s", buf_str(r));
        else if (code == CLD_EXITED)
                finish(r, PROBE_RESULT_FAILURE, "%s%scommand \"%s\" exited with %d", buf_str(r),
                       r->len > 0 && r->buf[r->len - 1] != '\n' ? "\n" : "", strna(r->display),
                       status);
        else
                finish(r, PROBE_RESULT_FAILURE, "%scommand \"%s\" killed by signal %d", buf_str(r),
                       strna(r->display), status);
}

static void exec_kill(ProbeRun *r) {
        /* What the command runs is not runc's child and runs in a session
         * of its own: the pid file names it, its process group is its tree. */
        _cleanup_free_ char *data = NULL;
        if (r->pid_file && read_full_file_at(AT_FDCWD, r->pid_file, 64, &data, NULL) == 0) {
                long pid = strtol(data, NULL, 10);
                if (pid > 1) {
                        (void)kill(-(pid_t)pid, SIGKILL);
                        (void)kill((pid_t)pid, SIGKILL);
                }
        }
        child_kill(r->child);
}

static int exec_start(ProbeRun *r, const ProbeAction *a) {
        if (!a->argv || !a->argv[0])
                return -EINVAL;
        r->display = strdup(a->display ? a->display : a->argv[0]);
        if (!r->display)
                return -ENOMEM;
        if (a->pid_file) {
                r->pid_file = strdup(a->pid_file);
                if (!r->pid_file)
                        return -ENOMEM;
                pid_file_remove(r->pid_file);
        }
        /* The probe's own timer bounds it (exec_kill): no child timeout. */
        ChildOptions o = {
                .argv = a->argv,
                .pdeath_signal = SIGKILL,
                .capture = CHILD_CAPTURE_MERGED,
                .stdout_max = PROBE_OUTPUT_MAX,
        };
        return child_spawn(r->ctx.event, &o, on_exec_exit, r, &r->child);
}

/* ---- httpGet, grpc ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
        ProbeRun *r = userdata;
        size_t n = size * nmemb;
        buf_append(r, data, n);
        /* Enough read: stop the transfer (seen as CURLE_WRITE_ERROR). */
        return r->truncated ? 0 : n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata) {
        ProbeRun *r = userdata;
        size_t n = size * nmemb;

        if (r->type != PROBE_ACTION_GRPC)
                return n;
        /* HTTP/2 trailers come through here as well. */
        _cleanup_free_ char *line = strndup(data, n);
        if (!line)
                return n;
        line[strcspn(line, "\r\n")] = 0;
        char *colon = strchr(line, ':');
        if (!colon)
                return n;
        *colon = 0;
        const char *value = colon + 1 + strspn(colon + 1, " \t");
        if (strcasecmp(line, "grpc-status") == 0)
                r->grpc_status = strtol(value, NULL, 10);
        else if (strcasecmp(line, "grpc-message") == 0) {
                free(r->grpc_message);
                r->grpc_message = strdup(value);
        }
        return n;
}

static char *url_hostname(const CurlApi *c, const char *url) {
        CURLU *u = c->url();
        char *host = NULL, *copy = NULL;
        if (u && c->url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
            c->url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
                copy = strdup(host);
                c->free(host);
        }
        c->url_cleanup(u);
        return copy;
}

static void on_curl_done(EventCurl *ec, CURL *easy, CURLcode result, void *userdata);

static int curl_submit(ProbeRun *r) {
        int q = event_curl_add(r->ctx.curl, r->easy, on_curl_done, r);
        return q;
}

static void http_done(ProbeRun *r, long code) {
        const CurlApi *c = event_curl_api(r->ctx.curl);
        if (code >= 300 && code < 400) {
                char *location = NULL;
                (void)c->easy_getinfo(r->easy, CURLINFO_REDIRECT_URL, &location);
                _cleanup_free_ char *host = location ? url_hostname(c, location) : NULL;
                /* kubelet follows redirects to the same host only; any other
                 * redirect counts as the answer it is (3xx passes). */
                if (host && r->host && strcasecmp(host, r->host) == 0 &&
                    r->redirects < PROBE_MAX_REDIRECTS) {
                        r->redirects++;
                        r->len = 0;
                        r->truncated = false;
                        if (c->easy_setopt(r->easy, CURLOPT_URL, location) == CURLE_OK &&
                            curl_submit(r) >= 0)
                                return;
                }
                if (location && !(host && r->host && strcasecmp(host, r->host) == 0)) {
                        finish(r, PROBE_RESULT_SUCCESS,
                               "Probe terminated redirects, Response body: %s", buf_str(r));
                        return;
                }
        }
        if (code >= 200 && code < 400) {
                finish(r, PROBE_RESULT_SUCCESS, "%s", buf_str(r));
                return;
        }
        finish(r, PROBE_RESULT_FAILURE, "HTTP probe failed with statuscode: %ld", code);
}

static void grpc_done(ProbeRun *r, long code) {
        int status;

        if (r->grpc_status > 0) {
                finish(r, PROBE_RESULT_FAILURE, "rpc error: code = %ld desc = %s", r->grpc_status,
                       strempty(r->grpc_message));
                return;
        }
        if (code != 200) {
                finish(r, PROBE_RESULT_FAILURE, "rpc error: unexpected HTTP status code %ld", code);
                return;
        }
        int q = grpc_health_response_decode((const uint8_t *)r->buf, r->len, &status);
        if (q < 0) {
                finish(r, PROBE_RESULT_FAILURE, "rpc error: malformed response: %s", strerror(-q));
                return;
        }
        if (status != GRPC_HEALTH_SERVING) {
                const char *name = grpc_serving_status_to_string(status);
                {
                        finish(r, PROBE_RESULT_FAILURE, "service unhealthy (responded with \"%s\")",
                               name ? name : "UNKNOWN");
                        return;
                }
        }
        finish(r, PROBE_RESULT_SUCCESS, "%s", "");
}

static void on_curl_done(EventCurl *ec, CURL *easy, CURLcode result, void *userdata) {
        ProbeRun *r = userdata;
        const CurlApi *c = event_curl_api(ec);
        long code = 0;

        if (result != CURLE_OK && !(result == CURLE_WRITE_ERROR && r->truncated)) {
                const char *what = r->errbuf[0] ? r->errbuf : c->easy_strerror(result);
                if (r->type == PROBE_ACTION_GRPC) {
                        finish(r, PROBE_RESULT_FAILURE, "failed to connect service \"%s:%u\": %s",
                               r->host, (unsigned)r->port, what);
                        return;
                }
                char *url = NULL;
                (void)c->easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &url);
                {
                        finish(r, PROBE_RESULT_FAILURE, "Get \"%s\": %s", url ? url : r->url, what);
                        return;
                }
        }
        (void)c->easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        if (r->type == PROBE_ACTION_GRPC)
                grpc_done(r, code);
        else
                http_done(r, code);
}

static int curl_start(ProbeRun *r, const ProbeAction *a) {
        int q;

        if (!r->ctx.curl)
                return -EINVAL;
        const CurlApi *c = event_curl_api(r->ctx.curl);
        r->grpc_status = -1;
        if (a->type == PROBE_ACTION_GRPC) {
                if (!a->host || a->port == 0)
                        return -EINVAL;
                r->port = a->port;
                r->host = strdup(a->host);
                r->url = strchr(a->host, ':') ? strprintf("http://[%s]:%u" GRPC_HEALTH_CHECK_PATH,
                                                          a->host, (unsigned)a->port)
                                              : strprintf("http://%s:%u" GRPC_HEALTH_CHECK_PATH,
                                                          a->host, (unsigned)a->port);
                if (!r->host || !r->url)
                        return -ENOMEM;
                q = grpc_health_request_encode(a->service, &r->post, &r->post_len);
                if (q < 0)
                        return q;
        } else {
                if (!a->url)
                        return -EINVAL;
                r->url = strdup(a->url);
                r->host = url_hostname(c, a->url);
                if (!r->url || !r->host)
                        return r->url ? -EINVAL : -ENOMEM;
        }

        bool have_ua = false, have_accept = false;
        for (char *const *h = a->headers; h && *h; h++) {
                struct curl_slist *n = c->slist_append(r->hdrs, *h);
                if (!n)
                        return -ENOMEM;
                r->hdrs = n;
                have_ua = have_ua || strncasecmp(*h, "User-Agent:", 11) == 0;
                have_accept = have_accept || strncasecmp(*h, "Accept:", 7) == 0;
        }
        const char *extra[] = {
                have_ua ? NULL : "User-Agent: " PROBE_USER_AGENT,
                have_accept || a->type == PROBE_ACTION_GRPC ? NULL : "Accept: */*",
                a->type == PROBE_ACTION_GRPC ? "Content-Type: application/grpc" : NULL,
                a->type == PROBE_ACTION_GRPC ? "TE: trailers" : NULL,
        };
        for (size_t i = 0; i < ELEMENTSOF(extra); i++) {
                if (!extra[i])
                        continue;
                struct curl_slist *n = c->slist_append(r->hdrs, extra[i]);
                if (!n)
                        return -ENOMEM;
                r->hdrs = n;
        }

        r->easy = c->easy_init();
        if (!r->easy)
                return -ENOMEM;
        bool ok = c->easy_setopt(r->easy, CURLOPT_URL, r->url) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
                  /* probes go straight to the pod, never through the agent's proxy */
                  c->easy_setopt(r->easy, CURLOPT_NOPROXY, "*") == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_SSL_VERIFYPEER, 0L) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_SSL_VERIFYHOST, 0L) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
                  /* a fresh connection per probe, as kubelet (no keep-alive):
                   * a probe sees the server as a new client would, and a
                   * reused HTTP/2 prior-knowledge connection is not needed */
                  c->easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 1L) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_FORBID_REUSE, 1L) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->errbuf) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->hdrs) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_WRITEDATA, r) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK &&
                  c->easy_setopt(r->easy, CURLOPT_HEADERDATA, r) == CURLE_OK;
        if (ok && a->type == PROBE_ACTION_GRPC)
                ok = c->easy_setopt(r->easy, CURLOPT_HTTP_VERSION,
                                    (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE) == CURLE_OK &&
                     c->easy_setopt(r->easy, CURLOPT_POST, 1L) == CURLE_OK &&
                     c->easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->post) == CURLE_OK &&
                     c->easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)r->post_len) == CURLE_OK;
        else if (ok)
                ok = c->easy_setopt(r->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) ==
                     CURLE_OK;
        if (!ok)
                return -EINVAL;
        return curl_submit(r);
}

/* ---- tcpSocket ---- */

static int on_tcp_ready(EventSource *s, int fd, uint32_t revents, void *userdata) {
        ProbeRun *r = userdata;
        int err = 0;
        socklen_t len = sizeof err;

        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        if (err == 0)
                finish(r, PROBE_RESULT_SUCCESS, "%s", "");
        else
                finish(r, PROBE_RESULT_FAILURE, "dial tcp %s:%u: connect: %s", r->host,
                       (unsigned)r->port, strerror(err));
        return 0;
}

static int tcp_start(ProbeRun *r, const ProbeAction *a) {
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } addr = {};
        socklen_t alen;

        if (!a->host || a->port == 0)
                return -EINVAL;
        r->host = strdup(a->host);
        r->port = a->port;
        if (!r->host)
                return -ENOMEM;
        if (inet_pton(AF_INET, a->host, &addr.in.sin_addr) == 1) {
                addr.in.sin_family = AF_INET;
                addr.in.sin_port = htons(a->port);
                alen = sizeof addr.in;
        } else if (inet_pton(AF_INET6, a->host, &addr.in6.sin6_addr) == 1) {
                addr.in6.sin6_family = AF_INET6;
                addr.in6.sin6_port = htons(a->port);
                alen = sizeof addr.in6;
        } else
                /* A name would need a resolver call; probes target IPs. */
                return finish_later(r, PROBE_RESULT_UNKNOWN,
                                    strprintf("host \"%s\" is not an IP address", a->host));

        r->sock = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (r->sock < 0)
                return -errno;
        if (connect(r->sock, &addr.sa, alen) < 0 && errno != EINPROGRESS)
                return finish_later(r, PROBE_RESULT_FAILURE,
                                    strprintf("dial tcp %s:%u: connect: %s", a->host,
                                              (unsigned)a->port, strerror(errno)));
        /* Connected or not yet: writable tells either way. */
        return event_add_io(r->ctx.event, &r->sock_io, r->sock, EPOLLOUT, on_tcp_ready, r);
}

/* ---- timers ---- */

static int on_sleep_done(EventSource *s, usec_t now, void *userdata) {
        finish(userdata, PROBE_RESULT_SUCCESS, "%s", "");
        return 0;
}

static int on_timeout(EventSource *s, usec_t now, void *userdata) {
        ProbeRun *r = userdata;

        r->timer = event_source_free(r->timer);
        switch (r->type) {
        case PROBE_ACTION_EXEC:
                /* The exit, which the kill brings at once, reports it. */
                r->timed_out = true;
                exec_kill(r);
                return 0;
        case PROBE_ACTION_HTTP_GET:
                finish(r, PROBE_RESULT_FAILURE,
                       "Get \"%s\": context deadline exceeded (Client.Timeout exceeded while "
                       "awaiting headers)",
                       r->url);
                return 0;
        case PROBE_ACTION_GRPC:
                finish(r, PROBE_RESULT_FAILURE, "timeout: health rpc did not complete within %llus",
                       (unsigned long long)(r->timeout / USEC_PER_SEC));
                return 0;
        case PROBE_ACTION_TCP_SOCKET:
                finish(r, PROBE_RESULT_FAILURE, "dial tcp %s:%u: i/o timeout", r->host,
                       (unsigned)r->port);
                return 0;
        case PROBE_ACTION_SLEEP:
        case _PROBE_ACTION_TYPE_INVALID:
        case _PROBE_ACTION_TYPE_MAX:
        default:
                finish(r, PROBE_RESULT_FAILURE, "sleep cut short after %llus",
                       (unsigned long long)(r->timeout / USEC_PER_SEC));
                return 0;
        }
}

int probe_run_start(const ProbeContext *ctx, const ProbeAction *a, usec_t timeout,
                    probe_done_t done, void *userdata, ProbeRun **ret) {
        int q;

        assert(ctx && ctx->event && a && done && ret);
        ProbeRun *r = calloc(1, sizeof *r);
        if (!r)
                return -ENOMEM;
        *r = (ProbeRun){
                .ctx = *ctx,
                .type = a->type,
                .done = done,
                .userdata = userdata,
                .timeout = timeout,
                .sock = -1,
        };
        switch (a->type) {
        case PROBE_ACTION_EXEC:
                q = exec_start(r, a);
                break;
        case PROBE_ACTION_HTTP_GET:
        case PROBE_ACTION_GRPC:
                q = curl_start(r, a);
                break;
        case PROBE_ACTION_TCP_SOCKET:
                q = tcp_start(r, a);
                break;
        case PROBE_ACTION_SLEEP:
                q = event_add_time_relative(ctx->event, &r->timer, a->sleep, 0, on_sleep_done, r);
                break;
        case _PROBE_ACTION_TYPE_INVALID:
        case _PROBE_ACTION_TYPE_MAX:
        default:
                q = -EINVAL;
        }
        if (q >= 0 && timeout != USEC_INFINITY && !r->defer &&
            !(a->type == PROBE_ACTION_SLEEP && a->sleep <= timeout)) {
                if (a->type == PROBE_ACTION_SLEEP)
                        r->timer = event_source_free(r->timer);
                q = event_add_time_relative(ctx->event, &r->timer, timeout, 0, on_timeout, r);
        }
        if (q < 0) {
                run_free(r);
                return q;
        }
        *ret = r;
        return 0;
}
