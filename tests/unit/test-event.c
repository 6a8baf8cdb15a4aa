/* Tests for the event loop against the real kernel objects: pipes, timerfd,
 * signalfd, pidfd, inotify. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "event.h"
#include "macro.h"

/* --- io ---------------------------------------------------------------- */

typedef struct IoState {
        unsigned calls;
        uint32_t revents;
        char last;
} IoState;

static int on_io(EventSource *s, int fd, uint32_t revents, void *userdata) {
        IoState *st = userdata;
        st->calls++;
        st->revents = revents;
        if (revents & EPOLLIN)
                assert_int_equal(read(fd, &st->last, 1), 1);
        return 0;
}

static void test_io_pipe(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_close_pair_ int p[2] = { -EBADF, -EBADF };
        EventSource *rs = NULL, *ws = NULL;
        IoState rst = {}, wst = {};

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(event_add_io(e, &rs, p[0], EPOLLIN, on_io, &rst), 0);
        assert_int_equal(event_source_get_io_fd(rs), p[0]);
        /* The write end never becomes readable, so nothing fires yet. */
        assert_int_equal(event_add_io(e, &ws, p[1], EPOLLIN, on_io, &wst), 0);

        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(rst.calls, 0);
        assert_int_equal(wst.calls, 0);

        assert_int_equal(write(p[1], "x", 1), 1);
        assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(rst.calls, 1);
        assert_true(rst.revents & EPOLLIN);
        assert_int_equal(rst.last, 'x');
        assert_int_equal(wst.calls, 0);

        assert_int_equal(event_source_set_io_events(ws, EPOLLOUT), 0);
        assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(wst.calls, 1);
        assert_int_equal(wst.revents, EPOLLOUT);

        /* Disabled: readiness is ignored until enabled again. */
        assert_int_equal(event_source_set_enabled(rs, false), 0);
        assert_int_equal(event_source_set_enabled(ws, false), 0);
        assert_int_equal(write(p[1], "y", 1), 1);
        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(rst.calls, 1);
        assert_int_equal(event_source_set_enabled(rs, true), 0);
        assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(rst.calls, 2);
        assert_int_equal(rst.last, 'y');

        assert_int_equal(event_source_set_io_fd_own(rs, true), 0);
        event_source_free(rs);
        p[0] = -EBADF; /* closed by the source */
        event_source_free(ws);
}

/* Two readable pipes; whichever callback runs first frees the other source,
 * whose event is still in this round's epoll array. */
typedef struct Pair {
        EventSource *src[2];
        unsigned calls;
} Pair;

static int on_io_free_sibling(EventSource *s, int fd, uint32_t revents, void *userdata) {
        Pair *pr = userdata;
        char c;
        pr->calls++;
        assert_int_equal(read(fd, &c, 1), 1);
        for (int i = 0; i < 2; i++)
                if (pr->src[i] != s)
                        pr->src[i] = event_source_free(pr->src[i]);
        return 0;
}

static void test_io_free_sibling(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_close_pair_ int a[2] = { -EBADF, -EBADF };
        _cleanup_close_pair_ int b[2] = { -EBADF, -EBADF };
        Pair pr = {};

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(event_add_io(e, &pr.src[0], a[0], EPOLLIN, on_io_free_sibling, &pr), 0);
        assert_int_equal(event_add_io(e, &pr.src[1], b[0], EPOLLIN, on_io_free_sibling, &pr), 0);
        assert_int_equal(write(a[1], "x", 1), 1);
        assert_int_equal(write(b[1], "x", 1), 1);

        assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(pr.calls, 1);
        assert_true((pr.src[0] == NULL) != (pr.src[1] == NULL));
        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(pr.calls, 1);
}

/* --- time -------------------------------------------------------------- */

typedef struct TimerLog {
        Event *e;
        char order[8];
        unsigned n;
        unsigned a_fired;
} TimerLog;

