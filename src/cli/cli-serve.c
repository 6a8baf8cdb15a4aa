#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "self-helper.h"
#include "settings.h"
#include "string-util.h"

/* Replaces this process (same pid: service managers, pid files and the
 * bench's kill -9 all see one agent) with the agent executable: nanolet
 * built with only what the long-running agent maps — no libarchive with
 * its libxml2/ICU/libstdc++ chain, no registry client. Helper modes that
 * need those run in this binary, kept open as SELF_HELPER_EXE_ENV. Returns
 * only when no agent executable could be run; the caller then runs the
 * agent in-process, as before the split. */
static void exec_agent(char **argv) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
                return;
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (!slash)
                return;
        /* Next to this binary (a build tree), or where meson installs it
         * when this is the installed nanolet: the agent and the helper
         * modes it runs in this binary must be of one version. */
        _cleanup_free_ char *sibling = strprintf("%.*s/nanolet-agent", (int)(slash - self), self);
        const char *candidates[] = { sibling,
                                     streq(self, NANOLET_SBIN_PATH) ? NANOLET_AGENT_PATH : NULL };

        for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
                if (!candidates[i] || access(candidates[i], X_OK) < 0)
                        continue;
                /* Not O_CLOEXEC: the agent inherits it. */
                int fd = open("/proc/self/exe", O_RDONLY);
                if (fd < 0)
                        return;
                char value[64];
                (void)snprintf(value, sizeof(value), "/proc/%d/fd/%d", (int)getpid(), fd);
                if (setenv(SELF_HELPER_EXE_ENV, value, 1) >= 0) {
                        execv(candidates[i], argv);
                        log_warning_errno(errno, "Cannot run %s, running the agent in-process: %m",
                                          candidates[i]);
                }
                (void)unsetenv(SELF_HELPER_EXE_ENV);
                close(fd);
                return;
        }
}

int cli_serve(int argc, char **argv) {
        /* argv starts at "serve"; the agent gets the whole command line. */
        exec_agent(argv - 1);
        return cli_serve_agent(argc, argv);
}

int cli_serve_agent(int argc, char **argv) {
        _cleanup_(nanolet_config_deinit) NanoletConfig config = {};
        _cleanup_(daemon_freep) Daemon *d = NULL;
        int r;

        /* Hidden: the settings sections of nanolet-config(5), generated at
         * build time (man/meson.build) so the page cannot drift from the
         * settings table. */
        if (argc == 2 && streq(argv[1], "--print-settings-man")) {
                settings_print_man(stdout);
                return EXIT_OK;
        }

        r = nanolet_config_init(&config);
        if (r < 0)
                return log_oom(), EXIT_ERROR;
        /* The logger first: every line the agent writes, from the flags'
         * and the configuration file's problems on, is a log line. */
        r = nanolet_config_parse_log_flags(&config, argc, argv);
        if (r < 0)
                return log_oom(), EXIT_ERROR;
        if (config.verbosity >= 4)
                log_set_max_level(LOG_DEBUG);
        if (config.log_json)
                log_set_format(LOG_FORMAT_JSON);
        r = nanolet_config_parse_argv(&config, argc, argv);
        if (r > 0)
                return EXIT_OK; /* --help */
        if (r < 0)
                return EXIT_USAGE;
        r = nanolet_config_finish(&config);
        if (r < 0)
                return EXIT_ERROR;

        r = daemon_new(&d, &config);
        if (r < 0)
                return EXIT_ERROR;
        r = daemon_run(d);
        if (r < 0) {
                log_error_errno(r, "nanolet stopped on an error: %m");
                return EXIT_ERROR;
        }
        return EXIT_OK;
}
