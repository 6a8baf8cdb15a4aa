/* See pod-probes.h. Per container slot (init containers first, then app
 * containers, as the worker's ops): three trackers, the probe runs in
 * flight, one timer for the next due probe, and the hook in flight. */
#include "pod-probes.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "probe-run.h"
#include "probe-tracker.h"
#include "string-util.h"
#include "strv.h"

/* The probe lines name the pod in their text (pod="<name>_<ns>(<uid>)"), as
 * they always did; the pairs add what log shippers index on. */
#define PROBE_KV(p, c) LOG_KV("podUID", (p)->ctx.pod_uid, "containerName", (c)->spec->name)

typedef enum HookType {
        HOOK_POST_START,
        HOOK_PRE_STOP
} HookType;

typedef struct ContainerProbes ContainerProbes;

/* One probe run in flight, knowing where its outcome goes. */
typedef struct ProbeCall {
        ContainerProbes *cp;
        ProbeType type;
} ProbeCall;

struct ContainerProbes {
        PodProbes *p;
        size_t slot;
        bool active; /* the attempt runs and its probes may run */
        const Probe *spec[_PROBE_TYPE_MAX];
        ProbeTracker tracker[_PROBE_TYPE_MAX];
        ProbeRun *run[_PROBE_TYPE_MAX];
        ProbeCall call[_PROBE_TYPE_MAX];
        EventSource *timer;

        ProbeRun *hook;
        HookType hook_type;
        usec_t hook_started;
        pod_probes_then_t then;
        void *then_userdata;
};

struct PodProbes {
        PodProbesContext ctx;
        ContainerProbes *c; /* one per container slot */
        size_t n;
};

static ContainerState *cp_container(ContainerProbes *cp) {
        PodState *s = cp->p->ctx.state;
        return cp->slot < s->n_init ? &s->init[cp->slot] : &s->app[cp->slot - s->n_init];
}

int pod_probes_new(PodProbes **ret, const PodProbesContext *ctx) {
        assert(ctx->changed);
        PodProbes *p = calloc(1, sizeof *p);
        if (!p)
                return -ENOMEM;
        p->ctx = *ctx;
        p->n = ctx->state->n_init + ctx->state->n_app;
        p->c = calloc(MAX(p->n, (size_t)1), sizeof *p->c);
        if (!p->c) {
                free(p);
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n; i++)
                p->c[i] = (ContainerProbes){ .p = p, .slot = i };
        *ret = p;
        return 0;
}

static ContainerProbes *probes_for(PodProbes *p, ContainerState *c) {
        PodState *s = p->ctx.state;
        size_t slot;

        if (c >= s->init && c < s->init + s->n_init)
                slot = (size_t)(c - s->init);
        else if (c >= s->app && c < s->app + s->n_app)
                slot = s->n_init + (size_t)(c - s->app);
        else
                return NULL;
        return slot < p->n ? &p->c[slot] : NULL;
}

/* libcurl is loaded here, by the first HTTP or gRPC probe. Without it, the
 * probe errors with the reason (the caller logs it, and a hook's event
 * carries it); the next probe tries again, so installing the library is
 * enough, without a restart. */
static int shared_curl(PodProbes *p, EventCurl **ret, Error *err) {
        if (!*p->ctx.curl) {
                int r = event_curl_new(p->ctx.event, p->ctx.curl, err);
                if (r < 0)
                        return error_prefix(err, r,
                                            "HTTP and gRPC probes need " EVENT_CURL_LIBRARY);
        }
        *ret = *p->ctx.curl;
        return 0;
}

/* ---- handler -> ProbeAction ---- */

static char *join_words(char *const *l) {
        size_t n = 1;
        for (char *const *i = l; i && *i; i++)
                n += strlen(*i) + 1;
        char *s = calloc(1, n), *p = s;
        if (!s)
                return NULL;
        for (char *const *i = l; i && *i; i++)
                p = stpcpy(stpcpy(p, i == l ? "" : " "), *i);
        return s;
}

