/* Directory source (docs/manifests.md): the manifests in --pod-manifest-path.
 *
 * It owns the inotify watch on the directory, the periodic rescan and the
 * removal debounce, and hands every file's objects (or errors) to the
 * PodConfig as one origin per file. Timing rules:
 *   - a completed write or a moved-in file is read and committed at once: it
 *     is on the pod start-latency path;
 *   - a removal waits `debounce` for the same name to come back (editors
 *     save by rename), then the file is checked again, so a save is one
 *     UPDATE and never REMOVE+ADD;
 *   - a rescan every check_frequency catches anything inotify missed.
 *
 * The inotify instance is a plain fd on an io source rather than an event
 * inotify source: while the directory is missing there is nothing to watch
 * but the instance must stay, and reading the fd ourselves tells where one
 * read's batch of events ends, which is where we commit (a rename's
 * MOVED_FROM/MOVED_TO pair lands in one commit). */
#include "source.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libgen.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "fileio.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

#define DIR_SOURCE_DEFAULT_CHECK_FREQUENCY (20 * USEC_PER_SEC)
#define DIR_SOURCE_DEFAULT_DEBOUNCE (500 * USEC_PER_MSEC)
#define DIR_SOURCE_MAX_DEBOUNCE (1 * USEC_PER_SEC)
#define DIR_SOURCE_DEFAULT_MAX_FILE_SIZE ((size_t)10 * 1024 * 1024)

/* The changes docs/manifests.md names. IN_CREATE is added only to notice a symlink placed into
 * the directory at once (a symlink produces no IN_CLOSE_WRITE); created
 * regular files are still read on their IN_CLOSE_WRITE, never half-written. */
#define DIR_WATCH_MASK                                                                             \
        (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF |               \
         IN_MOVE_SELF | IN_ATTRIB | IN_CREATE | IN_ONLYDIR)
/* While the directory is missing: its parent, for the directory's return. */
#define PARENT_WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ONLYDIR)

typedef struct DirFile {
        char *name;      /* entry name in the directory */
        uint64_t hash;   /* of name, for the index */
        char *path;      /* the origin: directory "/" name */
        bool in_config;  /* PodConfig has an origin for it (objects or an error) */
        bool stat_valid; /* the identity below is of the last read */
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime, ctime;
        usec_t remove_at;      /* CLOCK_MONOTONIC deadline of a pending removal check; 0 = none */
        uint32_t cookie;       /* IN_MOVED_FROM cookie while remove_at is set */
        char *logged_error;    /* the error text last logged: each distinct error is logged once */
        char *logged_warnings; /* the same for warnings of a valid manifest */
        bool seen;             /* scratch for rescans */
} DirFile;

struct DirSource {
        Event *event;
        PodConfig *config;
        char *dir;      /* the directory read */
        char *only;     /* single-file mode: the one name read in dir; NULL = all */
        char *parent;   /* dirname(dir), watched while dir is missing */
        char *dir_base; /* basename(dir) */
        char *node_name;
        usec_t check_frequency, debounce;
        size_t max_file_size;
        bool allow_insecure;

        int inotify_fd; /* owned by inotify_source */
        EventSource *inotify_source;
        int dir_wd, parent_wd; /* -1 = not watched */
        EventSource *rescan_timer;
        EventSource *debounce_timer;

        DirFile **files; /* sorted by name: removals and debounces walk in a stable order */
        size_t n_files;
        /* Open-addressing hash of files by name (linear probing, power-of-two
         * size, at most half full): a periodic rescan looks every entry up, and
         * a bsearch over 1,000 names costs ten strcmp per entry. */
        DirFile **index;
        size_t index_size;
        char **ignored_logged; /* ignored names already logged */
        bool missing_logged;
        bool have_dir_mode; /* last seen owner/mode of the directory, to re-check trust */
        uid_t dir_uid;
        mode_t dir_mode;
};

/* ---- name filter and trust ---- */

