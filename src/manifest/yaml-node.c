/* YAML (and JSON) text -> YamlNode trees, built from libyaml events.
 *
 * Hostile input is refused early: every node added to a document adds its
 * expanded size (an alias adds the whole size of the node it names), so a
 * billion-laughs document fails at the first alias that crosses max_nodes,
 * and a big scalar behind many aliases at the first alias that crosses the
 * expanded-bytes limit, long before anything is copied. Aliases share the anchored node by
 * reference count; nothing is ever expanded in memory. Depth is checked
 * with aliases expanded too, so walkers of the tree can recurse safely. */
#include "yaml-node.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cleanup.h"
#include "json-util.h"
#include "string-util.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

void yaml_limits_default(YamlLimits *l) {
        *l = (YamlLimits){
                .max_input = 10 * 1024 * 1024,
                .max_depth = 64,
                .max_scalar = 1024 * 1024,
                .max_nodes = 1000000,
                .max_documents = 1000,
                .max_expanded_ratio = 10,
                .min_expanded_bytes = 1024 * 1024,
                .max_expanded_bytes = 64 * 1024 * 1024,
        };
}

static void limits_fill(YamlLimits *out, const YamlLimits *in) {
        YamlLimits d;
        yaml_limits_default(&d);
        *out = in ? *in : d;
        if (out->max_input == 0)
                out->max_input = d.max_input;
        if (out->max_depth == 0)
                out->max_depth = d.max_depth;
        if (out->max_scalar == 0)
                out->max_scalar = d.max_scalar;
        if (out->max_nodes == 0)
                out->max_nodes = d.max_nodes;
        if (out->max_documents == 0)
                out->max_documents = d.max_documents;
        if (out->max_expanded_ratio == 0)
                out->max_expanded_ratio = d.max_expanded_ratio;
        if (out->min_expanded_bytes == 0)
                out->min_expanded_bytes = d.min_expanded_bytes;
        if (out->max_expanded_bytes == 0)
                out->max_expanded_bytes = d.max_expanded_bytes;
}

static size_t expanded_bytes_limit(const YamlLimits *l, size_t input_size) {
        size_t v = input_size > SIZE_MAX / l->max_expanded_ratio
                           ? SIZE_MAX
                           : input_size * l->max_expanded_ratio;
        return MIN(MAX(v, l->min_expanded_bytes), l->max_expanded_bytes);
}

static size_t add_saturating(size_t a, size_t b) {
        return a + b < a ? SIZE_MAX : a + b;
}

/* ---- nodes ---- */

static YamlNode *node_new(YamlNodeType type, unsigned line, unsigned column) {
        YamlNode *n = calloc(1, sizeof(YamlNode));
        if (!n)
                return NULL;
        n->type = type;
        n->line = line;
        n->column = column;
        n->refs = 1;
        n->expanded = 1;
        return n;
}

YamlNode *yaml_node_ref(YamlNode *n) {
        if (n)
                n->refs++;
        return n;
}

YamlNode *yaml_node_unref(YamlNode *n) {
        if (!n)
                return NULL;
        if (--n->refs > 0)
                return NULL;
        free(n->str);
        if (n->pairs)
                for (size_t i = 0; i < n->n; i++) {
                        yaml_node_unref(n->pairs[i].key);
                        yaml_node_unref(n->pairs[i].value);
                }
        if (n->items)
                for (size_t i = 0; i < n->n; i++)
                        yaml_node_unref(n->items[i]);
        free(n->pairs);
        free(n->items);
        free(n);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(YamlNode *, yaml_node_unref)

void yaml_documents_free(YamlNode **docs, size_t n) {
        if (!docs)
                return;
        for (size_t i = 0; i < n; i++)
                yaml_node_unref(docs[i]);
        free(docs);
}

YamlNode *yaml_map_get(const YamlNode *map, const char *key) {
        if (!map || map->type != YAML_NODE_MAP)
                return NULL;
        for (size_t i = 0; i < map->n; i++)
                if (map->pairs[i].key->str && streq(map->pairs[i].key->str, key))
                        return map->pairs[i].value;
        return NULL;
}

const char *yaml_node_type_to_string(YamlNodeType t) {
        static const char *const table[] = {
                [YAML_NODE_NULL] = "null",     [YAML_NODE_BOOL] = "bool",
                [YAML_NODE_INT] = "integer",   [YAML_NODE_FLOAT] = "number",
                [YAML_NODE_STRING] = "string", [YAML_NODE_MAP] = "map",
                [YAML_NODE_SEQ] = "list",
        };
        if ((unsigned)t >= ELEMENTSOF(table))
                return NULL;
        return table[t];
}

bool yaml_node_is_scalar(const YamlNode *n) {
        return n && n->type != YAML_NODE_MAP && n->type != YAML_NODE_SEQ;
}

const char *yaml_format_float(double f, char buf[static 32]) {
        if (isnan(f))
                return strcpy(buf, ".nan");
        if (isinf(f))
                return strcpy(buf, f > 0 ? ".inf" : "-.inf");
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(buf, 32, "%.*g", prec, f);
                if (strtod(buf, NULL) == f)
                        break;
        }
        return buf;
}

