/* Container log rotation: listing order, gzip round trip, one rotation pass
 * against a FIFO standing in for conmon's, the asynchronous worker, and names
 * a container planted in its log directory (symlinks to a host file, FIFOs,
 * directories, hard links) that must never be followed, read or copied. */
#include <dirent.h>
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

#include "self-helper.h"
#include "event.h"
#include "fileio.h"
#include "log-rotate.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"
#include "log-rotate-internal.h"

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
                assert_int_equal(strbuf_append(&want.data, &want.len, &want.cap, line, (size_t)n),
                                 0);
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
        assert_int_equal(st.st_mode & 0777, CONTAINER_LOG_MODE); /* not the source's 0600 */

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
        const char *log = "0.log";
        _cleanup_free_ char *ctl = path_in(&d, "ctl");
        LogRotatePolicy p = { .max_size = 100, .max_files = 3 };
        char buf[64];

        assert_int_equal(mkfifo(ctl, 0600), 0);
        /* conmon's side of the FIFO */
        int rd = open(ctl, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);

        /* below the limit: nothing */
        put(&d, "0.log", "2024-01-01T00:00:00Z stdout F short\n");
        assert_int_equal(container_log_rotate(d.path, log, ctl, &p, 1704067200), 0);
        assert_true(read(rd, buf, sizeof(buf)) <= 0); /* nothing was asked */

        /* four rotations, one second apart */
        const char *names[] = { "0.log.20240101-000000", "0.log.20240101-000001",
                                "0.log.20240101-000002", "0.log.20240101-000003" };
        for (int i = 0; i < 4; i++) {
                char content[256];
                snprintf(content, sizeof(content), "%0150d\n", i);
                put(&d, "0.log", content);
                assert_int_equal(container_log_rotate(d.path, log, ctl, &p, 1704067200 + i), 1);
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
        assert_int_equal(container_log_rotate(d.path, log, ctl, &p, 1704067300), 0);
        assert_int_equal(read(rd, buf, sizeof(buf)), 6);

        /* a rotation in the same second as the last one waits */
        put(&d, "0.log",
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
            "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
        assert_int_equal(container_log_rotate(d.path, log, ctl, &p, 1704067203), 0);
        assert_true(exists(&d, "0.log"));

        /* conmon gone: the rename is undone */
        close(rd);
        assert_int_equal(container_log_rotate(d.path, log, ctl, &p, 1704067400), -ENXIO);
        assert_true(exists(&d, "0.log"));
        assert_false(exists(&d, "0.log.20240101-000320"));
        /* a regular file where the FIFO should be is not written to */
        unlink(ctl);
        put(&d, "ctl", "");
        assert_int_equal(container_log_rotate(d.path, log, ctl, &p, 1704067400), -ENXIO);
        struct stat st;
        assert_int_equal(stat(ctl, &st), 0);
        assert_int_equal(st.st_size, 0);
        dir_remove(&d);
}

#define SECRET "TOPSECRET host file contents\n"

/* A host file a container must not get at: in the test's root, outside the
 * log directory "c", with a mode of its own. */
static char *make_secret(const Dir *d) {
        put(d, "secret", SECRET);
        assert_int_equal(fchmodat(d->fd, "secret", 0604, 0), 0);
        return path_in(d, "secret");
}

static void assert_secret_intact(const Dir *d) {
        struct stat st;
        assert_int_equal(fstatat(d->fd, "secret", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0604);
        char *got = read_all(d, "secret");
        assert_non_null(got);
        assert_string_equal(got, SECRET);
        free(got);
}

/* No file left in d/c (plain or gunzipped) holds the secret. */
static void assert_secret_not_copied(const Dir *d) {
        int cfd = openat(d->fd, "c", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(cfd >= 0);
        DIR *dir = fdopendir(dup(cfd));
        assert_non_null(dir);
        for (struct dirent *de; (de = readdir(dir));) {
                struct stat st;
                assert_int_equal(fstatat(cfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW), 0);
                if (!S_ISREG(st.st_mode))
                        continue;
                Buf b = {};
                assert_int_equal(container_log_read(cfd, de->d_name, collect, &b), 0);
                assert_int_equal(strbuf_append(&b.data, &b.len, &b.cap, "", 0), 0);
                assert_null(strstr(b.data, "TOPSECRET"));
                free(b.data);
        }
        closedir(dir);
        close(cfd);
}

static void put_big_live(const Dir *d) {
        put(d, "c/0.log", "2024-01-01T00:00:00Z stdout F more than the limit of ten bytes\n");
}

static void test_planted_symlink(void **state) {
        Dir d;
        dir_make(&d);
        _cleanup_free_ char *secret = make_secret(&d);
        _cleanup_free_ char *ctl = path_in(&d, "ctl");
        LogRotatePolicy p = { .max_size = 10, .max_files = 5 };

        assert_int_equal(mkfifo(ctl, 0600), 0);
        int rd = open(ctl, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);
        assert_int_equal(mkdirat(d.fd, "c", 0755), 0);
        put_big_live(&d);
        /* Sorted as the newest rotated file: it would be gzipped now. */
        assert_int_equal(symlinkat(secret, d.fd, "c/0.log.29991231-235959"), 0);
        /* A leftover tmp name pointing out: removing it is fine, following not. */
        assert_int_equal(symlinkat(secret, d.fd, "c/0.log.29991231-235958.tmp"), 0);

        assert_int_equal(container_log_rotate(d.path, "c/0.log", ctl, &p, 1704067200), 1);
        assert_false(exists(&d, "c/0.log.29991231-235959"));
        assert_false(exists(&d, "c/0.log.29991231-235959.gz"));
        assert_false(exists(&d, "c/0.log.29991231-235958.tmp"));
        assert_true(exists(&d, "c/0.log.20240101-000000"));
        assert_secret_intact(&d);
        assert_secret_not_copied(&d);

        /* The reader refuses a symlink too. */
        assert_int_equal(symlinkat(secret, d.fd, "c/0.log.29991231-235959"), 0);
        int cfd = openat(d.fd, "c", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        Buf b = {};
        assert_int_equal(container_log_read(cfd, "0.log.29991231-235959", collect, &b), -ELOOP);
        assert_int_equal(container_log_compress(cfd, "0.log.29991231-235959"), -ELOOP);
        assert_null(b.data);
        /* a planted live file: removed, conmon asked for a fresh one */
        assert_int_equal(unlinkat(cfd, "0.log", 0) == 0 || errno == ENOENT, 1);
        assert_int_equal(symlinkat(secret, cfd, "0.log"), 0);
        while (read(rd, (char[16]){}, 16) > 0)
                ;
        assert_int_equal(container_log_rotate(d.path, "c/0.log", ctl, &p, 1704067300), 0);
        assert_false(exists(&d, "c/0.log"));
        assert_int_equal(read(rd, (char[16]){}, 16), 6);
        close(cfd);
        assert_secret_intact(&d);
        assert_secret_not_copied(&d);
        close(rd);
        dir_remove(&d);
}

static void test_planted_special(void **state) {
        Dir d;
        dir_make(&d);
        _cleanup_free_ char *secret = make_secret(&d);
        _cleanup_free_ char *ctl = path_in(&d, "ctl");
        LogRotatePolicy p = { .max_size = 10, .max_files = 5 };

        /* A FIFO opened for reading would block the worker for good. */
        alarm(20);
        assert_int_equal(mkfifo(ctl, 0600), 0);
        int rd = open(ctl, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);
        assert_int_equal(mkdirat(d.fd, "c", 0755), 0);
        put_big_live(&d);
        assert_int_equal(mkfifoat(d.fd, "c/0.log.29991231-235957", 0600), 0);
        assert_int_equal(mkdirat(d.fd, "c/0.log.29991231-235958", 0755), 0);
        assert_int_equal(symlinkat(secret, d.fd, "c/0.log.29991231-235958/inner"), 0);
        assert_int_equal(mkdirat(d.fd, "c/0.log.29991231-235956.tmp", 0755), 0);
        /* a second name of the host file (same filesystem) */
        assert_int_equal(linkat(d.fd, "secret", d.fd, "c/0.log.29991231-235955", 0), 0);

        assert_int_equal(container_log_rotate(d.path, "c/0.log", ctl, &p, 1704067200), 1);
        assert_false(exists(&d, "c/0.log.29991231-235957"));
        assert_false(exists(&d, "c/0.log.29991231-235958"));
        assert_false(exists(&d, "c/0.log.29991231-235956.tmp"));
        assert_false(exists(&d, "c/0.log.29991231-235955"));
        assert_false(exists(&d, "c/0.log.29991231-235955.gz"));
        assert_true(exists(&d, "c/0.log.20240101-000000"));
        assert_secret_intact(&d);
        assert_secret_not_copied(&d);

        int cfd = openat(d.fd, "c", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(mkfifoat(cfd, "0.log.29991231-235957", 0600), 0);
        Buf b = {};
        assert_int_equal(container_log_read(cfd, "0.log.29991231-235957", collect, &b), -EBADFD);
        assert_int_equal(container_log_compress(cfd, "0.log.29991231-235957"), -EBADFD);
        close(cfd);
        alarm(0);
        close(rd);
        dir_remove(&d);
}

/* The log directory itself replaced by a symlink: refused, nothing moved. */
static void test_planted_dir_symlink(void **state) {
        Dir d;
        dir_make(&d);
        _cleanup_free_ char *ctl = path_in(&d, "ctl");
        LogRotatePolicy p = { .max_size = 10, .max_files = 5 };

        assert_int_equal(mkfifo(ctl, 0600), 0);
        int rd = open(ctl, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        assert_true(rd >= 0);
        assert_int_equal(mkdirat(d.fd, "elsewhere", 0755), 0);
        put(&d, "elsewhere/0.log", "a host file that happens to have a log name\n");
        assert_int_equal(symlinkat("elsewhere", d.fd, "c"), 0);
        assert_int_equal(container_log_rotate(d.path, "c/0.log", ctl, &p, 1704067200), -ELOOP);
        assert_true(exists(&d, "elsewhere/0.log"));
        assert_true(read(rd, (char[16]){}, 16) <= 0);
        close(rd);
        dir_remove(&d);
}

/* Before an attempt starts: what a container planted at the live name
 * conmon is about to open (and at its reopen's .tmp) goes, and the live file
 * conmon then opens is one of ours. */
static void test_prepare_live(void **state) {
        Dir d;
        struct stat st;
        dir_make(&d);
        _cleanup_free_ char *secret = make_secret(&d);

        assert_int_equal(mkdirat(d.fd, "c", 0755), 0);
        assert_int_equal(symlinkat(secret, d.fd, "c/1.log"), 0);
        assert_int_equal(symlinkat(secret, d.fd, "c/1.log.tmp"), 0);
        assert_int_equal(container_log_prepare(d.path, "c/1.log"), 0);
        assert_int_equal(fstatat(d.fd, "c/1.log", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_size, 0);
        assert_int_equal(st.st_mode & 07777, CONTAINER_LOG_MODE);
        assert_false(exists(&d, "c/1.log.tmp"));
        assert_secret_intact(&d);

        /* a FIFO, a directory, a second name of a host file */
        assert_int_equal(mkfifoat(d.fd, "c/2.log", 0600), 0);
        assert_int_equal(container_log_prepare(d.path, "c/2.log"), 0);
        assert_int_equal(fstatat(d.fd, "c/2.log", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(mkdirat(d.fd, "c/3.log", 0755), 0);
        assert_int_equal(symlinkat(secret, d.fd, "c/3.log/inner"), 0);
        assert_int_equal(container_log_prepare(d.path, "c/3.log"), 0);
        assert_int_equal(fstatat(d.fd, "c/3.log", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(linkat(d.fd, "secret", d.fd, "c/4.log", 0), 0);
        assert_int_equal(container_log_prepare(d.path, "c/4.log"), 0);
        assert_int_equal(fstatat(d.fd, "c/4.log", &st, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(st.st_size, 0);
        assert_secret_intact(&d);

        /* A regular file of ours (an attempt number reused) is kept. */
        put(&d, "c/5.log", "kept\n");
        assert_int_equal(container_log_prepare(d.path, "c/5.log"), 0);
        _cleanup_free_ char *kept = read_all(&d, "c/5.log");
        assert_string_equal(kept, "kept\n");

        /* The directory itself a symlink: refused, nothing created there. */
        assert_int_equal(mkdirat(d.fd, "elsewhere", 0755), 0);
        assert_int_equal(symlinkat("elsewhere", d.fd, "l"), 0);
        assert_int_equal(container_log_prepare(d.path, "l/0.log"), -ELOOP);
        assert_false(exists(&d, "elsewhere/0.log"));
        dir_remove(&d);
}

static void test_rotator_async(void **state) {
        Dir d;
        dir_make(&d);
        const char *log = "3.log", *small = "4.log";
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
        assert_int_equal(log_rotator_consider(r, d.path, small, ctl), 0);
        assert_int_equal(log_rotator_run(r), 0); /* nothing due */
        assert_int_equal(log_rotator_consider(r, d.path, log, ctl), 0);
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
        char buf[32];
        assert_int_equal(read(rd, buf, sizeof(buf)), 6);

        /* containerLogMaxWorkers 2: three logs due go to two workers at
         * once, and every one of them is rotated. */
        log_rotator_free(r);
        p.max_workers = 2;
        assert_int_equal(log_rotator_new(&r, e, &p), 0);
        const char *three[] = { "5.log", "6.log", "7.log" };
        for (size_t i = 0; i < 3; i++) {
                put(&d, three[i], "more than ten bytes\n");
                assert_int_equal(log_rotator_consider(r, d.path, three[i], ctl), 0);
        }
        assert_int_equal(log_rotator_run(r), 2);
        assert_true(log_rotator_busy(r));
        assert_int_equal(log_rotator_run(r), 0); /* a pass at a time */
        for (int i = 0; i < 500 && log_rotator_busy(r); i++)
                assert_int_equal(event_run(e, 20 * USEC_PER_MSEC), 0);
        assert_false(log_rotator_busy(r));
        for (size_t i = 0; i < 3; i++) {
                assert_false(exists(&d, three[i]));
                l = NULL;
                assert_int_equal(container_log_list_rotated(d.fd, three[i], &l), 0);
                assert_int_equal(strv_length(l), 1);
                strv_free(l);
        }
        /* conmon was told three times */
        assert_int_equal(read(rd, buf, sizeof(buf)), 18);
        close(rd);
        log_rotator_free(r);
        r = NULL;

        assert_int_equal(
                log_rotator_new(&r, e, &(LogRotatePolicy){ .max_size = 1, .max_files = 1 }),
                -EINVAL);
        log_rotator_free(r);
        event_free(e);
        dir_remove(&d);
}

/* The mode's table: names and fields that helper.h can build and parse. */
static void test_helper_mode(void **state) {
        assert_int_equal(helper_mode_verify(&log_rotate_helper_mode), 0);
}

int main(int argc, char **argv) {
        /* The workers re-execute /proc/self/exe, this test, in their helper mode. */
        if (argc > 1 && streq(argv[1], SELF_HELPER_VERB))
                return helper_main((const HelperMain *const[]){ &log_rotate_helper }, 1, argc - 2,
                                   argv + 2);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_helper_mode),         cmocka_unit_test(test_list_order),
                cmocka_unit_test(test_compress_and_read),   cmocka_unit_test(test_rotate_pass),
                cmocka_unit_test(test_planted_symlink),     cmocka_unit_test(test_planted_special),
                cmocka_unit_test(test_planted_dir_symlink), cmocka_unit_test(test_prepare_live),
                cmocka_unit_test(test_rotator_async),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
