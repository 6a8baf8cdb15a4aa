/* AppArmor on the node (pod-apparmor.h). */
#include "pod-apparmor.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "container-config.h"
#include "fileio.h"
#include "log.h"
#include "spawn.h"
#include "string-util.h"

bool pod_apparmor_host_enabled(const char *enabled_path) {
        _cleanup_free_ char *s = NULL;
        /* sysfs gives every attribute the size of a page */
        if (read_full_file_at(AT_FDCWD, enabled_path ?: POD_APPARMOR_ENABLED_PATH, 64 * 1024, &s,
                              NULL) < 0)
                return false;
        return s[0] == 'Y';
}

void pod_apparmor_init(PodAppArmor *a, Event *e, bool enabled, const char *profiles_path,
                       const char *profile_file, pod_apparmor_resume_t resume) {
        assert(a);
        *a = (PodAppArmor){
                .event = e,
                .enabled = enabled,
                .profiles_path = profiles_path,
                .profile_file = profile_file,
                .resume = resume,
        };
        if (enabled && find_executable("apparmor_parser", &a->parser) < 0)
                log_warning("AppArmor is enabled but apparmor_parser is not installed (package "
                            "apparmor): containers that ask for RuntimeDefault, or for no "
                            "profile, run without one.");
}

bool pod_apparmor_default_available(const PodAppArmor *a) {
        return a->enabled && a->parser;
}

void pod_apparmor_done(PodAppArmor *a) {
        a->loader = child_free(a->loader);
        a->parser = mfree(a->parser);
        a->load_error = mfree(a->load_error);
        a->waiters = mfree(a->waiters);
        a->n_waiters = 0;
}

static int default_loaded(PodAppArmor *a) {
        _cleanup_free_ char *list = NULL;
        int r = read_full_file_at(AT_FDCWD, a->profiles_path, CONTAINER_APPARMOR_PROFILES_MAX,
                                  &list, NULL);
        if (r < 0)
                return r;
        return container_apparmor_listed(list, CONTAINER_APPARMOR_DEFAULT_PROFILE);
}

static void on_loader_done(Child *child, void *userdata) {
        PodAppArmor *a = userdata;
        int code, status;
        size_t size;

        child_get_status(child, &code, &status);
        const char *out = child_stdout(child, &size);
        a->load_error = mfree(a->load_error);
        if (code == CLD_EXITED && status == 0) {
                log_info("Loaded the AppArmor profile %s from %s.",
                         CONTAINER_APPARMOR_DEFAULT_PROFILE, a->profile_file);
        } else {
                while (size > 0 && (out[size - 1] == '\n' || out[size - 1] == ' '))
                        size--;
                _cleanup_free_ char *msg = str_escape_n(out, size, 0);
                a->load_error = strprintf(
                        "cannot load the AppArmor profile %s: apparmor_parser -r %s failed "
                        "(%s %d%s): %s",
                        CONTAINER_APPARMOR_DEFAULT_PROFILE, a->profile_file,
                        code == CLD_EXITED ? "exit status" : "signal", status,
                        child_timed_out(child) ? ", timed out" : "", strna(msg));
                log_warning("%s", a->load_error ?: "cannot load the AppArmor profile");
        }
        a->loader = child_free(a->loader);

        /* One at a time from the list itself: a resumed start may end
         * another waiter's start (pod_apparmor_forget()), which must then
         * not be resumed. The ones resumed here never wait again (they
         * are retried), so the list only shrinks. */
        for (size_t n = a->n_waiters; n > 0 && a->n_waiters > 0; n--) {
                void *w = a->waiters[0];
                pod_apparmor_forget(a, w);
                a->resume(w);
        }
}

static int loader_start(PodAppArmor *a) {
        int r;
        if (!a->parser) {
                free(a->load_error);
                a->load_error = strprintf("cannot load the AppArmor profile %s: apparmor_parser "
                                          "not found (package apparmor)",
                                          CONTAINER_APPARMOR_DEFAULT_PROFILE);
                return -ENOENT;
        }
        char *argv[] = { a->parser, (char *)"-r", (char *)a->profile_file, NULL };
        ChildOptions o = {
                .argv = argv,
                .capture = CHILD_CAPTURE_MERGED,
                .stdout_max = 4096,
                .timeout = 120 * USEC_PER_SEC,
        };
        r = child_spawn(a->event, &o, on_loader_done, a, &a->loader);
        if (r < 0) {
                free(a->load_error);
                a->load_error =
                        strprintf("cannot load the AppArmor profile %s: cannot run %s: %s",
                                  CONTAINER_APPARMOR_DEFAULT_PROFILE, a->parser, strerror(-r));
                return r;
        }
        log_info("Loading the AppArmor profile %s (%s).", CONTAINER_APPARMOR_DEFAULT_PROFILE,
                 a->profile_file);
        return 0;
}

static int waiter_add(PodAppArmor *a, void *waiter) {
        void **n = reallocarray(a->waiters, a->n_waiters + 1, sizeof(void *));
        if (!n)
                return -ENOMEM;
        a->waiters = n;
        a->waiters[a->n_waiters++] = waiter;
        return 0;
}

int pod_apparmor_default_ready(PodAppArmor *a, void *waiter, bool retried, Error *err) {
        int r;

        assert(a);
        if (!pod_apparmor_default_available(a))
                return 1;
        r = default_loaded(a);
        if (r > 0)
                return 1;
        if (r < 0)
                return error_set(err, r, "cannot read the loaded AppArmor profiles (%s): %s",
                                 a->profiles_path, strerror(-r));
        if (!a->loader) {
                if (retried)
                        return error_set(err, -ENOENT, "%s",
                                         a->load_error
                                                 ?: "the AppArmor "
                                                    "profile " CONTAINER_APPARMOR_DEFAULT_PROFILE
                                                    " is not loaded after apparmor_parser ran");
                r = loader_start(a);
                if (r < 0)
                        return error_set(err, r, "%s",
                                         a->load_error ?: "cannot run apparmor_parser");
        }
        r = waiter_add(a, waiter);
        if (r < 0)
                return error_set(err, r, "out of memory");
        return 0;
}

void pod_apparmor_forget(PodAppArmor *a, void *waiter) {
        for (size_t i = 0; i < a->n_waiters; i++)
                if (a->waiters[i] == waiter) {
                        memmove(a->waiters + i, a->waiters + i + 1,
                                (a->n_waiters - i - 1) * sizeof(void *));
                        a->n_waiters--;
                        return;
                }
}
