/* The HTTP server: the listening socket is ours (so a bind failure names
 * the address, and the loop can watch it before libmicrohttpd is loaded),
 * everything after accept() is libmicrohttpd's, driven from the loop. MHD_USE_TURBO puts an
 * accepted connection straight on MHD's ready list, so one dispatch of the epoll fd accepts, reads
 * and answers a request that was already waiting: an answer reflects the agent's state from before
 * the timers of that iteration ran (the health check relies on it to see a stall the loop has not
 * yet caught up with). */
#include "api-server.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "list.h"
#include "log.h"
#include "string-util.h"

/* A queued request: MHD_run() is repeated while MHD says work is ready at
 * once, but never more than this in one dispatch, so a stream of clients
 * cannot starve the rest of the loop. */
#define API_SERVER_RUNS_PER_DISPATCH 8

/* A full server is logged as a warning at most this often (a client can
 * make it fill and drain many times a second); the other times at debug. */
#define API_SERVER_FULL_LOG_INTERVAL_USEC (60 * USEC_PER_SEC)

/* The libmicrohttpd functions the server calls: X(MHD name, MhdApi member). */
#define MHD_API_FUNCTIONS(X)                                                                       \
        X(MHD_start_daemon, start_daemon)                                                          \
        X(MHD_stop_daemon, stop_daemon)                                                            \
        X(MHD_get_daemon_info, get_daemon_info)                                                    \
        X(MHD_run, run)                                                                            \
        X(MHD_get_timeout, get_timeout)                                                            \
        X(MHD_get_connection_info, get_connection_info)                                            \
        X(MHD_lookup_connection_value, lookup_connection_value)                                    \
        X(MHD_create_response_from_buffer, create_response_from_buffer)                            \
        X(MHD_add_response_header, add_response_header)                                            \
        X(MHD_queue_response, queue_response)                                                      \
        X(MHD_destroy_response, destroy_response)

/* Pointers typed from microhttpd.h's own prototypes (variadic ones
 * included), so a mismatch does not compile. */
typedef struct MhdApi {
#define MHD_API_MEMBER(name, member) __typeof__(name) *member;
        MHD_API_FUNCTIONS(MHD_API_MEMBER)
#undef MHD_API_MEMBER
} MhdApi;

typedef enum ApiServerState {
        API_SERVER_WAITING, /* listening; libmicrohttpd not loaded yet */
        API_SERVER_RUNNING, /* MHD owns the socket and answers */
        API_SERVER_FAILED,  /* the load or start failed: connections are closed */
} ApiServerState;

typedef enum ApiServerLoad {
        API_SERVER_ACCEPTING, /* below the connection limit */
        API_SERVER_FULL,      /* at the limit: new connections wait in the backlog */
} ApiServerLoad;

/* One connection MHD holds, from its accept to its close. */
typedef struct ApiConn ApiConn;
struct ApiConn {
        ApiConn *prev, *next;
        int fd; /* MHD's; only ever shut down here */
        ApiConnPhase phase;
        usec_t since; /* when the phase began */
        unsigned answered;
        bool shut;    /* shut down here; MHD closes it in its next run */
        bool refused; /* answered here, before routing (rule 2) */
};

typedef struct ApiRoute {
        char *path;
        api_handler_t handler;
        void *userdata;
} ApiRoute;

struct ApiServer {
        Event *event;
        char *name;
        char *library;
        ApiServerState state;
        int listen_fd;          /* ours; closed once MHD runs on its duplicate */
        EventSource *listen_io; /* the listening socket, until MHD runs */
        void *dl;               /* the dlopen() handle, never closed */
        MhdApi api;
        struct MHD_Daemon *mhd;
        EventSource *io, *timer;
        ApiRoute *routes;
        size_t n_routes;
        uint16_t port;
        ApiConn *conns;
        unsigned n_conns;
        ApiServerLoad load;
        usec_t full_logged; /* when a full server was last logged as a warning */
        bool full_warned;   /* this time it was */
};

struct ApiRequest {
        const ApiServer *server;
        struct MHD_Connection *connection;
        const char *path;
};

const char *api_request_path(const ApiRequest *req) {
        return req->path;
}

