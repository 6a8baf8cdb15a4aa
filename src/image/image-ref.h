/* Image references as Kubernetes and docker read them:
 *   busybox               -> docker.io/library/busybox:latest
 *   localhost/x           -> localhost/x:latest
 *   host:5000/a/b:tag     -> host:5000/a/b:tag
 *   name@sha256:<hex>     -> docker.io/library/name@sha256:<hex>
 * Pure functions on strings; no I/O. */
#pragma once

#include <stdbool.h>

#include "error.h"

typedef struct ImageRef {
        char *domain; /* "docker.io", "localhost", "host:5000" */
        char *path;   /* "library/busybox" */
        char *tag;    /* "latest"; NULL when only a digest was given */
        char *digest; /* "sha256:<64 hex>" or NULL */
} ImageRef;

/* Parses and normalises s. Invalid references fail with -EINVAL and a
 * reason in err ("repository name must be lowercase", ...). */
int image_ref_parse(const char *s, ImageRef *ret, Error *err);
void image_ref_done(ImageRef *ref);
/* domain/path[:tag][@digest] */
char *image_ref_to_string(const ImageRef *ref);
/* domain/path */
char *image_ref_repository(const ImageRef *ref);
/* Parse + to_string in one step. */
int image_ref_normalize(const char *s, char **ret, Error *err);

/* True for "sha256:" followed by exactly 64 lowercase hex digits. */
bool image_digest_is_valid(const char *digest);
/* True for 64 lowercase hex digits. */
bool image_hex_is_valid(const char *hex);
