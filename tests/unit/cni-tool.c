/* Test helper for tests/integration/test-cni.sh: drives the src/network API
 * (ADD/DEL/CHECK) on an event loop, like the pod worker will.
 *   cni-tool add|del|check CONF_DIR CACHE_DIR BIN_DIRS CONTAINER_ID NETNS
 * add prints the pod IPs, one a line. Exit 0 on success, 1 with the error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"
#include "strv.h"

static int result = -1;

static void on_done(CniRunner *runner, int r, CniResult *res, const CniError *err, void *userdata) {
        Event *e = userdata;
        if (r < 0) {
                char *m = cni_error_to_string(err);
                fprintf(stderr, "cni-tool: %s\n", m ? m : "error");
                free(m);
        } else if (res) {
                char **ips = NULL;
                if (cni_result_pod_ips(res, &ips) >= 0)
                        STRV_FOREACH(ip, ips)
                                printf("%s\n", *ip);
                strv_free(ips);
        }
        cni_result_free(res);
        result = r < 0 ? 1 : 0;
        (void)event_exit(e, 0);
}

int main(int argc, char **argv) {
        if (argc != 7) {
                fprintf(stderr,
                        "usage: cni-tool add|del|check CONF_DIR CACHE_DIR BIN_DIRS ID NETNS\n");
                return 2;
        }
        Event *e = NULL;
        CniRunner *runner = NULL;
        CniConfig *config = NULL;
        CniError err = {};
        int r = cni_config_load(argv[2], NULL, &config, &err);
        if (r < 0) {
                fprintf(stderr, "cni-tool: %s\n", err.base.message);
                return 1;
        }
        CniRunnerOptions o = { .bin_dirs = argv[4],
                               .cache_dir = argv[3],
                               .plugin_timeout = 30 * USEC_PER_SEC };
        if (event_new(&e) < 0 || cni_runner_new(e, &o, &runner) < 0)
                return 1;
        CniRequest req = { .container_id = argv[5],
                           .netns = argv[6],
                           .pod_namespace = "default",
                           .pod_name = argv[5],
                           .pod_uid = argv[5] };
        if (strcmp(argv[1], "add") == 0)
                r = cni_add(runner, config, &req, on_done, e, NULL);
        else if (strcmp(argv[1], "del") == 0)
                r = cni_del(runner, config, &req, on_done, e, NULL);
        else
                r = cni_check(runner, NULL, &req, on_done, e, NULL);
        if (r < 0 || event_loop(e) < 0)
                result = 1;
        cni_runner_free(runner);
        cni_config_unref(config);
        event_free(e);
        return result < 0 ? 1 : result;
}
