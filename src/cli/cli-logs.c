/* nanolet logs POD [-c C]: a container's CRI log files
 * (<pod-logs-dir>/<ns>_<pod>_<uid>/<container>/<attempt>.log, preceded by
 * its rotated <attempt>.log.<stamp>[.gz] files, oldest first, as
 * runtime/log-rotate.h lists them) printed as kubectl logs does: partial
 * records joined, stdout and stderr both to stdout. -f follows the file with
 * inotify, moves on to <attempt+1>.log when the container restarts, reopens
 * the file when it is rotated (after reading the renamed one to its end),
 * and ends when the pod's status file disappears (the pod was deleted). */
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
#include "cli-options.h"
#include "cli-logs.h"
#include "dirent-util.h"
#include "fileio.h"
#include "log-rotate.h"
#include "cli.h"
#include "string-util.h"
#include "strv.h"

#define FOLLOW_POLL_MS 1000

static void help(FILE *f) {
        fprintf(f, "Usage: nanolet logs [OPTIONS] POD [-c CONTAINER]\n\n"
                   "Print a container's logs. POD is NAME or NAMESPACE/NAME, with or without\n"
                   "the node suffix, or a container ID prefix (see nanolet ps).\n\n"
                   "      --all-containers  every container of the pod, init containers\n"
                   "                        first, one after the other (not with -f)\n"
                   "      --prefix          start each line with [pod/POD/CONTAINER]\n"
                   "  -c, --container NAME  container (default: the only one, or the\n"
                   "                        kubectl.kubernetes.io/default-container annotation)\n"
                   "  -f, --follow          keep printing new lines, across restarts, until\n"
                   "                        the pod is deleted or ^C\n"
                   "  -p, --previous        the previous attempt of the container\n"
                   "      --tail N          only the last N lines (-1: all)\n"
                   "      --since DURATION  only lines newer than this (5s, 2m, 3h)\n"
                   "      --since-time TIME only lines at or after this RFC3339 time\n"
                   "  -t, --timestamps      prefix each line with its RFC3339Nano "
                   "time\n" CLI_COMMON_HELP);
}

static int on_line(const CriLogLine *line, void *userdata);

int logs_context_init(LogsContext *x, FILE *out, long tail, bool timestamps, int64_t since) {
        *x = (LogsContext){ .out = out,
                            .tail = tail < 0 ? -1 : tail,
                            .timestamps = timestamps,
                            .since = since,
                            .buffering = tail >= 0 };
        if (tail > 0) {
                x->ring = calloc((size_t)tail, sizeof(LogOut));
                if (!x->ring)
                        return -ENOMEM;
        }
        cri_log_reader_init(&x->reader, on_line, x);
        return 0;
}

void logs_context_done(LogsContext *x) {
        if (x->ring)
                for (size_t i = 0; i < (size_t)x->tail; i++)
                        free(x->ring[i].data);
        free(x->ring);
        x->ring = NULL;
        cri_log_reader_deinit(&x->reader);
}

static int write_out(LogsContext *x, const char *data, size_t len) {
        if (fwrite(data, 1, len, x->out) != len)
                return -errno ?: -EIO;
        return 0;
}