int manifest_filename_classify(const char *name) {
        /* The ignore rules come first: "etcd.yaml.bak", "etcd.yaml~",
         * ".etcd.yaml.swp" and "etcd.yaml.dpkg-old" carry a manifest
         * extension somewhere but are backups or leftovers, which kubelet
         * famously started as pods (k8s #129364). The patterns are
         * docs/manifests.md's globs taken literally, so "a.rpmnew.yaml" is ignored too.
         *
         * Matching ignores case: "etcd.YAML" is read, since its author
         * clearly meant a manifest and silently skipping it would be a
         * surprise (kubelet reads it too), and "ETCD.YAML.BAK" stays a
         * backup. */
        static const char *const ignored[] = {
                ".*", "*~", "*.swp", "*.bak", "*.orig", "*.dpkg-*", "*.rpm*",
        };
        static const char *const extensions[] = { ".yaml", ".yml", ".json" };

        if (isempty(name) || streq(name, ".") || streq(name, ".."))
                return -1;
        for (size_t i = 0; i < ELEMENTSOF(ignored); i++)
                if (fnmatch(ignored[i], name, FNM_CASEFOLD) == 0)
                        return 0;
        size_t l = strlen(name);
        for (size_t i = 0; i < ELEMENTSOF(extensions); i++) {
                size_t e = strlen(extensions[i]);
                /* a bare ".yaml" is a dotfile, caught above */
                if (l > e && strcasecmp(name + l - e, extensions[i]) == 0)
                        return 1;
        }
        return -1;
}

int manifest_path_check_trust(int fd, const char *path, char **ret_reason) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;

        char *reason = NULL;
        if (st.st_uid != 0)
                reason = strprintf("%s is owned by uid %u, not by root; a manifest runs code as "
                                   "root (use --allow-insecure-manifests to override)",
                                   path, (unsigned)st.st_uid);
        else if (st.st_mode & (S_IWGRP | S_IWOTH))
                reason = strprintf("%s is %s-writable (mode %04o); a manifest runs code as root "
                                   "(use --allow-insecure-manifests to override)",
                                   path, st.st_mode & S_IWOTH ? "world" : "group",
                                   (unsigned)(st.st_mode & 07777));
        else {
                if (ret_reason)
                        *ret_reason = NULL;
                return 0;
        }
        if (!reason)
                return -ENOMEM;
        if (ret_reason)
                *ret_reason = reason;
        else
                free(reason);
        return -EPERM;
}

/* ---- files ---- */

static DirFile *dir_file_free(DirFile *f) {
        if (!f)
                return NULL;
        free(f->name);
        free(f->path);
        free(f->logged_error);
        free(f->logged_warnings);
        free(f);
        return NULL;
}

static uint64_t name_hash(const char *name) {
        /* FNV-1a: names come from the local directory, whose writer is
         * trusted (root) anyway, so no keyed hash is needed. */
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (const unsigned char *p = (const unsigned char *)name; *p; p++)
                h = (h ^ *p) * UINT64_C(0x100000001b3);
        return h;
}

static size_t index_slot(const DirSource *s, const char *name, uint64_t h) {
        size_t mask = s->index_size - 1;
        size_t i = (size_t)h & mask;
        while (s->index[i] && (s->index[i]->hash != h || !streq(s->index[i]->name, name)))
                i = (i + 1) & mask;
        return i;
}

static DirFile *dir_source_find_file(DirSource *s, const char *name) {
        if (s->index_size == 0)
                return NULL;
        return s->index[index_slot(s, name, name_hash(name))];
}

/* Makes room for one more file: the table stays at most half full. */
static int index_reserve(DirSource *s) {
        if ((s->n_files + 1) * 2 <= s->index_size)
                return 0;
        size_t size = s->index_size ? s->index_size * 2 : 64;
        DirFile **n = calloc(size, sizeof *n);
        if (!n)
                return -ENOMEM;
        free(s->index);
        s->index = n;
        s->index_size = size;
        for (size_t i = 0; i < s->n_files; i++)
                s->index[index_slot(s, s->files[i]->name, s->files[i]->hash)] = s->files[i];
        return 0;
}

static void index_remove(DirSource *s, DirFile *f) {
        if (s->index_size == 0)
                return;
        size_t mask = s->index_size - 1;
        size_t i = index_slot(s, f->name, f->hash);
        if (s->index[i] != f)
                return;
        /* Backward-shift deletion: every later entry of the probe run that
         * could sit in the hole moves into it, so lookups need no tombstones. */
        s->index[i] = NULL;
        for (size_t j = (i + 1) & mask; s->index[j]; j = (j + 1) & mask) {
                size_t home = (size_t)s->index[j]->hash & mask;
                /* j's entry may move to i unless its home lies cyclically in (i, j]. */
                bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
                if (stays)
                        continue;
                s->index[i] = s->index[j];
                s->index[j] = NULL;
                i = j;
        }
}

/* The index in the sorted array where name is, or where it would be inserted. */
static size_t dir_source_file_index(const DirSource *s, const char *name, bool *ret_found) {
        size_t lo = 0, hi = s->n_files;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(s->files[mid]->name, name);
                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}

