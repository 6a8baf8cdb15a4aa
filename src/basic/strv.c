#include "strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

char **strv_free(char **l) {
        if (l)
                for (char **s = l; *s; s++)
                        free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

bool strv_contains(char *const *l, const char *s) {
        STRV_FOREACH(i, l)
                if (strcmp(*i, s) == 0)
                        return true;
        return false;
}

int strv_consume(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **nl = realloc(*l, sizeof(char *) * (n + 2));
        if (!nl)
                return -ENOMEM;
        nl[n] = s;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

int strv_extend(char ***l, const char *s) {
        char *c = strdup(s);
        if (!c)
                return -ENOMEM;
        int r = strv_consume(l, c);
        if (r < 0)
                free(c);
        return r;
}

char **strv_copy(char *const *l) {
        char **c = calloc(strv_length(l) + 1, sizeof(char *));
        if (!c)
                return NULL;
        size_t i = 0;
        STRV_FOREACH(s, l) {
                c[i] = strdup(*s);
                if (!c[i])
                        return strv_free(c);
                i++;
        }
        return c;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

void strv_sort(char **l) {
        size_t n = strv_length(l);
        if (n > 1)
                qsort(l, n, sizeof(char *), cmp_str);
}
