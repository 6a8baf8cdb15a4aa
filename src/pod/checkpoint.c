#include "checkpoint.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

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
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:I}", "uid", c->uid, "name",
                              c->name, "namespace", c->namespace, "source", c->source, "origin",
                              c->origin, "manifest",
                              c->manifest ? json_incref(c->manifest) : json_null(), "restartCounts",
                              c->restart_counts ? json_incref(c->restart_counts) : json_object(),
                              "startTime", (json_int_t)c->start_time);
        if (!o)
                return -ENOMEM;
        _cleanup_free_ char *text = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
        json_decref(o);
        _cleanup_free_ char *path = strprintf("%s/pod.json", pod_dir);
        if (!text || !path)
                return -ENOMEM;
        /* An adopting agent writes what it just read: no fsync for that. */
        int r = write_file_atomic_if_changed(path, text, strlen(text), 0600);
        return r < 0 ? r : 0;
}

static int dup_string(json_t *o, const char *key, char **ret) {
        const char *s = json_string_value(json_object_get(o, key));
        if (!s)
                return -EINVAL;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* A record file's JSON object: -ENOENT if absent, -EINVAL if unreadable, a
 * symlink or not an object (a torn or damaged file is refused, never
 * half-used). */
static int load_json_object(const char *path, size_t max_size, json_t **ret) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r = read_state_file_at(AT_FDCWD, path, max_size, &text, &size, NULL);
        if (r == -ENOENT || r == -ENOMEM)
                return r;
        json_t *o = r < 0 ? NULL : json_loadb(text, size, 0, NULL);
        if (!json_is_object(o)) {
                json_decref(o);
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

int pod_checkpoint_read(const char *pod_dir, PodCheckpoint *ret) {
        _cleanup_free_ char *path = strprintf("%s/pod.json", pod_dir);
        json_t *o;
        int r;

        if (!path)
                return -ENOMEM;
        r = load_json_object(path, 16 * 1024 * 1024, &o);
        if (r < 0)
                return r;
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
        json_int_t st = json_integer_value(json_object_get(o, "startTime"));
        c.start_time = st > 0 ? (usec_t)st : 0;
        c.restart_counts = json_incref(json_object_get(o, "restartCounts"));
        if (!json_is_object(c.restart_counts)) {
                json_decref(c.restart_counts);
                c.restart_counts = json_object();
        }
        json_decref(o);
        *ret = c;
        return 0;
}

int pod_checkpoint_parse(const PodCheckpoint *c, const char *node_name, usec_t seen,
                         ManifestObject **ret) {
        _cleanup_free_ char *text = NULL;
        ManifestObject **objs = NULL;
        size_t n = 0;
        Diagnostics diag;
        int r;

        if (!json_is_object(c->manifest) || !(text = json_dumps(c->manifest, JSON_COMPACT)))
                return -EINVAL;
        ManifestParseOptions po = {
                .filename = c->origin,
                .node_name = node_name,
                .source_id = c->origin,
                .config_source = c->source,
                .seen = seen,
        };
        diagnostics_init(&diag);
        r = manifest_parse_buffer(text, strlen(text), &po, &objs, &n, &diag);
        diagnostics_deinit(&diag);
        if (r < 0)
                return r;
        if (n != 1 || objs[0]->kind != MANIFEST_KIND_POD) {
                manifest_objects_free(objs, n);
                return -EINVAL;
        }
        _cleanup_manifest_object_unref_ ManifestObject *o = objs[0];
        free(objs);
        if (!streq(o->uid, c->uid)) {
                char *uid = strdup(c->uid);
                if (!uid)
                        return -ENOMEM;
                free(o->uid);
                o->uid = uid;
                r = pod_set_uid(o->pod, uid);
                if (r >= 0)
                        r = pod_set_annotation(o->pod, "kubernetes.io/config.hash", uid);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int pod_image_users(const Pod *pod, const char *user, ImageUsers *users) {
        const PodSpec *spec = &pod->spec;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < spec->n_init_containers; i++)
                r = image_users_add(users, spec->init_containers[i].image, user);
        for (size_t i = 0; r >= 0 && i < spec->n_containers; i++)
                r = image_users_add(users, spec->containers[i].image, user);
        for (size_t i = 0; r >= 0 && i < spec->n_volumes; i++)
                if (spec->volumes[i].type == VOLUME_IMAGE)
                        r = image_users_add(users, spec->volumes[i].image.reference, user);
        return r;
}

/* imageDigest of every attempt under <pod_dir>/containers/<name>/<n>/. */
static int pod_attempt_image_users(const char *pod_dir, const char *user, ImageUsers *users) {
        _cleanup_free_ char *cdir = strprintf("%s/containers", pod_dir);
        if (!cdir)
                return -ENOMEM;
        _cleanup_closedir_ DIR *d = opendir(cdir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *name_dir = strprintf("%s/%s", cdir, de->d_name);
                if (!name_dir)
                        return -ENOMEM;
                _cleanup_closedir_ DIR *a = opendir(name_dir);
                struct dirent *ae;
                while (a && (ae = readdir(a))) {
                        _cleanup_(attempt_record_done) AttemptRecord rec = { .exit_code = -1 };
                        if (ae->d_name[0] == '.')
                                continue;
                        _cleanup_free_ char *adir = strprintf("%s/%s", name_dir, ae->d_name);
                        if (!adir)
                                return -ENOMEM;
                        int r = attempt_record_read(adir, &rec);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                continue;
                        if (rec.image_digest &&
                            (r = image_users_add(users, rec.image_digest, user)) < 0)
                                return r;
                        STRV_FOREACH(vd, rec.image_volume_digests)
                                if ((r = image_users_add(users, *vd, user)) < 0)
                                        return r;
                }
        }
        return 0;
}

int pod_checkpoints_image_users(const char *pods_dir, ImageUsers *ret) {
        _cleanup_(image_users_done) ImageUsers users = {};
        _cleanup_closedir_ DIR *d = opendir(pods_dir);
        struct dirent *de;

        if (!d && errno != ENOENT)
                return -errno;
        while (d && (de = readdir(d))) {
                _cleanup_(pod_checkpoint_done) PodCheckpoint cp = {};
                _cleanup_manifest_object_unref_ ManifestObject *o = NULL;
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *dir = strprintf("%s/%s", pods_dir, de->d_name);
                if (!dir)
                        return -ENOMEM;
                /* The node name shapes only the name and UID, which come from the checkpoint. */
                int r = pod_checkpoint_read(dir, &cp);
                if (r >= 0)
                        r = pod_checkpoint_parse(&cp, "node", 0, &o);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        /* Its containers may still run (the agent adopts them
                         * once a manifest claims the pod): what their
                         * attempts were created from stays in use. */
                        if (r != -ENOENT)
                                log_warning_errno(r,
                                                  "Cannot read the checkpoint in \"%s\", "
                                                  "counting only its container attempts' "
                                                  "images: %m",
                                                  dir);
                        _cleanup_free_ char *user = strprintf("pod directory \"%s\"", de->d_name);
                        if (!user)
                                return -ENOMEM;
                        r = pod_attempt_image_users(dir, user, &users);
                        if (r < 0)
                                return r;
                        continue;
                }
                _cleanup_free_ char *user = strprintf("pod \"%s/%s\"", cp.namespace, cp.name);
                if (!user)
                        return -ENOMEM;
                r = pod_image_users(o->pod, user, &users);
                if (r >= 0)
                        r = pod_attempt_image_users(dir, user, &users);
                if (r < 0)
                        return r;
        }
        *ret = users;
        users = (ImageUsers){};
        return 0;
}

static int write_json_file(const char *path, json_t *o) {
        if (!o)
                return -ENOMEM;
        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(o);
        if (!text)
                return -ENOMEM;
        int r = write_file_atomic_if_changed(path, text, strlen(text), 0600);
        return r < 0 ? r : 0;
}

void attempt_record_done(AttemptRecord *r) {
        free(r->reason);
        free(r->message);
        free(r->image_digest);
        strv_free(r->image_volume_digests);
        *r = (AttemptRecord){ .exit_code = -1 };
}

int attempt_record_write(const char *attempt_dir, const AttemptRecord *r) {
        _cleanup_free_ char *path = strprintf("%s/attempt.json", attempt_dir);
        /* jansson refuses what is not UTF-8, and the message may come from a
         * file the container wrote: the exit code must be recorded anyway. */
        _cleanup_free_ char *reason =
                r->reason ? utf8_make_valid(r->reason, strlen(r->reason)) : NULL;
        _cleanup_free_ char *message =
                r->message ? utf8_make_valid(r->message, strlen(r->message)) : NULL;
        if (!path || (r->reason && !reason) || (r->message && !message))
                return -ENOMEM;
        json_t *vols = NULL;
        if (!r->image_volume_digests) {
                /* known at the attempt's start only: the later writes (its
                 * start, its exit) keep what the first one recorded */
                json_t *old = NULL;
                if (load_json_object(path, 1024 * 1024, &old) >= 0) {
                        vols = json_object_get(old, "imageVolumeDigests");
                        vols = json_is_array(vols) ? json_deep_copy(vols) : NULL;
                        json_decref(old);
                }
        } else {
                if (!(vols = json_array()))
                        return -ENOMEM;
                STRV_FOREACH(d, r->image_volume_digests)
                        if (json_array_append_new(vols, json_string(*d)) < 0) {
                                json_decref(vols);
                                return -ENOMEM;
                        }
        }
        /* "o?" steals vols, also when the pack fails */
        return write_json_file(path, json_pack("{s:I, s:I, s:i, s:s?, s:s?, s:s?, s:o?}",
                                               "startedAt", (json_int_t)r->started_at, "finishedAt",
                                               (json_int_t)r->finished_at, "exitCode", r->exit_code,
                                               "reason", reason, "message", message, "imageDigest",
                                               r->image_digest, "imageVolumeDigests", vols));
}

int attempt_record_read(const char *attempt_dir, AttemptRecord *ret) {
        _cleanup_free_ char *path = strprintf("%s/attempt.json", attempt_dir);
        json_t *o;
        if (!path)
                return -ENOMEM;
        int q = load_json_object(path, 1024 * 1024, &o);
        if (q < 0)
                return q;
        AttemptRecord r = { .exit_code = -1 };
        json_int_t v = json_integer_value(json_object_get(o, "startedAt"));
        r.started_at = v > 0 ? (usec_t)v : 0;
        v = json_integer_value(json_object_get(o, "finishedAt"));
        r.finished_at = v > 0 ? (usec_t)v : 0;
        json_t *code = json_object_get(o, "exitCode");
        r.exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
        const char *s = json_string_value(json_object_get(o, "reason"));
        const char *m = json_string_value(json_object_get(o, "message"));
        const char *d = json_string_value(json_object_get(o, "imageDigest"));
        r.reason = s ? strdup(s) : NULL;
        r.message = m ? strdup(m) : NULL;
        r.image_digest = d ? strdup(d) : NULL;
        bool oom = false;
        json_t *vols = json_object_get(o, "imageVolumeDigests"), *e;
        size_t i;
        json_array_foreach(vols, i, e) {
                const char *vd = json_string_value(e);
                if (vd && strv_extend(&r.image_volume_digests, vd) < 0)
                        oom = true;
        }
        json_decref(o);
        if ((s && !r.reason) || (m && !r.message) || (d && !r.image_digest) || oom) {
                attempt_record_done(&r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

void sandbox_record_done(SandboxRecord *r) {
        strv_free(r->pod_ips);
        *r = (SandboxRecord){};
}

int sandbox_record_write(const char *path, const SandboxRecord *r) {
        json_t *ips = json_array();
        if (!ips)
                return -ENOMEM;
        STRV_FOREACH(ip, r->pod_ips)
                if (json_array_append_new(ips, json_string(*ip)) < 0) {
                        json_decref(ips);
                        return -ENOMEM;
                }
        json_t *o = json_pack("{s:o, s:b}", "podIPs", ips, "network", r->network);
        if (o && r->tearing_down && json_object_set_new(o, "tearingDown", json_true()) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        return write_json_file(path, o);
}

int sandbox_record_read(const char *path, SandboxRecord *ret, Error *err) {
        _cleanup_json_ json_t *o = NULL;
        int q = json_state_load_at(AT_FDCWD, path, 1024 * 1024, &o, err);
        if (q < 0)
                return q;
        /* Both members, always written: without "network" a DEL owed to the
         * pod's network would be forgotten. */
        json_t *network = json_object_get(o, "network"), *ips = json_object_get(o, "podIPs");
        if (!json_is_boolean(network) || !json_is_array(ips))
                return error_set(err, -EBADMSG, "\"%s\" lacks \"network\" or \"podIPs\"", path);
        SandboxRecord r = { .network = json_is_true(network),
                            .tearing_down = json_is_true(json_object_get(o, "tearingDown")) };
        size_t i;
        json_t *ip;
        json_array_foreach(ips, i, ip) {
                const char *s = json_string_value(ip);
                unsigned char a[16];
                if (!s || (inet_pton(AF_INET, s, a) != 1 && inet_pton(AF_INET6, s, a) != 1)) {
                        sandbox_record_done(&r);
                        return error_set(err, -EBADMSG, "\"%s\": podIPs[%zu] is no IP address",
                                         path, i);
                }
                if (strv_extend(&r.pod_ips, s) < 0) {
                        sandbox_record_done(&r);
                        return -ENOMEM;
                }
        }
        *ret = r;
        return 0;
}
