/* Tests for src/runtime against the real conmon and runc (as root): the
 * container lifecycle, error reporting, the op queue (parallelism cap and
 * timeouts, with a fake runtime script) and pod sandboxes (pinned
 * namespaces, the PID holder). Each test has its own run dir under /tmp and
 * a teardown that force-deletes containers, unpins and removes it, even
 * when an assertion failed. Skips (77) when not root or conmon/runc are
 * missing, unless NANOLET_TEST_STRICT=1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "fileio.h"
#include "macro.h"
#include "runtime.h"
#include "spawn.h"
#include "string-util.h"
#include "strv.h"

#define NSFS_MAGIC_ 0x6e736673

typedef struct Fixture {
        char tmp[64];
        char *run_dir;
        Event *e;
        Runtime *rt;
        char **ids; /* containers to force-delete in teardown */
        char **sandboxes;
} Fixture;

/* --- helpers ------------------------------------------------------------------ */

static int run_quiet(char *const *argv, char **ret_out) {
        _cleanup_close_pair_ int p[2] = { -EBADF, -EBADF };
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        pid_t pid;
        int status;

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        o.argv = argv;
        o.stdout_fd = p[1];
        o.stderr_fd = p[1];
        int r = spawn(&o, &pid, NULL);
        if (r < 0)
                return r;
        p[1] = safe_close(p[1]);
        char *out = NULL;
        (void)read_full_fd(p[0], 1 << 20, &out, NULL);
        (void)waitpid(pid, &status, 0);
        if (ret_out)
                *ret_out = out;
        else
                free(out);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void rm_rf(const char *path) {
        char *argv[] = { "rm", "-rf", "--one-file-system", (char *)path, NULL };
        (void)run_quiet(argv, NULL);
}

static bool mounted_under(const char *prefix) {
        _cleanup_free_ char *mi = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 22, &mi, NULL),
                         0);
        return strstr(mi, prefix) != NULL;
}

static int setup(void **state) {
        Fixture *f = calloc(1, sizeof(*f));
        assert_non_null(f);
        strcpy(f->tmp, "/tmp/nanolet-rt-XXXXXX");
        assert_non_null(mkdtemp(f->tmp));
        f->run_dir = strprintf("%s/run", f->tmp);
        assert_int_equal(event_new(&f->e), 0);
        *state = f;
        return 0;
}

static int new_runtime(Fixture *f, const RuntimeOptions *extra) {
        RuntimeOptions o = extra ? *extra : (RuntimeOptions){};
        o.run_dir = f->run_dir;
        return runtime_new(&f->rt, f->e, &o);
}

static int teardown(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *root = strprintf("%s/runc", f->run_dir);

        STRV_FOREACH(id, f->ids) {
                char *argv[] = { "runc", "--root", root, "delete", "--force", *id, NULL };
                (void)run_quiet(argv, NULL);
        }
        STRV_FOREACH(d, f->sandboxes)
                (void)sandbox_remove(*d, NULL);
        f->rt = runtime_free(f->rt);
        f->e = event_free(f->e);
        _cleanup_free_ char *ns = strprintf("%s/ns", f->run_dir);
        while (umount2(ns, MNT_DETACH) == 0)
                ;
        assert_false(mounted_under(f->tmp));
        rm_rf(f->tmp);
        strv_free(f->ids);
        strv_free(f->sandboxes);
        free(f->run_dir);
        free(f);
        return 0;
}

static void copy_file(const char *from, const char *to, mode_t mode) {
        _cleanup_free_ char *data = NULL;
        size_t n;
        assert_int_equal(read_full_file_at(AT_FDCWD, from, 64 << 20, &data, &n), 0);
        assert_int_equal(write_file_atomic(to, data, n, mode), 0);
}

/* A bundle with a busybox rootfs and a minimal hand-written config.json. */
typedef struct BundleSpec {
        const char *args[8];
        bool pid_ns;          /* new PID namespace */
        const char *net_path; /* join this net ns */
        const char *pid_path; /* join this PID ns */
        bool no_rootfs;
} BundleSpec;

