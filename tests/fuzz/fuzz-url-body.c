/* libFuzzer target: what the URL source makes of a fetched body
 * (url_source_parse_body(): the manifest pipeline as source "http", with the
 * empty-body rule and the body limit). A rejected body must come with an
 * error for the log and the origin; an accepted one with objects that carry
 * a name and UID. */
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "source.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const UrlSourceOptions opts = {
                .url = "http://127.0.0.1:8080/pods",
                .node_name = "node1",
        };
        ManifestObject **objs = NULL;
        size_t n = 0;
        Diagnostics diag;

        diagnostics_init(&diag);
        if (url_source_parse_body(&opts, (const char *)data, size, 1700000000000000ULL, &objs, &n,
                                  &diag) >= 0) {
                for (size_t i = 0; i < n; i++)
                        if (objs[i]->name[0] == '\0' || objs[i]->uid[0] == '\0')
                                __builtin_trap();
                manifest_objects_free(objs, n);
        } else if (diag.n_errors == 0)
                __builtin_trap();
        diagnostics_deinit(&diag);
        return 0;
}
