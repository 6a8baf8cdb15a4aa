/* Configuration: defaults, KubeletConfiguration file, flags over file. */
#include <ctype.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "daemon-config.h"
#include "settings.h"
#include "fileio.h"
#include "string-util.h"
#include "strv.h"

/* Each argv of all is refused with -EINVAL. */
static void assert_all_rejected(char **const *all, size_t n) {
        for (size_t i = 0; i < n; i++) {
                NanoletConfig c;
                assert_int_equal(nanolet_config_init(&c), 0);
                assert_int_equal(nanolet_config_parse_argv(&c, (int)strv_length(all[i]), all[i]),
                                 -EINVAL);
                nanolet_config_deinit(&c);
        }
}

static void test_defaults(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_string_equal(c.pod_manifest_path, "/etc/kubernetes/manifests");
        assert_string_equal(c.root_dir, "/var/lib/nanolet");
        assert_string_equal(c.run_dir, "/run/nanolet");
        assert_string_equal(c.pod_logs_dir, "/var/log/pods");
        assert_string_equal(c.pod_cidr, "10.86.0.0/16");
        assert_string_equal(c.address, "127.0.0.1");
        assert_true(c.file_check_frequency == 20 * USEC_PER_SEC);
        assert_true(c.http_check_frequency == 20 * USEC_PER_SEC);
        assert_true(c.manifest_url_max_backoff == 300 * USEC_PER_SEC);
        assert_int_equal(c.read_only_port, 10255);
        assert_int_equal(c.healthz_port, 10248);
        assert_int_equal(c.container_log_max_size, 10 * 1024 * 1024);
        assert_int_equal(c.container_log_max_files, 5);
        assert_true(c.container_log_monitor_interval == 10 * USEC_PER_SEC);
        assert_int_equal(strv_length(c.eviction_hard), 4);
        assert_false(c.dry_run);
        nanolet_config_deinit(&c);
}

static const char kubelet_config[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                     "kind: KubeletConfiguration\n"
                                     "staticPodPath: /srv/manifests\n"
                                     "staticPodURL: http://127.0.0.1:8080/pods\n"
                                     "staticPodURLHeader:\n"
                                     "  X-Token: [abc, def]\n"
                                     "fileCheckFrequency: 5s\n"
                                     "httpCheckFrequency: 1m30s\n"
                                     "clusterDNS: [10.96.0.10]\n"
                                     "clusterDomain: example.local\n"
                                     "readOnlyPort: 0\n"
                                     "containerLogMaxSize: 20Mi\n"
                                     "containerLogMaxFiles: 3\n"
                                     "serializeImagePulls: false\n"
                                     "evictionHard:\n"
                                     "  memory.available: 200Mi\n"
                                     "authentication:\n"
                                     "  anonymous: {enabled: false}\n"
                                     "someTypo: 1\n";

static void test_file(void **state) {
        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, kubelet_config, strlen(kubelet_config),
                                                    "kc.yaml", &d),
                         0);
        assert_int_equal(d.n_errors, 0);
        assert_int_equal(d.n_warnings, 2); /* authentication ignored, someTypo unknown */
        assert_string_equal(c.pod_manifest_path, "/srv/manifests");
        assert_string_equal(c.manifest_url, "http://127.0.0.1:8080/pods");
        assert_int_equal(strv_length(c.manifest_url_headers), 2);
        assert_string_equal(c.manifest_url_headers[0], "X-Token: abc");
        assert_string_equal(c.manifest_url_headers[1], "X-Token: def");
        assert_true(c.file_check_frequency == 5 * USEC_PER_SEC);
        assert_true(c.http_check_frequency == 90 * USEC_PER_SEC);
        assert_string_equal(c.cluster_dns[0], "10.96.0.10");
        assert_string_equal(c.cluster_domain, "example.local");
        assert_int_equal(c.read_only_port, 0);
        assert_int_equal(c.container_log_max_size, 20 * 1024 * 1024);
        assert_int_equal(c.container_log_max_files, 3);
        assert_false(c.serialize_image_pulls);
        assert_int_equal(strv_length(c.eviction_hard), 1);
        assert_string_equal(c.eviction_hard[0], "memory.available<200Mi");
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);
}

static void test_file_errors(void **state) {
        static const char bad[] = "apiVersion: v1\n"
                                  "kind: KubeletConfiguration\n"
                                  "fileCheckFrequency: soon\n"
                                  "readOnlyPort: \"10255\"\n";
        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, bad, strlen(bad), "kc.yaml", &d), -EINVAL);
        assert_int_equal(d.n_errors, 3);
        bool saw_line3 = false;
        for (size_t i = 0; i < d.n; i++) {
                char *s = diag_to_string(&d.items[i]);
                if (strstr(s, "kc.yaml:3: fileCheckFrequency:"))
                        saw_line3 = true;
                free(s);
        }
        assert_true(saw_line3);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);
}

static void test_flags_override_file(void **state) {
        char path[] = "/tmp/nanolet-test-config-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(write_file_atomic(path, kubelet_config, strlen(kubelet_config), 0644), 0);

        char *argv[] = { "serve",
                         "--pod-manifest-path",
                         "/flag/path",
                         "--config",
                         path,
                         "--file-check-frequency=7s",
                         "--manifest-url-header",
                         "A: b",
                         "--dry-run",
                         "-v",
                         "4",
                         NULL };
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_string_equal(c.pod_manifest_path,
                            "/flag/path"); /* flag before --config still wins */
        assert_true(c.file_check_frequency == 7 * USEC_PER_SEC);
        assert_true(c.http_check_frequency == 90 * USEC_PER_SEC); /* from the file */
        /* the flag's headers replace the file's, as kubelet's map flags */
        assert_int_equal(strv_length(c.manifest_url_headers), 1);
        assert_string_equal(c.manifest_url_headers[0], "A: b");
        assert_true(c.dry_run);
        assert_int_equal(c.verbosity, 4);
        nanolet_config_deinit(&c);
        unlink(path);
}

/* kubelet's settings: read from the file, overridden by flags,
 * kubelet's validation. */
static const char kubelet_settings[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                       "kind: KubeletConfiguration\n"
                                       "seccompDefault: false\n"
                                       "podLogsDir: /srv/pod-logs\n"
                                       "allowedUnsafeSysctls: [kernel.msg*]\n"
                                       "shutdownGracePeriod: 30s\n"
                                       "shutdownGracePeriodCriticalPods: 10s\n"
                                       "containerLogMaxWorkers: 3\n"
                                       "imageMaximumGCAge: 1h\n";

static void test_kubelet_settings(void **state) {
        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_true(c.seccomp_default); /* RuntimeDefault, unlike kubelet */
        assert_int_equal(c.container_log_max_workers, 1);
        assert_true(c.image_maximum_gc_age == 0);
        assert_true(c.shutdown_grace_period == 0);
        assert_null(c.allowed_unsafe_sysctls);
        assert_int_equal(nanolet_config_load_buffer(&c, kubelet_settings, strlen(kubelet_settings),
                                                    "k.yaml", &d),
                         0);
        assert_int_equal(d.n_errors + d.n_warnings, 0);
        diagnostics_deinit(&d);
        assert_false(c.seccomp_default);
        assert_string_equal(c.pod_logs_dir, "/srv/pod-logs");
        assert_int_equal(strv_length(c.allowed_unsafe_sysctls), 1);
        assert_string_equal(c.allowed_unsafe_sysctls[0], "kernel.msg*");
        assert_true(c.shutdown_grace_period == 30 * USEC_PER_SEC);
        assert_true(c.shutdown_grace_period_critical_pods == 10 * USEC_PER_SEC);
        assert_int_equal(c.container_log_max_workers, 3);
        assert_true(c.image_maximum_gc_age == 3600 * USEC_PER_SEC);

        char *argv[] = { "serve",
                         "--seccomp-default",
                         "--allowed-unsafe-sysctls=net.core.*,kernel.shmmax",
                         "--allowed-unsafe-sysctls",
                         "fs.mqueue.*",
                         "--image-maximum-gc-age",
                         "10m",
                         "--pod-logs-dir",
                         "/srv/other",
                         NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_true(c.seccomp_default);
        /* a list flag replaces the file's list, as kubelet's flags do */
        assert_int_equal(strv_length(c.allowed_unsafe_sysctls), 3);
        assert_false(strv_contains(c.allowed_unsafe_sysctls, "kernel.msg*"));
        assert_true(strv_contains(c.allowed_unsafe_sysctls, "net.core.*"));
        assert_true(strv_contains(c.allowed_unsafe_sysctls, "fs.mqueue.*"));
        assert_true(c.image_maximum_gc_age == 600 * USEC_PER_SEC);
        assert_string_equal(c.pod_logs_dir, "/srv/other");
        char *off[] = { "serve", "--seccomp-default=false", NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, 2, off), 0);
        assert_false(c.seccomp_default);
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--seccomp-default=maybe", NULL };
        /* kubelet: the maximum age must be above the minimum (2m). */
        char *bad2[] = { "serve", "--image-maximum-gc-age=1m", NULL };
        char *bad3[] = { "serve", "--pod-logs-dir=relative/logs", NULL };
        char *bad4[] = { "serve", "--image-maximum-gc-age=soon", NULL };
        char *bad5[] = { "serve", "--image-maximum-gc-age=2m", NULL }; /* equal: not greater */
        char **all[] = { bad1, bad2, bad3, bad4, bad5 };
        assert_all_rejected(all, ELEMENTSOF(all));

        /* The file's values are validated as the flags are. */
        static const char *const bad_files[] = {
                "containerLogMaxWorkers: 0\n",
                "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_files); i++) {
                char path[] = "/tmp/nanolet-test-config-XXXXXX";
                int fd = mkstemp(path);
                assert_true(fd >= 0);
                close(fd);
                char *text = strprintf("apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                       "kind: KubeletConfiguration\n%s",
                                       bad_files[i]);
                assert_non_null(text);
                assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
                free(text);
                char *a[] = { "serve", "--config", path, NULL };
                assert_int_equal(nanolet_config_init(&c), 0);
                assert_int_equal(nanolet_config_parse_argv(&c, 3, a), -EINVAL);
                nanolet_config_deinit(&c);
                unlink(path);
        }
}

/* --evict-static-pods / evictStaticPods: off unless asked (kubelet never
 * evicts a static pod), from the file, the flag over the file, and only a
 * boolean. */
static void test_evict_static_pods(void **state) {
        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_false(c.evict_static_pods);
        static const char file[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n"
                                   "evictStaticPods: true\n";
        assert_int_equal(nanolet_config_load_buffer(&c, file, strlen(file), "k.yaml", &d), 0);
        assert_int_equal(d.n_errors + d.n_warnings, 0);
        assert_true(c.evict_static_pods);
        char *off[] = { "serve", "--evict-static-pods=false", NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, 2, off), 0);
        assert_false(c.evict_static_pods);
        char *on[] = { "serve", "--evict-static-pods", NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, 2, on), 0);
        assert_true(c.evict_static_pods);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);

        static const char bad_file[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                       "kind: KubeletConfiguration\n"
                                       "evictStaticPods: sometimes\n";
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_true(nanolet_config_load_buffer(&c, bad_file, strlen(bad_file), "k.yaml", &d) < 0 ||
                    d.n_errors > 0);
        assert_false(c.evict_static_pods);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);
        char *bad[] = { "serve", "--evict-static-pods=yes please", NULL };
        char **all[] = { bad };
        assert_all_rejected(all, ELEMENTSOF(all));
}

