/* Content digests (OpenSSL libcrypto). */
#pragma once

#include <stddef.h>

/* Writes the lowercase hex SHA-256 of data into ret (65 bytes). */
int sha256_hex(const void *data, size_t size, char ret[static 65]);
