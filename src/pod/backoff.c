/* Restart back-off arithmetic; see backoff.h for the policy. */
#include "backoff.h"

#include <assert.h>

#include "macro.h"

usec_t backoff_next_delay(usec_t prev_delay, usec_t ran_for) {
        /* A long healthy run means the last crash was not part of a loop:
         * treat the next exit as the first one. */
        if (prev_delay == 0 || ran_for >= BACKOFF_RESET_USEC)
                return BACKOFF_INITIAL_USEC;
        if (prev_delay >= BACKOFF_MAX_USEC / 2)
                return BACKOFF_MAX_USEC;
        return MIN(prev_delay * 2, BACKOFF_MAX_USEC);
}

/* kubelet keeps one window per container (flowcontrol.Backoff): an exit
 * with no window (the first, or the first after a long run) is not in
 * back-off and opens a 10 s window; an exit inside a window waits it out
 * and doubles it. */
void backoff_on_exit(ContainerState *c, usec_t now_mono) {
        assert(c);
        usec_t ran_for = 0;
        if (c->running_since > 0 && now_mono > c->running_since)
                ran_for = now_mono - c->running_since;
        if (c->backoff_window == 0 || ran_for >= BACKOFF_RESET_USEC) {
                c->backoff_delay = 0;
                c->backoff_window = BACKOFF_INITIAL_USEC;
        } else {
                c->backoff_delay = c->backoff_window;
                c->backoff_window = backoff_next_delay(c->backoff_window, 0);
        }
        c->backoff_until = now_mono + c->backoff_delay;
        c->running_since = 0;
}

void backoff_restore(ContainerState *c, unsigned restart_count, usec_t started_at,
                     usec_t finished_at, usec_t now_rt, usec_t now_mono) {
        assert(c);
        /* The window the restart_count earlier exits left: none after none,
         * 10 s after the first, doubling. */
        usec_t window = 0;
        for (unsigned i = 0; i < restart_count && window < BACKOFF_MAX_USEC; i++)
                window = backoff_next_delay(window, 0);
        usec_t ran_for = finished_at > started_at && started_at > 0 ? finished_at - started_at : 0;
        if (window == 0 || ran_for >= BACKOFF_RESET_USEC) {
                c->backoff_delay = 0;
                c->backoff_window = BACKOFF_INITIAL_USEC;
        } else {
                c->backoff_delay = window;
                c->backoff_window = backoff_next_delay(window, 0);
        }
        usec_t since = now_rt > finished_at ? now_rt - finished_at : 0;
        c->backoff_until = c->backoff_delay > since ? now_mono + (c->backoff_delay - since) : 0;
        c->running_since = 0;
}

void backoff_on_failed_start(ContainerState *c, usec_t now_mono) {
        assert(c);
        c->backoff_delay = c->backoff_window ? c->backoff_window : BACKOFF_INITIAL_USEC;
        c->backoff_window = backoff_next_delay(c->backoff_delay, 0);
        c->backoff_until = now_mono + c->backoff_delay;
        c->running_since = 0;
}

void backoff_sandbox_failed(PodState *s, usec_t now_mono) {
        assert(s);
        s->sandbox_backoff_delay = backoff_next_delay(s->sandbox_backoff_delay, 0);
        s->sandbox_backoff_until = now_mono + s->sandbox_backoff_delay;
}

bool backoff_active(const ContainerState *c, usec_t now_mono) {
        assert(c);
        return c->backoff_until > now_mono;
}
