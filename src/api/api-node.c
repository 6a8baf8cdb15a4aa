/* kubelet answers /healthz with "ok"; its sync loop check fails after
 * 2 × the resync period. nanolet's loop beats every relist period (1 s), so
 * a wedged loop shows within seconds, and the answer says how late it is. */
#include "api-node.h"

#include <errno.h>
#include <stdlib.h>

#include "string-util.h"

int api_node_check_sync_loop(usec_t last_relist, usec_t now, usec_t period, char **ret_reason) {
        usec_t limit = 2 * period;
        char *reason;

        if (last_relist > 0 && now <= last_relist + limit)
                return 0;
        if (!ret_reason)
                return -EAGAIN;
        if (last_relist == 0)
                reason = strdup("sync loop has not started");
        else {
                usec_t ago = now - last_relist;
                reason =
                        strprintf("sync loop last ran %llu.%01llus ago, limit %llu.%01llus",
                                  (unsigned long long)(ago / USEC_PER_SEC),
                                  (unsigned long long)(ago % USEC_PER_SEC / (USEC_PER_SEC / 10)),
                                  (unsigned long long)(limit / USEC_PER_SEC),
                                  (unsigned long long)(limit % USEC_PER_SEC / (USEC_PER_SEC / 10)));
        }
        if (!reason)
                return -ENOMEM;
        *ret_reason = reason;
        return -EAGAIN;
}

static int on_healthz(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        ApiNodeContext *ctx = userdata;
        _cleanup_free_ char *reason = NULL;

        if (!ctx->pod_manager)
                return api_response_printf(resp, "ok");
        /* event_now(): when this iteration's wait ended, so a request that
         * waited through a stall is judged against the stall. */
        int r = api_node_check_sync_loop(pod_manager_last_relist(ctx->pod_manager),
                                         event_now(ctx->event), POD_MANAGER_RELIST_PERIOD_USEC,
                                         &reason);
        if (r == -ENOMEM)
                return r;
        if (r >= 0)
                return api_response_printf(resp, "ok");
        resp->status = 500;
        return api_response_printf(resp, "syncloop failed: %s\n", reason);
}

static int on_pods(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        ApiNodeContext *ctx = userdata;
        int r;

        resp->content_type = "application/json";
        if (!ctx->pod_manager)
                return api_response_printf(resp, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
                                                 "\"metadata\":{},\"items\":[]}\n");
        r = pod_manager_pod_list_json(ctx->pod_manager, &resp->body, &resp->body_size);
        return r < 0 ? r : 0;
}

/* Prometheus' text format, version 0.0.4, as kubelet serves it. */
static int serve_metrics(Metrics *m, ApiResponse *resp) {
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
        return metrics_format(m, &resp->body, &resp->body_size);
}

static int on_metrics(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        return serve_metrics(((ApiNodeContext *)userdata)->metrics, resp);
}

static int on_probe_metrics(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        return serve_metrics(((ApiNodeContext *)userdata)->probe_metrics, resp);
}

static int on_resource_metrics(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        return serve_metrics(((ApiNodeContext *)userdata)->resource_metrics, resp);
}

static int on_kube_state_metrics(const ApiRequest *req, ApiResponse *resp, void *userdata) {
        return serve_metrics(((ApiNodeContext *)userdata)->kube_state_metrics, resp);
}

int api_node_add_routes(ApiServer *s, ApiNodeContext *ctx, bool with_pods) {
        int r = api_server_add_route(s, "/healthz", on_healthz, ctx);
        if (r >= 0 && with_pods)
                r = api_server_add_route(s, "/pods", on_pods, ctx);
        if (r >= 0 && with_pods && ctx->metrics)
                r = api_server_add_route(s, "/metrics", on_metrics, ctx);
        if (r >= 0 && with_pods && ctx->probe_metrics)
                r = api_server_add_route(s, "/metrics/probes", on_probe_metrics, ctx);
        if (r >= 0 && with_pods && ctx->resource_metrics)
                r = api_server_add_route(s, "/metrics/resource", on_resource_metrics, ctx);
        if (r >= 0 && with_pods && ctx->kube_state_metrics)
                r = api_server_add_route(s, "/metrics/pods", on_kube_state_metrics, ctx);
        return r;
}
