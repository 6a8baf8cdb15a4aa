/* Pod log removal: which entries of the pod logs and container logs
 * directories are ours and orphaned, and that removal never follows a link. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "container-id.h"
#include "fileio.h"
#include "pod-log-gc.h"
#include "rm-rf.h"
#include "string-util.h"

#define UID "7ceca5b52857864ff720b6fad01b5ef8"
#define OTHER "1afd52cd307f3d448b6a5831675112ac"

static void test_dir_uid(void **state) {
        (void)state;
        assert_string_equal(pod_log_dir_uid("default_web-node1_" UID), UID);
        assert_string_equal(pod_log_dir_uid("kube-system_a_x-1"), "x-1");
        assert_null(pod_log_dir_uid("default_web-node1"));
        assert_null(pod_log_dir_uid("default_web_node1_" UID));
        assert_null(pod_log_dir_uid("_web_" UID));
        assert_null(pod_log_dir_uid("default__" UID));
        assert_null(pod_log_dir_uid("default_web_"));
        assert_null(pod_log_dir_uid("default_web_ABC"));
        assert_null(pod_log_dir_uid("default_web_a/b"));
        assert_null(pod_log_dir_uid("default_web_.."));
        assert_null(pod_log_dir_uid(".."));
}

static char *link_name(const char *uid, const char *container, unsigned attempt) {
        _cleanup_free_ char *id = container_runtime_id(uid, container, attempt);
        return strprintf("web-node1_default_%s-%s.log", container, id);
}

static void test_link_parse(void **state) {
        (void)state;
        _cleanup_free_ char *name = link_name(UID, "main", 3);
        PodLogLink l = {};

        assert_int_equal(pod_log_link_parse(name,
                                            "/var/log/pods/default_web-node1_" UID "/main/3.log",
                                            "/var/log/pods", &l),
                         1);
        assert_string_equal(l.dir, "default_web-node1_" UID);
        assert_string_equal(l.container, "main");
        assert_string_equal(l.uid, UID);
        assert_int_equal(l.attempt, 3);
        pod_log_link_done(&l);
        assert_null(l.dir);

        /* A trailing slash, or doubled ones, as the agent's own paths have them. */
        assert_int_equal(pod_log_link_parse(name,
                                            "/var/log/pods//default_web-node1_" UID "/main/3.log",
                                            "/var/log/pods/", &l),
                         1);
        pod_log_link_done(&l);

        /* The legacy container ID scheme. */
        assert_int_equal(pod_log_link_parse("web-node1_default_main-" UID "-main-3.log",
                                            "/var/log/pods/default_web-node1_" UID "/main/3.log",
                                            "/var/log/pods", &l),
                         1);
        pod_log_link_done(&l);

        static const char *const not_ours[][2] = {
                /* another tool's directory, or a prefix of ours */
                { NULL, "/var/log/other/default_web-node1_" UID "/main/3.log" },
                { NULL, "/var/log/podsX/default_web-node1_" UID "/main/3.log" },
                { NULL, "var/log/pods/default_web-node1_" UID "/main/3.log" },
                { NULL, "../pods/default_web-node1_" UID "/main/3.log" },
                /* not a log file of an attempt */
                { NULL, "/var/log/pods/default_web-node1_" UID "/main/3.log.20250101-000000" },
                { NULL, "/var/log/pods/default_web-node1_" UID "/main/x.log" },
                { NULL, "/var/log/pods/default_web-node1_" UID "/main/03.log" },
                { NULL, "/var/log/pods/default_web-node1_" UID "/main/sub/3.log" },
                { NULL, "/var/log/pods/default_web-node1_" UID "/../3.log" },
                { NULL, "/var/log/pods/default_web-node1_" UID "//3.log" },
                { NULL, "/var/log/pods/default_web-node1/main/3.log" },
                /* the name does not match the target */
                { NULL, "/var/log/pods/default_web-node2_" UID "/main/3.log" },
                { NULL, "/var/log/pods/other_web-node1_" UID "/main/3.log" },
                { NULL, "/var/log/pods/default_web-node1_" UID "/side/3.log" },
                { NULL, "/var/log/pods/default_web-node1_" OTHER "/main/3.log" },
                { "web-node1_default_main-0123.log",
                  "/var/log/pods/default_web-node1_" UID "/main/3.log" },
                { "web-node1_default_main-.log",
                  "/var/log/pods/default_web-node1_" UID "/main/3.log" },
                { "web-node1_default_main-" UID "-main-3.log.old",
                  "/var/log/pods/default_web-node1_" UID "/main/3.log" },
        };
        for (size_t i = 0; i < sizeof not_ours / sizeof not_ours[0]; i++) {
                const char *n = not_ours[i][0] ?: name;
                assert_int_equal(pod_log_link_parse(n, not_ours[i][1], "/var/log/pods", &l), 0);
                assert_null(l.dir);
        }
}

