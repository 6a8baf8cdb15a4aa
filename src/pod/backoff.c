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

void backoff_on_exit(ContainerState *c, usec_t now_mono) {
        assert(c);
        usec_t ran_for = 0;
        if (c->running_since > 0 && now_mono > c->running_since)
                ran_for = now_mono - c->running_since;
        c->backoff_delay = backoff_next_delay(c->backoff_delay, ran_for);
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