static void test_bad_flags(void **state) {
        char *argv1[] = { "serve", "--read-only-port", "70000", NULL };
        char *argv2[] = { "serve", "--file-check-frequency", "often", NULL };
        char *argv3[] = { "serve", "--runtime", "docker", NULL };
        char *argv4[] = { "serve", "stray", NULL };
        char *argv5[] = { "serve", "--node-ip", "10.0.0.300", NULL };
        char *argv6[] = { "serve", "--node-ip", "", NULL };
        char *argv7[] = { "serve", "--manifest-url-max-backoff", "0s", NULL };
        char *argv8[] = { "serve", "--manifest-url-max-backoff", "25h", NULL };
        char *argv9[] = { "serve", "--manifest-url-max-backoff", "-1m", NULL };
        char **all[] = { argv1, argv2, argv3, argv4, argv5, argv6, argv7, argv8, argv9 };
        assert_all_rejected(all, ELEMENTSOF(all));

        NanoletConfig c;
        char *ok[] = { "serve", "--manifest-url-max-backoff", "90s", NULL };
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, 3, ok), 0);
        assert_true(c.manifest_url_max_backoff == 90 * USEC_PER_SEC);
        nanolet_config_deinit(&c);
}

/* Signed manifest URLs: keys repeatable (flags and file), format checked,
 * key paths absolute. */
static void test_signature_settings(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_null(c.manifest_url_public_keys);
        assert_string_equal(c.manifest_url_signature_format, "cosign");
        char *argv[] = { "serve",
                         "--manifest-url-public-key",
                         "/etc/nanolet/old.pub",
                         "--manifest-url-public-key=/etc/nanolet/new.pub",
                         "--manifest-url-signature-format",
                         "minisign",
                         "--manifest-url-signature-url",
                         "https://fleet.example/sigs/box.minisig",
                         NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_int_equal(strv_length(c.manifest_url_public_keys), 2);
        assert_string_equal(c.manifest_url_public_keys[1], "/etc/nanolet/new.pub");
        assert_string_equal(c.manifest_url_signature_format, "minisign");
        assert_string_equal(c.manifest_url_signature_url, "https://fleet.example/sigs/box.minisig");
        nanolet_config_deinit(&c);

        static const char file[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n"
                                   "manifestURLPublicKeys: [/k/a.pub, /k/b.pub]\n"
                                   "manifestURLSignatureFormat: sigstore-bundle\n";
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, file, strlen(file), "kc.yaml", &d), 0);
        assert_int_equal(strv_length(c.manifest_url_public_keys), 2);
        assert_string_equal(c.manifest_url_signature_format, "sigstore-bundle");
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);

        char *bad1[] = { "serve", "--manifest-url-signature-format", "pgp", NULL };
        char *bad2[] = { "serve", "--manifest-url-public-key", "relative.pub", NULL };
        char *bad3[] = { "serve", "--manifest-url-signature-url", "file:///etc/x.sig", NULL };
        char **all[] = { bad1, bad2, bad3 };
        assert_all_rejected(all, ELEMENTSOF(all));
}

/* kubelet's flag parser takes whole names only: getopt's unambiguous
 * abbreviations (and getopt_long_only()'s single-dash ones) are unknown
 * flags, --config's among them, which must not load the file. */
static void test_flag_abbreviations(void **state) {
        char *root[] = { "serve", "--root=/x", NULL };
        char *root_single[] = { "serve", "-root=/x", NULL };
        char *max_pod[] = { "serve", "--max-pod=5", NULL };
        char *max_pod_separate[] = { "serve", "--max-pod", "5", NULL };
        char *runtime[] = { "serve", "--container-runtime=remote", NULL };
        char *help[] = { "serve", "--hel", NULL };
        char **all[] = { root, root_single, max_pod, max_pod_separate, runtime, help };
        assert_all_rejected(all, ELEMENTSOF(all));

        char path[] = "/tmp/nanolet-test-config-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        static const char text[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\nmaxPods: 7\n";
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
        char *conf_abbrev[] = { "serve", "--conf", path, NULL };
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, 3, conf_abbrev), -EINVAL);
        assert_int_not_equal(c.max_pods, 7);
        assert_null(c.config_file);
        nanolet_config_deinit(&c);

        /* the whole names, single dash or double, still work */
        char *whole[] = { "serve", "--max-pods=5", "-root-dir=/x", "--config", path, NULL };
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, 5, whole), 0);
        assert_int_equal(c.max_pods, 5);
        assert_string_equal(c.root_dir, "/x");
        assert_string_equal(c.config_file, path);
        nanolet_config_deinit(&c);
        unlink(path);
}

/* The logger is set up from -v and --logging-format before the file is
 * read, wherever they stand; nothing else is applied, nothing is said. */
static void test_log_flags_first(void **state) {
        char *argv[] = { "serve", "--config", "/nonexistent",          "--max-pods=x",
                         "-v",    "5",        "--logging-format=json", "--bogus",
                         NULL };
        char *bad[] = { "serve", "--logging-format=xml", "-v=11", NULL };
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_log_flags(&c, 8, argv), 0);
        assert_true(c.log_json);
        assert_int_equal(c.verbosity, 5);
        assert_null(c.config_file);
        assert_int_not_equal(c.max_pods, 0);
        nanolet_config_deinit(&c);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_log_flags(&c, 3, bad), 0);
        assert_false(c.log_json);
        assert_int_equal(c.verbosity, 0);
        nanolet_config_deinit(&c);
}

static void test_node_ip(void **state) {
        char *argv[] = { "serve", "--node-ip", "192.168.1.5,fd00::5", NULL };
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_null(c.node_ips); /* detected at start */
        assert_int_equal(nanolet_config_parse_argv(&c, 3, argv), 0);
        assert_int_equal(strv_length(c.node_ips), 2);
        assert_string_equal(c.node_ips[0], "192.168.1.5");
        assert_string_equal(c.node_ips[1], "fd00::5");
        nanolet_config_deinit(&c);
}

