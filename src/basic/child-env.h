/* The environment every child of the agent starts from (docs/internals/runtime.md): runc,
 * conmon, CNI plugins, probes and hooks get an explicit list, never the
 * agent's own environment. Under systemd that environment holds
 * NOTIFY_SOCKET (runc would hand it to the container and `runc start` would
 * wait for a READY=1 that never comes), WATCHDOG_* and LISTEN_* (meant for
 * the agent's pid only), and whatever proxy or credential variables the
 * administrator set for the agent's own fetches (http_proxy, AWS_*, ...).
 *
 * The allowlist, taken from the agent when set:
 *   PATH  how runc finds conmon's helpers, CNI plugins find iptables and
 *         ip; CHILD_ENV_DEFAULT_PATH when the agent has none.
 *   TZ    so conmon's log timestamps and runc's messages use the agent's
 *         zone.
 * Nothing else: runc and conmon as root need no XDG_RUNTIME_DIR or HOME
 * (those matter only rootless), CNI plugins take their input from CNI_*
 * and stdin. A caller adds what its child needs through `extra`. */
#pragma once

#define CHILD_ENV_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* A new NULL-terminated "NAME=value" list: the allowlist above, then each
 * "NAME=value" of extra (may be NULL), which replaces an allowlisted entry
 * of the same name. Returns 0 or -ENOMEM, -EINVAL for an extra entry
 * without '='. Free with strv_free(). */
int child_env_new(char *const *extra, char ***ret);
