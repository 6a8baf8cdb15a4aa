/* The agent's side of the layer flush (image.h, ImageFlusher): a timer and
 * one directory read on the loop; the syncfs() and the records' removal in
 * a helper process (image_flush_helper_mode), one at a time, so that the loop
 * never waits for the disk. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "child.h"
#include "helper.h"
#include "image-internal.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

struct ImageFlusher {
        Event *event;
        ImageStore *store;
        usec_t period;
        EventSource *timer;
        Child *child;
        bool again; /* asked for while the helper ran */
};

static void start_helper(ImageFlusher *f);

static const HelperArg flush_args[] = {
        HELPER_ARG_STRING(ImageFlushArgs, store, "store", true),
};

const HelperMode image_flush_helper_mode =
        HELPER_MODE_INIT("image-flush", ImageFlushArgs, flush_args);

static void on_helper_done(Child *c, void *userdata) {
        ImageFlusher *f = userdata;
        _cleanup_json_ json_t *res = NULL;
        Error err = {};
        size_t i;
        json_t *v;

        /* A failed flush keeps the records: the next one syncs again. */
        if (helper_child_result(c, "the helper", &res, &err) < 0)
                log_warning("Layer flush failed: %s", err.message);
        json_array_foreach(json_object_get(res, "flushed"), i, v) {
                const char *chain = json_string_value(v);
                if (chain && image_digest_is_valid(chain))
                        log_info("Image store: layer %s is on disk now; its flush record is "
                                 "removed.",
                                 chain);
        }
        f->child = child_free(f->child);
        if (f->again) {
                f->again = false;
                start_helper(f);
        }
}

static void start_helper(ImageFlusher *f) {
        if (f->child) {
                f->again = true;
                return;
        }
        if (!image_store_has_unflushed(f->store))
                return;
        ImageFlushArgs args = { .store = image_store_root(f->store) };
        HelperSpawnOptions o = {
                .mode = &image_flush_helper_mode,
                .args = &args,
                .result_max = 256 * 1024,
                .stderr_max = 4096,
                .timeout = 30 * 60 * USEC_PER_SEC,
        };
        int r = helper_spawn(f->event, &o, on_helper_done, f, &f->child);
        if (r < 0)
                log_warning_errno(r, "Failed to start the layer flush helper: %m");
}

static int on_timer(EventSource *s, usec_t now, void *userdata) {
        ImageFlusher *f = userdata;
        start_helper(f);
        return event_source_set_time_relative(s, f->period);
}

int image_flusher_new(Event *e, ImageStore *s, usec_t period, ImageFlusher **ret) {
        _cleanup_(image_flusher_freep) ImageFlusher *f = calloc(1, sizeof *f);
        if (!f)
                return -ENOMEM;
        f->event = e;
        f->store = s;
        f->period = period ?: IMAGE_FLUSH_PERIOD;
        /* The first look soon after the start: records left by the CLI or
         * by an agent that stopped before its flush. */
        int r = event_add_time_relative(e, &f->timer, IMAGE_FLUSH_DELAY, USEC_PER_SEC / 10,
                                        on_timer, f);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(f);
        return 0;
}

void image_flusher_request(ImageFlusher *f) {
        if (f && f->timer)
                (void)event_source_set_time_relative(f->timer, IMAGE_FLUSH_DELAY);
}

ImageFlusher *image_flusher_free(ImageFlusher *f) {
        if (!f)
                return NULL;
        event_source_free(f->timer);
        child_free(f->child);
        free(f);
        return NULL;
}
