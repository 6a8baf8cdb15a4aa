/* libFuzzer target: CNI plugin output (results and error objects) is
 * untrusted. Whatever the parser accepts must be self-consistent: interface
 * indexes in range, every address parseable again from the re-serialized
 * document, pod IPs derivable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cni.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *)data;
        CniResult *r = NULL;
        CniError err = {};

        if (cni_result_parse(s, size, &r, &err) >= 0) {
                for (size_t i = 0; i < r->n_ips; i++)
                        if (r->ips[i].interface >= (int)r->n_interfaces || !r->ips[i].address)
                                abort();
                char **ips = NULL;
                if (cni_result_pod_ips(r, &ips) >= 0 && strv_length(ips) > 2)
                        abort();
                strv_free(ips);
                CniResult *again = NULL;
                if (cni_result_parse(r->json, strlen(r->json), &again, NULL) < 0)
                        abort();
                if (again->n_ips != r->n_ips)
                        abort();
                cni_result_free(again);
                cni_result_free(r);
        }
        cni_error_done(&err);
        if (cni_error_parse(s, size, &err) >= 0) {
                char *m = cni_error_to_string(&err);
                free(m);
        }
        cni_error_done(&err);
        return 0;
}
