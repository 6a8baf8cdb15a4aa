/* Tests for child supervision against real processes: exit status, capture
 * and its caps, stdin, timeout and kill of the whole process group, and no
 * zombie left behind however the Child ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "event.h"
#include "macro.h"

typedef struct Done {
        unsigned calls;
        int code, status;
        bool timed_out;
        char out[256];
        char err[256];
        size_t out_len;
        bool out_truncated, err_truncated;
        bool free_child;
} Done;

static void on_done(Child *c, void *userdata) {
        Done *d = userdata;
        size_t n;
        d->calls++;
        child_get_status(c, &d->code, &d->status);
        d->timed_out = child_timed_out(c);
        const char *o = child_stdout(c, &d->out_len);
        (void)snprintf(d->out, sizeof(d->out), "%s", o);
        (void)snprintf(d->err, sizeof(d->err), "%s", child_stderr(c, &n));
        d->out_truncated = child_stdout_truncated(c);
        d->err_truncated = child_stderr_truncated(c);
        if (d->free_child)
                child_free(c);
}

static void run_until_done(Event *e, Done *d) {
        for (unsigned i = 0; i < 600 && d->calls == 0; i++)
                assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(d->calls, 1);
}

/* No child of ours left, zombie or not. */
static bool no_children(void) {
        siginfo_t si = {};
        return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

static void assert_no_zombie_after_loop(Event *e) {
        for (unsigned i = 0; i < 600 && !no_children(); i++)
                assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_true(no_children());
}

static Child *spawn_sh(Event *e, const char *script, ChildCapture cap, size_t max, usec_t timeout,
                       Done *d) {
        char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
        ChildOptions o = {
                .argv = argv,
                .capture = cap,
                .stdout_max = max,
                .stderr_max = max,
                .timeout = timeout,
        };
        Child *c = NULL;
        assert_int_equal(child_spawn(e, &o, on_done, d, &c), 0);
        assert_non_null(c);
        return c;
}

static void test_exit_status_and_separate_capture(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};

        assert_int_equal(event_new(&e), 0);
        Child *c =
                spawn_sh(e, "echo out; echo err >&2; exit 3", CHILD_CAPTURE_SEPARATE, 1024, 0, &d);
        run_until_done(e, &d);
        assert_int_equal(d.code, CLD_EXITED);
        assert_int_equal(d.status, 3);
        assert_false(d.timed_out);
        assert_string_equal(d.out, "out\n");
        assert_string_equal(d.err, "err\n");
        assert_false(d.out_truncated);
        assert_true(child_exited(c));
        child_free(c);
        assert_true(no_children());
}

/* stdout captured, stderr the caller's own: nothing of it in the buffers. */
static void test_stdout_capture(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};
        int saved = dup(STDERR_FILENO), p[2];

        assert_true(saved >= 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_true(dup2(p[1], STDERR_FILENO) >= 0);
        assert_int_equal(event_new(&e), 0);
        Child *c = spawn_sh(e, "echo out; echo err >&2", CHILD_CAPTURE_STDOUT, 1024, 0, &d);
        run_until_done(e, &d);
        assert_true(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        close(p[1]);
        assert_string_equal(d.out, "out\n");
        assert_string_equal(d.err, "");
        char buf[16] = {};
        assert_int_equal(read(p[0], buf, sizeof buf - 1), 4);
        assert_string_equal(buf, "err\n");
        close(p[0]);
        child_free(c);
        assert_true(no_children());
}

static void test_merged_capture_and_stdin(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = { .free_child = true };
        char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"cat; echo err >&2", NULL };
        ChildOptions o = {
                .argv = argv,
                .input = "hello\n",
                .input_size = 6,
                .capture = CHILD_CAPTURE_MERGED,
                .stdout_max = 1024,
        };
        Child *c = NULL;

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(child_spawn(e, &o, on_done, &d, &c), 0);
        run_until_done(e, &d); /* the callback frees c */
        assert_int_equal(d.code, CLD_EXITED);
        assert_int_equal(d.status, 0);
        assert_string_equal(d.out, "hello\nerr\n");
        assert_string_equal(d.err, "");
        assert_true(no_children());
}

static void test_output_cap(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};

        assert_int_equal(event_new(&e), 0);
        /* Far more than a pipe holds: the loop must drain as it comes. */
        Child *c = spawn_sh(e, "head -c 1000000 /dev/zero | tr '\\0' x; echo small >&2",
                            CHILD_CAPTURE_SEPARATE, 100, 0, &d);
        run_until_done(e, &d);
        assert_int_equal(d.code, CLD_EXITED);
        assert_int_equal(d.status, 0);
        assert_int_equal(d.out_len, 100);
        assert_true(d.out_truncated);
        assert_false(d.err_truncated);
        assert_string_equal(d.err, "small\n");
        child_free(c);
        assert_true(no_children());
}

static void test_exec_failure(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        char *argv[] = { (char *)"/nonexistent/nanolet-test-binary", NULL };
        ChildOptions o = { .argv = argv, .capture = CHILD_CAPTURE_MERGED, .stdout_max = 10 };
        Done d = {};
        Child *c = NULL;

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(child_spawn(e, &o, on_done, &d, &c), -ENOENT);
        assert_null(c);
        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(d.calls, 0);
        assert_true(no_children());
}

/* The grandchild is re-parented to us (subreaper), so we can see how it
 * ended: killed, not exited. */
