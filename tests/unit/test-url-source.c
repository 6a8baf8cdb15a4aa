/* URL source against a small HTTP/1.1 server that runs on the same event
 * loop (loopback only, port 0). Each test gives the server a script: the
 * response to request i is script[i] (the last one repeats), so the outcome
 * does not depend on timing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include "fileio.h"
#include "source.h"
#include "string-util.h"

#define CAP (3 * USEC_PER_SEC)
#define POLL (100 * USEC_PER_MSEC)

/* ---- the server ---- */

typedef struct Resp {
        int status;       /* 0: read the request and never answer */
        const char *body; /* NULL: empty */
        size_t fill;      /* > 0: a body of this many '#' instead */
        const char *etag; /* sent, and answered with 304 when the request matches */
        const char *last_modified;
        const char *location;
        const char *retry_after;
        bool no_length; /* body delimited by closing the connection */
} Resp;

typedef struct Conn Conn;
typedef struct Server {
        Event *event;
        int fd;
        EventSource *listen_source;
        int port;
        const Resp *script;
        size_t n_script;
        char *requests[32];
        size_t n_requests;
        Conn *conns[16];
        size_t n_conns;
        bool keep_alive;     /* HTTP/1.1 persistent connections instead of one per request */
        unsigned n_accepted; /* connections */
} Server;

struct Conn {
        Server *server;
        int fd;
        EventSource *source;
        char in[16384];
        size_t in_len;
        char *out;
        size_t out_len, out_off;
        bool answered;
};

static void conn_free(Conn *c) {
        Server *s = c->server;
        for (size_t i = 0; i < s->n_conns; i++)
                if (s->conns[i] == c) {
                        s->conns[i] = s->conns[--s->n_conns];
                        break;
                }
        event_source_free(c->source);
        close(c->fd);
        free(c->out);
        free(c);
}

static void conn_respond(Conn *c, const char *request) {
        Server *s = c->server;
        assert_true(s->n_script > 0);
        const Resp *r = &s->script[MIN(s->n_requests, s->n_script) - 1];
        if (r->status == 0)
                return; /* the slow server */

        int status = r->status;
        char *match = r->etag ? strprintf("If-None-Match: %s\r\n", r->etag) : NULL;
        if (match && strstr(request, match))
                status = 304;
        free(match);

        char *body = NULL;
        size_t body_len = 0;
        if (status != 304) {
                if (r->fill > 0) {
                        body = malloc(r->fill);
                        assert_non_null(body);
                        memset(body, '#', r->fill);
                        body_len = r->fill;
                } else if (r->body) {
                        body = strdup(r->body);
                        body_len = strlen(r->body);
                }
        }

        char *head = strprintf(
                "HTTP/1.1 %d X\r\n"
                "%s"
                "%s%s%s"
                "%s%s%s"
                "%s%s%s"
                "%s%s%s"
                "%s%zu%s"
                "\r\n",
                status, s->keep_alive ? "" : "Connection: close\r\n",
                r->retry_after ? "Retry-After: " : "", strempty(r->retry_after),
                r->retry_after ? "\r\n" : "", r->etag ? "ETag: " : "", strempty(r->etag),
                r->etag ? "\r\n" : "", r->last_modified ? "Last-Modified: " : "",
                strempty(r->last_modified), r->last_modified ? "\r\n" : "",
                r->location ? "Location: " : "", strempty(r->location), r->location ? "\r\n" : "",
                r->no_length ? "X-No-Length: " : "Content-Length: ", body_len, "\r\n");
        assert_non_null(head);
        size_t hl = strlen(head);
        c->out = malloc(hl + body_len);
        assert_non_null(c->out);
        memcpy(c->out, head, hl);
        if (body_len)
                memcpy(c->out + hl, body, body_len);
        c->out_len = hl + body_len;
        free(head);
        free(body);
        assert_int_equal(event_source_set_io_events(c->source, EPOLLIN | EPOLLOUT), 0);
}

static int conn_on_io(EventSource *es, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        Server *s = c->server;

        if (revents & EPOLLIN) {
                ssize_t n = recv(fd, c->in + c->in_len, sizeof c->in - 1 - c->in_len, 0);
                if (n <= 0) {
                        if (n < 0 && errno == EAGAIN)
                                return 0;
                        conn_free(c);
                        return 0;
                }
                c->in_len += (size_t)n;
                c->in[c->in_len] = 0;
                if (!c->answered && strstr(c->in, "\r\n\r\n")) {
                        c->answered = true;
                        assert_true(s->n_requests < ELEMENTSOF(s->requests));
                        s->requests[s->n_requests++] = strdup(c->in);
                        conn_respond(c, c->in);
                }
        }
        if ((revents & EPOLLOUT) && c->out) {
                while (c->out_off < c->out_len) {
                        ssize_t n = send(fd, c->out + c->out_off, c->out_len - c->out_off,
                                         MSG_NOSIGNAL);
                        if (n < 0) {
                                if (errno == EAGAIN)
                                        return 0;
                                conn_free(c); /* the client gave up (body cap) */
                                return 0;
                        }
                        c->out_off += (size_t)n;
                }
                if (!s->keep_alive) {
                        conn_free(c);
                        return 0;
                }
                /* ready for the next request on this connection */
                free(c->out);
                c->out = NULL;
                c->out_len = c->out_off = c->in_len = 0;
                c->answered = false;
                assert_int_equal(event_source_set_io_events(c->source, EPOLLIN), 0);
        } else if (revents & (EPOLLHUP | EPOLLERR))
                conn_free(c);
        return 0;
}

