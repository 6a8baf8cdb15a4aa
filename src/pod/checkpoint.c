#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "string-util.h"

void pod_checkpoint_done(PodCheckpoint *c) {
        free(c->uid);
        free(c->name);
        free(c->namespace);
        free(c->source);
        free(c->origin);
        json_decref(c->manifest);
        json_decref(c->restart_counts);
        *c = (PodCheckpoint){};
}

int pod_checkpoint_write(const char *pod_dir, const PodCheckpoint *c) {
        /* "o" steals a reference: pass our own, new or taken. */
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "uid", c->uid, "name",
                              c->name, "namespace", c->namespace, "source", c->source, "origin",
                              c->origin, "manifest",
                              c->manifest ? json_incref(c->manifest) : json_null(),
                              "restartCounts",
                              c->restart_counts ? json_incref(c->restart_counts) : json_object());
        if (!o)
                return -ENOMEM;
        _cleanup_free_ char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(o);
        _cleanup_free_ char *path = strprintf("%s/pod.json", pod_dir);
        if (!text || !path)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0600);
}

static int dup_string(json_t *o, const char *key, char **ret) {
        const char *s = json_string_value(json_object_get(o, key));
        if (!s)
                return -EINVAL;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int pod_checkpoint_read(const char *pod_dir, PodCheckpoint *ret) {
        _cleanup_free_ char *path = strprintf("%s/pod.json", pod_dir);
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_full_file_at(AT_FDCWD, path, 16 * 1024 * 1024, &text, &size);
        if (r < 0)
                return r;
        json_t *o = json_loadb(text, size, 0, NULL);
        if (!json_is_object(o)) {
                json_decref(o);
                return -EINVAL;
        }
        PodCheckpoint c = {};
        if ((r = dup_string(o, "uid", &c.uid)) < 0 || (r = dup_string(o, "name", &c.name)) < 0 ||
            (r = dup_string(o, "namespace", &c.namespace)) < 0 ||
            (r = dup_string(o, "source", &c.source)) < 0 ||
            (r = dup_string(o, "origin", &c.origin)) < 0) {
                pod_checkpoint_done(&c);
                json_decref(o);
                return r;
        }
        c.manifest = json_incref(json_object_get(o, "manifest"));
        c.restart_counts = json_incref(json_object_get(o, "restartCounts"));
        if (!json_is_object(c.restart_counts)) {
                json_decref(c.restart_counts);
                c.restart_counts = json_object();
        }
        json_decref(o);
        *ret = c;
        return 0;
}
