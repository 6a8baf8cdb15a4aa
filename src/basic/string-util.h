/* String helpers the C library lacks. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Returns the rest of s after prefix, or NULL. */
const char *startswith(const char *s, const char *prefix) _pure_;
bool endswith(const char *s, const char *suffix) _pure_;
/* asprintf() that returns the string, or NULL on ENOMEM. */
char *strprintf(const char *fmt, ...) _printf_(1, 2);
/* Duplicates at most n bytes; NULL on ENOMEM. */
char *strndup_safe(const char *s, size_t n);
/* Bounded append into a growable buffer; returns 0 or -ENOMEM. */
int strbuf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
/* Parses a plain decimal unsigned number (digits only, no sign, no
 * spaces): 0, -EINVAL or -ERANGE. */
int safe_atou(const char *s, unsigned *ret);
