/* Image GC on the agent's loop (image-gc.h): a timer and a statfs(); the
 * helper does the rest, one at a time, and its report is logged and
 * counted here. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/wait.h>

#include "child.h"
#include "helper.h"
#include "image-gc.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

struct ImageGc {
        Event *event;
        char *root_dir;
        char *images_dir;
        ImageGcPolicy policy;
        char **pinned_images;
        usec_t period;
        EventSource *timer;
        Child *child;
        bool space;        /* the running helper was started to free space */
        usec_t last_start; /* CLOCK_MONOTONIC: the last helper (age pass) */
        bool again;        /* a check was asked for while the helper ran */
        bool reclaim_all;  /* ... or a reclaim of every unused image */
        unsigned removed;
        MetricFamily *collected; /* kubelet_image_garbage_collected_total{reason} */
        MetricFamily *freed;     /* nanolet_image_gc_freed_bytes_total */
};

static const HelperArg image_gc_args[] = {
        HELPER_ARG_STRING(ImageGcArgs, root_dir, "root-dir", true),
        HELPER_ARG_U64(ImageGcArgs, high_percent, "high-percent", true),
        HELPER_ARG_U64(ImageGcArgs, low_percent, "low-percent", true),
        HELPER_ARG_U64(ImageGcArgs, min_age, "min-age-usec", true),
        HELPER_ARG_U64(ImageGcArgs, max_age, "max-age-usec", true),
        HELPER_ARG_STRV(ImageGcArgs, pinned, "pinned", false),
};

const HelperMode image_gc_helper_mode = HELPER_MODE_INIT("image-gc", ImageGcArgs, image_gc_args);

#define NAME_MAX_LEN 511

static void report_removed(ImageGc *g, const json_t *removed) {
        size_t i;
        json_t *v;

        json_array_foreach(removed, i, v) {
                const char *reason, *digest, *name;
                uint64_t size;
                if (helper_json_str(v, "reason", 16, &reason) < 0 ||
                    helper_json_str(v, "digest", 128, &digest) < 0 ||
                    helper_json_str(v, "name", NAME_MAX_LEN, &name) < 0 ||
                    helper_json_u64(v, "size", &size) < 0)
                        continue;
                if (streq(reason, "age")) {
                        g->removed++;
                        metric_inc(g->collected, METRIC_LABELS("age"));
                        log_info("Image GC: removed image \"%s\" (%s, %" PRIu64 " bytes), unused "
                                 "for longer than imageMaximumGCAge (%" PRIu64 "s).",
                                 name, digest, size, (uint64_t)(g->policy.max_age / USEC_PER_SEC));
                } else if (streq(reason, "space")) {
                        g->removed++;
                        metric_inc(g->collected, METRIC_LABELS("space"));
                        log_info("Image GC: removed image \"%s\" (%s, %" PRIu64 " bytes), least "
                                 "recently used.",
                                 name, digest, size);
                }
        }
}

static void report_space(ImageGc *g, const json_t *res) {
        uint64_t cap, before, after;

        if (helper_json_u64(res, "capacity", &cap) < 0 ||
            helper_json_u64(res, "before", &before) < 0 ||
            helper_json_u64(res, "after", &after) < 0 || after == before || !g->space)
                return;
        if (after > before)
                metric_add(g->freed, NULL, (double)(after - before));
        uint64_t target = cap / 100 * (100 - g->policy.low_percent);
        log_full(after >= target ? LOG_INFO : LOG_WARNING,
                 "Image GC: %" PRIu64 " bytes available of %" PRIu64 " (were %" PRIu64 ")%s.",
                 after, cap, before,
                 after >= target ? ""
                                 : "; still above the low threshold: the rest is in use, pinned or "
                                   "too recent");
}

static void on_helper_done(Child *c, void *userdata) {
        ImageGc *g = userdata;
        _cleanup_json_ json_t *res = NULL;
        const json_t *partials;
        uint64_t count, bytes;
        Error err = {};

        /* A failed run still reports what it did before the failure. */
        if (helper_child_result(c, "the helper", &res, &err) < 0)
                log_warning("Image GC failed: %s", err.message);
        partials = json_object_get(res, "partials");
        if (helper_json_u64(partials, "count", &count) >= 0 &&
            helper_json_u64(partials, "bytes", &bytes) >= 0)
                log_info("Image GC: removed %" PRIu64 " partial registry download(s) no pull "
                         "owned any more (%" PRIu64 " bytes).",
                         count, bytes);
        report_removed(g, json_object_get(res, "removed"));
        report_space(g, res);
        g->child = child_free(g->child);
        if (g->reclaim_all) {
                g->reclaim_all = g->again = false;
                image_gc_reclaim_all(g);
        } else if (g->again) {
                g->again = false;
                image_gc_check(g);
        }
}

/* all: every unused image (eviction's reclaim); space: started because the
 * filesystem is above the high threshold. Any run also does the age pass. */
