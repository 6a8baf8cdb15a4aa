/* The node's read-only endpoints (docs/api.md), on ApiServers: GET /pods, the
 * pods as a v1 PodList from the pod manager's memory, and GET /healthz, the
 * sync loop's heartbeat. Nothing here writes, execs or attaches. */
#pragma once

#include <stdbool.h>

#include "api-server.h"
#include "metrics.h"
#include "pod-manager.h"

typedef struct ApiNodeContext {
        Event *event;
        PodManager *pod_manager;     /* not owned */
        Metrics *metrics;            /* /metrics; not owned, NULL: 404 */
        Metrics *probe_metrics;      /* /metrics/probes; not owned, NULL: 404 */
        Metrics *resource_metrics;   /* /metrics/resource; not owned, NULL: 404 */
        Metrics *kube_state_metrics; /* /metrics/pods; not owned, NULL: 404 */
} ApiNodeContext;

/* /healthz, and /pods and the /metrics paths too when with_pods.
 * ctx must outlive s. */
int api_node_add_routes(ApiServer *s, ApiNodeContext *ctx, bool with_pods);

/* The health rule: the relist ran within 2 × period of now (all
 * CLOCK_MONOTONIC; last_relist 0 = not started). 0 when healthy, else -EAGAIN
 * and, when ret_reason is not NULL, a malloc'd sentence such as "sync loop
 * last ran 4.9s ago, limit 2s" (-ENOMEM when that cannot be made). */
int api_node_check_sync_loop(usec_t last_relist, usec_t now, usec_t period, char **ret_reason);
