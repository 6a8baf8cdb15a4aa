/* Buffers -> ManifestObjects: document kinds, lists, identity (UID and
 * config.* annotations) and the all-or-nothing rule for a buffer. The typed
 * decoding itself is pod-decode.c's. */
#include "manifest.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "hash.h"
#include "string-util.h"

const char *manifest_kind_to_string(ManifestKind k) {
        static const char *const table[_MANIFEST_KIND_MAX] = {
                [MANIFEST_KIND_POD] = "Pod",
                [MANIFEST_KIND_CONFIGMAP] = "ConfigMap",
                [MANIFEST_KIND_SECRET] = "Secret",
        };
        if (k < 0 || k >= _MANIFEST_KIND_MAX)
                return NULL;
        return table[k];
}

ManifestObject *manifest_object_ref(ManifestObject *o) {
        if (o)
                o->refs++;
        return o;
}

ManifestObject *manifest_object_unref(ManifestObject *o) {
        if (!o || --o->refs > 0)
                return NULL;
        switch (o->kind) {
        case MANIFEST_KIND_POD:
                pod_free(o->pod);
                break;
        case MANIFEST_KIND_CONFIGMAP:
                configmap_free(o->configmap);
                break;
        case MANIFEST_KIND_SECRET:
                secret_free(o->secret);
                break;
        case _MANIFEST_KIND_INVALID:
        case _MANIFEST_KIND_MAX:
        default:
                break;
        }
        free(o->name);
        free(o->namespace);
        free(o->uid);
        free(o->canonical_json);
        free(o->file);
        free(o);
        return NULL;
}

void manifest_objects_free(ManifestObject **objs, size_t n) {
        if (!objs)
                return;
        for (size_t i = 0; i < n; i++)
                manifest_object_unref(objs[i]);
        free(objs);
}

int manifest_compute_uid(const char *canonical_json, const char *node_name, const char *source_id,
                         char ret[static 33]) {
        _cleanup_free_ char *input = NULL;
        char hex[65];
        int r;

        if (!canonical_json || !node_name || !source_id)
                return -EINVAL;
        input = strprintf("%s\nhost:%s\nsource:%s", canonical_json, node_name, source_id);
        if (!input)
                return -ENOMEM;
        r = sha256_hex(input, strlen(input), hex);
        if (r < 0)
                return r;
        memcpy(ret, hex, 32);
        ret[32] = 0;
        return 0;
}

/* Go's time.RFC3339Nano in UTC: fraction without trailing zeros, none at all
 * for whole seconds ("2024-05-01T10:00:00.5Z"). */
static char *format_rfc3339_nano(char buf[static 48], usec_t t) {
        time_t sec = (time_t)(t / USEC_PER_SEC);
        unsigned usec = (unsigned)(t % USEC_PER_SEC);
        struct tm tm;
        size_t l;

        if (!gmtime_r(&sec, &tm))
                return NULL;
        l = strftime(buf, 48, "%Y-%m-%dT%H:%M:%S", &tm);
        if (l == 0)
                return NULL;
        char frac[8] = "";
        if (usec > 0) {
                snprintf(frac, sizeof(frac), ".%06u", usec);
                for (size_t i = strlen(frac); i > 1 && frac[i - 1] == '0'; i--)
                        frac[i - 1] = 0;
        }
        if (l >= 48 || (size_t)snprintf(buf + l, 48 - l, "%sZ", frac) >= 48 - l)
                return NULL;
        return buf;
}

/* Copies src into d, prefixing every path with prefix ("items[2]"). */
static void diagnostics_merge_prefixed(Diagnostics *d, const Diagnostics *src, const char *prefix) {
        if (!prefix) {
                diagnostics_merge(d, src);
                return;
        }
        for (size_t i = 0; i < src->n; i++) {
                const Diag *s = &src->items[i];
                _cleanup_free_ char *path =
                        isempty(s->path) ? strdup(prefix) : strprintf("%s.%s", prefix, s->path);
                diagnostics_add(d, s->level, s->file, s->line, s->column, path ? path : prefix,
                                "%s", strempty(s->message));
        }
        /* Problems src counted beyond what it stored. */
        size_t stored_e = 0, stored_w = 0;
        for (size_t i = 0; i < src->n; i++) {
                if (src->items[i].level == DIAG_WARNING)
                        stored_w++;
                else
                        stored_e++;
        }
        d->n_errors += src->n_errors > stored_e ? src->n_errors - stored_e : 0;
        d->n_warnings += src->n_warnings > stored_w ? src->n_warnings - stored_w : 0;
}

