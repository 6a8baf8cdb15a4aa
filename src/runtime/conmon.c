/* Container creation through the container monitor: conmon (2.1.x, API
 * version 1) or nanolet-monitor (src/monitor/monitor.h), which takes the
 * same command line and keeps the same files, so everything below and the
 * parsing of the sync line serve both; only argv[0] and the name in
 * messages differ (rt->monitor, rt->monitor_name).
 *
 * What conmon does, as checked in its source (v2.1.6, src/conmon.c,
 * src/parent_pipe_fd.c, src/ctr_exit.c, src/cgroup.c):
 * - Without --sync it forks once: the first process writes the monitor's pid
 *   to -P, then exits 0 (we reap it); the monitor setsid()s and stays as the
 *   container's parent (subreaper), running `<runtime> create`.
 * - The monitor writes one line to the fd named by _OCI_SYNCPIPE:
 *   {"data": <container pid>}\n on success, or, when `runtime create`
 *   fails and printed something, {"data": -1, "message": "<runtime
 *   stderr>"}\n. It keeps the pipe open while it lives, so we stop reading
 *   after the first line; EOF before it means the monitor died early (its
 *   own errors go to /dev/null by then).
 * - _OCI_STARTPIPE (unused here) only makes conmon wait before forking.
 * - The runtime path must be executable (access X_OK): it is resolved here.
 * - --socket-dir-path must exist (conmon symlinks <dir>/<cuuid> to the
 *   bundle); the log file's directory must exist.
 * - On container exit it writes the exit code as decimal text ("%d", no
 *   newline; 128+N for a signal; -1 on its own timeout) atomically
 *   (g_file_set_contents: temp file + rename) to <exit-dir>/<cid> and to
 *   <persist-dir>/exit.
 * - On a cgroup OOM event it creates an empty file "oom" in the persist dir
 *   and another "oom" in its working directory: we start it with the persist
 *   dir as working directory so both land in <run>/conmon/<id>/. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "child-env.h"
#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "runtime-internal.h"
#include "string-util.h"
#include "strv.h"

/* conmon's environment is runc's too: the clean one plus the pipe conmon
 * reports the create result on. */
static int env_with_syncpipe(int fd, char ***ret) {
        char buf[32];
        char *const extra[] = { buf, NULL };

        (void)snprintf(buf, sizeof(buf), "_OCI_SYNCPIPE=%d", fd);
        return child_env_new(extra, ret);
}

static int mkdir_parent(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return 0;
        *slash = 0;
        return mkdir_p(dir, 0755);
}

static void conmon_finish(RuntimeOp *op, int r) {
        runtime_op_complete(op, r);
}

static void conmon_parse_sync(RuntimeOp *op) {
        json_error_t jerr;
        json_t *j = json_loadb(op->sync_buf, op->sync_len, 0, &jerr);
        json_t *data = j ? json_object_get(j, "data") : NULL;
        Runtime *rt = op->rt;

        op->sync_done = true;
        if (!json_is_integer(data)) {
                (void)error_set(&op->err, -EBADMSG, "%s sent an unreadable create result: %.200s",
                                rt->monitor_name, op->sync_buf);
        } else if (json_integer_value(data) > 0) {
                op->container_pid = (pid_t)json_integer_value(data);
        } else {
                char msg[sizeof(op->err.message)];
                const char *m = json_string_value(json_object_get(j, "message"));
                runtime_extract_message(m, msg, sizeof(msg));
                (void)error_set(&op->err, -EIO, "%s create \"%s\" failed: %s", rt->runtime_name,
                                op->id, msg[0] ? msg : "no message from the runtime");
        }
        json_decref(j);
}

/* Completes once the first conmon process is reaped and the monitor has
 * reported, in whichever order those happen. */
static void conmon_maybe_finish(RuntimeOp *op) {
        Runtime *rt = op->rt;

        if (!op->child_exited)
                return;
        if (op->child_code != CLD_EXITED || op->child_status != 0) {
                char msg[sizeof(op->err.message)];
                runtime_extract_message(op->out, msg, sizeof(msg));
                if (op->timed_out)
                        (void)error_set(&op->err, -ETIMEDOUT, "%s for \"%s\" timed out",
                                        rt->monitor_name, op->id);
                else if (op->child_code == CLD_EXITED)
                        (void)error_set(&op->err, -EIO, "%s for \"%s\" exited with status %d%s%s",
                                        rt->monitor_name, op->id, op->child_status,
                                        msg[0] ? ": " : "", msg);
                else
                        (void)error_set(&op->err, -EIO, "%s for \"%s\" killed by signal %d",
                                        rt->monitor_name, op->id, op->child_status);
                conmon_finish(op, op->err.error);
                return;
        }
        if (!op->sync_done)
                return;

        _cleanup_free_ char *pidfile = strprintf("%s/%s/conmon.pid", rt->conmon_dir, op->id);
        if (pidfile && read_pid_file(pidfile, &op->conmon_pid) < 0)
                op->conmon_pid = 0;

        if (op->err.error < 0) {
                conmon_finish(op, op->err.error);
                return;
        }
        log_debug("runtime: created \"%s\": pid %d, conmon %d.", op->id, (int)op->container_pid,
                  (int)op->conmon_pid);
        conmon_finish(op, 0);
}

