/* The node's own address, for status.hostIP (and podIP of hostNetwork
 * pods) when --node-ip is not given. kubelet takes the node's InternalIP,
 * which without a cloud provider is the address of the interface that
 * holds the default route; nanolet does the same, falling back to the
 * first global address of any interface. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "cni.h"
#include "fileio.h"
#include "strv.h"

/* The interface of the IPv4 default route from /proc/net/route text:
 * "Iface Destination Gateway Flags ..." with Destination 00000000. */
int node_default_route_interface(const char *route_table, char ret[static 16]) {
        const char *line = strchr(route_table, '\n'); /* skip the header */
        while (line && *++line) {
                char iface[IF_NAMESIZE + 1];
                unsigned long dest, gateway, flags;
                if (sscanf(line, "%16s %lx %lx %lx", iface, &dest, &gateway, &flags) == 4 &&
                    dest == 0 && (flags & 0x1 /* RTF_UP */) && strlen(iface) < IF_NAMESIZE) {
                        memcpy(ret, iface, strlen(iface) + 1);
                        return 0;
                }
                line = strchr(line, '\n');
        }
        return -ENOENT;
}

static bool usable(const struct ifaddrs *a) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || (a->ifa_flags & IFF_LOOPBACK) ||
            !(a->ifa_flags & IFF_UP))
                return false;
        const struct sockaddr_in *in = (const struct sockaddr_in *)a->ifa_addr;
        uint32_t ip = ntohl(in->sin_addr.s_addr);
        return (ip >> 16) != 0xa9fe; /* 169.254/16 link-local */
}

int node_ip_detect(char ***ret) {
        _cleanup_free_ char *routes = NULL;
        char iface[IF_NAMESIZE] = "";
        struct ifaddrs *addrs = NULL;
        char buf[INET_ADDRSTRLEN];

        if (read_full_file_at(AT_FDCWD, "/proc/net/route", 1 << 20, &routes, NULL) >= 0)
                (void)node_default_route_interface(routes, iface);
        if (getifaddrs(&addrs) < 0)
                return -errno;
        const struct ifaddrs *pick = NULL;
        for (const struct ifaddrs *a = addrs; a; a = a->ifa_next) {
                if (!usable(a))
                        continue;
                if (iface[0] && strcmp(a->ifa_name, iface) == 0) {
                        pick = a;
                        break;
                }
                if (!pick)
                        pick = a;
        }
        int r = -ENOENT;
        if (pick && inet_ntop(AF_INET, &((const struct sockaddr_in *)pick->ifa_addr)->sin_addr, buf,
                              sizeof(buf)))
                r = strv_extend(ret, buf);
        freeifaddrs(addrs);
        return r;
}
