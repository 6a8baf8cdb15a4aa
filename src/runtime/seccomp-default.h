/* Seccomp for config.json: the RuntimeDefault profile (containerd's default
 * allowlist, as data) and the loading and validation of Localhost profiles
 * with libseccomp, which is loaded with dlopen() for each validation only.
 * Internal to src/runtime. */
#pragma once

#include <stdint.h>

#include <jansson.h>

#include "runtime-config.h"

/* Capability numbers as the kernel defines them (linux/capability.h), so a
 * capability set is a uint64_t bitmask like CapEff in /proc/<pid>/status. */
#define RUNTIME_CAP_BIT(n) (UINT64_C(1) << (n))

/* The soname validation loads; named in its error. */
#define SECCOMP_LIBRARY "libseccomp.so.2"

/* The OCI linux.seccomp object containerd's RuntimeDefault profile gives a
 * container whose bounding set is caps (extra syscalls are allowed for
 * CAP_SYS_ADMIN, CAP_SYS_PTRACE, ...), for the architecture nanolet was
 * built for. Returns 0 or -ENOMEM. */
int seccomp_default_profile(uint64_t caps, json_t **ret);

/* Reads the OCI-format seccomp profile at path (at most 1 MiB), checks it
 * with libseccomp (every syscall name and architecture must resolve, every
 * action and operator must be known) and returns a clean copy holding only
 * the runtime-spec fields. Errors name the file and the field; without
 * libseccomp: -ELIBACC, "<where>: checking it needs libseccomp.so.2: …". */
int seccomp_profile_load(const char *path, json_t **ret, Error *err);

/* Validates an already parsed profile; what seccomp_profile_load() does
 * after reading. where prefixes error messages (e.g. the file name). */
int seccomp_profile_validate(json_t *profile, const char *where, json_t **ret, Error *err);
