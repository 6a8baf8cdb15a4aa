/* The agent's side of an image pull: the pull itself (libcurl, the
 * registry client, unpacking with libarchive) runs in a helper process, and
 * this file is all the agent links of it. It is a file of its own so that
 * the agent executable (nanolet-agent, linked with --as-needed) pulls in
 * neither image-pull.c nor, through it, libcurl's and libarchive's
 * dependency chains (docs/BENCHMARKS.md, memory). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child.h"
#include "helper.h"
#include "image-internal.h"
#include "image-pull.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

/* ---- the agent's pulls: a helper process ---- */

#define HELPER_OUTPUT_MAX (64U * 1024U)
#define HELPER_JOB_MAX (4U * 1024U * 1024U)

struct ImagePull {
        Child *child;
        char *root_dir;
        image_pull_done_t done;
        void *userdata;
};

static ImagePull *pull_free(ImagePull *pull) {
        if (!pull)
                return NULL;
        child_free(pull->child); /* a running one is killed; the loop reaps it */
        free(pull->root_dir);
        free(pull);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(ImagePull *, pull_free)

/* A helper that died (killed, crashed) removed none of its partial
 * downloads, and one cancelled earlier (killed while the agent went on)
 * neither; their locks went with them. Swept after every pull, so a
 * cancelled pull's files go when the next one ends. */
static void pull_sweep(ImagePull *pull) {
        uint64_t bytes = 0;
        int r = image_store_sweep_partials(pull->root_dir, &bytes);
        if (r > 0)
                log_info("Removed %d partial registry download(s) of image pulls that ended "
                         "(%" PRIu64 " bytes).",
                         r, bytes);
        else if (r < 0)
                log_warning_errno(r, "Cannot remove the partial downloads of ended image pulls, "
                                     "ignoring (the next start or image GC pass does): %m");
}

static const HelperArg pull_args[] = {
        HELPER_ARG_STRING(ImagePullArgs, store, "store", true),
};

const HelperMode image_pull_helper_mode = HELPER_MODE_INIT("image-pull", ImagePullArgs, pull_args);

static void pull_child_done(Child *c, void *userdata) {
        ImagePull *pull = userdata;
        _cleanup_json_ json_t *res = NULL;
        _cleanup_free_ char *digest = NULL;
        const char *d = NULL;
        size_t en = 0;
        const char *errout = child_stderr(c, &en);
        Error err = {};

        if (en > 0)
                log_debug("Image pull helper: %.*s", (int)MIN(en, (size_t)4096), errout);
        int r = helper_child_result(c, "image pull helper", &res, &err);
        if (r >= 0 && (helper_json_str(res, "digest", 256, &d) < 0 || !image_digest_is_valid(d)))
                r = error_set(&err, -EIO, "image pull helper reported no valid digest");
        if (r >= 0 && !(digest = strdup(d)))
                r = error_set(&err, -ENOMEM, "out of memory");
        pull->child = child_free(c);
        pull_sweep(pull);
        /* done() may cancel (free) the pull: nothing touches it afterwards. */
        pull->done(pull, r, r >= 0 ? digest : NULL, r < 0 ? err.message : NULL, pull->userdata);
}

static json_t *options_json(const char *ref, const ImagePullOptions *o) {
        json_t *j = json_pack("{s:s, s:s?, s:s?, s:s?, s:s?, s:[]}", "ref", ref, "registries_conf",
                              o->registries_conf, "certs_dir", o->certs_dir, "credential_file",
                              o->credential_file, "extra_auths_json", o->extra_auths_json,
                              "insecure_registries");
        json_t *a = json_object_get(j, "insecure_registries");
        STRV_FOREACH(h, o->insecure_registries)
                if (json_array_append_new(a, json_string(*h)) < 0)
                        return json_decref(j), NULL;
        return j;
}

int image_pull_start(Event *e, const char *root_dir, const char *ref, const ImagePullOptions *o,
                     image_pull_done_t done, void *userdata, ImagePull **ret, Error *err) {
        _cleanup_json_ json_t *job = options_json(ref, o);
        _cleanup_free_ char *input = job ? json_dumps(job, JSON_COMPACT) : NULL;
        _cleanup_(pull_freep) ImagePull *pull = calloc(1, sizeof(ImagePull));
        int r;

        if (!input || !pull)
                return error_set(err, -ENOMEM, "out of memory");
        if (strlen(input) > HELPER_JOB_MAX)
                return error_set(err, -E2BIG, "image pull job too large");
        ImagePullArgs args = { .store = root_dir };
        /* The job (it may hold credentials) goes through a memfd on stdin,
         * never argv: other users see a process's argv. */
        HelperSpawnOptions ho = { .mode = &image_pull_helper_mode,
                                  .args = &args,
                                  .input = input,
                                  .input_size = strlen(input),
                                  .result_max = HELPER_OUTPUT_MAX,
                                  .stderr_max = HELPER_OUTPUT_MAX };
        pull->done = done;
        pull->userdata = userdata;
        if (!(pull->root_dir = strdup(root_dir)))
                return error_set(err, -ENOMEM, "out of memory");
        r = helper_spawn(e, &ho, pull_child_done, pull, &pull->child);
        explicit_bzero(input, strlen(input));
        if (r < 0)
                return error_set(err, r, "cannot start the image pull helper: %s", strerror(-r));
        *ret = TAKE_PTR(pull);
        return 0;
}

void image_pull_cancel(ImagePull *pull) {
        pull_free(pull);
}