typedef struct ActionBuf {
        ProbeAction a;
        char **argv;
        char *pid_file;
        char *display;
        char *url;
        char **headers;
        char *host;
} ActionBuf;

static void action_buf_done(ActionBuf *b) {
        strv_free(b->argv);
        free(b->pid_file);
        free(b->display);
        free(b->url);
        strv_free(b->headers);
        free(b->host);
}

static int resolve_port(const Container *spec, const IntOrString *p, uint16_t *ret) {
        int64_t port = p->num;
        if (p->str) {
                int r = container_find_port(spec, p->str);
                if (r < 0)
                        return r;
                port = r;
        }
        if (port < 1 || port > 65535)
                return -ERANGE;
        *ret = (uint16_t)port;
        return 0;
}

/* The pod's own address; a hostNetwork pod (or one without a CNI address)
 * answers on the node's loopback. */
static const char *pod_host(PodProbes *p) {
        if (p->ctx.state->pod->spec.host_network || isempty(p->ctx.state->pod_ip))
                return "127.0.0.1";
        return p->ctx.state->pod_ip;
}

static int build_action(ContainerProbes *cp, const Handler *h, const char *what, ActionBuf *b,
                        Error *err) {
        PodProbes *p = cp->p;
        ContainerState *c = cp_container(cp);
        uint16_t port;
        int r;

        *b = (ActionBuf){};
        if (h->exec) {
                r = runtime_exec_argv(p->ctx.runtime, c->container_id, false, false,
                                      h->exec->command, &b->argv);
                if (r < 0)
                        return r;
                /* `<runtime> ... exec --pid-file F id cmd`: the pid file names
                 * what runs inside, so a timeout can kill it. */
                b->pid_file = strprintf("%s/containers/%s/%u/%s.pid", p->ctx.pod_dir, c->spec->name,
                                        c->attempt, what);
                if (!b->pid_file)
                        return -ENOMEM;
                size_t n = strv_length(b->argv), at = n;
                for (size_t i = 0; i < n; i++)
                        if (streq(b->argv[i], "exec")) {
                                at = i + 1;
                                break;
                        }
                if (at >= n)
                        return -EINVAL;
                char **nv = reallocarray(b->argv, n + 3, sizeof(char *));
                if (!nv)
                        return -ENOMEM;
                b->argv = nv;
                memmove(nv + at + 2, nv + at, (n - at + 1) * sizeof(char *));
                nv[at] = strdup("--pid-file");
                nv[at + 1] = strdup(b->pid_file);
                if (!nv[at] || !nv[at + 1])
                        return -ENOMEM;
                b->display = join_words(h->exec->command);
                if (!b->display)
                        return -ENOMEM;
                b->a = (ProbeAction){ .type = PROBE_ACTION_EXEC,
                                      .argv = b->argv,
                                      .pid_file = b->pid_file,
                                      .display = b->display };
                return 0;
        }
        if (h->http_get) {
                const HTTPGetAction *g = h->http_get;
                if ((r = resolve_port(c->spec, &g->port, &port)) < 0)
                        return error_set(err, r, "cannot resolve port \"%s\"", strna(g->port.str));
                const char *host = !isempty(g->host) ? g->host : pod_host(p);
                const char *path = isempty(g->path) ? "/" : g->path;
                b->url = strprintf("%s://%s%s%s:%u%s%s",
                                   g->scheme == URI_SCHEME_HTTPS ? "https" : "http",
                                   strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
                                   (unsigned)port, path[0] == '/' ? "" : "/", path);
                if (!b->url)
                        return -ENOMEM;
                for (size_t i = 0; i < g->n_http_headers; i++) {
                        char *hl = strprintf("%s: %s", g->http_headers[i].name,
                                             strempty(g->http_headers[i].value));
                        if (!hl || strv_consume(&b->headers, hl) < 0)
                                return -ENOMEM;
                }
                b->a = (ProbeAction){ .type = PROBE_ACTION_HTTP_GET,
                                      .url = b->url,
                                      .headers = b->headers };
                return 0;
        }
        if (h->tcp_socket) {
                if ((r = resolve_port(c->spec, &h->tcp_socket->port, &port)) < 0)
                        return error_set(err, r, "cannot resolve port \"%s\"",
                                         strna(h->tcp_socket->port.str));
                b->host = strdup(!isempty(h->tcp_socket->host) ? h->tcp_socket->host : pod_host(p));
                if (!b->host)
                        return -ENOMEM;
                b->a = (ProbeAction){ .type = PROBE_ACTION_TCP_SOCKET,
                                      .host = b->host,
                                      .port = port };
                return 0;
        }
        if (h->grpc) {
                b->host = strdup(pod_host(p));
                if (!b->host)
                        return -ENOMEM;
                b->a = (ProbeAction){ .type = PROBE_ACTION_GRPC,
                                      .host = b->host,
                                      .port = (uint16_t)h->grpc->port,
                                      .service = h->grpc->service };
                return 0;
        }
        if (h->sleep) {
                b->a = (ProbeAction){ .type = PROBE_ACTION_SLEEP,
                                      .sleep = (usec_t)h->sleep->seconds * USEC_PER_SEC };
                return 0;
        }
        return -EOPNOTSUPP;
}