static int dir_source_add_file(DirSource *s, const char *name, DirFile **ret) {
        DirFile *known = dir_source_find_file(s, name);
        if (known) {
                *ret = known;
                return 0;
        }
        bool found;
        size_t at = dir_source_file_index(s, name, &found);
        assert(!found);
        if (index_reserve(s) < 0)
                return -ENOMEM;
        DirFile *f = calloc(1, sizeof *f);
        if (!f)
                return -ENOMEM;
        f->name = strdup(name);
        f->hash = name_hash(name);
        f->path = strprintf("%s/%s", streq(s->dir, "/") ? "" : s->dir, name);
        DirFile **n = reallocarray(s->files, s->n_files + 1, sizeof *n);
        if (!f->name || !f->path || !n) {
                dir_file_free(f);
                return -ENOMEM;
        }
        s->files = n;
        memmove(s->files + at + 1, s->files + at, sizeof *n * (s->n_files - at));
        s->files[at] = f;
        s->n_files++;
        s->index[index_slot(s, f->name, f->hash)] = f;
        *ret = f;
        return 0;
}

/* Keeps the order; the callers that drop while walking walk backwards. */
static void dir_source_drop_file(DirSource *s, DirFile *f) {
        bool found;
        size_t i = dir_source_file_index(s, f->name, &found);
        if (found && s->files[i] == f) {
                memmove(s->files + i, s->files + i + 1, sizeof *s->files * (s->n_files - i - 1));
                s->n_files--;
        }
        index_remove(s, f);
        dir_file_free(f);
}

static bool dir_file_same_stat(const DirFile *f, const struct stat *st) {
        return f->stat_valid && f->dev == st->st_dev && f->ino == st->st_ino &&
               f->size == st->st_size && f->mtime.tv_sec == st->st_mtim.tv_sec &&
               f->mtime.tv_nsec == st->st_mtim.tv_nsec && f->ctime.tv_sec == st->st_ctim.tv_sec &&
               f->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

static void dir_file_remember_stat(DirFile *f, const struct stat *st) {
        f->stat_valid = true;
        f->dev = st->st_dev;
        f->ino = st->st_ino;
        f->size = st->st_size;
        f->mtime = st->st_mtim;
        f->ctime = st->st_ctim;
}

static void dir_source_log_ignored(DirSource *s, const char *name) {
        if (strv_contains(s->ignored_logged, name))
                return;
        log_info("Ignoring \"%s/%s\": backup, editor or package-manager file, not a manifest.",
                 s->dir, name);
        /* On ENOMEM it is simply logged again next time. */
        (void)strv_extend(&s->ignored_logged, name);
}

/* ---- timers ---- */

static int dir_source_on_debounce(EventSource *es, usec_t now, void *userdata);

static int dir_source_arm_debounce(DirSource *s) {
        usec_t next = USEC_INFINITY;
        for (size_t i = 0; i < s->n_files; i++)
                if (s->files[i]->remove_at > 0 && s->files[i]->remove_at < next)
                        next = s->files[i]->remove_at;

        if (next == USEC_INFINITY) {
                if (s->debounce_timer)
                        (void)event_source_set_enabled(s->debounce_timer, false);
                return 0;
        }
        if (!s->debounce_timer)
                return event_add_time(s->event, &s->debounce_timer, next, 0, dir_source_on_debounce,
                                      s);
        int r = event_source_set_time(s->debounce_timer, next);
        if (r < 0)
                return r;
        return event_source_set_enabled(s->debounce_timer, true);
}

/* Starts the debounce for a file that is gone (deleted, moved away, or not
 * found by a rescan). */
static void dir_source_schedule_removal(DirSource *s, DirFile *f, uint32_t cookie) {
        if (!f->in_config) {
                /* nothing to take back */
                dir_source_drop_file(s, f);
                return;
        }
        if (f->remove_at == 0)
                f->remove_at = now_usec(CLOCK_MONOTONIC) + s->debounce;
        if (cookie)
                f->cookie = cookie;
        f->stat_valid = false;
}

/* ---- reading one file ---- */

static void dir_source_log_error(DirFile *f, const Diagnostics *d) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0, cap = 0;
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (!line || strbuf_append(&text, &len, &cap, line, strlen(line)) < 0 ||
                    strbuf_append(&text, &len, &cap, "\n", 1) < 0) {
                        (void)log_oom();
                        return;
                }
        }
        if (text && f->logged_error && streq(text, f->logged_error))
                return;

        log_warning("Manifest \"%s\" is not applied (its last valid version, if any, stays "
                    "in effect):",
                    f->path);
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (line)
                        log_warning("  %s", line);
        }
        free(f->logged_error);
        f->logged_error = TAKE_PTR(text);
}

