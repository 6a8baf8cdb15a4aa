/* PodConfig: the merged desired state of every manifest origin.
 *
 * Origins (one file, or the URL) are kept sorted by (source rank, origin) so
 * that every decision that depends on order (which duplicate wins, the order
 * of ERROR events) is the same however the files were discovered. A commit
 * recomputes the whole desired set from the origins and diffs it against the
 * previous commit: a node runs tens of static pods, so the simplicity is worth
 * the O(n log n), and it makes a rename (one origin gone, another new) come
 * out as one UPDATE per pod without any special casing. */
#include "source.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "log.h"
#include "string-util.h"

typedef struct Origin {
        char *source;          /* "file" or "http" */
        char *name;            /* file path or URL */
        ManifestObject **objs; /* the last good objects */
        size_t n_objs;
        bool has_error;
        Diagnostics errors; /* from pod_config_set_origin_error() */
        /* errors plus duplicate conflicts, as of the last commit */
        Diagnostics effective;
        size_t n_own;   /* the first n_own items of effective are from errors */
        char *reported; /* text of the last ERROR event sent; NULL = none/cleared */
        bool removed;   /* forgotten; freed by the next commit */
} Origin;

typedef struct Wanted {
        ManifestObject *obj; /* owned reference */
        char *source;
        char *origin;
} Wanted;

struct PodConfig {
        source_event_handler_t handler;
        void *userdata;
        Origin **origins; /* sorted by origin_compare() */
        size_t n_origins;
        Wanted *pods; /* committed pods, sorted by namespace/name */
        size_t n_pods;
        Wanted *locals; /* committed ConfigMaps and Secrets, sorted by kind/namespace/name */
        size_t n_locals;
        bool committing; /* handlers must not change the config under the commit */
        /* An origin changed since the last complete commit. A commit is a pure
         * function of the origins and the last commit, so without a change it
         * has nothing to say: the periodic rescan of 1,000 unchanged files
         * then costs no sort and no rebuild of the desired set. */
        bool dirty;
};

static const char *const source_event_type_table[_SOURCE_EVENT_MAX] = {
        [SOURCE_EVENT_ADD] = "ADD",       [SOURCE_EVENT_UPDATE] = "UPDATE",
        [SOURCE_EVENT_REMOVE] = "REMOVE", [SOURCE_EVENT_ERROR] = "ERROR",
        [SOURCE_EVENT_LOCAL] = "LOCAL",
};

const char *source_event_type_to_string(SourceEventType t) {
        if (t < 0 || t >= _SOURCE_EVENT_MAX)
                return NULL;
        return source_event_type_table[t];
}

/* file before http: a local file is what the operator controls most directly. */
static int source_rank(const char *source) {
        if (streq(source, "file"))
                return 0;
        if (streq(source, "http"))
                return 1;
        return 2;
}

static int origin_compare_key(const Origin *o, const char *source, const char *name) {
        int ra = source_rank(o->source), rb = source_rank(source);
        if (ra != rb)
                return ra < rb ? -1 : 1;
        int r = strcmp(o->source, source);
        if (r != 0)
                return r;
        return strcmp(o->name, name);
}

