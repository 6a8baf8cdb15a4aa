/* pod_compute_actions(): the per-pod decision, modelled on kubelet's
 * computePodActions/computeInitContainerActions (kuberuntime_manager.go).
 * Differences from kubelet, and why:
 *  - no pause container: the sandbox is created once and nothing else
 *    happens in that round, as the containers need its namespaces;
 *  - the back-off is checked here (kubelet checks it while starting) so
 *    the worker gets CrashLoopBackOff and a wake-up time from one place;
 *  - the init-container scan runs forwards over a state that keeps every
 *    container (kubelet scans backwards because the runtime may have
 *    garbage-collected finished init containers); a container removed after
 *    later ones began is trusted to have completed, as kubelet does;
 *  - a probe kill only kills; the next round restarts it per policy. */
#include "pod-actions.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "container-config.h"
#include "macro.h"
#include "string-util.h"

/* kubelet's minimumGracePeriodInSeconds: a container always gets a moment
 * to shut down. */
#define MIN_GRACE_SECONDS 2
#define DEFAULT_GRACE_SECONDS 30

static const char *const kill_reason_table[_KILL_REASON_MAX] = {
        [KILL_REASON_UNHEALTHY] = "Unhealthy",
        [KILL_REASON_TERMINATING] = "Terminating",
        [KILL_REASON_DEADLINE_EXCEEDED] = "DeadlineExceeded",
        [KILL_REASON_POD_COMPLETED] = "PodCompleted",
        [KILL_REASON_INIT_FAILED] = "InitContainerFailed",
        [KILL_REASON_EVICTED] = "Evicted",
};

const char *kill_reason_to_string(KillReason r) {
        if (r < 0 || r >= _KILL_REASON_MAX)
                return NULL;
        return kill_reason_table[r];
}

typedef struct Ctx {
        const PodState *s;
        usec_t now;
        PodActions *a;
        /* Per container (init list first, then app list): the round decided
         * its start or waiting reason, so the final clean-up leaves it be. */
        bool *touched;
} Ctx;

static size_t slot_of(const Ctx *x, const ContainerState *c) {
        const PodState *s = x->s;
        if (s->n_init > 0 && c >= s->init && c < s->init + s->n_init)
                return (size_t)(c - s->init);
        assert(s->n_app > 0 && c >= s->app && c < s->app + s->n_app);
        return s->n_init + (size_t)(c - s->app);
}

static bool c_is_init(const Ctx *x, const ContainerState *c) {
        return slot_of(x, c) < x->s->n_init;
}

static unsigned c_index(const Ctx *x, const ContainerState *c) {
        size_t i = slot_of(x, c);
        return (unsigned)(i < x->s->n_init ? i : i - x->s->n_init);
}

static bool is_sidecar(const ContainerState *c) {
        return c->is_init && container_is_sidecar(c->spec);
}

/* Has this container ever had an attempt? */
static bool ever_started(const ContainerState *c) {
        return c->state != CONTAINER_NONE || c->has_last || c->restart_count > 0;
}

/* Has it had an attempt in the current sandbox? After a reboot's new
 * sandbox (init_rerun), history from the earlier one does not count. */
static bool begun_in_sandbox(const PodState *s, const ContainerState *c) {
        return s->init_rerun ? c->state != CONTAINER_NONE : ever_started(c);
}

/* Holds processes (or a created runtime container) that a kill must stop. */
static bool is_active(const ContainerState *c) {
        return c->state == CONTAINER_RUNNING || c->state == CONTAINER_CREATED;
}

static bool app_should_restart(RestartPolicy policy, int exit_code) {
        switch (policy) {
        case RESTART_POLICY_ALWAYS:
                return true;
        case RESTART_POLICY_ON_FAILURE:
                /* An unknown exit code (-1) is not a success. */
                return exit_code != 0;
        case RESTART_POLICY_NEVER:
        case _RESTART_POLICY_INVALID:
        case _RESTART_POLICY_MAX:
        default:
                return false;
        }
}