static int on_timer_a(EventSource *s, usec_t now, void *userdata) {
        TimerLog *tl = userdata;
        assert_true(now >= event_source_get_time(s));
        tl->order[tl->n++] = 'A';
        if (++tl->a_fired == 1) {
                /* One-shot: it fired, so it is off until re-armed. */
                assert_false(event_source_get_enabled(s));
                assert_int_equal(event_source_set_time_relative(s, 30 * USEC_PER_MSEC), 0);
                assert_true(event_source_get_enabled(s));
                return 0;
        }
        return event_exit(tl->e, 7);
}

typedef struct Tagged {
        TimerLog *tl;
        char tag;
} Tagged;

static int on_timer_tagged(EventSource *s, usec_t now, void *userdata) {
        Tagged *t = userdata;
        assert_true(now >= event_source_get_time(s));
        t->tl->order[t->tl->n++] = t->tag;
        return 0;
}

static void test_timer_order_and_rearm(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *a = NULL, *b = NULL, *c = NULL;
        TimerLog tl = {};
        Tagged tb = { &tl, 'B' }, tc = { &tl, 'C' };

        assert_int_equal(event_new(&e), 0);
        tl.e = e;
        usec_t start = event_now(e);
        assert_int_equal(
                event_add_time_relative(e, &c, 30 * USEC_PER_MSEC, 0, on_timer_tagged, &tc), 0);
        assert_int_equal(event_add_time_relative(e, &a, 10 * USEC_PER_MSEC, 0, on_timer_a, &tl), 0);
        assert_int_equal(
                event_add_time_relative(e, &b, 20 * USEC_PER_MSEC, 0, on_timer_tagged, &tb), 0);
        assert_true(event_source_get_time(a) >= start + 10 * USEC_PER_MSEC);

        assert_int_equal(event_loop(e), 7);
        assert_int_equal(tl.n, 4);
        assert_memory_equal(tl.order, "ABCA", 4);
        assert_true(event_now(e) >= start + 40 * USEC_PER_MSEC);
}

typedef struct FreeState {
        EventSource *self, *victim;
        unsigned self_calls, victim_calls;
} FreeState;

static int on_timer_free_self(EventSource *s, usec_t now, void *userdata) {
        FreeState *fs = userdata;
        fs->self_calls++;
        assert_ptr_equal(s, fs->self);
        fs->self = event_source_free(s);
        fs->victim = event_source_free(fs->victim);
        return 0;
}

static int on_timer_victim(EventSource *s, usec_t now, void *userdata) {
        FreeState *fs = userdata;
        fs->victim_calls++;
        return 0;
}

