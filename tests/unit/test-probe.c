/* The probe module: the tracker's timing and thresholds (pure), the gRPC
 * health codec, and the runners against real things on 127.0.0.1: a tiny
 * HTTP server on the test's own loop, an open and a closed TCP port, and
 * commands spawned as an exec probe would spawn runc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "grpc-health.h"
#include "probe-run.h"
#include "probe-tracker.h"
#include "string-util.h"

#define S USEC_PER_SEC
/* How long a wait may take before the test gives up: a bound for a stuck
 * test, not a speed the prober must reach (the commands that must be cut
 * short run far longer than this). */
#define WAIT_CAP (30 * S)

/* ---- tracker ---- */

static const ProbeTiming timing = {
        .initial_delay = 5 * S,
        .period = 10 * S,
        .timeout = S,
        .success_threshold = 1,
        .failure_threshold = 3,
};

static void test_tracker_initial_results(void **state) {
        ProbeTracker t;
        probe_tracker_reset(&t, PROBE_LIVENESS, &timing, 100 * S);
        assert_int_equal(t.result, PROBE_RESULT_SUCCESS);
        probe_tracker_reset(&t, PROBE_READINESS, &timing, 100 * S);
        assert_int_equal(t.result, PROBE_RESULT_FAILURE);
        probe_tracker_reset(&t, PROBE_STARTUP, &timing, 100 * S);
        assert_int_equal(t.result, PROBE_RESULT_UNKNOWN);
        assert_string_equal(probe_type_to_string(PROBE_STARTUP), "Startup");
        assert_null(probe_type_to_string(_PROBE_TYPE_MAX));
}

static void test_tracker_initial_delay_and_period(void **state) {
        ProbeTracker t;
        probe_tracker_reset(&t, PROBE_LIVENESS, &timing, 100 * S);
        assert_int_equal(probe_tracker_next_run(&t, false), 105 * S);
        probe_tracker_begin(&t, 105 * S);
        assert_int_equal(probe_tracker_next_run(&t, false), USEC_INFINITY); /* in flight */
        assert_false(probe_tracker_record(&t, PROBE_RESULT_SUCCESS));
        assert_int_equal(probe_tracker_next_run(&t, false), 115 * S);
        /* a late probe: the next one is a period after it started */
        probe_tracker_begin(&t, 117 * S);
        (void)probe_tracker_record(&t, PROBE_RESULT_SUCCESS);
        assert_int_equal(probe_tracker_next_run(&t, false), 127 * S);
}

static void test_tracker_failure_threshold(void **state) {
        ProbeTracker t;
        probe_tracker_reset(&t, PROBE_LIVENESS, &timing, 0);
        usec_t now = 5 * S;
        for (int i = 0; i < 2; i++) {
                probe_tracker_begin(&t, now);
                assert_false(probe_tracker_record(&t, PROBE_RESULT_FAILURE));
                assert_int_equal(t.result, PROBE_RESULT_SUCCESS);
                now += 10 * S;
        }
        /* a success in between starts the count again */
        probe_tracker_begin(&t, now);
        assert_false(probe_tracker_record(&t, PROBE_RESULT_SUCCESS));
        for (int i = 0; i < 2; i++) {
                probe_tracker_begin(&t, now += 10 * S);
                assert_false(probe_tracker_record(&t, PROBE_RESULT_FAILURE));
        }
        probe_tracker_begin(&t, now += 10 * S);
        assert_true(probe_tracker_record(&t, PROBE_RESULT_FAILURE));
        assert_int_equal(t.result, PROBE_RESULT_FAILURE);
        /* liveness failed: on hold until the next attempt */
        assert_true(t.on_hold);
        assert_int_equal(probe_tracker_next_run(&t, false), USEC_INFINITY);
        /* the next attempt starts afresh */
        probe_tracker_reset(&t, PROBE_LIVENESS, &timing, now + S);
        assert_false(t.on_hold);
        assert_int_equal(t.result, PROBE_RESULT_SUCCESS);
        assert_int_equal(probe_tracker_next_run(&t, false), now + 6 * S);
}

