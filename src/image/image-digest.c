/* Streaming SHA-256 of blobs and layers (OpenSSL EVP), declared in
 * image-util.h. In a file of its own because only the CLI's image code
 * (load, unpack, pull) uses it: the agent links image-util.c, and this
 * file's libcrypto references would make it map libcrypto (about 1.4 MiB
 * RSS) for nothing; the agent hashes with hash.h. */
#include "image-util.h"

#include <errno.h>
#include <string.h>

int sha256_new(EVP_MD_CTX **ret) {
        EVP_MD_CTX *md = EVP_MD_CTX_new();
        if (!md)
                return -ENOMEM;
        if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) {
                EVP_MD_CTX_free(md);
                return -EIO;
        }
        *ret = md;
        return 0;
}

int sha256_update(EVP_MD_CTX *md, const void *data, size_t size) {
        return EVP_DigestUpdate(md, data, size) == 1 ? 0 : -EIO;
}

int sha256_final_digest(EVP_MD_CTX *md, char ret[static 72]) {
        static const char hex[] = "0123456789abcdef";
        unsigned char d[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (EVP_DigestFinal_ex(md, d, &n) != 1 || n != 32)
                return -EIO;
        memcpy(ret, "sha256:", 7);
        for (unsigned i = 0; i < 32; i++) {
                ret[7 + 2 * i] = hex[d[i] >> 4];
                ret[7 + 2 * i + 1] = hex[d[i] & 15];
        }
        ret[71] = 0;
        return 0;
}
