/* libcurl's multi interface bound to an Event: libcurl's sockets become io
 * sources and its timeout a timer source, so any number of transfers run
 * on the loop without a thread or a blocking call. One EventCurl serves
 * every user on a loop (URL source, HTTP and gRPC probes).
 *
 * libcurl is not linked: event_curl_new() loads libcurl.so.4 with dlopen(),
 * so that an agent with neither a URL source nor an HTTP/gRPC probe never
 * maps libcurl and its TLS/Kerberos/LDAP chain (about 1.8 MiB of RSS, see
 * docs/BENCHMARKS.md). Every libcurl call of the agent goes through the
 * CurlApi table that the EventCurl owns (event_curl_api()); it stays valid
 * until event_curl_free(), so easy handles and lists must be freed first.
 * Code that only the CLI links (the image pull) may call libcurl directly.
 *
 * The caller builds and owns each easy handle. event_curl_add() starts it;
 * when it finishes, it is removed from the multi and done() runs once with
 * libcurl's result; the caller then cleans the handle up (also from inside
 * done()). event_curl_remove() takes a transfer back before it finished;
 * done() is not called then. */
#pragma once

#include <curl/curl.h>

#include "cleanup.h"
#include "error.h"
#include "event.h"

/* The soname loaded; named in error messages. */
#define EVENT_CURL_LIBRARY "libcurl.so.4"

/* The libcurl functions the agent uses: X(libcurl name, CurlApi member). */
#define CURL_API_FUNCTIONS(X)                                                                      \
        X(curl_global_init, global_init)                                                           \
        X(curl_global_cleanup, global_cleanup)                                                     \
        X(curl_multi_init, multi_init)                                                             \
        X(curl_multi_setopt, multi_setopt)                                                         \
        X(curl_multi_add_handle, multi_add_handle)                                                 \
        X(curl_multi_remove_handle, multi_remove_handle)                                           \
        X(curl_multi_socket_action, multi_socket_action)                                           \
        X(curl_multi_info_read, multi_info_read)                                                   \
        X(curl_multi_cleanup, multi_cleanup)                                                       \
        X(curl_easy_init, easy_init)                                                               \
        X(curl_easy_setopt, easy_setopt)                                                           \
        X(curl_easy_getinfo, easy_getinfo)                                                         \
        X(curl_easy_strerror, easy_strerror)                                                       \
        X(curl_easy_cleanup, easy_cleanup)                                                         \
        X(curl_slist_append, slist_append)                                                         \
        X(curl_slist_free_all, slist_free_all)                                                     \
        X(curl_url, url)                                                                           \
        X(curl_url_set, url_set)                                                                   \
        X(curl_url_get, url_get)                                                                   \
        X(curl_url_cleanup, url_cleanup)                                                           \
        X(curl_free, free)                                                                         \
        X(curl_getdate, getdate)

/* Pointers typed from libcurl's own prototypes, so a mismatch does not
 * compile. Read-only once event_curl_new() returned. */
typedef struct CurlApi {
#define CURL_API_MEMBER(name, member) __typeof__(name) *member;
        CURL_API_FUNCTIONS(CURL_API_MEMBER)
#undef CURL_API_MEMBER
} CurlApi;

typedef struct EventCurl EventCurl;

typedef void (*event_curl_done_t)(EventCurl *ec, CURL *easy, CURLcode result, void *userdata);

/* Loads libcurl (the first EventCurl of the process does; later ones share
 * the mapping) and sets the multi up. -ELIBACC with dlerror()'s sentence
 * ("libcurl.so.4: cannot open shared object file: ...") in error when the
 * library or one of its functions is missing; the caller prefixes what
 * needed it ("HTTP probes need libcurl.so.4"). */
int event_curl_new(Event *e, EventCurl **ret, Error *error);
/* Transfers still running are removed from the multi without done(). */
EventCurl *event_curl_free(EventCurl *ec);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventCurl *, event_curl_free)
#define _cleanup_event_curl_free_ _cleanup_(event_curl_freep)

/* The loaded functions; valid until event_curl_free(ec). */
const CurlApi *event_curl_api(const EventCurl *ec);

/* Uses CURLOPT_PRIVATE of easy. 0, -ENOMEM or -EINVAL. */
int event_curl_add(EventCurl *ec, CURL *easy, event_curl_done_t done, void *userdata);
void event_curl_remove(EventCurl *ec, CURL *easy);
/* Transfers in flight. */
unsigned event_curl_running(const EventCurl *ec);