static void test_tracker_readiness_both_ways(void **state) {
        ProbeTiming ti = timing;
        ti.success_threshold = 2;
        ti.failure_threshold = 1;
        ProbeTracker t;
        probe_tracker_reset(&t, PROBE_READINESS, &ti, 0);
        probe_tracker_begin(&t, 5 * S);
        assert_false(probe_tracker_record(&t, PROBE_RESULT_SUCCESS));
        probe_tracker_begin(&t, 15 * S);
        assert_true(probe_tracker_record(&t, PROBE_RESULT_SUCCESS));
        assert_int_equal(t.result, PROBE_RESULT_SUCCESS);
        probe_tracker_begin(&t, 25 * S);
        assert_true(probe_tracker_record(&t, PROBE_RESULT_FAILURE));
        assert_int_equal(t.result, PROBE_RESULT_FAILURE);
        /* readiness keeps probing after a failure */
        assert_false(t.on_hold);
        assert_int_equal(probe_tracker_next_run(&t, false), 35 * S);
        /* an Unknown outcome changes nothing */
        probe_tracker_begin(&t, 35 * S);
        assert_false(probe_tracker_record(&t, PROBE_RESULT_UNKNOWN));
        assert_int_equal(t.result, PROBE_RESULT_FAILURE);
        assert_int_equal(t.run, 1);
}

static void test_tracker_startup_gating(void **state) {
        ProbeTracker st, lv;
        probe_tracker_reset(&st, PROBE_STARTUP, &timing, 0);
        probe_tracker_reset(&lv, PROBE_LIVENESS, &timing, 0);
        /* gated: liveness waits, startup runs */
        assert_int_equal(probe_tracker_next_run(&lv, true), USEC_INFINITY);
        assert_int_equal(probe_tracker_next_run(&st, true), 5 * S);
        probe_tracker_begin(&st, 5 * S);
        assert_true(probe_tracker_record(&st, PROBE_RESULT_SUCCESS));
        /* a startup probe that passed is done for this attempt */
        assert_int_equal(probe_tracker_next_run(&st, false), USEC_INFINITY);
        assert_int_equal(probe_tracker_next_run(&lv, false), 5 * S);
        /* startup failure puts it on hold (the container is killed) */
        probe_tracker_reset(&st, PROBE_STARTUP, &timing, 0);
        for (int i = 0; i < 3; i++) {
                probe_tracker_begin(&st, (5 + 10 * (usec_t)i) * S);
                assert_int_equal(probe_tracker_record(&st, PROBE_RESULT_FAILURE), i == 2);
        }
        assert_true(st.on_hold);
}

/* ---- gRPC codec ---- */

static void test_grpc_request(void **state) {
        uint8_t *buf;
        size_t len;
        assert_int_equal(grpc_health_request_encode("health", &buf, &len), 0);
        const uint8_t want[] = { 0, 0, 0, 0, 8, 0x0a, 6, 'h', 'e', 'a', 'l', 't', 'h' };
        assert_int_equal(len, sizeof want);
        assert_memory_equal(buf, want, sizeof want);
        free(buf);
        assert_int_equal(grpc_health_request_encode(NULL, &buf, &len), 0);
        const uint8_t empty[] = { 0, 0, 0, 0, 0 };
        assert_int_equal(len, sizeof empty);
        assert_memory_equal(buf, empty, sizeof empty);
        free(buf);
}

