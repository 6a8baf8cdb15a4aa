/* AppArmor on the node, for the pod worker: whether the kernel enforces it,
 * and nanolet's RuntimeDefault profile (CONTAINER_APPARMOR_DEFAULT_PROFILE,
 * shipped in contrib/apparmor/), which is loaded with `apparmor_parser -r`
 * when a container needs it and the kernel's profile list does not hold it
 * (first use after a boot, or after someone unloaded it), as containerd
 * loads its own. The parser runs as a child of the loop; the containers
 * that need the profile meanwhile wait for it, each resumed once when the
 * load ends. The kernel owns a loaded profile: it stays until the next
 * boot, and a later load only replaces it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "child.h"
#include "error.h"
#include "event.h"

#define POD_APPARMOR_ENABLED_PATH "/sys/module/apparmor/parameters/enabled"
#define POD_APPARMOR_PROFILES_PATH "/sys/kernel/security/apparmor/profiles"

typedef void (*pod_apparmor_resume_t)(void *waiter);

typedef struct PodAppArmor {
        Event *event;
        bool enabled;              /* the kernel enforces AppArmor */
        char *parser;              /* apparmor_parser's path; NULL: not installed */
        const char *profiles_path; /* the kernel's list of loaded profiles */
        const char *profile_file;  /* the RuntimeDefault profile's source */
        Child *loader;             /* apparmor_parser, while it runs */
        char *load_error;          /* why the last load failed; NULL: it did not */
        void **waiters;            /* resumed when the loader ends */
        size_t n_waiters;
        pod_apparmor_resume_t resume;
} PodAppArmor;

/* Whether the kernel enforces AppArmor: enabled_path (NULL:
 * POD_APPARMOR_ENABLED_PATH) reads "Y". */
bool pod_apparmor_host_enabled(const char *enabled_path);

/* Fills a; nothing runs yet. The paths are borrowed. apparmor_parser is
 * looked up in $PATH now. */
void pod_apparmor_init(PodAppArmor *a, Event *e, bool enabled, const char *profiles_path,
                       const char *profile_file, pod_apparmor_resume_t resume);

/* Whether RuntimeDefault means a profile here: the kernel enforces AppArmor
 * and apparmor_parser is installed to load it (containerd's test; without
 * the parser containerd, too, applies no default profile). */
bool pod_apparmor_default_available(const PodAppArmor *a);
/* Kills a running loader; waiters are not resumed (their owners go too). */
void pod_apparmor_done(PodAppArmor *a);

/* Whether the RuntimeDefault profile can be applied now, for waiter (a
 * container start). 1: it is loaded. 0: a load runs (started now if none
 * did): resume(waiter) follows once, when it ends. < 0: it cannot be had;
 * err says why (the parser cannot run, or failed). retried: the
 * waiter was resumed after a load already, so a profile still missing is
 * a failure now, not a reason to load again. */
int pod_apparmor_default_ready(PodAppArmor *a, void *waiter, bool retried, Error *err);
/* waiter no longer waits (its start was abandoned). */
void pod_apparmor_forget(PodAppArmor *a, void *waiter);
