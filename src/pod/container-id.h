/* Runtime container IDs (docs/internals/state-files.md): 64 lowercase hex digits, the shape
 * containerd and CRI-O give and that log shippers expect in
 * /var/log/containers/<pod>_<ns>_<container>-<id>.log (Fluent Bit's and
 * fluentd's kubernetes parsers match [a-z0-9]{64}). The ID is derived, not
 * random, so an agent restart finds every attempt's container again:
 *   48 hex digits of SHA-256("<pod uid>/<container name>/<attempt>")
 *   + 16 hex digits of SHA-256("<pod uid>"),
 * the second part marking the pod's containers (a container whose attempt
 * directory is gone is still known to be the pod's), the first keeping
 * short prefixes (`nanolet ps` shows 13 digits) distinct.
 *
 * Agents before this scheme named containers "<uid>-<name>-<attempt>";
 * such containers are still adopted (an upgrade must not restart pods):
 * container_legacy_id() gives that name. */
#pragma once

#include <stdbool.h>

/* NULL on ENOMEM. */
char *container_runtime_id(const char *uid, const char *name, unsigned attempt);
char *container_legacy_id(const char *uid, const char *name, unsigned attempt);
/* Whether id names a container of the pod uid, in either scheme. */
bool container_id_of_pod(const char *id, const char *uid);
