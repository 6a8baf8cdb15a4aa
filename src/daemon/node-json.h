/* <run-dir>/node.json, the node's capacity and allocatable as kubelet's
 * Node status shows them, for `nanolet node`. */
#pragma once

#include <stdint.h>

typedef struct NodeResources {
        const char *name;
        int64_t capacity_milli_cpu, capacity_memory;
        int64_t allocatable_milli_cpu, allocatable_memory;
        int64_t max_pods;
        const char *cgroup_driver;
        const char *cgroup_root;
} NodeResources;

/* The document, one line with a final newline. Every string is escaped as
 * JSON requires, whatever bytes it holds. -ENOMEM. */
int node_json_format(const NodeResources *n, char **ret);
