/* resource.Quantity and Go duration parsing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "quantity.h"

typedef struct QCase {
        const char *text;
        int r;
        int64_t value, milli;
} QCase;

static void test_quantity_table(void **state) {
        static const QCase cases[] = {
                /* Kubernetes' own examples */
                { "128974848", 0, 128974848, 128974848000 },
                { "129e6", 0, 129000000, 129000000000 },
                { "129M", 0, 129000000, 129000000000 },
                { "123Mi", 0, 128974848, 128974848000 },
                { "0.5", 0, 1, 500 },
                { "100m", 0, 1, 100 },
                { "1.5Gi", 0, 1610612736, 1610612736000 },
                { "0.1", 0, 1, 100 },
                { "1", 0, 1, 1000 },
                { "0", 0, 0, 0 },
                { "0m", 0, 0, 0 },
                { "0.0", 0, 0, 0 },
                { "+2", 0, 2, 2000 },
                { "-1", 0, -1, -1000 },
                { "-100m", 0, -1, -100 },
                { "1k", 0, 1000, 1000000 },
                { "1Ki", 0, 1024, 1024000 },
                { "2Ti", 0, 2199023255552, 2199023255552000 },
                { "1Pi", 0, 1125899906842624, 1125899906842624000 },
                { "7Ei", 0, 8070450532247928832, INT64_MAX },
                { "1E", 0, 1000000000000000000, INT64_MAX },
                { "1G", 0, 1000000000, 1000000000000 },
                { "1T", 0, 1000000000000, 1000000000000000 },
                { "1P", 0, 1000000000000000, 1000000000000000000 },
                { "1E-3", 0, 1, 1 },
                { "1e3", 0, 1000, 1000000 },
                { "1.5e3", 0, 1500, 1500000 },
                { "1e+3", 0, 1000, 1000000 },
                { "250u", 0, 1, 1 },
                { "5n", 0, 1, 1 },
                { "1500n", 0, 1, 1 },
                { "1.2345m", 0, 1, 2 },
                { ".5", 0, 1, 500 },
                { "5.", 0, 5, 5000 },
                { "0.001", 0, 1, 1 },
                { "0.0001", 0, 1, 1 },
                { "9223372036854775807", 0, INT64_MAX, INT64_MAX },
                { "1.00000000000000000001", 0, 2, 1001 },
                { "000000000000000000000001", 0, 1, 1000 },
                /* refused */
                { "9223372036854775808", -ERANGE, 0, 0 },
                { "8Ei", -ERANGE, 0, 0 },
                { "10E", -ERANGE, 0, 0 },
                { "1e19", -ERANGE, 0, 0 },
                { "1e100000000", -ERANGE, 0, 0 },
                { "1.5.5", -EINVAL, 0, 0 },
                { "Mi", -EINVAL, 0, 0 },
                { "12Q", -EINVAL, 0, 0 },
                { "", -EINVAL, 0, 0 },
                { ".", -EINVAL, 0, 0 },
                { "-", -EINVAL, 0, 0 },
                { " 1", -EINVAL, 0, 0 },
                { "1 ", -EINVAL, 0, 0 },
                { "1mi", -EINVAL, 0, 0 },
                { "1KI", -EINVAL, 0, 0 },
                { "1K", -EINVAL, 0, 0 },
                { "1e", -EINVAL, 0, 0 },
                { "1e3k", -EINVAL, 0, 0 },
                { "1Mi3", -EINVAL, 0, 0 },
                { "0x10", -EINVAL, 0, 0 },
                { "--1", -EINVAL, 0, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const QCase *c = &cases[i];
                Quantity q = { 12345, 12345 };
                int r = quantity_parse(c->text, &q);
                if (r != c->r)
                        fail_msg("\"%s\": r=%d, want %d", c->text, r, c->r);
                if (r < 0) {
                        /* untouched on failure */
                        assert_true(q.value == 12345 && q.milli == 12345);
                        continue;
                }
                if (q.value != c->value || q.milli != c->milli)
                        fail_msg("\"%s\": value=%lld milli=%lld, want %lld %lld", c->text,
                                 (long long)q.value, (long long)q.milli, (long long)c->value,
                                 (long long)c->milli);
        }
        Quantity q;
        assert_int_equal(quantity_parse(NULL, &q), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_quantity_table),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