static char *make_bundle(Fixture *f, const char *name, const BundleSpec *b) {
        char *bundle = strprintf("%s/bundles/%s", f->tmp, name);
        _cleanup_free_ char *rootfs = strprintf("%s/rootfs", bundle);
        _cleanup_free_ char *bin = strprintf("%s/bin", rootfs);
        assert_int_equal(mkdir_p(bundle, 0755), 0);
        if (!b->no_rootfs) {
                assert_int_equal(mkdir_p(bin, 0755), 0);
                const char *dirs[] = { "proc", "dev", "sys", "tmp" };
                for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                        _cleanup_free_ char *d = strprintf("%s/%s", rootfs, dirs[i]);
                        assert_int_equal(mkdir_p(d, 0755), 0);
                }
                _cleanup_free_ char *bb = strprintf("%s/busybox", bin);
                copy_file("/bin/busybox", bb, 0755);
                const char *links[] = { "sh", "sleep", "echo", "cat", "ls" };
                for (size_t i = 0; i < ELEMENTSOF(links); i++) {
                        _cleanup_free_ char *l = strprintf("%s/%s", bin, links[i]);
                        assert_int_equal(symlink("busybox", l), 0);
                }
        }

        json_t *args = json_array();
        for (size_t i = 0; b->args[i]; i++)
                json_array_append_new(args, json_string(b->args[i]));
        json_t *ns = json_array();
        json_array_append_new(ns, json_pack("{s:s}", "type", "mount"));
        json_array_append_new(ns, json_pack("{s:s}", "type", "ipc"));
        json_array_append_new(ns, json_pack("{s:s}", "type", "uts"));
        if (b->net_path)
                json_array_append_new(
                        ns, json_pack("{s:s,s:s}", "type", "network", "path", b->net_path));
        else
                json_array_append_new(ns, json_pack("{s:s}", "type", "network"));
        if (b->pid_path)
                json_array_append_new(ns,
                                      json_pack("{s:s,s:s}", "type", "pid", "path", b->pid_path));
        else if (b->pid_ns)
                json_array_append_new(ns, json_pack("{s:s}", "type", "pid"));

        json_t *mounts =
                json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:s,s:[s,s,s]},{s:s,s:s,s:s,s:[s,s,s]}]",
                          "destination", "/proc", "type", "proc", "source", "proc", "destination",
                          "/dev", "type", "tmpfs", "source", "tmpfs", "options", "nosuid",
                          "strictatime", "mode=755", "destination", "/tmp", "type", "tmpfs",
                          "source", "tmpfs", "options", "nosuid", "nodev", "mode=1777");
        json_t *cfg = json_pack(
                "{s:s, s:{s:b, s:{s:i,s:i}, s:o, s:[s], s:s}, s:{s:s,s:b}, s:s, s:o,"
                " s:{s:o}}",
                "ociVersion", "1.0.2", "process", "terminal", 0, "user", "uid", 0, "gid", 0, "args",
                args, "env", "PATH=/bin", "cwd", "/", "root", "path", "rootfs", "readonly", 1,
                "hostname", "ctr", "mounts", mounts, "linux", "namespaces", ns);
        assert_non_null(cfg);
        _cleanup_free_ char *path = strprintf("%s/config.json", bundle);
        assert_int_equal(json_dump_file(cfg, path, JSON_INDENT(2)), 0);
        json_decref(cfg);
        return bundle;
}

static void run_until(Fixture *f, const bool *flag, usec_t timeout) {
        usec_t end = now_usec(CLOCK_MONOTONIC) + timeout;
        while (!*flag && now_usec(CLOCK_MONOTONIC) < end)
                assert_int_equal(event_run(f->e, 100 * USEC_PER_MSEC), 0);
        assert_true(*flag);
}

typedef struct Result {
        bool called;
        int r;
        pid_t pid, conmon_pid;
        char message[1024];
} Result;

static void on_created(Runtime *rt, int r, pid_t pid, pid_t conmon_pid, const Error *err,
                       void *userdata) {
        Result *res = userdata;
        res->called = true;
        res->r = r;
        res->pid = pid;
        res->conmon_pid = conmon_pid;
        assert_non_null(err);
        snprintf(res->message, sizeof(res->message), "%s", err->message);
}

static void on_done(Runtime *rt, int r, const Error *err, void *userdata) {
        Result *res = userdata;
        res->called = true;
        res->r = r;
        assert_non_null(err);
        snprintf(res->message, sizeof(res->message), "%s", err->message);
}

static void on_sandbox(Runtime *rt, int r, pid_t holder, const Error *err, void *userdata) {
        Result *res = userdata;
        res->called = true;
        res->r = r;
        res->pid = holder;
        snprintf(res->message, sizeof(res->message), "%s", err->message);
}

static Result create(Fixture *f, const char *id, const char *bundle) {
        Result res = {};
        _cleanup_free_ char *log = strprintf("%s/logs/%s/0.log", f->tmp, id);
        RuntimeCreateRequest req = { .id = id, .bundle_dir = bundle, .log_path = log };
        assert_int_equal(strv_extend(&f->ids, id), 0);
        assert_int_equal(runtime_container_create(f->rt, &req, on_created, &res, NULL), 0);
        assert_false(res.called); /* never inside the call */
        run_until(f, &res.called, 30 * USEC_PER_SEC);
        return res;
}

static Result simple(Fixture *f, int kind, const char *id, int arg) {
        Result res = {};
        int r = kind == 0   ? runtime_container_start(f->rt, id, on_done, &res, NULL)
                : kind == 1 ? runtime_container_kill(f->rt, id, arg, false, on_done, &res, NULL)
                            : runtime_container_delete(f->rt, id, arg, on_done, &res, NULL);
        assert_int_equal(r, 0);
        run_until(f, &res.called, 30 * USEC_PER_SEC);
        return res;
}
#define start(f, id) simple(f, 0, id, 0)
#define kill_ctr(f, id, sig) simple(f, 1, id, sig)
#define delete_ctr(f, id, force) simple(f, 2, id, force)

static RuntimeContainerStatus wait_state(Fixture *f, const char *id, RuntimeContainerState want) {
        RuntimeContainerStatus s = {};
        for (int i = 0; i < 200; i++) {
                assert_int_equal(runtime_container_status(f->rt, id, &s), 0);
                if (s.state == want)
                        return s;
                (void)event_run(f->e, 50 * USEC_PER_MSEC);
        }
        fail_msg("container %s never reached state %d (at %d)", id, want, s.state);
        return s;
}

static char *wait_log(Fixture *f, const char *id, const char *needle) {
        _cleanup_free_ char *log = strprintf("%s/logs/%s/0.log", f->tmp, id);
        for (int i = 0; i < 100; i++) {
                char *data = NULL;
                if (read_full_file_at(AT_FDCWD, log, 1 << 20, &data, NULL) == 0) {
                        if (strstr(data, needle))
                                return data;
                        free(data);
                }
                usleep(50 * 1000);
        }
        fail_msg("log of %s never showed \"%s\"", id, needle);
        return NULL;
}