/* Binary search; returns the index of the match or the insertion point. */
static size_t origin_find(PodConfig *c, const char *source, const char *name, bool *ret_found) {
        size_t lo = 0, hi = c->n_origins;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int r = origin_compare_key(c->origins[mid], source, name);
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

static void origin_drop_objects(Origin *o) {
        manifest_objects_free(o->objs, o->n_objs);
        o->objs = NULL;
        o->n_objs = 0;
}

static Origin *origin_free(Origin *o) {
        if (!o)
                return NULL;
        origin_drop_objects(o);
        diagnostics_deinit(&o->errors);
        diagnostics_deinit(&o->effective);
        free(o->reported);
        free(o->source);
        free(o->name);
        free(o);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Origin *, origin_free)

static int origin_get(PodConfig *c, const char *source, const char *name, Origin **ret) {
        bool found;
        size_t i = origin_find(c, source, name, &found);
        if (found) {
                *ret = c->origins[i];
                return 0;
        }

        _cleanup_(origin_freep) Origin *o = calloc(1, sizeof *o);
        if (!o)
                return -ENOMEM;
        diagnostics_init(&o->errors);
        diagnostics_init(&o->effective);
        o->source = strdup(source);
        o->name = strdup(name);
        if (!o->source || !o->name)
                return -ENOMEM;

        Origin **n = reallocarray(c->origins, c->n_origins + 1, sizeof *n);
        if (!n)
                return -ENOMEM;
        c->origins = n;
        memmove(c->origins + i + 1, c->origins + i, (c->n_origins - i) * sizeof *n);
        c->origins[i] = o;
        c->n_origins++;
        *ret = TAKE_PTR(o);
        return 0;
}

static void wanted_done(Wanted *w) {
        manifest_object_unref(w->obj);
        free(w->source);
        free(w->origin);
}

static void wanted_array_free(Wanted *w, size_t n) {
        for (size_t i = 0; i < n; i++)
                wanted_done(&w[i]);
        free(w);
}

int pod_config_new(PodConfig **ret, source_event_handler_t handler, void *userdata) {
        assert(ret);
        PodConfig *c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->handler = handler;
        c->userdata = userdata;
        c->dirty = true;
        *ret = c;
        return 0;
}

PodConfig *pod_config_free(PodConfig *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n_origins; i++)
                origin_free(c->origins[i]);
        free(c->origins);
        wanted_array_free(c->pods, c->n_pods);
        wanted_array_free(c->locals, c->n_locals);
        free(c);
        return NULL;
}

int pod_config_set_origin(PodConfig *c, const char *source, const char *origin,
                          ManifestObject **objs, size_t n) {
        assert(c && source && origin);
        assert(objs || n == 0);
        if (c->committing)
                return -EBUSY;

        /* Take the new references first so that objs may share objects with
         * what the origin holds now. */
        _cleanup_free_ ManifestObject **copy = NULL;
        if (n > 0) {
                copy = calloc(n, sizeof *copy);
                if (!copy)
                        return -ENOMEM;
        }

        Origin *o;
        int r = origin_get(c, source, origin, &o);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                assert(objs[i]);
                copy[i] = manifest_object_ref(objs[i]);
        }
        origin_drop_objects(o);
        o->objs = TAKE_PTR(copy);
        o->n_objs = n;
        o->has_error = false;
        diagnostics_deinit(&o->errors);
        diagnostics_init(&o->errors);
        o->removed = false;
        c->dirty = true;
        return 0;
}

int pod_config_remove_origin(PodConfig *c, const char *source, const char *origin) {
        assert(c && source && origin);
        if (c->committing)
                return -EBUSY;

        bool found;
        size_t i = origin_find(c, source, origin, &found);
        if (!found)
                return 0;
        Origin *o = c->origins[i];
        /* Kept until the commit, which may still owe an "error cleared" event. */
        origin_drop_objects(o);
        o->has_error = false;
        diagnostics_deinit(&o->errors);
        diagnostics_init(&o->errors);
        o->removed = true;
        c->dirty = true;
        return 0;
}

int pod_config_set_origin_error(PodConfig *c, const char *source, const char *origin,
                                const Diagnostics *errors) {
        assert(c && source && origin && errors);
        if (c->committing)
                return -EBUSY;

        Origin *o;
        int r = origin_get(c, source, origin, &o);
        if (r < 0)
                return r;

        diagnostics_deinit(&o->errors);
        diagnostics_init(&o->errors);
        diagnostics_merge(&o->errors, errors);
        /* An origin marked failing must show as failing, even if the caller
         * handed over warnings only. */
        if (o->errors.n_errors == 0)
                diagnostics_add(&o->errors, DIAG_ERROR, origin, 0, 0, NULL,
                                "cannot be used (no details given)");
        o->has_error = true;
        o->removed = false;
        c->dirty = true;
        return 0;
}

/* ---- commit ---- */