static void test_timer_free_in_callback(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        FreeState fs = {};

        assert_int_equal(event_new(&e), 0);
        /* Both due in the same round; the first one armed runs first. */
        usec_t when = event_now(e) - 1;
        assert_int_equal(event_add_time(e, &fs.self, when, 0, on_timer_free_self, &fs), 0);
        assert_int_equal(event_add_time(e, &fs.victim, when, 0, on_timer_victim, &fs), 0);

        assert_int_equal(event_run(e, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(fs.self_calls, 1);
        assert_int_equal(fs.victim_calls, 0);
        assert_null(fs.self);
        assert_null(fs.victim);
        assert_int_equal(event_run(e, 20 * USEC_PER_MSEC), 0);
        assert_int_equal(fs.victim_calls, 0);
}

#define N_TIMERS 1000

typedef struct Many {
        Event *e;
        unsigned fired;
        usec_t last_when;
        bool in_order;
} Many;

static int on_many(EventSource *s, usec_t now, void *userdata) {
        Many *m = userdata;
        usec_t when = event_source_get_time(s);
        if (when < m->last_when || now < when)
                m->in_order = false;
        m->last_when = when;
        event_source_free(s);
        if (++m->fired == N_TIMERS)
                return event_exit(m->e, 0);
        return 0;
}

static void test_timer_many(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        Many m = { .in_order = true };

        assert_int_equal(event_new(&e), 0);
        m.e = e;
        usec_t start = event_now(e);
        /* Spread over 50 ms in scrambled insertion order. */
        for (unsigned i = 0; i < N_TIMERS; i++) {
                usec_t delay = (usec_t)((i * 7919u) % N_TIMERS) * 50;
                assert_int_equal(event_add_time(e, NULL, start + delay, 1, on_many, &m), 0);
        }
        assert_int_equal(event_loop(e), 0);
        assert_int_equal(m.fired, N_TIMERS);
        assert_true(m.in_order);
        assert_true(event_now(e) >= start + (N_TIMERS - 1) * 50);
        assert_true(event_now(e) < start + 5 * USEC_PER_SEC);
}

typedef struct Stamp {
        Event *e;
        usec_t fired_at;
        bool stop;
} Stamp;

static int on_stamp(EventSource *s, usec_t now, void *userdata) {
        Stamp *st = userdata;
        st->fired_at = now;
        return st->stop ? event_exit(st->e, 0) : 0;
}

/* A sloppy timer must not make a precise one late, and a disabled timer
 * must leave the heap. */
static void test_timer_accuracy_and_disable(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *off = NULL;
        Stamp sloppy = {}, precise = {}, disabled = {};

        assert_int_equal(event_new(&e), 0);
        sloppy.e = precise.e = e;
        precise.stop = true;
        usec_t start = event_now(e);
        assert_int_equal(event_add_time(e, NULL, start + 5 * USEC_PER_MSEC, 10 * USEC_PER_SEC,
                                        on_stamp, &sloppy),
                         0);
        assert_int_equal(event_add_time(e, NULL, start + 20 * USEC_PER_MSEC, 1, on_stamp, &precise),
                         0);
        assert_int_equal(event_add_time(e, &off, start + USEC_PER_MSEC, 0, on_stamp, &disabled), 0);
        assert_int_equal(event_source_set_enabled(off, false), 0);

        assert_int_equal(event_loop(e), 0);
        assert_true(precise.fired_at >= start + 20 * USEC_PER_MSEC);
        /* late by the sloppy timer's accuracy (10 s) is the failure; a
         * loaded machine's delay is far less */
        assert_true(precise.fired_at < start + 5 * USEC_PER_SEC);
        assert_true(sloppy.fired_at >= start + 5 * USEC_PER_MSEC);
        assert_true(sloppy.fired_at <= precise.fired_at);
        assert_int_equal(disabled.fired_at, 0);
}

static int on_timer_fail(EventSource *s, usec_t now, void *userdata) {
        unsigned *calls = userdata;
        (*calls)++;
        return -EIO;
}

static void test_callback_error_stops_loop(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        unsigned calls = 0, later = 0;

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_add_time_relative(e, NULL, USEC_PER_MSEC, 0, on_timer_fail, &calls),
                         0);
        assert_int_equal(
                event_add_time_relative(e, NULL, 10 * USEC_PER_SEC, 0, on_timer_victim, &later), 0);
        assert_int_equal(event_loop(e), -EIO);
        assert_int_equal(calls, 1);
}

/* --- defer and exit ---------------------------------------------------- */

static int on_defer(EventSource *s, usec_t now, void *userdata) {
        unsigned *calls = userdata;
        (*calls)++;
        return 0;
}

static int on_defer_rearm(EventSource *s, usec_t now, void *userdata) {
        unsigned *calls = userdata;
        (*calls)++;
        return event_source_set_enabled(s, true);
}

static void test_defer(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *d = NULL, *r = NULL;
        unsigned calls = 0, rearms = 0;

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_add_defer(e, &d, on_defer, &calls), 0);
        assert_int_equal(calls, 0);
        /* Pending work makes the iteration not wait at all. */
        assert_int_equal(event_run(e, USEC_INFINITY), 0);
        assert_int_equal(calls, 1);
        assert_false(event_source_get_enabled(d));
        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(calls, 1);

        assert_int_equal(event_source_set_enabled(d, true), 0);
        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(calls, 2);

        /* Re-enabling from its own callback runs it once per iteration. */
        assert_int_equal(event_add_defer(e, &r, on_defer_rearm, &rearms), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(rearms, 3);
}

/* Urgent defer sources: the runtime queue's kick (op-queue.c) must start an
 * op right after the callback that queued it, not after every other
 * callback of a busy iteration. */
typedef struct UrgentState {
        char order[32];
        size_t n;
        EventSource *urgent;
        bool urgent_rearms;
} UrgentState;

static void urgent_log(UrgentState *st, char c) {
        assert_true(st->n + 1 < sizeof(st->order));
        st->order[st->n++] = c;
        st->order[st->n] = 0;
}

static int on_urgent(EventSource *s, usec_t now, void *userdata) {
        UrgentState *st = userdata;
        urgent_log(st, 'U');
        return st->urgent_rearms ? event_source_set_enabled(s, true) : 0;
}

static int on_normal_a(EventSource *s, usec_t now, void *userdata) {
        UrgentState *st = userdata;
        urgent_log(st, 'A');
        return event_source_set_enabled(st->urgent, true);
}

static int on_normal_b(EventSource *s, usec_t now, void *userdata) {
        urgent_log(userdata, 'B');
        return 0;
}

static int on_normal_c(EventSource *s, usec_t now, void *userdata) {
        urgent_log(userdata, 'C');
        return 0;
}

static int on_io_arms_urgent(EventSource *s, int fd, uint32_t revents, void *userdata) {
        UrgentState *st = userdata;
        char buf[8];
        assert_true(read(fd, buf, sizeof(buf)) > 0);
        urgent_log(st, 'I');
        return event_source_set_enabled(st->urgent, true);
}

static void test_defer_urgent(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *a = NULL, *b = NULL, *c = NULL, *io = NULL,
                                                *t = NULL;
        UrgentState st = {};
        int p[2];

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_add_defer(e, &st.urgent, on_urgent, &st), 0);
        assert_int_equal(event_source_set_defer_urgent(st.urgent, true), 0);
        /* Enabled outside the loop: first in the next iteration. */
        assert_int_equal(event_add_defer(e, &a, on_normal_b, &st), 0);
        assert_int_equal(event_run(e, 0), 0);
        assert_string_equal(st.order, "UB");

        /* Enabled by a defer callback: right after it, before the defer
         * sources already pending (a plain defer would run next iteration). */
        st.n = 0;
        a = event_source_free(a);
        assert_int_equal(event_add_defer(e, &a, on_normal_a, &st), 0);
        assert_int_equal(event_add_defer(e, &b, on_normal_b, &st), 0);
        assert_int_equal(event_add_defer(e, &c, on_normal_c, &st), 0);
        assert_int_equal(event_run(e, 0), 0);
        assert_string_equal(st.order, "AUBC");

        /* Enabled by an I/O callback: before the iteration's defer sources. */
        st.n = 0;
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        assert_int_equal(event_add_io(e, &io, p[0], EPOLLIN, on_io_arms_urgent, &st), 0);
        assert_int_equal(event_source_set_io_fd_own(io, true), 0);
        assert_int_equal(event_source_set_enabled(b, true), 0);
        assert_int_equal(write(p[1], "x", 1), 1);
        assert_int_equal(event_run(e, 0), 0);
        assert_string_equal(st.order, "IUB");
        close(p[1]);
        io = event_source_free(io);

        /* One that enables itself again runs after the next callback, not
         * in a loop of its own. */
        st.n = 0;
        st.urgent_rearms = true;
        assert_int_equal(event_source_set_enabled(a, true), 0);
        assert_int_equal(event_source_set_enabled(b, true), 0);
        assert_int_equal(event_run(e, 0), 0);
        assert_string_equal(st.order, "AUBU");
        st.urgent_rearms = false;
        assert_int_equal(event_run(e, 0), 0);
        assert_string_equal(st.order, "AUBUU");

        /* Defer sources only. */
        assert_int_equal(event_add_time_relative(e, &t, USEC_PER_SEC, 0, on_timer_victim, NULL), 0);
        assert_int_equal(event_source_set_defer_urgent(t, true), -EINVAL);
        st.urgent = event_source_free(st.urgent);
}

