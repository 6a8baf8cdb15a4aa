/* nanolet logs POD [-c C]: a container's CRI log files
 * (<pod-logs-dir>/<ns>_<pod>_<uid>/<container>/<attempt>.log, preceded by
 * its rotated <attempt>.log.<timestamp> files) printed as kubectl logs does:
 * partial records joined, stdout and stderr both to stdout. -f follows the
 * file with inotify, moves on to <attempt+1>.log when the container restarts,
 * reopens the file when it is rotated, and ends when the pod's status file
 * disappears (the pod was deleted). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli-common.h"
#include "cli.h"
#include "string-util.h"
#include "strv.h"

#define FOLLOW_POLL_MS 1000

typedef struct LogOut {
        char *data;
        size_t len;
} LogOut;

typedef struct LogsContext {
        const char *prog;
        bool timestamps;
        int64_t since;  /* ns since the epoch; 0 = no limit */
        long tail;      /* lines; -1 = all */
        bool buffering; /* collecting the last `tail` lines */
        LogOut *ring;
        size_t ring_start, ring_n;
        CriLogReader reader;
} LogsContext;

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet logs [OPTIONS] POD [-c CONTAINER]\n\n"
                   "Print a container's logs. POD is NAME or NAMESPACE/NAME, with or without\n"
                   "the node suffix.\n\n"
                   "  -c, --container NAME  container (default: the only one, or the\n"
                   "                        kubectl.kubernetes.io/default-container annotation)\n"
                   "  -f, --follow          keep printing new lines, across restarts, until\n"
                   "                        the pod is deleted or ^C\n"
                   "  -p, --previous        the previous attempt of the container\n"
                   "      --tail N          only the last N lines (-1: all)\n"
                   "      --since DURATION  only lines newer than this (5s, 2m, 3h)\n"
                   "      --since-time TIME only lines at or after this RFC3339 time\n"
                   "      --timestamps      prefix each line with its RFC3339Nano "
                   "time\n" CLI_COMMON_HELP);
}

static void logs_context_done(LogsContext *x) {
        if (x->ring)
                for (size_t i = 0; i < (size_t)x->tail; i++)
                        free(x->ring[i].data);
        free(x->ring);
        cri_log_reader_deinit(&x->reader);
}

static int write_out(const char *data, size_t len) {
        if (fwrite(data, 1, len, stdout) != len)
                return -errno ?: -EIO;
        return 0;
}

static int on_line(const CriLogLine *line, void *userdata) {
        LogsContext *x = userdata;

        if (x->since != 0 && line->timestamp < x->since)
                return 0;
        size_t tlen = x->timestamps ? strlen(line->time_str) + 1 : 0;
        if (!x->buffering) {
                if (tlen > 0 && (write_out(line->time_str, tlen - 1) < 0 || write_out(" ", 1) < 0))
                        return -EPIPE;
                if (write_out(line->text, line->text_len) < 0 || write_out("\n", 1) < 0)
                        return -EPIPE;
                return 0;
        }
        if (x->tail == 0)
                return 0;
        /* The ring keeps the formatted last `tail` lines. */
        size_t len = tlen + line->text_len + 1;
        char *d = malloc(len);
        if (!d)
                return -ENOMEM;
        if (tlen > 0) {
                memcpy(d, line->time_str, tlen - 1);
                d[tlen - 1] = ' ';
        }
        memcpy(d + tlen, line->text, line->text_len);
        d[len - 1] = '\n';
        size_t slot;
        if (x->ring_n < (size_t)x->tail)
                slot = (x->ring_start + x->ring_n++) % (size_t)x->tail;
        else {
                slot = x->ring_start;
                x->ring_start = (x->ring_start + 1) % (size_t)x->tail;
                free(x->ring[slot].data);
        }
        x->ring[slot] = (LogOut){ d, len };
        return 0;
}

static int ring_print(LogsContext *x) {
        for (size_t i = 0; i < x->ring_n; i++) {
                LogOut *o = &x->ring[(x->ring_start + i) % (size_t)x->tail];
                int r = write_out(o->data, o->len);
                free(o->data);
                o->data = NULL;
                if (r < 0)
                        return r;
        }
        x->ring_n = 0;
        x->ring_start = 0;
        x->buffering = false;
        return 0;
}

