/* See event-curl.h. libcurl calls back into socket/timer functions from
 * inside curl_multi_* calls; those callbacks only (re)arm event sources and
 * never re-enter libcurl. Finished transfers are collected after every
 * curl_multi_socket_action(). */
#include "event-curl.h"

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "log.h"

typedef struct CurlSocket {
        curl_socket_t fd;
        EventSource *source;
} CurlSocket;

typedef struct CurlTransfer {
        CURL *easy;
        event_curl_done_t done;
        void *userdata;
        struct CurlTransfer *next;
} CurlTransfer;

struct EventCurl {
        Event *event;
        void *dl; /* the dlopen() handle of libcurl */
        CurlApi api;
        CURLM *multi;
        bool curl_initialized;
        CurlSocket *sockets;
        size_t n_sockets;
        EventSource *timer;
        CurlTransfer *transfers;
        unsigned n_transfers;
};

static int on_io(EventSource *es, int fd, uint32_t revents, void *userdata);
static int on_timer(EventSource *es, usec_t now, void *userdata);

static CurlSocket *find_socket(EventCurl *ec, curl_socket_t fd) {
        for (size_t i = 0; i < ec->n_sockets; i++)
                if (ec->sockets[i].fd == fd)
                        return &ec->sockets[i];
        return NULL;
}

static int on_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp) {
        EventCurl *ec = userp;
        CurlSocket *cs = find_socket(ec, fd);

        if (what == CURL_POLL_REMOVE) {
                if (cs) {
                        event_source_free(cs->source);
                        *cs = ec->sockets[--ec->n_sockets];
                }
                return 0;
        }
        uint32_t events =
                ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
        if (cs)
                return event_source_set_io_events(cs->source, events) < 0 ? -1 : 0;

        CurlSocket *n = reallocarray(ec->sockets, ec->n_sockets + 1, sizeof *n);
        if (!n)
                return -1;
        ec->sockets = n;
        EventSource *src;
        int r = event_add_io(ec->event, &src, fd, events, on_io, ec);
        if (r < 0) {
                log_debug_errno(r, "Failed to watch a libcurl socket: %m");
                return -1; /* fails the transfer, which its owner then sees */
        }
        (void)event_source_set_description(src, "curl-socket");
        ec->sockets[ec->n_sockets++] = (CurlSocket){ fd, src };
        return 0;
}

static int on_curl_timeout(CURLM *multi, long timeout_ms, void *userp) {
        EventCurl *ec = userp;
        int r;

        if (timeout_ms < 0) {
                if (ec->timer)
                        (void)event_source_set_enabled(ec->timer, false);
                return 0;
        }
        usec_t when = now_usec(CLOCK_MONOTONIC) + (usec_t)timeout_ms * USEC_PER_MSEC;
        if (!ec->timer) {
                r = event_add_time(ec->event, &ec->timer, when, USEC_PER_MSEC, on_timer, ec);
                if (r >= 0)
                        (void)event_source_set_description(ec->timer, "curl-timer");
        } else
                r = event_source_set_time(ec->timer, when);
        return r < 0 ? -1 : 0;
}

static CurlTransfer *unlink_transfer(EventCurl *ec, CURL *easy) {
        for (CurlTransfer **p = &ec->transfers; *p; p = &(*p)->next)
                if ((*p)->easy == easy) {
                        CurlTransfer *t = *p;
                        *p = t->next;
                        ec->n_transfers--;
                        return t;
                }
        return NULL;
}

static void check_done(EventCurl *ec) {
        CURLMsg *m;
        int left;

        while ((m = ec->api.multi_info_read(ec->multi, &left))) {
                if (m->msg != CURLMSG_DONE)
                        continue;
                CURL *easy = m->easy_handle;
                CURLcode result = m->data.result;
                (void)ec->api.multi_remove_handle(ec->multi, easy);
                CurlTransfer *t = unlink_transfer(ec, easy);
                if (!t)
                        continue;
                event_curl_done_t done = t->done;
                void *userdata = t->userdata;
                free(t);
                done(ec, easy, result, userdata);
        }
}

static int on_io(EventSource *es, int fd, uint32_t revents, void *userdata) {
        EventCurl *ec = userdata;
        int flags = 0, running;

        if (revents & (EPOLLIN | EPOLLHUP))
                flags |= CURL_CSELECT_IN;
        if (revents & EPOLLOUT)
                flags |= CURL_CSELECT_OUT;
        if (revents & EPOLLERR)
                flags |= CURL_CSELECT_ERR;
        (void)ec->api.multi_socket_action(ec->multi, fd, flags, &running);
        check_done(ec);
        return 0;
}

