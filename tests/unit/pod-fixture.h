/* Shared by the pod unit tests: one manifest parsed as the file source
 * would parse it, failing the test (with every diagnostic printed) unless
 * it yields exactly one pod. Header-only; include after cmocka.h. */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "manifest.h"

static inline void pod_fixture_parse(const char *yaml, ManifestObject ***ret_objs, size_t *ret_n) {
        ManifestParseOptions o = {
                .filename = "t.yaml",
                .node_name = "node1",
                .source_id = "file:/x",
                .config_source = "file",
        };
        Diagnostics d;

        diagnostics_init(&d);
        int r = manifest_parse_buffer(yaml, strlen(yaml), &o, ret_objs, ret_n, &d);
        if (r < 0)
                for (size_t i = 0; i < d.n; i++) {
                        char *s = diag_to_string(&d.items[i]);
                        fprintf(stderr, "%s\n", s);
                        free(s);
                }
        diagnostics_deinit(&d);
        assert_int_equal(r, 0);
        assert_int_equal(*ret_n, 1);
}
