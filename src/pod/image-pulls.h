/* The agent's image pulls as the pods need them (docs/images.md): at most
 * max_parallel pulls at a time (1 with serializeImagePulls, kubelet's
 * default), queued in request order beyond that, and one pull per
 * reference and credentials however many containers wait for it: a second
 * request for an image being pulled joins the pull. What pulls is a
 * backend (image_pull_start() in the agent, a fake in unit tests), so the
 * policy here is testable without a registry.
 *
 * Pull policy, back-off and the waiting reasons are the pod worker's
 * (pod-containers.c): this module only runs and shares the pulls. */
#pragma once

#include <stdbool.h>

#include "error.h"
#include "event.h"
#include "time-util.h"

typedef struct ImagePulls ImagePulls;
typedef struct ImagePullWaiter ImagePullWaiter;

/* One pull's end. r: < 0 failed (error says why), 0 pulled, 1 the image
 * was already there. digest: the image's manifest digest on success. */
typedef void (*image_pull_backend_done_t)(void *pull_userdata, int r, const char *digest,
                                          const char *error);

typedef struct ImagePullBackend {
        /* Starts pulling ref with auths_json (a docker config.json document
         * tried before the agent's credential file; NULL: none). Calls done
         * once, later, from the loop, unless cancelled. Returns 0 and a
         * handle for cancel(), or -errno with err saying why. */
        int (*start)(void *backend_userdata, const char *ref, const char *auths_json,
                     image_pull_backend_done_t done, void *pull_userdata, void **ret_handle,
                     Error *err);
        void (*cancel)(void *handle);
        void *userdata;
} ImagePullBackend;

/* max_parallel 0 is taken as 1. The backend is copied. */
int image_pulls_new(ImagePulls **ret, Event *e, unsigned max_parallel,
                    const ImagePullBackend *backend);
/* Cancels every pull (waiters are not called back). */
ImagePulls *image_pulls_free(ImagePulls *p);

/* The result for one waiter: as the backend's, plus how long the pull took
 * (from its start, not the request: queueing is not pulling). */
typedef void (*image_pulls_done_t)(int r, const char *digest, const char *error, usec_t duration,
                                   void *userdata);

/* Asks for ref. Joins a pull of the same ref and credentials that is queued
 * or running, else queues one. done runs once, from the loop, never inside
 * this call; *ret (optional) cancels the request. 0 or -ENOMEM. */
int image_pulls_request(ImagePulls *p, const char *ref, const char *auths_json,
                        image_pulls_done_t done, void *userdata, ImagePullWaiter **ret);
/* done will not be called. A pull other requests still wait for goes on;
 * one nobody waits for any more is dropped when queued and cancelled
 * through the backend when running (the agent's kills its helper: a
 * terminating pod must not wait for a stalled transfer). */
void image_pull_waiter_cancel(ImagePullWaiter *w);

/* Pulls running and queued (for tests and metrics). */
unsigned image_pulls_running(const ImagePulls *p);
unsigned image_pulls_queued(const ImagePulls *p);
