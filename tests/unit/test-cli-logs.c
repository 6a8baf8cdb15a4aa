/* `nanolet logs` reading one attempt across rotated files: order (gzip,
 * plain, live), a partial line continued across a rotation, --tail across
 * files, leftovers that must not be read twice, names a container planted
 * that must not be followed. */
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

#include "cli-logs.h"
#include "log-rotate.h"
#include "rm-rf.h"
#include "string-util.h"

static char dir_path[64];
static int dir_fd = -1;

static int setup(void **state) {
        strcpy(dir_path, "/tmp/nanolet-test-clilogs-XXXXXX");
        if (!mkdtemp(dir_path))
                return -1;
        dir_fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return dir_fd >= 0 ? 0 : -1;
}

static int teardown(void **state) {
        close(dir_fd);
        int pfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = rm_rf_at(pfd, dir_path + strlen("/tmp/"));
        close(pfd);
        return r;
}

/* Lines first..last as conmon writes them, "line <n>". */
static void put_lines(const char *name, int first, int last) {
        FILE *f = NULL;
        int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        f = fdopen(fd, "w");
        assert_non_null(f);
        for (int i = first; i <= last; i++)
                fprintf(f, "2024-01-01T00:00:%02d.%09dZ %s F line %d\n", i / 1000 % 60, i,
                        i % 7 == 0 ? "stderr" : "stdout", i);
        assert_int_equal(fclose(f), 0);
}