typedef struct Candidate {
        ManifestObject *obj;
        size_t origin; /* index into c->origins */
        size_t doc;    /* index inside the origin */
} Candidate;

/* Pods first, then the local objects by kind; each by namespace/name. */
static int object_key_compare(const ManifestObject *a, const ManifestObject *b) {
        if (a->kind != b->kind)
                return a->kind < b->kind ? -1 : 1;
        int r = strcmp(a->namespace, b->namespace);
        if (r != 0)
                return r;
        return strcmp(a->name, b->name);
}

static int candidate_compare(const void *x, const void *y) {
        const Candidate *a = x, *b = y;
        int r = object_key_compare(a->obj, b->obj);
        if (r != 0)
                return r;
        /* Same key: the earlier origin wins, then the earlier document. */
        if (a->origin != b->origin)
                return a->origin < b->origin ? -1 : 1;
        if (a->doc != b->doc)
                return a->doc < b->doc ? -1 : 1;
        return 0;
}

typedef struct UidRef {
        Candidate cand; /* where the pod came from */
        size_t pod;     /* index into the new pods[] */
} UidRef;

static int uid_ref_compare(const void *x, const void *y) {
        const UidRef *a = x, *b = y;
        int r = strcmp(a->cand.obj->uid, b->cand.obj->uid);
        if (r != 0)
                return r;
        if (a->cand.origin != b->cand.origin)
                return a->cand.origin < b->cand.origin ? -1 : 1;
        return a->cand.doc < b->cand.doc ? -1 : a->cand.doc > b->cand.doc;
}

/* Pods are keyed by UID below this point (pod workers, runtime IDs, the
 * checkpoint), so two pods with one UID cannot both run: as for a duplicate
 * name, the earlier origin (then document) wins and the other is dropped
 * from pods[] (kept in namespace/name order) with an error on its origin.
 * cand[i] is where pods[i] came from. Only a given metadata.uid can collide:
 * computed ones hash the source. */
static int drop_duplicate_uids(PodConfig *c, Wanted *pods, const Candidate *cand, size_t *n) {
        if (*n < 2)
                return 0;
        _cleanup_free_ UidRef *refs = calloc(*n, sizeof *refs);
        _cleanup_free_ bool *drop = calloc(*n, sizeof *drop);
        if (!refs || !drop)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                refs[i] = (UidRef){ .cand = cand[i], .pod = i };
        qsort(refs, *n, sizeof *refs, uid_ref_compare);

        for (size_t i = 1, first = 0; i < *n; i++) {
                const ManifestObject *w = refs[first].cand.obj, *lo = refs[i].cand.obj;
                if (!streq(w->uid, lo->uid)) {
                        first = i;
                        continue;
                }
                Origin *loser = c->origins[refs[i].cand.origin];
                const Origin *winner = c->origins[refs[first].cand.origin];
                diagnostics_add(&loser->effective, DIAG_ERROR, lo->file ? lo->file : loser->name,
                                lo->line, 0, NULL,
                                "pod \"%s/%s\" has metadata.uid \"%s\", which pod \"%s/%s\" in "
                                "%s already has; this pod is ignored",
                                lo->namespace, lo->name, lo->uid, w->namespace, w->name,
                                w->file ? w->file : winner->name);
                drop[refs[i].pod] = true;
        }
        size_t k = 0;
        for (size_t i = 0; i < *n; i++) {
                if (drop[i])
                        wanted_done(&pods[i]);
                else
                        pods[k++] = pods[i];
        }
        *n = k;
        return 0;
}

static const char *kind_noun(ManifestKind k) {
        switch (k) {
        case MANIFEST_KIND_POD:
                return "pod";
        case MANIFEST_KIND_CONFIGMAP:
                return "configmap";
        case MANIFEST_KIND_SECRET:
                return "secret";
        case _MANIFEST_KIND_INVALID:
        case _MANIFEST_KIND_MAX:
        default:
                return "object";
        }
}

