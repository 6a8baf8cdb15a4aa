/* src/basic: strings, string vectors, files, digests, logging contract. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base64.h"
#include "cleanup.h"
#include "dirent-util.h"
#include "error.h"
#include "fileio.h"
#include "getopt-util.h"
#include "hash.h"
#include "json-util.h"
#include "log.h"
#include "mount-util.h"
#include "rm-rf.h"
#include "sd-notify.h"
#include "self-helper.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

_printf_(1, 2) static char *via_va_list(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = strvprintf(fmt, ap);
        va_end(ap);
        return s;
}

static void test_string_util(void **state) {
        assert_string_equal(startswith("kube-system", "kube-"), "system");
        assert_null(startswith("kube", "kube-"));
        assert_true(endswith("etcd.yaml", ".yaml"));
        assert_false(endswith("yaml", ".yaml"));
        _cleanup_free_ char *s = strprintf("%s-%d", "etcd", 3);
        assert_string_equal(s, "etcd-3");
        _cleanup_free_ char *v = via_va_list("%s:%u:%%", "pods", 12U);
        assert_string_equal(v, "pods:12:%");

        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap = 0;
        for (int i = 0; i < 100; i++)
                assert_int_equal(strbuf_append(&buf, &len, &cap, "ab", 2), 0);
        assert_int_equal(len, 200);
        assert_int_equal(strlen(buf), 200);

        unsigned u = 7;
        assert_int_equal(safe_atou("42", &u), 0);
        assert_int_equal(u, 42);
        assert_int_equal(safe_atou("0", &u), 0);
        assert_int_equal(u, 0);
        assert_int_equal(safe_atou("", &u), -EINVAL);
        assert_int_equal(safe_atou("-1", &u), -EINVAL);
        assert_int_equal(safe_atou("4 ", &u), -EINVAL);
        assert_int_equal(safe_atou("rootfs", &u), -EINVAL);
        assert_int_equal(safe_atou("99999999999", &u), -ERANGE);
        assert_int_equal(u, 0);
        assert_true(streq_ptr(NULL, NULL));
        assert_false(streq_ptr("a", NULL));
        assert_true(streq_ptr("a", "a"));
}

static void assert_valid_copy(const char *in, size_t len, const char *want) {
        _cleanup_free_ char *got = utf8_make_valid(in, len);
        assert_non_null(got);
        assert_string_equal(got, want);
}

#define FFFD "\xef\xbf\xbd"

static void test_utf8(void **state) {
        /* well-formed: kept as is */
        assert_valid_copy("plain ascii", 11, "plain ascii");
        assert_valid_copy("h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 12,
                          "h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
        assert_valid_copy("", 0, "");
        /* one U+FFFD per offending byte, as Go's encoding/json */
        assert_valid_copy("a\377b", 3, "a" FFFD "b");
        assert_valid_copy("\xc3\x28", 2, FFFD "(");
        assert_valid_copy("\xc0\xaf", 2, FFFD FFFD);                   /* overlong "/" */
        assert_valid_copy("\xe0\x80\xaf", 3, FFFD FFFD FFFD);          /* overlong */
        assert_valid_copy("\xed\xa0\x80", 3, FFFD FFFD FFFD);          /* surrogate */
        assert_valid_copy("\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD); /* > U+10FFFF */
        assert_valid_copy("\xf5\x80", 2, FFFD FFFD);
        assert_valid_copy("end \xe2\x82", 6, "end " FFFD FFFD);   /* cut sequence */
        assert_valid_copy("\x82\xac tail", 7, FFFD FFFD " tail"); /* cut at the start */
        assert_valid_copy("nul\0in", 6, "nul" FFFD "in");
        assert_int_equal(utf8_sequence_length("\xf0\x9f\x98\x80", 4), 4);
        assert_int_equal(utf8_sequence_length("\xf0\x9f\x98\x80", 3), 0);
        assert_int_equal(utf8_sequence_length("\xed\x9f\xbf", 3), 3); /* U+D7FF */
        assert_int_equal(utf8_sequence_length("\xef\xbf\xbf", 3), 3);
}

static void assert_escape(const char *in, size_t len, EscapeFlags flags, const char *want) {
        _cleanup_free_ char *got = str_escape_n(in, len, flags);
        assert_non_null(got);
        assert_string_equal(got, want);
        assert_int_equal(escape_needed(in, len, flags), !streq(in, want) || strlen(in) != len);
}

/* Go's %q body: printable UTF-8 kept, every control character and every
 * byte outside well-formed UTF-8 escaped. */
static void test_escape(void **state) {
        (void)state;
        assert_escape("plain text, ok", 14, 0, "plain text, ok");
        assert_escape("a\nb\rc\td", 7, 0, "a\\nb\\rc\\td");
        assert_escape("\a\b\f\v", 4, 0, "\\a\\b\\f\\v");
        assert_escape("\x1b]0;pwned\x07\x1b[2J", 14, 0, "\\x1b]0;pwned\\a\\x1b[2J");
        assert_escape("nul\0x", 5, 0, "nul\\x00x");
        assert_escape("\x7f\x01\x1f", 3, 0, "\\x7f\\x01\\x1f");
        assert_escape("say \"hi\" \\ ok", 13, 0, "say \"hi\" \\ ok");
        assert_escape("say \"hi\" \\ ok", 13, ESCAPE_QUOTE, "say \\\"hi\\\" \\\\ ok");
        /* C1 controls, U+0085 (NEL) and U+009B (CSI) among them */
        assert_escape("\xc2\x80\xc2\x85\xc2\x9b\xc2\x9f", 8, 0, "\\u0080\\u0085\\u009b\\u009f");
        /* line/paragraph separators, BOM, bidi overrides */
        assert_escape("\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf", 9, 0, "\\u2028\\u2029\\ufeff");
        assert_escape("a\xe2\x80\xae"
                      "b\xe2\x81\xa6",
                      8, 0, "a\\u202eb\\u2066");
        /* valid multibyte kept: U+00A0, é, €, 😀 */
        assert_escape("\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 11, 0,
                      "\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
        /* invalid UTF-8: each byte on its own */
        assert_escape("\xff\xfe", 2, 0, "\\xff\\xfe");
        assert_escape("\xc0\xaf", 2, 0, "\\xc0\\xaf");                   /* overlong '/' */
        assert_escape("\xe0\x80\xaf", 3, 0, "\\xe0\\x80\\xaf");          /* overlong, 3 bytes */
        assert_escape("\xed\xa0\x80", 3, 0, "\\xed\\xa0\\x80");          /* surrogate */
        assert_escape("\xf4\x90\x80\x80", 4, 0, "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
        assert_escape("x\xe2\x82", 3, 0, "x\\xe2\\x82");                 /* truncated */
        assert_escape("\x80"
                      "z",
                      2, 0, "\\x80z"); /* lone continuation */
        assert_escape("", 0, 0, "");

        _cleanup_free_ char *null = str_escape(NULL, 0);
        assert_string_equal(null, "");

        /* huge input: every byte the longest escape, nothing below 0x20 left */
        size_t n = 1 << 20;
        _cleanup_free_ char *big = malloc(n);
        assert_non_null(big);
        for (size_t i = 0; i < n; i++)
                big[i] = (char)(i % 2 ? 0xff : 0x1b);
        _cleanup_free_ char *e = str_escape_n(big, n, 0);
        assert_non_null(e);
        assert_int_equal(strlen(e), n * 4);
        for (const char *p = e; *p; p++)
                assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
        /* every byte value, alone: the escape never holds a control byte */
        for (unsigned b = 0; b < 256; b++) {
                char in = (char)b, out[ESCAPE_ONE_MAX];
                size_t k;
                assert_int_equal(escape_one(&in, 1, 0, out, &k), 1);
                for (size_t i = 0; i < k; i++)
                        assert_true((unsigned char)out[i] >= 0x20 && out[i] != 0x7f &&
                                    (unsigned char)out[i] < 0x80);
        }
}

static void test_read_file_tail(void **state) {
        char dir[] = "/tmp/nanolet-test-tail-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        char *data = NULL;
        size_t size = 0;
        bool cut = true;

        /* short: the whole file */
        int fd = openat(dfd, "short", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_int_equal(write(fd, "bye\n", 4), 4);
        close(fd);
        assert_int_equal(read_file_tail_at(dfd, "short", 4096, &data, &size, &cut), 0);
        assert_string_equal(data, "bye\n");
        assert_int_equal(size, 4);
        assert_false(cut);
        data = mfree(data);

        /* longer: its last max_size bytes (kubelet's tail.ReadAtMost) */
        fd = openat(dfd, "long", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        for (int i = 0; i < 10000; i++)
                assert_int_equal(write(fd, i < 5000 ? "A" : "B", 1), 1);
        assert_int_equal(write(fd, "END", 3), 3);
        close(fd);
        assert_int_equal(read_file_tail_at(dfd, "long", 4096, &data, &size, &cut), 0);
        assert_int_equal(size, 4096);
        assert_int_equal(strlen(data), 4096);
        assert_int_equal(data[0], 'B');
        assert_string_equal(data + 4093, "END");
        assert_true(cut);
        data = mfree(data);

        /* sparse 10 GiB: only the tail is read */
        fd = openat(dfd, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_int_equal(ftruncate(fd, (off_t)10 << 30), 0);
        assert_int_equal(pwrite(fd, "last", 4, ((off_t)10 << 30) - 4), 4);
        close(fd);
        assert_int_equal(read_file_tail_at(dfd, "sparse", 4096, &data, &size, NULL), 0);
        assert_int_equal(size, 4096);
        assert_memory_equal(data + 4092, "last", 4);
        assert_int_equal(data[0], 0);
        data = mfree(data);

        /* what the container may put there instead of a file */
        assert_int_equal(symlinkat("short", dfd, "link"), 0);
        assert_int_equal(read_file_tail_at(dfd, "link", 4096, &data, &size, NULL), -ELOOP);
        assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
        assert_int_equal(symlinkat(".", dfd, "sub/up"), 0);
        assert_int_equal(read_file_tail_at(dfd, "sub/up/short", 4096, &data, &size, NULL), -ELOOP);
        assert_int_equal(read_file_tail_at(dfd, "sub", 4096, &data, &size, NULL), -EISDIR);
        assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
        assert_int_equal(read_file_tail_at(dfd, "fifo", 4096, &data, &size, NULL), -EBADFD);
        assert_int_equal(read_file_tail_at(dfd, "none", 4096, &data, &size, NULL), -ENOENT);
        assert_null(data);

        int pfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(rm_rf_at(pfd, dir + strlen("/tmp/")), 0);
        close(pfd);
}

static void test_read_state_file(void **state) {
        char dir[] = "/tmp/nanolet-test-state-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        char *data = NULL;
        size_t size = 0;
        Error err = {};

        int fd = openat(dfd, "good", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_int_equal(write(fd, "{}\n", 3), 3);
        close(fd);
        assert_int_equal(read_state_file_at(dfd, "good", 64, &data, &size, &err), 0);
        assert_string_equal(data, "{}\n");
        assert_int_equal(size, 3);
        assert_int_equal(err.error, 0);
        data = mfree(data);

        static const struct {
                const char *name;
                int error;
                const char *says;
        } bad[] = {
                { "none", -ENOENT, "is missing" },
                { "empty", -ENODATA, "is empty" },
                { "link", -ELOOP, "is a symlink" },
                { "sub", -EISDIR, "is a directory" },
                { "fifo", -EBADFD, "is not a regular file" },
                { "big", -EFBIG, "is larger than 64 bytes" },
        };
        fd = openat(dfd, "empty", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        close(fd);
        assert_int_equal(symlinkat("good", dfd, "link"), 0);
        assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
        assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
        fd = openat(dfd, "big", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_int_equal(ftruncate(fd, 65), 0);
        close(fd);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                error_clear(&err);
                assert_int_equal(read_state_file_at(dfd, bad[i].name, 64, &data, &size, &err),
                                 bad[i].error);
                assert_int_equal(err.error, bad[i].error);
                assert_non_null(strstr(err.message, bad[i].name));
                assert_non_null(strstr(err.message, bad[i].says));
        }
        /* err is optional */
        assert_int_equal(read_state_file_at(dfd, "link", 64, &data, &size, NULL), -ELOOP);
        assert_null(data);

        /* json_state_load_at(): the same refusals, then the parse */
        static const struct {
                const char *name, *text, *says;
        } docs[] = {
                { "garbage", "{\"a\": 1,\n  oops}", "line 2 column" },
                { "array", "[1, 2]", "is not a JSON object" },
                { "dup", "{\"a\": 1, \"a\": 2}", "is not valid JSON" },
        };
        json_t *j = NULL;
        for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
                fd = openat(dfd, docs[i].name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
                assert_int_equal(write(fd, docs[i].text, strlen(docs[i].text)),
                                 (ssize_t)strlen(docs[i].text));
                close(fd);
                error_clear(&err);
                assert_int_equal(json_state_load_at(dfd, docs[i].name, 64, &j, &err), -EBADMSG);
                assert_non_null(strstr(err.message, docs[i].name));
                assert_non_null(strstr(err.message, docs[i].says));
        }
        error_clear(&err);
        assert_int_equal(json_state_load_at(dfd, "link", 64, &j, &err), -ELOOP);
        assert_null(j);
        assert_int_equal(json_state_load_at(dfd, "good", 64, &j, &err), 0);
        assert_true(json_is_object(j));
        json_decref(j);

        int pfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(rm_rf_at(pfd, dir + strlen("/tmp/")), 0);
        close(pfd);
}

static void test_remove_stale_temp_files(void **state) {
        char dir[] = "/tmp/nanolet-test-tmpfiles-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        static const char *const files[] = {
                "a.json.tmp.AbC123", "b.tmp.x.tmp.000000", "a.json",
                "c.tmp.abc",         "d.tmp.abcdefg",      ".tmp.ABCDEF"
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                close(openat(dfd, files[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
        assert_int_equal(symlinkat("a.json", dfd, "l.json.tmp.ABCDEF"), 0);
        assert_int_equal(mkdirat(dfd, "s.tmp.ABCDEF", 0700), 0);

        _cleanup_free_ char *path = strprintf("%s/%s", dir, "a.json");
        assert_int_equal(write_file_atomic(path, "x", 1, 0600), 0);
        assert_int_equal(remove_stale_temp_files(dir), 2);
        assert_int_equal(faccessat(dfd, "a.json.tmp.AbC123", F_OK, 0), -1);
        assert_int_equal(faccessat(dfd, "b.tmp.x.tmp.000000", F_OK, 0), -1);
        for (size_t i = 2; i < ELEMENTSOF(files); i++)
                assert_int_equal(faccessat(dfd, files[i], F_OK, 0), 0);
        assert_int_equal(faccessat(dfd, "l.json.tmp.ABCDEF", F_OK, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(faccessat(dfd, "s.tmp.ABCDEF", F_OK, 0), 0);
        assert_int_equal(remove_stale_temp_files("/nonexistent/nanolet"), 0);

        int pfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_int_equal(rm_rf_at(pfd, dir + strlen("/tmp/")), 0);
        close(pfd);
}

static void test_strv(void **state) {
        _cleanup_strv_free_ char **l = NULL;
        assert_int_equal(strv_length(l), 0);
        assert_int_equal(strv_extend(&l, "b"), 0);
        assert_int_equal(strv_extend(&l, "a"), 0);
        assert_int_equal(strv_consume(&l, strdup("c")), 0);
        assert_int_equal(strv_length(l), 3);
        assert_true(strv_contains(l, "a"));
        assert_false(strv_contains(l, "z"));
        strv_sort(l);
        assert_string_equal(l[0], "a");
        assert_string_equal(l[2], "c");
        _cleanup_strv_free_ char **c = strv_copy(l);
        assert_int_equal(strv_length(c), 3);
        assert_ptr_not_equal(c[0], l[0]);
        size_t n = 0;
        STRV_FOREACH(i, c)
                n++;
        assert_int_equal(n, 3);
}

/* mkdir_p() creates missing parents (the deepest directory first) with
 * the mode asked for, accepts trailing and double
 * slashes, and reports a file in the way as before. */
static void test_mkdir_p_parents(void **state) {
        char dir[] = "/tmp/nanolet-test-mkdir-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *deep = strprintf("%s/x/y//z/", dir);
        _cleanup_free_ char *z = strprintf("%s/x/y/z", dir);
        _cleanup_free_ char *y = strprintf("%s/x/y", dir);
        _cleanup_free_ char *file = strprintf("%s/x/f", dir);
        _cleanup_free_ char *under_file = strprintf("%s/x/f/g/h", dir);
        _cleanup_free_ char *rel = strprintf("%s/r1/r2", dir + 1);
        struct stat st;
        mode_t old = umask(0);

        assert_int_equal(mkdir_p(deep, 0751), 0);
        assert_int_equal(stat(z, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 07777, 0751);
        assert_int_equal(stat(y, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0751);
        assert_int_equal(mkdir_p(z, 0700), 0); /* existing: left as it is */
        assert_int_equal(stat(z, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0751);
        assert_int_equal(write_file_atomic(file, "f", 1, 0600), 0);
        assert_int_equal(mkdir_p(under_file, 0755), -ENOTDIR);
        assert_int_equal(mkdir_p(file, 0755), 0); /* EEXIST, as mkdir -p of old */
        assert_int_equal(mkdir_p("", 0755), -ENOENT);
        /* relative to the working directory */
        assert_int_equal(chdir("/"), 0);
        assert_int_equal(mkdir_p(rel, 0755), 0);
        _cleanup_free_ char *abs_rel = strprintf("/%s", rel);
        assert_int_equal(stat(abs_rel, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        umask(old);
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

static void test_fileio(void **state) {
        char dir[] = "/tmp/nanolet-test-basic-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *path = strprintf("%s/a/b/state.json", dir);
        _cleanup_free_ char *parent = strprintf("%s/a/b", dir);

        assert_int_equal(mkdir_p(parent, 0755), 0);
        assert_int_equal(mkdir_p(parent, 0755), 0); /* idempotent */
        /* An existing directory gets the mode asked for, both ways. */
        struct stat dst;
        assert_int_equal(mkdir_p_exact(parent, 0700), 0);
        assert_int_equal(stat(parent, &dst), 0);
        assert_int_equal(dst.st_mode & 07777, 0700);
        assert_int_equal(mkdir_p_exact(parent, 0755), 0);
        assert_int_equal(stat(parent, &dst), 0);
        assert_int_equal(dst.st_mode & 07777, 0755);
        _cleanup_free_ char *link = strprintf("%s/link", dir);
        assert_int_equal(symlink(parent, link), 0);
        assert_int_equal(mkdir_p_exact(link, 0700), -ENOTDIR);
        assert_int_equal(unlink(link), 0);
        assert_int_equal(write_file_atomic(path, "one", 3, 0600), 0);
        assert_int_equal(write_file_atomic(path, "second", 6, 0644), 0);

        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 100, &data, &size), 0);
        assert_int_equal(size, 6);
        assert_string_equal(data, "second");
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);

        /* the size cap refuses before reading the file whole */
        char *big = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 5, &big, NULL), -EFBIG);
        assert_null(big);
        assert_int_equal(read_full_file_at(AT_FDCWD, parent, 100, &big, NULL), -EISDIR);
        assert_int_equal(read_full_file_at(AT_FDCWD, "/nonexistent/x", 100, &big, NULL), -ENOENT);

        /* the cap also holds for pipes, whose size is unknown in advance */
        int p[2];
        assert_int_equal(pipe(p), 0);
        assert_int_equal(write(p[1], "0123456789", 10), 10);
        close(p[1]);
        assert_int_equal(read_full_fd(p[0], 4, &big, NULL), -EFBIG);
        close(p[0]);

        /* the same content and mode: left alone (same inode); other
         * content, or only another mode: written */
        struct stat st2;
        assert_int_equal(write_file_atomic_if_changed(path, "second", 6, 0644), 0);
        assert_int_equal(stat(path, &st2), 0);
        assert_true(st2.st_ino == st.st_ino);
        assert_int_equal(write_file_atomic_if_changed(path, "second", 6, 0600), 1);
        assert_int_equal(stat(path, &st2), 0);
        assert_true(st2.st_ino != st.st_ino);
        assert_int_equal(st2.st_mode & 0777, 0600);
        assert_int_equal(write_file_atomic_if_changed(path, "secone", 6, 0600), 1);
        free(data);
        data = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 100, &data, &size), 0);
        assert_string_equal(data, "secone");
        assert_int_equal(write_file_atomic_if_changed(path, "secone!", 7, 0600), 1);
        _cleanup_free_ char *fresh = strprintf("%s/fresh", dir);
        assert_int_equal(write_file_atomic_if_changed(fresh, "", 0, 0600), 1);
        assert_int_equal(write_file_atomic_if_changed(fresh, "", 0, 0600), 0);

        /* the variants without fsync: the same replace-by-rename, the
         * same "unchanged: left alone" */
        assert_int_equal(write_file_replace(fresh, "abc", 3, 0644), 0);
        free(data);
        data = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, fresh, 100, &data, &size), 0);
        assert_string_equal(data, "abc");
        assert_int_equal(stat(fresh, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0644);
        assert_int_equal(write_file_replace_if_changed(fresh, "abc", 3, 0644), 0);
        assert_int_equal(stat(fresh, &st2), 0);
        assert_true(st2.st_ino == st.st_ino);
        assert_int_equal(write_file_replace_if_changed(fresh, "abd", 3, 0644), 1);
        assert_int_equal(stat(fresh, &st2), 0);
        assert_true(st2.st_ino != st.st_ino);
        _cleanup_free_ char *nodir = strprintf("%s/nodir2/x", dir);
        assert_true(write_file_replace(nodir, "x", 1, 0644) < 0);

        /* a failed atomic write leaves the old file and no temp file */
        _cleanup_free_ char *missing = strprintf("%s/nodir/x", dir);
        assert_true(write_file_atomic(missing, "x", 1, 0644) < 0);

        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

/* A full disk while writing state: the earlier version stays whole, the
 * error is ENOSPC and no temp file is left. Needs a tiny tmpfs (root); the
 * teardown unmounts it even when an assertion fails. */
static char full_dir[] = "/tmp/nanolet-test-full-XXXXXX";

static int full_setup(void **state) {
        if (geteuid() != 0 || !mkdtemp(full_dir))
                return 0;
        if (mount("tmpfs", full_dir, "tmpfs", 0, "size=64k") < 0) {
                rmdir(full_dir);
                return 0;
        }
        *state = full_dir;
        return 0;
}

static int full_teardown(void **state) {
        if (*state) {
                (void)umount2(full_dir, MNT_DETACH);
                (void)rmdir(full_dir);
        }
        return 0;
}

static void test_write_all(void **state) {
        char path[] = "/tmp/nanolet-test-write-all-XXXXXX";
        int fd = mkostemp(path, O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(write_all(fd, "hello world", 11), 0);
        assert_int_equal(pwrite_all(fd, "W", 1, 6), 0);
        /* pwrite_all() leaves the file offset where write_all() put it. */
        assert_int_equal(lseek(fd, 0, SEEK_CUR), 11);
        assert_int_equal(write_all(fd, "!", 1), 0);
        assert_int_equal(pwrite_all(fd, "--", 2, 14), 0);
        assert_int_equal(write_all(fd, "", 0), 0);

        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 100, &data, &size), 0);
        assert_int_equal(size, 16);
        assert_memory_equal(data, "hello World!\0\0--", 16);
        close(fd);
        assert_int_equal(unlink(path), 0);

        assert_int_equal(write_all(-1, "x", 1), -EBADF);
        assert_int_equal(pwrite_all(-1, "x", 1, 0), -EBADF);
        int p[2];
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(pwrite_all(p[1], "x", 1, 0), -ESPIPE);
        close(p[0]);
        close(p[1]);
}

static void test_fileio_disk_full(void **state) {
        const char *dir = *state;
        if (!dir)
                skip();
        _cleanup_free_ char *path = strprintf("%s/pod.json", dir);
        _cleanup_free_ char *filler = strprintf("%s/filler", dir);
        assert_int_equal(
                write_file_atomic(path, "{\"old\": true}", strlen("{\"old\": true}"), 0600), 0);

        /* Fill the file system to the last block. */
        int fd = open(filler, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        char block[4096] = {};
        while (write(fd, block, sizeof(block)) > 0)
                ;
        close(fd);

        char big[16384];
        memset(big, 'x', sizeof(big));
        assert_int_equal(write_file_atomic(path, big, sizeof(big), 0600), -ENOSPC);
        _cleanup_free_ char *data = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, path, 100, &data, NULL), 0);
        assert_string_equal(data, "{\"old\": true}");
        DIR *d = opendir(dir);
        assert_non_null(d);
        struct dirent *de;
        unsigned n = 0;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        assert_int_equal(n, 2); /* pod.json and filler: no temp file */
}

static unsigned count_entries(DIR *d, bool *saw_dot) {
        unsigned n = 0;
        FOREACH_DIRENT(de, d) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        *saw_dot = true;
                n++;
        }
        assert_int_equal(errno, 0); /* the end, not an error */
        return n;
}

static void test_opendir_fd(void **state) {
        char dir[] = "/tmp/nanolet-test-opendir-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
        assert_int_equal(mkdirat(dfd, "sub", 0755), 0);
        assert_int_equal(symlinkat("sub", dfd, "link"), 0);
        _cleanup_close_ int f = openat(dfd, "sub/a", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(f >= 0);

        bool saw_dot = false;
        {
                _cleanup_closedir_ DIR *d = NULL;
                assert_int_equal(opendir_fd(dfd, NULL, 0, &d), 0);
                /* its own fd, close-on-exec, not dir_fd */
                assert_int_not_equal(dirfd(d), dfd);
                assert_true(fcntl(dirfd(d), F_GETFD) & FD_CLOEXEC);
                assert_int_equal(count_entries(d, &saw_dot), 2); /* sub, link */
                assert_false(saw_dot);
        }
        /* a second listing of the same dir_fd is complete again: the stream
         * did not move dir_fd's offset (a dup would have) */
        {
                _cleanup_closedir_ DIR *d = NULL;
                assert_int_equal(opendir_fd(dfd, NULL, 0, &d), 0);
                assert_int_equal(count_entries(d, &saw_dot), 2);
        }
        /* a path below dir_fd, O_NOFOLLOW refuses the symlink */
        {
                _cleanup_closedir_ DIR *d = NULL;
                assert_int_equal(opendir_fd(dfd, "sub", O_NOFOLLOW, &d), 0);
                assert_int_equal(count_entries(d, &saw_dot), 1);
                DIR *none = NULL;
                assert_int_equal(opendir_fd(dfd, "link", O_NOFOLLOW, &none), -ENOTDIR);
                assert_null(none);
                assert_int_equal(opendir_fd(dfd, "sub/a", 0, &none), -ENOTDIR);
                assert_int_equal(opendir_fd(dfd, "missing", 0, &none), -ENOENT);
                assert_int_equal(opendir_fd(-EBADF, NULL, 0, &none), -EBADF);
                assert_null(none);
        }
        /* an O_PATH fd can be listed too (dup+fdopendir refuses it) */
        {
                _cleanup_close_ int pfd = openat(dfd, "sub", O_PATH | O_DIRECTORY | O_CLOEXEC);
                assert_true(pfd >= 0);
                _cleanup_closedir_ DIR *d = NULL;
                assert_int_equal(opendir_fd(pfd, NULL, 0, &d), 0);
                assert_int_equal(count_entries(d, &saw_dot), 1);
        }
        /* an empty directory that is already removed lists as empty */
        {
                assert_int_equal(mkdirat(dfd, "gone", 0755), 0);
                _cleanup_close_ int gfd = openat(dfd, "gone", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(gfd >= 0);
                assert_int_equal(unlinkat(dfd, "gone", AT_REMOVEDIR), 0);
                _cleanup_closedir_ DIR *d = NULL;
                assert_int_equal(opendir_fd(gfd, NULL, 0, &d), 0);
                assert_int_equal(count_entries(d, &saw_dot), 0);
        }
        assert_int_equal(rm_rf_at(AT_FDCWD, dir), 0);
}

typedef struct DCase {
        const char *text;
        int r;
        usec_t usec;
} DCase;

/* Moved from test-quantity: the parser moved from quantity.c to time-util.c. */
static void test_duration_table(void **state) {
        static const DCase cases[] = {
                { "0", 0, 0 },
                { "+0", 0, 0 },
                { "-0", 0, 0 },
                { "0s", 0, 0 },
                { "10s", 0, 10 * USEC_PER_SEC },
                { "500ms", 0, 500 * USEC_PER_MSEC },
                { "1h30m", 0, 5400 * USEC_PER_SEC },
                { "1.5h", 0, 5400 * USEC_PER_SEC },
                { "2m3.5s", 0, 123500 * USEC_PER_MSEC },
                { "1us", 0, 1 },
                { "1\xc2\xb5s", 0, 1 },
                { "1\xce\xbcs", 0, 1 },
                { "1500ns", 0, 1 },
                { "999ns", 0, 0 },
                { ".5s", 0, 500 * USEC_PER_MSEC },
                { "1.s", 0, USEC_PER_SEC },
                { "1h1h", 0, 7200 * USEC_PER_SEC },
                { "2562047h", 0, 2562047ULL * 3600 * USEC_PER_SEC },
                { "2562048h", -ERANGE, 0 },
                { "9223372036854775808ns", -ERANGE, 0 },
                { "", -EINVAL, 0 },
                { "10", -EINVAL, 0 },
                { "1d", -EINVAL, 0 },
                { "s", -EINVAL, 0 },
                { ".s", -EINVAL, 0 },
                { "-1s", -EINVAL, 0 },
                { "1 s", -EINVAL, 0 },
                { "1s ", -EINVAL, 0 },
                { "1S", -EINVAL, 0 },
                { "1h30", -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const DCase *c = &cases[i];
                usec_t u = 4242;
                int r = go_duration_parse_usec(c->text, &u);
                if (r != c->r)
                        fail_msg("\"%s\": r=%d, want %d", c->text, r, c->r);
                if (r < 0)
                        assert_true(u == 4242);
                else if (u != c->usec)
                        fail_msg("\"%s\": %llu usec, want %llu", c->text, (unsigned long long)u,
                                 (unsigned long long)c->usec);
        }
}

typedef struct NCase {
        const char *text;
        int r;
        int64_t nsec;
} NCase;

static void test_go_duration(void **state) {
        static const NCase cases[] = {
                { "1.5h", 0, 5400 * INT64_C(1000000000) },
                { "1h30m", 0, 5400 * INT64_C(1000000000) },
                { "500ms", 0, 500 * INT64_C(1000000) },
                { "-1s", 0, -INT64_C(1000000000) },
                { "+1s", 0, INT64_C(1000000000) },
                { "-1.5h", 0, -5400 * INT64_C(1000000000) },
                { "1\xc2\xb5s", 0, 1000 },
                { "1\xce\xbcs", 0, 1000 },
                { "1.5\xc2\xb5s", 0, 1500 },
                { "1ns", 0, 1 },
                { "0.1ns", 0, 0 },
                /* fractions are exact integer truncation, at the ns digit */
                { "1.000000001s", 0, INT64_C(1000000001) },
                { "0.0000000009s", 0, 0 },
                { "0.3h", 0, INT64_C(1080000000000) },
                { "1.0000000000000000000000001h", 0, INT64_C(3600000000000) },
                { "2562047h47m16.854775807s", 0, INT64_MAX },
                { "2562047h47m16.854775808s", -ERANGE, 0 },
                { "-2562047h47m16.854775808s", 0, INT64_MIN },
                { "-2562047h47m16.854775809s", -ERANGE, 0 },
                { "9223372036854775807ns", 0, INT64_MAX },
                { "9223372036854775808ns", -ERANGE, 0 },
                { "-9223372036854775808ns", 0, INT64_MIN },
                { "99999999999999999999ns", -ERANGE, 0 },
                { "2562048h", -ERANGE, 0 },
                { "1000000000000000000000h", -ERANGE, 0 },
                { "0", 0, 0 },
                { "-0", 0, 0 },
                { "", -EINVAL, 0 },
                { NULL, -EINVAL, 0 },
                { "-", -EINVAL, 0 },
                { "+", -EINVAL, 0 },
                { ".", -EINVAL, 0 },
                { "1", -EINVAL, 0 },
                { "1.5.5s", -EINVAL, 0 },
                { "1e3s", -EINVAL, 0 },
                { "0x10s", -EINVAL, 0 },
                { "\xc2\xb5s", -EINVAL, 0 },
                { "1\xc2s", -EINVAL, 0 },
                { "--1s", -EINVAL, 0 },
                { "1s-1s", -EINVAL, 0 },
                { "1hh", -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const NCase *c = &cases[i];
                int64_t ns = 4242;
                int r = go_duration_parse(c->text, &ns);
                if (r != c->r)
                        fail_msg("\"%s\": r=%d, want %d", c->text ?: "(null)", r, c->r);
                if (r < 0)
                        assert_true(ns == 4242);
                else if (ns != c->nsec)
                        fail_msg("\"%s\": %lld ns, want %lld", c->text, (long long)ns,
                                 (long long)c->nsec);
        }
}

static void test_container_id_valid(void **state) {
        char max[CONTAINER_ID_MAX + 2];
        memset(max, 'a', sizeof(max));
        max[CONTAINER_ID_MAX] = 0;
        assert_true(container_id_valid(max));
        max[CONTAINER_ID_MAX] = 'a';
        max[CONTAINER_ID_MAX + 1] = 0;
        assert_false(container_id_valid(max));

        assert_true(container_id_valid("0123456789abcdef"));
        assert_true(container_id_valid("pod_ns-name.1"));
        assert_true(container_id_valid("..."));
        assert_true(container_id_valid(".x"));
        assert_false(container_id_valid(NULL));
        assert_false(container_id_valid(""));
        assert_false(container_id_valid("."));
        assert_false(container_id_valid(".."));
        assert_false(container_id_valid("a/b"));
        assert_false(container_id_valid("a b"));
        assert_false(container_id_valid("a:b"));
        assert_false(container_id_valid("a\nb"));
        assert_false(container_id_valid("\xc3\xa9")); /* é: ASCII only, whatever the locale */
}

static void test_hash(void **state) {
        char hex[65];
        assert_int_equal(sha256_hex("abc", 3, hex), 0);
        assert_string_equal(hex,
                            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_int_equal(sha256_hex("", 0, hex), 0);
        assert_string_equal(hex,
                            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        char digest[72];
        assert_int_equal(sha256_oci_digest("abc", 3, digest), 0);
        assert_string_equal(
                digest, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        /* more than one 64-byte block (FIPS 180-2, B.2) */
        const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        assert_int_equal(sha256_hex(two, strlen(two), hex), 0);
        assert_string_equal(hex,
                            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_log_errno(void **state) {
        /* log_*_errno returns -abs(error) whatever the sign passed in */
        assert_int_equal(log_debug_errno(ENOENT, "x"), -ENOENT);
        assert_int_equal(log_debug_errno(-EINVAL, "x"), -EINVAL);
        log_set_max_level(LOG_ERR);
        assert_int_equal(log_warning_errno(-EPERM, "suppressed %s", "message"), -EPERM);
        log_set_max_level(LOG_INFO);
        assert_int_equal(log_get_max_level(), LOG_INFO);
}

static void test_cleanup(void **state) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        { _cleanup_close_ _unused_ int owned = fd; }
        assert_int_equal(fcntl(fd, F_GETFD), -1); /* closed by the scope */
        int kept;
        {
                _cleanup_close_ int owned = open("/dev/null", O_RDONLY | O_CLOEXEC);
                kept = TAKE_FD(owned);
                assert_int_equal(owned, -EBADF);
        }
        assert_true(fcntl(kept, F_GETFD) >= 0);
        close(kept);
        char *p;
        {
                _cleanup_free_ char *s = strdup("x");
                p = TAKE_PTR(s);
                assert_null(s);
        }
        free(p);
}

static void test_time(void **state) {
        char buf[32];
        assert_string_equal(format_rfc3339(buf, sizeof buf, 0), "1970-01-01T00:00:00Z");
        assert_string_equal(format_rfc3339(buf, sizeof buf, 1700000000ULL * USEC_PER_SEC),
                            "2023-11-14T22:13:20Z");
        usec_t a = now_usec(CLOCK_MONOTONIC), b = now_usec(CLOCK_MONOTONIC);
        assert_true(b >= a);
}

static void test_umount_below(void **state) {
        if (geteuid() != 0)
                skip();
        char dir[] = "/tmp/nanolet-test-mount-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *a = strprintf("%s/a", dir);
        _cleanup_free_ char *ab = strprintf("%s/a/b", dir);
        _cleanup_free_ char *sib = strprintf("%s-sibling", dir);
        assert_int_equal(mkdir(a, 0755), 0);
        assert_int_equal(mount("tmpfs", a, "tmpfs", 0, NULL), 0);
        assert_int_equal(mkdir(ab, 0755), 0);
        assert_int_equal(mount("tmpfs", ab, "tmpfs", 0, NULL), 0);
        assert_int_equal(mkdir(sib, 0755), 0);
        assert_int_equal(mount("tmpfs", sib, "tmpfs", 0, NULL), 0);

        /* nested mounts go, deepest first; a sibling sharing the prefix stays */
        assert_int_equal(umount_below(dir), 2);
        assert_int_equal(umount_below(dir), 0);
        assert_int_equal(umount2(sib, 0), 0);
        assert_int_equal(rmdir(sib), 0);
        _cleanup_free_ char *cmd = strprintf("rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_sd_notify(void **state) {
        unsetenv("NOTIFY_SOCKET");
        assert_int_equal(sd_notify_send("READY=1"), 0); /* not under systemd */

        char path[] = "/tmp/nanolet-test-notify-XXXXXX";
        assert_non_null(mkdtemp(path));
        _cleanup_free_ char *sock = strprintf("%s/notify", path);
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strcpy(sa.sun_path, sock);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
        setenv("NOTIFY_SOCKET", sock, 1);
        assert_int_equal(sd_notify_send("READY=1"), 1);
        char buf[64] = {};
        assert_int_equal(recv(fd, buf, sizeof buf - 1, 0), 7);
        assert_string_equal(buf, "READY=1");
        close(fd);
        unsetenv("NOTIFY_SOCKET");
        unlink(sock);
        rmdir(path);

        setenv("WATCHDOG_USEC", "30000000", 1);
        unsetenv("WATCHDOG_PID");
        assert_true(sd_watchdog_interval() == 30 * USEC_PER_SEC);
        setenv("WATCHDOG_PID", "1", 1); /* someone else's */
        assert_true(sd_watchdog_interval() == 0);
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
}

static void test_error_first_wins(void **state) {
        Error e = {};

        assert_int_equal(error_set(&e, EINVAL, "inner %d", 1), -EINVAL);
        assert_int_equal(error_set(&e, -ENOENT, "outer"), -ENOENT);
        assert_int_equal(e.error, -EINVAL);
        assert_string_equal(e.message, "inner 1");
        assert_int_equal(error_set(NULL, -EIO, "nobody listens"), -EIO);
        e = (Error){};
        assert_int_equal(error_set(&e, 0, "no errno"), -EINVAL); /* never "success" */
        assert_int_equal(e.error, -EINVAL);

        e = (Error){};
        assert_int_equal(error_prefix(&e, -ENOENT, "layer %d", 2), -ENOENT);
        assert_string_equal(e.message, "layer 2: No such file or directory");
        assert_int_equal(error_prefix(&e, -EIO, "image busybox"), -EIO);
        assert_string_equal(e.message, "image busybox: layer 2: No such file or directory");
        assert_int_equal(e.error, -ENOENT);
        error_clear(&e);
        assert_int_equal(e.error, 0);
        assert_string_equal(e.message, "");
}

/* What the logger writes to stderr while f runs, NUL-terminated. */
static char *capture_log(void (*f)(void)) {
        char path[] = "/tmp/nanolet-test-log-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        (void)unlink(path);
        fflush(stderr);
        int saved = dup(STDERR_FILENO);
        assert_true(dup2(fd, STDERR_FILENO) >= 0);
        f();
        fflush(stderr);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        char *out = NULL;
        assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
        assert_int_equal(read_full_fd(fd, 1 << 16, &out, NULL), 0);
        close(fd);
        return out;
}

static void log_three(void) {
        log_info("hello \"quoted\"\tand tab");
        log_warning("careful");
        (void)log_error_errno(-ENOENT, "failed: %m");
}

static void assert_matches(const char *text, const char *pattern) {
        regex_t re;
        assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0);
        int r = regexec(&re, text, 0, NULL, 0);
        regfree(&re);
        if (r != 0)
                fail_msg("\"%s\" does not match /%s/", text, pattern);
}

/* klog's header, exactly: Lmmdd hh:mm:ss.uuuuuu PID file:line] msg, as
 * Fluent Bit's and kubelet's own klog parsers read it. */
static void test_log_klog_text(void **state) {
        (void)state;
        log_set_target_journal(0);
        log_set_format(LOG_FORMAT_TEXT);
        _cleanup_free_ char *out = capture_log(log_three);
        assert_matches(out, "^I[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} +[0-9]+ "
                            "test-basic\\.c:[0-9]+\\] hello \"quoted\"\\\\tand tab$");
        assert_matches(out, "^W[0-9]{4} [0-9:.]{15} +[0-9]+ test-basic\\.c:[0-9]+\\] careful$");
        assert_matches(out, "^E[0-9]{4} [0-9:.]{15} +[0-9]+ test-basic\\.c:[0-9]+\\] failed: "
                            "No such file or directory$");
        char pid[32];
        snprintf(pid, sizeof pid, " %7d ", (int)getpid());
        assert_non_null(strstr(out, pid));
}

/* Under journald: the priority prefix journald strips, then the same klog
 * header, so `journalctl -o cat` reads like kubelet's journal. */
static void test_log_klog_journal(void **state) {
        (void)state;
        log_set_target_journal(1);
        log_set_format(LOG_FORMAT_TEXT);
        _cleanup_free_ char *out = capture_log(log_three);
        log_set_target_journal(0);
        assert_matches(out, "^<6>I[0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{6} +[0-9]+ "
                            "test-basic\\.c:[0-9]+\\] hello ");
        assert_matches(out, "^<4>W[0-9]{4} [0-9:.]{15} +[0-9]+ test-basic\\.c:[0-9]+\\] careful$");
        assert_matches(out, "^<3>E[0-9]{4} [0-9:.]{15} +[0-9]+ test-basic\\.c:[0-9]+\\] failed: ");
}

/* kubelet's --logging-format=json shape: ts, caller, msg, and v or err. */
static void test_log_json(void **state) {
        (void)state;
        log_set_format(LOG_FORMAT_JSON);
        _cleanup_free_ char *out = capture_log(log_three);
        log_set_format(LOG_FORMAT_TEXT);
        assert_matches(out, "^\\{\"ts\":[0-9]+\\.[0-9]{6},\"caller\":\"test-basic\\.c:[0-9]+\","
                            "\"msg\":\"hello \\\\\"quoted\\\\\"\\\\tand tab\",\"v\":0\\}$");
        assert_matches(out, "\"msg\":\"careful\",\"v\":0\\}$");
        assert_matches(out, "\"msg\":\"failed: No such file or directory\",\"err\":\"No such "
                            "file or directory\"\\}$");
        LogFormat f;
        assert_int_equal(log_format_from_string("json", &f), 0);
        assert_int_equal(f, LOG_FORMAT_JSON);
        assert_int_equal(log_format_from_string("JSON", &f), -EINVAL);
}

static void log_kv_lines(void) {
        log_kv_info(LOG_KV("pod", "kube-system/etcd-n1", "podUID", "ab12", "containerName", "etcd"),
                    "Started container \"%s\"", "etcd");
        /* NULL value: the pair is left out */
        log_kv_warning(LOG_KV("pod", "default/web-n1", "podUID", "cd34", "containerName", NULL),
                       "Evicting pod");
        (void)log_kv_full_errno(LOG_ERR, -EIO, LOG_KV("pod", "default/x", "podUID", "u"),
                                "cannot write: %m");
}

/* Structured lines (klog's InfoS/ErrorS): pairs after the message in text,
 * JSON fields with "pod" as klog.KObj ({"name","namespace"}). */
static void test_log_kv(void **state) {
        (void)state;
        log_set_target_journal(0);
        log_set_format(LOG_FORMAT_TEXT);
        _cleanup_free_ char *text = capture_log(log_kv_lines);
        assert_matches(text, "^I[0-9]{4} [0-9:.]{15} +[0-9]+ test-basic\\.c:[0-9]+\\] Started "
                             "container \"etcd\" pod=\"kube-system/etcd-n1\" podUID=\"ab12\" "
                             "containerName=\"etcd\"$");
        assert_matches(text, "^W[0-9]{4} .*\\] Evicting pod pod=\"default/web-n1\" "
                             "podUID=\"cd34\"$");
        assert_matches(text, "^E[0-9]{4} .*\\] cannot write: Input/output error err=\"Input/output "
                             "error\" pod=\"default/x\" podUID=\"u\"$");

        log_set_format(LOG_FORMAT_JSON);
        _cleanup_free_ char *json = capture_log(log_kv_lines);
        log_set_format(LOG_FORMAT_TEXT);
        assert_matches(json, "^\\{\"ts\":[0-9]+\\.[0-9]{6},\"caller\":\"test-basic\\.c:[0-9]+\","
                             "\"msg\":\"Started container \\\\\"etcd\\\\\"\",\"v\":0,"
                             "\"pod\":\\{\"name\":\"etcd-n1\",\"namespace\":\"kube-system\"\\},"
                             "\"podUID\":\"ab12\",\"containerName\":\"etcd\"\\}$");
        assert_matches(json, "\"msg\":\"Evicting pod\",\"v\":0,\"pod\":\\{\"name\":\"web-n1\","
                             "\"namespace\":\"default\"\\},\"podUID\":\"cd34\"\\}$");
        assert_matches(json, "\"err\":\"Input/output error\",\"pod\":");
}

static void log_hostile(void) {
        log_warning("pull failed: %s", "denied\nW1128 00:00:00 all pods evicted\r\x1b]0;pwned\x07");
        log_kv_error(LOG_KV("pod", "default/x", "message", "line1\nE1128 forged\x1b[2J\xff"),
                     "Container terminated: %s",
                     "bye\n\xc2\x9b"
                     "31m");
}

/* Escaping makes a full message four times longer than the line buffer:
 * the line is cut, still one. */
static void log_huge(void) {
        char big[4000];
        for (size_t i = 0; i < sizeof big - 1; i++)
                big[i] = i % 100 == 99 ? '\n' : '\x1b';
        big[sizeof big - 1] = 0;
        log_warning("huge: %s", big);
}

static size_t count_lines(const char *s) {
        size_t n = 0;
        for (; *s; s++)
                n += *s == '\n';
        return n;
}

/* A value from outside cannot end a line early: one call, one line, and no
 * control character but its newline, in text, under journald and in JSON. */
static void test_log_injection(void **state) {
        (void)state;
        log_set_format(LOG_FORMAT_TEXT);
        for (int j = 0; j <= 1; j++) {
                log_set_target_journal(j);
                _cleanup_free_ char *out = capture_log(log_hostile);
                assert_int_equal(count_lines(out), 2);
                for (const char *p = out; *p; p++)
                        assert_true(*p == '\n' || ((unsigned char)*p >= 0x20 && *p != 0x7f));
                assert_null(strstr(out, "\nW1128"));
                assert_null(strstr(out, "\xc2\x9b"));
                assert_non_null(strstr(out, "pull failed: denied\\nW1128 00:00:00 all pods "
                                            "evicted\\r\\x1b]0;pwned\\a\n"));
                assert_non_null(strstr(out, "Container terminated: bye\\n\\u009b31m"));
                assert_non_null(strstr(out, " message=\"line1\\nE1128 forged\\x1b[2J\\xff\"\n"));
        }
        log_set_target_journal(0);
        _cleanup_free_ char *huge = capture_log(log_huge);
        assert_int_equal(count_lines(huge), 1);
        assert_true(strlen(huge) > 4000);
        assert_int_equal(huge[strlen(huge) - 1], '\n');
        assert_null(strchr(huge, '\x1b'));
        log_set_format(LOG_FORMAT_JSON);
        _cleanup_free_ char *json = capture_log(log_hostile);
        log_set_format(LOG_FORMAT_TEXT);
        assert_int_equal(count_lines(json), 2);
        assert_non_null(strstr(json, "\"msg\":\"pull failed: denied\\nW1128 00:00:00 all pods "
                                     "evicted\\r\\u001b]0;pwned\\u0007\""));
        /* invalid UTF-8 as U+FFFD, as Go's encoder writes it: the line stays JSON */
        assert_non_null(strstr(json, "\"message\":\"line1\\nE1128 forged\\u001b[2J\\ufffd\""));
}

/* The agent's helpers write on its stderr: they get its log format. */
static void test_log_format_to_helpers(void **state) {
        char **env = NULL;

        (void)unsetenv("NANOLET_LOG_FORMAT");
        log_set_format(LOG_FORMAT_JSON);
        assert_int_equal(self_helper_env(&env), 0);
        assert_true(strv_contains(env, "NANOLET_LOG_FORMAT=json"));
        env = strv_free(env);
        log_set_format(LOG_FORMAT_TEXT);
        assert_int_equal(self_helper_env(&env), 0);
        assert_false(strv_contains(env, "NANOLET_LOG_FORMAT=json"));
        env = strv_free(env);

        assert_int_equal(setenv("NANOLET_LOG_FORMAT", "json", 1), 0);
        log_setup();
        assert_int_equal(log_get_format(), LOG_FORMAT_JSON);
        assert_int_equal(setenv("NANOLET_LOG_FORMAT", "yaml", 1), 0);
        log_setup();
        assert_int_equal(log_get_format(), LOG_FORMAT_JSON);
        (void)unsetenv("NANOLET_LOG_FORMAT");
        log_set_format(LOG_FORMAT_TEXT);
}

/* getopt_whole() over argv: every option it returns, as "<val>" (and
 * "=<optarg>"), joined by ' '; an error as "ERR <sentence>". */
static void run_getopt(char **argv, bool long_only, char *out, size_t size) {
        static const struct option longopts[] = {
                { "root-dir", required_argument, NULL, 'r' },
                { "root-dir-extra", no_argument, NULL, 'X' },
                { "max-pods", required_argument, NULL, 'm' },
                { "help", no_argument, NULL, 'h' },
                { "watch", optional_argument, NULL, 'w' },
                {},
        };
        char err[256];
        int argc = (int)strv_length(argv), opt;
        size_t n = 0;

        out[0] = 0;
        optind = 0;
        while ((opt = getopt_whole(argc, argv, "hc:q", longopts, long_only, err, sizeof err)) >=
               0) {
                if (opt == '?') {
                        n += (size_t)snprintf(out + n, size - n, "%sERR %s", n ? " " : "", err);
                        return;
                }
                n += (size_t)snprintf(out + n, size - n, "%s%c%s%s", n ? " " : "", opt,
                                      optarg ? "=" : "", optarg ? optarg : "");
        }
}

static void test_getopt_whole(void **state) {
        static const struct {
                bool long_only;
                char *argv[6];
                const char *expect;
        } cases[] = {
                /* whole names, every spelling getopt has for them */
                { false, { "x", "--root-dir", "/a", "--max-pods=5", "-q" }, "r=/a m=5 q" },
                { false, { "x", "--root-dir=/a", "-c", "v", "--watch" }, "r=/a c=v w" },
                { false, { "x", "--watch=1", "-cv", "--", "--root" }, "w=1 c=v" },
                { true, { "x", "-root-dir", "/a", "-max-pods=5", "-h" }, "r=/a m=5 h" },
                /* an unambiguous abbreviation is an unknown flag */
                { false, { "x", "--root=/x" }, "ERR unknown flag: --root" },
                { false, { "x", "--max-pod", "5" }, "ERR unknown flag: --max-pod" },
                { false, { "x", "-q", "--max-pod=5" }, "q ERR unknown flag: --max-pod" },
                { false, { "x", "--he" }, "ERR unknown flag: --he" },
                { false, { "x", "--wat" }, "ERR unknown flag: --wat" },
                { true, { "x", "-root=/x" }, "ERR unknown flag: -root" },
                { true, { "x", "--max-pod", "5" }, "ERR unknown flag: --max-pod" },
                /* an ambiguous one, and a value missing after one */
                { false, { "x", "--root-d" }, "ERR unknown flag: --root-d" },
                { false, { "x", "--max" }, "ERR unknown flag: --max" },
                /* pflag's other sentences */
                { false, { "x", "--bogus=1" }, "ERR unknown flag: --bogus" },
                { false, { "x", "--root-dir" }, "ERR flag needs an argument: --root-dir" },
                { false, { "x", "--help=1" }, "ERR flag does not take a value: --help" },
                { false, { "x", "-qz" }, "q ERR unknown shorthand flag: 'z' in -qz" },
                { false, { "x", "-zq" }, "ERR unknown shorthand flag: 'z' in -zq" },
                { false, { "x", "-qc" }, "q ERR flag needs an argument: 'c' in -qc" },
                { true, { "x", "-bogus" }, "ERR unknown flag: -bogus" },
                /* what is shown is escaped and cut */
                { false, { "x", "--a\033[2Jb" }, "ERR unknown flag: --a\\x1b[2Jb" },
        };
        char out[512];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                run_getopt((char **)cases[i].argv, cases[i].long_only, out, sizeof out);
                if (!streq(out, cases[i].expect))
                        fail_msg("case %zu: \"%s\", expected \"%s\"", i, out, cases[i].expect);
        }

        char long_name[200] = "--";
        memset(long_name + 2, 'y', sizeof long_name - 3);
        long_name[sizeof long_name - 1] = 0;
        char *argv[] = { "x", long_name, NULL };
        run_getopt(argv, false, out, sizeof out);
        assert_true(startswith(out, "ERR unknown flag: --yyy"));
        assert_true(endswith(out, "..."));
        assert_true(strlen(out) < 100);
}

static void test_base64_strict(void **state) {
        static const struct {
                const char *in;
                size_t len; /* 0: strlen */
                Base64Flags flags;
                int r;
                const char *out;
        } cases[] = {
                { "YWJj", 0, 0, 0, "abc" },
                { "YQ==", 0, 0, 0, "a" },
                { "YWI=", 0, 0, 0, "ab" },
                { "", 0, 0, 0, "" },
                { "YQ=", 0, 0, -EINVAL, NULL }, /* padding required */
                { "YQ", 0, 0, -EINVAL, NULL },
                { "Y W=", 0, 0, -EINVAL, NULL },     /* no spaces */
                { "YQ==YQ==", 0, 0, -EINVAL, NULL }, /* '=' only at the end */
                { "=YQ=", 0, 0, -EINVAL, NULL },
                { "-_==", 0, 0, -EINVAL, NULL }, /* not the URL-safe alphabet */
                { "YW\nJj", 0, 0, -EINVAL, NULL },
                { "YW\r\nJj", 0, BASE64_LINE_BREAKS, 0, "abc" },
                { "YW\0j", 4, 0, -EINVAL, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint8_t *out = NULL;
                size_t n = 0;
                size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);
                int r = base64_decode_strict(cases[i].in, len, cases[i].flags, &out, &n);
                if (r != cases[i].r)
                        fail_msg("case %zu (\"%s\"): %d, want %d", i, cases[i].in, r, cases[i].r);
                if (r == 0) {
                        assert_int_equal(n, strlen(cases[i].out));
                        assert_memory_equal(out, cases[i].out, n);
                        assert_int_equal(out[n], 0);
                }
                free(out);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_error_first_wins),
                cmocka_unit_test(test_string_util),
                cmocka_unit_test(test_strv),
                cmocka_unit_test(test_mkdir_p_parents),
                cmocka_unit_test(test_fileio),
                cmocka_unit_test(test_utf8),
                cmocka_unit_test(test_read_file_tail),
                cmocka_unit_test(test_write_all),
                cmocka_unit_test(test_read_state_file),
                cmocka_unit_test(test_remove_stale_temp_files),
                cmocka_unit_test_setup_teardown(test_fileio_disk_full, full_setup, full_teardown),
                cmocka_unit_test(test_hash),
                cmocka_unit_test(test_container_id_valid),
                cmocka_unit_test(test_opendir_fd),
                cmocka_unit_test(test_log_errno),
                cmocka_unit_test(test_cleanup),
                cmocka_unit_test(test_time),
                cmocka_unit_test(test_duration_table),
                cmocka_unit_test(test_go_duration),
                cmocka_unit_test(test_umount_below),
                cmocka_unit_test(test_sd_notify),
                cmocka_unit_test(test_log_klog_text),
                cmocka_unit_test(test_log_klog_journal),
                cmocka_unit_test(test_log_json),
                cmocka_unit_test(test_log_kv),
                cmocka_unit_test(test_log_injection),
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_base64_strict),
                cmocka_unit_test(test_getopt_whole),
                cmocka_unit_test(test_log_format_to_helpers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
