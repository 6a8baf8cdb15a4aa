/* nanolet version: the version, one line (also `nanolet --version`). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"

int cli_version(int argc, char **argv) {
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
                        printf("Usage: nanolet version\n\nPrint nanolet's version.\n");
                        return EXIT_OK;
                }
                fprintf(stderr,
                        "nanolet version: unexpected argument \"%s\" (it takes none; see "
                        "nanolet version --help)\n",
                        argv[i]);
                return EXIT_USAGE;
        }
        printf("nanolet %s\n", NANOLET_VERSION);
        return EXIT_OK;
}