/* Warnings of a valid manifest (unknown fields, ...): once per distinct set. */
static void dir_source_log_warnings(DirFile *f, const Diagnostics *d) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0, cap = 0;
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (!line || strbuf_append(&text, &len, &cap, line, strlen(line)) < 0 ||
                    strbuf_append(&text, &len, &cap, "\n", 1) < 0)
                        return;
        }
        if (!text || (f->logged_warnings && streq(text, f->logged_warnings)))
                return;
        for (size_t i = 0; i < d->n; i++) {
                _cleanup_free_ char *line = diag_to_string(&d->items[i]);
                if (line)
                        log_warning("%s", line);
        }
        free(f->logged_warnings);
        f->logged_warnings = TAKE_PTR(text);
}

static int dir_source_file_error(DirSource *s, DirFile *f, const Diagnostics *d) {
        dir_source_log_error(f, d);
        int r = pod_config_set_origin_error(s->config, "file", f->path, d);
        if (r < 0)
                return log_error_errno(r, "Failed to record the error of \"%s\": %m", f->path);
        f->in_config = true;
        return 0;
}

static int dir_source_file_errorf(DirSource *s, DirFile *f, const char *fmt, ...) _printf_(3, 4);
static int dir_source_file_errorf(DirSource *s, DirFile *f, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *msg = strvprintf(fmt, ap);
        va_end(ap);
        if (!msg)
                return log_oom();

        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        diagnostics_add(&d, DIAG_ERROR, f->path, 0, 0, NULL, "%s", msg);
        return dir_source_file_error(s, f, &d);
}

/* Reads f through dfd (the directory, already trust-checked: dir_reason is
 * the refusal or NULL) and hands the result to the PodConfig. A file that is
 * gone starts its removal debounce instead. */
static int dir_source_read_file(DirSource *s, int dfd, const char *dir_reason, DirFile *f) {
        /* Symlinks are followed (kubeadm-style setups link manifests in);
         * the trust check applies to the target through fstat() of the
         * opened fd, so there is no window between check and read.
         * O_NONBLOCK: a FIFO named x.yaml must not block the loop. */
        _cleanup_close_ int fd = openat(dfd, f->name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) {
                        dir_source_schedule_removal(s, f, 0);
                        return 0;
                }
                return dir_source_file_errorf(s, f, "cannot open: %s", strerror(errno));
        }

        struct stat st;
        if (fstat(fd, &st) < 0)
                return dir_source_file_errorf(s, f, "cannot stat: %s", strerror(errno));
        if (!S_ISREG(st.st_mode)) {
                /* Subdirectories and special files are not manifests. */
                log_debug("Skipping \"%s\": not a regular file.", f->path);
                dir_source_schedule_removal(s, f, 0);
                return 0;
        }

        /* It exists: any pending removal is moot (the editor's save by
         * rename is complete). */
        f->remove_at = 0;
        f->cookie = 0;
        dir_file_remember_stat(f, &st);

        if (dir_reason)
                return dir_source_file_errorf(s, f, "refused: %s", dir_reason);
        if (!s->allow_insecure) {
                _cleanup_free_ char *reason = NULL;
                int r = manifest_path_check_trust(fd, f->path, &reason);
                if (r == -EPERM)
                        return dir_source_file_errorf(s, f, "refused: %s", reason);
                if (r < 0)
                        return dir_source_file_errorf(s, f, "cannot check ownership: %s",
                                                      strerror(-r));
        }
        if ((uint64_t)st.st_size > s->max_file_size)
                return dir_source_file_errorf(s, f,
                                              "file is %llu bytes, larger than the limit of %zu "
                                              "bytes",
                                              (unsigned long long)st.st_size, s->max_file_size);

        _cleanup_free_ char *buf = NULL;
        size_t size = 0;
        int r = read_full_fd(fd, s->max_file_size, &buf, &size);
        if (r == -EFBIG)
                return dir_source_file_errorf(s, f, "file is larger than the limit of %zu bytes",
                                              s->max_file_size);
        if (r < 0)
                return dir_source_file_errorf(s, f, "cannot read: %s", strerror(-r));

        _cleanup_free_ char *source_id = strprintf("file:%s", f->path);
        if (!source_id)
                return log_oom();
        ManifestParseOptions opts = {
                .filename = f->path,
                .node_name = s->node_name,
                .source_id = source_id,
                .config_source = "file",
                .seen = now_usec(CLOCK_REALTIME),
        };
        opts.limits.max_input = s->max_file_size;

        _cleanup_diagnostics_ Diagnostics d;
        diagnostics_init(&d);
        ManifestObject **objs = NULL;
        size_t n = 0;
        r = source_parse_manifest(buf, size, &opts, &objs, &n, &d);
        if (r < 0) {
                if (d.n_errors == 0)
                        diagnostics_add(&d, DIAG_ERROR, f->path, 0, 0, NULL, "cannot parse: %s",
                                        strerror(-r));
                return dir_source_file_error(s, f, &d);
        }

        if (d.n_warnings > 0)
                dir_source_log_warnings(f, &d);

        r = pod_config_set_origin(s->config, "file", f->path, objs, n);
        manifest_objects_free(objs, n);
        if (r < 0)
                return log_error_errno(r, "Failed to apply \"%s\": %m", f->path);
        f->in_config = true;
        if (f->logged_error) {
                log_info("Manifest \"%s\" is valid again.", f->path);
                free(f->logged_error);
                f->logged_error = NULL;
        }
        log_debug("Read \"%s\": %zu object(s).", f->path, n);
        return 0;
}

