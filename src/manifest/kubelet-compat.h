/* What kubelet would do differently with a manifest that nanolet accepts:
 * the check behind `nanolet validate --strict-kubelet`, for an operator who
 * moves the same manifests to kubelet, standalone or joined to a cluster.
 * Pure: it reads the YAML documents again and only adds warnings. */
#pragma once

#include <stddef.h>

#include "diag.h"

typedef enum KubeletSourceKind {
        KUBELET_SOURCE_FILE, /* staticPodPath: one Pod per file */
        KUBELET_SOURCE_URL,  /* staticPodURL: a Pod or a PodList */
} KubeletSourceKind;

/* Adds one warning, starting "kubelet: ", per field, annotation or document
 * kubelet would treat differently, at its file:line and field path. Returns
 * the number added, or a negative errno (-EINVAL when buf is not YAML,
 * which manifest_parse_buffer() reports itself; -ENOMEM). */
int kubelet_compat_check(const char *buf, size_t size, const char *filename,
                         KubeletSourceKind source, Diagnostics *d);
