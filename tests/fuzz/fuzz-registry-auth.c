/* libFuzzer target: WWW-Authenticate parsing and docker credential
 * documents (config.json lookup, Secret data of both types) on arbitrary
 * bytes. Any crash, leak or sanitizer report is a bug; a credential found
 * must be two NUL-free strings. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry-auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *)data;
        RegistryChallenge *c = NULL;
        size_t n = 0;
        if (registry_challenges_parse(s, size, &c, &n, NULL) >= 0) {
                for (size_t i = 0; i < n; i++)
                        if (!c[i].scheme || !c[i].scheme[0])
                                abort();
                (void)registry_challenge_find(c, n, "bearer");
                registry_challenges_free(c, n);
        }
        static const char *const hosts[] = { "docker.io", "r.example:5000", "h" };
        for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
                char *u = NULL, *p = NULL;
                if (registry_auth_lookup(s, size, hosts[i], &u, &p, NULL) > 0) {
                        if (!u || !p)
                                abort();
                        free(u);
                        free(p);
                }
        }
        static const char *const types[] = { "kubernetes.io/dockerconfigjson",
                                             "kubernetes.io/dockercfg" };
        for (size_t i = 0; i < 2; i++) {
                char *json = NULL, *u = NULL, *p = NULL;
                if (registry_secret_to_config(types[i], s, size, &json, NULL) < 0)
                        continue;
                if (registry_auth_lookup(json, strlen(json), "docker.io", &u, &p, NULL) > 0) {
                        free(u);
                        free(p);
                }
                free(json);
        }
        char *out = NULL;
        if (registry_base64_decode(s, size, &out, NULL) >= 0)
                free(out);
        return 0;
}
