/* The event loop: one epoll fd, one timerfd for every time source (a pair of
 * min-heaps decides when it fires), one signalfd for every signal source, and
 * an epoll registration of their own for io, child (pidfd) and inotify
 * sources. Sources freed while a round is being dispatched stay allocated,
 * marked dead, until the round is over, because the epoll event array of the
 * round may still point at them. */
#include "event.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Intrusive circular list; an unlinked node points at itself, so unlinking
 * twice, or from whichever list it is on, is harmless. */
typedef struct Link {
        struct Link *prev, *next;
} Link;

static void link_init(Link *l) {
        l->prev = l->next = l;
}

static bool link_empty(const Link *l) {
        return l->next == l;
}

static void link_unlink(Link *l) {
        l->prev->next = l->next;
        l->next->prev = l->prev;
        link_init(l);
}

static void link_append(Link *head, Link *l) {
        l->prev = head->prev;
        l->next = head;
        head->prev->next = l;
        head->prev = l;
}

/* Moves every node of from to the tail of to. */
static void link_splice(Link *to, Link *from) {
        if (link_empty(from))
                return;
        from->next->prev = to->prev;
        from->prev->next = to;
        to->prev->next = from->next;
        to->prev = from->prev;
        link_init(from);
}

typedef enum EventSourceType {
        SOURCE_IO,
        SOURCE_TIME,
        SOURCE_SIGNAL,
        SOURCE_CHILD,
        SOURCE_INOTIFY,
        SOURCE_DEFER,
        _SOURCE_TYPE_MAX,
        _SOURCE_TYPE_INVALID = -EINVAL,
} EventSourceType;

static const char *const source_type_table[_SOURCE_TYPE_MAX] = {
        [SOURCE_IO] = "io",       [SOURCE_TIME] = "time",       [SOURCE_SIGNAL] = "signal",
        [SOURCE_CHILD] = "child", [SOURCE_INOTIFY] = "inotify", [SOURCE_DEFER] = "defer",
};

/* Two orders over the armed timers: by the time they become due, and by
 * the latest time they may run (when + accuracy). */
enum {
        HEAP_WHEN,
        HEAP_DEADLINE,
        _HEAP_MAX
};

typedef struct TimeHeap {
        EventSource **items;
        size_t n, allocated;
} TimeHeap;

struct EventSource {
        Event *event;
        EventSourceType type;
        bool enabled;
        bool dead;
        char *description;
        void *userdata;
        void (*destroy)(void *userdata);
        Link link; /* on event->sources; on event->gc once dead */
        union {
                event_io_handler_t io;
                event_time_handler_t time;
                event_signal_handler_t signal;
                event_child_handler_t child;
                event_inotify_handler_t inotify;
                event_time_handler_t defer;
        } cb;
        union {
                struct {
                        int fd;
                        uint32_t events;
                        bool own;
                } io;
                struct {
                        usec_t when, accuracy;
                        uint64_t seq;       /* arming order, breaks ties */
                        uint64_t iteration; /* last dispatched in */
                        size_t idx[_HEAP_MAX];
                } time;
                struct {
                        int sig;
                } signal;
                struct {
                        pid_t pid;
                        int fd;
                        bool reaped;
                } child;
                struct {
                        int fd;
                } inotify;
                struct {
                        Link link; /* on event->defer_pending (or defer_urgent) while enabled */
                        bool urgent;
                } defer;
        };
};

struct Event {
        int epoll_fd;
        int timer_fd;
        int signal_fd;

        usec_t now;
        uint64_t iteration;
        bool dispatching;
        bool exiting;
        int exit_code;

        TimeHeap heap[_HEAP_MAX];
        uint64_t time_seq;
        usec_t timer_armed; /* USEC_INFINITY: disarmed */

        EventSource *signal_sources[_NSIG];
        sigset_t signal_mask;    /* signals the signalfd reads */
        sigset_t signal_blocked; /* signals we blocked and must unblock */
        unsigned n_signal_sources;

        Link sources;
        Link defer_pending;
        Link defer_urgent; /* urgent defer sources: run after the current callback */
        Link gc;
};

static const char *source_name(const EventSource *s) {
        return strna(s->description);
}

/* --- timer heaps ------------------------------------------------------- */

