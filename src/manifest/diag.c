/* Diagnostics: a growable list of problems with their place. Storage is
 * bounded (max_items) but counting is not, so "1000 more errors" is never
 * lost and an allocation failure still counts as an error. */
#include "diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"
#include "string-util.h"

#define DIAG_DEFAULT_MAX_ITEMS 1000

void diagnostics_init(Diagnostics *d) {
        *d = (Diagnostics){};
}

static void diag_free_contents(Diag *item) {
        free(item->file);
        free(item->path);
        free(item->message);
}

void diagnostics_deinit(Diagnostics *d) {
        if (!d)
                return;
        for (size_t i = 0; i < d->n; i++)
                diag_free_contents(&d->items[i]);
        free(d->items);
        size_t max = d->max_items;
        *d = (Diagnostics){ .max_items = max };
}

static void count(Diagnostics *d, DiagLevel level) {
        if (level == DIAG_WARNING)
                d->n_warnings++;
        else
                d->n_errors++;
}

/* Takes ownership of the strings in item (frees them on failure). */
static void diagnostics_push(Diagnostics *d, Diag *item, bool oom) {
        size_t max = d->max_items ? d->max_items : DIAG_DEFAULT_MAX_ITEMS;

        count(d, item->level);
        if (oom) {
                /* Remember that something was lost: an error, whatever the level. */
                if (item->level == DIAG_WARNING)
                        d->n_errors++;
                diag_free_contents(item);
                return;
        }
        if (d->n >= max) {
                diag_free_contents(item);
                return;
        }
        if (d->n >= d->cap) {
                size_t nc = MAX(d->cap * 2, (size_t)16);
                Diag *ni = realloc(d->items, nc * sizeof(Diag));
                if (!ni) {
                        if (item->level == DIAG_WARNING)
                                d->n_errors++;
                        diag_free_contents(item);
                        return;
                }
                d->items = ni;
                d->cap = nc;
        }
        d->items[d->n++] = *item;
}

void diagnostics_add(Diagnostics *d, DiagLevel level, const char *file, unsigned line,
                     unsigned column, const char *path, const char *fmt, ...) {
        Diag item = {
                .level = level,
                .line = line,
                .column = column,
        };
        bool oom = false;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&item.message, fmt, ap) < 0) {
                item.message = NULL;
                oom = true;
        }
        va_end(ap);

        if (file && !(item.file = strdup(file)))
                oom = true;
        if (path && !(item.path = strdup(path)))
                oom = true;
        diagnostics_push(d, &item, oom);
}

void diagnostics_merge(Diagnostics *d, const Diagnostics *src) {
        for (size_t i = 0; i < src->n; i++) {
                const Diag *s = &src->items[i];
                Diag item = {
                        .level = s->level,
                        .line = s->line,
                        .column = s->column,
                };
                bool oom = false;

                if (s->file && !(item.file = strdup(s->file)))
                        oom = true;
                if (s->path && !(item.path = strdup(s->path)))
                        oom = true;
                if (!(item.message = strdup(strempty(s->message))))
                        oom = true;
                diagnostics_push(d, &item, oom);
        }

        /* Items src counted but did not store still count here. */
        size_t stored_errors = 0, stored_warnings = 0;
        for (size_t i = 0; i < src->n; i++) {
                if (src->items[i].level == DIAG_WARNING)
                        stored_warnings++;
                else
                        stored_errors++;
        }
        if (src->n_errors > stored_errors)
                d->n_errors += src->n_errors - stored_errors;
        if (src->n_warnings > stored_warnings)
                d->n_warnings += src->n_warnings - stored_warnings;
}

void diag_format(const Diag *item, FILE *f) {
        fputs(item->file ? item->file : "<input>", f);
        if (item->line > 0)
                fprintf(f, ":%u", item->line);
        fputs(": ", f);
        if (!isempty(item->path))
                fprintf(f, "%s: ", item->path);
        if (item->level == DIAG_WARNING)
                fputs("warning: ", f);
        fputs(strempty(item->message), f);
}

char *diag_to_string(const Diag *item) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return NULL;
        diag_format(item, f);
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

void diagnostics_log(const Diagnostics *d) {
        /* the logger escapes control characters itself */
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *text = diag_to_string(&d->items[i]);
                if (!text) {
                        (void)log_oom();
                        continue;
                }
                if (d->items[i].level == DIAG_ERROR)
                        log_error("%s", text);
                else
                        log_warning("%s", text);
        }
        size_t dropped =
                d->n_errors + d->n_warnings > d->n ? d->n_errors + d->n_warnings - d->n : 0;
        if (dropped > 0)
                log_warning("%zu more problems not shown.", dropped);
}

void diagnostics_print(const Diagnostics *d, FILE *f) {
        /* Messages quote the manifest's bad values and the file names are
         * anyone's: escaped, one line per problem on the terminal. */
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *text = diag_to_string(&d->items[i]);
                _cleanup_free_ char *shown = text ? str_escape(text, 0) : NULL;
                fprintf(f, "%s\n", shown ? shown : "(out of memory)");
        }
        size_t dropped =
                d->n_errors + d->n_warnings > d->n ? d->n_errors + d->n_warnings - d->n : 0;
        if (dropped > 0)
                fprintf(f, "(%zu more problems not shown)\n", dropped);
}