/* A defer phase stops at its time budget, so one pod's I/O (its monitor's
 * "created") is not held behind a hundred other pods' preparation that is
 * pending in the same iteration. */
typedef struct BudgetState {
        UrgentState log;
        int wfd;
} BudgetState;

static int on_defer_slow_writes(EventSource *s, usec_t now, void *userdata) {
        BudgetState *st = userdata;
        usec_t began = now_usec(CLOCK_MONOTONIC);
        urgent_log(&st->log, 'A');
        assert_int_equal(write(st->wfd, "x", 1), 1);
        while (now_usec(CLOCK_MONOTONIC) - began < EVENT_DEFER_PHASE_BUDGET_USEC + USEC_PER_MSEC)
                ;
        return 0;
}

static int on_defer_fast(EventSource *s, usec_t now, void *userdata) {
        urgent_log(&((BudgetState *)userdata)->log, 'B');
        return 0;
}

static int on_io_log(EventSource *s, int fd, uint32_t revents, void *userdata) {
        char buf[8];
        assert_true(read(fd, buf, sizeof(buf)) > 0);
        urgent_log(&((BudgetState *)userdata)->log, 'I');
        return 0;
}

/* One iteration, and if the machine stalled it past the defer budget (a
 * loaded machine can), one more for the defer sources it left pending: the
 * order checked is then what the loop decided, not the scheduler. */
