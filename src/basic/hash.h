/* Content digests (Nettle). The agent's SHA-256 (manifest UIDs, container
 * IDs, image blobs read from the store) uses Nettle rather than OpenSSL's
 * libcrypto: libmicrohttpd's GnuTLS maps Nettle anyway, so libcrypto's
 * 1.4 MiB would be the only reason for the agent to map it (docs/BENCHMARKS.md,
 * "Memory, round 2"). */
#pragma once

#include <stddef.h>

/* Writes the lowercase hex SHA-256 of data into ret (65 bytes). */
int sha256_hex(const void *data, size_t size, char ret[static 65]);
/* The same as an OCI digest, "sha256:<hex>", into ret (72 bytes). */
int sha256_oci_digest(const void *data, size_t size, char ret[static 72]);