static void append(const char *name, const char *text) {
        int fd = openat(dir_fd, name, O_WRONLY | O_APPEND | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

static char *print_attempt(unsigned attempt, long tail, unsigned *ret_n) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        LogsContext x;
        int live = -1;

        assert_non_null(f);
        assert_int_equal(logs_context_init(&x, f, tail, false, 0), 0);
        assert_int_equal(logs_read_attempt(&x, dir_fd, attempt, &live, ret_n), 0);
        assert_int_equal(logs_flush(&x, true), 0);
        logs_context_done(&x);
        if (live >= 0)
                close(live);
        assert_int_equal(fclose(f), 0);
        return out;
}

/* Checks out is "line a\n" ... "line b\n". */
static void assert_sequence(const char *out, int a, int b) {
        const char *p = out;
        for (int i = a; i <= b; i++) {
                char want[32];
                int n = snprintf(want, sizeof(want), "line %d\n", i);
                if (strncmp(p, want, (size_t)n) != 0)
                        fail_msg("expected \"line %d\" at offset %zu, got \"%.20s\"", i,
                                 (size_t)(p - out), p);
                p += n;
        }
        assert_string_equal(p, "");
}

static void test_order_across_files(void **state) {
        unsigned n;
        put_lines("2.log.20240101-000001", 1, 100);
        assert_int_equal(container_log_compress(dir_fd, "2.log.20240101-000001"), 0);
        put_lines("2.log.20240101-000002", 101, 200);
        assert_int_equal(container_log_compress(dir_fd, "2.log.20240101-000002"), 0);
        put_lines("2.log.20240101-000003", 201, 300);
        put_lines("2.log", 301, 320);
        /* not part of attempt 2, or leftovers of an interrupted pass */
        put_lines("1.log", 1, 5);
        put_lines("12.log", 1, 5);
        put_lines("2.log.20240101-000002", 101, 200); /* its .gz exists */
        put_lines("2.log.20240101-000003.tmp", 201, 250);

        char *out = print_attempt(2, -1, &n);
        assert_int_equal(n, 4);
        assert_sequence(out, 1, 320);
        free(out);

        out = print_attempt(2, 5, &n);
        assert_sequence(out, 316, 320);
        free(out);
        /* the tail reaches back into the compressed files */
        out = print_attempt(2, 250, &n);
        assert_sequence(out, 71, 320);
        free(out);
        out = print_attempt(2, 0, &n);
        assert_string_equal(out, "");
        free(out);

        out = print_attempt(9, -1, &n);
        assert_int_equal(n, 0);
        assert_string_equal(out, "");
        free(out);
}

static void test_partial_across_rotation(void **state) {
        unsigned n;
        put_lines("3.log.20240101-000001", 1, 10);
        append("3.log.20240101-000001", "2024-01-01T00:00:11Z stdout P li\n");
        put_lines("3.log", 12, 12);
        /* the F record continuing line 11 comes first in the new file */
        int fd = openat(dir_fd, "3.log", O_WRONLY | O_TRUNC | O_CLOEXEC);
        assert_true(fd >= 0);
        const char *t = "2024-01-01T00:00:11Z stdout F ne 11\n"
                        "2024-01-01T00:00:12Z stdout F line 12\n";
        assert_int_equal(write(fd, t, strlen(t)), (ssize_t)strlen(t));
        close(fd);
        assert_int_equal(container_log_compress(dir_fd, "3.log.20240101-000001"), 0);

        char *out = print_attempt(3, -1, &n);
        assert_int_equal(n, 2);
        assert_sequence(out, 1, 12);
        free(out);
}

/* A host file, in CRI format so that the reader would print it if it read
 * it (another pod's log, say). */
#define SECRET "2024-01-01T00:00:00Z stdout F TOPSECRET\n"

/* Names a container planted in its own log directory (a hostPath of it):
 * none is followed, opened for reading or shown; each is reported once. */
static void test_planted_names(void **state) {
        unsigned n;
        int live = -1;
        char *out = NULL;
        size_t len = 0;
        LogsContext x;

        alarm(20); /* a FIFO opened for reading would block */
        int sfd = openat(dir_fd, "host-secret", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        assert_true(sfd >= 0);
        assert_int_equal(write(sfd, SECRET, strlen(SECRET)), (ssize_t)strlen(SECRET));
        close(sfd);
        _cleanup_free_ char *secret = strprintf("%s/host-secret", dir_path);

        put_lines("4.log.20240101-000001", 1, 10);
        put_lines("4.log", 11, 12);
        assert_int_equal(symlinkat(secret, dir_fd, "4.log.29991231-235959"), 0);
        assert_int_equal(symlinkat(secret, dir_fd, "4.log.29991231-235958.gz"), 0);
        assert_int_equal(mkfifoat(dir_fd, "4.log.29991231-235957", 0600), 0);
        assert_int_equal(mkdirat(dir_fd, "4.log.29991231-235956", 0755), 0);
        /* the live file of another attempt replaced by a symlink */
        assert_int_equal(symlinkat(secret, dir_fd, "5.log"), 0);

        FILE *f = open_memstream(&out, &len);
        assert_non_null(f);
        assert_int_equal(logs_context_init(&x, f, -1, false, 0), 0);
        assert_int_equal(logs_read_attempt(&x, dir_fd, 4, &live, &n), 0);
        assert_int_equal(logs_flush(&x, true), 0);
        assert_int_equal(x.n_skipped, 4);
        logs_context_done(&x);
        close(live);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(n, 2);
        assert_null(strstr(out, "TOPSECRET"));
        assert_sequence(out, 1, 12);
        free(out);

        out = print_attempt(5, -1, &n);
        assert_int_equal(n, 0);
        assert_string_equal(out, "");
        free(out);
        alarm(0);
}

/* The container's log directory replaced by a symlink is not entered. */
static void test_planted_dir(void **state) {
        assert_int_equal(mkdirat(dir_fd, "ns_pod_uid", 0755), 0);
        assert_int_equal(mkdirat(dir_fd, "ns_pod_uid/real", 0755), 0);
        assert_int_equal(symlinkat("real", dir_fd, "ns_pod_uid/c"), 0);
        assert_int_equal(logs_open_dir(dir_path, "ns", "pod", "uid", "c"), -ELOOP);
        int fd = logs_open_dir(dir_path, "ns", "pod", "uid", "real");
        assert_true(fd >= 0);
        close(fd);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_order_across_files, setup, teardown),
                cmocka_unit_test_setup_teardown(test_partial_across_rotation, setup, teardown),
                cmocka_unit_test_setup_teardown(test_planted_names, setup, teardown),
                cmocka_unit_test_setup_teardown(test_planted_dir, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
