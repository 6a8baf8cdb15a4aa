/* libFuzzer target: the whole manifest pipeline (YAML/JSON -> Pod model,
 * defaults, validation, identity) on arbitrary bytes. Any crash, leak,
 * sanitizer report or runaway allocation is a bug; rejecting the input is
 * the expected outcome for most of them. */
#include <stddef.h>
#include <stdint.h>

#include "diag.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const ManifestParseOptions opts = {
                .filename = "fuzz.yaml",
                .node_name = "node1",
                .source_id = "file:/etc/kubernetes/manifests/fuzz.yaml",
                .config_source = "file",
                .seen = 1700000000000000ULL,
        };
        ManifestObject **objs = NULL;
        size_t n = 0;
        Diagnostics diag;

        diagnostics_init(&diag);
        if (manifest_parse_buffer((const char *)data, size, &opts, &objs, &n, &diag) >= 0) {
                /* Touch what callers use, so the sanitizers see it. */
                for (size_t i = 0; i < n; i++)
                        if (objs[i]->name[0] == '\0' || objs[i]->uid[0] == '\0')
                                __builtin_trap();
                manifest_objects_free(objs, n);
        }
        diagnostics_deinit(&diag);
        return 0;
}
