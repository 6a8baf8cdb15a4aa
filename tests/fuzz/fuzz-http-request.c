/* libFuzzer target: the API's request path as a client can drive it. The
 * input is sent as raw bytes (method, target with path and query, headers)
 * to a server on the loop on 127.0.0.1 with the node's routes and a route
 * that reads the query; the loop runs until the server has closed the
 * connection. A handler must only ever see GET or HEAD of a path it was
 * registered for, and a 2xx answer only follow a GET or HEAD request. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "api-node.h"
#include "api-server.h"
#include "string-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct FuzzServer {
        Event *event;
        ApiServer *server;
        ApiNodeContext node;
} FuzzServer;

static int on_query(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        const char *path = api_request_path(req);
        if (!path || !streq(path, "/query"))
                __builtin_trap();
        const char *v = api_request_query(req, "q");
        return api_response_printf(resp, "%zu", v ? strlen(v) : 0);
}

/* One server for the whole run: what a long-running agent does too. */
static FuzzServer *fuzz_server(void) {
        static FuzzServer f;
        Error err = {};
        if (f.server)
                return &f;
        ApiServerOptions o = { .address = "127.0.0.1", .port = 0, .name = "fuzz API" };
        if (event_new(&f.event) < 0 || api_server_new(&f.server, f.event, &o, &err) < 0)
                abort();
        f.node = (ApiNodeContext){ .event = f.event };
        if (api_node_add_routes(f.server, &f.node, true) < 0 ||
            api_server_add_route(f.server, "/query", on_query, NULL) < 0)
                abort();
        return &f;
}

static bool method_is_get_or_head(const uint8_t *data, size_t size) {
        return (size >= 4 && memcmp(data, "GET ", 4) == 0) ||
               (size >= 5 && memcmp(data, "HEAD ", 5) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        FuzzServer *f = fuzz_server();
        struct sockaddr_in sa = { .sin_family = AF_INET,
                                  .sin_port = htons(api_server_port(f->server)),
                                  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        char answer[16] = {};
        size_t got = 0, sent = 0;
        bool closed = false;

        if (size > 256 * 1024)
                return 0;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                abort();
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS)
                abort();
        /* Bounded: MHD closes an idle connection after its timeout anyway. */
        for (unsigned i = 0; i < 2000 && !closed; i++) {
                if (sent < size) {
                        ssize_t k = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
                        if (k > 0)
                                sent += (size_t)k;
                        else if (k < 0 && errno != EAGAIN)
                                sent = size; /* refused: the server closed */
                        if (sent == size)
                                (void)shutdown(fd, SHUT_WR);
                }
                for (;;) {
                        char buf[4096];
                        ssize_t k = read(fd, buf, sizeof buf);
                        if (k > 0) {
                                size_t n = MIN((size_t)k, sizeof answer - 1 - got);
                                memcpy(answer + got, buf, n);
                                got += n;
                                continue;
                        }
                        if (k == 0 || errno != EAGAIN)
                                closed = true;
                        break;
                }
                if (!closed && event_run(f->event, 5 * USEC_PER_MSEC) < 0)
                        abort();
        }
        close(fd);
        if (startswith(answer, "HTTP/1.1 2") && !method_is_get_or_head(data, size))
                __builtin_trap();
        return 0;
}
