/* Internal helpers of the image module (not part of its contract). */
#pragma once

#include "rm-rf.h"

#include <archive.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "json-util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)
#define _cleanup_md_ _cleanup_(EVP_MD_CTX_freep)
static inline void archive_read_freep(struct archive **a) {
        if (*a)
                (void)archive_read_free(*a);
}
#define _cleanup_archive_read_ _cleanup_(archive_read_freep)

int sha256_new(EVP_MD_CTX **ret);
int sha256_update(EVP_MD_CTX *md, const void *data, size_t size);
/* Writes "sha256:<hex>" into ret (72 bytes). */
int sha256_final_digest(EVP_MD_CTX *md, char ret[static 72]);

/* 16 random lowercase hex characters + NUL. */
int random_hex(char ret[static 17]);
/* openat2(dir_fd, path, flags, RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS|extra). */
int openat2_in_root(int dir_fd, const char *path, int flags, uint64_t extra_resolve);
