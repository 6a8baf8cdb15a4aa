#include <errno.h>

#include "cli.h"
#include "daemon.h"
#include "log.h"
#include "settings.h"
#include "string-util.h"

int cli_serve(int argc, char **argv) {
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
        r = nanolet_config_parse_argv(&config, argc, argv);
        if (r > 0)
                return EXIT_OK; /* --help */
        if (r < 0)
                return EXIT_USAGE;
        if (config.verbosity >= 4)
                log_set_max_level(LOG_DEBUG);
        if (config.log_json)
                log_set_format(LOG_FORMAT_JSON);
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
