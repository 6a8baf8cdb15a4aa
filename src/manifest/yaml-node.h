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
        /* Always a scalar node; key->str holds its text. Keys that YAML types
         * as bool/int/float/null are turned into STRING keys spelled as
         * Kubernetes' YAML-to-JSON conversion does ("yes" -> "true",
         * "0x10" -> "16", "~" -> "null"), so lookups see what Kubernetes sees.
         * Merge keys ("<<") are resolved: merged pairs appear after the
         * map's own pairs and never override them. */
        YamlNode *key;
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
        size_t n;      /* number of pairs or items */
        unsigned refs; /* aliases share nodes */
        /* Set by the parser: nodes in this subtree with aliases expanded
         * (itself included), and nesting height (0 for scalars). They bound
         * the work and recursion depth of anyone walking the tree. */
        size_t expanded;
        size_t expanded_bytes; /* scalar text in this subtree, aliases expanded */
        unsigned height;
};

typedef struct YamlLimits {
        size_t max_input;       /* bytes; default 10 MiB */
        unsigned max_depth;     /* default 64 */
        size_t max_scalar;      /* bytes per scalar; default 1 MiB */
        size_t max_nodes;       /* nodes in one document after alias expansion; default 1,000,000 */
        unsigned max_documents; /* default 1000 */
        /* Scalar text of the whole input with aliases expanded, which is what
         * anyone copying the tree (canonical JSON, the pod decoder) pays for:
         * at most max_expanded_ratio times the input size, but never less than
         * min_expanded_bytes nor more than max_expanded_bytes. Counting nodes
         * alone is not enough: one 1 MiB scalar behind 2000 aliases is 2000
         * nodes but 2 GiB of text. go-yaml v3 bounds the same thing by the
         * share of decode work done through aliases; nanolet bounds bytes. */
        size_t max_expanded_ratio; /* default 10 */
        size_t min_expanded_bytes; /* default 1 MiB */
        size_t max_expanded_bytes; /* default 64 MiB */
} YamlLimits;

void yaml_limits_default(YamlLimits *l);

/* Parsing follows Kubernetes' decoder (go-yaml v2, YAML 1.1 flavour): plain
 * true/false/yes/no/on/off/y/n (and their Title/UPPER forms) are BOOL;
 * null/Null/NULL/~/empty are NULL; Go-syntax integers (1_000, 0x1f, 0o17,
 * 017, 0b101) are INT; other numbers and .inf/.nan are FLOAT; everything
 * else, and every quoted or block scalar, is STRING. Core tags (!!str,
 * !!int, !!float, !!bool, !!null, !!map, !!seq, !!timestamp, "!") are
 * honoured; any other tag is an error. Duplicate map keys are errors.
 * Zeroed fields of limits (or limits == NULL) take the defaults.
 * If libyaml refuses input that is valid JSON (tabs before a line, which
 * YAML forbids), the input is parsed as JSON with jansson instead; those
 * nodes all carry line 1, column 1 since jansson keeps no positions. */

/* Parses every document of buf. On a syntax error or exceeded limit returns
 * -EINVAL (or -E2BIG for limits; -ENOMEM when memory ran out, without a
 * diagnostic) with a diagnostic naming file:line and
 * starting its message with "column N: " (path NULL);
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
/* Shortest text that reads back as the same double ("0.1", "1e+30"; "inf"
 * and "nan" are spelled ".inf", "-.inf", ".nan"). buf holds 32 bytes. */
const char *yaml_format_float(double f, char buf[static 32]);
