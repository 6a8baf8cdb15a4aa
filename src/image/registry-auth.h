/* Registry authentication inputs (docs/images.md): RFC 7235 WWW-Authenticate
 * challenges as registries send them (the Bearer realm/service/scope dance,
 * Basic), docker config.json credentials, and the data of Kubernetes
 * Secrets of type kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg.
 * Pure functions on buffers, no I/O (fuzzed by fuzz-registry-auth). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* How long a Bearer token may be used, in microseconds from the moment its
 * request was sent (sent_realtime, CLOCK_REALTIME µs): as docker's and
 * containers/image's clients, an expires_in under 60 s (or absent, 0)
 * counts as 60 s, the distribution token spec's minimum, and the lifetime
 * starts at the response's issued_at (RFC 3339, may be NULL) when there is
 * one, else at the send. An issued_at after the send (the server's clock
 * ahead of ours) counts from the send, so that skew never lengthens a
 * token's life, and so does one that would be expired on arrival (the
 * server's clock behind ours), rather than a token fetched before every
 * request. One second is kept in hand for the request's way to the
 * registry. */
uint64_t registry_token_lifetime(long long expires_in, const char *issued_at,
                                 uint64_t sent_realtime);

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
