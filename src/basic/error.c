#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int error_code(int error) {
        return error < 0 ? error : error > 0 ? -error : -EINVAL;
}

int error_set(Error *e, int error, const char *fmt, ...) {
        int r = error_code(error);

        if (e && e->error == 0) {
                va_list ap;

                e->error = r;
                va_start(ap, fmt);
                (void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
                va_end(ap);
        }
        return r;
}

int error_prefix(Error *e, int error, const char *fmt, ...) {
        int r = error_code(error);
        char prefix[512], old[sizeof(e->message)];
        va_list ap;

        if (!e)
                return r;
        va_start(ap, fmt);
        (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        if (e->message[0])
                memcpy(old, e->message, sizeof(old));
        else
                (void)snprintf(old, sizeof(old), "%s", strerror(-r));
        /* Truncating "prefix: old" to fit the message is intended; using the
         * result tells gcc so (-Wformat-truncation warns on a dropped one). */
        if (snprintf(e->message, sizeof(e->message), "%s: %s", prefix, old) < 0)
                e->message[0] = 0;
        if (e->error == 0)
                e->error = r;
        return r;
}

void error_clear(Error *e) {
        if (e) {
                e->error = 0;
                e->message[0] = 0;
        }
}