static int server_on_accept(EventSource *es, int fd, uint32_t revents, void *userdata) {
        Server *s = userdata;
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0)
                return 0;
        Conn *c = calloc(1, sizeof *c);
        assert_non_null(c);
        c->server = s;
        c->fd = cfd;
        s->n_accepted++;
        assert_int_equal(event_add_io(s->event, &c->source, cfd, EPOLLIN, conn_on_io, c), 0);
        assert_true(s->n_conns < ELEMENTSOF(s->conns));
        s->conns[s->n_conns++] = c;
        return 0;
}

static void server_start(Server *s, Event *e) {
        *s = (Server){ .event = e };
        s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        assert_true(s->fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        assert_int_equal(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(s->fd, 16), 0);
        socklen_t l = sizeof a;
        assert_int_equal(getsockname(s->fd, (struct sockaddr *)&a, &l), 0);
        s->port = ntohs(a.sin_port);
        assert_int_equal(event_add_io(e, &s->listen_source, s->fd, EPOLLIN, server_on_accept, s),
                         0);
}

static void server_stop(Server *s) {
        while (s->n_conns > 0)
                conn_free(s->conns[0]);
        event_source_free(s->listen_source);
        close(s->fd);
        for (size_t i = 0; i < s->n_requests; i++)
                free(s->requests[i]);
}

/* ---- fixture ---- */

typedef struct Rec {
        SourceEventType type;
        char *origin, *uid, *old_uid, *name;
        size_t n_errors;
        char *errors;
} Rec;

typedef struct Fixture {
        Event *event;
        PodConfig *config;
        UrlSource *source;
        Server server;
        char url[128];
        Rec ev[64];
        size_t n;
        usec_t max_backoff; /* 0: the default */
} Fixture;

static void record(const SourceEvent *ev, void *userdata) {
        Fixture *f = userdata;
        assert_true(f->n < ELEMENTSOF(f->ev));
        Rec *x = &f->ev[f->n++];
        *x = (Rec){
                .type = ev->type,
                .origin = strdup(ev->origin),
                .uid = ev->uid ? strdup(ev->uid) : NULL,
                .old_uid = ev->old_uid ? strdup(ev->old_uid) : NULL,
                .name = ev->object ? strdup(ev->object->name) : NULL,
        };
        assert_string_equal(ev->source, "http");
        if (ev->errors) {
                x->n_errors = ev->errors->n_errors;
                char *buf = NULL;
                size_t len = 0, cap = 0;
                for (size_t i = 0; i < ev->errors->n; i++) {
                        char *l = diag_to_string(&ev->errors->items[i]);
                        assert_non_null(l);
                        assert_int_equal(strbuf_append(&buf, &len, &cap, l, strlen(l)), 0);
                        free(l);
                }
                x->errors = buf ? buf : strdup("");
        }
}

static void clear(Fixture *f) {
        for (size_t i = 0; i < f->n; i++) {
                free(f->ev[i].origin);
                free(f->ev[i].uid);
                free(f->ev[i].old_uid);
                free(f->ev[i].name);
                free(f->ev[i].errors);
        }
        f->n = 0;
}

static void dump(Fixture *f) {
        for (size_t i = 0; i < f->n; i++)
                fprintf(stderr, "  event %zu: %s uid=%s old=%s errors=%zu %s\n", i,
                        source_event_type_to_string(f->ev[i].type), strna(f->ev[i].uid),
                        strna(f->ev[i].old_uid), f->ev[i].n_errors, strempty(f->ev[i].errors));
}

/* Runs the loop until the server has seen n requests and the source has
 * finished the last of them (the poll after it is scheduled). */
static void run_requests(Fixture *f, size_t n) {
        usec_t start = now_usec(CLOCK_MONOTONIC);
        while (f->server.n_requests < n && now_usec(CLOCK_MONOTONIC) - start < CAP)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(f->server.n_requests, n);
}

/* Runs until request n+1 arrives, which proves request n was handled. */
static void run_handled(Fixture *f, size_t n) {
        run_requests(f, n + 1);
}

static void expect(const Rec *r, SourceEventType type) {
        if (r->type != type)
                fprintf(stderr, "expected %s, got %s\n", source_event_type_to_string(type),
                        source_event_type_to_string(r->type));
        assert_int_equal(r->type, type);
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        assert_non_null(f);
        assert_int_equal(event_new(&f->event), 0);
        assert_int_equal(pod_config_new(&f->config, record, f), 0);
        server_start(&f->server, f->event);
        snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/pods", f->server.port);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        url_source_free(f->source);
        server_stop(&f->server);
        pod_config_free(f->config);
        event_free(f->event);
        clear(f);
        free(f);
        return 0;
}

static void start_full(Fixture *f, const Resp *script, size_t n, const char *url,
                       char *const *headers, usec_t timeout, size_t max_body) {
        f->server.script = script;
        f->server.n_script = n;
        UrlSourceOptions o = {
                .url = url ? url : f->url,
                .headers = headers,
                .node_name = "node1",
                .check_frequency = POLL,
                .timeout = timeout,
                .max_body = max_body,
                .max_backoff = f->max_backoff,
        };
        assert_int_equal(url_source_new(&f->source, f->event, f->config, &o, NULL), 0);
        assert_int_equal(url_source_start(f->source), 0);
}

#define start(f, script) start_full(f, script, ELEMENTSOF(script), NULL, NULL, 0, 0)

static const char pod_a[] = "apiVersion: v1\n"
                            "kind: Pod\n"
                            "metadata:\n"
                            "  name: a\n"
                            "spec:\n"
                            "  containers:\n"
                            "  - name: c\n"
                            "    image: busybox:1\n";

static const char pod_list[] = "apiVersion: v1\n"
                               "kind: PodList\n"
                               "items:\n"
                               "- apiVersion: v1\n"
                               "  kind: Pod\n"
                               "  metadata: {name: a}\n"
                               "  spec: {containers: [{name: c, image: busybox:1}]}\n"
                               "- apiVersion: v1\n"
                               "  kind: Pod\n"
                               "  metadata: {name: b}\n"
                               "  spec: {containers: [{name: c, image: busybox:1}]}\n";

static const char empty_list[] = "apiVersion: v1\nkind: PodList\nitems: []\n";

/* ---- tests ---- */

static void test_etag(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200,
                  .body = pod_a,
                  .etag = "\"v1\"",
                  .last_modified = "Wed, 21 Oct 2015 07:28:00 GMT" },
        };
        start(f, script);
        run_handled(f, 1);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        assert_string_equal(f->ev[0].origin, f->url);
        assert_string_equal(f->ev[0].name, "a-node1");
        assert_null(strstr(f->server.requests[0], "If-None-Match"));

        /* the next polls are conditional, answered 304: nothing changes */
        run_handled(f, 3);
        assert_int_equal(f->n, 1);
        assert_non_null(strstr(f->server.requests[1], "If-None-Match: \"v1\"\r\n"));
        assert_non_null(strstr(f->server.requests[1],
                               "If-Modified-Since: Wed, 21 Oct 2015 07:28:00 GMT\r\n"));
        assert_int_equal(url_source_get_error_count(f->source), 0);
}