static void test_grpc_response(void **state) {
        int st = -1;
        const uint8_t serving[] = { 0, 0, 0, 0, 2, 0x08, 1 };
        assert_int_equal(grpc_health_response_decode(serving, sizeof serving, &st), 0);
        assert_int_equal(st, GRPC_HEALTH_SERVING);
        const uint8_t not_serving[] = { 0, 0, 0, 0, 2, 0x08, 2 };
        assert_int_equal(grpc_health_response_decode(not_serving, sizeof not_serving, &st), 0);
        assert_int_equal(st, GRPC_HEALTH_NOT_SERVING);
        assert_string_equal(grpc_serving_status_to_string(st), "NOT_SERVING");
        /* empty message: proto3 default UNKNOWN */
        const uint8_t empty[] = { 0, 0, 0, 0, 0 };
        assert_int_equal(grpc_health_response_decode(empty, sizeof empty, &st), 0);
        assert_int_equal(st, GRPC_HEALTH_UNKNOWN);
        /* unknown fields before the status are skipped */
        const uint8_t extra[] = { 0, 0, 0, 0, 7, 0x12, 2, 'x', 'y', 0x18, 5, 0x08, 1 };
        assert_int_equal(grpc_health_response_decode(extra, sizeof extra - 2, &st), -EBADMSG);
        const uint8_t extra_ok[] = { 0, 0, 0, 0, 8, 0x12, 2, 'x', 'y', 0x18, 5, 0x08, 1 };
        assert_int_equal(grpc_health_response_decode(extra_ok, sizeof extra_ok, &st), 0);
        assert_int_equal(st, GRPC_HEALTH_SERVING);
        const uint8_t truncated[] = { 0, 0, 0, 0, 9, 0x08, 1 };
        assert_int_equal(grpc_health_response_decode(truncated, sizeof truncated, &st), -EBADMSG);
        const uint8_t compressed[] = { 1, 0, 0, 0, 2, 0x08, 1 };
        assert_int_equal(grpc_health_response_decode(compressed, sizeof compressed, &st),
                         -EPROTONOSUPPORT);
        assert_int_equal(grpc_health_response_decode(serving, 3, &st), -EBADMSG);
}

/* ---- runners ---- */

typedef struct Outcome {
        bool done;
        ProbeResult result;
        char output[1024];
} Outcome;

static void on_done(ProbeResult result, const char *output, void *userdata) {
        Outcome *o = userdata;
        o->done = true;
        o->result = result;
        snprintf(o->output, sizeof o->output, "%s", output);
}

static void run_until_done(Event *e, Outcome *o, usec_t cap) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + cap;
        while (!o->done && now_usec(CLOCK_MONOTONIC) < end)
                assert_int_equal(event_run(e, 50 * USEC_PER_MSEC), 0);
        assert_true(o->done);
}

/* A one-request-per-connection HTTP server on the test's loop. */
typedef struct Server {
        Event *event;
        int fd;
        int port;
        EventSource *listen;
        EventSource *conns[8];
        char last_request[4096];
} Server;