static void test_registry_flags(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_string_equal(c.image_credential_file, "/var/lib/nanolet/config.json");
        assert_string_equal(c.registries_conf, "/etc/containers/registries.conf");
        assert_string_equal(c.registry_certs_dir, "/etc/containers/certs.d");
        assert_null(c.insecure_registries);
        char *argv[] = { "serve",
                         "--image-credential-file",
                         "/etc/nanolet/auth.json",
                         "--registries-conf=/etc/nanolet/registries.conf",
                         "--registry-certs-dir",
                         "/etc/nanolet/certs.d",
                         "--insecure-registry",
                         "10.0.0.1:5000",
                         "--insecure-registry=registry.lan",
                         NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_string_equal(c.image_credential_file, "/etc/nanolet/auth.json");
        assert_string_equal(c.registries_conf, "/etc/nanolet/registries.conf");
        assert_string_equal(c.registry_certs_dir, "/etc/nanolet/certs.d");
        assert_int_equal(strv_length(c.insecure_registries), 2);
        assert_string_equal(c.insecure_registries[0], "10.0.0.1:5000");
        assert_string_equal(c.insecure_registries[1], "registry.lan");
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--insecure-registry", "http://10.0.0.1:5000", NULL };
        char *bad2[] = { "serve", "--insecure-registry", "host/ns", NULL };
        char *bad3[] = { "serve", "--insecure-registry", "", NULL };
        char *bad4[] = { "serve", "--registries-conf", NULL };
        char *bad5[] = { "serve", "--image-maximum-gc-age=2m", NULL }; /* equal: not greater */
        char **all[] = { bad1, bad2, bad3, bad4, bad5 };
        assert_all_rejected(all, ELEMENTSOF(all));
}

static void test_pull_flags(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_true(c.serialize_image_pulls);
        assert_int_equal(c.max_parallel_image_pulls, 0);
        assert_false(c.image_pull_never);
        char *argv[] = { "serve", "--serialize-image-pulls=false", "--max-parallel-image-pulls",
                         "4",     "--image-pull-policy-override",  "never",
                         NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_false(c.serialize_image_pulls);
        assert_int_equal(c.max_parallel_image_pulls, 4);
        assert_true(c.image_pull_never);
        nanolet_config_deinit(&c);

        /* kubelet's rule: a parallel bound needs serializeImagePulls false. */
        char *serial[] = { "serve", "--max-parallel-image-pulls", "3", NULL };
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(serial) - 1, serial),
                         -EINVAL);
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--image-pull-policy-override", "always", NULL };
        char *bad2[] = { "serve", "--serialize-image-pulls", "yes", NULL };
        char *bad3[] = { "serve", "--max-parallel-image-pulls", "0", NULL };
        char **all[] = { bad1, bad2, bad3 };
        assert_all_rejected(all, ELEMENTSOF(all));
}

static void test_gc_eviction_flags(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(c.image_minimum_gc_age, 120 * USEC_PER_SEC);
        assert_int_equal(c.eviction_pressure_transition_period, 300 * USEC_PER_SEC);
        assert_int_equal(strv_length(c.eviction_hard), 4);
        char *argv[] = { "serve",
                         "--image-gc-high-threshold=90",
                         "--image-gc-low-threshold",
                         "70",
                         "--image-minimum-gc-age=0",
                         "--pinned-images",
                         "a:1,b",
                         "--pinned-images=c",
                         "--eviction-hard",
                         "nodefs.available<5%,memory.available<50Mi",
                         "--eviction-soft=nodefs.available<20%",
                         "--eviction-soft-grace-period=nodefs.available=30s",
                         "--eviction-pressure-transition-period=1m",
                         NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_int_equal(c.image_gc_high_threshold, 90);
        assert_int_equal(c.image_gc_low_threshold, 70);
        assert_int_equal(c.image_minimum_gc_age, 0);
        assert_int_equal(strv_length(c.pinned_images), 3);
        assert_string_equal(c.pinned_images[2], "c");
        /* The flag replaces the defaults. */
        assert_int_equal(strv_length(c.eviction_hard), 2);
        assert_string_equal(c.eviction_hard[1], "memory.available<50Mi");
        assert_int_equal(c.eviction_pressure_transition_period, 60 * USEC_PER_SEC);
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--image-gc-low-threshold=85", NULL };
        char *bad2[] = { "serve", "--image-gc-high-threshold=101", NULL };
        char *bad3[] = { "serve", "--eviction-hard=disk.available<1Gi", NULL };
        char *bad4[] = { "serve", "--eviction-soft=memory.available<1Gi", NULL };
        char *bad5[] = { "serve", "--eviction-hard=memory.available<0", NULL };
        char **all[] = { bad1, bad2, bad3, bad4, bad5 };
        assert_all_rejected(all, ELEMENTSOF(all));
}

static void test_container_log_flags(void **state) {
        char path[] = "/tmp/nanolet-test-config-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(write_file_atomic(path, kubelet_config, strlen(kubelet_config), 0644), 0);

        /* the file says 20Mi and 3; flags win */
        char *argv[] = { "serve",
                         "--config",
                         path,
                         "--container-log-max-size",
                         "64Ki",
                         "--container-log-max-files=2",
                         "--container-log-monitor-interval",
                         "2s",
                         NULL };
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_int_equal(c.container_log_max_size, 64 * 1024);
        assert_int_equal(c.container_log_max_files, 2);
        assert_true(c.container_log_monitor_interval == 2 * USEC_PER_SEC);
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--container-log-max-size", "0", NULL };
        char *bad2[] = { "serve", "--container-log-max-size", "lots", NULL };
        char *bad3[] = { "serve", "--container-log-max-files", "1", NULL };
        char *bad4[] = { "serve", "--container-log-max-files", "x", NULL };
        char *bad5[] = { "serve", "--image-maximum-gc-age=2m", NULL }; /* equal: not greater */
        char **all[] = { bad1, bad2, bad3, bad4, bad5 };
        assert_all_rejected(all, ELEMENTSOF(all));

        /* containerLogMaxFiles: 1 in the file is refused as kubelet does */
        static const char one_file[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                       "kind: KubeletConfiguration\n"
                                       "containerLogMaxFiles: 1\n";
        assert_int_equal(write_file_atomic(path, one_file, strlen(one_file), 0644), 0);
        char *argv5[] = { "serve", "--config", path, NULL };
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, 3, argv5), -EINVAL);
        nanolet_config_deinit(&c);
        unlink(path);
}

/* getopt_long_only() takes -config, --config= and -config= for --config
 * too; each must load the file, not be skipped as "already loaded". ("--conf"
 * is ambiguous since kubelet's --config-dir is accepted.) */
static void test_config_flag_spellings(void **state) {
        char path[] = "/tmp/nanolet-test-config-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(write_file_atomic(path, kubelet_config, strlen(kubelet_config), 0644), 0);
        _cleanup_free_ char *eq = strprintf("-config=%s", path);
        _cleanup_free_ char *abbrev_eq = strprintf("--config=%s", path);
        char *a1[] = { "serve", "-config", path, NULL };
        char *a2[] = { "serve", "--config", path, NULL };
        char *a3[] = { "serve", eq, NULL };
        char *a4[] = { "serve", "--dry-run", abbrev_eq, NULL };
        char **all[] = { a1, a2, a3, a4 };
        for (size_t i = 0; i < ELEMENTSOF(all); i++) {
                NanoletConfig c;
                assert_int_equal(nanolet_config_init(&c), 0);
                assert_int_equal(nanolet_config_parse_argv(&c, (int)strv_length(all[i]), all[i]),
                                 0);
                assert_string_equal(c.pod_manifest_path, "/srv/manifests");
                assert_non_null(c.config_file);
                assert_string_equal(c.config_file, path);
                nanolet_config_deinit(&c);
        }
        unlink(path);
}

static void test_node_name(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        c.hostname_override = strdup("Node-One.Example");
        assert_int_equal(nanolet_config_finish(&c), 0);
        assert_string_equal(c.node_name, "node-one.example");
        free(c.hostname_override);
        c.hostname_override = strdup("bad_name");
        assert_int_equal(nanolet_config_finish(&c), -EINVAL);
        nanolet_config_deinit(&c);
}

static void test_duration(void **state) {
        usec_t u;
        assert_int_equal(nanolet_parse_duration("20", &u), 0);
        assert_true(u == 20 * USEC_PER_SEC);
        assert_int_equal(nanolet_parse_duration("1m30s", &u), 0);
        assert_true(u == 90 * USEC_PER_SEC);
        assert_int_equal(nanolet_parse_duration("250ms", &u), 0);
        assert_true(u == 250 * USEC_PER_MSEC);
        assert_true(nanolet_parse_duration("x", &u) < 0);
        assert_true(nanolet_parse_duration("", &u) < 0);
}