static void wakeup_at(PodActions *a, usec_t t) {
        if (t < a->next_wakeup)
                a->next_wakeup = t;
}

static void add_start(Ctx *x, const ContainerState *c, bool restart) {
        x->a->starts[x->a->n_starts++] = (ContainerStartAction){
                .is_init = c_is_init(x, c),
                .index = c_index(x, c),
                .name = c->spec->name,
                .restart = restart,
        };
        x->touched[slot_of(x, c)] = true;
}

static int64_t grace_for(const PodState *s, const ContainerState *c, KillReason reason) {
        const OptionalInt *pod_grace = &s->pod->spec.termination_grace_period_seconds;
        int64_t g = pod_grace->set ? pod_grace->value : DEFAULT_GRACE_SECONDS;

        /* A probe may shorten the period for kills it causes: the prober
         * records the failed probe's; without it liveness is the usual one. */
        if (reason == KILL_REASON_UNHEALTHY && c->kill_grace_seconds > 0)
                g = c->kill_grace_seconds;
        else if (reason == KILL_REASON_UNHEALTHY) {
                const Probe *p = c->spec->liveness_probe;
                if (!(p && p->termination_grace_period_seconds.set))
                        p = c->spec->startup_probe;
                if (p && p->termination_grace_period_seconds.set)
                        g = p->termination_grace_period_seconds.value;
        }
        return MAX(g, (int64_t)MIN_GRACE_SECONDS);
}

static int add_kill(Ctx *x, const ContainerState *c, KillReason reason) {
        const PodState *s = x->s;
        const char *name = c->spec->name;
        char *msg;

        switch (reason) {
        case KILL_REASON_UNHEALTHY: {
                /* kubelet says whether the kill is followed by a restart. */
                bool restart = is_sidecar(c) || s->pod->spec.restart_policy != RESTART_POLICY_NEVER;
                if (c->kill_reason)
                        msg = strprintf("%s%s", c->kill_reason,
                                        restart ? ", will be restarted" : "");
                else
                        msg = strprintf("Container %s failed a probe or hook%s", name,
                                        restart ? ", will be restarted" : "");
                break;
        }
        case KILL_REASON_TERMINATING:
                msg = strprintf("Stopping container %s", name);
                break;
        case KILL_REASON_DEADLINE_EXCEEDED:
                msg = strprintf("Stopping container %s: pod was active longer than "
                                "activeDeadlineSeconds",
                                name);
                break;
        case KILL_REASON_POD_COMPLETED:
                msg = strprintf("Stopping sidecar container %s: app containers completed", name);
                break;
        case KILL_REASON_EVICTED:
                msg = strprintf("Stopping container %s: the pod is evicted", name);
                break;
        case KILL_REASON_INIT_FAILED:
        case _KILL_REASON_INVALID:
        case _KILL_REASON_MAX:
        default:
                msg = strprintf("Stopping container %s: an init container failed and "
                                "restartPolicy is Never",
                                name);
                break;
        }
        if (!msg)
                return -ENOMEM;

        x->a->kills[x->a->n_kills++] = (ContainerKillAction){
                .is_init = c_is_init(x, c),
                .index = c_index(x, c),
                .name = name,
                .reason = reason,
                .message = msg,
                .grace_period_seconds = grace_for(s, c, reason),
        };
        return 0;
}

/* Takes message. Lists the update only when it changes something. */
static int set_waiting(Ctx *x, const ContainerState *c, const char *reason, char *message) {
        x->touched[slot_of(x, c)] = true;
        if (streq_ptr(c->waiting_reason, reason) && streq_ptr(c->waiting_message, message)) {
                free(message);
                return 0;
        }
        x->a->waiting[x->a->n_waiting++] = (ContainerWaitingUpdate){
                .is_init = c_is_init(x, c),
                .index = c_index(x, c),
                .name = c->spec->name,
                .reason = reason,
                .message = message,
        };
        return 0;
}