/* A Last-Modified in the second the body was served is not trusted for
 * If-Modified-Since: the file may change again within that second. */
static void test_racy_last_modified(void **state) {
        Fixture *f = *state;
        char now[64];
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof now, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        static Resp script[1];
        script[0] = (Resp){ .status = 200, .body = pod_a, .last_modified = now };
        start(f, script);
        run_handled(f, 2);
        assert_int_equal(f->n, 1);
        assert_null(strstr(f->server.requests[1], "If-Modified-Since"));
}

static void test_server_error_keeps_pods(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a },
                { .status = 500, .body = "oops" },
                { .status = 500, .body = "oops" },
                { .status = 200, .body = pod_a },
        };
        start(f, script);
        run_handled(f, 1);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        char *uid = strdup(f->ev[0].uid);
        clear(f);

        run_handled(f, 2);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR);
        assert_true(f->ev[0].n_errors > 0);
        assert_non_null(strstr(f->ev[0].errors, "HTTP status 500"));
        assert_int_equal(url_source_get_error_count(f->source), 1);
        ManifestObject *o = pod_config_find(f->config, MANIFEST_KIND_POD, "default", "a-node1");
        assert_non_null(o);
        assert_string_equal(o->uid, uid);
        clear(f);

        /* the same error again: counted, not re-reported */
        run_handled(f, 3);
        assert_int_equal(f->n, 0);
        assert_int_equal(url_source_get_error_count(f->source), 2);

        /* recovered, same content: only the error clears */
        run_handled(f, 4);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR);
        assert_int_equal(f->ev[0].n_errors, 0);
        free(uid);
}

