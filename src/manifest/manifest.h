/* Manifest documents -> typed objects (Pod, ConfigMap, Secret).
 * Pure functions on buffers: nothing here touches the filesystem, so the
 * same code serves the directory source, the URL source, `nanolet validate`
 * and the fuzzer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "pod.h"
#include "time-util.h"
#include "yaml-node.h"

typedef enum ManifestKind {
        MANIFEST_KIND_POD,
        MANIFEST_KIND_CONFIGMAP,
        MANIFEST_KIND_SECRET,
        _MANIFEST_KIND_MAX,
        _MANIFEST_KIND_INVALID = -22,
} ManifestKind;

const char *manifest_kind_to_string(ManifestKind k);

/* One object from a manifest. Reference counted: sources, the merged config
 * and pod workers share it; it is immutable once parsed. */
typedef struct ManifestObject {
        unsigned refs;
        ManifestKind kind;
        char *name;      /* Pods: metadata.name + "-" + node name (static pod naming) */
        char *namespace; /* defaulted to "default" */
        /* Pods: metadata.uid if given, else the identity hash (docs/manifests.md).
         * ConfigMaps/Secrets: hash of their canonical form (change detection). */
        char *uid;
        char *canonical_json; /* sorted-key compact JSON of the document as parsed */
        char *file;           /* file or URL it was read from (for messages) */
        unsigned line;        /* line of the document start */
        union {
                Pod *pod;
                ConfigMap *configmap;
                Secret *secret;
        };
} ManifestObject;

ManifestObject *manifest_object_ref(ManifestObject *o);
ManifestObject *manifest_object_unref(ManifestObject *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManifestObject *, manifest_object_unref)
#define _cleanup_manifest_object_unref_ _cleanup_(manifest_object_unrefp)
void manifest_objects_free(ManifestObject **objs, size_t n);

typedef struct ManifestParseOptions {
        const char *filename;  /* for diagnostics; NULL = "<input>" */
        const char *node_name; /* lowercase hostname or --hostname-override; required */
        /* Identity source, part of the UID: "file:<path>" or "url:<url>". */
        const char *source_id;
        /* kubernetes.io/config.source annotation: "file" or "http". */
        const char *config_source;
        /* kubernetes.io/config.seen annotation (CLOCK_REALTIME); 0 = omit. */
        usec_t seen;
        YamlLimits limits; /* zeroed fields take the defaults */
} ManifestParseOptions;

/* Parses every document in buf: Pod, ConfigMap, Secret, and PodList/List
 * whose items are those. Applies Kubernetes defaults, validates, and
 * computes identity and the config.* annotations for pods.
 * All problems go to diag (errors and warnings, e.g. unknown fields). If any
 * error was found, returns -EINVAL and no objects: a file is used whole or
 * not at all, so a half-written file never replaces a good one. An input
 * with no document at all yields 0 objects and returns 0 (callers decide
 * whether that is an error). Exceeded YAML limits are errors like any other
 * (-EINVAL, message in diag); -ENOMEM is returned as such. Two objects of
 * the same kind/namespace/name in one buffer are an error naming both
 * lines. Diagnostics inside List items carry paths like "items[2].spec...". */
int manifest_parse_buffer(const char *buf, size_t size, const ManifestParseOptions *opts,
                          ManifestObject ***ret_objs, size_t *ret_n, Diagnostics *diag);
/* manifest_parse_buffer() that also returns, on success, how many YAML
 * documents buf held (a List is one), so that a caller can tell a List with
 * no items (0 objects, 1 document) from a file with no document at all
 * without parsing it a second time. */
int manifest_parse_buffer_full(const char *buf, size_t size, const ManifestParseOptions *opts,
                               ManifestObject ***ret_objs, size_t *ret_n, size_t *ret_n_documents,
                               Diagnostics *diag);

/* The UID of a pod (docs/manifests.md, "Identity"): first 32 hex digits of
 * SHA-256(canonical_json "\n" "host:" node_name "\n" "source:" source_id). */
int manifest_compute_uid(const char *canonical_json, const char *node_name, const char *source_id,
                         char ret[static 33]);

/* Canonical form of a document: compact JSON with keys sorted bytewise and
 * non-ASCII escaped (\uXXXX); scalars typed as Kubernetes' YAML decoder
 * types them (go-yaml v2, see yaml-node.h); integral floats within 2^53 as
 * integers, other floats with 17 significant digits, .inf/.nan as strings;
 * aliases expanded. Reformatting a document (key order, quoting, comments,
 * flow vs block, YAML vs JSON) does not change it. Details in canonical.c. */
int manifest_canonical_json(const YamlNode *doc, char **ret);
