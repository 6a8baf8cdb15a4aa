/* libFuzzer target: the flags of `nanolet serve`
 * (nanolet_config_parse_argv()). The input is split at NUL bytes into
 * argv[1..]; argv[0] is "serve". The parser must return (never exit), with
 * 0, 1 (help) or a negative errno, and leave a config that deinit frees.
 *
 * --config makes the parser read a file named by the input (/dev/stdin would
 * block the fuzzer, /dev/zero read a MiB each run), so inputs with an
 * argument that getopt_long_only() could take for --config (one or two
 * dashes, then a prefix of "config" long enough to be unambiguous) are
 * skipped; fuzz-config-file covers the file parser. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon-config.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int may_name_config(const char *a) {
        if (a[0] != '-')
                return 0;
        a += a[1] == '-' ? 2 : 1;
        return strncmp(a, "conf", 4) == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *argv[MAX_ARGS + 2];
        int argc = 0;
        char *buf = malloc(size + 1);
        if (!buf)
                return 0;
        memcpy(buf, data, size);
        buf[size] = 0;

        argv[argc++] = (char *)"serve";
        for (char *p = buf; size > 0 && p <= buf + size && argc <= MAX_ARGS; p += strlen(p) + 1) {
                if (may_name_config(p)) {
                        free(buf);
                        return 0;
                }
                argv[argc++] = p;
        }
        argv[argc] = NULL;

        NanoletConfig c;
        if (nanolet_config_init(&c) < 0) {
                free(buf);
                return 0;
        }
        int r = nanolet_config_parse_argv(&c, argc, argv);
        if (r != 0 && r != 1 && r != -EINVAL && r != -ENOMEM && r != -ERANGE)
                __builtin_trap();
        if (r == 0 && (!nanolet_config_runtime(&c) || !cgroup_driver_to_string(c.cgroup_driver) ||
                       c.container_log_max_files < 2))
                __builtin_trap();
        nanolet_config_deinit(&c);
        free(buf);
        return 0;
}
