/* statfs figures, the du-style walk (inodes counted exactly, blocks at least
 * the data written, hard links once, symlinks not followed) and the helper's
 * output format. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cleanup.h"
#include "disk-usage.h"
#include "fileio.h"
#include "string-util.h"

static char *make_root(void) {
        char tmpl[] = "/tmp/nanolet-test-disk-usage-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        return strdup(tmpl);
}

static void rm_root(const char *root) {
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", root);
        assert_int_equal(system(cmd), 0);
}

/* A file of size bytes of non-zero data (so nothing is sparse). */
static void put_file(const char *root, const char *rel, size_t size) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        _cleanup_free_ char *buf = malloc(size);
        memset(buf, 'x', size);
        _cleanup_close_ int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, buf, size), (ssize_t)size);
        assert_int_equal(fsync(fd), 0);
}

static void mk(const char *root, const char *rel) {
        _cleanup_free_ char *p = strprintf("%s/%s", root, rel);
        assert_int_equal(mkdir_p(p, 0755), 0);
}

static void test_statfs(void **state) {
        FsInfo fs;
        assert_int_equal(disk_usage_statfs("/tmp", &fs), 0);
        assert_true(fs.capacity > 0);
        assert_true(fs.available <= fs.capacity);
        assert_true(fs.used <= fs.capacity);
        assert_int_equal(disk_usage_statfs("/nonexistent/x", &fs), -ENOENT);
}

static void test_walk(void **state) {
        _cleanup_free_ char *root = make_root(), *outside = make_root();
        DiskUsage du, before;

        assert_int_equal(disk_usage_walk(root, &du), 0);
        assert_true(du.valid);
        assert_int_equal(du.inodes, 1); /* the directory itself */

        mk(root, "a/b/c");
        put_file(root, "a/one", 100000);
        put_file(root, "a/b/c/two", 300000);
        assert_int_equal(disk_usage_walk(root, &du), 0);
        assert_int_equal(du.inodes, 6); /* root, a, b, c, one, two */
        assert_true(du.bytes >= 400000);
        before = du;

        /* A second link to a file is not a second file. */
        _cleanup_free_ char *one = strprintf("%s/a/one", root),
                            *lnk = strprintf("%s/a/b/link", root);
        assert_int_equal(link(one, lnk), 0);
        assert_int_equal(disk_usage_walk(root, &du), 0);
        assert_int_equal(du.inodes, before.inodes);
        assert_int_equal(du.bytes, before.bytes);

        /* A symlink counts as itself, its target is not walked. */
        put_file(outside, "big", 1000000);
        _cleanup_free_ char *sl = strprintf("%s/to-outside", root);
        assert_int_equal(symlink(outside, sl), 0);
        assert_int_equal(disk_usage_walk(root, &du), 0);
        assert_int_equal(du.inodes, before.inodes + 1);
        assert_true(du.bytes < before.bytes + 1000000);

        /* Nesting deeper than the limit is counted down to there. */
        _cleanup_free_ char *deep = make_root();
        {
                _cleanup_free_ char *rel = strdup("");
                for (unsigned i = 0; i < DISK_USAGE_MAX_DEPTH + 10; i++) {
                        char *x = strprintf("%s%sd", rel, i ? "/" : "");
                        free(rel);
                        rel = x;
                }
                mk(deep, rel);
        }
        assert_int_equal(disk_usage_walk(deep, &du), 0);
        assert_int_equal(du.inodes, 1 + DISK_USAGE_MAX_DEPTH);
        rm_root(deep);

        _cleanup_free_ char *file = strprintf("%s/a/one", root);
        assert_int_equal(disk_usage_walk(file, &du), -ENOTDIR);
        assert_int_equal(disk_usage_walk("/nonexistent/x", &du), -ENOENT);
        rm_root(root);
        rm_root(outside);
}

static int parse(const char *text, size_t n, DiskUsage *r) {
        json_t *j = json_loads(text, 0, NULL);
        assert_non_null(j);
        int k = disk_usage_parse_result(j, n, r);
        json_decref(j);
        return k;
}

static void test_parse(void **state) {
        DiskUsage r[3];
        assert_int_equal(parse("{\"result\":0,\"usage\":[[4096,1],null,[123456,78]]}", 3, r), 0);
        assert_true(r[0].valid);
        assert_int_equal(r[0].bytes, 4096);
        assert_int_equal(r[0].inodes, 1);
        assert_false(r[1].valid);
        assert_true(r[2].valid);
        assert_int_equal(r[2].bytes, 123456);
        assert_int_equal(r[2].inodes, 78);
        assert_int_equal(parse("{\"usage\":[]}", 0, r), 0);

        /* too few, too many, not a pair, negative, wrong types, no usage */
        assert_int_equal(parse("{\"usage\":[[1,1]]}", 2, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[[1,1],[2,2]]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[[1]]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[[1,1,1]]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[[-1,1]]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[[1,\"x\"]]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[[1.5,1]]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":[{}]}", 1, r), -EBADMSG);
        assert_int_equal(parse("{\"usage\":{}}", 0, r), -EBADMSG);
        assert_int_equal(parse("{}", 0, r), -EBADMSG);
        assert_int_equal(disk_usage_parse_result(NULL, 0, r), -EBADMSG);
}

/* The mode's table: names and fields that helper.h can build and parse. */
static void test_helper_mode(void **state) {
        assert_int_equal(helper_mode_verify(&disk_usage_helper_mode), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_helper_mode),
                cmocka_unit_test(test_statfs),
                cmocka_unit_test(test_walk),
                cmocka_unit_test(test_parse),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
