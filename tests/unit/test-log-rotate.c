/* Container log rotation: listing order, gzip round trip, one rotation pass
 * against a FIFO standing in for conmon's, the asynchronous worker. */
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

#include "event.h"
#include "fileio.h"
#include "log-rotate.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

typedef struct Dir {
        char path[64];
        int fd;
} Dir;

static void dir_make(Dir *d) {
        strcpy(d->path, "/tmp/nanolet-test-logrot-XXXXXX");
        assert_non_null(mkdtemp(d->path));
        d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(d->fd >= 0);
}

static void dir_remove(Dir *d) {
        close(d->fd);
        char *parent = strdup(d->path);
        char *slash = strrchr(parent, '/');
        *slash = 0;
        int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(rm_rf_at(pfd, slash + 1), 0);
        close(pfd);
        free(parent);
}

static void put(const Dir *d, const char *name, const char *content) {
        int fd = openat(d->fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
        close(fd);
}

static bool exists(const Dir *d, const char *name) {
        return faccessat(d->fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

typedef struct Buf {
        char *data;
        size_t len, cap;
} Buf;

static int collect(const char *data, size_t size, void *userdata) {
        Buf *b = userdata;
        return strbuf_append(&b->data, &b->len, &b->cap, data, size);
}

static char *read_all(const Dir *d, const char *name) {
        Buf b = {};
        int r = container_log_read(d->fd, name, collect, &b);
        if (r < 0) {
                free(b.data);
                errno = -r;
                return NULL;
        }
        assert_int_equal(strbuf_append(&b.data, &b.len, &b.cap, "", 0), 0);
        return b.data ? b.data : strdup("");
}

static void test_list_order(void **state) {
        Dir d;
        dir_make(&d);
        put(&d, "0.log", "live");
        put(&d, "0.log.20240101-000003", "c");
        put(&d, "0.log.20240101-000001.gz", "a");
        put(&d, "0.log.20240101-000002", "b-plain-stale");
        put(&d, "0.log.20240101-000002.gz", "b");
        put(&d, "0.log.20240101-000004.tmp", "half");
        put(&d, "1.log.20240101-000000", "other attempt");
        put(&d, "10.log.20240101-000000", "other attempt");

        char **l = NULL;
        assert_int_equal(container_log_list_rotated(d.fd, "0.log", &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "0.log.20240101-000001.gz");
        assert_string_equal(l[1], "0.log.20240101-000002.gz");
        assert_string_equal(l[2], "0.log.20240101-000003");
        strv_free(l);

        l = NULL;
        assert_int_equal(container_log_list_rotated(d.fd, "7.log", &l), 0);
        assert_int_equal(strv_length(l), 0);
        strv_free(l);
        dir_remove(&d);
}

static void test_compress_and_read(void **state) {
        Dir d;
        dir_make(&d);
        /* big enough for several read chunks */
        Buf want = {};
        for (int i = 0; i < 20000; i++) {
                char line[96];
                int n = snprintf(line, sizeof(line),
                                 "2024-01-01T00:00:00.000000000Z stdout F line %d\n", i);
                assert_int_equal(strbuf_append(&want.data, &want.len, &want.cap, line, (size_t)n), 0);
        }
        assert_int_equal(strbuf_append(&want.data, &want.len, &want.cap, "", 0), 0);
        put(&d, "0.log.20240101-000001", want.data);

        assert_int_equal(container_log_compress(d.fd, "0.log.20240101-000001"), 0);
        assert_false(exists(&d, "0.log.20240101-000001"));
        assert_false(exists(&d, "0.log.20240101-000001.tmp"));
        assert_true(exists(&d, "0.log.20240101-000001.gz"));
        struct stat st;
        assert_int_equal(fstatat(d.fd, "0.log.20240101-000001.gz", &st, 0), 0);
        assert_true(st.st_size > 0 && (size_t)st.st_size < want.len / 4);
        assert_int_equal(st.st_mode & 0777, 0600);

        char *got = read_all(&d, "0.log.20240101-000001.gz");
        assert_non_null(got);
        assert_string_equal(got, want.data);
        free(got);
        /* the plain name, compressed in the meantime, is read from .gz */
        got = read_all(&d, "0.log.20240101-000001");
        assert_non_null(got);
        assert_string_equal(got, want.data);
        free(got);
        assert_null(read_all(&d, "0.log.nothing"));
        assert_int_equal(errno, ENOENT);
        /* a damaged .gz is an error, not silence */
        put(&d, "0.log.20240101-000009.gz", "not gzip at all, but long enough to be tried");
        got = read_all(&d, "0.log.20240101-000009.gz");
        if (got) /* zlib passes non-gzip data through transparently */
                assert_string_equal(got, "not gzip at all, but long enough to be tried");
        free(got);
        free(want.data);
        dir_remove(&d);
}

static char *path_in(const Dir *d, const char *name) {
        char *p = strprintf("%s/%s", d->path, name);
        assert_non_null(p);
        return p;
}

static void test_rotate_pass(void **state) {
        Dir d;
        dir_make(&d);
        _cleanup_free_ char *log = path_in(&d, "0.log");
        _cleanup_free_ char *ctl = path_in(&d, "ctl");
        LogRotatePolicy p = { .max_size = 100, .max_files = 3 };
        char buf[64];

        assert_int_equal(mkfifo(ctl, 0600), 0);
        /* conmon's side of the FIFO */
        int rd = open(ctl, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);

        /* below the limit: nothing */
        put(&d, "0.log", "2024-01-01T00:00:00Z stdout F short\n");
        assert_int_equal(container_log_rotate(log, ctl, &p, 1704067200), 0);
        assert_true(read(rd, buf, sizeof(buf)) <= 0); /* nothing was asked */

        /* four rotations, one second apart */
        const char *names[] = { "0.log.20240101-000000", "0.log.20240101-000001",
                                "0.log.20240101-000002", "0.log.20240101-000003" };
        for (int i = 0; i < 4; i++) {
                char content[256];
                snprintf(content, sizeof(content), "%0150d\n", i);
                put(&d, "0.log", content);
                assert_int_equal(container_log_rotate(log, ctl, &p, 1704067200 + i), 1);
                ssize_t n = read(rd, buf, sizeof(buf));
                assert_int_equal(n, 6);
                assert_memory_equal(buf, "2 0 0\n", 6);
                assert_false(exists(&d, "0.log")); /* conmon would recreate it */
                assert_true(exists(&d, names[i]));
        }
        /* max_files 3 = live + the newest rotated (plain) + one compressed */
        char **l = NULL;
        assert_int_equal(container_log_list_rotated(d.fd, "0.log", &l), 0);
        assert_int_equal(strv_length(l), 2);
        assert_string_equal(l[0], "0.log.20240101-000002.gz");
        assert_string_equal(l[1], "0.log.20240101-000003");
        strv_free(l);
        char *got = read_all(&d, "0.log.20240101-000002.gz");
        assert_non_null(got);
        assert_int_equal(atoi(got), 2);
        free(got);

        /* the live file missing: only the reopen request */
        assert_int_equal(container_log_rotate(log, ctl, &p, 1704067300), 0);
        assert_int_equal(read(rd, buf, sizeof(buf)), 6);

        /* a rotation in the same second as the last one waits */
        put(&d, "0.log", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
        assert_int_equal(container_log_rotate(log, ctl, &p, 1704067203), 0);
        assert_true(exists(&d, "0.log"));

        /* conmon gone: the rename is undone */
        close(rd);
        assert_int_equal(container_log_rotate(log, ctl, &p, 1704067400), -ENXIO);
        assert_true(exists(&d, "0.log"));
        assert_false(exists(&d, "0.log.20240101-000320"));
        /* a regular file where the FIFO should be is not written to */
        unlink(ctl);
        put(&d, "ctl", "");
        assert_int_equal(container_log_rotate(log, ctl, &p, 1704067400), -ENXIO);
        struct stat st;
        assert_int_equal(stat(ctl, &st), 0);
        assert_int_equal(st.st_size, 0);
        dir_remove(&d);
}

static void test_rotator_async(void **state) {
        Dir d;
        dir_make(&d);
        _cleanup_free_ char *log = path_in(&d, "3.log");
        _cleanup_free_ char *small = path_in(&d, "4.log");
        _cleanup_free_ char *ctl = path_in(&d, "ctl");
        LogRotatePolicy p = { .max_size = 10, .max_files = 2 };
        Event *e = NULL;
        LogRotator *r = NULL;

        assert_int_equal(mkfifo(ctl, 0600), 0);
        int rd = open(ctl, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);
        put(&d, "3.log", "more than ten bytes\n");
        put(&d, "4.log", "tiny\n");

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(log_rotator_new(&r, e, &p), 0);
        assert_int_equal(log_rotator_consider(r, small, ctl), 0);
        assert_int_equal(log_rotator_run(r), 0); /* nothing due */
        assert_int_equal(log_rotator_consider(r, log, ctl), 0);
        assert_int_equal(log_rotator_run(r), 1);
        assert_true(log_rotator_busy(r));
        for (int i = 0; i < 500 && log_rotator_busy(r); i++)
                assert_int_equal(event_run(e, 20 * USEC_PER_MSEC), 0);
        assert_false(log_rotator_busy(r));
        assert_false(exists(&d, "3.log"));
        assert_true(exists(&d, "4.log"));
        char **l = NULL;
        assert_int_equal(container_log_list_rotated(d.fd, "3.log", &l), 0);
        assert_int_equal(strv_length(l), 1);
        strv_free(l);
        char buf[16];
        assert_int_equal(read(rd, buf, sizeof(buf)), 6);
        close(rd);

        assert_int_equal(log_rotator_new(&r, e, &(LogRotatePolicy){ .max_size = 1, .max_files = 1 }),
                         -EINVAL);
        log_rotator_free(r);
        event_free(e);
        dir_remove(&d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_list_order),
                cmocka_unit_test(test_compress_and_read),
                cmocka_unit_test(test_rotate_pass),
                cmocka_unit_test(test_rotator_async),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
