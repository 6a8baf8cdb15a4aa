/* A read-only HTTP server on the agent's event loop.
 *
 * libmicrohttpd runs in its external epoll mode: MHD's epoll fd is one io
 * source of the loop, and a timer follows MHD_get_timeout() and the
 * connections' deadlines after every MHD_run(), so there is no thread and no
 * blocking call. Handlers answer at once from memory, on the loop.
 *
 * Bounded, and whatever clients do, a connection waiting to be accepted
 * waits at most API_SERVER_CONNECTION_TIMEOUT_SEC (T):
 *  1. At most API_SERVER_MAX_CONNECTIONS connections. While that many are
 *     open the server is full, a state logged when it begins and ends (as a
 *     warning at most once a minute, else at debug), and new connections
 *     wait in the kernel's backlog.
 *  2. A request target longer than API_SERVER_MAX_TARGET is answered 414, one
 *     with more than API_SERVER_MAX_QUERY_ARGS query parameters 431, at once
 *     and the connection closed, before libmicrohttpd parses the parameters
 *     (it would otherwise run out of the connection's memory and leave the
 *     request unanswered, holding its slot until the idle timeout). Headers
 *     must fit API_SERVER_CONNECTION_MEMORY (else MHD answers 431).
 *  3. A request must arrive whole (through its empty line) within T of the
 *     connection's accept or of the previous answer, however slowly it
 *     trickles in; libmicrohttpd's own timeout only counts idle time. The
 *     answer is then bound by the idle timeout (T without progress).
 *  4. While the server is full, a kept-alive connection waiting for its next
 *     request is closed at once (libmicrohttpd closes every connection after
 *     its answer today, as the answer is queued before it read the whole
 *     request: a safety net), and an answer being sent for longer than T is
 *     cut, so a slot frees within T.
 *  5. Whenever a slot frees, MHD_run() runs again at once: libmicrohttpd puts
 *     its listening socket back into its epoll set only at the start of a
 *     run, and nothing else would wake the loop to do it. While a connection
 *     is open the timer never waits longer than T.
 * Connections are closed with shutdown(): the socket stays libmicrohttpd's,
 * which sees the hang-up and frees the slot in its next run.
 *
 * libmicrohttpd is not linked: api_server_new() only binds and listens
 * (so a port in use is still a start-up error) and watches the listening
 * socket; the first connection loads API_SERVER_LIBRARY with dlopen(),
 * starts MHD on that socket and lets it answer at once. An agent whose API
 * nobody asks never maps libmicrohttpd and, on Debian, the GnuTLS chain
 * behind it (about 2.4 MiB of RSS, docs/BENCHMARKS.md). When the library
 * cannot be loaded or started, the reason is logged once, as an error, and
 * from then on every connection is accepted and closed at once: the
 * listener stays bound, the agent runs on. The function table is owned by
 * the ApiServer (each server loads its own; dlopen() counts references) and
 * the library is never unloaded.
 *
 * Only GET and HEAD exist (HEAD is GET without the body): any other method
 * is 405 with an Allow header, a path no route has is 404. Paths match
 * exactly, without the query. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "error.h"
#include "event.h"

#define API_SERVER_MAX_CONNECTIONS 64
#define API_SERVER_CONNECTION_TIMEOUT_SEC 10
#define API_SERVER_CONNECTION_MEMORY (32 * 1024)
/* Far above what the routes take (a path and a flag or two), and low enough
 * that the parameters' records always fit the connection's memory. */
#define API_SERVER_MAX_TARGET 8192
#define API_SERVER_MAX_QUERY_ARGS 64
/* The soname loaded on the first connection; named in the error. */
#define API_SERVER_LIBRARY "libmicrohttpd.so.12"

typedef struct ApiServer ApiServer;
typedef struct ApiRequest ApiRequest;

typedef struct ApiResponse {
        unsigned status;          /* 200 unless the handler sets another */
        const char *content_type; /* static; NULL = "text/plain; charset=utf-8" */
        char *body;               /* malloc'd; the server takes it; NULL = empty */
        size_t body_size;
} ApiResponse;

/* Fills resp. A negative errno makes the answer a 500 (and drops resp). */
typedef int (*api_handler_t)(const ApiRequest *req, ApiResponse *resp, void *userdata);

const char *api_request_path(const ApiRequest *req);
/* The value of query argument key (?key=value), NULL when absent. */
const char *api_request_query(const ApiRequest *req, const char *key);

/* Sets resp's body to a copy of the formatted text (status unchanged).
 * 0 or -ENOMEM. */
int api_response_printf(ApiResponse *resp, const char *fmt, ...) _printf_(2, 3);

typedef struct ApiServerOptions {
        const char *address; /* an IPv4 or IPv6 literal */
        uint16_t port;       /* 0: an ephemeral port, see api_server_port() */
        const char *name;    /* "read-only API": for logs */
        const char *library; /* NULL: API_SERVER_LIBRARY (tests name a missing one) */
} ApiServerOptions;

/* Binds and listens at once, so a port in use fails here, with
 * "address:port" and the reason in error. Does not load libmicrohttpd. */
int api_server_new(ApiServer **ret, Event *e, const ApiServerOptions *o, Error *error);
ApiServer *api_server_free(ApiServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ApiServer *, api_server_free)

/* path is copied. A path registered twice: -EEXIST. */
int api_server_add_route(ApiServer *s, const char *path, api_handler_t handler, void *userdata);
/* The port listened on (the ephemeral one when the options said 0). */
uint16_t api_server_port(const ApiServer *s);
/* Whether libmicrohttpd runs this server (a connection came and the
 * library loaded and started). */
bool api_server_loaded(const ApiServer *s);

/* The rules above as pure functions (tested on their own). */

/* The status a request target gets before routing: 0 (go on), 414 or 431.
 * NULL (a request line without a target) goes on. */
unsigned api_server_check_target(const char *target);

typedef enum ApiConnPhase {
        API_CONN_REQUEST, /* waiting for a request, or receiving one */
        API_CONN_ANSWER,  /* the request is in; its answer is being sent */
        _API_CONN_PHASE_MAX,
        _API_CONN_PHASE_INVALID = -EINVAL,
} ApiConnPhase;

/* When a connection in phase since `since`, with `answered` answers sent
 * before, is closed (rules 3 and 4): `since` itself when at once,
 * USEC_INFINITY when only the idle timeout applies. */
usec_t api_server_conn_deadline(ApiConnPhase phase, usec_t since, unsigned answered, bool full);
