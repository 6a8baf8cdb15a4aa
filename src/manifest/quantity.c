/* resource.Quantity and Go duration parsing, exact: the mantissa is kept
 * as an integer and scaled with 128-bit arithmetic, so "0.1" is one tenth
 * and not a binary approximation. */
#include "quantity.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "macro.h"
#include "string-util.h"

/* Enough significant digits for any int64 value. Digits beyond it only
 * tell whether the value is a little larger than what was kept. */
#define MAX_SIG_DIGITS 19

typedef struct Decimal {
        bool negative;
        uint64_t mantissa; /* significant digits kept */
        bool sticky;       /* nonzero digits were dropped after the kept ones */
        int exp10;         /* value = mantissa * 10^exp10 * 2^exp2 */
        int exp2;
} Decimal;

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static void decimal_push_digit(Decimal *d, unsigned digit, bool fraction, unsigned *n_sig) {
        if (*n_sig == 0 && digit == 0) {
                /* Leading zero: only shifts the exponent when after the point. */
                if (fraction)
                        d->exp10--;
                return;
        }
        if (*n_sig < MAX_SIG_DIGITS) {
                d->mantissa = d->mantissa * 10 + digit;
                (*n_sig)++;
                if (fraction)
                        d->exp10--;
        } else {
                if (digit != 0)
                        d->sticky = true;
                if (!fraction)
                        d->exp10++;
        }
}

/* Returns the value scaled by 10^scale, rounded away from zero, in *ret;
 * false if its magnitude exceeds INT64_MAX. */
static bool decimal_scaled(const Decimal *d, int scale, int64_t *ret) {
        unsigned __int128 v = d->mantissa;
        int e = d->exp10 + scale;
        bool inexact = d->sticky;

        if (v == 0 && !d->sticky) {
                *ret = 0;
                return true;
        }
        v <<= d->exp2; /* mantissa < 2^64, exp2 <= 60 */
        if (e > 0) {
                for (; e > 0; e--) {
                        v *= 10;
                        if (v > (unsigned __int128)INT64_MAX)
                                return false;
                }
        } else if (e < 0) {
                if (e < -38) {
                        inexact = inexact || v != 0;
                        v = 0;
                } else {
                        unsigned __int128 den = 1;
                        for (int i = 0; i < -e; i++)
                                den *= 10;
                        if (v % den != 0)
                                inexact = true;
                        v /= den;
                }
        }
        if (inexact)
                v++;
        if (v > (unsigned __int128)INT64_MAX)
                return false;
        *ret = d->negative ? -(int64_t)v : (int64_t)v;
        return true;
}

int quantity_parse(const char *s, Quantity *ret) {
        static const struct {
                const char *suffix;
                int exp10, exp2;
        } suffixes[] = {
                { "", 0, 0 },    { "n", -9, 0 },  { "u", -6, 0 },  { "m", -3, 0 },
                { "k", 3, 0 },   { "M", 6, 0 },   { "G", 9, 0 },   { "T", 12, 0 },
                { "P", 15, 0 },  { "E", 18, 0 },  { "Ki", 0, 10 }, { "Mi", 0, 20 },
                { "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
        };
        Decimal d = {};
        unsigned n_sig = 0, n_digits = 0;
        const char *p = s;

        if (!s)
                return -EINVAL;
        if (*p == '+' || *p == '-')
                d.negative = *p++ == '-';
        for (; is_digit(*p); p++, n_digits++)
                decimal_push_digit(&d, *p - '0', false, &n_sig);
        if (*p == '.') {
                p++;
                for (; is_digit(*p); p++, n_digits++)
                        decimal_push_digit(&d, *p - '0', true, &n_sig);
        }
        if (n_digits == 0)
                return -EINVAL;

        /* "E" alone is the exa suffix; "E3", "e-3" are exponents. */
        if ((*p == 'e' || *p == 'E') &&
            (is_digit(p[1]) || ((p[1] == '+' || p[1] == '-') && is_digit(p[2])))) {
                /* Decimal exponent: a signed integer and nothing after it. */
                const char *q = p + 1;
                bool neg = false;
                long e = 0;
                if (*q == '+' || *q == '-')
                        neg = *q++ == '-';
                if (!is_digit(*q))
                        return -EINVAL;
                for (; is_digit(*q); q++)
                        if (e < 100000)
                                e = e * 10 + (*q - '0');
                if (*q)
                        return -EINVAL;
                /* Clamped: 10^±100000 is out of every range anyway. */
                d.exp10 += (int)(neg ? -MIN(e, 100000L) : MIN(e, 100000L));
        } else {
                size_t i;
                for (i = 0; i < ELEMENTSOF(suffixes); i++)
                        if (streq(p, suffixes[i].suffix))
                                break;
                if (i >= ELEMENTSOF(suffixes))
                        return -EINVAL;
                d.exp10 += suffixes[i].exp10;
                d.exp2 = suffixes[i].exp2;
        }

        Quantity q;
        if (!decimal_scaled(&d, 0, &q.value))
                return -ERANGE;
        if (!decimal_scaled(&d, 3, &q.milli))
                q.milli = d.negative ? INT64_MIN : INT64_MAX;
        *ret = q;
        return 0;
}