static void run_phase(Event *e) {
        usec_t t = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(event_run(e, 0), 0);
        if (now_usec(CLOCK_MONOTONIC) - t >= EVENT_DEFER_PHASE_BUDGET_USEC)
                assert_int_equal(event_run(e, 0), 0);
}

static void test_defer_phase_budget(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *a = NULL, *b = NULL, *c = NULL, *io = NULL;
        BudgetState st = {};
        int p[2];

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        st.wfd = p[1];
        assert_int_equal(event_add_io(e, &io, p[0], EPOLLIN, on_io_log, &st), 0);
        assert_int_equal(event_source_set_io_fd_own(io, true), 0);
        assert_int_equal(event_add_defer(e, &a, on_defer_slow_writes, &st), 0);
        assert_int_equal(event_add_defer(e, &b, on_defer_fast, &st), 0);
        assert_int_equal(event_add_defer(e, &c, on_defer_fast, &st), 0);

        /* A overran the budget: B and C wait for the next iteration... */
        assert_int_equal(event_run(e, 0), 0);
        assert_string_equal(st.log.order, "A");
        /* ...which first reads the I/O that became ready meanwhile, then
         * runs them, before anything enabled later. */
        assert_int_equal(event_source_set_enabled(a, false), 0);
        run_phase(e);
        assert_string_equal(st.log.order, "AIBB");

        /* Fast callbacks all run in one phase. */
        st.log.n = 0;
        assert_int_equal(event_source_set_enabled(b, true), 0);
        assert_int_equal(event_source_set_enabled(c, true), 0);
        run_phase(e);
        assert_string_equal(st.log.order, "BB");
        close(p[1]);
}

typedef struct ExitState {
        Event *e;
        unsigned io_calls;
} ExitState;

static int on_defer_exit(EventSource *s, usec_t now, void *userdata) {
        ExitState *st = userdata;
        return event_exit(st->e, 42);
}

static void test_exit_code(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        ExitState st = {};

        assert_int_equal(event_new(&e), 0);
        st.e = e;
        assert_int_equal(event_add_defer(e, NULL, on_defer_exit, &st), 0);
        assert_int_equal(event_loop(e), 42);
}

/* --- signal ------------------------------------------------------------ */

typedef struct SigState {
        Event *e;
        unsigned calls;
        uint32_t signo;
        int pid;
} SigState;

static int on_signal(EventSource *s, const struct signalfd_siginfo *si, void *userdata) {
        SigState *st = userdata;
        st->calls++;
        st->signo = si->ssi_signo;
        st->pid = (int)si->ssi_pid;
        return event_exit(st->e, 0);
}

