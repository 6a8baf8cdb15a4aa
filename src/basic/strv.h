/* NULL-terminated string vectors. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

char **strv_free(char **l);
static inline void strv_freep(char ***l) {
        strv_free(*l);
}
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l);
bool strv_contains(char *const *l, const char *s);
/* Appends a copy of s; returns 0 or -ENOMEM (l is unchanged on failure). */
int strv_extend(char ***l, const char *s);
/* Appends s itself, taking ownership on success. */
int strv_consume(char ***l, char *s);
char **strv_copy(char *const *l);
void strv_sort(char **l);

#define STRV_FOREACH(s, l) for (char *const *s = (l); s && *s; s++)