static int start_action(ContainerProbes *cp, const Handler *h, const char *what, usec_t timeout,
                        probe_done_t done, void *userdata, ProbeRun **ret, Error *err) {
        ActionBuf b;
        int r = build_action(cp, h, what, &b, err);
        if (r >= 0) {
                ProbeContext ctx = { .event = cp->p->ctx.event };
                if (b.a.type == PROBE_ACTION_HTTP_GET || b.a.type == PROBE_ACTION_GRPC)
                        r = shared_curl(cp->p, &ctx.curl, err);
                if (r >= 0)
                        r = probe_run_start(&ctx, &b.a, timeout, done, userdata, ret);
        }
        action_buf_done(&b);
        /* every failure has a message: the errno's when no layer gave one */
        return r < 0 ? error_set(err, r, "%s", strerror(-r)) : r;
}

/* ---- flags ---- */

static void mark_changed(PodProbes *p) {
        p->ctx.changed(p->ctx.userdata);
}

static void emit_event(PodProbes *p, const ContainerState *c, PodEventReason reason,
                       const char *fmt, ...) _printf_(4, 5);
static void emit_event(PodProbes *p, const ContainerState *c, PodEventReason reason,
                       const char *fmt, ...) {
        if (!p->ctx.record_event)
                return;
        _cleanup_free_ char *message = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (k >= 0)
                p->ctx.record_event(c, reason, message, p->ctx.userdata);
}

/* started/ready as kubelet derives them from the probe results. */
static void update_flags(ContainerProbes *cp) {
        ContainerState *c = cp_container(cp);
        bool started = !c->post_start_pending &&
                       (!cp->spec[PROBE_STARTUP] ||
                        cp->tracker[PROBE_STARTUP].result == PROBE_RESULT_SUCCESS);
        bool ready = started && (!cp->spec[PROBE_READINESS] ||
                                 cp->tracker[PROBE_READINESS].result == PROBE_RESULT_SUCCESS);
        if (started != c->started || ready != c->ready) {
                c->started = started;
                c->ready = ready;
                mark_changed(cp->p);
        }
}

static void request_kill(ContainerProbes *cp, const char *reason, int64_t grace) {
        ContainerState *c = cp_container(cp);
        if (c->kill_requested)
                return;
        c->kill_requested = true;
        free(c->kill_reason);
        c->kill_reason = strdup(reason);
        c->kill_grace_seconds = grace;
        mark_changed(cp->p);
}

/* ---- probes ---- */

static void schedule(ContainerProbes *cp);

