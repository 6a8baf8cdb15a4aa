/* src/image: reference parsing and normalisation, chain IDs, tar path checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image-layer.h"
#include "image-ref.h"
#include "strv.h"

static void test_normalize(void **state) {
        static const char *const cases[][2] = {
                { "busybox", "docker.io/library/busybox:latest" },
                { "busybox:1.36", "docker.io/library/busybox:1.36" },
                { "library/busybox", "docker.io/library/busybox:latest" },
                { "docker.io/busybox", "docker.io/library/busybox:latest" },
                { "index.docker.io/library/busybox:1", "docker.io/library/busybox:1" },
                { "user/app", "docker.io/user/app:latest" },
                { "localhost/x", "localhost/x:latest" },
                { "localhost:5000/x:v2", "localhost:5000/x:v2" },
                { "host:5000/a/b:tag", "host:5000/a/b:tag" },
                { "registry.k8s.io/etcd:3.5.9-0", "registry.k8s.io/etcd:3.5.9-0" },
                { "quay.io/a/b/c/d", "quay.io/a/b/c/d:latest" },
                { "my_app.name--x", "docker.io/library/my_app.name--x:latest" },
                { "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  "docker.io/library/busybox@sha256:"
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
                { "busybox:1@sha256:"
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  "docker.io/library/busybox:1@sha256:"
                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
                { "Example.com/app", "Example.com/app:latest" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *out = NULL;
                Error err = {};
                int r = image_ref_normalize(cases[i][0], &out, &err);
                if (r < 0)
                        fail_msg("%s: %s", cases[i][0], err.message);
                assert_string_equal(out, cases[i][1]);
                free(out);
        }
}

static void test_invalid(void **state) {
        static const char *const bad[][2] = {
                { "", "empty" },
                { "Busybox", "lowercase" },
                { "docker.io/Library/busybox", "lowercase" },
                { "busybox:", "invalid tag" },
                { "busybox:-x", "invalid tag" },
                { "busybox@sha256:abc", "64 lowercase hex" },
                { "busybox@md5:0123456789abcdef0123456789abcdef", "unsupported digest" },
                { "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  "64-byte hexadecimal" },
                { "a//b", "path component" },
                { "a/b_", "path component" },
                { "-host.com/x", "registry host" },
                { "host:port/x", "registry host" },
                { "has space", "whitespace" },
                { "a/../b", "path component" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *out = NULL;
                Error err = {};
                int r = image_ref_normalize(bad[i][0], &out, &err);
                if (r >= 0)
                        fail_msg("\"%s\" accepted as %s", bad[i][0], out);
                assert_int_equal(r, -EINVAL);
                if (!strstr(err.message, bad[i][1]))
                        fail_msg("\"%s\": message \"%s\" lacks \"%s\"", bad[i][0], err.message,
                                 bad[i][1]);
        }
        /* 256-character name */
        char longname[300];
        memset(longname, 'a', 260);
        longname[260] = 0;
        Error err = {};
        char *out = NULL;
        assert_int_equal(image_ref_normalize(longname, &out, &err), -EINVAL);
        assert_non_null(strstr(err.message, "255"));
}

static void test_chain_ids(void **state) {
        char *diff[] = {
                "sha256:a3ed95caeb02ffe68cdd9fd84406680ae93d633cb16422d00e8a7c22955b46d4",
                "sha256:2a3f2b1a8e7f4ddb1d1ef0b5b5c6a1c5a4c7d4b9cc0a5c4de4b2e5f6a7b8c9d0",
                NULL,
        };
        char **chain = NULL;
        assert_int_equal(image_chain_ids(diff, &chain), 0);
        assert_int_equal(strv_length(chain), 2);
        assert_string_equal(chain[0], diff[0]);
        /* printf '%s %s' d0 d1 | sha256sum */
        assert_string_equal(
                chain[1],
                "sha256:fb05794eba27e41ee795b4d847d64c1f477e9209648d092cadcaa12a4085a3fa");
        strv_free(chain);
}

static void test_tar_paths(void **state) {
        static const char *const good[][2] = {
                { "a/b", "a/b" },
                { "./a/b", "a/b" },
                { "a//b/", "a/b" },
                { "./", "." },
                { ".", "." },
                { "a/./b", "a/b" },
                { "..a/b..", "..a/b.." },
                { ".wh.x", ".wh.x" },
        };
        static const char *const bad[] = { "../x", "a/../../x", "/etc/passwd", "a/..",
                                           "",     "..",        "//x" };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                char *out = NULL;
                assert_int_equal(image_tar_path_normalize(good[i][0], 4096, &out, NULL), 0);
                assert_string_equal(out, good[i][1]);
                free(out);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *out = NULL;
                Error err = {};
                if (image_tar_path_normalize(bad[i], 4096, &out, &err) >= 0)
                        fail_msg("\"%s\" accepted as \"%s\"", bad[i], out);
                assert_true(err.message[0]);
        }
        char deep[1024] = "";
        for (int i = 0; i < 200; i++)
                strcat(deep, "d/");
        char *out = NULL;
        assert_true(image_tar_path_normalize(deep, 4096, &out, NULL) < 0);
        char longp[5000];
        memset(longp, 'a', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = 0;
        assert_int_equal(image_tar_path_normalize(longp, 4096, &out, NULL), -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_normalize),
                cmocka_unit_test(test_invalid),
                cmocka_unit_test(test_chain_ids),
                cmocka_unit_test(test_tar_paths),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