/* ---- directory ---- */

/* Opens the directory and checks its trust. *ret_reason is the refusal (or
 * NULL). -ENOENT when it does not exist. */
static int dir_source_open_dir(DirSource *s, int *ret_fd, char **ret_reason) {
        _cleanup_close_ int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;

        struct stat st;
        if (fstat(dfd, &st) < 0)
                return -errno;
        s->have_dir_mode = true;
        s->dir_uid = st.st_uid;
        s->dir_mode = st.st_mode;

        *ret_reason = NULL;
        if (!s->allow_insecure) {
                int r = manifest_path_check_trust(dfd, s->dir, ret_reason);
                if (r < 0 && r != -EPERM)
                        return r;
        }
        *ret_fd = TAKE_FD(dfd);
        return 0;
}

static void dir_source_watch(DirSource *s, bool dir_exists) {
        if (s->inotify_fd < 0)
                return;
        if (dir_exists) {
                if (s->dir_wd < 0) {
                        s->dir_wd = inotify_add_watch(s->inotify_fd, s->dir, DIR_WATCH_MASK);
                        if (s->dir_wd < 0)
                                log_warning_errno(errno,
                                                  "Cannot watch \"%s\" (changes are seen at the "
                                                  "next rescan): %m",
                                                  s->dir);
                }
                if (s->dir_wd >= 0 && s->parent_wd >= 0) {
                        (void)inotify_rm_watch(s->inotify_fd, s->parent_wd);
                        s->parent_wd = -1;
                }
        } else if (s->parent_wd < 0) {
                /* Cheap way to notice the directory's creation at once; if the
                 * parent is missing too, the rescan timer retries. */
                s->parent_wd = inotify_add_watch(s->inotify_fd, s->parent, PARENT_WATCH_MASK);
        }
}

static int dir_source_commit(DirSource *s) {
        int r = dir_source_arm_debounce(s);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the removal timer for \"%s\": %m", s->dir);
        r = pod_config_commit(s->config);
        if (r < 0)
                return log_error_errno(r, "Failed to apply manifest changes from \"%s\": %m",
                                       s->dir);
        return 0;
}