/* Go's time.Duration.String() for whole seconds, as kubelet prints the
 * back-off ("10s", "1m20s", "5m0s"). */
static char *format_go_seconds(usec_t d) {
        unsigned long long sec = d / USEC_PER_SEC;
        if (sec < 60)
                return strprintf("%llus", sec);
        if (sec < 3600)
                return strprintf("%llum%llus", sec / 60, sec % 60);
        return strprintf("%lluh%llum%llus", sec / 3600, sec % 3600 / 60, sec % 60);
}

/* Start c now, or, while its back-off runs, say so and wake up when it
 * ends. A container that could not even be created keeps the worker's
 * reason (CreateContainerError, ...) while it waits. */
static int try_start(Ctx *x, const ContainerState *c) {
        bool restart = c->state == CONTAINER_EXITED;

        if (c->backoff_until <= x->now) {
                add_start(x, c, restart);
                return 0;
        }
        wakeup_at(x->a, c->backoff_until);
        x->touched[slot_of(x, c)] = true;
        if (streq_ptr(c->waiting_reason, "ErrImagePull") ||
            streq_ptr(c->waiting_reason, "ImagePullBackOff")) {
                /* kubelet: the failed pull was ErrImagePull; while its
                 * back-off runs the container shows ImagePullBackOff, and
                 * (as kubelet 1.30 on) why the last pull failed. */
                char *msg = streq(c->waiting_reason, "ImagePullBackOff")
                                    ? strdup(strempty(c->waiting_message))
                                    : strprintf("Back-off pulling image \"%s\": ErrImagePull: %s",
                                                c->pull_image ?: c->spec->image,
                                                strempty(c->waiting_message));
                if (!msg)
                        return -ENOMEM;
                return set_waiting(x, c, "ImagePullBackOff", msg);
        }
        if (!restart)
                return 0;

        const ObjectMeta *m = &x->s->pod->metadata;
        _cleanup_free_ char *delay = format_go_seconds(c->backoff_delay);
        if (!delay)
                return -ENOMEM;
        char *msg = strprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay,
                              c->spec->name, strempty(m->name), strempty(m->namespace),
                              strempty(x->s->uid));
        if (!msg)
                return -ENOMEM;
        return set_waiting(x, c, "CrashLoopBackOff", msg);
}

/* One stage of the termination order; returns the number of kills (0 when
 * nothing is left running) or -ENOMEM. */
static int stage_kills(Ctx *x, KillReason reason) {
        const PodState *s = x->s;
        int n = 0, r;

        /* App containers and a regular init container have no ordering
         * among themselves (kubelet kills them at once); sidecars wait for
         * them because they serve them. */
        for (size_t i = 0; i < s->n_app; i++)
                if (is_active(&s->app[i])) {
                        if ((r = add_kill(x, &s->app[i], reason)) < 0)
                                return r;
                        n++;
                }
        for (size_t i = 0; i < s->n_init; i++)
                if (!is_sidecar(&s->init[i]) && is_active(&s->init[i])) {
                        if ((r = add_kill(x, &s->init[i], reason)) < 0)
                                return r;
                        n++;
                }
        if (n > 0)
                return n;

        for (size_t i = s->n_init; i > 0; i--)
                if (is_sidecar(&s->init[i - 1]) && is_active(&s->init[i - 1])) {
                        if ((r = add_kill(x, &s->init[i - 1], reason)) < 0)
                                return r;
                        return 1;
                }
        return 0;
}

static int stop_pod(Ctx *x, KillReason reason, PodPhase phase) {
        x->a->kill_pod = true;
        x->a->kill_pod_reason = reason;
        x->a->phase = phase;
        int r = stage_kills(x, reason);
        if (r < 0)
                return r;
        x->a->pod_done = r == 0;
        return 0;
}

