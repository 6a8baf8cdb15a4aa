#include "time-util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

usec_t now_usec(clockid_t clock) {
        struct timespec ts;
        clock_gettime(clock, &ts);
        return (usec_t)ts.tv_sec * USEC_PER_SEC + (usec_t)ts.tv_nsec / 1000;
}

char *format_rfc3339(char *buf, size_t size, usec_t realtime) {
        time_t t = (time_t)(realtime / USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
}

static bool ascii_digit(char c) {
        return c >= '0' && c <= '9';
}

/* Go's leadingInt: digits into *v, at most 2^63 (the magnitude of the
 * smallest duration). */
static int duration_leading_int(const char **p, uint64_t *v) {
        const uint64_t limit = UINT64_C(1) << 63;
        uint64_t x = 0;
        for (; ascii_digit(**p); (*p)++) {
                unsigned d = (unsigned)(**p - '0');
                if (x > (limit - d) / 10)
                        return -ERANGE;
                x = x * 10 + d;
        }
        *v = x;
        return 0;
}

/* Go's leadingFraction: digits after the point as f / scale; digits beyond
 * what 2^63 holds are ignored (they are below a nanosecond of any unit). */
static void duration_leading_fraction(const char **p, uint64_t *f, uint64_t *scale) {
        const uint64_t limit = UINT64_C(1) << 63;
        bool full = false;
        *f = 0;
        *scale = 1;
        for (; ascii_digit(**p); (*p)++) {
                unsigned d = (unsigned)(**p - '0');
                if (full)
                        continue;
                if (*f > (limit - d) / 10) {
                        full = true;
                        continue;
                }
                *f = *f * 10 + d;
                *scale *= 10;
        }
}

int go_duration_parse(const char *s, int64_t *ret_nsec) {
        static const struct {
                const char *unit;
                uint64_t nsec;
        } units[] = {
                { "ns", 1ULL },
                { "us", 1000ULL },
                { "\xc2\xb5s", 1000ULL }, /* U+00B5 micro sign */
                { "\xce\xbcs", 1000ULL }, /* U+03BC Greek mu */
                { "ms", 1000000ULL },
                { "s", 1000000000ULL },
                { "m", 60ULL * 1000000000ULL },
                { "h", 3600ULL * 1000000000ULL },
        };
        const uint64_t limit = UINT64_C(1) << 63;
        const char *p = s;
        bool negative = false;
        uint64_t total = 0;
        int r;

        if (isempty(s))
                return -EINVAL;
        if (*p == '+' || *p == '-')
                negative = *p++ == '-';
        if (streq(p, "0")) {
                *ret_nsec = 0;
                return 0;
        }
        if (!*p)
                return -EINVAL;

        while (*p) {
                uint64_t v, f = 0, scale = 1;

                if (!(*p == '.' || ascii_digit(*p)))
                        return -EINVAL;
                const char *start = p;
                r = duration_leading_int(&p, &v);
                if (r < 0)
                        return r;
                bool pre = p != start, post = false;
                if (*p == '.') {
                        p++;
                        start = p;
                        duration_leading_fraction(&p, &f, &scale);
                        post = p != start;
                }
                if (!pre && !post)
                        return -EINVAL; /* "." alone */

                size_t ulen = 0;
                while (p[ulen] && p[ulen] != '.' && !ascii_digit(p[ulen]))
                        ulen++;
                if (ulen == 0)
                        return -EINVAL; /* missing unit */
                uint64_t unit = 0;
                for (size_t i = 0; i < ELEMENTSOF(units); i++)
                        if (strlen(units[i].unit) == ulen && strneq(p, units[i].unit, ulen)) {
                                unit = units[i].nsec;
                                break;
                        }
                if (unit == 0)
                        return -EINVAL;
                p += ulen;

                if (v > limit / unit)
                        return -ERANGE;
                v *= unit;
                /* f < scale, so the fraction of one unit is below the unit
                 * (at most 3.6e12 ns): the 128-bit product cannot overflow
                 * and the sum below stays checked. */
                v += (uint64_t)((unsigned __int128)f * unit / scale);
                if (v > limit)
                        return -ERANGE;
                if (total > limit - v)
                        return -ERANGE;
                total += v;
        }
        if (negative) {
                /* total <= 2^63: -(total - 1) - 1 avoids negating INT64_MIN */
                *ret_nsec = total == 0 ? 0 : -(int64_t)(total - 1) - 1;
                return 0;
        }
        if (total > (uint64_t)INT64_MAX)
                return -ERANGE;
        *ret_nsec = (int64_t)total;
        return 0;
}

int go_duration_parse_usec(const char *s, usec_t *ret) {
        int64_t nsec;
        int r = go_duration_parse(s, &nsec);
        if (r < 0)
                return r;
        if (nsec < 0)
                return -EINVAL; /* usec_t cannot hold a negative duration */
        *ret = (usec_t)nsec / NSEC_PER_USEC;
        return 0;
}
