/* libFuzzer target: the layer path checks. The input is used as one entry
 * path and as a tar stream whose entry paths and link targets go through
 * image_tar_path_normalize(); any normalised path that is absolute or
 * contains a ".." component is a bug (abort). Also image references. */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image-layer.h"
#include "image-ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const char *p) {
        char *out = NULL;
        Error err = {};
        if (!p || image_tar_path_normalize(p, 4096, &out, &err) < 0)
                return;
        if (out[0] == '/' || strcmp(out, "..") == 0 || strncmp(out, "../", 3) == 0 ||
            strstr(out, "/../") || (strlen(out) >= 3 && strcmp(out + strlen(out) - 3, "/..") == 0))
                abort();
        free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                return 0;
        memcpy(s, data, size);
        s[size] = 0;
        check(s);
        char *ref = NULL;
        if (image_ref_normalize(s, &ref, NULL) >= 0) {
                /* Normalisation is idempotent. */
                char *again = NULL;
                if (image_ref_normalize(ref, &again, NULL) < 0 || strcmp(ref, again) != 0)
                        abort();
                free(again);
        }
        free(ref);
        free(s);

        struct archive *a = archive_read_new();
        struct archive_entry *e;
        archive_read_support_format_tar(a);
        archive_read_support_filter_gzip(a);
        if (archive_read_open_memory(a, data, size) == ARCHIVE_OK)
                for (int n = 0; n < 1000 && archive_read_next_header(a, &e) >= ARCHIVE_WARN; n++) {
                        check(archive_entry_pathname(e));
                        check(archive_entry_hardlink(e));
                }
        archive_read_free(a);
        return 0;
}