static void on_probe_done(ProbeResult result, const char *output, void *userdata) {
        ProbeCall *call = userdata;
        ContainerProbes *cp = call->cp;
        ProbeType t = call->type;
        PodProbes *p = cp->p;
        ContainerState *c = cp_container(cp);
        ProbeTracker *tr = &cp->tracker[t];

        cp->run[t] = NULL;
        c->probe_results[t][result]++;
        if (result == PROBE_RESULT_FAILURE) {
                log_kv_info(
                        PROBE_KV(p, c),
                        "Probe failed: probeType=\"%s\" pod=\"%s\" container=\"%s\" output=\"%s\"",
                        probe_type_to_string(t), p->ctx.name, c->spec->name, output);
                emit_event(p, c, POD_EVENT_UNHEALTHY, "%s probe failed: %s",
                           probe_type_to_string(t), strempty(output));
        } else if (result == PROBE_RESULT_UNKNOWN) {
                log_kv_warning(
                        PROBE_KV(p, c),
                        "Probe errored: probeType=\"%s\" pod=\"%s\" container=\"%s\" error=\"%s\"",
                        probe_type_to_string(t), p->ctx.name, c->spec->name, output);
                emit_event(p, c, POD_EVENT_UNHEALTHY, "%s probe errored: %s",
                           probe_type_to_string(t), strempty(output));
        } else
                log_debug("Probe succeeded: probeType=\"%s\" pod=\"%s\" container=\"%s\"",
                          probe_type_to_string(t), p->ctx.name, c->spec->name);

        if (probe_tracker_record(tr, result)) {
                log_kv_info(PROBE_KV(p, c),
                            "Probe result changed: probeType=\"%s\" pod=\"%s\" container=\"%s\" "
                            "result=\"%s\"",
                            probe_type_to_string(t), p->ctx.name, c->spec->name,
                            probe_result_to_string(tr->result));
                if (tr->result == PROBE_RESULT_FAILURE && t != PROBE_READINESS) {
                        _cleanup_free_ char *why =
                                strprintf("Container %s failed %s probe", c->spec->name,
                                          t == PROBE_LIVENESS ? "liveness" : "startup");
                        const OptionalInt *g = &cp->spec[t]->termination_grace_period_seconds;
                        request_kill(cp, why ? why : "Unhealthy", g->set ? g->value : 0);
                }
                update_flags(cp);
        }
        schedule(cp);
}

static void start_probe(ContainerProbes *cp, ProbeType t, usec_t now) {
        const Probe *p = cp->spec[t];
        ContainerState *c = cp_container(cp);
        Error error = {};
        char what[32];

        probe_tracker_begin(&cp->tracker[t], now);
        cp->call[t] = (ProbeCall){ .cp = cp, .type = t };
        (void)snprintf(what, sizeof what, "probe-%d", (int)t);
        int r = start_action(cp, &p->handler, what, (usec_t)p->timeout_seconds * USEC_PER_SEC,
                             on_probe_done, &cp->call[t], &cp->run[t], &error);
        if (r < 0) {
                log_kv_warning(
                        PROBE_KV(cp->p, c),
                        "Probe errored: probeType=\"%s\" pod=\"%s\" container=\"%s\" error=\"%s\"",
                        probe_type_to_string(t), cp->p->ctx.name, c->spec->name, error.message);
                c->probe_results[t][PROBE_RESULT_UNKNOWN]++;
                (void)probe_tracker_record(&cp->tracker[t], PROBE_RESULT_UNKNOWN);
        }
}

static int on_probe_timer(EventSource *s, usec_t now, void *userdata) {
        ContainerProbes *cp = userdata;
        ContainerState *c = cp_container(cp);

        for (ProbeType t = 0; t < _PROBE_TYPE_MAX && cp->active; t++) {
                if (!cp->spec[t])
                        continue;
                if (probe_tracker_next_run(&cp->tracker[t], !c->started) <= now)
                        start_probe(cp, t, now);
        }
        schedule(cp);
        return 0;
}