/* Reads fd to its current end into the reader. */
static int drain(LogsContext *x, int fd) {
        char buf[65536];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return 0;
                int r = cri_log_reader_feed(&x->reader, buf, (size_t)n);
                if (r < 0)
                        return r;
        }
}

/* Whether name is "<attempt>.log" (suffix NULL) or "<attempt>.log.<suffix>". */
static bool parse_log_name(const char *name, unsigned *ret_attempt, const char **ret_suffix) {
        char *end;
        if (name[0] < '0' || name[0] > '9')
                return false;
        errno = 0;
        unsigned long v = strtoul(name, &end, 10);
        if (errno != 0 || v > UINT_MAX)
                return false;
        const char *rest = startswith(end, ".log");
        if (!rest || (rest[0] != 0 && rest[0] != '.'))
                return false;
        *ret_attempt = (unsigned)v;
        *ret_suffix = rest[0] ? rest + 1 : NULL;
        return true;
}

/* The files of one attempt in reading order: rotated ones (their timestamp
 * suffix sorts chronologically), then the live "<attempt>.log" when present.
 * Compressed rotated files are skipped with a warning for now. */
static int list_attempt_files(const LogsContext *x, int dir_fd, const char *dir_path,
                              unsigned attempt, char ***ret_files, bool *ret_has_live) {
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        bool live = false;
        int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                unsigned a;
                const char *suffix;
                if (!parse_log_name(de->d_name, &a, &suffix) || a != attempt)
                        continue;
                if (!suffix) {
                        live = true;
                        continue;
                }
                if (endswith(suffix, ".gz") || endswith(suffix, ".tmp")) {
                        if (endswith(suffix, ".gz"))
                                fprintf(stderr,
                                        "%s: warning: skipping compressed rotated log %s/%s\n",
                                        x->prog, dir_path, de->d_name);
                        continue;
                }
                if (strv_extend(&files, de->d_name) < 0)
                        return -ENOMEM;
        }
        if (errno != 0)
                return -errno;
        strv_sort(files);
        *ret_files = TAKE_PTR(files);
        *ret_has_live = live;
        return 0;
}

/* The smallest attempt above `attempt` with a live log file, if any. */
static bool find_next_attempt(int dir_fd, unsigned attempt, unsigned *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        bool found = false;
        int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return false;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return false;
        }
        for (struct dirent *de; (de = readdir(d));) {
                unsigned a;
                const char *suffix;
                if (!parse_log_name(de->d_name, &a, &suffix) || suffix || a <= attempt)
                        continue;
                if (!found || a < *ret)
                        *ret = a;
                found = true;
        }
        return found;
}

static int read_file_at(LogsContext *x, int dir_fd, const char *name) {
        _cleanup_close_ int fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno; /* rotated away meanwhile */
        int r = drain(x, fd);
        if (r < 0)
                return r;
        /* A rotated file is complete: its trailing partial belongs to it. */
        return cri_log_reader_flush(&x->reader);
}