static usec_t time_key(const EventSource *s, int h) {
        if (h == HEAP_WHEN || s->time.when > USEC_INFINITY - s->time.accuracy)
                return s->time.when;
        return s->time.when + s->time.accuracy;
}

static bool heap_less(const EventSource *a, const EventSource *b, int h) {
        usec_t ka = time_key(a, h), kb = time_key(b, h);
        return ka != kb ? ka < kb : a->time.seq < b->time.seq;
}

static void heap_set(TimeHeap *hp, int h, size_t i, EventSource *s) {
        hp->items[i] = s;
        s->time.idx[h] = i;
}

static void heap_up(TimeHeap *hp, int h, size_t i) {
        EventSource *s = hp->items[i];
        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (!heap_less(s, hp->items[parent], h))
                        break;
                heap_set(hp, h, i, hp->items[parent]);
                i = parent;
        }
        heap_set(hp, h, i, s);
}

static void heap_down(TimeHeap *hp, int h, size_t i) {
        EventSource *s = hp->items[i];
        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= hp->n)
                        break;
                if (c + 1 < hp->n && heap_less(hp->items[c + 1], hp->items[c], h))
                        c++;
                if (!heap_less(hp->items[c], s, h))
                        break;
                heap_set(hp, h, i, hp->items[c]);
                i = c;
        }
        heap_set(hp, h, i, s);
}

static int heap_push(TimeHeap *hp, int h, EventSource *s) {
        if (hp->n >= hp->allocated) {
                size_t n = MAX(hp->allocated * 2, (size_t)16);
                EventSource **items = reallocarray(hp->items, n, sizeof(*items));
                if (!items)
                        return -ENOMEM;
                hp->items = items;
                hp->allocated = n;
        }
        heap_set(hp, h, hp->n++, s);
        heap_up(hp, h, hp->n - 1);
        return 0;
}

static void heap_remove(TimeHeap *hp, int h, EventSource *s) {
        size_t i = s->time.idx[h];
        assert(i < hp->n && hp->items[i] == s);
        EventSource *last = hp->items[--hp->n];
        if (last == s)
                return;
        heap_set(hp, h, i, last);
        heap_up(hp, h, i);
        heap_down(hp, h, last->time.idx[h]);
}

/* Picks the wake-up inside [earliest due, earliest deadline], on the
 * coarsest grid that fits, so timers of unrelated sources that tolerate
 * some lateness share one wake-up instead of each causing its own. */
static usec_t timer_next_wakeup(Event *e) {
        static const usec_t grid[] = { USEC_PER_SEC, 250 * USEC_PER_MSEC, 10 * USEC_PER_MSEC,
                                       USEC_PER_MSEC };
        if (e->heap[HEAP_WHEN].n == 0)
                return USEC_INFINITY;
        usec_t first = e->heap[HEAP_WHEN].items[0]->time.when;
        usec_t deadline = time_key(e->heap[HEAP_DEADLINE].items[0], HEAP_DEADLINE);
        if (first == USEC_INFINITY)
                return USEC_INFINITY;
        for (size_t i = 0; i < ELEMENTSOF(grid); i++) {
                usec_t t = deadline / grid[i] * grid[i];
                if (t >= first)
                        return t;
        }
        return deadline;
}

static int timer_arm(Event *e) {
        usec_t t = timer_next_wakeup(e);
        struct itimerspec its = {};

        if (t == e->timer_armed)
                return 0;
        if (t != USEC_INFINITY) {
                /* An all-zero it_value would disarm the timer. */
                its.it_value.tv_sec = (time_t)(t / USEC_PER_SEC);
                its.it_value.tv_nsec = (long)(t % USEC_PER_SEC) * 1000;
                if (t == 0)
                        its.it_value.tv_nsec = 1;
        }
        if (timerfd_settime(e->timer_fd, TFD_TIMER_ABSTIME, &its, NULL) < 0)
                return -errno;
        e->timer_armed = t;
        return 0;
}

/* --- signals ----------------------------------------------------------- */