static void test_empty_body(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a },
                { .status = 200, .body = "" },
        };
        start(f, script);
        run_handled(f, 2);
        assert_int_equal(f->n, 2);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        expect(&f->ev[1], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[1].errors, "empty response body"));
        assert_int_equal(url_source_get_error_count(f->source), 1);
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "default", "a-node1"));
}

static void test_no_documents_and_garbage(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a },
                { .status = 200, .body = "# only a comment\n" },
                { .status = 200, .body = "kind: Pod\nmetadata: [oops\n" },
        };
        start(f, script);
        run_handled(f, 3);
        assert_int_equal(f->n, 3);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        expect(&f->ev[1], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[1].errors, "no documents"));
        expect(&f->ev[2], SOURCE_EVENT_ERROR);
        assert_null(strstr(f->ev[2].errors, "no documents"));
        assert_int_equal(url_source_get_error_count(f->source), 2);
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "default", "a-node1"));
}

static void test_body_cap(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a },
                { .status = 200, .fill = 5000 },                    /* announced length */
                { .status = 200, .fill = 5000, .no_length = true }, /* found while reading */
        };
        start_full(f, script, ELEMENTSOF(script), NULL, NULL, 0, 1000);
        run_handled(f, 3);
        assert_int_equal(f->n, 2); /* the second, identical error is not re-reported */
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        expect(&f->ev[1], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[1].errors, "larger than the limit of 1000 bytes"));
        assert_int_equal(url_source_get_error_count(f->source), 2);
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "default", "a-node1"));
}

static void test_timeout(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a }, { .status = 0 }, /* never answers */
        };
        start_full(f, script, ELEMENTSOF(script), NULL, NULL, 300 * USEC_PER_MSEC, 0);
        run_handled(f, 1);
        clear(f);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        while (f->n == 0 && now_usec(CLOCK_MONOTONIC) - t0 < CAP)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
        if (f->n != 1)
                dump(f);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[0].errors, "no complete response within 300 ms"));
        assert_true(took >= 250 * USEC_PER_MSEC);
        assert_true(took < 2 * USEC_PER_SEC);
        assert_int_equal(url_source_get_error_count(f->source), 1);
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "default", "a-node1"));
}

static void test_pod_list(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_list },
                { .status = 200, .body = empty_list },
        };
        start(f, script);
        run_handled(f, 1);
        assert_int_equal(f->n, 2);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        expect(&f->ev[1], SOURCE_EVENT_ADD);
        assert_string_equal(f->ev[0].name, "a-node1");
        assert_string_equal(f->ev[1].name, "b-node1");
        char *ua = strdup(f->ev[0].uid), *ub = strdup(f->ev[1].uid);
        clear(f);

        /* an empty PodList removes every URL pod */
        run_handled(f, 2);
        assert_int_equal(f->n, 2);
        expect(&f->ev[0], SOURCE_EVENT_REMOVE);
        assert_string_equal(f->ev[0].uid, ua);
        expect(&f->ev[1], SOURCE_EVENT_REMOVE);
        assert_string_equal(f->ev[1].uid, ub);
        assert_int_equal(url_source_get_error_count(f->source), 0);
        free(ua);
        free(ub);
}

static void test_multi_document(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200,
                  .body = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"
                          "spec: {containers: [{name: c, image: busybox:1}]}\n"
                          "---\n"
                          "apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: web}\n"
                          "spec: {containers: [{name: c, image: busybox:1}]}\n" },
        };
        start(f, script);
        run_handled(f, 1);
        assert_int_equal(f->n, 2);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        expect(&f->ev[1], SOURCE_EVENT_ADD);
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "default", "a-node1"));
        assert_non_null(pod_config_find(f->config, MANIFEST_KIND_POD, "web", "b-node1"));
}

static void test_headers(void **state) {
        Fixture *f = *state;
        static const Resp script[] = { { .status = 200, .body = pod_a } };
        char *headers[] = { (char *)"X-Token: abc123", (char *)"Authorization: Bearer t0k", NULL };
        start_full(f, script, ELEMENTSOF(script), NULL, headers, 0, 0);
        run_handled(f, 1);
        assert_non_null(strstr(f->server.requests[0], "\r\nX-Token: abc123\r\n"));
        assert_non_null(strstr(f->server.requests[0], "\r\nAuthorization: Bearer t0k\r\n"));
        assert_non_null(strstr(f->server.requests[0], "GET /pods HTTP/1.1\r\n"));
}