typedef struct ParseState {
        const ManifestParseOptions *opts;
        const char *file;
        Diagnostics *diag;
        ManifestObject **objs;
        size_t n_objs, cap_objs;
        unsigned *obj_lines; /* line of each object's own node, for duplicates */
        unsigned *uid_lines; /* pods: line of metadata.uid, else of the object */
        char **obj_paths;    /* "items[2]" or NULL */
} ParseState;

static char *path_join_prefix(const char *prefix, const char *field) {
        return prefix ? strprintf("%s.%s", prefix, field) : strdup(field);
}

_printf_(5, 6) static void state_error(ParseState *s, const YamlNode *n, const char *prefix,
                                       const char *field, const char *fmt, ...) {
        _cleanup_free_ char *path = NULL, *msg = NULL;
        va_list ap;

        if (field)
                path = path_join_prefix(prefix, field);
        else if (prefix)
                path = strdup(prefix);
        va_start(ap, fmt);
        msg = strvprintf(fmt, ap);
        va_end(ap);
        diagnostics_add(s->diag, DIAG_ERROR, s->file, n ? n->line : 0, n ? n->column : 0, path,
                        "%s", msg ? msg : "out of memory");
}

static int state_append(ParseState *s, ManifestObject *o, unsigned line, unsigned uid_line,
                        const char *prefix) {
        if (s->n_objs >= s->cap_objs) {
                size_t nc = MAX(s->cap_objs * 2, (size_t)8);
                ManifestObject **no = realloc(s->objs, nc * sizeof(ManifestObject *));
                if (!no)
                        return -ENOMEM;
                s->objs = no;
                unsigned *nl = realloc(s->obj_lines, nc * sizeof(unsigned));
                if (!nl)
                        return -ENOMEM;
                s->obj_lines = nl;
                unsigned *nu = realloc(s->uid_lines, nc * sizeof(unsigned));
                if (!nu)
                        return -ENOMEM;
                s->uid_lines = nu;
                char **np = realloc(s->obj_paths, nc * sizeof(char *));
                if (!np)
                        return -ENOMEM;
                s->obj_paths = np;
                s->cap_objs = nc;
        }
        char *p = NULL;
        if (prefix && !(p = strdup(prefix)))
                return -ENOMEM;
        s->objs[s->n_objs] = o;
        s->obj_lines[s->n_objs] = line;
        s->uid_lines[s->n_objs] = uid_line;
        s->obj_paths[s->n_objs] = p;
        s->n_objs++;
        return 0;
}

static bool kind_is_workload(const char *kind) {
        static const char *const workloads[] = {
                "Deployment",
                "ReplicaSet",
                "DaemonSet",
                "StatefulSet",
                "Job",
                "CronJob",
                "ReplicationController",
                "PodTemplate",
                NULL,
        };
        for (const char *const *w = workloads; *w; w++)
                if (streq(*w, kind))
                        return true;
        return false;
}