static void schedule(ContainerProbes *cp) {
        ContainerState *c = cp_container(cp);
        usec_t next = USEC_INFINITY;

        if (cp->active && !c->kill_requested)
                for (ProbeType t = 0; t < _PROBE_TYPE_MAX; t++)
                        if (cp->spec[t])
                                next = MIN(next,
                                           probe_tracker_next_run(&cp->tracker[t], !c->started));
        if (next == USEC_INFINITY) {
                if (cp->timer)
                        (void)event_source_set_enabled(cp->timer, false);
                return;
        }
        int r = cp->timer ? event_source_set_time(cp->timer, next)
                          : event_add_time(cp->p->ctx.event, &cp->timer, next, 10 * USEC_PER_MSEC,
                                           on_probe_timer, cp);
        if (r < 0)
                log_warning_errno(r, "Cannot schedule probes of container \"%s\" of pod \"%s\": %m",
                                  c->spec->name, cp->p->ctx.name);
}

static void start_probes(ContainerProbes *cp) {
        ContainerState *c = cp_container(cp);
        usec_t started = c->running_since ? c->running_since : now_usec(CLOCK_MONOTONIC);

        cp->active = true;
        for (ProbeType t = 0; t < _PROBE_TYPE_MAX; t++) {
                const Probe *p = cp->spec[t];
                if (!p)
                        continue;
                ProbeTiming timing = {
                        .initial_delay = (usec_t)p->initial_delay_seconds * USEC_PER_SEC,
                        .period = (usec_t)p->period_seconds * USEC_PER_SEC,
                        .timeout = (usec_t)p->timeout_seconds * USEC_PER_SEC,
                        .success_threshold = (unsigned)p->success_threshold,
                        .failure_threshold = (unsigned)p->failure_threshold,
                };
                probe_tracker_reset(&cp->tracker[t], t, &timing, started);
        }
        update_flags(cp);
        schedule(cp);
}

static void stop_probes(ContainerProbes *cp) {
        cp->active = false;
        for (ProbeType t = 0; t < _PROBE_TYPE_MAX; t++)
                cp->run[t] = probe_run_cancel(cp->run[t]);
        cp->timer = event_source_free(cp->timer);
}

/* ---- hooks ---- */

static void on_hook_done(ProbeResult result, const char *output, void *userdata) {
        ContainerProbes *cp = userdata;
        PodProbes *p = cp->p;
        ContainerState *c = cp_container(cp);
        usec_t took = now_usec(CLOCK_MONOTONIC) - cp->hook_started;

        cp->hook = NULL;
        if (cp->hook_type == HOOK_PRE_STOP) {
                if (result != PROBE_RESULT_SUCCESS) {
                        log_warning("PreStop hook of container \"%s\" of pod \"%s\" failed after "
                                    "%llu ms: %s",
                                    c->spec->name, p->ctx.name,
                                    (unsigned long long)(took / USEC_PER_MSEC), output);
                        emit_event(p, c, POD_EVENT_FAILED_PRE_STOP_HOOK, "PreStopHook failed: %s",
                                   strempty(output));
                } else
                        log_info("PreStop hook of container \"%s\" of pod \"%s\" completed in %llu "
                                 "ms.",
                                 c->spec->name, p->ctx.name,
                                 (unsigned long long)(took / USEC_PER_MSEC));
                pod_probes_then_t then = cp->then;
                cp->then = NULL;
                if (then)
                        then(c, cp->then_userdata);
                return;
        }
        c->post_start_pending = false;
        if (result != PROBE_RESULT_SUCCESS) {
                log_warning("FailedPostStartHook: container \"%s\" of pod \"%s\": %s",
                            c->spec->name, p->ctx.name, output);
                emit_event(p, c, POD_EVENT_FAILED_POST_START_HOOK, "PostStartHook failed: %s",
                           strempty(output));
                _cleanup_free_ char *why = strprintf("FailedPostStartHook: %s", output);
                request_kill(cp, why ? why : "FailedPostStartHook", 0);
                mark_changed(p);
                return;
        }
        log_info("PostStart hook of container \"%s\" of pod \"%s\" completed.", c->spec->name,
                 p->ctx.name);
        mark_changed(p);
        start_probes(cp);
}

