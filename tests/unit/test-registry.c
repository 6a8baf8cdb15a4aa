/* src/image: registry client inputs: WWW-Authenticate challenges, docker
 * config.json credentials, Secret data, registries.conf parsing and
 * matching, platform selection in an image index. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image-oci.h"
#include "registry-auth.h"
#include "registry-config.h"

static RegistryChallenge *parse_ok(const char *h, size_t *n) {
        RegistryChallenge *c = NULL;
        Error err = {};
        int r = registry_challenges_parse(h, strlen(h), &c, n, &err);
        if (r < 0)
                fail_msg("%s: %s", h, err.message);
        return c;
}

static void test_challenges(void **state) {
        size_t n;
        RegistryChallenge *c = parse_ok(
                "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
                "scope=\"repository:library/busybox:pull\"",
                &n);
        assert_int_equal(n, 1);
        assert_string_equal(c[0].scheme, "bearer");
        assert_string_equal(c[0].realm, "https://auth.docker.io/token");
        assert_string_equal(c[0].service, "registry.docker.io");
        assert_string_equal(c[0].scope, "repository:library/busybox:pull");
        registry_challenges_free(c, n);

        /* several challenges, token values, spaces, escapes, unknown params */
        c = parse_ok("Basic realm=\"a \\\"quoted\\\" realm\" , NEGOTIATE abc==, "
                     "bEaReR  error=insufficient_scope, realm = \"https://t/x?a=1\" ,foo=bar",
                     &n);
        assert_int_equal(n, 3);
        assert_string_equal(c[0].scheme, "basic");
        assert_string_equal(c[0].realm, "a \"quoted\" realm");
        assert_string_equal(c[1].scheme, "negotiate");
        assert_null(c[1].realm);
        assert_string_equal(c[2].scheme, "bearer");
        assert_string_equal(c[2].error, "insufficient_scope");
        assert_string_equal(c[2].realm, "https://t/x?a=1");
        assert_ptr_equal(registry_challenge_find(c, n, "bearer"), &c[2]);
        assert_null(registry_challenge_find(c, n, "digest"));
        registry_challenges_free(c, n);

        c = parse_ok("", &n);
        assert_int_equal(n, 0);
        registry_challenges_free(c, n);

        static const char *const bad[] = {
                "Bearer realm=\"unterminated",
                "Bearer realm=\"x\", scope=",
                "=foo",
                "Bearer realm=\"a\nb\"",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                Error err = {};
                c = NULL;
                n = 0;
                int r = registry_challenges_parse(bad[i], strlen(bad[i]), &c, &n, &err);
                if (r >= 0) {
                        /* "scope=" at the end is an empty value, allowed */
                        assert_int_equal(i, 1);
                        registry_challenges_free(c, n);
                        continue;
                }
                assert_int_equal(r, -EBADMSG);
                assert_true(err.message[0] != 0);
        }
}

static void lookup(const char *doc, const char *host, int want, const char *user,
                   const char *pass) {
        char *u = NULL, *p = NULL;
        Error err = {};
        int r = registry_auth_lookup(doc, strlen(doc), host, &u, &p, &err);
        if (r != want)
                fail_msg("%s in %s: %d (%s)", host, doc, r, err.message);
        if (r > 0) {
                assert_string_equal(u, user);
                assert_string_equal(p, pass);
        }
        free(u);
        free(p);
}

static void test_auth_lookup(void **state) {
        /* "dXNlcjpwYTpzcw==" is user:pa:ss (a colon in the password) */
        const char *doc = "{\"auths\": {"
                          "\"https://index.docker.io/v1/\": {\"auth\": \"dXNlcjpwYTpzcw==\"},"
                          "\"reg.example.com:5000\": {\"username\": \"u2\", \"password\": \"p2\"},"
                          "\"http://other.example.com/v2/\": {\"auth\": \"YTpi\"}}}";
        lookup(doc, "docker.io", 1, "user", "pa:ss");
        lookup(doc, "registry-1.docker.io", 1, "user", "pa:ss");
        lookup(doc, "reg.example.com:5000", 1, "u2", "p2");
        lookup(doc, "reg.example.com", 0, NULL, NULL);
        lookup(doc, "other.example.com", 1, "a", "b");
        lookup(doc, "OTHER.example.com", 1, "a", "b");
        lookup("{}", "docker.io", 0, NULL, NULL);
        lookup("{\"credsStore\": \"x\"}", "docker.io", 0, NULL, NULL);
        lookup("[]", "docker.io", -EBADMSG, NULL, NULL);
        lookup("{\"auths\": []}", "docker.io", -EBADMSG, NULL, NULL);
        lookup("{\"auths\": {\"h\": {\"auth\": \"!!!\"}}}", "h", -EBADMSG, NULL, NULL);
        lookup("{\"auths\": {\"h\": {\"auth\": \"bm9jb2xvbg==\"}}}", "h", -EBADMSG, NULL, NULL);
        lookup("{\"auths\": {\"h\": {}}}", "h", -EBADMSG, NULL, NULL);
        lookup("{\"auths\": {\"h\": {}}}", "other", 0, NULL, NULL);
        lookup("not json", "h", -EBADMSG, NULL, NULL);
}

