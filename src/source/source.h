/* Manifest sources and their merge into one desired state.
 *
 * Sources (directory, URL) read manifests and hand the objects of each
 * origin (one file, or the URL) to a PodConfig. The PodConfig owns the
 * desired state: it resolves duplicates, keeps the last good objects of an
 * origin that turned invalid, and turns every change into one stream of
 * ADD / UPDATE / REMOVE / ERROR events keyed by pod UID. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "event.h"
#include "event-curl.h"
#include "metrics.h"
#include "manifest.h"
#include "url-verifier.h"

typedef enum SourceEventType {
        SOURCE_EVENT_ADD,    /* a new pod is wanted */
        SOURCE_EVENT_UPDATE, /* pod namespace/name now has a new UID: old_uid is replaced by uid */
        SOURCE_EVENT_REMOVE, /* pod uid is no longer wanted */
        SOURCE_EVENT_ERROR, /* an origin has problems (errors->n_errors > 0) or no longer has (== 0)
                             */
        /* A local ConfigMap or Secret was added, changed or removed: pods
         * that project it into a volume rewrite that volume (kubelet does
         * the same for API objects). uid: the object's content hash;
         * old_uid: the previous version's (NULL when added); object: the
         * wanted object, or the one that was when it is gone (then
         * pod_config_find() no longer finds it). Emitted after the pod
         * events of the same commit. */
        SOURCE_EVENT_LOCAL,
        _SOURCE_EVENT_MAX,
        _SOURCE_EVENT_INVALID = -22,
} SourceEventType;

const char *source_event_type_to_string(SourceEventType t); /* "ADD", "UPDATE", ... */

typedef struct SourceEvent {
        SourceEventType type;
        const char *source;  /* kubelet's source name: "file" or "http" */
        const char *origin;  /* the file path or URL */
        const char *uid;     /* ADD/UPDATE: new pod's UID; REMOVE: removed pod's UID */
        const char *old_uid; /* UPDATE only */
        /* ADD/UPDATE: the wanted pod; REMOVE: the pod that was wanted. The
         * handler takes a reference if it keeps it. NULL for ERROR. */
        ManifestObject *object;
        const Diagnostics *errors; /* ERROR only */
        /* ERROR only: the last n_conflicts items of errors are definitions
         * that lost to another of the same name or UID (the others are the
         * origin's own problems). */
        size_t n_conflicts;
} SourceEvent;

typedef void (*source_event_handler_t)(const SourceEvent *ev, void *userdata);

/* ---- merged desired state ---- */

typedef struct PodConfig PodConfig;