const char *api_request_query(const ApiRequest *req, const char *key) {
        return req->server->api.lookup_connection_value(req->connection, MHD_GET_ARGUMENT_KIND,
                                                        key);
}

int api_response_printf(ApiResponse *resp, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        char *s = strvprintf(fmt, ap);
        va_end(ap);
        if (!s)
                return -ENOMEM;
        free(resp->body);
        resp->body = s;
        resp->body_size = strlen(s);
        return 0;
}

unsigned api_server_check_target(const char *target) {
        if (!target)
                return 0;
        if (strnlen(target, API_SERVER_MAX_TARGET + 1) > API_SERVER_MAX_TARGET)
                return MHD_HTTP_URI_TOO_LONG;
        const char *q = strchr(target, '?');
        if (!q)
                return 0;
        /* libmicrohttpd makes a record of every piece between two '&'. */
        unsigned args = 1;
        for (q++; *q; q++)
                if (*q == '&' && ++args > API_SERVER_MAX_QUERY_ARGS)
                        return MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE;
        return 0;
}

usec_t api_server_conn_deadline(ApiConnPhase phase, usec_t since, unsigned answered, bool full) {
        const usec_t t = API_SERVER_CONNECTION_TIMEOUT_SEC * USEC_PER_SEC;

        switch (phase) {
        case API_CONN_REQUEST:
                /* A kept-alive connection yields its slot to those waiting. */
                return full && answered > 0 ? since : since + t;
        case API_CONN_ANSWER:
                /* An answer is bound by the idle timeout, unless others wait. */
                return full ? since + t : USEC_INFINITY;
        case _API_CONN_PHASE_MAX:
        case _API_CONN_PHASE_INVALID:
                break;
        }
        return USEC_INFINITY;
}

static void conn_shut(ApiServer *s, ApiConn *conn, const char *why) {
        if (conn->shut)
                return;
        conn->shut = true;
        if (shutdown(conn->fd, SHUT_RDWR) < 0)
                log_debug_errno(errno, "%s: cannot shut a connection down: %m", s->name);
        else
                log_debug("%s: closing a connection: %s.", s->name, why);
}

static void conn_set_phase(ApiServer *s, ApiConn *conn, ApiConnPhase phase) {
        conn->phase = phase;
        conn->since = event_now(s->event);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
        ApiServer *s = cls;
        ApiConn *conn = *socket_context;

        if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
                if (!conn)
                        return;
                LIST_REMOVE(s->conns, conn);
                s->n_conns--;
                free(conn);
                *socket_context = NULL;
                return;
        }
        if (code != MHD_CONNECTION_NOTIFY_STARTED)
                return;
        const union MHD_ConnectionInfo *info =
                s->api.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn = calloc(1, sizeof *conn);
        if (!conn || !info) {
                /* Untracked, it would escape the deadlines: refused. */
                free(conn);
                if (info)
                        (void)shutdown(info->connect_fd, SHUT_RDWR);
                log_debug("%s: cannot track a new connection, closing it.", s->name);
                return;
        }
        conn->fd = info->connect_fd;
        conn_set_phase(s, conn, API_CONN_REQUEST);
        LIST_PREPEND(s->conns, conn);
        s->n_conns++;
        *socket_context = conn;
}

/* Called with the request line, before libmicrohttpd parses the query:
 * a target too large for the connection's memory is answered here and the
 * connection shut down, and on_request() then drops it. The answer is
 * written on libmicrohttpd's socket because libmicrohttpd has written
 * nothing on it for this request yet, and will not. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
        static const char too_long[] = "HTTP/1.1 414 URI Too Long\r\n"
                                       "Content-Length: 0\r\nConnection: close\r\n\r\n";
        static const char too_many[] = "HTTP/1.1 431 Request Header Fields Too Large\r\n"
                                       "Content-Length: 0\r\nConnection: close\r\n\r\n";
        ApiServer *s = cls;
        const union MHD_ConnectionInfo *info =
                s->api.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        ApiConn *conn = info ? info->socket_context : NULL;

        unsigned status = api_server_check_target(uri);
        if (status == 0 || !conn || conn->shut)
                return conn;
        const char *a = status == MHD_HTTP_URI_TOO_LONG ? too_long : too_many;
        /* The socket's send buffer is empty between requests and takes it
         * whole; should it not, the client sees the connection close. */
        (void)send(conn->fd, a, strlen(a), MSG_NOSIGNAL | MSG_DONTWAIT);
        conn->refused = true;
        conn_shut(s, conn,
                  status == MHD_HTTP_URI_TOO_LONG ? "request target too long"
                                                  : "too many query parameters");
        return conn;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
        ApiServer *s = cls;
        ApiConn *conn = *con_cls;

        if (!conn || toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
                return;
        conn->answered++;
        conn_set_phase(s, conn, API_CONN_REQUEST);
}