static int signal_fd_update(Event *e) {
        /* signalfd() wants exactly -1 to create a new fd. */
        int fd = signalfd(e->signal_fd >= 0 ? e->signal_fd : -1, &e->signal_mask,
                          SFD_NONBLOCK | SFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (e->signal_fd >= 0)
                return 0;
        if (epoll_ctl(e->epoll_fd, EPOLL_CTL_ADD, fd,
                      &(struct epoll_event){ .events = EPOLLIN, .data.ptr = &e->signal_fd }) < 0) {
                int r = -errno;
                (void)safe_close(fd);
                return r;
        }
        e->signal_fd = fd;
        return 0;
}

/* --- enabling and disabling -------------------------------------------- */

static int epoll_add(EventSource *s, int fd, uint32_t events) {
        if (epoll_ctl(s->event->epoll_fd, EPOLL_CTL_ADD, fd,
                      &(struct epoll_event){ .events = events, .data.ptr = s }) < 0)
                return -errno;
        return 0;
}

static int source_enable(EventSource *s) {
        Event *e = s->event;
        int r;

        switch (s->type) {
        case SOURCE_IO:
                return epoll_add(s, s->io.fd, s->io.events);
        case SOURCE_CHILD:
                if (s->child.reaped)
                        return -ECHILD;
                return epoll_add(s, s->child.fd, EPOLLIN);
        case SOURCE_INOTIFY:
                return epoll_add(s, s->inotify.fd, EPOLLIN);
        case SOURCE_TIME:
                s->time.seq = e->time_seq++;
                r = heap_push(&e->heap[HEAP_WHEN], HEAP_WHEN, s);
                if (r < 0)
                        return r;
                r = heap_push(&e->heap[HEAP_DEADLINE], HEAP_DEADLINE, s);
                if (r < 0) {
                        heap_remove(&e->heap[HEAP_WHEN], HEAP_WHEN, s);
                        return r;
                }
                return 0;
        case SOURCE_SIGNAL:
                sigaddset(&e->signal_mask, s->signal.sig);
                r = signal_fd_update(e);
                if (r < 0)
                        sigdelset(&e->signal_mask, s->signal.sig);
                return r;
        case SOURCE_DEFER:
                link_append(s->defer.urgent ? &e->defer_urgent : &e->defer_pending, &s->defer.link);
                return 0;
        case _SOURCE_TYPE_INVALID:
        case _SOURCE_TYPE_MAX:
        default:
                assert(false);
                return -EINVAL;
        }
}

static void source_disable(EventSource *s) {
        Event *e = s->event;

        if (!s->enabled)
                return;
        s->enabled = false;

        switch (s->type) {
        case SOURCE_IO:
                (void)epoll_ctl(e->epoll_fd, EPOLL_CTL_DEL, s->io.fd, NULL);
                break;
        case SOURCE_CHILD:
                (void)epoll_ctl(e->epoll_fd, EPOLL_CTL_DEL, s->child.fd, NULL);
                break;
        case SOURCE_INOTIFY:
                (void)epoll_ctl(e->epoll_fd, EPOLL_CTL_DEL, s->inotify.fd, NULL);
                break;
        case SOURCE_TIME:
                for (int h = 0; h < _HEAP_MAX; h++)
                        heap_remove(&e->heap[h], h, s);
                break;
        case SOURCE_SIGNAL:
                /* The signal stays blocked, so it waits pending for re-enabling
                 * instead of taking its default action. */
                sigdelset(&e->signal_mask, s->signal.sig);
                if (signal_fd_update(e) < 0)
                        log_debug("event: cannot narrow signalfd mask for '%s', ignoring.",
                                  source_name(s));
                break;
        case SOURCE_DEFER:
                link_unlink(&s->defer.link);
                break;
        case _SOURCE_TYPE_INVALID:
        case _SOURCE_TYPE_MAX:
        default:
                assert(false);
        }
}

int event_source_set_enabled(EventSource *s, bool enabled) {
        int r;

        assert(s);
        if (s->dead)
                return -ESTALE;
        if (s->enabled == enabled)
                return 0;
        if (!enabled) {
                source_disable(s);
                return 0;
        }
        r = source_enable(s);
        if (r < 0)
                return r;
        s->enabled = true;
        return 0;
}

bool event_source_get_enabled(EventSource *s) {
        assert(s);
        return s->enabled;
}

/* --- creation and destruction ------------------------------------------ */

static EventSource *source_new(Event *e, EventSourceType type, void *userdata) {
        EventSource *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->event = e;
        s->type = type;
        s->userdata = userdata;
        link_append(&e->sources, &s->link);
        switch (type) {
        case SOURCE_IO:
                s->io.fd = -EBADF;
                break;
        case SOURCE_CHILD:
                s->child.fd = -EBADF;
                break;
        case SOURCE_INOTIFY:
                s->inotify.fd = -EBADF;
                break;
        case SOURCE_DEFER:
                link_init(&s->defer.link);
                break;
        case SOURCE_TIME:
        case SOURCE_SIGNAL:
        case _SOURCE_TYPE_INVALID:
        case _SOURCE_TYPE_MAX:
        default:
                break;
        }
        return s;
}

/* Lets go of everything the source holds in the kernel and the loop. */
static void source_release(EventSource *s) {
        Event *e = s->event;

        source_disable(s);
        switch (s->type) {
        case SOURCE_IO:
                if (s->io.own)
                        s->io.fd = safe_close(s->io.fd);
                break;
        case SOURCE_CHILD:
                s->child.fd = safe_close(s->child.fd);
                break;
        case SOURCE_INOTIFY:
                s->inotify.fd = safe_close(s->inotify.fd);
                break;
        case SOURCE_SIGNAL: {
                int sig = s->signal.sig;
                if (sig <= 0 || e->signal_sources[sig] != s)
                        break;
                e->signal_sources[sig] = NULL;
                if (sigismember(&e->signal_blocked, sig)) {
                        sigset_t ss;
                        sigemptyset(&ss);
                        sigaddset(&ss, sig);
                        (void)sigprocmask(SIG_UNBLOCK, &ss, NULL);
                        sigdelset(&e->signal_blocked, sig);
                }
                if (--e->n_signal_sources == 0 && e->signal_fd >= 0) {
                        (void)epoll_ctl(e->epoll_fd, EPOLL_CTL_DEL, e->signal_fd, NULL);
                        e->signal_fd = safe_close(e->signal_fd);
                }
                break;
        }
        case SOURCE_TIME:
        case SOURCE_DEFER:
        case _SOURCE_TYPE_INVALID:
        case _SOURCE_TYPE_MAX:
        default:
                break;
        }
}

static void source_destroy(EventSource *s) {
        if (s->destroy)
                s->destroy(s->userdata);
        link_unlink(&s->link);
        free(s->description);
        free(s);
}

EventSource *event_source_free(EventSource *s) {
        if (!s)
                return NULL;
        if (s->dead)
                return NULL;

        Event *e = s->event;
        source_release(s);
        if (e->dispatching) {
                s->dead = true;
                link_unlink(&s->link);
                link_append(&e->gc, &s->link);
        } else
                source_destroy(s);
        return NULL;
}

/* Hands the new source to the caller, or leaves it to the loop when the
 * caller does not want a handle; event_free() frees it then. */
static int source_start(EventSource *s, EventSource **ret) {
        int r = event_source_set_enabled(s, true);
        if (r < 0) {
                (void)event_source_free(s);
                return r;
        }
        if (ret)
                *ret = s;
        return 0;
}

int event_new(Event **ret) {
        _cleanup_event_free_ Event *e = NULL;

        assert(ret);
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->epoll_fd = e->timer_fd = e->signal_fd = -EBADF;
        e->timer_armed = USEC_INFINITY;
        sigemptyset(&e->signal_mask);
        sigemptyset(&e->signal_blocked);
        link_init(&e->sources);
        link_init(&e->defer_pending);
        link_init(&e->defer_urgent);
        link_init(&e->gc);

        e->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        if (e->epoll_fd < 0)
                return -errno;
        e->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (e->timer_fd < 0)
                return -errno;
        if (epoll_ctl(e->epoll_fd, EPOLL_CTL_ADD, e->timer_fd,
                      &(struct epoll_event){ .events = EPOLLIN, .data.ptr = &e->timer_fd }) < 0)
                return -errno;

        e->now = now_usec(CLOCK_MONOTONIC);
        *ret = TAKE_PTR(e);
        return 0;
}

Event *event_free(Event *e) {
        if (!e)
                return NULL;
        assert(!e->dispatching);

        while (!link_empty(&e->sources))
                event_source_free(container_of(e->sources.next, EventSource, link));
        while (!link_empty(&e->gc))
                source_destroy(container_of(e->gc.next, EventSource, link));
        for (int h = 0; h < _HEAP_MAX; h++)
                free(e->heap[h].items);
        (void)safe_close(e->signal_fd);
        (void)safe_close(e->timer_fd);
        (void)safe_close(e->epoll_fd);
        free(e);
        return NULL;
}

/* --- io ------------------------------------------------------------- */

int event_add_io(Event *e, EventSource **ret, int fd, uint32_t events, event_io_handler_t cb,
                 void *userdata) {
        EventSource *s;

        assert(e);
        assert(cb);
        if (fd < 0)
                return -EBADF;
        s = source_new(e, SOURCE_IO, userdata);
        if (!s)
                return -ENOMEM;
        s->io.fd = fd;
        s->io.events = events;
        s->cb.io = cb;
        return source_start(s, ret);
}

int event_source_set_io_events(EventSource *s, uint32_t events) {
        assert(s);
        if (s->type != SOURCE_IO)
                return -EINVAL;
        if (s->io.events == events)
                return 0;
        if (s->enabled && epoll_ctl(s->event->epoll_fd, EPOLL_CTL_MOD, s->io.fd,
                                    &(struct epoll_event){ .events = events, .data.ptr = s }) < 0)
                return -errno;
        s->io.events = events;
        return 0;
}

int event_source_set_io_fd_own(EventSource *s, bool own) {
        assert(s);
        if (s->type != SOURCE_IO)
                return -EINVAL;
        s->io.own = own;
        return 0;
}

int event_source_get_io_fd(EventSource *s) {
        assert(s);
        if (s->type != SOURCE_IO)
                return -EINVAL;
        return s->io.fd;
}

/* --- time ------------------------------------------------------------ */

int event_add_time(Event *e, EventSource **ret, usec_t when, usec_t accuracy,
                   event_time_handler_t cb, void *userdata) {
        EventSource *s;

        assert(e);
        assert(cb);
        s = source_new(e, SOURCE_TIME, userdata);
        if (!s)
                return -ENOMEM;
        s->time.when = when;
        s->time.accuracy = accuracy == 0 ? USEC_PER_MSEC : accuracy;
        s->time.iteration = UINT64_MAX;
        s->cb.time = cb;
        return source_start(s, ret);
}

static usec_t time_after(Event *e, usec_t delay) {
        usec_t n = event_now(e);
        return delay >= USEC_INFINITY - n ? USEC_INFINITY : n + delay;
}

int event_add_time_relative(Event *e, EventSource **ret, usec_t delay, usec_t accuracy,
                            event_time_handler_t cb, void *userdata) {
        assert(e);
        return event_add_time(e, ret, time_after(e, delay), accuracy, cb, userdata);
}

int event_source_set_time(EventSource *s, usec_t when) {
        assert(s);
        if (s->type != SOURCE_TIME)
                return -EINVAL;
        if (s->dead)
                return -ESTALE;
        /* Re-inserting puts the source at its new place in both heaps. */
        source_disable(s);
        s->time.when = when;
        return event_source_set_enabled(s, true);
}

int event_source_set_time_relative(EventSource *s, usec_t delay) {
        assert(s);
        return event_source_set_time(s, time_after(s->event, delay));
}

usec_t event_source_get_time(EventSource *s) {
        assert(s);
        assert(s->type == SOURCE_TIME);
        return s->time.when;
}

/* --- signal ---------------------------------------------------------- */

int event_add_signal(Event *e, EventSource **ret, int sig, event_signal_handler_t cb,
                     void *userdata) {
        EventSource *s;
        sigset_t ss, old;

        assert(e);
        assert(cb);
        if (sig <= 0 || sig >= _NSIG || sig == SIGKILL || sig == SIGSTOP)
                return -EINVAL;
        if (e->signal_sources[sig])
                return -EBUSY;

        sigemptyset(&ss);
        sigaddset(&ss, sig);
        if (sigprocmask(SIG_BLOCK, &ss, &old) < 0)
                return -errno;
        if (!sigismember(&old, sig))
                sigaddset(&e->signal_blocked, sig);

        s = source_new(e, SOURCE_SIGNAL, userdata);
        if (!s) {
                if (sigismember(&e->signal_blocked, sig)) {
                        (void)sigprocmask(SIG_UNBLOCK, &ss, NULL);
                        sigdelset(&e->signal_blocked, sig);
                }
                return -ENOMEM;
        }
        s->signal.sig = sig;
        s->cb.signal = cb;
        e->signal_sources[sig] = s;
        e->n_signal_sources++;
        return source_start(s, ret);
}

/* --- child ----------------------------------------------------------- */

int event_add_child(Event *e, EventSource **ret, pid_t pid, event_child_handler_t cb,
                    void *userdata) {
        EventSource *s;
        int fd;

        assert(e);
        assert(cb);
        if (pid <= 0)
                return -EINVAL;
        fd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (fd < 0)
                return -errno;
        s = source_new(e, SOURCE_CHILD, userdata);
        if (!s) {
                (void)safe_close(fd);
                return -ENOMEM;
        }
        /* pidfds are always close-on-exec. */
        s->child.fd = fd;
        s->child.pid = pid;
        s->cb.child = cb;
        return source_start(s, ret);
}

pid_t event_source_get_child_pid(EventSource *s) {
        assert(s);
        if (s->type != SOURCE_CHILD)
                return -EINVAL;
        return s->child.pid;
}

static int on_reaped_later(EventSource *s, const siginfo_t *si, void *userdata) {
        event_source_free(s);
        return 0;
}

void event_reap_later(Event *e, pid_t pid) {
        if (pid <= 0)
                return;
        if (e && event_add_child(e, NULL, pid, on_reaped_later, NULL) >= 0)
                return;
        siginfo_t si = {};
        (void)waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG);
        log_debug("Cannot watch child %d to reap it.", (int)pid);
}

