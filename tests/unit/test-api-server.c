/* Tests for the HTTP API: libmicrohttpd loaded on the first connection and
 * not before, a library that cannot be loaded, routing, 404/405, HEAD,
 * handler failures, the request limits (too many query parameters answered
 * at once), a listener that was full taking connections again as soon as its
 * clients left, the connection deadlines, a port in use, the order in which
 * a waiting request is answered (before the iteration's timers), and the
 * health rule. A server runs on the loop in-process on 127.0.0.1, port 0;
 * a plain socket asks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api-node.h"
#include "api-server.h"
#include "macro.h"
#include "time-util.h"

typedef struct Fixture {
        Event *event;
        ApiServer *server;
        unsigned handler_calls;
        bool timer_ran;
        bool timer_ran_before_handler;
} Fixture;

static int on_hello(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        Fixture *f = userdata;
        const char *who = api_request_query(req, "who");
        f->handler_calls++;
        f->timer_ran_before_handler = f->timer_ran;
        resp->content_type = "application/json";
        return api_response_printf(resp, "{\"hello\":\"%s\"}", who ? who : "world");
}

static int on_broken(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        (void)api_response_printf(resp, "partial");
        return -EIO;
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof *f);
        Error err = {};
        assert_non_null(f);
        assert_int_equal(event_new(&f->event), 0);
        ApiServerOptions o = { .address = "127.0.0.1", .port = 0, .name = "test API" };
        assert_int_equal(api_server_new(&f->server, f->event, &o, &err), 0);
        assert_int_not_equal(api_server_port(f->server), 0);
        assert_int_equal(api_server_add_route(f->server, "/hello", on_hello, f), 0);
        assert_int_equal(api_server_add_route(f->server, "/broken", on_broken, f), 0);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fixture *f = *state;
        api_server_free(f->server);
        event_free(f->event);
        free(f);
        return 0;
}

static int connect_to(uint16_t port) {
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr), 1);
        assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        return fd;
}

static void send_all(int fd, const char *s, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
                assert_true(k > 0);
                s += k;
                n -= (size_t)k;
        }
}

/* Runs the loop until the server closed the connection (every answer here
 * says Connection: close); returns the whole answer. */
static char *read_answer(Fixture *f, int fd) {
        size_t len = 0, cap = 65536;
        char *buf = malloc(cap);
        assert_non_null(buf);
        assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        for (unsigned i = 0; i < 2000; i++) {
                ssize_t k = read(fd, buf + len, cap - 1 - len);
                if (k == 0)
                        break;
                if (k > 0) {
                        len += (size_t)k;
                        assert_true(len < cap - 1);
                        continue;
                }
                if (errno == ECONNRESET)
                        break; /* refused before everything was sent */
                assert_int_equal(errno, EAGAIN);
                assert_int_equal(event_run(f->event, 10 * USEC_PER_MSEC), 0);
        }
        buf[len] = 0;
        return buf;
}

static char *request(Fixture *f, const char *method, const char *target) {
        char *req;
        int fd = connect_to(api_server_port(f->server));
        assert_true(asprintf(&req, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", method,
                             target) > 0);
        send_all(fd, req, strlen(req));
        free(req);
        char *a = read_answer(f, fd);
        close(fd);
        return a;
}

/* Sends what the peer takes: a server that refuses a request may close
 * before all of it is sent. */
static void send_some(int fd, const char *s, size_t n) {
        while (n > 0) {
                ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
                if (k < 0 && (errno == EPIPE || errno == ECONNRESET))
                        return;
                assert_true(k > 0);
                s += k;
                n -= (size_t)k;
        }
}

/* 414 or 431, or a reset when the kernel dropped the answer along with the
 * unread rest of the request: either way the request was refused. */
static void assert_refused(const char *answer) {
        unsigned s = 0;
        if (answer[0] == 0)
                return;
        assert_int_equal(sscanf(answer, "HTTP/1.1 %u ", &s), 1);
        assert_true(s == 414 || s == 431);
}