static const ApiRoute *find_route(const ApiServer *s, const char *path) {
        for (size_t i = 0; i < s->n_routes; i++)
                if (streq(s->routes[i].path, path))
                        return &s->routes[i];
        return NULL;
}

static enum MHD_Result queue(const ApiServer *s, struct MHD_Connection *c, ApiResponse *resp,
                             bool allow) {
        const MhdApi *api = &s->api;
        struct MHD_Response *r;

        if (resp->body)
                r = api->create_response_from_buffer(resp->body_size, resp->body,
                                                     MHD_RESPMEM_MUST_FREE);
        else
                r = api->create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!r) {
                resp->body = mfree(resp->body);
                return MHD_NO; /* MHD closes the connection */
        }
        resp->body = NULL; /* the response owns it now */
        const char *type = resp->content_type ?: "text/plain; charset=utf-8";
        if (api->add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
            api->add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES ||
            (allow && api->add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
                api->destroy_response(r);
                return MHD_NO;
        }
        enum MHD_Result ret = api->queue_response(c, resp->status, r);
        api->destroy_response(r);
        return ret;
}

/* Answered on the first call, when the headers are in: a request body
 * (only methods answered 405 have one) is never read. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
        ApiServer *s = cls;
        ApiConn *conn = *con_cls;
        ApiResponse resp = { .status = MHD_HTTP_OK };

        if (conn) {
                if (conn->refused)
                        return MHD_NO; /* answered in on_uri(); MHD closes it */
                conn_set_phase(s, conn, API_CONN_ANSWER);
        }
        if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD)) {
                resp.status = MHD_HTTP_METHOD_NOT_ALLOWED;
                (void)api_response_printf(&resp, "method not allowed\n");
                return queue(s, c, &resp, true);
        }
        const ApiRoute *route = find_route(s, url);
        if (!route) {
                resp.status = MHD_HTTP_NOT_FOUND;
                (void)api_response_printf(&resp, "404 page not found\n");
                return queue(s, c, &resp, false);
        }
        ApiRequest req = { .server = s, .connection = c, .path = url };
        int r = route->handler(&req, &resp, route->userdata);
        if (r < 0) {
                log_debug_errno(r, "%s: GET \"%s\" failed: %m", s->name, url);
                resp.body = mfree(resp.body);
                resp = (ApiResponse){ .status = MHD_HTTP_INTERNAL_SERVER_ERROR };
                (void)api_response_printf(&resp, "internal error: %s\n", strerror(-r));
        }
        return queue(s, c, &resp, false);
}

_printf_(2, 0) static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
        ApiServer *s = cls;
        char buf[512];

        (void)vsnprintf(buf, sizeof buf, fmt, ap);
        buf[strcspn(buf, "\n")] = 0;
        log_debug("%s: %s", s->name, buf);
}

static void set_load(ApiServer *s, ApiServerLoad load) {
        if (s->load == load)
                return;
        s->load = load;
        usec_t now = event_now(s->event);
        if (load == API_SERVER_FULL) {
                s->full_warned = s->full_logged == USEC_INFINITY ||
                                 now - s->full_logged >= API_SERVER_FULL_LOG_INTERVAL_USEC;
                if (s->full_warned)
                        s->full_logged = now;
                log_full(s->full_warned ? LOG_WARNING : LOG_DEBUG,
                         "%s: %u connections, the limit: new ones wait until one closes "
                         "(within %us).",
                         s->name, s->n_conns, (unsigned)API_SERVER_CONNECTION_TIMEOUT_SEC);
        } else
                log_full(s->full_warned ? LOG_INFO : LOG_DEBUG, "%s: accepting connections again.",
                         s->name);
}