static int node_append_item(YamlNode *seq, YamlNode *item, size_t *cap) {
        if (seq->n >= *cap) {
                size_t nc = MAX(*cap * 2, (size_t)4);
                YamlNode **ni = realloc(seq->items, nc * sizeof(YamlNode *));
                if (!ni)
                        return -ENOMEM;
                seq->items = ni;
                *cap = nc;
        }
        seq->items[seq->n++] = item;
        return 0;
}

static int node_append_pair(YamlNode *map, YamlNode *key, YamlNode *value, size_t *cap) {
        if (map->n >= *cap) {
                size_t nc = MAX(*cap * 2, (size_t)4);
                YamlPair *np = realloc(map->pairs, nc * sizeof(YamlPair));
                if (!np)
                        return -ENOMEM;
                map->pairs = np;
                *cap = nc;
        }
        map->pairs[map->n++] = (YamlPair){ key, value };
        return 0;
}

static void node_account_child(YamlNode *parent, const YamlNode *child) {
        /* Saturating: the document total is checked separately. */
        parent->expanded = add_saturating(parent->expanded, child->expanded);
        parent->expanded_bytes = add_saturating(parent->expanded_bytes, child->expanded_bytes);
        parent->height = MAX(parent->height, child->height + 1);
}

/* ---- a small string-keyed hash table (anchors, map keys) ---- */

typedef struct StrEntry {
        const char *key;
        size_t len;
        void *value;
} StrEntry;

typedef struct StrTable {
        StrEntry *e;
        size_t n, cap; /* cap is a power of two or 0 */
} StrTable;

static uint64_t str_hash(const char *s, size_t len) {
        uint64_t h = 1469598103934665603ULL; /* FNV-1a */
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)s[i];
                h *= 1099511628211ULL;
        }
        return h;
}

static StrEntry *strtable_find(const StrTable *t, const char *key, size_t len) {
        if (t->cap == 0)
                return NULL;
        for (size_t i = str_hash(key, len) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
                StrEntry *e = &t->e[i];
                if (!e->key)
                        return NULL;
                if (e->len == len && memcmp(e->key, key, len) == 0)
                        return e;
        }
}

/* Inserts or replaces; key must outlive the table. */
static int strtable_put(StrTable *t, const char *key, size_t len, void *value, void **ret_old) {
        if ((t->n + 1) * 2 > t->cap) {
                size_t nc = MAX(t->cap * 2, (size_t)16);
                StrEntry *ne = calloc(nc, sizeof(StrEntry));
                if (!ne)
                        return -ENOMEM;
                for (size_t i = 0; i < t->cap; i++) {
                        if (!t->e[i].key)
                                continue;
                        size_t j = str_hash(t->e[i].key, t->e[i].len) & (nc - 1);
                        while (ne[j].key)
                                j = (j + 1) & (nc - 1);
                        ne[j] = t->e[i];
                }
                free(t->e);
                t->e = ne;
                t->cap = nc;
        }
        size_t i = str_hash(key, len) & (t->cap - 1);
        while (t->e[i].key && !(t->e[i].len == len && memcmp(t->e[i].key, key, len) == 0))
                i = (i + 1) & (t->cap - 1);
        if (ret_old)
                *ret_old = t->e[i].key ? t->e[i].value : NULL;
        if (!t->e[i].key)
                t->n++;
        t->e[i] = (StrEntry){ key, len, value };
        return 0;
}

static void strtable_done(StrTable *t) {
        free(t->e);
        *t = (StrTable){};
}

/* ---- scalar typing (go-yaml v2 resolve) ---- */

static bool in_list(const char *s, const char *const *list) {
        for (; *list; list++)
                if (streq(s, *list))
                        return true;
        return false;
}

static const char *const null_words[] = { "", "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "y",    "Y",    "yes", "Yes", "YES", "true",
                                          "True", "TRUE", "on",  "On",  "ON",  NULL };
static const char *const false_words[] = { "n",     "N",     "no",  "No",  "NO",  "false",
                                           "False", "FALSE", "off", "Off", "OFF", NULL };

