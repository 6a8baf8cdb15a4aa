/* See poll-schedule.h. */
#include "poll-schedule.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* delay-seconds beyond this (136 years) are all the same to a clamp. */
#define RETRY_AFTER_MAX_SECONDS UINT64_C(0xffffffff)

/* splitmix64 (Steele, Lea, Flood): one 64-bit word of state, every seed
 * good, far more than enough to spread timers. */
static uint64_t next_random(PollSchedule *s) {
        uint64_t z = (s->rng += UINT64_C(0x9e3779b97f4a7c15));
        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

/* Uniform in [0, n); 0 for n == 0. Through a double so that no 128-bit
 * type is needed on 32-bit boxes; n is far below 2^53. */
static usec_t uniform(PollSchedule *s, usec_t n) {
        if (n == 0)
                return 0;
        double u = (double)(next_random(s) >> 11) * 0x1.0p-53;
        usec_t v = (usec_t)(u * (double)n);
        return v < n ? v : n - 1;
}

/* base ± POLL_JITTER_PERCENT, uniform in [base - d, base + d). */
static usec_t spread(PollSchedule *s, usec_t base) {
        usec_t d = base / 100 * POLL_JITTER_PERCENT + base % 100 * POLL_JITTER_PERCENT / 100;
        return base - d + uniform(s, 2 * d);
}

void poll_schedule_init(PollSchedule *s, usec_t period, usec_t max_backoff, uint64_t seed) {
        assert(s);
        if (period == 0)
                period = 1;
        if (max_backoff == 0)
                max_backoff = POLL_DEFAULT_MAX_BACKOFF;
        *s = (PollSchedule){
                .period = period,
                .max_backoff = max_backoff > period ? max_backoff : period,
                .rng = seed,
        };
}

usec_t poll_schedule_first(PollSchedule *s) {
        assert(s);
        return uniform(s, s->period);
}

usec_t poll_schedule_success(PollSchedule *s) {
        assert(s);
        s->failures = 0;
        return spread(s, s->period);
}

usec_t poll_schedule_failure(PollSchedule *s, usec_t retry_after) {
        assert(s);
        if (s->failures < UINT32_MAX)
                s->failures++;
        usec_t base = s->period;
        for (unsigned i = 0; i < s->failures && base < s->max_backoff; i++)
                base = base > s->max_backoff / 2 ? s->max_backoff : base * 2;
        usec_t wait = spread(s, base);
        if (retry_after != POLL_NO_RETRY_AFTER) {
                usec_t ra = retry_after < s->max_backoff ? retry_after : s->max_backoff;
                ra += uniform(s, s->period);
                if (ra > wait)
                        wait = ra;
        }
        return wait;
}

/* ---- Retry-After ---- */

static bool is_space(char c) {
        return c == ' ' || c == '\t';
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* Exactly n digits. */
static bool take_digits(const char **p, unsigned n, int *ret) {
        int v = 0;
        for (unsigned i = 0; i < n; i++) {
                if (!is_digit((*p)[i]))
                        return false;
                v = v * 10 + ((*p)[i] - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

static bool take_char(const char **p, char c) {
        if (**p != c)
                return false;
        (*p)++;
        return true;
}

static bool take_month(const char **p, int *ret) {
        static const char months[12][4] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
        for (int i = 0; i < 12; i++)
                if (strncmp(*p, months[i], 3) == 0) {
                        *p += 3;
                        *ret = i;
                        return true;
                }
        return false;
}

/* HH:MM:SS */
static bool take_time(const char **p, struct tm *tm) {
        return take_digits(p, 2, &tm->tm_hour) && take_char(p, ':') &&
               take_digits(p, 2, &tm->tm_min) && take_char(p, ':') &&
               take_digits(p, 2, &tm->tm_sec);
}

/* The day name is not checked against the date: a server that gets it
 * wrong still means the date. */
static bool take_day_name(const char **p) {
        const char *q = *p;
        while ((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z'))
                q++;
        if (q - *p < 3 || q - *p > 9)
                return false;
        *p = q;
        return true;
}

int http_date_parse(const char *s, time_t *ret) {
        assert(ret);
        struct tm tm = {};
        const char *p = s;
        bool ok;

        if (!p || !take_day_name(&p))
                return -EINVAL;
        if (take_char(&p, ',')) {
                ok = take_char(&p, ' ') && take_digits(&p, 2, &tm.tm_mday);
                if (ok && take_char(&p, ' ')) /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
                        ok = take_month(&p, &tm.tm_mon) && take_char(&p, ' ') &&
                             take_digits(&p, 4, &tm.tm_year);
                else if (ok && take_char(&p, '-')) { /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
                        ok = take_month(&p, &tm.tm_mon) && take_char(&p, '-') &&
                             take_digits(&p, 2, &tm.tm_year);
                        /* RFC 9110: a two-digit year more than 50 years
                         * ahead is in the past century; for a delay the
                         * 1970 pivot gives the same answers. */
                        tm.tm_year += tm.tm_year < 70 ? 2000 : 1900;
                } else
                        ok = false;
                ok = ok && take_char(&p, ' ') && take_time(&p, &tm) && strncmp(p, " GMT", 4) == 0;
                p += ok ? 4 : 0;
        } else { /* asctime: Sun Nov  6 08:49:37 1994 */
                ok = take_char(&p, ' ') && take_month(&p, &tm.tm_mon) && take_char(&p, ' ');
                if (ok && take_char(&p, ' '))
                        ok = take_digits(&p, 1, &tm.tm_mday);
                else
                        ok = ok && take_digits(&p, 2, &tm.tm_mday);
                ok = ok && take_char(&p, ' ') && take_time(&p, &tm) && take_char(&p, ' ') &&
                     take_digits(&p, 4, &tm.tm_year);
        }
        if (!ok || *p != 0)
                return -EINVAL;
        /* Leap seconds (60) pass; timegm() carries them into the minute. */
        if (tm.tm_year < 1970 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
            tm.tm_min > 59 || tm.tm_sec > 60)
                return -EINVAL;
        int mday = tm.tm_mday, mon = tm.tm_mon;
        tm.tm_year -= 1900;
        time_t t = timegm(&tm);
        /* 31 Feb would become 3 Mar: not a date. (time_t)-1 is also
         * timegm()'s error, and 1969 is refused above anyway. */
        if (t == (time_t)-1 || tm.tm_mday != mday || tm.tm_mon != mon)
                return -EINVAL;
        *ret = t;
        return 0;
}

int poll_retry_after_parse(const char *value, const char *date, time_t now, usec_t *ret) {
        assert(ret);
        if (!value)
                return -EINVAL;
        while (is_space(*value))
                value++;
        size_t len = strlen(value);
        while (len > 0 && is_space(value[len - 1]))
                len--;
        if (len == 0 || len > 64)
                return -EINVAL;
        char buf[65];
        memcpy(buf, value, len);
        buf[len] = 0;

        if (is_digit(buf[0])) {
                uint64_t secs = 0;
                for (const char *p = buf; *p; p++) {
                        if (!is_digit(*p))
                                return -EINVAL;
                        if (secs < RETRY_AFTER_MAX_SECONDS)
                                secs = secs * 10 + (uint64_t)(*p - '0');
                }
                if (secs > RETRY_AFTER_MAX_SECONDS)
                        secs = RETRY_AFTER_MAX_SECONDS;
                *ret = secs * USEC_PER_SEC;
                return 0;
        }

        time_t when, from;
        if (http_date_parse(buf, &when) < 0)
                return -EINVAL;
        if (!date || http_date_parse(date, &from) < 0)
                from = now;
        if (when <= from) {
                *ret = 0;
                return 0;
        }
        uint64_t secs = (uint64_t)when - (uint64_t)from;
        *ret = (secs < RETRY_AFTER_MAX_SECONDS ? secs : RETRY_AFTER_MAX_SECONDS) * USEC_PER_SEC;
        return 0;
}
