/* Registry authentication inputs (SPEC §7): RFC 7235 WWW-Authenticate
 * challenges as registries send them (the Bearer realm/service/scope dance,
 * Basic), docker config.json credentials, and the data of Kubernetes
 * Secrets of type kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg.
 * Pure functions on buffers, no I/O (fuzzed by fuzz-registry-auth). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

typedef struct RegistryChallenge {
        char *scheme; /* lowercased: "bearer", "basic", ... */
        char *realm;  /* NULL when absent */
        char *service;
        char *scope;
        char *error; /* Bearer error="insufficient_scope" etc. */
} RegistryChallenge;

/* Parses a WWW-Authenticate header value (several challenges, quoted
 * strings with escapes, parameters in any order). -EBADMSG on syntax the
 * RFC does not allow. */
int registry_challenges_parse(const char *value, size_t size, RegistryChallenge **ret,
                              size_t *ret_n, Error *err);
void registry_challenges_free(RegistryChallenge *c, size_t n);
/* The first challenge of the scheme ("bearer", "basic"), or NULL. */
const RegistryChallenge *registry_challenge_find(const RegistryChallenge *c, size_t n,
                                                 const char *scheme);

/* Looks up credentials for a registry host ("host[:port]") in a docker
 * config.json document: "auths" keys may carry a scheme and a path
 * ("https://index.docker.io/v1/"), entries "auth" (base64 of user:password)
 * or "username"/"password". docker.io, index.docker.io and
 * registry-1.docker.io are one registry. Returns 1 and the pair when found,
 * 0 when the document has nothing for host, -EBADMSG for a malformed
 * document or entry. */
int registry_auth_lookup(const char *json, size_t size, const char *host, char **ret_user,
                         char **ret_password, Error *err);

/* Turns a Secret's decoded data value into a config.json document
 * ({"auths": ...}): type "kubernetes.io/dockerconfigjson" takes the
 * .dockerconfigjson value as is (it must have an "auths" object),
 * "kubernetes.io/dockercfg" wraps the legacy .dockercfg map. */
int registry_secret_to_config(const char *type, const char *data, size_t size, char **ret_json,
                              Error *err);

/* Strict base64 (RFC 4648, padding optional). Returns a NUL-terminated buffer. */
int registry_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len);
/* The host part of a credential key: "https://host:5000/v2/" -> "host:5000". */
char *registry_auth_key_host(const char *key);