/* Rules 3 and 4: shuts down the connections past their deadline. Returns
 * whether it shut one, and the next deadline in *ret_next. */
static bool enforce_deadlines(ApiServer *s, usec_t now, usec_t *ret_next) {
        const bool full = s->load == API_SERVER_FULL;
        usec_t next = USEC_INFINITY;
        bool shut = false;

        for (ApiConn *c = s->conns; c; c = c->next) {
                if (c->shut)
                        continue;
                usec_t d = api_server_conn_deadline(c->phase, c->since, c->answered, full);
                if (d <= now) {
                        conn_shut(s, c,
                                  c->phase == API_CONN_ANSWER ? "answer too slow, server full"
                                  : c->answered > 0           ? "kept alive, server full"
                                                              : "request too slow");
                        shut = true;
                } else
                        next = MIN(next, d);
        }
        *ret_next = next;
        return shut;
}

/* The timer: libmicrohttpd's next timeout, the next deadline, and while a
 * connection is open never later than one idle timeout, so that nothing a
 * client does leaves the server without a next run. */
static void rearm(ApiServer *s, usec_t when) {
        const usec_t t = API_SERVER_CONNECTION_TIMEOUT_SEC * USEC_PER_SEC;
        usec_t now = event_now(s->event);
        MHD_UNSIGNED_LONG_LONG ms;
        int r;

        if (s->api.get_timeout(s->mhd, &ms) == MHD_YES)
                when = MIN(when, now + MIN((usec_t)ms * USEC_PER_MSEC, t));
        if (s->n_conns > 0 || s->load == API_SERVER_FULL)
                when = MIN(when, now + t);
        if (when == USEC_INFINITY)
                r = event_source_set_enabled(s->timer, false);
        else
                r = event_source_set_time(s->timer, when);
        if (r < 0)
                log_warning_errno(r, "%s: cannot re-arm the connection timer: %m", s->name);
}

/* Failures stay inside the server: a bad client never stops the loop. */
static void run(ApiServer *s) {
        usec_t next = USEC_INFINITY;
        bool again = false;

        for (unsigned i = 0; i < API_SERVER_RUNS_PER_DISPATCH; i++) {
                MHD_UNSIGNED_LONG_LONG ms;
                unsigned before = s->n_conns;

                if (s->api.run(s->mhd) != MHD_YES)
                        log_debug("%s: MHD_run() failed", s->name);
                /* Rule 5: a freed slot puts the listening socket back only
                 * in the next run. */
                again = s->n_conns < before;
                set_load(s, s->n_conns >= API_SERVER_MAX_CONNECTIONS ? API_SERVER_FULL
                                                                     : API_SERVER_ACCEPTING);
                if (enforce_deadlines(s, event_now(s->event), &next))
                        again = true; /* MHD sees the hang-ups in its next run */
                if (s->api.get_timeout(s->mhd, &ms) == MHD_YES && ms == 0)
                        again = true;
                if (!again)
                        break;
        }
        /* Out of runs for this dispatch with work left: the next iteration. */
        rearm(s, again ? event_now(s->event) : next);
}

static int on_io(EventSource *src, int fd, uint32_t revents, void *userdata) {
        run(userdata);
        return 0;
}

static int on_timer(EventSource *src, usec_t now, void *userdata) {
        run(userdata);
        return 0;
}