static bool path_exists(const char *run_dir, const char *sub, const char *id) {
        _cleanup_free_ char *p = strprintf("%s/%s/%s", run_dir, sub, id);
        return access(p, F_OK) == 0;
}

/* --- lifecycle ------------------------------------------------------------- */

static void test_lifecycle(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        /* Host PID namespace: the shell is not pid 1, so SIGTERM kills it. */
        BundleSpec b = { .args = { "sh", "-c", "echo hello; exec sleep 30" } };
        _cleanup_free_ char *bundle = make_bundle(f, "life", &b);

        Result c = create(f, "life", bundle);
        assert_int_equal(c.r, 0);
        assert_true(c.pid > 0);
        assert_true(c.conmon_pid > 0);
        assert_string_equal(c.message, "");

        RuntimeContainerStatus s;
        assert_int_equal(runtime_container_status(f->rt, "life", &s), 0);
        assert_int_equal(s.state, RUNTIME_STATE_CREATED);
        assert_int_equal(s.pid, c.pid);

        _cleanup_strv_free_ char **ids = NULL;
        assert_int_equal(runtime_list_ids(f->rt, &ids), 0);
        assert_int_equal(strv_length(ids), 1);
        assert_string_equal(ids[0], "life");

        Result r = start(f, "life");
        assert_int_equal(r.r, 0);
        s = wait_state(f, "life", RUNTIME_STATE_RUNNING);
        assert_int_equal(s.pid, c.pid);
        assert_int_equal(kill(c.pid, 0), 0);
        assert_int_equal(s.exit_code, -1);

        /* The exit as an event: a pidfd of the init, not readable while it
         * runs; none for a recorded start time that is not the process's
         * (a reused PID) or for an unknown container. */
        int pidfd = runtime_container_pidfd(f->rt, "life");
        assert_true(pidfd >= 0);
        struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
        assert_int_equal(poll(&pfd, 1, 0), 0);
        assert_int_equal(runtime_container_pidfd(f->rt, "nonexistent"), -ENOENT);

        /* The relist's state cache follows a rewritten state.json. */
        _cleanup_free_ char *sp = strprintf("%s/runc/life/state.json", f->run_dir);
        _cleanup_free_ char *orig = NULL;
        size_t orig_len;
        assert_int_equal(read_full_file_at(AT_FDCWD, sp, 1 << 20, &orig, &orig_len), 0);
        json_t *j = json_loads(orig, 0, NULL);
        assert_non_null(j);
        json_object_set_new(j, "init_process_pid", json_integer(1));
        json_object_set_new(j, "init_process_start", json_integer(0));
        _cleanup_free_ char *changed = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        assert_int_equal(write_file_atomic(sp, changed, strlen(changed), 0600), 0);
        assert_int_equal(runtime_container_status(f->rt, "life", &s), 0);
        assert_int_equal(s.pid, 1);
        j = json_loads(orig, 0, NULL);
        json_object_set_new(
                j, "init_process_start",
                json_integer(json_integer_value(json_object_get(j, "init_process_start")) + 1));
        _cleanup_free_ char *reused = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        assert_int_equal(write_file_atomic(sp, reused, strlen(reused), 0600), 0);
        assert_int_equal(runtime_container_pidfd(f->rt, "life"), -ESRCH);
        assert_int_equal(write_file_atomic(sp, orig, orig_len, 0600), 0);
        assert_int_equal(runtime_container_status(f->rt, "life", &s), 0);
        assert_int_equal(s.pid, c.pid);

        _cleanup_free_ char *log = wait_log(f, "life", " stdout F hello\n");
        /* <RFC3339Nano> stdout F hello */
        assert_true(log[4] == '-' && log[10] == 'T');

        r = kill_ctr(f, "life", SIGTERM);
        assert_int_equal(r.r, 0);
        /* The pidfd taken while it ran turns readable once it exited. */
        assert_int_equal(poll(&pfd, 1, 10 * 1000), 1);
        assert_true(pfd.revents & POLLIN);
        safe_close(pidfd);
        s = wait_state(f, "life", RUNTIME_STATE_STOPPED);
        assert_int_equal(s.exit_code, 143);
        assert_int_equal(s.pid, 0);
        assert_true(s.finished_at > 0);
        assert_false(s.oom_killed);

        r = delete_ctr(f, "life", false);
        assert_int_equal(r.r, 0);
        assert_int_equal(runtime_container_status(f->rt, "life", &s), 0);
        assert_int_equal(s.state, RUNTIME_STATE_UNKNOWN);
        assert_int_equal(s.exit_code, -1);
        assert_false(path_exists(f->run_dir, "runc", "life"));
        assert_false(path_exists(f->run_dir, "exits", "life"));
        assert_false(path_exists(f->run_dir, "conmon", "life"));

        /* Deleting again: unknown counts as deleted. */
        r = delete_ctr(f, "life", false);
        assert_int_equal(r.r, 0);
}

static void test_exit_code(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        BundleSpec b = { .args = { "sh", "-c", "exit 3" }, .pid_ns = true };
        _cleanup_free_ char *bundle = make_bundle(f, "three", &b);
        Result c = create(f, "three", bundle);
        assert_int_equal(c.r, 0);
        assert_int_equal(start(f, "three").r, 0);
        RuntimeContainerStatus s = wait_state(f, "three", RUNTIME_STATE_STOPPED);
        assert_int_equal(s.exit_code, 3);
        /* The exit file is plain decimal text, as conmon writes it. */
        _cleanup_free_ char *p = strprintf("%s/exits/three", f->run_dir);
        _cleanup_free_ char *txt = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, p, 64, &txt, NULL), 0);
        assert_string_equal(txt, "3");

        /* Killing a stopped container is an error with runc's words. */
        Result k = kill_ctr(f, "three", SIGKILL);
        assert_true(k.r < 0);
        assert_true(k.message[0] != 0);
        assert_int_equal(delete_ctr(f, "three", false).r, 0);
}

