/* Standard base64 (RFC 4648 section 4), decoded strictly: what Kubernetes
 * accepts in Secret and ConfigMap data and what signature formats write. */
#pragma once

#include <stddef.h>
#include <stdint.h>

typedef enum Base64Flags {
        /* CR and LF anywhere are skipped first: YAML folds long values. */
        BASE64_LINE_BREAKS = 1 << 0,
} Base64Flags;

/* Padding is required and nothing outside the alphabet is allowed (no
 * spaces, no URL-safe characters, no '=' but at the end). Returns 0 with a
 * malloc()ed buffer, NUL-terminated for text, and its length; -EINVAL for
 * anything else; -ENOMEM. An empty input is 0 bytes. */
int base64_decode_strict(const char *in, size_t len, Base64Flags flags, uint8_t **ret,
                         size_t *ret_len);
