/* Image volumes (volumes[].image, kubelet's ImageVolume): the decisions a
 * container start takes for them, kept apart from the worker so that they
 * are tested with plain structs.
 *
 * How a start uses them (pod-containers.c): after the container's own
 * image, each image volume the container mounts is resolved with the same
 * pull policy rules and the same credentials (image_pull_decide()), pulled
 * through the shared pull queue when the policy says so, and its manifest
 * digest is recorded in the attempt record, which keeps it from image GC
 * while the attempt exists. Once the container's rootfs is mounted, each
 * volume's image is mounted as a root filesystem of its own (overlayfs
 * over its layers, or the copy fallback) on image_volume_paths()' target,
 * then made read-only, nosuid, nodev and noexec (the API's contract for
 * image volumes: "mounted read-only (ro) and non-executable files
 * (noexec)"). The target is below <attempt>/subpaths, so every path that
 * releases an attempt's subPath mounts (a failed start, the container's
 * removal, the pod's, adoption after a crash or a reboot) unmounts and
 * removes it too.
 *
 * Deliberate differences from kubelet: the image is resolved per
 * container attempt (as CRI-O mounts it per container), only for the image
 * volumes the container mounts; a pod's image volume that no container
 * mounts is never pulled. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "pod.h"

/* What a start does about one image (a container's or an image volume's),
 * from the pull policy (PULL_POLICY_NEVER when pulls are forbidden by
 * --image-pull-policy-override=never), whether the store has the image,
 * whether this attempt already pulled it, and whether registry pulls are
 * set up at all. Always pulls once per attempt; IfNotPresent pulls when
 * absent; Never never pulls. */
typedef enum ImagePullDecision {
        IMAGE_PULL_USE_STORED,   /* the store's copy */
        IMAGE_PULL_PULL,         /* ask the registry */
        IMAGE_PULL_VANISHED,     /* pulled, yet no longer in the store */
        IMAGE_PULL_NEVER_ABSENT, /* absent, and the policy forbids pulls: ErrImageNeverPull */
        IMAGE_PULL_NO_REGISTRY,  /* absent, and no registry pulls are set up: ErrImagePull */
        _IMAGE_PULL_DECISION_MAX,
        _IMAGE_PULL_DECISION_INVALID = -EINVAL,
} ImagePullDecision;

ImagePullDecision image_pull_decide(PullPolicy policy, bool present, bool pulled, bool can_pull);

/* The indices into spec->volumes of the image volumes c mounts, each once,
 * in the order of spec->volumes. *ret is NULL when there are none. 0 or
 * -ENOMEM. */
int image_volumes_of_container(const PodSpec *spec, const Container *c, size_t **ret,
                               size_t *ret_n);
bool image_volumes_mounted_by(const PodSpec *spec, const Container *c);

/* Where one attempt mounts the image volume called name:
 * <attempt_dir>/subpaths/image-<name> (the mount point the runtime binds
 * from) and the overlay's <attempt_dir>/image-volumes/<name>/{upper,work}.
 * -EINVAL for a name that is not one path component (a pod that passed
 * validation has DNS-label volume names). Each ret_* is optional. */
int image_volume_paths(const char *attempt_dir, const char *name, char **ret_target,
                       char **ret_upper, char **ret_work);

/* The image volume's mount point made read-only, nosuid, nodev and noexec
 * (a remount of that mount only: the image's layers are not touched). */
int image_volume_seal(const char *target);
