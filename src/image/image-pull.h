/* Registry pulls (docs/images.md): the OCI distribution API v2 client. A pull
 * resolves a reference through registries.conf (blocked registries,
 * location rewrites, mirrors tried in order before the registry), fetches
 * the manifest (OCI or Docker schema 2; an image index / manifest list is
 * resolved to linux/<this arch>[/variant]), downloads the config and the
 * layers it does not already have (at most 3 at a time, each streamed to
 * images/.tmp-partial-HEX, flocked by its pull, and hashed while written;
 * continued with Range when a connection ends early and brought bytes, up
 * to 3 times a blob; cut and refused when longer than its descriptor) and
 * commits the verified image through image_store_load_staged(), the code
 * `image load` uses. A pull that fails removes its partial files; those
 * of a pull that was killed go with the next sweep of files no pull holds
 * (image_store_sweep_partials(): the agent runs it whenever a pull helper
 * ends, image_store_open() at every open, so at the agent's start and in
 * each image GC pass).
 *
 * Auth: anonymous, Basic, and Bearer tokens (the WWW-Authenticate realm/
 * service/scope dance; a token is reused until it expires and fetched again
 * on a 401). Credentials come from docker config.json documents
 * (registry-auth.h). TLS: the system CAs plus CERTS_DIR/HOST[:PORT]/
 * *.crt, client certificates *.cert + *.key there (containers-certs.d(5));
 * plain HTTP only for registries marked insecure. Redirects are followed
 * to https only (or http for an insecure registry). Tokens and passwords
 * are never logged.
 *
 * Blocking: image_pull_run() does network and file I/O until the pull ends,
 * and starts threads (the layer unpackers, joined before it returns); the
 * CLI calls it directly, the agent runs it in a helper process through
 * image_pull_start(). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "event.h"
#include "helper.h"
#include "image.h"

typedef enum ImagePullEvent {
        IMAGE_PULL_RESOLVED,    /* manifest found: digest, n = number of blobs */
        IMAGE_PULL_BLOB_EXISTS, /* blob already in the store */
        IMAGE_PULL_BLOB_START,  /* download starts (done = bytes resumed) */
        IMAGE_PULL_BLOB_PROGRESS,
        IMAGE_PULL_BLOB_DONE, /* verified */
        IMAGE_PULL_COMMITTING,
} ImagePullEvent;

typedef struct ImagePullProgress {
        ImagePullEvent event;
        const char *digest;   /* the blob's (manifest's for RESOLVED) */
        const char *what;     /* "config", "layer" */
        const char *endpoint; /* host the image comes from (RESOLVED) */
        unsigned index;       /* blob number, 0 = config */
        unsigned n;
        uint64_t done, total;
} ImagePullProgress;

typedef struct ImagePullOptions {
        const char *registries_conf;  /* NULL or a missing file: no configuration */
        const char *certs_dir;        /* NULL or missing: system CAs only */
        char **insecure_registries;   /* host[:port], as --insecure-registry */
        const char *credential_file;  /* docker config.json; NULL or missing: none */
        const char *extra_auths_json; /* a config.json document (imagePullSecrets), tried first */
        unsigned max_parallel;        /* concurrent blob downloads, 0 = 3 */
        void (*progress)(const ImagePullProgress *p, void *userdata);
        void *userdata;
} ImagePullOptions;

/* Pulls ref into the store. Returns 0 when pulled, 1 when the image was
 * already present (then only tagged), negative errno with a message naming
 * what failed (401 with the registry's text, manifest unknown, digest
 * mismatch, the TLS certificate problem). ret_digest (optional): the
 * manifest digest stored. */
int image_pull_run(ImageStore *s, const char *ref, const ImagePullOptions *o, char **ret_digest,
                   Error *err);

/* The agent's asynchronous pull: image_pull_run() in a helper process
 * (the image-pull helper mode, helper.h: the job as JSON on stdin), watched
 * on the loop. done() runs once with r
 * as image_pull_run() returns it, the manifest digest on success, and the
 * error message on failure; not after image_pull_cancel(). */
typedef struct ImagePull ImagePull;
typedef void (*image_pull_done_t)(ImagePull *pull, int r, const char *digest, const char *error,
                                  void *userdata);
int image_pull_start(Event *e, const char *root_dir, const char *ref, const ImagePullOptions *o,
                     image_pull_done_t done, void *userdata, ImagePull **ret, Error *err);
/* Kills the helper (its partial downloads go with the sweep after the next
 * pull, or at the next start or image GC pass) and frees the pull. */
void image_pull_cancel(ImagePull *pull);

/* The image-pull helper mode, for main()'s table (helper.h). */
extern const HelperMain image_pull_helper;