/* --- inotify --------------------------------------------------------- */

int event_add_inotify(Event *e, EventSource **ret, const char *path, uint32_t mask,
                      event_inotify_handler_t cb, void *userdata, int *ret_wd) {
        _cleanup_close_ int fd = -EBADF;
        EventSource *s;
        int wd;

        assert(e);
        assert(path);
        assert(cb);
        fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (fd < 0)
                return -errno;
        wd = inotify_add_watch(fd, path, mask);
        if (wd < 0)
                return -errno;
        s = source_new(e, SOURCE_INOTIFY, userdata);
        if (!s)
                return -ENOMEM;
        s->inotify.fd = TAKE_FD(fd);
        s->cb.inotify = cb;
        int r = source_start(s, ret);
        if (r < 0)
                return r;
        if (ret_wd)
                *ret_wd = wd;
        return 0;
}

int event_source_inotify_add_watch(EventSource *s, const char *path, uint32_t mask) {
        assert(s);
        assert(path);
        if (s->type != SOURCE_INOTIFY)
                return -EINVAL;
        int wd = inotify_add_watch(s->inotify.fd, path, mask);
        return wd < 0 ? -errno : wd;
}

int event_source_inotify_rm_watch(EventSource *s, int wd) {
        assert(s);
        if (s->type != SOURCE_INOTIFY)
                return -EINVAL;
        return inotify_rm_watch(s->inotify.fd, wd) < 0 ? -errno : 0;
}

