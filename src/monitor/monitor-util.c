/* The pure parts of nanolet-monitor (monitor.h). libc only. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "monitor.h"

enum {
        OPT_API_VERSION = 0x100,
        OPT_EXIT_DIR,
        OPT_SOCKET_DIR,
        OPT_LOG_LEVEL,
        OPT_RUNTIME_ARG,
        OPT_LOG_SIZE_MAX,
};

int monitor_parse_args(int argc, char **argv, MonitorArgs *ret, char *err, size_t err_size) {
        static const struct option options[] = {
                { "api-version", required_argument, NULL, OPT_API_VERSION },
                { "cid", required_argument, NULL, 'c' },
                { "cuuid", required_argument, NULL, 'u' },
                { "name", required_argument, NULL, 'n' },
                { "runtime", required_argument, NULL, 'r' },
                { "bundle", required_argument, NULL, 'b' },
                { "container-pidfile", required_argument, NULL, 'p' },
                { "conmon-pidfile", required_argument, NULL, 'P' },
                { "log-path", required_argument, NULL, 'l' },
                { "exit-dir", required_argument, NULL, OPT_EXIT_DIR },
                { "socket-dir-path", required_argument, NULL, OPT_SOCKET_DIR },
                { "persist-dir", required_argument, NULL, '0' },
                { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
                { "runtime-arg", required_argument, NULL, OPT_RUNTIME_ARG },
                { "terminal", no_argument, NULL, 't' },
                { "stdin", no_argument, NULL, 'i' },
                { "systemd-cgroup", no_argument, NULL, 's' },
                { "log-size-max", required_argument, NULL, OPT_LOG_SIZE_MAX },
                {},
        };
        MonitorArgs a = {};
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "+c:u:n:r:b:p:P:l:0:tis", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        a.id = optarg;
                        break;
                case 'r':
                        a.runtime = optarg;
                        break;
                case 'b':
                        a.bundle = optarg;
                        break;
                case 'p':
                        a.container_pidfile = optarg;
                        break;
                case 'P':
                        a.monitor_pidfile = optarg;
                        break;
                case 'l':
                        /* conmon's driver:path; only k8s-file is written. */
                        if (strncmp(optarg, "k8s-file:", 9) == 0)
                                a.log_path = optarg + 9;
                        else if (optarg[0] == '/')
                                a.log_path = optarg;
                        else {
                                (void)snprintf(err, err_size,
                                               "unsupported log driver \"%s\" (only k8s-file)",
                                               optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_EXIT_DIR:
                        a.exit_dir = optarg;
                        break;
                case '0':
                        a.persist_dir = optarg;
                        break;
                case OPT_RUNTIME_ARG:
                        if (a.n_runtime_args >= MONITOR_RUNTIME_ARGS_MAX) {
                                (void)snprintf(err, err_size, "too many --runtime-arg");
                                return -EINVAL;
                        }
                        a.runtime_args[a.n_runtime_args++] = optarg;
                        break;
                case 't':
                        a.terminal = true;
                        break;
                case 'i':
                        a.stdin_open = true;
                        break;
                case 's':
                        a.systemd_cgroup = true;
                        break;
                case OPT_LOG_SIZE_MAX: {
                        char *end;
                        errno = 0;
                        long long v = strtoll(optarg, &end, 10);
                        if (errno || end == optarg || *end) {
                                (void)snprintf(err, err_size, "bad --log-size-max \"%s\"", optarg);
                                return -EINVAL;
                        }
                        a.log_size_max = v > 0 ? v : 0; /* conmon: -1 is none */
                        break;
                }
                case 'u':
                case 'n':
                case OPT_API_VERSION:
                case OPT_SOCKET_DIR:
                case OPT_LOG_LEVEL:
                        break; /* conmon's; nothing here needs them */
                default:
                        (void)snprintf(err, err_size, "unknown option \"%s\"",
                                       optind > 0 && optind <= argc ? argv[optind - 1] : "?");
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                (void)snprintf(err, err_size, "unexpected argument \"%s\"", argv[optind]);
                return -EINVAL;
        }
        const struct {
                const char *value, *name;
        } required[] = {
                { a.id, "-c" },          { a.runtime, "-r" },
                { a.bundle, "-b" },      { a.container_pidfile, "-p" },
                { a.log_path, "-l" },    { a.exit_dir, "--exit-dir" },
                { a.persist_dir, "-0" },
        };
        for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
                if (!required[i].value || !required[i].value[0]) {
                        (void)snprintf(err, err_size, "missing %s", required[i].name);
                        return -EINVAL;
                }
        /* The id names files in the exit directory. */
        if (strchr(a.id, '/') || a.id[0] == '.' || strlen(a.id) > 128) {
                (void)snprintf(err, err_size, "bad container id \"%s\"", a.id);
                return -EINVAL;
        }
        *ret = a;
        return 0;
}