static unsigned status_of(const char *answer) {
        unsigned s = 0;
        assert_int_equal(sscanf(answer, "HTTP/1.1 %u ", &s), 1);
        return s;
}

static const char *body_of(const char *answer) {
        const char *b = strstr(answer, "\r\n\r\n");
        assert_non_null(b);
        return b + 4;
}

/* Whether this process maps a file whose name contains what. */
static bool mapped(const char *what) {
        char line[4096];
        bool found = false;
        FILE *f = fopen("/proc/self/maps", "re");
        assert_non_null(f);
        while (fgets(line, sizeof line, f))
                if (strstr(line, what))
                        found = true;
        fclose(f);
        return found;
}

/* Runs first: nothing before it has made a request. The test binary is
 * linked like the agent, so this also fails should libmicrohttpd be linked
 * again. */
static void test_loaded_on_first_request(void **state) {
        Fixture *f = *state;
        assert_false(mapped("libmicrohttpd"));
        assert_false(api_server_loaded(f->server));
        /* Idle loop turns do not load it either. */
        assert_int_equal(event_run(f->event, 0), 0);
        assert_false(mapped("libmicrohttpd"));

        char *a = request(f, "GET", "/hello");
        assert_int_equal(status_of(a), 200);
        assert_string_equal(body_of(a), "{\"hello\":\"world\"}");
        free(a);
        assert_true(api_server_loaded(f->server));
        assert_true(mapped("libmicrohttpd.so.12"));
}

/* A library that is missing, or that lacks a function: no answer (the
 * connection is closed), no handler call, the port stays bound, the loop
 * and the next server go on. */
static void test_load_failure(void **state) {
        Fixture *f = *state;
        static const char *const libraries[] = { "libnanolet-test-missing.so.0", "libc.so.6" };

        for (size_t i = 0; i < ELEMENTSOF(libraries); i++) {
                ApiServer *s = NULL, *other = NULL;
                Error err = {};
                ApiServerOptions o = { .address = "127.0.0.1",
                                       .name = "broken API",
                                       .library = libraries[i] };
                assert_int_equal(api_server_new(&s, f->event, &o, &err), 0);
                assert_int_equal(api_server_add_route(s, "/hello", on_hello, f), 0);
                for (unsigned k = 0; k < 3; k++) {
                        int fd = connect_to(api_server_port(s));
                        const char *req = "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n";
                        send_all(fd, req, strlen(req));
                        char *a = read_answer(f, fd);
                        close(fd);
                        assert_string_equal(a, "");
                        free(a);
                }
                assert_false(api_server_loaded(s));
                assert_int_equal(f->handler_calls, 0);
                o.port = api_server_port(s);
                assert_int_equal(api_server_new(&other, f->event, &o, &err), -EADDRINUSE);
                api_server_free(s);
        }

        char *a = request(f, "GET", "/hello");
        assert_int_equal(status_of(a), 200);
        free(a);
}

static void test_get(void **state) {
        Fixture *f = *state;
        char *a = request(f, "GET", "/hello");
        assert_int_equal(status_of(a), 200);
        assert_non_null(strstr(a, "Content-Type: application/json\r\n"));
        assert_string_equal(body_of(a), "{\"hello\":\"world\"}");
        free(a);

        a = request(f, "GET", "/hello?who=nanolet&x=1");
        assert_int_equal(status_of(a), 200);
        assert_string_equal(body_of(a), "{\"hello\":\"nanolet\"}");
        free(a);
}

static void test_head(void **state) {
        Fixture *f = *state;
        char *a = request(f, "HEAD", "/hello");
        assert_int_equal(status_of(a), 200);
        assert_non_null(strstr(a, "Content-Length: 17\r\n"));
        assert_string_equal(body_of(a), "");
        free(a);
}

static void test_not_found(void **state) {
        Fixture *f = *state;
        static const char *const paths[] = { "/",     "/hello/",        "/hell",        "/helloo",
                                             "/pods", "/exec/ns/pod/c", "/run/ns/pod/c" };
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                char *a = request(f, "GET", paths[i]);
                assert_int_equal(status_of(a), 404);
                assert_string_equal(body_of(a), "404 page not found\n");
                free(a);
        }
        assert_int_equal(f->handler_calls, 0);
}