static void test_base64(void **state) {
        char *out = NULL;
        size_t n;
        assert_int_equal(registry_base64_decode("YWJj", 4, &out, &n), 0);
        assert_string_equal(out, "abc");
        free(out);
        assert_int_equal(registry_base64_decode("YWI", 3, &out, &n), 0);
        assert_string_equal(out, "ab");
        free(out);
        assert_int_equal(registry_base64_decode("YQ==", 4, &out, &n), 0);
        assert_string_equal(out, "a");
        free(out);
        assert_int_equal(registry_base64_decode("Y", 1, &out, &n), -EBADMSG);
        assert_int_equal(registry_base64_decode("Y W", 3, &out, &n), -EBADMSG);
        char *h = registry_auth_key_host("https://host:5000/v2/");
        assert_string_equal(h, "host:5000");
        free(h);
}

static void test_token_lifetime(void **state) {
        const uint64_t S = 1000000ULL;
        /* 2026-11-26T15:00:00Z */
        const uint64_t sent = 1795705200ULL * S;
        (void)state;
        /* No issued_at: from the send, minus the second kept in hand. */
        assert_int_equal(registry_token_lifetime(300, NULL, sent), 299 * S);
        /* Under 60 s, or absent: 60 s, as docker and containers/image. */
        assert_int_equal(registry_token_lifetime(1, NULL, sent), 59 * S);
        assert_int_equal(registry_token_lifetime(0, NULL, sent), 59 * S);
        assert_int_equal(registry_token_lifetime(-5, NULL, sent), 59 * S);
        /* issued_at counts: 57 s ago leaves 3 s (2 with the margin). */
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:59:03Z", sent), 2 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:59:03.5Z", sent), 2 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T15:59:03+01:00", sent), 2 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T13:59:03-01:00", sent), 2 * S);
        /* Dead on arrival (the server's clock behind): from the send. */
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:00:00Z", sent), 59 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:59:01Z", sent), 59 * S);
        /* One second short of it: still that second. */
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:59:01.5Z", sent), 59 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:59:02Z", sent), 1 * S);
        /* Issued "after" the send (clock skew): counted from the send. */
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T15:00:30Z", sent), 59 * S);
        /* Unparsable: ignored. */
        assert_int_equal(registry_token_lifetime(60, "yesterday", sent), 59 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-11-26T14:59:03", sent), 59 * S);
        assert_int_equal(registry_token_lifetime(60, "2026-13-26T14:59:03Z", sent), 59 * S);
}

static void test_secret(void **state) {
        char *json = NULL;
        Error err = {};
        const char *cfgjson = "{\"auths\": {\"r.example\": {\"auth\": \"YTpi\"}}}";
        assert_int_equal(registry_secret_to_config("kubernetes.io/dockerconfigjson", cfgjson,
                                                   strlen(cfgjson), &json, &err),
                         0);
        lookup(json, "r.example", 1, "a", "b");
        free(json);
        const char *cfg = "{\"r.example\": {\"username\": \"a\", \"password\": \"b\"}}";
        assert_int_equal(
                registry_secret_to_config("kubernetes.io/dockercfg", cfg, strlen(cfg), &json, &err),
                0);
        lookup(json, "r.example", 1, "a", "b");
        free(json);
        assert_int_equal(registry_secret_to_config("Opaque", cfg, strlen(cfg), &json, &err),
                         -EMEDIUMTYPE);
        error_clear(&err);
        assert_int_equal(registry_secret_to_config("kubernetes.io/dockerconfigjson", cfg,
                                                   strlen(cfg), &json, &err),
                         -EBADMSG);
        assert_non_null(strstr(err.message, ".dockerconfigjson"));
        error_clear(&err);
        assert_int_equal(
                registry_secret_to_config("kubernetes.io/dockercfg", "{\"x\": 1}", 8, &json, &err),
                -EBADMSG);
}

static void conf_ok(const char *text, RegistryConfig *c) {
        Error err = {};
        int r = registry_config_parse(text, strlen(text), "test.conf", c, &err);
        if (r < 0)
                fail_msg("%s", err.message);
}