static void test_timeout_kills_process_group(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};

        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
        assert_int_equal(event_new(&e), 0);
        Child *c = spawn_sh(e, "sleep 1000 & echo $!; wait", CHILD_CAPTURE_MERGED, 64,
                            300 * USEC_PER_MSEC, &d);
        run_until_done(e, &d);
        assert_true(d.timed_out);
        assert_int_equal(d.code, CLD_KILLED);
        assert_int_equal(d.status, SIGKILL);
        pid_t grandchild = (pid_t)atoi(d.out);
        assert_true(grandchild > 1);
        child_free(c);

        siginfo_t si = {};
        assert_int_equal(waitid(P_PID, (id_t)grandchild, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_KILLED);
        assert_int_equal(si.si_status, SIGKILL);
        assert_true(no_children());
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}

static void test_kill(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};

        assert_int_equal(event_new(&e), 0);
        Child *c = spawn_sh(e, "exec sleep 1000", CHILD_CAPTURE_NONE, 0, 0, &d);
        child_kill(c);
        run_until_done(e, &d);
        assert_false(d.timed_out);
        assert_int_equal(d.code, CLD_KILLED);
        child_free(c);
        assert_true(no_children());
}

/* Freeing a running child: killed with its group, reaped by the loop,
 * no callback. */
static void test_free_running_leaves_no_zombie(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};

        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
        assert_int_equal(event_new(&e), 0);
        Child *c = spawn_sh(e, "sleep 1000 & echo $!; wait", CHILD_CAPTURE_MERGED, 64, 0, &d);
        /* Until the grandchild's pid is out. */
        for (unsigned i = 0; i < 600 && !strchr(child_stdout(c, NULL), '\n'); i++)
                assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        pid_t grandchild = (pid_t)atoi(child_stdout(c, NULL));
        assert_true(grandchild > 1);
        pid_t pid = child_get_pid(c);
        child_free(c);

        /* The child is the loop's to reap (kill(pid, 0) succeeds on a
         * zombie, so ESRCH means reaped)... */
        for (unsigned i = 0; i < 600 && kill(pid, 0) == 0; i++)
                assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(kill(pid, 0), -1);
        assert_int_equal(errno, ESRCH);
        /* ...the grandchild (ours as subreaper, not the loop's) was killed
         * with the group. */
        siginfo_t si = {};
        assert_int_equal(waitid(P_PID, (id_t)grandchild, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_KILLED);
        assert_no_zombie_after_loop(e);
        assert_int_equal(d.calls, 0);
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0), 0);
}

typedef struct Then {
        unsigned calls;
        pid_t pid;
        bool was_reaped; /* when the step ran */
} Then;

static void then_step(void *userdata) {
        Then *t = userdata;
        t->calls++;
        t->was_reaped = kill(t->pid, 0) < 0 && errno == ESRCH;
}

/* The step after a running child runs only once the loop reaped it (an
 * unmount before would race the child's own mount); after an exited child,
 * at once. No callback of the Child's either way. */
static void test_free_then(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};
        Then t = {};

        assert_int_equal(event_new(&e), 0);
        Child *c = spawn_sh(e, "exec sleep 1000", CHILD_CAPTURE_NONE, 0, 0, &d);
        t.pid = child_get_pid(c);
        child_free_then(c, then_step, &t);
        assert_int_equal(t.calls, 0);
        for (unsigned i = 0; i < 600 && t.calls == 0; i++)
                assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(t.calls, 1);
        assert_true(t.was_reaped);
        assert_int_equal(d.calls, 0);

        c = spawn_sh(e, "exit 3", CHILD_CAPTURE_NONE, 0, 0, &d);
        run_until_done(e, &d);
        t = (Then){ .pid = child_get_pid(c) };
        child_free_then(c, then_step, &t);
        assert_int_equal(t.calls, 1);
        assert_no_zombie_after_loop(e);
}

/* A loop that ends before the reaping still runs the step, once. */
static void test_free_then_loop_ends_first(void **state) {
        Event *e = NULL;
        Done d = {};
        Then t = {};

        assert_int_equal(event_new(&e), 0);
        Child *c = spawn_sh(e, "exec sleep 1000", CHILD_CAPTURE_NONE, 0, 0, &d);
        t.pid = child_get_pid(c);
        child_free_then(c, then_step, &t);
        assert_int_equal(t.calls, 0);
        assert_null(event_free(e));
        assert_int_equal(t.calls, 1);
        assert_int_equal(d.calls, 0);
        siginfo_t si = {};
        assert_int_equal(waitid(P_PID, (id_t)t.pid, &si, WEXITED), 0);
        assert_int_equal(si.si_code, CLD_KILLED);
}

static void test_adopt(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Done d = {};
        Child *c = NULL;

        assert_int_equal(event_new(&e), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(7);
        assert_int_equal(child_adopt(e, pid, 0, on_done, &d, &c), 0);
        run_until_done(e, &d);
        assert_int_equal(d.code, CLD_EXITED);
        assert_int_equal(d.status, 7);
        child_free(c);
        assert_true(no_children());
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_status_and_separate_capture),
                cmocka_unit_test(test_stdout_capture),
                cmocka_unit_test(test_merged_capture_and_stdin),
                cmocka_unit_test(test_output_cap),
                cmocka_unit_test(test_exec_failure),
                cmocka_unit_test(test_timeout_kills_process_group),
                cmocka_unit_test(test_kill),
                cmocka_unit_test(test_free_running_leaves_no_zombie),
                cmocka_unit_test(test_free_then),
                cmocka_unit_test(test_free_then_loop_ends_first),
                cmocka_unit_test(test_adopt),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