static int wanted_init(Wanted *w, ManifestObject *obj, const Origin *o) {
        w->source = strdup(o->source);
        w->origin = strdup(o->name);
        if (!w->source || !w->origin) {
                free(w->source);
                free(w->origin);
                return -ENOMEM;
        }
        w->obj = manifest_object_ref(obj);
        return 0;
}

/* The formatted error set, so that an unchanged error is not reported again
 * on every rescan. NULL in *ret when there is no error. */
static int diagnostics_to_text(const Diagnostics *d, char **ret) {
        if (d->n_errors == 0) {
                *ret = NULL;
                return 0;
        }
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (!line)
                        return -ENOMEM;
                if (strbuf_append(&buf, &len, &cap, line, strlen(line)) < 0 ||
                    strbuf_append(&buf, &len, &cap, "\n", 1) < 0)
                        return -ENOMEM;
        }
        /* Items past max_items are only counted; the counts keep two such
         * sets apart. */
        char tail[64];
        int k = snprintf(tail, sizeof tail, "(%zu errors, %zu warnings)", d->n_errors,
                         d->n_warnings);
        if (strbuf_append(&buf, &len, &cap, tail, (size_t)k) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(buf);
        return 0;
}

typedef struct PendingError {
        Origin *origin;
        bool cleared;
} PendingError;

typedef struct Change {
        SourceEventType type;
        const Wanted *old; /* REMOVE, UPDATE */
        const Wanted *new; /* ADD, UPDATE */
} Change;

static void emit_change(PodConfig *c, const Change *ch) {
        const Wanted *w = ch->new ? ch->new : ch->old;
        SourceEvent ev = {
                .type = ch->type,
                .source = w->source,
                .origin = w->origin,
                .uid = w->obj->uid,
                .old_uid = ch->type == SOURCE_EVENT_UPDATE ? ch->old->obj->uid : NULL,
                .object = w->obj,
        };
        if (ch->type == SOURCE_EVENT_LOCAL)
                ev.old_uid = ch->old && ch->new ? ch->old->obj->uid : NULL;
        log_debug("%s %s/%s: %s %s (from %s)", kind_noun(w->obj->kind), w->obj->namespace,
                  w->obj->name, source_event_type_to_string(ch->type), w->obj->uid, w->origin);
        if (c->handler)
                c->handler(&ev, c->userdata);
}

/* Everything one commit builds before it switches state. Freed on every
 * early return, so a failure (ENOMEM) leaves the previous commit in place;
 * after the switch it holds the previous desired set until the events are
 * out. */
typedef struct Commit {
        Candidate *cand; /* every object of every live origin, by key then rank */
        size_t n_cand;
        Wanted *pods;        /* the desired set; at most n_cand entries each */
        Candidate *pod_cand; /* pod_cand[i]: where pods[i] came from */
        size_t n_pods;
        Wanted *locals;
        size_t n_locals;
        char **texts; /* per origin: its formatted error set, NULL for none */
        size_t n_texts;
        Change *changes; /* pods */
        size_t n_changes;
        Change *local_changes; /* ConfigMaps and Secrets */
        size_t n_local_changes;
        PendingError *errs;
        size_t n_errs;
} Commit;

static void commit_done(Commit *m) {
        free(m->cand);
        wanted_array_free(m->pods, m->n_pods);
        free(m->pod_cand);
        wanted_array_free(m->locals, m->n_locals);
        for (size_t i = 0; i < m->n_texts; i++)
                free(m->texts[i]);
        free(m->texts);
        free(m->changes);
        free(m->local_changes);
        free(m->errs);
}
#define _cleanup_commit_ _cleanup_(commit_done)

/* calloc() that never returns NULL for n == 0, so "NULL" always means ENOMEM. */
static void *calloc_min1(size_t n, size_t size) {
        return calloc(n ? n : 1, size);
}

/* Every object of every live origin, sorted so that each key's winner comes
 * first; and every origin's effective error set restarted from its own
 * errors, for the duplicates resolve() adds. */
