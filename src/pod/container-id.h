/* Runtime container IDs (SPEC §6): 64 lowercase hex digits, the shape
 * containerd and CRI-O give and that log shippers expect in
 * /var/log/containers/<pod>_<ns>_<container>-<id>.log (Fluent Bit's and
 * fluentd's kubernetes parsers match [a-z0-9]{64}). The ID is derived, not
 * random: SHA-256 of "<pod uid>/<container name>/<attempt>", so an agent
 * restart finds every attempt's container again from the pod's checkpoint
 * alone.
 *
 * Agents before this scheme named containers "<uid>-<name>-<attempt>";
 * such containers are still adopted (an upgrade must not restart pods):
 * container_legacy_id() gives that name. */
#pragma once

/* NULL on ENOMEM. */
char *container_runtime_id(const char *uid, const char *name, unsigned attempt);
char *container_legacy_id(const char *uid, const char *name, unsigned attempt);