static void test_resource_flags(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_string_equal(c.cgroup_root, "/");
        assert_true(c.cpu_cfs_quota);
        assert_int_equal(c.max_pods, 110);
        assert_int_equal(c.kube_reserved_memory, 0);
        char *argv[] = { "serve",
                         "--cgroup-root",
                         "/edge",
                         "--cpu-cfs-quota=false",
                         "--max-pods",
                         "2",
                         "--kube-reserved",
                         "cpu=100m,memory=256Mi,ephemeral-storage=1Gi",
                         "--system-reserved=cpu=1,memory=1Gi",
                         "--pod-pids-limit",
                         "1024",
                         "--cgroup-driver",
                         "systemd",
                         NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_string_equal(c.cgroup_root, "/edge");
        assert_false(c.cpu_cfs_quota);
        assert_int_equal(c.max_pods, 2);
        assert_int_equal(c.kube_reserved_milli_cpu, 100);
        assert_int_equal(c.kube_reserved_memory, 256 << 20);
        assert_int_equal(c.system_reserved_milli_cpu, 1000);
        assert_int_equal(c.system_reserved_memory, 1 << 30);
        assert_int_equal(c.pod_pids_limit, 1024);
        assert_int_equal(c.cgroup_driver, CGROUP_DRIVER_SYSTEMD);
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--cgroup-root", "relative", NULL };
        char *bad2[] = { "serve", "--cpu-cfs-quota", "yes", NULL };
        char *bad3[] = { "serve", "--kube-reserved", "gpu=1", NULL };
        char *bad4[] = { "serve", "--system-reserved", "memory", NULL };
        char *bad5[] = { "serve", "--kube-reserved", "memory=lots", NULL };
        char *bad6[] = { "serve", "--max-pods", "0", NULL };
        char *bad7[] = { "serve", "--cgroup-driver", "docker", NULL };
        char *bad8[] = { "serve", "--hairpin-mode", "promiscuous", NULL };
        char **all[] = { bad1, bad2, bad3, bad4, bad5, bad6, bad7, bad8 };
        assert_all_rejected(all, ELEMENTSOF(all));

        static const char file[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n"
                                   "maxPods: 7\n"
                                   "cgroupRoot: /nodes/a\n"
                                   "cpuCFSQuota: false\n"
                                   "kubeReserved: {cpu: 200m, memory: 128Mi}\n"
                                   "systemReserved: {memory: 1Gi, pid: \"100\"}\n";
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, file, strlen(file), "kc.yaml", &d), 0);
        assert_int_equal(d.n_warnings, 0);
        assert_int_equal(c.max_pods, 7);
        assert_string_equal(c.cgroup_root, "/nodes/a");
        assert_false(c.cpu_cfs_quota);
        assert_int_equal(c.kube_reserved_milli_cpu, 200);
        assert_int_equal(c.kube_reserved_memory, 128 << 20);
        assert_int_equal(c.system_reserved_milli_cpu, 0);
        assert_int_equal(c.system_reserved_memory, 1 << 30);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);

        static const char badfile[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                      "kind: KubeletConfiguration\n"
                                      "kubeReserved: {gpu: 1}\n"
                                      "systemReserved: 5\n";
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, badfile, strlen(badfile), "kc.yaml", &d),
                         -EINVAL);
        assert_int_equal(d.n_errors, 2);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);
}

/* Every field of kubelet's KubeletConfiguration (kubelet.config.k8s.io/
 * v1beta1): staging/src/k8s.io/kubelet/config/v1beta1/types.go of
 * kubernetes/kubernetes at commit 001332b0422071acf4860769f18e34b5e9b7c1bc
 * (master after v1.35: it has the fields of the v1.35 release plus
 * memoryReservationPolicy). Each must be in the settings table, honoured,
 * ignored with a reason or rejected: none may fall through to "unknown". */
static const char *const kubelet_v1beta1_fields[] = {
        "enableServer",
        "staticPodPath",
        "podLogsDir",
        "syncFrequency",
        "fileCheckFrequency",
        "httpCheckFrequency",
        "staticPodURL",
        "staticPodURLHeader",
        "address",
        "port",
        "readOnlyPort",
        "tlsCertFile",
        "tlsPrivateKeyFile",
        "tlsCipherSuites",
        "tlsCurvePreferences",
        "tlsMinVersion",
        "rotateCertificates",
        "serverTLSBootstrap",
        "authentication",
        "authorization",
        "registryPullQPS",
        "registryBurst",
        "imagePullCredentialsVerificationPolicy",
        "preloadedImagesVerificationAllowlist",
        "eventRecordQPS",
        "eventBurst",
        "enableDebuggingHandlers",
        "enableContentionProfiling",
        "healthzPort",
        "healthzBindAddress",
        "oomScoreAdj",
        "clusterDomain",
        "clusterDNS",
        "streamingConnectionIdleTimeout",
        "nodeStatusUpdateFrequency",
        "nodeStatusReportFrequency",
        "nodeLeaseDurationSeconds",
        "imageMinimumGCAge",
        "imageMaximumGCAge",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "volumeStatsAggPeriod",
        "kubeletCgroups",
        "systemCgroups",
        "cgroupRoot",
        "cgroupsPerQOS",
        "cgroupDriver",
        "cpuManagerPolicy",
        "singleProcessOOMKill",
        "cpuManagerPolicyOptions",
        "cpuManagerReconcilePeriod",
        "draManagerReconcilePeriod",
        "memoryManagerPolicy",
        "topologyManagerPolicy",
        "topologyManagerScope",
        "topologyManagerPolicyOptions",
        "qosReserved",
        "runtimeRequestTimeout",
        "hairpinMode",
        "maxPods",
        "podCIDR",
        "podPidsLimit",
        "resolvConf",
        "runOnce",
        "cpuCFSQuota",
        "cpuCFSQuotaPeriod",
        "nodeStatusMaxImages",
        "maxOpenFiles",
        "contentType",
        "kubeAPIQPS",
        "kubeAPIBurst",
        "serializeImagePulls",
        "maxParallelImagePulls",
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "evictionPressureTransitionPeriod",
        "evictionMaxPodGracePeriod",
        "evictionMinimumReclaim",
        "mergeDefaultEvictionSettings",
        "podsPerCore",
        "enableControllerAttachDetach",
        "protectKernelDefaults",
        "makeIPTablesUtilChains",
        "iptablesMasqueradeBit",
        "iptablesDropBit",
        "featureGates",
        "failSwapOn",
        "memorySwap",
        "containerLogMaxSize",
        "containerLogMaxFiles",
        "containerLogMaxWorkers",
        "containerLogMonitorInterval",
        "configMapAndSecretChangeDetectionStrategy",
        "systemReserved",
        "kubeReserved",
        "reservedSystemCPUs",
        "showHiddenMetricsForVersion",
        "systemReservedCgroup",
        "kubeReservedCgroup",
        "enforceNodeAllocatable",
        "allowedUnsafeSysctls",
        "volumePluginDir",
        "providerID",
        "kernelMemcgNotification",
        "logging",
        "enableSystemLogHandler",
        "enableSystemLogQuery",
        "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods",
        "shutdownGracePeriodByPodPriority",
        "crashLoopBackOff",
        "reservedMemory",
        "enableProfilingHandler",
        "enableDebugFlagsHandler",
        "seccompDefault",
        "memoryThrottlingFactor",
        "memoryReservationPolicy",
        "registerWithTaints",
        "registerNode",
        "tracing",
        "localStorageCapacityIsolation",
        "containerRuntimeEndpoint",
        "imageServiceEndpoint",
        "failCgroupV1",
        "userNamespaces",
};

/* kubelet's flags: KubeletFlags.AddFlags and AddKubeletConfigFlags in
 * cmd/kubelet/app/options/options.go (kubernetes/kubernetes commit
 * 6785e9ed401a526cfb4ae33d498b088e27237ad1), the container runtime flags of
 * pkg/kubelet/config/flags.go, component-base's logging flags, and the
 * flags added since (container-log-max-workers,
 * container-log-monitor-interval). Each is honoured, or accepted with one
 * warning, or refused unless it has kubelet's default. */
static const char *const kubelet_flags[] = {
        "config",
        "config-dir",
        "kubeconfig",
        "bootstrap-kubeconfig",
        "hostname-override",
        "node-ip",
        "cert-dir",
        "cloud-provider",
        "root-dir",
        "seccomp-default",
        "node-labels",
        "lock-file",
        "exit-on-lock-contention",
        "minimum-container-ttl-duration",
        "maximum-dead-containers-per-container",
        "maximum-dead-containers",
        "register-schedulable",
        "keep-terminated-pod-volumes",
        "experimental-mounter-path",
        "cloud-config",
        "experimental-allocatable-ignore-eviction",
        "enable-server",
        "fail-swap-on",
        "pod-manifest-path",
        "sync-frequency",
        "file-check-frequency",
        "http-check-frequency",
        "manifest-url",
        "manifest-url-header",
        "address",
        "port",
        "read-only-port",
        "container-runtime-endpoint",
        "image-service-endpoint",
        "anonymous-auth",
        "authentication-token-webhook",
        "authentication-token-webhook-cache-ttl",
        "client-ca-file",
        "authorization-mode",
        "authorization-webhook-cache-authorized-ttl",
        "authorization-webhook-cache-unauthorized-ttl",
        "tls-cert-file",
        "tls-private-key-file",
        "rotate-server-certificates",
        "tls-cipher-suites",
        "tls-min-version",
        "rotate-certificates",
        "registry-qps",
        "registry-burst",
        "event-qps",
        "event-burst",
        "enable-debugging-handlers",
        "contention-profiling",
        "healthz-port",
        "healthz-bind-address",
        "oom-score-adj",
        "cluster-domain",
        "volume-plugin-dir",
        "cluster-dns",
        "streaming-connection-idle-timeout",
        "node-status-update-frequency",
        "minimum-image-ttl-duration",
        "image-gc-high-threshold",
        "image-gc-low-threshold",
        "volume-stats-agg-period",
        "feature-gates",
        "kubelet-cgroups",
        "system-cgroups",
        "provider-id",
        "cgroups-per-qos",
        "cgroup-driver",
        "cgroup-root",
        "cpu-manager-policy",
        "cpu-manager-policy-options",
        "cpu-manager-reconcile-period",
        "qos-reserved",
        "topology-manager-policy",
        "runtime-request-timeout",
        "hairpin-mode",
        "max-pods",
        "pod-cidr",
        "pod-max-pids",
        "resolv-conf",
        "runonce",
        "cpu-cfs-quota",
        "cpu-cfs-quota-period",
        "enable-controller-attach-detach",
        "make-iptables-util-chains",
        "iptables-masquerade-bit",
        "iptables-drop-bit",
        "container-log-max-size",
        "container-log-max-files",
        "allowed-unsafe-sysctls",
        "node-status-max-images",
        "kernel-memcg-notification",
        "local-storage-capacity-isolation",
        "max-open-files",
        "kube-api-content-type",
        "kube-api-qps",
        "kube-api-burst",
        "serialize-image-pulls",
        "eviction-hard",
        "eviction-soft",
        "eviction-soft-grace-period",
        "eviction-pressure-transition-period",
        "eviction-max-pod-grace-period",
        "eviction-minimum-reclaim",
        "pods-per-core",
        "protect-kernel-defaults",
        "reserved-cpus",
        "topology-manager-scope",
        "topology-manager-policy-options",
        "system-reserved",
        "kube-reserved",
        "enforce-node-allocatable",
        "system-reserved-cgroup",
        "kube-reserved-cgroup",
        "memory-manager-policy",
        "reserved-memory",
        "register-node",
        "register-with-taints",
        "show-hidden-metrics-for-version",
        /* pkg/kubelet/config/flags.go */
        "pod-infra-container-image",
        "image-credential-provider-config",
        "image-credential-provider-bin-dir",
        "runtime-cgroups",
        /* component-base logs */
        "v",
        "vmodule",
        "log-flush-frequency",
        "logging-format",
        "log-json-split-stream",
        "log-json-info-buffer-size",
        "log-text-split-stream",
        "log-text-info-buffer-size",
        /* since */
        "container-log-max-workers",
        "container-log-monitor-interval",
};