static void start_helper(ImageGc *g, bool all, bool space) {
        ImageGcArgs args = {
                .root_dir = g->root_dir,
                /* 0 and 0: any usage is above, and everything must go. */
                .high_percent = all ? 0 : g->policy.high_percent,
                .low_percent = all ? 0 : g->policy.low_percent,
                .min_age = g->policy.min_age,
                .max_age = g->policy.max_age,
                .pinned = g->pinned_images,
        };
        HelperSpawnOptions o = {
                .mode = &image_gc_helper_mode,
                .args = &args,
                .result_max = 1024 * 1024,
                .stderr_max = 4096,
                .timeout = 30 * 60 * USEC_PER_SEC,
        };
        int r = helper_spawn(g->event, &o, on_helper_done, g, &g->child);
        if (r < 0)
                log_warning_errno(r, "Failed to start the image GC helper: %m");
        g->space = all || space;
        g->last_start = now_usec(CLOCK_MONOTONIC);
}

void image_gc_check(ImageGc *g) {
        struct statfs sf;

        if (!g || g->policy.high_percent >= 100)
                return;
        if (g->child) {
                g->again = true;
                return;
        }
        if (statfs(g->images_dir, &sf) < 0) {
                log_debug_errno(errno, "Image GC: cannot statfs \"%s\": %m", g->images_dir);
                return;
        }
        uint64_t cap = (uint64_t)sf.f_blocks * (uint64_t)sf.f_frsize;
        uint64_t avail = (uint64_t)sf.f_bavail * (uint64_t)sf.f_frsize;
        uint64_t to_free = image_gc_bytes_to_free(&g->policy, cap, avail);
        if (to_free == 0)
                return;
        log_info("Image GC: the image filesystem is above %u%% (%" PRIu64 " of %" PRIu64
                 " bytes available); freeing %" PRIu64 " bytes down to %u%%.",
                 g->policy.high_percent, avail, cap, to_free, g->policy.low_percent);
        start_helper(g, false, true);
}

void image_gc_reclaim_all(ImageGc *g) {
        if (!g)
                return;
        if (g->child) {
                g->reclaim_all = true;
                return;
        }
        log_info("Image GC: removing every unused image (disk pressure).");
        start_helper(g, true, true);
}

/* imageMaximumGCAge: listing the images walks the disk, so the age pass
 * runs in the helper, at most every IMAGE_GC_AGE_PERIOD (or max_age when
 * shorter), and with every run started for space. */
static void age_check(ImageGc *g) {
        usec_t every = MIN(g->policy.max_age, (usec_t)IMAGE_GC_AGE_PERIOD);
        if (g->policy.max_age == 0 || g->child)
                return;
        if (g->last_start != 0 && now_usec(CLOCK_MONOTONIC) < g->last_start + every)
                return;
        log_debug("Image GC: looking for images unused for longer than %" PRIu64 "s.",
                  (uint64_t)(g->policy.max_age / USEC_PER_SEC));
        start_helper(g, false, false);
}

static int on_timer(EventSource *s, usec_t now, void *userdata) {
        ImageGc *g = userdata;
        image_gc_check(g);
        age_check(g);
        return event_source_set_time_relative(s, g->period);
}

int image_gc_new(ImageGc **ret, Event *e, const ImageGcOptions *o) {
        _cleanup_(image_gc_freep) ImageGc *g = calloc(1, sizeof *g);
        int r;

        if (!g)
                return -ENOMEM;
        g->event = e;
        g->policy = o->policy;
        g->period = o->period ?: IMAGE_GC_DEFAULT_PERIOD;
        g->root_dir = strdup(o->root_dir);
        g->images_dir = strprintf("%s/images", o->root_dir);
        if (!g->root_dir || !g->images_dir)
                return -ENOMEM;
        if (o->pinned_images && !(g->pinned_images = strv_copy(o->pinned_images)))
                return -ENOMEM;
        if ((r = metrics_register(o->metrics, &g->collected, METRIC_COUNTER,
                                  "kubelet_image_garbage_collected_total",
                                  "Images removed by image GC, by reason (space: the image "
                                  "filesystem was above imageGCHighThresholdPercent; age: "
                                  "unused for longer than imageMaximumGCAge).",
                                  METRIC_LABELS("reason"), NULL, 0)) < 0 ||
            (r = metrics_register(
                     o->metrics, &g->freed, METRIC_COUNTER, "nanolet_image_gc_freed_bytes_total",
                     "Bytes the image filesystem gained through image GC.", NULL, NULL, 0)) < 0)
                return r;
        if (g->policy.high_percent < 100 || g->policy.max_age > 0) {
                r = event_add_time_relative(e, &g->timer, g->period, USEC_PER_SEC, on_timer, g);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(g);
        return 0;
}

ImageGc *image_gc_free(ImageGc *g) {
        if (!g)
                return NULL;
        event_source_free(g->timer);
        child_free(g->child);
        strv_free(g->pinned_images);
        free(g->root_dir);
        free(g->images_dir);
        free(g);
        return NULL;
}

unsigned image_gc_removed_count(const ImageGc *g) {
        return g ? g->removed : 0;
}