static void test_redirect(void **state) {
        Fixture *f = *state;
        char loc[128];
        static Resp script[] = {
                { .status = 302, .location = NULL },
                { .status = 200, .body = pod_a },
        };
        snprintf(loc, sizeof loc, "http://127.0.0.1:%d/moved", f->server.port);
        script[0].location = loc;
        start(f, script);
        run_requests(f, 2);
        assert_non_null(strstr(f->server.requests[1], "GET /moved HTTP/1.1\r\n"));
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        while (f->n == 0 && now_usec(CLOCK_MONOTONIC) - t0 < CAP)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        /* the identity is the configured URL, not where it redirected */
        assert_string_equal(f->ev[0].origin, f->url);
}

static void test_redirect_to_file_refused(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 302, .location = "file:///etc/hostname" },
        };
        start(f, script);
        run_handled(f, 1);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[0].errors, "to \"file:///etc/hostname\" refused: only http "
                                                "and https are followed"));
        assert_int_equal(url_source_get_error_count(f->source), 1);
}

static void test_other_protocol_refused(void **state) {
        Fixture *f = *state;
        static const Resp script[] = { { .status = 200, .body = pod_a } };
        start_full(f, script, ELEMENTSOF(script), "file:///etc/hostname", NULL, 0, 0);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        while (f->n == 0 && now_usec(CLOCK_MONOTONIC) - t0 < CAP)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ERROR);
        assert_int_equal(url_source_get_error_count(f->source), 1);
}

/* Runs the loop until the source has reported n events. */
static void run_events(Fixture *f, size_t n) {
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        while (f->n < n && now_usec(CLOCK_MONOTONIC) - t0 < CAP)
                assert_true(event_run(f->event, 20 * USEC_PER_MSEC) >= 0);
        if (f->n != n)
                dump(f);
        assert_int_equal(f->n, n);
}

static char *const token_headers[] = { (char *)"X-Token: abc123",
                                       (char *)"Authorization: Bearer t0k", NULL };

/* A redirect within the configured URL's origin keeps the custom headers. */
static void test_redirect_same_origin_keeps_headers(void **state) {
        Fixture *f = *state;
        char loc[128];
        static Resp script[] = {
                { .status = 301, .location = NULL },
                { .status = 200, .body = pod_a },
        };
        snprintf(loc, sizeof loc, "/moved");
        script[0].location = loc;
        start_full(f, script, ELEMENTSOF(script), NULL, token_headers, 0, 0);
        run_requests(f, 2);
        assert_non_null(strstr(f->server.requests[1], "GET /moved HTTP/1.1\r\n"));
        assert_non_null(strstr(f->server.requests[1], "\r\nX-Token: abc123\r\n"));
        assert_non_null(strstr(f->server.requests[1], "\r\nAuthorization: Bearer t0k\r\n"));
        run_events(f, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
}

/* Another host (same server, other name) gets none of them: libcurl alone
 * would re-send every header but Authorization. */
static void test_redirect_other_host_drops_headers(void **state) {
        Fixture *f = *state;
        char loc[128], host[64];
        static Resp script[] = {
                { .status = 302, .location = NULL },
                { .status = 200, .body = pod_a },
        };
        snprintf(loc, sizeof loc, "http://localhost:%d/elsewhere", f->server.port);
        script[0].location = loc;
        start_full(f, script, ELEMENTSOF(script), NULL, token_headers, 0, 0);
        run_requests(f, 2);
        snprintf(host, sizeof host, "\r\nHost: localhost:%d\r\n", f->server.port);
        assert_non_null(strstr(f->server.requests[1], "GET /elsewhere HTTP/1.1\r\n"));
        assert_non_null(strstr(f->server.requests[1], host));
        assert_null(strstr(f->server.requests[1], "X-Token"));
        assert_null(strstr(f->server.requests[1], "Authorization"));
        assert_non_null(strstr(f->server.requests[0], "\r\nX-Token: abc123\r\n"));
        run_events(f, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        assert_string_equal(f->ev[0].origin, f->url);
}

/* A redirect loop ends after 5 redirects with an error naming it. */
static void test_redirect_loop_capped(void **state) {
        Fixture *f = *state;
        static Resp script[] = { { .status = 307, .location = "/pods" } };
        start(f, script);
        run_events(f, 1);
        assert_int_equal(f->server.n_requests, 6);
        expect(&f->ev[0], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[0].errors, "more than 5 redirects"));
        assert_int_equal(url_source_get_error_count(f->source), 1);
}

/* One kept-alive connection serves poll after poll: the server accepts one
 * connection for five requests. */
static void test_keep_alive_reuses_connection(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a, .etag = "\"v1\"" },
        };
        f->server.keep_alive = true;
        start(f, script);
        run_handled(f, 5);
        assert_int_equal(f->server.n_accepted, 1);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        for (size_t i = 1; i < 5; i++)
                assert_non_null(strstr(f->server.requests[i], "If-None-Match: \"v1\"\r\n"));
        assert_int_equal(url_source_get_error_count(f->source), 0);
}