static int set_pod_identity(ParseState *s, ManifestObject *o) {
        const ManifestParseOptions *opts = s->opts;
        const char *given = pod_get_uid(o->pod);
        char uid[33];
        int r;

        if (!isempty(given))
                o->uid = strdup(given);
        else {
                r = manifest_compute_uid(o->canonical_json, opts->node_name,
                                         strempty(opts->source_id), uid);
                if (r < 0)
                        return r;
                o->uid = strdup(uid);
        }
        if (!o->uid)
                return -ENOMEM;
        r = pod_set_uid(o->pod, o->uid);
        if (r < 0)
                return r;
        r = pod_set_annotation(o->pod, "kubernetes.io/config.hash", o->uid);
        if (r < 0)
                return r;
        if (opts->config_source) {
                r = pod_set_annotation(o->pod, "kubernetes.io/config.source", opts->config_source);
                if (r < 0)
                        return r;
        }
        if (opts->seen > 0) {
                char buf[48];
                if (!format_rfc3339_nano(buf, opts->seen))
                        return -EINVAL;
                r = pod_set_annotation(o->pod, "kubernetes.io/config.seen", buf);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Decodes one object document. Problems go to s->diag; returns -ENOMEM, or
 * 0 (also when the document had errors: parsing goes on to find them all). */
static int process_object(ParseState *s, const YamlNode *doc, ManifestKind kind,
                          const char *prefix) {
        _cleanup_(manifest_object_unrefp) ManifestObject *o = NULL;
        _cleanup_diagnostics_ Diagnostics local = {};
        PodDecodeOptions po = {
                .file = s->file,
                .node_name = kind == MANIFEST_KIND_POD ? s->opts->node_name : NULL,
        };
        int r;

        o = calloc(1, sizeof(ManifestObject));
        if (!o)
                return -ENOMEM;
        o->refs = 1;
        o->kind = kind;
        o->line = doc->line;

        switch (kind) {
        case MANIFEST_KIND_POD:
                r = pod_decode(doc, &po, &o->pod, &local);
                break;
        case MANIFEST_KIND_CONFIGMAP:
                r = configmap_decode(doc, &po, &o->configmap, &local);
                break;
        case MANIFEST_KIND_SECRET:
                r = secret_decode(doc, &po, &o->secret, &local);
                break;
        case _MANIFEST_KIND_INVALID:
        case _MANIFEST_KIND_MAX:
        default:
                return -EINVAL;
        }
        diagnostics_merge_prefixed(s->diag, &local, prefix);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (!diagnostics_has_errors(&local))
                        state_error(s, doc, prefix, NULL, "cannot decode %s: %s",
                                    manifest_kind_to_string(kind), strerror(-r));
                return 0;
        }

        r = manifest_canonical_json(doc, &o->canonical_json);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                state_error(s, doc, prefix, NULL, "cannot compute the canonical form: %s",
                            strerror(-r));
                return 0;
        }

        const char *name, *ns;
        switch (kind) {
        case MANIFEST_KIND_POD:
                name = pod_get_name(o->pod);
                ns = pod_get_namespace(o->pod);
                r = set_pod_identity(s, o);
                if (r < 0)
                        return r;
                break;
        case MANIFEST_KIND_CONFIGMAP:
        case MANIFEST_KIND_SECRET: {
                char hex[65];
                name = kind == MANIFEST_KIND_CONFIGMAP ? configmap_get_name(o->configmap)
                                                       : secret_get_name(o->secret);
                ns = kind == MANIFEST_KIND_CONFIGMAP ? configmap_get_namespace(o->configmap)
                                                     : secret_get_namespace(o->secret);
                r = sha256_hex(o->canonical_json, strlen(o->canonical_json), hex);
                if (r < 0)
                        return r;
                hex[32] = 0;
                o->uid = strdup(hex);
                if (!o->uid)
                        return -ENOMEM;
                break;
        }
        case _MANIFEST_KIND_INVALID:
        case _MANIFEST_KIND_MAX:
        default:
                return -EINVAL;
        }
        o->name = strdup(strempty(name));
        o->namespace = strdup(isempty(ns) ? "default" : ns);
        if (!o->name || !o->namespace)
                return -ENOMEM;
        if (s->file && !(o->file = strdup(s->file)))
                return -ENOMEM;

        const YamlNode *uid_node = yaml_map_get(yaml_map_get(doc, "metadata"), "uid");
        r = state_append(s, o, doc->line, uid_node ? uid_node->line : doc->line, prefix);
        if (r < 0)
                return r;
        TAKE_PTR(o);
        return 0;
}

static int process_document(ParseState *s, const YamlNode *doc, const char *prefix, bool in_list);