/* Stands in for a monitor that writes the exit file as it exits: it writes
 * it while the status read holds the open of conmon.pid (an fanotify
 * permission event), after that read found no exit file. */
typedef struct ExitWriter {
        int fanotify_fd;
        const char *exit_path;
        bool wrote;
} ExitWriter;

static void *exit_writer(void *userdata) {
        ExitWriter *w = userdata;
        struct pollfd pfd = { .fd = w->fanotify_fd, .events = POLLIN };
        if (poll(&pfd, 1, 30 * 1000) != 1)
                return NULL;
        struct fanotify_event_metadata ev;
        if (read(w->fanotify_fd, &ev, sizeof(ev)) != (ssize_t)sizeof(ev))
                return NULL;
        bool wrote = write_file_atomic(w->exit_path, "7", 1, 0600) == 0;
        struct fanotify_response resp = { .fd = ev.fd, .response = FAN_ALLOW };
        w->wrote = write(w->fanotify_fd, &resp, sizeof(resp)) == (ssize_t)sizeof(resp) && wrote;
        safe_close(ev.fd);
        return NULL;
}

static void test_exit_file_written_as_monitor_exits(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        pid_t gone = fork();
        assert_true(gone >= 0);
        if (gone == 0)
                _exit(0);
        assert_int_equal(waitpid(gone, NULL, 0), gone);

        _cleanup_free_ char *state_dir = strprintf("%s/runc/raced", f->run_dir);
        _cleanup_free_ char *monitor_dir = strprintf("%s/conmon/raced", f->run_dir);
        _cleanup_free_ char *exits_dir = strprintf("%s/exits", f->run_dir);
        assert_int_equal(mkdir_p(state_dir, 0700), 0);
        assert_int_equal(mkdir_p(monitor_dir, 0700), 0);
        assert_int_equal(mkdir_p(exits_dir, 0700), 0);
        _cleanup_free_ char *state_json =
                strprintf("{\"init_process_pid\":%d,\"init_process_start\":1}", (int)gone);
        _cleanup_free_ char *state_path = strprintf("%s/state.json", state_dir);
        assert_int_equal(write_file_atomic(state_path, state_json, strlen(state_json), 0600), 0);
        _cleanup_free_ char *pid_text = strprintf("%d", (int)gone);
        _cleanup_free_ char *pid_path = strprintf("%s/conmon.pid", monitor_dir);
        assert_int_equal(write_file_atomic(pid_path, pid_text, strlen(pid_text), 0600), 0);
        _cleanup_free_ char *exit_path = strprintf("%s/raced", exits_dir);

        _cleanup_close_ int fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY);
        assert_true(fan >= 0);
        assert_int_equal(fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, pid_path), 0);
        ExitWriter w = { .fanotify_fd = fan, .exit_path = exit_path };
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, exit_writer, &w), 0);

        RuntimeContainerStatus s;
        int r = runtime_container_status(f->rt, "raced", &s);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_true(w.wrote);
        assert_int_equal(r, 0);
        assert_int_equal(s.state, RUNTIME_STATE_STOPPED);
        assert_int_equal(s.exit_code, 7);
        assert_true(s.finished_at > 0);
}

/* The monitor's file in the exit dir is the last it writes: the agent acts
 * on it by deleting the container, and the delete removes the monitor's
 * persist dir, which a file written there afterwards would keep. One
 * inotify queue holds both dirs' events in the order they happened. */
static void check_exit_file_last(Fixture *f, const char *monitor) {
        RuntimeOptions o = { .monitor = monitor };
        assert_int_equal(new_runtime(f, &o), 0);
        BundleSpec b = { .args = { "sh", "-c", "exit 5" }, .pid_ns = true };
        _cleanup_free_ char *bundle = make_bundle(f, "last", &b);
        assert_int_equal(create(f, "last", bundle).r, 0);

        _cleanup_free_ char *persist = strprintf("%s/conmon/last", f->run_dir);
        _cleanup_free_ char *exits = strprintf("%s/exits", f->run_dir);
        _cleanup_close_ int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        assert_true(in >= 0);
        int persist_wd = inotify_add_watch(in, persist, IN_MOVED_TO | IN_CLOSE_WRITE);
        int exits_wd = inotify_add_watch(in, exits, IN_MOVED_TO | IN_CLOSE_WRITE);
        assert_true(persist_wd >= 0 && exits_wd >= 0);

        assert_int_equal(start(f, "last").r, 0);
        assert_int_equal(wait_state(f, "last", RUNTIME_STATE_STOPPED).exit_code, 5);

        int seen = 0, persist_at = 0, exits_at = 0;
        usec_t end = now_usec(CLOCK_MONOTONIC) + 30 * USEC_PER_SEC;
        while ((persist_at == 0 || exits_at == 0) && now_usec(CLOCK_MONOTONIC) < end) {
                struct pollfd pfd = { .fd = in, .events = POLLIN };
                if (poll(&pfd, 1, 100) <= 0)
                        continue;
                char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
                ssize_t n = read(in, buf, sizeof(buf));
                for (ssize_t k = 0; k < n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)(buf + k);
                        seen++;
                        if (ev->len > 0 && ev->wd == persist_wd && streq(ev->name, "exit") &&
                            persist_at == 0)
                                persist_at = seen;
                        if (ev->len > 0 && ev->wd == exits_wd && streq(ev->name, "last") &&
                            exits_at == 0)
                                exits_at = seen;
                        k += (ssize_t)(sizeof(*ev) + ev->len);
                }
        }
        assert_true(persist_at > 0);
        assert_true(exits_at > 0);
        assert_true(persist_at < exits_at);
        assert_int_equal(delete_ctr(f, "last", false).r, 0);
        assert_false(path_exists(f->run_dir, "conmon", "last"));
}