static int on_conn(EventSource *s, int fd, uint32_t revents, void *userdata) {
        Server *srv = userdata;
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        snprintf(srv->last_request, sizeof srv->last_request, "%s", buf);
        char path[256] = "";
        (void)sscanf(buf, "GET %255s", path);
        char resp[16384];
        int len;
        if (startswith(path, "/hang"))
                return 0; /* never answers */
        if (startswith(path, "/ok"))
                len = snprintf(
                        resp, sizeof resp,
                        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfine");
        else if (startswith(path, "/redirect-here"))
                len = snprintf(
                        resp, sizeof resp,
                        "HTTP/1.1 302 Found\r\nLocation: "
                        "http://127.0.0.1:%d/bad\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                        srv->port);
        else if (startswith(path, "/redirect-away"))
                len = snprintf(resp, sizeof resp,
                               "HTTP/1.1 302 Found\r\nLocation: "
                               "http://nowhere.invalid/bad\r\nContent-Length: 0\r\nConnection: "
                               "close\r\n\r\n");
        else if (startswith(path, "/big")) {
                len = snprintf(
                        resp, sizeof resp,
                        "HTTP/1.1 200 OK\r\nContent-Length: 12000\r\nConnection: close\r\n\r\n");
                memset(resp + len, '#', 12000);
                len += 12000;
        } else
                len = snprintf(resp, sizeof resp,
                               "HTTP/1.1 500 Internal Server Error\r\nContent-Length: "
                               "4\r\nConnection: close\r\n\r\nsick");
        assert_int_equal(send(fd, resp, (size_t)len, MSG_NOSIGNAL), len);
        shutdown(fd, SHUT_WR);
        return 0;
}

static int on_accept(EventSource *s, int fd, uint32_t revents, void *userdata) {
        Server *srv = userdata;
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0)
                return 0;
        for (size_t i = 0; i < 8; i++)
                if (!srv->conns[i]) {
                        assert_int_equal(
                                event_add_io(srv->event, &srv->conns[i], c, EPOLLIN, on_conn, srv),
                                0);
                        (void)event_source_set_io_fd_own(srv->conns[i], true);
                        return 0;
                }
        close(c);
        return 0;
}

static int listen_port(int *ret_port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t l = sizeof a;
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
        assert_int_equal(listen(fd, 16), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
        *ret_port = ntohs(a.sin_port);
        return fd;
}

static void server_start(Server *srv, Event *e) {
        *srv = (Server){ .event = e };
        srv->fd = listen_port(&srv->port);
        assert_int_equal(event_add_io(e, &srv->listen, srv->fd, EPOLLIN, on_accept, srv), 0);
}

static void server_stop(Server *srv) {
        for (size_t i = 0; i < 8; i++)
                event_source_free(srv->conns[i]);
        event_source_free(srv->listen);
        close(srv->fd);
}

static void http_probe(Event *e, EventCurl *ec, const char *url, char *const *headers,
                       usec_t timeout, Outcome *o) {
        ProbeContext ctx = { .event = e, .curl = ec };
        ProbeAction a = { .type = PROBE_ACTION_HTTP_GET, .url = url, .headers = headers };
        ProbeRun *run = NULL;
        *o = (Outcome){};
        assert_int_equal(probe_run_start(&ctx, &a, timeout, on_done, o, &run), 0);
        assert_false(o->done); /* never from inside start */
        run_until_done(e, o, WAIT_CAP);
}

static void test_http_probe(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        EventCurl *ec = NULL;
        Server srv;
        Outcome o;
        char url[256];

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_curl_new(e, &ec, NULL), 0);
        server_start(&srv, e);

        char *headers[] = { (char *)"X-Custom: yes", (char *)"Host: example.test", NULL };
        snprintf(url, sizeof url, "http://127.0.0.1:%d/ok?x=1", srv.port);
        http_probe(e, ec, url, headers, S, &o);
        assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
        assert_string_equal(o.output, "fine");
        assert_non_null(strstr(srv.last_request, "GET /ok?x=1 HTTP/1.1"));
        assert_non_null(strstr(srv.last_request, "X-Custom: yes"));
        assert_non_null(strstr(srv.last_request, "Host: example.test"));
        assert_non_null(strstr(srv.last_request, "User-Agent: kube-probe/"));

        snprintf(url, sizeof url, "http://127.0.0.1:%d/sick", srv.port);
        http_probe(e, ec, url, NULL, S, &o);
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
        assert_string_equal(o.output, "HTTP probe failed with statuscode: 500");

        /* same host: followed, and the target's 500 counts */
        snprintf(url, sizeof url, "http://127.0.0.1:%d/redirect-here", srv.port);
        http_probe(e, ec, url, NULL, S, &o);
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
        assert_non_null(strstr(srv.last_request, "GET /bad"));

        /* another host: not followed, the 302 passes */
        snprintf(url, sizeof url, "http://127.0.0.1:%d/redirect-away", srv.port);
        http_probe(e, ec, url, NULL, S, &o);
        assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
        assert_non_null(strstr(o.output, "Probe terminated redirects"));

        /* a body larger than the cap: read up to it, status decides */
        snprintf(url, sizeof url, "http://127.0.0.1:%d/big", srv.port);
        http_probe(e, ec, url, NULL, S, &o);
        assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
        assert_true(strlen(o.output) > 1000);

        /* a server that never answers: the timeout fails it */
        snprintf(url, sizeof url, "http://127.0.0.1:%d/hang", srv.port);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        http_probe(e, ec, url, NULL, 300 * USEC_PER_MSEC, &o);
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
        assert_non_null(strstr(o.output, "context deadline exceeded"));
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 >= 250 * USEC_PER_MSEC);

        /* nothing listens */
        int dead_port;
        close(listen_port(&dead_port));
        snprintf(url, sizeof url, "http://127.0.0.1:%d/", dead_port);
        http_probe(e, ec, url, NULL, S, &o);
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);

        server_stop(&srv);
        event_curl_free(ec);
}

