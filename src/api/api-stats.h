/* GET /stats/summary (docs/api.md): kubelet's Summary API, on the read-only
 * listener only. The handler answers from pod_manager_stats_summary_json(),
 * which reads small cgroup and proc files and statfs() on the loop and never
 * waits for anything else. */
#pragma once

#include "api-server.h"
#include "pod-manager.h"

/* Adds the route to s (the read-only listener). Without a pod manager (m
 * NULL) there is nothing to summarize: no route, a 404. m must outlive s. */
int api_stats_add_routes(ApiServer *s, PodManager *m);