static void test_exit_file_last_conmon(void **state) {
        check_exit_file_last(*state, NULL);
}

static void test_exit_file_last_nanolet_monitor(void **state) {
        const char *monitor = getenv("NANOLET_MONITOR");
        if (!monitor)
                fail_msg("NANOLET_MONITOR (the nanolet-monitor to run) is not set");
        check_exit_file_last(*state, monitor);
}

static void test_runc_errors(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        Result r = start(f, "nonexistent");
        assert_int_equal(r.r, -ENOENT);
        assert_non_null(strstr(r.message, "container does not exist"));
        assert_null(strstr(r.message, "level=")); /* the msg, not the raw line */
        r = delete_ctr(f, "nonexistent", false);
        assert_int_equal(r.r, 0);

        /* Invalid IDs are refused synchronously. */
        assert_int_equal(runtime_container_start(f->rt, "../x", on_done, &r, NULL), -EINVAL);
        assert_int_equal(runtime_container_kill(f->rt, "x", 0, false, on_done, &r, NULL), -EINVAL);
}

static void test_bad_bundle(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        BundleSpec b = { .args = { "sh" }, .no_rootfs = true };
        _cleanup_free_ char *bundle = make_bundle(f, "norootfs", &b);
        Result c = create(f, "norootfs", bundle);
        assert_true(c.r < 0);
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "bad bundle: %d %s\n", c.r, c.message);
        assert_int_equal(c.pid, 0);
        /* runc's own words come through. */
        assert_non_null(strstr(c.message, "rootfs"));
        assert_non_null(strstr(c.message, "runc create"));

        BundleSpec b2 = { .args = { "/no/such/binary" } };
        _cleanup_free_ char *bundle2 = make_bundle(f, "nobin", &b2);
        c = create(f, "nobin", bundle2);
        assert_true(c.r < 0);
        assert_non_null(strstr(c.message, "/no/such/binary"));
}

static void test_missing_binaries(void **state) {
        Fixture *f = *state;
        RuntimeOptions o = { .runtime = "/nonexistent/runc" };
        assert_int_equal(new_runtime(f, &o), 0);
        BundleSpec b = { .args = { "sh" } };
        _cleanup_free_ char *bundle = make_bundle(f, "x", &b);
        Result c = create(f, "x", bundle);
        assert_int_equal(c.r, -ENOENT);
        assert_non_null(strstr(c.message, "OCI runtime \"/nonexistent/runc\" not found"));
        Result r = start(f, "x");
        assert_int_equal(r.r, -ENOENT);
        assert_non_null(strstr(r.message, "not found"));

        f->rt = runtime_free(f->rt);
        RuntimeOptions o2 = { .runtime = "no-such-runtime-nanolet" };
        assert_int_equal(new_runtime(f, &o2), 0);
        r = start(f, "x");
        assert_non_null(strstr(r.message, "not found in PATH"));

        f->rt = runtime_free(f->rt);
        RuntimeOptions o3 = { .conmon = "/nonexistent/conmon" };
        assert_int_equal(new_runtime(f, &o3), 0);
        c = create(f, "y", bundle);
        assert_int_equal(c.r, -ENOENT);
        assert_non_null(strstr(c.message, "conmon \"/nonexistent/conmon\" not found"));
}

/* --- queue: parallelism, timeout, cancel (fake runtime) ------------------ */

static char *fake_runtime(Fixture *f, const char *body) {
        char *path = strprintf("%s/fake-runtime", f->tmp);
        _cleanup_free_ char *script = strprintf("#!/bin/sh\n%s\n", body);
        assert_int_equal(write_file_atomic(path, script, strlen(script), 0755), 0);
        return path;
}

static void test_parallelism(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *trace = strprintf("%s/trace", f->tmp);
        _cleanup_free_ char *body =
                strprintf("echo + >> %s; sleep 0.3; echo - >> %s; exit 0", trace, trace);
        _cleanup_free_ char *rt_path = fake_runtime(f, body);
        RuntimeOptions o = { .runtime = rt_path, .max_parallel = 2 };
        assert_int_equal(new_runtime(f, &o), 0);

        Result res[6] = {};
        char id[16];
        for (int i = 0; i < 6; i++) {
                snprintf(id, sizeof(id), "c%d", i);
                assert_int_equal(runtime_container_start(f->rt, id, on_done, &res[i], NULL), 0);
        }
        for (int i = 0; i < 6; i++) {
                run_until(f, &res[i].called, 20 * USEC_PER_SEC);
                assert_int_equal(res[i].r, 0);
        }
        _cleanup_free_ char *t = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, trace, 4096, &t, NULL), 0);
        int cur = 0, max = 0, total = 0;
        for (char *p = t; *p; p++) {
                if (*p == '+') {
                        cur++;
                        total++;
                } else if (*p == '-')
                        cur--;
                max = MAX(max, cur);
        }
        assert_int_equal(total, 6);
        assert_int_equal(max, 2);
}