static void tcp_probe(Event *e, const char *host, int port, Outcome *o) {
        ProbeContext ctx = { .event = e };
        ProbeAction a = { .type = PROBE_ACTION_TCP_SOCKET, .host = host, .port = (uint16_t)port };
        ProbeRun *run = NULL;
        *o = (Outcome){};
        assert_int_equal(probe_run_start(&ctx, &a, S, on_done, o, &run), 0);
        run_until_done(e, o, WAIT_CAP);
}

static void test_tcp_probe(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Outcome o;
        int port;

        assert_int_equal(event_new(&e), 0);
        int fd = listen_port(&port);
        tcp_probe(e, "127.0.0.1", port, &o);
        assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
        close(fd);
        tcp_probe(e, "127.0.0.1", port, &o);
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
        assert_non_null(strstr(o.output, "connection refused")
                                ?: strstr(o.output, "Connection refused"));
        /* names would need a blocking resolver: the prober refuses them */
        tcp_probe(e, "localhost", port, &o);
        assert_int_equal(o.result, PROBE_RESULT_UNKNOWN);
}

static void exec_probe(Event *e, const char *script, usec_t timeout, Outcome *o) {
        char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
        ProbeContext ctx = { .event = e };
        ProbeAction a = { .type = PROBE_ACTION_EXEC, .argv = argv, .display = script };
        ProbeRun *run = NULL;
        *o = (Outcome){};
        assert_int_equal(probe_run_start(&ctx, &a, timeout, on_done, o, &run), 0);
        run_until_done(e, o, WAIT_CAP);
}

static void test_exec_probe(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Outcome o;

        assert_int_equal(event_new(&e), 0);
        exec_probe(e, "echo alive", S, &o);
        assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
        assert_string_equal(o.output, "alive\n");
        exec_probe(e, "echo broken >&2; exit 3", S, &o);
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
        assert_non_null(strstr(o.output, "broken"));
        assert_non_null(strstr(o.output, "exited with 3"));

        /* a hung command and what it started die at the timeout */
        char pidfile[] = "/tmp/test-probe-XXXXXX";
        int fd = mkstemp(pidfile);
        assert_true(fd >= 0);
        close(fd);
        char script[256];
        snprintf(script, sizeof script, "sleep 100 & echo $! > %s; wait", pidfile);
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        exec_probe(e, script, 300 * USEC_PER_MSEC, &o);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < WAIT_CAP); /* the command alone takes 100 s */
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
        assert_non_null(strstr(o.output, "timed out"));
        FILE *f = fopen(pidfile, "re");
        assert_non_null(f);
        int child = 0;
        assert_int_equal(fscanf(f, "%d", &child), 1);
        fclose(f);
        unlink(pidfile);
        /* the background sleep was in the probe's process group */
        usec_t end = now_usec(CLOCK_MONOTONIC) + WAIT_CAP;
        while (kill(child, 0) == 0 && now_usec(CLOCK_MONOTONIC) < end)
                usleep(10000);
        assert_int_equal(kill(child, 0), -1);

        /* a command that cannot start */
        char *argv[] = { (char *)"/nonexistent/probe", NULL };
        ProbeContext ctx = { .event = e };
        ProbeAction a = { .type = PROBE_ACTION_EXEC, .argv = argv };
        ProbeRun *run = NULL;
        assert_true(probe_run_start(&ctx, &a, S, on_done, &o, &run) < 0);
}

/* The probe's command writes its pid file the way runc does: a sibling
 * `.F` made with O_EXCL (the shell's noclobber), then renamed to F. Both
 * left by a killed one must not fail the next run. */
