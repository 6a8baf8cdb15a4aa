/* Content digests (Nettle). The agent's SHA-256 (manifest UIDs, container
 * IDs, image blobs read from the store) uses Nettle rather than OpenSSL's
 * libcrypto: about 0.2 MiB of RSS against libcrypto's 1.4 MiB, and the same
 * library GnuTLS uses once the API has loaded libmicrohttpd
 * (docs/internals/design-decisions.md). */
#pragma once

#include <stddef.h>

/* Writes the lowercase hex SHA-256 of data into ret (65 bytes). */
int sha256_hex(const void *data, size_t size, char ret[static 65]);
/* The same as an OCI digest, "sha256:<hex>", into ret (72 bytes). */
int sha256_oci_digest(const void *data, size_t size, char ret[static 72]);