/* The waits the source schedules (POLL = 100 ms): the period ±20 % while it
 * works, doubling on failures up to the cap, Retry-After honoured up to the
 * cap, garbage in it ignored, and the period again once it works. */
static void test_backoff_and_retry_after(void **state) {
        Fixture *f = *state;
        static const Resp script[] = {
                { .status = 200, .body = pod_a },
                { .status = 500 },
                { .status = 500 },
                { .status = 503, .retry_after = "1" },
                { .status = 503, .retry_after = "99999999999999999999" },
                { .status = 503, .retry_after = "-1" },
                { .status = 503, .retry_after = "Sun, 06 Nov 1994 08:49:37 GMT" },
                { .status = 200, .body = pod_a },
        };
        /* [lo, hi) in ms for the wait after each response */
        static const unsigned lo[] = { 80, 160, 320, 1000, 1200, 960, 960, 80 };
        /* after response 4 the back-off (cap 1200 ± 20 %) may beat the
         * clamped Retry-After (1200 + up to one period) */
        static const unsigned hi[] = { 120, 240, 480, 1100, 1440, 1440, 1440, 120 };
        f->server.keep_alive = true;
        f->max_backoff = 1200 * USEC_PER_MSEC;
        start(f, script);
        for (size_t i = 0; i < ELEMENTSOF(script); i++) {
                usec_t t0 = now_usec(CLOCK_MONOTONIC);
                run_handled(f, i + 1);
                usec_t w = url_source_get_next_wait(f->source);
                if (w < lo[i] * USEC_PER_MSEC || w >= hi[i] * USEC_PER_MSEC)
                        fprintf(stderr, "response %zu: wait %llu ms\n", i,
                                (unsigned long long)(w / USEC_PER_MSEC));
                assert_true(w >= lo[i] * USEC_PER_MSEC && w < hi[i] * USEC_PER_MSEC);
                /* Retry-After: 1 held the next request back at least 1 s */
                if (i == 3)
                        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= USEC_PER_SEC);
        }
        assert_int_equal(url_source_get_error_count(f->source), 6);
        /* back-off never changed the pods: the 500s, the 503s, resolved */
        assert_int_equal(f->n, 4);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        for (size_t i = 1; i < 4; i++)
                expect(&f->ev[i], SOURCE_EVENT_ERROR);
        assert_int_equal(f->ev[3].n_errors, 0);
        assert_int_equal(f->server.n_accepted, 1);
}

static void test_redirect_policy(void **state) {
        (void)state;
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_curl_free_ EventCurl *ec = NULL;
        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_curl_new(e, &ec, NULL), 0);
        const CurlApi *c = event_curl_api(ec);
        /* never from https to http, nor to anything but http(s) */
        assert_int_equal(url_redirect_check(c, "https://a.example/x", "http://a.example/y"),
                         -EPERM);
        assert_int_equal(url_redirect_check(c, "https://a.example/x", "HTTP://a.example/y"),
                         -EPERM);
        assert_int_equal(url_redirect_check(c, "http://a.example/x", "file:///etc/shadow"), -EPERM);
        assert_int_equal(url_redirect_check(c, "https://a.example/x", "ftp://a.example/y"), -EPERM);
        assert_int_equal(url_redirect_check(c, "https://a.example/x", "https://b.example/y"), 0);
        assert_int_equal(url_redirect_check(c, "http://a.example/x", "https://a.example/y"), 0);
        assert_int_equal(url_redirect_check(c, "http://a.example/x", "http://b.example/y"), 0);
        assert_int_equal(url_redirect_check(c, "http://a.example/x", "not a url"), -EINVAL);

        assert_int_equal(url_same_origin(c, "http://a.example/x", "http://A.example:80/y?z"), 1);
        assert_int_equal(url_same_origin(c, "https://a.example/x", "https://a.example:443/"), 1);
        assert_int_equal(url_same_origin(c, "https://a.example/x", "http://a.example/x"), 0);
        assert_int_equal(url_same_origin(c, "http://a.example/x", "http://a.example:8080/x"), 0);
        assert_int_equal(url_same_origin(c, "http://127.0.0.1/x", "http://localhost/x"), 0);
        assert_int_equal(url_same_origin(c, "http://127.0.0.1/x", "http://127.0.0.2/x"), 0);
        assert_int_equal(url_same_origin(c, "http://a.example/x", "http://a.example.evil/x"), 0);
        assert_int_equal(url_same_origin(c, "http://a.example/x", "not a url"), -EINVAL);
}

/* ---- signed manifests (url-verifier.h) ---- */

#define SIG_FIXTURES TEST_DATA_DIR "/signatures/fixtures/"

static char *sig_fixture(const char *name) {
        char path[512], *data = NULL;
        size_t n = 0;
        snprintf(path, sizeof path, SIG_FIXTURES "%s", name);
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &data, &n), 0);
        return data;
}

