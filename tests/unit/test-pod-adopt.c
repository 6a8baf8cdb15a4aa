/* What the agent does at start with a pod an earlier run left
 * (pod_adopt_decide()), what makes a pod live, and the checkpoint and
 * attempt records as adoption reads them: never through a symlink, never
 * half-read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "checkpoint.h"
#include "cleanup.h"
#include "container-id.h"
#include "fileio.h"
#include "pod-adopt.h"
#include "rm-rf.h"
#include "string-util.h"

#define UID "0123456789abcdef0123456789abcdef"

static PodAdoptVerdict decide(PodAdoptCheckpoint cp, bool live, bool wanted, bool settled) {
        PodAdoptFacts f = {
                .checkpoint = cp, .live = live, .wanted = wanted, .sources_settled = settled
        };
        return pod_adopt_decide(&f);
}

static void test_decide(void **state) {
        (void)state;
        /* A readable checkpoint: adopted from it, whatever else holds (its
         * worker is claimed by a source or terminated once all are read). */
        for (int m = 0; m < 8; m++)
                assert_int_equal(decide(POD_ADOPT_CHECKPOINT_READABLE, m & 1, m & 2, m & 4),
                                 POD_ADOPT_FROM_CHECKPOINT);
        for (PodAdoptCheckpoint cp = POD_ADOPT_CHECKPOINT_MISSING;
             cp <= POD_ADOPT_CHECKPOINT_UNREADABLE; cp++) {
                /* Nothing live: nothing to adopt or stop. */
                for (int m = 0; m < 4; m++)
                        assert_int_equal(decide(cp, false, m & 1, m & 2), POD_ADOPT_NEW);
                /* Live and wanted: the manifest's worker adopts, never a
                 * second copy. */
                assert_int_equal(decide(cp, true, true, false), POD_ADOPT_REBUILD);
                assert_int_equal(decide(cp, true, true, true), POD_ADOPT_REBUILD);
                /* Live, unwanted: stopped only once every source was read
                 * and none is broken. */
                assert_int_equal(decide(cp, true, false, false), POD_ADOPT_WAIT);
                assert_int_equal(decide(cp, true, false, true), POD_ADOPT_STOP);
        }
        assert_string_equal(pod_adopt_verdict_to_string(POD_ADOPT_STOP), "stop");
        assert_null(pod_adopt_verdict_to_string(_POD_ADOPT_VERDICT_MAX));
        assert_null(pod_adopt_verdict_to_string(_POD_ADOPT_VERDICT_INVALID));
        assert_int_equal(pod_adopt_checkpoint_from_errno(0), POD_ADOPT_CHECKPOINT_READABLE);
        assert_int_equal(pod_adopt_checkpoint_from_errno(-ENOENT), POD_ADOPT_CHECKPOINT_MISSING);
        assert_int_equal(pod_adopt_checkpoint_from_errno(-EINVAL), POD_ADOPT_CHECKPOINT_UNREADABLE);
        assert_int_equal(pod_adopt_checkpoint_from_errno(-ELOOP), POD_ADOPT_CHECKPOINT_UNREADABLE);
}

static char *make_tmpdir(void) {
        char tmpl[] = "/tmp/test-pod-adopt-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        return strdup(tmpl);
}

static void remove_tmpdir(char *dir) {
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
        free(dir);
}

static void test_live(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        _cleanup_free_ char *record = strprintf("%s/" UID ".json", dir);
        _cleanup_free_ char *own = container_runtime_id(UID, "main", 3);
        _cleanup_free_ char *other =
                container_runtime_id("fedcba9876543210fedcba9876543210", "main", 0);
        char *none[] = { NULL };
        char *theirs[] = { other, NULL };
        char *ours[] = { other, own, NULL };
        char *legacy[] = { (char *)UID "-main-2", NULL };

        assert_false(pod_adopt_live(none, UID, record));
        assert_false(pod_adopt_live(theirs, UID, record));
        assert_false(pod_adopt_live(NULL, UID, NULL));
        assert_true(pod_adopt_live(ours, UID, record));
        assert_true(pod_adopt_live(legacy, UID, NULL));
        assert_int_equal(write_file_atomic(record, "{}", 2, 0600), 0);
        assert_true(pod_adopt_live(none, UID, record));
        remove_tmpdir(dir);
}