static int process_list(ParseState *s, const YamlNode *doc, const char *prefix) {
        const YamlNode *items = yaml_map_get(doc, "items");
        int r;

        if (!items || items->type == YAML_NODE_NULL)
                return 0; /* an empty list is a valid, empty set */
        if (items->type != YAML_NODE_SEQ) {
                state_error(s, items, prefix, "items", "must be a list, not a %s",
                            yaml_node_type_to_string(items->type));
                return 0;
        }
        for (size_t i = 0; i < items->n; i++) {
                _cleanup_free_ char *p =
                        prefix ? strprintf("%s.items[%zu]", prefix, i) : strprintf("items[%zu]", i);
                if (!p)
                        return -ENOMEM;
                r = process_document(s, items->items[i], p, true);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int process_document(ParseState *s, const YamlNode *doc, const char *prefix, bool in_list) {
        const YamlNode *api, *kind;

        if (doc->type != YAML_NODE_MAP) {
                state_error(s, doc, prefix, NULL,
                            "a manifest must be a map with apiVersion and kind, not a %s",
                            yaml_node_type_to_string(doc->type));
                return 0;
        }
        api = yaml_map_get(doc, "apiVersion");
        kind = yaml_map_get(doc, "kind");
        if (!kind || kind->type != YAML_NODE_STRING || isempty(kind->str)) {
                state_error(s, kind ? kind : doc, prefix, "kind",
                            kind ? "must be a non-empty string" : "is missing");
                return 0;
        }
        if (!api || api->type != YAML_NODE_STRING || isempty(api->str)) {
                state_error(s, api ? api : doc, prefix, "apiVersion",
                            api ? "must be a non-empty string" : "is missing");
                return 0;
        }

        const char *k = kind->str;
        ManifestKind mk = _MANIFEST_KIND_INVALID;
        if (streq(k, "Pod"))
                mk = MANIFEST_KIND_POD;
        else if (streq(k, "ConfigMap"))
                mk = MANIFEST_KIND_CONFIGMAP;
        else if (streq(k, "Secret"))
                mk = MANIFEST_KIND_SECRET;

        if (mk >= 0 || streq(k, "PodList") || streq(k, "List")) {
                if (!streq(api->str, "v1")) {
                        state_error(s, api, prefix, "apiVersion",
                                    "apiVersion \"%s\" is not valid for kind \"%s\" (expected "
                                    "\"v1\")",
                                    api->str, k);
                        return 0;
                }
                if (mk >= 0)
                        return process_object(s, doc, mk, prefix);
                if (in_list) {
                        state_error(s, kind, prefix, "kind", "a %s cannot be an item of a list", k);
                        return 0;
                }
                return process_list(s, doc, prefix);
        }
        if (kind_is_workload(k))
                state_error(s, kind, prefix, "kind",
                            "kind \"%s\" is not supported: nanolet runs static Pods only; put the "
                            "%s's pod template in a Pod manifest",
                            k, k);
        else
                state_error(s, kind, prefix, "kind",
                            "kind \"%s\" is not supported: nanolet runs static Pods only (with "
                            "local ConfigMaps and Secrets)",
                            k);
        return 0;
}

typedef struct ObjIndex {
        const ParseState *s;
        size_t i;
} ObjIndex;

static int obj_index_cmp(const void *a, const void *b) {
        const ObjIndex *x = a, *y = b;
        const ManifestObject *ox = x->s->objs[x->i], *oy = y->s->objs[y->i];
        int c;

        if (ox->kind != oy->kind)
                return ox->kind < oy->kind ? -1 : 1;
        c = strcmp(ox->namespace, oy->namespace);
        if (c != 0)
                return c;
        c = strcmp(ox->name, oy->name);
        if (c != 0)
                return c;
        return x->i < y->i ? -1 : x->i > y->i;
}

static int obj_index_uid_cmp(const void *a, const void *b) {
        const ObjIndex *x = a, *y = b;
        int c = strcmp(x->s->objs[x->i]->uid, y->s->objs[y->i]->uid);
        if (c != 0)
                return c;
        return x->i < y->i ? -1 : x->i > y->i;
}

/* Everything below the sources is keyed by a pod's UID: two pods of one
 * input with the same metadata.uid are an error, as two namespace/names are
 * (across inputs, PodConfig refuses the later one). */
static int check_duplicate_uids(ParseState *s) {
        _cleanup_free_ ObjIndex *idx = calloc(s->n_objs, sizeof(ObjIndex));
        size_t n = 0;

        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_objs; i++)
                if (s->objs[i]->kind == MANIFEST_KIND_POD)
                        idx[n++] = (ObjIndex){ s, i };
        qsort(idx, n, sizeof(ObjIndex), obj_index_uid_cmp);
        for (size_t i = 1, first = 0; i < n; i++) {
                const ManifestObject *a = s->objs[idx[first].i], *b = s->objs[idx[i].i];
                if (!streq(a->uid, b->uid)) {
                        first = i;
                        continue;
                }
                if (streq(a->namespace, b->namespace) && streq(a->name, b->name))
                        continue; /* reported as defined twice */
                _cleanup_free_ char *path =
                        s->obj_paths[idx[i].i]
                                ? strprintf("%s.metadata.uid", s->obj_paths[idx[i].i])
                                : strdup("metadata.uid");
                if (!path)
                        return -ENOMEM;
                diagnostics_add(s->diag, DIAG_ERROR, s->file, s->uid_lines[idx[i].i], 0, path,
                                "pod \"%s/%s\" has the same uid \"%s\" as pod \"%s/%s\" (line %u)",
                                b->namespace, b->name, b->uid, a->namespace, a->name,
                                s->uid_lines[idx[first].i]);
        }
        return 0;
}

static int check_duplicates(ParseState *s) {
        _cleanup_free_ ObjIndex *idx = NULL;

        if (s->n_objs < 2)
                return 0;
        int r = check_duplicate_uids(s);
        if (r < 0)
                return r;
        idx = calloc(s->n_objs, sizeof(ObjIndex));
        if (!idx)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_objs; i++)
                idx[i] = (ObjIndex){ s, i };
        qsort(idx, s->n_objs, sizeof(ObjIndex), obj_index_cmp);
        size_t first = 0; /* start of the run of equal objects */
        for (size_t i = 1; i < s->n_objs; i++) {
                const ManifestObject *a = s->objs[idx[first].i], *b = s->objs[idx[i].i];
                if (a->kind != b->kind || !streq(a->namespace, b->namespace) ||
                    !streq(a->name, b->name)) {
                        first = i;
                        continue;
                }
                diagnostics_add(s->diag, DIAG_ERROR, s->file, s->obj_lines[idx[i].i], 0,
                                s->obj_paths[idx[i].i],
                                "%s \"%s/%s\" is defined twice in this input (first at line %u)",
                                manifest_kind_to_string(b->kind), b->namespace, b->name,
                                s->obj_lines[idx[first].i]);
        }
        return 0;
}