/* Go strconv.ParseInt(s, 0, 64) on s with underscores already removed. */
static bool go_parse_int(const char *s, int64_t *ret) {
        bool neg = false;
        unsigned base = 10;
        uint64_t v = 0, lim;

        if (*s == '+' || *s == '-')
                neg = *s++ == '-';
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
                base = 16, s += 2;
        else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
                base = 8, s += 2;
        else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
                base = 2, s += 2;
        else if (s[0] == '0' && s[1])
                base = 8, s += 1;
        if (!*s)
                return false;
        lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (; *s; s++) {
                unsigned d;
                if (*s >= '0' && *s <= '9')
                        d = *s - '0';
                else if (*s >= 'a' && *s <= 'f')
                        d = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F')
                        d = *s - 'A' + 10;
                else
                        return false;
                if (d >= base)
                        return false;
                if (v > (lim - d) / base)
                        return false;
                v = v * base + d;
        }
        *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
        return true;
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool yaml_style_float(const char *s) {
        if (*s == '+' || *s == '-')
                s++;
        if (*s == '.') {
                s++;
                if (!(*s >= '0' && *s <= '9'))
                        return false;
                while (*s >= '0' && *s <= '9')
                        s++;
        } else {
                if (!(*s >= '0' && *s <= '9'))
                        return false;
                while (*s >= '0' && *s <= '9')
                        s++;
                if (*s == '.') {
                        s++;
                        while (*s >= '0' && *s <= '9')
                                s++;
                }
        }
        if (*s == 'e' || *s == 'E') {
                s++;
                if (*s == '+' || *s == '-')
                        s++;
                if (!(*s >= '0' && *s <= '9'))
                        return false;
                while (*s >= '0' && *s <= '9')
                        s++;
        }
        return *s == 0;
}

static bool parse_float_word(const char *s, double *ret) {
        static const char *const inf[] = {
                ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL
        };
        static const char *const ninf[] = { "-.inf", "-.Inf", "-.INF", NULL };
        static const char *const nan_words[] = { ".nan", ".NaN", ".NAN", NULL };
        if (in_list(s, inf))
                *ret = INFINITY;
        else if (in_list(s, ninf))
                *ret = -INFINITY;
        else if (in_list(s, nan_words))
                *ret = NAN;
        else
                return false;
        return true;
}

/* Types a plain scalar. Returns -ENOMEM or 0. */
static int resolve_plain(YamlNode *n) {
        const char *s = n->str;

        if (strlen(s) != n->str_len) /* embedded NUL: only a string can hold it */
                goto string;
        if (in_list(s, null_words)) {
                n->type = YAML_NODE_NULL;
                return 0;
        }
        if (in_list(s, true_words) || in_list(s, false_words)) {
                n->type = YAML_NODE_BOOL;
                n->b = in_list(s, true_words);
                return 0;
        }
        if (parse_float_word(s, &n->f)) {
                n->type = YAML_NODE_FLOAT;
                return 0;
        }
        if ((*s >= '0' && *s <= '9') || *s == '+' || *s == '-') {
                _cleanup_free_ char *plain = malloc(n->str_len + 1);
                size_t j = 0;
                if (!plain)
                        return -ENOMEM;
                for (const char *p = s; *p; p++)
                        if (*p != '_')
                                plain[j++] = *p;
                plain[j] = 0;
                if (go_parse_int(plain, &n->i)) {
                        n->type = YAML_NODE_INT;
                        return 0;
                }
                if (yaml_style_float(plain)) {
                        n->type = YAML_NODE_FLOAT;
                        n->f = strtod(plain, NULL);
                        return 0;
                }
                goto string;
        }
        if (*s == '.' && yaml_style_float(s)) {
                n->type = YAML_NODE_FLOAT;
                n->f = strtod(s, NULL);
                return 0;
        }
string:
        n->type = YAML_NODE_STRING;
        return 0;
}

/* ---- the event parser ---- */

typedef struct Frame {
        YamlNode *node;
        size_t cap;
        YamlNode *key; /* map: key waiting for its value */
        bool key_is_merge;
        YamlNode **merges;
        size_t n_merges, cap_merges;
} Frame;

typedef struct Parser {
        const char *file;
        YamlLimits limits;
        Diagnostics *diag;
        Frame *stack;
        size_t depth, cap;
        StrTable anchors; /* name -> YamlNode* (a reference); names owned by anchor_names */
        char **anchor_names;
        size_t n_anchor_names, cap_anchor_names;
        size_t doc_nodes;
        size_t input_bytes;     /* expanded scalar text of every document so far */
        size_t max_input_bytes; /* expanded_bytes_limit() for this input */
        size_t input_size;
        YamlNode *root;
        bool root_is_empty;
} Parser;

_printf_(5, 6) static int parser_error(Parser *p, int r, unsigned line, unsigned column,
                                       const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        msg = strvprintf(fmt, ap);
        va_end(ap);
        if (column > 0)
                diagnostics_add(p->diag, DIAG_ERROR, p->file, line, column, NULL, "column %u: %s",
                                column, strempty(msg));
        else
                diagnostics_add(p->diag, DIAG_ERROR, p->file, line, column, NULL, "%s",
                                strempty(msg));
        return r;
}

static void frame_done(Frame *f) {
        yaml_node_unref(f->node);
        yaml_node_unref(f->key);
        for (size_t i = 0; i < f->n_merges; i++)
                yaml_node_unref(f->merges[i]);
        free(f->merges);
        *f = (Frame){};
}

static void anchors_reset(Parser *p) {
        for (size_t i = 0; i < p->anchors.cap; i++)
                if (p->anchors.e[i].key)
                        yaml_node_unref(p->anchors.e[i].value);
        strtable_done(&p->anchors);
        for (size_t i = 0; i < p->n_anchor_names; i++)
                free(p->anchor_names[i]);
        free(p->anchor_names);
        p->anchor_names = NULL;
        p->n_anchor_names = p->cap_anchor_names = 0;
}

static void parser_reset_document(Parser *p) {
        while (p->depth > 0)
                frame_done(&p->stack[--p->depth]);
        anchors_reset(p);
        p->root = yaml_node_unref(p->root);
        p->root_is_empty = false;
        p->doc_nodes = 0;
}

static int anchor_register(Parser *p, const char *name, YamlNode *n) {
        char *copy = strdup(name);
        void *old = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        if (p->n_anchor_names >= p->cap_anchor_names) {
                size_t nc = MAX(p->cap_anchor_names * 2, (size_t)8);
                char **nn = realloc(p->anchor_names, nc * sizeof(char *));
                if (!nn) {
                        free(copy);
                        return -ENOMEM;
                }
                p->anchor_names = nn;
                p->cap_anchor_names = nc;
        }
        p->anchor_names[p->n_anchor_names++] = copy;
        r = strtable_put(&p->anchors, copy, strlen(copy), yaml_node_ref(n), &old);
        if (r < 0) {
                yaml_node_unref(n);
                return r;
        }
        yaml_node_unref(old); /* a redefined anchor names the new node from here on */
        return 0;
}

/* Accounts for nodes and scalar bytes a scalar, collection or alias adds. */
static int count_nodes(Parser *p, size_t add, size_t add_bytes, unsigned line, unsigned column) {
        if (add > p->limits.max_nodes || p->doc_nodes + add > p->limits.max_nodes)
                return parser_error(p, -E2BIG, line, column,
                                    "document has more than %zu nodes with aliases expanded "
                                    "(alias bomb?)",
                                    p->limits.max_nodes);
        if (add_bytes > p->max_input_bytes || p->input_bytes + add_bytes > p->max_input_bytes)
                return parser_error(p, -E2BIG, line, column,
                                    "aliases expand the input to more than %zu bytes of text "
                                    "(limit: %zu times the input's %zu bytes, at least %zu, at "
                                    "most %zu)",
                                    p->max_input_bytes, p->limits.max_expanded_ratio, p->input_size,
                                    p->limits.min_expanded_bytes, p->limits.max_expanded_bytes);
        p->doc_nodes += add;
        p->input_bytes += add_bytes;
        return 0;
}

/* Replaces a non-string key by a STRING key spelled as Kubernetes' YAML to
 * JSON conversion spells it. */
static int normalize_key(YamlNode **key) {
        YamlNode *k = *key;
        char buf[32];
        const char *text;

        switch (k->type) {
        case YAML_NODE_STRING:
                return 0;
        case YAML_NODE_NULL:
                text = "null";
                break;
        case YAML_NODE_BOOL:
                text = k->b ? "true" : "false";
                break;
        case YAML_NODE_INT:
                snprintf(buf, sizeof(buf), "%" PRId64, k->i);
                text = buf;
                break;
        case YAML_NODE_FLOAT:
                text = yaml_format_float(k->f, buf);
                break;
        case YAML_NODE_MAP:
        case YAML_NODE_SEQ:
        default:
                return -EINVAL;
        }
        YamlNode *n = node_new(YAML_NODE_STRING, k->line, k->column);
        if (!n)
                return -ENOMEM;
        n->str = strdup(text);
        if (!n->str) {
                yaml_node_unref(n);
                return -ENOMEM;
        }
        n->str_len = strlen(text);
        yaml_node_unref(k);
        *key = n;
        return 0;
}

/* Attaches a finished node (a reference we own) to the open collection, or
 * makes it the document root. */
static int attach(Parser *p, YamlNode *n, bool is_merge_key) {
        int r;

        if (p->depth == 0) {
                p->root = n;
                return 0;
        }
        Frame *f = &p->stack[p->depth - 1];
        if (f->node->type == YAML_NODE_SEQ) {
                r = node_append_item(f->node, n, &f->cap);
                if (r < 0) {
                        yaml_node_unref(n);
                        return r;
                }
                node_account_child(f->node, n);
                return 0;
        }

        /* map */
        if (!f->key) {
                if (!yaml_node_is_scalar(n)) {
                        r = parser_error(p, -EINVAL, n->line, n->column,
                                         "a map key must be a scalar, not a %s",
                                         yaml_node_type_to_string(n->type));
                        yaml_node_unref(n);
                        return r;
                }
                f->key_is_merge = is_merge_key;
                r = normalize_key(&n);
                if (r < 0) {
                        yaml_node_unref(n);
                        return r;
                }
                f->key = n;
                return 0;
        }
        node_account_child(f->node, n);
        if (f->key_is_merge) {
                if (f->n_merges >= f->cap_merges) {
                        size_t nc = MAX(f->cap_merges * 2, (size_t)2);
                        YamlNode **nm = realloc(f->merges, nc * sizeof(YamlNode *));
                        if (!nm) {
                                yaml_node_unref(n);
                                return -ENOMEM;
                        }
                        f->merges = nm;
                        f->cap_merges = nc;
                }
                f->merges[f->n_merges++] = n;
                f->key = yaml_node_unref(f->key);
                return 0;
        }
        r = node_append_pair(f->node, f->key, n, &f->cap);
        if (r < 0) {
                yaml_node_unref(n);
                return r;
        }
        node_account_child(f->node, f->key);
        f->key = NULL;
        return 0;
}

static int merge_source(Parser *p, Frame *f, StrTable *keys, const YamlNode *src,
                        const YamlNode *where) {
        if (src->type != YAML_NODE_MAP)
                return parser_error(p, -EINVAL, where->line, where->column,
                                    "the value of a merge key (<<) must be a map or a list of "
                                    "maps, not a %s",
                                    yaml_node_type_to_string(src->type));
        for (size_t i = 0; i < src->n; i++) {
                const YamlPair *pair = &src->pairs[i];
                int r;
                if (strtable_find(keys, pair->key->str, pair->key->str_len))
                        continue;
                r = strtable_put(keys, pair->key->str, pair->key->str_len, NULL, NULL);
                if (r < 0)
                        return r;
                r = node_append_pair(f->node, yaml_node_ref(pair->key), yaml_node_ref(pair->value),
                                     &f->cap);
                if (r < 0) {
                        yaml_node_unref(pair->key);
                        yaml_node_unref(pair->value);
                        return r;
                }
        }
        return 0;
}

/* Checks for duplicate keys and applies merge keys. */
static int map_finish(Parser *p, Frame *f) {
        YamlNode *m = f->node;
        StrTable keys = {};
        bool dup = false;
        int r = 0;

        for (size_t i = 0; i < m->n; i++) {
                YamlNode *k = m->pairs[i].key;
                void *old = NULL;
                StrEntry *e = strtable_find(&keys, k->str, k->str_len);
                if (e) {
                        const YamlNode *first = e->value;
                        (void)parser_error(p, -EINVAL, k->line, k->column,
                                           "duplicate key \"%s\" in map (first at line %u)", k->str,
                                           first->line);
                        dup = true;
                        continue;
                }
                r = strtable_put(&keys, k->str, k->str_len, k, &old);
                if (r < 0)
                        goto finish;
        }
        if (dup) {
                r = -EINVAL;
                goto finish;
        }
        for (size_t i = 0; i < f->n_merges; i++) {
                const YamlNode *v = f->merges[i];
                if (v->type == YAML_NODE_SEQ) {
                        for (size_t j = 0; j < v->n; j++) {
                                r = merge_source(p, f, &keys, v->items[j], f->node);
                                if (r < 0)
                                        goto finish;
                        }
                } else {
                        r = merge_source(p, f, &keys, v, f->node);
                        if (r < 0)
                                goto finish;
                }
        }
finish:
        strtable_done(&keys);
        return r;
}

static bool tag_is_core(const char *t) {
        static const char *const core[] = { "str",       "int",   "float", "bool", "null",
                                            "timestamp", "merge", "map",   "seq",  NULL };
        return in_list(t, core);
}

/* "tag:yaml.org,2002:x" is printed as the "!!x" the user wrote. */
static int tag_error(Parser *p, const char *tag, const char *used_on, const yaml_mark_t *mark) {
        const char *t = startswith(tag, TAG_PREFIX);
        _cleanup_free_ char *shown = t ? strprintf("!!%s", t) : strdup(tag);
        if (used_on)
                return parser_error(p, -EINVAL, mark->line + 1, mark->column + 1,
                                    "tag \"%s\" cannot be used on a %s", shown ? shown : tag,
                                    used_on);
        return parser_error(p, -EINVAL, mark->line + 1, mark->column + 1, "unknown tag \"%s\"",
                            shown ? shown : tag);
}

static int check_tag(Parser *p, const char *tag, const char *want, const yaml_mark_t *mark) {
        const char *t;

        if (!tag || streq(tag, "!"))
                return 0;
        t = startswith(tag, TAG_PREFIX);
        if (t && streq(t, want))
                return 0;
        if (t && tag_is_core(t))
                return tag_error(p, tag, want, mark);
        return tag_error(p, tag, NULL, mark);
}

static int collection_start(Parser *p, yaml_event_t *ev, YamlNodeType type) {
        const char *anchor = NULL, *tag = NULL;
        unsigned line = ev->start_mark.line + 1, column = ev->start_mark.column + 1;
        int r;

        if (type == YAML_NODE_MAP) {
                anchor = (const char *)ev->data.mapping_start.anchor;
                tag = (const char *)ev->data.mapping_start.tag;
        } else {
                anchor = (const char *)ev->data.sequence_start.anchor;
                tag = (const char *)ev->data.sequence_start.tag;
        }
        r = check_tag(p, tag, type == YAML_NODE_MAP ? "map" : "seq", &ev->start_mark);
        if (r < 0)
                return r;
        if (p->depth + 1 > p->limits.max_depth)
                return parser_error(p, -E2BIG, line, column, "nesting is deeper than %u levels",
                                    p->limits.max_depth);
        r = count_nodes(p, 1, 0, line, column);
        if (r < 0)
                return r;
        if (p->depth >= p->cap) {
                size_t nc = MAX(p->cap * 2, (size_t)16);
                Frame *ns = realloc(p->stack, nc * sizeof(Frame));
                if (!ns)
                        return -ENOMEM;
                p->stack = ns;
                p->cap = nc;
        }
        YamlNode *n = node_new(type, line, column);
        if (!n)
                return -ENOMEM;
        n->height = 1;
        p->stack[p->depth++] = (Frame){ .node = n };
        if (anchor)
                return anchor_register(p, anchor, n);
        return 0;
}

static int collection_end(Parser *p) {
        Frame *f = &p->stack[p->depth - 1];
        int r = 0;

        if (f->node->type == YAML_NODE_MAP)
                r = map_finish(p, f);
        if (r < 0)
                return r;
        YamlNode *n = TAKE_PTR(f->node);
        frame_done(f);
        p->depth--;
        return attach(p, n, false);
}

static int scalar_typed(Parser *p, YamlNode *n, const char *tag, const yaml_mark_t *mark) {
        const char *t;
        int r;

        if (streq(tag, "!")) {
                n->type = YAML_NODE_STRING;
                return 0;
        }
        t = startswith(tag, TAG_PREFIX);
        if (t && (streq(t, "str") || streq(t, "timestamp") || streq(t, "merge"))) {
                n->type = YAML_NODE_STRING;
                return 0;
        }
        if (!t || !tag_is_core(t))
                return tag_error(p, tag, NULL, mark);
        if (streq(t, "map") || streq(t, "seq"))
                return tag_error(p, tag, "scalar", mark);
        r = resolve_plain(n);
        if (r < 0)
                return r;
        if (streq(t, "float") && n->type == YAML_NODE_INT) {
                n->type = YAML_NODE_FLOAT;
                n->f = (double)n->i;
        }
        if (!streq(yaml_node_type_to_string(n->type), streq(t, "int")     ? "integer"
                                                      : streq(t, "float") ? "number"
                                                                          : t))
                return parser_error(p, -EINVAL, mark->line + 1, mark->column + 1,
                                    "cannot read \"%s\" as !!%s", n->str, t);
        return 0;
}

static int scalar(Parser *p, yaml_event_t *ev) {
        unsigned line = ev->start_mark.line + 1, column = ev->start_mark.column + 1;
        const char *tag = (const char *)ev->data.scalar.tag;
        const char *anchor = (const char *)ev->data.scalar.anchor;
        bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        bool is_merge = false;
        int r;

        if (ev->data.scalar.length > p->limits.max_scalar)
                return parser_error(p, -E2BIG, line, column,
                                    "scalar of %zu bytes is longer than the limit of %zu bytes",
                                    ev->data.scalar.length, p->limits.max_scalar);
        r = count_nodes(p, 1, ev->data.scalar.length, line, column);
        if (r < 0)
                return r;

        _cleanup_(yaml_node_unrefp) YamlNode *n = node_new(YAML_NODE_STRING, line, column);
        if (!n)
                return -ENOMEM;
        n->str = malloc(ev->data.scalar.length + 1);
        if (!n->str)
                return -ENOMEM;
        memcpy(n->str, ev->data.scalar.value, ev->data.scalar.length);
        n->str[ev->data.scalar.length] = 0;
        n->str_len = ev->data.scalar.length;
        n->expanded_bytes = n->str_len;
        n->quoted = !plain;

        if (tag) {
                r = scalar_typed(p, n, tag, &ev->start_mark);
                if (r < 0)
                        return r;
                is_merge = streq(tag, TAG_PREFIX "merge");
        } else if (plain) {
                r = resolve_plain(n);
                if (r < 0)
                        return r;
                is_merge = streq(n->str, "<<");
        } else
                n->type = YAML_NODE_STRING;

        if (p->depth == 0)
                p->root_is_empty = plain && !tag && !anchor && n->str_len == 0;
        if (anchor) {
                r = anchor_register(p, anchor, n);
                if (r < 0)
                        return r;
        }
        /* Only a key position makes "<<" a merge key. */
        bool key_position = p->depth > 0 && p->stack[p->depth - 1].node->type == YAML_NODE_MAP &&
                            !p->stack[p->depth - 1].key;
        return attach(p, TAKE_PTR(n), is_merge && key_position);
}

static int alias(Parser *p, yaml_event_t *ev) {
        const char *name = (const char *)ev->data.alias.anchor;
        unsigned line = ev->start_mark.line + 1, column = ev->start_mark.column + 1;
        StrEntry *e = strtable_find(&p->anchors, name, strlen(name));
        int r;

        if (!e)
                return parser_error(p, -EINVAL, line, column, "unknown anchor \"%s\" in alias",
                                    name);
        YamlNode *target = e->value;
        for (size_t i = 0; i < p->depth; i++)
                if (p->stack[i].node == target)
                        return parser_error(p, -EINVAL, line, column,
                                            "alias \"%s\" refers to a node that contains it", name);
        if (p->depth + target->height > p->limits.max_depth)
                return parser_error(p, -E2BIG, line, column,
                                    "alias \"%s\" makes nesting deeper than %u levels", name,
                                    p->limits.max_depth);
        r = count_nodes(p, target->expanded, target->expanded_bytes, line, column);
        if (r < 0)
                return r;
        bool key_position = p->depth > 0 && p->stack[p->depth - 1].node->type == YAML_NODE_MAP &&
                            !p->stack[p->depth - 1].key;
        bool is_merge = key_position && target->type == YAML_NODE_STRING && !target->quoted &&
                        streq(target->str, "<<");
        return attach(p, yaml_node_ref(target), is_merge);
}

static int docs_append(YamlNode ***docs, size_t *n, size_t *cap, YamlNode *d) {
        if (*n >= *cap) {
                size_t nc = MAX(*cap * 2, (size_t)4);
                YamlNode **nd = realloc(*docs, nc * sizeof(YamlNode *));
                if (!nd)
                        return -ENOMEM;
                *docs = nd;
                *cap = nc;
        }
        (*docs)[(*n)++] = d;
        return 0;
}

static int libyaml_error(Parser *p, yaml_parser_t *yp) {
        switch (yp->error) {
        case YAML_MEMORY_ERROR:
                return -ENOMEM;
        case YAML_READER_ERROR:
                return parser_error(p, -EINVAL, 0, 0, "invalid input at byte %zu: %s",
                                    yp->problem_offset, strna(yp->problem));
        case YAML_COMPOSER_ERROR:
        case YAML_EMITTER_ERROR:
        case YAML_NO_ERROR:
        case YAML_PARSER_ERROR:
        case YAML_SCANNER_ERROR:
        case YAML_WRITER_ERROR:
        default:
                if (yp->context)
                        return parser_error(p, -EINVAL, yp->problem_mark.line + 1,
                                            yp->problem_mark.column + 1, "%s (%s at line %zu)",
                                            strna(yp->problem), yp->context,
                                            yp->context_mark.line + 1);
                return parser_error(p, -EINVAL, yp->problem_mark.line + 1,
                                    yp->problem_mark.column + 1, "%s", strna(yp->problem));
        }
}

/* Returns 0, -ENOMEM, or the error already put into p->diag. *syntax is set
 * when libyaml itself refused the text (the JSON fallback may then apply). */
static int parse_yaml(Parser *p, const char *buf, size_t size, YamlNode ***ret_docs, size_t *ret_n,
                      bool *syntax) {
        yaml_parser_t yp;
        YamlNode **docs = NULL;
        size_t n_docs = 0, cap_docs = 0;
        unsigned n_starts = 0;
        bool done = false;
        int r = 0;

        *syntax = false;
        if (!yaml_parser_initialize(&yp))
                return -ENOMEM;
        yaml_parser_set_input_string(&yp, (const unsigned char *)buf, size);

        while (!done) {
                yaml_event_t ev;
                if (!yaml_parser_parse(&yp, &ev)) {
                        r = libyaml_error(p, &yp);
                        *syntax = r != -ENOMEM;
                        break;
                }
                switch (ev.type) {
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                case YAML_DOCUMENT_START_EVENT:
                        if (++n_starts > p->limits.max_documents)
                                r = parser_error(p, -E2BIG, ev.start_mark.line + 1, 0,
                                                 "more than %u documents", p->limits.max_documents);
                        break;
                case YAML_DOCUMENT_END_EVENT:
                        if (p->root && !p->root_is_empty) {
                                r = docs_append(&docs, &n_docs, &cap_docs, p->root);
                                if (r >= 0)
                                        p->root = NULL;
                        }
                        parser_reset_document(p);
                        break;
                case YAML_MAPPING_START_EVENT:
                        r = collection_start(p, &ev, YAML_NODE_MAP);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                        r = collection_start(p, &ev, YAML_NODE_SEQ);
                        break;
                case YAML_MAPPING_END_EVENT:
                case YAML_SEQUENCE_END_EVENT:
                        r = collection_end(p);
                        break;
                case YAML_SCALAR_EVENT:
                        r = scalar(p, &ev);
                        break;
                case YAML_ALIAS_EVENT:
                        r = alias(p, &ev);
                        break;
                case YAML_NO_EVENT:
                case YAML_STREAM_START_EVENT:
                default:
                        break;
                }
                yaml_event_delete(&ev);
                if (r < 0)
                        break;
        }
        yaml_parser_delete(&yp);
        parser_reset_document(p);
        if (r < 0) {
                yaml_documents_free(docs, n_docs);
                return r;
        }
        *ret_docs = docs;
        *ret_n = n_docs;
        return 0;
}

/* ---- JSON fallback ---- */

static bool looks_like_json(const char *buf, size_t size) {
        for (size_t i = 0; i < size; i++) {
                if (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r')
                        continue;
                return buf[i] == '{' || buf[i] == '[';
        }
        return false;
}

static int json_to_node(Parser *p, json_t *j, unsigned depth, YamlNode **ret) {
        _cleanup_(yaml_node_unrefp) YamlNode *n = NULL;
        char buf[32];
        const char *text = NULL;
        int r;

        r = count_nodes(p, 1, 0, 1, 1);
        if (r < 0)
                return r;
        switch (json_typeof(j)) {
        case JSON_OBJECT: {
                const char *key;
                json_t *v;
                size_t cap = 0;

                if (depth + 1 > p->limits.max_depth)
                        return parser_error(p, -E2BIG, 1, 1, "nesting is deeper than %u levels",
                                            p->limits.max_depth);
                n = node_new(YAML_NODE_MAP, 1, 1);
                if (!n)
                        return -ENOMEM;
                n->height = 1;
                json_object_foreach(j, key, v) {
                        YamlNode *k, *value = NULL;
                        size_t klen = strlen(key);
                        if (klen > p->limits.max_scalar)
                                return parser_error(p, -E2BIG, 1, 1,
                                                    "key of %zu bytes is longer than the limit",
                                                    klen);
                        r = count_nodes(p, 1, 0, 1, 1);
                        if (r < 0)
                                return r;
                        k = node_new(YAML_NODE_STRING, 1, 1);
                        if (!k || !(k->str = strdup(key))) {
                                yaml_node_unref(k);
                                return -ENOMEM;
                        }
                        k->str_len = klen;
                        k->quoted = true;
                        r = json_to_node(p, v, depth + 1, &value);
                        if (r < 0) {
                                yaml_node_unref(k);
                                return r;
                        }
                        r = node_append_pair(n, k, value, &cap);
                        if (r < 0) {
                                yaml_node_unref(k);
                                yaml_node_unref(value);
                                return r;
                        }
                        node_account_child(n, k);
                        node_account_child(n, value);
                }
                break;
        }
        case JSON_ARRAY: {
                size_t idx, cap = 0;
                json_t *v;

                if (depth + 1 > p->limits.max_depth)
                        return parser_error(p, -E2BIG, 1, 1, "nesting is deeper than %u levels",
                                            p->limits.max_depth);
                n = node_new(YAML_NODE_SEQ, 1, 1);
                if (!n)
                        return -ENOMEM;
                n->height = 1;
                json_array_foreach(j, idx, v) {
                        YamlNode *item = NULL;
                        r = json_to_node(p, v, depth + 1, &item);
                        if (r < 0)
                                return r;
                        r = node_append_item(n, item, &cap);
                        if (r < 0) {
                                yaml_node_unref(item);
                                return r;
                        }
                        node_account_child(n, item);
                }
                break;
        }
        case JSON_STRING:
                if (json_string_length(j) > p->limits.max_scalar)
                        return parser_error(p, -E2BIG, 1, 1,
                                            "scalar of %zu bytes is longer than the limit of %zu "
                                            "bytes",
                                            json_string_length(j), p->limits.max_scalar);
                n = node_new(YAML_NODE_STRING, 1, 1);
                if (!n)
                        return -ENOMEM;
                n->str = malloc(json_string_length(j) + 1);
                if (!n->str)
                        return -ENOMEM;
                memcpy(n->str, json_string_value(j), json_string_length(j) + 1);
                n->str_len = json_string_length(j);
                n->quoted = true;
                break;
        case JSON_INTEGER:
                n = node_new(YAML_NODE_INT, 1, 1);
                if (!n)
                        return -ENOMEM;
                n->i = json_integer_value(j);
                snprintf(buf, sizeof(buf), "%" PRId64, n->i);
                text = buf;
                break;
        case JSON_REAL:
                n = node_new(YAML_NODE_FLOAT, 1, 1);
                if (!n)
                        return -ENOMEM;
                n->f = json_real_value(j);
                text = yaml_format_float(n->f, buf);
                break;
        case JSON_TRUE:
        case JSON_FALSE:
                n = node_new(YAML_NODE_BOOL, 1, 1);
                if (!n)
                        return -ENOMEM;
                n->b = json_is_true(j);
                text = n->b ? "true" : "false";
                break;
        case JSON_NULL:
                n = node_new(YAML_NODE_NULL, 1, 1);
                if (!n)
                        return -ENOMEM;
                text = "null";
                break;
        }
        if (text) {
                n->str = strdup(text);
                if (!n->str)
                        return -ENOMEM;
                n->str_len = strlen(text);
        }
        *ret = TAKE_PTR(n);
        return 0;
}

static int parse_json(Parser *p, const char *buf, size_t size, YamlNode ***ret_docs,
                      size_t *ret_n) {
        json_error_t err;
        _cleanup_json_ json_t *j = json_loadb(buf, size, JSON_REJECT_DUPLICATES, &err);
        YamlNode *root = NULL;
        int r;

        if (!j && json_error_code(&err) == json_error_out_of_memory)
                return -ENOMEM;
        if (!j)
                return parser_error(p, -EINVAL, err.line > 0 ? (unsigned)err.line : 0,
                                    err.column > 0 ? (unsigned)err.column : 0, "%s", err.text);
        p->doc_nodes = 0;
        r = json_to_node(p, j, 0, &root);
        if (r < 0)
                return r;
        YamlNode **docs = malloc(sizeof(YamlNode *));
        if (!docs) {
                yaml_node_unref(root);
                return -ENOMEM;
        }
        docs[0] = root;
        *ret_docs = docs;
        *ret_n = 1;
        return 0;
}

int yaml_parse_documents(const char *buf, size_t size, const char *filename,
                         const YamlLimits *limits, YamlNode ***ret_docs, size_t *ret_n,
                         Diagnostics *diag) {
        _cleanup_diagnostics_ Diagnostics yaml_diag = {};
        Parser p = {
                .file = filename,
                .diag = &yaml_diag,
        };
        YamlNode **docs = NULL;
        size_t n = 0;
        bool syntax = false;
        int r;

        limits_fill(&p.limits, limits);
        p.input_size = size;
        p.max_input_bytes = expanded_bytes_limit(&p.limits, size);
        if (size > p.limits.max_input) {
                diagnostics_add(diag, DIAG_ERROR, filename, 0, 0, NULL,
                                "input is %zu bytes, more than the limit of %zu bytes", size,
                                p.limits.max_input);
                return -E2BIG;
        }

        r = parse_yaml(&p, buf, size, &docs, &n, &syntax);
        if (r < 0 && syntax && looks_like_json(buf, size)) {
                /* libyaml refuses some valid JSON (tab-indented lines). */
                _cleanup_diagnostics_ Diagnostics json_diag = {};
                p.diag = &json_diag;
                int k = parse_json(&p, buf, size, &docs, &n);
                if (k >= 0 || k == -ENOMEM)
                        r = k;
                p.diag = &yaml_diag;
        }
        free(p.stack);
        if (r == -ENOMEM)
                return r; /* whatever was found before is not the input's fault */
        if (r < 0) {
                diagnostics_merge(diag, &yaml_diag);
                if (r != -ENOMEM && !diagnostics_has_errors(&yaml_diag))
                        diagnostics_add(diag, DIAG_ERROR, filename, 0, 0, NULL,
                                        "cannot parse YAML: %s", strerror(-r));
                return r;
        }
        *ret_docs = docs;
        *ret_n = n;
        return 0;
}