static void test_timeout_and_cancel(void **state) {
        Fixture *f = *state;
        _cleanup_free_ char *pidf = strprintf("%s/pid", f->tmp);
        _cleanup_free_ char *body = strprintf("echo $$ >> %s; exec sleep 30", pidf);
        _cleanup_free_ char *rt_path = fake_runtime(f, body);
        RuntimeOptions o = { .runtime = rt_path,
                             .max_parallel = 1,
                             .op_timeout = 300 * USEC_PER_MSEC };
        assert_int_equal(new_runtime(f, &o), 0);

        Result a = {}, b = {}, c = {};
        RuntimeOp *op_b = NULL;
        assert_int_equal(runtime_container_kill(f->rt, "a", SIGTERM, true, on_done, &a, NULL), 0);
        assert_int_equal(runtime_container_start(f->rt, "b", on_done, &b, &op_b), 0);
        assert_int_equal(runtime_container_delete(f->rt, "c", true, on_done, &c, NULL), 0);
        runtime_op_cancel(op_b); /* queued: dropped, never called */

        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        run_until(f, &a.called, 60 * USEC_PER_SEC);
        assert_true(now_usec(CLOCK_MONOTONIC) - t0 < 20 * USEC_PER_SEC); /* the op sleeps 30 s */
        assert_int_equal(a.r, -ETIMEDOUT);
        assert_non_null(strstr(a.message, "timed out"));
        pid_t pid;
        _cleanup_free_ char *txt = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, pidf, 64, &txt, NULL), 0);
        pid = atoi(txt); /* the first line: op "a" */
        assert_true(pid > 0);
        assert_true(kill(pid, 0) < 0 && errno == ESRCH); /* killed and reaped */

        run_until(f, &c.called, 60 * USEC_PER_SEC);
        assert_int_equal(c.r, -ETIMEDOUT);
        assert_false(b.called);

        /* A running op cancelled: its child still finishes and is reaped. */
        Result d = {};
        RuntimeOp *op_d = NULL;
        assert_int_equal(runtime_container_start(f->rt, "d", on_done, &d, &op_d), 0);
        for (int i = 0; i < 5; i++)
                (void)event_run(f->e, 20 * USEC_PER_MSEC);
        runtime_op_cancel(op_d);
        for (int i = 0; i < 30; i++)
                (void)event_run(f->e, 50 * USEC_PER_MSEC);
        assert_false(d.called);
}

static void test_exec_argv(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        char *cmd[] = { "sh", "-c", "echo hi", NULL };
        _cleanup_strv_free_ char **argv = NULL;
        assert_int_equal(runtime_exec_argv(f->rt, "c1", true, true, cmd, &argv), 0);
        assert_true(endswith(argv[0], "/runc"));
        assert_string_equal(argv[1], "--root");
        _cleanup_free_ char *root = strprintf("%s/runc", f->run_dir);
        assert_string_equal(argv[2], root);
        assert_string_equal(argv[3], "exec");
        assert_string_equal(argv[4], "--tty");
        assert_string_equal(argv[5], "c1");
        assert_string_equal(argv[6], "sh");
        assert_null(argv[9]);
        _cleanup_free_ char *exits = strprintf("%s/exits", f->run_dir);
        assert_string_equal(runtime_exits_dir(f->rt), exits);
}

/* --- sandboxes --------------------------------------------------------------- */

/* fork() calls of this process (pthread_atfork, registered in main): the
 * sandbox helper is a fork(); runc and conmon are spawned with
 * clone(CLONE_VFORK), which does not run these handlers. */
static unsigned n_forks;

static void count_fork(void) {
        n_forks++;
}