static void test_table_covers_kubelet(void **state) {
        size_t missing = 0;
        for (size_t i = 0; i < ELEMENTSOF(kubelet_v1beta1_fields); i++)
                if (!settings_find_key(kubelet_v1beta1_fields[i])) {
                        print_error("KubeletConfiguration field %s is not in the table\n",
                                    kubelet_v1beta1_fields[i]);
                        missing++;
                }
        for (size_t i = 0; i < ELEMENTSOF(kubelet_flags); i++)
                if (!settings_find_flag(kubelet_flags[i])) {
                        print_error("kubelet flag --%s is not in the table\n", kubelet_flags[i]);
                        missing++;
                }
        assert_int_equal(missing, 0);

        /* The table itself: no key or flag twice, every non-honoured entry
         * says why, every honoured one says what. */
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                assert_true(s->flag || s->key);
                assert_non_null(s->help);
                assert_true(strlen(s->help) > 5);
                if (s->key)
                        assert_ptr_equal(settings_find_key(s->key), s);
                if (s->flag)
                        assert_ptr_equal(settings_find_flag(s->flag), s);
                if (s->disposition == SETTING_REJECTED)
                        assert_non_null(s->value);
                if (s->type == SETTING_CUSTOM)
                        assert_non_null(s->parse);
        }
}

static void test_kubelet_flags(void **state) {
        NanoletConfig c;
        char *accepted[] = { "serve",
                             "--kubeconfig=/etc/kubernetes/kubelet.conf",
                             "--bootstrap-kubeconfig",
                             "/etc/kubernetes/bootstrap-kubelet.conf",
                             "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
                             "--pod-infra-container-image=registry.k8s.io/pause:3.10",
                             "--node-labels=a=b,c=d",
                             "--register-node=false",
                             "--rotate-certificates",
                             "--runonce=false",
                             "--seccomp-default",
                             "--container-log-max-workers=4",
                             "--allowed-unsafe-sysctls=net.core.somaxconn,kernel.msg*",
                             "--v=3",
                             NULL };
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(accepted) - 1, accepted), 0);
        assert_true(c.seccomp_default);
        assert_int_equal(c.container_log_max_workers, 4);
        assert_int_equal(strv_length(c.allowed_unsafe_sysctls), 2);
        assert_int_equal(c.verbosity, 3);
        nanolet_config_deinit(&c);

        char *bad1[] = { "serve", "--runonce", NULL };
        char *bad2[] = { "serve", "--kubeconfg=/x", NULL };
        char *bad3[] = { "serve", "--no-such-flag", NULL };
        char *bad4[] = { "serve", "--kubeconfig", NULL };
        char *bad5[] = { "serve", "--container-log-max-workers=0", NULL };
        char **all[] = { bad1, bad2, bad3, bad4, bad5 };
        assert_all_rejected(all, ELEMENTSOF(all));
}

/* kubelet's decoding: null is "not set", and its defaulting turns kubeadm's
 * "0s" durations into the defaults. */
static void test_null_and_zero(void **state) {
        static const char file[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n"
                                   "clusterDNS: null\n"
                                   "staticPodURL: ~\n"
                                   "authentication: null\n"
                                   "syncFrequency: 0s\n"
                                   "fileCheckFrequency: 0s\n"
                                   "imageMinimumGCAge: 0s\n"
                                   "imageMaximumGCAge: 0s\n"
                                   "evictionPressureTransitionPeriod: 0s\n"
                                   "maxPods: 0\n"
                                   "readOnlyPort: 0\n"
                                   "shutdownGracePeriod: 30s\n"
                                   "shutdownGracePeriodCriticalPods: 10s\n"
                                   "seccompDefault: false\n"
                                   "podLogsDir: /srv/pod-logs\n";
        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_true(c.seccomp_default); /* kubelet's default is false */
        assert_int_equal(c.container_log_max_workers, 1);
        assert_int_equal(c.image_maximum_gc_age, 0);
        assert_int_equal(nanolet_config_load_buffer(&c, file, strlen(file), "kc.yaml", &d), 0);
        assert_int_equal(d.n_errors, 0);
        assert_int_equal(d.n_warnings, 0); /* a null ignored field is not even set */
        assert_null(c.cluster_dns);
        assert_null(c.manifest_url);
        assert_true(c.sync_frequency == 60 * USEC_PER_SEC);
        assert_true(c.file_check_frequency == 20 * USEC_PER_SEC);
        assert_true(c.image_minimum_gc_age == 120 * USEC_PER_SEC);
        assert_true(c.eviction_pressure_transition_period == 300 * USEC_PER_SEC);
        assert_int_equal(c.image_maximum_gc_age, 0);
        assert_int_equal(c.max_pods, 110);
        assert_int_equal(c.read_only_port, 0); /* 0 means off here, as in kubelet */
        assert_true(c.shutdown_grace_period == 30 * USEC_PER_SEC);
        assert_true(c.shutdown_grace_period_critical_pods == 10 * USEC_PER_SEC);
        assert_false(c.seccomp_default);
        assert_string_equal(c.pod_logs_dir, "/srv/pod-logs");
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);

        /* file integers are range-checked like flags; runOnce true is refused */
        static const char bad[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                  "kind: KubeletConfiguration\n"
                                  "healthzPort: 70000\n"
                                  "runOnce: true\n"
                                  "containerLogMaxWorkers: 0\n";
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, bad, strlen(bad), "kc.yaml", &d), -EINVAL);
        assert_int_equal(d.n_errors, 3);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);
}

/* kubeadm's own files (tests/kubeadm/, see its README): the config loads
 * with exactly one warning per ignored field it holds and no error, and
 * kubeadm's flags are accepted. */
static void test_kubeadm_files(void **state) {
        const char *dir = getenv("TEST_DATA_DIR") ?: TEST_DATA_DIR;
        _cleanup_free_ char *path = strprintf("%s/kubeadm/config.yaml", dir);
        _cleanup_free_ char *buf = NULL;
        size_t size;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 1 << 20, &buf, &size), 0);

        /* the ignored fields, counted from the file's top-level keys */
        size_t ignored = 0;
        for (char *line = buf; line && *line;
             line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                if (!isalpha((unsigned char)line[0]))
                        continue;
                _cleanup_free_ char *key = strndup(line, strcspn(line, ":"));
                const Setting *s = settings_find_key(key);
                if (s && s->disposition == SETTING_IGNORED)
                        ignored++;
        }
        assert_true(ignored >= 10);

        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_load_buffer(&c, buf, size, path, &d), 0);
        assert_int_equal(d.n_errors, 0);
        assert_int_equal(d.n_warnings, ignored);
        assert_int_equal(c.cgroup_driver, CGROUP_DRIVER_SYSTEMD);
        assert_string_equal(c.pod_manifest_path, "/etc/kubernetes/manifests");
        assert_string_equal(c.cluster_dns[0], "10.96.0.10");
        assert_string_equal(c.resolv_conf, "/run/systemd/resolve/resolv.conf");
        assert_true(c.sync_frequency == 60 * USEC_PER_SEC); /* "0s": the default */
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);

        /* the command line of kubeadm's drop-in, as systemd splits it, with
         * the override a host without systemd as PID 1 needs */
        char *argv[] = { "serve",
                         "--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                         "--kubeconfig=/etc/kubernetes/kubelet.conf",
                         "--config",
                         path,
                         "--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock",
                         "--pod-infra-container-image=registry.k8s.io/pause:3.10",
                         "--cgroup-driver=cgroupfs",
                         NULL };
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(nanolet_config_parse_argv(&c, (int)ELEMENTSOF(argv) - 1, argv), 0);
        assert_int_equal(c.cgroup_driver, CGROUP_DRIVER_CGROUPFS);
        assert_string_equal(c.config_file, path);
        nanolet_config_deinit(&c);
}

