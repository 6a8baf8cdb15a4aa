/* The one error type below main: a negative errno plus one human sentence
 * naming the file, field, entry or command at fault. The caller owns it and
 * prints the message once, at the level that knows the context; the library
 * that fills it never logs above debug. */
#pragma once

#include "macro.h"

typedef struct Error {
        int error;          /* -errno, 0 while unset */
        char message[1024]; /* "" while unset */
} Error;

/* Records error (made negative; 0 becomes -EINVAL, so a failure path can never
 * return success) and the formatted message, if e is not NULL and holds no
 * error yet: the innermost, most precise cause wins over the outer layers
 * that call this again on their way out. Returns the negative errno, so a
 * caller can "return error_set(...)". */
int error_set(Error *e, int error, const char *fmt, ...) _printf_(3, 4);
/* Prepends "context: " to an already set message (or to strerror(error)
 * when none is set), for an outer layer that knows which archive, image or
 * path the inner failure was about. */
int error_prefix(Error *e, int error, const char *fmt, ...) _printf_(3, 4);
void error_clear(Error *e);
