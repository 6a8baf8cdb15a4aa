/* /etc/hosts, /etc/hostname, /etc/resolv.conf of a pod: whole files compared
 * per dnsPolicy, hostNetwork and hostAliases. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "manifest.h"
#include "pod-etc-files.h"
#include "string-util.h"
#include "strv.h"

typedef struct Fixture {
        ManifestObject **objs;
        size_t n;
        const Pod *pod;
        char dir[64];
        char *resolv, *hosts;
        PodEtcOptions o;
} Fixture;

static char *cluster_dns[] = { "10.96.0.10", NULL };
static char *pod_ips[] = { "10.86.0.7", NULL };

static void fx_init(Fixture *f, const char *yaml) {
        *f = (Fixture){};
        ManifestParseOptions po = { .filename = "t.yaml",
                                    .node_name = "node1",
                                    .source_id = "file:/x",
                                    .config_source = "file" };
        Diagnostics d;
        diagnostics_init(&d);
        int r = manifest_parse_buffer(yaml, strlen(yaml), &po, &f->objs, &f->n, &d);
        for (size_t i = 0; r < 0 && i < d.n; i++) {
                char *s = diag_to_string(&d.items[i]);
                fprintf(stderr, "%s\n", s);
                free(s);
        }
        diagnostics_deinit(&d);
        assert_int_equal(r, 0);
        f->pod = f->objs[0]->pod;
        strcpy(f->dir, "/tmp/test-etc-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->resolv = strprintf("%s/host-resolv.conf", f->dir);
        f->hosts = strprintf("%s/host-hosts", f->dir);
        const char *rc = "# generated\nnameserver 192.168.1.1\nnameserver 192.168.1.2\n"
                         "search corp.example. lab.example .\noptions timeout:2 ndots:2\n";
        assert_int_equal(write_file_atomic(f->resolv, rc, strlen(rc), 0644), 0);
        const char *hh = "127.0.0.1 localhost\n192.168.1.5 node1\n";
        assert_int_equal(write_file_atomic(f->hosts, hh, strlen(hh), 0644), 0);
        f->o = (PodEtcOptions){ .pod_dir = f->dir,
                                .node_hostname = "node1",
                                .cluster_domain = "cluster.local",
                                .cluster_dns = cluster_dns,
                                .resolv_conf = f->resolv,
                                .host_hosts = f->hosts,
                                .pod_ips = pod_ips };
}

static void fx_done(Fixture *f) {
        char *cmd = strprintf("rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        free(f->resolv);
        free(f->hosts);
        manifest_objects_free(f->objs, f->n);
}

#define POD "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: prod}\nspec:\n"
#define CONTAINERS "  containers: [{name: c, image: b}]\n"

static void check_resolv(Fixture *f, const char *want, const char *warning) {
        char *got = NULL, **w = NULL;
        Error err = {};
        assert_int_equal(pod_resolv_conf_content(f->pod, &f->o, &got, &w, &err), 0);
        assert_string_equal(got, want);
        if (warning) {
                assert_non_null(w);
                assert_non_null(strstr(w[0], warning));
        } else
                assert_null(w);
        free(got);
        strv_free(w);
}

static void test_resolv_cluster_first(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD CONTAINERS);
        check_resolv(&f,
                     "search prod.svc.cluster.local svc.cluster.local cluster.local corp.example "
                     "lab.example\nnameserver 10.96.0.10\noptions ndots:5\n",
                     NULL);
        /* no cluster DNS: Default, with a warning */
        f.o.cluster_dns = NULL;
        check_resolv(&f,
                     "search corp.example lab.example\nnameserver 192.168.1.1\n"
                     "nameserver 192.168.1.2\noptions timeout:2 ndots:2\n",
                     "Falling back to \"Default\" policy");
        fx_done(&f);
}

static void test_resolv_policies(void **state) {
        (void)state;
        Fixture f;
        /* hostNetwork + ClusterFirst = Default */
        fx_init(&f, POD "  hostNetwork: true\n" CONTAINERS);
        check_resolv(&f,
                     "search corp.example lab.example\nnameserver 192.168.1.1\n"
                     "nameserver 192.168.1.2\noptions timeout:2 ndots:2\n",
                     NULL);
        fx_done(&f);

        fx_init(&f, POD "  hostNetwork: true\n  dnsPolicy: ClusterFirstWithHostNet\n" CONTAINERS);
        check_resolv(&f,
                     "search prod.svc.cluster.local svc.cluster.local cluster.local corp.example "
                     "lab.example\nnameserver 10.96.0.10\noptions ndots:5\n",
                     NULL);
        fx_done(&f);

        fx_init(&f, POD "  dnsPolicy: None\n  dnsConfig:\n    nameservers: [1.1.1.1]\n"
                        "    searches: [a.example]\n    options: [{name: ndots, value: '1'}, "
                        "{name: edns0}]\n" CONTAINERS);
        check_resolv(&f, "search a.example\nnameserver 1.1.1.1\noptions ndots:1 edns0\n", NULL);
        fx_done(&f);

        /* dnsConfig merged over ClusterFirst: appended, options replaced by name */
        fx_init(&f, POD "  dnsConfig:\n    nameservers: [1.1.1.1, 10.96.0.10]\n"
                        "    searches: [cluster.local, x.example]\n"
                        "    options: [{name: ndots, value: '2'}, {name: "
                        "single-request-reopen}]\n" CONTAINERS);
        check_resolv(&f,
                     "search prod.svc.cluster.local svc.cluster.local cluster.local corp.example "
                     "lab.example x.example\nnameserver 10.96.0.10\nnameserver 1.1.1.1\n"
                     "options ndots:2 single-request-reopen\n",
                     NULL);
        fx_done(&f);

        /* Default with too many nameservers: the first three */
        fx_init(&f, POD "  dnsPolicy: Default\n  dnsConfig: {nameservers: [1.1.1.1, "
                        "8.8.8.8]}\n" CONTAINERS);
        check_resolv(&f,
                     "search corp.example lab.example\nnameserver 192.168.1.1\n"
                     "nameserver 192.168.1.2\nnameserver 1.1.1.1\noptions timeout:2 ndots:2\n",
                     "Nameserver limits were exceeded");
        /* --resolv-conf="": kubelet's 127.0.0.1 and search "." */
        f.o.resolv_conf = "";
        check_resolv(&f,
                     "search .\nnameserver 127.0.0.1\nnameserver 1.1.1.1\n"
                     "nameserver 8.8.8.8\n",
                     NULL);
        fx_done(&f);
}