static int on_timer(EventSource *es, usec_t now, void *userdata) {
        EventCurl *ec = userdata;
        int running;

        (void)ec->api.multi_socket_action(ec->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(ec);
        return 0;
}

/* Never dlclose()d: libcurl's TLS and GSSAPI libraries may leave thread-key
 * destructors or atfork handlers behind, which must not point into unmapped
 * code; once a URL source or an HTTP probe needed libcurl, it stays mapped
 * (dlopen() of a loaded library only counts a reference). */
static int curl_api_load(EventCurl *ec, Error *error) {
        ec->dl = dlopen(EVENT_CURL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (!ec->dl)
                return error_set(error, -ELIBACC, "%s", dlerror());
#define CURL_API_LOAD(name, member)                                                                \
        ec->api.member = (__typeof__(name) *)dlsym(ec->dl, #name);                                 \
        if (!ec->api.member)                                                                       \
                return error_set(error, -ELIBACC, EVENT_CURL_LIBRARY " has no " #name "()");
        CURL_API_FUNCTIONS(CURL_API_LOAD)
#undef CURL_API_LOAD
        return 0;
}

int event_curl_new(Event *e, EventCurl **ret, Error *error) {
        assert(e && ret);
        _cleanup_event_curl_free_ EventCurl *ec = calloc(1, sizeof *ec);
        if (!ec)
                return error_set(error, -ENOMEM, "out of memory");
        ec->event = e;
        int r = curl_api_load(ec, error);
        if (r < 0)
                return r;
        /* Reference counted by libcurl: safe next to other users. */
        if (ec->api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return error_set(error, -EIO, "curl_global_init() failed");
        ec->curl_initialized = true;
        ec->multi = ec->api.multi_init();
        if (!ec->multi)
                return error_set(error, -ENOMEM, "curl_multi_init() failed");
        if (ec->api.multi_setopt(ec->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket) != CURLM_OK ||
            ec->api.multi_setopt(ec->multi, CURLMOPT_SOCKETDATA, ec) != CURLM_OK ||
            ec->api.multi_setopt(ec->multi, CURLMOPT_TIMERFUNCTION, on_curl_timeout) != CURLM_OK ||
            ec->api.multi_setopt(ec->multi, CURLMOPT_TIMERDATA, ec) != CURLM_OK)
                return error_set(error, -EINVAL, "libcurl refused the multi callbacks");
        *ret = TAKE_PTR(ec);
        return 0;
}

const CurlApi *event_curl_api(const EventCurl *ec) {
        assert(ec);
        return &ec->api;
}

EventCurl *event_curl_free(EventCurl *ec) {
        if (!ec)
                return NULL;
        if (ec->multi) {
                /* No callbacks while libcurl tears down; our io sources go
                 * while their fds are still open. */
                (void)ec->api.multi_setopt(ec->multi, CURLMOPT_SOCKETFUNCTION, NULL);
                (void)ec->api.multi_setopt(ec->multi, CURLMOPT_TIMERFUNCTION, NULL);
        }
        for (size_t i = 0; i < ec->n_sockets; i++)
                event_source_free(ec->sockets[i].source);
        free(ec->sockets);
        while (ec->transfers) {
                CurlTransfer *t = ec->transfers;
                ec->transfers = t->next;
                (void)ec->api.multi_remove_handle(ec->multi, t->easy);
                free(t);
        }
        if (ec->multi)
                (void)ec->api.multi_cleanup(ec->multi);
        if (ec->curl_initialized)
                ec->api.global_cleanup();
        event_source_free(ec->timer);
        free(ec);
        return NULL;
}

int event_curl_add(EventCurl *ec, CURL *easy, event_curl_done_t done, void *userdata) {
        assert(ec && easy && done);
        CurlTransfer *t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        *t = (CurlTransfer){ .easy = easy, .done = done, .userdata = userdata };
        if (ec->api.multi_add_handle(ec->multi, easy) != CURLM_OK) {
                free(t);
                return -EINVAL;
        }
        t->next = ec->transfers;
        ec->transfers = t;
        ec->n_transfers++;
        return 0;
}

void event_curl_remove(EventCurl *ec, CURL *easy) {
        if (!ec || !easy)
                return;
        CurlTransfer *t = unlink_transfer(ec, easy);
        if (!t)
                return;
        free(t);
        (void)ec->api.multi_remove_handle(ec->multi, easy);
}

unsigned event_curl_running(const EventCurl *ec) {
        return ec ? ec->n_transfers : 0;
}