int pod_config_new(PodConfig **ret, source_event_handler_t handler, void *userdata);
PodConfig *pod_config_free(PodConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(PodConfig *, pod_config_free)

/* Replaces what origin contributes with objs (takes new references; the
 * caller keeps its own). Clears the origin's error. Events are emitted by
 * pod_config_commit(), so a batch of changes (a rename: one origin removed,
 * another added) becomes one change per pod. */
int pod_config_set_origin(PodConfig *c, const char *source, const char *origin,
                          ManifestObject **objs, size_t n);
/* Forgets origin (file deleted). */
int pod_config_remove_origin(PodConfig *c, const char *source, const char *origin);
/* Marks origin as failing; its last good objects stay wanted. */
int pod_config_set_origin_error(PodConfig *c, const char *source, const char *origin,
                                const Diagnostics *errors);
/* Computes the new desired set and emits the events for the difference. */
int pod_config_commit(PodConfig *c);

/* Lookups for pods that reference local ConfigMaps and Secrets. */
ManifestObject *pod_config_find(PodConfig *c, ManifestKind kind, const char *namespace,
                                const char *name);
/* Iterates the wanted pods in a stable order; *iter starts at 0. */
ManifestObject *pod_config_next_pod(PodConfig *c, size_t *iter);
/* Iterates origins that currently have errors. */
bool pod_config_next_error(PodConfig *c, size_t *iter, const char **ret_origin,
                           const Diagnostics **ret_errors);

/* manifest_parse_buffer() for the sources: a buffer with no document at all
 * (empty, or only comments: what a file looks like while it is being
 * written) is an error (-ENODATA, with a diagnostic), while a List with no
 * items is a valid empty set (0 objects). */
int source_parse_manifest(const char *buf, size_t size, const ManifestParseOptions *opts,
                          ManifestObject ***ret_objs, size_t *ret_n, Diagnostics *diag);

/* ---- directory source (docs/manifests.md) ---- */

typedef struct DirSource DirSource;

typedef struct DirSourceOptions {
        const char *path; /* directory or single file */
        const char *node_name;
        usec_t check_frequency; /* full rescan period; default 20 s */
        usec_t debounce;        /* removal debounce; default 500 ms, max 1 s */
        size_t max_file_size;   /* default 10 MiB */
        bool allow_insecure;    /* skip the owner/mode trust check */
} DirSourceOptions;

int dir_source_new(DirSource **ret, Event *e, PodConfig *config, const DirSourceOptions *opts);
/* Sets up inotify and runs the first scan (synchronously, before returning). */
int dir_source_start(DirSource *s);
/* Full rescan now (also run by the timer). */
int dir_source_rescan(DirSource *s);
DirSource *dir_source_free(DirSource *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(DirSource *, dir_source_free)

/* Name filter (docs/manifests.md): 1 = read, 0 = ignored (dotfile, backup, editor
 * temp, package-manager leftovers), -1 = silently skipped (other extension). */
int manifest_filename_classify(const char *name);

/* Trust check (docs/manifests.md): owned by root, not group/world writable. Returns 0
 * or -EPERM with a sentence in *ret_reason (allocated). */
int manifest_path_check_trust(int fd, const char *path, char **ret_reason);

/* ---- URL source (docs/manifests.md) ---- */

typedef struct UrlSource UrlSource;

typedef struct UrlSourceOptions {
        const char *url;
        char *const *headers; /* "Key: Value" strings; may be NULL */
        const char *node_name;
        usec_t check_frequency; /* default 20 s */
        usec_t timeout;         /* default 10 s */
        size_t max_body;        /* default 10 MiB */
        usec_t max_backoff;     /* back-off cap (poll-schedule.h); default 5 min */
        /* Called once, when the first fetch has finished (whatever its
         * outcome): from then on the URL's pods are known. */
        void (*synced)(void *userdata);
        void *synced_userdata;
        /* nanolet_manifest_url_fetches_total{result="200|304|error"}
         * (not owned; NULL: not counted). */
        Metrics *metrics;
        /* Signed manifests (docs/fleet.md, url-verifier.h): each body is
         * applied only once its signature verified. NULL: not checked. */
        const UrlVerifierOptions *verify;
} UrlSourceOptions;

/* Loads libcurl (event-curl.h): a missing libcurl.so.4 fails here, with the
 * reason in error. */
int url_source_new(UrlSource **ret, Event *e, PodConfig *config, const UrlSourceOptions *opts,
                   Error *error);

/* Redirects are followed by the URL source itself, not by libcurl, which
 * would re-send every custom header to any host. url_redirect_check(): 0 if
 * a redirect from `from` to `to` may be followed: only to http or https, and
 * never from https to http (-EPERM); -EINVAL for a URL that does not parse.
 * url_same_origin(): 1 if a and b have the same scheme, host (compared
 * case-insensitively) and port (default ports filled in), 0 if not, -EINVAL
 * or -ENOMEM. --manifest-url-header values go only to the configured URL's
 * origin. */
int url_redirect_check(const CurlApi *c, const char *from, const char *to);
int url_same_origin(const CurlApi *c, const char *a, const char *b);
/* Schedules the first fetch (within one period: poll-schedule.h) and polls
 * afterwards. */
int url_source_start(UrlSource *s);
/* Fetches at once (SIGHUP) unless a GET is under way; then polls as before. */
int url_source_refresh(UrlSource *s);
/* Error count, for metrics and status. */
unsigned url_source_get_error_count(UrlSource *s);
/* The delay the next poll was scheduled with, when it was scheduled. */
usec_t url_source_get_next_wait(UrlSource *s);
/* What a fetched body becomes (the pure part of a poll, no I/O): the
 * manifests of opts->url as source "http" on opts->node_name, limited to
 * opts->max_body bytes (0: the default); only url, node_name and max_body of
 * opts are read. seen stamps the objects. On failure diag holds at least one
 * error, and the caller keeps its current pods. */
int url_source_parse_body(const UrlSourceOptions *opts, const char *body, size_t size, usec_t seen,
                          ManifestObject ***ret_objs, size_t *ret_n, Diagnostics *diag);
UrlSource *url_source_free(UrlSource *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(UrlSource *, url_source_free)