static int commit_collect(PodConfig *c, Commit *m) {
        size_t n = 0;
        for (size_t i = 0; i < c->n_origins; i++)
                if (!c->origins[i]->removed)
                        n += c->origins[i]->n_objs;
        m->cand = calloc_min1(n, sizeof *m->cand);
        if (!m->cand)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_origins; i++) {
                Origin *o = c->origins[i];
                if (o->removed)
                        continue;
                for (size_t j = 0; j < o->n_objs; j++)
                        m->cand[m->n_cand++] =
                                (Candidate){ .obj = o->objs[j], .origin = i, .doc = j };
        }
        qsort(m->cand, m->n_cand, sizeof *m->cand, candidate_compare);

        /* Cannot fail: diagnostics remember ENOMEM. */
        for (size_t i = 0; i < c->n_origins; i++) {
                Origin *o = c->origins[i];
                diagnostics_deinit(&o->effective);
                diagnostics_init(&o->effective);
                if (o->has_error && !o->removed)
                        diagnostics_merge(&o->effective, &o->errors);
                o->n_own = o->effective.n;
        }
        return 0;
}

/* cand[first] won its key; each of cand[first+1..end) is a losing duplicate
 * and gets an error on its own origin. */
static void report_duplicates(PodConfig *c, const Candidate *cand, size_t first, size_t end) {
        const Origin *winner = c->origins[cand[first].origin];
        for (size_t k = first + 1; k < end; k++) {
                const ManifestObject *lo = cand[k].obj;
                Origin *loser = c->origins[cand[k].origin];
                const char *file = lo->file ? lo->file : loser->name;
                if (loser == winner)
                        diagnostics_add(&loser->effective, DIAG_ERROR, file, lo->line, 0, NULL,
                                        "%s \"%s/%s\" is defined twice in %s; the first "
                                        "definition (line %u) wins, this one is ignored",
                                        kind_noun(lo->kind), lo->namespace, lo->name, winner->name,
                                        cand[first].obj->line);
                else
                        diagnostics_add(&loser->effective, DIAG_ERROR, file, lo->line, 0, NULL,
                                        "%s \"%s/%s\" is also defined in %s, which wins; this "
                                        "definition is ignored",
                                        kind_noun(lo->kind), lo->namespace, lo->name, winner->name);
        }
}

/* The new desired set: the first candidate of each key, then one pod per
 * UID. */
static int commit_resolve(PodConfig *c, Commit *m) {
        m->pods = calloc_min1(m->n_cand, sizeof *m->pods);
        m->locals = calloc_min1(m->n_cand, sizeof *m->locals);
        m->pod_cand = calloc_min1(m->n_cand, sizeof *m->pod_cand);
        if (!m->pods || !m->locals || !m->pod_cand)
                return -ENOMEM;

        for (size_t i = 0; i < m->n_cand;) {
                size_t j = i + 1;
                while (j < m->n_cand && object_key_compare(m->cand[i].obj, m->cand[j].obj) == 0)
                        j++;
                const Origin *winner = c->origins[m->cand[i].origin];
                bool is_pod = m->cand[i].obj->kind == MANIFEST_KIND_POD;
                Wanted *w = is_pod ? &m->pods[m->n_pods] : &m->locals[m->n_locals];
                int r = wanted_init(w, m->cand[i].obj, winner);
                if (r < 0)
                        return r;
                if (is_pod)
                        m->pod_cand[m->n_pods++] = m->cand[i];
                else
                        m->n_locals++;
                report_duplicates(c, m->cand, i, j);
                i = j;
        }
        return drop_duplicate_uids(c, m->pods, m->pod_cand, &m->n_pods);
}

/* One merge walk over two arrays sorted by object_key_compare(): a key only
 * in old is removed, only in new added, in both with another uid changed.
 * Pods get REMOVE/ADD/UPDATE; ConfigMaps and Secrets (local) get LOCAL for
 * all three, since only their content matters, not which origin holds them.
 * An unchanged pod keeps the object the pod layer already has (its
 * config.seen is the first sighting) but follows the origin it now comes
 * from. Returns the number of changes written to out. */
