#include "hash.h"

#include <errno.h>
#include <openssl/evp.h>

int sha256_hex(const void *data, size_t size, char ret[static 65]) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        static const char hex[] = "0123456789abcdef";

        if (EVP_Digest(data, size, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32)
                return -EIO;
        for (unsigned i = 0; i < 32; i++) {
                ret[2 * i] = hex[md[i] >> 4];
                ret[2 * i + 1] = hex[md[i] & 15];
        }
        ret[64] = 0;
        return 0;
}
