/* Kubernetes' $(VAR) expansion (k8s.io/kubernetes/third_party/forked/golang/
 * expansion), shared by validation, which sizes what it can compute from
 * the manifest alone, and the container config builder. */
#pragma once

#include <stddef.h>

/* One expanded env value or argument: the kernel refuses longer strings in
 * execve() (MAX_ARG_STRLEN, 32 pages, NUL included). */
#define EXPANSION_MAX_VALUE (128U * 1024U - 1U)
/* Every expanded env value and argument of one container together: the
 * kernel's limit for argv + envp under the default 8 MiB stack (ARG_MAX). */
#define EXPANSION_MAX_TOTAL (2U * 1024U * 1024U)

/* "$(NAME)" replaced from lookup, "$$" -> "$", undefined references and
 * unterminated "$(" kept as written. lookup returns NULL for undefined.
 * Expansion is single-pass, so one value grows linearly, but an env var
 * may reference earlier, already expanded ones: A=$(X)$(X), B=$(A)$(A), ...
 * doubles at every step. Returns -E2BIG, and stops copying, as soon as the
 * result would be longer than max bytes. */
typedef const char *(*expand_lookup_t)(const char *name, void *userdata);
int kube_expand(const char *in, expand_lookup_t lookup, void *userdata, size_t max, char **ret);