static void endpoints(const RegistryConfig *c, const char *repo, bool by_digest,
                      const char *const *want) {
        RegistryEndpoint *e = NULL;
        size_t n = 0;
        Error err = {};
        int r = registry_config_endpoints(c, repo, by_digest, &e, &n, &err);
        if (r < 0)
                fail_msg("%s: %s", repo, err.message);
        size_t k = 0;
        for (; want[k]; k++) {
                if (k >= n)
                        fail_msg("%s: only %zu endpoints", repo, n);
                char buf[512];
                snprintf(buf, sizeof(buf), "%s/%s%s", e[k].host, e[k].path,
                         e[k].insecure ? " insecure" : "");
                assert_string_equal(buf, want[k]);
        }
        assert_int_equal(k, n);
        registry_endpoints_free(e, n);
}

static void test_config(void **state) {
        RegistryConfig c = {};
        conf_ok("# comment\n"
                "unqualified-search-registries = [\"docker.io\", 'quay.io']\n"
                "short-name-mode = \"enforcing\"\n"
                "\n"
                "[[registry]]\n"
                "prefix = \"registry.k8s.io\"\n"
                "location = \"mirror.local:5000/k8s\" # rewrite\n"
                "\n"
                "[[registry]]\n"
                "location = \"docker.io\"\n"
                "[[registry.mirror]]\n"
                "location = \"m1.local/hub\"\n"
                "insecure = true\n"
                "[[registry.mirror]]\n"
                "location = \"m2.local\"\n"
                "pull-from-mirror = \"digest-only\"\n"
                "\n"
                "[[registry]]\n"
                "prefix = \"docker.io/evil\"\n"
                "blocked = true\n"
                "location = \"docker.io/evil\"\n"
                "\n"
                "[[registry]]\n"
                "prefix = \"*.corp.example\"\n"
                "insecure = true\n"
                "\n"
                "[[registry]]\n"
                "location = \"gcr.io\"\n"
                "mirror-by-digest-only = true\n"
                "mirror = [\n"
                "  # ignored key with an array\n"
                "  \"x\",\n"
                "]\n"
                "[[registry.mirror]]\n"
                "location = \"gmirror.local\"\n"
                "\n"
                "[aliases]\n"
                "\"foo\" = \"quay.io/foo\"\n",
                &c);
        assert_int_equal(c.n_entries, 5);
        assert_non_null(c.notes);
        assert_non_null(strstr(c.notes[0], "test.conf:2:"));

        endpoints(&c, "registry.k8s.io/pause", false,
                  (const char *const[]){ "mirror.local:5000/k8s/pause", NULL });
        endpoints(&c, "docker.io/library/busybox", false,
                  (const char *const[]){ "m1.local/hub/library/busybox insecure",
                                         "docker.io/library/busybox", NULL });
        endpoints(&c, "docker.io/library/busybox", true,
                  (const char *const[]){ "m1.local/hub/library/busybox insecure",
                                         "m2.local/library/busybox", "docker.io/library/busybox",
                                         NULL });
        endpoints(&c, "a.corp.example/x/y", false,
                  (const char *const[]){ "a.corp.example/x/y insecure", NULL });
        endpoints(&c, "corp.example/x", false, (const char *const[]){ "corp.example/x", NULL });
        endpoints(&c, "gcr.io/p/i", false, (const char *const[]){ "gcr.io/p/i", NULL });
        endpoints(&c, "gcr.io/p/i", true,
                  (const char *const[]){ "gmirror.local/p/i", "gcr.io/p/i", NULL });
        /* prefix boundaries: "registry.k8s.io" does not match "registry.k8s.iox" */
        endpoints(&c, "registry.k8s.iox/pause", false,
                  (const char *const[]){ "registry.k8s.iox/pause", NULL });
        endpoints(&c, "quay.io/a/b", false, (const char *const[]){ "quay.io/a/b", NULL });

        RegistryEndpoint *e = NULL;
        size_t n = 0;
        Error err = {};
        assert_int_equal(registry_config_endpoints(&c, "docker.io/evil/app", false, &e, &n, &err),
                         -EACCES);
        assert_non_null(strstr(err.message, "blocked"));
        /* longest prefix: docker.io/evil beats docker.io; docker.io/evilx does not match it */
        endpoints(&c, "docker.io/evilx/app", false,
                  (const char *const[]){ "m1.local/hub/evilx/app insecure", "docker.io/evilx/app",
                                         NULL });

        assert_int_equal(registry_config_add_insecure(&c, "127.0.0.1:5000"), 0);
        assert_int_equal(registry_config_add_insecure(&c, "gcr.io"), 0);
        endpoints(&c, "127.0.0.1:5000/a", false,
                  (const char *const[]){ "127.0.0.1:5000/a insecure", NULL });
        endpoints(&c, "gcr.io/p/i", false, (const char *const[]){ "gcr.io/p/i insecure", NULL });
        registry_config_done(&c);

        /* v1 format */
        conf_ok("[registries.search]\nregistries = ['docker.io']\n"
                "[registries.insecure]\nregistries = [\"h1:5000\", \"h2\"]\n"
                "[registries.block]\nregistries = [\"bad.example\"]\n",
                &c);
        endpoints(&c, "h1:5000/x", false, (const char *const[]){ "h1:5000/x insecure", NULL });
        assert_int_equal(registry_config_endpoints(&c, "bad.example/x", false, &e, &n, &err),
                         -EACCES);
        registry_config_done(&c);

        /* no configuration at all */
        endpoints(NULL, "docker.io/library/x", false,
                  (const char *const[]){ "docker.io/library/x", NULL });
}