/* ---- what each setting may hold ---- */

static int parse_flag(const char *flag, const char *value) {
        _cleanup_free_ char *arg = strprintf("--%s", flag);
        char *argv[] = { "serve", arg, (char *)value, NULL };
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        int r = nanolet_config_parse_argv(&c, 3, argv);
        nanolet_config_deinit(&c);
        return r;
}

/* Loads a KubeletConfiguration whose fields are body; returns the load's
 * result and, when expect is set, asserts that a diagnostic holds it. */
static int load_body(const char *body, size_t body_len, const char *expect) {
        static const char head[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                   "kind: KubeletConfiguration\n";
        size_t n = strlen(head) + body_len;
        _cleanup_free_ char *buf = malloc(n);
        assert_non_null(buf);
        memcpy(buf, head, strlen(head));
        memcpy(buf + strlen(head), body, body_len);
        NanoletConfig c;
        Diagnostics d;
        diagnostics_init(&d);
        assert_int_equal(nanolet_config_init(&c), 0);
        int r = nanolet_config_load_buffer(&c, buf, n, "kc.yaml", &d);
        bool seen = !expect;
        for (size_t i = 0; i < d.n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d.items[i]);
                if (expect && strstr(line, expect))
                        seen = true;
                /* a diagnostic never carries the hostile bytes themselves */
                for (const char *q = line; *q; q++)
                        assert_true((unsigned char)*q >= 0x20 && *q != 0x7f);
                if (!seen)
                        print_message("diagnostic: %s\n", line);
        }
        assert_true(seen);
        nanolet_config_deinit(&c);
        diagnostics_deinit(&d);
        return r;
}

#define LOAD(body, expect) load_body(body, sizeof(body) - 1, expect)

/* ---- settings that name one of a few values ---- */

/* The parsed value of an enum setting. */
static int enum_value(const NanoletConfig *c, const char *flag) {
        if (streq(flag, "cgroup-driver"))
                return c->cgroup_driver;
        if (streq(flag, "hairpin-mode"))
                return c->hairpin_mode;
        if (streq(flag, "runtime"))
                return c->runtime;
        if (streq(flag, "container-monitor"))
                return c->container_monitor;
        if (streq(flag, "logging-format"))
                return c->log_json;
        if (streq(flag, "image-pull-policy-override"))
                return c->image_pull_never;
        fail_msg("--%s is no enum setting", flag);
        return -1;
}

static const struct {
        const char *flag, *key, *value;
        int expect;
} enum_accepted[] = {
        { "cgroup-driver", "cgroupDriver", "cgroupfs", CGROUP_DRIVER_CGROUPFS },
        { "cgroup-driver", "cgroupDriver", "systemd", CGROUP_DRIVER_SYSTEMD },
        { "hairpin-mode", "hairpinMode", "hairpin-veth", HAIRPIN_MODE_HAIRPIN_VETH },
        { "hairpin-mode", "hairpinMode", "promiscuous-bridge", HAIRPIN_MODE_PROMISCUOUS_BRIDGE },
        { "hairpin-mode", "hairpinMode", "none", HAIRPIN_MODE_NONE },
        { "runtime", NULL, "runc", RUNTIME_KIND_RUNC },
        { "runtime", NULL, "crun", RUNTIME_KIND_CRUN },
        { "runtime", NULL, "/usr/local/bin/crun", RUNTIME_KIND_PATH },
        { "container-monitor", NULL, "nanolet", CONTAINER_MONITOR_NANOLET },
        { "container-monitor", NULL, "conmon", CONTAINER_MONITOR_CONMON },
        { "logging-format", NULL, "text", false },
        { "logging-format", NULL, "json", true },
        { "image-pull-policy-override", NULL, "never", true },
        { "image-pull-policy-override", NULL, "", false },
};

/* The file's diagnostic names file, line and field. */
static const struct {
        const char *flag, *key, *value, *diagnostic;
} enum_rejected[] = {
        { "cgroup-driver", "cgroupDriver", "docker",
          "kc.yaml:3: cgroupDriver: expected cgroupfs or systemd" },
        { "cgroup-driver", "cgroupDriver", "Systemd",
          "kc.yaml:3: cgroupDriver: expected cgroupfs or systemd" },
        { "hairpin-mode", "hairpinMode", "promiscuous",
          "kc.yaml:3: hairpinMode: expected hairpin-veth, promiscuous-bridge or none" },
        { "runtime", NULL, "docker", NULL },
        { "runtime", NULL, "path", NULL },
        { "runtime", NULL, "bin/runc", NULL },
        { "container-monitor", NULL, "crun", NULL },
        { "logging-format", NULL, "yaml", NULL },
        { "image-pull-policy-override", NULL, "always", NULL },
};

static int load_field(NanoletConfig *c, const char *key, const char *value, Diagnostics *d) {
        _cleanup_free_ char *buf = strprintf("apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                             "kind: KubeletConfiguration\n"
                                             "%s: \"%s\"\n",
                                             key, value);
        assert_non_null(buf);
        return nanolet_config_load_buffer(c, buf, strlen(buf), "kc.yaml", d);
}

static void test_enum_settings_accepted(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(enum_accepted); i++) {
                const char *flag = enum_accepted[i].flag, *value = enum_accepted[i].value;
                _cleanup_free_ char *arg = strprintf("--%s", flag);
                char *argv[] = { "serve", arg, (char *)value, NULL };
                NanoletConfig c;
                assert_int_equal(nanolet_config_init(&c), 0);
                if (nanolet_config_parse_argv(&c, 3, argv) != 0)
                        fail_msg("--%s refused \"%s\"", flag, value);
                if (enum_value(&c, flag) != enum_accepted[i].expect)
                        fail_msg("--%s=\"%s\" gave %d", flag, value, enum_value(&c, flag));
                nanolet_config_deinit(&c);
                if (!enum_accepted[i].key)
                        continue;
                Diagnostics d;
                diagnostics_init(&d);
                assert_int_equal(nanolet_config_init(&c), 0);
                assert_int_equal(load_field(&c, enum_accepted[i].key, value, &d), 0);
                assert_int_equal(enum_value(&c, flag), enum_accepted[i].expect);
                nanolet_config_deinit(&c);
                diagnostics_deinit(&d);
        }
}

static void test_enum_settings_rejected(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(enum_rejected); i++) {
                const char *flag = enum_rejected[i].flag, *value = enum_rejected[i].value;
                if (parse_flag(flag, value) != -EINVAL)
                        fail_msg("--%s accepted \"%s\"", flag, value);
                if (!enum_rejected[i].key)
                        continue;
                NanoletConfig c;
                Diagnostics d;
                diagnostics_init(&d);
                assert_int_equal(nanolet_config_init(&c), 0);
                assert_int_equal(load_field(&c, enum_rejected[i].key, value, &d), -EINVAL);
                assert_int_equal(d.n_errors, 1);
                _cleanup_free_ char *line = diag_to_string(&d.items[0]);
                if (!strstr(line, enum_rejected[i].diagnostic))
                        fail_msg("diagnostic \"%s\" lacks \"%s\"", line,
                                 enum_rejected[i].diagnostic);
                nanolet_config_deinit(&c);
                diagnostics_deinit(&d);
        }
}

static void test_enum_settings_defaults_and_names(void **state) {
        NanoletConfig c;
        assert_int_equal(nanolet_config_init(&c), 0);
        assert_int_equal(c.cgroup_driver, CGROUP_DRIVER_CGROUPFS);
        assert_int_equal(c.hairpin_mode, HAIRPIN_MODE_HAIRPIN_VETH);
        assert_int_equal(c.container_monitor, CONTAINER_MONITOR_NANOLET);
        assert_int_equal(c.runtime, RUNTIME_KIND_RUNC);
        assert_string_equal(nanolet_config_runtime(&c), "runc");
        /* a path, then a name: the name wins and the path is dropped */
        char *argv[] = { "serve", "--runtime", "/opt/crun", "--runtime=crun", NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, 4, argv), 0);
        assert_int_equal(c.runtime, RUNTIME_KIND_CRUN);
        assert_null(c.runtime_path);
        assert_string_equal(nanolet_config_runtime(&c), "crun");
        char *argv2[] = { "serve", "--runtime", "/opt/bin/crun", NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, 3, argv2), 0);
        assert_string_equal(nanolet_config_runtime(&c), "/opt/bin/crun");
        nanolet_config_deinit(&c);

        /* the runtime's options: --systemd-cgroup exactly with the systemd
         * driver, else runc and crun put containers outside their pod slice */
        assert_int_equal(nanolet_config_init(&c), 0);
        RuntimeOptions ro = nanolet_config_runtime_options(&c);
        assert_false(ro.systemd_cgroup);
        assert_string_equal(ro.runtime, "runc");
        assert_string_equal(ro.run_dir, c.run_dir);
        char *argv3[] = { "serve", "--cgroup-driver=systemd", "--runtime=crun", NULL };
        assert_int_equal(nanolet_config_parse_argv(&c, 3, argv3), 0);
        ro = nanolet_config_runtime_options(&c);
        assert_true(ro.systemd_cgroup);
        assert_string_equal(ro.runtime, "crun");
        nanolet_config_deinit(&c);

        /* the names the agent writes (node.json, its warnings) */
        assert_string_equal(cgroup_driver_to_string(CGROUP_DRIVER_SYSTEMD), "systemd");
        assert_string_equal(hairpin_mode_to_string(HAIRPIN_MODE_PROMISCUOUS_BRIDGE),
                            "promiscuous-bridge");
        assert_string_equal(container_monitor_to_string(CONTAINER_MONITOR_CONMON), "conmon");
        assert_int_equal(runtime_kind_from_string("path"), _RUNTIME_KIND_INVALID);
        assert_null(hairpin_mode_to_string(_HAIRPIN_MODE_MAX));
}