static int on_sync(EventSource *s, int fd, uint32_t revents, void *userdata) {
        RuntimeOp *op = userdata;

        for (;;) {
                size_t room = sizeof(op->sync_buf) - 1 - op->sync_len;
                if (room == 0) {
                        op->sync_buf[op->sync_len] = 0;
                        break; /* overlong: parse what we have */
                }
                ssize_t n = read(fd, op->sync_buf + op->sync_len, room);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                if (n <= 0) {
                        op->sync_buf[op->sync_len] = 0;
                        if (op->sync_len == 0) {
                                op->sync_done = true;
                                (void)error_set(
                                        &op->err, -EIO,
                                        "%s for \"%s\" exited before reporting the container "
                                        "(is the runtime, the bundle or the log directory "
                                        "usable?)",
                                        op->rt->monitor_name, op->id);
                                goto done;
                        }
                        break;
                }
                op->sync_len += (size_t)n;
                op->sync_buf[op->sync_len] = 0;
                if (memchr(op->sync_buf, '\n', op->sync_len))
                        break;
        }
        conmon_parse_sync(op);
done:
        /* The monitor keeps its end open for its whole life. */
        op->sync_source = event_source_free(op->sync_source);
        op->sync_fd = safe_close(op->sync_fd);
        conmon_maybe_finish(op);
        return 0;
}

