#include "api-stats.h"

static int on_stats_summary(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        PodManager *m = userdata;

        resp->content_type = "application/json";
        return pod_manager_stats_summary_json(m, &resp->body, &resp->body_size);
}

int api_stats_add_routes(ApiServer *s, PodManager *m) {
        if (!m)
                return 0;
        return api_server_add_route(s, "/stats/summary", on_stats_summary, m);
}