static int dir_source_rescan_full(DirSource *s, bool force) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *dir_reason = NULL;

        bool had_mode = s->have_dir_mode;
        uid_t old_uid = s->dir_uid;
        mode_t old_mode = s->dir_mode;

        int r = dir_source_open_dir(s, &dfd, &dir_reason);
        if (r == -ENOENT || r == -ENOTDIR) {
                /* A missing directory is an empty set: everything goes, after
                 * the debounce (it may be being replaced). */
                if (!s->missing_logged) {
                        log_warning("Manifest directory \"%s\" does not exist; waiting for it.",
                                    s->dir);
                        s->missing_logged = true;
                }
                s->have_dir_mode = false;
                dir_source_watch(s, false);
                for (size_t i = s->n_files; i > 0; i--)
                        dir_source_schedule_removal(s, s->files[i - 1], 0);
                return dir_source_commit(s);
        }
        if (r < 0) {
                /* Could be transient (EMFILE, EACCES while being fixed): keep
                 * what we have rather than dropping every pod. */
                log_warning_errno(r,
                                  "Cannot open manifest directory \"%s\", keeping the current "
                                  "pods: %m",
                                  s->dir);
                return 0;
        }
        if (s->missing_logged) {
                log_info("Manifest directory \"%s\" appeared.", s->dir);
                s->missing_logged = false;
        }
        dir_source_watch(s, true);

        /* The directory's trust applies to every file: re-read all when it
         * changed (the watch reports IN_ATTRIB too, this covers a dropped
         * watch). */
        if (had_mode && (old_uid != s->dir_uid || old_mode != s->dir_mode))
                force = true;

        _cleanup_closedir_ DIR *d = NULL;
        r = opendir_fd(dfd, NULL, 0, &d);
        if (r < 0)
                return log_error_errno(r, "Failed to read \"%s\": %m", s->dir);

        for (size_t i = 0; i < s->n_files; i++)
                s->files[i]->seen = false;
        char **ignored_seen = NULL;

        for (;;) {
                struct dirent *de = readdir_no_dot(d);
                if (!de) {
                        if (errno != 0) {
                                /* Partial listing: do not take the unseen as gone. */
                                log_warning_errno(errno, "Failed to list \"%s\": %m", s->dir);
                                strv_free(ignored_seen);
                                return dir_source_commit(s);
                        }
                        break;
                }
                /* A known name is a manifest name (the classification
                 * depends on the name only): it is not matched again. */
                DirFile *f = dir_source_find_file(s, de->d_name);
                if (s->only) {
                        if (!streq(de->d_name, s->only))
                                continue;
                } else if (!f) {
                        int c = manifest_filename_classify(de->d_name);
                        if (c == 0) {
                                dir_source_log_ignored(s, de->d_name);
                                (void)strv_extend(&ignored_seen, de->d_name);
                        }
                        if (c <= 0)
                                continue;
                }

                struct stat st;
                if (fstatat(dfd, de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode)) {
                        /* A dangling symlink, a subdirectory or a special
                         * file; if it was a manifest before, it is gone. */
                        continue;
                }

                if (!f) {
                        r = dir_source_add_file(s, de->d_name, &f);
                        if (r < 0)
                                return log_oom();
                }
                f->seen = true;
                if (force || !dir_file_same_stat(f, &st))
                        (void)dir_source_read_file(s, dfd, dir_reason, f);
                else
                        f->remove_at = 0; /* moved away and back unchanged */
        }

        /* Prune the "already logged" set to what is there, so it stays bounded
         * and a backup file that comes back is mentioned again. */
        strv_free(s->ignored_logged);
        s->ignored_logged = ignored_seen;

        for (size_t i = s->n_files; i > 0; i--) {
                DirFile *f = s->files[i - 1];
                if (!f->seen)
                        dir_source_schedule_removal(s, f, 0);
        }
        return dir_source_commit(s);
}

int dir_source_rescan(DirSource *s) {
        assert(s);
        return dir_source_rescan_full(s, false);
}

/* The debounce is over for some files: whatever is still gone is removed,
 * whatever came back is read again if it changed. */
static int dir_source_apply_removals(DirSource *s, usec_t now, uint32_t cookie) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *dir_reason = NULL;
        bool dir_opened = false;

        for (size_t i = s->n_files; i > 0; i--) {
                DirFile *f = s->files[i - 1];
                if (f->remove_at == 0)
                        continue;
                if (cookie ? f->cookie != cookie : f->remove_at > now)
                        continue;

                if (!dir_opened) {
                        dir_opened = true;
                        if (dir_source_open_dir(s, &dfd, &dir_reason) < 0)
                                dfd = -EBADF;
                }
                struct stat st;
                if (dfd >= 0 && fstatat(dfd, f->name, &st, 0) >= 0 && S_ISREG(st.st_mode)) {
                        if (dir_file_same_stat(f, &st))
                                f->remove_at = 0;
                        else
                                (void)dir_source_read_file(s, dfd, dir_reason, f);
                        if (f->remove_at == 0)
                                continue;
                        /* read_file found it gone again: fall through and remove */
                }
                log_info("Manifest \"%s\" was removed.", f->path);
                int r = pod_config_remove_origin(s->config, "file", f->path);
                if (r < 0)
                        log_error_errno(r, "Failed to forget \"%s\": %m", f->path);
                dir_source_drop_file(s, f);
        }
        return 0;
}

static int dir_source_on_debounce(EventSource *es, usec_t now, void *userdata) {
        DirSource *s = userdata;
        (void)dir_source_apply_removals(s, now_usec(CLOCK_MONOTONIC), 0);
        (void)dir_source_commit(s);
        return 0;
}