static int listen_on(const char *address, uint16_t port, int *ret_fd, uint16_t *ret_port,
                     Error *error) {
        union {
                struct sockaddr sa;
                struct sockaddr_in in;
                struct sockaddr_in6 in6;
        } sa = {};
        socklen_t len;
        bool v6;
        int one = 1;

        if (inet_pton(AF_INET, address, &sa.in.sin_addr) == 1) {
                sa.in.sin_family = AF_INET;
                sa.in.sin_port = htons(port);
                len = sizeof sa.in;
                v6 = false;
        } else if (inet_pton(AF_INET6, address, &sa.in6.sin6_addr) == 1) {
                sa.in6.sin6_family = AF_INET6;
                sa.in6.sin6_port = htons(port);
                len = sizeof sa.in6;
                v6 = true;
        } else
                return error_set(error, -EINVAL, "\"%s\" is not an IP address", address);

        char where[INET6_ADDRSTRLEN + 16];
        (void)snprintf(where, sizeof where, v6 ? "[%s]:%u" : "%s:%u", address, (unsigned)port);
        _cleanup_close_ int fd =
                socket(sa.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return error_set(error, -errno, "Cannot listen on %s: %s", where, strerror(errno));
        /* A restarted agent must not wait for the old connections'
         * TIME_WAIT; a port another process listens on still fails. */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
            (sa.sa.sa_family == AF_INET6 &&
             setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one) < 0) ||
            bind(fd, &sa.sa, len) < 0 || listen(fd, SOMAXCONN) < 0)
                return error_set(error, -errno, "Cannot listen on %s: %s", where, strerror(errno));
        len = sizeof sa;
        if (getsockname(fd, &sa.sa, &len) < 0)
                return error_set(error, -errno, "Cannot listen on %s: %s", where, strerror(errno));
        *ret_port = ntohs(sa.sa.sa_family == AF_INET ? sa.in.sin_port : sa.in6.sin6_port);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Never dlclose()d: GnuTLS, which Debian's libmicrohttpd links, may leave
 * thread-key destructors or atfork handlers behind (as event-curl.c says of
 * libcurl's TLS stack). */
static int mhd_api_load(ApiServer *s, Error *error) {
        s->dl = dlopen(s->library, RTLD_NOW | RTLD_LOCAL);
        if (!s->dl)
                return error_set(error, -ELIBACC, "%s", dlerror());
#define MHD_API_LOAD(name, member)                                                                 \
        s->api.member = (__typeof__(name) *)dlsym(s->dl, #name);                                   \
        if (!s->api.member)                                                                        \
                return error_set(error, -ELIBACC, "%s has no " #name "()", s->library);
        MHD_API_FUNCTIONS(MHD_API_LOAD)
#undef MHD_API_LOAD
        return 0;
}

/* Loads libmicrohttpd and starts MHD on a duplicate of the listening
 * socket: MHD closes the socket it was given when stopped (and, depending on
 * the version, when it fails to start), so ours stays valid for closing
 * connections should anything here fail. */
static int mhd_start(ApiServer *s, Error *error) {
        int r = mhd_api_load(s, error);
        if (r < 0)
                return r;
        int fd = fcntl(s->listen_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return error_set(error, -errno, "Cannot duplicate the listening socket: %s",
                                 strerror(errno));
        s->mhd = s->api.start_daemon(
                MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, s,
                MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s, MHD_OPTION_LISTEN_SOCKET, fd,
                MHD_OPTION_NOTIFY_CONNECTION, on_connection, s, MHD_OPTION_NOTIFY_COMPLETED,
                on_completed, s, MHD_OPTION_URI_LOG_CALLBACK, on_uri, s,
                MHD_OPTION_CONNECTION_LIMIT, (unsigned)API_SERVER_MAX_CONNECTIONS,
                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)API_SERVER_CONNECTION_TIMEOUT_SEC,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)API_SERVER_CONNECTION_MEMORY,
                MHD_OPTION_END);
        if (!s->mhd)
                return error_set(error, -EIO, "libmicrohttpd did not start on port %u",
                                 (unsigned)s->port);
        const union MHD_DaemonInfo *info = s->api.get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);
        if (!info)
                return error_set(error, -EIO, "libmicrohttpd has no epoll fd");
        r = event_add_io(s->event, &s->io, info->epoll_fd, EPOLLIN, on_io, s);
        if (r < 0)
                return error_set(error, r, "Cannot watch the HTTP server: %s", strerror(-r));
        r = event_add_time(s->event, &s->timer, USEC_INFINITY, 0, on_timer, s);
        if (r < 0)
                return error_set(error, r, "Cannot watch the HTTP server: %s", strerror(-r));
        (void)event_source_set_description(s->io, s->name);
        return 0;
}

/* Without MHD: take every waiting connection and close it, so that clients
 * fail at once instead of waiting in the backlog. */
static void close_waiting(ApiServer *s) {
        for (;;) {
                int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN && errno != EMFILE && errno != ENFILE &&
                            errno != ENOBUFS && errno != ENOMEM) {
                                /* Not listening any more: the level-triggered
                                 * watch would fire for ever. */
                                log_debug_errno(errno, "%s: accept() failed, not watching: %m",
                                                s->name);
                                (void)event_source_set_enabled(s->listen_io, false);
                        }
                        break; /* EAGAIN, or out of descriptors: the next event tries again */
                }
                safe_close(fd);
        }
}