/* --- defer ----------------------------------------------------------- */

int event_add_defer(Event *e, EventSource **ret, event_time_handler_t cb, void *userdata) {
        EventSource *s;

        assert(e);
        assert(cb);
        s = source_new(e, SOURCE_DEFER, userdata);
        if (!s)
                return -ENOMEM;
        s->cb.defer = cb;
        return source_start(s, ret);
}

int event_source_set_defer_urgent(EventSource *s, bool urgent) {
        assert(s);
        if (s->type != SOURCE_DEFER)
                return -EINVAL;
        if (s->dead)
                return -ESTALE;
        bool enabled = s->enabled;
        if (enabled)
                source_disable(s);
        s->defer.urgent = urgent;
        return enabled ? event_source_set_enabled(s, true) : 0;
}

/* --- accessors ------------------------------------------------------- */

void *event_source_get_userdata(EventSource *s) {
        assert(s);
        return s->userdata;
}

void event_source_set_destroy(EventSource *s, void (*destroy)(void *userdata)) {
        assert(s);
        s->destroy = destroy;
}

Event *event_source_get_event(EventSource *s) {
        assert(s);
        return s->event;
}

int event_source_set_description(EventSource *s, const char *description) {
        char *d = NULL;

        assert(s);
        if (description) {
                d = strdup(description);
                if (!d)
                        return -ENOMEM;
        }
        free(s->description);
        s->description = d;
        return 0;
}