static bool sig_blocked(int sig) {
        sigset_t cur;
        assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &cur), 0);
        return sigismember(&cur, sig);
}

static void test_signal(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        EventSource *s = NULL;
        SigState st = {};

        assert_false(sig_blocked(SIGUSR1));
        assert_int_equal(event_new(&e), 0);
        st.e = e;
        assert_int_equal(event_add_signal(e, &s, SIGUSR1, on_signal, &st), 0);
        assert_true(sig_blocked(SIGUSR1));
        assert_int_equal(event_add_signal(e, NULL, SIGUSR1, on_signal, &st), -EBUSY);
        assert_int_equal(event_add_signal(e, NULL, SIGKILL, on_signal, &st), -EINVAL);

        assert_int_equal(raise(SIGUSR1), 0);
        assert_int_equal(event_loop(e), 0);
        assert_int_equal(st.calls, 1);
        assert_int_equal(st.signo, SIGUSR1);
        assert_int_equal(st.pid, getpid());

        event_source_free(s);
        assert_false(sig_blocked(SIGUSR1));
}

/* --- child ------------------------------------------------------------- */

typedef struct ChildState {
        Event *e;
        unsigned calls;
        pid_t pid;
        int code, status;
} ChildState;

static int on_child(EventSource *s, const siginfo_t *si, void *userdata) {
        ChildState *st = userdata;
        st->calls++;
        st->pid = si->si_pid;
        st->code = si->si_code;
        st->status = si->si_status;
        assert_int_equal(event_source_get_child_pid(s), si->si_pid);
        return event_exit(st->e, 0);
}

static void run_child(pid_t pid, ChildState *st) {
        _cleanup_event_free_ Event *e = NULL;
        EventSource *s = NULL;

        assert_int_equal(event_new(&e), 0);
        st->e = e;
        assert_int_equal(event_add_child(e, &s, pid, on_child, st), 0);
        assert_int_equal(event_loop(e), 0);
        assert_false(event_source_get_enabled(s));
        assert_int_equal(event_source_set_enabled(s, true), -ECHILD);
        /* Reaped by the loop, so there is nothing left to wait for. */
        assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
        assert_int_equal(errno, ECHILD);
}

static void test_child_exit(void **state) {
        ChildState st = {};
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
                _exit(3);
        run_child(pid, &st);
        assert_int_equal(st.calls, 1);
        assert_int_equal(st.pid, pid);
        assert_int_equal(st.code, CLD_EXITED);
        assert_int_equal(st.status, 3);
}

static void test_child_killed(void **state) {
        ChildState st = {};
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                for (;;)
                        pause();
        }
        assert_int_equal(kill(pid, SIGKILL), 0);
        run_child(pid, &st);
        assert_int_equal(st.calls, 1);
        assert_int_equal(st.code, CLD_KILLED);
        assert_int_equal(st.status, SIGKILL);
}

static void test_child_not_ours(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        ChildState st = {};

        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_add_child(e, NULL, 0, on_child, &st), -EINVAL);
}

/* --- inotify ----------------------------------------------------------- */

typedef struct InotifyState {
        Event *e;
        int wd[2];
        unsigned creates, close_writes;
        int create_wd;
        char name[64];
} InotifyState;

static int on_inotify(EventSource *s, const struct inotify_event *ev, void *userdata) {
        InotifyState *st = userdata;
        if (ev->mask & IN_CREATE) {
                st->creates++;
                st->create_wd = ev->wd;
                snprintf(st->name, sizeof(st->name), "%s", ev->len ? ev->name : "");
        }
        if (ev->mask & IN_CLOSE_WRITE) {
                st->close_writes++;
                assert_int_equal(st->creates, st->close_writes);
                return event_exit(st->e, 0);
        }
        return 0;
}

static int on_timeout(EventSource *s, usec_t now, void *userdata) {
        return -ETIMEDOUT;
}

static void create_file(const char *dir, const char *name) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "data", 4), 4);
        assert_int_equal(close(fd), 0);
}

