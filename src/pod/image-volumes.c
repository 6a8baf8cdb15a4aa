/* Image volumes: pull decisions and paths (image-volumes.h). */
#include "image-volumes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

#include "cleanup.h"
#include "container-config.h"
#include "string-util.h"

ImagePullDecision image_pull_decide(PullPolicy policy, bool present, bool pulled, bool can_pull) {
        bool want = !pulled && policy != PULL_POLICY_NEVER &&
                    (!present || policy == PULL_POLICY_ALWAYS);
        if (want && can_pull)
                return IMAGE_PULL_PULL;
        if (present)
                return IMAGE_PULL_USE_STORED;
        if (pulled)
                return IMAGE_PULL_VANISHED;
        return policy == PULL_POLICY_NEVER ? IMAGE_PULL_NEVER_ABSENT : IMAGE_PULL_NO_REGISTRY;
}

static bool container_mounts(const Container *c, const char *name) {
        for (size_t i = 0; i < c->n_volume_mounts; i++)
                if (streq_ptr(c->volume_mounts[i].name, name))
                        return true;
        return false;
}

int image_volumes_of_container(const PodSpec *spec, const Container *c, size_t **ret,
                               size_t *ret_n) {
        _cleanup_free_ size_t *v = NULL;
        size_t n = 0;

        for (size_t i = 0; i < spec->n_volumes; i++) {
                const Volume *vol = &spec->volumes[i];
                if (vol->type != VOLUME_IMAGE || !container_mounts(c, vol->name))
                        continue;
                size_t *nv = reallocarray(v, n + 1, sizeof(*v));
                if (!nv)
                        return -ENOMEM;
                v = nv;
                v[n++] = i;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

bool image_volumes_mounted_by(const PodSpec *spec, const Container *c) {
        for (size_t i = 0; i < spec->n_volumes; i++)
                if (spec->volumes[i].type == VOLUME_IMAGE &&
                    container_mounts(c, spec->volumes[i].name))
                        return true;
        return false;
}

int image_volume_paths(const char *attempt_dir, const char *name, char **ret_target,
                       char **ret_upper, char **ret_work) {
        if (isempty(attempt_dir) || isempty(name) || strchr(name, '/') || streq(name, ".") ||
            streq(name, ".."))
                return -EINVAL;
        _cleanup_free_ char *target =
                strprintf("%s/" CONTAINER_SUBPATHS_DIR "/image-%s", attempt_dir, name);
        _cleanup_free_ char *upper = strprintf("%s/image-volumes/%s/upper", attempt_dir, name);
        _cleanup_free_ char *work = strprintf("%s/image-volumes/%s/work", attempt_dir, name);
        if (!target || !upper || !work)
                return -ENOMEM;
        if (ret_target)
                *ret_target = TAKE_PTR(target);
        if (ret_upper)
                *ret_upper = TAKE_PTR(upper);
        if (ret_work)
                *ret_work = TAKE_PTR(work);
        return 0;
}

int image_volume_seal(const char *target) {
        if (mount(NULL, target, NULL,
                  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
                return -errno;
        return 0;
}
