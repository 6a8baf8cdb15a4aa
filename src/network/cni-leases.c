/* host-local's lease files, for releasing addresses of pods that no longer
 * exist (SPEC §8, §14). host-local keeps one file per address in
 * <dataDir>/<network name>/<ip>, holding the container ID on its first line
 * (and the interface name on the second since plugins v1.0). A DEL through
 * the plugin is the normal way to release one; this sweep is for the cases
 * where no DEL can run any more: a DEL that failed before its pod's state
 * was removed, or an agent killed at an unlucky moment. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cni-internal.h"
#include "cni.h"
#include "fileio.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

#define HOST_LOCAL_DEFAULT_DATA_DIR "/var/lib/cni/networks"

int cni_config_lease_dirs(const CniConfig *c, char ***ret) {
        _cleanup_strv_free_ char **dirs = NULL;
        size_t i;
        json_t *plugin;

        json_array_foreach(json_object_get(c->list, "plugins"), i, plugin) {
                json_t *ipam = json_object_get(plugin, "ipam");
                const char *type = json_string_value(json_object_get(ipam, "type"));
                if (!type || !streq(type, "host-local"))
                        continue;
                const char *data_dir = json_string_value(json_object_get(ipam, "dataDir"));
                char *d = strprintf("%s/%s", data_dir && data_dir[0] == '/' ? data_dir
                                                                              : HOST_LOCAL_DEFAULT_DATA_DIR,
                                    c->name);
                if (!d || strv_consume(&dirs, d) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(dirs);
        return 0;
}

static bool is_ip_address(const char *s) {
        unsigned char buf[sizeof(struct in6_addr)];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

bool cni_lease_owner_is_ours(const char *id) {
        size_t n = strlen(id);
        if (n != 32)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
                        return false;
        return true;
}

int cni_leases_release_stale(const char *dir, bool (*is_live)(const char *id, void *userdata),
                             void *userdata, unsigned *ret_released) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        unsigned released = 0;

        if (ret_released)
                *ret_released = 0;
        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno;
        int dfd2 = dup(dfd);
        if (dfd2 < 0)
                return -errno;
        _cleanup_closedir_ DIR *d = fdopendir(dfd2);
        if (!d) {
                close(dfd2);
                return -errno;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!is_ip_address(de->d_name))
                        continue; /* lock, last_reserved_ip.N */
                _cleanup_free_ char *text = NULL;
                if (read_full_file_at(dfd, de->d_name, 4096, &text, NULL) < 0)
                        continue;
                text[strcspn(text, "\r\n")] = 0;
                /* Only addresses nanolet's own pods hold (their container ID
                 * is the 32-hex pod UID): a network shared with another
                 * runtime keeps that runtime's leases. */
                if (!cni_lease_owner_is_ours(text) || is_live(text, userdata))
                        continue;
                if (unlinkat(dfd, de->d_name, 0) < 0) {
                        log_debug_errno(errno, "Cannot remove lease %s/%s: %m", dir, de->d_name);
                        continue;
                }
                log_info("Released address %s of pod %s, which no longer exists (%s).", de->d_name,
                         text, dir);
                released++;
        }
        if (ret_released)
                *ret_released = released;
        return 0;
}
