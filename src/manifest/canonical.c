/* The canonical form of a document, the input of a pod's identity.
 *
 * Compact JSON (no whitespace) with object keys sorted bytewise
 * (JSON_SORT_KEYS) and every non-ASCII character escaped as \uXXXX
 * (JSON_ENSURE_ASCII), so the bytes depend only on the values, never on how
 * the YAML was written. Values:
 *   - strings as strings, bools and null as themselves;
 *   - integers as integers;
 *   - floats whose value is integral and within +-2^53 as integers (1.0 and
 *     1 are the same number to Kubernetes' JSON), other finite floats with
 *     17 significant digits (jansson's default, stable for a given double);
 *   - .inf/-.inf/.nan, which JSON cannot hold, as the strings ".inf",
 *     "-.inf" and ".nan";
 *   - aliases expanded (a shared node is written at every place it is used;
 *     the parser bounded the expanded size and depth already).
 * Changing any of these rules changes every static pod's UID: don't. */
#include "manifest.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "json-util.h"

/* jansson returns NULL both for text that is not UTF-8 and when it runs out
 * of memory; only the first is the document's fault. */
static bool utf8_valid(const char *s, size_t len) {
        const unsigned char *p = (const unsigned char *)s, *end = p + len;

        while (p < end) {
                unsigned char c = *p++;
                size_t more;
                uint32_t cp;
                if (c < 0x80)
                        continue;
                if (c >= 0xc2 && c <= 0xdf)
                        more = 1, cp = c & 0x1f;
                else if (c >= 0xe0 && c <= 0xef)
                        more = 2, cp = c & 0x0f;
                else if (c >= 0xf0 && c <= 0xf4)
                        more = 3, cp = c & 0x07;
                else
                        return false;
                if ((size_t)(end - p) < more)
                        return false;
                for (size_t i = 0; i < more; i++, p++) {
                        if ((*p & 0xc0) != 0x80)
                                return false;
                        cp = cp << 6 | (*p & 0x3f);
                }
                if ((more == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
                    (more == 3 && (cp < 0x10000 || cp > 0x10ffff)))
                        return false;
        }
        return true;
}

static int jansson_failure(const char *s, size_t len) {
        return utf8_valid(s, len) ? -ENOMEM : -EINVAL;
}

static int node_to_json(const YamlNode *n, json_t **ret) {
        _cleanup_json_ json_t *j = NULL;
        int r;

        switch (n->type) {
        case YAML_NODE_NULL:
                j = json_null();
                break;
        case YAML_NODE_BOOL:
                j = json_boolean(n->b);
                break;
        case YAML_NODE_INT:
                j = json_integer(n->i);
                break;
        case YAML_NODE_FLOAT:
                if (isnan(n->f))
                        j = json_string(".nan");
                else if (isinf(n->f))
                        j = json_string(n->f > 0 ? ".inf" : "-.inf");
                else if (n->f == floor(n->f) && fabs(n->f) <= 9007199254740992.0)
                        j = json_integer((json_int_t)n->f);
                else
                        j = json_real(n->f);
                break;
        case YAML_NODE_STRING:
                j = json_stringn(n->str ? n->str : "", n->str ? n->str_len : 0);
                if (!j)
                        return jansson_failure(n->str ? n->str : "", n->str ? n->str_len : 0);
                break;
        case YAML_NODE_SEQ:
                j = json_array();
                if (!j)
                        return -ENOMEM;
                for (size_t i = 0; i < n->n; i++) {
                        json_t *item = NULL;
                        r = node_to_json(n->items[i], &item);
                        if (r < 0)
                                return r;
                        if (json_array_append_new(j, item) < 0)
                                return -ENOMEM;
                }
                break;
        case YAML_NODE_MAP:
                j = json_object();
                if (!j)
                        return -ENOMEM;
                for (size_t i = 0; i < n->n; i++) {
                        const YamlNode *k = n->pairs[i].key;
                        json_t *value = NULL;
                        r = node_to_json(n->pairs[i].value, &value);
                        if (r < 0)
                                return r;
                        if (json_object_setn_new(j, k->str ? k->str : "", k->str ? k->str_len : 0,
                                                 value) < 0)
                                return jansson_failure(k->str ? k->str : "",
                                                       k->str ? k->str_len : 0);
                }
                break;
        default:
                return -EINVAL;
        }
        if (!j)
                return -ENOMEM;
        *ret = TAKE_PTR(j);
        return 0;
}

int manifest_canonical_json(const YamlNode *doc, char **ret) {
        _cleanup_json_ json_t *j = NULL;
        char *s;
        int r;

        if (!doc)
                return -EINVAL;
        r = node_to_json(doc, &j);
        if (r < 0)
                return r;
        s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