static void write_checkpoint(const char *dir) {
        PodCheckpoint cp = {
                .uid = UID,
                .name = "web-node1",
                .namespace = "default",
                .source = "file",
                .origin = "/etc/kubernetes/manifests/web.yaml",
                .manifest = json_pack("{s:s}", "kind", "Pod"),
        };
        assert_int_equal(pod_checkpoint_write(dir, &cp), 0);
        json_decref(cp.manifest);
}

static void test_checkpoint_damaged(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        char *elsewhere = make_tmpdir();
        _cleanup_free_ char *path = strprintf("%s/pod.json", dir);
        _cleanup_free_ char *target = strprintf("%s/pod.json", elsewhere);
        PodCheckpoint cp = {};

        assert_int_equal(pod_checkpoint_read(dir, &cp), -ENOENT);
        assert_int_equal(write_file_atomic(path, "", 0, 0600), 0);
        assert_int_equal(pod_checkpoint_read(dir, &cp), -EINVAL);
        assert_int_equal(write_file_atomic(path, "\x01\xff{garbage", 10, 0600), 0);
        assert_int_equal(pod_checkpoint_read(dir, &cp), -EINVAL);
        assert_int_equal(write_file_atomic(path, "[1]", 3, 0600), 0);
        assert_int_equal(pod_checkpoint_read(dir, &cp), -EINVAL);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(mkdir(path, 0700), 0);
        assert_int_equal(pod_checkpoint_read(dir, &cp), -EINVAL);
        assert_int_equal(rmdir(path), 0);

        /* A valid checkpoint behind a symlink is still not read... */
        write_checkpoint(elsewhere);
        assert_int_equal(pod_checkpoint_read(elsewhere, &cp), 0);
        pod_checkpoint_done(&cp);
        assert_int_equal(symlink(target, path), 0);
        assert_int_equal(pod_checkpoint_read(dir, &cp), -EINVAL);
        /* ...and rewriting it replaces the link, never writes its target. */
        _cleanup_free_ char *before = NULL, *after = NULL;
        size_t n;
        assert_int_equal(read_full_file_at(AT_FDCWD, target, 1 << 20, &before, &n), 0);
        PodCheckpoint mine = {
                .uid = UID,
                .name = "other-node1",
                .namespace = "default",
                .source = "file",
                .origin = "/x.yaml",
        };
        assert_int_equal(pod_checkpoint_write(dir, &mine), 0);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(read_full_file_at(AT_FDCWD, target, 1 << 20, &after, &n), 0);
        assert_string_equal(before, after);
        assert_int_equal(pod_checkpoint_read(dir, &cp), 0);
        assert_string_equal(cp.name, "other-node1");
        pod_checkpoint_done(&cp);
        remove_tmpdir(dir);
        remove_tmpdir(elsewhere);
}

static void test_attempt_record_symlink(void **state) {
        (void)state;
        char *dir = make_tmpdir();
        char *elsewhere = make_tmpdir();
        _cleanup_free_ char *path = strprintf("%s/attempt.json", dir);
        _cleanup_free_ char *target = strprintf("%s/attempt.json", elsewhere);
        AttemptRecord rec = { .exit_code = -1 };

        AttemptRecord w = { .started_at = 5, .finished_at = 6, .exit_code = 1 };
        assert_int_equal(attempt_record_write(elsewhere, &w), 0);
        assert_int_equal(attempt_record_read(elsewhere, &rec), 0);
        attempt_record_done(&rec);
        assert_int_equal(symlink(target, path), 0);
        assert_int_equal(attempt_record_read(dir, &rec), -EINVAL);
        assert_int_equal(unlink(path), 0);
        assert_int_equal(attempt_record_read(dir, &rec), -ENOENT);
        assert_int_equal(write_file_atomic(path, "", 0, 0600), 0);
        assert_int_equal(attempt_record_read(dir, &rec), -EINVAL);
        remove_tmpdir(dir);
        remove_tmpdir(elsewhere);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decide),
                cmocka_unit_test(test_live),
                cmocka_unit_test(test_checkpoint_damaged),
                cmocka_unit_test(test_attempt_record_symlink),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