int manifest_parse_buffer(const char *buf, size_t size, const ManifestParseOptions *opts,
                          ManifestObject ***ret_objs, size_t *ret_n, Diagnostics *diag) {
        return manifest_parse_buffer_full(buf, size, opts, ret_objs, ret_n, NULL, diag);
}

int manifest_parse_buffer_full(const char *buf, size_t size, const ManifestParseOptions *opts,
                               ManifestObject ***ret_objs, size_t *ret_n, size_t *ret_n_documents,
                               Diagnostics *diag) {
        _cleanup_diagnostics_ Diagnostics local = {};
        ParseState s = {
                .opts = opts,
                .file = opts ? opts->filename : NULL,
                .diag = &local,
        };
        YamlNode **docs = NULL;
        size_t n_docs = 0;
        int r;

        if (!opts || isempty(opts->node_name) || (!buf && size > 0))
                return -EINVAL;

        r = yaml_parse_documents(buf ? buf : "", size, opts->filename, &opts->limits, &docs,
                                 &n_docs, &local);
        if (r < 0) {
                diagnostics_merge(diag, &local);
                return r == -ENOMEM ? r : -EINVAL;
        }

        for (size_t i = 0; i < n_docs; i++) {
                r = process_document(&s, docs[i], NULL, false);
                if (r < 0)
                        break;
        }
        if (r >= 0)
                r = check_duplicates(&s);
        yaml_documents_free(docs, n_docs);

        diagnostics_merge(diag, &local);
        if (r >= 0 && diagnostics_has_errors(&local))
                r = -EINVAL;
        for (size_t i = 0; i < s.n_objs; i++)
                free(s.obj_paths[i]);
        free(s.obj_paths);
        free(s.obj_lines);
        free(s.uid_lines);
        if (r < 0) {
                manifest_objects_free(s.objs, s.n_objs);
                return r;
        }
        *ret_objs = s.objs;
        *ret_n = s.n_objs;
        if (ret_n_documents)
                *ret_n_documents = n_docs;
        return 0;
}