typedef struct Signed {
        char dir[64];
        char state[128];
        char *body, *sig, *old_body, *old_sig, *expired_body, *expired_sig, *min_sig;
} Signed;

static void signed_init(Signed *g) {
        snprintf(g->dir, sizeof g->dir, "/tmp/test-url-signed.XXXXXX");
        assert_non_null(mkdtemp(g->dir));
        snprintf(g->state, sizeof g->state, "%s/generation.json", g->dir);
        g->body = sig_fixture("body.yaml");
        g->sig = sig_fixture("body.yaml.sig");
        g->old_body = sig_fixture("body-old.yaml");
        g->old_sig = sig_fixture("body-old.yaml.sig");
        g->expired_body = sig_fixture("body-expired.yaml");
        g->expired_sig = sig_fixture("body-expired.yaml.sig");
        g->min_sig = sig_fixture("body.yaml.minisig");
}

static void signed_done(Signed *g) {
        free(g->body);
        free(g->sig);
        free(g->old_body);
        free(g->old_sig);
        free(g->expired_body);
        free(g->expired_sig);
        free(g->min_sig);
        (void)unlink(g->state);
        (void)rmdir(g->dir);
}

static void start_signed_at(Fixture *f, const Resp *script, size_t n, const char *state_path,
                            ManifestSignatureFormat format) {
        f->server.script = script;
        f->server.n_script = n;
        char *keys[] = { format == MANIFEST_SIGNATURE_MINISIGN ? SIG_FIXTURES "minisign.pub"
                                                               : SIG_FIXTURES "cosign.pub",
                         NULL };
        UrlVerifierOptions v = {
                .url = f->url,
                .key_files = keys,
                .format = format,
                .state_path = state_path,
        };
        UrlSourceOptions o = {
                .url = f->url,
                .node_name = "node1",
                .check_frequency = POLL,
                .verify = &v,
        };
        Error err = {};
        assert_int_equal(url_source_new(&f->source, f->event, f->config, &o, &err), 0);
        assert_int_equal(url_source_start(f->source), 0);
}

static void start_signed(Fixture *f, const Resp *script, size_t n, Signed *g,
                         ManifestSignatureFormat format) {
        start_signed_at(f, script, n, g->state, format);
}

static bool request_is(Fixture *f, size_t i, const char *path) {
        char *line = strprintf("GET %s HTTP/1.1\r\n", path);
        bool r = strstr(f->server.requests[i], line) == f->server.requests[i];
        free(line);
        return r;
}

static void test_signed_accepted_then_304(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body, .etag = "\"v7\"" },
                { .status = 200, .body = g.sig },
                { .status = 200, .body = g.body, .etag = "\"v7\"" },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        run_handled(f, 2);
        dump(f);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        assert_string_equal(f->ev[0].name, "web-node1");
        assert_true(request_is(f, 0, "/pods"));
        assert_true(request_is(f, 1, "/pods.sig"));
        /* The signature is never fetched conditionally. */
        assert_null(strstr(f->server.requests[1], "If-None-Match"));
        /* The generation is recorded. */
        char *data = NULL;
        size_t n = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, g.state, 4096, &data, &n), 0);
        assert_non_null(strstr(data, "\"generation\":\"7\""));
        free(data);
        /* A 304 for the body: the verified body stays, no signature GET. */
        run_handled(f, 4);
        assert_true(request_is(f, 2, "/pods"));
        assert_non_null(strstr(f->server.requests[2], "If-None-Match: \"v7\""));
        assert_true(request_is(f, 3, "/pods"));
        assert_int_equal(f->n, 1);
        assert_int_equal(url_source_get_error_count(f->source), 0);
        signed_done(&g);
}

/* Each refused body changes nothing: no pod event, one error naming the
 * signature. */
static void expect_refused(Fixture *f, size_t handled, const char *what) {
        run_handled(f, handled);
        dump(f);
        assert_true(f->n >= 1);
        for (size_t i = 0; i < f->n; i++)
                expect(&f->ev[i], SOURCE_EVENT_ERROR);
        assert_non_null(strstr(f->ev[f->n - 1].errors, "signature: "));
        assert_non_null(strstr(f->ev[f->n - 1].errors, what));
}

static void test_signed_unsigned(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 404, .body = "no" },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        expect_refused(f, 2, "(unsigned)");
        assert_int_equal(access(g.state, F_OK), -1);
        signed_done(&g);
}

static void test_signed_304_signature(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        /* A 200 for the body and a 304 for its signature cannot vouch for
         * each other. */
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 304 },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        expect_refused(f, 2, "HTTP status 304");
        signed_done(&g);
}

static void test_signed_swapped(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 200, .body = g.old_sig },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        expect_refused(f, 2, "(bad)");
        signed_done(&g);
}

