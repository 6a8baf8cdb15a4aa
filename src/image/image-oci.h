/* Parsers for the OCI and docker JSON documents an image archive holds:
 * index.json / image index, image manifest, image config, and docker-save
 * manifest.json. Pure functions on buffers (fuzzed by fuzz-oci-json). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define IMAGE_MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define IMAGE_MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define IMAGE_MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define IMAGE_MT_OCI_LAYER "application/vnd.oci.image.layer.v1.tar"
#define IMAGE_MT_OCI_LAYER_GZIP "application/vnd.oci.image.layer.v1.tar+gzip"
#define IMAGE_MT_OCI_LAYER_ZSTD "application/vnd.oci.image.layer.v1.tar+zstd"
#define IMAGE_MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define IMAGE_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"

#define IMAGE_ANNOTATION_REF_NAME "org.opencontainers.image.ref.name"
#define IMAGE_ANNOTATION_CONTAINERD_NAME "io.containerd.image.name"

/* Caps on JSON documents read from archives and the store. */
#define IMAGE_JSON_MAX (16U * 1024U * 1024U)
#define IMAGE_MAX_LAYERS 256

typedef struct ImageDescriptor {
        char *media_type;                  /* may be NULL (docker-save manifests have none) */
        char *digest;                      /* "sha256:<hex>", validated */
        int64_t size;                      /* -1 when absent */
        char *ref_name;                    /* annotation org.opencontainers.image.ref.name */
        char *image_name;                  /* annotation io.containerd.image.name */
        char *os, *architecture, *variant; /* platform, for index entries */
} ImageDescriptor;

typedef struct ImageManifest {
        char *media_type;
        ImageDescriptor config;
        ImageDescriptor *layers;
        size_t n_layers;
} ImageManifest;

/* The runtime-facing part of an image config. String vectors are
 * NULL-terminated and NULL when the field is absent. */
typedef struct ImageConfig {
        char **entrypoint;
        char **cmd;
        char **env; /* "KEY=value" */
        char *working_dir;
        char *user;
        char **exposed_ports; /* "80/tcp", sorted */
        char *stop_signal;
        char **volumes;  /* "/data", sorted */
        char **labels;   /* key, value, key, value, ... */
        char **diff_ids; /* rootfs.diff_ids, validated digests */
        char *os;
        char *architecture;
        char *created;
} ImageConfig;

/* One image of a docker-save manifest.json. Paths are archive paths. */
typedef struct DockerSaveImage {
        char *config;
        char **repo_tags;
        char **layers;
} DockerSaveImage;

bool image_media_type_is_index(const char *mt);
bool image_media_type_is_manifest(const char *mt);

void image_descriptor_done(ImageDescriptor *d);
void image_descriptors_free(ImageDescriptor *d, size_t n);
/* index.json or an image index: its "manifests" array. */
int image_index_parse(const char *json, size_t size, ImageDescriptor **ret, size_t *ret_n,
                      Error *err);
int image_manifest_parse(const char *json, size_t size, ImageManifest *ret, Error *err);
void image_manifest_done(ImageManifest *m);
int image_config_parse(const char *json, size_t size, ImageConfig *ret, Error *err);
void image_config_done(ImageConfig *c);
int image_docker_save_parse(const char *json, size_t size, DockerSaveImage **ret, size_t *ret_n,
                            Error *err);
void image_docker_save_free(DockerSaveImage *d, size_t n);

/* The platform this binary runs on, in OCI terms ("amd64", "arm64"; the
 * variant "v8", "v7" or NULL). */
const char *image_platform_native_arch(void);
const char *image_platform_native_variant(void);
/* The index entry for linux/<arch>[/<variant>] (NULL arch/variant: the
 * native platform): an exact variant match first, then an entry without a
 * variant or any variant of that architecture; else an entry without any
 * platform. NULL when none fits. */
const ImageDescriptor *image_index_select_platform(const ImageDescriptor *ds, size_t n,
                                                   const char *arch, const char *variant);