static void test_hosts(void **state) {
        (void)state;
        Fixture f;
        char *got = NULL;
        Error err = {};
        fx_init(&f, POD "  hostname: h1\n  subdomain: sub\n"
                        "  hostAliases:\n  - {ip: 10.1.1.1, hostnames: [foo.local, bar.local]}\n"
                        "  - {ip: 10.1.1.2, hostnames: [baz]}\n" CONTAINERS);
        assert_int_equal(pod_hosts_content(f.pod, &f.o, &got, &err), 0);
        assert_string_equal(got, "# Kubernetes-managed hosts file.\n"
                                 "127.0.0.1\tlocalhost\n"
                                 "::1\tlocalhost ip6-localhost ip6-loopback\n"
                                 "fe00::0\tip6-localnet\n"
                                 "fe00::0\tip6-mcastprefix\n"
                                 "fe00::1\tip6-allnodes\n"
                                 "fe00::2\tip6-allrouters\n"
                                 "10.86.0.7\th1.sub.prod.svc.cluster.local\th1\n"
                                 "\n# Entries added by HostAliases.\n"
                                 "10.1.1.1\tfoo.local\tbar.local\n"
                                 "10.1.1.2\tbaz\n");
        free(got);
        /* no pod IP yet, no subdomain: no pod line */
        f.o.pod_ips = NULL;
        fx_done(&f);

        fx_init(&f, POD CONTAINERS);
        assert_int_equal(pod_hosts_content(f.pod, &f.o, &got, &err), 0);
        assert_true(endswith(got, "fe00::2\tip6-allrouters\n10.86.0.7\tweb-node1\n"));
        free(got);
        fx_done(&f);

        /* hostNetwork: the node's file plus the aliases */
        fx_init(&f, POD "  hostNetwork: true\n  hostAliases: [{ip: 10.1.1.1, hostnames: "
                        "[foo]}]\n" CONTAINERS);
        assert_int_equal(pod_hosts_content(f.pod, &f.o, &got, &err), 0);
        assert_string_equal(got, "127.0.0.1 localhost\n192.168.1.5 node1\n"
                                 "\n# Entries added by HostAliases.\n10.1.1.1\tfoo\n");
        free(got);
        fx_done(&f);
}

static void test_hostname_and_write(void **state) {
        (void)state;
        Fixture f;
        char *h = NULL;
        fx_init(&f, "apiVersion: v1\nkind: Pod\nmetadata:\n"
                    "  name: a-very-long-pod-name-that-goes-on-and-on-and-on-until-it-is-63\n"
                    "spec:\n" CONTAINERS);
        assert_int_equal(pod_hostname(f.pod, "node1", &h), 0);
        /* 63 characters of "...-63-node1" end in '-': trimmed */
        assert_int_equal(strlen(h), 62);
        assert_false(endswith(h, "-"));
        free(h);

        PodEtcFiles files = {};
        Error err = {};
        assert_int_equal(pod_etc_files_write(f.pod, &f.o, &files, NULL, &err), 0);
        char *data = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, files.hostname, 4096, &data, NULL), 0);
        assert_true(endswith(data, "-until-it-is-63\n"));
        free(data);
        assert_int_equal(access(files.hosts, R_OK), 0);
        assert_int_equal(access(files.resolv_conf, R_OK), 0);
        char *want = strprintf("%s/resolv.conf", f.dir);
        assert_string_equal(files.resolv_conf, want);
        free(want);
        pod_etc_files_done(&files);
        fx_done(&f);

        fx_init(&f, POD "  hostNetwork: true\n" CONTAINERS);
        assert_int_equal(pod_hostname(f.pod, "node1", &h), 0);
        assert_string_equal(h, "node1");
        free(h);
        fx_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_resolv_cluster_first),
                cmocka_unit_test(test_resolv_policies),
                cmocka_unit_test(test_hosts),
                cmocka_unit_test(test_hostname_and_write),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
