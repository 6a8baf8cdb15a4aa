/* ImageError: formatted error messages for the image module. */
#include "image-error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int image_error_set(ImageError *err, int error, const char *fmt, ...) {
        int r = error < 0 ? error : -error;
        if (r == 0)
                r = -EIO;
        if (err && err->message[0] == 0) {
                va_list ap;
                va_start(ap, fmt);
                (void)vsnprintf(err->message, sizeof(err->message), fmt, ap);
                va_end(ap);
                err->error = r;
        }
        return r;
}

int image_error_prefix(ImageError *err, int error, const char *fmt, ...) {
        int r = error < 0 ? error : -error;
        if (r == 0)
                r = -EIO;
        if (!err)
                return r;
        char prefix[512];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        char old[sizeof(err->message)];
        if (err->message[0])
                memcpy(old, err->message, sizeof(old));
        else
                (void)snprintf(old, sizeof(old), "%s", strerror(-r));
        /* "prefix: old", truncated to fit. */
        size_t cap = sizeof(err->message), pl = MIN(strlen(prefix), cap - 3);
        size_t ol = strnlen(old, cap - pl - 3);
        memcpy(err->message, prefix, pl);
        memcpy(err->message + pl, ": ", 2);
        memcpy(err->message + pl + 2, old, ol);
        err->message[pl + 2 + ol] = 0;
        if (err->error == 0)
                err->error = r;
        return r;
}

void image_error_clear(ImageError *err) {
        if (err) {
                err->error = 0;
                err->message[0] = 0;
        }
}