static size_t diff_wanted(const Wanted *old, size_t n_old, Wanted *new, size_t n_new, bool local,
                          Change *out) {
        size_t n = 0, a = 0, b = 0;
        while (a < n_old || b < n_new) {
                int cmp = a >= n_old   ? 1
                          : b >= n_new ? -1
                                       : object_key_compare(old[a].obj, new[b].obj);
                if (cmp < 0)
                        out[n++] = (Change){ local ? SOURCE_EVENT_LOCAL : SOURCE_EVENT_REMOVE,
                                             &old[a++], NULL };
                else if (cmp > 0)
                        out[n++] = (Change){ local ? SOURCE_EVENT_LOCAL : SOURCE_EVENT_ADD, NULL,
                                             &new[b++] };
                else {
                        if (!streq(old[a].obj->uid, new[b].obj->uid))
                                out[n++] =
                                        (Change){ local ? SOURCE_EVENT_LOCAL : SOURCE_EVENT_UPDATE,
                                                  &old[a], &new[b] };
                        else if (!local) {
                                manifest_object_unref(new[b].obj);
                                new[b].obj = manifest_object_ref(old[a].obj);
                        }
                        a++;
                        b++;
                }
        }
        return n;
}

/* The changes against the last commit, and every origin's error set as
 * text; allocates all that publish() needs, so that publish cannot fail. */
static int commit_diff(PodConfig *c, Commit *m) {
        m->changes = calloc_min1(c->n_pods + m->n_pods, sizeof *m->changes);
        m->local_changes = calloc_min1(c->n_locals + m->n_locals, sizeof *m->local_changes);
        m->errs = calloc_min1(c->n_origins, sizeof *m->errs);
        m->texts = calloc_min1(c->n_origins, sizeof *m->texts);
        if (!m->changes || !m->local_changes || !m->errs || !m->texts)
                return -ENOMEM;
        m->n_texts = c->n_origins;
        for (size_t i = 0; i < c->n_origins; i++) {
                int r = diagnostics_to_text(&c->origins[i]->effective, &m->texts[i]);
                if (r < 0)
                        return r;
        }
        m->n_changes = diff_wanted(c->pods, c->n_pods, m->pods, m->n_pods, false, m->changes);
        m->n_local_changes =
                diff_wanted(c->locals, c->n_locals, m->locals, m->n_locals, true, m->local_changes);
        return 0;
}

/* Each origin whose error text differs from the one last reported owes an
 * ERROR event (an empty one when its errors are gone). */
static void commit_take_errors(PodConfig *c, Commit *m) {
        for (size_t i = 0; i < c->n_origins; i++) {
                Origin *o = c->origins[i];
                bool same = (!m->texts[i] && !o->reported) ||
                            (m->texts[i] && o->reported && streq(m->texts[i], o->reported));
                free(o->reported);
                o->reported = TAKE_PTR(m->texts[i]);
                if (!same)
                        m->errs[m->n_errs++] = (PendingError){ o, !o->reported };
        }
}

static void emit_errors(PodConfig *c, const Commit *m) {
        Diagnostics none;
        diagnostics_init(&none);
        for (size_t i = 0; i < m->n_errs; i++) {
                Origin *o = m->errs[i].origin;
                SourceEvent ev = {
                        .type = SOURCE_EVENT_ERROR,
                        .source = o->source,
                        .origin = o->name,
                        .errors = m->errs[i].cleared ? &none : &o->effective,
                        .n_conflicts = m->errs[i].cleared ? 0 : o->effective.n - o->n_own,
                };
                if (c->handler)
                        c->handler(&ev, c->userdata);
        }
        diagnostics_deinit(&none);
}

#define SWAP(a, b)                                                                                 \
        do {                                                                                       \
                __typeof__(a) _t_ = (a);                                                           \
                (a) = (b);                                                                         \
                (b) = _t_;                                                                         \
        } while (0)

/* Switches to the new state and sends the events: pods removed, updated,
 * added, then ConfigMaps and Secrets, then errors. Cannot fail. */
