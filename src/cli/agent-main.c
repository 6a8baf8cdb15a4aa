/* nanolet-agent: what `nanolet serve` execs (cli-serve.c). The same agent
 * code as `nanolet`, linked with --as-needed and without the CLI, the image
 * unpacker and the registry client, so the long-running process maps fewer
 * libraries (docs/BENCHMARKS.md, memory). Not a user command: it needs the
 * helper executable `nanolet serve` hands over (self-helper.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "runtime.h"
#include "self-helper.h"
#include "string-util.h"

/* The helper executable's descriptor, as "/proc/<our pid>/fd/<n>": it
 * must be ours (inherited through the exec), and it is not passed on to the
 * containers' and plugins' processes. */
static int helper_fd_claim(const char *value) {
        int pid, fd, end = 0;
        if (!value || sscanf(value, "/proc/%d/fd/%d%n", &pid, &fd, &end) != 2 || value[end] != 0 ||
            pid != (int)getpid() || fd < 3)
                return -EINVAL;
        int fl = fcntl(fd, F_GETFD);
        if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
                return -EBADF;
        return 0;
}

int main(int argc, char **argv) {
        /* The pod PID-namespace holder is this binary re-executed. */
        if (argc > 0 && streq(argv[0], SANDBOX_HOLDER_ARGV0))
                return sandbox_holder_main(argc, argv);
        log_setup();
        if (argc < 2 || !streq(argv[1], "serve") ||
            helper_fd_claim(getenv(SELF_HELPER_EXE_ENV)) < 0) {
                fprintf(stderr, "nanolet-agent: an internal program; run `nanolet serve`.\n");
                return EXIT_USAGE;
        }
        return cli_serve_agent(argc - 1, argv + 1);
}