/* ---- on a scratch tree ---- */

typedef struct Tree {
        char root[64];
        char *pods;  /* pod logs dir */
        char *links; /* container logs dir */
        char *outside;
} Tree;

static void touch(const char *path) {
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        close(fd);
}

static bool exists(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0;
}

static char *pod_log(Tree *t, const char *uid, const char *container, unsigned attempt) {
        _cleanup_free_ char *dir = strprintf("%s/default_web-node1_%s/%s", t->pods, uid, container);
        assert_int_equal(mkdir_p(dir, 0755), 0);
        char *log = strprintf("%s/%u.log", dir, attempt);
        touch(log);
        return log;
}

static char *pod_link(Tree *t, const char *uid, const char *container, unsigned attempt) {
        _cleanup_free_ char *target =
                strprintf("%s/default_web-node1_%s/%s/%u.log", t->pods, uid, container, attempt);
        _cleanup_free_ char *name = link_name(uid, container, attempt);
        char *link = strprintf("%s/%s", t->links, name);
        assert_int_equal(symlink(target, link), 0);
        return link;
}

static int tree_setup(void **state) {
        Tree *t = calloc(1, sizeof *t);
        strcpy(t->root, "/tmp/test-pod-log-gc.XXXXXX");
        assert_non_null(mkdtemp(t->root));
        t->pods = strprintf("%s/pods", t->root);
        t->links = strprintf("%s/containers", t->root);
        t->outside = strprintf("%s/outside", t->root);
        assert_int_equal(mkdir_p(t->pods, 0755), 0);
        assert_int_equal(mkdir_p(t->links, 0755), 0);
        assert_int_equal(mkdir_p(t->outside, 0755), 0);
        _cleanup_free_ char *keep = strprintf("%s/keep", t->outside);
        touch(keep);
        *state = t;
        return 0;
}

static int tree_teardown(void **state) {
        Tree *t = *state;
        _cleanup_close_ int fd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(rm_rf_at(fd, t->root + strlen("/tmp/")), 0);
        free(t->pods);
        free(t->links);
        free(t->outside);
        free(t);
        return 0;
}

static bool outside_intact(Tree *t) {
        _cleanup_free_ char *keep = strprintf("%s/keep", t->outside);
        return exists(keep);
}

static void test_remove(void **state) {
        Tree *t = *state;
        _cleanup_free_ char *log0 = pod_log(t, UID, "main", 0);
        _cleanup_free_ char *log1 = pod_log(t, UID, "main", 1);
        _cleanup_free_ char *l0 = pod_link(t, UID, "main", 0);
        _cleanup_free_ char *l1 = pod_link(t, UID, "main", 1);
        _cleanup_free_ char *other_log = pod_log(t, OTHER, "main", 0);
        _cleanup_free_ char *other_link = pod_link(t, OTHER, "main", 0);
        /* A container with a hostPath of its log directory planted links to
         * a host directory and file. */
        _cleanup_free_ char *planted_dir =
                strprintf("%s/default_web-node1_%s/main/evil", t->pods, UID);
        _cleanup_free_ char *planted_file =
                strprintf("%s/default_web-node1_%s/main/2.log", t->pods, UID);
        assert_int_equal(symlink(t->outside, planted_dir), 0);
        _cleanup_free_ char *keep = strprintf("%s/keep", t->outside);
        assert_int_equal(symlink(keep, planted_file), 0);
        /* Another tool's link in the shared directory. */
        _cleanup_free_ char *foreign = strprintf("%s/foreign_default_main-abc.log", t->links);
        assert_int_equal(symlink("/nonexistent/x.log", foreign), 0);

        assert_int_equal(pod_log_remove(t->pods, t->links, "default_web-node1_" UID), 0);
        _cleanup_free_ char *dir = strprintf("%s/default_web-node1_%s", t->pods, UID);
        assert_false(exists(dir));
        assert_false(exists(log0));
        assert_false(exists(log1));
        assert_false(exists(l0));
        assert_false(exists(l1));
        assert_true(exists(other_log));
        assert_true(exists(other_link));
        assert_true(exists(foreign));
        assert_true(outside_intact(t));
        /* Already gone: nothing to do. */
        assert_int_equal(pod_log_remove(t->pods, t->links, "default_web-node1_" UID), 0);
        assert_int_equal(pod_log_remove(t->pods, NULL, "default_web-node1_" OTHER), 0);
        assert_false(exists(other_log));
        assert_true(exists(other_link)); /* no links dir given */
}

