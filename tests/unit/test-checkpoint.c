/* The state files adoption relies on: the pod checkpoint, the per-attempt
 * record and the sandbox record round-trip, and damaged ones are refused
 * rather than half-read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "fileio.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

static char *make_tmpdir(void) {
        char tmpl[] = "/tmp/test-checkpoint-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        return strdup(tmpl);
}

static void remove_tmpdir(char *dir) {
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
        free(dir);
}

static void test_pod_checkpoint_roundtrip(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        PodCheckpoint cp = {
                .uid = "0123456789abcdef0123456789abcdef",
                .name = "web-node1",
                .namespace = "default",
                .source = "file",
                .origin = "/etc/kubernetes/manifests/web.yaml",
                .manifest = json_pack("{s:s}", "kind", "Pod"),
                .start_time = 1700000000123456ULL,
        };
        assert_int_equal(pod_checkpoint_write(dir, &cp), 0);
        json_decref(cp.manifest);

        PodCheckpoint back = {};
        assert_int_equal(pod_checkpoint_read(dir, &back), 0);
        assert_string_equal(back.uid, "0123456789abcdef0123456789abcdef");
        assert_string_equal(back.origin, "/etc/kubernetes/manifests/web.yaml");
        assert_string_equal(json_string_value(json_object_get(back.manifest, "kind")), "Pod");
        assert_int_equal(back.start_time, 1700000000123456ULL);
        pod_checkpoint_done(&back);

        /* A torn file (the agent died mid-write would leave the old one, but
         * a damaged disk can do this) is refused, not half-used. */
        _cleanup_free_ char *path = strprintf("%s/pod.json", dir);
        assert_int_equal(write_file_atomic(path, "{\"uid\": \"x\"", 11, 0600), 0);
        assert_int_equal(pod_checkpoint_read(dir, &back), -EINVAL);

        /* pod.json holds the manifest: up to 16 MiB, where an attempt
         * record stops at 1 MiB. */
        size_t big_size = 2 * 1024 * 1024;
        _cleanup_free_ char *big = malloc(big_size + 1);
        assert_non_null(big);
        memset(big, 'x', big_size);
        big[big_size] = 0;
        cp.manifest = json_pack("{s:s, s:s}", "kind", "Pod", "padding", big);
        assert_int_equal(pod_checkpoint_write(dir, &cp), 0);
        json_decref(cp.manifest);
        assert_int_equal(pod_checkpoint_read(dir, &back), 0);
        assert_int_equal(strlen(json_string_value(json_object_get(back.manifest, "padding"))),
                         big_size);
        pod_checkpoint_done(&back);
        _cleanup_free_ char *attempt = strprintf("%s/attempt.json", dir);
        _cleanup_free_ char *record = strprintf("{\"exitCode\": 0, \"reason\": \"%s\"}", big);
        assert_int_equal(write_file_atomic(attempt, record, strlen(record), 0600), 0);
        AttemptRecord rec = { .exit_code = -1 };
        assert_int_equal(attempt_record_read(dir, &rec), -EINVAL);

        assert_int_equal(unlink(path), 0);
        assert_int_equal(pod_checkpoint_read(dir, &back), -ENOENT);
        remove_tmpdir(dir);
}

/* An adopted pod carries the annotations a source gives a pod, config.seen
 * included: when this agent first saw it (its checkpoint). */
static void test_pod_checkpoint_parse_annotations(void **state) {
        (void)state;
        PodCheckpoint cp = {
                .uid = "0123456789abcdef0123456789abcdef",
                .source = "file",
                .origin = "/etc/kubernetes/manifests/web.yaml",
                .manifest =
                        json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:[{s:s, s:s}]}}", "apiVersion",
                                  "v1", "kind", "Pod", "metadata", "name", "web", "namespace",
                                  "default", "spec", "containers", "name", "c", "image", "busybox"),
        };
        ManifestObject *o = NULL;
        assert_non_null(cp.manifest);
        assert_int_equal(pod_checkpoint_parse(&cp, "node1", 1700000000123400ULL, &o), 0);
        const StringMap *a = &o->pod->metadata.annotations;
        assert_non_null(string_map_get(a, "kubernetes.io/config.seen"));
        assert_string_equal(string_map_get(a, "kubernetes.io/config.seen")->value,
                            "2023-11-14T22:13:20.1234Z");
        assert_string_equal(string_map_get(a, "kubernetes.io/config.source")->value, "file");
        assert_string_equal(string_map_get(a, "kubernetes.io/config.hash")->value, cp.uid);
        assert_string_equal(o->uid, cp.uid);
        manifest_object_unref(o);

        /* 0: none, where no agent sees the pod (the image users' scan) */
        assert_int_equal(pod_checkpoint_parse(&cp, "node1", 0, &o), 0);
        assert_null(string_map_get(&o->pod->metadata.annotations, "kubernetes.io/config.seen"));
        manifest_object_unref(o);
        json_decref(cp.manifest);
}

