#include "string-util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

char *strprintf(const char *fmt, ...) {
        va_list ap;
        char *s;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        return r < 0 ? NULL : s;
}

char *strndup_safe(const char *s, size_t n) {
        return strndup(s, n);
}

int strbuf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
        if (*len + n + 1 > *cap) {
                size_t nc = MAX(*cap * 2, *len + n + 1);
                nc = MAX(nc, (size_t)64);
                char *nb = realloc(*buf, nc);
                if (!nb)
                        return -ENOMEM;
                *buf = nb;
                *cap = nc;
        }
        memcpy(*buf + *len, s, n);
        *len += n;
        (*buf)[*len] = 0;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        if (!s || !*s)
                return -EINVAL;
        unsigned long long v = 0;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned)(*p - '0');
                if (v > UINT_MAX)
                        return -ERANGE;
        }
        *ret = (unsigned)v;
        return 0;
}