usec_t event_now(Event *e) {
        assert(e);
        /* Outside an iteration the cached value may be arbitrarily old. */
        return e->dispatching ? e->now : now_usec(CLOCK_MONOTONIC);
}

int event_exit(Event *e, int code) {
        assert(e);
        e->exiting = true;
        e->exit_code = code;
        return 0;
}

/* --- dispatch -------------------------------------------------------- */

static int source_failed(EventSource *s, int r) {
        return log_debug_errno(r, "event: %s source '%s' failed: %m", source_type_table[s->type],
                               source_name(s));
}

static int dispatch_signals(Event *e) {
        struct signalfd_siginfo si[16];
        ssize_t n = read(e->signal_fd, si, sizeof(si));

        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        for (size_t i = 0; i < (size_t)n / sizeof(si[0]); i++) {
                unsigned sig = si[i].ssi_signo;
                EventSource *s = sig < _NSIG ? e->signal_sources[sig] : NULL;
                if (!s || !s->enabled) {
                        log_debug("event: signal %u arrived for a disabled source, dropped.", sig);
                        continue;
                }
                int r = s->cb.signal(s, &si[i], s->userdata);
                if (r < 0)
                        return source_failed(s, r);
        }
        return 0;
}

static int dispatch_child(EventSource *s) {
        siginfo_t si = {};

        if (waitid((idtype_t)P_PIDFD, (id_t)s->child.fd, &si, WEXITED | WNOHANG) < 0) {
                if (errno != ECHILD)
                        return -errno;
                /* Someone else reaped it; the status is lost but the owner
                 * still has to learn that the child is gone. */
                log_debug("event: child %d of '%s' was reaped elsewhere.", (int)s->child.pid,
                          source_name(s));
                si.si_signo = SIGCHLD;
                si.si_pid = s->child.pid;
                si.si_code = 0;
        } else if (si.si_pid == 0)
                return 0; /* stale readiness of a re-enabled source */

        s->child.reaped = true;
        int r = s->cb.child(s, &si, s->userdata);
        source_disable(s);
        return r < 0 ? source_failed(s, r) : 0;
}