static void remove_file(const char *dir, const char *name) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        (void)unlink(path);
}

static void test_inotify(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *s = NULL;
        char d1[] = "/tmp/test-event-XXXXXX", d2[] = "/tmp/test-event-XXXXXX";
        InotifyState st = {};

        assert_non_null(mkdtemp(d1));
        assert_non_null(mkdtemp(d2));
        assert_int_equal(event_new(&e), 0);
        st.e = e;
        assert_int_equal(event_add_time_relative(e, NULL, 5 * USEC_PER_SEC, 0, on_timeout, NULL),
                         0);
        assert_int_equal(event_add_inotify(e, &s, d1, IN_CREATE | IN_CLOSE_WRITE, on_inotify, &st,
                                           &st.wd[0]),
                         0);
        assert_true(st.wd[0] >= 0);
        st.wd[1] = event_source_inotify_add_watch(s, d2, IN_CREATE | IN_CLOSE_WRITE);
        assert_true(st.wd[1] >= 0);
        assert_int_not_equal(st.wd[0], st.wd[1]);

        create_file(d1, "foo.yaml");
        assert_int_equal(event_loop(e), 0);
        assert_int_equal(st.creates, 1);
        assert_int_equal(st.close_writes, 1);
        assert_int_equal(st.create_wd, st.wd[0]);
        assert_string_equal(st.name, "foo.yaml");

        create_file(d2, "bar.json");
        assert_int_equal(event_loop(e), 0);
        assert_int_equal(st.creates, 2);
        assert_int_equal(st.create_wd, st.wd[1]);
        assert_string_equal(st.name, "bar.json");

        assert_int_equal(event_source_inotify_rm_watch(s, st.wd[1]), 0);
        assert_int_equal(event_source_inotify_rm_watch(s, st.wd[1]), -EINVAL);

        remove_file(d1, "foo.yaml");
        remove_file(d2, "bar.json");
        assert_int_equal(rmdir(d1), 0);
        assert_int_equal(rmdir(d2), 0);
}

typedef struct Overflow {
        unsigned events;
        unsigned overflows;
        int overflow_wd;
} Overflow;

static int on_inotify_count(EventSource *s, const struct inotify_event *ev, void *userdata) {
        Overflow *o = userdata;
        o->events++;
        if (ev->mask & IN_Q_OVERFLOW) {
                o->overflows++;
                o->overflow_wd = ev->wd;
        }
        return 0;
}

static void test_inotify_overflow(void **state) {
        _cleanup_event_free_ Event *e = NULL;
        _cleanup_event_source_free_ EventSource *s = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        /* tens of thousands of files: on tmpfs they cost no disk I/O, so a
         * loaded machine does not turn this into a timeout */
        char shm[] = "/dev/shm/test-event-XXXXXX", tmp[] = "/tmp/test-event-XXXXXX", name[32];
        unsigned max = 0;
        Overflow o = {};

        f = fopen("/proc/sys/fs/inotify/max_queued_events", "re");
        if (!f || fscanf(f, "%u", &max) != 1 || max > 100000)
                skip();
        char *d = mkdtemp(shm) ?: mkdtemp(tmp);
        assert_non_null(d);
        assert_int_equal(event_new(&e), 0);
        assert_int_equal(event_add_inotify(e, &s, d, IN_CREATE, on_inotify_count, &o, NULL), 0);
        for (unsigned i = 0; i <= max; i++) {
                snprintf(name, sizeof(name), "f%u", i);
                create_file(d, name);
        }
        while (o.overflows == 0 && o.events <= max + 1)
                assert_int_equal(event_run(e, USEC_PER_SEC), 0);
        assert_int_equal(o.overflows, 1);
        assert_int_equal(o.overflow_wd, -1);
        assert_int_equal(o.events, max + 1);

        for (unsigned i = 0; i <= max; i++) {
                snprintf(name, sizeof(name), "f%u", i);
                remove_file(d, name);
        }
        assert_int_equal(rmdir(d), 0);
}

