/* Nettle does the decoding (the library the agent already maps through
 * GnuTLS, see hash.h); the checks here only make it strict: Nettle alone
 * would also accept spaces and a missing final padding. */
#include "base64.h"

#include <errno.h>
#include <nettle/base64.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

int base64_decode_strict(const char *in, size_t len, Base64Flags flags, uint8_t **ret,
                         size_t *ret_len) {
        _cleanup_free_ char *clean = malloc(len + 1);
        if (!clean)
                return -ENOMEM;
        size_t l = 0;
        for (size_t i = 0; i < len; i++)
                if (!(flags & BASE64_LINE_BREAKS) || (in[i] != '\n' && in[i] != '\r'))
                        clean[l++] = in[i];
        clean[l] = 0;
        if (l % 4 != 0)
                return -EINVAL;
        size_t pad = 0;
        for (size_t i = 0; i < l; i++) {
                char ch = clean[i];
                if (ch == '=') {
                        if (i < l - 2)
                                return -EINVAL;
                        pad++;
                } else if (pad > 0 || ch == 0 ||
                           !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                   "0123456789+/",
                                   ch))
                        return -EINVAL;
        }
        size_t n = l / 4 * 3 + 1;
        _cleanup_free_ uint8_t *out = malloc(n);
        if (!out)
                return -ENOMEM;
        struct base64_decode_ctx ctx;
        base64_decode_init(&ctx);
        if (!base64_decode_update(&ctx, &n, out, l, clean) || !base64_decode_final(&ctx))
                return -EINVAL;
        out[n] = 0;
        *ret = TAKE_PTR(out);
        *ret_len = n;
        return 0;
}