static void test_config_errors(void **state) {
        static const char *const bad[][2] = {
                { "[[registry]]\nlocation = \"a\"\ninsecure = \"yes\"\n", "test.conf:3:" },
                { "[[registry]]\nlocation = \"https://a\"\n", "test.conf:2:" },
                { "[[registry]]\nblocked = true\n", "test.conf:1:" },
                { "[[registry.mirror]]\nlocation = \"a\"\n", "test.conf:1:" },
                { "[registry]\nlocation = \"a\"\n", "test.conf:1:" },
                { "\n\n[[registry]]\nlocation = \"a\nb\"\n", "test.conf:4:" },
                { "[[registry]]\nlocation = {a = 1}\n", "test.conf:2:" },
                { "[[registry]]\nlocation = \"a\" b\n", "test.conf:2:" },
                { "[[registry]\nlocation = \"a\"\n", "test.conf:1:" },
                { "[[registry]]\nprefix = \"*.x/y\"\n", "test.conf:1:" },
                { "[[registry]]\nlocation = \"a\"\n[[registry.mirror]]\ninsecure = true\n",
                  "test.conf:1:" },
                { "key\n", "test.conf:1:" },
                { "k = \"\"\"multi\"\"\"\n", "test.conf:1:" },
                { "[[registry]]\nlocation = \"a\"\n[[registry.mirror]]\nlocation = \"m\"\n"
                  "pull-from-mirror = \"sometimes\"\n",
                  "test.conf:5:" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                RegistryConfig c = {};
                Error err = {};
                int r = registry_config_parse(bad[i][0], strlen(bad[i][0]), "test.conf", &c, &err);
                if (r >= 0)
                        fail_msg("accepted: %s", bad[i][0]);
                if (!strstr(err.message, bad[i][1]))
                        fail_msg("%s: message \"%s\" lacks %s", bad[i][0], err.message, bad[i][1]);
        }
}

static void test_platform(void **state) {
        ImageDescriptor ds[] = {
                { .digest = (char *)"d0",
                  .os = (char *)"linux",
                  .architecture = (char *)"arm",
                  .variant = (char *)"v6" },
                { .digest = (char *)"d1",
                  .os = (char *)"linux",
                  .architecture = (char *)"arm",
                  .variant = (char *)"v7" },
                { .digest = (char *)"d2", .os = (char *)"linux", .architecture = (char *)"arm64" },
                { .digest = (char *)"d3",
                  .os = (char *)"windows",
                  .architecture = (char *)"amd64" },
                { .digest = (char *)"d4", .os = (char *)"linux", .architecture = (char *)"amd64" },
                { .digest = (char *)"d5",
                  .os = (char *)"linux",
                  .architecture = (char *)"arm64",
                  .variant = (char *)"v8" },
        };
        assert_string_equal(image_index_select_platform(ds, 6, "arm", "v7")->digest, "d1");
        assert_string_equal(image_index_select_platform(ds, 6, "arm64", "v8")->digest, "d5");
        assert_string_equal(image_index_select_platform(ds, 5, "arm64", "v8")->digest, "d2");
        assert_string_equal(image_index_select_platform(ds, 6, "amd64", NULL)->digest, "d4");
        assert_null(image_index_select_platform(ds, 4, "amd64", NULL));
        assert_null(image_index_select_platform(ds, 6, "s390x", NULL));
        const ImageDescriptor *native = image_index_select_platform(ds, 6, NULL, NULL);
        if (strcmp(image_platform_native_arch(), "amd64") == 0)
                assert_string_equal(native->digest, "d4");
        ImageDescriptor none[] = { { .digest = (char *)"n" } };
        assert_string_equal(image_index_select_platform(none, 1, "amd64", NULL)->digest, "n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_challenges), cmocka_unit_test(test_auth_lookup),
                cmocka_unit_test(test_base64),     cmocka_unit_test(test_secret),
                cmocka_unit_test(test_config),     cmocka_unit_test(test_config_errors),
                cmocka_unit_test(test_platform),   cmocka_unit_test(test_token_lifetime),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