/* Drives a container towards running: a start when it has no container or
 * its container exited (the caller has decided that an exited one runs
 * again; a sidecar always does, whatever the pod's restartPolicy), a kill
 * when a probe asked for one, nothing while it starts. */
static int keep_running(Ctx *x, const ContainerState *c) {
        switch (c->state) {
        case CONTAINER_NONE:
        case CONTAINER_EXITED:
                return try_start(x, c);
        case CONTAINER_RUNNING:
                if (c->kill_requested)
                        return add_kill(x, c, KILL_REASON_UNHEALTHY);
                return 0;
        case CONTAINER_CREATED:
        case _CONTAINER_RUN_STATE_INVALID:
        case _CONTAINER_RUN_STATE_MAX:
        default:
                /* The worker creates and starts in one operation; a created
                 * container is a start in progress. */
                return 0;
        }
}

/* Walks the init containers in order. Sets *ret_initialized when every
 * regular init container has completed and every sidecar before the end
 * has started. */
static int init_actions(Ctx *x, bool app_started, bool *ret_initialized) {
        const PodState *s = x->s;
        int r;

        if (app_started) {
                /* Initialization is over: only sidecars need attention. */
                for (size_t i = 0; i < s->n_init; i++)
                        if (is_sidecar(&s->init[i]) && (r = keep_running(x, &s->init[i])) < 0)
                                return r;
                *ret_initialized = true;
                return 0;
        }

        for (size_t i = 0; i < s->n_init; i++) {
                const ContainerState *c = &s->init[i];
                bool later_begun = false;
                for (size_t j = i + 1; j < s->n_init; j++)
                        if (begun_in_sandbox(s, &s->init[j]))
                                later_begun = true;

                if (is_sidecar(c)) {
                        if (later_begun) {
                                /* It gated its successors once; now it only
                                 * needs to be kept running. */
                                if ((r = keep_running(x, c)) < 0)
                                        return r;
                                continue;
                        }
                        if (c->state == CONTAINER_RUNNING && !c->kill_requested && c->started)
                                continue; /* the next init container may start */
                        /* Started, killed, or waited for (startupProbe/postStart)
                         * before the next one. */
                        return keep_running(x, c);
                }

                /* Completed; without a record when it was removed after it
                 * completed. */
                if ((c->state == CONTAINER_EXITED && c->exit_code == 0) ||
                    (c->state == CONTAINER_NONE && later_begun))
                        continue;
                /* The first one not completed: restartPolicy Never was
                 * handled before, so a failed one starts again. */
                return keep_running(x, c);
        }

        *ret_initialized = true;
        return 0;
}

