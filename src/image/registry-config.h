/* containers-registries.conf(5), the subset a node agent needs
 * (docs/images.md):
 *   [[registry]] prefix, location, insecure, blocked, mirror-by-digest-only
 *   [[registry.mirror]] location, insecure, pull-from-mirror
 *   unqualified-search-registries (accepted; nanolet normalises short names
 *   to docker.io as Kubernetes does, so it is ignored with a note)
 *   v1 [registries.insecure] / [registries.block] registries = [...]
 * Other keys and tables are ignored (the file is shared with podman and
 * CRI-O). Pure functions on buffers (fuzzed by fuzz-registry-config). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef enum RegistryPullFrom {
        REGISTRY_PULL_FROM_ALL,
        REGISTRY_PULL_FROM_DIGEST_ONLY,
        REGISTRY_PULL_FROM_TAG_ONLY,
} RegistryPullFrom;

typedef struct RegistryMirror {
        char *location;
        bool insecure;
        RegistryPullFrom pull_from;
} RegistryMirror;

typedef struct RegistryEntry {
        char *prefix;   /* "example.com/ns", "*.example.com"; defaults to location */
        char *location; /* NULL: the prefix itself */
        bool insecure;
        bool blocked;
        bool mirror_by_digest_only;
        RegistryMirror *mirrors;
        size_t n_mirrors;
        unsigned line; /* for messages */
} RegistryEntry;

typedef struct RegistryConfig {
        RegistryEntry *entries;
        size_t n_entries;
        char **notes; /* things accepted but ignored, for a log line each */
} RegistryConfig;

/* filename is only used in messages ("registries.conf:12: ..."). */
int registry_config_parse(const char *data, size_t size, const char *filename, RegistryConfig *ret,
                          Error *err);
void registry_config_done(RegistryConfig *c);
/* Marks host[:port] insecure (--insecure-registry): an entry of its own,
 * or the existing one with that prefix. */
int registry_config_add_insecure(RegistryConfig *c, const char *host);

/* Where to fetch a repository ("domain/path", no tag) from, in order:
 * the mirrors that apply, then the (possibly rewritten) location. */
typedef struct RegistryEndpoint {
        char *host; /* host[:port] to contact */
        char *path; /* repository path on that host */
        bool insecure;
        bool mirror;
} RegistryEndpoint;

/* by_digest: the reference names a digest (mirror-by-digest-only and
 * pull-from-mirror). -EACCES with a message when the matching entry is
 * blocked. */
int registry_config_endpoints(const RegistryConfig *c, const char *repository, bool by_digest,
                              RegistryEndpoint **ret, size_t *ret_n, Error *err);
void registry_endpoints_free(RegistryEndpoint *e, size_t n);
/* The entry with the longest prefix matching repository, or NULL. */
const RegistryEntry *registry_config_match(const RegistryConfig *c, const char *repository);