static void commit_publish(PodConfig *c, Commit *m) {
        commit_take_errors(c, m);

        /* The new state before the handlers run, so lookups from a handler
         * see it; the old entries, now in m, live until the events are out. */
        SWAP(c->pods, m->pods);
        SWAP(c->n_pods, m->n_pods);
        SWAP(c->locals, m->locals);
        SWAP(c->n_locals, m->n_locals);

        c->committing = true;
        static const SourceEventType order[] = { SOURCE_EVENT_REMOVE, SOURCE_EVENT_UPDATE,
                                                 SOURCE_EVENT_ADD };
        for (size_t k = 0; k < ELEMENTSOF(order); k++)
                for (size_t i = 0; i < m->n_changes; i++)
                        if (m->changes[i].type == order[k])
                                emit_change(c, &m->changes[i]);
        for (size_t i = 0; i < m->n_local_changes; i++)
                emit_change(c, &m->local_changes[i]);
        emit_errors(c, m);
        c->committing = false;

        /* Removed origins have had their last word. */
        size_t k = 0;
        for (size_t i = 0; i < c->n_origins; i++) {
                if (c->origins[i]->removed)
                        origin_free(c->origins[i]);
                else
                        c->origins[k++] = c->origins[i];
        }
        c->n_origins = k;
        c->dirty = false;
}

int pod_config_commit(PodConfig *c) {
        assert(c);
        if (c->committing)
                return -EBUSY;
        if (!c->dirty)
                return 0;

        _cleanup_commit_ Commit m = {};
        int r = commit_collect(c, &m);
        if (r >= 0)
                r = commit_resolve(c, &m);
        if (r >= 0)
                r = commit_diff(c, &m);
        if (r < 0)
                return r;
        commit_publish(c, &m);
        return 0;
}

/* ---- lookups ---- */

static ManifestObject *wanted_find(Wanted *w, size_t n, ManifestKind kind, const char *namespace,
                                   const char *name) {
        ManifestObject key = { .kind = kind, .namespace = (char *)namespace, .name = (char *)name };
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int r = object_key_compare(w[mid].obj, &key);
                if (r == 0)
                        return w[mid].obj;
                if (r < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

ManifestObject *pod_config_find(PodConfig *c, ManifestKind kind, const char *namespace,
                                const char *name) {
        assert(c && namespace && name);
        if (kind == MANIFEST_KIND_POD)
                return wanted_find(c->pods, c->n_pods, kind, namespace, name);
        return wanted_find(c->locals, c->n_locals, kind, namespace, name);
}

ManifestObject *pod_config_next_pod(PodConfig *c, size_t *iter) {
        assert(c && iter);
        if (*iter >= c->n_pods)
                return NULL;
        return c->pods[(*iter)++].obj;
}

bool pod_config_next_error(PodConfig *c, size_t *iter, const char **ret_origin,
                           const Diagnostics **ret_errors) {
        assert(c && iter);
        while (*iter < c->n_origins) {
                Origin *o = c->origins[(*iter)++];
                if (o->removed || o->effective.n_errors == 0)
                        continue;
                if (ret_origin)
                        *ret_origin = o->name;
                if (ret_errors)
                        *ret_errors = &o->effective;
                return true;
        }
        return false;
}

/* ---- shared by the sources ---- */

int source_parse_manifest(const char *buf, size_t size, const ManifestParseOptions *opts,
                          ManifestObject ***ret_objs, size_t *ret_n, Diagnostics *diag) {
        ManifestObject **objs = NULL;
        size_t n = 0, n_docs = 0;
        int r = manifest_parse_buffer_full(buf, size, opts, &objs, &n, &n_docs, diag);
        if (r < 0)
                return r;
        if (n_docs == 0) {
                /* No document at all is what a file looks like while it is
                 * being written; a List with no items (a valid empty set) is
                 * one document, and only that may remove pods. */
                free(objs);
                diagnostics_add(diag, DIAG_ERROR, opts->filename, 0, 0, NULL,
                                "no documents (the file is empty or holds only comments)");
                return -ENODATA;
        }
        *ret_objs = objs;
        *ret_n = n;
        return 0;
}
