/* The systemd notification protocol (sd_notify), without libsystemd: one
 * datagram to $NOTIFY_SOCKET. Used for Type=notify readiness and the
 * WatchdogSec= keep-alive. */
#pragma once

#include "time-util.h"

/* Sends state ("READY=1", "WATCHDOG=1", "STATUS=...") if NOTIFY_SOCKET is
 * set. Returns 1 when sent, 0 when not running under systemd, -errno. */
int sd_notify_send(const char *state);
/* The watchdog interval systemd expects pings within (WATCHDOG_USEC, only
 * when WATCHDOG_PID is unset or ours), or 0. */
usec_t sd_watchdog_interval(void);