static void test_attempt_record(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        AttemptRecord rec = { .exit_code = -1 };

        assert_int_equal(attempt_record_read(dir, &rec), -ENOENT);
        AttemptRecord started = { .started_at = 100, .exit_code = -1 };
        assert_int_equal(attempt_record_write(dir, &started), 0);
        assert_int_equal(attempt_record_read(dir, &rec), 0);
        assert_int_equal(rec.started_at, 100);
        assert_int_equal(rec.finished_at, 0);
        assert_int_equal(rec.exit_code, -1);
        assert_null(rec.reason);
        attempt_record_done(&rec);

        AttemptRecord exited = { .started_at = 100,
                                 .finished_at = 250,
                                 .exit_code = 137,
                                 .reason = "Error",
                                 .message = "bye" };
        assert_int_equal(attempt_record_write(dir, &exited), 0);
        assert_int_equal(attempt_record_read(dir, &rec), 0);
        assert_int_equal(rec.finished_at, 250);
        assert_int_equal(rec.exit_code, 137);
        assert_string_equal(rec.reason, "Error");
        assert_string_equal(rec.message, "bye");
        attempt_record_done(&rec);

        /* A termination message that is not UTF-8 (the container wrote the
         * file) must not cost the exit code. */
        AttemptRecord bad = { .started_at = 100,
                              .finished_at = 300,
                              .exit_code = 3,
                              .reason = "Error",
                              .message = "bad \xff\xfe utf8 \xc3\x28 end" };
        assert_int_equal(attempt_record_write(dir, &bad), 0);
        assert_int_equal(attempt_record_read(dir, &rec), 0);
        assert_int_equal(rec.exit_code, 3);
        assert_int_equal(rec.finished_at, 300);
        assert_string_equal(rec.message, "bad \xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd( end");
        attempt_record_done(&rec);

        _cleanup_free_ char *path = strprintf("%s/attempt.json", dir);
        assert_int_equal(write_file_atomic(path, "[1,2]", 5, 0600), 0);
        assert_int_equal(attempt_record_read(dir, &rec), -EINVAL);
        remove_tmpdir(dir);
}

/* The image volumes' digests are recorded when the attempt starts; the
 * later writes (its start, its exit) know only the container's image and
 * must not drop them, or image GC would take a mounted image. */
static void test_attempt_record_image_volumes(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        char *digests[] = { "sha256:aa", "sha256:bb", NULL };
        AttemptRecord rec = { .exit_code = -1 };

        AttemptRecord first = { .exit_code = -1,
                                .image_digest = "sha256:cc",
                                .image_volume_digests = digests };
        assert_int_equal(attempt_record_write(dir, &first), 0);
        AttemptRecord exited = {
                .started_at = 1, .finished_at = 2, .exit_code = 0, .image_digest = "sha256:cc"
        };
        assert_int_equal(attempt_record_write(dir, &exited), 0);
        assert_int_equal(attempt_record_read(dir, &rec), 0);
        assert_int_equal(rec.finished_at, 2);
        assert_non_null(rec.image_volume_digests);
        assert_int_equal(strv_length(rec.image_volume_digests), 2);
        assert_string_equal(rec.image_volume_digests[0], "sha256:aa");
        assert_string_equal(rec.image_volume_digests[1], "sha256:bb");
        attempt_record_done(&rec);

        /* hostile content: non-strings are skipped, not half-read */
        _cleanup_free_ char *path = strprintf("%s/attempt.json", dir);
        const char *j = "{\"exitCode\":0,\"imageVolumeDigests\":[1,\"sha256:dd\",null]}";
        assert_int_equal(write_file_atomic(path, j, strlen(j), 0600), 0);
        assert_int_equal(attempt_record_read(dir, &rec), 0);
        assert_int_equal(strv_length(rec.image_volume_digests), 1);
        assert_string_equal(rec.image_volume_digests[0], "sha256:dd");
        attempt_record_done(&rec);
        remove_tmpdir(dir);
}

