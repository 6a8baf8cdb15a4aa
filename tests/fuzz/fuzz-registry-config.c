/* libFuzzer target: registries.conf parsing, then endpoint resolution for a
 * few repositories, on arbitrary bytes. Every endpoint must have a non-empty
 * host and path (the pull builds URLs from them). */
#include <stdint.h>
#include <stdlib.h>

#include "registry-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        RegistryConfig c = {};
        if (registry_config_parse((const char *)data, size, "fuzz.conf", &c, NULL) < 0)
                return 0;
        static const char *const repos[] = { "docker.io/library/busybox", "registry.k8s.io/pause",
                                             "localhost:1/x", "a.corp.example/b/c" };
        for (size_t i = 0; i < sizeof(repos) / sizeof(repos[0]); i++)
                for (int d = 0; d < 2; d++) {
                        RegistryEndpoint *e = NULL;
                        size_t n = 0;
                        if (registry_config_endpoints(&c, repos[i], d, &e, &n, NULL) < 0)
                                continue;
                        if (n == 0)
                                abort();
                        for (size_t k = 0; k < n; k++)
                                if (!e[k].host[0] || !e[k].path[0])
                                        abort();
                        registry_endpoints_free(e, n);
                }
        (void)registry_config_add_insecure(&c, "127.0.0.1:5000");
        registry_config_done(&c);
        return 0;
}