static int on_listen_io(EventSource *src, int fd, uint32_t revents, void *userdata) {
        ApiServer *s = userdata;
        Error err = {};

        if (s->state == API_SERVER_FAILED) {
                close_waiting(s);
                return 0;
        }
        int r = mhd_start(s, &err);
        if (r < 0) {
                log_error_errno(r,
                                "%s: cannot serve HTTP: %s; connections to port %u are closed "
                                "until the agent restarts",
                                s->name, err.message[0] ? err.message : strerror(-r),
                                (unsigned)s->port);
                s->io = event_source_free(s->io);
                s->timer = event_source_free(s->timer);
                if (s->mhd)
                        s->api.stop_daemon(s->mhd);
                s->mhd = NULL;
                s->state = API_SERVER_FAILED;
                close_waiting(s);
                return 0;
        }
        /* MHD's epoll set has the socket now; ours must not (level
         * triggered, it would fire for every connection MHD has not yet
         * taken). The watch goes before the descriptor is closed: epoll
         * keys on the open socket, which MHD's duplicate keeps alive. */
        s->listen_io = event_source_free(s->listen_io);
        s->listen_fd = safe_close(s->listen_fd);
        s->state = API_SERVER_RUNNING;
        log_debug("%s: loaded %s on the first connection.", s->name, s->library);
        /* The waiting connection is answered in this same dispatch, before
         * the iteration's timers, as it would be by a running MHD. */
        run(s);
        return 0;
}

int api_server_new(ApiServer **ret, Event *e, const ApiServerOptions *o, Error *error) {
        _cleanup_(api_server_freep) ApiServer *s = calloc(1, sizeof *s);
        int r;

        if (!s)
                return -ENOMEM;
        s->event = e;
        s->listen_fd = -EBADF;
        s->full_logged = USEC_INFINITY;
        s->name = strdup(o->name ?: "API");
        s->library = strdup(o->library ?: API_SERVER_LIBRARY);
        if (!s->name || !s->library)
                return -ENOMEM;
        r = listen_on(o->address, o->port, &s->listen_fd, &s->port, error);
        if (r < 0)
                return r;
        r = event_add_io(e, &s->listen_io, s->listen_fd, EPOLLIN, on_listen_io, s);
        if (r < 0)
                return error_set(error, r, "Cannot watch the HTTP server: %s", strerror(-r));
        (void)event_source_set_description(s->listen_io, s->name);
        *ret = TAKE_PTR(s);
        return 0;
}

ApiServer *api_server_free(ApiServer *s) {
        if (!s)
                return NULL;
        event_source_free(s->listen_io);
        event_source_free(s->io);
        event_source_free(s->timer);
        if (s->mhd)
                s->api.stop_daemon(s->mhd); /* closes every connection: s->conns empties */
        safe_close(s->listen_fd);
        for (size_t i = 0; i < s->n_routes; i++)
                free(s->routes[i].path);
        free(s->routes);
        free(s->library);
        free(s->name);
        free(s);
        return NULL;
}

int api_server_add_route(ApiServer *s, const char *path, api_handler_t handler, void *userdata) {
        if (find_route(s, path))
                return -EEXIST;
        ApiRoute *n = reallocarray(s->routes, s->n_routes + 1, sizeof *n);
        if (!n)
                return -ENOMEM;
        s->routes = n;
        char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        s->routes[s->n_routes++] =
                (ApiRoute){ .path = p, .handler = handler, .userdata = userdata };
        return 0;
}

uint16_t api_server_port(const ApiServer *s) {
        return s->port;
}

bool api_server_loaded(const ApiServer *s) {
        return s->state == API_SERVER_RUNNING;
}