int conmon_op_start(RuntimeOp *op) {
        Runtime *rt = op->rt;
        const RuntimeCreateRequest *req = &op->create;
        _cleanup_free_ char *runtime_path = NULL, *persist = NULL, *attach = NULL, *pidfile = NULL,
                            *conmon_pidfile = NULL, *log_arg = NULL, *exit_file = NULL;
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        _cleanup_close_pair_ int sp[2] = { -EBADF, -EBADF };
        char size_buf[32];
        int r;

        r = runtime_resolve(rt, &runtime_path, &op->err);
        if (r < 0)
                return r;

        persist = strprintf("%s/%s", rt->conmon_dir, op->id);
        attach = strprintf("%s/attach", persist ? persist : "");
        pidfile = strprintf("%s/pidfile", persist ? persist : "");
        conmon_pidfile = strprintf("%s/conmon.pid", persist ? persist : "");
        log_arg = strprintf("k8s-file:%s", req->log_path);
        exit_file = strprintf("%s/%s", rt->exits_dir, op->id);
        if (!persist || !attach || !pidfile || !conmon_pidfile || !log_arg || !exit_file)
                return -ENOMEM;

        const char *dirs[] = { rt->exits_dir, attach };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                r = mkdir_p(dirs[i], 0700);
                if (r < 0)
                        return error_set(&op->err, r, "Failed to create \"%s\": %s", dirs[i],
                                         strerror(-r));
        }
        r = mkdir_parent(req->log_path);
        if (r < 0)
                return error_set(&op->err, r, "Failed to create the directory of \"%s\": %s",
                                 req->log_path, strerror(-r));
        /* A stale exit file would make a new container look exited. */
        (void)unlink(exit_file);
        _cleanup_free_ char *oom = strprintf("%s/oom", persist);
        if (oom)
                (void)unlink(oom);

        if (pipe2(sp, O_CLOEXEC) < 0)
                return -errno;
        if (fcntl(sp[0], F_SETFL, O_NONBLOCK) < 0)
                return -errno;
        /* The child must find the write end at a number >= 3 that its own
         * stdio setup does not reuse: spawn keeps it at its number. */
        if (sp[1] < 3) {
                int fd = fcntl(sp[1], F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return -errno;
                safe_close(sp[1]);
                sp[1] = fd;
        }
        r = env_with_syncpipe(sp[1], &env);
        if (r < 0)
                return r;

        const char *args[] = {
                rt->monitor,
                "--api-version",
                "1",
                "-c",
                op->id,
                "-u",
                op->id,
                "-n",
                op->id,
                "-r",
                runtime_path,
                "-b",
                req->bundle_dir,
                "-p",
                pidfile,
                "-P",
                conmon_pidfile,
                "-l",
                log_arg,
                "--exit-dir",
                rt->exits_dir,
                "--socket-dir-path",
                attach,
                "-0",
                persist,
                "--log-level",
                "info",
                "--runtime-arg",
                "--root",
                "--runtime-arg",
                rt->runtime_root,
        };
        for (size_t i = 0; i < ELEMENTSOF(args); i++)
                if (strv_extend(&argv, args[i]) < 0)
                        return -ENOMEM;
        if (req->terminal && strv_extend(&argv, "-t") < 0)
                return -ENOMEM;
        if (req->stdin_open && strv_extend(&argv, "-i") < 0)
                return -ENOMEM;
        if (rt->systemd_cgroup && strv_extend(&argv, "-s") < 0)
                return -ENOMEM;
        if (req->log_size_max > 0) {
                (void)snprintf(size_buf, sizeof(size_buf), "%lld", (long long)req->log_size_max);
                if (strv_extend(&argv, "--log-size-max") < 0 || strv_extend(&argv, size_buf) < 0)
                        return -ENOMEM;
        }

        r = runtime_op_spawn(op, argv, env, persist, &sp[1], 1);
        if (r < 0) {
                if (r == -ENOENT || r == -EACCES)
                        return error_set(&op->err, r, "%s \"%s\" not found%s: %s", rt->monitor_name,
                                         rt->monitor, strchr(rt->monitor, '/') ? "" : " in PATH",
                                         strerror(-r));
                return error_set(&op->err, r, "Failed to start %s: %s", rt->monitor_name,
                                 strerror(-r));
        }
        sp[1] = safe_close(sp[1]);
        op->sync_fd = TAKE_FD(sp[0]);
        r = event_add_io(rt->event, &op->sync_source, op->sync_fd, EPOLLIN, on_sync, op);
        if (r < 0) {
                /* The first conmon process is running: let the timeout
                 * path handle it rather than leaving a child behind. */
                op->sync_fd = safe_close(op->sync_fd);
                op->sync_done = true;
                (void)error_set(&op->err, r, "Failed to watch %s's sync pipe", rt->monitor_name);
        }
        op->argv = TAKE_PTR(argv);
        return 0;
}

void conmon_op_child_exited(RuntimeOp *op) {
        conmon_maybe_finish(op);
}

/* The first conmon process is gone but the monitor has not reported within
 * the op timeout: stop the monitor (its pdeath signal stops `runtime
 * create`); the caller deletes the half-created container. */
void conmon_op_timed_out(RuntimeOp *op) {
        Runtime *rt = op->rt;
        _cleanup_free_ char *pidfile = strprintf("%s/%s/conmon.pid", rt->conmon_dir, op->id);
        pid_t pid;

        if (pidfile && read_pid_file(pidfile, &pid) == 0 && monitor_pid_alive(pid))
                (void)kill(pid, SIGKILL);
        (void)error_set(&op->err, -ETIMEDOUT, "%s for \"%s\" did not report the container in time",
                        rt->monitor_name, op->id);
        runtime_op_complete(op, -ETIMEDOUT);
}

int runtime_container_create(Runtime *rt, const RuntimeCreateRequest *req, runtime_created_t done,
                             void *userdata, RuntimeOp **ret_op) {
        RuntimeOp *op;
        int r;

        if (!rt || !req || !container_id_valid(req->id) || isempty(req->bundle_dir) ||
            isempty(req->log_path) || req->log_path[0] != '/' || req->bundle_dir[0] != '/')
                return -EINVAL;
        r = runtime_op_new(rt, RUNTIME_OP_CREATE, req->id, &op);
        if (r < 0)
                return r;
        op->create_bundle = strdup(req->bundle_dir);
        op->create_log_path = strdup(req->log_path);
        if (!op->create_bundle || !op->create_log_path) {
                free(op->create_bundle);
                free(op->create_log_path);
                free(op->id);
                free(op);
                return -ENOMEM;
        }
        op->create = *req;
        op->create.id = op->id;
        op->create.bundle_dir = op->create_bundle;
        op->create.log_path = op->create_log_path;
        op->cb.created = done;
        op->userdata = userdata;
        runtime_op_enqueue(op);
        if (ret_op)
                *ret_op = op;
        return 0;
}
