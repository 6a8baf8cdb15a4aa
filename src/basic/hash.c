#include "hash.h"

#include <nettle/sha2.h>
#include <string.h>

int sha256_hex(const void *data, size_t size, char ret[static 65]) {
        struct sha256_ctx ctx;
        uint8_t md[SHA256_DIGEST_SIZE];
        static const char hex[] = "0123456789abcdef";

        sha256_init(&ctx);
        sha256_update(&ctx, size, data);
        sha256_digest(&ctx, sizeof md, md);
        for (unsigned i = 0; i < SHA256_DIGEST_SIZE; i++) {
                ret[2 * i] = hex[md[i] >> 4];
                ret[2 * i + 1] = hex[md[i] & 15];
        }
        ret[64] = 0;
        return 0;
}

int sha256_oci_digest(const void *data, size_t size, char ret[static 72]) {
        memcpy(ret, "sha256:", 7);
        return sha256_hex(data, size, ret + 7);
}