static int app_actions(Ctx *x) {
        const PodState *s = x->s;
        int r;

        for (size_t i = 0; i < s->n_app; i++) {
                const ContainerState *c = &s->app[i];
                if (c->state == CONTAINER_EXITED &&
                    !app_should_restart(s->pod->spec.restart_policy, c->exit_code))
                        continue;
                r = keep_running(x, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool any_app_started(const PodState *s) {
        for (size_t i = 0; i < s->n_app; i++)
                if (begun_in_sandbox(s, &s->app[i]))
                        return true;
        return false;
}

/* Under restartPolicy Never a failed regular init container fails the pod
 * (kubelet: KillPod, phase Failed). */
static bool init_failed_for_good(const PodState *s) {
        if (s->pod->spec.restart_policy != RESTART_POLICY_NEVER)
                return false;
        for (size_t i = 0; i < s->n_init; i++) {
                const ContainerState *c = &s->init[i];
                if (!is_sidecar(c) && c->state == CONTAINER_EXITED && c->exit_code != 0)
                        return true;
        }
        return false;
}

/* All app containers have exited and the restart policy restarts none of
 * them: the pod's work is done. Sets *ret_phase. */
static bool apps_completed(const PodState *s, PodPhase *ret_phase) {
        RestartPolicy policy = s->pod->spec.restart_policy;
        bool all_ok = true;

        if (policy == RESTART_POLICY_ALWAYS || s->n_app == 0)
                return false;
        for (size_t i = 0; i < s->n_app; i++) {
                const ContainerState *c = &s->app[i];
                if (c->state != CONTAINER_EXITED || app_should_restart(policy, c->exit_code))
                        return false;
                if (c->exit_code != 0)
                        all_ok = false;
        }
        *ret_phase = all_ok ? POD_PHASE_SUCCEEDED : POD_PHASE_FAILED;
        return true;
}

/* Waiting reasons that no longer apply: an exited container that will not
 * restart shows "terminated", not a stale CrashLoopBackOff. App containers
 * not created yet wait for initialization. */
static int tidy_waiting(Ctx *x, bool initialized) {
        const PodState *s = x->s;
        int r;

        for (size_t i = 0; i < s->n_init + s->n_app; i++) {
                if (x->touched[i])
                        continue;
                const ContainerState *c = i < s->n_init ? &s->init[i] : &s->app[i - s->n_init];
                if (c->state == CONTAINER_EXITED && c->waiting_reason)
                        r = set_waiting(x, c, NULL, NULL);
                else if (!initialized && !x->a->kill_pod && !c->is_init &&
                         c->state == CONTAINER_NONE && !c->waiting_reason)
                        r = set_waiting(x, c, "PodInitializing", NULL);
                else
                        r = 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The first starts the pod makes once its sandbox is ready, computed from
 * the same state with the sandbox taken as ready: the worker prepares them
 * while the sandbox is still being created (PodActions.prepare_starts). */
static int prepare_starts(Ctx *x) {
        PodState ready = *x->s; /* shallow: the same containers, read only */
        size_t n = x->s->n_init + x->s->n_app;
        size_t alloc = MAX(n, (size_t)1);
        PodActions b = {
                .next_wakeup = USEC_INFINITY,
                .starts = calloc(alloc, sizeof(ContainerStartAction)),
                .kills = calloc(alloc, sizeof(ContainerKillAction)),
                .waiting = calloc(alloc, sizeof(ContainerWaitingUpdate)),
        };
        _cleanup_free_ bool *touched = calloc(alloc, sizeof(bool));
        bool initialized = false; /* init_actions() sets it only when initialization is over */
        int r = -ENOMEM;

        ready.sandbox = SANDBOX_READY;
        Ctx y = { .s = &ready, .now = x->now, .a = &b, .touched = touched };
        if (!b.starts || !b.kills || !b.waiting || !touched)
                goto finish;
        r = init_actions(&y, any_app_started(&ready), &initialized);
        if (r >= 0 && initialized)
                r = app_actions(&y);
        if (r < 0)
                goto finish;
        x->a->prepare_starts = calloc(alloc, sizeof(ContainerStartAction));
        if (!x->a->prepare_starts) {
                r = -ENOMEM;
                goto finish;
        }
        for (size_t i = 0; i < b.n_starts; i++) {
                const ContainerStartAction *st = &b.starts[i];
                const ContainerState *c =
                        st->is_init ? &x->s->init[st->index] : &x->s->app[st->index];
                if (st->restart || c->state != CONTAINER_NONE || c->container_id ||
                    container_config_needs_network(c->spec))
                        continue;
                x->a->prepare_starts[x->a->n_prepare_starts++] = *st;
        }
        r = 0;
finish:
        pod_actions_done(&b);
        return r;
}

static int compute(Ctx *x) {
        const PodState *s = x->s;
        PodActions *a = x->a;
        bool initialized = false;
        PodPhase done_phase;
        int r;

        if (s->terminating)
                return stop_pod(x, KILL_REASON_TERMINATING, _POD_PHASE_INVALID);

        if (s->evicted)
                return stop_pod(x, KILL_REASON_EVICTED, POD_PHASE_FAILED);

        /* Rejected at admission: nothing of it was ever created. */
        if (s->rejected) {
                a->phase = POD_PHASE_FAILED;
                return 0;
        }

        if (init_failed_for_good(s) && !any_app_started(s))
                return stop_pod(x, KILL_REASON_INIT_FAILED, POD_PHASE_FAILED);

        if (apps_completed(s, &done_phase))
                /* Only sidecars can still run; a finished pod no longer has
                 * a deadline to exceed. */
                return stop_pod(x, KILL_REASON_POD_COMPLETED, done_phase);

        const OptionalInt *ads = &s->pod->spec.active_deadline_seconds;
        if (s->deadline_exceeded)
                goto deadline;
        if (ads->set && ads->value >= 0 && s->start_monotonic > 0) {
                usec_t deadline = s->start_monotonic + (usec_t)ads->value * USEC_PER_SEC;
                if (x->now >= deadline)
                        goto deadline;
                wakeup_at(a, deadline);
        }

        switch (s->sandbox) {
        case SANDBOX_NONE:
                if (s->wait_reason) {
                        for (size_t i = 0; i < s->n_init + s->n_app; i++) {
                                const ContainerState *c =
                                        i < s->n_init ? &s->init[i] : &s->app[i - s->n_init];
                                char *msg = s->wait_message ? strdup(s->wait_message) : NULL;
                                if (s->wait_message && !msg)
                                        return -ENOMEM;
                                if ((r = set_waiting(x, c, s->wait_reason, msg)) < 0)
                                        return r;
                        }
                        return 0;
                }
                a->create_sandbox = true;
                return prepare_starts(x);
        case SANDBOX_FAILED:
                if (s->sandbox_backoff_until <= x->now) {
                        a->create_sandbox = true;
                        return prepare_starts(x);
                } else
                        wakeup_at(a, s->sandbox_backoff_until);
                return 0;
        case SANDBOX_READY:
        default:
                break;
        }

        r = init_actions(x, any_app_started(s), &initialized);
        if (r < 0)
                return r;
        if (initialized && (r = app_actions(x)) < 0)
                return r;
        return tidy_waiting(x, initialized);

deadline:
        a->deadline_exceeded = true;
        return stop_pod(x, KILL_REASON_DEADLINE_EXCEEDED, POD_PHASE_FAILED);
}

int pod_compute_actions(const PodState *s, usec_t now_mono, PodActions *ret) {
        assert(s);
        assert(s->pod);
        assert(ret);

        /* Each container appears at most once per list. */
        size_t n = s->n_init + s->n_app;
        size_t alloc = MAX(n, (size_t)1);
        PodActions a = {
                .next_wakeup = USEC_INFINITY,
                .phase = _POD_PHASE_INVALID,
                .kill_pod_reason = _KILL_REASON_INVALID,
                .starts = calloc(alloc, sizeof(ContainerStartAction)),
                .kills = calloc(alloc, sizeof(ContainerKillAction)),
                .waiting = calloc(alloc, sizeof(ContainerWaitingUpdate)),
        };
        _cleanup_free_ bool *touched = calloc(alloc, sizeof(bool));
        int r;

        if (!a.starts || !a.kills || !a.waiting || !touched) {
                r = -ENOMEM;
                goto fail;
        }

        Ctx x = { .s = s, .now = now_mono, .a = &a, .touched = touched };
        r = compute(&x);
        if (r < 0)
                goto fail;

        *ret = a;
        return 0;
fail:
        pod_actions_done(&a);
        return r;
}

void pod_actions_done(PodActions *a) {
        if (!a)
                return;
        for (size_t i = 0; i < a->n_kills; i++)
                free(a->kills[i].message);
        for (size_t i = 0; i < a->n_waiting; i++)
                free(a->waiting[i].message);
        free(a->starts);
        free(a->prepare_starts);
        free(a->kills);
        free(a->waiting);
        *a = (PodActions){ .next_wakeup = USEC_INFINITY, .phase = _POD_PHASE_INVALID };
}