static bool known_uid(const char *uid, void *userdata) {
        return streq(uid, (const char *)userdata);
}

static void test_sweep(void **state) {
        Tree *t = *state;
        /* The live pod UID: attempt 2 runs, 1 is the previous one (logs -p),
         * 0's files went with the dead-attempt GC but its link stayed; 3's
         * live file was renamed by a rotation an agent crash interrupted. */
        _cleanup_free_ char *log1 = pod_log(t, UID, "main", 1);
        _cleanup_free_ char *log2 = pod_log(t, UID, "main", 2);
        _cleanup_free_ char *l0 = pod_link(t, UID, "main", 0);
        _cleanup_free_ char *l1 = pod_link(t, UID, "main", 1);
        _cleanup_free_ char *l2 = pod_link(t, UID, "main", 2);
        _cleanup_free_ char *rotated =
                strprintf("%s/default_web-node1_%s/side/3.log.20250101-000000", t->pods, UID);
        _cleanup_free_ char *side_dir = strprintf("%s/default_web-node1_%s/side", t->pods, UID);
        assert_int_equal(mkdir_p(side_dir, 0755), 0);
        touch(rotated);
        _cleanup_free_ char *l3 = pod_link(t, UID, "side", 3);
        /* A pod gone while the agent was down. */
        _cleanup_free_ char *other_log = pod_log(t, OTHER, "main", 0);
        _cleanup_free_ char *other_link = pod_link(t, OTHER, "main", 0);
        _cleanup_free_ char *other_dir = strprintf("%s/default_web-node1_%s", t->pods, OTHER);
        /* Not ours: other shapes, a link in the pod logs dir, a dangling
         * link of another tool, a link into our dir that does not match its
         * name. */
        _cleanup_free_ char *odd_dir = strprintf("%s/lost+found", t->pods);
        assert_int_equal(mkdir(odd_dir, 0755), 0);
        _cleanup_free_ char *linked_dir =
                strprintf("%s/default_linked_0a1b2c3d4e5f60718293a4b5c6d7e8f9", t->pods);
        assert_int_equal(symlink(t->outside, linked_dir), 0);
        _cleanup_free_ char *foreign = strprintf("%s/foreign_default_main-abc.log", t->links);
        assert_int_equal(symlink("/nonexistent/x.log", foreign), 0);
        _cleanup_free_ char *mismatch =
                strprintf("%s/other_default_main-%s-main-0.log", t->links, OTHER);
        _cleanup_free_ char *mismatch_target =
                strprintf("%s/default_web-node1_%s/main/0.log", t->pods, OTHER);
        assert_int_equal(symlink(mismatch_target, mismatch), 0);
        /* A regular file under a link's name. */
        _cleanup_free_ char *plain = link_name(OTHER, "main", 5);
        _cleanup_free_ char *plain_path = strprintf("%s/%s", t->links, plain);
        touch(plain_path);

        unsigned n = pod_log_sweep(t->pods, t->links, known_uid, (void *)UID);
        assert_int_equal(n, 3); /* other's dir, its link, l0 */
        assert_false(exists(other_dir));
        assert_false(exists(other_log));
        assert_false(exists(other_link));
        assert_false(exists(l0));
        assert_true(exists(log1));
        assert_true(exists(log2));
        assert_true(exists(l1));
        assert_true(exists(l2));
        assert_true(exists(l3));
        assert_true(exists(odd_dir));
        assert_true(exists(linked_dir));
        assert_true(exists(foreign));
        assert_true(exists(mismatch));
        assert_true(exists(plain_path));
        assert_true(outside_intact(t));

        /* Nothing left to do; and no pod known: only ours go. */
        assert_int_equal(pod_log_sweep(t->pods, t->links, known_uid, (void *)UID), 0);
        assert_int_equal(pod_log_sweep(t->pods, t->links, known_uid, (void *)"none"), 4);
        assert_true(exists(linked_dir));
        assert_true(exists(foreign));
        assert_true(exists(mismatch));
        assert_true(outside_intact(t));
        /* Missing directories are not an error. */
        _cleanup_free_ char *missing = strprintf("%s/missing", t->root);
        assert_int_equal(pod_log_sweep(missing, missing, known_uid, (void *)UID), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dir_uid),
                cmocka_unit_test(test_link_parse),
                cmocka_unit_test_setup_teardown(test_remove, tree_setup, tree_teardown),
                cmocka_unit_test_setup_teardown(test_sweep, tree_setup, tree_teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
