/* JSON parsers for OCI/docker image documents (jansson). Every field read
 * from an archive is type-checked; digests are validated here so the store
 * never builds a path from an unchecked string. */
#include "image-oci.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "image-ref.h"
#include "json-util.h"
#include "string-util.h"
#include "strv.h"

bool image_media_type_is_index(const char *mt) {
        return mt && (streq(mt, IMAGE_MT_OCI_INDEX) || streq(mt, IMAGE_MT_DOCKER_LIST));
}

bool image_media_type_is_manifest(const char *mt) {
        return mt && (streq(mt, IMAGE_MT_OCI_MANIFEST) || streq(mt, IMAGE_MT_DOCKER_MANIFEST));
}

static int json_parse(const char *what, const char *data, size_t size, json_t **ret, Error *err) {
        json_error_t jerr;
        if (size > IMAGE_JSON_MAX)
                return error_set(err, -EFBIG, "%s: larger than %u bytes", what, IMAGE_JSON_MAX);
        json_t *j = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!j)
                return error_set(err, -EBADMSG, "%s: invalid JSON at line %d: %s", what, jerr.line,
                                 jerr.text);
        *ret = j;
        return 0;
}

static int get_string(json_t *obj, const char *key, bool required, const char *what, char **ret,
                      Error *err) {
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v)) {
                if (required)
                        return error_set(err, -EBADMSG, "%s: missing \"%s\"", what, key);
                *ret = NULL;
                return 0;
        }
        if (!json_is_string(v))
                return error_set(err, -EBADMSG, "%s: \"%s\" is not a string", what, key);
        if (strlen(json_string_value(v)) != json_string_length(v))
                return error_set(err, -EBADMSG, "%s: \"%s\" contains a NUL byte", what, key);
        char *s = strdup(json_string_value(v));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int get_strv(json_t *obj, const char *key, const char *what, char ***ret, Error *err) {
        json_t *v = json_object_get(obj, key);
        _cleanup_strv_free_ char **l = NULL;
        size_t i;
        json_t *e;

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return error_set(err, -EBADMSG, "%s: \"%s\" is not an array", what, key);
        l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        json_array_foreach(v, i, e) {
                if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
                        return error_set(err, -EBADMSG, "%s: \"%s\"[%zu] is not a string", what,
                                         key, i);
                if (strv_extend(&l, json_string_value(e)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* Keys of an object ({"80/tcp": {}}), sorted. */
static int get_keys(json_t *obj, const char *key, const char *what, char ***ret, Error *err) {
        json_t *v = json_object_get(obj, key);
        _cleanup_strv_free_ char **l = NULL;
        const char *k;
        json_t *e;

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return error_set(err, -EBADMSG, "%s: \"%s\" is not an object", what, key);
        l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        json_object_foreach(v, k, e) if (strv_extend(&l, k) < 0) return -ENOMEM;
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

void image_descriptor_done(ImageDescriptor *d) {
        if (!d)
                return;
        free(d->media_type);
        free(d->digest);
        free(d->ref_name);
        free(d->image_name);
        free(d->os);
        free(d->architecture);
        free(d->variant);
        *d = (ImageDescriptor){};
}

void image_descriptors_free(ImageDescriptor *d, size_t n) {
        for (size_t i = 0; d && i < n; i++)
                image_descriptor_done(&d[i]);
        free(d);
}

static int descriptor_parse(json_t *j, const char *what, ImageDescriptor *ret, Error *err) {
        ImageDescriptor d = { .size = -1 };
        int r;

        if (!json_is_object(j))
                return error_set(err, -EBADMSG, "%s: descriptor is not an object", what);
        r = get_string(j, "mediaType", false, what, &d.media_type, err);
        if (r >= 0)
                r = get_string(j, "digest", true, what, &d.digest, err);
        if (r < 0)
                goto fail;
        if (!image_digest_is_valid(d.digest)) {
                r = error_set(err, -EBADMSG,
                              "%s: unsupported or malformed digest \"%s\" (need sha256:<64 "
                              "lowercase hex>)",
                              what, d.digest);
                goto fail;
        }
        json_t *size = json_object_get(j, "size");
        if (size) {
                if (!json_is_integer(size) || json_integer_value(size) < 0) {
                        r = error_set(err, -EBADMSG, "%s: \"size\" is not a size", what);
                        goto fail;
                }
                d.size = json_integer_value(size);
        }
        json_t *ann = json_object_get(j, "annotations");
        if (ann && json_is_object(ann)) {
                r = get_string(ann, IMAGE_ANNOTATION_REF_NAME, false, what, &d.ref_name, err);
                if (r >= 0)
                        r = get_string(ann, IMAGE_ANNOTATION_CONTAINERD_NAME, false, what,
                                       &d.image_name, err);
                if (r < 0)
                        goto fail;
        }
        json_t *plat = json_object_get(j, "platform");
        if (plat && json_is_object(plat)) {
                r = get_string(plat, "os", false, what, &d.os, err);
                if (r >= 0)
                        r = get_string(plat, "architecture", false, what, &d.architecture, err);
                if (r >= 0)
                        r = get_string(plat, "variant", false, what, &d.variant, err);
                if (r < 0)
                        goto fail;
        }
        *ret = d;
        return 0;
fail:
        image_descriptor_done(&d);
        return r;
}

int image_index_parse(const char *json, size_t size, ImageDescriptor **ret, size_t *ret_n,
                      Error *err) {
        _cleanup_json_ json_t *j = NULL;
        int r = json_parse("image index", json, size, &j, err);
        if (r < 0)
                return r;
        if (!json_is_object(j))
                return error_set(err, -EBADMSG, "image index: not a JSON object");
        json_t *m = json_object_get(j, "manifests");
        if (!m || json_is_null(m)) {
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (!json_is_array(m))
                return error_set(err, -EBADMSG, "image index: \"manifests\" is not an array");
        size_t n = json_array_size(m);
        if (n > 4096)
                return error_set(err, -E2BIG, "image index: more than 4096 manifests");
        ImageDescriptor *d = calloc(n ? n : 1, sizeof(ImageDescriptor));
        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char what[64];
                (void)snprintf(what, sizeof(what), "image index: manifests[%zu]", i);
                r = descriptor_parse(json_array_get(m, i), what, &d[i], err);
                if (r < 0) {
                        image_descriptors_free(d, i);
                        return r;
                }
        }
        *ret = d;
        *ret_n = n;
        return 0;
}

void image_manifest_done(ImageManifest *m) {
        if (!m)
                return;
        free(m->media_type);
        image_descriptor_done(&m->config);
        image_descriptors_free(m->layers, m->n_layers);
        *m = (ImageManifest){};
}

int image_manifest_parse(const char *json, size_t size, ImageManifest *ret, Error *err) {
        _cleanup_json_ json_t *j = NULL;
        ImageManifest m = {};
        int r = json_parse("image manifest", json, size, &j, err);
        if (r < 0)
                return r;
        if (!json_is_object(j))
                return error_set(err, -EBADMSG, "image manifest: not a JSON object");
        json_t *sv = json_object_get(j, "schemaVersion");
        if (!json_is_integer(sv) || json_integer_value(sv) != 2)
                return error_set(err, -EBADMSG,
                                 "image manifest: schemaVersion is not 2 (docker schema 1 "
                                 "manifests are not supported)");
        r = get_string(j, "mediaType", false, "image manifest", &m.media_type, err);
        if (r < 0)
                return r;
        if (m.media_type && !image_media_type_is_manifest(m.media_type)) {
                r = error_set(err, -EMEDIUMTYPE, "image manifest: unsupported mediaType \"%s\"",
                              m.media_type);
                goto fail;
        }
        r = descriptor_parse(json_object_get(j, "config"), "image manifest: config", &m.config,
                             err);
        if (r < 0)
                goto fail;
        json_t *layers = json_object_get(j, "layers");
        if (!json_is_array(layers)) {
                r = error_set(err, -EBADMSG, "image manifest: \"layers\" is not an array");
                goto fail;
        }
        size_t n = json_array_size(layers);
        if (n > IMAGE_MAX_LAYERS) {
                r = error_set(err, -E2BIG, "image manifest: more than %d layers", IMAGE_MAX_LAYERS);
                goto fail;
        }
        m.layers = calloc(n ? n : 1, sizeof(ImageDescriptor));
        if (!m.layers) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
                char what[64];
                (void)snprintf(what, sizeof(what), "image manifest: layers[%zu]", i);
                r = descriptor_parse(json_array_get(layers, i), what, &m.layers[i], err);
                if (r < 0)
                        goto fail;
                m.n_layers++;
        }
        *ret = m;
        return 0;
fail:
        image_manifest_done(&m);
        return r;
}

void image_config_done(ImageConfig *c) {
        if (!c)
                return;
        strv_free(c->entrypoint);
        strv_free(c->cmd);
        strv_free(c->env);
        free(c->working_dir);
        free(c->user);
        strv_free(c->exposed_ports);
        free(c->stop_signal);
        strv_free(c->volumes);
        strv_free(c->labels);
        strv_free(c->diff_ids);
        free(c->os);
        free(c->architecture);
        free(c->created);
        *c = (ImageConfig){};
}

int image_config_parse(const char *json, size_t size, ImageConfig *ret, Error *err) {
        _cleanup_json_ json_t *j = NULL;
        ImageConfig c = {};
        const char *w = "image config";
        int r = json_parse(w, json, size, &j, err);
        if (r < 0)
                return r;
        if (!json_is_object(j))
                return error_set(err, -EBADMSG, "image config: not a JSON object");
        if ((r = get_string(j, "os", false, w, &c.os, err)) < 0 ||
            (r = get_string(j, "architecture", false, w, &c.architecture, err)) < 0 ||
            (r = get_string(j, "created", false, w, &c.created, err)) < 0)
                goto fail;
        json_t *cfg = json_object_get(j, "config");
        if (cfg && !json_is_null(cfg)) {
                if (!json_is_object(cfg)) {
                        r = error_set(err, -EBADMSG, "image config: \"config\" is not an object");
                        goto fail;
                }
                w = "image config: config";
                if ((r = get_strv(cfg, "Entrypoint", w, &c.entrypoint, err)) < 0 ||
                    (r = get_strv(cfg, "Cmd", w, &c.cmd, err)) < 0 ||
                    (r = get_strv(cfg, "Env", w, &c.env, err)) < 0 ||
                    (r = get_string(cfg, "WorkingDir", false, w, &c.working_dir, err)) < 0 ||
                    (r = get_string(cfg, "User", false, w, &c.user, err)) < 0 ||
                    (r = get_keys(cfg, "ExposedPorts", w, &c.exposed_ports, err)) < 0 ||
                    (r = get_string(cfg, "StopSignal", false, w, &c.stop_signal, err)) < 0 ||
                    (r = get_keys(cfg, "Volumes", w, &c.volumes, err)) < 0)
                        goto fail;
                json_t *labels = json_object_get(cfg, "Labels");
                if (labels && json_is_object(labels)) {
                        const char *k;
                        json_t *v;
                        c.labels = calloc(1, sizeof(char *));
                        if (!c.labels) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        json_object_foreach(labels, k, v) {
                                if (!json_is_string(v))
                                        continue;
                                if (strv_extend(&c.labels, k) < 0 ||
                                    strv_extend(&c.labels, json_string_value(v)) < 0) {
                                        r = -ENOMEM;
                                        goto fail;
                                }
                        }
                }
        }
        json_t *rootfs = json_object_get(j, "rootfs");
        if (!json_is_object(rootfs)) {
                r = error_set(err, -EBADMSG, "image config: missing \"rootfs\"");
                goto fail;
        }
        if ((r = get_strv(rootfs, "diff_ids", "image config: rootfs", &c.diff_ids, err)) < 0)
                goto fail;
        if (!c.diff_ids) {
                r = error_set(err, -EBADMSG, "image config: missing rootfs.diff_ids");
                goto fail;
        }
        if (strv_length(c.diff_ids) > IMAGE_MAX_LAYERS) {
                r = error_set(err, -E2BIG, "image config: more than %d layers", IMAGE_MAX_LAYERS);
                goto fail;
        }
        STRV_FOREACH(d, c.diff_ids)
                if (!image_digest_is_valid(*d)) {
                        r = error_set(err, -EBADMSG, "image config: malformed diff_id \"%s\"", *d);
                        goto fail;
                }
        *ret = c;
        return 0;
fail:
        image_config_done(&c);
        return r;
}

void image_docker_save_free(DockerSaveImage *d, size_t n) {
        for (size_t i = 0; d && i < n; i++) {
                free(d[i].config);
                strv_free(d[i].repo_tags);
                strv_free(d[i].layers);
        }
        free(d);
}

int image_docker_save_parse(const char *json, size_t size, DockerSaveImage **ret, size_t *ret_n,
                            Error *err) {
        _cleanup_json_ json_t *j = NULL;
        int r = json_parse("manifest.json", json, size, &j, err);
        if (r < 0)
                return r;
        if (!json_is_array(j))
                return error_set(err, -EBADMSG, "manifest.json: not a JSON array");
        size_t n = json_array_size(j);
        if (n > 4096)
                return error_set(err, -E2BIG, "manifest.json: more than 4096 images");
        DockerSaveImage *d = calloc(n ? n : 1, sizeof(DockerSaveImage));
        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(j, i);
                char what[64];
                (void)snprintf(what, sizeof(what), "manifest.json[%zu]", i);
                if (!json_is_object(e)) {
                        r = error_set(err, -EBADMSG, "%s: not an object", what);
                        goto fail;
                }
                if ((r = get_string(e, "Config", true, what, &d[i].config, err)) < 0 ||
                    (r = get_strv(e, "RepoTags", what, &d[i].repo_tags, err)) < 0 ||
                    (r = get_strv(e, "Layers", what, &d[i].layers, err)) < 0)
                        goto fail;
                if (!d[i].layers) {
                        r = error_set(err, -EBADMSG, "%s: missing \"Layers\"", what);
                        goto fail;
                }
                if (strv_length(d[i].layers) > IMAGE_MAX_LAYERS) {
                        r = error_set(err, -E2BIG, "%s: more than %d layers", what,
                                      IMAGE_MAX_LAYERS);
                        goto fail;
                }
        }
        *ret = d;
        *ret_n = n;
        return 0;
fail:
        image_docker_save_free(d, n);
        return r;
}

#if defined(__x86_64__)
#define HOST_ARCH "amd64"
#define HOST_VARIANT NULL
#elif defined(__aarch64__)
#define HOST_ARCH "arm64"
#define HOST_VARIANT "v8"
#elif defined(__arm__)
#define HOST_ARCH "arm"
#define HOST_VARIANT "v7"
#elif defined(__i386__)
#define HOST_ARCH "386"
#define HOST_VARIANT NULL
#elif defined(__powerpc64__)
#define HOST_ARCH "ppc64le"
#define HOST_VARIANT NULL
#elif defined(__s390x__)
#define HOST_ARCH "s390x"
#define HOST_VARIANT NULL
#elif defined(__riscv)
#define HOST_ARCH "riscv64"
#define HOST_VARIANT NULL
#else
#define HOST_ARCH "unknown"
#define HOST_VARIANT NULL
#endif

const char *image_platform_native_arch(void) {
        return HOST_ARCH;
}

const char *image_platform_native_variant(void) {
        return HOST_VARIANT;
}

const ImageDescriptor *image_index_select_platform(const ImageDescriptor *ds, size_t n,
                                                   const char *arch, const char *variant) {
        if (!arch) {
                arch = HOST_ARCH;
                variant = HOST_VARIANT;
        }
        const ImageDescriptor *exact = NULL, *novariant = NULL, *anyvariant = NULL,
                              *noplatform = NULL;
        for (size_t i = 0; i < n; i++) {
                const ImageDescriptor *d = &ds[i];
                if (!d->architecture) {
                        if (!noplatform && (!d->os || streq(d->os, "linux")))
                                noplatform = d;
                        continue;
                }
                if (!d->os || !streq(d->os, "linux") || !streq(d->architecture, arch))
                        continue;
                if (variant && d->variant && streq(d->variant, variant)) {
                        if (!exact)
                                exact = d;
                } else if (!d->variant) {
                        if (!novariant)
                                novariant = d;
                } else if (!anyvariant && !variant)
                        anyvariant = d;
        }
        return exact ? exact : novariant ? novariant : anyvariant ? anyvariant : noplatform;
}