static unsigned count_fds(void) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;
        assert_non_null(d);
        while (readdir(d))
                n++;
        return n;
}

static int on_never(EventSource *s, usec_t now, void *userdata) {
        return -EIO;
}

static void count_destroy(void *userdata) {
        (*(unsigned *)userdata)++;
}

static int on_free_self(EventSource *s, usec_t now, void *userdata) {
        event_source_free(s);
        return 0;
}

/* destroy runs once, whoever frees the source: its owner, its own callback
 * (the source is freed after the dispatch), or event_free(). */
static void test_destroy(void **state) {
        Event *e = NULL;
        unsigned owner = 0, self = 0, loop = 0;

        assert_int_equal(event_new(&e), 0);
        EventSource *s = NULL;
        assert_int_equal(event_add_time_relative(e, &s, USEC_PER_SEC, 0, on_never, &owner), 0);
        event_source_set_destroy(s, count_destroy);
        assert_null(event_source_free(s));
        assert_int_equal(owner, 1);

        assert_int_equal(event_add_defer(e, &s, on_free_self, &self), 0);
        event_source_set_destroy(s, count_destroy);
        assert_int_equal(event_run(e, 0), 0);
        assert_int_equal(self, 1);

        assert_int_equal(event_add_time_relative(e, &s, USEC_PER_SEC, 0, on_never, &loop), 0);
        event_source_set_destroy(s, count_destroy);
        assert_null(event_free(e));
        assert_int_equal(loop, 1);
        assert_int_equal(owner, 1);
        assert_int_equal(self, 1);
}

/* event_free() must free every remaining source and close every fd. */
static void test_free_all(void **state) {
        unsigned before = count_fds();
        Event *e = NULL;
        char d[] = "/tmp/test-event-XXXXXX";
        int p[2];

        assert_non_null(mkdtemp(d));
        assert_int_equal(event_new(&e), 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        EventSource *io = NULL;
        assert_int_equal(event_add_io(e, &io, p[0], EPOLLIN, on_io, NULL), 0);
        assert_int_equal(event_source_set_io_fd_own(io, true), 0);
        assert_int_equal(event_source_set_description(io, "pipe"), 0);
        assert_int_equal(close(p[1]), 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(event_add_time_relative(e, NULL, USEC_PER_SEC, 0, on_never, NULL),
                                 0);
        assert_int_equal(event_add_signal(e, NULL, SIGUSR2, on_signal, NULL), 0);
        assert_int_equal(event_add_inotify(e, NULL, d, IN_CREATE, on_inotify, NULL, NULL), 0);
        assert_int_equal(event_add_defer(e, NULL, on_never, NULL), 0);
        assert_int_equal(event_add_child(e, NULL, getpid(), on_child, NULL), 0);
        assert_true(count_fds() > before);
        assert_true(sig_blocked(SIGUSR2));

        assert_null(event_free(e));
        assert_int_equal(count_fds(), before);
        assert_false(sig_blocked(SIGUSR2));
        assert_int_equal(rmdir(d), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_io_pipe),
                cmocka_unit_test(test_io_free_sibling),
                cmocka_unit_test(test_timer_order_and_rearm),
                cmocka_unit_test(test_timer_free_in_callback),
                cmocka_unit_test(test_timer_many),
                cmocka_unit_test(test_timer_accuracy_and_disable),
                cmocka_unit_test(test_callback_error_stops_loop),
                cmocka_unit_test(test_defer),
                cmocka_unit_test(test_defer_urgent),
                cmocka_unit_test(test_defer_phase_budget),
                cmocka_unit_test(test_exit_code),
                cmocka_unit_test(test_signal),
                cmocka_unit_test(test_child_exit),
                cmocka_unit_test(test_child_killed),
                cmocka_unit_test(test_child_not_ours),
                cmocka_unit_test(test_inotify),
                cmocka_unit_test(test_inotify_overflow),
                cmocka_unit_test(test_destroy),
                cmocka_unit_test(test_free_all),
        };

        /* A hung loop fails the run instead of stalling it. */
        alarm(60);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
