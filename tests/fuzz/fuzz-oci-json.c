/* libFuzzer target: the OCI/docker JSON parsers (index.json, image index,
 * manifest, config, docker-save manifest.json) on arbitrary bytes. Every
 * digest they accept must be a valid sha256 digest (the store builds paths
 * from them). */
#include <stdint.h>
#include <stdlib.h>

#include "image-oci.h"
#include "image-ref.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *json = (const char *)data;
        ImageDescriptor *d = NULL;
        size_t n = 0;
        if (image_index_parse(json, size, &d, &n, NULL) >= 0) {
                for (size_t i = 0; i < n; i++)
                        if (!image_digest_is_valid(d[i].digest))
                                abort();
                image_descriptors_free(d, n);
        }
        ImageManifest m = {};
        if (image_manifest_parse(json, size, &m, NULL) >= 0) {
                if (!image_digest_is_valid(m.config.digest))
                        abort();
                for (size_t i = 0; i < m.n_layers; i++)
                        if (!image_digest_is_valid(m.layers[i].digest))
                                abort();
                image_manifest_done(&m);
        }
        ImageConfig c = {};
        if (image_config_parse(json, size, &c, NULL) >= 0) {
                STRV_FOREACH(id, c.diff_ids)
                        if (!image_digest_is_valid(*id))
                                abort();
                image_config_done(&c);
        }
        DockerSaveImage *ds = NULL;
        if (image_docker_save_parse(json, size, &ds, &n, NULL) >= 0)
                image_docker_save_free(ds, n);
        return 0;
}