static void test_exec_probe_pid_file_leftovers(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        char dir[] = "/tmp/test-probe-XXXXXX";
        char pid_file[64], sibling[64], script[256];
        Outcome o;

        assert_int_equal(event_new(&e), 0);
        assert_non_null(mkdtemp(dir));
        snprintf(pid_file, sizeof pid_file, "%s/probe-1.pid", dir);
        snprintf(sibling, sizeof sibling, "%s/.probe-1.pid", dir);
        snprintf(script, sizeof script, "set -C; echo $$ > %s && mv %s %s", sibling, sibling,
                 pid_file);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(write_file_replace(sibling, "1", 1, 0600), 0);
                assert_int_equal(write_file_replace(pid_file, "1", 1, 0600), 0);
                char *argv[] = { (char *)"/bin/sh", (char *)"-c", script, NULL };
                ProbeContext ctx = { .event = e };
                ProbeAction a = { .type = PROBE_ACTION_EXEC,
                                  .argv = argv,
                                  .pid_file = pid_file,
                                  .display = script };
                ProbeRun *run = NULL;
                o = (Outcome){};
                assert_int_equal(probe_run_start(&ctx, &a, S, on_done, &o, &run), 0);
                run_until_done(e, &o, WAIT_CAP);
                assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
                assert_int_equal(access(pid_file, F_OK), -1);
                assert_int_equal(access(sibling, F_OK), -1);
        }
        assert_int_equal(rmdir(dir), 0);
}

/* A cancelled run's runc may be inside its open(O_EXCL) of `.F` when it is
 * killed: both files go after the reaping, not before it, and also when the
 * loop ends first. The command makes them and then waits, as runc waits on
 * what it runs. */
static void test_exec_probe_cancel_removes_pid_files_after_reaping(void **state) {
        char dir[] = "/tmp/test-probe-XXXXXX";
        char pid_file[64], sibling[64], script[256];

        assert_non_null(mkdtemp(dir));
        snprintf(pid_file, sizeof pid_file, "%s/probe-1.pid", dir);
        snprintf(sibling, sizeof sibling, "%s/.probe-1.pid", dir);
        snprintf(script, sizeof script, "echo $$ > %s; echo $$ > %s; exec sleep 100", sibling,
                 pid_file);
        for (int loop_ends_first = 0; loop_ends_first < 2; loop_ends_first++) {
                Event *e = NULL;
                Outcome o = {};
                assert_int_equal(event_new(&e), 0);
                char *argv[] = { (char *)"/bin/sh", (char *)"-c", script, NULL };
                ProbeContext ctx = { .event = e };
                ProbeAction a = { .type = PROBE_ACTION_EXEC,
                                  .argv = argv,
                                  .pid_file = pid_file,
                                  .display = script };
                ProbeRun *run = NULL;
                assert_int_equal(probe_run_start(&ctx, &a, 100 * S, on_done, &o, &run), 0);
                usec_t end = now_usec(CLOCK_MONOTONIC) + WAIT_CAP;
                while (access(pid_file, F_OK) < 0 && now_usec(CLOCK_MONOTONIC) < end)
                        assert_int_equal(event_run(e, 10 * USEC_PER_MSEC), 0);
                assert_int_equal(access(pid_file, F_OK), 0);
                assert_null(probe_run_cancel(run));
                assert_int_equal(access(pid_file, F_OK), 0);
                assert_int_equal(access(sibling, F_OK), 0);
                if (loop_ends_first)
                        assert_null(event_free(e));
                else {
                        end = now_usec(CLOCK_MONOTONIC) + WAIT_CAP;
                        while (access(pid_file, F_OK) == 0 && now_usec(CLOCK_MONOTONIC) < end)
                                assert_int_equal(event_run(e, 10 * USEC_PER_MSEC), 0);
                        assert_null(event_free(e));
                }
                assert_false(o.done);
                assert_int_equal(access(pid_file, F_OK), -1);
                assert_int_equal(access(sibling, F_OK), -1);
        }
        assert_int_equal(rmdir(dir), 0);
}

