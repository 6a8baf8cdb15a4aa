/* Pulls shared by reference and credentials, bounded by the op queue that
 * the runtime and CNI use too. */
#include "image-pulls.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "log.h"
#include "op-queue.h"
#include "string-util.h"

typedef struct Pull Pull;

struct ImagePullWaiter {
        Pull *pull; /* NULL while its result is being delivered */
        image_pulls_done_t done;
        void *userdata;
        bool cancelled;
        ImagePullWaiter *prev, *next;
};

struct Pull {
        OpQueueItem item; /* first: the queue's hooks cast back */
        ImagePulls *owner;
        char *ref;
        char *auths; /* NULL: none */
        void *handle;
        usec_t started_at;
        ImagePullWaiter *waiters;
        Pull *prev, *next; /* in owner->pulls until it completes */
};

struct ImagePulls {
        Event *event;
        ImagePullBackend backend;
        OpQueue *queue;
        Pull *pulls;
};

static void pull_free_item(OpQueueItem *item) {
        Pull *p = (Pull *)item;

        while (p->waiters) {
                ImagePullWaiter *w = p->waiters;
                LIST_REMOVE(p->waiters, w);
                free(w);
        }
        if (p->owner)
                LIST_REMOVE(p->owner->pulls, p);
        free(p->ref);
        free(p->auths);
        free(p);
}

static void on_backend_done(void *pull_userdata, int r, const char *digest, const char *error) {
        Pull *p = pull_userdata;
        usec_t duration = now_usec(CLOCK_MONOTONIC) - p->started_at;
        _cleanup_free_ char *d = digest ? strdup(digest) : NULL;
        _cleanup_free_ char *e = error ? strdup(error) : NULL;
        ImagePullWaiter *waiters = TAKE_PTR(p->waiters);

        if ((digest && !d) || (error && !e)) {
                r = r < 0 ? r : -ENOMEM;
                e = mfree(e);
        }
        for (ImagePullWaiter *w = waiters; w; w = w->next)
                w->pull = NULL;
        LIST_REMOVE(p->owner->pulls, p);
        p->owner = NULL;
        op_queue_complete(&p->item); /* frees p */

        /* Free the pull, then call back: a callback may ask for the image
         * again (a new pull) or cancel a later waiter of this one. */
        while (waiters) {
                ImagePullWaiter *w = waiters;
                if (!w->cancelled)
                        w->done(r, d, r < 0 ? (e ? e : "out of memory") : NULL, duration,
                                w->userdata);
                LIST_REMOVE(waiters, w);
                free(w);
        }
}

static void pull_start(OpQueueItem *item) {
        Pull *p = (Pull *)item;
        Error err = {};

        p->started_at = now_usec(CLOCK_MONOTONIC);
        int r = p->owner->backend.start(p->owner->backend.userdata, p->ref, p->auths,
                                        on_backend_done, p, &p->handle, &err);
        if (r < 0) {
                p->handle = NULL;
                /* a backend that gave no reason */
                r = error_set(&err, r, "cannot start the pull: %s", strerror(-r));
                on_backend_done(p, r, NULL, err.message);
        }
}

static const OpQueueOps pull_queue_ops = {
        .start = pull_start,
        .free = pull_free_item,
};

int image_pulls_new(ImagePulls **ret, Event *e, unsigned max_parallel,
                    const ImagePullBackend *backend) {
        ImagePulls *p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->event = e;
        p->backend = *backend;
        int r = op_queue_new(e, max_parallel ? max_parallel : 1, &pull_queue_ops, "image-pulls",
                             &p->queue);
        if (r < 0) {
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

ImagePulls *image_pulls_free(ImagePulls *p) {
        if (!p)
                return NULL;
        for (OpQueueItem *item; (item = op_queue_detach_running(p->queue));) {
                Pull *pull = (Pull *)item;
                if (pull->handle && p->backend.cancel)
                        p->backend.cancel(pull->handle);
                pull_free_item(item);
        }
        p->queue = op_queue_free(p->queue); /* frees the queued pulls */
        free(p);
        return NULL;
}

int image_pulls_request(ImagePulls *p, const char *ref, const char *auths_json,
                        image_pulls_done_t done, void *userdata, ImagePullWaiter **ret) {
        Pull *pull = NULL;

        for (Pull *x = p->pulls; x; x = x->next)
                if (streq(x->ref, ref) && streq_ptr(x->auths, auths_json)) {
                        pull = x;
                        break;
                }
        ImagePullWaiter *w = calloc(1, sizeof *w);
        if (!w)
                return -ENOMEM;
        w->done = done;
        w->userdata = userdata;
        if (!pull) {
                pull = calloc(1, sizeof *pull);
                if (!pull || !(pull->ref = strdup(ref)) ||
                    (auths_json && !(pull->auths = strdup(auths_json)))) {
                        if (pull)
                                free(pull->ref);
                        free(pull);
                        free(w);
                        return -ENOMEM;
                }
                pull->owner = p;
                LIST_PREPEND(p->pulls, pull);
                op_queue_add(p->queue, &pull->item);
        }
        w->pull = pull;
        LIST_PREPEND(pull->waiters, w);
        if (ret)
                *ret = w;
        return 0;
}

void image_pull_waiter_cancel(ImagePullWaiter *w) {
        if (!w)
                return;
        Pull *pull = w->pull;
        if (!pull) {
                w->cancelled = true; /* its pull is delivering: freed there */
                return;
        }
        LIST_REMOVE(pull->waiters, w);
        free(w);
        if (pull->waiters)
                return; /* shared: it goes on for the others */
        if (!pull->item.running) {
                op_queue_cancel(&pull->item); /* frees it */
                return;
        }
        /* Nobody waits any more (the pods that wanted it are terminating):
         * the helper is killed so the pod's worker is not held for as long
         * as a stalled transfer lasts. Its partial blobs are removed when
         * the next pull ends, at the next start or image GC pass (the
         * store's sweep takes each one's lock, so none is removed under a
         * pull). */
        ImagePulls *owner = pull->owner;
        if (pull->handle && owner->backend.cancel)
                owner->backend.cancel(pull->handle);
        pull->handle = NULL;
        op_queue_complete(&pull->item); /* frees it, starts the next queued pull */
}

unsigned image_pulls_running(const ImagePulls *p) {
        return op_queue_n_running(p->queue);
}

unsigned image_pulls_queued(const ImagePulls *p) {
        return op_queue_n_waiting(p->queue);
}
