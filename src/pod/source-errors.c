/* Source errors as the client sees them (source-errors.h). A node has a
 * handful of manifest origins, so the table is a small array sorted by
 * (source, origin) and rebuilt entry by entry. */
#include "source-errors.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"

typedef struct SourceErrorItem {
        char *file; /* NULL: the origin */
        unsigned line;
        char *field;
        char *message;
        char *text; /* "file:line: field: message" as the log and `validate` print it */
        SourceErrorReason reason;
} SourceErrorItem;

typedef struct SourceErrorOrigin {
        char *source;
        char *origin;
        usec_t since;
        SourceErrorItem *items;
        size_t n_items;
} SourceErrorOrigin;

struct SourceErrors {
        char *path; /* <status_dir>/sources.json or NULL */
        SourceErrorOrigin *origins;
        size_t n_origins;
};

static const char *const reason_table[_SOURCE_ERROR_REASON_MAX] = {
        [SOURCE_ERROR_UNREADABLE] = "unreadable", [SOURCE_ERROR_SYNTAX] = "syntax",
        [SOURCE_ERROR_INVALID] = "invalid",       [SOURCE_ERROR_DUPLICATE] = "duplicate",
        [SOURCE_ERROR_SIGNATURE] = "signature",
};

const char *source_error_reason_to_string(SourceErrorReason r) {
        if (r < 0 || r >= _SOURCE_ERROR_REASON_MAX)
                return NULL;
        return reason_table[r];
}

SourceErrorReason source_error_reason_from_string(const char *s) {
        for (int i = 0; s && i < _SOURCE_ERROR_REASON_MAX; i++)
                if (streq(reason_table[i], s))
                        return (SourceErrorReason)i;
        return _SOURCE_ERROR_REASON_INVALID;
}

static void items_free(SourceErrorItem *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(items[i].file);
                free(items[i].field);
                free(items[i].message);
                free(items[i].text);
        }
        free(items);
}

static void origin_done(SourceErrorOrigin *o) {
        free(o->source);
        free(o->origin);
        items_free(o->items, o->n_items);
        *o = (SourceErrorOrigin){};
}

int source_errors_new(SourceErrors **ret, const char *status_dir) {
        _cleanup_free_ SourceErrors *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        if (status_dir && !(s->path = strprintf("%s/sources.json", status_dir)))
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}

SourceErrors *source_errors_free(SourceErrors *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_origins; i++)
                origin_done(&s->origins[i]);
        free(s->origins);
        free(s->path);
        free(s);
        return NULL;
}

static SourceErrorReason item_reason(const Diag *d, bool conflict) {
        if (conflict)
                return SOURCE_ERROR_DUPLICATE;
        if (d->path && streq(d->path, "signature"))
                return SOURCE_ERROR_SIGNATURE;
        if (d->path)
                return SOURCE_ERROR_INVALID;
        if (d->line > 0)
                return SOURCE_ERROR_SYNTAX;
        return SOURCE_ERROR_UNREADABLE;
}

/* The error items of ev (warnings are not errors: the log has them). */
static int items_from_event(const SourceEvent *ev, SourceErrorItem **ret, size_t *ret_n) {
        const Diagnostics *d = ev->errors;
        SourceErrorItem *items = calloc(MAX(d->n, (size_t)1), sizeof *items);
        size_t n = 0;
        if (!items)
                return -ENOMEM;
        size_t first_conflict = d->n - MIN(ev->n_conflicts, d->n);
        for (size_t i = 0; i < d->n; i++) {
                const Diag *g = &d->items[i];
                if (g->level != DIAG_ERROR)
                        continue;
                SourceErrorItem *it = &items[n++];
                it->line = g->line;
                it->reason = item_reason(g, i >= first_conflict);
                if ((g->file && !(it->file = strdup(g->file))) ||
                    (g->path && !(it->field = strdup(g->path))) ||
                    !(it->message = strdup(strempty(g->message))) ||
                    !(it->text = diag_to_string(g))) {
                        items_free(items, n);
                        return -ENOMEM;
                }
        }
        *ret = items;
        *ret_n = n;
        return 0;
}

static int origin_compare(const SourceErrorOrigin *o, const char *source, const char *origin) {
        int r = strcmp(o->source, source);
        return r != 0 ? r : strcmp(o->origin, origin);
}

