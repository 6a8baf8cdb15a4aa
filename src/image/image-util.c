/* Internal helpers: safe recursive removal, openat2, random names. The
 * streaming SHA-256 is in image-digest.c (libcrypto, not linked by the agent). */
#include "image-util.h"

#include "fileio.h"
#include "image-layer.h"
#include "hash.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int random_hex(char ret[static 17]) {
        static const char hex[] = "0123456789abcdef";
        unsigned char b[8];
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                return -errno ? -errno : -EIO;
        for (int i = 0; i < 8; i++) {
                ret[2 * i] = hex[b[i] >> 4];
                ret[2 * i + 1] = hex[b[i] & 15];
        }
        ret[16] = 0;
        return 0;
}

int openat2_in_root(int dir_fd, const char *path, int flags, uint64_t extra_resolve) {
        return openat2_resolve(dir_fd, path, flags, 0,
                               RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | extra_resolve);
}

/* Here, not in image-layer.c: the agent opens the store with these limits
 * and must not link the unpacker (libarchive) for them. */
void image_limits_default(ImageLimits *ret) {
        *ret = (ImageLimits){
                .max_layer_size = IMAGE_DEFAULT_MAX_LAYER_SIZE,
                .max_total_size = IMAGE_DEFAULT_MAX_TOTAL_SIZE,
                .max_ratio = IMAGE_DEFAULT_MAX_RATIO,
                .ratio_min_size = IMAGE_DEFAULT_RATIO_MIN_SIZE,
                .max_entries = IMAGE_DEFAULT_MAX_ENTRIES,
                .max_path = IMAGE_DEFAULT_MAX_PATH,
        };
}

/* Also here for the agent, which reads chain IDs from the store. */
int image_chain_ids(char *const *diff_ids, char ***ret) {
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        STRV_FOREACH(d, diff_ids) {
                char *id;
                if (d == diff_ids)
                        id = strdup(*d);
                else {
                        _cleanup_free_ char *s = strprintf("%s %s", l[strv_length(l) - 1], *d);
                        char hex[65];
                        if (!s)
                                return -ENOMEM;
                        int r = sha256_hex(s, strlen(s), hex);
                        if (r < 0)
                                return r;
                        id = strprintf("sha256:%s", hex);
                }
                if (!id || strv_consume(&l, id) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