static void test_method_not_allowed(void **state) {
        Fixture *f = *state;
        static const char *const methods[] = { "POST", "PUT", "DELETE", "PATCH", "OPTIONS" };
        for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                char *a = request(f, methods[i], "/hello");
                assert_int_equal(status_of(a), 405);
                assert_non_null(strstr(a, "Allow: GET, HEAD\r\n"));
                free(a);
        }
        /* Also where no route is: the method is judged first. */
        char *a = request(f, "POST", "/nothing");
        assert_int_equal(status_of(a), 405);
        free(a);

        /* A body sent with it is never read. */
        int fd = connect_to(api_server_port(f->server));
        const char *req = "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                          "Connection: close\r\n\r\nabcde";
        send_all(fd, req, strlen(req));
        a = read_answer(f, fd);
        close(fd);
        assert_int_equal(status_of(a), 405);
        free(a);
        assert_int_equal(f->handler_calls, 0);
}

static void test_handler_error(void **state) {
        Fixture *f = *state;
        char *a = request(f, "GET", "/broken");
        assert_int_equal(status_of(a), 500);
        assert_null(strstr(a, "partial"));
        free(a);
}

static void test_limits(void **state) {
        Fixture *f = *state;
        /* A request line, then a header, longer than a connection's memory. */
        size_t n = API_SERVER_CONNECTION_MEMORY + 1024;
        char *big = malloc(n + 1);
        assert_non_null(big);
        big[0] = '/';
        memset(big + 1, 'a', n - 1);
        big[n] = 0;
        for (unsigned i = 0; i < 2; i++) {
                int fd = connect_to(api_server_port(f->server));
                if (i == 0) {
                        send_some(fd, "GET ", 4);
                        send_some(fd, big, n);
                        const char *rest = " HTTP/1.1\r\nHost: x\r\n\r\n";
                        send_some(fd, rest, strlen(rest));
                } else {
                        const char *head = "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: ";
                        send_some(fd, head, strlen(head));
                        send_some(fd, big, n);
                        send_some(fd, "\r\n\r\n", 4);
                }
                char *a = read_answer(f, fd);
                close(fd);
                assert_refused(a);
                free(a);
        }
        free(big);
        assert_int_equal(f->handler_calls, 0);

        /* The server still answers. */
        char *a = request(f, "GET", "/hello");
        assert_int_equal(status_of(a), 200);
        free(a);
}

/* Targets libmicrohttpd cannot hold with their parameters are refused at
 * once (it would leave them unanswered until the idle timeout). */
static void test_query_limits(void **state) {
        Fixture *f = *state;
        static const struct {
                unsigned args;
                unsigned status;
        } cases[] = { { 64, 200 }, { 65, 431 }, { 480, 431 }, { 490, 431 }, { 5000, 414 } };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                size_t cap = 16 + cases[i].args * 8, len = 0;
                char *target = malloc(cap);
                assert_non_null(target);
                len += (size_t)snprintf(target, cap, "/hello?");
                for (unsigned k = 0; k < cases[i].args; k++)
                        len += (size_t)snprintf(target + len, cap - len, "%sa=%u", k ? "&" : "",
                                                k % 10);
                usec_t t = now_usec(CLOCK_MONOTONIC);
                char *a = request(f, "GET", target);
                assert_int_equal(status_of(a), cases[i].status);
                /* well before the idle timeout, however loaded the machine */
                assert_true(now_usec(CLOCK_MONOTONIC) - t <
                            API_SERVER_CONNECTION_TIMEOUT_SEC * USEC_PER_SEC / 2);
                free(a);
                free(target);
        }
        assert_int_equal(f->handler_calls, 1);

        assert_int_equal(api_server_check_target(NULL), 0);
        assert_int_equal(api_server_check_target("/pods"), 0);
        assert_int_equal(api_server_check_target("/pods?"), 0);
        assert_int_equal(api_server_check_target("/a?&&&"), 0);
        char big[API_SERVER_MAX_TARGET + 2];
        memset(big, '&', sizeof big - 1);
        big[0] = '/';
        big[1] = '?';
        big[API_SERVER_MAX_QUERY_ARGS + 1] = 0; /* 63 '&': 64 parameters */
        assert_int_equal(api_server_check_target(big), 0);
        big[API_SERVER_MAX_QUERY_ARGS + 1] = '&';
        big[API_SERVER_MAX_QUERY_ARGS + 2] = 0;
        assert_int_equal(api_server_check_target(big), 431);
        memset(big + 2, 'x', sizeof big - 3);
        big[API_SERVER_MAX_TARGET] = 0;
        assert_int_equal(api_server_check_target(big), 0);
        big[API_SERVER_MAX_TARGET] = 'x';
        big[API_SERVER_MAX_TARGET + 1] = 0;
        assert_int_equal(api_server_check_target(big), 414);
}

