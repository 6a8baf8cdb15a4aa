#include "node-json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "string-util.h"

/* The string as JSON takes it: bytes that are no UTF-8 become U+FFFD
 * rather than fail the whole document. */
static json_t *text(const char *s) {
        _cleanup_free_ char *valid = utf8_make_valid(s ? s : "", s ? strlen(s) : 0);
        return valid ? json_string(valid) : NULL;
}

/* Quantities are strings, as in a Node's status ("100m", "1073741824"). */
static json_t *quantity(int64_t v, const char *unit) {
        char buf[32];
        (void)snprintf(buf, sizeof buf, "%" PRId64 "%s", v, unit);
        return json_string(buf);
}

static json_t *resources(int64_t milli_cpu, int64_t memory, int64_t pods) {
        return json_pack("{s:o, s:o, s:o}", "cpu", quantity(milli_cpu, "m"), "memory",
                         quantity(memory, ""), "pods", quantity(pods, ""));
}

int node_json_format(const NodeResources *n, char **ret) {
        /* "o" steals each reference, also when the pack fails */
        _cleanup_json_ json_t *doc = json_pack(
                "{s:o, s:o, s:o, s:o, s:o}", "name", text(n->name), "capacity",
                resources(n->capacity_milli_cpu, n->capacity_memory, n->max_pods), "allocatable",
                resources(n->allocatable_milli_cpu, n->allocatable_memory, n->max_pods),
                "cgroupDriver", text(n->cgroup_driver), "cgroupRoot", text(n->cgroup_root));
        if (!doc)
                return -ENOMEM;
        _cleanup_free_ char *s = json_dumps(doc, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        char *line = strprintf("%s\n", s);
        if (!line)
                return -ENOMEM;
        *ret = line;
        return 0;
}