static unsigned n_threads(void) {
        DIR *d = opendir("/proc/self/task");
        unsigned n = 0;
        assert_non_null(d);
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

/* The sandbox thread exits once the loop is done with it. */
static void wait_threads(Fixture *f, unsigned want) {
        for (int i = 0; i < 200 && n_threads() > want; i++)
                (void)event_run(f->e, 10 * USEC_PER_MSEC);
        assert_int_equal(n_threads(), want);
}

static void assert_new_ns(const char *pin, const char *ns) {
        _cleanup_free_ char *own = strprintf("/proc/self/ns/%s", ns);
        struct stat a, b;
        assert_int_equal(stat(pin, &a), 0);
        assert_int_equal(stat(own, &b), 0);
        assert_true(a.st_ino != b.st_ino); /* a new namespace, not ours */
}

static char *sandbox_dir(Fixture *f, const char *uid) {
        char *d = strprintf("%s/ns/%s", f->run_dir, uid);
        assert_int_equal(strv_extend(&f->sandboxes, d), 0);
        return d;
}

static Result make_sandbox(Fixture *f, const char *dir, unsigned ns, const char *hostname) {
        Result res = {};
        SandboxRequest req = { .dir = dir, .namespaces = ns, .hostname = hostname };
        assert_int_equal(sandbox_create(f->rt, &req, on_sandbox, &res, NULL), 0);
        run_until(f, &res.called, 20 * USEC_PER_SEC);
        return res;
}

static bool is_nsfs(const char *path) {
        struct statfs s;
        return statfs(path, &s) == 0 && s.f_type == NSFS_MAGIC_;
}

static void test_sandbox(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        _cleanup_free_ char *dir = sandbox_dir(f, "pod1");
        unsigned threads = n_threads(), forks = n_forks;
        Result r =
                make_sandbox(f, dir, SANDBOX_NS_NET | SANDBOX_NS_IPC | SANDBOX_NS_UTS, "pod-one");
        assert_int_equal(r.r, 0);
        assert_int_equal(r.pid, 0);
        /* Made by a thread of ours: no fork of this process. */
        assert_int_equal(n_forks, forks);
        /* The thread is gone; the pins (checked below) outlive it. */
        wait_threads(f, threads);

        _cleanup_free_ char *net = sandbox_ns_path(dir, "net");
        _cleanup_free_ char *uts = sandbox_ns_path(dir, "uts");
        _cleanup_free_ char *ipc = sandbox_ns_path(dir, "ipc");
        assert_true(is_nsfs(net) && is_nsfs(uts) && is_nsfs(ipc));
        assert_new_ns(net, "net");
        assert_new_ns(ipc, "ipc");
        assert_new_ns(uts, "uts");
        /* Only the thread moved: this thread is still in the host's. */
        char host[80] = {};
        assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
        assert_string_not_equal(host, "pod-one");

        _cleanup_free_ char *nsnet = strprintf("--net=%s", net);
        _cleanup_free_ char *nsuts = strprintf("--uts=%s", uts);
        _cleanup_free_ char *out = NULL;
        char *ip[] = { "nsenter", nsnet, "ip", "-o", "link", NULL };
        assert_int_equal(run_quiet(ip, &out), 0);
        assert_non_null(strstr(out, "1: lo: <LOOPBACK,UP,LOWER_UP>"));
        assert_null(strchr(strchr(out, '\n') + 1, ':')); /* only one link */
        free(out);
        out = NULL;
        char *hn[] = { "nsenter", nsuts, "hostname", NULL };
        assert_int_equal(run_quiet(hn, &out), 0);
        assert_string_equal(out, "pod-one\n");

        /* The pins do not propagate: <run>/ns is a private mount. */
        _cleanup_free_ char *mi = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, "/proc/self/mountinfo", 1 << 22, &mi, NULL),
                         0);
        _cleanup_free_ char *nsroot = strprintf("%s/ns ", f->run_dir);
        char *line = strstr(mi, nsroot);
        assert_non_null(line);
        char *eol = strchr(line, '\n');
        *eol = 0;
        assert_null(strstr(line, "shared:"));
        *eol = '\n';

        /* A container joining the pinned net namespace sees only lo. */
        BundleSpec bs = { .args = { "cat", "/proc/net/dev" }, .net_path = net, .pid_ns = true };
        _cleanup_free_ char *bundle = make_bundle(f, "joiner", &bs);
        assert_int_equal(create(f, "joiner", bundle).r, 0);
        assert_int_equal(start(f, "joiner").r, 0);
        wait_state(f, "joiner", RUNTIME_STATE_STOPPED);
        _cleanup_free_ char *log = wait_log(f, "joiner", "lo:");
        assert_null(strstr(log, "eth"));
        assert_int_equal(delete_ctr(f, "joiner", false).r, 0);

        /* Already pinned: refused, the existing pins untouched. */
        r = make_sandbox(f, dir, SANDBOX_NS_NET, NULL);
        assert_int_equal(r.r, -EEXIST);
        assert_true(is_nsfs(net));

        Error err = {};
        assert_int_equal(sandbox_remove(dir, &err), 0);
        assert_false(mounted_under(dir));
        assert_int_equal(access(dir, F_OK), -1);
        assert_int_equal(sandbox_remove(dir, &err), 0); /* idempotent */
        assert_int_equal(err.error, 0);
}

static void test_sandbox_pid(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        _cleanup_free_ char *dir = sandbox_dir(f, "pod2");
        unsigned forks = n_forks;
        Result r = make_sandbox(f, dir,
                                SANDBOX_NS_NET | SANDBOX_NS_IPC | SANDBOX_NS_UTS | SANDBOX_NS_PID,
                                "pod-two");
        assert_int_equal(r.r, 0);
        /* A shared PID namespace still takes the forked helper (its
         * child, the holder, is pid 1 there). */
        assert_int_equal(n_forks, forks + 1);
        pid_t holder = r.pid;
        assert_true(holder > 0);
        assert_int_equal(kill(holder, 0), 0);

        _cleanup_free_ char *pin = sandbox_ns_path(dir, "pid");
        _cleanup_free_ char *hp = strprintf("/proc/%d/ns/pid", (int)holder);
        struct stat a, b;
        assert_int_equal(stat(pin, &a), 0);
        assert_int_equal(stat(hp, &b), 0);
        assert_true(a.st_ino == b.st_ino);
        _cleanup_free_ char *hf = sandbox_ns_path(dir, "holder.pid");
        _cleanup_free_ char *txt = NULL;
        assert_int_equal(read_full_file_at(AT_FDCWD, hf, 64, &txt, NULL), 0);
        assert_int_equal(atoi(txt), holder);

        /* Inside, pid 1 is the holder. */
        BundleSpec bs = { .args = { "cat", "/proc/1/cmdline" }, .pid_path = pin };
        _cleanup_free_ char *bundle = make_bundle(f, "pidjoin", &bs);
        assert_int_equal(create(f, "pidjoin", bundle).r, 0);
        assert_int_equal(start(f, "pidjoin").r, 0);
        wait_state(f, "pidjoin", RUNTIME_STATE_STOPPED);
        _cleanup_free_ char *log = wait_log(f, "pidjoin", SANDBOX_HOLDER_ARGV0);
        assert_non_null(log);
        assert_int_equal(delete_ctr(f, "pidjoin", false).r, 0);

        Error err = {};
        assert_int_equal(sandbox_remove(dir, &err), 0);
        assert_false(mounted_under(dir));
        /* The holder is gone (or a zombie waiting for its new parent). */
        _cleanup_free_ char *stat_path = strprintf("/proc/%d/stat", (int)holder);
        for (int i = 0; i < 100; i++) {
                _cleanup_free_ char *st = NULL;
                if (read_full_file_at(AT_FDCWD, stat_path, 4096, &st, NULL) < 0 ||
                    strstr(st, ") Z "))
                        break;
                assert_true(i < 99);
                usleep(20 * 1000);
        }
        assert_int_equal(sandbox_remove(dir, &err), 0);
}