static int dir_source_on_rescan_timer(EventSource *es, usec_t now, void *userdata) {
        DirSource *s = userdata;
        (void)dir_source_rescan_full(s, false);
        int r = event_source_set_time(es, now_usec(CLOCK_MONOTONIC) + s->check_frequency);
        if (r >= 0)
                r = event_source_set_enabled(es, true);
        if (r < 0)
                log_error_errno(r, "Failed to re-arm the rescan of \"%s\": %m", s->dir);
        return 0;
}

/* ---- inotify ---- */

typedef struct InotifyBatch {
        bool rescan, force;
        int dfd; /* opened lazily for the batch's reads */
        bool dir_opened;
        char *dir_reason;
} InotifyBatch;

static void dir_source_batch_read(DirSource *s, InotifyBatch *b, DirFile *f) {
        if (!b->dir_opened) {
                b->dir_opened = true;
                int r = dir_source_open_dir(s, &b->dfd, &b->dir_reason);
                if (r < 0) {
                        /* The directory itself went away: the rescan sorts it out. */
                        b->dfd = -EBADF;
                        b->rescan = true;
                }
        }
        if (b->dfd >= 0)
                (void)dir_source_read_file(s, b->dfd, b->dir_reason, f);
}

static void dir_source_handle_inotify(DirSource *s, const struct inotify_event *ev,
                                      InotifyBatch *b) {
        if (ev->mask & IN_Q_OVERFLOW) {
                log_warning("Inotify queue overflow on \"%s\"; rescanning.", s->dir);
                b->rescan = true;
                return;
        }

        if (s->parent_wd >= 0 && ev->wd == s->parent_wd) {
                if (ev->mask & IN_IGNORED)
                        s->parent_wd = -1;
                /* The directory (re)appeared, or the parent went away. */
                if ((ev->mask & IN_IGNORED) || (ev->len > 0 && streq(ev->name, s->dir_base)))
                        b->rescan = true;
                return;
        }

        if (s->dir_wd < 0 || ev->wd != s->dir_wd)
                return; /* a watch we dropped already */

        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) {
                /* The directory is gone or elsewhere: drop the watch and look
                 * again by path. */
                if (!(ev->mask & IN_IGNORED))
                        (void)inotify_rm_watch(s->inotify_fd, s->dir_wd);
                s->dir_wd = -1;
                b->rescan = true;
                return;
        }

        if (ev->len == 0 || ev->name[0] == 0) {
                /* On the directory itself: its owner or mode may have changed. */
                if (ev->mask & IN_ATTRIB) {
                        b->rescan = true;
                        b->force = true;
                }
                return;
        }

        const char *name = ev->name;
        if (s->only) {
                if (!streq(name, s->only))
                        return;
        } else {
                int c = manifest_filename_classify(name);
                if (c == 0)
                        dir_source_log_ignored(s, name);
                if (c <= 0)
                        return;
        }

        if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
                DirFile *f = dir_source_find_file(s, name);
                if (f)
                        dir_source_schedule_removal(s, f,
                                                    (ev->mask & IN_MOVED_FROM) ? ev->cookie : 0);
                return;
        }

        if (ev->mask & IN_CREATE) {
                /* Only symlinks: regular files are read on IN_CLOSE_WRITE. */
                struct stat st;
                _cleanup_free_ char *p = strprintf("%s/%s", s->dir, name);
                if (!p || lstat(p, &st) < 0 || !S_ISLNK(st.st_mode))
                        return;
        }

        if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO | IN_ATTRIB | IN_CREATE)) {
                DirFile *f;
                if (dir_source_add_file(s, name, &f) < 0) {
                        (void)log_oom();
                        b->rescan = true;
                        return;
                }
                dir_source_batch_read(s, b, f);

                /* The other half of a rename inside the directory: that name
                 * is gone for good, apply it in this same commit so the move
                 * is one UPDATE. */
                if ((ev->mask & IN_MOVED_TO) && ev->cookie != 0)
                        (void)dir_source_apply_removals(s, 0, ev->cookie);
        }
}

static int dir_source_on_inotify(EventSource *es, int fd, uint32_t revents, void *userdata) {
        DirSource *s = userdata;
        InotifyBatch b = { .dfd = -EBADF };
        /* Large enough for many events per read() so a burst is one batch. */
        alignas(struct inotify_event) char buf[64 * 1024];

        for (;;) {
                ssize_t n = read(fd, buf, sizeof buf);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                log_warning_errno(errno,
                                                  "Failed to read inotify events for "
                                                  "\"%s\": %m",
                                                  s->dir);
                        break;
                }
                if (n == 0)
                        break;
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)p;
                        dir_source_handle_inotify(s, ev, &b);
                        p += sizeof *ev + ev->len;
                }
        }

        safe_close(b.dfd);
        free(b.dir_reason);
        /* Failures are logged; the source keeps going (the next rescan retries). */
        if (b.rescan)
                (void)dir_source_rescan_full(s, b.force);
        else
                (void)dir_source_commit(s);
        return 0;
}