/* Runs the loop until fd has an answer or the server closed it, for at
 * most budget; returns whether it did. */
static bool answered_within(Fixture *f, int fd, usec_t budget) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + budget;
        char c;
        assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
        while (now_usec(CLOCK_MONOTONIC) < end) {
                ssize_t k = recv(fd, &c, 1, MSG_PEEK);
                if (k >= 0 || errno != EAGAIN)
                        return true;
                assert_int_equal(event_run(f->event, 10 * USEC_PER_MSEC), 0);
        }
        return false;
}

/* A full listener whose clients all leave takes the next connection at
 * once: the listening socket goes back into libmicrohttpd's epoll set only
 * in a run after a slot freed, and nothing but the server itself asks for
 * that run. */
static void test_full_then_drained(void **state) {
        Fixture *f = *state;
        int fds[API_SERVER_MAX_CONNECTIONS];
        const char *req = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

        char *a = request(f, "GET", "/hello"); /* libmicrohttpd runs */
        free(a);
        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                fds[i] = connect_to(api_server_port(f->server));
        for (unsigned i = 0; i < 20; i++)
                assert_int_equal(event_run(f->event, 10 * USEC_PER_MSEC), 0);
        int waiting = connect_to(api_server_port(f->server));
        send_all(waiting, req, strlen(req));
        assert_false(answered_within(f, waiting, 200 * USEC_PER_MSEC));

        for (size_t i = 0; i < ELEMENTSOF(fds); i++)
                close(fds[i]);
        assert_true(
                answered_within(f, waiting, API_SERVER_CONNECTION_TIMEOUT_SEC * USEC_PER_SEC / 2));
        a = read_answer(f, waiting);
        close(waiting);
        assert_int_equal(status_of(a), 200);
        free(a);
        a = request(f, "GET", "/hello");
        assert_int_equal(status_of(a), 200);
        free(a);
}

static void test_conn_deadlines(void **state) {
        const usec_t t = API_SERVER_CONNECTION_TIMEOUT_SEC * USEC_PER_SEC, s = 1000;

        /* A request must be in within T, however slowly it trickles. */
        assert_int_equal(api_server_conn_deadline(API_CONN_REQUEST, s, 0, false), s + t);
        assert_int_equal(api_server_conn_deadline(API_CONN_REQUEST, s, 0, true), s + t);
        assert_int_equal(api_server_conn_deadline(API_CONN_REQUEST, s, 3, false), s + t);
        /* Kept alive while others wait: closed at once. */
        assert_int_equal(api_server_conn_deadline(API_CONN_REQUEST, s, 1, true), s);
        /* An answer: the idle timeout only, unless others wait. */
        assert_true(api_server_conn_deadline(API_CONN_ANSWER, s, 0, false) == USEC_INFINITY);
        assert_int_equal(api_server_conn_deadline(API_CONN_ANSWER, s, 0, true), s + t);
}

static int on_timer(EventSource *s, usec_t now, void *userdata) {
        Fixture *f = userdata;
        f->timer_ran = true;
        return 0;
}

/* A request that waited while the loop did not turn is answered in the
 * first iteration, before that iteration's timers (the health check needs
 * it: the relist timer must not run first). */
