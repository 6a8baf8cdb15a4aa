/* The generation state file (manifest-generation.h). */
#include "manifest-generation.h"

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "string-util.h"

#define MANIFEST_GENERATION_MAX_SIZE 4096
#define MANIFEST_GENERATION_VERSION 1

static int hex_decode(const char *s, uint8_t *out, size_t n) {
        if (!s || strlen(s) != 2 * n)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                unsigned v = 0;
                for (size_t k = 0; k < 2; k++) {
                        char c = s[2 * i + k];
                        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                                                            : 16;
                        if (d > 15)
                                return -EINVAL;
                        v = v * 16 + d;
                }
                out[i] = (uint8_t)v;
        }
        return 0;
}

int manifest_generation_load(const char *path, const char *url, ManifestGenerationRecord *ret,
                             Error *err) {
        assert(path && url && ret);
        _cleanup_json_ json_t *j = NULL;
        Error e = {};
        int r = json_state_load_at(AT_FDCWD, path, MANIFEST_GENERATION_MAX_SIZE, &j, &e);
        if (r == -ENOENT) {
                *ret = (ManifestGenerationRecord){};
                return 0;
        }
        if (r < 0)
                return error_set(err, r, "%s", e.message);
        json_t *version = json_object_get(j, "version");
        if (!json_is_integer(version) || json_integer_value(version) != MANIFEST_GENERATION_VERSION)
                return error_set(err, -EPROTO, "\"%s\" is not version %d of the record", path,
                                 MANIFEST_GENERATION_VERSION);
        const char *u = json_string_value(json_object_get(j, "url"));
        const char *gen = json_string_value(json_object_get(j, "generation"));
        const char *sha = json_string_value(json_object_get(j, "sha256"));
        ManifestGenerationRecord rec = { .have = true };
        char *end = NULL;
        if (!u || !gen || gen[0] < '0' || gen[0] > '9' || strlen(gen) > 19 ||
            (errno = 0, rec.generation = strtoull(gen, &end, 10), errno != 0 || *end) ||
            hex_decode(sha, rec.sha256, sizeof rec.sha256) < 0)
                return error_set(err, -EBADMSG, "\"%s\" lacks a valid url, generation or sha256",
                                 path);
        if (!streq(u, url)) {
                *ret = (ManifestGenerationRecord){};
                return 0;
        }
        *ret = rec;
        return 0;
}

int manifest_generation_store(const char *path, const char *url,
                              const ManifestGenerationRecord *rec, Error *err) {
        assert(path && url && rec && rec->have);
        char gen[32], sha[65];
        snprintf(gen, sizeof gen, "%" PRIu64, rec->generation);
        for (size_t i = 0; i < sizeof rec->sha256; i++)
                snprintf(sha + 2 * i, 3, "%02x", rec->sha256[i]);
        _cleanup_json_ json_t *j =
                json_pack("{s:i, s:s, s:s, s:s}", "version", MANIFEST_GENERATION_VERSION, "url",
                          url, "generation", gen, "sha256", sha);
        if (!j)
                return error_set(err, -ENOMEM, "out of memory");
        _cleanup_free_ char *data = json_dumps(j, JSON_COMPACT);
        if (!data)
                return error_set(err, -ENOMEM, "out of memory");
        /* The rename replaces whatever is at path (a planted symlink
         * included) and never writes through it. */
        int r = write_file_atomic(path, data, strlen(data), 0600);
        if (r < 0)
                return error_set(err, r, "cannot write \"%s\": %s", path, strerror(-r));
        return 0;
}