/* ---- lifecycle ---- */

int dir_source_new(DirSource **ret, Event *e, PodConfig *config, const DirSourceOptions *opts) {
        assert(ret && e && config && opts);
        if (isempty(opts->path) || isempty(opts->node_name))
                return -EINVAL;

        _cleanup_(dir_source_freep) DirSource *s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->event = e;
        s->config = config;
        s->inotify_fd = -EBADF;
        s->dir_wd = s->parent_wd = -1;
        s->check_frequency =
                opts->check_frequency ? opts->check_frequency : DIR_SOURCE_DEFAULT_CHECK_FREQUENCY;
        s->debounce = opts->debounce ? MIN(opts->debounce, DIR_SOURCE_MAX_DEBOUNCE)
                                     : DIR_SOURCE_DEFAULT_DEBOUNCE;
        s->max_file_size =
                opts->max_file_size ? opts->max_file_size : DIR_SOURCE_DEFAULT_MAX_FILE_SIZE;
        s->allow_insecure = opts->allow_insecure;
        s->node_name = strdup(opts->node_name);
        if (!s->node_name)
                return -ENOMEM;

        _cleanup_free_ char *path = strdup(opts->path);
        if (!path)
                return -ENOMEM;
        size_t l = strlen(path);
        while (l > 1 && path[l - 1] == '/')
                path[--l] = 0;

        /* A directory, or one file. A path that does not exist yet is taken
         * as a file if its name is a manifest name, else as a directory. */
        struct stat st;
        bool single;
        if (stat(path, &st) >= 0)
                single = !S_ISDIR(st.st_mode);
        else {
                _cleanup_free_ char *b = strdup(path);
                if (!b)
                        return -ENOMEM;
                single = manifest_filename_classify(basename(b)) > 0;
        }

        if (single) {
                _cleanup_free_ char *a = strdup(path), *b = strdup(path);
                if (!a || !b)
                        return -ENOMEM;
                s->dir = strdup(dirname(a));
                s->only = strdup(basename(b));
                if (!s->dir || !s->only)
                        return -ENOMEM;
        } else
                s->dir = TAKE_PTR(path);

        _cleanup_free_ char *a = strdup(s->dir), *b = strdup(s->dir);
        if (!a || !b)
                return -ENOMEM;
        s->parent = strdup(dirname(a));
        s->dir_base = strdup(basename(b));
        if (!s->parent || !s->dir_base)
                return -ENOMEM;

        *ret = TAKE_PTR(s);
        return 0;
}

int dir_source_start(DirSource *s) {
        assert(s);
        if (s->inotify_source)
                return -EBUSY;

        _cleanup_close_ int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to create an inotify instance: %m");
        int r = event_add_io(s->event, &s->inotify_source, fd, EPOLLIN, dir_source_on_inotify, s);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the inotify fd: %m");
        s->inotify_fd = TAKE_FD(fd);
        r = event_source_set_io_fd_own(s->inotify_source, true);
        if (r < 0)
                return r;
        (void)event_source_set_description(s->inotify_source, "dir-source-inotify");

        /* The rescan is a safety net: let the loop coalesce its wake-up. */
        r = event_add_time(
                s->event, &s->rescan_timer, now_usec(CLOCK_MONOTONIC) + s->check_frequency,
                MIN(s->check_frequency / 10, USEC_PER_SEC), dir_source_on_rescan_timer, s);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the rescan timer: %m");
        (void)event_source_set_description(s->rescan_timer, "dir-source-rescan");

        log_info("Watching manifests in \"%s\"%s%s%s.", s->dir, s->only ? " (only \"" : "",
                 strempty(s->only), s->only ? "\")" : "");
        return dir_source_rescan_full(s, false);
}

DirSource *dir_source_free(DirSource *s) {
        if (!s)
                return NULL;
        event_source_free(s->inotify_source);
        if (!s->inotify_source)
                safe_close(s->inotify_fd);
        event_source_free(s->rescan_timer);
        event_source_free(s->debounce_timer);
        for (size_t i = 0; i < s->n_files; i++)
                dir_file_free(s->files[i]);
        free(s->files);
        free(s->index);
        strv_free(s->ignored_logged);
        free(s->dir);
        free(s->only);
        free(s->parent);
        free(s->dir_base);
        free(s->node_name);
        free(s);
        return NULL;
}
