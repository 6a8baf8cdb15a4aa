/* Running one probe or lifecycle handler on the event loop, without a
 * thread or a blocking call: exec (a spawned command, normally `runc exec`,
 * killed with what it started on timeout), httpGet and grpc (libcurl multi
 * through EventCurl), tcpSocket (a non-blocking connect) and sleep (a
 * timer). The pod layer resolves the manifest's handler into a ProbeAction
 * (command line, URL, address); this module knows nothing of pods or runc. */
#pragma once

#include <stdint.h>

#include "event-curl.h"
#include "event.h"
#include "probe-tracker.h"

typedef enum ProbeActionType {
        PROBE_ACTION_EXEC,
        PROBE_ACTION_HTTP_GET,
        PROBE_ACTION_TCP_SOCKET,
        PROBE_ACTION_GRPC,
        PROBE_ACTION_SLEEP,
        _PROBE_ACTION_TYPE_MAX,
        _PROBE_ACTION_TYPE_INVALID = -EINVAL,
} ProbeActionType;

/* Borrowed strings; only the fields of type are read. */
typedef struct ProbeAction {
        ProbeActionType type;
        /* exec: the whole command line to spawn (e.g. runc exec ... cmd),
         * and the file where it writes the pid of what it runs (runc
         * --pid-file), so a timeout also kills that; pid_file may be NULL. */
        char *const *argv;
        const char *pid_file;
        const char *display; /* the command as the manifest gives it, for messages */
        /* httpGet: full URL (scheme://host:port/path?query) and extra
         * "Name: value" headers */
        const char *url;
        char *const *headers;
        /* tcpSocket, grpc: a numeric IPv4/IPv6 address and port */
        const char *host;
        uint16_t port;
        const char *service; /* grpc; NULL = "" (the whole server) */
        usec_t sleep;        /* sleep */
} ProbeAction;

typedef struct ProbeContext {
        Event *event;
        EventCurl *curl; /* needed for httpGet and grpc */
} ProbeContext;

typedef struct ProbeRun ProbeRun;

/* Called once with the outcome and a short human-readable output (the
 * command's output, the HTTP body, or what went wrong; never NULL). The
 * run is freed right after done returns. */
typedef void (*probe_done_t)(ProbeResult result, const char *output, void *userdata);

/* Starts a. timeout USEC_INFINITY: none. done never runs before this
 * returns. Returns 0 and the run (to cancel it), or -errno when it could
 * not start (done is not called then). */
int probe_run_start(const ProbeContext *ctx, const ProbeAction *a, usec_t timeout,
                    probe_done_t done, void *userdata, ProbeRun **ret);

/* Stops a run (killing an exec'd command and what it started); done is not
 * called. Returns NULL. */
ProbeRun *probe_run_cancel(ProbeRun *r);

/* Output kept from a command or body; more is read and dropped (kubelet
 * keeps 10 KiB). */
#define PROBE_OUTPUT_MAX 10240
