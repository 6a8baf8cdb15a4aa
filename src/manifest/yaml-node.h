/* Generic document tree built from libyaml events, with the limits that
 * make hostile input cheap to refuse: total size, nesting depth, scalar
 * length and alias expansion (aliases are expanded by reference counting
 * nodes visited, so a billion-laughs document fails in milliseconds).
 * Every node keeps its line and column for diagnostics. JSON input is
 * parsed by the same path (JSON is YAML flow style). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diag.h"

typedef enum YamlNodeType {
        YAML_NODE_NULL,
        YAML_NODE_BOOL,
        YAML_NODE_INT,
        YAML_NODE_FLOAT,
        YAML_NODE_STRING,
        YAML_NODE_MAP,
        YAML_NODE_SEQ,
} YamlNodeType;

typedef struct YamlNode YamlNode;

typedef struct YamlPair {
        YamlNode *key; /* always a scalar node; key->str holds its text */
        YamlNode *value;
} YamlPair;

struct YamlNode {
        YamlNodeType type;
        unsigned line, column; /* 1-based */
        /* Scalars: the text as written (after unquoting), for every scalar
         * type, so "0755" or "1.0" keep their spelling. */
        char *str;
        size_t str_len;
        bool quoted; /* the scalar was single/double quoted or a block scalar */
        union {
                bool b;
                int64_t i;
                double f;
        };
        /* Maps: pairs in document order. Sequences: items. */
        YamlPair *pairs;
        YamlNode **items;
        size_t n; /* number of pairs or items */
        unsigned refs; /* aliases share nodes */
};

typedef struct YamlLimits {
        size_t max_input;        /* bytes; default 10 MiB */
        unsigned max_depth;      /* default 64 */
        size_t max_scalar;       /* bytes per scalar; default 1 MiB */
        size_t max_nodes;        /* nodes in one document after alias expansion; default 1,000,000 */
        unsigned max_documents;  /* default 1000 */
} YamlLimits;

void yaml_limits_default(YamlLimits *l);

/* Parses every document of buf. On a syntax error or exceeded limit returns
 * -EINVAL (or -E2BIG for limits) with a diagnostic naming file:line:column;
 * no partial result is returned. Empty documents (only comments) are
 * skipped. The caller frees the array with yaml_documents_free(). */
int yaml_parse_documents(const char *buf, size_t size, const char *filename,
                         const YamlLimits *limits, YamlNode ***ret_docs, size_t *ret_n,
                         Diagnostics *diag);
void yaml_documents_free(YamlNode **docs, size_t n);

YamlNode *yaml_node_ref(YamlNode *n);
YamlNode *yaml_node_unref(YamlNode *n);

/* Map lookup by key; NULL when absent or when map is not a map. */
YamlNode *yaml_map_get(const YamlNode *map, const char *key);
const char *yaml_node_type_to_string(YamlNodeType t);
/* True if the node is a scalar (not map/seq). */
bool yaml_node_is_scalar(const YamlNode *n);
