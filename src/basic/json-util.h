/* Scope-bound release of jansson values. Header-only, so src/basic itself
 * does not link jansson: only modules that already depend on it include this. */
#pragma once

#include <errno.h>
#include <jansson.h>

#include "cleanup.h"
#include "error.h"
#include "fileio.h"

/* jansson (>= 2.9) provides json_decrefp(), the cleanup function behind its
 * json_auto_t; this is the one spelling nanolet uses for it. */
#define _cleanup_json_ _cleanup_(json_decrefp)

/* A JSON state file of the agent's (fileio.h, read_state_file_at()): read
 * without following a symlink, then parsed. Fails with err naming path and
 * the problem: those of read_state_file_at(), or -EBADMSG for a syntax error
 * (with its line and column), duplicate keys (no writer of ours makes them)
 * or a document that is not an object (every state file is one). Members a
 * reader does not know are left to it: a newer version may add some. */
static inline int json_state_load_at(int dir_fd, const char *path, size_t max_size, json_t **ret,
                                     Error *err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        json_error_t jerr;

        int r = read_state_file_at(dir_fd, path, max_size, &data, &size, err);
        if (r < 0)
                return r;
        json_t *j = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!j)
                return error_set(err, -EBADMSG, "\"%s\" is not valid JSON: line %d column %d: %s",
                                 path, jerr.line, jerr.column, jerr.text);
        if (!json_is_object(j)) {
                json_decref(j);
                return error_set(err, -EBADMSG, "\"%s\" is not a JSON object", path);
        }
        *ret = j;
        return 0;
}