size_t monitor_format_prefix(char *buf, size_t size, const struct tm *tm, long nsec,
                             const char *stream) {
        long off = tm->tm_gmtoff;
        char sign = '+';
        if (off < 0) {
                sign = '-';
                off = -off;
        }
        int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%09ld%c%02ld:%02ld %s ",
                         tm->tm_year + 1900, tm->tm_mon + 1, tm->tm_mday, tm->tm_hour, tm->tm_min,
                         tm->tm_sec, nsec, sign, off / 3600, (off % 3600) / 60, stream);
        if (n < 0 || (size_t)n >= size)
                return 0;
        return (size_t)n;
}

size_t monitor_line_len(const char *buf, size_t len, bool *ret_partial) {
        const char *nl = memchr(buf, '\n', len);
        *ret_partial = !nl;
        return nl ? (size_t)(nl - buf) + 1 : len;
}

int monitor_log_open(MonitorLog *log, const char *path, int64_t size_max) {
        struct stat st;
        int fd =
                open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0640);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                int r = S_ISREG(st.st_mode) ? -errno : -EBADFD;
                close(fd);
                return r;
        }
        *log = (MonitorLog){ .fd = fd, .path = path, .written = st.st_size, .size_max = size_max };
        return 0;
}

int monitor_log_reopen(MonitorLog *log) {
        char tmp[PATH_MAX];
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", log->path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        /* Never through a name someone planted: remove it, create anew. */
        (void)unlink(tmp);
        int fd = open(tmp,
                      O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
                      0640);
        if (fd < 0)
                return -errno;
        if (rename(tmp, log->path) < 0) {
                int r = -errno;
                (void)unlink(tmp);
                close(fd);
                return r;
        }
        close(log->fd);
        log->fd = fd;
        log->written = 0;
        return 0;
}

/* Writes all of iov, retrying short writes; on an error the rest of the
 * chunk is dropped (a full disk must not stop the monitor). */