/* Index of (source, origin), or where it would go (*ret_found false). */
static size_t origin_find(const SourceErrors *s, const char *source, const char *origin,
                          bool *ret_found) {
        size_t lo = 0, hi = s->n_origins;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int r = origin_compare(&s->origins[mid], source, origin);
                if (r == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (r < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}

static bool items_equal(const SourceErrorItem *a, size_t na, const SourceErrorItem *b, size_t nb) {
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (!streq(a[i].text, b[i].text) || a[i].reason != b[i].reason)
                        return false;
        return true;
}

int source_errors_update(SourceErrors *s, const SourceEvent *ev, usec_t now) {
        assert(s && ev);
        if (ev->type != SOURCE_EVENT_ERROR || !ev->source || !ev->origin)
                return 0;

        SourceErrorItem *items = NULL;
        size_t n = 0;
        if (ev->errors) {
                int r = items_from_event(ev, &items, &n);
                if (r < 0)
                        return r;
        }
        bool found;
        size_t i = origin_find(s, ev->source, ev->origin, &found);
        if (n == 0) {
                items_free(items, n);
                if (!found)
                        return 0;
                origin_done(&s->origins[i]);
                memmove(s->origins + i, s->origins + i + 1,
                        sizeof(SourceErrorOrigin) * (s->n_origins - i - 1));
                s->n_origins--;
                return source_errors_flush(s);
        }
        if (found) {
                SourceErrorOrigin *o = &s->origins[i];
                if (items_equal(o->items, o->n_items, items, n)) {
                        items_free(items, n);
                        return 0;
                }
                items_free(o->items, o->n_items);
                o->items = items;
                o->n_items = n;
                return source_errors_flush(s);
        }

        SourceErrorOrigin o = { .since = now, .items = items, .n_items = n };
        if (!(o.source = strdup(ev->source)) || !(o.origin = strdup(ev->origin))) {
                origin_done(&o);
                return -ENOMEM;
        }
        SourceErrorOrigin *no = reallocarray(s->origins, s->n_origins + 1, sizeof *no);
        if (!no) {
                origin_done(&o);
                return -ENOMEM;
        }
        s->origins = no;
        memmove(s->origins + i + 1, s->origins + i, sizeof(SourceErrorOrigin) * (s->n_origins - i));
        s->origins[i] = o;
        s->n_origins++;
        return source_errors_flush(s);
}

unsigned source_errors_count(const SourceErrors *s, const char *source, SourceErrorReason reason) {
        unsigned n = 0;
        for (size_t i = 0; i < s->n_origins; i++) {
                const SourceErrorOrigin *o = &s->origins[i];
                if (source && !streq(o->source, source))
                        continue;
                for (size_t k = 0; k < o->n_items; k++)
                        if (o->items[k].reason == reason)
                                n++;
        }
        return n;
}

static json_t *item_to_json(const SourceErrorItem *it) {
        json_t *j = json_pack("{s:s, s:s, s:s}", "message", it->message, "reason",
                              source_error_reason_to_string(it->reason), "text", it->text);
        if (!j)
                return NULL;
        if ((it->file && json_object_set_new(j, "file", json_string(it->file)) < 0) ||
            (it->line > 0 && json_object_set_new(j, "line", json_integer(it->line)) < 0) ||
            (it->field && json_object_set_new(j, "field", json_string(it->field)) < 0)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

static json_t *origin_to_json(const SourceErrorOrigin *o) {
        char since[64];
        _cleanup_json_ json_t *messages = json_array(), *details = json_array();
        if (!messages || !details)
                return NULL;
        for (size_t k = 0; k < o->n_items; k++)
                if (json_array_append_new(messages, json_string(o->items[k].text)) < 0 ||
                    json_array_append_new(details, item_to_json(&o->items[k])) < 0)
                        return NULL;
        return json_pack("{s:s, s:s, s:s, s:O, s:O}", "source", o->source, "origin", o->origin,
                         "since", format_rfc3339(since, sizeof since, o->since), "messages",
                         messages, "items", details);
}

int source_errors_to_json(const SourceErrors *s, json_t **ret) {
        assert(s && ret);
        _cleanup_json_ json_t *errors = json_array();
        if (!errors)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_origins; i++)
                if (json_array_append_new(errors, origin_to_json(&s->origins[i])) < 0)
                        return -ENOMEM;
        json_t *j = json_pack("{s:O}", "errors", errors);
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

int source_errors_flush(SourceErrors *s) {
        assert(s);
        if (!s->path)
                return 0;
        _cleanup_json_ json_t *j = NULL;
        int r = source_errors_to_json(s, &j);
        if (r < 0)
                return r;
        _cleanup_free_ char *data = json_dumps(j, JSON_COMPACT);
        if (!data)
                return -ENOMEM;
        /* 0600 as the rest of status/: the messages quote manifest content. */
        return write_file_atomic(s->path, data, strlen(data), 0600);
}
