/* The image module's error struct: a -errno plus one human sentence that
 * names the archive entry, blob or reference at fault. Callers own it; the
 * library never logs above debug, the caller prints the message once. */
#pragma once

#include "macro.h"

typedef struct ImageError {
        int error;          /* -errno, 0 when unset */
        char message[1024]; /* "" when unset */
} ImageError;

/* Records error (made negative) and the formatted message if err is not
 * NULL and holds no message yet: the innermost, most precise cause wins.
 * Returns -abs(error) so callers can "return image_error_set(...)". */
int image_error_set(ImageError *err, int error, const char *fmt, ...) _printf_(3, 4);
/* Prepends "context: " to an already set message (or sets it from error). */
int image_error_prefix(ImageError *err, int error, const char *fmt, ...) _printf_(3, 4);
void image_error_clear(ImageError *err);