static void test_string_checks_flags(void **state) {
        _cleanup_free_ char *huge = malloc(5001);
        assert_non_null(huge);
        huge[0] = '/';
        memset(huge + 1, 'a', 4999);
        huge[5000] = 0;
        static const struct {
                const char *flag, *value;
        } bad[] = {
                { "cluster-domain", "cluster.local\nnameserver 10.0.0.66" },
                { "cluster-domain", "cluster.local\n" },
                { "cluster-domain", "Cluster.Local" },
                { "cluster-domain", "-bad.local" },
                { "cluster-domain", "cl\xc3\xbcster.local" },
                { "cluster-domain", "cluster..local" },
                { "manifest-url-header", "X-A: b\r\nHost: evil" },
                { "manifest-url-header", "X-A: b\n" },
                { "manifest-url-header", "X A: b" },
                { "manifest-url-header", ": b" },
                { "manifest-url-header", "X-A: caf\xc3\xa9" },
                { "manifest-url-header", "X-A: \x1b[31m" },
                { "manifest-url", "ftp://example.com/pods" },
                { "manifest-url", "http://example.com/pods\r\nX: y" },
                { "manifest-url", "http://exa mple.com/" },
                { "pod-manifest-path", "relative/dir" },
                { "pod-manifest-path", "/etc/../tmp" },
                { "pod-manifest-path", "/etc/kubernetes/manifests\n" },
                { "root-dir", "/var/lib/\x1bnanolet" },
                { "root-dir", "/var/lib/nano\xc2\x85let" }, /* U+0085, a C1 control */
                { "root-dir", "/var/lib/\xffnanolet" },     /* not UTF-8 */
                { "root-dir", "" },
                { "run-dir", "/run/nanolet\t" },
                { "pod-logs-dir", "logs" },
                { "container-logs-dir", "/var/log/./containers" },
                { "cni-bin-dir", "/opt/cni/bin:relative" },
                { "cni-bin-dir", "/opt/cni/bin::/usr/lib/cni" },
                { "cni-conf-dir", "/etc/cni/net.d\n" },
                { "resolv-conf", "/etc/resolv.conf\r" },
                { "image-credential-file", "config.json" },
                { "registries-conf", "/etc/containers/registries.conf\n" },
                { "registry-certs-dir", "certs.d" },
                { "cgroup-root", "kubepods" },
                { "cluster-dns", "10.96.0.10\n" },
                { "cluster-dns", "10.96.0.10 #" },
                { "node-ip", "10.0.0.1\r" },
                { "address", "localhost" },
                { "address", "127.0.0.1\n" },
                { "healthz-bind-address", "" },
                { "pod-cidr", "10.86.0.0/33" },
                { "pod-cidr", "10.86.0.0" },
                { "pod-cidr", "10.86.0.0/16\n" },
                { "hostname-override", "node1\x1b]0;pwned\x07" },
                { "hostname-override", "node 1" },
                { "hostname-override",
                  "a123456789012345678901234567890123456789012345678901234567890123" },
                { "pinned-images", "busybox latest" },
                { "pinned-images", "busybox:latest\n" },
                { "allowed-unsafe-sysctls", "kernel.msg*.x" },
                { "allowed-unsafe-sysctls", "net.core.somaxconn\n" },
                { "insecure-registry", "registry.local\n" },
                { "eviction-hard", "memory.available<100Mi\n" },
                { "eviction-soft-grace-period", "memory.available=1m\r" },
                { "system-reserved", "cpu=100m\n" },
                { "runtime", "bin/runc" },
                { "runtime", "/usr/bin/runc\n" },
                { "config", "/etc/kubelet.yaml\n" },
                { "v", "4\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (parse_flag(bad[i].flag, bad[i].value) != -EINVAL)
                        fail_msg("--%s accepted \"%s\"", bad[i].flag, bad[i].value);
        }
        assert_int_equal(parse_flag("root-dir", huge), -EINVAL);

        static const struct {
                const char *flag, *value;
        } good[] = {
                { "cluster-domain", "cluster.local" },
                { "cluster-domain", "" }, /* no search domain */
                { "manifest-url-header", "Authorization: Bearer abc.def" },
                { "manifest-url-header", "X-Empty:" },
                { "manifest-url", "https://10.0.0.1:8443/pods?node=a" },
                { "manifest-url", "" },
                { "pod-manifest-path", "" },
                { "pod-manifest-path", "/etc/kubernetes/manifests/" },
                { "root-dir", "/srv/donn\xc3\xa9" }, /* UTF-8 */
                { "cni-bin-dir", "/opt/cni/bin:/usr/lib/cni" },
                { "resolv-conf", "" },
                { "address", "::" },
                { "pod-cidr", "fd00:86::/64" },
                { "hostname-override", "Node-1.example" },
                { "allowed-unsafe-sysctls", "net.core.*" },
                { "insecure-registry", "registry.local:5000" },
                { "runtime", "/usr/local/bin/crun" },
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                if (parse_flag(good[i].flag, good[i].value) != 0)
                        fail_msg("--%s refused \"%s\"", good[i].flag, good[i].value);
        }
}

static void test_string_checks_file(void **state) {
        /* a block scalar keeps its final newline: "cluster.local\n" */
        assert_int_equal(LOAD("clusterDomain: |\n  cluster.local\n", "kc.yaml:3: clusterDomain: "
                                                                     "holds the control "
                                                                     "character LF"),
                         -EINVAL);
        assert_int_equal(
                LOAD("clusterDomain: \"cluster.local\\nnameserver 10.0.0.66\"\n", "clusterDomain"),
                -EINVAL);
        assert_int_equal(LOAD("clusterDomain: \"cluster.local\\0.evil\"\n", "NUL"), -EINVAL);
        assert_int_equal(LOAD("clusterDomain: \"cl\\u00fcster.local\"\n", "clusterDomain"),
                         -EINVAL);
        assert_int_equal(LOAD("staticPodURLHeader:\n  X-Token: [\"abc\\r\\nHost: evil\"]\n",
                              "kc.yaml:4: staticPodURLHeader: header X-Token: holds the control "
                              "character CR"),
                         -EINVAL);
        assert_int_equal(LOAD("staticPodURLHeader:\n  \"X-Token\\r\\nHost\": [abc]\n",
                              "is not an RFC 9110 token"),
                         -EINVAL);
        assert_int_equal(LOAD("staticPodURLHeader:\n  \"X Token\": [abc]\n", "staticPodURLHeader"),
                         -EINVAL);
        assert_int_equal(LOAD("staticPodURLHeader:\n  X-Token: [\"a\\0b\"]\n", "NUL"), -EINVAL);
        assert_int_equal(LOAD("staticPodURLHeader:\n  X-Token: [\"\\e[2J\"]\n", "ESC"), -EINVAL);
        assert_int_equal(LOAD("staticPodURL: \"http://a/\\r\\nX: y\"\n", "staticPodURL"), -EINVAL);
        assert_int_equal(LOAD("staticPodPath: manifests\n", "staticPodPath"), -EINVAL);
        assert_int_equal(LOAD("staticPodPath: \"/etc/kubernetes/manifests\\0/x\"\n", "NUL"),
                         -EINVAL);
        assert_int_equal(LOAD("podLogsDir: |\n  /var/log/pods\n", "podLogsDir"), -EINVAL);
        assert_int_equal(LOAD("resolvConf: \"/etc/resolv.conf\\n\"\n", "resolvConf"), -EINVAL);
        assert_int_equal(LOAD("cgroupRoot: \"/\\x1b\"\n", "ESC"), -EINVAL);
        assert_int_equal(LOAD("clusterDNS: [\"10.96.0.10\\n\"]\n", "clusterDNS: item 1:"), -EINVAL);
        assert_int_equal(LOAD("podCIDR: 10.86.0.0/40\n", "podCIDR"), -EINVAL);
        assert_int_equal(LOAD("address: \"0.0.0.0\\n\"\n", "address"), -EINVAL);
        assert_int_equal(LOAD("healthzBindAddress: localhost\n", "healthzBindAddress"), -EINVAL);
        assert_int_equal(LOAD("pinnedImages: [\"busybox\\n\"]\n", "pinnedImages"), -EINVAL);
        assert_int_equal(LOAD("allowedUnsafeSysctls: [\"net.*.x\"]\n", "allowedUnsafeSysctls"),
                         -EINVAL);
        assert_int_equal(LOAD("evictionHard:\n  \"memory.available\\n\": 100Mi\n", "evictionHard"),
                         -EINVAL);
        assert_int_equal(LOAD("evictionSoft:\n  memory.available: \"100Mi\\r\"\n", "evictionSoft"),
                         -EINVAL);
        assert_int_equal(LOAD("evictionSoftGracePeriod:\n  memory.available: \"1m\\0\"\n", "NUL"),
                         -EINVAL);
        /* a key cannot smuggle in more pairs of the flag form */
        assert_int_equal(LOAD("systemReserved:\n  \"cpu=1,memory\": 1Gi\n", "systemReserved"),
                         -EINVAL);
        assert_int_equal(LOAD("kubeReserved:\n  cpu: \"100m\\n\"\n", "kubeReserved"), -EINVAL);
        assert_int_equal(LOAD("kubeReserved:\n  \"cpu\\0\": 100m\n", "NUL"), -EINVAL);

        /* what real files hold still loads */
        assert_int_equal(LOAD("clusterDomain: cluster.local\n", NULL), 0);
        assert_int_equal(LOAD("clusterDomain: \"\"\n"
                              "resolvConf: \"\"\n"
                              "staticPodPath: \"\"\n"
                              "staticPodURLHeader:\n  Authorization: [\"Bearer a.b/c+d=\"]\n"
                              "systemReserved: {cpu: 100m, memory: 1Gi}\n",
                              NULL),
                         0);
}

static void test_duration_bounds(void **state) {
        static const struct {
                const char *flag, *value;
        } bad[] = {
                { "sync-frequency", "1us" },
                { "sync-frequency", "999ms" },
                { "sync-frequency", "0" },
                { "sync-frequency", "25h" },
                { "sync-frequency", "99999999999999999999" },
                { "sync-frequency", "18446744073709551615" },
                { "sync-frequency", "2562047h47m16.854775808s" }, /* Go's range + 1ns */
                { "file-check-frequency", "1ns" },
                { "http-check-frequency", "100ms" },
                { "container-log-monitor-interval", "1us" },
                { "container-log-monitor-interval", "2h" },
                { "eviction-pressure-transition-period", "1000000h" },
                { "image-minimum-gc-age", "9000h" },
                { "image-maximum-gc-age", "2562047h" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                if (parse_flag(bad[i].flag, bad[i].value) != -EINVAL)
                        fail_msg("--%s accepted \"%s\"", bad[i].flag, bad[i].value);
        }
        static const struct {
                const char *flag, *value;
        } good[] = {
                { "sync-frequency", "1s" },
                { "sync-frequency", "24h" },
                { "file-check-frequency", "2s" },
                { "http-check-frequency", "1s" },
                { "container-log-monitor-interval", "1s" },
                { "image-minimum-gc-age", "0" },
                { "image-maximum-gc-age", "8760h" },
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                if (parse_flag(good[i].flag, good[i].value) != 0)
                        fail_msg("--%s refused \"%s\"", good[i].flag, good[i].value);
        }
        assert_int_equal(LOAD("syncFrequency: 1us\n", "kc.yaml:3: syncFrequency: must be at "
                                                      "least 1s"),
                         -EINVAL);
        assert_int_equal(LOAD("fileCheckFrequency: 100000h\n", "at most 24h"), -EINVAL);
        assert_int_equal(LOAD("shutdownGracePeriod: 500ms\n", "shutdownGracePeriod"), -EINVAL);
        assert_int_equal(LOAD("syncFrequency: 0s\n", NULL), 0); /* kubeadm's "default" */
}

/* Every list and map setting has a bound on its elements, so a hostile
 * file costs little to refuse; 85,000 keys in systemReserved once took
 * seconds (each key re-joined into a growing string). */
static void test_many_entries(void **state) {
        static const char *const keys[] = { "systemReserved", "kubeReserved", "evictionHard",
                                            "evictionSoftGracePeriod" };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                size_t len = 0, cap = 0;
                _cleanup_free_ char *body = NULL;
                _cleanup_free_ char *head = strprintf("%s:\n", keys[k]);
                assert_int_equal(strbuf_append(&body, &len, &cap, head, strlen(head)), 0);
                for (unsigned i = 0; i < 85000; i++) {
                        char line[32];
                        int n = snprintf(line, sizeof line, "  c%u: 1\n", i);
                        assert_int_equal(strbuf_append(&body, &len, &cap, line, (size_t)n), 0);
                }
                assert_int_equal(load_body(body, len, "has 85000 entries, at most"), -EINVAL);
        }

        size_t len = 0, cap = 0;
        _cleanup_free_ char *body = NULL;
        const char head[] = "staticPodURLHeader:\n  X-A: [";
        assert_int_equal(strbuf_append(&body, &len, &cap, head, strlen(head)), 0);
        for (unsigned i = 0; i < 2000; i++)
                assert_int_equal(strbuf_append(&body, &len, &cap, "a,", 2), 0);
        assert_int_equal(strbuf_append(&body, &len, &cap, "a]\n", 3), 0);
        assert_int_equal(load_body(body, len, "at most 1024"), -EINVAL);

        /* the flag forms */
        len = cap = 0;
        _cleanup_free_ char *list = NULL;
        for (unsigned i = 0; i < 2000; i++)
                assert_int_equal(strbuf_append(&list, &len, &cap, "10.0.0.1,", 9), 0);
        assert_int_equal(strbuf_append(&list, &len, &cap, "", 1), 0);
        assert_int_equal(parse_flag("cluster-dns", list), -EINVAL);
        len = cap = 0;
        _cleanup_free_ char *reserved = NULL;
        for (unsigned i = 0; i < 100; i++)
                assert_int_equal(strbuf_append(&reserved, &len, &cap, "cpu=1,", 6), 0);
        assert_int_equal(strbuf_append(&reserved, &len, &cap, "", 1), 0);
        assert_int_equal(parse_flag("system-reserved", reserved), -EINVAL);
        assert_int_equal(parse_flag("system-reserved", "cpu=1,cpu=2,memory=1Gi"), 0);
}

static void test_value_quote(void **state) {
        _cleanup_free_ char *a = setting_value_quote("a\r\n\x1b\"\\b\xc3\xa9");
        assert_string_equal(a, "\"a\\r\\n\\x1b\\\"\\\\b\\xc3\\xa9\"");
        char long_value[200];
        memset(long_value, 'x', sizeof long_value - 1);
        long_value[sizeof long_value - 1] = 0;
        _cleanup_free_ char *b = setting_value_quote(long_value);
        assert_true(endswith(b, "\"..."));
        assert_int_equal(strlen(b), 64 + 5);
}

static void test_help_and_man(void **state) {
        _cleanup_free_ char *help = NULL, *man = NULL;
        size_t n;
        FILE *f = open_memstream(&help, &n);
        assert_non_null(f);
        settings_print_help(f);
        fclose(f);
        f = open_memstream(&man, &n);
        assert_non_null(f);
        settings_print_man(f);
        fclose(f);
        /* every honoured flag is in --help, every key in the man page */
        for (size_t i = 0; i < settings_table_size; i++) {
                const Setting *s = &settings_table[i];
                _cleanup_free_ char *flag = s->flag ? strprintf("-%s ", s->flag) : NULL;
                _cleanup_free_ char *key = s->key ? strprintf("*%s*", s->key) : NULL;
                if (flag && s->disposition == SETTING_HONOURED && s->type != SETTING_BOOL)
                        assert_non_null(strstr(help, flag));
                if (key)
                        assert_non_null(strstr(man, key));
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_resource_flags),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_file),
                cmocka_unit_test(test_file_errors),
                cmocka_unit_test(test_flags_override_file),
                cmocka_unit_test(test_bad_flags),
                cmocka_unit_test(test_signature_settings),
                cmocka_unit_test(test_kubelet_settings),
                cmocka_unit_test(test_evict_static_pods),
                cmocka_unit_test(test_node_name),
                cmocka_unit_test(test_duration),
                cmocka_unit_test(test_container_log_flags),
                cmocka_unit_test(test_flag_abbreviations),
                cmocka_unit_test(test_log_flags_first),
                cmocka_unit_test(test_node_ip),
                cmocka_unit_test(test_config_flag_spellings),
                cmocka_unit_test(test_registry_flags),
                cmocka_unit_test(test_pull_flags),
                cmocka_unit_test(test_gc_eviction_flags),
                cmocka_unit_test(test_table_covers_kubelet),
                cmocka_unit_test(test_kubelet_flags),
                cmocka_unit_test(test_null_and_zero),
                cmocka_unit_test(test_kubeadm_files),
                cmocka_unit_test(test_help_and_man),
                cmocka_unit_test(test_enum_settings_accepted),
                cmocka_unit_test(test_enum_settings_rejected),
                cmocka_unit_test(test_enum_settings_defaults_and_names),
                cmocka_unit_test(test_string_checks_flags),
                cmocka_unit_test(test_string_checks_file),
                cmocka_unit_test(test_duration_bounds),
                cmocka_unit_test(test_many_entries),
                cmocka_unit_test(test_value_quote),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