static int on_line(const CriLogLine *line, void *userdata) {
        LogsContext *x = userdata;

        if (x->since != 0 && line->timestamp < x->since)
                return 0;
        size_t tlen = x->timestamps ? strlen(line->time_str) + 1 : 0;
        size_t plen = x->prefix ? strlen(x->prefix) : 0;
        if (!x->buffering) {
                if (plen > 0 && write_out(x, x->prefix, plen) < 0)
                        return -EPIPE;
                if (tlen > 0 &&
                    (write_out(x, line->time_str, tlen - 1) < 0 || write_out(x, " ", 1) < 0))
                        return -EPIPE;
                if (write_out(x, line->text, line->text_len) < 0 || write_out(x, "\n", 1) < 0)
                        return -EPIPE;
                return 0;
        }
        if (x->tail == 0)
                return 0;
        /* The ring keeps the formatted last `tail` lines. */
        size_t len = plen + tlen + line->text_len + 1;
        char *d = malloc(len);
        if (!d)
                return -ENOMEM;
        if (plen > 0)
                memcpy(d, x->prefix, plen);
        if (tlen > 0) {
                memcpy(d + plen, line->time_str, tlen - 1);
                d[plen + tlen - 1] = ' ';
        }
        memcpy(d + plen + tlen, line->text, line->text_len);
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
                int r = write_out(x, o->data, o->len);
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

static int feed(const char *data, size_t size, void *userdata) {
        LogsContext *x = userdata;
        return cri_log_reader_feed(&x->reader, data, size);
}

int logs_drain(LogsContext *x, int fd) {
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

/* What container_log_open() refuses: a name in the log directory that is
 * not a regular file, put there by a container writing to its own log
 * directory (a symlink to a host file, a FIFO, a directory). */
static bool planted(int r) {
        return r == -ELOOP || r == -EBADFD || r == -EISDIR;
}

static void skip_planted(LogsContext *x, const char *name, int r) {
        /* a name the container chose */
        _cleanup_free_ char *shown = str_escape(name, ESCAPE_QUOTE);
        x->n_skipped++;
        fprintf(stderr, "nanolet logs: skipping \"%s\": not a regular file (%s)\n",
                shown ? shown : "?", strerror(-r));
}

/* The live file, or -ENOENT when it is missing or not a regular file. */
static int open_live(LogsContext *x, int dir_fd, const char *name) {
        int fd = container_log_open(dir_fd, name);
        if (planted(fd)) {
                skip_planted(x, name, fd);
                return -ENOENT;
        }
        return fd;
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

int logs_read_attempt(LogsContext *x, int dir_fd, unsigned attempt, int *ret_live_fd,
                      unsigned *ret_n_files) {
        _cleanup_strv_free_ char **rotated = NULL;
        _cleanup_close_ int live = -EBADF;
        struct stat live_st = {};
        char base[32];
        unsigned n = 0;
        int r;

        snprintf(base, sizeof(base), "%u.log", attempt);
        /* The live file is opened before the rotated ones are listed: a
         * rotation in between then shows up as our live file in the list
         * (skipped below by its inode) instead of as lines nobody reads. */
        live = open_live(x, dir_fd, base);
        if (live < 0 && live != -ENOENT)
                return live;
        if (live >= 0 && fstat(live, &live_st) < 0)
                return -errno;
        r = container_log_list_rotated(dir_fd, base, &rotated);
        if (r < 0)
                return r;
        STRV_FOREACH(f, rotated) {
                struct stat st;
                if (live >= 0 && fstatat(dir_fd, *f, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    st.st_ino == live_st.st_ino && st.st_dev == live_st.st_dev)
                        continue;
                /* Removed by a rotation meanwhile: only the oldest lines go. */
                r = container_log_read(dir_fd, *f, feed, x);
                if (r == -ENOENT)
                        continue;
                if (planted(r)) {
                        skip_planted(x, *f, r);
                        continue;
                }
                if (r < 0)
                        return r;
                n++;
        }
        if (live >= 0) {
                n++;
                r = logs_drain(x, live);
                if (r < 0)
                        return r;
        }
        if (ret_live_fd)
                *ret_live_fd = TAKE_FD(live);
        if (ret_n_files)
                *ret_n_files = n;
        return 0;
}

int logs_open_dir(const char *pod_logs_dir, const char *namespace, const char *pod, const char *uid,
                  const char *container) {
        _cleanup_free_ char *rel = strprintf("%s_%s_%s/%s", namespace, pod, uid, container);
        _cleanup_close_ int root = open(pod_logs_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (!rel)
                return -ENOMEM;
        if (root < 0)
                return -errno;
        return openat_no_symlinks(root, rel, O_RDONLY | O_DIRECTORY, 0);
}

int logs_flush(LogsContext *x, bool final) {
        if (final) {
                int r = cri_log_reader_flush(&x->reader);
                if (r < 0)
                        return r;
        }
        return ring_print(x);
}

/* The smallest attempt above `attempt` with a live log file, if any. */
static bool find_next_attempt(int dir_fd, unsigned attempt, unsigned *ret) {
        _cleanup_closedir_ DIR *d = NULL;
        bool found = false;

        if (opendir_fd(dir_fd, NULL, 0, &d) < 0)
                return false;
        FOREACH_DIRENT(de, d) {
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

/* The rest of a file that gets no more lines (fd < 0: none open), and the
 * partial line it ended with. */
static int finish_file(LogsContext *x, int fd) {
        if (fd >= 0) {
                int r = logs_drain(x, fd);
                if (r < 0)
                        return r;
        }
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
        /* The directory already opened (without symlinks), not its path again. */
        char dir_fd_path[64];
        snprintf(dir_fd_path, sizeof(dir_fd_path), "/proc/self/fd/%d", dir_fd);
        if (inotify_add_watch(ifd, dir_fd_path,
                              IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE |
                                      IN_DELETE) < 0 ||
            inotify_add_watch(ifd, status_dir,
                              IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE) < 0)
                return -errno;

        snprintf(name, sizeof(name), "%u.log", attempt);
        for (;;) {
                if (fd < 0) {
                        /* A planted name is not reported again while following. */
                        fd = container_log_open(dir_fd, name);
                        if (fd < 0 && fd != -ENOENT && !planted(fd))
                                return fd;
                }
                if (fd >= 0) {
                        r = logs_drain(x, fd);
                        if (r < 0)
                                return r;
                }
                if (fflush(stdout) != 0)
                        return -errno ?: -EIO;

                unsigned next = 0;
                if (find_next_attempt(dir_fd, attempt, &next)) {
                        /* The container restarted: finish the old file, go on with the new. */
                        r = finish_file(x, fd);
                        if (r < 0)
                                return r;
                        fd = safe_close(fd);
                        attempt = next;
                        snprintf(name, sizeof(name), "%u.log", attempt);
                        continue;
                }
                if (fd >= 0) {
                        struct stat a, b;
                        if (fstat(fd, &a) == 0 &&
                            (fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
                             a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
                                /* Rotated (renamed, a new file takes its name): the
                                 * old one may have got lines after our last read. */
                                if (fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0) {
                                        /* One stream: a partial line may go on
                                         * in the new file. */
                                        r = logs_drain(x, fd);
                                        if (r < 0)
                                                return r;
                                        fd = safe_close(fd);
                                        continue;
                                }
                        }
                }
                if (access(pod->file, F_OK) < 0 && errno == ENOENT) {
                        /* The pod was deleted: print what is left and stop. */
                        r = finish_file(x, fd);
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

typedef struct LogsOptions {
        bool follow, previous, timestamps, prefix;
        long tail;
        int64_t since;
} LogsOptions;

/* One container's logs: EXIT_OK or EXIT_ERROR (reported). */
static int logs_container(const CliCommon *c, const CliPod *pod, const char *container, json_t *cs,
                          const LogsOptions *lo) {
        _cleanup_(logs_context_done) LogsContext x = {};
        _cleanup_free_ char *dir_path = NULL, *prefix = NULL;
        _cleanup_close_ int dir_fd = -EBADF, live_fd = -EBADF;
        bool follow_mode = lo->follow, previous = lo->previous;
        unsigned n_files = 0;
        int r;

        unsigned attempt = (unsigned)json_integer_value(cli_json_path(cs, "restartCount", NULL));
        const char *waiting = cli_json_str(cli_json_path(cs, "state", "waiting", NULL), "reason");
        if (previous) {
                if (attempt == 0) {
                        fprintf(stderr,
                                "%s: previous terminated container \"%s\" in pod \"%s\" not "
                                "found\n",
                                c->prog, container, pod->name);
                        return EXIT_ERROR;
                }
                attempt--;
                follow_mode = false; /* a previous attempt gets no new lines */
        }

        dir_path = strprintf("%s/%s_%s_%s/%s", c->pod_logs_dir, pod->namespace, pod->name, pod->uid,
                             container);
        if (!dir_path)
                goto oom;
        r = logs_context_init(&x, stdout, lo->tail, lo->timestamps, lo->since);
        if (r < 0)
                goto oom;
        if (lo->prefix) {
                /* kubectl's --prefix: the pod's name as the API shows it */
                prefix = strprintf("[pod/%s/%s] ", pod->name, container);
                if (!prefix)
                        goto oom;
                x.prefix = prefix;
        }
        dir_fd = logs_open_dir(c->pod_logs_dir, pod->namespace, pod->name, pod->uid, container);
        if (dir_fd >= 0)
                r = logs_read_attempt(&x, dir_fd, attempt, &live_fd, &n_files);
        if (dir_fd < 0 || (r >= 0 && n_files == 0 && !follow_mode)) {
                if (dir_fd < 0 && dir_fd != -ENOENT)
                        fprintf(stderr, "%s: cannot open %s: %s\n", c->prog, dir_path,
                                strerror(-dir_fd));
                else if (previous)
                        fprintf(stderr,
                                "%s: previous terminated container \"%s\" in pod \"%s\" not "
                                "found\n",
                                c->prog, container, pod->name);
                else if (!isempty(waiting))
                        fprintf(stderr,
                                "%s: container \"%s\" in pod \"%s\" is waiting to start: %s\n",
                                c->prog, container, pod->name, waiting);
                else
                        fprintf(stderr,
                                "%s: no log file for container \"%s\" in pod \"%s\" (in %s)\n",
                                c->prog, container, pod->name, dir_path);
                return EXIT_ERROR;
        }
        if (r < 0)
                goto fail;
        /* When following, an unfinished last line may still be completed. */
        r = logs_flush(&x, !follow_mode);
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
                fprintf(stderr, "%s: %s: %s\n", c->prog, dir_path, strerror(-r));
        return EXIT_ERROR;
oom:
        fprintf(stderr, "%s: out of memory\n", c->prog);
        return EXIT_ERROR;
}

int cli_logs(int argc, char **argv) {
        enum {
                ARG_TAIL = _CLI_ARG_COMMON_MAX,
                ARG_SINCE,
                ARG_SINCE_TIME,
                ARG_ALL_CONTAINERS,
                ARG_PREFIX,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "container", required_argument, NULL, 'c' },
                { "follow", no_argument, NULL, 'f' },
                { "previous", no_argument, NULL, 'p' },
                { "tail", required_argument, NULL, ARG_TAIL },
                { "since", required_argument, NULL, ARG_SINCE },
                { "since-time", required_argument, NULL, ARG_SINCE_TIME },
                { "timestamps", no_argument, NULL, 't' },
                { "all-containers", no_argument, NULL, ARG_ALL_CONTAINERS },
                { "prefix", no_argument, NULL, ARG_PREFIX },
                CLI_COMMON_OPTIONS,
                {},
        };
        _cleanup_(cli_pod_list_done) CliPodList l = {};
        const char *container = NULL;
        bool follow_mode = false, previous = false, timestamps = false, prefix = false;
        bool all_containers = false;
        long tail = -1;
        int64_t since = 0;
        const CliPod *pod;
        json_t *cs = NULL;
        CliCommon c;
        int opt, r;

        cli_options_start(&c, "nanolet logs");
        while ((opt = cli_option_next(&c, argc, argv, "hc:fpt", options, help)) > 0) {
                switch (opt) {
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
                        tail = v < 0 ? -1 : v;
                        break;
                }
                case ARG_SINCE: {
                        int64_t d;
                        if (cli_parse_go_duration(optarg, &d) < 0) {
                                fprintf(stderr, "%s: invalid --since \"%s\" (e.g. 10s, 5m, 1h)\n",
                                        c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        since = cli_now_nsec() - d;
                        break;
                }
                case ARG_SINCE_TIME:
                        if (timestamp_parse_rfc3339(optarg, strlen(optarg), &since) < 0) {
                                fprintf(stderr, "%s: invalid --since-time \"%s\" (RFC3339)\n",
                                        c.prog, optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 't': /* crictl logs -t */
                        timestamps = true;
                        break;
                case ARG_ALL_CONTAINERS:
                        all_containers = true;
                        break;
                case ARG_PREFIX:
                        prefix = true;
                        break;
                default:
                        return EXIT_USAGE;
                }
        }
        if (cli_options_end(&c, opt, argc, argv, CLI_OPERANDS_ANY, &r))
                return r;
        if (optind >= argc) {
                fprintf(stderr, "%s: no POD given (nanolet logs POD, see --help)\n", c.prog);
                return EXIT_USAGE;
        }
        const char *pod_arg = argv[optind++];
        if (optind < argc && !container)
                container = argv[optind++]; /* kubectl logs POD CONTAINER */
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument \"%s\"\n", c.prog, argv[optind]);
                return EXIT_USAGE;
        }

        if (all_containers && (container || follow_mode)) {
                fprintf(stderr,
                        "%s: --all-containers prints every container one after the other: "
                        "leave out %s (follow one container with -f -c NAME)\n",
                        c.prog, container ? "the container name" : "-f");
                return EXIT_USAGE;
        }
        if (cli_pods_load_or_report(&c, &l) < 0)
                return EXIT_ERROR;
        if (all_containers) {
                _cleanup_free_ char *msg = NULL;
                if (cli_pod_resolve(&l, pod_arg, &pod, &msg) < 0) {
                        fprintf(stderr, "%s: %s\n", c.prog, msg ? msg : "pod not found");
                        return EXIT_ERROR;
                }
        } else if (cli_container_find(&c, &l, pod_arg, &container, &pod, &cs) < 0)
                return EXIT_ERROR;
        LogsOptions lo = { .follow = follow_mode,
                           .previous = previous,
                           .timestamps = timestamps,
                           .prefix = prefix,
                           .tail = tail,
                           .since = since };

        if (!all_containers)
                return logs_container(&c, pod, container, cs, &lo);

        /* kubectl logs --all-containers: init containers, then the others,
         * each to its end; a container with nothing to show is reported and
         * the rest still printed. */
        int ret = EXIT_OK;
        static const char *const lists[] = { "initContainers", "containers" };
        for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
                size_t j;
                json_t *spec;
                json_array_foreach(cli_json_path(pod->json, "spec", lists[k], NULL), j, spec) {
                        const char *name = cli_json_str(spec, "name");
                        json_t *st = NULL;
                        if (!name || cli_pod_find_container(pod->json, name, NULL, &st, NULL) < 0)
                                continue;
                        if (logs_container(&c, pod, name, st, &lo) != EXIT_OK)
                                ret = EXIT_ERROR;
                }
        }
        return ret;
}
