#include <stdio.h>

#include "cli.h"
#include "config.h"

int cli_version(int argc, char **argv) {
        printf("nanolet %s\n", NANOLET_VERSION);
        return EXIT_OK;
}