static void test_cancel_and_sleep(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Outcome o = {};
        ProbeRun *run = NULL;
        char *argv[] = { (char *)"/bin/sleep", (char *)"100", NULL };
        ProbeContext ctx = { .event = e };

        assert_int_equal(event_new(&e), 0);
        ctx.event = e;
        ProbeAction a = { .type = PROBE_ACTION_EXEC, .argv = argv };
        assert_int_equal(probe_run_start(&ctx, &a, 10 * S, on_done, &o, &run), 0);
        assert_null(probe_run_cancel(run));
        assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_false(o.done);

        ProbeAction sl = { .type = PROBE_ACTION_SLEEP, .sleep = 100 * USEC_PER_MSEC };
        assert_int_equal(probe_run_start(&ctx, &sl, USEC_INFINITY, on_done, &o, &run), 0);
        run_until_done(e, &o, WAIT_CAP);
        assert_int_equal(o.result, PROBE_RESULT_SUCCESS);
        /* cut at the timeout (preStop at the end of the grace period) */
        o = (Outcome){};
        sl.sleep = 10 * S;
        assert_int_equal(probe_run_start(&ctx, &sl, 100 * USEC_PER_MSEC, on_done, &o, &run), 0);
        run_until_done(e, &o, 5 * S); /* the sleep alone takes 10 s */
        assert_int_equal(o.result, PROBE_RESULT_FAILURE);
}

/* libcurl is loaded on first use (event-curl.h): without it, event_curl_new()
 * fails with a sentence naming the library instead of the agent not
 * starting. A child hides the distribution's library directories behind
 * empty tmpfs mounts in a mount namespace of its own (this binary does not
 * link libcurl, so nothing maps it yet) and tries. */
static int curl_missing_child(void) {
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 77;
        int hidden = 0;
        const char *const dirs[] = { "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib" };
        for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
                struct stat st;
                /* A merged-/usr symlink is hidden with its target. */
                if (lstat(dirs[i], &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (mount("tmpfs", dirs[i], "tmpfs", 0, NULL) < 0)
                        return 77;
                hidden++;
        }
        if (hidden == 0)
                return 77;
        if (dlopen(EVENT_CURL_LIBRARY, RTLD_NOW | RTLD_NOLOAD)) {
                fprintf(stderr, "libcurl is already mapped: run this test first\n");
                return 3;
        }
        Event *e = NULL;
        EventCurl *ec = NULL;
        Error error = {};
        if (event_new(&e) < 0)
                return 2;
        int r = event_curl_new(e, &ec, &error);
        if (r != -ELIBACC || ec || !strstr(error.message, EVENT_CURL_LIBRARY)) {
                fprintf(stderr, "event_curl_new() without libcurl: %d \"%s\"\n", r, error.message);
                return 1;
        }
        return 0;
}

static void test_curl_missing(void **state) {
        (void)state;
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(curl_missing_child()); /* _exit: no cmocka or leak report in the child */
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                skip(); /* not root, or no mount namespaces */
        assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        const struct CMUnitTest tests[] = {
                /* first: the others load libcurl, which then stays mapped */
                cmocka_unit_test(test_curl_missing),
                cmocka_unit_test(test_tracker_initial_results),
                cmocka_unit_test(test_tracker_initial_delay_and_period),
                cmocka_unit_test(test_tracker_failure_threshold),
                cmocka_unit_test(test_tracker_readiness_both_ways),
                cmocka_unit_test(test_tracker_startup_gating),
                cmocka_unit_test(test_grpc_request),
                cmocka_unit_test(test_grpc_response),
                cmocka_unit_test(test_http_probe),
                cmocka_unit_test(test_tcp_probe),
                cmocka_unit_test(test_exec_probe),
                cmocka_unit_test(test_exec_probe_pid_file_leftovers),
                cmocka_unit_test(test_exec_probe_cancel_removes_pid_files_after_reaping),
                cmocka_unit_test(test_cancel_and_sleep),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