/* The op timer still bounds a sandbox made by a thread, which cannot be
 * killed: whichever of the thread's report and the (1 µs) timeout comes
 * first, a failed op leaves nothing mounted and no thread behind. */
static void test_sandbox_timeout(void **state) {
        Fixture *f = *state;
        RuntimeOptions o = { .op_timeout = 1 };
        assert_int_equal(new_runtime(f, &o), 0);
        unsigned threads = n_threads(), timed_out = 0;

        for (int i = 0; i < 20; i++) {
                _cleanup_free_ char *uid = strprintf("t%d", i);
                _cleanup_free_ char *dir = sandbox_dir(f, uid);
                Result r = make_sandbox(f, dir, SANDBOX_NS_NET | SANDBOX_NS_UTS, "t");
                _cleanup_free_ char *net = sandbox_ns_path(dir, "net");
                if (r.r == 0)
                        assert_true(is_nsfs(net));
                else {
                        assert_int_equal(r.r, -ETIMEDOUT);
                        assert_non_null(strstr(r.message, "timed out"));
                        timed_out++;
                }
                /* A late thread pins nothing after the op gave up. */
                wait_threads(f, threads);
                if (r.r < 0)
                        assert_false(mounted_under(dir));
                assert_int_equal(sandbox_remove(dir, NULL), 0);
        }
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "sandbox timeout: %u of 20 timed out\n", timed_out);
        assert_true(timed_out > 0);
}

static void test_sandbox_failure(void **state) {
        Fixture *f = *state;
        assert_int_equal(new_runtime(f, NULL), 0);
        Result res = {};
        SandboxRequest bad = { .dir = "relative", .namespaces = SANDBOX_NS_NET };
        assert_int_equal(sandbox_create(f->rt, &bad, on_sandbox, &res, NULL), -EINVAL);

        /* The pin directory's parent is a regular file: fails, nothing left. */
        _cleanup_free_ char *file = strprintf("%s/afile", f->tmp);
        assert_int_equal(write_file_atomic(file, "x", 1, 0644), 0);
        _cleanup_free_ char *dir = strprintf("%s/pod", file);
        Result r = make_sandbox(f, dir, SANDBOX_NS_NET, NULL);
        assert_true(r.r < 0);
        assert_true(r.message[0] != 0);
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "sandbox failure: %d %s\n", r.r, r.message);
        assert_false(mounted_under(f->tmp));

        /* A pin path that cannot be a mount point ("ipc" is a directory):
         * the net pin made before it is undone, the thread exits, and the
         * error names the path. */
        unsigned threads = n_threads();
        _cleanup_free_ char *d3 = sandbox_dir(f, "badpin");
        _cleanup_free_ char *ipc_dir = sandbox_ns_path(d3, "ipc");
        assert_int_equal(mkdir_p(ipc_dir, 0755), 0);
        r = make_sandbox(f, d3, SANDBOX_NS_NET | SANDBOX_NS_IPC | SANDBOX_NS_UTS, "bad");
        if (getenv("TEST_VERBOSE"))
                fprintf(stderr, "pin failure: %d %s\n", r.r, r.message);
        assert_int_equal(r.r, -ENOTDIR);
        assert_non_null(strstr(r.message, "Failed to pin"));
        assert_non_null(strstr(r.message, ipc_dir));
        assert_false(mounted_under(d3));
        _cleanup_free_ char *net3 = sandbox_ns_path(d3, "net");
        assert_int_equal(access(net3, F_OK), -1);
        wait_threads(f, threads);

        /* No namespaces at all: nothing to pin, succeeds. */
        _cleanup_free_ char *d2 = sandbox_dir(f, "hostnet");
        r = make_sandbox(f, d2, 0, NULL);
        assert_int_equal(r.r, 0);
        assert_int_equal(sandbox_remove(d2, NULL), 0);
}

int main(int argc, char **argv) {
        if (argc > 0 && streq(argv[0], SANDBOX_HOLDER_ARGV0))
                return sandbox_holder_main(argc, argv);

        const char *strict = getenv("NANOLET_TEST_STRICT");
        bool is_strict = strict && streq(strict, "1");
        _cleanup_free_ char *c = NULL, *r = NULL;
        if (geteuid() != 0 || find_executable("conmon", &c) < 0 ||
            find_executable("runc", &r) < 0) {
                fprintf(stderr, "test-runtime needs root, conmon and runc%s\n",
                        is_strict ? " (strict mode: failing)" : ", skipping");
                return is_strict ? 1 : 77;
        }

        assert_int_equal(pthread_atfork(count_fork, NULL, NULL), 0);
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_lifecycle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exit_code, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exit_file_written_as_monitor_exits, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_exit_file_last_conmon, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exit_file_last_nanolet_monitor, setup,
                                                teardown),
                cmocka_unit_test_setup_teardown(test_runc_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_bundle, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_binaries, setup, teardown),
                cmocka_unit_test_setup_teardown(test_parallelism, setup, teardown),
                cmocka_unit_test_setup_teardown(test_timeout_and_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_exec_argv, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_pid, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_failure, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_timeout, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
