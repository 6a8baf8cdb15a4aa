/* Image volumes' decisions: the pull policy table a start applies to a
 * container's image and to each image volume's, which image volumes a
 * container mounts, and where an attempt mounts them (names that could
 * leave the attempt directory are refused). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "image-volumes.h"
#include "macro.h"

static void test_pull_decide(void **state) {
        (void)state;
        /* Always: one pull per attempt, then the stored copy */
        assert_int_equal(image_pull_decide(PULL_POLICY_ALWAYS, true, false, true), IMAGE_PULL_PULL);
        assert_int_equal(image_pull_decide(PULL_POLICY_ALWAYS, false, false, true),
                         IMAGE_PULL_PULL);
        assert_int_equal(image_pull_decide(PULL_POLICY_ALWAYS, true, true, true),
                         IMAGE_PULL_USE_STORED);
        assert_int_equal(image_pull_decide(PULL_POLICY_ALWAYS, false, true, true),
                         IMAGE_PULL_VANISHED);
        /* without registry pulls, a stored image is used even with Always */
        assert_int_equal(image_pull_decide(PULL_POLICY_ALWAYS, true, false, false),
                         IMAGE_PULL_USE_STORED);
        assert_int_equal(image_pull_decide(PULL_POLICY_ALWAYS, false, false, false),
                         IMAGE_PULL_NO_REGISTRY);
        /* IfNotPresent */
        assert_int_equal(image_pull_decide(PULL_POLICY_IF_NOT_PRESENT, true, false, true),
                         IMAGE_PULL_USE_STORED);
        assert_int_equal(image_pull_decide(PULL_POLICY_IF_NOT_PRESENT, false, false, true),
                         IMAGE_PULL_PULL);
        assert_int_equal(image_pull_decide(PULL_POLICY_IF_NOT_PRESENT, false, false, false),
                         IMAGE_PULL_NO_REGISTRY);
        assert_int_equal(image_pull_decide(PULL_POLICY_IF_NOT_PRESENT, false, true, true),
                         IMAGE_PULL_VANISHED);
        /* Never */
        assert_int_equal(image_pull_decide(PULL_POLICY_NEVER, true, false, true),
                         IMAGE_PULL_USE_STORED);
        assert_int_equal(image_pull_decide(PULL_POLICY_NEVER, false, false, true),
                         IMAGE_PULL_NEVER_ABSENT);
        assert_int_equal(image_pull_decide(PULL_POLICY_NEVER, false, false, false),
                         IMAGE_PULL_NEVER_ABSENT);
}

static void test_of_container(void **state) {
        (void)state;
        Volume vols[] = {
                { .name = "a", .type = VOLUME_IMAGE },
                { .name = "e", .type = VOLUME_EMPTY_DIR },
                { .name = "b", .type = VOLUME_IMAGE },
                { .name = "unused", .type = VOLUME_IMAGE },
        };
        PodSpec spec = { .volumes = vols, .n_volumes = ELEMENTSOF(vols) };
        VolumeMount mounts[] = {
                { .name = "b", .mount_path = "/b" },
                { .name = "e", .mount_path = "/e" },
                { .name = "a", .mount_path = "/a" },
                { .name = "b", .mount_path = "/b2", .sub_path = "x" },
        };
        Container c = { .name = "c", .volume_mounts = mounts, .n_volume_mounts = 4 };
        size_t *idx = NULL, n = 99;

        assert_int_equal(image_volumes_of_container(&spec, &c, &idx, &n), 0);
        /* each once (b is mounted twice), in the pod's volume order */
        assert_int_equal(n, 2);
        assert_int_equal(idx[0], 0);
        assert_int_equal(idx[1], 2);
        free(idx);
        assert_true(image_volumes_mounted_by(&spec, &c));

        Container plain = { .name = "p", .volume_mounts = mounts + 1, .n_volume_mounts = 1 };
        assert_int_equal(image_volumes_of_container(&spec, &plain, &idx, &n), 0);
        assert_int_equal(n, 0);
        assert_null(idx);
        assert_false(image_volumes_mounted_by(&spec, &plain));
}

static void test_paths(void **state) {
        (void)state;
        char *t = NULL, *u = NULL, *w = NULL;

        assert_int_equal(image_volume_paths("/p/containers/c/3", "tools", &t, &u, &w), 0);
        assert_string_equal(t, "/p/containers/c/3/subpaths/image-tools");
        assert_string_equal(u, "/p/containers/c/3/image-volumes/tools/upper");
        assert_string_equal(w, "/p/containers/c/3/image-volumes/tools/work");
        free(t);
        free(u);
        free(w);
        t = NULL;
        assert_int_equal(image_volume_paths("/a", "x", &t, NULL, NULL), 0);
        free(t);

        const char *bad[] = { "", "..", ".", "a/b", "../x", "/abs" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                t = NULL;
                assert_int_equal(image_volume_paths("/a", bad[i], &t, NULL, NULL), -EINVAL);
                assert_null(t);
        }
        assert_int_equal(image_volume_paths(NULL, "x", NULL, NULL, NULL), -EINVAL);
}

/* The seal makes the image's mount read-only, nosuid, nodev and noexec,
 * whatever it was (a tmpfs stands for the overlay), in a mount namespace
 * of the test's own. */
static void test_seal(void **state) {
        (void)state;
        char dir[] = "/tmp/test-image-volumes-XXXXXX";
        struct statvfs sv;

        assert_non_null(mkdtemp(dir));
        if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
            mount("tmpfs", dir, "tmpfs", 0, "size=64k") < 0) {
                (void)rmdir(dir);
                skip();
        }
        assert_int_equal(statvfs(dir, &sv), 0);
        assert_false(sv.f_flag & ST_RDONLY);
        assert_int_equal(image_volume_seal(dir), 0);
        assert_int_equal(statvfs(dir, &sv), 0);
        assert_true(sv.f_flag & ST_RDONLY);
        assert_true(sv.f_flag & ST_NOEXEC);
        assert_true(sv.f_flag & ST_NOSUID);
        assert_true(sv.f_flag & ST_NODEV);
        char file[64];
        snprintf(file, sizeof(file), "%s/x", dir);
        FILE *f = fopen(file, "we");
        assert_null(f);
        assert_int_equal(umount2(dir, MNT_DETACH), 0);
        assert_int_equal(rmdir(dir), 0);
        assert_int_equal(image_volume_seal(dir), -ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pull_decide),
                cmocka_unit_test(test_of_container),
                cmocka_unit_test(test_paths),
                cmocka_unit_test(test_seal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
