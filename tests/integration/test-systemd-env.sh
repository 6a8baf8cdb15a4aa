#!/usr/bin/env bash
# Under the shipped unit (Type=notify, WatchdogSec=) the agent gets
# NOTIFY_SOCKET, WATCHDOG_*, maybe LISTEN_* and proxy or credential
# variables; none of them may reach its children (docs/internals/runtime.md):
# runc handed NOTIFY_SOCKET waits in `runc start` for a READY=1 from the
# container and the pod never starts. The agent itself still talks to
# systemd: READY=1 once it runs, WATCHDOG=1 from its loop.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }

LEAKY='NOTIFY_SOCKET|WATCHDOG_USEC|WATCHDOG_PID|LISTEN_FDS|LISTEN_PID|LISTEN_FDNAMES|http_proxy|HTTPS_PROXY|NO_PROXY|AWS_SECRET_ACCESS_KEY'

# systemd's end of the notification socket: every datagram, one per line.
NOTIFY_LOG=$WORK/notify.log
: >"$NOTIFY_LOG"
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as log:
    while True:
        log.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
        log.flush()
' "$WORK/notify.sock" "$NOTIFY_LOG" &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do [ -S "$WORK/notify.sock" ] && break; sleep 0.1; done

# Wrappers record the environment every runc and CNI plugin invocation gets.
mkdir -p "$WORK/bin" "$WORK/cnibin" "$WORK/env"
cat >"$WORK/bin/runc" <<SH
#!/bin/sh
env >"$WORK/env/runc.\$\$"
exec /usr/sbin/runc "\$@"
SH
cat >"$WORK/cnibin/bridge" <<SH
#!/bin/sh
env >"$WORK/env/cni.\$\$"
exec /usr/lib/cni/bridge "\$@"
SH
chmod 0755 "$WORK/bin/runc" "$WORK/cnibin/bridge"

# Left by an older version, which made them world-readable: fixed at start.
mkdir -p -m 0755 "$RUN/status" "$ROOT/pods"
chmod 0755 "$RUN/status" "$ROOT/pods"

# As systemd starts it: WATCHDOG_PID and LISTEN_PID name the agent itself.
(
        export NOTIFY_SOCKET=$WORK/notify.sock WATCHDOG_USEC=2000000 WATCHDOG_PID=$BASHPID
        export LISTEN_FDS=1 LISTEN_PID=$BASHPID LISTEN_FDNAMES=nanolet
        export http_proxy=http://127.0.0.1:9/ HTTPS_PROXY=http://127.0.0.1:9/ NO_PROXY=localhost
        export AWS_SECRET_ACCESS_KEY=not-for-children
        exec "$NANOLET" serve --root-dir "$ROOT" --run-dir "$RUN" --pod-logs-dir "$LOGS" \
                --container-logs-dir "$CLOGS" --pod-manifest-path "$MAN" --cni-conf-dir "$CNI_CONF" \
                --cni-bin-dir "$WORK/cnibin:/usr/lib/cni" --runtime "$WORK/bin/runc" \
                --hostname-override node1 --stop-pods-on-exit --read-only-port 0 --healthz-port 0 \
                >>"$AGENT_LOG" 2>&1
) &
AGENT_PID=$!
wait_for "$AGENT_LOG" 'nanolet starting'

expect "READY=1 sent to NOTIFY_SOCKET" "$NOTIFY_LOG" '^READY=1$'
expect "WATCHDOG=1 sent from the loop" "$NOTIFY_LOG" '^WATCHDOG=1$' 1 10

put_manifest envcheck.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: envcheck}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    env: [{name: MINE, value: "kept"}]
    readinessProbe: {exec: {command: ["true"]}, periodSeconds: 1}
YAML
check_field "pod Running and ready under systemd's environment" envcheck \
        'p["status"]["phase"] == "Running" and all(c["ready"] for c in p["status"]["containerStatuses"])' True 60

check_private_state envcheck

cid=$(pod_field envcheck 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]' || true)
cpid=$(runc --root "$RUN/runc" state "$cid" 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null || true)
if [ -n "$cpid" ] && tr '\0' '\n' <"/proc/$cpid/environ" >"$WORK/container.env"; then
        grep -q '^MINE=kept$' "$WORK/container.env" && ok "container has its own env" ||
                fail "container lacks MINE=kept: $(cat "$WORK/container.env")"
        grep -qE "^($LEAKY)=" "$WORK/container.env" &&
                fail "container env has agent variables: $(grep -E "^($LEAKY)=" "$WORK/container.env")" ||
                ok "container env has none of the agent's variables"
else
        fail "no running container process for envcheck"
fi

conmon_pid=$(pgrep -f "conmon.*$RUN.*$cid" | head -1 || true)
if [ -n "$conmon_pid" ] && tr '\0' '\n' <"/proc/$conmon_pid/environ" >"$WORK/conmon.env"; then
        grep -qE "^($LEAKY)=" "$WORK/conmon.env" &&
                fail "conmon env has agent variables: $(grep -E "^($LEAKY)=" "$WORK/conmon.env")" ||
                ok "conmon env has none of the agent's variables"
        grep -q '^PATH=/' "$WORK/conmon.env" && ok "conmon has a PATH" || fail "conmon has no PATH"
else
        fail "no conmon process for container $cid"
fi

# Every runc call so far (create under conmon, start, state, exec probes) and
# the CNI ADD.
n_runc=$(ls "$WORK/env" | grep -c '^runc\.' || true)
n_cni=$(ls "$WORK/env" | grep -c '^cni\.' || true)
[ "$n_runc" -ge 3 ] && ok "$n_runc runc invocations recorded" || fail "only $n_runc runc invocations recorded"
[ "$n_cni" -ge 1 ] && ok "$n_cni CNI invocations recorded" || fail "no CNI invocation recorded"
leaks=$(grep -lE "^($LEAKY)=" "$WORK"/env/* 2>/dev/null || true)
[ -z "$leaks" ] && ok "runc and CNI plugins got none of the agent's variables" ||
        fail "agent variables leaked into: $(for f in $leaks; do echo "$(basename "$f"): $(grep -E "^($LEAKY)=" "$f" | tr '\n' ' ')"; done)"
grep -q '^CNI_COMMAND=ADD$' "$WORK"/env/cni.* 2>/dev/null && ok "CNI plugin got its CNI_* variables" ||
        fail "CNI plugin lacks CNI_COMMAND"

stop_agent
check_no_leftovers
finish