static int follow(LogsContext *x, const CliPod *pod, int dir_fd, const char *dir_path,
                  unsigned attempt, int live_fd) {
        _cleanup_close_ int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        _cleanup_close_ int fd = live_fd;
        _cleanup_free_ char *status_dir = strdup(pod->file);
        char name[32];
        int r;

        if (ifd < 0 || !status_dir)
                return ifd < 0 ? -errno : -ENOMEM;
        *strrchr(status_dir, '/') = 0;
        /* Wake-ups only; every decision below is made by looking at the files. */
        if (inotify_add_watch(ifd, dir_path,
                              IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
                                      IN_DELETE) < 0 ||
            inotify_add_watch(ifd, status_dir,
                              IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE) < 0)
                return -errno;

        snprintf(name, sizeof(name), "%u.log", attempt);
        for (;;) {
                if (fd < 0) {
                        fd = openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                        if (fd < 0 && errno != ENOENT)
                                return -errno;
                }
                if (fd >= 0) {
                        r = drain(x, fd);
                        if (r < 0)
                                return r;
                }
                if (fflush(stdout) != 0)
                        return -errno ?: -EIO;

                unsigned next = 0;
                if (find_next_attempt(dir_fd, attempt, &next)) {
                        /* The container restarted: finish the old file, go on with the new. */
                        if (fd >= 0) {
                                r = drain(x, fd);
                                if (r < 0)
                                        return r;
                        }
                        r = cri_log_reader_flush(&x->reader);
                        if (r < 0)
                                return r;
                        fd = safe_close(fd);
                        attempt = next;
                        snprintf(name, sizeof(name), "%u.log", attempt);
                        continue;
                }
                if (fd >= 0) {
                        struct stat a, b;
                        if (fstat(fd, &a) == 0 && (fstatat(dir_fd, name, &b, 0) < 0 ||
                                                   a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
                                /* Rotated (renamed, a new file takes its name): the
                                 * old one may have got lines after our last read. */
                                if (fstatat(dir_fd, name, &b, 0) == 0) {
                                        r = drain(x, fd);
                                        if (r < 0)
                                                return r;
                                        r = cri_log_reader_flush(&x->reader);
                                        if (r < 0)
                                                return r;
                                        fd = safe_close(fd);
                                        continue;
                                }
                        }
                }
                if (access(pod->file, F_OK) < 0 && errno == ENOENT) {
                        /* The pod was deleted: print what is left and stop. */
                        if (fd >= 0) {
                                r = drain(x, fd);
                                if (r < 0)
                                        return r;
                        }
                        r = cri_log_reader_flush(&x->reader);
                        if (r < 0)
                                return r;
                        return fflush(stdout) == 0 ? 0 : -EIO;
                }

                struct pollfd p = { .fd = ifd, .events = POLLIN };
                r = poll(&p, 1, FOLLOW_POLL_MS);
                if (r < 0 && errno != EINTR)
                        return -errno;
                if (r > 0) {
                        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                        while (read(ifd, buf, sizeof(buf)) > 0)
                                ;
                }
        }
}

int cli_logs(int argc, char **argv) {
        enum {
                ARG_TAIL = _CLI_ARG_COMMON_MAX,
                ARG_SINCE,
                ARG_SINCE_TIME,
                ARG_TIMESTAMPS
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "container", required_argument, NULL, 'c' },
                { "follow", no_argument, NULL, 'f' },
                { "previous", no_argument, NULL, 'p' },
                { "tail", required_argument, NULL, ARG_TAIL },
                { "since", required_argument, NULL, ARG_SINCE },
                { "since-time", required_argument, NULL, ARG_SINCE_TIME },
                { "timestamps", no_argument, NULL, ARG_TIMESTAMPS },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        _cleanup_(logs_context_done) LogsContext x = { .tail = -1 };
        _cleanup_free_ char *dir_path = NULL;
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_close_ int dir_fd = -EBADF, live_fd = -EBADF;
        const char *container = NULL;
        bool follow_mode = false, previous = false, has_live = false;
        const CliPod *pod;
        json_t *cs = NULL;
        CliCommon c;
        int r, opt;

        cli_common_init(&c, "nanolet logs");
        x.prog = c.prog;
        cri_log_reader_init(&x.reader, on_line, &x);
        optind = 0;
        while ((opt = getopt_long(argc, argv, "hc:fp", options, NULL)) >= 0) {
                if (cli_common_option(&c, opt, optarg))
                        continue;
                switch (opt) {
                case 'h':
                        help(stdout);
                        return EXIT_OK;
                case 'c':
                        container = optarg;
                        break;
                case 'f':
                        follow_mode = true;
                        break;
                case 'p':
                        previous = true;
                        break;
                case ARG_TAIL: {
                        char *end;
                        errno = 0;
                        long v = strtol(optarg, &end, 10);
                        if (errno != 0 || *end || end == optarg || v > 1000000000L) {
                                fprintf(stderr, "%s: invalid --tail \"%s\"\n", c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        x.tail = v < 0 ? -1 : v;
                        break;
                }
                case ARG_SINCE: {
                        int64_t d;
                        if (cli_parse_go_duration(optarg, &d) < 0) {
                                fprintf(stderr, "%s: invalid --since \"%s\" (e.g. 10s, 5m, 1h)\n",
                                        c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        x.since = cli_now_nsec() - d;
                        break;
                }
                case ARG_SINCE_TIME:
                        if (timestamp_parse_rfc3339(optarg, strlen(optarg), &x.since) < 0) {
                                fprintf(stderr, "%s: invalid --since-time \"%s\" (RFC3339)\n",
                                        c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case ARG_TIMESTAMPS:
                        x.timestamps = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind >= argc) {
                fprintf(stderr, "%s: no POD given\n", c.prog);
                return EXIT_USAGE;
        }
        const char *pod_arg = argv[optind++];
        if (optind < argc && !container)
                container = argv[optind++]; /* kubectl logs POD CONTAINER */
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument \"%s\"\n", c.prog, argv[optind]);
                return EXIT_USAGE;
        }

        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        if (cli_container_find(&c, &l, pod_arg, &container, &pod, &cs) < 0)
                return EXIT_ERROR;

        unsigned attempt = (unsigned)json_integer_value(cli_json_path(cs, "restartCount", NULL));
        const char *waiting = cli_json_str(cli_json_path(cs, "state", "waiting", NULL), "reason");
        if (previous) {
                if (attempt == 0) {
                        fprintf(stderr,
                                "%s: previous terminated container \"%s\" in pod \"%s\" not "
                                "found\n",
                                c.prog, container, pod->name);
                        return EXIT_ERROR;
                }
                attempt--;
                follow_mode = false; /* a previous attempt gets no new lines */
        }

        dir_path = strprintf("%s/%s_%s_%s/%s", c.pod_logs_dir, pod->namespace, pod->name, pod->uid,
                             container);
        if (!dir_path)
                goto oom;
        dir_fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd >= 0)
                r = list_attempt_files(&x, dir_fd, dir_path, attempt, &files, &has_live);
        if (dir_fd < 0 || (r >= 0 && !has_live && strv_length(files) == 0 && !follow_mode)) {
                if (dir_fd < 0 && errno != ENOENT)
                        fprintf(stderr, "%s: cannot open %s: %m\n", c.prog, dir_path);
                else if (previous)
                        fprintf(stderr,
                                "%s: previous terminated container \"%s\" in pod \"%s\" not "
                                "found\n",
                                c.prog, container, pod->name);
                else if (!isempty(waiting))
                        fprintf(stderr,
                                "%s: container \"%s\" in pod \"%s\" is waiting to start: %s\n",
                                c.prog, container, pod->name, waiting);
                else
                        fprintf(stderr,
                                "%s: no log file for container \"%s\" in pod \"%s\" (in %s)\n",
                                c.prog, container, pod->name, dir_path);
                return EXIT_ERROR;
        }
        if (r < 0) {
                fprintf(stderr, "%s: cannot list %s: %s\n", c.prog, dir_path, strerror(-r));
                return EXIT_ERROR;
        }

        if (x.tail >= 0) {
                x.buffering = true;
                if (x.tail > 0) {
                        x.ring = calloc((size_t)x.tail, sizeof(LogOut));
                        if (!x.ring)
                                goto oom;
                }
        }
        STRV_FOREACH(f, files) {
                r = read_file_at(&x, dir_fd, *f);
                if (r < 0)
                        goto fail;
        }
        char live_name[32];
        snprintf(live_name, sizeof(live_name), "%u.log", attempt);
        if (has_live) {
                live_fd = openat(dir_fd, live_name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (live_fd < 0 && errno != ENOENT) {
                        r = -errno;
                        goto fail;
                }
                if (live_fd >= 0) {
                        r = drain(&x, live_fd);
                        if (r < 0)
                                goto fail;
                }
        }
        /* When following, an unfinished last line may still be completed. */
        if (!follow_mode) {
                r = cri_log_reader_flush(&x.reader);
                if (r < 0)
                        goto fail;
        }
        r = ring_print(&x);
        if (r < 0)
                goto fail;
        if (follow_mode) {
                r = follow(&x, pod, dir_fd, dir_path, attempt, TAKE_FD(live_fd));
                if (r < 0)
                        goto fail;
        }
        if (fflush(stdout) != 0) {
                r = -errno ?: -EIO;
                goto fail;
        }
        return EXIT_OK;
fail:
        if (r != -EPIPE)
                fprintf(stderr, "%s: %s: %s\n", c.prog, dir_path, strerror(-r));
        return EXIT_ERROR;
oom:
        fprintf(stderr, "%s: out of memory\n", c.prog);
        return EXIT_ERROR;
}