/* An attempt's image volumes count as used by the pod for image GC. */
static void test_attempt_image_users(void **state) {
        (void)state;
        char *pods = make_tmpdir();
        _cleanup_free_ char *adir = strprintf("%s/u1/containers/c/0", pods);
        assert_int_equal(mkdir_p(adir, 0755), 0);
        char *digests[] = { "sha256:aa", NULL };
        AttemptRecord rec = { .exit_code = -1,
                              .image_digest = "sha256:cc",
                              .image_volume_digests = digests };
        assert_int_equal(attempt_record_write(adir, &rec), 0);

        ImageUsers users = {};
        assert_int_equal(pod_checkpoints_image_users(pods, &users), 0);
        bool aa = false, cc = false;
        for (size_t i = 0; i < users.n; i++) {
                aa = aa || streq(users.uses[i].ref, "sha256:aa");
                cc = cc || streq(users.uses[i].ref, "sha256:cc");
        }
        assert_true(aa);
        assert_true(cc);
        image_users_done(&users);
        remove_tmpdir(pods);
}

static void test_sandbox_record(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        _cleanup_free_ char *path = strprintf("%s/uid.json", dir);
        SandboxRecord rec = {};

        assert_int_equal(sandbox_record_read(path, &rec, NULL), -ENOENT);
        char *ips[] = { "10.86.0.5", "fd00::5", NULL };
        SandboxRecord w = { .pod_ips = ips, .network = true };
        assert_int_equal(sandbox_record_write(path, &w), 0);
        assert_int_equal(sandbox_record_read(path, &rec, NULL), 0);
        assert_true(rec.network);
        assert_false(rec.tearing_down);
        assert_int_equal(strv_length(rec.pod_ips), 2);
        assert_string_equal(rec.pod_ips[1], "fd00::5");
        sandbox_record_done(&rec);

        /* a teardown's mark survives the round trip */
        w.tearing_down = true;
        assert_int_equal(sandbox_record_write(path, &w), 0);
        assert_int_equal(sandbox_record_read(path, &rec, NULL), 0);
        assert_true(rec.network);
        assert_true(rec.tearing_down);
        sandbox_record_done(&rec);

        SandboxRecord host = {};
        assert_int_equal(sandbox_record_write(path, &host), 0);
        assert_int_equal(sandbox_record_read(path, &rec, NULL), 0);
        assert_false(rec.network);
        assert_null(rec.pod_ips);
        sandbox_record_done(&rec);

        /* what a restarted agent may find there instead */
        static const char *const bad[] = {
                "",
                "{",
                "[]",
                "{\"version\": 99}",
                "{\"network\": true}",
                "{\"network\": 1, \"podIPs\": []}",
                "{\"network\": true, \"podIPs\": [\"x\"]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                Error err = {};
                assert_int_equal(write_file_atomic(path, bad[i], strlen(bad[i]), 0600), 0);
                assert_true(sandbox_record_read(path, &rec, &err) < 0);
                assert_non_null(strstr(err.message, path));
                assert_null(rec.pod_ips);
        }
        /* newer members are ignored */
        const char *newer = "{\"network\": false, \"podIPs\": [], \"zone\": 3}";
        assert_int_equal(write_file_atomic(path, newer, strlen(newer), 0600), 0);
        assert_int_equal(sandbox_record_read(path, &rec, NULL), 0);
        sandbox_record_done(&rec);
        /* never followed */
        _cleanup_free_ char *link = strprintf("%s/link.json", dir);
        assert_int_equal(symlink(path, link), 0);
        Error err = {};
        assert_int_equal(sandbox_record_read(link, &rec, &err), -ELOOP);
        assert_non_null(strstr(err.message, "symlink"));
        remove_tmpdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_checkpoint_roundtrip),
                cmocka_unit_test(test_pod_checkpoint_parse_annotations),
                cmocka_unit_test(test_attempt_record),
                cmocka_unit_test(test_attempt_record_image_volumes),
                cmocka_unit_test(test_attempt_image_users),
                cmocka_unit_test(test_sandbox_record),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
