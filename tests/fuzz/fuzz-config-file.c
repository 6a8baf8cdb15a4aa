/* libFuzzer target: the KubeletConfiguration parser
 * (nanolet_config_load_buffer()) on arbitrary bytes, over the defaults as the
 * agent calls it. A rejected file must say why; an accepted one must leave
 * every string setting set (a file can change them, never unset them). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon-config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        NanoletConfig c;
        Diagnostics diag;

        if (nanolet_config_init(&c) < 0)
                return 0;
        diagnostics_init(&diag);
        int r = nanolet_config_load_buffer(&c, (const char *)data, size, "config.yaml", &diag);
        if (r < 0 && r != -ENOMEM && diag.n_errors == 0)
                __builtin_trap();
        if (r >= 0 &&
            (!c.pod_manifest_path || !c.root_dir || !nanolet_config_runtime(&c) ||
             !cgroup_driver_to_string(c.cgroup_driver) || !c.address || !c.healthz_bind_address))
                __builtin_trap();
        diagnostics_deinit(&diag);
        nanolet_config_deinit(&c);
        return 0;
}
