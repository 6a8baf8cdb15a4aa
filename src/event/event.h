/* Single-threaded epoll event loop with typed sources: io, timer, signal
 * (signalfd), child (pidfd) and inotify. Nothing in a callback may block.
 * A callback returning a negative errno stops the loop with that error;
 * event_exit() stops it with a chosen code. Sources are owned by whoever
 * created them and freed with event_source_free(), which is safe inside the
 * source's own callback (the free is deferred until dispatch returns).
 * Every event_add_*() accepts ret == NULL: the source then belongs to the
 * loop, and event_free() frees it with all other remaining sources (so free
 * your sources before the loop, never after). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "cleanup.h"
#include "time-util.h"

typedef struct Event Event;
typedef struct EventSource EventSource;

typedef int (*event_io_handler_t)(EventSource *s, int fd, uint32_t revents, void *userdata);
typedef int (*event_time_handler_t)(EventSource *s, usec_t now, void *userdata);
typedef int (*event_signal_handler_t)(EventSource *s, const struct signalfd_siginfo *si,
                                      void *userdata);
/* si holds the child's exit status as waitid() reports it (si_code
 * CLD_EXITED / CLD_KILLED / CLD_DUMPED, si_status). The child is reaped
 * before the callback runs and the source is disabled afterwards. */
typedef int (*event_child_handler_t)(EventSource *s, const siginfo_t *si, void *userdata);
/* Called once per inotify event read from the source's inotify fd. */
typedef int (*event_inotify_handler_t)(EventSource *s, const struct inotify_event *ev,
                                       void *userdata);

int event_new(Event **ret);
Event *event_free(Event *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(Event *, event_free)
#define _cleanup_event_free_ _cleanup_(event_freep)

/* Runs until event_exit() or a callback fails; returns the exit code or the
 * negative errno of the failure. */
int event_loop(Event *e);
/* Runs one iteration, waiting at most timeout (USEC_INFINITY: forever; no
 * wait at all while a defer source is pending). Order within an iteration:
 * io/signal/child/inotify, then due timers, then defer sources. The defer
 * phase stops once it has run for EVENT_DEFER_PHASE_BUDGET_USEC (after at
 * least one callback); the sources it did not reach run first in the next
 * defer phase, after the next iteration's I/O and timers. Returns 0, or the
 * negative errno of a failed callback or of epoll. */
int event_run(Event *e, usec_t timeout);
#define EVENT_DEFER_PHASE_BUDGET_USEC (5 * USEC_PER_MSEC)
int event_exit(Event *e, int code);
/* CLOCK_MONOTONIC time cached at the start of the current iteration; the
 * current time when called outside an iteration. */
usec_t event_now(Event *e);

/* fd is not owned unless event_source_set_io_fd_own() is called. events are
 * EPOLLIN/EPOLLOUT/...; may be changed later with event_source_set_io_events(). */
int event_add_io(Event *e, EventSource **ret, int fd, uint32_t events, event_io_handler_t cb,
                 void *userdata);
int event_source_set_io_events(EventSource *s, uint32_t events);
int event_source_set_io_fd_own(EventSource *s, bool own);
int event_source_get_io_fd(EventSource *s);

/* One-shot timer at an absolute CLOCK_MONOTONIC time; re-arm it with
 * event_source_set_time() (also from inside the callback), which enables
 * the source again. accuracy is the allowed lateness used to coalesce
 * wake-ups (0 = default 1 ms). A timer re-armed into the past from its own
 * callback runs in the next iteration, not in the current one. */
int event_add_time(Event *e, EventSource **ret, usec_t when, usec_t accuracy,
                   event_time_handler_t cb, void *userdata);
/* Convenience: relative to now. */
int event_add_time_relative(Event *e, EventSource **ret, usec_t delay, usec_t accuracy,
                            event_time_handler_t cb, void *userdata);
int event_source_set_time(EventSource *s, usec_t when);
int event_source_set_time_relative(EventSource *s, usec_t delay);
usec_t event_source_get_time(EventSource *s);

/* Blocks sig in the process mask and delivers it through a signalfd. One
 * source per signal per loop (-EBUSY otherwise). A disabled source keeps the
 * signal blocked, so it stays pending; freeing the source unblocks it again
 * if it was not blocked before. */
int event_add_signal(Event *e, EventSource **ret, int sig, event_signal_handler_t cb,
                     void *userdata);

/* Watches a child by pidfd (pidfd_open). pid must be a child of this process.
 * If someone else reaped the child, the handler gets si_code 0. Enabling the
 * source after the child was reaped fails with -ECHILD. */
int event_add_child(Event *e, EventSource **ret, pid_t pid, event_child_handler_t cb,
                    void *userdata);
pid_t event_source_get_child_pid(EventSource *s);
/* Leaves a child nobody waits for to the loop, which reaps it when it
 * exits (a source the loop owns). Without a pidfd to be had (fd limit) it
 * is reaped now if already gone, else it stays a zombie until the agent
 * exits. Never blocks. */
void event_reap_later(Event *e, pid_t pid);

/* Creates an inotify instance with one watch on path; more watches can be
 * added with event_source_inotify_add_watch(). Returns the watch descriptor
 * of the first watch via ret_wd when non-NULL. Events still in the read
 * buffer are dropped when the handler disables or frees the source. */
int event_add_inotify(Event *e, EventSource **ret, const char *path, uint32_t mask,
                      event_inotify_handler_t cb, void *userdata, int *ret_wd);
int event_source_inotify_add_watch(EventSource *s, const char *path, uint32_t mask);
int event_source_inotify_rm_watch(EventSource *s, int wd);

/* Runs cb on the next iteration (after I/O dispatch), then disables itself
 * unless re-enabled. Useful to batch work triggered by several events. A
 * source enabled by any callback before the defer phase runs in that same
 * iteration's defer phase; one re-enabled from a defer callback runs in the
 * next iteration. */
int event_add_defer(Event *e, EventSource **ret, event_time_handler_t cb, void *userdata);
/* An urgent defer source runs as soon as the callback that enabled it
 * returns, ahead of the rest of the iteration's events, timers and defer
 * sources (once enabled outside a callback: first in the next iteration).
 * For a step that hands work to others and must not wait behind every other
 * callback of a busy iteration: the runtime queue's kick, which starts a
 * container's create while the loop still prepares a hundred other pods. One
 * it enables again from its own callback runs after the next callback, so it
 * cannot keep the loop to itself. Defer sources only (-EINVAL otherwise). */
int event_source_set_defer_urgent(EventSource *s, bool urgent);

int event_source_set_enabled(EventSource *s, bool enabled);
bool event_source_get_enabled(EventSource *s);
void *event_source_get_userdata(EventSource *s);
Event *event_source_get_event(EventSource *s);
/* Name used in debug logs. */
int event_source_set_description(EventSource *s, const char *description);
/* destroy(userdata) runs once when the source is freed, by its owner or by
 * event_free(): how a source left to the loop frees, or finishes, what its
 * userdata holds when the loop ends before the source fires. */
void event_source_set_destroy(EventSource *s, void (*destroy)(void *userdata));

EventSource *event_source_free(EventSource *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(EventSource *, event_source_free)
#define _cleanup_event_source_free_ _cleanup_(event_source_freep)