static int dispatch_inotify(EventSource *s) {
        _Alignas(struct inotify_event) char buf[4096];
        ssize_t n = read(s->inotify.fd, buf, sizeof(buf));

        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        for (char *p = buf; p < buf + n;) {
                const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
                int r = s->cb.inotify(s, ev, s->userdata);
                if (r < 0)
                        return source_failed(s, r);
                if (s->dead || !s->enabled) {
                        log_debug("event: inotify source '%s' stopped, rest of buffer dropped.",
                                  source_name(s));
                        break;
                }
                p += sizeof(*ev) + ev->len;
        }
        return 0;
}

static int dispatch_epoll(Event *e, const struct epoll_event *ev) {
        if (ev->data.ptr == &e->timer_fd) {
                uint64_t ticks;
                /* Only drains the fd; due timers are found from the heap. */
                if (read(e->timer_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
                        return -errno;
                return 0;
        }
        if (ev->data.ptr == &e->signal_fd)
                return dispatch_signals(e);

        EventSource *s = ev->data.ptr;
        if (s->dead || !s->enabled)
                return 0;
        switch (s->type) {
        case SOURCE_IO: {
                int r = s->cb.io(s, s->io.fd, ev->events, s->userdata);
                return r < 0 ? source_failed(s, r) : 0;
        }
        case SOURCE_CHILD:
                return dispatch_child(s);
        case SOURCE_INOTIFY:
                return dispatch_inotify(s);
        case SOURCE_TIME:
        case SOURCE_SIGNAL:
        case SOURCE_DEFER:
        case _SOURCE_TYPE_INVALID:
        case _SOURCE_TYPE_MAX:
        default:
                assert(false);
                return -EINVAL;
        }
}

static int dispatch_urgent(Event *e);

static int dispatch_timers(Event *e) {
        TimeHeap *hp = &e->heap[HEAP_WHEN];

        /* A timer re-armed into the past from its own callback waits for the
         * next iteration, so such a callback cannot starve the loop. */
        while (hp->n > 0) {
                EventSource *s = hp->items[0];
                if (s->time.when > e->now || s->time.iteration == e->iteration)
                        break;
                s->time.iteration = e->iteration;
                source_disable(s);
                int r = s->cb.time(s, e->now, s->userdata);
                if (r < 0)
                        return source_failed(s, r);
                r = dispatch_urgent(e);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The urgent defer sources pending now, in the order they were enabled; one
 * that a callback here enables again waits for the next check, so an urgent
 * source cannot keep the loop to itself. */
static int dispatch_urgent(Event *e) {
        Link running;

        if (link_empty(&e->defer_urgent) || e->exiting)
                return 0;
        link_init(&running);
        link_splice(&running, &e->defer_urgent);
        while (!link_empty(&running)) {
                EventSource *s = container_of(running.next, EventSource, defer.link);
                source_disable(s);
                int r = s->cb.defer(s, e->now, s->userdata);
                if (r < 0) {
                        link_splice(&e->defer_urgent, &running);
                        return source_failed(s, r);
                }
        }
        return 0;
}

static int dispatch_defer(Event *e) {
        usec_t began = now_usec(CLOCK_MONOTONIC);
        unsigned ran = 0;
        Link running;

        /* Only what was pending when this phase began runs now; what the
         * callbacks enable runs in the next iteration. */
        link_init(&running);
        link_splice(&running, &e->defer_pending);
        while (!link_empty(&running)) {
                /* A hundred pods' preparation pending at once would
                 * otherwise keep every pod's I/O (a monitor's "created", a
                 * CNI result) waiting until all of it is done: past the
                 * budget, what is left goes first in the next iteration,
                 * after that iteration's I/O and timers. At least one
                 * callback runs per phase, so the loop always moves on. */
                if (ran > 0 && now_usec(CLOCK_MONOTONIC) - began >= EVENT_DEFER_PHASE_BUDGET_USEC) {
                        link_splice(&running, &e->defer_pending);
                        link_splice(&e->defer_pending, &running);
                        return 0;
                }
                EventSource *s = container_of(running.next, EventSource, defer.link);
                source_disable(s);
                ran++;
                int r = s->cb.defer(s, e->now, s->userdata);
                if (r < 0) {
                        link_splice(&e->defer_pending, &running);
                        return source_failed(s, r);
                }
                r = dispatch_urgent(e);
                if (r < 0) {
                        link_splice(&e->defer_pending, &running);
                        return r;
                }
        }
        return 0;
}

static int timeout_msec(usec_t timeout) {
        if (timeout == USEC_INFINITY)
                return -1;
        usec_t ms = (timeout + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
        return ms > INT_MAX ? INT_MAX : (int)ms;
}

int event_run(Event *e, usec_t timeout) {
        struct epoll_event evs[64];
        int n, r;

        assert(e);
        assert(!e->dispatching);

        r = timer_arm(e);
        if (r < 0)
                return r;
        if (!link_empty(&e->defer_pending) || !link_empty(&e->defer_urgent))
                timeout = 0;

        n = epoll_wait(e->epoll_fd, evs, ELEMENTSOF(evs), timeout_msec(timeout));
        if (n < 0)
                return errno == EINTR ? 0 : -errno;

        e->now = now_usec(CLOCK_MONOTONIC);
        e->iteration++;
        e->dispatching = true;

        /* Urgent defer sources run after every callback (and first, for
         * those enabled outside the loop). */
        r = dispatch_urgent(e);
        for (int i = 0; i < n && r >= 0 && !e->exiting; i++) {
                r = dispatch_epoll(e, &evs[i]);
                if (r >= 0)
                        r = dispatch_urgent(e);
        }
        if (r >= 0 && !e->exiting)
                r = dispatch_timers(e);
        if (r >= 0 && !e->exiting)
                r = dispatch_defer(e);

        e->dispatching = false;
        while (!link_empty(&e->gc))
                source_destroy(container_of(e->gc.next, EventSource, link));
        return r;
}

int event_loop(Event *e) {
        assert(e);

        while (!e->exiting) {
                int r = event_run(e, USEC_INFINITY);
                if (r < 0)
                        return r;
        }
        e->exiting = false;
        return e->exit_code;
}