static void test_waiting_request_before_timers(void **state) {
        Fixture *f = *state;
        EventSource *t = NULL;
        int fd = connect_to(api_server_port(f->server));
        const char *req = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        send_all(fd, req, strlen(req));
        assert_int_equal(event_add_time(f->event, &t, 0, 0, on_timer, f), 0);

        assert_int_equal(event_run(f->event, 0), 0);
        assert_int_equal(f->handler_calls, 1);
        assert_true(f->timer_ran);
        assert_false(f->timer_ran_before_handler);
        char *a = read_answer(f, fd);
        close(fd);
        assert_int_equal(status_of(a), 200);
        free(a);
        event_source_free(t);
}

static void test_port_in_use(void **state) {
        Fixture *f = *state;
        ApiServer *s = NULL;
        Error err = {};
        char want[64];
        ApiServerOptions o = { .address = "127.0.0.1", .port = api_server_port(f->server) };

        assert_int_equal(api_server_new(&s, f->event, &o, &err), -EADDRINUSE);
        assert_null(s);
        snprintf(want, sizeof want, "Cannot listen on 127.0.0.1:%u: Address already in use",
                 (unsigned)o.port);
        assert_string_equal(err.message, want);

        error_clear(&err);
        o.address = "localhost";
        assert_int_equal(api_server_new(&s, f->event, &o, &err), -EINVAL);
        assert_string_equal(err.message, "\"localhost\" is not an IP address");
}

static void test_duplicate_route(void **state) {
        Fixture *f = *state;
        assert_int_equal(api_server_add_route(f->server, "/hello", on_hello, f), -EEXIST);
}

static void test_sync_loop_check(void **state) {
        const usec_t s = USEC_PER_SEC, period = 1 * USEC_PER_SEC;
        char *reason = NULL;

        assert_int_equal(api_node_check_sync_loop(100 * s, 100 * s, period, &reason), 0);
        assert_int_equal(api_node_check_sync_loop(100 * s, 102 * s, period, &reason), 0);
        assert_null(reason);
        assert_int_equal(api_node_check_sync_loop(100 * s, 102 * s + 1, period, NULL), -EAGAIN);
        assert_int_equal(api_node_check_sync_loop(100 * s, 147 * s + 300000, period, &reason),
                         -EAGAIN);
        assert_string_equal(reason, "sync loop last ran 47.3s ago, limit 2.0s");
        free(reason);
        reason = NULL;
        assert_int_equal(api_node_check_sync_loop(0, 5 * s, period, &reason), -EAGAIN);
        assert_string_equal(reason, "sync loop has not started");
        free(reason);
}

static void test_healthz_without_pods(void **state) {
        Fixture *f = *state;
        ApiNodeContext ctx = { .event = f->event };
        assert_int_equal(api_node_add_routes(f->server, &ctx, true), 0);
        char *a = request(f, "GET", "/healthz");
        assert_int_equal(status_of(a), 200);
        assert_string_equal(body_of(a), "ok");
        free(a);
        a = request(f, "GET", "/pods");
        assert_int_equal(status_of(a), 200);
        assert_string_equal(body_of(a),
                            "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},"
                            "\"items\":[]}\n");
        free(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_loaded_on_first_request, setup, teardown),
                cmocka_unit_test_setup_teardown(test_load_failure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_get, setup, teardown),
                cmocka_unit_test_setup_teardown(test_head, setup, teardown),
                cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
                cmocka_unit_test_setup_teardown(test_method_not_allowed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_handler_error, setup, teardown),
                cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_query_limits, setup, teardown),
                cmocka_unit_test_setup_teardown(test_full_then_drained, setup, teardown),
                cmocka_unit_test(test_conn_deadlines),
                cmocka_unit_test_setup_teardown(test_waiting_request_before_timers, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_port_in_use, setup, teardown),
                cmocka_unit_test_setup_teardown(test_duplicate_route, setup, teardown),
                cmocka_unit_test(test_sync_loop_check),
                cmocka_unit_test_setup_teardown(test_healthz_without_pods, setup, teardown),
        };

        alarm(60);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
