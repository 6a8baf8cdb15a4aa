/* Small language helpers shared by every module. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _noreturn_ __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)

/* streq() that accepts NULL (equal only to NULL). */
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}

static inline const char *strempty(const char *s) {
        return s ? s : "";
}
static inline const char *strna(const char *s) {
        return s ? s : "n/a";
}
static inline int isempty(const char *s) {
        return !s || !s[0];
}