static int writev_all(int fd, struct iovec *iov, int n) {
        while (n > 0) {
                ssize_t k = writev(fd, iov, n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                while (n > 0 && (size_t)k >= iov->iov_len) {
                        k -= (ssize_t)iov->iov_len;
                        iov++;
                        n--;
                }
                if (n > 0) {
                        iov->iov_base = (char *)iov->iov_base + k;
                        iov->iov_len -= (size_t)k;
                }
        }
        return 0;
}

int monitor_log_write(MonitorLog *log, const char *prefix, const char *buf, size_t len) {
        /* Batched: up to this many records per writev. */
        enum {
                RECORDS = 32
        };
        struct iovec iov[RECORDS * 4];
        size_t prefix_len = strlen(prefix);
        int n = 0, r = 0;

        while (len > 0) {
                bool partial;
                size_t line = monitor_line_len(buf, len, &partial);
                int64_t bytes = (int64_t)(prefix_len + 2 + line + (partial ? 1 : 0));

                if (log->size_max > 0 && log->written > 0 && log->written + bytes > log->size_max) {
                        int k = writev_all(log->fd, iov, n);
                        if (k < 0)
                                r = k;
                        n = 0;
                        k = monitor_log_reopen(log);
                        if (k < 0)
                                r = k;
                }
                iov[n++] = (struct iovec){ (void *)prefix, prefix_len };
                iov[n++] = (struct iovec){ partial ? "P " : "F ", 2 };
                iov[n++] = (struct iovec){ (void *)buf, line };
                if (partial)
                        iov[n++] = (struct iovec){ "\n", 1 };
                log->written += bytes;
                buf += line;
                len -= line;
                if (n > (RECORDS - 1) * 4) {
                        int k = writev_all(log->fd, iov, n);
                        if (k < 0)
                                r = k;
                        n = 0;
                }
        }
        if (n > 0) {
                int k = writev_all(log->fd, iov, n);
                if (k < 0)
                        r = k;
        }
        return r;
}

void monitor_log_close(MonitorLog *log) {
        log->fd = safe_close(log->fd);
}

int monitor_exit_code(int wait_status) {
        if (WIFEXITED(wait_status))
                return WEXITSTATUS(wait_status);
        if (WIFSIGNALED(wait_status))
                return 128 + WTERMSIG(wait_status);
        return -1;
}

int monitor_write_file_atomic(const char *path, const char *text) {
        char tmp[PATH_MAX];
        const char *slash = strrchr(path, '/');
        int r = 0;

        /* A dot name in the same directory: the agent's inotify watch
         * reacts to the rename (IN_MOVED_TO) of the real name only. */
        if (slash)
                r = snprintf(tmp, sizeof(tmp), "%.*s/.%s.tmp", (int)(slash - path), path,
                             slash + 1);
        else
                r = snprintf(tmp, sizeof(tmp), ".%s.tmp", path);
        if (r < 0 || (size_t)r >= sizeof(tmp))
                return -ENAMETOOLONG;
        (void)unlink(tmp);
        _cleanup_close_ int fd =
                open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        size_t len = strlen(text);
        /* No fsync: these files live in <run-dir>, which a reboot empties
         * anyway (a tmpfs normally); the rename alone makes a reader see
         * the whole text or nothing, which is what the agent needs. conmon
         * does not sync them either, and an fsync on a disk costs every
         * container start milliseconds (the pid file is on that path). */
        if (write(fd, text, len) != (ssize_t)len) {
                r = errno ? -errno : -EIO;
                (void)unlink(tmp);
                return r;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                (void)unlink(tmp);
                return r;
        }
        return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
        size_t len;
        unsigned cp;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xe0) == 0xc0)
                len = 2, cp = s[0] & 0x1f;
        else if ((s[0] & 0xf0) == 0xe0)
                len = 3, cp = s[0] & 0x0f;
        else if ((s[0] & 0xf8) == 0xf0)
                len = 4, cp = s[0] & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* overlong forms, surrogates, beyond U+10FFFF */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        return len;
}

size_t monitor_sync_line(char *buf, size_t size, int pid, const char *message, size_t msg_len) {
        size_t n = 0;
        int k;

        if (size < 64)
                return 0;
        if (!message) {
                k = snprintf(buf, size, "{\"data\": %d}\n", pid);
                return k > 0 && (size_t)k < size ? (size_t)k : 0;
        }
        k = snprintf(buf, size, "{\"data\": %d, \"message\": \"", pid);
        if (k < 0 || (size_t)k >= size)
                return 0;
        n = (size_t)k;
        /* Room kept for the longest escape (6), "\"}\n" and the NUL. */
        const unsigned char *m = (const unsigned char *)message;
        for (size_t i = 0; i < msg_len && n + 6 + 4 < size;) {
                unsigned char c = m[i];
                size_t l = utf8_len(m + i, msg_len - i);
                if (c == '"' || c == '\\') {
                        buf[n++] = '\\';
                        buf[n++] = (char)c;
                } else if (c == '\n') {
                        buf[n++] = '\\';
                        buf[n++] = 'n';
                } else if (c < 0x20 || c == 0x7f) {
                        n += (size_t)snprintf(buf + n, size - n, "\\u%04x", c);
                } else if (l == 0) {
                        buf[n++] = '?';
                } else if (l > 1) {
                        if (n + l + 4 >= size)
                                break;
                        memcpy(buf + n, m + i, l);
                        n += l;
                        i += l;
                        continue;
                } else
                        buf[n++] = (char)c;
                i++;
        }
        memcpy(buf + n, "\"}\n", 4);
        return n + 3;
}

int monitor_parse_ctl_line(const char *line, size_t len, int *ret_type, unsigned *ret_a,
                           unsigned *ret_b) {
        char tmp[64];
        int type;
        unsigned a = 0, b = 0;
        char extra;

        if (len == 0 || len >= sizeof(tmp))
                return -EINVAL;
        memcpy(tmp, line, len);
        tmp[len] = 0;
        int k = sscanf(tmp, "%d %u %u %c", &type, &a, &b, &extra);
        if (k != 1 && k != 3)
                return -EINVAL;
        *ret_type = type;
        *ret_a = a;
        *ret_b = b;
        return 0;
}