static void test_signed_too_large(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 200, .fill = MANIFEST_SIGNATURE_MAX_SIZE + 1 },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        expect_refused(f, 2, "(too-large)");
        signed_done(&g);
}

/* Without a record file (a dry run writes nothing), a rollback is still
 * refused for as long as the agent runs, and no file appears. */
static void test_signed_rollback_in_memory(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 200, .body = g.sig },
                { .status = 200, .body = g.old_body },
                { .status = 200, .body = g.old_sig },
        };
        start_signed_at(f, script, ELEMENTSOF(script), NULL, MANIFEST_SIGNATURE_COSIGN);
        run_handled(f, 2);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        clear(f);
        expect_refused(f, 4, "(rollback)");
        assert_int_equal(access(g.state, F_OK), -1);
        assert_int_equal(errno, ENOENT);
        signed_done(&g);
}

static void test_signed_rollback(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 200, .body = g.sig },
                { .status = 200, .body = g.old_body },
                { .status = 200, .body = g.old_sig },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        run_handled(f, 2);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        clear(f);
        /* Generation 6 after 7, correctly signed: refused, the pod stays. */
        expect_refused(f, 4, "(rollback)");

        /* After a restart the record still refuses it. */
        url_source_free(f->source);
        f->source = NULL;
        clear(f);
        server_stop(&f->server);
        server_start(&f->server, f->event);
        snprintf(f->url, sizeof f->url, "http://127.0.0.1:%d/pods", f->server.port);
        Resp again[] = {
                { .status = 200, .body = g.old_body },
                { .status = 200, .body = g.old_sig },
        };
        /* Same URL path, another port: the record is per URL, so write
         * the record for this URL from the first one's. */
        char *data = NULL;
        size_t n = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, g.state, 4096, &data, &n), 0);
        char *p = strstr(data, "\"url\":\"");
        assert_non_null(p);
        char *e = strchr(p + 7, '"');
        char *fixed = strprintf("%.*s\"url\":\"%s%s", (int)(p - data), data, f->url, e);
        assert_int_equal(write_file_atomic(g.state, fixed, strlen(fixed), 0600), 0);
        free(fixed);
        free(data);
        start_signed(f, again, ELEMENTSOF(again), &g, MANIFEST_SIGNATURE_COSIGN);
        expect_refused(f, 2, "(rollback)");
        signed_done(&g);
}

static void test_signed_expired(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.expired_body },
                { .status = 200, .body = g.expired_sig },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_COSIGN);
        expect_refused(f, 2, "(expired)");
        signed_done(&g);
}

static void test_signed_minisign(void **state) {
        Fixture *f = *state;
        Signed g;
        signed_init(&g);
        Resp script[] = {
                { .status = 200, .body = g.body },
                { .status = 200, .body = g.min_sig },
        };
        start_signed(f, script, ELEMENTSOF(script), &g, MANIFEST_SIGNATURE_MINISIGN);
        run_handled(f, 2);
        assert_int_equal(f->n, 1);
        expect(&f->ev[0], SOURCE_EVENT_ADD);
        assert_true(request_is(f, 1, "/pods.minisig"));
        signed_done(&g);
}

int main(void) {
        /* The server is on loopback: a proxy from the environment must not
         * get in the way. */
        (void)setenv("no_proxy", "*", 1);
        (void)setenv("NO_PROXY", "*", 1);

        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_etag, setup, teardown),
                cmocka_unit_test_setup_teardown(test_racy_last_modified, setup, teardown),
                cmocka_unit_test_setup_teardown(test_server_error_keeps_pods, setup, teardown),
                cmocka_unit_test_setup_teardown(test_empty_body, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_documents_and_garbage, setup, teardown),
                cmocka_unit_test_setup_teardown(test_body_cap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pod_list, setup, teardown),
                cmocka_unit_test_setup_teardown(test_multi_document, setup, teardown),
                cmocka_unit_test_setup_teardown(test_headers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_redirect, setup, teardown),
                cmocka_unit_test_setup_teardown(test_redirect_to_file_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_other_protocol_refused, setup, teardown),
                cmocka_unit_test_setup_teardown(test_redirect_same_origin_keeps_headers, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_redirect_other_host_drops_headers, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_redirect_loop_capped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keep_alive_reuses_connection, setup, teardown),
                cmocka_unit_test_setup_teardown(test_backoff_and_retry_after, setup, teardown),
                cmocka_unit_test(test_redirect_policy),
                cmocka_unit_test_setup_teardown(test_signed_accepted_then_304, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_unsigned, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_304_signature, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_swapped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_too_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_rollback, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_rollback_in_memory, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_expired, setup, teardown),
                cmocka_unit_test_setup_teardown(test_signed_minisign, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