static void container_probes_begin(PodProbes *p, ContainerState *c, bool run_post_start) {
        ContainerProbes *cp = probes_for(p, c);
        if (!cp) {
                /* Without bookkeeping, behave as a container without probes. */
                c->started = c->ready = true;
                return;
        }
        stop_probes(cp);
        cp->hook = probe_run_cancel(cp->hook);
        cp->then = NULL;
        cp->spec[PROBE_LIVENESS] = c->spec->liveness_probe;
        cp->spec[PROBE_READINESS] = c->spec->readiness_probe;
        cp->spec[PROBE_STARTUP] = c->spec->startup_probe;
        c->started = c->ready = false;
        c->kill_grace_seconds = 0;

        const LifecycleHandler *ps = c->spec->lifecycle ? c->spec->lifecycle->post_start : NULL;
        if (run_post_start && ps && !ps->tcp_socket) {
                Error error = {};
                cp->hook_type = HOOK_POST_START;
                cp->hook_started = now_usec(CLOCK_MONOTONIC);
                c->post_start_pending = true;
                int r = start_action(cp, ps, "post-start", USEC_INFINITY, on_hook_done, cp,
                                     &cp->hook, &error);
                if (r >= 0)
                        return;
                c->post_start_pending = false;
                _cleanup_free_ char *why = strprintf("FailedPostStartHook: %s", error.message);
                log_warning("Container \"%s\" of pod \"%s\": %s", c->spec->name, p->ctx.name,
                            strna(why));
                emit_event(p, c, POD_EVENT_FAILED_POST_START_HOOK, "PostStartHook failed: %s",
                           error.message);
                request_kill(cp, why ? why : "FailedPostStartHook", 0);
                return;
        }
        start_probes(cp);
}

void pod_probes_container_started(PodProbes *p, ContainerState *c) {
        container_probes_begin(p, c, true);
}

void pod_probes_container_adopted(PodProbes *p, ContainerState *c) {
        container_probes_begin(p, c, false);
}

void pod_probes_container_stopped(PodProbes *p, ContainerState *c) {
        ContainerProbes *cp = probes_for(p, c);
        if (!cp)
                return;
        stop_probes(cp);
        cp->hook = probe_run_cancel(cp->hook);
        cp->then = NULL;
        c->post_start_pending = false;
}

bool pod_probes_pre_stop(PodProbes *p, ContainerState *c, usec_t deadline, pod_probes_then_t then,
                         void *userdata) {
        ContainerProbes *cp = probes_for(p, c);
        const LifecycleHandler *h = c->spec->lifecycle ? c->spec->lifecycle->pre_stop : NULL;
        Error error = {};

        if (cp)
                stop_probes(cp);
        if (!cp || !h || h->tcp_socket || !c->container_id || c->state != CONTAINER_RUNNING)
                return false;
        /* A postStart still running is abandoned, as kubelet's is. */
        cp->hook = probe_run_cancel(cp->hook);
        c->post_start_pending = false;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        usec_t timeout = deadline > now ? deadline - now : 0;
        cp->hook_type = HOOK_PRE_STOP;
        cp->hook_started = now;
        cp->then = then;
        cp->then_userdata = userdata;
        log_info("Running preStop hook of container \"%s\" of pod \"%s\" (at most %llu ms).",
                 c->spec->name, p->ctx.name, (unsigned long long)(timeout / USEC_PER_MSEC));
        int r = start_action(cp, h, "pre-stop", timeout, on_hook_done, cp, &cp->hook, &error);
        if (r < 0) {
                log_warning("PreStop hook of container \"%s\" of pod \"%s\" could not run: %s",
                            c->spec->name, p->ctx.name, error.message);
                cp->then = NULL;
                return false;
        }
        return true;
}

PodProbes *pod_probes_free(PodProbes *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++) {
                ContainerProbes *cp = &p->c[i];
                stop_probes(cp);
                cp->hook = probe_run_cancel(cp->hook);
        }
        free(p->c);
        free(p);
        return NULL;
}
