#include "string-util.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool container_id_valid(const char *id) {
        if (isempty(id) || strlen(id) > CONTAINER_ID_MAX || streq(id, ".") || streq(id, ".."))
                return false;
        for (const char *p = id; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || strchr("_.-", *p)))
                        return false;
        return true;
}

const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

bool endswith(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

char *strvprintf(const char *fmt, va_list ap) {
        char *s;
        return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

char *strprintf(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = strvprintf(fmt, ap);
        va_end(ap);
        return s;
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

size_t utf8_sequence_length(const char *s, size_t n) {
        const unsigned char *u = (const unsigned char *)s;
        unsigned char lo = 0x80, hi = 0xBF;
        size_t len;

        if (n == 0)
                return 0;
        if (u[0] < 0x80)
                return 1;
        if (u[0] >= 0xC2 && u[0] <= 0xDF)
                len = 2;
        else if (u[0] >= 0xE0 && u[0] <= 0xEF) {
                len = 3;
                if (u[0] == 0xE0)
                        lo = 0xA0; /* overlong */
                else if (u[0] == 0xED)
                        hi = 0x9F; /* surrogates */
        } else if (u[0] >= 0xF0 && u[0] <= 0xF4) {
                len = 4;
                if (u[0] == 0xF0)
                        lo = 0x90; /* overlong */
                else if (u[0] == 0xF4)
                        hi = 0x8F; /* above U+10FFFF */
        } else
                return 0;
        if (n < len || u[1] < lo || u[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (u[i] < 0x80 || u[i] > 0xBF)
                        return 0;
        return len;
}

#define UTF8_REPLACEMENT "\xEF\xBF\xBD"

char *utf8_make_valid(const char *s, size_t len) {
        /* Each replaced byte becomes three. */
        if (len > (SIZE_MAX - 1) / 3)
                return NULL;
        char *out = malloc(len * 3 + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t k = s[i] == 0 ? 0 : utf8_sequence_length(s + i, len - i);
                if (k == 0) {
                        memcpy(o, UTF8_REPLACEMENT, 3);
                        o += 3;
                        i++;
                        continue;
                }
                memcpy(o, s + i, k);
                o += k;
                i += k;
        }
        *o = 0;
        return out;
}

static uint32_t utf8_decode(const unsigned char *u, size_t len) {
        if (len == 2)
                return (uint32_t)(u[0] & 0x1F) << 6 | (u[1] & 0x3F);
        if (len == 3)
                return (uint32_t)(u[0] & 0x0F) << 12 | (uint32_t)(u[1] & 0x3F) << 6 | (u[2] & 0x3F);
        return (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3F) << 12 |
               (uint32_t)(u[2] & 0x3F) << 6 | (u[3] & 0x3F);
}

/* Code points above ASCII that a terminal does not show as themselves. */
static bool codepoint_is_control(uint32_t c) {
        return (c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029 || c == 0xFEFF ||
               c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x202A && c <= 0x202E) ||
               (c >= 0x2066 && c <= 0x2069);
}

size_t escape_one(const char *s, size_t n, EscapeFlags flags, char out[static ESCAPE_ONE_MAX],
                  size_t *ret_out_len) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *u = (const unsigned char *)s;
        static const char named_from[] = "\n\r\t\a\b\f\v\"\\", named_to[] = "nrtabfv\"\\";
        const char *named = u[0] ? strchr(named_from, u[0]) : NULL;

        assert(n > 0);
        /* '"' and '\\' are the last two of the table */
        if (named && (flags & ESCAPE_QUOTE || named - named_from < 7)) {
                out[0] = '\\';
                out[1] = named_to[named - named_from];
                *ret_out_len = 2;
                return 1;
        }
        size_t len = u[0] < 0x80 ? 1 : utf8_sequence_length(s, n);
        if (u[0] < 0x20 || u[0] == 0x7F || len == 0) {
                out[0] = '\\';
                out[1] = 'x';
                out[2] = hex[u[0] >> 4];
                out[3] = hex[u[0] & 0xF];
                *ret_out_len = 4;
                return 1;
        }
        if (len == 1) {
                out[0] = (char)u[0];
                *ret_out_len = 1;
                return 1;
        }
        uint32_t c = utf8_decode(u, len);
        if (codepoint_is_control(c)) {
                out[0] = '\\';
                out[1] = 'u';
                for (size_t i = 0; i < 4; i++)
                        out[2 + i] = hex[(c >> (12 - 4 * i)) & 0xF];
                *ret_out_len = 6;
                return len;
        }
        memcpy(out, s, len);
        *ret_out_len = len;
        return len;
}

bool escape_needed(const char *s, size_t len, EscapeFlags flags) {
        for (size_t i = 0; i < len;) {
                char buf[ESCAPE_ONE_MAX];
                size_t k, m = escape_one(s + i, len - i, flags, buf, &k);
                if (k != m || memcmp(buf, s + i, k) != 0)
                        return true;
                i += m;
        }
        return false;
}

char *str_escape_n(const char *s, size_t len, EscapeFlags flags) {
        /* At most ESCAPE_ONE_MAX bytes out per byte in ("\xff" is 4, "\u0085" 6 for 2). */
        if (len > (SIZE_MAX - 1) / 4)
                return NULL;
        char *out = malloc(len * 4 + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                char buf[ESCAPE_ONE_MAX];
                size_t k;
                i += escape_one(s + i, len - i, flags, buf, &k);
                memcpy(o, buf, k);
                o += k;
        }
        *o = 0;
        return out;
}

char *str_escape(const char *s, EscapeFlags flags) {
        return str_escape_n(s ? s : "", s ? strlen(s) : 0, flags);
}
