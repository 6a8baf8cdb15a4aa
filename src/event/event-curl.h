/* libcurl's multi interface bound to an Event: libcurl's sockets become io
 * sources and its timeout a timer source, so any number of transfers run
 * on the loop without a thread or a blocking call. One EventCurl serves
 * every user on a loop (URL source, HTTP and gRPC probes).
 *
 * The caller builds and owns each easy handle. event_curl_add() starts it;
 * when it finishes, it is removed from the multi and done() runs once with
 * libcurl's result; the caller then cleans the handle up (also from inside
 * done()). event_curl_remove() takes a transfer back before it finished;
 * done() is not called then. */
#pragma once

#include <curl/curl.h>

#include "cleanup.h"
#include "event.h"

typedef struct EventCurl EventCurl;

typedef void (*event_curl_done_t)(EventCurl *ec, CURL *easy, CURLcode result, void *userdata);

int event_curl_new(Event *e, EventCurl **ret);
/* Transfers still running are removed from the multi without done(). */
EventCurl *event_curl_free(EventCurl *ec);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventCurl *, event_curl_free)
#define _cleanup_event_curl_free_ _cleanup_(event_curl_freep)

/* Uses CURLOPT_PRIVATE of easy. 0, -ENOMEM or -EINVAL. */
int event_curl_add(EventCurl *ec, CURL *easy, event_curl_done_t done, void *userdata);
void event_curl_remove(EventCurl *ec, CURL *easy);
/* Transfers in flight. */
unsigned event_curl_running(const EventCurl *ec);

DEFINE_TRIVIAL_CLEANUP_FUNC(CURL *, curl_easy_cleanup)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct curl_slist *, curl_slist_free_all)
DEFINE_TRIVIAL_CLEANUP_FUNC(CURLU *, curl_url_cleanup)
#define _cleanup_curl_easy_ _cleanup_(curl_easy_cleanupp)
#define _cleanup_curl_slist_ _cleanup_(curl_slist_free_allp)
#define _cleanup_curl_url_ _cleanup_(curl_url_cleanupp)
